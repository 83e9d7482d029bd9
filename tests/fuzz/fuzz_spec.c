/* fuzz_spec.c — the spec reader (cg_spec_parse) on arbitrary bytes: no memory
 * error, and every rejection is one line. Seeds: specs/, bench/specs/,
 * tests/specs_bad/ (copied by the Makefile). */
#include "fuzz.h"
#include "spec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (fuzz_seed_dir()) exit(0); /* seeds are the repository's spec files */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cg_spec s;
    cg_err e = {{0}};
    if (cg_spec_parse("fuzz/spec.yaml", (const char *)data, size, &s, &e)) fuzz_check_err(&e, "cg_spec_parse");
    return 0;
}
