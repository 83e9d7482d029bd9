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
} fake_cu_stats_t;

fake_cu_stats_t *fake_cu_stats(void);
#endif
