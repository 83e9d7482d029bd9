/* test_whole_tune.c — the whole-network kernel as a tuner candidate, without a
 * GPU: `convgen tune --batch N`'s last step (runtime/cli/tune_whole.c) and the
 * tuning record's decision as run and the library take it (runtime/cuda/gpu.c),
 * through the library on tests/fake_cuda.c. The stand-in driver runs no kernel;
 * its launch hook writes what a right kernel would (the CPU reference of the
 * pixels the launch reads, into every layer tensor and the predictions it
 * writes), and its clock makes the timings decide: each per-layer kernel costs
 * 1 ms, the whole-network kernel whole_cost. Checked: tune records the faster
 * path; a path whose outputs are left unwritten fails its check and is never
 * chosen; the record is written and read back; a run takes the record's
 * decision without timing both paths (and says so); an explicit whole on or
 * off overrides it; a record made for other kernels (another build id) is
 * ignored with one notice naming the record, and both paths are timed; a
 * malformed whole entry is refused with FILE:LINE:COL. A layer's entry for
 * bucket 8 is taken by the kernels generated for bucket 8 and by no others, and
 * run's --profile and --json say so for the bucket served. The test re-executes
 * itself with LD_LIBRARY_PATH naming the fake and the JIT cache in a temporary
 * directory. Skipped where NVRTC is missing. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot.h"
#include "check.h"
#include "convgen.h"
#include "fake_cuda.h"
#include "fake_run.h"
#include "manifest.h"
#include "net_internal.h"
#include "spec.h"
#include "tune.h"
#include "tune_whole.h"

static const char spec_text[] =
    "network: wholenet\n"
    "input: {channels: 1, height: 12, width: 12}\n"
    "seed: 5\n"
    "layers:\n"
    "  - {name: c1, op: conv, M: 4, K: 3, activation: relu, pool: max2}\n"
    "  - {name: fc1, op: fc, out: 20, bias: true, activation: tanh}\n"
    "  - {name: fc2, op: fc, out: 10, bias: true}\n"
    "  - {name: prob, op: softmax}\n";

#define IMAGES 8 /* the batch tuned and run: bucket 8, whose kernels include the whole kernel */

static fake_cu_stats_t *st;
static char dir[4096], spec_path[4200], rec_path[4200];
static unsigned char pixels[IMAGES * 144];

/* ---- the launch hook: what a right kernel would write ---- */

static struct {
    cg_manifest m; /* the kernels the backend generates at bucket 8 */
    cg_spec s;
    cg_net *cpu;                 /* the reference */
    int skip_whole, skip_layers; /* leave that path's outputs unwritten (a wrong kernel) */
    float *ref[CG_MAX_LAYERS];
    int pred[IMAGES];
    long long n; /* images of the reference held */
} hk;

/* The spec layer whose output tensor t is (the manifest's layer records), -1 for none. */
static int layer_of_tensor(int t)
{
    for (int j = 0; j < hk.m.nlayers; j++) {
        if (hk.m.l[j].out != t || hk.m.l[j].into[0]) continue;
        for (int l = 0; l < hk.s.nlayers; l++)
            if (!strcmp(hk.s.layers[l].name, hk.m.l[j].name)) return l;
    }
    return -1;
}

static void on_launch(const char *name, void **params)
{
    const cg_manifest *m = &hk.m;
    const cg_mkernel *k = NULL;
    for (int i = 0; i < m->nkernels && !k; i++)
        if (!strcmp(m->k[i].name, name)) k = &m->k[i];
    if (!k || (k->whole ? hk.skip_whole : hk.skip_layers)) return;
    int pix = cg_manifest_tensor(m, "pixels");
    long long n = 0;
    const unsigned char *px = NULL;
    for (int i = 0; i < k->nargs; i++) {
        int in = cg_arg_input(k->args[i]);
        if (k->args[i] == CG_ARG_N) n = *(const int *)params[i];
        else if (in >= 0 && in < k->nin && k->in[in] == pix)
            px = (const unsigned char *)(uintptr_t) * (CUdeviceptr *)params[i];
    }
    if (n <= 0 || n > IMAGES) return;
    if (px) { /* the kernel reading the batch's pixels: the reference of them */
        cg_input in = {CG_INPUT_U8, n, hk.s.C, hk.s.H, hk.s.W, px};
        hk.n = cg_net_run_layers(hk.cpu, &in, hk.pred, NULL, hk.ref) == CG_STATUS_OK ? n : 0;
    }
    if (hk.n != n) return;
    for (int i = 0; i < k->nargs; i++) {
        int t = -1, o = cg_arg_output(k->args[i]);
        if (k->args[i] == CG_ARG_TENSOR) t = k->argref[i];
        else if (o >= 0) t = o < k->nout ? k->outs[o] : k->out;
        if (t < 0) continue;
        void *dst = (void *)(uintptr_t) * (CUdeviceptr *)params[i];
        int l = layer_of_tensor(t);
        if (t == m->predict) memcpy(dst, hk.pred, (size_t)n * sizeof(int));
        else if (l >= 0 && m->t[t].dtype == CG_DT_F32)
            memcpy(dst, hk.ref[l], (size_t)n * (size_t)cg_layer_out_elems(&hk.s.layers[l]) * sizeof(float));
    }
}

