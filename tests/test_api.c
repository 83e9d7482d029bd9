/* test_api.c — the public API (runtime/convgen.h) on the CPU backend: every
 * function's status on good and bad arguments (NULL, wrong shapes, unknown
 * types and backends, options the CPU does not take, a network that did not
 * open), messages that say what is wrong, answers equal to the CPU reference
 * called directly, uint8 and float input giving the same scores, nothing
 * written to stderr. (Leaks after failed opens: make sanitize, LeakSanitizer.) */
#include <fcntl.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "check.h"
#include "convgen.h"
#include "cpu.h"
#include "spec.h"
#include "weights.h"

#define SPEC "specs/ece408-2017.yaml"
#define N 40

/* Pixels from a seed (xorshift), as made-up images. */
static void fill(unsigned char *p, size_t n, unsigned long long x)
{
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

/* Opening: what fails, with which status and message; a failed network answers
 * only cg_net_error, cg_net_log and cg_net_close. */
static void test_open_errors(void)
{
    cg_net *net = NULL;
    CHECK(cg_net_open(SPEC, NULL, NULL) == CG_STATUS_USAGE, "out NULL");
    CHECK(cg_net_open(NULL, NULL, &net) == CG_STATUS_USAGE && net, "spec NULL: usage, a network for the message");
    CHECK_CONTAINS(cg_net_error(net), "NULL");
    int c = 0;
    CHECK(cg_net_input_shape(net, &c, NULL, NULL) == CG_STATUS_USAGE, "a failed network refuses calls");
    CHECK_CONTAINS(cg_net_error(net), "did not open");
    CHECK(cg_net_layer_count(net) == 0 && cg_net_layer_name(net, 0) == NULL, "no layers on a failed network");
    cg_net_close(net);

    CHECK(cg_net_open("tests/no/such.yaml", NULL, &net) == CG_STATUS_INPUT, "missing spec: input");
    CHECK_CONTAINS(cg_net_error(net), "tests/no/such.yaml");
    cg_net_close(net);
    CHECK(cg_net_open("tests/specs_bad/duplicate_key.yaml", NULL, &net) == CG_STATUS_INPUT, "bad spec: input");
    CHECK_CONTAINS(cg_net_error(net), "tests/specs_bad/duplicate_key.yaml:");
    cg_net_close(net);

    cg_net_options o;
    cg_net_options_init(&o);
    CHECK(o.backend == CG_BACKEND_CPU && o.device == 0 && o.weights_seed < 0 && !o.fatbin, "defaults");
    o.fatbin = "x.fatbin";
    CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "fatbin on the CPU: usage");
    CHECK_CONTAINS(cg_net_error(net), "fatbin needs the cuda backend");
    cg_net_close(net);
    cg_net_options_init(&o);
    o.backend = (cg_backend_kind)7;
    CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "unknown backend");
    CHECK_CONTAINS(cg_net_error(net), "unknown backend 7");
    cg_net_close(net);
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.device = -1;
    CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "negative device");
    cg_net_close(net);
    /* whole: -1 or 0 (auto), 1 (on), 2 (off); anything else refused on either backend, and on or
     * off refused on the CPU, which has no whole-network kernel */
    for (int b = 0; b < 2; b++) {
        cg_net_options_init(&o);
        o.backend = b ? CG_BACKEND_CUDA : CG_BACKEND_CPU, o.whole = 3;
        CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "whole 3 on %s: usage", b ? "cuda" : "cpu");
        CHECK_CONTAINS(cg_net_error(net), "whole 3: ");
        cg_net_close(net);
    }
    cg_net_options_init(&o);
    o.whole = 1;
    CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "whole on, CPU: usage");
    CHECK_CONTAINS(cg_net_error(net), "option whole needs the cuda backend");
    cg_net_close(net);
    /* streams: 0 (the default) or 1..4, checked before any device is asked, on either backend */
    for (int b = 0; b < 2; b++)
        for (int v = 0; v < 2; v++) {
            cg_net_options_init(&o);
            o.backend = b ? CG_BACKEND_CUDA : CG_BACKEND_CPU, o.streams = v ? 5 : -3;
            CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "streams %d on %s: usage", o.streams,
                  b ? "cuda" : "cpu");
            CHECK_CONTAINS(cg_net_error(net), v ? "streams 5: " : "streams -3: ");
            cg_net_close(net);
        }
    cg_net_options_init(&o);
    o.streams = 2;
    CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_USAGE, "streams on the CPU: usage");
    CHECK_CONTAINS(cg_net_error(net), "streams needs the cuda backend");
    cg_net_close(net);
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA;
    o.device = 999; /* no such device, with a GPU or without */
    CHECK(cg_net_open(SPEC, &o, &net) == CG_STATUS_DEVICE, "device 999: device");
    CHECK(cg_net_error(net)[0] && !strchr(cg_net_error(net), '\n'), "one line: %s", cg_net_error(net));
    cg_net_close(net);

    CHECK(cg_net_open_bundle("tests/no/net.cgb", NULL, &net) == CG_STATUS_INPUT, "missing bundle: input");
    CHECK_CONTAINS(cg_net_error(net), "tests/no/net.cgb");
    cg_net_close(net);
    CHECK(cg_net_open_bundle(SPEC, NULL, &net) == CG_STATUS_INPUT, "a spec is not a bundle");
    CHECK_CONTAINS(cg_net_error(net), "not a convgen bundle");
    cg_net_close(net);
    CHECK(cg_net_open_bundle(NULL, NULL, &net) == CG_STATUS_USAGE, "bundle NULL");
    cg_net_close(net);

    char why[256] = "x";
    CHECK(cg_cuda_probe(999, why, sizeof why) == CG_STATUS_DEVICE && why[0], "probe device 999");
    CHECK(cg_net_error(NULL)[0] && cg_net_log(NULL)[0] == 0, "NULL network");
    cg_net_close(NULL);
    CHECK(cg_version()[0] >= '0' && cg_version()[0] <= '9', "version %s", cg_version());

}

