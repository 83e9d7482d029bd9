/* shards.c — one run over several networks, a thread each (see shards.h). */
#include "shards.h"
#include "pipeline.h"
#include "spec.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>

/* What the threads share: which network failed first. */
typedef struct {
    pthread_mutex_t lock;
    int first;   /* -1 until one fails */
    int threads; /* OpenMP threads for each worker thread */
} shard_common;

/* One network's part: its shard of the input and of every answer. */
typedef struct {
    shard_common *c;
    cg_net *net;
    int index;
    cg_input in;
    int *pred;
    float *scores;
    float **layer_out; /* NULL, or `lo` */
    float *lo[CG_MAX_LAYERS];
    cg_shard *out;
} shard_job;

/* Run one shard and note its status; the first failure in time is kept. */
static void run_shard(shard_job *j)
{
    if (j->out->n == 0) return; /* nothing to do: not run, status OK */
    double t0 = cg_now_ms();
    cg_status st = j->layer_out ? cg_net_run_layers(j->net, &j->in, j->pred, j->scores, j->layer_out)
                                : cg_net_run(j->net, &j->in, j->pred, j->scores);
    j->out->wall_ms = cg_now_ms() - t0;
    j->out->status = st;
    if (!st) return;
    pthread_mutex_lock(&j->c->lock);
    if (j->c->first < 0) j->c->first = j->index;
    pthread_mutex_unlock(&j->c->lock);
}

static void *shard_thread(void *arg)
{
    shard_job *j = arg;
    omp_set_num_threads(j->c->threads); /* this thread's teams only */
    run_shard(j);
    return NULL;
}

/* A failure of network i before anything ran: its status, e and *failed. */
static cg_status net_fails(cg_net *const *nets, int i, cg_status st, int *failed, cg_err *e)
{
    *failed = i;
    cg_fail(e, "network %d: %s", i, cg_net_error(nets[i]));
    return st;
}

/* The networks are opened and of one network: the same classes (scores are
 * laid out by them) and, for layer outputs, the same layers. */
static cg_status check_nets(cg_net *const *nets, int k, int layers, int *classes, int *failed, cg_err *e)
{
    for (int i = 0; i < k; i++) {
        if (!nets[i]) return cg_fail(e, "network %d is NULL", i), CG_STATUS_USAGE;
        int c = 0;
        cg_status st = cg_net_classes(nets[i], &c);
        if (st) return net_fails(nets, i, st, failed, e);
        if (i && c != *classes)
            return *failed = i, cg_fail(e, "network %d has %d classes, network 0 %d: not one network", i, c,
                                        *classes), CG_STATUS_USAGE;
        *classes = c;
        int nl = cg_net_layer_count(nets[i]), same = nl == cg_net_layer_count(nets[0]);
        for (int l = 0; layers && same && l < nl; l++)
            same = cg_net_layer_size(nets[i], l) == cg_net_layer_size(nets[0], l);
        if (layers && !same)
            return *failed = i, cg_fail(e, "network %d's layers are not network 0's: not one network", i),
                   CG_STATUS_USAGE;
    }
    return CG_STATUS_OK;
}

/* Job i: shard i of the images and of every answer. */
static void plan_job(shard_job *j, cg_net *const *nets, int i, int k, const cg_input *in, size_t in_bytes, int classes,
                     int *pred, float *scores, float **layer_out, cg_shard *out)
{
    long long off, n;
    cg_share(in->n, k, i, &off, &n);
    out->off = off, out->n = n, out->wall_ms = 0, out->status = CG_STATUS_OK;
    j->net = nets[i], j->index = i, j->out = out;
    j->in = *in;
    j->in.n = n;
    j->in.data = in->data ? (const unsigned char *)in->data + (size_t)off * in_bytes : NULL;
    j->pred = pred + off;
    j->scores = scores ? scores + (size_t)off * (size_t)classes : NULL;
    j->layer_out = NULL;
    if (!layer_out) return;
    j->layer_out = j->lo;
    for (int l = 0; l < cg_net_layer_count(nets[i]); l++)
        j->lo[l] = layer_out[l] ? layer_out[l] + (size_t)off * (size_t)cg_net_layer_size(nets[i], l) : NULL;
}

/* Start a thread per job; a job whose thread cannot start runs here after the
 * others have started (fewer threads, the same work). */
static void run_jobs(shard_job *jobs, int k)
{
    pthread_t tid[CG_SHARDS_MAX];
    int started[CG_SHARDS_MAX];
    for (int i = 0; i < k; i++) started[i] = k > 1 && pthread_create(&tid[i], NULL, shard_thread, &jobs[i]) == 0;
    for (int i = 0; i < k; i++)
        if (!started[i]) run_shard(&jobs[i]);
    for (int i = 0; i < k; i++)
        if (started[i]) pthread_join(tid[i], NULL);
}

cg_status cg_shards_run(cg_net *const *nets, int k, const cg_input *in, int *pred, float *scores, float **layer_out,
                        cg_shard *shards, int *failed, cg_err *e)
{
    *failed = -1;
    if (!nets || k < 1 || k > CG_SHARDS_MAX)
        return cg_fail(e, "%d networks: from 1 to %d", nets ? k : 0, CG_SHARDS_MAX), CG_STATUS_USAGE;
    if (!in || !pred || in->n < 0) return cg_fail(e, "no input, no room for predictions, or a negative count"),
                                          CG_STATUS_USAGE;
    if (in->type != CG_INPUT_U8 && in->type != CG_INPUT_F32)
        return cg_fail(e, "unknown input type %d (CG_INPUT_U8 or CG_INPUT_F32)", (int)in->type), CG_STATUS_USAGE;
    int classes = 0;
    cg_status st = check_nets(nets, k, layer_out != NULL, &classes, failed, e);
    if (st) return st;
    size_t in_bytes = (size_t)in->c * (size_t)in->h * (size_t)in->w * (in->type == CG_INPUT_F32 ? 4 : 1);
    cg_shard local[CG_SHARDS_MAX];
    if (!shards) shards = local;
    shard_job *jobs = calloc((size_t)k, sizeof *jobs);
    shard_common c = {.first = -1, .threads = omp_get_max_threads() / k};
    if (c.threads < 1) c.threads = 1;
    if (!jobs) return cg_fail(e, "out of memory for %d shards", k), CG_STATUS_IO;
    if (pthread_mutex_init(&c.lock, NULL)) return free(jobs), cg_fail(e, "pthread_mutex_init failed"), CG_STATUS_IO;
    for (int i = 0; i < k; i++) {
        jobs[i].c = &c;
        plan_job(&jobs[i], nets, i, k, in, in_bytes, classes, pred, scores, layer_out, &shards[i]);
    }
    run_jobs(jobs, k);
    pthread_mutex_destroy(&c.lock);
    free(jobs);
    if (c.first < 0) return CG_STATUS_OK;
    return net_fails(nets, c.first, shards[c.first].status, failed, e);
}
