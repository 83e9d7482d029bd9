/* fake_cuda.c — a stand-in libcuda.so.1 for tests/test_graph.c: the driver
 * entry points the runtime asks cuGetProcAddress for, answered on the host.
 * Device memory is host memory, kernels are names (found in the cubin's symbol
 * table, as are the sizes of its __constant__ symbols) and a launch runs
 * nothing: it is counted, and while a stream captures, recorded into the
 * graph being captured. What the runtime did is read back through
 * fake_cu_stats(). One device: an sm_90 with 132 SMs (another compute
 * capability where the test sets fake_cu_stats()->cc). */
#include <cuda.h>
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

static fake_cu_stats_t st;

fake_cu_stats_t *fake_cu_stats(void) { return &st; }

/* ---- modules: the names and sizes of a cubin's symbols ---- */

typedef struct {
    char name[128];
    size_t size;
    void *mem; /* a __constant__ symbol's storage, made on first use */
} fake_sym;

typedef struct {
    int nsym;
    fake_sym *sym;
} fake_mod;

/* The symbol table of an ELF64 image (a cubin). */
static void read_symbols(const unsigned char *img, fake_mod *m)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (!memcmp(img, "\x50\xed\x55\xba", 4)) {
        /* a fat binary: the symbols of its first cubin (an ELF entry, kind 2) */
        unsigned hs = (unsigned)img[6] | (unsigned)img[7] << 8;
        unsigned long long size;
        memcpy(&size, img + 8, 8);
        for (size_t at = hs; at + 32 <= hs + size;) {
            unsigned kind = (unsigned)img[at] | (unsigned)img[at + 1] << 8;
            unsigned ehs;
            unsigned long long n;
            memcpy(&ehs, img + at + 4, 4);
            memcpy(&n, img + at + 8, 8);
            if (kind == 2 && !memcmp(img + at + ehs, ELFMAG, SELFMAG)) {
                read_symbols(img + at + ehs, m);
                return;
            }
            at += ehs + n;
        }
        return;
    }
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64) return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB) continue;
        const Elf64_Sym *sy = (const Elf64_Sym *)(img + sh[i].sh_offset);
        const char *names = (const char *)(img + sh[sh[i].sh_link].sh_offset);
        int n = (int)(sh[i].sh_size / sizeof *sy);
        m->sym = calloc((size_t)n, sizeof *m->sym);
        for (int j = 0; m->sym && j < n; j++) {
            fake_sym *f = &m->sym[m->nsym++];
            snprintf(f->name, sizeof f->name, "%s", names + sy[j].st_name);
            f->size = sy[j].st_size;
            /* initialised data (a fat binary's cg_build_id): its bytes, copied now */
            unsigned sx = sy[j].st_shndx;
            if (f->size && sx > 0 && sx < eh->e_shnum && sh[sx].sh_type == SHT_PROGBITS &&
                sy[j].st_value + f->size <= sh[sx].sh_size && (f->mem = malloc(f->size)))
                memcpy(f->mem, img + sh[sx].sh_offset + sy[j].st_value, f->size);
        }
    }
}

