/* nvrtc.c — NVRTC through dlopen, compile options, ptxas log parsing. */
#include "nvrtc.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NVRTC ABI we use, declared here rather than taken from CUDA's <nvrtc.h>
 * (whose name this file's header shares): results are a C enum, programs an
 * opaque pointer. */
typedef int nvrtc_result; /* NVRTC_SUCCESS = 0 */
typedef struct nvrtc_prog_ *nvrtc_prog;

/* X(field, symbol, return type, parameters): every NVRTC function we call. */
#define NVRTC_FUNCS(X)                                                                          \
    X(version, "nvrtcVersion", nvrtc_result, (int *, int *))                                   \
    X(num_archs, "nvrtcGetNumSupportedArchs", nvrtc_result, (int *))                           \
    X(get_archs, "nvrtcGetSupportedArchs", nvrtc_result, (int *))                              \
    X(create, "nvrtcCreateProgram", nvrtc_result,                                               \
      (nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *)) \
    X(destroy, "nvrtcDestroyProgram", nvrtc_result, (nvrtc_prog *))                             \
    X(compile, "nvrtcCompileProgram", nvrtc_result, (nvrtc_prog, int, const char *const *))    \
    X(log_size, "nvrtcGetProgramLogSize", nvrtc_result, (nvrtc_prog, size_t *))                \
    X(get_log, "nvrtcGetProgramLog", nvrtc_result, (nvrtc_prog, char *))                        \
    X(cubin_size, "nvrtcGetCUBINSize", nvrtc_result, (nvrtc_prog, size_t *))                   \
    X(cubin, "nvrtcGetCUBIN", nvrtc_result, (nvrtc_prog, char *))                               \
    X(ptx_size, "nvrtcGetPTXSize", nvrtc_result, (nvrtc_prog, size_t *))                       \
    X(ptx, "nvrtcGetPTX", nvrtc_result, (nvrtc_prog, char *))                                   \
    X(err_string, "nvrtcGetErrorString", const char *, (nvrtc_result))

struct cg_nvrtc {
    void *lib;
    char path[512]; /* the name dlopen succeeded with */
#define NVRTC_FIELD_(field, sym, ret, args) ret(*field) args;
    NVRTC_FUNCS(NVRTC_FIELD_)
#undef NVRTC_FIELD_
    int major, minor;
    int narchs;
    int archs[CG_NVRTC_MAX_ARCHS];
};

/* dlopen the first NVRTC that loads; remember why the first name failed. */
static void *open_lib(char *path, size_t n, char *why, size_t whyn)
{
    const char *names[] = {"libnvrtc.so.13", "libnvrtc.so"};
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = {home && *home ? home : NULL, "/usr/local/cuda"};
    why[0] = 0;
    for (size_t i = 0; i < 2; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(path, n, "%s", names[i]);
            return h;
        }
        const char *err = dlerror();
        if (!why[0]) snprintf(why, whyn, "%s", err ? err : names[i]);
    }
    for (size_t d = 0; d < 2; d++) {
        if (!dirs[d]) continue;
        for (size_t i = 0; i < 2; i++) {
            snprintf(path, n, "%s/lib64/%s", dirs[d], names[i]);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h) return h;
            dlerror();
        }
    }
    path[0] = 0;
    return NULL;
}

