/* options.c — command-line reading shared by the verbs. */
#include "options.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cg_opts_parse(int argc, char **argv, const cg_opt *opts, int nopts, const char **positional,
                  cg_err *e)
{
    *positional = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (*positional) {
                cg_fail(e, "%s: unexpected argument '%s'", argv[0], a);
                return CG_EXIT_USAGE;
            }
            *positional = a;
            continue;
        }
        const cg_opt *o = NULL;
        for (int j = 0; j < nopts; j++)
            if (!strcmp(opts[j].name, a)) o = &opts[j];
        if (!o) {
            cg_fail(e, "%s: unknown option '%s'", argv[0], a);
            return CG_EXIT_USAGE;
        }
        if (!o->takes_value) {
            *o->value = "1";
            continue;
        }
        if (i + 1 >= argc) {
            cg_fail(e, "%s: option %s needs a value", argv[0], a);
            return CG_EXIT_USAGE;
        }
        *o->value = argv[++i];
    }
    return 0;
}

int cg_opt_int(const char *name, const char *text, long long lo, long long hi, long long *out,
               cg_err *e)
{
    if (!text) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi) {
        cg_fail(e, "%s expects an integer from %lld to %lld, got '%s'", name, lo, hi, text);
        return CG_EXIT_USAGE;
    }
    *out = v;
    return 0;
}
