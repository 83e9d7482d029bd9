/* data.h — Fashion-MNIST in IDX form, and the one resize function that both
 * inference and training use. */
#ifndef CG_DATA_H
#define CG_DATA_H
#include "util.h"

#define CG_DATA_DIR_DEFAULT "/usr/share/datasets/fashion-mnist"

typedef struct {
    int n, h, w;
    unsigned char *pixels; /* n*h*w, row-major */
    unsigned char *labels; /* n */
} cg_dataset;

/* Load an images file (idx3, uint8) and its labels file (idx1), gzip or plain
 * (chosen by content, not name). max_images > 0 keeps only the first ones.
 * Checks magic, dimensions, sizes against the file length, label range 0..9,
 * and that both files hold the same count; errors name the file and offset. */
int cg_idx_load(const char *images_path, const char *labels_path, int max_images,
                cg_dataset *d, cg_err *e);
/* The test (train=0) or training (train=1) set from DIR (NULL: default dir),
 * looking for "t10k-images-idx3-ubyte" / "train-images-idx3-ubyte" with or
 * without ".gz"; resized to side×side when side > 0 and differs. */
int cg_data_load(const char *dir, int train, int side, int max_images, cg_dataset *d, cg_err *e);
/* One IDX file alone, checked as cg_idx_load checks it: images (labels NULL;
 * max_images > 0 keeps the first ones, and only those are decoded; *count, when
 * count is not NULL, gets the header's image count), or labels (their count in
 * *n, values not range-checked). For the user's own files (input.h). */
int cg_idx_load_images(const char *path, int max_images, cg_dataset *d, int *count, cg_err *e);
int cg_idx_load_labels(const char *path, unsigned char **labels, int *n, cg_err *e);
void cg_dataset_free(cg_dataset *d);
/* n made-up images of image_bytes pixels each, h x w, from a seed (xorshift
 * pixels, labels 0..9): the same images `run --random-input SEED` makes, so
 * that every process of a distributed run makes the same set. */
int cg_data_random(cg_dataset *d, long long n, size_t image_bytes, int h, int w, unsigned long long seed,
                   cg_err *e);
/* The set k times over, in order (image i of copy c is image c*n + i), labels
 * with it: a large input for measuring throughput (--repeat-dataset) without
 * new files. image_bytes: one image's pixels (C*H*W). The result must stay
 * under 2^31 images; on failure d is unchanged. */
int cg_data_repeat(cg_dataset *d, size_t image_bytes, long long k, cg_err *e);

/* The two source samples (*i0, *i1) and the weight of the second (*l) for
 * output index o when n source samples are resized by scale = n / outputs
 * (half-pixel centres, clamped at the edges): what both resizes share. */
void cg_resize_tap(int o, double scale, int n, int *i0, int *i1, double *l);
/* Bilinear resize of one uint8 image, half-pixel centres (as PyTorch's
 * interpolate(mode="bilinear", align_corners=False) without antialias), edges
 * clamped, result rounded to nearest and clamped to 0..255. */
void cg_resize_bilinear_u8(const unsigned char *src, int sh, int sw, unsigned char *dst, int dh,
                           int dw);

/* `convgen data --resize S -o DIR`: write both sets resized, as plain IDX files
 * with the standard names. Both sets are read and written to temp files before
 * any file takes its name; on failure nothing of the run stays (its temps, the
 * files it added, the directories it made). Returns 0; -1 when the side or the
 * source sets are bad; -2 when DIR or a file in it cannot be made or written. */
int cg_data_write_resized(const char *src_dir, int side, const char *out_dir, cg_err *e);

#endif
