/* test_cache.c — the cubin cache: directory choice, keys, round trip, every
 * kind of damaged entry read as a miss and then overwritten, unwritable dirs. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "gen.h"
#include "spec.h"

static char tmp[256];

/* nftw callback: remove what the test made, deepest first. */
static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void key(cg_cache_key *k, const char *src)
{
    cg_cache_key_make(k, src, strlen(src), "--gpu-architecture=sm_90 -std=c++17", "tplhash1",
                      13000, 13000, 90);
}

static void test_dir(void)
{
    char dir[4096];
    cg_err e = {""};
    char want[512];
    setenv("XDG_CACHE_HOME", tmp, 1);
    CHECK(cg_cache_dir(dir, sizeof dir, &e) == 0, "%s", e.msg);
    snprintf(want, sizeof want, "%s/convgen", tmp);
    CHECK(!strcmp(dir, want), "XDG_CACHE_HOME respected: %s", dir);
    setenv("XDG_CACHE_HOME", "relative/path", 1); /* ignored, as the XDG spec says */
    setenv("HOME", "/home/someone", 1);
    CHECK(cg_cache_dir(dir, sizeof dir, &e) == 0 && !strcmp(dir, "/home/someone/.cache/convgen"),
          "HOME fallback: %s", dir);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    CHECK(cg_cache_dir(dir, sizeof dir, &e) != 0, "no variables: error");
    CHECK_CONTAINS(e.msg, "XDG_CACHE_HOME");
    char small[8];
    setenv("HOME", "/a/long/home/directory", 1);
    CHECK(cg_cache_dir(small, sizeof small, &e) != 0, "too long: error");
}

/* Every input of the key changes it; equal inputs give equal keys. */
static void test_key(void)
{
    const char *src = "extern \"C\" __global__ void k() {}";
    cg_cache_key a, b;
    key(&a, src);
    key(&b, src);
    CHECK(!strcmp(a.hex, b.hex) && strlen(a.hex) == 32, "deterministic 32 hex: %s", a.hex);
    CHECK(strspn(a.hex, "0123456789abcdef") == 32, "hex digits");
    CHECK_CONTAINS(a.desc, "convgen " CG_VERSION);
    CHECK_CONTAINS(a.desc, "cc 90");
    CHECK_CONTAINS(a.desc, "options --gpu-architecture=sm_90");
    cg_cache_key v[7];
    cg_cache_key_make(&v[0], "x", 1, "o", "t", 13000, 13000, 90);
    cg_cache_key_make(&v[1], "y", 1, "o", "t", 13000, 13000, 90);
    cg_cache_key_make(&v[2], "x", 1, "p", "t", 13000, 13000, 90);
    cg_cache_key_make(&v[3], "x", 1, "o", "u", 13000, 13000, 90);
    cg_cache_key_make(&v[4], "x", 1, "o", "t", 13010, 13000, 90);
    cg_cache_key_make(&v[5], "x", 1, "o", "t", 13000, 13010, 90);
    cg_cache_key_make(&v[6], "x", 1, "o", "t", 13000, 13000, 89);
    for (int i = 0; i < 7; i++)
        for (int j = i + 1; j < 7; j++)
            CHECK(strcmp(v[i].hex, v[j].hex), "keys %d and %d differ", i, j);
    /* Field boundaries matter: ("ab","c") is not ("a","bc"). */
    cg_cache_key_make(&v[0], "ab", 2, "c", "", 1, 1, 1);
    cg_cache_key_make(&v[1], "a", 1, "bc", "", 1, 1, 1);
    CHECK(strcmp(v[0].hex, v[1].hex), "field boundaries are part of the key");
}

static int write_raw(const char *path, const char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) || w != n ? -1 : 0;
}

/* Damage the stored entry with fn, read: a miss with the expected reason;
 * then put again and read: a hit. */
static void damaged(const char *dir, const cg_cache_key *k, const char *payload, size_t n,
                    void (*fn)(cg_buf *), const char *reason_want)
{
    char path[4096], reason[128];
    cg_buf file, got;
    cg_err e = {""};
    cg_cache_path(dir, k, path, sizeof path);
    CHECK(cg_read_file(path, &file, &e) == 0, "%s", e.msg);
    fn(&file);
    CHECK(write_raw(path, file.data, file.len) == 0, "rewrite %s", path);
    cg_buf_free(&file);
    int rc = cg_cache_get(dir, k, &got, reason);
    CHECK(rc == 0, "damaged entry must miss (%s), got %d", reason_want, rc);
    const char *r = reason;
    CHECK_CONTAINS(r, reason_want);
    cg_buf_free(&got);
    CHECK(cg_cache_put(dir, k, payload, n, &e) == 0, "overwrite: %s", e.msg);
    rc = cg_cache_get(dir, k, &got, reason);
    CHECK(rc == 1 && got.len == n && !memcmp(got.data, payload, n), "hit after overwrite (%s)",
          reason);
    cg_buf_free(&got);
}

