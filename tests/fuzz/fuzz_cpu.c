/* fuzz_cpu.c — any spec the reader accepts, run through the CPU backend: the
 * spec's seeded random weights (a weights file it names is not read), two
 * images made from the input, cg_cpu_forward with and without every layer's
 * output kept, and the public API's run (cg_net_open_with, cg_net_run) on the
 * same images. A spec whose forward pass exceeds the bounds of fuzz_net.h is
 * only parsed. No memory error; every rejection one line; an accepted spec
 * runs (the CPU backend refuses nothing the reader accepted); predictions are
 * classes of the network, and the three runs agree. Seeds: small specs below
 * (every op, activation, pool, padding and stride), plus the repository's
 * spec files (copied by tools/run-fuzz.sh). */
#include "convgen.h"
#include "cpu.h"
#include "fuzz_net.h"
#include "net_internal.h"
#include "weights.h"

#include <omp.h>

enum { NIMG = 2 };

static const char *const seeds[][2] = {
    {"conv-fc-softmax.yaml",
     "network: tiny\ninput: {channels: 1, height: 8, width: 8, scale: 0.0039, offset: 0}\nseed: 3\n"
     "layers:\n"
     "  - {name: conv1, op: conv, M: 4, K: 3, bias: true, activation: tanh, pool: max2}\n"
     "  - {name: fc1, op: fc, out: 5, bias: true, activation: relu}\n"
     "  - {name: prob, op: softmax}\n"},
    {"pad-stride-avg.yaml",
     "network: padded\ninput: {channels: 2, height: 12, width: 10, scale: 1, offset: -128}\nseed: 11\n"
     "layers:\n"
     "  - {name: c1, op: conv, M: 3, K: 3, padding: [1, 0, 2, 1], stride: 2, activation: relu, pool: avg2,\n"
     "      pool_stride: 1}\n"
     "  - {name: c2, op: conv, M: 2, K: 1, padding: same, activation: none, pool: max3, pool_stride: 1}\n"
     "  - {name: out, op: fc, out: 3}\n"},
    {"global-avg.yaml",
     "network: gap\ninput: {channels: 3, height: 6, width: 6, scale: 0.01, offset: 0.5}\nseed: 7\n"
     "layers:\n"
     "  - {name: stem, op: conv, M: 4, K: 3, padding: same, bias: true, activation: relu, pool: global_avg}\n"
     "  - {name: fc, op: fc, out: 2, activation: tanh}\n"
     "  - {name: prob, op: softmax}\n"},
    {"fc-only.yaml",
     "network: mlp\ninput: {channels: 1, height: 4, width: 4, scale: 0.5, offset: 0}\nseed: 1\n"
     "layers:\n"
     "  - {name: fc1, op: fc, out: 6, bias: true, activation: relu}\n"
     "  - {name: fc2, op: fc, out: 4}\n"},
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    omp_set_num_threads(1); /* two cores are shared: one thread per harness */
    const char *dir = fuzz_seed_dir();
    if (dir) {
        for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
            cg_spec *s = malloc(sizeof *s);
            cg_err e;
            if (!s || cg_spec_parse(seeds[i][0], seeds[i][1], strlen(seeds[i][1]), s, &e) || !fuzz_net_small(s)) {
                fprintf(stderr, "seed %s: %s\n", seeds[i][0], s ? e.msg : "out of memory");
                exit(1);
            }
            free(s);
            fuzz_seed(dir, seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
        }
        exit(0);
    }
    return 0;
}

/* The pixels: every value the input's bytes give, 0 and 255 among them. */
static void make_pixels(unsigned char *px, size_t n, const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
    for (size_t i = 0; i < n; i++) {
        h = h * 1664525u + 1013904223u;
        px[i] = i % 7 == 0 ? 0 : i % 7 == 1 ? 255 : (unsigned char)(h >> 24);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cg_spec s;
    cg_err e = {{0}};
    if (cg_spec_parse("fuzz/cpu.yaml", (const char *)data, size, &s, &e)) {
        fuzz_check_err(&e, "cg_spec_parse");
        return 0;
    }
    if (!fuzz_net_small(&s)) return 0;
    s.weights[0] = 0; /* the seeded random weights, never a file the input names */
    cg_weights w;
    if (cg_weights_for_spec(&s, &w, &e)) {
        fprintf(stderr, "cg_weights_for_spec refused an accepted spec: %s\n", e.msg);
        abort();
    }
    size_t img = (size_t)s.C * s.H * s.W, classes = (size_t)cg_layer_out_elems(&s.layers[s.nlayers - 1]);
    unsigned char *px = malloc(NIMG * img);
    float *probs = malloc(NIMG * classes * sizeof *probs), *probs2 = malloc(NIMG * classes * sizeof *probs);
    float *scores = malloc(NIMG * classes * sizeof *probs);
    float *layer_out[CG_MAX_LAYERS] = {0};
    int pred[NIMG], pred2[NIMG], pred3[NIMG];
    if (!px || !probs || !probs2 || !scores) abort();
    for (int i = 0; i < s.nlayers; i++)
        if (!(layer_out[i] = malloc(NIMG * (size_t)cg_layer_out_elems(&s.layers[i]) * sizeof(float)))) abort();
    make_pixels(px, NIMG * img, data, size);

    if (cg_cpu_forward(&s, &w, px, NIMG, NULL, probs, pred, NULL, &e)) {
        fprintf(stderr, "cg_cpu_forward refused an accepted spec: %s\n", e.msg);
        abort();
    }
    fuzz_check_pred(&s, pred, NIMG, "cg_cpu_forward");
    if (cg_cpu_forward(&s, &w, px, NIMG, layer_out, probs2, pred2, NULL, &e)) {
        fprintf(stderr, "cg_cpu_forward (layer outputs kept) failed: %s\n", e.msg);
        abort();
    }
    if (memcmp(pred, pred2, sizeof pred) || memcmp(probs, probs2, NIMG * classes * sizeof *probs) ||
        memcmp(probs, layer_out[s.nlayers - 1], NIMG * classes * sizeof *probs)) {
        fprintf(stderr, "cg_cpu_forward gives other results with the layer outputs kept\n");
        abort();
    }

    cg_net_options o;
    cg_net_options_init(&o);
    cg_net *net = NULL;
    cg_status st = cg_net_open_with(&s, &w, &o, &net);
    if (st) {
        fprintf(stderr, "cg_net_open_with (cpu) refused an accepted spec: %s\n", cg_net_error(net));
        abort();
    }
    cg_input in = {CG_INPUT_U8, NIMG, s.C, s.H, s.W, px};
    if ((st = cg_net_run(net, &in, pred3, scores))) {
        fprintf(stderr, "cg_net_run (cpu) failed: %s\n", cg_net_error(net));
        abort();
    }
    if (memcmp(pred, pred3, sizeof pred) || memcmp(probs, scores, NIMG * classes * sizeof *probs)) {
        fprintf(stderr, "cg_net_run and cg_cpu_forward disagree\n");
        abort();
    }
    cg_net_close(net);

    for (int i = 0; i < s.nlayers; i++) free(layer_out[i]);
    free(px), free(probs), free(probs2), free(scores);
    cg_weights_free(&w);
    return 0;
}
