/* harness.h — one generated kernel alone: reference, check, time.
 *
 * The kernel of one conv or fc layer under one configuration is generated
 * (cg_gen_emit_one), compiled through NVRTC and the cache (cg_jit_compile) and
 * given seeded random inputs (uniform in -1..1) and weights (uniform in
 * ±1/sqrt(fan_in)). Its output, poisoned with NaN before every launch, is
 * compared with the plain C reference of the same layer (runtime/cpu/cpu.c); only
 * a kernel that passes is timed: warm-up launches, then R launches each after
 * an L2 flush (a write of twice the device's L2), CUDA events around the kernel
 * alone. This is what `convgen kernel` prints and what a tuner calls.
 * The pieces that need no GPU are public so tests can hold them. */
#ifndef CG_HARNESS_H
#define CG_HARNESS_H
#include "gen.h"
#include "spec.h"

#define CG_HARNESS_TOL 1e-5 /* largest ‖gpu − cpu‖ / ‖cpu‖ accepted */

typedef struct {
    int device;              /* CUDA device index */
    long long batch;         /* images per launch */
    long long check_images;  /* images compared with the CPU reference (0: the whole batch) */
    int warmup, repeat;      /* untimed and timed launches */
    unsigned long long seed; /* inputs and weights */
    int no_cache;            /* compile without the on-disk cache */
} cg_harness_opts;

/* GPU output against the CPU reference. */
typedef struct {
    long long n;        /* elements compared */
    long long nonfinite; /* GPU elements that are NaN or infinite (a poisoned element left unwritten) */
    double rel_l2;      /* ‖gpu − cpu‖ / ‖cpu‖ (‖gpu − cpu‖ when cpu is all zero); inf with nonfinite */
    double max_abs;     /* largest |gpu − cpu| */
    double max_rel;     /* largest |gpu − cpu| / |cpu|, |cpu| floored at 1e-6 of the largest */
    int ok;             /* no non-finite value and rel_l2 <= the tolerance */
} cg_harness_diff;

/* Median and spread of timed runs, milliseconds. */
typedef struct {
    int n;
    double median, min, max, q1, q3; /* q1, q3: quartiles (linear interpolation) */
} cg_harness_stats;

typedef struct {
    cg_gen_kernel k;          /* the kernel's name, template, layer (source freed) */
    cg_kernel_launch launch;  /* its launch facts and parameters */
    char device[256];
    char arch[32];
    int cache_hit;
    double compile_ms;
    char cache_note[256];
    int registers, local_bytes; /* per thread, from the loaded function */
    long long batch, checked_images;
    cg_harness_diff diff;
    cg_harness_stats t;       /* filled when diff.ok */
    long long flush_bytes;    /* bytes written between timed runs */
    double gflop;             /* per launch of the batch */
    double tflops;            /* gflop at the median time */
} cg_harness_result;

/* ---- no GPU needed ---- */

/* x[i] uniform in [-scale, scale], from seed and i alone (same values however
 * the buffer is split). */
void cg_harness_fill(float *x, size_t n, unsigned long long seed, float scale);
/* The layer as one kernel computes it: the layer itself when fused; for an
 * unfused conv kernel the convolution plus bias only, at full size. */
void cg_harness_kernel_layer(const cg_layer *l, int fused, cg_layer *out);
/* The CPU reference of that layer (cg_cpu_layer) over n images, from weights
 * w (conv M*C*K*K, fc out*in) and bias b (NULL when the layer has none). */
int cg_harness_reference(const cg_layer *l, int fused, const float *w, const float *b, const float *in,
                         float *out, int n, cg_err *e);
/* Compare n values of gpu with cpu, ok under tolerance tol. */
void cg_harness_compare(const float *gpu, const float *cpu, size_t n, double tol, cg_harness_diff *d);

/* The tolerance of relative L2 error for products computed in precision p over
 * reductions of n terms (docs/design.md, "Precision"): fp32 (and n < 1)
 * CG_HARNESS_TOL; tf32 2u*sqrt(n) + n*2^-24 with u = 2^-11, TF32's unit roundoff
 * (a product of two operands rounded to TF32 is off by up to about 2u; a sum of
 * n such products of random signs has sum|t|/|sum t| about sqrt(n); the FP32
 * accumulation adds about n*2^-24), at least CG_HARNESS_TOL; bf16 and fp16 the same
 * with u = 2^-8 (bf16) or 2^-11 (fp16), the unit roundoff of the 16-bit operands, plus
 * u for the one rounding of each stored value (n < 1, an op that reduces nothing:
 * that u alone). */