static int hook_setup(void)
{
    cg_err e = {""};
    if (cg_spec_load(spec_path, &hk.s, &e)) {
        CHECK(0, "spec: %s", e.msg);
        return -1;
    }
    if (fake_backend_manifest(&hk.s, IMAGES, &hk.m)) return -1;
    CHECK(cg_manifest_whole(&hk.m) >= 0, "bucket 8: a whole-network kernel");
    cg_status rc = cg_net_open(spec_path, NULL, &hk.cpu);
    CHECK(rc == CG_STATUS_OK, "the CPU reference: %s", cg_net_error(hk.cpu));
    for (int l = 0; l < hk.s.nlayers; l++)
        hk.ref[l] = malloc((size_t)IMAGES * (size_t)cg_layer_out_elems(&hk.s.layers[l]) * sizeof(float));
    st->on_launch = on_launch;
    return rc == CG_STATUS_OK && cg_manifest_whole(&hk.m) >= 0 ? 0 : -1;
}

/* ---- tune: both paths checked, then timed; the faster right one recorded ---- */

static void tune_choice(int nlk)
{
    for (int faster = 0; faster < 2; faster++) {
        st->whole_cost = faster ? nlk - 1 : nlk + 1;
        cg_tune_whole_result r;
        cg_err e = {""};
        int rc = cg_tune_whole(&hk.s, IMAGES, 0, 0, &r, &e);
        CHECK(rc == 0 && r.has && r.bucket == 8 && !strcmp(r.kernels, hk.m.hash), "tune (whole %s): %s",
              faster ? "faster" : "slower", e.msg);
        CHECK(r.ok[0] && r.ok[1], "both paths pass their checks: '%s' '%s'", r.why[0], r.why[1]);
        CHECK(r.layers_ms == nlk && r.whole_ms == nlk + (faster ? -1 : 1) && !r.note[0],
              "timed as the runtime times them: %g ms, %g ms (%s)", r.layers_ms, r.whole_ms, r.note);
        CHECK(r.decided && r.entry.bucket == 8 && r.entry.whole == faster && !strcmp(r.entry.kernels, hk.m.hash) &&
                  r.entry.whole_ms == r.whole_ms && r.entry.layers_ms == r.layers_ms,
              "the %s recorded (whole %d)", faster ? "whole kernel" : "per-layer kernels", r.entry.whole);
    }
    /* a wrong path is never chosen: the whole kernel faster but writing nothing */
    st->whole_cost = nlk - 1;
    hk.skip_whole = 1;
    cg_tune_whole_result r;
    cg_err e = {""};
    int rc = cg_tune_whole(&hk.s, IMAGES, 0, 0, &r, &e);
    CHECK(rc == 0 && r.ok[0] && !r.ok[1] && strstr(r.why[1], "unwritten") && r.whole_ms < r.layers_ms,
          "an unwritten whole kernel fails its check: '%s'", r.why[1]);
    CHECK(r.decided && r.entry.whole == 0, "the per-layer kernels recorded although slower");
    /* ... and the per-layer kernels wrong: the whole kernel, the only right one, although slower */
    hk.skip_whole = 0, hk.skip_layers = 1;
    st->whole_cost = nlk + 1;
    rc = cg_tune_whole(&hk.s, IMAGES, 0, 0, &r, &e);
    CHECK(rc == 0 && !r.ok[0] && r.ok[1] && r.decided && r.entry.whole == 1, "wrong per-layer kernels: whole %d ('%s')",
          r.entry.whole, r.why[0]);
    /* both wrong: nothing to record */
    hk.skip_whole = 1;
    rc = cg_tune_whole(&hk.s, IMAGES, 0, 0, &r, &e);
    CHECK(rc == 0 && !r.ok[0] && !r.ok[1] && !r.decided, "both wrong: nothing decided");
    hk.skip_whole = hk.skip_layers = 0;
    /* a large batch: no whole kernel, nothing measured or recorded */
    cg_tune_record *rec = calloc(1, sizeof *rec);
    snprintf(rec->version, sizeof rec->version, "%s", CG_VERSION);
    CHECK(cg_tune_whole_step(&hk.s, rec, "fake sm_90", 90, 10000, 0, 0, &e) == 0 && rec->nwhole == 0,
          "the large batch: no whole entry");
    free(rec);
}

