/* cache.c — the on-disk cubin cache (format in cache.h). */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEED2 (CG_HASH_SEED ^ 0x9e3779b97f4a7c15ULL)

int cg_cache_dir(char *out, size_t n, cg_err *e)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int w;
    /* The XDG spec says relative values are to be ignored. */
    if (xdg && xdg[0] == '/')
        w = snprintf(out, n, "%s/convgen", xdg);
    else if (home && home[0])
        w = snprintf(out, n, "%s/.cache/convgen", home);
    else
        return cg_fail(e, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
    if (w < 0 || (size_t)w >= n) return cg_fail(e, "cache directory path too long");
    return 0;
}

/* Feed one field into both hashes, length first, so ("ab","c") != ("a","bc"). */
static void mix(uint64_t h[2], const void *p, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    h[0] = cg_hash64(p, n, cg_hash64(len, 8, h[0]));
    h[1] = cg_hash64(p, n, cg_hash64(len, 8, h[1]));
}

static void mix_int(uint64_t h[2], int v)
{
    char s[32];
    mix(h, s, (size_t)snprintf(s, sizeof s, "%d", v));
}

/* The key over every field; header_lines < 0 leaves it out (cg_cache_key_make). */
static void key_make(cg_cache_key *k, const void *src, size_t src_len, int header_lines,
                     const char *options, const char *tpl_hash, int nvrtc_version,
                     int driver_version, int cc)
{
    uint64_t h[2] = {CG_HASH_SEED, SEED2};
    mix(h, CG_CACHE_MAGIC, strlen(CG_CACHE_MAGIC));
    mix(h, CG_VERSION, strlen(CG_VERSION));
    mix(h, src, src_len);
    if (header_lines >= 0) mix_int(h, header_lines);
    mix(h, options, strlen(options));
    mix(h, tpl_hash, strlen(tpl_hash));
    mix_int(h, nvrtc_version);
    mix_int(h, driver_version);
    mix_int(h, cc);
    cg_hex64(h[0], k->hex);
    cg_hex64(h[1], k->hex + 16);
    char srch[17];
    cg_hex64(cg_hash64(src, src_len, CG_HASH_SEED), srch);
    snprintf(k->desc, sizeof k->desc,
             "convgen %s; nvrtc %d.%d; driver %d.%d; cc %d; template %s; source %s (%zu bytes); "
             "options %s",
             CG_VERSION, nvrtc_version / 1000, nvrtc_version % 1000 / 10, driver_version / 1000,
             driver_version % 1000 / 10, cc, tpl_hash[0] ? tpl_hash : "-", srch, src_len, options);
    for (char *c = k->desc; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' '; /* the header is line-based */
}

void cg_cache_key_make(cg_cache_key *k, const void *src, size_t src_len, const char *options,
                       const char *tpl_hash, int nvrtc_version, int driver_version, int cc)
{
    key_make(k, src, src_len, -1, options, tpl_hash, nvrtc_version, driver_version, cc);
}

void cg_cache_key_kernel(cg_cache_key *k, const cg_gen_kernel *kern, const char *options,
                         int nvrtc_version, int driver_version, int cc)
{
    size_t hl = kern->header_len <= kern->source_len ? kern->header_len : 0;
    int lines = 0;
    for (size_t i = 0; i < hl; i++) lines += kern->source[i] == '\n';
    key_make(k, kern->source + hl, kern->source_len - hl, lines, options, kern->tpl_hash,
             nvrtc_version, driver_version, cc);
}

int cg_cache_path(const char *dir, const cg_cache_key *k, char *out, size_t n)
{
    int w = snprintf(out, n, "%s/%s.cgc", dir, k->hex);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* Take the next header line "PREFIX value" from *p (bounded by end): value
 * into out. 0 on success, -1 when missing, unterminated or too long. */
static int header_line(const char **p, const char *end, const char *prefix, char *out, size_t n)
{
    size_t pl = strlen(prefix);
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl || (size_t)(nl - *p) < pl || memcmp(*p, prefix, pl) != 0) return -1;
    size_t len = (size_t)(nl - *p) - pl;
    if (len >= n) return -1;
    memcpy(out, *p + pl, len);
    out[len] = 0;
    *p = nl + 1;
    return 0;
}

/* An entry's text header is five lines: the magic, the key, the description
 * (under 512 bytes), the payload length and its hash; all of it lies in the
 * first CACHE_HEADER_MAX bytes, which are all a read looks at before it knows
 * how long the payload claims to be. */
#define CACHE_HEADER_MAX 2048

/* Check the header at the start of d (len bytes, the file's first ones)
 * against k; on success where the payload starts, its length and its hash. */
static int check_header(const cg_cache_key *k, const char *d, size_t len, size_t *pay_at,
                        unsigned long long *want, char hash[17], char reason[128])
{
    const char *p = d, *end = d + len;
    char v[600];
    if (header_line(&p, end, CG_CACHE_MAGIC, v, sizeof v) || v[0])
        return snprintf(reason, 128, "bad magic"), 0;
    if (header_line(&p, end, "key ", v, sizeof v))
        return snprintf(reason, 128, "bad header: no key line"), 0;
    if (strcmp(v, k->hex) != 0) return snprintf(reason, 128, "key mismatch"), 0;
    if (header_line(&p, end, "desc ", v, sizeof v))
        return snprintf(reason, 128, "bad header: no desc line"), 0;
    if (strcmp(v, k->desc) != 0) return snprintf(reason, 128, "key mismatch (description)"), 0;
    if (header_line(&p, end, "len ", v, sizeof v) || !v[0] || strspn(v, "0123456789") != strlen(v))
        return snprintf(reason, 128, "bad header: no payload length"), 0;
    errno = 0;
    *want = strtoull(v, NULL, 10);
    if (errno) return snprintf(reason, 128, "bad header: payload length out of range"), 0;
    if (header_line(&p, end, "hash ", v, sizeof v) || strlen(v) != 16)
        return snprintf(reason, 128, "bad header: no payload hash"), 0;
    memcpy(hash, v, 17);
    *pay_at = (size_t)(p - d);
    return 1;
}

/* pread all n bytes at off; -1 on an error or a short read. */
static int read_at(int fd, void *dst, size_t n, size_t off)
{
    char *p = dst;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r, n -= (size_t)r, off += (size_t)r;
    }
    return 0;
}

