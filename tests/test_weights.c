/* test_weights.c — safetensors reading and writing, every malformation the
 * reader checks, seeded random weights, and matching a file against a spec. */
#include "check.h"
#include "weights.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

/* A small network by hand: conv1 1x8x8 K=3 M=3 +tanh+pool -> 3x3x3, fc1 27->5
 * (bias), fc2 5->4 (bias), softmax. */
static void tiny_spec(cg_spec *s)
{
    memset(s, 0, sizeof *s);
    strcpy(s->path, "tiny.yaml");
    strcpy(s->name, "tiny");
    s->C = 1, s->H = 8, s->W = 8, s->scale = 1, s->seed = 0;
    cg_layer *l = s->layers;
    strcpy(l[0].name, "conv1");
    l[0].op = CG_OP_CONV, l[0].C = 1, l[0].H = 8, l[0].W = 8, l[0].M = 3, l[0].K = 3;
    l[0].pool = 2, l[0].act = CG_ACT_TANH, l[0].OC = 3, l[0].OH = 3, l[0].OW = 3;
    strcpy(l[1].name, "fc1");
    l[1].op = CG_OP_FC, l[1].C = 3, l[1].H = 3, l[1].W = 3, l[1].out = 5, l[1].bias = 1;
    l[1].act = CG_ACT_TANH, l[1].OC = 5, l[1].OH = 1, l[1].OW = 1;
    strcpy(l[2].name, "fc2");
    l[2].op = CG_OP_FC, l[2].C = 5, l[2].H = 1, l[2].W = 1, l[2].out = 4, l[2].bias = 1;
    l[2].OC = 4, l[2].OH = 1, l[2].OW = 1;
    strcpy(l[3].name, "prob");
    l[3].op = CG_OP_SOFTMAX, l[3].C = 4, l[3].H = 1, l[3].W = 1;
    l[3].OC = 4, l[3].OH = 1, l[3].OW = 1;
    s->nlayers = 4;
}

/* DIR/name */
static const char *tmp(const char *name)
{
    static char path[16][256];
    static int slot;
    char *out = path[slot++ % 16];
    snprintf(out, 256, "%s/%s", dir, name);
    return out;
}

/* Write a safetensors file from a header string and `data_len` bytes of data
 * (value k at byte k), with the header length field given explicitly. */