/* ---- the record: written by tune's step, read back, taken by a run ---- */

/* The record tune writes for wholenet on the fake device at 8 images, the whole
 * kernel the faster when `faster`. */
static int write_record(int nlk, int faster)
{
    cg_tune_record *rec = calloc(1, sizeof *rec), *back = calloc(1, sizeof *back);
    cg_err e = {""};
    snprintf(rec->version, sizeof rec->version, "%s", CG_VERSION);
    snprintf(rec->device, sizeof rec->device, "fake sm_90");
    rec->cc = 90, rec->sms = 132, rec->driver = 13000, rec->batch = IMAGES;
    snprintf(rec->network, sizeof rec->network, "wholenet");
    st->whole_cost = faster ? nlk - 1 : nlk + 1;
    int rc = cg_tune_whole_step(&hk.s, rec, "fake sm_90", 90, IMAGES, 0, 0, &e);
    CHECK(rc == 0 && rec->nwhole == 1 && rec->whole[0].whole == faster, "tune's step: %d entries (%s)", rec->nwhole,
          e.msg);
    rc = rc || cg_tune_write(rec, rec_path, &e) || cg_tune_read(rec_path, back, &e);
    const cg_whole_tuned *w = rc ? NULL : cg_tune_whole_find(back, 8);
    CHECK(w && w->whole == faster && !strcmp(w->kernels, hk.m.hash) && w->layers_ms == nlk &&
              w->whole_ms == nlk + (faster ? -1 : 1),
          "written and read back: %s", e.msg);
    st->whole_cost = 0;
    free(rec), free(back);
    return w ? 0 : -1;
}

/* wholenet on the fake at batch 8 with the record at rec_path, whole as given. */
static cg_net *open_tuned(int whole, int profile)
{
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.batch = IMAGES, o.whole = whole, o.tuning = rec_path, o.profile = profile;
    o.streams = 1, o.pdl_always = 1; /* the two paths alone timed (plain launches: test_graph) */
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec_path, &o, &net);
    CHECK(rc == CG_STATUS_OK, "open (whole %d): %s", whole, cg_net_error(net));
    if (rc == CG_STATUS_OK) return net;
    cg_net_close(net);
    return NULL;
}

static int run3(cg_net *net)
{
    static int pred[IMAGES];
    cg_input in = {CG_INPUT_U8, 3, 1, 12, 12, pixels};
    cg_status rc = cg_net_run(net, &in, pred, NULL);
    CHECK(rc == CG_STATUS_OK, "run: %s", cg_net_error(net));
    return rc;
}

