/* spec.h — a network spec read from YAML and validated: the contract between the
 * spec reader, the generator, and the runtime. Every field here has been checked;
 * nothing downstream re-validates shapes. */
#ifndef CG_SPEC_H
#define CG_SPEC_H
#include "util.h"

#define CG_NAME_MAX 64
#define CG_PATH_MAX 1024
#define CG_MAX_LAYERS 64
#define CG_MAX_INPUTS 4             /* tensors one kernel reads (the manifest's in= list) */
#define CG_MAX_OUTPUTS 3            /* tensors one kernel writes (the manifest's out= list) */
#define CG_MAX_PARAMS 16
#define CG_DIM_MAX 65536            /* any single dimension */
#define CG_ELEMS_MAX (1LL << 28)    /* elements of one tensor, per image */

typedef struct {
    int line, col; /* 1-based, as printed in FILE:LINE:COL */
} cg_pos;

/* The ops whose output has their input's shape, with no spec keys but `name`
 * and `op` and no weights, one X(ID, NAME, LAST) each: its enum value CG_OP_ID,
 * the name a spec writes, 1 when it must be the network's last layer. The op
 * enum, the op table's descriptors (base/op.c) and the CPU reference table
 * (runtime/cpu/cpu.c: the function NAME_layer) are made from this list, so such
 * an op is one line here (docs/design-ops.md, "A new elementwise op"). */
#define CG_SAME_SHAPE_OPS(X) X(SOFTMAX, softmax, 1)

/* A layer's op; base/op.h describes each (its table is in this order). */
#define CG_OP_ENUM_ENTRY(ID, NAME, LAST) CG_OP_##ID,
/* add (the elementwise sum of 2 to CG_MAX_INPUTS tensors of one shape) and
 * concat (2 to CG_MAX_INPUTS tensors of one H x W joined along channels) read
 * several layers' outputs (cg_layer.inputs). */
typedef enum { CG_OP_CONV, CG_OP_FC, CG_SAME_SHAPE_OPS(CG_OP_ENUM_ENTRY) CG_OP_BATCHNORM, CG_OP_ADD, CG_OP_CONCAT, CG_OP_COUNT } cg_op;
/* Activations, in the order the spec reader lists their names (base/spec_layers.c). */
typedef enum { CG_ACT_NONE, CG_ACT_TANH, CG_ACT_RELU, CG_ACT_RELU6, CG_ACT_SIGMOID } cg_act;
/* How a conv's or fc's products are computed (`precision:`, docs/spec.md): fp32
 * (the default), tf32 (FP32 tensors, each product one TF32 product on tensor
 * cores where the template has them, FP32 accumulation), bf16 and fp16 (the
 * tensors between layers, weights and biases in that 16-bit format, products on
 * tensor cores where the template has them, FP32 accumulation and epilogue, one
 * rounding per stored value). */
typedef enum { CG_PREC_FP32, CG_PREC_TF32, CG_PREC_BF16, CG_PREC_FP16 } cg_precision;
/* What a conv's pool computes over each window (after the activation). */
typedef enum { CG_POOL_MAX, CG_POOL_AVG, CG_POOL_GLOBAL_AVG } cg_pool_op;

/* One tunable parameter as written in the spec (validated later against the
 * template's declared ranges, which is why it keeps its position). */
typedef struct {
    char key[CG_NAME_MAX];
    long long value;
    cg_pos pos, key_pos;
} cg_param;

