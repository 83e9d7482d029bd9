/* gpu.c — the CUDA backend (see gpu.h). */
#include "gpu.h"
#include "cache.h"
#include "cuda_api.h"
#include "fatbin.h"
#include "aot.h"
#include "gen.h"
#include "jit.h"
#include "nvrtc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cg_gpu {
    cg_cu *cu;
    cg_manifest *m;
    const cg_spec *s;
    CUmodule mods[CG_MAN_KERNELS];
    char modkernel[CG_MAN_KERNELS][128]; /* JIT: the kernel each module holds; "" = all */
    int nmods;
    CUfunction fn[CG_MAN_KERNELS];        /* per manifest kernel */
    CUdeviceptr wdev[CG_MAN_KERNELS];     /* weights passed as arguments, per kernel */
    CUdeviceptr bdev[CG_MAN_KERNELS];
    CUdeviceptr tdev[CG_MAX_TENSORS];     /* one batch of every tensor */
    CUdeviceptr owned[2 * CG_MAN_KERNELS]; /* device weight buffers to free */
    int nowned;
    long long batch;
    int poison, profile;
    CUstream stream;
    CUevent ev[CG_MAN_KERNELS + 1];
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The arch NVRTC compiles for on this device (its own, else PTX of the newest
 * below it), checked against the driver. */
static int pick_jit_arch(cg_gpu *g, cg_nvrtc *nv, int *arch, int *as_ptx, cg_err *e)
{
    if (cg_nvrtc_pick_arch(nv, g->cu->cc, arch, as_ptx))
        return cg_fail(e, "device %s is sm_%d, older than anything this NVRTC compiles for",
                       g->cu->name, g->cu->cc);
    return cg_nvrtc_check_driver(nv, g->cu->driver_version, *as_ptx, e);
}

/* JIT: every kernel of the generated output through NVRTC (several at a
 * time, jit.c), cubins cached on disk; then each loaded as its own module. */
static int load_jit(cg_gpu *g, cg_nvrtc *nv, int arch, int as_ptx, const cg_gen_output *o,
                    const cg_gpu_opts *opt, cg_host_costs *hc, cg_err *e)
{
    snprintf(hc->arch, sizeof hc->arch, as_ptx ? "compute_%d (PTX)" : "sm_%d", arch);
    char dir[CG_PATH_MAX] = "";
    cg_err ce;
    int use_cache = !opt->no_cache && cg_cache_dir(dir, sizeof dir, &ce) == 0;
    if (!opt->no_cache && !use_cache) snprintf(hc->cache_note, sizeof hc->cache_note, "%.200s", ce.msg);
    cg_jit_opts jo = {arch, as_ptx, g->cu->cc, g->cu->driver_version, use_cache ? dir : NULL, 0};
    cg_jit_result r;
    int rc = cg_jit_build(nv, o, &jo, &r, e);
    hc->compile_ms = r.wall_ms;
    hc->jit_threads = r.threads;
    hc->compiled = r.compiled;
    hc->cache_hits = r.hits;
    hc->cache_misses = use_cache ? r.compiled : 0;
    if (r.note[0] && !hc->cache_note[0]) snprintf(hc->cache_note, sizeof hc->cache_note, "%.200s", r.note);
    for (int i = 0; i < r.n; i++) {
        const cg_jit_kernel *k = &r.k[i];
        if (k->failed && k->log.len) { /* NVRTC's own words */
            if (!opt->log) fprintf(stderr, "%s\n", k->log.data);
            else if (cg_buf_puts(opt->log, k->log.data) || cg_buf_puts(opt->log, "\n")) rc = cg_fail(e, "out of memory");
        }
        cg_kernel_build *b = &hc->build[hc->nbuild++];
        snprintf(b->name, sizeof b->name, "%s", o->k[i].kernel);
        b->ms = k->ms;
        b->from = k->cached ? CG_FROM_CACHE : CG_FROM_NVRTC;
    }
    double t0 = now_ms();
    for (int i = 0; i < r.n && !rc; i++) {
        rc = CG_CU(e, g->cu->cuModuleLoadData(&g->mods[g->nmods], r.k[i].image.data));
        if (!rc) snprintf(g->modkernel[g->nmods++], sizeof g->modkernel[0], "%s", o->k[i].kernel);
    }
    hc->load_ms += now_ms() - t0;
    cg_jit_free(&r);
    return rc;
}

