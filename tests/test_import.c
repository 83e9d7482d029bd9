/* test_import.c — `convgen import` (runtime/formats/onnx.c, runtime/cli/cmd_import.c).
 * The test writes its own ONNX models with protobuf-c's pack functions (the
 * schema subset in runtime/formats/onnx_subset.proto carries ONNX's field
 * numbers), imports them, and for two networks — conv + batchnorm + relu6 +
 * padded max pool + grouped and depthwise convs + global average pool + Gemm +
 * softmax, and a residual block with a concat, Flatten, Dropout, Identity,
 * MatMul + Add and a Gemm with transB 0 — runs the imported spec on the CPU
 * backend through the library and compares its scores with the network
 * computed here in plain double. Then every refusal: the exit code, the one
 * line naming the node, op and reason, and no file written. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "convgen.h"
#include "onnx.h"
#include "onnx_subset.pb-c.h"

/* ---- a bump arena for the messages a model is built of (reset per model) ---- */
static unsigned char arena[1 << 22];
static size_t arena_used;
static void *A(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (arena_used + n > sizeof arena) {
        printf("FAIL arena full\n");
        exit(1);
    }
    void *p = arena + arena_used;
    memset(p, 0, n);
    arena_used += n;
    return p;
}
static char *Sdup(const char *s)
{
    char *p = A(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

/* growable pointer arrays inside the arena: fixed capacity 64 is plenty here */
#define CAP 64
static Onnx__ModelProto *MP;
static Onnx__GraphProto *G;

static void model_new(void)
{
    arena_used = 0;
    MP = A(sizeof *MP);
    onnx__model_proto__init(MP);
    MP->has_ir_version = 1, MP->ir_version = 8;
    Onnx__OperatorSetIdProto *op = A(sizeof *op);
    onnx__operator_set_id_proto__init(op);
    op->domain = Sdup(""), op->has_version = 1, op->version = 13;
    MP->n_opset_import = 1;
    MP->opset_import = A(sizeof(void *));
    MP->opset_import[0] = op;
    G = A(sizeof *G);
    onnx__graph_proto__init(G);
    G->name = Sdup("test");
    G->node = A(CAP * sizeof(void *));
    G->initializer = A(CAP * sizeof(void *));
    G->input = A(CAP * sizeof(void *));
    G->output = A(CAP * sizeof(void *));
    MP->graph = G;
}

/* dims: -1 for a named (dynamic) dimension */
static void graph_io(int is_input, const char *name, int elem, int nd, const long long *dims)
{
    Onnx__ValueInfoProto *v = A(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = Sdup(name);
    v->type = A(sizeof *v->type);
    onnx__type_proto__init(v->type);
    Onnx__TypeProto__Tensor *t = A(sizeof *t);
    onnx__type_proto__tensor__init(t);
    t->has_elem_type = 1, t->elem_type = elem;
    t->shape = A(sizeof *t->shape);
    onnx__tensor_shape_proto__init(t->shape);
    t->shape->n_dim = (size_t)nd;
    t->shape->dim = A((size_t)nd * sizeof(void *));
    for (int i = 0; i < nd; i++) {
        Onnx__TensorShapeProto__Dimension *d = A(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] < 0) d->dim_param = Sdup(i ? "h" : "batch");
        else d->has_dim_value = 1, d->dim_value = dims[i];
        t->shape->dim[i] = d;
    }
    v->type->tensor_type = t;
    if (is_input) G->input[G->n_input++] = v;
    else G->output[G->n_output++] = v;
}

static void input4(const char *name, long long c, long long h, long long w)
{
    long long d[4] = {-1, c, h, w};
    graph_io(1, name, 1, 4, d);
}
static void output2(const char *name, long long n)
{
    long long d[2] = {-1, n};
    graph_io(0, name, 1, 2, d);
}

/* A FLOAT initializer (raw_data), filled with a fixed pseudo-random pattern
 * in [lo, hi); the values are returned for the reference. */
static uint64_t rng = 1;
static double urand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) * 0x1.0p-53;
}
static Onnx__TensorProto *tensor(const char *name, int nd, const long long *dims)
{
    Onnx__TensorProto *t = A(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = Sdup(name);
    t->n_dims = (size_t)nd;
    t->dims = A((size_t)nd * sizeof(int64_t));
    for (int i = 0; i < nd; i++) t->dims[i] = dims[i];
    t->has_data_type = 1, t->data_type = 1;
    return t;
}
static float *init(const char *name, int nd, const long long *dims, double lo, double hi)
{
    Onnx__TensorProto *t = tensor(name, nd, dims);
    long long k = 1;
    for (int i = 0; i < nd; i++) k *= dims[i];
    float *p = A((size_t)k * sizeof *p);
    for (long long i = 0; i < k; i++) p[i] = (float)(lo + (hi - lo) * urand());
    t->has_raw_data = 1, t->raw_data.len = (size_t)k * 4, t->raw_data.data = (uint8_t *)p;
    G->initializer[G->n_initializer++] = t;
    return p;
}
static void init_i64(const char *name, int n, const long long *vals)
{
    long long d[1] = {n};
    Onnx__TensorProto *t = tensor(name, 1, d);
    t->data_type = 7;
    t->n_int64_data = (size_t)n;
    t->int64_data = A((size_t)n * sizeof(int64_t));
    for (int i = 0; i < n; i++) t->int64_data[i] = vals[i];
    G->initializer[G->n_initializer++] = t;
}

/* node(op, name, "in1,in2", "out") */
static Onnx__NodeProto *node(const char *op, const char *name, const char *ins, const char *outs)
{
    Onnx__NodeProto *n = A(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = Sdup(op), n->name = Sdup(name);
    n->input = A(8 * sizeof(void *)), n->output = A(8 * sizeof(void *));
    n->attribute = A(16 * sizeof(void *));
    for (int pass = 0; pass < 2; pass++) {
        const char *s = pass ? outs : ins;
        while (s && *s) {
            size_t k = strcspn(s, ",");
            char *x = A(k + 1);
            memcpy(x, s, k);
            if (pass) n->output[n->n_output++] = x;
            else n->input[n->n_input++] = x;
            s += k + (s[k] == ',');
        }
    }
    G->node[G->n_node++] = n;
    return n;
}
static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = A(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = Sdup(name), a->has_type = 1, a->type = (Onnx__AttributeProto__AttributeType)type;
    n->attribute[n->n_attribute++] = a;
    return a;
}
static void attr_i(Onnx__NodeProto *n, const char *name, long long v)
{
    Onnx__AttributeProto *a = attr(n, name, 2);
    a->has_i = 1, a->i = v;
}
static void attr_f(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(n, name, 1);
    a->has_f = 1, a->f = v;
}
static void attr_s(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = attr(n, name, 3);
    a->has_s = 1, a->s.len = strlen(v), a->s.data = (uint8_t *)Sdup(v);
}
static void attr_is(Onnx__NodeProto *n, const char *name, int k, long long a0, long long a1, long long a2, long long a3)
{
    Onnx__AttributeProto *a = attr(n, name, 7);
    long long v[4] = {a0, a1, a2, a3};
    a->n_ints = (size_t)k;
    a->ints = A((size_t)k * sizeof(int64_t));
    for (int i = 0; i < k; i++) a->ints[i] = v[i];
}

static char dir[64];
static char model_path[128];

/* Pack the model into dir/NAME.onnx (cut to `keep` bytes when keep > 0). */
static const char *save(const char *name, size_t keep)
{
    size_t n = onnx__model_proto__get_packed_size(MP);
    uint8_t *buf = malloc(n);
    size_t w = onnx__model_proto__pack(MP, buf);
    CHECK(w == n, "pack %s: %zu of %zu bytes", name, w, n);
    snprintf(model_path, sizeof model_path, "%s/%s.onnx", dir, name);
    FILE *f = fopen(model_path, "wb");
    fwrite(buf, 1, keep ? keep : n, f);
    fclose(f);
    free(buf);
    return model_path;
}

/* ---- the reference in double -------------------------------------------------- */

typedef struct {
    int C, H, W;
    double *x;
} T;
static T mk(int C, int H, int W)
{
    T t = {C, H, W, calloc((size_t)C * H * W, sizeof(double))};
    return t;
}
static double *at(T *t, int c, int y, int x) { return &t->x[((size_t)c * t->H + y) * t->W + x]; }
static T conv(T in, const float *w, const float *b, int M, int K, int pt, int pl, int pb, int pr, int s, int g)
{
    T o = mk(M, (in.H + pt + pb - K) / s + 1, (in.W + pl + pr - K) / s + 1);
    int cg = in.C / g, mg = M / g;
    for (int m = 0; m < M; m++)
        for (int y = 0; y < o.H; y++)
            for (int x = 0; x < o.W; x++) {
                double acc = b ? b[m] : 0;
                for (int c = 0; c < cg; c++)
                    for (int i = 0; i < K; i++)
                        for (int j = 0; j < K; j++) {
                            int iy = y * s - pt + i, ix = x * s - pl + j;
                            if (iy < 0 || ix < 0 || iy >= in.H || ix >= in.W) continue;
                            acc += w[((m * cg + c) * K + i) * K + j] * *at(&in, (m / mg) * cg + c, iy, ix);
                        }
                *at(&o, m, y, x) = acc;
            }
    return o;
}
static void bn(T *t, const float *ga, const float *be, const float *mu, const float *var, double eps)
{
    for (int c = 0; c < t->C; c++)
        for (int i = 0; i < t->H * t->W; i++) {
            double *v = &t->x[(size_t)c * t->H * t->W + i];
            *v = (*v - mu[c]) / sqrt(var[c] + eps) * ga[c] + be[c];
        }
}
enum { RELU, RELU6, SIGM, TANH };
static void act(T *t, int a)
{
    for (int i = 0; i < t->C * t->H * t->W; i++) {
        double v = t->x[i];
        t->x[i] = a == RELU ? (v > 0 ? v : 0) : a == RELU6 ? fmin(fmax(v, 0), 6) : a == SIGM ? 1 / (1 + exp(-v)) : tanh(v);
    }
}
static T maxpool(T in, int k, int s, int p)
{
    T o = mk(in.C, (in.H + 2 * p - k) / s + 1, (in.W + 2 * p - k) / s + 1);
    for (int c = 0; c < in.C; c++)
        for (int y = 0; y < o.H; y++)
            for (int x = 0; x < o.W; x++) {
                double m = -INFINITY;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int iy = y * s - p + i, ix = x * s - p + j;
                        if (iy >= 0 && ix >= 0 && iy < in.H && ix < in.W) m = fmax(m, *at(&in, c, iy, ix));
                    }
                *at(&o, c, y, x) = m;
            }
    return o;
}
static T gap(T in)
{
    T o = mk(in.C, 1, 1);
    for (int c = 0; c < in.C; c++) {
        double s = 0;
        for (int i = 0; i < in.H * in.W; i++) s += in.x[(size_t)c * in.H * in.W + i];
        o.x[c] = s / (in.H * in.W);
    }
    return o;
}
/* w: [out][in] when trans, else [in][out] */
static T fc(T in, const float *w, const float *b, int out, int trans)
{
    int n = in.C * in.H * in.W;
    T o = mk(out, 1, 1);
    for (int j = 0; j < out; j++) {
        double acc = b ? b[j] : 0;
        for (int i = 0; i < n; i++) acc += (trans ? w[(size_t)j * n + i] : w[(size_t)i * out + j]) * in.x[i];
        o.x[j] = acc;
    }
    return o;
}
static void softmax(T *t)
{
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < t->C; i++) mx = fmax(mx, t->x[i]);
    for (int i = 0; i < t->C; i++) s += (t->x[i] = exp(t->x[i] - mx));
    for (int i = 0; i < t->C; i++) t->x[i] /= s;
}

