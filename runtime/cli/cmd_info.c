/* cmd_info.c — the info verb: a network's layers as a table (shapes, layer
 * parameters, work per image, weights and the kernels chosen), from a spec
 * (generated here for the default target, its tuning record applied as
 * 'convgen build' applies it) or from a bundle (its own spec and manifest). */
#include "cli.h"
#include "devices.h"
#include "gen.h"
#include "manifest.h"
#include "memplan.h"
#include "net_internal.h"
#include "op.h"
#include "options.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char info_usage[] =
    "usage: convgen info SPEC|NET.cgb [--json] [--tuning FILE | --no-tuning]\n"
    "\n"
    "Print every layer of the network: its input and output shapes (C x H x W per\n"
    "image), its parameters (kernel side, stride, padding, activation, pool), its\n"
    "work (FLOPs per image: 2 per multiply-add), its weight tensors (names and\n"
    "shapes as the weights file holds them) and the kernels that run it (template\n"
    "and parameters). A spec's kernels are generated here for the default target,\n"
    "with its tuning record applied as 'convgen build' applies it; a bundle's are\n"
    "those it carries. Nothing is written.\n"
    "\n"
    "  --json              the same as JSON on stdout\n"
    "  --tuning FILE       the tuning record to apply (default: SPEC's .tuning.yaml if present)\n"
    "  --no-tuning         ignore any tuning record\n"
    "  -h, --help          this text\n";

/* One layer's figures. */
typedef struct {
    char in[48], out[48], detail[160];
    double flops;              /* per image */
    long long wcount, bcount;  /* weight and bias elements (0: none) */
    char wshape[64], bshape[32];
} layer_info;

static void shape_text(char *out, size_t n, int c, int h, int w) { snprintf(out, n, "%dx%dx%d", c, h, w); }

static void describe(const cg_layer *l, layer_info *li)
{
    memset(li, 0, sizeof *li);
    shape_text(li->in, sizeof li->in, l->C, l->H, l->W);
    shape_text(li->out, sizeof li->out, l->OC, l->OH, l->OW);
    if (l->op == CG_OP_CONV) {
        char pool[48] = "none";
        if (l->pool_op == CG_POOL_GLOBAL_AVG && l->pool) snprintf(pool, sizeof pool, "global_avg");
        else if (l->pool)
            snprintf(pool, sizeof pool, "%s%d/%d", cg_pool_name(l), l->pool, l->pool_stride > 0 ? l->pool_stride : l->pool);
        char groups[24] = "";
        if (l->groups > 1) snprintf(groups, sizeof groups, " groups=%d", l->groups);
        snprintf(li->detail, sizeof li->detail, "K=%d stride=%d pad=%d,%d,%d,%d%s act=%s pool=%s bias=%s", l->K,
                 l->stride > 0 ? l->stride : 1, l->pad[0], l->pad[1], l->pad[2], l->pad[3], groups, cg_act_name(l->act),
                 pool, l->bias ? "yes" : "no");
    } else if (l->op == CG_OP_FC) {
        long long in = cg_layer_in_elems(l);
        snprintf(li->detail, sizeof li->detail, "in=%lld out=%d act=%s bias=%s", in, l->out, cg_act_name(l->act),
                 l->bias ? "yes" : "no");
    } else {
        snprintf(li->detail, sizeof li->detail, "over %lld values", cg_layer_in_elems(l));
    }
    /* FLOPs and the weight tensor's shape from the op table */
    const cg_op_desc *d = cg_op_of(l->op);
    li->flops = d && d->flop ? d->flop(l, 1) : 0;
    long long shape[4];
    int nd = d && d->weight_shape ? d->weight_shape(l, shape) : 0;
    if (nd > 0) {
        li->wcount = 1;
        size_t at = 0;
        for (int i = 0; i < nd; i++) {
            li->wcount *= shape[i];
            at += (size_t)snprintf(li->wshape + at, at < sizeof li->wshape ? sizeof li->wshape - at : 0, "%s%lld",
                                   i ? "x" : "", shape[i]);
        }
        if (l->bias) li->bcount = shape[0], snprintf(li->bshape, sizeof li->bshape, "%lld", shape[0]);
    }
}

/* "1.23 M" style: FLOPs and bytes in readable units. */
static const char *human(double v, char *buf, size_t n)
{
    const char *u[] = {"", "K", "M", "G", "T"};
    int i = 0;
    while (v >= 1000 && i < 4) v /= 1000, i++;
    if (i == 0) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.2f%s", v, u[i]);
    return buf;
}