/* AOT, first half: check a fat binary's bytes (read from o->fatbin, or a
 * bundle's section) can serve this device; its cubin archs are the ones it
 * was built for, so they give the target the code was generated for. */
static int check_fatbin(cg_gpu *g, const char *path, const cg_buf *f, cg_target *t, char *held, size_t nheld,
                        cg_err *e)
{
    int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm = 0, nptx = 0;
    if (cg_fatbin_list(f->data, f->len, sm, &nsm, ptx, &nptx, e)) {
        char m[CG_ERR_MAX];
        snprintf(m, sizeof m, "%s", e->msg);
        return cg_fail(e, "%s: not a usable fat binary: %s", path, m);
    }
    cg_fatbin_describe(sm, nsm, ptx, nptx, held, nheld);
    int cc = g->cu->cc, ok = 0, ptx_ok = 0;
    for (int i = 0; i < nsm; i++) ok |= sm[i] == cc || (sm[i] / 10 == cc / 10 && sm[i] <= cc);
    for (int i = 0; i < nptx; i++) ptx_ok |= ptx[i] <= cc;
    if (!ok && !ptx_ok)
        return cg_fail(e, "%s holds %s; this device (%s) is sm_%d: rebuild with --arch including %d",
                       path, held, g->cu->name, cc, cc);
    cg_aot_target(sm, nsm, t);
    return 0;
}

/* AOT, second half: one module holding every kernel, its build id checked
 * against the code generated here. */
static int load_fatbin(cg_gpu *g, const char *hash, const char *path, const cg_buf *f,
                       const char *held, cg_host_costs *hc, cg_err *e)
{
    int cc = g->cu->cc;
    snprintf(hc->arch, sizeof hc->arch, "fatbin");
    for (int i = 0; i < g->m->nkernels; i++) {
        int seen = 0; /* a kernel two launches share is listed once */
        for (int j = 0; j < hc->nbuild && !seen; j++) seen = !strcmp(hc->build[j].name, g->m->k[i].name);
        if (seen) continue;
        cg_kernel_build *b = &hc->build[hc->nbuild++];
        snprintf(b->name, sizeof b->name, "%s", g->m->k[i].name);
        b->ms = 0, b->from = CG_FROM_FATBIN;
    }
    double t0 = now_ms();
    CUresult r = g->cu->cuModuleLoadData(&g->mods[0], f->data);
    if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
        return cg_fail(e, "%s: its PTX is newer than this driver (%d.%d) supports: the driver is too old",
                       path, g->cu->driver_version / 1000, g->cu->driver_version % 1000 / 10);
    if (r != CUDA_SUCCESS) {
        char t[160];
        return cg_fail(e, "%s (holds %s) cannot be loaded on sm_%d: %s", path, held, cc,
                       cg_cu_strerror(r, t, sizeof t));
    }
    g->nmods = 1;
    hc->load_ms += now_ms() - t0;
    /* the build id ties the file to the spec it was built from */
    CUdeviceptr id;
    size_t idn;
    char buf[17] = "";
    if (g->cu->cuModuleGetGlobal(&id, &idn, g->mods[0], "cg_build_id") != CUDA_SUCCESS || idn != 17 ||
        CG_CU(e, g->cu->cuMemcpyDtoH(buf, id, 17)))
        return cg_fail(e, "%s was not built by 'convgen build' (no build id)", path);
    buf[16] = 0;
    if (strcmp(buf, hash))
        return cg_fail(e, "%s was built from a different spec or convgen (build %s, this spec %s): "
                       "rebuild it with 'convgen build'", path, buf, hash);
    return 0;
}

/* The module holding kernel `name` (and its constant symbols): with JIT one
 * module per kernel, from a fat binary one module for all. */
static CUmodule module_of(const cg_gpu *g, const char *name)
{
    for (int j = 0; j < g->nmods; j++)
        if (!g->modkernel[j][0] || !strcmp(g->modkernel[j], name)) return g->mods[j];
    return NULL;
}

/* Find each manifest kernel's function in the module that holds it, and let
 * it have its shared memory: a block gets 48 KiB (static + dynamic) unless
 * the function opts in to more, up to the device's opt-in limit; the
 * attribute set is the dynamic part (the manifest's `shared`). */
