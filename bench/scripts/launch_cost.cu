// launch_cost.cu — what a CUDA graph holding one kernel costs on this card from the
// first event to the last, by the kernel's grid, its registers, the cooperative
// attribute, and whether the events are nodes of the graph (as convgen's runtime
// captures them) or recorded on the stream around the graph's launch. The
// whole-network kernel is one cooperative launch of SMs x 512 threads at up to 128
// registers; this says how much of its measured time is the launch itself.
//
//   nvcc -O3 -arch=sm_90 -o launch_cost bench/scripts/launch_cost.cu && ./launch_cost
//
// Every figure: the median of 400 replays after 50 untimed ones, CUDA events.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// a kernel that does nothing visible
__global__ void __launch_bounds__(512, 1) light(float *sink, int never)
{
    if (never == 12345) sink[threadIdx.x] = 1.0f;
}

// a kernel that holds about 120 registers a thread (64 accumulators live across
// a loop whose trip count the compiler cannot see), writing only when told
__global__ void __launch_bounds__(512, 1) heavy(float *sink, int never, int trips)
{
    float a[64];
#pragma unroll
    for (int i = 0; i < 64; i++) a[i] = threadIdx.x * (i + 1) * 1e-7f;
    for (int t = 0; t < trips; t++)
#pragma unroll
        for (int i = 0; i < 64; i++) a[i] = a[i] * a[(i + 1) & 63] + 1e-3f;
    float s = 0;
#pragma unroll
    for (int i = 0; i < 64; i++) s += a[i];
    if (never == 12345) sink[threadIdx.x] = s;
}

// a grid-wide barrier crossed `bars` times (the flip barrier of network.lua:
// one word whose top bit flips when every block has arrived)
__global__ void __launch_bounds__(512, 1) barriers(unsigned *word, int bars)
{
    for (int b = 0; b < bars; b++) {
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
            __threadfence();
            unsigned old = atomicAdd(word, add);
            while (((old ^ *(volatile unsigned *)word) & 0x80000000u) == 0) {}
            __threadfence();
        }
        __syncthreads();
    }
}

enum { LIGHT, HEAVY, BARRIERS };

static void launch(int kind, int blocks, int threads, int coop, cudaStream_t s, float *sink, unsigned *word, int bars)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(threads);
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cfg.attrs = at;
    cfg.numAttrs = coop ? 1 : 0;
    if (kind == LIGHT) CK(cudaLaunchKernelEx(&cfg, light, sink, 0));
    else if (kind == HEAVY) CK(cudaLaunchKernelEx(&cfg, heavy, sink, 0, 0));
    else CK(cudaLaunchKernelEx(&cfg, barriers, word, bars));
}

// events_inside: the events are captured into the graph (external records)
static float graph_us(int kind, int blocks, int threads, int coop, int events_inside, int nk, cudaStream_t s,
                      float *sink, unsigned *word, int bars)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (events_inside) CK(cudaEventRecordWithFlags(e0, s, cudaEventRecordExternal));
    for (int k = 0; k < nk; k++) launch(kind, blocks, threads, coop, s, sink, word, bars);
    if (events_inside) CK(cudaEventRecordWithFlags(e1, s, cudaEventRecordExternal));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<float> t;
    for (int r = 0; r < 450; r++) {
        if (!events_inside) CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(ge, s));
        if (!events_inside) CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 50) t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return t[t.size() / 2];
}

static float turns_us(int kind, int blocks, int threads, int coop, float *sink, unsigned *word)
{
    cudaStream_t st[2];
    cudaEvent_t e0[2], e1[2], done[2];
    cudaGraphExec_t ge[2];
    void *hin, *hout;
    float *din;
    CK(cudaMallocHost(&hin, 4096));
    CK(cudaMallocHost(&hout, 4096));
    CK(cudaMalloc(&din, 4096));
    for (int i = 0; i < 2; i++) {
        CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        CK(cudaEventCreate(&e0[i]));
        CK(cudaEventCreate(&e1[i]));
        CK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st[i], cudaStreamCaptureModeThreadLocal));
        CK(cudaEventRecordWithFlags(e0[i], st[i], cudaEventRecordExternal));
        launch(kind, blocks, threads, coop, st[i], sink, word, 3);
        CK(cudaEventRecordWithFlags(e1[i], st[i], cudaEventRecordExternal));
        CK(cudaStreamEndCapture(st[i], &g));
        CK(cudaGraphInstantiate(&ge[i], g, 0));
        CK(cudaGraphDestroy(g));
    }
    std::vector<float> t;
    for (int r = 0; r < 450; r++) {
        int i = r & 1;
        CK(cudaMemcpyAsync(din, hin, 4096, cudaMemcpyHostToDevice, st[i]));
        if (r) CK(cudaStreamWaitEvent(st[i], done[i ^ 1], 0));
        CK(cudaGraphLaunch(ge[i], st[i]));
        CK(cudaMemcpyAsync(hout, din, 40, cudaMemcpyDeviceToHost, st[i]));
        CK(cudaEventRecord(done[i], st[i]));
        CK(cudaEventSynchronize(done[i]));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0[i], e1[i]));
        if (r >= 50) t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    for (int i = 0; i < 2; i++) {
        CK(cudaGraphExecDestroy(ge[i]));
        CK(cudaStreamDestroy(st[i]));
    }
    CK(cudaFreeHost(hin));
    CK(cudaFreeHost(hout));
    CK(cudaFree(din));
    return t[t.size() / 2];
}

int main()
{
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, heavy));
    float *sink;
    unsigned *word;
    CK(cudaMalloc(&sink, 4096 * sizeof(float)));
    CK(cudaMalloc(&word, sizeof(unsigned)));
    CK(cudaMemset(word, 0, sizeof(unsigned)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("heavy kernel: %d registers a thread\n", fa.numRegs);
    printf("%-9s %6s %7s %5s %-8s %8s\n", "kernel", "blocks", "threads", "coop", "events", "us");
    const char *names[] = {"light", "heavy", "barrier3"};
    struct { int kind, blocks, threads; } rows[] = {
        {LIGHT, 1, 32}, {LIGHT, sms, 512}, {HEAVY, sms, 512}, {BARRIERS, sms, 512}};
    for (auto &r : rows)
        for (int coop = 0; coop < 2; coop++)
            for (int inside = 0; inside < 2; inside++) {
                float us = graph_us(r.kind, r.blocks, r.threads, coop, inside, 1, s, sink, word, 3);
                printf("%-9s %6d %7d %5d %-8s %8.2f\n", names[r.kind], r.blocks, r.threads, coop,
                       inside ? "inside" : "outside", us);
            }
    // as convgen's runtime queues a batch: two streams taking turns, each a 4 KB
    // upload from pinned memory, a wait for the other stream's last batch, the
    // graph (events inside), a 40-byte download
    for (int coop = 0; coop < 2; coop++)
        printf("light %d x 512, coop %d, two streams with copies and a cross-stream wait: %.2f us\n", sms, coop,
               turns_us(LIGHT, sms, 512, coop, sink, word));
    // a chain of four light kernels: the per-kernel edge without PDL, for scale
    printf("four light %d x 512 kernels, events inside: %.2f us\n", sms,
           graph_us(LIGHT, sms, 512, 0, 1, 4, s, sink, word, 0));
    return 0;
}
