/* gpu.c — the CUDA backend (see gpu.h). */
#include "gpu.h"
#include "cache.h"
#include "cuda_api.h"
#include "fatbin.h"
#include "aot.h"
#include "gen.h"
#include "jit.h"
#include "memplan.h"
#include "nvrtc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CG_SET_GRAPHS 4
/* choosing how a batch runs (auto): rounds (one batch each way) before timing,
 * rounds timed (the median of each way is kept), counts remembered. (31 rounds of
 * two ways cost 62 batches once per count of images: about 0.6 s for the slowest
 * bucketed network measured, zoo-7x7-large at 1,000 images, 9 ms a batch.) */
#define CG_WHOLE_WARM 10
#define CG_WHOLE_REPS 21
#define CG_WHOLE_PICKS 8
/* A batch's input of more than CG_INLINE_UPLOAD_MIN bytes and at most
 * CG_INLINE_UPLOAD_MAX goes up straight from the caller's (pageable) memory, not
 * from the set's pinned staging: the driver carries so small a copy from pageable
 * memory in the stream's own commands, where one from pinned memory goes through a
 * copy engine, whose completion the first kernel then waits for. On an H200
 * (2026-11-30, one image, bench/one-image-2026-11-30/): ece408-2018sp's 4,096 bytes
 * 16.6 -> 11.6 us of GPU time (medians), host p50 40.9 -> 34.5 us; ece408-2018fa's
 * 5,184 bytes 18.6 -> 14.4 and 43.0 -> 41.6; 17 of 23 zoo networks 12-39 % faster. From
 * pinned memory copies of 784 and 1,024 bytes were carried so too (2,048 not), and
 * those of 784 bytes took 0.2-0.5 us more from pageable memory (ece408-2017 8.8 ->
 * 9.3): they stay on the staging. */
#define CG_INLINE_UPLOAD_MIN 1024
#define CG_INLINE_UPLOAD_MAX (64 * 1024)

/* The ways a batch can run: the per-layer kernels with programmatic dependent
 * launch where it applies (a kernel launched early overlaps the tail of the one
 * before), the whole-network kernel, or the per-layer kernels each launched
 * plainly after the one before. Launched early, a kernel's blocks are placed
 * where the kernel before leaves room: on an H200 (2026-11-29) that made
 * ece408-2018sp at 256 images 275 us against 134 launched plainly, and
 * zoo-awkward at one image 74 against 86 the other way, so where both are
 * possible (kernels generated for a bucket, PDL in effect and some launch
 * carrying it) auto times them and keeps the faster, as it does the whole
 * kernel. */
enum { WAY_LAYERS = 0, WAY_WHOLE = 1, WAY_PLAIN = 2, CG_WAYS = 3 };

/* One stream set: what one batch in flight needs. While one set's kernels
 * run, another's copies do, so each has its own tensors and staging. */
typedef struct {
    CUstream stream;
    CUdeviceptr arena;                /* one allocation: a batch of every tensor, as planned */
    CUdeviceptr tdev[CG_MAX_TENSORS]; /* each tensor's place in it */
    CUevent ev[CG_MAN_KERNELS + 1];   /* at the kernel marks (cg_gpu.mark) */
    CUevent up0, up1, dn1;            /* upload start and end, download end */
    /* the kernels of a batch, captured: one graph per image count met (a full
     * batch and a remainder, typically), the oldest replaced beyond CG_SET_GRAPHS */
    CUgraphExec graph[CG_SET_GRAPHS];
    long long graph_n[CG_SET_GRAPHS]; /* the images each was captured for; 0: none */
    int graph_skip[CG_SET_GRAPHS];    /* the kernel it leaves out (a float input), -1: none */
    int graph_way[CG_SET_GRAPHS];     /* how it runs the batch: WAY_* */
    int graph_pdl[CG_SET_GRAPHS];     /* its launches with programmatic stream serialization */
    CUdeviceptr scratch;              /* the whole-network kernel's scratch (manifest scratch=), zeroed once */
    int ran_way;                      /* how the batch queued last ran: WAY_* */
    int graph_next;                   /* the slot the next capture takes */
    unsigned char *hin;               /* pinned: one batch of input pixels */
    unsigned char *hsmall;            /* pageable, CG_INLINE_UPLOAD_MAX bytes: a small float input
                                       * converted to the network's 16-bit input (allocated once needed) */
    unsigned char *hout;              /* pinned: one batch of every result downloaded */
    size_t hin_cap, hout_cap;         /* their bytes */
} cg_gpu_set;

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
    CUdeviceptr owned[2 * CG_MAN_KERNELS + CG_MAX_ARGS]; /* device weight buffers to free */
    int nowned;
    long long batch;                      /* images per batch, per set */
    int poison, profile;
    int graphs;                           /* replay each set's kernels as a captured CUDA graph */
    /* programmatic dependent launch: a kernel whose source has the prologue
     * (manifest pdl=1) and that directly follows another kernel in its stream is
     * launched with programmatic stream serialization (cuLaunchKernelEx) — on a
     * device of cc 9.0 or newer, with a driver that has cuLaunchKernelEx, without
     * --no-pdl and without --profile (per-kernel events sit between every two
     * kernels there, and the overlap would blur each kernel's time) */
    int pdl;
    int pdl_always;                       /* no timing of plain launches against it (cg_gpu_opts) */
    int pdl_launches;                     /* launches of the last queued batch that carried it */
    int layers_timed;                     /* events at layer boundaries (else layer_ms reads NaN) */
    int nsets;
    cg_gpu_set set[CG_PIPE_MAX_SETS];
    cg_memplan plan;                      /* the tensors' places in each set's arena */
    /* event index recorded before kernel i (i = nkernels: after the last), -1
     * for none: per kernel with --profile, else at layer boundaries */
    int mark[CG_MAN_KERNELS + 1];
    int nev;
    CUevent first; /* the run's first upload starts */
    /* the whole-network kernel (manifest whole=1), run for a batch instead of the
     * per-layer kernels k[0..nlk) where chosen */
    int nlk;                 /* the per-layer kernels (cg_manifest_layer_kernels) */
    int wk;                  /* the whole kernel's index in m->k, -1: none */
    int whole_mode;          /* CG_WHOLE_AUTO, _ON, _OFF */
    int whole_off;           /* refused once (driver, capture, launch): per-layer kernels from then on */
    char whole_note[256];    /* why it is not used */
    unsigned whole_blocks;   /* its grid x: min(CAP, SMs x resident blocks an SM), at least 1 */
    CUdeviceptr warg[CG_MAX_ARGS]; /* its w:/b: arguments' device pointers */
    CUevent wev[2]; /* timing the ways (auto): before and after one batch */
    struct {
        long long n;         /* images; 0: unused */
        int way;             /* the fastest way: WAY_* */
        double ms[CG_WAYS];  /* each way's median; NaN: not timed */
    } pick[CG_WHOLE_PICKS];
    int npick;
    /* the tuning record's decision for this bucket (the spec's whole_tuned), taken
     * under auto for every count of images instead of measuring: -1 none, else
     * whether the whole kernel; tuned_note: why a decision given was not taken */
    int tuned;
    double tuned_whole_ms, tuned_layers_ms;
    char tuned_note[CG_PATH_MAX + 256];
};

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
    cg_jit_opts jo = {arch, as_ptx, g->cu->cc, g->cu->driver_version, use_cache ? dir : NULL, 0, 0};
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
    double t0 = cg_now_ms();
    for (int i = 0; i < r.n && !rc; i++) {
        rc = CG_CU(e, g->cu->cuModuleLoadData(&g->mods[g->nmods], r.k[i].image.data));
        if (!rc) snprintf(g->modkernel[g->nmods++], sizeof g->modkernel[0], "%s", o->k[i].kernel);
    }
    hc->load_ms += cg_now_ms() - t0;
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
    double t0 = cg_now_ms();
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
    hc->load_ms += cg_now_ms() - t0;
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

/* The whole-network kernel's grid: every block must be resident at once (it
 * waits at grid-wide barriers), so with res:CAP as many blocks as the device
 * holds of it — its SMs times the blocks of this size and shared memory one SM
 * takes (the driver's occupancy answer) —, at most CAP and at least 1; a plain
 * extent as the manifest gives it. No cuLaunchKernelEx (a driver before 11.8):
 * no cooperative launch with it, the per-layer kernels run. */
static int whole_grid(cg_gpu *g, cg_err *e)
{
    const cg_mkernel *k = &g->m->k[g->wk];
    if (!g->cu->cuLaunchKernelEx) {
        g->whole_off = 1;
        snprintf(g->whole_note, sizeof g->whole_note, "the driver has no cuLaunchKernelEx (cooperative launch)");
        return 0;
    }
    if (!k->res_cap) {
        g->whole_blocks = (unsigned)k->grid[0].mul;
        return 0;
    }
    int per_sm = 0, threads = k->block[0] * k->block[1] * k->block[2];
    if (CG_CU(e, g->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, g->fn[g->wk], threads,
                                                                    (size_t)k->shared)))
        return -1;
    long long b = (long long)g->cu->sm_count * per_sm;
    if (b > k->res_cap) b = k->res_cap;
    g->whole_blocks = b < 1 ? 1 : (unsigned)b;
    return 0;
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
    return g->wk >= 0 ? whole_grid(g, e) : 0;
}

/* The bytes of tensor t as a kernel of weight type dt reads them: t's floats
 * (taps > 0: reordered taps x rest x first dimension, cg_weights_taps; 1 is the
 * first dimension made the last), converted once to dt where dt is f16 or bf16
 * (rounded to nearest even). *owned: a buffer the caller frees, or NULL where
 * the result is t's own data. NULL when out of memory or t does not divide into
 * the taps. */
static const void *weight_bytes(const cg_tensor *t, int taps, cg_dtype dt, void **owned)
{
    const float *src = t->data;
    float *tr = NULL;
    *owned = NULL;
    if (taps > 0 && !(src = tr = cg_weights_taps(t->data, t->shape[0], t->count, taps))) return NULL;
    if (dt != CG_DT_F16 && dt != CG_DT_BF16) return *owned = tr, src;
    uint16_t *h = cg_weights_narrowed(src, t->count, dt == CG_DT_F16 ? CG_W_F16 : CG_W_BF16);
    free(tr);
    return *owned = h, h;
}

/* Copy a tensor into a kernel's __constant__ symbol (in the kernel's weight
 * type dt), checking the sizes agree. */
