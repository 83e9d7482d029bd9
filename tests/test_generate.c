/* test_generate.c — the generator's output for the shipped specs: deterministic,
 * self-describing, a manifest the runtime accepts, and loops really unrolled
 * (the PTX of every conv kernel holds C*K*K fused multiply-adds per output it
 * computes). */
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */
#include "check.h"
#include "aot.h"
#include "gen.h"
#include "lua_host.h"
#include "manifest.h"
#include "spec.h"
#include "tune.h"

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The generated kernel serving spec layer `name` with template conv2d_*. */
/* The kernel of a layer whose template name starts with prefix ("conv2d_", "fc_"). */
static const cg_gen_kernel *layer_kernel(const cg_gen_output *o, const char *layer, const char *prefix)
{
    for (int i = 0; i < o->nkernels; i++)
        if (!strcmp(o->k[i].layer, layer) && !strncmp(o->k[i].tpl, prefix, strlen(prefix))) return &o->k[i];
    return NULL;
}

static const cg_gen_kernel *conv_kernel(const cg_gen_output *o, const char *layer)
{
    return layer_kernel(o, layer, "conv2d_");
}

/* Whether a kernel's header line "// params: ..." holds text; that line, or NULL, in *line. */
static int params_has(const cg_gen_kernel *k, const char *text, const char **line)
{
    const char *p = k ? strstr(k->source, "// params:") : NULL;
    const char *hit = p ? strstr(p, text) : NULL;
    *line = p;
    return hit && hit < strchr(p, '\n');
}

static long long param(const char *src, const char *key)
{
    const char *p = strstr(src, "// params:");
    const char *q = p ? strstr(p, key) : NULL;
    return q ? atoll(q + strlen(key) + 1) : -1;
}

/* Run tests/lua/ops/NAME.lua's returned function; its string result or error in *out. */
static int run_template(const char *name, char *out, size_t n)
{
    cg_lua *h;
    cg_err e;
    int rc = cg_lua_open(&h, "tests/lua", &e);
    if (!rc) rc = cg_lua_import(h, name, &e);
    if (!rc) rc = cg_lua_pcall(h, 0, 1, &e);
    if (!rc) snprintf(out, n, "%s", lua_tostring(cg_lua_state(h), -1) ? lua_tostring(cg_lua_state(h), -1) : "");
    else snprintf(out, n, "%s", e.msg);
    cg_lua_close(h);
    return rc;
}

/* The template engine: statements, values, and errors at the template file's lines. */
static void test_engine(void)
{
    char out[CG_ERR_MAX];
    CHECK(run_template("engine_ok", out, sizeof out) == 0, "engine_ok: %s", out);
    CHECK(!strcmp(out, "a[0] = 0; // row\na[1] = 2; // row\na[2] = 4; // row\nx = 0.5;\n"), "engine output: %s", out);
    CHECK(run_template("engine_bad", out, sizeof out) != 0, "undefined name fails");
    CHECK(strstr(out, "tests/lua/ops/engine_bad.lua:6: template uses undefined name 'missing_name'"), "got: %s", out);
    CHECK(run_template("engine_syntax", out, sizeof out) != 0, "syntax error fails");
    CHECK(strstr(out, "tests/lua/ops/engine_syntax.lua:6:"), "got: %s", out);
}

/* A spec from text (the path names it in messages). */
static cg_spec *spec_text(const char *path, const char *text)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e;
    if (s && cg_spec_parse(path, text, strlen(text), s, &e)) {
        CHECK(0, "%s: %s", path, e.msg);
        free(s);
        return NULL;
    }
    return s;
}

/* Two conv layers that differ only in bias are two kernels with two names
 * (they used to collide: "two layers generate the same kernel"). */
static void test_bias_names(void)
{
    cg_spec *s = spec_text("bias.yaml",
        "network: t\ninput: {channels: 1, height: 28, width: 28}\ndataset: {name: fashion-mnist}\n"
        "layers:\n"
        "  - {name: a, op: conv, M: 1, K: 1, bias: true, strategy: direct}\n"
        "  - {name: b, op: conv, M: 1, K: 1, strategy: direct}\n"
        "  - {name: f, op: fc, out: 10, strategy: tiled}\n");
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e;
    if (!s || !o) return free(s), free(o);
    int rc = cg_generate(s, "x", o, &e);
    CHECK(rc == 0, "layers differing only in bias generate: %s", rc ? e.msg : "");
    if (!rc) {
        const cg_gen_kernel *a = conv_kernel(o, "a"), *b = conv_kernel(o, "b");
        CHECK(a && b && strcmp(a->kernel, b->kernel), "two kernel names");
        CHECK(a && strstr(a->kernel, "_bias_wc_"), "bias and weight placement in the name: %s", a ? a->kernel : "");
        CHECK(b && !strstr(b->kernel, "_bias") && strstr(b->kernel, "_wc_"), "no bias in the name: %s",
              b ? b->kernel : "");
        cg_gen_free(o);
    }
    free(s), free(o);
}

/* Enumerate / check / emit for example-conv's conv1 (C=1 M=8 K=5 on 28x28,
 * pooled to 12x12). Declared legal values: block 32 (32..1024), maps_unroll 4
 * (1 2 4 8), cols 5 (1 2 3 4 6), unroll_groups 2, and fuse, declared `tune = false`,
 * at its default 1 only: 1280 combinations. The check refuses maps_unroll*cols > 16 when pooling is fused (4 of the 20
 * (maps_unroll, cols) pairs: 4x6, 8x3, 8x4, 8x6 need more than 64
 * accumulators), for every block and unroll_groups: 4*32*2 = 256 refusals. */
static void test_one_layer(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e;
    if (!s || cg_spec_load("specs/example-conv.yaml", s, &e)) {
        CHECK(0, "example-conv: %s", s ? e.msg : "no memory");
        free(s);
        return;
    }
    cg_candidates c;
    int rc = cg_gen_candidates(s, 0, "conv2d_direct", 0, &c, &e);
    CHECK(rc == 0, "candidates: %s", rc ? e.msg : "");
    if (!rc) {
        CHECK(c.total == 1280 && c.examined == 1280, "total %lld examined %lld", c.total, c.examined);
        /* refused: 256 over 64 accumulators (maps_unroll*cols > 16 when pooling: 4 pairs x 2 x 32
         * blocks), 160 over the 2560-FMA body budget (unroll_groups=1 with cols 4 or 6: 5 pairs
         * not already refused x 32 blocks); both blame maps_unroll */
        CHECK(c.refused == 416 && c.n == 864 && c.n == c.total - c.refused, "accepted %d refused %lld", c.n,
              c.refused);
        CHECK(c.nreasons == 1 && !strcmp(c.reason[0].param, "maps_unroll") && c.reason[0].count == 416,
              "refusals grouped under maps_unroll: %d groups", c.nreasons);
        CHECK(!strcmp(c.names, "block maps_unroll cols unroll_groups fuse ms cl"), "names: %s", c.names);
        CHECK(!strcmp(c.c[0].params, "block=32 maps_unroll=1 cols=1 unroll_groups=0 fuse=1 ms=1"), "first: %s",
              c.c[0].params);
        CHECK(!strcmp(c.c[c.n - 1].params, "block=1024 maps_unroll=8 cols=2 unroll_groups=1 fuse=1 ms=1"), "last: %s",
              c.c[c.n - 1].params);
        CHECK(!c.note[0], "no cap note: %s", c.note);
        /* every candidate of the first block size (864 / 32 = 27) emits, each under its own name */
        char names[27][128];
        int emitted = 0;
        for (int i = 0; i < 27 && i < c.n; i++) {
            cg_gen_kernel k;
            cg_kernel_launch l;
            rc = cg_gen_emit_one(s, 0, "conv2d_direct", c.c[i].params, &k, &l, &e);
            CHECK(rc == 0, "emit %s: %s", c.c[i].params, rc ? e.msg : "");
            if (rc) continue;
            CHECK(!strcmp(l.params, c.c[i].params), "launch params %s", l.params);
            CHECK(strstr(k.source, "\n// regenerate: convgen kernel specs/example-conv.yaml --layer conv1 --strategy direct --params block=32,") != NULL,
                  "header: how to make it again");
            for (int j = 0; j < emitted; j++) CHECK(strcmp(names[j], k.kernel), "two configurations named %s", k.kernel);
            snprintf(names[emitted++], sizeof names[0], "%s", k.kernel);
            cg_gen_kernel_free(&k);
        }
        CHECK(emitted == 27, "27 candidates emitted (%d)", emitted);
        cg_candidates_free(&c);
    }
    /* a cap cuts the enumeration short and says so */
    rc = cg_gen_candidates(s, 0, NULL, 100, &c, &e);
    CHECK(rc == 0 && c.examined == 100 && c.n + c.refused == 100 && strstr(c.note, "cap of 100"),
          "capped: %s", rc ? e.msg : c.note);
    if (!rc) cg_candidates_free(&c);

    /* a refused configuration gets the template's reason, from check and emit (every
     * completion of it refused: the parameters left out are searched; with fuse=0 this
     * pair passes) */
    char whybuf[256], *why = whybuf;
    rc = cg_gen_check_one(s, 0, "conv2d_direct", "maps_unroll=8,cols=4,fuse=1", why, sizeof whybuf, &e);
    CHECK(rc == 1, "refused (rc %d)", rc);
    CHECK_CONTAINS(why, "maps_unroll=8 with cols=4 needs 128 accumulators per thread");
    cg_gen_kernel k;
    cg_kernel_launch l;
    rc = cg_gen_emit_one(s, 0, "conv2d_direct", "maps_unroll=8 cols=4 fuse=1", &k, &l, &e);
    CHECK(rc != 0, "a refused configuration does not emit");
    CHECK_CONTAINS(e.msg, "specs/example-conv.yaml: layer 'conv1': maps_unroll=8 with cols=4 needs 128");
    CHECK(cg_gen_check_one(s, 0, NULL, "cols=5", why, sizeof whybuf, &e) == 1, "illegal value refused");
    CHECK_CONTAINS(why, "cols=5 is not legal for conv2d_direct");
    CHECK(cg_gen_check_one(s, 0, NULL, "colz=1", why, sizeof whybuf, &e) == 1, "unknown name refused");
    CHECK_CONTAINS(why, "unknown parameter 'colz'");
    CHECK(cg_gen_check_one(s, 0, NULL, "", why, sizeof whybuf, &e) == 0, "the spec's own configuration passes");
    CHECK(cg_gen_check_one(s, 0, NULL, "cols", why, sizeof whybuf, &e) == -1, "malformed parameter");
    CHECK_CONTAINS(e.msg, "bad parameter 'cols'");
    CHECK(cg_gen_check_one(s, 0, "conv2d_nope", "", why, sizeof whybuf, &e) == -1, "unknown template");
    CHECK_CONTAINS(e.msg, "no template 'conv2d_nope'");
    CHECK(cg_gen_check_one(s, 0, "fc_tiled", "", why, sizeof whybuf, &e) == -1, "fc template on a conv layer");
    CHECK_CONTAINS(e.msg, "template fc_tiled does not serve conv layers");
    CHECK(cg_gen_candidates(s, 1, NULL, 0, &c, &e) == -1, "no layer 2");
    CHECK_CONTAINS(e.msg, "no layer 2 (the network has 1)");

    /* without parameters: exactly the network's kernel (header aside) */
    cg_gen_output *o = malloc(sizeof *o);
    if (o && cg_generate(s, "x", o, &e) == 0) {
        rc = cg_gen_emit_one(s, 0, NULL, NULL, &k, &l, &e);
        CHECK(rc == 0, "emit the spec's configuration: %s", rc ? e.msg : "");
        const cg_gen_kernel *n = conv_kernel(o, "conv1");
        if (!rc && n) {
            CHECK(!strcmp(k.kernel, n->kernel), "same name: %s, %s", k.kernel, n->kernel);
            CHECK(k.source_len - k.header_len == n->source_len - n->header_len &&
                      !memcmp(k.source + k.header_len, n->source + n->header_len, k.source_len - k.header_len),
                  "same code as in the network");
            CHECK(strstr(o->manifest, l.record) != NULL, "same manifest record apart from tensors: %s", l.record);
            CHECK(l.fused && l.in_elems == 784 && l.out_elems == 8 * 12 * 12 && !strcmp(l.grid[0], "N*144/64") &&
                      l.block[0] == 64 && !strncmp(l.weights, "const:", 6),
                  "launch facts: fused %d in %lld out %lld grid %s", l.fused, l.in_elems, l.out_elems, l.grid[0]);
        }
        if (!rc) cg_gen_kernel_free(&k);
        cg_gen_free(o);
    }
    free(o);
    /* unfused: the kernel writes the conv (+bias) at full size */
    rc = cg_gen_emit_one(s, 0, NULL, "fuse=0", &k, &l, &e);
    CHECK(rc == 0 && !l.fused && l.out_elems == 8 * 24 * 24 && strstr(l.record, " out=conv1.conv "),
          "unfused launch: %s", rc ? e.msg : l.record);
    if (!rc) cg_gen_kernel_free(&k);
    free(s);
}

/* Without parameters, check and emit mean the configuration generate would
 * give the layer under that template, not the template's raw defaults: zoo-odd's
 * conv2 (M = 30) under conv2d_igemm, whose default tm=8 does not divide a legal bm
 * of 30; spec params written for another template (ece408-2018fa's conv1 has
 * direct's) are not applied. */
static void test_no_params_default(void)
{
    cg_err e;
    cg_spec *s = malloc(sizeof *s);
    if (!s || cg_spec_load("bench/specs/zoo-odd.yaml", s, &e)) {
        CHECK(0, "load zoo-odd: %s", s ? e.msg : "out of memory");
        free(s);
        return;
    }
    char why[256] = "";
    cg_gen_kernel k;
    cg_kernel_launch l;
    CHECK(cg_gen_check_one(s, 1, "conv2d_igemm", NULL, why, sizeof why, &e) == 0, "conv2 igemm accepted: %s", why);
    int rc = cg_gen_emit_one(s, 1, "conv2d_igemm", "", &k, &l, &e);
    cg_gen_output *o = malloc(sizeof *o);
    if (!rc && o && cg_generate(s, "x", o, &e) == 0) {
        const cg_gen_kernel *n = conv_kernel(o, "conv2");
        CHECK(n && !strcmp(k.kernel, n->kernel), "generate's kernel: %s, %s", k.kernel, n ? n->kernel : "none");
        cg_gen_free(o);
    } else {
        CHECK(0, "emit or generate: %s", e.msg);
    }
    free(o);
    if (!rc) cg_gen_kernel_free(&k);
    if (cg_spec_load("specs/ece408-2018fa.yaml", s, &e) == 0) {
        CHECK(cg_gen_check_one(s, 0, "conv2d_igemm", "", why, sizeof why, &e) == 0, "conv1 igemm: %s", why);
        rc = cg_gen_emit_one(s, 0, "conv2d_igemm", NULL, &k, &l, &e);
        CHECK(rc == 0, "conv1 igemm emitted: %s", rc ? e.msg : "");
        if (!rc) cg_gen_kernel_free(&k);
    } else {
        CHECK(0, "load ece408-2018fa: %s", e.msg);
    }
    free(s);
}

/* fc layers: the product of fc_tiled's declared values, and every candidate of
 * fc_vec for ece408-2017's fc2 (500 -> 10). */
static void test_fc_candidates(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e;
    if (!s || cg_spec_load("specs/ece408-2017.yaml", s, &e)) {
        CHECK(0, "ece408-2017: %s", s ? e.msg : "no memory");
        free(s);
        return;
    }
    int fc2 = -1;
    for (int i = 0; i < s->nlayers; i++)
        if (!strcmp(s->layers[i].name, "fc2")) fc2 = i;
    CHECK(fc2 >= 0, "fc2 in ece408-2017");
    cg_candidates c;
    if (fc2 >= 0 && cg_gen_candidates(s, fc2, "fc_tiled", 0, &c, &e) == 0) {
        CHECK(c.total == 4 * 5 * 3 * 4 * 4 && c.n + c.refused == c.total && c.n > 0 && c.refused > 0,
              "fc_tiled: %lld = %d + %lld", c.total, c.n, c.refused);
        cg_candidates_free(&c);
    } else {
        CHECK(0, "fc_tiled candidates: %s", e.msg);
    }
    if (fc2 >= 0 && cg_gen_candidates(s, fc2, "fc_vec", 0, &c, &e) == 0) {
        CHECK(c.total == 3 * 4 * 3 * 2 * 2 && c.n + c.refused == c.total, "fc_vec: %lld", c.total);
        int ok = 0;
        for (int i = 0; i < c.n; i++) {
            cg_gen_kernel k;
            cg_kernel_launch l;
            if (cg_gen_emit_one(s, fc2, "fc_vec", c.c[i].params, &k, &l, &e) == 0) {
                ok += l.out_elems == 10 && l.in_elems == 500;
                cg_gen_kernel_free(&k);
            }
        }
        CHECK(ok == c.n, "every fc_vec candidate emits (%d of %d)", ok, c.n);
        cg_candidates_free(&c);
    } else {
        CHECK(0, "fc_vec candidates: %s", e.msg);
    }
    CHECK(cg_gen_candidates(s, s->nlayers - 1, NULL, 0, &c, &e) == -1, "softmax has no candidates");
    CHECK_CONTAINS(e.msg, "is a softmax; only conv and fc layers have tunable kernels");
    free(s);
}

/* The argument roles of the kernel contract: parsed in order, unknown, repeated
 * or empty ones refused, and bound to the value each role names. */
static void test_arg_roles(void)
{
    cg_arg_role r[CG_MAX_ARGS];
    int n = 0;
    CHECK(cg_args_parse("in,out,weights,bias,n", r, &n) == 0 && n == 5 && r[0] == CG_ARG_IN &&
              r[2] == CG_ARG_WEIGHTS && r[4] == CG_ARG_N,
          "roles parsed in order");
    CHECK(cg_args_parse("n,in,out", r, &n) == 0 && n == 3 && r[0] == CG_ARG_N, "any order, any subset");
    CHECK(cg_args_parse("in,workspace", r, &n) != 0, "unknown role refused");
    CHECK(cg_args_parse("in,in", r, &n) != 0, "repeated role refused");
    CHECK(cg_args_parse("in,", r, &n) != 0 && cg_args_parse("", r, &n) != 0, "empty role refused");
    int a = 1, a1 = 6, b = 2, w = 3, bias = 4, count = 5;
    void *argv[CG_MAX_ARGS], *in[2] = {&a, &a1}, *out[1] = {&b};
    cg_args_parse("n,bias,in", r, &n);
    CHECK(cg_args_bind(r, n, in, 1, out, 1, &w, &bias, &count, NULL, 0, argv) == 0, "bound");
    CHECK(argv[0] == &count && argv[1] == &bias && argv[2] == &a, "each argument bound by its role");
    /* further inputs: in1 is the second tensor of the kernel's list, in any position */
    CHECK(cg_args_parse("in1,out,in,n", r, &n) == 0 && n == 4 && r[0] == CG_ARG_IN1 && cg_arg_input(r[0]) == 1 &&
              cg_arg_input(r[2]) == 0 && cg_arg_input(r[1]) == -1,
          "in1 parsed as the second input");
    CHECK(cg_args_parse("in,in1,in2,in3,out", r, &n) == 0 && cg_arg_input(r[3]) == 3 &&
              !strcmp(cg_arg_role_name(r[3]), "in3"),
          "in3 is the fourth input");
    CHECK(cg_args_parse("in4,out", r, &n) != 0 && cg_args_parse("in1,in1", r, &n) != 0, "in4 and repeats refused");
    cg_args_parse("in1,out,in,n", r, &n);
    for (int i = 0; i < CG_MAX_ARGS; i++) argv[i] = NULL;
    CHECK(cg_args_bind(r, n, in, 2, out, 1, &w, &bias, &count, NULL, 0, argv) == 0, "two inputs bound");
    CHECK(argv[0] == &a1 && argv[1] == &b && argv[2] == &a && argv[3] == &count, "in1 bound to the second input");
    for (int i = 0; i < CG_MAX_ARGS; i++) argv[i] = NULL;
    CHECK(cg_args_bind(r, n, in, 1, out, 1, &w, &bias, &count, NULL, 0, argv) == -1 && !argv[0] && !argv[2],
          "in1 of a kernel with one input refused, nothing bound");
    CHECK(cg_args_past_inputs(r, n, 1) == 0 && cg_args_past_inputs(r, n, 2) == -1, "the role past the inputs");
    /* further outputs: out1 and out2, the second and third of the kernel's out list */
    CHECK(cg_args_parse("out2,in,out,out1,n", r, &n) == 0 && n == 5 && cg_arg_output(r[0]) == 2 &&
              cg_arg_output(r[3]) == 1 && cg_arg_output(r[2]) == 0 && cg_arg_output(r[1]) == -1,
          "out1, out2 parsed as the second and third outputs");
    int o1 = 7, o2 = 8;
    void *outs[3] = {&b, &o1, &o2};
    for (int i = 0; i < CG_MAX_ARGS; i++) argv[i] = NULL;
    CHECK(cg_args_bind(r, n, in, 1, outs, 3, &w, &bias, &count, NULL, 0, argv) == 0 && argv[0] == &o2 && argv[2] == &b &&
              argv[3] == &o1,
          "three outputs bound by role");
    CHECK(cg_args_past_outputs(r, n, 2) == 0 && cg_args_past_outputs(r, n, 3) == -1, "the role past the outputs");
    CHECK(cg_args_parse("out3,in", r, &n) != 0, "no role out3");
}

/* conv2d_winograd: the layers it serves (kernels up to 7x7, stride 1) and the
 * reasons it gives for the others; on tests/gpu/layers-winograd.yaml every conv is
 * its kernel, weights transposed, the loop over channel slices a loop, the pool
 * fused or not as the layer's pool allows; its cost model ranks every candidate;
 * layers-winograd-f's tiles F(m x m, r x r) are the ones asked for. */
static void test_winograd(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    cg_err e = {""};
    char whybuf[256], *why = whybuf;
    if (!s || !o || !m || cg_spec_load("bench/specs/zoo-bigk.yaml", s, &e)) {
        CHECK(0, "zoo-bigk: %s", e.msg);
        free(s), free(o), free(m);
        return;
    }
    /* a 9x9 layer (F(2x2, 9x9) would need 10 points): refused with the reason, every candidate refused */
    CHECK(cg_gen_check_one(s, 1, "conv2d_winograd", "", why, sizeof whybuf, &e) == 1, "9x9 refused");
    CHECK_CONTAINS(why, "Winograd serves kernels up to 7x7; this layer's is 9x9");
    cg_candidates c;
    int rc = cg_gen_candidates(s, 1, "conv2d_winograd", 0, &c, &e);
    CHECK(rc != 0 || c.n == 0, "no winograd candidate for a 9x9 layer (%d)", rc ? -1 : c.n);
    if (!rc) cg_candidates_free(&c);
    /* its 6x6 layer (zoo-bigk conv3): F(2x2, 6x6) needs 7 points, F(4x4, 6x6) 9 */
    rc = cg_gen_candidates(s, 2, "conv2d_winograd", 0, &c, &e);
    CHECK(rc == 0 && c.n > 0, "6x6 served: %s", rc ? e.msg : "");
    if (!rc) {
        for (int i = 0; i < c.n; i++) CHECK(strstr(c.c[i].params, "mt=2 "), "6x6: %s", c.c[i].params);
        cg_candidates_free(&c);
    }
    CHECK(cg_gen_check_one(s, 2, "conv2d_winograd", "mt=4", why, sizeof whybuf, &e) == 1, "mt=4 refused for 6x6");
    CHECK_CONTAINS(why, "mt=4 is not legal");
    /* a 3x3 layer of stride 2 */
    if (!cg_spec_load("tests/gpu/layers-igemm.yaml", s, &e)) {
        CHECK(cg_gen_check_one(s, 2, "conv2d_winograd", "", why, sizeof whybuf, &e) == 1, "stride 2 refused");
        CHECK_CONTAINS(why, "Winograd serves stride 1 only; this layer's is 2");
    } else {
        CHECK(0, "layers-igemm: %s", e.msg);
    }
    /* the tile sizes of layers-winograd-f, each as its layer asks (or by default m = 2) */
    const char *fpath = "tests/gpu/layers-winograd-f.yaml";
    if (cg_spec_load(fpath, s, &e) || cg_generate(s, "x", o, &e)) {
        CHECK(0, "%s: %s", fpath, e.msg);
    } else {
        static const char *const want[][2] = {{"a1", "k5_"}, {"a2", "k3_"}, {"a3", "k3_"},
                                              {"a4", "k7_"}, {"a5", "k5_"}, {"a6", "k2_"}};
        static const int mt[] = {2, 4, 6, 2, 4, 2};
        for (int i = 0; i < 6; i++) {
            const cg_gen_kernel *k = conv_kernel(o, want[i][0]);
            char f[16];
            snprintf(f, sizeof f, "_f%d_", mt[i]);
            CHECK(k && strstr(k->kernel, want[i][1]) && strstr(k->kernel, f) && param(k->source, "mt") == mt[i],
                  "%s: F(%dx%d) kernel: %s", want[i][0], mt[i], mt[i], k ? k->kernel : "none");
        }
    }
    const char *path = "tests/gpu/layers-winograd.yaml";
    if (cg_spec_load(path, s, &e) || cg_generate(s, "x", o, &e) || cg_manifest_parse(o->manifest, o->manifest_len, path, m, &e)) {
        CHECK(0, "%s: %s", path, e.msg);
        free(s), free(o), free(m);
        return;
    }
    int convs = 0;
    for (int i = 0; i < m->nkernels; i++) {
        if (strncmp(m->k[i].tpl, "conv2d_", 7)) continue;
        convs++;
        CHECK(!strcmp(m->k[i].tpl, "conv2d_winograd") && m->k[i].wplace == CG_PLACE_ARG_T &&
                  m->k[i].shared > 0 && m->k[i].shared <= 48 * 1024,
              "%s: %s is winograd, weights transposed, %d B shared", path, m->k[i].name, m->k[i].shared);
    }
    CHECK(convs == 5, "%s: five conv kernels (%d)", path, convs);
    /* w4 (C=40, cs=5 by default): eight slices in a loop; its overlapping max pool is not fused */
    const cg_gen_kernel *k = conv_kernel(o, "w4");
    CHECK(k && param(k->source, "cs") == 5 && strstr(k->source, "#pragma unroll 1\n    for (int s = 0; s < 8; s++)") &&
              strstr(k->kernel, "_none_bias_"),
          "w4: a loop over 8 slices of 5 channels, unfused: %s", k ? k->kernel : "none");
    /* w2: same padding and a fused max2, one tile per pooled output (14x14 of them) */
    k = conv_kernel(o, "w2");
    CHECK(k && strstr(k->kernel, "_p1_tanh_pool2_bias_") && strstr(k->source, "const int total = n * 196;") &&
              strstr(k->source, "fmaxf(fmaxf(y[0], y[1]), fmaxf(y[2], y[3]))"),
          "w2: fused max2 over 14x14 tiles: %s", k ? k->kernel : "none");
    /* every candidate of w2 has a finite cost; the cheapest uses a thread tile of at
     * least 2x2 (one shared-memory read a multiply-add, or fewer) */
    rc = cg_gen_candidates(s, 1, "conv2d_winograd", 0, &c, &e);
    CHECK(rc == 0 && c.n > 100, "w2 candidates: %s", rc ? e.msg : "");
    if (!rc) {
        int finite = 1, best = 0;
        for (int i = 0; i < c.n; i++) {
            if (!(c.c[i].cost >= 0 && c.c[i].cost < 1e30)) finite = 0;
            if (c.c[i].cost < c.c[best].cost) best = i;
        }
        CHECK(finite, "every w2 candidate has a finite cost");
        const char *tm = strstr(c.c[best].params, "tm="), *tn = strstr(c.c[best].params, "tn=");
        CHECK(tm && tn && atoi(tm + 3) * atoi(tn + 3) >= 4, "cheapest: %s", c.c[best].params);
        cg_candidates_free(&c);
    }
    cg_gen_free(o);
    free(s), free(o), free(m);
}

/* `strategy: auto` (a conv without strategy): direct for one to three channels
 * and a small kernel, winograd for 3x3 stride-1 layers with C a multiple of 8 from
 * 32 and M a multiple of 32 whose conv output its 2x2 tiles cover with at most
 * 1.2x the outputs, where the target holds its default tile (sm_90: yes;
 * the 48 KiB default target: no, igemm with the reason), igemm otherwise; the
 * header says why. */
