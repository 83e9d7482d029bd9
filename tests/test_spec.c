/* test_spec.c — the spec reader: every shipped spec with its derived shapes,
 * every malformed spec in tests/specs_bad (each names its expected error on its
 * first line), and in-memory cases for limits, overflow and odd bytes. */
#include "check.h"
#include "op.h"
#include "spec.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cg_spec spec; /* large: keep it off the stack */
static cg_err err;

/* Layer by name, or NULL. */
static const cg_layer *layer(const cg_spec *s, const char *name)
{
    for (int i = 0; i < s->nlayers; i++)
        if (!strcmp(s->layers[i].name, name)) return &s->layers[i];
    return NULL;
}

/* Value of a param, or -1. */
static long long param(const cg_layer *l, const char *key)
{
    for (int i = 0; l && i < l->nparams; i++)
        if (!strcmp(l->params[i].key, key)) return l->params[i].value;
    return -1;
}

#define CHECK_SHAPE(l, c, h, w, oc, oh, ow)                                                  \
    CHECK((l) && (l)->C == (c) && (l)->H == (h) && (l)->W == (w) && (l)->OC == (oc) &&        \
              (l)->OH == (oh) && (l)->OW == (ow),                                             \
          "%s: shape %dx%dx%d -> %dx%dx%d", (l) ? (l)->name : "?", (l) ? (l)->C : 0,         \
          (l) ? (l)->H : 0, (l) ? (l)->W : 0, (l) ? (l)->OC : 0, (l) ? (l)->OH : 0,           \
          (l) ? (l)->OW : 0)

static void test_2017(void)
{
    int rc = cg_spec_load("specs/ece408-2017.yaml", &spec, &err);
    CHECK(rc == 0, "ece408-2017: %s", err.msg);
    if (rc) return;
    CHECK(!strcmp(spec.name, "ece408-2017") && !strcmp(spec.path, "specs/ece408-2017.yaml"),
          "name %s path %s", spec.name, spec.path);
    CHECK(spec.C == 1 && spec.H == 28 && spec.W == 28 && spec.resize == 0, "input");
    CHECK(spec.scale > 0.0039215 && spec.scale < 0.0039216 && spec.offset == 0.0, "scale");
    CHECK(!strcmp(spec.dataset, "fashion-mnist") &&
              !strcmp(spec.weights, "specs/../models/ece408-2017.safetensors") && spec.seed == 1,
          "dataset/weights/seed: %s", spec.weights);
    CHECK(spec.nlayers == 4, "nlayers %d", spec.nlayers);
    const cg_layer *c1 = layer(&spec, "conv1"), *f1 = layer(&spec, "fc1"),
                   *f2 = layer(&spec, "fc2"), *p = layer(&spec, "prob");
    CHECK_SHAPE(c1, 1, 28, 28, 50, 12, 12);
    CHECK(c1 && c1->op == CG_OP_CONV && c1->M == 50 && c1->K == 5 && c1->pool == 2 &&
              c1->act == CG_ACT_TANH && c1->bias == 0 && !strcmp(c1->strategy, "direct"),
          "conv1 fields");
    CHECK(c1 && cg_layer_out_elems(c1) == 7200, "flatten 7200");
    CHECK(c1 && c1->nparams == 3 && param(c1, "block") == 64 && param(c1, "maps_unroll") == 5 && param(c1, "cols") == 3,
          "conv1 params");
    CHECK_SHAPE(f1, 50, 12, 12, 500, 1, 1);
    CHECK(f1 && f1->op == CG_OP_FC && f1->out == 500 && f1->bias == 1 && f1->act == CG_ACT_TANH &&
              cg_layer_in_elems(f1) == 7200,
          "fc1 fields");
    CHECK(f2 && f2->out == 10 && f2->bias == 1 && f2->act == CG_ACT_NONE, "fc2 fields");
    CHECK_SHAPE(p, 10, 1, 1, 10, 1, 1);
    CHECK(p && p->op == CG_OP_SOFTMAX && spec.layers[3].op == CG_OP_SOFTMAX, "softmax last");
}

static void test_2018sp(void)
{
    int rc = cg_spec_load("specs/ece408-2018sp.yaml", &spec, &err);
    CHECK(rc == 0, "ece408-2018sp: %s", err.msg);
    if (rc) return;
    CHECK(spec.resize == 64 && spec.H == 64 && spec.W == 64 && spec.nlayers == 5, "input");
    const cg_layer *c1 = layer(&spec, "conv1"), *c2 = layer(&spec, "conv2"),
                   *f1 = layer(&spec, "fc1");
    CHECK_SHAPE(c1, 1, 64, 64, 6, 30, 30);
    CHECK(c1 && param(c1, "maps_unroll") == 3, "conv1 params");
    CHECK_SHAPE(c2, 6, 30, 30, 16, 26, 26);
    CHECK(c2 && c2->pool == 0 && c2->act == CG_ACT_NONE && !strcmp(c2->strategy, "slide") &&
              param(c2, "tm") == 8 && param(c2, "cols") == 9 && param(c2, "rows") == 16 &&
              param(c2, "pf") == 3,
          "conv2 no pool/act, slide");
    CHECK(c2 && cg_layer_out_elems(c2) == 10816, "flatten 10816");
    CHECK(f1 && cg_layer_in_elems(f1) == 10816 && f1->out == 140, "fc1 in/out");
}

static void test_2018fa(void)
{
    int rc = cg_spec_load("specs/ece408-2018fa.yaml", &spec, &err);
    CHECK(rc == 0, "ece408-2018fa: %s", err.msg);
    if (rc) return;
    CHECK(spec.resize == 72 && spec.H == 72 && spec.W == 72 && spec.nlayers == 5, "input");
    const cg_layer *c1 = layer(&spec, "conv1"), *c2 = layer(&spec, "conv2"),
                   *f1 = layer(&spec, "fc1"), *f2 = layer(&spec, "fc2");
    CHECK_SHAPE(c1, 1, 72, 72, 12, 33, 33);
    CHECK_SHAPE(c2, 12, 33, 33, 24, 27, 27);
    CHECK(c2 && c2->K == 7 && cg_layer_out_elems(c2) == 17496, "flatten 17496");
    CHECK(f1 && cg_layer_in_elems(f1) == 17496 && f1->out == 160 && f1->act == CG_ACT_TANH,
          "fc1");
    CHECK(f2 && f2->out == 10 && cg_layer_in_elems(f2) == 160, "fc2");
}

static void test_example(void)
{
    int rc = cg_spec_load("specs/example-conv.yaml", &spec, &err);
    CHECK(rc == 0, "example-conv: %s", err.msg);
    if (rc) return;
    const cg_layer *c1 = layer(&spec, "conv1");
    CHECK(spec.nlayers == 1, "one layer");
    CHECK_SHAPE(c1, 1, 28, 28, 8, 12, 12);
    CHECK(c1 && c1->bias == 1 && c1->act == CG_ACT_TANH && c1->pool == 2 &&
              param(c1, "block") == 64 && param(c1, "maps_unroll") == 4,
          "conv1 fields");
    /* positions are 1-based and point at what they name */
    CHECK(c1 && c1->pos.line == 17 && c1->pos.col == 5, "layer pos %d:%d", c1 ? c1->pos.line : 0,
          c1 ? c1->pos.col : 0);
    CHECK(c1 && c1->strategy_pos.line == 27 && c1->strategy_pos.col == 15, "strategy pos");
    CHECK(c1 && c1->params_pos.line == 29 && c1->params_pos.col == 7, "params pos");
    CHECK(c1 && c1->params[0].key_pos.line == 29 && c1->params[0].key_pos.col == 7 &&
              c1->params[0].pos.line == 29 && c1->params[0].pos.col == 14,
          "param pos");
}

