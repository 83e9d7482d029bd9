/* fuzz_manifest.c — the manifest parser (cg_manifest_parse) on arbitrary
 * text: no memory error, every rejection one line. Seeds: the manifest.txt of
 * every network under generated/. */
#include "fuzz.h"
#include "manifest.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (fuzz_seed_dir()) exit(0); /* seeds are the repository's manifests */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cg_manifest m;
    cg_err e = {{0}};
    if (cg_manifest_parse((const char *)data, size, "fuzz/manifest.txt", &m, &e))
        fuzz_check_err(&e, "cg_manifest_parse");
    return 0;
}
