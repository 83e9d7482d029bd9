/* test_pipeline.c — streamed execution without a GPU: the batch scheduler
 * driven by a fake backend that checks every rule the CUDA backend relies on
 * (a set is reused only after its batch is finished, batches finish in input
 * order, several are in flight, a failure drains and stops), the split of
 * images over MPI ranks, --repeat-dataset's copy, and the CPU backend run in
 * batches giving exactly what it gives for all images at once (N not a
 * multiple of B, B larger than N, N = 1). */
#include "batched.h"
#include "check.h"
#include "cpu.h"
#include "data.h"
#include "gpu.h"
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

/* A pretend device: submit "computes" out = 3*in+1 into the set's staging;
 * finish copies it out to where the batch belongs. Every call is logged. */
typedef struct {
    const int *in;
    int *out;
    int stage[CG_PIPE_MAX_SETS][1024];
    int busy[CG_PIPE_MAX_SETS];
    long long boff[CG_PIPE_MAX_SETS], bn[CG_PIPE_MAX_SETS];
    long long next_finish; /* the first image not yet finished */
    int inflight, max_inflight, violations, drains;
    int fail_submit, fail_finish; /* 1-based call number that fails; 0 never */
    int nsubmit, nfinish;
    char log[4096];
} fake;

static void logf_(fake *f, char what, int set, long long off)
{
    size_t l = strlen(f->log);
    snprintf(f->log + l, sizeof f->log - l, "%s%c%d@%lld", l ? " " : "", what, set, off);
}

static int fake_submit(void *ctx, int set, long long off, long long n, cg_err *e)
{
    fake *f = ctx;
    f->nsubmit++;
    logf_(f, 'S', set, off);
    if (f->nsubmit == f->fail_submit) return cg_fail(e, "submit %d failed", f->nsubmit);
    if (f->busy[set] || n < 1 || n > 1024) f->violations++;
    for (long long i = 0; i < n; i++) f->stage[set][i] = 3 * f->in[off + i] + 1;
    f->busy[set] = 1, f->boff[set] = off, f->bn[set] = n;
    if (++f->inflight > f->max_inflight) f->max_inflight = f->inflight;
    return 0;
}

static int fake_finish(void *ctx, int set, long long off, long long n, cg_err *e)
{
    fake *f = ctx;
    f->nfinish++;
    logf_(f, 'F', set, off);
    if (f->nfinish == f->fail_finish) return cg_fail(e, "finish %d failed", f->nfinish);
    if (!f->busy[set] || f->boff[set] != off || f->bn[set] != n || off != f->next_finish) f->violations++;
    memcpy(f->out + off, f->stage[set], (size_t)n * sizeof(int));
    f->busy[set] = 0, f->inflight--;
    f->next_finish = off + n;
    return 0;
}

static void fake_drain(void *ctx) { ((fake *)ctx)->drains++; }

static const cg_pipe_ops fake_ops = {fake_submit, fake_finish, fake_drain};

/* Every n, batch and set count: results in input order, each image once, no
 * set reused while busy, as many batches in flight as sets allow. */
static void test_schedule_grid(void)
{
    static int in[5000], out[5000];
    for (int i = 0; i < 5000; i++) in[i] = i * 7 % 1001;
    long long ns[] = {0, 1, 7, 10, 64, 100, 1000};
    long long bs[] = {1, 3, 10, 64, 1000, 5000};
    int bad = 0, cases = 0;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof bs / sizeof *bs; b++)
            for (int sets = 1; sets <= CG_PIPE_MAX_SETS; sets++) {
                long long n = ns[a], batch = bs[b];
                if (batch > 1024) continue; /* the fake's staging */
                fake *f = calloc(1, sizeof *f);
                f->in = in, f->out = out;
                memset(out, 0xff, sizeof out);
                cg_err e = {""};
                int rc = cg_pipe_run(n, batch, sets, &fake_ops, f, &e);
                long long nb = (n + batch - 1) / batch;
                int ok = rc == 0 && f->violations == 0 && f->inflight == 0 && f->next_finish == n &&
                         f->nsubmit == nb && f->nfinish == nb && f->drains == 0 &&
                         f->max_inflight == (nb < sets ? nb : sets) && out[n] == -1;
                for (long long i = 0; i < n; i++) ok &= out[i] == 3 * in[i] + 1;
                if (!ok && bad++ < 5)
                    printf("FAIL n=%lld batch=%lld sets=%d: rc %d, %d violations, max in flight %d: %s\n", n,
                           batch, sets, rc, f->violations, f->max_inflight, f->log);
                cases++;
                free(f);
            }
    CHECK(bad == 0, "%d of %d schedules wrong", bad, cases);
}

/* The exact order for two sets: batch i+1 is submitted before batch i is
 * finished (the overlap), and the last partial batch is counted right. */
