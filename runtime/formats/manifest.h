/* manifest.h — the launch manifest the generator writes and the runtime obeys.
 *
 * Text, one record a line, written by generator/gen.c from the templates' answers:
 *   convgen-manifest 1
 *   network NAME
 *   generator VERSION
 *   max_batch N                 images per launch so that no index passes 2^31
 *   bucket B                    (optional) the batch the kernels were generated for
 *                               (1, 8, 64, 256 or 1024); absent: the large-batch kernels
 *   tensor NAME DTYPE ELEMS     elements per image; DTYPE one of the table cg_dtype_info
 *                               reads (u8 f32 i32 f16 bf16)
 *   layer NAME OP OUT_TENSOR    spec layers in order (op conv|fc|softmax)
 *   kernel NAME layer=L template=T in=TENSOR out=TENSOR grid=G,G,G block=X,Y,Z
 *          shared=BYTES weights=none|arg|arg:transposed|const:SYMBOL bias=none|arg|const:SYMBOL
 *          args=ROLE,ROLE,...     the kernel's parameters in order, by role (in, out,
 *                                 weights, bias, n): the runtime binds each by its role
 *   input TENSOR / output TENSOR / predict TENSOR
 *   hash HEX16                  identifies the build (sources + manifest)
 * A grid extent G is an integer or "N*a/b": ceil(N*a/b) blocks for N images.
 * Kernel arguments are bound by role, in the order `args` gives (the template's
 * contract, templates/lib/common.lua common.kernel_head). */
#ifndef CG_MANIFEST_H
#define CG_MANIFEST_H
#include "spec.h"

#define CG_MAX_TENSORS 512
#define CG_MAN_KERNELS 256

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
typedef enum { CG_PLACE_NONE, CG_PLACE_ARG, CG_PLACE_CONST, CG_PLACE_ARG_T } cg_place;

typedef struct {
    char name[CG_NAME_MAX + 16];
    cg_dtype dtype;
    long long elems;
} cg_mtensor;

typedef struct {
    long long mul, div; /* div == 0: the constant mul; else ceil(N*mul/div) */
} cg_mdim;

/* The roles a kernel parameter may have (templates/lib/common.lua). */
typedef enum { CG_ARG_IN, CG_ARG_OUT, CG_ARG_WEIGHTS, CG_ARG_BIAS, CG_ARG_N } cg_arg_role;
#define CG_MAX_ARGS 8

typedef struct {
    char name[128];
    char layer[CG_NAME_MAX];
    char tpl[64];
    cg_arg_role args[CG_MAX_ARGS]; /* the kernel's parameters, in order */
    int nargs;
    int in, out;        /* tensor indices */
    int layer_index;    /* index into the spec's layers, -1 for input/predict */
    cg_mdim grid[3];
    int block[3];
    int shared;
    cg_place wplace, bplace;
    char wsym[160], bsym[160];
} cg_mkernel;

typedef struct {
    char name[CG_NAME_MAX];
    char op[16];
    int out; /* tensor index */
} cg_mlayer;

typedef struct {
    char network[CG_NAME_MAX];
    char hash[17];
    long long max_batch;
    int bucket; /* the batch the kernels were generated for; 0: large-batch kernels */
    int ntensors, nkernels, nlayers;
    cg_mtensor t[CG_MAX_TENSORS];
    cg_mkernel k[CG_MAN_KERNELS];
    cg_mlayer l[CG_MAX_LAYERS];
    int input, output, predict;
} cg_manifest;

/* Parse; `origin` names the source in errors ("generated/x/manifest.txt"). */
int cg_manifest_parse(const char *text, size_t len, const char *origin, cg_manifest *m, cg_err *e);
/* Evaluate a grid extent for n images. */
long long cg_mdim_eval(cg_mdim d, long long n);
int cg_manifest_tensor(const cg_manifest *m, const char *name);
size_t cg_dtype_size(cg_dtype t);
/* The table's row of t (NULL outside the enum). */
const cg_dtype_info *cg_dtype_get(cg_dtype t);
/* The dtype a manifest names `name`: 0 and *t, or -1 for an unknown name. */
int cg_dtype_parse(const char *name, cg_dtype *t);

/* "in,out,weights,bias,n" into roles; -1 on an unknown or repeated role. */
int cg_args_parse(const char *text, cg_arg_role *roles, int *n);
/* The launch argument array for roles: each entry points at the value its role
 * names (in, out: device pointers; w, b: device pointers; count: an int). */
void cg_args_bind(const cg_arg_role *roles, int n, void *in, void *out, void *w, void *b, void *count,
                  void **argv);

#endif