static int bind_functions(cg_gpu *g, cg_err *e)
{
    const cg_cu *cu = g->cu;
    for (int i = 0; i < g->m->nkernels; i++) {
        const cg_mkernel *k = &g->m->k[i];
        CUmodule mod = module_of(g, k->name);
        if (!mod || cu->cuModuleGetFunction(&g->fn[i], mod, k->name) != CUDA_SUCCESS)
            return cg_fail(e, "kernel '%s' not found in the compiled modules", k->name);
        int stat = 0;
        if (CG_CU(e, cu->cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, g->fn[i])))
            return -1;
        long total = (long)stat + k->shared;
        if (total > cu->smem_per_block_optin)
            return cg_fail(e, "kernel '%s' needs %ld bytes of shared memory (%d static + %d dynamic); "
                              "%s allows %d per block", k->name, total, stat, k->shared, cu->name,
                           cu->smem_per_block_optin);
        if (total > cu->smem_per_block &&
            CG_CU(e, cu->cuFuncSetAttribute(g->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            k->shared)))
            return -1;
    }
    return 0;
}

/* Copy a tensor into a kernel's __constant__ symbol, checking the sizes agree. */
static int to_symbol(cg_gpu *g, const char *kernel, const char *sym, const cg_tensor *t, cg_err *e)
{
    CUdeviceptr p;
    size_t n;
    CUmodule mod = module_of(g, kernel);
    if (!mod || g->cu->cuModuleGetGlobal(&p, &n, mod, sym) != CUDA_SUCCESS)
        return cg_fail(e, "constant symbol '%s' of kernel '%s' not found", sym, kernel);
    if (n != (size_t)t->count * 4)
        return cg_fail(e, "constant symbol '%s' holds %zu bytes, tensor '%s' has %lld", sym, n, t->name,
                       t->count * 4);
    return CG_CU(e, g->cu->cuMemcpyHtoD(p, t->data, n));
}

/* Upload tensor t as a kernel argument; transposed: its first dimension made
 * the last, (d0 x rest) -> (rest x d0), for kernels that read it reduction-major. */
static int to_device(cg_gpu *g, const cg_tensor *t, int transposed, CUdeviceptr *out, cg_err *e)
{
    size_t n = (size_t)t->count * 4;
    if (CG_CU(e, g->cu->cuMemAlloc(out, n))) return -1;
    g->owned[g->nowned++] = *out;
    if (!transposed) return CG_CU(e, g->cu->cuMemcpyHtoD(*out, t->data, n));
    float *tr = cg_weights_transposed(t->data, t->shape[0], t->count);
    if (!tr) return cg_fail(e, "out of memory transposing '%s'", t->name);
    int rc = CG_CU(e, g->cu->cuMemcpyHtoD(*out, tr, n));
    free(tr);
    return rc;
}

/* Weights and biases where each kernel's manifest entry says they live. */
static int upload_weights(cg_gpu *g, const cg_weights *w, cg_err *e)
{
    for (int i = 0; i < g->m->nkernels; i++) {
        const cg_mkernel *k = &g->m->k[i];
        for (int b = 0; b < 2; b++) {
            cg_place pl = b ? k->bplace : k->wplace;
            if (pl == CG_PLACE_NONE) continue;
            char name[CG_NAME_MAX + 16];
            snprintf(name, sizeof name, "%s.%s", k->layer, b ? "bias" : "weight");
            const cg_tensor *t = cg_weights_find(w, name);
            if (!t) return cg_fail(e, "kernel '%s' needs tensor '%s', which the weights lack", k->name, name);
            int rc = pl == CG_PLACE_CONST ? to_symbol(g, k->name, b ? k->bsym : k->wsym, t, e)
                                          : to_device(g, t, pl == CG_PLACE_ARG_T, b ? &g->bdev[i] : &g->wdev[i], e);
            if (rc) return -1;
        }
    }
    return 0;
}

