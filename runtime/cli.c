/* cli.c — the convgen command: verbs, options, one error report path.
 *
 * main() only dispatches; each verb returns an exit code and leaves its one-line
 * error in a cg_err, printed here as "convgen: message". */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: convgen VERB [options]\n"
    "\n"
    "  generate SPEC -o DIR          write one .cu per kernel and manifest.txt into DIR\n"
    "  build SPEC [--arch 75,80,...] -o NET.fatbin\n"
    "                                compile every kernel (NVRTC) into one fat binary\n"
    "  run SPEC [--images N] [--batch B] [--backend auto|cuda|cpu] [--fatbin F]\n"
    "           [--data DIR] [--no-cache] [--profile] [--json FILE] [--repeat R]\n"
    "           [--random-input SEED] [--device N]\n"
    "                                run the network over the Fashion-MNIST test set\n"
    "  check SPEC [--images N] [--data DIR] [--fatbin F] [--no-cache] [--seed S]\n"
    "           [--random-input SEED] [--device N]\n"
    "                                GPU against the CPU reference, layer by layer\n"
    "  data --resize S -o DIR [--data DIR]\n"
    "                                write the resized IDX sets used for training\n"
    "  help                          this text\n"
    "\n"
    "exit status: 0 success, 2 bad usage, 3 bad input (spec, weights, data, fatbin),\n"
    "             4 GPU unavailable or device failure, 5 I/O or internal failure\n";

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CG_EXIT_USAGE : 0;
    }
    cg_err e = {{0}};
    int rc;
    const char *verb = argv[1];
    if (!strcmp(verb, "generate")) rc = cg_cmd_generate(argc - 1, argv + 1, &e);
    else if (!strcmp(verb, "build")) rc = cg_cmd_build(argc - 1, argv + 1, &e);
    else if (!strcmp(verb, "run")) rc = cg_cmd_run(argc - 1, argv + 1, &e);
    else if (!strcmp(verb, "check")) rc = cg_cmd_check(argc - 1, argv + 1, &e);
    else if (!strcmp(verb, "data")) rc = cg_cmd_data(argc - 1, argv + 1, &e);
    else {
        fprintf(stderr, "convgen: unknown verb '%s'\n%s", verb, usage);
        return CG_EXIT_USAGE;
    }
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "convgen: %s\n", e.msg[0] ? e.msg : "failed");
        if (rc == CG_EXIT_USAGE) fputs("run 'convgen help' for usage\n", stderr);
    }
    return rc;
}
