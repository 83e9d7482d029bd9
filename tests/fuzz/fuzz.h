/* fuzz.h — shared by the libFuzzer harnesses in tests/fuzz (make fuzz): the
 * one-line error check every harness applies, scratch files for the readers
 * that take a path, and the seed-writing mode.
 *
 * Each harness also writes its own seeds: run with CG_FUZZ_SEEDS=DIR it
 * writes small valid inputs into DIR (made with convgen's own writers where
 * it has them) and exits; the Makefile does that before fuzzing. */
#ifndef CG_FUZZ_H
#define CG_FUZZ_H
#include "util.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Aborts (a finding for libFuzzer) unless e holds a non-empty one-line error. */
static inline void fuzz_check_err(const cg_err *e, const char *what)
{
    size_t n = strnlen(e->msg, sizeof e->msg);
    if (n == 0 || n == sizeof e->msg || memchr(e->msg, '\n', n)) {
        fprintf(stderr, "%s: error message is not one line: \"%.*s\"\n", what, (int)n, e->msg);
        abort();
    }
}

/* Writes size bytes to path, replacing it; aborts on failure (the harness's
 * own fault, not the input's). */
static inline void fuzz_write(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const char *p = data;
    while (size > 0) {
        ssize_t w = write(fd, p, size);
        if (w <= 0) {
            perror(path);
            abort();
        }
        p += w;
        size -= (size_t)w;
    }
    close(fd);
}

/* A per-process scratch path "$TMPDIR/cgfuzz-PID-NAME" (TMPDIR or /tmp). */
static inline const char *fuzz_scratch(char *buf, size_t n, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/cgfuzz-%d-%s", tmp && *tmp ? tmp : "/tmp", (int)getpid(), name);
    return buf;
}

/* The directory seeds go to when CG_FUZZ_SEEDS is set, else NULL. */
static inline const char *fuzz_seed_dir(void)
{
    const char *d = getenv("CG_FUZZ_SEEDS");
    return d && *d ? d : NULL;
}

/* Writes one seed DIR/NAME. */
static inline void fuzz_seed(const char *dir, const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fuzz_write(path, data, size);
}
#endif