/* Whether kernel k computes layer `name` alongside its own (the layer's tensor is
 * one of its further outputs, out=: ops/tail.lua's softmax); its own layer then in *own. */
static int computes_too(const cg_manifest *m, const cg_mkernel *k, const char *name, const char **own)
{
    for (int j = 0; j < m->nlayers; j++)
        if (!strcmp(m->l[j].name, name))
            for (int o = 1; o < k->nout; o++)
                if (k->outs[o] == m->l[j].out) return *own = k->layer, 1;
    return 0;
}

/* The manifest's kernels of layer `name`: "template name" each, space-separated
 * (a kernel of an earlier layer that computes this one too: "template (name, with LAYER)"). */
static void kernels_of(const cg_manifest *m, const char *name, char *out, size_t n, int json, FILE *f)
{
    size_t at = 0;
    int k = 0;
    out[0] = 0;
    for (int i = 0; i < m->nkernels; i++) {
        const char *own = NULL;
        if (strcmp(m->k[i].layer, name) && !computes_too(m, &m->k[i], name, &own)) continue;
        if (json) {
            fprintf(f, "%s{\"template\": ", k ? ", " : "");
            cg_json_str(f, m->k[i].tpl);
            fprintf(f, ", \"kernel\": ");
            cg_json_str(f, m->k[i].name);
            fprintf(f, ", \"block\": %d, \"shared\": %d", m->k[i].block[0] * m->k[i].block[1] * m->k[i].block[2],
                    m->k[i].shared);
            if (own) {
                fprintf(f, ", \"with\": ");
                cg_json_str(f, own);
            }
            fprintf(f, "}");
        } else if (at < n) {
            at += (size_t)snprintf(out + at, n - at, "%s%s (%s%s%s)", k ? ", " : "", m->k[i].tpl, m->k[i].name,
                                   own ? ", with " : "", own ? own : "");
        }
        k++;
    }
}

/* The spec's own strategy and parameters of a conv layer: "direct block=64 maps_unroll=4". */
static void strategy_text(const cg_layer *l, char *out, size_t n)
{
    size_t at = (size_t)snprintf(out, n, "%s", l->strategy[0] ? l->strategy : "-");
    for (int i = 0; i < l->nparams && at < n; i++)
        at += (size_t)snprintf(out + at, n - at, " %s=%lld", l->params[i].key, l->params[i].value);
}

