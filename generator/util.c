/* util.c — error buffer, growable strings, hashing, file helpers. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Format one error line; always returns -1 so callers can `return cg_fail(...)`. */
int cg_fail(cg_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        for (char *p = e->msg; *p; p++)
            if (*p == '\n') *p = ' '; /* one line, always */
    }
    return -1;
}

void cg_buf_init(cg_buf *b) { b->data = NULL, b->len = 0, b->cap = 0; }

void cg_buf_free(cg_buf *b)
{
    free(b->data);
    cg_buf_init(b);
}

int cg_buf_add(cg_buf *b, const void *p, size_t n)
{
    if (n > SIZE_MAX - b->len - 1) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2) return -1;
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d) return -1;
        b->data = d, b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

int cg_buf_puts(cg_buf *b, const char *s) { return cg_buf_add(b, s, strlen(s)); }

int cg_buf_printf(cg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    size_t need = (size_t)n;
    char *tmp = malloc(need + 1);
    if (!tmp) return -1;
    va_start(ap, fmt);
    vsnprintf(tmp, need + 1, fmt, ap);
    va_end(ap);
    int rc = cg_buf_add(b, tmp, need);
    free(tmp);
    return rc;
}

uint64_t cg_hash64(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void cg_hex64(uint64_t h, char out[17])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, h >>= 4) out[i] = hex[h & 15];
    out[16] = 0;
}

int cg_read_file(const char *path, cg_buf *out, cg_err *e)
{
    cg_buf_init(out);
    FILE *f = fopen(path, "rb");
    if (!f) return cg_fail(e, "%s: cannot open: %s", path, strerror(errno));
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (cg_buf_add(out, chunk, n)) {
            fclose(f);
            cg_buf_free(out);
            return cg_fail(e, "%s: out of memory", path);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        cg_buf_free(out);
        return cg_fail(e, "%s: read error", path);
    }
    if (!out->data && cg_buf_add(out, "", 0)) return cg_fail(e, "%s: out of memory", path);
    return 0;
}

int cg_write_file_atomic(const char *path, const void *p, size_t n, cg_err *e)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + 32);
    if (!tmp) return cg_fail(e, "%s: out of memory", path);
    snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        cg_fail(e, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    const char *s = p;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, s, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            cg_fail(e, "%s: write failed: %s", tmp, strerror(errno));
            close(fd), unlink(tmp), free(tmp);
            return -1;
        }
        s += w, left -= (size_t)w;
    }
    if (close(fd) || rename(tmp, path)) {
        cg_fail(e, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp), free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

int cg_mkdirs(const char *path, cg_err *e)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf) return cg_fail(e, "%s: path too long", path);
    strcpy(buf, path);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST)
                return cg_fail(e, "%s: cannot create directory: %s", buf, strerror(errno));
            struct stat st;
            if (stat(buf, &st) || !S_ISDIR(st.st_mode))
                return cg_fail(e, "%s: not a directory", buf);
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

int cg_mul_size(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}
