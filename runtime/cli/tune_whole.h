/* tune_whole.h — the whole-network kernel as one more candidate of `convgen
 * tune --batch N` (docs/tuning.md, "The whole-network kernel"). Where the
 * network's kernels for N's bucket include one, both paths (the per-layer
 * kernels, the whole-network kernel) are checked against the CPU reference,
 * every layer and the predictions, then timed the way the runtime's auto
 * times them at first use (runtime/cuda/gpu.c, measure_ways: the ways
 * alternating a batch at a time, warm-up rounds, then the median of each); a
 * path that fails its check is never chosen. The decision goes into the
 * tuning record, keyed by bucket, for run, check and the library to take
 * instead of timing both again. Through the public API (a CUDA network), so
 * tests run it on the stand-in driver (tests/fake_cuda.c). */
#ifndef CG_TUNE_WHOLE_H
#define CG_TUNE_WHOLE_H
#include "spec.h"
#include "tune.h"

/* What was found for one bucket. */
typedef struct {
    int has;                    /* the kernels include a whole-network kernel (else nothing else is set) */
    int bucket;                 /* the bucket of the images timed */
    char kernels[17];           /* the build id of the kernels checked and timed */
    int ok[2];                  /* per path, 0 the per-layer kernels and 1 the whole kernel: passed its check */
    char why[2][320];           /* why a path failed its check ("" where it passed) */
    double layers_ms, whole_ms; /* the runtime's medians of one batch each way; NaN: not timed */
    char note[256];             /* why the two were not both timed (the runtime's words), "" */
    int decided;                /* a path passed its check, and entry holds the choice */
    cg_whole_tuned entry;
} cg_tune_whole_result;

/* Check and time both paths of spec s (the tuning record's per-layer choices
 * applied, as run applies them; whatever whole-network decisions s carries are
 * left out, so that both are timed) on CUDA device `device`, `batch` seeded
 * random images (the spec's weights) in one launch. Returns CG_STATUS_OK with r
 * filled, or another cg_status with e set (the device failed, out of memory). */
int cg_tune_whole(const cg_spec *s, long long batch, int device, int no_cache, cg_tune_whole_result *r, cg_err *e);

/* `convgen tune`'s last step: the record rec (as about to be written) applied
 * to a copy of s (the spec as loaded, before any record) as run would apply it
 * on that device (name, cc), cg_tune_whole at `batch` images where that is a
 * small bucket, the decision put into rec (cg_tune_whole_put) and one line
 * printed saying what was measured and recorded. A CG_STATUS_*. */
int cg_tune_whole_step(const cg_spec *s, cg_tune_record *rec, const char *device_name, int cc, long long batch,
                       int device, int no_cache, cg_err *e);

#endif
