/* onnx.c — an ONNX model as a convgen spec and weights (onnx.h).
 *
 * The file is parsed by protobuf-c (onnx_subset.proto: the messages and fields
 * read here). Nodes are visited in the graph's order (ONNX requires a
 * topological order) and each ONNX tensor name is bound to what it is in
 * convgen's terms: the network input, a constant (an initializer or a Constant
 * node), or the output of one of the layers built so far, as maps (C x H x W) or
 * as a vector (a flattened view or an fc's output). Conv, BatchNormalization,
 * Gemm, MatMul, Add (of two tensors), Concat and Softmax make layers; an
 * activation, a pool or a bias after a MatMul is fused into the layer it reads
 * when that layer's output has no other reader (every reader of every name bound
 * to a layer is counted: `refs` outstanding, `done` already served); Flatten,
 * Reshape to two dimensions, Identity and Dropout only rebind names. Anything
 * else is refused, naming the node, its op and the reason. */
#include "onnx.h"
#include "weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "onnx_subset.pb-c.h"

#define MODEL_MAX ((size_t)1 << 30) /* bytes of a model file */
#define NODES_MAX 4096              /* nodes, initializers, inputs of a graph (convgen runs 64 layers) */
#define NAME_KEEP 48                /* a layer name's length; its tensors add up to 13 (".running_mean") */
#define ONNX_FLOAT 1
#define ONNX_INT64 7

typedef enum { V_INPUT, V_CONST, V_LAYER } vkind;

/* What one ONNX tensor name is. */
typedef struct {
    const char *name;
    vkind kind;
    int layer;                /* V_LAYER: the layer whose output it is */
    int rank;                 /* 4: maps C x H x W; 2: a vector of C (H = W = 1) */
    int C, H, W;
    /* > 0: a global average pool of the layer's (or input's) C x gap_hw maps that
     * no conv could take: C numbers, computed only by the fc that reads them */
    int gap_hw;
    const Onnx__TensorProto *t; /* V_CONST */
} value;

typedef enum { P_NONE, P_MAX, P_AVG, P_GAP } pool_kind;

/* A layer being built. */
typedef struct {
    char name[CG_NAME_MAX];
    cg_op op;
    int nin, in[CG_MAX_INPUTS]; /* layer indices; -1 the network input */
    int C, H, W;                /* input shape (conv); fc: in = C */
    int M, K, groups, pad[4], stride, bias;
    pool_kind pool;
    int pool_k, pool_s, pool_p;
    cg_act act;
    int out;
    double eps;
    float *w, *b;                   /* conv, fc: weight and bias (NULL: none) */
    float *bn[4];                   /* batchnorm: weight, bias, running_mean, running_var */
    int refs, done;                 /* readers outstanding, readers served */
    int dead, alias;                /* folded away: its output is layer alias's */
    const char *node_name, *op_type; /* the node that made it, for messages */
} layer;

typedef struct {
    const char *path;
    cg_err *e;
    const Onnx__GraphProto *g;
    long long opset;
    value *v;
    int nv, cap_v;
    layer *l;
    int nl, cap_l;
    int oom;
} ctx;

static const char *S(const char *s) { return s ? s : ""; }

/* "node 'NAME' (Op): " context for messages */
static int node_fail(ctx *c, const Onnx__NodeProto *n, int idx, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int node_fail(ctx *c, const Onnx__NodeProto *n, int idx, const char *fmt, ...)
{
    char why[CG_ERR_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (n->name && n->name[0])
        cg_fail(c->e, "%s: node '%.200s' (%.64s): %s", c->path, n->name, S(n->op_type), why);
    else cg_fail(c->e, "%s: node %d (%.64s): %s", c->path, idx, S(n->op_type), why);
    return -1;
}

static int oom(ctx *c)
{
    c->oom = 1;
    cg_fail(c->e, "%s: out of memory", c->path);
    return -1;
}

/* ---- names ---------------------------------------------------------------- */

/* How many nodes read tensor name (input slots), plus 1 when it is a graph output. */
static int readers(const ctx *c, const char *name)
{
    int k = 0;
    for (size_t i = 0; i < c->g->n_node; i++)
        for (size_t j = 0; j < c->g->node[i]->n_input; j++)
            if (!strcmp(S(c->g->node[i]->input[j]), name)) k++;
    for (size_t i = 0; i < c->g->n_output; i++)
        if (!strcmp(S(c->g->output[i]->name), name)) k++;
    return k;
}

static value *find(ctx *c, const char *name)
{
    for (int i = c->nv - 1; i >= 0; i--)
        if (!strcmp(c->v[i].name, name)) return &c->v[i];
    return NULL;
}

/* Bind name to val; a name bound to a layer adds its readers to the layer's. */
static int bind(ctx *c, const char *name, value val)
{
    if (c->nv == c->cap_v) {
        int cap = c->cap_v ? 2 * c->cap_v : 64;
        value *p = realloc(c->v, (size_t)cap * sizeof *p);
        if (!p) return oom(c);
        c->v = p, c->cap_v = cap;
    }
    val.name = name;
    c->v[c->nv++] = val;
    if (val.kind == V_LAYER) c->l[val.layer].refs += readers(c, name);
    return 0;
}

/* The layer a layer index stands for once folds are followed. */
static int live(const ctx *c, int i)
{
    while (i >= 0 && c->l[i].dead) i = c->l[i].alias;
    return i;
}

/* A node reads value v: a real reader (it makes a layer of it) counts as served. */
static void consume(ctx *c, const value *v, int real)
{
    if (v->kind != V_LAYER) return;
    layer *L = &c->l[v->layer];
    L->refs--;
    if (real) L->done++;
}

/* Whether the node about to read v is the only reader of v's layer, ever: then
 * what it does may be fused into the layer. */
static int sole_reader(const ctx *c, const value *v)
{
    if (v->kind != V_LAYER) return 0;
    const layer *L = &c->l[v->layer];
    return L->refs == 1 && L->done == 0;
}

/* A scoped node name as PyTorch's exporter writes it, "/layer1/layer1.0/conv1/Conv",
 * without what repeats: a scope the next one extends ("layer1" before "layer1.0")
 * and, after other scopes, the node's own op type: "layer1.0/conv1". A name
 * without '/' is kept whole. */
static void unscoped(const char *name, const char *op_type, char *out, size_t n)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", name);
    if (!strchr(buf, '/')) {
        snprintf(out, n, "%s", buf);
        return;
    }
    const char *part[64];
    int np = 0;
    for (char *save = NULL, *t = strtok_r(buf, "/", &save); t && np < 64; t = strtok_r(NULL, "/", &save))
        part[np++] = t;
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < np; i++) {
        size_t len = strlen(part[i]);
        if (i + 1 < np && !strncmp(part[i + 1], part[i], len) && part[i + 1][len] == '.') continue;
        if (i == np - 1 && at && !strcmp(part[i], op_type)) continue;
        at += (size_t)snprintf(out + at, at < n ? n - at : 0, "%s%s", at ? "/" : "", part[i]);
        if (at >= n) break;
    }
    if (!out[0]) snprintf(out, n, "%s", name);
}

/* The layer name for a node: its name (else its op and index) without repeated
 * scopes (unscoped), lower-cased, runs of other characters as one '_', at most
 * NAME_KEEP characters (the end kept: exporters put the distinctive part last),
 * unique. */
