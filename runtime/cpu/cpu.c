/* cpu.c — the CPU backend: the literal definition of every layer, in plain C,
 * used as the oracle the GPU kernels are checked against. Sums are accumulated
 * in double in the order the definition writes them; activations are applied
 * in double before rounding to float; pooling (max, average, global average)
 * comes after the activation, on the float values.
 * Images are independent, so every layer is parallel over images (OpenMP). */
#include "cpu.h"
#include "op.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FC_BLOCK 32       /* images per fc block: one weight row serves 32 dot products */
#define FORWARD_CHUNK 512 /* images per pass through the network in cg_cpu_forward */

/* Per-image input and output lengths, from the validated shapes in the spec. */
static size_t in_elems(const cg_layer *l) { return (size_t)l->C * l->H * l->W; }
static size_t out_elems(const cg_layer *l) { return (size_t)l->OC * l->OH * l->OW; }

/* The layer's activation, on the double sum. */
static double activate(cg_act a, double v)
{
    if (a == CG_ACT_TANH) return tanh(v);
    if (a == CG_ACT_RELU) return v > 0 ? v : 0;
    if (a == CG_ACT_RELU6) return v > 0 ? (v < 6 ? v : 6) : 0;
    if (a == CG_ACT_SIGMOID) return 1.0 / (1.0 + exp(-v));
    return v;
}

/* The tensor named "<layer>.<what>" with exactly `count` elements, or an error. */
static int get_param(const cg_layer *l, const cg_weights *w, const char *what, long long count,
                     const float **out, cg_err *e)
{
    char name[CG_NAME_MAX + 8];
    snprintf(name, sizeof name, "%s.%s", l->name, what);
    const cg_tensor *t = cg_weights_find(w, name);
    if (!t) return cg_fail(e, "layer '%s': no tensor '%s' in the weights", l->name, name);
    if (t->count != count)
        return cg_fail(e, "layer '%s': tensor '%s' has %lld elements, the layer needs %lld",
                       l->name, name, t->count, count);
    *out = t->data;
    return 0;
}

/* Threads for `work` independent items: no more than there are items, so one
 * image runs on the calling thread alone (no team started, none left spinning
 * under OpenMP's default wait policy). */
static int threads_for(long long work)
{
    int nt = omp_get_max_threads();
    return work < nt ? (work > 1 ? (int)work : 1) : nt;
}

/* The network input: pixel * scale + offset computed in double, rounded once to float. */
void cg_cpu_input(const cg_spec *s, const unsigned char *pixels, int n, float *x)
{
    size_t total = (size_t)(n > 0 ? n : 0) * s->C * s->H * s->W;
    double scale = s->scale, offset = s->offset;
    if (s->norm) {
        /* x = (pixel * scale - mean[c]) / std[c], channel c of each image's C planes */
        const size_t hw = (size_t)s->H * s->W, C = (size_t)s->C;
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
        for (size_t i = 0; i < total; i++) {
            size_t c = i / hw % C;
            x[i] = (float)((pixels[i] * scale - s->mean[c]) / s->std[c]);
        }
        return;
    }
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
    for (size_t i = 0; i < total; i++) x[i] = (float)(pixels[i] * scale + offset);
}

/* conv: z[m][i][j] = act(sum_c sum_p sum_q xp[c][i*S+p][j*S+q] * k[m][c-c0][p][q] + bias[m]),
 * where xp is the input with pad[] zeros around it (top, left, bottom, right), S
 * the stride, and c runs over m's group of channels, c0 to c0 + C/G - 1 with
 * c0 = (m / (M/G)) * C/G (all C for one group); z is rounded to float. Then the pool: y[m][oh][ow] = max or mean of
 * z over the window of side pool at (oh*pool_stride, ow*pool_stride) (the windows
 * that do not fit are dropped), or the mean of the whole map (global average);
 * y = z without a pool. plane: CH*CW doubles of scratch, one map's z.
 * Each conv row is accumulated as a whole so the per-output order of summation
 * stays c, p, q (zeros of the padding skipped) while the loop over columns vectorises. */
