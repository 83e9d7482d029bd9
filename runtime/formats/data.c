/* data.c — Fashion-MNIST IDX files (gzip or plain), the bilinear resize that
 * inference and training share, and `convgen data --resize`. */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_MAGIC_U8_3D 0x00000803u /* images: uint8, 3 dimensions */
#define IDX_MAGIC_U8_1D 0x00000801u /* labels: uint8, 1 dimension */
#define IDX_MAX_COUNT 10000000u
#define IDX_MAX_SIDE 4096u
#define READ_CHUNK (1u << 30)

/* ---- reading ------------------------------------------------------------ */

/* zlib's message for the last error on f, without the "PATH: " or "<fd:N>: " zlib
 * puts first. */
static const char *gz_message(gzFile f, const char *path, int *zerr)
{
    const char *msg = gzerror(f, zerr);
    size_t len = strlen(path);
    if (!msg) return "unknown zlib error";
    if (strncmp(msg, path, len) == 0 && msg[len] == ':' && msg[len + 1] == ' ') msg += len + 2;
    const char *end = strncmp(msg, "<fd:", 4) ? NULL : strstr(msg, ">: ");
    if (end) msg = end + 3;
    return msg;
}

/* Read exactly n bytes from a gzFile (which also reads plain files as they are);
 * a short read is reported as truncation at the byte offset where data ran out,
 * a zlib failure (corrupt or cut-off gzip stream) with zlib's own words. */
