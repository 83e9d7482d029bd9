/* spec.c — reads a network spec (YAML) into a cg_spec and checks everything
 * above the layers: the name, the input tensor, the dataset, weights and seed.
 * The layers are checked in spec_layers.c, the YAML itself in spec_yaml.c. */
#include "op.h"
#include "spec_yaml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NATIVE_SIDE 28 /* Fashion-MNIST images without resize */

static const char *const top_keys[] = {"network", "description", "input", "dataset",
                                       "weights", "seed",        "layers", "precision", "precision_fallback", NULL};
static const char *const input_keys[] = {"channels", "height", "width", "scale", "offset", "mean", "std", NULL};
static const char *const dataset_keys[] = {"name", "resize", NULL};

/* Bounded product, so no size arithmetic in the spec reader can overflow. */
int cg_spec_mul(long long a, long long b, long long limit, long long *out)
{
    if (a < 0 || b < 0 || (b && a > limit / b)) return -1;
    *out = a * b;
    return 0;
}

/* Reads one required int key of the input mapping into *out. */
static int input_dim(const cg_yctx *c, const cg_ynode *in, const char *key, int *out)
{
    const cg_ynode *v = cg_y_require(c, in, key, "in 'input'", NULL);
    long long x;
    if (!v || cg_y_int(c, v, key, "in 'input'", 1, CG_DIM_MAX, &x)) return -1;
    *out = (int)x;
    return 0;
}

/* 'mean' and 'std' of the input: one number per channel each (std > 0),
 * x = (pixel * scale - mean[c]) / std[c]; either may be left out (mean 0, std
 * 1), and neither goes with 'offset'. */
static int read_norm(const cg_yctx *c, const cg_ynode *in, cg_spec *s)
{
    const char *keys[] = {"mean", "std"};
    double *lists[] = {s->mean, s->std};
    for (int i = 0; i < CG_INPUT_NORM_MAX; i++) s->mean[i] = 0.0, s->std[i] = 1.0;
    for (int k = 0; k < 2; k++) {
        const cg_ynode *v = cg_y_get(in, keys[k]), *off = cg_y_get(in, "offset");
        if (!v) continue;
        if (off)
            return cg_y_fail(c, v->pos, "'%s' in 'input' goes with no 'offset' (x = (pixel * scale - mean[c]) / "
                             "std[c]; remove 'offset' at %d:%d)", keys[k], off->pos.line, off->pos.col);
        if (cg_y_kind(c, v, CG_Y_SEQ, keys[k], "in 'input'", "a list of numbers, one per channel")) return -1;
        if (s->C > CG_INPUT_NORM_MAX)
            return cg_y_fail(c, v->pos, "'%s' in 'input' is for inputs of at most %d channels, and this one has %d",
                             keys[k], CG_INPUT_NORM_MAX, s->C);
        if (v->n != (size_t)s->C)
            return cg_y_fail(c, v->pos, "'%s' in 'input' has %zu number%s; expected %d, one per channel", keys[k],
                             v->n, v->n == 1 ? "" : "s", s->C);
        for (size_t j = 0; j < v->n; j++) {
            if (cg_y_float(c, v->kids[j], keys[k], "in 'input'", &lists[k][j])) return -1;
            if (k == 1 && !(lists[k][j] > 0))
                return cg_y_fail(c, v->kids[j]->pos, "'std' in 'input' has %g for channel %zu; every std must be "
                                 "greater than 0", lists[k][j], j);
        }
        s->norm = 1;
    }
    return 0;
}

/* The 'input' mapping: tensor shape and the pixel normalisation. */
static int read_input(const cg_yctx *c, const cg_ynode *in, cg_spec *s)
{
    if (cg_y_kind(c, in, CG_Y_MAP, "input", "", "a mapping (channels, height, width)") ||
        cg_y_check_keys(c, in, input_keys, "in 'input'") || input_dim(c, in, "channels", &s->C) ||
        input_dim(c, in, "height", &s->H) || input_dim(c, in, "width", &s->W))
        return -1;
    const cg_ynode *v;
    s->scale = 1.0, s->offset = 0.0;
    if ((v = cg_y_get(in, "scale")) && cg_y_float(c, v, "scale", "in 'input'", &s->scale))
        return -1;
    if ((v = cg_y_get(in, "offset")) && cg_y_float(c, v, "offset", "in 'input'", &s->offset))
        return -1;
    if (read_norm(c, in, s)) return -1;
    long long hw, chw;
    if (cg_spec_mul(s->H, s->W, CG_ELEMS_MAX, &hw) || cg_spec_mul(s->C, hw, CG_ELEMS_MAX, &chw))
        return cg_y_fail(c, in->pos, "input %dx%dx%d has more than %lld elements per image",
                         s->C, s->H, s->W, CG_ELEMS_MAX);
    return 0;
}

