/* cpu.c — the CPU backend: the literal definition of every layer, in plain C,
 * used as the oracle the GPU kernels are checked against. Sums are accumulated
 * in double in the order the definition writes them; activations are applied
 * in double before rounding to float; pooling comes after the activation.
 * Images are independent, so every layer is parallel over images (OpenMP). */
#include "cpu.h"

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

/* The network input: pixel * scale + offset computed in double, rounded once to float. */
void cg_cpu_input(const cg_spec *s, const unsigned char *pixels, int n, float *x)
{
    size_t total = (size_t)(n > 0 ? n : 0) * s->C * s->H * s->W;
    double scale = s->scale, offset = s->offset;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < total; i++) x[i] = (float)(pixels[i] * scale + offset);
}

/* conv: y[m][h][w] = act(sum_c sum_p sum_q x[c][h+p][w+q] * k[m][c][p][q] + bias[m]),
 * then, when pool == 2, the max of each 2x2 window (stride 2, odd edge dropped).
 * Each output row is accumulated as a whole (acc[w]) so the per-output order of
 * summation stays c, p, q while the loop over w vectorises. */
static void conv_image(const cg_layer *l, const float *k, const float *bias, const float *x,
                       float *y, double *acc)
{
    const size_t C = (size_t)l->C, H = (size_t)l->H, W = (size_t)l->W, K = (size_t)l->K;
    const size_t CW = W - K + 1, pool = l->pool == 2;
    const size_t OH = (size_t)l->OH, OW = (size_t)l->OW;
    for (size_t m = 0; m < (size_t)l->M; m++) {
        const float *km = k + m * C * K * K;
        for (size_t oh = 0; oh < OH; oh++) {
            /* conv rows h0 .. h0+rows-1 feed output row oh */
            size_t rows = pool ? 2 : 1, h0 = pool ? 2 * oh : oh;
            for (size_t r = 0; r < rows; r++) {
                double *a = acc + r * CW;
                for (size_t ow = 0; ow < CW; ow++) a[ow] = 0;
                for (size_t c = 0; c < C; c++)
                    for (size_t p = 0; p < K; p++) {
                        const float *xr = x + (c * H + h0 + r + p) * W;
                        for (size_t q = 0; q < K; q++) {
                            double kv = km[(c * K + p) * K + q];
                            const float *xq = xr + q;
#pragma omp simd
                            for (size_t ow = 0; ow < CW; ow++) a[ow] += (double)xq[ow] * kv;
                        }
                    }
                for (size_t ow = 0; ow < CW; ow++)
                    a[ow] = (float)activate(l->act, bias ? a[ow] + bias[m] : a[ow]);
            }
            float *yr = y + (m * OH + oh) * OW;
            for (size_t ow = 0; ow < OW; ow++) {
                if (!pool) {
                    yr[ow] = (float)acc[ow];
                    continue;
                }
                double v = acc[2 * ow];
                if (acc[2 * ow + 1] > v) v = acc[2 * ow + 1];
                if (acc[CW + 2 * ow] > v) v = acc[CW + 2 * ow];
                if (acc[CW + 2 * ow + 1] > v) v = acc[CW + 2 * ow + 1];
                yr[ow] = (float)v;
            }
        }
    }
}

/* fc for a block of nb <= FC_BLOCK images: y[b][o] = act(sum_i W[o][i] x[b][i] + bias[o]).
 * The block is first transposed into xt[i][b] (zero-padded to FC_BLOCK) so the
 * FC_BLOCK sums advance together in SIMD lanes; each image's sum still runs over
 * i in order. */
static void fc_block(const cg_layer *l, const float *wt, const float *bias, const float *x,
                     float *y, size_t nb, float *xt)
{
    const size_t in = in_elems(l), out = (size_t)l->out;
    for (size_t i = 0; i < in; i++)
        for (size_t b = 0; b < FC_BLOCK; b++) xt[i * FC_BLOCK + b] = b < nb ? x[b * in + i] : 0;
    for (size_t o = 0; o < out; o++) {
        const float *row = wt + o * in;
        double acc[FC_BLOCK] = {0};
        for (size_t i = 0; i < in; i++) {
            double wv = row[i];
            const float *xi = xt + i * FC_BLOCK;
#pragma omp simd
            for (size_t b = 0; b < FC_BLOCK; b++) acc[b] += wv * (double)xi[b];
        }
        for (size_t b = 0; b < nb; b++)
            y[b * out + o] = (float)activate(l->act, bias ? acc[b] + bias[o] : acc[b]);
    }
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
    int oc, oh, ow;
    if (l->op == CG_OP_CONV) {
        if (l->M <= 0 || l->K <= 0 || l->K > l->H || l->K > l->W || (l->pool != 0 && l->pool != 2))
            return cg_fail(e, "layer '%s': bad conv parameters M=%d K=%d pool=%d", l->name, l->M,
                           l->K, l->pool);
        oc = l->M, oh = l->H - l->K + 1, ow = l->W - l->K + 1;
        if (l->pool) oh /= 2, ow /= 2;
    } else if (l->op == CG_OP_FC) {
        if (l->out <= 0) return cg_fail(e, "layer '%s': bad fc out=%d", l->name, l->out);
        oc = l->out, oh = 1, ow = 1;
    } else if (l->op == CG_OP_SOFTMAX) {
        oc = l->C, oh = l->H, ow = l->W;
    } else {
        return cg_fail(e, "layer '%s': unknown op %d", l->name, (int)l->op);
    }
    if (l->OC != oc || l->OH != oh || l->OW != ow || oh <= 0 || ow <= 0)
        return cg_fail(e, "layer '%s': output shape %dx%dx%d, its definition gives %dx%dx%d",
                       l->name, l->OC, l->OH, l->OW, oc, oh, ow);
    return 0;
}

