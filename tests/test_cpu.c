/* test_cpu.c — the CPU reference: each layer against cases computed by hand,
 * a general conv against a naive loop, and the whole ece408-2017 network on
 * 1000 real test images with seeded random weights. */
#include "check.h"
#include "cpu.h"
#include "data.h"

#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <time.h>

/* A layer with its output shape filled in the way the spec reader does. */
static cg_layer conv_layer(const char *name, int C, int H, int W, int M, int K, int pool,
                           int bias, cg_act act)
{
    cg_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.op = CG_OP_CONV, l.C = C, l.H = H, l.W = W, l.M = M, l.K = K, l.pool = pool;
    l.bias = bias, l.act = act;
    l.OC = M, l.OH = H - K + 1, l.OW = W - K + 1;
    if (pool) l.OH /= 2, l.OW /= 2;
    return l;
}

static cg_layer fc_layer(const char *name, int C, int H, int W, int out, int bias, cg_act act)
{
    cg_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.op = CG_OP_FC, l.C = C, l.H = H, l.W = W, l.out = out, l.bias = bias, l.act = act;
    l.OC = out, l.OH = 1, l.OW = 1;
    return l;
}

static cg_layer softmax_layer(const char *name, int len)
{
    cg_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.op = CG_OP_SOFTMAX, l.C = len, l.H = 1, l.W = 1;
    l.OC = len, l.OH = 1, l.OW = 1;
    return l;
}

/* Weights made of the given arrays (not owned). */
static cg_weights make_w(cg_tensor *t, int n) { return (cg_weights){n, t, 0, 0}; }

static cg_tensor tensor(const char *name, float *data, long long count)
{
    cg_tensor t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.ndim = 1, t.shape[0] = count, t.count = count, t.data = data;
    return t;
}

static void test_conv_by_hand(void)
{
    cg_err e;
    /* x = 1..9 in a 3x3 grid; channel 1 is 10 in the centre. */
    float x[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 10, 0, 0, 0, 0};
    /* map 0: [[1,2],[3,4]] -> 37 47 / 67 77; map 1: [[0,1],[-1,0]] -> x[h][w+1]-x[h+1][w] = -2 */
    float k[8] = {1, 2, 3, 4, 0, 1, -1, 0}, bias[2] = {-40, 1}, y[8];
    cg_tensor t[2] = {tensor("c.weight", k, 8), tensor("c.bias", bias, 2)};
    cg_weights w = make_w(t, 2);
    cg_layer l = conv_layer("c", 1, 3, 3, 2, 2, 0, 0, CG_ACT_NONE);
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) == 0, "conv: %s", e.msg);
    const float want[8] = {37, 47, 67, 77, -2, -2, -2, -2};
    CHECK(memcmp(y, want, sizeof want) == 0, "conv: %g %g %g %g %g", y[0], y[1], y[2], y[3], y[4]);

    l.bias = 1;
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) == 0, "conv+bias");
    const float want_b[8] = {-3, 7, 27, 37, -1, -1, -1, -1};
    CHECK(memcmp(y, want_b, sizeof want_b) == 0, "conv+bias: %g %g %g %g", y[0], y[1], y[4], y[5]);
    l.act = CG_ACT_RELU;
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) == 0, "conv+relu");
    const float want_r[8] = {0, 7, 27, 37, 0, 0, 0, 0};
    CHECK(memcmp(y, want_r, sizeof want_r) == 0, "relu: %g %g %g %g", y[0], y[1], y[4], y[5]);

    /* two input channels, one map: k[0][1] = [[1,0],[0,0]] adds x1[h][w] (10 at (1,1)) */
    float k2[8] = {1, 2, 3, 4, 1, 0, 0, 0};
    cg_tensor t2 = tensor("c2.weight", k2, 8);
    cg_weights w2 = make_w(&t2, 1);
    cg_layer l2 = conv_layer("c2", 2, 3, 3, 1, 2, 0, 0, CG_ACT_NONE);
    CHECK(cg_cpu_layer(&l2, &w2, x, y, 1, &e) == 0, "2-channel conv");
    CHECK(y[0] == 37 && y[1] == 47 && y[2] == 67 && y[3] == 87, "2-channel: %g %g %g %g", y[0],
          y[1], y[2], y[3]);

    /* tanh then 2x2 max pool over a 5x5 input, K=1, weight -1: each output is
     * max tanh(-x) = tanh(-min x) of its window; row 4 and column 4 are dropped
     * (floor), so the -100 there (tanh(100) = 1) must not win. */
    float xp[25] = {1,  2,  3,  4,  -100, /* */
                    5,  6,  -7, 8,  -100, /* */
                    0.5, 9, 10, 11, -100, /* */
                    12, 13, 14, -0.25, -100, /* */
                    -100, -100, -100, -100, -100};
    float minus1 = -1, yp[4];
    cg_tensor t3 = tensor("p.weight", &minus1, 1);
    cg_weights w3 = make_w(&t3, 1);
    cg_layer l3 = conv_layer("p", 1, 5, 5, 1, 1, 2, 0, CG_ACT_TANH);
    CHECK(l3.OH == 2 && l3.OW == 2, "pool shape");
    CHECK(cg_cpu_layer(&l3, &w3, xp, yp, 1, &e) == 0, "tanh+pool: %s", e.msg);
    CHECK(yp[0] == (float)tanh(-1.0) && yp[1] == (float)tanh(7.0) && yp[2] == (float)tanh(-0.5) &&
              yp[3] == (float)tanh(0.25),
          "tanh+pool: %g %g %g %g", yp[0], yp[1], yp[2], yp[3]);

    /* errors: a missing tensor, a tensor of the wrong size, an inconsistent shape */
    cg_weights none = make_w(NULL, 0);
    CHECK(cg_cpu_layer(&l, &none, x, y, 1, &e) != 0, "missing weight accepted");
    CHECK_CONTAINS(e.msg, "layer 'c': no tensor 'c.weight'");
    t[0].count = 7;
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) != 0, "short weight accepted");
    CHECK_CONTAINS(e.msg, "tensor 'c.weight' has 7 elements, the layer needs 8");
    t[0].count = 8;
    l.OH = 3;
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) != 0, "bad output shape accepted");
    CHECK_CONTAINS(e.msg, "output shape 2x3x2, its definition gives 2x2x2");
}

/* A conv layer of issue 12: padding (top, left, bottom, right), stride, and a pool
 * (op, window, stride), with the output shape derived by cg_conv_dims. */
