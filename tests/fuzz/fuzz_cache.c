/* fuzz_cache.c — reading a JIT cache entry (cg_cache_get) whose file holds
 * arbitrary bytes: no memory error, a hit only with a payload, and a miss's
 * reason one line. The seed is an entry cg_cache_put writes for the same key. */
#include "cache.h"
#include "fuzz.h"

#include <errno.h>
#include <sys/stat.h>

static char dir[4096], path[4200];
static cg_cache_key key;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char src[] = "__global__ void k() {}";
    cg_cache_key_make(&key, src, sizeof src - 1, "-arch=sm_90", "0123456789abcdef", 13000, 13000, 90);
    fuzz_scratch(dir, sizeof dir, "cache");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        perror(dir);
        exit(1);
    }
    if (cg_cache_path(dir, &key, path, sizeof path)) exit(1);
    const char *seeds = fuzz_seed_dir();
    if (seeds) {
        static const char payload[] = "\177ELF not really a cubin";
        cg_err e;
        cg_buf b;
        if (cg_cache_put(dir, &key, payload, sizeof payload, &e) || cg_read_file(path, &b, &e)) {
            fprintf(stderr, "seed: %s\n", e.msg);
            exit(1);
        }
        fuzz_seed(seeds, "entry.cgc", b.data, b.len);
        cg_buf_free(&b);
        unlink(path);
        rmdir(dir);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(path, data, size);
    cg_buf payload;
    char reason[128] = "";
    int rc = cg_cache_get(dir, &key, &payload, reason);
    if (rc == 1) {
        cg_buf_free(&payload);
        return 0;
    }
    size_t n = strnlen(reason, sizeof reason);
    if (n == 0 || n == sizeof reason || memchr(reason, '\n', n)) {
        fprintf(stderr, "cg_cache_get: reason is not one line: \"%.*s\"\n", (int)n, reason);
        abort();
    }
    return 0;
}
