/* cpu.h — the CPU backend: a plain C reference of every layer, the correctness
 * oracle. Products are accumulated in double; tensors are stored as float. */
#ifndef CG_CPU_H
#define CG_CPU_H
#include "spec.h"
#include "units.h"
#include "weights.h"

/* x[i] = pixel[i] * scale + offset, for n images of C*H*W pixels; with the
 * spec's mean and std (s->norm) x[i] = (pixel[i] * scale - mean[c]) / std[c]. */
void cg_cpu_input(const cg_spec *s, const unsigned char *pixels, int n, float *x);
/* One layer over n images: in has n*cg_layer_in_elems, out n*cg_layer_out_elems. */
int cg_cpu_layer(const cg_layer *l, const cg_weights *w, const float *in, float *out, int n,
                 cg_err *e);
/* One layer reading nin tensors (in: each n images of its input's shape, in
 * the layer's `inputs` order; nin is 1 for an op of one input, ninputs for add
 * and concat). */
int cg_cpu_layer_inputs(const cg_layer *l, const cg_weights *w, const float *const *in, int nin, float *out, int n,
                        cg_err *e);
/* The whole network from float images x (n * C*H*W): the layers as a graph,
 * each reading its inputs' outputs; layer_out as for cg_cpu_forward, last_out
 * n times the last layer's output (written unless layer_out keeps it). */
int cg_cpu_forward_f32(const cg_spec *s, const cg_weights *w, const float *x, int n, float **layer_out,
                       float *last_out, double *layer_ms, cg_err *e);
/* The whole network, its batch norms as w holds them: folded into the conv
 * before them where w->bn_folded (cg_weights_fold_bn; cg_spec_run_layer's
 * layers), else each run from its four tensors. layer_out may be NULL, or an array of s->nlayers pointers
 * (each NULL or a buffer of n*cg_layer_out_elems floats) to keep per-layer
 * outputs. probs: n*classes (the last layer's output); pred: n argmax indices
 * (first maximum wins). layer_ms, if not NULL, gains each layer's wall time
 * (s->nlayers entries, added to). */
int cg_cpu_forward(const cg_spec *s, const cg_weights *w, const unsigned char *pixels, int n,
                   float **layer_out, float *probs, int *pred, double *layer_ms, cg_err *e);

/* The layers of unit u of plan p alone (`convgen check`, units.h), over n
 * images: each reads its unit's outputs computed here, or from outside the
 * unit ext[slot] (layer i's holder's output at holder + 1, the network's float
 * input at 0: n images each, as the caller rounded them); every layer of the
 * unit written to out[i] (n * cg_layer_out_elems). Batch norms as w holds
 * them, as cg_cpu_forward runs them. */
int cg_cpu_unit(const cg_spec *s, const cg_weights *w, const cg_units *p, int u, int n, const float *const *ext,
                float **out, cg_err *e);

#endif
