/* cmd_gen.c — the verbs that write files: generate and data. */
#include "cli.h"
#include "data.h"
#include "gen.h"
#include "options.h"
#include "aot.h"
#include "bundle.h"
#include "tune.h"
#include "weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Spec and generated kernels (for target t, NULL: the default) in memory for
 * a verb that writes them out, the tuning record applied unless no_tuning
 * (tuning: its path, NULL for the default one beside the spec; no device
 * check: a fat binary serves many GPUs); on failure returns the exit status
 * with nothing allocated. */
static int load_generate(const char *spec_path, const cg_target *t, const char *tuning, int no_tuning,
                         cg_spec **s, cg_gen_output **o, cg_err *e)
{
    *s = malloc(sizeof **s);
    *o = malloc(sizeof **o);
    if (!*s || !*o) {
        free(*s), free(*o);
        cg_fail(e, "out of memory");
        return CG_EXIT_IO;
    }
    char regen[CG_PATH_MAX + 64];
    cg_regen_command(spec_path, regen, sizeof regen);
    int from_record[CG_MAX_LAYERS];
    const cg_tune_device any = {NULL, 0, t}; /* every device; choices checked against t */
    int rc = cg_spec_load(spec_path, *s, e) ? CG_EXIT_INPUT : 0;
    if (!rc) rc = cg_exit_of(cg_tune_use(*s, tuning, no_tuning, &any, from_record, e));
    if (!rc && cg_generate_for(*s, regen, t, *o, e)) rc = CG_EXIT_INPUT;
    if (!rc && (*o)->note[0]) printf("note: %s\n", (*o)->note);
    if (rc) free(*s), free(*o);
    return rc;
}

static void free_generate(cg_spec *s, cg_gen_output *o)
{
    cg_gen_free(o);
    free(s), free(o);
}

/* --arch items as cg_aot_parse_archs reads them: "sm_90" and "compute_90" -> "90". */
static int arch_digits(const char *text, char *out, size_t cap, cg_err *e)
{
    size_t len = 0;
    for (const char *p = text;;) {
        size_t n = strcspn(p, ",");
        if (!strncmp(p, "sm_", 3) && n > 3) p += 3, n -= 3;
        else if (!strncmp(p, "compute_", 8) && n > 8) p += 8, n -= 8;
        if (len + n + 2 > cap) return cg_fail(e, "--arch \"%s\": too long", text);
        memcpy(out + len, p, n);
        len += n;
        if (!p[n]) break;
        out[len++] = ',';
        p += n + 1;
    }
    out[len] = 0;
    return 0;
}


/* The architectures of --arch LIST (NULL: the default list) and the target
 * every one of them allows; a bad list is a usage error. */
static int arch_target(const char *arch_text, int archs[CG_AOT_MAX_ARCHS], int *narch, cg_target *t, cg_err *e)
{
    char default_archs[128], digits[256];
    if (arch_digits(arch_text ? arch_text : cg_aot_default_archs(default_archs, sizeof default_archs), digits,
                    sizeof digits, e) ||
        cg_aot_parse_archs(digits, archs, CG_AOT_MAX_ARCHS, narch, e))
        return CG_EXIT_USAGE;
    cg_aot_target(archs, *narch, t);
    return 0;
}

#define BATCH_HELP                                                                          \
    "  --batch N          generate for launches of N images: the kernels of the smallest\n"   \
    "                     bucket of 1, 8, 64, 256 and 1024 holding N (small-batch tiles, e.g.\n" \
    "                     fc layers as split reductions); above 1024, the large-batch ones\n"

/* --batch N: the bucket into target t (filled with the default target first
 * when have_target is 0). */
static int batch_target(const char *text, cg_target *t, int have_target, cg_err *e)
{
    long long n = 0;
    int rc = cg_opt_int("--batch", text, 1, 1LL << 31, &n, e);
    if (rc) return rc;
    if (!have_target) cg_target_default(t);
    t->batch = cg_batch_bucket(n);
    return 0;
}