static int read_exact(gzFile f, const char *path, void *dst, size_t n, size_t offset,
                      const char *what, cg_err *e)
{
    unsigned char *p = dst;
    size_t got = 0;
    while (got < n) {
        size_t want = n - got;
        unsigned chunk = want > READ_CHUNK ? READ_CHUNK : (unsigned)want;
        int r = gzread(f, p + got, chunk);
        if (r < 0) {
            int zerr;
            return cg_fail(e, "%s: read error at byte offset %zu (uncompressed) while reading "
                           "%s: %s", path, offset + got, what, gz_message(f, path, &zerr));
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < n) {
        int zerr = Z_OK;
        const char *msg = gz_message(f, path, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END)
            return cg_fail(e, "%s: %s at byte offset %zu (uncompressed) while reading %s", path,
                           msg, offset + got, what);
        return cg_fail(e, "%s: truncated at byte offset %zu: expected %s (%zu bytes from byte "
                       "offset %zu), found %zu", path, offset + got, what, n, offset, got);
    }
    return 0;
}

/* Big-endian 32-bit integer, as IDX stores its header fields. */
static unsigned be32(const unsigned char *p)
{
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | (unsigned)p[3];
}

/* An IDX file must end where its header says; extra bytes mean the header lies. */
static int expect_eof(gzFile f, const char *path, size_t offset, cg_err *e)
{
    unsigned char extra;
    int r = gzread(f, &extra, 1);
    if (r < 0) {
        int zerr;
        return cg_fail(e, "%s: read error at byte offset %zu (uncompressed): %s", path, offset,
                       gz_message(f, path, &zerr));
    }
    if (r > 0)
        return cg_fail(e, "%s: unexpected data after byte offset %zu, where the header's "
                       "counts say the file ends", path, offset);
    return 0;
}

/* The largest ratio of uncompressed to compressed size deflate can reach is
 * about 1032:1; a gzip file's header claims beyond that are impossible. */
#define GZ_MAX_RATIO 1032u

/* An IDX file opened through zlib: a regular file only (a FIFO or device is
 * refused before anything waits on it); *bound gets the most uncompressed bytes
 * it can hold (its size, or the deflate limit for a gzip file), *gz whether it
 * is gzip. */
typedef struct {
    gzFile f;
    size_t bound;
    int gz;
} idx_file;

static int open_idx(const char *path, idx_file *x, cg_err *e)
{
    int fd;
    size_t size;
    if (cg_open_regular(path, (size_t)1 << 40, &fd, &size, e)) return -1;
    unsigned char magic[2] = {0, 0};
    x->gz = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    x->bound = x->gz ? size * GZ_MAX_RATIO + 64 : size;
    errno = 0;
    x->f = gzdopen(fd, "rb");
    if (!x->f) {
        close(fd);
        return cg_fail(e, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
    }
    return 0;
}

/* Before allocating what a header claims: the file must be able to hold it. A
 * plain file that cannot is reported as read_exact would report it. */
static int check_claim(const idx_file *x, const char *path, size_t offset, size_t n,
                       const char *what, cg_err *e)
{
    if (offset + n <= x->bound) return 0;
    if (!x->gz)
        return cg_fail(e, "%s: truncated at byte offset %zu: expected %s (%zu bytes from byte "
                       "offset %zu), found %zu", path, x->bound, what, n, offset,
                       x->bound > offset ? x->bound - offset : 0);
    return cg_fail(e, "%s: the header claims %s (%zu bytes), more than this gzip file can "
                   "hold uncompressed (at most %zu)", path, what, n, x->bound);
}

/* One kind of IDX file convgen reads: images (idx3) or labels (idx1). */
typedef struct {
    unsigned magic;
    int ndims;          /* 3: count, height, width; 1: count */
    const char *header; /* "the idx3 header" */
    const char *kind;   /* "an idx3 uint8 images file" */
    const char *item;   /* "image", "label" */
} idx_kind;

static const idx_kind IDX_IMAGES = {IDX_MAGIC_U8_3D, 3, "the idx3 header", "an idx3 uint8 images file", "image"};
static const idx_kind IDX_LABELS = {IDX_MAGIC_U8_1D, 1, "the idx1 header", "an idx1 uint8 labels file", "label"};

/* Read and check one IDX file: magic, count, sizes (images: h and w in dims[1],
 * dims[2]); keep the first `keep_max` items (0: all). Reading stops after those
 * when fewer than the count are kept, so trailing truncation of a partially read
 * file goes unnoticed (by design: loading 100 images reads 100 images). */
static int load_idx(const char *path, const idx_kind *k, unsigned keep_max, unsigned dims[3],
                    unsigned char **data, cg_err *e)
{
    idx_file x;
    if (open_idx(path, &x, e)) return -1;
    unsigned char hdr[16];
    size_t hlen = 4 + 4 * (size_t)k->ndims;
    int rc = -1;
    *data = NULL;
    dims[1] = dims[2] = 1;
    if (read_exact(x.f, path, hdr, hlen, 0, k->header, e)) goto done;
    unsigned magic = be32(hdr);
    if (magic != k->magic) {
        cg_fail(e, "%s: bad magic 0x%08x at byte offset 0, expected 0x%08x (%s)", path, magic,
                k->magic, k->kind);
        goto done;
    }
    for (int d = 0; d < k->ndims; d++) dims[d] = be32(hdr + 4 + 4 * d);
    if (dims[0] == 0 || dims[0] > IDX_MAX_COUNT) {
        cg_fail(e, "%s: %s count %u at byte offset 4 is outside 1..%u", path, k->item, dims[0],
                IDX_MAX_COUNT);
        goto done;
    }
    if (dims[1] == 0 || dims[1] > IDX_MAX_SIDE || dims[2] == 0 || dims[2] > IDX_MAX_SIDE) {
        cg_fail(e, "%s: image size %ux%u at byte offset 8 is outside 1..%u", path, dims[1],
                dims[2], IDX_MAX_SIDE);
        goto done;
    }
    unsigned keep = keep_max && keep_max < dims[0] ? keep_max : dims[0];
    size_t bytes;
    if (cg_mul_size((size_t)dims[1] * dims[2], keep, &bytes)) {
        cg_fail(e, "%s: %u images of %ux%u do not fit in memory", path, keep, dims[1], dims[2]);
        goto done;
    }
    char what[96];
    if (k->ndims == 3) snprintf(what, sizeof what, "%u images of %ux%u", keep, dims[1], dims[2]);
    else snprintf(what, sizeof what, "%u labels", keep);
    if (check_claim(&x, path, hlen, bytes, what, e)) goto done;
    *data = malloc(bytes ? bytes : 1);
    if (!*data) {
        cg_fail(e, "%s: out of memory for %s", path, what);
        goto done;
    }
    if (read_exact(x.f, path, *data, bytes, hlen, what, e)) goto done;
    if (keep == dims[0] && expect_eof(x.f, path, hlen + bytes, e)) goto done;
    rc = 0;
done:
    if (rc) free(*data), *data = NULL;
    int crc = gzclose(x.f);
    if (!rc && crc != Z_OK) {
        free(*data), *data = NULL;
        return cg_fail(e, "%s: error closing file (zlib code %d)", path, crc);
    }
    return rc;
}

int cg_idx_load(const char *images_path, const char *labels_path, int max_images,
                cg_dataset *d, cg_err *e)
{
    memset(d, 0, sizeof *d);
    unsigned img[3], lab[3];
    unsigned char *pixels, *labels;
    unsigned keep_max = max_images > 0 ? (unsigned)max_images : 0;
    if (load_idx(images_path, &IDX_IMAGES, keep_max, img, &pixels, e)) return -1;
    if (load_idx(labels_path, &IDX_LABELS, 0, lab, &labels, e)) {
        free(pixels);
        return -1;
    }
    int rc = 0;
    for (unsigned i = 0; i < lab[0] && !rc; i++)
        if (labels[i] > 9)
            rc = cg_fail(e, "%s: label %u of image %u at byte offset %u is outside 0..9",
                         labels_path, labels[i], i, 8 + i);
    if (!rc && img[0] != lab[0])
        rc = cg_fail(e, "%s: holds %u labels but %s holds %u images", labels_path, lab[0],
                     images_path, img[0]);
    if (rc) {
        free(pixels), free(labels);
        return -1;
    }
    unsigned keep = keep_max && keep_max < img[0] ? keep_max : img[0];
    d->n = (int)keep, d->h = (int)img[1], d->w = (int)img[2];
    d->pixels = pixels, d->labels = labels;
    return 0;
}

int cg_idx_load_images(const char *path, int max_images, cg_dataset *d, int *count, cg_err *e)
{
    memset(d, 0, sizeof *d);
    unsigned img[3];
    unsigned keep_max = max_images > 0 ? (unsigned)max_images : 0;
    if (load_idx(path, &IDX_IMAGES, keep_max, img, &d->pixels, e)) return -1;
    if (count) *count = (int)img[0];
    d->n = (int)(keep_max && keep_max < img[0] ? keep_max : img[0]);
    d->h = (int)img[1], d->w = (int)img[2];
    return 0;
}

int cg_idx_load_labels(const char *path, unsigned char **labels, int *n, cg_err *e)
{
    unsigned lab[3];
    if (load_idx(path, &IDX_LABELS, 0, lab, labels, e)) return -1;
    *n = (int)lab[0];
    return 0;
}

void cg_dataset_free(cg_dataset *d)
{
    free(d->pixels);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

int cg_data_random(cg_dataset *d, long long n, size_t image_bytes, int h, int w, unsigned long long seed,
                   cg_err *e)
{
    memset(d, 0, sizeof *d);
    if (n < 0 || n > 0x7fffffffLL) return cg_fail(e, "%lld random images: from 0 to %d", n, 0x7fffffff);
    size_t np = (size_t)n * image_bytes;
    d->n = (int)n, d->h = h, d->w = w;
    d->pixels = malloc(np ? np : 1);
    d->labels = malloc(n ? (size_t)n : 1);
    if (!d->pixels || !d->labels) {
        cg_dataset_free(d);
        return cg_fail(e, "out of memory for %lld random images", n);
    }
    unsigned long long x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < np; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        d->pixels[i] = (unsigned char)(x >> 24);
    }
    for (long long i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        d->labels[i] = (unsigned char)((x >> 24) % 10);
    }
    return 0;
}

int cg_data_repeat(cg_dataset *d, size_t image_bytes, long long k, cg_err *e)
{
    if (k < 1) return cg_fail(e, "repeating the data set %lld times: must be at least once", k);
    if (k == 1) return 0;
    if ((long long)d->n * k > 0x7fffffffLL)
        return cg_fail(e, "%d images repeated %lld times is %lld images; at most %d fit", d->n, k,
                       (long long)d->n * k, 0x7fffffff);
    size_t n = (size_t)d->n, all = n * (size_t)k, bytes = all * image_bytes;
    unsigned char *px = malloc(bytes > 0 ? bytes : 1), *lb = malloc(all > 0 ? all : 1);
    if (!px || !lb) {
        free(px), free(lb);
        return cg_fail(e, "out of memory for %zu images (%zu bytes)", all, bytes);
    }
    for (long long c = 0; c < k; c++) {
        memcpy(px + (size_t)c * n * image_bytes, d->pixels, n * image_bytes);
        memcpy(lb + (size_t)c * n, d->labels, n);
    }
    free(d->pixels), free(d->labels);
    d->pixels = px, d->labels = lb, d->n = (int)all;
    return 0;
}

/* ---- resize ------------------------------------------------------------- */

void cg_resize_tap(int o, double scale, int n, int *i0, int *i1, double *l)
{
    double at = (o + 0.5) * scale - 0.5;
    if (at < 0) at = 0;
    *i0 = (int)at;
    if (*i0 > n - 1) *i0 = n - 1;
    *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
    *l = at - *i0;
}

/* The one resize convgen uses, for inference and for the training files.
 * Output pixel (y, x) samples the source at half-pixel centres:
 *     sy = (y + 0.5) * sh/dh - 0.5,   sx = (x + 0.5) * sw/dw - 0.5
 * with sy, sx clamped below at 0 (as PyTorch does for align_corners=False), then
 *     y0 = floor(sy), y1 = min(y0 + 1, sh - 1), ly = sy - y0   (likewise x0, x1, lx)
 *     v = (1-ly) * ((1-lx) * s[y0][x0] + lx * s[y0][x1])
 *       +    ly  * ((1-lx) * s[y1][x0] + lx * s[y1][x1])
 * all in double; the result is rounded half away from zero, floor(v + 0.5) since
 * v >= 0, and clamped to 0..255. This is F.interpolate(mode="bilinear",
 * align_corners=False, antialias=False) on float input followed by rounding; for
 * 28->64 every weight is a multiple of 1/32, so float and double agree exactly. */
void cg_resize_bilinear_u8(const unsigned char *src, int sh, int sw, unsigned char *dst, int dh,
                           int dw)
{
    double scale_y = (double)sh / dh, scale_x = (double)sw / dw;
    for (int y = 0; y < dh; y++) {
        int y0, y1, x0, x1;
        double ly, lx;
        cg_resize_tap(y, scale_y, sh, &y0, &y1, &ly);
        const unsigned char *r0 = src + (size_t)y0 * sw, *r1 = src + (size_t)y1 * sw;
        for (int x = 0; x < dw; x++) {
            cg_resize_tap(x, scale_x, sw, &x0, &x1, &lx);
            double v = (1 - ly) * ((1 - lx) * r0[x0] + lx * r0[x1]) +
                       ly * ((1 - lx) * r1[x0] + lx * r1[x1]);
            v = floor(v + 0.5);
            if (v < 0) v = 0;
            if (v > 255) v = 255;
            dst[(size_t)y * dw + x] = (unsigned char)v;
        }
    }
}

/* Resize every image of a dataset in place (replacing its pixel buffer). */
static int resize_dataset(cg_dataset *d, int side, const char *what, cg_err *e)
{
    size_t out_per = (size_t)side * side, in_per = (size_t)d->h * d->w, bytes;
    if (cg_mul_size(out_per, (size_t)d->n, &bytes))
        return cg_fail(e, "%s: %d images of %dx%d do not fit in memory", what, d->n, side, side);
    unsigned char *out = malloc(bytes ? bytes : 1);
    if (!out) return cg_fail(e, "%s: out of memory resizing %d images to %dx%d", what, d->n,
                             side, side);
    const unsigned char *in = d->pixels;
    int h = d->h, w = d->w;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < d->n; i++)
        cg_resize_bilinear_u8(in + (size_t)i * in_per, h, w, out + (size_t)i * out_per, side,
                              side);
    free(d->pixels);
    d->pixels = out, d->h = side, d->w = side;
    return 0;
}

/* ---- finding the files -------------------------------------------------- */

/* DIR/NAME if it exists, else DIR/NAME.gz if that exists; else an error naming both.
 * Whether it is a regular file the reader checks (open_idx). */
static int find_file(const char *dir, const char *name, char *out, size_t cap, cg_err *e)
{
    struct stat st;
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n + 4 >= cap) return cg_fail(e, "%s/%s: path too long", dir, name);
    /* something there that is not a file is named by the reader's error */
    if (stat(out, &st) == 0) return 0;
    strcat(out, ".gz");
    if (stat(out, &st) == 0) return 0;
    return cg_fail(e, "%s/%s: no such file (nor %s.gz)%s", dir, name, name,
                   strcmp(dir, CG_DATA_DIR_DEFAULT) == 0
                       ? "; install it with: apt-get install dataset-fashion-mnist"
                       : "");
}

