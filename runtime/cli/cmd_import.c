/* cmd_import.c — convgen import MODEL.onnx -o NET.yaml: an ONNX model as a spec
 * and its weights (runtime/formats/onnx.c does the conversion). */
#include "cli.h"
#include "onnx.h"
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char import_usage[] =
    "usage: convgen import MODEL.onnx -o NET.yaml [--scale X] [--mean a,b,c --std a,b,c] [--force]\n"
    "\n"
    "Convert an ONNX model into a spec (NET.yaml) and its weights (NET.safetensors,\n"
    "beside it, named in the spec's `weights:`). Batch norms stay batchnorm layers;\n"
    "activations, pools and a MatMul's bias are fused into the layer before them.\n"
    "A node convgen cannot run is refused (exit 3) with one line naming it, its op\n"
    "and why; then nothing is written. The input scaling is the user's to set:\n"
    "by default x = pixel / 255 (edit the spec or pass the options below to match\n"
    "how the model was trained).\n"
    "\n"
    "  -o, --output FILE  the spec to write (.yaml or .yml); replaced if it exists\n"
    "  --scale X          input.scale (default 1/255)\n"
    "  --mean LIST        input.mean, one number per channel (comma-separated)\n"
    "  --std LIST         input.std, one number per channel\n"
    "  --force            replace NET.safetensors if it exists (else refused)\n"
    "  -h, --help         this text\n";

/* A finite number, or a usage error naming the option. */
static int parse_num(const char *opt, const char *text, double *out, cg_err *e)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(*out)) return cg_fail(e, "%s %s: not a finite number", opt, text), 1;
    return 0;
}

static int parse_list(const char *opt, const char *text, double *out, int *n, cg_err *e)
{
    char item[64];
    *n = 0;
    for (const char *p = text;;) {
        size_t k = strcspn(p, ",");
        if (*n == CG_INPUT_NORM_MAX) return cg_fail(e, "%s: more than %d numbers", opt, CG_INPUT_NORM_MAX), 1;
        if (k == 0 || k >= sizeof item) return cg_fail(e, "%s %s: not a comma-separated list of numbers", opt, text), 1;
        memcpy(item, p, k), item[k] = 0;
        if (parse_num(opt, item, &out[(*n)++], e)) return 1;
        if (!p[k]) return 0;
        p += k + 1;
    }
}

/* convgen import MODEL -o NET.yaml */
int cg_cmd_import(int argc, char **argv, cg_err *e)
{
    const char *model = NULL, *out = NULL, *scale = NULL, *mean = NULL, *std = NULL, *force = NULL;
    const cg_opt opts[] = {{"-o", 1, &out},       {"--output", 1, &out}, {"--scale", 1, &scale},
                           {"--mean", 1, &mean},  {"--std", 1, &std},    {"--force", 0, &force}};
    int rc = cg_opts_parse(argc, argv, opts, 6, &model, import_usage, e);
    if (rc) return rc == CG_OPTS_HELP ? 0 : rc;
    if (!model || !out) return cg_fail(e, "import needs MODEL.onnx and -o NET.yaml"), CG_EXIT_USAGE;
    cg_onnx_options o;
    memset(&o, 0, sizeof o);
    o.scale = 1.0 / 255;
    if (scale && parse_num("--scale", scale, &o.scale, e)) return CG_EXIT_USAGE;
    if (mean && parse_list("--mean", mean, o.mean, &o.nmean, e)) return CG_EXIT_USAGE;
    if (std && parse_list("--std", std, o.std, &o.nstd, e)) return CG_EXIT_USAGE;
    if (!mean != !std) return cg_fail(e, "--mean and --std go together"), CG_EXIT_USAGE;

    /* NET.yaml -> NET.safetensors beside it, and the network's name from NET */
    size_t n = strlen(out);
    size_t ext = n >= 5 && !strcmp(out + n - 5, ".yaml") ? 5 : n >= 4 && !strcmp(out + n - 4, ".yml") ? 4 : 0;
    if (!ext || n - ext == 0 || out[n - ext - 1] == '/')
        return cg_fail(e, "-o %s: name the spec to write, NET.yaml", out), CG_EXIT_USAGE;
    if (n + 16 > CG_PATH_MAX) return cg_fail(e, "-o %s: path too long", out), CG_EXIT_USAGE;
    char wpath[CG_PATH_MAX];
    snprintf(wpath, sizeof wpath, "%.*s.safetensors", (int)(n - ext), out);
    const char *stem = strrchr(wpath, '/') ? strrchr(wpath, '/') + 1 : wpath;
    char wname[CG_PATH_MAX], net[CG_NAME_MAX];
    snprintf(wname, sizeof wname, "%s", stem);
    size_t k = 0;
    for (const char *p = stem; *p && p < stem + strlen(stem) - strlen(".safetensors") && k + 1 < sizeof net; p++) {
        char ch = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-')) ch = '_';
        if (k == 0 && !((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))) continue;
        net[k++] = ch;
    }
    net[k] = 0;
    if (!k) snprintf(net, sizeof net, "imported");
    o.network = net, o.weights = wname;

    const char *ins[] = {model}, *what[] = {"the model"};
    if ((rc = cg_opt_not_input("-o", out, ins, what, 1, e)) || (rc = cg_opt_not_input("-o", wpath, ins, what, 1, e)))
        return rc;
    struct stat st;
    int wexisted = lstat(wpath, &st) == 0;
    if (wexisted && !force)
        return cg_fail(e, "%s exists (the weights are written beside %s): remove it or pass --force to replace it",
                       wpath, out),
               CG_EXIT_USAGE;
    if (cg_check_output_file(out, e) || cg_check_output_file(wpath, e)) return CG_EXIT_USAGE;

    cg_buf spec, wbytes;
    cg_buf_init(&spec), cg_buf_init(&wbytes);
    int r = cg_onnx_import(model, &o, &spec, &wbytes, e);
    if (r) rc = r == -2 ? CG_EXIT_IO : CG_EXIT_INPUT;
    if (!rc && cg_write_file_atomic(wpath, wbytes.data, wbytes.len, e)) rc = CG_EXIT_IO;
    if (!rc && cg_write_file_atomic(out, spec.data, spec.len, e)) {
        rc = CG_EXIT_IO;
        if (!wexisted) unlink(wpath); /* the weights file this run created, useless without its spec */
    }
    if (!rc) printf("%s: %s and %s written\n", model, out, wpath);
    cg_buf_free(&spec), cg_buf_free(&wbytes);
    return rc;
}
