#!/usr/bin/env python3
"""tma_conv_probe.py — can a 16-bit convolution feed Hopper's tensor cores through the bulk
tensor copy engine (TMA) fast enough for issue 31's 60 % of the BF16 peak?

A stand-alone probe, not a convgen template: for each layer shape given it writes one CUDA
file per tile shape, builds it for sm_90a, checks sampled outputs against a float64 reference
computed on the host from the same bf16 operands (outputs poisoned with NaN first), and times
it at the batch given (median of CUDA events after warm-up, L2 flushed before each run).
PyTorch's cuDNN (bf16, channels-last; conv, bias, relu) is timed in the same process run.

Why channels-last. convgen's tensors are NCHW. There a tap's horizontal shift moves the box
start in the innermost dimension by one pixel (2 bytes), and on an H200 (driver 580.159.04)
every such copy, inside the image or not, stopped the kernel with "illegal instruction"
(bench/scripts/tma_box_starts.cu: dims (w, c, h, n) or (w, h, c, n), swizzle none to 128B;
outer-dimension starts -1 and past the end were copied right, with zeros outside; innermost
starts on 16 bytes too, inside the tensor or not; any other innermost start faulted). With channels innermost, (c, w, h, n),
the taps move only outer coordinates, which may lie outside the image: TMA writes zeros there,
so padding costs nothing, and the box lands as wgmma's canonical K-major operand.

The kernel: D[pixels x maps] = sum over taps and 64-channel chunks of X_tap[pixels x 64] .
W_tap[64 x maps]^T. X_tap is the box (64, BW, BH, BNI) of the NHWC input started at
(c0, x0+kx-pad, y0+ky-pad, n0), 128-byte rows, 128-byte swizzle; W_tap is a (64, BNM) box of
the weights [tap][map][channel]. Both come into a ring of ST stages on mbarriers; one thread
of a producer warpgroup (which gives its registers to the others) issues the copies; NC
consumer warpgroups each own 64*MW pixels and issue m64nBNMk16 wgmma from the stage, then
release it. Persistent grid: the producer runs ahead into the next tile while the consumers
store the last. Tags with ping_: two consumer warpgroups take the block's tiles in turn, one
storing while the other multiplies. Epilogue: bias, relu, pairs of bf16 maps stored into the
NHWC output. Figures: bench/RESULTS.md, "A TMA-fed wgmma convolution on channels-last bf16".

With --nchw the input comes NCHW, as convgen holds it, through a transpose kernel (to_nhwc,
timed apart and summed with the conv), and the epilogue stores NCHW: what a template costs that
changes no other layer (on an H200: vgg-same conv2_1 0.831 ms, conv3_2 1.054, the one-element
transpose 1.4 TB/s; bench/tma-template-2026-12-02/call2-probe-nchw.log; templates/conv2d/tma.lua
is this form).

Usage (device machine): python3 bench/scripts/tma_conv_probe.py [--batch 10000] [--out DIR]
  [--layers SUBSTR,...] [--variants SUBSTR,...] [--no-torch] [--ncu] [--nchw]
"""
import argparse, os, subprocess, sys, concurrent.futures as cf

PEAK_BF16 = 1071e12   # H200 dense BF16 at 1980 MHz (bench/RESULTS.md)

# name, C, H, W, M, K, pad  (stride 1; C a multiple of 64 here: TMA would zero-fill a partial chunk)
LAYERS = [
    ("vgg-same conv1_2", 64, 32, 32, 64, 3, 1),
    ("vgg-same conv2_1", 64, 16, 16, 128, 3, 1),
    ("vgg-same conv2_2", 128, 16, 16, 128, 3, 1),
    ("vgg-same conv3_1", 128, 8, 8, 256, 3, 1),
    ("vgg-same conv3_2", 256, 8, 8, 256, 3, 1),
    ("deep512 conv2", 128, 16, 16, 256, 3, 1),
    ("deep512 conv3", 256, 8, 8, 512, 3, 1),
    ("wide3x3 conv3", 64, 16, 16, 128, 3, 0),
    # zoo-mlp's fully connected layers as 1x1 convolutions of 1x1 images: a matrix product whose rows
    # are the images; 784 channels end in a chunk TMA fills out with zeros
    ("mlp fc1", 784, 1, 1, 2048, 1, 0),
    ("mlp fc2", 2048, 1, 1, 2048, 1, 0),
    ("mlp fc3", 2048, 1, 1, 512, 1, 0),
]

