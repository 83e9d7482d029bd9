/* test_npy.c — the .npy reader on hand-made files (versions 1.0 and 2.0,
 * uint8 and float32, every refusal it makes), every truncation and many
 * corruptions of a valid file (one-line errors, never a crash), the writer
 * read back byte for byte, and the CSV writer's exact text. */
#include "check.h"
#include "npy.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

/* DIR/name */
static const char *tmp(const char *name)
{
    static char path[8][256];
    static int slot;
    char *out = path[slot++ % 8];
    snprintf(out, 256, "%s/%s", dir, name);
    return out;
}

/* Write raw bytes to DIR/name. */
static const char *put(const char *name, const void *p, size_t n)
{
    const char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
        printf("FAIL cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* An .npy image in memory: magic, version, header padded to 64 bytes (with
 * its '\n'), then data_len bytes of data. major 1 or 2 (3 for a refusal). */
static size_t make_npy(unsigned char *out, int major, const char *dict, const void *data,
                       size_t data_len)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict), hl = dl + 1;
    while ((pre + hl) % 64) hl++;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major, out[7] = 0;
    out[8] = (unsigned char)(hl & 0xff), out[9] = (unsigned char)(hl >> 8);
    if (major != 1) out[10] = (unsigned char)(hl >> 16), out[11] = (unsigned char)(hl >> 24);
    memcpy(out + pre, dict, dl);
    memset(out + pre + dl, ' ', hl - dl - 1);
    out[pre + hl - 1] = '\n';
    memcpy(out + pre + hl, data, data_len);
    return pre + hl + data_len;
}

static unsigned char buf[1 << 16];

/* Expect reading a file made of dict + data_len bytes as images to fail with want. */
static void bad(int major, const char *dict, size_t data_len, const char *want)
{
    static unsigned char zeros[4096];
    size_t n = make_npy(buf, major, dict, zeros, data_len);
    const char *p = put("bad.npy", buf, n);
    cg_npy a;
    cg_err e;
    int nn, c, h, w;
    int rc = cg_npy_read_images(p, CG_READ_MAX, &a, &nn, &c, &h, &w, &e);
    CHECK(rc != 0, "accepted: %s", dict);
    if (!rc) {
        cg_npy_free(&a);
        return;
    }
    CHECK_CONTAINS(e.msg, "bad.npy: ");
    CHECK_CONTAINS(e.msg, want);
    CHECK(strchr(e.msg, '\n') == NULL, "one line: %s", e.msg);
    /* the in-memory reader says the same */
    cg_err e2;
    rc = cg_npy_parse(p, buf, n, CG_NPY_IMAGE_TYPES, 3, 4, &a, &e2);
    if (!rc) cg_npy_free(&a);
    else if (!strstr(want, "images of shape")) CHECK(strcmp(e.msg, e2.msg) == 0, "same: %s / %s", e.msg, e2.msg);
}

/* Valid files: uint8 N×H×W in version 1.0, float32 N×C×H×W in 2.0 with the
 * keys in another order, double quotes and no trailing comma. */
