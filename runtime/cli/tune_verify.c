/* tune_verify.c — `convgen tune`'s entries for its bucket checked in the
 * network, then the record finished and written (see tune_verify.h). */
#include "tune_verify.h"
#include "cli.h"
#include "convgen.h"
#include "data.h"
#include "net_internal.h"
#include "tune_whole.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_SEED 20261129ULL /* the pixels both networks run on */
#define VERIFY_WARMUP 3         /* rounds untimed: graph captures, clocks rising */
#define VERIFY_ROUNDS 15        /* rounds timed: a median of 15 moves little with one outlier */
#define VERIFY_ROUNDS_MIN 5     /* at least, where CG_TUNE_VERIFY_SECONDS ends them early */

/* One of the two networks. */
typedef struct {
    cg_spec *s;                 /* the spec with its record applied */
    int from[CG_MAX_LAYERS];    /* cg_tune_apply's: the layers the large batch's entries set */
    cg_net *net;
    double lms[VERIFY_ROUNDS][CG_MAX_LAYERS]; /* per round, each layer's GPU time */
    double tot[VERIFY_ROUNDS];                /* per round, the network's */
    double med[CG_MAX_LAYERS], total;         /* their medians */
    int into[CG_MAX_LAYERS];    /* the layer whose kernel computes layer i (cg_net_layer_into), -1 */
} side;

static const char *bucket_text(int bucket, char *buf, size_t n)
{
    if (bucket) snprintf(buf, n, "%d", bucket);
    else snprintf(buf, n, "large");
    return buf;
}

/* The index of the layer named `name` in s, -1 for none (or NULL). */
static int layer_index(const cg_spec *s, const char *name)
{
    for (int i = 0; name && i < s->nlayers; i++)
        if (!strcmp(s->layers[i].name, name)) return i;
    return -1;
}

/* Side x's spec: s with record r applied as run applies it on the device, and
 * no whole-network decision (the per-layer kernels are what is compared). */
static int side_spec(side *x, const cg_spec *s, const cg_tune_record *r, const char *device_name, int cc, cg_err *e)
{
    if (!(x->s = malloc(sizeof *x->s))) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    *x->s = *s;
    char notice[8192];
    cg_tune_device dev = {device_name, cc, NULL};
    int a = cg_tune_apply(x->s, r, &dev, x->from, notice, sizeof notice, e);
    if (a < 0) return CG_STATUS_INPUT;
    if (a > 0) return cg_fail(e, "the record does not apply on this device: %s", notice), CG_STATUS_INPUT;
    x->s->nwhole_tuned = 0;
    return CG_STATUS_OK;
}

/* Open side x's network. */
static int side_open(side *x, const cg_weights *w, const cg_net_options *o, cg_err *e)
{
    cg_status st = cg_net_open_with(x->s, w, o, &x->net);
    if (st) cg_fail(e, "%s", cg_net_error(x->net));
    return (int)st;
}

/* One run of side x's network; its times into round `round` (-1: a warm-up, untimed). */
static int side_run(side *x, const cg_input *in, int *pred, int round, cg_err *e)
{
    cg_status st = cg_net_run(x->net, in, pred, NULL);
    if (!st && round >= 0) st = cg_net_times(x->net, &x->tot[round], x->lms[round]);
    if (st) cg_fail(e, "%s", cg_net_error(x->net));
    return (int)st;
}

/* Side x's median over its `rounds` timed runs and, with layers (a profile),
 * each layer's and which layer computes which; a layer left untimed (NaN) is
 * an error: nothing can be compared. */
static int side_medians(side *x, int rounds, int layers, cg_err *e)
{
    double v[VERIFY_ROUNDS];
    for (int l = 0; layers && l < x->s->nlayers; l++) {
        for (int k = 0; k < rounds; k++) v[k] = x->lms[k][l];
        x->med[l] = cg_median(v, rounds);
        if (isnan(x->med[l])) return cg_fail(e, "layer %s was not timed", x->s->layers[l].name), CG_STATUS_DEVICE;
        x->into[l] = layer_index(x->s, cg_net_layer_into(x->net, l));
    }
    for (int k = 0; k < rounds; k++) v[k] = x->tot[k];
    x->total = cg_median(v, rounds);
    return CG_STATUS_OK;
}

