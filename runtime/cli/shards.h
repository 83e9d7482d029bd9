/* shards.h — one run of N images over several opened networks at once, one
 * thread per network: `convgen run --devices 0,1` opens one network per GPU
 * and gives each a contiguous shard of the images (cg_share: in order, sizes
 * within one image). Each network runs its shard with cg_net_run, streamed in
 * batches by its own backend (base/pipeline.h), and writes its answers
 * in place at the shard's offset, so the whole run's predictions are in input
 * order and, image by image, what one network gives for all of them.
 *
 * Nothing here knows a backend: the networks are cg_net handles (the public
 * API), so the tests drive it with CPU networks (tests/test_shards.c). The
 * header's thread rule holds: each network is used by one thread only. */
#ifndef CG_SHARDS_H
#define CG_SHARDS_H
#include "convgen.h"
#include "util.h"

#define CG_SHARDS_MAX 64

/* What one network did with its shard. */
typedef struct {
    long long off, n;  /* its images: [off, off + n) */
    double wall_ms;    /* its run, host clock (0 for an empty shard, which is not run) */
    cg_status status;  /* its run's; on failure the message is cg_net_error(net) */
} cg_shard;

/* Run in->n images over nets[0..k-1] (1 <= k <= CG_SHARDS_MAX, each opened,
 * all of the same network: same classes, and same layers where layer_out is
 * given), network i taking shard i. pred (n), scores (NULL or n * classes) and
 * layer_out (NULL, or per layer NULL or n * cg_net_layer_size) are the whole
 * run's, as cg_net_run and cg_net_run_layers take them. k = 1 runs on the
 * caller's thread; more start one thread each, whose OpenMP teams get the
 * caller's thread count over k (the staging copies and the CPU backend use
 * every core: k of them at once would oversubscribe). shards (k entries) may
 * be NULL.
 *
 * Returns CG_STATUS_OK, or the status of the first network to fail (in time),
 * *failed its index (-1 for none, or for bad arguments), e one line naming it
 * ("network I: ..."). A shard cannot be stopped midway: the others finish
 * theirs before this returns, and the answers are then not to be used. */
cg_status cg_shards_run(cg_net *const *nets, int k, const cg_input *in, int *pred, float *scores, float **layer_out,
                        cg_shard *shards, int *failed, cg_err *e);

#endif
