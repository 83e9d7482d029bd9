/* test_graph.c — the CUDA backend's launches without a GPU: the library opened on
 * tests/fake_cuda.c (a stand-in libcuda.so.1 that counts what the runtime asks of
 * the driver; the kernels are compiled by NVRTC as on a GPU, and run nothing).
 * It checks the graph capture and replay logic of runtime/cuda/gpu.c — a batch's
 * kernels captured once per stream set and image count (a few counts held per
 * set) and replayed with one launch, destroyed at close, plain
 * launches with no_graphs —, that a run synchronizes with the host once a batch
 * and allocates nothing once its staging exists, and that the batch picks the
 * kernels (bucket 1 and 8: fc_gemv, and the network's tail — fc2, softmax and the
 * prediction — as one kernel, templates/ops/tail.lua, its three outputs bound by role
 * to the tensors the whole-network kernel writes them to; the large batch's softmax
 * writing the predictions, no argmax kernel), and programmatic dependent launch: on the
 * sm_90 fake the kernels generated with the prologue (manifest pdl=1) that follow
 * another kernel with no event between are launched through cuLaunchKernelEx with
 * programmatic stream serialization, captured into the graph like the others;
 * none is with no_pdl, with profile, on an sm_80 fake (no prologue generated)
 * or where the driver lacks cuLaunchKernelEx; and that a stream set's tensors are one
 * allocation and that only a network opened with keep_tensors returns every
 * layer's output (the default plan shares tensors' bytes); and the whole-network kernel
 * the planner adds at bucket 8 (whole(): forced on, off and auto, and refused); a
 * host input picking a first layer's kernel (pixel_feeds(): the conv reading the
 * pixels, or the one reading floats); a concat's inputs written into their slices (views(): the producer bound at its
 * slice, a layer read back out of the concat's images); auto's choice between
 * overlapped and plain launches for a bucket's kernels (launch_ways(): both timed,
 * the faster kept; with the whole kernel, three ways). The other
 * tests turn it off to count the per-layer kernels. The test re-executes itself with
 * LD_LIBRARY_PATH naming the fake and the JIT cache in a temporary directory.
 * Skipped where NVRTC is missing. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "convgen.h"
#include "cuda_api.h"
#include "fake_cuda.h"
#include "fake_run.h"
#include "gen.h"
#include "harness.h"
#include "jit.h"
#include "manifest.h"
#include "net_internal.h"
#include "spec.h"
#include "weights.h"
#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */

static const char spec_text[] =
    "network: graphnet\n"
    "input: {channels: 1, height: 12, width: 12}\n"
    "seed: 3\n"
    "layers:\n"
    "  - {name: c1, op: conv, M: 4, K: 3, activation: relu, pool: max2}\n"
    "  - {name: fc1, op: fc, out: 20, bias: true, activation: tanh}\n"
    "  - {name: fc2, op: fc, out: 10, bias: true}\n"
    "  - {name: prob, op: softmax}\n";

static fake_cu_stats_t *st;
static unsigned char pixels[64 * 144];

static cg_net *open_net(const char *spec, long long batch, int no_graphs)
{
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA;
    o.batch = batch;
    o.no_graphs = no_graphs;
    o.whole = 2; /* the per-layer kernels: what these tests count (the whole kernel: whole() below) */
    o.pdl_always = 1; /* overlapped launches as they are (auto's timing of plain ones: launch_ways() below) */
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open (batch %lld): %s", batch, net ? cg_net_error(net) : "no network");
    if (rc != CG_STATUS_OK) {
        cg_net_close(net);
        return NULL;
    }
    return net;
}

static int run(cg_net *net, long long n)
{
    static int pred[64];
    static float scores[64 * 10];
    cg_input in = {CG_INPUT_U8, n, 1, 12, 12, pixels};
    cg_status rc = cg_net_run(net, &in, pred, scores);
    CHECK(rc == CG_STATUS_OK, "run %lld images: %s", n, cg_net_error(net));
    return rc;
}

/* Whether a kernel whose name starts with `prefix` was launched since name index `from`. */
static int launched(int from, const char *prefix)
{
    for (int i = from; i < st->nnames; i++)
        if (!strncmp(st->names[i], prefix, strlen(prefix))) return 1;
    return 0;
}

static void graphs(const char *spec)
{
    int names0 = st->nnames;
    cg_net *net = open_net(spec, 8, 0);
    if (!net) return;
    fake_cu_stats_t a = *st;
    /* first run of 3 images: one batch, its kernels captured and replayed once */
    if (run(net, 3)) goto done;
    /* the kernels of one batch: the conv reading the pixels (planner.pixel_twin), fc1, the tail */
    int k = st->launches - a.launches;
    CHECK(k == 3, "a batch launched %d kernels", k);
    CHECK(st->captures - a.captures == 1, "first run: %d captures", st->captures - a.captures);
    CHECK(st->graph_launches - a.graph_launches == 1, "first run: %d graph launches", st->graph_launches - a.graph_launches);
    CHECK(st->kernels_run - a.kernels_run == k, "first run ran %d kernels, captured %d", st->kernels_run - a.kernels_run, k);
    CHECK(st->host_syncs - a.host_syncs == 1, "first run: %d host synchronizations", st->host_syncs - a.host_syncs);
    CHECK(launched(names0, "fc_gemv"), "bucket 8: no fc_gemv launched");
    CHECK(launched(names0, "tail_i20o10_none_bias_softmax") && !launched(names0, "softmax") &&
              !launched(names0, "argmax"),
          "bucket 8: fc2, softmax and argmax not one kernel");
    /* the same count again: replayed, nothing captured, launched or allocated */
    fake_cu_stats_t b = *st;
    if (run(net, 3)) goto done;
    CHECK(st->captures == b.captures && st->launches == b.launches, "second run: captures %d, launches %d",
          st->captures - b.captures, st->launches - b.launches);
    CHECK(st->graph_launches - b.graph_launches == 1 && st->kernels_run - b.kernels_run == k,
          "second run: %d graph launches, %d kernels", st->graph_launches - b.graph_launches, st->kernels_run - b.kernels_run);
    CHECK(st->device_allocs == b.device_allocs && st->host_allocs == b.host_allocs,
          "second run allocated: %d device, %d host", st->device_allocs - b.device_allocs, st->host_allocs - b.host_allocs);
    CHECK(st->host_syncs - b.host_syncs == 1, "second run: %d host synchronizations", st->host_syncs - b.host_syncs);
    /* another count: captured again (its grid and n are baked in) */
    b = *st;
    if (run(net, 5)) goto done;
    CHECK(st->captures - b.captures == 1 && st->launches - b.launches == k, "5 images: %d captures, %d launches",
          st->captures - b.captures, st->launches - b.launches);
    /* 20 images in batches of 8, 8, 4 over the two stream sets: set 0 captures for 8
     * (it holds 3 and 5), set 1 for 8, set 0 for 4 */
    b = *st;
    if (run(net, 20)) goto done;
    CHECK(st->captures - b.captures == 3 && st->graph_launches - b.graph_launches == 3,
          "20 images: %d captures, %d graph launches", st->captures - b.captures, st->graph_launches - b.graph_launches);
    CHECK(st->kernels_run - b.kernels_run == 3 * k, "20 images ran %d kernels", st->kernels_run - b.kernels_run);
    CHECK(st->host_syncs - b.host_syncs == 3, "20 images: %d host synchronizations", st->host_syncs - b.host_syncs);
    CHECK(st->graphs_live == 5, "%d graphs live (set 0: 3, 5, 8 and 4 images; set 1: 8)", st->graphs_live);
    /* again: every count each set meets is held (a full batch and the remainder) */
    b = *st;
    if (run(net, 20)) goto done;
    CHECK(st->captures == b.captures && st->graph_launches - b.graph_launches == 3,
          "20 images again: %d captures, %d graph launches", st->captures - b.captures,
          st->graph_launches - b.graph_launches);
done:
    cg_net_close(net);
    CHECK(st->graphs_live == 0, "close left %d graphs", st->graphs_live);
}