static void conv_image(const cg_layer *l, const float *k, const float *bias, const float *x,
                       float *y, double *plane)
{
    int chi, cwi, ohi, owi;
    (void)cg_conv_dims(l, &chi, &cwi, &ohi, &owi); /* checked by check_shape */
    const long C = l->C, H = l->H, W = l->W, K = l->K, S = l->stride > 0 ? l->stride : 1;
    const long pt = l->pad[0], pl = l->pad[1], CH = chi, CW = cwi, OH = ohi, OW = owi;
    const long PK = l->pool, PS = l->pool_stride > 0 ? l->pool_stride : l->pool, PP = l->pool_pad;
    const long G = cg_layer_groups(l), CG = C / G, MG = l->M / G; /* channels and maps per group */
    for (long m = 0; m < l->M; m++) {
        const float *km = k + m * CG * K * K;
        const long c0 = m / MG * CG; /* the first channel of m's group */
        for (long i = 0; i < CH; i++) {
            double *a = plane + i * CW;
            for (long j = 0; j < CW; j++) a[j] = 0;
            for (long c = c0; c < c0 + CG; c++)
                for (long p = 0; p < K; p++) {
                    long iy = i * S - pt + p;
                    if (iy < 0 || iy >= H) continue; /* a row of padding */
                    const float *xr = x + (c * H + iy) * W;
                    for (long q = 0; q < K; q++) {
                        double kv = km[((c - c0) * K + p) * K + q];
                        /* the columns j whose input column j*S - pl + q lies in 0..W-1 */
                        long lo = q >= pl ? 0 : (pl - q + S - 1) / S;
                        long hi = (W - 1 + pl - q) < 0 ? 0 : (W - 1 + pl - q) / S + 1;
                        if (hi > CW) hi = CW;
                        const long off = q - pl;
                        if (S == 1) {
#pragma omp simd
                            for (long j = lo; j < hi; j++) a[j] += (double)xr[j + off] * kv;
                        } else {
                            for (long j = lo; j < hi; j++) a[j] += (double)xr[j * S + off] * kv;
                        }
                    }
                }
            for (long j = 0; j < CW; j++)
                a[j] = (float)activate(l->act, bias ? a[j] + bias[m] : a[j]);
        }
        float *ym = y + m * OH * OW;
        if (!l->pool) {
            for (long i = 0; i < CH * CW; i++) ym[i] = (float)plane[i];
        } else if (l->pool_op == CG_POOL_GLOBAL_AVG) {
            double sum = 0;
            for (long i = 0; i < CH * CW; i++) sum += plane[i];
            ym[0] = (float)(sum / (double)(CH * CW));
        } else {
            for (long oh = 0; oh < OH; oh++)
                for (long ow = 0; ow < OW; ow++) {
                    /* the window's rows and columns inside the conv output (padding: max
                     * skips them, the average counts them as zeros: PK*PK divides) */
                    const long r0 = oh * PS - PP, s0 = ow * PS - PP;
                    double v = -INFINITY, sum = 0;
                    for (long r = r0; r < r0 + PK; r++)
                        for (long s = s0; s < s0 + PK; s++) {
                            if (r < 0 || r >= CH || s < 0 || s >= CW) continue;
                            double z = plane[r * CW + s];
                            sum += z;
                            if (z > v) v = z;
                        }
                    ym[oh * OW + ow] = (float)(l->pool_op == CG_POOL_AVG ? sum / (double)(PK * PK) : v);
                }
        }
    }
}

/* fc for a block of nb <= FC_BLOCK images: y[b][o] = act(sum_i W[o][i] x[b][i] + bias[o]).
 * The block is first transposed into xt[i][b] (zero-padded to FC_BLOCK) so the
 * FC_BLOCK sums advance together in SIMD lanes; each image's sum still runs over
 * i in order. */
