/* test_kernels_compile.c — every kernel of every shipped spec (the YAML files
 * in specs/, and make test-gpu's in tests/gpu/) compiles through NVRTC to a cubin, without a byte of spill, for
 * each arch the fat binaries ship (runtime/cuda/aot.c's table, by default) that NVRTC
 * supports (tests/gpu/'s networks: less sm_86, sm_89 and sm_100, see sibling_arch); CG_TEST_ALL_ARCHS=1 takes every NVRTC arch from sm_75 up instead
 * (about twice the time: the big convolutions take seconds per arch). Needs
 * NVRTC, not a GPU; compiles run in parallel (OpenMP), one NVRTC program each. A
 * network named *-tc.yaml (tensor cores), *-tf32.yaml, *-bf16.yaml or *-fp16.yaml
 * (16-bit tensors) is generated for sm_80 and compiled for sm_80 up; the 16-bit
 * networks are refused for sm_75 (test_half_refusals). */
#include <glob.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's (see test_nvrtc.c) */
#include "aot.h"
#include "check.h"
#include "gen.h"
#include "manifest.h"
#include "spec.h"

/* Is arch one this run compiles for? (The default --arch list of aot.c.) */
static int wanted(int arch, int all)
{
    if (arch < 75) return 0;
    if (all) return 1;
    for (const cg_arch_info *a = cg_aot_archs; a->arch; a++)
        if (a->arch == arch && a->by_default) return 1;
    return 0;
}

/* The layer networks of tests/gpu/ skip the archs whose code generation a compiled
 * neighbour of the same family stands for (sm_86 and sm_89: sm_80's register file, and
 * the default target's 48 KiB of shared memory fits all three; sm_100: sm_90's): the
 * shipped specs, and CG_TEST_ALL_ARCHS=1, still compile for them. All seven took
 * 7m29s of a 13-minute make test on the 2-core CI machine, the longest test. */
static int sibling_arch(int arch) { return arch == 86 || arch == 89 || arch == 100; }

typedef struct {
    const cg_gen_kernel *k;
    const char *spec;
    int arch;
    const char *body; /* the source after its leading comment lines */
    size_t body_len;
    int also; /* how many other jobs (kernels of other specs, or twins) this compile stands for */
} job;

/* The source after its header (the leading "//" lines, which name the spec and
 * the command): two kernels whose bodies are byte-identical compile to the same
 * cubin, so one compile per body and arch stands for both. */
