/* harness.c — one kernel alone: reference, check, time (see harness.h). */
#include "harness.h"
#include "cpu.h"
#include "cuda_api.h"
#include "jit.h"
#include "manifest.h"
#include "op.h"
#include "weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- no GPU needed ---- */

/* splitmix64: a well-mixed 64-bit value from a counter. */
static unsigned long long mix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void cg_harness_fill(float *x, size_t n, unsigned long long seed, float scale)
{
    unsigned long long base = mix64(seed);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        double u = (double)(mix64(base ^ (i * 0xd1b54a32d192ed03ULL)) >> 11) * 0x1.0p-53; /* [0, 1) */
        x[i] = (float)((2 * u - 1) * scale);
    }
}

void cg_harness_kernel_layer(const cg_layer *l, int fused, cg_layer *out)
{
    *out = *l;
    const cg_op_desc *d = cg_op_of(l->op);
    if (!fused && d && d->unfused) d->unfused(l, out);
}

int cg_harness_reference(const cg_layer *l, int fused, const float *w, const float *b, const float *in,
                         float *out, int n, cg_err *e)
{
    cg_layer kl;
    cg_harness_kernel_layer(l, fused, &kl);
    long long rows, fan_in;
    (void)cg_op_weights(l, &rows, &fan_in);
    /* the two tensors under the names cg_cpu_layer looks up; the data stays the caller's */
    cg_tensor t[2];
    memset(t, 0, sizeof t);
    snprintf(t[0].name, sizeof t[0].name, "%s.weight", l->name);
    snprintf(t[1].name, sizeof t[1].name, "%s.bias", l->name);
    t[0].ndim = t[1].ndim = 1;
    t[0].shape[0] = t[0].count = rows * fan_in;
    t[1].shape[0] = t[1].count = rows;
    t[0].data = (float *)w;
    t[1].data = (float *)b;
    cg_weights ws = {l->bias && b ? 2 : 1, t, 1, 0};
    return cg_cpu_layer(&kl, &ws, in, out, n, e);
}

void cg_harness_compare(const float *gpu, const float *cpu, size_t n, double tol, cg_harness_diff *d)
{
    memset(d, 0, sizeof *d);
    d->n = (long long)n;
    double num = 0, den = 0, scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(cpu[i]));
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(gpu[i])) {
            d->nonfinite++;
            continue;
        }
        double diff = fabs((double)gpu[i] - (double)cpu[i]);
        num += diff * diff, den += (double)cpu[i] * cpu[i];
        d->max_abs = fmax(d->max_abs, diff);
        d->max_rel = fmax(d->max_rel, diff / fmax(fabs(cpu[i]), 1e-6 * scale + 1e-30));
    }
    d->rel_l2 = d->nonfinite ? INFINITY : den > 0 ? sqrt(num / den) : sqrt(num);
    if (d->nonfinite) d->max_abs = d->max_rel = INFINITY;
    d->ok = !d->nonfinite && d->rel_l2 <= tol;
}

double cg_precision_tol(cg_precision p, long long n)
{
    if (p == CG_PREC_BF16 || p == CG_PREC_FP16) {
        /* operands rounded to the 16-bit type (2u a product), the FP32 sum, then the
         * stored value rounded once (u); an op of no reduction stores one rounding */
        double u = ldexp(1.0, p == CG_PREC_BF16 ? -8 : -11);
        double t = n < 1 ? u : 2 * u * sqrt((double)n) + (double)n * ldexp(1.0, -24) + u;
        return t > CG_HARNESS_TOL ? t : CG_HARNESS_TOL;
    }
    if (p != CG_PREC_TF32 || n < 1) return CG_HARNESS_TOL;
    double u = ldexp(1.0, -11), t = 2 * u * sqrt((double)n) + (double)n * ldexp(1.0, -24);
    return t > CG_HARNESS_TOL ? t : CG_HARNESS_TOL;
}