static int to_symbol(cg_gpu *g, const char *kernel, const char *sym, const cg_tensor *t, cg_dtype dt, cg_err *e)
{
    CUdeviceptr p;
    size_t n, want = (size_t)t->count * cg_dtype_size(dt);
    CUmodule mod = module_of(g, kernel);
    if (!mod || g->cu->cuModuleGetGlobal(&p, &n, mod, sym) != CUDA_SUCCESS)
        return cg_fail(e, "constant symbol '%s' of kernel '%s' not found", sym, kernel);
    if (n != want)
        return cg_fail(e, "constant symbol '%s' holds %zu bytes, tensor '%s' has %zu", sym, n, t->name, want);
    void *owned;
    const void *src = weight_bytes(t, 0, dt, &owned);
    if (!src) return cg_fail(e, "out of memory converting '%s'", t->name);
    int rc = CG_CU(e, g->cu->cuMemcpyHtoD(p, src, n));
    free(owned);
    return rc;
}

/* Upload tensor t as a kernel argument in the kernel's weight type dt (FP32, or
 * converted once to f16/bf16); taps 1: its first dimension made the last,
 * (d0 x rest) -> (rest x d0), for kernels that read it reduction-major; taps N > 1:
 * d0 x C x N -> N x C x d0 (weights=arg:taps:N); 0: as stored. */
static int to_device(cg_gpu *g, const cg_tensor *t, int taps, cg_dtype dt, CUdeviceptr *out, cg_err *e)
{
    size_t n = (size_t)t->count * cg_dtype_size(dt);
    if (CG_CU(e, g->cu->cuMemAlloc(out, n))) return -1;
    g->owned[g->nowned++] = *out;
    void *owned;
    const void *src = weight_bytes(t, taps, dt, &owned);
    if (!src)
        return cg_fail(e, taps > 1 && t->count % ((long long)t->shape[0] * taps)
                              ? "tensor '%s' does not divide into the kernel's taps"
                              : "out of memory reordering or converting '%s'", t->name);
    int rc = CG_CU(e, g->cu->cuMemcpyHtoD(*out, src, n));
    free(owned);
    return rc;
}

/* weights=arg:fft:FHxFW: the conv weights' transforms (cg_weights_fft), FP32 pairs. */
static int fft_to_device(cg_gpu *g, const cg_mkernel *k, const cg_tensor *t, CUdeviceptr *out, cg_err *e)
{
    if (t->ndim != 4 || t->shape[2] != t->shape[3] || k->wdtype != CG_DT_F32)
        return cg_fail(e, "kernel '%s' (weights=arg:fft) reads FP32 weights of M x C x K x K; tensor '%s' is not",
                       k->name, t->name);
    long long count = 0;
    float *f = cg_weights_fft(t->data, t->shape[0], t->shape[1], t->shape[2], CG_FFT_H(k->wtaps), CG_FFT_W(k->wtaps),
                              &count);
    if (!f) return cg_fail(e, "out of memory transforming '%s' (or its K past the transform's sides)", t->name);
    const size_t n = (size_t)count * sizeof *f;
    int rc = CG_CU(e, g->cu->cuMemAlloc(out, n));
    if (!rc) {
        g->owned[g->nowned++] = *out;
        rc = CG_CU(e, g->cu->cuMemcpyHtoD(*out, f, n));
    }
    free(f);
    return rc;
}

/* The whole-network kernel's w:LAYER and b:LAYER arguments: the layer's FP32
 * weights or bias as the weights hold them (batch norms folded by the caller),
 * the device copy of a per-layer kernel of that layer which takes exactly that
 * tensor (weights=arg, bias=arg, FP32), else one uploaded here. */
static int whole_weights(cg_gpu *g, const cg_weights *w, cg_err *e)
{
    const cg_mkernel *k = &g->m->k[g->wk];
    for (int i = 0; i < k->nargs; i++) {
        if (k->args[i] != CG_ARG_LWEIGHTS && k->args[i] != CG_ARG_LBIAS) continue;
        int bias = k->args[i] == CG_ARG_LBIAS;
        const char *layer = g->m->l[k->argref[i]].name;
        char name[CG_NAME_MAX + 16];
        snprintf(name, sizeof name, "%s.%s", layer, bias ? "bias" : "weight");
        const cg_tensor *t = cg_weights_find(w, name);
        if (!t)
            return cg_fail(e, "kernel '%s': argument %c:%s: layer %s has no %s (no tensor '%s' in the weights)",
                           k->name, bias ? 'b' : 'w', layer, layer, bias ? "bias" : "weights", name);
        for (int j = 0; j < g->nlk && !g->warg[i]; j++) {
            const cg_mkernel *o = &g->m->k[j];
            if (strcmp(o->layer, layer) || o->wdtype != CG_DT_F32 || (bias ? o->bplace : o->wplace) != CG_PLACE_ARG)
                continue;
            g->warg[i] = bias ? g->bdev[j] : g->wdev[j];
        }
        if (!g->warg[i] && to_device(g, t, 0, CG_DT_F32, &g->warg[i], e)) return -1;
    }
    return 0;
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
            for (int j = 0; j < k->nmaps && !b; j++) {
                if (k->maps[j].target != CG_ARG_WEIGHTS) continue;
                long long per = cg_map_elems(&k->maps[j]);
                char txt[160];
                cg_map_text(&k->maps[j], txt, sizeof txt);
                if (per != t->count)
                    return cg_fail(e, "kernel '%s': tensor map %s holds %lld elements, '%s' %lld", k->name, txt, per,
                                   name, t->count);
            }
            int rc = pl == CG_PLACE_CONST    ? to_symbol(g, k->name, b ? k->bsym : k->wsym, t, k->wdtype, e)
                     : pl == CG_PLACE_ARG_FFT ? fft_to_device(g, k, t, &g->wdev[i], e)
                                              : to_device(g, t, cg_place_reorder(pl, b ? 0 : k->wtaps), k->wdtype,
                                     b ? &g->bdev[i] : &g->wdev[i], e);
            if (rc) return -1;
        }
    }
    return g->wk >= 0 ? whole_weights(g, w, e) : 0;
}

/* Batch size: what the user asked, at most max_batch, and what fits in 80% of
 * free memory with every stream set holding an arena for a batch of every
 * tensor, placed by the memory plan (runtime/formats/memplan.h; every tensor
 * apart with keep): sized from the plan's bytes per image, then planned for
 * that batch and made smaller while its alignment pushes it past the budget.
 * Then each set's arena (one allocation; each tensor at its planned offset),
 * stream and events; its pinned staging waits for the first run, which knows
 * how many images a batch will really hold. */
static int alloc_sets(cg_gpu *g, long long want, int keep, cg_host_costs *hc, cg_err *e)
{
    const cg_manifest *m = g->m;
    cg_cu *cu = g->cu;
    size_t freeb = 0, total = 0;
    cg_memplan_make(m, keep, 1, &g->plan);
    size_t per = cg_memplan_per_image(&g->plan);
    if (per < 1) per = 1;
    if (CG_CU(e, cu->cuMemGetInfo(&freeb, &total))) return -1;
    size_t budget = freeb / 10 * 8 / (size_t)g->nsets;
    size_t scratch = g->wk >= 0 ? (size_t)m->k[g->wk].scratch : 0; /* each set's, beside its arena */
    budget = budget > scratch ? budget - scratch : 0;
    long long fit = (long long)(budget / per);
    long long b = want > 0 ? want : 65536;
    if (b > m->max_batch) b = m->max_batch;
    if (b > fit) b = fit;
    if (b >= 1) cg_memplan_make(m, keep, b, &g->plan);
    while (b > 1 && g->plan.arena > budget) {
        long long less = (long long)((double)b * (double)budget / (double)g->plan.arena);
        b = less < b ? less : b - 1;
        if (b >= 1) cg_memplan_make(m, keep, b, &g->plan);
    }
    if (b < 1 || g->plan.arena > budget)
        return cg_fail(e, "one image needs %zu bytes of device memory in each of %d stream sets; %zu are free",
                       g->plan.arena, g->nsets, freeb);
    hc->arena_per_image = per, hc->tensors_per_image = g->plan.sum, hc->keep_tensors = keep;
    g->batch = b;
    for (int k = 0; k < g->nsets; k++) {
        cg_gpu_set *st = &g->set[k];
        if (CG_CU(e, cu->cuMemAlloc(&st->arena, g->plan.arena ? g->plan.arena : CG_MEMPLAN_ALIGN))) return -1;
        for (int i = 0; i < m->ntensors; i++) st->tdev[i] = st->arena + (CUdeviceptr)g->plan.off[i];
        if (CG_CU(e, cu->cuStreamCreate(&st->stream, CU_STREAM_NON_BLOCKING))) return -1;
        for (int i = 0; i < g->nev; i++)
            if (CG_CU(e, cu->cuEventCreate(&st->ev[i], CU_EVENT_DEFAULT))) return -1;
        if (CG_CU(e, cu->cuEventCreate(&st->up0, CU_EVENT_DEFAULT)) ||
            CG_CU(e, cu->cuEventCreate(&st->up1, CU_EVENT_DEFAULT)) ||
            CG_CU(e, cu->cuEventCreate(&st->dn1, CU_EVENT_DEFAULT)))
            return -1;
    }
    for (int i = 0; i < 2; i++) /* (any bucket may time its launch ways) */
        if (CG_CU(e, cu->cuEventCreate(&g->wev[i], CU_EVENT_DEFAULT))) return -1;
    return CG_CU(e, cu->cuEventCreate(&g->first, CU_EVENT_DEFAULT));
}

/* Whether kernel i (0 < i < nkernels) belongs to a convolution layer. */
static int conv_kernel(const cg_gpu *g, int i)
{
    const cg_mkernel *k = &g->m->k[i];
    return k->layer_index >= 0 && g->s->layers[k->layer_index].op == CG_OP_CONV;
}

/* Where the events go: before kernel i when it starts a layer (or before every
 * kernel with --profile), and after the last. With PDL, an event between two
 * kernels would stand between them in the stream and cut their overlap, so only
 * the boundaries of convolution layers keep theirs (each one's time, the `Op
 * Time` a run prints, is measured as without PDL); a stretch of other layers
 * between two marks is timed as one and counted to its first layer. Kernels
 * generated for a small batch keep no event inside the network under PDL:
 * their layers are not timed alone (layer_ms NaN) unless --profile. */