static void test_schedule_order(void)
{
    static int in[64], out[64];
    fake *f = calloc(1, sizeof *f);
    f->in = in, f->out = out;
    cg_err e = {""};
    CHECK(cg_pipe_run(35, 10, 2, &fake_ops, f, &e) == 0, "two sets: %s", e.msg);
    CHECK(!strcmp(f->log, "S0@0 S1@10 F0@0 S0@20 F1@10 S1@30 F0@20 F1@30"), "two sets: %s", f->log);
    memset(f, 0, sizeof *f);
    f->in = in, f->out = out;
    CHECK(cg_pipe_run(35, 10, 3, &fake_ops, f, &e) == 0, "three sets: %s", e.msg);
    CHECK(!strcmp(f->log, "S0@0 S1@10 S2@20 F0@0 S0@30 F1@10 F2@20 F0@30"), "three sets: %s", f->log);
    memset(f, 0, sizeof *f);
    f->in = in, f->out = out;
    CHECK(cg_pipe_run(35, 100, 2, &fake_ops, f, &e) == 0 && !strcmp(f->log, "S0@0 F0@0"),
          "batch larger than n: one batch of all: %s", f->log);
    free(f);
}

/* A failing call stops everything: nothing more submitted or finished, the
 * sets drained once, the error passed on. */
static void test_schedule_failure(void)
{
    static int in[100], out[100];
    fake *f = calloc(1, sizeof *f);
    f->in = in, f->out = out, f->fail_submit = 3;
    cg_err e = {""};
    CHECK(cg_pipe_run(100, 10, 2, &fake_ops, f, &e) == -1, "a failed submit fails the run");
    CHECK_CONTAINS(e.msg, "submit 3 failed");
    CHECK(f->drains == 1 && !strcmp(f->log, "S0@0 S1@10 F0@0 S0@20"), "stopped at once: %s, %d drains", f->log,
          f->drains);
    memset(f, 0, sizeof *f);
    f->in = in, f->out = out, f->fail_finish = 2;
    CHECK(cg_pipe_run(100, 10, 2, &fake_ops, f, &e) == -1, "a failed finish fails the run");
    CHECK_CONTAINS(e.msg, "finish 2 failed");
    CHECK(f->drains == 1 && !strcmp(f->log, "S0@0 S1@10 F0@0 S0@20 F1@10"), "stopped at once: %s", f->log);
    memset(f, 0, sizeof *f);
    CHECK(cg_pipe_run(10, 0, 2, &fake_ops, f, &e) == -1 && f->nsubmit == 0, "batch 0 refused");
    CHECK_CONTAINS(e.msg, "batch size 0");
    CHECK(cg_pipe_run(10, 5, 0, &fake_ops, f, &e) == -1 && f->nsubmit == 0, "no sets refused");
    CHECK(cg_pipe_run(10, 5, CG_PIPE_MAX_SETS + 1, &fake_ops, f, &e) == -1 && f->nsubmit == 0,
          "too many sets refused");
    CHECK_CONTAINS(e.msg, "stream sets");
    free(f);
}

/* Shares over ranks: contiguous, in rank order, covering n, sizes within one. */
static void test_share(void)
{
    int bad = 0;
    for (long long n = 0; n <= 60; n++)
        for (int ranks = 1; ranks <= 9; ranks++) {
            long long at = 0, lo = n, hi = 0;
            for (int r = 0; r < ranks; r++) {
                long long off, cnt;
                cg_share(n, ranks, r, &off, &cnt);
                bad += off != at || cnt < 0;
                at += cnt;
                if (cnt < lo) lo = cnt;
                if (cnt > hi) hi = cnt;
            }
            bad += at != n || hi - lo > 1;
        }
    CHECK(bad == 0, "%d bad shares", bad);
    long long off, cnt;
    cg_share(10, 3, 0, &off, &cnt);
    CHECK(off == 0 && cnt == 4, "10 over 3, rank 0: %lld+%lld", off, cnt);
    cg_share(10, 3, 2, &off, &cnt);
    CHECK(off == 7 && cnt == 3, "10 over 3, rank 2: %lld+%lld", off, cnt);
    cg_share(1, 4, 3, &off, &cnt);
    CHECK(off == 1 && cnt == 0, "1 over 4, rank 3 gets nothing: %lld+%lld", off, cnt);
}

/* --repeat-dataset: copies in order, labels with them; too many refused with
 * the set untouched. */
static void test_repeat(void)
{
    cg_dataset d = {3, 1, 2, malloc(6), malloc(3)};
    for (int i = 0; i < 6; i++) d.pixels[i] = (unsigned char)(10 + i);
    for (int i = 0; i < 3; i++) d.labels[i] = (unsigned char)i;
    cg_err e = {""};
    CHECK(cg_data_repeat(&d, 2, 1, &e) == 0 && d.n == 3, "once is the set itself");
    CHECK(cg_data_repeat(&d, 2, 4, &e) == 0 && d.n == 12, "four times: %d images (%s)", d.n, e.msg);
    int ok = 1;
    for (int i = 0; i < 12; i++) ok &= d.labels[i] == i % 3 && d.pixels[2 * i] == 10 + 2 * (i % 3) &&
                                       d.pixels[2 * i + 1] == 11 + 2 * (i % 3);
    CHECK(ok, "copies in order, labels with their images");
    CHECK(cg_data_repeat(&d, 2, 1LL << 29, &e) == -1 && d.n == 12 && d.labels[11] == 2, "2^31 images refused");
    CHECK_CONTAINS(e.msg, "at most");
    CHECK(cg_data_repeat(&d, 2, 0, &e) == -1, "zero times refused");
    cg_dataset_free(&d);
}