long long cg_layer_reduction(const cg_layer *l)
{
    if (l->op == CG_OP_CONV) return (long long)(l->C / cg_layer_groups(l)) * l->K * l->K;
    if (l->op == CG_OP_FC) return (long long)l->C * l->H * l->W;
    return 0;
}

double cg_layer_tol(const cg_layer *l) { return cg_precision_tol(l->precision, cg_layer_reduction(l)); }

/* Each layer's excess over CG_HARNESS_TOL plus those of the layers it reads
 * within its group (unit[i]; NULL: the whole network is one), summed along the
 * graph, plus CG_HARNESS_TOL. */
static void tols_within(const cg_spec *s, const int *unit, double tol[CG_MAX_LAYERS])
{
    double extra[CG_MAX_LAYERS];
    for (int i = 0; i < s->nlayers; i++) {
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        extra[i] = cg_layer_tol(&s->layers[i]) - CG_HARNESS_TOL;
        for (int k = 0; k < nin; k++)
            if (in[k] >= 0 && (!unit || unit[in[k]] == unit[i])) extra[i] += extra[in[k]];
        tol[i] = CG_HARNESS_TOL + extra[i];
    }
}

void cg_spec_tols(const cg_spec *s, double tol[CG_MAX_LAYERS]) { tols_within(s, NULL, tol); }

void cg_unit_tols(const cg_spec *s, const int unit[CG_MAX_LAYERS], double tol[CG_MAX_LAYERS])
{
    tols_within(s, unit, tol);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The q-quantile of n sorted values, interpolating between neighbours. */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int lo = (int)at;
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (at - lo) * (v[lo + 1] - v[lo]);
}

void cg_harness_stats_of(double *ms, int n, cg_harness_stats *st)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    if (n <= 0) return;
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    st->min = ms[0], st->max = ms[n - 1];
    st->median = quantile(ms, n, 0.5);
    st->q1 = quantile(ms, n, 0.25), st->q3 = quantile(ms, n, 0.75);
}

double cg_harness_flop(const cg_layer *l, long long n)
{
    const cg_op_desc *d = cg_op_of(l->op);
    return d && d->flop ? d->flop(l, n) : 0;
}

/* ---- on the GPU ---- */

/* One candidate's module, buffers and events (the layer's input and scratch
 * are the cg_harness_layer's). */
typedef struct {
    cg_cu *cu;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr in, out, w, b, flush;
    CUevent ev[2];
    float *hout;
    cg_arg_role roles[CG_MAX_ARGS]; /* the kernel's parameters by role, parsed once */
    int nroles;
    cg_mmap maps[CG_MAX_MAPS];      /* its tensor maps (roles map:), encoded at each launch */
    int nmaps;
    cg_dtype in_dt, out_dt, w_dt;   /* the element types of its input, output and weights */
    long long cap;                  /* the images its input and output buffers hold */
    int out16; /* the output is 16-bit (a bf16 or fp16 layer) */
} bench;

/* A grid extent as the generator wrote it ("N*a/b" or an integer) for n images. */
static long long grid_extent(const char *text, long long n)
{
    cg_mdim d = {0, 0};
    if (sscanf(text, "N*%lld/%lld", &d.mul, &d.div) != 2) d.mul = atoll(text), d.div = 0;
    return cg_mdim_eval(d, n);
}

/* An allocation of n bytes on the device holding host data p (NULL: none). */
static int upload(cg_cu *cu, CUdeviceptr *d, const void *p, size_t n, cg_err *e)
{
    if (CG_CU(e, cu->cuMemAlloc(d, n))) return -1;
    return p ? CG_CU(e, cu->cuMemcpyHtoD(*d, p, n)) : 0;
}

/* The 16-bit type a layer's kernels read and write (bf16 and fp16 networks:
 * tensors, weights and bias), or CG_W_F32 for FP32 tensors, on a device of
 * compute capability cc (a bf16 layer's precision_fallback below sm_80). */
