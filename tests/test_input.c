/* test_input.c — the user's images and labels: the same pixels from IDX
 * (plain and gzip) and .npy (N×H×W and N×1×H×W) give the same input, resized
 * as the dataset is; float32 arrays kept as values; channel, label count,
 * label range and format refusals, each one line naming the file. */
#include "check.h"
#include "data.h"
#include "input.h"
#include "npy.h"

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

/* DIR/name */
static const char *tmp(const char *name)
{
    static char path[16][256];
    static int slot;
    char *out = path[slot++ % 16];
    snprintf(out, 256, "%s/%s", dir, name);
    return out;
}

/* Write raw bytes, plain or gzip-compressed. */
static const char *put(const char *name, const void *p, size_t n, int gz)
{
    const char *path = tmp(name);
    int ok;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ok = f && gzwrite(f, p, (unsigned)n) == (int)n;
        ok &= f && gzclose(f) == Z_OK;
    } else {
        FILE *f = fopen(path, "wb");
        ok = f && fwrite(p, 1, n, f) == n;
        ok &= f && fclose(f) == 0;
    }
    if (!ok) {
        printf("FAIL cannot write %s\n", path);
        exit(1);
    }
    return path;
}

enum { N = 3, H = 4, W = 5 };
static unsigned char px[N * H * W];
static const unsigned char labels[N] = {9, 0, 4};

/* An IDX file: magic, dimensions big-endian, then data. */
static const char *idx(const char *name, int images, int gz)
{
    unsigned char b[16 + N * H * W];
    size_t hl = images ? 16 : 8;
    unsigned dims[3] = {N, H, W};
    memset(b, 0, 4);
    b[2] = 8, b[3] = images ? 3 : 1;
    for (int d = 0; d < (images ? 3 : 1); d++)
        for (int k = 0; k < 4; k++) b[4 + 4 * d + k] = (unsigned char)(dims[d] >> (8 * (3 - k)));
    memcpy(b + hl, images ? px : labels, images ? sizeof px : sizeof labels);
    return put(name, b, hl + (images ? sizeof px : sizeof labels), gz);
}

/* The same pixels in four files, loaded as they are and resized to 8×8. */
static void test_same_pixels(void)
{
    for (int k = 0; k < N * H * W; k++) px[k] = (unsigned char)(k * 37 % 256);
    cg_err e;
    long long s3[3] = {N, H, W}, s4[4] = {N, 1, H, W};
    const char *files[4] = {idx("img.idx", 1, 0), idx("img.idx.gz", 1, 1), tmp("img3.npy"),
                            tmp("img4.npy")};
    CHECK(cg_npy_write(files[2], CG_NPY_U8, 3, s3, px, &e) == 0, "npy: %s", e.msg);
    CHECK(cg_npy_write(files[3], CG_NPY_U8, 4, s4, px, &e) == 0, "npy: %s", e.msg);
    unsigned char want8[N * 64];
    for (int i = 0; i < N; i++) cg_resize_bilinear_u8(px + i * H * W, H, W, want8 + i * 64, 8, 8);
    for (int f = 0; f < 4; f++) {
        cg_images in;
        CHECK(cg_input_load(files[f], NULL, 1, H, W, 10, 0, &in, &e) == 0, "%s: %s", files[f],
              e.msg);
        CHECK(in.n == N && in.c == 1 && in.h == H && in.w == W && in.pixels && !in.values &&
                  !in.labels && memcmp(in.pixels, px, sizeof px) == 0,
              "file %d: the pixels as they are", f);
        cg_input_free(&in);
        CHECK(cg_input_load(files[f], NULL, 1, 8, 8, 10, 2, &in, &e) == 0, "%s", e.msg);
        CHECK(in.n == 2 && in.h == 8 && in.w == 8 && in.pixels &&
                  memcmp(in.pixels, want8, 2 * 64) == 0,
              "file %d: the first two, resized as the dataset is", f);
        cg_input_free(&in);
    }
}

