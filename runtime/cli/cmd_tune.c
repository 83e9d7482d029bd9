/* cmd_tune.c — the tune verb: every conv and fc layer's candidates (every
 * template that serves it x its legal parameters), compiled in batches,
 * checked against the CPU reference, timed, the fastest correct one kept in a
 * tuning record. The choice and the record are runtime/measure/tune.c (no GPU); this
 * file is the measuring loop and what a person sees. */
#include "cli.h"
#include "aot.h"
#include "cache.h"
#include "cuda_api.h"
#include "harness.h"
#include "op.h"
#include "jit.h"
#include "options.h"
#include "tune.h"
#include "tune_verify.h"
#include "tune_whole.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIST_SHOWN 5   /* candidates --list prints per template */
#define BATCH_MAX 64   /* candidates compiled by one cg_jit_build */
#define CHECK_IMAGES 64 /* images each candidate is checked on */
#define RETIME_PASSES 3 /* interleaved re-timing passes of the best few, --repeat launches each */

static const char tune_usage[] =
    "usage: convgen tune SPEC [options]\n"
    "\n"
    "Measure every conv and fc layer's candidates (each template that serves the layer x its\n"
    "legal parameters), compiled in batches, each checked against the CPU reference before\n"
    "it is timed (L2 flushed, median); the best few are re-timed and the fastest correct one\n"
    "is written to a tuning record that run, check and build then use (docs/tuning.md).\n"
    "\n"
    "  -o, --output FILE   the record (default: SPEC with .yaml -> .tuning.yaml)\n"
    "  --layers a,b        only these layers (default: every conv and fc layer)\n"
    "  --budget SECONDS    wall-time ceiling for the whole run, compiles included (default 60)\n"
    "  --batch N           images per timed launch (default 10000); the cost model\n"
    "                      estimates for as many (--list too); a layer whose tensors would\n"
    "                      pass 2^31 elements is timed at fewer, its times scaled to N.\n"
    "                      The choices are recorded for N's bucket (1, 8, 64, 256, 1024;\n"
    "                      above, the large batch) and apply to kernels generated for it;\n"
    "                      the record's entries for other buckets are kept\n"
    "  --repeat R          timed launches per candidate (default 10); the top K get 3 more\n"
    "                      passes of R, interleaved\n"
    "  --top K             candidates re-timed before choosing (default 3)\n"
    "  --sample N          candidates taken down the cost model's order at a time (default 24)\n"
    "  --csv FILE          one row per candidate: layer, template, params, status, times\n"
    "  --no-cache          compile, bypassing the JIT cache\n"
    "  --no-verify         keep every entry measured, without timing the network with\n"
    "                      and without this run's entries (see below)\n"
    "  --list              each layer's candidates per template, counted (no GPU needed)\n"
    "  --arch CC           with --list: the candidates for sm_CC (e.g. 90: its shared memory,\n"
    "                      tensor cores, wgmma and 16-bit types); default: the conservative\n"
    "                      target `generate` has without --arch (sm_75, 48 KiB)\n"
    "  -h, --help          this text\n"
    "\n"
    "Search: the templates' cost model orders each layer's candidates (each template's\n"
    "cheapest first, then all by estimate; --list shows it). Each layer gets an equal share\n"
    "of the budget left; the run's first layer first compiles one round, then times and\n"
    "re-times its default, to learn what compiling and timing cost. A layer measures its\n"
    "default and the next --sample candidates of the order, then one-parameter\n"
    "steps around the best while they find a better one (by more than 1 %), then the next\n"
    "--sample, ... Then the best few and the default are re-timed in 3 interleaved passes;\n"
    "times within 1 % are a tie, won by the candidate earlier in the order, so two runs\n"
    "choose alike. No compile batch, timing or pass starts that the costs measured so far\n"
    "say would end past the layer's share, so the budget is a ceiling (compiles included);\n"
    "the summary says how many candidates were measured of how many. Where --batch is a\n"
    "small bucket (1 to 1024 images) whose kernels include a whole-network kernel, it and\n"
    "the per-layer kernels just chosen are then each checked against the CPU reference and\n"
    "timed as run's --whole auto times them; the faster correct one is recorded for the\n"
    "bucket. Exit 4 without a GPU (except --list).\n"
    "\n"
    "Verify: a layer's candidates are timed alone, where a split pair of the network's own\n"
    "kernel cannot run, so before the whole-network step and the write, the network with\n"
    "this run's entries for its bucket and the network without them are run alternately\n"
    "profiled (3 warm-up rounds, then 15 timed, each layer's median; at the large batch at\n"
    "most 10000 images and 30 s). An entry is kept only where the layers it decides take\n"
    "2 % less time with it than without, and then only if the network with those kept is\n"
    "faster as run runs it (timed again without profile; where it is not, each alone);\n"
    "one line per entry says kept or dropped, with the times. Where the device fails\n"
    "there, the entries are kept as measured (stderr says why). --no-verify skips it.\n";

