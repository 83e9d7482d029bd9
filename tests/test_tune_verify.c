/* test_tune_verify.c — `convgen tune`'s check of its entries in the network
 * (runtime/cli/tune_verify.c: the network with this run's entries for its bucket
 * against the network without them, each layer's median GPU time) and the end of
 * a tune run after it (cg_tune_finish: the check, the whole-network step, the
 * record written), through the library on the stand-in driver (tests/fake_cuda.c).
 * The fake runs no kernel; its clock makes the timings: every kernel costs 1 ms,
 * but those of a template the test names cost what it says (fake_cu_stats()->
 * kernel_cost), and the profile's events read that clock through the network's
 * CUDA graph. Checked: an entry whose kernels are slower in the network is
 * dropped and one whose kernels are faster is kept, each judged on every layer
 * of its shape; the 2 % margin on both sides; where the network with those kept
 * is slower as run runs it (no profile: a kernel the test makes slower where its
 * launch follows the kernel before with no event between, with PDL or without), each timed alone and the one faster kept; an fc entry that moves a layer out
 * of the network's one-kernel tail is charged that layer's new kernel; the
 * record written holds the entries kept and not those dropped, with the older
 * record's other buckets, and the lines printed say so with both times; an older
 * entry replaced is said to be dropped too; --no-verify keeps every entry; a
 * device failure keeps them as measured with one line on stderr; the large
 * batch's entries are checked the same way. The test re-executes itself with
 * LD_LIBRARY_PATH naming the fake and the JIT cache in a temporary directory.
 * Skipped where NVRTC is missing. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot.h"
#include "check.h"
#include "convgen.h"
#include "fake_cuda.h"
#include "fake_run.h"
#include "tune_entry.h"
#include "spec.h"
#include "tune.h"
#include "tune_verify.h"

/* c1 and c2 share a shape (one entry decides both); c0 does not. At 8 images the
 * network runs each of c1 and c2 as a split pair (igemm, then splitk_reduce), the
 * case where a kernel the harness timed alone lost in the network on an H200 */
static const char spec_text[] = "network: verifynet\n"
                                "input: {channels: 1, height: 8, width: 8}\n"
                                "seed: 5\n"
                                "layers:\n"
                                "  - {name: c0, op: conv, M: 64, K: 3, padding: 1, activation: relu}\n"
                                "  - {name: c1, op: conv, M: 64, K: 3, padding: 1, activation: relu}\n"
                                "  - {name: c2, op: conv, M: 64, K: 3, padding: 1, activation: relu}\n"
                                "  - {name: fc1, op: fc, out: 20, bias: true, activation: tanh}\n"
                                "  - {name: fc2, op: fc, out: 10, bias: true}\n"
                                "  - {name: prob, op: softmax}\n";

#define IMAGES 8 /* bucket 8 */
#define DEVICE "fake sm_90"

static fake_cu_stats_t *st;
static char dir[4096], spec_path[4200];
static cg_spec spec;

/* ---- the fake's clock: the network's own kernels 1 ms, a record's what the test says ---- */

static struct {
    const char *prefix;
    double cost, pdl_cost; /* launched after an event (a profile), and right after the kernel
                            * before, overlapping it or not, as run launches it (0: the same) */
} costs[4];
static cg_manifest own[2]; /* the network's kernels at bucket 8 and at the large batch */

static double kernel_cost(const char *name, int pdl)
{
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < own[b].nkernels; i++)
            if (!strcmp(own[b].k[i].name, name)) return 0; /* the fake's own: 1 */
    for (int i = 0; i < 4 && costs[i].prefix; i++)
        if (!strncmp(name, costs[i].prefix, strlen(costs[i].prefix)))
            return pdl && costs[i].pdl_cost > 0 ? costs[i].pdl_cost : costs[i].cost;
    return 0;
}

static void set_costs(double igemm, double vec)
{
    memset(costs, 0, sizeof costs);
    costs[0].prefix = "conv2d_igemm", costs[0].cost = igemm;
    costs[1].prefix = "fc_vec", costs[1].cost = vec;
}

