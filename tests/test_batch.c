/* test_batch.c — the batch as a generation input: which bucket serves a launch
 * of n images, what the templates choose for a small bucket (fc_gemv, conv2d_direct
 * with its map groups split over blocks, conv2d_igemm in small tiles at one image), the
 * manifest's `bucket` record, and that the large-batch kernels stay as they were. */
#include "check.h"
#include "gen.h"
#include "manifest.h"

#include <stdlib.h>
#include <string.h>

static void buckets(void)
{
    static const long long n[] = {-5, 0, 1, 2, 7, 8, 9, 64, 65, 256, 257, 1000, 1024, 1025, 10000};
    static const int want[] = {0, 0, 1, 8, 8, 8, 64, 64, 256, 256, 1024, 1024, 1024, 0, 0};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        CHECK(cg_batch_bucket(n[i]) == want[i], "bucket of %lld: %d, expected %d", n[i], cg_batch_bucket(n[i]),
              want[i]);
}

/* 1: gen_for builds for sm_90a (wgmma: the fc_mma and warpgroup templates), as
 * `generate --arch 90` does; 0: plain sm_90. */
static int gen_sm90a;

/* The compute capability gen_for builds for (90 unless a test sets another). */
static int gen_cc = 90;

/* Generate spec `path` for bucket `batch` (0: the large-batch kernels) on an
 * sm_90 target with 132 SMs, parsing the manifest into *m. */
static int gen_for(const char *path, int batch, cg_spec *s, cg_gen_output *o, cg_manifest *m)
{
    cg_err e = {""};
    cg_target tg;
    cg_target_default(&tg);
    tg.cc = gen_cc, tg.sms = 132, tg.max_shared_optin = 227 * 1024;
    tg.batch = batch;
    tg.sm90a = gen_sm90a;
    if (cg_spec_load(path, s, &e) || cg_generate_for(s, "test", &tg, o, &e) ||
        cg_manifest_parse(o->manifest, o->manifest_len, path, m, &e)) {
        CHECK(0, "%s, bucket %d: %s", path, batch, e.msg);
        return -1;
    }
    return 0;
}

/* The source of o's first kernel whose name starts with `prefix`, or NULL. */
static const char *source_of(const cg_gen_output *o, const char *prefix)
{
    for (int k = 0; k < o->nkernels; k++)
        if (!strncmp(o->k[k].kernel, prefix, strlen(prefix))) return o->k[k].source;
    return NULL;
}

/* In a small bucket every fc layer is a gemv but the last, which with the softmax
 * and the predictions is one kernel (templates/ops/tail.lua), and shallow conv
 * layers direct (split over blocks where one image's outputs are few blocks), at
 * one image the others igemm in 32-pixel tiles, whatever the spec's large-batch
 * strategy; the manifest says the bucket. */