static cg_wdtype layer_wdtype(const cg_layer *l, int cc)
{
    const cg_precision p = cg_layer_precision_on(l, cc);
    return p == CG_PREC_BF16 ? CG_W_BF16 : p == CG_PREC_FP16 ? CG_W_F16 : CG_W_F32;
}

/* upload() of count floats at p in type dt: narrowed to 16 bits (as the runtime
 * converts weights and input) where dt is F16 or BF16. */
static int upload_as(cg_cu *cu, CUdeviceptr *d, const float *p, size_t count, cg_wdtype dt, cg_err *e)
{
    if (dt == CG_W_F32 || !p) return upload(cu, d, p, count * (dt == CG_W_F32 ? 4 : 2), e);
    uint16_t *h = cg_weights_narrowed(p, (long long)count, dt);
    if (!h) return cg_fail(e, "out of memory");
    int rc = upload(cu, d, h, count * 2, e);
    free(h);
    return rc;
}

/* Weights or bias where the launch says they live: a __constant__ symbol of
 * the module or a device buffer passed as an argument (as stored, or
 * transposed to rest x rows for reduction-major kernels). */
static int place(bench *b, const char *where, const float *p, size_t count, long long rows, cg_wdtype dt,
                 CUdeviceptr *arg, cg_err *e)
{
    cg_place pl;
    char name[160];
    int taps = 0;
    if (cg_place_parse(where, &pl, name, sizeof name, &taps)) return cg_fail(e, "unknown weight placement '%s'", where);
    if (pl == CG_PLACE_NONE) return 0;
    if (pl == CG_PLACE_ARG) return upload_as(b->cu, arg, p, count, dt, e);
    if (pl == CG_PLACE_ARG_FFT)
        return cg_fail(e, "weights=arg:fft: the kernel reads the weights' transforms, which only a network's run makes "
                          "(conv2d_fft runs as three kernels and is not timed alone)");
    if (pl != CG_PLACE_CONST) {
        long long r = cg_place_reorder(pl, taps);
        float *t = cg_weights_taps(p, rows, (long long)count, r);
        if (!t) return cg_fail(e, "weight placement '%s': out of memory, or %zu weights in no %lld x C x %lld", where,
                               count, rows, r);
        int rc = upload_as(b->cu, arg, t, count, dt, e);
        free(t);
        return rc;
    }
    CUdeviceptr sym;
    size_t n, want = count * (dt == CG_W_F32 ? 4 : 2);
    if (b->cu->cuModuleGetGlobal(&sym, &n, b->mod, name) != CUDA_SUCCESS)
        return cg_fail(e, "constant symbol '%s' not found in the module", name);
    if (n != want) return cg_fail(e, "constant symbol '%s' holds %zu bytes, the layer has %zu", name, n, want);
    if (dt == CG_W_F32) return CG_CU(e, b->cu->cuMemcpyHtoD(sym, p, n));
    uint16_t *h = cg_weights_narrowed(p, (long long)count, dt);
    if (!h) return cg_fail(e, "out of memory");
    int rc = CG_CU(e, b->cu->cuMemcpyHtoD(sym, h, n));
    free(h);
    return rc;
}

/* One launch of the kernel over n images, output poisoned with NaN first;
 * with flush, the L2 is overwritten before it and *ms receives its time. */
