/* test_nvrtc.c — the driver loader's messages, and NVRTC: every supported arch
 * to cubin and PTX, ptxas numbers (spills), compile errors, arch choice, a kernel
 * taking a tensor map as the templates declare one. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_api.h"
#include "lua_host.h"
#include "tma_box.h"
/* By path: with the Makefile's -I order, a bare "nvrtc.h" from tests/ finds
 * CUDA's own <nvrtc.h> (-I$(CUDA_HOME)/include comes before -Iruntime). */
#include "../runtime/cuda/nvrtc.h"

static const char *SIMPLE =
    "__constant__ float cg_test_w[64];\n"
    "extern \"C\" __global__ void simple(float *x, int n)\n"
    "{\n"
    "    __shared__ float s[64];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    s[threadIdx.x & 63] = i < n ? x[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    if (i < n) x[i] = s[(threadIdx.x + 1) & 63] * cg_test_w[i & 63];\n"
    "}\n";

/* 96 values live at once under a 64-register cap (1024 threads per block):
 * ptxas must spill. */
static const char *SPILLS =
    "extern \"C\" __global__ void __launch_bounds__(1024, 1) spills(float *out, const float *in)\n"
    "{\n"
    "    float acc[96];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 96; i++) acc[i] = in[i * 1024 + threadIdx.x];\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < 8; r++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < 96; i++) acc[i] = acc[i] * acc[(i + r) % 96] + 1.0f;\n"
    "    float s = 0.0f;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 96; i++) s += acc[i];\n"
    "    out[threadIdx.x] = s;\n"
    "}\n";

static const char *BROKEN =
    "extern \"C\" __global__ void broken(float *x)\n"
    "{\n"
    "    x[0] = not_declared_anywhere;\n"
    "}\n";

static const char *ADD =
    "extern \"C\" __global__ void add_index(float *x, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] += 0.5f * i;\n"
    "}\n";