typedef struct {
    const char *spec, *out, *layers, *csv;
    long long budget, batch, repeat, top, sample, arch;
    int list, no_cache, no_verify, help;
} tune_cli;

/* The command line into c; 0 or CG_EXIT_USAGE. */
static int parse(int argc, char **argv, tune_cli *c, cg_err *e)
{
    memset(c, 0, sizeof *c);
    const char *budget = NULL, *batch = NULL, *repeat = NULL, *top = NULL, *sample = NULL, *list = NULL,
               *no_cache = NULL, *arch = NULL, *no_verify = NULL;
    const cg_opt opts[] = {{"-o", 1, &c->out},         {"--output", 1, &c->out}, {"--layers", 1, &c->layers},
                           {"--budget", 1, &budget},   {"--batch", 1, &batch},   {"--repeat", 1, &repeat},
                           {"--top", 1, &top},         {"--sample", 1, &sample}, {"--csv", 1, &c->csv},
                           {"--no-cache", 0, &no_cache}, {"--list", 0, &list},   {"--arch", 1, &arch},
                           {"--no-verify", 0, &no_verify}};
    int rc = cg_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts, &c->spec, tune_usage, e);
    c->budget = 60, c->batch = 10000, c->repeat = 10, c->top = 3, c->sample = 24;
    if (rc == CG_OPTS_HELP) return c->help = 1, 0;
    if (!rc && !c->spec) rc = (cg_fail(e, "tune needs SPEC"), CG_EXIT_USAGE);
    if (!rc) rc = cg_opt_int("--budget", budget, 1, 1000000, &c->budget, e);
    if (!rc) rc = cg_opt_int("--batch", batch, 1, 1LL << 24, &c->batch, e);
    if (!rc) rc = cg_opt_int("--repeat", repeat, 1, 10000, &c->repeat, e);
    if (!rc) rc = cg_opt_int("--top", top, 1, CG_TUNE_RUNNERS + 1, &c->top, e);
    if (!rc) rc = cg_opt_int("--sample", sample, 1, 100000, &c->sample, e);
    if (!rc) rc = cg_opt_int("--arch", arch, 30, 999, &c->arch, e);
    c->list = list != NULL, c->no_cache = no_cache != NULL, c->no_verify = no_verify != NULL;
    if (!rc && arch && !c->list)
        rc = (cg_fail(e, "--arch goes with --list (a tuned kernel is built for the GPU it runs on)"), CG_EXIT_USAGE);
    return rc;
}

static double now_s(void)
{
    return cg_now_ms() / 1e3;
}

/* Whether layer i is to be tuned: a conv or fc layer named in --layers (all when absent). */
static int wanted(const cg_layer *l, const char *layers)
{
    if (!cg_ops[l->op].family) return 0;
    if (!layers) return 1;
    size_t n = strlen(l->name);
    for (const char *p = layers; *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == n && !strncmp(p, l->name, n)) return 1;
        p = q ? q + 1 : p + len;
    }
    return 0;
}

/* Every name in --layers must be a conv or fc layer of the spec. */
static int check_layers(const cg_spec *s, const char *layers, cg_err *e)
{
    if (!layers) return 0;
    for (const char *p = layers; *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        int found = 0;
        for (int i = 0; i < s->nlayers && !found; i++)
            found = strlen(s->layers[i].name) == len && !strncmp(s->layers[i].name, p, len) &&
                    cg_ops[s->layers[i].op].family;
        if (!found) return cg_fail(e, "%s: --layers: no conv or fc layer '%.*s'", s->path, (int)len, p);
        p = q ? q + 1 : p + len;
    }
    return 0;
}

/* ---- measuring ---- */

/* What the measuring loop holds for the whole run. */
typedef struct {
    const cg_spec *s;
    const tune_cli *c;
    cg_cu *cu;       /* kept open: the primary context lives through the run */
    cg_nvrtc *nv;
    cg_target tg;    /* what the device allows: candidates are generated for it */
    cg_harness_layer *hl; /* the layer being tuned: its inputs, reference, buffers */
    int hl_layer;         /* its index, -1 for none */
    long long hl_images;  /* the images it times (cg_tune_layer_images): fewer than --batch
                             only where those would pass 2^31 elements; times scaled to --batch */
    cg_jit_opts jo;
    char cache_dir[CG_PATH_MAX];
    int tty;
    double t0;       /* start of the layer */
    FILE *csv;
    int run_failures; /* consecutive candidates the device failed to run */
    int li;           /* the layer being tuned */
    cg_tune_batch b;  /* the batch compiled last */
    cg_harness_result *r;
    cg_tune_costs cost; /* carried from layer to layer */
    int cut[CG_MAX_LAYERS]; /* per record entry: the budget ended its search */
} tuner;

