/* input.c — the user's images and labels: which format a file is (by its
 * first bytes), loading it through data.c (IDX) or npy.c, the channel check,
 * the resize to the spec's input, and the labels checked against the images. */
#include "input.h"

#include "data.h"
#include "npy.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file formats an input file may be in. */
typedef enum { KIND_NPY, KIND_IDX } input_kind;

/* Tell a .npy array from an IDX file (plain, or gzip, which only IDX may be)
 * by its first bytes; anything else is refused naming both. */
static int sniff(const char *path, const char *what, input_kind *kind, cg_err *e)
{
    int fd;
    size_t size;
    if (cg_open_regular(path, CG_READ_MAX, &fd, &size, e)) return -1;
    unsigned char b[6] = {0};
    ssize_t got = pread(fd, b, sizeof b, 0);
    close(fd);
    if (got >= 6 && memcmp(b, "\x93NUMPY", 6) == 0) *kind = KIND_NPY;
    else if (got >= 2 && b[0] == 0x1f && b[1] == 0x8b) *kind = KIND_IDX;
    else if (got >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0x08) *kind = KIND_IDX;
    else
        return cg_fail(e, "%s: neither an IDX %s file (plain or gzip) nor a NumPy .npy array",
                       path, what);
    return 0;
}

void cg_resize_bilinear_f32(const float *src, int sh, int sw, float *dst, int dh, int dw)
{
    double scale_y = (double)sh / dh, scale_x = (double)sw / dw;
    for (int y = 0; y < dh; y++) {
        int y0, y1, x0, x1;
        double ly, lx;
        cg_resize_tap(y, scale_y, sh, &y0, &y1, &ly);
        const float *r0 = src + (size_t)y0 * sw, *r1 = src + (size_t)y1 * sw;
        for (int x = 0; x < dw; x++) {
            cg_resize_tap(x, scale_x, sw, &x0, &x1, &lx);
            dst[(size_t)y * dw + x] = (float)((1 - ly) * ((1 - lx) * r0[x0] + lx * r0[x1]) +
                                              ly * ((1 - lx) * r1[x0] + lx * r1[x1]));
        }
    }
}

/* Keep the first n of the images, every plane resized from sh×sw to the
 * input's h×w (copied as they are where the size already matches). */
static int fit_images(const char *path, cg_images *in, const void *src, int is_float, int sh,
                      int sw, cg_err *e)
{
    size_t planes = (size_t)in->n * (size_t)in->c, per = (size_t)in->h * (size_t)in->w, total;
    size_t esize = is_float ? sizeof(float) : 1, bytes;
    if (cg_mul_size(planes, per, &total) || cg_mul_size(total, esize, &bytes))
        return cg_fail(e, "%s: %d images of %dx%dx%d do not fit in memory", path, in->n, in->c,
                       in->h, in->w);
    void *out = malloc(bytes ? bytes : 1);
    if (!out)
        return cg_fail(e, "%s: out of memory for %d images of %dx%dx%d", path, in->n, in->c,
                       in->h, in->w);
    size_t sper = (size_t)sh * (size_t)sw;
    long long np = (long long)planes;
    if (sh == in->h && sw == in->w) {
        memcpy(out, src, bytes);
    } else if (is_float) {
#pragma omp parallel for schedule(static)
        for (long long p = 0; p < np; p++)
            cg_resize_bilinear_f32((const float *)src + (size_t)p * sper, sh, sw,
                                   (float *)out + (size_t)p * per, in->h, in->w);
    } else {
#pragma omp parallel for schedule(static)
        for (long long p = 0; p < np; p++)
            cg_resize_bilinear_u8((const unsigned char *)src + (size_t)p * sper, sh, sw,
                                  (unsigned char *)out + (size_t)p * per, in->h, in->w);
    }
    if (is_float) in->values = out;
    else in->pixels = out;
    return 0;
}

