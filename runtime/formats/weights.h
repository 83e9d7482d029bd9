/* weights.h — float32 tensors from safetensors files, named after the layers:
 * "<layer>.weight" (conv: M×C×K×K, fc: out×in) and "<layer>.bias" (M or out).
 * Files may hold F32, F16 or BF16 tensors; all are float32 once loaded. */
#ifndef CG_WEIGHTS_H
#define CG_WEIGHTS_H
#include "spec.h"

#include <stdint.h>

/* The element types of a safetensors file convgen reads and writes. */
typedef enum { CG_W_F32, CG_W_F16, CG_W_BF16 } cg_wdtype;

typedef struct {
    char name[CG_NAME_MAX + 8];
    int ndim;
    long long shape[4];
    long long count;
    float *data;
    cg_wdtype dtype; /* as stored in the file (F32 for random weights) */
} cg_tensor;

typedef struct {
    int n;
    cg_tensor *t;
    int random; /* 1 when made up from the spec's seed */
    /* 1 when batch norms are folded (cg_weights_fold_bn): the tensors kernels read */
    int bn_folded;
} cg_weights;

/* Parse a safetensors file: F32, F16 or BF16 tensors, little-endian, converted
 * to float32 exactly; header JSON checked (offsets in range, non-overlapping,
 * sizes = product of shape × element size). */
int cg_weights_load(const char *path, cg_weights *w, cg_err *e);
/* The same on len bytes already in memory (a bundle's section); path only
 * names them in messages. */
int cg_weights_parse(const char *path, const void *bytes, size_t len, cg_weights *w, cg_err *e);
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
/* The same checks on a safetensors image in memory (a bundle's weights
 * section), whatever s->weights says; name labels the bytes in messages. */
int cg_weights_for_spec_bytes(const cg_spec *s, const char *name, const void *bytes, size_t len,
                              cg_weights *w, cg_err *e);
const cg_tensor *cg_weights_find(const cg_weights *w, const char *name);
/* The tensors the kernels read, from a spec's weights as a file holds them (in):
 * every batchnorm's scale a = gamma / sqrt(running_var + eps) and shift
 * t = beta - running_mean * a, per channel, in double. A batchnorm that follows
 * a conv (cg_bn_folds) is folded into it: the conv's weight of output map m
 * times a[m] and its bias b[m] * a[m] + t[m] (b = 0 without one; the conv gains
 * "<conv>.bias"), the batchnorm's tensors dropped; any other batchnorm keeps
 * "<bn>.weight" = a and "<bn>.bias" = t. out is a new set (bn_folded = 1), in
 * is unchanged. Also when s has no batchnorm (a plain copy). */
int cg_weights_fold_bn(const cg_spec *s, const cg_weights *in, cg_weights *out, cg_err *e);
/* Write every tensor as F32 (cg_weights_save) or as the given dtype, rounded to
 * nearest, ties to even (overflow to inf, NaN kept a NaN); tensors sorted by
 * name, header padded to 8 bytes, written atomically. */
int cg_weights_save(const char *path, const cg_weights *w, cg_err *e);
int cg_weights_save_as(const char *path, const cg_weights *w, cg_wdtype dtype, cg_err *e);
/* The same file's bytes appended to out (initialised by the caller), for a
 * bundle's weights section; path only names them in messages. */
int cg_weights_encode(const char *path, const cg_weights *w, cg_wdtype dtype, cg_buf *out,
                      cg_err *e);

/* One element converted: half (IEEE binary16) and bfloat16 to float are exact
 * (subnormals, signed zeros, inf and NaN payloads kept); float to half or
 * bfloat16 rounds to nearest, ties to even. */
float cg_f16_to_f32(uint16_t h);
float cg_bf16_to_f32(uint16_t b);
uint16_t cg_f32_to_f16(float f);
uint16_t cg_f32_to_bf16(float f);
void cg_weights_free(cg_weights *w);

/* A malloc'd copy of the count floats at p seen as rows x (count/rows), with
 * the first dimension made the last: (rows x rest) -> (rest x rows). What
 * reduction-major kernels read (a conv's M x C x K x K weights as (C*K*K) x M).
 * NULL when out of memory or count is not a multiple of rows (cg_weights_taps with
 * one tap). */
float *cg_weights_transposed(const float *p, long long rows, long long count);

/* A malloc'd copy of the count floats at p seen as rows x C x taps (C =
 * count/(rows*taps)), reordered to taps x C x rows: a conv's M x C x K x K
 * weights as (K*K*C) x M, reduction-major with the kernel taps outermost (what
 * a kernel reducing one tap's channels at a time reads: manifest weights=
 * arg:taps:K*K). taps = 1 is cg_weights_transposed. NULL when out of memory or
 * count is not a multiple of rows*taps. */
float *cg_weights_taps(const float *p, long long rows, long long count, long long taps);
/* A malloc'd copy of the count floats at p in dtype (CG_W_F16 or CG_W_BF16),
 * each rounded to nearest, ties to even (cg_f32_to_f16, cg_f32_to_bf16: overflow
 * to inf, NaN kept a NaN, subnormals rounded); what kernels of half-width
 * weights read. NULL when out of memory or dtype is neither. */
uint16_t *cg_weights_narrowed(const float *p, long long count, cg_wdtype dtype);

/* A conv's M x C x K x K weights w as their transforms for conv2d_fft (manifest
 * weights=arg:fft:FHxFW): for each of the FH x (FW/2 + 1) frequencies (u, v), channel
 * c and map m, G = sum_{a,b} w[m][c][a][b] e^{+2 pi i (u a / FH + v b / FW)} (the
 * conjugate of the filter's transform: a correlation), computed in double and
 * stored as float pairs (re, im) at [(u (FW/2+1) + v) C + c] M + m. A malloc'd array
 * of *count floats; NULL when out of memory or the sizes are out of range
 * (K above FH or FW, FH or FW outside 2 to 1024). */
float *cg_weights_fft(const float *w, long long M, long long C, long long K, int FH, int FW, long long *count);

#endif
