/* test_emulate.c — generated kernels run without a GPU: each kernel's CUDA source
 * is compiled as C++ (g++) against a small emulation of the CUDA execution model
 * (a fiber per CUDA thread, a barrier per block for __syncthreads and per warp for
 * shuffles, __shared__ as memory every thread of the block sees; a thread-block
 * cluster's blocks one after another, its last rank first, for the templates'
 * CG_EMULATION reduction of fc_vec's and fc_gemv's splits (layers-fc-split-wg at the
 * large batch and at bucket 8); the
 * pre-sm_80 paths of the templates, since __CUDA_ARCH__ is not defined), then the
 * network runs kernel by kernel as the manifest says, from random pixels and the
 * spec's seeded random weights, outputs poisoned with NaN first. Every layer's
 * output must match the CPU reference (relative L2 error at most 1e-5, nothing
 * left unwritten). Specs: example-conv (the emulation against kernels the GPU
 * already passed), the networks of padding, stride and the pools (issue 12) and
 * layers-winograd and layers-winograd-f (conv2d_winograd on the layer shapes and
 * tile sizes it serves), layers-igemm-tc (conv2d_igemm_tc's tiling, staging and
 * epilogue, its products without tensor cores), layers-igemm-wg (conv2d_igemm_wg's
 * gather, split, shared-memory layout and epilogue, its products by FMAs on the
 * split values as wgmma would read them), layers-planes-wg and layers-planes-pool-wg
 * (conv2d_planes' copy into padded planes, offset table, bands, staged weights, epilogue
 * and fused pools, its products by FMAs on the planes), layers-slide (conv2d_slide's
 * three input paths, prefetches, partial tiles, strides, pads and pools; layers-slide-x2
 * the staged one with a chunk per thread window),
 * layers-slide-align (its weights after an odd number of staged floats),
 * layers-slide-pad (its padding's columns left out where a thread holds a whole row),
 * layers-small-batch at bucket 1 (conv2d_direct's map splits, conv2d_igemm's
 * small tiles, fc_gemv, and the last fc, softmax and predictions as one kernel,
 * templates/ops/tail.lua, writing three tensors), layers-tail at bucket 8 (the tail
 * of a network ending in an fc: fc and predictions), layers-splitk and layers-splitk-pool at bucket 1 (conv2d_igemm's
 * split reductions, grid z, and splitk_reduce, its 2x2 pools), layers-splitk8-tc at bucket 8
 * (conv2d_igemm_tc's split reductions under the small-batch rule), layers-small-tiles-wg
 * at buckets 8 and 64 (direct's small-batch tile, planes with a fused pool at 8 and for a
 * 3-channel layer at 64), layers-tiles-tc (the default map tiles: 13 maps unrolled by direct, 33, 71, 96
 * and 40 maps on igemm_tc's 40- and 48-map tiles, 23 on igemm's 24) and
 * layers-fc-odd (fc_vec's single-float and float2 loads), layers-bn (input mean/std,
 * batch norms folded into convs with the runtime's folded weights against the
 * reference's unfolded batch norms, batch norms as kernels, padded max and average
 * pools), layers-depthwise (conv2d_depthwise's windows, strides, padding and pools,
 * conv2d_direct's channel groups, relu6 and sigmoid fused and standalone), layers-graph (a residual add
 * read from two layers, concat of two branches, a three-input add: kernels reading
 * several tensors, a tensor read by two later layers), layers-concat, layers-concat-fp16
 * and bench/specs/zoo-inception (concat inputs written by their kernels straight into
 * their slices of the concat's output, manifest views: the view's slice of each image
 * compared, as the runtime downloads it; partial concat kernels copying the
 * others), layers-bf16 and layers-fp16
 * (16-bit tensors generated for sm_80, weights narrowed as the runtime narrows them,
 * 16-bit outputs widened before the comparison, within cg_spec_tols' 16-bit
 * tolerance; the shim declares __half and __nv_bfloat16 and their conversions; then
 * every unit of a layer not fp32 run alone as `convgen check` runs it, emulate_alone;
 * every unit of the large-batch kernels and of layers-splitk and layers-tail, fp32 too),
 * and the
 * whole-network kernel (templates/ops/network.lua) of layers-graph at bucket 1 and
 * ece408-2018sp at bucket 8, run as a cooperative launch (every block's threads
 * fibers at once, its grid-wide barrier the scheduler's), twice over one scratch
 * buffer, each layer and the predictions compared as the per-layer kernels'. The
 * kernels are built to trap on a misaligned vector access, as a GPU faults on
 * one; the trap fails the test naming the kernel. For local
 * runs: CG_EMULATE_SPEC=PATH emulates that spec alone (CG_EMULATE_BATCH=N: for N's bucket;
 * CG_EMULATE_IMAGES=N: over N images, at most 300, 3 by default);
 * CG_EMULATE_TIMES=1 prints each spec's CPU time (g++, and the emulation with the comparison).
 * Before any spec the emulated bulk tensor copy (common.tma_helpers() under CG_EMULATION, a
 * kernel's tensor maps as the runner binds them, emu_map) copies boxes as an H200 does
 * (tma_self_test), and the scheduler checks itself (scheduler_self_test: barriers and shuffles met,
 * and threads stuck at barriers reported, not hung).
 * Needs g++ (C++20), not a GPU or NVRTC; skipped without g++. */
/* (no fortified longjmp: the fibers below jump between stacks, which its check takes
 * for a jump into a frame that has returned) */
#undef _FORTIFY_SOURCE
#include "aot.h"
#include "check.h"
#include "cpu.h"
#include "isolate.h"
#include "gen.h"
#include "lua_host.h"
#include "tma_box.h"
#include "harness.h"
#include "manifest.h"
#include "units.h"
#include "weights.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* the images a spec's kernels are run over: 3, or (emulate_images) up to MAX_IMAGES */
#define IMAGES_DEFAULT 3
#define MAX_IMAGES 300
static int images = IMAGES_DEFAULT;
#define MAX_REL_L2 1e-5

/* The emulation every kernel is compiled with (-include, precompiled once per
 * run): CUDA's types and built-ins; threadIdx and the other launch variables,
 * the warp exchange and the dynamic shared memory are one per library (weak: a
 * spec's kernels are linked into one), written by the scheduler below; a barrier
 * calls back into it (emu_sync: 0 the block's, 1 + w warp w's). __device__
 * functions are static, so that two kernels' helpers of one name stay apart. */
/* A tensor map as the emulation hands it to a kernel (common.TMAP_TYPE's CG_EMULATION
 * branch: cg_tmap a pointer to it): the buffer, dims and byte strides (innermost first,
 * strides[0] the element size), the box, rank, swizzle span and element size. One text for
 * the runner (emu_map) and the shim. */
#define EMU_TMAP_STRUCT                                                                                             \
    struct cg_tmap_emu {                                                                                           \
        const unsigned char *base;                                                                                 \
        long long dims[5], strides[5];                                                                             \
        int box[5], rank, swizzle, esize;                                                                          \
    }
#define EMU_STR_(...) #__VA_ARGS__
#define EMU_STR(...) EMU_STR_(__VA_ARGS__)
EMU_TMAP_STRUCT;

static const char shim[] =
    "#include <math.h>\n#include <string.h>\n"
    EMU_STR(EMU_TMAP_STRUCT) ";\n#define __grid_constant__\n"
    "struct emu_dim3 { unsigned x, y, z; };\n"
    "struct alignas(16) float4 { float x, y, z, w; };\n"
    "struct alignas(8) float2 { float x, y; };\n"
    "struct alignas(8) int2 { int x, y; };\n"
    "struct alignas(4) uchar4 { unsigned char x, y, z, w; };\n"

    "static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }\n"
    "static inline float2 make_float2(float a, float b) { return {a, b}; }\n"
    "extern \"C\" {\n"
    "__attribute__((weak)) emu_dim3 threadIdx, blockIdx, blockDim, gridDim;\n"
    "__attribute__((weak)) void (*emu_sync)(int);\n"
    "__attribute__((weak)) float emu_xch[1024];\n"
    "__attribute__((weak)) unsigned emu_xbase;\n" /* the block's first slot of emu_xch (a cooperative launch's blocks share it) */
    "}\n"
    "__attribute__((weak)) float4 smem4[1 << 15];\n" /* dynamic shared memory (extern __shared__ float4 smem4[]) */
    "static inline void __syncthreads() { emu_sync(0); }\n"
    "static inline float __shfl_xor_sync(unsigned, float v, int o) {\n"
    "  unsigned t = threadIdx.x, w = t / 32;\n"
    "  emu_xch[emu_xbase + t] = v; emu_sync(1 + (int)w);\n"
    "  float r = emu_xch[emu_xbase + w * 32 + ((t % 32) ^ (unsigned)o)]; emu_sync(1 + (int)w); return r; }\n"
    "template <class T> static inline T __ldg(const T *p) { return *p; }\n"
    /* what the whole-network kernel (templates/ops/network.lua) uses beyond the others:
     * the fibers of one thread need no atomics or fences, and its grid-wide barrier is
     * the scheduler's (emu_sync(-1): every thread of every block of the launch) */
    "#define CG_EMULATION\n#define CG_EMU_GRID\n"
    "static inline void emu_grid_sync() { emu_sync(-1); }\n"
    "static inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }\n"
    "static inline void __threadfence() {}\n"
    "template <class T> static inline T __ldcg(const T *p) { return *p; }\n"
    "static inline int __shfl_xor_sync(unsigned m, int v, int o) {\n"
    "  float f; memcpy(&f, &v, 4); f = __shfl_xor_sync(m, f, o); memcpy(&v, &f, 4); return v; }\n"
    "static inline int __shfl_sync(unsigned, int v, int src) {\n"
    "  unsigned t = threadIdx.x, w = t / 32; float f; memcpy(&f, &v, 4);\n"
    "  emu_xch[emu_xbase + t] = f; emu_sync(1 + (int)w);\n"
    "  f = emu_xch[emu_xbase + w * 32 + (unsigned)src]; emu_sync(1 + (int)w); memcpy(&v, &f, 4); return v; }\n"
    "static inline int min(int a, int b) { return a < b ? a : b; }\n"
    "static inline int max(int a, int b) { return a > b ? a : b; }\n"
    "static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }\n"
    "static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }\n"
    "#define __global__\n#define __device__ static\n#define __forceinline__ inline\n"
    /* 16-bit floats as the kernels' half prelude declares them (templates/lib/common.lua
     * HALF_PRELUDE), their conversions bit for bit as the GPU's cvt.rn: to nearest, ties to even */
    "#define CG_HALF_TYPES\n"
    "struct __attribute__((aligned(2))) __half { unsigned short x; };\n"
    "struct __attribute__((aligned(2))) __nv_bfloat16 { unsigned short x; };\n"
    "static inline float __half2float(__half h) {\n"
    "  unsigned s = (unsigned)(h.x >> 15) << 31, e = h.x >> 10 & 0x1f, m = h.x & 0x3ff;\n"
    "  if (e == 0x1f) return __uint_as_float(s | 0x7f800000u | m << 13);\n"
    "  if (e) return __uint_as_float(s | (e + 112) << 23 | m << 13);\n"
    "  if (!m) return __uint_as_float(s);\n"
    "  unsigned e32 = 113; while (!(m & 0x400)) m <<= 1, e32--;\n"
    "  return __uint_as_float(s | e32 << 23 | (m & 0x3ff) << 13); }\n"
    "static inline __half __float2half_rn(float f) {\n"
    "  unsigned x = __float_as_uint(f), e8 = x >> 23 & 0xff, man = x & 0x7fffff;\n"
    "  unsigned short s = (unsigned short)(x >> 16 & 0x8000);\n"
    "  if (e8 == 0xff) return {(unsigned short)(s | 0x7c00 | (man ? 0x200 | man >> 13 : 0))};\n"
    "  int e = (int)e8 - 127;\n"
    "  if (e > 15) return {(unsigned short)(s | 0x7c00)};\n"
    "  if (e >= -14) { unsigned m = (unsigned)(e + 15) << 10 | man >> 13, rem = man & 0x1fff;\n"
    "    if (rem > 0x1000 || (rem == 0x1000 && (m & 1))) m++; return {(unsigned short)(s | m)}; }\n"
    "  if (e8 == 0 || e < -25) return {s};\n"
    "  unsigned m = man | 0x800000, sh = (unsigned)(-e - 1), q = m >> sh, rem = m & ((1u << sh) - 1), hf = 1u << (sh - 1);\n"
    "  if (rem > hf || (rem == hf && (q & 1))) q++; return {(unsigned short)(s | q)}; }\n"
    "static inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned)b.x << 16); }\n"
    "static inline __nv_bfloat16 __float2bfloat16_rn(float f) {\n"
    "  unsigned u = __float_as_uint(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return {(unsigned short)((u >> 16) | 0x40u)};\n"
    "  return {(unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)}; }\n"
    "#define __launch_bounds__(...)\n#define __cluster_dims__(...)\n#define __restrict__ __restrict\n#define __constant__\n"
    "#define __shared__ static\n#define __align__(n) __attribute__((aligned(n)))\n";