/* ---- records ---- */

/* Layer li's entry for bucket (0: the large batch): template tpl's first candidate
 * (tune_entry.h), its default timed at 0.002 ms. */
static int entry(int li, int bucket, const char *tpl, cg_tune_entry *t)
{
    if (tune_entry_for(&spec, li, bucket, tpl, 0, t)) return -1;
    t->default_ms = 0.002;
    return 0;
}

/* A record of the fake device made by `tune --batch batch`, no entry yet. */
static cg_tune_record *record(long long batch)
{
    cg_tune_record *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->version, sizeof r->version, "%s", CG_VERSION);
    snprintf(r->device, sizeof r->device, DEVICE);
    r->cc = 90, r->sms = 132, r->driver = 13000, r->batch = batch;
    snprintf(r->network, sizeof r->network, "verifynet");
    return r;
}

/* This run's entries at bucket 8: c1's shape on igemm, fc1 on fc_vec (the network's own
 * there: direct and gemv); then, as cg_tune_merge appends them, the older record's
 * entries for other buckets (c1's shape at 64, fc2 at the large batch). */
static cg_tune_record *run_record(void)
{
    cg_tune_record *r = record(IMAGES);
    if (!r || entry(1, 8, "conv2d_igemm", &r->e[0]) || entry(3, 8, "fc_vec", &r->e[1]) ||
        entry(1, 64, "conv2d_igemm", &r->e[2]) || entry(4, 0, "fc_vec", &r->e[3])) {
        free(r);
        return NULL;
    }
    r->n = 4;
    return r;
}

/* ---- output captured ---- */

/* fd 1 or 2 into a file until uncapture(fd, ...), which reads its text into buf. */
static int saved_fd[3] = {-1, -1, -1};
static void capture(int fd, const char *path)
{
    fflush(stdout), fflush(stderr);
    saved_fd[fd] = dup(fd);
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(f, fd);
    close(f);
}
static void uncapture(int fd, const char *path, char *buf, size_t n)
{
    fflush(stdout), fflush(stderr);
    dup2(saved_fd[fd], fd);
    close(saved_fd[fd]);
    saved_fd[fd] = -1;
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    if (f) fclose(f);
    buf[got] = 0;
}

/* ---- the check itself ---- */

static int find_layer(const char *name)
{
    for (int i = 0; i < spec.nlayers; i++)
        if (!strcmp(spec.layers[i].name, name)) return i;
    return -1;
}

/* The names of the layers verdict v counted, space-separated. */
static const char *counted(const cg_tune_verdict *v, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < spec.nlayers; i++)
        if (v->counted[i])
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? " " : "", spec.layers[i].name);
    return buf;
}

/* What the expected times below rest on: the network's own kernels at bucket 8 (the
 * input's, c0's two (reading the float input and the pixels: planner.pixel_twin; the
 * pixels run the second alone), a split pair for each of c1 and c2, fc1's, and the one-kernel tail of
 * fc2, the softmax and the prediction), and at the large batch (c1 and c2 not igemm). */
static int own_kernels(void)
{
    if (fake_backend_manifest(&spec, IMAGES, &own[0]) || fake_backend_manifest(&spec, 0, &own[1])) return -1;
    char got[2][1024] = {"", ""};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < own[b].nkernels; i++) {
            const char *n = own[b].k[i].name;
            snprintf(got[b] + strlen(got[b]), sizeof got[b] - strlen(got[b]), "%s%s:%.*s", i ? " " : "",
                     own[b].k[i].layer, (int)strcspn(n, "_") + 1 + (int)strcspn(n + strcspn(n, "_") + 1, "_"), n);
        }
    int ok = !strcmp(got[0], "input:input_u8 c0:conv2d_direct c0:conv2d_direct c1:conv2d_igemm c1:splitk_reduce "
                             "c2:conv2d_igemm c2:splitk_reduce fc1:fc_gemv fc2:tail_i20o10");
    CHECK(ok, "the network's kernels at bucket 8: %s", got[0]);
    int large = !strstr(got[1], "igemm") && !strstr(got[1], "splitk");
    CHECK(large, "the network's kernels at the large batch: %s", got[1]);
    return ok && large ? 0 : -1;
}

