/* cli.h — the verbs of the convgen command; each returns an exit status. */
#ifndef CG_CLI_H
#define CG_CLI_H
#include "util.h"

enum {
    CG_EXIT_OK = 0,
    CG_EXIT_USAGE = 2,  /* bad command line */
    CG_EXIT_INPUT = 3,  /* bad spec, weights, data, fatbin, cache */
    CG_EXIT_DEVICE = 4, /* no GPU path, or a CUDA/NVRTC failure */
    CG_EXIT_IO = 5,     /* I/O or internal failure */
};

int cg_cmd_generate(int argc, char **argv, cg_err *e);
int cg_cmd_build(int argc, char **argv, cg_err *e);
int cg_cmd_run(int argc, char **argv, cg_err *e);
int cg_cmd_check(int argc, char **argv, cg_err *e);
int cg_cmd_data(int argc, char **argv, cg_err *e);

#endif