static void layer_name(const ctx *c, const Onnx__NodeProto *n, int idx, char out[CG_NAME_MAX])
{
    char raw[512], s[512];
    if (n->name && n->name[0]) unscoped(n->name, S(n->op_type), raw, sizeof raw);
    else snprintf(raw, sizeof raw, "%s_%d", S(n->op_type), idx);
    size_t k = 0;
    for (const char *p = raw; *p && k + 1 < sizeof s; p++) {
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))) ch = '_';
        if (ch == '_' && (k == 0 || s[k - 1] == '_')) continue;
        s[k++] = ch;
    }
    while (k && s[k - 1] == '_') k--;
    s[k] = 0;
    const char *t = k > NAME_KEEP ? s + k - NAME_KEEP : s;
    while (*t == '_') t++;
    char base[CG_NAME_MAX];
    snprintf(base, sizeof base, "%s%.*s", (*t >= '0' && *t <= '9') ? "n" : "", NAME_KEEP, *t ? t : "layer");
    if (!strcmp(base, "input")) snprintf(base, sizeof base, "input_%d", idx);
    snprintf(out, CG_NAME_MAX, "%s", base);
    for (int suffix = 2;; suffix++) {
        int taken = 0;
        for (int i = 0; i < c->nl; i++)
            if (!strcmp(c->l[i].name, out)) taken = 1;
        if (!taken) return;
        char tail[16];
        int tl = snprintf(tail, sizeof tail, "_%d", suffix);
        int keep = (int)strlen(base);
        if (keep + tl > NAME_KEEP) keep = NAME_KEEP - tl;
        snprintf(out, CG_NAME_MAX, "%.*s%s", keep, base, tail);
    }
}

static int new_layer(ctx *c, const Onnx__NodeProto *n, int idx, cg_op op)
{
    if (c->nl == c->cap_l) {
        int cap = c->cap_l ? 2 * c->cap_l : 32;
        layer *p = realloc(c->l, (size_t)cap * sizeof *p);
        if (!p) return oom(c);
        c->l = p, c->cap_l = cap;
    }
    layer *L = &c->l[c->nl];
    memset(L, 0, sizeof *L);
    layer_name(c, n, idx, L->name);
    L->op = op;
    L->stride = 1, L->groups = 1, L->eps = 1e-5;
    L->node_name = S(n->name), L->op_type = S(n->op_type);
    return c->nl++;
}

/* ---- attributes and constants --------------------------------------------- */

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(S(n->attribute[i]->name), name)) return n->attribute[i];
    return NULL;
}

/* Every attribute of n must be one of known (NULL-terminated). */
static int known_attrs(ctx *c, const Onnx__NodeProto *n, int idx, const char *const *known)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *a = S(n->attribute[i]->name);
        int ok = 0;
        for (int k = 0; known[k]; k++)
            if (!strcmp(a, known[k])) ok = 1;
        if (!ok) return node_fail(c, n, idx, "attribute '%.64s': convgen does not run it", a);
    }
    return 0;
}

static int attr_int(ctx *c, const Onnx__NodeProto *n, int idx, const char *name, long long def, long long *out)
{
    const Onnx__AttributeProto *a = attr(n, name);
    *out = def;
    if (!a) return 0;
    if (!a->has_i || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
        return node_fail(c, n, idx, "attribute '%s' is not an integer", name);
    *out = a->i;
    return 0;
}

static int attr_float(ctx *c, const Onnx__NodeProto *n, int idx, const char *name, double def, double *out)
{
    const Onnx__AttributeProto *a = attr(n, name);
    *out = def;
    if (!a) return 0;
    if (!a->has_f || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT))
        return node_fail(c, n, idx, "attribute '%s' is not a float", name);
    *out = a->f;
    return 0;
}

/* An INTS attribute of exactly want values (absent: *have = 0). */
static int attr_ints(ctx *c, const Onnx__NodeProto *n, int idx, const char *name, size_t want, long long *out,
                     int *have)
{
    const Onnx__AttributeProto *a = attr(n, name);
    *have = 0;
    if (!a) return 0;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return node_fail(c, n, idx, "attribute '%s' is not a list of integers", name);
    if (a->n_ints != want)
        return node_fail(c, n, idx, "attribute '%s' has %zu values: convgen runs 2-d operations (%zu values)", name,
                         a->n_ints, want);
    for (size_t i = 0; i < want; i++) out[i] = a->ints[i];
    *have = 1;
    return 0;
}

/* auto_pad absent or NOTSET. */
static int no_auto_pad(ctx *c, const Onnx__NodeProto *n, int idx)
{
    const Onnx__AttributeProto *a = attr(n, "auto_pad");
    if (!a) return 0;
    if (!a->has_s) return node_fail(c, n, idx, "attribute 'auto_pad' is not a string");
    if (a->s.len == 6 && !memcmp(a->s.data, "NOTSET", 6)) return 0;
    return node_fail(c, n, idx, "auto_pad %.*s: convgen runs explicit pads only (auto_pad NOTSET)",
                     (int)(a->s.len > 32 ? 32 : a->s.len), (const char *)a->s.data);
}

static const char *dtype_name(int t)
{
    static const char *names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                  "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                  "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof *names) ? names[t] : "an unknown type";
}

/* Elements of a constant tensor (product of its dims), -1 when out of range. */
static long long numel(const Onnx__TensorProto *t)
{
    long long k = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || (t->dims[i] > 0 && k > CG_ELEMS_MAX / t->dims[i])) return -1;
        k *= t->dims[i];
    }
    return k;
}

/* The constant named by input slot j of node n, or a message why not. */
static int const_input(ctx *c, const Onnx__NodeProto *n, int idx, size_t j, const char *what,
                       const Onnx__TensorProto **out)
{
    const char *name = j < n->n_input ? S(n->input[j]) : "";
    if (!name[0]) return node_fail(c, n, idx, "no %s input", what);
    value *v = find(c, name);
    if (!v) return node_fail(c, n, idx, "input '%.200s' is not defined before the node", name);
    if (v->kind != V_CONST)
        return node_fail(c, n, idx, "%s '%.200s' is computed in the graph: convgen needs it constant (an initializer)",
                         what, name);
    *out = v->t;
    return 0;
}

/* A FLOAT constant's values as a malloc'd float array of *count elements. */
static int tensor_floats(ctx *c, const Onnx__NodeProto *n, int idx, const Onnx__TensorProto *t, float **out,
                         long long *count)
{
    const char *tn = S(t->name);
    *out = NULL;
    if (t->has_data_location && t->data_location != 0)
        return node_fail(c, n, idx, "tensor '%.200s' is stored in an external file: convgen reads weights held in the model",
                         tn);
    int dt = t->has_data_type ? t->data_type : 0;
    if (dt != ONNX_FLOAT)
        return node_fail(c, n, idx, "tensor '%.200s' is %s: convgen reads FLOAT (float32) tensors only", tn,
                         dtype_name(dt));
    long long k = numel(t);
    if (k < 0) return node_fail(c, n, idx, "tensor '%.200s' is larger than convgen's 2^28 elements", tn);
    float *p = malloc((size_t)(k ? k : 1) * sizeof *p);
    if (!p) return oom(c);
    if (t->has_raw_data) {
        if (t->raw_data.len != (size_t)k * 4) {
            free(p);
            return node_fail(c, n, idx, "tensor '%.200s' holds %zu bytes of data for %lld floats", tn,
                             t->raw_data.len, k);
        }
        memcpy(p, t->raw_data.data, (size_t)k * 4); /* little-endian float32, as the host (safetensors.c) */
    } else {
        if (t->n_float_data != (size_t)k) {
            free(p);
            return node_fail(c, n, idx, "tensor '%.200s' holds %zu floats for its %lld elements", tn, t->n_float_data, k);
        }
        memcpy(p, t->float_data, (size_t)k * sizeof *p);
    }
    for (long long i = 0; i < k; i++)
        if (!isfinite(p[i])) {
            free(p);
            return node_fail(c, n, idx, "tensor '%.200s' holds a non-finite value at element %lld", tn, i);
        }
    *out = p;
    *count = k;
    return 0;
}

/* A constant input that must be a FLOAT tensor of want elements (rank 1, or any
 * rank whose dims multiply to want when any_rank). */
static int const_floats(ctx *c, const Onnx__NodeProto *n, int idx, size_t j, const char *what, long long want,
                        float **out)
{
    const Onnx__TensorProto *t;
    long long k;
    *out = NULL;
    if (const_input(c, n, idx, j, what, &t) || tensor_floats(c, n, idx, t, out, &k)) return -1;
    if (k != want) {
        free(*out), *out = NULL;
        return node_fail(c, n, idx, "%s '%.200s' has %lld elements, expected %lld", what, S(t->name), k, want);
    }
    return 0;
}