static CUresult mod_load(CUmodule *out, const void *image)
{
    fake_mod *m = calloc(1, sizeof *m);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    read_symbols(image, m);
    *out = (CUmodule)m;
    return CUDA_SUCCESS;
}
static CUresult f_ModuleLoadData(CUmodule *m, const void *img) { return mod_load(m, img); }
static CUresult f_ModuleLoadDataEx(CUmodule *m, const void *img, unsigned n, CUjit_option *o, void **v)
{
    (void)n, (void)o, (void)v;
    return mod_load(m, img);
}
static CUresult f_ModuleUnload(CUmodule m)
{
    fake_mod *fm = (fake_mod *)m;
    for (int i = 0; fm && i < fm->nsym; i++) free(fm->sym[i].mem);
    if (fm) free(fm->sym);
    free(fm);
    return CUDA_SUCCESS;
}
static fake_sym *find(CUmodule m, const char *name)
{
    fake_mod *fm = (fake_mod *)m;
    for (int i = 0; fm && i < fm->nsym; i++)
        if (!strcmp(fm->sym[i].name, name)) return &fm->sym[i];
    return NULL;
}
static CUresult f_ModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    fake_sym *s = find(m, name);
    if (!s) return CUDA_ERROR_NOT_FOUND;
    *f = (CUfunction)s;
    return CUDA_SUCCESS;
}
static CUresult f_ModuleGetGlobal(CUdeviceptr *p, size_t *n, CUmodule m, const char *name)
{
    fake_sym *s = find(m, name);
    if (!s) return CUDA_ERROR_NOT_FOUND;
    if (!s->mem && !(s->mem = calloc(1, s->size ? s->size : 1))) return CUDA_ERROR_OUT_OF_MEMORY;
    if (p) *p = (CUdeviceptr)(uintptr_t)s->mem;
    if (n) *n = s->size;
    return CUDA_SUCCESS;
}

/* ---- launches, streams, graphs ---- */

/* One step of a graph, in order: a kernel (its cost) or an event recorded into it. */
typedef struct {
    double cost;
    int ev; /* the event's slot in ev_time; -1: a kernel */
} fake_node;

typedef struct {
    int nlaunch;
    double cost; /* its launches' costs: what a replay advances the clock by */
    int coop;    /* it holds a cooperative launch */
    int nnodes;
    fake_node *nodes; /* what a replay does, in order */
} fake_graph;

static int capturing;
static int captured;
static double captured_cost, clock_now;
static int captured_coop;
static fake_node *cap_nodes; /* the capture's steps so far */
static int cap_n, cap_cap;
static int launching_pdl; /* the launch under way asked for programmatic stream serialization */
static int after_kernel;  /* the last operation queued was a kernel launch (no event, copy or memset since) */
static int the_ctx, handles[4096], nhandles;
static double ev_time[4096]; /* the clock an event read when last recorded (outside a capture, or
                                by the replay of a graph it was recorded into); -1: none */

/* A step appended to the capture (dropped when out of memory: the replay's
 * total cost stays right, only its events' readings are lost). */
static void cap_node(double cost, int ev)
{
    if (cap_n == cap_cap) {
        int cap = cap_cap ? 2 * cap_cap : 64;
        fake_node *n = realloc(cap_nodes, (size_t)cap * sizeof *n);
        if (!n) return;
        cap_nodes = n, cap_cap = cap;
    }
    cap_nodes[cap_n++] = (fake_node){cost, ev};
}

/* A kernel's run time on the fake clock. */
static double cost_of(const char *name)
{
    double c = st.kernel_cost ? st.kernel_cost(name, launching_pdl ? 1 : after_kernel ? 2 : 0) : 0;
    if (c > 0) return c;
    return strncmp(name, "network", 7) ? 1.0 : st.whole_cost > 0 ? st.whole_cost : 1.0;
}

/* The argument values of a launch of a kernel the test asked to record. */
static void record_args(const char *name, void **params)
{
    for (int j = 0; j < 2; j++) {
        if (!st.rec_name[j][0] || strcmp(st.rec_name[j], name) || !params) continue;
        st.rec_count[j]++;
        for (int i = 0; i < st.rec_nargs[j] && i < 64; i++) {
            st.rec_val[j][i] = 0;
            if (i == st.rec_int_at[j]) st.rec_val[j][i] = (unsigned long long)*(const int *)params[i];
            else memcpy(&st.rec_val[j][i], params[i], 8);
        }
    }
}

