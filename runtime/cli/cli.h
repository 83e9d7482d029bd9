/* cli.h — the verbs of the convgen command; each returns an exit status. */
#ifndef CG_CLI_H
#define CG_CLI_H
#include "convgen.h"
#include "util.h"

enum {
    CG_EXIT_OK = 0,
    CG_EXIT_USAGE = 2,  /* bad command line */
    CG_EXIT_INPUT = 3,  /* bad spec, weights, data, fatbin, cache */
    CG_EXIT_DEVICE = 4, /* no GPU path, or a CUDA/NVRTC failure */
    CG_EXIT_IO = 5,     /* I/O or internal failure */
};

/* The exit status for what the library returned (a cg_status): the one place
 * the command turns the library's statuses into exit codes. A status the
 * command has no code for (CG_STATUS_UNSUPPORTED, a value outside the enum)
 * is an internal failure. */
static inline int cg_exit_of(int status)
{
    switch (status) {
    case CG_STATUS_OK: return CG_EXIT_OK;
    case CG_STATUS_USAGE: return CG_EXIT_USAGE;
    case CG_STATUS_INPUT: return CG_EXIT_INPUT;
    case CG_STATUS_DEVICE: return CG_EXIT_DEVICE;
    default: return CG_EXIT_IO;
    }
}

int cg_cmd_generate(int argc, char **argv, cg_err *e);
int cg_cmd_build(int argc, char **argv, cg_err *e);
int cg_cmd_run(int argc, char **argv, cg_err *e);
int cg_cmd_check(int argc, char **argv, cg_err *e);
int cg_cmd_data(int argc, char **argv, cg_err *e);
int cg_cmd_kernel(int argc, char **argv, cg_err *e);
int cg_cmd_tune(int argc, char **argv, cg_err *e);
int cg_cmd_info(int argc, char **argv, cg_err *e);
int cg_cmd_import(int argc, char **argv, cg_err *e);

/* The kernel verb's command line (runtime/cli/cmd_kernel.c), parsed apart from
 * running it so tests can hold it. Pointers point into argv. */
typedef struct {
    const char *spec, *layer, *strategy, *params; /* strategy, params: NULL when absent */
    long long batch, repeat, seed, check_images;  /* check_images 0: the whole batch */
    long long arch;                               /* --arch CC for --list; 0: the default target */
    int list, no_cache;
    int help; /* --help was given: the usage is printed, nothing else to do */
} cg_kernel_cli;
/* 0, or CG_EXIT_USAGE with e naming the option at fault. */
int cg_kernel_cli_parse(int argc, char **argv, cg_kernel_cli *c, cg_err *e);

#endif