#define RUN_FAILURES_MAX 3 /* in a row: the device itself is failing (a sticky CUDA error) */

/* One layer's candidate table (the search's view first). */
typedef struct {
    cg_tune_layer t;
    int li;
    int cap;
} layer_run;

static int add_cand(layer_run *lr, const char *tpl, const cg_candidate *cand)
{
    cg_tune_layer *L = &lr->t;
    if (L->n == lr->cap) {
        int cap = lr->cap ? 2 * lr->cap : 256;
        cg_tune_cand *nc = realloc(L->c, (size_t)cap * sizeof *nc);
        if (!nc) return -1;
        L->c = nc, lr->cap = cap;
    }
    cg_tune_cand *x = &L->c[L->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->tpl, sizeof x->tpl, "%s", tpl);
    snprintf(x->params, sizeof x->params, "%s", cand->params);
    x->cost = cand->cost;
    return 0;
}

/* ---- --list ---- */

/* Candidates --list shows of the search's order (all templates). */
#define ORDER_SHOWN 8

/* The first ORDER_SHOWN of a layer's candidates in the search's order (cg_tune_order). */
static int list_order(layer_run *lr)
{
    if (cg_tune_order(lr->t.c, lr->t.n)) return -1;
    printf("  measured first (each template's cheapest, then by the cost model):\n");
    for (int j = 0; j < lr->t.n && j < ORDER_SHOWN; j++)
        printf("    %-14s %-48s model %.4g\n", lr->t.c[j].tpl, lr->t.c[j].params, lr->t.c[j].cost);
    return 0;
}

/* Each wanted layer's candidates per template, counted; the first few of each
 * in the cost model's order, and the first few of the search's order. */
static int list(const cg_spec *s, const tune_cli *c, cg_err *e)
{
    int rc = 0;
    cg_target tg;
    int cc = (int)c->arch;
    if (cc) cg_aot_target(&cc, 1, &tg);
    /* enumerating a template's candidates can take tens of seconds: on a
     * terminal a progress line on stderr says which, erased once done */
    const int tty = isatty(fileno(stderr));
    for (int i = 0; !rc && i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        if (!wanted(l, c->layers)) continue;
        char sig[CG_TUNE_SIG];
        cg_tune_signature(l, sig, sizeof sig);
        printf("layer %s (%s)\n", l->name, sig);
        long long total = 0;
        layer_run lr;
        memset(&lr, 0, sizeof lr);
        for (const char *const *t = cg_tune_templates(l); !rc && *t; t++) {
            cg_candidates cs;
            cg_err ce = {{0}};
            if (tty) {
                fflush(stdout);
                fprintf(stderr, "\rtune --list: enumerating %s for layer %s (%d of %d)...\033[K", *t, l->name, i + 1,
                        s->nlayers);
                fflush(stderr);
            }
            int failed = cg_gen_candidates_for(s, cc ? &tg : NULL, i, *t, 0, c->batch, &cs, &ce);
            if (tty) fputs("\r\033[K", stderr), fflush(stderr);
            if (failed) {
                printf("  %s: 0 candidates (%s)\n", *t, ce.msg);
                continue;
            }
            printf("  %s: %d candidates of %lld combinations (%lld refused)%s%s\n", *t, cs.n, cs.total, cs.refused,
                   cs.note[0] ? "; " : "", cs.note);
            int first = lr.t.n;
            for (int j = 0; !rc && j < cs.n; j++) rc = add_cand(&lr, *t, &cs.c[j]);
            /* this template's own list in the model's order */
            if (!rc) rc = cg_tune_order(lr.t.c + first, cs.n);
            for (int j = 0; !rc && j < cs.n && j < LIST_SHOWN; j++) printf("    %s\n", lr.t.c[first + j].params);
            if (cs.n > LIST_SHOWN) printf("    ... %d more\n", cs.n - LIST_SHOWN);
            total += cs.n;
            cg_candidates_free(&cs);
        }
        printf("  total: %lld candidates\n", total);
        if (!rc && lr.t.n) rc = list_order(&lr);
        free(lr.t.c);
    }
    return rc ? cg_fail(e, "out of memory"), -1 : 0;
}