static cg_layer conv_ext(const char *name, int C, int H, int W, int M, int K, const int pad[4],
                         int stride, cg_pool_op op, int pool, int pool_stride, int bias, cg_act act)
{
    cg_layer l = conv_layer(name, C, H, W, M, K, 0, bias, act);
    memcpy(l.pad, pad, sizeof l.pad);
    l.stride = stride, l.pool = pool, l.pool_stride = pool_stride, l.pool_op = op;
    int ch, cw;
    if (cg_conv_dims(&l, &ch, &cw, &l.OH, &l.OW)) l.OH = l.OW = -1;
    return l;
}

/* Padding, stride, average, overlapping max and global average pools, and
 * several input channels, each on inputs small enough to work out by hand. */
static void test_layers_by_hand(void)
{
    cg_err e;
    static const int p0[4] = {0, 0, 0, 0}, p1[4] = {1, 1, 1, 1}, p1001[4] = {1, 0, 0, 1};
    float x9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, y[32];
    float x25[25], x16[16], one = 1, minus1 = -1;
    for (int i = 0; i < 25; i++) x25[i] = (float)i;
    for (int i = 0; i < 16; i++) x16[i] = (float)i;

    /* padding 1, 3x3 of ones over 1..9: each output sums its neighbourhood inside the grid */
    cg_tensor t = tensor("a.weight", ones, 9);
    cg_weights w = make_w(&t, 1);
    cg_layer l = conv_ext("a", 1, 3, 3, 1, 3, p1, 1, CG_POOL_MAX, 0, 0, 0, CG_ACT_NONE);
    CHECK(l.OH == 3 && l.OW == 3, "same shape %dx%d", l.OH, l.OW);
    CHECK(cg_cpu_layer(&l, &w, x9, y, 1, &e) == 0, "padding: %s", e.msg);
    const float want_pad[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
    CHECK(memcmp(y, want_pad, sizeof want_pad) == 0, "padding: %g %g %g %g %g %g %g %g %g", y[0], y[1],
          y[2], y[3], y[4], y[5], y[6], y[7], y[8]);

    /* stride 2, K=1 over 0..24 (5x5): every other pixel of every other row */
    t = tensor("b.weight", &one, 1);
    l = conv_ext("b", 1, 5, 5, 1, 1, p0, 2, CG_POOL_MAX, 0, 0, 0, CG_ACT_NONE);
    CHECK(l.OH == 3 && l.OW == 3, "stride shape %dx%d", l.OH, l.OW);
    CHECK(cg_cpu_layer(&l, &w, x25, y, 1, &e) == 0, "stride: %s", e.msg);
    const float want_s[9] = {0, 2, 4, 10, 12, 14, 20, 22, 24};
    CHECK(memcmp(y, want_s, sizeof want_s) == 0, "stride: %g %g %g %g", y[0], y[1], y[3], y[8]);

    /* stride 2 with padding top 1, right 1, a 2x2 of ones over 1..9: windows at
     * rows -1..0 and 1..2, columns 0..1 and 2..3 (column 3 is padding) */
    t = tensor("c.weight", ones, 4);
    l = conv_ext("c", 1, 3, 3, 1, 2, p1001, 2, CG_POOL_MAX, 0, 0, 0, CG_ACT_NONE);
    CHECK(l.OH == 2 && l.OW == 2, "stride+pad shape %dx%d", l.OH, l.OW);
    CHECK(cg_cpu_layer(&l, &w, x9, y, 1, &e) == 0, "stride+pad: %s", e.msg);
    CHECK(y[0] == 3 && y[1] == 3 && y[2] == 24 && y[3] == 15, "stride+pad: %g %g %g %g", y[0], y[1],
          y[2], y[3]);

    /* avg2 after relu, bias -5, over 0..15 (4x4): the activation comes first,
     * so (2,3,6,7) - 5 -> 0 0 1 2 averages to 0.75 (not relu(4.5 - 5) = 0) */
    float bias5 = -5;
    cg_tensor tb[2] = {tensor("d.weight", &one, 1), tensor("d.bias", &bias5, 1)};
    w = make_w(tb, 2);
    l = conv_ext("d", 1, 4, 4, 1, 1, p0, 1, CG_POOL_AVG, 2, 2, 1, CG_ACT_RELU);
    CHECK(l.OH == 2 && l.OW == 2, "avg2 shape");
    CHECK(cg_cpu_layer(&l, &w, x16, y, 1, &e) == 0, "avg2: %s", e.msg);
    CHECK(y[0] == 0 && y[1] == 0.75f && y[2] == 5.5f && y[3] == 7.5f, "avg2: %g %g %g %g", y[0], y[1],
          y[2], y[3]);

    /* max3, stride 2 (overlapping windows) over -(0..24): max of -x is -min x */
    t = tensor("e.weight", &minus1, 1);
    w = make_w(&t, 1);
    l = conv_ext("e", 1, 5, 5, 1, 1, p0, 1, CG_POOL_MAX, 3, 2, 0, CG_ACT_NONE);
    CHECK(l.OH == 2 && l.OW == 2, "max3/2 shape %dx%d", l.OH, l.OW);
    CHECK(cg_cpu_layer(&l, &w, x25, y, 1, &e) == 0, "max3/2: %s", e.msg);
    CHECK(y[0] == 0 && y[1] == -2 && y[2] == -10 && y[3] == -12, "max3/2: %g %g %g %g", y[0], y[1],
          y[2], y[3]);
    /* avg3 of the same, stride 1: 3x3 windows of 0..24 average to their centre */
    l = conv_ext("e", 1, 5, 5, 1, 1, p0, 1, CG_POOL_AVG, 3, 1, 0, CG_ACT_NONE);
    CHECK(l.OH == 3 && l.OW == 3, "avg3/1 shape");
    CHECK(cg_cpu_layer(&l, &w, x25, y, 1, &e) == 0 && y[0] == -6 && y[4] == -12 && y[8] == -18,
          "avg3/1: %g %g %g", y[0], y[4], y[8]);

    /* global average of tanh over a 2x3 map, two maps (weights 1 and -1): tanh(0.5) and
     * tanh(-0.5), tanh(1) and tanh(-1) cancel, leaving tanh(2)/6 and -tanh(2)/6 */
    float xg[6] = {0, 0.5f, 1, -1, 2, -0.5f}, kg[2] = {1, -1};
    t = tensor("g.weight", kg, 2);
    w = make_w(&t, 1);
    l = conv_ext("g", 1, 2, 3, 2, 1, p0, 1, CG_POOL_GLOBAL_AVG, 1, 0, 0, CG_ACT_TANH);
    CHECK(l.OH == 1 && l.OW == 1, "global shape");
    CHECK(cg_cpu_layer(&l, &w, xg, y, 1, &e) == 0, "global avg: %s", e.msg);
    float g = (float)((double)(float)tanh(2.0) / 6);
    CHECK(y[0] == g && y[1] == -g, "global avg: %.9g %.9g want %.9g", y[0], y[1], g);

    /* three input channels: y = x0 + 10 x1 + 100 x2 */
    float x3[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, k3[3] = {1, 10, 100};
    t = tensor("h.weight", k3, 3);
    w = make_w(&t, 1);
    l = conv_ext("h", 3, 2, 2, 1, 1, p0, 1, CG_POOL_MAX, 0, 0, 0, CG_ACT_NONE);
    CHECK(cg_cpu_layer(&l, &w, x3, y, 1, &e) == 0 && y[0] == 951 && y[1] == 1062 && y[3] == 1284,
          "3 channels: %g %g %g", y[0], y[1], y[3]);

    /* refused: padding not below K, a pool larger than the conv output */
    l = conv_ext("a", 1, 3, 3, 1, 1, p1, 1, CG_POOL_MAX, 0, 0, 0, CG_ACT_NONE);
    l.OH = l.OW = 5;
    CHECK(cg_cpu_layer(&l, &w, x9, y, 1, &e) != 0, "padding 1 with K=1 accepted");
    CHECK_CONTAINS(e.msg, "bad conv parameters");
    l = conv_ext("a", 1, 3, 3, 1, 1, p0, 1, CG_POOL_AVG, 4, 4, 0, CG_ACT_NONE);
    l.OH = l.OW = 1;
    CHECK(cg_cpu_layer(&l, &w, x9, y, 1, &e) != 0, "avg4 over 3x3 accepted");
}

/* Random layers with padding, stride, each pool, each activation and channel
 * groups (depthwise, 1 < G < C) against a naive float64 loop that pads the
 * input with zeros first and reads map m's group of channels from weights
 * [M, C/G, K, K]. */
static void test_layers_naive(void)
{
    static const struct {
        int C, H, W, M, K, pad[4], S;
        cg_pool_op op;
        int pool, ps;
        cg_act act;
        int G;
    } cases[] = {
        {3, 9, 8, 4, 3, {1, 1, 1, 1}, 1, CG_POOL_AVG, 2, 2, CG_ACT_RELU, 1},
        {2, 11, 10, 3, 5, {2, 0, 1, 3}, 2, CG_POOL_MAX, 3, 2, CG_ACT_TANH, 1},
        {3, 13, 12, 5, 7, {3, 3, 3, 3}, 2, CG_POOL_GLOBAL_AVG, 1, 0, CG_ACT_RELU, 1},
        {4, 7, 9, 2, 2, {0, 1, 1, 0}, 3, CG_POOL_AVG, 2, 1, CG_ACT_NONE, 1},
        {6, 9, 8, 6, 3, {1, 1, 1, 1}, 1, CG_POOL_MAX, 2, 2, CG_ACT_RELU6, 6},     /* depthwise */
        {6, 11, 10, 6, 3, {1, 1, 1, 1}, 2, CG_POOL_AVG, 2, 1, CG_ACT_SIGMOID, 6}, /* depthwise, stride 2 */
        {6, 8, 9, 4, 3, {0, 1, 2, 1}, 1, CG_POOL_AVG, 2, 2, CG_ACT_SIGMOID, 2},   /* 2 groups: 3 channels -> 2 maps */
        {8, 7, 7, 8, 1, {0, 0, 0, 0}, 1, CG_POOL_MAX, 3, 1, CG_ACT_RELU6, 4},     /* 4 groups, 1x1 */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int C = cases[ci].C, H = cases[ci].H, W = cases[ci].W, M = cases[ci].M, K = cases[ci].K;
        const int *pd = cases[ci].pad;
        int S = cases[ci].S, N = 2, G = cases[ci].G, CG = C / G;
        cg_layer l = conv_ext("n", C, H, W, M, K, pd, S, cases[ci].op, cases[ci].pool, cases[ci].ps, 1,
                              cases[ci].act);
        l.groups = G;
        int ch, cw, oh, ow;
        CHECK(cg_conv_dims(&l, &ch, &cw, &oh, &ow) == 0, "case %zu dims", ci);
        float *x = malloc(sizeof(float) * N * C * H * W), *k = malloc(sizeof(float) * M * CG * K * K);
        float *y = malloc(sizeof(float) * N * M * oh * ow), b[8];
        double *z = malloc(sizeof(double) * ch * cw);
        unsigned r = 777 + (unsigned)ci;
        for (int i = 0; i < N * C * H * W; i++) x[i] = (float)((r = r * 1103515245u + 12345u) >> 16) / 65536.f - .5f;
        for (int i = 0; i < M * CG * K * K; i++) k[i] = (float)((r = r * 1103515245u + 12345u) >> 16) / 65536.f - .5f;
        for (int i = 0; i < M; i++) b[i] = (float)i / 10 - .15f;
        cg_tensor t[2] = {tensor("n.weight", k, M * CG * K * K), tensor("n.bias", b, M)};
        cg_weights w = make_w(t, 2);
        cg_err e;
        CHECK(cg_cpu_layer(&l, &w, x, y, N, &e) == 0, "case %zu: %s", ci, e.msg);
        double worst = 0;
        for (int n = 0; n < N; n++)
            for (int m = 0; m < M; m++) {
                for (int i = 0; i < ch; i++)
                    for (int j = 0; j < cw; j++) {
                        double s = b[m];
                        int c0 = m / (M / G) * CG;
                        for (int c = c0; c < c0 + CG; c++)
                            for (int p = 0; p < K; p++)
                                for (int q = 0; q < K; q++) {
                                    int iy = i * S + p - pd[0], ix = j * S + q - pd[1];
                                    double v = iy < 0 || iy >= H || ix < 0 || ix >= W
                                                   ? 0 : x[((n * C + c) * H + iy) * W + ix];
                                    s += v * k[((m * CG + c - c0) * K + p) * K + q];
                                }
                        cg_act a = cases[ci].act;
                        z[i * cw + j] = a == CG_ACT_TANH      ? tanh(s)
                                        : a == CG_ACT_RELU    ? (s > 0 ? s : 0)
                                        : a == CG_ACT_RELU6   ? fmin(fmax(s, 0), 6)
                                        : a == CG_ACT_SIGMOID ? 1 / (1 + exp(-s))
                                                              : s;
                    }
                for (int i = 0; i < oh; i++)
                    for (int j = 0; j < ow; j++) {
                        double v = 0, best = -1e30;
                        int y0 = cases[ci].op == CG_POOL_GLOBAL_AVG ? 0 : i * cases[ci].ps;
                        int x0 = cases[ci].op == CG_POOL_GLOBAL_AVG ? 0 : j * cases[ci].ps;
                        int ph = cases[ci].op == CG_POOL_GLOBAL_AVG ? ch : cases[ci].pool;
                        int pw = cases[ci].op == CG_POOL_GLOBAL_AVG ? cw : cases[ci].pool;
                        for (int a = 0; a < ph; a++)
                            for (int c2 = 0; c2 < pw; c2++) {
                                double u = z[(y0 + a) * cw + x0 + c2];
                                v += u;
                                if (u > best) best = u;
                            }
                        double want = cases[ci].op == CG_POOL_MAX ? best : v / (ph * pw);
                        double d = fabs(want - y[((n * M + m) * oh + i) * ow + j]);
                        if (d > worst) worst = d;
                    }
            }
        CHECK(worst < 1e-6, "case %zu differs from the naive loop by %g", ci, worst);
        free(x), free(k), free(y), free(z);
    }
}

/* The whole forward pass on a 3-channel input: conv 1x1 (weights 1, 10, 100) and
 * a global average: pixels c+1 in channel c give 1 + 20 + 300 = 321. */
/* relu6 and sigmoid by hand: a 1x1 depthwise conv (weight 2 on channel 0, -1 on
 * channel 1, groups 2) of values either side of 0 and 6. */
static void test_acts_by_hand(void)
{
    float x[2 * 4] = {-1, 0.5f, 2, 4, -1, 0.5f, 2, 4}, k[2] = {2, -1}, y[8];
    cg_tensor t[1] = {tensor("d.weight", k, 2)};
    cg_weights w = make_w(t, 1);
    cg_err e;
    cg_layer l = conv_layer("d", 2, 2, 2, 2, 1, 0, 0, CG_ACT_RELU6);
    l.groups = 2;
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) == 0, "relu6: %s", e.msg);
    const float relu6[8] = {0, 1, 4, 6, 1, 0, 0, 0};
    for (int i = 0; i < 8; i++) CHECK(y[i] == relu6[i], "relu6 [%d]: %g, want %g", i, y[i], relu6[i]);
    l.act = CG_ACT_SIGMOID;
    CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) == 0, "sigmoid: %s", e.msg);
    for (int i = 0; i < 8; i++) {
        double v = (i < 4 ? 2.0 : -1.0) * x[i];
        CHECK(y[i] == (float)(1 / (1 + exp(-v))), "sigmoid [%d]: %.9g", i, y[i]);
    }
    /* groups must divide C and M: 2 groups of 3 channels, 3 maps */
    cg_layer bad = conv_layer("d", 2, 2, 2, 3, 1, 0, 0, CG_ACT_NONE);
    bad.groups = 2;
    CHECK(cg_cpu_layer(&bad, &w, x, y, 1, &e) != 0, "groups 2 with M = 3 accepted");
    CHECK_CONTAINS(e.msg, "groups=2 must divide C=2 and M=3");
}