/* ---- import, then run on the CPU backend and compare -------------------------- */

static char spec_path[160], wts_path[160];

/* cg_onnx_import into dir/NAME.yaml + NAME.safetensors; 0 on success. */
static int import_lib(const char *name, cg_buf *spec)
{
    cg_onnx_options o;
    memset(&o, 0, sizeof o);
    char wname[64];
    snprintf(wname, sizeof wname, "%s.safetensors", name);
    o.network = name, o.weights = wname, o.scale = 1;
    cg_buf w;
    cg_buf_init(spec), cg_buf_init(&w);
    cg_err e = {{0}};
    int rc = cg_onnx_import(model_path, &o, spec, &w, &e);
    CHECK(rc == 0, "import %s: %s", name, e.msg);
    snprintf(spec_path, sizeof spec_path, "%s/%s.yaml", dir, name);
    snprintf(wts_path, sizeof wts_path, "%s/%s", dir, wname);
    if (!rc) {
        FILE *f = fopen(spec_path, "wb");
        fwrite(spec->data, 1, spec->len, f), fclose(f);
        f = fopen(wts_path, "wb");
        fwrite(w.data, 1, w.len, f), fclose(f);
    }
    cg_buf_free(&w);
    return rc;
}

/* The imported network's scores for n images x against ref (n x classes). */
static void compare(const char *name, int n, int C, int H, int W, const float *x, const double *ref, int classes)
{
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec_path, NULL, &net);
    CHECK(rc == CG_STATUS_OK, "%s: open: %s", name, cg_net_error(net));
    if (rc) {
        cg_net_close(net);
        return;
    }
    int k = 0;
    cg_net_classes(net, &k);
    CHECK(k == classes, "%s: %d classes, expected %d", name, k, classes);
    float *scores = calloc((size_t)n * classes, sizeof *scores);
    int *pred = calloc((size_t)n, sizeof *pred);
    cg_input in = {CG_INPUT_F32, n, C, H, W, x};
    rc = cg_net_run(net, &in, pred, scores);
    CHECK(rc == CG_STATUS_OK, "%s: run: %s", name, cg_net_error(net));
    double worst = 0;
    for (int i = 0; i < n * classes; i++) {
        double d = fabs(scores[i] - ref[i]) / fmax(fabs(ref[i]), 1e-3);
        if (d > worst) worst = d;
    }
    CHECK(worst < 1e-4, "%s: largest relative difference from the double reference %g", name, worst);
    printf("ok %s: %d images x %d scores within %.2g of the double reference\n", name, n, classes, worst);
    free(scores), free(pred);
    cg_net_close(net);
}