/* One malformed spec: its first line "# expect: LINE:COL: text" says where the
 * error must point and what it must say. */
static void test_bad_file(const char *name)
{
    char path[512], line[512], want[600];
    snprintf(path, sizeof path, "tests/specs_bad/%s", name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    int l = 0, c = 0, n = 0;
    CHECK(got && sscanf(line, "# expect: %d:%d: %n", &l, &c, &n) == 2 && n > 0,
          "%s: first line must be '# expect: LINE:COL: text'", path);
    if (!n) return;
    line[strcspn(line, "\r\n")] = 0;
    const char *text = line + n;
    int rc = cg_spec_load(path, &spec, &err);
    CHECK(rc != 0, "%s: accepted", path);
    snprintf(want, sizeof want, "%s:%d:%d: ", path, l, c);
    CHECK(!strncmp(err.msg, want, strlen(want)), "%s: error \"%s\", expected it to start \"%s\"",
          name, err.msg, want);
    CHECK(strstr(err.msg, text) != NULL, "%s: error \"%s\" lacks \"%s\"", name, err.msg, text);
    CHECK(!strchr(err.msg, '\n'), "%s: error has a newline", name);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_bad_dir(void)
{
    DIR *d = opendir("tests/specs_bad");
    CHECK(d != NULL, "cannot open tests/specs_bad");
    if (!d) return;
    char *names[512];
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) && n < 512) {
        size_t len = strlen(ent->d_name);
        if (len > 5 && !strcmp(ent->d_name + len - 5, ".yaml")) names[n++] = strdup(ent->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    CHECK(n >= 35, "only %d malformed specs", n);
    for (int i = 0; i < n; i++) {
        test_bad_file(names[i]);
        free(names[i]);
    }
}

static const char *good =
    "network: mem\n"
    "input: {channels: 1, height: 28, width: 28}\n"
    "dataset: {name: fashion-mnist}\n"
    "layers:\n"
    "  - {name: conv1, op: conv, M: 4, K: 5, strategy: direct}\n";

/* Parses text (with an explicit length) and checks the error position and text. */
static void expect_mem(const char *text, size_t len, const char *where, const char *msg)
{
    int rc = cg_spec_parse("mem.yaml", text, len, &spec, &err);
    CHECK(rc != 0, "accepted: %s", msg);
    CHECK(!strncmp(err.msg, where, strlen(where)), "\"%s\" should start \"%s\"", err.msg, where);
    CHECK_CONTAINS(err.msg, msg);
}

/* A spec built from good with one line of it replaced. */
static void expect_edit(const char *from, const char *to, const char *where, const char *msg)
{
    char buf[1024];
    const char *at = strstr(good, from);
    CHECK(at != NULL, "bad edit %s", from);
    if (!at) return;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    expect_mem(buf, strlen(buf), where, msg);
}

static void test_memory(void)
{
    int rc = cg_spec_parse("mem.yaml", good, strlen(good), &spec, &err);
    CHECK(rc == 0, "good: %s", err.msg);
    CHECK(rc == 0 && spec.layers[0].OH == 24 && spec.seed == 1 && spec.scale == 1.0,
          "defaults");
    /* overflow: numbers far beyond long long, and sizes whose product would overflow */
    expect_edit("M: 4", "M: 99999999999999999999", "mem.yaml:5:32: ", "out of range");
    expect_edit("M: 4", "M: -99999999999999999999", "mem.yaml:5:32: ", "out of range");
    expect_edit("M: 4", "M: 9223372036854775808", "mem.yaml:5:32: ", "out of range");
    expect_edit("network: mem\n", "network: mem\nseed: 99999999999999999999\n", "mem.yaml:2:7: ",
                "'seed' is out of range");
    expect_edit("network: mem\n", "network: mem\nseed: 18446744073709551616\n", "mem.yaml:2:7: ",
                "out of range");
    expect_mem("network: mem\ninput: {channels: 65536, height: 65536, width: 65536}\n",
               strlen("network: mem\ninput: {channels: 65536, height: 65536, width: 65536}\n"),
               "mem.yaml:2:8: ", "more than 268435456 elements");
    /* 4096x4096 images: 17 maps of that size, or an fc of 17 outputs, exceed 2^28 */
    const char *side = "network: mem\n"
                       "input: {channels: 1, height: 4096, width: 4096}\n"
                       "dataset: {name: fashion-mnist, resize: 4096}\n"
                       "layers:\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s  - {name: c, op: conv, M: 16, K: 1, strategy: direct}\n", side);
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) == 0 &&
              cg_layer_out_elems(&spec.layers[0]) == CG_ELEMS_MAX,
          "exactly CG_ELEMS_MAX elements: %s", err.msg);
    snprintf(buf, sizeof buf, "%s  - {name: c, op: conv, M: 17, K: 1, strategy: direct}\n", side);
    expect_mem(buf, strlen(buf), "mem.yaml:5:28: ", "output 17x4096x4096 has more than 268435456");
    snprintf(buf, sizeof buf, "%s  - {name: f, op: fc, out: 17}\n", side);
    expect_mem(buf, strlen(buf), "mem.yaml:5:28: ", "weights 17x16777216");
    /* conv weights M*C*K*K: 65536 maps of 64x64 feed a conv with K=64 */
    const char *wide = "network: mem\n"
                       "input: {channels: 1, height: 127, width: 127}\n"
                       "dataset: {name: fashion-mnist, resize: 127}\n"
                       "layers:\n"
                       "  - {name: c1, op: conv, M: 65536, K: 64, strategy: direct}\n";
    snprintf(buf, sizeof buf, "%s  - {name: c2, op: conv, M: 1, K: 64, strategy: direct}\n", wide);
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) == 0 &&
              spec.layers[1].C == 65536 && spec.layers[1].OH == 1,
          "weights of exactly CG_ELEMS_MAX: %s", err.msg);
    snprintf(buf, sizeof buf, "%s  - {name: c2, op: conv, M: 2, K: 64, strategy: direct}\n", wide);
    expect_mem(buf, strlen(buf), "mem.yaml:6:29: ", "weights 2x65536x64x64 have more than");
    expect_edit("height: 28", "height: 1e400", "mem.yaml:2:30: ", "expected an integer");
    expect_edit("network: mem\n", "network: mem\ndescription: [a]\n", "mem.yaml:2:14: ",
                "expected a string for 'description', got a sequence");
    /* seed: the largest value is accepted */
    snprintf(buf, sizeof buf, "seed: 18446744073709551615\n%s", good);
    rc = cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err);
    CHECK(rc == 0 && spec.seed == 18446744073709551615ULL, "max seed: %s", err.msg);
    /* bytes no text file should have */
    expect_mem("network: mem\0\n", 14, "mem.yaml:1:13: ", "NUL byte");
    expect_mem("network: \xc3\x28\n", 12, "mem.yaml:1:10: ", "invalid UTF-8");
    expect_mem("network: \xed\xa0\x80\n", 13, "mem.yaml:1:10: ", "invalid UTF-8"); /* surrogate */
    expect_mem("network: \xc0\xaf\n", 12, "mem.yaml:1:10: ", "invalid UTF-8");     /* overlong */
    expect_mem("# caf\xc3\xa9\nnet: \x01\n", 15, "mem.yaml:2:6: ", "control character 0x01");
    expect_mem("network: \"a\\0b\"\n", 16, "mem.yaml:1:10: ", "NUL character");
    expect_mem("", 0, "mem.yaml:1:1: ", "spec is empty");
    expect_mem("---\n", 4, "mem.yaml:", "spec is empty");
    /* depth: a flow-sequence bomb stops at the ninth level, not the millionth */
    static char deep[1 << 20];
    memset(deep, '[', sizeof deep);
    expect_mem(deep, sizeof deep, "mem.yaml:1:9: ", "nesting deeper than 8 levels");
    /* size: over 1 MiB refused before parsing */
    static char big[(1 << 20) + 1];
    memset(big, '#', sizeof big);
    expect_mem(big, sizeof big, "mem.yaml:1:1: ", "larger than the 1 MiB limit");
    /* a mapping with too many entries is refused (bounds duplicate-key checking) */
    cg_buf b;
    cg_buf_init(&b);
    for (int i = 0; i < 1100; i++) cg_buf_printf(&b, "k%d: 1\n", i);
    expect_mem(b.data, b.len, "mem.yaml:1025:1: ", "more than 1024 entries");
    cg_buf_free(&b);
    /* yes/no/on/True are not booleans, only true/false */
    const char *nots[] = {"no", "on", "True", "1", "\"false\""};
    for (int i = 0; i < 5; i++) {
        snprintf(buf, sizeof buf, "K: 5, bias: %s,", nots[i]);
        expect_edit("K: 5,", buf, "mem.yaml:5:47: ", "expected true or false for 'bias'");
    }
    /* quoted words and names are strings like any other */
    const char *quoted = "network: 'mem'\n"
                         "input: {channels: 1, height: 28, width: 28}\n"
                         "dataset: {name: \"fashion-mnist\"}\n"
                         "layers:\n"
                         "  - {name: \"c\", op: 'conv', M: 4, K: 5, pool: \"max2\", strategy: 'direct'}\n";
    CHECK(cg_spec_parse("mem.yaml", quoted, strlen(quoted), &spec, &err) == 0 &&
              !strcmp(spec.layers[0].strategy, "direct") && spec.layers[0].pool == 2 &&
              !strcmp(spec.name, "mem"),
          "quoted words: %s", err.msg);
    /* a conv without `strategy` leaves the choice to the templates (auto) */
    const char *nostrat = "network: mem\n"
                          "input: {channels: 1, height: 28, width: 28}\n"
                          "dataset: {name: fashion-mnist}\n"
                          "layers:\n"
                          "  - {name: c, op: conv, M: 4, K: 5}\n";
    CHECK(cg_spec_parse("mem.yaml", nostrat, strlen(nostrat), &spec, &err) == 0 &&
              !strcmp(spec.layers[0].strategy, "auto") && spec.layers[0].nparams == 0,
          "conv without strategy is auto: %s", err.msg);
    snprintf(buf, sizeof buf, "%s", good);
    memcpy(strstr(buf, "M: 4, K: 5"), "K: 5, M: 4", 10); /* key order does not matter */
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) == 0 && spec.layers[0].M == 4,
          "key order: %s", err.msg);
}