static void test_valid(void)
{
    unsigned char px[24];
    for (int k = 0; k < 24; k++) px[k] = (unsigned char)(k * 11);
    size_t n = make_npy(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3, 4), }",
                        px, 24);
    CHECK(n == 128 + 24, "header padded to a multiple of 64: %zu", n);
    const char *p = put("u8.npy", buf, n);
    cg_npy a;
    cg_err e;
    int nn = 0, c = 0, h = 0, w = 0;
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &nn, &c, &h, &w, &e) == 0, "u8: %s", e.msg);
    CHECK(nn == 2 && c == 1 && h == 3 && w == 4, "u8 shape %d %d %d %d", nn, c, h, w);
    CHECK(a.type == CG_NPY_U8 && a.count == 24 && a.ndim == 3, "u8 type/count");
    CHECK(a.data && memcmp(a.data, px, 24) == 0, "u8 pixels");
    cg_npy_free(&a);

    /* float32, version 2.0 */
    static const uint32_t bits[8] = {0x3f800000, 0x00000001, 0x7f800000, 0xff800000,
                                     0x7fc00000, 0x80000000, 0x437f0000, 0x3b808081};
    n = make_npy(buf, 2, "{\"shape\":(1,2,2,2),\"fortran_order\":False,\"descr\":\"<f4\"}",
                 bits, sizeof bits);
    p = put("f32.npy", buf, n);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &nn, &c, &h, &w, &e) == 0, "f32: %s", e.msg);
    CHECK(nn == 1 && c == 2 && h == 2 && w == 2 && a.type == CG_NPY_F32, "f32 shape");
    CHECK(a.data && memcmp(a.data, bits, sizeof bits) == 0, "f32 bits exact");
    cg_npy_free(&a);
    /* '<u1' is uint8 too; a bound on the file's size holds */
    n = make_npy(buf, 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (1, 1, 2)}", px, 2);
    p = put("u1.npy", buf, n);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &nn, &c, &h, &w, &e) == 0, "<u1: %s", e.msg);
    cg_npy_free(&a);
    CHECK(cg_npy_read_images(p, n - 1, &a, &nn, &c, &h, &w, &e) != 0, "max_bytes ignored");
    CHECK_CONTAINS(e.msg, "u1.npy: 130 bytes, more than the 129");
    /* labels-like: 1-d int64 through the general reader */
    long long lab[3] = {0, 9, 4};
    n = make_npy(buf, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", lab, 24);
    p = put("lab.npy", buf, n);
    CHECK(cg_npy_read(p, CG_NPY_MASK(CG_NPY_I64) | CG_NPY_MASK(CG_NPY_U8), 1, 1, CG_READ_MAX, &a,
                      &e) == 0, "i8 labels: %s", e.msg);
    CHECK(a.type == CG_NPY_I64 && a.count == 3 && ((long long *)a.data)[1] == 9, "labels read");
    cg_npy_free(&a);
    CHECK(cg_npy_read(p, CG_NPY_MASK(CG_NPY_U8), 1, 1, CG_READ_MAX, &a, &e) != 0, "i8 as u8");
    CHECK_CONTAINS(e.msg, "lab.npy: dtype '<i8'; expected |u1 (uint8)");
}

