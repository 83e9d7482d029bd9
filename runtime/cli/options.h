/* options.h — the verbs' shared command-line reading: one positional SPEC and
 * --name value / --name=value / --flag options, "--" ending the options, -h and
 * --help printing the verb's usage; each option at most once, errors naming it
 * (with the nearest known option for a misspelt one). */
#ifndef CG_OPTIONS_H
#define CG_OPTIONS_H
#include "util.h"

typedef struct {
    const char *name;  /* "--images" (also "-o") */
    int takes_value;
    const char **value; /* where the value goes (or "1" for flags); entries sharing a
                           value pointer are spellings of one option */
} cg_opt;

/* cg_opts_parse's return when -h or --help was given: usage is printed, exit 0. */
#define CG_OPTS_HELP (-1)

/* Parse argv[1..] (argv[0] is the verb); *positional gets the single positional
 * argument (NULL if none; more than one is an error). -h/--help prints usage on
 * stdout and returns CG_OPTS_HELP. Returns CG_EXIT_USAGE on error. */
int cg_opts_parse(int argc, char **argv, const cg_opt *opts, int nopts, const char **positional,
                  const char *usage, cg_err *e);
/* An integer option in [lo, hi]; absent (NULL) leaves *out unchanged. */
int cg_opt_int(const char *name, const char *text, long long lo, long long hi, long long *out,
               cg_err *e);
/* An output the command line names must not be one of the files the command
 * reads: inputs[i] (NULL entries skipped) is described by what[i] ("the spec",
 * "--input", ...). 0, or CG_EXIT_USAGE with e naming both (same device and
 * inode, so a hard link or another spelling of the path is caught too). */
int cg_opt_not_input(const char *opt, const char *out, const char *const *inputs, const char *const *what, int n,
                     cg_err *e);

#endif
