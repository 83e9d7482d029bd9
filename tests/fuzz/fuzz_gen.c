/* fuzz_gen.c — the generator (cg_generate) on every input that parses as a
 * spec, with the sandbox's limits made small (20 M instructions, 64 MiB,
 * 10 s) so one input stays quick: no memory error, every failure one line,
 * and a success hands back a manifest and at least one kernel. */
#include "fuzz.h"
#include "gen.h"
#include "lua_host.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (fuzz_seed_dir()) exit(0); /* seeds are the repository's spec files */
    cg_lua_set_default_limits(20000000, 64u << 20, 10);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cg_spec s;
    static cg_gen_output out;
    cg_err e = {{0}};
    if (cg_spec_parse("fuzz/spec.yaml", (const char *)data, size, &s, &e)) return 0;
    memset(&out, 0, sizeof out);
    if (cg_generate(&s, "convgen generate fuzz/spec.yaml", &out, &e)) {
        fuzz_check_err(&e, "cg_generate");
        return 0;
    }
    if (!out.manifest || out.nkernels < 1) {
        fprintf(stderr, "cg_generate succeeded without a manifest or kernels\n");
        abort();
    }
    cg_gen_free(&out);
    return 0;
}
