// mma_peak.cu — the ceiling of mma.sync.m16n8k8 TF32 on the card it runs on: each warp
// issues twelve independent products a step (no dependence between consecutive ones), with
// split=1 also the ALU work of splitting six operands into TF32 parts between steps, as
// conv2d_igemm_tc does. One block an SM, 4 to 16 warps. bench/journal/2026-11.md
// ("2026-11-27 — igemm_tc's instructions cut by a fifth") has the H100 figures. Build and run: nvcc -arch sm_90 -O3 -o mma_peak bench/scripts/mma_peak.cu && ./mma_peak
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
template <int SPLIT>
__global__ void k(float* out, int iters) {
    float d[12][4];
    for (int j = 0; j < 12; j++) for (int r = 0; r < 4; r++) d[j][r] = 0.f;
    unsigned a[4], b[2];
    float v = threadIdx.x * 1e-3f;
    for (int r = 0; r < 4; r++) a[r] = __float_as_uint(v + r);
    for (int r = 0; r < 2; r++) b[r] = __float_as_uint(v - r);
    for (int it = 0; it < iters; it++) {
        if (SPLIT) {  // a split's three operations on each operand, folded back so the compiler keeps them
#pragma unroll
            for (int r = 0; r < 4; r++) { unsigned h = (a[r] + 0x1000u) & 0xffffe000u; a[r] = __float_as_uint(__uint_as_float(a[r]) - __uint_as_float(h)) ^ h; }
#pragma unroll
            for (int r = 0; r < 2; r++) { unsigned h = (b[r] + 0x1000u) & 0xffffe000u; b[r] = __float_as_uint(__uint_as_float(b[r]) - __uint_as_float(h)) ^ h; }
        }
#pragma unroll
        for (int j = 0; j < 12; j++)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    float s = 0; for (int j = 0; j < 12; j++) for (int r = 0; r < 4; r++) s += d[j][r];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
int main() {
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float* out; CK(cudaMalloc(&out, 1 << 24));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    const int iters = 4096;
    for (int split = 0; split < 2; split++)
    for (int warps = 4; warps <= 16; warps *= 2) {
        const int blocks = sms, threads = 32 * warps;
        for (int rep = 0; rep < 3; rep++) {
            CK(cudaEventRecord(e0));
            if (split) k<1><<<blocks, threads>>>(out, iters); else k<0><<<blocks, threads>>>(out, iters);
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); CK(cudaGetLastError());
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
            double flop = 2.0 * 16 * 8 * 8 * 12 * (double)iters * blocks * warps;
            if (rep == 2)   // the third run: the first two warm up
                printf("split=%d warps/SM=%2d: %.3f ms, %.1f TF32 TFLOP/s (mma.sync m16n8k8)\n", split, warps, ms, flop / ms / 1e9);
        }
    }
    return 0;
}