static void set_marks(cg_gpu *g)
{
    const cg_manifest *m = g->m;
    g->nev = 0;
    /* kernels generated for a small batch (a bucket) run a few microseconds each,
     * and an event between two of them costs about as much as one: under PDL they
     * keep none inside the network (only --profile times each layer there) */
    g->layers_timed = g->profile || !g->pdl || m->bucket == 0;
    for (int i = 0; i <= g->nlk; i++) {
        int boundary = i == 0 || i == g->nlk || g->profile || strcmp(m->k[i].layer, m->k[i - 1].layer);
        if (boundary && g->pdl && i > 0 && i < g->nlk)
            boundary = g->layers_timed && (conv_kernel(g, i) || conv_kernel(g, i - 1));
        g->mark[i] = boundary ? g->nev++ : -1;
    }
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

/* The tuning record's whole-network decision for the bucket of g's kernels
 * (cg_spec.whole_tuned): taken when it was made on kernels of the same build id
 * (a template's code, the per-layer choices, the target or the bucket changed
 * since: another id), else ignored with a notice, and auto measures as before. */
static void whole_record(cg_gpu *g)
{
    const cg_spec *s = g->s;
    g->tuned = -1;
    g->tuned_note[0] = 0;
    for (int i = 0; i < s->nwhole_tuned; i++) {
        const cg_whole_tuned *w = &s->whole_tuned[i];
        if (w->bucket != g->m->bucket || !g->m->bucket) continue;
        if (g->wk >= 0 && !strcmp(w->kernels, g->m->hash)) {
            g->tuned = w->whole;
            g->tuned_whole_ms = w->whole_ms, g->tuned_layers_ms = w->layers_ms;
        } else {
            snprintf(g->tuned_note, sizeof g->tuned_note,
                     "tuning record %.1024s: whole-network kernel, bucket %d: the network's kernels changed since it "
                     "was tuned (build %.16s, now %.16s%s): ignored, both paths timed at first use",
                     s->whole_tuned_from, w->bucket, w->kernels, g->m->hash,
                     g->wk < 0 ? ", with no whole-network kernel" : "");
        }
    }
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
            if (!rc) rc = cg_jit_target(nv, g->cu, &arch, &as_ptx, &tg, e);
        }
        /* the kernels for the batch asked for (a fat binary: the bucket it was built for) */
        tg.batch = cg_batch_bucket(o->batch);
        double t0 = cg_now_ms();
        char regen[CG_PATH_MAX + 64];
        cg_regen_command(s->path, regen, sizeof regen);
        if (!rc) rc = cg_generate_for(s, regen, &tg, gen, e);
        if (!rc) rc = cg_manifest_parse(gen->manifest, gen->manifest_len, "generated manifest", g->m, e);
        hc->generate_ms = cg_now_ms() - t0;
        if (!rc)
            rc = o->fatbin ? load_fatbin(g, gen->hash, o->fatbin, &fat, held, hc, e)
                           : load_jit(g, nv, arch, as_ptx, gen, o, hc, e);
        cg_gen_free(gen);
    }
    cg_buf_free(&fat);
    if (nv) cg_nvrtc_close(nv);
    if (!rc) {
        g->nlk = cg_manifest_layer_kernels(g->m);
        g->wk = cg_manifest_whole(g->m);
        whole_record(g);
    }
    if (!rc) rc = bind_functions(g, e);
    double t0 = cg_now_ms();
    if (!rc) rc = upload_weights(g, w, e);
    hc->weights_ms = cg_now_ms() - t0;
    t0 = cg_now_ms();
    if (!rc) set_marks(g);
    if (!rc) rc = alloc_sets(g, o->batch, o->keep_tensors || o->poison, hc, e);
    hc->alloc_ms = cg_now_ms() - t0;
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
    g->graphs = !o->no_graphs;
    g->pdl = !o->no_pdl && !o->profile; /* and the device and driver allow it: below, once opened */
    g->pdl_always = o->pdl_always;
    g->nsets = o->streams ? o->streams : 2;
    g->wk = -1;
    g->tuned = -1;
    g->whole_mode = o->whole == CG_WHOLE_ON || o->whole == CG_WHOLE_OFF ? o->whole : CG_WHOLE_AUTO;
    *out = g;
    if (g->nsets < 1 || g->nsets > CG_PIPE_MAX_SETS) {
        cg_fail(e, "%d stream sets asked for: from 1 to %d", o->streams, CG_PIPE_MAX_SETS);
        free(gen);
        return -1;
    }
    int rc = cg_cu_open(&g->cu, o->device, e);
    if (!rc) g->pdl = g->pdl && g->cu->cc >= 90 && g->cu->cuLaunchKernelEx;
    if (!rc && !(rc = ctx_enter(g, e))) {
        rc = open_current(g, s, w, o, gen, hc, e);
        ctx_leave(g);
    }
    free(gen); /* what it held is freed by open_current */
    return rc;
}

/* Kernel fn of record k over gx x gy x gz blocks on stream s with one launch
 * attribute (programmatic stream serialization, or cooperative): the launch
 * configuration both such launches share. The driver's answer, unchecked: a
 * refusal is each caller's to handle. */
static CUresult launch_ex(cg_gpu *g, CUfunction fn, const cg_mkernel *k, unsigned gx, unsigned gy, unsigned gz,
                          CUstream s, CUlaunchAttribute *attr, void **args)
{
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = gx, cfg.gridDimY = gy, cfg.gridDimZ = gz;
    cfg.blockDimX = (unsigned)k->block[0], cfg.blockDimY = (unsigned)k->block[1], cfg.blockDimZ = (unsigned)k->block[2];
    cfg.sharedMemBytes = (unsigned)k->shared;
    cfg.hStream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return g->cu->cuLaunchKernelEx(&cfg, fn, args, NULL);
}

/* Whether kernel i, launched for n images right after another kernel in its
 * stream (after_kernel), carries programmatic stream serialization: PDL in
 * effect, the kernel with the prologue, and its grid at most one block a
 * multiprocessor. Launched early, a larger grid's blocks are placed where the
 * kernel before leaves room and can crowd some multiprocessors while others
 * idle (measured on an H200: ResNet-18 at one image, whose split convolutions
 * launch thousands of one-warp blocks, took 834 us with every launch overlapped
 * against 628 with the convolutions launched plainly after an event). */
static int pdl_launch(const cg_gpu *g, int i, long long n, int after_kernel)
{
    const cg_mkernel *k = &g->m->k[i];
    if (!g->pdl || !k->pdl || !after_kernel) return 0;
    unsigned long long blocks = (unsigned long long)cg_mdim_eval(k->grid[0], n) * cg_mdim_eval(k->grid[1], n) *
                                cg_mdim_eval(k->grid[2], n);
    return g->cu->sm_count <= 0 || blocks <= (unsigned long long)g->cu->sm_count;
}

/* Launch kernel i for n images of a batch held in set st's tensors, on stream s
 * (the set's own, or a caller's). after_kernel: the operation queued on s just
 * before is a kernel launch (no event, copy or memset in between), so that the
 * launch may overlap it where PDL is in effect and the kernel has the prologue. */
static int launch(cg_gpu *g, cg_gpu_set *st, int i, long long n, CUstream s, int after_kernel, cg_err *e)
{
    const cg_mkernel *k = &g->m->k[i];
    CUdeviceptr in[CG_MAX_INPUTS], out[CG_MAX_OUTPUTS], w = g->wdev[i], b = g->bdev[i];
    void *inp[CG_MAX_INPUTS], *outp[CG_MAX_OUTPUTS];
    for (int j = 0; j < k->nin; j++) in[j] = st->tdev[k->in[j]], inp[j] = &in[j];
    for (int j = 0; j < k->nout; j++) out[j] = st->tdev[k->outs[j]], outp[j] = &out[j];
    int nn = (int)n;
    void *args[CG_MAX_ARGS], *mapp[CG_MAX_MAPS];
    /* tensor maps over the set's buffers (a batch of g->batch images) or the weights; the
     * launch copies them, so they live here */
    CUtensorMap maps[CG_MAX_MAPS];
    for (int j = 0; j < k->nmaps; j++) {
        const cg_mmap *mp = &k->maps[j];
        int ti = cg_arg_input(mp->target), to = cg_arg_output(mp->target);
        CUdeviceptr base = ti >= 0 ? in[ti] : to >= 0 ? out[to] : w;
        cg_dtype dt = ti >= 0 ? g->m->t[k->in[ti]].dtype : to >= 0 ? g->m->t[k->outs[to]].dtype : k->wdtype;
        if (cg_map_encode(g->cu, k->name, mp, dt, base, g->batch, &maps[j], e)) return -1;
        mapp[j] = &maps[j];
    }
    if (cg_args_bind(k->args, k->nargs, inp, k->nin, outp, k->nout, &w, &b, &nn, mapp, k->nmaps, args))
        return cg_fail(e, "kernel %s: an argument role names an input it does not read or an output it does not "
                          "write", k->name);
    unsigned gx = (unsigned)cg_mdim_eval(k->grid[0], n), gy = (unsigned)cg_mdim_eval(k->grid[1], n),
             gz = (unsigned)cg_mdim_eval(k->grid[2], n);
    char what[200];
    if (pdl_launch(g, i, n, after_kernel)) {
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUresult r = launch_ex(g, g->fn[i], k, gx, gy, gz, s, &attr, args);
        if (r == CUDA_SUCCESS) {
            g->pdl_launches++;
            return 0;
        }
        /* refused (nothing was queued; a capture is invalidated, and queue_graph
         * captures again): PDL off for this cg_gpu, the plain launch below */
        g->pdl = 0;
    }
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", k->name);
    return cg_cu_check(e, g->cu->cuLaunchKernel(g->fn[i], gx, gy, gz, (unsigned)k->block[0],
                                                (unsigned)k->block[1], (unsigned)k->block[2],
                                                (unsigned)k->shared, s, args, NULL),
                       what);
}

/* Launch the whole-network kernel for n images of set st on stream s:
 * cooperative (all its blocks resident at once: it waits at grid-wide
 * barriers), its grid whole_blocks, its arguments bound by role — in, out and
 * t:TENSOR the set's tensors, w:/b: the layers' weights, scratch the set's
 * buffer, n the images. A launch the driver refuses turns the whole kernel off
 * for this cg_gpu (whole_note says why) and returns 1: nothing was queued (a
 * capture is invalidated) and the caller runs the per-layer kernels. */
