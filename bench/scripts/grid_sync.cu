// grid_sync.cu — what one grid-wide barrier costs on this GPU, by implementation,
// grid and block size: the cost the whole-network kernel (templates/ops/network.lua)
// pays between two layers.
//
//   nvcc -O3 -arch=sm_90 -o grid_sync bench/scripts/grid_sync.cu && ./grid_sync
//
// Each variant runs a cooperative kernel that crosses the barrier R times; the
// barrier's cost is (time(R = 201) - time(R = 1)) / 200, medians of 20 launches
// timed with CUDA events. Variants:
//   fence-same   __threadfence, atomicAdd on the count, volatile spin on a
//                generation word in the same 32-byte sector as the count
//   fence-apart  the same with the generation 128 bytes away
//   flip         one word: each block adds 1, block 0 adds 2^31 - (blocks - 1), so
//                the top bit flips when all have arrived (fences as above)
//   acqrel       the generation apart, atom.add.acq_rel.gpu and ld.acquire.gpu
//                instead of the full fences
// and the empty cooperative launch beside a plain one.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned atom_add_acqrel(unsigned* p, unsigned v)
{
    unsigned old;
    asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
__device__ __forceinline__ void red_add_release(unsigned* p, unsigned v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

template <int V>
__device__ __forceinline__ void grid_barrier(unsigned* bar)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        if (V == 0 || V == 1) {
            volatile unsigned* gen = bar + (V == 0 ? 1 : 32);
            const unsigned g = *gen;
            __threadfence();
            if (atomicAdd(bar, 1u) == gridDim.x - 1) {
                bar[0] = 0;
                __threadfence();
                atomicAdd((unsigned*)gen, 1u);
            } else {
                while (*gen == g) {}
            }
            __threadfence();
        } else if (V == 2) {
            const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
            __threadfence();
            const unsigned old = atomicAdd(bar, add);
            while ((((volatile unsigned*)bar)[0] ^ old) < 0x80000000u) {}
            __threadfence();
        } else {
            unsigned* gen = bar + 32;
            const unsigned g = ld_acquire(gen);
            if (atom_add_acqrel(bar, 1u) == gridDim.x - 1) {
                bar[0] = 0;
                red_add_release(gen, 1u);
            } else {
                while (ld_acquire(gen) == g) {}
            }
        }
    }
    __syncthreads();
}

template <int V>
__global__ void crossings(unsigned* bar, int r, float* sink)
{
    float acc = threadIdx.x;
    for (int i = 0; i < r; i++) {
        acc += 1.0f;
        grid_barrier<V>(bar);
    }
    if (acc < 0) sink[threadIdx.x] = acc;
}

__global__ void empty(float* sink) { if (threadIdx.x > 4096) sink[0] = 1; }

template <class F>
static float median_ms(F launch)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 5; i++) launch();
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return t[t.size() / 2];
}

template <int V>
static void run(const char* name, int blocks, int threads, unsigned* bar, float* sink)
{
    auto go = [&](int r) {
        void* args[] = {&bar, &r, &sink};
        CK(cudaLaunchCooperativeKernel((void*)crossings<V>, blocks, threads, args, 0, 0));
    };
    float t1 = median_ms([&] { go(1); }), t2 = median_ms([&] { go(201); });
    printf("%-12s %4d blocks x %4d threads: %.3f us a barrier (launch with one: %.2f us)\n", name, blocks, threads,
           (t2 - t1) * 1e3f / 200, t1 * 1e3f);
}

int main()
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    unsigned* bar;
    float* sink;
    CK(cudaMalloc(&bar, 4096));
    CK(cudaMemset(bar, 0, 4096));
    CK(cudaMalloc(&sink, 1 << 20));
    int sms = p.multiProcessorCount;
    int configs[][2] = {{sms, 256}, {sms, 512}, {sms, 1024}, {2 * sms, 256}, {2 * sms, 512}, {sms / 2, 1024}};
    for (auto& c : configs) {
        run<0>("fence-same", c[0], c[1], bar, sink);
        run<1>("fence-apart", c[0], c[1], bar, sink);
        CK(cudaMemset(bar, 0, 4096));
        run<2>("flip", c[0], c[1], bar, sink);
        CK(cudaMemset(bar, 0, 4096));
        run<3>("acqrel", c[0], c[1], bar, sink);
        CK(cudaMemset(bar, 0, 4096));
    }
    float plain = median_ms([&] { empty<<<sms, 512>>>(sink); });
    float coop = median_ms([&] {
        void* args[] = {&sink};
        CK(cudaLaunchCooperativeKernel((void*)empty, sms, 512, args, 0, 0));
    });
    printf("empty kernel, %d x 512: plain launch %.2f us, cooperative %.2f us (events around one launch)\n", sms,
           plain * 1e3f, coop * 1e3f);
    CK(cudaGetLastError());
    return 0;
}