/* The progress line: in place on a terminal, a plain line otherwise (then
 * only when final, to keep logs short). */
static void progress(const tuner *t, const cg_tune_layer *L, int final)
{
    if (!t->tty && !final) return;
    int b;
    double el = now_s() - t->t0;
    char best[CG_PARAMS_TEXT + 96] = "none yet";
    if (cg_tune_best(L->c, L->n, 1, &b) == 1)
        snprintf(best, sizeof best, "%.4f ms %s %s", cg_tune_score(&L->c[b]), L->c[b].tpl, L->c[b].params);
    double eta = L->measured ? el / L->measured * (L->planned - L->measured) : 0;
    printf("%s%-12s %4d/%-4d of %-5d best %.90s  %.1fs", t->tty ? "\r\033[K" : "", t->s->layers[t->li].name,
           L->measured, L->planned, L->n, best, el);
    if (!final && eta > 0) printf(" (~%.0fs left)", eta);
    if (final && L->cut) printf(" (budget spent)");
    printf(final || !t->tty ? "\n" : "");
    fflush(stdout);
}

/* The search's clock (cg_tune_ops.now). */
static double op_now(void *ctx)
{
    (void)ctx;
    return now_s();
}

/* cg_tune_ops.compile: the candidates through cg_tune_compile, kept in t->b. */
static int op_compile(void *ctx, cg_tune_layer *L, const int *idx, int m, cg_err *e)
{
    tuner *t = ctx;
    t->jo.refresh = L->fresh; /* a candidate's first compile is a compile, cache or not */
    if (cg_tune_compile(t->s, &t->tg, t->li, L->c, idx, m, t->nv, &t->jo, &t->b, e)) {
        cg_tune_batch_free(&t->b);
        return e->msg[0] ? -1 : cg_fail(e, "out of memory");
    }
    return 0;
}

/* cg_tune_ops.release */
static void op_release(void *ctx)
{
    cg_tune_batch_free(&((tuner *)ctx)->b);
}

/* cg_tune_ops.progress */
static void op_progress(void *ctx, const cg_tune_layer *L)
{
    progress(ctx, L, 0);
}

/* The harness of the layer being tuned (t->li): its inputs, weights, CPU
 * reference and device buffers made once for all its candidates, so that a
 * candidate's cost, which plans the budget, is its own launches. */
static int layer_harness(tuner *t, cg_err *e)
{
    if (t->hl_layer == t->li) return 0;
    cg_harness_layer_close(t->hl);
    t->hl = NULL, t->hl_layer = -1;
    const cg_layer *l = &t->s->layers[t->li];
    t->hl_images = cg_tune_layer_images(l, t->c->batch);
    if (t->hl_images < t->c->batch)
        printf("%s%-12s timed at %lld images, its times scaled to %lld (at %lld a kernel's indices would pass 2^31)\n",
               t->tty ? "\r\033[K" : "", l->name, t->hl_images, t->c->batch, t->c->batch);
    cg_harness_opts ho = {0, t->hl_images, CHECK_IMAGES, 2, (int)t->c->repeat, 1, t->c->no_cache};
    if (cg_harness_layer_open(&t->hl, t->s, t->li, &ho, e)) return -1;
    t->hl_layer = t->li;
    return 0;
}

/* cg_tune_ops.run: candidate i, the j-th of the batch, checked against the CPU
 * reference by the kernel harness and timed (retime: one re-timing pass,
 * timed only); its outcome into its entry. */
