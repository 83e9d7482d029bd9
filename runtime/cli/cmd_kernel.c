/* cmd_kernel.c — the kernel verb: one layer's kernel alone, its candidates
 * listed, or generated, checked against the CPU reference and timed. */
#include "aot.h"
#include "cli.h"
#include "gen.h"
#include "harness.h"
#include "op.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kernel_usage[] =
    "usage: convgen kernel SPEC --layer NAME [options]\n"
    "\n"
    "One layer's kernel alone: generated, compiled, checked against the CPU reference on\n"
    "random inputs (output poisoned with NaN), then timed with the L2 flushed before each run.\n"
    "\n"
    "  --layer NAME        the conv or fc layer\n"
    "  --strategy S        the template conv2d_S / fc_S (default: the layer's own)\n"
    "  --params k=v,...    template parameters; those left out are the ones `generate`\n"
    "                      would choose beside them (the spec's when S is the layer's own\n"
    "                      strategy, the rest the first legal configuration, defaults first)\n"
    "  --batch N           images per launch (default 10000); the kernel is generated for N's\n"
    "                      bucket (1, 8, 64, 256, 1024; above 1,024 the large batch's), as a network is\n"
    "  --repeat R          timed launches (default 20); median, spread\n"
    "  --seed S            seed of the random inputs and weights (default 1)\n"
    "  --check-images N    images checked against the CPU reference\n"
    "  --no-cache          compile, bypassing the JIT cache\n"
    "  --list              the layer's legal candidates (no GPU needed)\n"
    "  --arch CC           with --list: the candidates for sm_CC (e.g. 90), whose shared\n"
    "                      memory and tensor cores they may use; default: the conservative\n"
    "                      target `generate` has without --arch (sm_75, 48 KiB)\n"
    "  -h, --help          this text\n";

int cg_kernel_cli_parse(int argc, char **argv, cg_kernel_cli *c, cg_err *e)
{
    memset(c, 0, sizeof *c);
    const char *batch = NULL, *repeat = NULL, *seed = NULL, *check = NULL, *list = NULL, *no_cache = NULL,
               *arch = NULL;
    const cg_opt opts[] = {{"--layer", 1, &c->layer},   {"--strategy", 1, &c->strategy}, {"--params", 1, &c->params},
                           {"--batch", 1, &batch},      {"--repeat", 1, &repeat},        {"--seed", 1, &seed},
                           {"--check-images", 1, &check}, {"--list", 0, &list},          {"--no-cache", 0, &no_cache},
                           {"--arch", 1, &arch}};
    int rc = cg_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts, &c->spec, kernel_usage, e);
    c->batch = 10000, c->repeat = 20, c->seed = 1, c->check_images = 0;
    if (rc == CG_OPTS_HELP) return c->help = 1, 0;
    if (!rc && (!c->spec || !c->layer)) rc = (cg_fail(e, "kernel needs SPEC and --layer NAME"), CG_EXIT_USAGE);
    if (!rc) rc = cg_opt_int("--batch", batch, 1, 1LL << 24, &c->batch, e);
    if (!rc) rc = cg_opt_int("--repeat", repeat, 1, 100000, &c->repeat, e);
    if (!rc) rc = cg_opt_int("--seed", seed, 0, 1LL << 62, &c->seed, e);
    if (!rc) rc = cg_opt_int("--check-images", check, 1, 1LL << 24, &c->check_images, e);
    if (!rc) rc = cg_opt_int("--arch", arch, 30, 999, &c->arch, e);
    c->list = list != NULL, c->no_cache = no_cache != NULL;
    if (!rc && arch && !c->list)
        rc = (cg_fail(e, "--arch goes with --list (a timed kernel is built for the GPU it runs on)"), CG_EXIT_USAGE);
    return rc;
}

/* The template a --strategy names for the layer (conv2d_S or fc_S); "" when
 * none is given (the layer's own). */
static int strategy_template(const cg_spec *s, const cg_layer *l, const char *strategy, char *tpl, size_t n,
                             cg_err *e)
{
    tpl[0] = 0;
    if (!cg_ops[l->op].family)
        return cg_fail(e, "%s: layer '%s' is a %s; kernel serves conv and fc layers", s->path, l->name,
                       cg_op_name(l->op));
    if (!strategy) return 0;
    if (cg_op_template(l, strategy, tpl, n)) return cg_fail(e, "--strategy '%s' is too long", strategy);
    return 0;
}

/* The candidates of one layer as `--list` prints them. */
static void print_candidates(const cg_spec *s, const cg_layer *l, const cg_candidates *c)
{
    printf("%s: layer %s, template %s; parameters %s\n", s->name, l->name, c->tpl, c->names);
    printf("%d candidates: %lld combinations of the declared legal values, %lld refused by the template's check\n",
           c->n, c->total, c->refused);
    if (c->note[0]) printf("note: %s\n", c->note);
    for (int i = 0; i < c->nreasons; i++)
        printf("  refused %lld blaming %s, e.g. %s\n", c->reason[i].count,
               c->reason[i].param[0] ? c->reason[i].param : "no parameter", c->reason[i].example);
    for (int i = 0; i < c->n; i++) printf("%6d  %s\n", i + 1, c->c[i].params);
}