SRC = r'''
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(r_)); exit(2); } } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_; cuGetErrorString(r_, &s_); fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); exit(2); } } while (0)

constexpr int NIMG = @NIMG@, C = @C@, H = @H@, W = @W@, M = @M@, KS = @K@, PAD = @PAD@;
// NCHW 1: the input comes NCHW (as convgen holds it) through to_nhwc, and the output is stored NCHW
constexpr int NCHW = @NCHW@;
constexpr int OH = H + 2 * PAD - KS + 1, OW = W + 2 * PAD - KS + 1;
// PING 1: two consumer warpgroups, each on its own tile of PIX pixels, taking the CTA's tiles in turn, so that one
// stores while the other multiplies; PING 0: NC warpgroups share each tile, 64*MW pixels each
constexpr int PING = @PING@, BNM = @BNM@, MW = @MW@, BW = @BW@, BH = @BH@, BNI = @BNI@, PIX = BW * BH * BNI;
constexpr int NC = PING ? 2 : PIX / (64 * MW), WPIX = PING ? PIX : 64 * MW;   // warpgroups; pixels a warpgroup owns
constexpr int KC = 64, ST = @ST@, CCH = (C + KC - 1) / KC, ITERS = KS * KS * CCH;
constexpr int A_BYTES = PIX * KC * 2, B_BYTES = BNM * KC * 2, STAGE = A_BYTES + B_BYTES;
constexpr int MT = M / BNM, XT = (OW + BW - 1) / BW, YT = (OH + BH - 1) / BH, NT = (NIMG + BNI - 1) / BNI;
constexpr long long TILES = (long long)MT * XT * YT * NT;
constexpr int THREADS = NC * 128 + 128;   // a producer warpgroup (setmaxnreg works by warpgroups)
static_assert(M % BNM == 0 && BNM % 8 == 0 && BNM <= 256, "wgmma N");
static_assert(PIX % WPIX == 0 && WPIX == 64 * MW, "whole m64 blocks");

__device__ __forceinline__ uint32_t sa(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mb_wait(uint64_t *b, int parity)
{
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n"
                 :: "r"(sa(b)), "r"(parity) : "memory");
}
// K-major operand, 128-byte rows, 128-byte swizzle: 8-row groups 1024 bytes apart
__device__ __forceinline__ uint64_t desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

__global__ void __launch_bounds__(THREADS, 1)
conv(const __grid_constant__ CUtensorMap tX, const __grid_constant__ CUtensorMap tW, const float *__restrict__ bias,
     __nv_bfloat16 *__restrict__ out)
{
    extern __shared__ unsigned char smraw[];
    unsigned char *sm = (unsigned char *)(((uintptr_t)smraw + 1023) & ~(uintptr_t)1023);
    __shared__ __align__(8) uint64_t full[ST], empty[ST];
    // PING: the CTA's tiles whose main loops have passed their last wait. A warpgroup starts a tile's waits
    // only after the other has passed the previous tile's: a wait more than one phase of a stage ahead
    // would see the parity of an old phase and pass at once (the first form of this probe hung so)
    __shared__ volatile long long turn;
    const int tid = threadIdx.x, wg = tid / 128;
    if (tid == 0) {
        turn = 0;
        for (int s = 0; s < ST; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(&empty[s])), "r"(PING ? 128 : NC * 128));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == NC) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 @RDEC@;");
        if (tid == NC * 128) {
            long long it = 0;
            for (long long t = blockIdx.x; t < TILES; t += gridDim.x) {
                int mt = (int)(t % MT); long long r = t / MT;
                int xt = (int)(r % XT); r /= XT; int yt = (int)(r % YT); int nt = (int)(r / YT);
                for (int i = 0; i < ITERS; i++, it++) {
                    int s = (int)(it % ST);
                    if (it >= ST) mb_wait(&empty[s], (int)((it / ST - 1) & 1));
                    uint32_t fb = sa(&full[s]);
                    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(fb), "r"(STAGE) : "memory");
                    int tap = i / CCH, cc = i % CCH, ky = tap / KS, kx = tap % KS;
                    uint32_t dx = sa(sm + s * STAGE), dw = dx + A_BYTES;
                    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                                 :: "r"(dx), "l"(&tX), "r"(cc * KC), "r"(xt * BW + kx - PAD), "r"(yt * BH + ky - PAD), "r"(nt * BNI), "r"(fb)
                                 : "memory");
                    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                                 :: "r"(dw), "l"(&tW), "r"(cc * KC), "r"(tap * M + mt * BNM), "r"(fb) : "memory");
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 @RINC@;");
        long long it = 0, nth = 0;   // stage sequence number; the CTA's tile count
        const int warp = (tid % 128) / 32, lane = tid % 32;
        for (long long t = blockIdx.x; t < TILES; t += gridDim.x, nth++) {
            if (PING && nth % 2 != wg) continue;
            if (PING) {
                it = nth * ITERS;
                while (turn < nth) __nanosleep(32);
            }
            int mt = (int)(t % MT); long long r = t / MT;
            int xt = (int)(r % XT); r /= XT; int yt = (int)(r % YT); int nt = (int)(r / YT);
            float d[MW][BNM / 2];
#pragma unroll
            for (int w = 0; w < MW; w++)
#pragma unroll
                for (int j = 0; j < BNM / 2; j++) d[w][j] = 0.f;
            for (int i = 0; i < ITERS; i++, it++) {
                int s = (int)(it % ST);
                mb_wait(&full[s], (int)((it / ST) & 1));
                uint32_t a0 = sa(sm + s * STAGE) + (PING ? 0 : wg * MW * 64 * 128), b0 = sa(sm + s * STAGE) + A_BYTES;
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int k = 0; k < KC / 16; k++) {
                    uint64_t db = desc(b0 + k * 32);
#pragma unroll
                    for (int w = 0; w < MW; w++) {
                        uint64_t da = desc(a0 + w * 64 * 128 + k * 32);
                        @WGMMA@
                    }
                }
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (i > 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&empty[(it - 1) % ST])) : "memory");
            }
            if (PING && tid % 128 == 0) turn = nth + 1;
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&empty[(it - 1) % ST])) : "memory");
            // d[w][j]: pixel row warp*16 + lane/4 + 8*((j/2)%2) of block w, map (j/4)*8 + (lane%4)*2 + j%2
#pragma unroll
            for (int w = 0; w < MW; w++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int p = (PING ? 0 : wg * WPIX) + w * 64 + warp * 16 + lane / 4 + 8 * h;
                    int x = xt * BW + p % BW, y = yt * BH + (p / BW) % BH, img = nt * BNI + p / (BW * BH);
                    if (NCHW && x < OW && y < OH && img < NIMG) {
                        // NCHW: the maps a plane apart; the 8 lanes of one lane%4 write 8 neighbouring pixels
                        __nv_bfloat16 *o = out + (((long long)img * M + mt * BNM + (lane % 4) * 2) * OH + y) * OW + x;
                        const float *bs = bias + mt * BNM + (lane % 4) * 2;
#pragma unroll
                        for (int j = 2 * h; j < BNM / 2; j += 4) {
                            float2 bv = *(const float2 *)(bs + (j / 4) * 8);
                            o[(long long)(j / 4) * 8 * OH * OW] = __float2bfloat16_rn(fmaxf(d[w][j] + bv.x, 0.f));
                            o[((long long)(j / 4) * 8 + 1) * OH * OW] = __float2bfloat16_rn(fmaxf(d[w][j + 1] + bv.y, 0.f));
                        }
                    } else if (x < OW && y < OH && img < NIMG) {
                        __nv_bfloat16 *o = out + (((long long)img * OH + y) * OW + x) * M + mt * BNM + (lane % 4) * 2;
                        const float *bs = bias + mt * BNM + (lane % 4) * 2;
#pragma unroll
                        for (int j = 2 * h; j < BNM / 2; j += 4) {
                            float2 bv = *(const float2 *)(bs + (j / 4) * 8);
                            *(__nv_bfloat162 *)(o + (j / 4) * 8) =
                                __floats2bfloat162_rn(fmaxf(d[w][j] + bv.x, 0.f), fmaxf(d[w][j + 1] + bv.y, 0.f));
                        }
                    }
                }
        }
    }
}

// NCHW -> NHWC for one image's 32-pixel by 64-channel tile a block (C a multiple of 64): loads along the
// pixels, stores along the channels, through shared memory
__global__ void to_nhwc(const __nv_bfloat16 *__restrict__ src, __nv_bfloat16 *__restrict__ dst)
{
    __shared__ __nv_bfloat16 t[64][33];
    const int HW = H * W, img = blockIdx.z, p0 = blockIdx.x * 32, c0 = blockIdx.y * 64;
    for (int i = threadIdx.x; i < 64 * 32; i += blockDim.x) {
        int c = i / 32, q = i % 32;
        t[c][q] = p0 + q < HW ? src[((long long)img * C + c0 + c) * HW + p0 + q] : __float2bfloat16(0.f);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 64 * 32; i += blockDim.x) {
        int q = i / 64, c = i % 64;
        if (p0 + q < HW) dst[((long long)img * HW + p0 + q) * C + c0 + c] = t[c][q];
    }
}

__global__ void fill(__nv_bfloat16 *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = __float2bfloat16((h & 0xFFFF) / 32768.f - 1.f);
    }
}
__global__ void count_nan(const __nv_bfloat16 *p, size_t n, unsigned long long *c)
{
    unsigned long long k = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) k += __hisnan(p[i]);
    if (k) atomicAdd(c, k);
}
__global__ void flush(float *p, size_t n) { for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] += 1.f; }

static uint32_t rng = 12345u;
static float frand() { rng = rng * 1664525u + 1013904223u; return ((rng >> 8) & 0xFFFF) / 32768.f - 1.f; }

int main()
{
    CK(cudaSetDevice(0));
    CU(cuInit(0));
    size_t nin = (size_t)NIMG * H * W * C, nw = (size_t)KS * KS * M * C, nout = (size_t)NIMG * OH * OW * M;
    std::vector<__nv_bfloat16> hin(nin), hw(nw);
    std::vector<float> hb(M);
    float ws = 1.f / sqrtf((float)C * KS * KS);
    for (size_t i = 0; i < nw; i++) hw[i] = __float2bfloat16(frand() * ws);   // [tap][m][c]
    for (int i = 0; i < M; i++) hb[i] = 0.1f * frand();
    __nv_bfloat16 *din, *dw, *dout; float *db, *dfl;
    CK(cudaMalloc(&din, nin * 2)); CK(cudaMalloc(&dw, nw * 2)); CK(cudaMalloc(&dout, nout * 2)); CK(cudaMalloc(&db, M * 4));
    size_t nfl = 64u << 20; CK(cudaMalloc(&dfl, nfl * 4)); CK(cudaMemset(dfl, 0, nfl * 4));
    __nv_bfloat16 *dnchw = nullptr;
    dim3 tg((H * W + 31) / 32, C / 64, NIMG);
    if (NCHW) {   // the input as convgen holds it, made channels-last by to_nhwc (timed apart below)
        CK(cudaMalloc(&dnchw, nin * 2));
        fill<<<2048, 256>>>(dnchw, nin, 777u);
        CK(cudaGetLastError());
        to_nhwc<<<tg, 256>>>(dnchw, din);
    } else fill<<<2048, 256>>>(din, nin, 777u);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hin.data(), din, nin * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dw, hw.data(), nw * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), M * 4, cudaMemcpyHostToDevice));
    CUtensorMap tx, tw;
    {
        cuuint64_t dims[4] = {C, W, H, NIMG};
        cuuint64_t str[3] = {(cuuint64_t)C * 2, (cuuint64_t)W * C * 2, (cuuint64_t)H * W * C * 2};
        cuuint32_t box[4] = {KC, BW, BH, BNI}, es[4] = {1, 1, 1, 1};
        CU(cuTensorMapEncodeTiled(&tx, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, din, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    }
    {
        cuuint64_t dims[2] = {C, (cuuint64_t)M * KS * KS}, str[1] = {(cuuint64_t)C * 2};
        cuuint32_t box[2] = {KC, BNM}, es[2] = {1, 1};
        CU(cuTensorMapEncodeTiled(&tw, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, dw, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    }
    int smem = ST * STAGE + 1024, sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaFuncSetAttribute(conv, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int grid = (int)std::min<long long>(TILES, sms);
    CK(cudaMemset(dout, 0xFF, nout * 2));   // NaN
    conv<<<grid, THREADS, smem>>>(tx, tw, db, dout);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<__nv_bfloat16> ho(nout);
    CK(cudaMemcpy(ho.data(), dout, nout * 2, cudaMemcpyDeviceToHost));
    unsigned long long *dnan, nan = 0;
    CK(cudaMalloc(&dnan, 8)); CK(cudaMemset(dnan, 0, 8));
    count_nan<<<2048, 256>>>(dout, nout, dnan);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&nan, dnan, 8, cudaMemcpyDeviceToHost));
    int bad = 0; double maxe = 0;
    for (int sIdx = 0; sIdx < 4000; sIdx++) {
        rng = rng * 1664525u + 1013904223u; size_t o = (sIdx < 8 ? (sIdx * (nout - 1) / 7) : (size_t)(((uint64_t)rng << 16 ^ rng) % nout));
        int m = (int)(o % M), x = (int)(o / M % OW), y = (int)(o / ((size_t)M * OW) % OH); size_t img = o / ((size_t)M * OW * OH);
        size_t oi = NCHW ? ((img * M + m) * OH + y) * OW + x : o;   // where the kernel stored it
        double acc = hb[m], mag = fabs(hb[m]);
        for (int ky = 0; ky < KS; ky++) for (int kx = 0; kx < KS; kx++) {
            int iy = y + ky - PAD, ix = x + kx - PAD;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            for (int c = 0; c < C; c++) {
                double p = (double)__bfloat162float(hw[((size_t)(ky * KS + kx) * M + m) * C + c]) *
                           (double)__bfloat162float(hin[((img * H + iy) * W + ix) * C + c]);
                acc += p; mag += fabs(p);
            }
        }
        double ref = acc > 0 ? acc : 0, got = __bfloat162float(ho[oi]), err = fabs(got - ref);
        double tol = fabs(ref) / 128.0 + mag * 1e-5 + 1e-6;   // one bf16 rounding of the stored value, fp32 sums
        if (!(err <= tol)) { if (bad < 5) fprintf(stderr, "  out[img %zu y %d x %d m %d] = %g, reference %g\n", img, y, x, m, got, ref); bad++; }
        maxe = std::max(maxe, err / (fabs(ref) + 1e-3));
    }
    printf("check: %s (%d of 4000 sampled outputs off, %llu NaN left of %zu; max relative error %.2e)\n",
           bad || nan ? "FAILED" : "passed", bad, nan, nout, maxe);
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int rep = 0; rep < 13; rep++) {
        flush<<<1024, 256>>>(dfl, nfl);
        CK(cudaEventRecord(e0));
        conv<<<grid, THREADS, smem>>>(tx, tw, db, dout);
        CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (rep >= 3) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    double med = (ts[4] + ts[5]) / 2, fl = 2.0 * NIMG * M * OH * OW * (double)C * KS * KS;
    if (NCHW) {
        std::vector<float> tt;
        for (int rep = 0; rep < 13; rep++) {
            flush<<<1024, 256>>>(dfl, nfl);
            CK(cudaEventRecord(e0));
            to_nhwc<<<tg, 256>>>(dnchw, din);
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (rep >= 3) tt.push_back(ms);
        }
        std::sort(tt.begin(), tt.end());
        double tmed = (tt[4] + tt[5]) / 2;
        printf("to_nhwc: %.3f ms (%.0f GB/s)  with the conv: %.3f ms\n", tmed, 2.0 * nin * 2 / tmed / 1e6, tmed + med);
    }
    printf("time: %.3f ms  %.1f TFLOP/s  %.1f %% of BF16 peak  (grid %d, %d threads, %d B shared, %lld tiles)\n", med,
           fl / med / 1e9, 100.0 * fl / med / 1e9 / (@PEAK@ / 1e12), grid, THREADS, smem, TILES);
    return bad || nan ? 1 : 0;
}
'''