static void side_free(side *x)
{
    cg_net_close(x->net);
    free(x->s);
    x->net = NULL, x->s = NULL;
}

/* The two networks of x run alternately, the one first changing every round so
 * that a drift of the device (clocks, temperature) falls on both alike:
 * VERIFY_WARMUP rounds, then VERIFY_ROUNDS timed, fewer (at least
 * VERIFY_ROUNDS_MIN) once CG_TUNE_VERIFY_SECONDS have passed; *rounds: how many. */
static int alternate(side *x, const cg_input *in, int *pred, int *rounds, cg_err *e)
{
    int rc = 0;
    double t0 = cg_now_ms();
    *rounds = 0;
    for (int round = 0; !rc && round < VERIFY_WARMUP + VERIFY_ROUNDS; round++) {
        int timed = round - VERIFY_WARMUP;
        for (int k = 0; k < 2 && !rc; k++) rc = side_run(&x[(round + k) % 2], in, pred, timed, e);
        if (!rc && timed >= 0) *rounds = timed + 1;
        if (*rounds >= VERIFY_ROUNDS_MIN && cg_now_ms() - t0 > CG_TUNE_VERIFY_SECONDS * 1e3) break;
    }
    return rc;
}

/* rec less its first nfresh entries into out, and before them those of the
 * fresh ones whose verdict `pick` marks (NULL: none). */
static void record_with(const cg_tune_record *rec, int nfresh, const cg_tune_verify_result *r,
                        const unsigned char *pick, cg_tune_record *out)
{
    *out = *rec;
    out->n = 0;
    for (int k = 0; pick && k < r->n; k++)
        if (pick[k]) out->e[out->n++] = rec->e[r->v[k].entry];
    for (int i = nfresh; i < rec->n; i++) out->e[out->n++] = rec->e[i];
}

/* What timing the networks as run runs them needs. */
typedef struct {
    const cg_spec *s;
    const cg_tune_record *rec;
    int nfresh;
    const char *device_name;
    int cc;
    const cg_weights *w;
    const cg_net_options *o; /* profile off */
    const cg_input *in;
    int *pred;
    cg_tune_record *scratch;
} as_run;

/* The network with the entries of this run `pick` marks and the network without
 * any, opened as run opens them and timed alternately, the whole network alone:
 * their medians into *with and *without, the rounds timed into *rounds. */
static int time_as_run(const as_run *a, const cg_tune_verify_result *r, const unsigned char *pick, double *with,
                       double *without, int *rounds, cg_err *e)
{
    side x[2];
    memset(x, 0, sizeof x);
    record_with(a->rec, a->nfresh, r, pick, a->scratch);
    int rc = side_spec(&x[0], a->s, a->scratch, a->device_name, a->cc, e);
    record_with(a->rec, a->nfresh, r, NULL, a->scratch);
    if (!rc) rc = side_spec(&x[1], a->s, a->scratch, a->device_name, a->cc, e);
    for (int k = 0; k < 2 && !rc; k++) rc = side_open(&x[k], a->w, a->o, e);
    if (!rc) rc = alternate(x, a->in, a->pred, rounds, e);
    for (int k = 0; k < 2 && !rc; k++) rc = side_medians(&x[k], *rounds, 0, e);
    if (!rc) *with = x[0].total, *without = x[1].total;
    for (int k = 0; k < 2; k++) side_free(&x[k]);
    return rc;
}

/* The entries kept by their layers' times (r->v[].keep) checked as run runs
 * the network: all together; where that is not faster than without any, each
 * alone, and those faster alone together again; where that is still not faster,
 * the one faster by most alone. What is kept in the end was timed faster than
 * without any; r->v[].keep says what. */
