/* manifest.h — the launch manifest the generator writes and the runtime obeys.
 *
 * Text, one record a line, written by generator/gen.c from the templates' answers:
 *   convgen-manifest 1
 *   network NAME
 *   generator VERSION
 *   max_batch N                 images per launch so that no index passes 2^31
 *   bucket B                    (optional) the batch the kernels were generated for
 *                               (1, 8, 64, 256 or 1024); absent: the large-batch kernels
 *   tensor NAME DTYPE ELEMS [view=PARENT:OFF]   elements per image; DTYPE one of the table
 *                               cg_dtype_info reads (u8 f32 i32 f16 bf16). view=: the tensor has
 *                               no memory of its own: its image i is elements OFF..OFF+ELEMS-1 of
 *                               PARENT's image i (a concat's input written straight into its slice
 *                               of the concat's output, templates/lib/planner.lua concat_slices),
 *                               so a kernel bound to it writes at PARENT + OFF with PARENT's image
 *                               stride. PARENT is a tensor declared before it, no view, of the
 *                               same dtype; the slice lies inside PARENT's image and overlaps no
 *                               other view of it; no view is the input, output or predictions, or
 *                               any kernel's input (a kernel reads its inputs' images back to back),
 *                               and no kernel both reads and writes one tensor's memory (a view's
 *                               parent and the view)
 *          [hwc=C.H.W]          optional: the tensor's images are channels-last, H x W x C
 *                               (C*H*W == ELEMS), where a layer's kernel hands its output to the
 *                               next layer's in that layout (templates/lib/planner.lua,
 *                               planner.hwc_handoffs); the runtime and the emulation turn such a
 *                               tensor to and from C x H x W wherever floats meet the reference.
 *                               No view is channels-last, nor the input, output or predictions
 *   layer NAME OP OUT_TENSOR [into=ADD]   spec layers in order (op conv|fc|softmax); into=:
 *                               the layer's output is no tensor of its own: the kernel of
 *                               conv NAME (or of the conv a batchnorm NAME folds into)
 *                               computes layer ADD, an add reading it, in its epilogue, and
 *                               OUT_TENSOR is ADD's
 *   kernel NAME layer=L|* template=T in=TENSOR[,TENSOR...] out=TENSOR[,TENSOR...] grid=G,G,G
 *          block=X,Y,Z shared=BYTES weights=none|arg|arg:transposed|arg:taps:N|const:SYMBOL
 *          bias=none|arg|const:SYMBOL
 *          args=ROLE,ROLE,...     the kernel's parameters in order, by role (in, in1, in2,
 *                                 in3, out, out1, out2, weights, bias, n): the runtime binds
 *                                 each by its role; and up to CG_MAX_MAPS tensor maps,
 *                                 map:TARGET:DIMS:BOX:SWIZZLE (cg_mmap): TARGET one of the
 *                                 pointer roles above or weights, DIMS and BOX '.'-separated
 *                                 extents innermost first (DIMS' last may be n, the images;
 *                                 the others multiply to the target tensor's elements per
 *                                 image), SWIZZLE 0, 32, 64 or 128, e.g. map:in:784.n:64.128:128
 *          `in` lists the tensors the kernel reads, 1 to CG_MAX_INPUTS (4), each a tensor
 *          declared above and none of the kernel's outputs (a chain's kernels read one);
 *          role `in` is the first, in1 the second, in2 the third, in3 the fourth, and a
 *          role naming an input the list lacks is refused (origin:line)
 *          `out` lists the tensors the kernel writes, 1 to CG_MAX_OUTPUTS (3), distinct,
 *          each declared above: the first is its layer's (what a chain's next kernel
 *          reads), the others tensors of later layers it computes too (templates/ops/tail.lua:
 *          a small-batch network's last fc, its softmax and the predictions in one kernel;
 *          softmax with the predictions); role `out` is the first, out1 the second, out2
 *          the third, and a role naming an output the list lacks is refused. What walks
 *          the tensors a kernel writes (the memory plan) takes every one; layer L is the
 *          first output's layer, and a later layer whose tensor is another output has no
 *          kernel of its own. The whole-network kernel writes one (its others: t:)
 *          [pdl=0|1]              optional: 1 when the kernel's source opens with the
 *                                 programmatic-dependent-launch prologue (griddepcontrol.wait
 *                                 before any global access, templates/lib/common.lua
 *                                 common.add_pdl), so it may be launched with programmatic
 *                                 stream serialization; absent: 0
 *          [wdtype=f16|bf16]      optional: the kernel reads its weights and bias in that
 *                                 16-bit type (the runtime converts the FP32 tensors once at
 *                                 load, rounding to nearest even); absent: f32
 *          [whole=1]              optional: the whole-network kernel (absent: 0), a persistent
 *                                 kernel that runs every layer in one launch (grid-wide barriers
 *                                 between layers), writing every tensor the per-layer kernels
 *                                 write, in their order, and the predictions; the runtime runs
 *                                 either it alone or the per-layer kernels for one batch. At most
 *                                 one, the last kernel record; `layer=*` (layer_index -1) and
 *                                 `grid=res:CAP,1,1` are for it alone: it is launched
 *                                 cooperatively (every block resident) with min(CAP, SMs x the
 *                                 blocks an SM holds of it) blocks, at least 1. Its args may
 *                                 also take the roles t:TENSOR (that tensor in the stream set's
 *                                 memory, as the per-layer kernels get it), w:LAYER and b:LAYER
 *                                 (spec layer LAYER's weights and bias, FP32, as the weights file
 *                                 lays them out, batch norms folded) and scratch; up to
 *                                 CG_MAX_ARGS arguments, all pointers but n
 *          [feed=u8|f32]          optional, per-layer kernels only: the kernel runs only when
 *                                 the host input is the uint8 pixels (u8) or floats (f32);
 *                                 absent: either. A first layer generated twice
 *                                 (templates/lib/planner.lua, planner.pixel_twin): its kernel
 *                                 reading the pixels feed=u8, its kernel reading the float input
 *                                 feed=f32 and the input kernel feed=f32 (a float input replaces
 *                                 that kernel's output, so it never runs); feed=f32 on a kernel
 *                                 reading a u8 tensor (the pixels) is refused but for input_u8's
 *          [scratch=BYTES]        optional, whole=1 only (0 < BYTES <= 1 GiB): a device buffer of
 *                                 that many bytes per stream set, zeroed once when allocated; the
 *                                 kernel leaves it zeroed when it ends (its counters back at 0)
 *   input TENSOR / output TENSOR / predict TENSOR
 *   hash HEX16                  identifies the build (sources + manifest)
 * A grid extent G is an integer or "N*a/b": ceil(N*a/b) blocks for N images; the
 * whole-network kernel's x extent may be "res:CAP" (as many blocks as are resident
 * at once, at most CAP).
 * Kernel arguments are bound by role, in the order `args` gives (the template's
 * contract, templates/lib/common.lua common.kernel_head). */