static void test_auto_rule(void)
{
    static const struct {
        const char *spec, *layer;
        int arch; /* 0: the default target */
        const char *tpl, *why;
    } want[] = {
        {"bench/specs/zoo-vgg-same.yaml", "conv1_1", 90, "conv2d_direct", "auto: direct, since C = 3 <= 3"},
        {"bench/specs/zoo-vgg-same.yaml", "conv1_2", 80, "conv2d_winograd",
         "auto: winograd, since K = 3, stride 1, C = 64 (a multiple of 8, at least 32), M = 64"},
        /* on sm_90 (as sm_90a) planes, but for 3x3 layers with C > 128 or M < 64: winograd */
        {"bench/specs/zoo-vgg-same.yaml", "conv1_2", 90, "conv2d_planes",
         "auto: planes, since the target is sm_90 (built as sm_90a: wgmma), C = 64 >= 16, M = 64 >= 16, K = 3 >= 2, "
         "C*K*K = 576 >= 256, stride 1, a 32x32 conv output and, 3x3, C = 64 <= 128, M = 64 >= 64"},
        {"bench/specs/zoo-vgg-same.yaml", "conv3_2", 90, "conv2d_winograd", "auto: winograd, since K = 3"},
        {"bench/specs/zoo-issue3x3.yaml", "conv2", 90, "conv2d_winograd", "auto: winograd, since K = 3"},
        {"bench/specs/zoo-vgg-same.yaml", "conv1_2", 0, "conv2d_igemm",
         "auto: igemm, since winograd's default tile does not fit the target: "},
        {"bench/specs/zoo-vgg-same.yaml", "conv1_2", 75, "conv2d_igemm", "shared memory"},
        /* TF32 tensor cores, C >= 16 and M >= 32: igemm_tc; on sm_75 or with fewer maps, igemm */
        {"bench/specs/zoo-linear.yaml", "conv2", 90, "conv2d_igemm_tc",
         "auto: igemm_tc, since the target has TF32 tensor cores (sm_90), C = 16 >= 16 and M = 40 >= 32 "
         "(else igemm, since C = 16 > 3)"},
        {"bench/specs/zoo-linear.yaml", "conv2", 75, "conv2d_igemm", "auto: igemm, since C = 16 > 3"},
        {"bench/specs/zoo-linear.yaml", "conv3", 90, "conv2d_igemm", "auto: igemm, since C = 40 > 3"},
        {"bench/specs/zoo-odd.yaml", "conv2", 90, "conv2d_igemm", "auto: igemm"},
        /* FP32 layers of large kernels, 4 or more times as many direct multiply-adds as the
         * transform's complex products, at the large batch: fft on every target */
        {"bench/specs/zoo-odd.yaml", "conv3", 80, "conv2d_fft",
         "auto: fft, since precision is fp32, stride 1, K = 5 >= 5, C = 30 and M = 50 >= 16, the 25x25 padded input "
         "fits a 28x28 transform and direct multiply-adds are 6.6 >= 4 times"},
        {"bench/specs/zoo-resnet-stem.yaml", "conv2", 90, "conv2d_igemm_tc", "auto: igemm_tc"},
        {"bench/specs/zoo-resnet-stem.yaml", "stem", 90, "conv2d_igemm", "auto: igemm, since C*K*K = 147 > 64"},
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", 80, "conv2d_fft", "the 26x26 padded input fits a 28x28 transform"},
        {"bench/specs/zoo-alex.yaml", "conv2", 80, "conv2d_igemm_tc", "auto: igemm_tc"},  /* 7x7 inputs: gain 2.1 */
        /* sm_90 alone (as sm_90a), C >= 16, M >= 16, K >= 2, C*K*K >= 256, stride 1, 9 pixels or more: planes */
        {"bench/specs/zoo-alex.yaml", "conv2", 90, "conv2d_planes",
         "auto: planes, since the target is sm_90 (built as sm_90a: wgmma), C = 48 >= 16, M = 96 >= 16, K = 5 >= 2, "
         "C*K*K = 1200 >= 256, stride 1, a 7x7 conv output\n"},
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", 90, "conv2d_fft", "7.2 >= 4 times the transform's complex products"},
        {"bench/specs/zoo-odd.yaml", "conv3", 90, "conv2d_fft", "C = 30 and M = 50 >= 16"},
        {"bench/specs/zoo-k7pad.yaml", "conv4", 90, "conv2d_fft", "K = 7 >= 5, C = 20 and M = 24 >= 16, the 15x15"},
        {"bench/specs/zoo-inception.yaml", "br5", 90, "conv2d_igemm", "auto: igemm"},   /* M = 8 */
        {"bench/specs/zoo-k7pad.yaml", "conv2", 90, "conv2d_igemm", "auto: igemm"},        /* M = 12 */
        {"bench/specs/zoo-linear.yaml", "conv2", 90, "conv2d_igemm_tc", "auto: igemm_tc"}, /* C*K*K = 144 */
        {"bench/specs/zoo-1x1.yaml", "expand", 90, "conv2d_igemm_tc", "auto: igemm_tc"},          /* C*K*K = 64 */
        {"bench/specs/zoo-resnet-stem.yaml", "conv3", 90, "conv2d_igemm_tc", "auto: igemm_tc"},  /* stride 2 */
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", 0, "conv2d_fft", "auto: fft"},
        {"bench/specs/zoo-awkward.yaml", "conv3", 90, "conv2d_planes", "auto: planes"},   /* 64x64 transform: gain 2.7 */
        {"bench/specs/zoo-bigk.yaml", "conv3", 90, "conv2d_igemm_tc", "M = 96 >= 32"},  /* a 2x2 conv output */
        /* 3x3 outputs: winograd's 2x2 tiles would cover 16 outputs for 9, so igemm_tc (or igemm) */
        {"bench/specs/zoo-alex.yaml", "conv3", 80, "conv2d_igemm_tc",
         "(else igemm, since winograd's 2x2 output tiles would cover 1.78x the 3x3 conv output (more than 1.2x))"},
        {"bench/specs/zoo-alex.yaml", "conv3", 90, "conv2d_planes", "a 3x3 conv output and, 3x3, C = 96 <= 128"},
        {"bench/specs/zoo-alex.yaml", "conv4", 75, "conv2d_igemm", "would cover 1.78x the 3x3 conv output"},
        /* 44x44 outputs, covered exactly: winograd */
        {"bench/specs/zoo-squeeze.yaml", "conv2", 80, "conv2d_winograd", "auto: winograd, since K = 3"},
        /* grouped layers: depthwise where groups = C = M, else direct, on every target */
        {"tests/gpu/layers-depthwise.yaml", "dw1", 90, "conv2d_depthwise", "auto: depthwise, since groups = C = M = 16"},
        {"tests/gpu/layers-depthwise.yaml", "dw2", 0, "conv2d_depthwise", "auto: depthwise"},
        {"tests/gpu/layers-depthwise.yaml", "gc", 90, "conv2d_direct",
         "auto: direct, the template that serves grouped layers (groups = 4: 6 channels into 3 maps a group)"},
    };
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    CHECK(s && o, "out of memory");
    for (size_t i = 0; s && o && i < sizeof want / sizeof *want; i++) {
        cg_target tg;
        if (want[i].arch) cg_aot_target(&want[i].arch, 1, &tg);
        if (cg_spec_load(want[i].spec, s, &e) || cg_generate_for(s, "x", want[i].arch ? &tg : NULL, o, &e)) {
            CHECK(0, "%s: %s", want[i].spec, e.msg);
            continue;
        }
        const cg_gen_kernel *k = conv_kernel(o, want[i].layer);
        CHECK(k && !strcmp(k->tpl, want[i].tpl) && strstr(k->source, want[i].why), "%s %s sm_%d: %s, '%s'",
              want[i].spec, want[i].layer, want[i].arch, k ? k->tpl : "none", want[i].why);
        cg_gen_free(o);
    }
    /* igemm_wg (sm_90 alone) where planes' 3x3 bound fails (C = 144 > 128) and winograd's
     * rule does not hold (M = 50, no multiple of 32): C*K*K >= 600, stride 1 */
    static const char wg_text[] = "network: wg\ninput: {channels: 144, height: 20, width: 20}\nlayers:\n"
                                  "  - {name: c, op: conv, M: 50, K: 3}\n  - {name: f, op: fc, out: 10}\n"
                                  "  - {name: p, op: softmax}\n";
    int arch = 90;
    cg_target tg;
    cg_aot_target(&arch, 1, &tg);
    if (s && o && cg_spec_parse("wg.yaml", wg_text, strlen(wg_text), s, &e) == 0 &&
        cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *k = conv_kernel(o, "c");
        CHECK(k && !strcmp(k->tpl, "conv2d_igemm_wg") && strstr(k->source, "C*K*K = 1296 >= 600"), "C=144 3x3: %s",
              k ? k->tpl : "none");
        cg_gen_free(o);
    } else {
        CHECK(0, "wg.yaml: %s", e.msg);
    }
    free(s), free(o);
}

/* Defaults on map counts no tile divides (sm_90): igemm_tc takes as many block
 * rows as 64-map tiles would and the fewest eights covering them (40 or 48 maps
 * one warp's, 56 too in one row: M = 50; in several rows 56 go to 64); igemm covers 23 maps with 24, not 32; direct, where
 * no divisor of M from 4 to 8 exists, unrolls a divisor from 9 to 32 (13, 17),
 * not one map, in blocks of 256 threads unless a thread holds more than 32
 * accumulators (13 maps pooled 2x2: 52, 128 threads). And a product of legal values over the former cap of 100,000
 * (igemm_tc on a 1x1 layer of 200 maps: 261,120) is examined whole. */
static void test_default_tiles(void)
{
    static const struct {
        const char *spec, *layer, *params, *strategy; /* strategy: written in place of auto (fft's layers) */
    } want[] = {
        {"bench/specs/zoo-awkward.yaml", "conv1", "block=256 maps_unroll=17 cols=1 ", NULL},
        {"bench/specs/zoo-awkward.yaml", "conv2", "bm=40 bn=128 bk=16 tm=40 tn=4 ", NULL},
        {"bench/specs/zoo-awkward.yaml", "conv3", "bm=40 bn=128 bk=16 tm=40 tn=4 ", NULL},
        {"bench/specs/zoo-awkward.yaml", "conv4", "bm=48 bn=128 bk=16 tm=48 tn=4 ", NULL},
        {"bench/specs/zoo-awkward.yaml", "conv5", "bm=64 bn=128 bk=24 tm=32 tn=8 ", NULL},
        {"bench/specs/zoo-stem96.yaml", "squeeze", "bm=40 bn=128 bk=24 tm=40 tn=4 ", NULL},
        {"bench/specs/zoo-stem96.yaml", "conv4", "bm=64 bn=128 bk=24 tm=32 tn=8 ", "igemm_tc"},
        {"bench/specs/zoo-prime.yaml", "conv1", "block=128 maps_unroll=13 cols=1 ", NULL},
        {"bench/specs/zoo-prime.yaml", "conv2", "bm=24 bn=128 bk=9 tm=12 tn=8 ", NULL},
        {"bench/specs/zoo-odd.yaml", "conv3", "bm=56 bn=128 bk=16 tm=56 tn=4 ", "igemm_tc"},
        {"bench/specs/zoo-bigk.yaml", "conv3", "bm=48 bn=128 bk=24 tm=48 tn=4 ", NULL},
        {"bench/specs/zoo-1x1.yaml", "conv1", "block=256 maps_unroll=8 cols=1 ", NULL},
    };
    int arch = 90;
    cg_target tg, tga;
    cg_aot_target(&arch, 1, &tga);
    tg = tga, tg.sm90a = 0;   /* igemm_tc's tiles: sm_90 without igemm_wg (a fat binary with sm_100 too) */
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    CHECK(s && o, "out of memory");
    for (size_t i = 0; s && o && i < sizeof want / sizeof *want; i++) {
        if (cg_spec_load(want[i].spec, s, &e)) {
            CHECK(0, "%s: %s", want[i].spec, e.msg);
            continue;
        }
        for (int j = 0; want[i].strategy && j < s->nlayers; j++)
            if (!strcmp(s->layers[j].name, want[i].layer))
                snprintf(s->layers[j].strategy, sizeof s->layers[j].strategy, "%s", want[i].strategy);
        if (cg_generate_for(s, "x", &tg, o, &e)) {
            CHECK(0, "%s: %s", want[i].spec, e.msg);
            continue;
        }
        const char *p;
        CHECK(params_has(conv_kernel(o, want[i].layer), want[i].params, &p), "%s %s: '%s' in %.80s", want[i].spec,
              want[i].layer, want[i].params, p ? p : "no params line");
        cg_gen_free(o);
    }
    /* igemm_wg's (sm_90 alone, the strategy written): the fewest eights covering M in as many
     * block rows as 64-map tiles would take, slices of 16, three blocks an SM where the estimate
     * fits 168 registers (a 64-map tile in two rows does not: occ=1), but one on padded layers
     * (two padded shapes spilled under occ=3's cap). planes's (auto, sm_90 alone): whole images
     * to 256 pixels, as many as fill 90 % of their m64 tiles (k7pad: 3 of 81 pixels, 4 tiles;
     * alex: 7 of 9 pixels, one tile), two tiles a warpgroup; larger maps in the tallest band of
     * at most 256 pixels within 5 % of the best fill (7x7-large: 4 rows of 55, not 1) */
    static const struct {
        const char *spec, *layer, *tpl, *params;
    } wg[] = {
        {"bench/specs/zoo-odd.yaml", "conv3", "conv2d_igemm_wg", "bm=56 bn=128 wgs=1 bk=16 occ=3"},
        {"bench/specs/zoo-awkward.yaml", "conv4", "conv2d_igemm_wg", "bm=48 bn=128 wgs=1 bk=16 occ=1"},
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", "conv2d_igemm_wg", "bm=64 bn=128 wgs=1 bk=16 occ=1"},
        {"bench/specs/zoo-k7pad.yaml", "conv4", "conv2d_planes", "ib=3 rows=9 wgs=2 bm=24 bk=32 occ=2"},
        {"bench/specs/zoo-alex.yaml", "conv3", "conv2d_planes", "ib=7 rows=3 wgs=1 bm=64 bk=32 occ=1"},
        {"bench/specs/zoo-7x7-large.yaml", "conv2", "conv2d_planes", "ib=1 rows=4 wgs=4 bm=64 bk=32 occ=1"}, /* one block an SM: a warpgroup a tile */
        {"bench/specs/zoo-odd.yaml", "conv3", "conv2d_planes", "ib=1 rows=3 wgs=1 bm=56 bk=32 occ=3"},
    };
    for (size_t i = 0; s && o && i < sizeof wg / sizeof *wg; i++) {
        if (cg_spec_load(wg[i].spec, s, &e)) {
            CHECK(0, "%s: %s", wg[i].spec, e.msg);
            continue;
        }
        for (int j = 0; j < s->nlayers; j++)
            if (!strcmp(s->layers[j].name, wg[i].layer))
                snprintf(s->layers[j].strategy, sizeof s->layers[j].strategy, "%s", wg[i].tpl + strlen("conv2d_"));
        if (cg_generate_for(s, "x", &tga, o, &e)) {
            CHECK(0, "%s: %s", wg[i].spec, e.msg);
            continue;
        }
        const char *p;
        const cg_gen_kernel *k = conv_kernel(o, wg[i].layer);
        CHECK(k && !strcmp(k->tpl, wg[i].tpl) && params_has(k, wg[i].params, &p), "%s %s: '%s' in %.80s",
              wg[i].spec, wg[i].layer, wg[i].params, k && p ? p : "no params line");
        cg_gen_free(o);
    }
    /* a partial --params (the harness, the tuner) is completed as a spec's partial params are:
     * planes with fp=1 alone on zoo-vgg-same conv1_2 searches the rest (occ=1, even rows);
     * the declared defaults (occ=2) were refused */
    if (s && cg_spec_load("bench/specs/zoo-vgg-same.yaml", s, &e) == 0) {
        char why[256];
        cg_gen_kernel k;
        cg_kernel_launch l;
        int rc = cg_gen_check_one_for(s, &tga, 1, "conv2d_planes", "fp=1", why, sizeof why, &e);
        CHECK(rc == 0, "planes fp=1 on conv1_2: rc %d, %s", rc, rc == 1 ? why : e.msg);
        rc = cg_gen_emit_one_for(s, &tga, 1, "conv2d_planes", "fp=1", &k, &l, &e);
        CHECK(rc == 0 && strstr(l.params, " occ=1 fp=1") && strstr(l.params, "rows=8 "), "planes fp=1 emitted: %s",
              rc ? e.msg : l.params);
        if (!rc) cg_gen_kernel_free(&k);
        CHECK(cg_gen_check_one_for(s, &tga, 1, "conv2d_planes", "ib=1 rows=8 wgs=2 bm=64 bk=32 occ=2 fp=1", why, sizeof why, &e) == 1 &&
                  strstr(why, "occ=2"),
              "a full refused set is still refused: %s", why);
    } else {
        CHECK(0, "zoo-vgg-same: %s", e.msg);
    }
    cg_candidates c;
    if (s && cg_spec_load("bench/specs/zoo-awkward.yaml", s, &e) == 0 &&
        cg_gen_candidates_for(s, &tg, 4, "conv2d_igemm_tc", 0, 0, &c, &e) == 0) {
        CHECK(c.total > 100000 && c.examined == c.total && !c.note[0] && c.n > 0,
              "zoo-awkward conv5 igemm_tc: %lld combinations, %lld examined, %d accepted, note '%s'", c.total,
              c.examined, c.n, c.note);
        cg_candidates_free(&c);
    } else {
        CHECK(0, "zoo-awkward conv5 candidates: %s", e.msg);
    }
    free(s), free(o);
}

/* `strategy: auto` for fc layers (their default): vec, its loads as wide as the
 * input size allows (float4, float2 for zoo-odd's 22,050, single floats for an
 * odd 10,933), with its default split of the reduction over a cluster on sm_90
 * (45,000 inputs into 10 outputs: 79 tiles, split 8) and none before; a
 * written strategy stays. */
static void test_auto_fc(void)
{
    static const struct {
        const char *spec, *layer;
        int arch; /* 0: the default target */
        const char *tpl, *why, *params;
    } want[] = {
        {"bench/specs/zoo-awkward.yaml", "fc1", 90, "fc_vec", "auto: vec (float4 loads for 45000 inputs)", "split=8"},
        {"bench/specs/zoo-awkward.yaml", "fc1", 0, "fc_vec", "auto: vec", "split=1"},
        {"bench/specs/zoo-prime.yaml", "fc1", 90, "fc_vec", "auto: vec (float4 loads for 18032 inputs)", "split=8"},
        {"bench/specs/zoo-odd.yaml", "fc1", 90, "fc_vec", "auto: vec (float2 loads for 22050 inputs)", "split=8"},
        /* 13 maps of 29x29: 10,933 inputs, loaded one float at a time */
        {"tests/gpu/layers-fc-odd.yaml", "fc1", 0, "fc_vec", "auto: vec (single-float loads for 10933 inputs)", "split=1"},
        {"specs/ece408-2017.yaml", "fc1", 90, "fc_vec", "// layer:      fc1", "bm=128 bn=64 bk=16 tm=8 tn=8 split=1"},
        {"specs/ece408-2017.yaml", "fc2", 90, "fc_vec", "auto: vec (float4 loads for 500 inputs)", "split=2"},
        /* 10,816 inputs into 140 outputs: 237 default tiles, no split (split 4 lost 10 % on an H100) */
        {"specs/ece408-2018sp.yaml", "fc1", 90, "fc_vec", "// layer:      fc1", "bm=128 bn=32 bk=16 tm=8 tn=4 split=1"},
    };
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    CHECK(s && o, "out of memory");
    for (size_t i = 0; s && o && i < sizeof want / sizeof *want; i++) {
        cg_target tg;
        if (want[i].arch) cg_aot_target(&want[i].arch, 1, &tg);
        if (cg_spec_load(want[i].spec, s, &e) || cg_generate_for(s, "x", want[i].arch ? &tg : NULL, o, &e)) {
            CHECK(0, "%s: %s", want[i].spec, e.msg);
            continue;
        }
        const cg_gen_kernel *k = layer_kernel(o, want[i].layer, "fc_");
        const char *p;
        CHECK(k && !strcmp(k->tpl, want[i].tpl) && strstr(k->source, want[i].why) && params_has(k, want[i].params, &p),
              "%s %s sm_%d: %s, want %s '%s' '%s'", want[i].spec, want[i].layer, want[i].arch, k ? k->tpl : "none",
              want[i].tpl, want[i].why, want[i].params);
        cg_gen_free(o);
    }
    /* 363 inputs (odd: single-float loads, 8-deep slices by default) into 10: the
     * split's default counts the 46 slices bk=8 makes (two blocks of 23), not the
     * 23 that 16-deep ones would (no split) */
    static const char odd[] = "network: fc-363\ninput: {channels: 3, height: 11, width: 11}\nseed: 1\n"
                              "layers:\n  - {name: fc1, op: fc, out: 10}\n  - {name: prob, op: softmax}\n";
    cg_target tg;
    int arch = 90;
    cg_aot_target(&arch, 1, &tg);
    if (s && o && !cg_spec_parse("fc-363.yaml", odd, strlen(odd), s, &e) && !cg_generate_for(s, "x", &tg, o, &e)) {
        const cg_gen_kernel *k = layer_kernel(o, "fc1", "fc_");
        const char *p = NULL;
        CHECK(k && params_has(k, "bk=8", &p) && params_has(k, "split=2", &p), "fc-363 sm_90: %.80s, want bk=8 split=2",
              p ? p : "no kernel");
        cg_gen_free(o);
    } else
        CHECK(0, "fc-363: %s", e.msg);
    free(s), free(o);
}

/* conv2d_slide leaves the padding's columns out of a thread's unrolled products
 * where the thread holds a whole output row (its columns literals), and only there. */
static void test_slide_colskip(void)
{
    static const struct {
        const char *spec, *layer;
        int skips;
    } want[] = {
        {"tests/gpu/layers-slide-pad.yaml", "p1", 1}, /* 5x5, padding 2, cols = the row of 12 */
        {"tests/gpu/layers-slide-pad.yaml", "p2", 1}, /* max2 pooled: 6 pooled columns, the row */
        {"tests/gpu/layers-slide-pad.yaml", "p3", 1}, /* 7x7, padding 3, row of 6 */
        {"tests/gpu/layers-slide.yaml", "s3", 0},     /* padded, but a row of 10 in threads of 4 */
        {"tests/gpu/layers-slide.yaml", "s1", 0},     /* no padding */
    };
    const char *mark = "those in the padding read zeros, left out";
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    CHECK(s && o, "out of memory");
    for (size_t i = 0; s && o && i < sizeof want / sizeof *want; i++) {
        if (cg_spec_load(want[i].spec, s, &e) || cg_generate_for(s, "x", NULL, o, &e)) {
            CHECK(0, "%s: %s", want[i].spec, e.msg);
            continue;
        }
        const cg_gen_kernel *k = conv_kernel(o, want[i].layer);
        CHECK(k && !strcmp(k->tpl, "conv2d_slide") && !strstr(k->source, mark) == !want[i].skips,
              "%s %s: the padding's columns %s", want[i].spec, want[i].layer,
              want[i].skips ? "skipped" : "computed (the columns are not literals)");
        cg_gen_free(o);
    }
    free(s), free(o);
}

/* The target the tensor-core tests generate for: sm_90 with its 227 KB of shared memory. */
static void sm90_target(cg_target *tg)
{
    cg_target_default(tg);
    tg->cc = 90, tg->max_shared_optin = 227 * 1024;
}

/* conv2d_igemm_tc's slices of a depth bk that does not divide C*K*K: the first
 * slice is the short one (its first rows zeros), so that only the prologue's
 * copies test rows and the main loop's carry no test against the reduction's end;
 * where bk divides it, no slice is short. (Both run against the CPU reference in
 * test_emulate and on the GPU in test-gpu.) */
static void test_tc_short_slice(void)
{
    static const struct {
        const char *layer, *rows; /* rows: the first slice's zero-row test, or NULL: none */
    } want[] = {
        {"b1", "(!first || (r) >= 10)"}, /* 6*5*5 = 150 in 5 slices of 32: 10 zero rows */
        {"b3", "(!first || (r) >= 16)"}, /* 16*3*3 = 144 in 4 slices of 40, padded (its own row test too) */
        {"b9", NULL},                    /* 24*9*9 = 1944 in 243 slices of 8 */
    };
    cg_target tg;
    sm90_target(&tg);
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    CHECK(s && o, "out of memory");
    if (!s || !o || cg_spec_load("tests/gpu/layers-slices-tc.yaml", s, &e) || cg_generate_for(s, "x", &tg, o, &e)) {
        CHECK(0, "layers-slices-tc: %s", e.msg);
        free(s), free(o);
        return;
    }
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const cg_gen_kernel *k = conv_kernel(o, want[i].layer);
        CHECK(k && !strcmp(k->tpl, "conv2d_igemm_tc"), "layers-slices-tc %s: an igemm_tc kernel", want[i].layer);
        if (!k) continue;
        if (want[i].rows) {
            CHECK(strstr(k->source, want[i].rows) && strstr(k->source, "issue(s, s, s == 0);") &&
                      strstr(k->source, "% 2, false);") && !strstr(k->source, "s * 32 + (r) <"),
                  "layers-slices-tc %s: zero rows in the first slice only (%s), tested in the prologue alone",
                  want[i].layer, want[i].rows);
        } else {
            CHECK(!strstr(k->source, "bool first"), "layers-slices-tc %s: no short slice", want[i].layer);
        }
    }
    cg_gen_free(o);
    free(s), free(o);
}

/* Every accepted candidate must generate: a configuration that check accepts and
 * kernel cannot emit is a failure the tuner meets as "compile-failed" (bk=8 under
 * a 9-wide kernel once divided by zero in conv2d_igemm_tc's slice arithmetic). For
 * every conv layer of a few specs and every conv template (conv2d_pointwise alone on its 16-bit
 * test network), for sm_90: each
 * parameter's every accepted value at least once, and every step-th candidate
 * (about 30 a template and layer: 60 took 384 s of make test's CPU time), emitted through one kept sandbox (cg_gen_emitter);
 * every 25th of them also emitted in a sandbox of its own, and the two sources must be
 * the same to the byte (a planner or template keeping state between calls would show
 * here); no NVRTC. */
static void test_candidates_emit(void)
{
    const char *specs[] = {"bench/specs/zoo-bigk.yaml", "bench/specs/zoo-odd.yaml", "bench/specs/zoo-resnet-stem.yaml",
                           "specs/ece408-2018fa.yaml", "tests/gpu/layers-slices-tc.yaml", "tests/gpu/layers-slide.yaml",
                           "tests/gpu/layers-pointwise-bf16.yaml"};
    /* a spec's one template, where it is there for that template alone (the others' 16-bit candidates
     * would take another minute) */
    const char *only[] = {NULL, NULL, NULL, NULL, NULL, NULL, "conv2d_pointwise"};
    cg_target tg;
    sm90_target(&tg);
    cg_spec *s = malloc(sizeof *s);
    CHECK(s != NULL, "out of memory");
    if (!s) return;
    int emitted = 0, failed = 0, compared = 0, differ = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cg_gen_emitter *em = NULL;
    cg_err ee = {""};
    CHECK(cg_gen_emitter_open(&em, &ee) == 0, "emitter: %s", ee.msg);
    for (size_t f = 0; f < sizeof specs / sizeof specs[0]; f++) {
        cg_err e = {""};
        if (cg_spec_load(specs[f], s, &e)) {
            CHECK(0, "%s: %s", specs[f], e.msg);
            continue;
        }
        /* the values seen so far in this spec, as " template/name=value " words */
        static char seen[65536];
        snprintf(seen, sizeof seen, " ");
        for (int li = 0; li < s->nlayers; li++) {
            if (s->layers[li].op != CG_OP_CONV) continue;
            /* the conv templates the tuner measures */
            const char *const *tpls = cg_tune_templates(&s->layers[li]);
            for (size_t t = 0; tpls[t]; t++) {
                if (only[f] && strcmp(only[f], tpls[t])) continue;
                cg_candidates c;
                if (cg_gen_candidates_for(s, &tg, li, tpls[t], 0, 0, &c, &e)) {
                    CHECK(0, "%s layer %d %s: %s", specs[f], li, tpls[t], e.msg);
                    continue;
                }
                /* every value of every parameter once a template and spec, and about ten more configurations
                 * a template and layer (each value once a layer and thirty more took 4.5 of make test's CPU
                 * minutes, 6,163 candidates) */
                int step = c.n / 10 + 1;
                for (int i = 0; i < c.n; i++) {
                    int fresh = 0;
                    char words[512];
                    snprintf(words, sizeof words, "%s", c.c[i].params);
                    for (char *w = strtok(words, " "); w; w = strtok(NULL, " ")) {
                        char key[160];
                        snprintf(key, sizeof key, " %s/%s ", tpls[t], w);
                        if (!strstr(seen, key) && strlen(seen) + strlen(key) < sizeof seen) {
                            strcat(seen, key + 1);
                            fresh = 1;
                        }
                    }
                    if (!fresh && i % step) continue;
                    cg_gen_kernel k;
                    cg_kernel_launch l;
                    if (cg_gen_emit_one_with(em, s, &tg, li, tpls[t], c.c[i].params, &k, &l, &e)) {
                        if (failed++ < 5) CHECK(0, "%s layer %d %s %s: %s", specs[f], li, tpls[t], c.c[i].params, e.msg);
                        continue;
                    }
                    if (emitted++ % 10 == 0) {
                        cg_gen_kernel alone;
                        cg_kernel_launch fl;
                        compared++;
                        if (cg_gen_emit_one_for(s, &tg, li, tpls[t], c.c[i].params, &alone, &fl, &e) ||
                            alone.source_len != k.source_len || memcmp(alone.source, k.source, k.source_len)) {
                            if (differ++ < 3)
                                CHECK(0, "%s layer %d %s %s: a kept sandbox's source differs from a fresh one's",
                                      specs[f], li, tpls[t], c.c[i].params);
                        }
                        cg_gen_kernel_free(&alone);
                    }
                    cg_gen_kernel_free(&k);
                }
                cg_candidates_free(&c);
            }
        }
    }
    cg_gen_emitter_close(em);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("note: %d accepted candidates emitted for sm_90 (%d failed) in %.1f s, %d of them again in a fresh "
           "sandbox\n", emitted, failed, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, compared);
    CHECK(differ == 0 && compared > 100, "kept and fresh sandboxes emit the same sources: %d of %d differ", differ,
          compared);
    CHECK(failed == 0 && emitted > 1000, "every accepted candidate tried emits: %d of %d", emitted - failed, emitted);
    free(s);
}