static void plain(const char *spec)
{
    cg_net *net = open_net(spec, 8, 1);
    if (!net) return;
    fake_cu_stats_t a = *st;
    if (!run(net, 3)) {
        int k = st->launches - a.launches;
        CHECK(k == 3 && st->kernels_run - a.kernels_run == k, "no_graphs: %d launches, %d run", k,
              st->kernels_run - a.kernels_run);
        CHECK(st->captures == a.captures && st->graph_launches == a.graph_launches,
              "no_graphs captured %d, replayed %d", st->captures - a.captures, st->graph_launches - a.graph_launches);
    }
    cg_net_close(net);
}

/* One run of 3 images (batch 8, a captured graph) on the fake as set (cc,
 * no_launch_ex) with no_pdl and profile as given: the launches it made with
 * programmatic stream serialization; *k: all its launches; flagged(prefix) below
 * reads which. */
static int pdl_names0;
static int pdl_untimed; /* the last pdl_launches(): its layers' times read NaN (not timed alone) */
static int pdl_launches_at(const char *spec, int cc, int no_launch_ex, int no_pdl, int profile, long long batch, int *k)
{
    st->cc = cc, st->no_launch_ex = no_launch_ex;
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA;
    o.batch = batch;
    o.whole = 2;
    o.no_pdl = no_pdl, o.pdl_always = 1;
    o.profile = profile;
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open (cc %d): %s", cc, net ? cg_net_error(net) : "no network");
    int n = -1;
    *k = 0;
    if (rc == CG_STATUS_OK) {
        fake_cu_stats_t a = *st;
        pdl_names0 = st->nnames;
        if (!run(net, 3)) {
            n = st->pdl_launches - a.pdl_launches;
            *k = st->launches - a.launches;
            CHECK(st->kernels_run - a.kernels_run == *k, "cc %d: ran %d kernels of %d launched", cc,
                  st->kernels_run - a.kernels_run, *k);
            CHECK(profile || (st->captures - a.captures == 1 && st->graph_launches - a.graph_launches == 1),
                  "cc %d: %d captures, %d graph launches", cc, st->captures - a.captures,
                  st->graph_launches - a.graph_launches);
            double total = -1, layer_ms[8];
            CHECK(cg_net_times(net, &total, layer_ms) == CG_STATUS_OK, "times");
            pdl_untimed = isnan(layer_ms[0]);
        }
    }
    cg_net_close(net);
    st->cc = 0, st->no_launch_ex = 0, st->sms = 0;
    return n;
}

static int pdl_launches(const char *spec, int cc, int no_launch_ex, int no_pdl, int profile, int *k)
{
    return pdl_launches_at(spec, cc, no_launch_ex, no_pdl, profile, 8, k);
}

/* Whether the launch of the kernel named `prefix`... in the last pdl_launches() asked for PDL (-1: not launched). */
static int flagged(const char *prefix)
{
    for (int i = pdl_names0; i < st->nnames; i++)
        if (!strncmp(st->names[i], prefix, strlen(prefix))) return st->pdl[i];
    return -1;
}

static void pdl(const char *spec)
{
    int k = 0;
    /* graphnet at bucket 8: the conv reading the pixels (no input_u8: planner.pixel_twin),
     * fc1, the tail (fc2, softmax and the prediction); no event inside the network
     * (small-batch kernels), so every kernel but the first (after the upload) overlaps
     * the one before, and no layer is timed alone */
    int n = pdl_launches(spec, 90, 0, 0, 0, &k);
    CHECK(k == 3 && n == 2, "sm_90: %d of %d launches with programmatic stream serialization", n, k);
    CHECK(flagged("input_u8") == -1 && flagged("conv2d_") == 0, "after the upload: no PDL (input %d, conv %d)",
          flagged("input_u8"), flagged("conv2d_"));
    CHECK(flagged("fc_gemv") == 1 && flagged("tail_") == 1, "kernel after kernel: PDL (fc1 %d, the tail %d)",
          flagged("fc_gemv"), flagged("tail_"));
    CHECK(pdl_untimed, "bucket 8 under PDL: the layers read NaN (not timed alone)");
    /* the large batch's kernels: events stay at the conv layer's boundaries (its
     * Op Time), so fc2 and the softmax (writing the predictions too) overlap the
     * kernel before them */
    n = pdl_launches_at(spec, 90, 0, 0, 0, 0, &k);
    CHECK(k == 5 && n == 2, "sm_90, large batch: %d of %d launches with PDL", n, k);
    CHECK(flagged("softmax_e10_pred") == 1 && flagged("argmax") == -1, "large batch: softmax %d, argmax %d",
          flagged("softmax_e10_pred"), flagged("argmax"));
    CHECK(flagged("input_u8") == 0 && flagged("conv2d_") == 0, "after an event: no PDL (input %d, conv %d)",
          flagged("input_u8"), flagged("conv2d_"));
    CHECK(!pdl_untimed, "large batch: the conv layer is timed");
    /* a grid of more blocks than the device has multiprocessors is launched
     * plainly (launched early, its blocks could crowd a few of them): on a
     * two-multiprocessor fake, only the grids of one or two blocks overlap */
    st->sms = 2;
    n = pdl_launches(spec, 90, 0, 0, 0, &k);
    int small = 0, wrong = 0;
    for (int i = pdl_names0 + 1; i < st->nnames; i++) {
        small += st->blocks[i] <= 2;
        wrong += st->pdl[i] != (st->blocks[i] <= 2);
    }
    CHECK(k == 3 && n == small && !wrong && small < 2, "2 SMs: %d PDL launches, %d after the first of <= 2 blocks, "
          "%d launches the other way", n, small, wrong);
    n = pdl_launches(spec, 90, 0, 1, 0, &k);
    CHECK(n == 0 && k == 3, "no_pdl: %d PDL launches of %d", n, k);
    n = pdl_launches(spec, 90, 0, 0, 1, &k);
    CHECK(n == 0 && k == 3 && !pdl_untimed, "profile: %d PDL launches of %d, layers timed", n, k);
    n = pdl_launches(spec, 80, 0, 0, 0, &k);
    CHECK(n == 0 && k == 3, "sm_80: %d PDL launches of %d", n, k);
    n = pdl_launches(spec, 90, 1, 0, 0, &k);
    CHECK(n == 0 && k == 3, "no cuLaunchKernelEx: %d PDL launches of %d", n, k);
}