static int launch(bench *b, const cg_kernel_launch *kl, long long n, long long flush_words, double *ms,
                  cg_err *e)
{
    cg_cu *cu = b->cu;
    int nn = (int)n;
    void *args[CG_MAX_ARGS], *in = &b->in, *out = &b->out, *mapp[CG_MAX_MAPS];
    CUtensorMap maps[CG_MAX_MAPS];
    for (int j = 0; j < b->nmaps; j++) {
        const cg_mmap *mp = &b->maps[j];
        int to = cg_arg_output(mp->target);
        CUdeviceptr base = mp->target == CG_ARG_WEIGHTS ? b->w : to == 0 ? b->out : b->in;
        cg_dtype dt = mp->target == CG_ARG_WEIGHTS ? b->w_dt : to == 0 ? b->out_dt : b->in_dt;
        if (cg_map_encode(cu, "(the harness's)", mp, dt, base, b->cap, &maps[j], e)) return -1;
        mapp[j] = &maps[j];
    }
    if (cg_args_bind(b->roles, b->nroles, &in, 1, &out, 1, &b->w, &b->b, &nn, mapp, b->nmaps, args))
        return cg_fail(e, "kernel arguments: a role names an input or output past the first; the harness gives a "
                          "kernel one of each");
    unsigned g[3];
    for (int d = 0; d < 3; d++) g[d] = (unsigned)grid_extent(kl->grid[d], n);
    if (b->out16 ? CG_CU(e, cu->cuMemsetD16Async(b->out, 0x7fff, (size_t)(n * kl->out_elems), NULL))
                 : CG_CU(e, cu->cuMemsetD32(b->out, 0x7fbadbadu, (size_t)(n * kl->out_elems))))
        return -1;
    if (flush_words && CG_CU(e, cu->cuMemsetD32(b->flush, (unsigned)flush_words, (size_t)flush_words))) return -1;
    if (CG_CU(e, cu->cuEventRecord(b->ev[0], NULL))) return -1;
    if (cg_cu_check(e, cu->cuLaunchKernel(b->fn, g[0], g[1], g[2], (unsigned)kl->block[0], (unsigned)kl->block[1],
                                          (unsigned)kl->block[2], (unsigned)kl->shared, NULL, args, NULL),
                    "cuLaunchKernel"))
        return -1;
    if (CG_CU(e, cu->cuEventRecord(b->ev[1], NULL)) || CG_CU(e, cu->cuEventSynchronize(b->ev[1]))) return -1;
    float t = 0;
    if (CG_CU(e, cu->cuEventElapsedTime(&t, b->ev[0], b->ev[1]))) return -1;
    if (ms) *ms = t;
    return 0;
}

/* Load and bind an already-compiled kernel image; its registers and local memory. */
static int load_image(bench *b, cg_harness_result *r, const char *kernel, const cg_buf *img, cg_err *e)
{
    if (CG_CU(e, b->cu->cuModuleLoadData(&b->mod, img->data))) return -1;
    if (b->cu->cuModuleGetFunction(&b->fn, b->mod, kernel) != CUDA_SUCCESS)
        return cg_fail(e, "kernel '%s' not found in its module", kernel);
    if (r->launch.shared > 48 * 1024 &&
        CG_CU(e, b->cu->cuFuncSetAttribute(b->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, r->launch.shared)))
        return -1;
    if (CG_CU(e, b->cu->cuFuncGetAttribute(&r->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, b->fn)) ||
        CG_CU(e, b->cu->cuFuncGetAttribute(&r->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, b->fn)))
        return -1;
    return 0;
}

/* Whether n images keep every index of the kernel's tensors below 2^31. */
static int batch_fits(const cg_kernel_launch *kl, long long n)
{
    if (n < 1) n = 1;
    return (double)n * (double)(kl->in_elems > kl->out_elems ? kl->in_elems : kl->out_elems) <= 2147483647.0;
}