int cg_nvrtc_open(cg_nvrtc **out, cg_err *e)
{
    *out = NULL;
    char why[512];
    cg_nvrtc *nv = calloc(1, sizeof *nv);
    if (!nv) return cg_fail(e, "out of memory");
    nv->lib = open_lib(nv->path, sizeof nv->path, why, sizeof why);
    if (!nv->lib) {
        free(nv);
        return cg_fail(e,
                       "no NVRTC (libnvrtc.so.13 not found: %s; also tried libnvrtc.so and "
                       "$CUDA_HOME/lib64, /usr/local/cuda/lib64)",
                       why);
    }
#define NVRTC_LOAD_(field, sym, ret, args)                                                      \
    {                                                                                           \
        void *p = dlsym(nv->lib, sym);                                                          \
        if (!p) {                                                                               \
            cg_fail(e, "%s lacks %s (NVRTC 11.2 or newer is needed)", nv->path, sym);           \
            goto fail;                                                                          \
        }                                                                                       \
        memcpy(&nv->field, &p, sizeof p);                                                       \
    }
    NVRTC_FUNCS(NVRTC_LOAD_)
#undef NVRTC_LOAD_
    if (nv->version(&nv->major, &nv->minor) != 0) {
        cg_fail(e, "%s: nvrtcVersion failed", nv->path);
        goto fail;
    }
    int n = 0;
    if (nv->num_archs(&n) != 0 || n <= 0 || n > CG_NVRTC_MAX_ARCHS) {
        cg_fail(e, "%s: nvrtcGetNumSupportedArchs failed or gave %d archs", nv->path, n);
        goto fail;
    }
    if (nv->get_archs(nv->archs) != 0) {
        cg_fail(e, "%s: nvrtcGetSupportedArchs failed", nv->path);
        goto fail;
    }
    nv->narchs = n;
    /* Documented as ascending; sort anyway since pick_arch relies on it. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && nv->archs[j - 1] > nv->archs[j]; j--) {
            int t = nv->archs[j];
            nv->archs[j] = nv->archs[j - 1], nv->archs[j - 1] = t;
        }
    *out = nv;
    return 0;
fail:
    dlclose(nv->lib);
    free(nv);
    return -1;
}

/* The library stays loaded (like the driver): NVRTC keeps process-wide state,
 * and unloading it would leave what it allocated unattributable to leak checks. */
void cg_nvrtc_close(cg_nvrtc *nv)
{
    free(nv);
}

int cg_nvrtc_version(const cg_nvrtc *nv) { return nv->major * 1000 + nv->minor * 10; }

const int *cg_nvrtc_archs(const cg_nvrtc *nv, int *n)
{
    *n = nv->narchs;
    return nv->archs;
}

int cg_nvrtc_pick_arch(const cg_nvrtc *nv, int cc, int *arch, int *as_ptx)
{
    int below = -1;
    for (int i = 0; i < nv->narchs; i++) {
        if (nv->archs[i] == cc) {
            *arch = cc, *as_ptx = 0;
            return 0;
        }
        if (nv->archs[i] < cc) below = nv->archs[i];
    }
    if (below < 0) return -1;
    *arch = below, *as_ptx = 1;
    return 0;
}

int cg_nvrtc_check_driver(const cg_nvrtc *nv, int driver_version, int as_ptx, cg_err *e)
{
    int nvv = cg_nvrtc_version(nv);
    int dmaj = driver_version / 1000, dmin = driver_version % 1000 / 10;
    if (dmaj < nv->major || (as_ptx && driver_version < nvv))
        return cg_fail(e,
                       "NVRTC %d.%d (%s) emits %s that CUDA driver %d.%d cannot load: install "
                       "an NVIDIA driver for CUDA %d.%d or newer, or use an NVRTC no newer "
                       "than the driver",
                       nv->major, nv->minor, nv->path, as_ptx ? "PTX" : "cubins", dmaj, dmin,
                       nv->major, as_ptx ? nv->minor : 0);
    return 0;
}

/* Every option that shapes device code, spelled so that NVRTC and nvcc both
 * accept it. All are those compilers' defaults today; written out so that a
 * change of default (or a --use_fast_math slipped into one of them) cannot
 * make a JIT kernel and its fat-binary twin differ. */
static const char *const DEVICE_OPTIONS[] = {
    "-std=c++17",  "--fmad=true",          "--ftz=false", "--prec-div=true",
    "--prec-sqrt=true", "--ptxas-options=-O3",
};
#define NDEVICE_OPTIONS ((int)(sizeof DEVICE_OPTIONS / sizeof *DEVICE_OPTIONS))

const char *cg_nvrtc_arch_suffix(int arch, int as_ptx)
{
    return !as_ptx && arch == 90 ? "a" : "";
}

const char *const *cg_device_options(int *n)
{
    *n = NDEVICE_OPTIONS;
    return DEVICE_OPTIONS;
}

/* Options as an argv-style list; returns how many. Both the compile and the
 * joined string (cache key) come from here, so they cannot drift apart.
 * no_cache adds --no-cache, which does not change the image and so stays out
 * of the joined string: NVRTC 13 keeps its own cache in the driver's compute
 * cache on machines with a GPU, and a hit there skips ptxas, leaving no -v
 * numbers (registers, spills) in the log. convgen has its own cache. */
static int make_options(int arch, int as_ptx, int no_cache, char archopt[64],
                        const char *opts[CG_NVRTC_MAX_OPTS])
{
    int n = 0;
    if (no_cache) opts[n++] = "--no-cache";
    snprintf(archopt, 64, "--gpu-architecture=%s_%d%s", as_ptx ? "compute" : "sm", arch, cg_nvrtc_arch_suffix(arch, as_ptx));
    opts[n++] = archopt;
    /* ptxas runs only for cubins (PTX is finished by the driver); -v makes it
     * report registers and spills. */
    for (int i = 0; i < NDEVICE_OPTIONS; i++)
        if (!as_ptx || strncmp(DEVICE_OPTIONS[i], "--ptxas-options=", 16)) opts[n++] = DEVICE_OPTIONS[i];
    if (!as_ptx) opts[n++] = "--ptxas-options=-v";
    return n;
}

const char *cg_nvrtc_options(int arch, int as_ptx, char *buf, size_t n)
{
    char archopt[64];
    const char *opts[CG_NVRTC_MAX_OPTS];
    int k = make_options(arch, as_ptx, 0, archopt, opts);
    if (!n) return buf;
    buf[0] = 0;
    for (int i = 0; i < k; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", i ? " " : "", opts[i]);
    }
    return buf;
}

void cg_log_first_error(const char *log, char *out, size_t n)
{
    const char *line = NULL, *p = log;
    while (p && *p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!line && len) line = p;
        const char *hit = strstr(p, "error");
        if (hit && hit < p + len) {
            line = p;
            break;
        }
        p = end ? end + 1 : NULL;
    }
    if (!line) {
        snprintf(out, n, "(empty log)");
        return;
    }
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len >= n) len = n - 1;
    memcpy(out, line, len);
    out[len] = 0;
}

