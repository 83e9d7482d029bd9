/* test_shards.c — several networks sharing one run (runtime/cli/shards.c,
 * what `convgen run --devices 0,1` does with one network per GPU), without a
 * GPU: two and three CPU networks of ece408-2017 give, bit for bit, the
 * predictions, scores and layer outputs one network gives for all the images,
 * in order, for N a multiple of K or not, N < K, N = 1 and N = 0; float input
 * shards by its own element size; a network that fails is named, with its
 * status and message, and networks of another network are refused. The
 * command's side: its --devices lists, and the figures it writes of each
 * network's shard for --profile and --json. */
#include "check.h"
#include "convgen.h"
#include "devices.h"
#include "shards.h"

#include <stdlib.h>
#include <string.h>

#define SPEC "specs/ece408-2017.yaml"
#define N 37
#define K 3
#define PX (28 * 28)
#define CLASSES 10

/* Pixels from a seed (xorshift), as made-up images. */
static void fill(unsigned char *p, size_t n, unsigned long long x)
{
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

static unsigned char px[N * PX];
static int ref_pred[N];
static float ref_scores[N * CLASSES];

/* k networks of SPEC on the CPU; 0 when every one opened. */
static int open_nets(cg_net **nets, int k)
{
    int bad = 0;
    for (int i = 0; i < k; i++) {
        nets[i] = NULL;
        cg_status st = cg_net_open(SPEC, NULL, &nets[i]);
        if (st) printf("open %d: %s\n", i, cg_net_error(nets[i])), bad = 1;
    }
    return bad;
}

static void close_nets(cg_net **nets, int k)
{
    for (int i = 0; i < k; i++) cg_net_close(nets[i]);
}

/* Every k and n of interest against one network's run over the first n images;
 * the entries past n are left alone, each shard reports its own images. */
static void test_same_answers(cg_net **nets)
{
    long long ns[] = {N, 36, 2, 1, 0};
    for (int k = 1; k <= K; k++)
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
            long long n = ns[a];
            int pred[N + 1];
            float scores[(N + 1) * CLASSES];
            memset(pred, 0x55, sizeof pred);
            memset(scores, 0x55, sizeof scores);
            cg_input in = {CG_INPUT_U8, n, 1, 28, 28, px};
            cg_shard sh[K];
            int failed = 7;
            cg_err e = {""};
            cg_status st = cg_shards_run(nets, k, &in, pred, scores, NULL, sh, &failed, &e);
            int same = st == CG_STATUS_OK && failed == -1 && pred[n] == 0x55555555;
            same &= !memcmp(pred, ref_pred, (size_t)n * sizeof *pred);
            same &= !memcmp(scores, ref_scores, (size_t)n * CLASSES * sizeof *scores);
            long long at = 0;
            for (int i = 0; i < k; i++) {
                same &= sh[i].off == at && sh[i].status == CG_STATUS_OK && sh[i].wall_ms >= 0;
                at += sh[i].n;
            }
            CHECK(same && at == n, "k=%d n=%lld: status %d, failed %d, %s", k, n, (int)st, failed, e.msg);
        }
    int pred[N];
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    int failed;
    cg_err e = {""};
    CHECK(cg_shards_run(nets, 2, &in, pred, NULL, NULL, NULL, &failed, &e) == CG_STATUS_OK &&
              !memcmp(pred, ref_pred, sizeof pred),
          "predictions alone, no scores or shard reports asked for: %s", e.msg);
}

/* cg_net_run_layers over shards: every layer's output at its images' place. */
static void test_layers(cg_net **nets)
{
    int nl = cg_net_layer_count(nets[0]), pred[N];
    float *ref[64] = {0}, *got[64] = {0};
    int ok = nl > 0 && nl <= 64;
    for (int l = 0; ok && l < nl; l++) {
        size_t n = (size_t)N * (size_t)cg_net_layer_size(nets[0], l);
        ref[l] = malloc(n * sizeof(float)), got[l] = calloc(n, sizeof(float));
        ok = ref[l] && got[l];
    }
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    int failed;
    cg_err e = {""};
    ok = ok && cg_net_run_layers(nets[0], &in, pred, NULL, ref) == CG_STATUS_OK;
    float *skipped = got[1];
    got[1] = NULL; /* a layer not asked for is skipped */
    ok = ok && cg_shards_run(nets, K, &in, pred, NULL, got, NULL, &failed, &e) == CG_STATUS_OK;
    for (int l = 0; ok && l < nl; l++)
        ok = !got[l] || !memcmp(got[l], ref[l], (size_t)N * (size_t)cg_net_layer_size(nets[0], l) * sizeof(float));
    CHECK(ok && !memcmp(pred, ref_pred, sizeof pred), "layer outputs over 3 networks: %s", e.msg);
    for (int l = 0; l < nl && l < 64; l++) free(ref[l]), free(got[l]);
    free(skipped);
}