#ifndef CG_MANIFEST_H
#define CG_MANIFEST_H
#include "spec.h"

#include <stdint.h>

#define CG_MAX_TENSORS 512
#define CG_MAN_KERNELS 256
/* The longest manifest line (a whole-network kernel's args name up to CG_MAX_ARGS tensors and layers). */
#define CG_MAN_LINE 16384

/* A tensor's element type. The table in manifest.c gives each its manifest
 * name, its size in bytes and the C type a kernel declares it with; f16 and
 * bf16 are half-width floats (kernels accumulate them in FP32). */
typedef enum { CG_DT_U8, CG_DT_F32, CG_DT_I32, CG_DT_F16, CG_DT_BF16, CG_DT_COUNT } cg_dtype;
typedef struct {
    const char *name;  /* as the manifest writes it: "f32" */
    size_t size;       /* bytes per element */
    const char *ctype; /* the CUDA C type: "float", "__half" */
} cg_dtype_info;
/* Where a kernel finds a weight tensor: not at all, as an argument (the tensor as
 * stored, e.g. M x C x K x K), as an argument transposed to (C*K*K) x M (first
 * dimension last: what reduction-major kernels read coalesced), or in a
 * __constant__ symbol of its module. */
/* ARG_TAPS: an argument reordered taps-outermost (cg_weights_taps), its taps in cg_mkernel.wtaps;
 * ARG_FFT: the weights' transforms (cg_weights_fft, weights=arg:fft:FHxFW), the sizes in
 * cg_mkernel.wtaps as CG_FFT_SIZES (FH << 16 | FW) */
