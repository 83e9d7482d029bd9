/* test_tune.c — the parts of `convgen tune` that need no GPU: signatures,
 * the cost model and the search order it gives, the choice among measured
 * candidates (failed and wrong ones never win; within 1 % the earlier in the
 * order), the budget (cg_tune_search on a fake clock stops by its deadline
 * with the best it measured; the first layer measures beyond its default),
 * the interleaved re-timing under drift, repeatability (the same choice, or
 * one within the noise, under differently seeded noisy timings), a compile batch through NVRTC (what
 * does not generate or compile is dropped with its reason), the tuning record (round trip, malformed records refused with
 * FILE:LINE:COL), its application (spec > record > defaults; stale records
 * ignored), its entries per batch bucket (taken by the kernels generated for
 * their bucket alone; old records' entries their `batch:`'s; a run's bucket
 * merged into a record keeping the others'; what `info` says of them) and
 * `tune --list` counts against the templates' declared legal values, computed
 * here independently. */
#include "aot.h"
#include "check.h"
#include "cli.h"
#include "gen.h"
#include "lua_host.h"
#include "net_internal.h"
#include "tune.h"
#include "tune_entry.h"

#include <dirent.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A small network: every template has little to enumerate. fc2's 10 inputs
 * are no multiple of 4, so fc_vec refuses every configuration there. */
static const char spec_text[] =
    "network: tune-test\n"
    "input: {channels: 1, height: 28, width: 28, scale: 1.0, offset: 0.0}\n"
    "dataset: {name: fashion-mnist}\n"
    "seed: 1\n"
    "layers:\n"
    "  - {name: conv1, op: conv, M: 4, K: 3, bias: true, activation: relu, pool: max2}\n"
    "  - {name: fc1, op: fc, out: 10, bias: true, activation: relu}\n"
    "  - {name: fc2, op: fc, out: 6, bias: true, activation: none}\n";

static char dir[64], spec_path[96];

/* Write text to path; 0 on success. */
static int put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static void test_signature(const cg_spec *s)
{
    char sig[CG_TUNE_SIG];
    cg_tune_signature(&s->layers[0], sig, sizeof sig);
    CHECK(!strcmp(sig, "conv C=1 H=28 W=28 M=4 K=3 pool=2 act=relu bias=1 out=0"), "conv signature: %s", sig);
    cg_tune_signature(&s->layers[1], sig, sizeof sig);
    CHECK(!strcmp(sig, "fc C=4 H=13 W=13 M=0 K=0 pool=0 act=relu bias=1 out=10"), "fc signature: %s", sig);
    /* padding, stride and the other pools set a layer apart from the same layer without them */
    cg_layer l = s->layers[0];
    l.pad[0] = l.pad[1] = l.pad[2] = l.pad[3] = 1, l.stride = 2, l.pool = 3, l.pool_stride = 2;
    l.pool_op = CG_POOL_AVG;
    cg_tune_signature(&l, sig, sizeof sig);
    CHECK(!strcmp(sig, "conv C=1 H=28 W=28 M=4 K=3 pool=1 act=relu bias=1 out=0 pad=1,1,1,1 stride=2 pool=avg3/2"),
          "padded conv signature: %s", sig);
    l = s->layers[0];
    l.pool_op = CG_POOL_GLOBAL_AVG, l.pool = 1;
    cg_tune_signature(&l, sig, sizeof sig);
    CHECK(!strcmp(sig, "conv C=1 H=28 W=28 M=4 K=3 pool=1 act=relu bias=1 out=0 pool=global_avg"),
          "global average signature: %s", sig);
    CHECK(!strcmp(cg_tune_templates(&s->layers[0])[3], "conv2d_igemm"), "conv templates");
    CHECK(!strcmp(cg_tune_templates(&s->layers[1])[0], "fc_gemv") && !strcmp(cg_tune_templates(&s->layers[1])[1], "fc_mma") &&
              !strcmp(cg_tune_templates(&s->layers[1])[2], "fc_tc") && !strcmp(cg_tune_templates(&s->layers[1])[4], "fc_vec"),
          "fc templates");
    /* the lists are the embedded files of each family's folder, templates/conv2d/X.lua
     * as conv2d_X, in their (sorted) order, and the folder on disk holds just those */
    for (int li = 0; li < 2; li++) {
        const char *fam = li ? "fc_" : "conv2d_", *folder = li ? "templates/fc/" : "templates/conv2d/";
        const char *const *t = cg_tune_templates(&s->layers[li]);
        int n = 0, ok = 1;
        for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++) {
            if (strncmp(f->path, folder, strlen(folder))) continue;
            char want[128];
            const char *file = f->path + strlen(folder);
            snprintf(want, sizeof want, "%s%.*s", fam, (int)(strlen(file) - 4), file);
            ok = ok && t[n] && !strcmp(t[n], want);
            n += t[n] != NULL;
        }
        int on_disk = 0;
        DIR *d = opendir(folder);
        for (struct dirent *de; d && (de = readdir(d));)
            on_disk += strlen(de->d_name) > 4 && !strcmp(de->d_name + strlen(de->d_name) - 4, ".lua");
        if (d) closedir(d);
        CHECK(ok && !t[n] && n == (li ? 6 : 11) && on_disk == n, "%s templates: every file of %s (%d, %d on disk)",
              fam, folder, n, on_disk);
    }
    cg_layer sm = s->layers[0];
    sm.op = CG_OP_SOFTMAX;
    CHECK(!cg_tune_templates(&sm)[0], "softmax: no templates");
}

/* The choice: compile failures, spills and wrong results score +infinity. */
static void test_choice(void)
{
    cg_tune_cand c[6];
    memset(c, 0, sizeof c);
    c[0].status = CG_TUNE_COMPILE_FAILED, c[0].ms = 0.001; /* a time left over must not count */
    c[1].status = CG_TUNE_WRONG, c[1].ms = 0.002;
    c[2].status = CG_TUNE_OK, c[2].ms = 0.5;
    c[3].status = CG_TUNE_SPILLED, c[3].ms = 0.003;
    c[4].status = CG_TUNE_OK, c[4].ms = 0.3;
    c[5].status = CG_TUNE_PENDING;
    CHECK(isinf(cg_tune_score(&c[0])) && isinf(cg_tune_score(&c[1])) && isinf(cg_tune_score(&c[3])) &&
              isinf(cg_tune_score(&c[5])),
          "failed, wrong, spilled and unmeasured candidates score +inf");
    int idx[4];
    int n = cg_tune_best(c, 6, 4, idx);
    CHECK(n == 2 && idx[0] == 4 && idx[1] == 2, "best: the two OK ones, fastest first (n=%d, %d)", n, idx[0]);
    c[2].retime_ms = 0.2; /* the re-timing decides */
    n = cg_tune_best(c, 6, 1, idx);
    CHECK(n == 1 && idx[0] == 2, "a re-timed median replaces the first one (got %d)", idx[0]);
    c[2].retime_ms = 0.4; /* re-timed slower than c[4]'s first timing: still chosen, c[4] was not re-timed */
    n = cg_tune_best(c, 6, 2, idx);
    CHECK(n == 2 && idx[0] == 2 && idx[1] == 4, "the re-timed rank first (%d %d)", idx[0], idx[1]);
    c[4].retime_ms = 0.35;
    n = cg_tune_best(c, 6, 2, idx);
    CHECK(n == 2 && idx[0] == 4 && idx[1] == 2, "among the re-timed, the faster (%d %d)", idx[0], idx[1]);
    c[4].retime_ms = 0;
    c[2].status = CG_TUNE_WRONG; /* wrong on the re-check: out */
    n = cg_tune_best(c, 6, 3, idx);
    CHECK(n == 1 && idx[0] == 4, "a candidate found wrong later is out");
    c[4].status = CG_TUNE_RUN_FAILED;
    CHECK(cg_tune_best(c, 6, 3, idx) == 0, "nothing right: no winner");
    /* ties keep list order */
    cg_tune_cand t[3];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 3; i++) t[i].status = CG_TUNE_OK, t[i].ms = i == 0 ? 2.0 : 1.0;
    n = cg_tune_best(t, 3, 3, idx);
    CHECK(n == 3 && idx[0] == 1 && idx[1] == 2 && idx[2] == 0, "ties in list order");
    CHECK(!strcmp(cg_tune_status_name(CG_TUNE_WRONG), "wrong"), "status names");
}

static void test_search_order(void)
{
    CHECK(cg_tune_one_step("a=1 b=2 c=3", "a=1 b=4 c=3"), "one parameter apart");
    CHECK(!cg_tune_one_step("a=1 b=2 c=3", "a=1 b=2 c=3"), "the same is no step");
    CHECK(!cg_tune_one_step("a=1 b=2 c=3", "a=2 b=4 c=3"), "two apart is no step");
    CHECK(!cg_tune_one_step("a=1 b=2", "a=1 b=2 c=3"), "another parameter set is no step");
    CHECK(!cg_tune_one_step("a=1 b=2", "a=1 bb=3"), "another parameter name is no step");
    CHECK(cg_tune_one_step("a=16 b=2", "a=1 b=2"), "values compared whole");
}

/* A record for s's conv layer whose winner is the template's first candidate
 * other than the default (so applying it visibly changes the kernel). */
static int make_record(const cg_spec *s, const char *device, int cc, cg_tune_record *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->version, sizeof r->version, "%s", CG_VERSION);
    snprintf(r->device, sizeof r->device, "%s", device);
    r->cc = cc, r->sms = 132, r->driver = 13000, r->batch = 1000;
    snprintf(r->network, sizeof r->network, "%s", s->name);
    cg_err e = {{0}};
    cg_candidates cs;
    if (cg_gen_candidates(s, 0, "conv2d_direct", 0, &cs, &e) || cs.n < 3) return -1;
    cg_gen_kernel k;
    cg_kernel_launch kl;
    if (cg_gen_emit_one(s, 0, NULL, NULL, &k, &kl, &e)) return cg_candidates_free(&cs), -1;
    cg_gen_kernel_free(&k);
    int pick = strcmp(cs.c[1].params, kl.params) ? 1 : 2;
    cg_tune_entry *t = &r->e[r->n++];
    cg_tune_signature(&s->layers[0], t->sig, sizeof t->sig);
    snprintf(t->layer, sizeof t->layer, "conv1");
    t->measured = 40, t->candidates = cs.n;
    snprintf(t->winner.tpl, sizeof t->winner.tpl, "conv2d_direct");
    snprintf(t->winner.params, sizeof t->winner.params, "%s", cs.c[pick].params);
    t->winner.ms = 0.0123;
    t->default_ms = 0.0456;
    t->nrunners = 2;
    for (int j = 0; j < 2; j++) {
        snprintf(t->runner[j].tpl, sizeof t->runner[j].tpl, "conv2d_direct");
        snprintf(t->runner[j].params, sizeof t->runner[j].params, "%s", cs.c[pick + 1 + j].params);
        t->runner[j].ms = 0.02 + j * 0.001;
    }
    if (cg_gen_emit_one(s, 0, "conv2d_direct", t->winner.params, &k, &kl, &e)) return cg_candidates_free(&cs), -1;
    snprintf(t->tpl_hash, sizeof t->tpl_hash, "%s", k.tpl_hash);
    cg_tune_kernel_hash(k.source, t->kernel_hash);
    cg_gen_kernel_free(&k);
    cg_candidates_free(&cs);
    /* an fc entry that no layer of this spec matches */
    cg_tune_entry *u = &r->e[r->n++];
    snprintf(u->sig, sizeof u->sig, "fc C=999 H=1 W=1 M=0 K=0 pool=0 act=none bias=1 out=3");
    snprintf(u->winner.tpl, sizeof u->winner.tpl, "fc_vec");
    snprintf(u->winner.params, sizeof u->winner.params, "bm=32 bn=16 bk=8 tm=4 tn=4");
    snprintf(u->tpl_hash, sizeof u->tpl_hash, "0123456789abcdef");
    u->winner.ms = 1.5;
    return 0;
}