int cg_data_load(const char *dir, int train, int side, int max_images, cg_dataset *d, cg_err *e)
{
    memset(d, 0, sizeof *d);
    if (!dir) dir = CG_DATA_DIR_DEFAULT;
    if (side < 0 || side > (int)IDX_MAX_SIDE)
        return cg_fail(e, "resize side %d is outside 1..%u", side, IDX_MAX_SIDE);
    const char *set = train ? "train" : "t10k";
    char name[64], img[4096], lab[4096];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", set);
    if (find_file(dir, name, img, sizeof img, e)) return -1;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", set);
    if (find_file(dir, name, lab, sizeof lab, e)) return -1;
    if (cg_idx_load(img, lab, max_images, d, e)) return -1;
    if (side > 0 && (side != d->h || side != d->w) && resize_dataset(d, side, img, e)) {
        cg_dataset_free(d);
        return -1;
    }
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

/* Store a big-endian 32-bit header field. */
static void put_be32(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* The most resized pixels `convgen data` holds at once: images are resized a
 * chunk at a time and written as they come (at least one image per chunk). */
#define RESIZE_CHUNK_BYTES ((size_t)8 << 20)

/* The four files a resized copy consists of, as temp files beside their
 * targets until all four are written. */
typedef struct {
    char path[4][4096], tmp[4][4160];
    int written;  /* temps tmp[0..written) exist */
    int existed[4];
} out_set;

static int write_all(int fd, const void *p, size_t n, const char *path, cg_err *e)
{
    const char *s = p;
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return cg_fail(e, "%s: write failed: %s", path, strerror(errno));
        }
        s += w, n -= (size_t)w;
    }
    return 0;
}

