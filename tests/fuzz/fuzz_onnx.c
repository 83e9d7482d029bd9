/* fuzz_onnx.c — the ONNX importer (cg_onnx_import) on arbitrary bytes: no
 * memory error, every refusal one line, an accepted model's spec and weights
 * non-empty. The seed is a small model (Conv, Relu, GlobalAveragePool,
 * Flatten, Gemm) packed with protobuf-c. */
#include "fuzz.h"
#include "onnx.h"
#include "onnx_subset.pb-c.h"

static char path[4096];

static void seed(const char *dir)
{
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    op.domain = "", op.has_version = 1, op.version = 13;
    m.has_ir_version = 1, m.ir_version = 8, m.n_opset_import = 1, m.opset_import = ops, m.graph = &g;
    /* input x: N x 1 x 4 x 4; output y: N x 2 */
    Onnx__TensorShapeProto__Dimension d[4], *dp[4];
    for (int i = 0; i < 4; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        d[i].has_dim_value = 1, d[i].dim_value = i == 0 ? 1 : i == 1 ? 1 : 4;
        dp[i] = &d[i];
    }
    Onnx__TensorShapeProto shp = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shp.n_dim = 4, shp.dim = dp;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1, tt.elem_type = 1, tt.shape = &shp;
    Onnx__TypeProto ty = ONNX__TYPE_PROTO__INIT;
    ty.tensor_type = &tt;
    Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT, out = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__ValueInfoProto *ins[1] = {&in}, *outs[1] = {&out};
    in.name = "x", in.type = &ty, out.name = "y";
    g.n_input = 1, g.input = ins, g.n_output = 1, g.output = outs;
    static float wv[2 * 9], fv[2 * 2];
    for (int i = 0; i < 18; i++) wv[i] = (float)(i % 5) / 4.0f - 0.5f;
    for (int i = 0; i < 4; i++) fv[i] = (float)i - 1.5f;
    int64_t wd[4] = {2, 1, 3, 3}, fd[2] = {2, 2};
    Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT, f = ONNX__TENSOR_PROTO__INIT, *inits[2] = {&w, &f};
    w.name = "w", w.n_dims = 4, w.dims = wd, w.has_data_type = 1, w.data_type = 1;
    w.has_raw_data = 1, w.raw_data.len = sizeof wv, w.raw_data.data = (uint8_t *)wv;
    f.name = "f", f.n_dims = 2, f.dims = fd, f.has_data_type = 1, f.data_type = 1, f.n_float_data = 4, f.float_data = fv;
    g.n_initializer = 2, g.initializer = inits;
    int64_t pads[4] = {1, 1, 1, 1};
    Onnx__AttributeProto pa = ONNX__ATTRIBUTE_PROTO__INIT, tb = ONNX__ATTRIBUTE_PROTO__INIT;
    Onnx__AttributeProto *pap[1] = {&pa}, *tbp[1] = {&tb};
    pa.name = "pads", pa.has_type = 1, pa.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, pa.n_ints = 4, pa.ints = pads;
    tb.name = "transB", tb.has_type = 1, tb.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, tb.has_i = 1, tb.i = 1;
    char *cin[2] = {"x", "w"}, *cout[1] = {"c"}, *rin[1] = {"c"}, *rout[1] = {"r"}, *gout[1] = {"p"}, *flout[1] = {"fl"};
    char *gin[2] = {"fl", "f"}, *yout[1] = {"y"};
    Onnx__NodeProto n[5];
    for (int i = 0; i < 5; i++) onnx__node_proto__init(&n[i]);
    n[0].op_type = "Conv", n[0].name = "conv", n[0].n_input = 2, n[0].input = cin, n[0].n_output = 1, n[0].output = cout;
    n[0].n_attribute = 1, n[0].attribute = pap;
    n[1].op_type = "Relu", n[1].n_input = 1, n[1].input = rin, n[1].n_output = 1, n[1].output = rout;
    n[2].op_type = "GlobalAveragePool", n[2].n_input = 1, n[2].input = rout, n[2].n_output = 1, n[2].output = gout;
    n[3].op_type = "Flatten", n[3].n_input = 1, n[3].input = gout, n[3].n_output = 1, n[3].output = flout;
    n[4].op_type = "Gemm", n[4].n_input = 2, n[4].input = gin, n[4].n_output = 1, n[4].output = yout;
    n[4].n_attribute = 1, n[4].attribute = tbp;
    Onnx__NodeProto *np[5] = {&n[0], &n[1], &n[2], &n[3], &n[4]};
    g.n_node = 5, g.node = np;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    if (!buf || onnx__model_proto__pack(&m, buf) != len) {
        fprintf(stderr, "seed: pack failed\n");
        exit(1);
    }
    fuzz_seed(dir, "conv.onnx", buf, len);
    free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(path, sizeof path, "a.onnx");
    const char *dir = fuzz_seed_dir();
    if (dir) {
        seed(dir);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(path, data, size);
    cg_onnx_options o;
    memset(&o, 0, sizeof o);
    o.network = "fuzz", o.weights = "fuzz.safetensors", o.scale = 1.0 / 255;
    cg_buf spec, w;
    cg_buf_init(&spec), cg_buf_init(&w);
    cg_err e = {{0}};
    if (cg_onnx_import(path, &o, &spec, &w, &e)) fuzz_check_err(&e, "onnx");
    else if (!spec.len || !w.len) {
        fprintf(stderr, "onnx: accepted with an empty spec or weights\n");
        abort();
    }
    cg_buf_free(&spec), cg_buf_free(&w);
    return 0;
}