int cg_harness_run(const cg_spec *s, int layer, const char *tpl, const char *params,
                   const cg_harness_opts *o, cg_harness_result *r, cg_err *e)
{
    cg_gen_kernel k;
    cg_kernel_launch kl;
    memset(r, 0, sizeof *r);
    memset(&k, 0, sizeof k);
    cg_cu *cu = NULL;
    cg_nvrtc *nv = NULL;
    cg_buf img, log;
    cg_buf_init(&img), cg_buf_init(&log);
    cg_jit_info ji;
    memset(&ji, 0, sizeof ji);
    /* the device first: the kernel is generated for its limits, and its compute
     * capability and driver pick what NVRTC emits */
    int arch = 0, as_ptx = 0, bad_config = 0;
    cg_target tg;
    cg_target_widest(&tg); /* a configuration no GPU allows is bad input, GPU or not */
    tg.batch = cg_batch_bucket(o->batch); /* generated for the bucket of its batch, as a network is */
    char why[512];
    int verdict = cg_gen_check_one_for(s, &tg, layer, tpl, params, why, sizeof why, e);
    if (verdict == 1) cg_fail(e, "%s: layer '%s': %s", s->path, s->layers[layer].name, why);
    if (verdict) return CG_HARNESS_BAD_CONFIG;
    int rc = cg_cu_open(&cu, o->device, e);
    if (!rc) rc = cg_nvrtc_open(&nv, e);
    if (!rc) rc = cg_jit_target(nv, cu, &arch, &as_ptx, &tg, e);
    tg.batch = cg_batch_bucket(o->batch);
    if (!rc && cg_gen_emit_one_for(s, &tg, layer, tpl, params, &k, &kl, e)) rc = -1, bad_config = 1;
    if (!rc && !batch_fits(&kl, o->batch))
        rc = cg_fail(e, "--batch %lld: indices of this layer would pass 2^31", o->batch), bad_config = 1;
    if (!rc) {
        rc = cg_jit_compile(nv, cu->cc, cu->driver_version, &k, !o->no_cache, &img, &log, &ji, e);
        if (rc && log.len) fprintf(stderr, "%s\n", log.data);
    }
    if (nv) cg_nvrtc_close(nv);
    if (cu) cg_cu_close(cu);
    if (!rc) rc = cg_harness_run_image(s, layer, &k, &kl, &img, o, r, e);
    if (!rc) {
        snprintf(r->arch, sizeof r->arch, "%s", ji.arch);
        snprintf(r->cache_note, sizeof r->cache_note, "%s", ji.note);
        r->cache_hit = ji.cache_hit, r->compile_ms = ji.ms;
    }
    cg_gen_kernel_free(&k);
    cg_buf_free(&img), cg_buf_free(&log);
    return bad_config ? CG_HARNESS_BAD_CONFIG : rc ? -1 : 0;
}

/* What stays the same for every candidate of one layer: the device, the seeded
 * inputs, weights and bias on the host, the input and the L2 scratch on the
 * device, and the CPU reference (one for a fused epilogue, one for an unfused
 * conv, made when first needed). A tuner opens one per layer, so a candidate
 * costs its own launches and no more. */
struct cg_harness_layer {
    const cg_spec *s;
    int layer;
    cg_harness_opts o;
    long long n, nref;
    cg_cu *cu;
    float *hin, *hw, *hb;
    size_t nw;
    float *ref[2];        /* [fused]: nref images of the layer's (or the bare conv's) output */
    long long ref_elems[2];
    CUdeviceptr in, flush;
    long long flush_words;
    float *hout;          /* the output copied back, kept for the next candidate */
    size_t hout_n;
};

/* The reference for a kernel whose epilogue is (fused) or is not fused, made once. */
static const float *layer_reference(cg_harness_layer *h, int fused, long long out_elems, cg_err *e)
{
    fused = !!fused;
    if (h->ref[fused]) return h->ref_elems[fused] == out_elems ? h->ref[fused] : NULL;
    const cg_layer *l = &h->s->layers[h->layer];
    if (!(h->ref[fused] = malloc((size_t)(h->nref * out_elems) * sizeof(float))))
        return cg_fail(e, "out of memory"), NULL;
    h->ref_elems[fused] = out_elems;
    if (cg_harness_reference(l, fused, h->hw, l->bias ? h->hb : NULL, h->hin, h->ref[fused], (int)h->nref, e)) {
        free(h->ref[fused]), h->ref[fused] = NULL;
        return NULL;
    }
    return h->ref[fused];
}