/* The record taken: one graph of the chosen path's kernels, nothing timed. */
static void record_taken(int nlk)
{
    for (int faster = 0; faster < 2; faster++) {
        if (write_record(nlk, faster)) continue;
        st->whole_cost = faster ? nlk + 5 : 1; /* the fake now says the opposite: the record decides */
        cg_net *net = open_tuned(0, 1);
        if (!net) continue;
        fake_cu_stats_t a = *st;
        if (!run3(net)) {
            CHECK(st->graph_launches - a.graph_launches == 1 && st->captures - a.captures == 1 &&
                      st->kernels_run - a.kernels_run == (faster ? 1 : nlk),
                  "the record's %s, nothing timed: %d graph launches, %d kernels run",
                  faster ? "whole kernel" : "per-layer kernels", st->graph_launches - a.graph_launches,
                  st->kernels_run - a.kernels_run);
            const cg_gpu_times *t = cg_net_gpu_times(net);
            char line[512], want[256];
            cg_gpu_whole_summary(t, line, sizeof line);
            snprintf(want, sizeof want,
                     "network: whole-network kernel %.1f us, per-layer kernels %.1f us: %s (tuning record)",
                     (double)(nlk + (faster ? -1 : 1)) * 1e3, (double)nlk * 1e3, faster ? "whole" : "per-layer");
            CHECK(t->whole_from == CG_WHOLE_FROM_RECORD && (t->whole == CG_RAN_WHOLE) == faster && !strcmp(line, want),
                  "the profile says the record chose: '%s'", line);
            CHECK(!strcmp(cg_whole_from_name(t->whole_from), "record") && !cg_net_whole_notice(net)[0] &&
                      !cg_net_log(net)[0],
                  "no notice: '%s'", cg_net_log(net));
        }
        cg_net_close(net);

        /* an explicit whole wins over the record: on where it chose the per-layer
         * kernels, off where it chose the whole kernel */
        net = open_tuned(faster ? 2 : 1, 0);
        if (!net) continue;
        a = *st;
        if (!run3(net)) {
            const cg_gpu_times *t = cg_net_gpu_times(net);
            CHECK(st->graph_launches - a.graph_launches == 1 && st->kernels_run - a.kernels_run == (faster ? nlk : 1) &&
                      (t->whole == CG_RAN_WHOLE) == !faster && t->whole_from == CG_WHOLE_FROM_FORCED &&
                      !strcmp(cg_whole_from_name(t->whole_from), "forced"),
                  "whole %s over the record: %d kernels run", faster ? "off" : "on", st->kernels_run - a.kernels_run);
        }
        cg_net_close(net);
    }
    st->whole_cost = 0;
}

