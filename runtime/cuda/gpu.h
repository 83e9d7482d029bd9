/* gpu.h — the CUDA backend: run a generated network on the device.
 *
 * Opening does the host-side work once: generate the sources in memory, compile
 * them through NVRTC (with the on-disk cache) or load a fat binary, upload the
 * weights, allocate one arena per stream set holding a batch of every tensor,
 * placed by the memory plan (runtime/formats/memplan.h): tensors never live at
 * the same time share bytes unless every tensor is kept (keep_tensors, poison).
 * Running streams the images through in batches (base/pipeline.h):
 * each set has its own stream, device tensors and pinned host staging, so the
 * upload of batch i+1 and the download of batch i-1 overlap the kernels of
 * batch i; kernels of successive batches still run one batch after another,
 * so each layer's time, taken with events, is its own. Kernel choice and launch
 * geometry come from the manifest; this file only evaluates its grid extents. */
#ifndef CG_GPU_H
#define CG_GPU_H
#include "manifest.h"
#include "pipeline.h"
#include "spec.h"
#include "units.h"
#include "weights.h"

typedef struct cg_gpu cg_gpu;

typedef struct {
    const char *fatbin;  /* NULL: JIT through NVRTC */
    int no_cache;        /* JIT without the on-disk cache */
    long long batch;     /* images per batch; 0: as many as fit */
    int poison;          /* fill every float tensor with NaN before each batch */
    int profile;         /* time every kernel launch */
    int device;          /* CUDA device index (0-based) */
    cg_buf *log;         /* NVRTC's messages for kernels that fail to compile are
                            appended here; NULL: written to standard error */
    int streams;         /* stream sets, each holding one batch: 1 (no overlap)
                            to CG_PIPE_MAX_SETS; 0: 2 */
    /* A bundle's sections (borrowed): with manifest set, the kernels are the
     * fat binary's bytes and the launches the manifest's; nothing is
     * generated (no Lua) or compiled. The build id must be the manifest's. */
    const char *manifest;
    size_t manifest_len;
    const void *fatbin_data;
    size_t fatbin_len;
    int no_graphs;       /* launch every kernel itself instead of replaying a captured graph */
    int no_pdl;          /* no programmatic dependent launch (by default on a cc >= 9.0 device
                            a kernel with the prologue overlaps the launch of the one before) */
    int keep_tensors;    /* every tensor readable after a batch, none sharing memory (a run's
                            layer_out needs it; poison implies it); 0: tensors share the
                            arena where their live ranges allow (runtime/formats/memplan.h) */
    int whole;           /* the whole-network kernel (manifest whole=1), where the manifest has
                            one: CG_WHOLE_AUTO (0, or -1): the faster of it and the per-layer
                            kernels: as the tuning record decided for this bucket and these
                            kernels (the spec's whole_tuned), else measured the first time a
                            count of images is run; CG_WHOLE_ON: it; CG_WHOLE_OFF: the
                            per-layer kernels */
    int pdl_always;      /* with PDL in effect, every launch that can overlap does; 0: for
                            kernels of a bucket, overlapped and plain launches are timed the first
                            time a count of images is run and the faster kept */
} cg_gpu_opts;
enum { CG_WHOLE_AUTO = 0, CG_WHOLE_ON = 1, CG_WHOLE_OFF = 2 };

/* Where one kernel's device code came from, and what it cost (--profile). */
typedef struct {
    char name[128];
    double ms;  /* its NVRTC compile or cache read; 0 from a fat binary */
    int from;   /* CG_FROM_NVRTC, CG_FROM_CACHE or CG_FROM_FATBIN */
} cg_kernel_build;
enum { CG_FROM_NVRTC, CG_FROM_CACHE, CG_FROM_FATBIN };

/* Host-side costs, in milliseconds, and what the JIT cache did. */
typedef struct {
    double generate_ms, compile_ms, load_ms, weights_ms, alloc_ms;
    double upload_ms, download_ms; /* the copies' device time (events), over all runs */
    int cache_hits, cache_misses, compiled;
    int jit_threads;      /* threads that compiled (JIT) */
    int nbuild;           /* kernels, in manifest file order */
    cg_kernel_build build[CG_MAN_KERNELS];
    char cache_note[256]; /* e.g. why the cache was skipped or an entry rebuilt */
    char arch[32];        /* "sm_90" or "compute_120 (PTX)" or "fatbin" */
    size_t arena_per_image;  /* device bytes per image per stream set, as planned */
    size_t tensors_per_image; /* every tensor's bytes per image: the arena without reuse */
    int keep_tensors;        /* the plan keeps every tensor (no reuse) */
} cg_host_costs;