/* Float input is sharded by 4-byte elements, not by bytes. */
static void test_float_input(cg_net **nets)
{
    static float x[N * PX];
    double scale, offset;
    cg_net_input_scaling(nets[0], &scale, &offset);
    for (size_t i = 0; i < sizeof x / sizeof *x; i++) x[i] = (float)((double)px[i] * scale + offset);
    int pred[N], rp[N];
    float sc[N * CLASSES], rs[N * CLASSES];
    cg_input in = {CG_INPUT_F32, N, 1, 28, 28, x};
    int failed;
    cg_err e = {""};
    cg_status st = cg_net_run(nets[0], &in, rp, rs);
    CHECK(st == CG_STATUS_OK && cg_shards_run(nets, K, &in, pred, sc, NULL, NULL, &failed, &e) == CG_STATUS_OK &&
              !memcmp(pred, rp, sizeof pred) && !memcmp(sc, rs, sizeof sc),
          "float input over 3 networks: %s", e.msg);
}

/* A network that fails is named with its status and its own message, the
 * others' shards still reported; bad arguments are refused before any run. */
static void test_failures(cg_net **nets)
{
    cg_net *mixed[K] = {nets[0], NULL, nets[2]}, *failed_open = NULL;
    /* ece408-2018fa: 10 classes too, but 72x72 images: its run refuses the shard */
    cg_status st = cg_net_open("specs/ece408-2018fa.yaml", NULL, &mixed[1]);
    CHECK(st == CG_STATUS_OK, "open ece408-2018fa: %s", cg_net_error(mixed[1]));
    int pred[N], failed = 7;
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    cg_shard sh[K];
    cg_err e = {""};
    st = cg_shards_run(mixed, K, &in, pred, NULL, NULL, sh, &failed, &e);
    CHECK(st == CG_STATUS_USAGE && failed == 1, "the second network fails: status %d, failed %d", (int)st, failed);
    CHECK_CONTAINS(e.msg, "network 1: cg_net_run: input images are 1x28x28");
    CHECK(sh[0].status == CG_STATUS_OK && sh[2].status == CG_STATUS_OK && sh[1].status == CG_STATUS_USAGE &&
              !memcmp(pred, ref_pred, (size_t)sh[0].n * sizeof *pred),
          "the other shards ran and say so");
    cg_net_close(mixed[1]);

    cg_net_open("tests/no/such.yaml", NULL, &failed_open);
    mixed[1] = failed_open;
    st = cg_shards_run(mixed, K, &in, pred, NULL, NULL, sh, &failed, &e);
    CHECK(st == CG_STATUS_USAGE && failed == 1, "a network that did not open: status %d, failed %d", (int)st, failed);
    CHECK_CONTAINS(e.msg, "network 1: ");
    CHECK_CONTAINS(e.msg, "did not open");
    cg_net_close(failed_open);

    mixed[1] = NULL;
    CHECK(cg_shards_run(mixed, K, &in, pred, NULL, NULL, NULL, &failed, &e) == CG_STATUS_USAGE && failed == -1,
          "a NULL network");
    CHECK(cg_shards_run(nets, 0, &in, pred, NULL, NULL, NULL, &failed, &e) == CG_STATUS_USAGE, "no networks");
    CHECK_CONTAINS(e.msg, "from 1 to 64");
    CHECK(cg_shards_run(nets, CG_SHARDS_MAX + 1, &in, pred, NULL, NULL, NULL, &failed, &e) == CG_STATUS_USAGE,
          "too many networks");
    CHECK(cg_shards_run(nets, K, &in, NULL, NULL, NULL, NULL, &failed, &e) == CG_STATUS_USAGE, "pred NULL");
    cg_input bad = in;
    bad.type = (cg_input_type)9;
    CHECK(cg_shards_run(nets, K, &bad, pred, NULL, NULL, NULL, &failed, &e) == CG_STATUS_USAGE, "unknown type");
    CHECK_CONTAINS(e.msg, "unknown input type 9");
}