/* Every refusal, each one line naming the file. */
static void test_refusals(void)
{
    bad(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1, 2, 2), }", 16,
        "dtype '>f4' is big-endian; convgen reads little-endian |u1 (uint8) or <f4 (float32) only");
    bad(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 2), }", 32,
        "dtype '<f8'; expected |u1 (uint8) or <f4 (float32)");
    bad(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 2), }", 16,
        "dtype '<i4'; expected |u1 (uint8) or <f4 (float32)");
    bad(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 2, 2), }", 16,
        "expected a quoted string");
    bad(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2, 2), }", 16,
        "fortran_order is True (column-major); convgen reads C order only");
    bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16,
        "2 dimensions; expected 3 to 4");
    bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1), }", 4,
        "more than 4 dimensions");
    bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2, 2), }", 0,
        "images of shape (0, 2, 2); expected N×H×W or N×C×H×W");
    bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 2), }", 15,
        "truncated: the header's shape needs 16 bytes of data after byte offset 128, the file "
        "holds 15");
    bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }", 17,
        "1 bytes after the 16 bytes of data its header describes");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1048576, 1048576, 1048576, "
        "1048576), }", 4, "shape too large (its element count overflows)");
    bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1048576, 1048576, 1048576), }",
        4, "truncated: the header's shape needs 4611686018427387904 bytes");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 4,), }", 3, "truncated");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1099511627777), }", 4,
        "dimension larger than 2^40");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, -2), }", 4,
        "expected a non-negative integer in the shape");
    bad(1, "{'descr': '|u1', 'fortran_order': False, }", 4, "the header lacks 'shape'");
    bad(1, "{'descr': '|u1', 'shape': (1, 1, 4), }", 4, "the header lacks 'fortran_order'");
    bad(1, "{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 4), }", 4,
        "repeated key 'descr'");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 4), 'x': 1}", 4,
        "unexpected key 'x'");
    bad(1, "{'descr': '|u1', 'fortran_order': 0, 'shape': (1, 1, 4), }", 4,
        "expected True or False");
    bad(1, "{'descr': '|u1, 'fortran_order': False, 'shape': (1, 1, 4), }", 4, "expected ',' or '}'");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (4), }", 4,
        "a one-element shape needs its trailing comma");
    bad(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 4), } x", 4,
        "the header must end with spaces and one newline after '}'");
    bad(1, "['descr', '|u1']", 4, "expected '{'");
    bad(2, "{'descr': 'é', 'fortran_order': False, 'shape': (1, 1, 4), }", 4,
        "unexpected character in string");

    cg_npy a;
    cg_err e;
    int n, c, h, w;
    unsigned char pre[64];
    /* version 3.0 and 1.1 */
    size_t len = make_npy(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,1,1), }",
                          "x", 1);
    buf[6] = 3;
    const char *p = put("v3.npy", buf, len);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "v3 accepted");
    CHECK_CONTAINS(e.msg, "v3.npy: .npy format version 3.0; convgen reads 1.0 and 2.0");
    buf[6] = 1, buf[7] = 1;
    p = put("v11.npy", buf, len);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "v1.1 accepted");
    CHECK_CONTAINS(e.msg, "format version 1.1");
    /* foreign files */
    p = put("idx.npy", "\x00\x00\x08\x03\x00\x00\x00\x01\x00\x00\x00\x1c", 12);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "IDX accepted");
    CHECK_CONTAINS(e.msg, "idx.npy: not a .npy file (it does not begin with \\x93NUMPY)");
    p = put("empty.npy", "", 0);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "empty accepted");
    CHECK_CONTAINS(e.msg, "empty.npy: not a .npy file");
    /* a header length beyond the file, and beyond the limit (version 2.0) */
    memcpy(pre, "\x93NUMPY\x01\x00\xff\xff", 10);
    memset(pre + 10, ' ', 54);
    p = put("hlen.npy", pre, 64);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "long header");
    CHECK_CONTAINS(e.msg, "hlen.npy: .npy header length 65535 at byte offset 8 runs past the end "
                          "of the file (64 bytes)");
    memcpy(pre, "\x93NUMPY\x02\x00\x00\x00\x00\x10", 12);
    p = put("hbig.npy", pre, 64);
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "huge header");
    CHECK_CONTAINS(e.msg, "header length 268435456 at byte offset 8 exceeds the 65536-byte limit");
    /* not regular files */
    CHECK(cg_npy_read_images(dir, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "directory read");
    CHECK_CONTAINS(e.msg, "is a directory, not a regular file");
    const char *fifo = tmp("fifo.npy");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(cg_npy_read_images(fifo, CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0, "FIFO read");
    CHECK_CONTAINS(e.msg, "fifo.npy: is a FIFO");
    CHECK(cg_npy_read_images(tmp("absent.npy"), CG_READ_MAX, &a, &n, &c, &h, &w, &e) != 0,
          "missing file");
    CHECK_CONTAINS(e.msg, "absent.npy: cannot open");
}

/* Every truncation of a valid file is refused in one line; every byte of it
 * changed (three ways) is read or refused in one line, never a crash. */
static void test_damage(void)
{
    float v[2 * 3 * 3];
    for (int k = 0; k < 18; k++) v[k] = (float)k / 7.0f;
    static unsigned char good[256], bytes[256];
    size_t len = make_npy(good, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 3, 3), }",
                          v, sizeof v);
    cg_npy a;
    cg_err e;
    int n, c, h, w, oneline = 1, named = 1, refused = 0;
    for (size_t cut = 0; cut < len; cut++) {
        const char *p = put("cut.npy", good, cut);
        int rc = cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e);
        if (!rc) cg_npy_free(&a);
        refused += rc != 0;
        oneline &= !rc || !strchr(e.msg, '\n');
        named &= !rc || strstr(e.msg, "/cut.npy: ") != NULL;
    }
    CHECK(refused == (int)len, "every truncation refused: %d of %zu", refused, len);
    CHECK(oneline && named, "truncation errors: one line naming the file");
    int crashed_never = 1, reads = 0, fails = 0;
    static const unsigned char with[3] = {0x00, 0xff, '9'};
    for (size_t off = 0; off < len; off++)
        for (int k = 0; k < 3; k++) {
            memcpy(bytes, good, len);
            if (bytes[off] == with[k]) continue;
            bytes[off] = with[k];
            int rc = cg_npy_parse("mem.npy", bytes, len, CG_NPY_IMAGE_TYPES, 3, 4, &a, &e);
            if (!rc) {
                reads++;
                crashed_never &= a.count * 4 + 128 == (long long)len;
                cg_npy_free(&a);
            } else {
                fails++;
                oneline &= !strchr(e.msg, '\n');
                named &= strstr(e.msg, "mem.npy: ") == e.msg;
            }
        }
    CHECK(crashed_never, "an accepted damaged file's count matches its size");
    CHECK(oneline && named, "damage errors: one line naming the file");
    CHECK(fails > 100 && reads > 0, "damage: %d refused, %d read (data bytes)", fails, reads);
}

/* The writer: int32 predictions, float32 scores and uint8 images, read back;
 * the header exactly as numpy writes it. */
