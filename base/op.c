/* op.c — the op table (see op.h): what each layer op is, in one place. */
#include "op.h"
#include "spec_yaml.h"

#include <stdio.h>
#include <string.h>

/* ---- conv ---- */

static const char *const conv_keys[] = {"name", "op",   "C",          "H",    "W",           "M",
                                        "K",    "padding", "stride",  "bias", "activation",
                                        "pool", "pool_stride", "strategy", "params", "pool_padding", "groups",
                                        "precision", NULL};

static int conv_shape(const cg_layer *l, int *oc, int *oh, int *ow, cg_err *e)
{
    int ch, cw, g = cg_layer_groups(l);
    if (l->C % g || l->M % g)
        return cg_fail(e, "layer '%s': groups=%d must divide C=%d and M=%d", l->name, g, l->C, l->M);
    if (l->M <= 0 || l->pool < 0 || (unsigned)l->pool_op > CG_POOL_GLOBAL_AVG || cg_conv_dims(l, &ch, &cw, oh, ow))
        return cg_fail(e, "layer '%s': bad conv parameters M=%d K=%d pad=%d,%d,%d,%d stride=%d "
                       "pool=%d/%d", l->name, l->M, l->K, l->pad[0], l->pad[1], l->pad[2],
                       l->pad[3], l->stride, l->pool, l->pool_stride);
    *oc = l->M;
    return 0;
}

/* [M, C/groups, K, K] (PyTorch's layout) */
static int conv_weights(const cg_layer *l, long long shape[4])
{
    shape[0] = l->M, shape[1] = l->C / cg_layer_groups(l), shape[2] = l->K, shape[3] = l->K;
    return 4;
}

static double conv_flop(const cg_layer *l, long long n)
{
    int ch = 0, cw = 0, oh, ow;
    if (!cg_conv_dims(l, &ch, &cw, &oh, &ow)) return 2.0 * l->M * ch * cw * (l->C / cg_layer_groups(l)) * l->K * l->K * (double)n;
    return 0;
}

/* An unfused conv kernel: the convolution plus bias only, at full size (the
 * activation and pool run as later kernels). */
static void conv_unfused(const cg_layer *l, cg_layer *out)
{
    int ch = 0, cw = 0, oh, ow;
    (void)cg_conv_dims(l, &ch, &cw, &oh, &ow); /* a bad layer: 0x0, refused later */
    out->act = CG_ACT_NONE;
    out->pool = 0, out->pool_stride = 0, out->pool_op = CG_POOL_MAX;
    out->OC = l->M, out->OH = ch, out->OW = cw;
}

/* ---- fc ---- */

static const char *const fc_keys[] = {"name", "op", "out", "bias", "activation", "strategy", "params",
                                      "precision", NULL};

static int fc_shape(const cg_layer *l, int *oc, int *oh, int *ow, cg_err *e)
{
    if (l->out <= 0) return cg_fail(e, "layer '%s': bad fc out=%d", l->name, l->out);
    *oc = l->out, *oh = 1, *ow = 1;
    return 0;
}

/* [out, C*H*W]: the input flattened */
static int fc_weights(const cg_layer *l, long long shape[4])
{
    shape[0] = l->out, shape[1] = (long long)l->C * l->H * l->W;
    return 2;
}

static double fc_flop(const cg_layer *l, long long n)
{
    return 2.0 * (double)cg_layer_in_elems(l) * l->out * (double)n;
}

/* ---- ops whose output is their input's shape (CG_SAME_SHAPE_OPS in spec.h) ---- */

static const char *const bare_keys[] = {"name", "op", NULL};

static int same_shape(const cg_layer *l, int *oc, int *oh, int *ow, cg_err *e)
{
    (void)e;
    *oc = l->C, *oh = l->H, *ow = l->W;
    return 0;
}

/* ---- batchnorm: per-channel scale and shift of maps, shape kept ---- */

static const char *const bn_keys[] = {"name", "op", "eps", "activation", NULL};

