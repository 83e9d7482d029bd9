/* test_data.c — IDX loading (plain and gzip, every malformation we check for),
 * the real Fashion-MNIST test set, and the bilinear resize. */
#include "check.h"
#include "data.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

/* Write bytes to DIR/name (plain, or gzip when gz), returning the path. */
static const char *put(const char *name, const unsigned char *p, size_t n, int gz)
{
    static char path[64][256];
    static int slot;
    char *out = path[slot++ % 64];
    snprintf(out, 256, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(out, "wb");
        if (!f || gzwrite(f, p, (unsigned)n) != (int)n || gzclose(f) != Z_OK) {
            printf("FAIL cannot write %s\n", out);
            exit(1);
        }
    } else {
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
            printf("FAIL cannot write %s\n", out);
            exit(1);
        }
    }
    return out;
}

/* Big-endian header field. */
static void be(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* An idx3 file of n images h x w whose pixel i is (i * 7) & 255; returns its size. */
static size_t make_images(unsigned char *buf, unsigned magic, unsigned n, unsigned h, unsigned w)
{
    be(buf, magic), be(buf + 4, n), be(buf + 8, h), be(buf + 12, w);
    size_t len = (size_t)n * h * w;
    for (size_t i = 0; i < len; i++) buf[16 + i] = (unsigned char)((i * 7) & 255);
    return 16 + len;
}

/* An idx1 file of n labels i % 10. */
static size_t make_labels(unsigned char *buf, unsigned magic, unsigned n)
{
    be(buf, magic), be(buf + 4, n);
    for (unsigned i = 0; i < n; i++) buf[8 + i] = (unsigned char)(i % 10);
    return 8 + n;
}

static void test_idx_errors(void)
{
    unsigned char img[4096], lab[256];
    cg_dataset d;
    cg_err e;
    size_t ni = make_images(img, 0x803, 3, 4, 5), nl = make_labels(lab, 0x801, 3);
    const char *pi = put("img", img, ni, 0), *pl = put("lab", lab, nl, 0);

    CHECK(cg_idx_load(pi, pl, 0, &d, &e) == 0, "valid plain files: %s", e.msg);
    CHECK(d.n == 3 && d.h == 4 && d.w == 5, "shape %d %d %d", d.n, d.h, d.w);
    CHECK(d.pixels[59] == (59 * 7 & 255) && d.labels[2] == 2, "content");
    cg_dataset_free(&d);
    CHECK(d.pixels == NULL && d.n == 0, "free clears");

    const char *gi = put("img.gz", img, ni, 1), *gl = put("lab.gz", lab, nl, 1);
    CHECK(cg_idx_load(gi, gl, 0, &d, &e) == 0, "valid gzip files: %s", e.msg);
    CHECK(d.n == 3 && d.pixels[17] == 17 * 7, "gzip content");
    cg_dataset_free(&d);

    CHECK(cg_idx_load(gi, gl, 2, &d, &e) == 0 && d.n == 2, "max_images keeps 2");
    cg_dataset_free(&d);

    /* wrong magic, on each file */
    make_images(img, 0x802, 3, 4, 5);
    const char *bad = put("badmagic", img, ni, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "wrong magic accepted");
    CHECK_CONTAINS(e.msg, "badmagic: bad magic 0x00000802 at byte offset 0");
    CHECK(strchr(e.msg, '\n') == NULL, "one line");
    CHECK(cg_idx_load(pi, pi, 0, &d, &e) != 0, "images file as labels accepted");
    CHECK_CONTAINS(e.msg, "expected 0x00000801");

    /* short pixel data: header promises 3 images, 2.5 are there */
    make_images(img, 0x803, 3, 4, 5);
    bad = put("short", img, ni - 10, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "short data accepted");
    CHECK_CONTAINS(e.msg, "short: truncated at byte offset 66");
    bad = put("short.gz", img, ni - 10, 1);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "short gzip data accepted");
    CHECK_CONTAINS(e.msg, "truncated at byte offset 66");
    bad = put("hdr", img, 10, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "short header accepted");
    CHECK_CONTAINS(e.msg, "hdr: truncated at byte offset 10");

    /* extra bytes after the promised data */
    img[ni] = 1;
    bad = put("long", img, ni + 1, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "trailing data accepted");
    CHECK_CONTAINS(e.msg, "unexpected data after byte offset 76");

    /* dimension and count limits */
    be(img + 8, 5000); /* header only: h = 5000 */
    bad = put("huge", img, 16, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "h=5000 accepted");
    CHECK_CONTAINS(e.msg, "image size 5000x5");
    be(img + 8, 4), be(img + 4, 0);
    bad = put("empty", img, 16, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "0 images accepted");
    CHECK_CONTAINS(e.msg, "image count 0");
    be(img + 4, 20000000);
    bad = put("many", img, 16, 0);
    CHECK(cg_idx_load(bad, pl, 0, &d, &e) != 0, "2e7 images accepted");
    CHECK_CONTAINS(e.msg, "image count 20000000");

    /* label out of range, reported with the image and offset */
    lab[8 + 1] = 10;
    bad = put("badlabel", lab, nl, 0);
    CHECK(cg_idx_load(pi, bad, 0, &d, &e) != 0, "label 10 accepted");
    CHECK_CONTAINS(e.msg, "badlabel: label 10 of image 1 at byte offset 9 is outside 0..9");

    /* counts differ */
    nl = make_labels(lab, 0x801, 2);
    bad = put("twolabels", lab, nl, 0);
    CHECK(cg_idx_load(pi, bad, 0, &d, &e) != 0, "count mismatch accepted");
    CHECK_CONTAINS(e.msg, "twolabels: holds 2 labels but");
    CHECK_CONTAINS(e.msg, "holds 3 images");

    /* a gzip stream cut short: zlib notices the missing end */
    ni = make_images(img, 0x803, 3, 4, 5);
    gi = put("cut.gz", img, ni, 1);
    struct stat st;
    CHECK(stat(gi, &st) == 0 && truncate(gi, st.st_size - 12) == 0, "truncate gzip");
    CHECK(cg_idx_load(gi, pl, 0, &d, &e) != 0, "truncated gzip accepted");
    CHECK_CONTAINS(e.msg, "cut.gz: unexpected end of file");
    /* gzip with a corrupt byte in the deflate stream */
    gi = put("corrupt.gz", img, ni, 1);
    FILE *f = fopen(gi, "r+b");
    CHECK(f && fseek(f, 12, SEEK_SET) == 0 && fputc(0xff, f) != EOF, "corrupt a byte");
    CHECK(f && fclose(f) == 0, "close");
    CHECK(cg_idx_load(gi, pl, 0, &d, &e) != 0, "corrupt gzip accepted");

    CHECK(cg_idx_load("/nonexistent/x", pl, 0, &d, &e) != 0, "missing file");
    CHECK_CONTAINS(e.msg, "/nonexistent/x: cannot open");
    CHECK(d.pixels == NULL && d.labels == NULL, "nothing left allocated on error");
}

