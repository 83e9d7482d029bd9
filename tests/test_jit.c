/* test_jit.c — a network's kernels through the cache and NVRTC on several
 * threads: the same layer under two spec paths compiles once, threads give the
 * images one thread gives, and a broken kernel among good ones is reported
 * with its own file and NVRTC log while the others still compile. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */
#include "check.h"
#include "gen.h"
#include "jit.h"
#include "spec.h"

static char tmp[256];

/* nftw callback: remove what the test made, deepest first. */
static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int copy_file(const char *from, const char *to)
{
    cg_buf b;
    cg_err e;
    if (cg_read_file(from, &b, &e)) return -1;
    int rc = cg_write_file_atomic(to, b.data, b.len, &e);
    cg_buf_free(&b);
    return rc;
}

static cg_gen_output gen_a, gen_b, fake; /* large: off the stack */

/* specs/example-conv.yaml copied to DIR/NAME and generated into o. */
static int generate_copy(const char *sub, const char *name, cg_gen_output *o)
{
    char dir[512], path[700];
    cg_err e = {""};
    snprintf(dir, sizeof dir, "%s/%s", tmp, sub);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cg_spec *s = malloc(sizeof *s);
    int rc = !s || cg_mkdirs(dir, &e) || copy_file("specs/example-conv.yaml", path) ||
             cg_spec_load(path, s, &e) || cg_generate(s, "regen", o, &e);
    CHECK(!rc, "generate %s: %s", path, e.msg);
    free(s);
    return rc;
}

/* The same spec at two paths: cold, every kernel compiled; then through the
 * other path, every kernel from the cache and nothing compiled. */
static void test_compiles_once(cg_nvrtc *nv, int arch)
{
    if (generate_copy("a", "net.yaml", &gen_a) || generate_copy("b/c", "renamed.yaml", &gen_b))
        return;
    char cache[512];
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    cg_jit_opts jo = {arch, 0, arch, 13000, cache, 0, 0};
    cg_jit_result r;
    cg_err e = {""};
    CHECK(cg_jit_build(nv, &gen_a, &jo, &r, &e) == 0, "first build: %s", e.msg);
    CHECK(r.n == gen_a.nkernels && r.compiled == r.n && r.hits == 0, "cold: %d compiled, %d hits of %d",
          r.compiled, r.hits, r.n);
    for (int i = 0; i < r.n; i++)
        CHECK(!r.k[i].cached && r.k[i].image.len > 0 && r.k[i].ms > 0, "%s compiled, timed",
              gen_a.k[i].kernel);
    cg_jit_result r2;
    CHECK(cg_jit_build(nv, &gen_b, &jo, &r2, &e) == 0, "second build: %s", e.msg);
    CHECK(r2.compiled == 0 && r2.hits == r.n, "other path: %d compiled, %d hits", r2.compiled, r2.hits);
    for (int i = 0; i < r.n && i < r2.n; i++)
        CHECK(r2.k[i].cached && r2.k[i].image.len == r.k[i].image.len &&
                  !memcmp(r2.k[i].image.data, r.k[i].image.data, r.k[i].image.len),
              "%s: the cached image is the compiled one", gen_b.k[i].kernel);
    CHECK(r.note[0] == 0 && r2.note[0] == 0, "no cache warnings: '%s' '%s'", r.note, r2.note);
    cg_jit_free(&r2);

    /* without the cache: everything compiled again, on one thread or on four,
     * with the same images */
    cg_jit_opts one = {arch, 0, arch, 13000, NULL, 1, 0}, four = {arch, 0, arch, 13000, NULL, 4, 0};
    cg_jit_result s1, s4;
    CHECK(cg_jit_build(nv, &gen_a, &one, &s1, &e) == 0 && s1.threads == 1, "one thread: %s", e.msg);
    CHECK(cg_jit_build(nv, &gen_a, &four, &s4, &e) == 0, "four threads: %s", e.msg);
    int want = gen_a.nkernels < 4 ? gen_a.nkernels : 4;
    CHECK(s4.threads == want, "threads used: %d, want %d", s4.threads, want);
    CHECK(s1.compiled == s1.n && s4.compiled == s4.n && s1.hits == 0, "no cache, all compiled");
    for (int i = 0; i < s1.n && i < s4.n; i++)
        CHECK(s1.k[i].image.len == s4.k[i].image.len &&
                  !memcmp(s1.k[i].image.data, s4.k[i].image.data, s1.k[i].image.len),
              "%s: same image on one thread and on four", gen_a.k[i].kernel);
    for (int i = 0; i < s1.n && i < r.n; i++)
        CHECK(s1.k[i].image.len == r.k[i].image.len, "%s: same image with and without the cache",
              gen_a.k[i].kernel);
    cg_jit_free(&s1), cg_jit_free(&s4), cg_jit_free(&r);
    cg_gen_free(&gen_a), cg_gen_free(&gen_b);
}