static void print_text(const cg_spec *s, const cg_manifest *m, int is_bundle, const int *from_record)
{
    char a[32], b[32];
    printf("%s (%s)%s%s\n", s->name, s->path, s->description[0] ? ": " : "", s->description);
    printf("input %dx%dx%d, x = pixel * %.9g + %.9g; data set: %s; weights: ", s->C, s->H, s->W, s->scale, s->offset,
           s->dataset[0] ? s->dataset : "none (--input or --random-input)");
    if (is_bundle) printf("in the bundle\n");
    else if (s->weights[0]) printf("%s\n", s->weights);
    else printf("none, seeded random (seed %llu)\n", s->seed);
    printf("\n%-12s %-8s %-12s %-12s %11s %10s %10s  %s\n", "layer", "op", "input", "output", "FLOPs/image",
           "weights", "bytes(f32)", "parameters");
    double flops = 0;
    long long params = 0;
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        layer_info li;
        describe(l, &li);
        flops += li.flops, params += li.wcount + li.bcount;
        char c[32];
        printf("%-12s %-8s %-12s %-12s %11s %10s %10s  %s\n", l->name, cg_op_name(l->op), li.in, li.out,
               human(li.flops, a, sizeof a), human((double)(li.wcount + li.bcount), c, sizeof c),
               human(4.0 * (double)(li.wcount + li.bcount), b, sizeof b), li.detail);
    }
    printf("total: %s FLOPs per image, %lld parameters (%s bytes as float32)\n", human(flops, a, sizeof a), params,
           human(4.0 * (double)params, b, sizeof b));
    printf("\nweight tensors (safetensors names; fc weights are out x in over the input flattened C,H,W):\n");
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        layer_info li;
        describe(l, &li);
        if (li.wcount) printf("  %s.weight %*s %-16s %lld values\n", l->name, (int)(10 - strlen(l->name)), "", li.wshape,
                              li.wcount);
        if (li.bcount) printf("  %s.bias   %*s %-16s %lld values\n", l->name, (int)(10 - strlen(l->name)), "", li.bshape,
                              li.bcount);
    }
    printf("\nkernels (%s):\n", is_bundle ? "the bundle's" : "generated for the default target, cc 7.5");
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        char ks[2048], st[CG_PARAMS_TEXT + 64];
        kernels_of(m, l->name, ks, sizeof ks, 0, NULL);
        printf("  %-12s %s", l->name, ks[0] ? ks : l->op == CG_OP_CONCAT ? "- (every input written in place)" : "-");
        /* a concat's input written straight into its slice of the concat's tensor (view=) */
        int t = i < m->nlayers && !strcmp(m->l[i].name, l->name) ? m->l[i].out : -1;
        if (t >= 0 && m->t[t].view) printf("; writes its slice of %s", m->t[m->t[t].parent].name);
        /* handed to the next layer channels-last (hwc=) */
        if (t >= 0 && m->t[t].hwc[0]) printf("; stores it channels-last for the next layer");
        if (l->op == CG_OP_CONV) {
            strategy_text(l, st, sizeof st);
            printf("; strategy %s%s", st, from_record && from_record[i] ? " (from the tuning record)" : "");
        }
        printf("\n");
    }
    int wk = cg_manifest_whole(m);
    if (wk >= 0) /* one launch running every layer, instead of the kernels above (--whole) */
        printf("  %-12s %s %s (the whole network in one launch)\n", "*", m->k[wk].tpl, m->k[wk].name);
    /* the record's choices for small buckets, which only kernels generated for them take */
    static const int buckets[] = {1, 8, 64, 256, 1024};
    for (size_t k = 0; k < sizeof buckets / sizeof *buckets; k++) {
        int n = 0;
        for (int i = 0; i < s->nlayers; i++) {
            const cg_bucket_tuned *t = cg_spec_bucket_tuned(s, i, buckets[k]);
            if (!t) continue;
            if (!n++) printf("  tuning record, for kernels generated for bucket %d (--batch):", buckets[k]);
            printf("%s %s (%s)", n > 1 ? "," : "", s->layers[i].name, cg_op_strategy(&s->layers[i], t->tpl));
        }
        if (n) printf("\n");
    }
    /* the tensors' places in a stream set's arena (runtime/formats/memplan.h) */
    cg_memplan *p = malloc(sizeof *p);
    if (p) {
        char mem[128];
        cg_memplan_make(m, 0, 1, p);
        cg_memplan_describe(p, mem, sizeof mem);
        printf("\ndevice memory per image: %s; %d tensors\n", mem, m->ntensors);
        free(p);
    }
}

static void print_json(const cg_spec *s, const cg_manifest *m, int is_bundle, const int *from_record)
{
    FILE *f = stdout;
    fprintf(f, "{\n  \"network\": ");
    cg_json_str(f, s->name);
    fprintf(f, ",\n  \"path\": ");
    cg_json_str(f, s->path);
    fprintf(f, ",\n  \"input\": [%d, %d, %d],\n  \"scale\": %.17g,\n  \"offset\": %.17g,\n  \"bundle\": %s,\n",
            s->C, s->H, s->W, s->scale, s->offset, is_bundle ? "true" : "false");
    fprintf(f, "  \"layers\": [");
    double flops = 0;
    long long params = 0;
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        layer_info li;
        describe(l, &li);
        flops += li.flops, params += li.wcount + li.bcount;
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        cg_json_str(f, l->name);
        fprintf(f, ", \"op\": \"%s\", \"input\": [%d, %d, %d], \"output\": [%d, %d, %d], \"flops\": %.0f, ",
                cg_op_name(l->op), l->C, l->H, l->W, l->OC, l->OH, l->OW, li.flops);
        fprintf(f, "\"parameters\": ");
        cg_json_str(f, li.detail);
        fprintf(f, ", \"weights_bytes\": %lld, \"tensors\": [", 4 * (li.wcount + li.bcount));
        if (li.wcount) {
            fprintf(f, "{\"name\": \"%s.weight\", \"shape\": [", l->name);
            if (l->op == CG_OP_CONV) fprintf(f, "%d, %d, %d, %d]}", l->M, l->C, l->K, l->K);
            else fprintf(f, "%d, %lld]}", l->out, cg_layer_in_elems(l));
        }
        if (li.bcount) fprintf(f, ", {\"name\": \"%s.bias\", \"shape\": [%lld]}", l->name, li.bcount);
        fprintf(f, "], ");
        if (l->op == CG_OP_CONV) {
            fprintf(f, "\"strategy\": ");
            cg_json_str(f, l->strategy);
            fprintf(f, ", \"params\": {");
            for (int p = 0; p < l->nparams; p++) fprintf(f, "%s\"%s\": %lld", p ? ", " : "", l->params[p].key, l->params[p].value);
            fprintf(f, "}, \"tuned\": %s, ", from_record && from_record[i] ? "true" : "false");
        }
        /* the record's choices for small buckets, where it has any for the layer */
        int nb = 0;
        for (int b = 0; b < s->nbucket_tuned; b++) {
            const cg_bucket_tuned *t = &s->bucket_tuned[b];
            if (t->layer != i) continue;
            fprintf(f, "%s\"%d\": {\"strategy\": ", nb++ ? ", " : "\"tuned_buckets\": {", t->bucket);
            cg_json_str(f, cg_op_strategy(&s->layers[i], t->tpl));
            fprintf(f, ", \"params\": ");
            cg_json_str(f, t->params);
            fprintf(f, "}");
        }
        if (nb) fprintf(f, "}, ");
        fprintf(f, "\"kernels\": [");
        char unused[8];
        kernels_of(m, l->name, unused, sizeof unused, 1, f);
        fprintf(f, "]");
        /* written straight into its slice of a concat's tensor (view=) */
        int t = i < m->nlayers && !strcmp(m->l[i].name, l->name) ? m->l[i].out : -1;
        if (t >= 0 && m->t[t].view) {
            fprintf(f, ", \"slice_of\": ");
            cg_json_str(f, m->t[m->t[t].parent].name);
        }
        if (t >= 0 && m->t[t].hwc[0]) fprintf(f, ", \"channels_last\": true");
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"flops\": %.0f,\n  \"parameters\": %lld,\n  \"weights_bytes\": %lld\n}\n", flops, params,
            4 * params);
}