static int check_as_run(const as_run *a, cg_tune_verify_result *r, cg_err *e)
{
    unsigned char pick[CG_MAX_LAYERS];
    int kept = 0;
    for (int k = 0; k < r->n; k++) kept += pick[k] = (unsigned char)r->v[k].keep;
    if (!kept) return 0;
    int rc = time_as_run(a, r, pick, &r->run_with_ms, &r->run_without_ms, &r->run_rounds, e);
    if (rc) return rc;
    r->run_checked = 1;
    r->run_slower = !(r->run_with_ms < r->run_without_ms);
    if (!r->run_slower) return 0;
    if (kept == 1) {
        for (int k = 0; k < r->n; k++) r->v[k].keep = 0;
        return 0;
    }
    /* each alone */
    int best = -1, faster = 0;
    for (int k = 0; k < r->n && !rc; k++) {
        if (!pick[k]) continue;
        cg_tune_verdict *v = &r->v[k];
        unsigned char one[CG_MAX_LAYERS] = {0};
        one[k] = 1;
        int rounds;
        rc = time_as_run(a, r, one, &v->alone_ms, &v->alone_without_ms, &rounds, e);
        if (rc) break;
        v->alone_checked = 1;
        v->keep = v->alone_ms < v->alone_without_ms;
        faster += v->keep;
        if (v->keep && (best < 0 || v->alone_without_ms - v->alone_ms >
                                        r->v[best].alone_without_ms - r->v[best].alone_ms))
            best = k;
    }
    if (rc || faster < 2) return rc;
    /* those faster alone, together */
    for (int k = 0; k < r->n; k++) pick[k] = (unsigned char)r->v[k].keep;
    rc = time_as_run(a, r, pick, &r->again_with_ms, &r->again_without_ms, &r->run_rounds, e);
    if (rc) return rc;
    r->again_checked = 1;
    if (!(r->again_with_ms < r->again_without_ms))
        for (int k = 0; k < r->n; k++) r->v[k].keep = k == best;
    return 0;
}

/* The layers entry `t` is judged by (docs/tuning.md, "Verified in the network"):
 * those of its shape it decides in the network with it, then, until nothing
 * changes, any layer computed in a counted layer's kernel or computing one in
 * its own (cg_net_layer_into, in either network), and any layer that has a kernel
 * of its own in one network only (time 0 in the other: a network's one-kernel
 * tail that a tuned fc no longer runs) and reads a counted layer. */
static void judge(const cg_tune_entry *t, const side *with, const side *without, int bucket, cg_tune_verdict *v)
{
    const cg_spec *s = with->s;
    for (int i = 0; i < s->nlayers; i++) {
        char sig[CG_TUNE_SIG];
        cg_tune_signature(&s->layers[i], sig, sizeof sig);
        int decides = bucket ? cg_spec_bucket_tuned(s, i, bucket) != NULL : with->from[i];
        v->counted[i] = decides && !strcmp(sig, t->sig);
        v->applied += v->counted[i];
    }
    for (int changed = v->applied > 0; changed;) {
        changed = 0;
        for (int j = 0; j < s->nlayers; j++) {
            if (v->counted[j]) continue;
            int add = 0;
            for (int k = 0; k < 2 && !add; k++) {
                const side *x = k ? without : with;
                add = x->into[j] >= 0 && v->counted[x->into[j]];
                for (int l = 0; l < s->nlayers && !add; l++) add = v->counted[l] && x->into[l] == j;
            }
            if (!add && (with->med[j] > 0) != (without->med[j] > 0)) {
                int in[CG_MAX_INPUTS];
                int n = cg_layer_inputs(s, j, in);
                for (int k = 0; k < n && !add; k++) add = in[k] >= 0 && v->counted[in[k]];
            }
            if (add) v->counted[j] = 1, changed = 1;
        }
    }
    v->with_ms = v->without_ms = 0;
    for (int i = 0; i < s->nlayers; i++)
        if (v->counted[i]) v->with_ms += with->med[i], v->without_ms += without->med[i];
    v->keep = v->applied > 0 && v->with_ms < v->without_ms * (1 - CG_TUNE_VERIFY_MARGIN);
}

