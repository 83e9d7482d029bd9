/* fuzz_bundle.c — the bundle reader (cg_bundle_parse in memory, cg_bundle_read
 * on a file) on arbitrary bytes: no memory error, every rejection one line,
 * both readers agreeing, every accepted section inside the input; and an
 * accepted bundle's weights through the safetensors parser. */
#include "bundle.h"
#include "fuzz.h"
#include "weights.h"

static char path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(path, sizeof path, "b.cgb");
    const char *dir = fuzz_seed_dir();
    if (dir) { /* a small bundle through convgen's own writer, with real weights inside */
        float a[2] = {0.5f, -1.0f};
        cg_tensor t[1] = {{"fc1.bias", 1, {2}, 2, a, CG_W_F16}};
        cg_weights w = {1, t, 0, 0};
        char wpath[4096];
        fuzz_scratch(wpath, sizeof wpath, "seed.safetensors");
        cg_err e;
        cg_buf wb, out;
        cg_buf_init(&out);
        if (cg_weights_save_as(wpath, &w, CG_W_F16, &e) || cg_read_file(wpath, &wb, &e)) {
            fprintf(stderr, "seed: %s\n", e.msg);
            exit(1);
        }
        unlink(wpath);
        static const char manifest[] = "# manifest\nkernel conv1\n", fat[] = "\x50\xed\x55\xba";
        static const char spec[] = "name: tiny\n";
        cg_blob s[CG_BUNDLE_NSECTIONS] = {{manifest, sizeof manifest - 1}, {fat, 4},
                                          {wb.data, wb.len}, {spec, sizeof spec - 1}};
        if (cg_bundle_encode("seed", s, &out, &e)) {
            fprintf(stderr, "seed: %s\n", e.msg);
            exit(1);
        }
        fuzz_seed(dir, "small.cgb", out.data, out.len);
        cg_buf_free(&out), cg_buf_free(&wb);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cg_blob sec[CG_BUNDLE_NSECTIONS];
    cg_err e = {{0}};
    int rc = cg_bundle_parse("fuzz.cgb", data, size, sec, &e);
    if (rc) {
        fuzz_check_err(&e, "cg_bundle_parse");
    } else {
        for (int k = 0; k < CG_BUNDLE_NSECTIONS; k++)
            if (sec[k].len && ((const uint8_t *)sec[k].data < data ||
                               (const uint8_t *)sec[k].data + sec[k].len > data + size))
                abort();
        cg_weights w;
        cg_err we = {{0}};
        if (cg_weights_parse("fuzz.cgb:weights", sec[CG_BUNDLE_WEIGHTS].data,
                             sec[CG_BUNDLE_WEIGHTS].len, &w, &we))
            fuzz_check_err(&we, "cg_weights_parse");
        else
            cg_weights_free(&w);
    }
    fuzz_write(path, data, size);
    cg_bundle b;
    cg_err e2 = {{0}};
    int rc2 = cg_bundle_read(path, &b, &e2);
    if (rc2) fuzz_check_err(&e2, "cg_bundle_read");
    else cg_bundle_free(&b);
    if ((rc != 0) != (rc2 != 0)) {
        fprintf(stderr, "cg_bundle_parse and cg_bundle_read disagree: %s / %s\n", e.msg, e2.msg);
        abort();
    }
    return 0;
}
