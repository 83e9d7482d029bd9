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
 * scaled, shaped N x H x W or N x C x H x W, H x W equal to the network's
 * input (this example does not resize). It prints "index,prediction" and one
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
    int classes = 0;
    if (!st) st = cg_net_classes(net, &classes);
    long long n = a.shape[0];
    /* N x H x W is one channel; the API checks the shape against the network's */
    cg_input in = {a.f32 ? CG_INPUT_F32 : CG_INPUT_U8, n, a.ndim == 4 ? (int)a.shape[1] : 1,
                   (int)a.shape[a.ndim - 2], (int)a.shape[a.ndim - 1], a.data};
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