static void test_write(void)
{
    cg_err e;
    cg_npy a;
    int pred[3] = {7, 0, -1};
    long long s1[1] = {3};
    const char *p = tmp("pred.npy");
    CHECK(cg_npy_write(p, CG_NPY_I32, 1, s1, pred, &e) == 0, "write i32: %s", e.msg);
    cg_buf raw;
    CHECK(cg_read_file(p, &raw, &e) == 0, "read");
    const char *want = "\x93NUMPY\x01\x00\x76\x00{'descr': '<i4', 'fortran_order': False, "
                       "'shape': (3,), }";
    CHECK(raw.len == 128 + 12 && memcmp(raw.data, want, strlen(want)) == 0 &&
              raw.data[127] == '\n' && raw.data[126] == ' ',
          "i32 header as numpy writes it (%zu bytes)", raw.len);
    cg_buf_free(&raw);
    CHECK(cg_npy_read(p, CG_NPY_MASK(CG_NPY_I32), 1, 1, CG_READ_MAX, &a, &e) == 0, "%s", e.msg);
    CHECK(a.count == 3 && memcmp(a.data, pred, sizeof pred) == 0, "predictions back");
    cg_npy_free(&a);

    float sc[2 * 10];
    for (int k = 0; k < 20; k++) sc[k] = 1.0f / (float)(k + 1);
    long long s2[2] = {2, 10};
    p = tmp("scores.npy");
    CHECK(cg_npy_write(p, CG_NPY_F32, 2, s2, sc, &e) == 0, "write f32: %s", e.msg);
    CHECK(cg_npy_read(p, CG_NPY_MASK(CG_NPY_F32), 2, 2, CG_READ_MAX, &a, &e) == 0, "%s", e.msg);
    CHECK(a.count == 20 && a.shape[1] == 10 && memcmp(a.data, sc, sizeof sc) == 0, "scores back");
    cg_npy_free(&a);

    unsigned char img[2 * 1 * 3 * 4];
    for (int k = 0; k < 24; k++) img[k] = (unsigned char)(255 - k);
    long long s4[4] = {2, 1, 3, 4};
    p = tmp("img.npy");
    CHECK(cg_npy_write(p, CG_NPY_U8, 4, s4, img, &e) == 0, "write u8: %s", e.msg);
    int n, c, h, w;
    CHECK(cg_npy_read_images(p, CG_READ_MAX, &a, &n, &c, &h, &w, &e) == 0, "%s", e.msg);
    CHECK(n == 2 && c == 1 && h == 3 && w == 4 && memcmp(a.data, img, 24) == 0, "images back");
    cg_npy_free(&a);

    CHECK(cg_npy_write(tmp("i64.npy"), CG_NPY_I64, 1, s1, pred, &e) != 0, "i64 written");
    CHECK_CONTAINS(e.msg, "writes .npy arrays of uint8, float32 or int32 only");
    CHECK(access(tmp("i64.npy"), F_OK) != 0, "nothing written");
    CHECK(cg_npy_write(tmp("no/such/dir.npy"), CG_NPY_I32, 1, s1, pred, &e) != 0, "bad dir");
    CHECK_CONTAINS(e.msg, "no/such/dir.npy: ");
}

/* The CSV: a header line, then index, prediction and scores that round-trip. */
static void test_csv(void)
{
    cg_err e;
    int pred[2] = {3, 1};
    float sc[2 * 3] = {0.1f, 0.7f, 0.2f, 1.0f, 0.0f, 1e-20f};
    const char *p = tmp("out.csv");
    CHECK(cg_csv_write_predictions(p, 2, pred, 3, sc, &e) == 0, "csv: %s", e.msg);
    cg_buf raw;
    CHECK(cg_read_file(p, &raw, &e) == 0, "read");
    const char *want = "index,prediction,score_0,score_1,score_2\n"
                       "0,3,0.100000001,0.699999988,0.200000003\n"
                       "1,1,1,0,9.99999968e-21\n";
    CHECK(strcmp(raw.data, want) == 0, "csv text:\n%s", raw.data);
    cg_buf_free(&raw);
    CHECK(cg_csv_write_predictions(p, 2, pred, 0, NULL, &e) == 0, "csv: %s", e.msg);
    CHECK(cg_read_file(p, &raw, &e) == 0, "read");
    CHECK(strcmp(raw.data, "index,prediction\n0,3\n1,1\n") == 0, "csv without scores: %s",
          raw.data);
    cg_buf_free(&raw);
    CHECK(cg_csv_write_predictions(tmp("nodir/x.csv"), 2, pred, 3, sc, &e) != 0, "bad dir");
}

int main(void)
{
    strcpy(dir, "/tmp/cg_test_npy_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_valid();
    test_refusals();
    test_damage();
    test_write();
    test_csv();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", dir);
    return cg_test_done("npy");
}
