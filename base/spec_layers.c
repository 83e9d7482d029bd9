/* spec_layers.c — reads the 'layers' sequence of a spec: each layer's keys and
 * values, and the shape arithmetic that chains one layer's output to the next
 * layer's input. Everything the generator and runtime later rely on about
 * shapes is decided here. */
#include "op.h"
#include "spec_yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const acts[] = {"none", "tanh", "relu", "relu6", "sigmoid", NULL}; /* cg_act order */
/* the words an unknown pool is compared with (maxK and avgK stand for any window side K) */
static const char *const pools[] = {"none", "max2", "avg2", "maxK", "avgK", "global_avg", NULL};
#define ALL_KEYS_MAX 64 /* the union of the ops' keys */

/* What one layer needs to know about the one before it, and about every
 * layer before it (a layer may read any earlier layer's output). */
typedef struct {
    int C, H, W;
    const char *who; /* "the input" or "layer 'conv1'", for messages */
    char buf[96];
    int flat[CG_MAX_LAYERS]; /* layer j's output is flat (no maps a conv may read) */
    const cg_ynode *seq;     /* the layers, for the names of those not read yet */
} prev_shape;

/* Refuses keys that exist but belong to another op (e.g. 'out' on a conv). */
static int check_op_keys(const cg_yctx *c, const cg_ynode *map, cg_op op, const char *where)
{
    const char *const *allowed = cg_ops[op].keys;
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const char *k = map->kids[i]->text;
        int ok = !strcmp(k, "input"); /* every op's: the tensors it reads */
        for (int j = 0; allowed[j] && !ok; j++) ok = !strcmp(k, allowed[j]);
        if (ok) continue;
        char words[200] = "";
        for (int j = 0; allowed[j]; j++)
            snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s", j ? ", " : "",
                     allowed[j]);
        return cg_y_fail(c, map->kids[i]->pos, "key '%s' is not allowed for op %s %s (allowed: %s)",
                         k, cg_ops[op].name, where, words);
    }
    return 0;
}

/* Every key of any op, once each, in table order (NULL-terminated). */
static void all_op_keys(const char *out[ALL_KEYS_MAX + 1])
{
    int n = 0;
    for (int op = 0; op < CG_OP_COUNT; op++)
        for (const char *const *k = cg_ops[op].keys; *k; k++) {
            int seen = 0;
            for (int j = 0; j < n && !seen; j++) seen = !strcmp(out[j], *k);
            if (!seen && n < ALL_KEYS_MAX) out[n++] = *k;
        }
    if (n < ALL_KEYS_MAX) out[n++] = "input";
    out[n] = NULL;
}

/* Reads a required int 1..CG_DIM_MAX; hint says what it is when it is missing. */
static int req_dim(const cg_yctx *c, const cg_ynode *map, const char *key, const char *where,
                   const char *hint, int *out)
{
    const cg_ynode *v = cg_y_require(c, map, key, where, hint);
    long long x;
    if (!v || cg_y_int(c, v, key, where, 1, CG_DIM_MAX, &x)) return -1;
    *out = (int)x;
    return 0;
}

/* bias and activation, shared by conv and fc. */
static int read_bias_act(const cg_yctx *c, const cg_ynode *map, const char *where, cg_layer *l)
{
    const cg_ynode *v;
    int a = CG_ACT_NONE;
    if ((v = cg_y_get(map, "bias")) && cg_y_bool(c, v, "bias", where, &l->bias)) return -1;
    if ((v = cg_y_get(map, "activation")) && cg_y_enum(c, v, "activation", where, acts, &a))
        return -1;
    l->act = (cg_act)a;
    return 0;
}

/* cg_precision order */
static const char *const precisions[] = {"fp32", "tf32", "bf16", "fp16", NULL};

