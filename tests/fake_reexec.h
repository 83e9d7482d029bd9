/* fake_reexec.h — run a test again with the stand-in libcuda.so.1 (tests/fake_cuda.c,
 * built into build/tests/fake) first on the loader's path and a private JIT cache.
 *
 * In main: `if (fake_cu_reexec(argv, "graph")) return cg_test_done("graph");` — in the
 * parent it re-executes the test (returning only when that fails, 1); in the child
 * (CG_FAKE_CUDA_CHILD set to the private directory) it returns 0 at once. */
#ifndef CG_FAKE_REEXEC_H
#define CG_FAKE_REEXEC_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

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

#endif