static void test_forward_channels(void)
{
    static const char text[] = "network: rgb\ninput: {channels: 3, height: 4, width: 5}\nlayers:\n"
                               "  - {name: c, op: conv, M: 1, K: 1, pool: global_avg}\n";
    cg_spec s;
    cg_err e;
    int rc = cg_spec_parse("rgb.yaml", text, strlen(text), &s, &e);
    CHECK(rc == 0, "rgb spec: %s", e.msg);
    if (rc) return;
    unsigned char px[2 * 60];
    for (int i = 0; i < 120; i++) px[i] = (unsigned char)((i % 60) / 20 + 1 + (i >= 60));
    float k[3] = {1, 10, 100}, probs[2];
    int pred[2];
    cg_tensor t = tensor("c.weight", k, 3);
    cg_weights w = make_w(&t, 1);
    CHECK(cg_cpu_forward(&s, &w, px, 2, NULL, probs, pred, NULL, &e) == 0, "rgb forward: %s", e.msg);
    CHECK(probs[0] == 321 && probs[1] == 432 && pred[0] == 0, "rgb forward: %g %g", probs[0], probs[1]);
}

/* A general conv (C=3, M=4, K=3, odd sizes, bias, tanh, pool) against a naive loop. */
static void test_conv_naive(void)
{
    enum { N = 3, C = 3, H = 9, W = 8, M = 4, K = 3 };
    cg_layer l = conv_layer("g", C, H, W, M, K, 2, 1, CG_ACT_TANH);
    float x[N * C * H * W], k[M * C * K * K], b[M], y[N * M * 3 * 3];
    unsigned r = 12345;
    for (int i = 0; i < N * C * H * W; i++) x[i] = (float)((r = r * 1103515245u + 12345u) >> 16) / 65536.f - .5f;
    for (int i = 0; i < M * C * K * K; i++) k[i] = (float)((r = r * 1103515245u + 12345u) >> 16) / 65536.f - .5f;
    for (int i = 0; i < M; i++) b[i] = (float)i / 10 - .15f;
    cg_tensor t[2] = {tensor("g.weight", k, M * C * K * K), tensor("g.bias", b, M)};
    cg_weights w = make_w(t, 2);
    cg_err e;
    CHECK(l.OH == 3 && l.OW == 3, "shape %d %d", l.OH, l.OW);
    CHECK(cg_cpu_layer(&l, &w, x, y, N, &e) == 0, "general conv: %s", e.msg);
    double worst = 0;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < 3; oh++)
                for (int ow = 0; ow < 3; ow++) {
                    double best = -2;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            double s = b[m];
                            for (int c = 0; c < C; c++)
                                for (int p = 0; p < K; p++)
                                    for (int q = 0; q < K; q++)
                                        s += (double)x[((n * C + c) * H + 2 * oh + dy + p) * W +
                                                       2 * ow + dx + q] *
                                             k[((m * C + c) * K + p) * K + q];
                            if (tanh(s) > best) best = tanh(s);
                        }
                    double d = fabs(best - y[((n * M + m) * 3 + oh) * 3 + ow]);
                    if (d > worst) worst = d;
                }
    CHECK(worst < 1e-7, "general conv differs from the naive loop by %g", worst);
}

