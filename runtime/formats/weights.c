/* weights.c — the tensors a spec needs: named, shaped and checked against the
 * spec's layers, taken from a safetensors file (safetensors.c) or made up from the
 * spec's seed. */
#include "weights.h"
#include "op.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One tensor the spec needs: its name, shape and the fan-in its random init uses. */
typedef struct {
    char name[CG_NAME_MAX + 8];
    int ndim;
    long long shape[4];
    long long count;
    long long fan_in;
    double lo, hi; /* hi > lo: random values uniform in [lo, hi) instead of +-1/sqrt(fan_in) */
} need;

/* Tensors one layer may need: a batchnorm's four. */
#define NEEDS_PER_LAYER 4

/* Every parameter tensor of the spec, in layer order, weight before bias:
 * "<layer>.weight" shaped as its op says (base/op.h: conv [M,C,K,K], fc
 * [out, C*H*W]) and "<layer>.bias" [rows]; biases only where the layer has
 * bias: 1. Ops without weights (softmax) have none. */
static int spec_needs(const cg_spec *s, need *out, int *n)
{
    *n = 0;
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        long long rows, fan_in;
        need *wt = &out[*n];
        memset(wt, 0, sizeof *wt);
        const cg_op_desc *d = cg_op_of(l->op);
        if (!d || !d->weight_shape || !cg_op_weights(l, &rows, &fan_in)) continue;
        if (l->op == CG_OP_BATCHNORM) {
            /* gamma, beta, running mean and variance as PyTorch names them; random
             * ones a sane batch norm: gamma in 1 +- 0.1, beta and mean in +-0.1,
             * variance in [0.5, 1.5) */
            static const char *const what[] = {"weight", "bias", "running_mean", "running_var"};
            static const double lo[] = {0.9, -0.1, -0.1, 0.5}, hi[] = {1.1, 0.1, 0.1, 1.5};
            for (int k = 0; k < 4; k++) {
                need *t = &out[(*n)++];
                memset(t, 0, sizeof *t);
                snprintf(t->name, sizeof t->name, "%s.%s", l->name, what[k]);
                t->ndim = 1, t->shape[0] = rows, t->count = rows, t->fan_in = 1;
                t->lo = lo[k], t->hi = hi[k];
            }
            continue;
        }
        wt->ndim = d->weight_shape(l, wt->shape);
        snprintf(wt->name, sizeof wt->name, "%s.weight", l->name);
        wt->count = rows * fan_in;
        wt->fan_in = fan_in;
        (*n)++;
        if (l->bias) {
            need *bs = &out[(*n)++];
            memset(bs, 0, sizeof *bs);
            snprintf(bs->name, sizeof bs->name, "%s.bias", l->name);
            bs->ndim = 1;
            bs->shape[0] = rows;
            bs->count = rows;
            bs->fan_in = fan_in;
        }
    }
    return 0;
}

/* "[a,b,c]" for messages. */
static void shape_str(int ndim, const long long *shape, char *out, size_t cap)
{
    size_t len = 0;
    out[len++] = '[';
    for (int k = 0; k < ndim && len + 24 < cap; k++)
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", k ? "," : "", shape[k]);
    snprintf(out + len, cap - len, "]");
}

/* splitmix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by the golden
 * ratio constant and mixed; plain integer arithmetic, so identical everywhere. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seeded random weights. One splitmix64 stream, state = s->seed, draws every
 * tensor of spec_needs() in order, element by element (row-major): u = top 53
 * bits / 2^53 in [0,1), value = (float)((2u - 1) / sqrt(fan_in)) with fan_in =
 * C*K*K (conv) or the fc input length, for weights and biases alike. */