/* One kernel's launches (for --profile). */
typedef struct {
    char name[128];
    int calls;
    double total_ms, min_ms, max_ms;
} cg_kernel_prof;

typedef struct {
    double layer_ms[CG_MAX_LAYERS]; /* per spec layer, summed over batches; NaN: not timed
                                       alone (small-batch kernels under PDL, no --profile) */
    double total_ms;                /* first kernel start to last kernel end, summed */
    int nprof;
    cg_kernel_prof prof[CG_MAN_KERNELS];
    /* the run end to end (streamed execution) */
    long long images;
    int batches, streams;           /* batches run; stream sets used */
    double wall_ms;                 /* host clock, cg_gpu_run's call to its return */
    double span_ms;                 /* device: first upload's start to last download's end */
    double upload_ms, download_ms;  /* device time of the copies, summed over batches */
    double stage_ms;                /* host: pixels into pinned memory, results out of it */
    double wait_ms;                 /* host: blocked waiting for a batch to come back */
    int graph_captures;             /* CUDA graphs captured (a set's first batch of a size) */
    int graph_replays;              /* batches run as one graph launch; 0: plain launches */
    int bucket;                     /* the batch the kernels were generated for; 0: large */
    int pdl_launches;               /* a batch's launches with programmatic stream serialization */
    /* the whole-network kernel: CG_RAN_NO_WHOLE (the manifest has none and none was asked
     * for), CG_RAN_WHOLE (it ran the last batch) or CG_RAN_LAYERS (the per-layer kernels did) */
    int whole;
    int whole_from;                 /* where the choice came from: CG_WHOLE_FROM_* */
    double whole_ms, layers_ms;     /* one batch each way as measured to choose (median), now or when
                                       tuned (whole_from); NaN: not measured. layers_ms: the per-layer
                                       kernels the way they run (the faster of pdl_ms and plain_ms) */
    double pdl_ms, plain_ms;        /* the per-layer kernels measured to choose how they are launched:
                                       with programmatic dependent launch where it applies, and each
                                       after the one before completes; NaN: not measured */
    int plain;                      /* the last batch's per-layer kernels ran without PDL, having been
                                       measured faster so (pdl_ms, plain_ms) */
    char whole_note[256];           /* why the whole kernel did not run where it was asked for or
                                       could have ("" where nothing is to be said) */
} cg_gpu_times;
enum { CG_RAN_NO_WHOLE = 0, CG_RAN_WHOLE = 1, CG_RAN_LAYERS = 2 };
/* Where the choice between the two came from: none made (no whole-network kernel,
 * or none could run: whole_note), measured at this count's first batch (auto),
 * the tuning record (auto, cg_spec.whole_tuned), or forced (CG_WHOLE_ON, _OFF). */
enum { CG_WHOLE_FROM_NONE = 0, CG_WHOLE_FROM_MEASURED, CG_WHOLE_FROM_RECORD, CG_WHOLE_FROM_FORCED };
/* The word --json writes for it: "measured", "record", "forced", NULL for none. */
const char *cg_whole_from_name(int from);

/* The share of the copies' time hidden behind kernels, 0..1: (upload +
 * kernels + download, one after another) minus the device span, over the
 * copies' time. 0 when nothing was copied. */
double cg_gpu_overlap(const cg_gpu_times *t);
/* The --profile lines about streaming: images/s end to end, the kernels'
 * share of the wall time (what the kernels alone would allow), the overlap. */
void cg_gpu_stream_summary(const cg_gpu_times *t, char *buf, size_t n);

/* Each call below makes g's device context current for its duration and
 * restores the caller's (cuCtxPushCurrent/PopCurrent), so several cg_gpu on
 * several devices can be used from one thread. cg_gpu_close is needed after
 * a failed open too (*out is set whenever memory allowed). */
