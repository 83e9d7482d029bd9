/* cuda_api.h — the CUDA driver API, opened at run time.
 *
 * libcuda.so.1 is opened with dlopen, so the same binary runs the CPU backend
 * on a machine without a GPU and can say plainly why the GPU path is missing.
 * Only cuGetProcAddress_v2 is taken with dlsym; every other entry point comes
 * from cuGetProcAddress with the exact ABI version of the function-pointer type
 * it is stored in (cudaTypedefs.h's PFN_<name>_v<version>). Asking for every
 * symbol at CUDA_VERSION instead would be wrong for functions whose signature
 * changed later: with CUDA 13 headers "cuCtxSynchronize" at 13000 is the new
 * cuCtxSynchronize(CUcontext), while <cuda.h> declares cuCtxSynchronize(void).
 * <cuda.h> is included for its types only; nothing links against -lcuda. */
#ifndef CG_CUDA_API_H
#define CG_CUDA_API_H
#include <cuda.h>
#include <cudaTypedefs.h>

#include "manifest.h"
#include "util.h"

/* X(name, version): every driver function the runtime uses. The struct field
 * is spelled `name`; <cuda.h> macros may rename it (cuMemAlloc -> cuMemAlloc_v2)
 * consistently in every file that includes this header, so call it as
 * cu->cuMemAlloc(...). The pointer's type is PFN_<name>_v<version>. */
#define CG_CU_FUNCS(X)                                                                         \
    X(cuInit, 2000)                                                                            \
    X(cuDriverGetVersion, 2020)                                                                \
    X(cuDeviceGetCount, 2000)                                                                  \
    X(cuDeviceGet, 2000)                                                                       \
    X(cuDeviceGetName, 2000)                                                                   \
    X(cuDeviceGetAttribute, 2000)                                                              \
    X(cuDeviceTotalMem, 3020)                                                                  \
    X(cuDevicePrimaryCtxRetain, 7000)                                                          \
    X(cuDevicePrimaryCtxRelease, 11000)                                                        \
    X(cuCtxSetCurrent, 4000)                                                                   \
    X(cuCtxGetCurrent, 4000)                                                                   \
    X(cuCtxPushCurrent, 4000)                                                                  \
    X(cuCtxPopCurrent, 4000)                                                                   \
    X(cuCtxSynchronize, 2000)                                                                  \
    X(cuModuleLoadData, 2000)                                                                  \
    X(cuModuleLoadDataEx, 2010)                                                                \
    X(cuModuleUnload, 2000)                                                                    \
    X(cuModuleGetFunction, 2000)                                                               \
    X(cuModuleGetGlobal, 3020)                                                                 \
    X(cuFuncGetAttribute, 2020)                                                                \
    X(cuFuncSetAttribute, 9000)                                                                \
    X(cuMemAlloc, 3020)                                                                        \
    X(cuMemFree, 3020)                                                                         \
    X(cuMemAllocHost, 3020)                                                                    \
    X(cuMemFreeHost, 2000)                                                                     \
    X(cuMemcpyHtoD, 3020)                                                                      \
    X(cuMemcpyDtoH, 3020)                                                                      \
    X(cuMemcpyHtoDAsync, 3020)                                                                 \
    X(cuMemcpyDtoHAsync, 3020)                                                                 \
    X(cuMemcpyDtoDAsync, 3020)                                                                 \
    X(cuMemsetD32, 3020)                                                                       \
    X(cuMemsetD32Async, 3020)                                                                  \
    X(cuMemsetD16Async, 3020)                                                                  \
    X(cuMemsetD8, 3020)                                                                        \
    X(cuMemGetInfo, 3020)                                                                      \
    X(cuLaunchKernel, 4000)                                                                    \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)                                       \
    X(cuStreamCreate, 2000)                                                                    \
    X(cuStreamDestroy, 4000)                                                                   \
    X(cuStreamSynchronize, 2000)                                                               \
    X(cuStreamWaitEvent, 3020)                                                                 \
    X(cuEventCreate, 2000)                                                                     \
    X(cuEventDestroy, 4000)                                                                    \
    X(cuEventRecord, 2000)                                                                     \
    X(cuEventSynchronize, 2000)                                                                \
    X(cuEventElapsedTime, 12080)                                                               \
    X(cuEventRecordWithFlags, 11010)                                                           \
    X(cuStreamBeginCapture, 10010)                                                             \
    X(cuStreamEndCapture, 10000)                                                               \
    X(cuGraphInstantiateWithFlags, 11040)                                                      \
    X(cuGraphLaunch, 10000)                                                                    \
    X(cuGraphExecDestroy, 10000)                                                               \
    X(cuGraphDestroy, 10000)                                                                   \
    X(cuGetErrorName, 6000)                                                                    \
    X(cuGetErrorString, 6000)

