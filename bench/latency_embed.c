/* latency_embed.c — one image at a time through the library, timed the way an
 * embedding program sees it: cg_net_run from uint8 pixels in host memory to a
 * prediction in host memory, wall clock around each call.
 *
 *   build/bench/latency_embed SPEC|NET.cgb [cuda|cpu] [CALLS]
 *
 * Opens the network with batch 1 (the batch-1 bucket's kernels, replayed as a
 * CUDA graph), runs 20 untimed calls, then CALLS (default 1000) timed ones on
 * made-up images (a new image each call), and prints p50, p90, p99 and the
 * mean in microseconds. Exit status: 0, or the cg_status of the failing call. */
#define _POSIX_C_SOURCE 200809L
#include <convgen.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: latency_embed SPEC|NET.cgb [cuda|cpu] [CALLS]\n");
        return 2;
    }
    const char *path = argv[1];
    int cuda = argc < 3 || !strcmp(argv[2], "cuda");
    long calls = argc > 3 ? strtol(argv[3], NULL, 10) : 1000;
    if ((argc > 2 && !cuda && strcmp(argv[2], "cpu")) || calls < 1 || calls > 10000000) {
        fprintf(stderr, "latency_embed: expected cuda or cpu and 1..10000000 calls\n");
        return 2;
    }
    cg_net_options o;
    cg_net_options_init(&o);
    o.backend = cuda ? CG_BACKEND_CUDA : CG_BACKEND_CPU;
    if (cuda) o.batch = 1;
    size_t len = strlen(path);
    cg_net *net = NULL;
    cg_status st = len > 4 && !strcmp(path + len - 4, ".cgb") ? cg_net_open_bundle(path, &o, &net)
                                                              : cg_net_open(path, &o, &net);
    if (st) {
        fprintf(stderr, "latency_embed: %s\n", cg_net_error(net));
        cg_net_close(net);
        return (int)st;
    }
    int c, h, w;
    cg_net_input_shape(net, &c, &h, &w);
    size_t per = (size_t)c * (size_t)h * (size_t)w;
    unsigned char *img = malloc(per * 64);
    double *t = malloc((size_t)calls * sizeof *t);
    int classes = 0;
    cg_net_classes(net, &classes);
    float *scores = malloc((size_t)(classes > 0 ? classes : 1) * sizeof *scores);
    if (!img || !t || !scores) {
        fprintf(stderr, "latency_embed: out of memory\n");
        cg_net_close(net);
        return 5;
    }
    for (size_t i = 0; i < per * 64; i++) img[i] = (unsigned char)(i * 2654435761u >> 24);
    long sum_pred = 0;
    for (long k = -20; k < calls && !st; k++) {
        cg_input in = {CG_INPUT_U8, 1, c, h, w, img + (size_t)((k + 20) % 64) * per};
        int pred = -1;
        double t0 = now_us();
        st = cg_net_run(net, &in, &pred, scores);
        if (k >= 0) t[k] = now_us() - t0;
        sum_pred += pred;
    }
    if (st) {
        fprintf(stderr, "latency_embed: %s\n", cg_net_error(net));
    } else {
        double mean = 0;
        for (long k = 0; k < calls; k++) mean += t[k] / (double)calls;
        qsort(t, (size_t)calls, sizeof *t, cmp);
        printf("%s on %s, batch 1, %ld calls: p50 %.1f us, p90 %.1f us, p99 %.1f us, mean %.1f us "
               "(uint8 pixels in host memory to a prediction in host memory; predictions sum %ld)\n",
               path, cg_net_device_name(net), calls, t[(calls - 1) / 2], t[(calls * 9 - 1) / 10],
               t[(calls * 99 - 1) / 100], mean, sum_pred);
    }
    free(img), free(t), free(scores);
    cg_net_close(net);
    return (int)st;
}