/* ---- reading values ------------------------------------------------------- */

/* The value input slot j of n reads (not a constant). */
static int data_input(ctx *c, const Onnx__NodeProto *n, int idx, size_t j, value **out)
{
    const char *name = j < n->n_input ? S(n->input[j]) : "";
    if (!name[0]) return node_fail(c, n, idx, "input %zu is missing", j + 1);
    value *v = find(c, name);
    if (!v) return node_fail(c, n, idx, "input '%.200s' is not defined before the node", name);
    if (v->kind == V_CONST)
        return node_fail(c, n, idx, "input '%.200s' is a constant: convgen computes this op on the network's tensors only",
                         name);
    *out = v;
    return 0;
}

static int maps_input(ctx *c, const Onnx__NodeProto *n, int idx, size_t j, value **out)
{
    if (data_input(c, n, idx, j, out)) return -1;
    if ((*out)->rank != 4)
        return node_fail(c, n, idx, "input '%.200s' is a 2-d tensor: the op needs maps (N x C x H x W)", (*out)->name);
    return 0;
}

/* Only output 0 may be read (Dropout's mask, MaxPool's indices, BatchNormalization's training outputs). */
static int one_output(ctx *c, const Onnx__NodeProto *n, int idx)
{
    if (n->n_output < 1 || !S(n->output[0])[0]) return node_fail(c, n, idx, "no output");
    for (size_t j = 1; j < n->n_output; j++)
        if (S(n->output[j])[0] && readers(c, n->output[j]))
            return node_fail(c, n, idx, "output %zu ('%.200s') is read: convgen computes the first output only", j + 1,
                             n->output[j]);
    return 0;
}

static value layer_value(int li, int rank, int C, int H, int W)
{
    value v = {0};
    v.kind = V_LAYER, v.layer = li, v.rank = rank, v.C = C, v.H = H, v.W = W;
    return v;
}

/* ---- the ops ---------------------------------------------------------------- */

static int op_conv(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};
    value *x;
    const Onnx__TensorProto *wt;
    if (known_attrs(c, n, idx, known) || no_auto_pad(c, n, idx) || one_output(c, n, idx) ||
        maps_input(c, n, idx, 0, &x) || const_input(c, n, idx, 1, "weight", &wt))
        return -1;
    long long dil[2] = {1, 1}, ks[2], pads[4] = {0, 0, 0, 0}, st[2] = {1, 1}, group;
    int have;
    if (attr_ints(c, n, idx, "dilations", 2, dil, &have)) return -1;
    if (dil[0] != 1 || dil[1] != 1)
        return node_fail(c, n, idx, "dilations %lld,%lld: convgen runs dilation 1 only", dil[0], dil[1]);
    if (wt->n_dims != 4) return node_fail(c, n, idx, "weight '%.200s' has %zu dimensions, not 4", S(wt->name), wt->n_dims);
    long long M = wt->dims[0], Cg = wt->dims[1], kh = wt->dims[2], kw = wt->dims[3];
    if (kh != kw) return node_fail(c, n, idx, "kernel %lldx%lld: convgen runs square kernels only", kh, kw);
    if (attr_ints(c, n, idx, "kernel_shape", 2, ks, &have)) return -1;
    if (have && (ks[0] != kh || ks[1] != kw))
        return node_fail(c, n, idx, "kernel_shape %lld,%lld differs from the weight's %lldx%lld", ks[0], ks[1], kh, kw);
    if (attr_ints(c, n, idx, "strides", 2, st, &have)) return -1;
    if (st[0] != st[1]) return node_fail(c, n, idx, "strides %lld,%lld: convgen runs one stride for both axes", st[0], st[1]);
    if (st[0] < 1 || st[0] > CG_DIM_MAX) return node_fail(c, n, idx, "stride %lld is out of range", st[0]);
    if (attr_ints(c, n, idx, "pads", 4, pads, &have)) return -1;
    if (attr_int(c, n, idx, "group", 1, &group)) return -1;
    if (M < 1 || M > CG_DIM_MAX || kh < 1 || kh > CG_DIM_MAX)
        return node_fail(c, n, idx, "weight '%.200s' dims out of range", S(wt->name));
    if (group < 1 || M % group || Cg * group != x->C)
        return node_fail(c, n, idx, "group %lld with weight %lldx%lldx%lldx%lld does not fit its input's %d channels",
                         group, M, Cg, kh, kw, x->C);
    /* ONNX pads: x1_begin, x2_begin, x1_end, x2_end = top, left, bottom, right */
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > kh - 1)
            return node_fail(c, n, idx, "pads %lld,%lld,%lld,%lld: convgen pads each side by 0 to K-1 (%lld)", pads[0],
                             pads[1], pads[2], pads[3], kh - 1);
    long long oh = (x->H + pads[0] + pads[2] - kh), ow = (x->W + pads[1] + pads[3] - kw);
    if (oh < 0 || ow < 0) return node_fail(c, n, idx, "kernel %lld is larger than its padded input", kh);
    oh = oh / st[0] + 1, ow = ow / st[0] + 1;
    float *w = NULL, *b = NULL;
    if (const_floats(c, n, idx, 1, "weight", M * Cg * kh * kw, &w)) return -1;
    int has_b = n->n_input > 2 && S(n->input[2])[0];
    if (has_b && const_floats(c, n, idx, 2, "bias", M, &b)) return free(w), -1;
    int li = new_layer(c, n, idx, CG_OP_CONV);
    if (li < 0) return free(w), free(b), -1;
    layer *L = &c->l[li];
    L->nin = 1, L->in[0] = x->kind == V_LAYER ? x->layer : -1;
    L->C = x->C, L->H = x->H, L->W = x->W;
    L->M = (int)M, L->K = (int)kh, L->groups = (int)group, L->stride = (int)st[0], L->bias = has_b;
    for (int i = 0; i < 4; i++) L->pad[i] = (int)pads[i];
    L->w = w, L->b = b;
    consume(c, x, 1);
    return bind(c, n->output[0], layer_value(li, 4, (int)M, (int)oh, (int)ow));
}

static int op_bn(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"epsilon", "momentum", "spatial", "training_mode", NULL};
    value *x;
    long long tm, spatial;
    double eps, mom;
    if (known_attrs(c, n, idx, known) || one_output(c, n, idx) || maps_input(c, n, idx, 0, &x) ||
        attr_int(c, n, idx, "training_mode", 0, &tm) || attr_int(c, n, idx, "spatial", 1, &spatial) ||
        attr_float(c, n, idx, "epsilon", 1e-5, &eps) || attr_float(c, n, idx, "momentum", 0.9, &mom))
        return -1;
    if (tm) return node_fail(c, n, idx, "training_mode 1: convgen runs inference (running statistics)");
    if (spatial != 1) return node_fail(c, n, idx, "spatial 0: convgen normalises per channel");
    if (!(eps > 0)) return node_fail(c, n, idx, "epsilon %g: convgen needs a positive epsilon", eps);
    float *t[4] = {NULL, NULL, NULL, NULL};
    static const char *what[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++)
        if (const_floats(c, n, idx, (size_t)i + 1, what[i], x->C, &t[i])) {
            for (int k = 0; k < 4; k++) free(t[k]);
            return -1;
        }
    for (int i = 0; i < x->C; i++)
        if (!(t[3][i] >= 0)) {
            for (int k = 0; k < 4; k++) free(t[k]);
            return node_fail(c, n, idx, "var has a negative value at channel %d", i);
        }
    int li = new_layer(c, n, idx, CG_OP_BATCHNORM);
    if (li < 0) {
        for (int k = 0; k < 4; k++) free(t[k]);
        return -1;
    }
    layer *L = &c->l[li];
    L->nin = 1, L->in[0] = x->kind == V_LAYER ? x->layer : -1;
    L->C = x->C, L->H = x->H, L->W = x->W, L->eps = eps;
    memcpy(L->bn, t, sizeof t);
    consume(c, x, 1);
    return bind(c, n->output[0], layer_value(li, 4, x->C, x->H, x->W));
}