/* Model 1: conv(3->6, K3, pad 1, bias) -> bn -> relu -> conv(6->6, groups 2, K3, pads 1,0,1,2, no bias) -> bn ->
 * Clip(0,6) -> MaxPool(3, stride 2, pads 1) -> depthwise conv(K3, pad 1, bias) -> Sigmoid -> GlobalAveragePool ->
 * Flatten -> Gemm(transB 1) -> Softmax. */
static void model_cbr(void)
{
    model_new();
    rng = 7;
    input4("x", 3, 9, 8);
    long long w1d[4] = {6, 3, 3, 3}, d6[1] = {6}, w2d[4] = {6, 3, 3, 3}, w3d[4] = {6, 1, 3, 3}, fd[2] = {5, 6}, d5[1] = {5};
    float *w1 = init("w1", 4, w1d, -0.5, 0.5), *b1 = init("b1", 1, d6, -0.2, 0.2);
    float *g1 = init("g1", 1, d6, 0.8, 1.2), *be1 = init("be1", 1, d6, -0.1, 0.1), *m1 = init("m1", 1, d6, -0.1, 0.1),
          *v1 = init("v1", 1, d6, 0.5, 1.5);
    float *w2 = init("w2", 4, w2d, -0.5, 0.5);
    float *g2 = init("g2", 1, d6, 0.8, 1.2), *be2 = init("be2", 1, d6, 1.0, 3.0), *m2 = init("m2", 1, d6, -0.1, 0.1),
          *v2 = init("v2", 1, d6, 0.5, 1.5);
    float *w3 = init("w3", 4, w3d, -0.5, 0.5), *b3 = init("b3", 1, d6, -0.2, 0.2);
    float *wf = init("wf", 2, fd, -1, 1), *bf = init("bf", 1, d5, -0.5, 0.5);
    Onnx__NodeProto *n = node("Conv", "/features/conv1/Conv", "x,w1,b1", "c1");
    attr_is(n, "pads", 4, 1, 1, 1, 1), attr_is(n, "kernel_shape", 2, 3, 3, 0, 0), attr_is(n, "strides", 2, 1, 1, 0, 0);
    n = node("BatchNormalization", "/features/bn1/BatchNormalization", "c1,g1,be1,m1,v1", "n1");
    attr_f(n, "epsilon", 1e-3f), attr_f(n, "momentum", 0.9f);
    node("Relu", "/features/relu1/Relu", "n1", "r1");
    n = node("Conv", "/features/conv2/Conv", "r1,w2", "c2");
    attr_is(n, "pads", 4, 1, 0, 1, 2), attr_i(n, "group", 2), attr_is(n, "dilations", 2, 1, 1, 0, 0);
    attr_s(n, "auto_pad", "NOTSET");
    node("BatchNormalization", "/features/bn2/BatchNormalization", "c2,g2,be2,m2,v2", "n2");
    n = node("Clip", "/features/relu6/Clip", "n2,cmin,cmax", "r2");
    long long one[1] = {1};
    Onnx__TensorProto *lo = tensor("cmin", 0, one), *hi = tensor("cmax", 0, one);
    static float zero = 0, six = 6;
    lo->n_float_data = 1, lo->float_data = &zero, hi->n_float_data = 1, hi->float_data = &six;
    G->initializer[G->n_initializer++] = lo, G->initializer[G->n_initializer++] = hi;
    n = node("MaxPool", "/features/pool/MaxPool", "r2", "p2");
    attr_is(n, "kernel_shape", 2, 3, 3, 0, 0), attr_is(n, "strides", 2, 2, 2, 0, 0), attr_is(n, "pads", 4, 1, 1, 1, 1);
    attr_i(n, "ceil_mode", 0);
    n = node("Conv", "/features/dw/Conv", "p2,w3,b3", "c3");
    attr_is(n, "pads", 4, 1, 1, 1, 1), attr_i(n, "group", 6);
    node("Sigmoid", "/features/sig/Sigmoid", "c3", "s3");
    node("GlobalAveragePool", "/avgpool/GlobalAveragePool", "s3", "gp");
    node("Flatten", "/Flatten", "gp", "fl");
    n = node("Gemm", "/classifier/Gemm", "fl,wf,bf", "logits");
    attr_f(n, "alpha", 1), attr_f(n, "beta", 1), attr_i(n, "transB", 1);
    node("Softmax", "/Softmax", "logits", "prob");
    output2("prob", 5);
    save("cbr", 0);

    cg_buf spec;
    if (import_lib("cbr", &spec)) return;
    const char *want[] = {"op: batchnorm", "eps: 0.0010000000474974513", "groups: 2", "padding: [1, 0, 1, 2]",
                          "activation: relu6", "pool: max3, pool_stride: 2, pool_padding: 1", "groups: 6",
                          "activation: sigmoid", "pool: global_avg", "op: fc, out: 5, bias: true", "op: softmax",
                          "name: features_conv1", "channels: 3", "height: 9", "width: 8"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) CHECK_CONTAINS(spec.data, want[i]);
    CHECK(!strstr(spec.data, "features_bn2"), "the batchnorm before the pool is folded into its conv:\n%s", spec.data);

    enum { N = 4 };
    float x[N * 3 * 9 * 8];
    double ref[N * 5];
    for (int i = 0; i < N * 3 * 9 * 8; i++) x[i] = (float)(urand() * 2 - 1);
    for (int im = 0; im < N; im++) {
        T t = mk(3, 9, 8);
        for (int i = 0; i < 3 * 9 * 8; i++) t.x[i] = x[im * 3 * 9 * 8 + i];
        T a = conv(t, w1, b1, 6, 3, 1, 1, 1, 1, 1, 1);
        bn(&a, g1, be1, m1, v1, (double)1e-3f);
        act(&a, RELU);
        T b = conv(a, w2, NULL, 6, 3, 1, 0, 1, 2, 1, 2);
        bn(&b, g2, be2, m2, v2, 1e-5);
        act(&b, RELU6);
        T p = maxpool(b, 3, 2, 1);
        T c = conv(p, w3, b3, 6, 3, 1, 1, 1, 1, 1, 6);
        act(&c, SIGM);
        T gg = gap(c);
        T f = fc(gg, wf, bf, 5, 1);
        softmax(&f);
        for (int j = 0; j < 5; j++) ref[im * 5 + j] = f.x[j];
        free(t.x), free(a.x), free(b.x), free(p.x), free(c.x), free(gg.x), free(f.x);
    }
    compare("conv+bn+relu6+maxpool+gap+gemm", N, 3, 9, 8, x, ref, 5);
    cg_buf_free(&spec);
}