/* conv2d_planes' fused pool (fp=1): refused, with the reason, for a pool it cannot fuse
 * (3x3 of stride 2) and for bands of an odd number of rows (they would split windows);
 * taken for a 2x2 max pool in bands of two rows, where no pool kernel follows. */
static void test_planes_fp(void)
{
    static const struct {
        const char *pool, *params, *want; /* want: NULL = generates */
    } c[] = {
        {"max3, pool_stride: 2", "{rows: 12, fp: 1}", "fp=1: the layer has no 2x2 pool of stride 2 to fuse"},
        {"max2", "{rows: 3, fp: 1}", "fp=1: bands of 3 rows would split pooling windows"},
        {"max2", "{rows: 2, fp: 1}", NULL},
    };
    int arch = 90;
    cg_target tg;
    cg_aot_target(&arch, 1, &tg);
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    CHECK(s && o, "out of memory");
    for (size_t i = 0; s && o && i < sizeof c / sizeof *c; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "network: fp\ninput: {channels: 16, height: 14, width: 14}\nlayers:\n"
                 "  - {name: c, op: conv, M: 32, K: 3, padding: 1, pool: %s, strategy: planes, params: %s}\n"
                 "  - {name: f, op: fc, out: 10}\n  - {name: p, op: softmax}\n",
                 c[i].pool, c[i].params);
        cg_err e = {""};
        int rc = cg_spec_parse("fp.yaml", text, strlen(text), s, &e) || cg_generate_for(s, "x", &tg, o, &e);
        if (c[i].want) {
            CHECK(rc && strstr(e.msg, c[i].want), "%s %s: refused with '%s', got '%s'", c[i].pool, c[i].params,
                  c[i].want, rc ? e.msg : "a kernel");
        } else {
            int pools = 0;
            const cg_gen_kernel *k = rc ? NULL : conv_kernel(o, "c");
            for (int j = 0; !rc && j < o->nkernels; j++) pools += !strncmp(o->k[j].tpl, "pool", 4);
            CHECK(k && strstr(k->kernel, "_fp_pool2") && pools == 0, "%s %s: %s, %d pool kernels (%s)", c[i].pool,
                  c[i].params, k ? k->kernel : "no kernel", pools, e.msg);
            if (!rc) cg_gen_free(o);
        }
    }
    /* fp=1 given alone: the other defaults are chosen for it (even bands; 3 tiles, one block
     * an SM: a warpgroup each), not searched around fp=0's (zoo-5x5-c64's conv2 took bands
     * of 22 rows and bm=16 that way) */
    const char *c64 = "network: c64\ninput: {channels: 64, height: 26, width: 26}\nlayers:\n"
                      "  - {name: c, op: conv, M: 128, K: 5, activation: relu, pool: max2, bias: true, strategy: planes,\n"
                      "     params: {fp: 1}}\n  - {name: f, op: fc, out: 10}\n";
    {
        cg_err e = {""};
        int rc = s && o && (cg_spec_parse("c64.yaml", c64, strlen(c64), s, &e) || cg_generate_for(s, "x", &tg, o, &e));
        const cg_gen_kernel *k = rc || !o ? NULL : conv_kernel(o, "c");
        const char *line = NULL;
        CHECK(k && params_has(k, "ib=1 rows=8 wgs=3 bm=64 bk=32 occ=1 fp=1", &line), "fp=1 alone: %s",
              k ? (line ? line : "no params line") : e.msg);
        if (!rc && o) cg_gen_free(o);
    }
    /* a layer no block of planes holds (every channel of one output row's input rows passes
     * shared memory) is refused with that reason, not the first refusal its defaults meet */
    const char *big = "network: big\ninput: {channels: 200, height: 60, width: 130}\nlayers:\n"
                      "  - {name: c, op: conv, M: 64, K: 5, strategy: planes}\n  - {name: f, op: fc, out: 10}\n";
    cg_err e = {""};
    int rc = s && o && (cg_spec_parse("big.yaml", big, strlen(big), s, &e) || cg_generate_for(s, "x", &tg, o, &e));
    CHECK(rc && strstr(e.msg, "a band of 1 output row reads 5 input rows of each of the 200 channels (planes 130 wide)"),
          "planes on C=200, 130 wide: %s", rc ? e.msg : "a kernel");
    if (!rc && s && o) cg_gen_free(o);
    free(s), free(o);
}

/* slide on a layer no tile of it fits is refused with that reason (not the first refusal
 * of an illegal fallback); a layer whose stages of rows never pair up (C = 115, K = 5: every
 * divisor odd, and all 115 channels' weights do not fit) takes pf=1 by default, not pf=2 */
static void test_slide_defaults(void)
{
    int arch = 90;
    cg_target tg;
    cg_aot_target(&arch, 1, &tg);
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    CHECK(s && o, "out of memory");
    if (!s || !o) return free(s), free(o);
    const char *none = "network: none\ninput: {channels: 81, height: 17, width: 127}\nlayers:\n"
                       "  - {name: c, op: conv, M: 217, K: 1, pool: avg2, strategy: slide}\n"
                       "  - {name: f, op: fc, out: 10}\n";
    cg_err e = {""};
    int rc = cg_spec_parse("none.yaml", none, strlen(none), s, &e) || cg_generate_for(s, "x", &tg, o, &e);
    CHECK(rc && strstr(e.msg, "no tile fits this layer: M=217 splits only into groups of tm = 1, 7, 31 maps"),
          "slide on M=217, a pooled row of 63: %s", rc ? e.msg : "a kernel");
    if (!rc) cg_gen_free(o);
    const char *odd = "network: odd\ninput: {channels: 115, height: 1, width: 95}\nlayers:\n"
                      "  - {name: c, op: conv, M: 256, K: 5, padding: [4, 2, 1, 3], strategy: slide}\n"
                      "  - {name: f, op: fc, out: 10}\n";
    e = (cg_err){""};
    rc = cg_spec_parse("odd.yaml", odd, strlen(odd), s, &e) || cg_generate_for(s, "x", &tg, o, &e);
    const cg_gen_kernel *k = rc ? NULL : conv_kernel(o, "c");
    CHECK(k && strstr(k->kernel, "x0p1o1"), "slide on C=115, K=5: %s", k ? k->kernel : e.msg);
    if (!rc) cg_gen_free(o);
    free(s), free(o);
}

/* The input kernel's name carries the spec's scale and offset: two networks of one input size
 * and other scaling get input kernels of other names (their sources linked into one program
 * would clash otherwise), and one scaling the same name. */
static void test_input_names(void)
{
    static const char *const scaling[] = {"scale: 0.00392156862745098, offset: 0.0",
                                          "scale: 0.00392156862745098, offset: -0.5", "scale: 1.0, offset: 0.0",
                                          "scale: 0.00392156862745098, offset: 0.0"};
    char names[4][128] = {{0}};
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    CHECK(s && o, "out of memory");
    if (!s || !o) return free(s), free(o);
    for (int i = 0; i < 4; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "network: n%d\ninput: {channels: 1, height: 28, width: 28, %s}\nlayers:\n"
                 "  - {name: f, op: fc, out: 10}\n",
                 i, scaling[i]);
        cg_err e = {""};
        int rc = cg_spec_parse("n.yaml", text, strlen(text), s, &e) || cg_generate_for(s, "x", NULL, o, &e);
        const cg_gen_kernel *k = rc ? NULL : layer_kernel(o, "input", "input_u8");
        for (int j = 0; !rc && !k && j < o->nkernels; j++)
            if (!strcmp(o->k[j].tpl, "input_u8")) k = &o->k[j];
        CHECK(k, "%s: %s", scaling[i], rc ? e.msg : "no input_u8 kernel");
        if (k) snprintf(names[i], sizeof names[i], "%s", k->kernel);
        if (!rc) cg_gen_free(o);
    }
    CHECK(strcmp(names[0], names[1]) && strcmp(names[0], names[2]) && strcmp(names[1], names[2]),
          "other scaling, other names: %s %s %s", names[0], names[1], names[2]);
    CHECK(!strcmp(names[0], names[3]) && strstr(names[0], "input_u8_e784_b256_s3b808081o00000000"),
          "one scaling, one name: %s %s", names[0], names[3]);
    free(s), free(o);
}

/* Grouped layers: every conv template but direct and depthwise refuses them in
 * its check, naming the groups; depthwise refuses layers other than groups = C
 * = M; direct refuses a map group across two channel groups; at a small batch
 * a grouped layer keeps auto's grouped choice. */
static void test_groups_refused(void)
{
    static const char *const others[] = {"conv2d_igemm", "conv2d_igemm_tc", "conv2d_igemm_wg", "conv2d_planes",
                                         "conv2d_slide", "conv2d_winograd"};
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    char whybuf[256], *why = whybuf;
    if (!s || !o || cg_spec_load("tests/gpu/layers-depthwise.yaml", s, &e)) {
        CHECK(0, "layers-depthwise: %s", e.msg);
        return free(s), free(o);
    }
    /* layer 2 (dw1): depthwise, 16 groups; layer 5 (gc): 4 groups */
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        for (int li = 1; li <= 4; li += 3) {
            why[0] = 0;
            CHECK(cg_gen_check_one(s, li, others[i], "", why, sizeof whybuf, &e) == 1, "%s on layer %d accepted",
                  others[i], li + 1);
            CHECK_CONTAINS(why, "reduces over all C channels for every map; this layer has groups = ");
        }
    }
    CHECK(cg_gen_check_one(s, 4, "conv2d_depthwise", "", why, sizeof whybuf, &e) == 1, "depthwise on 4 groups");
    CHECK_CONTAINS(why, "conv2d_depthwise serves depthwise layers (groups = C = M); this one has C = 24, M = 12, groups = 4");
    CHECK(cg_gen_check_one(s, 0, "conv2d_depthwise", "", why, sizeof whybuf, &e) == 1, "depthwise on one group");
    CHECK(cg_gen_check_one(s, 1, "conv2d_depthwise", "", why, sizeof whybuf, &e) == 0, "depthwise refused dw1: %s", why);
    CHECK(cg_gen_check_one(s, 1, "conv2d_direct", "", why, sizeof whybuf, &e) == 0, "direct refused dw1: %s", why);
    /* gc2: 36 maps in 2 groups of 18: maps_unroll 4 would straddle two groups */
    CHECK(cg_gen_check_one(s, 5, "conv2d_direct", "maps_unroll=4", why, sizeof whybuf, &e) == 1, "maps_unroll 4 of 18");
    CHECK_CONTAINS(why, "maps_unroll=4 must divide the 18 maps of each of the 2 channel groups");
    /* a small batch: grouped layers keep depthwise and direct */
    cg_target tg;
    cg_target_default(&tg);
    tg.batch = 1;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *k = conv_kernel(o, "dw1"), *g = conv_kernel(o, "gc");
        CHECK(k && !strcmp(k->tpl, "conv2d_depthwise"), "batch 1 dw1: %s", k ? k->tpl : "none");
        CHECK(g && !strcmp(g->tpl, "conv2d_direct"), "batch 1 gc: %s", g ? g->tpl : "none");
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-depthwise at batch 1: %s", e.msg);
    }
    /* a grouped layer under a strategy that cannot serve it: refused at the layer */
    static const char text[] = "network: g\ninput: {channels: 8, height: 8, width: 8}\nlayers:\n"
                               "  - {name: c, op: conv, M: 8, K: 3, groups: 2, strategy: igemm}\n";
    if (cg_spec_parse("g.yaml", text, strlen(text), s, &e) == 0) {
        CHECK(cg_generate(s, "x", o, &e) != 0, "igemm generated a grouped layer");
        CHECK_CONTAINS(e.msg, "g.yaml:4:");
        CHECK_CONTAINS(e.msg, "conv2d_igemm reduces over all C channels for every map; this layer has groups = 2");
    } else {
        CHECK(0, "g.yaml: %s", e.msg);
    }
    free(s), free(o);
}

/* Split reductions: at bucket 1 the planner splits layers-splitk's deep layers
 * (conv2d_igemm split=S, its partials into "<layer>.partials", then splitk_reduce
 * writing the layer's tensor), S from the target's SMs (100 when unknown); at
 * bucket 8 where the large-batch choice launches blocks for fewer than half the SMs
 * (conv2d_igemm_tc on sm_80); at the large batch nothing is split; a split the
 * reduction cannot take is refused naming split. */
static void test_split_rule(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    const char *line = NULL;
    if (!s || !o || cg_spec_load("tests/gpu/layers-splitk.yaml", s, &e)) {
        CHECK(0, "layers-splitk: %s", e.msg);
        return free(s), free(o);
    }
    cg_target tg;
    cg_target_default(&tg);
    tg.batch = 1;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        /* c3: C*K*K 2304 on 8x8 maps, 2 column tiles x 8 map tiles of one warp: 16 warps */
        const cg_gen_kernel *k = conv_kernel(o, "c3"), *r = layer_kernel(o, "c3", "splitk_reduce");
        CHECK(k && !strcmp(k->tpl, "conv2d_igemm") && params_has(k, "split=32", &line), "c3 at batch 1: %s",
              line ? line : "none");
        CHECK(k && strstr(k->kernel, "_z32"), "c3's kernel name: %s", k ? k->kernel : "none");
        if (k) CHECK_CONTAINS(k->source, "split 32 ways (C*K*K = 2304 in parts of 72): 16 warps at 1 image, "
                                         "under 8 for each of an assumed 100 SMs");
        if (k) CHECK_CONTAINS(k->source, "out += (long long)blockIdx.z * n * 4096;");
        CHECK(r != NULL, "c3: no splitk_reduce kernel");
        /* c2: C*K*K 576 keeps 64 a part: 8, not 16; c4's 1x1 256: 4 */
        CHECK(params_has(conv_kernel(o, "c2"), "split=8", &line), "c2: %s", line ? line : "none");
        CHECK(params_has(conv_kernel(o, "c4"), "split=4", &line), "c4: %s", line ? line : "none");
        CHECK_CONTAINS(o->manifest, " layer=c3 template=conv2d_igemm in=c2 out=c3.partials grid=N*64/32,8,32 ");
        CHECK_CONTAINS(o->manifest, " layer=c3 template=splitk_reduce in=c3.partials out=c3 ");
        CHECK_CONTAINS(o->manifest, "\ntensor c3.partials f32 131072\n");
        /* the padded pool after a split conv: conv -> partials -> reduce (bias) -> pool (relu) */
        CHECK_CONTAINS(o->manifest, " template=splitk_reduce in=c4.conv.partials out=c4.conv ");
        CHECK_CONTAINS(o->manifest, " template=pool in=c4.conv out=c4 ");
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-splitk at batch 1: %s", e.msg);
    }
    /* a device's 132 SMs: c2 would take 16 parts for 1,056 warps, but keeps 72 of C*K*K a part */
    tg.sms = 132;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *k = conv_kernel(o, "c3");
        if (k) CHECK_CONTAINS(k->source, "under 8 for each of the target's 132 SMs");
        CHECK(params_has(conv_kernel(o, "c2"), "split=8", &line), "c2 on 132 SMs: %s", line ? line : "none");
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-splitk at batch 1, 132 SMs: %s", e.msg);
    }
    /* the large batch: no split, no reduce, and split=1 not listed */
    cg_target_default(&tg);
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        CHECK(!strstr(o->manifest, "splitk_reduce") && !strstr(o->manifest, ".partials"), "large batch split");
        for (int i = 0; i < o->nkernels; i++)
            CHECK(strcmp(o->k[i].tpl, "conv2d_igemm") || !params_has(&o->k[i], "split=", &line),
                  "large batch: %s lists split: %s", o->k[i].kernel, line);
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-splitk at the large batch: %s", e.msg);
    }
    /* bucket 8: the large-batch choice (igemm's 64x128 tiles) where it launches as many
     * blocks as the SMs, else its default tiles split as split_of splits them (c7, 2x2: 2
     * blocks at 8 images, split 8 ways); a 3x3 stride-1 layer that would split takes
     * winograd's small tiles instead (c3: 4 blocks of igemm, 32 parts; 64 of winograd) */
    cg_target_default(&tg);
    tg.batch = 8;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *k = conv_kernel(o, "c7");
        CHECK(k && !strcmp(k->tpl, "conv2d_igemm") && params_has(k, "bm=64 bn=128 bk=16 tm=8 tn=8 occ=1 stages=2 split=8",
                                                                 &line), "c7 at bucket 8: %s", line ? line : "none");
        if (k) CHECK_CONTAINS(k->source, "small batch: igemm in 64x128 tiles, split, since igemm would launch 2 blocks "
                                         "at 8 images, fewer than half of an assumed 100 SMs; split 8 ways (C*K*K = 512 in "
                                         "parts of 64): 8 warps at 8 images, under 8 for each of an assumed 100 SMs");
        CHECK(layer_kernel(o, "c7", "splitk_reduce") != NULL, "c7 at bucket 8: no splitk_reduce");
        k = conv_kernel(o, "c3");
        CHECK(k && !strcmp(k->tpl, "conv2d_winograd") && params_has(k, "mt=2 bm=8 bn=16 cs=8 tm=8 tn=4 xg=1", &line),
              "c3 at bucket 8: %s", line ? line : "none");
        if (k) CHECK_CONTAINS(k->source, "small batch: winograd F(2x2, 3x3) in 8x16 tiles, 8 channels a slice (64 blocks), "
                                         "since the network is generated for 8 images and igemm would split 32 ways");
        CHECK(layer_kernel(o, "c3", "splitk_reduce") == NULL, "c3 at bucket 8: a splitk_reduce");
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-splitk at bucket 8: %s", e.msg);
    }
    /* on 4 SMs c3's 4 blocks are enough; c5's one block is not */
    tg.sms = 4;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        CHECK(!params_has(conv_kernel(o, "c3"), "split=", &line), "c3 on 4 SMs: %s", line ? line : "none");
        CHECK(params_has(conv_kernel(o, "c5"), "split=", &line), "c5 on 4 SMs: %s", line ? line : "none");
        if (conv_kernel(o, "c5")) CHECK_CONTAINS(conv_kernel(o, "c5")->source, "fewer than half of the target's 4 SMs");
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-splitk at bucket 8, 4 SMs: %s", e.msg);
    }
    /* sm_80 at bucket 8 (layers-splitk8-tc): conv2d_igemm_tc's default tiles, split, its
     * pooled layers too; at the large batch nothing is split */
    if (cg_spec_load("tests/gpu/layers-splitk8-tc.yaml", s, &e) == 0) {
        cg_target_default(&tg);
        tg.cc = 80;
        tg.batch = 8;
        if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
            const cg_gen_kernel *k = conv_kernel(o, "c4"), *k2 = conv_kernel(o, "c2");
            CHECK(k && !strcmp(k->tpl, "conv2d_igemm_tc") && params_has(k, "split=2", &line), "c4 at bucket 8: %s",
                  line ? line : "none");
            if (k) CHECK_CONTAINS(k->source, "small batch: igemm_tc in 48x128 tiles, split, since igemm_tc would launch "
                                             "1 block at 8 images, fewer than half of an assumed 100 SMs (tensor cores: sm_80");
            CHECK(k && strstr(k->kernel, "_tc_z2"), "c4's kernel: %s", k ? k->kernel : "none");
            CHECK(k2 && !strcmp(k2->tpl, "conv2d_igemm_tc") && params_has(k2, "split=4", &line), "c2 at bucket 8: %s",
                  line ? line : "none");
            CHECK_CONTAINS(o->manifest, " layer=c2 template=splitk_reduce in=c2.partials out=c2 ");
            cg_gen_free(o);
        } else {
            CHECK(0, "layers-splitk8-tc at bucket 8: %s", e.msg);
        }
        tg.batch = 0;
        if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
            CHECK(!strstr(o->manifest, "splitk_reduce"), "layers-splitk8-tc split at the large batch");
            cg_gen_free(o);
        } else {
            CHECK(0, "layers-splitk8-tc at the large batch: %s", e.msg);
        }
    } else {
        CHECK(0, "layers-splitk8-tc: %s", e.msg);
    }
    if (cg_spec_load("tests/gpu/layers-splitk.yaml", s, &e)) CHECK(0, "layers-splitk: %s", e.msg);
    /* refusals: more parts than slices (c4: 1x1, C = 256 in 4 slices of 64), a split whose
     * last part has no slice; a fused 2x2 pool splits */
    char whybuf[512] = "", *why = whybuf;
    CHECK(cg_gen_check_one(s, 3, "conv2d_igemm", "bk=64,split=8", why, sizeof whybuf, &e) == 1, "split=8 of 4 slices");
    CHECK_CONTAINS(why, "split=8: more parts than the reduction C*K*K = 256 has slices of bk=64 (4)");
    CHECK(cg_gen_check_one(s, 3, "conv2d_igemm", "bk=64,split=4", why, sizeof whybuf, &e) == 0, "split=4: %s", why);
    CHECK(cg_gen_check_one(s, 3, "conv2d_igemm", "split=33", why, sizeof whybuf, &e) == 1, "split=33 accepted");
    CHECK_CONTAINS(why, "split=33 is not legal for conv2d_igemm");
    /* a split is checked alone but not emitted alone: the harness would time half the layer */
    cg_gen_kernel k1;
    cg_kernel_launch kl1;
    memset(&k1, 0, sizeof k1);
    CHECK(cg_gen_emit_one(s, 3, "conv2d_igemm", "split=4", &k1, &kl1, &e) != 0, "split=4 emitted alone");
    CHECK_CONTAINS(e.msg, "split=4 runs as two kernels (the partial sums, then splitk_reduce)");
    cg_gen_kernel_free(&k1);
    static const char text[] = "network: p\ninput: {channels: 5, height: 10, width: 10}\nlayers:\n"
                               "  - {name: a, op: conv, M: 16, K: 3, strategy: igemm}\n"
                               "  - {name: b, op: conv, M: 8, K: 3, pool: max2, strategy: igemm}\n";
    if (cg_spec_parse("p.yaml", text, strlen(text), s, &e) == 0) {
        /* a ragged split (5 slices in parts of 3 and 2) is legal; one whose last part
         * would have no slice (5 in parts of 2, 2, 2 and -1) is not */
        CHECK(cg_gen_check_one(s, 0, "conv2d_igemm", "bm=16,bn=128,bk=9,tm=8,tn=8,split=2", why, sizeof whybuf, &e) == 0,
              "5 slices in 2: %s", why);
        CHECK(cg_gen_check_one(s, 0, "conv2d_igemm", "bm=16,bn=128,bk=9,tm=8,tn=8,split=4", why, sizeof whybuf, &e) == 1,
              "5 slices in 4");
        CHECK_CONTAINS(why, "split=4 leaves its last part no slice: 5 slices of bk=9 (C*K*K = 45) in parts of 2");
        /* a fused 2x2 pool splits: the partials keep the GEMM columns, splitk_reduce pools */
        CHECK(cg_gen_check_one(s, 1, "conv2d_igemm", "bm=8,bn=32,bk=18,tm=2,tn=4,split=2", why, sizeof whybuf, &e) == 0,
              "pooled split: %s", why);
    } else {
        CHECK(0, "p.yaml: %s", e.msg);
    }
    free(s), free(o);
}

/* Split reductions of layers pooling 2x2 in the epilogue (layers-splitk-pool at
 * bucket 1): the partials hold every GEMM column, four a pooled output, and
 * splitk_reduce pools them (max or avg) after the sum, the bias and the activation. */
static void test_split_pool(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    const char *line = NULL;
    if (!s || !o || cg_spec_load("tests/gpu/layers-splitk-pool.yaml", s, &e)) {
        CHECK(0, "layers-splitk-pool: %s", e.msg);
        return free(s), free(o);
    }
    cg_target tg;
    cg_target_default(&tg);
    tg.batch = 1;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        /* c3: 20 maps, 11x11 conv output pooled (average) to 5x5: 100 columns an image */
        const cg_gen_kernel *k = conv_kernel(o, "c3"), *r = layer_kernel(o, "c3", "splitk_reduce");
        CHECK(k && params_has(k, "split=4", &line), "c3 at batch 1: %s", line ? line : "none");
        if (k) CHECK_CONTAINS(k->source, "out += (long long)blockIdx.z * n * 2000;");
        if (k) CHECK_CONTAINS(k->source, "(splitk_reduce adds the bias and tanh, pools 2x2 avg)");
        CHECK(r && strstr(r->kernel, "_avg2_"), "c3's reduce: %s", r ? r->kernel : "none");
        /* (cat's input: the pooled sums stored into its slice, one image in 1500 values) */
        if (r) CHECK_CONTAINS(r->source, "const int o = (i / 500) * 1500 + i % 500;");
        if (r) CHECK_CONTAINS(r->source, "out[o] = (tanhf(a.x + bv) + tanhf(a.y + bv) +");
        CHECK(r && strstr(r->kernel, "_os1500"), "c3's reduce writes its slice of cat: %s", r ? r->kernel : "none");
        CHECK_CONTAINS(o->manifest, "\ntensor c3.partials f32 8000\n");
        CHECK_CONTAINS(o->manifest, " layer=c3 template=splitk_reduce in=c3.partials out=c3 grid=N*500/256,1,1 ");
        /* c2, c4: max; the largest of the four, then the bias and the activation */
        const cg_gen_kernel *r4 = layer_kernel(o, "c4", "splitk_reduce");
        CHECK(r4 && strstr(r4->kernel, "_max2_"), "c4's reduce: %s", r4 ? r4->kernel : "none");
        if (r4) CHECK_CONTAINS(r4->source, "const float v = fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)) + bv;");
        CHECK(params_has(conv_kernel(o, "c2"), "split=2", &line), "c2: %s", line ? line : "none");
        CHECK(layer_kernel(o, "c2", "pool") == NULL, "c2: a pool kernel");
        cg_gen_free(o);
    } else {
        CHECK(0, "layers-splitk-pool at batch 1: %s", e.msg);
    }
    free(s), free(o);
}

/* A layer no configuration suits for want of a legal value of one parameter
 * (a 100x100 kernel: igemm's slices hold at most 64 reduction rows) says which,
 * through generate and through the one-layer calls. */
static void test_no_legal_value(void)
{
    static const char text[] = "network: k100\ninput: {channels: 1, height: 128, width: 128}\nlayers:\n"
                               "  - {name: c1, op: conv, M: 8, K: 100, strategy: igemm}\n"
                               "  - {name: fc1, op: fc, out: 10}\n";
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    CHECK(s && o && cg_spec_parse("k100.yaml", text, strlen(text), s, &e) == 0, "parse: %s", e.msg);
    if (!s || !o || e.msg[0]) return free(s), free(o);
    CHECK(cg_generate(s, "x", o, &e) != 0, "K=100 generated");
    CHECK_CONTAINS(e.msg, "k100.yaml:4:");
    CHECK_CONTAINS(e.msg, "layer 'c1': conv2d_igemm has no legal value of bk on this layer (reduction depth");
    cg_gen_kernel k;
    cg_kernel_launch launch;
    e.msg[0] = 0;
    CHECK(cg_gen_emit_one(s, 0, NULL, NULL, &k, &launch, &e) != 0, "K=100 emitted");
    CHECK_CONTAINS(e.msg, "k100.yaml: layer 'c1': conv2d_igemm has no legal value of bk");
    e.msg[0] = 0;
    CHECK(cg_gen_emit_one(s, 0, "conv2d_igemm", "", &k, &launch, &e) != 0, "K=100 emitted with igemm named");
    CHECK_CONTAINS(e.msg, "conv2d_igemm has no legal value of bk");
    free(s), free(o);
}

/* Identical layers (two fc 784 relu, three padded 3x3 convs) share one kernel:
 * one file whose header names every layer, a manifest line per layer. Two
 * kernels of one name are one only when their text differs in the layer line alone. */
