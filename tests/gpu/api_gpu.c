/* api_gpu.c — the public API on a GPU (make test-gpu): the CUDA backend gives
 * the CPU backend's predictions through cg_net_run; float input gives the
 * uint8 input's answers, at 300 images a batch and in the small buckets (1 and 8
 * images a batch, where auto first times the launch ways on the batch and a first
 * layer reads the pixels itself: planner.pixel_twin); device pointers on the caller's stream (and on the
 * legacy stream) give the host run's answers bit for bit, across several
 * batches; two networks on one device alternate; and a run queued on the
 * caller's stream overlaps a copy on another stream, shown by timings.
 * Usage: api_gpu SPEC [N] (N images, default 1000). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "convgen.h"
#include "cuda_api.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

/* Predictions that differ only where the reference's top two scores tie. */
static long long real_mismatches(const int *p, const int *ref, const float *ref_scores, long long n, int classes)
{
    long long bad = 0;
    for (long long i = 0; i < n; i++)
        if (p[i] != ref[i] && fabs(ref_scores[i * classes + p[i]] - ref_scores[i * classes + ref[i]]) > 1e-5) bad++;
    return bad;
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "specs/ece408-2017.yaml";
    long long n = argc > 2 ? atoll(argv[2]) : 1000;
    cg_net_options o;
    cg_net_options_init(&o);
    cg_net *cpu = NULL, *gpu = NULL, *gpu2 = NULL;
    CHECK(cg_net_open(spec, NULL, &cpu) == CG_STATUS_OK, "cpu open: %s", cg_net_error(cpu));
    o.backend = CG_BACKEND_CUDA, o.batch = 300; /* several batches per run */
    CHECK(cg_net_open(spec, &o, &gpu) == CG_STATUS_OK, "cuda open: %s", cg_net_error(gpu));
    o.batch = 0;
    CHECK(cg_net_open(spec, &o, &gpu2) == CG_STATUS_OK, "second cuda open: %s", cg_net_error(gpu2));
    int c = 0, h = 0, w = 0, k = 0;
    double scale = 0, offset = 0;
    cg_net_input_shape(gpu, &c, &h, &w), cg_net_classes(gpu, &k), cg_net_input_scaling(gpu, &scale, &offset);
    if (cg_net_error(cpu)[0] || cg_net_error(gpu)[0] || cg_net_error(gpu2)[0] || !k) {
        cg_net_close(cpu), cg_net_close(gpu), cg_net_close(gpu2);
        return cg_test_done("api_gpu");
    }
    size_t img = (size_t)c * h * w, np = (size_t)n * img, ns = (size_t)n * k;
    unsigned char *px = malloc(np);
    float *x = malloc(np * sizeof *x), *s_cpu = malloc(ns * 4), *s_gpu = malloc(ns * 4), *s_f32 = malloc(ns * 4),
          *s_dev = malloc(ns * 4), *s_two = malloc(ns * 4);
    int *p_cpu = malloc(n * 4), *p_gpu = malloc(n * 4), *p_f32 = malloc(n * 4), *p_dev = malloc(n * 4),
        *p_two = malloc(n * 4);
    unsigned long long r = 12345;
    for (size_t i = 0; i < np; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        px[i] = (unsigned char)(r >> 24);
        x[i] = (float)(px[i] * scale + offset);
    }
    cg_input in = {CG_INPUT_U8, n, c, h, w, px}, fin = {CG_INPUT_F32, n, c, h, w, x};
    CHECK(cg_net_run(cpu, &in, p_cpu, s_cpu) == CG_STATUS_OK, "cpu run: %s", cg_net_error(cpu));
    CHECK(cg_net_run(gpu, &in, p_gpu, s_gpu) == CG_STATUS_OK, "cuda run: %s", cg_net_error(gpu));
    CHECK(real_mismatches(p_gpu, p_cpu, s_cpu, n, k) == 0, "cuda = cpu predictions");
    CHECK(max_diff(s_gpu, s_cpu, ns) < 1e-5, "scores within 1e-5: %g", max_diff(s_gpu, s_cpu, ns));
    CHECK(cg_net_run(gpu, &fin, p_f32, s_f32) == CG_STATUS_OK, "cuda f32 run: %s", cg_net_error(gpu));
    CHECK(real_mismatches(p_f32, p_cpu, s_cpu, n, k) == 0 && max_diff(s_f32, s_gpu, ns) < 1e-5,
          "float input: %g", max_diff(s_f32, s_gpu, ns));
    double total = 0;
    CHECK(cg_net_times(gpu, &total, NULL) == CG_STATUS_OK && total > 0, "kernel time %g ms", total);
    /* the small buckets: floats and pixels through networks generated for 1 and 8 images */
    for (int b = 1; b <= 8; b += 7) {
        cg_net *small = NULL;
        o.batch = b;
        long long m = n < 20 ? n : 20;
        CHECK(cg_net_open(spec, &o, &small) == CG_STATUS_OK, "cuda open, batch %d: %s", b, cg_net_error(small));
        cg_input in_m = {CG_INPUT_U8, m, c, h, w, px}, fin_m = {CG_INPUT_F32, m, c, h, w, x};
        if (!cg_net_error(small)[0]) {
            CHECK(cg_net_run(small, &in_m, p_two, s_two) == CG_STATUS_OK && max_diff(s_two, s_cpu, (size_t)m * k) < 1e-5,
                  "batch %d, pixels: %g from the CPU", b, max_diff(s_two, s_cpu, (size_t)m * k));
            CHECK(cg_net_run(small, &fin_m, p_two, s_two) == CG_STATUS_OK && max_diff(s_two, s_cpu, (size_t)m * k) < 1e-5,
                  "batch %d, floats: %g from the CPU", b, max_diff(s_two, s_cpu, (size_t)m * k));
        }
        cg_net_close(small);
    }
    o.batch = 0;

    /* device pointers: the driver's primary context is the one the backend uses */
    cg_cu *cu = NULL;
    cg_err e;
    CHECK(cg_cu_open(&cu, 0, &e) == 0, "driver: %s", e.msg);
    CUdeviceptr din = 0, dx = 0, dpred = 0, dscores = 0, big = 0;
    CUstream st = NULL, other = NULL;
    void *pinned = NULL;
    size_t big_bytes = (size_t)256 << 20;
    int okd = cu && !cu->cuMemAlloc(&din, np) && !cu->cuMemAlloc(&dx, np * 4) && !cu->cuMemAlloc(&dpred, n * 4) &&
              !cu->cuMemAlloc(&dscores, ns * 4) && !cu->cuMemcpyHtoD(din, px, np) &&
              !cu->cuMemcpyHtoD(dx, x, np * 4) && !cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) &&
              !cu->cuStreamCreate(&other, CU_STREAM_NON_BLOCKING) && !cu->cuMemAlloc(&big, big_bytes) &&
              !cu->cuMemAllocHost(&pinned, big_bytes);
    CHECK(okd, "device buffers");
    if (okd) {
        cg_input din_u8 = {CG_INPUT_U8, n, c, h, w, (const void *)(uintptr_t)din};
        cg_input din_f32 = {CG_INPUT_F32, n, c, h, w, (const void *)(uintptr_t)dx};
        int *dp = (int *)(uintptr_t)dpred;
        float *ds = (float *)(uintptr_t)dscores;
        CHECK(cg_net_run_device(gpu, &din_u8, dp, ds, st) == CG_STATUS_OK, "device run: %s", cg_net_error(gpu));
        CHECK(!cu->cuStreamSynchronize(st) && !cu->cuMemcpyDtoH(p_dev, dpred, n * 4) &&
                  !cu->cuMemcpyDtoH(s_dev, dscores, ns * 4),
              "device results");
        CHECK(!memcmp(p_dev, p_gpu, n * 4) && !memcmp(s_dev, s_gpu, ns * 4), "device run = host run, bit for bit");
        CHECK(cg_net_run_device(gpu, &din_f32, dp, ds, NULL) == CG_STATUS_OK, "legacy stream f32: %s",
              cg_net_error(gpu));
        CHECK(!cu->cuCtxSynchronize() && !cu->cuMemcpyDtoH(p_dev, dpred, n * 4) &&
                  !cu->cuMemcpyDtoH(s_dev, dscores, ns * 4),
              "device f32 results");
        CHECK(!memcmp(p_dev, p_f32, n * 4) && !memcmp(s_dev, s_f32, ns * 4), "device f32 = host f32, bit for bit");
        /* two networks on one device, alternately */
        CHECK(cg_net_run(gpu2, &in, p_two, s_two) == CG_STATUS_OK && !memcmp(p_two, p_gpu, n * 4), "second net");
        CHECK(cg_net_run_device(gpu2, &din_u8, NULL, ds, st) == CG_STATUS_USAGE, "pred NULL on device");

        /* overlap: a 256 MiB host-to-device copy on another stream, alone, the
         * network alone, then both queued together */
        double t0 = now_ms();
        cu->cuMemcpyHtoDAsync(big, pinned, big_bytes, other), cu->cuStreamSynchronize(other);
        double copy_ms = now_ms() - t0;
        t0 = now_ms();
        cg_net_run_device(gpu2, &din_u8, dp, ds, st), cu->cuStreamSynchronize(st);
        double net_ms = now_ms() - t0;
        t0 = now_ms();
        cu->cuMemcpyHtoDAsync(big, pinned, big_bytes, other);
        cg_net_run_device(gpu2, &din_u8, dp, ds, st);
        cu->cuStreamSynchronize(st), cu->cuStreamSynchronize(other);
        double both_ms = now_ms() - t0;
        printf("overlap: copy %.3f ms, network %.3f ms, both %.3f ms (serial would be %.3f)\n", copy_ms, net_ms,
               both_ms, copy_ms + net_ms);
    }
    if (cu) {
        if (din) cu->cuMemFree(din);
        if (dx) cu->cuMemFree(dx);
        if (dpred) cu->cuMemFree(dpred);
        if (dscores) cu->cuMemFree(dscores);
        if (big) cu->cuMemFree(big);
        if (pinned) cu->cuMemFreeHost(pinned);
        if (st) cu->cuStreamDestroy(st);
        if (other) cu->cuStreamDestroy(other);
    }
    cg_net_close(gpu), cg_net_close(gpu2), cg_net_close(cpu);
    cg_cu_close(cu);
    free(px), free(x), free(s_cpu), free(s_gpu), free(s_f32), free(s_dev), free(s_two);
    free(p_cpu), free(p_gpu), free(p_f32), free(p_dev), free(p_two);
    return cg_test_done("api_gpu");
}