static void test_round_trip(const cg_spec *s)
{
    cg_tune_record *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    CHECK(make_record(s, "NVIDIA H100 80GB \"HBM3\"", 90, a) == 0, "record made");
    char path[128];
    snprintf(path, sizeof path, "%s/r.tuning.yaml", dir);
    cg_err e = {{0}};
    CHECK(cg_tune_write(a, path, &e) == 0, "write: %s", e.msg);
    CHECK(cg_tune_read(path, b, &e) == 0, "read back: %s", e.msg);
    CHECK(!strcmp(a->device, b->device) && a->cc == b->cc && a->sms == b->sms && a->driver == b->driver &&
              !strcmp(a->version, b->version) && a->batch == b->batch && !strcmp(a->network, b->network),
          "header fields survive (device '%s')", b->device);
    CHECK(b->n == 2, "two entries read (%d)", b->n);
    int same = 1;
    for (int i = 0; i < a->n && i < b->n; i++) {
        const cg_tune_entry *x = &a->e[i], *y = &b->e[i];
        same &= !strcmp(x->sig, y->sig) && !strcmp(x->layer, y->layer) && !strcmp(x->tpl_hash, y->tpl_hash) &&
                !strcmp(x->kernel_hash, y->kernel_hash) &&
                x->measured == y->measured && x->candidates == y->candidates &&
                !strcmp(x->winner.tpl, y->winner.tpl) && !strcmp(x->winner.params, y->winner.params) &&
                fabs(x->winner.ms - y->winner.ms) < 1e-9 && fabs(x->default_ms - y->default_ms) < 1e-9 &&
                x->nrunners == y->nrunners;
        for (int j = 0; j < x->nrunners && j < y->nrunners; j++)
            same &= !strcmp(x->runner[j].params, y->runner[j].params) && fabs(x->runner[j].ms - y->runner[j].ms) < 1e-9;
    }
    CHECK(same, "entries survive the round trip");
    cg_buf t1, t2;
    cg_buf_init(&t1), cg_buf_init(&t2);
    cg_tune_format(a, &t1, &e), cg_tune_format(b, &t2, &e);
    CHECK(t1.len == t2.len && !memcmp(t1.data, t2.data, t1.len), "written again: the same text");
    cg_buf_free(&t1), cg_buf_free(&t2);
    /* no whole-network decision: no `whole` key written */
    CHECK(a->nwhole == 0 && b->nwhole == 0, "no whole entries (%d)", b->nwhole);
    cg_buf_init(&t1);
    CHECK(cg_tune_format(a, &t1, &e) == 0 && !strstr(t1.data, "whole:"), "no whole key written");
    cg_buf_free(&t1);
    /* whole-network decisions: one a bucket, written after the layers and read back;
     * a time not taken (NaN) left out and read back as NaN; put replaces its bucket's */
    cg_whole_tuned w8 = {8, 1, "0123456789abcdef", 0.0160, 0.0272}, w1 = {1, 0, "fedcba9876543210", NAN, 0.0105};
    cg_tune_whole_put(a, &w8);
    cg_tune_whole_put(a, &w1);
    w8.whole_ms = 0.0150;
    cg_tune_whole_put(a, &w8);
    CHECK(a->nwhole == 2 && cg_tune_whole_find(a, 8)->whole_ms == 0.0150 && cg_tune_whole_find(a, 64) == NULL,
          "put: %d entries, bucket 8 replaced", a->nwhole);
    CHECK(cg_tune_write(a, path, &e) == 0 && cg_tune_read(path, b, &e) == 0, "whole entries: written and read: %s",
          e.msg);
    const cg_whole_tuned *r8 = cg_tune_whole_find(b, 8), *r1 = cg_tune_whole_find(b, 1);
    CHECK(b->nwhole == 2 && r8 && r1 && r8->whole == 1 && !strcmp(r8->kernels, "0123456789abcdef") &&
              fabs(r8->whole_ms - 0.0150) < 1e-9 && fabs(r8->layers_ms - 0.0272) < 1e-9 && r1->whole == 0 &&
              !strcmp(r1->kernels, "fedcba9876543210") && isnan(r1->whole_ms) && fabs(r1->layers_ms - 0.0105) < 1e-9,
          "whole entries survive the round trip (%d)", b->nwhole);
    cg_buf_init(&t1), cg_buf_init(&t2);
    cg_tune_format(a, &t1, &e), cg_tune_format(b, &t2, &e);
    CHECK(t1.len == t2.len && !memcmp(t1.data, t2.data, t1.len), "with whole entries, written again: the same text");
    CHECK(strstr(t1.data, "whole:\n  - bucket: 8\n    choice: whole\n    kernels: \"0123456789abcdef\"\n"
                          "    whole_ms: 0.015\n    layers_ms: 0.0272\n  - bucket: 1\n    choice: layers\n") != NULL,
          "the whole entries as written:\n%s", t1.data);
    cg_buf_free(&t1), cg_buf_free(&t2);
    /* no layer entry (every layer failed, or a whole-network decision alone): an
     * empty sequence, which reads back (a bare `layers:` was null, and refused) */
    int n = a->n;
    a->n = 0;
    cg_buf_init(&t1);
    CHECK(cg_tune_format(a, &t1, &e) == 0 && strstr(t1.data, "\nlayers: []\nwhole:\n"), "no layers: 'layers: []'");
    CHECK(cg_tune_parse("empty.yaml", t1.data, t1.len, b, &e) == 0 && b->n == 0 && b->nwhole == 2,
          "no layers: read back: %s", e.msg);
    cg_buf_free(&t1);
    a->n = n, a->nwhole = 0;
    /* `network` is optional: a record without one is written without one and
     * reads back (make fuzz found it written as an empty `network:` that did not) */
    a->network[0] = 0;
    cg_buf_init(&t1);
    CHECK(cg_tune_format(a, &t1, &e) == 0 && !strstr(t1.data, "network:"), "no network: none written");
    CHECK(cg_tune_parse("again.yaml", t1.data, t1.len, b, &e) == 0 && !b->network[0], "read back: %s", e.msg);
    cg_buf_free(&t1);
    free(a), free(b);
}

/* A malformed record is refused with FILE:LINE:COL and the expected words. */
static void bad(const char *text, const char *want)
{
    cg_tune_record *r = malloc(sizeof *r);
    cg_err e = {{0}};
    int rc = cg_tune_parse("rec.yaml", text, strlen(text), r, &e);
    CHECK(rc != 0, "refused: %s", want);
    CHECK_CONTAINS(e.msg, want);
    free(r);
}

static void test_malformed(void)
{
    /* make fuzz: params holding a newline made a notice two lines long */
    bad("convgen: 0.1.0\ndevice: d\ncc: 90\nsms: 1\ndriver: 1\nbatch: 1\nlayers:\n  - signature: s\n"
        "    template_hash: ab\n    template: fc_vec\n    params: \"bm=32\\ntm=4\"\n    ms: 1\n",
        "params in layers entry 1: a control character (byte 0x0a)");
    /* make fuzz: a hash with a quote in it was read, then written back unreadable */
    bad("convgen: 0.1.0\ndevice: d\ncc: 90\nsms: 1\ndriver: 1\nbatch: 1\nlayers:\n  - signature: s\n"
        "    template_hash: 'ab\"c'\n    template: fc_vec\n    params: \"bm=32\"\n    ms: 1\n",
        "rec.yaml:9:20: template_hash in layers entry 1: expected hexadecimal digits");
    bad("convgen: 0.1.0\ndevice: d\ncc: 90\nsms: 1\ndriver: 1\nbatch: 1\nlayers:\n  - signature: s\n"
        "    template_hash: ab\n    kernel_hash: xyz\n    template: fc_vec\n    params: \"bm=32\"\n    ms: 1\n",
        "rec.yaml:10:18: kernel_hash in layers entry 1: expected hexadecimal digits, got 'xyz'");
    const char *head = "convgen: 0.1.0\ndevice: \"X\"\ncc: 90\n";
    char t[1024];
    bad("", "rec.yaml:1:1: empty tuning record");
    bad("convgen: 0.1.0\ncc: 90\nlayers: []\n", "rec.yaml:1:1: missing required key 'device'");
    bad("convgen: 0.1.0\ndevice: X\ncc: ninety\nlayers: []\n", "rec.yaml:3:5:");
    snprintf(t, sizeof t, "%sdevcie: Y\nlayers: []\n", head);
    bad(t, "rec.yaml:4:1: unknown key 'devcie' at top level (did you mean 'device'?)");
    snprintf(t, sizeof t, "%slayers:\n  - signature: s\n    template: conv2d_direkt\n    template_hash: ab\n"
                          "    params: \"block=64\"\n    ms: 1\n", head);
    bad(t, "rec.yaml:6:15: unknown template 'conv2d_direkt' in layers entry 1 (did you mean 'conv2d_direct'?)");
    snprintf(t, sizeof t, "%slayers:\n  - signature: s\n    template: fc_vec\n    template_hash: ab\n"
                          "    params: \"bm=32\"\n    ms: -1\n", head);
    bad(t, "rec.yaml:9:9: 'ms' in layers entry 1 must not be negative");
    snprintf(t, sizeof t, "%slayers:\n  - signature: s\n    template: fc_vec\n    template_hash: ab\n"
                          "    params: \"bm=32\"\n    ms: 1\n  - signature: s\n    template: fc_vec\n"
                          "    template_hash: ab\n    params: \"bm=32\"\n    ms: 2\n", head);
    bad(t, "rec.yaml:10:16: signature of layers entry 2 repeats entry 1's");
    snprintf(t, sizeof t, "%slayers:\n  - signature: s\n    template: fc_vec\n    params: \"bm=32\"\n    ms: 1\n", head);
    bad(t, "rec.yaml:5:5: missing required key 'template_hash' in layers entry 1");
    snprintf(t, sizeof t, "%slayers: {a: 1}\n", head);
    bad(t, "rec.yaml:4:9: expected a sequence for 'layers'");
    bad("convgen: 0.1.0\ndevice: [\n", "rec.yaml:");
    /* the whole-network decisions: each key checked, at its line and column */
    const char *ok_layers = "convgen: 0.1.0\ndevice: \"X\"\ncc: 90\nlayers: []\n";
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 7\n    choice: whole\n    kernels: \"ab\"\n", ok_layers);
    bad(t, "rec.yaml:6:13: bucket in whole entry 1: 7 is no batch bucket (1, 8, 64, 256 or 1024)");
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 2048\n    choice: whole\n    kernels: \"ab\"\n", ok_layers);
    bad(t, "rec.yaml:6:13: ");
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 8\n    choice: hole\n    kernels: \"ab\"\n", ok_layers);
    bad(t, "rec.yaml:7:13: unknown choice 'hole' in whole entry 1");
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 8\n    choice: whole\n    kernels: \"xyz\"\n", ok_layers);
    bad(t, "rec.yaml:8:14: kernels in whole entry 1: expected hexadecimal digits, got 'xyz'");
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 8\n    choice: whole\n", ok_layers);
    bad(t, "rec.yaml:6:5: missing required key 'kernels' in whole entry 1");
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 8\n    choice: whole\n    kernels: ab\n    whole_ms: -2\n",
             ok_layers);
    bad(t, "rec.yaml:9:15: 'whole_ms' in whole entry 1 must not be negative");
    snprintf(t, sizeof t, "%swhole:\n  - bucket: 8\n    choice: whole\n    kernels: ab\n    layer_ms: 2\n",
             ok_layers);
    bad(t, "rec.yaml:9:5: unknown key 'layer_ms' in whole entry 1 (did you mean 'layers_ms'?)");
    snprintf(t, sizeof t,
             "%swhole:\n  - bucket: 8\n    choice: whole\n    kernels: ab\n  - bucket: 8\n    choice: layers\n"
             "    kernels: ab\n",
             ok_layers);
    bad(t, "rec.yaml:9:13: bucket of whole entry 2 repeats entry 1's");
    snprintf(t, sizeof t, "%swhole: {bucket: 8}\n", ok_layers);
    bad(t, "rec.yaml:5:8: expected a sequence for 'whole'");
    snprintf(t, sizeof t, "%swhole:\n  - 8\n", ok_layers);
    bad(t, "rec.yaml:6:5: ");
}

static void test_apply(void)
{
    cg_spec *s = malloc(sizeof *s), *orig = malloc(sizeof *orig);
    cg_tune_record *r = malloc(sizeof *r);
    cg_err e = {{0}};
    CHECK(cg_spec_load(spec_path, orig, &e) == 0, "spec: %s", e.msg);
    CHECK(make_record(orig, "Dev A", 90, r) == 0, "record made");
    const char *want = r->e[0].winner.params;
    int from[CG_MAX_LAYERS];
    char notice[1024];
    cg_tune_device dev = {"Dev A", 90, NULL};

    /* the record beats the defaults */
    *s = *orig;
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0, "applied: %s", e.msg);
    CHECK(from[0] == 1 && from[1] == 0 && from[2] == 0, "conv1 from the record, fc layers not (%d %d)", from[0],
          from[1]);
    CHECK(!strcmp(s->layers[0].strategy, "direct"), "strategy from the record: %s", s->layers[0].strategy);
    cg_gen_kernel k;
    cg_kernel_launch kl;
    CHECK(cg_gen_emit_one(s, 0, NULL, NULL, &k, &kl, &e) == 0, "emit: %s", e.msg);
    CHECK(!strcmp(kl.params, want), "the kernel takes the record's params: %s vs %s", kl.params, want);
    cg_gen_kernel_free(&k);
    CHECK(cg_gen_emit_one(orig, 0, NULL, NULL, &k, &kl, &e) == 0, "emit: %s", e.msg);
    CHECK(strcmp(kl.params, want) != 0, "untuned, the defaults differ from the record: %s", kl.params);
    cg_gen_kernel_free(&k);
    CHECK(notice[0] == 0, "no notice: %s", notice);

    /* no device check (build) */
    *s = *orig;
    cg_tune_device any = {NULL, 0, NULL};
    CHECK(cg_tune_apply(s, r, &any, from, notice, sizeof notice, &e) == 0 && from[0] == 1, "applied without a device");

    /* params written in the spec beat the record */
    *s = *orig;
    s->layers[0].nparams = 1;
    snprintf(s->layers[0].params[0].key, CG_NAME_MAX, "block");
    s->layers[0].params[0].value = 64;
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && from[0] == 0, "spec params win");
    CHECK(s->layers[0].nparams == 1 && s->layers[0].params[0].value == 64 && !strcmp(s->layers[0].strategy, "auto"),
          "the spec's layer is untouched");

    /* a strategy written in the spec naming another template wins too */
    *s = *orig;
    snprintf(s->layers[0].strategy, CG_NAME_MAX, "igemm");
    s->layers[0].strategy_pos.line = s->layers[0].pos.line + 1;
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && from[0] == 0, "spec strategy wins");
    CHECK(!strcmp(s->layers[0].strategy, "igemm") && s->layers[0].nparams == 0, "igemm kept");
    /* ... while the same template written takes the record's params */
    snprintf(s->layers[0].strategy, CG_NAME_MAX, "direct");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && from[0] == 1,
          "spec strategy = record's template: the record's params");

    /* stale: another device, another cc, another convgen */
    *s = *orig;
    cg_tune_device other = {"Dev B", 90, NULL}, other_cc = {"Dev A", 80, NULL};
    CHECK(cg_tune_apply(s, r, &other, from, notice, sizeof notice, &e) == 1 && from[0] == 0, "other device ignored");
    CHECK(strstr(notice, "made for Dev A (sm_90), this device is Dev B (sm_90): ignored") && !strchr(notice, '\n'),
          "one-line notice: %s", notice);
    CHECK(s->layers[0].nparams == 0 && !strcmp(s->layers[0].strategy, "auto"), "stale: spec unchanged");
    CHECK(cg_tune_apply(s, r, &other_cc, from, notice, sizeof notice, &e) == 1, "other cc ignored");
    snprintf(r->version, sizeof r->version, "0.0.1");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 1 && strstr(notice, "convgen 0.0.1"),
          "other convgen version ignored: %s", notice);
    snprintf(r->version, sizeof r->version, "%s", CG_VERSION);

    /* a template edited since tuning that still generates the same kernel: applied */
    snprintf(r->e[0].tpl_hash, sizeof r->e[0].tpl_hash, "ffffffffffffffff");
    CHECK(r->e[0].kernel_hash[0] && cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && from[0] == 1 &&
              notice[0] == 0,
          "edited template, same kernel: applied (%s)", notice);
    CHECK(cg_gen_emit_one(s, 0, NULL, NULL, &k, &kl, &e) == 0 && !strcmp(kl.params, want), "its params: %s",
          kl.params);
    cg_gen_kernel_free(&k);
    /* a template changed since tuning, its kernel too (or no kernel hash): that layer is skipped */
    *s = *orig;
    snprintf(r->e[0].kernel_hash, sizeof r->e[0].kernel_hash, "fffffffffffffffe");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && from[0] == 0, "changed template skipped");
    CHECK(strstr(notice, "layer conv1: template conv2d_direct changed since it was tuned") != NULL, "notice: %s", notice);
    CHECK(s->layers[0].nparams == 0, "skipped: layer unchanged");

    /* the whole-network decisions go into the spec as recorded (the CUDA backend
     * checks their build id against its kernels), none from a stale record */
    cg_whole_tuned w8 = {8, 1, "0123456789abcdef", 0.016, 0.027};
    cg_tune_whole_put(r, &w8);
    *s = *orig;
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nwhole_tuned == 1 &&
              s->whole_tuned[0].bucket == 8 && s->whole_tuned[0].whole == 1 &&
              !strcmp(s->whole_tuned[0].kernels, "0123456789abcdef"),
          "whole decisions applied: %d", s->nwhole_tuned);
    *s = *orig;
    CHECK(cg_tune_apply(s, r, &other, from, notice, sizeof notice, &e) == 1 && s->nwhole_tuned == 0,
          "stale record: no whole decision (%d)", s->nwhole_tuned);
    free(s), free(orig), free(r);
}

