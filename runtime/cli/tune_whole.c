/* tune_whole.c — the whole-network kernel against the per-layer kernels for
 * `convgen tune --batch N` (see tune_whole.h). */
#include "tune_whole.h"
#include "convgen.h"
#include "data.h"
#include "harness.h"
#include "net_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUNE_WHOLE_SEED 20261129ULL /* the pixels both paths are checked and timed on */

/* What one measurement holds: the images, the CPU reference's layers and
 * predictions, and a GPU run's. */
typedef struct {
    const cg_spec *s;
    long long n;
    cg_dataset d;
    float *cl[CG_MAX_LAYERS], *gl[CG_MAX_LAYERS];
    int *cp, *gp;
} whole_bench;

static void bench_free(whole_bench *b)
{
    for (int l = 0; l < CG_MAX_LAYERS; l++) free(b->cl[l]), free(b->gl[l]);
    free(b->cp), free(b->gp);
    cg_dataset_free(&b->d);
}

/* Images and buffers for n images of s. */
static int bench_init(whole_bench *b, const cg_spec *s, long long n, cg_err *e)
{
    memset(b, 0, sizeof *b);
    b->s = s, b->n = n;
    if (cg_data_random(&b->d, n, (size_t)s->C * (size_t)s->H * (size_t)s->W, s->H, s->W, TUNE_WHOLE_SEED, e))
        return CG_STATUS_IO;
    b->cp = malloc((size_t)n * sizeof *b->cp), b->gp = malloc((size_t)n * sizeof *b->gp);
    int ok = b->cp && b->gp;
    for (int l = 0; l < s->nlayers && ok; l++) {
        size_t m = (size_t)n * (size_t)cg_layer_out_elems(&s->layers[l]);
        b->cl[l] = malloc(m * sizeof(float)), b->gl[l] = malloc(m * sizeof(float));
        ok = b->cl[l] && b->gl[l];
    }
    return ok ? CG_STATUS_OK : (cg_fail(e, "out of memory"), CG_STATUS_IO);
}

/* A network of s and w on backend `o`; its message into e on failure. */
static int open_net(const cg_spec *s, const cg_weights *w, const cg_net_options *o, cg_net **net, cg_err *e)
{
    cg_status st = cg_net_open_with(s, w, o, net);
    if (st) cg_fail(e, "%s", cg_net_error(*net));
    return (int)st;
}

/* One GPU run's layers and predictions (b->gl, b->gp) against the CPU
 * reference's, as `convgen check` compares them: every layer with a tensor of
 * its own against its bound through the network (cg_spec_tols), nothing left
 * unwritten, and the same predictions but where the reference's two best scores
 * are within the last layer's bound (a tie). 1 when they agree; else 0 and why. */
static int agrees(const whole_bench *b, const cg_net *g, char *why, size_t n)
{
    const cg_spec *s = b->s;
    double tol[CG_MAX_LAYERS];
    cg_spec_tols(s, tol);
    for (int l = 0; l < s->nlayers; l++) {
        if (cg_net_layer_into(g, l)) continue; /* computed in the add's kernel: compared there */
        cg_harness_diff d;
        cg_harness_compare(b->gl[l], b->cl[l], (size_t)b->n * (size_t)cg_layer_out_elems(&s->layers[l]), tol[l], &d);
        if (d.ok) continue;
        if (d.nonfinite)
            snprintf(why, n, "layer %s: %lld elements unwritten or not finite", s->layers[l].name, d.nonfinite);
        else
            snprintf(why, n, "layer %s: rel L2 error %.3e above its bound %.1e", s->layers[l].name, d.rel_l2, tol[l]);
        return 0;
    }
    long long oc = cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    for (long long i = 0; i < b->n; i++) {
        if (b->gp[i] == b->cp[i]) continue;
        const float *r = b->cl[s->nlayers - 1] + i * oc;
        int valid = b->gp[i] >= 0 && b->gp[i] < oc;
        if (valid && fabs((double)r[b->cp[i]] - (double)r[b->gp[i]]) <= tol[s->nlayers - 1]) continue;
        snprintf(why, n, "image %lld: predicted %d, the reference %d", i, b->gp[i], b->cp[i]);
        return 0;
    }
    why[0] = 0;
    return 1;
}

