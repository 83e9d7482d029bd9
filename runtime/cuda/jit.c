/* jit.c — kernels through the cache and NVRTC on a few threads (see jit.h). */
#include "jit.h"
#include "cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the worker threads share: the inputs, and the next kernel to take. */
typedef struct {
    cg_nvrtc *nv;
    const cg_gen_output *o;
    const cg_jit_opts *opt;
    char options[CG_NVRTC_OPTS_MAX]; /* the key's option string */
    int nvrtc_version;
    cg_jit_result *r;
    pthread_mutex_t lock;
    int next;
} jit_work;

/* One kernel: the cache, else NVRTC (and then the cache is written). Touches
 * only its own result slot, so kernels run on any thread in any order. */
static void one_kernel(jit_work *w, int i)
{
    const cg_gen_kernel *k = &w->o->k[i];
    cg_jit_kernel *out = &w->r->k[i];
    const cg_jit_opts *opt = w->opt;
    double t0 = cg_now_ms();
    cg_cache_key key;
    cg_cache_key_kernel(&key, k, w->options, w->nvrtc_version, opt->driver_version, opt->cc);
    if (opt->cache_dir && !opt->refresh) {
        char why[128] = "";
        int got = cg_cache_get(opt->cache_dir, &key, &out->image, why);
        if (got == 1) {
            out->cached = 1;
            out->ms = cg_now_ms() - t0;
            return;
        }
        if (got < 0) {
            out->failed = 1;
            cg_fail(&out->err, "%s: cache read: %s", k->file, why);
            return;
        }
        if (why[0] && strcmp(why, "no entry"))
            snprintf(out->note, sizeof out->note, "%.60s: %.90s", k->file, why);
    }
    if (cg_nvrtc_compile(w->nv, k->source, k->file, opt->arch, opt->as_ptx, &out->image,
                         &out->log, NULL, &out->err)) {
        out->failed = 1;
        out->ms = cg_now_ms() - t0;
        return;
    }
    if (opt->cache_dir) {
        cg_err warn;
        int put = cg_cache_put(opt->cache_dir, &key, out->image.data, out->image.len, &warn);
        if (put < 0) {
            out->failed = 1;
            cg_fail(&out->err, "%s: %s", k->file, warn.msg);
        } else if (put && !out->note[0]) {
            snprintf(out->note, sizeof out->note, "%.150s", warn.msg);
        }
    }
    out->ms = cg_now_ms() - t0;
}

/* Thread body: take kernels until none is left. */
static void *worker(void *arg)
{
    jit_work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int i = w->next < w->o->nkernels ? w->next++ : -1;
        pthread_mutex_unlock(&w->lock);
        if (i < 0) return NULL;
        one_kernel(w, i);
    }
}

/* How many threads: what the caller asked, else one per online CPU, at most
 * CG_JIT_MAX_THREADS and never more than there are kernels. */
static int thread_count(const cg_jit_opts *opt, int nkernels)
{
    long n = opt->threads > 0 ? opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > CG_JIT_MAX_THREADS) n = CG_JIT_MAX_THREADS;
    if (n > nkernels) n = nkernels;
    return (int)(n < 1 ? 1 : n);
}

int cg_jit_build(cg_nvrtc *nv, const cg_gen_output *o, const cg_jit_opts *opt, cg_jit_result *r,
                 cg_err *e)
{
    double t0 = cg_now_ms();
    memset(r, 0, sizeof *r);
    if (o->nkernels < 1) return 0;
    r->k = calloc((size_t)o->nkernels, sizeof *r->k);
    if (!r->k) return cg_fail(e, "out of memory");
    r->n = o->nkernels;
    if (opt->cache_dir) cg_cache_sweep(opt->cache_dir); /* what killed writers left */
    jit_work w = {.nv = nv, .o = o, .opt = opt, .r = r, .next = 0};
    cg_nvrtc_options(opt->arch, opt->as_ptx, w.options, sizeof w.options);
    w.nvrtc_version = cg_nvrtc_version(nv);
    if (pthread_mutex_init(&w.lock, NULL)) return cg_fail(e, "pthread_mutex_init failed");

    /* The calling thread is one of the workers; the others are extra. */
    pthread_t tid[CG_JIT_MAX_THREADS];
    int want = thread_count(opt, o->nkernels), started = 0;
    for (int t = 1; t < want; t++) {
        if (pthread_create(&tid[started], NULL, worker, &w)) break; /* fewer threads, same work */
        started++;
    }
    worker(&w);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&w.lock);
    r->threads = started + 1;

    int rc = 0;
    for (int i = 0; i < r->n; i++) {
        const cg_jit_kernel *k = &r->k[i];
        if (k->failed && !rc) rc = cg_fail(e, "%s", k->err.msg);
        if (!k->failed && k->cached) r->hits++;
        if (!k->failed && !k->cached) r->compiled++;
        if (k->note[0] && !r->note[0]) snprintf(r->note, sizeof r->note, "%s", k->note);
    }
    r->wall_ms = cg_now_ms() - t0;
    return rc;
}