/* ---- per-bucket entries: `tune --batch N` records a layer's choice for N's bucket ---- */

/* The target run generates for on Dev A (sm_90) at bucket (0: the large batch). */
static void bucket_target(int bucket, cg_target *tg)
{
    int cc = 90;
    cg_aot_target(&cc, 1, tg);
    tg->batch = bucket;
}

/* s's kernels generated for bucket on Dev A. */
static int generate_at(const cg_spec *s, int bucket, cg_gen_output *o)
{
    cg_target tg;
    bucket_target(bucket, &tg);
    cg_err e = {{0}};
    int rc = cg_generate_for(s, "test", &tg, o, &e);
    CHECK(rc == 0, "generate at bucket %d: %s", bucket, e.msg);
    return rc;
}

/* The kernel o runs layer `layer` with (a conv's or fc's own, or the tail's), NULL if none. */
static const cg_gen_kernel *kernel_of(const cg_gen_output *o, const char *layer)
{
    for (int i = 0; i < o->nkernels; i++)
        if (!strcmp(o->k[i].layer, layer)) return &o->k[i];
    return NULL;
}

/* A record of Dev A (sm_90) with no entry yet, made by `tune --batch batch`. */
static void empty_record(cg_tune_record *r, long long batch)
{
    memset(r, 0, sizeof *r);
    snprintf(r->version, sizeof r->version, "%s", CG_VERSION);
    snprintf(r->device, sizeof r->device, "Dev A");
    r->cc = 90, r->sms = 132, r->driver = 13000, r->batch = batch;
    snprintf(r->network, sizeof r->network, "tune-test");
}

/* An entry for bucket 8 changes the kernels generated for bucket 8 and no others:
 * conv1 takes the record's igemm where the small-batch rules give it direct, fc2
 * its own fc_tiled kernel where the network's tail would run it; the kernels for
 * bucket 64 and the large batch stay those of the untuned spec, byte for byte. */
static void test_bucket_apply(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_tune_record *r = malloc(sizeof *r);
    cg_gen_output *plain = calloc(3, sizeof *plain), *tuned = calloc(3, sizeof *tuned);
    static const int buckets[] = {8, 64, 0};
    cg_err e = {{0}};
    if (!s || !r || !plain || !tuned || cg_spec_load(spec_path, s, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s), free(r), free(plain), free(tuned);
        return;
    }
    for (int b = 0; b < 3; b++)
        if (generate_at(s, buckets[b], &plain[b])) return;
    const cg_gen_kernel *c8 = kernel_of(&plain[0], "conv1"), *f8 = kernel_of(&plain[0], "fc2");
    CHECK(c8 && strcmp(c8->tpl, "conv2d_igemm") && f8 && !strcmp(f8->tpl, "tail"),
          "untuned at bucket 8: conv1 not on igemm (%s), fc2 in the tail (%s)", c8 ? c8->tpl : "-",
          f8 ? f8->tpl : "-");
    empty_record(r, 8);
    int rc = tune_entry_for(s, 0, 8, "conv2d_igemm", 0, &r->e[r->n++]);
    rc = rc || tune_entry_for(s, 2, 8, "fc_tiled", 0, &r->e[r->n++]);
    if (rc) return;
    cg_tune_device dev = {"Dev A", 90, NULL};
    int from[CG_MAX_LAYERS];
    char notice[2048];
    rc = cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e);
    CHECK(rc == 0 && !notice[0] && s->nbucket_tuned == 2 && !from[0] && !from[2], "applied: %d entries kept ('%s')",
          s->nbucket_tuned, notice);
    const cg_bucket_tuned *bt = cg_spec_bucket_tuned(s, 0, 8);
    CHECK(bt && !strcmp(bt->tpl, "conv2d_igemm") && !strcmp(bt->params, r->e[0].winner.params) &&
              !cg_spec_bucket_tuned(s, 0, 64) && !cg_spec_bucket_tuned(s, 0, 0) && !cg_spec_bucket_tuned(s, 1, 8),
          "conv1's choice kept for bucket 8 alone");
    CHECK(!strcmp(s->layers[0].strategy, "auto") && s->layers[0].nparams == 0,
          "the layer's own strategy and params untouched (%s)", s->layers[0].strategy);
    for (int b = 0; b < 3; b++)
        if (generate_at(s, buckets[b], &tuned[b])) return;
    const cg_gen_kernel *t8 = kernel_of(&tuned[0], "conv1"), *g8 = kernel_of(&tuned[0], "fc2");
    char kh[17] = "";
    if (t8) cg_tune_kernel_hash(t8->source, kh);
    CHECK(t8 && !strcmp(t8->tpl, "conv2d_igemm") && !strcmp(kh, r->e[0].kernel_hash),
          "bucket 8: conv1's kernel the record's (%s, code %s, tuned %s)", t8 ? t8->tpl : "-", kh,
          r->e[0].kernel_hash);
    CHECK(t8 && strstr(t8->source, "tuned: the tuning record's choice for 8 images"),
          "its header says where the choice came from");
    kh[0] = 0;
    if (g8) cg_tune_kernel_hash(g8->source, kh);
    CHECK(g8 && !strcmp(g8->tpl, "fc_tiled") && !strcmp(kh, r->e[1].kernel_hash),
          "bucket 8: fc2 on the record's fc_tiled, not in the tail (%s)", g8 ? g8->tpl : "-");
    CHECK(strcmp(tuned[0].hash, plain[0].hash) != 0, "bucket 8: another build");
    for (int b = 1; b < 3; b++) {
        int same = tuned[b].nkernels == plain[b].nkernels && !strcmp(tuned[b].hash, plain[b].hash);
        for (int k = 0; same && k < tuned[b].nkernels; k++)
            same = !strcmp(tuned[b].k[k].source, plain[b].k[k].source);
        CHECK(same, "bucket %d: the untuned kernels, byte for byte (build %s, untuned %s)", buckets[b], tuned[b].hash,
              plain[b].hash);
    }
    /* a large-batch entry is checked on the large batch's kernel, also where the caller
     * generates for a bucket (build --batch 8), whose small-batch rules give conv1 direct */
    cg_spec *t = malloc(sizeof *t);
    empty_record(r, 10000);
    cg_target tg8;
    bucket_target(8, &tg8);
    cg_tune_device build8 = {NULL, 0, &tg8};
    if (t && cg_spec_load(spec_path, t, &e) == 0 && tune_entry_for(t, 0, 0, "conv2d_igemm", 0, &r->e[r->n++]) == 0)
        CHECK(cg_tune_apply(t, r, &build8, from, notice, sizeof notice, &e) == 0 && from[0] && !notice[0] &&
                  !strcmp(t->layers[0].strategy, "igemm") && t->nbucket_tuned == 0,
              "a large-batch entry applied for build --batch 8 ('%s')", notice);
    free(t);
    for (int b = 0; b < 3; b++) cg_gen_free(&plain[b]), cg_gen_free(&tuned[b]);
    free(plain), free(tuned), free(s), free(r);
}

/* The choices that stand for a bucket follow the rules of the large batch's: params
 * written in the spec, or a strategy naming another template, keep the spec's; a
 * choice the template refuses now, or a template whose kernel changed since, is
 * skipped with one line naming the layer and the bucket, and the bucket's kernels are
 * what they were. A choice the template refuses only in the network (it was checked
 * alone) leaves the layer to the small-batch rules, the header saying why. */
static void test_bucket_refused(void)
{
    cg_spec *s = malloc(sizeof *s), *orig = malloc(sizeof *orig);
    cg_tune_record *r = malloc(sizeof *r);
    cg_gen_output *o = calloc(2, sizeof *o);
    cg_err e = {{0}};
    if (!s || !orig || !r || !o || cg_spec_load(spec_path, orig, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s), free(orig), free(r), free(o);
        return;
    }
    empty_record(r, 8);
    if (tune_entry_for(orig, 0, 8, "conv2d_igemm", 0, &r->e[r->n++])) return;
    cg_tune_device dev = {"Dev A", 90, NULL};
    int from[CG_MAX_LAYERS];
    char notice[2048];
    /* params written in the spec, or another template named: the spec's */
    *s = *orig;
    s->layers[0].nparams = 1;
    snprintf(s->layers[0].params[0].key, CG_NAME_MAX, "block");
    s->layers[0].params[0].value = 64;
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nbucket_tuned == 0,
          "spec params win at bucket 8 too");
    *s = *orig;
    snprintf(s->layers[0].strategy, CG_NAME_MAX, "direct");
    s->layers[0].strategy_pos.line = s->layers[0].pos.line + 1;
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nbucket_tuned == 0,
          "a spec strategy naming another template wins at bucket 8 too");
    snprintf(s->layers[0].strategy, CG_NAME_MAX, "igemm");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nbucket_tuned == 1,
          "the spec's strategy the record's template: its choice for bucket 8 (%d)", s->nbucket_tuned);
    /* a choice the template refuses now: one line, the bucket left as it was */
    *s = *orig;
    if (generate_at(s, 8, &o[0])) return;
    cg_tune_entry good = r->e[0];
    snprintf(r->e[0].winner.params, sizeof r->e[0].winner.params, "bm=3 bn=5");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nbucket_tuned == 0,
          "refused: not kept (%d)", s->nbucket_tuned);
    CHECK(!strncmp(notice, "layer conv1 at 8 images: the record's choice is refused now (", 61) &&
              strstr(notice, "): skipped\n") && strchr(notice, '\n') == notice + strlen(notice) - 1,
          "one line naming the layer and the bucket: '%s'", notice);
    if (generate_at(s, 8, &o[1])) return;
    CHECK(!strcmp(o[0].hash, o[1].hash), "refused: bucket 8's kernels as untuned");
    cg_gen_free(&o[1]);
    /* unreadable params, and a template whose kernel changed since */
    snprintf(r->e[0].winner.params, sizeof r->e[0].winner.params, "bm=x");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nbucket_tuned == 0 &&
              !strcmp(notice, "layer conv1 at 8 images: unreadable params 'bm=x' in the record: skipped\n"),
          "unreadable: '%s'", notice);
    r->e[0] = good;
    snprintf(r->e[0].tpl_hash, sizeof r->e[0].tpl_hash, "ffffffffffffffff");
    snprintf(r->e[0].kernel_hash, sizeof r->e[0].kernel_hash, "fffffffffffffffe");
    CHECK(cg_tune_apply(s, r, &dev, from, notice, sizeof notice, &e) == 0 && s->nbucket_tuned == 0 &&
              !strcmp(notice, "layer conv1 at 8 images: template conv2d_igemm changed since it was tuned: skipped\n"),
          "changed: '%s'", notice);
    r->e[0] = good;
    /* refused only in the network: the rules choose, and the header says why */
    *s = *orig;
    s->nbucket_tuned = 1;
    s->bucket_tuned[0] = (cg_bucket_tuned){0, 8, "conv2d_igemm", "bm=3"};
    if (generate_at(s, 8, &o[1])) return;
    const cg_gen_kernel *was = kernel_of(&o[0], "conv1"), *now = kernel_of(&o[1], "conv1");
    CHECK(was && now && !strcmp(was->tpl, now->tpl) &&
              strstr(now->source, "the tuning record's choice for 8 images (conv2d_igemm) is refused here: "),
          "refused in the network: the rules' %s, said in the header", now ? now->tpl : "-");
    cg_gen_free(&o[0]), cg_gen_free(&o[1]);
    free(s), free(orig), free(r), free(o);
}

/* The record keeps a bucket per entry: written `bucket: 8` or `bucket: large`, read
 * back; an entry without one (a record written before they had one) is the
 * bucket of the record's `batch:` (the large batch without one); one shape may have
 * an entry per bucket, but not two for one bucket; a bucket other than 1, 8, 64,
 * 256, 1024 or large is refused with its position. */
