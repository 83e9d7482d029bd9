/* options.h — the verbs' shared command-line reading: one positional SPEC and
 * --name value / --flag options, each checked, errors naming the option. */
#ifndef CG_OPTIONS_H
#define CG_OPTIONS_H
#include "util.h"

typedef struct {
    const char *name;  /* "--images" (also "-o") */
    int takes_value;
    const char **value; /* where the value goes (or "1" for flags) */
} cg_opt;

/* Parse argv[1..]; *positional gets the single positional argument (NULL if
 * none; more than one is an error). Returns CG_EXIT_USAGE on error. */
int cg_opts_parse(int argc, char **argv, const cg_opt *opts, int nopts, const char **positional,
                  cg_err *e);
/* An integer option in [lo, hi]; absent (NULL) leaves *out unchanged. */
int cg_opt_int(const char *name, const char *text, long long lo, long long hi, long long *out,
               cg_err *e);

#endif
