// pdl_gap.cu: what one kernel-to-kernel edge of a CUDA graph costs on this card,
// with and without programmatic dependent launch (PDL), for chains of tiny kernels.
// Each kernel reads the previous one's output and writes its own (a chain like a
// network's layers at batch 1); the graph of N kernels is replayed R times and the
// median replay time (CUDA events) divided by N is the cost per kernel.
//
//   nvcc -O2 -arch=sm_90 bench/scripts/pdl_gap.cu -o pdl_gap && ./pdl_gap [N] [BLOCKS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void step(const float *in, float *out, int n, int pdl)
{
    if (pdl) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;");
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 0.5f + 1.0f;
}

static float replay_us(int nk, int blocks, int pdl, cudaStream_t s, float *a, float *b)
{
    int n = blocks * 256;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < nk; k++) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(blocks);
        cfg.blockDim = dim3(256);
        cfg.stream = s;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at;
        cfg.numAttrs = pdl ? 1 : 0;
        float *src = (k & 1) ? b : a, *dst = (k & 1) ? a : b;
        CK(cudaLaunchKernelEx(&cfg, step, (const float *)src, dst, n, pdl));
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int w = 0; w < 20; w++) CK(cudaGraphLaunch(ge, s));
    std::vector<float> t;
    for (int r = 0; r < 200; r++) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return t[t.size() / 2];
}

int main(int argc, char **argv)
{
    int blocks_list[] = {1, 132, 1056};
    float *a, *b;
    CK(cudaMalloc(&a, 1056 * 256 * sizeof(float)));
    CK(cudaMalloc(&b, 1056 * 256 * sizeof(float)));
    CK(cudaMemset(a, 0, 1056 * 256 * sizeof(float)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int nks[] = {1, 5, 20};
    (void)argc, (void)argv;
    printf("kernels blocks  plain_us  pdl_us  plain_per_kernel  pdl_per_kernel\n");
    for (int bi = 0; bi < 3; bi++)
        for (int ki = 0; ki < 3; ki++) {
            float p = replay_us(nks[ki], blocks_list[bi], 0, s, a, b);
            float q = replay_us(nks[ki], blocks_list[bi], 1, s, a, b);
            printf("%7d %6d %9.2f %7.2f %17.2f %15.2f\n", nks[ki], blocks_list[bi], p, q, p / nks[ki], q / nks[ki]);
        }
    return 0;
}