static void test_bucket_record(const cg_spec *s)
{
    cg_tune_record *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    cg_err e = {{0}};
    CHECK(make_record(s, "Dev A", 90, a) == 0, "record made");
    a->e[1] = a->e[0];
    a->e[1].bucket = 8;
    a->n = 2;
    cg_buf t1;
    cg_buf_init(&t1);
    CHECK(cg_tune_format(a, &t1, &e) == 0 && cg_tune_parse("b.yaml", t1.data, t1.len, b, &e) == 0, "round trip: %s",
          e.msg);
    CHECK(b->n == 2 && b->e[0].bucket == 0 && b->e[1].bucket == 8 && !strcmp(b->e[0].sig, b->e[1].sig),
          "one shape, two buckets, read back (%d %d)", b->e[0].bucket, b->e[1].bucket);
    CHECK(t1.data && strstr(t1.data, "  - signature: \"conv C=1 H=28 W=28 M=4 K=3 pool=2 act=relu bias=1 out=0\"\n"
                                     "    bucket: large\n") &&
              strstr(t1.data, "\n    bucket: 8\n"),
          "written: 'bucket: large', 'bucket: 8'");
    CHECK(cg_tune_entry_find(b, a->e[0].sig, 8) == &b->e[1] && cg_tune_entry_find(b, a->e[0].sig, 0) == &b->e[0] &&
              !cg_tune_entry_find(b, a->e[0].sig, 64),
          "found by signature and bucket");
    cg_buf_free(&t1);
    /* old records: the entries are their `batch:`'s */
    static const struct {
        const char *batch;
        int bucket;
    } old[] = {{"batch: 8\n", 8}, {"batch: 1000\n", 1024}, {"batch: 10000\n", 0}, {"", 0}, {"batch: 1\n", 1}};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        char t[1024];
        snprintf(t, sizeof t,
                 "convgen: %s\ndevice: \"Dev A\"\ncc: 90\n%slayers:\n  - signature: \"%s\"\n    template_hash: ab\n"
                 "    template: conv2d_direct\n    params: \"%s\"\n    ms: 1\n",
                 CG_VERSION, old[i].batch, a->e[0].sig, a->e[0].winner.params);
        CHECK(cg_tune_parse("old.yaml", t, strlen(t), b, &e) == 0 && b->n == 1 && b->e[0].bucket == old[i].bucket,
              "old record, '%.*s': bucket %d (%s)", (int)strcspn(old[i].batch, "\n"), old[i].batch, b->e[0].bucket,
              e.msg);
    }
    /* bad buckets, at their line and column */
    const char *head = "convgen: 0.1.0\ndevice: \"X\"\ncc: 90\nbatch: 8\nlayers:\n  - signature: s\n";
    const char *tail = "    template_hash: ab\n    template: fc_vec\n    params: \"bm=32\"\n    ms: 1\n";
    char t[1024];
    snprintf(t, sizeof t, "%s    bucket: 16\n%s", head, tail);
    bad(t, "rec.yaml:7:13: bucket in layers entry 1: '16' is no batch bucket (1, 8, 64, 256, 1024 or large)");
    snprintf(t, sizeof t, "%s    bucket: 10000\n%s", head, tail);
    bad(t, "rec.yaml:7:13: bucket in layers entry 1: '10000' is no batch bucket");
    snprintf(t, sizeof t, "%s    bucket: huge\n%s", head, tail);
    bad(t, "rec.yaml:7:13: bucket in layers entry 1: 'huge' is no batch bucket");
    snprintf(t, sizeof t, "%s    bucket: [8]\n%s", head, tail);
    bad(t, "rec.yaml:7:13: expected a batch bucket for 'bucket' in layers entry 1");
    snprintf(t, sizeof t, "%s    buckett: 8\n%s", head, tail);
    bad(t, "rec.yaml:7:5: unknown key 'buckett' in layers entry 1 (did you mean 'bucket'?)");
    /* one shape twice for one bucket (the second without `bucket`: the record's 8) */
    snprintf(t, sizeof t, "%s    bucket: 8\n%s  - signature: s\n%s", head, tail, tail);
    bad(t, "rec.yaml:12:16: signature of layers entry 2 repeats entry 1's, both for bucket 8");
    snprintf(t, sizeof t, "%s    bucket: large\n%s  - signature: s\n%s", head, tail, tail);
    CHECK(cg_tune_parse("rec.yaml", t, strlen(t), b, &e) == 0 && b->n == 2 && b->e[0].bucket == 0 &&
              b->e[1].bucket == 8,
          "one shape for the large batch and for 8: %s", e.msg);
    free(a), free(b);
}

/* `tune --batch 8` on a record with entries for other buckets keeps them and
 * replaces bucket 8's; with --layers it keeps bucket 8's for other shapes too; the
 * whole-network decisions of other buckets stay, bucket 8's is measured again. */
static void test_bucket_merge(const cg_spec *s)
{
    cg_tune_record *old = malloc(sizeof *old), *rec = malloc(sizeof *rec);
    if (!old || !rec) return;
    empty_record(old, 10000);
    int rc = tune_entry_for(s, 0, 0, "conv2d_direct", 1, &old->e[old->n++]);
    rc = rc || tune_entry_for(s, 0, 8, "conv2d_direct", 2, &old->e[old->n++]);
    rc = rc || tune_entry_for(s, 1, 8, "fc_tiled", 0, &old->e[old->n++]);
    rc = rc || tune_entry_for(s, 0, 64, "conv2d_igemm", 0, &old->e[old->n++]);
    if (rc) return;
    cg_whole_tuned w1 = {1, 1, "ab", 0.01, 0.02}, w8 = {8, 0, "cd", 0.03, 0.01};
    cg_tune_whole_put(old, &w1);
    cg_tune_whole_put(old, &w8);
    for (int layers_only = 0; layers_only < 2; layers_only++) {
        empty_record(rec, 8);
        if (tune_entry_for(s, 0, 8, "conv2d_igemm", 1, &rec->e[rec->n++])) return;
        cg_tune_entry mine = rec->e[0];
        cg_tune_merge(rec, old, 8, layers_only);
        const cg_tune_entry *c0 = cg_tune_entry_find(rec, old->e[0].sig, 0), *c8 = cg_tune_entry_find(rec, old->e[0].sig, 8),
                            *c64 = cg_tune_entry_find(rec, old->e[0].sig, 64),
                            *f8 = cg_tune_entry_find(rec, old->e[2].sig, 8);
        CHECK(c0 && !strcmp(c0->winner.params, old->e[0].winner.params) && c64 &&
                  !strcmp(c64->winner.tpl, "conv2d_igemm"),
              "%s: the large batch's and bucket 64's entries kept", layers_only ? "--layers" : "all layers");
        CHECK(c8 && !strcmp(c8->winner.tpl, mine.winner.tpl) && !strcmp(c8->winner.params, mine.winner.params),
              "bucket 8's replaced by this run's (%s)", c8 ? c8->winner.tpl : "-");
        CHECK(layers_only ? f8 != NULL : f8 == NULL, "bucket 8's entry of another shape: %s",
              layers_only ? "kept with --layers" : "dropped, every layer tuned again");
        CHECK(rec->n == (layers_only ? 4 : 3), "%d entries", rec->n);
        CHECK(rec->nwhole == 1 && cg_tune_whole_find(rec, 1) && !cg_tune_whole_find(rec, 8),
              "whole: bucket 1's kept, bucket 8's left to be measured again (%d)", rec->nwhole);
    }
    /* a large-batch run keeps every small bucket's */
    empty_record(rec, 10000);
    if (tune_entry_for(s, 0, 0, "conv2d_igemm", 0, &rec->e[rec->n++])) return;
    cg_tune_merge(rec, old, 0, 0);
    CHECK(rec->n == 4 && !strcmp(cg_tune_entry_find(rec, old->e[0].sig, 0)->winner.tpl, "conv2d_igemm") &&
              rec->nwhole == 2,
          "large batch: its entry replaced, the buckets' kept (%d, %d whole)", rec->n, rec->nwhole);
    free(old), free(rec);
}

/* `convgen info` generates the large batch's kernels: a record with entries for
 * bucket 8 alone marks no layer as tuned there, and lists the bucket's choices
 * (text and JSON). */
static void test_bucket_info(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_tune_record *r = malloc(sizeof *r);
    cg_err e = {{0}};
    if (!s || !r || cg_spec_load(spec_path, s, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s), free(r);
        return;
    }
    empty_record(r, 8);
    char path[160], cmd[512], out[16384];
    snprintf(path, sizeof path, "%s/info.tuning.yaml", dir);
    if (tune_entry_for(s, 0, 8, "conv2d_igemm", 0, &r->e[r->n++]) || cg_tune_write(r, path, &e)) {
        CHECK(0, "record: %s", e.msg);
        free(s), free(r);
        return;
    }
    for (int json = 0; json < 2; json++) {
        snprintf(cmd, sizeof cmd, "build/convgen info %s --tuning %s%s 2>&1", spec_path, path, json ? " --json" : "");
        FILE *p = popen(cmd, "r");
        size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[got] = 0;
        int st = p ? pclose(p) : -1;
        char want[700];
        if (json)
            snprintf(want, sizeof want,
                     "\"tuned\": false, \"tuned_buckets\": {\"8\": {\"strategy\": \"igemm\", \"params\": \"%s\"}}, ",
                     r->e[0].winner.params);
        else snprintf(want, sizeof want, "\n  tuning record, for kernels generated for bucket 8 (--batch): conv1 (igemm)\n");
        CHECK(st == 0 && strstr(out, want) && !strstr(out, json ? "\"tuned\": true" : "(from the tuning record)"),
              "info%s: '%s' in:\n%s", json ? " --json" : "", want, out);
    }
    free(s), free(r);
}

/* cg_tune_use: the default record beside the spec, --tuning, --no-tuning, malformed. */
static void test_use(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_tune_record *r = malloc(sizeof *r);
    cg_err e = {{0}};
    int from[CG_MAX_LAYERS];
    cg_tune_device dev = {"Dev A", 90, NULL};
    char def[160], bad_path[160];
    cg_tune_default_path(spec_path, def, sizeof def);
    CHECK(strstr(def, "/net.tuning.yaml") != NULL, "default path: %s", def);
    CHECK(cg_spec_load(spec_path, s, &e) == 0, "spec: %s", e.msg);
    CHECK(cg_tune_use(s, NULL, 0, &dev, from, &e) == 0 && from[0] == 0, "no record beside the spec: nothing");
    CHECK(make_record(s, "Dev A", 90, r) == 0 && cg_tune_write(r, def, &e) == 0, "record written: %s", e.msg);
    CHECK(cg_tune_use(s, NULL, 1, &dev, from, &e) == 0 && from[0] == 0, "--no-tuning ignores it");
    CHECK(cg_tune_use(s, NULL, 0, &dev, from, &e) == 0 && from[0] == 1, "the record beside the spec is used");
    CHECK(!strcmp(s->whole_tuned_from, def), "the record's path kept for the whole decisions' notices: '%s'",
          s->whole_tuned_from);
    snprintf(bad_path, sizeof bad_path, "%s/bad.yaml", dir);
    put(bad_path, "convgen: 0.1.0\ndevice: X\ncc: 90\nlayers: 5\n");
    CHECK(cg_spec_load(spec_path, s, &e) == 0, "spec again");
    CHECK(cg_tune_use(s, bad_path, 0, &dev, from, &e) == CG_STATUS_INPUT, "malformed --tuning: CG_STATUS_INPUT");
    CHECK_CONTAINS(e.msg, "bad.yaml:4:9: expected a sequence for 'layers'");
    snprintf(bad_path, sizeof bad_path, "%s/absent.yaml", dir);
    CHECK(cg_tune_use(s, bad_path, 0, &dev, from, &e) == CG_STATUS_INPUT, "missing --tuning file: CG_STATUS_INPUT");
    /* the command's one mapping from the library's statuses to exit codes */
    CHECK(cg_exit_of(CG_STATUS_OK) == CG_EXIT_OK && cg_exit_of(CG_STATUS_USAGE) == CG_EXIT_USAGE &&
              cg_exit_of(CG_STATUS_INPUT) == CG_EXIT_INPUT && cg_exit_of(CG_STATUS_DEVICE) == CG_EXIT_DEVICE &&
              cg_exit_of(CG_STATUS_IO) == CG_EXIT_IO && cg_exit_of(CG_STATUS_UNSUPPORTED) == CG_EXIT_IO &&
              cg_exit_of(99) == CG_EXIT_IO,
          "cg_exit_of");
    remove(def);
    free(s), free(r);
}

/* One compile batch through NVRTC (no GPU): candidates that generate and
 * compile keep their image; one the template refuses is dropped with its reason. */