/* cg_spec_load's own errors: missing files and files over the size limit. */
static void test_files(void)
{
    char dir[] = "/tmp/cg_test_spec_XXXXXX", path[256];
    CHECK(cg_spec_load("tests/specs_bad/no-such-file.yaml", &spec, &err) != 0, "missing file");
    CHECK_CONTAINS(err.msg, "tests/specs_bad/no-such-file.yaml:1:1: cannot open spec");
    CHECK(cg_spec_load("tests/specs_bad", &spec, &err) != 0, "directory");
    CHECK_CONTAINS(err.msg, "tests/specs_bad:1:1: cannot read spec");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return;
    }
    snprintf(path, sizeof path, "%s/big.yaml", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    if (!f) return;
    static char chunk[4096];
    memset(chunk, ' ', sizeof chunk);
    fputs("network: big\n", f);
    for (int i = 0; i < 257; i++) fwrite(chunk, 1, sizeof chunk, f);
    CHECK(fclose(f) == 0, "close");
    CHECK(cg_spec_load(path, &spec, &err) != 0, "big file accepted");
    CHECK_CONTAINS(err.msg, ":1:1: spec is larger than the 1 MiB limit");
    /* weights are resolved against the spec's directory */
    snprintf(path, sizeof path, "%s/w.yaml", dir);
    f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    if (f) {
        fprintf(f, "weights: ../models/w.safetensors\n%s", good);
        CHECK(fclose(f) == 0, "close");
        char want[300];
        snprintf(want, sizeof want, "%s/../models/w.safetensors", dir);
        CHECK(cg_spec_load(path, &spec, &err) == 0, "weights spec: %s", err.msg);
        CHECK(!strcmp(spec.weights, want), "weights %s", spec.weights);
        CHECK(spec.weights_pos.line == 1 && spec.weights_pos.col == 10, "weights pos");
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/big.yaml", dir);
    unlink(path);
    rmdir(dir);
    char buf[512];
    snprintf(buf, sizeof buf, "weights: m.safetensors\n%s", good);
    CHECK(cg_spec_parse("x.yaml", buf, strlen(buf), &spec, &err) == 0 &&
              !strcmp(spec.weights, "m.safetensors"),
          "weights beside a spec in the current directory: %s", spec.weights);
    snprintf(buf, sizeof buf, "weights: /abs/m.safetensors\n%s", good);
    CHECK(cg_spec_parse("specs/x.yaml", buf, strlen(buf), &spec, &err) == 0 &&
              !strcmp(spec.weights, "/abs/m.safetensors"),
          "absolute weights: %s", spec.weights);
}

/* Padding, stride, the pools and any channel count (issue 12): every key's value
 * in the fields and the shapes derived from it, on in-memory specs and on the
 * shipped networks that use them. */
static void test_layers(void)
{
    static const char head[] = "network: t\ninput: {channels: 3, height: 20, width: 17}\nlayers:\n";
    char buf[1024];
    /* no dataset: any channel count; 'same' pads (K-1)/2 on every side */
    snprintf(buf, sizeof buf, "%s%s", head,
             "  - {name: a, op: conv, M: 4, K: 5, padding: same, pool: avg2}\n"
             "  - {name: b, op: conv, M: 6, K: 3, padding: [2, 0, 1, 2], stride: 3, pool: max3, pool_stride: 1}\n"
             "  - {name: c, op: conv, M: 8, K: 2, padding: 1, pool: global_avg}\n"
             "  - {name: d, op: conv, M: 2, K: 1, padding: valid, stride: 1, pool: max2}\n");
    /* d's input is 8x1x1: max2 cannot pool it, so test d separately below */
    char *d = strstr(buf, "  - {name: d");
    *d = 0;
    int rc = cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err);
    CHECK(rc == 0, "layers spec: %s", err.msg);
    if (rc) return;
    const cg_layer *a = &spec.layers[0], *b = &spec.layers[1], *c = &spec.layers[2];
    CHECK(spec.C == 3 && spec.dataset[0] == 0, "3 channels, no dataset");
    CHECK(a->pad[0] == 2 && a->pad[1] == 2 && a->pad[2] == 2 && a->pad[3] == 2 && a->stride == 1,
          "same: %d %d %d %d", a->pad[0], a->pad[1], a->pad[2], a->pad[3]);
    CHECK(a->pool == 2 && a->pool_stride == 2 && a->pool_op == CG_POOL_AVG, "avg2");
    CHECK_SHAPE(a, 3, 20, 17, 4, 10, 8);                    /* 20x17 conv, pooled floor */
    CHECK(b->pad[0] == 2 && b->pad[1] == 0 && b->pad[2] == 1 && b->pad[3] == 2 && b->stride == 3,
          "b pad/stride");
    /* (10+3-3)/3+1 = 4, (8+2-3)/3+1 = 3; max3 stride 1 -> 2x1 */
    CHECK(b->pool == 3 && b->pool_stride == 1 && b->pool_op == CG_POOL_MAX, "max3 stride 1");
    CHECK_SHAPE(b, 4, 10, 8, 6, 2, 1);
    int ch, cw, oh, ow;
    CHECK(cg_conv_dims(b, &ch, &cw, &oh, &ow) == 0 && ch == 4 && cw == 3 && oh == 2 && ow == 1,
          "conv dims %dx%d -> %dx%d", ch, cw, oh, ow);
    CHECK(c->pool_op == CG_POOL_GLOBAL_AVG && !strcmp(cg_pool_name(c), "global_avg"), "global avg");
    CHECK_SHAPE(c, 6, 2, 1, 8, 1, 1);                       /* conv 3x2, then the mean */
    char tag[96];
    cg_conv_tag(b, tag, sizeof tag);
    CHECK(!strcmp(tag, " pad=2,0,1,2 stride=3 pool=max3/1"), "tag '%s'", tag);
    cg_conv_tag(c, tag, sizeof tag);
    CHECK(!strcmp(tag, " pad=1,1,1,1 pool=global_avg"), "tag '%s'", tag);
    /* valid padding and stride 1 written out are the defaults; max2 has no tag */
    snprintf(buf, sizeof buf, "%s%s", head,
             "  - {name: d, op: conv, M: 2, K: 1, padding: valid, stride: 1, pool: max2, pool_stride: 2}\n");
    rc = cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err);
    CHECK(rc == 0, "valid: %s", err.msg);
    if (!rc) {
        cg_conv_tag(&spec.layers[0], tag, sizeof tag);
        CHECK(!spec.layers[0].pad[0] && !spec.layers[0].pad[3] && !tag[0] && spec.layers[0].pool == 2 &&
                  spec.layers[0].pool_op == CG_POOL_MAX,
              "valid, max2: tag '%s'", tag);
        CHECK_SHAPE(&spec.layers[0], 3, 20, 17, 2, 10, 8);
    }
    /* the shipped networks that use them */
    rc = cg_spec_load("bench/specs/zoo-resnet-stem.yaml", &spec, &err);
    CHECK(rc == 0, "zoo-resnet-stem: %s", err.msg);
    if (!rc) {
        CHECK_SHAPE(layer(&spec, "stem"), 3, 64, 64, 64, 15, 15);
        CHECK_SHAPE(layer(&spec, "conv2"), 64, 15, 15, 128, 8, 8);
        CHECK_SHAPE(layer(&spec, "conv3"), 128, 8, 8, 256, 1, 1);
    }
    rc = cg_spec_load("bench/specs/zoo-vgg-same.yaml", &spec, &err);
    CHECK(rc == 0, "zoo-vgg-same: %s", err.msg);
    if (!rc) {
        CHECK_SHAPE(layer(&spec, "conv1_1"), 3, 32, 32, 64, 32, 32);
        CHECK_SHAPE(layer(&spec, "conv3_2"), 256, 8, 8, 256, 4, 4);
    }
    const char *gpu[] = {"tests/gpu/layers-direct.yaml", "tests/gpu/layers-igemm.yaml", "tests/gpu/layers-winograd.yaml"};
    for (int i = 0; i < 3; i++) {
        rc = cg_spec_load(gpu[i], &spec, &err);
        CHECK(rc == 0 && spec.C == 3 && cg_layer_out_elems(&spec.layers[spec.nlayers - 1]) == 10,
              "%s: %s", gpu[i], err.msg);
    }
    /* fashion-mnist still has one channel */
    snprintf(buf, sizeof buf, "network: t\ninput: {channels: 3, height: 28, width: 28}\n"
             "dataset: {name: fashion-mnist}\nlayers:\n  - {name: p, op: softmax}\n");
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) != 0, "3 channels of fashion-mnist");
    CHECK_CONTAINS(err.msg, "mem.yaml:2:19: 'channels' in 'input' is 3, but dataset fashion-mnist has 1 channel");
}