/* The device memory: one arena a stream set (a second set costs one more
 * allocation, not one per tensor), and per-layer outputs only from a network
 * that keeps its tensors (the default plan lets later tensors reuse earlier
 * ones' bytes; the last layer's output, the scores, is always kept). */
static void memory(const char *spec)
{
    int allocs[2] = {0, 0};
    for (int keep = 0; keep < 2; keep++)
        for (int sets = 1; sets <= 2; sets++) {
            cg_net_options o;
            cg_net_options_init(&o);
            o.backend = CG_BACKEND_CUDA, o.batch = 8, o.streams = sets, o.keep_tensors = keep, o.whole = 2, o.pdl_always = 1;
            cg_net *net = NULL;
            int before = st->device_allocs;
            cg_status rc = cg_net_open(spec, &o, &net);
            CHECK(rc == CG_STATUS_OK, "open (%d sets, keep %d): %s", sets, keep, net ? cg_net_error(net) : "none");
            if (rc != CG_STATUS_OK) {
                cg_net_close(net);
                return;
            }
            allocs[sets - 1] = st->device_allocs - before;
            int nl = cg_net_layer_count(net), pred[3];
            float *lo[8] = {0};
            for (int l = 0; l < nl && l < 8; l++) lo[l] = calloc((size_t)(3 * cg_net_layer_size(net, l)), sizeof(float));
            cg_input in = {CG_INPUT_U8, 3, 1, 12, 12, pixels};
            /* the last layer alone: always there */
            float *only_last[8] = {0};
            only_last[nl - 1] = lo[nl - 1];
            rc = cg_net_run_layers(net, &in, pred, NULL, only_last);
            CHECK(rc == CG_STATUS_OK, "run_layers, last layer (keep %d): %s", keep, cg_net_error(net));
            /* fc1 (layer 1), whose bytes the default plan gives to later tensors */
            float *fc1[8] = {0};
            fc1[1] = lo[1];
            rc = cg_net_run_layers(net, &in, pred, NULL, fc1);
            if (keep) {
                CHECK(rc == CG_STATUS_OK, "run_layers, fc1 with keep_tensors: %s", cg_net_error(net));
            } else {
                CHECK(rc == CG_STATUS_USAGE, "run_layers, fc1 without keep_tensors: status %d", (int)rc);
                CHECK_CONTAINS(cg_net_error(net), "layer fc1's output");
                CHECK_CONTAINS(cg_net_error(net), "keep_tensors");
            }
            for (int l = 0; l < nl && l < 8; l++) free(lo[l]);
            cg_net_close(net);
            if (sets == 2)
                CHECK(allocs[1] - allocs[0] == 1, "keep %d: a second stream set made %d device allocations", keep,
                      allocs[1] - allocs[0]);
        }
}

/* Bucket 1: the network's batch-1 kernels (fc_gemv of one image, the conv split over blocks). */
static void bucket_one(const char *spec)
{
    int names0 = st->nnames;
    cg_net *net = open_net(spec, 1, 0);
    if (!net) return;
    if (!run(net, 1)) {
        CHECK(launched(names0, "fc_gemv_i100o20_tanh_bias_b1"), "bucket 1: no one-image fc_gemv");
        CHECK(launched(names0, "conv2d_direct_c1m4k3"), "bucket 1: no direct conv");
        CHECK(launched(names0, "tail_i20o10_none_bias_softmax_t32") && st->nnames - names0 == 3,
              "bucket 1: the tail as one kernel, 3 launches: %d", st->nnames - names0);
    }
    cg_net_close(net);
    /* the large-batch kernels where no batch is given */
    names0 = st->nnames;
    net = open_net(spec, 0, 0);
    if (!net) return;
    if (!run(net, 3)) CHECK(!launched(names0, "fc_gemv"), "large batch launched fc_gemv");
    cg_net_close(net);
}

/* The host input picks the first layer's kernel (planner.pixel_twin; manifest
 * feed=): at bucket 1, pixels launch the conv reading them (its name's _pxs tag)
 * and no input_u8; floats (CG_INPUT_F32) the conv reading the float input, copied
 * where input_u8 writes, and neither of the others; each input its own graph. */
static void pixel_feeds(const char *spec)
{
    cg_net *net = open_net(spec, 1, 0);
    if (!net) return;
    int names0 = st->nnames, px = 0, fl = 0;
    if (!run(net, 1)) {
        for (int i = names0; i < st->nnames; i++) {
            px += !strncmp(st->names[i], "conv2d_direct", 13) && strstr(st->names[i], "_pxs") != NULL;
            fl += !strncmp(st->names[i], "conv2d_direct", 13) && !strstr(st->names[i], "_pxs");
        }
        CHECK(px == 1 && fl == 0 && !launched(names0, "input_u8") && st->nnames - names0 == 3,
              "pixels: %d pixel-reading convs, %d float-reading, %d launches", px, fl, st->nnames - names0);
    }
    static float x[144];
    for (int i = 0; i < 144; i++) x[i] = (float)i / 144.0f;
    static int pred[1];
    static float scores[10];
    cg_input in = {CG_INPUT_F32, 1, 1, 12, 12, x};
    fake_cu_stats_t a = *st;
    names0 = st->nnames, px = 0, fl = 0;
    cg_status rc = cg_net_run(net, &in, pred, scores);
    CHECK(rc == CG_STATUS_OK, "float input: %s", cg_net_error(net));
    if (rc == CG_STATUS_OK) {
        for (int i = names0; i < st->nnames; i++) {
            px += !strncmp(st->names[i], "conv2d_direct", 13) && strstr(st->names[i], "_pxs") != NULL;
            fl += !strncmp(st->names[i], "conv2d_direct", 13) && !strstr(st->names[i], "_pxs");
        }
        CHECK(px == 0 && fl == 1 && !launched(names0, "input_u8") && st->nnames - names0 == 3 &&
                  st->captures - a.captures == 1,
              "floats: %d pixel-reading convs, %d float-reading, %d launches, %d captures", px, fl,
              st->nnames - names0, st->captures - a.captures);
    }
    cg_net_close(net);
}

/* Whether host address p lies in the n bytes from base. */
static int within(const void *p, const void *base, size_t n)
{
    const unsigned char *c = p, *b = base;
    return p && c >= b && c < b + n;
}

/* A float input lies in the input kernel's output, whose bytes later layers may
 * reuse (the pixels are a tensor of their own): when auto times the launch ways
 * on a batch of floats, each of the 2 x 31 batches timed gets the input uploaded
 * again, and the batch then run once more: 63 uploads more than for pixels (the
 * fake's memcpy counts; whole off, so the same two ways either way). Without it
 * the batches after the first read what the layers left there (on an H200, every
 * float-input run with overlapped launches gave other scores than the CPU's). At
 * one image (576 bytes of floats) from the pinned staging; at 8 (4,608 bytes) from
 * the caller's floats, as the batch's own upload (CG_INLINE_UPLOAD_MIN/MAX). */