/* The 'dataset' mapping, and the input shape it implies. */
static int read_dataset(const cg_yctx *c, const cg_ynode *ds, const cg_ynode *in, cg_spec *s)
{
    if (cg_y_kind(c, ds, CG_Y_MAP, "dataset", "", "a mapping (name, resize)") ||
        cg_y_check_keys(c, ds, dataset_keys, "in 'dataset'"))
        return -1;
    const cg_ynode *v = cg_y_require(c, ds, "name", "in 'dataset'", "fashion-mnist");
    if (!v || cg_y_str(c, v, "name", "in 'dataset'", s->dataset, sizeof s->dataset)) return -1;
    if (strcmp(s->dataset, "fashion-mnist")) {
        char show[80];
        return cg_y_fail(c, v->pos, "unknown dataset '%s' (the only dataset known is fashion-mnist)",
                         cg_y_show(s->dataset, show, sizeof show));
    }
    long long side = NATIVE_SIDE;
    if ((v = cg_y_get(ds, "resize"))) {
        if (cg_y_int(c, v, "resize", "in 'dataset'", 1, 4096, &side)) return -1;
        s->resize = (int)side;
    }
    if (s->C != 1)
        return cg_y_fail(c, cg_y_get(in, "channels")->pos,
                         "'channels' in 'input' is %d, but dataset fashion-mnist has 1 channel",
                         s->C);
    const char *dims[] = {"height", "width"};
    int have[] = {s->H, s->W};
    for (int i = 0; i < 2; i++)
        if (have[i] != side)
            return cg_y_fail(c, cg_y_get(in, dims[i])->pos,
                             "'%s' in 'input' is %d, but the dataset images are %lldx%lld%s",
                             dims[i], have[i], side, side,
                             s->resize ? " (dataset resize)" : " (set dataset resize to change it)");
    return 0;
}

/* 'weights': a path relative to the spec's own directory (the file need not
 * exist yet; the runtime opens it). */
static int read_weights(const cg_yctx *c, const cg_ynode *v, cg_spec *s)
{
    char w[CG_PATH_MAX];
    if (cg_y_str(c, v, "weights", "", w, sizeof w)) return -1;
    if (!w[0]) return cg_y_fail(c, v->pos, "'weights' is empty (expected a file path)");
    s->weights_pos = v->pos;
    const char *slash = strrchr(s->path, '/');
    size_t dir = w[0] == '/' || !slash ? 0 : (size_t)(slash - s->path) + 1;
    if (dir + strlen(w) >= sizeof s->weights)
        return cg_y_fail(c, v->pos, "'weights' path is too long (at most %d bytes with the spec's directory)",
                         CG_PATH_MAX - 1);
    memcpy(s->weights, s->path, dir);
    strcpy(s->weights + dir, w);
    return 0;
}

/* `precision_fallback:` — fp32 or fp16, on a bf16 network: the precision a target
 * without BF16 (below sm_80) is generated in instead of refusing the network. */
static int read_fallback(const cg_yctx *c, const cg_ynode *v, cg_spec *s)
{
    cg_precision p;
    if (cg_spec_read_precision(c, v, "in precision_fallback", &p)) return -1;
    if (p != CG_PREC_FP32 && p != CG_PREC_FP16)
        return cg_y_fail(c, v->pos, "precision_fallback %s: expected fp32 or fp16 (what a target without bf16 runs "
                         "instead)", cg_precision_name(p));
    if (s->precision != CG_PREC_BF16)
        return cg_y_fail(c, v->pos, "precision_fallback applies to a network of precision bf16 (the precision a "
                         "target below sm_80 refuses); this network's precision is %s", cg_precision_name(s->precision));
    s->precision_fallback = 1 + (int)p;
    return 0;
}

/* Everything of a spec, in a fixed order so the first error is always the same. */
static int read_spec(const cg_yctx *c, const cg_ynode *root, cg_spec *s)
{
    char what[128];
    if (root->kind != CG_Y_MAP)
        return cg_y_fail(c, root->pos,
                         "a spec must be a mapping of keys (network, input, dataset, layers), got %s",
                         cg_y_what(root, what, sizeof what));
    if (cg_y_check_keys(c, root, top_keys, "at top level")) return -1;
    const cg_ynode *v = cg_y_require(c, root, "network", "at top level", NULL);
    if (!v || cg_y_ident(c, v, "network", "", 1, s->name, sizeof s->name)) return -1;
    if ((v = cg_y_get(root, "description")) &&
        cg_y_str(c, v, "description", "", s->description, sizeof s->description))
        return -1;
    const cg_ynode *in = cg_y_require(c, root, "input", "at top level", NULL);
    if (!in || read_input(c, in, s)) return -1;
    /* no dataset: the images come from --random-input (any channel count) */
    if ((v = cg_y_get(root, "dataset")) && read_dataset(c, v, in, s)) return -1;
    if ((v = cg_y_get(root, "weights")) && read_weights(c, v, s)) return -1;
    s->seed = 1;
    if ((v = cg_y_get(root, "seed")) && cg_y_u64(c, v, "seed", "", &s->seed)) return -1;
    s->precision = CG_PREC_FP32;
    if ((v = cg_y_get(root, "precision")) && cg_spec_read_precision(c, v, "", &s->precision)) return -1;
    s->precision_fallback = 0;
    if ((v = cg_y_get(root, "precision_fallback")) && read_fallback(c, v, s)) return -1;
    v = cg_y_require(c, root, "layers", "at top level", NULL);
    return !v || cg_spec_read_layers(c, v, s) ? -1 : 0;
}