static void test_fc_softmax(void)
{
    cg_err e;
    /* W = [[1,2,3],[-1,0,1]], b = [0.5,-0.25]; x = [1,-1,2] -> 5.5, 0.75; x = 0 -> b */
    float wt[6] = {1, 2, 3, -1, 0, 1}, b[2] = {0.5f, -0.25f}, x[6] = {1, -1, 2, 0, 0, 0}, y[4];
    cg_tensor t[2] = {tensor("f.weight", wt, 6), tensor("f.bias", b, 2)};
    cg_weights w = make_w(t, 2);
    cg_layer l = fc_layer("f", 3, 1, 1, 2, 1, CG_ACT_NONE);
    CHECK(cg_cpu_layer(&l, &w, x, y, 2, &e) == 0, "fc: %s", e.msg);
    CHECK(y[0] == 5.5f && y[1] == 0.75f && y[2] == 0.5f && y[3] == -0.25f, "fc: %g %g %g %g",
          y[0], y[1], y[2], y[3]);
    l.act = CG_ACT_TANH;
    CHECK(cg_cpu_layer(&l, &w, x, y, 2, &e) == 0, "fc+tanh");
    CHECK(y[0] == (float)tanh(5.5) && y[1] == (float)tanh(0.75), "fc+tanh: %g %g", y[0], y[1]);
    l.bias = 0, l.act = CG_ACT_RELU;
    CHECK(cg_cpu_layer(&l, &w, x, y, 2, &e) == 0, "fc relu no bias");
    CHECK(y[0] == 5.0f && y[1] == 1.0f && y[2] == 0 && y[3] == 0, "fc relu: %g %g", y[0], y[1]);

    /* 37 images (a block of 32 plus a remainder) against a plain loop */
    enum { N = 37, IN = 37, OUT = 11 };
    static float xs[N * IN], ws[OUT * IN], bs[OUT], ys[N * OUT];
    for (int i = 0; i < N * IN; i++) xs[i] = (float)sin(i * 0.37);
    for (int i = 0; i < OUT * IN; i++) ws[i] = (float)cos(i * 0.11);
    for (int i = 0; i < OUT; i++) bs[i] = (float)i;
    cg_tensor t2[2] = {tensor("g.weight", ws, OUT * IN), tensor("g.bias", bs, OUT)};
    cg_weights w2 = make_w(t2, 2);
    cg_layer l2 = fc_layer("g", 1, 1, IN, OUT, 1, CG_ACT_NONE);
    CHECK(cg_cpu_layer(&l2, &w2, xs, ys, N, &e) == 0, "fc 37 images");
    int same = 1;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) {
            double s = 0;
            for (int i = 0; i < IN; i++) s += (double)ws[o * IN + i] * xs[n * IN + i];
            same &= ys[n * OUT + o] == (float)(s + bs[o]);
        }
    CHECK(same, "fc over 37 images equals the plain double loop");

    /* softmax: sums to 1, ratios are exp of differences, no overflow at 1000 */
    float sx[8] = {1, 2, 3, -1000, 1000, 1001, 1000, 999}, sy[8];
    cg_layer s = softmax_layer("prob", 4);
    CHECK(cg_cpu_layer(&s, &w, sx, sy, 2, &e) == 0, "softmax: %s", e.msg);
    double sum0 = (double)sy[0] + sy[1] + sy[2] + sy[3], sum1 = (double)sy[4] + sy[5] + sy[6] + sy[7];
    CHECK(fabs(sum0 - 1) < 1e-6 && fabs(sum1 - 1) < 1e-6, "sums %.9f %.9f", sum0, sum1);
    CHECK(fabs(sy[1] / sy[0] - M_E) < 1e-5 && fabs(sy[2] / sy[1] - M_E) < 1e-5 && sy[3] == 0,
          "ratios %g %g %g", sy[1] / sy[0], sy[2] / sy[1], sy[3]);
    double z = 1 + M_E + 1 + exp(-1);
    CHECK(sy[5] == (float)(M_E / z) && sy[4] == (float)(1 / z) && sy[7] == (float)(exp(-1) / z),
          "large inputs: %g %g %g %g", sy[4], sy[5], sy[6], sy[7]);
}

