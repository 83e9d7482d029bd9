/* batched.h — the CPU backend over any number of images in batches of a
 * bounded size, so that memory follows the batch and not N (cg_cpu_forward
 * keeps every layer of every image it is given). The MPI driver runs each
 * rank's share through it; it is the CPU half of "Throughput at scale". */
#ifndef CG_BATCHED_H
#define CG_BATCHED_H
#include "spec.h"
#include "weights.h"

/* Predictions (and probs, n * classes, when not NULL) for n images, batch at a
 * time (batch >= 1); the same values cg_cpu_forward gives for all n at once.
 * layer_ms, when not NULL, gains each layer's time over all batches. */
int cg_cpu_run_batched(const cg_spec *s, const cg_weights *w, const unsigned char *pixels, long long n,
                       long long batch, int *pred, float *probs, double *layer_ms, cg_err *e);

#endif