/* The CPU backend in batches gives, bit for bit, what it gives for all the
 * images at once: ece408-2017, seeded random weights, made-up pixels. */
static void test_cpu_batched(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_weights w;
    cg_err e = {""};
    if (!s || cg_spec_load("specs/ece408-2017.yaml", s, &e) || cg_weights_for_spec(s, &w, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s);
        return;
    }
    enum { N = 37 };
    size_t per = (size_t)s->C * (size_t)s->H * (size_t)s->W;
    long long classes = cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    unsigned char *px = malloc(N * per);
    unsigned x = 12345;
    for (size_t i = 0; i < N * per; i++) x = x * 1103515245u + 12345u, px[i] = (unsigned char)(x >> 23);
    int ref[N], got[N];
    float *rp = malloc(N * (size_t)classes * sizeof *rp), *gp = malloc(N * (size_t)classes * sizeof *gp);
    CHECK(cg_cpu_forward(s, &w, px, N, NULL, rp, ref, NULL, &e) == 0, "all at once: %s", e.msg);
    struct {
        long long n, batch;
        const char *what;
    } cases[] = {{N, 10, "N not a multiple of B"}, {N, 100, "B larger than N"}, {1, 8, "N = 1"},
                 {N, 1, "B = 1"},                  {N, N, "B = N"},            {0, 4, "N = 0"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        memset(got, 0x55, sizeof got);
        memset(gp, 0, N * (size_t)classes * sizeof *gp);
        long long n = cases[c].n;
        int rc = cg_cpu_run_batched(s, &w, px, n, cases[c].batch, got, gp, NULL, &e);
        int same = rc == 0 && (n == N || got[n] == 0x55555555);
        for (long long i = 0; i < n; i++) same &= got[i] == ref[i];
        same &= n == 0 || !memcmp(gp, rp, (size_t)n * (size_t)classes * sizeof *gp);
        CHECK(same, "%s (N=%lld, B=%lld): rc %d %s", cases[c].what, n, cases[c].batch, rc, e.msg);
    }
    memset(got, 0, sizeof got);
    CHECK(cg_cpu_run_batched(s, &w, px, N, 16, got, NULL, NULL, &e) == 0 && !memcmp(got, ref, sizeof ref),
          "predictions alone, no probabilities asked for");
    CHECK(cg_cpu_run_batched(s, &w, px, N, 0, got, NULL, NULL, &e) == -1, "batch 0 refused");
    free(px), free(rp), free(gp), free(s);
    cg_weights_free(&w);
}

/* --profile's streaming figures from the events: the overlap is the share of
 * the copies that the device span did not add to the kernels. */
static void test_overlap_figures(void)
{
    cg_gpu_times t;
    memset(&t, 0, sizeof t);
    t.images = 100000, t.batches = 10, t.streams = 2;
    t.upload_ms = 7, t.download_ms = 1, t.total_ms = 16, t.span_ms = 17, t.wall_ms = 20;
    CHECK(cg_gpu_overlap(&t) > 0.874 && cg_gpu_overlap(&t) < 0.876, "7 of 8 ms hidden: %g", cg_gpu_overlap(&t));
    t.span_ms = 24;
    CHECK(cg_gpu_overlap(&t) == 0, "one after another: nothing hidden: %g", cg_gpu_overlap(&t));
    t.span_ms = 30;
    CHECK(cg_gpu_overlap(&t) == 0, "gaps never count as negative overlap");
    t.span_ms = 16;
    CHECK(cg_gpu_overlap(&t) == 1, "all hidden");
    char text[1024];
    const char *buf = text;
    cg_gpu_stream_summary(&t, text, sizeof text);
    CHECK_CONTAINS(buf, "100000 images in 10 batches over 2 stream sets");
    CHECK_CONTAINS(buf, "(5000000 images/s end to end)");
    CHECK_CONTAINS(buf, "(80.0% of the wall time; alone they would allow 6250000 images/s)");
    CHECK_CONTAINS(buf, "100.0% hidden behind kernels");
    memset(&t, 0, sizeof t);
    CHECK(cg_gpu_overlap(&t) == 0, "no copies, no overlap");
}

int main(void)
{
    test_overlap_figures();
    test_schedule_grid();
    test_schedule_order();
    test_schedule_failure();
    test_share();
    test_repeat();
    test_cpu_batched();
    return cg_test_done("pipeline");
}
