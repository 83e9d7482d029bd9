/* test_shapes.c — a legal, bounded kernel for every conv layer shape (issue 8):
 * 100 random shapes drawn with a fixed seed (C 1..256, M 1..256, K 1..11, H and
 * W 1..128 with K <= H, W; 2x2 pool when the conv output allows it, or not;
 * tanh, relu or none; bias or not) plus NFIXED fixed ones, plus NLAYERS shapes
 * with padding, stride 1..3 and every pool (issue 12) from a seed of their own
 * (their pool kernels are compiled too), plus NWINO stride-1 shapes (K 2..7) forced
 * to `strategy: winograd` (its default configuration), plus NMMA shapes of
 * issue 12's kinds forced to `strategy: igemm_tc` (its default configuration,
 * generated for sm_90: it needs tensor cores), plus NSLIDE shapes of issue 12's
 * kinds whose one channel of weights fits 48 KiB (M*K*K <= 12288) forced to
 * `strategy: slide` (its default configuration), plus NWG shapes of issue 12's
 * kinds forced to `strategy: igemm_wg` (its default configuration, generated for
 * sm_90 alone, built as sm_90a: it needs wgmma), plus NPLANES shapes of issue 12's
 * kinds whose padded input planes fit shared memory (C*(H+pads)*(W+pads) floats, at
 * most 160 KiB) forced to `strategy: planes` (its default configuration, for sm_90
 * alone, as sm_90a), each a one-conv
 * network (conv, fc 10, softmax) with NO strategy key (but the winograd ones) and no params, so the
 * generator's default for the layer is what is tested. Every shape must
 * generate; each kernel of the conv layer must stay within SOURCE_MAX bytes,
 * compile through NVRTC to an sm_90 cubin without a byte of spill, in at most
 * COMPILE_MAX_S seconds of CPU time. Needs NVRTC, not a GPU; compiles run on
 * two threads (OpenMP).
 *
 * The spec reader only accepts a first layer of 1 x S x S (Fashion-MNIST), so
 * each network is read from YAML (the reader fills in every default, the
 * strategy included) and its conv layer's shape is then set to the drawn one,
 * with the shapes after it derived as the reader would.
 *
 * For local runs: CG_SHAPES_MAXCKK=N tests only the shapes with C*K*K <= N (the
 * rest are still drawn, so the sequence does not change); CG_SHAPES_STRATEGY=S
 * writes `strategy: S` into every conv (one template on its own). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's (see test_nvrtc.c) */
#include "check.h"
#include "gen.h"
#include "spec.h"

/* Source bound for one generated kernel, header included. The shipped kernels
 * that compile in well under a second are 12-18 KB (a C=1 direct conv of 25
 * unrolled taps for up to 5 maps); ece408-2018fa's conv2, 201 KB of unrolled
 * C*K*K, takes 7.7 s. A kernel whose unrolled part is one reduction slice needs
 * no more than the small ones plus its gather and epilogue: 40 KB leaves room
 * for that twice over, and is far below any source that compiles for seconds. */
#define SOURCE_MAX (40 * 1024)
/* conv2d_fft's transforms are straight-line code (radix 2, every root of unity a literal) of at
 * most 64 points a side, two a kernel: bounded by that design at about 110 KB (104 KB measured for
 * 64 x 64 transforms with the epilogue of 54 output columns), and compiled by nvcc for sm_90 in
 * under a second (bench/RESULTS.md). Its kernels are held to this bound and to COMPILE_MAX_S. */
#define SOURCE_MAX_FFT (128 * 1024)
#define COMPILE_MAX_S 3.0
#define ARCH 90
#define NRANDOM 100
#define SEED 0x5eed08ULL
#define NLAYERS 30              /* shapes with padding, stride and the new pools */
#define SEED_LAYERS 0x1a4e125ULL
#define NWINO 16                /* stride-1 shapes, K 2..7, through strategy winograd */
#define SEED_WINO 0x3a3b0ULL
#define NMMA 12                 /* shapes of issue 12's kinds through strategy igemm_tc */
#define SEED_MMA 0x3a3b1ULL
#define NSLIDE 16               /* shapes of issue 12's kinds through strategy slide */
#define NWG 12                  /* shapes of issue 12's kinds through strategy igemm_wg */
#define SEED_WG 0x5e9a1ULL
#define SEED_SLIDE 0x511de9ULL
#define NPLANES 16              /* shapes of issue 12's kinds with small padded planes through strategy planes */
#define SEED_PLANES 0x91a4e5ULL

