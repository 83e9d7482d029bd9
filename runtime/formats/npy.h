/* npy.h — NumPy .npy arrays in and out: the user's own images (uint8 or
 * float32, N×H×W or N×C×H×W), and predictions (int32) and scores (float32)
 * written back; plus the same results as CSV.
 *
 * Read: format versions 1.0 and 2.0, C order only, little-endian (or
 * byte-order-free uint8) data of the dtypes a caller allows; the header is
 * checked and the file's size compared with what the header promises before
 * anything is allocated. Every refusal is one line naming the file. */
#ifndef CG_NPY_H
#define CG_NPY_H
#include "util.h"

/* The element types convgen reads and writes, as numpy spells them. */
typedef enum {
    CG_NPY_U8,  /* '|u1' */
    CG_NPY_F32, /* '<f4' */
    CG_NPY_I32, /* '<i4' */
    CG_NPY_I64  /* '<i8' (read only: what numpy makes of integer labels) */
} cg_npy_type;

/* Bit masks of cg_npy_type for the readers' `types` argument. */
#define CG_NPY_MASK(t) (1u << (t))
#define CG_NPY_IMAGE_TYPES (CG_NPY_MASK(CG_NPY_U8) | CG_NPY_MASK(CG_NPY_F32))
#define CG_NPY_MAX_DIMS 4
/* The longest header read (numpy itself refuses headers over 10,000 bytes). */
#define CG_NPY_HEADER_MAX 65536

typedef struct {
    cg_npy_type type;
    int ndim;
    long long shape[CG_NPY_MAX_DIMS];
    long long count; /* product of shape */
    void *data;      /* count elements of type, malloc'd; NULL before a read */
} cg_npy;

/* Bytes per element of a type. */
size_t cg_npy_type_size(cg_npy_type t);
/* The numpy spelling of a type, "|u1", "<f4", ... */
const char *cg_npy_type_name(cg_npy_type t);

/* Read an array from a regular file of at most max_bytes, accepting only the
 * types in the mask and min_ndim..max_ndim dimensions (1..4). */
int cg_npy_read(const char *path, unsigned types, int min_ndim, int max_ndim, size_t max_bytes,
                cg_npy *a, cg_err *e);
/* The same on bytes already in memory; path only names them in messages. */
int cg_npy_parse(const char *path, const void *bytes, size_t len, unsigned types, int min_ndim,
                 int max_ndim, cg_npy *a, cg_err *e);
/* Images: uint8 or float32, N×H×W (c = 1) or N×C×H×W, every dimension >= 1. */
int cg_npy_read_images(const char *path, size_t max_bytes, cg_npy *a, int *n, int *c, int *h,
                       int *w, cg_err *e);
void cg_npy_free(cg_npy *a);

/* Write count = prod(shape) elements of type (U8, F32 or I32) as a version 1.0
 * .npy file (2.0 if the header needs it), C order, atomically. */
int cg_npy_write(const char *path, cg_npy_type type, int ndim, const long long *shape,
                 const void *data, cg_err *e);

/* Predictions and scores as CSV, atomically: a header line
 * "index,prediction,score_0,...,score_{k-1}", then one line per image with the
 * scores printed to round-trip exactly (%.9g). scores may be NULL (k ignored),
 * then only index and prediction are written. */
int cg_csv_write_predictions(const char *path, int n, const int *pred, int k, const float *scores,
                             cg_err *e);

#endif
