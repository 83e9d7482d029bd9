/* fuzz_input.c — the user's images and labels (cg_input_load: `run --input
 * FILE --labels FILE --images N`) on an images file and a labels file cut
 * from one input, for a network shape the input also picks:
 *   byte 0  --images N as a signed byte (0 or less: all)
 *   byte 1  the network's channels (1 + b % 3)
 *   byte 2  its height (1 + b % 32); byte 3 its width (1 + b % 32)
 *   byte 4  its classes (1 + b)
 *   byte 5  bit 0: no labels file; bit 1: the images file gzip-compressed;
 *           bit 2: the labels file gzip-compressed
 *   bytes 6-7 (little endian) the images file's length, the images file,
 *   then the labels file.
 * Either file may be IDX (plain or gzip) or .npy, told apart by content as
 * the command does. No memory error, every rejection one line; an accepted
 * load holds min(N, count) images of the network's shape, uint8 or float,
 * labels within the classes; with N > 0 it matches the first N images and
 * labels of a load without the limit, and the limit refuses nothing the
 * unlimited load accepts. */
#include "fuzz.h"
#include "input.h"
#include "npy.h"

#include <omp.h>
#include <zlib.h>

static char images[4096], labels[4096];

/* data gzip-compressed into a malloc'd buffer; aborts on failure. */
static unsigned char *gzip_bytes(const uint8_t *data, size_t size, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, (uLong)size) + 32;
    unsigned char *out = malloc(cap);
    if (!out) abort();
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* Writes one of the two files, gzip-compressed where gz is set. */
static void put(const char *path, const uint8_t *data, size_t size, int gz)
{
    if (!gz) {
        fuzz_write(path, data, size);
        return;
    }
    size_t n;
    unsigned char *z = gzip_bytes(data, size, &n);
    fuzz_write(path, z, n);
    free(z);
}