static int op_run(void *ctx, cg_tune_layer *L, int j, int i, int retime, cg_err *e)
{
    tuner *t = ctx;
    cg_tune_batch *b = &t->b;
    cg_tune_cand *x = &L->c[i];
    int k = b->slot[j];
    if (k < 0) return 0; /* dropped by cg_tune_compile; its status and reason say why */
    cg_harness_result *r = t->r;
    cg_err he = {{0}};
    if (layer_harness(t, e)) return -1;
    /* a re-timing pass times a candidate checked before, and only times it */
    int (*measure)(cg_harness_layer *, const cg_gen_kernel *, const cg_kernel_launch *, const cg_buf *, int,
                   cg_harness_result *, cg_err *) = retime ? cg_harness_layer_time : cg_harness_layer_run;
    if (measure(t->hl, &b->out->k[k], &b->kl[j], &b->jr.k[k].image, (int)t->c->repeat, r, &he)) {
        x->status = CG_TUNE_RUN_FAILED;
        snprintf(x->reason, sizeof x->reason, "%.250s", he.msg);
        if (++t->run_failures >= RUN_FAILURES_MAX)
            return cg_fail(e, "%d candidates in a row failed on the device, the last with: %s", t->run_failures,
                           he.msg);
        return 1;
    }
    t->run_failures = 0;
    const double scale = (double)t->c->batch / (double)t->hl_images; /* 1 but where the layer times fewer */
    if (r->local_bytes > 0 && !b->jr.k[k].log.len) {
        /* a cached image carries no ptxas log: local memory is the spill's trace */
        x->status = CG_TUNE_SPILLED;
        snprintf(x->reason, sizeof x->reason, "%d bytes of local memory per thread", r->local_bytes);
    } else if (!r->diff.ok) {
        x->status = CG_TUNE_WRONG;
        snprintf(x->reason, sizeof x->reason, "disagrees with the CPU reference: rel L2 %.3g, %lld unwritten",
                 r->diff.rel_l2, r->diff.nonfinite);
    } else if (retime) {
        x->retime_ms = r->t.median * scale; /* the first timing stays for the CSV */
    } else {
        x->status = CG_TUNE_OK;
        x->ms = r->t.median * scale, x->q1 = r->t.q1 * scale, x->q3 = r->t.q3 * scale, x->tflops = r->tflops;
    }
    return 1;
}

/* The search of docs/tuning.md for one layer (cg_tune_search), within its deadline. */
static int search(tuner *t, layer_run *lr, double deadline, cg_err *e)
{
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = nproc < 1 ? 1 : nproc > CG_JIT_MAX_THREADS ? CG_JIT_MAX_THREADS : (int)nproc;
    /* a re-timing pass launches as often as a first timing, without the check:
     * guess it costs as much until one is seen */
    cg_tune_plan p = {(int)t->c->sample, (int)t->c->top, RETIME_PASSES, threads, BATCH_MAX, 1.0};
    cg_tune_ops ops = {t, op_now, op_compile, op_run, op_release, op_progress};
    t->li = lr->li;
    if (!t->r && !(t->r = malloc(sizeof *t->r))) return cg_fail(e, "out of memory"), -1;
    if (layer_harness(t, e)) return -1;
    return cg_tune_search(&lr->t, &p, &ops, &t->cost, deadline, e);
}

/* The device's FP32 FMA peak in TFLOP/s (SMs x FP32 lanes x 2 x SM clock, as
 * bench/compare.py counts it), for tools/plot_tune.py's floor; 0 when the
 * driver reports no clock. */
static double fp32_peak(const cg_cu *cu)
{
    int lanes = cu->cc == 60 || cu->cc == 70 || cu->cc == 75 || cu->cc == 80 ? 64 : 128;
    return (double)cu->sm_count * lanes * 2 * cu->clock_khz * 1e3 / 1e12;
}

/* One CSV row per candidate of the layer, in the search's order. */
static void csv_rows(FILE *f, const cg_layer *l, const layer_run *lr, double peak)
{
    for (int i = 0; i < lr->t.n; i++) {
        const cg_tune_cand *x = &lr->t.c[i];
        fprintf(f, "%s,%s,\"%s\",%s,%.3f,%.6g,%.6g,%.6g,%.6g,%.4g,\"", l->name, x->tpl, x->params,
                cg_tune_status_name(x->status), x->compile_ms, x->ms, x->q3 - x->q1, x->retime_ms,
                cg_tune_score(x), x->tflops);
        for (const char *p = x->reason; *p; p++) fputs(*p == '"' ? "\"\"" : (char[2]){*p, 0}, f);
        fprintf(f, "\",%s,%.4g,%.6g\n", i == lr->t.def ? "default" : "", peak, x->cost);
    }
}

/* The record's entry for a measured layer; 0 when nothing was right. */
static int entry_of(const tuner *t, const layer_run *lr, cg_tune_entry *en, cg_err *e)
{
    int top[CG_TUNE_RUNNERS + 1];
    int k = cg_tune_best(lr->t.c, lr->t.n, CG_TUNE_RUNNERS + 1, top);
    if (!k) return 0;
    const cg_layer *l = &t->s->layers[lr->li];
    memset(en, 0, sizeof *en);
    cg_tune_signature(l, en->sig, sizeof en->sig);
    en->bucket = t->tg.batch; /* the bucket of --batch, 0 for the large batch */
    snprintf(en->layer, sizeof en->layer, "%s", l->name);
    en->measured = lr->t.measured, en->candidates = lr->t.n;
    for (int j = 0; j < k; j++) {
        cg_tune_choice *ch = j ? &en->runner[en->nrunners++] : &en->winner;
        snprintf(ch->tpl, sizeof ch->tpl, "%s", lr->t.c[top[j]].tpl);
        snprintf(ch->params, sizeof ch->params, "%s", lr->t.c[top[j]].params);
        ch->ms = cg_tune_score(&lr->t.c[top[j]]);
    }
    double d = cg_tune_score(&lr->t.c[lr->t.def]);
    en->default_ms = isfinite(d) ? d : 0;
    cg_gen_kernel kk;
    cg_kernel_launch kl;
    if (cg_gen_emit_one_for(t->s, &t->tg, lr->li, en->winner.tpl, en->winner.params, &kk, &kl, e)) return -1;
    snprintf(en->tpl_hash, sizeof en->tpl_hash, "%s", kk.tpl_hash);
    cg_tune_kernel_hash(kk.source, en->kernel_hash);
    cg_gen_kernel_free(&kk);
    return 1;
}