/* The header first; the payload only once the file's size (fstat) matches
 * the length the header gives, so a damaged or padded entry costs a header's
 * read, and memory follows what the entry says it holds. */
int cg_cache_get(const char *dir, const cg_cache_key *k, cg_buf *payload, char reason[128])
{
    char path[4096];
    cg_buf_init(payload);
    reason[0] = 0;
    if (cg_cache_path(dir, k, path, sizeof path))
        return snprintf(reason, 128, "cache path too long"), 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return snprintf(reason, 128, "no entry"), 0;
        return snprintf(reason, 128, "cannot stat: %s", strerror(errno)), 0;
    }
    int fd;
    size_t size;
    cg_err e;
    if (cg_open_regular(path, SIZE_MAX, &fd, &size, &e)) return snprintf(reason, 128, "cannot read entry"), 0;
    char head[CACHE_HEADER_MAX];
    size_t hlen = size < sizeof head ? size : sizeof head, at = 0;
    unsigned long long want = 0;
    char hash[17];
    int hit = read_at(fd, head, hlen, 0) ? (snprintf(reason, 128, "cannot read entry"), 0)
                                         : check_header(k, head, hlen, &at, &want, hash, reason);
    size_t have = hit ? size - at : 0;
    if (hit && have < want)
        hit = (snprintf(reason, 128, "truncated: %zu of %llu payload bytes", have, want), 0);
    else if (hit && have > want)
        hit = (snprintf(reason, 128, "length mismatch: %zu payload bytes, header says %llu", have, want), 0);
    else if (hit && want > CG_CACHE_PAYLOAD_MAX)
        hit = (snprintf(reason, 128, "entry too large: %llu payload bytes, at most %zu", want,
                        CG_CACHE_PAYLOAD_MAX), 0);
    if (hit) {
        payload->data = malloc(have + 1);
        if (!payload->data) {
            close(fd);
            snprintf(reason, 128, "out of memory");
            return -1;
        }
        payload->cap = have + 1;
    }
    if (hit && read_at(fd, payload->data, have, at)) hit = (snprintf(reason, 128, "cannot read entry"), 0);
    close(fd);
    if (hit) {
        payload->len = have, payload->data[have] = 0;
        char got[17];
        cg_hex64(cg_hash64(payload->data, have, CG_HASH_SEED), got);
        if (strcmp(got, hash) != 0) hit = (snprintf(reason, 128, "payload hash mismatch"), 0);
    }
    if (!hit) cg_buf_free(payload);
    return hit;
}

int cg_cache_put(const char *dir, const cg_cache_key *k, const void *p, size_t n, cg_err *e)
{
    char path[4096], hash[17];
    if (cg_cache_path(dir, k, path, sizeof path)) {
        cg_fail(e, "cache: %s: path too long; not caching", dir);
        return CG_CACHE_UNWRITABLE;
    }
    cg_err why;
    if (cg_mkdirs(dir, &why)) {
        cg_fail(e, "cache not written (%s); continuing without it", why.msg);
        return CG_CACHE_UNWRITABLE;
    }
    cg_hex64(cg_hash64(p, n, CG_HASH_SEED), hash);
    cg_buf b;
    cg_buf_init(&b);
    if (cg_buf_printf(&b, "%s\nkey %s\ndesc %s\nlen %zu\nhash %s\n", CG_CACHE_MAGIC, k->hex,
                      k->desc, n, hash) ||
        cg_buf_add(&b, p, n)) {
        cg_buf_free(&b);
        return cg_fail(e, "cache: out of memory");
    }
    int rc = cg_write_file_atomic_noreclaim(path, b.data, b.len, &why); /* cg_cache_sweep reclaims */
    cg_buf_free(&b);
    if (rc) {
        cg_fail(e, "cache not written (%s); continuing without it", why.msg);
        return CG_CACHE_UNWRITABLE;
    }
    return 0;
}

/* PID of a temp file cg_write_file_atomic leaves when killed while writing an
 * entry, "<32 hex>.cgc.tmp.<pid>.<n>"; 0 for any other name. */
static long tmp_owner(const char *name)
{
    if (strspn(name, "0123456789abcdef") != 32 || strncmp(name + 32, ".cgc.", 5)) return 0;
    return cg_tmp_owner(name, 36);
}

int cg_cache_sweep(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    char path[4096 + 256];
    for (struct dirent *de; (de = readdir(d));) {
        if (!cg_pid_gone(tmp_owner(de->d_name))) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) == 0) removed++;
    }
    closedir(d);
    return removed;
}