static const char *st_file(const char *name, const char *header, unsigned long long hlen,
                           size_t data_len)
{
    const char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)(hlen >> (8 * k));
    int ok = f && fwrite(len8, 1, 8, f) == 8 && fwrite(header, 1, strlen(header), f) == strlen(header);
    for (size_t k = 0; ok && k < data_len; k++) ok = fputc((int)(k & 255), f) != EOF;
    if (!f || fclose(f) || !ok) {
        printf("FAIL cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* Expect loading a header (with its true length) plus data to fail with `want`. */
static void bad_header(const char *header, size_t data_len, const char *want)
{
    cg_weights w;
    cg_err e;
    const char *p = st_file("bad.safetensors", header, strlen(header), data_len);
    int rc = cg_weights_load(p, &w, &e);
    CHECK(rc != 0, "accepted: %s", header);
    if (rc) CHECK_CONTAINS(e.msg, want);
    else cg_weights_free(&w);
}

static void test_random(void)
{
    cg_spec s;
    cg_weights a, b;
    cg_err e;
    tiny_spec(&s);
    CHECK(cg_weights_for_spec(&s, &a, &e) == 0, "random: %s", e.msg);
    CHECK(a.random == 1 && a.n == 5, "random=%d n=%d", a.random, a.n);
    const cg_tensor *k = cg_weights_find(&a, "conv1.weight"), *fb = cg_weights_find(&a, "fc1.bias");
    CHECK(k && k->ndim == 4 && k->shape[0] == 3 && k->shape[1] == 1 && k->shape[3] == 3 &&
          k->count == 27, "conv1.weight shape");
    CHECK(fb && fb->ndim == 1 && fb->shape[0] == 5, "fc1.bias shape");
    CHECK(cg_weights_find(&a, "conv1.bias") == NULL, "no conv bias without bias: 1");
    const cg_tensor *f1 = cg_weights_find(&a, "fc1.weight");
    CHECK(f1 && f1->ndim == 2 && f1->shape[0] == 5 && f1->shape[1] == 27, "fc1.weight shape");
    /* the documented stream: splitmix64 from seed 0 gives 0xe220a8397b1dcdaf first */
    double u = (double)(0xe220a8397b1dcdafULL >> 11) * 0x1.0p-53;
    CHECK(k->data[0] == (float)((2 * u - 1) / 3.0), "first value %.9g", k->data[0]);
    int in_range = 1;
    double sum = 0;
    for (long long i = 0; i < f1->count; i++) {
        in_range &= fabsf(f1->data[i]) <= 1 / sqrtf(27.f);
        sum += f1->data[i];
    }
    for (long long i = 0; i < fb->count; i++) in_range &= fabsf(fb->data[i]) <= 1 / sqrtf(27.f);
    CHECK(in_range, "fc1 within +-1/sqrt(27)");
    CHECK(fabs(sum / (double)f1->count) < 0.1 && f1->data[0] != f1->data[1], "spread around 0");

    CHECK(cg_weights_for_spec(&s, &b, &e) == 0, "again");
    int same = 1;
    for (int t = 0; t < a.n; t++)
        same &= memcmp(a.t[t].data, b.t[t].data, (size_t)a.t[t].count * 4) == 0;
    CHECK(same, "same seed, same weights");
    cg_weights_free(&b);
    s.seed = 42;
    CHECK(cg_weights_for_spec(&s, &b, &e) == 0, "seed 42");
    CHECK(memcmp(b.t[0].data, a.t[0].data, 27 * 4) != 0, "other seed, other weights");
    cg_weights_free(&b);

    /* save, load, compare; header padded to 8 bytes and sorted by name */
    const char *path = tmp("w.safetensors");
    CHECK(cg_weights_save(path, &a, &e) == 0, "save: %s", e.msg);
    CHECK(cg_weights_load(path, &b, &e) == 0, "load: %s", e.msg);
    CHECK(b.n == a.n && b.random == 0, "n %d", b.n);
    for (int t = 0; t < a.n; t++) {
        const cg_tensor *x = &a.t[t], *y = cg_weights_find(&b, x->name);
        CHECK(y && y->ndim == x->ndim && memcmp(y->shape, x->shape, sizeof x->shape) == 0 &&
                  y->count == x->count && memcmp(y->data, x->data, (size_t)x->count * 4) == 0,
              "round trip of %s", x->name);
    }
    cg_weights_free(&b);
    FILE *f = fopen(path, "rb");
    unsigned char len8[8] = {0};
    char hdr[1024] = {0};
    CHECK(f && fread(len8, 1, 8, f) == 8, "read back");
    unsigned long long n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len8[i];
    CHECK(f && n % 8 == 0 && n < sizeof hdr && fread(hdr, 1, n, f) == n, "header length %llu", n);
    if (f) fclose(f);
    char *p1 = strstr(hdr, "\"conv1.weight\""), *p2 = strstr(hdr, "\"fc1.bias\""),
         *p3 = strstr(hdr, "\"fc2.weight\"");
    CHECK(p1 && p2 && p3 && p1 < p2 && p2 < p3, "sorted by name: %s", hdr);
    const char *hs = hdr;
    CHECK_CONTAINS(hs, "\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[5,27],\"data_offsets\":");
    char *end = strrchr(hdr, '}');
    int spaces = end != NULL;
    for (char *c = end ? end + 1 : hdr; c < hdr + n; c++) spaces &= *c == ' ';
    CHECK(spaces, "padded with spaces after the closing brace");

    /* the spec names the file: accepted as is */
    strcpy(s.weights, path);
    CHECK(cg_weights_for_spec(&s, &b, &e) == 0 && b.random == 0, "from file: %s", e.msg);
    CHECK(b.n == 5 && memcmp(cg_weights_find(&b, "fc2.weight")->data,
                             cg_weights_find(&a, "fc2.weight")->data, 20 * 4) == 0, "file data");
    cg_weights_free(&b);

    /* missing, misshaped, extra tensors against the spec */
    cg_weights m = a;
    m.n = 4; /* drops the last drawn tensor, fc2.bias */
    const char *p = tmp("missing.safetensors");
    CHECK(cg_weights_save(p, &m, &e) == 0, "save missing");
    strcpy(s.weights, p);
    CHECK(cg_weights_for_spec(&s, &b, &e) != 0, "missing tensor accepted");
    CHECK_CONTAINS(e.msg, "missing.safetensors: tensor 'fc2.bias' is missing; the spec needs [4]");

    cg_tensor *t = (cg_tensor *)cg_weights_find(&a, "fc1.weight");
    t->shape[1] = 9, t->shape[0] = 15;
    p = tmp("shape.safetensors");
    CHECK(cg_weights_save(p, &a, &e) == 0, "save misshaped");
    t->shape[1] = 27, t->shape[0] = 5;
    strcpy(s.weights, p);
    CHECK(cg_weights_for_spec(&s, &b, &e) != 0, "misshaped tensor accepted");
    CHECK_CONTAINS(e.msg, "shape.safetensors: tensor 'fc1.weight' has shape [15,9], the spec "
                          "needs [5,27]");

    cg_tensor extra[6];
    memcpy(extra, a.t, 5 * sizeof *extra);
    extra[5] = a.t[0];
    strcpy(extra[5].name, "conv2.weight");
    m.t = extra, m.n = 6;
    p = tmp("extra.safetensors");
    CHECK(cg_weights_save(p, &m, &e) == 0, "save extra");
    strcpy(s.weights, p);
    CHECK(cg_weights_for_spec(&s, &b, &e) != 0, "extra tensor accepted");
    CHECK_CONTAINS(e.msg, "extra.safetensors: tensor 'conv2.weight' is not a parameter of spec "
                          "'tiny'");
    strcpy(extra[5].name, "fc1.weight");
    CHECK(cg_weights_save(p, &m, &e) != 0, "duplicate names saved");
    CHECK_CONTAINS(e.msg, "tensor 'fc1.weight' appears twice");

    /* a truncated copy of a good file */
    cg_buf whole;
    CHECK(cg_read_file(path, &whole, &e) == 0, "read");
    p = tmp("trunc.safetensors");
    CHECK(cg_write_file_atomic(p, whole.data, whole.len - 4, &e) == 0, "write");
    CHECK(cg_weights_load(p, &b, &e) != 0, "truncated accepted");
    CHECK_CONTAINS(e.msg, "outside the data section");
    CHECK(cg_write_file_atomic(p, whole.data, 20, &e) == 0, "write");
    CHECK(cg_weights_load(p, &b, &e) != 0, "truncated header accepted");
    CHECK_CONTAINS(e.msg, "runs past the end of the file (20 bytes)");
    CHECK(cg_write_file_atomic(p, whole.data, 5, &e) == 0, "write");
    CHECK(cg_weights_load(p, &b, &e) != 0, "5 bytes accepted");
    CHECK_CONTAINS(e.msg, "5 bytes, too short");
    cg_buf_free(&whole);
    CHECK(cg_weights_load(tmp("nothere"), &b, &e) != 0, "missing file");
    CHECK_CONTAINS(e.msg, "nothere: cannot open");
    cg_weights_free(&a);
}

static void test_malformed(void)
{
    cg_weights w;
    cg_err e;
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                     "\"__metadata__\":{\"format\":\"pt\"},"
                     " \"b\" : { \"shape\" : [ ] , \"dtype\" : \"F32\", \"data_offsets\" : [24,28] } }  ";
    const char *p = st_file("ok.safetensors", ok, strlen(ok), 28);
    CHECK(cg_weights_load(p, &w, &e) == 0, "valid header: %s", e.msg);
    const cg_tensor *a = cg_weights_find(&w, "a"), *b = cg_weights_find(&w, "b");
    CHECK(a && b && a->count == 6 && b->count == 1 && b->ndim == 0, "entries");
    float want;
    unsigned char bytes[4] = {24, 25, 26, 27};
    memcpy(&want, bytes, 4);
    CHECK(b && memcmp(&b->data[0], &want, 4) == 0, "b's bytes come from offset 24");
    cg_weights_free(&w);

    /* escapes in names, including a surrogate pair */
    const char *esc = "{\"x\\\"y\\u00e9\\ud83d\\ude00\\n\":{\"dtype\":\"F32\",\"shape\":[1],"
                      "\"data_offsets\":[0,4]}}";
    p = st_file("esc.safetensors", esc, strlen(esc), 4);
    CHECK(cg_weights_load(p, &w, &e) == 0, "escapes: %s", e.msg);
    CHECK(w.n == 1 && strcmp(w.t[0].name, "x\"y\xc3\xa9\xf0\x9f\x98\x80\n") == 0, "decoded name");
    if (w.n == 1) {
        p = tmp("esc2.safetensors");
        cg_weights v;
        CHECK(cg_weights_save(p, &w, &e) == 0 && cg_weights_load(p, &v, &e) == 0, "resave");
        CHECK(v.n == 1 && strcmp(v.t[0].name, w.t[0].name) == 0, "escaped name round trip");
        cg_weights_free(&v);
    }
    cg_weights_free(&w);

    /* header length field larger than the file, and larger than the limit */
    p = st_file("long.safetensors", "{}", 1000, 0);
    CHECK(cg_weights_load(p, &w, &e) != 0, "length beyond file accepted");
    CHECK_CONTAINS(e.msg, "long.safetensors: header length 1000 at byte offset 0 runs past");
    p = st_file("huge.safetensors", "{}", 200ull << 20, 0);
    CHECK(cg_weights_load(p, &w, &e) != 0, "200 MiB header accepted");
    CHECK_CONTAINS(e.msg, "exceeds the 100 MiB limit");

    /* bad JSON, each with the byte offset in the file (header starts at 8) */
    bad_header("{\"a\" {}}", 0, "header JSON at byte offset 13: expected ':'");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4,
               "expected a string");
    bad_header("{\"a", 0, "unterminated string");
    bad_header("[]", 0, "byte offset 8: expected '{'");
    bad_header("{}x", 0, "byte offset 10: unexpected data after the header object");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4,
               "integer with a leading zero");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
               "byte offset 37: expected a non-negative integer");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
               "fraction or exponent");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
               "unexpected or repeated key \"x\" in tensor 'a'");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'a' lacks \"data_offsets\"");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
               "tensor 'a' appears twice");
    bad_header("{\"a\\q\":1}", 0, "bad escape in string");
    bad_header("{\"a\\ud800\":1}", 0, "high surrogate without its low half");
    bad_header("{\"a\tb\":1}", 0, "control character in string");
    bad_header("{\"__metadata__\":{\"k\":1}}", 0, "expected a string");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}}",
               4, "integer too large");

    /* semantic checks */
    bad_header("{\"h\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
               "bad.safetensors: tensor 'h' has dtype F64; convgen reads F32, F16 and BF16");
    bad_header("{\"h\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
               "bad.safetensors: tensor 'h' has dtype I8; convgen reads F32, F16 and BF16");
    bad_header("{\"h\":{\"dtype\":\"f16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               "tensor 'h' has dtype f16;");
    /* an F16 tensor whose offsets hold F32-sized data, and the reverse */
    bad_header("{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
               "bad.safetensors: tensor 'h': data_offsets [0,8] hold 8 bytes, its shape needs 4 "
               "(2 x 2 elements of F16)");
    bad_header("{\"h\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,4]}}", 4,
               "its shape needs 6 (2 x 3 elements of BF16)");
    bad_header("{\"h\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               "its shape needs 8 (4 x 2 elements of F32)");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
               "tensors 'a' [0,8] and 'b' [4,12] overlap");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, "overlap");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 8,
               "tensor 'a': data_offsets [4,12] outside the data section of 8 bytes");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,4]}}", 8,
               "outside the data section");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24,
               "tensor 'a': data_offsets [0,20] hold 20 bytes, its shape needs 24");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               "more than 4 dimensions");
    bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1048576,1048576,1048576,16],"
               "\"data_offsets\":[0,4]}}", 4, "shape too large");
}