/* Queries and runs on a network that opened. */
static void test_run(void)
{
    cg_net *net = NULL;
    CHECK(cg_net_open(SPEC, NULL, &net) == CG_STATUS_OK, "open: %s", cg_net_error(net));
    if (!net || cg_net_error(net)[0]) return cg_net_close(net);
    int c = 0, h = 0, w = 0, classes = 0;
    CHECK(cg_net_input_shape(net, &c, &h, &w) == CG_STATUS_OK && c == 1 && h == 28 && w == 28, "shape %dx%dx%d",
          c, h, w);
    CHECK(cg_net_classes(net, &classes) == CG_STATUS_OK && classes == 10, "classes %d", classes);
    CHECK(cg_net_classes(net, NULL) == CG_STATUS_USAGE, "classes NULL");
    double scale = 0, offset = 1;
    CHECK(cg_net_input_scaling(net, &scale, &offset) == CG_STATUS_OK && fabs(scale - 1 / 255.0) < 1e-12 && offset == 0,
          "scaling %g %g", scale, offset);
    CHECK(!strcmp(cg_net_backend(net), "cpu") && !strcmp(cg_net_device_name(net), "cpu"), "backend names");
    CHECK(cg_net_layer_count(net) == 4 && !strcmp(cg_net_layer_name(net, 1), "fc1") &&
              cg_net_layer_size(net, 0) == 7200 && cg_net_layer_size(net, 4) == -1 && !cg_net_layer_name(net, -1),
          "layers");

    static unsigned char px[N * 784];
    static float x[N * 784], s8[N * 10], s32[N * 10], ref_scores[N * 10], l3[N * 10];
    int p8[N], p32[N], ref[N];
    fill(px, sizeof px, 7);
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    CHECK(cg_net_run(net, &in, p8, s8) == CG_STATUS_OK && !cg_net_error(net)[0], "run: %s", cg_net_error(net));

    /* the same answers as the CPU reference called directly */
    cg_spec *s = malloc(sizeof *s);
    cg_weights wt;
    cg_err e;
    if (s && !cg_spec_load(SPEC, s, &e) && !cg_weights_for_spec(s, &wt, &e)) {
        CHECK(cg_cpu_forward(s, &wt, px, N, NULL, ref_scores, ref, NULL, &e) == 0, "reference: %s", e.msg);
        CHECK(!memcmp(ref, p8, sizeof ref) && !memcmp(ref_scores, s8, sizeof s8), "API = cg_cpu_forward");
        /* float input, scaled as the spec says, gives the same scores bit for bit */
        for (int i = 0; i < N * 784; i++) x[i] = (float)(px[i] * scale + offset);
        cg_weights_free(&wt);
    } else {
        CHECK(0, "setup: %s", e.msg);
    }
    free(s);
    cg_input inf = {CG_INPUT_F32, N, 1, 28, 28, x};
    CHECK(cg_net_run(net, &inf, p32, s32) == CG_STATUS_OK, "f32 run: %s", cg_net_error(net));
    CHECK(!memcmp(p8, p32, sizeof p8) && !memcmp(s8, s32, sizeof s8), "uint8 and float input agree");
    CHECK(cg_net_run(net, &in, p32, NULL) == CG_STATUS_OK && !memcmp(p8, p32, sizeof p8), "scores NULL");
    float *lo[4] = {NULL, NULL, NULL, l3};
    CHECK(cg_net_run_layers(net, &inf, p32, NULL, lo) == CG_STATUS_OK && !memcmp(l3, s8, sizeof l3),
          "run_layers: the last layer's output is the scores");
    double total = -1, ms[4] = {-1, -1, -1, -1};
    CHECK(cg_net_times(net, &total, ms) == CG_STATUS_OK && total > 0 && ms[1] > 0 && ms[1] <= total * 1.01,
          "times: total %g, fc1 %g", total, ms[1]);

    /* bad runs: usage, a message naming the problem, nothing written */
    int before = p32[0] = -7;
    cg_input bad = in;
    CHECK(cg_net_run(net, NULL, p32, NULL) == CG_STATUS_USAGE, "input NULL");
    CHECK(cg_net_run(net, &in, NULL, NULL) == CG_STATUS_USAGE, "pred NULL");
    CHECK_CONTAINS(cg_net_error(net), "pred is NULL");
    bad.w = 27;
    CHECK(cg_net_run(net, &bad, p32, NULL) == CG_STATUS_USAGE, "wrong shape");
    CHECK_CONTAINS(cg_net_error(net), "1x28x27 (CxHxW), ece408-2017 takes 1x28x28");
    bad = in, bad.c = 3;
    CHECK(cg_net_run(net, &bad, p32, NULL) == CG_STATUS_USAGE, "wrong channels");
    bad = in, bad.type = (cg_input_type)9;
    CHECK(cg_net_run(net, &bad, p32, NULL) == CG_STATUS_USAGE, "unknown type");
    CHECK_CONTAINS(cg_net_error(net), "unknown input type 9");
    bad = in, bad.n = -1;
    CHECK(cg_net_run(net, &bad, p32, NULL) == CG_STATUS_USAGE, "negative count");
    bad = in, bad.data = NULL;
    CHECK(cg_net_run(net, &bad, p32, NULL) == CG_STATUS_USAGE, "data NULL");
    CHECK(p32[0] == before, "a refused run writes nothing");
    bad.n = 0;
    CHECK(cg_net_run(net, &bad, p32, NULL) == CG_STATUS_OK && !cg_net_error(net)[0], "no images: ok, message cleared");
    CHECK(cg_net_run_device(net, &in, p32, NULL, NULL) == CG_STATUS_USAGE, "device pointers on the CPU");
    CHECK_CONTAINS(cg_net_error(net), "need the cuda backend");
    CHECK(cg_net_run(NULL, &in, p32, NULL) == CG_STATUS_USAGE && cg_net_times(NULL, NULL, NULL) == CG_STATUS_USAGE,
          "network NULL");
    CHECK(cg_net_input_shape(NULL, NULL, NULL, NULL) == CG_STATUS_USAGE, "shape of NULL");
    cg_net_close(net);

    /* weights_seed: a spec without weights file gets other random weights */
    cg_net_options o;
    cg_net_options_init(&o);
    cg_net *a = NULL, *b = NULL;
    static unsigned char ex[4 * 784];
    float sa[40], sb[40];
    int pa[4];
    fill(ex, sizeof ex, 3);
    o.weights_seed = 5;
    CHECK(cg_net_open("specs/example-conv.yaml", NULL, &a) == CG_STATUS_OK, "example: %s", cg_net_error(a));
    CHECK(cg_net_open("specs/example-conv.yaml", &o, &b) == CG_STATUS_OK, "seed 5: %s", cg_net_error(b));
    int ec = 0, eh = 0, ew = 0;
    cg_net_input_shape(a, &ec, &eh, &ew);
    cg_input ein = {CG_INPUT_U8, 4, ec, eh, ew, ex};
    if ((long long)ec * eh * ew <= 784 && cg_net_layer_size(a, cg_net_layer_count(a) - 1) == 10) {
        CHECK(cg_net_run(a, &ein, pa, sa) == CG_STATUS_OK && cg_net_run(b, &ein, pa, sb) == CG_STATUS_OK, "runs");
        CHECK(memcmp(sa, sb, sizeof sa), "another seed, other scores");
    }
    cg_net_close(a), cg_net_close(b);
}