static void small_choices(void)
{
    static const char *specs[] = {"specs/ece408-2017.yaml", "specs/ece408-2018sp.yaml", "specs/ece408-2018fa.yaml",
                                  "tests/gpu/layers-small-batch.yaml"};
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        const int batches[] = {1, 8, 64};
        for (int b = 0; b < 3; b++) {
            if (gen_for(specs[i], batches[b], &s, &o, &m)) continue;
            CHECK(m.bucket == batches[b], "%s: manifest bucket %d, expected %d", specs[i], m.bucket, batches[b]);
            const cg_mkernel *last = &m.k[cg_manifest_layer_kernels(&m) - 1];
            CHECK(!strcmp(last->tpl, "tail") && last->nout == 3 && last->outs[2] == m.predict &&
                      last->outs[1] == m.output,
                  "%s bucket %d: the last kernel %s is no tail writing the scores and predictions", specs[i],
                  batches[b], last->name);
            for (int k = 0; k < m.nkernels; k++) {
                const cg_mkernel *mk = &m.k[k];
                const char *layer = mk->layer;
                int fc = !strncmp(mk->tpl, "fc_", 3), conv = !strncmp(mk->tpl, "conv2d_", 7);
                if (fc) CHECK(!strcmp(mk->tpl, "fc_gemv"), "%s bucket %d layer %s: %s, expected fc_gemv", specs[i],
                              batches[b], layer, mk->tpl);
                /* at one image every conv is direct or igemm in small tiles; from two
                 * on, shallow layers (here C <= 3) are direct, deeper ones keep the
                 * large-batch choice */
                const cg_layer *sl = NULL;
                for (int j = 0; j < s.nlayers; j++)
                    if (!strcmp(s.layers[j].name, layer)) sl = &s.layers[j];
                if (conv && batches[b] == 1)
                    CHECK(!strcmp(mk->tpl, "conv2d_direct") || !strcmp(mk->tpl, "conv2d_igemm"),
                          "%s bucket %d layer %s: %s, expected direct or igemm", specs[i], batches[b], layer, mk->tpl);
                if (conv && sl && sl->C <= 3)
                    CHECK(!strcmp(mk->tpl, "conv2d_direct"), "%s bucket %d layer %s (C = %d): %s, expected direct",
                          specs[i], batches[b], layer, sl->C, mk->tpl);
                /* at one image, a direct conv of many maps is split over blocks */
                if (batches[b] == 1 && !strcmp(mk->tpl, "conv2d_direct") && !strcmp(specs[i], specs[0]))
                    CHECK(strstr(mk->name, "_ms") != NULL, "%s: %s is not split over blocks", specs[i], mk->name);
            }
            cg_gen_free(&o);
        }
        /* the large-batch kernels: no bucket record, the spec's own strategies */
        if (gen_for(specs[i], 0, &s, &o, &m)) continue;
        CHECK(m.bucket == 0, "%s: large batch has bucket %d", specs[i], m.bucket);
        CHECK(!strstr(o.manifest, "\nbucket "), "%s: large batch manifest names a bucket", specs[i]);
        for (int k = 0; k < m.nkernels; k++) {
            CHECK(strcmp(m.k[k].tpl, "fc_gemv"), "%s: large batch uses fc_gemv for %s", specs[i], m.k[k].layer);
            CHECK(!strstr(m.k[k].name, "_ms"), "%s: large batch splits %s", specs[i], m.k[k].name);
        }
        cg_gen_free(&o);
    }
}

/* The kernel of layer `name` whose name has `part` (the first kernel of the layer if
 * part is NULL), or NULL. */
static const cg_mkernel *kernel_of(const cg_manifest *m, const char *name, const char *part)
{
    for (int k = 0; k < m->nkernels; k++)
        if (!strcmp(m->k[k].layer, name) && (!part || strstr(m->k[k].name, part))) return &m->k[k];
    return NULL;
}

/* Small-batch rules for shapes the course networks lack: an odd C*K*K at one image
 * splits by a divisor of its slice count (planner.split_of: 825 rows in 165 slices of
 * 5, 11 parts, splitk_reduce pooling), a prime slice count above SPLIT_MAX splits
 * ragged (639 rows in 71 slices of 9: 8 parts of 8 slices and a last of 7); at 256
 * images an fc whose vec tiles launch fewer blocks than half the SMs (15,488 inputs
 * into 10: 2 tiles x split 8) takes gemv, and one with enough keeps vec; gemv's
 * threads at 8 images and at one. */