int cg_harness_layer_open(cg_harness_layer **out, const cg_spec *s, int layer, const cg_harness_opts *o, cg_err *e)
{
    cg_harness_layer *h = calloc(1, sizeof *h);
    *out = h;
    if (!h) return cg_fail(e, "out of memory");
    h->s = s, h->layer = layer, h->o = *o;
    h->n = o->batch > 0 ? o->batch : 1;
    h->nref = o->check_images > 0 && o->check_images < h->n ? o->check_images : h->n;
    const cg_layer *l = &s->layers[layer];
    long long rows, fan_in;
    (void)cg_op_weights(l, &rows, &fan_in);
    long long in_elems = cg_layer_in_elems(l);
    if ((double)h->n * (double)in_elems > 2147483647.0)
        return cg_fail(e, "--batch %lld: indices of this layer would pass 2^31", h->n);
    size_t nin = (size_t)(h->n * in_elems);
    h->nw = (size_t)(rows * fan_in);
    h->hin = malloc(nin * sizeof *h->hin);
    h->hw = malloc(h->nw * sizeof *h->hw);
    h->hb = malloc((size_t)rows * sizeof *h->hb);
    if (!h->hin || !h->hw || !h->hb) return cg_fail(e, "out of memory for %lld images", h->n);
    cg_harness_fill(h->hin, nin, o->seed, 1.0f);
    float ws = (float)(1.0 / sqrt((double)fan_in));
    cg_harness_fill(h->hw, h->nw, o->seed + 1, ws);
    cg_harness_fill(h->hb, (size_t)rows, o->seed + 2, ws);
    /* the reference of the layer as it is (a fused epilogue) now: every
     * candidate of a tuner's search is compared with it */
    if (!layer_reference(h, 1, cg_layer_out_elems(l), e)) return -1;
    if (cg_cu_open(&h->cu, o->device, e)) return -1;
    if (upload_as(h->cu, &h->in, h->hin, nin, layer_wdtype(l, h->cu->cc), e)) return -1;
    h->flush_words = 2LL * (h->cu->l2_bytes > 0 ? h->cu->l2_bytes : 64 << 20) / 4;
    return upload(h->cu, &h->flush, NULL, (size_t)h->flush_words * 4, e);
}

void cg_harness_layer_close(cg_harness_layer *h)
{
    if (!h) return;
    if (h->cu) {
        if (h->in) h->cu->cuMemFree(h->in);
        if (h->flush) h->cu->cuMemFree(h->flush);
        cg_cu_close(h->cu);
    }
    free(h->hin), free(h->hw), free(h->hb), free(h->ref[0]), free(h->ref[1]), free(h->hout);
    free(h);
}

/* cg_harness_layer_run, and (check 0) cg_harness_layer_time: the same without
 * the check, r->diff left saying "ok" with nothing compared. */