static CUresult f_LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned sh, CUstream s, void **params, void **extra)
{
    (void)bx, (void)by, (void)bz, (void)sh, (void)s, (void)extra;
    const fake_sym *k = (const fake_sym *)f;
    if (!k || !gx) return CUDA_ERROR_INVALID_VALUE;
    if (st.fail_launches) {
        if (capturing) capturing = 2; /* the capture is invalidated */
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    st.launches++;
    record_args(k->name, params);
    if (st.on_launch) st.on_launch(k->name, params);
    if (capturing) captured++, captured_cost += cost_of(k->name), cap_node(cost_of(k->name), -1);
    else st.kernels_run++, clock_now += cost_of(k->name);
    if (st.nnames < FAKE_MAX_NAMES) {
        st.blocks[st.nnames] = (unsigned long long)gx * gy * gz;
        st.pdl[st.nnames] = 0;
        st.coop[st.nnames] = 0;
        snprintf(st.names[st.nnames++], sizeof st.names[0], "%s", k->name);
    }
    after_kernel = 1;
    return CUDA_SUCCESS;
}
/* cuLaunchKernelEx: as cuLaunchKernel, noting whether programmatic stream
 * serialization was asked for (refused where the device is older than sm_90). */
static CUresult f_LaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    int pdl = 0, coop = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            pdl = c->attrs[i].value.programmaticStreamSerializationAllowed != 0;
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) coop = c->attrs[i].value.cooperative != 0;
    }
    if (pdl && st.cc && st.cc < 90) return CUDA_ERROR_NOT_SUPPORTED;
    if (coop && st.refuse_coop) {
        if (capturing) capturing = 2; /* the capture is invalidated */
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    if (coop && capturing) captured_coop = 1; /* refuse_coop_capture: its graph is not instantiated */
    int at = st.nnames;
    launching_pdl = pdl;
    CUresult r = f_LaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                                c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra);
    launching_pdl = 0;
    if (r == CUDA_SUCCESS && pdl) {
        st.pdl_launches++;
        if (at < FAKE_MAX_NAMES) st.pdl[at] = 1;
    }
    if (r == CUDA_SUCCESS && coop) {
        st.coop_launches++;
        if (at < FAKE_MAX_NAMES) st.coop[at] = 1;
    }
    return r;
}
static CUresult f_StreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
    (void)s, (void)mode;
    if (capturing) return CUDA_ERROR_ILLEGAL_STATE;
    capturing = 1, captured = 0, captured_cost = 0, captured_coop = 0, cap_n = 0, after_kernel = 0;
    st.captures++;
    return CUDA_SUCCESS;
}
static CUresult f_StreamEndCapture(CUstream s, CUgraph *g)
{
    (void)s;
    if (!capturing) return CUDA_ERROR_ILLEGAL_STATE;
    int invalidated = capturing == 2;
    capturing = 0;
    *g = NULL;
    if (invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    fake_graph *fg = calloc(1, sizeof *fg);
    if (!fg) return CUDA_ERROR_OUT_OF_MEMORY;
    fg->nlaunch = captured;
    fg->cost = captured_cost;
    fg->coop = captured_coop;
    if (cap_n && (fg->nodes = malloc((size_t)cap_n * sizeof *fg->nodes))) {
        memcpy(fg->nodes, cap_nodes, (size_t)cap_n * sizeof *fg->nodes);
        fg->nnodes = cap_n;
    }
    *g = (CUgraph)fg;
    return CUDA_SUCCESS;
}
static CUresult f_GraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long flags)
{
    (void)flags;
    if (((fake_graph *)g)->coop && st.refuse_coop_capture) return CUDA_ERROR_NOT_SUPPORTED;
    fake_graph *copy = malloc(sizeof *copy);
    if (!copy) return CUDA_ERROR_OUT_OF_MEMORY;
    *copy = *(fake_graph *)g;
    copy->nodes = NULL, copy->nnodes = 0;
    const fake_graph *from = (const fake_graph *)g;
    if (from->nnodes && (copy->nodes = malloc((size_t)from->nnodes * sizeof *copy->nodes))) {
        memcpy(copy->nodes, from->nodes, (size_t)from->nnodes * sizeof *copy->nodes);
        copy->nnodes = from->nnodes;
    }
    *x = (CUgraphExec)copy;
    st.graphs_live++;
    return CUDA_SUCCESS;
}
static CUresult f_GraphLaunch(CUgraphExec x, CUstream s)
{
    (void)s;
    const fake_graph *fg = (const fake_graph *)x;
    if (st.fail_launches) return CUDA_ERROR_LAUNCH_FAILED;
    st.graph_launches++;
    st.kernels_run += fg->nlaunch;
    after_kernel = 0;
    /* its steps in order: each event recorded into it reads the clock where it stands */
    double start = clock_now;
    for (int i = 0; i < fg->nnodes; i++) {
        if (fg->nodes[i].ev >= 0) ev_time[fg->nodes[i].ev] = clock_now;
        else clock_now += fg->nodes[i].cost;
    }
    clock_now = start + fg->cost;
    return CUDA_SUCCESS;
}
static CUresult f_GraphExecDestroy(CUgraphExec x)
{
    if (x) free(((fake_graph *)x)->nodes);
    free(x);
    st.graphs_live--;
    return CUDA_SUCCESS;
}
static CUresult f_GraphDestroy(CUgraph g)
{
    if (g) free(((fake_graph *)g)->nodes);
    free(g);
    return CUDA_SUCCESS;
}