/* Fold batchnorm layer bi into the conv ci it reads (weights and bias scaled per
 * output map, in double, as cg_weights_fold_bn does at load). */
static int fold_bn(ctx *c, int bi, int ci)
{
    layer *B = &c->l[bi], *P = &c->l[ci];
    if (!P->b) {
        P->b = calloc((size_t)P->M, sizeof *P->b);
        if (!P->b) return oom(c);
    }
    long long per = (long long)(P->C / P->groups) * P->K * P->K;
    for (int m = 0; m < P->M; m++) {
        double a = (double)B->bn[0][m] / sqrt((double)B->bn[3][m] + B->eps);
        for (long long i = 0; i < per; i++) P->w[m * per + i] = (float)(P->w[m * per + i] * a);
        P->b[m] = (float)(((double)P->b[m] - B->bn[2][m]) * a + B->bn[1][m]);
    }
    P->bias = 1, P->act = B->act;
    P->refs += B->refs, P->done += B->done - 1; /* B's readers are P's; B itself no longer reads P */
    B->dead = 1, B->alias = ci;
    for (int k = 0; k < 4; k++) free(B->bn[k]), B->bn[k] = NULL;
    return 0;
}

/* Whether batchnorm bi may fold into the conv it reads: a conv without
 * activation or pool whose only reader is bi. */
static int bn_foldable(const ctx *c, int bi)
{
    const layer *B = &c->l[bi];
    if (B->op != CG_OP_BATCHNORM || B->dead || B->in[0] < 0) return 0;
    const layer *P = &c->l[B->in[0]];
    return P->op == CG_OP_CONV && !P->dead && P->act == CG_ACT_NONE && P->pool == P_NONE && P->refs == 0 &&
           P->done == 1;
}

/* A global average pool convgen folds into the fc after it, read by something else. */
static int gap_view(ctx *c, const Onnx__NodeProto *n, int idx, const value *x)
{
    return node_fail(c, n, idx,
                     "reads '%.200s', a global average pool of a tensor no conv computes: convgen runs it only "
                     "folded into the Gemm or MatMul that reads it (after Flatten)",
                     x->name);
}

static int op_act(ctx *c, const Onnx__NodeProto *n, int idx, cg_act act)
{
    value *x;
    if (one_output(c, n, idx) || data_input(c, n, idx, 0, &x)) return -1;
    if (x->gap_hw) return gap_view(c, n, idx, x);
    const char *what = act == CG_ACT_RELU6 ? "relu6" : cg_act_name(act);
    if (!sole_reader(c, x))
        return node_fail(c, n, idx,
                         "reads '%.200s', %s: convgen runs an activation only fused into the conv, fc, add or "
                         "batchnorm it follows, when nothing else reads that layer",
                         x->name, x->kind == V_INPUT ? "the network input" : "which other nodes read too");
    layer *L = &c->l[x->layer];
    if (L->op != CG_OP_CONV && L->op != CG_OP_FC && L->op != CG_OP_ADD && L->op != CG_OP_BATCHNORM)
        return node_fail(c, n, idx, "reads the output of %s '%.200s': convgen fuses an activation into a conv, fc, add or batchnorm only",
                         L->op_type, L->node_name);
    if (L->act != CG_ACT_NONE)
        return node_fail(c, n, idx, "follows activation %s of '%.200s': convgen runs one activation per layer",
                         cg_act_name(L->act), L->node_name);
    if (L->pool == P_AVG || L->pool == P_GAP)
        return node_fail(c, n, idx, "%s after an average pool: convgen applies a conv's activation before its pool", what);
    L->act = act; /* after a max pool: every activation here is non-decreasing, so it commutes with max */
    consume(c, x, 0);
    return bind(c, n->output[0], *x);
}

static int op_clip(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"min", "max", NULL};
    if (known_attrs(c, n, idx, known)) return -1;
    double lo = -INFINITY, hi = INFINITY;
    if (attr_float(c, n, idx, "min", -INFINITY, &lo) || attr_float(c, n, idx, "max", INFINITY, &hi)) return -1;
    for (size_t j = 1; j < 3 && j < n->n_input; j++) {
        if (!S(n->input[j])[0]) continue;
        float *p;
        if (const_floats(c, n, idx, j, j == 1 ? "min" : "max", 1, &p)) return -1;
        if (j == 1) lo = p[0];
        else hi = p[0];
        free(p);
    }
    if (lo == 0 && hi == 6) return op_act(c, n, idx, CG_ACT_RELU6);
    if (lo == 0 && isinf(hi) && hi > 0) return op_act(c, n, idx, CG_ACT_RELU);
    return node_fail(c, n, idx, "Clip(%g, %g): convgen runs Clip(0, 6) as relu6 and Clip(0, inf) as relu only", lo, hi);
}

/* A pool fused into the conv that x is the output of. */
static int fuse_pool(ctx *c, const Onnx__NodeProto *n, int idx, value *x, pool_kind kind, int k, int s, int p)
{
    int ok = sole_reader(c, x);
    int li = ok ? x->layer : -1;
    if (ok && c->l[li].op == CG_OP_BATCHNORM && bn_foldable(c, li)) {
        int ci = c->l[li].in[0];
        if (fold_bn(c, li, ci)) return -1;
        li = ci;
    }
    if (kind == P_GAP && (!ok || c->l[li].op != CG_OP_CONV || c->l[li].pool != P_NONE)) {
        /* no conv takes it (ResNet's pool after its last add): the fc reading it will */
        value v = *x;
        v.rank = 2, v.gap_hw = x->H * x->W, v.H = v.W = 1;
        consume(c, x, 0);
        return bind(c, n->output[0], v);
    }
    if (!ok || c->l[li].op != CG_OP_CONV || c->l[li].pool != P_NONE) {
        const char *who = x->kind == V_INPUT ? "the network input"
                          : !ok             ? "a tensor other nodes read too"
                                            : c->l[x->layer].op_type;
        return node_fail(c, n, idx,
                         "reads '%.200s' (%s): convgen has no standalone pool layer yet; it runs a pool fused "
                         "into the conv before it (after its batchnorm and activation) when nothing else reads that conv",
                         x->name, who);
    }
    layer *L = &c->l[li];
    int oh, ow;
    if (kind == P_GAP) oh = ow = 1, k = 1, s = 1;
    else {
        if (x->H + 2 * p < k || x->W + 2 * p < k)
            return node_fail(c, n, idx, "window %d is larger than its input %dx%d", k, x->H, x->W);
        oh = (x->H + 2 * p - k) / s + 1, ow = (x->W + 2 * p - k) / s + 1;
    }
    L->pool = kind, L->pool_k = k, L->pool_s = s, L->pool_p = p;
    c->l[li].refs--; /* the pool's read, fused: the name it binds is the conv's output now */
    return bind(c, n->output[0], layer_value(li, 4, x->C, oh, ow));
}