static inline void fc_lanes(const cg_layer *l, const float *wt, const float *bias, const float *x,
                            float *y, size_t nb, float *xt, const size_t lanes)
{
    const size_t in = in_elems(l), out = (size_t)l->out;
    for (size_t i = 0; i < in; i++)
        for (size_t b = 0; b < lanes; b++) xt[i * lanes + b] = b < nb ? x[b * in + i] : 0;
    for (size_t o = 0; o < out; o++) {
        const float *row = wt + o * in;
        double acc[FC_BLOCK] = {0};
        for (size_t i = 0; i < in; i++) {
            double wv = row[i];
            const float *xi = xt + i * lanes;
#pragma omp simd
            for (size_t b = 0; b < lanes; b++) acc[b] += wv * (double)xi[b];
        }
        for (size_t b = 0; b < nb; b++)
            y[b * out + o] = (float)activate(l->act, bias ? acc[b] + bias[o] : acc[b]);
    }
}

/* A block of at most FC_LANES_SMALL images (batch 1, say) takes that many lanes,
 * not FC_BLOCK: the sums are the same, without the work of 32 images. */
#define FC_LANES_SMALL 4
static void fc_block(const cg_layer *l, const float *wt, const float *bias, const float *x,
                     float *y, size_t nb, float *xt)
{
    if (nb <= FC_LANES_SMALL) fc_lanes(l, wt, bias, x, y, nb, xt, FC_LANES_SMALL);
    else fc_lanes(l, wt, bias, x, y, nb, xt, FC_BLOCK);
}

/* softmax over one image's flattened features, in double, max subtracted first. */
static void softmax_image(size_t len, const float *x, float *y)
{
    double mx = x[0], sum = 0;
    for (size_t i = 1; i < len; i++)
        if (x[i] > mx) mx = x[i];
    for (size_t i = 0; i < len; i++) sum += exp((double)x[i] - mx);
    for (size_t i = 0; i < len; i++) y[i] = (float)(exp((double)x[i] - mx) / sum);
}

/* The spec is validated, but a hand-built layer may not be: refuse shapes that
 * would index out of bounds rather than trust them. */
static int check_shape(const cg_layer *l, cg_err *e)
{
    if (l->C <= 0 || l->H <= 0 || l->W <= 0)
        return cg_fail(e, "layer '%s': bad input shape %dx%dx%d", l->name, l->C, l->H, l->W);
    const cg_op_desc *d = cg_op_of(l->op);
    if (!d) return cg_fail(e, "layer '%s': unknown op %d", l->name, (int)l->op);
    int oc, oh, ow;
    if (d->out_shape(l, &oc, &oh, &ow, e)) return -1;
    if (l->OC != oc || l->OH != oh || l->OW != ow || oh <= 0 || ow <= 0)
        return cg_fail(e, "layer '%s': output shape %dx%dx%d, its definition gives %dx%dx%d",
                       l->name, l->OC, l->OH, l->OW, oc, oh, ow);
    return 0;
}

/* The reference of each op over n images, given its weights (wt, NULL for an
 * op without) and bias (NULL when the layer has none). */
typedef int (*reference_fn)(const cg_layer *l, const float *wt, const float *bias, const float *in, float *out,
                            int n, cg_err *e);

static int softmax_layer(const cg_layer *l, const float *wt, const float *bias, const float *in, float *out, int n,
                         cg_err *e)
{
    (void)wt, (void)bias, (void)e;
    const size_t ie = in_elems(l), oe = out_elems(l);
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
    for (int b = 0; b < n; b++) softmax_image(ie, in + (size_t)b * ie, out + (size_t)b * oe);
    return 0;
}

