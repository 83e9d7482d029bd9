/* input.h — the user's own images and labels (`run --input FILE [--labels
 * FILE]`): IDX (idx3 uint8, plain or gzip, told apart by content) or a NumPy
 * .npy array (uint8 or float32, N×H×W or N×C×H×W), resized to the spec's
 * input with the dataset's own bilinear resize. */
#ifndef CG_INPUT_H
#define CG_INPUT_H
#include "util.h"

typedef struct {
    int n, c, h, w;         /* n images of c×h×w, the spec's input shape */
    unsigned char *pixels;  /* uint8 files: n*c*h*w pixels, the spec's scale and offset
                               still to apply (as for the dataset); else NULL */
    float *values;          /* float32 .npy: n*c*h*w values that are the network's
                               input as they are (no scale or offset); else NULL */
    unsigned char *labels;  /* n labels in 0..classes-1, or NULL without a labels file */
} cg_images;

/* Load images (and labels, where labels_path is not NULL) for a network whose
 * input is c×h×w with `classes` outputs. The file's channel count must be c
 * (N×H×W counts as 1); height and width are resized to h×w when they differ.
 * Labels: an idx1 file or a 1-d .npy of uint8, int32 or int64, as many as the
 * images file holds, each in 0..classes-1. max_images > 0 keeps the first
 * ones. Refusals are one line naming the file and what was expected. */
int cg_input_load(const char *images_path, const char *labels_path, int c, int h, int w,
                  int classes, int max_images, cg_images *in, cg_err *e);
void cg_input_free(cg_images *in);

/* cg_resize_bilinear_u8's arithmetic on float values, without its rounding
 * and clamping: the resize float32 inputs get. */
void cg_resize_bilinear_f32(const float *src, int sh, int sw, float *dst, int dh, int dw);

#endif
