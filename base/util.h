/* util.h — small shared pieces: error buffer, growable strings, hashing, files. */
#ifndef CG_UTIL_H
#define CG_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#define CG_VERSION "0.1.0"
#define CG_ERR_MAX 2048

/* Every library function reports failure by returning non-zero and writing one
 * line (no trailing newline) into a cg_err; only main() prints and exits. */
typedef struct {
    char msg[CG_ERR_MAX];
} cg_err;

int cg_fail(cg_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Growable byte string, always NUL-terminated. */
typedef struct {
    char *data;
    size_t len, cap;
} cg_buf;

void cg_buf_init(cg_buf *b);
void cg_buf_free(cg_buf *b);
int cg_buf_add(cg_buf *b, const void *p, size_t n);
int cg_buf_puts(cg_buf *b, const char *s);
int cg_buf_printf(cg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 64-bit FNV-1a; good enough for cache keys and change detection (not security). */
uint64_t cg_hash64(const void *p, size_t n, uint64_t seed);
#define CG_HASH_SEED 0xcbf29ce484222325ULL
void cg_hex64(uint64_t h, char out[17]);

/* Open a regular file for reading, without waiting on a FIFO: directories, FIFOs,
 * devices and files over max bytes are refused with one line naming the file. */
int cg_open_regular(const char *path, size_t max, int *fd, size_t *size, cg_err *e);
/* Whole-file read (binary, NUL-terminated for convenience) of a regular file of at
 * most max bytes; cg_read_file allows CG_READ_MAX. */
#define CG_READ_MAX ((size_t)1 << 30)
int cg_read_file_max(const char *path, size_t max, cg_buf *out, cg_err *e);
int cg_read_file(const char *path, cg_buf *out, cg_err *e);
/* An output path convgen may write: absent or a regular file (not a symbolic
 * link, directory, FIFO or device), in an existing writable directory. Writers
 * call it before long work so that a bad path is reported first. */
int cg_check_output_file(const char *path, cg_err *e);
/* Atomic write: a fresh temp file (O_EXCL, O_NOFOLLOW) in the same directory,
 * "PATH.tmp.<pid>.<n>", then a fsync-free rename; the target must pass
 * cg_check_output_file. Temp files of PATH that killed writers left are
 * removed first (cg_reclaim_temps). */
int cg_write_file_atomic(const char *path, const void *p, size_t n, cg_err *e);
/* The same without looking for killed writers' temp files: for a directory
 * of many files that sweeps them itself, once (the JIT cache). */
int cg_write_file_atomic_noreclaim(const char *path, const void *p, size_t n, cg_err *e);
/* The writer's pid when name is "<its first base_len bytes>.tmp.<pid>.<n>",
 * the temp name cg_write_file_atomic gives a file of that base name; else 0. */
long cg_tmp_owner(const char *name, size_t base_len);
/* True when pid is no live process on this machine (never this process). */
int cg_pid_gone(long pid);
/* Remove PATH's temp files ("PATH.tmp.<pid>.<n>": regular files of this
 * user whose writer is no longer alive); nothing else is touched. Returns
 * how many were removed. */
int cg_reclaim_temps(const char *path);
/* True when a and b both exist and are one file (same device and inode). */
int cg_same_file(const char *a, const char *b);
/* mkdir -p */
int cg_mkdirs(const char *path, cg_err *e);

/* Overflow-checked size arithmetic: return 0 on success, -1 on overflow. */
int cg_mul_size(size_t a, size_t b, size_t *out);

/* Milliseconds on the monotonic clock (for differences only). */
double cg_now_ms(void);
/* The median of v[0..n) (n >= 1; v sorted in place, an insertion sort: short lists). */
double cg_median(double *v, int n);

/* The batch bucket kernels are generated for to serve launches of n images: the
 * smallest of 1, 8, 64, 256 and 1024 holding n; 0 (the large-batch kernels, tiled
 * for 10,000 images) above 1024 or for n <= 0. */
int cg_batch_bucket(long long n);

#endif
