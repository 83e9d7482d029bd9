/* options.c — command-line reading shared by the verbs. */
#include "options.h"
#include "cli.h"
#include "spec_yaml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 32

/* "unknown option" with the nearest known spelling when one is close. */
static int unknown_option(const char *verb, const char *given, const cg_opt *opts, int nopts,
                          cg_err *e)
{
    const char *names[MAX_OPTS + 3];
    int n = 0;
    for (int j = 0; j < nopts && n < MAX_OPTS; j++) names[n++] = opts[j].name;
    names[n++] = "--help";
    names[n] = NULL;
    size_t len = strcspn(given, "=");
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), given);
    const char *near = cg_y_suggest(word, names);
    if (near) return cg_fail(e, "%s: unknown option '%s' (did you mean '%s'?)", verb, word, near);
    return cg_fail(e, "%s: unknown option '%s'", verb, word);
}

int cg_opts_parse(int argc, char **argv, const cg_opt *opts, int nopts, const char **positional,
                  const char *usage, cg_err *e)
{
    const char *verb = argv[0];
    const char **seen[MAX_OPTS];
    int nseen = 0, only_positional = 0;
    *positional = NULL;
    if (nopts > MAX_OPTS) return cg_fail(e, "%s: too many options declared", verb), CG_EXIT_IO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && !strcmp(a, "--")) {
            only_positional = 1;
            continue;
        }
        if (only_positional || a[0] != '-' || !a[1]) {
            if (*positional) {
                cg_fail(e, "%s: unexpected argument '%s' (one SPEC only)", verb, a);
                return CG_EXIT_USAGE;
            }
            *positional = a;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return CG_OPTS_HELP;
        }
        /* --name=value: only for long options */
        const char *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        const cg_opt *o = NULL;
        for (int j = 0; j < nopts && !o; j++)
            if (strlen(opts[j].name) == nlen && !strncmp(opts[j].name, a, nlen)) o = &opts[j];
        if (!o) return unknown_option(verb, a, opts, nopts, e), CG_EXIT_USAGE;
        for (int k = 0; k < nseen; k++)
            if (seen[k] == o->value)
                return cg_fail(e, "%s: option %s given twice", verb, o->name), CG_EXIT_USAGE;
        seen[nseen++] = o->value;
        if (!o->takes_value) {
            if (eq) return cg_fail(e, "%s: option %s takes no value", verb, o->name), CG_EXIT_USAGE;
            *o->value = "1";
            continue;
        }
        if (eq) {
            *o->value = eq + 1;
            continue;
        }
        if (i + 1 >= argc) {
            cg_fail(e, "%s: option %s needs a value", verb, o->name);
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

int cg_opt_not_input(const char *opt, const char *out, const char *const *inputs, const char *const *what, int n,
                     cg_err *e)
{
    for (int i = 0; out && i < n; i++)
        if (inputs[i] && cg_same_file(out, inputs[i])) {
            if (!strcmp(out, inputs[i]))
                cg_fail(e, "%s %s: is %s, which this command reads; write the output elsewhere", opt, out, what[i]);
            else
                cg_fail(e, "%s %s: is %s (%s), which this command reads; write the output elsewhere", opt, out,
                        what[i], inputs[i]);
            return CG_EXIT_USAGE;
        }
    return 0;
}