/* --devices lists as the command reads them. */
static void test_device_lists(void)
{
    cg_devices d;
    cg_err e = {""};
    CHECK(cg_devices_parse("0,1", &d, &e) == 0 && d.k == 2 && d.id[0] == 0 && d.id[1] == 1 && !d.all, "0,1");
    CHECK(cg_devices_parse("3,1,2", &d, &e) == 0 && d.k == 3 && d.id[0] == 3 && d.id[2] == 2, "in the order given");
    CHECK(cg_devices_parse("all", &d, &e) == 0 && d.all && d.k == 0, "all: resolved by the probe");
    CHECK(cg_devices_parse("1023", &d, &e) == 0 && d.id[0] == 1023, "the largest index");
    const char *bad[] = {"", ",", "1,", ",1", "1,,2", "a", "1a", "-1", "+1", "1024", "99999", "0,0", "ALL", "0 ,1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        CHECK(cg_devices_parse(bad[i], &d, &e) == 2 && strstr(e.msg, "--devices") && !strchr(e.msg, '\n'),
              "'%s' refused in one line: %s", bad[i], e.msg);
    }
}

/* What --profile and --json say of each network's shard, and a failure naming
 * its GPU, here with CPU networks standing in (no streamed figures). */
static void test_device_figures(cg_net **nets)
{
    cg_devices d = {2, {4, 7}, 0};
    cg_shard sh[2];
    int pred[N], failed;
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    cg_err e = {""};
    CHECK(cg_shards_run(nets, 2, &in, pred, NULL, NULL, sh, &failed, &e) == CG_STATUS_OK, "run: %s", e.msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cg_devices_json(f, &d, nets, sh, N, 2.5);
    fclose(f);
    CHECK_CONTAINS(text, "\"devices\": [\n    {\"index\": 4, \"name\": \"cpu\", \"first_image\": 0, \"images\": 19,");
    CHECK_CONTAINS(text, "{\"index\": 7, \"name\": \"cpu\", \"first_image\": 19, \"images\": 18,");
    CHECK_CONTAINS(text, "\"sharded\": {\"devices\": 2, \"images\": 37, \"wall_ms\": 2.500, "
                         "\"images_per_s\": 14800.0},\n");
    CHECK(text && !strstr(text, "streamed"), "no streamed figures from a CPU network");
    free(text);
    f = open_memstream(&text, &len);
    cg_devices_print(f, &d, nets, sh, N, 2.5);
    fclose(f);
    CHECK_CONTAINS(text, "2 GPUs, one network each");
    CHECK_CONTAINS(text, "all GPUs: 37 images in 2.500 ms (host clock, the whole run): 14800 images/s");
    free(text);
    cg_net *mixed[2] = {nets[0], NULL};
    cg_net_open("specs/ece408-2018fa.yaml", NULL, &mixed[1]);
    CHECK(cg_shards_run(mixed, 2, &in, pred, NULL, NULL, sh, &failed, &e) == CG_STATUS_USAGE && failed == 1,
          "the second fails");
    cg_devices_fail(&d, mixed, failed, &e);
    CHECK_CONTAINS(e.msg, "GPU 7 (cpu): cg_net_run: input images are 1x28x28");
    cg_net_close(mixed[1]);
}

int main(void)
{
    fill(px, sizeof px, 42);
    cg_net *nets[K];
    if (open_nets(nets, K)) {
        CHECK(0, "opening %d networks of %s", K, SPEC);
        close_nets(nets, K);
        return cg_test_done("shards");
    }
    cg_input in = {CG_INPUT_U8, N, 1, 28, 28, px};
    CHECK(cg_net_run(nets[0], &in, ref_pred, ref_scores) == CG_STATUS_OK, "one network: %s", cg_net_error(nets[0]));
    test_same_answers(nets);
    test_layers(nets);
    test_float_input(nets);
    test_failures(nets);
    test_device_lists();
    test_device_figures(nets);
    close_nets(nets, K);
    return cg_test_done("shards");
}