int cg_cmd_info(int argc, char **argv, cg_err *e)
{
    const char *spec = NULL, *json = NULL, *tuning = NULL, *no_tuning = NULL;
    const cg_opt opts[] = {{"--json", 0, &json}, {"--tuning", 1, &tuning}, {"--no-tuning", 0, &no_tuning}};
    int rc = cg_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts, &spec, info_usage, e);
    if (rc == CG_OPTS_HELP) return 0;
    if (!rc && !spec) rc = (cg_fail(e, "info needs a SPEC or NET.cgb"), CG_EXIT_USAGE);
    if (rc) return rc;
    int is_bundle = cg_is_bundle_path(spec);
    if (is_bundle && (tuning || no_tuning))
        return cg_fail(e, "%s: %s: a bundle carries its kernels, compiled and tuned by 'convgen build'", spec,
                       tuning ? "--tuning" : "--no-tuning"), CG_EXIT_USAGE;
    cg_net_bundle nb;
    memset(&nb, 0, sizeof nb);
    cg_spec *s = NULL;
    cg_gen_output *o = NULL;
    cg_manifest *m = calloc(1, sizeof *m);
    int from_record[CG_MAX_LAYERS] = {0};
    const char *mtext = NULL;
    size_t mlen = 0;
    if (!m) return cg_fail(e, "out of memory"), CG_EXIT_IO;
    if (is_bundle) {
        rc = cg_net_bundle_load(spec, &nb, e);
        if (!rc) {
            s = nb.s;
            mtext = nb.b.sec[CG_BUNDLE_MANIFEST].data, mlen = nb.b.sec[CG_BUNDLE_MANIFEST].len;
        }
    } else {
        s = malloc(sizeof *s), o = calloc(1, sizeof *o);
        if (!s || !o) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
        const cg_tune_device any = {NULL, 0, NULL};
        if (!rc && cg_spec_load(spec, s, e)) rc = CG_EXIT_INPUT;
        if (!rc) rc = cg_tune_use(s, tuning, no_tuning != NULL, &any, from_record, e);
        if (!rc && cg_generate(s, "convgen info", o, e)) rc = CG_EXIT_INPUT;
        if (!rc) mtext = o->manifest, mlen = o->manifest_len;
    }
    if (!rc && cg_manifest_parse(mtext, mlen, spec, m, e)) rc = CG_EXIT_INPUT;
    if (!rc) {
        if (json) print_json(s, m, is_bundle, from_record);
        else print_text(s, m, is_bundle, from_record);
    }
    if (is_bundle) {
        cg_net_bundle_free(&nb);
    } else {
        if (o) cg_gen_free(o);
        free(o), free(s);
    }
    free(m);
    return rc;
}
