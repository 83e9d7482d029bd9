/* bundle.c — writing and checking NET.cgb files (layout in bundle.h). The
 * reader trusts nothing: every length is checked against the bytes present
 * before it is used, and each check failing gives one line naming the file. */
#include "bundle.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#define MAGIC_LEN 8
#define FIXED 24       /* magic, version, count, file length */
#define ENTRY 32       /* one section table entry */
#define HEADER_LEN (FIXED + ENTRY * CG_BUNDLE_NSECTIONS + 8)

const char *cg_bundle_section_name(int k)
{
    static const char *names[CG_BUNDLE_NSECTIONS] = {"manifest", "fatbin", "weights", "spec"};
    return k >= 0 && k < CG_BUNDLE_NSECTIONS ? names[k] : "?";
}

/* CRC-32 (zlib's, the polynomial of gzip and PNG) of n bytes, in chunks that
 * fit zlib's 32-bit length. */
static uint32_t crc(const void *p, size_t n)
{
    const unsigned char *s = p;
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, s, k);
        s += k, n -= k;
    }
    return (uint32_t)c;
}

/* Little-endian stores and loads. */
static void put32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* n rounded up to a multiple of 8. */
static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

int cg_bundle_encode(const char *path, const cg_blob sec[CG_BUNDLE_NSECTIONS], cg_buf *out,
                     cg_err *e)
{
    unsigned char h[HEADER_LEN];
    memset(h, 0, sizeof h);
    size_t off = HEADER_LEN; /* already a multiple of 8 */
    for (int k = 0; k < CG_BUNDLE_NSECTIONS; k++) {
        if (sec[k].len && !sec[k].data)
            return cg_fail(e, "%s: bundle section '%s' has no bytes", path,
                           cg_bundle_section_name(k));
        if (sec[k].len > CG_BUNDLE_MAX || off > CG_BUNDLE_MAX - align8(sec[k].len))
            return cg_fail(e, "%s: the bundle would exceed %zu bytes (section '%s' is %zu)", path,
                           CG_BUNDLE_MAX, cg_bundle_section_name(k), sec[k].len);
        unsigned char *t = h + FIXED + ENTRY * k;
        put32(t, (uint32_t)k);
        put64(t + 8, off);
        put64(t + 16, sec[k].len);
        put32(t + 24, crc(sec[k].data, sec[k].len));
        off += k + 1 < CG_BUNDLE_NSECTIONS ? align8(sec[k].len) : sec[k].len;
    }
    memcpy(h, CG_BUNDLE_MAGIC, MAGIC_LEN);
    put32(h + 8, CG_BUNDLE_VERSION);
    put32(h + 12, CG_BUNDLE_NSECTIONS);
    put64(h + 16, off);
    put32(h + FIXED + ENTRY * CG_BUNDLE_NSECTIONS, crc(h, FIXED + ENTRY * CG_BUNDLE_NSECTIONS));
    static const unsigned char zeros[8];
    int bad = cg_buf_add(out, h, sizeof h);
    for (int k = 0; k < CG_BUNDLE_NSECTIONS && !bad; k++) {
        if (sec[k].len) bad |= cg_buf_add(out, sec[k].data, sec[k].len);
        if (k + 1 < CG_BUNDLE_NSECTIONS)
            bad |= cg_buf_add(out, zeros, align8(sec[k].len) - sec[k].len);
    }
    return bad ? cg_fail(e, "%s: out of memory for a %zu-byte bundle", path, off) : 0;
}

int cg_bundle_write(const char *path, const cg_blob sec[CG_BUNDLE_NSECTIONS], cg_err *e)
{
    if (cg_check_output_file(path, e)) return -1;
    cg_buf b;
    cg_buf_init(&b);
    int rc = cg_bundle_encode(path, sec, &b, e) || cg_write_file_atomic(path, b.data, b.len, e);
    cg_buf_free(&b);
    return rc ? -1 : 0;
}