/* One thread's work for test_threads: its own network, opened, run, closed. */
typedef struct {
    const unsigned char *px;
    int pred[N];
    float scores[N * 10];
    cg_status st;
} job;

static void *thread_run(void *arg)
{
    job *j = arg;
    cg_net *net = NULL;
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, j->px};
    j->st = cg_net_open(SPEC, NULL, &net);
    if (!j->st) j->st = cg_net_run(net, &in, j->pred, j->scores);
    cg_net_close(net);
    return NULL;
}

/* Distinct networks in concurrent threads (the header's promise) give the
 * answers one network gives alone. */
static void test_threads(void)
{
    static unsigned char px[N * 784];
    static job jobs[3], alone;
    fill(px, sizeof px, 11);
    alone.px = px;
    thread_run(&alone);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) jobs[i].px = px, pthread_create(&th[i], NULL, thread_run, &jobs[i]);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].st == CG_STATUS_OK && alone.st == CG_STATUS_OK, "thread %d: status %d", i, (int)jobs[i].st);
        CHECK(!memcmp(jobs[i].pred, alone.pred, sizeof alone.pred) &&
                  !memcmp(jobs[i].scores, alone.scores, sizeof alone.scores),
              "thread %d: the same answers as alone", i);
    }
}

/* A bundle (spec text, its weights re-encoded, stand-in manifest and fat
 * binary, which the CPU does not read) opens on the CPU without the spec file
 * and answers as the spec does; a damaged copy, or kernel options, refused. */
