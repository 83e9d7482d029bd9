/* cmd_run.c — the verbs that execute a network: run and check. */
#include "cli.h"
#include "convgen.h"
#include "data.h"
#include "devices.h"
#include "harness.h"
#include "input.h"
#include "isolate.h"
#include "memplan.h"
#include "net_internal.h"
#include "npy.h"
#include "op.h"
#include "options.h"
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Everything a run needs on the host: spec, weights, images. From a bundle
 * (is_bundle), s and w are the bundle's (nb owns them). The images are the
 * data set's (d) or the user's (--input: ui); x, xt and labels point at
 * whichever was loaded (labels NULL: none given). */
typedef struct {
    cg_spec *s;
    cg_weights w;
    cg_dataset d;
    long long n;
    int is_bundle;
    cg_net_bundle nb;
    cg_images ui;
    const void *x;
    cg_input_type xt;
    const unsigned char *labels;
} cg_job;

static void job_free(cg_job *j)
{
    if (j->is_bundle) {
        cg_net_bundle_free(&j->nb);
    } else {
        free(j->s);
        cg_weights_free(&j->w);
    }
    cg_dataset_free(&j->d);
    cg_input_free(&j->ui);
}

/* Images made up from a seed (xorshift pixels, labels 0..9): for timing and
 * checking where the dataset is not at hand; the same set convgen-mpi makes. */
static int random_images(cg_dataset *d, const cg_spec *s, long long n, unsigned long long seed, cg_err *e)
{
    return cg_data_random(d, n, (size_t)s->C * (size_t)s->H * (size_t)s->W, s->H, s->W, seed, e);
}

/* The spec alone: read and checked before anything probes the GPU. A
 * bundle (NET.cgb) is read whole here: its spec, and its weights checked. */
static int job_spec(cg_job *j, const char *spec_path, cg_err *e)
{
    memset(j, 0, sizeof *j);
    if (cg_is_bundle_path(spec_path)) {
        j->is_bundle = 1;
        int rc = cg_net_bundle_load(spec_path, &j->nb, e);
        j->s = j->nb.s, j->w = j->nb.w;
        return rc;
    }
    j->s = malloc(sizeof *j->s);
    if (!j->s) return cg_fail(e, "out of memory"), CG_EXIT_IO;
    if (cg_spec_load(spec_path, j->s, e)) return CG_EXIT_INPUT;
    return 0;
}

/* Options that choose or tune kernels, which a bundle has fixed: a usage
 * error naming the first one given. */
static int bundle_refuses(const cg_job *j, const char *fatbin, const char *tuning, const char *no_tuning,
                          const char *no_cache, cg_err *e)
{
    const char *opt = fatbin ? "--fatbin" : tuning ? "--tuning" : no_tuning ? "--no-tuning"
                    : no_cache ? "--no-cache" : NULL;
    if (!j->is_bundle || !opt) return 0;
    return cg_fail(e, "%s: %s: a bundle carries its kernels, compiled and tuned by 'convgen build'", j->s->path,
                   opt), CG_EXIT_USAGE;
}

/* The strategy a tuning record chose for layer l at the bucket served (0: the large
 * batch, whose choice is the layer's strategy as the record set it), NULL where the
 * layer's kernel there is no record's choice (a small bucket takes only its own entries). */
static const char *tuned_strategy(const cg_spec *s, int l, const int *from_record, int bucket)
{
    const cg_bucket_tuned *b = cg_spec_bucket_tuned(s, l, bucket);
    if (b) return cg_op_strategy(&s->layers[l], b->tpl);
    return !bucket && from_record && from_record[l] ? s->layers[l].strategy : NULL;
}

/* Which layers took the tuning record's choice for the bucket served, for --profile. */
static void print_tuned(const cg_spec *s, const int from_record[CG_MAX_LAYERS], int bucket)
{
    int n = 0;
    printf("Tuning record: ");
    for (int i = 0; i < s->nlayers; i++) {
        const char *st = tuned_strategy(s, i, from_record, bucket);
        if (st) printf("%s%s (%s)", n++ ? ", " : "", s->layers[i].name, st);
    }
    printf("%s", n ? " from the record" : "no layer from a record");
    if (bucket) printf(" for bucket %d", bucket);
    printf("\n");
}

static int job_weights(cg_job *j, int quiet, cg_err *e);

/* Whether text ends with suffix (an --output file's kind). */
static int ends_with(const char *text, const char *suffix)
{
    size_t n = strlen(text), k = strlen(suffix);
    return n >= k && !strcmp(text + n - k, suffix);
}

/* Data and weights for the spec job_spec read, printed the way the course harness
 * printed them (quiet: silently, and any network output size is fine: check
 * compares layers). random_seed >= 0: made-up images instead of the dataset.
 * images > 0: the first that many; when the user asked for them (given), the data
 * set must hold them. */
static int job_load(cg_job *j, const char *spec_path, const char *data_dir, long long images,
                    int given, long long random_seed, int quiet, cg_err *e)
{
    const cg_spec *s = j->s;
    /* run (not quiet) also takes the user's images; check (quiet) only made-up ones */
    if (random_seed < 0 && !s->dataset[0] && quiet)
        return cg_fail(e, "%s: the spec names no dataset; give --random-input SEED", spec_path), CG_EXIT_USAGE;
    if (random_seed < 0 && !s->dataset[0])
        return cg_fail(e, "%s: the spec names no dataset; give your images with --input FILE, or made-up ones "
                       "with --random-input SEED", spec_path), CG_EXIT_USAGE;
    if (random_seed >= 0) {
        if (!quiet) printf("Making %lld random images (seed %lld)...", images ? images : 10000, random_seed);
        if (random_images(&j->d, s, images ? images : 10000, (unsigned long long)random_seed, e)) return CG_EXIT_IO;
    } else if (!quiet) {
        printf("Loading %s data...", s->dataset), fflush(stdout);
    }
    if (random_seed < 0 && cg_data_load(data_dir, 0, s->resize, (int)images, &j->d, e)) {
        if (!quiet) printf(" failed\n");
        return CG_EXIT_INPUT;
    }
    if (given && images > j->d.n) {
        if (!quiet) printf(" failed\n");
        return cg_fail(e, "--images %lld: the %s test set holds %d images", images, s->dataset,
                       j->d.n), CG_EXIT_USAGE;
    }
    if (j->d.h != s->H || j->d.w != s->W) {
        if (!quiet) printf(" failed\n");
        return cg_fail(e, "%s: images are %dx%d, the network's input is %dx%d", spec_path, j->d.h,
                       j->d.w, s->H, s->W), CG_EXIT_INPUT;
    }
    j->n = j->d.n;
    return job_weights(j, quiet, e);
}

/* The user's images (--input) and labels (--labels, may be NULL) in place of
 * the data set, then the weights. */
static int job_load_user(cg_job *j, const char *input, const char *labels, long long images, int given,
                         int classes, cg_err *e)
{
    const cg_spec *s = j->s;
    printf("Loading %s...", input), fflush(stdout);
    /* labels are bytes: a network of more outputs than 256 takes any of 0..255 */
    if (cg_input_load(input, labels, s->C, s->H, s->W, classes < 256 ? classes : 256, (int)images, &j->ui, e)) {
        printf(" failed\n");
        return CG_EXIT_INPUT;
    }
    if (given && images > j->ui.n) {
        printf(" failed\n");
        return cg_fail(e, "--images %lld: %s holds %d images", images, input, j->ui.n), CG_EXIT_USAGE;
    }
    j->n = j->ui.n;
    return job_weights(j, 0, e);
}

/* Point x, xt and labels at the images loaded, the user's or the data set's:
 * called once loading is over (whatever rewrote the buffers before). */
static void job_images(cg_job *j)
{
    if (j->ui.pixels || j->ui.values) {
        j->x = j->ui.pixels ? (const void *)j->ui.pixels : (const void *)j->ui.values;
        j->xt = j->ui.pixels ? CG_INPUT_U8 : CG_INPUT_F32;
        j->labels = j->ui.labels;
    } else {
        j->x = j->d.pixels, j->xt = CG_INPUT_U8, j->labels = j->d.labels;
    }
}