int cg_bundle_parse(const char *path, const void *bytes, size_t len,
                    cg_blob sec[CG_BUNDLE_NSECTIONS], cg_err *e)
{
    const unsigned char *b = bytes;
    memset(sec, 0, sizeof *sec * CG_BUNDLE_NSECTIONS);
    if (len < MAGIC_LEN || memcmp(b, CG_BUNDLE_MAGIC, MAGIC_LEN) != 0) {
        /* a prefix of the magic is a truncated bundle; a magic whose line
         * endings were rewritten is a bundle damaged in transfer */
        if (len >= 4 && len < MAGIC_LEN && memcmp(b, CG_BUNDLE_MAGIC, len) == 0)
            return cg_fail(e, "%s: truncated bundle: %zu bytes, not even its 8-byte magic", path,
                           len);
        if (len >= 4 && memcmp(b, CG_BUNDLE_MAGIC, 4) == 0)
            return cg_fail(e, "%s: damaged bundle: its magic at byte offset 0 was altered (a "
                           "text-mode transfer?)", path);
        return cg_fail(e, "%s: not a convgen bundle (it does not begin with \\x89CGB; "
                       "`convgen build SPEC -o NET.cgb` writes one)", path);
    }
    if (len < FIXED)
        return cg_fail(e, "%s: truncated bundle: %zu bytes, shorter than its %d-byte header",
                       path, len, HEADER_LEN);
    uint32_t version = get32(b + 8);
    if (version != CG_BUNDLE_VERSION)
        return cg_fail(e, "%s: bundle format version %u; this convgen (%s) reads version %d%s",
                       path, version, CG_VERSION, CG_BUNDLE_VERSION,
                       version > CG_BUNDLE_VERSION && version < 1000
                           ? " (written by a newer convgen?)" : " (damaged?)");
    uint64_t total = get64(b + 16);
    if (len < HEADER_LEN)
        return cg_fail(e, "%s: truncated bundle: %zu bytes, shorter than its %d-byte header",
                       path, len, HEADER_LEN);
    uint32_t hcrc = get32(b + HEADER_LEN - 8), want = crc(b, HEADER_LEN - 8);
    if (hcrc != want || get32(b + HEADER_LEN - 4) != 0)
        return cg_fail(e, "%s: damaged bundle: its header (bytes 0..%d) fails its CRC-32 check",
                       path, HEADER_LEN - 1);
    /* the header is as written; from here on a mismatch is a truncation or a
     * writer's bug, and still never trusted */
    if (get32(b + 12) != CG_BUNDLE_NSECTIONS)
        return cg_fail(e, "%s: damaged bundle: %u sections, a version %d bundle has %d", path,
                       get32(b + 12), CG_BUNDLE_VERSION, CG_BUNDLE_NSECTIONS);
    if (total > CG_BUNDLE_MAX)
        return cg_fail(e, "%s: damaged bundle: its header claims %llu bytes, over the %zu-byte "
                       "limit", path, (unsigned long long)total, CG_BUNDLE_MAX);
    if (len < total)
        return cg_fail(e, "%s: truncated bundle: %zu bytes, its header says %llu", path, len,
                       (unsigned long long)total);
    if (len > total)
        return cg_fail(e, "%s: damaged bundle: %zu bytes after the %llu its header describes",
                       path, len - (size_t)total, (unsigned long long)total);
    uint64_t at = HEADER_LEN;
    for (int k = 0; k < CG_BUNDLE_NSECTIONS; k++) {
        const unsigned char *t = b + FIXED + ENTRY * k;
        uint64_t off = get64(t + 8), n = get64(t + 16);
        const char *name = cg_bundle_section_name(k);
        if (get32(t) != (uint32_t)k || get32(t + 4) || get32(t + 28))
            return cg_fail(e, "%s: damaged bundle: section table entry %d at byte offset %d is "
                           "not the '%s' section", path, k, FIXED + ENTRY * k, name);
        if (off != at || n > total || off > total - n)
            return cg_fail(e, "%s: damaged bundle: section '%s' at [%llu, +%llu) is not where "
                           "the previous one ends (%llu) or runs past the file's %llu bytes",
                           path, name, (unsigned long long)off, (unsigned long long)n,
                           (unsigned long long)at, (unsigned long long)total);
        uint64_t end = off + n, next = k + 1 < CG_BUNDLE_NSECTIONS ? align8((size_t)end) : end;
        if (next > total)
            return cg_fail(e, "%s: damaged bundle: section '%s' ends at %llu, its padding past "
                           "the file's %llu bytes", path, name, (unsigned long long)end,
                           (unsigned long long)total);
        if (crc(b + off, (size_t)n) != get32(t + 24))
            return cg_fail(e, "%s: damaged bundle: section '%s' (bytes %llu..%llu) fails its "
                           "CRC-32 check", path, name, (unsigned long long)off,
                           (unsigned long long)(end ? end - 1 : 0));
        for (uint64_t p = end; p < next; p++)
            if (b[p])
                return cg_fail(e, "%s: damaged bundle: padding byte at offset %llu is not zero",
                               path, (unsigned long long)p);
        sec[k].data = b + off;
        sec[k].len = (size_t)n;
        at = next;
    }
    if (at != total)
        return cg_fail(e, "%s: damaged bundle: %llu bytes after its last section", path,
                       (unsigned long long)(total - at));
    return 0;
}

int cg_bundle_read(const char *path, cg_bundle *bd, cg_err *e)
{
    memset(bd, 0, sizeof *bd);
    if (cg_read_file_max(path, CG_BUNDLE_MAX, &bd->file, e)) return -1;
    if (cg_bundle_parse(path, bd->file.data, bd->file.len, bd->sec, e)) {
        cg_bundle_free(bd);
        return -1;
    }
    return 0;
}

void cg_bundle_free(cg_bundle *bd)
{
    cg_buf_free(&bd->file);
    memset(bd, 0, sizeof *bd);
}