/* groups on conv and the activations relu6 and sigmoid: read, checked, with
 * their weights' shape; groups that do not divide C and M are refused at the value. */
static void test_groups(void)
{
    static const char head[] = "network: t\ninput: {channels: 8, height: 9, width: 9}\nlayers:\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s", head,
             "  - {name: dw, op: conv, M: 8, K: 3, padding: 1, groups: 8, activation: relu6}\n"
             "  - {name: gc, op: conv, M: 4, K: 3, stride: 2, groups: 2, activation: sigmoid}\n"
             "  - {name: pw, op: conv, M: 6, K: 1}\n");
    int rc = cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err);
    CHECK(rc == 0, "groups spec: %s", err.msg);
    if (rc) return;
    const cg_layer *dw = &spec.layers[0], *gc = &spec.layers[1], *pw = &spec.layers[2];
    CHECK(dw->groups == 8 && dw->act == CG_ACT_RELU6, "depthwise: groups %d act %d", dw->groups, dw->act);
    CHECK_SHAPE(dw, 8, 9, 9, 8, 9, 9);
    CHECK(gc->groups == 2 && gc->act == CG_ACT_SIGMOID, "grouped: groups %d act %d", gc->groups, gc->act);
    CHECK_SHAPE(gc, 8, 9, 9, 4, 4, 4);
    CHECK(pw->groups == 1 && cg_layer_groups(pw) == 1, "default groups 1");
    long long rows, fan_in;
    CHECK(cg_op_weights(dw, &rows, &fan_in) && rows == 8 && fan_in == 9, "depthwise weights 8 x 9");
    CHECK(cg_op_weights(gc, &rows, &fan_in) && rows == 4 && fan_in == 36, "grouped weights 4 x 36");
    char tag[96];
    cg_conv_tag(gc, tag, sizeof tag);
    CHECK(!strcmp(tag, " stride=2 groups=2"), "tag '%s'", tag);
    cg_conv_tag(pw, tag, sizeof tag);
    CHECK(!strcmp(tag, ""), "no groups in a 1-group tag '%s'", tag);
    /* refusals, at the value */
    snprintf(buf, sizeof buf, "%s%s", head, "  - {name: a, op: conv, M: 6, K: 3, groups: 4}\n");
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) != 0, "groups 4 of 8 channels, 6 maps");
    CHECK_CONTAINS(err.msg, "mem.yaml:4:45: 'groups' in layer 'a' is 4, which must divide C = 8 (from the input) and M = 6");
    snprintf(buf, sizeof buf, "%s%s", head, "  - {name: a, op: conv, M: 6, K: 3, groups: 0}\n");
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) != 0, "groups 0");
    CHECK_CONTAINS(err.msg, "mem.yaml:4:45: 'groups' in layer 'a' is out of range: 0");
    snprintf(buf, sizeof buf, "%s%s", head, "  - {name: a, op: fc, out: 6, groups: 2}\n");
    CHECK(cg_spec_parse("mem.yaml", buf, strlen(buf), &spec, &err) != 0, "groups on fc");
    CHECK_CONTAINS(err.msg, "key 'groups' is not allowed for op fc");
}