/* Batch size: what the user asked, at most max_batch, and what fits in 80% of free memory. */
static int alloc_tensors(cg_gpu *g, long long want, cg_err *e)
{
    size_t per = 0, freeb = 0, total = 0;
    for (int i = 0; i < g->m->ntensors; i++) per += (size_t)g->m->t[i].elems * cg_dtype_size(g->m->t[i].dtype);
    if (CG_CU(e, g->cu->cuMemGetInfo(&freeb, &total))) return -1;
    long long fit = (long long)(freeb / 10 * 8 / per);
    long long b = want > 0 ? want : 65536;
    if (b > g->m->max_batch) b = g->m->max_batch;
    if (b > fit) b = fit;
    if (b < 1)
        return cg_fail(e, "one image needs %zu bytes of device memory; %zu are free", per, freeb);
    g->batch = b;
    for (int i = 0; i < g->m->ntensors; i++) {
        size_t n = (size_t)b * (size_t)g->m->t[i].elems * cg_dtype_size(g->m->t[i].dtype);
        if (CG_CU(e, g->cu->cuMemAlloc(&g->tdev[i], n))) return -1;
    }
    return 0;
}

/* What JIT code may assume: this device's limits, compiled for arch. */
static void device_target(const cg_cu *cu, int arch, cg_target *t)
{
    cg_target_default(t);
    t->cc = arch;
    t->max_shared_optin = cu->smem_per_block_optin;
    t->regs_per_block = cu->regs_per_block;
    t->regs_per_sm = cu->regs_per_sm;
    t->sms = cu->sm_count;
    t->max_threads = cu->max_threads_per_block;
}

/* Make g's context current for one public call, and restore the caller's
 * afterwards: two cg_gpu on two devices can be driven from one thread. */
static int ctx_enter(cg_gpu *g, cg_err *e) { return CG_CU(e, g->cu->cuCtxPushCurrent(g->cu->ctx)); }
static void ctx_leave(cg_gpu *g)
{
    CUcontext c;
    g->cu->cuCtxPopCurrent(&c);
}

/* A bundle's manifest against its spec: the same network and layers (the
 * CRCs already vouch for the bytes; this catches sections from two builds). */
static int check_bundle_manifest(const cg_manifest *m, const cg_spec *s, cg_err *e)
{
    if (strcmp(m->network, s->name) || m->nlayers != s->nlayers)
        return cg_fail(e, "%s: its manifest (network %s, %d layers) is not its spec's (%s, %d layers)", s->path,
                       m->network, m->nlayers, s->name, s->nlayers);
    for (int i = 0; i < s->nlayers; i++)
        if (strcmp(m->l[i].name, s->layers[i].name))
            return cg_fail(e, "%s: its manifest's layer %d is %s, its spec's %s", s->path, i + 1, m->l[i].name,
                           s->layers[i].name);
    return 0;
}

/* Everything cg_gpu_open does once the device is open and current: the
 * target, the generated code for it (or a bundle's manifest, with no
 * generator run), its images, weights, buffers, events. */
static int open_current(cg_gpu *g, const cg_spec *s, const cg_weights *w, const cg_gpu_opts *o,
                        cg_gen_output *gen, cg_host_costs *hc, cg_err *e)
{
    cg_target tg;
    cg_nvrtc *nv = NULL;
    cg_buf fat;
    cg_buf_init(&fat);
    char held[512] = "";
    int arch = 0, as_ptx = 0, rc;
    const char *fat_name = o->fatbin ? o->fatbin : s->path;
    if (o->manifest) {
        /* a bundle: the fat binary's bytes are borrowed, never freed here */
        fat.data = (char *)o->fatbin_data, fat.len = o->fatbin_len;
        rc = check_fatbin(g, fat_name, &fat, &tg, held, sizeof held, e);
        char origin[CG_PATH_MAX + 16];
        snprintf(origin, sizeof origin, "%s (manifest)", s->path);
        if (!rc) rc = cg_manifest_parse(o->manifest, o->manifest_len, origin, g->m, e);
        if (!rc) rc = check_bundle_manifest(g->m, s, e);
        if (!rc) rc = load_fatbin(g, g->m->hash, fat_name, &fat, held, hc, e);
        fat.data = NULL, fat.len = 0;
    } else {
        if (o->fatbin) {
            rc = cg_read_file(o->fatbin, &fat, e);
            if (!rc) rc = check_fatbin(g, o->fatbin, &fat, &tg, held, sizeof held, e);
        } else {
            rc = cg_nvrtc_open(&nv, e);
            if (!rc) rc = pick_jit_arch(g, nv, &arch, &as_ptx, e);
            if (!rc) device_target(g->cu, arch, &tg);
        }
        double t0 = now_ms();
        char regen[CG_PATH_MAX + 64];
        cg_regen_command(s->path, regen, sizeof regen);
        if (!rc) rc = cg_generate_for(s, regen, &tg, gen, e);
        if (!rc) rc = cg_manifest_parse(gen->manifest, gen->manifest_len, "generated manifest", g->m, e);
        hc->generate_ms = now_ms() - t0;
        if (!rc)
            rc = o->fatbin ? load_fatbin(g, gen->hash, o->fatbin, &fat, held, hc, e)
                           : load_jit(g, nv, arch, as_ptx, gen, o, hc, e);
        cg_gen_free(gen);
    }
    cg_buf_free(&fat);
    if (nv) cg_nvrtc_close(nv);
    if (!rc) rc = bind_functions(g, e);
    double t0 = now_ms();
    if (!rc) rc = upload_weights(g, w, e);
    hc->weights_ms = now_ms() - t0;
    t0 = now_ms();
    if (!rc) rc = alloc_tensors(g, o->batch, e);
    if (!rc) rc = CG_CU(e, g->cu->cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING));
    /* one event before each kernel and one after the last */
    for (int i = 0; !rc && i <= g->m->nkernels; i++)
        rc = CG_CU(e, g->cu->cuEventCreate(&g->ev[i], CU_EVENT_DEFAULT));
    hc->alloc_ms = now_ms() - t0;
    return rc;
}