static cg_net *open_ways(const char *spec, long long batch, int whole, int pdl_always);
static void float_refill(const char *spec)
{
    static float x[8 * 144];
    for (int i = 0; i < 8 * 144; i++) x[i] = (float)(i % 144) / 144.0f;
    for (long long n = 1; n <= 8; n += 7) {
        int copies[2] = {0, 0};
        const void *last = NULL;
        for (int f32 = 0; f32 < 2; f32++) {
            cg_net *net = open_ways(spec, n, 2, 0);
            if (!net) return;
            static int pred[8];
            static float scores[8 * 10];
            cg_input in = {f32 ? CG_INPUT_F32 : CG_INPUT_U8, n, 1, 12, 12, f32 ? (const void *)x : (const void *)pixels};
            int c0 = st->copies;
            cg_status rc = cg_net_run(net, &in, pred, scores);
            CHECK(rc == CG_STATUS_OK && !isnan(cg_net_gpu_times(net)->pdl_ms), "%lld images of %s: %s, ways timed", n,
                  f32 ? "floats" : "pixels", cg_net_error(net));
            copies[f32] = st->copies - c0;
            last = st->htod_src;
            cg_net_close(net);
        }
        int from_caller = within(last, x, sizeof x);
        CHECK(copies[1] - copies[0] == 2 * 31 + 1 && from_caller == (n == 8),
              "%lld images: floats %d copies, pixels %d; the floats' last upload from %s", n, copies[1], copies[0],
              from_caller ? "the caller's array" : "elsewhere");
    }
}

/* A batch's input of 1-64 KB (CG_INLINE_UPLOAD_MIN/MAX) goes up straight from the
 * caller's memory: the driver carries a copy so small from pageable memory in the
 * stream's commands, where one from the pinned staging waits on a copy engine (an H200
 * took 4-6 us more of GPU time at one image of 4-5 KB). A tiny one (carried so from
 * pinned memory too, and faster from there) and a large one (which the pipeline
 * overlaps with the batch before) go up from the staging: 8 images of 144 bytes from the
 * caller's array, 1 and 1,024 (147,456 bytes) from elsewhere; 8 images of floats (4,608
 * bytes, into the input kernel's output) from the caller's floats. */
static void uploads(const char *spec)
{
    static unsigned char many[1024 * 144];
    memset(many, 7, sizeof many);
    static float x[8 * 144];
    for (int i = 0; i < 8 * 144; i++) x[i] = (float)(i % 97) / 97.0f;
    const long long counts[4] = {1, 8, 1024, 8};
    for (int c = 0; c < 4; c++) {
        long long n = counts[c];
        int f32 = c == 3;
        size_t per = f32 ? 144 * sizeof(float) : 144;
        cg_net *net = open_net(spec, n, 0);
        if (!net) return;
        static int pred[1024];
        static float scores[1024 * 10];
        cg_input in = {f32 ? CG_INPUT_F32 : CG_INPUT_U8, n, 1, 12, 12,
                       f32 ? (const void *)x : n > 64 ? (const void *)many : (const void *)pixels};
        st->htod_src = NULL;
        cg_status rc = cg_net_run(net, &in, pred, scores);
        int from_caller = within(st->htod_src, in.data, n * per);
        CHECK(rc == CG_STATUS_OK && st->htod_bytes == (size_t)n * per && from_caller == (n == 8),
              "%lld images of %s: %s; last upload of %zu bytes from %s", n, f32 ? "floats" : "pixels",
              cg_net_error(net), st->htod_bytes, from_caller ? "the caller's array" : "elsewhere");
        cg_net_close(net);
    }
}

/* Whether host address p lies in the fake's live pinned memory. */
static int pinned(const void *p)
{
    for (int i = 0; i < 64; i++)
        if (st->pinned[i] && within(p, st->pinned[i], st->pinned_bytes[i])) return 1;
    return 0;
}

/* A float input given to a bf16 network is converted to bf16 on the host: a small batch
 * of it (8 images, 2,304 bytes) into pageable memory, uploaded from there as a small input
 * is, one image (288 bytes) into the pinned staging. */
static void half_uploads(const char *spec16)
{
    static float x[8 * 144];
    for (int i = 0; i < 8 * 144; i++) x[i] = (float)(i % 89) / 89.0f;
    for (long long n = 1; n <= 8; n += 7) {
        cg_net *net = open_net(spec16, n, 0);
        if (!net) return;
        static int pred[8];
        static float scores[8 * 10];
        cg_input in = {CG_INPUT_F32, n, 1, 12, 12, x};
        st->htod_src = NULL;
        cg_status rc = cg_net_run(net, &in, pred, scores);
        const void *src = st->htod_src;
        int from_caller = within(src, x, sizeof x);
        CHECK(rc == CG_STATUS_OK && st->htod_bytes == (size_t)n * 288 && src && !from_caller && pinned(src) == (n == 1),
              "bf16, %lld images of floats: %s; last upload of %zu bytes from %s", n, cg_net_error(net),
              st->htod_bytes, from_caller ? "the caller's array" : pinned(src) ? "pinned memory" : "pageable memory");
        cg_net_close(net);
    }
}

/* The manifest the CUDA backend generates for spec at `batch` images on the fake
 * device (the same target: cg_jit_target on the device as opened), into m. */
static int backend_manifest(const char *spec, long long batch, cg_manifest *m)
{
    static cg_spec s;
    cg_err e = {""};
    if (cg_spec_load(spec, &s, &e)) {
        CHECK(0, "%s", e.msg);
        return -1;
    }
    return fake_backend_manifest(&s, batch, m);
}

/* Open spec on the fake at batch 8 with whole (0 auto, 1 on, 2 off), no_graphs. */
static cg_net *open_whole(const char *spec, int whole, int no_graphs, int streams, int profile)
{
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.batch = 8, o.whole = whole, o.no_graphs = no_graphs, o.streams = streams;
    o.profile = profile, o.pdl_always = 1;
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open (whole %d): %s", whole, net ? cg_net_error(net) : "no network");
    if (rc == CG_STATUS_OK) return net;
    cg_net_close(net);
    return NULL;
}

/* The launches since name index `from` of kernels whose name starts with prefix. */
static int count_launched(int from, const char *prefix)
{
    int c = 0;
    for (int i = from; i < st->nnames; i++) c += !strncmp(st->names[i], prefix, strlen(prefix));
    return c;
}

/* The whole-network kernel the planner adds at bucket 8 (manifest whole=1):
 * forced on, one cooperative launch a batch of it alone, its grid min(CAP, SMs x
 * the driver's occupancy answer) and at least 1, its scratch allocated and zeroed
 * once per stream set, its arguments the set's tensors (t:, in, out), the layers'
 * weights (w:, b:, their bytes those of the weights) and the scratch; forced off,
 * the per-layer kernels only; auto, both timed on the fake clock and the faster
 * kept; a refused cooperative launch or capture falls back to the per-layer
 * kernels and says why. */