static void test_names(void)
{
    CHECK(!strcmp(cg_act_name(CG_ACT_NONE), "none") && !strcmp(cg_act_name(CG_ACT_TANH), "tanh") &&
              !strcmp(cg_act_name(CG_ACT_RELU), "relu") && !strcmp(cg_act_name(CG_ACT_RELU6), "relu6") &&
              !strcmp(cg_act_name(CG_ACT_SIGMOID), "sigmoid"),
          "act names");
    CHECK(!strcmp(cg_op_name(CG_OP_CONV), "conv") && !strcmp(cg_op_name(CG_OP_FC), "fc") &&
              !strcmp(cg_op_name(CG_OP_SOFTMAX), "softmax"),
          "op names");
}

/* The op table (base/op.h): one descriptor per op, names kept there only. */
static void test_op_table(void)
{
    const char *names[CG_OP_COUNT + 1];
    cg_op_names(names);
    CHECK(!strcmp(names[CG_OP_CONV], "conv") && !strcmp(names[CG_OP_FC], "fc") &&
              !strcmp(names[CG_OP_SOFTMAX], "softmax") && !names[CG_OP_COUNT],
          "names in cg_op order");
    for (int op = 0; op < CG_OP_COUNT; op++) {
        const cg_op_desc *d = cg_op_of((cg_op)op);
        CHECK(d && d->name && d->keys && d->read && d->out_shape, "op %d described", op);
        CHECK(d && !strcmp(cg_op_name((cg_op)op), d->name), "cg_op_name reads the table (%d)", op);
        CHECK(d && !strcmp(d->keys[0], "name") && !strcmp(d->keys[1], "op"), "op %d takes name and op", op);
    }
    CHECK(!cg_op_of(CG_OP_COUNT) && !cg_op_of((cg_op)-1) && !strcmp(cg_op_name(CG_OP_COUNT), "?"),
          "no descriptor outside the table");
    /* the unknown-op message lists every op of the table, in order, the last after "or"
     * (tests/specs_bad/unknown_op.yaml checks its position and start only) */
    static const char bad[] = "network: t\ninput: {channels: 1, height: 8, width: 8}\n"
                              "layers:\n  - {name: p, op: pool}\n";
    cg_err er = {""};
    CHECK(cg_spec_parse("mem.yaml", bad, strlen(bad), &spec, &er) != 0, "op: pool refused");
    const char *at = strstr(er.msg, "(expected ");
    for (int op = 0; at && op < CG_OP_COUNT; op++) {
        const char *hit = strstr(at, names[op]);
        CHECK(hit != NULL, "unknown-op message names %s: %s", names[op], er.msg);
        if (hit) at = hit + strlen(names[op]);
        if (op == CG_OP_COUNT - 2) CHECK(at && !strncmp(at, " or ", 4), "'or' before the last op: %s", er.msg);
    }
    CHECK(at && !strcmp(at, ")"), "the message ends with the last op: %s", er.msg);
    cg_layer l;
    memset(&l, 0, sizeof l);
    char tpl[32];
    long long rows, fan_in;
    l.op = CG_OP_CONV, l.C = 3, l.H = 8, l.W = 8, l.M = 5, l.K = 3;
    CHECK(cg_op_template(&l, "direct", tpl, sizeof tpl) == 0 && !strcmp(tpl, "conv2d_direct"), "conv2d_ family");
    CHECK(cg_op_template(&l, "a_name_longer_than_the_buffer_takes", tpl, sizeof tpl) == -1, "too long");
    CHECK(cg_op_weights(&l, &rows, &fan_in) && rows == 5 && fan_in == 27, "conv weights 5 x 27");
    CHECK(cg_ops[CG_OP_CONV].flop(&l, 2) == 2.0 * 5 * 6 * 6 * 27 * 2, "conv FLOPs");
    /* groups: weights [M, C/G, K, K], FLOPs over C/G channels a map */
    l.C = 6, l.M = 4, l.groups = 2;
    long long shape[4];
    CHECK(cg_ops[CG_OP_CONV].weight_shape(&l, shape) == 4 && shape[0] == 4 && shape[1] == 3 && shape[2] == 3 &&
              shape[3] == 3, "grouped conv weights [4, 3, 3, 3]");
    CHECK(cg_op_weights(&l, &rows, &fan_in) && rows == 4 && fan_in == 27, "grouped weights 4 x 27");
    CHECK(cg_ops[CG_OP_CONV].flop(&l, 1) == 2.0 * 4 * 6 * 6 * 27, "grouped conv FLOPs");
    l.C = 3, l.M = 5, l.groups = 0;
    l.op = CG_OP_FC, l.out = 10;
    CHECK(cg_op_template(&l, "vec", tpl, sizeof tpl) == 0 && !strcmp(tpl, "fc_vec"), "fc_ family");
    CHECK(cg_op_weights(&l, &rows, &fan_in) && rows == 10 && fan_in == 192, "fc weights 10 x 192");
    l.op = CG_OP_SOFTMAX;
    CHECK(cg_op_template(&l, "x", tpl, sizeof tpl) == -1 && !tpl[0], "softmax has no family");
    CHECK(!cg_op_weights(&l, &rows, &fan_in) && rows == 0 && fan_in == 0, "softmax has no weights");
    int oc, oh, ow;
    CHECK(cg_ops[CG_OP_SOFTMAX].out_shape(&l, &oc, &oh, &ow, &err) == 0 && oc == 3 && oh == 8 && ow == 8,
          "softmax keeps its input's shape");
    l.op = CG_OP_FC, l.out = 0;
    CHECK(cg_ops[CG_OP_FC].out_shape(&l, &oc, &oh, &ow, &err) == -1, "fc out=0 has no shape");
    CHECK_CONTAINS(err.msg, "bad fc out=0");
}