/* The spec's weights (a bundle's are loaded already), saying where they came from. */
static int job_weights(cg_job *j, int quiet, cg_err *e)
{
    const cg_spec *s = j->s;
    if (!quiet) printf(" done\nLoading model..."), fflush(stdout);
    if (j->is_bundle) {
        if (!quiet) printf(" done (from the bundle)\n");
        return 0;
    }
    if (cg_weights_for_spec(s, &j->w, e)) {
        if (!quiet) printf(" failed\n");
        return CG_EXIT_INPUT;
    }
    if (!quiet) {
        if (j->w.random) printf(" done (no weights file: seeded random weights, seed %llu)\n", s->seed);
        else printf(" done\n");
    }
    return 0;
}

/* --repeat-dataset K: the loaded images K times over, for measuring
 * throughput on a large input (docs/user-guide.md, "Throughput at scale"). */
static int job_repeat(cg_job *j, long long k, cg_err *e)
{
    if (k <= 1) return 0;
    if ((long long)j->d.n * k > 0x7fffffffLL)
        return cg_fail(e, "--repeat-dataset %lld: %d images that many times is more than %d", k, j->d.n,
                       0x7fffffff), CG_EXIT_USAGE;
    if (cg_data_repeat(&j->d, (size_t)j->s->C * (size_t)j->s->H * (size_t)j->s->W, k, e)) return CG_EXIT_IO;
    j->n = j->d.n;
    return 0;
}

static double accuracy(const int *pred, const unsigned char *labels, long long n)
{
    long long ok = 0;
    for (long long i = 0; i < n; i++) ok += pred[i] == labels[i];
    return n ? (double)ok / (double)n : 0.0;
}