static int fc_layer(const cg_layer *l, const float *wt, const float *bias, const float *in, float *out, int n,
                    cg_err *e)
{
    const size_t ie = in_elems(l), oe = out_elems(l);
    int nblk = (n + FC_BLOCK - 1) / FC_BLOCK;
    int nt = threads_for(nblk);
    /* one transposed input block per thread, allocated once */
    float *xt = malloc((size_t)nt * FC_BLOCK * ie * sizeof *xt);
    if (!xt) return cg_fail(e, "layer '%s': out of memory", l->name);
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int blk = 0; blk < nblk; blk++) {
        size_t b0 = (size_t)blk * FC_BLOCK;
        size_t nb = (size_t)n - b0 < FC_BLOCK ? (size_t)n - b0 : FC_BLOCK;
        fc_block(l, wt, bias, in + b0 * ie, out + b0 * oe, nb,
                 xt + (size_t)omp_get_thread_num() * FC_BLOCK * ie);
    }
    free(xt);
    return 0;
}

static int conv_layer(const cg_layer *l, const float *wt, const float *bias, const float *in, float *out, int n,
                      cg_err *e)
{
    const size_t ie = in_elems(l), oe = out_elems(l);
    int nt = threads_for(n);
    /* one map's conv output (before the pool) per thread, allocated once */
    int ch, cw, oh, ow;
    (void)cg_conv_dims(l, &ch, &cw, &oh, &ow);
    size_t plane = (size_t)ch * (size_t)cw, bytes;
    if (cg_mul_size(plane, (size_t)nt * sizeof(double), &bytes))
        return cg_fail(e, "layer '%s': out of memory", l->name);
    double *acc = malloc(bytes);
    if (!acc) return cg_fail(e, "layer '%s': out of memory", l->name);
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int b = 0; b < n; b++)
        conv_image(l, wt, bias, in + (size_t)b * ie, out + (size_t)b * oe,
                   acc + (size_t)omp_get_thread_num() * plane);
    free(acc);
    return 0;
}

/* batchnorm with its tensors as a file holds them: y = act((x - mean[c]) /
 * sqrt(var[c] + eps) * gamma[c] + beta[c]) in double; with bn_folded (folded
 * into the conv before it) y = x. Weights folded by cg_weights_fold_bn hold
 * `weight` = gamma / sqrt(var + eps) and `bias` = beta - mean * weight (no
 * running statistics): y = act(x * weight + bias). */
