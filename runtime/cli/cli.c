/* cli.c — the convgen command: verbs, options, one error report path.
 *
 * main() only dispatches; each verb returns an exit code and leaves its one-line
 * error in a cg_err, printed here as "convgen: message". */
#include "cli.h"
#include "spec_yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: convgen VERB [options]      (convgen VERB --help for one verb)\n"
    "\n"
    "  generate SPEC -o DIR          write one .cu per kernel and manifest.txt into DIR\n"
    "  build SPEC [--arch 75,80,...] -o NET.fatbin|NET.cgb\n"
    "                                compile every kernel (NVRTC) into one fat binary,\n"
    "                                or a bundle (.cgb: kernels, manifest, weights, spec)\n"
    "  run SPEC|NET.cgb [--images N] [--batch B] [--backend auto|cuda|cpu] [--fatbin F]\n"
    "           [--data DIR] [--no-cache] [--profile] [--json FILE] [--repeat R]\n"
    "           [--random-input SEED] [--device N | --devices 0,1|all] [--tuning FILE | --no-tuning]\n"
    "           [--input FILE [--labels FILE] [--output FILE.csv|FILE.npy]]\n"
    "                                run the network over the Fashion-MNIST test set\n"
    "                                or your images (IDX or .npy)\n"
    "  check SPEC|NET.cgb [--images N] [--data DIR] [--fatbin F] [--no-cache] [--seed S]\n"
    "           [--random-input SEED] [--device N | --devices 0,1|all]\n"
    "                                GPU against the CPU reference, layer by layer\n"
    "  kernel SPEC --layer NAME [--strategy S] [--params k=v,...] [--batch N] [--repeat R]\n"
    "           [--seed S] [--list]\n"
    "                                one layer's kernel alone: candidates, or checked and timed\n"
    "  tune SPEC [-o FILE] [--layers a,b] [--budget S] [--batch N] [--top K] [--csv FILE]\n"
    "           [--no-verify] [--list]\n"
    "                                measure every layer's candidates, write a tuning record\n"
    "  info SPEC|NET.cgb [--json]     every layer: shapes, parameters, FLOPs, weight\n"
    "                                tensors, the kernels chosen\n"
    "  import MODEL.onnx -o NET.yaml [--scale X] [--mean LIST --std LIST] [--force]\n"
    "                                an ONNX model as a spec and its weights (NET.safetensors)\n"
    "  data --resize S -o DIR [--data DIR]\n"
    "                                write the resized IDX sets used for training\n"
    "  help [VERB]                   this text, or one verb's\n"
    "  --version                     convgen's version\n"
    "\n"
    "Options take their value as '--opt VALUE' or '--opt=VALUE'; '--' ends the options.\n"
    "exit status: 0 success, 2 bad usage, 3 bad input (spec, weights, data, fatbin),\n"
    "             4 GPU unavailable or device failure, 5 I/O or internal failure\n";

typedef int (*verb_fn)(int argc, char **argv, cg_err *e);

static const struct {
    const char *name;
    verb_fn fn;
} verbs[] = {{"generate", cg_cmd_generate}, {"build", cg_cmd_build}, {"run", cg_cmd_run},
             {"check", cg_cmd_check},       {"kernel", cg_cmd_kernel}, {"tune", cg_cmd_tune},
             {"data", cg_cmd_data},         {"info", cg_cmd_info}, {"import", cg_cmd_import}};
#define NVERBS ((int)(sizeof verbs / sizeof *verbs))

/* The verb named s, or NULL. */
static verb_fn find_verb(const char *s)
{
    for (int i = 0; i < NVERBS; i++)
        if (!strcmp(verbs[i].name, s)) return verbs[i].fn;
    return NULL;
}

/* "unknown verb" with the nearest verb when one is close. */
static int unknown_verb(const char *verb)
{
    const char *names[NVERBS + 2];
    for (int i = 0; i < NVERBS; i++) names[i] = verbs[i].name;
    names[NVERBS] = "help", names[NVERBS + 1] = NULL;
    const char *near = cg_y_suggest(verb, names);
    if (near) fprintf(stderr, "convgen: unknown verb '%s' (did you mean '%s'?)\n", verb, near);
    else fprintf(stderr, "convgen: unknown verb '%s'\n", verb);
    fputs("run 'convgen help' for usage\n", stderr);
    return CG_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return CG_EXIT_USAGE;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "--version") || !strcmp(verb, "version")) {
        printf("convgen %s\n", CG_VERSION);
        return 0;
    }
    if (!strcmp(verb, "help") || !strcmp(verb, "--help") || !strcmp(verb, "-h")) {
        /* help, help --help, help -h: the usage */
        if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help"))
            return fputs(usage, stdout), 0;
        /* help VERB: that verb's own --help */
        verb_fn fn = find_verb(argv[2]);
        if (!fn) return unknown_verb(argv[2]);
        char *args[] = {argv[2], "--help", NULL};
        cg_err e = {{0}};
        return fn(2, args, &e) ? CG_EXIT_USAGE : 0;
    }
    verb_fn fn = find_verb(verb);
    if (!fn) return unknown_verb(verb);
    cg_err e = {{0}};
    int rc = fn(argc - 1, argv + 1, &e);
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "convgen: %s\n", e.msg[0] ? e.msg : "failed");
        if (rc == CG_EXIT_USAGE) fprintf(stderr, "run 'convgen %s --help' for usage\n", verb);
    }
    return rc;
}