/* The record's igemm (no split, as the harness times it) slower than the network's split
 * pair, fc_vec faster than the network's gemv; then the other way round: the verdicts
 * follow the clock, each entry judged on the layers it decides. */
static void verdicts(void)
{
    cg_tune_record *rec = run_record();
    cg_tune_verify_result *r = malloc(sizeof *r);
    if (!rec || !r) return free(rec), free(r);
    for (int way = 0; way < 2; way++) {
        double ig = way ? 0.5 : 3, vec = way ? 2 : 0.25;
        set_costs(ig, vec);
        cg_err e = {{0}};
        int rc = cg_tune_verify(&spec, rec, 2, DEVICE, 90, IMAGES, 0, 0, r, &e);
        CHECK(rc == 0 && r->n == 2 && r->bucket == 8 && r->images == IMAGES && r->rounds == 15, "verify: %d %s", rc,
              e.msg);
        if (rc || r->n != 2) continue;
        char b0[256], b1[256];
        const cg_tune_verdict *c = &r->v[0], *f = &r->v[1];
        CHECK(c->entry == 0 && c->applied == 2 && !strcmp(counted(c, b0, sizeof b0), "c1 c2") && c->with_ms == 2 * ig &&
                  c->without_ms == 4 && c->keep == (ig < 2),
              "c1's shape (igemm at %g ms): %s, %g ms with it, %g ms without, layers %s", ig,
              c->keep ? "kept" : "dropped", c->with_ms, c->without_ms, b0);
        CHECK(f->entry == 1 && f->applied == 1 && !strcmp(counted(f, b1, sizeof b1), "fc1") && f->with_ms == vec &&
                  f->without_ms == 1 && f->keep == (vec < 1),
              "fc1 (fc_vec at %g ms): %s, %g ms with it, %g ms without, layers %s", vec, f->keep ? "kept" : "dropped",
              f->with_ms, f->without_ms, b1);
        /* the whole network as the pixels run it: c0 reading them (no input kernel), the two
         * convs (two kernels each without), fc1, the tail; then as run runs it, with the entry
         * kept alone */
        CHECK(r->without_ms == 7 && r->with_ms == 2 + 2 * ig + vec, "the network: %g ms with, %g without",
              r->with_ms, r->without_ms);
        double kept = way ? 7 - 4 + 2 * ig : 7 - 1 + vec;
        CHECK(r->run_checked && !r->run_slower && r->run_rounds == 15 && r->run_with_ms == kept &&
                  r->run_without_ms == 7 && c->layers_keep == c->keep && f->layers_keep == f->keep,
              "as run runs it: %g ms with the entry kept, %g without", r->run_with_ms, r->run_without_ms);
    }
    /* the margin: 2 % less time, else dropped (3.98 ms against 4 is within it, 3.9 is not) */
    for (int k = 0; k < 2; k++) {
        double ig = k ? 1.95 : 1.99;
        set_costs(ig, 0.25);
        cg_err e = {{0}};
        int rc = cg_tune_verify(&spec, rec, 2, DEVICE, 90, IMAGES, 0, 0, r, &e);
        CHECK(rc == 0 && r->n == 2 && r->v[0].keep == k && fabs(r->v[0].with_ms - 2 * ig) < 1e-6,
              "igemm at %g ms: %s (%g ms with it, %g without)", ig, k ? "kept" : "dropped", r->v[0].with_ms,
              r->v[0].without_ms);
    }
    free(rec), free(r);
}