/* Model 2: conv(2->4, K3, pad 1, bias) -> relu, read by conv(4->4) and the Add; Add -> relu; conv(4->3, K1);
 * Concat(conv, add) -> 7 maps; Flatten -> Dropout -> Identity -> MatMul + Add -> Tanh ->
 * Reshape(-1, 6) -> Gemm(transB 0) -> Softmax. */
static void model_res(void)
{
    model_new();
    rng = 11;
    input4("img", 2, 5, 6);
    long long wad[4] = {4, 2, 3, 3}, d4[1] = {4}, wbd[4] = {4, 4, 3, 3}, wcd[4] = {3, 4, 1, 1};
    long long mmd[2] = {7 * 5 * 6, 6}, d6[1] = {6}, gd[2] = {6, 3}, d3[1] = {3};
    float *wa = init("wa", 4, wad, -0.5, 0.5), *ba = init("ba", 1, d4, -0.2, 0.2);
    float *wb = init("wb", 4, wbd, -0.3, 0.3), *bb = init("bb", 1, d4, -0.2, 0.2);
    float *wc = init("wc", 4, wcd, -0.5, 0.5);
    float *wm = init("wm", 2, mmd, -0.1, 0.1), *bm = init("bm", 1, d6, -0.1, 0.1);
    float *wg = init("wg", 2, gd, -1, 1), *bg = init("bg", 1, d3, -0.1, 0.1);
    long long shp[2] = {-1, 6};
    init_i64("shape", 2, shp);
    Onnx__NodeProto *n = node("Conv", "Conv_0", "img,wa,ba", "a");
    attr_is(n, "pads", 4, 1, 1, 1, 1);
    node("Relu", "Relu_1", "a", "ar");
    n = node("Conv", "Conv_2", "ar,wb,bb", "b");
    attr_is(n, "pads", 4, 1, 1, 1, 1);
    node("Add", "Add_3", "b,ar", "s");
    node("Relu", "Relu_4", "s", "sr");
    node("Conv", "Conv_5", "sr,wc", "c");
    n = node("Concat", "Concat_6", "c,sr", "cat");
    attr_i(n, "axis", 1);
    node("Flatten", "Flatten_7", "cat", "fl");
    node("Dropout", "Dropout_8", "fl", "dr");
    node("Identity", "Identity_9", "dr", "id");
    node("MatMul", "MatMul_10", "id,wm", "mm");
    node("Add", "Add_11", "mm,bm", "mb");
    node("Tanh", "Tanh_12", "mb", "th");
    node("Reshape", "Reshape_13", "th,shape", "rs");
    node("Gemm", "Gemm_14", "rs,wg,bg", "lg");
    n = node("Softmax", "Softmax_15", "lg", "out");
    attr_i(n, "axis", -1);
    output2("out", 3);
    save("res", 0);

    cg_buf spec;
    if (import_lib("res", &spec)) return;
    const char *want[] = {"name: add_3, op: add, activation: relu, input: [conv_2, conv_0]", "op: concat, input: [conv_5, add_3]",
                          "name: matmul_10, op: fc, out: 6, bias: true, activation: tanh", "name: gemm_14, op: fc, out: 3"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) CHECK_CONTAINS(spec.data, want[i]);

    enum { N = 3 };
    float x[N * 2 * 5 * 6];
    double ref[N * 3];
    for (int i = 0; i < N * 60; i++) x[i] = (float)(urand() * 2 - 1);
    for (int im = 0; im < N; im++) {
        T t = mk(2, 5, 6);
        for (int i = 0; i < 60; i++) t.x[i] = x[im * 60 + i];
        T a = conv(t, wa, ba, 4, 3, 1, 1, 1, 1, 1, 1);
        act(&a, RELU);
        T b = conv(a, wb, bb, 4, 3, 1, 1, 1, 1, 1, 1);
        for (int i = 0; i < 4 * 30; i++) b.x[i] += a.x[i];
        act(&b, RELU);
        T c = conv(b, wc, NULL, 3, 1, 0, 0, 0, 0, 1, 1);
        T cat = mk(7, 5, 6);
        memcpy(cat.x, c.x, 3 * 30 * sizeof(double)), memcpy(cat.x + 90, b.x, 4 * 30 * sizeof(double));
        T m = fc(cat, wm, bm, 6, 0);
        act(&m, TANH);
        T g = fc(m, wg, bg, 3, 0);
        softmax(&g);
        for (int j = 0; j < 3; j++) ref[im * 3 + j] = g.x[j];
        free(t.x), free(a.x), free(b.x), free(c.x), free(cat.x), free(m.x), free(g.x);
    }
    compare("residual+concat+matmul+gemm", N, 2, 5, 6, x, ref, 3);
    cg_buf_free(&spec);
}