static void test_compile_batch(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {{0}};
    CHECK(cg_spec_load(spec_path, s, &e) == 0, "spec: %s", e.msg);
    cg_nvrtc *nv;
    if (cg_nvrtc_open(&nv, &e)) {
        printf("note: no NVRTC (%s): compile batch not tested\n", e.msg);
        free(s);
        return;
    }
    cg_jit_opts jo = {0, 0, 90, 13000, NULL, 2, 0};
    CHECK(cg_nvrtc_pick_arch(nv, 90, &jo.arch, &jo.as_ptx) == 0, "NVRTC compiles for sm_90");
    cg_candidates cs;
    CHECK(cg_gen_candidates(s, 1, "fc_tiled", 0, &cs, &e) == 0 && cs.n >= 2, "fc1 candidates: %s", e.msg);
    cg_tune_cand c[4];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 4; i++) snprintf(c[i].tpl, sizeof c[i].tpl, "fc_tiled");
    snprintf(c[0].params, sizeof c[0].params, "%s", cs.c[0].params);
    snprintf(c[1].params, sizeof c[1].params, "bm=3 bn=8 bk=8 tm=1 tn=2"); /* not a legal value */
    snprintf(c[2].params, sizeof c[2].params, "%s", cs.c[cs.n - 1].params);
    snprintf(c[3].params, sizeof c[3].params, "zz=1");                      /* no such parameter */
    cg_candidates_free(&cs);
    int idx[4] = {0, 1, 2, 3};
    cg_tune_batch b;
    CHECK(cg_tune_compile(s, NULL, 1, c, idx, 4, nv, &jo, &b, &e) == 0, "compile batch: %s", e.msg);
    for (int j = 0; j < 4; j += 2)
        CHECK(c[j].status == CG_TUNE_PENDING && b.slot[j] >= 0 && b.jr.k[b.slot[j]].image.len > 0 &&
                  c[j].compile_ms > 0,
              "candidate %d compiled (%s: %s)", j, cg_tune_status_name(c[j].status), c[j].reason);
    for (int j = 1; j < 4; j += 2) {
        CHECK(c[j].status == CG_TUNE_COMPILE_FAILED && b.slot[j] < 0, "candidate %d dropped (%s)", j,
              cg_tune_status_name(c[j].status));
        CHECK(strncmp(c[j].reason, "generate: ", 10) == 0, "with its reason: %s", c[j].reason);
        CHECK(isinf(cg_tune_score(&c[j])), "and it can never win");
    }
    CHECK(strstr(c[1].reason, "bm") != NULL, "the reason names the parameter: %s", c[1].reason);
    cg_tune_batch_free(&b);
    /* the re-timing compiles candidates already OK: they keep their status and get an image */
    c[0].status = CG_TUNE_OK, c[0].ms = 0.5;
    CHECK(cg_tune_compile(s, NULL, 1, c, idx, 1, nv, &jo, &b, &e) == 0, "re-timing batch: %s", e.msg);
    CHECK(c[0].status == CG_TUNE_OK && b.slot[0] >= 0 && b.jr.k[b.slot[0]].image.len > 0,
          "a re-timed candidate keeps its status and image (%s, slot %d)", cg_tune_status_name(c[0].status), b.slot[0]);
    cg_tune_batch_free(&b);
    /* one that generates but NVRTC refuses (here: an architecture it does not know) is
     * dropped with the compiler's reason, and the search goes on */
    c[2].status = CG_TUNE_PENDING;
    cg_jit_opts bad_arch = jo;
    bad_arch.arch = 12;
    idx[0] = 2;
    CHECK(cg_tune_compile(s, NULL, 1, c, idx, 1, nv, &bad_arch, &b, &e) == 0, "a failing compile is no error: %s", e.msg);
    CHECK(c[2].status == CG_TUNE_COMPILE_FAILED && b.slot[0] < 0 && c[2].reason[0] &&
              strncmp(c[2].reason, "generate: ", 10) != 0 && !strchr(c[2].reason, '\n'),
          "NVRTC's failure dropped with its one-line reason (%s: %s)", cg_tune_status_name(c[2].status), c[2].reason);
    cg_tune_batch_free(&b);
    cg_nvrtc_close(nv);
    free(s);
}

/* ---- the budget: cg_tune_search on a fake clock ---- */

/* A fake GPU: compiling a batch costs `round` seconds per compile round (a
 * candidate compiled before costs `hit` instead, when hit > 0: the cache),
 * checking and timing a candidate `run` seconds (`slow` for every 50th), a
 * re-timing pass `retime_x` times that. Candidate i's true time is
 * truth(i) (fake_ms unless set); every 17th does not compile, every 19th is
 * wrong. With a seed, each timing is off by up to +-noise (relative, uniform),
 * each run's cost by up to +-jitter, and the device drifts: a timing at clock
 * t reads (1 + drift*t) times slower. */
typedef struct {
    double clock, round, run, slow, retime_x, hit;
    int threads;
    int batch[64], m;     /* the batch compiled last */
    int compiles, runs, retimes;
    double max_cost;      /* the dearest single step taken */
    double (*truth)(int i);
    unsigned long long seed;
    double noise, jitter, drift;
    unsigned char seen[4096]; /* compiled before */
    int rlog[256], nrlog;     /* the re-timing passes' candidates, in call order */
    int fresh_on, fresh_off, fresh_bad; /* batches with L->fresh set, clear, and set wrongly */
} fake;

/* Candidate i's true time in ms: a fixed landscape from 1 to about 11. */
static double fake_ms(int i)
{
    return 1.0 + (double)((i * 7919) % 1009) / 100.0;
}

static double true_ms(const fake *f, int i)
{
    return f->truth ? f->truth(i) : fake_ms(i);
}

/* Uniform in [-1, 1] from the fake's seeded generator (xorshift64*). */
static double fake_uniform(fake *f)
{
    f->seed ^= f->seed >> 12, f->seed ^= f->seed << 25, f->seed ^= f->seed >> 27;
    return (double)((f->seed * 2685821657736338717ULL) >> 11) / (double)(1ULL << 52) - 1.0;
}

/* cg_tune_ops.now: the fake clock. */
static double fake_now(void *ctx)
{
    return ((fake *)ctx)->clock;
}

/* Moves the fake clock on by s, noting the dearest step. */
static void fake_spend(fake *f, double s)
{
    f->clock += s;
    if (s > f->max_cost) f->max_cost = s;
}

/* cg_tune_ops.compile: rounds of `threads` new kernels, cache hits for the others; every 17th fails. */
static int fake_compile(void *ctx, cg_tune_layer *L, const int *idx, int m, cg_err *e)
{
    fake *f = ctx;
    (void)e;
    f->compiles++;
    int fresh = 0, news = 0;
    for (int j = 0; j < m; j++) fresh += f->hit <= 0 || !f->seen[idx[j]];
    for (int j = 0; j < m; j++) news += !f->seen[idx[j]];
    /* the search asks for a real compile exactly when a candidate is new to it */
    f->fresh_bad += L->fresh != (news > 0);
    if (L->fresh) f->fresh_on++;
    else f->fresh_off++;
    fake_spend(f, (fresh + f->threads - 1) / f->threads * f->round + (m - fresh) * f->hit);
    f->m = m;
    for (int j = 0; j < m; j++) {
        f->batch[j] = idx[j];
        f->seen[idx[j]] = 1;
        if (idx[j] % 17 == 3) {
            L->c[idx[j]].status = CG_TUNE_COMPILE_FAILED;
            snprintf(L->c[idx[j]].reason, sizeof L->c[idx[j]].reason, "compile: fake error");
        }
    }
    return 0;
}

/* What a timing of candidate i reads now: its true time, with the noise and drift. */
static double fake_timing(fake *f, int i)
{
    double t = true_ms(f, i) * (1 + f->drift * f->clock);
    return f->seed ? t * (1 + f->noise * fake_uniform(f)) : t;
}

/* cg_tune_ops.run: a check and timing, or a re-timing pass; every 19th is wrong. */
static int fake_run(void *ctx, cg_tune_layer *L, int j, int i, int retime, cg_err *e)
{
    fake *f = ctx;
    (void)e;
    if (j < 0 || j >= f->m || f->batch[j] != i) return -1; /* the scheduler must pass the batch's own position */
    cg_tune_cand *x = &L->c[i];
    if (x->status == CG_TUNE_COMPILE_FAILED) return 0;
    double cost = i % 50 == 7 ? f->slow : f->run;
    if (f->seed) cost *= 1 + f->jitter * fake_uniform(f);
    fake_spend(f, retime ? cost * f->retime_x : cost);
    if (retime) {
        f->retimes++;
        if (f->nrlog < 256) f->rlog[f->nrlog++] = i;
        x->retime_ms = fake_timing(f, i);
        return 1;
    }
    f->runs++;
    if (i % 19 == 5) {
        x->status = CG_TUNE_WRONG;
        snprintf(x->reason, sizeof x->reason, "disagrees with the CPU reference");
    } else x->status = CG_TUNE_OK, x->ms = f->seed ? fake_timing(f, i) : true_ms(f, i) * 1.01;
    return 1;
}

/* cg_tune_ops.release: the batch is gone. */
static void fake_release(void *ctx)
{
    ((fake *)ctx)->m = 0;
}

/* A layer of n candidates, all pending, the default at index def. */
static cg_tune_layer fake_layer(int n, int def)
{
    cg_tune_layer L;
    memset(&L, 0, sizeof L);
    L.c = calloc((size_t)n, sizeof *L.c);
    L.n = n, L.def = def;
    for (int i = 0; i < n; i++) {
        snprintf(L.c[i].tpl, sizeof L.c[i].tpl, "conv2d_direct");
        snprintf(L.c[i].params, sizeof L.c[i].params, "a=%d b=%d c=%d", i / 100, i / 10 % 10, i % 10);
    }
    return L;
}

/* Search one fake layer from the fake's clock to deadline; returns its winner (-1: none). */
static int fake_search(fake *f, cg_tune_layer *L, cg_tune_costs *cost, double deadline, int *rc)
{
    cg_tune_plan p = {24, 3, 3, f->threads, 64, 1.0};
    cg_tune_ops ops = {f, fake_now, fake_compile, fake_run, fake_release, NULL};
    cg_err e = {{0}};
    *rc = cg_tune_search(L, &p, &ops, cost, deadline, &e);
    int w;
    return cg_tune_best(L->c, L->n, 1, &w) == 1 ? w : -1;
}

/* The index of the fastest candidate among those measured OK (by true time). */
static int best_measured(const fake *f, const cg_tune_layer *L)
{
    int b = -1;
    for (int i = 0; i < L->n; i++)
        if (L->c[i].status == CG_TUNE_OK && (b < 0 || true_ms(f, i) < true_ms(f, b))) b = i;
    return b;
}

/* The budget as a ceiling, and the best measured winning within it. */
static void test_budget(void)
{
    int rc;
    /* a large space on a tight budget: stops in time, with the best it measured */
    fake f = {.round = 1.0, .run = 0.1, .slow = 0.1, .retime_x = 4, .threads = 4};
    cg_tune_costs cost;
    memset(&cost, 0, sizeof cost);
    cg_tune_layer L = fake_layer(3000, 1234);
    int w = fake_search(&f, &L, &cost, 20.0, &rc);
    CHECK(rc == 0, "search ran");
    CHECK(f.clock <= 20.0, "the budget is a ceiling: ended at %.2f s of 20", f.clock);
    CHECK(L.cut == 1 && L.measured < L.n && L.measured >= 24, "cut by the budget after the sample (%d of %d)",
          L.measured, L.n);
    int pend = 0;
    for (int i = 0; i < L.n; i++) pend += L.c[i].status == CG_TUNE_PENDING;
    CHECK(pend == L.n - L.measured, "measured counts every outcome known (%d pending, %d measured)", pend, L.measured);
    CHECK(L.c[L.def].status == CG_TUNE_OK, "the default is measured first");
    int bm = best_measured(&f, &L);
    CHECK(w >= 0 && fake_ms(w) <= fake_ms(bm) * (1 + CG_TUNE_MARGIN),
          "the winner is the best measured, or within the margin of it (%d: %.3f vs %d: %.3f)", w, fake_ms(w), bm,
          fake_ms(bm));
    CHECK(L.retimed >= 1 && L.c[w].retime_ms > 0, "the winner was re-timed (%d re-timed)", L.retimed);
    CHECK(cost.rounds > 0 && cost.runs > 0 && fabs(cost.run_s - 0.1) < 1e-9, "costs learnt: run %.3f", cost.run_s);
    CHECK(cost.hits > 0 && cost.passes > 0 && fabs(cost.pass_ratio - 4) < 1e-9, "re-timing costs learnt: pass %.3f",
          cost.pass_ratio);
    free(L.c);

    /* the next layer, planned with what the first taught: a share smaller than one
     * compile round measures nothing and costs nothing */
    double before = f.clock;
    L = fake_layer(500, 0);
    w = fake_search(&f, &L, &cost, f.clock + 0.5, &rc);
    CHECK(rc == 0 && w == -1 && L.measured == 0 && L.cut == 1 && f.clock == before,
          "no room for a compile round: nothing measured (%d, %.2f s spent)", L.measured, f.clock - before);
    free(L.c);
    /* a deadline already past: the same */
    L = fake_layer(500, 0);
    w = fake_search(&f, &L, &cost, f.clock - 1, &rc);
    CHECK(rc == 0 && L.measured == 0 && f.clock == before, "a spent budget measures nothing");
    free(L.c);

    /* a generous budget: everything measured, the true best wins (or one within the
     * margin earlier in the order), compile failures and wrong results never do */
    fake g = {.round = 1.0, .run = 0.1, .slow = 0.1, .retime_x = 4, .threads = 4};
    memset(&cost, 0, sizeof cost);
    L = fake_layer(300, 10);
    w = fake_search(&g, &L, &cost, 1e6, &rc);
    int truth = -1, failed = 0, wrong = 0;
    for (int i = 0; i < L.n; i++)
        if (i % 17 != 3 && i % 19 != 5 && (truth < 0 || fake_ms(i) < fake_ms(truth))) truth = i;
    for (int i = 0; i < L.n; i++) failed += L.c[i].status == CG_TUNE_COMPILE_FAILED, wrong += L.c[i].status == CG_TUNE_WRONG;
    CHECK(rc == 0 && L.measured == L.n && !L.cut, "all %d measured (%d), not cut", L.n, L.measured);
    CHECK(w == truth || (w < truth && fake_ms(w) <= fake_ms(truth) * (1 + CG_TUNE_MARGIN)),
          "the true best wins (%d, want %d)", w, truth);
    CHECK(failed > 0 && wrong > 0 && w % 17 != 3 && w % 19 != 5, "failed (%d) and wrong (%d) are skipped", failed,
          wrong);
    CHECK(!strcmp(L.c[3].reason, "compile: fake error") && L.c[5].status == CG_TUNE_WRONG, "each with its reason");
    free(L.c);

    /* dear outliers (every 50th candidate takes 3 s to time): the overrun is at most
     * one step, and only because an estimate was beaten */
    fake h = {.round = 1.0, .run = 0.1, .slow = 3.0, .retime_x = 4, .threads = 8};
    memset(&cost, 0, sizeof cost);
    L = fake_layer(2000, 7);
    fake_search(&h, &L, &cost, 30.0, &rc);
    CHECK(rc == 0 && h.clock <= 30.0 + h.max_cost, "at most one step past the deadline: %.2f s (step %.2f)", h.clock,
          h.max_cost);
    CHECK(L.measured < L.n, "cut (%d of %d)", L.measured, L.n);
    free(L.c);

    /* budgets from 2 to 60 s: never past the deadline with steady costs, and more time
       never measures fewer candidates */
    int last = -1, mono = 1, within = 1;
    for (double b = 2; b <= 60; b += 2) {
        fake k = {.round = 0.7, .run = 0.05, .slow = 0.05, .retime_x = 3, .threads = 8};
        memset(&cost, 0, sizeof cost);
        L = fake_layer(2400, 100);
        fake_search(&k, &L, &cost, b, &rc);
        if (k.clock > b + (b < 1.5 ? 1.0 : 0)) within = 0, printf("budget %.0f: ended at %.2f\n", b, k.clock);
        if (L.measured < last) mono = 0, printf("budget %.0f: %d measured, %d before\n", b, L.measured, last);
        last = L.measured;
        free(L.c);
    }
    CHECK(within, "every budget held");
    CHECK(mono, "a larger budget measures at least as many");
}

