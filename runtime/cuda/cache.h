/* cache.h — compiled kernels kept on disk, so a second run skips NVRTC.
 *
 * One file per entry, DIR/<32 hex digits>.cgc, named by a 128-bit key over
 * everything that changes the compiled image: the kernel's code (its source
 * without the provenance header, which names the spec's path and so differs
 * between two specs holding the same layer), the compile options, the
 * template hash, convgen's version, NVRTC's version, the driver version and
 * the compute capability. An entry starts with a short text header a
 * person can read with `head`:
 *
 *   CGCACHE1
 *   key <32 hex>
 *   desc convgen 0.1.0; nvrtc 13.0; driver 13.0; cc 90; template ...; ...
 *   len <payload bytes>
 *   hash <16 hex: cg_hash64 of the payload>
 *   <payload>
 *
 * A read checks every field; anything corrupt, truncated or not matching is a
 * miss with a reason (the caller compiles again and overwrites), never a hit.
 * It reads the header first and the payload only when the file's size is the
 * header's plus the length the header gives (at most CG_CACHE_PAYLOAD_MAX). */
#ifndef CG_CACHE_H
#define CG_CACHE_H
#include "gen.h"
#include "util.h"

#define CG_CACHE_MAGIC "CGCACHE1"
/* The largest payload a read accepts (a kernel's cubin is a few hundred kB);
 * a larger entry is a miss, read no further than its header. */
#define CG_CACHE_PAYLOAD_MAX ((size_t)256 << 20)
/* cg_cache_put's return when the entry could not be written (read-only or
 * missing cache directory, disk full): a warning, the compile result stands. */
#define CG_CACHE_UNWRITABLE 1

typedef struct {
    char hex[33];   /* the file name stem, 128 bits */
    char desc[512]; /* the key's parts in words, stored in the entry */
} cg_cache_key;

/* $XDG_CACHE_HOME/convgen when XDG_CACHE_HOME is an absolute path, else
 * $HOME/.cache/convgen. Fails only when neither variable is usable. */
int cg_cache_dir(char *out, size_t n, cg_err *e);

/* Versions as CUDA writes them (13000 = 13.0); cc = 10*major+minor; tpl_hash
 * is the template hash the caller has (may be "" but not NULL). */
void cg_cache_key_make(cg_cache_key *k, const void *src, size_t src_len, const char *options,
                       const char *tpl_hash, int nvrtc_version, int driver_version, int cc);

/* The key of one generated kernel: its source after header_len (plus the
 * header's line count, which shifts line numbers in NVRTC's output), its
 * template hash, and the rest as for cg_cache_key_make. Two specs at different
 * paths holding the same layer give the same key. */
void cg_cache_key_kernel(cg_cache_key *k, const cg_gen_kernel *kern, const char *options,
                         int nvrtc_version, int driver_version, int cc);

/* DIR/<hex>.cgc into out; -1 if it does not fit. */
int cg_cache_path(const char *dir, const cg_cache_key *k, char *out, size_t n);

/* 1: hit, payload filled (cg_buf_free it). 0: miss, reason says why ("no
 * entry", "bad magic", "key mismatch", "truncated: ...", "payload hash
 * mismatch", ...). -1: out of memory (reason says so). */
int cg_cache_get(const char *dir, const cg_cache_key *k, cg_buf *payload, char reason[128]);

/* Write the entry atomically, creating dir as needed. 0: written;
 * CG_CACHE_UNWRITABLE: not written, e holds a warning line; -1: out of memory. */
int cg_cache_put(const char *dir, const cg_cache_key *k, const void *p, size_t n, cg_err *e);

/* Remove the temp files of entry writes whose process died mid-write
 * ("<key>.cgc.tmp.<pid>.<n>" with no such process); nothing else is touched, and
 * a live writer's file stays. Returns how many went. Called once per JIT. */
int cg_cache_sweep(const char *dir);

#endif