static void test_identical_layers(void)
{
    static const char *const specs[2][2] = {
        {"network: twofc\ninput: {channels: 1, height: 28, width: 28}\nlayers:\n"
         "  - {name: fc1, op: fc, out: 784, activation: relu}\n"
         "  - {name: fc2, op: fc, out: 784, activation: relu}\n"
         "  - {name: fc3, op: fc, out: 10}\n",
         "fc1, fc2"},
        {"network: threeconv\ninput: {channels: 1, height: 28, width: 28}\nlayers:\n"
         "  - {name: c0, op: conv, M: 8, K: 3, padding: 1}\n"
         "  - {name: c1, op: conv, M: 8, K: 3, padding: 1}\n"
         "  - {name: c2, op: conv, M: 8, K: 3, padding: 1}\n"
         "  - {name: c3, op: conv, M: 8, K: 3, padding: 1}\n"
         "  - {name: fc1, op: fc, out: 10}\n",
         "c1, c2, c3"},
    };
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    CHECK(s && o && m, "out of memory");
    for (int i = 0; s && o && m && i < 2; i++) {
        cg_err e = {""};
        const char *text = specs[i][0];
        int rc = cg_spec_parse("same.yaml", text, strlen(text), s, &e) || cg_generate(s, "x", o, &e);
        CHECK(rc == 0, "spec %d generates: %s", i, e.msg);
        if (rc) continue;
        int shared = -1, files = 0;
        char want[64];
        snprintf(want, sizeof want, "// layer:      %s\n", specs[i][1]);
        for (int k = 0; k < o->nkernels; k++)
            if (strstr(o->k[k].source, want)) shared = k, files++;
        CHECK(files == 1, "spec %d: one file whose header names %s (%d)", i, specs[i][1], files);
        CHECK(cg_manifest_parse(o->manifest, o->manifest_len, "same.yaml", m, &e) == 0, "manifest: %s", e.msg);
        int uses = 0;
        for (int k = 0; shared >= 0 && k < m->nkernels; k++) uses += !strcmp(m->k[k].name, o->k[shared].kernel);
        CHECK(uses == (i ? 3 : 2), "spec %d: the shared kernel launched once per layer (%d)", i, uses);
        for (int a = 0; a < o->nkernels; a++)
            for (int b = a + 1; b < o->nkernels; b++)
                CHECK(strcmp(o->k[a].kernel, o->k[b].kernel), "spec %d: %s written twice", i, o->k[a].kernel);
        cg_gen_free(o);
    }
    /* the comparison: the layer line alone may differ */
    static const char head1[] = "// Generated\n// spec:       a.yaml\n// layer:      fc1\n// shape:      X\n\n";
    static const char head2[] = "// Generated\n// spec:       a.yaml\n// layer:      fc22\n// shape:      X\n\n";
    static const char head3[] = "// Generated\n// spec:       a.yaml\n// layer:      fc1\n// shape:      Y\n\n";
    char t[4][128];
    snprintf(t[0], sizeof t[0], "%skernel body\n", head1);
    snprintf(t[1], sizeof t[1], "%skernel body\n", head2);
    snprintf(t[2], sizeof t[2], "%skernel body\n", head3);
    snprintf(t[3], sizeof t[3], "%skernel bodY\n", head2);
    cg_gen_kernel k[4];
    memset(k, 0, sizeof k);
    for (int i = 0; i < 4; i++) {
        k[i].source = t[i];
        k[i].source_len = strlen(t[i]);
        k[i].header_len = strlen(i == 0 || i == 2 ? head1 : head2);
    }
    CHECK(cg_gen_same_kernel(&k[0], &k[1]) && cg_gen_same_kernel(&k[1], &k[0]), "only the layer line differs");
    CHECK(!cg_gen_same_kernel(&k[0], &k[2]), "another header line differs");
    CHECK(!cg_gen_same_kernel(&k[0], &k[3]) && !cg_gen_same_kernel(&k[1], &k[3]), "the code differs");
    free(s), free(o), free(m);
}

/* A graph (tests/gpu/layers-graph.yaml): the add's kernel reads two tensors,
 * conv2's and conv1's (conv1 is read by conv2 and by the add), as roles in and
 * in1; concat's branches are written into their slices of its output (no concat
 * kernel); the second add three tensors; both branches read the sum. */
static void test_graph_manifest(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    cg_err e;
    int rc = !s || !o || !m ? -1 : cg_spec_load("tests/gpu/layers-graph.yaml", s, &e);
    if (!rc) rc = cg_generate(s, "x", o, &e);
    if (!rc) rc = cg_manifest_parse(o->manifest, o->manifest_len, "layers-graph", m, &e);
    CHECK(rc == 0, "layers-graph: %s", rc ? e.msg : "");
    if (!rc) {
        int seen = 0, readers_conv1 = 0, readers_res1 = 0;
        int t_conv1 = cg_manifest_tensor(m, "conv1"), t_conv3 = cg_manifest_tensor(m, "conv3"),
            t_res1 = cg_manifest_tensor(m, "res1"), t_res2 = cg_manifest_tensor(m, "res2"),
            t_b1 = cg_manifest_tensor(m, "b1"), t_b2 = cg_manifest_tensor(m, "b2");
        /* both adds are computed in their conv's epilogue: conv2 and conv4 have no tensor */
        CHECK(cg_manifest_tensor(m, "conv2") < 0 && cg_manifest_tensor(m, "conv4") < 0, "conv2, conv4: no tensors");
        CHECK(!strcmp(m->l[1].into, "res1") && m->l[1].out == t_res1 && !strcmp(m->l[7].into, "res2") &&
                  m->l[7].out == t_res2 && !m->l[0].into[0] && !m->l[2].into[0],
              "layer records: conv2 into=res1, conv4 into=res2");
        CHECK(strstr(o->manifest, "layer conv2 conv res1 into=res1\n") != NULL, "conv2's layer record");
        for (int i = 0; i < m->nkernels; i++) {
            const cg_mkernel *k = &m->k[i];
            for (int j = 0; j < k->nin; j++) readers_conv1 += k->in[j] == t_conv1, readers_res1 += k->in[j] == t_res1;
            CHECK(strcmp(k->tpl, "add"), "no add kernel: %s", k->name);
            if (!strcmp(k->layer, "conv2")) {
                seen |= 1;
                CHECK(k->nin == 2 && k->in[0] == t_conv1 && k->in[1] == t_conv1 && k->out == t_res1 && k->nargs == 6 &&
                          k->args[0] == CG_ARG_IN && k->args[1] == CG_ARG_OUT && k->args[4] == CG_ARG_IN1 &&
                          k->args[5] == CG_ARG_N,
                      "conv2's kernel reads conv1 as in and as in1 (the add's other operand), writes res1");
            } else if (!strcmp(k->layer, "conv4")) {
                seen |= 2;
                CHECK(k->nin == 3 && k->in[0] == t_conv3 && k->in[1] == t_conv3 && k->in[2] == t_conv3 &&
                          k->out == t_res2 && k->args[4] == CG_ARG_IN1 && k->args[5] == CG_ARG_IN2,
                      "conv4's kernel reads conv3 as its input and as the add's two other operands");
            } else if (!strcmp(k->tpl, "concat")) {
                seen |= 4;
            } else if (!strcmp(k->layer, "b1") || !strcmp(k->layer, "b2")) {
                seen |= k->layer[1] == '1' ? 8 : 16;
                CHECK(k->out == (k->layer[1] == '1' ? t_b1 : t_b2) && strstr(k->name, "_os4096"),
                      "%s: its kernel writes its slice of cat (%s)", k->layer, k->name);
            }
        }
        CHECK(seen == (1 | 2 | 8 | 16), "conv2's, conv4's, b1's and b2's kernels, no concat kernel (%d)", seen);
        int t_cat = cg_manifest_tensor(m, "cat");
        CHECK(t_cat >= 0 && m->t[t_b1].view && m->t[t_b1].parent == t_cat && m->t[t_b1].view_off == 0 &&
                  m->t[t_b2].view && m->t[t_b2].parent == t_cat && m->t[t_b2].view_off == 6 * 256 && t_cat < t_b1,
              "b1 and b2 are views of cat (declared before them) at 0 and 1536");
        CHECK(readers_conv1 == 2 && readers_res1 == 2, "conv1 and res1 are read twice each (%d, %d)",
              readers_conv1, readers_res1);
        const cg_gen_kernel *c2 = conv_kernel(o, "conv2"), *c4 = conv_kernel(o, "conv4");
        /* 2048 elements: float4 loads of the operand; 125: single loads, the sum in the add's order */
        CHECK(c2 && strstr(c2->source, "__ldg(reinterpret_cast<const float4*>(in1 + img * 2048 + m * 256 + at))") &&
                  strstr(c2->source, "t.x = fmaxf(acc[i][j] + bv + r1.x, 0.0f);") &&
                  strstr(c2->source, "then an add of 2 tensors (the conv's at place 1), relu, in the epilogue"),
              "conv2: the add's operand in float4 loads, relu after the sum, the header says so");
        CHECK(c4 && strstr(c4->source, "= __ldg(in1 + img * 125 + m * 25 + at) + (acc[i][j + d]) + "
                                       "__ldg(in2 + img * 125 + m * 25 + at);"),
              "conv4: single loads of conv3, conv4's value second");
    }
    free(s), free(o), free(m);
}

/* The kernel of manifest m writing tensor `name` (NULL: none), and the concat
 * kernel of layer `layer`. */
static const cg_mkernel *writer_of(const cg_manifest *m, const char *name)
{
    int t = cg_manifest_tensor(m, name);
    for (int i = 0; t >= 0 && i < cg_manifest_layer_kernels(m); i++)
        for (int o = 0; o < m->k[i].nout; o++)
            if (m->k[i].outs[o] == t) return &m->k[i];
    return NULL;
}

static const cg_mkernel *concat_of(const cg_manifest *m, const char *layer)
{
    for (int i = 0; i < cg_manifest_layer_kernels(m); i++)
        if (!strcmp(m->k[i].tpl, "concat") && !strcmp(m->k[i].layer, layer)) return &m->k[i];
    return NULL;
}

/* Concat inputs written into their slices (planner.concat_slices), on
 * tests/gpu/layers-concat.yaml: cat1's four branches by direct, igemm,
 * depthwise and the activation kernel after a fuse: 0 conv (views of cat1, no
 * concat kernel); cat2's p1 (igemm, fused pool) and p2 (the pool kernel after a
 * fuse: 0 conv) in place, p3 (read by x too) copied by a concat kernel reading p3
 * alone into elements 396.. of 540; cat3 copies cat2 (no conv) into its first
 * elements, x in place. Kept apart and copied (a concat kernel reading them):
 * a conv read by another layer, an add, a template without out_slice (slide), a
 * split reduction (splitk_reduce writes the output), the last layer of a 16-bit
 * network (FP32 there, its inputs 16-bit), an input read twice by the concat. */
static void test_concat_slices(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    cg_err e = {""};
    int rc = !s || !o || !m ? -1 : cg_spec_load("tests/gpu/layers-concat.yaml", s, &e);
    if (!rc) rc = cg_generate(s, "x", o, &e);
    if (!rc) rc = cg_manifest_parse(o->manifest, o->manifest_len, "layers-concat", m, &e);
    CHECK(rc == 0, "layers-concat: %s", rc ? e.msg : "");
    if (!rc) {
        static const struct {
            const char *t, *parent, *tpl;
            long long off;
        } views[] = {{"a", "cat1", "conv2d_direct", 0},       {"b", "cat1", "conv2d_igemm", 864},
                     {"d", "cat1", "conv2d_depthwise", 2016}, {"e", "cat1", "activation", 3168},
                     {"p1", "cat2", "conv2d_igemm", 0},       {"p2", "cat2", "pool", 216},
                     {"x", "cat3", "conv2d_igemm", 540}};
        for (size_t i = 0; i < sizeof views / sizeof *views; i++) {
            int t = cg_manifest_tensor(m, views[i].t), p = cg_manifest_tensor(m, views[i].parent);
            const cg_mkernel *k = writer_of(m, views[i].t);
            char tag[32];
            snprintf(tag, sizeof tag, "_os%lld", m->t[p].elems);
            CHECK(t >= 0 && p >= 0 && m->t[t].view && m->t[t].parent == p && m->t[t].view_off == views[i].off,
                  "%s: a view of %s at %lld", views[i].t, views[i].parent, views[i].off);
            CHECK(k && !strcmp(k->tpl, views[i].tpl) && strstr(k->name, tag), "%s: written by %s (%s)", views[i].t,
                  views[i].tpl, k ? k->name : "none");
        }
        CHECK(!m->t[cg_manifest_tensor(m, "p3")].view && !m->t[cg_manifest_tensor(m, "cat2")].view &&
                  !m->t[cg_manifest_tensor(m, "e.conv")].view,
              "p3, cat2 and e.conv are tensors of their own");
        CHECK(!concat_of(m, "cat1"), "cat1: no concat kernel");
        const cg_mkernel *c2 = concat_of(m, "cat2"), *c3 = concat_of(m, "cat3");
        CHECK(c2 && c2->nin == 1 && c2->in[0] == cg_manifest_tensor(m, "p3") && strstr(c2->name, "_of540_at396"),
              "cat2: a concat kernel copying p3 alone (%s)", c2 ? c2->name : "none");
        CHECK(c3 && c3->nin == 1 && c3->in[0] == cg_manifest_tensor(m, "cat2") && strstr(c3->name, "_of684_at0"),
              "cat3: a concat kernel copying cat2 alone (%s)", c3 ? c3->name : "none");
        const cg_gen_kernel *g2 = layer_kernel(o, "cat2", "concat"), *gb = conv_kernel(o, "b");
        CHECK(g2 && strstr(g2->source, "reinterpret_cast<float4*>(out)[img * 135 + r + 99] = "
                                       "reinterpret_cast<const float4*>(in)[img * 36 + r - 0];"),
              "cat2's kernel stores p3's float4s at 396 of 540 an image");
        CHECK(gb && strstr(gb->source, "out + img * 3888 + m * 144 + at") &&
                  strstr(gb->source, "into a slice of 3888 values an image"),
              "b: igemm's epilogue stores at cat1's image stride, the header says so");
        cg_gen_free(o);
    }
    /* kept apart, copied by the concat's kernel */
    static const struct {
        const char *text, *copied;
    } apart[] = {
        {"  - {name: a, op: conv, M: 4, K: 1}\n  - {name: b, op: conv, M: 4, K: 1, input: input}\n"
         "  - {name: f, op: conv, M: 4, K: 1, input: a}\n  - {name: c, op: concat, input: [a, b, f]}\n",
         "a"},
        {"  - {name: a, op: conv, M: 4, K: 1}\n  - {name: b, op: add, input: [a, input]}\n"
         "  - {name: c, op: concat, input: [b, input]}\n", "b,input"},
        {"  - {name: a, op: conv, M: 4, K: 1}\n  - {name: c, op: concat, input: [a, a]}\n", "a,a"},
    };
    for (size_t i = 0; i < sizeof apart / sizeof *apart; i++) {
        char text[1024], want[64];
        snprintf(text, sizeof text, "network: n\ninput: {channels: 4, height: 8, width: 8}\nlayers:\n%s", apart[i].text);
        snprintf(want, sizeof want, "template=concat in=%s out=c ", apart[i].copied);
        cg_spec *n = spec_text("apart.yaml", text);
        cg_gen_output *g = malloc(sizeof *g);
        int ok = n && g && cg_generate(n, "x", g, &e) == 0;
        CHECK(ok, "apart %zu: %s", i, e.msg);
        if (ok) {
            CHECK(strstr(g->manifest, want) != NULL, "apart %zu: %s in:\n%s", i, want, g->manifest);
            cg_gen_free(g);
        }
        free(n), free(g);
    }
    /* every conv template writes a slice now: slide (its own epilogue) as well, so this concat
     * has no kernel */
    {
        cg_spec *n = spec_text("slide.yaml", "network: n\ninput: {channels: 4, height: 8, width: 8}\nlayers:\n"
                                             "  - {name: a, op: conv, M: 4, K: 3, padding: same, strategy: slide}\n"
                                             "  - {name: b, op: conv, M: 4, K: 1, input: input}\n"
                                             "  - {name: c, op: concat, input: [a, b]}\n");
        cg_gen_output *g = malloc(sizeof *g);
        int ok = n && g && cg_generate(n, "x", g, &e) == 0;
        CHECK(ok, "slide: %s", e.msg);
        if (ok) {
            CHECK(strstr(g->manifest, "tensor a f32 256 view=c:0") && !strstr(g->manifest, "template=concat") &&
                      strstr(g->manifest, "_os512 layer=a template=conv2d_slide"),
                  "slide writes a's slice of c, c has no kernel:\n%s", g->manifest);
            cg_gen_free(g);
        }
        free(n), free(g);
    }
    /* a split reduction written in place (layers-splitk8-tc at bucket 8: c4's splitk_reduce
     * stores its sums into c4's slice of cat, one output a thread) and, copied, a 16-bit network's
     * last layer (layers-fp16's cat as the output, FP32) */
    cg_target tg;
    cg_target_default(&tg);
    tg.cc = 80, tg.batch = 8;
    rc = cg_spec_load("tests/gpu/layers-splitk8-tc.yaml", s, &e);
    if (!rc) rc = cg_generate_for(s, "x", &tg, o, &e);
    if (!rc) rc = cg_manifest_parse(o->manifest, o->manifest_len, "layers-splitk8-tc", m, &e);
    CHECK(rc == 0, "layers-splitk8-tc: %s", rc ? e.msg : "");
    if (!rc) {
        const cg_mkernel *w4 = writer_of(m, "c4"), *c = concat_of(m, "cat");
        const int t4 = cg_manifest_tensor(m, "c4");
        CHECK(w4 && !strcmp(w4->tpl, "splitk_reduce") && strstr(w4->name, "_os") && t4 >= 0 && m->t[t4].view &&
                  (!c || c->in[c->nin - 1] != t4),
              "c4: written by splitk_reduce into its slice of cat (%s), not copied", w4 ? w4->name : "none");
        cg_gen_free(o);
    }
    cg_spec *h = spec_text("half.yaml", "network: h\ninput: {channels: 4, height: 8, width: 8}\nprecision: fp16\n"
                                        "layers:\n  - {name: a, op: conv, M: 4, K: 1}\n"
                                        "  - {name: b, op: conv, M: 4, K: 1, input: input}\n"
                                        "  - {name: c, op: concat, input: [a, b]}\n");
    tg.batch = 0;
    rc = h ? cg_generate_for(h, "x", &tg, o, &e) : -1;
    CHECK(rc == 0, "fp16 concat last: %s", e.msg);
    if (!rc) {
        CHECK(strstr(o->manifest, "template=concat in=a,b out=c ") && !strstr(o->manifest, "view="),
              "fp16: the last layer's concat (FP32) copies its 16-bit inputs:\n%s", o->manifest);
        cg_gen_free(o);
    }
    free(h), free(s), free(o), free(m);
}

/* Spec text `text` (named `path` in errors) generated for target tg into o, its
 * manifest parsed into m; the spec in *sp (the caller frees it). 0 when both went
 * through. */
static int generate_text_on(const char *path, const char *text, const cg_target *tg, cg_gen_output *o,
                            cg_manifest *m, cg_spec **sp)
{
    *sp = spec_text(path, text);
    if (!*sp) return -1;
    cg_err e = {""};
    int rc = cg_generate_for(*sp, "x", tg, o, &e);
    if (!rc) rc = cg_manifest_parse(o->manifest, o->manifest_len, path, m, &e);
    CHECK(rc == 0, "%s at %d images, cc %d: %s", path, tg->batch, tg->cc, e.msg);
    if (rc) {
        free(*sp);
        *sp = NULL;
    }
    return rc;
}

/* The same for `bucket` images on the default target (cc: its compute capability
 * where not 0). */
static int generate_text(const char *path, const char *text, int bucket, int cc, cg_gen_output *o, cg_manifest *m,
                         cg_spec **sp)
{
    cg_target tg;
    cg_target_default(&tg);
    tg.batch = bucket;
    if (cc) tg.cc = cc;
    return generate_text_on(path, text, &tg, o, m, sp);
}

/* The network's end in fewer kernels. Generated for a small batch (buckets 1 to
 * 64), a last fc of at most planner.TAIL_MAX_OUT outputs and TAIL_MAX_WEIGHTS
 * weights and the softmax reading it are one kernel with the predictions
 * (templates/ops/tail.lua: layer=fc2, out=fc2,prob,predict, roles out1 and out2,
 * no fc_gemv, softmax or argmax kernel), the header saying why; a network ending
 * in such an fc: fc and predictions (out=fc,predict). Elsewhere (a large batch,
 * bucket 256; an fc too wide or too large; a 16-bit network) the softmax (a
 * network's last layer where it has one) writes the predictions (out1, no argmax
 * kernel), and a network ending in neither keeps its argmax kernel. */
static void test_tail_rule(void)
{
    static const struct {
        const char *name, *layers;
        int bucket, precision16;
        const char *kernels; /* the templates of the last kernels, and their out lists */
    } want[] = {
        {"fc10", "  - {name: f1, op: fc, out: 40, activation: relu}\n  - {name: f2, op: fc, out: 10, bias: true}\n"
                 "  - {name: prob, op: softmax}\n",
         1, 0, "fc_gemv f1; tail f2,prob,predict"},
        {"fc10", NULL, 8, 0, "fc_gemv f1; tail f2,prob,predict"},
        {"fc10", NULL, 64, 0, "fc_gemv f1; tail f2,prob,predict"},
        /* bucket 256: no tail; both fc gemv, vec's tiles launching blocks for too few SMs */
        {"fc10", NULL, 256, 0, "fc_gemv f1; fc_gemv f2; softmax prob,predict"},
        {"fc10", NULL, 0, 0, "fc_vec f1; fc_vec f2; softmax prob,predict"},
        {"fc10", NULL, 1, 1, "fc_gemv f1; fc_gemv f2; softmax prob,predict"},
        /* 33 outputs; 410 x 40 = 16,400 weights: both past the bounds */
        {"fc33", "  - {name: f1, op: fc, out: 40}\n  - {name: f2, op: fc, out: 33}\n  - {name: prob, op: softmax}\n",
         1, 0, "fc_gemv f1; fc_gemv f2; softmax prob,predict"},
        {"fc-wide", "  - {name: f1, op: fc, out: 410}\n  - {name: f2, op: fc, out: 40}\n  - {name: prob, op: softmax}\n",
         1, 0, "fc_gemv f1; fc_gemv f2; softmax prob,predict"},
        {"fc-limit", "  - {name: f1, op: fc, out: 512}\n  - {name: f2, op: fc, out: 32}\n  - {name: prob, op: softmax}\n",
         8, 0, "fc_gemv f1; tail f2,prob,predict"},
        /* ending in the fc: fc and predictions; at the large batch, argmax */
        {"fc-end", "  - {name: f1, op: fc, out: 12}\n  - {name: f2, op: fc, out: 7}\n", 1, 0,
         "fc_gemv f1; tail f2,predict"},
        {"fc-end", NULL, 0, 0, "fc_vec f1; fc_vec f2; argmax predict"},
        /* ending in a conv: argmax at every batch (the conv's pixel twin beside it, planner.pixel_twin) */
        {"conv-end", "  - {name: c1, op: conv, M: 3, K: 3}\n", 1, 0, "conv2d_direct c1; conv2d_direct c1; argmax predict"},
    };
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    const char *layers = NULL;
    for (size_t i = 0; o && m && i < sizeof want / sizeof *want; i++) {
        if (want[i].layers) layers = want[i].layers;
        char text[1024];
        snprintf(text, sizeof text, "network: %s\ninput: {channels: 1, height: 4, width: 10}\nseed: 2\n%slayers:\n%s",
                 want[i].name, want[i].precision16 ? "precision: bf16\n" : "", layers);
        cg_spec *s;
        if (generate_text("tail.yaml", text, want[i].bucket, want[i].precision16 ? 80 : 0, o, m, &s)) continue;
        /* the kernels after input_u8 (and before the whole-network kernel): "template out,out; ..." */
        char got[512] = "";
        size_t at = 0;
        for (int k = 1; k < cg_manifest_layer_kernels(m) && at < sizeof got; k++) {
            const cg_mkernel *mk = &m->k[k];
            at += (size_t)snprintf(got + at, sizeof got - at, "%s%s ", k > 1 ? "; " : "", mk->tpl);
            for (int q = 0; q < mk->nout && at < sizeof got; q++)
                at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", q ? "," : "", m->t[mk->outs[q]].name);
        }
        CHECK(!strcmp(got, want[i].kernels), "%s at bucket %d%s: '%s', want '%s'", want[i].name, want[i].bucket,
              want[i].precision16 ? " (bf16)" : "", got, want[i].kernels);
        /* the tail: its roles, layer and header */
        for (int k = 0; k < cg_manifest_layer_kernels(m); k++) {
            const cg_mkernel *mk = &m->k[k];
            if (strcmp(mk->tpl, "tail")) continue;
            int sm = mk->nout == 3;
            CHECK(!strcmp(mk->layer, m->t[mk->out].name) && mk->nargs == 4 + mk->nout &&
                      mk->args[4] == CG_ARG_OUT1 && (!sm || mk->args[5] == CG_ARG_OUT2) && mk->wplace == CG_PLACE_ARG,
                  "%s: the tail's record: layer %s, %d arguments", want[i].name, mk->layer, mk->nargs);
            const cg_gen_kernel *gk = layer_kernel(o, mk->layer, "tail");
            CHECK(gk && strstr(gk->source, "small batch: the network's tail (") &&
                      strstr(gk->source, sm ? "float* __restrict__ prob, int* __restrict__ pred, int n)"
                                            : "int* __restrict__ pred, int n)") &&
                      strstr(gk->source, sm ? "then softmax and the prediction" : "then the prediction"),
                  "%s: the tail's header and arguments", want[i].name);
        }
        cg_gen_free(o);
        free(s);
    }
    free(o), free(m);
}

/* The tail split over a cluster (ops/tail.lua split, tail.split_for): on sm_90, from 2
 * to 8 images (bucket 8), a last fc of more than 16,384 weights (at most 32 outputs) is still the
 * tail kernel, each image's reduction over the fewest blocks of a cluster (a power of
 * two up to 8) that hold at most 65,536 weights each: grid z and the name's _sN say
 * how many, the header why. Not at one image or bucket 64, not on sm_80, not past 8 x 65,536. */
/* conv2d_planes' FP32 defaults. The 2x2 pool of stride 2 fused (fp=1) where that keeps
 * the block's tile: the band's rows even (or the whole image) and as many blocks an SM
 * (zoo-7x7-large's 55-row output in bands of 4): the conv kernel's name says _fp_pool2 and
 * no pool kernel follows. Where the default band is odd (zoo-5x5-c64's 22 rows in bands
 * of 11), rows given odd, or fp=0 given, the pool stays a kernel of its own. And a
 * warpgroup a tile (_g4 for 4 tiles) where one block fills an SM's shared memory (both
 * of those layers), two tiles a warpgroup (_g2) where two blocks fit (C16 48x48, K3). */
static void test_planes_fused_pool(void)
{
    static const struct {
        int c, hw, m, k;
        const char *params, *want;
    } want[] = {
        {32, 61, 64, 7, "", "conv2d_planes_fp_g4"},
        {64, 26, 128, 5, "", "conv2d_planes_g4 pool"},
        {32, 61, 64, 7, ", params: {rows: 3}", "conv2d_planes_g2 pool"},
        {32, 61, 64, 7, ", params: {fp: 0}", "conv2d_planes_g4 pool"},
        {32, 61, 64, 7, ", params: {rows: 2}", "conv2d_planes_fp_g2"},
        {16, 50, 64, 3, "", "conv2d_planes_fp_g2"},
    };
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    for (size_t i = 0; o && m && i < sizeof want / sizeof *want; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "network: pfp\ninput: {channels: %d, height: %d, width: %d}\nseed: 2\nlayers:\n"
                 "  - {name: c, op: conv, M: %d, K: %d, activation: relu, pool: max2, strategy: planes%s}\n"
                 "  - {name: f, op: fc, out: 10}\n",
                 want[i].c, want[i].hw, want[i].hw, want[i].m, want[i].k, want[i].params);
        cg_target tg; /* an H200 as the JIT sees it: sm_90 alone, as sm_90a */
        cg_target_default(&tg);
        tg.cc = 90, tg.sm90a = 1, tg.max_shared_optin = 227 * 1024, tg.sms = 132, tg.batch = 256;
        cg_spec *s;
        if (generate_text_on("pfp.yaml", text, &tg, o, m, &s)) continue;
        char got[256] = "";
        size_t at = 0;
        for (int k = 0; k < cg_manifest_layer_kernels(m) && at < sizeof got; k++)
            if (!strcmp(m->k[k].layer, "c"))
            {
                const char *g = strstr(m->k[k].name, "_g");
                while (g && !(g[2] >= '1' && g[2] <= '4' && (g[3] == '_' || !g[3]))) g = strstr(g + 2, "_g");
                at += (size_t)snprintf(got + at, sizeof got - at, "%s%s%s%s%.*s", at ? " " : "", m->k[k].tpl,
                                       strstr(m->k[k].name, "_fp_pool2") ? "_fp" : "", g ? "_g" : "", g ? 1 : 0,
                                       g ? g + 2 : "");
            }
        CHECK(!strcmp(got, want[i].want), "planes C%d %dx%d -> %d, K%d%s at 256 images: '%s', want '%s'", want[i].c,
              want[i].hw, want[i].hw, want[i].m, want[i].k, want[i].params, got, want[i].want);
        free(s);
    }
    free(o);
    free(m);
}

static void test_tail_split(void)
{
    static const struct {
        int hw, out, bucket, cc;
        const char *want; /* the last kernels' templates, and the tail's split */
    } want[] = {
        {50, 10, 8, 90, "tail s2"},       /* 25,000 weights */
        {50, 10, 1, 90, "fc_gemv softmax"},
        {100, 32, 8, 90, "tail s8"},     /* 320,000 */
        {200, 10, 8, 90, "tail s8"},     /* 400,000 */
        {300, 10, 8, 90, "fc_gemv softmax"}, /* 900,000: past 8 x 65,536 */
        {50, 10, 64, 90, "fc_gemv softmax"},
        {50, 10, 8, 80, "fc_gemv softmax"},
        {40, 10, 1, 90, "tail s1"},       /* 16,000: one block */
    };
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    for (size_t i = 0; o && m && i < sizeof want / sizeof *want; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "network: tsplit\ninput: {channels: 1, height: %d, width: %d}\nseed: 2\nlayers:\n"
                 "  - {name: f, op: fc, out: %d, bias: true}\n  - {name: prob, op: softmax}\n",
                 want[i].hw, want[i].hw, want[i].out);
        cg_spec *s;
        if (generate_text("tsplit.yaml", text, want[i].bucket, want[i].cc, o, m, &s)) continue;
        char got[256] = "";
        size_t at = 0;
        for (int k = 1; k < cg_manifest_layer_kernels(m) && at < sizeof got; k++) {
            const cg_mkernel *mk = &m->k[k];
            at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", k > 1 ? " " : "", mk->tpl);
            if (!strcmp(mk->tpl, "tail")) {
                at += (size_t)snprintf(got + at, sizeof got - at, " s%lld", mk->grid[2].mul);
                const cg_gen_kernel *gk = layer_kernel(o, mk->layer, "tail");
                int split = mk->grid[2].mul > 1;
                CHECK(gk && (!split || (strstr(mk->name, "_s") && strstr(gk->source, "__cluster_dims__(1, 1, ") &&
                                        strstr(gk->source, "an image's reduction over a cluster of"))),
                      "%s: the split's name, cluster and header", mk->name);
            }
        }
        CHECK(!strcmp(got, want[i].want), "%dx%d -> %d at bucket %d, sm_%d: '%s', want '%s'", want[i].hw, want[i].hw,
              want[i].out, want[i].bucket, want[i].cc, got, want[i].want);
        cg_gen_free(o);
        free(s);
    }
    free(o), free(m);
}

