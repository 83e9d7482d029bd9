/* batched.c — the CPU backend in bounded batches (see batched.h). */
#include "batched.h"
#include "cpu.h"
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const cg_spec *s;
    const cg_weights *w;
    const unsigned char *pixels;
    size_t image_bytes;
    long long classes;
    int *pred;
    float *probs, *scratch; /* scratch: one batch of probabilities when the caller wants none */
    double *layer_ms;
} cg_cpu_batches;

/* Pipeline submit: the CPU computes the batch there and then. */
static int cpu_submit(void *ctx, int set, long long off, long long n, cg_err *e)
{
    (void)set;
    cg_cpu_batches *b = ctx;
    float *probs = b->probs ? b->probs + off * b->classes : b->scratch;
    return cg_cpu_forward(b->s, b->w, b->pixels + (size_t)off * b->image_bytes, (int)n, NULL, probs,
                          b->pred + off, b->layer_ms, e);
}

/* Pipeline finish: the results are already in place. */
static int cpu_finish(void *ctx, int set, long long off, long long n, cg_err *e)
{
    (void)ctx, (void)set, (void)off, (void)n, (void)e;
    return 0;
}

int cg_cpu_run_batched(const cg_spec *s, const cg_weights *w, const unsigned char *pixels, long long n,
                       long long batch, int *pred, float *probs, double *layer_ms, cg_err *e)
{
    if (batch < 1) return cg_fail(e, "batch size %lld: must be at least 1", batch);
    if (batch > 0x7fffffffLL) batch = 0x7fffffffLL;
    long long b = n < batch ? n : batch;
    cg_cpu_batches c = {s, w, pixels, (size_t)s->C * (size_t)s->H * (size_t)s->W,
                        cg_layer_out_elems(&s->layers[s->nlayers - 1]), pred, probs, NULL, layer_ms};
    if (!probs && b > 0) {
        c.scratch = malloc((size_t)b * (size_t)c.classes * sizeof *c.scratch);
        if (!c.scratch) return cg_fail(e, "out of memory for a batch of %lld images", b);
    }
    cg_pipe_ops ops = {cpu_submit, cpu_finish, NULL};
    int rc = cg_pipe_run(n, batch, 1, &ops, &c, e);
    free(c.scratch);
    return rc;
}