static void odd_splits_and_fc(void)
{
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    if (!gen_for("tests/gpu/layers-splitk-odd.yaml", 1, &s, &o, &m)) {
        const cg_mkernel *c2 = kernel_of(&m, "c2", "conv2d_igemm"), *r2 = kernel_of(&m, "c2", "splitk_reduce");
        CHECK(c2 && strstr(c2->name, "_z11") && r2 && strstr(r2->name, "_s11_") && strstr(r2->name, "_max2"),
              "c2 at one image: %s then %s, expected a split in 11 parts reduced and pooled", c2 ? c2->name : "none",
              r2 ? r2->name : "none");
        const cg_mkernel *c3 = kernel_of(&m, "c3", "conv2d_igemm"), *r3 = kernel_of(&m, "c3", "splitk_reduce");
        const char *src3 = NULL;
        for (int i = 0; c3 && i < o.nkernels; i++)
            if (!strcmp(o.k[i].kernel, c3->name)) src3 = o.k[i].source;
        CHECK(c3 && strstr(c3->name, "_z9") && r3 && strstr(r3->name, "_s9_") && src3 &&
                  strstr(src3, "const int ns = blockIdx.z == 8 ? 7 : 8;"),
              "c3 at one image: %s then %s, expected a ragged split in 9 parts (8 of 8 slices, the last 7)",
              c3 ? c3->name : "none", r3 ? r3->name : "none");
        cg_gen_free(&o);
    }
    if (!gen_for("bench/specs/zoo-5x5-c64.yaml", 256, &s, &o, &m)) {
        const cg_mkernel *fc = kernel_of(&m, "fc1", NULL);
        CHECK(fc && !strcmp(fc->tpl, "fc_gemv"), "zoo-5x5-c64 fc1 at 256 images: %s, expected fc_gemv",
              fc ? fc->tpl : "none");
        cg_gen_free(&o);
    }
    /* gemv's threads: up to 1024 from two images (17,496 inputs: 4,374 chunks of 4, so 1024
     * threads at 8 images), up to 512 at one image */
    static const struct { int bucket; const char *part; } gemv_threads[] = {{8, "_b8r1t1024"}, {1, "_b1r1t512"}};
    for (size_t i = 0; i < sizeof gemv_threads / sizeof *gemv_threads; i++)
        if (!gen_for("specs/ece408-2018fa.yaml", gemv_threads[i].bucket, &s, &o, &m)) {
            const cg_mkernel *fc = kernel_of(&m, "fc1", NULL);
            CHECK(fc && !strcmp(fc->tpl, "fc_gemv") && strstr(fc->name, gemv_threads[i].part),
                  "ece408-2018fa fc1 at bucket %d: %s, expected fc_gemv %s", gemv_threads[i].bucket,
                  fc ? fc->name : "none", gemv_threads[i].part);
            cg_gen_free(&o);
        }
    if (!gen_for("bench/specs/zoo-mlp.yaml", 256, &s, &o, &m)) {
        const cg_mkernel *fc = kernel_of(&m, "fc2", NULL);
        CHECK(fc && !strcmp(fc->tpl, "fc_vec"), "zoo-mlp fc2 (2048 x 2048) at 256 images: %s, expected fc_vec",
              fc ? fc->tpl : "none");
        cg_gen_free(&o);
    }
}

/* Rules by bucket on sm_90a (as `generate --arch 90` builds): above gemv's buckets a spec's
 * CUDA-core fc strategy gives way to fc_mma where auto would take it (ece408-2017's fc1, the
 * spec's vec, at 256 and 1,024 images), the large batch keeps the spec's vec, and a tensor-core
 * strategy the spec names stands (layers-fc-tc's fc_tc); at 64 images a planes layer of 64
 * blocks keeps planes (planner.SMALL_KEEP_PLANES: zoo-issue3x3's conv3), and zoo-bigk's conv2
 * (24 -> 48, 9x9) takes fft (planner.auto_fft, from 64 images) where at 8 images its few blocks
 * still split on igemm_tc. */