/* Only regular files of a bounded size are read: a FIFO must not block, a
 * directory or /dev/zero must be refused with one line naming the file, and a
 * spec's weights file may not be larger than its tensors plus header slack. */
static void test_bounded(void)
{
    cg_weights w;
    cg_err e;
    const char *fifo = tmp("fifo.safetensors");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(cg_weights_load(fifo, &w, &e) != 0, "a FIFO was read");
    CHECK_CONTAINS(e.msg, "fifo.safetensors: is a FIFO, not a regular file");
    CHECK(cg_weights_load(dir, &w, &e) != 0, "a directory was read");
    CHECK_CONTAINS(e.msg, ": is a directory, not a regular file");
    CHECK(cg_weights_load("/dev/zero", &w, &e) != 0, "/dev/zero was read");
    CHECK_CONTAINS(e.msg, "/dev/zero: is a device, not a regular file");
    CHECK(strchr(e.msg, '\n') == NULL, "one line");

    /* the spec's own weights, then the same file padded past what the spec allows */
    cg_spec s;
    tiny_spec(&s);
    cg_weights r, v;
    CHECK(cg_weights_for_spec(&s, &r, &e) == 0, "random: %s", e.msg);
    snprintf(s.weights, sizeof s.weights, "%s", tmp("tiny.safetensors"));
    CHECK(cg_weights_save(s.weights, &r, &e) == 0, "save: %s", e.msg);
    CHECK(cg_weights_for_spec(&s, &v, &e) == 0, "the spec's own file: %s", e.msg);
    cg_weights_free(&v);
    FILE *f = fopen(s.weights, "ab");
    for (size_t k = 0; f && k < CG_WEIGHTS_SLACK + 4096; k++) fputc(0, f);
    CHECK(f && fclose(f) == 0, "pad");
    CHECK(cg_weights_for_spec(&s, &v, &e) != 0, "a file larger than the spec needs was read");
    CHECK_CONTAINS(e.msg, "tiny.safetensors: ");
    CHECK_CONTAINS(e.msg, "bytes, more than the");
    snprintf(s.weights, sizeof s.weights, "%s", fifo);
    CHECK(cg_weights_for_spec(&s, &v, &e) != 0, "a FIFO as weights");
    CHECK_CONTAINS(e.msg, "is a FIFO");
    cg_weights_free(&r);
}

