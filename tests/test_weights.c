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
    bad_header("{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               "bad.safetensors: tensor 'h' has dtype F16; convgen reads F32 only");
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
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", dir);
    return cg_test_done("weights");
}
