/* fake_run.h — tests on the stand-in libcuda.so.1 (tests/fake_cuda.c, built into
 * build/tests/fake): the test run again with it first on the loader's path and a
 * private JIT cache, and the manifest the CUDA backend generates on its device.
 *
 * fake_cu_reexec, in main: `if (fake_cu_reexec(argv, "graph")) return cg_test_done("graph");` — in the
 * parent it re-executes the test (returning only when that fails, 1); in the child
 * (CG_FAKE_CUDA_CHILD set to the private directory) it returns 0 at once. */
#ifndef CG_FAKE_RUN_H
#define CG_FAKE_RUN_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "cuda_api.h"
#include "gen.h"
#include "jit.h"
#include "manifest.h"
#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */

static int fake_cu_reexec(char **argv, const char *name)
{
    if (getenv("CG_FAKE_CUDA_CHILD")) return 0;
    char cwd[4096], lib[8400], cache[64];
    snprintf(cache, sizeof cache, "/tmp/cg_test_%s_XXXXXX", name);
    if (!getcwd(cwd, sizeof cwd) || !mkdtemp(cache)) {
        CHECK(0, "setup");
        return 1;
    }
    const char *prev = getenv("LD_LIBRARY_PATH");
    snprintf(lib, sizeof lib, "%s/build/tests/fake%s%.4000s", cwd, prev && *prev ? ":" : "", prev ? prev : "");
    setenv("LD_LIBRARY_PATH", lib, 1);
    setenv("XDG_CACHE_HOME", cache, 1);
    setenv("CG_FAKE_CUDA_CHILD", cache, 1);
    execv("/proc/self/exe", argv);
    CHECK(0, "re-exec: %s", argv[0]);
    return 1;
}

/* The manifest the CUDA backend generates for spec s on the fake device, for the bucket
 * of `batch` images (0: the large batch's); 0, or -1 after a failed CHECK. */
static int fake_backend_manifest(const cg_spec *s, long long batch, cg_manifest *m)
{
    static cg_gen_output gen;
    cg_err e = {""};
    cg_cu *cu = NULL;
    cg_nvrtc *nv = NULL;
    cg_target tg;
    int arch = 0, as_ptx = 0;
    int rc = cg_cu_open(&cu, 0, &e) || cg_nvrtc_open(&nv, &e) || cg_jit_target(nv, cu, &arch, &as_ptx, &tg, &e);
    if (!rc) {
        tg.batch = cg_batch_bucket(batch);
        rc = cg_generate_for(s, "regen", &tg, &gen, &e) ||
             cg_manifest_parse(gen.manifest, gen.manifest_len, "generated manifest", m, &e);
        cg_gen_free(&gen);
    }
    if (nv) cg_nvrtc_close(nv);
    cg_cu_close(cu);
    CHECK(rc == 0, "the backend's manifest: %s", e.msg);
    return rc ? -1 : 0;
}

#endif