#define SMS_HELP                                                                            \
    "  --sms N            the device's multiprocessors (small-batch splits and tiles are\n"    \
    "                     sized to them, as a JIT run on that GPU sizes them); default: 100\n"

/* --sms N: the multiprocessors of the device the kernels are for, into target t
 * (filled with the default target first when have_target is 0). */
static int sms_target(const char *text, cg_target *t, int have_target, cg_err *e)
{
    long long n = 0;
    int rc = cg_opt_int("--sms", text, 1, 4096, &n, e);
    if (rc) return rc;
    if (!have_target) cg_target_default(t);
    t->sms = (int)n;
    return 0;
}

static const char generate_usage[] =
    "usage: convgen generate SPEC -o DIR [--arch LIST] [--batch N] [--sms N]\n"
    "\n"
    "Write one .cu file per kernel of SPEC and manifest.txt into DIR (created if\n"
    "missing). Kernels DIR's previous manifest named and this output lacks are\n"
    "removed; nothing else in DIR is touched. On any error nothing is written.\n"
    "\n"
    "  -o, --output DIR   the output directory\n"
    "  --arch LIST        generate for what these architectures allow (as build: 90, sm_90\n"
    "                     or compute_90, comma-separated), e.g. the shared memory a JIT\n"
    "                     run on that GPU has; default: a conservative target (48 KiB)\n"
    BATCH_HELP
    SMS_HELP
    "  -h, --help         this text\n";

/* convgen generate SPEC -o DIR */
int cg_cmd_generate(int argc, char **argv, cg_err *e)
{
    const char *spec_path = NULL, *dir = NULL, *arch_text = NULL, *batch_text = NULL, *sms_text = NULL;
    const cg_opt opts[] = {{"-o", 1, &dir}, {"--output", 1, &dir}, {"--arch", 1, &arch_text},
                           {"--batch", 1, &batch_text}, {"--sms", 1, &sms_text}};
    int rc = cg_opts_parse(argc, argv, opts, 5, &spec_path, generate_usage, e);
    if (rc) return rc == CG_OPTS_HELP ? 0 : rc;
    if (!spec_path || !dir) {
        cg_fail(e, "generate needs SPEC and -o DIR");
        return CG_EXIT_USAGE;
    }
    int archs[CG_AOT_MAX_ARCHS], narch = 0;
    cg_target target;
    if (arch_text && (rc = arch_target(arch_text, archs, &narch, &target, e))) return rc;
    if (batch_text && (rc = batch_target(batch_text, &target, arch_text != NULL, e))) return rc;
    if (sms_text && (rc = sms_target(sms_text, &target, arch_text || batch_text, e))) return rc;
    cg_spec *s;
    cg_gen_output *o;
    if ((rc = load_generate(spec_path, arch_text || batch_text || sms_text ? &target : NULL, NULL, 1, &s, &o, e)))
        return rc;
    rc = cg_gen_write(o, dir, e) ? CG_EXIT_IO : 0;
    if (!rc) printf("%s: %d kernels written to %s\n", s->name, o->nkernels, dir);
    free_generate(s, o);
    return rc;
}

static const char data_usage[] =
    "usage: convgen data --resize S -o DIR [--data SRC]\n"
    "\n"
    "Write Fashion-MNIST's training and test sets resized to SxS (the bilinear resize\n"
    "inference uses) into DIR as plain IDX files with the standard names.\n"
    "\n"
    "  --resize S         the side, 1..4096\n"
    "  -o, --output DIR   the output directory\n"
    "  --data SRC         where the original sets are (default " CG_DATA_DIR_DEFAULT ")\n"
    "  -h, --help         this text\n";

