/* backend_cpu.c — the CPU reference (runtime/cpu/cpu.c) behind the backend
 * interface (backend.h). Uint8 pixels go through cg_cpu_forward; float input
 * through cg_cpu_forward_f32, the same graph of layers from the caller's floats. */
#include "backend.h"
#include "cpu.h"

#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const cg_spec *s;
    const cg_weights *w;
} cpu_state;

/* Nothing to prepare: the reference reads the spec and weights as they are. */
static int cpu_open(void **state, const cg_spec *s, const cg_weights *w, const cg_backend_opts *o, cg_err *e)
{
    (void)o;
    cpu_state *c = calloc(1, sizeof *c);
    if (!c) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    c->s = s, c->w = w;
    *state = c;
    return 0;
}

/* Index of each row's first maximum: the prediction, as cg_cpu_forward makes it. */
static void argmax_rows(const float *scores, long long n, long long classes, int *pred)
{
    for (long long i = 0; i < n; i++) {
        const float *row = scores + i * classes;
        long long best = 0;
        for (long long c = 1; c < classes; c++)
            if (row[c] > row[best]) best = c;
        pred[i] = (int)best;
    }
}

/* Float input: the layers as cg_cpu_forward runs them, from the caller's floats. */
static int forward_f32(const cg_spec *s, const cg_weights *w, cg_backend_run *r, float *scores, cg_err *e)
{
    const long long classes = cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    int rc = cg_cpu_forward_f32(s, w, (const float *)r->input, (int)r->n, r->layer_out, scores, r->layer_ms, e);
    float *last = r->layer_out ? r->layer_out[s->nlayers - 1] : NULL;
    if (!rc && last && last != scores) memcpy(scores, last, (size_t)(r->n * classes) * sizeof *scores);
    if (!rc) argmax_rows(scores, r->n, classes, r->pred);
    return rc;
}

/* One run on the host; the scores go to a scratch buffer when the caller wants none. */
static int cpu_run(void *state, cg_backend_run *r, cg_err *e)
{
    cpu_state *c = state;
    const cg_spec *s = c->s;
    if (r->on_device)
        return cg_fail(e, "%s: device pointers need the cuda backend; the CPU backend reads host memory",
                       s->path), CG_STATUS_USAGE;
    if (r->n > INT_MAX)
        return cg_fail(e, "%s: %lld images: the CPU backend runs at most %d at once", s->path, r->n, INT_MAX),
               CG_STATUS_USAGE;
    long long classes = cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    float *scores = r->scores;
    if (!scores && !(scores = malloc((size_t)((r->n ? r->n : 1) * classes) * sizeof *scores)))
        return cg_fail(e, "out of memory for %lld images' scores", r->n), CG_STATUS_IO;
    memset(r->layer_ms, 0, sizeof r->layer_ms);
    double t0 = omp_get_wtime();
    int rc = r->type == CG_INPUT_F32
                 ? forward_f32(s, c->w, r, scores, e)
                 : cg_cpu_forward(s, c->w, r->input, (int)r->n, r->layer_out, scores, r->pred, r->layer_ms, e);
    r->total_ms = (omp_get_wtime() - t0) * 1e3;
    if (scores != r->scores) free(scores);
    return rc ? CG_STATUS_IO : 0;
}

static const char *cpu_device_name(const void *state)
{
    (void)state;
    return "cpu";
}

static int cpu_takes_f32(const void *state)
{
    (void)state;
    return 1;
}

/* No kernels: every layer is a unit of its own. */
static int cpu_units(const void *state, cg_units *p, cg_err *e)
{
    (void)e;
    cg_units_per_layer(((const cpu_state *)state)->s, p);
    return 0;
}

/* A unit's layers by the reference, from the floats given (the network input
 * as floats too: the pixels are not read). */
static int cpu_run_unit(void *state, const cg_units *p, int u, long long n, const unsigned char *pixels,
                        const float *const *ext, float **out, cg_err *e)
{
    const cpu_state *c = state;
    (void)pixels;
    if (n > INT_MAX)
        return cg_fail(e, "%s: %lld images: the CPU backend runs at most %d at once", c->s->path, n, INT_MAX),
               CG_STATUS_USAGE;
    return cg_cpu_unit(c->s, c->w, p, u, (int)n, ext, out, e) ? CG_STATUS_IO : 0;
}

static void cpu_close(void *state) { free(state); }

const cg_backend cg_backend_cpu = {"cpu",     cpu_open,     cpu_run, cpu_device_name, cpu_takes_f32,
                                   cpu_units, cpu_run_unit, cpu_close};
