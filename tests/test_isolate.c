/* test_isolate.c — `convgen check`'s isolated pass (runtime/cli/isolate.h,
 * runtime/formats/units.h; docs/design.md, "Tolerance") without a GPU:
 *   1. a wrong layer of a deep bf16 network: layers-bf16 on the CPU backend
 *      with b4's weights scaled by 1.3 stands for a GPU whose b4 kernel is off
 *      by 30 %. Compared through the whole network, b4's error (0.3) is inside
 *      the bound summed along the graph (0.46): the old check passed it. Run
 *      alone on the reference's inputs it fails its own tolerance (0.12), and
 *      it alone: the layers after it, fed the reference's b4, pass. The same
 *      network unperturbed passes every layer alone.
 *   2. the units of a bf16 network as the planner lays out its kernels (no
 *      GPU: the manifest for sm_90): a kernel each, a conv and the add in its
 *      epilogue one unit (their tolerances summed), a conv and the batch norm
 *      folded into it one (the batch norm's tensor is the conv's), a conv and
 *      the pool kernel after it one (the tensor between them no layer holds);
 *      the input kernel in none; every tensor bf16 but the scores.
 *   3. the CUDA backend's side on tests/fake_cuda.c (a stand-in libcuda.so.1
 *      that runs no kernel; the test re-executes itself with it first on the
 *      loader's path, and skips this part without NVRTC): each unit's kernels
 *      launched alone in manifest order (the input kernel not at all), a
 *      unit's input uploaded as the reference's output rounded to bf16, the
 *      tensor inside a unit poisoned, and every layer failing alone, as the
 *      kernels wrote nothing (NaN: unwritten). */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot.h"
#include "check.h"
#include "cuda_api.h"
#include "fake_cuda.h"
#include "fake_run.h"
#include "gen.h"
#include "harness.h"
#include "isolate.h"
#include "jit.h"
#include "manifest.h"
#include "net_internal.h"
#include "units.h"
#include "weights.h"
#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */

#define IMAGES 6

/* A bf16 network of every grouping a unit has: a conv alone (c1), a conv and
 * the add fused into its epilogue (c2, s), a conv and the batch norm folded
 * into it (c3, bn), a conv and its padded pool as two kernels (c4), fc, softmax. */
static const char spec_text[] =
    "network: isonet\n"
    "input: {channels: 2, height: 10, width: 10}\n"
    "seed: 5\n"
    "precision: bf16\n"
    "layers:\n"
    "  - {name: c1, op: conv, M: 4, K: 3, padding: 1, activation: relu}\n"
    "  - {name: c2, op: conv, M: 4, K: 3, padding: 1, bias: true}\n"
    "  - {name: s, op: add, input: [c2, c1], activation: relu}\n"
    "  - {name: c3, op: conv, M: 6, K: 3, padding: 1}\n"
    "  - {name: bn, op: batchnorm, activation: tanh}\n"
    "  - {name: c4, op: conv, M: 6, K: 3, padding: 1, pool: max3, pool_stride: 2, pool_padding: 1}\n"
    "  - {name: fc, op: fc, out: 10, bias: true}\n"
    "  - {name: prob, op: softmax}\n";
enum { C1, C2, S, C3, BN, C4, FC, PROB, NL };