/* ---- repeatability ---- */

/* A landscape the model orders roughly: later candidates are slower on the
 * whole (0.2 over the list), with a pseudo-random 0..0.3 on top, so that the
 * fastest lie early but spread (the best at 5, 1.008; then 30 and 75 at 1.018,
 * 93 at 1.019, 114 at 1.027, ...): many within a few per cent of each other. */
static int landscape_n = 1000;
static double landscape(int i)
{
    unsigned h = (unsigned)(i + 17) * 2654435761u;
    h ^= h >> 15;
    return 1.0 + 0.2 * i / landscape_n + 0.3 * (double)(h % 1000) / 1000.0;
}

/* The run's first layer is not starved: with dear cold compiles (3 s a round,
 * NVRTC starting up) and a 12 s share, the calibration learns that compiling
 * the candidates to re-time again costs little (cache hits), so the reserve
 * stays small and the layer measures many candidates, not just its default. */
static void test_first_layer(void)
{
    int rc;
    fake f = {.round = 3.0, .run = 0.15, .slow = 0.15, .retime_x = 1, .hit = 0.02, .threads = 16};
    cg_tune_costs cost;
    memset(&cost, 0, sizeof cost);
    cg_tune_layer L = fake_layer(800, 0);
    int w = fake_search(&f, &L, &cost, 12.0, &rc);
    CHECK(rc == 0 && f.clock <= 12.0, "first layer within its share: %.2f s", f.clock);
    CHECK(L.measured >= 24, "the first layer measured %d candidates (more than its default and a round)", L.measured);
    CHECK(w >= 0 && L.retimed >= 2, "and re-timed its best (%d re-timed)", L.retimed);
    CHECK(cost.hits >= 1 && cost.hit_s < 0.5 && cost.passes >= 1, "calibration learnt the cache hit (%.3f s) and a pass",
          cost.hit_s);
    CHECK(f.fresh_bad == 0 && f.fresh_on > 0 && f.fresh_off > 0,
          "first compiles refresh the cache, re-timing's read it (%d on, %d off, %d wrong)", f.fresh_on, f.fresh_off,
          f.fresh_bad);
    free(L.c);
}

/* Three candidates: 0 is 3 % slower than 1, 2 is far slower. */
static double three(int i)
{
    static const double t[3] = {1.03, 1.00, 1.50};
    return t[i];
}

/* The re-timing interleaves: every pass times each of the top few once, in a
 * rotated order, and the medians of the passes decide. On a device drifting
 * 2 % a second, candidate 0's first timing, taken before 1's, reads faster;
 * re-timed in alternation, the truly faster 1 wins. */
static void test_interleaved(void)
{
    int rc;
    fake f = {.round = 1.0, .run = 1.0, .slow = 1.0, .retime_x = 1, .hit = 0.1, .threads = 4, .truth = three,
              .seed = 7, .drift = 0.02};
    cg_tune_costs cost;
    memset(&cost, 0, sizeof cost);
    cg_tune_layer L = fake_layer(3, 0);
    int w = fake_search(&f, &L, &cost, 1e6, &rc);
    CHECK(rc == 0 && L.c[0].ms < L.c[1].ms, "the first timings mislead: %.3f before %.3f", L.c[0].ms, L.c[1].ms);
    CHECK(w == 1, "the re-timing picks the truly faster one (%d: %.3f vs %.3f)", w, L.c[1].retime_ms,
          L.c[0].retime_ms);
    /* the calibration's pass (candidate 0), then three passes over 0 1 2, each rotated */
    static const int want[] = {0, 0, 1, 2, 1, 2, 0, 2, 0, 1};
    int same = f.nrlog == 10;
    for (int j = 0; same && j < 10; j++) same = f.rlog[j] == want[j];
    CHECK(same, "interleaved passes A B C, B C A, C A B (%d calls: %d %d %d %d ...)", f.nrlog, f.rlog[1], f.rlog[2],
          f.rlog[3], f.rlog[4]);
    CHECK(L.retimed == 3, "all three re-timed (%d)", L.retimed);
    free(L.c);
}

/* The choice among near-equal candidates: within CG_TUNE_MARGIN, the one
 * earlier in the model's order (the lower index) wins, whichever measured faster. */
static void test_tie_break(void)
{
    cg_tune_cand c[4];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 4; i++) c[i].status = CG_TUNE_OK, c[i].ms = 2.0 + i;
    c[1].retime_ms = 1.005, c[2].retime_ms = 1.000, c[3].retime_ms = 1.3;
    int idx[4];
    int n = cg_tune_best(c, 4, 4, idx);
    CHECK(n == 4 && idx[0] == 1 && idx[1] == 2 && idx[2] == 3 && idx[3] == 0,
          "0.5 %% apart: the earlier one wins, the rest by time (%d %d %d %d)", idx[0], idx[1], idx[2], idx[3]);
    c[1].retime_ms = 1.02;
    n = cg_tune_best(c, 4, 2, idx);
    CHECK(n == 2 && idx[0] == 2 && idx[1] == 1, "2 %% apart: the faster wins (%d %d)", idx[0], idx[1]);
    c[1].retime_ms = 1.0099; /* just inside */
    CHECK(cg_tune_best(c, 4, 1, idx) == 1 && idx[0] == 1, "just inside the margin: the earlier (%d)", idx[0]);
    /* the margin is taken within a kind: a first timing never ties with a re-timing */
    c[0].ms = 0.999;
    CHECK(cg_tune_best(c, 4, 1, idx) == 1 && idx[0] == 1, "an earlier first timing does not displace the re-timed");
    /* among first timings alike */
    cg_tune_cand d[3];
    memset(d, 0, sizeof d);
    for (int i = 0; i < 3; i++) d[i].status = CG_TUNE_OK;
    d[0].ms = 5.03, d[1].ms = 5.0, d[2].ms = 4.99;
    CHECK(cg_tune_best(d, 3, 1, idx) == 1 && idx[0] == 0, "first timings within 1 %%: the earliest (%d)", idx[0]);
    d[0].ms = 5.2;
    CHECK(cg_tune_best(d, 3, 1, idx) == 1 && idx[0] == 1, "the earliest within 1 %% of the fastest (%d)", idx[0]);
}

/* Eight runs of one layer under different seeds, every candidate's cost off by
 * up to 30 % (so the budget cuts at different places) and every timing by up
 * to +-noise: the true times of the kernels chosen, worst over best. */
static double spread_of_choices(double noise, int *w)
{
    int rc;
    double lo = 1e9, hi = 0;
    for (int r = 0; r < 8; r++) {
        fake f = {.round = 0.6, .run = 0.05, .slow = 0.05, .retime_x = 1, .hit = 0.01, .threads = 16,
                  .truth = landscape, .seed = 1000 + (unsigned)r * 7919, .noise = noise, .jitter = 0.3};
        cg_tune_costs cost;
        memset(&cost, 0, sizeof cost);
        cg_tune_layer L = fake_layer(landscape_n, 500);
        w[r] = fake_search(&f, &L, &cost, 12.0, &rc);
        CHECK(rc == 0 && w[r] >= 0 && f.clock <= 12.0 + f.max_cost, "run %d: winner %d, %.2f s", r, w[r], f.clock);
        CHECK(L.measured < L.n && L.retimed >= 3, "run %d: a budgeted search (%d of %d measured, %d re-timed)", r,
              L.measured, L.n, L.retimed);
        double t = w[r] >= 0 ? landscape(w[r]) : 1e9;
        lo = t < lo ? t : lo, hi = t > hi ? t : hi;
        free(L.c);
    }
    printf("repeatability, timings +-%.0f %%: winners %d %d %d %d %d %d %d %d, true times within %.2f %%\n",
           100 * noise, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], 100 * (hi / lo - 1));
    return hi / lo - 1;
}

/* Two runs, two noisy timings: the same layer searched under different seeds
 * chooses the same kernel, or kernels within the noise of each other; the
 * same seed chooses exactly alike. */
static void test_repeatable(void)
{
    int rc, w[8];
    /* a GPU's timing noise: +-1 % (the median of 10 launches varies less) */
    double d = spread_of_choices(0.01, w);
    CHECK(d <= 0.005, "timings +-1 %%: eight runs choose within 0.5 %% of each other (%.2f %%)", 100 * d);
    /* twice that, and still within the 3 % */
    d = spread_of_choices(0.02, w);
    CHECK(d <= 0.015, "timings +-2 %%: eight runs choose within 1.5 %% of each other (%.2f %%)", 100 * d);
    /* the same measurements: the same candidates measured and the same choice */
    int wa, wb;
    cg_tune_layer A = fake_layer(landscape_n, 500), B = fake_layer(landscape_n, 500);
    fake fa = {.round = 0.6, .run = 0.05, .slow = 0.05, .retime_x = 1, .hit = 0.01, .threads = 16,
               .truth = landscape, .seed = 42, .noise = 0.02, .jitter = 0.3};
    fake fb = fa;
    cg_tune_costs ca, cb;
    memset(&ca, 0, sizeof ca), memset(&cb, 0, sizeof cb);
    wa = fake_search(&fa, &A, &ca, 12.0, &rc);
    wb = fake_search(&fb, &B, &cb, 12.0, &rc);
    int alike = wa == wb && A.measured == B.measured;
    for (int i = 0; alike && i < A.n; i++) alike = A.c[i].status == B.c[i].status && A.c[i].ms == B.c[i].ms;
    CHECK(alike, "the same measurements, the same search (%d %d)", wa, wb);
    free(A.c), free(B.c);
}

/* ---- the cost model and the order ---- */

/* cg_tune_order on hand-made candidates: each template's cheapest first, the
 * rest by cost, ties in template then list order; without a model, the
 * templates' lists in turn. */
static void test_order(void)
{
    static const struct {
        const char *tpl;
        double cost;
    } in[] = {{"conv2d_direct", 5}, {"conv2d_direct", 2}, {"conv2d_igemm", 3},  {"conv2d_direct", 9},
              {"conv2d_igemm", 1},  {"conv2d_igemm", 2},  {"conv2d_direct", 2}, {"conv2d_igemm", 8}};
    enum { N = sizeof in / sizeof *in };
    cg_tune_cand c[N];
    memset(c, 0, sizeof c);
    for (int i = 0; i < N; i++) {
        snprintf(c[i].tpl, sizeof c[i].tpl, "%s", in[i].tpl);
        snprintf(c[i].params, sizeof c[i].params, "i=%d", i);
        c[i].cost = in[i].cost;
    }
    CHECK(cg_tune_order(c, N) == 0, "ordered");
    /* direct's cheapest (1: cost 2, before 6: cost 2, by list order), igemm's (4), then by cost */
    static const int want[N] = {1, 4, 6, 5, 2, 0, 7, 3};
    char got[64] = "";
    int ok = 1;
    for (int i = 0; i < N; i++) {
        int at = atoi(c[i].params + 2);
        ok &= at == want[i];
        snprintf(got + strlen(got), sizeof got - strlen(got), "%d ", at);
    }
    CHECK(ok, "model order: %s(want 1 4 6 5 2 0 7 3)", got);
    /* no model for one of them: each list alone, then in turn */
    c[0].cost = -1;
    for (int i = 0; i < N; i++) snprintf(c[i].params, sizeof c[i].params, "i=%d", i), c[i].cost = i == 0 ? -1 : 1;
    for (int i = 0; i < N; i++) snprintf(c[i].tpl, sizeof c[i].tpl, "%s", in[i].tpl);
    CHECK(cg_tune_order(c, N) == 0, "ordered");
    static const int turn[N] = {0, 2, 1, 4, 3, 5, 6, 7};
    ok = 1, got[0] = 0;
    for (int i = 0; i < N; i++) {
        int at = atoi(c[i].params + 2);
        ok &= at == turn[i];
        snprintf(got + strlen(got), sizeof got - strlen(got), "%d ", at);
    }
    CHECK(ok, "without a model, the templates in turn: %s(want 0 2 1 4 3 5 6 7)", got);
}

/* The cost of one configuration of layer li of s on target tg for `batch`
 * images (0: the model's default) (-2: refused or error). */
static double cost_at(const cg_spec *s, const cg_target *tg, int li, const char *tpl, const char *params,
                      long long batch)
{
    cg_candidates cs;
    cg_err e = {{0}};
    if (cg_gen_candidates_for(s, tg, li, tpl, 0, batch, &cs, &e)) return printf("note: %s\n", e.msg), -2;
    double c = -2;
    for (int j = 0; j < cs.n; j++)
        if (!strcmp(cs.c[j].params, params)) c = cs.c[j].cost;
    cg_candidates_free(&cs);
    return c;
}

/* The same for the model's default batch (10000 images). */
static double cost_of(const cg_spec *s, const cg_target *tg, int li, const char *tpl, const char *params)
{
    return cost_at(s, tg, li, tpl, params, 0);
}

/* The templates' cost model on hand-made layers: a value worked out by hand,
 * and the orderings it exists for (register reuse, tile waste, immediate
 * weights), on an H100-like target. */