int cg_tune_verify(const cg_spec *s, const cg_tune_record *rec, int nfresh, const char *device_name, int cc,
                   long long batch, int device, int no_cache, cg_tune_verify_result *r, cg_err *e)
{
    memset(r, 0, sizeof *r);
    r->bucket = cg_batch_bucket(batch);
    r->images = r->bucket || batch <= CG_TUNE_VERIFY_LARGE_IMAGES ? batch : CG_TUNE_VERIFY_LARGE_IMAGES;
    r->with_ms = r->without_ms = r->run_with_ms = r->run_without_ms = NAN;
    if (nfresh < 0 || nfresh > rec->n || nfresh > CG_MAX_LAYERS)
        return cg_fail(e, "%d entries of this run in a record of %d", nfresh, rec->n), CG_STATUS_USAGE;
    side *x = calloc(2, sizeof *x); /* x[0] with this run's entries (those kept), x[1] without */
    cg_tune_record *less = malloc(sizeof *less);
    cg_weights w;
    memset(&w, 0, sizeof w);
    cg_dataset d;
    memset(&d, 0, sizeof d);
    int *pred = malloc((size_t)r->images * sizeof *pred);
    int rc = x && less && pred ? CG_STATUS_OK : (cg_fail(e, "out of memory"), CG_STATUS_IO);
    /* the record as it would be had this run written nothing for its bucket */
    if (!rc) record_with(rec, nfresh, r, NULL, less);
    if (!rc) rc = side_spec(&x[0], s, rec, device_name, cc, e);
    if (!rc) rc = side_spec(&x[1], s, less, device_name, cc, e);
    if (!rc && cg_weights_for_spec(s, &w, e)) rc = CG_STATUS_INPUT;
    if (!rc && cg_data_random(&d, r->images, (size_t)s->C * (size_t)s->H * (size_t)s->W, s->H, s->W, VERIFY_SEED, e))
        rc = CG_STATUS_IO;
    cg_input in = {CG_INPUT_U8, r->images, s->C, s->H, s->W, d.pixels};
    /* each entry judged by its layers' times: a profile times every layer */
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CUDA, o.device = device, o.batch = r->images, o.no_cache = no_cache;
    o.profile = 1, o.streams = 1, o.whole = CG_WHOLE_OFF;
    for (int k = 0; k < 2 && !rc; k++) rc = side_open(&x[k], &w, &o, e);
    if (!rc) rc = alternate(x, &in, pred, &r->rounds, e);
    for (int k = 0; k < 2 && !rc; k++) rc = side_medians(&x[k], r->rounds, 1, e);
    int kept = 0;
    if (!rc) {
        r->with_ms = x[0].total, r->without_ms = x[1].total;
        for (int i = 0; i < nfresh; i++) {
            cg_tune_verdict *v = &r->v[r->n++];
            v->entry = i;
            judge(&rec->e[i], &x[0], &x[1], r->bucket, v);
            v->layers_keep = v->keep;
            kept += v->keep;
        }
    }
    /* then the networks as run runs them (no profile: a profile launches each
     * kernel after the one before has ended), the whole network's time alone */
    for (int k = 0; x && k < 2; k++) side_free(&x[k]);
    if (!rc && kept) {
        o.profile = 0;
        as_run a = {s, rec, nfresh, device_name, cc, &w, &o, &in, pred, less};
        rc = check_as_run(&a, r, e);
    }
    free(x), free(less), free(pred);
    cg_weights_free(&w);
    cg_dataset_free(&d);
    return rc;
}

/* "16.0 us". */
static const char *us(double ms, char *buf, size_t n)
{
    snprintf(buf, n, "%.1f us", ms * 1e3);
    return buf;
}