static int op_pool(ctx *c, const Onnx__NodeProto *n, int idx, int is_max)
{
    static const char *const kmax[] = {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides", NULL};
    static const char *const kavg[] = {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides", NULL};
    value *x;
    if (known_attrs(c, n, idx, is_max ? kmax : kavg) || no_auto_pad(c, n, idx) || one_output(c, n, idx) ||
        maps_input(c, n, idx, 0, &x))
        return -1;
    long long ks[2], st[2] = {1, 1}, pads[4] = {0, 0, 0, 0}, dil[2] = {1, 1}, ceil_mode, cip;
    int have;
    if (attr_ints(c, n, idx, "kernel_shape", 2, ks, &have)) return -1;
    if (!have) return node_fail(c, n, idx, "no kernel_shape");
    if (attr_ints(c, n, idx, "strides", 2, st, &have) || attr_ints(c, n, idx, "pads", 4, pads, &have) ||
        attr_ints(c, n, idx, "dilations", 2, dil, &have) || attr_int(c, n, idx, "ceil_mode", 0, &ceil_mode) ||
        attr_int(c, n, idx, "count_include_pad", 0, &cip))
        return -1;
    if (ks[0] != ks[1]) return node_fail(c, n, idx, "window %lldx%lld: convgen pools square windows only", ks[0], ks[1]);
    if (ks[0] < 2 || ks[0] > CG_DIM_MAX) return node_fail(c, n, idx, "window %lld: convgen pools windows of 2 or more", ks[0]);
    if (st[0] != st[1] || st[0] < 1 || st[0] > CG_DIM_MAX)
        return node_fail(c, n, idx, "strides %lld,%lld: convgen pools with one stride for both axes", st[0], st[1]);
    if (dil[0] != 1 || dil[1] != 1) return node_fail(c, n, idx, "dilations %lld,%lld: convgen runs dilation 1 only", dil[0], dil[1]);
    if (ceil_mode) return node_fail(c, n, idx, "ceil_mode 1: convgen's pools drop windows that do not fit (ceil_mode 0)");
    if (pads[0] != pads[1] || pads[0] != pads[2] || pads[0] != pads[3] || pads[0] < 0 || pads[0] > ks[0] / 2)
        return node_fail(c, n, idx, "pads %lld,%lld,%lld,%lld: convgen pads a pool by one amount on every side, 0 to %lld",
                         pads[0], pads[1], pads[2], pads[3], ks[0] / 2);
    if (!is_max && pads[0] && !cip)
        return node_fail(c, n, idx, "count_include_pad 0 with pads: convgen's average counts padding as zeros (count_include_pad 1)");
    return fuse_pool(c, n, idx, x, is_max ? P_MAX : P_AVG, (int)ks[0], (int)st[0], (int)pads[0]);
}

static int op_gap(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {NULL};
    value *x;
    if (known_attrs(c, n, idx, known) || one_output(c, n, idx) || maps_input(c, n, idx, 0, &x)) return -1;
    return fuse_pool(c, n, idx, x, P_GAP, 1, 1, 0);
}

/* Identity, Dropout, Flatten, Reshape: the output is the input, seen as rank. */
static int rebind(ctx *c, const Onnx__NodeProto *n, int idx, int rank)
{
    value *x;
    if (one_output(c, n, idx) || data_input(c, n, idx, 0, &x)) return -1;
    value v = *x;
    if (rank == 2 && v.rank == 4) {
        long long k = (long long)v.C * v.H * v.W;
        v.rank = 2, v.C = (int)k, v.H = v.W = 1; /* C x H x W row-major: convgen's fc reads it so */
    }
    consume(c, x, 0);
    return bind(c, n->output[0], v);
}

static int op_flatten(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"axis", NULL};
    long long axis;
    if (known_attrs(c, n, idx, known) || attr_int(c, n, idx, "axis", 1, &axis)) return -1;
    if (axis != 1) return node_fail(c, n, idx, "axis %lld: convgen flattens each image (axis 1)", axis);
    return rebind(c, n, idx, 2);
}

static int op_reshape(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"allowzero", NULL};
    value *x;
    const Onnx__TensorProto *t;
    if (known_attrs(c, n, idx, known) || data_input(c, n, idx, 0, &x) || const_input(c, n, idx, 1, "shape", &t))
        return -1;
    if ((t->has_data_type ? t->data_type : 0) != ONNX_INT64 || numel(t) != 2)
        return node_fail(c, n, idx, "shape '%.200s' is not 2 INT64 values: convgen reshapes only to N x features before a Gemm",
                         S(t->name));
    long long d[2];
    if (t->has_raw_data && t->raw_data.len == 16) memcpy(d, t->raw_data.data, 16);
    else if (!t->has_raw_data && t->n_int64_data == 2) d[0] = t->int64_data[0], d[1] = t->int64_data[1];
    else return node_fail(c, n, idx, "shape '%.200s' holds no 2 values", S(t->name));
    long long k = (long long)x->C * x->H * x->W;
    if ((d[1] != -1 && d[1] != k) || (d[0] != -1 && d[0] != 0 && d[0] != 1) || (d[0] == -1 && d[1] == -1))
        return node_fail(c, n, idx, "shape %lld,%lld: convgen reshapes only to N x %lld (each image flattened)", d[0], d[1], k);
    return rebind(c, n, idx, 2);
}

/* Gemm and MatMul: an fc layer over a vector (a flattened tensor or an fc's output). */
static int make_fc(ctx *c, const Onnx__NodeProto *n, int idx, value *x, float *w, float *b, int out)
{
    int in = x->C;
    if (x->gap_hw) { /* fc(mean over p of x[c][p]) = fc'(x), w'[o][c*HW + p] = w[o][c] / HW */
        long long hw = x->gap_hw, k = (long long)x->C * hw * out; /* C x H x W <= 2^28, out <= 65536 */
        if (k > CG_ELEMS_MAX) {
            free(w), free(b);
            return node_fail(c, n, idx, "the global average pool it reads, folded into it, makes %lld x %lld weights: "
                             "more than convgen's 2^28", (long long)x->C * hw, (long long)out);
        }
        float *wide = malloc((size_t)k * sizeof *wide);
        if (!wide) return free(w), free(b), oom(c);
        for (long long o = 0; o < out; o++)
            for (long long ch = 0; ch < x->C; ch++)
                for (long long p = 0; p < hw; p++)
                    wide[(o * x->C + ch) * hw + p] = (float)((double)w[o * x->C + ch] / (double)hw);
        free(w);
        w = wide;
        in = (int)(x->C * hw);
    }
    int li = new_layer(c, n, idx, CG_OP_FC);
    if (li < 0) return free(w), free(b), -1;
    layer *L = &c->l[li];
    L->nin = 1, L->in[0] = x->kind == V_LAYER ? x->layer : -1;
    L->C = in, L->H = L->W = 1, L->out = out, L->w = w, L->b = b, L->bias = b != NULL;
    consume(c, x, 1);
    return bind(c, n->output[0], layer_value(li, 2, out, 1, 1));
}

/* The weight of an fc from a constant: [out, in] (trans 1) or [in, out] (trans 0, transposed here). */
static int fc_weight(ctx *c, const Onnx__NodeProto *n, int idx, size_t j, int trans, int in, float **w, int *out)
{
    const Onnx__TensorProto *t;
    long long k;
    if (const_input(c, n, idx, j, "weight", &t)) return -1;
    if (t->n_dims != 2) return node_fail(c, n, idx, "weight '%.200s' has %zu dimensions, not 2", S(t->name), t->n_dims);
    long long rows = t->dims[0], cols = t->dims[1], fin = trans ? cols : rows, fout = trans ? rows : cols;
    if (fin != in)
        return node_fail(c, n, idx, "weight '%.200s' is %lldx%lld for %d inputs", S(t->name), rows, cols, in);
    if (fout < 1 || fout > CG_DIM_MAX) return node_fail(c, n, idx, "%lld outputs: convgen's fc has 1 to 65536", fout);
    if (tensor_floats(c, n, idx, t, w, &k)) return -1;
    if (!trans) {
        float *tw = cg_weights_transposed(*w, rows, k); /* [in, out] -> [out, in] */
        free(*w);
        if (!(*w = tw)) return oom(c);
    }
    *out = (int)fout;
    return 0;
}

static int vector_input(ctx *c, const Onnx__NodeProto *n, int idx, value **x)
{
    if (data_input(c, n, idx, 0, x)) return -1;
    if ((*x)->rank != 2)
        return node_fail(c, n, idx, "reads the 4-d tensor '%.200s': convgen needs it flattened first (Flatten)", (*x)->name);
    return 0;
}