static const char *source_body(const cg_gen_kernel *k, size_t *len)
{
    const char *p = k->source;
    while (!strncmp(p, "//", 2)) {
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    *len = k->source_len - (size_t)(p - k->source);
    return p;
}

/* Jobs sorted by arch, then body length (longest first), then body bytes: equal
 * bodies of one arch side by side. */
static int by_body(const void *x, const void *y)
{
    const job *a = x, *b = y;
    if (a->arch != b->arch) return a->arch - b->arch;
    if (a->body_len != b->body_len) return a->body_len > b->body_len ? -1 : 1;
    return memcmp(a->body, b->body, a->body_len);
}

/* Longest body first (the longest compile the longest, roughly): the parallel
 * compiles end together instead of one long compile left alone at the end. */
static int by_length(const void *x, const void *y)
{
    const job *a = x, *b = y;
    if (a->body_len != b->body_len) return a->body_len > b->body_len ? -1 : 1;
    return a->arch - b->arch;
}

/* Kernel k compiles through NVRTC for arch without a byte of spill. */
static void compiles_clean(cg_nvrtc *nv, const cg_gen_kernel *k, int arch)
{
    cg_buf img, log;
    cg_nvrtc_stats st;
    cg_err e = {""};
    int rc = cg_nvrtc_compile(nv, k->source, k->file, arch, 0, &img, &log, &st, &e);
    CHECK(rc == 0 && st.known && !st.spill_stores && !st.spill_loads, "%s for sm_%d: %s", k->kernel, arch,
          rc ? e.msg : "spills");
    cg_buf_free(&img), cg_buf_free(&log);
}

/* s generated for sm_90 (as the fat binaries build it) at `batch` images into o: 0, or
 * -1 after a failed check naming what. */
static int generate_sm90(const cg_spec *s, int batch, cg_gen_output *o, const char *what)
{
    cg_target tg;
    int arch90 = 90;
    cg_err e = {""};
    cg_aot_target(&arch90, 1, &tg);
    tg.batch = batch;
    if (cg_generate_for(s, "test", &tg, o, &e)) {
        CHECK(0, "%s at %d image(s) on sm_90: %s", what, batch, e.msg);
        return -1;
    }
    return 0;
}

/* The fc_vec cluster split exists only for targets of cc 9.0 and later: the
 * default target refuses it, an sm_90 target lists split 2, 4, 8 among the
 * candidates, and the emitted kernel declares its cluster, puts the split on
 * grid z and compiles for sm_90 without spills. */
static void test_fc_split(cg_nvrtc *nv)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {""};
    if (!s || cg_spec_load("specs/ece408-2018sp.yaml", s, &e)) {
        CHECK(0, "ece408-2018sp: %s", s ? e.msg : "no memory");
        free(s);
        return;
    }
    int fc1 = -1;
    for (int i = 0; i < s->nlayers; i++)
        if (!strcmp(s->layers[i].name, "fc1")) fc1 = i;
    char why[256];
    int verdict = cg_gen_check_one(s, fc1, "fc_vec", "split=2", why, sizeof why, &e);
    CHECK(verdict == 1, "split refused on the default target (%d: %s)", verdict, e.msg);
    const char *said = why;
    CHECK_CONTAINS(said, "split=2 is not legal for fc_vec");
    cg_target t90;
    int arch90 = 90;
    cg_aot_target(&arch90, 1, &t90);
    cg_candidates c;
    int splits = 0;
    if (cg_gen_candidates_for(s, &t90, fc1, "fc_vec", 0, 0, &c, &e) == 0) {
        for (int i = 0; i < c.n; i++) splits |= strstr(c.c[i].params, "split=2") ? 1 : strstr(c.c[i].params, "split=8") ? 2 : 0;
        cg_candidates_free(&c);
    }
    CHECK(splits == 3, "sm_90 candidates include split=2 and split=8 (%s)", e.msg);
    cg_gen_kernel k;
    cg_kernel_launch l;
    int rc = cg_gen_emit_one_for(s, &t90, fc1, "fc_vec", "bm=128 bn=32 bk=16 tm=8 tn=4 split=4", &k, &l, &e);
    CHECK(rc == 0, "emit split=4: %s", e.msg);
    if (!rc) {
        CHECK_CONTAINS(k.source, "__cluster_dims__(1, 1, 4) __launch_bounds__(128)");
        CHECK(!strcmp(l.grid[2], "4") && strstr(k.kernel, "_s4"), "grid z %s, name %s", l.grid[2], k.kernel);
        cg_buf img, log;
        cg_nvrtc_stats st;
        rc = cg_nvrtc_compile(nv, k.source, k.file, 90, 0, &img, &log, &st, &e);
        CHECK(rc == 0 && st.known && !st.spill_stores && !st.spill_loads, "split kernel for sm_90: %s", rc ? e.msg : "spills");
        cg_buf_free(&img), cg_buf_free(&log);
        cg_gen_kernel_free(&k);
    }
    free(s);
}

/* fc_tc's split reduction, which only a known batch gets (the planner's at a bucket):
 * layers-fc-tc generated for 1,024 images on sm_80 splits f1 (15,488 inputs into 10)
 * 22 ways; its partial-sum kernel and the splitk_reduce after it compile for sm_80 and
 * sm_90 without spills (the specs below are compiled at the large batch alone). */
static void test_fc_tc_split(cg_nvrtc *nv)
{
    static cg_spec s;
    static cg_gen_output o;
    cg_err e = {""};
    cg_target tg;
    cg_target_default(&tg);
    tg.cc = 80, tg.batch = 1024;
    if (cg_spec_load("tests/gpu/layers-fc-tc.yaml", &s, &e) || cg_generate_for(&s, "test", &tg, &o, &e)) {
        CHECK(0, "layers-fc-tc at 1,024 images: %s", e.msg);
        return;
    }
    int split = 0, reduce = 0;
    for (int k = 0; k < o.nkernels; k++) {
        const cg_gen_kernel *gk = &o.k[k];
        int z = !strncmp(gk->kernel, "fc_tc_", 6) && strstr(gk->kernel, "_z22") != NULL;
        int r = !strncmp(gk->kernel, "splitk_reduce_", 14);
        if (!z && !r) continue;
        split += z, reduce += r;
        for (int arch = 80; arch <= 90; arch += 10) compiles_clean(nv, gk, arch);
    }
    CHECK(split == 1 && reduce == 1, "layers-fc-tc at 1,024: %d split fc_tc kernels, %d splitk_reduce", split, reduce);
    cg_gen_free(&o);
}