static int layer_run(cg_harness_layer *h, const cg_gen_kernel *k, const cg_kernel_launch *klaunch,
                     const cg_buf *image, int repeat, int check, cg_harness_result *r, cg_err *e)
{
    memset(r, 0, sizeof *r);
    r->k = *k;
    r->k.source = NULL, r->k.source_len = 0; /* name, template and layer only */
    r->launch = *klaunch;
    const cg_layer *l = &h->s->layers[h->layer];
    const cg_kernel_launch *kl = &r->launch;
    long long n = h->n, nref = h->nref;
    r->batch = n, r->checked_images = nref;
    if (!batch_fits(kl, n)) return cg_fail(e, "--batch %lld: indices of this layer would pass 2^31", n);
    if (kl->in_elems != cg_layer_in_elems(l))
        return cg_fail(e, "kernel %s reads %lld values per image, layer %s has %lld", k->kernel, kl->in_elems, l->name,
                       cg_layer_in_elems(l));
    bench b;
    memset(&b, 0, sizeof b);
    b.cu = h->cu;
    b.in = h->in, b.flush = h->flush;
    snprintf(r->device, sizeof r->device, "%s", h->cu->name);
    int rc = load_image(&b, r, k->kernel, image, e);
    const float *ref = rc || !check ? NULL : layer_reference(h, kl->fused, kl->out_elems, e);
    if (!rc && check && !ref) rc = e->msg[0] ? -1 : cg_fail(e, "kernel %s: unexpected output size", k->kernel);
    size_t nout = (size_t)(n * kl->out_elems);
    if (!rc && check && h->hout_n < nout) {
        free(h->hout);
        h->hout_n = 0;
        if (!(h->hout = malloc(nout * sizeof *h->hout))) rc = cg_fail(e, "out of memory");
        else h->hout_n = nout;
    }
    b.hout = h->hout;
    /* a 16-bit layer's kernel reads and writes 16-bit tensors and weights */
    const cg_wdtype dt = layer_wdtype(l, b.cu->cc);
    const size_t osz = dt == CG_W_F32 ? 4 : 2;
    b.out16 = dt != CG_W_F32;
    if (!rc) rc = upload(b.cu, &b.out, NULL, (size_t)(n * kl->out_elems) * osz, e);
    long long rows, fan_in; /* rows: the weights' first dimension */
    (void)cg_op_weights(l, &rows, &fan_in);
    /* its weights and bias in the type the kernel reads them (wdtype=; absent: FP32, as
     * conv2d_direct's __constant__ weights of a 16-bit layer are) */
    const cg_wdtype wdt = !strcmp(kl->wdtype, "bf16") ? CG_W_BF16 : !strcmp(kl->wdtype, "f16") ? CG_W_F16 : CG_W_F32;
    if (!rc) rc = place(&b, kl->weights, h->hw, h->nw, rows, wdt, &b.w, e);
    if (!rc && l->bias) rc = place(&b, kl->bias, h->hb, (size_t)rows, 1, wdt, &b.b, e);
    for (int i = 0; !rc && i < 2; i++) rc = CG_CU(e, b.cu->cuEventCreate(&b.ev[i], CU_EVENT_DEFAULT));
    char why[200];
    if (!rc && cg_args_parse_maps(kl->args, b.roles, &b.nroles, b.maps, &b.nmaps, why, sizeof why))
        rc = cg_fail(e, "kernel arguments '%s': %s", kl->args, why);
    b.in_dt = b.out_dt = dt == CG_W_BF16 ? CG_DT_BF16 : dt == CG_W_F16 ? CG_DT_F16 : CG_DT_F32;
    b.w_dt = wdt == CG_W_BF16 ? CG_DT_BF16 : wdt == CG_W_F16 ? CG_DT_F16 : CG_DT_F32;
    b.cap = n;
    for (int j = 0; !rc && j < b.nmaps; j++) {
        const cg_mmap *mp = &b.maps[j];
        int ti = cg_arg_input(mp->target), to = cg_arg_output(mp->target);
        long long per = cg_map_elems(mp), want = ti == 0 ? kl->in_elems : kl->out_elems;
        char txt[160];
        cg_map_text(mp, txt, sizeof txt);
        if (ti > 0 || to > 0)
            rc = cg_fail(e, "kernel arguments: %s: the harness gives a kernel one input and one output", txt);
        else if (mp->target == CG_ARG_WEIGHTS ? per != (long long)h->nw : per != want)
            rc = cg_fail(e, "kernel arguments: %s holds %lld elements %s, the layer's %s %lld", txt, per,
                         mp->target == CG_ARG_WEIGHTS ? "in all" : "an image",
                         mp->target == CG_ARG_WEIGHTS ? "weights" : ti == 0 ? "input" : "output",
                         mp->target == CG_ARG_WEIGHTS ? (long long)h->nw : want);
    }
    int past = rc ? -1 : cg_args_past_inputs(b.roles, b.nroles, 1);
    if (past >= 0)
        rc = cg_fail(e, "kernel arguments '%s': role %s names input %d; the harness gives a kernel one input",
                     kl->args, cg_arg_role_name(b.roles[past]), cg_arg_input(b.roles[past]) + 1);
    past = rc ? -1 : cg_args_past_outputs(b.roles, b.nroles, 1);
    if (past >= 0)
        rc = cg_fail(e, "kernel arguments '%s': role %s names output %d; the harness gives a kernel one output",
                     kl->args, cg_arg_role_name(b.roles[past]), cg_arg_output(b.roles[past]) + 1);
    /* check */
    if (!check) r->diff.ok = 1, r->checked_images = 0;
    if (!rc && check) rc = launch(&b, kl, n, 0, NULL, e);
    if (!rc && check) rc = CG_CU(e, b.cu->cuMemcpyDtoH(b.hout, b.out, (size_t)(n * kl->out_elems) * osz));
    if (!rc && check && dt != CG_W_F32) {
        /* 16-bit outputs, packed at the front of hout: widened in place from the end */
        const uint16_t *h16 = (const uint16_t *)b.hout;
        for (size_t i = (size_t)(n * kl->out_elems); i-- > 0;)
            b.hout[i] = dt == CG_W_F16 ? cg_f16_to_f32(h16[i]) : cg_bf16_to_f32(h16[i]);
    }
    if (!rc && check) {
        cg_harness_compare(b.hout, ref, (size_t)(nref * kl->out_elems), cg_layer_tol(l), &r->diff);
        /* the rest of the batch is not compared, but every element must be written */
        for (size_t i = (size_t)(nref * kl->out_elems); i < (size_t)(n * kl->out_elems); i++)
            r->diff.nonfinite += !isfinite(b.hout[i]);
        if (r->diff.nonfinite) r->diff.ok = 0, r->diff.rel_l2 = INFINITY;
    }
    /* time */
    double *ms = NULL;
    int reps = repeat > 0 ? repeat : h->o.repeat > 0 ? h->o.repeat : 1;
    if (!rc && r->diff.ok && !(ms = malloc((size_t)reps * sizeof *ms))) rc = cg_fail(e, "out of memory");
    for (int i = 0; !rc && r->diff.ok && i < h->o.warmup; i++) rc = launch(&b, kl, n, h->flush_words, NULL, e);
    for (int i = 0; !rc && r->diff.ok && i < reps; i++) rc = launch(&b, kl, n, h->flush_words, &ms[i], e);
    if (!rc && r->diff.ok) {
        cg_harness_stats_of(ms, reps, &r->t);
        r->flush_bytes = h->flush_words * 4;
        r->gflop = cg_harness_flop(l, n) / 1e9;
        r->tflops = r->t.median > 0 ? r->gflop / r->t.median : 0; /* GFLOP per ms = TFLOP/s */
    }
    free(ms);
    /* what belongs to this candidate; the layer's buffers and the device stay */
    b.in = b.flush = 0;
    b.cu = NULL;
    if (b.out) h->cu->cuMemFree(b.out);
    if (b.w) h->cu->cuMemFree(b.w);
    if (b.b) h->cu->cuMemFree(b.b);
    for (int i = 0; i < 2; i++)
        if (b.ev[i]) h->cu->cuEventDestroy(b.ev[i]);
    if (b.mod) h->cu->cuModuleUnload(b.mod);
    return rc ? -1 : 0;
}

int cg_harness_layer_run(cg_harness_layer *h, const cg_gen_kernel *k, const cg_kernel_launch *kl,
                         const cg_buf *image, int repeat, cg_harness_result *r, cg_err *e)
{
    return layer_run(h, k, kl, image, repeat, 1, r, e);
}

int cg_harness_layer_time(cg_harness_layer *h, const cg_gen_kernel *k, const cg_kernel_launch *kl,
                          const cg_buf *image, int repeat, cg_harness_result *r, cg_err *e)
{
    return layer_run(h, k, kl, image, repeat, 0, r, e);
}

int cg_harness_run_image(const cg_spec *s, int layer, const cg_gen_kernel *k, const cg_kernel_launch *klaunch,
                         const cg_buf *image, const cg_harness_opts *o, cg_harness_result *r, cg_err *e)
{
    cg_harness_layer *h = NULL;
    memset(r, 0, sizeof *r);
    int rc = cg_harness_layer_open(&h, s, layer, o, e);
    if (!rc) rc = cg_harness_layer_run(h, k, klaunch, image, 0, r, e);
    cg_harness_layer_close(h);
    return rc ? -1 : 0;
}
