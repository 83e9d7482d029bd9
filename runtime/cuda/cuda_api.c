/* cuda_api.c — open libcuda.so.1 with dlopen and fill cg_cu (see cuda_api.h). */
#include "cuda_api.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kept after the first successful open so error text can be named anywhere,
 * including in cg_cu_check calls made without a cg_cu at hand. */
static PFN_cuGetErrorName_v6000 s_err_name;
static PFN_cuGetErrorString_v6000 s_err_string;

const char *cg_cu_strerror(CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *desc = NULL;
    if (s_err_name && s_err_name(r, &name) != CUDA_SUCCESS) name = NULL;
    if (s_err_string && s_err_string(r, &desc) != CUDA_SUCCESS) desc = NULL;
    if (name && desc)
        snprintf(buf, n, "%s (%s)", name, desc);
    else if (name)
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "CUDA error %d", (int)r);
    return buf;
}

/* Drop a leading "ident->" from the call text, so the message names the
 * driver function ("cuMemAlloc(&p, n)") rather than our struct. */
static const char *strip_owner(const char *text)
{
    const char *p = text;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '_')
        p++;
    if (p != text && p[0] == '-' && p[1] == '>') return p + 2;
    return text;
}

int cg_cu_check(cg_err *e, CUresult r, const char *text)
{
    if (r == CUDA_SUCCESS) return 0;
    char buf[256];
    return cg_fail(e, "%s: %s", strip_owner(text), cg_cu_strerror(r, buf, sizeof buf));
}

/* Why cuGetProcAddress refused a symbol, in words. */
static const char *query_status(CUdriverProcAddressQueryResult s)
{
    switch (s) {
    case CU_GET_PROC_ADDRESS_SUCCESS: return "CU_GET_PROC_ADDRESS_SUCCESS (but a NULL pointer)";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
        return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
    }
    return "unknown status";
}

/* Fetch one entry point at the ABI version its pointer type was written for. */
static int get_proc(PFN_cuGetProcAddress_v12000 gpa, const char *sym, int ver, void **fn,
                    int driver_version, cg_err *e)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *fn = NULL;
    CUresult r = gpa(sym, fn, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && *fn) return 0;
    char buf[256];
    return cg_fail(e,
                   "CUDA driver %d.%d lacks %s (ABI version %d): cuGetProcAddress: %s, %s; "
                   "update the NVIDIA driver",
                   driver_version / 1000, driver_version % 1000 / 10, sym, ver,
                   cg_cu_strerror(r, buf, sizeof buf), query_status(st));
}

/* Every pointer of CG_CU_FUNCS, in order; the names as given to cuGetProcAddress. */
static int load_all(cg_cu *cu, PFN_cuGetProcAddress_v12000 gpa, cg_err *e)
{
#define CG_CU_LOAD_(name, ver)                                                                  \
    if (get_proc(gpa, #name, ver, (void **)&cu->name, cu->driver_version, e)) return -1;
    CG_CU_FUNCS(CG_CU_LOAD_)
#undef CG_CU_LOAD_
    /* the optional ones: NULL where the driver lacks them */
#define CG_CU_LOAD_OPT_(name, ver)                                                              \
    {                                                                                           \
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;              \
        cu->name = NULL;                                                                        \
        if (gpa(#name, (void **)&cu->name, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || \
            st != CU_GET_PROC_ADDRESS_SUCCESS)                                                  \
            cu->name = NULL;                                                                    \
    }
    CG_CU_OPTIONAL_FUNCS(CG_CU_LOAD_OPT_)
#undef CG_CU_LOAD_OPT_
    return 0;
}

/* Read the device facts the executor and the error messages need. */
static int read_device(cg_cu *cu, cg_err *e)
{
    struct {
        CUdevice_attribute a;
        int *dst;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &cu->cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &cu->cc_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &cu->sm_count},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &cu->max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &cu->smem_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &cu->smem_per_block_optin},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &cu->smem_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &cu->regs_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &cu->regs_per_sm},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &cu->l2_bytes},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (CG_CU(e, cu->cuDeviceGetAttribute(attrs[i].dst, attrs[i].a, cu->dev))) return -1;
    /* The clock rate attribute is deprecated; a failure here is not fatal. */
    if (cu->cuDeviceGetAttribute(&cu->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, cu->dev) !=
        CUDA_SUCCESS)
        cu->clock_khz = 0;
    cu->cc = cu->cc_major * 10 + cu->cc_minor;
    if (CG_CU(e, cu->cuDeviceGetName(cu->name, (int)sizeof cu->name, cu->dev))) return -1;
    cu->name[sizeof cu->name - 1] = 0;
    if (CG_CU(e, cu->cuDeviceTotalMem(&cu->total_mem, cu->dev))) return -1;
    return 0;
}