/* Model 3, ResNet's tail: conv -> relu, conv, Add -> relu -> GlobalAveragePool (no conv takes it: folded into
 * the Gemm as an fc over C x H x W with the weights spread over the positions) -> Flatten -> Gemm. */
static void model_tail(void)
{
    model_new();
    rng = 5;
    input4("x", 2, 4, 5);
    long long wad[4] = {3, 2, 3, 3}, d3[1] = {3}, wbd[4] = {3, 3, 3, 3}, fd[2] = {4, 3}, d4[1] = {4};
    float *wa = init("wa", 4, wad, -0.5, 0.5), *ba = init("ba", 1, d3, -0.2, 0.2);
    float *wb = init("wb", 4, wbd, -0.4, 0.4);
    float *wf = init("wf", 2, fd, -1, 1), *bf = init("bf", 1, d4, -0.3, 0.3);
    Onnx__NodeProto *n = node("Conv", "/layer4/layer4.0/conv1/Conv", "x,wa,ba", "a");
    attr_is(n, "pads", 4, 1, 1, 1, 1);
    node("Relu", "/layer4/relu/Relu", "a", "ar");
    n = node("Conv", "/layer4/conv2/Conv", "ar,wb", "b");
    attr_is(n, "pads", 4, 1, 1, 1, 1);
    node("Add", "/layer4/Add", "b,ar", "s");
    node("Relu", "/layer4/relu_1/Relu", "s", "sr");
    node("GlobalAveragePool", "/avgpool/GlobalAveragePool", "sr", "g");
    node("Flatten", "/Flatten", "g", "f");
    n = node("Gemm", "/fc/Gemm", "f,wf,bf", "out");
    attr_i(n, "transB", 1);
    output2("out", 4);
    save("tail", 0);
    cg_buf spec;
    if (import_lib("tail", &spec)) return;
    CHECK_CONTAINS(spec.data, "name: fc, op: fc, out: 4, bias: true}");
    /* PyTorch's scoped node names without what repeats: "/layer4/layer4.0/conv1/Conv" is
     * layer4_0_conv1 (the scope layer4.0 extends, and the op type, dropped); "/layer4/Add",
     * the block's sum, is named after its block */
    CHECK_CONTAINS(spec.data, "{name: layer4_0_conv1, op: conv,");
    CHECK_CONTAINS(spec.data, "{name: layer4, op: add,");
    CHECK(!strstr(spec.data, "pool:"), "no conv takes the pool:\n%s", spec.data);
    enum { N = 3 };
    float x[N * 40];
    double ref[N * 4];
    for (int i = 0; i < N * 40; i++) x[i] = (float)(urand() * 2 - 1);
    for (int im = 0; im < N; im++) {
        T t = mk(2, 4, 5);
        for (int i = 0; i < 40; i++) t.x[i] = x[im * 40 + i];
        T a = conv(t, wa, ba, 3, 3, 1, 1, 1, 1, 1, 1);
        act(&a, RELU);
        T b = conv(a, wb, NULL, 3, 3, 1, 1, 1, 1, 1, 1);
        for (int i = 0; i < 60; i++) b.x[i] += a.x[i];
        act(&b, RELU);
        T g = gap(b);
        T f = fc(g, wf, bf, 4, 1);
        for (int j = 0; j < 4; j++) ref[im * 4 + j] = f.x[j];
        free(t.x), free(a.x), free(b.x), free(g.x), free(f.x);
    }
    compare("residual+gap+gemm (pool folded into the fc)", N, 2, 4, 5, x, ref, 4);
    cg_buf_free(&spec);
}