/* The pixel twin (planner.pixel_twin): generated for a bucket, a first conv under
 * conv2d_direct that alone reads the input comes twice after input_u8: reading the
 * float input (feed=f32, as input_u8, which no feed then runs) and reading the
 * pixels (feed=u8, the name's _px tag, the header saying so). Not at the large
 * batch, not where a later layer reads the input too (a second conv of it), not
 * for channel groups. */
static void test_pixel_twin(void)
{
    static const struct {
        const char *name, *layers;
        int bucket;
        const char *kernels; /* the first kernels: template[feed]<its input tensor */
    } want[] = {
        {"px", "  - {name: c1, op: conv, M: 4, K: 3, activation: relu, pool: max2}\n  - {name: f, op: fc, out: 10}\n",
         1, "input_u8[f32]<pixels; conv2d_direct[f32]<input; conv2d_direct[u8]<pixels; tail<c1"},
        {"px", NULL, 8, "input_u8[f32]<pixels; conv2d_direct[f32]<input; conv2d_direct[u8]<pixels; tail<c1"},
        {"px", NULL, 0, "input_u8<pixels; conv2d_direct<input; fc_vec<c1"},
        /* the spec's own strategy kept at bucket 8 (no rule's reason in the header) */
        {"px-given", "  - {name: c1, op: conv, M: 8, K: 3, padding: 1, stride: 2, pool: avg2, strategy: direct}\n"
                     "  - {name: f, op: fc, out: 10}\n",
         8, "input_u8[f32]<pixels; conv2d_direct[f32]<input; conv2d_direct[u8]<pixels; tail<c1"},
        {"px-two", "  - {name: c1, op: conv, M: 2, K: 3, padding: same}\n"
                   "  - {name: c2, op: conv, M: 2, K: 3, padding: same, input: input}\n"
                   "  - {name: a, op: add, input: [c1, c2]}\n  - {name: f, op: fc, out: 10}\n",
         1, "input_u8<pixels; conv2d_direct<input; conv2d_direct<input"},
        {"px-groups", "  - {name: c1, op: conv, M: 4, K: 3, groups: 2}\n  - {name: f, op: fc, out: 10}\n", 1,
         "input_u8<pixels; conv2d_direct<input; tail<c1"},
    };
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    const char *layers = NULL;
    for (size_t i = 0; o && m && i < sizeof want / sizeof *want; i++) {
        if (want[i].layers) layers = want[i].layers;
        char text[1024];
        snprintf(text, sizeof text, "network: %s\ninput: {channels: 2, height: 8, width: 9}\nseed: 3\nlayers:\n%s",
                 want[i].name, layers);
        cg_spec *s;
        if (generate_text("px.yaml", text, want[i].bucket, 0, o, m, &s)) continue;
        char got[512] = "";
        size_t at = 0;
        int n = strchr(want[i].kernels, '[') ? 4 : 3;
        for (int k = 0; k < n && k < cg_manifest_layer_kernels(m) && at < sizeof got; k++) {
            const cg_mkernel *mk = &m->k[k];
            at += (size_t)snprintf(got + at, sizeof got - at, "%s%s%s<%s", k ? "; " : "", mk->tpl,
                                   mk->feed == CG_FEED_U8 ? "[u8]" : mk->feed == CG_FEED_F32 ? "[f32]" : "",
                                   m->t[mk->in[0]].name);
        }
        CHECK(!strcmp(got, want[i].kernels), "%s at bucket %d: '%s', want '%s'", want[i].name, want[i].bucket, got,
              want[i].kernels);
        if (n == 4 && cg_manifest_layer_kernels(m) > 2) {
            /* the twins write one tensor, the pixel reader's name and header saying what it reads */
            const cg_mkernel *f = &m->k[1], *u = &m->k[2];
            const cg_gen_kernel *gk = NULL;
            for (int k = 0; k < o->nkernels; k++)
                if (!strcmp(o->k[k].kernel, u->name)) gk = &o->k[k];
            CHECK(f->out == u->out && !strcmp(f->layer, u->layer) && strstr(u->name, "_pxs") &&
                      !strncmp(u->name, f->name, strlen(f->name)),
                  "%s: twins %s and %s", want[i].name, f->name, u->name);
            CHECK(gk && strstr(gk->source, "reads the uint8 pixels itself") &&
                      strstr(gk->source, "(const unsigned char* __restrict__ in,"),
                  "%s: the twin's header and input type", want[i].name);
        }
        cg_gen_free(o);
        free(s);
    }
    free(o), free(m);
}

/* Adds computed in the conv's epilogue (planner.residual_adds): in
 * layers-residual-tc (sm_80) every add whose conv operand nothing else reads
 * fuses, under igemm_tc, igemm (after a folded batchnorm, whose layer record
 * names the add's tensor too) and direct (four inputs); r5, whose conv g is
 * also read by h, stays an add kernel. An add does not fuse where the conv's
 * epilogue is not fused (direct's fuse=0), the conv pools, its template has no
 * such epilogue (slide) or an operand is made after the conv. */
/* Two residual blocks of one shape (as MobileNet V2's repeated bottlenecks): their
 * fused convs are one kernel, shared by both layers (the header's shape line names
 * no layer or tensor, so the two sources are the same kernel). */
static void test_residual_shared_kernel(void)
{
    static const char text[] =
        "network: twin\ninput: {channels: 8, height: 6, width: 6}\nlayers:\n"
        "  - {name: a, op: conv, M: 8, K: 1, bias: true, strategy: igemm}\n"
        "  - {name: b, op: conv, M: 8, K: 1, bias: true, strategy: igemm}\n"
        "  - {name: r1, op: add, input: [a, b]}\n"
        "  - {name: c, op: conv, M: 8, K: 1, bias: true, strategy: igemm}\n"
        "  - {name: r2, op: add, input: [r1, c]}\n"
        "  - {name: f, op: fc, out: 10}\n";
    char path[] = "/tmp/cg_twin_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    CHECK(f != NULL, "temporary spec");
    if (!f) return;
    fputs(text, f);
    fclose(f);
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    int rc = !s || !o ? -1 : cg_spec_load(path, s, &e);
    if (!rc) rc = cg_generate(s, "x", o, &e);
    CHECK(rc == 0, "twin residual blocks generate: %s", rc ? e.msg : "");
    if (!rc) {
        int fused = 0;
        const cg_gen_kernel *kf = NULL;
        for (int i = 0; i < o->nkernels; i++)
            if (strstr(o->k[i].kernel, "_add2p2_none")) fused++, kf = &o->k[i];
        CHECK(fused == 1 && strstr(kf->source, "// layer:      b, c\n"),
              "b's and c's fused kernels are one file naming both layers (%d: %s)", fused, kf ? kf->kernel : "-");
        cg_gen_free(o);
    }
    unlink(path);
    free(s), free(o);
}

static void test_residual_fusion(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_manifest *m = malloc(sizeof *m);
    cg_err e = {""};
    cg_target tg;
    cg_target_default(&tg);
    tg.cc = 80;
    int rc = !s || !o || !m ? -1 : cg_spec_load("tests/gpu/layers-residual-tc.yaml", s, &e);
    if (!rc) rc = cg_generate_for(s, "x", &tg, o, &e);
    if (!rc) rc = cg_manifest_parse(o->manifest, o->manifest_len, "layers-residual-tc", m, &e);
    CHECK(rc == 0, "layers-residual-tc: %s", rc ? e.msg : "");
    if (!rc) {
        static const char *const into[][2] = {{"c0", ""}, {"a", "r1"}, {"r1", ""}, {"b", "r2"}, {"bnb", "r2"},
                                              {"r2", ""}, {"d", "r3"}, {"r3", ""}, {"g", ""}, {"r5", ""},
                                              {"h", "r6"}, {"r6", ""}, {"s", ""}, {"t", "r7"}, {"r7", ""}};
        for (int i = 0; i < (int)(sizeof into / sizeof *into); i++)
            CHECK(!strcmp(m->l[i].name, into[i][0]) && !strcmp(m->l[i].into, into[i][1]) &&
                      m->l[i].out == cg_manifest_tensor(m, into[i][1][0] ? into[i][1] : into[i][0]),
                  "layer %s: into '%s' (manifest: %s into '%s')", into[i][0], into[i][1], m->l[i].name, m->l[i].into);
        int adds = 0;
        for (int i = 0; i < m->nkernels; i++) {
            const cg_mkernel *k = &m->k[i];
            if (!strcmp(k->tpl, "add")) {
                adds++;
                CHECK(!strcmp(k->layer, "r5") && k->in[0] == cg_manifest_tensor(m, "g"), "the add kernel is r5's");
            }
            if (!strcmp(k->layer, "a"))
                CHECK(!strcmp(k->tpl, "conv2d_igemm_tc") && k->out == cg_manifest_tensor(m, "r1") && k->nin == 2,
                      "a: igemm_tc writes r1");
            if (!strcmp(k->layer, "d"))
                CHECK(!strcmp(k->tpl, "conv2d_direct") && k->nin == 4 && k->nargs == 8 && k->args[6] == CG_ARG_IN3 &&
                          k->in[1] == cg_manifest_tensor(m, "r2") && k->in[2] == cg_manifest_tensor(m, "c0") &&
                          k->in[3] == cg_manifest_tensor(m, "r1"),
                      "d: direct reads r2, c0 and r1 as in1..in3");
        }
        CHECK(adds == 1, "one add kernel left (%d)", adds);
        const cg_gen_kernel *d = conv_kernel(o, "d"), *t = conv_kernel(o, "t");
        /* the conv's value (its bias and relu applied) second of four, no activation after */
        CHECK(d && strstr(d->source, "= __ldg(r1 + (g + 0) * 144 + 0) + (fmaxf(a0[0][0] + B(g + 0), 0.0f)) + "
                                     "__ldg(r2 + (g + 0) * 144 + 0) + __ldg(r3 + (g + 0) * 144 + 0);"),
              "d: the sum in the add's order, the conv's relu before it");
        CHECK(t && strstr(t->source, "fmaxf(__ldg(in1 + img * 400 + m * 25 + at) + __ldg(in2 + img * 400 + m * 25 + at) "
                                     "+ (acc[i][j + d] + __ldg(b_arg + m)), 0.0f)"),
              "t: third of three, its bias summed first, relu after the sum");
    }
    /* no fusion: direct with fuse=0, a pooled conv, slide, an operand made after the conv */
    static const char *const none[] = {
        "network: n\ninput: {channels: 4, height: 8, width: 8}\nlayers:\n"
        "  - {name: c, op: conv, M: 4, K: 3, padding: same}\n"
        "  - {name: d, op: conv, M: 4, K: 3, padding: same, strategy: direct, params: {fuse: 0}}\n"
        "  - {name: r, op: add, input: [c, d]}\n",
        "network: n\ninput: {channels: 4, height: 8, width: 8}\nlayers:\n"
        "  - {name: c, op: conv, M: 4, K: 3, padding: same, pool: max2}\n"
        "  - {name: d, op: conv, M: 4, K: 1, input: input, pool: max2}\n"
        "  - {name: r, op: add, input: [c, d]}\n",
        "network: n\ninput: {channels: 4, height: 8, width: 8}\nlayers:\n"
        "  - {name: c, op: conv, M: 4, K: 3, padding: same}\n"
        "  - {name: d, op: conv, M: 4, K: 3, padding: same, strategy: slide}\n"
        "  - {name: r, op: add, input: [c, d]}\n",
        "network: n\ninput: {channels: 4, height: 8, width: 8}\nlayers:\n"
        "  - {name: c, op: conv, M: 4, K: 3, padding: same, strategy: igemm}\n"
        "  - {name: d, op: conv, M: 4, K: 3, padding: same, input: input, strategy: slide}\n"
        "  - {name: r, op: add, input: [c, d]}\n"};
    for (int i = 0; i < (int)(sizeof none / sizeof *none); i++) {
        cg_spec *n = spec_text("none.yaml", none[i]);
        cg_gen_output *g = malloc(sizeof *g);
        int ok = n && g && cg_generate_for(n, "x", &tg, g, &e) == 0;
        CHECK(ok, "no fusion %d: %s", i, e.msg);
        if (ok) {
            CHECK(!strstr(g->manifest, "into=") && strstr(g->manifest, "template=add in=c,d out=r"),
                  "no fusion %d: an add kernel:\n%s", i, g->manifest);
            cg_gen_free(g);
        }
        free(n), free(g);
    }
    if (!rc) cg_gen_free(o);
    free(s), free(o), free(m);
}

/* Precision tf32: conv2d_igemm_tc's kernel multiplies with one mma.sync a tile on
 * operands rounded by cvt.rna.tf32.f32 (no split), is named _tf32 and says so in
 * its header, where fp32's has three mma.sync a tile, the split and no precision
 * line; a layer's fp32 overrides the network's tf32; an FFMA template keeps its name
 * and says it computes in FP32; auto takes igemm_tc under tf32 from C, M >= 16
 * (igemm under fp32 there); the wgmma templates refuse tf32; tuning signatures
 * carry a precision other than fp32. */
static void test_precision_tf32(void)
{
    static const char *const text[2] = {
        "network: p\ninput: {channels: 16, height: 12, width: 12}\nlayers:\n"
        "  - {name: c, op: conv, M: 32, K: 3, strategy: igemm_tc, params: {bm: 32, bn: 64, bk: 16, tm: 16, tn: 8}}\n"
        "  - {name: d, op: conv, M: 16, K: 3}\n"
        "  - {name: e, op: conv, M: 8, K: 1, strategy: direct}\n",
        "network: p\ninput: {channels: 16, height: 12, width: 12}\nprecision: tf32\nlayers:\n"
        "  - {name: c, op: conv, M: 32, K: 3, strategy: igemm_tc, params: {bm: 32, bn: 64, bk: 16, tm: 16, tn: 8}}\n"
        "  - {name: d, op: conv, M: 16, K: 3}\n"
        "  - {name: e, op: conv, M: 8, K: 1, strategy: direct}\n"};
    cg_target tg;
    cg_target_default(&tg);
    tg.cc = 80;
    cg_gen_output *o[2] = {malloc(sizeof(cg_gen_output)), malloc(sizeof(cg_gen_output))};
    cg_spec *sp[2] = {spec_text("fp32.yaml", text[0]), spec_text("tf32.yaml", text[1])};
    cg_err e = {""};
    int ok = o[0] && o[1] && sp[0] && sp[1];
    for (int i = 0; ok && i < 2; i++) {
        ok = cg_generate_for(sp[i], "x", &tg, o[i], &e) == 0;
        CHECK(ok, "generate %s: %s", i ? "tf32" : "fp32", e.msg);
    }
    if (ok) {
        const cg_gen_kernel *f = conv_kernel(o[0], "c"), *t = conv_kernel(o[1], "c");
        CHECK(f && t, "both igemm_tc kernels");
        if (f && t) {
            size_t fl = strlen(f->kernel), tl = strlen(t->kernel);
            CHECK(fl > 3 && !strcmp(f->kernel + fl - 3, "_tc"), "fp32 name %s", f->kernel);
            CHECK(tl > 8 && !strcmp(t->kernel + tl - 8, "_tc_tf32"), "tf32 name %s", t->kernel);
            CHECK(count(f->source, "mma(sl[") == 3 && count(f->source, "mma0(sl[") == 1, "fp32: three mma.sync a tile");
            CHECK(count(t->source, "mma(sl[") == 1 && count(t->source, "mma0(sl[") == 1, "tf32: one mma.sync a tile");
            CHECK(count(t->source, "mma.sync.aligned.m16n8k8") == 2 && count(f->source, "mma.sync.aligned.m16n8k8") == 2,
                  "mma and mma0, one instruction each");
            CHECK(count(t->source, "asm(\"cvt.rna.tf32.f32") == 1 && !strstr(t->source, "split("), "tf32 rounds, no split");
            CHECK(count(f->source, "cvt.rna.tf32.f32") == 0 && strstr(f->source, "split("), "fp32 splits");
            CHECK(strstr(t->source, "tf32r(") && !strstr(f->source, "tf32r("), "the emulation path rounds under tf32");
            CHECK(strstr(t->source, "\n// precision:  tf32\n") != NULL, "tf32 header line");
            CHECK(!strstr(f->source, "// precision:"), "no precision line under fp32");
        }
        const cg_gen_kernel *d0 = conv_kernel(o[0], "d"), *d1 = conv_kernel(o[1], "d");
        CHECK(d0 && !strcmp(d0->tpl, "conv2d_igemm"), "fp32 auto, M = 16: igemm (%s)", d0 ? d0->tpl : "none");
        CHECK(d1 && !strcmp(d1->tpl, "conv2d_igemm_tc") && strstr(d1->source, "since precision is tf32"),
              "tf32 auto, M = 16: igemm_tc (%s)", d1 ? d1->tpl : "none");
        const cg_gen_kernel *e0 = conv_kernel(o[0], "e"), *e1 = conv_kernel(o[1], "e");
        CHECK(e0 && e1 && !strcmp(e0->kernel, e1->kernel), "direct keeps its name under tf32");
        CHECK(e1 && strstr(e1->source, "// precision:  fp32 (the layer asks tf32; conv2d_direct computes its "
                                        "products in FP32)"), "direct's header says FP32");
        char sig0[256], sig1[256];
        cg_tune_signature(&sp[0]->layers[0], sig0, sizeof sig0);
        cg_tune_signature(&sp[1]->layers[0], sig1, sizeof sig1);
        CHECK(!strstr(sig0, "precision") && strstr(sig1, " precision=tf32"), "signatures %s / %s", sig0, sig1);
    }
    for (int i = 0; i < 2; i++)
        if (ok) cg_gen_free(o[i]);
    /* a layer's own fp32 under the network's tf32: the 3xTF32 kernel */
    cg_spec *ov = spec_text("ov.yaml", "network: p\ninput: {channels: 16, height: 12, width: 12}\nprecision: tf32\n"
                            "layers:\n  - {name: c, op: conv, M: 32, K: 3, strategy: igemm_tc, precision: fp32}\n");
    if (ov && o[0] && cg_generate_for(ov, "x", &tg, o[0], &e) == 0) {
        const cg_gen_kernel *k = conv_kernel(o[0], "c");
        CHECK(k && !strstr(k->kernel, "_tf32") && count(k->source, "mma(sl[") == 3, "fp32 override: %s",
              k ? k->kernel : "none");
        cg_gen_free(o[0]);
    } else CHECK(0, "ov.yaml: %s", e.msg);
    /* sm_90a: igemm_wg refuses tf32; planes takes it (one product a step, the operands rounded,
     * the weights' buffers without remainders), and auto takes planes; 3x3 layers unpadded or
     * of C > 128 keep igemm_tc */
    int arch = 90;
    cg_aot_target(&arch, 1, &tg);
    cg_spec *wg = spec_text("wg.yaml", "network: p\ninput: {channels: 64, height: 20, width: 20}\nprecision: tf32\n"
                            "layers:\n  - {name: c, op: conv, M: 64, K: 5, strategy: igemm_wg}\n");
    if (wg && o[0]) {
        CHECK(cg_generate_for(wg, "x", &tg, o[0], &e) != 0, "igemm_wg accepted tf32");
        CHECK_CONTAINS(e.msg, "conv2d_igemm_wg computes 3xTF32 (FP32 accuracy) only; precision tf32");
        char planes_name[256] = "";
        snprintf(wg->layers[0].strategy, sizeof wg->layers[0].strategy, "planes");
        if (cg_generate_for(wg, "x", &tg, o[0], &e) == 0) {
            const cg_gen_kernel *k = conv_kernel(o[0], "c");
            CHECK(k && strstr(k->kernel, "_tf32") && count(k->source, "wgmma(sl[t]") == 1 &&
                      count(k->source, "cvt.rna.tf32.f32") == 1 && strstr(k->source, "rna(sm[base + off])") &&
                      !strstr(k->source, "al[") && !strstr(k->source, "0xffffe000u) &"),
                  "planes in tf32: one product, rounded operands (%s)", k ? k->kernel : "none");
            if (k) snprintf(planes_name, sizeof planes_name, "%s", k->kernel);
            cg_gen_free(o[0]);
        } else CHECK(0, "planes in tf32: %s", e.msg);
        snprintf(wg->layers[0].strategy, sizeof wg->layers[0].strategy, "auto");
        if (cg_generate_for(wg, "x", &tg, o[0], &e) == 0) {
            const cg_gen_kernel *k = conv_kernel(o[0], "c");
            CHECK(k && !strcmp(k->tpl, "conv2d_planes") && !strcmp(k->kernel, planes_name) &&
                      strstr(k->source, "since precision is tf32 (one TF32 product a step)"),
                  "sm_90a tf32 auto: %s", k ? k->kernel : "none");
            cg_gen_free(o[0]);
        } else CHECK(0, "wg auto: %s", e.msg);
        /* 3x3: planes where padded and C <= 128 (a, c), else igemm_tc (b: C = 256; d: no padding) */
        cg_spec *wide = spec_text("wide.yaml", "network: p\ninput: {channels: 64, height: 16, width: 16}\nprecision: tf32\n"
                                  "layers:\n  - {name: a, op: conv, M: 256, K: 3, padding: 1}\n"
                                  "  - {name: b, op: conv, M: 128, K: 3, padding: 1}\n"
                                  "  - {name: c, op: conv, M: 64, K: 3, padding: 1}\n"
                                  "  - {name: d, op: conv, M: 64, K: 3}\n");
        if (wide && cg_generate_for(wide, "x", &tg, o[0], &e) == 0) {
            static const char *const want[][2] = {
                {"a", "conv2d_planes"}, {"b", "conv2d_igemm_tc"}, {"c", "conv2d_planes"}, {"d", "conv2d_igemm_tc"}};
            for (int i = 0; i < 4; i++) {
                const cg_gen_kernel *k = conv_kernel(o[0], want[i][0]);
                CHECK(k && !strcmp(k->tpl, want[i][1]), "sm_90a tf32 auto, 3x3 layer %s: %s, want %s", want[i][0],
                      k ? k->tpl : "none", want[i][1]);
            }
            cg_gen_free(o[0]);
        } else CHECK(0, "wide.yaml: %s", e.msg);
        free(wide);
    }
    free(ov), free(wg), free(sp[0]), free(sp[1]), free(o[0]), free(o[1]);
}

/* 16-bit memory paths: auto gives direct the 3x3 first layers of 64 maps (and of 3 channels) and a
 * deep layer of 3 maps (its channel loop), its __constant__ weights FP32 (no wdtype= in the
 * manifest: the runtime uploads them as they are) and, at the large batch, 2 or 4 columns a thread
 * stored in pairs where even; one column at 8 images; a 5x5 first layer keeps igemm_wg; input_u8
 * and an add move four 16-bit elements at a time; planes' tr=1 with whole 8x8 images a block
 * stores four outputs at a time. */
static void test_half_memory(void)
{
    static const char text[] =
        "network: s\ninput: {channels: 1, height: 34, width: 34}\nprecision: bf16\nlayers:\n"
        "  - {name: a, op: conv, M: 64, K: 3}\n"                                    /* 1 -> 64, 32x32 */
        "  - {name: b, op: conv, M: 3, K: 3, activation: tanh}\n"                   /* 64 -> 3, 30x30 */
        "  - {name: c, op: conv, M: 32, K: 3, padding: same, activation: relu}\n"   /* 3 -> 32 */
        "  - {name: d, op: conv, M: 32, K: 5, input: input}\n"                      /* 1 -> 32, 5x5 */
        "  - {name: e, op: conv, M: 32, K: 3, padding: same, input: d}\n"
        "  - {name: f, op: add, input: [e, d, c], activation: relu}\n"              /* 32x30x30 each */
        "  - {name: h, op: fc, out: 10}\n";
    static const char tr[] =
        "network: t\ninput: {channels: 64, height: 8, width: 8}\nprecision: bf16\nlayers:\n"
        "  - {name: a, op: conv, M: 128, K: 3, padding: same, strategy: planes, params: {tr: 1, ib: 3}}\n"
        "  - {name: b, op: conv, M: 128, K: 3, padding: same, strategy: planes, params: {tr: 1, ib: 3}}\n"
        "  - {name: c, op: add, input: [b, a]}\n"
        "  - {name: d, op: fc, out: 10}\n";
    cg_target tg;
    int arch = 90;
    cg_aot_target(&arch, 1, &tg);
    cg_gen_output *o = malloc(sizeof *o);
    cg_spec *sp = spec_text("mem.yaml", text), *st = spec_text("tr.yaml", tr);
    cg_err e = {""};
    if (!o || !sp || !st) {
        CHECK(0, "allocation");
        free(o), free(sp), free(st);
        return;
    }
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *a = conv_kernel(o, "a"), *b = conv_kernel(o, "b"), *c = conv_kernel(o, "c"),
                            *d = conv_kernel(o, "d"),
                            *in = layer_kernel(o, "input", "input_u8");
        CHECK(a && !strcmp(a->tpl, "conv2d_direct") && strstr(a->source, "__constant__ float ") &&
                  param(a->source, "cols") == 4 && strstr(a->source, "*reinterpret_cast<cg_bf16x2*>(y + ") &&
                  strstr(a->source, "FP32 weights and bias"),
              "1 -> 64 3x3 in bf16: direct, FP32 constant weights, 4 columns stored in pairs (%s)",
              a ? a->kernel : "none");
        CHECK(b && !strcmp(b->tpl, "conv2d_direct") && strstr(b->kernel, "_cl_bf16") && param(b->source, "cols") == 3 &&
                  !strstr(b->source, "cg_bf16x2*"),
              "64 -> 3 in bf16: direct's channel loop, 3 columns of 30, one output a store (%s)", b ? b->kernel : "none");
        CHECK(c && !strcmp(c->tpl, "conv2d_direct") && param(c->source, "cols") == 3,
              "3 -> 32 3x3 same in bf16: direct, 3 columns (%s)", c ? c->kernel : "none");
        CHECK(d && !strcmp(d->tpl, "conv2d_igemm_wg"), "1 -> 32 5x5 in bf16: igemm_wg (%s)", d ? d->kernel : "none");
        CHECK(in && strstr(in->source, "reinterpret_cast<cg_bf16x4*>(out)[i] = y;"),
              "input_u8 into bf16: four pixels a thread (%s)", in ? in->kernel : "none");
        const char *ka = a ? strstr(o->manifest, a->kernel) : NULL, *nl = ka ? strchr(ka, '\n') : NULL;
        char line[1200] = "";
        if (ka && nl) snprintf(line, sizeof line, "%.*s", (int)(nl - ka), ka);
        CHECK(line[0] && !strstr(line, "wdtype="), "direct's FP32 constant weights: no wdtype in its manifest line: %s",
              line);
        cg_gen_free(o);
    } else CHECK(0, "mem.yaml: %s", e.msg);
    tg.batch = 8;
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *a = conv_kernel(o, "a");
        CHECK(a && param(a->source, "cols") == 1 && !strstr(a->source, "cg_bf16x2*"),
              "at 8 images: one column a thread (%s)", a ? a->kernel : "none");
        cg_gen_free(o);
    } else CHECK(0, "mem.yaml at 8: %s", e.msg);
    tg.batch = 0;
    if (cg_generate_for(st, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *a = conv_kernel(o, "a");
        CHECK(a && strstr(a->kernel, "_tr_i3_") && strstr(a->source, "*reinterpret_cast<cg_bf16x4*>(ob + im * "),
              "planes tr=1, three 8x8 images a block: four outputs a store (%s)", a ? a->kernel : "none");
        const cg_gen_kernel *c = layer_kernel(o, "c", "add");
        CHECK(c && strstr(c->kernel, "_v4_") && strstr(c->source, "reinterpret_cast<const cg_bf16x4*>(in)[i]"),
              "the bf16 add: four elements a thread (%s)", c ? c->kernel : "none");
        cg_gen_free(o);
    } else CHECK(0, "tr.yaml: %s", e.msg);
    free(sp), free(st), free(o);
}

/* One test's sm_90a target (cg_aot_target's, as a fat binary's sm_90), its spec from text as
 * file `path`, and an output record: 0, or -1 (a failed check; nothing left to free). */
static int sm90a_case(const char *path, const char *text, cg_target *tg, cg_spec **sp, cg_gen_output **o)
{
    int arch = 90;
    cg_aot_target(&arch, 1, tg);
    *o = malloc(sizeof **o);
    *sp = spec_text(path, text);
    if (*o && *sp) return 0;
    CHECK(0, "allocation");
    free(*o), free(*sp);
    return -1;
}

