/* convgen.h — libconvgen, the public C API: open a network, run images through
 * it on the CPU reference or a CUDA device, read its predictions and scores.
 *
 * Build against the installed library with
 *     cc app.c $(pkg-config --cflags --libs convgen)
 * This header is the only one installed; it needs nothing but <stddef.h>.
 *
 * Errors. Every function that can fail returns a cg_status: 0 (CG_STATUS_OK) or
 * one of the codes below, which are also the `convgen` command's exit codes.
 * After a failed call, cg_net_error(net) is one line saying what went wrong
 * (naming the file, and FILE:LINE:COL for a spec); after a successful call it
 * is "". Nothing in the library prints to stdout or stderr, and nothing exits.
 *
 * Threads. Distinct networks may be opened, run and closed concurrently from
 * different threads, on the same device or on different ones: each CUDA call
 * makes the network's device context current for its duration and restores
 * the caller's (cuCtxPushCurrent/PopCurrent), so one thread may also drive
 * networks on several devices. One network must not be used by two threads at
 * once: its calls are not locked, its buffers and its error message are its
 * own. cg_version and cg_cuda_probe may be called from any thread.
 *
 * Lifetimes. Memory given to a call is only read or written during it, except
 * for cg_net_run_device, which queues work on the caller's stream (see there).
 * Strings returned by the library belong to the network (or are static) and
 * stay valid until the next call on that network or its close. */
#ifndef CONVGEN_H
#define CONVGEN_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, "MAJOR.MINOR.PATCH"; the shared library's soname
 * (libconvgen.so.MAJOR) changes when this header changes incompatibly. */
#define CONVGEN_VERSION_MAJOR 0
const char *cg_version(void);

typedef enum {
    CG_STATUS_OK = 0,
    CG_STATUS_USAGE = 2,      /* a bad argument: NULL where something is needed, a shape or
                                 type that does not match the network, a call the backend
                                 does not offer (device pointers on the CPU) */
    CG_STATUS_INPUT = 3,      /* a bad spec, weights file, fat binary, bundle or tuning record */
    CG_STATUS_DEVICE = 4,     /* no CUDA driver or device, or a CUDA/NVRTC failure */
    CG_STATUS_IO = 5,         /* an I/O failure, out of memory, an internal error */
    CG_STATUS_UNSUPPORTED = 6 /* not in this version of the library */
} cg_status;

typedef enum {
    CG_BACKEND_CPU = 0, /* the plain C reference (double accumulation; OpenMP threads) */
    CG_BACKEND_CUDA = 1 /* generated kernels on a CUDA device */
} cg_backend_kind;

typedef enum {
    CG_INPUT_U8 = 0, /* pixels 0..255; the network scales them (the spec's scale, offset) */
    CG_INPUT_F32 = 1 /* floats already scaled: pixel * scale + offset, as the spec says */
} cg_input_type;

/* How to open a network. Fill with cg_net_options_init first, then change what
 * you need: fields may be added at the end in later versions. */
typedef struct {
    cg_backend_kind backend; /* default CG_BACKEND_CPU */
    int device;              /* CUDA device index (0-based); default 0 */
    const char *fatbin;      /* CUDA: kernels from this fat binary (`convgen build`) built
                                from the same spec, instead of compiling them (NVRTC) */
    const char *tuning;      /* CUDA: the tuning record to apply; NULL: the spec's
                                NAME.tuning.yaml beside it, if present */
    int no_tuning;           /* CUDA: apply no tuning record */
    int no_cache;            /* CUDA: compile every kernel, bypassing the on-disk cache */
    int streams;             /* CUDA: batches in flight (stream sets), 1 (no overlap) to 4; 0: 2 */
    long long batch;         /* CUDA: images per launch; 0: as many as fit in memory */
    int profile;             /* CUDA: time every kernel launch (the command's --profile) */
    int poison;              /* CUDA: fill every float tensor with NaN before each batch,
                                so that an element a kernel fails to write shows (testing) */
    long long weights_seed;  /* a spec without a weights file gets seeded random weights:
                                this seed; negative: the spec's `seed` */
    int no_graphs;           /* CUDA: launch each kernel itself; by default a batch's kernels
                                are captured once as a CUDA graph and replayed */
    int no_pdl;              /* CUDA: no programmatic dependent launch; by default, on a
                                device of compute capability 9.0 or newer, a kernel's launch
                                overlaps the end of the kernel before it (each kernel still
                                waits for the one before to complete before it reads) */
    int keep_tensors;        /* CUDA: keep every layer's output readable after a batch, so that
                                cg_net_run_layers can return any layer (poison implies it). By
                                default tensors no longer needed share device memory with later
                                ones, and cg_net_run_layers returns only the last layer's.
                                Ignored by the CPU backend, whose layers are always kept */
    int whole;               /* CUDA, where the network's kernels include a whole-network kernel (one
                                launch running every layer, generated for batches of 1 and 8 images):
                                0 or -1 (the default): auto, the faster of it and the per-layer
                                kernels, as the tuning record decided for these kernels (`convgen
                                tune --batch N`), else timed the first time a number of images
                                is run; 1: always
                                it (where there is none, the per-layer kernels, and the profile
                                says so); 2: never */
    int pdl_always;          /* CUDA, with programmatic dependent launch in effect: every launch
                                that can overlap the kernel before does. By default, for kernels
                                generated for a small batch (1 to 1024 images), the first time a
                                number of images is run the per-layer kernels are timed both with
                                their launches overlapped and launched plainly, and the faster
                                way is kept (launched early, a kernel's blocks can crowd a few
                                multiprocessors; see docs/design.md) */
} cg_net_options;