static void test_bundle(void)
{
    char path[] = "/tmp/cg_test_api_bundle_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    if (fd < 0) return;
    close(fd);
    cg_spec *s = malloc(sizeof *s);
    cg_weights wt = {0};
    cg_buf text, wb;
    cg_buf_init(&text), cg_buf_init(&wb);
    cg_err e = {{0}};
    int ok = s && !cg_spec_load(SPEC, s, &e) && !cg_weights_for_spec(s, &wt, &e) &&
             !cg_weights_encode(path, &wt, CG_W_F16, &wb, &e) && !cg_read_file(SPEC, &text, &e);
    cg_blob sec[CG_BUNDLE_NSECTIONS] = {{"convgen-manifest 1\n", 19}, {"fatbin", 6}, {wb.data, wb.len},
                                        {text.data, text.len}};
    ok = ok && !cg_bundle_write(path, sec, &e);
    CHECK(ok, "bundle setup: %s", e.msg);
    static unsigned char px[N * 784];
    static float sb[N * 10], ss[N * 10];
    int pb[N], ps[N];
    fill(px, sizeof px, 11);
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    cg_net *bn = NULL, *sn = NULL;
    CHECK(cg_net_open_bundle(path, NULL, &bn) == CG_STATUS_OK, "open bundle: %s", cg_net_error(bn));
    CHECK(cg_net_open(SPEC, NULL, &sn) == CG_STATUS_OK, "open spec: %s", cg_net_error(sn));
    CHECK(cg_net_run(bn, &in, pb, sb) == CG_STATUS_OK, "bundle run: %s", cg_net_error(bn));
    CHECK(cg_net_run(sn, &in, ps, ss) == CG_STATUS_OK, "spec run: %s", cg_net_error(sn));
    CHECK(!memcmp(pb, ps, sizeof pb) && !memcmp(sb, ss, sizeof sb), "bundle = spec, predictions and scores");
    cg_net_close(bn), cg_net_close(sn);
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.fatbin = "x.fatbin";
    CHECK(cg_net_open_bundle(path, &o, &bn) == CG_STATUS_USAGE, "a bundle with a fatbin option");
    CHECK_CONTAINS(cg_net_error(bn), "a bundle carries its kernels");
    cg_net_close(bn);
    /* one flipped byte in the weights section: damaged, one line naming the file */
    cg_buf f;
    cg_buf_init(&f);
    if (!cg_read_file(path, &f, &e) && f.len > 200) {
        f.data[f.len - text.len - 100] ^= 0x40;
        CHECK(!cg_write_file_atomic(path, f.data, f.len, &e), "rewrite");
        CHECK(cg_net_open_bundle(path, NULL, &bn) == CG_STATUS_INPUT, "damaged bundle: input");
        CHECK_CONTAINS(cg_net_error(bn), path);
        CHECK(!strchr(cg_net_error(bn), '\n'), "one line");
        cg_net_close(bn);
    }
    cg_buf_free(&f), cg_buf_free(&text), cg_buf_free(&wb);
    cg_weights_free(&wt);
    free(s);
    unlink(path);
}

int main(void)
{
    /* the library prints nothing: stderr goes to a file for the calls */
    char path[] = "/tmp/cg_test_api_XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    CHECK(fd >= 0 && saved >= 0, "temp file");
    if (fd >= 0) dup2(fd, 2);
    test_open_errors();
    test_run();
    test_bundle();
    test_threads();
    if (fd >= 0) {
        dup2(saved, 2);
        off_t n = lseek(fd, 0, SEEK_END);
        CHECK(n == 0, "the library wrote %lld bytes on stderr", (long long)n);
        close(fd), unlink(path);
    }
    return cg_test_done("api");
}