int cg_gpu_open(cg_gpu **out, const cg_spec *s, const cg_weights *w, const cg_gpu_opts *o,
                cg_host_costs *hc, cg_err *e)
{
    memset(hc, 0, sizeof *hc);
    cg_gpu *g = calloc(1, sizeof *g);
    cg_gen_output *gen = calloc(1, sizeof *gen);
    if (g) g->m = malloc(sizeof *g->m);
    if (!g || !gen || !g->m) {
        if (g) free(g->m);
        free(g), free(gen);
        return cg_fail(e, "out of memory");
    }
    g->s = s;
    g->poison = o->poison;
    g->profile = o->profile;
    *out = g;
    int rc = cg_cu_open(&g->cu, o->device, e);
    if (!rc && !(rc = ctx_enter(g, e))) {
        rc = open_current(g, s, w, o, gen, hc, e);
        ctx_leave(g);
    }
    free(gen); /* what it held is freed by open_current */
    return rc;
}

/* Launch kernel i for n images of the current batch. */
static int launch(cg_gpu *g, int i, long long n, CUstream st, cg_err *e)
{
    const cg_mkernel *k = &g->m->k[i];
    CUdeviceptr in = g->tdev[k->in], outp = g->tdev[k->out], w = g->wdev[i], b = g->bdev[i];
    int nn = (int)n;
    void *args[CG_MAX_ARGS];
    cg_args_bind(k->args, k->nargs, &in, &outp, &w, &b, &nn, args);
    unsigned gx = (unsigned)cg_mdim_eval(k->grid[0], n), gy = (unsigned)cg_mdim_eval(k->grid[1], n),
             gz = (unsigned)cg_mdim_eval(k->grid[2], n);
    char what[200];
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", k->name);
    return cg_cu_check(e, g->cu->cuLaunchKernel(g->fn[i], gx, gy, gz, (unsigned)k->block[0],
                                                (unsigned)k->block[1], (unsigned)k->block[2],
                                                (unsigned)k->shared, st, args, NULL),
                       what);
}

static void prof_add(cg_gpu_times *t, const char *name, double ms)
{
    int j = 0;
    while (j < t->nprof && strcmp(t->prof[j].name, name)) j++;
    if (j == t->nprof) {
        if (t->nprof >= CG_MAN_KERNELS) return;
        memset(&t->prof[j], 0, sizeof t->prof[j]);
        snprintf(t->prof[j].name, sizeof t->prof[j].name, "%s", name);
        t->prof[j].min_ms = INFINITY;
        t->nprof++;
    }
    cg_kernel_prof *p = &t->prof[j];
    p->calls++;
    p->total_ms += ms;
    if (ms < p->min_ms) p->min_ms = ms;
    if (ms > p->max_ms) p->max_ms = ms;
}

/* The kernel a float input replaces: the one reading the uint8 input tensor,
 * when it is the input_u8 template's (its output is the network's float input). */
static int input_kernel(const cg_gpu *g)
{
    for (int i = 0; i < g->m->nkernels; i++)
        if (g->m->k[i].in == g->m->input) return strcmp(g->m->k[i].tpl, "input_u8") ? -1 : i;
    return -1;
}