static int op_gemm(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    value *x;
    double alpha, beta;
    long long ta, tb;
    if (known_attrs(c, n, idx, known) || one_output(c, n, idx) || vector_input(c, n, idx, &x) ||
        attr_float(c, n, idx, "alpha", 1, &alpha) || attr_float(c, n, idx, "beta", 1, &beta) ||
        attr_int(c, n, idx, "transA", 0, &ta) || attr_int(c, n, idx, "transB", 0, &tb))
        return -1;
    if (alpha != 1 || beta != 1) return node_fail(c, n, idx, "alpha %g, beta %g: convgen runs alpha = beta = 1", alpha, beta);
    if (ta) return node_fail(c, n, idx, "transA 1: convgen's fc reads its input untransposed");
    float *w, *b = NULL;
    int out;
    if (fc_weight(c, n, idx, 1, tb != 0, x->C, &w, &out)) return -1;
    if (n->n_input > 2 && S(n->input[2])[0] && const_floats(c, n, idx, 2, "bias", out, &b)) return free(w), -1;
    return make_fc(c, n, idx, x, w, b, out);
}

static int op_matmul(ctx *c, const Onnx__NodeProto *n, int idx)
{
    value *x;
    float *w;
    int out;
    if (one_output(c, n, idx) || vector_input(c, n, idx, &x) || fc_weight(c, n, idx, 1, 0, x->C, &w, &out)) return -1;
    return make_fc(c, n, idx, x, w, NULL, out);
}

static int op_add(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {NULL};
    if (known_attrs(c, n, idx, known) || one_output(c, n, idx)) return -1;
    if (n->n_input != 2) return node_fail(c, n, idx, "%zu inputs: Add has 2", n->n_input);
    value *a = find(c, S(n->input[0])), *b = find(c, S(n->input[1]));
    if (!a || !b) return node_fail(c, n, idx, "input '%.200s' is not defined before the node", S((!a ? n->input[0] : n->input[1])));
    if (a->kind == V_CONST || b->kind == V_CONST) { /* a MatMul's bias */
        value *x = a->kind == V_CONST ? b : a;
        size_t cj = a->kind == V_CONST ? 0 : 1;
        if (x->kind == V_CONST) return node_fail(c, n, idx, "adds two constants");
        layer *L = x->kind == V_LAYER ? &c->l[x->layer] : NULL;
        if (!L || L->op != CG_OP_FC || L->bias || L->act != CG_ACT_NONE || !sole_reader(c, x))
            return node_fail(c, n, idx, "adds the constant '%.200s': convgen adds a constant only as the bias of the "
                             "MatMul before it, when nothing else reads that MatMul", S(n->input[cj]));
        if (const_floats(c, n, idx, cj, "bias", L->out, &L->b)) return -1;
        L->bias = 1;
        consume(c, x, 0);
        return bind(c, n->output[0], *x);
    }
    if (a->gap_hw || b->gap_hw) return gap_view(c, n, idx, a->gap_hw ? a : b);
    if (a->rank != b->rank || a->C != b->C || a->H != b->H || a->W != b->W)
        return node_fail(c, n, idx, "adds '%.200s' (%dx%dx%d) and '%.200s' (%dx%dx%d): convgen adds tensors of one shape",
                         a->name, a->C, a->H, a->W, b->name, b->C, b->H, b->W);
    int li = new_layer(c, n, idx, CG_OP_ADD);
    if (li < 0) return -1;
    layer *L = &c->l[li];
    L->nin = 2;
    L->in[0] = a->kind == V_LAYER ? a->layer : -1, L->in[1] = b->kind == V_LAYER ? b->layer : -1;
    L->C = a->C, L->H = a->H, L->W = a->W;
    value va = *a;
    consume(c, a, 1), consume(c, b, 1);
    return bind(c, n->output[0], layer_value(li, va.rank, va.C, va.H, va.W));
}

static int op_concat(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"axis", NULL};
    long long axis;
    if (known_attrs(c, n, idx, known) || one_output(c, n, idx) || attr_int(c, n, idx, "axis", 1, &axis)) return -1;
    if (n->n_input < 2 || n->n_input > CG_MAX_INPUTS)
        return node_fail(c, n, idx, "%zu inputs: convgen joins 2 to %d tensors", n->n_input, CG_MAX_INPUTS);
    value *x[CG_MAX_INPUTS];
    int C = 0;
    for (size_t j = 0; j < n->n_input; j++) {
        if (maps_input(c, n, idx, j, &x[j])) return -1;
        if (x[j]->H != x[0]->H || x[j]->W != x[0]->W)
            return node_fail(c, n, idx, "joins maps of %dx%d and %dx%d: convgen joins maps of one height and width",
                             x[0]->H, x[0]->W, x[j]->H, x[j]->W);
        C += x[j]->C;
    }
    if (axis != 1 && axis != -3) return node_fail(c, n, idx, "axis %lld: convgen joins along channels (axis 1)", axis);
    int li = new_layer(c, n, idx, CG_OP_CONCAT);
    if (li < 0) return -1;
    layer *L = &c->l[li];
    L->nin = (int)n->n_input;
    int H = x[0]->H, W = x[0]->W;
    for (int j = 0; j < L->nin; j++) L->in[j] = x[j]->kind == V_LAYER ? x[j]->layer : -1;
    for (int j = 0; j < L->nin; j++) consume(c, x[j], 1);
    return bind(c, n->output[0], layer_value(li, 4, C, H, W));
}

static int op_softmax(ctx *c, const Onnx__NodeProto *n, int idx)
{
    static const char *const known[] = {"axis", NULL};
    value *x;
    long long axis;
    if (known_attrs(c, n, idx, known) || one_output(c, n, idx) || attr_int(c, n, idx, "axis", c->opset >= 13 ? -1 : 1, &axis) ||
        data_input(c, n, idx, 0, &x))
        return -1;
    if (x->gap_hw) return gap_view(c, n, idx, x);
    if (x->rank != 2) return node_fail(c, n, idx, "over a 4-d tensor: convgen's softmax follows an fc (a 2-d tensor)");
    if (axis != 1 && axis != -1) return node_fail(c, n, idx, "axis %lld: convgen's softmax runs over each image's scores", axis);
    int li = new_layer(c, n, idx, CG_OP_SOFTMAX);
    if (li < 0) return -1;
    layer *L = &c->l[li];
    L->nin = 1, L->in[0] = x->kind == V_LAYER ? x->layer : -1, L->C = x->C, L->H = L->W = 1;
    value v = *x;
    consume(c, x, 1);
    return bind(c, n->output[0], layer_value(li, 2, v.C, 1, 1));
}

static int op_constant(ctx *c, const Onnx__NodeProto *n, int idx)
{
    const Onnx__AttributeProto *a = attr(n, "value");
    if (n->n_attribute != 1 || !a || !a->t)
        return node_fail(c, n, idx, "convgen reads a Constant's 'value' tensor only");
    if (one_output(c, n, idx)) return -1;
    value v = {0};
    v.kind = V_CONST, v.t = a->t;
    return bind(c, n->output[0], v);
}

