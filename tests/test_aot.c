/* test_aot.c — --arch parsing, the fat binary reader on hand-made and damaged
 * containers, and a real build (NVRTC + fatbinary) of a one-kernel network for sm_75 + sm_90, and the
 * fat binary's code equal to the JIT's. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>

#include "aot.h"
#include "cuda_api.h"
#include "check.h"
#include "fatbin.h"
#include "spec.h"
#include "../runtime/cuda/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void test_parse_archs(void)
{
    int a[CG_AOT_MAX_ARCHS], n = 0;
    cg_err e = {""};
    CHECK(cg_aot_parse_archs("90,75,120", a, CG_AOT_MAX_ARCHS, &n, &e) == 0, "%s", e.msg);
    CHECK(n == 3 && a[0] == 75 && a[1] == 90 && a[2] == 120, "sorted: %d %d %d", a[0], a[1],
          a[2]);
    CHECK(cg_aot_parse_archs("80", a, CG_AOT_MAX_ARCHS, &n, &e) == 0 && n == 1 && a[0] == 80,
          "one arch");
    struct {
        const char *in, *msg;
    } bad[] = {
        {"", "empty list"},           {"75,", "empty item"},       {",75", "empty item"},
        {"75,,80", "empty item"},     {"7a", "\"7a\" is not"},     {"sm_80", "\"sm_80\" is not"},
        {" 75", "\" 75\" is not"},    {"75 ", "\"75 \" is not"},   {"60", "60 is below sm_75"},
        {"75,90,75", "75 given twice"}, {"1000", "\"1000\" is not"}, {"-75", "is not"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        CHECK(cg_aot_parse_archs(bad[i].in, a, CG_AOT_MAX_ARCHS, &n, &e) != 0,
              "\"%s\" must be rejected", bad[i].in);
        CHECK_CONTAINS(e.msg, bad[i].msg);
    }
    CHECK(cg_aot_parse_archs("75,80,90", a, 2, &n, &e) != 0, "more than max");
}

/* Little-endian writers for hand-made containers. */
static void put16(unsigned char *p, unsigned v) { p[0] = v & 255, p[1] = v >> 8 & 255; }
static void put32(unsigned char *p, unsigned long v)
{
    for (int i = 0; i < 4; i++) p[i] = v >> (8 * i) & 255;
}
static void put64(unsigned char *p, unsigned long long v)
{
    for (int i = 0; i < 8; i++) p[i] = v >> (8 * i) & 255;
}

/* Append one entry (64-byte header, payload of n bytes) to b. */
static void add_entry(cg_buf *b, unsigned kind, unsigned arch, size_t n)
{
    unsigned char h[64] = {0};
    put16(h, kind), put16(h + 2, 0x0101), put32(h + 4, 64), put64(h + 8, n);
    put32(h + 28, arch);
    cg_buf_add(b, h, 64);
    for (size_t i = 0; i < n; i++) cg_buf_add(b, "\x5a", 1);
}

/* A container around the entries in body. */
static void wrap(cg_buf *out, const cg_buf *body)
{
    unsigned char h[16];
    put32(h, CG_FATBIN_MAGIC), put16(h + 4, 1), put16(h + 6, 16), put64(h + 8, body->len);
    cg_buf_add(out, h, 16);
    cg_buf_add(out, body->data, body->len);
}