/* fc_vec faster alone (after an event, as a profile launches every kernel) but slower right
 * after the kernel before it, whether its launch overlaps that one or not (run times both ways
 * and keeps the faster: neither escapes it). fc1's entry kept by its
 * layer's time alone: the network as run runs it slower with it, and it is dropped. With c1's
 * entry kept too and faster by more, the network is faster and both stay; with fc_vec slower
 * still, the two together are slower, each is timed alone, and c1's stays alone. */
static void run_slower(void)
{
    cg_tune_record *rec = run_record();
    cg_tune_verify_result *r = malloc(sizeof *r);
    if (!rec || !r) return free(rec), free(r);
    static const struct {
        double ig, pdl;
        int c1, fc1;         /* kept */
        double with;         /* the network with those kept by their layers, as run runs it */
        double alone[2];     /* c1's and fc1's alone (0: not timed alone) */
    } cases[] = {
        {3, 2, 0, 0, 7 - 1 + 2, {0, 0}},
        {0.5, 2, 1, 1, 7 - 4 + 1 - 1 + 2, {0, 0}},
        {0.5, 5, 1, 0, 7 - 4 + 1 - 1 + 5, {7 - 4 + 1, 7 - 1 + 5}},
    };
    for (int c = 0; c < 3; c++) {
        set_costs(cases[c].ig, 0.25);
        costs[1].pdl_cost = cases[c].pdl;
        cg_err e = {{0}};
        int rc = cg_tune_verify(&spec, rec, 2, DEVICE, 90, IMAGES, 0, 0, r, &e);
        CHECK(rc == 0 && r->n == 2 && r->v[0].layers_keep == (cases[c].ig < 2) && r->v[1].layers_keep &&
                  r->run_checked && r->run_with_ms == cases[c].with && r->run_without_ms == 7 &&
                  r->run_slower == (cases[c].with >= 7) && !r->again_checked,
              "case %d: as run runs it %g ms with those kept by their layers, %g without (%s)", c, r->run_with_ms,
              r->run_without_ms, e.msg);
        for (int k = 0; k < 2; k++)
            CHECK(r->v[k].alone_checked == (cases[c].alone[k] > 0) &&
                      (!cases[c].alone[k] || (r->v[k].alone_ms == cases[c].alone[k] && r->v[k].alone_without_ms == 7)),
                  "case %d, entry %d alone: %d, %g ms", c, k, r->v[k].alone_checked, r->v[k].alone_ms);
        CHECK(r->v[0].keep == cases[c].c1 && r->v[1].keep == cases[c].fc1, "case %d: c1 %s, fc1 %s", c,
              r->v[0].keep ? "kept" : "dropped", r->v[1].keep ? "kept" : "dropped");
    }
    costs[1].pdl_cost = 0;
    free(rec), free(r);
}

/* fc2 tuned at bucket 8: the network's one-kernel tail (fc2, softmax, prediction) is
 * no longer fc2's, and prob gets a kernel of its own: it counts against the entry. */
static void tail_charged(void)
{
    cg_tune_record *rec = record(IMAGES);
    cg_tune_verify_result *r = malloc(sizeof *r);
    if (!rec || !r || entry(4, 8, "fc_vec", &rec->e[0])) return free(rec), free(r);
    rec->n = 1;
    set_costs(1, 0.5);
    cg_err e = {{0}};
    int rc = cg_tune_verify(&spec, rec, 1, DEVICE, 90, IMAGES, 0, 0, r, &e);
    char b[256];
    int prob = find_layer("prob");
    CHECK(rc == 0 && r->n == 1 && r->v[0].counted[prob] && r->v[0].with_ms > 0.5 && !r->v[0].keep,
          "fc2 out of the tail: %s, %g ms with it, %g ms without, layers %s (%s)",
          r->v[0].keep ? "kept" : "dropped", r->v[0].with_ms, r->v[0].without_ms, counted(&r->v[0], b, sizeof b),
          e.msg);
    free(rec), free(r);
}