void cg_net_options_init(cg_net_options *o);

typedef struct cg_net cg_net;

/* Open the network SPEC describes (a YAML spec, see docs/spec.md): read and check
 * it, load its weights, and on CUDA generate its kernels and compile them (NVRTC,
 * with the on-disk cache) or load them from o->fatbin, upload the weights and
 * allocate one batch of every tensor. o NULL: the defaults (CPU).
 *
 * *out is set whenever memory allowed, also on failure: then the network only
 * answers cg_net_error (and cg_net_log) and must still be closed; any other call
 * on it returns CG_STATUS_USAGE. *out is NULL only when there was no memory for
 * it (CG_STATUS_IO) or out is NULL (CG_STATUS_USAGE). */
cg_status cg_net_open(const char *spec, const cg_net_options *o, cg_net **out);

/* Open a one-file bundle (`convgen build SPEC -o NET.cgb`: manifest, fat binary,
 * weights and the spec's text, with a format version and CRC-32s). Nothing but
 * that file is read: the spec and weights come from it, and on CUDA the kernels
 * from its fat binary and their launches from its manifest, so no generator,
 * template or compiler runs. A damaged, truncated or foreign file is
 * CG_STATUS_INPUT with one line naming it. o->fatbin and o->tuning are refused
 * (CG_STATUS_USAGE: the bundle's kernels were built and tuned when it was
 * made); o->no_cache, o->no_tuning and o->weights_seed mean nothing here.
 * *out is set as for cg_net_open. */
cg_status cg_net_open_bundle(const char *path, const cg_net_options *o, cg_net **out);

/* One line about the last call's failure; "" after a success. net NULL: a
 * static line saying so. */
const char *cg_net_error(const cg_net *net);

/* What the compiler said about kernels that failed to compile while opening
 * (NVRTC's log, several lines), "" if nothing. */
const char *cg_net_log(const cg_net *net);

/* The shape of one input image: channels, height, width (pointers may be NULL). */
cg_status cg_net_input_shape(cg_net *net, int *c, int *h, int *w);
/* How the network scales uint8 pixels: x = pixel * scale + offset (computed in
 * double, rounded to float). What CG_INPUT_F32 input must already be. */
cg_status cg_net_input_scaling(cg_net *net, double *scale, double *offset);
/* The number of scores per image (the last layer's outputs: classes). */
cg_status cg_net_classes(cg_net *net, int *classes);
/* "cpu" or "cuda", and the device's name ("cpu" on the CPU). */
const char *cg_net_backend(const cg_net *net);
const char *cg_net_device_name(const cg_net *net);

/* A batch of images, row-major N x C x H x W. c, h, w must equal the network's
 * input shape: they are checked, so that a caller's mistaken shape is refused
 * rather than read as something else. */
typedef struct {
    cg_input_type type;
    long long n;      /* images, >= 0 */
    int c, h, w;      /* one image's shape */
    const void *data; /* n*c*h*w elements of `type` */
} cg_input;

/* Run the images in host memory. pred: n predicted classes (the first maximum
 * of each image's scores). scores: NULL, or n * classes floats (the network's
 * last layer, e.g. softmax probabilities). Blocks until the answers are there. */
cg_status cg_net_run(cg_net *net, const cg_input *in, int *pred, float *scores);

/* The same from device memory, CUDA backend only: in->data, pred (n ints) and
 * scores (NULL or n*classes floats) are device pointers of the network's device
 * (CUdeviceptr values cast to pointers, or cudaMalloc'd pointers), and the copies
 * and kernels are queued on `stream` (a CUstream / cudaStream_t given as void *;
 * NULL: the legacy default stream). The call returns once the work is queued:
 * synchronise the stream before reading the answers. The network's own buffers
 * are in use until that work is done: runs of one network must be on the same
 * stream, or the caller must wait for the previous one. */
cg_status cg_net_run_device(cg_net *net, const cg_input *in, int *pred, float *scores, void *stream);

/* Diagnostics. The network's layers (as the spec lists them), each one's name
 * and outputs per image; cg_net_run_layers is cg_net_run that also copies out
 * every layer's output: layer_out[i] NULL or n * cg_net_layer_size(net, i)
 * floats. On CUDA a layer other than the last needs the network opened with
 * keep_tensors (or poison): else CG_STATUS_USAGE naming the layer, nothing
 * run. cg_net_times: the last host run's wall time (CPU) or kernel time
 * (CUDA events) in milliseconds, in total and per layer (layer_ms NULL or
 * cg_net_layer_count entries; NaN for every layer where the kernels were
 * generated for a small batch and launched overlapping one another - on a
 * cc 9.0+ device without no_pdl - which no event between layers may cut:
 * open with profile to time each layer). */
int cg_net_layer_count(const cg_net *net);
const char *cg_net_layer_name(const cg_net *net, int i);
long long cg_net_layer_size(const cg_net *net, int i);
cg_status cg_net_run_layers(cg_net *net, const cg_input *in, int *pred, float *scores, float **layer_out);
cg_status cg_net_times(cg_net *net, double *total_ms, double *layer_ms);

/* Free everything (device memory and the CUDA context reference included).
 * NULL is fine. */
void cg_net_close(cg_net *net);

/* Whether CUDA device `device` can be opened: CG_STATUS_OK, or CG_STATUS_DEVICE
 * with why (one line, at most n bytes, may be NULL) saying why not, e.g. no
 * driver, no such device. */
cg_status cg_cuda_probe(int device, char *why, size_t n);

#ifdef __cplusplus
}
#endif
#endif