/* Tune one layer: its candidate table, the search, the CSV rows, the record entry. */
static int tune_layer(tuner *t, int li, double deadline, cg_tune_record *rec, cg_err *e)
{
    layer_run lr;
    memset(&lr, 0, sizeof lr);
    lr.li = li;
    t->t0 = now_s();
    const cg_layer *l = &t->s->layers[li];
    int rc = 0;
    for (const char *const *tp = cg_tune_templates(l); !rc && *tp; tp++) {
        cg_candidates cs;
        cg_err ce = {{0}};
        if (cg_gen_candidates_for(t->s, &t->tg, li, *tp, 0, t->c->batch, &cs, &ce)) continue; /* the template serves no such layer */
        /* parameters the template declares `tune = false` (conv2d_direct's fuse) come
         * at their default only: the enumerator already leaves the others out */
        for (int j = 0; !rc && j < cs.n; j++) rc = add_cand(&lr, *tp, &cs.c[j]);
        cg_candidates_free(&cs);
    }
    /* the order the search measures them in: the templates' cost model */
    if (!rc) rc = cg_tune_order(lr.t.c, lr.t.n);
    /* the configuration the layer gets untuned */
    cg_gen_kernel dk;
    cg_kernel_launch dl;
    if (!rc && cg_gen_emit_one_for(t->s, &t->tg, li, NULL, NULL, &dk, &dl, e)) rc = -1;
    if (!rc) {
        lr.t.def = -1;
        for (int j = 0; j < lr.t.n && lr.t.def < 0; j++)
            if (!strcmp(lr.t.c[j].tpl, dk.tpl) && !strcmp(lr.t.c[j].params, dl.params)) lr.t.def = j;
        cg_candidate dc = {{0}, -1};
        snprintf(dc.params, sizeof dc.params, "%s", dl.params);
        if (lr.t.def < 0) lr.t.def = lr.t.n, rc = add_cand(&lr, dk.tpl, &dc);
        cg_gen_kernel_free(&dk);
    }
    if (rc && !e->msg[0]) cg_fail(e, "out of memory");
    if (!rc) rc = search(t, &lr, deadline, e);
    if (!rc) progress(t, &lr.t, 1);
    if (!rc && t->csv) csv_rows(t->csv, l, &lr, fp32_peak(t->cu));
    cg_tune_entry en;
    int got = rc ? 0 : entry_of(t, &lr, &en, e);
    if (got < 0) rc = -1;
    if (got > 0) t->cut[rec->n] = lr.t.cut, rec->e[rec->n++] = en;
    if (!rc && !got && !lr.t.measured) printf("%-12s the budget was spent before any candidate: untuned\n", l->name);
    else if (!rc && !got) printf("%-12s no candidate compiled and agreed with the CPU reference\n", l->name);
    free(lr.t.c);
    return rc;
}

/* The entry of rec for layer l's shape at bucket, or NULL. */
static const cg_tune_entry *entry_for(const cg_tune_record *rec, const cg_layer *l, int bucket)
{
    char sig[CG_TUNE_SIG];
    cg_tune_signature(l, sig, sizeof sig);
    return cg_tune_entry_find(rec, sig, bucket);
}

/* The record at path keeps what this run (for bucket) did not measure when it was
 * made on this device by this convgen (else it is replaced whole, as it would be
 * ignored anyway): its entries for other buckets, and with --layers (layers_only)
 * this bucket's for the other layers' shapes (cg_tune_merge). replaced[i], for each
 * of this run's entries (rec's before the merge): it replaces one of the record's. */