static void bucket_rules(void)
{
    static const struct { const char *spec, *layer, *tpl; int bucket; } want[] = {
        {"bench/specs/zoo-bigk.yaml", "conv2", "conv2d_fft", 64},
        {"bench/specs/zoo-issue3x3.yaml", "conv3", "conv2d_planes", 64},
        {"bench/specs/zoo-bigk.yaml", "conv2", "conv2d_igemm_tc", 8},
        {"specs/ece408-2017.yaml", "fc1", "fc_mma", 256},       {"specs/ece408-2017.yaml", "fc1", "fc_mma", 1024},
        {"specs/ece408-2017.yaml", "fc1", "fc_vec", 0},         {"specs/ece408-2018fa.yaml", "fc1", "fc_mma", 1024},
        {"tests/gpu/layers-fc-tc.yaml", "f2", "fc_tc", 256},
    };
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    gen_sm90a = 1;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (gen_for(want[i].spec, want[i].bucket, &s, &o, &m)) continue;
        const cg_mkernel *k = kernel_of(&m, want[i].layer, NULL);
        CHECK(k && !strcmp(k->tpl, want[i].tpl), "%s %s at bucket %d: %s, expected %s", want[i].spec, want[i].layer,
              want[i].bucket, k ? k->tpl : "none", want[i].tpl);
        cg_gen_free(&o);
    }
    gen_sm90a = 0;
}

/* Why a small-batch layer is not direct, as its header says: past direct's bounds (zoo-awkward's
 * conv4, C = 71), or within them but refused by direct's check (ece408-2018fa's conv2: C = 12,
 * C*K*K = 588, whose unrolled body passes direct's budget). */
static void small_conv_reason(void)
{
    static const struct { const char *spec, *kernel_prefix, *why; } want[] = {
        {"specs/ece408-2018fa.yaml", "conv2d_igemm_c12m24k7",
         "since the network is generated for 1 image and direct's check refuses the layer (the unrolled body makes"},
        {"bench/specs/zoo-awkward.yaml", "conv2d_igemm_c71m144k3",
         "direct is for layers with C <= 16 and C*K*K <= 1024 (C = 71, C*K*K = 639)"},
    };
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (gen_for(want[i].spec, 1, &s, &o, &m)) continue;
        const char *src = source_of(&o, want[i].kernel_prefix);
        CHECK(src && strstr(src, want[i].why), "%s at one image: no kernel %s whose header says \"%s\"", want[i].spec,
              want[i].kernel_prefix, want[i].why);
        cg_gen_free(&o);
    }
}

/* The whole-network kernel's conv phases in units of several outputs along a row
 * (templates/ops/network.lua, conv_tile): ece408-2018fa's conv2 (84 rows of 7 products,
 * 27 columns) in units of 3; zoo-edge's 64 -> 1 1x1 layer on 6x16 (96 outputs, too few
 * units for a quarter of the grid's threads) and ece408-2018fa's conv1 (7 rows) one output
 * a unit. */
static void whole_conv_tiles(void)
{
    static const struct { const char *spec, *layer, *unit; } want[] = {
        {"specs/ece408-2018fa.yaml", "// ---- layer conv2:", "16 lanes a unit of 3 outputs along a row"},
        {"specs/ece408-2018fa.yaml", "// ---- layer conv1:", "lanes a unit of 1 output along a row"},
        {"bench/specs/zoo-edge.yaml", "// ---- layer conv3:", "lanes a unit of 1 output along a row"},
    };
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (gen_for(want[i].spec, 1, &s, &o, &m)) continue;
        const char *src = source_of(&o, "network_b1_");
        const char *at = src ? strstr(src, want[i].layer) : NULL;
        const char *nl = at ? strchr(at, '\n') : NULL;
        const char *unit = nl ? strstr(nl, want[i].unit) : NULL;
        const char *next = nl ? strstr(nl, "// ---- layer") : NULL;
        CHECK(unit && (!next || unit < next), "%s %s in the whole-network kernel at one image: want \"%s\"",
              want[i].spec, want[i].layer, want[i].unit);
        cg_gen_free(&o);
    }
}

/* Weights loaded before the programmatic launch's wait (common.PDL_MARK): on sm_90 the
 * wait follows the loads of weights named here and comes before the first read of the
 * layer's input; fc_gemv prefetches from two images on and in blocks under 1,024 threads
 * (at one image only its bias; ece408-2018fa's fc1 at 8 images has 1,024), the tail its
 * first pass, direct a group staged once. No source keeps the mark; on sm_80 none has
 * the wait. */
