/* backend.h — the backends behind one interface: open a network (spec + weights)
 * on a device, run batches of images, close. The CPU reference (runtime/cpu) and
 * the CUDA backend (runtime/cuda/gpu.c) each provide one table of functions; the
 * public API (runtime/api/net.c) and, through it, the command line hold a
 * backend only as this table and an opaque state, so neither has a second code
 * path per backend. Every function returns 0 or a status (CG_STATUS_*, the
 * command's exit codes) with e holding one line; nothing here prints. */
#ifndef CG_BACKEND_H
#define CG_BACKEND_H
#include "convgen.h"
#include "gpu.h"
#include "spec.h"
#include "weights.h"

typedef struct {
    int device;          /* CUDA device index */
    const char *fatbin;  /* CUDA: kernels from this fat binary; NULL: JIT */
    int no_cache;        /* CUDA: bypass the JIT cache */
    long long batch;     /* CUDA: images per launch, 0: as many as fit */
    int poison;          /* CUDA: NaN-fill every float tensor before each batch */
    int profile;         /* CUDA: time every kernel launch */
    cg_buf *log;         /* compiler messages of a failed open are appended here */
    int streams;         /* CUDA: stream sets (batches in flight); 0: 2 */
    const char *manifest; /* CUDA, a bundle: its manifest and fat binary (borrowed); */
    size_t manifest_len;  /* nothing is generated or compiled */
    const void *fatbin_data;
    size_t fatbin_len;
    int no_graphs;       /* CUDA: plain launches, no captured graph */
    int no_pdl;          /* CUDA: no programmatic dependent launch */
    int keep_tensors;    /* CUDA: every tensor readable after a batch (no memory reuse) */
    int whole;           /* CUDA: the whole-network kernel: CG_WHOLE_AUTO, _ON or _OFF (gpu.h) */
    int pdl_always;      /* CUDA: overlapped launches without timing plain ones (cg_net_options) */
} cg_backend_opts;

/* One run: n images in, predictions (and optionally scores and per-layer outputs) out. */
typedef struct {
    cg_input_type type;  /* CG_INPUT_U8 pixels or CG_INPUT_F32 scaled floats */
    const void *input;   /* n * C*H*W elements */
    long long n;
    int *pred;           /* n */
    float *scores;       /* n * classes, or NULL */
    float **layer_out;   /* NULL, or per spec layer NULL or n * cg_layer_out_elems floats */
    int on_device;       /* input, pred, scores are device pointers; queued on stream */
    void *stream;        /* CUstream (on_device) */
    double layer_ms[CG_MAX_LAYERS]; /* out: per spec layer (host runs) */
    double total_ms;                /* out: the whole run (host runs) */
} cg_backend_run;

typedef struct {
    const char *name; /* "cpu" or "cuda" */
    int (*open)(void **state, const cg_spec *s, const cg_weights *w, const cg_backend_opts *o, cg_err *e);
    int (*run)(void *state, cg_backend_run *r, cg_err *e);
    const char *(*device_name)(const void *state);
    int (*takes_f32)(const void *state);
    /* `convgen check`'s isolated pass (units.h): how the backend's layers group
     * into units that run alone (CUDA: its kernels'; CPU: a layer each), and one
     * unit of such a plan (its own or another backend's) over n images, from
     * the reference's tensors: pixels the uint8 images, ext and out as
     * cg_gpu_run_unit and cg_cpu_unit take them */
    int (*units)(const void *state, cg_units *p, cg_err *e);
    int (*run_unit)(void *state, const cg_units *p, int u, long long n, const unsigned char *pixels,
                    const float *const *ext, float **out, cg_err *e);
    void (*close)(void *state); /* NULL state is fine; needed after a failed open too */
} cg_backend;

extern const cg_backend cg_backend_cpu;
extern const cg_backend cg_backend_cuda;

/* The CUDA backend's own figures of its last open and run (the command's
 * --profile and --json); state must be a CUDA backend's. */
const cg_gpu_times *cg_backend_cuda_times(const void *state);
const cg_host_costs *cg_backend_cuda_costs(const void *state);
/* cg_gpu_layer_into of its network. */
const char *cg_backend_cuda_into(const void *state, int l);
/* cg_gpu_has_whole and cg_gpu_set_whole of its network. */
int cg_backend_cuda_has_whole(const void *state);
void cg_backend_cuda_set_whole(void *state, int mode);
/* cg_gpu_build_id and cg_gpu_whole_notice of its network. */
const char *cg_backend_cuda_build_id(const void *state);
const char *cg_backend_cuda_whole_notice(const void *state);

#endif