int cg_gpu_open(cg_gpu **out, const cg_spec *s, const cg_weights *w, const cg_gpu_opts *o,
                cg_host_costs *hc, cg_err *e);
/* Predictions for n images (pixels: n * C*H*W bytes). probs (n * classes) and
 * layer_out (per spec layer, n * cg_layer_out_elems) may be NULL; a layer asked
 * for must be kept after a batch (cg_gpu_layers_kept). */
int cg_gpu_run(cg_gpu *g, const unsigned char *pixels, long long n, int *pred, float *probs,
               float **layer_out, cg_gpu_times *t, cg_host_costs *hc, cg_err *e);
/* What cg_gpu_run_input reads. f32: floats already scaled (the input kernel's
 * output, C*H*W per image; the input kernel is skipped), else uint8 pixels.
 * on_device: input, pred and probs are device pointers (CUdeviceptr values) in
 * g's context; the copies and launches are queued on `stream` (a CUstream, NULL
 * for the legacy stream) and nothing waits for them: no timings, no layer_out.
 * g's buffers are in use until that stream has done the work. */
typedef struct {
    const void *input;
    int f32;
    int on_device;
    void *stream;
} cg_gpu_input;
int cg_gpu_run_input(cg_gpu *g, const cg_gpu_input *in, long long n, int *pred, float *probs,
                     float **layer_out, cg_gpu_times *t, cg_host_costs *hc, cg_err *e);
/* Whether the network's input can be given as floats (its first kernel is the
 * uint8-to-float input kernel, which a float input skips). */
int cg_gpu_takes_f32(const cg_gpu *g);
/* 0 when every layer layer_out asks for (non-NULL entries) stays readable after
 * a batch under g's memory plan; else -1 and e names the first that does not
 * (open with keep_tensors to read them). */
int cg_gpu_layers_kept(const cg_gpu *g, float *const *layer_out, cg_err *e);
/* The --profile line about the whole-network kernel ("network: whole-network
 * kernel 4.2 us, per-layer kernels 11.0 us: whole"); "" where the manifest has
 * none and none was asked for. */
void cg_gpu_whole_summary(const cg_gpu_times *t, char *buf, size_t n);
/* Whether g's manifest has a whole-network kernel. */
int cg_gpu_has_whole(const cg_gpu *g);
/* The build id of g's kernels (the manifest's hash): what a tuning record's
 * whole-network decision names. */
const char *cg_gpu_build_id(const cg_gpu *g);
/* Why the tuning record's whole-network decision for g's bucket was not taken
 * (one line, naming the record: its kernels are not g's any more), "" when
 * none was given or it was taken. */
const char *cg_gpu_whole_notice(const cg_gpu *g);
/* Change how g chooses between it and the per-layer kernels (CG_WHOLE_*), for
 * the runs after (check compares the layers as each path computes them). */
void cg_gpu_set_whole(cg_gpu *g, int mode);
const char *cg_gpu_device_name(const cg_gpu *g);
/* The add whose kernel computes spec layer l's output in its epilogue (the
 * manifest's into=; the layer has no tensor of its own and a run's layer_out
 * for it is NaN), else NULL. */
const char *cg_gpu_layer_into(const cg_gpu *g, int l);
long long cg_gpu_batch(const cg_gpu *g);
/* The units `convgen check` runs alone (units.h), from g's manifest. */
int cg_gpu_units(const cg_gpu *g, cg_units *p, cg_err *e);
/* Unit u of plan p (cg_gpu_units) alone over n images, in batches through the
 * first stream set: the tensors it writes poisoned, those it reads from outside
 * uploaded (pixels: the uint8 images, for a unit reading them; ext: the
 * reference's floats by slot, as cg_cpu_unit takes them, narrowed to the
 * tensors' 16-bit types where they have one), its kernels launched in manifest
 * order and every layer tensor it writes downloaded into out[i] (widened;
 * layers out[i] NULL or not kept are skipped). g must keep its tensors
 * (keep_tensors or poison): an input uploaded first must outlive the kernels. */
int cg_gpu_run_unit(cg_gpu *g, const cg_units *p, int u, long long n, const unsigned char *pixels,
                    const float *const *ext, float **out, cg_err *e);
void cg_gpu_close(cg_gpu *g);

#endif
