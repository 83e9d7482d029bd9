/* weights.h — float32 tensors from safetensors files, named after the layers:
 * "<layer>.weight" (conv: M×C×K×K, fc: out×in) and "<layer>.bias" (M or out). */
#ifndef CG_WEIGHTS_H
#define CG_WEIGHTS_H
#include "spec.h"

typedef struct {
    char name[CG_NAME_MAX + 8];
    int ndim;
    long long shape[4];
    long long count;
    float *data;
} cg_tensor;

typedef struct {
    int n;
    cg_tensor *t;
    int random; /* 1 when made up from the spec's seed */
} cg_weights;

/* Parse a safetensors file: F32 tensors only, little-endian; header JSON checked
 * (offsets in range, non-overlapping, sizes = product of shape × 4). */
int cg_weights_load(const char *path, cg_weights *w, cg_err *e);
/* The same, refusing (before reading) anything but a regular file of at most
 * max_bytes: a directory, FIFO or device, or a file larger than its tensors. */
int cg_weights_load_max(const char *path, size_t max_bytes, cg_weights *w, cg_err *e);
/* Header and padding a weights file may hold beside its tensors' data. */
#define CG_WEIGHTS_SLACK ((size_t)1 << 20)
/* The weights a spec needs: from s->weights (every tensor the spec needs present
 * with the right shape; extra tensors are an error naming them), or seeded random
 * (uniform in ±1/sqrt(fan_in), from s->seed) when the spec names no file. The file
 * may be no larger than those tensors' data plus CG_WEIGHTS_SLACK. */
int cg_weights_for_spec(const cg_spec *s, cg_weights *w, cg_err *e);
const cg_tensor *cg_weights_find(const cg_weights *w, const char *name);
int cg_weights_save(const char *path, const cg_weights *w, cg_err *e);
void cg_weights_free(cg_weights *w);

/* A malloc'd copy of the count floats at p seen as rows x (count/rows), with
 * the first dimension made the last: (rows x rest) -> (rest x rows). What
 * reduction-major kernels read (a conv's M x C x K x K weights as (C*K*K) x M).
 * NULL when out of memory. */
float *cg_weights_transposed(const float *p, long long rows, long long count);

#endif