typedef struct {
    int C, H, W, M, K, pool, bias;
    cg_act act;
    /* issue 12 (zero in the first NFIXED + NRANDOM shapes): padding, stride, and
     * the pool as op, window and stride (pool 2, op max, stride 0 is max2) */
    int pad[4], stride, pool_stride;
    cg_pool_op pool_op;
    const char *strategy; /* the template forced for this shape (NULL: the default) */
} shape;

typedef struct {
    int shape;          /* index into the shape list */
    char kernel[128];
    char *source;
    double cpu_s, wall_s;
    int failed, spilled;
} job;

/* splitmix64: the same shapes on every machine and every run. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int uniform(uint64_t *s, int lo, int hi)
{
    return lo + (int)(next(s) % (uint64_t)(hi - lo + 1));
}

/* 1..hi, log-uniform: channel counts of 1-16 as likely as 16-256, so both the
 * small layers (direct) and the large ones get tested. */
static int log_uniform(uint64_t *s, int hi)
{
    int bits = 0;
    while ((1 << (bits + 1)) <= hi) bits++;
    int b = uniform(s, 0, bits);
    int lo = 1 << b, top = (1 << (b + 1)) - 1;
    return uniform(s, lo, top < hi ? top : hi);
}

static shape draw(uint64_t *s)
{
    shape x;
    memset(&x, 0, sizeof x);
    x.C = log_uniform(s, 256);
    x.M = log_uniform(s, 256);
    x.H = uniform(s, 1, 128);
    x.W = uniform(s, 1, 128);
    int kmax = x.H < x.W ? x.H : x.W;
    x.K = uniform(s, 1, kmax < 11 ? kmax : 11);
    int can_pool = x.H - x.K + 1 >= 2 && x.W - x.K + 1 >= 2;
    x.pool = can_pool && uniform(s, 0, 1) ? 2 : 0;
    x.act = (cg_act)uniform(s, 0, 2);
    x.bias = uniform(s, 0, 1);
    return x;
}

/* Whether a drawn layer's padding, stride and pool leave a conv output and a
 * pooled output of at least one element. */
static int fits(const shape *x)
{
    cg_layer l;
    memset(&l, 0, sizeof l);
    l.H = x->H, l.W = x->W, l.K = x->K, l.stride = x->stride, l.pool = x->pool;
    l.pool_stride = x->pool_stride, l.pool_op = x->pool_op;
    memcpy(l.pad, x->pad, sizeof l.pad);
    int ch, cw, oh, ow;
    return !cg_conv_dims(&l, &ch, &cw, &oh, &ow);
}

/* A layer of issue 12: padding (each side 0..K-1, or none), stride 1..3 and any
 * pool (max or average K x K with a stride, or global average) that fits. */
static shape draw_layers(uint64_t *s)
{
    for (;;) {
        shape x;
        memset(&x, 0, sizeof x);
        x.C = log_uniform(s, 256);
        x.M = log_uniform(s, 256);
        x.H = uniform(s, 1, 96);
        x.W = uniform(s, 1, 96);
        x.K = uniform(s, 1, 11);
        int padded = uniform(s, 0, 2);
        for (int i = 0; i < 4; i++)
            x.pad[i] = padded == 0 ? 0 : padded == 1 ? (x.K - 1) / 2 : uniform(s, 0, x.K - 1);
        x.stride = uniform(s, 0, 1) ? 1 : uniform(s, 2, 3);
        x.act = (cg_act)uniform(s, 0, 2);
        x.bias = uniform(s, 0, 1);
        int kind = uniform(s, 0, 4); /* none, max2, avg2, max/avg K with a stride, global */
        x.pool = kind == 0 ? 0 : kind == 4 ? 1 : kind <= 2 ? 2 : uniform(s, 2, 4);
        x.pool_op = kind == 4 ? CG_POOL_GLOBAL_AVG : kind == 2 || (kind == 3 && uniform(s, 0, 1)) ? CG_POOL_AVG
                                                                                                  : CG_POOL_MAX;
        x.pool_stride = kind == 3 ? uniform(s, 1, x.pool) : kind == 4 ? 0 : x.pool;
        if (fits(&x)) return x;
    }
}

