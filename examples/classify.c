/* classify.c — classify the images of a NumPy .npy file with a convgen bundle,
 * through the public API alone (convgen.h). Build against the installed
 * library:
 *
 *     cc -std=c11 classify.c $(pkg-config --cflags --libs convgen) -o classify
 *     ./classify NET.cgb images.npy [cpu|cuda] [DEVICE]
 *
 * NET.cgb comes from `convgen build SPEC -o NET.cgb`; nothing else is needed
 * at run time (no spec, weights file or templates). images.npy holds uint8
 * pixels (scaled by the network as its spec says) or float32 values already
 * scaled, shaped N x H x W or N x C x H x W; an H x W other than the
 * network's input is resized to it as `convgen run --input` resizes (bilinear,
 * half-pixel centres; uint8 rounded), so both give the same predictions.
 * It prints "index,prediction" and one
 * line per image, then the mean top score on stderr. Exit status: 0, 2 for
 * usage, 3 for an unreadable .npy, else the failing call's cg_status. */
#include <convgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A .npy array as this example reads it: C order, '|u1' or '<f4'. */
typedef struct {
    int f32;          /* 1: float32, 0: uint8 */
    int ndim;
    long long shape[4];
    void *data;
} npy;

/* The header dict's 'shape' tuple into a->shape (3 or 4 positive items). */
static int parse_shape(const char *hdr, npy *a)
{
    const char *p = strstr(hdr, "'shape':");
    if (!p || !(p = strchr(p, '('))) return -1;
    p++;
    for (a->ndim = 0; a->ndim < 4;) {
        while (*p == ' ') p++;
        if (*p == ')') break;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 1) return -1;
        a->shape[a->ndim++] = v;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
    }
    return a->ndim >= 3 ? 0 : -1;
}

/* Read path into *a: magic, version 1 or 2 header, dtype, order, shape, data. */
static int read_npy(const char *path, npy *a)
{
    FILE *f = fopen(path, "rb");
    unsigned char head[12];
    int ok = 0;
    char *hdr = NULL;
    memset(a, 0, sizeof *a);
    if (f && fread(head, 1, 10, f) == 10 && !memcmp(head, "\x93NUMPY", 6) && (head[6] == 1 || head[6] == 2)) {
        unsigned long hl = head[8] | (unsigned long)head[9] << 8;
        if (head[6] == 2 && fread(head + 10, 1, 2, f) == 2)
            hl |= (unsigned long)head[10] << 16 | (unsigned long)head[11] << 24;
        hdr = hl < 65536 ? calloc(1, hl + 1) : NULL;
        ok = hdr && fread(hdr, 1, hl, f) == hl && strstr(hdr, "'fortran_order': False") && !parse_shape(hdr, a);
        a->f32 = ok && strstr(hdr, "'descr': '<f4'") != NULL;
        ok = ok && (a->f32 || strstr(hdr, "'descr': '|u1'"));
    }
    size_t count = 1;
    for (int i = 0; ok && i < a->ndim; i++) count *= (size_t)a->shape[i];
    size_t es = a->f32 ? 4 : 1;
    if (ok) ok = (a->data = malloc(count * es)) != NULL && fread(a->data, es, count, f) == count;
    if (f) fclose(f);
    free(hdr);
    if (!ok) free(a->data), a->data = NULL;
    return ok ? 0 : -1;
}

/* convgen's resize (runtime/formats/data.c): output (y, x) samples the source
 * at ((y + 0.5) * sh/dh - 0.5, likewise x), clamped below at 0, bilinearly. */
static void tap(int o, double scale, int n, int *i0, int *i1, double *l)
{
    double at = (o + 0.5) * scale - 0.5;
    if (at < 0) at = 0;
    *i0 = (int)at;
    if (*i0 > n - 1) *i0 = n - 1;
    *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
    *l = at - *i0;
}

/* Every plane of a (n * c planes of sh x sw) resized to dh x dw into a new
 * buffer: uint8 values rounded half up and clamped to 0..255, float32 as computed. */