/* fc_gemv's cluster split (sm_90 only): the default target refuses split=2 for
 * zoo-awkward's fc1 (45,000 inputs into 10 outputs); generated for one image on sm_90
 * its 10 blocks split 8 ways by default: the kernel declares its (1, 1, 8) cluster,
 * puts the split on grid z and compiles for sm_90 without spills. At 8 images the fc
 * and the softmax after it are the tail kernel, each image's reduction split over a
 * cluster of 8 (ops/tail.lua), which compiles likewise. From 16 images on gemv's
 * default block is 4 images x 4 outputs. */
static void test_gemv_split(cg_nvrtc *nv)
{
    static cg_spec s;
    static cg_gen_output o;
    cg_err e = {""};
    if (cg_spec_load("bench/specs/zoo-awkward.yaml", &s, &e)) {
        CHECK(0, "zoo-awkward: %s", e.msg);
        return;
    }
    int fc1 = -1;
    for (int i = 0; i < s.nlayers; i++)
        if (!strcmp(s.layers[i].name, "fc1")) fc1 = i;
    char why[256];
    int verdict = cg_gen_check_one(&s, fc1, "fc_gemv", "split=2", why, sizeof why, &e);
    CHECK(verdict == 1, "gemv's split refused on the default target (%d: %s)", verdict, e.msg);
    const char *said = why;
    CHECK_CONTAINS(said, "split=2 is not legal for fc_gemv");
    if (generate_sm90(&s, 1, &o, "zoo-awkward")) return;
    int found = 0;
    for (int k = 0; k < o.nkernels; k++) {
        const cg_gen_kernel *gk = &o.k[k];
        if (strncmp(gk->kernel, "fc_gemv_", 8)) continue;
        found++;
        CHECK(!strcmp(gk->kernel, "fc_gemv_i45000o10_none_bias_b1r1t512_s8"), "gemv at one image: %s", gk->kernel);
        CHECK_CONTAINS(gk->source, "__cluster_dims__(1, 1, 8) __launch_bounds__(512)");
        CHECK_CONTAINS(gk->source, "launch:     grid (N*1/1, 10, 8)");
        compiles_clean(nv, gk, 90);
    }
    CHECK(found == 1, "one fc_gemv kernel at one image (%d)", found);
    cg_gen_free(&o);
    if (generate_sm90(&s, 8, &o, "zoo-awkward")) return;
    found = 0;
    for (int k = 0; k < o.nkernels; k++) {
        const cg_gen_kernel *gk = &o.k[k];
        if (strncmp(gk->kernel, "tail_", 5) && strncmp(gk->kernel, "fc_gemv_", 8)) continue;
        found++;
        CHECK(!strcmp(gk->kernel, "tail_i45000o10_none_bias_softmax_t512_s8"), "the tail at 8 images: %s", gk->kernel);
        CHECK_CONTAINS(gk->source, "__cluster_dims__(1, 1, 8) __launch_bounds__(512)");
        CHECK_CONTAINS(gk->source, "launch:     grid (N*1/1, 1, 8)");
        compiles_clean(nv, gk, 90);
    }
    CHECK(found == 1, "one tail kernel, no fc_gemv, at 8 images (%d)", found);
    cg_gen_free(&o);
    if (generate_sm90(&s, 64, &o, "zoo-awkward")) return;
    found = 0;
    for (int k = 0; k < o.nkernels; k++)
        found += !strcmp(o.k[k].kernel, "fc_gemv_i45000o10_none_bias_b4r4t256_s4");
    CHECK(found == 1, "gemv at 64 images in 4 x 4 blocks of 256 threads (48 blocks: split 4 ways)");
    cg_gen_free(&o);
}

/* At one image on sm_90 a layer of a 7x7 kernel takes planes in 16-map tiles and
 * 128-row slices (planner.small_planes), a 3x3 layer does not: zoo-7x7-large's conv2
 * and zoo-vgg-same's layers; the planes kernel compiles for sm_90 without spills. */
