/* util.c — error buffer, growable strings, hashing, file helpers. */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* What a path is, in words, for "not a regular file" messages. */
static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

int cg_open_regular(const char *path, size_t max, int *fd_out, size_t *size, cg_err *e)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return cg_fail(e, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        int err = errno;
        close(fd);
        return cg_fail(e, "%s: cannot stat: %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cg_fail(e, "%s: is %s, not a regular file", path, file_kind(st.st_mode));
    }
    if ((unsigned long long)st.st_size > (unsigned long long)max) {
        close(fd);
        return cg_fail(e, "%s: %lld bytes, more than the %zu this file may hold", path,
                       (long long)st.st_size, max);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *fd_out = fd;
    *size = (size_t)st.st_size;
    return 0;
}

int cg_read_file_max(const char *path, size_t max, cg_buf *out, cg_err *e)
{
    cg_buf_init(out);
    int fd;
    size_t size;
    if (cg_open_regular(path, max, &fd, &size, e)) return -1;
    /* the file may change while it is read: never past max */
    (void)size;
    if (cg_buf_add(out, "", 0)) goto oom;
    for (;;) {
        char chunk[65536];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            close(fd), cg_buf_free(out);
            return cg_fail(e, "%s: read error: %s", path, strerror(err));
        }
        if (n == 0) break;
        if (out->len + (size_t)n > max) {
            close(fd), cg_buf_free(out);
            return cg_fail(e, "%s: grew past the %zu bytes this file may hold while read", path,
                           max);
        }
        if (cg_buf_add(out, chunk, (size_t)n)) goto oom;
    }
    close(fd);
    return 0;
oom:
    close(fd), cg_buf_free(out);
    return cg_fail(e, "%s: out of memory", path);
}

int cg_read_file(const char *path, cg_buf *out, cg_err *e)
{
    return cg_read_file_max(path, CG_READ_MAX, out, e);
}

int cg_check_output_file(const char *path, cg_err *e)
{
    struct stat st;
    if (!*path) return cg_fail(e, "empty output path");
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return cg_fail(e, "%s: is %s; convgen writes regular files only", path,
                       file_kind(st.st_mode));
    size_t len = strlen(path);
    char *dir = malloc(len + 2);
    if (!dir) return cg_fail(e, "%s: out of memory", path);
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int rc = 0;
    if (stat(dir, &st)) rc = cg_fail(e, "%s: directory %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode)) rc = cg_fail(e, "%s: %s is not a directory", path, dir);
    else if (access(dir, W_OK | X_OK))
        rc = cg_fail(e, "%s: cannot write in %s: %s", path, dir, strerror(errno));
    free(dir);
    return rc;
}

long cg_tmp_owner(const char *name, size_t base_len)
{
    if (strlen(name) <= base_len || strncmp(name + base_len, ".tmp.", 5)) return 0;
    const char *p = name + base_len + 5;
    size_t np = strspn(p, "0123456789");
    if (np < 1 || np > 10 || p[np] != '.' || *p == '0') return 0;
    const char *q = p + np + 1;
    size_t nq = strspn(q, "0123456789");
    if (nq < 1 || nq > 10 || q[nq]) return 0;
    long pid = strtol(p, NULL, 10);
    return pid > 0 && pid <= INT_MAX ? pid : 0;
}

int cg_pid_gone(long pid)
{
    /* ESRCH: no such process; EPERM means it exists under another user */
    return pid > 0 && pid <= INT_MAX && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int cg_reclaim_temps(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    char dir[4096];
    if (!*base || dlen >= sizeof dir) return 0;
    if (!slash) strcpy(dir, ".");
    else if (dlen == 0) strcpy(dir, "/");
    else memcpy(dir, path, dlen), dir[dlen] = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0) close(dfd);
        return 0;
    }
    size_t blen = strlen(base);
    int removed = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, base, blen)) continue;
        struct stat st;
        long pid = cg_tmp_owner(de->d_name, blen);
        /* only what cg_write_file_atomic creates: a regular file of ours, its writer gone */
        if (!pid || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || !cg_pid_gone(pid))
            continue;
        if (unlinkat(dfd, de->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}

int cg_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int cg_write_file_atomic(const char *path, const void *p, size_t n, cg_err *e)
{
    if (cg_check_output_file(path, e)) return -1;
    cg_reclaim_temps(path);
    return cg_write_file_atomic_noreclaim(path, p, n, e);
}

int cg_write_file_atomic_noreclaim(const char *path, const void *p, size_t n, cg_err *e)
{
    if (cg_check_output_file(path, e)) return -1;
    size_t len = strlen(path);
    char *tmp = malloc(len + 48);
    if (!tmp) return cg_fail(e, "%s: out of memory", path);
    /* a fresh temp name, never an existing file or a link planted there */
    static unsigned counter;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        snprintf(tmp, len + 48, "%s.tmp.%ld.%u", path, (long)getpid(), counter++);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        cg_fail(e, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    const char *s = p;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, s, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            cg_fail(e, "%s: write failed: %s", path, strerror(errno));
            close(fd), unlink(tmp), free(tmp);
            return -1;
        }
        s += w, left -= (size_t)w;
    }
    /* checked again just before the rename: what appeared meanwhile is not replaced */
    int bad = close(fd) ? cg_fail(e, "%s: cannot write: %s", path, strerror(errno))
                        : cg_check_output_file(path, e);
    if (!bad && rename(tmp, path)) bad = cg_fail(e, "%s: cannot write: %s", path, strerror(errno));
    if (bad) {
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

double cg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double cg_median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1], v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cg_batch_bucket(long long n)
{
    static const int buckets[] = {1, 8, 64, 256, 1024};
    if (n <= 0) return 0;
    for (size_t i = 0; i < sizeof buckets / sizeof buckets[0]; i++)
        if (n <= buckets[i]) return buckets[i];
    return 0;
}