static void test_model(void)
{
    static const char text[] =
        "network: model-test\n"
        "input: {channels: 1, height: 14, width: 14, scale: 1.0, offset: 0.0}\n"
        "dataset: {name: fashion-mnist, resize: 14}\n"
        "seed: 1\n"
        "layers:\n"
        "  - {name: c0, op: conv, M: 32, K: 3}\n"
        "  - {name: c1, op: conv, M: 64, K: 3}\n"
        "  - {name: f1, op: fc, out: 10}\n";
    char path[128];
    snprintf(path, sizeof path, "%s/model.yaml", dir);
    CHECK(put(path, text) == 0, "model spec written");
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {{0}};
    CHECK(cg_spec_load(path, s, &e) == 0, "model spec: %s", e.msg);
    cg_target tg = {90, 227 * 1024, 65536, 65536, 132, 1024, 1, 0};
    /* igemm bm=64 bn=128 bk=9 tm=8 tn=8 stages=2 on C=32 12x12 -> 64 maps of 10x10:
     * 128 threads, about 92 registers (+16), 13,824 B shared: 4 blocks an SM (registers);
     * 7,813 blocks, 60 on the busiest of 132 SMs; 8x8 tiles read 16 words for 64 FMAs
     * (reuse 1), 16 warps resident (busy 1): 60 * 64*128*288 / 128 = 1,105,920 clocks,
     * more than 15 rounds of 32 slices' round trips (384,000) */
    double c = cost_of(s, &tg, 1, "conv2d_igemm", "bm=64 bn=128 bk=9 tm=8 tn=8 occ=1 stages=2");
    CHECK(c == 1105920, "igemm cost by hand: %.0f, want 1105920", c);
    /* the batch the caller gives (tune --batch): 10000 is the default; 20000 images make
     * 15,625 blocks, 119 on the busiest SM: 119 * 64*128*288 / 128 = 2,193,408 clocks; 64
     * images make 50 blocks, one an SM, 4 warps (busy 0.5): 64*128*288 / 64 = 36,864 clocks,
     * more than 32 round trips (25,600) */
    const char *cfg = "bm=64 bn=128 bk=9 tm=8 tn=8 occ=1 stages=2";
    double c1 = cost_at(s, &tg, 1, "conv2d_igemm", cfg, 10000), c2 = cost_at(s, &tg, 1, "conv2d_igemm", cfg, 20000);
    double c64 = cost_at(s, &tg, 1, "conv2d_igemm", cfg, 64);
    CHECK(c1 == c && c2 == 2193408 && c64 == 36864, "igemm cost for 10000, 20000, 64 images: %.0f %.0f %.0f", c1, c2,
          c64);
    /* occ caps the registers: on c0 (1 channel, 12x12 out) bm=32 bn=512 bk=3 tm=16 tn=8 stages=3 has
     * 128 threads wanting about 162 + 16 registers: 2 blocks an SM at occ=1 (cap 255); 2,813 blocks,
     * 22 on the busiest SM: 22 * 32*512*9 / 128 = 25,344 clocks (over 11 rounds of 3 round trips,
     * two in flight: 13,200). occ=3 caps at 168: 3 blocks an SM (8 rounds, 9,600), the same FMAs,
     * and 10 registers squeezed out paid as spills, 2 % each: 25,344 * 1.2 = 30,412.8 */
    const char *o1 = "bm=32 bn=512 bk=3 tm=16 tn=8 occ=1 stages=3", *o3 = "bm=32 bn=512 bk=3 tm=16 tn=8 occ=3 stages=3";
    double r1 = cost_of(s, &tg, 0, "conv2d_igemm", o1), r3 = cost_of(s, &tg, 0, "conv2d_igemm", o3);
    CHECK(r1 == 25344 && fabs(r3 - 30412.8) < 0.01, "occ=1 vs occ=3 by hand: %.1f %.1f, want 25344 30412.8", r1, r3);
    /* with stages=2 occ=1 waits on memory (11 rounds of 3 round trips: 26,400); at occ=3 the third
     * block brings that under the FMAs, the spills cost more */
    o1 = "bm=32 bn=512 bk=3 tm=16 tn=8 occ=1 stages=2", o3 = "bm=32 bn=512 bk=3 tm=16 tn=8 occ=3 stages=2";
    r1 = cost_of(s, &tg, 0, "conv2d_igemm", o1), r3 = cost_of(s, &tg, 0, "conv2d_igemm", o3);
    CHECK(r1 == 26400 && fabs(r3 - 30412.8) < 0.01, "occ, stages=2: %.1f %.1f, want 26400 30412.8", r1, r3);
    /* where the cap is above the estimate (92 + 16 registers, occ=3 caps at 168), occ changes nothing */
    r1 = cost_of(s, &tg, 1, "conv2d_igemm", "bm=64 bn=128 bk=9 tm=8 tn=8 occ=1 stages=2");
    r3 = cost_of(s, &tg, 1, "conv2d_igemm", "bm=64 bn=128 bk=9 tm=8 tn=8 occ=3 stages=2");
    CHECK(r1 == c && r3 == c, "a cap that does not bind: %.0f %.0f, want %.0f", r1, r3, c);
    /* a 16x4 thread tile reads 20 words for its 64 FMAs (reuse 0.8), the rest alike */
    double thin = cost_of(s, &tg, 1, "conv2d_igemm", "bm=64 bn=128 bk=9 tm=16 tn=4 occ=1 stages=2");
    CHECK(thin == 1382400, "a 16x4 thread tile costs 1.25x the 8x8: %.0f, want 1382400", thin);
    /* conv2d_igemm_tc (tensor cores): slices padded to a multiple of 8 cost their pad rows (bk=9 pads to
     * 16, bk=18 to 24), and a warp's split column elements feed tm/8 map tiles (more is cheaper) */
    double t9 = cost_of(s, &tg, 1, "conv2d_igemm_tc", "bm=64 bn=128 bk=9 tm=32 tn=8 occ=1 stages=2");
    double t18 = cost_of(s, &tg, 1, "conv2d_igemm_tc", "bm=64 bn=128 bk=18 tm=32 tn=8 occ=1 stages=2");
    double w32 = cost_of(s, &tg, 1, "conv2d_igemm_tc", "bm=32 bn=128 bk=18 tm=32 tn=4 occ=1 stages=2");
    double w8 = cost_of(s, &tg, 1, "conv2d_igemm_tc", "bm=32 bn=128 bk=18 tm=8 tn=16 occ=1 stages=2");
    CHECK(t9 > 0 && t18 > 0 && t18 < t9, "igemm_tc: bk=18 under bk=9 (%.0f, %.0f)", t18, t9);
    CHECK(w32 > 0 && w8 > 0 && w32 < w8, "igemm_tc, 128 threads: tm=32 under tm=8 (%.0f, %.0f)", w32, w8);
    /* free slices (bk a multiple of 8, offsets from a table): 24 rows of the 288 cost 288 rows of work,
     * bk=18 padded to 24 costs 384; igemm (FFMA) has only whole kernel rows or channels, and a free
     * depth must be a multiple of 8 */
    double f24 = cost_of(s, &tg, 1, "conv2d_igemm_tc", "bm=64 bn=128 bk=24 tm=32 tn=8 occ=1 stages=2");
    CHECK(f24 > 0 && fabs(f24 / t18 - 288.0 / 384.0) < 1e-9, "igemm_tc: free bk=24 at 3/4 of bk=18 padded (%.0f, %.0f)",
          f24, t18);
    CHECK(cost_of(s, &tg, 1, "conv2d_igemm", "bm=64 bn=128 bk=24 tm=8 tn=8 occ=1 stages=2") < 0,
          "igemm (FFMA): bk=24 refused on a 3x3 layer of 32 channels");
    CHECK(cost_of(s, &tg, 1, "conv2d_igemm_tc", "bm=64 bn=128 bk=12 tm=32 tn=8 occ=1 stages=2") < 0,
          "igemm_tc: bk=12 (no whole kernel rows, no multiple of 8) refused");
    /* and where the target has no TF32 tensor cores (sm_75), it is refused */
    cg_target old = tg;
    old.cc = 75;
    CHECK(cost_of(s, &old, 1, "conv2d_igemm_tc", "bm=64 bn=128 bk=18 tm=32 tn=8 occ=1 stages=2") < 0,
          "igemm_tc refused on sm_75");
    /* fc out=10: a 128-wide output tile wastes 118 columns */
    double narrow = cost_of(s, &tg, 2, "fc_tiled", "bm=64 bn=16 bk=16 tm=4 tn=2");
    double wide = cost_of(s, &tg, 2, "fc_tiled", "bm=64 bn=128 bk=16 tm=4 tn=2");
    CHECK(narrow > 0 && wide > 2 * narrow, "fc, 10 outputs: bn=128 costs more than 2x bn=16 (%.0f vs %.0f)", wide,
          narrow);
    /* split over a cluster: 79 tiles leave most of 132 SMs idle, 8 blocks a tile fill them */
    double s1 = cost_of(s, &tg, 2, "fc_vec", "bm=128 bn=16 bk=16 tm=8 tn=4 split=1");
    double s8 = cost_of(s, &tg, 2, "fc_vec", "bm=128 bn=16 bk=16 tm=8 tn=4 split=8");
    CHECK(s1 > 0 && s8 > 0 && s8 < s1, "a split fills the SMs of a narrow layer (%.0f < %.0f)", s8, s1);
    /* the order is deterministic: the same list twice */
    cg_candidates a, b;
    CHECK(cg_gen_candidates_for(s, &tg, 1, "conv2d_igemm", 0, 0, &a, &e) == 0 &&
              cg_gen_candidates_for(s, &tg, 1, "conv2d_igemm", 0, 0, &b, &e) == 0 && a.n == b.n && a.n > 10,
          "igemm candidates: %s", e.msg);
    int same = 1, modelled = 1;
    for (int j = 0; j < a.n; j++) same &= a.c[j].cost == b.c[j].cost, modelled &= a.c[j].cost > 0;
    CHECK(same && modelled, "every candidate has an estimate, the same each time");
    /* the cheapest igemm tiles use the registers well: tm*tn >= 32 */
    cg_tune_cand *t = calloc((size_t)a.n, sizeof *t);
    for (int j = 0; j < a.n; j++) {
        snprintf(t[j].tpl, sizeof t[j].tpl, "conv2d_igemm");
        snprintf(t[j].params, sizeof t[j].params, "%s", a.c[j].params);
        t[j].cost = a.c[j].cost;
    }
    CHECK(cg_tune_order(t, a.n) == 0, "ordered");
    int good = 1;
    for (int j = 0; j < 10; j++) {
        int tm = 0, tn = 0;
        const char *q = strstr(t[j].params, "tm=");
        if (q) sscanf(q, "tm=%d tn=%d", &tm, &tn);
        good &= tm * tn >= 32;
    }
    CHECK(good, "the ten cheapest have thread tiles of 32 or more (first: %s)", t[0].params);
    for (int j = 1; j < a.n; j++) good &= t[j].cost >= t[j - 1].cost;
    CHECK(good, "costs ascend down the order");
    free(t);
    cg_candidates_free(&a), cg_candidates_free(&b);
    free(s);
}

/* ---- --list counts against the declared legal values ---- */

/* The legal values of each declared parameter of template tpl on layer li,
 * read from the template itself (T.params[i].legal(l), or default(l) alone for
 * a parameter declared `tune = false`); returns the count of
 * parameters. names[i] and vals[i][0..nv[i]) receive them. */