static int random_weights(const cg_spec *s, const need *nd, int n, cg_weights *w, cg_err *e)
{
    w->t = calloc((size_t)(n ? n : 1), sizeof *w->t);
    if (!w->t) return cg_fail(e, "%s: out of memory for random weights", s->path);
    w->n = n;
    w->random = 1;
    uint64_t state = s->seed;
    for (int k = 0; k < n; k++) {
        cg_tensor *t = &w->t[k];
        strcpy(t->name, nd[k].name);
        t->ndim = nd[k].ndim;
        memcpy(t->shape, nd[k].shape, sizeof t->shape);
        t->count = nd[k].count;
        size_t bytes;
        if (cg_mul_size((size_t)t->count, sizeof(float), &bytes) ||
            !(t->data = malloc(bytes ? bytes : 1))) {
            cg_weights_free(w);
            return cg_fail(e, "%s: out of memory for tensor '%s'", s->path, nd[k].name);
        }
        double bound = 1.0 / sqrt((double)nd[k].fan_in);
        for (long long i = 0; i < t->count; i++) {
            double u = (double)(splitmix64(&state) >> 11) * 0x1.0p-53;
            t->data[i] = nd[k].hi > nd[k].lo ? (float)(nd[k].lo + u * (nd[k].hi - nd[k].lo))
                                             : (float)((2.0 * u - 1.0) * bound);
        }
    }
    return 0;
}

/* The loaded tensors w against the spec's needs nd: each present with its
 * shape, nothing else; errors name `name` (the file, or the bundle section). */
static int check_against_spec(const cg_spec *s, const char *name, const need *nd, int n,
                              const cg_weights *w, cg_err *e)
{
    for (int k = 0; k < n; k++) {
        char want[128], have[128];
        shape_str(nd[k].ndim, nd[k].shape, want, sizeof want);
        const cg_tensor *t = cg_weights_find(w, nd[k].name);
        if (!t)
            return cg_fail(e, "%s: tensor '%s' is missing; the spec needs %s", name, nd[k].name,
                           want);
        int same = t->ndim == nd[k].ndim;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == nd[k].shape[d];
        if (!same) {
            shape_str(t->ndim, t->shape, have, sizeof have);
            return cg_fail(e, "%s: tensor '%s' has shape %s, the spec needs %s", name,
                           nd[k].name, have, want);
        }
    }
    for (int j = 0; j < w->n; j++) {
        int used = 0;
        for (int k = 0; k < n && !used; k++) used = strcmp(w->t[j].name, nd[k].name) == 0;
        if (!used)
            return cg_fail(e, "%s: tensor '%s' is not a parameter of spec '%s' (its tensors are "
                           "<layer>.weight, <layer>.bias where bias: 1, and a batchnorm's weight, bias, "
                           "running_mean and running_var)", name,
                           w->t[j].name, s->name);
    }
    return 0;
}

int cg_weights_for_spec(const cg_spec *s, cg_weights *w, cg_err *e)
{
    memset(w, 0, sizeof *w);
    need *nd = malloc(NEEDS_PER_LAYER * CG_MAX_LAYERS * sizeof *nd);
    if (!nd) return cg_fail(e, "%s: out of memory", s->path);
    int n, rc = -1;
    spec_needs(s, nd, &n);
    if (!s->weights[0]) {
        rc = random_weights(s, nd, n, w, e);
        free(nd);
        return rc;
    }
    /* the file holds what the spec needs and a header: never read more than that */
    size_t max = 8 + CG_WEIGHTS_SLACK;
    for (int k = 0; k < n; k++) max += 4 * (size_t)nd[k].count;
    rc = cg_weights_load_max(s->weights, max, w, e) ? -1
         : check_against_spec(s, s->weights, nd, n, w, e);
    if (rc) cg_weights_free(w);
    free(nd);
    return rc;
}

int cg_weights_for_spec_bytes(const cg_spec *s, const char *name, const void *bytes, size_t len,
                              cg_weights *w, cg_err *e)
{
    memset(w, 0, sizeof *w);
    need *nd = malloc(NEEDS_PER_LAYER * CG_MAX_LAYERS * sizeof *nd);
    if (!nd) return cg_fail(e, "%s: out of memory", name);
    int n;
    spec_needs(s, nd, &n);
    int rc = cg_weights_parse(name, bytes, len, w, e) ? -1
             : check_against_spec(s, name, nd, n, w, e);
    if (rc) cg_weights_free(w);
    free(nd);
    return rc;
}

const cg_tensor *cg_weights_find(const cg_weights *w, const char *name)
{
    for (int k = 0; k < w->n; k++)
        if (strcmp(w->t[k].name, name) == 0) return &w->t[k];
    return NULL;
}

void cg_weights_free(cg_weights *w)
{
    for (int k = 0; k < w->n; k++) free(w->t[k].data);
    free(w->t);
    memset(w, 0, sizeof *w);
}