static void flip_payload(cg_buf *b) { b->data[b->len - 3] ^= 0x20; }
static void truncate_it(cg_buf *b) { b->len -= 5; }
static void bad_magic(cg_buf *b) { b->data[0] = 'X'; }
static void extra(cg_buf *b) { cg_buf_puts(b, "junk"); }
static void no_header(cg_buf *b) { b->len = 20; }
static void flip_len(cg_buf *b)
{
    char *p = strstr(b->data, "\nlen ");
    if (p) p[5] = p[5] == '9' ? '8' : '9';
}

static void test_round_trip(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/deep/cache/convgen", tmp); /* created on first put */
    cg_cache_key k, other;
    key(&k, "source A");
    key(&other, "source B");
    char payload[300];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (char)(i * 7); /* NULs included */
    cg_buf got;
    char reason[128];
    cg_err e = {""};

    CHECK(cg_cache_get(dir, &k, &got, reason) == 0, "empty cache misses");
    CHECK(!strcmp(reason, "no entry"), "reason: %s", reason);
    CHECK(cg_cache_put(dir, &k, payload, sizeof payload, &e) == 0, "put: %s", e.msg);
    CHECK(cg_cache_get(dir, &k, &got, reason) == 1, "hit: %s", reason);
    CHECK(got.len == sizeof payload && !memcmp(got.data, payload, sizeof payload), "same bytes");
    cg_buf_free(&got);

    char path[4096];
    cg_cache_path(dir, &k, path, sizeof path);
    cg_buf file;
    CHECK(cg_read_file(path, &file, &e) == 0 && !strncmp(file.data, "CGCACHE1\nkey ", 13),
          "entry starts with the readable header");
    cg_buf_free(&file);

    damaged(dir, &k, payload, sizeof payload, flip_payload, "payload hash mismatch");
    damaged(dir, &k, payload, sizeof payload, truncate_it, "truncated");
    damaged(dir, &k, payload, sizeof payload, bad_magic, "bad magic");
    damaged(dir, &k, payload, sizeof payload, extra, "length mismatch");
    damaged(dir, &k, payload, sizeof payload, no_header, "bad header");
    damaged(dir, &k, payload, sizeof payload, flip_len, "");

    /* An entry stored under another key's name: key mismatch. */
    char opath[4096];
    cg_cache_path(dir, &other, opath, sizeof opath);
    CHECK(cg_read_file(path, &file, &e) == 0, "%s", e.msg);
    CHECK(write_raw(opath, file.data, file.len) == 0, "copy");
    cg_buf_free(&file);
    CHECK(cg_cache_get(dir, &other, &got, reason) == 0, "copied entry misses");
    CHECK(!strcmp(reason, "key mismatch"), "reason: %s", reason);
    cg_buf_free(&got);

    /* An empty payload is a valid entry. */
    CHECK(cg_cache_put(dir, &other, "", 0, &e) == 0, "%s", e.msg);
    CHECK(cg_cache_get(dir, &other, &got, reason) == 1 && got.len == 0, "empty payload hit");
    cg_buf_free(&got);
}

/* Peak resident memory so far, in KiB. */
static long peak_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* A large entry file is judged by its header and its size, not read: padded
 * to 300 MB (a sparse file, no disk), or holding as much as its header says
 * but more than CG_CACHE_PAYLOAD_MAX, it is a miss that costs neither the
 * memory nor the time of reading it. */