/* Graphs: `input:` names the tensors a layer reads; add and concat read 2 to 4. */
static void expect_graph(const char *layers, const char *where, const char *msg)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "network: g\ninput: {channels: 3, height: 8, width: 8}\nlayers:\n%s", layers);
    expect_mem(buf, strlen(buf), where, msg);
}

static void test_graph(void)
{
    static const char ok[] =
        "network: g\ninput: {channels: 3, height: 8, width: 8}\nlayers:\n"
        "  - {name: c1, op: conv, M: 4, K: 3, padding: same}\n"
        "  - {name: c2, op: conv, M: 4, K: 3, padding: same}\n"
        "  - {name: r, op: add, input: [c2, c1], activation: relu}\n"
        "  - {name: s, op: conv, M: 2, K: 1, input: input}\n"
        "  - {name: cat, op: concat, input: [r, s, c1]}\n"
        "  - {name: f, op: fc, out: 10}\n";
    int rc = cg_spec_parse("mem.yaml", ok, strlen(ok), &spec, &err);
    CHECK(rc == 0, "graph spec: %s", err.msg);
    if (!rc) {
        const cg_layer *c1 = layer(&spec, "c1"), *r = layer(&spec, "r"), *s = layer(&spec, "s"),
                       *cat = layer(&spec, "cat"), *f = layer(&spec, "f");
        int in[CG_MAX_INPUTS];
        CHECK(c1->ninputs == 1 && c1->inputs[0] == -1 && cg_layer_inputs(&spec, 0, in) == 1 && in[0] == -1,
              "the first layer reads the input");
        CHECK(r->op == CG_OP_ADD && r->ninputs == 2 && r->inputs[0] == 1 && r->inputs[1] == 0 && r->act == CG_ACT_RELU,
              "add reads c2 and c1, relu after");
        CHECK_SHAPE(r, 4, 8, 8, 4, 8, 8);
        CHECK(s->ninputs == 1 && s->inputs[0] == -1, "input: input is the network's input");
        CHECK_SHAPE(s, 3, 8, 8, 2, 8, 8);
        CHECK(cat->op == CG_OP_CONCAT && cat->ninputs == 3 && cat->in_C[0] == 4 && cat->in_C[1] == 2 &&
                  cat->in_C[2] == 4,
              "concat's parts 4, 2, 4");
        CHECK_SHAPE(cat, 10, 8, 8, 10, 8, 8);
        CHECK(f->ninputs == 1 && f->inputs[0] == 4 && f->C == 10, "the default input is the layer before");
        int oc, oh, ow;
        CHECK(cg_ops[CG_OP_CONCAT].out_shape(cat, &oc, &oh, &ow, &err) == 0 && oc == 10 && oh == 8 && ow == 8,
              "concat's shape rule");
        cg_layer hand = *cat;
        hand.ninputs = 0;
        CHECK(cg_ops[CG_OP_CONCAT].out_shape(&hand, &oc, &oh, &ow, &err) == -1, "concat without inputs has no shape");
    }
    /* the refusals, each at its position */
    expect_graph("  - {name: a, op: conv, M: 4, K: 3}\n  - {name: b, op: conv, M: 4, K: 1, input: cc}\n",
                 "mem.yaml:5:44:", "unknown input 'cc' in layer 'b'");
    expect_graph("  - {name: conv1, op: conv, M: 4, K: 3}\n  - {name: b, op: conv, M: 4, K: 1, input: conv2}\n",
                 "mem.yaml:5:44:", "unknown input 'conv2' in layer 'b' (did you mean 'conv1'?)");
    expect_graph("  - {name: a, op: conv, M: 4, K: 3, input: b}\n  - {name: b, op: conv, M: 4, K: 1}\n",
                 "mem.yaml:4:44:", "input 'b' in layer 'a' is layer 2, defined after it");
    expect_graph("  - {name: a, op: conv, M: 4, K: 3, input: a}\n",
                 "mem.yaml:4:44:", "layer 'a' cannot read its own output");
    expect_graph("  - {name: a, op: conv, M: 4, K: 3}\n  - {name: b, op: conv, M: 4, K: 1, input: [a, input]}\n",
                 "mem.yaml:5:44:", "'input' in layer 'b' is a list of 2 names; a conv layer reads one tensor");
    expect_graph("  - {name: a, op: conv, M: 3, K: 1}\n  - {name: b, op: add, input: [a]}\n",
                 "mem.yaml:5:31:", "'input' in layer 'b' names 1 tensor; add takes 2 to 4");
    expect_graph("  - {name: a, op: conv, M: 3, K: 1}\n  - {name: b, op: add, input: a}\n",
                 "mem.yaml:5:31:", "'input' in layer 'b' names one tensor; add takes a list of 2 to 4 layer names");
    expect_graph("  - {name: a, op: conv, M: 3, K: 1}\n  - {name: b, op: concat}\n",
                 "mem.yaml:5:5:", "missing required key 'input' in layer 'b'");
    expect_graph("  - {name: a, op: conv, M: 3, K: 1}\n  - {name: b, op: add, input: [a, a, a, a, input]}\n",
                 "mem.yaml:5:31:", "names 5 tensors; add takes 2 to 4");
    expect_graph("  - {name: a, op: conv, M: 4, K: 1}\n  - {name: b, op: add, input: [a, input]}\n",
                 "mem.yaml:5:35:", "add layer 'b' sums tensors of one shape: the input is 3x8x8, layer 'a' output 4x8x8");
    expect_graph("  - {name: a, op: conv, M: 4, K: 3}\n  - {name: b, op: concat, input: [a, input]}\n",
                 "mem.yaml:5:38:", "concat layer 'b' joins maps of one height and width: the input is 8x8, "
                 "layer 'a' output 6x6");
    expect_graph("  - {name: a, op: conv, M: 4, K: 3}\n  - {name: b, op: conv, M: 4, K: 3, input: input}\n",
                 "mem.yaml:4:12:", "layer 'a' output is never used");
    expect_graph("  - {name: f, op: fc, out: 12}\n  - {name: b, op: conv, M: 4, K: 1, input: f}\n",
                 "mem.yaml:5:19:", "conv layer 'b' cannot read fc layer 'f' (its output is flat)");
    expect_graph("  - {name: f, op: fc, out: 12}\n  - {name: g, op: fc, out: 12, input: input}\n"
                 "  - {name: s, op: add, input: [f, g]}\n  - {name: c, op: conv, M: 1, K: 1}\n",
                 "mem.yaml:7:19:", "conv layer 'c' cannot follow add layer 's' (its output is flat)");
    expect_graph("  - {name: input, op: conv, M: 4, K: 3}\n", "mem.yaml:4:12:", "a layer may not be named 'input'");
    expect_graph("  - {name: a, op: concat, input: [input, input], activation: relu}\n", "mem.yaml:4:50:",
                 "key 'activation' is not allowed for op concat");
    expect_graph("  - {name: a, op: conv, M: 4, K: 3, input: {x: 1}}\n", "mem.yaml:4:44:", "for 'input' in layer 'a', got a mapping");
}