/* ---- the command: exit codes, messages, files ---------------------------------- */

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* convgen import MODEL -o dir/out.yaml [extra]: its exit code; stderr in err. */
static int cli(const char *model, const char *extra, char *err, size_t n)
{
    char cmd[1024], errf[128];
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "build/convgen import '%s' -o %s/out.yaml %s >/dev/null 2>%s", model, dir, extra, errf);
    int st = system(cmd);
    FILE *f = fopen(errf, "r");
    size_t k = f ? fread(err, 1, n - 1, f) : 0;
    err[k] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A refused model: exit 3, the message, nothing written. */
static void refused(const char *what, const char *msg)
{
    char err[2048], out[160], wts[160];
    const char *errp = err;
    snprintf(out, sizeof out, "%s/out.yaml", dir), snprintf(wts, sizeof wts, "%s/out.safetensors", dir);
    unlink(out), unlink(wts);
    int rc = cli(model_path, "", err, sizeof err);
    CHECK(rc == 3, "%s: exit %d, expected 3 (%s)", what, rc, err);
    CHECK_CONTAINS(errp, msg);
    CHECK(!strchr(err, '\n') || strchr(err, '\n') == err + strlen(err) - 1, "%s: more than one line: %s", what, err);
    CHECK(!exists(out) && !exists(wts), "%s: a file was written", what);
}