/* ece408-2017: conv M=50 K=5 tanh pool, fc 7200->500 tanh, fc 10, softmax. */
static void net_2017(cg_spec *s)
{
    memset(s, 0, sizeof *s);
    strcpy(s->path, "ece408-2017 (by hand)");
    strcpy(s->name, "ece408-2017");
    s->C = 1, s->H = 28, s->W = 28, s->scale = 1 / 255.0, s->offset = -0.5, s->seed = 2017;
    s->layers[0] = conv_layer("conv1", 1, 28, 28, 50, 5, 2, 0, CG_ACT_TANH);
    s->layers[1] = fc_layer("fc1", 50, 12, 12, 500, 1, CG_ACT_TANH);
    s->layers[2] = fc_layer("fc2", 500, 1, 1, 10, 1, CG_ACT_NONE);
    s->layers[3] = softmax_layer("prob", 10);
    s->nlayers = 4;
}

static void test_network(void)
{
    enum { N = 1000 };
    cg_spec s;
    cg_weights w;
    cg_dataset d;
    cg_err e;
    net_2017(&s);
    if (cg_data_load(NULL, 0, 0, N, &d, &e)) {
        CHECK(0, "data: %s", e.msg);
        return;
    }
    CHECK(cg_weights_for_spec(&s, &w, &e) == 0, "weights: %s", e.msg);

    float x[784 * 2];
    cg_cpu_input(&s, d.pixels, 2, x);
    CHECK(x[0] == (float)(d.pixels[0] / 255.0 - 0.5) && x[1000] == (float)(d.pixels[1000] / 255.0 - 0.5),
          "input scale/offset");

    size_t sizes[4] = {7200, 500, 10, 10};
    float *lo[4], *probs = malloc(N * 10 * sizeof(float)), *p2 = malloc(N * 10 * sizeof(float));
    int pred[N], pred2[N], alloc_ok = probs && p2;
    for (int i = 0; i < 4; i++) {
        lo[i] = malloc(N * sizes[i] * sizeof(float));
        alloc_ok &= lo[i] != NULL;
    }
    if (!alloc_ok) {
        CHECK(0, "out of memory");
        for (int i = 0; i < 4; i++) free(lo[i]);
        free(probs), free(p2);
        return;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(cg_cpu_forward(&s, &w, d.pixels, N, NULL, probs, pred, NULL, &e) == 0, "forward: %s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("ok forward of %d images: %.2f s\n", N,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    CHECK(cg_cpu_forward(&s, &w, d.pixels, N, lo, p2, pred2, NULL, &e) == 0, "forward 2: %s", e.msg);
    CHECK(memcmp(probs, p2, N * 10 * sizeof(float)) == 0, "two runs give identical probs");
    CHECK(memcmp(pred, pred2, sizeof pred) == 0, "two runs give identical preds");
    CHECK(memcmp(lo[3], probs, N * 10 * sizeof(float)) == 0, "last layer_out is probs");

    int rows_ok = 1, preds_ok = 1, classes_seen = 0, seen[10] = {0};
    for (int n = 0; n < N; n++) {
        double sum = 0;
        int best = 0;
        for (int c = 0; c < 10; c++) {
            sum += probs[n * 10 + c];
            if (probs[n * 10 + c] > probs[n * 10 + best]) best = c;
        }
        rows_ok &= fabs(sum - 1) < 1e-5;
        preds_ok &= pred[n] == best && pred[n] >= 0 && pred[n] <= 9;
        if (pred[n] >= 0 && pred[n] <= 9 && !seen[pred[n]]++) classes_seen++;
    }
    CHECK(rows_ok, "every probs row sums to 1");
    CHECK(preds_ok, "preds are the first argmax, in 0..9");
    CHECK(classes_seen >= 2, "random weights still separate images (%d classes predicted)",
          classes_seen);

    /* layer by layer by hand gives the same bits as the forward pass */
    float *in = malloc(N * 784 * sizeof(float)), *out = malloc(N * 7200 * sizeof(float));
    if (in && out) {
        cg_cpu_input(&s, d.pixels, N, in);
        for (int i = 0; i < 4; i++) {
            CHECK(cg_cpu_layer(&s.layers[i], &w, in, out, N, &e) == 0, "layer %d: %s", i, e.msg);
            CHECK(memcmp(out, lo[i], N * sizes[i] * sizeof(float)) == 0,
                  "layer %s matches the forward pass", s.layers[i].name);
            float *tmp = in;
            in = out, out = tmp;
        }
        int bounded = 1;
        for (size_t i = 0; i < N * sizes[0]; i++) bounded &= fabsf(lo[0][i]) <= 1;
        CHECK(bounded, "conv1 output is tanh-bounded");
    }
    free(in), free(out);

    /* a mismatch between the spec's input and its first layer is refused */
    s.layers[0].H = 27;
    CHECK(cg_cpu_forward(&s, &w, d.pixels, 4, NULL, probs, pred, NULL, &e) != 0, "bad first layer");
    CHECK_CONTAINS(e.msg, "layer 'conv1'");

    for (int i = 0; i < 4; i++) free(lo[i]);
    free(probs), free(p2);
    cg_weights_free(&w);
    cg_dataset_free(&d);
}

/* Threads of this process, from /proc/self/task (0 where it cannot be read). */
static int process_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* One image (and up to four, in fc's narrow block) runs on the calling thread
 * alone: no OpenMP team is started, so none is left spinning between calls.
 * Runs first, before any other test has started a team; the sums equal the
 * plain double loop as they do for wide blocks. */
static void test_small_batch(void)
{
    cg_err e;
    int was = omp_get_max_threads();
    omp_set_num_threads(4);
    int before = process_threads();
    enum { IN = 19, OUT = 7, N = 3 };
    static float xs[N * IN], ws[OUT * IN], bs[OUT], ys[N * OUT], ks[4 * 9], cy[4 * 4 * 4], px[36];
    for (int i = 0; i < N * IN; i++) xs[i] = (float)sin(i * 0.53);
    for (int i = 0; i < OUT * IN; i++) ws[i] = (float)cos(i * 0.17);
    for (int i = 0; i < OUT; i++) bs[i] = (float)i * 0.5f;
    for (int i = 0; i < 36; i++) ks[i] = (float)i * 0.01f, px[i] = (float)i;
    cg_tensor t[3] = {tensor("g.weight", ws, OUT * IN), tensor("g.bias", bs, OUT), tensor("c.weight", ks, 36)};
    cg_weights w = make_w(t, 3);
    cg_layer fc = fc_layer("g", 1, 1, IN, OUT, 1, CG_ACT_NONE);
    cg_layer cv = conv_layer("c", 1, 6, 6, 4, 3, 0, 0, CG_ACT_NONE);
    cg_layer sm = softmax_layer("prob", OUT);
    CHECK(cg_cpu_layer(&fc, &w, xs, ys, 1, &e) == 0, "fc, one image: %s", e.msg);
    CHECK(cg_cpu_layer(&cv, &w, px, cy, 1, &e) == 0, "conv, one image: %s", e.msg);
    CHECK(cg_cpu_layer(&sm, &w, ys, ys, 1, &e) == 0, "softmax, one image: %s", e.msg);
    CHECK(cg_cpu_layer(&fc, &w, xs, ys, N, &e) == 0, "fc, %d images: %s", N, e.msg);
    int after = process_threads();
    CHECK(before == 1 && after == 1, "batch 1 to %d started threads: %d before, %d after", N, before, after);
    int same = 1;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) {
            double s = 0;
            for (int i = 0; i < IN; i++) s += (double)ws[o * IN + i] * xs[n * IN + i];
            same &= ys[n * OUT + o] == (float)(s + bs[o]);
        }
    CHECK(same, "fc over %d images (the narrow block) equals the plain double loop", N);
    omp_set_num_threads(was);
}

/* add and concat by hand, against sums and copies in double written here; then
 * the graph network tests/gpu/layers-graph.yaml: its forward pass (buffers
 * reused after a tensor's last reader) against every layer run on its inputs'
 * outputs kept whole. */
static void test_graph(void)
{
    cg_err e;
    cg_weights none;
    memset(&none, 0, sizeof none);
    enum { N = 3, C = 2, H = 3, W = 5, E = C * H * W };
    static float x[4][N * E], y[N * 4 * E];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < N * E; i++) x[k][i] = (float)sin(0.37 * i + 1.3 * k) * (k + 1);
    cg_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "res");
    l.op = CG_OP_ADD, l.C = C, l.H = H, l.W = W, l.OC = C, l.OH = H, l.OW = W, l.ninputs = 3;
    l.act = CG_ACT_RELU;
    const float *in3[3] = {x[0], x[1], x[2]};
    CHECK(cg_cpu_layer_inputs(&l, &none, in3, 3, y, N, &e) == 0, "add of 3: %s", e.msg);
    int same = 1;
    for (int i = 0; i < N * E; i++) {
        double v = (double)x[0][i] + (double)x[1][i] + (double)x[2][i];
        same &= y[i] == (float)(v > 0 ? v : 0);
    }
    CHECK(same, "add of 3 with relu equals the double sum");
    l.ninputs = 2, l.act = CG_ACT_NONE;
    CHECK(cg_cpu_layer_inputs(&l, &none, in3, 2, y, N, &e) == 0, "add of 2: %s", e.msg);
    same = 1;
    for (int i = 0; i < N * E; i++) same &= y[i] == (float)((double)x[0][i] + (double)x[1][i]);
    CHECK(same, "add of 2 equals the sum");
    CHECK(cg_cpu_layer_inputs(&l, &none, in3, 3, y, N, &e) != 0, "add of 2 given 3 tensors");
    CHECK_CONTAINS(e.msg, "layer 'res': add reads 2 tensors, given 3");
    CHECK(cg_cpu_layer(&l, &none, x[0], y, N, &e) != 0, "add given one tensor");

    /* concat of parts of 2, 1 and 3 maps of 3x5 */
    cg_layer c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "cat");
    c.op = CG_OP_CONCAT, c.H = H, c.W = W, c.ninputs = 3;
    c.in_C[0] = 2, c.in_C[1] = 1, c.in_C[2] = 3;
    c.C = c.OC = 6, c.OH = H, c.OW = W;
    CHECK(cg_cpu_layer_inputs(&c, &none, in3, 3, y, N, &e) == 0, "concat: %s", e.msg);
    same = 1;
    for (int b = 0; b < N; b++)
        for (int m = 0; m < 6; m++)
            for (int p = 0; p < H * W; p++) {
                int k = m < 2 ? 0 : m < 3 ? 1 : 2, first = k == 0 ? 0 : k == 1 ? 2 : 3;
                float want = x[k][(b * c.in_C[k] + (m - first)) * H * W + p];
                same &= y[(b * 6 + m) * H * W + p] == want;
            }
    CHECK(same, "concat puts each input's maps after the ones before");
    c.in_C[2] = 2;
    CHECK(cg_cpu_layer_inputs(&c, &none, in3, 3, y, N, &e) != 0, "concat whose parts do not add up to C");
    CHECK_CONTAINS(e.msg, "channels add up to 5, not C = 6");

    /* the graph network */
    static cg_spec s;
    cg_weights w;
    CHECK(cg_spec_load("tests/gpu/layers-graph.yaml", &s, &e) == 0, "layers-graph: %s", e.msg);
    CHECK(cg_weights_for_spec(&s, &w, &e) == 0, "weights: %s", e.msg);
    enum { NI = 600 }; /* two chunks of the forward pass */
    const size_t img = (size_t)s.C * s.H * s.W;
    unsigned char *px = malloc(NI * img);
    float *whole[CG_MAX_LAYERS + 1] = {0}, *kept[CG_MAX_LAYERS] = {0};
    float *probs = malloc(NI * 10 * sizeof(float)), *p2 = malloc(NI * 10 * sizeof(float)),
          *p3 = malloc(NI * 10 * sizeof(float));
    int *pred = malloc(NI * sizeof(int)), *pred2 = malloc(NI * sizeof(int)), ok = px && probs && p2 && p3 && pred && pred2;
    for (size_t i = 0; ok && i < NI * img; i++) px[i] = (unsigned char)((i * 2654435761u) >> 24);
    whole[0] = malloc(NI * img * sizeof(float));
    ok = ok && whole[0];
    for (int i = 0; ok && i < s.nlayers; i++) {
        whole[i + 1] = malloc((size_t)NI * (size_t)cg_layer_out_elems(&s.layers[i]) * sizeof(float));
        ok = whole[i + 1] != NULL;
    }
    CHECK(ok, "out of memory");
    if (ok) {
        cg_cpu_input(&s, px, NI, whole[0]);
        for (int i = 0; i < s.nlayers; i++) {
            int in[CG_MAX_INPUTS], nin = cg_layer_inputs(&s, i, in);
            const float *ins[CG_MAX_INPUTS];
            for (int k = 0; k < nin; k++) ins[k] = whole[in[k] + 1];
            CHECK(cg_cpu_layer_inputs(&s.layers[i], &w, ins, nin, whole[i + 1], NI, &e) == 0, "layer %d: %s", i, e.msg);
        }
        CHECK(cg_cpu_forward(&s, &w, px, NI, NULL, probs, pred, NULL, &e) == 0, "graph forward: %s", e.msg);
        CHECK(!memcmp(probs, whole[s.nlayers], NI * 10 * sizeof(float)), "graph forward = layers on kept outputs");
        /* conv1 (read by conv2 and res1) and b1 kept: other slots, the same results */
        kept[0] = malloc((size_t)NI * (size_t)cg_layer_out_elems(&s.layers[0]) * sizeof(float));
        kept[3] = malloc((size_t)NI * (size_t)cg_layer_out_elems(&s.layers[3]) * sizeof(float));
        CHECK(kept[0] && kept[3] && cg_cpu_forward(&s, &w, px, NI, kept, p2, pred2, NULL, &e) == 0,
              "graph forward, two outputs kept: %s", e.msg);
        CHECK(!memcmp(probs, p2, NI * 10 * sizeof(float)) && !memcmp(pred, pred2, NI * sizeof(int)) &&
                  kept[0] && !memcmp(kept[0], whole[1], (size_t)NI * 2048 * sizeof(float)) &&
                  kept[3] && !memcmp(kept[3], whole[4], (size_t)NI * 1536 * sizeof(float)),
              "kept outputs are the layers' and the results do not change");
        CHECK(cg_cpu_forward_f32(&s, &w, whole[0], NI, NULL, p3, NULL, &e) == 0 &&
                  !memcmp(probs, p3, NI * 10 * sizeof(float)),
              "float input gives the same: %s", e.msg);
        /* a layer reading a tensor that is no earlier layer's is refused */
        s.layers[2].inputs[1] = 5;
        CHECK(cg_cpu_forward(&s, &w, px, NI, NULL, probs, pred, NULL, &e) != 0, "a later layer as input");
        CHECK_CONTAINS(e.msg, "layer 'res1' reads tensor 5, which is no earlier layer");
    }
    for (int i = 0; i <= s.nlayers; i++) free(whole[i]);
    free(kept[0]), free(kept[3]);
    free(px), free(probs), free(p2), free(p3), free(pred), free(pred2);
    cg_weights_free(&w);
}