static CUresult fake_alloc(void **p, size_t n)
{
    (void)p, (void)n;
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* CG_CU's message: call text without the owner, then the code. */
static void test_cu_check(void)
{
    struct {
        CUresult (*cuMemAllocFake)(void **, size_t);
    } s = {fake_alloc}, *cu = &s;
    void *p = NULL;
    cg_err e = {""};
    CHECK(CG_CU(&e, cu->cuMemAllocFake(&p, 64)) == -1, "failing call must return -1");
    CHECK(strncmp(e.msg, "cuMemAllocFake(&p, 64): ", 24) == 0, "message: %s", e.msg);
    CHECK(strstr(e.msg, "CUDA_ERROR_OUT_OF_MEMORY") || strstr(e.msg, "CUDA error 2"),
          "message names the code: %s", e.msg);
    CHECK(CG_CU(&e, CUDA_SUCCESS) == 0, "success is 0");
}

/* With a GPU: NVRTC's image for this device loads and runs. */
static void test_launch(cg_cu *cu, cg_nvrtc *nv)
{
    int arch = 0, ptx = 0, n = 1000;
    cg_err e = {""};
    CHECK(cg_nvrtc_pick_arch(nv, cu->cc, &arch, &ptx) == 0, "arch for cc %d", cu->cc);
    CHECK(cg_nvrtc_check_driver(nv, cu->driver_version, ptx, &e) == 0, "%s", e.msg);
    cg_buf img;
    if (cg_nvrtc_compile(nv, ADD, "add_index.cu", arch, ptx, &img, NULL, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    CUdeviceptr d = 0;
    float h[1000];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    void *args[] = {&d, &n};
    int bad = CG_CU(&e, cu->cuModuleLoadData(&mod, img.data)) ||
              CG_CU(&e, cu->cuModuleGetFunction(&fn, mod, "add_index")) ||
              CG_CU(&e, cu->cuMemAlloc(&d, sizeof h)) ||
              CG_CU(&e, cu->cuMemcpyHtoD(d, h, sizeof h)) ||
              CG_CU(&e, cu->cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args,
                                           NULL)) ||
              CG_CU(&e, cu->cuCtxSynchronize()) || CG_CU(&e, cu->cuMemcpyDtoH(h, d, sizeof h));
    CHECK(!bad, "%s", e.msg);
    int wrong = 0;
    for (int i = 0; i < n && !bad; i++) wrong += h[i] != 1.5f * i;
    CHECK(!bad && wrong == 0, "%d wrong results from sm_%d%s", wrong, arch, ptx ? " PTX" : "");
    CUdeviceptr big = 0;
    CHECK(CG_CU(&e, cu->cuMemAlloc(&big, (size_t)1 << 62)) != 0, "4 EiB must fail");
    CHECK_CONTAINS(e.msg, "cuMemAlloc(&big, (size_t)1 << 62): CUDA_ERROR_");
    if (d) cu->cuMemFree(d);
    if (mod) cu->cuModuleUnload(mod);
    cg_buf_free(&img);
}

static void test_tensor_map_launch(cg_cu *cu, cg_nvrtc *nv);

/* Without libcuda.so.1 (CI, this machine) the message says so; with one, the
 * device facts are filled in. */
static void test_cu_open(cg_nvrtc *nv)
{
    cg_cu *cu = NULL;
    cg_err e = {""};
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int rc = cg_cu_open(&cu, 0, &e);
    if (!h) {
        CHECK(rc != 0 && cu == NULL, "cg_cu_open must fail without a driver");
        CHECK(strncmp(e.msg, "no CUDA driver (libcuda.so.1 not found: ", 40) == 0,
              "message: %s", e.msg);
        CHECK(!strchr(e.msg, '\n'), "one line");
        return;
    }
    if (rc) { /* a driver but no usable device is a valid outcome; it must say so */
        printf("note: %s\n", e.msg);
        CHECK(strstr(e.msg, "CUDA driver") != NULL, "message: %s", e.msg);
        return;
    }
    printf("note: %s, cc %d, %d SMs, driver %d\n", cu->name, cu->cc, cu->sm_count,
           cu->driver_version);
    CHECK(cu->cc >= 50 && cu->sm_count > 0 && cu->total_mem > 0 && cu->name[0],
          "device facts filled");
    CHECK(CG_CU(&e, cu->cuCtxSynchronize()) == 0, "cuCtxSynchronize: %s", e.msg);
    if (nv) test_launch(cu, nv);
    if (nv && cu->cc >= 90) test_tensor_map_launch(cu, nv);
    cg_cu *bad = NULL;
    CHECK(cg_cu_open(&bad, 999, &e) != 0, "device 999 must not exist");
    CHECK_CONTAINS(e.msg, "CUDA device 999 requested");
    cg_cu_close(cu);
}

/* The ptxas log parser on text captured from ptxas 13.0 (sm_75), including a
 * non-inlined callee whose spills count in the totals only. */
static void test_parse_log(void)
{
    const char *log =
        "ptxas info    : 0 bytes gmem, 400 bytes cmem[3]\n"
        "ptxas info    : Function properties for helper\n"
        "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'simple' for 'sm_75'\n"
        "ptxas info    : Function properties for simple\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 9 registers, used 1 barriers, 256 bytes smem, 364 bytes cmem[0]\n"
        "ptxas info    : Compile time = 6.608 ms\n"
        "ptxas info    : Compiling entry function 'regs' for 'sm_75'\n"
        "ptxas info    : Function properties for regs\n"
        "ptxas         .     1080 bytes stack frame, 2052 bytes spill stores, 2068 bytes spill "
        "loads\n"
        "ptxas info    : Used 64 registers, used 0 barriers, 1080 bytes cumulative stack size, "
        "368 bytes cmem[0]\n";
    cg_nvrtc_stats st;
    memset(&st, 0, sizeof st);
    strcpy(st.options, "kept");
    cg_nvrtc_parse_log(log, &st);
    CHECK(st.known == 1 && st.nfuncs == 2, "known %d nfuncs %d", st.known, st.nfuncs);
    CHECK(!strcmp(st.options, "kept"), "options kept");
    CHECK(!strcmp(st.f[0].name, "simple") && st.f[0].registers == 9 && st.f[0].barriers == 1 &&
              st.f[0].smem == 256 && st.f[0].spill_stores == 0 && st.f[0].stack == 0,
          "simple: %s regs %d bar %d smem %ld", st.f[0].name, st.f[0].registers,
          st.f[0].barriers, st.f[0].smem);
    CHECK(!strcmp(st.f[1].name, "regs") && st.f[1].registers == 64 &&
              st.f[1].spill_stores == 2052 && st.f[1].spill_loads == 2068 && st.f[1].stack == 1080,
          "regs: %d %ld %ld %ld", st.f[1].registers, st.f[1].spill_stores, st.f[1].spill_loads,
          st.f[1].stack);
    CHECK(st.registers == 64 && st.spill_stores == 2060 && st.spill_loads == 2072 &&
              st.stack == 1080 && st.smem == 256 && st.cmem == 400,
          "totals: regs %d ss %ld sl %ld stack %ld smem %ld cmem %ld", st.registers,
          st.spill_stores, st.spill_loads, st.stack, st.smem, st.cmem);
    cg_nvrtc_parse_log("", &st);
    CHECK(st.known == 0 && st.nfuncs == 0, "empty log: nothing known");
}

static const cg_nvrtc_func_stats *func(const cg_nvrtc_stats *st, const char *name)
{
    for (int i = 0; i < st->nfuncs; i++)
        if (!strcmp(st->f[i].name, name)) return &st->f[i];
    return NULL;
}

/* Every arch NVRTC supports from sm_75 up, to cubin and to PTX. */
static void test_all_archs(cg_nvrtc *nv)
{
    int n = 0;
    const int *archs = cg_nvrtc_archs(nv, &n);
    CHECK(n > 0, "NVRTC lists archs");
    int built = 0;
    for (int i = 0; i < n; i++) {
        if (archs[i] < 75) continue;
        cg_buf out, log;
        cg_nvrtc_stats st;
        cg_err e = {""};
        int rc = cg_nvrtc_compile(nv, SIMPLE, "simple.cu", archs[i], 0, &out, &log, &st, &e);
        CHECK(rc == 0, "sm_%d: %s", archs[i], e.msg);
        if (rc == 0) {
            CHECK(out.len > 64 && !memcmp(out.data, "\177ELF", 4), "sm_%d: cubin is ELF",
                  archs[i]);
            const cg_nvrtc_func_stats *f = func(&st, "simple");
            CHECK(st.known && f && f->registers > 0 && f->spill_stores == 0 &&
                      f->spill_loads == 0 && f->stack == 0 && f->smem == 256,
                  "sm_%d: stats known %d regs %d smem %ld", archs[i], st.known,
                  f ? f->registers : -1, f ? f->smem : -1);
            CHECK(st.spill_stores == 0 && st.spill_loads == 0, "sm_%d: no spills", archs[i]);
            char opts[CG_NVRTC_OPTS_MAX];
            CHECK(!strcmp(st.options, cg_nvrtc_options(archs[i], 0, opts, sizeof opts)),
                  "options: %s", st.options);
            built++;
        }
        cg_buf_free(&out), cg_buf_free(&log);

        rc = cg_nvrtc_compile(nv, SIMPLE, "simple.cu", archs[i], 1, &out, NULL, &st, &e);
        CHECK(rc == 0, "compute_%d: %s", archs[i], e.msg);
        if (rc == 0) {
            char target[32];
            snprintf(target, sizeof target, ".target sm_%d", archs[i]);
            CHECK(strstr(out.data, target) && strstr(out.data, ".entry simple"),
                  "compute_%d: PTX names its target and entry", archs[i]);
            CHECK(strlen(out.data) == out.len, "PTX length excludes the NUL");
            CHECK(st.known == 0, "no ptxas numbers for PTX");
            char opts[CG_NVRTC_OPTS_MAX];
            CHECK(!strcmp(st.options, cg_nvrtc_options(archs[i], 1, opts, sizeof opts)) &&
                      !strstr(st.options, "ptxas"),
                  "PTX options: %s", st.options);
        }
        cg_buf_free(&out);
    }
    CHECK(built >= 3, "built %d archs", built);
}

/* A kernel that spills reports it; the error path returns the log. */
static void test_spills_and_errors(cg_nvrtc *nv)
{
    int n = 0;
    const int *archs = cg_nvrtc_archs(nv, &n);
    int newest = archs[n - 1], oldest = 75;
    int pick[2] = {oldest, newest};
    for (int k = 0; k < 2; k++) {
        cg_buf out, log;
        cg_nvrtc_stats st;
        cg_err e = {""};
        int rc = cg_nvrtc_compile(nv, SPILLS, "spills.cu", pick[k], 0, &out, &log, &st, &e);
        CHECK(rc == 0, "spills sm_%d: %s", pick[k], e.msg);
        const cg_nvrtc_func_stats *f = func(&st, "spills");
        CHECK(f && f->spill_stores > 0 && f->spill_loads > 0 && f->stack > 0 &&
                  st.spill_stores >= f->spill_stores && f->registers <= 64,
              "sm_%d: spill stores %ld loads %ld stack %ld regs %d", pick[k],
              f ? f->spill_stores : -1, f ? f->spill_loads : -1, f ? f->stack : -1,
              f ? f->registers : -1);
        if (!f || f->spill_stores <= 0) printf("the log was:\n%s\n", log.data);
        cg_buf_free(&out), cg_buf_free(&log);
    }

    cg_buf out, log;
    cg_err e = {""};
    int rc = cg_nvrtc_compile(nv, BROKEN, "broken.cu", 90, 0, &out, &log, NULL, &e);
    CHECK(rc != 0, "an undeclared name must fail");
    CHECK_CONTAINS(e.msg, "broken.cu: NVRTC");
    CHECK_CONTAINS(e.msg, "--gpu-architecture=sm_90a -std=c++17");
    CHECK_CONTAINS(e.msg, "broken.cu(3)");
    CHECK(!strchr(e.msg, '\n'), "one line");
    CHECK_CONTAINS(log.data, "broken.cu(3): error");
    CHECK_CONTAINS(log.data, "not_declared_anywhere");
    CHECK(out.len == 0, "no image on failure");
    cg_buf_free(&out), cg_buf_free(&log);
}

/* A kernel taking a tensor map as common.kernel_head declares one (templates/lib/common.lua:
 * TMAP_TYPE by value, __grid_constant__) and copying one box (64, 8, 4, 1) of a 4D tensor
 * with the bulk tensor copy engine on an mbarrier, from start (0, x0, y0, n0), into out as
 * it landed. Its source into src (cap bytes): 0, or -1 where Lua fails. */
static int tmap_source(char *src, size_t cap)
{
    char type[1024];
    if (tma_code(type, sizeof type, 0)) return -1;
    snprintf(src, cap,
             "%s"
             "extern \"C\" __global__ void __launch_bounds__(128, 1)\n"
             "box(const __grid_constant__ cg_tmap tm_in, unsigned short *out, int x0, int y0, int n0)\n"
             "{\n"
             "    __shared__ __align__(1024) unsigned short s[64 * 8 * 4];\n"
             "    __shared__ __align__(8) unsigned long long bar;\n"
             "    unsigned b = (unsigned)__cvta_generic_to_shared(&bar), d = (unsigned)__cvta_generic_to_shared(s);\n"
             "    if (threadIdx.x == 0) {\n"
             "        asm volatile(\"mbarrier.init.shared::cta.b64 [%%0], 1;\" :: \"r\"(b));\n"
             "        asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
             "    }\n"
             "    __syncthreads();\n"
             "    if (threadIdx.x == 0) {\n"
             "        asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;\" :: \"r\"(b), \"r\"(4096) : \"memory\");\n"
             "        asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes \"\n"
             "                     \"[%%0], [%%1, {%%2, %%3, %%4, %%5}], [%%6];\"\n"
             "                     :: \"r\"(d), \"l\"(&tm_in), \"r\"(0), \"r\"(x0), \"r\"(y0), \"r\"(n0), \"r\"(b) : \"memory\");\n"
             "    }\n"
             "    asm volatile(\"{\\n .reg .pred p;\\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%%0], 0;\\n @!p bra W;\\n}\" :: \"r\"(b) : \"memory\");\n"
             "    for (int i = threadIdx.x; i < 64 * 8 * 4; i += blockDim.x) out[i] = s[i];\n"
             "}\n",
             type);
    return 0;
}

/* NVRTC builds that kernel for sm_90 (as sm_90a) without spills; and one calling each of
 * common.tma_helpers()'s copies (ranks 1 to 5) and mbarrier helpers, twice (their asm's
 * labels local to each use). */
static void test_tensor_map_kernel(cg_nvrtc *nv)
{
    char src[4096];
    if (tmap_source(src, sizeof src)) return;
    cg_buf out, log;
    cg_nvrtc_stats st;
    cg_err e = {""};
    int rc = cg_nvrtc_compile(nv, src, "box.cu", 90, 0, &out, &log, &st, &e);
    CHECK(rc == 0 && out.len > 0 && st.spill_stores == 0, "a kernel taking a tensor map builds for sm_90a: %s",
          rc ? e.msg : "");
    if (!rc) cg_buf_free(&out), cg_buf_free(&log);
    static char code[12288], all[16384];
    if (tma_code(code, sizeof code, 1)) return;
    snprintf(all, sizeof all,
             "%s"
             "extern \"C\" __global__ void __launch_bounds__(128, 1)\n"
             "ranks(const __grid_constant__ cg_tmap t1, const __grid_constant__ cg_tmap t5, float *out, int n)\n"
             "{\n"
             "    __shared__ __align__(1024) unsigned short s[8192];\n"
             "    __shared__ __align__(8) unsigned long long bar[2];\n"
             "    if (threadIdx.x == 0) { cg_mbar_init(bar, 1); cg_mbar_init(bar + 1, 1); cg_mbar_fence_init(); }\n"
             "    __syncthreads();\n"
             "    for (int k = 0; k < 2; k++) {\n"
             "        if (threadIdx.x == 0) {\n"
             "            cg_mbar_expect_tx(bar + k, 5 * 1024);\n"
             "            cg_tma_load_1d(s, CG_TMAP(t1), k, bar + k);\n"
             "            cg_tma_load_2d(s + 512, CG_TMAP(t1), k, 1, bar + k);\n"
             "            cg_tma_load_3d(s + 1024, CG_TMAP(t1), k, 1, 2, bar + k);\n"
             "            cg_tma_load_4d(s + 1536, CG_TMAP(t5), k, 1, 2, 3, bar + k);\n"
             "            cg_tma_load_5d(s + 2048, CG_TMAP(t5), k, 1, 2, 3, n, bar + k);\n"
             "        }\n"
             "        cg_mbar_wait(bar + k, 0);\n"
             "        out[k * 128 + threadIdx.x] = (float)s[threadIdx.x * 7];\n"
             "        if (k) cg_mbar_arrive(bar);\n"
             "    }\n"
             "}\n",
             code);
    rc = cg_nvrtc_compile(nv, all, "ranks.cu", 90, 0, &out, &log, &st, &e);
    CHECK(rc == 0 && out.len > 0, "the copies of ranks 1 to 5 and the mbarrier helpers build for sm_90a: %s",
          rc ? e.msg : "");
    if (!rc) cg_buf_free(&out), cg_buf_free(&log);
}

/* With a GPU of cc 9.0 or newer: the runtime's cg_map_encode over a channels-last bf16
 * tensor (64 channels x 6 columns x 5 rows x 3 images, map:in:64.6.5.n:64.8.4.1:128, as a
 * convolution's input would be described), and the kernel above copying the boxes of
 * tests/tma_box.h: each element where the 128-byte swizzle puts it, zeros outside the
 * tensor. (Passed on an H200, driver 580.159.04, 2026-12-02: `./build/tests/test_nvrtc`
 * there, 182 checks.) */
static void test_tensor_map_launch(cg_cu *cu, cg_nvrtc *nv)
{
    char src[4096];
    int arch = 0, ptx = 0;
    cg_err e = {""};
    if (tmap_source(src, sizeof src) || cg_nvrtc_pick_arch(nv, cu->cc, &arch, &ptx)) return;
    cg_buf img;
    if (cg_nvrtc_compile(nv, src, "box.cu", arch, ptx, &img, NULL, NULL, &e)) {
        CHECK(0, "%s", e.msg);
        return;
    }
    static unsigned short h[TMA_N * TMA_H * TMA_W * TMA_C], got[TMA_BOX];
    for (int i = 0; i < TMA_N * TMA_H * TMA_W * TMA_C; i++) h[i] = (unsigned short)(i % 65521 + 1);
    cg_mmap mp = {CG_ARG_IN, 4, {TMA_C, TMA_W, TMA_H, 0}, {64, 8, 4, 1}, 128};
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    CUdeviceptr d = 0, o = 0;
    CUtensorMap map;
    int bad = CG_CU(&e, cu->cuModuleLoadData(&mod, img.data)) || CG_CU(&e, cu->cuModuleGetFunction(&fn, mod, "box")) ||
              CG_CU(&e, cu->cuMemAlloc(&d, sizeof h)) || CG_CU(&e, cu->cuMemAlloc(&o, sizeof got)) ||
              CG_CU(&e, cu->cuMemcpyHtoD(d, h, sizeof h)) ||
              cg_map_encode(cu, "box", &mp, CG_DT_BF16, d, TMA_N, &map, &e);
    CHECK(!bad, "tensor map set up: %s", e.msg);
    for (size_t t = 0; t < sizeof tma_starts / sizeof tma_starts[0] && !bad; t++) {
        int x0 = tma_starts[t][0], y0 = tma_starts[t][1], n0 = tma_starts[t][2];
        void *args[] = {&map, &o, &x0, &y0, &n0};
        if (CG_CU(&e, cu->cuMemsetD16Async(o, 0xffff, TMA_BOX, NULL)) ||
            CG_CU(&e, cu->cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL)) ||
            CG_CU(&e, cu->cuCtxSynchronize()) || CG_CU(&e, cu->cuMemcpyDtoH(got, o, sizeof got))) {
            CHECK(0, "box at (0, %d, %d, %d): %s", x0, y0, n0, e.msg);
            break;
        }
        int wrong = tma_box_wrong(got, h, x0, y0, n0);
        CHECK(wrong == 0, "box at (0, %d, %d, %d): %d of %d elements wrong", x0, y0, n0, wrong, TMA_BOX);
    }
    if (d) cu->cuMemFree(d);
    if (o) cu->cuMemFree(o);
    if (mod) cu->cuModuleUnload(mod);
    cg_buf_free(&img);
}

static void test_pick_and_driver(cg_nvrtc *nv)
{
    int n = 0, arch = 0, ptx = -1;
    const int *archs = cg_nvrtc_archs(nv, &n);
    CHECK(cg_nvrtc_pick_arch(nv, 90, &arch, &ptx) == 0 && arch == 90 && ptx == 0,
          "cc 90 -> sm_90 (got %d ptx %d)", arch, ptx);
    CHECK(cg_nvrtc_pick_arch(nv, 999, &arch, &ptx) == 0 && arch == archs[n - 1] && ptx == 1,
          "a future device gets PTX of the newest arch (got %d ptx %d)", arch, ptx);
    /* An arch NVRTC lacks between two it has: PTX of the one below. */
    for (int i = 1; i < n; i++)
        if (archs[i] - archs[i - 1] > 1) {
            int cc = archs[i - 1] + 1;
            CHECK(cg_nvrtc_pick_arch(nv, cc, &arch, &ptx) == 0 && arch == archs[i - 1] && ptx,
                  "cc %d -> compute_%d (got %d ptx %d)", cc, archs[i - 1], arch, ptx);
            break;
        }
    CHECK(cg_nvrtc_pick_arch(nv, 30, &arch, &ptx) == -1, "cc 3.0 is older than any arch");

    int v = cg_nvrtc_version(nv);
    cg_err e = {""};
    CHECK(v >= 11020, "version %d", v);
    CHECK(cg_nvrtc_check_driver(nv, v, 0, &e) == 0, "same version loads cubins");
    CHECK(cg_nvrtc_check_driver(nv, v, 1, &e) == 0, "same version loads PTX");
    CHECK(cg_nvrtc_check_driver(nv, (v / 1000 + 1) * 1000, 1, &e) == 0, "newer driver is fine");
    CHECK(cg_nvrtc_check_driver(nv, (v / 1000 - 1) * 1000 + 40, 0, &e) != 0,
          "an older major driver cannot load cubins");
    CHECK_CONTAINS(e.msg, "install an NVIDIA driver");
}

/* The one line quoted from a compiler log. */
static void test_first_error(void)
{
    char out[64];
    cg_log_first_error("\nnote: a\nk.cu(3): error: bad thing\nmore\n", out, sizeof out);
    CHECK(!strcmp(out, "k.cu(3): error: bad thing"), "the error line: %s", out);
    cg_log_first_error("\n\nfirst words\nsecond\n", out, sizeof out);
    CHECK(!strcmp(out, "first words"), "else the first non-empty line: %s", out);
    cg_log_first_error("", out, sizeof out);
    CHECK(!strcmp(out, "(empty log)"), "empty: %s", out);
    cg_log_first_error("error: a very long line that will not fit in the small buffer given", out, 16);
    CHECK(strlen(out) == 15, "cut to fit: %s", out);
}

int main(void)
{
    test_cu_check();
    test_parse_log();
    char opts[CG_NVRTC_OPTS_MAX];
    CHECK(!strcmp(cg_nvrtc_options(90, 0, opts, sizeof opts),
                  "--gpu-architecture=sm_90a -std=c++17 --fmad=true --ftz=false --prec-div=true "
                  "--prec-sqrt=true --ptxas-options=-O3 --ptxas-options=-v"),
          "options: %s", opts);
    /* only sm_90 cubins are arch-specific (wgmma); PTX and other archs are not */
    CHECK(!strncmp(cg_nvrtc_options(90, 1, opts, sizeof opts), "--gpu-architecture=compute_90 ", 30),
          "PTX for 90: %s", opts);
    CHECK(!strncmp(cg_nvrtc_options(80, 0, opts, sizeof opts), "--gpu-architecture=sm_80 ", 25), "sm_80: %s", opts);
    CHECK(!strncmp(cg_nvrtc_options(100, 0, opts, sizeof opts), "--gpu-architecture=sm_100 ", 26), "sm_100: %s",
          opts);
    CHECK(!strcmp(cg_nvrtc_options(120, 1, opts, sizeof opts),
                  "--gpu-architecture=compute_120 -std=c++17 --fmad=true --ftz=false "
                  "--prec-div=true --prec-sqrt=true"),
          "PTX options (no ptxas): %s", opts);
    test_first_error();

    cg_nvrtc *nv = NULL;
    cg_err e = {""};
    int have_nvrtc = cg_nvrtc_open(&nv, &e) == 0;
    test_cu_open(have_nvrtc ? nv : NULL);
    if (!have_nvrtc) {
        /* No toolkit on this machine: the message must say so plainly. */
        printf("skip: NVRTC tests: %s\n", e.msg);
        CHECK_CONTAINS(e.msg, "no NVRTC (libnvrtc.so.13 not found");
        return cg_test_done("nvrtc");
    }
    test_all_archs(nv);
    test_spills_and_errors(nv);
    test_pick_and_driver(nv);
    test_tensor_map_kernel(nv);
    cg_nvrtc_close(nv);
    return cg_test_done("nvrtc");
}