int cg_spec_parse(const char *path, const char *text, size_t len, cg_spec *out, cg_err *e)
{
    cg_yctx c = {path, e};
    cg_pos one = {1, 1};
    memset(out, 0, sizeof *out);
    if (strlen(path) >= sizeof out->path)
        return cg_y_fail(&c, one, "spec path is longer than %d bytes", CG_PATH_MAX - 1);
    /* the path is written into generated code (header comments): no line breaks there */
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cg_y_fail(&c, one, "the spec's path contains control character 0x%02x; "
                             "rename the file", (unsigned)(unsigned char)*p);
    strcpy(out->path, path);
    cg_ynode *root;
    if (cg_yaml_load(&c, text, len, &root)) return -1;
    int empty = !root || (root->kind == CG_Y_SCALAR && root->plain && root->len == 0);
    int rc = empty ? cg_y_fail(&c, root ? root->pos : one,
                               "spec is empty (expected a mapping with network, input, dataset and layers)")
                   : read_spec(&c, root, out);
    cg_yaml_free(root);
    return rc;
}

int cg_spec_load(const char *path, cg_spec *out, cg_err *e)
{
    cg_yctx c = {path, e};
    cg_pos one = {1, 1};
    cg_buf text;
    cg_err why;
    /* a FIFO, directory or device is refused before anything waits on it */
    if (cg_read_file_max(path, CG_SPEC_BYTES_MAX, &text, &why)) {
        const char *msg = why.msg;
        size_t plen = strlen(path);
        if (!strncmp(msg, path, plen) && msg[plen] == ':' && msg[plen + 1] == ' ') msg += plen + 2;
        if (strstr(msg, "more than the")) return cg_y_fail(&c, one, "spec is larger than the 1 MiB limit");
        if (!strncmp(msg, "cannot open: ", 13)) return cg_y_fail(&c, one, "cannot open spec: %s", msg + 13);
        return cg_y_fail(&c, one, "cannot read spec: %s", msg);
    }
    int rc = cg_spec_parse(path, text.data, text.len, out, e);
    cg_buf_free(&text);
    return rc;
}

const char *cg_precision_name(cg_precision p)
{
    switch (p) {
    case CG_PREC_FP32: return "fp32";
    case CG_PREC_TF32: return "tf32";
    case CG_PREC_BF16: return "bf16";
    case CG_PREC_FP16: return "fp16";
    }
    return "?";
}

const char *cg_precision_dtype(cg_precision p)
{
    return p == CG_PREC_BF16 ? "bf16" : p == CG_PREC_FP16 ? "f16" : "f32";
}

/* precision p, or fallback (1 + a cg_precision; 0: none) where p is bf16 and cc cannot run it */
static cg_precision precision_on(cg_precision p, int fallback, int cc)
{
    return p == CG_PREC_BF16 && cc < CG_BF16_MIN_CC && fallback > 0 ? (cg_precision)(fallback - 1) : p;
}

cg_precision cg_layer_precision_on(const cg_layer *l, int cc)
{
    return precision_on(l->precision, l->precision_fallback, cc);
}

cg_precision cg_spec_precision_on(const cg_spec *s, int cc)
{
    return precision_on(s->precision, s->precision_fallback, cc);
}

const char *cg_act_name(cg_act a)
{
    switch (a) {
    case CG_ACT_NONE: return "none";
    case CG_ACT_TANH: return "tanh";
    case CG_ACT_RELU: return "relu";
    case CG_ACT_RELU6: return "relu6";
    case CG_ACT_SIGMOID: return "sigmoid";
    }
    return "?";
}

const char *cg_op_name(cg_op o)
{
    const cg_op_desc *d = cg_op_of(o);
    return d ? d->name : "?";
}

const char *cg_pool_name(const cg_layer *l)
{
    if (!l->pool) return "none";
    switch (l->pool_op) {
    case CG_POOL_MAX: return "max";
    case CG_POOL_AVG: return "avg";
    case CG_POOL_GLOBAL_AVG: return "global_avg";
    }
    return "?";
}