/* float32 arrays are the network's input as they are; resized in float. */
static void test_float(void)
{
    float v[2 * 2] = {0.0f, 4.0f, -1.5f, 0.25f}; /* two images of 1×2 */
    long long s[3] = {2, 1, 2};
    const char *p = tmp("f.npy");
    cg_err e;
    CHECK(cg_npy_write(p, CG_NPY_F32, 3, s, v, &e) == 0, "%s", e.msg);
    cg_images in;
    CHECK(cg_input_load(p, NULL, 1, 1, 2, 10, 0, &in, &e) == 0, "%s", e.msg);
    CHECK(in.values && !in.pixels && memcmp(in.values, v, sizeof v) == 0, "values as they are");
    cg_input_free(&in);
    CHECK(cg_input_load(p, NULL, 1, 1, 4, 10, 0, &in, &e) == 0, "%s", e.msg);
    static const float want[8] = {0, 1, 3, 4, -1.5f, -1.0625f, -0.1875f, 0.25f};
    int same = in.values != NULL;
    for (int k = 0; same && k < 8; k++) same = in.values[k] == want[k];
    CHECK(same, "1x2 -> 1x4 bilinear: %g %g %g %g", in.values ? in.values[0] : -9,
          in.values ? in.values[1] : -9, in.values ? in.values[2] : -9,
          in.values ? in.values[3] : -9);
    cg_input_free(&in);
}

/* Several channels: kept when the spec has as many, refused otherwise. */
static void test_channels(void)
{
    unsigned char b[2 * 3 * 2 * 2];
    for (int k = 0; k < 24; k++) b[k] = (unsigned char)k;
    long long s[4] = {2, 3, 2, 2};
    const char *p = tmp("rgb.npy");
    cg_err e;
    CHECK(cg_npy_write(p, CG_NPY_U8, 4, s, b, &e) == 0, "%s", e.msg);
    cg_images in;
    CHECK(cg_input_load(p, NULL, 3, 2, 2, 10, 0, &in, &e) == 0, "3 channels: %s", e.msg);
    CHECK(in.c == 3 && in.pixels && memcmp(in.pixels, b, 24) == 0, "3 channels kept");
    cg_input_free(&in);
    CHECK(cg_input_load(p, NULL, 3, 4, 4, 10, 0, &in, &e) == 0, "3 channels resized: %s", e.msg);
    unsigned char want[16];
    cg_resize_bilinear_u8(b + 4 * 4, 2, 2, want, 4, 4); /* image 1, channel 1 */
    CHECK(in.pixels && memcmp(in.pixels + 4 * 16, want, 16) == 0, "each plane resized");
    cg_input_free(&in);
    CHECK(cg_input_load(p, NULL, 1, 2, 2, 10, 0, &in, &e) != 0, "3 channels for 1");
    CHECK_CONTAINS(e.msg, "rgb.npy: images of 3 channels (3x2x2); the spec's input has 1 "
                          "(expected N×H×W or N×1×H×W)");
    CHECK(strchr(e.msg, '\n') == NULL && in.pixels == NULL, "one line, nothing kept");
}

