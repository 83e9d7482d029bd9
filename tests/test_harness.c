/* test_harness.c — the kernel harness's parts that need no GPU: seeded random
 * data, the CPU reference of one kernel's layer (fused and unfused), the
 * comparison that decides whether a kernel is right, timing statistics, FLOP
 * counts and the kernel verb's command line. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "harness.h"
#include "jit.h"

/* Same seed, same values, however much is filled; in range; seeds differ. */
static void test_fill(void)
{
    enum { N = 10000 };
    static float a[N], b[N], c[N];
    cg_harness_fill(a, N, 7, 1.0f);
    cg_harness_fill(b, N / 3, 7, 1.0f);
    cg_harness_fill(c, N, 8, 1.0f);
    double sum = 0, lo = 1, hi = -1;
    int same_prefix = 1, differ = 0;
    for (int i = 0; i < N; i++) {
        sum += a[i], lo = fmin(lo, a[i]), hi = fmax(hi, a[i]);
        if (i < N / 3 && a[i] != b[i]) same_prefix = 0;
        differ += a[i] != c[i];
    }
    CHECK(same_prefix, "a shorter fill is a prefix of a longer one");
    CHECK(differ > N - 10, "another seed, other values (%d differ)", differ);
    CHECK(lo >= -1 && hi <= 1 && lo < -0.99 && hi > 0.99, "uniform in -1..1: [%g, %g]", lo, hi);
    CHECK(fabs(sum / N) < 0.03, "mean near 0: %g", sum / N);
    cg_harness_fill(a, 100, 7, 0.25f);
    int in = 1;
    for (int i = 0; i < 100; i++) in &= fabsf(a[i]) <= 0.25f;
    CHECK(in, "scaled to ±0.25");
}

/* A conv layer: C=1, 4x4 input, M=1, K=2, bias, given act and pool. */
static cg_layer conv_layer(cg_act act, int pool)
{
    cg_layer l;
    memset(&l, 0, sizeof l);
    strcpy(l.name, "c");
    l.op = CG_OP_CONV, l.C = 1, l.H = 4, l.W = 4, l.M = 1, l.K = 2, l.bias = 1, l.act = act, l.pool = pool;
    l.OC = 1, l.OH = pool ? 1 : 3, l.OW = pool ? 1 : 3;
    return l;
}