/* Copy NVRTC's log into log (if given) and into text for the error line. */
static int fetch_log(cg_nvrtc *nv, nvrtc_prog prog, cg_buf *log, char *first, size_t nfirst)
{
    size_t n = 0;
    first[0] = 0;
    if (nv->log_size(prog, &n) != 0) return -1;
    char *s = malloc(n + 1);
    if (!s) return -1;
    if (n && nv->get_log(prog, s) != 0) {
        free(s);
        return -1;
    }
    s[n] = 0;
    cg_log_first_error(s, first, nfirst);
    int rc = log ? cg_buf_puts(log, s) : 0;
    free(s);
    return rc;
}

static int compile_prog(cg_nvrtc *nv, const char *src, const char *file_name, int as_ptx,
                        const char **opts, int nopts, const char *joined, cg_buf *out,
                        cg_buf *log, cg_err *e);

int cg_nvrtc_compile(cg_nvrtc *nv, const char *src, const char *file_name, int arch, int as_ptx,
                     cg_buf *out, cg_buf *log, cg_nvrtc_stats *st, cg_err *e)
{
    char archopt[64], joined[CG_NVRTC_OPTS_MAX];
    const char *opts[CG_NVRTC_MAX_OPTS];
    int nopts = make_options(arch, as_ptx, nv->major >= 13, archopt, opts);
    cg_nvrtc_options(arch, as_ptx, joined, sizeof joined);
    cg_buf_init(out);
    if (log) cg_buf_init(log);
    if (st) {
        memset(st, 0, sizeof *st);
        snprintf(st->options, sizeof st->options, "%s", joined);
    }

    cg_buf own_log; /* ptxas numbers come from the log even if the caller wants none */
    cg_buf_init(&own_log);
    if (!log) log = &own_log;
    int rc = compile_prog(nv, src, file_name, as_ptx, opts, nopts, joined, out, log, e);
    if (rc == 0 && st) {
        cg_nvrtc_parse_log(log->data ? log->data : "", st);
        if (as_ptx) st->known = 0;
    }
    cg_buf_free(&own_log);
    return rc;
}

/* The NVRTC calls of cg_nvrtc_compile: create, compile, log, image, destroy. */
static int compile_prog(cg_nvrtc *nv, const char *src, const char *file_name, int as_ptx,
                        const char **opts, int nopts, const char *joined, cg_buf *out,
                        cg_buf *log, cg_err *e)
{
    char first[512];
    nvrtc_prog prog = NULL;
    nvrtc_result r = nv->create(&prog, src, file_name, 0, NULL, NULL);
    if (r != 0)
        return cg_fail(e, "%s: nvrtcCreateProgram: %s", file_name, nv->err_string(r));
    r = nv->compile(prog, nopts, opts);
    if (fetch_log(nv, prog, log, first, sizeof first)) {
        nv->destroy(&prog);
        return cg_fail(e, "%s: cannot read the NVRTC log (out of memory?)", file_name);
    }
    if (r != 0) {
        nv->destroy(&prog);
        return cg_fail(e, "%s: NVRTC %d.%d compilation failed (%s): %s: %s", file_name,
                       nv->major, nv->minor, joined, nv->err_string(r), first);
    }
    size_t n = 0;
    r = as_ptx ? nv->ptx_size(prog, &n) : nv->cubin_size(prog, &n);
    char *img = r == 0 ? malloc(n ? n : 1) : NULL;
    if (r == 0 && !img) {
        nv->destroy(&prog);
        return cg_fail(e, "%s: out of memory", file_name);
    }
    if (r == 0) r = as_ptx ? nv->ptx(prog, img) : nv->cubin(prog, img);
    nv->destroy(&prog);
    if (r != 0) {
        free(img);
        return cg_fail(e, "%s: %s: %s", file_name, as_ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN",
                       nv->err_string(r));
    }
    if (as_ptx && n && img[n - 1] == 0) n--; /* cg_buf adds its own NUL */
    int bad = cg_buf_add(out, img, n);
    free(img);
    if (bad) return cg_fail(e, "%s: out of memory", file_name);
    return 0;
}

