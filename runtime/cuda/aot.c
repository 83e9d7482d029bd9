/* aot.c — fat binaries: NVRTC per arch, packed by fatbinary (see aot.h). */
#include "aot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fatbin.h"
#include "nvrtc.h"

#define KIB 1024
const cg_arch_info cg_aot_archs[] = {
    {75, 64 * KIB, 64 * KIB, 64 * KIB, 1024, 1},   {80, 163 * KIB, 64 * KIB, 64 * KIB, 1024, 1},
    {86, 99 * KIB, 64 * KIB, 64 * KIB, 1024, 1},   {87, 163 * KIB, 64 * KIB, 64 * KIB, 1024, 0},
    {89, 99 * KIB, 64 * KIB, 64 * KIB, 1024, 1},   {90, 227 * KIB, 64 * KIB, 64 * KIB, 1024, 1},
    {100, 227 * KIB, 64 * KIB, 64 * KIB, 1024, 1}, {103, 227 * KIB, 64 * KIB, 64 * KIB, 1024, 0},
    {110, 227 * KIB, 64 * KIB, 64 * KIB, 1024, 0}, {120, 99 * KIB, 64 * KIB, 64 * KIB, 1024, 1},
    {121, 99 * KIB, 64 * KIB, 64 * KIB, 1024, 0},  {0, 0, 0, 0, 0, 0},
};

const char *cg_aot_default_archs(char *out, size_t n)
{
    size_t used = 0;
    if (n) out[0] = 0;
    for (const cg_arch_info *a = cg_aot_archs; a->arch && used < n; a++) {
        if (!a->by_default) continue;
        int w = snprintf(out + used, n - used, "%s%d", used ? "," : "", a->arch);
        if (w < 0) break;
        used += (size_t)w;
    }
    return out;
}

void cg_aot_target(const int *archs, int n, cg_target *t)
{
    cg_target_default(t);
    t->sm90a = n > 0; /* every cubin built for its arch's "a" features (cg_nvrtc_arch_suffix) */
    for (int i = 0; i < n; i++) {
        const cg_arch_info *a = cg_aot_archs;
        while (a->arch && a->arch != archs[i]) a++;
        int smem = a->arch ? a->max_shared_optin : 48 * KIB;
        if (i == 0 || archs[i] < t->cc) t->cc = archs[i];
        if (cg_nvrtc_arch_suffix(archs[i], 0)[0] != 'a') t->sm90a = 0;
        if (i == 0 || smem < t->max_shared_optin) t->max_shared_optin = smem;
        if (a->arch && a->regs_per_block < t->regs_per_block) t->regs_per_block = a->regs_per_block;
        if (a->arch && a->regs_per_sm < t->regs_per_sm) t->regs_per_sm = a->regs_per_sm;
        if (a->arch && a->max_threads < t->max_threads) t->max_threads = a->max_threads;
    }
}

int cg_aot_parse_archs(const char *s, int *archs, int max, int *n, cg_err *e)
{
    *n = 0;
    if (!s || !*s) return cg_fail(e, "--arch: empty list (expected e.g. 75,80,90)");
    const char *p = s;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) return cg_fail(e, "--arch \"%s\": empty item", s);
        if (strspn(p, "0123456789") < len || len > 3)
            return cg_fail(e, "--arch \"%s\": \"%.*s\" is not an arch number like 80", s,
                           (int)len, p);
        int v = atoi(p);
        if (v < CG_AOT_MIN_ARCH)
            return cg_fail(e, "--arch \"%s\": %d is below sm_%d, the oldest supported", s, v,
                           CG_AOT_MIN_ARCH);
        for (int i = 0; i < *n; i++)
            if (archs[i] == v) return cg_fail(e, "--arch \"%s\": %d given twice", s, v);
        if (*n >= max) return cg_fail(e, "--arch \"%s\": more than %d archs", s, max);
        int i = (*n)++;
        while (i > 0 && archs[i - 1] > v) archs[i] = archs[i - 1], i--;
        archs[i] = v;
        if (!end) return 0;
        p = end + 1;
    }
}