/* A one-conv model on a 1x6x6 input; more nodes are added by the caller. */
static Onnx__NodeProto *conv_model(long long cdim)
{
    model_new();
    long long wd[4] = {2, 1, 3, 3};
    input4("x", 1, cdim, 6);
    init("w", 4, wd, -1, 1);
    return node("Conv", "Conv_7", "x,w", "y");
}

static void refusals(void)
{
    Onnx__NodeProto *n;

    n = conv_model(6);
    attr_is(n, "dilations", 2, 2, 2, 0, 0);
    output2("y", 2), save("dilation", 0);
    refused("dilation", "convgen: ");
    refused("dilation", "dilation.onnx: node 'Conv_7' (Conv): dilations 2,2: convgen runs dilation 1 only");

    n = conv_model(6);
    attr_s(n, "auto_pad", "SAME_UPPER");
    output2("y", 2), save("auto_pad", 0);
    refused("auto_pad", "node 'Conv_7' (Conv): auto_pad SAME_UPPER: convgen runs explicit pads only");

    conv_model(6);
    node("LeakyRelu", "lrelu", "y", "z");
    output2("z", 2), save("unknown", 0);
    refused("unknown op", "node 'lrelu' (LeakyRelu): convgen does not run this op");

    conv_model(6);
    G->initializer[0]->data_type = 11; /* DOUBLE */
    output2("y", 2), save("double", 0);
    refused("non-float tensor", "node 'Conv_7' (Conv): tensor 'w' is DOUBLE: convgen reads FLOAT (float32) tensors only");

    conv_model(6);
    node("Conv", "Conv_8", "x,y", "z");
    output2("z", 2), save("computed", 0);
    refused("computed weight", "node 'Conv_8' (Conv): weight 'y' is computed in the graph: convgen needs it constant");

    conv_model(-1);
    output2("y", 2), save("dynamic", 0);
    refused("dynamic shape", "input 'x' has no fixed height ('h'): convgen needs C, H and W fixed");

    model_new();
    input4("x", 1, 6, 6);
    n = node("MaxPool", "pool0", "x", "y");
    attr_is(n, "kernel_shape", 2, 2, 2, 0, 0);
    output2("y", 1), save("pool_first", 0);
    refused("pool on the input", "node 'pool0' (MaxPool): reads 'x' (the network input): convgen has no standalone pool layer yet");

    /* a pool after an Add */
    model_new();
    input4("x", 2, 4, 4);
    node("Add", "add0", "x,x", "s");
    n = node("MaxPool", "pool1", "s", "p");
    attr_is(n, "kernel_shape", 2, 2, 2, 0, 0);
    output2("p", 1), save("pool_add", 0);
    refused("pool after add", "node 'pool1' (MaxPool): reads 's' (Add): convgen has no standalone pool layer yet");

    /* an activation whose input has another reader */
    model_new();
    input4("x", 2, 4, 4);
    n = node("Conv", "c0", "x,w", "y");
    long long wd[4] = {2, 2, 1, 1};
    init("w", 4, wd, -1, 1);
    node("Relu", "r0", "y", "yr");
    node("Add", "a0", "y,yr", "s");
    output2("s", 1), save("act_shared", 0);
    refused("shared activation input", "node 'r0' (Relu): reads 'y', which other nodes read too");

    /* a global average pool no conv takes, read by something other than an fc */
    model_new();
    input4("x", 2, 4, 4);
    node("Add", "add0", "x,x", "s");
    node("GlobalAveragePool", "gap0", "s", "g");
    node("Relu", "relu0", "g", "r");
    output2("r", 2), save("gap_relu", 0);
    refused("gap not before an fc", "node 'relu0' (Relu): reads 'g', a global average pool of a tensor no conv computes");

    /* Clip other than (0, 6) */
    conv_model(6);
    n = node("Clip", "clip0", "y", "z");
    attr_f(n, "min", -1), attr_f(n, "max", 1);
    output2("z", 2), save("clip", 0);
    refused("clip", "node 'clip0' (Clip): Clip(-1, 1): convgen runs Clip(0, 6) as relu6");

    /* the file itself */
    conv_model(6);
    output2("y", 2);
    const char *good = save("truncated", 0);
    size_t full = onnx__model_proto__get_packed_size(MP);
    save("truncated", full / 2);
    (void)good;
    refused("truncated protobuf", "truncated.onnx: not an ONNX model (the protobuf does not parse");
    snprintf(model_path, sizeof model_path, "%s/text.onnx", dir);
    FILE *f = fopen(model_path, "w");
    fputs("network: not-onnx\nlayers: []\n", f), fclose(f);
    refused("a text file", "text.onnx: not an ONNX model");
    snprintf(model_path, sizeof model_path, "%s/missing.onnx", dir);
    refused("missing file", "missing.onnx");

    /* usage: -o not .yaml, --mean without --std, weights file already there */
    conv_model(6);
    n = node("GlobalAveragePool", "gap", "y", "g");
    node("Flatten", "fl", "g", "f");
    long long gw[2] = {3, 2};
    init("gw", 2, gw, -1, 1);
    n = node("Gemm", "fc", "f,gw", "o");
    attr_i(n, "transB", 1);
    output2("o", 3), save("ok", 0);
    char err[2048], out[160], wts[160];
    const char *errp = err;
    snprintf(out, sizeof out, "%s/out.yaml", dir), snprintf(wts, sizeof wts, "%s/out.safetensors", dir);
    unlink(out), unlink(wts);
    CHECK(cli(model_path, "--mean 0.5", err, sizeof err) == 2, "--mean alone: %s", err);
    CHECK_CONTAINS(errp, "--mean and --std go together");
    CHECK(cli(model_path, "--mean 0.5 --std 0.25 --scale 0.5", err, sizeof err) == 0, "import: %s", err);
    CHECK(exists(out) && exists(wts), "import wrote no files");
    cg_buf b;
    cg_buf_init(&b);
    cg_err e = {{0}};
    CHECK(cg_read_file(out, &b, &e) == 0, "%s", e.msg);
    CHECK_CONTAINS(b.data, "scale: 0.5\n  mean: [0.5]\n  std: [0.25]\n");
    CHECK_CONTAINS(b.data, "weights: out.safetensors\n");
    CHECK_CONTAINS(b.data, "pool: global_avg");
    cg_buf_free(&b);
    CHECK(cli(model_path, "", err, sizeof err) == 2, "existing weights without --force: %s", err);
    CHECK_CONTAINS(errp, "out.safetensors exists");
    CHECK(cli(model_path, "--force", err, sizeof err) == 0, "--force: %s", err);
    /* the imported network runs */
    cg_net *net = NULL;
    CHECK(cg_net_open(out, NULL, &net) == CG_STATUS_OK, "open %s: %s", out, cg_net_error(net));
    cg_net_close(net);
    unlink(out), unlink(wts);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/convgen-import-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    model_cbr();
    model_res();
    model_tail();
    if (access("build/convgen", X_OK) == 0) refusals();
    else printf("FAIL build/convgen missing: run from the repository root after make build/convgen\n"), cg_t_fail++;
    char cmd[128];
    if (getenv("CG_KEEP")) return cg_test_done("test_import");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) printf("note: could not remove %s\n", dir);
    return cg_test_done("test_import");
}