/* An event's slot in ev_time. */
static int ev_index(CUevent e) { return (int)((int *)(void *)e - handles); }

static CUresult f_EventRecord(CUevent e, CUstream s)
{
    (void)s;
    if (capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* an internal node: no time to read */
    st.event_records++, after_kernel = 0;
    ev_time[ev_index(e)] = clock_now;
    return CUDA_SUCCESS;
}
static CUresult f_EventRecordWithFlags(CUevent e, CUstream s, unsigned flags)
{
    (void)s;
    if (capturing && !(flags & CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    st.event_records++, after_kernel = 0;
    if (!capturing) ev_time[ev_index(e)] = clock_now;
    else cap_node(0, ev_index(e));
    return CUDA_SUCCESS;
}
static CUresult f_EventSynchronize(CUevent e)
{
    (void)e;
    st.host_syncs++;
    return CUDA_SUCCESS;
}
static CUresult f_EventElapsedTime(float *ms, CUevent a, CUevent b)
{
    double ta = ev_time[ev_index(a)], tb = ev_time[ev_index(b)];
    *ms = ta >= 0 && tb >= 0 && tb > ta ? (float)(tb - ta) : 0.001f;
    return CUDA_SUCCESS;
}
static CUresult f_StreamSynchronize(CUstream s)
{
    (void)s;
    st.host_syncs++;
    return CUDA_SUCCESS;
}

/* ---- memory: device pointers are host pointers ---- */

static CUresult f_MemAlloc(CUdeviceptr *p, size_t n)
{
    void *q = calloc(1, n ? n : 1);
    if (!q) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)q;
    st.device_allocs++;
    return CUDA_SUCCESS;
}
static CUresult f_MemFree(CUdeviceptr p)
{
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}
static CUresult f_MemAllocHost(void **p, size_t n)
{
    *p = calloc(1, n ? n : 1);
    if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
    st.host_allocs++;
    for (int i = 0; i < 64; i++)
        if (!st.pinned[i]) {
            st.pinned[i] = *p, st.pinned_bytes[i] = n;
            break;
        }
    return CUDA_SUCCESS;
}
static CUresult f_MemFreeHost(void *p)
{
    for (int i = 0; i < 64; i++)
        if (st.pinned[i] == p) st.pinned[i] = NULL;
    free(p);
    return CUDA_SUCCESS;
}
static CUresult f_MemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
    memcpy((void *)(uintptr_t)d, s, n);
    return CUDA_SUCCESS;
}
static CUresult f_MemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
    memcpy(d, (const void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}
static CUresult f_MemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream x)
{
    (void)x;
    after_kernel = 0;
    st.copies++;
    st.htod_src = s;
    st.htod_bytes = n;
    return f_MemcpyHtoD(d, s, n);
}
static CUresult f_MemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream x)
{
    (void)x;
    after_kernel = 0;
    st.copies++;
    return f_MemcpyDtoH(d, s, n);
}
static CUresult f_MemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream x)
{
    (void)x;
    after_kernel = 0;
    memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}