/* Text parsed as a whole spec must fail at `where` with `msg`. */
static void expect_text(const char *text, const char *where, const char *msg)
{
    expect_mem(text, strlen(text), where, msg);
}

/* batchnorm (keys, eps, activation, where it may stand), input mean/std and
 * pool_padding: what is read, and every refusal with its position. */
static void test_bn_norm_pool_pad(void)
{
    static const char ok[] =
        "network: t\n"
        "input: {channels: 3, height: 20, width: 17, scale: 0.5, mean: [0.5, 0.25, 0], std: [0.2, 0.5, 2]}\n"
        "layers:\n"
        "  - {name: b0, op: batchnorm}\n"
        "  - {name: c1, op: conv, M: 4, K: 3, padding: 1}\n"
        "  - {name: b1, op: batchnorm, eps: 0.001, activation: relu}\n"
        "  - {name: c2, op: conv, M: 5, K: 3, pool: max3, pool_stride: 2, pool_padding: 1}\n"
        "  - {name: c3, op: conv, M: 6, K: 1, pool: avg2, pool_padding: 1}\n";
    int rc = cg_spec_parse("mem.yaml", ok, strlen(ok), &spec, &err);
    CHECK(rc == 0, "bn spec: %s", err.msg);
    if (rc) return;
    const cg_layer *b0 = layer(&spec, "b0"), *b1 = layer(&spec, "b1"), *c2 = layer(&spec, "c2"),
                   *c3 = layer(&spec, "c3");
    CHECK(spec.norm == 1 && spec.mean[1] == 0.25 && spec.std[2] == 2 && spec.offset == 0, "mean/std read");
    CHECK(b0 && b0->op == CG_OP_BATCHNORM && b0->eps == 1e-5 && b0->act == CG_ACT_NONE, "b0: default eps");
    CHECK_SHAPE(b0, 3, 20, 17, 3, 20, 17);
    CHECK(b1 && b1->eps == 0.001 && b1->act == CG_ACT_RELU, "b1: eps, activation");
    CHECK_SHAPE(b1, 4, 20, 17, 4, 20, 17);
    /* 18x15 conv output, padded by 1: (18 + 2 - 3) / 2 + 1 = 9, (15 + 2 - 3) / 2 + 1 = 8 */
    CHECK(c2 && c2->pool_pad == 1, "c2 pool_pad");
    CHECK_SHAPE(c2, 4, 20, 17, 5, 9, 8);
    CHECK_SHAPE(c3, 5, 9, 8, 6, 5, 5); /* (9 + 2 - 2) / 2 + 1 = 5, (8 + 2 - 2) / 2 + 1 = 5 */
    CHECK(!cg_bn_folds(&spec, 0) && cg_bn_folds(&spec, 2) && !cg_bn_folds(&spec, 1), "cg_bn_folds");
    cg_layer run;
    cg_spec_run_layer(&spec, 1, 1, &run);
    CHECK(run.bias == 1 && run.act == CG_ACT_RELU && !run.bn_folded, "folded conv: bias and the bn's relu");
    cg_spec_run_layer(&spec, 2, 1, &run);
    CHECK(run.bn_folded == 1, "folded bn");
    cg_spec_run_layer(&spec, 1, 0, &run);
    CHECK(run.bias == 0 && run.act == CG_ACT_NONE, "unfolded conv as written");
    char tag[128];
    cg_conv_tag(c2, tag, sizeof tag);
    CHECK(!strcmp(tag, " pool=max3/2/p1"), "tag %s", tag);

    static const char head[] = "network: t\ninput: {channels: 2, height: 8, width: 8}\nlayers:\n";
    char buf[1024];
#define BAD(layers, where, msg) (snprintf(buf, sizeof buf, "%s%s", head, layers), expect_text(buf, where, msg))
    BAD("  - {name: c, op: conv, M: 2, K: 3, activation: relu}\n  - {name: b, op: batchnorm}\n", "mem.yaml:5:19:",
        "batchnorm layer 'b' follows conv layer 'c', which has activation relu: the batchnorm folds into the conv, so "
        "the activation must come after it; remove it from 'c' and write 'activation: relu' on 'b'");
    BAD("  - {name: c, op: conv, M: 2, K: 3, pool: max2}\n  - {name: b, op: batchnorm}\n", "mem.yaml:5:19:",
        "which has pool max: a conv followed by batchnorm may have no pool of its own");
    BAD("  - {name: b, op: batchnorm, eps: 0}\n", "mem.yaml:4:35:", "'eps' in layer 'b' is 0; it must be greater than 0");
    BAD("  - {name: b, op: batchnorm, eps: -1.0}\n", "mem.yaml:4:35:", "must be greater than 0");
    BAD("  - {name: b, op: batchnorm, M: 3}\n", "mem.yaml:4:30:", "key 'M' is not allowed for op batchnorm");
    BAD("  - {name: b, op: batchnorm, activation: gelu}\n", "mem.yaml:4:42:", "activation");
    BAD("  - {name: f, op: fc, out: 4}\n  - {name: b, op: batchnorm}\n", "mem.yaml:5:19:",
        "batchnorm layer 'b' cannot follow fc layer 'f' (its output is flat)");
    BAD("  - {name: c, op: conv, M: 2, K: 3, pool: max3, pool_padding: 2}\n", "mem.yaml:4:63:",
        "'pool_padding' in layer 'c' is 2, more than half the window side 3");
    BAD("  - {name: c, op: conv, M: 2, K: 3, pool_padding: 1}\n", "mem.yaml:4:51:",
        "'pool_padding' in layer 'c' needs pool maxK or avgK (the pool is none)");
    BAD("  - {name: c, op: conv, M: 2, K: 3, pool: global_avg, pool_padding: 1}\n", "mem.yaml:4:69:",
        "needs pool maxK or avgK (the pool is global_avg)");
#undef BAD
    expect_text("network: t\ninput: {channels: 2, height: 8, width: 8, offset: 1, mean: [0, 0]}\n"
                "layers:\n  - {name: s, op: softmax}\n", "mem.yaml:2:60:",
                "'mean' in 'input' goes with no 'offset' (x = (pixel * scale - mean[c]) / std[c]; remove 'offset' at 2:51)");
    expect_text("network: t\ninput: {channels: 2, height: 8, width: 8, std: [1, 2, 3]}\n"
                "layers:\n  - {name: s, op: softmax}\n", "mem.yaml:2:48:",
                "'std' in 'input' has 3 numbers; expected 2, one per channel");
    expect_text("network: t\ninput: {channels: 2, height: 8, width: 8, std: [1, 0]}\n"
                "layers:\n  - {name: s, op: softmax}\n", "mem.yaml:2:52:",
                "'std' in 'input' has 0 for channel 1; every std must be greater than 0");
    expect_text("network: t\ninput: {channels: 2, height: 8, width: 8, mean: 0.5}\n"
                "layers:\n  - {name: s, op: softmax}\n", "mem.yaml:2:49:", "mean");
}