static int launch_whole(cg_gpu *g, cg_gpu_set *st, long long n, CUstream s, cg_err *e)
{
    const cg_mkernel *k = &g->m->k[g->wk];
    CUdeviceptr val[CG_MAX_ARGS];
    void *args[CG_MAX_ARGS];
    int nn = (int)n;
    for (int i = 0; i < k->nargs; i++) {
        int in = cg_arg_input(k->args[i]);
        switch (k->args[i]) {
        case CG_ARG_OUT: val[i] = st->tdev[k->out]; break;
        case CG_ARG_N: break;
        case CG_ARG_TENSOR: val[i] = st->tdev[k->argref[i]]; break;
        case CG_ARG_LWEIGHTS:
        case CG_ARG_LBIAS: val[i] = g->warg[i]; break;
        case CG_ARG_SCRATCH: val[i] = st->scratch; break;
        default:
            if (in < 0 || in >= k->nin)
                return cg_fail(e, "kernel %s: argument role %s has nothing to bind", k->name,
                               cg_arg_role_name(k->args[i]));
            val[i] = st->tdev[k->in[in]]; /* in, in1, in2, in3 */
        }
        args[i] = k->args[i] == CG_ARG_N ? (void *)&nn : (void *)&val[i];
    }
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUresult r = launch_ex(g, g->fn[g->wk], k, g->whole_blocks, (unsigned)cg_mdim_eval(k->grid[1], n),
                           (unsigned)cg_mdim_eval(k->grid[2], n), s, &attr, args);
    if (r == CUDA_SUCCESS) return 0;
    char why[160];
    g->whole_off = 1;
    snprintf(g->whole_note, sizeof g->whole_note, "its cooperative launch of %u blocks was refused (%s)",
             g->whole_blocks, cg_cu_strerror(r, why, sizeof why));
    return 1;
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
    for (int i = 0; i < cg_manifest_layer_kernels(g->m); i++)
        for (int j = 0; j < g->m->k[i].nin; j++)
            if (g->m->k[i].in[j] == g->m->input) return strcmp(g->m->k[i].tpl, "input_u8") ? -1 : i;
    return -1;
}

int cg_gpu_takes_f32(const cg_gpu *g) { return input_kernel(g) >= 0; }

/* Whether per-layer kernel i runs for a batch whose input skips kernel `skip`
 * (a float input skips the input kernel; -1: the pixels): not the skipped one,
 * and fed that input (feed=: a first layer's twins, planner.pixel_twin). */
static int runs(const cg_gpu *g, int i, int skip)
{
    return i != skip && cg_manifest_feeds(&g->m->k[i], skip >= 0);
}

int cg_gpu_layers_kept(const cg_gpu *g, float *const *layer_out, cg_err *e)
{
    for (int l = 0; layer_out && l < g->m->nlayers; l++)
        if (layer_out[l] && !cg_memplan_kept(&g->plan, g->m, g->m->l[l].out))
            return cg_fail(e, "%s: layer %s's output shares device memory with later layers' and is not kept "
                              "after a batch: open the network with keep_tensors to read every layer",
                           g->s->path, g->m->l[l].name);
    return 0;
}

/* One result copied back per batch: a tensor, bytes per image, where the
 * caller wants it, and its place in the set's pinned staging. */
typedef struct {
    int tensor;    /* the tensor copied from the device: the one asked for, or the parent of a view */
    int want;      /* the tensor asked for (a view: its slice of each image of `tensor`) */
    size_t per;    /* bytes an image of `tensor` */
    unsigned char *dst;
    size_t at; /* offset in hout: batch * (bytes per image of the downloads before it) */
    cg_dtype half; /* CG_DT_F16 or CG_DT_BF16: a 16-bit tensor, widened to the caller's floats;
                    * else CG_DT_F32 (copied as it is) */
} cg_download;

/* One cg_gpu_run: what the pipeline's callbacks share. */
typedef struct {
    cg_gpu *g;
    const unsigned char *src; /* host input: uint8 pixels, or floats when skip >= 0 */
    int tin;                  /* the tensor the input goes to */
    size_t in_per;            /* its bytes per image */
    cg_dtype in_half;         /* CG_DT_F16/CG_DT_BF16: float input narrowed to that type while staged
                               * (src holds in_per / 2 floats an image); else CG_DT_F32 */
    int skip;                 /* the kernel a float input replaces, -1: none */
    cg_gpu_times *t;
    int ndl;
    cg_download dl[CG_MAX_LAYERS + 2];
    int prev; /* the set of the batch submitted last, -1 before the first */
} cg_gpu_runctx;

/* memcpy with every core for large buffers: staging a batch of pixels into
 * pinned memory on one thread (5-10 GB/s) can take longer than the batch's
 * kernels, and the pipeline runs no faster than its slowest stage. */
static void copy_wide(unsigned char *dst, const unsigned char *src, size_t n)
{
    const size_t chunk = (size_t)1 << 20;
    if (n < 4 * chunk) {
        memcpy(dst, src, n);
        return;
    }
    long long nchunks = (long long)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long long c = 0; c < nchunks; c++) {
        size_t at = (size_t)c * chunk;
        memcpy(dst + at, src + at, n - at < chunk ? n - at : chunk);
    }
}

/* Record event ev on set st's stream; `external`: as a graph's capture needs it
 * (an external event node, so that its time can be read), else plainly. */
static int record(cg_gpu *g, cg_gpu_set *st, CUevent ev, int external, cg_err *e)
{
    cg_cu *cu = g->cu;
    return external ? CG_CU(e, cu->cuEventRecordWithFlags(ev, st->stream, CU_EVENT_RECORD_EXTERNAL))
                    : CG_CU(e, cu->cuEventRecord(ev, st->stream));
}

/* The kernels of a batch of n images on set st (without kernel `skip`), with
 * the events at the marks, recorded as `record` says, run the way `way` says:
 * WAY_WHOLE, the whole-network kernel instead, between the first mark's event
 * and the last's (1: it was refused, nothing queued but the first event);
 * WAY_PLAIN, every launch without programmatic stream serialization. */
static int queue_kernels(cg_gpu *g, cg_gpu_set *st, int skip, long long n, int external, int way, cg_err *e)
{
    int after_kernel = 0; /* the last operation queued is a kernel */
    g->pdl_launches = 0;
    if (way == WAY_WHOLE) {
        int rc = record(g, st, st->ev[0], external, e);
        if (!rc) rc = launch_whole(g, st, n, st->stream, e);
        return rc ? rc : record(g, st, st->ev[g->nev - 1], external, e);
    }
    for (int i = 0; i <= g->nlk; i++) {
        if (g->mark[i] >= 0) {
            if (record(g, st, st->ev[g->mark[i]], external, e)) return -1;
            after_kernel = 0;
        }
        if (i < g->nlk && runs(g, i, skip)) {
            if (launch(g, st, i, n, st->stream, after_kernel && way == WAY_LAYERS, e)) return -1;
            after_kernel = 1;
        }
    }
    return 0;
}

/* The set's kernels for n images as one CUDA graph: captured from the set's
 * stream the first time a count (skipped kernel, and way) is met — the grid
 * and the argument n are baked in — and kept, a few counts per set, then
 * replayed with one launch. A capture the driver refuses turns graphs off for
 * this cg_gpu and the batch runs as plain launches (the profile says which); a
 * whole kernel whose launch, capture or graph is refused is turned off
 * (whole_note) and the per-layer kernels are captured instead. *ran: the way
 * queued. */
static int queue_graph(cg_gpu *g, cg_gpu_set *st, int skip, long long n, int way, int *ran, cg_gpu_times *t,
                       cg_err *e)
{
    cg_cu *cu = g->cu;
    int slot = -1;
    *ran = WAY_LAYERS;
    for (int i = 0; i < CG_SET_GRAPHS && slot < 0; i++)
        if (st->graph[i] && st->graph_n[i] == n && st->graph_skip[i] == skip && st->graph_way[i] == way) slot = i;
    if (slot < 0) {
        slot = st->graph_next;
        st->graph_next = (st->graph_next + 1) % CG_SET_GRAPHS;
        if (st->graph[slot]) {
            if (CG_CU(e, cu->cuGraphExecDestroy(st->graph[slot]))) return -1;
            st->graph[slot] = NULL, st->graph_n[slot] = 0;
        }
        CUgraph gr = NULL;
        CUresult inst = CUDA_ERROR_UNKNOWN;
        for (;;) {
            int pdl = g->pdl && way == WAY_LAYERS, whole = way == WAY_WHOLE;
            if (CG_CU(e, cu->cuStreamBeginCapture(st->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))) return -1;
            int rc = queue_kernels(g, st, skip, n, 1, way, e);
            CUresult end = cu->cuStreamEndCapture(st->stream, &gr);
            if (!rc && end == CUDA_SUCCESS) inst = cu->cuGraphInstantiateWithFlags(&st->graph[slot], gr, 0);
            if ((pdl || whole) && (rc || end != CUDA_SUCCESS || inst != CUDA_SUCCESS)) {
                /* a driver that takes the launches but not their capture, or not
                 * the graph they make: PDL off for this cg_gpu, captured again
                 * (the marks stay: they are a subset of those without PDL); the
                 * whole kernel likewise, the per-layer kernels captured instead */
                if (gr && CG_CU(e, cu->cuGraphDestroy(gr))) return -1;
                gr = NULL;
                if (inst == CUDA_SUCCESS && CG_CU(e, cu->cuGraphExecDestroy(st->graph[slot]))) return -1;
                st->graph[slot] = NULL;
                inst = CUDA_ERROR_UNKNOWN;
                if (whole) {
                    if (!g->whole_off) {
                        char why[160];
                        snprintf(g->whole_note, sizeof g->whole_note, "its capture in a CUDA graph was refused (%s)",
                                 cg_cu_strerror(rc ? CUDA_ERROR_NOT_SUPPORTED : end != CUDA_SUCCESS ? end : inst,
                                                why, sizeof why));
                        g->whole_off = 1;
                    }
                    way = WAY_LAYERS;
                } else {
                    g->pdl = 0;
                }
                continue;
            }
            if (rc) {
                if (gr) cu->cuGraphDestroy(gr);
                return -1;
            }
            if (CG_CU(e, end)) return -1;
            break;
        }
        if (CG_CU(e, cu->cuGraphDestroy(gr))) return -1;
        if (inst != CUDA_SUCCESS) {
            /* no graph: plain launches from now on, the way asked (the whole kernel's capture
             * was refused above, so a whole way that reaches here ran the per-layer kernels) */
            st->graph[slot] = NULL;
            g->graphs = 0;
            *ran = way == WAY_WHOLE ? WAY_LAYERS : way;
            return queue_kernels(g, st, skip, n, 0, *ran, e);
        }
        st->graph_n[slot] = n, st->graph_skip[slot] = skip, st->graph_way[slot] = way;
        st->graph_pdl[slot] = g->pdl_launches;
        t->graph_captures++;
    }
    CUresult r = cu->cuGraphLaunch(st->graph[slot], st->stream);
    if (r != CUDA_SUCCESS && way == WAY_WHOLE) {
        /* the graph of the cooperative launch refused at its launch: the whole
         * kernel off, the per-layer kernels' graph instead */
        char why[160];
        snprintf(g->whole_note, sizeof g->whole_note, "the launch of its CUDA graph was refused (%s)",
                 cg_cu_strerror(r, why, sizeof why));
        g->whole_off = 1;
        if (CG_CU(e, cu->cuGraphExecDestroy(st->graph[slot]))) return -1;
        st->graph[slot] = NULL, st->graph_n[slot] = 0;
        return queue_graph(g, st, skip, n, WAY_LAYERS, ran, t, e);
    }
    t->graph_replays++;
    g->pdl_launches = st->graph_pdl[slot];
    *ran = way;
    return CG_CU(e, r);
}

