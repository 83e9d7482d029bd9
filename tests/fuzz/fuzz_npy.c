/* fuzz_npy.c — the .npy reader (cg_npy_read_images on a file, cg_npy_parse in
 * memory) on arbitrary bytes: no memory error, every rejection one line, the
 * two readers agreeing, an accepted array's bytes matching its header. */
#include "fuzz.h"
#include "npy.h"

static char path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(path, sizeof path, "a.npy");
    const char *dir = fuzz_seed_dir();
    if (dir) { /* uint8 N×H×W and float32 N×C×H×W through convgen's own writer */
        unsigned char px[2 * 3 * 4];
        float f[1 * 2 * 2 * 2];
        for (int k = 0; k < 24; k++) px[k] = (unsigned char)(k * 10);
        for (int k = 0; k < 8; k++) f[k] = (float)k / 3.0f;
        long long s3[3] = {2, 3, 4}, s4[4] = {1, 2, 2, 2};
        char out[4096];
        cg_err e;
        snprintf(out, sizeof out, "%s/u8.npy", dir);
        if (cg_npy_write(out, CG_NPY_U8, 3, s3, px, &e)) goto fail;
        snprintf(out, sizeof out, "%s/f32.npy", dir);
        if (cg_npy_write(out, CG_NPY_F32, 4, s4, f, &e)) goto fail;
        exit(0);
    fail:
        fprintf(stderr, "seed: %s\n", e.msg);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(path, data, size);
    cg_npy a = {0}, m = {0};
    cg_err e = {{0}}, e2 = {{0}};
    int n, c, h, w;
    int rc = cg_npy_read_images(path, 1u << 20, &a, &n, &c, &h, &w, &e);
    if (rc) {
        fuzz_check_err(&e, "cg_npy_read_images");
    } else {
        if ((long long)n * c * h * w != a.count) abort();
        /* the data is all there: touch its last byte */
        volatile unsigned char last = ((unsigned char *)a.data)[a.count * (long long)cg_npy_type_size(a.type) - 1];
        (void)last;
        cg_npy_free(&a);
    }
    /* every type and rank in memory; it must accept whatever the image reader did */
    int rc2 = cg_npy_parse("fuzz.npy", data, size, 0xf, 1, 4, &m, &e2);
    if (rc2) fuzz_check_err(&e2, "cg_npy_parse");
    else cg_npy_free(&m);
    if (!rc && rc2) {
        fprintf(stderr, "the image reader accepted what cg_npy_parse refused: %s\n", e2.msg);
        abort();
    }
    return 0;
}