/* The large batch: its entries set the layers' strategy; the same check. */
static void large_batch(void)
{
    cg_tune_record *rec = record(2000);
    cg_tune_verify_result *r = malloc(sizeof *r);
    if (!rec || !r || entry(1, 0, "conv2d_igemm", &rec->e[0])) return free(rec), free(r);
    rec->n = 1;
    for (int way = 0; way < 2; way++) {
        double ig = way ? 0.5 : 3;
        set_costs(ig, 1);
        cg_err e = {{0}};
        int rc = cg_tune_verify(&spec, rec, 1, DEVICE, 90, 2000, 0, 0, r, &e);
        char b[256];
        CHECK(rc == 0 && r->bucket == 0 && r->images == 2000 && r->n == 1 && r->v[0].applied == 2 &&
                  !strcmp(counted(&r->v[0], b, sizeof b), "c1 c2") && r->v[0].with_ms == 2 * ig &&
                  r->v[0].keep == way,
              "the large batch, igemm at %g ms: %s, %g ms with it, %g without, layers %s (%s)", ig,
              r->v[0].keep ? "kept" : "dropped", r->v[0].with_ms, r->v[0].without_ms, b, e.msg);
    }
    free(rec), free(r);
}

/* ---- the end of a tune run: checked, then written ---- */

/* cg_tune_finish on run_record() (igemm slower, fc_vec faster), stdout and stderr
 * into out and err; the record read back into back. */
static int finish(int no_verify, const unsigned char *replaced, char *out, char *err, size_t n, cg_tune_record *back)
{
    cg_tune_record *rec = run_record();
    if (!rec) return -1;
    set_costs(3, 0.25);
    char path[4300], o[4300], ef[4300];
    snprintf(path, sizeof path, "%s/verifynet.tuning.yaml", dir);
    snprintf(o, sizeof o, "%s/out.txt", dir);
    snprintf(ef, sizeof ef, "%s/err.txt", dir);
    unlink(path);
    cg_tune_finish_opts fo = {DEVICE, 90, 0, 0, no_verify, IMAGES};
    cg_err e = {{0}};
    capture(1, o);
    capture(2, ef);
    int rc = cg_tune_finish(&spec, rec, 2, replaced, &fo, path, &e);
    uncapture(2, ef, err, n);
    uncapture(1, o, out, n);
    CHECK(rc == 0, "finish: %s", e.msg);
    cg_err re = {{0}};
    int read = cg_tune_read(path, back, &re);
    CHECK(read == 0, "the record read back: %s", re.msg);
    free(rec);
    return rc || read ? -1 : 0;
}

/* Whether record r holds an entry of layer li's shape at bucket with template tpl. */
static int holds(const cg_tune_record *r, int li, int bucket, const char *tpl)
{
    char sig[CG_TUNE_SIG];
    cg_tune_signature(&spec.layers[li], sig, sizeof sig);
    const cg_tune_entry *t = cg_tune_entry_find(r, sig, bucket);
    return t && !strcmp(t->winner.tpl, tpl);
}