/* Queue one batch of n images on set st the way `way` says, as the set
 * normally runs it (its graph, or plain launches); a whole kernel refused falls
 * back to the per-layer kernels. *ran: the way that ran. */
static int queue_batch(cg_gpu *g, cg_gpu_set *st, int skip, long long n, int way, int *ran, cg_gpu_times *t,
                       cg_err *e)
{
    if (g->whole_off && way == WAY_WHOLE) way = WAY_LAYERS;
    if (g->graphs) return queue_graph(g, st, skip, n, way, ran, t, e);
    int rc = queue_kernels(g, st, skip, n, 0, way, e);
    *ran = rc ? WAY_LAYERS : way;
    if (rc == 1) rc = queue_kernels(g, st, skip, n, 0, WAY_LAYERS, e); /* refused: the first event is re-recorded */
    return rc;
}

/* Whether the whole-network kernel can run a batch: there is one, it was not
 * refused, and the input is the pixels (a float input skips the input kernel,
 * which it runs). */
static int whole_possible(const cg_gpu *g, int skip) { return g->wk >= 0 && skip < 0 && !g->whole_off; }

/* Whether the per-layer kernels for n images have two ways to be launched worth
 * timing: kernels generated for a bucket (the large batch keeps PDL where it
 * applies: its kernels are few a launch and long), and some launch that would
 * carry PDL. */
static int pdl_in_play(const cg_gpu *g, int skip, long long n)
{
    if (!g->pdl || g->pdl_always || !g->m->bucket) return 0;
    for (int i = 0, after_kernel = 0; i < g->nlk; i++) {
        if (g->mark[i] >= 0) after_kernel = 0;
        if (!runs(g, i, skip)) continue;
        if (pdl_launch(g, i, n, after_kernel)) return 1;
        after_kernel = 1;
    }
    return 0;
}

/* Auto: time a batch of n images on set st each way in `ways` (bits 1 << WAY_*)
 * and remember the fastest for n. The ways alternate, one batch each, every
 * batch timed alone by events around it and waited for (as a call of
 * cg_net_run is), the first CG_WHOLE_WARM rounds untimed (graph captures,
 * clocks rising), then the median of CG_WHOLE_REPS each. (Timing each way in a run of its own
 * favoured the one measured second by several microseconds on an H200: the
 * first still paid the warm-up.) The host waits for the timings (once per count
 * of images). A whole kernel refused while being timed is left out.
 * refill (in_bytes > 0): a float input's tensor is the input kernel's output,
 * whose bytes the memory plan lets later layers reuse, so each batch timed gets
 * the input uploaded again first from `from` (the staging, or the caller's memory
 * for a small input; outside its events); the pixels are a tensor of their own,
 * never reused. */
static int measure_ways(cg_gpu *g, cg_gpu_set *st, int skip, long long n, unsigned ways, int tin,
                        const unsigned char *from, size_t in_bytes, cg_gpu_times *t, cg_err *e)
{
    cg_cu *cu = g->cu;
    double v[CG_WAYS][CG_WHOLE_REPS];
    const int warm = CG_WHOLE_WARM, reps = CG_WHOLE_REPS;
    for (int r = 0; r < warm + reps; r++) {
        for (int way = 0; way < CG_WAYS; way++) {
            if (!(ways >> way & 1)) continue;
            int ran = WAY_LAYERS;
            if (in_bytes && CG_CU(e, cu->cuMemcpyHtoDAsync(st->tdev[tin], from, in_bytes, st->stream))) return -1;
            if (CG_CU(e, cu->cuEventRecord(g->wev[0], st->stream)) || queue_batch(g, st, skip, n, way, &ran, t, e) ||
                CG_CU(e, cu->cuEventRecord(g->wev[1], st->stream)) || CG_CU(e, cu->cuEventSynchronize(g->wev[1])))
                return -1;
            if (ran != way) { /* the whole kernel was refused */
                ways &= ~(1u << way);
                continue;
            }
            float f;
            if (r >= warm) {
                if (CG_CU(e, cu->cuEventElapsedTime(&f, g->wev[0], g->wev[1]))) return -1;
                v[way][r - warm] = f;
            }
        }
    }
    int at = g->npick++ % CG_WHOLE_PICKS; /* the oldest replaced */
    double *ms = g->pick[at].ms;
    g->pick[at].n = n;
    g->pick[at].way = WAY_LAYERS; /* always timed */
    for (int way = 0; way < CG_WAYS; way++) {
        ms[way] = ways >> way & 1 ? cg_median(v[way], reps) : NAN;
        if (ms[way] < ms[g->pick[at].way]) g->pick[at].way = way;
    }
    if (g->pick[at].way == WAY_WHOLE && g->whole_off) g->pick[at].way = WAY_LAYERS;
    return 0;
}

/* How a batch of n images runs: the whole-network kernel never without one,
 * with a float input (it starts from the uint8 pixels), once refused, or with
 * CG_WHOLE_OFF; always with CG_WHOLE_ON; with auto what was measured for n,
 * else the tuning record's decision where it leaves nothing to time. -1:
 * measure first (*ways: the ways to time, bits 1 << WAY_*). *pick: the
 * measurement, -1 if none. */
static int way_for(cg_gpu *g, int skip, long long n, int *pick, unsigned *ways)
{
    *pick = -1, *ways = 0;
    for (int i = 0; i < g->npick && i < CG_WHOLE_PICKS; i++)
        if (g->pick[i].n == n) *pick = i;
    int whole = whole_possible(g, skip) && g->whole_mode != CG_WHOLE_OFF;
    if (whole && g->whole_mode == CG_WHOLE_ON) return WAY_WHOLE;
    if (*pick >= 0) return g->pick[*pick].way == WAY_WHOLE && !whole ? WAY_LAYERS : g->pick[*pick].way;
    if (whole && g->tuned == 1) return WAY_WHOLE;
    int plain = pdl_in_play(g, skip, n);
    if (whole && g->tuned < 0) *ways |= 1u << WAY_WHOLE;
    if (plain) *ways |= 1u << WAY_PLAIN;
    if (!*ways) return WAY_LAYERS;
    *ways |= 1u << WAY_LAYERS;
    return -1;
}

/* What a run says about how its last batch of n images ran (cg_gpu_times): the
 * whole-network kernel or the per-layer kernels, the times measured to choose,
 * and why the whole kernel did not run where it could have. */
static void whole_times(cg_gpu *g, int skip, long long n, int ran, cg_gpu_times *t)
{
    int pick;
    unsigned ways;
    (void)way_for(g, skip, n, &pick, &ways);
    t->whole_ms = pick >= 0 ? g->pick[pick].ms[WAY_WHOLE] : NAN;
    t->pdl_ms = pick >= 0 ? g->pick[pick].ms[WAY_LAYERS] : NAN;
    t->plain_ms = pick >= 0 ? g->pick[pick].ms[WAY_PLAIN] : NAN;
    /* the per-layer kernels as they run: the faster of their two ways where both were timed */
    t->layers_ms = !isnan(t->plain_ms) && !(t->plain_ms >= t->pdl_ms) ? t->plain_ms : t->pdl_ms;
    t->plain = ran == WAY_PLAIN;
    t->whole_note[0] = 0;
    /* where the choice came from: forced, measured for n, or the tuning record;
     * none where no choice could be made (no whole kernel, a float input, the
     * whole kernel refused: the note says why) */
    t->whole_from = CG_WHOLE_FROM_NONE;
    int choosing = whole_possible(g, skip);
    if (choosing && (g->whole_mode == CG_WHOLE_ON || g->whole_mode == CG_WHOLE_OFF)) {
        t->whole_from = CG_WHOLE_FROM_FORCED;
    } else if (choosing && pick >= 0 && !isnan(t->whole_ms)) {
        t->whole_from = CG_WHOLE_FROM_MEASURED;
    } else if (choosing && g->tuned >= 0) {
        t->whole_from = CG_WHOLE_FROM_RECORD;
        t->whole_ms = g->tuned_whole_ms, t->layers_ms = g->tuned_layers_ms;
    }
    if (g->wk < 0) {
        t->whole = g->whole_mode == CG_WHOLE_ON ? CG_RAN_LAYERS : CG_RAN_NO_WHOLE;
        if (t->whole)
            snprintf(t->whole_note, sizeof t->whole_note, "the manifest has no whole-network kernel (%s)",
                     g->m->bucket ? "not for this batch's kernels" : "large-batch kernels");
        return;
    }
    t->whole = ran == WAY_WHOLE ? CG_RAN_WHOLE : CG_RAN_LAYERS;
    if (ran == WAY_WHOLE) return;
    if (g->whole_off) snprintf(t->whole_note, sizeof t->whole_note, "%s", g->whole_note);
    else if (skip >= 0) snprintf(t->whole_note, sizeof t->whole_note, "a float input skips the input kernel, which it runs");
    else if (g->whole_mode == CG_WHOLE_OFF) snprintf(t->whole_note, sizeof t->whole_note, "turned off (whole off)");
}

/* Tensor t of set st, n images, filled with a NaN pattern on its stream (a
 * float tensor; uint8 left as it is), so that anything a kernel fails to write
 * shows up in the checks (0x7fff is a NaN as f16 and as bf16). */
static int poison_one(cg_gpu *g, cg_gpu_set *st, int t, long long n, cg_err *e)
{
    const cg_manifest *m = g->m;
    cg_cu *cu = g->cu;
    if (m->t[t].dtype == CG_DT_U8 || m->t[t].view) return 0; /* (a view: its parent's bytes) */
    size_t count = (size_t)n * (size_t)m->t[t].elems;
    if (cg_dtype_size(m->t[t].dtype) == 2) return CG_CU(e, cu->cuMemsetD16Async(st->tdev[t], 0x7fff, count, st->stream));
    return CG_CU(e, cu->cuMemsetD32Async(st->tdev[t], 0x7fbadbadu, count, st->stream));
}

/* With poison: every tensor of set st so filled. */
static int poison_tensors(cg_gpu *g, cg_gpu_set *st, long long n, cg_err *e)
{
    for (int i = 0; g->poison && i < g->m->ntensors; i++)
        if (poison_one(g, st, i, n, e)) return -1;
    return 0;
}

/* Set st's scratch buffer for the whole-network kernel (manifest scratch=),
 * made the first time the set may run that kernel (never where it is off) and
 * zeroed once: the kernel leaves its counters at zero when it ends. Outside any
 * capture (before the batch is queued). */