/* Replace `from` by `to` in the record file (one occurrence). */
static int edit_record(const char *from, const char *to)
{
    char text[8192];
    FILE *f = fopen(rec_path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    char *at = strstr(text, from);
    if (!at) {
        CHECK(0, "'%s' in the record", from);
        return -1;
    }
    char out[8400];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    f = fopen(rec_path, "w");
    int ok = f && fputs(out, f) >= 0;
    if (f) ok = fclose(f) == 0 && ok;
    CHECK(ok, "rewrite %s", rec_path);
    return ok ? 0 : -1;
}

/* A record made for other kernels (its build id not these kernels'): one notice
 * naming the record, and both paths timed at first use; a record for another
 * bucket: nothing said, both timed. */
static void record_stale(int nlk)
{
    for (int other_bucket = 0; other_bucket < 2; other_bucket++) {
        if (write_record(nlk, 1)) return;
        if (other_bucket ? edit_record("bucket: 8", "bucket: 1") : edit_record(hk.m.hash, "00000000deadbeef")) return;
        st->whole_cost = nlk + 1;
        cg_net *net = open_tuned(0, 0);
        if (!net) return;
        const char *notice = cg_net_whole_notice(net);
        if (other_bucket) {
            CHECK(!notice[0] && !cg_net_log(net)[0], "another bucket's decision: nothing said ('%s')", notice);
        } else {
            char want[4600];
            snprintf(want, sizeof want,
                     "tuning record %s: whole-network kernel, bucket 8: the network's kernels changed since it was "
                     "tuned (build 00000000deadbeef, now %s): ignored, both paths timed at first use",
                     rec_path, hk.m.hash);
            CHECK(!strcmp(notice, want), "stale: '%s'", notice);
            CHECK(strstr(cg_net_log(net), want) && strchr(cg_net_log(net), '\n') == cg_net_log(net) + strlen(want),
                  "the notice in the log, one line: '%s'", cg_net_log(net));
        }
        fake_cu_stats_t a = *st;
        if (!run3(net)) {
            const cg_gpu_times *t = cg_net_gpu_times(net);
            CHECK(st->graph_launches - a.graph_launches == 2 * 31 + 1 && t->whole_from == CG_WHOLE_FROM_MEASURED &&
                      t->whole == CG_RAN_LAYERS,
                  "%s: both timed (%d graph launches), the faster taken", other_bucket ? "another bucket" : "stale",
                  st->graph_launches - a.graph_launches);
        }
        cg_net_close(net);
    }
    st->whole_cost = 0;
}

/* A malformed whole entry: the library refuses the open, FILE:LINE:COL, one line. */
static void record_malformed(int nlk)
{
    if (write_record(nlk, 1) || edit_record("choice: whole", "choice: wholly")) return;
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.batch = IMAGES, o.tuning = rec_path;
    cg_net *net = NULL;
    cg_status rc = cg_net_open(spec_path, &o, &net);
    char want[4300];
    snprintf(want, sizeof want, "%s:", rec_path);
    const char *msg = cg_net_error(net);
    CHECK(rc == CG_STATUS_INPUT && !strncmp(msg, want, strlen(want)) &&
              strstr(msg, "unknown choice 'wholly' in whole entry 1 (did you mean 'whole'?)") && !strchr(msg, '\n'),
          "malformed: %d '%s'", rc, msg);
    cg_net_close(net);
}

/* ---- a layer's choice for bucket 8 ---- */

/* Whether net's kernels include one of template tpl (its name starts with it). */
static int built_with(const cg_net *net, const char *tpl)
{
    const cg_host_costs *hc = cg_net_host_costs(net);
    for (int i = 0; hc && i < hc->nbuild; i++)
        if (!strncmp(hc->build[i].name, tpl, strlen(tpl))) return 1;
    return 0;
}

/* `convgen run` of wholenet on the fake at `batch` with the record at path, its
 * --profile output into out (n bytes) and --json into json; the exit status. */
static int run_cli(const char *path, long long batch, char *out, size_t n, const char *json)
{
    char cmd[13000];
    snprintf(cmd, sizeof cmd,
             "build/convgen run '%s' --random-input 1 --images 3 --batch %lld --tuning '%s' --profile --json '%s' "
             "2>&1",
             spec_path, batch, path, json);
    FILE *p = popen(cmd, "r");
    size_t got = p ? fread(out, 1, n - 1, p) : 0;
    out[got] = 0;
    return p ? pclose(p) : -1;
}

/* A record with c1's choice for bucket 8 (igemm, where the small-batch rules give it
 * direct): the network opened for 8 images runs it; for 64 and for the large batch,
 * not. run --profile and --json name c1 as the record's at bucket 8 alone. */
static void bucket_entry_taken(void)
{
    cg_tune_record *rec = calloc(1, sizeof *rec);
    if (!rec) return;
    snprintf(rec->version, sizeof rec->version, "%s", CG_VERSION);
    snprintf(rec->device, sizeof rec->device, "fake sm_90");
    rec->cc = 90, rec->sms = 132, rec->driver = 13000, rec->batch = IMAGES;
    cg_tune_entry *t = &rec->e[rec->n++];
    cg_target tg;
    int cc = 90;
    cg_aot_target(&cc, 1, &tg);
    tg.batch = 8;
    cg_candidates cs;
    cg_err e = {""};
    int rc = cg_gen_candidates_for(&hk.s, &tg, 0, "conv2d_igemm", 0, IMAGES, &cs, &e);
    CHECK(rc == 0 && cs.n > 0, "igemm's candidates for c1: %s", e.msg);
    if (rc || !cs.n) return free(rec);
    cg_tune_signature(&hk.s.layers[0], t->sig, sizeof t->sig);
    t->bucket = 8;
    snprintf(t->layer, sizeof t->layer, "c1");
    snprintf(t->winner.tpl, sizeof t->winner.tpl, "conv2d_igemm");
    snprintf(t->winner.params, sizeof t->winner.params, "%s", cs.c[0].params);
    t->winner.ms = 0.001;
    cg_candidates_free(&cs);
    cg_gen_kernel k;
    cg_kernel_launch kl;
    if (cg_gen_emit_one_for(&hk.s, &tg, 0, t->winner.tpl, t->winner.params, &k, &kl, &e)) {
        CHECK(0, "emit: %s", e.msg);
        return free(rec);
    }
    snprintf(t->tpl_hash, sizeof t->tpl_hash, "%s", k.tpl_hash);
    cg_tune_kernel_hash(k.source, t->kernel_hash);
    cg_gen_kernel_free(&k);
    char path[4300], json[4300];
    snprintf(path, sizeof path, "%s/bucket8.tuning.yaml", dir);
    snprintf(json, sizeof json, "%s/bucket.json", dir);
    CHECK(cg_tune_write(rec, path, &e) == 0, "record written: %s", e.msg);
    static const long long batches[] = {IMAGES, 64, 10000};
    for (int b = 0; b < 3; b++) {
        cg_net_options o;
        cg_net_options_init(&o);
        o.backend = CG_BACKEND_CUDA, o.batch = batches[b], o.tuning = path, o.streams = 1;
        cg_net *net = NULL;
        cg_status os = cg_net_open(spec_path, &o, &net);
        CHECK(os == CG_STATUS_OK && !cg_net_log(net)[0], "open at %lld: %s %s", batches[b], cg_net_error(net),
              cg_net_log(net));
        if (os == CG_STATUS_OK)
            CHECK(built_with(net, "conv2d_igemm") == (b == 0) && built_with(net, "conv2d_direct") == (b != 0),
                  "%lld images: c1 on %s", batches[b], b ? "direct, as untuned" : "the record's igemm");
        cg_net_close(net);
    }
    /* what run says of it, for the bucket served */
    static const char *const said[] = {"Tuning record: c1 (igemm) from the record for bucket 8\n",
                                       "Tuning record: no layer from a record for bucket 64\n",
                                       "Tuning record: no layer from a record\n"};
    char out[16384], want[700];
    for (int b = 0; b < 3; b++) {
        int rrc = run_cli(path, batches[b], out, sizeof out, json);
        CHECK(rrc == 0 && strstr(out, said[b]), "run --batch %lld --profile: '%s' in:\n%s", batches[b], said[b], out);
        /* c1's line of the JSON: its "tuned" at bucket 8 alone, no other layer's */
        cg_buf j;
        int have = cg_read_file(json, &j, &e) == 0;
        const char *c1 = have ? strstr(j.data, "{\"name\": \"c1\", \"op\": \"conv\"") : NULL;
        char line[1024] = "";
        if (c1) snprintf(line, sizeof line, "%.*s", (int)strcspn(c1, "\n"), c1);
        snprintf(want, sizeof want, ", \"tuned\": {\"strategy\": \"igemm\", \"params\": \"%s\"}}",
                 rec->e[0].winner.params);
        int tuned = strstr(line, want) != NULL;
        CHECK(c1 && tuned == (b == 0) && (b == 0 ? strstr(j.data, "\"tuned\"") == strstr(c1, "\"tuned\"")
                                                 : !strstr(j.data, "\"tuned\"")),
              "--json at %lld: c1 %s: %s", batches[b], b ? "not tuned" : "tuned, with the record's params", line);
        if (have) cg_buf_free(&j);
    }
    free(rec);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (fake_cu_reexec(argv, "whole_tune")) return cg_test_done("whole_tune");
    void *nvrtc = dlopen("libnvrtc.so", RTLD_NOW);
    if (!nvrtc) nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW);
    if (!nvrtc) {
        printf("skip: the whole-network kernel as a tuner candidate: no NVRTC\n");
        CHECK(1, "skipped");
        return cg_test_done("whole_tune");
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    fake_cu_stats_t *(*stats)(void) = NULL;
    if (cuda) *(void **)&stats = dlsym(cuda, "fake_cu_stats");
    CHECK(stats != NULL, "the fake libcuda.so.1 is not the one loaded (build/tests/fake)");
    if (!stats) return cg_test_done("whole_tune");
    st = stats();
    for (size_t i = 0; i < sizeof pixels; i++) pixels[i] = (unsigned char)(i * 53 + 7);
    snprintf(dir, sizeof dir, "%s", getenv("CG_FAKE_CUDA_CHILD"));
    snprintf(spec_path, sizeof spec_path, "%s/wholenet.yaml", dir);
    snprintf(rec_path, sizeof rec_path, "%s/wholenet.tuning.yaml", dir);
    FILE *f = fopen(spec_path, "w");
    CHECK(f && fputs(spec_text, f) >= 0 && fclose(f) == 0, "writing %s", spec_path);
    if (!hook_setup()) {
        /* the per-layer kernels a batch of pixels runs (of a first layer's twins, the
         * one reading them; no input kernel: planner.pixel_twin) */
        int nlk = 0;
        for (int k = 0; k < cg_manifest_layer_kernels(&hk.m); k++) nlk += cg_manifest_feeds(&hk.m.k[k], 0);
        tune_choice(nlk);
        record_taken(nlk);
        record_stale(nlk);
        record_malformed(nlk);
        bucket_entry_taken();
    }
    st->on_launch = NULL;
    cg_net_close(hk.cpu);
    for (int l = 0; l < CG_MAX_LAYERS; l++) free(hk.ref[l]);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return cg_test_done("whole_tune");
}