int cg_cpu_layer(const cg_layer *l, const cg_weights *w, const float *in, float *out, int n,
                 cg_err *e)
{
    if (n < 0) return cg_fail(e, "layer '%s': negative image count %d", l->name, n);
    if (check_shape(l, e)) return -1;
    const size_t ie = in_elems(l), oe = out_elems(l);
    const float *wt = NULL, *bias = NULL;
    if (l->op == CG_OP_SOFTMAX) {
#pragma omp parallel for schedule(static)
        for (int b = 0; b < n; b++) softmax_image(ie, in + (size_t)b * ie, out + (size_t)b * oe);
        return 0;
    }
    long long rows = l->op == CG_OP_CONV ? l->M : l->out;
    long long fan_in = l->op == CG_OP_CONV ? (long long)l->C * l->K * l->K : (long long)ie;
    if (get_param(l, w, "weight", rows * fan_in, &wt, e)) return -1;
    if (l->bias && get_param(l, w, "bias", rows, &bias, e)) return -1;
    int nt = omp_get_max_threads();
    if (l->op == CG_OP_FC) {
        /* one transposed input block per thread, allocated once */
        float *xt = malloc((size_t)nt * FC_BLOCK * ie * sizeof *xt);
        if (!xt) return cg_fail(e, "layer '%s': out of memory", l->name);
        int nblk = (n + FC_BLOCK - 1) / FC_BLOCK;
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
    /* conv: one row buffer of 2 conv rows per thread, allocated once */
    size_t cw = (size_t)(l->W - l->K + 1);
    double *acc = malloc((size_t)nt * 2 * cw * sizeof *acc);
    if (!acc) return cg_fail(e, "layer '%s': out of memory", l->name);
#pragma omp parallel for schedule(dynamic) num_threads(nt)
    for (int b = 0; b < n; b++)
        conv_image(l, wt, bias, in + (size_t)b * ie, out + (size_t)b * oe,
                   acc + (size_t)omp_get_thread_num() * 2 * cw);
    free(acc);
    return 0;
}

int cg_cpu_forward(const cg_spec *s, const cg_weights *w, const unsigned char *pixels, int n,
                   float **layer_out, float *probs, int *pred, double *layer_ms, cg_err *e)
{
    if (n < 0) return cg_fail(e, "%s: negative image count %d", s->path, n);
    if (s->nlayers <= 0) return cg_fail(e, "%s: the network has no layers", s->path);
    const size_t img = (size_t)s->C * s->H * s->W;
    const cg_layer *first = &s->layers[0], *last = &s->layers[s->nlayers - 1];
    if (in_elems(first) != img)
        return cg_fail(e, "%s: layer '%s' takes %zu elements per image, the input has %zu",
                       s->path, first->name, in_elems(first), img);
    /* ping-pong buffers for one chunk of images, big enough for any layer */
    size_t widest = img;
    for (int i = 0; i < s->nlayers; i++) {
        if (i && in_elems(&s->layers[i]) != out_elems(&s->layers[i - 1]))
            return cg_fail(e, "%s: layer '%s' takes %zu elements, layer '%s' gives %zu", s->path,
                           s->layers[i].name, in_elems(&s->layers[i]), s->layers[i - 1].name,
                           out_elems(&s->layers[i - 1]));
        if (out_elems(&s->layers[i]) > widest) widest = out_elems(&s->layers[i]);
    }
    size_t chunk = (size_t)(n < FORWARD_CHUNK ? n : FORWARD_CHUNK), bytes;
    if (cg_mul_size(widest, chunk ? chunk : 1, &bytes) ||
        cg_mul_size(bytes, 2 * sizeof(float), &bytes))
        return cg_fail(e, "%s: buffers too large", s->path);
    float *buf = malloc(bytes);
    if (!buf) return cg_fail(e, "%s: out of memory for %zu bytes of activations", s->path, bytes);
    float *ping = buf, *pong = buf + widest * chunk;
    const size_t classes = out_elems(last);
    int rc = 0;
    for (size_t b0 = 0; b0 < (size_t)n && !rc; b0 += chunk) {
        int nb = (int)((size_t)n - b0 < chunk ? (size_t)n - b0 : chunk);
        cg_cpu_input(s, pixels + b0 * img, nb, ping);
        const float *x = ping;
        for (int i = 0; i < s->nlayers && !rc; i++) {
            const cg_layer *l = &s->layers[i];
            float *y = x == ping ? pong : ping;
            if (layer_out && layer_out[i]) y = layer_out[i] + b0 * out_elems(l);
            else if (i == s->nlayers - 1) y = probs + b0 * classes;
            double t0 = layer_ms ? omp_get_wtime() : 0;
            rc = cg_cpu_layer(l, w, x, y, nb, e);
            if (layer_ms) layer_ms[i] += (omp_get_wtime() - t0) * 1e3;
            x = y;
        }
        if (rc) break;
        if (x != probs + b0 * classes) memcpy(probs + b0 * classes, x, (size_t)nb * classes * sizeof *x);
        for (int b = 0; b < nb; b++) {
            const float *row = probs + (b0 + (size_t)b) * classes;
            size_t best = 0;
            for (size_t c = 1; c < classes; c++)
                if (row[c] > row[best]) best = c;
            pred[b0 + (size_t)b] = (int)best;
        }
    }
    free(buf);
    return rc;
}