static void test_large_entry(void)
{
    char dir[512], path[4096], reason[128];
    const char *r = reason;
    snprintf(dir, sizeof dir, "%s/large", tmp);
    cg_cache_key k;
    key(&k, "source L");
    cg_err e = {""};
    cg_buf got;
    const size_t pad = (size_t)300 << 20;
    CHECK(cg_cache_put(dir, &k, "payload", 7, &e) == 0, "put: %s", e.msg);
    cg_cache_path(dir, &k, path, sizeof path);
    CHECK(truncate(path, (off_t)pad) == 0, "pad %s", path);
    long before = peak_kib();
    CHECK(cg_cache_get(dir, &k, &got, reason) == 0, "a padded entry misses");
    CHECK_CONTAINS(r, "length mismatch");
    long grew = peak_kib() - before;
    CHECK(grew < 32 * 1024, "reading a padded entry's header took %ld KiB more", grew);
    cg_buf_free(&got);

    /* as long as its header says, and too long to be a kernel */
    cg_buf h;
    cg_buf_init(&h);
    CHECK(cg_buf_printf(&h, "%s\nkey %s\ndesc %s\nlen %zu\nhash 0123456789abcdef\n", CG_CACHE_MAGIC, k.hex,
                        k.desc, pad) == 0, "header");
    CHECK(write_raw(path, h.data, h.len) == 0 && truncate(path, (off_t)(h.len + pad)) == 0, "write %s", path);
    cg_buf_free(&h);
    before = peak_kib();
    CHECK(cg_cache_get(dir, &k, &got, reason) == 0, "an entry beyond the payload limit misses");
    CHECK_CONTAINS(r, "entry too large");
    grew = peak_kib() - before;
    CHECK(grew < 32 * 1024, "reading an oversized entry's header took %ld KiB more", grew);
    cg_buf_free(&got);
    CHECK(cg_cache_put(dir, &k, "payload", 7, &e) == 0, "overwrite: %s", e.msg);
    CHECK(cg_cache_get(dir, &k, &got, reason) == 1 && got.len == 7, "hit after overwrite (%s)", reason);
    cg_buf_free(&got);
}

/* A cache that cannot be written is a warning, not a failure. */
static void test_unwritable(void)
{
    char file[512], dir[600];
    snprintf(file, sizeof file, "%s/plainfile", tmp);
    CHECK(write_raw(file, "x", 1) == 0, "make file");
    snprintf(dir, sizeof dir, "%s/sub", file); /* a directory inside a file cannot exist */
    cg_cache_key k;
    key(&k, "src");
    cg_err e = {""};
    int rc = cg_cache_put(dir, &k, "abc", 3, &e);
    CHECK(rc == CG_CACHE_UNWRITABLE, "put into impossible dir: %d", rc);
    CHECK_CONTAINS(e.msg, "cache not written");
    CHECK_CONTAINS(e.msg, "continuing without it");
    char reason[128];
    cg_buf got;
    CHECK(cg_cache_get(dir, &k, &got, reason) == 0, "and reads miss");

    /* The entry's own path is taken by a directory: the rename fails. */
    char d2[600], entry[4096];
    snprintf(d2, sizeof d2, "%s/blocked", tmp);
    cg_cache_path(d2, &k, entry, sizeof entry);
    CHECK(cg_mkdirs(entry, &e) == 0, "%s", e.msg);
    rc = cg_cache_put(d2, &k, "abc", 3, &e);
    CHECK(rc == CG_CACHE_UNWRITABLE, "put over a directory: %d (%s)", rc, e.msg);
    CHECK(cg_cache_get(d2, &k, &got, reason) == 0, "reading a directory is a miss (%s)", reason);
    cg_buf_free(&got);
}

/* Copy specs/example-conv.yaml to path; 0 on success. */
static int copy_spec(const char *path)
{
    cg_buf b;
    cg_err e;
    if (cg_read_file("specs/example-conv.yaml", &b, &e)) return -1;
    int rc = write_raw(path, b.data, b.len);
    cg_buf_free(&b);
    return rc;
}

static cg_gen_output gen_a, gen_b; /* large: off the stack */

/* The same layer under two spec files at different paths: the sources differ
 * (their headers name the path) but every kernel's key is the same, and an
 * entry stored under one is a hit for the other. */
