/* tune.c — the parts of tuning that need no GPU (see tune.h): signatures,
 * search order, choice, the record and its application to a spec. */
#include "tune.h"
#include "aot.h"
#include "convgen.h"
#include "harness.h"
#include "lua_host.h"
#include "op.h"
#include "spec_yaml.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- identity ---- */

void cg_tune_signature(const cg_layer *l, char *out, size_t n)
{
    /* padding, stride and pools other than max2 follow only where a layer has them,
     * so the records of valid stride-1 layers keep their signatures */
    char tag[96] = "";
    if (l->op == CG_OP_CONV) cg_conv_tag(l, tag, sizeof tag);
    int pool = l->op == CG_OP_CONV && l->pool ? (l->pool_op == CG_POOL_MAX && l->pool == 2 ? 2 : 1) : 0;
    /* a precision other than fp32 follows too: its kernels differ (conv2d_igemm_tc's one TF32 product) */
    char prec[32] = "";
    if (l->precision != CG_PREC_FP32 && (l->op == CG_OP_CONV || l->op == CG_OP_FC))
        snprintf(prec, sizeof prec, " precision=%s", cg_precision_name(l->precision));
    snprintf(out, n, "%s C=%d H=%d W=%d M=%d K=%d pool=%d act=%s bias=%d out=%d%s%s", cg_op_name(l->op), l->C, l->H,
             l->W, l->op == CG_OP_CONV ? l->M : 0, l->op == CG_OP_CONV ? l->K : 0, pool, cg_act_name(l->act),
             l->bias, l->op == CG_OP_FC ? l->out : 0, tag, prec);
}

/* The templates tuning measures, by op: every embedded template of the op's
 * family, the .lua files in its folder (templates/conv2d/ for "conv2d_", as
 * cg_template_path places them), in the embedded order (sorted by path), found
 * once; a record names one of them by template name ("conv2d_direct"). */
#define TUNE_TPL_MAX 32
static char tpl_names[CG_OP_COUNT][TUNE_TPL_MAX][CG_NAME_MAX];
static const char *tpl_lists[CG_OP_COUNT][TUNE_TPL_MAX + 1];
static pthread_once_t tpl_once = PTHREAD_ONCE_INIT;

static void find_templates(void)
{
    for (int op = 0; op < CG_OP_COUNT; op++) {
        const char *fam = cg_ops[op].family;
        size_t flen = fam ? strlen(fam) : 0;
        int n = 0;
        for (const cg_embedded_file *f = cg_embedded_templates; fam && f->path && n < TUNE_TPL_MAX; f++) {
            char *name = tpl_names[op][n];
            if (cg_template_name(f->path, name, CG_NAME_MAX) < 0 || strncmp(name, fam, flen) ||
                strchr(name, '/') || !name[flen])
                continue;
            tpl_lists[op][n] = name;
            n++;
        }
        tpl_lists[op][n] = NULL;
    }
}

const char *const *cg_tune_templates(const cg_layer *l)
{
    static const char *const none[] = {NULL};
    pthread_once(&tpl_once, find_templates);
    return (unsigned)l->op < CG_OP_COUNT ? tpl_lists[l->op] : none;
}

/* ---- outcomes and choice ---- */

long long cg_tune_layer_images(const cg_layer *l, long long batch)
{
    long long most = cg_layer_in_elems(l), out = cg_layer_out_elems(l);
    if (out > most) most = out;
    cg_layer kl; /* an unfused kernel's output (a conv's before its pool) */
    cg_harness_kernel_layer(l, 0, &kl);
    if (cg_layer_out_elems(&kl) > most) most = cg_layer_out_elems(&kl);
    long long fit = most > 0 ? 2147483647LL / most : batch;
    return batch < fit ? batch : fit > 0 ? fit : 1;
}