static int node(ctx *c, const Onnx__NodeProto *n, int idx)
{
    const char *op = S(n->op_type), *dom = S(n->domain);
    if (dom[0] && strcmp(dom, "ai.onnx"))
        return node_fail(c, n, idx, "domain '%.64s': convgen runs the standard ONNX ops only", dom);
    for (size_t j = 0; j < n->n_output; j++)
        if (S(n->output[j])[0] && find(c, n->output[j]))
            return node_fail(c, n, idx, "output '%.200s' is defined twice", n->output[j]);
    if (!strcmp(op, "Conv")) return op_conv(c, n, idx);
    if (!strcmp(op, "BatchNormalization")) return op_bn(c, n, idx);
    if (!strcmp(op, "Relu") || !strcmp(op, "Tanh") || !strcmp(op, "Sigmoid")) {
        if (n->n_attribute) return node_fail(c, n, idx, "attribute '%.64s': convgen does not run it", S(n->attribute[0]->name));
        return op_act(c, n, idx, op[0] == 'R' ? CG_ACT_RELU : op[0] == 'T' ? CG_ACT_TANH : CG_ACT_SIGMOID);
    }
    if (!strcmp(op, "Clip")) return op_clip(c, n, idx);
    if (!strcmp(op, "MaxPool")) return op_pool(c, n, idx, 1);
    if (!strcmp(op, "AveragePool")) return op_pool(c, n, idx, 0);
    if (!strcmp(op, "GlobalAveragePool")) return op_gap(c, n, idx);
    if (!strcmp(op, "Flatten")) return op_flatten(c, n, idx);
    if (!strcmp(op, "Reshape")) return op_reshape(c, n, idx);
    if (!strcmp(op, "Gemm")) return op_gemm(c, n, idx);
    if (!strcmp(op, "MatMul")) return op_matmul(c, n, idx);
    if (!strcmp(op, "Add")) return op_add(c, n, idx);
    if (!strcmp(op, "Concat")) return op_concat(c, n, idx);
    if (!strcmp(op, "Softmax")) return op_softmax(c, n, idx);
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout")) {
        static const char *const kid[] = {NULL}, *const kdrop[] = {"ratio", "seed", "is_test", NULL};
        if (known_attrs(c, n, idx, op[0] == 'I' ? kid : kdrop)) return -1;
        return rebind(c, n, idx, 0);
    }
    if (!strcmp(op, "Constant")) return op_constant(c, n, idx);
    return node_fail(c, n, idx, "convgen does not run this op");
}

/* ---- the graph's input ------------------------------------------------------ */

static int graph_input(ctx *c)
{
    const Onnx__GraphProto *g = c->g;
    const Onnx__ValueInfoProto *in = NULL;
    for (size_t i = 0; i < g->n_input; i++) {
        value *v = find(c, S(g->input[i]->name));
        if (v && v->kind == V_CONST) continue; /* older exporters list the initializers as inputs too */
        if (in) return cg_fail(c->e, "%s: the graph has several inputs ('%.200s', '%.200s'): convgen runs one", c->path,
                               S(in->name), S(g->input[i]->name)), -1;
        in = g->input[i];
    }
    if (!in) return cg_fail(c->e, "%s: the graph has no input", c->path), -1;
    const char *nm = S(in->name);
    const Onnx__TypeProto__Tensor *tt = in->type ? in->type->tensor_type : NULL;
    if (!tt) return cg_fail(c->e, "%s: input '%.200s' is not a tensor", c->path, nm), -1;
    int et = tt->has_elem_type ? tt->elem_type : 0;
    if (et != ONNX_FLOAT)
        return cg_fail(c->e, "%s: input '%.200s' is %s: convgen's input is FLOAT images", c->path, nm, dtype_name(et)), -1;
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (!sh || sh->n_dim != 4)
        return cg_fail(c->e, "%s: input '%.200s' has %zu dimensions: convgen's input is N x C x H x W", c->path, nm,
                       sh ? sh->n_dim : 0), -1;
    long long d[3];
    static const char *axis[3] = {"channels", "height", "width"};
    for (int i = 0; i < 3; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[i + 1];
        if (!dm->has_dim_value)
            return cg_fail(c->e, "%s: input '%.200s' has no fixed %s ('%.64s'): convgen needs C, H and W fixed; export "
                           "the model with a fixed input size", c->path, nm, axis[i], S(dm->dim_param)), -1;
        d[i] = dm->dim_value;
        if (d[i] < 1 || d[i] > CG_DIM_MAX)
            return cg_fail(c->e, "%s: input '%.200s' %s %lld is out of range (1..%d)", c->path, nm, axis[i], d[i], CG_DIM_MAX), -1;
    }
    value v = {0};
    v.kind = V_INPUT, v.layer = -1, v.rank = 4, v.C = (int)d[0], v.H = (int)d[1], v.W = (int)d[2];
    return bind(c, nm, v);
}

/* ---- writing the spec and weights ------------------------------------------- */

static int add_tensor(cg_weights *w, const char *layer_name, const char *suffix, const float *data, int ndim,
                      const long long *shape)
{
    cg_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s.%s", layer_name, suffix);
    t->ndim = ndim;
    t->count = 1;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i], t->count *= shape[i];
    t->dtype = CG_W_F32;
    t->data = malloc((size_t)t->count * sizeof(float));
    if (!t->data) return -1;
    memcpy(t->data, data, (size_t)t->count * sizeof(float));
    w->n++;
    return 0;
}

static int emit(ctx *c, const cg_onnx_options *o, int nin, cg_buf *spec, cg_buf *wbytes)
{
    cg_buf *b = spec;
    const char *base = strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path;
    char desc[128];
    size_t k = 0;
    for (const char *p = base; *p && k + 1 < sizeof desc; p++)
        desc[k++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
                     *p == '-' || *p == '_')
                        ? *p
                        : '_';
    desc[k] = 0;
    value *in = NULL;
    for (int i = 0; i < c->nv; i++)
        if (c->v[i].kind == V_INPUT) in = &c->v[i];
    int rc = 0;
    rc |= cg_buf_printf(b, "# %s: imported from %s by convgen import.\n", o->network, desc);
    rc |= cg_buf_printf(b, "# The input scaling below is a guess: edit scale (and mean/std) to match how the model\n"
                           "# was trained, e.g. torchvision's ImageNet models: scale 1/255 with\n"
                           "# mean [0.485, 0.456, 0.406] and std [0.229, 0.224, 0.225].\n");
    rc |= cg_buf_printf(b, "network: %s\ndescription: \"imported from %s\"\n", o->network, desc);
    rc |= cg_buf_printf(b, "input:\n  channels: %d\n  height: %d\n  width: %d\n  scale: %.17g\n", in->C, in->H, in->W,
                        o->scale);
    for (int pass = 0; pass < 2; pass++) {
        int nn = pass ? o->nstd : o->nmean;
        const double *x = pass ? o->std : o->mean;
        if (!nn) continue;
        rc |= cg_buf_printf(b, "  %s: [", pass ? "std" : "mean");
        for (int i = 0; i < nn; i++) rc |= cg_buf_printf(b, "%s%.17g", i ? ", " : "", x[i]);
        rc |= cg_buf_puts(b, "]\n");
    }
    if (!o->nmean && !o->nstd) rc |= cg_buf_puts(b, "  offset: 0.0\n");
    rc |= cg_buf_printf(b, "weights: %s\nlayers:\n", o->weights);

    cg_weights w = {0};
    w.t = calloc((size_t)(4 * nin + 1), sizeof *w.t);
    if (!w.t || rc) return free(w.t), oom(c);
    int prev = -2; /* the live layer before: a layer reading it needs no `input:` */
    for (int i = 0; i < c->nl && !rc; i++) {
        layer *L = &c->l[i];
        if (L->dead) continue;
        rc |= cg_buf_printf(b, "  - {name: %s, op: %s", L->name, cg_op_name(L->op));
        if (L->op == CG_OP_CONV) {
            rc |= cg_buf_printf(b, ", M: %d, K: %d", L->M, L->K);
            if (L->pad[0] == L->pad[1] && L->pad[0] == L->pad[2] && L->pad[0] == L->pad[3]) {
                if (L->pad[0]) rc |= cg_buf_printf(b, ", padding: %d", L->pad[0]);
            } else rc |= cg_buf_printf(b, ", padding: [%d, %d, %d, %d]", L->pad[0], L->pad[1], L->pad[2], L->pad[3]);
            if (L->stride != 1) rc |= cg_buf_printf(b, ", stride: %d", L->stride);
            if (L->groups != 1) rc |= cg_buf_printf(b, ", groups: %d", L->groups);
            if (L->bias) rc |= cg_buf_puts(b, ", bias: true");
        } else if (L->op == CG_OP_FC) {
            rc |= cg_buf_printf(b, ", out: %d, bias: %s", L->out, L->bias ? "true" : "false");
        } else if (L->op == CG_OP_BATCHNORM && L->eps != 1e-5) {
            rc |= cg_buf_printf(b, ", eps: %.17g", L->eps);
        }
        if (L->act != CG_ACT_NONE) rc |= cg_buf_printf(b, ", activation: %s", cg_act_name(L->act));
        if (L->pool == P_GAP) rc |= cg_buf_puts(b, ", pool: global_avg");
        else if (L->pool != P_NONE) {
            rc |= cg_buf_printf(b, ", pool: %s%d", L->pool == P_MAX ? "max" : "avg", L->pool_k);
            if (L->pool_s != L->pool_k) rc |= cg_buf_printf(b, ", pool_stride: %d", L->pool_s);
            if (L->pool_p) rc |= cg_buf_printf(b, ", pool_padding: %d", L->pool_p);
        }
        if (L->nin > 1) {
            rc |= cg_buf_puts(b, ", input: [");
            for (int j = 0; j < L->nin; j++) {
                int s = live(c, L->in[j]);
                rc |= cg_buf_printf(b, "%s%s", j ? ", " : "", s < 0 ? "input" : c->l[s].name);
            }
            rc |= cg_buf_puts(b, "]");
        } else {
            int s = live(c, L->in[0]);
            if (s != prev && !(s < 0 && prev == -2)) rc |= cg_buf_printf(b, ", input: %s", s < 0 ? "input" : c->l[s].name);
        }
        rc |= cg_buf_puts(b, "}\n");
        prev = i;
        if (L->op == CG_OP_CONV) {
            long long sh[4] = {L->M, L->C / L->groups, L->K, L->K};
            rc |= add_tensor(&w, L->name, "weight", L->w, 4, sh);
            if (L->bias) rc |= add_tensor(&w, L->name, "bias", L->b, 1, sh);
        } else if (L->op == CG_OP_FC) {
            long long sh[2] = {L->out, L->C};
            rc |= add_tensor(&w, L->name, "weight", L->w, 2, sh);
            if (L->bias) rc |= add_tensor(&w, L->name, "bias", L->b, 1, sh);
        } else if (L->op == CG_OP_BATCHNORM) {
            static const char *nm[4] = {"weight", "bias", "running_mean", "running_var"};
            long long sh[1] = {L->C};
            for (int t = 0; t < 4; t++) rc |= add_tensor(&w, L->name, nm[t], L->bn[t], 1, sh);
        }
    }
    if (rc) {
        cg_weights_free(&w);
        return oom(c);
    }
    int r = cg_weights_encode(o->weights, &w, CG_W_F32, wbytes, c->e);
    cg_weights_free(&w);
    return r ? -2 : 0;
}