void cg_jit_free(cg_jit_result *r)
{
    for (int i = 0; r->k && i < r->n; i++) {
        cg_buf_free(&r->k[i].image);
        cg_buf_free(&r->k[i].log);
    }
    free(r->k);
    memset(r, 0, sizeof *r);
}

int cg_jit_compile(cg_nvrtc *nv, int cc, int driver_version, const cg_gen_kernel *k, int use_cache,
                   cg_buf *image, cg_buf *log, cg_jit_info *info, cg_err *e)
{
    memset(info, 0, sizeof *info);
    cg_jit_opts o = {0, 0, cc, driver_version, NULL, 1, 0};
    if (cg_nvrtc_pick_arch(nv, cc, &o.arch, &o.as_ptx))
        return cg_fail(e, "the device is sm_%d, older than anything this NVRTC compiles for", cc);
    if (cg_nvrtc_check_driver(nv, driver_version, o.as_ptx, e)) return -1;
    snprintf(info->arch, sizeof info->arch, o.as_ptx ? "compute_%d (PTX)" : "sm_%d", o.arch);
    char dir[CG_PATH_MAX] = "";
    cg_err ce;
    if (use_cache && cg_cache_dir(dir, sizeof dir, &ce)) snprintf(info->note, sizeof info->note, "%.200s", ce.msg);
    else if (use_cache) o.cache_dir = dir;
    /* a one-kernel output: the kernel record is borrowed, never freed here */
    cg_gen_output *one = calloc(1, sizeof *one);
    if (!one) return cg_fail(e, "out of memory");
    one->nkernels = 1;
    one->k[0] = *k;
    cg_jit_result r;
    int rc = cg_jit_build(nv, one, &o, &r, e);
    free(one);
    if (r.n == 1) {
        info->cache_hit = r.k[0].cached;
        info->ms = r.k[0].ms;
        if (!info->note[0] && r.k[0].note[0]) snprintf(info->note, sizeof info->note, "%s", r.k[0].note);
        if (log) {
            cg_buf_free(log);
            *log = r.k[0].log;
            cg_buf_init(&r.k[0].log);
        }
        if (!rc) {
            cg_buf_free(image);
            *image = r.k[0].image;
            cg_buf_init(&r.k[0].image);
        }
    }
    cg_jit_free(&r);
    return rc;
}

int cg_jit_target(const cg_nvrtc *nv, const cg_cu *cu, int *arch, int *as_ptx, cg_target *t, cg_err *e)
{
    if (cg_nvrtc_pick_arch(nv, cu->cc, arch, as_ptx))
        return cg_fail(e, "device %s is sm_%d, older than anything this NVRTC compiles for", cu->name, cu->cc);
    if (cg_nvrtc_check_driver(nv, cu->driver_version, *as_ptx, e)) return -1;
    cg_target_default(t);
    t->cc = *arch;
    t->max_shared_optin = cu->smem_per_block_optin;
    t->regs_per_block = cu->regs_per_block;
    t->regs_per_sm = cu->regs_per_sm;
    t->sms = cu->sm_count;
    t->max_threads = cu->max_threads_per_block;
    t->sm90a = cg_nvrtc_arch_suffix(*arch, *as_ptx)[0] == 'a';
    return 0;
}