/* The verification's lines: one per entry, then the network's. */
static void print_verdicts(const cg_spec *s, const cg_tune_record *rec, const unsigned char *replaced,
                           const cg_tune_verify_result *r)
{
    char b[16], w[32], wo[32];
    int dropped = 0, kept = 0;
    bucket_text(r->bucket, b, sizeof b);
    for (int k = 0; k < r->n; k++) kept += r->v[k].layers_keep;
    for (int k = 0; k < r->n; k++) {
        const cg_tune_verdict *v = &r->v[k];
        const cg_tune_entry *t = &rec->e[v->entry];
        dropped += !v->keep;
        printf("verify, bucket %s: %s (%s) %s", b, t->layer, t->winner.tpl, v->keep ? "kept" : "dropped");
        if (!v->applied) {
            printf(": it decides no layer of the network (the spec chooses there, or the record's choice is refused)");
        } else {
            printf(": %s with it, %s without (", us(v->with_ms, w, sizeof w), us(v->without_ms, wo, sizeof wo));
            for (int i = 0, first = 1; i < s->nlayers; i++)
                if (v->counted[i]) printf("%s%s", first ? "" : " ", s->layers[i].name), first = 0;
            printf(")");
        }
        if (v->alone_checked)
            printf("; as run runs the network, %s with it alone, %s without", us(v->alone_ms, w, sizeof w),
                   us(v->alone_without_ms, wo, sizeof wo));
        else if (v->layers_keep && !v->keep) printf("; the network slower with it as run runs it (below)");
        if (!v->keep && replaced && replaced[v->entry]) printf("; the record's older entry for it is dropped too");
        printf("\n");
    }
    printf("verify, bucket %s: the network %s with this run's entries, %s without (profiled, medians of %d rounds "
           "of %lld image%s)",
           b, us(r->with_ms, w, sizeof w), us(r->without_ms, wo, sizeof wo), r->rounds, r->images,
           r->images == 1 ? "" : "s");
    if (r->run_checked)
        printf("; as run runs it, %s with the %d kept by their layers, %s without%s", us(r->run_with_ms, w, sizeof w),
               kept, us(r->run_without_ms, wo, sizeof wo), r->run_slower ? " (slower)" : "");
    if (r->again_checked)
        printf("; with those faster alone, %s, %s without%s", us(r->again_with_ms, w, sizeof w),
               us(r->again_without_ms, wo, sizeof wo),
               r->again_with_ms < r->again_without_ms ? "" : " (slower: the fastest alone kept)");
    printf("; %d of %d entr%s dropped\n", dropped, r->n, r->n == 1 ? "y" : "ies");
    fflush(stdout);
}

/* The verification as `tune` runs it: rec loses the entries dropped. */
static void verify_step(const cg_spec *s, cg_tune_record *rec, int nfresh, const unsigned char *replaced,
                        const cg_tune_finish_opts *o)
{
    char b[16];
    bucket_text(cg_batch_bucket(o->batch), b, sizeof b);
    if (nfresh <= 0) return; /* nothing measured right: nothing to verify */
    cg_tune_verify_result *r = malloc(sizeof *r);
    cg_err e = {{0}};
    int rc = r ? cg_tune_verify(s, rec, nfresh, o->device_name, o->cc, o->batch, o->device, o->no_cache, r, &e)
               : (cg_fail(&e, "out of memory"), CG_STATUS_IO);
    if (rc) {
        fprintf(stderr, "convgen: verify, bucket %s: not done (%s); the record keeps this run's entries as measured\n",
                b, e.msg);
        free(r);
        return;
    }
    print_verdicts(s, rec, replaced, r);
    /* the entries dropped leave the record, the others keep their order */
    int n = 0;
    for (int i = 0; i < rec->n; i++) {
        int drop = 0;
        for (int k = 0; k < r->n && !drop; k++) drop = r->v[k].entry == i && !r->v[k].keep;
        if (!drop) rec->e[n++] = rec->e[i];
    }
    rec->n = n;
    free(r);
}

int cg_tune_finish(const cg_spec *s, cg_tune_record *rec, int nfresh, const unsigned char *replaced,
                   const cg_tune_finish_opts *o, const char *out, cg_err *e)
{
    if (!o->no_verify) verify_step(s, rec, nfresh, replaced, o);
    /* a small bucket's whole-network kernel against the per-layer kernels the
     * record now chooses, both checked, then timed as run times them (outside
     * the budget). A failure there (a kernel that does not compile, the device)
     * costs the record that decision alone, as a candidate that fails costs
     * nothing but itself */
    cg_err we = {{0}};
    if (cg_tune_whole_step(s, rec, o->device_name, o->cc, o->batch, o->device, o->no_cache, &we))
        fprintf(stderr, "convgen: whole-network kernel, bucket %d: not measured (%s); the record has no decision "
                        "for it\n",
                cg_batch_bucket(o->batch), we.msg);
    return cg_tune_write(rec, out, e) ? CG_EXIT_IO : 0;
}