typedef struct {
    char name[CG_NAME_MAX];
    cg_op op;
    cg_pos pos; /* position of the layer's mapping */
    /* Input shape of this layer (conv: C,H,W as written or derived; fc/softmax:
     * the previous layer's output, flattened as C*H*W). */
    int C, H, W;
    /* conv */
    int M, K;
    int pad[4]; /* zeros around the input: top, left, bottom, right */
    int stride; /* >= 1; 0 (a hand-built layer) counts as 1 */
    /* pool: window side (0: none; 2 with pool_op max and pool_stride 0 or 2 is
     * the 2x2 max of max2). Global average: pool_op CG_POOL_GLOBAL_AVG, pool 1,
     * the window is the whole conv output. */
    int pool;
    int pool_stride; /* 0 (a hand-built layer) counts as pool */
    cg_pool_op pool_op;
    /* fc */
    int out;
    /* conv and fc */
    int bias;
    cg_act act;
    /* conv: kernel strategy (template conv2d_<strategy>) and its parameters */
    char strategy[CG_NAME_MAX];
    cg_pos strategy_pos;
    cg_param params[CG_MAX_PARAMS];
    int nparams;
    cg_pos params_pos;
    /* Output shape (conv: after the optional pool; fc: OC=out, OH=OW=1;
     * softmax: same as input). */
    int OC, OH, OW;
    /* conv: channel groups G (0, a hand-built layer, counts as 1): map m reads
     * channels [g*C/G, (g+1)*C/G) of its group g = m / (M/G); C and M are
     * multiples of G; depthwise when G = C = M. Weights [M, C/G, K, K]. */
    int groups;
    /* batchnorm: y = (x - running_mean) / sqrt(running_var + eps) * weight + bias,
     * per channel, then act. */
    double eps;
    /* conv: zeros (max: ignored positions) around the conv output on every side
     * before a maxN / avgN pool (`pool_padding`), 0..pool/2. */
    int pool_pad;
    /* batchnorm, in a layer as it runs (cg_spec_run_layer): 1 when it was folded
     * into the conv before it, whose output it passes on unchanged. */
    int bn_folded;
    /* The tensors the layer reads, in order: the index of an earlier layer, or
     * -1 for the network input. ninputs 0 (a hand-built layer) means the layer
     * before (the input for the first): cg_layer_inputs resolves it. in_C: each
     * input's channels (concat's slices; C is their sum), as the spec reader
     * found them. */
    int ninputs;
    int inputs[CG_MAX_INPUTS];
    int in_C[CG_MAX_INPUTS];
    /* conv and fc: the precision of the products (`precision:`, else the
     * network's); other ops carry the network's. precision_pos: the value's
     * position, or the layer's where it is inherited. */
    cg_precision precision;
    cg_pos precision_pos;
    /* the network's `precision_fallback:`, the precision generated instead of bf16
     * for a target without BF16 (below sm_80), as 1 + its cg_precision; 0: none (such
     * a target refuses the layer; a zeroed, hand-built layer has none) */
    int precision_fallback;
} cg_layer;

/* A conv layer's channel groups, at least 1. */
int cg_layer_groups(const cg_layer *l);

/* Channels an input's per-channel mean and std may have (`input.mean`, `input.std`). */
#define CG_INPUT_NORM_MAX 64

/* A tuning record's decision between the whole-network kernel and the per-layer
 * kernels for one batch bucket (docs/tuning.md, "The whole-network kernel"): which
 * path was faster when both were checked and timed, for the kernels whose build id
 * (the manifest's hash) is `kernels`. cg_tune_apply copies a record's into the spec
 * (the generator never reads them); the CUDA backend takes the one of its bucket
 * when its own kernels have that build id, instead of timing both at first use. */
#define CG_WHOLE_TUNED_MAX 8
typedef struct {
    int bucket;                 /* 1, 8, 64, 256 or 1024 */
    int whole;                  /* 1: the whole-network kernel; 0: the per-layer kernels */
    char kernels[17];           /* the build id of the kernels it was measured on */
    double whole_ms, layers_ms; /* one batch each way as tuned (median) */
} cg_whole_tuned;

/* A tuning record's choice for one layer at one small batch bucket (docs/tuning.md,
 * "Batch buckets"): cg_tune_apply keeps those that still hold (the generator never
 * reads a record); the generator hands the one of the bucket it generates for to the
 * planner as the layer table's `tuned`, which takes it in place of its small-batch
 * rules. The large batch's choices are the layer's own strategy and params, as a
 * record has always set them. */
#define CG_BUCKET_TUNED_MAX (CG_MAX_LAYERS * 5) /* every layer at each of the five buckets */
#define CG_TUNED_PARAMS_MAX 512                 /* a record's params text (generator/gen.h CG_PARAMS_TEXT) */
typedef struct {
    int layer;                        /* index into cg_spec.layers */
    int bucket;                       /* 1, 8, 64, 256 or 1024 */
    char tpl[CG_NAME_MAX];            /* the template, "conv2d_igemm" */
    char params[CG_TUNED_PARAMS_MAX]; /* its parameters as the record writes them, "k=v k=v" */
} cg_bucket_tuned;