/* Labels from idx1 and .npy, checked against the images. */
static void test_labels(void)
{
    cg_err e;
    cg_images in;
    const char *img = tmp("img3.npy");
    const char *lab[3] = {idx("lab.idx", 0, 0), idx("lab.idx.gz", 0, 1), tmp("lab.npy")};
    long long l64[N] = {9, 0, 4}, s1[1] = {N};
    int32_t l32[N] = {9, 0, 4};
    /* int64 as numpy saves integer labels by default, written by hand */
    unsigned char nb[128 + 24];
    const char *hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
    memcpy(nb, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(nb + 10, ' ', 118);
    memcpy(nb + 10, hdr, strlen(hdr));
    nb[127] = '\n';
    memcpy(nb + 128, l64, 24);
    put("lab.npy", nb, sizeof nb, 0);
    for (int f = 0; f < 3; f++) {
        CHECK(cg_input_load(img, lab[f], 1, H, W, 10, 0, &in, &e) == 0, "%s: %s", lab[f], e.msg);
        CHECK(in.labels && memcmp(in.labels, labels, N) == 0, "labels %d", f);
        cg_input_free(&in);
    }
    const char *p32 = tmp("lab32.npy");
    CHECK(cg_npy_write(p32, CG_NPY_I32, 1, s1, l32, &e) == 0, "%s", e.msg);
    CHECK(cg_input_load(img, p32, 1, H, W, 10, 2, &in, &e) == 0, "int32 labels: %s", e.msg);
    CHECK(in.n == 2 && in.labels && in.labels[0] == 9 && in.labels[1] == 0, "first two labels");
    cg_input_free(&in);
    /* range: 9 is outside a 5-class network's labels */
    CHECK(cg_input_load(img, p32, 1, H, W, 5, 0, &in, &e) != 0, "label 9 of 5 classes");
    CHECK_CONTAINS(e.msg, "lab32.npy: label 9 of image 0 is outside 0..4 (the network has 5 "
                          "outputs)");
    l32[2] = -1;
    CHECK(cg_npy_write(p32, CG_NPY_I32, 1, s1, l32, &e) == 0, "%s", e.msg);
    CHECK(cg_input_load(img, p32, 1, H, W, 10, 0, &in, &e) != 0, "label -1");
    CHECK_CONTAINS(e.msg, "label -1 of image 2 is outside 0..9");
    /* count */
    long long s2[1] = {2};
    CHECK(cg_npy_write(p32, CG_NPY_I32, 1, s2, l32, &e) == 0, "%s", e.msg);
    CHECK(cg_input_load(img, p32, 1, H, W, 10, 0, &in, &e) != 0, "2 labels for 3 images");
    CHECK_CONTAINS(e.msg, "lab32.npy: holds 2 labels, the images file holds 3 images");
    CHECK(cg_input_load(img, p32, 1, H, W, 10, 2, &in, &e) != 0, "counted before the cut");
    /* type and rank */
    float fl[N] = {1, 2, 3};
    const char *pf = tmp("labf.npy");
    CHECK(cg_npy_write(pf, CG_NPY_F32, 1, s1, fl, &e) == 0, "%s", e.msg);
    CHECK(cg_input_load(img, pf, 1, H, W, 10, 0, &in, &e) != 0, "float labels");
    CHECK_CONTAINS(e.msg, "labf.npy: dtype '<f4'; expected |u1 (uint8), <i4 (int32) or <i8 "
                          "(int64)");
    long long s12[2] = {1, 3};
    CHECK(cg_npy_write(pf, CG_NPY_I32, 2, s12, l32, &e) == 0, "%s", e.msg);
    CHECK(cg_input_load(img, pf, 1, H, W, 10, 0, &in, &e) != 0, "2-d labels");
    CHECK_CONTAINS(e.msg, "labf.npy: 2 dimensions; expected 1");
    /* images given as labels and the reverse */
    CHECK(cg_input_load(img, tmp("img.idx"), 1, H, W, 10, 0, &in, &e) != 0, "idx3 as labels");
    CHECK_CONTAINS(e.msg, "img.idx: bad magic 0x00000803 at byte offset 0, expected 0x00000801");
    CHECK(cg_input_load(tmp("lab.idx"), NULL, 1, H, W, 10, 0, &in, &e) != 0, "idx1 as images");
    CHECK_CONTAINS(e.msg, "lab.idx: truncated at byte offset 11: expected the idx3 header");
}

/* Files that are neither format, and files that are not there. */
static void test_foreign(void)
{
    cg_err e;
    cg_images in;
    const char *p = put("spec.yaml", "name: x\n", 8, 0);
    CHECK(cg_input_load(p, NULL, 1, 4, 4, 10, 0, &in, &e) != 0, "text as images");
    CHECK_CONTAINS(e.msg, "spec.yaml: neither an IDX images file (plain or gzip) nor a NumPy "
                          ".npy array");
    CHECK(cg_input_load(tmp("img3.npy"), p, 1, H, W, 10, 0, &in, &e) != 0, "text as labels");
    CHECK_CONTAINS(e.msg, "spec.yaml: neither an IDX labels file");
    CHECK(cg_input_load(tmp("none.npy"), NULL, 1, 4, 4, 10, 0, &in, &e) != 0, "missing");
    CHECK_CONTAINS(e.msg, "none.npy: cannot open");
    CHECK(cg_input_load(dir, NULL, 1, 4, 4, 10, 0, &in, &e) != 0, "directory");
    CHECK_CONTAINS(e.msg, "is a directory");
    CHECK(strchr(e.msg, '\n') == NULL, "one line");
}

int main(void)
{
    strcpy(dir, "/tmp/cg_test_input_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_same_pixels();
    test_float();
    test_channels();
    test_labels();
    test_foreign();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", dir);
    return cg_test_done("input");
}