static int legal_values(const cg_spec *s, int li, const char *tpl, char names[][CG_NAME_MAX], long long vals[][64],
                        int *nv)
{
    cg_lua *h;
    cg_err e = {{0}};
    if (cg_lua_open(&h, NULL, &e)) return -1;
    lua_State *L = cg_lua_state(h);
    int np = -1;
    if (cg_lua_import(h, "lib/planner", &e)) goto out;
    lua_getfield(L, -1, "layer_table");
    cg_gen_push_net(L, s, NULL);
    lua_pushinteger(L, li + 1);
    if (cg_lua_pcall(h, 2, 1, &e)) goto out; /* planner, l */
    if (cg_lua_import(h, tpl, &e)) goto out; /* planner, l, T */
    lua_getfield(L, -1, "params");           /* planner, l, T, params */
    np = (int)luaL_len(L, -1);
    for (int i = 0; i < np; i++) {
        lua_geti(L, -1, i + 1); /* ..., d */
        lua_getfield(L, -1, "name");
        snprintf(names[i], CG_NAME_MAX, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
        lua_getfield(L, -1, "tune"); /* tune = false: no tuning choice, the default only */
        int fixed = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, -1, fixed ? "default" : "legal");
        lua_pushvalue(L, -5); /* l */
        if (cg_lua_pcall(h, 1, 1, &e)) {
            np = -1;
            goto out;
        }
        if (fixed) {
            nv[i] = 1, vals[i][0] = lua_tointeger(L, -1);
        } else {
            nv[i] = (int)luaL_len(L, -1);
            for (int j = 0; j < nv[i] && j < 64; j++) {
                lua_geti(L, -1, j + 1);
                vals[i][j] = lua_tointeger(L, -1);
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 2); /* list, d */
    }
out:
    if (np < 0) printf("note: %s\n", e.msg);
    cg_lua_close(h);
    return np;
}

/* Accepted configurations of tpl on layer li, counted by putting every
 * combination of the legal values to the template's check one at a time
 * (cg_gen_check_one, through one kept sandbox: a sandbox of each check's own
 * took 57 of this test's 95 s). */
static long long count_accepted(const cg_spec *s, int li, const char *tpl, long long *total)
{
    char names[CG_MAX_PARAMS][CG_NAME_MAX];
    long long vals[CG_MAX_PARAMS][64];
    int nv[CG_MAX_PARAMS];
    int np = legal_values(s, li, tpl, names, vals, nv);
    if (np <= 0) return -1;
    cg_gen_emitter *em = NULL;
    cg_err oe = {{0}};
    if (cg_gen_emitter_open(&em, &oe)) return printf("note: %s\n", oe.msg), -1;
    int at[CG_MAX_PARAMS] = {0};
    long long accepted = 0;
    *total = 1;
    for (int i = 0; i < np; i++) *total *= nv[i];
    for (long long n = 0; n < *total; n++) {
        char text[CG_PARAMS_TEXT] = "";
        for (int i = 0; i < np; i++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s=%lld", i ? " " : "", names[i],
                     vals[i][at[i]]);
        char why[256];
        cg_err e = {{0}};
        int rc = cg_gen_check_one_with(em, s, NULL, li, tpl, text, why, sizeof why, &e);
        if (rc < 0) {
            printf("note: %s\n", e.msg);
            accepted = -1;
            break;
        }
        accepted += rc == 0;
        for (int i = np - 1; i >= 0 && ++at[i] == nv[i]; i--) at[i] = 0; /* last parameter fastest */
    }
    cg_gen_emitter_close(em);
    return accepted;
}

/* The "  TEMPLATE: N candidates of T combinations" line of layer's section in list output. */
static int listed(const char *out, const char *layer, const char *tpl, long long *n, long long *total)
{
    char head[96];
    snprintf(head, sizeof head, "layer %s (", layer);
    const char *p = strstr(out, head);
    if (!p) return -1;
    char key[96];
    snprintf(key, sizeof key, "  %s: ", tpl);
    p = strstr(p, key);
    if (!p) return -1;
    return sscanf(p + strlen(key), "%lld candidates of %lld", n, total) == 2 ? 0 : -1;
}

static void test_list_counts(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {{0}};
    CHECK(cg_spec_load(spec_path, s, &e) == 0, "spec: %s", e.msg);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "build/convgen tune %s --list 2>&1", spec_path);
    FILE *p = popen(cmd, "r");
    char out[16384];
    size_t len = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[len] = 0;
    int st = p ? pclose(p) : -1;
    CHECK(st == 0, "tune --list exits 0 without a GPU:\n%s", out);
    static const struct {
        int li;
        const char *layer, *tpl;
    } cases[] = {{1, "fc1", "fc_tiled"}, {1, "fc1", "fc_vec"}, {2, "fc2", "fc_vec"}, {0, "conv1", "conv2d_direct"},
                 {1, "fc1", "fc_wg"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        long long total = 0, n = -1, ltotal = -1;
        long long want = count_accepted(s, cases[i].li, cases[i].tpl, &total);
        CHECK(want >= 0, "%s %s: counted", cases[i].layer, cases[i].tpl);
        CHECK(listed(out, cases[i].layer, cases[i].tpl, &n, &ltotal) == 0, "%s %s listed:\n%s", cases[i].layer,
              cases[i].tpl, out);
        CHECK(n == want && ltotal == total, "%s %s: --list says %lld of %lld, the legal values give %lld of %lld",
              cases[i].layer, cases[i].tpl, n, ltotal, want, total);
        if (i == 2) CHECK(want > 0 && want <= total, "fc_vec serves a 10-input layer (float2 loads): %lld of %lld", want, total);
        if (i == 0) CHECK(want > 0 && want < total, "fc_tiled: some refused (%lld of %lld)", want, total);
        /* fc_wg: every combination enumerated, all refused on the default sm_75 (no wgmma); fc_tc's
         * 184,320 (conv2d_igemm_tc's parameters) are too many to count one check at a time here */
        if (i == 4) CHECK(want == 0 && total == 1280, "fc_wg on sm_75: %lld of %lld", want, total);
    }
    /* conv2d_direct's fuse is declared `tune = false`: every candidate fuses (an unfused
     * kernel leaves its activation and pool to kernels the harness does not time) */
    cg_candidates cs;
    CHECK(cg_gen_candidates(s, 0, "conv2d_direct", 0, &cs, &e) == 0 && cs.n > 0, "conv1 candidates: %s", e.msg);
    int unfused = 0;
    for (int j = 0; j < cs.n; j++) unfused += strstr(cs.c[j].params, "fuse=1") == NULL;
    CHECK(unfused == 0, "%d of %d conv2d_direct candidates do not fuse", unfused, cs.n);
    cg_candidates_free(&cs);
    free(s);
}

/* A record applied to a run from a fat binary is checked against the fat binary's
 * architectures (as the code the backend generates for it), not the default sm_75:
 * zoo-odd's record (conv3 on planes, which needs sm_90 built as sm_90a) applies
 * with a fat binary of one sm_90 cubin, and is refused with one of sm_80. The fat
 * binaries are containers of one empty cubin entry: only their headers are read. */
static void test_use_fatbin(void)
{
    static const int archs[] = {90, 80};
    for (int a = 0; a < 2; a++) {
        unsigned char fb[16 + 64] = {0};
        const unsigned magic = 0xBA55ED50u;
        for (int i = 0; i < 4; i++) fb[i] = (unsigned char)(magic >> (8 * i));
        fb[4] = 1, fb[6] = 16, fb[8] = 64;         /* version 1, header 16 bytes, 64 bytes of entries */
        fb[16] = 2, fb[16 + 4] = 64;               /* an ELF entry, its header 64 bytes, no payload */
        fb[16 + 28] = (unsigned char)archs[a];     /* for sm_90, or sm_80 */
        char path[128];
        snprintf(path, sizeof path, "%s/sm%d.fatbin", dir, archs[a]);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(fb, 1, sizeof fb, f) == sizeof fb && fclose(f) == 0, "%s written", path);
        cg_spec *s = malloc(sizeof *s);
        cg_err e = {{0}};
        if (!s || cg_spec_load("bench/specs/zoo-odd.yaml", s, &e)) {
            CHECK(0, "zoo-odd: %s", e.msg);
            free(s);
            continue;
        }
        cg_net_options o;
        cg_net_options_init(&o);
        o.backend = CG_BACKEND_CUDA, o.fatbin = path, o.tuning = "bench/tune/h100/zoo-odd.tuning.yaml";
        int from[CG_MAX_LAYERS];
        cg_buf notices;
        cg_buf_init(&notices);
        int rc = cg_net_tune(s, &o, from, &notices, &e);
        int conv3 = 2;
        CHECK(rc == 0 && !strcmp(s->layers[conv3].name, "conv3"), "sm_%d: applied: %s", archs[a], e.msg);
        if (archs[a] == 90)
            CHECK(from[conv3] && !strcmp(s->layers[conv3].strategy, "planes") && !notices.len,
                  "sm_90 fat binary: conv3 from the record (strategy %s; notices '%s')", s->layers[conv3].strategy,
                  notices.len ? notices.data : "");
        else
            CHECK(!from[conv3] && notices.len && strstr(notices.data, "refused now") &&
                      strstr(notices.data, "needs wgmma"),
                  "sm_80 fat binary: the record's planes refused ('%s')", notices.len ? notices.data : "");
        cg_buf_free(&notices);
        free(s);
    }
}

/* The images a layer is timed at: --batch, or as many as keep its kernels' indices
 * below 2^31 (zoo-stem96 conv2: 96 maps of 48x48 before its pool, 221,184 floats an
 * image, so 9,709; zoo-squeeze conv2: 128 of 44x44, 8,665), never more than asked. */
static void test_layer_images(void)
{
    static const struct {
        const char *spec, *layer;
        long long batch, want;
    } c[] = {
        {"bench/specs/zoo-stem96.yaml", "conv2", 10000, 9709},
        {"bench/specs/zoo-stem96.yaml", "conv2", 5000, 5000},
        {"bench/specs/zoo-squeeze.yaml", "conv2", 10000, 8665},
        {"bench/specs/zoo-squeeze.yaml", "conv2", 1 << 24, 8665},
        {"bench/specs/zoo-stem96.yaml", "conv4", 10000, 10000},
        {"specs/ece408-2017.yaml", "fc1", 10000, 10000},
    };
    cg_spec *s = malloc(sizeof *s);
    for (size_t i = 0; s && i < sizeof c / sizeof *c; i++) {
        cg_err e = {{0}};
        if (cg_spec_load(c[i].spec, s, &e)) {
            CHECK(0, "%s: %s", c[i].spec, e.msg);
            continue;
        }
        long long got = -1;
        for (int j = 0; j < s->nlayers; j++)
            if (!strcmp(s->layers[j].name, c[i].layer)) got = cg_tune_layer_images(&s->layers[j], c[i].batch);
        CHECK(got == c[i].want, "%s %s at %lld: %lld images, expected %lld", c[i].spec, c[i].layer, c[i].batch, got,
              c[i].want);
    }
    free(s);
}

/* The record is written as every other output is: a link planted at a temp
 * name it might use, or at the record itself, is never followed. */
static void test_write_no_links(const cg_spec *s)
{
    cg_tune_record *r = malloc(sizeof *r);
    CHECK(r && make_record(s, "Dev A", 90, r) == 0, "record made");
    char path[160], victim[160], trap[200];
    snprintf(path, sizeof path, "%s/links.tuning.yaml", dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    CHECK(put(victim, "precious\n") == 0, "victim written");
    /* the temp names a writer of this pid could pick: PATH.tmpPID, PATH.tmp.PID.N */
    snprintf(trap, sizeof trap, "%s.tmp%ld", path, (long)getpid());
    CHECK(symlink(victim, trap) == 0, "link planted at %s", trap);
    for (int n = 0; n < 4; n++) {
        snprintf(trap, sizeof trap, "%s.tmp.%ld.%d", path, (long)getpid(), n);
        CHECK(symlink(victim, trap) == 0, "link planted at %s", trap);
    }
    cg_err e = {{0}};
    CHECK(cg_tune_write(r, path, &e) == 0, "written beside the links: %s", e.msg);
    cg_buf v;
    CHECK(cg_read_file(victim, &v, &e) == 0 && !strcmp(v.data, "precious\n"), "the link's target is untouched");
    cg_buf_free(&v);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the record is a regular file, not a link");
    cg_tune_record *back = malloc(sizeof *back);
    CHECK(back && cg_tune_read(path, back, &e) == 0 && back->n == r->n, "and reads back: %s", e.msg);
    /* the record's own name a link: refused, the target untouched */
    snprintf(path, sizeof path, "%s/linked.tuning.yaml", dir);
    CHECK(symlink(victim, path) == 0, "link planted at the record's name");
    e.msg[0] = 0;
    CHECK(cg_tune_write(r, path, &e) != 0 && strstr(e.msg, "symbolic link"), "a linked record refused: %s", e.msg);
    CHECK(cg_read_file(victim, &v, &e) == 0 && !strcmp(v.data, "precious\n"), "its target untouched");
    cg_buf_free(&v);
    free(r), free(back);
}

/* The kernel hash reads the code, not its header, and not the programmatic-
 * dependent-launch prologue: the same kernel with and without it hashes alike,
 * another statement does not. */
static void test_kernel_hash_prologue(void)
{
    static const char plain[] = "// template: x\n// hash: 1\nextern \"C\" __global__ void k(float *o)\n{\n"
                                "    o[0] = 1.0f;\n}\n";
    static const char with[] = "// template: x\n// hash: 2\nextern \"C\" __global__ void k(float *o)\n{\n"
                               "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
                               "    // programmatic dependent launch: wait for the kernel before, then let the next one launch\n"
                               "    asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
                               "    asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
                               "#endif\n    o[0] = 1.0f;\n}\n";
    static const char other[] = "// template: x\nextern \"C\" __global__ void k(float *o)\n{\n    o[0] = 2.0f;\n}\n";
    /* the prologue where a template marked it (common.PDL_MARK), after a weight's load */
    static const char plain_w[] = "// hash: 1\nextern \"C\" __global__ void k(const float *w, float *o)\n{\n"
                                  "    const float v = w[0];\n    o[0] = v;\n}\n";
    static const char marked[] = "// hash: 2\nextern \"C\" __global__ void k(const float *w, float *o)\n{\n"
                                 "    const float v = w[0];\n"
                                 "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
                                 "    // programmatic dependent launch: the loads above read weights only, fetched while the\n"
                                 "    // kernel before runs; now wait for it, then let the next one launch\n"
                                 "    asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
                                 "    asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
                                 "#endif\n    o[0] = v;\n}\n";
    char a[17], b[17], c[17], d[17], f[17];
    cg_tune_kernel_hash(plain, a), cg_tune_kernel_hash(with, b), cg_tune_kernel_hash(other, c);
    CHECK(!strcmp(a, b), "the PDL prologue leaves the kernel hash as it was (%s, %s)", a, b);
    CHECK(strcmp(a, c) != 0, "another statement changes it");
    cg_tune_kernel_hash(plain_w, d), cg_tune_kernel_hash(marked, f);
    CHECK(!strcmp(d, f), "a prologue placed after the weights' loads leaves the hash as it was too (%s, %s)", d, f);
}

int main(void)
{
    test_layer_images();
    test_kernel_hash_prologue();
    snprintf(dir, sizeof dir, "/tmp/cg_tune_XXXXXX");
    if (!mkdtemp(dir)) return printf("mkdtemp failed\n"), 1;
    snprintf(spec_path, sizeof spec_path, "%s/net.yaml", dir);
    if (put(spec_path, spec_text)) return printf("cannot write the spec\n"), 1;
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {{0}};
    int rc = cg_spec_load(spec_path, s, &e);
    CHECK(rc == 0, "spec: %s", e.msg);
    if (!rc) {
        test_signature(s);
        test_choice();
        test_search_order();
        test_budget();
        test_first_layer();
        test_interleaved();
        test_tie_break();
        test_repeatable();
        test_order();
        test_model();
        test_round_trip(s);
        test_write_no_links(s);
        test_malformed();
        test_apply();
        test_bucket_apply();
        test_bucket_refused();
        test_bucket_record(s);
        test_bucket_merge(s);
        test_bucket_info();
        test_use();
        test_use_fatbin();
        test_list_counts();
        test_compile_batch();
    }
    free(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) printf("note: could not remove %s\n", dir);
    return cg_test_done("test_tune");
}