typedef void (*emu_any)(void); /* a kernel before its cast to its arguments */
typedef void (*emu_kernel)(void *, void *, void *, void *, int);
typedef void (*emu_k2)(void *, void *, int);
typedef void (*emu_k3)(void *, void *, void *, int);
typedef void (*emu_k5)(void *, void *, void *, void *, void *, int);
typedef void (*emu_k6)(void *, void *, void *, void *, void *, void *, int);
typedef void (*emu_k7)(void *, void *, void *, void *, void *, void *, void *, int);
typedef struct {
    unsigned x, y, z;
} emu_dim3;

/* The threads of a block run as fibers on this thread, one after another: each
 * runs until it waits at a barrier or returns; a barrier (0: the
 * block's, 1 + w: warp w's) lets its waiters on when every thread of its block
 * or warp that has not returned has reached it (a returned thread drops out, as
 * on the GPU). Threads all waiting at barriers some never reach end the launch
 * with an error instead of hanging. Each fiber's stack has an inaccessible page
 * below it: an overflow faults instead of writing another thread's stack. A fiber
 * starts by setcontext on its stack (makecontext); after that the scheduler and the
 * fibers pass control by _setjmp/_longjmp, which save no signal mask: swapcontext's
 * two system calls a switch were 60 % of the emulation's time (a barrier a slice and
 * a shuffle's two each, for every thread). */
#define FIB_MAX 1024
#define FIB_STACK (256 * 1024)
#define FIB_PAGE 4096
/* barriers: a block's own (0 in the shim) and its warps' (1 + w), 1 + warps of them a
 * block, then the grid's (-1 in the shim, a cooperative launch's only) */
#define FIB_BARS (2 * FIB_MAX / 32 + 2)
static struct {
    ucontext_t ctx; /* the start */
    jmp_buf jb;     /* where it waits */
    int wait, done, started;
    int next; /* the next thread waiting at the same barrier, -1: none */
} fib[FIB_MAX];
static jmp_buf fib_main; /* the scheduler, fib_run */
static char *fib_mem;
static unsigned fib_cur, fib_bx, fib_total, fib_nb;
static int fib_live[FIB_BARS], fib_arrived[FIB_BARS];
static int fib_head[FIB_BARS]; /* each barrier's waiting threads, a list through fib[].next; -1: none */
static emu_dim3 *fib_tid, *fib_bid; /* the library's threadIdx and blockIdx */
static unsigned *fib_xbase;        /* the library's emu_xbase */
static emu_any fib_k;
static int fib_quiet; /* (the scheduler's self-test: a launch expected to be stuck says nothing) */
static void *const *fib_a;
static int fib_na, fib_n;

/* The barrier index of the shim's barrier b for thread t of the launch: each
 * block's 1 + warps slots (its fibers are t / bx's), the grid's after them. */
static int fib_bar(unsigned t, int b)
{
    unsigned per = 1 + (fib_bx + 31) / 32;
    return b < 0 ? (int)(fib_nb * per) : (int)((t / fib_bx) * per) + b;
}

static void fib_release(int b)
{
    fib_arrived[b] = 0;
    for (int i = fib_head[b]; i >= 0; i = fib[i].next) fib[i].wait = -1;
    fib_head[b] = -1;
}

/* a thread at barrier b: the last to arrive goes on, the others wait */
static void fib_sync(int shim_b)
{
    int b = fib_bar(fib_cur, shim_b);
    if (++fib_arrived[b] == fib_live[b]) {
        fib_release(b);
        return;
    }
    fib[fib_cur].wait = b;
    fib[fib_cur].next = fib_head[b], fib_head[b] = (int)fib_cur;
    if (!_setjmp(fib[fib_cur].jb)) _longjmp(fib_main, 1);
}

static void fib_entry(void)
{
    void *const *a = fib_a;
    int n = fib_n;
    if (fib_na < 0) ((void (*)(void *const *, int))fib_k)(a, n); /* the whole-network kernel's _emu entry */
    else if (fib_na == 2) ((emu_k2)fib_k)(a[0], a[1], n);
    else if (fib_na == 3) ((emu_k3)fib_k)(a[0], a[1], a[2], n);
    else if (fib_na == 4) ((emu_kernel)fib_k)(a[0], a[1], a[2], a[3], n);
    else if (fib_na == 5) ((emu_k5)fib_k)(a[0], a[1], a[2], a[3], a[4], n);
    else if (fib_na == 6) ((emu_k6)fib_k)(a[0], a[1], a[2], a[3], a[4], a[5], n);
    else ((emu_k7)fib_k)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], n);
    unsigned t = fib_cur;
    fib[t].done = 1;
    int bars[3] = {fib_bar(t, 0), fib_bar(t, 1 + (int)(t % fib_bx / 32)), fib_bar(t, -1)};
    for (int i = 0; i < 3; i++) {
        int b = bars[i];
        if (--fib_live[b] > 0 && fib_arrived[b] == fib_live[b]) fib_release(b);
    }
    _longjmp(fib_main, 1);
}

/* The fibers' stacks, once: 0, or -1 */
static int fib_init(void)
{
    const size_t each = FIB_STACK + FIB_PAGE;
    fib_mem = mmap(NULL, each * FIB_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fib_mem == MAP_FAILED) return fib_mem = NULL, -1;
    for (unsigned t = 0; t < FIB_MAX; t++) {
        if (mprotect(fib_mem + t * each, FIB_PAGE, PROT_NONE) || getcontext(&fib[t].ctx)) return -1;
        fib[t].ctx.uc_stack.ss_sp = fib_mem + t * each + FIB_PAGE;
        fib[t].ctx.uc_stack.ss_size = FIB_STACK;
        fib[t].ctx.uc_link = NULL; /* (fib_entry never returns: it jumps back to the scheduler) */
    }
    return 0;
}

/* Runs nb blocks of fib_bx threads, all at once (nb > 1: a cooperative launch,
 * whose blocks meet at the grid barrier), blocks first..first+nb-1 of the grid
 * (x, y, z) given for block ids. 0, or -1 when threads wait at barriers some
 * never reach. */
static int fib_run(unsigned nb, emu_dim3 first)
{
    unsigned bx = fib_bx, per = 1 + (bx + 31) / 32;
    fib_nb = nb, fib_total = nb * bx;
    memset(fib_live, 0, sizeof fib_live);
    memset(fib_arrived, 0, sizeof fib_arrived);
    memset(fib_head, 0xff, sizeof fib_head);
    for (unsigned blk = 0; blk < nb; blk++) {
        fib_live[blk * per] = (int)bx;
        for (unsigned w = 0; w * 32 < bx; w++) fib_live[blk * per + 1 + w] = bx - w * 32 < 32 ? (int)(bx - w * 32) : 32;
    }
    fib_live[nb * per] = (int)fib_total;
    for (unsigned t = 0; t < fib_total; t++) {
        fib[t].wait = -1, fib[t].done = 0, fib[t].started = 0;
        makecontext(&fib[t].ctx, fib_entry, 0);
    }
    for (volatile unsigned left = fib_total; left > 0;) {
        volatile int ran = 0;
        for (volatile unsigned t = 0; t < fib_total; t++) {
            if (fib[t].done || fib[t].wait >= 0) continue;
            fib_cur = t, ran = 1;
            *fib_tid = (emu_dim3){t % bx, 0, 0};
            *fib_bid = (emu_dim3){first.x + t / bx, first.y, first.z};
            *fib_xbase = t / bx * bx;
            if (!_setjmp(fib_main)) {
                if (fib[t].started) _longjmp(fib[t].jb, 1);
                fib[t].started = 1;
                setcontext(&fib[t].ctx);
                return -1; /* (setcontext failed) */
            }
            if (fib[t].done) left--;
        }
        if (!ran) {
            if (fib_quiet) return -1;
            printf("FAIL tests/test_emulate.c: block (%u, %u, %u)%s: %u threads wait at barriers not all of them reach\n",
                   first.x, first.y, first.z, nb > 1 ? " and the others of the cooperative launch" : "", left);
            return -1;
        }
    }
    return 0;
}