/* What the harness measured, reference -> check -> time. */
static void print_result(const cg_harness_result *r)
{
    const cg_kernel_launch *kl = &r->launch;
    printf("kernel   %s\n", r->k.kernel);
    printf("layer    %s, template %s, params %s\n", r->k.layer, r->k.tpl, kl->params);
    printf("launch   grid (%s, %s, %s) for N images, block (%d, %d, %d), %d B dynamic shared; weights %s, bias %s\n",
           kl->grid[0], kl->grid[1], kl->grid[2], kl->block[0], kl->block[1], kl->block[2], kl->shared, kl->weights,
           kl->bias);
    printf("device   %s, %s; %s in %.1f ms; %d registers, %d B local memory per thread\n", r->device, r->arch,
           r->cache_hit ? "cache hit" : "compiled", r->compile_ms, r->registers, r->local_bytes);
    if (r->cache_note[0]) printf("cache    %s\n", r->cache_note);
    printf("check    %lld of %lld images against the CPU reference: rel L2 %.3g, max abs %.3g, %lld unwritten: %s\n",
           r->checked_images, r->batch, r->diff.rel_l2, r->diff.max_abs, r->diff.nonfinite,
           r->diff.ok ? "ok" : "WRONG");
    if (!r->diff.ok) return;
    printf("time     batch %lld, %d runs, L2 flushed before each (%.0f MiB written)\n", r->batch, r->t.n,
           r->flush_bytes / 1048576.0);
    printf("         median %.4f ms (min %.4f, max %.4f, IQR %.4f-%.4f)\n", r->t.median, r->t.min, r->t.max, r->t.q1,
           r->t.q3);
    printf("         %.3f GFLOP, %.2f TFLOP/s\n", r->gflop, r->tflops);
}

/* convgen kernel SPEC --layer NAME [--strategy S] [--params k=v,...] [--batch N]
 *                [--repeat R] [--seed S] [--check-images N] [--no-cache] [--list [--arch CC]] */
int cg_cmd_kernel(int argc, char **argv, cg_err *e)
{
    cg_kernel_cli c;
    int rc = cg_kernel_cli_parse(argc, argv, &c, e);
    if (rc || c.help) return rc;
    cg_spec *s = malloc(sizeof *s);
    if (!s) return cg_fail(e, "out of memory"), CG_EXIT_IO;
    if (cg_spec_load(c.spec, s, e)) return free(s), CG_EXIT_INPUT;
    int li = -1;
    char names[512] = "", tpl[CG_NAME_MAX + 16];
    for (int i = 0; i < s->nlayers; i++) {
        if (!strcmp(s->layers[i].name, c.layer)) li = i;
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", s->layers[i].name);
    }
    if (li < 0) rc = (cg_fail(e, "%s: no layer '%s' (layers: %s)", c.spec, c.layer, names), CG_EXIT_INPUT);
    if (!rc && strategy_template(s, &s->layers[li], c.strategy, tpl, sizeof tpl, e)) rc = CG_EXIT_INPUT;
    if (!rc && c.list) {
        cg_candidates cs;
        cg_target tg;
        int cc = (int)c.arch;
        if (cc) cg_aot_target(&cc, 1, &tg);
        if (cc ? cg_gen_candidates_for(s, &tg, li, tpl[0] ? tpl : NULL, 0, 0, &cs, e)
               : cg_gen_candidates(s, li, tpl[0] ? tpl : NULL, 0, &cs, e))
            rc = CG_EXIT_INPUT;
        else print_candidates(s, &s->layers[li], &cs), cg_candidates_free(&cs);
    } else if (!rc) {
        cg_harness_opts o = {0, c.batch, c.check_images, 3, (int)c.repeat, (unsigned long long)c.seed, c.no_cache};
        cg_harness_result *r = malloc(sizeof *r);
        if (!r) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
        else rc = cg_harness_run(s, li, tpl[0] ? tpl : NULL, c.params, &o, r, e);
        if (rc == CG_HARNESS_BAD_CONFIG) rc = CG_EXIT_INPUT;
        else if (rc) rc = CG_EXIT_DEVICE;
        if (!rc) print_result(r);
        if (!rc && !r->diff.ok)
            rc = (cg_fail(e, "%s disagrees with the CPU reference (rel L2 %.3g, %lld elements unwritten)", r->k.kernel,
                          r->diff.rel_l2, r->diff.nonfinite), CG_EXIT_DEVICE);
        free(r);
    }
    free(s);
    return rc;
}
