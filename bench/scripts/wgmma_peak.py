#!/usr/bin/env python3
"""wgmma_peak.py — the ceiling of wgmma.mma_async m64nNk16 BF16 (FP32 accumulation, both
operands from shared memory) on the card it runs on, for the shared-memory layouts convgen's
16-bit templates use: no-swizzle core matrices with both operands K-major (igemm_wg, planes
tr=0), no-swizzle with A transposed (MN-major: planes tr=1's weights), against the 128-byte
swizzle (K-major), for N = 64, 128, 256. Each warpgroup issues four k16 products a step into
its own accumulators, then waits for them; two warpgroups a block, one and two blocks an SM.
Shared memory holds seeded pseudo-random BF16 values, not zeros. Writes the CUDA source,
builds it with nvcc (compute_90a) and prints TFLOP/s and the fraction of the dense BF16 peak
(132 SMs x 4096 FLOP a clock x the SM clock nvidia-smi reports).

    python3 bench/scripts/wgmma_peak.py [WORKDIR]
"""
import os, subprocess, sys, tempfile

LAYOUTS = {0: "no swizzle, K-major A and B", 1: "no swizzle, A MN-major", 2: "128-byte swizzle, K-major"}


def kernel(n, layout):
    nr = n // 2
    regs = "{" + ", ".join("%%%d" % i for i in range(nr)) + "}"
    outs = ", ".join('"+f"(d[%d])' % i for i in range(nr))
    ta = 1 if layout == 1 else 0
    return r'''
__global__ void __launch_bounds__(256) k_%(n)d_%(layout)d(float* out, int iters, unsigned seed)
{
    extern __shared__ __align__(1024) unsigned char sm[];
    const int tid = threadIdx.x;
    for (int i = tid; i < (64 * 128 + %(n)d * 128) / 4; i += blockDim.x) {
        unsigned h = (i + 1) * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        ((unsigned*)sm)[i] = (h & 0x807f807fu) | 0x3c003c00u;   // two bf16 of magnitude 2^-7 .. 2^-6, random signs
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[%(nr)d];
#pragma unroll
    for (int r = 0; r < %(nr)d; r++) d[r] = 0.f;
    const unsigned long long base = (unsigned)__cvta_generic_to_shared(sm) >> 4;
    unsigned long long da, db, sa, sb;
    if (%(layout)d == 2) {   // rows of 128 bytes, 8-row atoms 1024 bytes apart, a k16 step 32 bytes on
        da = base | (1ull << 16) | (64ull << 32) | (1ull << 62);
        db = (base + 512) | (1ull << 16) | (64ull << 32) | (1ull << 62);
        sa = sb = 2;
    } else {                 // core matrices of 128 bytes: A [k8][8][8][8], B [k8][N/8][8][8]
        da = base | (64ull << 16) | (8ull << 32);
        db = (base + 512) | (%(n)dull << 16) | (8ull << 32);
        sa = 128, sb = 2 * %(n)d;
    }
    for (int it = 0; it < iters; it++) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int j = 0; j < 4; j++)
            asm volatile("wgmma.mma_async.sync.aligned.m64n%(n)dk16.f32.bf16.bf16 %(regs)s, %%%(nr)d, %%%(nr1)d, 1, 1, 1, %(ta)d, 0;"
                         : %(outs)s : "l"(da + j * sa), "l"(db + j * sb));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    float s = 0.f;
#pragma unroll
    for (int r = 0; r < %(nr)d; r++) s += d[r];
    out[blockIdx.x * blockDim.x + tid] = s;
}
''' % dict(n=n, layout=layout, nr=nr, nr1=nr + 1, regs=regs, outs=outs, ta=ta)


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    cases = [(n, lay) for lay in LAYOUTS for n in (64, 128, 256)]
    src = ['#include <cstdio>\n#include <cuda_runtime.h>\n'
           '#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\\n", #x, cudaGetErrorString(e)); return 1; } } while (0)\n']
    src += [kernel(n, lay) for n, lay in cases]
    src.append('int main(int argc, char** argv) {\n  double mhz = atof(argv[1]);\n  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));\n'
               '  float* out; CK(cudaMalloc(&out, 4 * 264 * 256 * sizeof(float)));\n  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));\n'
               '  const int iters = 4000;\n')
    for n, lay in cases:
        src.append('  {\n    auto f = k_%d_%d; int sh = 64 * 128 + %d * 128 + 1024;\n'
                   '    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sh));\n'
                   '    for (int per = 1; per <= 2; per++) {\n'
                   '      float best = 1e30f;\n'
                   '      for (int rep = 0; rep < 5; rep++) {\n'
                   '        CK(cudaEventRecord(a)); f<<<sms * per, 256, sh>>>(out, iters, 12345u + rep); CK(cudaEventRecord(b));\n'
                   '        CK(cudaEventSynchronize(b)); CK(cudaGetLastError()); float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (rep && ms < best) best = ms;\n'
                   '      }\n'
                   '      double fl = 2.0 * 64 * %d * 16 * 4 * iters * 2.0 * sms * per;\n'
                   '      double peak = sms * 4096.0 * mhz * 1e6;\n'
                   '      printf("N=%%3d %%-28s blocks/SM %%d: %%7.1f TFLOP/s (%%4.1f %%%% of %%.0f)\\n", %d, "%s", per, fl / best / 1e9, 100 * fl / best * 1e3 / peak, peak / 1e12);\n'
                   '    }\n  }\n' % (n, lay, n, n, n, LAYOUTS[lay]))
    src.append('  return 0;\n}\n')
    cu = os.path.join(work, "wgmma_peak.cu")
    with open(cu, "w") as f:
        f.write("".join(src))
    exe = os.path.join(work, "wgmma_peak")
    subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-O3", "-o", exe, cu], check=True)
    mhz = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout.split()[0]
    subprocess.run([exe, mhz], check=True)


if __name__ == "__main__":
    main()
