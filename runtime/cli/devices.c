/* devices.c — the GPUs of --devices and their figures (see devices.h). */
#include "devices.h"
#include "cli.h"
#include "net_internal.h"

#include <stdlib.h>
#include <string.h>

/* One entry of the list, "0".."1023": its index, or -1. */
static int device_index(const char *text, size_t len)
{
    if (len == 0 || len > 4) return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        v = v * 10 + (text[i] - '0');
    }
    return v <= 1023 ? v : -1;
}

int cg_devices_parse(const char *text, cg_devices *d, cg_err *e)
{
    memset(d, 0, sizeof *d);
    if (!strcmp(text, "all")) return d->all = 1, 0;
    if (!*text) return cg_fail(e, "--devices expects GPU indices like 0,1, or all; got ''"), CG_EXIT_USAGE;
    for (const char *p = text;; p++) {
        size_t len = strcspn(p, ",");
        int id = device_index(p, len);
        if (!len)
            return cg_fail(e, "--devices %s: an empty entry (GPU indices like 0,1, or all)", text), CG_EXIT_USAGE;
        if (id < 0)
            return cg_fail(e, "--devices %s: '%.*s' is not a GPU index (0 to 1023)", text, (int)(len < 32 ? len : 32),
                           p), CG_EXIT_USAGE;
        for (int i = 0; i < d->k; i++)
            if (d->id[i] == id) return cg_fail(e, "--devices %s: GPU %d listed twice", text, id), CG_EXIT_USAGE;
        if (d->k == CG_SHARDS_MAX)
            return cg_fail(e, "--devices %s: at most %d GPUs", text, CG_SHARDS_MAX), CG_EXIT_USAGE;
        d->id[d->k++] = id;
        p += len;
        if (!*p) return 0;
    }
}

int cg_devices_probe(cg_devices *d, cg_err *e)
{
    char why[512];
    if (d->all) {
        int count = 0;
        if (cg_cuda_device_count(&count, why, sizeof why))
            return cg_fail(e, "--devices all: %s", why), CG_EXIT_DEVICE;
        d->k = count < CG_SHARDS_MAX ? count : CG_SHARDS_MAX;
        for (int i = 0; i < d->k; i++) d->id[i] = i;
    }
    for (int i = 0; i < d->k; i++)
        if (cg_cuda_probe(d->id[i], why, sizeof why))
            return cg_fail(e, "--devices: GPU %d: %s", d->id[i], why), CG_EXIT_DEVICE;
    return 0;
}

void cg_devices_fail(const cg_devices *d, cg_net *const *nets, int failed, cg_err *e)
{
    if (failed < 0 || failed >= d->k) return; /* e already says what was wrong */
    char msg[CG_ERR_MAX];
    snprintf(msg, sizeof msg, "%s", cg_net_error(nets[failed]));
    const char *name = cg_net_device_name(nets[failed]); /* "?" when its open failed */
    if (strcmp(name, "?")) cg_fail(e, "GPU %d (%s): %s", d->id[failed], name, msg);
    else cg_fail(e, "GPU %d: %s", d->id[failed], msg);
}

/* images/s over ms, 0 when nothing was timed. */
static double rate(long long n, double ms) { return ms > 0 ? (double)n / (ms / 1e3) : 0; }

void cg_devices_print(FILE *f, const cg_devices *d, cg_net *const *nets, const cg_shard *sh, long long n,
                      double wall_ms)
{
    fprintf(f, "==convgen-prof== %d GPU%s, one network each, the images in contiguous shards:\n", d->k,
            d->k == 1 ? "" : "s");
    fprintf(f, "  %-6s %-28s %12s %10s %11s %12s %9s %8s\n", "GPU", "name", "first image", "images", "wall ms",
            "images/s", "kernels", "overlap");
    for (int i = 0; i < d->k; i++) {
        const cg_gpu_times *t = cg_net_gpu_times(nets[i]);
        double share = t && sh[i].wall_ms > 0 ? t->total_ms / sh[i].wall_ms : 0;
        fprintf(f, "  %-6d %-28.28s %12lld %10lld %11.3f %12.0f %8.1f%% %7.1f%%\n", d->id[i],
                cg_net_device_name(nets[i]), sh[i].off, sh[i].n, sh[i].wall_ms, rate(sh[i].n, sh[i].wall_ms),
                100 * share, t && sh[i].n ? 100 * cg_gpu_overlap(t) : 0.0);
    }
    fprintf(f, "  all GPUs: %lld images in %.3f ms (host clock, the whole run): %.0f images/s\n", n, wall_ms,
            rate(n, wall_ms));
}

void cg_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

void cg_json_streamed(FILE *f, const cg_gpu_times *t)
{
    fprintf(f, "\"images\": %lld, \"batches\": %d, \"streams\": %d, \"wall_ms\": %.3f, \"kernels_ms\": %.3f, "
               "\"span_ms\": %.3f, \"upload_ms\": %.3f, \"download_ms\": %.3f, \"overlap\": %.4f",
            t->images, t->batches, t->streams, t->wall_ms, t->total_ms, t->span_ms, t->upload_ms, t->download_ms,
            cg_gpu_overlap(t));
}

void cg_devices_json(FILE *f, const cg_devices *d, cg_net *const *nets, const cg_shard *sh, long long n,
                     double wall_ms)
{
    fprintf(f, "  \"devices\": [");
    for (int i = 0; i < d->k; i++) {
        const cg_gpu_times *t = cg_net_gpu_times(nets[i]);
        const cg_host_costs *hc = cg_net_host_costs(nets[i]);
        fprintf(f, "%s\n    {\"index\": %d, \"name\": ", i ? "," : "", d->id[i]);
        cg_json_str(f, cg_net_device_name(nets[i]));
        fprintf(f, ", \"first_image\": %lld, \"images\": %lld, \"wall_ms\": %.3f, \"images_per_s\": %.1f", sh[i].off,
                sh[i].n, sh[i].wall_ms, rate(sh[i].n, sh[i].wall_ms));
        if (hc) fprintf(f, ", \"compiled\": %d, \"cache_hits\": %d", hc->compiled, hc->cache_hits);
        if (t && sh[i].n) {
            fprintf(f, ", \"streamed\": {");
            cg_json_streamed(f, t);
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"sharded\": {\"devices\": %d, \"images\": %lld, \"wall_ms\": %.3f, "
               "\"images_per_s\": %.1f},\n",
            d->k, n, wall_ms, rate(n, wall_ms));
}