int cg_spec_read_precision(const cg_yctx *c, const cg_ynode *v, const char *where, cg_precision *out)
{
    int p = -1;
    char show[80];
    for (int i = 0; precisions[i] && v->kind == CG_Y_SCALAR; i++)
        if (!strcmp(v->text, precisions[i])) p = i;
    if (p < 0) {
        if (v->kind != CG_Y_SCALAR) return cg_y_enum(c, v, "precision", where, precisions, &p); /* its type error */
        const char *near = cg_y_suggest(v->text, precisions);
        return cg_y_fail(c, v->pos, "unknown precision '%s'%s%s (expected fp32, tf32, bf16 or fp16%s%s%s)",
                         cg_y_show(v->text, show, sizeof show), *where ? " " : "", where,
                         near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    *out = (cg_precision)p;
    return 0;
}

/* 'params': identifier -> integer 0..65536 (0 for off switches), kept with positions for the template. */
static int read_params(const cg_yctx *c, const cg_ynode *map, const char *where, cg_layer *l)
{
    const cg_ynode *p = cg_y_get(map, "params");
    l->params_pos = l->pos;
    if (!p) return 0;
    if (cg_y_kind(c, p, CG_Y_MAP, "params", where, "a mapping of parameter names to integers"))
        return -1;
    l->params_pos = p->pos;
    char pwhere[128], show[80];
    snprintf(pwhere, sizeof pwhere, "in 'params' of %s", where + 3); /* skip "in " */
    for (size_t i = 0; i + 1 < p->n; i += 2) {
        const cg_ynode *k = p->kids[i], *v = p->kids[i + 1];
        if (l->nparams == CG_MAX_PARAMS)
            return cg_y_fail(c, k->pos, "more than %d params %s", CG_MAX_PARAMS, where);
        if (!cg_y_is_ident(k->text, 0) || k->len >= CG_NAME_MAX)
            return cg_y_fail(c, k->pos,
                             "parameter name '%s' %s must match [a-z_][a-z0-9_]* (at most %d characters)",
                             cg_y_show(k->text, show, sizeof show), where, CG_NAME_MAX - 1);
        cg_param *q = &l->params[l->nparams++];
        if (cg_y_int(c, v, k->text, pwhere, 0, CG_DIM_MAX, &q->value)) return -1;
        strcpy(q->key, k->text);
        q->key_pos = k->pos, q->pos = v->pos;
    }
    return 0;
}

/* 'stride' (default 1) and 'padding' (default 0): one integer for every side,
 * [top, left, bottom, right], or same (odd K, stride 1: (K-1)/2 on every side).
 * Each side is below K, so every conv output sees at least one input pixel. */
static int read_pad_stride(const cg_yctx *c, const cg_ynode *map, const char *where, cg_layer *l)
{
    const cg_ynode *v = cg_y_get(map, "stride");
    long long x;
    l->stride = 1;
    if (v) {
        if (v->kind == CG_Y_SCALAR && v->plain && !strcmp(v->text, "0"))
            return cg_y_fail(c, v->pos, "'stride' %s is 0; a stride is at least 1", where);
        if (cg_y_int(c, v, "stride", where, 1, CG_DIM_MAX, &x)) return -1;
        l->stride = (int)x;
    }
    v = cg_y_get(map, "padding");
    if (!v) return 0;
    if (v->kind == CG_Y_SCALAR && (!strcmp(v->text, "same") || !strcmp(v->text, "valid"))) {
        if (!strcmp(v->text, "valid")) return 0;
        if (l->K % 2 == 0)
            return cg_y_fail(c, v->pos, "padding 'same' %s needs an odd K, and K is %d "
                             "(write the four sides: [top, left, bottom, right])", where, l->K);
        if (l->stride != 1)
            return cg_y_fail(c, v->pos, "padding 'same' %s needs stride 1, and stride is %d "
                             "(write the padding as a number)", where, l->stride);
        for (int i = 0; i < 4; i++) l->pad[i] = (l->K - 1) / 2;
        return 0;
    }
    static const char *const sides[] = {"top", "left", "bottom", "right"};
    const cg_ynode *items[4] = {v, v, v, v};
    if (v->kind == CG_Y_SEQ) {
        if (v->n != 4)
            return cg_y_fail(c, v->pos, "'padding' %s has %zu numbers; expected one, or four: "
                             "[top, left, bottom, right]", where, v->n);
        for (int i = 0; i < 4; i++) items[i] = v->kids[i];
    } else if (v->kind != CG_Y_SCALAR) {
        return cg_y_kind(c, v, CG_Y_SCALAR, "padding", where,
                         "an integer, [top, left, bottom, right], same or valid");
    } else if (!v->plain || !(v->text[0] == '-' || (v->text[0] >= '0' && v->text[0] <= '9'))) {
        char show[80];
        return cg_y_fail(c, v->pos, "unknown padding '%s' %s (expected an integer, "
                         "[top, left, bottom, right], same or valid)",
                         cg_y_show(v->text, show, sizeof show), where);
    }
    for (int i = 0; i < 4; i++) {
        if (cg_y_int(c, items[i], "padding", where, 0, CG_DIM_MAX, &x)) return -1;
        if (x >= l->K)
            return cg_y_fail(c, items[i]->pos, "padding%s%s %s is %lld, not below K = %d "
                             "(an output would see only zeros)", v->kind == CG_Y_SEQ ? " " : "",
                             v->kind == CG_Y_SEQ ? sides[i] : "", where, x, l->K);
        l->pad[i] = (int)x;
    }
    return 0;
}

/* 'pool' (none, maxK, avgK, global_avg; max2 is the 2x2 max of old) and, for maxK
 * and avgK, 'pool_stride' (default K). The pooled output of h x w must not be empty. */
static int read_pool(const cg_yctx *c, const cg_ynode *map, const char *where, int ch, int cw,
                     cg_layer *l)
{
    const cg_ynode *v = cg_y_get(map, "pool"), *sv = cg_y_get(map, "pool_stride"),
                   *pv = cg_y_get(map, "pool_padding");
    l->pool = 0, l->pool_stride = 0, l->pool_op = CG_POOL_MAX;
    int side = 0, op = -1;
    if (v && v->kind == CG_Y_SCALAR && (!strncmp(v->text, "max", 3) || !strncmp(v->text, "avg", 3)) &&
        v->text[3] >= '1' && v->text[3] <= '9' && strspn(v->text + 3, "0123456789") == v->len - 3 &&
        v->len <= 8) {
        op = v->text[0] == 'm' ? CG_POOL_MAX : CG_POOL_AVG;
        side = atoi(v->text + 3);
    } else if (v) {
        int which;
        if (cg_y_enum(c, v, "pool", where, pools, &which)) return -1;
        if (which == 3 || which == 4)
            return cg_y_fail(c, v->pos, "pool '%s' %s: write the window side for K (max2, avg3, ...)",
                             v->text, where);
        if (which == 5) op = CG_POOL_GLOBAL_AVG;
    }
    if (sv && (op < 0 || op == CG_POOL_GLOBAL_AVG))
        return cg_y_fail(c, sv->pos, "'pool_stride' %s needs pool maxK or avgK (the pool is %s)", where,
                         v ? v->text : "none");
    if (pv && (op < 0 || op == CG_POOL_GLOBAL_AVG))
        return cg_y_fail(c, pv->pos, "'pool_padding' %s needs pool maxK or avgK (the pool is %s)", where,
                         v ? v->text : "none");
    if (op < 0) return 0;
    if (op == CG_POOL_GLOBAL_AVG) {
        l->pool = 1, l->pool_op = CG_POOL_GLOBAL_AVG;
        return 0;
    }
    if (side < 2)
        return cg_y_fail(c, v->pos, "pool %s %s has a window of 1 (it would change nothing); "
                         "the window side is at least 2", v->text, where);
    long long ps = side;
    if (sv && cg_y_int(c, sv, "pool_stride", where, 1, CG_DIM_MAX, &ps)) return -1;
    long long pp = 0;
    if (pv && cg_y_int(c, pv, "pool_padding", where, 0, CG_DIM_MAX, &pp)) return -1;
    if (pp > side / 2)
        return cg_y_fail(c, pv->pos, "'pool_padding' %s is %lld, more than half the window side %d "
                         "(a window could then hold only padding)", where, pp, side);
    l->pool_pad = (int)pp;
    if (ch < side || cw < side)
        return cg_y_fail(c, v->pos, "pool %s %s needs a conv output of at least %dx%d, got %dx%d",
                         v->text, where, side, side, ch, cw);
    l->pool = side, l->pool_stride = (int)ps, l->pool_op = (cg_pool_op)op;
    return 0;
}

/* A layer's optional `strategy` (an identifier; default auto) and its `params`. */
static int read_strategy(const cg_yctx *c, const cg_ynode *map, const char *where, cg_layer *l)
{
    const cg_ynode *v = cg_y_get(map, "strategy");
    if (v) {
        if (cg_y_ident(c, v, "strategy", where, 0, l->strategy, sizeof l->strategy)) return -1;
        l->strategy_pos = v->pos;
    } else {
        snprintf(l->strategy, sizeof l->strategy, "auto");
        l->strategy_pos = l->pos;
    }
    return read_params(c, map, where, l);
}

/* A conv layer: its written C/H/W must agree with what flows in, K must fit,
 * and every tensor it makes must stay within CG_ELEMS_MAX per image. */
int cg_spec_read_conv(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l)
{
    static const char *const dims[] = {"C", "H", "W"};
    static const char *const dim_words[] = {"channels", "height", "width"};
    int have[] = {l->C, l->H, l->W};
    for (int i = 0; i < 3; i++) {
        const cg_ynode *v = cg_y_get(map, dims[i]);
        long long x;
        if (!v) continue;
        if (cg_y_int(c, v, dims[i], where, 1, CG_DIM_MAX, &x)) return -1;
        if (x != have[i])
            return cg_y_fail(c, v->pos, "'%s' %s is %lld, but %s has %s %d (C, H, W are the layer's input)",
                             dims[i], where, x, who, dim_words[i], have[i]);
    }
    if (req_dim(c, map, "M", where, "output maps, 1..65536", &l->M) ||
        req_dim(c, map, "K", where, "kernel side, 1..65536", &l->K)) return -1;
    const cg_ynode *kv = cg_y_get(map, "K");
    if (read_pad_stride(c, map, where, l)) return -1;
    int ph = l->H + l->pad[0] + l->pad[2], pw = l->W + l->pad[1] + l->pad[3];
    int padded = l->pad[0] || l->pad[1] || l->pad[2] || l->pad[3];
    if (l->K > ph || l->K > pw)
        return cg_y_fail(c, kv->pos, "'K' %s is %d, larger than the layer's input %s %d%s", where,
                         l->K, l->K > ph ? "height" : "width", l->K > ph ? ph : pw,
                         padded ? " with its padding" : "");
    if (read_bias_act(c, map, where, l)) return -1;
    /* groups (default 1): map m reads channels [g*C/G, (g+1)*C/G) of its group g */
    const cg_ynode *gv = cg_y_get(map, "groups");
    l->groups = 1;
    if (gv) {
        long long gx;
        if (cg_y_int(c, gv, "groups", where, 1, CG_DIM_MAX, &gx)) return -1;
        if (l->C % gx || l->M % gx)
            return cg_y_fail(c, gv->pos, "'groups' %s is %lld, which must divide C = %d (from %s) and M = %d",
                             where, gx, l->C, who, l->M);
        l->groups = (int)gx;
    }
    int oh = (ph - l->K) / l->stride + 1, ow = (pw - l->K) / l->stride + 1;
    long long hw, elems, ck, cKK, weights;
    if (cg_spec_mul(oh, ow, CG_ELEMS_MAX, &hw) || cg_spec_mul(l->M, hw, CG_ELEMS_MAX, &elems))
        return cg_y_fail(c, cg_y_get(map, "M")->pos,
                         "%s: output %dx%dx%d has more than %lld elements per image", where + 3, l->M,
                         oh, ow, CG_ELEMS_MAX);
    if (cg_spec_mul(l->C / l->groups, l->K, CG_ELEMS_MAX, &ck) || cg_spec_mul(ck, l->K, CG_ELEMS_MAX, &cKK) ||
        cg_spec_mul(cKK, l->M, CG_ELEMS_MAX, &weights))
        return cg_y_fail(c, cg_y_get(map, "M")->pos,
                         "%s: weights %dx%dx%dx%d have more than %lld elements", where + 3, l->M,
                         l->C / l->groups, l->K, l->K, CG_ELEMS_MAX);
    if (read_pool(c, map, where, oh, ow, l)) return -1;
    int ch, cw;
    if (cg_conv_dims(l, &ch, &cw, &oh, &ow)) /* unreachable: every size was checked above */
        return cg_y_fail(c, l->pos, "%s: no output shape", where + 3);
    l->OC = l->M, l->OH = oh, l->OW = ow;
    /* optional: the template conv2d_<strategy>; auto (the default) lets the templates choose */
    return read_strategy(c, map, where, l);
}

/* A fully connected layer over the previous output flattened. */
int cg_spec_read_fc(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l)
{
    (void)who;
    l->bias = 1;
    if (req_dim(c, map, "out", where, "number of outputs, 1..65536", &l->out)) return -1;
    long long hw, feat, weights;
    if (cg_spec_mul(l->H, l->W, CG_ELEMS_MAX, &hw) || cg_spec_mul(l->C, hw, CG_ELEMS_MAX, &feat) ||
        cg_spec_mul(feat, l->out, CG_ELEMS_MAX, &weights))
        return cg_y_fail(c, cg_y_get(map, "out")->pos,
                         "%s: weights %dx%lld (out x inputs) have more than %lld elements",
                         where + 3, l->out, (long long)l->C * l->H * l->W, CG_ELEMS_MAX);
    if (read_bias_act(c, map, where, l)) return -1;
    l->OC = l->out, l->OH = 1, l->OW = 1;
    /* optional: the template fc_<strategy> (default auto: vec or tiled) and its parameters */
    return read_strategy(c, map, where, l);
}

/* A batch norm: 'eps' (default 1e-5, finite and > 0) and an 'activation'
 * applied after it; the output has the input's shape. */
int cg_spec_read_bn(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l)
{
    (void)who;
    const cg_ynode *v;
    int a = CG_ACT_NONE;
    l->eps = 1e-5;
    if ((v = cg_y_get(map, "eps"))) {
        if (cg_y_float(c, v, "eps", where, &l->eps)) return -1;
        if (!(l->eps > 0))
            return cg_y_fail(c, v->pos, "'eps' %s is %g; it must be greater than 0", where, l->eps);
    }
    if ((v = cg_y_get(map, "activation")) && cg_y_enum(c, v, "activation", where, acts, &a)) return -1;
    l->act = (cg_act)a;
    l->OC = l->C, l->OH = l->H, l->OW = l->W;
    return 0;
}

/* An op that takes no keys of its own and whose output has its input's shape. */
int cg_spec_read_same(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l)
{
    (void)c, (void)map, (void)where, (void)who;
    l->OC = l->C, l->OH = l->H, l->OW = l->W;
    return 0;
}

/* add: an optional activation after the sum; the output has the inputs' shape. */
int cg_spec_read_add(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l)
{
    (void)who;
    const cg_ynode *v = cg_y_get(map, "activation");
    int a = CG_ACT_NONE;
    if (v && cg_y_enum(c, v, "activation", where, acts, &a)) return -1;
    l->act = (cg_act)a;
    l->OC = l->C, l->OH = l->H, l->OW = l->W;
    return 0;
}

/* One name of 'input' as a tensor: -1 for the network input, else the index of
 * an earlier layer. A layer's own name, a later layer's or an unknown one is
 * refused at the name. */
static int input_index(const cg_yctx *c, const cg_ynode *v, const cg_spec *s, int i, const prev_shape *in,
                       const char *where, int *out)
{
    char show[80];
    if (v->kind != CG_Y_SCALAR)
        return cg_y_kind(c, v, CG_Y_SCALAR, "input", where, "a layer name, input, or a list of names");
    if (!strcmp(v->text, "input")) return *out = -1, 0;
    for (int j = 0; j < i; j++)
        if (!strcmp(s->layers[j].name, v->text)) return *out = j, 0;
    if (!strcmp(v->text, s->layers[i].name))
        return cg_y_fail(c, v->pos, "layer '%s' cannot read its own output ('input' names a layer before it)",
                         s->layers[i].name);
    for (size_t j = (size_t)i + 1; j < in->seq->n; j++) {
        const cg_ynode *n = in->seq->kids[j]->kind == CG_Y_MAP ? cg_y_get(in->seq->kids[j], "name") : NULL;
        if (n && n->kind == CG_Y_SCALAR && !strcmp(n->text, v->text))
            return cg_y_fail(c, v->pos, "input '%s' %s is layer %zu, defined after it (a layer reads only "
                             "the input and layers before it)", v->text, where, j + 1);
    }
    const char *known[CG_MAX_LAYERS + 2];
    known[0] = "input";
    for (int j = 0; j < i; j++) known[j + 1] = s->layers[j].name;
    known[i + 1] = NULL;
    const char *near = cg_y_suggest(v->text, known);
    char hint[CG_NAME_MAX + 24] = "";
    if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
    return cg_y_fail(c, v->pos, "unknown input '%s' %s%s", cg_y_show(v->text, show, sizeof show), where, hint);
}

/* The shape of tensor j (-1: the network input) and its name in messages. */
static void tensor_shape(const cg_spec *s, int j, int *C, int *H, int *W, char *who, size_t n)
{
    if (j < 0) {
        *C = s->C, *H = s->H, *W = s->W;
        snprintf(who, n, "the input");
    } else {
        *C = s->layers[j].OC, *H = s->layers[j].OH, *W = s->layers[j].OW;
        snprintf(who, n, "layer '%s' output", s->layers[j].name);
    }
}

/* 'input': the tensors layer i reads (default: the layer before, or the network
 * input for the first) into l->inputs, and the layer's input shape from them:
 * one tensor's shape; add's inputs must share one, concat's one height and
 * width (C their channels summed). in->C/H/W/who become the first input's. */
static int read_inputs(const cg_yctx *c, const cg_ynode *item, cg_spec *s, int i, prev_shape *in,
                       const char *where, const cg_ynode *opv)
{
    cg_layer *l = &s->layers[i];
    const cg_op_desc *d = &cg_ops[l->op];
    const cg_ynode *v = cg_y_get(item, "input"), *items[CG_MAX_INPUTS];
    char hint[96];
    snprintf(hint, sizeof hint, "a list of 2 to %d layer names", d->max_inputs);
    if (!v) {
        if (d->max_inputs) return cg_y_require(c, item, "input", where, hint) ? 0 : -1;
        l->ninputs = 1, l->inputs[0] = i - 1;
    } else if (v->kind == CG_Y_SEQ) {
        if (!d->max_inputs)
            return cg_y_fail(c, v->pos, "'input' %s is a list of %zu names; a %s layer reads one tensor "
                             "(a layer name or input)", where, v->n, d->name);
        if (v->n < 2 || v->n > (size_t)d->max_inputs)
            return cg_y_fail(c, v->pos, "'input' %s names %zu tensor%s; %s takes 2 to %d", where, v->n,
                             v->n == 1 ? "" : "s", d->name, d->max_inputs);
        l->ninputs = (int)v->n;
        for (size_t k = 0; k < v->n; k++) items[k] = v->kids[k];
    } else {
        if (d->max_inputs && v->kind == CG_Y_SCALAR)
            return cg_y_fail(c, v->pos, "'input' %s names one tensor; %s takes %s", where, d->name, hint);
        l->ninputs = 1, items[0] = v;
    }
    for (int k = 0; v && k < l->ninputs; k++)
        if (input_index(c, items[k], s, i, in, where, &l->inputs[k])) return -1;
    char who0[96], whok[96];
    int C0, H0, W0;
    tensor_shape(s, l->inputs[0], &C0, &H0, &W0, who0, sizeof who0);
    long long sum = 0;
    for (int k = 0; k < l->ninputs; k++) {
        int Ck, Hk, Wk, j = l->inputs[k];
        tensor_shape(s, j, &Ck, &Hk, &Wk, whok, sizeof whok);
        const cg_ynode *at = v ? items[k] : opv;
        if (d->needs_maps && j >= 0 && in->flat[j])
            return cg_y_fail(c, opv->pos, "%s layer '%s' cannot %s %s layer '%s' (its output is flat)", d->name,
                             l->name, v ? "read" : "follow", cg_op_name(s->layers[j].op), s->layers[j].name);
        if (l->op == CG_OP_ADD && (Ck != C0 || Hk != H0 || Wk != W0))
            return cg_y_fail(c, at->pos, "add layer '%s' sums tensors of one shape: %s is %dx%dx%d, %s %dx%dx%d",
                             l->name, whok, Ck, Hk, Wk, who0, C0, H0, W0);
        if (l->op == CG_OP_CONCAT && (Hk != H0 || Wk != W0))
            return cg_y_fail(c, at->pos, "concat layer '%s' joins maps of one height and width: %s is %dx%d, "
                             "%s %dx%d", l->name, whok, Hk, Wk, who0, H0, W0);
        l->in_C[k] = Ck;
        sum += Ck;
    }
    l->C = C0, l->H = H0, l->W = W0;
    if (l->op == CG_OP_CONCAT) {
        long long hw, elems;
        if (sum > CG_DIM_MAX || cg_spec_mul(H0, W0, CG_ELEMS_MAX, &hw) || cg_spec_mul(sum, hw, CG_ELEMS_MAX, &elems))
            return cg_y_fail(c, v->pos, "concat layer '%s': output %lldx%dx%d is too large (at most %d channels, "
                             "%lld elements per image)", l->name, sum, H0, W0, CG_DIM_MAX, CG_ELEMS_MAX);
        l->C = (int)sum;
    }
    in->C = l->C, in->H = l->H, in->W = l->W;
    snprintf(in->buf, sizeof in->buf, "%s", who0);
    in->who = in->buf;
    int flat = !d->maps_out;
    for (int k = 0; k < l->ninputs; k++) flat |= l->inputs[k] >= 0 && in->flat[l->inputs[k]];
    in->flat[i] = flat;
    return 0;
}

/* One layer: name and op first (messages need them), then the op's keys. */
static int read_layer(const cg_yctx *c, const cg_ynode *item, cg_spec *s, int i, int last,
                      prev_shape *in, cg_pos *name_pos)
{
    cg_layer *l = &s->layers[i];
    char where[96], what[128];
    snprintf(where, sizeof where, "in layer %d", i + 1);
    if (item->kind != CG_Y_MAP)
        return cg_y_fail(c, item->pos, "expected a mapping (name, op, ...) for layer %d, got %s",
                         i + 1, cg_y_what(item, what, sizeof what));
    l->pos = item->pos;
    /* name the layer in unknown-key messages whenever its name is usable */
    const cg_ynode *v = cg_y_get(item, "name");
    if (v && v->kind == CG_Y_SCALAR && v->plain && v->len < CG_NAME_MAX &&
        cg_y_is_ident(v->text, 0))
        snprintf(where, sizeof where, "in layer '%s'", v->text);
    const char *all_keys[ALL_KEYS_MAX + 1], *ops[CG_OP_COUNT + 1];
    all_op_keys(all_keys);
    if (cg_y_check_keys(c, item, all_keys, where)) return -1;
    snprintf(where, sizeof where, "in layer %d", i + 1);
    v = cg_y_require(c, item, "name", where, NULL);
    if (!v || cg_y_ident(c, v, "name", where, 0, l->name, sizeof l->name)) return -1;
    name_pos[i] = v->pos;
    if (!strcmp(l->name, "input"))
        return cg_y_fail(c, v->pos, "a layer may not be named 'input' (the network's input goes by that name)");
    for (int j = 0; j < i; j++)
        if (!strcmp(s->layers[j].name, l->name))
            return cg_y_fail(c, v->pos, "duplicate layer name '%s' (first at %d:%d)", l->name,
                             name_pos[j].line, name_pos[j].col);
    snprintf(where, sizeof where, "in layer '%s'", l->name);
    int op;
    char hint[160] = "";
    cg_op_names(ops);
    for (int j = 0; ops[j]; j++) /* "conv, fc or softmax" */
        snprintf(hint + strlen(hint), sizeof hint - strlen(hint), "%s%s", !j ? "" : ops[j + 1] ? ", " : " or ",
                 ops[j]);
    v = cg_y_require(c, item, "op", where, hint);
    if (!v || cg_y_enum(c, v, "op", where, ops, &op)) return -1;
    l->op = (cg_op)op;
    const cg_op_desc *d = &cg_ops[op];
    if (check_op_keys(c, item, l->op, where)) return -1;
    if (d->last_only && !last)
        return cg_y_fail(c, v->pos, "%s layer '%s' must be the last layer", d->name, l->name);
    if (read_inputs(c, item, s, i, in, where, v)) return -1;
    if (l->op == CG_OP_BATCHNORM && l->inputs[0] >= 0 && s->layers[l->inputs[0]].op == CG_OP_CONV) {
        const cg_layer *p = &s->layers[l->inputs[0]];
        if (p->act != CG_ACT_NONE)
            return cg_y_fail(c, v->pos, "batchnorm layer '%s' follows conv layer '%s', which has activation %s: "
                             "the batchnorm folds into the conv, so the activation must come after it; "
                             "remove it from '%s' and write 'activation: %s' on '%s'", l->name, p->name,
                             cg_act_name(p->act), p->name, cg_act_name(p->act), l->name);
        if (p->pool)
            return cg_y_fail(c, v->pos, "batchnorm layer '%s' follows conv layer '%s', which has pool %s: "
                             "a conv followed by batchnorm may have no pool of its own (the batchnorm folds "
                             "into the conv; a pool after a batchnorm cannot be written yet)", l->name, p->name,
                             cg_pool_name(p));
    }
    int rc = d->read(c, item, where, in->who, l);
    if (rc) return -1;
    /* precision: the network's unless the layer (conv or fc: their keys) writes its own */
    l->precision = s->precision, l->precision_pos = l->pos;
    l->precision_fallback = s->precision_fallback;
    if ((v = cg_y_get(item, "precision"))) {
        if (cg_spec_read_precision(c, v, where, &l->precision)) return -1;
        l->precision_pos = v->pos;
        /* the tensors between layers hold the network's element type (fp32 and tf32:
         * FP32, bf16 and fp16 their 16-bit formats); a layer may change how its products
         * are computed within that type, not the type */
        if (cg_precision_dtype(l->precision) != cg_precision_dtype(s->precision))
            return cg_y_fail(c, v->pos, "layer '%s': precision %s stores %s tensors, the network's precision %s "
                             "stores %s; a layer's precision must keep the network's tensor type (write "
                             "precision: %s at network level, or %s)",
                             l->name, cg_precision_name(l->precision), cg_precision_dtype(l->precision),
                             cg_precision_name(s->precision), cg_precision_dtype(s->precision),
                             cg_precision_name(l->precision),
                             s->precision == CG_PREC_FP32 || s->precision == CG_PREC_TF32 ? "fp32 or tf32"
                                                                                            : cg_precision_name(s->precision));
    }
    return 0;
}

int cg_spec_read_layers(const cg_yctx *c, const cg_ynode *seq, cg_spec *s)
{
    if (cg_y_kind(c, seq, CG_Y_SEQ, "layers", "", "a sequence of layers")) return -1;
    if (seq->n == 0)
        return cg_y_fail(c, seq->pos, "'layers' is empty (a network needs at least one layer)");
    if (seq->n > CG_MAX_LAYERS)
        return cg_y_fail(c, seq->kids[CG_MAX_LAYERS]->pos, "more than %d layers", CG_MAX_LAYERS);
    static prev_shape zero;
    prev_shape in = zero;
    in.C = s->C, in.H = s->H, in.W = s->W, in.who = "the input", in.seq = seq;
    cg_pos name_pos[CG_MAX_LAYERS];
    for (size_t i = 0; i < seq->n; i++) {
        if (read_layer(c, seq->kids[i], s, (int)i, i + 1 == seq->n, &in, name_pos))
            return -1;
        s->nlayers = (int)i + 1;
    }
    /* every output but the last is read by some later layer */
    int used[CG_MAX_LAYERS] = {0};
    for (int i = 0; i < s->nlayers; i++)
        for (int k = 0; k < s->layers[i].ninputs; k++)
            if (s->layers[i].inputs[k] >= 0) used[s->layers[i].inputs[k]] = 1;
    for (int i = 0; i + 1 < s->nlayers; i++)
        if (!used[i])
            return cg_y_fail(c, name_pos[i], "layer '%s' output is never used (every layer but the last "
                             "must be read by a later one)", s->layers[i].name);
    return 0;
}