/* The reference by hand, and an unfused kernel's layer: conv + bias at full size. */
static void test_reference(void)
{
    const float x[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const float w[4] = {1, 0, 0, -1}, b[1] = {0.5f};
    cg_err e;
    /* y[h][w] = x[h][w] - x[h+1][w+1] + 0.5 = -5 + 0.5 everywhere */
    cg_layer l = conv_layer(CG_ACT_NONE, 0);
    float y[9];
    CHECK(cg_harness_reference(&l, 1, w, b, x, y, 1, &e) == 0, "reference: %s", e.msg);
    int all = 1;
    for (int i = 0; i < 9; i++) all &= y[i] == -4.5f;
    CHECK(all, "conv by hand: %g %g", y[0], y[8]);

    /* tanh + pool, unfused: the kernel's output is the 3x3 conv + bias only */
    cg_layer lp = conv_layer(CG_ACT_TANH, 2), kl;
    cg_harness_kernel_layer(&lp, 0, &kl);
    CHECK(kl.act == CG_ACT_NONE && kl.pool == 0 && kl.OC == 1 && kl.OH == 3 && kl.OW == 3,
          "unfused kernel layer: act %d pool %d %dx%dx%d", (int)kl.act, kl.pool, kl.OC, kl.OH, kl.OW);
    float u[9], f[1];
    CHECK(cg_harness_reference(&lp, 0, w, b, x, u, 1, &e) == 0, "unfused reference: %s", e.msg);
    CHECK(u[0] == -4.5f && u[8] == -4.5f, "unfused: no activation, no pooling: %g", u[0]);
    CHECK(cg_harness_reference(&lp, 1, w, b, x, f, 1, &e) == 0, "fused reference: %s", e.msg);
    CHECK(fabsf(f[0] - (float)tanh(-4.5)) < 1e-7f, "fused: max-pool of tanh: %g", f[0]);
    cg_harness_kernel_layer(&lp, 1, &kl);
    CHECK(kl.act == CG_ACT_TANH && kl.pool == 2 && kl.OH == 1, "fused kernel layer is the layer");

    /* padding 1, stride 2, global average, unfused: the kernel's output is the conv
     * (4+2-2)/2+1 = 3 x 3 + bias; its work counts those 9 outputs */
    cg_layer lg = conv_layer(CG_ACT_RELU, 1);
    lg.pad[0] = lg.pad[1] = lg.pad[2] = lg.pad[3] = 1, lg.stride = 2, lg.pool_op = CG_POOL_GLOBAL_AVG;
    cg_harness_kernel_layer(&lg, 0, &kl);
    CHECK(kl.pool == 0 && kl.act == CG_ACT_NONE && kl.OH == 3 && kl.OW == 3 && kl.stride == 2 && kl.pad[2] == 1,
          "unfused padded kernel layer: pool %d %dx%d", kl.pool, kl.OH, kl.OW);
    CHECK(cg_harness_flop(&lg, 1) == 2.0 * 9 * 4, "padded conv flop %g", cg_harness_flop(&lg, 1));

    /* fc: 3 -> 2 without bias */
    cg_layer fc;
    memset(&fc, 0, sizeof fc);
    strcpy(fc.name, "f");
    fc.op = CG_OP_FC, fc.C = 3, fc.H = 1, fc.W = 1, fc.out = 2, fc.act = CG_ACT_RELU, fc.OC = 2, fc.OH = fc.OW = 1;
    const float fw[6] = {1, 2, 3, -1, -1, -1}, fx[3] = {1, 1, 2};
    float fy[2];
    CHECK(cg_harness_reference(&fc, 1, fw, NULL, fx, fy, 1, &e) == 0, "fc reference: %s", e.msg);
    CHECK(fy[0] == 9 && fy[1] == 0, "fc by hand: %g %g", fy[0], fy[1]);
}

/* The tolerance by precision: fp32 1e-5 whatever the reduction; tf32
 * 2u*sqrt(n) + n*2^-24 (u = 2^-11), at least 1e-5; a layer's reduction (conv
 * C/groups*K*K, fc its inputs); a network's tolerances summed along its graph,
 * 1e-5 throughout a network of fp32 layers. */
static void test_tolerance(void)
{
    CHECK(cg_precision_tol(CG_PREC_FP32, 1) == CG_HARNESS_TOL && cg_precision_tol(CG_PREC_FP32, 1 << 20) == CG_HARNESS_TOL,
          "fp32: 1e-5");
    double u = 1.0 / 2048, t400 = 2 * u * 20 + 400.0 / (1 << 24);
    CHECK(fabs(cg_precision_tol(CG_PREC_TF32, 400) - t400) < 1e-15, "tf32, n = 400: %g, want %g",
          cg_precision_tol(CG_PREC_TF32, 400), t400);
    CHECK(cg_precision_tol(CG_PREC_TF32, 4608) > cg_precision_tol(CG_PREC_TF32, 400), "grows with n");
    CHECK(cg_precision_tol(CG_PREC_TF32, 0) == CG_HARNESS_TOL, "no products: 1e-5");
    CHECK(cg_precision_tol(CG_PREC_TF32, 1) > 9.7e-4 && cg_precision_tol(CG_PREC_TF32, 1) < 9.8e-4, "one product: 2u");
    /* bf16 and fp16: 2u*sqrt(n) + n*2^-24 + u (the stored value's rounding), u alone for an op */
    CHECK(fabs(cg_precision_tol(CG_PREC_BF16, 100) - (2 * 0x1p-8 * 10 + 100 * 0x1p-24 + 0x1p-8)) < 1e-15,
          "bf16, 100 terms: %g", cg_precision_tol(CG_PREC_BF16, 100));
    CHECK(fabs(cg_precision_tol(CG_PREC_FP16, 100) - (2 * 0x1p-11 * 10 + 100 * 0x1p-24 + 0x1p-11)) < 1e-15,
          "fp16, 100 terms: %g", cg_precision_tol(CG_PREC_FP16, 100));
    CHECK(cg_precision_tol(CG_PREC_BF16, 0) == 0x1p-8 && cg_precision_tol(CG_PREC_FP16, 0) == 0x1p-11,
          "an op of no reduction: one rounding");
    cg_spec s;
    memset(&s, 0, sizeof s);
    s.nlayers = 3;
    cg_layer *c = &s.layers[0], *g = &s.layers[1], *f = &s.layers[2];
    c->op = CG_OP_CONV, c->C = 16, c->H = c->W = 8, c->M = 8, c->K = 3, c->precision = CG_PREC_TF32;
    g->op = CG_OP_CONV, g->C = 8, g->H = g->W = 6, g->M = 8, g->K = 1, g->groups = 8;   /* depthwise 1x1: n = 1 */
    f->op = CG_OP_FC, f->C = 8, f->H = f->W = 6, f->out = 10, f->precision = CG_PREC_TF32;
    CHECK(cg_layer_reduction(c) == 144 && cg_layer_reduction(g) == 1 && cg_layer_reduction(f) == 288, "reductions");
    CHECK(cg_layer_tol(c) == cg_precision_tol(CG_PREC_TF32, 144) && cg_layer_tol(g) == CG_HARNESS_TOL, "own tolerance");
    double tol[CG_MAX_LAYERS];
    cg_spec_tols(&s, tol);
    double want = cg_layer_tol(c) + cg_layer_tol(f) - CG_HARNESS_TOL;
    CHECK(fabs(tol[0] - cg_layer_tol(c)) < 1e-15 && fabs(tol[1] - tol[0]) < 1e-15 && fabs(tol[2] - want) < 1e-15,
          "summed along the chain: %g %g %g (want %g)", tol[0], tol[1], tol[2], want);
    c->precision = f->precision = CG_PREC_FP32;
    cg_spec_tols(&s, tol);
    CHECK(tol[0] == CG_HARNESS_TOL && tol[1] == CG_HARNESS_TOL && tol[2] == CG_HARNESS_TOL, "fp32 network: 1e-5");
}

/* Right, slightly off, wrong, unwritten. */
static void test_compare(void)
{
    float cpu[4] = {1, -2, 3, 0.5f}, gpu[4];
    cg_harness_diff d;
    memcpy(gpu, cpu, sizeof gpu);
    cg_harness_compare(gpu, cpu, 4, CG_HARNESS_TOL, &d);
    CHECK(d.ok && d.rel_l2 == 0 && d.max_abs == 0 && d.nonfinite == 0 && d.n == 4, "identical");
    gpu[2] = 3 * (1 + 2e-7f);
    cg_harness_compare(gpu, cpu, 4, CG_HARNESS_TOL, &d);
    CHECK(d.ok && d.rel_l2 > 0 && d.rel_l2 < 1e-6, "rounding passes: %g", d.rel_l2);
    gpu[2] = 3.001f;
    cg_harness_compare(gpu, cpu, 4, CG_HARNESS_TOL, &d);
    CHECK(!d.ok && d.rel_l2 > 1e-5 && fabs(d.max_abs - 0.001) < 1e-6, "a wrong value fails: %g", d.rel_l2);
    gpu[2] = NAN;
    cg_harness_compare(gpu, cpu, 4, CG_HARNESS_TOL, &d);
    CHECK(!d.ok && d.nonfinite == 1 && isinf(d.rel_l2), "an unwritten (NaN) value fails");
    float zero[2] = {0, 0}, small[2] = {0, 1e-7f};
    cg_harness_compare(small, zero, 2, CG_HARNESS_TOL, &d);
    CHECK(d.ok && fabs(d.rel_l2 - 1e-7) < 1e-12, "an all-zero reference: absolute error %g", d.rel_l2);
}

static void test_stats_flop(void)
{
    double v[5] = {5, 1, 3, 2, 4};
    cg_harness_stats st;
    cg_harness_stats_of(v, 5, &st);
    CHECK(st.n == 5 && st.median == 3 && st.min == 1 && st.max == 5 && st.q1 == 2 && st.q3 == 4,
          "odd: median %g q1 %g q3 %g", st.median, st.q1, st.q3);
    double w[4] = {4, 1, 3, 2};
    cg_harness_stats_of(w, 4, &st);
    CHECK(st.median == 2.5 && st.q1 == 1.75 && st.q3 == 3.25, "even: median %g q1 %g q3 %g", st.median, st.q1, st.q3);
    double one = 7;
    cg_harness_stats_of(&one, 1, &st);
    CHECK(st.median == 7 && st.q1 == 7 && st.q3 == 7, "one run");

    /* example-conv's conv1: 8 maps of 24x24, 25 products each; fc 7200 -> 500 */
    cg_layer l = conv_layer(CG_ACT_TANH, 2);
    l.H = l.W = 28, l.M = 8, l.K = 5;
    CHECK(cg_harness_flop(&l, 10) == 2.0 * 8 * 24 * 24 * 25 * 10, "conv flop %g", cg_harness_flop(&l, 10));
    cg_layer fc = {.op = CG_OP_FC, .C = 7200, .H = 1, .W = 1, .out = 500};
    CHECK(cg_harness_flop(&fc, 2) == 2.0 * 7200 * 500 * 2, "fc flop");
}

/* Run the parser over a command line given as one string of words. */
static int parse(const char *line, cg_kernel_cli *c, cg_err *e)
{
    static char buf[512];
    static char *argv[32];
    snprintf(buf, sizeof buf, "%s", line);
    int argc = 0;
    for (char *t = strtok(buf, " "); t && argc < 32; t = strtok(NULL, " ")) argv[argc++] = t;
    return cg_kernel_cli_parse(argc, argv, c, e);
}

static void test_cli(void)
{
    cg_kernel_cli c;
    cg_err e;
    CHECK(parse("kernel s.yaml --layer conv1", &c, &e) == 0, "minimal: %s", e.msg);
    CHECK(!strcmp(c.spec, "s.yaml") && !strcmp(c.layer, "conv1") && !c.strategy && !c.params && c.batch == 10000 &&
              c.repeat == 20 && c.seed == 1 && c.check_images == 0 && !c.list && !c.no_cache,
          "defaults");
    CHECK(parse("kernel --layer fc1 s.yaml --strategy vec --params bm=64,bn=32 --batch 128 --repeat 5 --seed 9 "
                "--check-images 16 --list --no-cache",
                &c, &e) == 0,
          "everything: %s", e.msg);
    CHECK(!strcmp(c.strategy, "vec") && !strcmp(c.params, "bm=64,bn=32") && c.batch == 128 && c.repeat == 5 &&
              c.seed == 9 && c.check_images == 16 && c.list && c.no_cache,
          "every option read");
    CHECK(parse("kernel s.yaml", &c, &e) == CG_EXIT_USAGE, "--layer is required");
    CHECK_CONTAINS(e.msg, "kernel needs SPEC and --layer NAME");
    CHECK(parse("kernel s.yaml --layer a --batch 0", &c, &e) == CG_EXIT_USAGE, "--batch 0");
    CHECK_CONTAINS(e.msg, "--batch expects an integer");
    CHECK(parse("kernel s.yaml --layer a --repeat x", &c, &e) == CG_EXIT_USAGE, "--repeat x");
    CHECK(parse("kernel s.yaml --layer a --warp 2", &c, &e) == CG_EXIT_USAGE, "unknown option");
    CHECK_CONTAINS(e.msg, "unknown option '--warp'");
    CHECK(parse("kernel s.yaml --layer", &c, &e) == CG_EXIT_USAGE, "--layer without a value");
}

/* One emitted kernel through NVRTC and the cache (no GPU needed to compile):
 * compiled once, then a hit; with the cache off, compiled again. */
static void test_jit(void)
{
    char dir[] = "/tmp/cg_jit_XXXXXX";
    cg_err e;
    cg_spec *s = malloc(sizeof *s);
    cg_nvrtc *nv = NULL;
    if (!s || !mkdtemp(dir) || cg_spec_load("specs/example-conv.yaml", s, &e) || cg_nvrtc_open(&nv, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s);
        return;
    }
    setenv("XDG_CACHE_HOME", dir, 1);
    cg_gen_kernel k;
    cg_kernel_launch l;
    int rc = cg_gen_emit_one(s, 0, NULL, "fuse=0,cols=2", &k, &l, &e);
    CHECK(rc == 0, "emit: %s", e.msg);
    cg_buf img, log;
    cg_buf_init(&img), cg_buf_init(&log);
    cg_jit_info ji;
    int drv = cg_nvrtc_version(nv);
    for (int pass = 0; pass < 3 && !rc; pass++) {
        rc = cg_jit_compile(nv, 90, drv, &k, pass < 2, &img, &log, &ji, &e);
        CHECK(rc == 0, "compile %d: %s", pass, e.msg);
        CHECK(ji.cache_hit == (pass == 1), "pass %d: cache hit %d (%s)", pass, ji.cache_hit, ji.note);
        CHECK(img.len > 0 && !strcmp(ji.arch, "sm_90"), "a cubin for sm_90 (%s, %zu bytes)", ji.arch, img.len);
    }
    cg_buf_free(&img), cg_buf_free(&log);
    if (!rc) cg_gen_kernel_free(&k);
    cg_nvrtc_close(nv);
    free(s);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(void)
{
    test_tolerance();
    test_jit();
    test_fill();
    test_reference();
    test_compare();
    test_stats_flop();
    test_cli();
    return cg_test_done("harness");
}