/* Spec text (as file `path`) that generating for target tg must refuse, with msg in the error. */
static void expect_refusal(const cg_target *tg, cg_gen_output *o, const char *path, const char *text, const char *msg)
{
    cg_err e = {""};
    cg_spec *sp = spec_text(path, text);
    CHECK(sp && cg_generate_for(sp, "x", tg, o, &e) != 0, "%s: generated, where it should be refused", path);
    CHECK_CONTAINS(e.msg, msg);
    free(sp);
}

/* A template's refusals: each row's layer (on an input of `head`) written `strategy: strategy`, refused
 * by generating for tg with the row's message. */
typedef struct { const char *path, *head, *layer, *msg; } refusal;
static void expect_refusals(const cg_target *tg, cg_gen_output *o, const char *strategy, const refusal *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char spec[512];
        snprintf(spec, sizeof spec, "network: s\ninput: {%slayers:\n  - {name: a, op: conv, %s, strategy: %s}\n",
                 rows[i].head, rows[i].layer, strategy);
        expect_refusal(tg, o, rows[i].path, spec, rows[i].msg);
    }
}

/* A template of several kernels (T.parts) has no kernel the tuner's harness could time alone: emitting
 * layer 0 of spec `text` alone under tname is refused with msg. */
static void expect_not_alone(const char *path, const char *text, const char *tname, const char *msg)
{
    cg_err e = {""};
    cg_spec *s1 = spec_text(path, text);
    cg_gen_kernel k;
    cg_kernel_launch kl;
    CHECK(s1 && cg_gen_emit_one(s1, 0, tname, "", &k, &kl, &e) != 0, "%s: no kernel emitted alone", tname);
    CHECK_CONTAINS(e.msg, msg);
    free(s1);
}

/* The template that generating spec sp for target tg gives layer `layer`'s conv kernel, into tpl
 * (cap bytes; "none" where the layer has no conv kernel); NULL where generating failed (tpl: why). */
static const char *template_at(const cg_spec *sp, const cg_target *tg, cg_gen_output *o, const char *layer, char *tpl,
                               size_t cap)
{
    cg_err e = {""};
    if (cg_generate_for(sp, "x", tg, o, &e)) {
        snprintf(tpl, cap, "%s", e.msg);
        return NULL;
    }
    const cg_gen_kernel *k = conv_kernel(o, layer);
    snprintf(tpl, cap, "%s", k ? k->tpl : "none");
    cg_gen_free(o);
    return tpl;
}

/* conv2d_tma: auto gives it a 16-bit stride-1 layer of 128 channels or more, 64 maps or more, a 3x3
 * or larger kernel and 64 output pixels or more on sm_90a at the large batch, and then a layer of 64
 * channels and maps or more next to such a layer (planner.tma_chains: one whose output only a tma
 * layer reads, one that alone reads a tma layer's output); a tma layer whose output only the next
 * tma layer reads hands it over channels-last (hwc=, no transpose kernel for the next). The first
 * layer of a chain makes its input channels-last into <layer>.x, then the product from tensor maps
 * over it and over the weights tap by tap, the 2x2 pool fused on 8-wide tiles. Layers of fewer maps
 * or channels, a 64-channel, a 1x1 and a 6x6-output layer with no tma neighbour, the same network at
 * 1,024 images and on sm_80 keep the rules before it; written for a layer it cannot compute it is
 * refused with the reason; the tuner emits none of its kernels alone. */
/* the product kernel of conv2d_tma for layer `layer` (after its channels-last copy), NULL where none */
static const cg_gen_kernel *tma_kernel(const cg_gen_output *o, const char *layer)
{
    for (int i = 0; i < o->nkernels; i++)
        if (!strcmp(o->k[i].layer, layer) && !strncmp(o->k[i].kernel, "conv2d_tma_c", 12)) return &o->k[i];
    return NULL;
}

static void test_tma(void)
{
    static const char text[] =
        "network: s\ninput: {channels: 64, height: 16, width: 16}\nprecision: bf16\nlayers:\n"
        "  - {name: z, op: conv, M: 128, K: 3, padding: 1}\n"                                            /* chain */
        "  - {name: a, op: conv, M: 128, K: 3, padding: 1, bias: true, activation: relu, pool: max2}\n" /* tma */
        "  - {name: b, op: conv, M: 64, K: 3, padding: 1}\n"                                             /* tma */
        "  - {name: c, op: conv, M: 64, K: 3, padding: 1}\n"                                             /* chain */
        "  - {name: d, op: conv, M: 24, K: 1}\n"                                                         /* M = 24 */
        "  - {name: e, op: conv, M: 64, K: 3, padding: 1}\n"                                             /* C = 24 */
        "  - {name: f, op: conv, M: 64, K: 3, padding: 1}\n"                                             /* C = 64 */
        "  - {name: g, op: conv, M: 16, K: 1}\n"                                                         /* M = 16 */
        "  - {name: h, op: conv, M: 128, K: 3, padding: 1}\n"                                            /* C = 16 */
        "  - {name: i, op: conv, M: 128, K: 1}\n"                                                        /* pair */
        "  - {name: j, op: conv, M: 64, K: 3}\n"                                                         /* pair */
        "  - {name: k, op: conv, M: 32, K: 3}\n";                                                        /* reader */
    cg_target tg;
    cg_gen_output *o;
    cg_spec *sp;
    cg_err e = {""};
    if (sm90a_case("tma.yaml", text, &tg, &sp, &o)) return;
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        int parts = 0, order = 1, na = 0;
        const char *want[] = {"conv2d_tma_nhwc_", "conv2d_tma_c64m128k3_h16w16_p1_none_"};
        for (int i = 0; i < o->nkernels; i++) {
            if (!strcmp(o->k[i].layer, "z")) order = order && parts < 2 && strstr(o->k[i].kernel, want[parts]), parts++;
            na += !strcmp(o->k[i].layer, "a") || !strcmp(o->k[i].layer, "b") || !strcmp(o->k[i].layer, "c");
        }
        const cg_gen_kernel *z = tma_kernel(o, "z"), *a = tma_kernel(o, "a"), *b = tma_kernel(o, "b"),
                            *c = tma_kernel(o, "c");
        CHECK(parts == 2 && order && z && strstr(z->kernel, "_hwc_bf16") &&
                  strstr(z->source, "auto: tma, since precision is bf16") &&
                  strstr(z->source, "its output goes to a, a tma layer, channels-last") &&
                  strstr(z->source, "stored channels-last for the layer after"),
              "64 -> 128 before a tma layer: tma's two kernels, its output channels-last (%d, %s)", parts,
              z ? z->kernel : "none");
        CHECK(na == 3 && a && strstr(a->source, "auto: tma, since precision is bf16") &&
                  strstr(a->kernel, "_m128w2p0_8x16x2_") && strstr(a->kernel, "_hwc_bf16") &&
                  strstr(a->source, "cg_store_pair(o + 8 * q") &&
                  strstr(a->source, "from the layer before's channels-last output"),
              "128 -> 128 3x3 on 16x16 with a 2x2 pool: one kernel reading z's output as it lies, 8-wide tiles, "
              "storing channels-last (%d kernels for a, b and c; %s)", na, a ? a->kernel : "none");
        CHECK(strstr(o->manifest, "in=input out=z.x ") && strstr(o->manifest, "in=z.x out=z ") &&
                  strstr(o->manifest, "in=z out=a ") && strstr(o->manifest, "in=a out=b ") &&
                  strstr(o->manifest, "in=b out=c ") &&
                  strstr(o->manifest, "args=map:in:128.16.16.n:64.8.16.2:128,map:weights:128.128.9:64.64.1:128,bias,"
                                      "out,n") &&
                  strstr(o->manifest, "weights=arg:taps:9") && strstr(o->manifest, "\ntensor z bf16 32768 hwc=128.16.16\n") &&
                  strstr(o->manifest, "\ntensor a bf16 8192 hwc=128.8.8\n") &&
                  strstr(o->manifest, "\ntensor b bf16 4096 hwc=64.8.8\n") && strstr(o->manifest, "\ntensor c bf16 4096\n") &&
                  !strstr(o->manifest, "a.x") && !strstr(o->manifest, "b.x") && !strstr(o->manifest, "c.x"),
              "the manifest: one channels-last copy for the chain, z, a and b handed on (hwc=), c stored C x H x W "
              "for d, maps over the tensors and the weights tap by tap");
        CHECK(z && strstr(z->source, "cp.async.bulk.tensor.4d") && strstr(z->source, "setmaxnreg.inc") &&
                  strstr(z->source, "m64n128k16.f32.bf16.bf16") && a && strstr(a->source, "__shfl_xor_sync"),
              "the bulk copies, the producer's registers given up, one BF16 product, the pool across lanes");
        CHECK(b && strstr(b->kernel, "_m64w2p0_8x8x4_") && strstr(b->kernel, "_hwc_bf16"),
              "128 -> 64 on 8x8: tma, 64-map tiles of four images (%s)", b ? b->kernel : "none");
        CHECK(c && !strstr(c->kernel, "_hwc") && strstr(c->source, "it reads b, a tma layer's output, as it lies"),
              "64 -> 64 after a tma layer: tma, read as it lies, stored C x H x W for a layer that is not (%s)",
              c ? c->kernel : "none");
        const cg_gen_kernel *i = tma_kernel(o, "i"), *j = tma_kernel(o, "j"), *k = tma_kernel(o, "k");
        CHECK(i && strstr(i->kernel, "conv2d_tma_c128m128k1_") && strstr(i->kernel, "_hwc_bf16") &&
                  strstr(i->source, "its output goes to j alone, which takes tma too, channels-last") && j &&
                  strstr(j->kernel, "_hwc_bf16") && strstr(j->source, "it alone reads i's output, which takes tma too"),
              "128 -> 128 1x1 whose output only a 128 -> 64 layer reads, neither next to a tma layer: a chain of "
              "their own, i handing j its output channels-last (%s, %s)", i ? i->kernel : "none", j ? j->kernel : "none");
        CHECK(k && strstr(k->kernel, "conv2d_tma_c64m32k3_") && !strstr(k->kernel, "_hwc") &&
                  strstr(k->source, "it reads j, a tma layer's output, as it lies") &&
                  strstr(o->manifest, "\ntensor i bf16 8192 hwc=128.8.8\n") &&
                  strstr(o->manifest, "\ntensor j bf16 2304 hwc=64.6.6\n") && strstr(o->manifest, "\ntensor k f32 512\n"),
              "64 -> 32 reading the pair's output: tma (32 maps are enough to read a tma layer's output), j handing "
              "it channels-last, k stored C x H x W in FP32, the last layer (%s)", k ? k->kernel : "none");
        static const char *const others[] = {"d", "e", "f", "g", "h"};
        for (size_t q = 0; q < sizeof others / sizeof *others; q++) {
            const cg_gen_kernel *ok = conv_kernel(o, others[q]);
            CHECK(ok && strcmp(ok->tpl, "conv2d_tma"), "layer %s (16 or 24 maps or channels, or 64 channels next to no layer "
                  "tma serves): not tma (%s)", others[q], ok ? ok->tpl : "none");
        }
        cg_gen_free(o);
    } else CHECK(0, "tma.yaml: %s", e.msg);
    char tpl[256];
    tg.batch = 1024;
    const char *t = template_at(sp, &tg, o, "a", tpl, sizeof tpl);
    CHECK(t && strcmp(t, "conv2d_tma"), "at 1,024 images: not tma (%s)", tpl);
    tg.batch = 0;
    cg_target t80;
    int arch = 80;
    cg_aot_target(&arch, 1, &t80);
    t = template_at(sp, &t80, o, "a", tpl, sizeof tpl);
    CHECK(t && strcmp(t, "conv2d_tma"), "sm_80: not tma (%s)", tpl);
    free(sp);
    /* refused, with the reason */
    static const refusal refused[] = {
        {"tma-fp32.yaml", "channels: 64, height: 8, width: 8}\n", "M: 64, K: 3",
         "conv2d_tma computes 16-bit tensors (precision bf16 or fp16)"},
        {"tma-s2.yaml", "channels: 64, height: 8, width: 8}\nprecision: bf16\n", "M: 64, K: 3, stride: 2",
         "conv2d_tma computes stride-1 convolutions; this layer has stride 2"},
        {"tma-c8.yaml", "channels: 8, height: 8, width: 8}\nprecision: bf16\n", "M: 64, K: 3",
         "C must be a multiple of 8 of at least 16 (C = 8)"},
        {"tma-c20.yaml", "channels: 20, height: 8, width: 8}\nprecision: bf16\n", "M: 64, K: 3",
         "C must be a multiple of 8 of at least 16 (C = 20)"},
        {"tma-m12.yaml", "channels: 64, height: 8, width: 8}\nprecision: bf16\n", "M: 12, K: 3",
         "M must be a multiple of 8 (M = 12)"},
        {"tma-ping.yaml", "channels: 64, height: 8, width: 8}\nprecision: bf16\n",
         "M: 64, K: 3, params: {ping: 1, mw: 1, bw: 8, bh: 8, bi: 2}",
         "ping=1: a warpgroup takes the whole tile, so bw*bh*bi = 128 must be 64*mw = 64"},
        {"tma-regs.yaml", "channels: 64, height: 8, width: 8}\nprecision: bf16\n",
         "M: 256, K: 3, params: {bm: 256, mw: 2, ping: 0, bw: 8, bh: 8, bi: 4}",
         "mw=2 x bm=256: 256 accumulators a thread"},
    };
    expect_refusals(&tg, o, "tma", refused, sizeof refused / sizeof *refused);
    expect_refusal(&t80, o, "tma-sm80.yaml",
                   "network: s\ninput: {channels: 64, height: 8, width: 8}\nprecision: bf16\nlayers:\n"
                   "  - {name: a, op: conv, M: 64, K: 3, strategy: tma}\n",
                   "conv2d_tma needs wgmma and the bulk tensor copy engine: sm_90 built as sm_90a (the target is sm_80)");
    free(o);
    /* the tuner: no candidate (two kernels are not timed alone), and the note says why */
    expect_not_alone("tma1.yaml", "network: s\ninput: {channels: 64, height: 8, width: 8}\nprecision: fp16\n"
                     "layers:\n  - {name: a, op: conv, M: 64, K: 3}\n",
                     "conv2d_tma", "conv2d_tma runs as 2 kernels (nhwc, conv) and a kernel is timed alone here");
}

/* Spec text (as file `path`) generated for sm_90a and its output handed to check; a spec that does
 * not generate fails. */
static void sm90a_generated(const char *path, const char *text, void (*check)(const cg_gen_output *o))
{
    cg_target tg;
    cg_gen_output *o;
    cg_spec *sp;
    cg_err e = {""};
    if (sm90a_case(path, text, &tg, &sp, &o)) return;
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        check(o);
        cg_gen_free(o);
    } else CHECK(0, "%s: %s", path, e.msg);
    free(sp);
    free(o);
}

static void tma_narrow_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = tma_kernel(o, "a"), *b = tma_kernel(o, "b"), *c = tma_kernel(o, "c");
    CHECK(a && strstr(a->source, "0x8000002000010000ull") && strstr(a->source, "chunks of 32 channels") &&
              strstr(o->manifest, "map:in:32.8.8.n:32.") && strstr(o->manifest, ":64,map:weights:16.32.9:64.32.1:128,"),
          "32 channels: steps of 32, the 64-byte swizzle (layout 2, 512-byte atoms) for the input, 4,096-byte weight "
          "boxes (%s)", a ? a->kernel : "none");
    CHECK(b && strstr(b->source, "0xc000001000010000ull") && strstr(b->source, "chunks of 16 channels") &&
              strstr(o->manifest, "map:in:16.8.8.n:16.") && strstr(o->manifest, ":32,map:weights:24.16.9:64.16.1:128,"),
          "16 channels: steps of 16, the 32-byte swizzle (layout 3, 256-byte atoms) (%s)", b ? b->kernel : "none");
    CHECK(c && strstr(c->source, "0x8000002000010000ull") && strstr(o->manifest, "map:in:24.8.8.n:32.") &&
              strstr(c->source, "1 chunks of 32 channels"),
          "24 channels: one step of 32, its last 8 channels the copy's zeros (%s)", c ? c->kernel : "none");
}

/* conv2d_tma on fewer than 64 channels, written: 32 channels a step in rows of 64 bytes (the input's map
 * and wgmma's A operand in the 64-byte swizzle), 16 in rows of 32 bytes (the 32-byte swizzle), 24 as a
 * step of 32 (its last 8 zeros); the weights' boxes keep 128-byte rows of 64 maps, kc channels deep. */
static void test_tma_narrow(void)
{
    sm90a_generated("tn.yaml",
                    "network: s\ninput: {channels: 32, height: 8, width: 8}\nprecision: bf16\nlayers:\n"
                    "  - {name: a, op: conv, M: 16, K: 3, padding: 1, strategy: tma}\n"
                    "  - {name: b, op: conv, M: 24, K: 3, padding: 1, strategy: tma}\n"
                    "  - {name: c, op: conv, M: 64, K: 3, padding: 1, strategy: tma}\n",
                    tma_narrow_checks);
}

static void direct_hwc_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a"), *b = tma_kernel(o, "b");
    CHECK(a && !strcmp(a->tpl, "conv2d_direct") && strstr(a->kernel, "_hwc_bf16") &&
              strstr(a->source, "extern __shared__") && strstr(a->source, "yo[i] = hs[") &&
              strstr(o->manifest, "\ntensor a bf16 4096 hwc=64.8.8\n") && b && !strstr(o->manifest, " out=b.x ") &&
              strstr(b->source, "from the layer before's channels-last output"),
          "direct 3 -> 64 with its pool before a chain: stored channels-last through shared memory, read as it "
          "lies (%s)", a ? a->kernel : "none");
}

static void direct_chw_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a"), *b = tma_kernel(o, "b");
    CHECK(a && !strcmp(a->tpl, "conv2d_direct") && !strstr(a->kernel, "_hwc") &&
              strstr(o->manifest, "\ntensor a bf16 4096\n") && b && strstr(o->manifest, " out=b.x ") &&
              strstr(b->source, "from the channels-last copy"),
          "direct with its maps split over blocks (ms=2): C x H x W, the tma layer making its copy (%s)",
          a ? a->kernel : "none");
}

static void direct_joins_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a"), *b = tma_kernel(o, "b");
    CHECK(a && strstr(a->kernel, "_hwc_bf16") && b &&
              strstr(b->source, "it alone reads a's output, which conv2d_direct stores channels-last") &&
              !strstr(o->manifest, " out=b.x "),
          "auto: 1 -> 64 direct, then a 64 -> 128 3x3 joins tma, reading it channels-last (%s, %s)",
          a ? a->kernel : "none", b ? b->kernel : "none");
}

static void direct_5x5_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a"), *b = conv_kernel(o, "b");
    CHECK(a && !strstr(a->kernel, "_hwc") && b && strcmp(b->tpl, "conv2d_tma"),
          "auto: a 64 -> 128 5x5 after a direct layer does not join tma (%s, %s)", a ? a->kernel : "none",
          b ? b->tpl : "none");
}

static void direct_pooled_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a");
    CHECK(a && strstr(a->kernel, "_pool2_") && strstr(a->kernel, "_hwc_bf16") &&
              strstr(o->manifest, " shared=133120 ") && !strstr(o->manifest, " out=b.x "),
          "a pooled 1 -> 128 direct layer of 512 pooled pixels a block stages 133,120 bytes (within the "
          "pooled limit) and stores channels-last (%s)", a ? a->kernel : "none");
}

static void direct_wide_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a");
    CHECK(a && !strstr(a->kernel, "_hwc") && strstr(a->kernel, "x4g0f1_bf16") && strstr(o->manifest, " out=b.x "),
          "an unpooled 3 -> 64 direct layer of four columns a thread (135,168 bytes of staging, over the "
          "unpooled limit): C x H x W, the tma layer making its copy (%s)", a ? a->kernel : "none");
}

static void handoff32_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = tma_kernel(o, "a"), *b = tma_kernel(o, "b");
    CHECK(a && strstr(a->kernel, "conv2d_tma_c32m64k3_") && strstr(a->kernel, "_hwc_bf16") &&
              strstr(a->source, "its output goes to b, a tma layer, channels-last") && b,
          "auto: a 32 -> 64 3x3 whose output goes to a tma layer joins it (%s)", a ? a->kernel : "none");
}

static void handoff32_m32_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a");
    CHECK(a && strcmp(a->tpl, "conv2d_tma"), "auto: a 32 -> 32 layer before a tma layer does not join (%s)",
          a ? a->tpl : "none");
}

static void first_direct_checks(const cg_gen_output *o)
{
    const cg_gen_kernel *a = conv_kernel(o, "a"), *b = tma_kernel(o, "b");
    CHECK(a && !strcmp(a->tpl, "conv2d_direct") && strstr(a->kernel, "_hwc_bf16") &&
              strstr(a->source, "its output goes to b alone, a tma layer, which direct stores channels-last") && b &&
              strstr(b->kernel, "conv2d_tma_c32m64k3_") && !strstr(o->manifest, " out=b.x "),
          "auto: a 1 -> 32 first layer (igemm_tc's otherwise) takes direct where the 32 -> 64 layer reading it "
          "joins tma, handing it over channels-last (%s)", a ? a->kernel : "none");
}

/* The staging's limits (conv2d_direct's HWC_MAX_STAGE and HWC_MAX_STAGE_POOLED: one block an SM pays
 * off only where a fused pool makes four products a stored value), and 32-channel layers of 64 maps
 * or more handing their output on to a tma layer (planner.AUTO_TMA_HANDOFF_MIN_C), not of 32 maps; a
 * first layer of 32 maps before such a layer takes direct to hand it its output (l.hwc_first). */
static void test_direct_hwc_limits(void)
{
    sm90a_generated("dp.yaml",
                    "network: s\ninput: {channels: 1, height: 32, width: 32}\nprecision: bf16\nlayers:\n"
                    "  - {name: a, op: conv, M: 128, K: 3, padding: 1, activation: relu, pool: max2}\n"
                    "  - {name: b, op: conv, M: 256, K: 3, padding: 1}\n",
                    direct_pooled_checks);
    sm90a_generated("dw.yaml",
                    "network: s\ninput: {channels: 3, height: 32, width: 32}\nprecision: bf16\nlayers:\n"
                    "  - {name: a, op: conv, M: 64, K: 3, padding: 1, activation: relu, strategy: direct, "
                    "params: {cols: 4}}\n"
                    "  - {name: b, op: conv, M: 64, K: 3, padding: 1, strategy: tma}\n",
                    direct_wide_checks);
    static const char head[] = "network: s\ninput: {channels: 32, height: 16, width: 16}\nprecision: bf16\nlayers:\n";
    static const char tail[] = "  - {name: b, op: conv, M: 128, K: 3, padding: 1, pool: max2}\n"
                               "  - {name: c, op: conv, M: 128, K: 3, padding: 1}\n";
    char text[512];
    snprintf(text, sizeof text, "%s  - {name: a, op: conv, M: 64, K: 3, padding: 1, activation: relu}\n%s", head, tail);
    sm90a_generated("h32.yaml", text, handoff32_checks);
    snprintf(text, sizeof text, "%s  - {name: a, op: conv, M: 32, K: 3, padding: 1, activation: relu}\n%s", head, tail);
    sm90a_generated("h32m.yaml", text, handoff32_m32_checks);
    sm90a_generated("fd.yaml",
                    "network: s\ninput: {channels: 1, height: 20, width: 20}\nprecision: bf16\nlayers:\n"
                    "  - {name: a, op: conv, M: 32, K: 3, activation: relu}\n"
                    "  - {name: b, op: conv, M: 64, K: 3, activation: relu, pool: max2}\n"
                    "  - {name: c, op: conv, M: 128, K: 3, padding: 1}\n"
                    "  - {name: d, op: conv, M: 128, K: 3, padding: 1}\n",
                    first_direct_checks);
}

/* conv2d_direct before a tma layer that alone reads its output stores it channels-last (T.hwc_out_ok:
 * the block's outputs staged in shared memory, copied out as one run), and the tma layer reads it as it
 * lies; with its maps split over blocks (ms=2) it stores C x H x W and the tma layer makes its copy.
 * Under auto a layer of 64 maps or more and K <= 3 that alone reads such a direct layer's output joins
 * tma (planner.tma_chains); a 5x5 does not (it lost to planes on an H200 even without its copy). */
static void test_direct_hwc(void)
{
    static const char head[] = "network: s\ninput: {channels: 3, height: 16, width: 16}\nprecision: bf16\nlayers:\n";
    static const char tail[] = "  - {name: b, op: conv, M: 128, K: 3, padding: 1}\n"
                               "  - {name: c, op: conv, M: 128, K: 3, padding: 1}\n";
    char text[1024];
    snprintf(text, sizeof text, "%s%s%s", head,
             "  - {name: a, op: conv, M: 64, K: 3, padding: 1, bias: true, activation: relu, pool: max2, "
             "strategy: direct, params: {block: 128}}\n", tail);
    sm90a_generated("dh.yaml", text, direct_hwc_checks);
    snprintf(text, sizeof text, "%s%s%s", head,
             "  - {name: a, op: conv, M: 64, K: 3, padding: 1, bias: true, activation: relu, pool: max2, "
             "strategy: direct, params: {ms: 2}}\n", tail);
    sm90a_generated("dc.yaml", text, direct_chw_checks);
    static const char one[] = "network: s\ninput: {channels: 1, height: 20, width: 20}\nprecision: bf16\nlayers:\n"
                              "  - {name: a, op: conv, M: 64, K: 3, activation: relu}\n";
    snprintf(text, sizeof text, "%s  - {name: b, op: conv, M: 128, K: 3, activation: relu}\n", one);
    sm90a_generated("dj.yaml", text, direct_joins_checks);
    snprintf(text, sizeof text, "%s  - {name: b, op: conv, M: 128, K: 5, activation: relu}\n", one);
    sm90a_generated("d5.yaml", text, direct_5x5_checks);
}

/* conv2d_pointwise: auto gives it a 16-bit 1x1 layer of stride 1 without padding or a pool, on
 * planes of an even number of pixels, at the large batch (runs of 4 pixels on 22x22: 8-byte copies;
 * the weights resident, several tiles a block); a pooled 1x1 layer, one on odd planes (11x11) and
 * the same layer at 8 images keep the rules before it; written for the pooled layer it fuses the
 * pool, for an fp32 network or a 3x3 layer it is refused with the reason. */
static void test_pointwise(void)
{
    static const char text[] =
        "network: s\ninput: {channels: 64, height: 22, width: 22}\nprecision: bf16\nlayers:\n"
        "  - {name: a, op: conv, M: 128, K: 1, bias: true, activation: relu}\n"   /* 484 pixels: pointwise */
        "  - {name: b, op: conv, M: 48, K: 1, pool: max2}\n"                      /* pooled: not (48 maps: no tma pair) */
        "  - {name: c, op: conv, M: 32, K: 1}\n"                                  /* 11x11: not */
        "  - {name: d, op: fc, out: 10}\n";
    cg_target tg;
    cg_gen_output *o;
    cg_spec *sp;
    cg_err e = {""};
    if (sm90a_case("pw.yaml", text, &tg, &sp, &o)) return;
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *a = conv_kernel(o, "a"), *b = conv_kernel(o, "b"), *c = conv_kernel(o, "c");
        CHECK(a && !strcmp(a->tpl, "conv2d_pointwise") && strstr(a->source, "auto: pointwise") &&
                  strstr(a->source, "cp.async.ca.shared.global [%0], [%1], 8,") && strstr(a->kernel, "_r1t") &&
                  strstr(a->source, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") &&
                  strstr(a->source, "products on tensor cores"),
              "bf16 64 -> 128 1x1 on 22x22: pointwise, 8-byte runs, weights resident (%s)", a ? a->kernel : "none");
        CHECK(b && strcmp(b->tpl, "conv2d_pointwise"), "a pooled 1x1 layer: not pointwise (%s)", b ? b->tpl : "none");
        CHECK(c && strcmp(c->tpl, "conv2d_pointwise"), "a 1x1 layer on 11x11: not pointwise (%s)", c ? c->tpl : "none");
        cg_gen_free(o);
    } else CHECK(0, "pw.yaml: %s", e.msg);
    /* written for the pooled layer: its 2x2 pool fused (tiles of whole row pairs) */
    snprintf(sp->layers[1].strategy, sizeof sp->layers[1].strategy, "pointwise");
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *b = conv_kernel(o, "b");
        CHECK(b && strstr(b->kernel, "conv2d_pointwise_c128m48_h22w22_none_pool2_") && strstr(b->source, "fp=1") &&
                  strstr(b->source, "max of each 2x2 window"),
              "pointwise written for a pooled layer: the pool fused (%s)", b ? b->kernel : "none");
        cg_gen_free(o);
    } else CHECK(0, "pw.yaml, b pointwise: %s", e.msg);
    snprintf(sp->layers[1].strategy, sizeof sp->layers[1].strategy, "auto");
    tg.batch = 8;
    char tpl[256];
    const char *t8 = template_at(sp, &tg, o, "a", tpl, sizeof tpl);
    CHECK(t8 && strcmp(t8, "conv2d_pointwise"), "at 8 images: not pointwise (%s)", tpl);
    tg.batch = 0;
    free(sp);
    static const char f32[] =
        "network: s\ninput: {channels: 16, height: 8, width: 8}\nlayers:\n"
        "  - {name: a, op: conv, M: 16, K: 1, strategy: pointwise}\n";
    expect_refusal(&tg, o, "pw-f32.yaml", f32, "conv2d_pointwise multiplies 16-bit inputs and weights of one type");
    static const char k3[] =
        "network: s\ninput: {channels: 16, height: 8, width: 8}\nprecision: fp16\nlayers:\n"
        "  - {name: a, op: conv, M: 16, K: 3, strategy: pointwise}\n";
    expect_refusal(&tg, o, "pw-k3.yaml", k3, "conv2d_pointwise computes 1x1 convolutions of stride 1 without padding");
    free(o);
}