/* A fresh temp file (O_EXCL, O_NOFOLLOW) beside out->path[i]; its descriptor. */
static int open_temp(out_set *out, int i, cg_err *e)
{
    const char *path = out->path[i];
    if (cg_check_output_file(path, e)) return -1;
    struct stat st;
    out->existed[i] = lstat(path, &st) == 0;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        char tmp[sizeof out->tmp[i]];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%d", path, (long)getpid(), tries);
        memcpy(out->tmp[i], tmp, sizeof tmp);
        fd = open(out->tmp[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) return cg_fail(e, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
    out->written = i + 1;
    return fd;
}

/* Close a temp file written by open_temp's caller, reporting a failed close. */
static int close_temp(int fd, int rc, const char *path, cg_err *e)
{
    if (close(fd) && !rc) rc = cg_fail(e, "%s: cannot write: %s", path, strerror(errno));
    return rc;
}

/* One set (slots 2*k, 2*k+1 of out) as temp files: its images resized to
 * side x side a chunk at a time, then its labels. */
static int write_set(const cg_dataset *d, int side, const char *dir, const char *set, out_set *out, int k,
                     cg_err *e)
{
    snprintf(out->path[2 * k], sizeof out->path[0], "%s/%s-images-idx3-ubyte", dir, set);
    snprintf(out->path[2 * k + 1], sizeof out->path[0], "%s/%s-labels-idx1-ubyte", dir, set);
    size_t out_per = (size_t)side * (size_t)side, in_per = (size_t)d->h * (size_t)d->w;
    size_t chunk = RESIZE_CHUNK_BYTES / out_per ? RESIZE_CHUNK_BYTES / out_per : 1;
    if (chunk > (size_t)d->n) chunk = (size_t)d->n;
    size_t cap = chunk * out_per > 16 + (size_t)d->n ? chunk * out_per : 16 + (size_t)d->n;
    unsigned char *buf = malloc(cap);
    if (!buf) return cg_fail(e, "%s: out of memory for %zu resized images of %dx%d", dir, chunk, side, side);
    const char *path = out->path[2 * k];
    int fd = open_temp(out, 2 * k, e);
    if (fd < 0) {
        free(buf);
        return -1;
    }
    put_be32(buf, IDX_MAGIC_U8_3D);
    put_be32(buf + 4, (unsigned)d->n);
    put_be32(buf + 8, (unsigned)side);
    put_be32(buf + 12, (unsigned)side);
    int rc = write_all(fd, buf, 16, path, e);
    const int same = d->h == side && d->w == side;
    for (size_t at = 0; !rc && at < (size_t)d->n; at += chunk) {
        long long n = (long long)((size_t)d->n - at < chunk ? (size_t)d->n - at : chunk);
        const unsigned char *in = d->pixels + at * in_per;
        if (same) {
            rc = write_all(fd, in, (size_t)n * out_per, path, e);
            continue;
        }
        int h = d->h, w = d->w;
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < n; i++)
            cg_resize_bilinear_u8(in + (size_t)i * in_per, h, w, buf + (size_t)i * out_per, side, side);
        rc = write_all(fd, buf, (size_t)n * out_per, path, e);
    }
    rc = close_temp(fd, rc, path, e);
    if (!rc) {
        path = out->path[2 * k + 1];
        fd = open_temp(out, 2 * k + 1, e);
        if (fd < 0) rc = -1;
    }
    if (!rc) {
        put_be32(buf, IDX_MAGIC_U8_1D);
        put_be32(buf + 4, (unsigned)d->n);
        memcpy(buf + 8, d->labels, (size_t)d->n);
        rc = close_temp(fd, write_all(fd, buf, 8 + (size_t)d->n, path, e), path, e);
    }
    free(buf);
    return rc;
}

/* The directories of `dir` that do not exist yet, deepest last, "a\0a/b\0". */
static int missing_dirs(const char *dir, char *out, size_t cap, size_t *len)
{
    *len = 0;
    size_t n = strlen(dir);
    for (size_t i = 1; i <= n; i++) {
        if (dir[i] != '/' && dir[i] != 0) continue;
        if (*len + i + 1 > cap) return -1;
        memcpy(out + *len, dir, i);
        out[*len + i] = 0;
        struct stat st;
        if (stat(out + *len, &st)) *len += i + 1;
    }
    return 0;
}

/* Remove what missing_dirs listed, deepest first, where empty. */
static void remove_dirs(char *list, size_t len)
{
    while (len) {
        size_t start = len - 1;
        while (start > 0 && list[start - 1]) start--;
        rmdir(list + start);
        len = start;
    }
}

/* "137.2 GB" for messages. */
static void human_bytes(unsigned long long n, char out[32])
{
    const char *unit[] = {"bytes", "kB", "MB", "GB", "TB", "PB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1000 && u < 5) v /= 1000, u++;
    if (u == 0) snprintf(out, 32, "%llu bytes", n);
    else snprintf(out, 32, "%.1f %s", v, unit[u]);
}

/* Whether the file system of dir (or of its nearest existing parent: nothing is
 * created before the check) has `need` bytes free; 0 yes or unknown, -1 no. */
static int room_for(const char *dir, unsigned long long need, int side, unsigned long long images, cg_err *e)
{
    char at[3008];
    snprintf(at, sizeof at, "%s", dir);
    struct statvfs fs;
    int have_fs = 0;
    while (!(have_fs = statvfs(at, &fs) == 0) && errno == ENOENT) {
        char *slash = strrchr(at, '/');
        while (slash && slash > at && slash[1] == 0) *slash = 0, slash = strrchr(at, '/');
        if (!slash) snprintf(at, sizeof at, ".");
        else if (slash == at) at[1] = 0;
        else *slash = 0;
        if (!strcmp(at, ".") || !strcmp(at, "/")) {
            have_fs = statvfs(at, &fs) == 0;
            break;
        }
    }
    if (have_fs && (unsigned long long)fs.f_bavail * fs.f_frsize < need) {
        char want[32], have[32];
        human_bytes(need, want), human_bytes((unsigned long long)fs.f_bavail * fs.f_frsize, have);
        return cg_fail(e, "%s: the two sets resized to %dx%d (%llu images) need %llu bytes (%s); the file "
                       "system there has %s free", dir, side, side, images, need, want, have);
    }
    return 0;
}

int cg_data_write_resized(const char *src_dir, int side, const char *out_dir, cg_err *e)
{
    if (side <= 0 || side > (int)IDX_MAX_SIDE)
        return cg_fail(e, "resize side %d is outside 1..%u", side, IDX_MAX_SIDE);
    if (strlen(out_dir) > 3000) return cg_fail(e, "%s: path too long", out_dir);
    /* both sets as they are, read before anything is made (the resize happens while writing) */
    cg_dataset sets[2];
    memset(sets, 0, sizeof sets);
    int rc = 0;
    for (int train = 0; train <= 1 && !rc; train++)
        if (cg_data_load(src_dir, train, 0, 0, &sets[train], e)) rc = -1;
    unsigned long long need = 0, images = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        images += (unsigned long long)sets[k].n;
        need += 16 + 8 + (unsigned long long)sets[k].n * (1 + (unsigned long long)side * (unsigned long long)side);
    }
    if (!rc && room_for(out_dir, need, side, images, e)) rc = -1;
    char created[2 * 4096];
    size_t ncreated = 0;
    out_set *out = rc ? NULL : calloc(1, sizeof *out);
    if (!rc && !out) rc = (cg_fail(e, "out of memory"), -2);
    if (!rc && missing_dirs(out_dir, created, sizeof created, &ncreated)) rc = (cg_fail(e, "%s: path too long", out_dir), -1);
    if (!rc && cg_mkdirs(out_dir, e)) rc = -2;
    /* both sets into temp files, then into place */
    for (int k = 0; k < 2 && !rc; k++)
        if (write_set(&sets[1 - k], side, out_dir, k ? "t10k" : "train", out, k, e)) rc = -2;
    int placed = 0;
    for (; !rc && placed < 4; placed++) {
        if (cg_check_output_file(out->path[placed], e)) rc = -2;
        else if (rename(out->tmp[placed], out->path[placed]))
            rc = (cg_fail(e, "%s: cannot write: %s", out->path[placed], strerror(errno)), -2);
        if (rc) break;
    }
    if (rc && out) { /* nothing of this run stays: its temps, the files it added, the directories it made */
        for (int i = placed; i < out->written; i++) unlink(out->tmp[i]);
        for (int i = 0; i < placed; i++)
            if (!out->existed[i]) unlink(out->path[i]);
        remove_dirs(created, ncreated);
    }
    free(out);
    cg_dataset_free(&sets[0]), cg_dataset_free(&sets[1]);
    return rc;
}