static int ensure_scratch(cg_gpu *g, cg_gpu_set *st, cg_err *e)
{
    size_t bytes = g->wk >= 0 ? (size_t)g->m->k[g->wk].scratch : 0;
    if (!bytes || st->scratch) return 0;
    return CG_CU(e, g->cu->cuMemAlloc(&st->scratch, bytes)) || CG_CU(e, g->cu->cuMemsetD8(st->scratch, 0, bytes))
               ? -1
               : 0;
}

/* Pipeline submit: stage the pixels in pinned memory, then on the set's stream
 * poison (if asked), upload, wait for the previous batch's kernels (so that
 * kernels never share the device and each layer's events time it alone), run
 * every kernel with events at the marks — or the whole-network kernel where
 * chosen (auto: the first batch of a count of images times both ways first) —,
 * and download into pinned memory. */
static int submit_batch(void *ctx, int si, long long off, long long n, cg_err *e)
{
    cg_gpu_runctx *r = ctx;
    cg_gpu *g = r->g;
    cg_cu *cu = g->cu;
    cg_gpu_set *st = &g->set[si];
    size_t in_bytes = (size_t)n * r->in_per;
    /* the bytes uploaded (and uploaded again by auto's refills below): a small input as the
     * caller holds it (CG_INLINE_UPLOAD_MIN/MAX), not staged, or converted into hsmall; a
     * tiny or large one the pinned staging */
    const unsigned char *up = st->hin;
    double t0 = cg_now_ms();
    const int small = in_bytes > CG_INLINE_UPLOAD_MIN && in_bytes <= CG_INLINE_UPLOAD_MAX;
    if (r->in_half != CG_DT_F32) {
        /* float images into a 16-bit input tensor: each element rounded to nearest even,
         * a small batch into pageable memory (as a small input is uploaded from) */
        const float *f = (const float *)r->src + (size_t)off * (r->in_per / 2);
        uint16_t *h = (uint16_t *)(small && st->hsmall ? st->hsmall : st->hin);
        for (size_t q = 0; q < in_bytes / 2; q++) h[q] = r->in_half == CG_DT_F16 ? cg_f32_to_f16(f[q]) : cg_f32_to_bf16(f[q]);
        up = (const unsigned char *)h;
    } else if (small) {
        up = r->src + (size_t)off * r->in_per;
    } else {
        copy_wide(st->hin, r->src + (size_t)off * r->in_per, in_bytes);
    }
    r->t->stage_ms += cg_now_ms() - t0;
    if (poison_tensors(g, st, n, e)) return -1;
    if (off == 0 && CG_CU(e, cu->cuEventRecord(g->first, st->stream))) return -1;
    if (CG_CU(e, cu->cuEventRecord(st->up0, st->stream)) ||
        CG_CU(e, cu->cuMemcpyHtoDAsync(st->tdev[r->tin], up, in_bytes, st->stream)) ||
        CG_CU(e, cu->cuEventRecord(st->up1, st->stream)))
        return -1;
    if (r->prev >= 0 && r->prev != si &&
        CG_CU(e, cu->cuStreamWaitEvent(st->stream, g->set[r->prev].ev[g->nev - 1], 0)))
        return -1;
    int pick;
    unsigned ways;
    int way = way_for(g, r->skip, n, &pick, &ways);
    if ((way == WAY_WHOLE || (way < 0 && ways >> WAY_WHOLE & 1)) && ensure_scratch(g, st, e)) return -1;
    if (way < 0) {
        /* auto, first batch of n images: the ways timed on this batch's input,
         * then its tensors poisoned again (the input is uint8, not poisoned; a float
         * input, whose bytes later layers may have reused, uploaded again) */
        size_t refill = r->skip >= 0 ? in_bytes : 0;
        if (measure_ways(g, st, r->skip, n, ways, r->tin, up, refill, r->t, e) || poison_tensors(g, st, n, e) ||
            (refill && CG_CU(e, cu->cuMemcpyHtoDAsync(st->tdev[r->tin], up, refill, st->stream))))
            return -1;
        way = way_for(g, r->skip, n, &pick, &ways);
    }
    if (queue_batch(g, st, r->skip, n, way, &st->ran_way, r->t, e)) return -1;
    whole_times(g, r->skip, n, st->ran_way, r->t);
    r->t->pdl_launches = g->pdl_launches;
    for (int d = 0; d < r->ndl; d++) {
        const cg_download *dl = &r->dl[d];
        if (CG_CU(e, cu->cuMemcpyDtoHAsync(st->hout + dl->at, st->tdev[dl->tensor], (size_t)n * dl->per, st->stream)))
            return -1;
    }
    if (CG_CU(e, cu->cuEventRecord(st->dn1, st->stream))) return -1;
    r->prev = si;
    return 0;
}

/* Pipeline finish: wait for the set's download, add its events' times (per
 * layer from its first kernel's mark to the next mark, per kernel with
 * --profile), and copy its results out of pinned memory to the caller's. */
static int finish_batch(void *ctx, int si, long long off, long long n, cg_err *e)
{
    cg_gpu_runctx *r = ctx;
    cg_gpu *g = r->g;
    const cg_manifest *m = g->m;
    cg_cu *cu = g->cu;
    cg_gpu_set *st = &g->set[si];
    cg_gpu_times *t = r->t;
    float ms;
    double t0 = cg_now_ms();
    if (CG_CU(e, cu->cuEventSynchronize(st->dn1))) return -1;
    t->wait_ms += cg_now_ms() - t0;
    if (CG_CU(e, cu->cuEventElapsedTime(&ms, st->ev[0], st->ev[g->nev - 1]))) return -1;
    t->total_ms += ms;
    if (st->ran_way == WAY_WHOLE) {
        /* one launch ran every layer: no layer timed alone */
        for (int l = 0; l < CG_MAX_LAYERS; l++) t->layer_ms[l] = NAN;
        if (g->profile) prof_add(t, m->k[g->wk].name, ms);
    }
    for (int i = 0; i < g->nlk && st->ran_way != WAY_WHOLE; i++) {
        if (g->mark[i] < 0) continue;
        int j = i + 1;
        while (g->mark[j] < 0) j++;
        if (CG_CU(e, cu->cuEventElapsedTime(&ms, st->ev[g->mark[i]], st->ev[g->mark[j]]))) return -1;
        if (m->k[i].layer_index >= 0 && g->layers_timed) t->layer_ms[m->k[i].layer_index] += ms;
        if (g->profile && runs(g, i, r->skip)) prof_add(t, m->k[i].name, ms);
    }
    if (CG_CU(e, cu->cuEventElapsedTime(&ms, st->up0, st->up1))) return -1;
    t->upload_ms += ms;
    if (CG_CU(e, cu->cuEventElapsedTime(&ms, st->ev[g->nev - 1], st->dn1))) return -1;
    t->download_ms += ms;
    t0 = cg_now_ms();
    for (int d = 0; d < r->ndl; d++) {
        const cg_download *dl = &r->dl[d];
        const unsigned char *src = st->hout + dl->at;
        size_t per = dl->per;
        if (dl->want != dl->tensor) {
            /* a view: its slice of each image, gathered in place (the slices are no
             * longer than the images they are taken from) */
            unsigned char *h = st->hout + dl->at;
            cg_manifest_gather(m, dl->want, h, n, h);
            per = (size_t)m->t[dl->want].elems * cg_dtype_size(m->t[dl->want].dtype);
        }
        if (dl->half != CG_DT_F32) {
            /* a 16-bit tensor: each element widened (exactly) to the caller's float */
            const uint16_t *h = (const uint16_t *)src;
            float *f = (float *)dl->dst + (size_t)off * (per / 2);
            size_t cnt = (size_t)n * (per / 2);
            for (size_t q = 0; q < cnt; q++) f[q] = dl->half == CG_DT_F16 ? cg_f16_to_f32(h[q]) : cg_bf16_to_f32(h[q]);
        } else {
            copy_wide(dl->dst + (size_t)off * per, src, (size_t)n * per);
        }
        /* a channels-last tensor (hwc=): each image turned to C x H x W, as the reference lays it */
        const cg_mtensor *wt = &m->t[dl->want];
        if (wt->hwc[0] && cg_manifest_relayout(wt, (float *)dl->dst + (size_t)off * (size_t)wt->elems, n, 1))
            return cg_fail(e, "out of host memory turning tensor %s to C x H x W", wt->name);
    }
    t->stage_ms += cg_now_ms() - t0;
    t->batches++;
    return 0;
}

/* After a failure: let every set's stream finish before the caller's buffers
 * (or ours, on close) go; errors here add nothing to the first one. */
static void drain_sets(void *ctx)
{
    cg_gpu *g = ((cg_gpu_runctx *)ctx)->g;
    for (int k = 0; k < g->nsets; k++)
        if (g->set[k].stream) g->cu->cuStreamSynchronize(g->set[k].stream);
}

/* Add one download to the run's plan: tensor `tensor` of every batch (at most
 * rows images) into dst, staged after the downloads already planned (*at bytes). */
static void add_download(const cg_gpu *g, cg_gpu_runctx *r, int tensor, void *dst, long long rows, size_t *at)
{
    cg_download *d = &r->dl[r->ndl++];
    /* a view (a concat's input written into its slice): its parent's images are
     * copied, and the slice of each taken out when they arrive */
    d->want = tensor;
    d->tensor = tensor = cg_manifest_root(g->m, tensor);
    d->per = (size_t)g->m->t[tensor].elems * cg_dtype_size(g->m->t[tensor].dtype);
    d->half = g->m->t[tensor].dtype == CG_DT_F16 || g->m->t[tensor].dtype == CG_DT_BF16 ? g->m->t[tensor].dtype
                                                                                       : CG_DT_F32;
    d->dst = dst;
    d->at = *at;
    *at += (size_t)rows * d->per;
}

/* Pinned buffer *p of at least `want` bytes (*cap: its size), replaced by a
 * larger one when it is smaller. */
static int grow_pinned(cg_cu *cu, unsigned char **p, size_t *cap, size_t want, cg_err *e)
{
    if (*cap >= want) return 0;
    if (*p && CG_CU(e, cu->cuMemFreeHost(*p))) return -1;
    *p = NULL, *cap = 0;
    void *q;
    if (CG_CU(e, cu->cuMemAllocHost(&q, want))) return -1;
    *p = q, *cap = want;
    return 0;
}

/* The downloads a run asks for (predictions always, probabilities and layer
 * outputs when given), laid out in the staging, and each set's pinned staging
 * made large enough for a batch of this run: min(batch, n) images, so that a
 * small run on a large-batch cg_gpu pins no more than it needs. */