/* Bits of a float, and a float from bits. */
static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element conversions, bit for bit: half and bfloat16 to float exactly
 * (subnormals, signed zero, inf, NaN payloads), float to half and bfloat16
 * rounded to nearest, ties to even, at every boundary that matters. */
static void test_conversions(void)
{
    /* cg_weights_narrowed: an array as the runtime uploads 16-bit weights, each element
     * rounded to nearest even: normal, tie, subnormal, overflow, inf, NaN, signed zero */
    {
        static const uint32_t in[] = {0x3f800000, 0x3f801000, 0x33800000, 0x477ff000, 0xff800000,
                                      0x7fc00000, 0x80000000, 0x3f808000, 0x00018000, 0x7f7fffff};
        static const uint16_t want16[] = {0x3c00, 0x3c00, 0x0001, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x3c04, 0x0000, 0x7c00};
        static const uint16_t wantb[] = {0x3f80, 0x3f80, 0x3380, 0x4780, 0xff80, 0x7fc0, 0x8000, 0x3f80, 0x0002, 0x7f80};
        float f[10];
        for (int k = 0; k < 10; k++) f[k] = bitsf(in[k]);
        uint16_t *h = cg_weights_narrowed(f, 10, CG_W_F16), *b = cg_weights_narrowed(f, 10, CG_W_BF16);
        CHECK(h && b && cg_weights_narrowed(f, 10, CG_W_F32) == NULL, "narrowed arrays (none for F32)");
        for (int k = 0; h && b && k < 10; k++)
            CHECK(h[k] == want16[k] && b[k] == wantb[k], "narrowed %08x: f16 %04x (want %04x), bf16 %04x (want %04x)",
                  in[k], h[k], want16[k], b[k], wantb[k]);
        free(h), free(b);
    }
    static const struct { uint16_t h; uint32_t f; } up[] = {
        {0x0000, 0x00000000}, {0x8000, 0x80000000}, {0x0001, 0x33800000}, /* 2^-24 */
        {0x8001, 0xb3800000}, {0x0002, 0x34000000}, {0x0003, 0x34400000},
        {0x03ff, 0x387fc000}, /* largest subnormal */ {0x0200, 0x38000000},
        {0x0400, 0x38800000}, /* 2^-14 */ {0x3c00, 0x3f800000}, {0xc000, 0xc0000000},
        {0x3555, 0x3eaaa000}, {0x7bff, 0x477fe000}, /* 65504 */ {0x7c00, 0x7f800000},
        {0xfc00, 0xff800000}, {0x7e00, 0x7fc00000}, {0x7d01, 0x7fa02000}, /* sNaN payload */
        {0xfe01, 0xffc02000}};
    for (size_t k = 0; k < sizeof up / sizeof *up; k++) {
        uint32_t got = fbits(cg_f16_to_f32(up[k].h));
        CHECK(got == up[k].f, "f16 %04x -> f32 %08x, want %08x", up[k].h, got, up[k].f);
    }
    static const struct { uint32_t f; uint16_t h; } down[] = {
        {0x3f800000, 0x3c00}, {0x80000000, 0x8000}, {0x00000000, 0x0000},
        {0x477fe000, 0x7bff}, /* 65504 */ {0x477fefff, 0x7bff}, /* just below 65520 */
        {0x477ff000, 0x7c00}, /* 65520: the tie goes to the even neighbour, inf */
        {0x49742400, 0x7c00}, /* 1e6 */ {0xc9742400, 0xfc00}, {0x7f7fffff, 0x7c00},
        {0x7f800000, 0x7c00}, {0xff800000, 0xfc00}, {0x7fc00000, 0x7e00},
        {0x7f800001, 0x7e00}, /* signalling NaN stays a NaN */ {0xffc02000, 0xfe01},
        {0x3f801000, 0x3c00}, /* 1 + 2^-11: tie, to even */ {0x3f803000, 0x3c02},
        {0x3f801001, 0x3c01}, /* just above the tie */ {0x3f800fff, 0x3c00},
        {0x38800000, 0x0400}, /* 2^-14 */ {0x387fc000, 0x03ff}, /* largest subnormal */
        {0x387fe000, 0x0400}, /* its tie with 2^-14 goes to the even one */
        {0x387fdfff, 0x03ff}, {0x33800000, 0x0001}, /* 2^-24 */
        {0x33000000, 0x0000}, /* 2^-25: tie with 0, to even */ {0x33000001, 0x0001},
        {0xb3000000, 0x8000}, {0x33c00000, 0x0002}, /* 1.5 x 2^-24: tie, to 2 */
        {0x34200000, 0x0002}, /* 2.5 x 2^-24: tie, to 2 */ {0x34300000, 0x0003},
        {0x32ffffff, 0x0000}, {0x00000001, 0x0000}, /* float subnormal */ {0x80000001, 0x8000},
        {0x3eaaaaab, 0x3555}, /* 1/3 */ {0x38000000, 0x0200}};
    for (size_t k = 0; k < sizeof down / sizeof *down; k++) {
        uint16_t got = cg_f32_to_f16(bitsf(down[k].f));
        CHECK(got == down[k].h, "f32 %08x -> f16 %04x, want %04x", down[k].f, got, down[k].h);
    }
    /* every half and bfloat16 survives the trip through float unchanged */
    int same16 = 1, sameb = 1;
    for (uint32_t h = 0; h < 65536; h++) {
        int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        uint16_t back = cg_f32_to_f16(cg_f16_to_f32((uint16_t)h));
        if (nan ? !((back & 0x7c00) == 0x7c00 && (back & 0x3ff) && (back & 0x8000) == (h & 0x8000))
                : back != h) {
            if (same16) printf("FAIL f16 %04x came back as %04x\n", h, back);
            same16 = 0;
        }
        int bnan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
        uint16_t bback = cg_f32_to_bf16(cg_bf16_to_f32((uint16_t)h));
        float bf = cg_bf16_to_f32((uint16_t)h);
        if ((bnan ? !(bf != bf && (bback & 0x7f80) == 0x7f80 && (bback & 0x7f)) : bback != h) ||
            fbits(bf) != h << 16) {
            if (sameb) printf("FAIL bf16 %04x came back as %04x\n", h, bback);
            sameb = 0;
        }
    }
    CHECK(same16, "every half survives half -> float -> half");
    CHECK(sameb, "every bfloat16 survives bfloat16 -> float -> bfloat16");
    static const struct { uint32_t f; uint16_t b; } bdown[] = {
        {0x3f800000, 0x3f80}, {0x3f808000, 0x3f80}, /* tie, to even */ {0x3f818000, 0x3f82},
        {0x3f808001, 0x3f81}, {0x3f807fff, 0x3f80}, {0x7f7fffff, 0x7f80}, /* FLT_MAX -> inf */
        {0xff7fffff, 0xff80}, {0x7f800000, 0x7f80}, {0x7f800001, 0x7fc0}, /* sNaN stays NaN */
        {0xffc00000, 0xffc0}, {0x00008000, 0x0000}, {0x00018000, 0x0002}, {0x80000000, 0x8000}};
    for (size_t k = 0; k < sizeof bdown / sizeof *bdown; k++) {
        uint16_t got = cg_f32_to_bf16(bitsf(bdown[k].f));
        CHECK(got == bdown[k].b, "f32 %08x -> bf16 %04x, want %04x", bdown[k].f, got, bdown[k].b);
    }
}