static void whole(const char *spec)
{
    static cg_manifest m;
    if (backend_manifest(spec, 8, &m)) return;
    int wk = cg_manifest_whole(&m);
    CHECK(wk >= 0, "bucket 8: the planner added no whole-network kernel");
    if (wk < 0) return;
    const cg_mkernel *k = &m.k[wk];
    /* nlk: the per-layer kernels a batch of pixels runs (not input_u8 nor the conv
     * reading its output: the conv's pixel twin instead, planner.pixel_twin) */
    int nlk = 0, n_at = -1;
    for (int i = 0; i < cg_manifest_layer_kernels(&m); i++) nlk += cg_manifest_feeds(&m.k[i], 0);
    CHECK(nlk == cg_manifest_layer_kernels(&m) - 2, "bucket 8: %d kernels run for pixels, of %d", nlk,
          cg_manifest_layer_kernels(&m));
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i] == CG_ARG_N) n_at = i;
    char prefix[16];
    snprintf(prefix, sizeof prefix, "network_b8");
    CHECK(!strncmp(k->name, prefix, strlen(prefix)) && k->res_cap > 0 && k->scratch > 0 && n_at >= 0,
          "the whole kernel %s: res %lld, scratch %lld", k->name, k->res_cap, k->scratch);
    memset(st->rec_name, 0, sizeof st->rec_name);
    snprintf(st->rec_name[0], sizeof st->rec_name[0], "%s", k->name);
    st->rec_nargs[0] = k->nargs, st->rec_int_at[0] = n_at;
    /* the arguments of the kernel writing the scores (the tail: fc2, prob and the
     * predictions): where the per-layer kernels find them */
    int sm = -1;
    for (int i = 0; i < cg_manifest_layer_kernels(&m); i++)
        for (int o = 0; o < m.k[i].nout; o++)
            if (m.k[i].outs[o] == cg_manifest_tensor(&m, "prob")) sm = i;
    CHECK(sm >= 0 && !strcmp(m.k[sm].tpl, "tail") && m.k[sm].nout == 3, "bucket 8: the tail writes prob");
    if (sm >= 0) {
        snprintf(st->rec_name[1], sizeof st->rec_name[1], "%s", m.k[sm].name);
        st->rec_nargs[1] = m.k[sm].nargs, st->rec_int_at[1] = -1;
        for (int i = 0; i < m.k[sm].nargs; i++)
            if (m.k[sm].args[i] == CG_ARG_N) st->rec_int_at[1] = i;
    }

    /* forced on, graphs, two sets: 20 images in batches of 8, 8, 4 */
    int a0 = st->device_allocs, z0 = st->memset8, c0 = st->occ_calls;
    st->occupancy = 0; /* 2 blocks an SM: the cap decides */
    cg_net *net = open_whole(spec, 1, 0, 2, 1);
    if (!net) return;
    CHECK(st->occ_calls - c0 == 1 && st->occ_threads == k->block[0] * k->block[1] * k->block[2] &&
              st->occ_shared == (size_t)k->shared,
          "occupancy asked %d times, %d threads, %zu shared", st->occ_calls - c0, st->occ_threads, st->occ_shared);
    CHECK(st->memset8 == z0, "nothing zeroed before a batch: %d", st->memset8 - z0);
    int names0 = st->nnames;
    fake_cu_stats_t a = *st;
    if (run(net, 20)) goto done;
    CHECK(st->memset8 - a.memset8 == 2 && st->memset8_bytes == (size_t)k->scratch,
          "the scratch zeroed once a set: %d times, %zu bytes", st->memset8 - a.memset8, st->memset8_bytes);
    CHECK(st->launches - a.launches == 3 && count_launched(names0, k->name) == 3,
          "3 captures of the whole kernel alone: %d launches", st->launches - a.launches);
    CHECK(st->kernels_run - a.kernels_run == 3 && st->graph_launches - a.graph_launches == 3,
          "20 images: %d kernels run, %d graph launches", st->kernels_run - a.kernels_run,
          st->graph_launches - a.graph_launches);
    CHECK(st->coop_launches - a.coop_launches == 3, "cooperative: %d of 3", st->coop_launches - a.coop_launches);
    for (int i = names0; i < st->nnames; i++)
        CHECK(st->coop[i] && st->blocks[i] == (unsigned long long)k->res_cap,
              "launch %d: cooperative %d, %llu blocks (cap %lld, 132 SMs x 2)", i, st->coop[i], st->blocks[i],
              k->res_cap);
    /* the arguments, as the last capture (set 0, 4 images) bound them */
    CHECK(st->rec_count[0] == 3 && st->rec_val[0][n_at] == 4, "%d launches recorded, n = %llu", st->rec_count[0],
          st->rec_val[0][n_at]);
    {
        static cg_spec s;
        cg_weights w;
        cg_err e = {""};
        int ok = !cg_spec_load(spec, &s, &e) && !cg_weights_for_spec(&s, &w, &e);
        CHECK(ok, "weights: %s", e.msg);
        int bound = 0;
        for (int i = 0; ok && i < k->nargs; i++) {
            const void *p = (const void *)(uintptr_t)st->rec_val[0][i];
            if (k->args[i] == CG_ARG_LWEIGHTS || k->args[i] == CG_ARG_LBIAS) {
                char name[128];
                snprintf(name, sizeof name, "%s.%s", m.l[k->argref[i]].name,
                         k->args[i] == CG_ARG_LBIAS ? "bias" : "weight");
                const cg_tensor *t = cg_weights_find(&w, name);
                CHECK(t && p && !memcmp(p, t->data, (size_t)t->count * sizeof(float)), "argument %d: %s's floats", i,
                      name);
                bound++;
            } else if (k->args[i] == CG_ARG_SCRATCH) {
                const unsigned char *z = p;
                int zero = z != NULL;
                for (long long b = 0; zero && b < k->scratch; b++) zero = !z[b];
                CHECK(zero, "argument %d: the scratch, all zeros", i);
                bound++;
            } else if (k->args[i] == CG_ARG_IN) {
                /* the set's pixels: the last batch's 4 images, uploaded */
                CHECK(p && !memcmp(p, pixels + 16 * 144, 4 * 144), "argument %d: the uploaded pixels", i);
                bound++;
            }
        }
        CHECK(bound >= 4, "%d arguments checked", bound);
        if (ok) cg_weights_free(&w);
    }
    /* again: nothing allocated or zeroed, the graphs replayed */
    a = *st;
    if (run(net, 20)) goto done;
    CHECK(st->device_allocs == a.device_allocs && st->memset8 == a.memset8 && st->captures == a.captures &&
              st->graph_launches - a.graph_launches == 3,
          "second run: %d allocations, %d zeroings, %d captures", st->device_allocs - a.device_allocs,
          st->memset8 - a.memset8, st->captures - a.captures);
    {
        const cg_gpu_times *t = cg_net_gpu_times(net);
        char line[512];
        cg_gpu_whole_summary(t, line, sizeof line);
        CHECK(t->whole == CG_RAN_WHOLE && !strcmp(line, "network: whole-network kernel (forced)") &&
                  t->whole_from == CG_WHOLE_FROM_FORCED,
              "forced on: '%s'", line);
        double total = -1, layer_ms[8];
        CHECK(cg_net_times(net, &total, layer_ms) == CG_STATUS_OK && isnan(layer_ms[0]) && isnan(layer_ms[3]),
              "the whole kernel ran: no layer timed alone");
    }
    CHECK(st->device_allocs - a0 >= 2, "allocations");