/* [C]: gamma (the bias, beta, running_mean and running_var have the same shape) */
static int bn_weights(const cg_layer *l, long long shape[4])
{
    shape[0] = l->C;
    return 1;
}

/* ---- add, concat: several inputs (cg_layer.inputs) ---- */

static const char *const add_keys[] = {"name", "op", "activation", NULL};

/* concat's output: C is the sum of its inputs' channels (the spec reader sets
 * it so), H and W are theirs. */
static int concat_shape(const cg_layer *l, int *oc, int *oh, int *ow, cg_err *e)
{
    long long sum = 0;
    for (int k = 0; k < l->ninputs; k++) sum += l->in_C[k];
    if (l->ninputs < 2 || sum != l->C)
        return cg_fail(e, "layer '%s': concat of %d inputs whose channels add up to %lld, not C = %d", l->name,
                       l->ninputs, sum, l->C);
    *oc = l->C, *oh = l->H, *ow = l->W;
    return 0;
}

/* ---- the table, in cg_op order ---- */

const cg_op_desc cg_ops[CG_OP_COUNT] = {
    [CG_OP_CONV] = {"conv", conv_keys, "conv2d_", 1, 1, 0, cg_spec_read_conv, conv_shape, conv_weights, conv_flop,
                    conv_unfused, 0},
    [CG_OP_FC] = {"fc", fc_keys, "fc_", 0, 0, 0, cg_spec_read_fc, fc_shape, fc_weights, fc_flop, NULL, 0},
#define SAME_SHAPE_OP(ID, NAME, LAST) \
    [CG_OP_##ID] = {#NAME, bare_keys, NULL, 0, 0, LAST, cg_spec_read_same, same_shape, NULL, NULL, NULL, 0},
    CG_SAME_SHAPE_OPS(SAME_SHAPE_OP)
#undef SAME_SHAPE_OP
    [CG_OP_BATCHNORM] = {"batchnorm", bn_keys, NULL, 1, 1, 0, cg_spec_read_bn, same_shape, bn_weights, NULL, NULL,
                         0},
    [CG_OP_ADD] = {"add", add_keys, NULL, 1, 0, 0, cg_spec_read_add, same_shape, NULL, NULL, NULL, CG_MAX_INPUTS},
    [CG_OP_CONCAT] = {"concat", bare_keys, NULL, 1, 0, 0, cg_spec_read_same, concat_shape, NULL, NULL, NULL,
                      CG_MAX_INPUTS},
};

const cg_op_desc *cg_op_of(cg_op op)
{
    return (unsigned)op < CG_OP_COUNT && cg_ops[op].name ? &cg_ops[op] : NULL;
}

void cg_op_names(const char *out[CG_OP_COUNT + 1])
{
    for (int i = 0; i < CG_OP_COUNT; i++) out[i] = cg_ops[i].name;
    out[CG_OP_COUNT] = NULL;
}

int cg_op_weights(const cg_layer *l, long long *rows, long long *fan_in)
{
    const cg_op_desc *d = cg_op_of(l->op);
    long long shape[4];
    int nd = d && d->weight_shape ? d->weight_shape(l, shape) : 0;
    *rows = *fan_in = 0;
    if (nd <= 0) return 0;
    *rows = shape[0], *fan_in = 1;
    for (int k = 1; k < nd; k++) *fan_in *= shape[k];
    return 1;
}

int cg_op_template(const cg_layer *l, const char *strategy, char *out, size_t n)
{
    const cg_op_desc *d = cg_op_of(l->op);
    if (n) out[0] = 0;
    if (!d || !d->family) return -1;
    int k = snprintf(out, n, "%s%s", d->family, strategy);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

const char *cg_op_strategy(const cg_layer *l, const char *tpl)
{
    const cg_op_desc *d = cg_op_of(l->op);
    size_t f = d && d->family ? strlen(d->family) : 0;
    return f && !strncmp(tpl, d->family, f) ? tpl + f : tpl;
}
