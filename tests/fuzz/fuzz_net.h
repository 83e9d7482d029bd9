/* fuzz_net.h — for the harnesses that run a parsed spec through the CPU
 * backend (fuzz_cpu, fuzz_bundle_sections): a bound on the work, so that each
 * input runs in milliseconds under the sanitizers, and the check of what a
 * forward pass returns. */
#ifndef CG_FUZZ_NET_H
#define CG_FUZZ_NET_H
#include "fuzz.h"
#include "spec.h"

/* Per image: multiply-adds and pool reads, weight elements, and the widest
 * tensor (elements). */
#define FUZZ_NET_MAX_WORK 2e6
#define FUZZ_NET_MAX_PARAMS 2e5
#define FUZZ_NET_MAX_ELEMS 1e5

/* Whether s's forward pass over one image stays within the bounds above
 * (the weights, made up or read, are counted too). */
static inline int fuzz_net_small(const cg_spec *s)
{
    double work = 0, params = 0, widest = (double)s->C * s->H * s->W;
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        double in = (double)cg_layer_in_elems(l), out = (double)cg_layer_out_elems(l);
        if (l->op == CG_OP_CONV) {
            int ch, cw, oh, ow;
            if (cg_conv_dims(l, &ch, &cw, &oh, &ow)) return 1; /* the backend refuses it */
            double plane = (double)ch * cw;
            work += (double)l->M * plane * ((double)l->C * l->K * l->K + 1);
            work += (double)l->M * oh * ow * (double)l->pool * l->pool;
            params += (double)l->M * l->C * l->K * l->K + l->M;
            if (plane > widest) widest = plane;
        } else if (l->op == CG_OP_FC) {
            work += in * l->out + in * 32; /* the dot products and the transposed block */
            params += in * l->out + l->out;
        } else {
            work += 3 * in;
        }
        if (in > widest) widest = in;
        if (out > widest) widest = out;
    }
    return work <= FUZZ_NET_MAX_WORK && params <= FUZZ_NET_MAX_PARAMS && widest <= FUZZ_NET_MAX_ELEMS;
}

/* Aborts unless each of the n predictions is a class of s (0..classes-1). */
static inline void fuzz_check_pred(const cg_spec *s, const int *pred, int n, const char *what)
{
    long long classes = cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    for (int i = 0; i < n; i++)
        if (pred[i] < 0 || pred[i] >= classes) {
            fprintf(stderr, "%s: image %d predicted %d, the network has %lld classes\n", what, i, pred[i],
                    classes);
            abort();
        }
}
#endif