static int bn_reference(const cg_layer *l, const cg_weights *w, const float *in, float *out, int n, cg_err *e)
{
    const size_t ie = in_elems(l), hw = (size_t)l->H * l->W;
    if (l->bn_folded) {
        memcpy(out, in, (size_t)n * ie * sizeof *out);
        return 0;
    }
    const float *g, *b, *mean = NULL, *var = NULL;
    char name[CG_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.running_mean", l->name);
    int raw = cg_weights_find(w, name) != NULL;
    if (get_param(l, w, "weight", l->C, &g, e) || get_param(l, w, "bias", l->C, &b, e) ||
        (raw && (get_param(l, w, "running_mean", l->C, &mean, e) || get_param(l, w, "running_var", l->C, &var, e))))
        return -1;
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
    for (int img = 0; img < n; img++)
        for (size_t i = 0; i < ie; i++) {
            size_t c = i / hw;
            double x = in[(size_t)img * ie + i];
            double y = raw ? (x - mean[c]) / sqrt((double)var[c] + l->eps) * g[c] + b[c] : x * g[c] + b[c];
            out[(size_t)img * ie + i] = (float)activate(l->act, y);
        }
    return 0;
}

/* The table's entry for batchnorm: cg_cpu_layer calls bn_reference, which reads
 * four tensors, before it would get here. */
static int batchnorm_layer(const cg_layer *l, const float *wt, const float *bias, const float *in, float *out, int n,
                           cg_err *e)
{
    (void)wt, (void)bias, (void)in, (void)out, (void)n;
    return cg_fail(e, "layer '%s': batchnorm runs through cg_cpu_layer", l->name);
}

/* The reference of an op that reads several tensors (cg_op_desc.max_inputs),
 * each n images of its own shape, in the layer's `inputs` order. */
typedef int (*graph_reference_fn)(const cg_layer *l, const float *const *in, int nin, float *out, int n, cg_err *e);

/* add: y = act(x0 + x1 + ...), summed in double in input order, rounded once. */
static int add_layer(const cg_layer *l, const float *const *in, int nin, float *out, int n, cg_err *e)
{
    (void)e;
    const size_t total = (size_t)n * out_elems(l);
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
    for (size_t i = 0; i < total; i++) {
        double v = 0;
        for (int k = 0; k < nin; k++) v += (double)in[k][i];
        out[i] = (float)activate(l->act, v);
    }
    return 0;
}

/* concat: each image's inputs one after the other (input k's in_C[k] maps
 * follow the maps of the inputs before it). */
static int concat_layer(const cg_layer *l, const float *const *in, int nin, float *out, int n, cg_err *e)
{
    (void)e;
    const size_t hw = (size_t)l->H * l->W, oe = out_elems(l);
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
    for (int b = 0; b < n; b++) {
        float *y = out + (size_t)b * oe;
        for (int k = 0; k < nin; k++) {
            size_t part = (size_t)l->in_C[k] * hw;
            memcpy(y, in[k] + (size_t)b * part, part * sizeof *y);
            y += part;
        }
    }
    return 0;
}

/* The CPU reference of every op, in the op table's order (base/op.h); the ops
 * of several inputs have theirs in graph_reference. */
#define SAME_SHAPE_REFERENCE(ID, NAME, LAST) [CG_OP_##ID] = NAME##_layer,
static const reference_fn reference[] = {[CG_OP_CONV] = conv_layer, [CG_OP_FC] = fc_layer,
                                         CG_SAME_SHAPE_OPS(SAME_SHAPE_REFERENCE)[CG_OP_BATCHNORM] = batchnorm_layer,
                                         [CG_OP_ADD] = NULL, [CG_OP_CONCAT] = NULL};
#undef SAME_SHAPE_REFERENCE
_Static_assert(sizeof reference / sizeof *reference == CG_OP_COUNT, "a CPU reference for every op");
static const graph_reference_fn graph_reference[CG_OP_COUNT] = {[CG_OP_ADD] = add_layer,
                                                                [CG_OP_CONCAT] = concat_layer};

int cg_cpu_layer_inputs(const cg_layer *l, const cg_weights *w, const float *const *in, int nin, float *out, int n,
                        cg_err *e)
{
    if (n < 0) return cg_fail(e, "layer '%s': negative image count %d", l->name, n);
    if (check_shape(l, e)) return -1;
    const cg_op_desc *d = cg_op_of(l->op);
    int want = d->max_inputs ? l->ninputs : 1;
    if (nin != want || (d->max_inputs && (nin < 2 || nin > d->max_inputs)))
        return cg_fail(e, "layer '%s': %s reads %d tensor%s, given %d", l->name, d->name, want, want == 1 ? "" : "s",
                       nin);
    if (graph_reference[l->op]) return graph_reference[l->op](l, in, nin, out, n, e);
    if (l->op == CG_OP_BATCHNORM) return bn_reference(l, w, in[0], out, n, e);
    const float *wt = NULL, *bias = NULL;
    long long rows, fan_in;
    if (cg_op_weights(l, &rows, &fan_in)) {
        if (get_param(l, w, "weight", rows * fan_in, &wt, e)) return -1;
        if (l->bias && get_param(l, w, "bias", rows, &bias, e)) return -1;
    }
    if (!reference[l->op]) return cg_fail(e, "layer '%s': op %s has no CPU reference", l->name, cg_op_name(l->op));
    return reference[l->op](l, wt, bias, in[0], out, n, e);
}

int cg_cpu_layer(const cg_layer *l, const cg_weights *w, const float *in, float *out, int n,
                 cg_err *e)
{
    return cg_cpu_layer_inputs(l, w, &in, 1, out, n, e);
}

int cg_cpu_unit(const cg_spec *s, const cg_weights *w, const cg_units *p, int u, int n, const float *const *ext,
                float **out, cg_err *e)
{
    for (int i = 0; i < s->nlayers; i++) {
        if (p->unit[i] != u) continue;
        cg_layer run;
        cg_spec_run_layer(s, i, w->bn_folded, &run);
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        const float *ins[CG_MAX_INPUTS];
        for (int k = 0; k < nin; k++) {
            ins[k] = in[k] >= 0 && p->unit[in[k]] == u ? out[in[k]] : ext[in[k] < 0 ? 0 : p->holder[in[k]] + 1];
            if (!ins[k])
                return cg_fail(e, "layer '%s': its input %s was not given", s->layers[i].name,
                               in[k] < 0 ? "(the network's)" : s->layers[in[k]].name);
        }
        if (!out[i]) return cg_fail(e, "layer '%s': no buffer for its output", s->layers[i].name);
        if (cg_cpu_layer_inputs(&run, w, ins, nin, out[i], n, e)) return -1;
    }
    return 0;
}

/* Where each tensor of a forward pass lives for one chunk of images: the
 * network input (-1) and every layer's output are given a slot of `widest`
 * floats per image, a slot used again only after the last layer reading its
 * tensor ran (a chain takes two, the input's and one more, as ping-pong
 * buffers did). A layer whose output the caller keeps (layer_out), or the last
 * layer, takes none. */
typedef struct {
    int nslots;
    int slot[CG_MAX_LAYERS + 1]; /* tensor t's slot at slot[t + 1], -1 for none */
    size_t widest;
} graph_plan;

static int plan_graph(const cg_spec *s, float *const *layer_out, size_t img, graph_plan *p, cg_err *e)
{
    int last_use[CG_MAX_LAYERS + 1], free_slots[CG_MAX_LAYERS + 1], nfree = 0;
    p->nslots = 0, p->widest = img;
    for (int t = -1; t < s->nlayers; t++) last_use[t + 1] = t, p->slot[t + 1] = -1;
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        for (int k = 0; k < nin; k++) {
            if (in[k] < -1 || in[k] >= i)
                return cg_fail(e, "%s: layer '%s' reads tensor %d, which is no earlier layer", s->path, l->name, in[k]);
            long long got = in[k] < 0 ? (long long)img : cg_layer_out_elems(&s->layers[in[k]]);
            const char *from = in[k] < 0 ? "the input" : s->layers[in[k]].name;
            long long want = l->op == CG_OP_CONCAT ? (long long)l->in_C[k] * l->H * l->W : cg_layer_in_elems(l);
            if (got != want)
                return cg_fail(e, "%s: layer '%s' takes %lld elements from %s, which gives %lld", s->path, l->name,
                               want, from, got);
            if (i > last_use[in[k] + 1]) last_use[in[k] + 1] = i;
        }
        if ((size_t)cg_layer_out_elems(l) > p->widest) p->widest = (size_t)cg_layer_out_elems(l);
    }
    p->slot[0] = p->nslots++; /* the input */
    for (int i = 0; i < s->nlayers; i++) {
        if (!(layer_out && layer_out[i]) && i != s->nlayers - 1)
            p->slot[i + 1] = nfree ? free_slots[--nfree] : p->nslots++;
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        for (int k = 0; k < nin; k++) {
            int t = in[k] + 1, dup = 0;
            for (int j = 0; j < k; j++) dup |= in[j] == in[k];
            if (!dup && last_use[t] == i && p->slot[t] >= 0) free_slots[nfree++] = p->slot[t];
        }
    }
    return 0;
}