typedef struct {
    char path[CG_PATH_MAX]; /* as given on the command line */
    char name[CG_NAME_MAX];
    char description[256];
    /* input tensor: channels, height, width; x = pixel * scale + offset */
    int C, H, W;
    double scale, offset;
    char dataset[CG_NAME_MAX]; /* "fashion-mnist" */
    int resize;                /* 0: native 28x28, else side length S */
    /* weights file, resolved relative to the spec's directory; "" = seeded random */
    char weights[CG_PATH_MAX];
    cg_pos weights_pos;
    unsigned long long seed;
    int nlayers;
    cg_layer layers[CG_MAX_LAYERS];
    /* input mean and std per channel (norm = 1 when either is written): x =
     * (pixel * scale - mean[c]) / std[c]; offset is then 0 (the reader refuses
     * both). Without them mean 0 and std 1. */
    int norm;
    double mean[CG_INPUT_NORM_MAX], std[CG_INPUT_NORM_MAX];
    /* the network's `precision:` (default fp32), every layer's unless it writes its own */
    cg_precision precision;
    /* `precision_fallback:` (fp32 or fp16; a bf16 network only): what a target below
     * sm_80 runs instead of bf16, as 1 + its cg_precision; 0: none, such a target
     * refuses the network */
    int precision_fallback;
    /* the whole-network decisions of the tuning record applied (none from the spec
     * file), and that record's path for the notices about them */
    int nwhole_tuned;
    cg_whole_tuned whole_tuned[CG_WHOLE_TUNED_MAX];
    char whole_tuned_from[CG_PATH_MAX];
    /* the tuning record's per-layer choices for small batch buckets (none from the spec file) */
    int nbucket_tuned;
    cg_bucket_tuned bucket_tuned[CG_BUCKET_TUNED_MAX];
} cg_spec;

/* Read and validate a spec. On error: returns non-zero, e->msg is one line
 * "FILE:LINE:COL: message" and *out is unspecified. */
int cg_spec_load(const char *path, cg_spec *out, cg_err *e);
/* Same, from a buffer (path is used only in messages and to resolve weights). */
int cg_spec_parse(const char *path, const char *text, size_t len, cg_spec *out, cg_err *e);

const char *cg_act_name(cg_act a);
/* "fp32", "tf32", "bf16" or "fp16". */
const char *cg_precision_name(cg_precision p);
/* The element type of the tensors a precision stores, as the manifest names it:
 * "f32" (fp32, tf32), "bf16" or "f16". */
const char *cg_precision_dtype(cg_precision p);

/* The lowest compute capability that runs bf16 (BF16 conversions and tensor cores). */
#define CG_BF16_MIN_CC 80

/* The precision layer l is generated in for a target of compute capability cc:
 * its own, or its network's precision_fallback where the target cannot run bf16. */
cg_precision cg_layer_precision_on(const cg_layer *l, int cc);

/* The same for the network as a whole (s->precision). */
cg_precision cg_spec_precision_on(const cg_spec *s, int cc);

/* "none", "max", "avg" or "global_avg". */
const char *cg_pool_name(const cg_layer *l);
/* A conv layer's output before its pool (*ch x *cw) and after (*oh x *ow), from
 * H, W, K, pad, stride and the pool: -1 when any of them is not positive (the
 * spec reader refuses such layers; hand-built ones are checked with this too). */
int cg_conv_dims(const cg_layer *l, int *ch, int *cw, int *oh, int *ow);
/* What sets a conv apart from a valid, stride-1 conv with no pool or max2, for
 * signatures (tuning records): "" for those, else e.g. " pad=1,1,1,1 stride=2 pool=avg3/2". */
void cg_conv_tag(const cg_layer *l, char *out, size_t n);
const char *cg_op_name(cg_op o);
/* 1 when layer i of s is a batchnorm that reads the conv just before it, and
 * nothing else reads that conv: the runtime folds it into the conv's weights
 * and bias (docs/design.md, "Batch norm folding"). */
int cg_bn_folds(const cg_spec *s, int i);
/* Layer i as it runs where batch norms are folded (folded != 0): a conv a
 * batchnorm folds into gains a bias and the batchnorm's activation, and the
 * batchnorm is marked bn_folded (it passes its input on); otherwise, or with
 * folded 0, the layer as written. */
void cg_spec_run_layer(const cg_spec *s, int i, int folded, cg_layer *out);
/* Elements of a layer's output per image. */
long long cg_layer_out_elems(const cg_layer *l);
long long cg_layer_in_elems(const cg_layer *l);
/* The tensors layer i of s reads (out: indices of earlier layers, -1 the
 * network input); returns how many (1 to CG_MAX_INPUTS). ninputs 0 counts as
 * one input, the layer before. */
int cg_layer_inputs(const cg_spec *s, int i, int out[CG_MAX_INPUTS]);
/* The tuning record's choice for layer i at bucket (1, 8, 64, 256 or 1024) that
 * cg_tune_apply kept in s, NULL if none (always NULL for bucket 0, the large batch,
 * whose choices are the layer's strategy and params). */
const cg_bucket_tuned *cg_spec_bucket_tuned(const cg_spec *s, int i, int bucket);

#endif
