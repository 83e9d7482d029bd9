// tma_box_starts.cu: which box starts of a 4D bf16 tensor map the bulk tensor copy takes. One copy of a box
// (BW, 64, 4, 1) (perm 1: dims (w, c, h, n)) or (BW, 4, 64, 1) (perm 0: (w, h, c, n)) of a 2x64x16x64 tensor, BW = 8 << swz
// elements, swizzle none/32B/64B/128B, started at (x0, 0, y0, 1); the landed box is checked element by element
// (zeros outside the tensor, the swizzle undone on the host). A fault ends the process, so each case runs alone:
// bench/scripts/tma_box_starts.sh. Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a
//   tma_box_starts.cu -o tma_box_starts -lcuda. Usage: tma_box_starts PERM SWZ X0 Y0
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#define CK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { printf("FAULT %s: %s\n", #x, cudaGetErrorString(r_)); exit(2); } } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_; cuGetErrorString(r_, &s_); printf("ENCODE %s: %s\n", #x, s_); exit(3); } } while (0)
constexpr int N = 2, C = 64, H = 16, W = 64, BH = 4;
__global__ void k(const __grid_constant__ CUtensorMap tm, int c0, int c1, int c2, int c3, int bytes, uint16_t *out)
{
    extern __shared__ unsigned char raw[];
    unsigned char *sm = (unsigned char *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    __shared__ __align__(8) uint64_t bar;
    uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar), d = (uint32_t)__cvta_generic_to_shared(sm);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                     :: "r"(d), "l"(&tm), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(b) : "memory");
    }
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra W;\n}\n" :: "r"(b) : "memory");
    for (int i = threadIdx.x; i < bytes / 2; i += blockDim.x) out[i] = ((uint16_t *)sm)[i];
}
int main(int argc, char **argv)
{
    int perm = atoi(argv[1]), swz = atoi(argv[2]), x0 = atoi(argv[3]), y0 = atoi(argv[4]);
    int BW = 8 << swz, span = BW * 2;
    CK(cudaSetDevice(0)); CU(cuInit(0));
    size_t n = (size_t)N * C * H * W;
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; i++) h[i] = (uint16_t)(i % 65521 + 1);
    uint16_t *dt, *dout; CK(cudaMalloc(&dt, n * 2)); CK(cudaMemcpy(dt, h.data(), n * 2, cudaMemcpyHostToDevice));
    int elems = BW * C * BH, bytes = elems * 2;
    CK(cudaMalloc(&dout, bytes));
    CUtensorMap tm;
    CUtensorMapSwizzle sw[4] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
    cuuint32_t es[4] = {1, 1, 1, 1};
    int co[4];
    if (perm) {
        cuuint64_t dims[4] = {W, C, H, N}, str[3] = {(cuuint64_t)H * W * 2, (cuuint64_t)W * 2, (cuuint64_t)C * H * W * 2};
        cuuint32_t box[4] = {(cuuint32_t)BW, C, BH, 1};
        CU(cuTensorMapEncodeTiled(&tm, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, dt, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw[swz],
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
        co[0] = x0; co[1] = 0; co[2] = y0; co[3] = 1;
    } else {
        cuuint64_t dims[4] = {W, H, C, N}, str[3] = {(cuuint64_t)W * 2, (cuuint64_t)H * W * 2, (cuuint64_t)C * H * W * 2};
        cuuint32_t box[4] = {(cuuint32_t)BW, BH, C, 1};
        CU(cuTensorMapEncodeTiled(&tm, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, dt, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, sw[swz],
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
        co[0] = x0; co[1] = y0; co[2] = 0; co[3] = 1;
    }
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes + 1024));
    k<<<1, 128, bytes + 1024>>>(tm, co[0], co[1], co[2], co[3], bytes, dout);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    std::vector<uint16_t> got(elems);
    CK(cudaMemcpy(got.data(), dout, bytes, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int e = 0; e < elems; e++) {   // logical element e of the box, in box order (innermost first)
        int w = e % BW, r = e / BW, c, y;
        if (perm) { c = r % C; y = r / C; } else { y = r % BH; c = r / BH; }
        int gx = x0 + w, gy = y0 + y;
        uint16_t want = (gx < 0 || gx >= W || gy < 0 || gy >= H) ? 0 : h[(((size_t)1 * C + c) * H + gy) * W + gx];
        uint32_t lb = (uint32_t)e * 2, mask = swz == 0 ? 0 : (1u << swz) - 1;
        uint32_t pb = lb ^ (((lb >> 7) & mask) << 4);
        if (got[pb / 2] != want) { if (bad < 3) printf("  e %d (c %d y %d w %d): got %u want %u\n", e, c, y, w, got[pb / 2], want); bad++; }
    }
    printf("%s perm %d swz %d x0 %d y0 %d: %d of %d wrong\n", bad ? "WRONG" : "ok", perm, swz, x0, y0, bad, elems);
    return bad ? 1 : 0;
}