static void test_small_planes(cg_nvrtc *nv)
{
    static cg_spec s;
    static cg_gen_output o;
    cg_err e = {""};
    const char *specs[] = {"bench/specs/zoo-7x7-large.yaml", "bench/specs/zoo-vgg-same.yaml"};
    for (int i = 0; i < 2; i++) {
        if (cg_spec_load(specs[i], &s, &e)) {
            CHECK(0, "%s: %s", specs[i], e.msg);
            return;
        }
        if (generate_sm90(&s, 1, &o, specs[i])) return;
        int planes = 0;
        for (int k = 0; k < o.nkernels; k++) {
            const cg_gen_kernel *gk = &o.k[k];
            if (strncmp(gk->kernel, "conv2d_planes_", 14)) continue;
            planes++;
            CHECK_CONTAINS(gk->source, "small batch: planes in 16-map tiles and 128-row slices, bands of 2 rows");
            compiles_clean(nv, gk, 90);
        }
        CHECK(planes == (i == 0 ? 1 : 0), "%s at one image: %d planes kernels", specs[i], planes);
        cg_gen_free(&o);
    }
}

/* 16-bit networks need sm_80: layers-bf16 generated for sm_75 is refused for its
 * precision, naming the target; layers-fp16 (fp16's FFMA templates would run
 * there) is refused at its igemm_tc layer, whose m16n8k16 product needs sm_80;
 * both generate for sm_80 (and compile below, with the -bf16/-fp16 specs). */
static void test_half_refusals(void)
{
    static cg_spec s;
    static cg_gen_output o;
    cg_err e = {""};
    cg_target t75;
    cg_target_default(&t75);
    t75.cc = 75;
    int rc = cg_spec_load("tests/gpu/layers-bf16.yaml", &s, &e);
    CHECK(rc == 0, "layers-bf16: %s", e.msg);
    if (!rc) {
        rc = cg_generate_for(&s, "test", &t75, &o, &e);
        CHECK(rc != 0, "layers-bf16 generated for sm_75");
        if (rc) CHECK_CONTAINS(e.msg, "precision bf16 needs sm_80 or newer (BF16 conversions and tensor cores); the target is sm_75");
        else cg_gen_free(&o);
    }
    rc = cg_spec_load("tests/gpu/layers-fp16.yaml", &s, &e);
    CHECK(rc == 0, "layers-fp16: %s", e.msg);
    if (!rc) {
        rc = cg_generate_for(&s, "test", &t75, &o, &e);
        CHECK(rc != 0, "layers-fp16 generated for sm_75");
        if (rc) CHECK_CONTAINS(e.msg, "layer 'b2': conv2d_igemm_tc needs tensor cores with FP16 m16n8k16 (sm_80 or newer); the target is sm_75");
        else cg_gen_free(&o);
    }
}

/* precision_fallback: a bf16 network of auto layers with `precision_fallback: fp32`
 * generates for sm_75 the FP32 kernels (no name in _bf16, no tensor in bf16), says so
 * in the manifest and the output's note, and they compile for sm_75; for sm_80 it
 * stays bf16, without the note. (A layer whose spec names a template the target
 * cannot run, layers-bf16's igemm_tc, is refused for that as in any precision.) */