typedef enum { CG_PLACE_NONE, CG_PLACE_ARG, CG_PLACE_CONST, CG_PLACE_ARG_T, CG_PLACE_ARG_TAPS, CG_PLACE_ARG_FFT } cg_place;
#define CG_FFT_SIZES(fh, fw) ((fh) << 16 | (fw))
#define CG_FFT_H(sizes) ((sizes) >> 16)
#define CG_FFT_W(sizes) ((sizes) & 0xffff)

typedef struct {
    char name[CG_NAME_MAX + 16];
    cg_dtype dtype;
    long long elems;
    int view;           /* 1: a view (view=), no memory of its own; 0 (as zeroed): its own */
    int parent;         /* a view: the tensor it lies in (index) */
    long long view_off; /* a view: its first element in the parent's image */
    int hwc[3];         /* channels-last (hwc=C.H.W): C, H, W; hwc[0] == 0: C x H x W as every other */
} cg_mtensor;

typedef struct {
    long long mul, div; /* div == 0: the constant mul; else ceil(N*mul/div) */
} cg_mdim;

/* The host input a per-layer kernel runs for (feed=). */
typedef enum { CG_FEED_ANY = 0, CG_FEED_U8, CG_FEED_F32 } cg_feed;

/* The roles a kernel parameter may have (templates/lib/common.lua): CG_ARG_IN is
 * the first tensor of the record's `in` list, CG_ARG_IN1..CG_ARG_IN3 the second to
 * the fourth; CG_ARG_OUT the first of its `out` list, CG_ARG_OUT1 and CG_ARG_OUT2 the
 * second and third. The roles before CG_ARG_ROLES are those of a per-layer kernel
 * (common.kernel_head declares them); the ones after are the whole-network
 * kernel's alone, each naming what it points at (cg_mkernel.argref): t:TENSOR,
 * w:LAYER, b:LAYER, and its scratch buffer. */
typedef enum {
    CG_ARG_IN, CG_ARG_OUT, CG_ARG_WEIGHTS, CG_ARG_BIAS, CG_ARG_N, CG_ARG_IN1, CG_ARG_IN2, CG_ARG_IN3,
    CG_ARG_OUT1, CG_ARG_OUT2,
    CG_ARG_ROLES,
    CG_ARG_TENSOR = CG_ARG_ROLES, /* t:TENSOR */
    CG_ARG_LWEIGHTS,              /* w:LAYER */
    CG_ARG_LBIAS,                 /* b:LAYER */
    CG_ARG_SCRATCH,               /* scratch */
    CG_ARG_MAP,                   /* map:TARGET:DIMS:BOX:SWIZZLE (a per-layer kernel's: cg_mmap) */
    CG_ARG_ALL_ROLES
} cg_arg_role;
/* A kernel's tensor maps (role map:): at most CG_MAX_MAPS, each of 1 to CG_MAP_RANK dimensions. */
#define CG_MAX_MAPS 4
#define CG_MAP_RANK 5
/* A tensor map the runtime encodes for the bulk tensor copy engine (cuTensorMapEncodeTiled) and
 * passes by value (a 128-byte CUtensorMap, the kernel's `const __grid_constant__` parameter):
 * over the memory of one of the kernel's tensors (target in, in1..in3, out, out1, out2) or its
 * weights (weights: placement arg, as uploaded: f32, or wdtype=), dense, dims[0] innermost.
 * dims[rank-1] == 0 stands for the images: the batch the runtime's buffers hold (a launch of n
 * images reads and writes only the first n; a box past them lands garbage or zeros, which the
 * kernel leaves unstored). Element type: the target tensor's dtype (weights: wdtype). */
typedef struct {
    cg_arg_role target; /* CG_ARG_IN..CG_ARG_OUT2 or CG_ARG_WEIGHTS */
    int rank;           /* 1 to CG_MAP_RANK */
    long long dims[CG_MAP_RANK]; /* elements, innermost first; the last 0: the images */
    int box[CG_MAP_RANK];        /* the box a copy moves, 1 to 256 each */
    int swizzle;                 /* 0, 32, 64 or 128: the shared-memory swizzle span in bytes */
} cg_mmap;
#define CG_MAX_ARGS 64
/* The largest scratch= a whole-network kernel may ask for: 1 GiB. */
#define CG_MAX_SCRATCH (1LL << 30)