static int plan_staging(cg_gpu *g, cg_gpu_runctx *r, long long n, int *pred, float *probs, float **layer_out,
                        cg_host_costs *hc, cg_err *e)
{
    const cg_manifest *m = g->m;
    long long rows = n < g->batch ? n : g->batch;
    size_t at = 0;
    r->ndl = 0;
    add_download(g, r, m->predict, pred, rows, &at);
    if (probs) add_download(g, r, m->output, probs, rows, &at);
    for (int l = 0; layer_out && l < m->nlayers; l++) {
        if (!layer_out[l]) continue;
        if (!m->l[l].into[0]) {
            add_download(g, r, m->l[l].out, layer_out[l], rows, &at);
            continue;
        }
        /* computed in an add's kernel (into=): no tensor of its own to copy, NaN instead */
        size_t count = (size_t)n * (size_t)m->t[m->l[l].out].elems;
        for (size_t i = 0; i < count; i++) layer_out[l][i] = NAN;
    }
    size_t in = (size_t)rows * r->in_per;
    double t0 = cg_now_ms();
    for (int k = 0; k < g->nsets && rows > 0; k++) {
        cg_gpu_set *st = &g->set[k];
        if (grow_pinned(g->cu, &st->hin, &st->hin_cap, in, e) ||
            grow_pinned(g->cu, &st->hout, &st->hout_cap, at, e))
            return -1;
        /* a float input converted to 16 bits, of a batch small enough to go up from pageable memory */
        if (r->in_half != CG_DT_F32 && in > CG_INLINE_UPLOAD_MIN && !st->hsmall &&
            !(st->hsmall = malloc(CG_INLINE_UPLOAD_MAX)))
            return cg_fail(e, "out of host memory for %d bytes of input staging", CG_INLINE_UPLOAD_MAX);
    }
    hc->alloc_ms += cg_now_ms() - t0;
    return 0;
}

/* A run on device pointers (cg_gpu_input.on_device): batch after batch through
 * the first set's tensors, every copy and launch queued on the caller's stream,
 * nothing waited for or timed: the whole-network kernel where it is forced on or
 * was measured the faster for that count of images, else the per-layer kernels
 * (also where its launch is refused). */
static int run_on_device(cg_gpu *g, const cg_gpu_input *in, int tin, int skip, long long n, int *pred,
                         float *probs, cg_err *e)
{
    const cg_manifest *m = g->m;
    cg_cu *cu = g->cu;
    cg_gpu_set *st = &g->set[0];
    CUstream s = (CUstream)in->stream;
    size_t in_per = (size_t)m->t[tin].elems * cg_dtype_size(m->t[tin].dtype);
    size_t oc = (size_t)m->t[m->output].elems;
    CUdeviceptr src = (CUdeviceptr)(uintptr_t)in->input, dpred = (CUdeviceptr)(uintptr_t)pred,
                dprobs = (CUdeviceptr)(uintptr_t)probs;
    for (long long done = 0; done < n; done += g->batch) {
        long long b = n - done < g->batch ? n - done : g->batch;
        if (CG_CU(e, cu->cuMemcpyDtoDAsync(st->tdev[tin], src + (size_t)done * in_per, (size_t)b * in_per, s)))
            return -1;
        int pick;
        unsigned ways;
        int way = way_for(g, skip, b, &pick, &ways), whole = way == WAY_WHOLE;
        if (whole && ensure_scratch(g, st, e)) return -1;
        if (whole) {
            int rc = launch_whole(g, st, b, s, e); /* 1: refused, the per-layer kernels instead */
            if (rc < 0) return -1;
            whole = rc == 0;
        }
        for (int i = 0, after_kernel = 0; i < g->nlk && !whole; i++) {
            if (!runs(g, i, skip)) continue;
            if (launch(g, st, i, b, s, after_kernel && way != WAY_PLAIN, e)) return -1;
            after_kernel = 1;
        }
        if (CG_CU(e, cu->cuMemcpyDtoDAsync(dpred + (size_t)done * 4, st->tdev[m->predict], (size_t)b * 4, s)))
            return -1;
        if (probs && CG_CU(e, cu->cuMemcpyDtoDAsync(dprobs + (size_t)done * oc * 4, st->tdev[m->output],
                                                    (size_t)b * oc * 4, s)))
            return -1;
    }
    return 0;
}

/* cg_gpu_run_input with g's context current: host input through the pipeline
 * of stream sets, device input on the caller's stream. */
