/* rt_only.c — what libconvgen-rt (the runtime-only library, Makefile) has in
 * place of the generator (gen.c, Lua, the embedded templates) and the tuning
 * records (runtime/measure): each answers that it is not in this library.
 * Bundles carry their manifest and kernels, so cg_net_open_bundle never calls
 * these; a spec still opens on the CPU (the reference reads the spec and
 * weights as they are), while generating CUDA kernels for one is refused. */
#include "convgen.h"
#include "gen.h"
#include "tune.h"

#include <string.h>

#define RT_ONLY "libconvgen-rt opens bundles only (cg_net_open_bundle) and specs on the CPU backend; " \
                "generating CUDA kernels for a spec needs libconvgen"

int cg_generate_for(const cg_spec *s, const char *regen_cmd, const cg_target *t, cg_gen_output *out, cg_err *e)
{
    (void)regen_cmd, (void)t;
    memset(out, 0, sizeof *out);
    return cg_fail(e, "%s: %s", s->path, RT_ONLY);
}

void cg_gen_free(cg_gen_output *o) { (void)o; }

int cg_tune_use_to(cg_spec *s, const char *explicit_path, int no_tuning, const cg_tune_device *dev,
                   int from_record[CG_MAX_LAYERS], cg_buf *notices, cg_err *e)
{
    (void)explicit_path, (void)no_tuning, (void)dev, (void)from_record, (void)notices;
    return cg_fail(e, "%s: %s", s->path, RT_ONLY), CG_STATUS_UNSUPPORTED;
}