static CUresult f_MemsetD32(CUdeviceptr d, unsigned v, size_t n)
{
    for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
    return CUDA_SUCCESS;
}
static CUresult f_MemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream x)
{
    (void)x;
    after_kernel = 0;
    return f_MemsetD32(d, v, n);
}
/* 16-bit tensors poisoned (0x7fff: a NaN as f16 and bf16) */
static CUresult f_MemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream x)
{
    (void)x;
    after_kernel = 0;
    for (size_t i = 0; i < n; i++) ((unsigned short *)(uintptr_t)d)[i] = v;
    return CUDA_SUCCESS;
}
static CUresult f_MemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
    st.memset8++, st.memset8_bytes = n;
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
}
static CUresult f_MemGetInfo(size_t *f, size_t *t)
{
    *f = (size_t)1 << 30, *t = (size_t)2 << 30;
    return CUDA_SUCCESS;
}

/* ---- the device ---- */

static CUresult f_DriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}
static CUresult f_DeviceGetCount(int *n)
{
    *n = 1;
    return CUDA_SUCCESS;
}
static CUresult f_DeviceGet(CUdevice *d, int i)
{
    *d = i;
    return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
static CUresult f_DeviceGetName(char *name, int n, CUdevice d)
{
    (void)d;
    snprintf(name, (size_t)n, "fake sm_90");
    return CUDA_SUCCESS;
}
static CUresult f_DeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = (st.cc ? st.cc : 90) / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = (st.cc ? st.cc : 90) % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = st.sms ? st.sms : 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 228 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}
static CUresult f_DeviceTotalMem(size_t *n, CUdevice d)
{
    (void)d;
    *n = (size_t)2 << 30;
    return CUDA_SUCCESS;
}
static CUresult f_PrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    *c = (CUcontext)&the_ctx;
    return CUDA_SUCCESS;
}
static CUcontext current;
static CUresult f_CtxSetCurrent(CUcontext c)
{
    current = c;
    return CUDA_SUCCESS;
}
static CUresult f_CtxGetCurrent(CUcontext *c)
{
    *c = current;
    return CUDA_SUCCESS;
}
static CUresult f_CtxPopCurrent(CUcontext *c)
{
    if (c) *c = current;
    return CUDA_SUCCESS;
}
/* streams and events: distinct non-null handles */
static CUresult handle(void **out)
{
    if (nhandles >= 4096) return CUDA_ERROR_OUT_OF_MEMORY;
    ev_time[nhandles] = -1;
    *out = &handles[nhandles++];
    return CUDA_SUCCESS;
}
static CUresult f_StreamCreate(CUstream *s, unsigned flags)
{
    (void)flags;
    return handle((void **)s);
}
static CUresult f_EventCreate(CUevent *e, unsigned flags)
{
    (void)flags;
    return handle((void **)e);
}
static CUresult f_GetErrorName(CUresult r, const char **s)
{
    (void)r;
    *s = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}
static CUresult f_GetErrorString(CUresult r, const char **s)
{
    (void)r;
    *s = "an error of the fake driver";
    return CUDA_SUCCESS;
}
static CUresult f_Occupancy(int *n, CUfunction f, int threads, size_t shared)
{
    (void)f;
    st.occ_calls++, st.occ_threads = threads, st.occ_shared = shared;
    *n = st.occupancy < 0 ? 0 : st.occupancy ? st.occupancy : 2;
    return CUDA_SUCCESS;
}
/* everything else the runtime asks for: nothing to do, success */
static CUresult f_ok(void) { return CUDA_SUCCESS; }