/* Header claims are checked against what the file can hold before anything is
 * allocated; FIFOs, directories and devices are refused without blocking. */
static void test_idx_bounds(void)
{
    unsigned char img[4096], lab[256];
    cg_dataset d;
    cg_err e;
    size_t nl = make_labels(lab, 0x801, 3);
    const char *pl = put("blab", lab, nl, 0);
    /* 76 bytes claiming 10 million images of 4096x4096 (1.6e14 bytes) */
    make_images(img, 0x803, 3, 4, 5);
    be(img + 4, 10000000), be(img + 8, 4096), be(img + 12, 4096);
    const char *big = put("claims", img, 76, 0);
    CHECK(cg_idx_load(big, pl, 0, &d, &e) != 0, "a 76-byte file claiming 1.6e14 bytes accepted");
    CHECK_CONTAINS(e.msg, "claims: truncated at byte offset 76: expected 10000000 images of 4096x4096");
    big = put("claims.gz", img, 76, 1);
    CHECK(cg_idx_load(big, pl, 0, &d, &e) != 0, "a gzip file claiming 1.6e14 bytes accepted");
    CHECK_CONTAINS(e.msg, "claims.gz: the header claims 10000000 images of 4096x4096");
    CHECK_CONTAINS(e.msg, "more than this gzip file can hold uncompressed");
    /* labels: a count the file cannot hold */
    be(lab + 4, 9000000);
    const char *bl = put("biglab", lab, nl, 0);
    size_t ni = make_images(img, 0x803, 3, 4, 5);
    const char *pi = put("bimg", img, ni, 0);
    CHECK(cg_idx_load(pi, bl, 0, &d, &e) != 0, "label count beyond the file accepted");
    CHECK_CONTAINS(e.msg, "biglab: truncated at byte offset 11: expected 9000000 labels");
    /* not regular files */
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(cg_idx_load(fifo, pl, 0, &d, &e) != 0, "a FIFO was read");
    CHECK_CONTAINS(e.msg, "fifo: is a FIFO, not a regular file");
    CHECK(cg_idx_load(pi, dir, 0, &d, &e) != 0, "a directory was read");
    CHECK_CONTAINS(e.msg, ": is a directory, not a regular file");
    CHECK(cg_idx_load("/dev/zero", pl, 0, &d, &e) != 0, "/dev/zero was read");
    CHECK_CONTAINS(e.msg, "/dev/zero: is a device, not a regular file");
    /* a FIFO where the data directory's file should be */
    char sub[128], path[192];
    snprintf(sub, sizeof sub, "%s/fifodir", dir);
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", sub);
    CHECK(mkdir(sub, 0755) == 0 && mkfifo(path, 0600) == 0, "mkfifo in dir");
    put("fifodir/t10k-labels-idx1-ubyte", lab, nl, 0);
    CHECK(cg_data_load(sub, 0, 0, 0, &d, &e) != 0, "a FIFO data file was read");
    CHECK_CONTAINS(e.msg, "t10k-images-idx3-ubyte: is a FIFO, not a regular file");
}