/* ---- the whole import -------------------------------------------------------- */

static void free_ctx(ctx *c)
{
    for (int i = 0; i < c->nl; i++) {
        free(c->l[i].w), free(c->l[i].b);
        for (int k = 0; k < 4; k++) free(c->l[i].bn[k]);
    }
    free(c->l), free(c->v);
}

static int convert(ctx *c, const cg_onnx_options *o, cg_buf *spec, cg_buf *weights)
{
    const Onnx__GraphProto *g = c->g;
    if (g->n_node > NODES_MAX || g->n_initializer > NODES_MAX || g->n_input > NODES_MAX || g->n_output > NODES_MAX)
        return cg_fail(c->e, "%s: the graph has %zu nodes, %zu initializers, %zu inputs and %zu outputs: convgen "
                       "imports at most %d of each", c->path, g->n_node, g->n_initializer, g->n_input, g->n_output,
                       NODES_MAX), -1;
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i]->n_input > NODES_MAX || g->node[i]->n_output > NODES_MAX)
            return cg_fail(c->e, "%s: node %zu has %zu inputs and %zu outputs: convgen imports at most %d", c->path, i,
                           g->node[i]->n_input, g->node[i]->n_output, NODES_MAX), -1;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const char *nm = S(g->initializer[i]->name);
        if (!nm[0]) return cg_fail(c->e, "%s: initializer %zu has no name", c->path, i), -1;
        value v = {0};
        v.kind = V_CONST, v.t = g->initializer[i];
        if (bind(c, nm, v)) return -1;
    }
    if (graph_input(c)) return -1;
    if (g->n_output != 1)
        return cg_fail(c->e, "%s: the graph has %zu outputs: convgen runs networks of one output", c->path, g->n_output), -1;
    for (size_t i = 0; i < g->n_node; i++)
        if (node(c, g->node[i], (int)i)) return -1;
    const char *outname = S(g->output[0]->name);
    value *ov = find(c, outname);
    int last = -1;
    for (int i = 0; i < c->nl; i++)
        if (!c->l[i].dead) last = i;
    if (!ov || ov->kind != V_LAYER || live(c, ov->layer) != last)
        return cg_fail(c->e, "%s: the graph's output '%.200s' is not the output of its last layer", c->path, outname), -1;
    /* over convgen's layer limit: batch norms folded into their convs here, not at load */
    int nlive = 0;
    for (int i = 0; i < c->nl; i++) nlive += !c->l[i].dead;
    for (int i = 0; i < c->nl && nlive > CG_MAX_LAYERS; i++)
        if (bn_foldable(c, i)) {
            if (fold_bn(c, i, c->l[i].in[0])) return -1;
            nlive--;
        }
    if (nlive > CG_MAX_LAYERS)
        return cg_fail(c->e, "%s: the network makes %d layers: convgen runs at most %d", c->path, nlive, CG_MAX_LAYERS), -1;
    int rc = emit(c, o, nlive, spec, weights);
    if (rc) return rc;
    /* what the spec reader and the weights loader say of the result */
    cg_spec *s = malloc(sizeof *s);
    if (!s) return oom(c);
    cg_err e2 = {{0}};
    char where[CG_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s (imported spec)", o->network);
    if (cg_spec_parse(where, spec->data, spec->len, s, &e2)) {
        free(s);
        return cg_fail(c->e, "%s: the spec it converts to is refused: %s", c->path, e2.msg), -1;
    }
    cg_weights w;
    if (cg_weights_for_spec_bytes(s, o->weights, weights->data, weights->len, &w, &e2)) {
        free(s);
        return cg_fail(c->e, "%s: the weights it converts to are refused: %s", c->path, e2.msg), -1;
    }
    cg_weights_free(&w);
    free(s);
    return 0;
}

int cg_onnx_import(const char *path, const cg_onnx_options *o, cg_buf *spec, cg_buf *weights, cg_err *e)
{
    cg_buf bytes;
    cg_buf_init(&bytes);
    if (cg_read_file_max(path, MODEL_MAX, &bytes, e)) {
        cg_buf_free(&bytes);
        return -1;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, bytes.len, (const uint8_t *)bytes.data);
    cg_buf_free(&bytes);
    if (!m) return cg_fail(e, "%s: not an ONNX model (the protobuf does not parse: truncated or another format)", path), -1;
    ctx c = {0};
    c.path = path, c.e = e;
    int rc = -1;
    if (!m->graph || !m->has_ir_version) {
        cg_fail(e, "%s: not an ONNX model (no %s)", path, !m->graph ? "graph" : "ir_version");
        goto done;
    }
    c.g = m->graph;
    c.opset = 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = S(m->opset_import[i]->domain);
        if ((!d[0] || !strcmp(d, "ai.onnx")) && m->opset_import[i]->has_version) c.opset = m->opset_import[i]->version;
    }
    if (!c.opset) {
        cg_fail(e, "%s: the model imports no version of the standard ONNX ops (opset_import)", path);
        goto done;
    }
    rc = convert(&c, o, spec, weights);
    if (c.oom) rc = -2;
done:
    free_ctx(&c);
    onnx__model_proto__free_unpacked(m, NULL);
    if (rc) /* names from the file are arbitrary bytes: one printable line */
        for (unsigned char *p = (unsigned char *)e->msg; *p; p++)
            if (*p < 0x20 || *p >= 0x7f) *p = '?';
    return rc;
}
