/* jit.c — one kernel through NVRTC and the cubin cache (see jit.h). */
#include "jit.h"
#include "cache.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int cg_jit_compile(cg_nvrtc *nv, int cc, int driver_version, const cg_gen_kernel *k, int use_cache,
                   cg_buf *image, cg_buf *log, cg_jit_info *info, cg_err *e)
{
    memset(info, 0, sizeof *info);
    int arch, as_ptx;
    if (cg_nvrtc_pick_arch(nv, cc, &arch, &as_ptx))
        return cg_fail(e, "the device is sm_%d, older than anything this NVRTC compiles for", cc);
    if (cg_nvrtc_check_driver(nv, driver_version, as_ptx, e)) return -1;
    snprintf(info->arch, sizeof info->arch, as_ptx ? "compute_%d (PTX)" : "sm_%d", arch);
    char dir[CG_PATH_MAX] = "", opts[CG_NVRTC_OPTS_MAX];
    cg_err ce;
    if (use_cache && cg_cache_dir(dir, sizeof dir, &ce)) {
        snprintf(info->note, sizeof info->note, "%.200s", ce.msg);
        use_cache = 0;
    }
    cg_nvrtc_options(arch, as_ptx, opts, sizeof opts);
    /* the same key as the network's JIT path (runtime/gpu.c), so entries are shared */
    cg_cache_key key;
    cg_cache_key_make(&key, k->source, k->source_len, opts, k->tpl, cg_nvrtc_version(nv), driver_version, cc);
    double t0 = now_ms();
    cg_buf_free(image);
    if (use_cache) {
        char why[128] = "";
        info->cache_hit = cg_cache_get(dir, &key, image, why) == 1;
        if (!info->cache_hit && why[0] && strcmp(why, "no entry"))
            snprintf(info->note, sizeof info->note, "%.100s: %.120s", k->file, why);
    }
    if (!info->cache_hit) {
        cg_buf scratch;
        cg_buf_init(&scratch);
        int rc = cg_nvrtc_compile(nv, k->source, k->file, arch, as_ptx, image, log ? log : &scratch, NULL, e);
        cg_buf_free(&scratch);
        if (rc) return -1;
        cg_err w;
        int put = use_cache ? cg_cache_put(dir, &key, image->data, image->len, &w) : 0;
        if (put < 0) return cg_fail(e, "%s", w.msg);
        if (put && !info->note[0]) snprintf(info->note, sizeof info->note, "%.200s", w.msg);
    }
    info->ms = now_ms() - t0;
    return 0;
}