/* A layer conv2d_winograd serves (kernels 2x2 to 7x7, stride 1): padding none,
 * 1 or drawn 0..2 a side, and the pools (none, max2, avg2, max3 stride 2, global). */
static shape draw_wino(uint64_t *s)
{
    for (;;) {
        shape x;
        memset(&x, 0, sizeof x);
        x.C = log_uniform(s, 256);
        x.M = log_uniform(s, 256);
        x.H = uniform(s, 3, 96);
        x.W = uniform(s, 3, 96);
        x.K = uniform(s, 2, 7);
        x.stride = 1;
        int padded = uniform(s, 0, 2);
        for (int i = 0; i < 4; i++) x.pad[i] = padded == 0 ? 0 : padded == 1 ? 1 : uniform(s, 0, 2);
        x.act = (cg_act)uniform(s, 0, 2);
        x.bias = uniform(s, 0, 1);
        int kind = uniform(s, 0, 4);
        x.pool = kind == 0 ? 0 : kind == 4 ? 1 : kind <= 2 ? 2 : 3;
        x.pool_op = kind == 4 ? CG_POOL_GLOBAL_AVG : kind == 2 ? CG_POOL_AVG : CG_POOL_MAX;
        x.pool_stride = kind == 3 ? 2 : kind == 4 ? 0 : x.pool;
        x.strategy = "winograd";
        if (fits(&x)) return x;
    }
}

/* A layer of issue 12's kinds that conv2d_planes holds: one image's padded input
 * planes in 160 KiB. */
static shape draw_planes(uint64_t *s)
{
    for (;;) {
        shape x = draw_layers(s);
        x.strategy = "planes";
        if (4L * x.C * (x.H + x.pad[0] + x.pad[2]) * (x.W + x.pad[1] + x.pad[3]) <= 160 * 1024) return x;
    }
}

/* A layer of issue 12's kinds that conv2d_slide can hold: the weights of one
 * input channel (M*K*K floats) in 48 KiB of shared memory. */
static shape draw_slide(uint64_t *s)
{
    for (;;) {
        shape x = draw_layers(s);
        x.strategy = "slide";
        if (x.M * x.K * x.K <= 12288) return x;
    }
}

static void describe(const shape *x, char *out, size_t n)
{
    char extra[96] = "";
    cg_layer l;
    memset(&l, 0, sizeof l);
    memcpy(l.pad, x->pad, sizeof l.pad);
    l.stride = x->stride, l.pool = x->pool, l.pool_stride = x->pool_stride, l.pool_op = x->pool_op;
    cg_conv_tag(&l, extra, sizeof extra);
    snprintf(out, n, "C=%d H=%d W=%d -> M=%d K=%d %s%s%s%s%s%s", x->C, x->H, x->W, x->M, x->K,
             cg_act_name(x->act), x->pool ? " pool" : "", x->bias ? " bias" : "", extra,
             x->strategy ? " strategy " : "", x->strategy ? x->strategy : "");
}

/* The one-conv network for shape x in *s: read from YAML, then reshaped. */
static int build_spec(const shape *x, const char *strategy, cg_spec *s, cg_err *e)
{
    char text[1024], strat[96] = "";
    if (strategy) snprintf(strat, sizeof strat, "    strategy: %s\n", strategy);
    snprintf(text, sizeof text,
             "network: shapes\n"
             "input:\n  channels: 1\n  height: 28\n  width: 28\n"
             "dataset:\n  name: fashion-mnist\n"
             "layers:\n"
             "  - name: conv\n    op: conv\n    M: 1\n    K: 1\n%s"
             "  - name: fc\n    op: fc\n    out: 10\n"
             "  - name: prob\n    op: softmax\n",
             strat);
    if (cg_spec_parse("tests/test_shapes.yaml", text, strlen(text), s, e)) return -1;
    s->C = x->C, s->H = x->H, s->W = x->W;
    cg_layer *c = &s->layers[0], *f = &s->layers[1];
    c->C = x->C, c->H = x->H, c->W = x->W, c->M = x->M, c->K = x->K;
    c->pool = x->pool, c->act = x->act, c->bias = x->bias;
    memcpy(c->pad, x->pad, sizeof c->pad);
    c->stride = x->stride ? x->stride : 1;
    c->pool_op = x->pool_op, c->pool_stride = x->pool ? (x->pool_stride ? x->pool_stride : x->pool) : 0;
    c->OC = x->M;
    int ch, cw;
    if (cg_conv_dims(c, &ch, &cw, &c->OH, &c->OW)) return cg_fail(e, "shape has no output");
    f->C = c->OC, f->H = c->OH, f->W = c->OW;
    return 0;
}