/* Label i of a labels array of the given type (IDX labels are uint8). */
static long long label_at(const void *p, cg_npy_type type, size_t i)
{
    return type == CG_NPY_U8 ? ((const unsigned char *)p)[i]
         : type == CG_NPY_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* The labels file: idx1 or a 1-d .npy of integers, count and range checked;
 * the first `keep` kept. */
static int load_labels(const char *path, int count, int classes, int keep, cg_images *in,
                       cg_err *e)
{
    input_kind kind;
    if (sniff(path, "labels", &kind, e)) return -1;
    int n = 0, rc = -1;
    cg_npy a;
    memset(&a, 0, sizeof a);
    unsigned char *lab = NULL;
    const void *vals;
    cg_npy_type type = CG_NPY_U8;
    if (kind == KIND_IDX) {
        if (cg_idx_load_labels(path, &lab, &n, e)) return -1;
        vals = lab;
    } else {
        unsigned types = CG_NPY_MASK(CG_NPY_U8) | CG_NPY_MASK(CG_NPY_I32) |
                         CG_NPY_MASK(CG_NPY_I64);
        if (cg_npy_read(path, types, 1, 1, CG_READ_MAX, &a, e)) return -1;
        n = a.count > INT_MAX ? INT_MAX : (int)a.count;
        vals = a.data, type = a.type;
    }
    if (n != count) {
        cg_fail(e, "%s: holds %d labels, the images file holds %d images", path, n, count);
        goto done;
    }
    for (int i = 0; i < count; i++) {
        long long v = label_at(vals, type, (size_t)i);
        if (v < 0 || v >= classes) {
            cg_fail(e, "%s: label %lld of image %d is outside 0..%d (the network has %d "
                    "outputs)", path, v, i, classes - 1, classes);
            goto done;
        }
    }
    in->labels = malloc((size_t)(keep ? keep : 1));
    if (!in->labels) {
        cg_fail(e, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < keep; i++) in->labels[i] = (unsigned char)label_at(vals, type, (size_t)i);
    rc = 0;
done:
    free(lab);
    cg_npy_free(&a);
    return rc;
}

int cg_input_load(const char *images_path, const char *labels_path, int c, int h, int w,
                  int classes, int max_images, cg_images *in, cg_err *e)
{
    memset(in, 0, sizeof *in);
    if (c < 1 || h < 1 || w < 1 || classes < 1 || classes > 256)
        return cg_fail(e, "%s: bad input shape %dx%dx%d or %d classes", images_path, c, h, w,
                       classes);
    input_kind kind;
    if (sniff(images_path, "images", &kind, e)) return -1;
    int total, fc = 1, sh, sw, is_float = 0, rc = -1;
    cg_dataset d;
    cg_npy a;
    memset(&d, 0, sizeof d), memset(&a, 0, sizeof a);
    const void *src;
    if (kind == KIND_IDX) {
        /* only the images kept are decoded; the labels are checked against the
         * header's count */
        if (cg_idx_load_images(images_path, max_images, &d, &total, e)) return -1;
        sh = d.h, sw = d.w, src = d.pixels;
    } else {
        if (cg_npy_read_images(images_path, CG_READ_MAX, &a, &total, &fc, &sh, &sw, e)) return -1;
        is_float = a.type == CG_NPY_F32;
        src = a.data;
    }
    if (fc != c) {
        cg_fail(e, "%s: images of %d channels (%dx%dx%d); the spec's input has %d (expected "
                "%sN×%d×H×W)", images_path, fc, fc, sh, sw, c, c == 1 ? "N×H×W or " : "", c);
        goto done;
    }
    in->n = max_images > 0 && max_images < total ? max_images : total;
    in->c = c, in->h = h, in->w = w;
    if (fit_images(images_path, in, src, is_float, sh, sw, e)) goto done;
    if (labels_path && load_labels(labels_path, total, classes, in->n, in, e)) goto done;
    rc = 0;
done:
    if (rc) cg_input_free(in);
    cg_dataset_free(&d);
    cg_npy_free(&a);
    return rc;
}

void cg_input_free(cg_images *in)
{
    free(in->pixels);
    free(in->values);
    free(in->labels);
    memset(in, 0, sizeof *in);
}