/* X(name, version): driver functions the runtime uses where the driver has
 * them; a driver without one leaves its pointer NULL and the caller takes the
 * older path (cuLaunchKernelEx, CUDA 11.8: launch attributes such as
 * programmatic stream serialization; without it cuLaunchKernel). */
#define CG_CU_OPTIONAL_FUNCS(X)                                                                \
    X(cuLaunchKernelEx, 11060)                                                                 \
    X(cuTensorMapEncodeTiled, 12000)

#define CG_CU_FIELD_(name, ver) PFN_##name##_v##ver name;

typedef struct cg_cu {
    CG_CU_FUNCS(CG_CU_FIELD_)
    CG_CU_OPTIONAL_FUNCS(CG_CU_FIELD_)
    void *lib;          /* dlopen handle of libcuda.so.1 (never closed) */
    int driver_version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
    int ordinal;        /* device index given to cg_cu_open */
    CUdevice dev;
    CUcontext ctx;      /* the device's primary context, current on the opening thread */
    int cc_major, cc_minor;
    int cc;             /* 10 * major + minor: 75, 90, 120 ... */
    int sm_count;
    char name[256];
    size_t total_mem;
    int max_threads_per_block;
    int smem_per_block;       /* default limit, bytes */
    int smem_per_block_optin; /* with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) */
    int smem_per_sm;
    int regs_per_block;
    int regs_per_sm;
    int l2_bytes;
    int clock_khz; /* may be 0: some drivers no longer report it */
} cg_cu;

/* Open the driver, initialise it, pick device `device` (0-based), retain its
 * primary context and make it current on the calling thread. Errors are one
 * plain sentence for a user, e.g. "no CUDA driver (libcuda.so.1 not found: ...)"
 * or "CUDA driver found but no device (cuInit: CUDA_ERROR_NO_DEVICE)". */
int cg_cu_open(cg_cu **out, int device, cg_err *e);
/* Release the primary context and free the struct (NULL is fine). */
void cg_cu_close(cg_cu *cu);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; works before cg_cu_open (then the
 * code is printed as a number) and for codes the driver does not know. */
const char *cg_cu_strerror(CUresult r, char *buf, size_t n);
/* 0 when r is CUDA_SUCCESS, else fills e with "<text>: <name> (<description>)"
 * and returns -1. A leading "cu->" or "x->" in text is dropped. */
int cg_cu_check(cg_err *e, CUresult r, const char *text);
/* if (CG_CU(e, cu->cuMemAlloc(&p, n))) goto fail;
 *   -> "cuMemAlloc(&p, n): CUDA_ERROR_OUT_OF_MEMORY (out of memory)" */
#define CG_CU(e, call) cg_cu_check((e), (call), #call)

/* Encode kernel `kname`'s tensor map mp (manifest map: role) over the memory at base, of
 * elements of type dt, for buffers of `images` images, into *out: cg_map_geometry's checks,
 * then cuTensorMapEncodeTiled (no interleave, 256-byte L2 promotion, zeros past the tensor's
 * edges), checked. A driver without it (before CUDA 12.0) is refused in words. 0 or -1. */
int cg_map_encode(cg_cu *cu, const char *kname, const cg_mmap *mp, cg_dtype dt, CUdeviceptr base, long long images,
                  CUtensorMap *out, cg_err *e);

#endif