float *cg_weights_transposed(const float *p, long long rows, long long count)
{
    return cg_weights_taps(p, rows, count, 1);
}

float *cg_weights_taps(const float *p, long long rows, long long count, long long taps)
{
    if (rows < 1 || taps < 1 || count % (rows * taps)) return NULL;
    long long c = count / (rows * taps);
    float *t = malloc(count > 0 ? (size_t)count * sizeof *t : 1);
    if (!t) return NULL;
    for (long long m = 0; m < rows; m++)
        for (long long ch = 0; ch < c; ch++)
            for (long long k = 0; k < taps; k++) t[(k * c + ch) * rows + m] = p[(m * c + ch) * taps + k];
    return t;
}

float *cg_weights_fft(const float *w, long long M, long long C, long long K, int FH, int FW, long long *count)
{
    if (FH < 2 || FW < 2 || FH > 1024 || FW > 1024 || M < 1 || C < 1 || K < 1 || K > FH || K > FW) return NULL;
    const long long NV = FW / 2 + 1, NF = FH * NV;
    *count = NF * C * M * 2;
    float *g = malloc((size_t)*count * sizeof *g);
    /* e^{2 pi i k / F} for k < F, and a row's partial sums s[a][v] = sum_b w[a][b] e^{2 pi i v b / FW} */
    double *ch = malloc((size_t)(FH + FW) * 2 * sizeof *ch), *s = malloc((size_t)(K * NV) * 2 * sizeof *s);
    if (!g || !ch || !s) return free(g), free(ch), free(s), NULL;
    double *cw = ch + 2 * FH;
    const double pi = 3.14159265358979323846;
    for (int k = 0; k < FH; k++) ch[2 * k] = cos(2 * pi * k / FH), ch[2 * k + 1] = sin(2 * pi * k / FH);
    for (int k = 0; k < FW; k++) cw[2 * k] = cos(2 * pi * k / FW), cw[2 * k + 1] = sin(2 * pi * k / FW);
    for (long long m = 0; m < M; m++)
        for (long long c = 0; c < C; c++) {
            const float *f = w + (m * C + c) * K * K;
            for (long long a = 0; a < K; a++)
                for (long long v = 0; v < NV; v++) {
                    double re = 0, im = 0;
                    for (long long b = 0; b < K; b++) {
                        const long long t = (v * b) % FW;
                        re += f[a * K + b] * cw[2 * t], im += f[a * K + b] * cw[2 * t + 1];
                    }
                    s[2 * (a * NV + v)] = re, s[2 * (a * NV + v) + 1] = im;
                }
            for (long long u = 0; u < FH; u++)
                for (long long v = 0; v < NV; v++) {
                    double re = 0, im = 0;
                    for (long long a = 0; a < K; a++) {
                        const long long t = (u * a) % FH;
                        const double er = ch[2 * t], ei = ch[2 * t + 1], sr = s[2 * (a * NV + v)], si = s[2 * (a * NV + v) + 1];
                        re += er * sr - ei * si, im += er * si + ei * sr;
                    }
                    float *out = g + 2 * (((u * NV + v) * C + c) * M + m);
                    out[0] = (float)re, out[1] = (float)im;
                }
        }
    free(ch), free(s);
    return g;
}

uint16_t *cg_weights_narrowed(const float *p, long long count, cg_wdtype dtype)
{
    if (dtype != CG_W_F16 && dtype != CG_W_BF16) return NULL;
    uint16_t *h = malloc(count > 0 ? (size_t)count * sizeof *h : 1);
    if (!h) return NULL;
    for (long long i = 0; i < count; i++) h[i] = dtype == CG_W_F16 ? cg_f32_to_f16(p[i]) : cg_f32_to_bf16(p[i]);
    return h;
}

/* A new tensor `name` of count floats (shape [count]) at the end of w's list,
 * or NULL when out of memory. w->t has room (the caller allocated it). */
static cg_tensor *add_tensor(cg_weights *w, const char *layer, const char *what, long long count)
{
    cg_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%.*s.%s", CG_NAME_MAX - 1, layer, what);
    t->ndim = 1, t->shape[0] = count, t->count = count, t->dtype = CG_W_F32;
    if (!(t->data = malloc((size_t)(count > 0 ? count : 1) * sizeof *t->data))) return NULL;
    w->n++;
    return t;
}