static void keep_others(cg_tune_record *rec, const char *path, int bucket, int layers_only, unsigned char *replaced)
{
    memset(replaced, 0, (size_t)rec->n);
    cg_tune_record *old = malloc(sizeof *old);
    cg_err e = {{0}};
    if (!old || access(path, F_OK) || cg_tune_read(path, old, &e) || strcmp(old->version, rec->version) ||
        strcmp(old->device, rec->device) || old->cc != rec->cc) {
        if (e.msg[0]) fprintf(stderr, "convgen: %s is replaced: %s\n", path, e.msg);
        free(old);
        return;
    }
    for (int i = 0; i < rec->n; i++) replaced[i] = cg_tune_entry_find(old, rec->e[i].sig, bucket) != NULL;
    /* and its whole-network decisions for other buckets (this run's is measured
     * again after, against the per-layer kernels as now chosen) */
    cg_tune_merge(rec, old, bucket, layers_only);
    free(old);
}

/* The summary table of what the record holds, and how much was measured. */
static void summary(const cg_tune_record *r, const int *cut)
{
    long long measured = 0, total = 0;
    int ncut = 0;
    printf("\n%-12s %9s  %-48s %10s %10s %8s\n", "layer", "measured", "best template and parameters", "best ms",
           "default ms", "speed-up");
    for (int i = 0; i < r->n; i++) {
        const cg_tune_entry *t = &r->e[i];
        char best[CG_PARAMS_TEXT + 70], m[40];
        snprintf(best, sizeof best, "%s %s", t->winner.tpl, t->winner.params);
        snprintf(m, sizeof m, "%lld/%lld%s", t->measured, t->candidates, cut[i] ? "*" : "");
        measured += t->measured, total += t->candidates, ncut += cut[i];
        if (t->default_ms > 0)
            printf("%-12s %9s  %-48s %10.4f %10.4f %7.2fx\n", t->layer, m, best, t->winner.ms, t->default_ms,
                   t->default_ms / t->winner.ms);
        else printf("%-12s %9s  %-48s %10.4f %10s %8s\n", t->layer, m, best, t->winner.ms, "failed", "-");
    }
    printf("measured %lld of %lld candidates", measured, total);
    if (ncut) printf("; * the budget ended the search of %d layer%s (docs/tuning.md)", ncut, ncut > 1 ? "s" : "");
    printf("\n");
}

/* convgen tune SPEC [-o FILE] [--layers a,b] [--budget S] [--batch N] [--repeat R]
 *              [--top K] [--sample N] [--csv FILE] [--no-cache] [--no-verify] [--list [--arch CC]] */