/* Full path of an executable: $CUDA_HOME/bin/NAME, NAME on PATH, then
 * /usr/local/cuda/bin/NAME. 0 when found. */
static int find_tool(const char *name, char *out, size_t n)
{
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(out, n, "%s/bin/%s", home, name);
        if (access(out, X_OK) == 0) return 0;
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len) {
            snprintf(out, n, "%.*s/%s", (int)len, path, name);
            if (access(out, X_OK) == 0) return 0;
        }
        path = end ? end + 1 : NULL;
    }
    snprintf(out, n, "/usr/local/cuda/bin/%s", name);
    return access(out, X_OK) == 0 ? 0 : -1;
}

/* Run argv[0] with argv (no shell), stdout and stderr into out; *code is the
 * exit status (or 128+signal). -1 only when the process could not be run. */
static int run_capture(char *const argv[], cg_buf *out, int *code, cg_err *e)
{
    int fd[2];
    if (pipe(fd)) return cg_fail(e, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return cg_fail(e, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fd[0]);
        if (dup2(fd[1], 1) < 0 || dup2(fd[1], 2) < 0) _exit(126);
        close(fd[1]);
        execv(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    char chunk[4096];
    int oom = 0;
    for (;;) {
        ssize_t r = read(fd[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (!oom && cg_buf_add(out, chunk, (size_t)r)) oom = 1;
    }
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return cg_fail(e, "waitpid: %s", strerror(errno));
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (oom) return cg_fail(e, "%s: out of memory reading its output", argv[0]);
    return 0;
}

/* The combined translation unit: every kernel under a #line, then the build id. */
static int write_unit(const cg_gen_output *o, cg_buf *tu, cg_err *e)
{
    int bad = cg_buf_printf(tu, "// convgen %s: %d kernels in one unit for a fat binary\n",
                            CG_VERSION, o->nkernels);
    for (int i = 0; i < o->nkernels && !bad; i++) {
        const cg_gen_kernel *k = &o->k[i];
        if (!k->source) return cg_fail(e, "kernel %s has no source", k->kernel);
        bad |= cg_buf_puts(tu, "#line 1 \"");
        for (const char *c = k->file; *c && !bad; c++) /* escape for a C string */
            bad |= (*c == '"' || *c == '\\') ? cg_buf_printf(tu, "\\%c", *c)
                                             : cg_buf_add(tu, c, 1);
        bad |= cg_buf_puts(tu, "\"\n");
        bad |= cg_buf_add(tu, k->source, k->source_len);
        if (k->source_len && k->source[k->source_len - 1] != '\n') bad |= cg_buf_puts(tu, "\n");
    }
    bad |= cg_buf_printf(tu,
                         "#line 1 \"convgen-build-id\"\n"
                         "extern \"C\" __device__ const char cg_build_id[17] = \"%s\";\n",
                         o->hash);
    return bad ? cg_fail(e, "out of memory") : 0;
}

/* Remove the files in dir (no subfolders are made there) and dir itself. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        char path[4096 + 512];
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* A file a build writes in its working directory: sm_N.cubin, compute_N.ptx,
 * out.fatbin, or a temp file of the first two (cg_write_file_atomic's). */
static int aot_file(const char *name)
{
    if (!strcmp(name, "out.fatbin")) return 1;
    const char *p = !strncmp(name, "sm_", 3) ? name + 3 : !strncmp(name, "compute_", 8) ? name + 8 : NULL;
    size_t n = p ? strspn(p, "0123456789") : 0;
    if (n < 2 || n > 3) return 0;
    const char *ext = name[0] == 's' ? ".cubin" : ".ptx";
    size_t ne = strlen(ext);
    if (strncmp(p + n, ext, ne)) return 0;
    return !p[n + ne] || cg_tmp_owner(name, (size_t)(p + n + ne - name)) > 0;
}

/* The build pid in "convgen-aot-<pid>-XXXXXX" (mkdtemp's six characters); else 0. */
static long aot_dir_owner(const char *name)
{
    if (strncmp(name, "convgen-aot-", 12)) return 0;
    const char *p = name + 12;
    size_t n = strspn(p, "0123456789");
    if (n < 1 || n > 10 || *p == '0' || p[n] != '-' || strlen(p + n + 1) != 6) return 0;
    return strtol(p, NULL, 10);
}

int cg_aot_reclaim(const char *tmpdir)
{
    if (!tmpdir) tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
    int tfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *t = tfd < 0 ? NULL : fdopendir(tfd);
    if (!t) {
        if (tfd >= 0) close(tfd);
        return 0;
    }
    int removed = 0;
    for (struct dirent *de; (de = readdir(t));) {
        if (!cg_pid_gone(aot_dir_owner(de->d_name))) continue;
        /* the directory itself, never a link to one; ours alone */
        int dfd = openat(tfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        DIR *d = dfd < 0 || fstat(dfd, &st) || st.st_uid != geteuid() ? NULL : fdopendir(dfd);
        if (!d) {
            if (dfd >= 0) close(dfd);
            continue;
        }
        for (struct dirent *f; (f = readdir(d));)
            if (aot_file(f->d_name) && !fstatat(dfd, f->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
                unlinkat(dfd, f->d_name, 0);
        closedir(d);
        if (!unlinkat(tfd, de->d_name, AT_REMOVEDIR)) removed++; /* only when nothing else was there */
    }
    closedir(t);
    return removed;
}

/* Every number after "sm_" on each line of cuobjdump's listing, sorted, unique. */
static int parse_listing(const char *text, int *a, int *n)
{
    *n = 0;
    for (const char *p = strstr(text, "sm_"); p; p = strstr(p + 3, "sm_")) {
        int v = atoi(p + 3);
        if (v <= 0) continue;
        int i = 0;
        while (i < *n && a[i] < v) i++;
        if (i < *n && a[i] == v) continue;
        if (*n >= CG_FATBIN_MAX_ARCHS) return -1;
        memmove(a + i + 1, a + i, (size_t)(*n - i) * sizeof *a);
        a[i] = v, (*n)++;
    }
    return 0;
}

static int same_list(const int *a, int na, const int *b, int nb)
{
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* Cross-check our reader with cuobjdump, when it is installed. Appends a line
 * to log saying what was checked. */
static int check_with_cuobjdump(const char *file, const int *sm, int nsm, const int *ptx,
                                int nptx, cg_buf *log, cg_err *e)
{
    char tool[4096];
    if (find_tool("cuobjdump", tool, sizeof tool)) {
        if (log) cg_buf_puts(log, "convgen: cuobjdump not found; fat binary checked by convgen's "
                                  "own reader only\n");
        return 0;
    }
    const char *what[2] = {"--list-elf", "--list-ptx"};
    for (int w = 0; w < 2; w++) {
        char *argv[] = {tool, (char *)what[w], (char *)file, NULL};
        cg_buf out;
        cg_buf_init(&out);
        int code = 0, got[CG_FATBIN_MAX_ARCHS], ngot = 0;
        if (run_capture(argv, &out, &code, e)) {
            cg_buf_free(&out);
            return -1;
        }
        if (code != 0) {
            char first[256];
            cg_log_first_error(out.data ? out.data : "", first, sizeof first);
            cg_buf_free(&out);
            return cg_fail(e, "cuobjdump %s failed (exit %d): %s", what[w], code, first);
        }
        parse_listing(out.data ? out.data : "", got, &ngot);
        cg_buf_free(&out);
        const int *want = w ? ptx : sm;
        int nwant = w ? nptx : nsm;
        if (!same_list(got, ngot, want, nwant)) {
            char a[256], b[256];
            cg_fatbin_describe(w ? NULL : got, w ? 0 : ngot, w ? got : NULL, w ? ngot : 0, a,
                               sizeof a);
            cg_fatbin_describe(sm, nsm, ptx, nptx, b, sizeof b);
            return cg_fail(e,
                           "cuobjdump %s disagrees with convgen's fat binary reader: it lists %s, "
                           "convgen read %s",
                           what[w], a, b);
        }
    }
    if (log) cg_buf_printf(log, "convgen: contents confirmed by %s --list-elf/--list-ptx\n", tool);
    return 0;
}

/* The built file must hold every requested cubin and the newest arch's PTX. */
static int verify(const cg_buf *fb, const char *tmpfile, const char *out_path, const int *archs,
                  int narch, cg_buf *log, cg_err *e)
{
    int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm, nptx;
    cg_err why;
    if (cg_fatbin_list(fb->data, fb->len, sm, &nsm, ptx, &nptx, &why))
        return cg_fail(e, "fatbinary's output for %s is unreadable: %s", out_path, why.msg);
    char have[512], missing[256] = "";
    cg_fatbin_describe(sm, nsm, ptx, nptx, have, sizeof have);
    for (int i = 0; i < narch; i++) {
        int found = 0;
        for (int j = 0; j < nsm; j++) found |= sm[j] == archs[i];
        if (!found)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%ssm_%d",
                     missing[0] ? ", " : "", archs[i]);
    }
    int newest = archs[narch - 1], found = 0;
    for (int j = 0; j < nptx; j++) found |= ptx[j] == newest;
    if (!found)
        snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%sPTX compute_%d",
                 missing[0] ? ", " : "", newest);
    if (missing[0])
        return cg_fail(e, "fatbinary's output for %s lacks %s (it holds %s)", out_path, missing, have);
    return check_with_cuobjdump(tmpfile, sm, nsm, ptx, nptx, log, e);
}

/* One image of the fat binary: the unit through NVRTC, exactly as the JIT
 * compiles (same library, same cg_nvrtc_options), into dir/NAME; its log
 * (ptxas -v for cubins) appended to log. argbuf receives fatbinary's
 * --image3 argument for it. */
static int compile_image(cg_nvrtc *nv, const cg_buf *tu, int arch, int as_ptx, const char *dir,
                         char argbuf[4400], cg_buf *log, cg_err *e)
{
    cg_buf img, clog;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s_%d.%s", dir, as_ptx ? "compute" : "sm", arch,
             as_ptx ? "ptx" : "cubin");
    int rc = cg_nvrtc_compile(nv, tu->data, "all_kernels.cu", arch, as_ptx, &img, &clog, NULL, e);
    if (log && clog.len &&
        (cg_buf_printf(log, "-- %s_%d (NVRTC) --\n", as_ptx ? "compute" : "sm", arch) ||
         cg_buf_add(log, clog.data, clog.len)))
        rc = rc ? rc : cg_fail(e, "out of memory");
    if (!rc) rc = cg_write_file_atomic(path, img.data, img.len, e);
    cg_buf_free(&img), cg_buf_free(&clog);
    snprintf(argbuf, 4400, "--image3=kind=%s,sm=%d%s,file=%s", as_ptx ? "ptx" : "elf", arch,
             cg_nvrtc_arch_suffix(arch, as_ptx), path);
    return rc;
}

/* Every requested arch must be one this NVRTC compiles for. */
static int check_archs(const cg_nvrtc *nv, const int *archs, int narch, cg_err *e)
{
    int n = 0;
    const int *have = cg_nvrtc_archs(nv, &n);
    for (int i = 0; i < narch; i++) {
        int ok = 0;
        for (int j = 0; j < n; j++) ok |= have[j] == archs[i];
        if (!ok)
            return cg_fail(e, "NVRTC %d.%d cannot compile for sm_%d (it knows sm_%d to sm_%d)",
                           cg_nvrtc_version(nv) / 1000, cg_nvrtc_version(nv) % 1000 / 10, archs[i],
                           have[0], have[n - 1]);
    }
    return 0;
}

int cg_aot_build(const cg_gen_output *o, const int *archs, int narch, const char *out_path,
                 cg_buf *log, cg_err *e)
{
    cg_buf fb;
    cg_buf_init(&fb);
    int rc = cg_aot_build_buf(o, archs, narch, out_path, &fb, log, e);
    if (!rc) rc = cg_write_file_atomic(out_path, fb.data, fb.len, e);
    cg_buf_free(&fb);
    return rc;
}

int cg_aot_build_buf(const cg_gen_output *o, const int *archs, int narch, const char *out_path,
                     cg_buf *out, cg_buf *log, cg_err *e)
{
    if (log) cg_buf_init(log);
    if (narch < 1 || narch > CG_AOT_MAX_ARCHS)
        return cg_fail(e, "%s: %d archs requested (1..%d allowed)", out_path, narch,
                       CG_AOT_MAX_ARCHS);
    for (int i = 0; i < narch; i++)
        if (archs[i] < CG_AOT_MIN_ARCH || archs[i] > 999 || (i && archs[i] <= archs[i - 1]))
            return cg_fail(e, "%s: archs must be ascending, unique and >= %d (see "
                              "cg_aot_parse_archs)", out_path, CG_AOT_MIN_ARCH);
    if (o->nkernels < 1) return cg_fail(e, "%s: no kernels to build", out_path);
    if (strlen(o->hash) != 16 || strspn(o->hash, "0123456789abcdef") != 16)
        return cg_fail(e, "%s: build hash \"%s\" is not 16 hex digits", out_path, o->hash);

    char packer[4096];
    if (find_tool("fatbinary", packer, sizeof packer))
        return cg_fail(e, "fatbinary not found ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin): "
                          "install the CUDA toolkit or set CUDA_HOME to build %s",
                       out_path);
    cg_nvrtc *nv;
    if (cg_nvrtc_open(&nv, e)) return -1;
    if (check_archs(nv, archs, narch, e)) {
        cg_nvrtc_close(nv);
        return -1;
    }

    const char *tmp = getenv("TMPDIR");
    char dir[4096], outfile[4200], create[4300];
    cg_aot_reclaim(NULL); /* what killed builds left */
    /* the pid in the name: a later build can tell when this one is gone */
    snprintf(dir, sizeof dir, "%s/convgen-aot-%ld-XXXXXX", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    if (!mkdtemp(dir)) {
        cg_nvrtc_close(nv);
        return cg_fail(e, "mkdtemp %s: %s", dir, strerror(errno));
    }
    snprintf(outfile, sizeof outfile, "%s/out.fatbin", dir);
    snprintf(create, sizeof create, "--create=%s", outfile);

    int rc = -1;
    cg_buf tu, fb, packlog;
    cg_buf_init(&tu), cg_buf_init(&fb), cg_buf_init(&packlog);
    /* fatbinary --create=OUT -64 --image3=kind=elf,sm=75,file=... ... --image3=kind=ptx,... */
    char (*image)[4400] = malloc((CG_AOT_MAX_ARCHS + 1) * sizeof *image);
    char *argv[8 + CG_AOT_MAX_ARCHS + 1];
    int na = 0;
    argv[na++] = packer;
    argv[na++] = create;
    argv[na++] = "-64";
    if (!image) {
        cg_fail(e, "out of memory");
        goto done;
    }
    if (write_unit(o, &tu, e)) goto done;
    /* a cubin per arch and PTX of the newest, each compiled the way the JIT
     * compiles: same compiler, same options, so the same code */
    for (int i = 0; i <= narch; i++) {
        int a = archs[i < narch ? i : narch - 1], as_ptx = i == narch;
        if (compile_image(nv, &tu, a, as_ptx, dir, image[i], log, e)) {
            char m[CG_ERR_MAX];
            snprintf(m, sizeof m, "%s", e->msg);
            cg_fail(e, "building %s: %s", out_path, m);
            goto done;
        }
        argv[na++] = image[i];
    }
    argv[na] = NULL;
    int code = 0;
    if (run_capture(argv, &packlog, &code, e)) goto done;
    if (code != 0) {
        char first[512];
        cg_log_first_error(packlog.data ? packlog.data : "", first, sizeof first);
        cg_fail(e, "fatbinary failed (exit %d) building %s: %s", code, out_path, first);
        goto done;
    }
    if (cg_read_file(outfile, &fb, e)) goto done;
    if (verify(&fb, outfile, out_path, archs, narch, log, e)) goto done;
    if (cg_buf_add(out, fb.data, fb.len)) {
        cg_fail(e, "%s: out of memory", out_path);
        goto done;
    }
    rc = 0;
done:
    cg_buf_free(&tu), cg_buf_free(&fb), cg_buf_free(&packlog);
    free(image);
    cg_nvrtc_close(nv);
    remove_tree(dir);
    return rc;
}