/* Padded pools: a 1x1 identity conv over a 1x5x5 map, then max3 and avg3 of
 * stride 2 with padding 1, against windows worked out in plain double (max
 * skips the padding, the average counts it as zeros: divides by 9). */
static void test_pool_padding(void)
{
    float x[25], one = 1, y[9];
    for (int i = 0; i < 25; i++) x[i] = (float)((i * 7) % 11) - 5.0f;
    cg_tensor t = tensor("p.weight", &one, 1);
    cg_weights w = make_w(&t, 1);
    for (int avg = 0; avg < 2; avg++) {
        cg_layer l = conv_layer("p", 1, 5, 5, 1, 1, 3, 0, CG_ACT_NONE);
        l.pool_stride = 2, l.pool_pad = 1, l.pool_op = avg ? CG_POOL_AVG : CG_POOL_MAX;
        l.OH = l.OW = 3; /* (5 + 2 - 3) / 2 + 1 */
        cg_err e = {""};
        CHECK(cg_cpu_layer(&l, &w, x, y, 1, &e) == 0, "padded pool: %s", e.msg);
        for (int oh = 0; oh < 3; oh++)
            for (int ow = 0; ow < 3; ow++) {
                double mx = -1e300, sum = 0;
                for (int r = oh * 2 - 1; r < oh * 2 + 2; r++)
                    for (int c = ow * 2 - 1; c < ow * 2 + 2; c++) {
                        if (r < 0 || r >= 5 || c < 0 || c >= 5) continue;
                        sum += x[r * 5 + c];
                        if (x[r * 5 + c] > mx) mx = x[r * 5 + c];
                    }
                double want = avg ? sum / 9.0 : mx;
                CHECK(fabs(y[oh * 3 + ow] - want) < 1e-6, "%s pool padded (%d,%d): %g, want %g", avg ? "avg" : "max",
                      oh, ow, y[oh * 3 + ow], want);
            }
    }
}