int cg_cmd_tune(int argc, char **argv, cg_err *e)
{
    tune_cli c;
    int rc = parse(argc, argv, &c, e);
    if (rc || c.help) return rc;
    cg_spec *s = malloc(sizeof *s);
    if (!s) return cg_fail(e, "out of memory"), CG_EXIT_IO;
    if (cg_spec_load(c.spec, s, e) || check_layers(s, c.layers, e)) return free(s), CG_EXIT_INPUT;
    if (c.list) {
        rc = list(s, &c, e) ? CG_EXIT_INPUT : 0;
        return free(s), rc;
    }
    char out[CG_PATH_MAX + 32];
    if (c.out) snprintf(out, sizeof out, "%s", c.out);
    else cg_tune_default_path(c.spec, out, sizeof out);
    /* paths convgen will not write are reported now, not after the tuning; the
     * record (read back with --layers) is no file the CSV may replace */
    const char *inputs[] = {c.spec, s->weights[0] ? s->weights : NULL, out};
    const char *what[] = {"the spec", "the spec's weights", "the tuning record"};
    if (cg_check_output_file(out, e) || (c.csv && cg_check_output_file(c.csv, e))) rc = CG_EXIT_USAGE;
    if (!rc) rc = cg_opt_not_input("-o", out, inputs, what, 2, e);
    if (!rc && c.csv) rc = cg_opt_not_input("--csv", c.csv, inputs, what, 3, e);
    if (!rc && c.csv && !strcmp(c.csv, out))
        rc = (cg_fail(e, "--csv %s: is the tuning record too; write the CSV elsewhere", c.csv), CG_EXIT_USAGE);
    if (rc) return free(s), rc;

    tuner t;
    memset(&t, 0, sizeof t);
    t.s = s, t.c = &c, t.tty = isatty(STDOUT_FILENO);
    t.hl_layer = -1;
    double start = now_s(); /* the budget counts from here: device and NVRTC start-up included */
    cg_err ge = {{0}};
    if (cg_cu_open(&t.cu, 0, &ge)) {
        free(s);
        return cg_fail(e, "tune measures on a GPU and found none: %s", ge.msg), CG_EXIT_DEVICE;
    }
    rc = cg_nvrtc_open(&t.nv, e) ? CG_EXIT_DEVICE : 0;
    t.jo.cc = t.cu->cc, t.jo.driver_version = t.cu->driver_version;
    /* candidates are enumerated, checked and generated for this device's limits */
    if (!rc && cg_jit_target(t.nv, t.cu, &t.jo.arch, &t.jo.as_ptx, &t.tg, e)) rc = CG_EXIT_DEVICE;
    /* generated for the bucket of --batch (1, 8, 64, 256, 1024; above, the large batch's), as a
     * network launched with that many images is */
    t.tg.batch = cg_batch_bucket(c.batch);
    cg_err ce;
    if (!rc && !c.no_cache && cg_cache_dir(t.cache_dir, sizeof t.cache_dir, &ce) == 0) t.jo.cache_dir = t.cache_dir;
    /* the CSV is gathered in memory and written as the record is (cg_write_file_atomic) */
    char *csv_text = NULL;
    size_t csv_len = 0;
    if (!rc && c.csv && !(t.csv = open_memstream(&csv_text, &csv_len)))
        rc = (cg_fail(e, "%s: out of memory", c.csv), CG_EXIT_IO);
    if (t.csv)
        fputs("layer,template,params,status,compile_ms,median_ms,iqr_ms,retime_ms,score_ms,tflops,reason,default,"
              "peak_tflops,model\n",
              t.csv);
    cg_tune_record *rec = calloc(1, sizeof *rec);
    if (!rc && !rec) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    if (!rc) {
        snprintf(rec->version, sizeof rec->version, "%s", CG_VERSION);
        snprintf(rec->device, sizeof rec->device, "%s", t.cu->name);
        rec->cc = t.cu->cc, rec->sms = t.cu->sm_count, rec->driver = t.cu->driver_version;
        snprintf(rec->network, sizeof rec->network, "%s", s->name);
        rec->batch = c.batch;
        printf("tuning %s on %s (sm_%d, %d SMs), batch %lld, budget %llds\n", s->name, t.cu->name, t.cu->cc,
               t.cu->sm_count, c.batch, c.budget);
    }
    int left = 0;
    for (int i = 0; i < s->nlayers; i++) left += wanted(&s->layers[i], c.layers);
    for (int i = 0; !rc && i < s->nlayers; i++) {
        if (!wanted(&s->layers[i], c.layers)) continue;
        const cg_tune_entry *same = entry_for(rec, &s->layers[i], t.tg.batch);
        if (same) {
            /* one entry per shape: a layer shaped like one tuned already takes its choice */
            printf("%-12s the same shape as %s: its choice applies\n", s->layers[i].name, same->layer);
            left--;
            continue;
        }
        double share = (start + c.budget - now_s()) / left--;
        if (tune_layer(&t, i, now_s() + (share > 0 ? share : 0), rec, e)) rc = CG_EXIT_DEVICE;
    }
    if (!rc) {
        summary(rec, t.cut);
        printf("tuned in %.1f s\n", now_s() - start);
    }
    /* the rows measured so far are written even when tuning failed part way */
    if (t.csv) {
        cg_err ce2;
        int bad = fclose(t.csv) ? cg_fail(&ce2, "%s: out of memory", c.csv)
                                : cg_write_file_atomic(c.csv, csv_text, csv_len, &ce2);
        if (bad && !rc) rc = CG_EXIT_IO, *e = ce2;
        else if (bad) fprintf(stderr, "convgen: %s\n", ce2.msg);
        free(csv_text);
    }
    /* this run's entries are rec's first nfresh; the older record's follow them */
    int nfresh = rec ? rec->n : 0;
    unsigned char replaced[CG_TUNE_ENTRIES_MAX];
    if (!rc) keep_others(rec, out, t.tg.batch, c.layers != NULL, replaced);
    /* the network with this run's entries against the network without them (the
     * entries that do not make it faster dropped), the whole-network step on what
     * is left, and the write (runtime/cli/tune_verify.c) */
    if (!rc) {
        cg_harness_layer_close(t.hl), t.hl = NULL;
        cg_tune_finish_opts fo = {t.cu->name, t.cu->cc, 0, c.no_cache, c.no_verify, c.batch};
        rc = cg_tune_finish(s, rec, nfresh, replaced, &fo, out, e);
    }
    if (!rc) printf("record written to %s%s\n", out, c.csv ? ", every candidate to the CSV" : "");
    free(rec);
    cg_harness_layer_close(t.hl);
    free(t.r);
    if (t.nv) cg_nvrtc_close(t.nv);
    cg_cu_close(t.cu);
    free(s);
    return rc;
}