done:
    cg_net_close(net);

    /* no occupancy (the driver says none fits): at least one block */
    st->occupancy = -1;
    net = open_whole(spec, 1, 1, 1, 0);
    if (net) {
        names0 = st->nnames;
        a = *st;
        if (!run(net, 3))
            CHECK(st->launches - a.launches == 1 && count_launched(names0, k->name) == 1 && st->blocks[names0] == 1 &&
                      st->coop[names0],
                  "no_graphs, occupancy 0: %d launches, %llu blocks", st->launches - a.launches, st->blocks[names0]);
        cg_net_close(net);
    }
    st->occupancy = 0;

    /* forced off: the per-layer kernels, never the whole one; no scratch */
    net = open_whole(spec, 2, 0, 2, 0);
    if (net) {
        names0 = st->nnames;
        a = *st;
        if (!run(net, 20))
            CHECK(count_launched(names0, "network") == 0 && st->launches - a.launches == 3 * nlk &&
                      st->memset8 == a.memset8 && st->coop_launches == a.coop_launches,
                  "whole off: %d whole launches, %d launches, %d zeroings", count_launched(names0, "network"),
                  st->launches - a.launches, st->memset8 - a.memset8);
        cg_net_close(net);
    }

    /* auto: the per-layer kernels (nlk, cost 1 each on the fake clock) against the
     * whole kernel (whole_cost): 31 rounds of one batch each way (10 untimed, then
     * 21 timed), the faster kept */
    for (int faster = 0; faster < 2; faster++) {
        st->whole_cost = faster ? nlk - 1 : nlk + 1;
        net = open_whole(spec, 0, 0, 1, 1);
        if (!net) continue;
        names0 = st->nnames;
        a = *st;
        if (!run(net, 3)) {
            int w = count_launched(names0, k->name);
            CHECK(st->captures - a.captures == 2 && w == 1 && st->launches - a.launches == nlk + 1,
                  "auto: %d captures, %d whole launches, %d launches", st->captures - a.captures, w,
                  st->launches - a.launches);
            CHECK(st->graph_launches - a.graph_launches == 2 * 31 + 1, "auto: %d graph launches (2 x 31 rounds + 1)",
                  st->graph_launches - a.graph_launches);
            CHECK(st->kernels_run - a.kernels_run == 31 * nlk + 31 + (faster ? 1 : nlk),
                  "auto (whole %s): %d kernels run", faster ? "faster" : "slower", st->kernels_run - a.kernels_run);
            double total = -1, layer_ms[8];
            CHECK(cg_net_times(net, &total, layer_ms) == CG_STATUS_OK && (faster ? isnan(layer_ms[0]) : !isnan(layer_ms[0])),
                  "auto: layer times %s", faster ? "NaN" : "measured");
            /* both ways ran on set 0: the tail's out, out1 and out2 (fc2, prob, predict) are
             * where the whole kernel's t:fc2, t:prob and out point, three places */
            int outs = 0, same = 0;
            unsigned long long at[CG_MAX_OUTPUTS] = {0};
            for (int j = 0; sm >= 0 && j < m.k[sm].nargs; j++) {
                int o = cg_arg_output(m.k[sm].args[j]);
                if (o < 0) continue;
                int t = m.k[sm].outs[o];
                at[outs++ % CG_MAX_OUTPUTS] = st->rec_val[1][j];
                for (int q = 0; q < k->nargs; q++)
                    if ((k->args[q] == CG_ARG_TENSOR && k->argref[q] == t) || (k->args[q] == CG_ARG_OUT && k->out == t))
                        same += st->rec_val[1][j] && st->rec_val[1][j] == st->rec_val[0][q];
            }
            CHECK(outs == 3 && same == 3 && at[0] != at[1] && at[1] != at[2] && at[0] != at[2],
                  "the tail's outputs where the whole kernel writes fc2, prob and predict: %d of %d (%llx %llx %llx)",
                  same, outs, at[0], at[1], at[2]);
            const cg_gpu_times *t = cg_net_gpu_times(net);
            char line[512], want[256];
            cg_gpu_whole_summary(t, line, sizeof line);
            snprintf(want, sizeof want,
                     "network: whole-network kernel %.1f us, per-layer kernels %.1f us: %s (measured now)",
                     (double)(nlk + (faster ? -1 : 1)) * 1e3, (double)nlk * 1e3, faster ? "whole" : "per-layer");
            CHECK(!strcmp(line, want) && t->whole_from == CG_WHOLE_FROM_MEASURED, "auto: '%s', expected '%s'", line,
                  want);
            /* the next run of 3: the choice kept, nothing timed again */
            a = *st;
            if (!run(net, 3))
                CHECK(st->captures == a.captures && st->graph_launches - a.graph_launches == 1 &&
                          st->kernels_run - a.kernels_run == (faster ? 1 : nlk),
                      "auto, again: %d captures, %d graph launches", st->captures - a.captures,
                      st->graph_launches - a.graph_launches);
        }
        cg_net_close(net);
    }
    st->whole_cost = 0;

    /* refused: the cooperative launch (plain launches) or its capture (graphs):
     * the per-layer kernels run, every batch */
    for (int capture = 0; capture < 2; capture++) {
        st->refuse_coop = !capture, st->refuse_coop_capture = capture;
        net = open_whole(spec, 1, !capture, 1, 0);
        if (net) {
            names0 = st->nnames;
            a = *st;
            int rc = run(net, 3);
            CHECK(!rc && st->kernels_run - a.kernels_run == nlk && (capture || st->coop_launches == a.coop_launches),
                  "%s refused: %d kernels run", capture ? "capture" : "launch", st->kernels_run - a.kernels_run);
            a = *st;
            rc = run(net, 3);
            CHECK(!rc && st->kernels_run - a.kernels_run == nlk && count_launched(a.nnames, "network") == 0,
                  "%s refused, again: %d kernels, %d tries of the whole kernel", capture ? "capture" : "launch",
                  st->kernels_run - a.kernels_run, count_launched(a.nnames, "network"));
            char line[512];
            cg_gpu_whole_summary(cg_net_gpu_times(net), line, sizeof line);
            CHECK(strstr(line, "network: per-layer kernels; whole-network kernel not used: ") &&
                      strstr(line, capture ? "capture in a CUDA graph was refused" : "cooperative launch of"),
                  "%s refused: '%s'", capture ? "capture" : "launch", line);
            cg_net_close(net);
        }
    }
    st->refuse_coop = st->refuse_coop_capture = 0;
    memset(st->rec_name, 0, sizeof st->rec_name);
}

/* `convgen kernel --batch N` (cg_harness_run) generates the kernel for N's bucket, as a
 * network launched with N images is: fc_vec's default cluster split counts the
 * bucket's 64 images (4 tiles: split 8) where the large batch's 10,000 give 316 tiles
 * and no split. (The fake runs nothing, so the check fails; the kernel's name is what
 * is looked at.) */