typedef struct {
    char name[128];
    char layer[CG_NAME_MAX];
    char tpl[64];
    cg_arg_role args[CG_MAX_ARGS]; /* the kernel's parameters, in order */
    int argref[CG_MAX_ARGS];       /* what args[i] names: the tensor of t:, the manifest layer
                                    * (index into cg_manifest.l) of w: and b:; else -1 */
    int nargs;
    int in[CG_MAX_INPUTS]; /* the tensors it reads (indices), in the `in` list's order */
    int nin;               /* 1 to CG_MAX_INPUTS */
    int out;               /* the tensor it writes (the first of outs) */
    int outs[CG_MAX_OUTPUTS]; /* every tensor it writes (indices), in the `out` list's order */
    int nout;              /* 1 to CG_MAX_OUTPUTS */
    int layer_index;    /* index into the spec's layers, -1 for input/predict */
    cg_mdim grid[3];
    int block[3];
    int shared;
    cg_place wplace, bplace;
    int wtaps; /* weights=arg:taps:N: N (1 to 4096); arg:fft:FHxFW: CG_FFT_SIZES(FH, FW); else 0 */
    char wsym[160], bsym[160];
    int pdl; /* the source has the programmatic-dependent-launch prologue (pdl=1) */
    cg_dtype wdtype; /* the element type of its weights and bias in device memory (wdtype=; absent: f32) */
    int whole;          /* the whole-network kernel (whole=1) */
    long long res_cap;  /* grid x given as res:CAP (whole=1 only): CAP; grid[0] then holds CAP; else 0 */
    long long scratch;  /* bytes of its zeroed scratch buffer (scratch=; whole=1 only); 0: none */
    cg_feed feed;       /* the host input it runs for (feed=); CG_FEED_ANY: either */
    cg_mmap maps[CG_MAX_MAPS]; /* its map: arguments in order (argref of a CG_ARG_MAP: the index) */
    int nmaps;
} cg_mkernel;

typedef struct {
    char name[CG_NAME_MAX];
    char op[16];
    int out;                  /* tensor index */
    char into[CG_NAME_MAX];   /* "": the layer's output is tensor out; else the add whose
                               * kernel computes it in its epilogue (not kept: out is the add's) */
} cg_mlayer;

typedef struct {
    char network[CG_NAME_MAX];
    char hash[17];
    long long max_batch;
    int bucket; /* the batch the kernels were generated for; 0: large-batch kernels */
    int ntensors, nkernels, nlayers; /* nkernels counts the whole-network kernel, if any */
    cg_mtensor t[CG_MAX_TENSORS];
    cg_mkernel k[CG_MAN_KERNELS];
    cg_mlayer l[CG_MAX_LAYERS];
    int input, output, predict;
} cg_manifest;

/* Parse; `origin` names the source in errors ("generated/x/manifest.txt"). */
int cg_manifest_parse(const char *text, size_t len, const char *origin, cg_manifest *m, cg_err *e);
/* The per-layer kernels are k[0..cg_manifest_layer_kernels(m)): every kernel but
 * the whole-network kernel, which is the last when there is one (what walks the
 * kernels for per-layer work — the memory plan, events, profiles — stops there). */
int cg_manifest_layer_kernels(const cg_manifest *m);
/* Whether per-layer kernel k runs when the host input is floats (f32 != 0) or the
 * uint8 pixels (f32 == 0): feed= absent, or naming that input. (A float input
 * also skips the input kernel, which is feed=f32 where a twin reads the pixels.) */
int cg_manifest_feeds(const cg_mkernel *k, int f32);
/* The index of the whole-network kernel (whole=1), -1 when there is none. */
int cg_manifest_whole(const cg_manifest *m);
/* Evaluate a grid extent for n images. */
long long cg_mdim_eval(cg_mdim d, long long n);
int cg_manifest_tensor(const cg_manifest *m, const char *name);
/* The tensor whose memory tensor t is in: its view= parent, or t itself. */
int cg_manifest_root(const cg_manifest *m, int t);
/* Tensor t's n images, one after another, into dst, from src: the n images of
 * cg_manifest_root(m, t) as they lie in memory (a view's slice of each, its own
 * images for any other tensor). dst may be src: the slices are gathered in place. */
void cg_manifest_gather(const cg_manifest *m, int t, const void *src, long long n, void *dst);
/* n images of floats of tensor t between its channels-last layout (hwc=) and C x H x W:
 * to_chw != 0 from H x W x C to C x H x W, else the other way; in place (a scratch image
 * allocated). 0, or -1 when out of memory; nothing done for a tensor that is not channels-last. */