/* The tensor "<layer>.<what>" of w, NULL when absent. */
static cg_tensor *find_of(const cg_weights *w, const char *layer, const char *what)
{
    char name[CG_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    return (cg_tensor *)cg_weights_find(w, name);
}

/* Remove "<layer>.<what>" from w (the last tensor takes its place). */
static void drop(cg_weights *w, const char *layer, const char *what)
{
    cg_tensor *t = find_of(w, layer, what);
    if (!t) return;
    free(t->data);
    *t = w->t[--w->n];
}

int cg_weights_fold_bn(const cg_spec *s, const cg_weights *in, cg_weights *out, cg_err *e)
{
    memset(out, 0, sizeof *out);
    out->random = in->random, out->bn_folded = 1;
    /* room for every tensor of in plus a bias per conv */
    if (!(out->t = calloc((size_t)in->n + CG_MAX_LAYERS + 1, sizeof *out->t)))
        return cg_fail(e, "%s: out of memory folding batch norms", s->path);
    for (int k = 0; k < in->n; k++) {
        const cg_tensor *t = &in->t[k];
        cg_tensor *c = &out->t[out->n];
        *c = *t;
        if (!(c->data = malloc((size_t)(t->count > 0 ? t->count : 1) * sizeof *c->data))) {
            cg_weights_free(out);
            return cg_fail(e, "%s: out of memory folding batch norms", s->path);
        }
        memcpy(c->data, t->data, (size_t)t->count * sizeof *c->data);
        out->n++;
    }
    static const char *const what[] = {"weight", "bias", "running_mean", "running_var"};
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        if (l->op != CG_OP_BATCHNORM) continue;
        const cg_tensor *bt[4];
        for (int k = 0; k < 4; k++)
            if (!(bt[k] = find_of(in, l->name, what[k])) || bt[k]->count != l->C) {
                cg_weights_free(out);
                return cg_fail(e, "%s: batchnorm '%s' needs tensor '%s.%s' of %d values", s->path, l->name,
                               l->name, what[k], l->C);
            }
        const float *g = bt[0]->data, *be = bt[1]->data, *mu = bt[2]->data, *var = bt[3]->data;
        if (!cg_bn_folds(s, i)) {
            /* its own kernel: weight = a, bias = t; the running statistics go */
            cg_tensor *wa = find_of(out, l->name, "weight"), *wb = find_of(out, l->name, "bias");
            for (int c = 0; c < l->C; c++) {
                double a = (double)g[c] / sqrt((double)var[c] + l->eps);
                wa->data[c] = (float)a, wb->data[c] = (float)((double)be[c] - (double)mu[c] * a);
            }
            drop(out, l->name, "running_mean");
            drop(out, l->name, "running_var");
            continue;
        }
        const cg_layer *cv = &s->layers[i - 1];
        cg_tensor *wt = find_of(out, cv->name, "weight"), *bs = find_of(out, cv->name, "bias");
        long long per = wt && cv->M > 0 ? wt->count / cv->M : 0;
        if (!wt || per <= 0 || (bs && bs->count != cv->M) || cv->M != l->C) {
            cg_weights_free(out);
            return cg_fail(e, "%s: conv '%s' has no weights of %d maps to fold batchnorm '%s' into", s->path,
                           cv->name, l->C, l->name);
        }
        if (!bs) {
            if (!(bs = add_tensor(out, cv->name, "bias", cv->M))) {
                cg_weights_free(out);
                return cg_fail(e, "%s: out of memory folding batch norms", s->path);
            }
            memset(bs->data, 0, (size_t)cv->M * sizeof *bs->data);
        }
        for (int m = 0; m < cv->M; m++) {
            double a = (double)g[m] / sqrt((double)var[m] + l->eps);
            for (long long j = 0; j < per; j++) wt->data[m * per + j] = (float)(wt->data[m * per + j] * a);
            bs->data[m] = (float)(((double)bs->data[m] - mu[m]) * a + be[m]);
        }
        for (int k = 0; k < 4; k++) drop(out, l->name, what[k]); /* the batchnorm runs no kernel */
    }
    return 0;
}
