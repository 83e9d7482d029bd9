/* test_kernels_compile.c — every kernel of every shipped spec (the YAML files
 * in specs/, and make test-gpu's in tests/gpu/) compiles through NVRTC to a cubin, without a byte of spill, for
 * each arch the fat binaries ship (runtime/cuda/aot.c's table, by default) that NVRTC
 * supports; CG_TEST_ALL_ARCHS=1 takes every NVRTC arch from sm_75 up instead
 * (about twice the time: the big convolutions take seconds per arch). Needs
 * NVRTC, not a GPU; compiles run in parallel (OpenMP), one NVRTC program each. */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's (see test_nvrtc.c) */
#include "aot.h"
#include "check.h"
#include "gen.h"
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

typedef struct {
    const cg_gen_kernel *k;
    const char *spec;
    int arch;
} job;

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
    for (size_t i = 0; i < g.gl_pathc && outs; i++) {
        cg_spec spec;
        int rc = cg_spec_load(g.gl_pathv[i], &spec, &e) ||
                 cg_generate(&spec, "tests/test_kernels_compile", &outs[i], &e);
        CHECK(rc == 0, "%s: %s", g.gl_pathv[i], e.msg);
        if (rc) continue;
        CHECK(outs[i].nkernels > 0, "%s: has kernels", g.gl_pathv[i]);
        for (int k = 0; k < outs[i].nkernels; k++)
            for (int a = 0; a < narch; a++) {
                if (!wanted(archs[a], all)) continue;
                if (njobs == cap) {
                    cap = cap ? 2 * cap : 64;
                    job *nj = realloc(jobs, (size_t)cap * sizeof *jobs);
                    if (!nj) break;
                    jobs = nj;
                }
                jobs[njobs++] = (job){&outs[i].k[k], g.gl_pathv[i], archs[a]};
            }
    }
    CHECK(outs != NULL, "out of memory");

    int failed = 0, spilled = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : failed, spilled)
    for (int j = 0; j < njobs; j++) {
        cg_buf img, log;
        cg_nvrtc_stats st;
        cg_err je = {""};
        const job *jb = &jobs[j];
        if (cg_nvrtc_compile(nv, jb->k->source, jb->k->file, jb->arch, 0, &img, &log, &st, &je)) {
#pragma omp critical
            printf("FAIL %s: %s\n%s\n", jb->spec, je.msg, log.data ? log.data : "");
            failed++;
        } else if (st.spill_stores || st.spill_loads || !st.known) {
#pragma omp critical
            printf("FAIL %s: %s sm_%d: %ld bytes spill stores, %ld bytes spill loads "
                   "(ptxas numbers %s)\n",
                   jb->spec, jb->k->kernel, jb->arch, st.spill_stores, st.spill_loads,
                   st.known ? "read" : "missing");
            spilled++;
        }
        cg_buf_free(&img), cg_buf_free(&log);
    }
    printf("note: %d kernel builds across %zu specs (%s)\n", njobs, g.gl_pathc,
           all ? "every NVRTC arch >= 75" : "the shipped archs");
    CHECK(njobs > 0, "something was compiled");
    CHECK(failed == 0, "%d of %d kernel builds failed", failed, njobs);
    CHECK(spilled == 0, "%d of %d kernel builds spilled", spilled, njobs);

    for (size_t i = 0; outs && i < g.gl_pathc; i++) cg_gen_free(&outs[i]);
    free(outs), free(jobs);
    globfree(&g);
    cg_nvrtc_close(nv);
    return cg_test_done("kernels_compile");
}
