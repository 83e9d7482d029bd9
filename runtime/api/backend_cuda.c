/* backend_cuda.c — the CUDA backend (runtime/cuda/gpu.c) behind the backend
 * interface (backend.h). gpu.c already makes its device context current around
 * each call; this file only translates arguments and keeps the figures of the
 * last open and run for the command's --profile. */
#include "backend.h"

#include <stdlib.h>

typedef struct {
    cg_gpu *g;
    cg_gpu_times t;
    cg_host_costs hc; /* the open's costs; uploads and downloads add up over runs */
} cuda_state;

/* Open device o->device, build or load the kernels, upload the weights. */
static int cuda_open(void **state, const cg_spec *s, const cg_weights *w, const cg_backend_opts *o, cg_err *e)
{
    cuda_state *c = calloc(1, sizeof *c);
    if (!c) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    *state = c;
    cg_gpu_opts go = {o->fatbin,   o->no_cache, o->batch,        o->poison,      o->profile,  o->device,
                      o->log,      o->streams,  o->manifest,     o->manifest_len, o->fatbin_data, o->fatbin_len,
                      o->no_graphs, o->no_pdl, o->keep_tensors, o->whole, o->pdl_always};
    return cg_gpu_open(&c->g, s, w, &go, &c->hc, e) ? CG_STATUS_DEVICE : 0;
}

/* One run, from host or device memory; host runs report the kernels' times. */
static int cuda_run(void *state, cg_backend_run *r, cg_err *e)
{
    cuda_state *c = state;
    cg_gpu_input in = {r->input, r->type == CG_INPUT_F32, r->on_device, r->stream};
    if (cg_gpu_layers_kept(c->g, r->layer_out, e)) return CG_STATUS_USAGE;
    if (cg_gpu_run_input(c->g, &in, r->n, r->pred, r->scores, r->layer_out, &c->t, &c->hc, e))
        return CG_STATUS_DEVICE;
    for (int l = 0; l < CG_MAX_LAYERS; l++) r->layer_ms[l] = c->t.layer_ms[l];
    r->total_ms = c->t.total_ms;
    return 0;
}

static const char *cuda_device_name(const void *state)
{
    const cuda_state *c = state;
    return c->g ? cg_gpu_device_name(c->g) : "?";
}

static int cuda_takes_f32(const void *state) { return cg_gpu_takes_f32(((const cuda_state *)state)->g); }

/* check's units: the manifest's kernels grouped (cg_units_plan). */
static int cuda_units(const void *state, cg_units *p, cg_err *e)
{
    return cg_gpu_units(((const cuda_state *)state)->g, p, e) ? CG_STATUS_IO : 0;
}

/* One unit's kernels alone on the reference's tensors (cg_gpu_run_unit). */
static int cuda_run_unit(void *state, const cg_units *p, int u, long long n, const unsigned char *pixels,
                         const float *const *ext, float **out, cg_err *e)
{
    return cg_gpu_run_unit(((cuda_state *)state)->g, p, u, n, pixels, ext, out, e) ? CG_STATUS_DEVICE : 0;
}

static void cuda_close(void *state)
{
    cuda_state *c = state;
    if (!c) return;
    cg_gpu_close(c->g);
    free(c);
}

const cg_gpu_times *cg_backend_cuda_times(const void *state) { return &((const cuda_state *)state)->t; }
const cg_host_costs *cg_backend_cuda_costs(const void *state) { return &((const cuda_state *)state)->hc; }
const char *cg_backend_cuda_into(const void *state, int l) { return cg_gpu_layer_into(((const cuda_state *)state)->g, l); }
int cg_backend_cuda_has_whole(const void *state) { return cg_gpu_has_whole(((const cuda_state *)state)->g); }
void cg_backend_cuda_set_whole(void *state, int mode) { cg_gpu_set_whole(((cuda_state *)state)->g, mode); }
const char *cg_backend_cuda_build_id(const void *state) { return cg_gpu_build_id(((const cuda_state *)state)->g); }
const char *cg_backend_cuda_whole_notice(const void *state)
{
    return cg_gpu_whole_notice(((const cuda_state *)state)->g);
}

const cg_backend cg_backend_cuda = {"cuda",     cuda_open,     cuda_run, cuda_device_name, cuda_takes_f32,
                                    cuda_units, cuda_run_unit, cuda_close};