#define FN(name, fn) {name, (void (*)(void))(fn)}
static const struct {
    const char *name;
    void (*fn)(void);
} table[] = {
    FN("cuDriverGetVersion", f_DriverGetVersion), FN("cuDeviceGetCount", f_DeviceGetCount),
    FN("cuDeviceGet", f_DeviceGet), FN("cuDeviceGetName", f_DeviceGetName),
    FN("cuDeviceGetAttribute", f_DeviceGetAttribute), FN("cuDeviceTotalMem", f_DeviceTotalMem),
    FN("cuDevicePrimaryCtxRetain", f_PrimaryCtxRetain), FN("cuCtxSetCurrent", f_CtxSetCurrent),
    FN("cuCtxGetCurrent", f_CtxGetCurrent), FN("cuCtxPopCurrent", f_CtxPopCurrent),
    FN("cuModuleLoadData", f_ModuleLoadData), FN("cuModuleLoadDataEx", f_ModuleLoadDataEx),
    FN("cuModuleUnload", f_ModuleUnload), FN("cuModuleGetFunction", f_ModuleGetFunction),
    FN("cuModuleGetGlobal", f_ModuleGetGlobal), FN("cuMemAlloc", f_MemAlloc), FN("cuMemFree", f_MemFree),
    FN("cuMemAllocHost", f_MemAllocHost), FN("cuMemFreeHost", f_MemFreeHost), FN("cuMemcpyHtoD", f_MemcpyHtoD),
    FN("cuMemcpyDtoH", f_MemcpyDtoH), FN("cuMemcpyHtoDAsync", f_MemcpyHtoDAsync),
    FN("cuMemcpyDtoHAsync", f_MemcpyDtoHAsync), FN("cuMemcpyDtoDAsync", f_MemcpyDtoDAsync),
    FN("cuMemsetD32", f_MemsetD32), FN("cuMemsetD32Async", f_MemsetD32Async), FN("cuMemsetD8", f_MemsetD8),
    FN("cuMemsetD16Async", f_MemsetD16Async),
    FN("cuMemGetInfo", f_MemGetInfo), FN("cuLaunchKernel", f_LaunchKernel),
    FN("cuLaunchKernelEx", f_LaunchKernelEx), FN("cuStreamCreate", f_StreamCreate),
    FN("cuStreamSynchronize", f_StreamSynchronize), FN("cuEventCreate", f_EventCreate),
    FN("cuEventRecord", f_EventRecord), FN("cuEventRecordWithFlags", f_EventRecordWithFlags),
    FN("cuEventSynchronize", f_EventSynchronize), FN("cuEventElapsedTime", f_EventElapsedTime),
    FN("cuStreamBeginCapture", f_StreamBeginCapture), FN("cuStreamEndCapture", f_StreamEndCapture),
    FN("cuGraphInstantiateWithFlags", f_GraphInstantiateWithFlags), FN("cuGraphLaunch", f_GraphLaunch),
    FN("cuGraphExecDestroy", f_GraphExecDestroy), FN("cuGraphDestroy", f_GraphDestroy),
    FN("cuGetErrorName", f_GetErrorName), FN("cuGetErrorString", f_GetErrorString),
    FN("cuOccupancyMaxActiveBlocksPerMultiprocessor", f_Occupancy),
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *found)
{
    (void)version, (void)flags;
    if (st.no_launch_ex && !strcmp(symbol, "cuLaunchKernelEx")) {
        *pfn = NULL;
        if (found) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    void (*fn)(void) = (void (*)(void))f_ok;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, symbol)) fn = table[i].fn;
    memcpy(pfn, &fn, sizeof fn);
    if (found) *found = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