static void weights_before_wait(void)
{
    static const struct { const char *spec; int bucket; const char *kernel, *before, *after; int pre; /* wpre[]: 1 wanted, 0 not, -1 either */ } want[] = {
        {"specs/ece408-2017.yaml", 8, "fc_gemv_i7200o500", "wpre[it][r] = ", "reinterpret_cast<const float4*>(in", 1},
        {"specs/ece408-2017.yaml", 1, "fc_gemv_i7200o500", "const float bpre = ", "reinterpret_cast<const float4*>(in", 0},
        {"specs/ece408-2018fa.yaml", 8, "fc_gemv_i17496o160", "const float bpre = ", "reinterpret_cast<const float4*>(in", 0},
        {"specs/ece408-2018sp.yaml", 1, "tail_i140o10", "wpre[r] = ", "__ldg(xr + c)", 1},
        {"specs/ece408-2018sp.yaml", 1, "conv2d_direct_c6m16k5", "ws[i] = w_arg[blockIdx.y * 300 + i]", "= x[", -1},
    };
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (gen_for(want[i].spec, want[i].bucket, &s, &o, &m)) continue;
        const char *src = source_of(&o, want[i].kernel);
        for (int k = 0; k < o.nkernels; k++)
            CHECK(!strstr(o.k[k].source, "@@pdl-wait@@"), "%s: kernel %s keeps the prologue's mark", want[i].spec,
                  o.k[k].kernel);
        const char *before = src ? strstr(src, want[i].before) : NULL;
        const char *wait = src ? strstr(src, "griddepcontrol.wait") : NULL;
        const char *after = src ? strstr(src, want[i].after) : NULL;
        CHECK(before && wait && after && before < wait && wait < after,
              "%s at bucket %d, %s: want \"%s\" before the wait and \"%s\" after it", want[i].spec, want[i].bucket,
              want[i].kernel, want[i].before, want[i].after);
        CHECK(!src || want[i].pre < 0 || (strstr(src, "wpre[") != NULL) == want[i].pre, "%s at bucket %d, %s: weights prefetched: %s",
              want[i].spec, want[i].bucket, want[i].kernel, want[i].pre ? "expected" : "not expected");
        cg_gen_free(&o);
    }
    gen_cc = 80;
    if (!gen_for("specs/ece408-2017.yaml", 8, &s, &o, &m)) {
        for (int k = 0; k < o.nkernels; k++)
            CHECK(!strstr(o.k[k].source, "griddepcontrol") && !strstr(o.k[k].source, "@@pdl-wait@@"),
                  "sm_80: kernel %s has the wait or its mark", o.k[k].kernel);
        cg_gen_free(&o);
    }
    gen_cc = 90;
}

/* The bucket record: only the buckets themselves are accepted. */
static void manifest_bucket(void)
{
    static cg_spec s;
    static cg_gen_output o;
    static cg_manifest m;
    if (gen_for("specs/ece408-2017.yaml", 8, &s, &o, &m)) return;
    char *text = malloc(o.manifest_len + 1);
    memcpy(text, o.manifest, o.manifest_len + 1);
    char *at = strstr(text, "bucket 8\n");
    CHECK(at != NULL, "no 'bucket 8' record");
    if (at) {
        static cg_manifest m2;
        cg_err e = {""};
        at[7] = '3'; /* "bucket 3": no bucket */
        CHECK(cg_manifest_parse(text, o.manifest_len, "m.txt", &m2, &e) != 0, "bucket 3 accepted");
        CHECK_CONTAINS(e.msg, "m.txt:");
        CHECK_CONTAINS(e.msg, "bad bucket");
    }
    free(text);
    cg_gen_free(&o);
}

int main(void)
{
    buckets();
    small_choices();
    odd_splits_and_fc();
    whole_conv_tiles();
    bucket_rules();
    small_conv_reason();
    weights_before_wait();
    manifest_bucket();
    return cg_test_done("batch");
}