static cg_net *open_cpu(const cg_spec *s, const cg_weights *w)
{
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CPU;
    cg_net *net = NULL;
    cg_status rc = cg_net_open_with(s, w, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open on the CPU: %s", net ? cg_net_error(net) : "no network");
    if (rc == CG_STATUS_OK) return net;
    cg_net_close(net);
    return NULL;
}

/* The network on the fake driver as check opens it (poisoned, every tensor kept) and its
 * CPU reference (*ref; NULL where it did not open). Returns the fake's open status. */
static cg_status open_as_check(const cg_spec *s, const cg_weights *w, cg_net **gpu, cg_net **ref)
{
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.poison = 1, o.keep_tensors = 1;
    *gpu = NULL, *ref = open_cpu(s, w);
    cg_status rc = cg_net_open_with(s, w, &o, gpu);
    CHECK(rc == CG_STATUS_OK, "open on the fake: %s", *gpu ? cg_net_error(*gpu) : "no network");
    return rc;
}

/* Every layer's output of net over n images (buffers malloc'd into lo). */
static int run_layers(cg_net *net, const cg_spec *s, const unsigned char *px, int n, float **lo)
{
    int pred[IMAGES];
    for (int l = 0; l < s->nlayers; l++) lo[l] = malloc((size_t)n * (size_t)cg_layer_out_elems(&s->layers[l]) * 4);
    cg_input in = {CG_INPUT_U8, n, s->C, s->H, s->W, px};
    cg_status rc = cg_net_run_layers(net, &in, pred, NULL, lo);
    CHECK(rc == CG_STATUS_OK, "run: %s", cg_net_error(net));
    return rc;
}

/* 1: b4 of layers-bf16 off by 30 %, caught alone and not through the network. */
static void wrong_layer(void)
{
    static cg_spec s;
    cg_err e = {""};
    cg_weights w, wp;
    const char *path = "tests/gpu/layers-bf16.yaml";
    if (cg_spec_load(path, &s, &e) || cg_weights_for_spec(&s, &w, &e) || cg_weights_for_spec(&s, &wp, &e)) {
        CHECK(0, "%s: %s", path, e.msg);
        return;
    }
    int b4 = 3;
    CHECK(!strcmp(s.layers[b4].name, "b4") && !s.layers[b4].bias, "layer 3 is b4, without bias");
    cg_tensor *t = (cg_tensor *)cg_weights_find(&wp, "b4.weight");
    CHECK(t != NULL, "b4.weight");
    /* relu and an average pool after it: its output scaled by 1.3 exactly */
    for (long long i = 0; t && i < t->count; i++) t->data[i] *= 1.3f;
    const int n = IMAGES;
    const size_t img = (size_t)s.C * s.H * s.W;
    unsigned char *px = malloc((size_t)n * img);
    for (size_t i = 0; i < (size_t)n * img; i++) px[i] = (unsigned char)(i * 131 + 7);
    cg_net *ref = open_cpu(&s, &w), *dut = open_cpu(&s, &wp);
    float *cl[CG_MAX_LAYERS] = {0}, *gl[CG_MAX_LAYERS] = {0};
    cg_alone *r = malloc(sizeof *r);
    if (ref && dut && r && !run_layers(ref, &s, px, n, cl) && !run_layers(dut, &s, px, n, gl)) {
        double acc[CG_MAX_LAYERS];
        cg_spec_tols(&s, acc);
        cg_harness_diff d;
        cg_harness_compare(gl[b4], cl[b4], (size_t)n * (size_t)cg_layer_out_elems(&s.layers[b4]), acc[b4], &d);
        CHECK(fabs(d.rel_l2 - 0.3) < 1e-4 && d.ok,
              "through the network b4 is off by %.4g, inside its bound summed along the graph %.3g", d.rel_l2,
              acc[b4]);
        int want[CG_MAX_LAYERS];
        CHECK(cg_alone_wanted(&s, want) == s.nlayers, "every layer of a bf16 network is checked alone");
        int rc = cg_check_alone(dut, ref, &s, px, n, cl, want, r, &e);
        CHECK(rc == 0, "the isolated pass: %s", e.msg);
        for (int l = 0; !rc && l < s.nlayers; l++) {
            CHECK(r->alone[l] && r->tol[l] == cg_layer_tol(&s.layers[l]) && r->layers[l] == 1 && r->kernels[l] == 0,
                  "layer %s alone, on its own tolerance %.3g (got %.3g), a unit of one layer", s.layers[l].name,
                  cg_layer_tol(&s.layers[l]), r->tol[l]);
            if (l == b4)
                CHECK(!r->d[l].ok && fabs(r->d[l].rel_l2 - 0.3) < 1e-4 && r->tol[l] < 0.15,
                      "b4 alone: error %.4g against %.3g must fail", r->d[l].rel_l2, r->tol[l]);
            else
                CHECK(r->d[l].ok && r->d[l].rel_l2 == 0, "layer %s alone, fed the reference's inputs: error %.3g",
                      s.layers[l].name, r->d[l].rel_l2);
        }
        /* the network unperturbed: every layer passes alone */
        rc = cg_check_alone(ref, ref, &s, px, n, cl, want, r, &e);
        int all = rc == 0;
        for (int l = 0; all && l < s.nlayers; l++) all = r->alone[l] && r->d[l].ok;
        CHECK(all, "layers-bf16 unperturbed: a layer fails alone (%s)", e.msg);
    }
    for (int l = 0; l < CG_MAX_LAYERS; l++) free(cl[l]), free(gl[l]);
    free(r), free(px);
    cg_net_close(ref), cg_net_close(dut);
    cg_weights_free(&w), cg_weights_free(&wp);
}

/* 2: the units of isonet's kernels for sm_90 (as `convgen generate --arch 90`). */
static void plan(const char *spec)
{
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    cg_err e = {""};
    cg_target tg;
    cg_aot_target((int[]){90}, 1, &tg);
    if (cg_spec_load(spec, &s, &e) || cg_generate_for(&s, "test", &tg, &o, &e) ||
        cg_manifest_parse(o.manifest, o.manifest_len, spec, &m, &e)) {
        CHECK(0, "%s: %s", spec, e.msg);
        return;
    }
    cg_units p;
    int rc = cg_units_plan(&s, &m, &p, &e);
    CHECK(rc == 0 && s.nlayers == NL, "units: %s", e.msg);
    if (rc) {
        cg_gen_free(&o);
        return;
    }
    int unit[NL] = {0, 1, 1, 2, 2, 3, 4, 5}, kernels[6] = {1, 1, 1, 2, 1, 1};
    CHECK(p.nunits == 6, "%d units, 6 expected", p.nunits);
    for (int l = 0; l < NL; l++)
        CHECK(p.unit[l] == unit[l] && p.kept[l] == (l != C2) &&
                  (l == C2 || p.dtype[l + 1] == (l == PROB ? CG_DT_F32 : CG_DT_BF16)),
              "layer %s: unit %d (%d expected), kept %d, dtype %d", s.layers[l].name, p.unit[l], unit[l], p.kept[l],
              (int)p.dtype[l + 1]);
    for (int u = 0; u < 6 && p.nunits == 6; u++) CHECK(p.kernels[u] == kernels[u], "unit %d: %d kernels", u, p.kernels[u]);
    CHECK(p.holder[C3] == BN && p.holder[BN] == BN && p.holder[C1] == C1 && p.dtype[0] == CG_DT_BF16,
          "c3's tensor held by bn's output; the network input bf16");
    int in_units = 0;
    for (int k = 0; k < m.nkernels; k++) {
        int input = !strcmp(m.k[k].tpl, "input_u8");
        CHECK((p.kernel_unit[k] < 0) == input, "kernel %s: unit %d", m.k[k].name, p.kernel_unit[k]);
        in_units += p.kernel_unit[k] >= 0;
    }
    CHECK(in_units == 7, "%d kernels in units, 7 expected", in_units);
    /* what a unit reads from outside: c2 and s read c1 (twice, once for each); c4 reads bn's output */
    unsigned char need[CG_MAX_LAYERS + 1] = {0};
    cg_units_inputs(&s, &p, 1, need);
    CHECK(need[C1 + 1] && !need[0] && !need[C2 + 1], "unit 1 reads c1 alone");
    memset(need, 0, sizeof need);
    cg_units_inputs(&s, &p, 3, need);
    CHECK(need[BN + 1] && !need[C3 + 1], "unit 3 reads c3's tensor through bn, its holder");
    memset(need, 0, sizeof need);
    cg_units_inputs(&s, &p, 0, need);
    CHECK(need[0], "unit 0 reads the network input");
    /* tolerances: own, summed inside the conv-and-add unit alone */
    double tol[CG_MAX_LAYERS], acc[CG_MAX_LAYERS];
    cg_unit_tols(&s, p.unit, tol);
    cg_spec_tols(&s, acc);
    CHECK(fabs(tol[S] - (cg_layer_tol(&s.layers[C2]) + cg_layer_tol(&s.layers[S]) - CG_HARNESS_TOL)) < 1e-12 &&
              tol[C4] == cg_layer_tol(&s.layers[C4]) && tol[FC] == cg_layer_tol(&s.layers[FC]) && acc[FC] > 3 * tol[FC],
          "the add's tolerance %.3g, c4's %.3g, fc's %.3g (through the network %.3g)", tol[S], tol[C4], tol[FC], acc[FC]);
    /* rounding as stored */
    float x[3] = {1.0f + 1.0f / 512, 3.14159265f, -1e-3f}, y[3];
    cg_units_round(CG_DT_BF16, x, y, 3);
    CHECK(y[0] == 1.0f && y[1] == cg_bf16_to_f32(cg_f32_to_bf16(x[1])) && y[1] != x[1], "bf16 rounding");
    cg_units_round(CG_DT_F32, x, y, 3);
    CHECK(!memcmp(x, y, sizeof x), "f32 as it is");
    cg_gen_free(&o);
}

/* ---- 3: the CUDA backend on the fake driver ---- */

static fake_cu_stats_t *st;

/* Spec `path`, its weights and the manifest the CUDA backend generates for it on the
 * fake device (the large batch's kernels); 0, or -1 after a failed CHECK (nothing
 * left to free). */
static int load_on_fake(const char *path, cg_spec *s, cg_weights *w, cg_manifest *m)
{
    cg_err e = {""};
    if (cg_spec_load(path, s, &e) || cg_weights_for_spec(s, w, &e)) {
        CHECK(0, "%s: %s", path, e.msg);
        return -1;
    }
    if (fake_backend_manifest(s, 0, m)) {
        cg_weights_free(w);
        return -1;
    }
    return 0;
}

static void fake_gpu(const char *spec)
{
    static cg_spec s;
    static cg_manifest m;
    cg_err e = {""};
    cg_weights w;
    if (load_on_fake(spec, &s, &w, &m)) return;
    /* record the arguments of c4's conv kernel and of the pool kernel after it */
    int kc = -1, kp = -1;
    for (int k = 0; k < m.nkernels; k++)
        if (!strcmp(m.k[k].layer, "c4")) {
            if (kc < 0) kc = k;
            else kp = k;
        }
    CHECK(kc >= 0 && kp >= 0 && !strcmp(m.k[kp].tpl, "pool"), "c4: a conv kernel and a pool kernel");
    if (kc < 0 || kp < 0) {
        cg_weights_free(&w);
        return;
    }
    memset(st->rec_name, 0, sizeof st->rec_name);
    for (int j = 0; j < 2; j++) {
        const cg_mkernel *k = &m.k[j ? kp : kc];
        snprintf(st->rec_name[j], sizeof st->rec_name[j], "%s", k->name);
        st->rec_nargs[j] = k->nargs, st->rec_int_at[j] = -1;
        for (int i = 0; i < k->nargs; i++)
            if (k->args[i] == CG_ARG_N) st->rec_int_at[j] = i;
    }
    cg_net *gpu, *ref;
    cg_status rc = open_as_check(&s, &w, &gpu, &ref);
    const int n = IMAGES;
    static unsigned char px[IMAGES * 200];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (unsigned char)(i * 37 + 11);
    float *cl[CG_MAX_LAYERS] = {0};
    cg_alone *r = malloc(sizeof *r);
    if (!rc && ref && r && !run_layers(ref, &s, px, n, cl)) {
        int want[CG_MAX_LAYERS];
        cg_alone_wanted(&s, want);
        int names0 = st->nnames;
        int crc = cg_check_alone(gpu, ref, &s, px, n, cl, want, r, &e);
        CHECK(crc == 0, "the isolated pass on the fake: %s", e.msg);
        /* every kernel but the input's, once, in manifest order */
        int at = names0;
        for (int k = 0; k < m.nkernels; k++) {
            if (!strcmp(m.k[k].tpl, "input_u8")) continue;
            CHECK(at < st->nnames && !strcmp(st->names[at], m.k[k].name), "launch %d: %s, expected %s", at - names0,
                  at < st->nnames ? st->names[at] : "none", m.k[k].name);
            at++;
        }
        CHECK(at == st->nnames, "%d launches, %d expected", st->nnames - names0, at - names0);
        /* c4's conv read bn's reference output rounded to bf16; the pool read the poisoned tensor between them */
        int in_c = -1, in_p = -1;
        for (int i = 0; i < m.k[kc].nargs; i++) in_c = m.k[kc].args[i] == CG_ARG_IN ? i : in_c;
        for (int i = 0; i < m.k[kp].nargs; i++) in_p = m.k[kp].args[i] == CG_ARG_IN ? i : in_p;
        const uint16_t *a = (const uint16_t *)(uintptr_t)st->rec_val[0][in_c];
        const uint16_t *b = (const uint16_t *)(uintptr_t)st->rec_val[1][in_p];
        size_t cnt = (size_t)n * (size_t)cg_layer_out_elems(&s.layers[BN]);
        int same = a != NULL && in_c >= 0, poisoned = b != NULL && in_p >= 0;
        for (size_t i = 0; same && i < cnt; i++) same = a[i] == cg_f32_to_bf16(cl[BN][i]);
        for (size_t i = 0; poisoned && i < cnt; i++) poisoned = b[i] == 0x7fff;
        CHECK(st->rec_count[0] == 1 && same, "c4's conv read bn's output as bf16 (%d launches)", st->rec_count[0]);
        CHECK(st->rec_count[1] == 1 && poisoned, "the pool read c4.conv poisoned (the fake ran nothing)");
        /* nothing written: every layer fails alone, its elements unwritten */
        for (int l = 0; !crc && l < s.nlayers; l++) {
            if (l == C2) {
                CHECK(!r->alone[l], "c2 (its add in its epilogue) has no tensor to compare");
                continue;
            }
            long long cnt_l = (long long)n * cg_layer_out_elems(&s.layers[l]);
            CHECK(r->alone[l] && !r->d[l].ok && r->d[l].nonfinite == cnt_l, "layer %s alone: %lld of %lld unwritten",
                  s.layers[l].name, r->d[l].nonfinite, cnt_l);
        }
        CHECK(r->layers[S] == 2 && r->kernels[S] == 1 && r->layers[C4] == 1 && r->kernels[C4] == 2,
              "the add's unit: %d layers, %d kernels; c4's: %d, %d", r->layers[S], r->kernels[S], r->layers[C4],
              r->kernels[C4]);
    }
    /* a network that reuses its tensors' memory cannot run a unit alone */
    cg_net *shared = NULL;
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA;
    if (cg_net_open_with(&s, &w, &o, &shared) == CG_STATUS_OK && r) {
        cg_units p;
        unsigned char need[CG_MAX_LAYERS + 1] = {0};
        const float *ext[CG_MAX_LAYERS + 1] = {0};
        float *out[CG_MAX_LAYERS] = {0};
        CHECK(cg_net_units(shared, &p) == CG_STATUS_OK, "units: %s", cg_net_error(shared));
        cg_units_inputs(&s, &p, p.unit[FC], need);
        ext[C4 + 1] = cl[C4];
        out[FC] = malloc((size_t)n * 10 * sizeof(float));
        cg_status urc = cg_net_run_unit(shared, &p, p.unit[FC], n, px, ext, out);
        CHECK(need[C4 + 1] && (urc == CG_STATUS_DEVICE || urc == CG_STATUS_USAGE), "without keep_tensors: status %d",
              (int)urc);
        CHECK_CONTAINS(cg_net_error(shared), "keep_tensors");
        free(out[FC]);
    }
    cg_net_close(shared);
    for (int l = 0; l < CG_MAX_LAYERS; l++) free(cl[l]);
    free(r);
    cg_net_close(gpu), cg_net_close(ref);
    cg_weights_free(&w);
}

/* A bf16 network whose concat's inputs are written in place (manifest views): on the
 * fake driver (which writes nothing) every layer alone reads back all its elements
 * unwritten: a/b's slices gathered out of the poisoned concat (the parent poisoned
 * for them), the concat whole; the units hold a, b and the concat together. */
static const char views_text[] = "network: isoviews\n"
                                 "input: {channels: 2, height: 8, width: 8}\n"
                                 "seed: 6\n"
                                 "precision: bf16\n"
                                 "layers:\n"
                                 "  - {name: a, op: conv, M: 4, K: 3, padding: 1, activation: relu}\n"
                                 "  - {name: b, op: conv, M: 6, K: 1, input: input, bias: true}\n"
                                 "  - {name: cat, op: concat, input: [a, b]}\n"
                                 "  - {name: c, op: conv, M: 4, K: 3, padding: 1}\n"
                                 "  - {name: fc, op: fc, out: 10}\n"
                                 "  - {name: prob, op: softmax}\n";

static void fake_views(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/isoviews.yaml", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(views_text, f) >= 0 && fclose(f) == 0, "writing %s", path);
    static cg_spec s;
    static cg_manifest m;
    cg_err e = {""};
    cg_weights w;
    if (load_on_fake(path, &s, &w, &m)) return;
    const int ta = cg_manifest_tensor(&m, "a"), tb = cg_manifest_tensor(&m, "b");
    CHECK(ta >= 0 && tb >= 0 && m.t[ta].view && m.t[tb].view, "a and b are views of cat");
    cg_net *gpu, *ref;
    cg_status rc = open_as_check(&s, &w, &gpu, &ref);
    const int n = IMAGES;
    static unsigned char px[IMAGES * 128];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (unsigned char)(i * 29 + 3);
    float *cl[CG_MAX_LAYERS] = {0};
    cg_alone *r = malloc(sizeof *r);
    if (!rc && ref && r && !run_layers(ref, &s, px, n, cl)) {
        int want[CG_MAX_LAYERS];
        cg_alone_wanted(&s, want);
        int crc = cg_check_alone(gpu, ref, &s, px, n, cl, want, r, &e);
        CHECK(crc == 0, "the isolated pass over views on the fake: %s", e.msg);
        for (int l = 0; !crc && l < s.nlayers; l++) {
            long long cnt = (long long)n * cg_layer_out_elems(&s.layers[l]);
            CHECK(r->alone[l] && !r->d[l].ok && r->d[l].nonfinite == cnt, "layer %s alone: %lld of %lld unwritten",
                  s.layers[l].name, r->d[l].nonfinite, cnt);
        }
        cg_units p;
        CHECK(cg_net_units(gpu, &p) == CG_STATUS_OK && p.unit[0] == p.unit[1] && p.unit[1] == p.unit[2] &&
                  p.unit[3] != p.unit[2],
              "a, b and cat one unit, c another");
    }
    for (int l = 0; l < CG_MAX_LAYERS; l++) free(cl[l]);
    free(r);
    cg_net_close(gpu), cg_net_close(ref);
    cg_weights_free(&w);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* again, with the fake driver first on the loader's path and a private JIT cache */
    if (fake_cu_reexec(argv, "isolate")) return cg_test_done("isolate");
    char spec[4200];
    snprintf(spec, sizeof spec, "%s/isonet.yaml", getenv("CG_FAKE_CUDA_CHILD"));
    FILE *f = fopen(spec, "w");
    CHECK(f && fputs(spec_text, f) >= 0 && fclose(f) == 0, "writing %s", spec);
    wrong_layer();
    plan(spec);
    void *nvrtc = dlopen("libnvrtc.so", RTLD_NOW);
    if (!nvrtc) nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    fake_cu_stats_t *(*stats)(void) = NULL;
    if (cuda) *(void **)&stats = dlsym(cuda, "fake_cu_stats");
    if (!nvrtc) {
        printf("skip: the CUDA backend's units on the fake driver: no NVRTC\n");
    } else {
        CHECK(stats != NULL, "the fake libcuda.so.1 is not the one loaded (build/tests/fake)");
        if (stats) st = stats(), fake_gpu(spec), fake_views(getenv("CG_FAKE_CUDA_CHILD"));
    }
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", getenv("CG_FAKE_CUDA_CHILD"));
    CHECK(system(cmd) == 0, "cleanup");
    return cg_test_done("isolate");
}