/* One chunk of nb images through every layer, from x (nb float images): each
 * layer's output into layer_out[i] (offset b0 images) where kept, the last's
 * into last_out, the rest into the plan's slots of buf. */
static int forward_chunk(const cg_spec *s, const cg_weights *w, const graph_plan *p, float *buf, size_t chunk,
                         const float *x, size_t b0, int nb, float *const *layer_out, float *last_out,
                         double *layer_ms, cg_err *e)
{
    const float *t[CG_MAX_LAYERS + 1];
    t[0] = x;
    for (int i = 0; i < s->nlayers; i++) {
        cg_layer run; /* as it runs with w's batch norms (folded where w->bn_folded) */
        cg_spec_run_layer(s, i, w->bn_folded, &run);
        const cg_layer *l = &run;
        float *y = layer_out && layer_out[i]   ? layer_out[i] + b0 * out_elems(l)
                   : i == s->nlayers - 1       ? last_out
                                               : buf + (size_t)p->slot[i + 1] * p->widest * chunk;
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        const float *ins[CG_MAX_INPUTS];
        for (int k = 0; k < nin; k++) ins[k] = t[in[k] + 1];
        double t0 = layer_ms ? omp_get_wtime() : 0;
        if (cg_cpu_layer_inputs(l, w, ins, nin, y, nb, e)) return -1;
        if (layer_ms) layer_ms[i] += (omp_get_wtime() - t0) * 1e3;
        t[i + 1] = y;
    }
    return 0;
}