def wgmma(bnm):
    n = bnm // 2
    regs = ", ".join("%%%d" % i for i in range(n))
    outs = ", ".join('"+f"(d[w][%d])' % i for i in range(n))
    return ('asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n'
            'wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16 {%s}, %%%d, %%%d, p, 1, 1, 0, 0;\\n}\\n"'
            ' : %s : "l"(da), "l"(db), "r"(1));' % (n + 2, bnm, regs, n, n + 1, outs))


def variant(layer, batch, bnm, mw, bw, bh, bni, st, ping=0, nchw=0):
    name, c, h, w, m, k, pad = layer
    pix = bw * bh * bni
    nc = 2 if ping else pix // (64 * mw)
    if (ping and pix != 64 * mw) or (not ping and pix % (64 * mw)) or nc < 1 or nc > 4 or m % bnm:
        return None
    # registers: the consumers hold MW*BNM/2 accumulators; setmaxnreg shares out the registers the CTA was
    # launched with (the entry count, at most 65536/threads in steps of 8, times the threads)
    threads = nc * 128 + 128
    entry = min(255, 65536 // threads) // 8 * 8
    rdec = 40 if nc <= 2 else 24
    rinc = min(240, (threads * entry - 128 * rdec) // (nc * 128) // 8 * 8)
    if mw * bnm // 2 + 40 > rinc:
        return None
    if nchw and c % 64:
        return None
    subs = dict(NIMG=batch, C=c, H=h, W=w, M=m, K=k, PAD=pad, PING=ping, NCHW=nchw, BNM=bnm, MW=mw, BW=bw, BH=bh, BNI=bni, ST=st,
                RDEC=rdec, RINC=rinc, WGMMA=wgmma(bnm), PEAK="%.1f" % PEAK_BF16)
    src = SRC
    for key, val in subs.items():
        src = src.replace("@%s@" % key, str(val))
    return src, "%s%sn%d_mw%d_pix%dx%dx%d_st%d" % ("nchw_" if nchw else "", "ping_" if ping else "", bnm, mw, bw, bh, bni, st)


def tiles_for(layer):
    """(bnm, mw, bw, bh, bni, st, ping): maps per tile against 64 to 256 pixels of whole rows (whole images
    where one is smaller), the stage ring as deep as 200 KB of shared memory allows (at most 8)"""
    name, c, h, w, m, k, pad = layer
    ow, oh = w + 2 * pad - k + 1, h + 2 * pad - k + 1
    bw = 1 if ow == 1 else (ow + 7) // 8 * 8
    out = []
    for bnm in sorted({min(m, 256), min(m, 128)}, reverse=True):
        for pix in (64, 128, 256):
            if pix % bw:
                continue
            rows = pix // bw
            bh = min(rows, oh)
            bni = rows // oh if bh == oh else 1
            if bw * bh * bni != pix:
                continue
            stage = (pix + bnm) * 128
            st = min(8, (200 * 1024) // stage)
            for mw in (1, 2):
                out.append((bnm, mw, bw, bh, bni, st, 0))
                out.append((bnm, mw, bw, bh, bni, st, 1))
    return out


def torch_baseline(layer, batch):
    import torch
    name, c, h, w, m, k, pad = layer
    torch.backends.cudnn.benchmark = True
    if h == w == k == 1:   # a fully connected layer: cuBLAS through nn.Linear
        x = torch.randn(batch, c, device="cuda", dtype=torch.bfloat16)
        conv = torch.nn.Linear(c, m, bias=True).cuda().to(torch.bfloat16)
    else:
        x = torch.randn(batch, c, h, w, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        conv = torch.nn.Conv2d(c, m, k, padding=pad, bias=True).cuda().to(torch.bfloat16).to(memory_format=torch.channels_last)
    flushbuf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with torch.no_grad():
        for _ in range(3):
            torch.relu(conv(x))
        ts = []
        for _ in range(10):
            flushbuf.add_(1)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(); torch.relu(conv(x)); e1.record(); torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1))
    ts.sort()
    return (ts[4] + ts[5]) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--out", default="/tmp/tma_probe")
    ap.add_argument("--layers", default="")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--variants", default="", help="only tile shapes whose tag holds one of these substrings")
    ap.add_argument("--nchw", action="store_true", help="the input NCHW as convgen holds it, made channels-last by a "
                    "transpose kernel timed apart, and the output stored NCHW (a template that leaves the layers between "
                    "as they are)")
    ap.add_argument("--ncu", action="store_true", help="run each variant under Nsight Compute (its first launch: speed of light, "
                    "memory and compute workload, warp states) instead of alone")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    layers = [l for l in LAYERS if not a.layers or any(s in l[0] for s in a.layers.split(","))]
    jobs = []
    for li, layer in enumerate(layers):
        for t in tiles_for(layer):
            v = variant(layer, a.batch, *t, nchw=int(a.nchw))
            if v is None:
                continue
            src, tag = v
            if a.variants and not any(x in tag for x in a.variants.split(",")):
                continue
            path = os.path.join(a.out, "l%d_%s.cu" % (li, tag))
            with open(path, "w") as f:
                f.write(src)
            jobs.append((li, tag, path))

    def build(job):
        li, tag, path = job
        exe = path[:-3]
        r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v", path, "-o", exe,
                            "-lcuda"], capture_output=True, text=True)
        return job, exe, r.returncode, r.stderr
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        built = list(ex.map(build, jobs))
    for li, layer in enumerate(layers):
        name, c, h, w, m, k, pad = layer
        oh, ow = h + 2 * pad - k + 1, w + 2 * pad - k + 1
        fl = 2.0 * a.batch * m * oh * ow * c * k * k
        print("== %s: %d -> %d, %dx%d, %dx%d pad %d, batch %d, %.3g GFLOP" % (name, c, m, h, w, k, k, pad, a.batch, fl / 1e9), flush=True)
        if not a.no_torch:
            try:
                ms = torch_baseline(layer, a.batch)
                print("  PyTorch bf16 (cuDNN channels-last; cuBLAS for fc) %.3f ms  %.1f TFLOP/s  %.1f %%" % (ms, fl / ms / 1e9, 100 * fl / ms / 1e9 / (PEAK_BF16 / 1e12)),
                      flush=True)
            except Exception as exc:   # noqa: BLE001 (the probe goes on without the baseline)
                print("  torch baseline failed: %s" % exc)
        for (job, exe, rc, err) in built:
            if job[0] != li:
                continue
            if rc:
                print("  %s: build failed\n%s" % (job[1], err[-3000:]))
                continue
            regs = [ln.strip() for ln in err.splitlines() if "registers" in ln or "spill" in ln]
            try:
                cmd = [exe]
                if a.ncu:
                    cmd = ["ncu", "-k", "conv", "--launch-count", "1", "--section", "SpeedOfLight", "--section", "MemoryWorkloadAnalysis",
                           "--section", "WarpStateStats", "--section", "ComputeWorkloadAnalysis", exe]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=60 if a.ncu else 15)
                res = r.stdout.replace("\n", " | ") + r.stderr[-600:]
            except subprocess.TimeoutExpired:
                res = "timed out (hang?) "
            if a.ncu:
                res = "\n".join(ln for ln in r.stdout.splitlines() if not ln.startswith("==PROF=="))
            print("  %s: %s[%s]" % (job[1], res, "; ".join(regs[-2:])), flush=True)


if __name__ == "__main__":
    sys.exit(main())