/* cg_data_load finds plain files, and cg_data_write_resized round-trips them. */
static void test_dir_and_write(void)
{
    unsigned char img[4096], lab[256];
    char sub[128], out[160], path[256];
    cg_dataset d, r;
    cg_err e;
    snprintf(sub, sizeof sub, "%s/src", dir);
    CHECK(mkdir(sub, 0755) == 0, "mkdir");
    size_t ni = make_images(img, 0x803, 6, 3, 3), nl = make_labels(lab, 0x801, 6);
    const char *names[4] = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                            "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "src/%s", names[k]);
        put(path, k % 2 ? lab : img, k % 2 ? nl : ni, k >= 2);
    }
    CHECK(cg_data_load(sub, 0, 0, 0, &d, &e) == 0, "plain test set: %s", e.msg);
    CHECK(d.n == 6 && d.h == 3, "test set shape");
    cg_dataset_free(&d);
    CHECK(cg_data_load(sub, 1, 5, 4, &d, &e) == 0, "gzip train set: %s", e.msg);
    CHECK(d.n == 4 && d.h == 5 && d.w == 5, "train resized %d %d %d", d.n, d.h, d.w);
    cg_dataset_free(&d);
    CHECK(cg_data_load(dir, 0, 0, 0, &d, &e) != 0, "no files in dir");
    CHECK_CONTAINS(e.msg, "t10k-images-idx3-ubyte: no such file (nor t10k-images-idx3-ubyte.gz)");

    snprintf(out, sizeof out, "%s/out/deep", dir);
    CHECK(cg_data_write_resized(sub, 7, out, &e) == 0, "write resized: %s", e.msg);
    CHECK(cg_data_load(out, 1, 0, 0, &r, &e) == 0, "read back: %s", e.msg);
    CHECK(cg_data_load(sub, 1, 0, 0, &d, &e) == 0, "source");
    CHECK(r.n == 6 && r.h == 7 && r.w == 7, "written shape %d %d %d", r.n, r.h, r.w);
    unsigned char want[49];
    cg_resize_bilinear_u8(d.pixels + 9 * 5, 3, 3, want, 7, 7);
    CHECK(memcmp(r.pixels + 49 * 5, want, 49) == 0, "written pixels are the resize");
    CHECK(memcmp(r.labels, d.labels, 6) == 0, "labels unchanged");
    cg_dataset_free(&r), cg_dataset_free(&d);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", out);
    CHECK(access(path, R_OK) == 0, "plain t10k labels written");
    CHECK(cg_data_write_resized(sub, 0, out, &e) != 0, "side 0 refused");
}