const char *cg_tune_status_name(cg_tune_status s)
{
    static const char *const names[] = {"pending", "ok", "compile-failed", "spilled", "wrong", "run-failed"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

double cg_tune_score(const cg_tune_cand *c)
{
    if (c->status != CG_TUNE_OK) return INFINITY;
    double t = c->retime_ms > 0 ? c->retime_ms : c->ms;
    return t > 0 && isfinite(t) ? t : INFINITY;
}

/* Whether candidate a ranks before b: re-timed ones before the rest (their
 * medians rest on more repeats, and only they were compared in the final
 * round), then by score, then by index. */
static int ranks_before(const cg_tune_cand *c, int a, int b)
{
    int ra = c[a].retime_ms > 0, rb = c[b].retime_ms > 0;
    if (ra != rb) return ra;
    double sa = cg_tune_score(&c[a]), sb = cg_tune_score(&c[b]);
    return sa < sb || (sa == sb && a < b);
}

/* The winner among c[0..n): of the candidates of the best one's kind
 * (re-timed or not) that score within CG_TUNE_MARGIN of it, the one with the
 * lowest index (the earliest in the model's order); -1 when none is OK. */
static int winner(const cg_tune_cand *c, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (isfinite(cg_tune_score(&c[i])) && (best < 0 || ranks_before(c, i, best))) best = i;
    if (best < 0) return -1;
    double lim = cg_tune_score(&c[best]) * (1 + CG_TUNE_MARGIN);
    int kind = c[best].retime_ms > 0;
    for (int i = 0; i < best; i++)
        if ((c[i].retime_ms > 0) == kind && cg_tune_score(&c[i]) <= lim) return i;
    return best;
}

int cg_tune_best(const cg_tune_cand *c, int n, int k, int *idx)
{
    int w = k > 0 ? winner(c, n) : -1;
    if (w < 0) return 0;
    idx[0] = w;
    int m = 1;
    for (int i = 0; i < n; i++) {
        if (i == w || !isfinite(cg_tune_score(&c[i]))) continue;
        /* insertion into the sorted idx[1..m) */
        int at = m;
        while (at > 1 && ranks_before(c, i, idx[at - 1])) at--;
        if (at >= k) continue;
        int last = m < k ? m : k - 1;
        for (int j = last; j > at; j--) idx[j] = idx[j - 1];
        idx[at] = i;
        if (m < k) m++;
    }
    return m;
}

/* ---- one compile batch ---- */

int cg_tune_compile(const cg_spec *s, const cg_target *tg, int li, cg_tune_cand *c, const int *idx, int m, cg_nvrtc *nv,
                    const cg_jit_opts *jo, cg_tune_batch *b, cg_err *e)
{
    memset(b, 0, sizeof *b);
    b->m = m;
    b->out = calloc(1, sizeof *b->out);
    b->kl = calloc((size_t)(m ? m : 1), sizeof *b->kl);
    b->slot = calloc((size_t)(m ? m : 1), sizeof *b->slot);
    if (!b->out || !b->kl || !b->slot || m > CG_MAX_KERNELS) return cg_fail(e, "out of memory"), -1;
    /* one sandbox for the batch: the templates imported once (NULL where it cannot
     * be opened: each emission then opens its own) */
    cg_gen_emitter *em = NULL;
    cg_err oe = {{0}};
    if (cg_gen_emitter_open(&em, &oe)) em = NULL;
    for (int j = 0; j < m; j++) {
        cg_tune_cand *x = &c[idx[j]];
        cg_err ge = {{0}};
        b->slot[j] = -1;
        if (cg_gen_emit_one_with(em, s, tg, li, x->tpl, x->params, &b->out->k[b->out->nkernels], &b->kl[j], &ge)) {
            x->status = CG_TUNE_COMPILE_FAILED;
            snprintf(x->reason, sizeof x->reason, "generate: %.240s", ge.msg);
        } else b->slot[j] = b->out->nkernels++;
    }
    cg_gen_emitter_close(em);
    cg_err je = {{0}};
    if (b->out->nkernels) (void)cg_jit_build(nv, b->out, jo, &b->jr, &je); /* failures are per kernel */
    for (int j = 0; j < m; j++) {
        cg_tune_cand *x = &c[idx[j]];
        int k = b->slot[j];
        if (k < 0) continue;
        if (k >= b->jr.n) {
            x->status = CG_TUNE_COMPILE_FAILED;
            snprintf(x->reason, sizeof x->reason, "compile: %.240s", je.msg);
            b->slot[j] = -1;
            continue;
        }
        const cg_jit_kernel *jk = &b->jr.k[k];
        x->compile_ms = jk->ms;
        int dropped = 1;
        cg_nvrtc_stats st;
        memset(&st, 0, sizeof st);
        if (!jk->failed && jk->log.len) cg_nvrtc_parse_log(jk->log.data, &st);
        if (jk->failed) {
            x->status = CG_TUNE_COMPILE_FAILED;
            snprintf(x->reason, sizeof x->reason, "%.250s", jk->err.msg);
        } else if (st.spill_stores > 0 || st.spill_loads > 0) {
            x->status = CG_TUNE_SPILLED;
            snprintf(x->reason, sizeof x->reason, "ptxas: %ld bytes spill stores, %ld bytes spill loads",
                     st.spill_stores, st.spill_loads);
        } else dropped = 0; /* a candidate being re-timed keeps its status */
        if (dropped) b->slot[j] = -1;
    }
    return 0;
}

void cg_tune_batch_free(cg_tune_batch *b)
{
    if (b->jr.k) cg_jit_free(&b->jr);
    if (b->out)
        for (int k = 0; k < b->out->nkernels; k++) cg_gen_kernel_free(&b->out->k[k]);
    free(b->out), free(b->kl), free(b->slot);
    memset(b, 0, sizeof *b);
}

/* ---- search order ---- */

/* A candidate's place in the search order: its template (the index of the
 * template's first candidate), its rank in that template's list by the cost
 * model, its place in the list as given. */
typedef struct {
    int group, rank, at;
    double cost;
} order_key;

/* By template, then cost (-1 for no model: all equal), then the list's order. */
static int by_group_cost(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* Each template's cheapest first, in template order; then the rest by cost,
 * equal costs by template, then the list's order. */
static int by_cost(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if ((x->rank > 0) != (y->rank > 0)) return x->rank > 0 ? 1 : -1;
    if (x->rank == 0 && x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* By rank in its template's list, then template: the templates in turn (for a
 * layer where some template has no cost model, whose costs cannot be compared). */
static int by_rank(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

int cg_tune_order(cg_tune_cand *c, int n)
{
    if (n <= 1) return 0;
    order_key *k = malloc((size_t)n * sizeof *k);
    int *first = malloc((size_t)n * sizeof *first); /* each template's first candidate */
    cg_tune_cand *tmp = malloc((size_t)n * sizeof *tmp);
    int groups = 0, modelled = 1, rc = k && first && tmp ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        int g = 0;
        while (g < groups && strcmp(c[first[g]].tpl, c[i].tpl)) g++;
        if (g == groups) first[groups++] = i;
        k[i] = (order_key){first[g], 0, i, c[i].cost};
        modelled &= c[i].cost >= 0;
    }
    if (!rc) {
        qsort(k, (size_t)n, sizeof *k, by_group_cost);
        for (int i = 1; i < n; i++) k[i].rank = k[i].group == k[i - 1].group ? k[i - 1].rank + 1 : 0;
        qsort(k, (size_t)n, sizeof *k, modelled ? by_cost : by_rank);
        for (int i = 0; i < n; i++) tmp[i] = c[k[i].at];
        memcpy(c, tmp, (size_t)n * sizeof *c);
    }
    free(k), free(first), free(tmp);
    return rc;
}

/* The next "key=value" of "k=v k=v" text (commas also separate) at *p: its
 * key and value as pointers and lengths, *p moved past it; 0 at the end.
 * A word without '=' is skipped. */
static int next_param(const char **p, const char **k, size_t *kl, const char **v, size_t *vl)
{
    const char *q = *p;
    for (;;) {
        while (*q == ' ' || *q == ',') q++;
        if (!*q) return *p = q, 0;
        *k = q;
        while (*q && *q != '=' && *q != ' ' && *q != ',') q++;
        *kl = (size_t)(q - *k);
        if (*q != '=') continue;
        *v = ++q;
        while (*q && *q != ' ' && *q != ',') q++;
        *vl = (size_t)(q - *v);
        *p = q;
        return 1;
    }
}

/* The value of parameter key in "k=v k=v" text, or NULL. */
static const char *param_value(const char *text, const char *key, size_t keylen, size_t *vlen)
{
    const char *p = text, *k, *v;
    size_t kl, vl;
    while (next_param(&p, &k, &kl, &v, &vl))
        if (kl == keylen && !strncmp(k, key, kl)) return *vlen = vl, v;
    return NULL;
}

int cg_tune_one_step(const char *a, const char *b)
{
    int differ = 0, na = 0;
    const char *p = a, *k, *v;
    size_t kl, vl;
    while (next_param(&p, &k, &kl, &v, &vl)) {
        size_t bl = 0;
        const char *bv = param_value(b, k, kl, &bl);
        na++;
        if (!bv) return 0; /* another parameter set: another template */
        if (bl != vl || strncmp(v, bv, vl)) differ++;
    }
    /* the same keys on both sides */
    int nb = 0;
    for (const char *q = b; *q; q++) nb += *q == '=';
    return na == nb && differ == 1;
}

/* ---- the search of one layer within its budget ---- */

/* One layer's search: what it plans with and what it has learnt. */
typedef struct {
    cg_tune_layer *lr;
    const cg_tune_plan *p;
    const cg_tune_ops *o;
    cg_tune_costs *cost;
    double deadline;
    double run_sum; /* this layer's first timings, for its own mean */
    int runs;
    unsigned char *seen; /* per candidate: compiled before in this search (a cache hit now) */
} searcher;

/* The running mean after adding x to n values whose mean was m. */
static double mean_add(double m, int n, double x)
{
    return (m * n + x) / (n + 1);
}

/* The time on the search's clock (ops->now). */
static double clock_now(const searcher *s)
{
    return s->o->now(s->o->ctx);
}

/* Kernels compiled at once (at least one). */
static int threads_of(const searcher *s)
{
    return s->p->threads > 0 ? s->p->threads : 1;
}

/* Re-timing passes planned (at least one). */
static int passes_of(const searcher *s)
{
    return s->p->passes > 0 ? s->p->passes : 1;
}

/* The expected cost of one candidate's check and first timing: this layer's
 * mean once it has one, else the last layer's. */
static double est_run(const searcher *s)
{
    return s->runs ? s->run_sum / s->runs : s->cost->run_s;
}

/* The expected cost of one re-timing pass of one candidate: a first timing's,
 * times the ratio seen so far (before any, the plan's guess). */
static double est_pass(const searcher *s)
{
    return est_run(s) * (s->cost->passes ? s->cost->pass_ratio : s->p->pass_factor);
}

/* The expected cost of compiling one candidate compiled before (a cache hit,
 * unless the cache is off): as seen, else a compile round. */
static double est_hit(const searcher *s)
{
    return s->cost->hits ? s->cost->hit_s : s->cost->round_s;
}

/* The expected cost of compiling m candidates, `fresh` of them new to this
 * search: rounds for those, cache hits for the others (no more than rounds:
 * without the cache a hit is a compile). */
static double est_compile_n(const searcher *s, int fresh, int m)
{
    int th = threads_of(s);
    double hits = (m - fresh) * est_hit(s), rounds = (double)((m - fresh + th - 1) / th) * s->cost->round_s;
    return (fresh + th - 1) / th * s->cost->round_s + (hits < rounds ? hits : rounds);
}

/* The expected cost of compiling idx[0..m). */
static double est_compile(const searcher *s, const int *idx, int m)
{
    int fresh = 0;
    for (int j = 0; j < m; j++) fresh += !s->seen[idx[j]];
    return est_compile_n(s, fresh, m);
}

/* Whether re-timing k candidates (compiled before) in np passes fits before the deadline. */
static int retime_fits(const searcher *s, int k, int np)
{
    return clock_now(s) + est_compile_n(s, 0, k) + (double)k * np * est_pass(s) <= s->deadline;
}

/* Seconds kept for the re-timing that ends the search: its compile and every
 * pass of the top few plus the default. */
static double reserve(const searcher *s)
{
    int k = s->p->top + 1;
    return est_compile_n(s, 0, k) + (double)k * passes_of(s) * est_pass(s);
}

/* Whether nothing at all is known of the costs yet (the run's first layer,
 * before its calibration). */
static int calibrating(const searcher *s)
{
    return !s->cost->rounds;
}

/* A compile of m candidates, all compiled before in this search (cache hits),
 * that took dt. */
static void learn_hit(searcher *s, double dt, int m)
{
    s->cost->hit_s = mean_add(s->cost->hit_s, s->cost->hits, dt / m);
    s->cost->hits++;
}

/* Compile idx[0..m) through the ops, learning what it cost: rounds of one
 * kernel per thread for those new to this search, cache hits for the others. */
static int compile(searcher *s, const int *idx, int m, cg_err *e)
{
    int fresh = 0, th = threads_of(s);
    for (int j = 0; j < m; j++) fresh += !s->seen[idx[j]];
    double t = clock_now(s);
    s->lr->fresh = fresh > 0;
    if (s->o->compile(s->o->ctx, s->lr, idx, m, e)) return -1;
    double dt = clock_now(s) - t;
    for (int j = 0; j < m; j++) s->seen[idx[j]] = 1;
    if (!fresh) return learn_hit(s, dt, m), 0;
    if (s->cost->hits) dt -= (m - fresh) * s->cost->hit_s;
    s->cost->round_s = mean_add(s->cost->round_s, s->cost->rounds, (dt > 0 ? dt : 0) / ((fresh + th - 1) / th));
    s->cost->rounds++;
    return 0;
}

/* A check and first timing that took dt: this layer's mean, and the carried one. */
static void learn_run(searcher *s, double dt)
{
    s->run_sum += dt, s->runs++;
    s->cost->run_s = s->run_sum / s->runs, s->cost->runs++;
}

/* A re-timing pass that took dt, over a first timing's expected cost. */
static void learn_pass(searcher *s, double dt)
{
    double first = est_run(s);
    if (first <= 0) return;
    s->cost->pass_ratio = mean_add(s->cost->pass_ratio, s->cost->passes, dt / first);
    s->cost->passes++;
}

/* How many of idx[0..left) one batch takes: the most whose compile and
 * timings fit before the deadline less the reserve; 0 when not one fits.
 * Calibrating (no cost known), one compile round. */
static int batch_size(const searcher *s, const int *idx, int left)
{
    int th = threads_of(s);
    int max = left < s->p->batch_max ? left : s->p->batch_max;
    if (clock_now(s) >= s->deadline) return 0;
    if (calibrating(s)) return max < th ? max : th;
    double room = s->deadline - clock_now(s) - reserve(s);
    for (int b = max; b > 0; b--)
        if (est_compile(s, idx, b) + b * est_run(s) <= room) return b;
    return 0;
}

/* Measure those of idx[0..m) still pending, in budgeted batches: each batch
 * compiled, then its candidates checked and timed one by one while the next
 * timing fits. Sets lr->cut and returns 0 when the budget stops it. */
static int measure_list(searcher *s, int *idx, int m, cg_err *e)
{
    cg_tune_layer *lr = s->lr;
    const cg_tune_ops *o = s->o;
    int k = 0;
    for (int j = 0; j < m; j++)
        if (lr->c[idx[j]].status == CG_TUNE_PENDING) idx[k++] = idx[j];
    for (int pos = 0; pos < k;) {
        int b = batch_size(s, idx + pos, k - pos);
        if (!b) return lr->cut = 1, 0;
        if (compile(s, idx + pos, b, e)) return -1;
        int rc = 0;
        for (int j = 0; j < b && !rc; j++) {
            cg_tune_cand *x = &lr->c[idx[pos + j]];
            if (x->status == CG_TUNE_PENDING) {
                double t = clock_now(s);
                if (lr->cut || (s->cost->runs && t + est_run(s) > s->deadline - reserve(s))) {
                    lr->cut = 1; /* left pending: not measured (those the compiler dropped still count) */
                    continue;
                }
                int r = o->run(o->ctx, lr, j, idx[pos + j], 0, e);
                if (r < 0) rc = -1;
                if (r > 0) learn_run(s, clock_now(s) - t);
            }
            if (!rc) lr->measured++;
            if (o->progress) o->progress(o->ctx, lr);
        }
        o->release(o->ctx);
        if (rc) return -1;
        if (lr->cut) return 0;
        pos += b;
    }
    return 0;
}

/* The run's first measurement, when no cost is known yet: one compile round
 * of the default and the candidates that lead the order (they are measured
 * next, from the cache), the default checked and timed, then compiled once
 * more (a cache hit, as the re-timing's will be) and timed in one re-timing
 * pass. So every cost is known before anything is planned, and the first
 * layer is not planned with guesses. The default's first timing counts; the
 * pass only teaches. */
static int calibrate(searcher *s, int *idx, cg_err *e)
{
    cg_tune_layer *lr = s->lr;
    const cg_tune_ops *o = s->o;
    cg_tune_cand *x = &lr->c[lr->def];
    int d = lr->def, m = 0, r = 0;
    idx[m++] = d;
    for (int i = 0; i < lr->n && m < threads_of(s); i++)
        if (i != d) idx[m++] = i;
    lr->planned = 1;
    if (compile(s, idx, m, e)) return -1;
    if (x->status == CG_TUNE_PENDING) {
        double t = clock_now(s);
        r = o->run(o->ctx, lr, 0, d, 0, e);
        if (r > 0) learn_run(s, clock_now(s) - t);
    }
    if (r >= 0) lr->measured++;
    if (r >= 0 && o->progress) o->progress(o->ctx, lr);
    o->release(o->ctx);
    if (r < 0 || x->status != CG_TUNE_OK) return r < 0 ? -1 : 0;
    if (compile(s, &d, 1, e)) return -1;
    if (x->status == CG_TUNE_OK) {
        double t = clock_now(s);
        r = o->run(o->ctx, lr, 0, d, 1, e);
        if (r > 0) learn_pass(s, clock_now(s) - t);
        x->retime_ms = 0; /* not part of the interleaved re-timing */
    }
    o->release(o->ctx);
    return r < 0 ? -1 : 0;
}

/* Rounds of one-parameter steps around the best so far: every pending
 * candidate of its template one parameter apart, in the model's order, while a
 * round moves the best (by more than CG_TUNE_MARGIN: cg_tune_best's winner).
 * *center: the candidate the last round stepped around, -1 for none. */
static int steps(searcher *s, int *center, int *idx, cg_err *e)
{
    cg_tune_layer *lr = s->lr;
    for (;;) {
        int best, m = 0;
        if (cg_tune_best(lr->c, lr->n, 1, &best) != 1 || best == *center) return 0;
        *center = best;
        for (int i = 0; i < lr->n; i++)
            if (lr->c[i].status == CG_TUNE_PENDING && !strcmp(lr->c[i].tpl, lr->c[best].tpl) &&
                cg_tune_one_step(lr->c[i].params, lr->c[best].params))
                idx[m++] = i;
        if (!m) return 0;
        lr->planned = lr->measured + m;
        if (measure_list(s, idx, m, e)) return -1;
        if (lr->cut) return 0;
    }
}

/* Re-timing pass `pass` over idx[0..k): each OK candidate timed once, in turn,
 * starting from the pass-th (rotated, so that no candidate is always timed
 * first); its median appended to ms[j*np ..] (got[j] of them so far). */
static int retime_pass(searcher *s, const int *idx, int k, int pass, int np, double *ms, int *got, cg_err *e)
{
    cg_tune_layer *lr = s->lr;
    const cg_tune_ops *o = s->o;
    for (int jj = 0; jj < k; jj++) {
        int j = (pass + jj) % k;
        cg_tune_cand *x = &lr->c[idx[j]];
        if (x->status != CG_TUNE_OK) continue;
        x->retime_ms = 0;
        double t = clock_now(s);
        int r = o->run(o->ctx, lr, j, idx[j], 1, e);
        if (r < 0) return -1;
        if (r > 0) learn_pass(s, clock_now(s) - t);
        if (r > 0 && x->status == CG_TUNE_OK && x->retime_ms > 0) ms[j * np + got[j]++] = x->retime_ms;
        if (o->progress) o->progress(o->ctx, lr);
    }
    return 0;
}

/* Re-time idx[0..k) (OK candidates, best first) in interleaved passes, A B C,
 * B C A, C A B, ..., so that a drift of the device (clocks, temperature) hits
 * them all alike; each candidate's re-timed median is the median of its passes.
 * As many candidates (the last dropped first) and passes as the budget lets;
 * a pass starts only when all of it fits. */
static int retime(searcher *s, int *idx, int k, cg_err *e)
{
    cg_tune_layer *lr = s->lr;
    const cg_tune_ops *o = s->o;
    int np = passes_of(s);
    while (k > 1 && !retime_fits(s, k, np)) k--, lr->cut = 1;
    while (np > 1 && !retime_fits(s, k, np)) np--, lr->cut = 1;
    if (!k || !retime_fits(s, k, np)) return lr->cut = 1, 0;
    if (compile(s, idx, k, e)) return -1;
    double *ms = calloc((size_t)k * np, sizeof *ms);
    int *got = calloc((size_t)k, sizeof *got);
    int rc = ms && got ? 0 : cg_fail(e, "out of memory");
    for (int pass = 0; !rc && pass < np; pass++) {
        int live = 0;
        for (int j = 0; j < k; j++) live += lr->c[idx[j]].status == CG_TUNE_OK;
        if (!live) break;
        if (pass > 0 && clock_now(s) + live * est_pass(s) > s->deadline) {
            lr->cut = 1;
            break;
        }
        rc = retime_pass(s, idx, k, pass, np, ms, got, e);
    }
    o->release(o->ctx);
    for (int j = 0; !rc && j < k; j++) {
        cg_harness_stats st;
        cg_harness_stats_of(ms + (size_t)j * np, got[j], &st);
        lr->c[idx[j]].retime_ms = st.median; /* 0 when no pass timed it */
        lr->retimed += got[j] > 0;
    }
    free(ms), free(got);
    return rc;
}

int cg_tune_search(cg_tune_layer *lr, const cg_tune_plan *p, const cg_tune_ops *o, cg_tune_costs *cost,
                   double deadline, cg_err *e)
{
    searcher s = {lr, p, o, cost, deadline, 0, 0, NULL};
    lr->measured = lr->planned = lr->retimed = lr->cut = 0;
    if (lr->n <= 0) return 0;
    int *idx = malloc((size_t)(lr->n + 1) * sizeof *idx);
    s.seen = calloc((size_t)lr->n, 1);
    if (!idx || !s.seen) return free(idx), free(s.seen), cg_fail(e, "out of memory"), -1;
    int rc = calibrating(&s) && clock_now(&s) < deadline ? calibrate(&s, idx, e) : 0;
    /* the default first (the speed-up is measured against it), then the model's
       order p->sample at a time, each step followed by steps around the best */
    int pos = 0, center = -1, step = p->sample > 0 ? p->sample : 1;
    while (!rc && !lr->cut) {
        int m = 0;
        if (lr->c[lr->def].status == CG_TUNE_PENDING) idx[m++] = lr->def;
        for (int want = m + step; pos < lr->n && m < want; pos++)
            if (pos != lr->def && lr->c[pos].status == CG_TUNE_PENDING) idx[m++] = pos;
        if (!m) break;
        lr->planned = lr->measured + m;
        rc = measure_list(&s, idx, m, e);
        if (!rc && !lr->cut) rc = steps(&s, &center, idx, e);
    }
    /* re-time the best few, and the default beside them so that the speed-up
       compares like with like */
    int top[CG_TUNE_RUNNERS + 2];
    int t = p->top < CG_TUNE_RUNNERS + 1 ? p->top : CG_TUNE_RUNNERS + 1;
    int k = rc ? 0 : cg_tune_best(lr->c, lr->n, t, top);
    int has = 0;
    for (int j = 0; j < k; j++) has |= top[j] == lr->def;
    if (k && !has && lr->c[lr->def].status == CG_TUNE_OK) top[k++] = lr->def;
    if (k) rc = retime(&s, top, k, e);
    free(idx), free(s.seen);
    return rc;
}

/* ---- the record: writing ---- */

/* s as a double-quoted YAML scalar (backslash and quote escaped, control bytes dropped). */
static int put_quoted(cg_buf *b, const char *s)
{
    int rc = cg_buf_puts(b, "\"");
    for (; !rc && *s; s++) {
        if ((unsigned char)*s < 0x20) continue;
        if (*s == '"' || *s == '\\') rc = cg_buf_puts(b, "\\");
        if (!rc) rc = cg_buf_add(b, s, 1);
    }
    return rc ? rc : cg_buf_puts(b, "\"");
}

/* One choice's three keys at the given indentation (the first prefixed by lead). */
static int put_choice(cg_buf *b, const char *lead, const char *ind, const cg_tune_choice *c)
{
    int rc = cg_buf_printf(b, "%stemplate: %s\n%sparams: ", lead, c->tpl, ind);
    if (!rc) rc = put_quoted(b, c->params);
    if (!rc) rc = cg_buf_printf(b, "\n%sms: %.6g\n", ind, c->ms);
    return rc;
}

int cg_tune_format(const cg_tune_record *r, cg_buf *b, cg_err *e)
{
    int rc = cg_buf_printf(b,
                           "# convgen tuning record: written by `convgen tune`, used by run, check and build\n"
                           "# (docs/tuning.md). A layer takes its entry when its shape signature matches\n"
                           "# and neither its strategy nor its params are written in the spec.\n"
                           "convgen: %s\ndevice: ",
                           r->version);
    if (!rc) rc = put_quoted(b, r->device);
    if (!rc)
        rc = cg_buf_printf(b, "\ncc: %d\nsms: %d\ndriver: %d\n%s%s%sbatch: %lld\nlayers:%s\n", r->cc, r->sms, r->driver,
                           /* optional when read: a record without one is written without one */
                           r->network[0] ? "network: " : "", r->network, r->network[0] ? "\n" : "", r->batch,
                           /* no entry (every layer failed, or a whole-network decision alone):
                            * an empty sequence, which reads back, where nothing would be null */
                           r->n ? "" : " []");
    for (int i = 0; !rc && i < r->n; i++) {
        const cg_tune_entry *t = &r->e[i];
        rc = cg_buf_puts(b, "  - signature: ");
        if (!rc) rc = put_quoted(b, t->sig);
        /* the bucket it was tuned for, always written (a reader of an entry without one
         * takes the record's `batch:`) */
        if (!rc && t->bucket) rc = cg_buf_printf(b, "\n    bucket: %d", t->bucket);
        else if (!rc) rc = cg_buf_puts(b, "\n    bucket: large");
        if (!rc)
            rc = cg_buf_printf(b, "\n%s%s%s    template_hash: \"%s\"\n%s%s%s    measured: %lld\n    candidates: %lld\n",
                               t->layer[0] ? "    layer: " : "", t->layer, t->layer[0] ? "\n" : "", t->tpl_hash,
                               t->kernel_hash[0] ? "    kernel_hash: \"" : "", t->kernel_hash,
                               t->kernel_hash[0] ? "\"\n" : "", t->measured, t->candidates);
        if (!rc) rc = put_choice(b, "    ", "    ", &t->winner);
        if (!rc) rc = cg_buf_printf(b, "    default_ms: %.6g\n", t->default_ms);
        if (!rc && t->nrunners) rc = cg_buf_puts(b, "    runners_up:\n");
        for (int j = 0; !rc && j < t->nrunners; j++) rc = put_choice(b, "      - ", "        ", &t->runner[j]);
    }
    /* the whole-network decisions, where there are any (a record without them reads as before) */
    if (!rc && r->nwhole) rc = cg_buf_puts(b, "whole:\n");
    for (int i = 0; !rc && i < r->nwhole; i++) {
        const cg_whole_tuned *w = &r->whole[i];
        rc = cg_buf_printf(b, "  - bucket: %d\n    choice: %s\n    kernels: \"%s\"\n", w->bucket,
                           w->whole ? "whole" : "layers", w->kernels);
        /* a time the tuner could not take (the whole kernel refused) is left out */
        if (!rc && isfinite(w->whole_ms)) rc = cg_buf_printf(b, "    whole_ms: %.6g\n", w->whole_ms);
        if (!rc && isfinite(w->layers_ms)) rc = cg_buf_printf(b, "    layers_ms: %.6g\n", w->layers_ms);
    }
    if (rc) return cg_fail(e, "out of memory");
    return 0;
}

int cg_tune_write(const cg_tune_record *r, const char *path, cg_err *e)
{
    cg_buf b;
    cg_buf_init(&b);
    int rc = cg_tune_format(r, &b, e) || cg_write_file_atomic(path, b.data, b.len, e) ? -1 : 0;
    cg_buf_free(&b);
    return rc;
}

/* ---- the record: reading ---- */

/* A string value without control characters: what the record is written
 * back with, and what notices quote on one line. */
static int read_text(const cg_yctx *c, const cg_ynode *v, const char *key, const char *where, char *out, size_t n)
{
    if (cg_y_str(c, v, key, where, out, n)) return -1;
    for (const char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cg_y_fail(c, v->pos, "%s %s: a control character (byte 0x%02x) in '%.60s'", key, where,
                             (unsigned char)*p, out);
    return 0;
}

static const char *const choice_keys[] = {"template", "params", "ms", NULL};

/* The value of key in map: required (an error when absent) or optional
 * (NULL, no error); read by the typed reader that follows. */
#define REQ(m, key, where) cg_y_require(c, (m), (key), (where), NULL)

/* A template name as written: one of those tuning knows. */
static int read_tpl(const cg_yctx *c, const cg_ynode *v, const char *where, char *out, size_t n)
{
    if (cg_y_ident(c, v, "template", where, 0, out, n)) return -1;
    pthread_once(&tpl_once, find_templates);
    for (int op = 0; op < CG_OP_COUNT; op++)
        for (int i = 0; tpl_lists[op][i]; i++)
            if (!strcmp(tpl_lists[op][i], out)) return 0;
    const char *near = NULL;
    for (int op = 0; op < CG_OP_COUNT && !near; op++) near = cg_y_suggest(out, tpl_lists[op]);
    char buf[80];
    return cg_y_fail(c, v->pos, "unknown template '%s' %s%s%s%s", cg_y_show(out, buf, sizeof buf), where,
                     near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
}

/* A winner or runner-up: template, params, ms. */
static int read_choice(const cg_yctx *c, const cg_ynode *m, const char *where, cg_tune_choice *out)
{
    const cg_ynode *v;
    if (!(v = REQ(m, "template", where)) || read_tpl(c, v, where, out->tpl, sizeof out->tpl)) return -1;
    if (!(v = REQ(m, "params", where)) || read_text(c, v, "params", where, out->params, sizeof out->params))
        return -1;
    if (!(v = REQ(m, "ms", where)) || cg_y_float(c, v, "ms", where, &out->ms)) return -1;
    if (out->ms < 0) return cg_y_fail(c, v->pos, "'ms' %s must not be negative", where);
    return 0;
}

/* A layer entry's bucket: 1, 8, 64, 256 or 1024 (cg_batch_bucket's), or `large`
 * (0), quoted or not. */
static int read_bucket(const cg_yctx *c, const cg_ynode *v, const char *where, int *out)
{
    static const char *const names[] = {"1", "8", "64", "256", "1024", "large", NULL};
    static const int buckets[] = {1, 8, 64, 256, 1024, 0};
    if (cg_y_kind(c, v, CG_Y_SCALAR, "bucket", where, "a batch bucket")) return -1;
    for (int k = 0; names[k]; k++)
        if (!strcmp(v->text, names[k])) return *out = buckets[k], 0;
    char buf[80];
    return cg_y_fail(c, v->pos, "bucket %s: '%s' is no batch bucket (1, 8, 64, 256, 1024 or large)", where,
                     cg_y_show(v->text, buf, sizeof buf));
}

/* One entry of 'layers'; def_bucket: the bucket of one without `bucket` (the record's `batch:`'s). */
static int read_entry(const cg_yctx *c, const cg_ynode *m, int i, int def_bucket, cg_tune_entry *t)
{
    static const char *const keys[] = {"signature",  "bucket",   "layer",      "template_hash",
                                       "kernel_hash", "measured", "candidates", "template",
                                       "params",      "ms",       "default_ms", "runners_up", NULL};
    char where[64];
    snprintf(where, sizeof where, "in layers entry %d", i + 1);
    if (cg_y_kind(c, m, CG_Y_MAP, "layers", "", "a mapping") || cg_y_check_keys(c, m, keys, where)) return -1;
    const cg_ynode *v;
    if (!(v = REQ(m, "signature", where)) || read_text(c, v, "signature", where, t->sig, sizeof t->sig)) return -1;
    t->bucket = def_bucket;
    if ((v = cg_y_get(m, "bucket")) && read_bucket(c, v, where, &t->bucket)) return -1;
    if ((v = cg_y_get(m, "layer")) && cg_y_ident(c, v, "layer", where, 0, t->layer, sizeof t->layer)) return -1;
    if (!(v = REQ(m, "template_hash", where)) ||
        cg_y_str(c, v, "template_hash", where, t->tpl_hash, sizeof t->tpl_hash))
        return -1;
    /* hexadecimal, as convgen writes it (and so safe to write back between quotes) */
    if (!t->tpl_hash[0] || strspn(t->tpl_hash, "0123456789abcdef") != strlen(t->tpl_hash))
        return cg_y_fail(c, v->pos, "template_hash %s: expected hexadecimal digits, got '%s'", where, t->tpl_hash);
    if ((v = cg_y_get(m, "kernel_hash"))) {
        if (cg_y_str(c, v, "kernel_hash", where, t->kernel_hash, sizeof t->kernel_hash)) return -1;
        if (!t->kernel_hash[0] || strspn(t->kernel_hash, "0123456789abcdef") != strlen(t->kernel_hash))
            return cg_y_fail(c, v->pos, "kernel_hash %s: expected hexadecimal digits, got '%s'", where,
                             t->kernel_hash);
    }
    if ((v = cg_y_get(m, "measured")) && cg_y_int(c, v, "measured", where, 0, 1LL << 40, &t->measured)) return -1;
    if ((v = cg_y_get(m, "candidates")) && cg_y_int(c, v, "candidates", where, 0, 1LL << 40, &t->candidates))
        return -1;
    if (read_choice(c, m, where, &t->winner)) return -1;
    if ((v = cg_y_get(m, "default_ms")) && cg_y_float(c, v, "default_ms", where, &t->default_ms)) return -1;
    const cg_ynode *ru = cg_y_get(m, "runners_up");
    if (!ru) return 0;
    if (cg_y_kind(c, ru, CG_Y_SEQ, "runners_up", where, "a sequence")) return -1;
    if (ru->n > CG_TUNE_RUNNERS)
        return cg_y_fail(c, ru->pos, "'runners_up' %s holds %zu entries, at most %d are kept", where, ru->n,
                         CG_TUNE_RUNNERS);
    for (size_t j = 0; j < ru->n; j++) {
        char w2[96];
        snprintf(w2, sizeof w2, "in runner-up %zu of layers entry %d", j + 1, i + 1);
        if (cg_y_kind(c, ru->kids[j], CG_Y_MAP, "runners_up", where, "a mapping") ||
            cg_y_check_keys(c, ru->kids[j], choice_keys, w2) || read_choice(c, ru->kids[j], w2, &t->runner[j]))
            return -1;
        t->nrunners++;
    }
    return 0;
}

/* A hash as convgen writes it: hexadecimal (so safe to write back between
 * quotes), at most 16 digits. */
static int read_hex(const cg_yctx *c, const cg_ynode *v, const char *key, const char *where, char out[17])
{
    if (cg_y_str(c, v, key, where, out, 17)) return -1;
    if (!out[0] || strspn(out, "0123456789abcdef") != strlen(out))
        return cg_y_fail(c, v->pos, "%s %s: expected hexadecimal digits, got '%s'", key, where, out);
    return 0;
}

/* One entry of 'whole': a bucket's decision between the whole-network kernel and
 * the per-layer kernels. */
static int read_whole(const cg_yctx *c, const cg_ynode *m, int i, cg_whole_tuned *w)
{
    static const char *const keys[] = {"bucket", "choice", "kernels", "whole_ms", "layers_ms", NULL};
    static const char *const choices[] = {"layers", "whole", NULL};
    char where[64];
    snprintf(where, sizeof where, "in whole entry %d", i + 1);
    if (cg_y_kind(c, m, CG_Y_MAP, "whole", "", "a mapping") || cg_y_check_keys(c, m, keys, where)) return -1;
    const cg_ynode *v;
    long long b = 0;
    if (!(v = REQ(m, "bucket", where)) || cg_y_int(c, v, "bucket", where, 1, 1024, &b)) return -1;
    if (cg_batch_bucket(b) != b)
        return cg_y_fail(c, v->pos, "bucket %s: %lld is no batch bucket (1, 8, 64, 256 or 1024)", where, b);
    w->bucket = (int)b;
    if (!(v = REQ(m, "choice", where)) || cg_y_enum(c, v, "choice", where, choices, &w->whole)) return -1;
    if (!(v = REQ(m, "kernels", where)) || read_hex(c, v, "kernels", where, w->kernels)) return -1;
    w->whole_ms = w->layers_ms = NAN;
    if ((v = cg_y_get(m, "whole_ms")) && cg_y_float(c, v, "whole_ms", where, &w->whole_ms)) return -1;
    if (v && w->whole_ms < 0) return cg_y_fail(c, v->pos, "'whole_ms' %s must not be negative", where);
    if ((v = cg_y_get(m, "layers_ms")) && cg_y_float(c, v, "layers_ms", where, &w->layers_ms)) return -1;
    if (v && w->layers_ms < 0) return cg_y_fail(c, v->pos, "'layers_ms' %s must not be negative", where);
    return 0;
}

/* The top-level mapping. */
static int read_record(const cg_yctx *c, const cg_ynode *root, cg_tune_record *r)
{
    static const char *const keys[] = {"convgen", "device", "cc", "sms", "driver",
                                       "network", "batch", "layers", "whole", NULL};
    const char *top = "";
    if (cg_y_kind(c, root, CG_Y_MAP, "record", "", "a mapping") || cg_y_check_keys(c, root, keys, "at top level"))
        return -1;
    long long x = 0;
    const cg_ynode *v;
    if (!(v = REQ(root, "convgen", top)) || cg_y_str(c, v, "convgen", top, r->version, sizeof r->version)) return -1;
    if (!(v = REQ(root, "device", top)) || read_text(c, v, "device", top, r->device, sizeof r->device)) return -1;
    if (!(v = REQ(root, "cc", top)) || cg_y_int(c, v, "cc", top, 10, 1000, &x)) return -1;
    r->cc = (int)x, x = 0;
    if ((v = cg_y_get(root, "sms")) && cg_y_int(c, v, "sms", top, 0, 100000, &x)) return -1;
    r->sms = (int)x, x = 0;
    if ((v = cg_y_get(root, "driver")) && cg_y_int(c, v, "driver", top, 0, 1000000, &x)) return -1;
    r->driver = (int)x;
    if ((v = cg_y_get(root, "network")) && cg_y_ident(c, v, "network", top, 1, r->network, sizeof r->network))
        return -1;
    if ((v = cg_y_get(root, "batch")) && cg_y_int(c, v, "batch", top, 0, 1LL << 30, &r->batch)) return -1;
    const cg_ynode *ls = REQ(root, "layers", top);
    if (!ls || cg_y_kind(c, ls, CG_Y_SEQ, "layers", top, "a sequence")) return -1;
    if (ls->n > CG_TUNE_ENTRIES_MAX)
        return cg_y_fail(c, ls->pos, "'layers' holds %zu entries, at most %d", ls->n, CG_TUNE_ENTRIES_MAX);
    /* an entry without `bucket` (a record written before entries had one) belongs to the
     * bucket of the record's `batch:` (none: the large batch, as tune's default batch is) */
    int def_bucket = cg_batch_bucket(r->batch);
    for (size_t i = 0; i < ls->n; i++) {
        if (read_entry(c, ls->kids[i], (int)i, def_bucket, &r->e[i])) return -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(r->e[j].sig, r->e[i].sig) && r->e[j].bucket == r->e[i].bucket) {
                char b[16];
                snprintf(b, sizeof b, "bucket %d", r->e[i].bucket);
                return cg_y_fail(c, cg_y_get(ls->kids[i], "signature")->pos,
                                 "signature of layers entry %zu repeats entry %zu's, both for %s", i + 1, j + 1,
                                 r->e[i].bucket ? b : "the large batch");
            }
        r->n++;
    }
    const cg_ynode *wh = cg_y_get(root, "whole");
    if (!wh) return 0;
    if (cg_y_kind(c, wh, CG_Y_SEQ, "whole", top, "a sequence")) return -1;
    if (wh->n > CG_WHOLE_TUNED_MAX)
        return cg_y_fail(c, wh->pos, "'whole' holds %zu entries, at most %d", wh->n, CG_WHOLE_TUNED_MAX);
    for (size_t i = 0; i < wh->n; i++) {
        if (read_whole(c, wh->kids[i], (int)i, &r->whole[i])) return -1;
        for (size_t j = 0; j < i; j++)
            if (r->whole[j].bucket == r->whole[i].bucket)
                return cg_y_fail(c, cg_y_get(wh->kids[i], "bucket")->pos,
                                 "bucket of whole entry %zu repeats entry %zu's", i + 1, j + 1);
        r->nwhole++;
    }
    return 0;
}

int cg_tune_parse(const char *path, const char *text, size_t len, cg_tune_record *r, cg_err *e)
{
    memset(r, 0, sizeof *r);
    cg_yctx c = {path, e};
    cg_ynode *root = NULL;
    if (cg_yaml_load(&c, text, len, &root)) return -1;
    int rc = root ? read_record(&c, root, r) : cg_y_fail(&c, (cg_pos){1, 1}, "empty tuning record");
    cg_yaml_free(root);
    return rc;
}

int cg_tune_read(const char *path, cg_tune_record *r, cg_err *e)
{
    cg_buf b;
    cg_buf_init(&b);
    if (cg_read_file_max(path, CG_SPEC_BYTES_MAX, &b, e)) return -1;
    int rc = cg_tune_parse(path, b.data ? b.data : "", b.len, r, e);
    cg_buf_free(&b);
    return rc;
}

/* The kernel's code as the hash sees it: after the header's comment lines, and
 * without the programmatic-dependent-launch prologue (common.PDL_PROLOGUE: an
 * `#if` line, the comment naming it, its instructions, `#endif`), which changes
 * when a kernel may start, not what it computes: a record tuned before it was
 * added, or on an older architecture, still names the same kernel. */
void cg_tune_kernel_hash(const char *source, char out[17])
{
    const char *p = source;
    while (p[0] == '/' && p[1] == '/') { /* the header: comment lines, then the code */
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    uint64_t h;
    const char *mark = strstr(p, "\n    // programmatic dependent launch: ");
    const char *from = NULL, *to = NULL;
    if (mark) {
        from = mark; /* back to the start of the #if line before the comment */
        while (from > p && from[-1] != '\n') from--;
        to = strstr(mark, "\n#endif\n");
    }
    if (mark && to && !strncmp(from, "#if", 3)) {
        to += strlen("\n#endif\n");
        size_t a = (size_t)(from - p), b = strlen(to);
        char *code = malloc(a + b + 1);
        if (code) {
            memcpy(code, p, a), memcpy(code + a, to, b + 1);
            h = cg_hash64(code, a + b, CG_HASH_SEED);
            free(code);
        } else {
            h = cg_hash64(p, strlen(p), CG_HASH_SEED); /* out of memory: the hash as it stands */
        }
    } else {
        h = cg_hash64(p, strlen(p), CG_HASH_SEED);
    }
    cg_hex64(h, out);
}

const cg_whole_tuned *cg_tune_whole_find(const cg_tune_record *r, int bucket)
{
    for (int i = 0; i < r->nwhole; i++)
        if (r->whole[i].bucket == bucket) return &r->whole[i];
    return NULL;
}

void cg_tune_whole_put(cg_tune_record *r, const cg_whole_tuned *w)
{
    cg_whole_tuned *have = (cg_whole_tuned *)cg_tune_whole_find(r, w->bucket);
    if (have) *have = *w;
    else if (r->nwhole < CG_WHOLE_TUNED_MAX) r->whole[r->nwhole++] = *w;
}

const cg_tune_entry *cg_tune_entry_find(const cg_tune_record *r, const char *sig, int bucket)
{
    for (int i = 0; i < r->n; i++)
        if (r->e[i].bucket == bucket && !strcmp(r->e[i].sig, sig)) return &r->e[i];
    return NULL;
}

void cg_tune_merge(cg_tune_record *rec, const cg_tune_record *old, int bucket, int layers_only)
{
    for (int i = 0; i < old->n && rec->n < CG_TUNE_ENTRIES_MAX; i++) {
        const cg_tune_entry *t = &old->e[i];
        if (t->bucket == bucket && (!layers_only || cg_tune_entry_find(rec, t->sig, bucket))) continue;
        rec->e[rec->n++] = *t;
    }
    for (int i = 0; i < old->nwhole; i++)
        if (old->whole[i].bucket != bucket && !cg_tune_whole_find(rec, old->whole[i].bucket))
            cg_tune_whole_put(rec, &old->whole[i]);
}

void cg_tune_default_path(const char *spec_path, char *out, size_t n)
{
    size_t len = strlen(spec_path);
    size_t cut = len;
    if (len > 5 && !strcmp(spec_path + len - 5, ".yaml")) cut = len - 5;
    else if (len > 4 && !strcmp(spec_path + len - 4, ".yml")) cut = len - 4;
    snprintf(out, n, "%.*s.tuning.yaml", (int)cut, spec_path);
}

/* ---- application ---- */

/* Whether the spec wrote the layer's strategy (an absent one takes the
 * layer's position; `auto` asks for no particular template). */
static int strategy_written(const cg_layer *l)
{
    if (!strcmp(l->strategy, "auto")) return 0;
    return l->strategy_pos.line != l->pos.line || l->strategy_pos.col != l->pos.col;
}


/* "k=v k=v" into the layer's params (positions: the layer's). */
static int set_params(cg_layer *l, const char *text)
{
    l->nparams = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        const char *k = p;
        while (*p && *p != '=' && *p != ' ' && *p != ',') p++;
        if (*p != '=' || p == k || (size_t)(p - k) >= CG_NAME_MAX || l->nparams >= CG_MAX_PARAMS) return -1;
        cg_param *q = &l->params[l->nparams++];
        memset(q, 0, sizeof *q);
        memcpy(q->key, k, (size_t)(p - k));
        char *end;
        q->value = strtoll(p + 1, &end, 10);
        if (end == p + 1 || (*end && *end != ' ' && *end != ',')) return -1;
        q->pos = q->key_pos = l->pos;
        p = end;
    }
    l->params_pos = l->pos;
    return 0;
}

/* Append one line to notice. */
static void note(char *notice, size_t n, const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(notice);
    if (len + 1 < n) snprintf(notice + len, n - len, fmt, a, b);
}

/* Whether entry t's choice still holds for layer i of s, generated for target tg:
 * the template accepts it (emitted as tpl with its params, or with tpl NULL as
 * the layer's own, whose strategy and params the caller set from it) and it is
 * the template tuned, or generates the same kernel code. A line naming who
 * ("conv1", "conv1 at 8 images") goes to notice when it does not. */
static int entry_holds(cg_gen_emitter *em, const cg_spec *s, const cg_target *tg, int i, const cg_tune_entry *t,
                       const char *tpl, const char *who, char *notice, size_t notice_n)
{
    /* the template must still be the one tuned, and still accept the choice */
    cg_gen_kernel k;
    cg_kernel_launch kl;
    cg_err ke = {{0}};
    if (cg_gen_emit_one_with(em, s, tg, i, tpl, tpl ? t->winner.params : NULL, &k, &kl, &ke)) {
        note(notice, notice_n, "layer %s: the record's choice is refused now (%s): skipped\n", who, ke.msg);
        return 0;
    }
    /* the same template, or (a template edited since) the same kernel code */
    int same = !strcmp(k.tpl_hash, t->tpl_hash);
    if (!same && t->kernel_hash[0]) {
        char kh[17];
        cg_tune_kernel_hash(k.source, kh);
        same = !strcmp(kh, t->kernel_hash);
    }
    cg_gen_kernel_free(&k);
    if (!same) note(notice, notice_n, "layer %s: template %s changed since it was tuned: skipped\n", who, t->winner.tpl);
    return same;
}

int cg_tune_apply(cg_spec *s, const cg_tune_record *r, const cg_tune_device *dev, int from_record[CG_MAX_LAYERS],
                  char *notice, size_t notice_n, cg_err *e)
{
    memset(from_record, 0, CG_MAX_LAYERS * sizeof *from_record);
    notice[0] = 0;
    if (strcmp(r->version, CG_VERSION)) {
        snprintf(notice, notice_n, "made by convgen %s, this is %s: ignored", r->version, CG_VERSION);
        return 1;
    }
    if (dev && dev->name && (strcmp(dev->name, r->device) || dev->cc != r->cc)) {
        snprintf(notice, notice_n, "made for %s (sm_%d), this device is %s (sm_%d): ignored", r->device, r->cc,
                 dev->name, dev->cc);
        return 1;
    }
    /* a choice is checked against what the code is generated for: the caller's
     * target (a fat binary's architectures), else what the device about to run
     * allows (its architecture's limits), else the conservative default */
    cg_target tg;
    const cg_target *dev_tg = NULL;
    if (dev && dev->target) {
        dev_tg = dev->target;
    } else if (dev && dev->cc > 0) {
        int cc = dev->cc;
        cg_aot_target(&cc, 1, &tg);
        dev_tg = &tg;
    }
    /* each entry on the kernel generated for its bucket: the same target but for its
     * batch (the large batch's: batch 0, whatever bucket the caller generates for) */
    cg_target btg, ltg;
    if (dev_tg) btg = *dev_tg;
    else cg_target_default(&btg);
    ltg = btg, ltg.batch = 0;
    /* one sandbox for every check (NULL where it cannot be opened: each opens its own) */
    cg_gen_emitter *em = NULL;
    cg_err oe = {{0}};
    if (cg_gen_emitter_open(&em, &oe)) em = NULL;
    s->nbucket_tuned = 0;
    for (int i = 0; i < s->nlayers; i++) {
        cg_layer *l = &s->layers[i];
        const char *pre = cg_ops[l->op].family;
        if (!pre || l->nparams > 0) continue;
        char sig[CG_TUNE_SIG];
        cg_tune_signature(l, sig, sizeof sig);
        /* a strategy the spec writes, as written (before a large-batch entry sets it):
         * an entry of another template leaves the layer the spec's, at every bucket */
        char written[CG_NAME_MAX + 16] = "";
        if (strategy_written(l) && cg_op_template(l, l->strategy, written, sizeof written)) continue;
        /* the small buckets' entries first, checked on the layer as the spec has it */
        for (int j = 0; j < r->n; j++) {
            const cg_tune_entry *t = &r->e[j];
            if (!t->bucket || strcmp(t->sig, sig) || strncmp(t->winner.tpl, pre, strlen(pre)) ||
                (written[0] && strcmp(written, t->winner.tpl)))
                continue;
            char who[CG_NAME_MAX + 32];
            snprintf(who, sizeof who, "%s at %d image%s", l->name, t->bucket, t->bucket == 1 ? "" : "s");
            cg_layer scratch = *l;
            if (set_params(&scratch, t->winner.params)) {
                note(notice, notice_n, "layer %s: unreadable params '%s' in the record: skipped\n", who,
                     t->winner.params);
                continue;
            }
            btg.batch = t->bucket;
            if (s->nbucket_tuned >= CG_BUCKET_TUNED_MAX ||
                !entry_holds(em, s, &btg, i, t, t->winner.tpl, who, notice, notice_n))
                continue;
            cg_bucket_tuned *b = &s->bucket_tuned[s->nbucket_tuned++];
            b->layer = i, b->bucket = t->bucket;
            snprintf(b->tpl, sizeof b->tpl, "%s", t->winner.tpl);
            snprintf(b->params, sizeof b->params, "%s", t->winner.params);
        }
        /* the large batch's entry: the layer's strategy and params, as records always set them */
        const cg_tune_entry *t = cg_tune_entry_find(r, sig, 0);
        if (!t || strncmp(t->winner.tpl, pre, strlen(pre)) || (written[0] && strcmp(written, t->winner.tpl)))
            continue;
        cg_layer saved = *l;
        snprintf(l->strategy, sizeof l->strategy, "%s", t->winner.tpl + strlen(pre));
        if (set_params(l, t->winner.params)) {
            *l = saved;
            note(notice, notice_n, "layer %s: unreadable params '%s' in the record: skipped\n", l->name,
                 t->winner.params);
            continue;
        }
        if (!entry_holds(em, s, &ltg, i, t, NULL, l->name, notice, notice_n)) {
            *l = saved;
            continue;
        }
        from_record[i] = 1;
    }
    cg_gen_emitter_close(em);
    /* the whole-network decisions as recorded: the CUDA backend checks each
     * against the kernels it generates (their build id) */
    s->nwhole_tuned = r->nwhole;
    memcpy(s->whole_tuned, r->whole, sizeof r->whole);
    (void)e;
    return 0;
}

int cg_tune_use(cg_spec *s, const char *explicit_path, int no_tuning, const cg_tune_device *dev,
                int from_record[CG_MAX_LAYERS], cg_err *e)
{
    return cg_tune_use_to(s, explicit_path, no_tuning, dev, from_record, NULL, e);
}

int cg_tune_use_to(cg_spec *s, const char *explicit_path, int no_tuning, const cg_tune_device *dev,
                   int from_record[CG_MAX_LAYERS], cg_buf *notices, cg_err *e)
{
    memset(from_record, 0, CG_MAX_LAYERS * sizeof *from_record);
    if (no_tuning) return 0;
    char path[CG_PATH_MAX + 32];
    if (explicit_path) snprintf(path, sizeof path, "%s", explicit_path);
    else {
        cg_tune_default_path(s->path, path, sizeof path);
        if (access(path, F_OK)) return 0;
    }
    cg_tune_record *r = malloc(sizeof *r);
    if (!r) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    char notice[8192];
    int rc = cg_tune_read(path, r, e) ? CG_STATUS_INPUT : 0;
    if (!rc && cg_tune_apply(s, r, dev, from_record, notice, sizeof notice, e) < 0) rc = CG_STATUS_INPUT;
    if (!rc) snprintf(s->whole_tuned_from, sizeof s->whole_tuned_from, "%.*s", CG_PATH_MAX - 1, path);
    if (!rc && notice[0]) {
        /* one line for a stale record; one per skipped layer otherwise */
        char *save = NULL;
        for (char *line = strtok_r(notice, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            if (!notices) fprintf(stderr, "convgen: tuning record %s: %s\n", path, line);
            else if (cg_buf_printf(notices, "tuning record %s: %s\n", path, line)) rc = CG_STATUS_IO;
        }
    }
    free(r);
    return rc;
}