/* Kernel k of library so over the grid, bx threads a block (coop: the grid's gx
 * blocks all at once, k the whole-network kernel's _emu entry taking the
 * argument array): 0, or -1 (a block's threads stuck at barriers, or a launch
 * the emulation does not take). */
static int emu_launch(void *so, emu_any k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, void *const *a,
                      int na, int n, int coop)
{
    emu_dim3 *bdim = dlsym(so, "blockDim"), *gdim = dlsym(so, "gridDim");
    void (**sync)(int) = dlsym(so, "emu_sync");
    fib_bid = dlsym(so, "blockIdx"), fib_tid = dlsym(so, "threadIdx"), fib_xbase = dlsym(so, "emu_xbase");
    if (!fib_mem || !fib_bid || !bdim || !gdim || !sync || !fib_tid || !fib_xbase || bx == 0 || bx > FIB_MAX ||
        (coop && (gy != 1 || gz != 1 || bx % 32 || (unsigned long long)gx * bx > FIB_MAX)) || (!coop && na < 0))
        return -1;
    *sync = fib_sync;
    *bdim = (emu_dim3){bx, 1, 1}, *gdim = (emu_dim3){gx, gy, gz};
    fib_k = k, fib_a = a, fib_na = coop ? -1 : na, fib_n = n, fib_bx = bx;
    if (coop) return fib_run(gx, (emu_dim3){0, 0, 0});
    /* the blocks of one (x, y) one after another, z innermost and from the last: the
     * cluster along z of fc_vec's and fc_gemv's split has its other ranks done before
     * rank 0, whose emulated reduction (CG_EMULATION in the templates) adds what they
     * left (on a GPU the cluster's barriers make the order free) */
    for (unsigned y = 0; y < gy; y++)
        for (unsigned x = 0; x < gx; x++)
            for (unsigned z = gz; z-- > 0;)
                if (fib_run(1, (emu_dim3){x, y, z})) return -1;
    return 0;
}

/* Runs argv (NULL-terminated) and waits: 0 when it exited 0. */
static int run_cmd(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Writes text to path. */
static int write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(text, 1, len, f);
    return fclose(f) || w != len ? -1 : 0;
}