static void test_half_fallback(cg_nvrtc *nv)
{
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    static const char spec[] = "network: fb\ninput: {channels: 3, height: 16, width: 16}\nprecision: bf16\n"
                               "precision_fallback: fp32\nlayers:\n"
                               "  - {name: c1, op: conv, M: 32, K: 3, activation: relu}\n"
                               "  - {name: c2, op: conv, M: 64, K: 3, activation: relu, pool: max2}\n"
                               "  - {name: f1, op: fc, out: 10}\n  - {name: p, op: softmax}\n";
    cg_err e = {""};
    int rc = cg_spec_parse("fallback.yaml", spec, strlen(spec), &s, &e);
    CHECK(rc == 0, "a bf16 network with a fallback: %s", e.msg);
    if (rc) return;
    for (int cc = 75; cc <= 80; cc += 5) {
        cg_target t;
        cg_target_default(&t);
        t.cc = cc;
        rc = cg_generate_for(&s, "test", &t, &o, &e);
        CHECK(rc == 0, "generated for sm_%d: %s", cc, e.msg);
        if (rc) continue;
        int bf16 = 0;
        for (int i = 0; i < o.nkernels; i++) {
            bf16 += strstr(o.k[i].kernel, "_bf16") != NULL;
            if (cc == 75) compiles_clean(nv, &o.k[i], 75);
        }
        CHECK(cc == 75 ? bf16 == 0 : bf16 >= 3, "sm_%d: %d of %d kernels in bf16", cc, bf16, o.nkernels);
        CHECK((strstr(o.manifest, "\n# precision fp32 generated in place of bf16: the target is sm_75") != NULL) ==
                  (cc == 75) && (o.note[0] != 0) == (cc == 75),
              "sm_%d: the manifest's and the output's note: \"%s\"", cc, o.note);
        rc = cg_manifest_parse(o.manifest, o.manifest_len, "test", &m, &e);
        CHECK(rc == 0, "the manifest parses: %s", e.msg);
        int tensors16 = 0;
        for (int i = 0; !rc && i < m.ntensors; i++) tensors16 += m.t[i].dtype == CG_DT_BF16;
        CHECK(rc || (cc == 75 ? tensors16 == 0 : tensors16 > 0), "sm_%d: %d tensors in bf16", cc, tensors16);
        cg_gen_free(&o);
        /* one layer alone, as the tuner and `convgen kernel` emit it: the same precision */
        cg_gen_kernel k;
        cg_kernel_launch l;
        rc = cg_gen_emit_one_for(&s, &t, 1, NULL, NULL, &k, &l, &e);
        CHECK(rc == 0 && (strstr(k.kernel, "_bf16") != NULL) == (cc != 75), "sm_%d: layer c2 alone: %s", cc,
              rc ? e.msg : k.kernel);
        if (!rc) cg_gen_kernel_free(&k);
    }
}