static void test_reader(void)
{
    cg_buf body, fb;
    cg_buf_init(&body), cg_buf_init(&fb);
    add_entry(&body, 2, 90, 100);
    add_entry(&body, 2, 75, 33);
    add_entry(&body, 1, 90, 17);
    add_entry(&body, 2, 90, 8);  /* duplicate arch: listed once */
    add_entry(&body, 8, 80, 12); /* unknown kind: skipped */
    wrap(&fb, &body);
    cg_buf_free(&body);
    add_entry(&body, 1, 120, 5); /* a second container */
    wrap(&fb, &body);
    cg_buf_add(&fb, "\0\0\0\0\0\0\0\0", 8); /* padding */

    int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm = 0, nptx = 0;
    cg_err e = {""};
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) == 0, "%s", e.msg);
    CHECK(nsm == 2 && sm[0] == 75 && sm[1] == 90, "cubins: %d", nsm);
    CHECK(nptx == 2 && ptx[0] == 90 && ptx[1] == 120, "ptx: %d", nptx);
    char d[256];
    cg_fatbin_describe(sm, nsm, ptx, nptx, d, sizeof d);
    CHECK(!strcmp(d, "sm_75, sm_90 and PTX compute_90, compute_120"), "describe: %s", d);
    cg_fatbin_describe(sm, nsm, ptx, 0, d, sizeof d);
    CHECK(!strcmp(d, "sm_75, sm_90 and no PTX"), "describe: %s", d);
    cg_fatbin_describe(sm, 0, ptx, 1, d, sizeof d);
    CHECK(!strcmp(d, "no cubins and PTX compute_90"), "describe: %s", d);

    /* Every prefix shorter than the first container is an error, never a crash
     * or a partial list taken as complete. */
    size_t first = 16 + 4 * 64 + 100 + 33 + 17 + 8 + 12 + 64;
    int errors = 0;
    for (size_t n = 0; n < first; n++)
        errors += cg_fatbin_list(fb.data, n, sm, &nsm, ptx, &nptx, &e) != 0;
    CHECK(errors == (int)first, "all %zu truncations rejected (%d)", first, errors);
    CHECK(cg_fatbin_list(fb.data, first - 1, sm, &nsm, ptx, &nptx, &e) != 0, "truncated");
    CHECK_CONTAINS(e.msg, "truncated");

    unsigned char *p = (unsigned char *)fb.data;
    p[0] ^= 1;
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) != 0, "bad magic");
    CHECK_CONTAINS(e.msg, "not a fat binary: magic");
    p[0] ^= 1;
    put64(p + 16 + 8, ~0ULL); /* first entry claims an absurd payload */
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) != 0, "huge entry");
    CHECK_CONTAINS(e.msg, "claims");
    put64(p + 16 + 8, 100);
    put32(p + 16 + 4, 8); /* entry header too small to hold the arch */
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) != 0, "tiny header");
    CHECK_CONTAINS(e.msg, "bad entry header size");
    put32(p + 16 + 4, 64);
    put16(p + 4, 2);
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) != 0, "version 2");
    CHECK_CONTAINS(e.msg, "unknown container version");
    put16(p + 4, 1);
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) == 0, "restored: %s", e.msg);
    CHECK(cg_fatbin_list("\177ELF\2\1\1\0\0\0\0\0\0\0\0\0\0\0", 18, sm, &nsm, ptx, &nptx, &e) != 0,
          "a cubin is not a fat binary");
    CHECK_CONTAINS(e.msg, "ELF");
    cg_buf_free(&body), cg_buf_free(&fb);
}

static cg_gen_output out1; /* large: keep it off the stack */

static const char *KERNEL =
    "// tiny_add.cu — test kernel\n"
    "__constant__ float tiny_add_bias[4];\n"
    "extern \"C\" __global__ void tiny_add(float *x, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] += tiny_add_bias[i & 3];\n"
    "}";

static const char *BROKEN =
    "extern \"C\" __global__ void tiny_bad(float *x)\n"
    "{\n"
    "    x[0] = no_such_name;\n"
    "}\n";

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