/* Hand-made F16 and BF16 files, loaded to exact float bits; then a file
 * written as F16 and BF16 reads back as the rounded values, with the dtype
 * named in its header and two bytes an element. */
static void test_half_files(void)
{
    const char *hdr = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[12,18]},"
                      "\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}";
    static const unsigned char data[24] = {
        0x00, 0x3c, 0x01, 0x00, 0x00, 0xfc, 0x01, 0x7d, 0xff, 0x7b, 0x00, 0x80, /* h */
        0x80, 0x3f, 0x01, 0x00, 0xc0, 0xff,                                     /* b */
        0xaa, 0xbb,                                                             /* gap */
        0x00, 0x00, 0x20, 0xc1};                                                /* f: -10 */
    const char *path = tmp("half.safetensors");
    FILE *f = fopen(path, "wb");
    unsigned char len8[8] = {0};
    size_t hl = strlen(hdr);
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)(hl >> (8 * k));
    int ok = f && fwrite(len8, 1, 8, f) == 8 && fwrite(hdr, 1, hl, f) == hl &&
             fwrite(data, 1, sizeof data, f) == sizeof data;
    CHECK(f && fclose(f) == 0 && ok, "write %s", path);
    cg_weights w;
    cg_err e;
    CHECK(cg_weights_load(path, &w, &e) == 0, "F16/BF16 file: %s", e.msg);
    if (w.n != 3) return;
    const cg_tensor *h = cg_weights_find(&w, "h"), *b = cg_weights_find(&w, "b"),
                    *g = cg_weights_find(&w, "f");
    CHECK(h && h->dtype == CG_W_F16 && h->count == 6 && h->ndim == 2 && h->shape[1] == 3,
          "h: F16 2x3");
    static const uint32_t hwant[6] = {0x3f800000, 0x33800000, 0xff800000,
                                      0x7fa02000, 0x477fe000, 0x80000000};
    for (int k = 0; h && k < 6; k++)
        CHECK(fbits(h->data[k]) == hwant[k], "h[%d] = %08x, want %08x", k, fbits(h->data[k]),
              hwant[k]);
    CHECK(b && b->dtype == CG_W_BF16 && b->count == 3, "b: BF16 3");
    static const uint32_t bwant[3] = {0x3f800000, 0x00010000, 0xffc00000};
    for (int k = 0; b && k < 3; k++)
        CHECK(fbits(b->data[k]) == bwant[k], "b[%d] = %08x, want %08x", k, fbits(b->data[k]),
              bwant[k]);
    CHECK(g && g->dtype == CG_W_F32 && g->data[0] == -10.0f, "f: F32 -10");
    cg_weights_free(&w);

    /* writing: values that round, one that overflows, one subnormal */
    float vals[5] = {1.0f, bitsf(0x3f801001), 70000.0f, bitsf(0x33c00000), -0.1f};
    cg_tensor t = {.name = "x", .ndim = 1, .shape = {5}, .count = 5, .data = vals};
    cg_weights src = {.n = 1, .t = &t};
    const char *p16 = tmp("x16.safetensors"), *pb = tmp("xb.safetensors");
    CHECK(cg_weights_save_as(p16, &src, CG_W_F16, &e) == 0, "save F16: %s", e.msg);
    CHECK(cg_weights_save_as(pb, &src, CG_W_BF16, &e) == 0, "save BF16: %s", e.msg);
    cg_buf raw, enc;
    cg_buf_init(&enc);
    CHECK(cg_weights_encode("mem", &src, CG_W_F16, &enc, &e) == 0, "encode: %s", e.msg);
    CHECK(cg_read_file(p16, &raw, &e) == 0, "read back");
    CHECK(enc.len == raw.len && memcmp(enc.data, raw.data, raw.len) == 0,
          "cg_weights_encode gives the file's bytes");
    cg_buf_free(&enc);
    CHECK_CONTAINS(raw.data + 8, "\"x\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]}");
    unsigned long long hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | (unsigned char)raw.data[k];
    CHECK(raw.len == 8 + hlen + 10, "F16 file: %zu bytes, header %llu + 10 of data", raw.len,
          hlen);
    const unsigned char *d = (const unsigned char *)raw.data + 8 + hlen;
    static const uint16_t want16[5] = {0x3c00, 0x3c01, 0x7c00, 0x0002, 0xae66};
    for (int k = 0; k < 5 && raw.len == 8 + hlen + 10; k++)
        CHECK((d[2 * k] | d[2 * k + 1] << 8) == want16[k], "F16 element %d: %04x, want %04x", k,
              d[2 * k] | d[2 * k + 1] << 8, want16[k]);
    cg_buf_free(&raw);
    CHECK(cg_weights_load(p16, &w, &e) == 0, "load F16: %s", e.msg);
    for (int k = 0; k < 5 && w.n == 1; k++)
        CHECK(fbits(w.t[0].data[k]) == fbits(cg_f16_to_f32(want16[k])), "F16 value %d", k);
    cg_weights_free(&w);
    CHECK(cg_weights_load(pb, &w, &e) == 0, "load BF16: %s", e.msg);
    static const uint32_t wantb[5] = {0x3f800000, 0x3f800000, 0x47890000, 0x33c00000, 0xbdcd0000};
    for (int k = 0; k < 5 && w.n == 1; k++)
        CHECK(fbits(w.t[0].data[k]) == wantb[k], "BF16 value %d: %08x, want %08x", k,
              fbits(w.t[0].data[k]), wantb[k]);
    CHECK(w.n == 1 && w.t[0].dtype == CG_W_BF16, "BF16 dtype kept");
    cg_weights_free(&w);
    CHECK(cg_weights_save_as(p16, &src, (cg_wdtype)7, &e) != 0, "unknown dtype written");
    CHECK_CONTAINS(e.msg, "x16.safetensors: unknown dtype 7");
}