static void test_resize(void)
{
    unsigned char src[35], dst[117];
    memset(src, 77, sizeof src);
    cg_resize_bilinear_u8(src, 5, 7, dst, 13, 9);
    int same = 1;
    for (int i = 0; i < 117; i++) same &= dst[i] == 77;
    CHECK(same, "constant image stays constant");

    /* 2x2 -> 4x4 by hand: source x = (dst + 0.5) / 2 - 0.5 -> 0 (clamped), .25, .75, 1.25
     * (clamped to the last column). Columns of row 0: 0, 25, 75, 100; of row 1: 200,
     * 160, 80, 40. Rows mix them with weights 0, .25, .75, 1 on row 1. */
    const unsigned char s2[4] = {0, 100, 200, 40};
    const unsigned char want[16] = {0,   25,  75, 100, /* row 0 */
                                    50,  59,  76, 85,  /* .75*r0 + .25*r1: 58.75 76.25 */
                                    150, 126, 79, 55,  /* .25*r0 + .75*r1: 126.25 78.75 */
                                    200, 160, 80, 40};
    unsigned char got[16];
    cg_resize_bilinear_u8(s2, 2, 2, got, 4, 4);
    CHECK(memcmp(got, want, 16) == 0, "2x2->4x4: %d %d %d %d / %d %d %d %d / %d %d %d %d", got[0],
          got[1], got[2], got[3], got[4], got[5], got[6], got[7], got[8], got[9], got[10],
          got[11]);

    /* halves round away from zero: [0,2] -> 0, .5, 1.5, 2 -> 0, 1, 2, 2 */
    const unsigned char s3[2] = {0, 2};
    cg_resize_bilinear_u8(s3, 1, 2, got, 1, 4);
    CHECK(got[0] == 0 && got[1] == 1 && got[2] == 2 && got[3] == 2, "ties: %d %d %d %d", got[0],
          got[1], got[2], got[3]);

    /* 4x4 -> 2x2 samples at 0.5 and 2.5: the mean of each 2x2 block */
    const unsigned char s4[16] = {0, 10, 100, 100, 20, 30, 100, 101, 7, 7, 255, 255, 7, 8, 255, 254};
    cg_resize_bilinear_u8(s4, 4, 4, got, 2, 2);
    CHECK(got[0] == 15 && got[1] == 100 && got[2] == 7 && got[3] == 255,
          "downscale: %d %d %d %d", got[0], got[1], got[2], got[3]);
}

static void test_real(void)
{
    cg_dataset d, r;
    cg_err e;
    if (cg_data_load(NULL, 0, 0, 0, &d, &e)) {
        CHECK(0, "real test set: %s", e.msg);
        return;
    }
    CHECK(d.n == 10000 && d.h == 28 && d.w == 28, "t10k shape %d %d %d", d.n, d.h, d.w);
    const unsigned char first[5] = {9, 2, 1, 1, 6};
    CHECK(memcmp(d.labels, first, 5) == 0, "first labels %d %d %d %d %d", d.labels[0],
          d.labels[1], d.labels[2], d.labels[3], d.labels[4]);
    int count[10] = {0};
    for (int i = 0; i < d.n; i++) count[d.labels[i] < 10 ? d.labels[i] : 0]++;
    int balanced = 1;
    for (int c = 0; c < 10; c++) balanced &= count[c] == 1000;
    CHECK(balanced, "1000 test images per class");

    CHECK(cg_data_load(NULL, 0, 64, 50, &r, &e) == 0, "resized load: %s", e.msg);
    CHECK(r.n == 50 && r.h == 64 && r.w == 64, "resized shape %d %d %d", r.n, r.h, r.w);
    unsigned char want[64 * 64];
    cg_resize_bilinear_u8(d.pixels + 49 * 784, 28, 28, want, 64, 64);
    CHECK(memcmp(r.pixels + 49 * 4096, want, 4096) == 0, "image 49 resized like the function");
    CHECK(memcmp(r.labels, d.labels, 50) == 0, "labels kept");
    cg_dataset_free(&r);
    CHECK(cg_data_load(NULL, 0, 28, 3, &r, &e) == 0 && memcmp(r.pixels, d.pixels, 3 * 784) == 0,
          "side 28 leaves pixels as they are");
    cg_dataset_free(&r);
    cg_dataset_free(&d);
}

int main(void)
{
    strcpy(dir, "/tmp/cg_test_data_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_idx_errors();
    test_idx_bounds();
    test_resize();
    test_dir_and_write();
    test_real();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", dir);
    return cg_test_done("data");
}