/* A hand-made output of n kernels, kernel `bad` not compiling. */
static void make_fake(int n, int bad)
{
    memset(&fake, 0, sizeof fake);
    for (int i = 0; i < n; i++) {
        cg_gen_kernel *k = &fake.k[i];
        snprintf(k->kernel, sizeof k->kernel, "k%d", i);
        snprintf(k->file, sizeof k->file, "k%d.cu", i);
        char src[512];
        if (i == bad)
            snprintf(src, sizeof src,
                     "extern \"C\" __global__ void k%d(float *x) { x[0] = undeclared_%d; }\n", i, i);
        else
            snprintf(src, sizeof src,
                     "extern \"C\" __global__ void k%d(float *x) { x[threadIdx.x] += %d.0f; }\n", i, i);
        k->source = strdup(src);
        k->source_len = strlen(src);
    }
    fake.nkernels = n;
}

/* Every kernel is attempted; the broken one carries its own file, line and
 * log; the call fails naming it; nothing broken is cached. */
static void test_errors(cg_nvrtc *nv, int arch)
{
    make_fake(6, 3);
    char cache[512];
    snprintf(cache, sizeof cache, "%s/cache-err", tmp);
    cg_jit_opts jo = {arch, 0, arch, 13000, cache, 3, 0};
    cg_jit_result r;
    cg_err e = {""};
    CHECK(cg_jit_build(nv, &fake, &jo, &r, &e) != 0, "a broken kernel fails the build");
    CHECK_CONTAINS(e.msg, "k3.cu");
    CHECK_CONTAINS(e.msg, "undeclared_3");
    CHECK(r.n == 6 && r.compiled == 5 && r.hits == 0, "the other five compiled: %d", r.compiled);
    for (int i = 0; i < r.n; i++) {
        if (i == 3) {
            CHECK(r.k[i].failed && r.k[i].image.len == 0, "k3 failed without an image");
            CHECK(r.k[i].log.data && strstr(r.k[i].log.data, "undeclared_3"), "k3's NVRTC log kept");
        } else {
            CHECK(!r.k[i].failed && r.k[i].image.len > 0, "k%d has an image", i);
        }
    }
    cg_jit_free(&r);
    CHECK(r.k == NULL && r.n == 0, "freed");
    /* again: the five come from the cache, the broken one fails again */
    CHECK(cg_jit_build(nv, &fake, &jo, &r, &e) != 0 && r.hits == 5 && r.compiled == 0,
          "second try: %d hits", r.hits);
    cg_jit_free(&r);
    /* refresh (the tuner's first compile of a candidate): NVRTC runs for every
     * kernel although the cache holds five, and the entries still serve later */
    jo.refresh = 1;
    CHECK(cg_jit_build(nv, &fake, &jo, &r, &e) != 0 && r.hits == 0 && r.compiled == 5,
          "refresh: %d hits, %d compiled", r.hits, r.compiled);
    cg_jit_free(&r);
    jo.refresh = 0;
    CHECK(cg_jit_build(nv, &fake, &jo, &r, &e) != 0 && r.hits == 5, "after refresh: %d hits", r.hits);
    cg_jit_free(&r);
    cg_gen_free(&fake);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/cg_test_jit_XXXXXX");
    if (!mkdtemp(tmp)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    cg_nvrtc *nv = NULL;
    cg_err e;
    CHECK(cg_nvrtc_open(&nv, &e) == 0, "NVRTC is needed: %s", e.msg);
    if (nv) {
        int n = 0, arch = 0, ptx = 0;
        const int *archs = cg_nvrtc_archs(nv, &n);
        CHECK(cg_nvrtc_pick_arch(nv, archs[n - 1], &arch, &ptx) == 0 && !ptx, "an arch");
        test_compiles_once(nv, arch);
        test_errors(nv, arch);
        cg_nvrtc_close(nv);
    }
    if (nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS)) printf("note: could not remove %s\n", tmp);
    return cg_test_done("jit");
}