/* A spec's weights stored as F16: accepted, shapes checked as for F32. */
static void test_half_spec(void)
{
    cg_spec s;
    tiny_spec(&s);
    cg_weights r, v;
    cg_err e;
    CHECK(cg_weights_for_spec(&s, &r, &e) == 0, "random: %s", e.msg);
    snprintf(s.weights, sizeof s.weights, "%s", tmp("tiny16.safetensors"));
    CHECK(cg_weights_save_as(s.weights, &r, CG_W_F16, &e) == 0, "save: %s", e.msg);
    CHECK(cg_weights_for_spec(&s, &v, &e) == 0, "the spec's own F16 file: %s", e.msg);
    int same = v.n == r.n;
    for (int k = 0; same && k < r.n; k++) {
        const cg_tensor *a = &r.t[k], *b = cg_weights_find(&v, a->name);
        same = b && b->count == a->count && b->dtype == CG_W_F16;
        for (long long i = 0; same && i < a->count; i++)
            same = fbits(b->data[i]) == fbits(cg_f16_to_f32(cg_f32_to_f16(a->data[i])));
    }
    CHECK(same, "F16 weights are the rounded random weights");
    cg_weights_free(&v);
    /* the same bytes from memory (a bundle's section), the spec's path ignored */
    cg_buf raw;
    CHECK(cg_read_file(s.weights, &raw, &e) == 0, "read back");
    char keep[sizeof s.weights];
    snprintf(keep, sizeof keep, "%s", s.weights);
    snprintf(s.weights, sizeof s.weights, "/nonexistent.safetensors");
    CHECK(cg_weights_for_spec_bytes(&s, "net.cgb:weights", raw.data, raw.len, &v, &e) == 0,
          "from memory: %s", e.msg);
    CHECK(v.n == r.n, "from memory: %d tensors", v.n);
    cg_weights_free(&v);
    CHECK(cg_weights_for_spec_bytes(&s, "net.cgb:weights", raw.data, raw.len - 1, &v, &e) != 0,
          "short bytes accepted");
    CHECK_CONTAINS(e.msg, "net.cgb:weights: ");
    cg_buf_free(&raw);
    snprintf(s.weights, sizeof s.weights, "%s", keep);
    r.t[0].shape[0] = 2; /* conv1.weight 3x1x3x3 becomes 2x1x3x3 */
    r.t[0].count = 18;
    CHECK(cg_weights_save_as(s.weights, &r, CG_W_BF16, &e) == 0, "save: %s", e.msg);
    CHECK(cg_weights_for_spec(&s, &v, &e) != 0, "misshaped BF16 tensor accepted");
    CHECK_CONTAINS(e.msg, "tiny16.safetensors: tensor 'conv1.weight' has shape [2,1,3,3], the "
                          "spec needs [3,1,3,3]");
    CHECK(cg_read_file(s.weights, &raw, &e) == 0, "read back");
    CHECK(cg_weights_for_spec_bytes(&s, "net.cgb:weights", raw.data, raw.len, &v, &e) != 0,
          "misshaped BF16 tensor accepted from memory");
    CHECK_CONTAINS(e.msg, "net.cgb:weights: tensor 'conv1.weight' has shape [2,1,3,3]");
    cg_buf_free(&raw);
    cg_weights_free(&r);
}