/* The kernel's source as g++ takes it: the dynamic shared array declared extern. */
static char *host_source(const char *src)
{
    const char *from = "extern __shared__", *to = "extern";
    size_t n = strlen(src), cap = n + 1;
    char *out = malloc(cap), *o = out;
    if (!out) return NULL;
    for (const char *p = src; *p;) {
        if (!strncmp(p, from, strlen(from))) {
            memcpy(o, to, strlen(to)), o += strlen(to), p += strlen(from);
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

/* FNV-1a over the source after its leading comment lines (the header, which names the
 * spec and the command): kernels of one source in two specs hash alike. */
static unsigned long long body_hash(const char *src)
{
    while (!strncmp(src, "//", 2) && strchr(src, '\n')) src = strchr(src, '\n') + 1;
    unsigned long long h = 1469598103934665603ull;
    for (; *src; src++) h = (h ^ (unsigned char)*src) * 1099511628211ull;
    return h;
}

/* How the shim (precompiled) and every kernel are compiled: -O1, since running the
 * emulated kernels is most of this test's time (at -O0 the whole run took 42 s of CPU
 * in g++ and 113 s running and comparing, at -O1 57 s and 57 s); -std=c++20 keeps
 * GCC's -ffp-contract=off, so the arithmetic is the same as at -O0; a vector access
 * off its alignment traps (SIGILL) at either level */
#define EMU_CXXFLAGS                                                                                                   \
    "-std=c++20", "-O1", "-w", "-fPIC", "-fsanitize=alignment", "-fsanitize-undefined-trap-on-error"

/* Places a weight tensor where the kernel finds it: in its __constant__ symbol,
 * as an argument, or as an argument transposed to (rest x rows); in the kernel's
 * weight type dt (a 16-bit one converted as the runtime converts it,
 * cg_weights_narrowed). *owned: whether the caller frees the result. */
static void *place(void *so, cg_place where, int wtaps, const char *sym, const cg_tensor *t, long long rows,
                   cg_dtype dt, int *ok, int *owned)
{
    *ok = 1, *owned = 0;
    if (where == CG_PLACE_NONE || !t) return NULL;
    const float *src = t->data;
    float *tr = NULL;
    if (where == CG_PLACE_ARG_FFT) {
        /* conv2d_fft's weights: their transforms (FP32), as the runtime uploads them */
        long long n = 0;
        float *f = t->ndim == 4 ? cg_weights_fft(t->data, t->shape[0], t->shape[1], t->shape[2], CG_FFT_H(wtaps),
                                                 CG_FFT_W(wtaps), &n)
                                : NULL;
        return *ok = f != NULL, *owned = 1, f;
    }
    if (where == CG_PLACE_ARG_T || where == CG_PLACE_ARG_TAPS) {
        /* (rows x C x taps) -> (taps x C x rows); transposed: taps 1 */
        long long taps = where == CG_PLACE_ARG_TAPS ? wtaps : 1, c = t->count / (rows * taps);
        tr = malloc((size_t)t->count * sizeof(float));
        if (!tr) return *ok = 0, NULL;
        for (long long m = 0; m < rows; m++)
            for (long long ch = 0; ch < c; ch++)
                for (long long k = 0; k < taps; k++) tr[(k * c + ch) * rows + m] = t->data[(m * c + ch) * taps + k];
        src = tr;
    }
    void *data = (void *)src;
    if (dt == CG_DT_F16 || dt == CG_DT_BF16) {
        data = cg_weights_narrowed(src, t->count, dt == CG_DT_F16 ? CG_W_F16 : CG_W_BF16);
        free(tr), tr = NULL;
        if (!data) return *ok = 0, NULL;
        *owned = 1;
    } else if (tr) {
        *owned = 1;
    }
    if (where == CG_PLACE_CONST) {
        void *dst = dlsym(so, sym);
        if (dst) memcpy(dst, data, (size_t)t->count * cg_dtype_size(dt));
        if (*owned) free(data);
        *owned = 0;
        return *ok = dst != NULL, NULL;
    }
    return data;
}

/* The fresh kernels of a spec (unit_of[k] 0 or 1; fresh of them) compiled as two units,
 * one g++ each, both at once: SUB/unit0.cu and unit1.cu, each kernel under a #line naming
 * its file (aot.c's write_unit); a kernel of a unit that compiles gets the unit's object
 * (obj[k], built[k]). Where only one kernel is fresh, or a unit does not compile, its
 * kernels are compiled one by one, two at a time, each to its obj[k] (kept for later
 * specs). */
static void group_units(const char *sub, const char *shim_path, const cg_manifest *m,
                        const cg_gen_kernel *const *gks, const int *unit_of, int fresh, int *built,
                        char (*obj)[1024])
{
    int unit_ok[2] = {0, 0};
    if (fresh >= 2) {
        pid_t pid[2] = {-1, -1};
        char unit_obj[2][1024];
        for (int u = 0; u < 2; u++) {
            cg_buf tu;
            cg_buf_init(&tu);
            int bad = 0;
            for (int k = 0; k < m->nkernels && !bad; k++) {
                if (unit_of[k] != u) continue;
                char *src = host_source(gks[k]->source);
                bad = !src || cg_buf_printf(&tu, "#line 1 \"%s.cu\"\n%s\n", m->k[k].name, src);
                free(src);
            }
            char cu[1100];
            snprintf(cu, sizeof cu, "%.900s/unit%d.cu", sub, u);
            snprintf(unit_obj[u], sizeof unit_obj[u], "%.900s/unit%d.o", sub, u);
            int written = !bad && tu.data && !write_text(cu, tu.data, tu.len);
            cg_buf_free(&tu);
            char *argv[] = {"g++", EMU_CXXFLAGS, "-c", "-include", (char *)shim_path, "-x", "c++", cu, "-o", unit_obj[u], NULL};
            pid[u] = written ? fork() : -1;
            if (pid[u] == 0) {
                /* (a unit that fails is compiled again kernel by kernel, which names the kernel) */
                int null = open("/dev/null", O_WRONLY);
                if (null >= 0) dup2(null, 2);
                execvp(argv[0], argv);
                _exit(127);
            }
        }
        for (int u = 0; u < 2; u++) {
            int st;
            if (pid[u] > 0 && waitpid(pid[u], &st, 0) == pid[u]) unit_ok[u] = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            if (!unit_ok[u]) continue;
            for (int k = 0; k < m->nkernels; k++)
                if (unit_of[k] == u) built[k] = 1, memcpy(obj[k], unit_obj[u], sizeof unit_obj[u]);
        }
    }
    /* one by one: two g++ at a time, each kernel to its own (kept) object */
    pid_t pid[CG_MAN_KERNELS];
    int running = 0;
    for (int k = 0; k <= m->nkernels; k++) {
        /* wait for one when two run, and for all at the end */
        while (running > 0 && (running >= 2 || k == m->nkernels)) {
            int st;
            pid_t done = wait(&st);
            if (done < 0) break;
            for (int j = 0; j < k; j++)
                if (pid[j] == done) built[j] = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            running--;
        }
        if (k == m->nkernels) break;
        pid[k] = -1;
        if (unit_of[k] < 0 || unit_ok[unit_of[k]]) continue;
        char cu[1100];
        snprintf(cu, sizeof cu, "%s/%s.cu", sub, m->k[k].name);
        char *src = host_source(gks[k]->source);
        int written = src && !write_text(cu, src, strlen(src));
        free(src);
        /* vector loads and stores off their alignment trap (SIGILL), as they fault on a GPU */
        char *argv[] = {"g++", EMU_CXXFLAGS, "-c", "-include", (char *)shim_path, "-x", "c++", cu, "-o", obj[k], NULL};
        pid[k] = written ? fork() : -1;
        if (pid[k] == 0) {
            execvp(argv[0], argv);
            _exit(127);
        }
        if (pid[k] > 0) running++;
    }
}

/* The kernel being emulated, for the trap handler: the kernels are built to
 * trap (SIGILL) on a vector load or store off its alignment, which on a GPU
 * stops the kernel with a misaligned address. */
static char trap_what[512];
static void on_trap(int sig)
{
    (void)sig;
    static const char head[] = "FAIL tests/test_emulate.c: a misaligned vector access (or another trap) in ";
    ssize_t w = write(2, head, sizeof head - 1);
    w += write(2, trap_what, strlen(trap_what));
    w += write(2, "\n", 1);
    _exit(w > 0 ? 1 : 2);
}

/* One spec through the emulated GPU, every layer against the CPU reference;
 * generated for the default target, or for sm_80 where the spec's kernels need
 * it (conv2d_igemm_tc: the emulation runs its path without tensor cores), or for
 * sm_90 (as sm_90a: conv2d_igemm_wg, its path without wgmma). */
/* CPU seconds so far: who RUSAGE_SELF (the emulated blocks, the CPU reference) or
 * RUSAGE_CHILDREN (g++) */
static double cpu_s(int who)
{
    struct rusage u;
    if (getrusage(who, &u)) return 0;
    return (double)u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void emulate_one(const char *spec_path, const char *dir, int batch);

/* emulate_one over n images (IMAGES_DEFAULT: with the units alone and the whole-network
 * kernel too), with its CPU time (g++ and the rest) on one line under CG_EMULATE_TIMES=1 */
static void emulate_images(const char *spec_path, const char *dir, int batch, int n)
{
    CHECK(n >= 1 && n <= MAX_IMAGES, "%s: %d images (1 to %d)", spec_path, n, MAX_IMAGES);
    if (n < 1 || n > MAX_IMAGES) return;
    double self0 = cpu_s(RUSAGE_SELF), kids0 = cpu_s(RUSAGE_CHILDREN);
    images = n;
    emulate_one(spec_path, dir, batch);
    images = IMAGES_DEFAULT;
    const char *times = getenv("CG_EMULATE_TIMES");
    if (times && !strcmp(times, "1"))
        printf("note: %s (%d image%s, bucket %d): %.1f s CPU compiling, %.1f s CPU running and comparing\n",
               spec_path, n, n == 1 ? "" : "s", batch, cpu_s(RUSAGE_CHILDREN) - kids0, cpu_s(RUSAGE_SELF) - self0);
}

static void emulate(const char *spec_path, const char *dir, int batch)
{
    emulate_images(spec_path, dir, batch, IMAGES_DEFAULT);
}

/* Every layer's tensor in buf against the CPU reference (lo; lf: the folded
 * reference where a batch norm folds into the layer), then the predictions
 * against the scores; label names the path in each line ("" or " (whole-network
 * kernel)"). */
static void compare_layers(const char *spec_path, const char *label, const cg_spec *s, const cg_manifest *m,
                           const cg_gen_output *o, void *const *buf, float *const *lo, float *const *lf,
                           const double *tol)
{
    for (int i = 0; i < s->nlayers; i++) {
        int t = m->l[i].out;
        if (m->l[i].into[0]) {
            /* a conv (or the batchnorm folded into it) whose kernel computes an add in its
             * epilogue: no tensor of its own; the add's layer is compared */
            printf("ok %s: layer %s: computed with add %s in one kernel (compared there)\n", spec_path,
                   s->layers[i].name, m->l[i].into);
            continue;
        }
        const float *ref = lf[i] ? lf[i] : lo[i];
        size_t count = (size_t)cg_layer_out_elems(&s->layers[i]) * images;
        CHECK(m->t[t].elems * images == (long long)count, "%s: layer %s: %lld elements, the CPU has %zu", spec_path,
              s->layers[i].name, m->t[t].elems * images, count);
        if (m->t[t].elems * images != (long long)count) continue;
        /* a view (a concat's input its kernel wrote into its slice): the slice of each
         * image of the concat's tensor, gathered as the runtime downloads it */
        void *own = NULL;
        const void *data = buf[t];
        if (m->t[t].view) {
            own = malloc(count * cg_dtype_size(m->t[t].dtype));
            if (!own) continue;
            cg_manifest_gather(m, t, buf[m->t[t].parent], images, own);
            data = own;
        }
        /* a 16-bit tensor widened, exactly, as the runtime downloads it */
        float *wide = NULL;
        const float *g = data;
        if (m->t[t].dtype == CG_DT_F16 || m->t[t].dtype == CG_DT_BF16) {
            const uint16_t *h = data;
            g = wide = malloc(count * sizeof(float));
            for (size_t j = 0; wide && j < count; j++)
                wide[j] = m->t[t].dtype == CG_DT_F16 ? cg_f16_to_f32(h[j]) : cg_bf16_to_f32(h[j]);
            if (!wide) {
                free(own);
                continue;
            }
        }
        /* a channels-last tensor (hwc=): turned to C x H x W, as the runtime downloads it */
        float *turned = m->t[t].hwc[0] ? malloc(count * sizeof(float)) : NULL;
        if (turned) {
            memcpy(turned, g, count * sizeof(float));
            CHECK(cg_manifest_relayout(&m->t[t], turned, images, 1) == 0, "out of memory");
            g = turned;
        }
        CHECK(!m->t[t].hwc[0] || turned, "out of memory");
        double num = 0, den = 0;
        size_t nan = 0;
        for (size_t j = 0; j < count; j++) {
            if (isnan(g[j])) nan++;
            double d = (double)g[j] - ref[j];
            num += d * d, den += (double)ref[j] * ref[j];
        }
        free(turned);
        free(wide);
        free(own);
        double rel = sqrt(num / (den > 0 ? den : 1));
        double lim = s->layers[i].precision == CG_PREC_FP32 && tol[i] == CG_HARNESS_TOL ? MAX_REL_L2 : tol[i];
        /* 16-bit layers: convgen check's tolerance adds 2u*sqrt(n) a layer along the graph, past 1
         * for a deep bf16 network, where a wrong kernel would pass; here, on the same CPU every run,
         * each layer is held to 4u as well (one rounding of the stored value is u; measured at most
         * 1.3u on the layer networks, bf16 and fp16) */
        if (s->layers[i].precision == CG_PREC_BF16 || s->layers[i].precision == CG_PREC_FP16) {
            double u4 = 4.0 * (s->layers[i].precision == CG_PREC_BF16 ? 1.0 / 256 : 1.0 / 2048);
            if (lim > u4) lim = u4;
        }
        CHECK(nan == 0 && rel <= lim, "%s: layer %s%s: %zu unwritten, relative L2 error %.3g (tolerance %.3g)", spec_path,
              s->layers[i].name, label, nan, rel, lim);
        /* a kernel of one TF32 product a tile: its operands rounded as the GPU rounds
         * them, so the error is TF32's, above FP32's (the emulation is not FP32's); not
         * the whole-network kernel, whose FMAs take a tf32 layer in FP32 (network.lua) */
        for (int k = 0; k < o->nkernels && !strstr(label, "whole-network"); k++)
            if (!strcmp(o->k[k].layer, s->layers[i].name) && strstr(o->k[k].kernel, "_tf32"))
                CHECK(rel > MAX_REL_L2, "%s: layer %s: tf32 kernel %s within FP32's error (%.3g): its operands "
                      "are not rounded to TF32", spec_path, s->layers[i].name, o->k[k].kernel, rel);
        printf("ok %s: layer %s%s%s: relative L2 error %.2g (tolerance %.2g)\n", spec_path, s->layers[i].name,
               lf[i] ? " (conv + batchnorm folded)" : "", label, rel, lim);
    }
    /* the predictions: the argmax kernel's class is the first maximum of the
     * scores the network's last kernel wrote (whatever the tensors' widths) */
    if (m->predict >= 0 && m->output >= 0 && m->t[m->output].dtype == CG_DT_F32) {
        const int *pk = buf[m->predict];
        const float *sc = buf[m->output];
        long long E = m->t[m->output].elems;
        int wrong = 0;
        for (int img = 0; img < images; img++) {
            int best = 0;
            for (long long c = 1; c < E; c++)
                if (sc[img * E + c] > sc[img * E + best]) best = (int)c;
            wrong += pk[img] != best;
        }
        CHECK(wrong == 0, "%s%s: %d of %d predictions are not the first maximum of the network's scores", spec_path,
              label, wrong, images);
    }
}

/* Runs the whole-network kernel of m over the tensors in buf (every one but the
 * pixels poisoned first), its arguments bound by role: t: a tensor, w: and b: the
 * layer's (folded) weights as the file lays them out, scratch zeroed. 1 when it
 * ran (the failure is reported). */
static int emulate_whole(void *so, const char *spec_path, const cg_manifest *m, const cg_weights *fw, void **buf)
{
    const cg_mkernel *mk = &m->k[cg_manifest_whole(m)];
    char sym[sizeof mk->name + 8];
    snprintf(sym, sizeof sym, "%s_emu", mk->name);
    emu_any fn = (emu_any)dlsym(so, sym);
    void *scratch = calloc(1, (size_t)mk->scratch + 4);
    void *a[CG_MAX_ARGS] = {0};
    int bound = fn && scratch;
    for (int i = 0; bound && i < mk->nargs; i++) {
        cg_arg_role r = mk->args[i];
        char name[CG_NAME_MAX + 8];
        const cg_tensor *t = NULL;
        if (r == CG_ARG_IN) a[i] = buf[mk->in[0]];
        else if (r == CG_ARG_OUT) a[i] = buf[mk->out];
        else if (r == CG_ARG_TENSOR) a[i] = buf[mk->argref[i]];
        else if (r == CG_ARG_SCRATCH) a[i] = scratch;
        else if (r == CG_ARG_LWEIGHTS || r == CG_ARG_LBIAS) {
            snprintf(name, sizeof name, "%s.%s", m->l[mk->argref[i]].name, r == CG_ARG_LWEIGHTS ? "weight" : "bias");
            t = cg_weights_find(fw, name);
            a[i] = t ? t->data : NULL;
            bound = t != NULL;
        } else if (r != CG_ARG_N) bound = 0;
    }
    CHECK(bound, "%s: %s: its entry %s, scratch or arguments not bound", spec_path, mk->name, sym);
    /* as many blocks as the emulation's threads hold, the launch's cap at most */
    long long gx = FIB_MAX / mk->block[0];
    if (mk->res_cap > 0 && gx > mk->res_cap) gx = mk->res_cap;
    /* twice over the same scratch, every tensor but the pixels poisoned before each:
     * the second launch finds the counters and the barrier as the first left them */
    int ok = bound;
    for (int run = 0; ok && run < 2; run++) {
        for (int i = 0; i < m->ntensors; i++) {
            if (i == m->input || m->t[i].view) continue; /* (a view: its parent's memory) */
            size_t bytes = (size_t)m->t[i].elems * images * cg_dtype_size(m->t[i].dtype);
            if (m->t[i].dtype == CG_DT_F32)
                for (size_t j = 0; j < bytes / 4; j++) ((float *)buf[i])[j] = NAN;
            else
                memset(buf[i], 0xff, bytes);
        }
        ok = emu_launch(so, fn, (unsigned)gx, 1, 1, (unsigned)mk->block[0], a, 0, images, 1) == 0;
        CHECK(ok, "%s: %s: the emulated cooperative launch failed (launch %d)", spec_path, mk->name, run + 1);
    }
    free(scratch);
    return ok;
}

/* Tensor map mp over the memory at base (elements of esize bytes; a tensor's images: the
 * `images` the emulation holds) as a kernel's emulation reads it: 0, or -1 where its
 * geometry is refused (cg_map_geometry). */
static int emu_map(const cg_mmap *mp, const void *base, size_t esize, struct cg_tmap_emu *t)
{
    uint64_t dims[CG_MAP_RANK], strides[CG_MAP_RANK];
    uint32_t box[CG_MAP_RANK];
    char why[160];
    memset(t, 0, sizeof *t);
    if (cg_map_geometry(mp, esize, images, dims, strides, box, why, sizeof why)) return -1;
    t->base = base, t->rank = mp->rank, t->swizzle = mp->swizzle, t->esize = (int)esize;
    for (int d = 0; d < mp->rank; d++) {
        t->dims[d] = (long long)dims[d], t->box[d] = (int)box[d];
        t->strides[d] = d ? (long long)strides[d - 1] : (long long)esize;
    }
    return 0;
}

/* Per-layer kernel k of m launched over the tensors in buf (`images` of them), its
 * weights and bias from fw placed as the manifest says. 0 when the library has
 * no such symbol; a failed launch is reported and counts as run. */
static int emu_run_kernel(void *so, const char *spec_path, const cg_spec *sp, const cg_manifest *m, const cg_weights *fw,
                      int k, void *const *buf)
{
    const cg_mkernel *mk = &m->k[k];
    emu_any fn = (emu_any)dlsym(so, mk->name);
    CHECK(fn, "%s: %s: no symbol", spec_path, mk->name);
    if (!fn) return 0;
    snprintf(trap_what, sizeof trap_what, "%s: kernel %s", spec_path, mk->name);
    /* weights of the kernel's layer */
    const cg_tensor *tw = NULL, *tb = NULL;
    long long rows = 1;
    if (mk->layer_index >= 0) {
        const cg_layer *l = &sp->layers[mk->layer_index];
        char name[CG_NAME_MAX + 8];
        snprintf(name, sizeof name, "%s.weight", l->name);
        tw = cg_weights_find(fw, name);
        snprintf(name, sizeof name, "%s.bias", l->name);
        tb = cg_weights_find(fw, name);
        rows = l->op == CG_OP_CONV ? l->M : l->op == CG_OP_BATCHNORM ? l->C : l->out;
    }
    int okw, okb, ownw, ownb;
    void *wa = place(so, mk->wplace, mk->wtaps, mk->wsym, tw, rows, mk->wdtype, &okw, &ownw);
    void *ba = place(so, mk->bplace, 0, mk->bsym, tb, rows, mk->wdtype, &okb, &ownb);
    CHECK(okw && okb, "%s: %s: weights not placed", spec_path, mk->name);
    /* arguments by role: 2 to 7 pointers (inputs, outputs, weights, bias, tensor maps), then n */
    void *a[7] = {0};
    struct cg_tmap_emu maps[CG_MAX_MAPS];
    int na = mk->nargs - 1, std = na >= 2 && na <= 7 && mk->args[na] == CG_ARG_N;
    for (int i = 0; std && i < na; i++) {
        cg_arg_role role = mk->args[i];
        if (role == CG_ARG_MAP) {
            const cg_mmap *mp = &mk->maps[mk->argref[i]];
            int j = cg_arg_input(mp->target), q = cg_arg_output(mp->target);
            cg_dtype dt = j >= 0 ? m->t[mk->in[j]].dtype : q >= 0 ? m->t[mk->outs[q]].dtype : mk->wdtype;
            std = emu_map(mp, j >= 0 ? buf[mk->in[j]] : q >= 0 ? buf[mk->outs[q]] : wa, cg_dtype_size(dt),
                          &maps[mk->argref[i]]) == 0;
            a[i] = &maps[mk->argref[i]];
            continue;
        }
        int j = cg_arg_input(role), q = cg_arg_output(role);
        std = role != CG_ARG_N && j < mk->nin && q < mk->nout;
        a[i] = j >= 0 ? buf[mk->in[j]] : q >= 0 ? buf[mk->outs[q]]
             : role == CG_ARG_WEIGHTS ? (void *)wa : (void *)ba;
    }
    CHECK(std, "%s: %s: arguments other than (2 to 7 pointers, n)", spec_path, mk->name);
    long long gx = cg_mdim_eval(mk->grid[0], images), gy = cg_mdim_eval(mk->grid[1], images),
              gz = cg_mdim_eval(mk->grid[2], images);
    CHECK(mk->grid[2].div == 0 && mk->block[1] == 1 && mk->block[2] == 1 &&
              mk->shared <= (int)sizeof(float) * 4 * (1 << 15),
          "%s: %s: a launch the emulation does not take", spec_path, mk->name);
    if (std && okw && okb) {
        int lrc = emu_launch(so, fn, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)mk->block[0], a, na, images, 0);
        CHECK(lrc == 0, "%s: %s: the emulated launch failed (threads stuck at barriers, or no memory)", spec_path,
              mk->name);
    }
    if (ownw) free(wa);
    if (ownb) free(ba);
    return 1;
}

/* The floats at f into tensor t's bytes at dst (`images` of them), as the GPU
 * stores them; and back, widened. */
static void emu_store(const cg_mtensor *t, const float *f, void *dst)
{
    size_t count = (size_t)t->elems * images;
    uint16_t *h = dst;
    /* a channels-last tensor (hwc=): the reference's C x H x W images turned, as the runtime uploads them */
    float *turned = t->hwc[0] ? malloc(count * sizeof(float)) : NULL;
    if (turned) {
        memcpy(turned, f, count * sizeof(float));
        CHECK(cg_manifest_relayout(t, turned, images, 0) == 0, "out of memory");
        f = turned;
    }
    CHECK(!t->hwc[0] || turned, "out of memory");
    if (t->dtype == CG_DT_F32) memcpy(dst, f, count * sizeof(float));
    else
        for (size_t i = 0; i < count; i++) h[i] = t->dtype == CG_DT_F16 ? cg_f32_to_f16(f[i]) : cg_f32_to_bf16(f[i]);
    free(turned);
}
static void emu_load(const cg_mtensor *t, const void *src, float *f)
{
    size_t count = (size_t)t->elems * images;
    const uint16_t *h = src;
    if (t->dtype == CG_DT_F32) memcpy(f, src, count * sizeof(float));
    else
        for (size_t i = 0; i < count; i++) f[i] = t->dtype == CG_DT_F16 ? cg_f16_to_f32(h[i]) : cg_bf16_to_f32(h[i]);
    /* a channels-last tensor: turned to C x H x W, as the runtime downloads it */
    CHECK(cg_manifest_relayout(t, f, images, 1) == 0, "out of memory");
}

/* `convgen check`'s isolated pass on the emulated kernels (runtime/formats/units.h,
 * runtime/cli/isolate.h): every unit holding a layer whose bound through the
 * network is above fp32's (a tf32, bf16 or fp16 layer, or one after it; with
 * every_layer, every unit: the groupings of fp32 networks too) run alone,
 * its tensors from outside filled with the reference's outputs (the batch norms
 * folded, as the kernels compute them) rounded as stored, those it writes poisoned,
 * each of its layers compared with the reference from the same rounded inputs
 * (cg_cpu_unit) against its own tolerance (cg_unit_tols), a 16-bit one held to 4u
 * too (as the whole run above). A correct 16-bit network passes alone. */
static void emulate_alone(void *so, const char *spec_path, const cg_spec *sp, const cg_manifest *m,
                          const cg_weights *fw, void *const *buf, int every_layer)
{
    int want[CG_MAX_LAYERS];
    if (!cg_alone_wanted(sp, want) && !every_layer) return;
    for (int i = 0; every_layer && i < sp->nlayers; i++) want[i] = 1;
    static cg_units p;
    cg_err e = {""};
    if (cg_units_plan(sp, m, &p, &e)) {
        CHECK(0, "%s: units: %s", spec_path, e.msg);
        return;
    }
    double tol[CG_MAX_LAYERS];
    cg_unit_tols(sp, p.unit, tol);
    /* the reference through the network, batch norms folded: what a unit reads */
    float *act[CG_MAX_LAYERS] = {0}, *got[CG_MAX_LAYERS] = {0}, *ref[CG_MAX_LAYERS] = {0};
    float *ext[CG_MAX_LAYERS + 1] = {0};
    size_t img = (size_t)sp->C * sp->H * sp->W;
    for (int i = 0; i < sp->nlayers; i++) {
        size_t count = (size_t)cg_layer_out_elems(&sp->layers[i]) * images;
        act[i] = malloc(count * sizeof(float)), got[i] = malloc(count * sizeof(float));
        ref[i] = malloc(count * sizeof(float)), ext[i + 1] = malloc(count * sizeof(float));
    }
    ext[0] = malloc(img * images * sizeof(float));
    float *probs = malloc((size_t)cg_layer_out_elems(&sp->layers[sp->nlayers - 1]) * images * sizeof(float));
    int pred[MAX_IMAGES];
    const unsigned char *px = buf[m->input];
    int rc = cg_cpu_forward(sp, fw, px, images, act, probs, pred, NULL, &e);
    CHECK(rc == 0, "%s: CPU forward, folded: %s", spec_path, e.msg);
    cg_cpu_input(sp, px, images, ext[0]);
    cg_units_round(p.dtype[0], ext[0], ext[0], img * images);
    for (int i = 0; i < sp->nlayers; i++)
        cg_units_round(p.dtype[i + 1], act[i], ext[i + 1], (size_t)cg_layer_out_elems(&sp->layers[i]) * images);
    for (int u = 0; u < p.nunits && !rc; u++) {
        int any = 0;
        for (int i = 0; i < sp->nlayers; i++) any |= p.unit[i] == u && want[i] && p.kept[i];
        if (!any) continue;
        /* its tensors: those written poisoned, those read from outside filled */
        int writes[CG_MAX_TENSORS] = {0};
        for (int k = 0; k < cg_manifest_layer_kernels(m); k++) {
            if (p.kernel_unit[k] != u || !cg_manifest_feeds(&m->k[k], 1)) continue;
            for (int j = 0; j < m->k[k].nin; j++) {
                int t = m->k[k].in[j], from = -2;
                if (writes[t] || t == m->input) continue;
                for (int i = 0; i < sp->nlayers; i++)
                    if (p.kept[i] && m->l[i].out == t) from = p.holder[i];
                for (int q = 0; q < m->nkernels; q++)
                    if (!strcmp(m->k[q].tpl, "input_u8") && m->k[q].out == t) from = -1;
                CHECK(from > -2, "%s: unit %d reads tensor %s, which the reference does not hold", spec_path, u,
                      m->t[t].name);
                if (from > -2) emu_store(&m->t[t], ext[from + 1], buf[t]);
            }
            for (int j = 0; j < m->k[k].nout; j++) {
                int t = m->k[k].outs[j];
                writes[t] = 1;
                t = cg_manifest_root(m, t); /* a view (a concat's slice): its parent's images poisoned */
                size_t bytes = (size_t)m->t[t].elems * images * cg_dtype_size(m->t[t].dtype);
                if (m->t[t].dtype == CG_DT_F32)
                    for (size_t q = 0; q < bytes / 4; q++) ((float *)buf[t])[q] = NAN;
                else
                    memset(buf[t], 0xff, bytes);
            }
        }
        /* (a unit reads its input as floats: of a first layer's twins, the one reading them) */
        for (int k = 0; k < cg_manifest_layer_kernels(m); k++)
            if (p.kernel_unit[k] == u && cg_manifest_feeds(&m->k[k], 1) && !emu_run_kernel(so, spec_path, sp, m, fw, k, buf))
                rc = -1;
        if (!rc && cg_cpu_unit(sp, fw, &p, u, images, (const float *const *)ext, ref, &e)) {
            CHECK(0, "%s: unit %d's reference: %s", spec_path, u, e.msg);
            rc = -1;
        }
        for (int i = 0; i < sp->nlayers && !rc; i++) {
            if (p.unit[i] != u || !p.kept[i]) continue;
            const cg_layer *l = &sp->layers[i];
            size_t count = (size_t)cg_layer_out_elems(l) * images;
            const int t = m->l[i].out, r = cg_manifest_root(m, t);
            if (r != t) {
                /* a view: each image's slice of its parent, gathered, then widened */
                void *slice = malloc((size_t)m->t[t].elems * images * cg_dtype_size(m->t[t].dtype));
                CHECK(slice != NULL, "out of memory");
                if (!slice) break;
                cg_manifest_gather(m, t, buf[r], images, slice);
                emu_load(&m->t[t], slice, got[i]);
                free(slice);
            } else {
                emu_load(&m->t[t], buf[t], got[i]);
            }
            double lim = tol[i];
            if (l->precision == CG_PREC_BF16 || l->precision == CG_PREC_FP16) {
                double u4 = 4.0 * (l->precision == CG_PREC_BF16 ? 1.0 / 256 : 1.0 / 2048);
                if (lim > u4) lim = u4;
            }
            cg_harness_diff d;
            cg_harness_compare(got[i], ref[i], count, lim, &d);
            CHECK(d.ok, "%s: layer %s alone: %lld unwritten, relative L2 error %.3g (tolerance %.3g)", spec_path,
                  l->name, d.nonfinite, d.rel_l2, lim);
            printf("ok %s: layer %s alone: relative L2 error %.2g (tolerance %.2g)\n", spec_path, l->name, d.rel_l2, lim);
        }
    }
    for (int i = 0; i < sp->nlayers; i++) free(act[i]), free(got[i]), free(ref[i]), free(ext[i + 1]);
    free(ext[0]), free(probs);
}

/* The input_u8 kernels against cg_cpu_input: on the buffers as allocated, and where the
 * image size is not a multiple of 4 (or the plane size, with a mean and std) also with the
 * pixels 1 byte, then the output 1 element, off their alignment, as a chunk of a batch
 * that starts at an odd image has them: those take the scalar path (a vector access there
 * traps). The outputs are poisoned first. */
static void emu_check_input(void *so, const char *spec_path, const cg_spec *sp, const cg_manifest *m,
                            const cg_weights *fw, void *const *buf)
{
    for (int k = 0; k < m->nkernels; k++) {
        if (strcmp(m->k[k].tpl, "input_u8")) continue;
        int t = m->k[k].outs[0];
        size_t count = (size_t)m->t[t].elems * images, es = cg_dtype_size(m->t[t].dtype);
        int flat = m->t[t].elems % 4 || (sp->norm && (sp->H * sp->W) % 4);
        /* one rounding of the exact value: 2^-24 in float, 2^-9 (bf16) in 16 bits */
        double tol = m->t[t].dtype == CG_DT_F32 ? 1e-6 : 4e-3;
        float *want = malloc(count * sizeof(float)), *got = malloc(count * sizeof(float));
        unsigned char *pin = malloc(count + 1), *pout = malloc((count + 1) * es);
        if (!want || !got || !pin || !pout) {
            CHECK(0, "%s: no memory", spec_path);
            free(want), free(got), free(pin), free(pout);
            return;
        }
        cg_cpu_input(sp, buf[m->input], images, want);
        static const char *const how[] = {"", " (pixels off their alignment)", " (output off its alignment)"};
        for (int off = 0; off <= 2 * flat; off++) {
            void *b[CG_MAX_TENSORS];
            memcpy(b, buf, sizeof b);
            b[m->input] = pin + (off == 1);
            b[t] = pout + (off == 2) * es;
            memcpy(b[m->input], buf[m->input], count);
            memset(pout, 0xff, (count + 1) * es); /* NaN in every dtype */
            emu_run_kernel(so, spec_path, sp, m, fw, k, b);
            emu_load(&m->t[t], b[t], got);
            cg_harness_diff d;
            cg_harness_compare(got, want, count, tol, &d);
            CHECK(d.ok, "%s: %s%s: %lld unwritten, relative L2 error %.3g (tolerance %.3g)", spec_path, m->k[k].name,
                  how[off], d.nonfinite, d.rel_l2, tol);
            if (d.ok)
                printf("ok %s: %s%s: relative L2 error %.2g against the double conversion\n", spec_path, m->k[k].name,
                       how[off], d.rel_l2);
        }
        free(want), free(got), free(pin), free(pout);
    }
}

static void emulate_one(const char *spec_path, const char *dir, int batch)
{
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    cg_err e = {""};
    cg_target tg;
    cg_target_default(&tg);
    if (strstr(spec_path, "-tc.yaml") || strstr(spec_path, "-tf32.yaml") || strstr(spec_path, "-bf16.yaml") ||
        strstr(spec_path, "-fp16.yaml"))
        tg.cc = 80;
    if (strstr(spec_path, "-wg.yaml")) cg_aot_target((int[]){90}, 1, &tg);
    tg.batch = batch;
    if (cg_spec_load(spec_path, &s, &e) || cg_generate_for(&s, "test", &tg, &o, &e) ||
        cg_manifest_parse(o.manifest, o.manifest_len, spec_path, &m, &e)) {
        CHECK(0, "%s: %s", spec_path, e.msg);
        return;
    }
    /* w as the spec's file holds them (the CPU reference runs its batch norms
     * from them), fw folded as the runtime loads them for the kernels */
    cg_weights w, fw;
    if (cg_weights_for_spec(&s, &w, &e) || cg_weights_fold_bn(&s, &w, &fw, &e)) {
        CHECK(0, "%s: weights: %s", spec_path, e.msg);
        cg_gen_free(&o);
        return;
    }
    /* every tensor on the host, poisoned; random pixels */
    void *buf[CG_MAX_TENSORS] = {0};
    for (int i = 0; i < m.ntensors; i++) {
        size_t bytes = (size_t)m.t[i].elems * images * cg_dtype_size(m.t[i].dtype);
        if (m.t[i].view) {
            /* a view (view=): its first element in its parent's, which is declared before it */
            buf[i] = (unsigned char *)buf[m.t[i].parent] + (size_t)m.t[i].view_off * cg_dtype_size(m.t[i].dtype);
            continue;
        }
        buf[i] = malloc(bytes);
        if (m.t[i].dtype == CG_DT_F32)
            for (size_t j = 0; j < bytes / 4; j++) ((float *)buf[i])[j] = NAN;
        else
            memset(buf[i], 0xff, bytes);
    }
    unsigned char *px = buf[m.input];
    unsigned r = 4242;
    for (long long j = 0; j < m.t[m.input].elems * images; j++) px[j] = (unsigned char)((r = r * 1103515245u + 12345u) >> 24);
    /* compile the kernels to objects first: those of a source compiled before (an object is
     * kept under the hash of its source less the header, whose comment lines name the spec)
     * take its object again; the others in two units of several kernels each (group_units),
     * two g++ at a time, as a fat binary's module joins a network's kernels: a g++ costs
     * about 0.1 s of CPU before its first kernel (the precompiled shim, the assembler).
     * The kernels of a unit that does not compile are compiled one by one, each to an
     * object of its own, kept for later specs, and a kernel that fails alone is named. The
     * spec's objects are then linked into one library. */
    int ok_all = 1;
    /* each spec's library in a directory of its own: a path once loaded is not loaded again */
    static int serial;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/%d", dir, serial++);
    CHECK(mkdir(sub, 0700) == 0, "%s: mkdir %s", spec_path, sub);
    int built[CG_MAN_KERNELS] = {0};
    static char obj[CG_MAN_KERNELS][1024];
    const cg_gen_kernel *gks[CG_MAN_KERNELS];
    char shim_path[1024];
    snprintf(shim_path, sizeof shim_path, "%s/shim.h", dir);
    int unit_of[CG_MAN_KERNELS]; /* -1: cached or no source; else 0 or 1 */
    int fresh = 0;
    for (int k = 0; k < m.nkernels; k++) {
        gks[k] = NULL;
        unit_of[k] = -1;
        for (int j = 0; j < o.nkernels; j++)
            if (!strcmp(o.k[j].kernel, m.k[k].name)) gks[k] = &o.k[j];
        if (!gks[k]) continue;
        snprintf(obj[k], sizeof obj[k], "%s/obj/%s-%016llx.o", dir, m.k[k].name, body_hash(gks[k]->source));
        if (access(obj[k], F_OK) == 0) {
            built[k] = 1;
            continue;
        }
        int twice = 0; /* (two layers of one kernel, e.g. two adds of one shape: compiled once) */
        for (int j = 0; j < k && !twice; j++)
            if (gks[j] && !strcmp(m.k[j].name, m.k[k].name)) twice = 1;
        if (!twice) unit_of[k] = fresh++ % 2;
    }
    group_units(sub, shim_path, &m, gks, unit_of, fresh, built, obj);
    /* a kernel listed twice: its first listing's object */
    for (int k = 0; k < m.nkernels; k++)
        for (int j = 0; j < k && gks[k] && !built[k]; j++)
            if (gks[j] && !strcmp(m.k[j].name, m.k[k].name) && built[j]) {
                built[k] = 1;
                snprintf(obj[k], sizeof obj[k], "%s", obj[j]);
            }
    for (int k = 0; k < m.nkernels && ok_all; k++)
        if (!built[k]) {
            CHECK(0, "%s: kernel %s does not compile as C++", spec_path, m.k[k].name);
            unlink(obj[k]);
            ok_all = 0;
        }
    char so_path[1024];
    snprintf(so_path, sizeof so_path, "%s/kernels.so", sub);
    void *so = NULL;
    if (ok_all) {
        char *argv[CG_MAN_KERNELS + 8] = {"g++", "-shared", "-o", so_path};
        int na = 4;
        /* (the kernels of a unit, or two layers of one kernel, e.g. two adds of one shape,
         * list one object several times: once) */
        for (int k = 0; k < m.nkernels; k++) {
            int twice = 0;
            for (int j = 4; j < na && !twice; j++) twice = !strcmp(argv[j], obj[k]);
            if (!twice) argv[na++] = obj[k];
        }
        argv[na] = NULL;
        int linked = run_cmd(argv) == 0;
        so = linked ? dlopen(so_path, RTLD_NOW | RTLD_LOCAL) : NULL;
        CHECK(so, "%s: the kernels do not link into one library: %s", spec_path, linked ? dlerror() : "g++ failed");
        ok_all = so != NULL;
    }
    if (ok_all) emu_check_input(so, spec_path, &s, &m, &fw, buf);
    /* the kernels the pixels run (a first layer's twin reading them, planner.pixel_twin:
     * not input_u8 nor the twin reading its output) */
    for (int k = 0; k < cg_manifest_layer_kernels(&m) && ok_all; k++)
        if (cg_manifest_feeds(&m.k[k], 0)) ok_all = emu_run_kernel(so, spec_path, &s, &m, &fw, k, buf);
    /* every layer against the CPU reference */
    float *lo[CG_MAX_LAYERS] = {0};
    for (int i = 0; i < s.nlayers; i++) lo[i] = malloc((size_t)cg_layer_out_elems(&s.layers[i]) * images * sizeof(float));
    size_t classes = (size_t)cg_layer_out_elems(&s.layers[s.nlayers - 1]);
    float *probs = malloc(classes * images * sizeof(float));
    int pred[MAX_IMAGES];
    int rc = cg_cpu_forward(&s, &w, px, images, lo, probs, pred, NULL, &e);
    CHECK(rc == 0, "%s: CPU forward: %s", spec_path, e.msg);
    /* a conv a batchnorm folds into writes conv + batchnorm: against the
     * reference run with folded weights (every other layer against the unfolded one) */
    float *lf[CG_MAX_LAYERS] = {0};
    int folds = 0;
    for (int i = 0; i + 1 < s.nlayers; i++)
        if (cg_bn_folds(&s, i + 1)) lf[i] = malloc((size_t)cg_layer_out_elems(&s.layers[i]) * images * sizeof(float)), folds = 1;
    if (!rc && folds) {
        rc = cg_cpu_forward(&s, &fw, px, images, lf, probs, pred, NULL, &e);
        CHECK(rc == 0, "%s: CPU forward, folded: %s", spec_path, e.msg);
    }
    /* 1e-5 (MAX_REL_L2) for fp32 layers; precision tf32 widens it by the layer's reduction
     * and the layers before it (cg_spec_tols: the tolerance convgen check applies) */
    double tol[CG_MAX_LAYERS];
    cg_spec_tols(&s, tol);
    /* (another image count than the default: said on every line; the layers alone and the
     * whole-network kernel are the default count's) */
    char label[32] = "";
    if (images != IMAGES_DEFAULT) snprintf(label, sizeof label, " (%d image%s)", images, images == 1 ? "" : "s");
    if (ok_all && !rc) compare_layers(spec_path, label, &s, &m, &o, buf, lo, lf, tol);
    if (images != IMAGES_DEFAULT) ok_all = 0;
    /* each unit alone where the network's layers ask for it (not fp32); every unit of
     * the large-batch kernels, and of layers-splitk and layers-tail at their buckets (a
     * split reduction's partials and pool kernel, the tail's three outputs), so that
     * every grouping is run alone once (the other small-batch specs cost seconds each) */
    int every = !batch || strstr(spec_path, "layers-splitk.yaml") || strstr(spec_path, "layers-tail.yaml");
    if (ok_all && !rc) emulate_alone(so, spec_path, &s, &m, &fw, buf, every);
    /* the whole-network kernel, where the planner made one: every tensor poisoned
     * again, its blocks run all at once (as many as the emulation's threads allow,
     * at least two where its block does), each layer and the predictions compared */
    int wk = cg_manifest_whole(&m);
    if (ok_all && !rc && wk >= 0) {
        snprintf(trap_what, sizeof trap_what, "%s: kernel %s", spec_path, m.k[wk].name);
        if (emulate_whole(so, spec_path, &m, &fw, buf))
            compare_layers(spec_path, " (whole-network kernel)", &s, &m, &o, buf, lo, lf, tol);
    }
    if (so) dlclose(so);
    for (int i = 0; i < s.nlayers; i++) free(lo[i]), free(lf[i]);
    cg_weights_free(&fw);
    free(probs);
    for (int i = 0; i < m.ntensors; i++)
        if (!m.t[i].view) free(buf[i]);
    cg_weights_free(&w);
    cg_gen_free(&o);
}

/* The scheduler itself (fib_run): a block of 64 threads that meets at its barrier and at
 * its warps' shuffles runs to the end with shared memory and shuffles as on a GPU (each
 * thread the sum of its warp's mirrored inputs); a block whose threads wait at barriers not
 * all of them reach (half a warp at __syncthreads, the other half at a shuffle) ends the
 * launch with -1 instead of hanging. */
/* Source src built against the shim into DIR/STEM.so and opened; NULL where it fails. */
static void *build_so(const char *dir, const char *stem, const char *src)
{
    char cu[1100], obj[1100], so_path[1100], shim_path[1100];
    snprintf(cu, sizeof cu, "%s/%s.cu", dir, stem);
    snprintf(obj, sizeof obj, "%s/%s.o", dir, stem);
    snprintf(so_path, sizeof so_path, "%s/%s.so", dir, stem);
    snprintf(shim_path, sizeof shim_path, "%s/shim.h", dir);
    char *cc[] = {"g++", EMU_CXXFLAGS, "-c", "-include", shim_path, "-x", "c++", cu, "-o", obj, NULL};
    char *ld[] = {"g++", "-shared", "-o", so_path, obj, NULL};
    int built = write_text(cu, src, strlen(src)) == 0 && run_cmd(cc) == 0 && run_cmd(ld) == 0;
    return built ? dlopen(so_path, RTLD_NOW | RTLD_LOCAL) : NULL;
}

static void scheduler_self_test(const char *dir)
{
    static const char src[] =
        "extern \"C\" __global__ void emu_meet(const float* in, float* out, const float* w, const float* b, int n) {\n"
        "  __shared__ float s[64]; const unsigned t = threadIdx.x;\n"
        "  s[t] = in[t]; __syncthreads(); float v = s[63 - t];\n"
        "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
        "  out[t] = v; (void)w; (void)b; (void)n; }\n"
        "extern \"C\" __global__ void emu_stuck(const float* in, float* out, const float* w, const float* b, int n) {\n"
        "  if (threadIdx.x < 16) __syncthreads();\n"
        "  else out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, in[threadIdx.x], 1);\n"
        "  (void)w; (void)b; (void)n; }\n";
    void *so = build_so(dir, "self", src);
    CHECK(so != NULL, "the scheduler's self-test kernels do not build");
    if (!so) return;
    float in[64], out[64];
    for (int t = 0; t < 64; t++) in[t] = (float)t, out[t] = NAN;
    void *a[4] = {in, out, NULL, NULL};
    emu_any meet = (emu_any)dlsym(so, "emu_meet"), stuck = (emu_any)dlsym(so, "emu_stuck");
    int rc = meet ? emu_launch(so, meet, 1, 1, 1, 64, a, 4, 1, 0) : -1;
    int same = rc == 0;
    for (int t = 0; t < 64 && same; t++) {
        /* thread t's warp (w) holds s[63 - t] for its 32 threads: 63 - 32w - 0 .. 63 - 32w - 31 */
        int w = t / 32;
        float want = 0;
        for (int j = 0; j < 32; j++) want += (float)(63 - 32 * w - j);
        same = out[t] == want;
    }
    CHECK(same, "the scheduler's barrier and shuffles: launch %d, thread 0 has %g", rc, (double)out[0]);
    fib_quiet = 1;
    rc = stuck ? emu_launch(so, stuck, 1, 1, 1, 32, a, 4, 1, 0) : 0;
    fib_quiet = 0;
    CHECK(rc == -1, "threads waiting at barriers not all of them reach: launch %d, not -1", rc);
    dlclose(so);
}

/* The emulation's bulk tensor copy (common.tma_helpers() under CG_EMULATION, the map from
 * emu_map) copying the boxes of tests/tma_box.h from a channels-last tensor (bf16 bits), as
 * tests/test_nvrtc.c copies them on an H200: each element where the 128-byte swizzle puts
 * it, zeros outside. */
static void tma_self_test(const char *dir)
{
    static char code[12288], src[16384];
    if (tma_code(code, sizeof code, 1)) return;
    /* the box's start: at, one row of tma_starts */
    snprintf(src, sizeof src,
             "%s"
             "extern \"C\" __global__ void emu_box(const __grid_constant__ cg_tmap tm, unsigned short* out, "
             "const int* at, int n) {\n"
             "  __shared__ __align__(1024) unsigned short s[64 * 8 * 4];\n"
             "  __shared__ __align__(8) unsigned long long bar;\n"
             "  (void)n;\n"
             "  if (threadIdx.x == 0) { cg_mbar_init(&bar, 1); cg_mbar_fence_init(); }\n"
             "  __syncthreads();\n"
             "  if (threadIdx.x == 0) {\n"
             "    cg_mbar_expect_tx(&bar, 4096);\n"
             "    cg_tma_load_4d(s, CG_TMAP(tm), 0, at[0], at[1], at[2], &bar);\n"
             "  }\n"
             "  __syncthreads();\n"
             "  cg_mbar_wait(&bar, 0);\n"
             "  for (int i = threadIdx.x; i < 64 * 8 * 4; i += blockDim.x) out[i] = s[i];\n"
             "}\n",
             code);
    void *so = build_so(dir, "tma", src);
    CHECK(so != NULL, "the emulated bulk tensor copy's kernel does not build");
    if (!so) return;
    static unsigned short t[TMA_N * TMA_H * TMA_W * TMA_C], got[TMA_BOX];
    for (int i = 0; i < TMA_N * TMA_H * TMA_W * TMA_C; i++) t[i] = (unsigned short)(i % 65521 + 1);
    cg_mmap mp = {CG_ARG_IN, 4, {TMA_C, TMA_W, TMA_H, TMA_N}, {64, 8, 4, 1}, 128};
    struct cg_tmap_emu map;
    CHECK(emu_map(&mp, t, 2, &map) == 0 && map.strides[0] == 2 && map.strides[1] == 128 &&
              map.strides[3] == 128 * TMA_W * TMA_H,
          "the emulation's map: strides %lld, %lld, %lld", map.strides[0], map.strides[1], map.strides[3]);
    emu_any fn = (emu_any)dlsym(so, "emu_box");
    CHECK(fn != NULL, "emu_box: no symbol");
    for (int k = 0; k < 5 && fn; k++) {
        for (int i = 0; i < TMA_BOX; i++) got[i] = 0xffff;
        void *a[3] = {&map, got, (void *)tma_starts[k]};
        int rc = emu_launch(so, fn, 1, 1, 1, 128, a, 3, 1, 0);
        int wrong = tma_box_wrong(got, t, tma_starts[k][0], tma_starts[k][1], tma_starts[k][2]);
        CHECK(rc == 0 && wrong == 0, "emulated box at (0, %d, %d, %d): launch %d, %d of %d elements wrong",
              tma_starts[k][0], tma_starts[k][1], tma_starts[k][2], rc, wrong, TMA_BOX);
    }
    dlclose(so);
}

int main(void)
{
    signal(SIGILL, on_trap);
    char *probe[] = {"sh", "-c", "command -v g++ >/dev/null", NULL};
    int have = run_cmd(probe) == 0;
    if (!have) {
        printf("skip: emulated kernels: no g++\n");
        CHECK(1, "skipped");
        return cg_test_done("emulate");
    }
    char dir[] = "/tmp/cg_test_emulate_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char shim_path[1024];
    snprintf(shim_path, sizeof shim_path, "%s/shim.h", dir);
    CHECK(write_text(shim_path, shim, strlen(shim)) == 0, "shim");
    /* the shim precompiled (g++ takes shim.h.gch for -include shim.h), and a directory for the kernels' objects */
    char gch_path[1100], obj_dir[1100];
    snprintf(gch_path, sizeof gch_path, "%s.gch", shim_path);
    snprintf(obj_dir, sizeof obj_dir, "%s/obj", dir);
    char *pch[] = {"g++", EMU_CXXFLAGS, "-x", "c++-header", shim_path, "-o", gch_path, NULL};
    CHECK(run_cmd(pch) == 0 && mkdir(obj_dir, 0700) == 0, "the shim precompiled");
    CHECK(fib_init() == 0, "stacks for the emulated threads");
    scheduler_self_test(dir);
    tma_self_test(dir);
    const char *one = getenv("CG_EMULATE_SPEC");
    const char *bucket = getenv("CG_EMULATE_BATCH");
    const char *count = getenv("CG_EMULATE_IMAGES");
    if (one && *one)
        emulate_images(one, dir, bucket ? cg_batch_bucket(atoll(bucket)) : 0, count ? atoi(count) : IMAGES_DEFAULT);
    else {
        /* example-conv, then every layer network of tests/gpu/ (a new op's spec
         * there is emulated without a change here); layers-small-batch at bucket
         * 1: direct's map splits, igemm's small tiles, gemv, the network's tail
         * (fc3, softmax, prediction) in one kernel (bucket 8, gemv's 8
         * images a block of which 3 are there, and the large-batch choice for
         * C > 16: CG_EMULATE_BATCH=8); layers-splitk* at bucket 1 too: the split
         * reductions the planner chooses there; layers-splitk8* at bucket 8: the
         * split of the default tiles where the large-batch choice has too few blocks;
         * layers-tail at bucket 8: the tail of a network ending in an fc (fc and
         * prediction). The others at the large batch: a softmax ending the network
         * writes the predictions too */
        emulate("specs/example-conv.yaml", dir, 0);
        glob_t g;
        int grc = glob("tests/gpu/layers-*.yaml", 0, NULL, &g);
        CHECK(grc == 0 && g.gl_pathc >= 20, "tests/gpu/layers-*.yaml: %zu specs", grc ? 0 : g.gl_pathc);
        for (size_t i = 0; !grc && i < g.gl_pathc; i++)
            emulate(g.gl_pathv[i], dir, strstr(g.gl_pathv[i], "splitk8") || strstr(g.gl_pathv[i], "-tail") ? 8
                                        : strstr(g.gl_pathv[i], "small-batch") || strstr(g.gl_pathv[i], "splitk") ? 1 : 0);
        if (!grc) globfree(&g);
        /* the fc layers run as 1x1 convolutions (fc_tc, fc_wg), whose GEMM columns are the
         * images, over other image counts too: 1, 7 and 64 images of the large-batch kernels
         * (one column tile, mostly past the batch), and 300 (three tiles of 128, the last
         * partial) of the kernels generated for them (bucket 1,024: the split reductions
         * the planner gives narrow layers there) */
        static const char *const fc_specs[] = {"tests/gpu/layers-fc-tc.yaml", "tests/gpu/layers-fc-wg.yaml",
                                               "tests/gpu/layers-fc-bf16-wg.yaml"};
        for (size_t i = 0; i < sizeof fc_specs / sizeof *fc_specs; i++) {
            static const int counts[] = {1, 7, 64};
            for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) emulate_images(fc_specs[i], dir, 0, counts[j]);
            emulate_images(fc_specs[i], dir, cg_batch_bucket(300), 300);
        }
        /* conv2d_fft's product over 70 images: two whole 32-image tiles and a partial one, so
         * that every thread of a tile owns images that exist (3 images leave most idle) */
        emulate_images("tests/gpu/layers-fft.yaml", dir, 0, 70);
        /* the whole-network kernel (templates/ops/network.lua), which the planner adds at
         * buckets of up to 8 images: layers-graph at bucket 1 (a residual add fused into a
         * conv, a standalone add of three tensors, a concat; three images in groups of
         * one), ece408-2018sp at bucket 8 (pooled conv from the pixels, a deep conv, an fc
         * row split over chunks, softmax and the prediction) */
        emulate("tests/gpu/layers-graph.yaml", dir, 1);
        emulate("specs/ece408-2018sp.yaml", dir, 8);
        /* fc reductions split over a cluster's blocks: fc_vec's at the large batch (the
         * glob above), fc_gemv's at bucket 8 (their ranks run last first, the templates'
         * CG_EMULATION reduction adding what the others left) */
        emulate("tests/gpu/layers-fc-split-wg.yaml", dir, 8);
        /* FP32 layers' small-batch choices on sm_90a: direct's tile from two images on
         * (the large batch's block, its map groups split over blocks) and planes with a
         * fused pool at bucket 8, planes for a 3-channel layer at bucket 64 */
        emulate("tests/gpu/layers-small-tiles-wg.yaml", dir, 8);
        emulate("tests/gpu/layers-small-tiles-wg.yaml", dir, 64);
        /* winograd in small tiles where igemm would split (planner.small_winograd): a pooled
         * 3x3 layer in 8x16 tiles at bucket 1; at bucket 8 layers-splitk's padded 3x3 layers in
         * 16x16 and 8x16 tiles beside the splits of its 1x1 and 2x2 layers */
        emulate("tests/gpu/layers-small-tiles-wg.yaml", dir, 1);
        emulate("tests/gpu/layers-splitk.yaml", dir, 8);
        /* concats whose branches write into their slices of the concat's output: the
         * bench's Inception block (three igemm branches, no concat kernel), and
         * layers-concat at bucket 1 (the whole-network kernel's conv phases writing
         * slices, its concat phases copying only the parts not written in place) */
        emulate("bench/specs/zoo-inception.yaml", dir, 0);
        emulate("tests/gpu/layers-concat.yaml", dir, 1);
        /* direct's channel loop at one image (its one-image tile, the map groups split over
         * blocks; a grouped layer in the loop) and the whole-network kernel over the same layers */
        emulate("tests/gpu/layers-direct-loop.yaml", dir, 1);
    }
    char *rm[] = {"rm", "-rf", dir, NULL};
    run_cmd(rm);
    return cg_test_done("emulate");
}