static void written(void)
{
    static char out[65536], err[65536];
    cg_tune_record *back = malloc(sizeof *back);
    if (!back) return;
    /* verified: igemm dropped, fc_vec kept, the other buckets' entries kept */
    if (!finish(0, NULL, out, err, sizeof out, back)) {
        CHECK(back->n == 3 && !holds(back, 1, 8, "conv2d_igemm") && holds(back, 3, 8, "fc_vec") &&
                  holds(back, 1, 64, "conv2d_igemm") && holds(back, 4, 0, "fc_vec"),
              "the record written: fc1's entry kept, c1's dropped, the other buckets' kept (%d entries)", back->n);
        CHECK(strstr(out, "verify, bucket 8: c1 (conv2d_igemm) dropped: 6000.0 us with it, 4000.0 us without (c1 c2)\n") &&
                  strstr(out, "verify, bucket 8: fc1 (fc_vec) kept: 250.0 us with it, 1000.0 us without (fc1)\n") &&
                  strstr(out, "verify, bucket 8: the network 8250.0 us with this run's entries, 7000.0 us without "
                              "(profiled, medians of 15 rounds of 8 images); as run runs it, 6250.0 us with the 1 "
                              "kept by their layers, 7000.0 us without; 1 of 2 entries dropped\n") &&
                  !strstr(out, "dropped too"),
              "the lines printed:\n%s", out);
        /* then the whole-network step, on the record as it now stands (no kernel runs on the
         * fake: neither path passes its check) */
        CHECK(strstr(out, "verify, bucket 8: the network") < strstr(out, "whole-network kernel, bucket 8:"),
              "the whole-network step after the check:\n%s", out);
        CHECK(!err[0], "nothing on stderr: %s", err);
    }
    /* c1's entry replaced an older one of this bucket: that one is not restored */
    unsigned char replaced[4] = {1, 0, 0, 0};
    if (!finish(0, replaced, out, err, sizeof out, back))
        CHECK(back->n == 3 && !holds(back, 1, 8, "conv2d_igemm") &&
                  strstr(out, "verify, bucket 8: c1 (conv2d_igemm) dropped: 6000.0 us with it, 4000.0 us without (c1 "
                              "c2); the record's older entry for it is dropped too\n"),
              "an older entry replaced: dropped too:\n%s", out);
    /* --no-verify: both entries written as measured, nothing checked */
    if (!finish(1, NULL, out, err, sizeof out, back))
        CHECK(back->n == 4 && holds(back, 1, 8, "conv2d_igemm") && holds(back, 3, 8, "fc_vec") && !strstr(out, "verify"),
              "--no-verify: every entry written (%d), no line:\n%s", back->n, out);
    /* the device failing: one line on stderr, the entries kept as measured */
    st->fail_launches = 1;
    if (!finish(0, NULL, out, err, sizeof out, back)) {
        CHECK(back->n == 4 && holds(back, 1, 8, "conv2d_igemm") && holds(back, 3, 8, "fc_vec") &&
                  !strstr(out, "verify"),
              "a device failure: every entry written (%d)", back->n);
        const char *want = "convgen: verify, bucket 8: not done (";
        const char *at = strstr(err, want);
        CHECK(err == at && strstr(err, "); the record keeps this run's entries as measured\n") &&
                  strchr(err, '\n') == strstr(err, "measured\n") + strlen("measured"),
              "a device failure: one line first on stderr:\n%s", err);
    }
    st->fail_launches = 0;
    free(back);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (fake_cu_reexec(argv, "tune_verify")) return cg_test_done("tune_verify");
    void *nvrtc = dlopen("libnvrtc.so", RTLD_NOW);
    if (!nvrtc) nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW);
    if (!nvrtc) {
        printf("skip: tune's check of its entries in the network: no NVRTC\n");
        CHECK(1, "skipped");
        return cg_test_done("tune_verify");
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    fake_cu_stats_t *(*stats)(void) = NULL;
    if (cuda) *(void **)&stats = dlsym(cuda, "fake_cu_stats");
    CHECK(stats != NULL, "the fake libcuda.so.1 is not the one loaded (build/tests/fake)");
    if (!stats) return cg_test_done("tune_verify");
    st = stats();
    st->kernel_cost = kernel_cost;
    snprintf(dir, sizeof dir, "%s", getenv("CG_FAKE_CUDA_CHILD"));
    snprintf(spec_path, sizeof spec_path, "%s/verifynet.yaml", dir);
    FILE *f = fopen(spec_path, "w");
    CHECK(f && fputs(spec_text, f) >= 0 && fclose(f) == 0, "writing %s", spec_path);
    cg_err e = {{0}};
    int rc = cg_spec_load(spec_path, &spec, &e);
    CHECK(rc == 0, "spec: %s", e.msg);
    if (!rc && !own_kernels()) {
        verdicts();
        run_slower();
        tail_charged();
        large_batch();
        written();
    }
    st->kernel_cost = NULL;
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return cg_test_done("tune_verify");
}