double cg_precision_tol(cg_precision p, long long n);
/* A layer's reduction length: conv C/groups*K*K, fc C*H*W, 0 for the other ops. */
long long cg_layer_reduction(const cg_layer *l);
/* One layer's own tolerance: cg_precision_tol of its precision and reduction. */
double cg_layer_tol(const cg_layer *l);
/* Every layer's bound where its output comes from a whole network's run: its
 * own excess over CG_HARNESS_TOL plus those of the layers it reads, summed
 * along the graph, plus CG_HARNESS_TOL. A network of fp32 layers gets
 * CG_HARNESS_TOL throughout; a deep 16-bit one passes 1, where no error fails,
 * so convgen check judges a layer whose bound is above CG_HARNESS_TOL alone
 * (cg_unit_tols) and prints this one beside it. */
void cg_spec_tols(const cg_spec *s, double tol[CG_MAX_LAYERS]);
/* The same where each layer's output comes from its unit run alone on the
 * reference's inputs (convgen check, runtime/formats/units.h; unit[i]: layer i's
 * unit): the excesses summed only along the graph's edges inside a unit, so a
 * layer computed by its own kernels gets cg_layer_tol, and one computed in the
 * kernel of the layer it reads (an add in a conv's epilogue) the two summed. */
void cg_unit_tols(const cg_spec *s, const int unit[CG_MAX_LAYERS], double tol[CG_MAX_LAYERS]);
/* Statistics of n times (ms is sorted in place). */
void cg_harness_stats_of(double *ms, int n, cg_harness_stats *st);
/* Floating-point operations of the layer's main product for n images: a
 * multiply and an add per weight use (bias, activation, pooling not counted). */
double cg_harness_flop(const cg_layer *l, long long n);

/* ---- on the GPU ---- */

/* Generate, compile, check and time layer `layer` (0-based) of s under
 * template tpl (NULL: the layer's own) and params (gen.h's form). Returns 0
 * with r filled (r->diff.ok says whether the kernel was right; it is timed
 * only then), CG_HARNESS_BAD_CONFIG when the template refuses the
 * configuration, -1 on any other failure (no GPU, compile error, CUDA error). */
#define CG_HARNESS_BAD_CONFIG 2
int cg_harness_run(const cg_spec *s, int layer, const char *tpl, const char *params,
                   const cg_harness_opts *o, cg_harness_result *r, cg_err *e);
/* The same for a kernel already emitted (k, kl from cg_gen_emit_one) and
 * compiled (image: what cuModuleLoadData takes, e.g. from cg_jit_build): what a
 * tuner calls after compiling many candidates at once. r->arch, cache_hit,
 * compile_ms are left for the caller. Returns 0 (r->diff.ok says whether it was
 * right) or -1 on a CUDA failure. */
int cg_harness_run_image(const cg_spec *s, int layer, const cg_gen_kernel *k, const cg_kernel_launch *kl,
                         const cg_buf *image, const cg_harness_opts *o, cg_harness_result *r, cg_err *e);

/* The same, split for a tuner: one layer's inputs, weights, CPU reference and
 * device buffers made once (open), then any number of its candidates checked
 * and timed on them (run), with results identical to cg_harness_run_image's. */
typedef struct cg_harness_layer cg_harness_layer;
/* *out is set whenever memory allowed; close it after a failure too. */
int cg_harness_layer_open(cg_harness_layer **out, const cg_spec *s, int layer, const cg_harness_opts *o, cg_err *e);
/* repeat: timed launches (0: the options' repeat). */
int cg_harness_layer_run(cg_harness_layer *h, const cg_gen_kernel *k, const cg_kernel_launch *kl,
                         const cg_buf *image, int repeat, cg_harness_result *r, cg_err *e);
/* The timing alone, for a candidate that passed its check before (a tuner's
 * re-timing passes): warm-up and `repeat` timed launches, nothing compared
 * (r->diff.ok is 1, r->checked_images 0). */
int cg_harness_layer_time(cg_harness_layer *h, const cg_gen_kernel *k, const cg_kernel_launch *kl,
                          const cg_buf *image, int repeat, cg_harness_result *r, cg_err *e);
void cg_harness_layer_close(cg_harness_layer *h);

#endif