int cg_tune_whole(const cg_spec *s_in, long long batch, int device, int no_cache, cg_tune_whole_result *r, cg_err *e)
{
    memset(r, 0, sizeof *r);
    r->layers_ms = r->whole_ms = NAN;
    r->bucket = cg_batch_bucket(batch);
    /* the spec without any whole-network decision: both paths are to be timed */
    cg_spec *s = malloc(sizeof *s);
    if (!s) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    *s = *s_in;
    s->nwhole_tuned = 0;
    cg_weights w;
    memset(&w, 0, sizeof w);
    whole_bench b;
    memset(&b, 0, sizeof b);
    int rc = cg_weights_for_spec(s, &w, e) ? CG_STATUS_INPUT : bench_init(&b, s, batch, e);
    if (rc) {
        bench_free(&b);
        cg_weights_free(&w);
        free(s);
        return rc;
    }
    cg_input in = {CG_INPUT_U8, batch, s->C, s->H, s->W, b.d.pixels};
    cg_net *cpu = NULL, *gpu = NULL, *timed = NULL;
    cg_net_options co, go;
    cg_net_options_init(&co);
    cg_net_options_init(&go);
    go.backend = CG_BACKEND_CUDA, go.device = device, go.batch = batch, go.no_cache = no_cache;
    go.poison = 1, go.keep_tensors = 1, go.whole = CG_WHOLE_OFF; /* checking: every tensor poisoned and kept */
    go.pdl_always = 1; /* and the overlapped launches checked as they are, nothing timed */
    rc = open_net(s, &w, &go, &gpu, e);
    if (!rc && cg_net_has_whole(gpu)) {
        r->has = 1;
        snprintf(r->kernels, sizeof r->kernels, "%s", cg_net_build_id(gpu));
        rc = open_net(s, &w, &co, &cpu, e);
        if (!rc && (rc = cg_net_run_layers(cpu, &in, b.cp, NULL, b.cl))) cg_fail(e, "%s", cg_net_error(cpu));
        /* each path in turn, as `convgen check --whole auto` runs them */
        for (int path = 0; !rc && path < 2; path++) {
            cg_net_set_whole(gpu, path ? CG_WHOLE_ON : CG_WHOLE_OFF);
            if ((rc = cg_net_run_layers(gpu, &in, b.gp, NULL, b.gl))) {
                cg_fail(e, "%s", cg_net_error(gpu));
                break;
            }
            const cg_gpu_times *t = cg_net_gpu_times(gpu);
            if (path && t->whole != CG_RAN_WHOLE)
                snprintf(r->why[1], sizeof r->why[1], "it did not run (%.250s)", t->whole_note);
            else r->ok[path] = agrees(&b, gpu, r->why[path], sizeof r->why[path]);
        }
    }
    if (!rc && r->has) {
        /* timing: a network opened as run opens it (no poison, tensors sharing memory,
         * auto), its first batch of this many images timing both ways */
        go.poison = 0, go.keep_tensors = 0, go.whole = CG_WHOLE_AUTO, go.pdl_always = 0;
        rc = open_net(s, &w, &go, &timed, e);
        if (!rc && (rc = cg_net_run(timed, &in, b.gp, NULL))) cg_fail(e, "%s", cg_net_error(timed));
        if (!rc) {
            const cg_gpu_times *t = cg_net_gpu_times(timed);
            r->layers_ms = t->layers_ms, r->whole_ms = t->whole_ms;
            if (t->whole_from != CG_WHOLE_FROM_MEASURED || isnan(t->whole_ms) || isnan(t->layers_ms))
                snprintf(r->note, sizeof r->note, "%.250s", t->whole_note[0] ? t->whole_note : "not timed");
        }
    }
    if (!rc && r->has && (r->ok[0] || r->ok[1])) {
        /* a path that failed its check is never chosen; of two right ones the
         * faster, as the runtime's auto chooses (the whole kernel when strictly faster) */
        int timed_both = !isnan(r->whole_ms) && !isnan(r->layers_ms);
        r->decided = 1;
        r->entry.bucket = r->bucket;
        r->entry.whole = r->ok[1] && (!r->ok[0] || (timed_both && r->whole_ms < r->layers_ms));
        snprintf(r->entry.kernels, sizeof r->entry.kernels, "%s", r->kernels);
        r->entry.whole_ms = r->whole_ms, r->entry.layers_ms = r->layers_ms;
    }
    cg_net_close(timed);
    cg_net_close(gpu);
    cg_net_close(cpu);
    bench_free(&b);
    cg_weights_free(&w);
    free(s);
    return rc;
}

/* "16.0 us" or "not timed". */
static const char *us_text(double ms, char *buf, size_t n)
{
    if (isnan(ms)) snprintf(buf, n, "not timed");
    else snprintf(buf, n, "%.1f us", ms * 1e3);
    return buf;
}

int cg_tune_whole_step(const cg_spec *s, cg_tune_record *rec, const char *device_name, int cc, long long batch,
                       int device, int no_cache, cg_err *e)
{
    int bucket = cg_batch_bucket(batch);
    if (!bucket) return CG_STATUS_OK; /* the large batch's kernels have no whole-network kernel */
    /* the record applied as run will apply it on this device */
    cg_spec *t = malloc(sizeof *t);
    if (!t) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    *t = *s;
    int from[CG_MAX_LAYERS];
    char notice[2048];
    cg_tune_device dev = {device_name, cc, NULL};
    if (cg_tune_apply(t, rec, &dev, from, notice, sizeof notice, e) < 0) return free(t), CG_STATUS_INPUT;
    cg_tune_whole_result r;
    int rc = cg_tune_whole(t, batch, device, no_cache, &r, e);
    free(t);
    if (rc) return rc;
    char w[32], l[32];
    if (!r.has) {
        printf("whole-network kernel, bucket %d: none among this network's kernels (nothing to record)\n", bucket);
    } else if (!r.decided) {
        printf("whole-network kernel, bucket %d: neither path passed its check (per-layer kernels: %s; whole-network "
               "kernel: %s): nothing recorded\n",
               bucket, r.why[0], r.why[1]);
    } else {
        cg_tune_whole_put(rec, &r.entry);
        printf("whole-network kernel, bucket %d: %s, per-layer kernels %s", bucket, us_text(r.whole_ms, w, sizeof w),
               us_text(r.layers_ms, l, sizeof l));
        if (!r.ok[0] || !r.ok[1])
            printf("; the %s failed its check (%s)", r.ok[0] ? "whole-network kernel" : "per-layer kernels",
                   r.ok[0] ? r.why[1] : r.why[0]);
        else if (r.note[0]) printf(" (%s)", r.note);
        printf(": the %s recorded\n", r.entry.whole ? "whole-network kernel" : "per-layer kernels");
    }
    return CG_STATUS_OK;
}