/* A big-endian u32 at p. */
static void be32(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* One seed: the 8 header bytes, then the two files. */
static void seed(const char *dir, const char *name, const unsigned char hdr[6], const void *img, size_t ilen,
                 const void *lab, size_t llen)
{
    static unsigned char b[1 << 16];
    if (8 + ilen + llen > sizeof b) abort();
    memcpy(b, hdr, 6);
    b[6] = (unsigned char)(ilen & 0xff), b[7] = (unsigned char)(ilen >> 8);
    memcpy(b + 8, img, ilen);
    if (llen) memcpy(b + 8 + ilen, lab, llen);
    fuzz_seed(dir, name, b, 8 + ilen + llen);
}

/* The bytes of a file written by convgen's .npy writer (read back), into buf. */
static size_t npy_bytes(const char *dir, cg_npy_type t, int nd, const long long *shape, const void *data,
                        unsigned char *buf, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.tmp.npy", dir);
    cg_err e;
    cg_buf b;
    if (cg_npy_write(path, t, nd, shape, data, &e) || cg_read_file(path, &b, &e)) {
        fprintf(stderr, "seed: %s\n", e.msg);
        exit(1);
    }
    unlink(path);
    if (b.len > cap) abort();
    memcpy(buf, b.data, b.len);
    size_t n = b.len;
    cg_buf_free(&b);
    return n;
}

static void write_seeds(const char *dir)
{
    enum { N = 3, SIDE = 6 };
    /* IDX: three 6x6 images and their labels, for a 1x6x6 network and (resized) 1x4x9 */
    static unsigned char img[16 + N * SIDE * SIDE], lab[8 + N];
    be32(img, 0x803), be32(img + 4, N), be32(img + 8, SIDE), be32(img + 12, SIDE);
    for (int i = 0; i < N * SIDE * SIDE; i++) img[16 + i] = (unsigned char)(i * 37);
    be32(lab, 0x801), be32(lab + 4, N);
    lab[8] = 0, lab[9] = 4, lab[10] = 9;
    const unsigned char same[6] = {0, 0, SIDE - 1, SIDE - 1, 9, 0}, resized[6] = {2, 0, 3, 8, 9, 0};
    const unsigned char gz[6] = {1, 0, SIDE - 1, SIDE - 1, 9, 6}, nolab[6] = {0, 0, 2, 2, 0, 1};
    seed(dir, "idx.in", same, img, sizeof img, lab, sizeof lab);
    seed(dir, "idx-resized-max2.in", resized, img, sizeof img, lab, sizeof lab);
    seed(dir, "idx-gz-max1.in", gz, img, sizeof img, lab, sizeof lab);
    seed(dir, "idx-nolabels.in", nolab, img, sizeof img, NULL, 0);
    /* .npy: uint8 N×H×W and float32 N×C×H×W images, int32 labels (cg_npy_write writes no
     * int64: the mutations reach '<i8' from '<i4') */
    static unsigned char a[4096], l[512];
    unsigned char px[N * 2 * 5 * 4];
    float f[N * 2 * 5 * 4];
    for (int i = 0; i < N * 2 * 5 * 4; i++) px[i] = (unsigned char)(i * 11), f[i] = (float)i / 7.0f - 3.0f;
    long long s3[3] = {N, 5, 4}, s4[4] = {N, 2, 5, 4}, s1[1] = {N};
    int32_t l32[N] = {2, 2, 0};
    size_t an = npy_bytes(dir, CG_NPY_U8, 3, s3, px, a, sizeof a);
    size_t ln = npy_bytes(dir, CG_NPY_I32, 1, s1, l32, l, sizeof l);
    const unsigned char u8[6] = {0, 0, 4, 3, 2, 0}, f32[6] = {2, 1, 4, 3, 2, 0}, f32r[6] = {0, 1, 7, 1, 9, 0};
    seed(dir, "npy-u8.in", u8, a, an, l, ln);
    an = npy_bytes(dir, CG_NPY_F32, 4, s4, f, a, sizeof a);
    seed(dir, "npy-f32-max2.in", f32, a, an, l, ln);
    seed(dir, "npy-f32-resized.in", f32r, a, an, lab, sizeof lab); /* IDX labels with .npy images */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    omp_set_num_threads(1); /* two cores are shared: one thread per harness */
    fuzz_scratch(images, sizeof images, "images");
    fuzz_scratch(labels, sizeof labels, "labels");
    const char *dir = fuzz_seed_dir();
    if (dir) {
        write_seeds(dir);
        exit(0);
    }
    return 0;
}

/* The bytes of one image of in (pixels or floats). */
static size_t image_bytes(const cg_images *in)
{
    return (size_t)in->c * in->h * in->w * (in->values ? sizeof(float) : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8) return 0;
    int max = (signed char)data[0];
    int c = 1 + data[1] % 3, h = 1 + data[2] % 32, w = 1 + data[3] % 32, classes = 1 + data[4];
    int flags = data[5];
    size_t split = (size_t)data[6] | (size_t)data[7] << 8;
    data += 8;
    size -= 8;
    if (split > size) split = size;
    put(images, data, split, flags & 2);
    const char *lpath = flags & 1 ? NULL : labels;
    if (lpath) put(labels, data + split, size - split, flags & 4);

    cg_images in, all;
    cg_err e = {{0}}, e2 = {{0}};
    int rc = cg_input_load(images, lpath, c, h, w, classes, max, &in, &e);
    if (rc) {
        fuzz_check_err(&e, "cg_input_load");
        if (in.pixels || in.values || in.labels || in.n) {
            fprintf(stderr, "cg_input_load failed and left images behind\n");
            abort();
        }
    } else {
        if (in.c != c || in.h != h || in.w != w || in.n < 0 || (max > 0 && in.n > max) ||
            !in.pixels == !in.values || (lpath != NULL) != (in.labels != NULL)) {
            fprintf(stderr, "cg_input_load: %d images of %dx%dx%d (asked %dx%dx%d, at most %d), pixels %p values %p "
                    "labels %p\n", in.n, in.c, in.h, in.w, c, h, w, max, (void *)in.pixels, (void *)in.values,
                    (void *)in.labels);
            abort();
        }
        if (in.n > 0) { /* everything is there: touch the last byte */
            const unsigned char *p = in.pixels ? in.pixels : (const unsigned char *)in.values;
            volatile unsigned char last = p[(size_t)in.n * image_bytes(&in) - 1];
            (void)last;
        }
        for (int i = 0; in.labels && i < in.n; i++)
            if (in.labels[i] >= classes) {
                fprintf(stderr, "cg_input_load: label %d of image %d, %d classes\n", in.labels[i], i, classes);
                abort();
            }
    }
    if (max > 0) { /* the limit keeps a prefix of what the whole file gives */
        int rc2 = cg_input_load(images, lpath, c, h, w, classes, 0, &all, &e2);
        if (rc2) {
            fuzz_check_err(&e2, "cg_input_load (all images)");
        } else if (rc) {
            fprintf(stderr, "--images %d refused what the whole file passes: %s\n", max, e.msg);
            abort();
        } else {
            int want = all.n < max ? all.n : max;
            if (in.n != want || !in.values != !all.values ||
                memcmp(in.pixels ? (void *)in.pixels : (void *)in.values,
                       all.pixels ? (void *)all.pixels : (void *)all.values, (size_t)want * image_bytes(&in)) ||
                (in.labels && memcmp(in.labels, all.labels, (size_t)want))) {
                fprintf(stderr, "--images %d: %d images, not the first %d of the file's %d\n", max, in.n, want,
                        all.n);
                abort();
            }
            cg_input_free(&all);
        }
    }
    if (!rc) cg_input_free(&in);
    return 0;
}
