/* api_client.c — a program built against the installed library the way a
 * user builds one (tests/test_install.sh: cc api_client.c $(pkg-config
 * --cflags --libs convgen)), using nothing but convgen.h. It opens SPEC on the
 * CPU backend, classifies the first N images of a plain IDX images file, and
 * prints the accuracy against the labels file in `convgen run`'s form; then
 * it runs the same images as scaled floats and says whether the predictions
 * agree. Exit status: 0, or the failing call's cg_status. */
#include <convgen.h>
#include <stdio.h>
#include <stdlib.h>

/* n bytes after a header of skip bytes, or NULL. */
static unsigned char *read_idx(const char *path, long skip, size_t n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *p = malloc(n ? n : 1);
    int ok = f && p && fseek(f, skip, SEEK_SET) == 0 && fread(p, 1, n, f) == n;
    if (f) fclose(f);
    if (!ok) free(p), p = NULL;
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: api_client SPEC IMAGES-IDX LABELS-IDX N\n");
        return 2;
    }
    long n = atol(argv[4]);
    cg_net *net = NULL;
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = CG_BACKEND_CPU;
    cg_status st = cg_net_open(argv[1], &o, &net);
    int c = 0, h = 0, w = 0, classes = 0;
    double scale = 0, offset = 0;
    if (!st) st = cg_net_input_shape(net, &c, &h, &w);
    if (!st) st = cg_net_classes(net, &classes);
    if (!st) st = cg_net_input_scaling(net, &scale, &offset);
    if (st) {
        fprintf(stderr, "api_client: %s\n", cg_net_error(net));
        cg_net_close(net);
        return (int)st;
    }
    size_t img = (size_t)c * h * w;
    unsigned char *px = read_idx(argv[2], 16, (size_t)n * img), *labels = read_idx(argv[3], 8, (size_t)n);
    int *pred = malloc((size_t)n * sizeof *pred), *pred2 = malloc((size_t)n * sizeof *pred2);
    float *scores = malloc((size_t)n * classes * sizeof *scores), *x = malloc((size_t)n * img * sizeof *x);
    if (!px || !labels || !pred || !pred2 || !scores || !x) {
        fprintf(stderr, "api_client: cannot read %s / %s or out of memory\n", argv[2], argv[3]);
        return 5;
    }
    cg_input in = {CG_INPUT_U8, n, c, h, w, px};
    st = cg_net_run(net, &in, pred, scores);
    for (size_t i = 0; !st && i < (size_t)n * img; i++) x[i] = (float)(px[i] * scale + offset);
    cg_input fin = {CG_INPUT_F32, n, c, h, w, x};
    if (!st) st = cg_net_run(net, &fin, pred2, NULL);
    if (st) {
        fprintf(stderr, "api_client: %s\n", cg_net_error(net));
        cg_net_close(net);
        return (int)st;
    }
    long right = 0, same = 0;
    for (long i = 0; i < n; i++) right += pred[i] == labels[i], same += pred[i] == pred2[i];
    printf("Correctness: %.4f Model: %s on %s\n", (double)right / (double)n, argv[1], cg_net_device_name(net));
    printf("float input: %ld of %ld predictions the same\n", same, n);
    cg_net_close(net);
    free(px), free(labels), free(pred), free(pred2), free(scores), free(x);
    return 0;
}
