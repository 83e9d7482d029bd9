/* target.c — the default and widest targets and the regeneration command:
 * no Lua, so the runtime-only library (libconvgen-rt, Makefile), which opens
 * bundles and never generates, links them without the generator. */
#include "target.h"

#include <stdio.h>

void cg_target_default(cg_target *t)
{
    t->cc = 75;
    t->max_shared_optin = 48 * 1024;
    t->regs_per_block = 64 * 1024;
    t->regs_per_sm = 64 * 1024;
    t->sms = 0;
    t->max_threads = 1024;
    t->sm90a = 0;
    t->batch = 0;
}

void cg_target_widest(cg_target *t)
{
    cg_target_default(t);
    t->cc = 120;
    t->max_shared_optin = 227 * 1024;
    t->sm90a = 1;
}

void cg_regen_command(const char *spec_path, char *out, size_t n)
{
    snprintf(out, n, "convgen generate %s -o DIR", spec_path);
}
