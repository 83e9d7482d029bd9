/* fake_cuda.h — what the stand-in libcuda.so.1 (tests/fake_cuda.c) counted. */
#ifndef CG_FAKE_CUDA_H
#define CG_FAKE_CUDA_H
#include <stdio.h>

#define FAKE_MAX_NAMES 4096

typedef struct {
    int launches;       /* cuLaunchKernel and cuLaunchKernelEx calls (captured ones included) */
    int pdl_launches;   /* of those, cuLaunchKernelEx with programmatic stream serialization */
    int kernels_run;    /* kernels executed: launches outside a capture, plus each graph's per replay */
    int captures;       /* cuStreamBeginCapture */
    int graph_launches; /* cuGraphLaunch */
    int graphs_live;    /* instantiated and not yet destroyed */
    int event_records;
    int host_syncs;     /* cuEventSynchronize and cuStreamSynchronize */
    int device_allocs, host_allocs, copies;
    int nnames;
    char names[FAKE_MAX_NAMES][128]; /* every launched kernel's name, in order */
    unsigned char pdl[FAKE_MAX_NAMES]; /* 1 where that launch asked for programmatic stream serialization */
    unsigned long long blocks[FAKE_MAX_NAMES]; /* that launch's grid, in blocks */
    /* set by the test before a device is opened */
    int cc;             /* the device's compute capability, 10 * major + minor; 0: 90 */
    int no_launch_ex;   /* cuGetProcAddress does not find cuLaunchKernelEx (an older driver) */
    int sms;            /* the device's multiprocessors; 0: 132 */
    /* cooperative launches (CU_LAUNCH_ATTRIBUTE_COOPERATIVE through cuLaunchKernelEx) */
    unsigned char coop[FAKE_MAX_NAMES]; /* 1 where that launch was cooperative */
    int coop_launches;
    int refuse_coop;         /* set by the test: a cooperative launch is refused (nothing launched) */
    int refuse_coop_capture; /* set by the test: a graph holding one is not instantiated */
    /* cuOccupancyMaxActiveBlocksPerMultiprocessor */
    int occupancy;           /* set by the test: its answer; 0: 2; negative: 0 (nothing fits) */
    int occ_calls, occ_threads;
    size_t occ_shared;
    /* cuMemsetD8 (synchronous): calls and the bytes of the last */
    int memset8;
    size_t memset8_bytes;
    /* the argument values of the launches of two kernels (set by the test: name,
     * argument count, the index of the one int argument or -1; the others are
     * 8-byte pointers): the last launch's, and how many launches were seen */
    char rec_name[2][128];
    int rec_nargs[2], rec_int_at[2], rec_count[2];
    unsigned long long rec_val[2][64];
    /* a device clock: every kernel run advances it by its cost (1, or whole_cost for a
     * kernel whose name starts with "network"), an event recorded outside a capture
     * reads it, and cuEventElapsedTime gives the difference (0.001 ms when either
     * event has no reading) */
    double whole_cost;       /* set by the test; 0: 1 */
    /* set by the test: a kernel's cost on the clock by its name and how it was
     * launched (pdl: 1 where the launch asked for programmatic stream serialization,
     * 2 where it was launched plainly right after another kernel, no event, copy or
     * memset between: a graph's kernels with no event inside, 0 otherwise: after an
     * event, as a profile launches every kernel), in place of the above where it
     * answers more than 0 (tests/test_tune_verify.c makes one
     * template's kernels slower or faster than the network's own, and one slower
     * where it overlaps the kernel before it, which a profile's launches never
     * do). An event recorded into a graph (CU_EVENT_RECORD_EXTERNAL) reads the
     * clock where it stands in the graph each time the graph is replayed, so a
     * profile's per-kernel events time each kernel through graphs too */
    double (*kernel_cost)(const char *name, int pdl);
    int fail_launches;       /* set by the test: every launch fails (a device error) */
    /* set by the test: called at every launch, captured ones included, with the
     * kernel's name and its argument pointers as the launch passed them, so that a
     * test can write what the kernel would (tests/test_whole_tune.c). The fake has
     * no device timeline: every copy and memset queued before the launch is done.
     * A graph's replay calls nothing, so outputs are written when a count of
     * images is first captured */
    void (*on_launch)(const char *name, void **params);
    /* cuMemcpyHtoDAsync: the host address and byte count of the last */
    const void *htod_src;
    size_t htod_bytes;
    /* cuMemAllocHost's live allocations (the first 64): where the pinned memory is */
    const void *pinned[64];
    size_t pinned_bytes[64];
} fake_cu_stats_t;

fake_cu_stats_t *fake_cu_stats(void);
#endif