static void harness_bucket(void)
{
    static const char text[] = "network: hb\ninput: {channels: 2, height: 32, width: 32}\nseed: 3\nlayers:\n"
                               "  - {name: f1, op: fc, out: 256, strategy: vec}\n  - {name: prob, op: softmax}\n";
    char path[4200];
    snprintf(path, sizeof path, "%s/hb.yaml", getenv("CG_FAKE_CUDA_CHILD"));
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "writing %s", path);
    static cg_spec s;
    cg_err e = {""};
    if (cg_spec_load(path, &s, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    const long long batches[2] = {64, 10000};
    for (int i = 0; i < 2; i++) {
        cg_harness_opts o = {0, batches[i], 4, 0, 1, 1, 1};
        static cg_harness_result r;
        cg_err he = {""};
        (void)cg_harness_run(&s, 0, "fc_vec", NULL, &o, &r, &he);
        const int split = strstr(r.k.kernel, "_s8") != NULL;
        CHECK(r.k.kernel[0] && split == (i == 0), "--batch %lld: %s (%s), expected %s", batches[i], r.k.kernel, he.msg,
              i == 0 ? "the cluster split of 8 (bucket 64)" : "no split (the large batch)");
    }
}

/* A concat's inputs written into their slices (tests/gpu/layers-concat.yaml, a
 * manifest's view= tensors): the kernel writing b gets cat1's pointer (the
 * pointer p1's kernel reads) plus b's 864 elements, and a layer's output read
 * back (keep_tensors) is its slice of each image of cat1, as the bytes lie in the
 * arena (the fake's kernels write nothing: the test writes cat1 itself). */
static void views(void)
{
    static cg_manifest m;
    const char *spec = "tests/gpu/layers-concat.yaml";
    if (backend_manifest(spec, 8, &m)) return;
    int kb = -1, kp = -1, out_at = -1, in_at = -1, t_b = cg_manifest_tensor(&m, "b"),
        t_cat = cg_manifest_tensor(&m, "cat1");
    for (int i = 0; i < cg_manifest_layer_kernels(&m); i++) {
        if (m.k[i].out == t_b) kb = i;
        if (m.k[i].nin == 1 && m.k[i].in[0] == t_cat && !strcmp(m.k[i].layer, "p1")) kp = i;
    }
    CHECK(kb >= 0 && kp >= 0 && t_b >= 0 && m.t[t_b].view && m.t[t_b].parent == t_cat && m.t[t_b].view_off == 864,
          "layers-concat at bucket 8: b a view of cat1 at 864, written by a kernel; p1 reads cat1");
    if (kb < 0 || kp < 0) return;
    memset(st->rec_name, 0, sizeof st->rec_name);
    for (int r = 0; r < 2; r++) {
        const cg_mkernel *k = &m.k[r ? kp : kb];
        snprintf(st->rec_name[r], sizeof st->rec_name[r], "%s", k->name);
        st->rec_nargs[r] = k->nargs, st->rec_int_at[r] = -1;
        for (int i = 0; i < k->nargs; i++) {
            if (k->args[i] == CG_ARG_N) st->rec_int_at[r] = i;
            if (k->args[i] == (r ? CG_ARG_IN : CG_ARG_OUT)) *(r ? &in_at : &out_at) = i;
        }
    }
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.batch = 8, o.keep_tensors = 1, o.whole = 2, o.pdl_always = 1;
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open layers-concat: %s", net ? cg_net_error(net) : "none");
    int nl = rc == CG_STATUS_OK ? cg_net_layer_count(net) : 0, lb = -1, lc = -1, pred[3];
    for (int l = 0; l < nl && l < m.nlayers; l++) {
        if (!strcmp(m.l[l].name, "b")) lb = l;
        if (!strcmp(m.l[l].name, "cat1")) lc = l;
    }
    if (rc == CG_STATUS_OK && lb >= 0 && lc >= 0) {
        float *lo[CG_MAX_LAYERS] = {0};
        lo[lb] = calloc(3 * 1152, sizeof(float)), lo[lc] = calloc(3 * 3888, sizeof(float));
        cg_input in = {CG_INPUT_U8, 3, 3, 12, 12, pixels};
        rc = cg_net_run_layers(net, &in, pred, NULL, lo);
        CHECK(rc == CG_STATUS_OK, "run_layers: %s", cg_net_error(net));
        unsigned long long bo = st->rec_val[0][out_at], ci = st->rec_val[1][in_at];
        CHECK(st->rec_count[0] >= 1 && st->rec_count[1] >= 1 && bo && bo == ci + 864 * sizeof(float),
              "b's kernel writes at cat1 + 864 floats (%#llx, cat1 %#llx)", bo, ci);
        /* cat1 as a kernel would have left it, then read back: b's slice of each image */
        float *cat = (float *)(uintptr_t)ci;
        for (int img = 0; ci && img < 3; img++)
            for (int j = 0; j < 3888; j++) cat[img * 3888 + j] = (float)(img * 10000 + j);
        rc = ci ? cg_net_run_layers(net, &in, pred, NULL, lo) : CG_STATUS_IO;
        int wrong = 0;
        for (int img = 0; img < 3; img++) {
            for (int j = 0; j < 1152; j++) wrong += lo[lb][img * 1152 + j] != (float)(img * 10000 + 864 + j);
            for (int j = 0; j < 3888; j++) wrong += lo[lc][img * 3888 + j] != (float)(img * 10000 + j);
        }
        CHECK(rc == CG_STATUS_OK && wrong == 0, "b read back as its slice of cat1's images: %d wrong", wrong);
        free(lo[lb]), free(lo[lc]);
    }
    cg_net_close(net);
    memset(st->rec_name, 0, sizeof st->rec_name);
}

/* ---- auto's choice between overlapped and plain launches ---- */

/* The fake's clock: a launch carrying PDL costs way_pdl_cost, a plain one 1 (the
 * whole-network kernel whole_cost as set). */
static double way_pdl_cost;
static double way_cost(const char *name, int pdl)
{
    if (!strncmp(name, "network", 7)) return 0; /* the fake's default: whole_cost */
    return pdl == 1 ? way_pdl_cost : 1.0;
}

static cg_net *open_ways(const char *spec, long long batch, int whole, int pdl_always)
{
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.batch = batch, o.whole = whole, o.streams = 1, o.pdl_always = pdl_always;
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open (batch %lld, whole %d): %s", batch, whole, net ? cg_net_error(net) : "none");
    if (rc == CG_STATUS_OK) return net;
    cg_net_close(net);
    return NULL;
}

/* graphnet at bucket 8 on the sm_90 fake: 3 per-layer kernels run for pixels (the
 * conv's pixel twin, fc1, the tail), 2 of them launched with PDL. Auto (whole off)
 * times both launch ways 31 rounds and keeps the faster (2 PDL launches at 3 ms and
 * the first at 1: 7 ms, against 3 ms plain; then at 0.5: 2 against 3); the next run
 * replays the choice, nothing timed. With the
 * whole kernel in auto too, three ways timed and the fastest kept. Not timed: the
 * large batch's kernels, pdl_always, no_pdl. */
static void launch_ways(const char *spec)
{
    st->kernel_cost = way_cost;
    for (int plain_wins = 0; plain_wins < 2; plain_wins++) {
        way_pdl_cost = plain_wins ? 3.0 : 0.5;
        cg_net *net = open_ways(spec, 8, 2, 0);
        if (!net) continue;
        fake_cu_stats_t a = *st;
        if (!run(net, 3)) {
            const cg_gpu_times *t = cg_net_gpu_times(net);
            double pdl_ms = 1 + 2 * way_pdl_cost;
            CHECK(st->captures - a.captures == 2 && st->graph_launches - a.graph_launches == 2 * 31 + 1,
                  "plain %s: %d captures, %d graph launches (2 x 31 rounds + 1)", plain_wins ? "faster" : "slower",
                  st->captures - a.captures, st->graph_launches - a.graph_launches);
            CHECK(t->pdl_ms == pdl_ms && t->plain_ms == 3.0 && t->plain == plain_wins &&
                      t->layers_ms == (plain_wins ? 3.0 : pdl_ms) && t->pdl_launches == (plain_wins ? 0 : 2) &&
                      isnan(t->whole_ms),
                  "plain %s: pdl %g ms, plain %g ms, ran plain %d, layers %g ms, %d PDL launches",
                  plain_wins ? "faster" : "slower", t->pdl_ms, t->plain_ms, t->plain, t->layers_ms, t->pdl_launches);
            a = *st;
            if (!run(net, 3))
                CHECK(st->captures == a.captures && st->graph_launches - a.graph_launches == 1 &&
                          cg_net_gpu_times(net)->plain == plain_wins,
                      "again: %d captures, %d graph launches, plain %d", st->captures - a.captures,
                      st->graph_launches - a.graph_launches, cg_net_gpu_times(net)->plain);
        }
        cg_net_close(net);
    }
    /* bucket 64 (no whole kernel): both launch ways timed likewise */
    cg_net *net64 = open_ways(spec, 64, 0, 0);
    if (net64) {
        fake_cu_stats_t a = *st;
        if (!run(net64, 20)) {
            const cg_gpu_times *t = cg_net_gpu_times(net64);
            CHECK(t->bucket == 64 && st->captures - a.captures == 2 && st->graph_launches - a.graph_launches == 2 * 31 + 1 &&
                      !isnan(t->pdl_ms) && t->plain_ms < t->pdl_ms && t->plain && t->whole == CG_RAN_NO_WHOLE,
                  "bucket %d: %d captures, %d graph launches, pdl %g ms, plain %g ms", t->bucket,
                  st->captures - a.captures, st->graph_launches - a.graph_launches, t->pdl_ms, t->plain_ms);
        }
        cg_net_close(net64);
    }
    /* three ways: plain launches 3 ms, PDL 7, the whole kernel 6 (then 2) */
    way_pdl_cost = 3.0;
    for (int whole_wins = 0; whole_wins < 2; whole_wins++) {
        st->whole_cost = whole_wins ? 2.0 : 6.0;
        cg_net *net = open_ways(spec, 8, 0, 0);
        if (!net) continue;
        fake_cu_stats_t a = *st;
        if (!run(net, 3)) {
            const cg_gpu_times *t = cg_net_gpu_times(net);
            CHECK(st->captures - a.captures == 3 && st->graph_launches - a.graph_launches == 3 * 31 + 1 &&
                      t->whole_ms == st->whole_cost && t->pdl_ms == 7.0 && t->plain_ms == 3.0 &&
                      (t->whole == CG_RAN_WHOLE) == whole_wins && t->plain == !whole_wins,
                  "three ways (whole %g ms): %d captures, %d graph launches, whole ran %d, plain %d",
                  st->whole_cost, st->captures - a.captures, st->graph_launches - a.graph_launches,
                  t->whole == CG_RAN_WHOLE, t->plain);
        }
        cg_net_close(net);
    }
    st->whole_cost = 0;
    /* the whole kernel's cooperative launch refused while the ways are timed: left out, the
     * two launch ways of the per-layer kernels still timed and the faster kept */
    st->refuse_coop = 1;
    cg_net *nr = open_ways(spec, 8, 0, 0);
    if (nr) {
        if (!run(nr, 3)) {
            const cg_gpu_times *t = cg_net_gpu_times(nr);
            char line[512];
            cg_gpu_whole_summary(t, line, sizeof line);
            CHECK(t->whole == CG_RAN_LAYERS && isnan(t->whole_ms) && t->pdl_ms == 7.0 && t->plain_ms == 3.0 &&
                      t->plain && strstr(line, "whole-network kernel not used: its cooperative launch of"),
                  "whole refused while timing: ran whole %d, pdl %g ms, plain %g ms, plain %d ('%s')",
                  t->whole == CG_RAN_WHOLE, t->pdl_ms, t->plain_ms, t->plain, line);
        }
        cg_net_close(nr);
    }
    st->refuse_coop = 0;
    /* nothing timed: the large batch's kernels, and pdl_always */
    for (int c = 0; c < 2; c++) {
        cg_net *net = open_ways(spec, c ? 8 : 0, 2, c);
        if (!net) continue;
        fake_cu_stats_t a = *st;
        if (!run(net, 3)) {
            const cg_gpu_times *t = cg_net_gpu_times(net);
            CHECK(st->captures - a.captures == 1 && st->graph_launches - a.graph_launches == 1 && isnan(t->plain_ms) &&
                      !t->plain && t->pdl_launches > 0,
                  "%s: %d captures, %d graph launches, %d PDL launches", c ? "pdl_always" : "large batch",
                  st->captures - a.captures, st->graph_launches - a.graph_launches, t->pdl_launches);
        }
        cg_net_close(net);
    }
    st->kernel_cost = NULL;
}

int main(int argc, char **argv)
{
    (void)argc;
    /* again, with the fake driver first on the loader's path and a private JIT cache */
    if (fake_cu_reexec(argv, "graph")) return cg_test_done("graph");
    void *nvrtc = dlopen("libnvrtc.so", RTLD_NOW);
    if (!nvrtc) nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW);
    if (!nvrtc) {
        printf("skip: graph capture through the fake driver: no NVRTC\n");
        CHECK(1, "skipped");
        return cg_test_done("graph");
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    fake_cu_stats_t *(*stats)(void) = NULL;
    if (cuda) *(void **)&stats = dlsym(cuda, "fake_cu_stats");
    CHECK(stats != NULL, "the fake libcuda.so.1 is not the one loaded (build/tests/fake)");
    if (!stats) return cg_test_done("graph");
    st = stats();
    for (size_t i = 0; i < sizeof pixels; i++) pixels[i] = (unsigned char)(i * 37 + 11);
    char spec[4200];
    snprintf(spec, sizeof spec, "%s/graphnet.yaml", getenv("CG_FAKE_CUDA_CHILD"));
    FILE *f = fopen(spec, "w");
    CHECK(f && fputs(spec_text, f) >= 0 && fclose(f) == 0, "writing %s", spec);
    graphs(spec);
    plain(spec);
    memory(spec);
    bucket_one(spec);
    pixel_feeds(spec);
    pdl(spec);
    whole(spec);
    launch_ways(spec);
    float_refill(spec);
    uploads(spec);
    {
        /* the same network in bf16 */
        char spec16[4200];
        snprintf(spec16, sizeof spec16, "%s/graphnet16.yaml", getenv("CG_FAKE_CUDA_CHILD"));
        FILE *f16 = fopen(spec16, "w");
        CHECK(f16 && fprintf(f16, "precision: bf16\n%s", spec_text) > 0 && fclose(f16) == 0, "writing %s", spec16);
        half_uploads(spec16);
    }
    views();
    harness_bucket();
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", getenv("CG_FAKE_CUDA_CHILD"));
    CHECK(system(cmd) == 0, "cleanup");
    return cg_test_done("graph");
}