int main(void)
{
    cg_nvrtc *nv = NULL;
    cg_err e = {""};
    if (cg_nvrtc_open(&nv, &e)) {
        printf("skip: kernel compile tests: %s\n", e.msg);
        CHECK_CONTAINS(e.msg, "no NVRTC");
        return cg_test_done("kernels_compile");
    }
    int narch = 0;
    const int *archs = cg_nvrtc_archs(nv, &narch);
    test_fc_split(nv);
    test_fc_tc_split(nv);
    test_gemv_split(nv);
    test_small_planes(nv);
    test_half_refusals();
    test_half_fallback(nv);
    const char *all_env = getenv("CG_TEST_ALL_ARCHS");
    int all = all_env && !strcmp(all_env, "1");

    glob_t g;
    int grc = glob("specs/*.yaml", 0, NULL, &g);
    CHECK(grc == 0 && g.gl_pathc >= 1, "shipped specs found under specs/");
    if (grc) return cg_test_done("kernels_compile");
    /* and make test-gpu's networks of padding, stride and the pools (issue 12) */
    size_t shipped = g.gl_pathc;
    CHECK(glob("tests/gpu/*.yaml", GLOB_APPEND, NULL, &g) == 0 && g.gl_pathc >= shipped + 3,
          "the layer networks under tests/gpu/");

    cg_gen_output *outs = calloc(g.gl_pathc, sizeof *outs);
    job *jobs = NULL;
    int njobs = 0, cap = 0;
    /* a network for tensor cores (its name ends in -tc: conv2d_igemm_tc, or -tf32: its tf32 kernels) is generated for
     * sm_80 and compiled for sm_80 and newer only */
    cg_target tc_target, wg_target;
    cg_target_default(&tc_target);
    tc_target.cc = 80;
    /* and one for wgmma (-wg: conv2d_igemm_wg, conv2d_planes) for sm_90 alone, built as sm_90a */
    int sm90 = 90;
    cg_aot_target(&sm90, 1, &wg_target);
    /* CG_KERNELS_COMPILE_SPEC=TEXT: only the specs whose path holds TEXT (a quick rerun of one) */
    const char *only = getenv("CG_KERNELS_COMPILE_SPEC");
    for (size_t i = 0; i < g.gl_pathc && outs; i++) {
        if (only && *only && !strstr(g.gl_pathv[i], only)) continue;
        cg_spec spec;
        const int tc = strstr(g.gl_pathv[i], "-tc.yaml") != NULL || strstr(g.gl_pathv[i], "-tf32.yaml") != NULL ||
                       strstr(g.gl_pathv[i], "-bf16.yaml") != NULL || strstr(g.gl_pathv[i], "-fp16.yaml") != NULL,
                  wg = strstr(g.gl_pathv[i], "-wg.yaml") != NULL;
        int rc = cg_spec_load(g.gl_pathv[i], &spec, &e) ||
                 cg_generate_for(&spec, "tests/test_kernels_compile", tc ? &tc_target : wg ? &wg_target : NULL,
                                 &outs[i], &e);
        CHECK(rc == 0, "%s: %s", g.gl_pathv[i], e.msg);
        if (rc) continue;
        CHECK(outs[i].nkernels > 0, "%s: has kernels", g.gl_pathv[i]);
        for (int k = 0; k < outs[i].nkernels; k++)
            for (int a = 0; a < narch; a++) {
                if (!wanted(archs[a], all) || (tc && archs[a] < 80) || (wg && archs[a] != 90)) continue;
                if (i >= shipped && !all && sibling_arch(archs[a])) continue;
                if (njobs == cap) {
                    cap = cap ? 2 * cap : 64;
                    job *nj = realloc(jobs, (size_t)cap * sizeof *jobs);
                    if (!nj) break;
                    jobs = nj;
                }
                size_t len;
                const char *body = source_body(&outs[i].k[k], &len);
                jobs[njobs++] = (job){&outs[i].k[k], g.gl_pathv[i], archs[a], body, len, 0};
            }
    }
    CHECK(outs != NULL, "out of memory");

    /* one compile per distinct (body, arch); a failure names the first spec with it and how many more share it */
    int builds = njobs;
    if (jobs) qsort(jobs, (size_t)njobs, sizeof *jobs, by_body);
    int distinct = 0;
    for (int j = 0; j < njobs; j++)
        if (!distinct || by_body(&jobs[distinct - 1], &jobs[j])) jobs[distinct++] = jobs[j];
        else jobs[distinct - 1].also++;
    njobs = distinct;
    if (jobs) qsort(jobs, (size_t)njobs, sizeof *jobs, by_length);

    int failed = 0, spilled = 0;
    double cpu = 0, cpu_twins = 0; /* CPU seconds of the compiles, and what the skipped ones would have taken */
#pragma omp parallel for schedule(dynamic) reduction(+ : failed, spilled, cpu, cpu_twins)
    for (int j = 0; j < njobs; j++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        cg_buf img, log;
        cg_nvrtc_stats st;
        cg_err je = {""};
        const job *jb = &jobs[j];
        if (cg_nvrtc_compile(nv, jb->k->source, jb->k->file, jb->arch, 0, &img, &log, &st, &je)) {
#pragma omp critical
            printf("FAIL %s: %s sm_%d (and %d more of the same source): %s\n%s\n", jb->spec, jb->k->kernel, jb->arch,
                   jb->also, je.msg, log.data ? log.data : "");
            failed++;
        } else if (st.spill_stores || st.spill_loads || !st.known) {
#pragma omp critical
            printf("FAIL %s: %s sm_%d (and %d more of the same source): %ld bytes spill stores, %ld bytes spill loads "
                   "(ptxas numbers %s)\n",
                   jb->spec, jb->k->kernel, jb->arch, jb->also, st.spill_stores, st.spill_loads,
                   st.known ? "read" : "missing");
            spilled++;
        }
        cg_buf_free(&img), cg_buf_free(&log);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        cpu += took, cpu_twins += took * jb->also;
    }
    printf("note: %d kernel builds across %zu specs (%s), %d of them distinct and compiled\n", builds, g.gl_pathc,
           all ? "every NVRTC arch >= 75" : "the shipped archs", njobs);
    printf("note: %.0f s CPU in NVRTC; compiling the %d repeated sources as well would have taken %.0f s more\n", cpu,
           builds - njobs, cpu_twins);
    CHECK(njobs <= builds && (builds == 0 || njobs > 0), "one compile per distinct kernel and arch");
    CHECK(njobs > 0, "something was compiled");
    CHECK(failed == 0, "%d of %d kernel builds failed", failed, njobs);
    CHECK(spilled == 0, "%d of %d kernel builds spilled", spilled, njobs);

    for (size_t i = 0; outs && i < g.gl_pathc; i++) cg_gen_free(&outs[i]);
    free(outs), free(jobs);
    globfree(&g);
    cg_nvrtc_close(nv);
    return cg_test_done("kernels_compile");
}
