/* pipeline.h — splitting a run of N images into batches and keeping several
 * batches in flight, independent of what executes them.
 *
 * The CUDA backend keeps k "sets" (a stream, its own device tensors and pinned
 * staging buffers): while set i%k computes batch i, the others upload the next
 * batch and download the previous one. The order of calls is the whole of the
 * scheduling, so it lives here, where a test can drive it with a fake backend
 * (tests/test_pipeline.c); the MPI driver uses the same split of images over
 * ranks (cg_share) and runs each rank's share in batches through it too. */
#ifndef CG_PIPELINE_H
#define CG_PIPELINE_H
#include "util.h"

#define CG_PIPE_MAX_SETS 4

typedef struct {
    /* Stage images [off, off+n) and start them on `set`; returns before they
     * finish. The set is idle: its previous batch has been finished. */
    int (*submit)(void *ctx, int set, long long off, long long n, cg_err *e);
    /* Wait for `set`'s batch [off, off+n) and deliver its results. Called once
     * per submitted batch, in batch (= input) order. */
    int (*finish)(void *ctx, int set, long long off, long long n, cg_err *e);
    /* After a failure: wait for whatever is still in flight, quietly, so that
     * nothing is written to buffers the caller may free. May be NULL. */
    void (*drain)(void *ctx);
} cg_pipe_ops;

/* Run n images in batches of `batch` over `sets` sets (1..CG_PIPE_MAX_SETS):
 * batch i goes to set i % sets, submitted once batch i - sets is finished.
 * n = 0 calls nothing. On the first failure nothing more is submitted or
 * finished, drain is called and -1 returned with e filled. */
int cg_pipe_run(long long n, long long batch, int sets, const cg_pipe_ops *ops, void *ctx, cg_err *e);

/* Rank `rank` of `ranks` gets images [*off, *off + *n): contiguous shares in
 * rank order, sizes differing by at most one (the first n % ranks ranks hold
 * the extra image). */
void cg_share(long long n, int ranks, int rank, long long *off, long long *count);

#endif