int cg_manifest_relayout(const cg_mtensor *t, float *data, long long n, int to_chw);
size_t cg_dtype_size(cg_dtype t);
/* The table's row of t (NULL outside the enum). */
const cg_dtype_info *cg_dtype_get(cg_dtype t);
/* The dtype a manifest names `name`: 0 and *t, or -1 for an unknown name. */
int cg_dtype_parse(const char *name, cg_dtype *t);

/* "in,out,weights,bias,n" into roles; -1 on an unknown or repeated role. Only the
 * per-layer roles (before CG_ARG_ROLES): t:, w:, b: and scratch are refused, and map: roles
 * (cg_args_parse_maps takes them). */
int cg_args_parse(const char *text, cg_arg_role *roles, int *n);
/* The same, the reason for a refusal in why (cap bytes); where maps is not NULL, with
 * map:TARGET:DIMS:BOX:SWIZZLE roles too, their syntax checked (what needs the kernel's tensors
 * is the caller's: cg_map_geometry), each a CG_ARG_MAP into roles and its map into
 * maps[*nmaps] (at most CG_MAX_MAPS). 0, or -1. */
int cg_args_parse_maps(const char *text, cg_arg_role *roles, int *n, cg_mmap *maps, int *nmaps, char *why,
                       size_t cap);
/* The role's name as the manifest writes it ("in1"). */
const char *cg_arg_role_name(cg_arg_role r);
/* The position in the kernel's input list a role names (in: 0, in1: 1, ...), -1
 * for a role that is no input. */
int cg_arg_input(cg_arg_role r);
/* The first role of roles[0..n) naming an input at or past nin (the kernel
 * reads nin tensors), -1 when there is none. */
int cg_args_past_inputs(const cg_arg_role *roles, int n, int nin);
/* A weights= or bias= value s: its placement into *p, a const: symbol into sym
 * (cap bytes), and, where taps is not NULL (the weights: arg:taps:N and arg:fft:FHxFW
 * are refused elsewhere), arg:taps:N's N or arg:fft's CG_FFT_SIZES(FH, FW) (each a
 * size from 2 to 1024) into *taps. 0, or -1 for a value of no such form. */
int cg_place_parse(const char *s, cg_place *p, char *sym, size_t cap, int *taps);
/* The reorder an argument placement asks of the weights before upload, as
 * cg_weights_taps takes it: 0 none (arg, const:), 1 arg:transposed, taps for
 * arg:taps:N (taps: N, as cg_place_parse gave it). */
int cg_place_reorder(cg_place p, int taps);
/* The position in the kernel's output list a role names (out: 0, out1: 1,
 * out2: 2), -1 for a role that is no output. */
int cg_arg_output(cg_arg_role r);
/* The first role of roles[0..n) naming an output at or past nout, -1 when there is none. */
int cg_args_past_outputs(const cg_arg_role *roles, int n, int nout);
/* The launch argument array for roles: each entry points at the value its role
 * names (in[0..nin): the inputs in list order, out[0..nout) the outputs, w, b:
 * device pointers; count: an int; maps[0..nmaps): the encoded tensor maps, the j-th
 * map role the j-th). -1 when a role names an input past nin, an output past nout or a
 * map past nmaps, or is one of the whole-network kernel's roles (nothing is bound). */
int cg_args_bind(const cg_arg_role *roles, int n, void *const *in, int nin, void *const *out, int nout, void *w,
                 void *b, void *count, void *const *maps, int nmaps, void **argv);
/* Tensor map mp's geometry for cuTensorMapEncodeTiled with elements of esize bytes and a
 * batch of `images`: rank, dims, byte strides of dims 1.. (dense), box. The checks the driver
 * would make come first, in words into why (cap bytes): a dimension past 2^32 elements, a
 * stride not a multiple of 16 bytes or past 2^40, a box's row not a multiple of 16 bytes or
 * wider than the swizzle span. 0, or -1 with why. */
int cg_map_geometry(const cg_mmap *mp, size_t esize, long long images, uint64_t *dims, uint64_t *strides,
                    uint32_t *box, char *why, size_t cap);
/* The elements map mp covers, its images aside: a tensor's elements an image, or the weights'. */
long long cg_map_elems(const cg_mmap *mp);
/* The role text of map mp as the manifest writes it ("map:in:784.n:64.128:128"), into buf. */
void cg_map_text(const cg_mmap *mp, char *buf, size_t cap);

#endif