/* convgen data --resize S -o DIR [--data SRC] */
int cg_cmd_data(int argc, char **argv, cg_err *e)
{
    const char *pos = NULL, *dir = NULL, *side_text = NULL, *src = NULL;
    const cg_opt opts[] = {{"-o", 1, &dir}, {"--output", 1, &dir}, {"--resize", 1, &side_text},
                           {"--data", 1, &src}};
    int rc = cg_opts_parse(argc, argv, opts, 4, &pos, data_usage, e);
    if (rc) return rc == CG_OPTS_HELP ? 0 : rc;
    long long side = 0;
    if (pos || !dir || !side_text) {
        cg_fail(e, "data needs --resize S and -o DIR");
        return CG_EXIT_USAGE;
    }
    if ((rc = cg_opt_int("--resize", side_text, 1, 4096, &side, e))) return rc;
    /* the resized sets carry the standard names: never over the originals */
    const char *from[] = {src ? src : CG_DATA_DIR_DEFAULT}, *what[] = {"the directory the sets are read from"};
    if ((rc = cg_opt_not_input("-o", dir, from, what, 1, e))) return rc;
    if ((rc = cg_data_write_resized(src, (int)side, dir, e))) return rc == -2 ? CG_EXIT_IO : CG_EXIT_INPUT;
    printf("Fashion-MNIST resized to %lldx%lld written to %s\n", side, side, dir);
    return 0;
}

static const char build_usage[] =
    "usage: convgen build SPEC [--arch LIST] [--batch N] [--sms N] -o NET.fatbin|NET.cgb\n"
    "\n"
    "Compile every kernel of SPEC with NVRTC (the JIT's options) into one fat binary,\n"
    "packed by CUDA's fatbinary: a cubin per architecture plus PTX of the newest,\n"
    "checked afterwards. Needs NVRTC and fatbinary, not a GPU.\n"
    "With -o NET.cgb, one bundle file instead: the launch manifest, that fat binary,\n"
    "the weights (the spec's file, checked, or its seeded random weights) and the\n"
    "spec's text; `convgen run NET.cgb` and cg_net_open_bundle need nothing else.\n"
    "\n"
    "  --arch LIST        comma-separated architectures, each 90, sm_90 or compute_90\n"
    "                     (default 75,80,86,89,90,100,120)\n"
    "  -o, --output FILE  the fat binary or (ending in .cgb) the bundle to write\n"
    BATCH_HELP
    SMS_HELP
    "  --tuning FILE      the tuning record to apply (default: SPEC's .tuning.yaml if present;\n"
    "                     applied whatever device it was made on: a fat binary serves many)\n"
    "  --no-tuning        ignore any tuning record: the spec's and the templates' defaults\n"
    "  -h, --help         this text\n";

/* Whether an output path names a bundle (-o NET.cgb). */
static int is_cgb(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && !strcmp(path + n - 4, ".cgb");
}

/* What a bundle holds besides the fat binary, read and checked before anything
 * is compiled: the weights are the spec's file (checked against the spec) or
 * its seeded random ones, encoded as the file stores them (random ones as F32,
 * so the bundle runs exactly what the spec runs); the spec's text as read. */
static int bundle_inputs(const cg_spec *s, const char *spec_path, const char *out, cg_buf *wbytes,
                         cg_buf *spec_text, cg_err *e)
{
    cg_weights w;
    memset(&w, 0, sizeof w);
    int rc = cg_weights_for_spec(s, &w, e) ? CG_EXIT_INPUT : 0;
    cg_wdtype dt = CG_W_F32;
    for (int i = 0; i < w.n; i++)
        if (i == 0 || w.t[i].dtype != CG_W_F32) dt = w.t[i].dtype; /* F16 models stay F16 */
    if (!rc && cg_weights_encode(out, &w, dt, wbytes, e)) rc = CG_EXIT_IO;
    if (!rc && cg_read_file(spec_path, spec_text, e)) rc = CG_EXIT_INPUT;
    cg_weights_free(&w);
    return rc;
}

/* The error lines of a compiler log (NVRTC, ptxas), without its notes and
 * statistics, to stderr. */
static void print_errors(const cg_buf *log)
{
    for (const char *p = log->data; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *hit = strstr(p, "error");
        if (hit && hit < p + n) fprintf(stderr, "%.*s\n", (int)n, p);
        p = end ? end + 1 : NULL;
    }
}