/* precision: the network's (default fp32) and a conv's or fc's own within the
 * network's tensor type (bf16 or fp16 in an fp32 network refused, and fp32 or tf32
 * in a 16-bit one), unknown words and other ops' keys refused. */
static void test_precision(void)
{
    static const char ok[] =
        "network: t\n"
        "input: {channels: 3, height: 12, width: 12}\n"
        "precision: tf32\n"
        "layers:\n"
        "  - {name: c1, op: conv, M: 4, K: 3}\n"
        "  - {name: c2, op: conv, M: 4, K: 3, precision: fp32}\n"
        "  - {name: f1, op: fc, out: 10, precision: \"fp32\"}\n"
        "  - {name: f2, op: fc, out: 5}\n"
        "  - {name: p, op: softmax}\n";
    int rc = cg_spec_parse("mem.yaml", ok, strlen(ok), &spec, &err);
    CHECK(rc == 0, "precision spec: %s", err.msg);
    if (rc) return;
    CHECK(spec.precision == CG_PREC_TF32, "network precision %d", spec.precision);
    CHECK(layer(&spec, "c1")->precision == CG_PREC_TF32, "c1 inherits tf32");
    CHECK(layer(&spec, "c2")->precision == CG_PREC_FP32, "c2 overrides to fp32");
    CHECK(layer(&spec, "c2")->precision_pos.line == 6 && layer(&spec, "c2")->precision_pos.col == 49,
          "c2's precision at %d:%d", layer(&spec, "c2")->precision_pos.line, layer(&spec, "c2")->precision_pos.col);
    CHECK(layer(&spec, "f1")->precision == CG_PREC_FP32 && layer(&spec, "f2")->precision == CG_PREC_TF32, "fc");
    CHECK(!strcmp(cg_precision_name(CG_PREC_TF32), "tf32") && !strcmp(cg_precision_name(CG_PREC_FP32), "fp32"),
          "names");
    static const char plain[] = "network: t\ninput: {channels: 1, height: 8, width: 8}\n"
                                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n";
    rc = cg_spec_parse("mem.yaml", plain, strlen(plain), &spec, &err);
    CHECK(rc == 0 && spec.precision == CG_PREC_FP32 && spec.layers[0].precision == CG_PREC_FP32,
          "default fp32: %s", err.msg);
    static const char half[] = "network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: fp16\n"
                               "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n  - {name: p, op: softmax}\n";
    rc = cg_spec_parse("mem.yaml", half, strlen(half), &spec, &err);
    CHECK(rc == 0 && spec.precision == CG_PREC_FP16 && spec.layers[0].precision == CG_PREC_FP16 &&
              spec.layers[1].precision == CG_PREC_FP16,
          "fp16 network, every layer fp16: %s", err.msg);
    CHECK(!strcmp(cg_precision_dtype(CG_PREC_BF16), "bf16") && !strcmp(cg_precision_dtype(CG_PREC_FP16), "f16") &&
              !strcmp(cg_precision_dtype(CG_PREC_TF32), "f32") && !strcmp(cg_precision_dtype(CG_PREC_FP32), "f32"),
          "tensor types");
    /* a layer keeps the network's tensor type: tf32 in fp32 (above), not bf16 in fp32 nor fp32 in bf16 */
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3, precision: bf16}\n",
                "mem.yaml:4:49:", "layer 'c1': precision bf16 stores bf16 tensors, the network's precision fp32 "
                "stores f32; a layer's precision must keep the network's tensor type (write precision: bf16 at "
                "network level, or fp32 or tf32)");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: bf16\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3, precision: tf32}\n",
                "mem.yaml:5:49:", "layer 'c1': precision tf32 stores f32 tensors, the network's precision bf16 "
                "stores bf16; a layer's precision must keep the network's tensor type (write precision: tf32 at "
                "network level, or bf16)");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: tf33\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:3:12:", "unknown precision 'tf33' (expected fp32, tf32, bf16 or fp16; did you mean 'tf32'?)");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: double\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:3:12:", "unknown precision 'double' (expected fp32, tf32, bf16 or fp16)");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: [tf32]\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:3:12:", "precision");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n  - {name: p, op: softmax, precision: tf32}\n",
                "mem.yaml:5:28:", "key 'precision' is not allowed for op softmax");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecison: tf32\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:3:1:", "unknown key 'precison' at top level (did you mean 'precision'?)");
    /* precision_fallback: fp32 or fp16 on a bf16 network, every layer carrying it; the
     * precision a target runs: the fallback below sm_80 only */
    static const char fb[] = "network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: bf16\n"
                             "precision_fallback: fp32\nlayers:\n  - {name: c1, op: conv, M: 2, K: 3}\n"
                             "  - {name: p, op: softmax}\n";
    rc = cg_spec_parse("mem.yaml", fb, strlen(fb), &spec, &err);
    CHECK(rc == 0 && spec.precision_fallback == 1 + CG_PREC_FP32 && spec.layers[0].precision_fallback == 1 + CG_PREC_FP32,
          "bf16 network with an fp32 fallback: %s", err.msg);
    if (rc == 0) {
        CHECK(cg_spec_precision_on(&spec, 75) == CG_PREC_FP32 && cg_layer_precision_on(&spec.layers[0], 75) == CG_PREC_FP32,
              "fp32 on sm_75");
        CHECK(cg_spec_precision_on(&spec, 80) == CG_PREC_BF16 && cg_layer_precision_on(&spec.layers[0], 90) == CG_PREC_BF16,
              "bf16 from sm_80");
    }
    rc = cg_spec_parse("mem.yaml", half, strlen(half), &spec, &err);
    CHECK(rc == 0 && spec.precision_fallback == 0 && cg_spec_precision_on(&spec, 75) == CG_PREC_FP16,
          "no fallback written: none (an fp16 network runs fp16 on sm_75): %s", err.msg);
    cg_layer zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    zeroed.precision = CG_PREC_BF16;
    CHECK(cg_layer_precision_on(&zeroed, 75) == CG_PREC_BF16, "a zeroed, hand-built layer has no fallback");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision_fallback: fp32\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:3:21:", "precision_fallback applies to a network of precision bf16 (the precision a target "
                "below sm_80 refuses); this network's precision is fp32");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: bf16\nprecision_fallback: tf32\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:4:21:", "precision_fallback tf32: expected fp32 or fp16 (what a target without bf16 runs instead)");
    expect_text("network: t\ninput: {channels: 1, height: 8, width: 8}\nprecision: bf16\nprecision_fallback: fp33\n"
                "layers:\n  - {name: c1, op: conv, M: 2, K: 3}\n",
                "mem.yaml:4:21:", "unknown precision 'fp33' in precision_fallback (expected fp32, tf32, bf16 or fp16; did "
                "you mean 'fp32'?)");
}

int main(void)
{
    test_precision();
    test_bn_norm_pool_pad();
    test_op_table();
    test_2017();
    test_2018sp();
    test_2018fa();
    test_example();
    test_bad_dir();
    test_memory();
    test_files();
    test_names();
    test_layers();
    test_graph();
    test_groups();
    return cg_test_done("test_spec");
}