int cg_gpu_takes_f32(const cg_gpu *g) { return input_kernel(g) >= 0; }

/* Run one batch already uploaded: every kernel in manifest order but `skip`
 * (-1: none), on stream st. timed: events between them (per kernel with
 * profiling, else at layer boundaries), waited for and added to t; untimed:
 * queued, nothing waited for. */
static int run_batch(cg_gpu *g, long long n, int skip, CUstream st, int timed, cg_gpu_times *t, cg_err *e)
{
    const cg_manifest *m = g->m;
    cg_cu *cu = g->cu;
    int ev = 0, rc = 0;
    int mark[CG_MAN_KERNELS + 1]; /* event index recorded before kernel i (-1: none) */
    for (int i = 0; i <= m->nkernels; i++) {
        int boundary = i == 0 || i == m->nkernels || g->profile ||
                       strcmp(m->k[i].layer, m->k[i - 1].layer);
        mark[i] = -1;
        if (boundary && timed) {
            if ((rc = CG_CU(e, cu->cuEventRecord(g->ev[ev], st)))) return rc;
            mark[i] = ev++;
        }
        if (i < m->nkernels && i != skip && (rc = launch(g, i, n, st, e))) return rc;
    }
    if (!timed) return 0;
    if ((rc = CG_CU(e, cu->cuEventSynchronize(g->ev[ev - 1])))) return rc;
    float ms;
    if ((rc = CG_CU(e, cu->cuEventElapsedTime(&ms, g->ev[mark[0]], g->ev[mark[m->nkernels]])))) return rc;
    t->total_ms += ms;
    /* per layer: from its first kernel's mark to the next boundary's */
    for (int i = 0; i < m->nkernels; i++) {
        if (mark[i] < 0) continue;
        int j = i + 1;
        while (mark[j] < 0) j++;
        if ((rc = CG_CU(e, cu->cuEventElapsedTime(&ms, g->ev[mark[i]], g->ev[mark[j]])))) return rc;
        if (m->k[i].layer_index >= 0) t->layer_ms[m->k[i].layer_index] += ms;
        if (g->profile && i != skip) prof_add(t, m->k[i].name, ms);
    }
    return 0;
}

/* Copy n bytes to or from the device: a device pointer (on_device) on stream
 * st, queued; host memory through the kernels' stream too (see run_current),
 * so that a download follows the kernels. dir: 0 upload, 1 download. */
static int copy(cg_gpu *g, int dir, int on_device, CUdeviceptr dev, void *host, CUdeviceptr other, size_t n,
                CUstream st, cg_err *e)
{
    cg_cu *cu = g->cu;
    if (on_device)
        return dir ? CG_CU(e, cu->cuMemcpyDtoDAsync(other, dev, n, st)) : CG_CU(e, cu->cuMemcpyDtoDAsync(dev, other, n, st));
    if (dir) return CG_CU(e, cu->cuMemcpyDtoH(host, dev, n));
    return CG_CU(e, cu->cuMemcpyHtoDAsync(dev, host, n, st));
}