/* A spec with input mean/std, a batchnorm on the input, a conv with a
 * batchnorm (relu) after it, and a conv with a bias and a batchnorm: the input
 * and the unfolded batchnorm against plain double; then the weights folded
 * (cg_weights_fold_bn) give the conv + batchnorm outputs of the unfolded
 * reference within 1e-5. */
static void test_batchnorm(void)
{
    static const char text[] =
        "network: t\n"
        "input: {channels: 3, height: 6, width: 5, scale: 0.01, mean: [0.4, 0.5, 0.6], std: [0.2, 0.25, 0.3]}\n"
        "layers:\n"
        "  - {name: b0, op: batchnorm, eps: 0.01, activation: tanh}\n"
        "  - {name: c1, op: conv, M: 4, K: 3, padding: 1}\n"
        "  - {name: b1, op: batchnorm, activation: relu}\n"
        "  - {name: c2, op: conv, M: 5, K: 3, bias: true}\n"
        "  - {name: b2, op: batchnorm}\n";
    static cg_spec s;
    cg_err e = {""};
    cg_weights w, fw;
    enum { N = 2, IMG = 90 };
    if (cg_spec_parse("bn.yaml", text, strlen(text), &s, &e) || cg_weights_for_spec(&s, &w, &e)) {
        CHECK(0, "bn spec: %s", e.msg);
        return;
    }
    /* random batch norms are sane: gamma near 1, variance in [0.5, 1.5) */
    const cg_tensor *g = cg_weights_find(&w, "b1.weight"), *v = cg_weights_find(&w, "b1.running_var"),
                    *mu = cg_weights_find(&w, "b1.running_mean"), *be = cg_weights_find(&w, "b1.bias");
    CHECK(g && v && mu && be && g->count == 4, "b1's four tensors");
    for (int c = 0; g && v && mu && be && c < 4; c++)
        CHECK(g->data[c] >= 0.9f && g->data[c] <= 1.1f && v->data[c] >= 0.5f && v->data[c] < 1.5f &&
                  fabsf(mu->data[c]) <= 0.1f && fabsf(be->data[c]) <= 0.1f,
              "sane random bn: %g %g %g %g", g->data[c], v->data[c], mu->data[c], be->data[c]);
    unsigned char px[N * IMG];
    for (int i = 0; i < N * IMG; i++) px[i] = (unsigned char)(i * 37 + 11);
    float x[N * IMG];
    cg_cpu_input(&s, px, N, x);
    for (int i = 0; i < N * IMG; i++) {
        int c = i / 30 % 3;
        double want = (px[i] * 0.01 - s.mean[c]) / s.std[c];
        CHECK(fabs(x[i] - want) <= 1e-6 * fabs(want) + 1e-7, "input %d: %g, want %g", i, x[i], want);
    }
    float *lo[5], *lf[5], probs[N * 5 * 4 * 3], probs_f[N * 5 * 4 * 3];
    int pred[N];
    for (int i = 0; i < 5; i++) {
        lo[i] = malloc((size_t)N * cg_layer_out_elems(&s.layers[i]) * sizeof(float));
        lf[i] = malloc((size_t)N * cg_layer_out_elems(&s.layers[i]) * sizeof(float));
    }
    CHECK(cg_cpu_forward(&s, &w, px, N, lo, probs, pred, NULL, &e) == 0, "unfolded: %s", e.msg);
    /* b0 against plain double: tanh((x - mean) / sqrt(var + eps) * gamma + beta) */
    const cg_tensor *t0[4] = {cg_weights_find(&w, "b0.weight"), cg_weights_find(&w, "b0.bias"),
                              cg_weights_find(&w, "b0.running_mean"), cg_weights_find(&w, "b0.running_var")};
    double worst = 0;
    for (int i = 0; i < N * IMG && t0[3]; i++) {
        int c = i / 30 % 3;
        double want = tanh(((double)x[i] - t0[2]->data[c]) / sqrt((double)t0[3]->data[c] + 0.01) * t0[0]->data[c] +
                           t0[1]->data[c]);
        double d = fabs(lo[0][i] - want);
        if (d > worst) worst = d;
    }
    CHECK(t0[3] && worst < 1e-6, "b0 against plain double: %g", worst);
    CHECK(cg_weights_fold_bn(&s, &w, &fw, &e) == 0, "fold: %s", e.msg);
    CHECK(fw.bn_folded && cg_weights_find(&fw, "c1.bias") && !cg_weights_find(&fw, "b1.weight") &&
              !cg_weights_find(&fw, "b1.running_var") && cg_weights_find(&fw, "b0.weight") &&
              !cg_weights_find(&fw, "b0.running_mean"),
          "folded tensors: c1 gains a bias, b1's go, b0 keeps scale and shift");
    CHECK(cg_cpu_forward(&s, &fw, px, N, lf, probs_f, pred, NULL, &e) == 0, "folded: %s", e.msg);
    /* the folded conv's output is conv + batchnorm (+ relu) of the unfolded run */
    const int pairs[][2] = {{1, 2}, {3, 4}};
    for (int k = 0; k < 2; k++) {
        int ci = pairs[k][0], bi = pairs[k][1];
        size_t n = (size_t)N * cg_layer_out_elems(&s.layers[bi]);
        double num = 0, den = 0, mx = 0;
        for (size_t j = 0; j < n; j++) {
            double d = (double)lf[ci][j] - lo[bi][j];
            num += d * d, den += (double)lo[bi][j] * lo[bi][j];
            if (fabs(d) > mx) mx = fabs(d);
            CHECK(lf[bi][j] == lf[ci][j], "a folded batchnorm passes its conv's output on");
        }
        CHECK(mx < 1e-5 && sqrt(num / (den > 0 ? den : 1)) < 1e-5, "%s folded = %s then %s: max %g",
              s.layers[ci].name, s.layers[ci].name, s.layers[bi].name, mx);
    }
    for (int i = 0; i < 5; i++) free(lo[i]), free(lf[i]);
    cg_weights_free(&fw);
    cg_weights_free(&w);
}

int main(void)
{
    test_small_batch(); /* first: it counts the threads before any OpenMP team starts */
    test_pool_padding();
    test_batchnorm();
    test_conv_by_hand();
    test_conv_naive();
    test_layers_by_hand();
    test_layers_naive();
    test_acts_by_hand();
    test_forward_channels();
    test_fc_softmax();
    test_network();
    test_graph();
    return cg_test_done("cpu");
}
