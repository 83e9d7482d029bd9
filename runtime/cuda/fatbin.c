/* fatbin.c — list the archs inside a fat binary (layout in fatbin.h). */
#include "fatbin.h"

#include <stdio.h>
#include <string.h>

#define HDR_SIZE 16   /* container header */
#define ENTRY_MIN 32  /* entry header bytes we read: up to and including arch */
#define KIND_PTX 1
#define KIND_ELF 2

/* Little-endian loads from a byte buffer; callers have checked the bounds. */
static unsigned rd16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static unsigned long rd32(const unsigned char *p)
{
    return (unsigned long)p[0] | (unsigned long)p[1] << 8 | (unsigned long)p[2] << 16 |
           (unsigned long)p[3] << 24;
}
static unsigned long long rd64(const unsigned char *p)
{
    return (unsigned long long)rd32(p) | (unsigned long long)rd32(p + 4) << 32;
}

/* Insert v into the sorted set a[0..*n), keeping it sorted and unique. */
static int add_arch(int *a, int *n, int v, cg_err *e)
{
    int i = 0;
    while (i < *n && a[i] < v) i++;
    if (i < *n && a[i] == v) return 0;
    if (*n >= CG_FATBIN_MAX_ARCHS)
        return cg_fail(e, "fat binary lists more than %d archs", CG_FATBIN_MAX_ARCHS);
    memmove(a + i + 1, a + i, (size_t)(*n - i) * sizeof *a);
    a[i] = v;
    (*n)++;
    return 0;
}

/* True when p[0..n) is all zero bytes (alignment padding after a container). */
static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Walk the entries of one container whose entries span [at, end). */
static int list_entries(const unsigned char *d, size_t at, size_t end, int *sm, int *nsm,
                        int *ptx, int *nptx, cg_err *e)
{
    while (at < end) {
        size_t left = end - at;
        if (left < ENTRY_MIN) {
            if (all_zero(d + at, left)) return 0;
            return cg_fail(e, "fat binary: truncated entry header at offset %zu", at);
        }
        unsigned kind = rd16(d + at);
        unsigned long ehs = rd32(d + at + 4);
        unsigned long long size = rd64(d + at + 8);
        unsigned long arch = rd32(d + at + 28);
        if (ehs < ENTRY_MIN || ehs > left)
            return cg_fail(e, "fat binary: bad entry header size %lu at offset %zu", ehs, at);
        if (size > left - ehs)
            return cg_fail(e,
                           "fat binary: entry at offset %zu claims %llu bytes, only %zu remain",
                           at, size, left - ehs);
        if (kind == KIND_PTX || kind == KIND_ELF) {
            if (arch < 10 || arch > 10000)
                return cg_fail(e, "fat binary: implausible arch %lu at offset %zu", arch, at);
            if (add_arch(kind == KIND_ELF ? sm : ptx, kind == KIND_ELF ? nsm : nptx, (int)arch,
                         e))
                return -1;
        } /* other kinds (LTO IR, ...) are skipped */
        at += ehs + (size_t)size;
    }
    return 0;
}

/* Parse every container in the buffer and collect cubin and PTX archs. */
int cg_fatbin_list(const void *data, size_t len, int *sm, int *nsm, int *ptx, int *nptx,
                   cg_err *e)
{
    const unsigned char *d = data;
    *nsm = *nptx = 0;
    if (!d || len < HDR_SIZE) return cg_fail(e, "fat binary: file too short (%zu bytes)", len);
    if (len >= 4 && memcmp(d, "\177ELF", 4) == 0)
        return cg_fail(e, "not a fat binary: an ELF file (a single cubin or a host program)");
    size_t at = 0;
    int containers = 0;
    while (at < len) {
        size_t left = len - at;
        if (containers && all_zero(d + at, left)) break; /* trailing padding */
        if (left < HDR_SIZE)
            return cg_fail(e, "fat binary: truncated container header at offset %zu", at);
        if (rd32(d + at) != CG_FATBIN_MAGIC)
            return cg_fail(e, "not a fat binary: magic 0x%08lx at offset %zu (expected 0x%08x)",
                           rd32(d + at), at, CG_FATBIN_MAGIC);
        unsigned ver = rd16(d + at + 4), hs = rd16(d + at + 6);
        unsigned long long fat = rd64(d + at + 8);
        if (ver != 1)
            return cg_fail(e, "fat binary: unknown container version %u at offset %zu", ver, at);
        if (hs < HDR_SIZE || hs > left)
            return cg_fail(e, "fat binary: bad header size %u at offset %zu", hs, at);
        if (fat > left - hs)
            return cg_fail(e,
                           "fat binary: truncated: container at offset %zu claims %llu bytes, "
                           "only %zu remain",
                           at, fat, left - hs);
        if (list_entries(d, at + hs, at + hs + (size_t)fat, sm, nsm, ptx, nptx, e)) return -1;
        at += hs + (size_t)fat;
        containers++;
    }
    return 0;
}

/* Append "sm_75, sm_80" style text for one list to out. */
static void describe_list(const char *prefix, const int *a, int n, char *out, size_t cap)
{
    for (int i = 0; i < n; i++) {
        size_t used = strlen(out);
        if (used + 1 >= cap) return;
        snprintf(out + used, cap - used, "%s%s%d", i ? ", " : "", prefix, a[i]);
    }
}

/* Human summary used in "this device cannot run that file" messages. */
void cg_fatbin_describe(const int *sm, int nsm, const int *ptx, int nptx, char *out, size_t n)
{
    if (!n) return;
    out[0] = 0;
    if (nsm)
        describe_list("sm_", sm, nsm, out, n);
    else
        snprintf(out, n, "no cubins");
    size_t used = strlen(out);
    if (used + 1 >= n) return;
    if (nptx) {
        snprintf(out + used, n - used, " and PTX ");
        describe_list("compute_", ptx, nptx, out, n);
    } else {
        snprintf(out + used, n - used, " and no PTX");
    }
}
