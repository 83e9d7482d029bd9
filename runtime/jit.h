/* jit.h — one generated kernel to a loadable image through NVRTC and the
 * on-disk cache: the step the kernel harness (and a tuner, on several threads)
 * repeats for every candidate. It needs no CUDA context, only the device's
 * compute capability and the driver's version. */
#ifndef CG_JIT_H
#define CG_JIT_H
#include "gen.h"
#include "nvrtc.h"

typedef struct {
    char arch[32];  /* "sm_90", or "compute_120 (PTX)" for a device newer than NVRTC */
    int cache_hit;  /* 1: the image came from the cache, NVRTC did not run */
    double ms;      /* compile, or cache read */
    char note[256]; /* why the cache was skipped, an entry rebuilt or not written; "" if none */
} cg_jit_info;

/* Compile k->source for a device of compute capability cc (10*major+minor)
 * under driver driver_version: a cubin of its own arch, or PTX of the newest
 * arch below it. With use_cache, look in cg_cache_dir first and store what
 * was compiled there (a cache that cannot be read or written is a note, not
 * an error). image receives what cuModuleLoadData takes; log (may be NULL)
 * NVRTC's whole log when it ran. */
int cg_jit_compile(cg_nvrtc *nv, int cc, int driver_version, const cg_gen_kernel *k, int use_cache,
                   cg_buf *image, cg_buf *log, cg_jit_info *info, cg_err *e);

#endif