/* cg_weights_transposed: a 2 x C x K x K tensor becomes (C*K*K) x 2. */
static void test_transposed(void)
{
    float w[2 * 3 * 2 * 2];
    for (int i = 0; i < 24; i++) w[i] = (float)i;
    float *t = cg_weights_transposed(w, 2, 24);
    CHECK(t != NULL, "transposed: allocated");
    if (!t) return;
    int ok = 1;
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < 12; r++) ok &= t[r * 2 + m] == w[m * 12 + r];
    CHECK(ok, "transposed: t[r][m] == w[m][r] for every m, r");
    CHECK(t[1] == 12.0f && t[2] == 1.0f, "transposed: first entries 0, 12, 1, ...");
    free(t);
}

/* cg_weights_taps: a 2 x 3 x 4 tensor (maps x channels x taps) becomes 4 x 3 x 2
 * (taps x channels x maps); one tap is cg_weights_transposed; counts that do not
 * divide into rows x taps are refused. */
static void test_taps(void)
{
    float w[2 * 3 * 4];
    for (int i = 0; i < 24; i++) w[i] = (float)i;
    float *t = cg_weights_taps(w, 2, 24, 4);
    CHECK(t != NULL, "taps: allocated");
    if (!t) return;
    int ok = 1;
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 4; k++) ok &= t[(k * 3 + c) * 2 + m] == w[(m * 3 + c) * 4 + k];
    CHECK(ok, "taps: t[k][c][m] == w[m][c][k] for every m, c, k");
    CHECK(t[0] == 0.0f && t[1] == 12.0f && t[2] == 4.0f && t[6] == 1.0f, "taps: entries 0, 12, 4, .., 1 at [1][0][0]");
    free(t);
    float *one = cg_weights_taps(w, 2, 24, 1), *tr = cg_weights_transposed(w, 2, 24);
    CHECK(one && tr && !memcmp(one, tr, sizeof w), "taps: one tap is the transposition");
    free(one), free(tr);
    CHECK(cg_weights_taps(w, 2, 24, 5) == NULL, "taps: 24 weights are no 2 x C x 5");
    CHECK(cg_weights_taps(w, 0, 24, 4) == NULL, "taps: no rows refused");
}

int main(void)
{
    strcpy(dir, "/tmp/cg_test_weights_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_random();
    test_malformed();
    test_bounded();
    test_transposed();
    test_taps();
    test_conversions();
    test_half_files();
    test_half_spec();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", dir);
    return cg_test_done("weights");
}