/* With a GPU: the driver loads the file and cg_build_id reads back. */
static void check_on_gpu(const cg_buf *fb)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cg_cu *cu = NULL;
    cg_err e = {""};
    if (!h || cg_cu_open(&cu, 0, &e)) return; /* test_nvrtc checks the messages */
    if (cu->cc != 75 && cu->cc < 90) {
        printf("note: sm_%d device, the test file holds sm_75/sm_90: load not tried\n", cu->cc);
        cg_cu_close(cu);
        return;
    }
    CUmodule mod = NULL;
    CUdeviceptr p = 0;
    size_t size = 0;
    char id[17] = "";
    int bad = CG_CU(&e, cu->cuModuleLoadData(&mod, fb->data)) ||
              CG_CU(&e, cu->cuModuleGetGlobal(&p, &size, mod, "cg_build_id")) ||
              CG_CU(&e, cu->cuMemcpyDtoH(id, p, sizeof id));
    CHECK(!bad, "%s", e.msg);
    CHECK(!bad && size == 17 && !strcmp(id, "0123456789abcdef"), "build id on the GPU: %s", id);
    if (mod) cu->cuModuleUnload(mod);
    cg_cu_close(cu);
}

/* A real build: sm_75 and sm_90 cubins, PTX compute_90, the build id. */
static void test_build(const char *tmp)
{
    char tdir[512], out_path[512], bad_path[512];
    snprintf(tdir, sizeof tdir, "%s/tmpdir", tmp);
    snprintf(out_path, sizeof out_path, "%s/NET.fatbin", tmp);
    snprintf(bad_path, sizeof bad_path, "%s/BAD.fatbin", tmp);
    cg_err e = {""};
    CHECK(cg_mkdirs(tdir, &e) == 0, "%s", e.msg);
    setenv("TMPDIR", tdir, 1); /* to see that the build's temp dir is removed */

    memset(&out1, 0, sizeof out1);
    out1.nkernels = 1;
    snprintf(out1.k[0].kernel, sizeof out1.k[0].kernel, "tiny_add");
    snprintf(out1.k[0].file, sizeof out1.k[0].file, "tiny_add.cu");
    out1.k[0].source = (char *)KERNEL;
    out1.k[0].source_len = strlen(KERNEL);
    snprintf(out1.hash, sizeof out1.hash, "0123456789abcdef");

    int archs[2] = {75, 90};
    cg_buf log;
    int rc = cg_aot_build(&out1, archs, 2, out_path, &log, &e);
    if (rc && strstr(e.msg, "fatbinary not found")) {
        printf("skip: fat binary build: %s\n", e.msg);
        cg_buf_free(&log);
        return;
    }
    CHECK(rc == 0, "build: %s\n%s", e.msg, log.data ? log.data : "");
    CHECK_CONTAINS(log.data, "tiny_add"); /* ptxas -v names the kernel */
    const char *how = log.data ? strstr(log.data, "convgen: ") : NULL;
    CHECK(how && (strstr(how, "confirmed by") || strstr(how, "cuobjdump not found")),
          "log says how the result was checked");
    if (how) printf("note: %s", how);
    cg_buf_free(&log);
    CHECK(dir_entries(tdir) == 0, "temp dir removed (%d entries left)", dir_entries(tdir));

    cg_buf fb;
    CHECK(cg_read_file(out_path, &fb, &e) == 0, "%s", e.msg);
    int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm = 0, nptx = 0;
    CHECK(cg_fatbin_list(fb.data, fb.len, sm, &nsm, ptx, &nptx, &e) == 0, "%s", e.msg);
    CHECK(nsm == 2 && sm[0] == 75 && sm[1] == 90, "cubins sm_75, sm_90 (got %d)", nsm);
    CHECK(nptx == 1 && ptx[0] == 90, "PTX compute_90 (got %d)", nptx);
    int has_id = 0;
    for (size_t i = 0; i + 16 <= fb.len; i++)
        if (!memcmp(fb.data + i, "0123456789abcdef", 16)) has_id = 1;
    CHECK(has_id, "cg_build_id's text is in the cubins");
    check_on_gpu(&fb);
    cg_buf_free(&fb);

    /* A compile error: the message points into the kernel's own file. */
    out1.k[0].source = (char *)BROKEN;
    out1.k[0].source_len = strlen(BROKEN);
    snprintf(out1.k[0].file, sizeof out1.k[0].file, "tiny_bad.cu");
    rc = cg_aot_build(&out1, archs, 2, bad_path, &log, &e);
    CHECK(rc != 0, "broken kernel must fail");
    CHECK_CONTAINS(e.msg, "compilation failed");
    CHECK_CONTAINS(e.msg, "tiny_bad.cu(3)");
    CHECK_CONTAINS(log.data, "no_such_name");
    CHECK(access(bad_path, F_OK) != 0, "no output file on failure");
    CHECK(dir_entries(tdir) == 0, "temp dir removed after failure");
    cg_buf_free(&log);

    int unsorted[2] = {90, 75};
    CHECK(cg_aot_build(&out1, unsorted, 2, bad_path, &log, &e) != 0, "unsorted archs rejected");
    cg_buf_free(&log);
    snprintf(out1.hash, sizeof out1.hash, "nothex");
    CHECK(cg_aot_build(&out1, archs, 2, bad_path, &log, &e) != 0, "bad hash rejected");
    CHECK_CONTAINS(e.msg, "16 hex digits");
    cg_buf_free(&log);
    unsetenv("TMPDIR");
}

