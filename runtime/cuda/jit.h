/* jit.h — a generated network's kernels to device images through NVRTC,
 * several kernels at a time, with the on-disk cache (cache.h) in front.
 *
 * NVRTC programs are independent handles: each thread here creates, compiles,
 * reads and destroys its own, never touching another's, and the calls it makes
 * (nvrtcCreateProgram, nvrtcCompileProgram, nvrtcGetProgramLog[Size],
 * nvrtcGetCUBIN/PTX[Size], nvrtcDestroyProgram, nvrtcGetErrorString) are not
 * among those NVRTC's header marks as unsafe across threads (only
 * nvrtcGetTypeName is, which convgen does not call). So a cold start costs
 * about the slowest kernel rather than the sum. No driver
 * call is made: the caller loads the images (and so this runs without a GPU,
 * which is how it is tested). */
#ifndef CG_JIT_H
#define CG_JIT_H
#include "cuda_api.h"
#include "gen.h"
#include "nvrtc.h"

#define CG_JIT_MAX_THREADS 8

typedef struct {
    int arch, as_ptx;       /* what NVRTC emits (cg_nvrtc_pick_arch) */
    int cc;                 /* the device's compute capability: part of the key */
    int driver_version;     /* likewise */
    const char *cache_dir;  /* NULL: no cache */
    int threads;            /* 0: min(kernels, online CPUs, CG_JIT_MAX_THREADS) */
    int refresh;            /* 1: compile even where the cache holds a kernel (and rewrite
                               its entry): the tuner's first compile of a candidate costs the
                               same whatever an earlier run left in the cache */
} cg_jit_opts;

/* One kernel's outcome, in the order of cg_gen_output.k. */
typedef struct {
    cg_buf image;  /* cubin, or PTX when as_ptx */
    int cached;    /* 1: read from the cache, 0: compiled */
    double ms;     /* wall time of this kernel's cache read and compile */
    int failed;
    cg_err err;    /* when failed: one line naming the kernel's file */
    cg_buf log;    /* NVRTC's whole log when compiled (errors and ptxas -v) */
    char note[160]; /* why the cache did not serve it ("" = no entry or hit) */
} cg_jit_kernel;

typedef struct {
    int n;            /* kernels, = cg_gen_output.nkernels */
    cg_jit_kernel *k; /* n of them */
    int threads;      /* threads that compiled */
    double wall_ms;   /* the whole call */
    int hits, compiled;
    char note[256];   /* the first cache warning in kernel order, "" if none */
} cg_jit_result;

/* Fill r (cg_jit_free it, also after a failure). Returns 0 when every kernel
 * has an image; else -1 with e holding the first failing kernel's line (every
 * failing kernel has its own err and log in r). */
int cg_jit_build(cg_nvrtc *nv, const cg_gen_output *o, const cg_jit_opts *opt, cg_jit_result *r,
                 cg_err *e);
void cg_jit_free(cg_jit_result *r);

/* What JIT code for device cu may assume: the architecture NVRTC emits for it
 * (*arch, *as_ptx: PTX for a device newer than NVRTC knows), checked against
 * the driver, and the device's limits (shared memory with opt-in, registers,
 * SMs, threads) as templates see them. */
int cg_jit_target(const cg_nvrtc *nv, const cg_cu *cu, int *arch, int *as_ptx, cg_target *t, cg_err *e);

/* ---- one kernel: what the kernel harness (and a tuner) repeats per candidate ---- */

typedef struct {
    char arch[32];  /* "sm_90", or "compute_120 (PTX)" for a device newer than NVRTC */
    int cache_hit;  /* 1: the image came from the cache, NVRTC did not run */
    double ms;      /* compile, or cache read */
    char note[256]; /* why the cache was skipped, an entry rebuilt or not written; "" if none */
} cg_jit_info;

/* Kernel k for a device of compute capability cc under driver driver_version,
 * through cg_jit_build (same key, same cache entries as a network's JIT):
 * image receives what cuModuleLoadData takes, log (may be NULL) NVRTC's log. */
int cg_jit_compile(cg_nvrtc *nv, int cc, int driver_version, const cg_gen_kernel *k, int use_cache,
                   cg_buf *image, cg_buf *log, cg_jit_info *info, cg_err *e);


#endif
