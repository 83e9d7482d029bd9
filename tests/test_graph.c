/* test_graph.c — the CUDA backend's launches without a GPU: the library opened on
 * tests/fake_cuda.c (a stand-in libcuda.so.1 that counts what the runtime asks of
 * the driver; the kernels are compiled by NVRTC as on a GPU, and run nothing).
 * It checks the graph capture and replay logic of runtime/cuda/gpu.c — a batch's
 * kernels captured once per stream set and image count (a few counts held per
 * set) and replayed with one launch, destroyed at close, plain
 * launches with no_graphs —, that a run synchronizes with the host once a batch
 * and allocates nothing once its staging exists, and that the batch picks the
 * kernels (bucket 1 and 8: fc_gemv), and programmatic dependent launch: on the
 * sm_90 fake the kernels generated with the prologue (manifest pdl=1) that follow
 * another kernel with no event between are launched through cuLaunchKernelEx with
 * programmatic stream serialization, captured into the graph like the others;
 * none is with no_pdl, with profile, on an sm_80 fake (no prologue generated)
 * or where the driver lacks cuLaunchKernelEx; and that a stream set's tensors are one
 * allocation and that only a network opened with keep_tensors returns every
 * layer's output (the default plan shares tensors' bytes). The test re-executes itself with
 * LD_LIBRARY_PATH naming the fake and the JIT cache in a temporary directory.
 * Skipped where NVRTC is missing. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "convgen.h"
#include "fake_cuda.h"

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
    int k = st->launches - a.launches; /* the kernels of one batch */
    CHECK(k >= 5, "a batch launched %d kernels", k);
    CHECK(st->captures - a.captures == 1, "first run: %d captures", st->captures - a.captures);
    CHECK(st->graph_launches - a.graph_launches == 1, "first run: %d graph launches", st->graph_launches - a.graph_launches);
    CHECK(st->kernels_run - a.kernels_run == k, "first run ran %d kernels, captured %d", st->kernels_run - a.kernels_run, k);
    CHECK(st->host_syncs - a.host_syncs == 1, "first run: %d host synchronizations", st->host_syncs - a.host_syncs);
    CHECK(launched(names0, "fc_gemv"), "bucket 8: no fc_gemv launched");
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
        CHECK(k >= 5 && st->kernels_run - a.kernels_run == k, "no_graphs: %d launches, %d run", k,
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
    o.no_pdl = no_pdl;
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
    /* graphnet at bucket 8: input_u8, the conv, fc1, fc2, softmax, argmax; no event
     * inside the network (small-batch kernels), so every kernel but the first
     * (after the upload) overlaps the one before, and no layer is timed alone */
    int n = pdl_launches(spec, 90, 0, 0, 0, &k);
    CHECK(k == 6 && n == 5, "sm_90: %d of %d launches with programmatic stream serialization", n, k);
    CHECK(flagged("input_u8") == 0 && flagged("conv2d_") == 1, "after the upload: no PDL (input %d, conv %d)",
          flagged("input_u8"), flagged("conv2d_"));
    CHECK(flagged("softmax") == 1 && flagged("argmax") == 1, "kernel after kernel: PDL (softmax %d, argmax %d)",
          flagged("softmax"), flagged("argmax"));
    CHECK(pdl_untimed, "bucket 8 under PDL: the layers read NaN (not timed alone)");
    /* the large batch's kernels: events stay at the conv layer's boundaries (its
     * Op Time), so fc2, softmax and argmax overlap the kernel before them */
    n = pdl_launches_at(spec, 90, 0, 0, 0, 0, &k);
    CHECK(k == 6 && n == 3, "sm_90, large batch: %d of %d launches with PDL", n, k);
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
    CHECK(k == 6 && n == small && !wrong && small < 5, "2 SMs: %d PDL launches, %d after the first of <= 2 blocks, "
          "%d launches the other way", n, small, wrong);
    n = pdl_launches(spec, 90, 0, 1, 0, &k);
    CHECK(n == 0 && k == 6, "no_pdl: %d PDL launches of %d", n, k);
    n = pdl_launches(spec, 90, 0, 0, 1, &k);
    CHECK(n == 0 && k == 6 && !pdl_untimed, "profile: %d PDL launches of %d, layers timed", n, k);
    n = pdl_launches(spec, 80, 0, 0, 0, &k);
    CHECK(n == 0 && k == 6, "sm_80: %d PDL launches of %d", n, k);
    n = pdl_launches(spec, 90, 1, 0, 0, &k);
    CHECK(n == 0 && k == 6, "no cuLaunchKernelEx: %d PDL launches of %d", n, k);
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
            o.backend = CG_BACKEND_CUDA, o.batch = 8, o.streams = sets, o.keep_tensors = keep, o.whole = 2;
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
    }
    cg_net_close(net);
    /* the large-batch kernels where no batch is given */
    names0 = st->nnames;
    net = open_net(spec, 0, 0);
    if (!net) return;
    if (!run(net, 3)) CHECK(!launched(names0, "fc_gemv"), "large batch launched fc_gemv");
    cg_net_close(net);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (!getenv("CG_FAKE_CUDA_CHILD")) {
        /* again, with the fake driver first on the loader's path and a private JIT cache */
        char cwd[4096], lib[8400], cache[] = "/tmp/cg_test_graph_XXXXXX";
        if (!getcwd(cwd, sizeof cwd) || !mkdtemp(cache)) {
            CHECK(0, "setup");
            return cg_test_done("graph");
        }
        const char *prev = getenv("LD_LIBRARY_PATH");
        snprintf(lib, sizeof lib, "%s/build/tests/fake%s%.4000s", cwd, prev && *prev ? ":" : "", prev ? prev : "");
        setenv("LD_LIBRARY_PATH", lib, 1);
        setenv("XDG_CACHE_HOME", cache, 1);
        setenv("CG_FAKE_CUDA_CHILD", cache, 1);
        execv("/proc/self/exe", argv);
        CHECK(0, "re-exec: %s", argv[0]);
        return cg_test_done("graph");
    }
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
    pdl(spec);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", getenv("CG_FAKE_CUDA_CHILD"));
    CHECK(system(cmd) == 0, "cleanup");
    return cg_test_done("graph");
}
