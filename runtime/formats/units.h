/* units.h — what `convgen check` runs alone: a network's layers grouped into
 * units, each a set of kernels that can be fed the CPU reference's tensors and
 * whose outputs can be compared with the reference computed from the same
 * inputs (docs/design.md, "Tolerance").
 *
 * A unit is one per-layer kernel of the manifest, joined with the kernels it
 * exchanges a tensor with that no spec layer holds (a split reduction's
 * partials, a conv's output before the pool kernel after it) and with those
 * writing its tensor too (a first layer's twins, feed=: a unit fed floats runs
 * the one reading the float input), so that every
 * tensor a unit reads from outside is one the reference has: the network's
 * pixels, its float input (what the input kernel writes) or a layer's output.
 * A unit computes the spec layers whose tensors its kernels write, and those
 * computed inside its kernels: a batch norm folded into its conv (the conv's
 * tensor is both layers'), an add fused into a conv's epilogue (the conv has
 * no tensor: into=), a tail kernel's softmax. The input kernel, the argmax and
 * the whole-network kernel belong to none. On the CPU backend, which has no
 * kernels, every layer is a unit of its own. */
#ifndef CG_UNITS_H
#define CG_UNITS_H
#include "manifest.h"

typedef struct {
    int nunits;
    int unit[CG_MAX_LAYERS];           /* each spec layer's unit, 0..nunits) */
    int kept[CG_MAX_LAYERS];           /* 1: the layer's output is a tensor its unit writes (compared);
                                        * 0: it lives inside a kernel only (a conv whose add is fused) */
    int holder[CG_MAX_LAYERS];         /* the layer whose reference output stands for layer i's tensor
                                        * (a conv and the batch norm folded into it share one: the later) */
    cg_dtype dtype[CG_MAX_LAYERS + 1]; /* how the tensor of layer i is stored, at [i + 1]; [0]: the
                                        * network's float input (f32 where no kernel stores it) */
    int kernels[CG_MAX_LAYERS];        /* per unit: the kernels it launches (0 on the CPU) */
    int kernel_unit[CG_MAN_KERNELS];   /* per manifest kernel: its unit, -1 for none */
} cg_units;

/* The units of s's kernels as manifest m lays them out. -1 with e naming the
 * kernel or layer when a unit would read a tensor the reference does not hold. */
int cg_units_plan(const cg_spec *s, const cg_manifest *m, cg_units *p, cg_err *e);
/* Every layer a unit of its own, every tensor f32 (the CPU backend). */
void cg_units_per_layer(const cg_spec *s, cg_units *p);
/* The layers unit u reads from outside it, as ext slots (layer i's at i + 1,
 * the network input's at 0; each a holder's): need[slot] set to 1, the rest
 * left as they are. */
void cg_units_inputs(const cg_spec *s, const cg_units *p, int u, unsigned char need[CG_MAX_LAYERS + 1]);
/* n values as a tensor of dtype dt stores them: rounded to nearest even and
 * widened back for f16 and bf16, copied for the others (in == out allowed). */
void cg_units_round(cg_dtype dt, const float *in, float *out, size_t n);

#endif