/* conv2d_fft: auto gives it an FP32 stride-1 layer of a large kernel whose direct multiply-adds
 * are 4 or more times the transform's complex products (64 -> 128 5x5 on 26x26: 32 x 32, 5.6x), as
 * three kernels (the planes' transforms, the products with the weights' transforms, which the
 * runtime makes from the weights: weights=arg:fft, the inverse with bias, relu and the 2x2 pool)
 * joined by tensors no layer holds; a 3x3 layer, one of 12 channels, one at 8 images and one in
 * bf16 keep the rules before it; written for a strided layer, a bf16 one or a transform past 64
 * points it is refused with the reason; the tuner gets no candidate it could time alone. */
static void test_fft(void)
{
    static const char text[] =
        "network: s\ninput: {channels: 64, height: 26, width: 26}\nlayers:\n"
        "  - {name: a, op: conv, M: 128, K: 5, bias: true, activation: relu, pool: max2}\n"   /* 11x11: fft */
        "  - {name: b, op: conv, M: 64, K: 3}\n"                                              /* 3x3: not */
        "  - {name: c, op: conv, M: 16, K: 7, padding: 3}\n"                                  /* 9x9: fft */
        "  - {name: d, op: conv, M: 12, K: 7, padding: 3}\n"                                  /* M = 12: not */
        "  - {name: d2, op: conv, M: 32, K: 7, padding: 3}\n"                                 /* C = 12: not */
        "  - {name: e, op: fc, out: 10}\n";
    cg_target tg;
    cg_gen_output *o;
    cg_spec *sp;
    cg_err e = {""};
    if (sm90a_case("fft.yaml", text, &tg, &sp, &o)) return;
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        int parts = 0, order = 1;
        const char *want[] = {"conv2d_fft_in_", "conv2d_fft_mul_", "conv2d_fft_out_"};
        for (int i = 0; i < o->nkernels; i++)
            if (!strcmp(o->k[i].layer, "a")) order = order && parts < 3 && strstr(o->k[i].kernel, want[parts]), parts++;
        const cg_gen_kernel *a = conv_kernel(o, "a"), *b = conv_kernel(o, "b"), *c = conv_kernel(o, "c"),
                            *d = conv_kernel(o, "d");
        CHECK(parts == 3 && order && a && !strcmp(a->tpl, "conv2d_fft") && strstr(a->source, "auto: fft") &&
                  strstr(a->kernel, "_f28x28_"),
              "FP32 64 -> 128 5x5 on 26x26: fft's three kernels in order, a 28 x 28 transform (%d, %s)", parts, a ? a->kernel : "none");
        CHECK(strstr(o->manifest, "in=a.fx out=a.fy") && strstr(o->manifest, "weights=arg:fft:28x28") &&
                  strstr(o->manifest, "in=a.fy out=a ") && strstr(o->manifest, "_relu_pool2_bias_"),
              "fft: the transforms' tensors between its kernels, the weights' transforms, the pool fused");
        CHECK(b && strcmp(b->tpl, "conv2d_fft"), "a 3x3 layer: not fft (%s)", b ? b->tpl : "none");
        const cg_gen_kernel *d2 = conv_kernel(o, "d2");
        CHECK(c && !strcmp(c->tpl, "conv2d_fft") && strstr(c->kernel, "_f16x16_"),
              "64 -> 16 7x7 padded on 9x9: fft, a 16 x 16 transform (%s)", c ? c->kernel : "none");
        CHECK(d && strcmp(d->tpl, "conv2d_fft"), "12 maps: not fft (%s)", d ? d->tpl : "none");
        CHECK(d2 && strcmp(d2->tpl, "conv2d_fft"), "12 channels: not fft (%s)", d2 ? d2->tpl : "none");
        cg_gen_free(o);
    } else CHECK(0, "fft.yaml: %s", e.msg);
    char tpl[256];
    tg.batch = 8;
    const char *t = template_at(sp, &tg, o, "a", tpl, sizeof tpl);
    CHECK(t && strcmp(t, "conv2d_fft"), "at 8 images: not fft (%s)", tpl);
    tg.batch = 64;
    t = template_at(sp, &tg, o, "a", tpl, sizeof tpl);
    CHECK(t && !strcmp(t, "conv2d_fft"), "at 64 images: fft (%s)", tpl);
    tg.batch = 0;
    free(sp);
    sp = spec_text("fft-bf16-auto.yaml", "network: s\ninput: {channels: 64, height: 26, width: 26}\nprecision: bf16\n"
                                         "layers:\n  - {name: a, op: conv, M: 128, K: 5}\n");
    t = sp ? template_at(sp, &tg, o, "a", tpl, sizeof tpl) : NULL;
    CHECK(t && strcmp(t, "conv2d_fft") && strcmp(t, "none"), "bf16: not fft (%s)", tpl);
    free(sp);
    /* refused, with the reason: a strided layer, a bf16 one, one whose padded input needs 128 points */
    static const refusal refused[] = {
        {"fft-s2.yaml", "channels: 16, height: 20, width: 20}\n", "M: 16, K: 5, stride: 2",
         "conv2d_fft computes stride-1 convolutions; this layer has stride 2"},
        {"fft-bf16.yaml", "channels: 16, height: 20, width: 20}\nprecision: bf16\n", "M: 16, K: 5",
         "conv2d_fft computes FP32 tensors (precision fp32)"},
        {"fft-big.yaml", "channels: 4, height: 66, width: 20}\n", "M: 16, K: 5",
         "the padded 66x20 input needs a 128x20 transform"},
    };
    expect_refusals(&tg, o, "fft", refused, sizeof refused / sizeof *refused);
    free(o);
    /* the tuner: no candidate (three kernels are not timed alone), and the note says why */
    static const char fft1[] = "network: s\ninput: {channels: 16, height: 20, width: 20}\nlayers:\n"
                               "  - {name: a, op: conv, M: 16, K: 5}\n";
    cg_spec *s1 = spec_text("fft1.yaml", fft1);
    char why[512];
    CHECK(s1 && cg_gen_check_one(s1, 0, "conv2d_fft", "", why, sizeof why, &e) == 0, "fft accepts the layer: %s", why);
    free(s1);
    expect_not_alone("fft1.yaml", fft1, "conv2d_fft", "conv2d_fft runs as 3 kernels (in, mul, out) and a kernel is timed alone here");
    /* the transform sizes: the least power of two, or up to 32 power of two times 3, 5 or 7, that
     * holds the padded input (H x W here, K = 3, no padding) */
    static const struct { int h, w; const char *sizes; } sized[] = {
        {26, 26, "_f28x28_"}, {33, 9, "_f64x10_"}, {21, 15, "_f24x16_"}, {11, 5, "_f12x6_"},
        {7, 29, "_f8x32_"}, {40, 13, "_f64x14_"}, {19, 3, "_f20x4_"},
    };
    for (size_t i = 0; i < sizeof sized / sizeof *sized; i++) {
        char spec[256];
        snprintf(spec, sizeof spec,
                 "network: s\ninput: {channels: 4, height: %d, width: %d}\nlayers:\n"
                 "  - {name: a, op: conv, M: 8, K: 3, strategy: fft}\n", sized[i].h, sized[i].w);
        cg_spec *sz = spec_text("fft-size.yaml", spec);
        cg_gen_output *go = calloc(1, sizeof *go);
        int rc = sz && go ? cg_generate_for(sz, "x", NULL, go, &e) : -1;
        const cg_gen_kernel *ka = rc == 0 ? conv_kernel(go, "a") : NULL;
        CHECK(ka && strstr(ka->kernel, sized[i].sizes), "%dx%d: a %s transform (%s)", sized[i].h, sized[i].w,
              sized[i].sizes, ka ? ka->kernel : e.msg);
        if (rc == 0) cg_gen_free(go);
        free(go), free(sz);
    }
}

/* planes' mn=1 (tr=1 on a 16-bit 1x1 layer, the planes staged pixels innermost): the kernel is
 * named so, copies 16-byte groups of pixels by cp.async where H*W is a multiple of 8 and gathers
 * them through registers where it is not, and tells wgmma B is transposed; po=1 beside it, and a
 * 3x3 layer, are refused with the reason. */
static void test_planes_mn(void)
{
    static const char text[] =
        "network: s\ninput: {channels: 32, height: 16, width: 16}\nprecision: bf16\nlayers:\n"
        "  - {name: a, op: conv, M: 64, K: 1, strategy: planes, params: {tr: 1, mn: 1, wgs: 2}}\n"   /* 256 pixels */
        "  - {name: b, op: conv, M: 64, K: 3}\n"                                                     /* -> 14x14 */
        "  - {name: c, op: conv, M: 64, K: 1, strategy: planes, params: {tr: 1, mn: 1, wgs: 1}}\n"   /* 196 pixels */
        "  - {name: d, op: conv, M: 64, K: 2}\n"                                                     /* -> 13x13 */
        "  - {name: e, op: conv, M: 64, K: 1, strategy: planes, params: {tr: 1, mn: 1, wgs: 1}}\n"; /* 169 pixels */
    cg_target tg;
    cg_gen_output *o;
    cg_spec *sp;
    cg_err e = {""};
    if (sm90a_case("mn.yaml", text, &tg, &sp, &o)) return;
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *a = conv_kernel(o, "a"), *c = conv_kernel(o, "c"), *k5 = conv_kernel(o, "e");
        CHECK(a && strstr(a->kernel, "_tr_mn_bf16") && strstr(a->source, "planes pixels innermost") &&
                  strstr(a->source, "cp.async.cg.shared.global") && !strstr(a->source, "put(sm + d, v);") &&
                  strstr(a->source, "p, 1, 1, 1, 1;"),
              "mn=1 on 16x16: 16-byte copies, A and B transposed (%s)", a ? a->kernel : "none");
        CHECK(c && strstr(c->kernel, "_mn_bf16") && strstr(c->source, "planes pixels innermost") &&
                  strstr(c->source, "cp.async.ca.shared.global [%0], [%1], 8,") &&
                  !strstr(c->source, "put(sm + d, v);"),
              "mn=1 on 14x14 (196 pixels): two 8-byte copies a group of 8 (%s)", c ? c->kernel : "none");
        CHECK(k5 && strstr(k5->kernel, "_mn_bf16") && strstr(k5->source, "put(sm + d, v);") &&
                  !strstr(k5->source, "cp.async.ca.shared.global [%0], [%1], 8,"),
              "mn=1 on 13x13 (169 pixels): gathered through registers (%s)", k5 ? k5->kernel : "none");
        cg_gen_free(o);
    } else CHECK(0, "mn.yaml: %s", e.msg);
    free(sp);
    static const char po[] =
        "network: s\ninput: {channels: 32, height: 16, width: 16}\nprecision: bf16\nlayers:\n"
        "  - {name: a, op: conv, M: 64, K: 1, strategy: planes, params: {tr: 1, mn: 1, po: 1, bk: 16}}\n";
    expect_refusal(&tg, o, "mn-po.yaml", po, "mn=1: the planes pixels innermost are tr=1's B, staged whole (po=0)");
    free(o);
}

/* 16-bit layers of fewer than 16 channels on sm_90a (the course networks' second layers):
 * planes where C >= 12 (C padded to 16), igemm_wg below that, and direct where C*K*K < 128;
 * under fp32 the same layers keep the FFMA templates. */
static void test_half_small_c(void)
{
    static const char text[] =
        "network: s\ninput: {channels: 1, height: 72, width: 72}\nprecision: bf16\nlayers:\n"
        "  - {name: a, op: conv, M: 12, K: 7, activation: tanh, pool: max2}\n"   /* 1 channel: direct */
        "  - {name: b, op: conv, M: 24, K: 7}\n"                                 /* 12 -> 24 on 33x33: planes */
        "  - {name: c, op: conv, M: 6, K: 5}\n"                                  /* 24 channels: the 16-bit rule */
        "  - {name: d, op: conv, M: 16, K: 5}\n"                                 /* 6 -> 16, 5x5: planes, rows swept */
        "  - {name: e, op: conv, M: 10, K: 1}\n"                                 /* 16 -> 10 (M < 16: FFMA) */
        "  - {name: f, op: conv, M: 16, K: 4}\n"                                 /* 10 -> 16, 4x4: igemm_wg */
        "  - {name: g, op: conv, M: 8, K: 5, padding: same}\n";                  /* 16 -> 8, 5x5: planes' tiles */
    cg_target tg;
    int arch = 90;
    cg_aot_target(&arch, 1, &tg);
    cg_gen_output *o = malloc(sizeof *o);
    cg_spec *sp = spec_text("small-c.yaml", text);
    cg_err e = {""};
    if (!o) {
        CHECK(0, "allocation");
        free(sp);
        return;
    }
    if (sp && cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *a = conv_kernel(o, "a"), *b = conv_kernel(o, "b"), *d = conv_kernel(o, "d");
        const cg_gen_kernel *f = conv_kernel(o, "f");
        CHECK(a && !strcmp(a->tpl, "conv2d_direct"), "bf16, 1 channel, 7x7: %s", a ? a->tpl : "none");
        CHECK(b && !strcmp(b->tpl, "conv2d_planes") && strstr(b->source, "C = 12 >= 12"),
              "bf16, 12 channels into 24 maps, 7x7: %s", b ? b->tpl : "none");
        /* fewer than 12 channels: planes where its rows are swept (K >= 5), else igemm_wg */
        CHECK(d && !strcmp(d->tpl, "conv2d_planes") && strstr(d->source, "C = 6 < 16") && strstr(d->source, "rows swept")
                  && strstr(d->kernel, "_sw"),
              "bf16, 6 channels into 16 maps, 5x5: %s", d ? d->kernel : "none");
        CHECK(f && !strcmp(f->tpl, "conv2d_igemm_wg") && strstr(f->source, "C = 10 < 16"),
              "bf16, 10 channels into 16 maps, 4x4: %s", f ? f->tpl : "none");
        /* 8 maps: planes' tiles, not the sweep (an m64n8 product a tap is too little for a row's wait) */
        const cg_gen_kernel *gk = conv_kernel(o, "g");
        CHECK(gk && !strcmp(gk->tpl, "conv2d_planes") && !strstr(gk->kernel, "_sw"),
              "bf16, 16 channels into 8 maps, 5x5 same: %s", gk ? gk->kernel : "none");
        cg_gen_free(o);
    } else CHECK(0, "small-c.yaml: %s", e.msg);
    if (sp) {
        sp->precision = CG_PREC_FP32;
        for (int l = 0; l < sp->nlayers; l++) sp->layers[l].precision = CG_PREC_FP32;
        if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
            const cg_gen_kernel *b = conv_kernel(o, "b");
            CHECK(b && strcmp(b->tpl, "conv2d_planes") && strcmp(b->tpl, "conv2d_igemm_wg"),
                  "fp32, 12 channels: an FFMA template (%s)", b ? b->tpl : "none");
            cg_gen_free(o);
        } else CHECK(0, "small-c.yaml in fp32: %s", e.msg);
        /* tf32: planes' rows swept (sw=1, lib/planes_half.lua's kernel with FP32 units) on the 7x7 layer of
         * 12 channels and, below planes' 12 channels, on the 6 -> 16 5x5 layer; the header says tf32 */
        sp->precision = CG_PREC_TF32;
        for (int l = 0; l < sp->nlayers; l++) sp->layers[l].precision = CG_PREC_TF32;
        if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
            const cg_gen_kernel *b = conv_kernel(o, "b"), *d = conv_kernel(o, "d");
            CHECK(b && !strcmp(b->tpl, "conv2d_planes") && strstr(b->kernel, "_sw2_tf32") && strstr(b->source, "k8.f32.tf32.tf32")
                      && strstr(b->source, "\n// precision:  tf32\n"),
                  "tf32, 12 channels into 24 maps, 7x7: %s", b ? b->kernel : "none");
            CHECK(d && !strcmp(d->tpl, "conv2d_planes") && strstr(d->kernel, "_sw") && strstr(d->source, "C = 6 < 12")
                      && strstr(d->source, "rows swept"),
                  "tf32, 6 channels into 16 maps, 5x5: %s", d ? d->kernel : "none");
            cg_gen_free(o);
        } else CHECK(0, "small-c.yaml in tf32: %s", e.msg);
    }
    free(sp), free(o);
}

/* 16-bit layers on sm_90a: auto gives a stride-1 layer of 64 maps or more on outputs
 * 12 or more columns wide conv2d_planes with the maps as wgmma's M (tr=1, its 2x2 pool
 * fused: fp=1), 8 to 11 columns wide the same with whole images stacked (ib), and others
 * conv2d_igemm_wg (one m64nNk16 product of the network's
 * type, no 3xTF32 split), its slices tap by tap (kc=1, weights arg:taps:K*K) where
 * the slice depth divides C and through the offset table (arg:transposed) where it
 * does not; planes with tr=0 takes 16-bit tensors through lib/planes_half.lua (both
 * operands by descriptor, the planes channels innermost, weights tap by tap) and
 * refuses a strided layer with the reason; on sm_80 the same layer is igemm_tc's. (c has 24 channels:
 * with 32 it would join d's tma, planner.AUTO_TMA_HANDOFF_MIN_C.) */