/* cg_gpu_run_input with g's context current. */
static int run_current(cg_gpu *g, const cg_gpu_input *in, long long n, int *pred, float *probs,
                       float **layer_out, cg_gpu_times *t, cg_host_costs *hc, cg_err *e)
{
    const cg_manifest *m = g->m;
    cg_cu *cu = g->cu;
    memset(t, 0, sizeof *t);
    int skip = in->f32 ? input_kernel(g) : -1;
    if (in->f32 && skip < 0)
        return cg_fail(e, "%s: this network's first kernel reads uint8 pixels itself; give it uint8 input",
                       g->s->path);
    /* a float input goes where the input kernel would have written it */
    int tin = in->f32 ? m->k[skip].out : m->input;
    size_t in_bytes = (size_t)m->t[tin].elems * cg_dtype_size(m->t[tin].dtype);
    CUstream st = in->on_device ? (CUstream)in->stream : g->stream;
    uintptr_t dev_in = (uintptr_t)in->input, dev_pred = (uintptr_t)pred, dev_probs = (uintptr_t)probs;
    long long oc = m->t[m->output].elems;
    for (long long done = 0; done < n; done += g->batch) {
        long long b = n - done < g->batch ? n - done : g->batch;
        if (g->poison) {
            for (int i = 0; i < m->ntensors; i++) {
                if (m->t[i].dtype == CG_DT_U8 || (in->f32 && i == tin)) continue;
                /* a NaN pattern: anything a kernel fails to write shows up in the checks */
                if (CG_CU(e, cu->cuMemsetD32(g->tdev[i], 0x7fbadbadu, (size_t)(b * m->t[i].elems))))
                    return -1;
            }
            /* the memsets run on the legacy stream, the kernels on a non-blocking one that
             * does not wait for it: finish them first, or one could poison a tensor after a
             * kernel wrote it */
            if (CG_CU(e, cu->cuStreamSynchronize(NULL))) return -1;
        }
        double t0 = now_ms();
        /* on the kernels' stream: a plain cuMemcpyHtoD from pageable memory may return while
         * its DMA is still in flight on the legacy stream, which the non-blocking kernel stream
         * does not wait for (seen on an H200: the last images of a 64-image check of a
         * 128x128 network read half-copied pixels, 3 runs in 9) */
        if (copy(g, 0, in->on_device, g->tdev[tin], (char *)in->input + (size_t)done * in_bytes,
                 (CUdeviceptr)(dev_in + (size_t)done * in_bytes), (size_t)b * in_bytes, st, e))
            return -1;
        hc->upload_ms += now_ms() - t0;
        if (run_batch(g, b, skip, st, !in->on_device, t, e)) return -1;
        t0 = now_ms();
        if (copy(g, 1, in->on_device, g->tdev[m->predict], pred + done, (CUdeviceptr)(dev_pred + (size_t)done * 4),
                 (size_t)b * 4, st, e))
            return -1;
        if (probs && copy(g, 1, in->on_device, g->tdev[m->output], probs + done * oc,
                          (CUdeviceptr)(dev_probs + (size_t)(done * oc) * 4), (size_t)(b * oc) * 4, st, e))
            return -1;
        for (int l = 0; layer_out && !in->on_device && l < m->nlayers; l++) {
            if (!layer_out[l]) continue;
            long long el = m->t[m->l[l].out].elems;
            if (CG_CU(e, cu->cuMemcpyDtoH(layer_out[l] + done * el, g->tdev[m->l[l].out], (size_t)(b * el) * 4)))
                return -1;
        }
        hc->download_ms += now_ms() - t0;
    }
    return 0;
}

int cg_gpu_run_input(cg_gpu *g, const cg_gpu_input *in, long long n, int *pred, float *probs,
                     float **layer_out, cg_gpu_times *t, cg_host_costs *hc, cg_err *e)
{
    if (ctx_enter(g, e)) return -1;
    int rc = run_current(g, in, n, pred, probs, layer_out, t, hc, e);
    ctx_leave(g);
    return rc;
}

int cg_gpu_run(cg_gpu *g, const unsigned char *pixels, long long n, int *pred, float *probs,
               float **layer_out, cg_gpu_times *t, cg_host_costs *hc, cg_err *e)
{
    cg_gpu_input in = {pixels, 0, 0, NULL};
    return cg_gpu_run_input(g, &in, n, pred, probs, layer_out, t, hc, e);
}

const char *cg_gpu_device_name(const cg_gpu *g) { return g->cu ? g->cu->name : "?"; }
long long cg_gpu_batch(const cg_gpu *g) { return g->batch; }

void cg_gpu_close(cg_gpu *g)
{
    if (!g) return;
    if (g->cu) {
        cg_cu *cu = g->cu;
        int pushed = cu->cuCtxPushCurrent(cu->ctx) == CUDA_SUCCESS;
        for (size_t i = 0; i < sizeof g->ev / sizeof *g->ev; i++)
            if (g->ev[i]) cu->cuEventDestroy(g->ev[i]);
        if (g->stream) cu->cuStreamDestroy(g->stream);
        for (int i = 0; i < CG_MAX_TENSORS; i++)
            if (g->tdev[i]) cu->cuMemFree(g->tdev[i]);
        for (int i = 0; i < g->nowned; i++) cu->cuMemFree(g->owned[i]);
        for (int i = 0; i < g->nmods; i++) cu->cuModuleUnload(g->mods[i]);
        if (pushed) ctx_leave(g);
        cg_cu_close(cu);
    }
    free(g->m);
    free(g);
}