/* The integer written just before needle in line ("2052 bytes spill stores"),
 * or -1 when needle is absent or has no number in front. */
static long num_before(const char *line, const char *needle)
{
    const char *p = strstr(line, needle);
    if (!p) return -1;
    const char *q = p;
    while (q > line && isdigit((unsigned char)q[-1])) q--;
    if (q == p) return -1;
    return strtol(q, NULL, 10);
}

/* Text between the first pair of single quotes after key, into out. */
static int quoted_after(const char *line, const char *key, char *out, size_t n)
{
    const char *p = strstr(line, key);
    if (!p) return 0;
    p += strlen(key);
    const char *end = strchr(p, '\'');
    if (!end) return 0;
    size_t len = (size_t)(end - p);
    if (len >= n) len = n - 1;
    memcpy(out, p, len);
    out[len] = 0;
    return 1;
}

static long lmax(long a, long b) { return a > b ? a : b; }

/* One line of "ptxas info" output applied to st; cur is the entry function
 * being described (or NULL), props_cur whether the last "Function properties"
 * line was about it rather than a callee. */
static void parse_line(const char *line, cg_nvrtc_stats *st, cg_nvrtc_func_stats **cur,
                       int *props_cur)
{
    char name[128];
    if (quoted_after(line, "Compiling entry function '", name, sizeof name)) {
        *cur = NULL;
        if (st->nfuncs < CG_NVRTC_MAX_FUNCS) {
            cg_nvrtc_func_stats *f = &st->f[st->nfuncs++];
            snprintf(f->name, sizeof f->name, "%s", name);
            f->registers = f->barriers = -1;
            f->stack = f->spill_stores = f->spill_loads = f->smem = -1;
            *cur = f;
        }
        return;
    }
    const char *props = strstr(line, "Function properties for ");
    if (props) {
        props += strlen("Function properties for ");
        size_t len = strcspn(props, " \r");
        *props_cur = *cur && strlen((*cur)->name) == len && !strncmp((*cur)->name, props, len);
        return;
    }
    long stack = num_before(line, " bytes stack frame");
    if (stack >= 0) {
        long ss = num_before(line, " bytes spill stores");
        long sl = num_before(line, " bytes spill loads");
        st->stack = lmax(st->stack, stack);
        st->spill_stores += ss > 0 ? ss : 0;
        st->spill_loads += sl > 0 ? sl : 0;
        if (*props_cur && *cur)
            (*cur)->stack = stack, (*cur)->spill_stores = ss, (*cur)->spill_loads = sl;
        return;
    }
    long regs = num_before(line, " registers");
    if (regs >= 0 && strstr(line, "Used ")) {
        st->registers = (int)lmax(st->registers, regs);
        long smem = num_before(line, " bytes smem");
        st->smem = lmax(st->smem, smem);
        if (*cur) {
            (*cur)->registers = (int)regs;
            (*cur)->barriers = (int)num_before(line, " barriers");
            (*cur)->smem = smem >= 0 ? smem : 0;
        }
        return;
    }
    if (strstr(line, " bytes gmem")) { /* module level: user __constant__ banks */
        for (const char *p = strstr(line, " bytes cmem["); p; p = strstr(p + 1, " bytes cmem[")) {
            const char *q = p;
            while (q > line && isdigit((unsigned char)q[-1])) q--;
            int bank = atoi(p + strlen(" bytes cmem["));
            if (q < p && bank > 0) st->cmem += strtol(q, NULL, 10);
        }
    }
}

void cg_nvrtc_parse_log(const char *log, cg_nvrtc_stats *st)
{
    char keep[CG_NVRTC_OPTS_MAX];
    memcpy(keep, st->options, sizeof keep);
    memset(st, 0, sizeof *st);
    memcpy(st->options, keep, sizeof keep);
    cg_nvrtc_func_stats *cur = NULL;
    int props_cur = 0;
    char line[1024];
    for (const char *p = log; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        /* nvcc's copy of the log drops the prefix of the stack frame line */
        if (strstr(line, "ptxas") || strstr(line, " bytes stack frame")) {
            st->known = 1;
            parse_line(line, st, &cur, &props_cur);
        }
        p = end ? end + 1 : NULL;
    }
}