int cg_conv_dims(const cg_layer *l, int *ch, int *cw, int *oh, int *ow)
{
    long long s = l->stride > 0 ? l->stride : 1;
    long long ph = (long long)l->H + l->pad[0] + l->pad[2], pw = (long long)l->W + l->pad[1] + l->pad[3];
    if (l->K <= 0 || l->H <= 0 || l->W <= 0 || l->stride < 0 || ph < l->K || pw < l->K) return -1;
    for (int i = 0; i < 4; i++)
        if (l->pad[i] < 0 || l->pad[i] >= l->K) return -1;
    *ch = (int)((ph - l->K) / s + 1), *cw = (int)((pw - l->K) / s + 1);
    *oh = *ch, *ow = *cw;
    if (!l->pool) return 0;
    if (l->pool_op == CG_POOL_GLOBAL_AVG) {
        *oh = *ow = 1;
        return 0;
    }
    int k = l->pool, ps = l->pool_stride > 0 ? l->pool_stride : l->pool, pp = l->pool_pad;
    if (k < 1 || l->pool_stride < 0 || pp < 0 || pp > k / 2 || *ch < k || *cw < k) return -1;
    *oh = (*ch + 2 * pp - k) / ps + 1, *ow = (*cw + 2 * pp - k) / ps + 1;
    return 0;
}

int cg_bn_folds(const cg_spec *s, int i)
{
    if (i <= 0 || i >= s->nlayers || s->layers[i].op != CG_OP_BATCHNORM || s->layers[i - 1].op != CG_OP_CONV)
        return 0;
    int in[CG_MAX_INPUTS];
    if (cg_layer_inputs(s, i, in) != 1 || in[0] != i - 1) return 0; /* it reads the conv just before it */
    for (int j = 0; j < s->nlayers; j++) {                          /* and nothing else reads that conv */
        int n = j == i ? 0 : cg_layer_inputs(s, j, in);
        for (int k = 0; k < n; k++)
            if (in[k] == i - 1) return 0;
    }
    return 1;
}

void cg_spec_run_layer(const cg_spec *s, int i, int folded, cg_layer *out)
{
    *out = s->layers[i];
    if (!folded) return;
    if (cg_bn_folds(s, i + 1)) out->bias = 1, out->act = s->layers[i + 1].act;
    if (cg_bn_folds(s, i)) out->bn_folded = 1;
}

void cg_conv_tag(const cg_layer *l, char *out, size_t n)
{
    size_t at = 0;
    out[0] = 0;
    if (l->pad[0] || l->pad[1] || l->pad[2] || l->pad[3])
        at += (size_t)snprintf(out + at, n - at, " pad=%d,%d,%d,%d", l->pad[0], l->pad[1], l->pad[2], l->pad[3]);
    if (at < n && l->stride > 1) at += (size_t)snprintf(out + at, n - at, " stride=%d", l->stride);
    if (at < n && l->groups > 1) at += (size_t)snprintf(out + at, n - at, " groups=%d", l->groups);
    int ps = l->pool_stride > 0 ? l->pool_stride : l->pool;
    if (at >= n || !l->pool || (l->pool_op == CG_POOL_MAX && l->pool == 2 && ps == 2 && !l->pool_pad)) return;
    if (l->pool_op == CG_POOL_GLOBAL_AVG) snprintf(out + at, n - at, " pool=global_avg");
    else if (l->pool_pad) snprintf(out + at, n - at, " pool=%s%d/%d/p%d", cg_pool_name(l), l->pool, ps, l->pool_pad);
    else snprintf(out + at, n - at, " pool=%s%d/%d", cg_pool_name(l), l->pool, ps);
}

int cg_layer_groups(const cg_layer *l) { return l->groups > 1 ? l->groups : 1; }

long long cg_layer_out_elems(const cg_layer *l) { return (long long)l->OC * l->OH * l->OW; }

long long cg_layer_in_elems(const cg_layer *l) { return (long long)l->C * l->H * l->W; }

int cg_layer_inputs(const cg_spec *s, int i, int out[CG_MAX_INPUTS])
{
    const cg_layer *l = &s->layers[i];
    if (l->ninputs <= 0 || l->ninputs > CG_MAX_INPUTS) {
        out[0] = i - 1;
        return 1;
    }
    for (int k = 0; k < l->ninputs; k++) out[k] = l->inputs[k];
    return l->ninputs;
}

const cg_bucket_tuned *cg_spec_bucket_tuned(const cg_spec *s, int i, int bucket)
{
    for (int j = 0; bucket > 0 && j < s->nbucket_tuned; j++)
        if (s->bucket_tuned[j].layer == i && s->bucket_tuned[j].bucket == bucket) return &s->bucket_tuned[j];
    return NULL;
}
