/* isolate.h — `convgen check`'s isolated pass (docs/design.md, "Tolerance").
 *
 * Every unit of the network under test (runtime/formats/units.h: a kernel, or
 * kernels that exchange a tensor no layer holds) runs alone, fed the CPU
 * reference's tensors for its inputs rounded as the GPU stores them (bf16 or
 * f16; f32 as they are), and its layers are compared with the reference
 * computed from those same rounded inputs, each against its own tolerance
 * (cg_unit_tols: cg_layer_tol, summed only inside a unit), so that no error of
 * the layers before it counts in its favour. Only layers that ask for it are
 * run: those whose bound summed along the graph (cg_spec_tols) exceeds
 * CG_HARNESS_TOL — every layer not fp32 and every layer after one; a network of
 * fp32 layers runs nothing here. This file computes; cmd_run.c prints. */
#ifndef CG_ISOLATE_H
#define CG_ISOLATE_H
#include "convgen.h"
#include "harness.h"
#include "spec.h"

typedef struct {
    int alone[CG_MAX_LAYERS];   /* 1: run alone and compared (d, tol below) */
    int kernels[CG_MAX_LAYERS]; /* its unit's kernels (0: the CPU backend's unit, a layer) */
    int layers[CG_MAX_LAYERS];  /* its unit's layers */
    cg_harness_diff d[CG_MAX_LAYERS];
    double tol[CG_MAX_LAYERS];
} cg_alone;

/* want[i] = 1 where layer i is to be checked alone: its bound summed along
 * the graph is above CG_HARNESS_TOL. Returns how many. */
int cg_alone_wanted(const cg_spec *s, int want[CG_MAX_LAYERS]);
/* The units of dut holding a wanted layer, each run alone on dut and on ref
 * (the CPU reference network of the same spec and weights) over n images
 * (pixels: n * C*H*W bytes; act: ref's output of every layer for them), every
 * layer of those units compared into r (cleared first). A unit that reads no
 * rounded tensor takes act as its reference (the CPU's run from the same
 * floats would give the same values). 0 or an exit status, e naming the unit. */
int cg_check_alone(cg_net *dut, cg_net *ref, const cg_spec *s, const unsigned char *pixels, long long n,
                   float *const *act, const int want[CG_MAX_LAYERS], cg_alone *r, cg_err *e);
/* r gains o's comparisons (another GPU's shard of the images): each layer's
 * worst. */
void cg_alone_merge(cg_alone *r, const cg_alone *o, int nlayers);

#endif