static void test_same_layer_two_specs(void)
{
    char pa[700], pb[700], dir[512], da[600], db[600];
    snprintf(da, sizeof da, "%s/one", tmp);
    snprintf(db, sizeof db, "%s/two/deeper", tmp);
    snprintf(pa, sizeof pa, "%s/a.yaml", da);
    snprintf(pb, sizeof pb, "%s/other-name.yaml", db);
    snprintf(dir, sizeof dir, "%s/specs-cache", tmp);
    cg_err e = {""};
    CHECK(cg_mkdirs(da, &e) == 0 && cg_mkdirs(db, &e) == 0, "%s", e.msg);
    CHECK(copy_spec(pa) == 0 && copy_spec(pb) == 0, "copy the example spec");
    cg_spec *sa = malloc(sizeof *sa), *sb = malloc(sizeof *sb);
    if (!sa || !sb || cg_spec_load(pa, sa, &e) || cg_spec_load(pb, sb, &e) ||
        cg_generate(sa, "regen a", &gen_a, &e) || cg_generate(sb, "regen b", &gen_b, &e)) {
        CHECK(0, "generate: %s", e.msg);
        free(sa), free(sb);
        return;
    }
    CHECK(gen_a.nkernels == gen_b.nkernels && gen_a.nkernels > 0, "same kernels");
    for (int i = 0; i < gen_a.nkernels && i < gen_b.nkernels; i++) {
        const cg_gen_kernel *ka = &gen_a.k[i], *kb = &gen_b.k[i];
        CHECK(ka->source_len != kb->source_len || memcmp(ka->source, kb->source, ka->source_len),
              "%s: the headers differ (they name the spec path)", ka->kernel);
        CHECK(strlen(ka->tpl_hash) == 16 && !strcmp(ka->tpl_hash, kb->tpl_hash),
              "%s: template hash '%s'", ka->kernel, ka->tpl_hash);
        char inhdr[64];
        snprintf(inhdr, sizeof inhdr, "hash %s)", ka->tpl_hash);
        CHECK(strstr(ka->source, inhdr) != NULL, "%s: the header's template hash is the one kept",
              ka->kernel);
        cg_cache_key x, y;
        cg_cache_key_kernel(&x, ka, "--gpu-architecture=sm_90", 13000, 13000, 90);
        cg_cache_key_kernel(&y, kb, "--gpu-architecture=sm_90", 13000, 13000, 90);
        CHECK(!strcmp(x.hex, y.hex) && !strcmp(x.desc, y.desc), "%s: one key for both specs",
              ka->kernel);
        CHECK_CONTAINS(x.desc, ka->tpl_hash);
        /* what the template hash stands for is part of the key */
        cg_gen_kernel other = *ka;
        other.tpl_hash[0] = other.tpl_hash[0] == '0' ? '1' : '0';
        cg_cache_key_kernel(&y, &other, "--gpu-architecture=sm_90", 13000, 13000, 90);
        CHECK(strcmp(x.hex, y.hex), "%s: another template hash, another key", ka->kernel);
        /* stored through one spec, found through the other */
        cg_cache_key_kernel(&y, kb, "--gpu-architecture=sm_90", 13000, 13000, 90);
        CHECK(cg_cache_put(dir, &x, ka->kernel, strlen(ka->kernel), &e) == 0, "put: %s", e.msg);
        cg_buf got;
        char reason[128];
        CHECK(cg_cache_get(dir, &y, &got, reason) == 1, "%s: hit through the other spec (%s)",
              ka->kernel, reason);
        cg_buf_free(&got);
    }
    cg_gen_free(&gen_a), cg_gen_free(&gen_b);
    free(sa), free(sb);
}

/* A PID that belonged to a process that has exited. */
static long dead_pid(void)
{
    pid_t p = fork();
    if (p == 0) _exit(0);
    if (p > 0) waitpid(p, NULL, 0);
    return (long)p;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Temp files of killed cache writes are swept when the cache is opened for a
 * JIT; a live writer's temp file and files convgen did not create stay. */
static void test_sweep(void)
{
    char dir[512], dead[700], live[700], other[700], entry[700];
    snprintf(dir, sizeof dir, "%s/sweep", tmp);
    cg_err e = {""};
    CHECK(cg_mkdirs(dir, &e) == 0, "%s", e.msg);
    const char *hex = "0123456789abcdef0123456789abcdef";
    long gone = dead_pid();
    CHECK(gone > 0, "fork");
    /* the names cg_write_file_atomic gives an entry's temp file: KEY.cgc.tmp.PID.N */
    snprintf(dead, sizeof dead, "%s/%s.cgc.tmp.%ld.0", dir, hex, gone);
    snprintf(live, sizeof live, "%s/%s.cgc.tmp.%ld.3", dir, hex, (long)getppid());
    snprintf(other, sizeof other, "%s/notes.txt.tmp.%ld", dir, gone);
    snprintf(entry, sizeof entry, "%s/%s.cgc", dir, hex);
    CHECK(write_raw(dead, "x", 1) == 0 && write_raw(live, "x", 1) == 0 &&
              write_raw(other, "x", 1) == 0 && write_raw(entry, "x", 1) == 0,
          "make files");
    CHECK(cg_cache_sweep(dir) == 1, "one file swept");
    CHECK(!exists(dead), "a dead writer's temp file is gone");
    CHECK(exists(live), "a live process's temp file stays");
    CHECK(exists(other) && exists(entry), "what convgen did not leave stays");
    CHECK(cg_cache_sweep(dir) == 0, "nothing left to sweep");
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none", dir);
    CHECK(cg_cache_sweep(missing) == 0, "a missing directory is fine");
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/cg_test_cache_XXXXXX");
    if (!mkdtemp(tmp)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_large_entry(); /* first, while the peak resident size is small */
    test_dir();
    test_key();
    test_round_trip();
    test_unwritable();
    test_same_layer_two_specs();
    test_sweep();
    if (nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS)) printf("note: could not remove %s\n", tmp);
    return cg_test_done("cache");
}