/* cuInit failed: turn the code into the sentence a user needs. */
static int init_failed(cg_cu *cu, CUresult r, cg_err *e)
{
    char buf[256];
    const char *what = cg_cu_strerror(r, buf, sizeof buf);
    int v = cu->driver_version;
    if (r == CUDA_ERROR_NO_DEVICE)
        return cg_fail(e, "CUDA driver found but no device (cuInit: CUDA_ERROR_NO_DEVICE)");
    if (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
        return cg_fail(e,
                       "CUDA driver %d.%d found but it does not match the kernel module or GPU "
                       "(cuInit: %s)",
                       v / 1000, v % 1000 / 10, what);
    return cg_fail(e, "CUDA driver %d.%d found but it failed to initialise (cuInit: %s)",
                   v / 1000, v % 1000 / 10, what);
}

int cg_cu_open(cg_cu **out, int device, cg_err *e)
{
    *out = NULL;
    dlerror();
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return cg_fail(e, "no CUDA driver (libcuda.so.1 not found: %s)", why ? why : "unknown");
    }
    PFN_cuGetProcAddress_v12000 gpa;
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    if (!sym)
        return cg_fail(e, "CUDA driver too old: libcuda.so.1 has no cuGetProcAddress_v2 (a driver "
                          "for CUDA 12.0 or newer is needed)");
    memcpy(&gpa, &sym, sizeof gpa); /* object pointer to function pointer, without a warning */

    cg_cu *cu = calloc(1, sizeof *cu);
    if (!cu) return cg_fail(e, "out of memory");
    cu->lib = lib;
    cu->ordinal = device;
    /* cuDriverGetVersion first: later messages quote the version. */
    if (get_proc(gpa, "cuDriverGetVersion", 2020, (void **)&cu->cuDriverGetVersion, 0, e) ||
        CG_CU(e, cu->cuDriverGetVersion(&cu->driver_version)) || load_all(cu, gpa, e)) {
        free(cu);
        return -1;
    }
    s_err_name = cu->cuGetErrorName;
    s_err_string = cu->cuGetErrorString;

    CUresult r = cu->cuInit(0);
    if (r != CUDA_SUCCESS) {
        init_failed(cu, r, e);
        free(cu);
        return -1;
    }
    int count = 0;
    if (CG_CU(e, cu->cuDeviceGetCount(&count))) goto fail;
    if (count == 0) {
        cg_fail(e, "CUDA driver found but no device (cuDeviceGetCount: 0)");
        goto fail;
    }
    if (device < 0 || device >= count) {
        cg_fail(e, "CUDA device %d requested but %d device%s found (valid: 0..%d)", device,
                count, count == 1 ? "" : "s", count - 1);
        goto fail;
    }
    if (CG_CU(e, cu->cuDeviceGet(&cu->dev, device)) || read_device(cu, e)) goto fail;
    if (CG_CU(e, cu->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev))) goto fail;
    if (CG_CU(e, cu->cuCtxSetCurrent(cu->ctx))) {
        cu->cuDevicePrimaryCtxRelease(cu->dev);
        goto fail;
    }
    *out = cu;
    return 0;
fail:
    free(cu);
    return -1;
}

void cg_cu_close(cg_cu *cu)
{
    if (!cu) return;
    if (cu->ctx) {
        /* unset only our own context: another device's may be current */
        CUcontext cur = NULL;
        if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == cu->ctx) cu->cuCtxSetCurrent(NULL);
        cu->cuDevicePrimaryCtxRelease(cu->dev);
    }
    /* libcuda stays loaded: unloading the driver library mid-process is not
     * supported by NVIDIA and gains nothing. */
    free(cu);
}

int cg_map_encode(cg_cu *cu, const char *kname, const cg_mmap *mp, cg_dtype dt, CUdeviceptr base, long long images,
                  CUtensorMap *out, cg_err *e)
{
    char txt[160], why[160], what[400];
    cg_map_text(mp, txt, sizeof txt);
    if (!cu->cuTensorMapEncodeTiled)
        return cg_fail(e, "kernel %s takes a tensor map (%s): the driver has no cuTensorMapEncodeTiled (CUDA 12.0 "
                          "or newer needed)", kname, txt);
    CUtensorMapDataType type;
    switch (dt) {
    case CG_DT_F32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case CG_DT_F16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case CG_DT_BF16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case CG_DT_U8: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
    case CG_DT_I32: type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
    default: return cg_fail(e, "kernel %s: tensor map %s over an unknown element type", kname, txt);
    }
    cuuint64_t dims[CG_MAP_RANK], strides[CG_MAP_RANK];
    cuuint32_t box[CG_MAP_RANK], ones[CG_MAP_RANK] = {1, 1, 1, 1, 1};
    if (cg_map_geometry(mp, cg_dtype_size(dt), images, dims, strides, box, why, sizeof why))
        return cg_fail(e, "kernel %s: tensor map %s for %lld images: %s", kname, txt, images, why);
    if (base % 16)
        return cg_fail(e, "kernel %s: tensor map %s over memory not 16-byte aligned", kname, txt);
    static const CUtensorMapSwizzle swz[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                             CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
    int si = mp->swizzle == 128 ? 3 : mp->swizzle == 64 ? 2 : mp->swizzle == 32 ? 1 : 0;
    snprintf(what, sizeof what, "cuTensorMapEncodeTiled(kernel %s, %s, %lld images)", kname, txt, images);
    return cg_cu_check(e, cu->cuTensorMapEncodeTiled(out, type, (cuuint32_t)mp->rank, (void *)(uintptr_t)base, dims,
                                                     strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, swz[si],
                                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                       what);
}