/* convgen build SPEC --arch 75,80,... -o NET.fatbin|NET.cgb */
int cg_cmd_build(int argc, char **argv, cg_err *e)
{
    const char *spec_path = NULL, *out = NULL, *arch_text = NULL, *tuning = NULL, *no_tuning = NULL,
               *batch_text = NULL, *sms_text = NULL;
    const cg_opt opts[] = {{"-o", 1, &out},            {"--output", 1, &out},       {"--arch", 1, &arch_text},
                           {"--tuning", 1, &tuning}, {"--no-tuning", 0, &no_tuning}, {"--batch", 1, &batch_text},
                           {"--sms", 1, &sms_text}};
    int rc = cg_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts, &spec_path, build_usage, e);
    if (rc) return rc == CG_OPTS_HELP ? 0 : rc;
    if (!spec_path || !out) {
        cg_fail(e, "build needs SPEC and -o NET.fatbin or -o NET.cgb");
        return CG_EXIT_USAGE;
    }
    int archs[CG_AOT_MAX_ARCHS], narch = 0;
    cg_target target; /* what every chosen architecture allows */
    if ((rc = arch_target(arch_text, archs, &narch, &target, e))) return rc;
    if (batch_text && (rc = batch_target(batch_text, &target, 1, e))) return rc;
    if (sms_text && (rc = sms_target(sms_text, &target, 1, e))) return rc;
    if (cg_check_output_file(out, e)) return CG_EXIT_USAGE;
    cg_spec *s;
    cg_gen_output *o;
    if ((rc = load_generate(spec_path, &target, tuning, no_tuning != NULL, &s, &o, e))) return rc;
    /* the output must not replace what the build reads: spec, weights, tuning record */
    char record[CG_PATH_MAX + 32] = "";
    if (!tuning && !no_tuning) cg_tune_default_path(spec_path, record, sizeof record);
    const char *inputs[] = {spec_path, s->weights[0] ? s->weights : NULL, tuning ? tuning : record[0] ? record : NULL};
    const char *what[] = {"the spec", "the spec's weights", "the tuning record"};
    if ((rc = cg_opt_not_input("-o", out, inputs, what, 3, e))) return free_generate(s, o), rc;
    cg_buf log, fat, wbytes, spec_text;
    cg_buf_init(&log), cg_buf_init(&fat), cg_buf_init(&wbytes), cg_buf_init(&spec_text);
    /* every input read and checked before the compiler runs */
    if (is_cgb(out) && (rc = bundle_inputs(s, spec_path, out, &wbytes, &spec_text, e))) {
        cg_buf_free(&wbytes), cg_buf_free(&spec_text);
        free_generate(s, o);
        return rc;
    }
    char list[CG_AOT_MAX_ARCHS * 8] = "";
    for (int i = 0; i < narch; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%ssm_%d", i ? "," : "", archs[i]);
    printf("%s: compiling %d kernels for %s (+ PTX of the newest) with NVRTC...\n", s->name,
           o->nkernels, list);
    fflush(stdout);
    /* the compiler's log only for a failed compile, and only its errors */
    rc = cg_aot_build_buf(o, archs, narch, out, &fat, &log, e) ? CG_EXIT_IO : 0;
    if (rc) print_errors(&log);
    if (!rc && is_cgb(out)) {
        cg_blob sec[CG_BUNDLE_NSECTIONS] = {{o->manifest, o->manifest_len}, {fat.data, fat.len},
                                            {wbytes.data, wbytes.len}, {spec_text.data, spec_text.len}};
        if (cg_bundle_write(out, sec, e)) rc = CG_EXIT_IO;
    } else if (!rc && cg_write_file_atomic(out, fat.data, fat.len, e)) {
        rc = CG_EXIT_IO;
    }
    if (!rc) printf("%s: %d kernels, archs %s (+ PTX of the newest) -> %s%s\n", s->name, o->nkernels, list, out,
                    is_cgb(out) ? " (bundle: manifest, fat binary, weights, spec)" : "");
    cg_buf_free(&log), cg_buf_free(&fat), cg_buf_free(&wbytes), cg_buf_free(&spec_text);
    free_generate(s, o);
    return rc;
}