static double now(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    cg_nvrtc *nv = NULL;
    cg_err e = {""};
    if (cg_nvrtc_open(&nv, &e)) {
        printf("skip: shape tests: %s\n", e.msg);
        CHECK_CONTAINS(e.msg, "no NVRTC");
        return cg_test_done("shapes");
    }
    const char *ckk_env = getenv("CG_SHAPES_MAXCKK"), *strategy = getenv("CG_SHAPES_STRATEGY");
    long maxckk = ckk_env ? atol(ckk_env) : 0;
    if (strategy && !*strategy) strategy = NULL;

    /* the 5x5 C=64 -> M=128 layer, the largest shape and the smallest; one for slide */
    enum { NFIXED = 7, NSHAPES = NFIXED + NRANDOM + NLAYERS + NWINO + NMMA + NSLIDE + NWG + NPLANES };
    shape shapes[NSHAPES] = {
        {64, 26, 26, 128, 5, 2, 1, CG_ACT_RELU, {0, 0, 0, 0}, 1, 2, CG_POOL_MAX, NULL},
        {256, 128, 128, 256, 11, 2, 1, CG_ACT_TANH, {0, 0, 0, 0}, 1, 2, CG_POOL_MAX, NULL},
        {1, 1, 1, 1, 1, 0, 0, CG_ACT_NONE, {0, 0, 0, 0}, 1, 0, CG_POOL_MAX, NULL},
        /* conv2d_slide's default once took 488 threads a block for this one, and spilled */
        {1, 128, 128, 32, 7, 2, 1, CG_ACT_RELU, {0, 0, 0, 0}, 1, 2, CG_POOL_MAX, "slide"},
        /* conv2d_igemm_wg's default spilled 12 and 4 bytes on these padded layers under occ=3 */
        {168, 70, 115, 53, 8, 3, 1, CG_ACT_NONE, {3, 3, 3, 3}, 1, 2, CG_POOL_MAX, "igemm_wg"},
        {224, 49, 122, 25, 4, 2, 1, CG_ACT_TANH, {1, 1, 1, 1}, 2, 2, CG_POOL_MAX, "igemm_wg"},
        /* conv2d_planes' default spilled 32 bytes here under occ=3 (its estimate gave the next
         * slice's weights too few registers) */
        {2, 59, 42, 72, 11, 0, 0, CG_ACT_NONE, {0, 0, 0, 0}, 1, 0, CG_POOL_MAX, "planes"},
    };
    uint64_t rng = SEED;
    for (int i = NFIXED; i < NFIXED + NRANDOM; i++) shapes[i] = draw(&rng);
    /* then padding, stride and the pools of issue 12, from a sequence of their own */
    uint64_t rng_layers = SEED_LAYERS;
    for (int i = NFIXED + NRANDOM; i < NFIXED + NRANDOM + NLAYERS; i++) shapes[i] = draw_layers(&rng_layers);
    /* then conv2d_winograd's layers, each forced to it */
    uint64_t rng_wino = SEED_WINO;
    for (int i = NFIXED + NRANDOM + NLAYERS; i < NSHAPES - NMMA - NSLIDE - NWG - NPLANES; i++)
        shapes[i] = draw_wino(&rng_wino);
    /* then shapes of issue 12's kinds through igemm_tc, generated for sm_ARCH */
    uint64_t rng_mma = SEED_MMA;
    for (int i = NSHAPES - NMMA - NSLIDE - NWG - NPLANES; i < NSHAPES - NSLIDE - NWG - NPLANES; i++) {
        shapes[i] = draw_layers(&rng_mma);
        shapes[i].strategy = "igemm_tc";
    }
    /* then conv2d_slide's */
    uint64_t rng_slide = SEED_SLIDE;
    for (int i = NSHAPES - NSLIDE - NWG - NPLANES; i < NSHAPES - NWG - NPLANES; i++) shapes[i] = draw_slide(&rng_slide);
    /* then shapes of issue 12's kinds through igemm_wg, generated for sm_90 alone (as sm_90a) */
    uint64_t rng_wg = SEED_WG;
    for (int i = NSHAPES - NWG - NPLANES; i < NSHAPES - NPLANES; i++) {
        shapes[i] = draw_layers(&rng_wg);
        shapes[i].strategy = "igemm_wg";
    }
    /* then conv2d_planes's, generated for sm_90 alone (as sm_90a) */
    uint64_t rng_planes = SEED_PLANES;
    for (int i = NSHAPES - NPLANES; i < NSHAPES; i++) shapes[i] = draw_planes(&rng_planes);
    cg_target sm90, sm90a;
    cg_target_default(&sm90);
    sm90.cc = ARCH, sm90.max_shared_optin = 227 * 1024;
    sm90a = sm90, sm90a.sm90a = 1;

    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *o = malloc(sizeof *o);
    job *jobs = calloc(NSHAPES * 4, sizeof *jobs);
    CHECK(s && o && jobs, "out of memory");
    if (!s || !o || !jobs) return cg_test_done("shapes");
    int njobs = 0, tested = 0, gen_failed = 0, too_big = 0;
    size_t largest = 0;
    char largest_name[128] = "";
    double t0 = now(CLOCK_MONOTONIC);
    for (int i = 0; i < NSHAPES; i++) {
        const shape *x = &shapes[i];
        char d[160];
        describe(x, d, sizeof d);
        if (maxckk > 0 && (long)x->C * x->K * x->K > maxckk) continue;
        tested++;
        if (build_spec(x, x->strategy ? x->strategy : strategy, s, &e) ||
            cg_generate_for(s, "tests/test_shapes",
                            !x->strategy ? NULL : !strcmp(x->strategy, "igemm_tc") ? &sm90
                                              : !strcmp(x->strategy, "igemm_wg") || !strcmp(x->strategy, "planes")
                                                  ? &sm90a
                                                                                   : NULL,
                            o, &e)) {
            CHECK(0, "shape %d (%s): %s", i, d, e.msg);
            gen_failed++;
            continue;
        }
        int convs = 0, fft = 0;
        for (int k = 0; k < o->nkernels; k++) {
            const cg_gen_kernel *gk = &o->k[k];
            if (strcmp(gk->layer, "conv")) continue;
            convs += !strncmp(gk->tpl, "conv2d_", 7);
            fft |= !strcmp(gk->tpl, "conv2d_fft");
            if (x->strategy && !strncmp(gk->tpl, "conv2d_", 7))
                CHECK(!strcmp(gk->tpl + 7, x->strategy), "shape %d (%s): template %s", i, d, gk->tpl);
            if (gk->source_len > largest) {
                largest = gk->source_len;
                snprintf(largest_name, sizeof largest_name, "%s", gk->kernel);
            }
            const size_t bound = !strcmp(gk->tpl, "conv2d_fft") ? SOURCE_MAX_FFT : SOURCE_MAX;
            if (gk->source_len > bound) {
                /* not compiled: a source this large is what the bound is there to refuse */
                CHECK(0, "shape %d (%s): %s is %zu bytes of source, over %zu", i, d, gk->kernel,
                      gk->source_len, bound);
                too_big++;
                continue;
            }
            if (njobs == NSHAPES * 4) break;
            job *j = &jobs[njobs++];
            j->shape = i;
            snprintf(j->kernel, sizeof j->kernel, "%s", gk->kernel);
            j->source = strdup(gk->source);
            CHECK(j->source != NULL, "out of memory");
        }
        /* one conv kernel, or conv2d_fft's three (its transforms, the products, the inverse) */
        CHECK(convs == (fft ? 3 : 1), "shape %d (%s): %d conv2d_* kernels for the conv layer", i, d, convs);
        cg_gen_free(o);
    }
    printf("note: %d of %d shapes tested%s, %d generated, %d kernels to compile, largest source %zu bytes (%s), "
           "generation %.1f s\n",
           tested, NSHAPES, maxckk > 0 ? " (CG_SHAPES_MAXCKK)" : "", tested - gen_failed, njobs, largest,
           largest_name, now(CLOCK_MONOTONIC) - t0);
    CHECK(maxckk > 0 || tested == NSHAPES, "every shape tested");
    CHECK(too_big == 0, "%d kernels over their source bound (%d bytes; conv2d_fft %d)", too_big, SOURCE_MAX, SOURCE_MAX_FFT);

    /* compile on two threads; one progress line per 10 shapes done */
    int done = 0, next_report = 10, left[NSHAPES] = {0};
    for (int n = 0; n < njobs; n++) left[jobs[n].shape]++;
    t0 = now(CLOCK_MONOTONIC);
#pragma omp parallel for num_threads(2) schedule(dynamic)
    for (int n = 0; n < njobs; n++) {
        job *j = &jobs[n];
        cg_buf img, log;
        cg_nvrtc_stats st;
        cg_err je = {""};
        char file[160];
        snprintf(file, sizeof file, "%s.cu", j->kernel);
        double c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
        int rc = cg_nvrtc_compile(nv, j->source, file, ARCH, 0, &img, &log, &st, &je);
        j->cpu_s = now(CLOCK_THREAD_CPUTIME_ID) - c0;
        j->wall_s = now(CLOCK_MONOTONIC) - w0;
        char d[160];
        describe(&shapes[j->shape], d, sizeof d);
#pragma omp critical
        {
            if (rc) {
                j->failed = 1;
                printf("FAIL shape %d (%s): %s\n%s\n", j->shape, d, je.msg, log.data ? log.data : "");
            } else if (st.spill_stores || st.spill_loads || !st.known) {
                j->spilled = 1;
                printf("FAIL shape %d (%s): %s sm_%d: %ld bytes spill stores, %ld bytes spill loads "
                       "(ptxas numbers %s)\n",
                       j->shape, d, j->kernel, ARCH, st.spill_stores, st.spill_loads,
                       st.known ? "read" : "missing");
            }
            if (--left[j->shape] == 0) done++;
            if (done >= next_report) {
                printf("progress: %d shapes compiled, %.1f s\n", done, now(CLOCK_MONOTONIC) - t0);
                fflush(stdout);
                next_report += 10;
            }
        }
        cg_buf_free(&img), cg_buf_free(&log);
    }

    int failed = 0, spilled = 0, slow = 0;
    const job *slowest = NULL;
    for (int n = 0; n < njobs; n++) {
        const job *j = &jobs[n];
        failed += j->failed, spilled += j->spilled;
        if (!slowest || j->cpu_s > slowest->cpu_s) slowest = j;
        if (j->cpu_s > COMPILE_MAX_S) {
            char d[160];
            describe(&shapes[j->shape], d, sizeof d);
            printf("FAIL shape %d (%s): %s took %.2f s of CPU to compile (%.2f s wall), over %.1f s\n",
                   j->shape, d, j->kernel, j->cpu_s, j->wall_s, COMPILE_MAX_S);
            slow++;
        }
    }
    if (slowest) {
        char d[160];
        describe(&shapes[slowest->shape], d, sizeof d);
        printf("note: slowest compile %.2f s CPU, %.2f s wall: %s (shape %d, %s); all compiles %.1f s on 2 threads\n",
               slowest->cpu_s, slowest->wall_s, slowest->kernel, slowest->shape, d, now(CLOCK_MONOTONIC) - t0);
    }
    CHECK(njobs > 0, "something was compiled");
    CHECK(failed == 0, "%d of %d kernel builds failed", failed, njobs);
    CHECK(spilled == 0, "%d of %d kernel builds spilled", spilled, njobs);
    CHECK(slow == 0, "%d of %d kernel builds took over %.1f s", slow, njobs, COMPILE_MAX_S);

    for (int n = 0; n < njobs; n++) free(jobs[n].source);
    free(jobs), free(o), free(s);
    cg_nvrtc_close(nv);
    return cg_test_done("shapes");
}