static void test_half_wgmma(void)
{
    static const char *text[2] = {
        "network: h\ninput: {channels: 24, height: 16, width: 16}\nprecision: bf16\nlayers:\n"
        "  - {name: c, op: conv, M: 128, K: 3, padding: 1, activation: relu, pool: max2}\n"
        "  - {name: d, op: conv, M: 64, K: 3, padding: 1}\n"
        "  - {name: e, op: conv, M: 24, K: 3, strategy: igemm_wg, params: {bk: 48}}\n"
        "  - {name: f, op: conv, M: 32, K: 1, stride: 2}\n",
        "network: h\ninput: {channels: 32, height: 16, width: 16}\nprecision: fp16\nlayers:\n"
        "  - {name: c, op: conv, M: 128, K: 3, padding: 1, activation: relu, strategy: planes, params: {tr: 0}}\n"
        "  - {name: s, op: conv, M: 32, K: 3, stride: 2, strategy: planes}\n"};
    cg_target tg;
    int arch = 90;
    cg_aot_target(&arch, 1, &tg);
    cg_gen_output *o = malloc(sizeof *o);
    cg_spec *sp = spec_text("bf16.yaml", text[0]), *pl = spec_text("fp16.yaml", text[1]);
    cg_err e = {""};
    if (!o || !sp || !pl) {
        CHECK(0, "allocation");
        free(o), free(sp), free(pl);
        return;
    }
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *c = conv_kernel(o, "c"), *d = conv_kernel(o, "d"), *k = conv_kernel(o, "e");
        CHECK(c && !strcmp(c->tpl, "conv2d_planes") && strstr(c->source, "auto: planes (maps as wgmma's M), since "
                  "precision is bf16") && strstr(c->source, "(16 columns >= 12)"),
              "bf16 auto on sm_90a, 16 columns: %s", c ? c->tpl : "none");
        /* 16 rows over the padded width 18, two warpgroups of 144 pixels; the pool fused */
        CHECK(c && strstr(c->source, "m64n144k16.f32.bf16.bf16") && !strstr(c->source, "tf32.tf32"),
              "maps as M: one BF16 product, N the band's pixels, no TF32");
        CHECK(c && strstr(c->source, "// weights:    arg:taps:9, bias none") && strstr(c->kernel, "_tr_fp_bf16") &&
                  strstr(c->source, "relu, max-pool 2x2 -> 128x8x8") && strstr(c->source, "fp=1"),
              "tap by tap, the pool fused: %s", c ? c->kernel : "none");
        /* d: 128 channels on 8x8 outputs: conv2d_tma (test_tma) */
        CHECK(d && !strcmp(d->tpl, "conv2d_tma") && strstr(d->source, "auto: tma, since precision is bf16"),
              "d (128 channels, 8x8): tma (%s, %s)", d ? d->tpl : "none", d ? d->kernel : "");
        CHECK(k && strstr(k->source, "// weights:    arg:transposed") && strstr(k->source, "kc=0 bk=48") &&
                  strstr(k->source, "_tab["),
              "48-deep slices of 64 channels: the offset table");
        const cg_gen_kernel *f = conv_kernel(o, "f");
        CHECK(f && !strcmp(f->tpl, "conv2d_igemm_wg") && strstr(f->source, "(stride 2)"),
              "a strided 16-bit layer: igemm_wg too (%s)", f ? f->tpl : "none");
        cg_gen_free(o);
    } else CHECK(0, "bf16.yaml: %s", e.msg);
    pl->nlayers = 1;
    if (cg_generate_for(pl, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *c = conv_kernel(o, "c");
        CHECK(c && !strcmp(c->tpl, "conv2d_planes") && strstr(c->source, "m64n128k16.f32.f16.f16") &&
                  strstr(c->source, "// weights:    arg:taps:9") && !strstr(c->source, "tf32"),
              "fp16 planes: one FP16 product, weights tap by tap (%s)", c ? c->kernel : "none");
        CHECK(c && strstr(c->source, "both operands") && strstr(c->source, "[4][166 pixels][8 channels]"),
              "fp16 planes: the planes staged channels innermost (%s)", c ? c->kernel : "none");
        cg_gen_free(o);
    } else CHECK(0, "fp16.yaml: %s", e.msg);
    pl->nlayers = 2;
    CHECK(cg_generate_for(pl, "x", &tg, o, &e) != 0, "a strided 16-bit planes layer accepted");
    CHECK_CONTAINS(e.msg, "planes' channels-innermost kernel reads a tap as the staged input shifted: stride 1 only");
    cg_target_default(&tg);
    tg.cc = 80;
    CHECK(cg_generate_for(sp, "x", &tg, o, &e) != 0, "igemm_wg on sm_80 accepted");
    CHECK_CONTAINS(e.msg, "conv2d_igemm_wg needs wgmma: sm_90 built as sm_90a (the target is sm_80)");
    sp->nlayers = 2;   /* c and d, auto (f, strided, is igemm_tc's there too) */
    if (cg_generate_for(sp, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *c = conv_kernel(o, "c");
        CHECK(c && !strcmp(c->tpl, "conv2d_igemm_tc"), "bf16 auto on sm_80: %s", c ? c->tpl : "none");
        cg_gen_free(o);
    } else CHECK(0, "bf16.yaml on sm_80 without e: %s", e.msg);
    free(o), free(sp), free(pl);
}

/* The fc templates of each fc layer of s generated for target tg with the planner's
 * switch planner.AUTO_FC_TC_MIN_BATCH set to min_batch (0: left as shipped, nil), as
 * "fc1=fc_tc fc2=fc_vec ..." in out (the first kernel of each fc layer, in order). */
static int fc_choices(const cg_spec *s, const cg_target *tg, int min_batch, char *out, size_t n)
{
    cg_lua *h;
    cg_err e = {""};
    out[0] = 0;
    if (cg_lua_open(&h, NULL, &e)) return snprintf(out, n, "open: %s", e.msg), -1;
    lua_State *L = cg_lua_state(h);
    int rc = cg_lua_import(h, "lib/planner", &e);
    if (!rc && min_batch != 0) {   /* 0: the planner's own; < 0: the rules off (fc_tc's, fc_wg's and FP32 fc_mma's) */
        static const char *const rules[] = {"AUTO_FC_TC_MIN_BATCH", "AUTO_FC_WG_MIN_BATCH", "AUTO_FC_MMA_MIN_BATCH"};
        for (int w = 0; w < 3; w++) {
            if (min_batch > 0) lua_pushinteger(L, min_batch);
            else lua_pushnil(L);
            lua_setfield(L, -2, rules[w]);
        }
    }
    if (!rc) {
        lua_getfield(L, -1, "generate");
        cg_gen_push_net(L, s, tg);
        rc = cg_lua_pcall(h, 1, 2, &e);
    }
    if (rc || !lua_istable(L, -2)) {
        snprintf(out, n, "refused: %s", rc ? e.msg : "(a failure table)");
        cg_lua_close(h);
        return -1;
    }
    lua_getfield(L, -2, "kernels");
    char last[64] = "";
    for (lua_Integer k = 1; lua_rawgeti(L, -1, k) == LUA_TTABLE; k++) {
        lua_getfield(L, -1, "layer");
        lua_getfield(L, -2, "template");
        const char *layer = lua_tostring(L, -2), *tpl = lua_tostring(L, -1);
        if (layer && tpl && !strncmp(tpl, "fc_", 3) && strcmp(layer, last)) {
            size_t at = strlen(out);
            snprintf(out + at, n - at, "%s%s=%s", at ? " " : "", layer, tpl);
            snprintf(last, sizeof last, "%s", layer);
        }
        lua_pop(L, 3);
    }
    cg_lua_close(h);
    return 0;
}

/* fc layers on tensor cores: fc_tc (conv2d_igemm_tc's code on the fc's 1x1
 * convolution) and fc_wg (conv2d_igemm_wg's). Written in a spec they serve the
 * large batch (a small bucket's fc takes gemv, as for every fc strategy), the
 * kernels named fc_tc_i<IN>o<out>_..., weights transposed (one tap reordered is
 * the transposition), the slices of a 1x1 image staged column by column; at a
 * known batch the planner splits a narrow one (layers-fc-tc's f1: 15,488 inputs into
 * 10 outputs at 1,024 images, 8 ways) and a spec may give its own split; below
 * sm_80 (fc_tc) or without sm_90a (fc_wg) the layer is refused at its strategy,
 * naming the fc template. `auto` takes neither while planner.AUTO_FC_TC_MIN_BATCH
 * is nil (no shipped or bench network's fc at any bucket), and with it set takes
 * fc_tc for FP32 layers of at least 64 outputs and 256 inputs above gemv's batches
 * (zoo-mlp's fc1 to fc3, not fc4's 10 outputs), fc_wg for 16-bit ones on sm_90a. */
static void test_fc_tensor_cores(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    const char *line = NULL;
    if (!s || !o || cg_spec_load("tests/gpu/layers-fc-tc.yaml", s, &e)) {
        CHECK(0, "layers-fc-tc: %s", e.msg);
        return free(s), free(o);
    }
    cg_target tg;
    cg_target_default(&tg);
    tg.cc = 80;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *f1 = layer_kernel(o, "f1", "fc_"), *f6 = layer_kernel(o, "f6", "fc_");
        CHECK(f1 && !strcmp(f1->tpl, "fc_tc") && !strncmp(f1->kernel, "fc_tc_i15488o10_tanh_bias_m16n128k16_", 37),
              "f1: %s", f1 ? f1->kernel : "none");
        if (f1) {
            /* 16 rows a slice, copied four at a time along each image's inputs, one row a thread */
            CHECK_CONTAINS(f1->source, "// shape:      15488 -> 10, bias, tanh (a 1x1 convolution of a 1x1 image)");
            CHECK_CONTAINS(f1->source, "// weights:    arg:transposed, bias arg");
            CHECK_CONTAINS(f1->source, "xs[2][128][20] input, column by column");
            CHECK_CONTAINS(f1->source, "const int xc = tid / 4, xr0 = 4 * (tid % 4);");
            CHECK_CONTAINS(f1->source, "copy16(x + 4 * (");
            CHECK(!strstr(f1->source, "_tab[") && !strstr(f1->source, "conv2d_"), "f1: no offset table, no conv name");
        }
        /* 333 inputs (odd) in slices of 24: single elements, a column and row worked out a copy */
        if (f6) {
            CHECK_CONTAINS(f6->source, "_XC(i) ((tid + (i) * 64) / 24)");
            CHECK_CONTAINS(f6->source, "copy4(x + 4 * (");
            CHECK_CONTAINS(f6->source, "(the first short: its rows 0 .. 2 zeros)");
        }
        CHECK(!strstr(o->manifest, "splitk_reduce") && !strstr(o->manifest, ".partials"), "the large batch splits nothing");
        cg_gen_free(o);
    } else CHECK(0, "layers-fc-tc on sm_80: %s", e.msg);
    /* 1,024 images: f1's 8 column tiles of two warps split 22 ways (968 slices: past 8 the powers of two stop); f2 (bk given, a short first slice) not */
    tg.batch = 1024;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *f1 = layer_kernel(o, "f1", "fc_"), *r = layer_kernel(o, "f1", "splitk_reduce");
        CHECK(f1 && strstr(f1->kernel, "_z22") && params_has(f1, "split=22", &line), "f1 at 1,024: %s",
              line ? line : "none");
        if (f1) CHECK_CONTAINS(f1->source, "split 22 ways (15488 inputs in parts of 704): 16 warps at 1024 images");
        CHECK(r != NULL, "f1 at 1,024: no splitk_reduce");
        CHECK_CONTAINS(o->manifest, " layer=f1 template=splitk_reduce in=f1.partials out=f1 ");
        CHECK(!params_has(layer_kernel(o, "f2", "fc_"), "split=", &line), "f2 at 1,024: %s", line ? line : "none");
        cg_gen_free(o);
    } else CHECK(0, "layers-fc-tc at 1,024: %s", e.msg);
    /* 64 images: the spec's strategy is the large batch's; gemv */
    tg.batch = 64;
    if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
        const cg_gen_kernel *f3 = layer_kernel(o, "f3", "fc_");
        CHECK(f3 && !strcmp(f3->tpl, "fc_gemv") && strstr(f3->source, "the spec's strategy tc is for the large batch"),
              "f3 at 64: %s", f3 ? f3->tpl : "none");
        cg_gen_free(o);
    } else CHECK(0, "layers-fc-tc at 64: %s", e.msg);
    /* the default target (sm_75): refused at f1's strategy, in the fc template's words */
    cg_target_default(&tg);
    CHECK(cg_generate_for(s, "x", &tg, o, &e) != 0, "fc_tc on sm_75 accepted");
    CHECK_CONTAINS(e.msg, "layers-fc-tc.yaml:20:73: layer 'f1': fc_tc needs tensor cores with TF32 (sm_80 or newer); "
                          "the target is sm_75");
    /* a spec's own split, at the large batch */
    static const char own[] = "network: fc-split\ninput: {channels: 2, height: 32, width: 32}\nseed: 1\n"
                              "layers:\n  - {name: f, op: fc, out: 64, strategy: tc, params: {split: 4}}\n";
    tg.cc = 80;
    if (!cg_spec_parse("fc-split.yaml", own, strlen(own), s, &e) && !cg_generate_for(s, "x", &tg, o, &e)) {
        const cg_gen_kernel *f = layer_kernel(o, "f", "fc_");
        CHECK(f && strstr(f->kernel, "_z4") && strstr(f->source, "reduced in 4 parts (partial sums)"), "split 4: %s",
              f ? f->kernel : "none");
        CHECK_CONTAINS(o->manifest, " layer=f template=splitk_reduce in=f.partials out=f ");
        cg_gen_free(o);
    } else CHECK(0, "fc-split: %s", e.msg);
    /* fc_wg: bf16 on sm_90a (tap by tap where the slice depth divides the inputs), refused on sm_80 */
    if (!cg_spec_load("tests/gpu/layers-fc-bf16-wg.yaml", s, &e)) {
        int arch = 90;
        cg_aot_target(&arch, 1, &tg);
        if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
            const cg_gen_kernel *b1 = layer_kernel(o, "b1", "fc_"), *b6 = layer_kernel(o, "b6", "fc_");
            CHECK(b1 && !strcmp(b1->tpl, "fc_wg") && !strncmp(b1->kernel, "fc_wg_i15488o10_", 16) &&
                      strstr(b1->kernel, "_kc_bf16") && strstr(b1->source, "m64n16k16.f32.bf16.bf16"),
                  "b1: %s", b1 ? b1->kernel : "none");
            if (b1) CHECK_CONTAINS(b1->source, "// weights:    arg:transposed, bias arg");
            CHECK_CONTAINS(o->manifest, " layer=b1 template=fc_wg in=input out=b1 ");
            /* 33 inputs: no 16-byte units, the offset table */
            CHECK(b6 && strstr(b6->source, "_tab[") && !strstr(b6->source, "lo = __ldg"), "b6: %s",
                  b6 ? b6->kernel : "none");
            cg_gen_free(o);
        } else CHECK(0, "layers-fc-bf16-wg on sm_90: %s", e.msg);
        cg_target_default(&tg);
        tg.cc = 80;
        CHECK(cg_generate_for(s, "x", &tg, o, &e) != 0, "fc_wg on sm_80 accepted");
        CHECK_CONTAINS(e.msg, "layer 'b1': fc_wg needs wgmma: sm_90 built as sm_90a (the target is sm_80)");
    } else CHECK(0, "layers-fc-bf16-wg: %s", e.msg);
    /* auto as shipped (fc_tc's and fc_wg's rule from 1,025 images: the large batch alone): no
     * fc_tc or fc_wg at a bucket; at the large batch only where out >= 64 and inputs >= 256,
     * which no shipped network's fc left to auto has (the course networks name vec), and on
     * sm_90a FP32 fc_mma takes those layers first (below); the switches off (nil): no fc on
     * tensor cores anywhere */
    static const int buckets[] = {0, 256, 1024};
    glob_t g;
    int grc = glob("specs/*.yaml", 0, NULL, &g);
    if (!grc) grc = glob("bench/specs/*.yaml", GLOB_APPEND, NULL, &g);
    char got[512];
    int nets = 0;
    for (size_t i = 0; !grc && i < g.gl_pathc; i++) {
        if (cg_spec_load(g.gl_pathv[i], s, &e)) continue;
        for (int t = 0; t < 2; t++)
            for (size_t b = 0; b < sizeof buckets / sizeof *buckets; b++) {
                int arch = 90;
                if (t) cg_aot_target(&arch, 1, &tg);
                else cg_target_default(&tg), tg.cc = 80;
                tg.batch = buckets[b];
                int shipped = !strncmp(g.gl_pathv[i], "specs/", 6);
                if (buckets[b] || shipped) {
                    if (fc_choices(s, &tg, 0, got, sizeof got)) continue;
                    CHECK(!strstr(got, "fc_tc") && !strstr(got, "fc_wg"), "%s (sm_%d, bucket %d), as shipped: %s",
                          g.gl_pathv[i], t ? 90 : 80, buckets[b], got);
                }
                if (fc_choices(s, &tg, -1, got, sizeof got)) continue;
                CHECK(!strstr(got, "fc_tc") && !strstr(got, "fc_wg") && !strstr(got, "fc_mma"),
                      "%s (sm_%d, bucket %d), the switches off: %s", g.gl_pathv[i], t ? 90 : 80, buckets[b], got);
                nets++;
            }
    }
    if (!grc) globfree(&g);
    CHECK(nets > 50, "networks generated with the switch off: %d", nets);
    /* the switch on (65: every batch gemv does not take) */
    if (!cg_spec_load("bench/specs/zoo-mlp.yaml", s, &e)) {
        static const struct {
            int cc, batch;
            const char *want;
        } on[] = {
            {80, 256, "fc1=fc_tc fc2=fc_tc fc3=fc_tc fc4=fc_gemv"},
            {80, 1024, "fc1=fc_tc fc2=fc_tc fc3=fc_tc fc4=fc_gemv"},
            {80, 0, "fc1=fc_tc fc2=fc_tc fc3=fc_tc fc4=fc_vec"},
            {80, 64, "fc1=fc_gemv fc2=fc_gemv fc3=fc_gemv"},   /* (fc4: the tail kernel) */
            {75, 0, "fc1=fc_vec fc2=fc_vec fc3=fc_vec fc4=fc_vec"},
        };
        /* as shipped: the large batch alone */
        static const struct {
            int batch;
            const char *want;
        } shipped[] = {
            {0, "fc1=fc_tc fc2=fc_tc fc3=fc_tc fc4=fc_vec"},
            {1024, "fc1=fc_vec fc2=fc_vec fc3=fc_vec fc4=fc_gemv"},
            {256, "fc1=fc_vec fc2=fc_vec fc3=fc_gemv fc4=fc_gemv"},
        };
        for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
            cg_target_default(&tg);
            tg.cc = 80, tg.batch = shipped[i].batch;
            CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strcmp(got, shipped[i].want),
                  "zoo-mlp (sm_80, bucket %d), as shipped: %s, want %s", shipped[i].batch, got, shipped[i].want);
        }
        for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
            cg_target_default(&tg);
            tg.cc = on[i].cc, tg.batch = on[i].batch;
            CHECK(fc_choices(s, &tg, 65, got, sizeof got) == 0 && !strcmp(got, on[i].want),
                  "zoo-mlp (sm_%d, bucket %d), the switch on: %s, want %s", on[i].cc, on[i].batch, got, on[i].want);
        }
        /* FP32 on sm_90a as shipped: fc_mma (3xTF32) from 65 images, split over a cluster where
         * its tiles are few (fc3 at 256 images), and at 64 on layers of at most 4,096 inputs and
         * 256 outputs or more (all three); precision tf32 takes it alike (one TF32 product) */
        int arch = 90;
        static const struct {
            int batch;
            const char *want, *kernel;
        } fp32[] = {
            {0, "fc1=fc_mma fc2=fc_mma fc3=fc_mma fc4=fc_vec", "fc_mma_i2048o2048_relu_bias_m128n128k32_s4_x3"},
            {1024, "fc1=fc_mma fc2=fc_mma fc3=fc_mma fc4=fc_gemv", NULL},
            {256, "fc1=fc_mma fc2=fc_mma fc3=fc_mma fc4=fc_gemv", "fc_mma_i2048o512_tanh_bias_m64n64k32_s4_p4_x3"},
            {64, "fc1=fc_mma fc2=fc_mma fc3=fc_mma", "fc_mma_i784o2048_relu_bias_m64n64k32_s4_p2_x3"},
        };
        for (size_t i = 0; i < sizeof fp32 / sizeof *fp32; i++) {
            cg_aot_target(&arch, 1, &tg);
            tg.batch = fp32[i].batch;
            CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strcmp(got, fp32[i].want),
                  "zoo-mlp in FP32 (sm_90a, bucket %d), as shipped: %s, want %s", fp32[i].batch, got, fp32[i].want);
            if (fp32[i].kernel) {
                CHECK(cg_generate_for(s, "x", &tg, o, &e) == 0, "zoo-mlp (sm_90a, bucket %d): %s", fp32[i].batch, e.msg);
                int found = 0;
                for (int k = 0; k < o->nkernels; k++) found |= !strcmp(o->k[k].kernel, fp32[i].kernel);
                CHECK(found, "zoo-mlp (sm_90a, bucket %d): no kernel %s", fp32[i].batch, fp32[i].kernel);
                cg_gen_free(o);
            }
        }
        s->precision = CG_PREC_TF32;
        for (int l = 0; l < s->nlayers; l++) s->layers[l].precision = CG_PREC_TF32;
        cg_aot_target(&arch, 1, &tg);
        CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strcmp(got, "fc1=fc_mma fc2=fc_mma fc3=fc_mma fc4=fc_vec"),
              "zoo-mlp in tf32 (sm_90a), as shipped (the large batch): %s", got);
        if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
            const cg_gen_kernel *k = layer_kernel(o, "fc2", "fc_");
            CHECK(k && strstr(k->source, "one TF32 product") && !strstr(k->kernel, "_x3"),
                  "zoo-mlp in tf32: fc2 one TF32 product (%s)", k ? k->kernel : "none");
            cg_gen_free(o);
        } else CHECK(0, "zoo-mlp in tf32 (sm_90a): %s", e.msg);
        tg.batch = 64;
        CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strcmp(got, "fc1=fc_mma fc2=fc_mma fc3=fc_mma"),
              "zoo-mlp in tf32 (sm_90a) at bucket 64: %s", got);
        tg.batch = 8;
        CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strstr(got, "fc_mma"),
              "zoo-mlp in tf32 (sm_90a) at bucket 8: no fc_mma (%s)", got);
        tg.batch = 0;
        s->precision = CG_PREC_BF16;
        for (int l = 0; l < s->nlayers; l++) s->layers[l].precision = CG_PREC_BF16;
        cg_aot_target(&arch, 1, &tg);
        /* 16-bit: fc_mma (input sizes multiples of 8) under the rule, fc4 (10 outputs) vec */
        CHECK(fc_choices(s, &tg, 65, got, sizeof got) == 0 && !strcmp(got, "fc1=fc_mma fc2=fc_mma fc3=fc_mma fc4=fc_vec"),
              "zoo-mlp in bf16 (sm_90a), the switch on: %s", got);
        CHECK(fc_choices(s, &tg, -1, got, sizeof got) == 0 && !strcmp(got, "fc1=fc_vec fc2=fc_vec fc3=fc_vec fc4=fc_vec"),
              "zoo-mlp in bf16 (sm_90a), the switch off: %s", got);
        CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strcmp(got, "fc1=fc_mma fc2=fc_mma fc3=fc_mma fc4=fc_vec"),
              "zoo-mlp in bf16 (sm_90a), as shipped (the large batch): %s", got);
        tg.batch = 256;
        CHECK(fc_choices(s, &tg, 0, got, sizeof got) == 0 && !strstr(got, "fc_mma") && !strstr(got, "fc_wg"),
              "zoo-mlp in bf16 (sm_90a) at bucket 256, as shipped: no tensor-core fc (%s)", got);
        /* an input size not a multiple of 8 (3x19x19): fc_mma refuses it, fc_wg serves */
        cg_spec *odd = spec_text("odd.yaml", "network: o\ninput: {channels: 3, height: 19, width: 19}\nprecision: bf16\n"
                                             "layers:\n  - {name: fc1, op: fc, out: 264}\n  - {name: fc2, op: fc, out: 64}\n");
        tg.batch = 0;
        CHECK(odd && fc_choices(odd, &tg, 0, got, sizeof got) == 0 && !strcmp(got, "fc1=fc_wg fc2=fc_mma"),
              "bf16 fc layers of 1,083 and 264 inputs (sm_90a): %s", got);
        free(odd);
    } else CHECK(0, "zoo-mlp: %s", e.msg);
    free(s), free(o);
}

/* Small-batch conv choices on sm_90a (planner.small_conv, planes_rule): from two images on a
 * stride-1 layer of 16 channels, K >= 3 and M >= 32 leaves direct for the large-batch choice
 * (zoo-vgg3x3's and zoo-linear's conv2: igemm_tc at 8 and 64 images), while M = 16
 * (fashion-resnet's 16 -> 16 3x3 layers) and one image keep direct; a conv output under 9
 * pixels takes planes, several images a block, at a bucket up to 1,024 images but not at the
 * large batch (zoo-bigk's conv3: igemm_tc there). */
static void test_small_conv_choices(void)
{
    static const struct {
        const char *spec, *layer;
        int batch;
        const char *tpl;
        const char *tile; /* the end of the kernel's name, where given */
    } want[] = {
        {"bench/specs/zoo-vgg3x3.yaml", "conv2", 8, "conv2d_planes", NULL}, /* igemm_tc's tiles fill half the SMs */
        {"bench/specs/zoo-vgg3x3.yaml", "conv2", 64, "conv2d_igemm_tc", NULL},
        {"bench/specs/zoo-vgg3x3.yaml", "conv2", 1, "conv2d_direct", NULL},
        {"bench/specs/zoo-linear.yaml", "conv2", 64, "conv2d_igemm_tc", NULL},
        {"specs/fashion-resnet.yaml", "layers_0_conv2", 8, "conv2d_direct", NULL},
        {"bench/specs/zoo-bigk.yaml", "conv3", 256, "conv2d_planes", NULL},
        {"bench/specs/zoo-bigk.yaml", "conv3", 1024, "conv2d_planes", NULL},
        {"bench/specs/zoo-bigk.yaml", "conv3", 0, "conv2d_igemm_tc", NULL},
        /* the 64 bucket: planes for stride-1 layers of C >= 3 and K >= 3 that direct would serve */
        {"bench/specs/zoo-k7pad.yaml", "conv1", 64, "conv2d_planes", NULL},
        {"bench/specs/zoo-k7pad.yaml", "conv1", 8, "conv2d_direct", NULL},
        {"bench/specs/zoo-k7pad.yaml", "conv3", 64, "conv2d_direct", NULL},
        {"bench/specs/zoo-edge.yaml", "conv1", 64, "conv2d_direct", NULL},
        {"bench/specs/zoo-edge.yaml", "conv2", 64, "conv2d_direct", NULL},
        {"specs/ece408-2018sp.yaml", "conv2", 64, "conv2d_planes", NULL},
        {"specs/ece408-2018sp.yaml", "conv1", 64, "conv2d_direct", NULL},
        /* up to 8 images: planes for K >= 3 layers keeping igemm or igemm_tc without a split */
        {"bench/specs/zoo-odd.yaml", "conv2", 8, "conv2d_planes", NULL},
        {"bench/specs/zoo-inception.yaml", "br5", 8, "conv2d_planes", NULL},
        {"bench/specs/zoo-inception.yaml", "br1", 8, "conv2d_igemm", NULL},       /* 1x1 */
        {"bench/specs/zoo-inception.yaml", "down", 8, "conv2d_igemm_tc", NULL},   /* split */
        {"bench/specs/zoo-odd.yaml", "conv2", 64, "conv2d_igemm", NULL},
        /* up to 8 images: winograd in small tiles for 3x3 and 5x5 stride-1 layers that igemm
         * would split, where they give half the SMs a block (planner.small_winograd) */
        {"bench/specs/zoo-odd.yaml", "conv2", 1, "conv2d_winograd", "_f2_m16n16c10_t8x4_x1"},
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", 1, "conv2d_winograd", "_f2_m16n16c16_t8x4_x1"},
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", 8, "conv2d_winograd", "_f2_m16n16c16_t8x4_x1"},
        {"bench/specs/zoo-issue3x3.yaml", "conv3", 8, "conv2d_winograd", "_f2_m16n16c16_t8x4_x1"},
        {"bench/specs/zoo-5x5-c64.yaml", "conv2", 64, "conv2d_fft", NULL},           /* 64 images: fft */
        {"bench/specs/zoo-k7pad.yaml", "conv4", 1, "conv2d_igemm", "_z14"},           /* 7x7: the split */
        {"bench/specs/zoo-deep512.yaml", "conv2", 8, "conv2d_igemm_tc", "_z4"},       /* 604 M MACs, 3x3 */
        {"bench/specs/zoo-deep512.yaml", "conv2", 1, "conv2d_winograd", NULL},
        /* direct's tile by bucket (templates/conv2d/direct.lua): 32 threads and 2 maps a thread
         * at one image; from two images the large batch's block, at most 2 maps a thread up to 8
         * images and 4 at 64, the map groups split until the grid has 2048 threads an SM; the
         * large batch's own tile above 64. ece408-2017's conv1: 50 maps, a 2x2 pool, 12x12
         * outputs; zoo-vgg3x3's conv1: 16 maps on 62x62 outputs. */
        {"specs/ece408-2017.yaml", "conv1", 1, "conv2d_direct", "_b32u2x1g0f1_ms25"},
        {"specs/ece408-2017.yaml", "conv1", 8, "conv2d_direct", "_b256u2x1g0f1_ms25"}, /* 5 blocks x 25 groups */
        {"specs/ece408-2017.yaml", "conv1", 64, "conv2d_direct", "_b256u2x1g0f1_ms25"}, /* 4 does not divide 50 */
        {"specs/ece408-2017.yaml", "conv1", 0, "conv2d_direct", "_b64u5x3g0f1"},       /* the spec's params */
        {"bench/specs/zoo-vgg3x3.yaml", "conv1", 8, "conv2d_direct", "_b256u2x1g0f1_ms8"},
        {"bench/specs/zoo-vgg3x3.yaml", "conv1", 64, "conv2d_direct", "_b256u4x1g0f1_ms2"}, /* 961 blocks x 2 */
        {"bench/specs/zoo-vgg3x3.yaml", "conv1", 0, "conv2d_direct", "_b256u8x1g0f1"},
        /* 16-bit tensors keep the one-image tile at every small batch */
        {"tests/gpu/layers-small-c-bf16-wg.yaml", "a", 8, "conv2d_direct", "_b32u2x1g0f1_ms2_bf16"},
    };
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    cg_err e = {""};
    int arch = 90;
    for (size_t i = 0; s && o && i < sizeof want / sizeof *want; i++) {
        if (cg_spec_load(want[i].spec, s, &e)) {
            CHECK(0, "%s: %s", want[i].spec, e.msg);
            continue;
        }
        cg_target tg;
        cg_aot_target(&arch, 1, &tg);
        tg.batch = want[i].batch;
        if (cg_generate_for(s, "x", &tg, o, &e) == 0) {
            const cg_gen_kernel *k = conv_kernel(o, want[i].layer);
            CHECK(k && !strcmp(k->tpl, want[i].tpl), "%s %s at bucket %d: %s, want %s", want[i].spec, want[i].layer,
                  want[i].batch, k ? k->tpl : "none", want[i].tpl);
            size_t n = k ? strlen(k->kernel) : 0, t = want[i].tile ? strlen(want[i].tile) : 0;
            if (k && want[i].tile)
                CHECK(n >= t && !strcmp(k->kernel + n - t, want[i].tile), "%s %s at bucket %d: %s, want a name ending %s",
                      want[i].spec, want[i].layer, want[i].batch, k->kernel, want[i].tile);
            if (k && !strcmp(want[i].tpl, "conv2d_planes") && want[i].batch > 64)
                CHECK(strstr(k->kernel, "_i8_") != NULL, "several images a block: %s", k->kernel);
            if (k && !strcmp(want[i].tpl, "conv2d_planes") && !strcmp(want[i].layer, "conv2") && want[i].batch == 8)
                CHECK(strstr(k->kernel, "_fp_pool2") != NULL, "its 2x2 pool fused: %s", k->kernel);
            cg_gen_free(o);
        } else CHECK(0, "%s at bucket %d: %s", want[i].spec, want[i].batch, e.msg);
    }
    free(s), free(o);
}

int main(void)
{
    test_small_conv_choices();
    test_half_wgmma();
    test_half_small_c();
    test_planes_mn();
    test_half_memory();
    test_pointwise();
    test_fft();
    test_tma();
    test_direct_hwc();
    test_direct_hwc_limits();
    test_tma_narrow();
    test_precision_tf32();
    test_engine();
    test_arg_roles();
    test_bias_names();
    test_one_layer();
    test_no_params_default();
    test_fc_candidates();
    test_winograd();
    test_auto_rule();
    test_default_tiles();
    test_planes_fp();
    test_slide_defaults();
    test_input_names();
    test_auto_fc();
    test_slide_colskip();
    test_tc_short_slice();
    test_candidates_emit();
    test_identical_layers();
    test_no_legal_value();
    test_split_rule();
    test_split_pool();
    test_graph_manifest();
    test_concat_slices();
    test_tail_rule();
    test_tail_split();
    test_planes_fused_pool();
    test_pixel_twin();
    test_residual_fusion();
    test_residual_shared_kernel();
    test_groups_refused();
    test_fc_tensor_cores();
    glob_t g;
    CHECK(glob("specs/*.yaml", 0, NULL, &g) == 0 && g.gl_pathc >= 4, "four shipped specs");
    cg_nvrtc *nv = NULL;
    cg_err ne;
    int have_nvrtc = cg_nvrtc_open(&nv, &ne) == 0;
    CHECK(have_nvrtc, "NVRTC is needed for the unroll check: %s", ne.msg);
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    cg_manifest *m = malloc(sizeof *m);
    for (size_t f = 0; f < g.gl_pathc && s && a && b && m; f++) {
        const char *path = g.gl_pathv[f];
        cg_err e;
        if (cg_spec_load(path, s, &e)) {
            CHECK(0, "%s: %s", path, e.msg);
            continue;
        }
        int ra = cg_generate(s, "convgen generate X -o DIR", a, &e);
        CHECK(ra == 0, "%s: %s", path, e.msg);
        if (ra) continue;
        int rb = cg_generate(s, "convgen generate X -o DIR", b, &e);
        CHECK(rb == 0, "%s: second run: %s", path, e.msg);
        /* byte-identical across runs */
        CHECK(rb == 0 && a->nkernels == b->nkernels && !strcmp(a->manifest, b->manifest) && !strcmp(a->hash, b->hash),
              "%s: two runs give the same manifest", path);
        for (int i = 0; rb == 0 && i < a->nkernels && i < b->nkernels; i++)
            CHECK(a->k[i].source_len == b->k[i].source_len && !memcmp(a->k[i].source, b->k[i].source, a->k[i].source_len),
                  "%s: %s identical across runs", path, a->k[i].file);
        /* the manifest the runtime reads */
        int rm = cg_manifest_parse(a->manifest, a->manifest_len, path, m, &e);
        CHECK(rm == 0, "%s: manifest: %s", path, e.msg);
        if (!rm) {
            CHECK(m->nlayers == s->nlayers, "%s: one manifest layer per spec layer", path);
            CHECK(!strcmp(m->hash, a->hash), "%s: manifest carries the build hash", path);
            CHECK(m->t[m->output].elems == cg_layer_out_elems(&s->layers[s->nlayers - 1]), "%s: output size", path);
            for (int l = 0; l < s->nlayers && l < m->nlayers; l++)
                CHECK(m->t[m->l[l].out].elems == cg_layer_out_elems(&s->layers[l]), "%s: layer %s output elements",
                      path, s->layers[l].name);
            /* every kernel names its parameters by role, the runtime binds them by role: one
             * input (in, out, weights, bias, n; a softmax writing the predictions too: out1
             * before n); an add or concat its inputs first, then out, n */
            for (int i = 0; i < m->nkernels; i++) {
                const cg_mkernel *k = &m->k[i];
                if (k->nin == 1)
                    CHECK(k->nargs == 4 + k->nout && k->args[0] == CG_ARG_IN && k->args[1] == CG_ARG_OUT &&
                              (k->nout < 2 || k->args[4] == CG_ARG_OUT1) && k->args[k->nargs - 1] == CG_ARG_N,
                          "%s: %s takes (in, out, weights, bias, out1.., n) by role", path, k->name);
                else if (k->nargs == k->nin + 2) /* an add or a concat */
                    CHECK(k->args[0] == CG_ARG_IN && k->args[1] == CG_ARG_IN1 && k->args[k->nin] == CG_ARG_OUT &&
                              k->args[k->nin + 1] == CG_ARG_N,
                          "%s: %s takes (in, in1.., out, n) by role", path, k->name);
                else /* a conv computing an add in its epilogue: (in, out, weights, bias, in1.., n) */
                    CHECK(k->nargs == k->nin + 4 && k->args[0] == CG_ARG_IN && k->args[1] == CG_ARG_OUT &&
                              k->args[2] == CG_ARG_WEIGHTS && k->args[3] == CG_ARG_BIAS && k->args[4] == CG_ARG_IN1 &&
                              k->args[k->nargs - 1] == CG_ARG_N,
                          "%s: %s takes (in, out, weights, bias, in1.., n) by role", path, k->name);
            }
            /* a chain (every layer reads the one before it): every kernel reads one tensor,
             * the one written before it; a graph (specs/fashion-resnet.yaml's adds and
             * shortcuts): every kernel reads the network input or tensors earlier kernels wrote */
            int chain = 1;
            for (int l = 0; l < s->nlayers; l++) {
                int in[CG_MAX_INPUTS];
                if (cg_layer_inputs(s, l, in) != 1 || in[0] != l - 1) chain = 0;
            }
            for (int i = 0; i < m->nkernels; i++) {
                if (chain) {
                    CHECK(m->k[i].nin == 1 && (i ? m->k[i].in[0] == m->k[i - 1].out : m->k[i].in[0] == m->input),
                          "%s: %s reads the tensor written before it", path, m->k[i].name);
                    continue;
                }
                for (int j = 0; j < m->k[i].nin; j++) {
                    int t = m->k[i].in[j], written = t == m->input;
                    for (int q = 0; q < i && !written; q++) written = m->k[q].out == t;
                    CHECK(written, "%s: %s input %d is the network input or an earlier kernel's output", path,
                          m->k[i].name, j);
                }
            }
            /* igemm reads its weights reduction-major: the runtime must upload them transposed */
            for (int i = 0; i < m->nkernels; i++)
                if (!strcmp(m->k[i].tpl, "conv2d_igemm"))
                    CHECK(m->k[i].wplace == CG_PLACE_ARG_T, "%s: %s takes its weights transposed", path,
                          m->k[i].name);
        }
        /* headers: who made the file and how to make it again */
        for (int i = 0; i < a->nkernels; i++) {
            const char *src = a->k[i].source;
            CHECK(strstr(src, "do not edit") && strstr(src, "// spec:       ") && strstr(src, path) &&
                      strstr(src, "// template:   ") && strstr(src, ", hash ") && strstr(src, "// params:") &&
                      strstr(src, "// regenerate: ") && strstr(src, CG_VERSION),
                  "%s: %s header names spec, template, hash, params, version, command", path, a->k[i].file);
            char want[200];
            snprintf(want, sizeof want, "%s.cu", a->k[i].kernel);
            CHECK(!strcmp(want, a->k[i].file), "%s: file named after kernel %s", path, a->k[i].kernel);
            snprintf(want, sizeof want, "\n%s(", a->k[i].kernel);
            CHECK(strstr(src, want) != NULL, "%s: kernel %s defined under its name", path, a->k[i].kernel);
        }
        /* every conv's C x K x K loops unrolled: at least C*K*K fma per output computed */
        for (int l = 0; have_nvrtc && l < s->nlayers; l++) {
            const cg_layer *ly = &s->layers[l];
            if (ly->op != CG_OP_CONV) continue;
            const cg_gen_kernel *k = conv_kernel(a, ly->name);
            CHECK(k != NULL, "%s: a conv kernel for %s", path, ly->name);
            /* only direct unrolls the whole reduction; igemm's loop over slices stays a loop */
            if (!k || strcmp(k->tpl, "conv2d_direct")) continue;
            long long mu = param(k->source, "maps_unroll");
            CHECK(mu >= 1, "%s: maps_unroll in header", path);
            cg_buf ptx, log;
            cg_buf_init(&ptx), cg_buf_init(&log);
            int rc = cg_nvrtc_compile(nv, k->source, k->file, 90, 1, &ptx, &log, NULL, &e);
            CHECK(rc == 0, "%s: PTX of %s: %s", path, k->file, e.msg);
            if (!rc) {
                int fma = count(ptx.data, "fma.rn.f32");
                long long need = (long long)ly->C * ly->K * ly->K * mu;
                CHECK(fma >= need, "%s: %s has %d fma, want >= %lld (C*K*K per output, %lld outputs)", path,
                      k->file, fma, need, mu);
            }
            cg_buf_free(&ptx), cg_buf_free(&log);
        }
        cg_gen_free(a);
        if (rb == 0) cg_gen_free(b);
    }
    free(s), free(a), free(b), free(m);
    if (nv) cg_nvrtc_close(nv);
    globfree(&g);
    return cg_test_done("generate");
}