static void *resize(const npy *a, long long planes, int sh, int sw, int dh, int dw)
{
    size_t es = a->f32 ? 4 : 1, per = (size_t)dh * (size_t)dw;
    char *out = malloc((size_t)planes * per * es);
    if (!out) return NULL;
    for (long long p = 0; p < planes; p++)
        for (int y = 0; y < dh; y++) {
            int y0, y1, x0, x1;
            double ly, lx;
            tap(y, (double)sh / dh, sh, &y0, &y1, &ly);
            for (int x = 0; x < dw; x++) {
                tap(x, (double)sw / dw, sw, &x0, &x1, &lx);
                size_t base = (size_t)p * (size_t)sh * (size_t)sw, i00 = base + (size_t)y0 * sw + x0,
                       i01 = base + (size_t)y0 * sw + x1, i10 = base + (size_t)y1 * sw + x0,
                       i11 = base + (size_t)y1 * sw + x1, at = (size_t)p * per + (size_t)y * dw + x;
                if (a->f32) {
                    const float *s = a->data;
                    ((float *)out)[at] = (float)((1 - ly) * ((1 - lx) * s[i00] + lx * s[i01]) +
                                                 ly * ((1 - lx) * s[i10] + lx * s[i11]));
                } else {
                    const unsigned char *s = a->data;
                    double v = (1 - ly) * ((1 - lx) * s[i00] + lx * s[i01]) + ly * ((1 - lx) * s[i10] + lx * s[i11]);
                    v = v < 0 ? 0 : v > 255 ? 255 : v;
                    ((unsigned char *)out)[at] = (unsigned char)(int)(v + 0.5);
                }
            }
        }
    return out;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: classify NET.cgb IMAGES.npy [cpu|cuda] [DEVICE]\n");
        return 2;
    }
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = argc > 3 && !strcmp(argv[3], "cuda") ? CG_BACKEND_CUDA : CG_BACKEND_CPU;
    o.device = argc > 4 ? atoi(argv[4]) : 0;
    npy a;
    if (read_npy(argv[2], &a)) {
        fprintf(stderr, "classify: %s: not a C-order uint8 or float32 .npy of N x H x W or N x C x H x W\n",
                argv[2]);
        return 3;
    }
    cg_net *net = NULL;
    cg_status st = cg_net_open_bundle(argv[1], &o, &net);
    int classes = 0, nc = 0, nh = 0, nw = 0;
    if (!st) st = cg_net_classes(net, &classes);
    if (!st) st = cg_net_input_shape(net, &nc, &nh, &nw);
    long long n = a.shape[0];
    /* N x H x W is one channel; the API checks the shape against the network's */
    cg_input in = {a.f32 ? CG_INPUT_F32 : CG_INPUT_U8, n, a.ndim == 4 ? (int)a.shape[1] : 1,
                   (int)a.shape[a.ndim - 2], (int)a.shape[a.ndim - 1], a.data};
    if (!st && (in.h != nh || in.w != nw)) {
        void *r = resize(&a, n * in.c, in.h, in.w, nh, nw);
        if (!r) {
            fprintf(stderr, "classify: out of memory resizing %lld images to %dx%d\n", n, nh, nw);
            cg_net_close(net), free(a.data);
            return CG_STATUS_IO;
        }
        free(a.data);
        a.data = r, in.data = r, in.h = nh, in.w = nw;
    }
    int *pred = st ? NULL : malloc((size_t)(n ? n : 1) * sizeof *pred);
    float *scores = st ? NULL : malloc((size_t)(n ? n : 1) * (size_t)classes * sizeof *scores);
    if (!st && (!pred || !scores)) {
        fprintf(stderr, "classify: out of memory\n");
        st = CG_STATUS_IO;
    } else if (!st) {
        st = cg_net_run(net, &in, pred, scores);
    }
    if (st) {
        fprintf(stderr, "classify: %s\n", cg_net_error(net));
    } else {
        double top = 0;
        printf("index,prediction\n");
        for (long long i = 0; i < n; i++) {
            printf("%lld,%d\n", i, pred[i]);
            top += scores[i * classes + pred[i]];
        }
        fprintf(stderr, "classify: %lld images on %s (%s), mean top score %.4f\n", n, cg_net_backend(net),
                cg_net_device_name(net), n ? top / (double)n : 0.0);
    }
    cg_net_close(net);
    free(pred), free(scores), free(a.data);
    return (int)st;
}