static cg_gen_output net; /* large: off the stack */

/* The fat binary's code is the JIT's: every kernel of ece408-2017 built for
 * sm_90 uses the registers and spills NVRTC reports for it alone (nvcc gave
 * fc_vec 81 registers where NVRTC gives 91, and ran it 40% slower). */
static void test_same_code_as_jit(const char *tmp)
{
    cg_spec *s = malloc(sizeof *s);
    cg_nvrtc *nv = NULL;
    cg_err e = {""};
    if (!s || cg_spec_load("specs/ece408-2017.yaml", s, &e) || cg_generate(s, "r", &net, &e) ||
        cg_nvrtc_open(&nv, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s);
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/net.fatbin", tmp);
    int arch = 90;
    cg_buf log;
    int rc = cg_aot_build(&net, &arch, 1, path, &log, &e);
    if (rc && strstr(e.msg, "fatbinary not found")) {
        printf("skip: same code: %s\n", e.msg);
    } else {
        CHECK(rc == 0, "build: %s", e.msg);
        cg_nvrtc_stats aot;
        memset(&aot, 0, sizeof aot);
        const char *sm90 = log.data ? strstr(log.data, "-- sm_90 (NVRTC) --") : NULL;
        CHECK(sm90 != NULL, "the log has the sm_90 compile");
        cg_nvrtc_parse_log(sm90 ? sm90 : "", &aot);
        for (int i = 0; i < net.nkernels; i++) {
            cg_buf img, jlog;
            cg_nvrtc_stats jit;
            CHECK(cg_nvrtc_compile(nv, net.k[i].source, net.k[i].file, 90, 0, &img, &jlog, &jit, &e) == 0,
                  "%s", e.msg);
            int found = 0;
            for (int f = 0; f < aot.nfuncs; f++) {
                if (strcmp(aot.f[f].name, net.k[i].kernel)) continue;
                found = 1;
                CHECK(aot.f[f].registers == jit.f[0].registers && aot.f[f].spill_stores == jit.f[0].spill_stores,
                      "%s: %d registers in the fat binary, %d by JIT", net.k[i].kernel, aot.f[f].registers,
                      jit.f[0].registers);
            }
            CHECK(found, "%s in the fat binary's log", net.k[i].kernel);
            cg_buf_free(&img), cg_buf_free(&jlog);
        }
    }
    cg_buf_free(&log);
    cg_gen_free(&net);
    cg_nvrtc_close(nv);
    free(s);
}

/* A PID that belonged to a process that has exited. */
static long gone_pid(void)
{
    pid_t p = fork();
    if (p == 0) _exit(0);
    if (p > 0) waitpid(p, NULL, 0);
    return (long)p;
}

static int touch(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    return f && fclose(f) == 0 ? 0 : -1;
}

static int present(const char *dir, const char *name)
{
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

/* What killed builds leave in TMPDIR is removed; only that. */
static void test_reclaim(const char *tmp)
{
    char t[512], d[700];
    snprintf(t, sizeof t, "%s/reclaim", tmp);
    cg_err e = {""};
    CHECK(cg_mkdirs(t, &e) == 0, "%s", e.msg);
    long dead = gone_pid(), live = (long)getppid();
    CHECK(dead > 0, "fork");
    char gone1[64], gone2[64], gone3[64], alive[64], old[64], odd[64];
    snprintf(gone1, sizeof gone1, "convgen-aot-%ld-Ab12Cd", dead);  /* a build's files only */
    snprintf(gone2, sizeof gone2, "convgen-aot-%ld-zzzzzz", dead);  /* empty */
    snprintf(gone3, sizeof gone3, "convgen-aot-%ld-keep01", dead);  /* holds a file no build writes */
    snprintf(alive, sizeof alive, "convgen-aot-%ld-Ab12Cd", live); /* its build still running */
    snprintf(old, sizeof old, "convgen-aot-Ab12Cd");                 /* no pid in the name */
    snprintf(odd, sizeof odd, "convgen-aot-%ld-toolong", dead);     /* not mkdtemp's six */
    const char *dirs[] = {gone1, gone2, gone3, alive, old, odd};
    for (int i = 0; i < 6; i++) {
        snprintf(d, sizeof d, "%s/%s", t, dirs[i]);
        CHECK(cg_mkdirs(d, &e) == 0, "%s", e.msg);
        if (i == 1) continue;
        CHECK(touch(d, "sm_90.cubin") == 0 && touch(d, "compute_90.ptx") == 0 && touch(d, "out.fatbin") == 0 &&
                  touch(d, "sm_120.cubin.tmp.4242.0") == 0,
              "files in %s", dirs[i]);
    }
    snprintf(d, sizeof d, "%s/%s", t, gone3);
    CHECK(touch(d, "notes.txt") == 0 && touch(d, "sm_90.cubin.bak") == 0, "foreign files");
    /* a link named like a dead build's directory, to a directory of the user's */
    char mine[600], link[700];
    snprintf(mine, sizeof mine, "%s/mine", t);
    snprintf(link, sizeof link, "%s/convgen-aot-%ld-linked", t, dead);
    CHECK(cg_mkdirs(mine, &e) == 0 && touch(mine, "out.fatbin") == 0 && symlink(mine, link) == 0, "link planted");

    CHECK(cg_aot_reclaim(t) == 2, "two directories of dead builds removed");
    CHECK(!present(t, gone1) && !present(t, gone2), "a dead build's directory is gone, files and all");
    snprintf(d, sizeof d, "%s/%s", t, gone3);
    CHECK(present(t, gone3) && present(d, "notes.txt") && present(d, "sm_90.cubin.bak") &&
              !present(d, "sm_90.cubin") && !present(d, "out.fatbin"),
          "a file no build writes stays, and its directory with it");
    snprintf(d, sizeof d, "%s/%s", t, alive);
    CHECK(present(d, "sm_90.cubin") && present(d, "out.fatbin"), "a live build's directory is untouched");
    snprintf(d, sizeof d, "%s/%s", t, old);
    CHECK(present(d, "out.fatbin"), "a directory without a pid in its name is untouched");
    snprintf(d, sizeof d, "%s/%s", t, odd);
    CHECK(present(d, "out.fatbin"), "a name not of the scheme is untouched");
    CHECK(present(mine, "out.fatbin") && present(t, strrchr(link, '/') + 1), "a link is not followed nor removed");
    CHECK(cg_aot_reclaim(t) == 0, "nothing more to reclaim");
}

int main(void)
{
    char tmp[] = "/tmp/cg_test_aot_XXXXXX";
    if (!mkdtemp(tmp)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_parse_archs();
    test_reclaim(tmp);
    test_reader();
    test_build(tmp);
    test_same_code_as_jit(tmp);
    if (nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS)) printf("note: could not remove %s\n", tmp);
    return cg_test_done("aot");
}