static int run_current(cg_gpu *g, const cg_gpu_input *in, long long n, int *pred, float *probs,
                       float **layer_out, cg_gpu_times *t, cg_host_costs *hc, cg_err *e)
{
    memset(t, 0, sizeof *t);
    const cg_manifest *m = g->m;
    int skip = in->f32 ? input_kernel(g) : -1;
    if (in->f32 && skip < 0)
        return cg_fail(e, "%s: this network's first kernel reads uint8 pixels itself; give it uint8 input",
                       g->s->path);
    /* a float input goes where the input kernel would have written it */
    int tin = in->f32 ? m->k[skip].out : m->input;
    const cg_dtype tdt = m->t[tin].dtype, odt = m->t[m->output].dtype;
    const int half_in = in->f32 && (tdt == CG_DT_F16 || tdt == CG_DT_BF16);
    if (in->on_device && (half_in || (probs && (odt == CG_DT_F16 || odt == CG_DT_BF16))))
        return cg_fail(e, "%s: the network's tensors are %s: device-resident float input and probabilities "
                          "need an fp32 or tf32 network; give host memory", g->s->path,
                       cg_dtype_get(half_in ? tdt : odt)->name);
    if (in->on_device) return run_on_device(g, in, tin, skip, n, pred, probs, e);
    whole_times(g, skip, n, 0, t); /* before any batch: what a run of none says */
    cg_gpu_runctx r = {.g = g, .src = in->input, .tin = tin, .skip = skip, .t = t, .prev = -1};
    r.in_per = (size_t)m->t[tin].elems * cg_dtype_size(m->t[tin].dtype);
    r.in_half = half_in ? tdt : CG_DT_F32;
    if (cg_gpu_layers_kept(g, layer_out, e)) return -1;
    if (plan_staging(g, &r, n, pred, probs, layer_out, hc, e)) return -1;
    long long nb = (n + g->batch - 1) / g->batch;
    t->images = n;
    t->bucket = m->bucket;
    for (int l = 0; !g->layers_timed && l < CG_MAX_LAYERS; l++) t->layer_ms[l] = NAN;
    t->streams = nb < g->nsets ? (int)nb : g->nsets;
    double t0 = cg_now_ms();
    cg_pipe_ops ops = {submit_batch, finish_batch, drain_sets};
    if (cg_pipe_run(n, g->batch, g->nsets, &ops, &r, e)) return -1;
    float ms = 0;
    if (n > 0 && CG_CU(e, g->cu->cuEventElapsedTime(&ms, g->first, g->set[(nb - 1) % g->nsets].dn1))) return -1;
    t->span_ms = ms;
    t->wall_ms = cg_now_ms() - t0;
    hc->upload_ms += t->upload_ms;
    hc->download_ms += t->download_ms;
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

/* The first b images of the floats at src (elems each) into tensor t of set
 * st, in t's dtype (16-bit: each rounded to nearest even), through stage. */
static int upload_floats(cg_gpu *g, cg_gpu_set *st, int t, const float *src, long long b, void *stage, cg_err *e)
{
    const cg_mtensor *mt = &g->m->t[t];
    size_t count = (size_t)b * (size_t)mt->elems;
    float *hwc = NULL;
    if (mt->hwc[0]) {
        /* a channels-last tensor (hwc=): the reference's C x H x W images turned */
        if ((hwc = malloc(count * sizeof *hwc))) memcpy(hwc, src, count * sizeof *hwc);
        if (!hwc || cg_manifest_relayout(mt, hwc, b, 0)) {
            free(hwc);
            return cg_fail(e, "out of host memory turning tensor %s channels-last", mt->name);
        }
        src = hwc;
    }
    int rc;
    if (mt->dtype == CG_DT_F16 || mt->dtype == CG_DT_BF16) {
        uint16_t *h = stage;
        for (size_t q = 0; q < count; q++) h[q] = mt->dtype == CG_DT_F16 ? cg_f32_to_f16(src[q]) : cg_f32_to_bf16(src[q]);
        rc = CG_CU(e, g->cu->cuMemcpyHtoD(st->tdev[t], h, count * 2));
    } else if (mt->dtype != CG_DT_F32) {
        rc = cg_fail(e, "tensor %s is %s: a unit's input from the reference must be a float tensor", mt->name,
                     cg_dtype_get(mt->dtype)->name);
    } else {
        rc = CG_CU(e, g->cu->cuMemcpyHtoD(st->tdev[t], src, count * 4));
    }
    free(hwc);
    return rc;
}

/* Tensor t of set st, b images, into the floats at dst, widened from 16 bits
 * (exactly) through stage. */
static int download_floats(cg_gpu *g, cg_gpu_set *st, int t, float *dst, long long b, void *stage, cg_err *e)
{
    const cg_mtensor *mt = &g->m->t[t];
    size_t count = (size_t)b * (size_t)mt->elems;
    const int r = cg_manifest_root(g->m, t);
    if (r != t) {
        /* a view (a concat's slice): its parent's images down, then each image's slice
         * (stage holds the parent's b images: run_unit_current sizes it so) */
        if (CG_CU(e, g->cu->cuMemcpyDtoH(stage, st->tdev[r], (size_t)b * (size_t)g->m->t[r].elems *
                                                                cg_dtype_size(mt->dtype))))
            return -1;
        cg_manifest_gather(g->m, t, stage, b, stage);
        if (mt->dtype == CG_DT_F32) {
            memcpy(dst, stage, count * 4);
            return 0;
        }
    } else if (mt->dtype == CG_DT_F32) {
        if (CG_CU(e, g->cu->cuMemcpyDtoH(dst, st->tdev[t], count * 4))) return -1;
    } else if (CG_CU(e, g->cu->cuMemcpyDtoH(stage, st->tdev[t], count * 2))) {
        return -1;
    }
    const uint16_t *h = stage;
    for (size_t q = 0; mt->dtype != CG_DT_F32 && q < count; q++)
        dst[q] = mt->dtype == CG_DT_F16 ? cg_f16_to_f32(h[q]) : cg_bf16_to_f32(h[q]);
    /* a channels-last tensor (hwc=): each image turned to C x H x W, as the reference lays it */
    if (cg_manifest_relayout(mt, dst, b, 1))
        return cg_fail(e, "out of host memory turning tensor %s to C x H x W", mt->name);
    return 0;
}

/* cg_gpu_run_unit with g's context current: batch after batch through the
 * first stream set, its unit's tensors poisoned, its inputs uploaded, its
 * kernels launched in manifest order, its layers' tensors downloaded. A unit's
 * inputs are the reference's floats: of a first layer's twins (feed=), the one
 * reading the float input runs. */
static int run_unit_current(cg_gpu *g, const cg_units *p, int u, long long n, const unsigned char *pixels,
                            const float *const *ext, float **out, cg_err *e)
{
    const cg_manifest *m = g->m;
    cg_gpu_set *st = &g->set[0];
    /* the tensors the unit reads from outside it (and where from), and those it writes */
    int reads[CG_MAX_TENSORS] = {0}, writes[CG_MAX_TENSORS] = {0};
    for (int k = 0; k < g->nlk; k++) {
        if (p->kernel_unit[k] != u || !cg_manifest_feeds(&m->k[k], 1)) continue; /* (a unit is fed floats) */
        for (int j = 0; j < m->k[k].nin; j++)
            if (!writes[m->k[k].in[j]]) reads[m->k[k].in[j]] = 1;
        for (int j = 0; j < m->k[k].nout; j++) writes[m->k[k].outs[j]] = 1;
    }
    const float *src[CG_MAX_TENSORS] = {0};
    size_t widest = 0;
    for (int t = 0; t < m->ntensors; t++) {
        if (!reads[t] && !writes[t]) continue;
        /* every tensor apart: an input uploaded first must outlive the unit's kernels */
        if (!cg_memplan_kept(&g->plan, m, t))
            return cg_fail(e, "%s: tensor %s shares device memory with others: open the network with "
                              "keep_tensors to run a unit alone",
                           g->s->path, m->t[t].name);
        /* (a view is staged as its parent's whole images) */
        size_t bytes = (size_t)m->t[cg_manifest_root(m, t)].elems * cg_dtype_size(m->t[t].dtype);
        if (bytes > widest) widest = bytes;
        if (!reads[t] || t == m->input) continue;
        for (int i = 0; i < m->nlayers && !src[t]; i++)
            if (p->kept[i] && m->l[i].out == t) src[t] = ext[p->holder[i] + 1];
        for (int k = 0; k < g->nlk && !src[t]; k++)
            if (!strcmp(m->k[k].tpl, "input_u8") && m->k[k].out == t) src[t] = ext[0];
        if (!src[t])
            return cg_fail(e, "%s: unit %d reads tensor %s, which was not given", g->s->path, u, m->t[t].name);
    }
    if (reads[m->input] && !pixels)
        return cg_fail(e, "%s: unit %d reads the pixels, which were not given", g->s->path, u);
    long long b = n < g->batch ? n : g->batch;
    void *stage = malloc(widest * (size_t)(b > 0 ? b : 1));
    if (!stage) return cg_fail(e, "out of memory staging a unit's tensors");
    int rc = 0;
    for (long long done = 0; done < n && !rc; done += b) {
        long long c = n - done < b ? n - done : b;
        for (int t = 0; t < m->ntensors && !rc; t++) {
            size_t per = (size_t)m->t[t].elems;
            if (writes[t]) rc = poison_one(g, st, cg_manifest_root(m, t), c, e); /* a view: its parent */
            else if (reads[t] && t == m->input)
                rc = CG_CU(e, g->cu->cuMemcpyHtoD(st->tdev[t], pixels + (size_t)done * per, (size_t)c * per));
            else if (reads[t])
                rc = upload_floats(g, st, t, src[t] + (size_t)done * per, c, stage, e);
        }
        for (int k = 0; k < g->nlk && !rc; k++)
            if (p->kernel_unit[k] == u && cg_manifest_feeds(&m->k[k], 1)) rc = launch(g, st, k, c, st->stream, 0, e);
        if (!rc) rc = CG_CU(e, g->cu->cuStreamSynchronize(st->stream));
        for (int i = 0; i < m->nlayers && !rc; i++)
            if (p->unit[i] == u && p->kept[i] && out[i])
                rc = download_floats(g, st, m->l[i].out, out[i] + (size_t)done * (size_t)m->t[m->l[i].out].elems, c,
                                     stage, e);
    }
    if (rc) g->cu->cuStreamSynchronize(st->stream); /* nothing of ours still queued */
    free(stage);
    return rc;
}

int cg_gpu_run_unit(cg_gpu *g, const cg_units *p, int u, long long n, const unsigned char *pixels,
                    const float *const *ext, float **out, cg_err *e)
{
    if (ctx_enter(g, e)) return -1;
    int rc = run_unit_current(g, p, u, n, pixels, ext, out, e);
    ctx_leave(g);
    return rc;
}

int cg_gpu_units(const cg_gpu *g, cg_units *p, cg_err *e) { return cg_units_plan(g->s, g->m, p, e); }

double cg_gpu_overlap(const cg_gpu_times *t)
{
    double copies = t->upload_ms + t->download_ms;
    if (copies <= 0) return 0;
    double hidden = (copies + t->total_ms - t->span_ms) / copies;
    return hidden < 0 ? 0 : hidden > 1 ? 1 : hidden;
}

void cg_gpu_stream_summary(const cg_gpu_times *t, char *buf, size_t n)
{
    double ips = t->wall_ms > 0 ? (double)t->images / (t->wall_ms / 1e3) : 0;
    double share = t->wall_ms > 0 ? t->total_ms / t->wall_ms : 0;
    snprintf(buf, n,
             "==convgen-prof== streamed: %lld images in %d batch%s over %d stream set%s\n"
             "  %-26s %9.3f ms  (%.0f images/s end to end)\n"
             "  %-26s %9.3f ms  (%.1f%% of the wall time; alone they would allow %.0f images/s)\n"
             "  %-26s %9.3f ms  (uploads %.3f ms, downloads %.3f ms; %.1f%% hidden behind kernels)\n"
             "  %-26s %9.3f ms\n"
             "  %-26s %9.3f ms  (pinned staging in and out; waiting for the device %.3f ms)\n",
             t->images, t->batches, t->batches == 1 ? "" : "es", t->streams, t->streams == 1 ? "" : "s",
             "wall (host clock)", t->wall_ms, ips, "kernels (events)", t->total_ms, 100 * share,
             t->total_ms > 0 ? (double)t->images / (t->total_ms / 1e3) : 0, "copies (events)",
             t->upload_ms + t->download_ms, t->upload_ms, t->download_ms, 100 * cg_gpu_overlap(t),
             "device span (events)", t->span_ms, "host copies", t->stage_ms, t->wait_ms);
}

void cg_gpu_whole_summary(const cg_gpu_times *t, char *buf, size_t n)
{
    buf[0] = 0;
    if (t->whole == CG_RAN_NO_WHOLE) return;
    const char *ran = t->whole == CG_RAN_WHOLE ? "whole" : "per-layer";
    if (!isnan(t->whole_ms) || !isnan(t->layers_ms)) {
        char w[32] = "not timed", l[32] = "not timed";
        if (!isnan(t->whole_ms)) snprintf(w, sizeof w, "%.1f us", t->whole_ms * 1e3);
        if (!isnan(t->layers_ms)) snprintf(l, sizeof l, "%.1f us", t->layers_ms * 1e3);
        const char *from = t->whole_from == CG_WHOLE_FROM_RECORD   ? " (tuning record)"
                         : t->whole_from == CG_WHOLE_FROM_MEASURED ? " (measured now)"
                         : t->whole_from == CG_WHOLE_FROM_FORCED   ? " (forced)"
                                                                   : "";
        snprintf(buf, n, "network: whole-network kernel %s, per-layer kernels %s: %s%s%s%s", w, l, ran, from,
                 t->whole_note[0] ? "; whole-network kernel not used: " : "", t->whole_note);
    } else {
        snprintf(buf, n, "network: %s%s%s%s", t->whole == CG_RAN_WHOLE ? "whole-network kernel" : "per-layer kernels",
                 t->whole_from == CG_WHOLE_FROM_FORCED ? " (forced)" : "",
                 t->whole_note[0] ? "; whole-network kernel not used: " : "", t->whole_note);
    }
}

const char *cg_whole_from_name(int from)
{
    if (from == CG_WHOLE_FROM_MEASURED) return "measured";
    if (from == CG_WHOLE_FROM_RECORD) return "record";
    return from == CG_WHOLE_FROM_FORCED ? "forced" : NULL;
}

const char *cg_gpu_build_id(const cg_gpu *g) { return g && g->m ? g->m->hash : ""; }

const char *cg_gpu_whole_notice(const cg_gpu *g) { return g ? g->tuned_note : ""; }

int cg_gpu_has_whole(const cg_gpu *g) { return g && g->m && cg_manifest_whole(g->m) >= 0; }

void cg_gpu_set_whole(cg_gpu *g, int mode)
{
    g->whole_mode = mode == CG_WHOLE_ON || mode == CG_WHOLE_OFF ? mode : CG_WHOLE_AUTO;
}

const char *cg_gpu_device_name(const cg_gpu *g) { return g->cu ? g->cu->name : "?"; }

const char *cg_gpu_layer_into(const cg_gpu *g, int l)
{
    return g && g->m && l >= 0 && l < g->m->nlayers && g->m->l[l].into[0] ? g->m->l[l].into : NULL;
}
long long cg_gpu_batch(const cg_gpu *g) { return g->batch; }

void cg_gpu_close(cg_gpu *g)
{
    if (!g) return;
    if (g->cu) {
        cg_cu *cu = g->cu;
        int pushed = cu->cuCtxPushCurrent(cu->ctx) == CUDA_SUCCESS;
        for (int k = 0; k < CG_PIPE_MAX_SETS; k++) {
            cg_gpu_set *st = &g->set[k];
            if (st->stream) cu->cuStreamSynchronize(st->stream);
            for (int j = 0; j < CG_SET_GRAPHS; j++)
                if (st->graph[j]) cu->cuGraphExecDestroy(st->graph[j]);
            for (size_t i = 0; i < sizeof st->ev / sizeof *st->ev; i++)
                if (st->ev[i]) cu->cuEventDestroy(st->ev[i]);
            CUevent more[] = {st->up0, st->up1, st->dn1};
            for (int i = 0; i < 3; i++)
                if (more[i]) cu->cuEventDestroy(more[i]);
            if (st->stream) cu->cuStreamDestroy(st->stream);
            if (st->arena) cu->cuMemFree(st->arena);
            if (st->scratch) cu->cuMemFree(st->scratch);
            if (st->hin) cu->cuMemFreeHost(st->hin);
            free(st->hsmall);
            if (st->hout) cu->cuMemFreeHost(st->hout);
        }
        if (g->first) cu->cuEventDestroy(g->first);
        for (int i = 0; i < 2; i++)
            if (g->wev[i]) cu->cuEventDestroy(g->wev[i]);
        for (int i = 0; i < g->nowned; i++) cu->cuMemFree(g->owned[i]);
        for (int i = 0; i < g->nmods; i++) cu->cuModuleUnload(g->mods[i]);
        if (pushed) ctx_leave(g);
        cg_cu_close(cu);
    }
    free(g->m);
    free(g);
}