/* The whole network over n images, a chunk at a time: from uint8 pixels (made
 * into the input's slot by cg_cpu_input) or, where pixels is NULL, from float
 * images xf. last_out gains the last layer's output (unless layer_out keeps it,
 * or pred is given: then always); pred, when not NULL, each image's argmax (the
 * first maximum). */
static int forward(const cg_spec *s, const cg_weights *w, const unsigned char *pixels, const float *xf, int n,
                   float **layer_out, float *last_out, int *pred, double *layer_ms, cg_err *e)
{
    if (n < 0) return cg_fail(e, "%s: negative image count %d", s->path, n);
    if (s->nlayers <= 0) return cg_fail(e, "%s: the network has no layers", s->path);
    const size_t img = (size_t)s->C * s->H * s->W;
    graph_plan p;
    if (plan_graph(s, layer_out, img, &p, e)) return -1;
    size_t chunk = (size_t)(n < FORWARD_CHUNK ? n : FORWARD_CHUNK), bytes;
    if (cg_mul_size(p.widest, chunk ? chunk : 1, &bytes) ||
        cg_mul_size(bytes, (size_t)p.nslots * sizeof(float), &bytes))
        return cg_fail(e, "%s: buffers too large", s->path);
    float *buf = malloc(bytes);
    if (!buf) return cg_fail(e, "%s: out of memory for %zu bytes of activations", s->path, bytes);
    const size_t classes = (size_t)cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    float *xs = buf + (size_t)p.slot[0] * p.widest * chunk;
    int rc = 0;
    for (size_t b0 = 0; b0 < (size_t)n && !rc; b0 += chunk) {
        int nb = (int)((size_t)n - b0 < chunk ? (size_t)n - b0 : chunk);
        const float *x = xf ? xf + b0 * img : xs;
        if (pixels) cg_cpu_input(s, pixels + b0 * img, nb, xs);
        rc = forward_chunk(s, w, &p, buf, chunk, x, b0, nb, layer_out, last_out + b0 * classes, layer_ms, e);
        if (rc || !pred) continue;
        const float *last = layer_out && layer_out[s->nlayers - 1]
                                ? layer_out[s->nlayers - 1] + b0 * classes : last_out + b0 * classes;
        if (last != last_out + b0 * classes) memcpy(last_out + b0 * classes, last, (size_t)nb * classes * sizeof *last);
        for (int b = 0; b < nb; b++) {
            const float *row = last_out + (b0 + (size_t)b) * classes;
            size_t best = 0;
            for (size_t c = 1; c < classes; c++)
                if (row[c] > row[best]) best = c;
            pred[b0 + (size_t)b] = (int)best;
        }
    }
    free(buf);
    return rc;
}

int cg_cpu_forward_f32(const cg_spec *s, const cg_weights *w, const float *x, int n, float **layer_out,
                       float *last_out, double *layer_ms, cg_err *e)
{
    return forward(s, w, NULL, x, n, layer_out, last_out, NULL, layer_ms, e);
}

int cg_cpu_forward(const cg_spec *s, const cg_weights *w, const unsigned char *pixels, int n,
                   float **layer_out, float *probs, int *pred, double *layer_ms, cg_err *e)
{
    return forward(s, w, pixels, NULL, n, layer_out, probs, pred, layer_ms, e);
}
