/* fuzz_safetensors.c — the safetensors reader (cg_weights_load_max) on
 * arbitrary file contents: no memory error, every rejection one line. */
#include "fuzz.h"
#include "weights.h"

static char path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(path, sizeof path, "w.safetensors");
    const char *dir = fuzz_seed_dir();
    if (dir) { /* two small tensors through convgen's own writer, as F32 and as F16 */
        float a[6] = {1, -2, 3.5f, 0, 1e-3f, -7}, b[2] = {0.25f, -0.5f};
        cg_tensor t[2] = {{"conv1.weight", 4, {1, 1, 2, 3}, 6, a, CG_W_F32},
                           {"conv1.bias", 1, {2}, 2, b, CG_W_F32}};
        cg_weights w = {2, t, 0, 0};
        char out[4096];
        snprintf(out, sizeof out, "%s/small.safetensors", dir);
        cg_err e;
        if (cg_weights_save(out, &w, &e)) {
            fprintf(stderr, "seed: %s\n", e.msg);
            exit(1);
        }
        snprintf(out, sizeof out, "%s/small-f16.safetensors", dir);
        if (cg_weights_save_as(out, &w, CG_W_F16, &e)) {
            fprintf(stderr, "seed: %s\n", e.msg);
            exit(1);
        }
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(path, data, size);
    cg_weights w = {0};
    cg_err e = {{0}};
    if (cg_weights_load_max(path, 1u << 20, &w, &e))
        fuzz_check_err(&e, "cg_weights_load_max");
    else
        cg_weights_free(&w);
    return 0;
}