static double median(double *v, int n)
{
    cg_harness_stats st;
    cg_harness_stats_of(v, n, &st);
    return st.median;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The index of the p-th percentile in n sorted values (nearest rank). */
static long long percentile_at(int p, long long n)
{
    long long k = (p * n + 99) / 100;
    return k < 1 ? 0 : k - 1;
}

/* Where kernel `name`'s code came from, NULL if unknown. */
static const cg_kernel_build *build_of(const cg_host_costs *hc, const char *name)
{
    for (int i = 0; i < hc->nbuild; i++)
        if (!strcmp(hc->build[i].name, name)) return &hc->build[i];
    return NULL;
}

/* "812.345ms" (its NVRTC compile), "cache" or "fatbin": the Compile column. */
static const char *build_text(const cg_kernel_build *b, char out[32])
{
    if (!b) return "-";
    if (b->from == CG_FROM_CACHE) return "cache";
    if (b->from == CG_FROM_FATBIN) return "fatbin";
    snprintf(out, 32, "%.3fms", b->ms);
    return out;
}

/* --whole auto|on|off into CG_WHOLE_AUTO, _ON, _OFF (absent: auto). */
static int whole_option(const char *text, int *mode, cg_err *e)
{
    *mode = CG_WHOLE_AUTO;
    if (!text || !strcmp(text, "auto")) return 0;
    if (!strcmp(text, "on")) *mode = CG_WHOLE_ON;
    else if (!strcmp(text, "off")) *mode = CG_WHOLE_OFF;
    else return cg_fail(e, "--whole expects auto, on or off, got '%s'", text), CG_EXIT_USAGE;
    return 0;
}

/* nvprof-style table of kernel times, each kernel's compile time beside it,
 * then the host-side costs. */
static void print_profile(const cg_gpu_times *t, const cg_host_costs *hc)
{
    double total = 0;
    char bt[32];
    for (int i = 0; i < t->nprof; i++) total += t->prof[i].total_ms;
    printf("==convgen-prof== GPU activities:\n");
    printf("%8s %11s %7s %11s %11s %11s %11s  %s\n", "Time(%)", "Time", "Calls", "Avg", "Min", "Max",
           "Compile", "Name");
    for (int i = 0; i < t->nprof; i++) {
        const cg_kernel_prof *p = &t->prof[i];
        printf("%7.2f%% %9.3fms %7d %9.3fms %9.3fms %9.3fms %11s  %s\n",
               total > 0 ? 100 * p->total_ms / total : 0, p->total_ms, p->calls,
               p->total_ms / p->calls, p->min_ms, p->max_ms, build_text(build_of(hc, p->name), bt),
               p->name);
    }
    printf("==convgen-prof== host:\n");
    printf("  %-26s %9.3f ms\n", "generate (Lua templates)", hc->generate_ms);
    printf("  %-26s %9.3f ms  (%s; %d compiled, %d cache hits, %d threads)\n", "compile (NVRTC)",
           hc->compile_ms, hc->arch, hc->compiled, hc->cache_hits, hc->jit_threads);
    printf("  %-26s %9.3f ms\n", "module load", hc->load_ms);
    printf("  %-26s %9.3f ms\n", "weights upload", hc->weights_ms);
    printf("  %-26s %9.3f ms\n", "device allocation", hc->alloc_ms);
    char planned[32], all[32];
    cg_memplan_bytes_text(hc->arena_per_image, planned, sizeof planned);
    cg_memplan_bytes_text(hc->tensors_per_image, all, sizeof all);
    printf("  device memory per image: %s %s (%s without reuse), in each stream set\n", planned,
           hc->keep_tensors ? "with every tensor kept" : "planned", all);
    printf("  %-26s %9.3f ms\n", "images upload (uint8)", hc->upload_ms);
    printf("  %-26s %9.3f ms\n", "results download", hc->download_ms);
    if (hc->cache_note[0]) printf("  cache: %s\n", hc->cache_note);
    if (t->bucket) printf("  kernels generated for batches of up to %d image%s\n", t->bucket, t->bucket > 1 ? "s" : "");
    else printf("  kernels generated for large batches\n");
    if (t->graph_replays)
        printf("  launches: %d batch%s as CUDA graph replays (%d captured)\n", t->graph_replays,
               t->graph_replays > 1 ? "es" : "", t->graph_captures);
    else printf("  launches: each kernel launched itself (no CUDA graph)\n");
    char whole[512];
    cg_gpu_whole_summary(t, whole, sizeof whole);
    if (whole[0]) printf("  %s\n", whole);
    if (t->whole == CG_RAN_WHOLE)
        printf("  per-layer kernel times: not available (the whole-network kernel ran every layer in one launch; "
               "--whole off times them)\n");
    char streamed[1024];
    cg_gpu_stream_summary(t, streamed, sizeof streamed);
    fputs(streamed, stdout);
}

/* What a run measured, for --profile and --json: its networks (one, or one
 * per GPU of --devices: dev not NULL), each one's shard of the last timed run
 * and that run's wall time (host clock). */
typedef struct {
    cg_net *nets[CG_SHARDS_MAX];
    int k;
    const cg_devices *dev;
    cg_shard sh[CG_SHARDS_MAX];
    double wall_ms;
} cg_run_nets;

/* The same figures as the text output, as JSON, written atomically. */
static int write_json(const char *path, const cg_job *j, const cg_run_nets *rn, const double *acc,
                      const double *layer_s, double total_s, int repeat, const double *lat, const int *from_record,
                      cg_err *e)
{
    /* the kernels and host costs are the first network's (with --devices the
     * one that compiled them); its streamed figures, or every GPU's */
    const cg_gpu_times *t = cg_net_gpu_times(rn->nets[0]);
    const cg_host_costs *hc = cg_net_host_costs(rn->nets[0]);
    const char *backend = cg_net_backend(rn->nets[0]), *device = cg_net_device_name(rn->nets[0]);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return cg_fail(e, "%s: out of memory", path);
    fprintf(f, "{\n  \"network\": ");
    cg_json_str(f, j->s->name);
    fprintf(f, ",\n  \"spec\": ");
    cg_json_str(f, j->s->path);
    fprintf(f, ",\n  \"backend\": \"%s\",\n  \"device\": ", backend);
    cg_json_str(f, device);
    fprintf(f, ",\n  \"images\": %lld,\n  \"repeat\": %d,\n  \"correctness\": ", j->n, repeat);
    if (acc) fprintf(f, "%.6f,\n", *acc);
    else fprintf(f, "null,\n");
    fprintf(f, "  \"random_weights\": %s,\n  \"total_s\": %.9f,\n", j->w.random ? "true" : "false", total_s);
    if (lat) /* sorted host wall times of the timed calls, ms */
        fprintf(f, "  \"latency_ms\": {\"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f},\n", lat[percentile_at(50, repeat)],
                lat[percentile_at(90, repeat)], lat[percentile_at(99, repeat)]);
    if (t && !strcmp(backend, "cuda")) {
        fprintf(f, "  \"bucket\": %d,\n  \"graph_replays\": %d,\n  \"pdl_launches\": %d,\n", t->bucket,
                t->graph_replays, t->pdl_launches);
        /* the whole-network kernel: whether it ran, where the choice came from (measured now,
         * the tuning record, forced; null: none made) and the times that chose it (ms; null:
         * not timed) */
        const char *from = cg_whole_from_name(t->whole_from);
        fprintf(f, "  \"whole\": %s,\n  \"whole_choice\": %s%s%s,\n  \"whole_ms\": ",
                t->whole == CG_RAN_WHOLE ? "true" : "false", from ? "\"" : "", from ? from : "null", from ? "\"" : "");
        fprintf(f, isnan(t->whole_ms) ? "null" : "%.6f", t->whole_ms);
        fprintf(f, ",\n  \"layers_ms\": ");
        fprintf(f, isnan(t->layers_ms) ? "null" : "%.6f", t->layers_ms);
        /* how the per-layer kernels were launched (plain where measured faster than with PDL)
         * and the two times that chose it */
        fprintf(f, ",\n  \"launch\": \"%s\",\n  \"pdl_ms\": ", t->pdl_launches ? "pdl" : "plain");
        fprintf(f, isnan(t->pdl_ms) ? "null" : "%.6f", t->pdl_ms);
        fprintf(f, ",\n  \"plain_ms\": ");
        fprintf(f, isnan(t->plain_ms) ? "null" : "%.6f", t->plain_ms);
        fprintf(f, ",\n");
    }
    /* the tuning record's choices are the ones for the bucket the kernels were generated for */
    int bucket = t && !strcmp(backend, "cuda") ? t->bucket : 0;
    fprintf(f, "  \"layers\": [");
    for (int l = 0; l < j->s->nlayers; l++) {
        fprintf(f, "%s\n    {\"name\": ", l ? "," : "");
        cg_json_str(f, j->s->layers[l].name);
        fprintf(f, ", \"op\": \"%s\", \"time_s\": ", cg_op_name(j->s->layers[l].op));
        fprintf(f, isnan(layer_s[l]) ? "null" : "%.9f", layer_s[l]); /* null: not timed alone */
        const char *st = tuned_strategy(j->s, l, from_record, bucket);
        if (st) {
            /* the tuning record's choice for the bucket served: strategy and every parameter */
            const cg_layer *L = &j->s->layers[l];
            const cg_bucket_tuned *bt = cg_spec_bucket_tuned(j->s, l, bucket);
            fprintf(f, ", \"tuned\": {\"strategy\": ");
            cg_json_str(f, st);
            fprintf(f, ", \"params\": ");
            if (bt) {
                cg_json_str(f, bt->params);
            } else {
                fprintf(f, "\"");
                for (int i = 0; i < L->nparams; i++)
                    fprintf(f, "%s%s=%lld", i ? " " : "", L->params[i].key, L->params[i].value);
                fprintf(f, "\"");
            }
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]");
    if (t && hc) {
        /* every kernel of the build, where its code came from; launch times with --profile */
        fprintf(f, ",\n  \"kernels\": [");
        for (int i = 0; i < hc->nbuild; i++) {
            const cg_kernel_build *kb = &hc->build[i];
            fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
            cg_json_str(f, kb->name);
            fprintf(f, ", \"code\": \"%s\", \"compile_ms\": %.3f",
                    kb->from == CG_FROM_CACHE ? "cache" : kb->from == CG_FROM_FATBIN ? "fatbin" : "nvrtc", kb->ms);
            for (int k = 0; k < t->nprof; k++) {
                const cg_kernel_prof *p = &t->prof[k];
                if (strcmp(p->name, kb->name)) continue;
                fprintf(f, ", \"calls\": %d, \"total_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f", p->calls,
                        p->total_ms, p->min_ms, p->max_ms);
            }
            fprintf(f, "}");
        }
        fprintf(f, "\n  ],\n  \"host_ms\": {\"generate\": %.3f, \"compile\": %.3f, \"load\": %.3f, "
                   "\"weights\": %.3f, \"alloc\": %.3f, \"upload\": %.3f, \"download\": %.3f},\n",
                hc->generate_ms, hc->compile_ms, hc->load_ms, hc->weights_ms, hc->alloc_ms, hc->upload_ms,
                hc->download_ms);
        /* the last timed run, end to end (docs/user-guide.md, "Throughput at scale") */
        if (rn->dev) {
            cg_devices_json(f, rn->dev, rn->nets, rn->sh, j->n, rn->wall_ms);
        } else {
            fprintf(f, "  \"streamed\": {");
            cg_json_streamed(f, t);
            fprintf(f, "},\n");
        }
        fprintf(f, "  \"compiled\": %d,\n  \"cache_hits\": %d,\n  \"jit_threads\": %d,\n  \"arch\": ",
                hc->compiled, hc->cache_hits, hc->jit_threads);
        cg_json_str(f, hc->arch);
    }
    fprintf(f, "\n}\n");
    if (fclose(f)) return free(text), cg_fail(e, "%s: out of memory", path);
    int rc = cg_write_file_atomic(path, text, len, e);
    free(text);
    return rc;
}

/* auto: the GPU when a driver and device `device` answer, else say why and
 * use the CPU; a device asked for by --device (device_given) must answer. */
static int pick_backend(const char *want, int device, int device_given, int *use_gpu, cg_err *e)
{
    if (!strcmp(want, "cpu") && device_given)
        return cg_fail(e, "--device needs the cuda backend"), CG_EXIT_USAGE;
    if (!strcmp(want, "cpu")) return *use_gpu = 0, 0;
    if (strcmp(want, "cuda") && strcmp(want, "auto"))
        return cg_fail(e, "--backend expects auto, cuda or cpu, got '%s'", want), CG_EXIT_USAGE;
    cg_err why;
    if (cg_cuda_probe(device, why.msg, sizeof why.msg) == CG_STATUS_OK) return *use_gpu = 1, 0;
    if (device_given) return cg_fail(e, "--device %d: %s", device, why.msg), CG_EXIT_DEVICE;
    if (!strcmp(want, "cuda")) return cg_fail(e, "--backend cuda: %s", why.msg), CG_EXIT_DEVICE;
    fprintf(stderr, "convgen: no GPU (%s); running on the CPU backend\n", why.msg);
    return *use_gpu = 0, 0;
}

static const char run_usage[] =
    "usage: convgen run SPEC|NET.cgb [options]\n"
    "\n"
    "Run the network over the Fashion-MNIST test set (or the images of --input) and\n"
    "print, as the course harness did, one Op Time per convolution and the accuracy.\n"
    "NET.cgb: a bundle from 'convgen build SPEC -o NET.cgb'; nothing else is read.\n"
    "\n"
    "  --input FILE        the images to classify: IDX (plain or gzip) or .npy, uint8\n"
    "                      (scaled as the data set is) or float32 (the network's input\n"
    "                      as it is), N x H x W or N x C x H x W; resized as the data set\n"
    "  --labels FILE       their labels (idx1 or 1-d integer .npy); without, no accuracy\n"
    "  --output FILE       predictions and scores: FILE.csv (index,prediction,score_0..)\n"
    "                      or FILE.npy (float32 N x classes scores)\n"
    "  --images N          the first N test images (default all; at most the set's size)\n"
    "  --backend B         auto (default: the GPU if one answers, else the CPU), cuda, cpu\n"
    "  --fatbin F          kernels from a fat binary (convgen build) instead of NVRTC (GPU)\n"
    "  --batch B           images per launch (GPU); the kernels are generated for its\n"
    "                      bucket (1, 8, 64, 256, 1024 or large). Without it, a run of at\n"
    "                      most 1024 images is one launch of that many (kernels for its bucket)\n"
    "  --no-graphs         launch each kernel itself instead of replaying a CUDA graph (GPU)\n"
    "  --whole auto|on|off the whole-network kernel (one launch running every layer, generated for\n"
    "                      batches of 1 and 8 images): auto (default) takes the tuning record's\n"
    "                      choice for these kernels (tune --batch N), else times it against the\n"
    "                      per-layer kernels once and keeps the faster; on: always it; off: never (GPU)\n"
    "  --no-pdl            no programmatic dependent launch: each kernel launched only once\n"
    "                      the one before has ended (GPU, sm_90 and newer; --profile implies it)\n"
    "  --pdl-always        every launch that can overlap the kernel before does; by default\n"
    "                      kernels for a batch of up to 1024 images are first timed both with\n"
    "                      overlapped and with plain launches, and the faster kept (GPU)\n"
    "  --no-cache          compile every kernel, bypassing the JIT cache (GPU)\n"
    "  --profile           per-kernel times and host-side costs (GPU)\n"
    "  --device N          the GPU to run on (default 0)\n"
    "  --devices L         several GPUs at once: L is 0,1,... or all; each GPU runs one\n"
    "                      contiguous shard of the images (streamed as on one GPU), the\n"
    "                      answers in input order; not with --device (GPU)\n"
    "  --repeat R          R timed runs after a warm-up (none on the CPU); medians, and\n"
    "                      each call's host latency (p50, p90, p99)\n"
    "  --json FILE         the figures as JSON (FILE must be absent or a regular file)\n"
    "  --data DIR          where the IDX files are (default " CG_DATA_DIR_DEFAULT ")\n"
    "  --random-input S    made-up images from seed S instead of the data set\n"
    "  --repeat-dataset K  the images K times over (a large input for measuring throughput)\n"
    "  --streams S         batches in flight on the GPU, 1 (no overlap) to 4 (default 2) (GPU)\n"
    "  --tuning FILE       the tuning record to apply (GPU; default: SPEC's .tuning.yaml if present)\n"
    "  --no-tuning         ignore any tuning record (GPU)\n"
    "  -h, --help          this text\n"
    "\n"
    "Options marked (GPU) are refused on the CPU backend: exit 2 with --backend cpu,\n"
    "exit 4 when auto found no GPU.\n";

/* An option that only means something on the GPU, refused on the CPU backend: a
 * usage error when the CPU was asked for; with auto, the GPU is required and its
 * absence is "GPU unavailable" (exit 4), saying why. */
static int gpu_only(const char *opt, const char *backend, int device, int *use_gpu, cg_err *e)
{
    if (!strcmp(backend, "cpu"))
        return cg_fail(e, "%s needs the cuda backend; the CPU backend %s", opt,
                       strcmp(opt, "--batch") ? "has no kernels" : "runs all images at once"),
               CG_EXIT_USAGE;
    cg_err why;
    int rc = pick_backend("cuda", device, 0, use_gpu, &why);
    if (rc) {
        const char *msg = strncmp(why.msg, "--backend cuda: ", 16) ? why.msg : why.msg + 16;
        return cg_fail(e, "%s needs a GPU: %s", opt, msg), rc;
    }
    return 0;
}

/* A failed API call's message into e; its status as the exit code. */
static int net_status(const cg_net *net, cg_status st, cg_err *e)
{
    if (st) cg_fail(e, "%s", cg_net_error(net));
    return cg_exit_of(st);
}

/* Open the job's network through the API (runtime/convgen.h) on the spec and
 * weights already loaded; a failed open shows NVRTC's messages first, as
 * they always were. */
static int job_open(const cg_job *j, const cg_net_options *o, cg_net **net, cg_err *e)
{
    cg_status st = j->is_bundle ? cg_net_open_bundle_with(&j->nb, o, net) : cg_net_open_with(j->s, &j->w, o, net);
    if (st && cg_net_log(*net)[0]) fputs(cg_net_log(*net), stderr);
    return net_status(*net, st, e);
}

/* --devices LIST read, and refused beside --device (both choose the GPU). */
static int devices_option(const char *text, const char *device_t, cg_devices *dev, cg_err *e)
{
    if (device_t) return cg_fail(e, "--devices and --device both choose the GPU: give one"), CG_EXIT_USAGE;
    return cg_devices_parse(text, dev, e);
}

/* The run's networks: one on --device, or one per GPU of --devices, opened
 * one after another (the first compiles the kernels; the others find them
 * in the JIT cache). A failure names its GPU. */
static int open_nets(const cg_job *j, cg_net_options *o, cg_run_nets *rn, cg_err *e)
{
    for (int i = 0; i < rn->k; i++) {
        if (rn->dev) o->device = rn->dev->id[i];
        int rc = job_open(j, o, &rn->nets[i], e);
        if (rc && rn->dev) cg_devices_fail(rn->dev, rn->nets, i, e);
        if (rc) return rc;
        /* a tuning record's whole-network decision not taken: said once, as the
         * record's other notices are (every GPU's kernels are the same) */
        const char *notice = cg_net_whole_notice(rn->nets[0]);
        if (!i && notice[0]) fprintf(stderr, "convgen: %s\n", notice);
    }
    return 0;
}

/* One run of every image over the networks, each its shard (one network: all
 * of them, on this thread), timed by the host clock; each layer's time (and
 * the total) is the slowest network's, as convgen-mpi reports its ranks'.
 * layer_out: NULL, or every layer's output (check). */
static int run_nets(cg_run_nets *rn, const cg_input *in, int *pred, float *scores, float **layer_out, int nlayers,
                    double *layer_ms, double *total_ms, cg_err *e)
{
    int failed;
    double t0 = cg_now_ms();
    cg_status st = cg_shards_run(rn->nets, rn->k, in, pred, scores, layer_out, rn->sh, &failed, e);
    rn->wall_ms = cg_now_ms() - t0;
    if (st && rn->dev) cg_devices_fail(rn->dev, rn->nets, failed, e);
    else if (st && failed >= 0) cg_fail(e, "%s", cg_net_error(rn->nets[failed]));
    if (st) return cg_exit_of(st);
    memset(layer_ms, 0, (size_t)nlayers * sizeof *layer_ms);
    *total_ms = 0;
    for (int i = 0; i < rn->k; i++) {
        double ms[CG_MAX_LAYERS], total = 0;
        if (!rn->sh[i].n) continue;
        cg_net_times(rn->nets[i], &total, ms);
        for (int l = 0; l < nlayers; l++) /* NaN (a layer not timed alone) stays NaN */
            layer_ms[l] = isnan(ms[l]) || isnan(layer_ms[l]) ? NAN : ms[l] > layer_ms[l] ? ms[l] : layer_ms[l];
        *total_ms = total > *total_ms ? total : *total_ms;
    }
    return 0;
}

/* --profile on the GPU: the network's table; with --devices every GPU's
 * (the shard it ran) and then the GPUs side by side. */
static void print_profiles(const cg_run_nets *rn)
{
    for (int i = 0; i < rn->k; i++) {
        if (rn->dev && !rn->sh[i].n) continue;
        if (rn->dev)
            printf("==convgen-prof== GPU %d (%s): images %lld to %lld\n", rn->dev->id[i],
                   cg_net_device_name(rn->nets[i]), rn->sh[i].off, rn->sh[i].off + rn->sh[i].n - 1);
        print_profile(cg_net_gpu_times(rn->nets[i]), cg_net_host_costs(rn->nets[i]));
    }
    if (rn->dev) cg_devices_print(stdout, rn->dev, rn->nets, rn->sh, rn->sh[rn->k - 1].off + rn->sh[rn->k - 1].n,
                                  rn->wall_ms);
}

/* --json and --output must not replace a file the run reads (the spec or
 * bundle, the spec's weights, --input, --labels, --fatbin, the tuning record),
 * nor each other. */
static int outputs_not_inputs(const cg_job *j, const char *spec, const char *json, const char *output,
                              const char *input, const char *labels, const char *fatbin, const char *tuning,
                              cg_err *e)
{
    char record[CG_PATH_MAX + 32] = "";
    if (!j->is_bundle && !tuning) cg_tune_default_path(spec, record, sizeof record);
    const char *inputs[] = {spec, !j->is_bundle && j->s->weights[0] ? j->s->weights : NULL, input, labels, fatbin,
                            tuning ? tuning : record[0] ? record : NULL};
    const char *what[] = {j->is_bundle ? "the bundle" : "the spec", "the spec's weights", "--input", "--labels",
                          "--fatbin", "the tuning record"};
    int rc = cg_opt_not_input("--output", output, inputs, what, 6, e);
    if (!rc) rc = cg_opt_not_input("--json", json, inputs, what, 6, e);
    if (!rc && json && output && (!strcmp(json, output) || cg_same_file(json, output)))
        rc = (cg_fail(e, "--json %s: is --output too; give each its own file", json), CG_EXIT_USAGE);
    return rc;
}

int cg_cmd_run(int argc, char **argv, cg_err *e)
{
    const char *spec = NULL, *images_t = NULL, *batch_t = NULL, *backend_t = NULL, *fatbin = NULL,
               *data = NULL, *no_cache = NULL, *profile = NULL, *json = NULL, *repeat_t = NULL,
               *random_t = NULL, *device_t = NULL, *tuning = NULL, *no_tuning = NULL, *repeat_ds_t = NULL,
               *streams_t = NULL, *input = NULL, *labels = NULL, *output = NULL, *devices_t = NULL,
               *no_graphs = NULL, *no_pdl = NULL, *whole_t = NULL, *pdl_always = NULL;
    const cg_opt opts[] = {{"--images", 1, &images_t}, {"--no-graphs", 0, &no_graphs}, {"--no-pdl", 0, &no_pdl}, {"--batch", 1, &batch_t}, {"--backend", 1, &backend_t},
                           {"--whole", 1, &whole_t}, {"--pdl-always", 0, &pdl_always},
                           {"--repeat-dataset", 1, &repeat_ds_t}, {"--streams", 1, &streams_t},
                           {"--fatbin", 1, &fatbin},   {"--data", 1, &data},     {"--no-cache", 0, &no_cache},
                           {"--profile", 0, &profile}, {"--json", 1, &json},     {"--repeat", 1, &repeat_t},
                           {"--random-input", 1, &random_t}, {"--device", 1, &device_t},
                           {"--tuning", 1, &tuning},   {"--no-tuning", 0, &no_tuning},
                           {"--input", 1, &input},     {"--labels", 1, &labels}, {"--output", 1, &output},
                           {"--devices", 1, &devices_t}};
    int rc = cg_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts, &spec, run_usage, e);
    if (rc == CG_OPTS_HELP) return 0;
    const char *backend = backend_t ? backend_t : "auto";
    long long images = 0, batch = 0, repeat = 1, random_seed = -1, device = 0, repeat_ds = 1, streams = 0;
    if (!rc && !spec) rc = (cg_fail(e, "run needs a SPEC"), CG_EXIT_USAGE);
    if (!rc) rc = cg_opt_int("--repeat-dataset", repeat_ds_t, 1, 100000, &repeat_ds, e);
    if (!rc) rc = cg_opt_int("--streams", streams_t, 1, CG_PIPE_MAX_SETS, &streams, e);
    if (!rc) rc = cg_opt_int("--device", device_t, 0, 1023, &device, e);
    if (!rc) rc = cg_opt_int("--images", images_t, 1, 10000000, &images, e);
    if (!rc) rc = cg_opt_int("--batch", batch_t, 1, 1LL << 31, &batch, e);
    if (!rc) rc = cg_opt_int("--repeat", repeat_t, 1, 1000, &repeat, e);
    if (!rc) rc = cg_opt_int("--random-input", random_t, 0, 1LL << 62, &random_seed, e);
    int whole = CG_WHOLE_AUTO;
    if (!rc) rc = whole_option(whole_t, &whole, e);
    cg_devices dev;
    if (!rc && devices_t) rc = devices_option(devices_t, device_t, &dev, e);
    if (!rc && strcmp(backend, "auto") && strcmp(backend, "cuda") && strcmp(backend, "cpu"))
        rc = (cg_fail(e, "--backend expects auto, cuda or cpu, got '%s'", backend), CG_EXIT_USAGE);
    if (!rc && !input && (labels || output))
        rc = (cg_fail(e, "%s needs --input FILE", labels ? "--labels" : "--output"), CG_EXIT_USAGE);
    if (!rc && input && (data || random_t))
        rc = (cg_fail(e, "--input and %s both name the images", data ? "--data" : "--random-input"), CG_EXIT_USAGE);
    if (!rc && input && repeat_ds_t)
        rc = (cg_fail(e, "--repeat-dataset repeats the data set; with --input, repeat the images in FILE"),
              CG_EXIT_USAGE);
    if (!rc && output && !ends_with(output, ".csv") && !ends_with(output, ".npy"))
        rc = (cg_fail(e, "--output %s: FILE.csv or FILE.npy expected", output), CG_EXIT_USAGE);
    /* a --json or --output path convgen will not write is reported now, not after the run */
    if (!rc && json && cg_check_output_file(json, e)) rc = CG_EXIT_USAGE;
    if (!rc && output && cg_check_output_file(output, e)) rc = CG_EXIT_USAGE;
    if (rc) return rc;
    cg_job j;
    if ((rc = job_spec(&j, spec, e)) || (rc = bundle_refuses(&j, fatbin, tuning, no_tuning, no_cache, e)) ||
        (rc = outputs_not_inputs(&j, spec, json, output, input, labels, fatbin, tuning, e)))
        return job_free(&j), rc;
    const cg_spec *s = j.s;
    const cg_layer *last = &s->layers[s->nlayers - 1];
    const int classes = (int)cg_layer_out_elems(last);
    if (!input && !random_t && classes != 10)
        return cg_fail(e, "%s: the network ends in %lld values; classifying %s needs 10 (give --input FILE "
                       "or --random-input S; check and generate take any network)", spec, cg_layer_out_elems(last),
                       s->dataset[0] ? s->dataset : "fashion-mnist"),
               job_free(&j), CG_EXIT_INPUT;
    int use_gpu = 0;
    const char *gpu_opt = devices_t ? "--devices" : fatbin ? "--fatbin" : profile ? "--profile" : batch_t ? "--batch"
                        : no_cache ? "--no-cache" : device_t ? "--device" : tuning ? "--tuning"
                        : no_tuning ? "--no-tuning" : streams_t ? "--streams" : no_graphs ? "--no-graphs"
                        : no_pdl ? "--no-pdl" : whole_t ? "--whole" : pdl_always ? "--pdl-always" : NULL;
    if (devices_t && dev.k) device = dev.id[0]; /* the one the tuning record is checked against */
    rc = gpu_opt ? gpu_only(gpu_opt, backend, (int)device, &use_gpu, e)
                 : pick_backend(backend, (int)device, 0, &use_gpu, e);
    if (!rc && devices_t && !(rc = cg_devices_probe(&dev, e))) device = dev.id[0];
    cg_net_options no;
    cg_net_options_init(&no);
    no.backend = use_gpu ? CG_BACKEND_CUDA : CG_BACKEND_CPU;
    no.device = (int)device, no.fatbin = fatbin, no.no_cache = no_cache != NULL, no.batch = batch;
    no.streams = (int)streams;
    no.profile = profile != NULL, no.tuning = tuning, no.no_tuning = no_tuning != NULL;
    no.no_graphs = no_graphs != NULL, no.no_pdl = no_pdl != NULL, no.whole = whole, no.pdl_always = pdl_always != NULL;
    int from_record[CG_MAX_LAYERS] = {0};
    if (!rc && use_gpu && !j.is_bundle) rc = cg_net_tune(j.s, &no, from_record, NULL, e);
    if (!rc) rc = input ? job_load_user(&j, input, labels, images, images_t != NULL, classes, e)
                        : job_load(&j, spec, data, images, 1, random_seed, 0, e);
    if (!rc) rc = job_repeat(&j, repeat_ds, e);
    if (rc) return job_free(&j), rc;
    job_images(&j);
    int *pred = malloc((size_t)(j.n ? j.n : 1) * sizeof *pred);
    float *scores = output ? malloc((size_t)(j.n ? j.n : 1) * (size_t)classes * sizeof *scores) : NULL;
    double layer_s[CG_MAX_LAYERS] = {0}, total_s = 0;
    /* samples[l * repeat + r]: layer l's time in run r (l = nlayers: the whole run) */
    double *samples = malloc((size_t)(s->nlayers + 1) * (size_t)repeat * sizeof *samples);
    cg_run_nets rn;
    memset(&rn, 0, sizeof rn);
    rn.k = devices_t ? dev.k : 1, rn.dev = devices_t ? &dev : NULL;
    if (!pred || !samples || (output && !scores)) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    /* a small run is one launch of its images, through kernels generated for that batch */
    if (use_gpu && !batch_t && j.n > 0 && cg_batch_bucket(j.n)) no.batch = j.n;
    double *lat = malloc((size_t)repeat * sizeof *lat); /* each call's host wall time, ms */
    if (!lat) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    if (!rc) rc = open_nets(&j, &no, &rn, e);
    cg_input in = {j.xt, j.n, s->C, s->H, s->W, j.x};
    double ms[CG_MAX_LAYERS], total = 0;
    /* with repeats on the GPU, one untimed warm-up run first; report medians */
    if (!rc && use_gpu && repeat > 1) rc = run_nets(&rn, &in, pred, scores, NULL, s->nlayers, ms, &total, e);
    /* the CPU backend can take tens of seconds: on a terminal a progress line on stderr, erased after */
    const int cpu_tty = !use_gpu && isatty(fileno(stderr));
    if (!rc && cpu_tty) {
        fflush(stdout);
        fprintf(stderr, "\rrunning %lld image%s on the CPU backend...\033[K", j.n, j.n == 1 ? "" : "s");
        fflush(stderr);
    }
    for (int r = 0; !rc && r < repeat; r++) {
        double t0 = cg_now_ms();
        if ((rc = run_nets(&rn, &in, pred, scores, NULL, s->nlayers, ms, &total, e))) break;
        lat[r] = cg_now_ms() - t0;
        for (int l = 0; l < s->nlayers; l++) samples[l * repeat + r] = ms[l] / 1e3;
        samples[s->nlayers * repeat + r] = total / 1e3;
    }
    if (cpu_tty) fputs("\r\033[K", stderr), fflush(stderr);
    for (int l = 0; !rc && l <= s->nlayers; l++) {
        double m = median(samples + l * repeat, (int)repeat);
        if (l < s->nlayers) layer_s[l] = m;
        else total_s = m;
    }
    if (!rc) {
        printf("New Inference\n");
        int untimed = 0;
        for (int l = 0; l < s->nlayers; l++)
            if (s->layers[l].op == CG_OP_CONV && isnan(layer_s[l])) untimed = 1;
            else if (s->layers[l].op == CG_OP_CONV) printf("Op Time: %.6f\n", layer_s[l]);
        const cg_gpu_times *gt = use_gpu ? cg_net_gpu_times(rn.nets[0]) : NULL;
        if (untimed && gt && gt->whole == CG_RAN_WHOLE)
            printf("Op Time: not measured per layer (one whole-network kernel ran every layer; "
                   "--whole off times each layer)\n");
        else if (untimed)
            printf("Op Time: not measured per layer (kernels for %lld image%s overlap their launches; "
                   "--profile times each layer)\n", no.batch, no.batch == 1 ? "" : "s");
        double acc = j.labels ? accuracy(pred, j.labels, j.n) : 0;
        if (random_seed >= 0) printf("Correctness: - Model: %s (random input)\n", s->name);
        else if (j.labels) printf("Correctness: %.4f Model: %s\n", acc, s->name);
        else printf("Predictions: %lld image%s (no labels) Model: %s\n", j.n, j.n == 1 ? "" : "s", s->name);
        if (output) {
            long long shape[2] = {j.n, classes};
            int bad = ends_with(output, ".csv")
                          ? cg_csv_write_predictions(output, (int)j.n, pred, classes, scores, e)
                          : cg_npy_write(output, CG_NPY_F32, 2, shape, scores, e);
            if (bad) rc = CG_EXIT_IO;
            else printf("Output: %lld prediction%s and scores -> %s\n", j.n, j.n == 1 ? "" : "s", output);
        }
        if (repeat > 1) {
            double gpu_ms = total_s * 1e3;
            qsort(lat, (size_t)repeat, sizeof *lat, cmp_double);
            printf("Latency: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms per call of %lld image%s (host wall time, "
                   "pixels in host memory to predictions in host memory, %lld calls); %s time %.3f ms (median)\n",
                   lat[percentile_at(50, repeat)], lat[percentile_at(90, repeat)], lat[percentile_at(99, repeat)],
                   j.n, j.n == 1 ? "" : "s", repeat, use_gpu ? "GPU" : "compute", gpu_ms);
        }
        if (use_gpu && profile) print_profiles(&rn), print_tuned(s, from_record, gt ? gt->bucket : 0);
        if (!rc && json &&
            write_json(json, &j, &rn, j.labels && random_seed < 0 ? &acc : NULL, layer_s, total_s, (int)repeat,
                       repeat > 1 ? lat : NULL, use_gpu ? from_record : NULL, e))
            rc = CG_EXIT_IO;
    }
    for (int i = 0; i < rn.k; i++) cg_net_close(rn.nets[i]);
    free(pred), free(samples), free(scores), free(lat);
    job_free(&j);
    return rc;
}

static const char check_usage[] =
    "usage: convgen check SPEC|NET.cgb [options]\n"
    "\n"
    "Run the network on the GPU and on the CPU reference and compare every layer\n"
    "(max abs, max rel and relative L2 error; above the layer's tolerance fails: 1e-5 for fp32,\n"
    "from the precision and the reduction length for tf32, bf16 and fp16, docs/design.md), then the\n"
    "predictions. A layer that is not fp32, or comes after one, is also run alone (its kernels fed\n"
    "the reference's inputs) and judged by that run against its own tolerance.\n"
    "\n"
    "  --images N          the first N images (default 200; at most the set's size)\n"
    "  --fatbin F          kernels from a fat binary (convgen build) instead of NVRTC\n"
    "  --no-cache          compile every kernel, bypassing the JIT cache\n"
    "  --no-pdl            no programmatic dependent launch (sm_90 and newer)\n"
    "  --whole auto|on|off where the kernels include a whole-network kernel: auto (default) checks\n"
    "                      both paths, the per-layer kernels then the whole kernel; on or off: that one\n"
    "  --device N          the GPU to check (default 0)\n"
    "  --devices L         several GPUs (0,1,... or all), each checking its contiguous\n"
    "                      shard of the images; not with --device\n"
    "  --seed S            fresh random weights from seed S (a spec without weights file)\n"
    "  --data DIR          where the IDX files are (default " CG_DATA_DIR_DEFAULT ")\n"
    "  --random-input S    made-up images from seed S instead of the data set\n"
    "  --repeat-dataset K  the images K times over\n"
    "  --batch B           images per batch on the GPU (default: as many as fit)\n"
    "  --tuning FILE       the tuning record to apply (default: SPEC's .tuning.yaml if present)\n"
    "  --no-tuning         ignore any tuning record\n"
    "  -h, --help          this text\n";

/* check --devices: every GPU answers; the first is the one the tuning record
 * is checked against. */
static int probe_devices(cg_devices *dev, cg_net_options *go, cg_err *e)
{
    int rc = cg_devices_probe(dev, e);
    if (!rc) go->device = dev->id[0];
    return rc;
}

/* check's "on ...": the device's name, or with --devices each GPU and the
 * images it checked. */
static void gpu_names(const cg_run_nets *gn, char *buf, size_t n)
{
    if (!gn->dev) {
        snprintf(buf, n, "%s", cg_net_device_name(gn->nets[0]));
        return;
    }
    size_t at = 0;
    for (int i = 0; i < gn->k && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%sGPU %d (%s, %lld images)", i ? ", " : "", gn->dev->id[i],
                               cg_net_device_name(gn->nets[i]), gn->sh[i].n);
}

/* check's line of a layer compared as it came out of the network's run (d)
 * against tol: the table of an fp32 network as it always was. */
static void print_net_row(const cg_layer *L, const cg_harness_diff *d, double tol)
{
    printf("%-12s %-8s %14.3e %14.3e %14.3e %10.1e%s\n", L->name, cg_op_name(L->op), d->max_abs, d->max_rel, d->rel_l2,
           tol, d->ok ? "" : "  FAIL (> tolerance)");
}

/* check: one GPU run's layers (gl) and predictions (gp) against the CPU
 * reference's (cl, cp), printed; nonzero when any is beyond its tolerance. The
 * heading says which path ran: the per-layer kernels or the whole-network kernel.
 * al: the isolated pass (isolate.h), NULL where none ran or the whole-network
 * kernel computed these layers (it cannot run a layer alone). A layer run alone
 * is judged by that run against its own tolerance, its error in the network's
 * run printed beside it against the bound summed along the graph (information:
 * that bound can pass 1 on a deep 16-bit network; an element the run left
 * unwritten still fails); every other layer by the network's run against that
 * bound, which is 1e-5 for it (nothing before it is above fp32's). */
static int check_compare(const cg_job *jp, const cg_run_nets *gnp, const char *fatbin, float *const *gl,
                         float *const *cl, const int *gp, const int *cp, const cg_alone *al)
{
    const cg_spec *s = jp->s;
    int bad = 0;
    char where[1024];
    gpu_names(gnp, where, sizeof where);
    printf("%s on %s, %lld images, %s weights (GPU: %s, %s)\n", s->name, where, jp->n,
           jp->is_bundle ? "the bundle's" : jp->w.random ? "seeded random" : "trained",
           jp->is_bundle ? "bundle" : fatbin ? "fat binary" : "NVRTC", cg_net_host_costs(gnp->nets[0])->arch);
    /* which path computed these layers, where the kernels include a whole-network kernel */
    const cg_gpu_times *t = cg_net_gpu_times(gnp->nets[0]);
    char whole[512] = "";
    if (t) cg_gpu_whole_summary(t, whole, sizeof whole);
    if (whole[0])
        printf("path: %s (%s)\n", t->whole == CG_RAN_WHOLE ? "the whole-network kernel" : "the per-layer kernels", whole);
    /* each layer's bound through the network: its precision and reduction's and
     * those of the layers before it (1e-5 throughout a network of fp32 layers) */
    double tol[CG_MAX_LAYERS];
    cg_spec_tols(s, tol);
    int alone = 0;
    for (int l = 0; al && l < s->nlayers; l++) alone |= al->alone[l];
    if (alone)
        printf("a layer marked 'alone': its kernels fed the CPU reference's inputs (rounded as stored), against the\n"
               "reference from those inputs and its own tolerance; 'network' beside it: the whole run's error and the\n"
               "bound summed along the graph (information)\n");
    else if (t && t->whole == CG_RAN_WHOLE && cg_alone_wanted(s, (int[CG_MAX_LAYERS]){0}))
        printf("(one kernel computes every layer: none can run alone; each is held to the bound summed along the graph)\n");
    if (alone)
        printf("%-12s %-8s %-7s %14s %14s %14s %10s %12s %10s\n", "layer", "op", "run", "max abs err", "max rel err",
               "rel L2 err", "tolerance", "network L2", "bound");
    else
        printf("%-12s %-8s %14s %14s %14s %10s\n", "layer", "op", "max abs err", "max rel err", "rel L2 err",
               "tolerance");
    for (int l = 0; l < s->nlayers; l++) {
        const cg_layer *L = &s->layers[l];
        size_t n = (size_t)jp->n * (size_t)cg_layer_out_elems(L);
        const char *into = cg_net_layer_into(gnp->nets[0], l);
        if (into) { /* no tensor on the GPU: the add's row compares what the kernel wrote */
            if (alone)
                printf("%-12s %-8s %-7s %14s %14s %14s %10s %12s %10s  (computed with %s in one kernel: compared there)\n",
                       L->name, cg_op_name(L->op), "-", "-", "-", "-", "-", "-", "-", into);
            else
                printf("%-12s %-8s %14s %14s %14s %10s  (computed with %s in one kernel: compared there)\n", L->name,
                       cg_op_name(L->op), "-", "-", "-", "-", into);
            continue;
        }
        cg_harness_diff d;
        cg_harness_compare(gl[l], cl[l], n, tol[l], &d);
        if (!alone) {
            bad |= !d.ok;
            print_net_row(L, &d, tol[l]);
            continue;
        }
        if (!al->alone[l]) {
            bad |= !d.ok;
            printf("%-12s %-8s %-7s %14.3e %14.3e %14.3e %10.1e %12s %10s%s\n", L->name, cg_op_name(L->op), "network",
                   d.max_abs, d.max_rel, d.rel_l2, tol[l], "-", "-", d.ok ? "" : "  FAIL (> tolerance)");
            continue;
        }
        const cg_harness_diff *a = &al->d[l];
        int fail = !a->ok || d.nonfinite;
        bad |= fail;
        char net[16];
        snprintf(net, sizeof net, d.nonfinite ? "unwritten" : "%.3e", d.rel_l2);
        const char *why = !a->ok ? "  FAIL (> tolerance)"
                        : d.nonfinite ? "  FAIL (the network's run left elements unwritten)"
                        : d.rel_l2 > tol[l] ? "  (network above its bound)" : "";
        printf("%-12s %-8s %-7s %14.3e %14.3e %14.3e %10.1e %12s %10.1e%s\n", L->name, cg_op_name(L->op), "alone",
               a->max_abs, a->max_rel, a->rel_l2, al->tol[l], net, tol[l], why);
    }
    /* a differing prediction is allowed only where the reference's top two
     * scores lie within the last layer's bound through the network of each
     * other (1e-5 for fp32: a genuine tie at float precision): the predictions
     * come from the whole run, whose scores carry every layer's error, not from
     * the last layer run alone */
    double tie = tol[s->nlayers - 1];
    long long same = 0, ties = 0;
    long long oc = cg_layer_out_elems(&s->layers[s->nlayers - 1]);
    for (long long i = 0; i < jp->n; i++) {
        if (gp[i] == cp[i]) {
            same++;
            continue;
        }
        if (gp[i] < 0 || gp[i] >= oc) { /* unwritten (the poison) or garbage: no class to compare */
            printf("image %lld: GPU says %d, which is no class (0 to %lld)\n", i, gp[i], oc - 1);
            bad = 1;
            continue;
        }
        const float *r = cl[s->nlayers - 1] + i * oc;
        double gap = fabs((double)r[cp[i]] - (double)r[gp[i]]);
        printf("image %lld: GPU says %d, CPU says %d, reference scores differ by %.3e%s\n", i, gp[i], cp[i],
               gap, gap <= tie ? " (a tie)" : "");
        if (gap <= tie) ties++;
        else bad = 1;
    }
    printf("identical predictions: %lld of %lld (%.4f)%s\n", same, jp->n, (double)same / (double)jp->n,
           ties ? " (the rest are ties)" : "");
    return bad;
}

/* check's isolated pass over every GPU's shard of the images (the shards of
 * the run just made), merged into al (each layer's worst). */
static int check_alone_all(const cg_job *j, cg_run_nets *gn, cg_net *cnet, float *const *cl, const int *want,
                           cg_alone *al, cg_err *e)
{
    const cg_spec *s = j->s;
    const size_t img = (size_t)s->C * s->H * s->W;
    memset(al, 0, sizeof *al);
    cg_alone *one = malloc(sizeof *one);
    if (!one) return cg_fail(e, "out of memory"), CG_EXIT_IO;
    int rc = 0;
    for (int i = 0; i < gn->k && !rc; i++) {
        long long off = gn->k > 1 ? gn->sh[i].off : 0, n = gn->k > 1 ? gn->sh[i].n : j->n;
        if (!n) continue;
        float *act[CG_MAX_LAYERS];
        for (int l = 0; l < s->nlayers; l++) act[l] = cl[l] + (size_t)off * (size_t)cg_layer_out_elems(&s->layers[l]);
        rc = cg_check_alone(gn->nets[i], cnet, s, j->d.pixels + (size_t)off * img, n, act, want, one, e);
        if (!rc) cg_alone_merge(al, one, s->nlayers);
    }
    free(one);
    return rc;
}

int cg_cmd_check(int argc, char **argv, cg_err *e)
{
    const char *spec = NULL, *images_t = NULL, *fatbin = NULL, *data = NULL, *no_cache = NULL,
               *seed_t = NULL, *random_t = NULL, *device_t = NULL, *tuning = NULL, *no_tuning = NULL,
               *repeat_ds_t = NULL, *batch_t = NULL, *devices_t = NULL, *no_pdl = NULL, *whole_t = NULL;
    const cg_opt opts[] = {{"--images", 1, &images_t}, {"--fatbin", 1, &fatbin},  {"--data", 1, &data},
                           {"--repeat-dataset", 1, &repeat_ds_t}, {"--batch", 1, &batch_t},
                           {"--no-cache", 0, &no_cache}, {"--seed", 1, &seed_t}, {"--random-input", 1, &random_t},
                           {"--device", 1, &device_t}, {"--tuning", 1, &tuning}, {"--no-tuning", 0, &no_tuning},
                           {"--devices", 1, &devices_t}, {"--no-pdl", 0, &no_pdl}, {"--whole", 1, &whole_t}};
    int rc = cg_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts, &spec, check_usage, e);
    if (rc == CG_OPTS_HELP) return 0;
    long long images = 200, seed = -1, random_seed = -1, device = 0, repeat_ds = 1, batch = 0;
    if (!rc && !spec) rc = (cg_fail(e, "check needs a SPEC"), CG_EXIT_USAGE);
    if (!rc) rc = cg_opt_int("--repeat-dataset", repeat_ds_t, 1, 100000, &repeat_ds, e);
    if (!rc) rc = cg_opt_int("--batch", batch_t, 1, 1LL << 31, &batch, e);
    if (!rc) rc = cg_opt_int("--device", device_t, 0, 1023, &device, e);
    if (!rc) rc = cg_opt_int("--images", images_t, 1, 10000000, &images, e);
    if (!rc) rc = cg_opt_int("--seed", seed_t, 0, 1LL << 62, &seed, e);
    if (!rc) rc = cg_opt_int("--random-input", random_t, 0, 1LL << 62, &random_seed, e);
    int whole = CG_WHOLE_AUTO;
    if (!rc) rc = whole_option(whole_t, &whole, e);
    cg_devices dev;
    if (!rc && devices_t) rc = devices_option(devices_t, device_t, &dev, e);
    if (rc) return rc;
    cg_net_options go, co;
    cg_net_options_init(&go);
    cg_net_options_init(&co);
    go.backend = CG_BACKEND_CUDA, go.device = (int)device, go.fatbin = fatbin, go.no_cache = no_cache != NULL;
    go.poison = 1, go.keep_tensors = 1, go.tuning = tuning, go.no_tuning = no_tuning != NULL, go.batch = batch;
    /* every overlapped launch as it is (no timing of plain launches against it): the
     * overlapped launches are the ones whose results could differ */
    go.no_pdl = no_pdl != NULL, go.whole = whole, go.pdl_always = 1;
    cg_job j;
    int from_record[CG_MAX_LAYERS];
    if ((rc = job_spec(&j, spec, e)) || (rc = bundle_refuses(&j, fatbin, tuning, no_tuning, no_cache, e)) ||
        (devices_t && (rc = probe_devices(&dev, &go, e))) ||
        (!j.is_bundle && (rc = cg_net_tune(j.s, &go, from_record, NULL, e))) ||
        (rc = job_load(&j, spec, data, images, images_t != NULL, random_seed, 1, e)) ||
        (rc = job_repeat(&j, repeat_ds, e)))
        return job_free(&j), rc;
    const cg_spec *s = j.s;
    if (seed >= 0 && j.w.random && !j.is_bundle) {
        /* fresh weights too, when the spec names no file */
        j.s->seed = (unsigned long long)seed;
        cg_weights_free(&j.w);
        if (cg_weights_for_spec(s, &j.w, e)) return job_free(&j), CG_EXIT_INPUT;
    }
    float *gl[CG_MAX_LAYERS] = {0}, *cl[CG_MAX_LAYERS] = {0};
    int *gp = malloc((size_t)j.n * sizeof *gp), *cp = malloc((size_t)j.n * sizeof *cp);
    int ok = gp && cp;
    for (int l = 0; l < s->nlayers && ok; l++) {
        size_t n = (size_t)j.n * (size_t)cg_layer_out_elems(&s->layers[l]);
        gl[l] = malloc(n * sizeof(float));
        cl[l] = malloc(n * sizeof(float));
        ok = gl[l] && cl[l];
    }
    cg_net *cnet = NULL;
    cg_run_nets gn; /* the GPU's network, or one per GPU of --devices */
    memset(&gn, 0, sizeof gn);
    gn.k = devices_t ? dev.k : 1, gn.dev = devices_t ? &dev : NULL;
    cg_input in = {CG_INPUT_U8, j.n, s->C, s->H, s->W, j.d.pixels};
    double ms[CG_MAX_LAYERS], total;
    if (!ok) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    if (!rc) rc = open_nets(&j, &go, &gn, e);
    if (!rc) rc = job_open(&j, &co, &cnet, e);
    if (!rc) rc = net_status(cnet, cg_net_run_layers(cnet, &in, cp, NULL, cl), e);
    /* the layers as the path that runs computes them: where the kernels include a
     * whole-network kernel and --whole is auto, both paths in turn (per-layer
     * kernels first), each compared; a failure of either fails the check */
    int both = !rc && whole == CG_WHOLE_AUTO && cg_net_has_whole(gn.nets[0]);
    int bad = 0;
    /* the layers whose bound through the network is above fp32's run alone too,
     * once, beside the first run of the per-layer kernels */
    int want[CG_MAX_LAYERS] = {0}, nwant = cg_alone_wanted(s, want);
    cg_alone *al = nwant ? malloc(sizeof *al) : NULL;
    if (nwant && !al && !rc) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    int alone_done = 0;
    for (int pass = 0; !rc && pass < (both ? 2 : 1); pass++) {
        int mode = both ? (pass ? CG_WHOLE_ON : CG_WHOLE_OFF) : whole;
        for (int i = 0; i < gn.k && both; i++) cg_net_set_whole(gn.nets[i], mode);
        rc = run_nets(&gn, &in, gp, NULL, gl, s->nlayers, ms, &total, e);
        const cg_gpu_times *gt = rc ? NULL : cg_net_gpu_times(gn.nets[0]);
        int layers = gt && gt->whole != CG_RAN_WHOLE;
        if (!rc && al && layers && !alone_done) rc = check_alone_all(&j, &gn, cnet, cl, want, al, e), alone_done = 1;
        if (!rc) bad |= check_compare(&j, &gn, fatbin, gl, cl, gp, cp, layers ? al : NULL);
    }
    free(al);
    if (!rc && bad) rc = (cg_fail(e, "%s: GPU and CPU disagree beyond the tolerance", spec), CG_EXIT_DEVICE);
    for (int i = 0; i < gn.k; i++) cg_net_close(gn.nets[i]);
    cg_net_close(cnet);
    for (int l = 0; l < CG_MAX_LAYERS; l++) free(gl[l]), free(cl[l]);
    free(gp), free(cp);
    job_free(&j);
    return rc;
}
