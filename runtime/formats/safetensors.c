/* safetensors.c — reading and writing the safetensors format (F32, F16 and BF16
 * tensors, held as float32 in memory):
 *
 *   bytes 0..7   N, the header length, unsigned 64-bit little-endian
 *   bytes 8..    N bytes of JSON: {"NAME": {"dtype": "F16", "shape": [d0, ...],
 *                "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
 *   then         the data; offsets are relative to its start (byte 8+N)
 *
 * The header is read by a small strict JSON parser written for exactly this
 * grammar: objects, strings with escapes, arrays of non-negative integers.
 * Anything else is rejected with the byte offset in the file. */
#include "weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "convgen reads and writes safetensors data as little-endian floats"
#endif

#define HEADER_MAX (100ull << 20) /* 100 MiB */
#define TNAME_MAX (CG_NAME_MAX + 8)

/* One entry of the header, before its data is copied out. */
typedef struct {
    char name[TNAME_MAX];
    char dtype[16];
    int ndim;
    long long shape[4];
    unsigned long long begin, end;
    size_t at; /* file offset of the entry, for messages */
} st_entry;

/* Parser state: the header bytes, the position, and where to report. */
typedef struct {
    const char *path;
    const unsigned char *s;
    size_t n, i;
    cg_err *e;
} jp;

/* ---- the JSON subset ---------------------------------------------------- */

/* Report a syntax error at the current position, as a byte offset in the file. */
static int jfail(jp *p, const char *what)
{
    return cg_fail(p->e, "%s: header JSON at byte offset %zu: %s", p->path, p->i + 8, what);
}

/* Skip JSON whitespace. */
static void jws(jp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

/* Consume one expected punctuation character (after whitespace). */
static int jexpect(jp *p, char c)
{
    jws(p);
    if (p->i >= p->n || p->s[p->i] != (unsigned char)c) {
        char msg[48];
        snprintf(msg, sizeof msg, "expected '%c'", c);
        return jfail(p, msg);
    }
    p->i++;
    return 0;
}

/* Four hex digits of a \u escape. */
static int jhex4(jp *p, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++, p->i++) {
        if (p->i >= p->n) return jfail(p, "unterminated \\u escape");
        unsigned c = p->s[p->i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return jfail(p, "bad hex digit in \\u escape");
        *v = *v << 4 | d;
    }
    return 0;
}

/* Append one byte to a decoded string, failing if it does not fit in cap. */
static int jput(jp *p, char *out, size_t cap, size_t *len, unsigned char c)
{
    if (!out) return 0; /* validating only */
    if (*len + 1 >= cap) return jfail(p, "string too long");
    out[(*len)++] = (char)c;
    return 0;
}

/* A JSON string, decoded into out (UTF-8, NUL-terminated; out may be NULL to
 * validate only). Control characters, bad escapes, lone surrogates and NUL are
 * rejected. */
static int jstring(jp *p, char *out, size_t cap)
{
    size_t len = 0;
    jws(p);
    if (p->i >= p->n || p->s[p->i] != '"') return jfail(p, "expected a string");
    p->i++;
    for (;;) {
        if (p->i >= p->n) return jfail(p, "unterminated string");
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            break;
        }
        if (c < 0x20) return jfail(p, "control character in string");
        if (c != '\\') {
            if (jput(p, out, cap, &len, c)) return -1;
            p->i++;
            continue;
        }
        p->i++;
        if (p->i >= p->n) return jfail(p, "unterminated escape");
        c = p->s[p->i++];
        const char *simple = "\"\\/bfnrt", *value = "\"\\/\b\f\n\r\t";
        const char *hit = strchr(simple, c);
        if (c && hit) {
            if (jput(p, out, cap, &len, (unsigned char)value[hit - simple])) return -1;
            continue;
        }
        if (c != 'u') {
            p->i--;
            return jfail(p, "bad escape in string");
        }
        unsigned cp, lo;
        if (jhex4(p, &cp)) return -1;
        if (cp >= 0xdc00 && cp <= 0xdfff) return jfail(p, "lone low surrogate in \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (p->i + 2 > p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
                return jfail(p, "high surrogate without its low half");
            p->i += 2;
            if (jhex4(p, &lo)) return -1;
            if (lo < 0xdc00 || lo > 0xdfff) return jfail(p, "bad low surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (cp == 0) return jfail(p, "\\u0000 in string");
        unsigned char u[4];
        int k = 0;
        if (cp < 0x80) u[k++] = (unsigned char)cp;
        else if (cp < 0x800) u[k++] = (unsigned char)(0xc0 | cp >> 6);
        else if (cp < 0x10000) u[k++] = (unsigned char)(0xe0 | cp >> 12);
        else u[k++] = (unsigned char)(0xf0 | cp >> 18);
        if (cp >= 0x10000) u[k++] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        if (cp >= 0x800) u[k++] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        if (cp >= 0x80) u[k++] = (unsigned char)(0x80 | (cp & 0x3f));
        for (int j = 0; j < k; j++)
            if (jput(p, out, cap, &len, u[j])) return -1;
    }
    if (out) out[len] = 0;
    return 0;
}

/* A non-negative integer without sign, fraction, exponent or leading zeros. */
static int juint(jp *p, unsigned long long *v)
{
    jws(p);
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
        return jfail(p, "expected a non-negative integer");
    size_t start = p->i;
    *v = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = p->s[p->i] - '0';
        if (*v > (1ull << 62) / 10) return jfail(p, "integer too large");
        *v = *v * 10 + d;
        p->i++;
    }
    if (p->s[start] == '0' && p->i - start > 1) {
        p->i = start;
        return jfail(p, "integer with a leading zero");
    }
    if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
        return jfail(p, "expected an integer, found a fraction or exponent");
    return 0;
}

/* An array of up to max non-negative integers; *count receives how many. */
static int juint_array(jp *p, unsigned long long *out, int max, int *count, const char *too_many)
{
    *count = 0;
    if (jexpect(p, '[')) return -1;
    jws(p);
    if (p->i < p->n && p->s[p->i] == ']') {
        p->i++;
        return 0;
    }
    for (;;) {
        if (*count == max) return jfail(p, too_many);
        if (juint(p, &out[(*count)++])) return -1;
        jws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        return jexpect(p, ']');
    }
}

/* After a member: either ',' (returns 1, more follow) or '}' (returns 0). */
static int jnext(jp *p, int *more)
{
    jws(p);
    if (p->i < p->n && p->s[p->i] == ',') {
        p->i++, *more = 1;
        return 0;
    }
    if (p->i < p->n && p->s[p->i] == '}') {
        p->i++, *more = 0;
        return 0;
    }
    return jfail(p, "expected ',' or '}'");
}

/* Start of an object; *empty tells whether it is "{}". */
static int jobject_open(jp *p, int *empty)
{
    if (jexpect(p, '{')) return -1;
    jws(p);
    *empty = p->i < p->n && p->s[p->i] == '}';
    if (*empty) p->i++;
    return 0;
}

/* "__metadata__": an object whose values are all strings (kept by nobody). */
static int jmetadata(jp *p)
{
    int empty, more = 1;
    if (jobject_open(p, &empty)) return -1;
    if (empty) return 0;
    while (more) {
        if (jstring(p, NULL, 0) || jexpect(p, ':') || jstring(p, NULL, 0) || jnext(p, &more))
            return -1;
    }
    return 0;
}

/* One tensor's entry: exactly "dtype", "shape" and "data_offsets", once each. */
static int jtensor(jp *p, st_entry *t)
{
    int empty, more = 1, seen_dtype = 0, seen_shape = 0, seen_off = 0;
    size_t open_at = p->i + 8;
    if (jobject_open(p, &empty)) return -1;
    while (!empty && more) {
        char key[32];
        size_t key_at = p->i;
        if (jstring(p, key, sizeof key) || jexpect(p, ':')) return -1;
        if (strcmp(key, "dtype") == 0 && !seen_dtype) {
            seen_dtype = 1;
            if (jstring(p, t->dtype, sizeof t->dtype)) return -1;
        } else if (strcmp(key, "shape") == 0 && !seen_shape) {
            unsigned long long d[4];
            seen_shape = 1;
            if (juint_array(p, d, 4, &t->ndim, "more than 4 dimensions; convgen reads at most 4"))
                return -1;
            for (int k = 0; k < t->ndim; k++) {
                if (d[k] > (1ull << 40)) return jfail(p, "dimension too large");
                t->shape[k] = (long long)d[k];
            }
        } else if (strcmp(key, "data_offsets") == 0 && !seen_off) {
            unsigned long long o[2];
            int k;
            seen_off = 1;
            if (juint_array(p, o, 2, &k, "data_offsets must have 2 elements")) return -1;
            if (k != 2) return jfail(p, "data_offsets must have 2 elements");
            t->begin = o[0], t->end = o[1];
        } else {
            p->i = key_at;
            jws(p);
            char msg[160];
            snprintf(msg, sizeof msg, "unexpected or repeated key \"%.40s\" in tensor '%s'", key,
                     t->name);
            return jfail(p, msg);
        }
        if (jnext(p, &more)) return -1;
    }
    if (!seen_dtype || !seen_shape || !seen_off)
        return cg_fail(p->e, "%s: header JSON at byte offset %zu: tensor '%s' lacks \"%s\"",
                       p->path, open_at, t->name,
                       !seen_dtype ? "dtype" : !seen_shape ? "shape" : "data_offsets");
    return 0;
}

/* The whole header: a top-level object of tensors and an optional __metadata__,
 * followed only by whitespace (writers pad the header with spaces). */
static int jheader(jp *p, st_entry **out, int *count)
{
    int empty, more = 1, cap = 0, seen_meta = 0;
    *out = NULL, *count = 0;
    if (jobject_open(p, &empty)) return -1;
    while (!empty && more) {
        char name[TNAME_MAX];
        jws(p);
        size_t at = p->i;
        if (jstring(p, name, sizeof name) || jexpect(p, ':')) return -1;
        if (strcmp(name, "__metadata__") == 0) {
            if (seen_meta) {
                p->i = at;
                return jfail(p, "repeated \"__metadata__\"");
            }
            seen_meta = 1;
            if (jmetadata(p)) return -1;
        } else {
            for (int k = 0; k < *count; k++)
                if (strcmp((*out)[k].name, name) == 0) {
                    p->i = at;
                    char msg[TNAME_MAX + 32];
                    snprintf(msg, sizeof msg, "tensor '%s' appears twice", name);
                    return jfail(p, msg);
                }
            if (*count == cap) {
                cap = cap ? 2 * cap : 16;
                st_entry *grown = realloc(*out, (size_t)cap * sizeof **out);
                if (!grown) return cg_fail(p->e, "%s: out of memory", p->path);
                *out = grown;
            }
            st_entry *t = &(*out)[(*count)++];
            memset(t, 0, sizeof *t);
            strcpy(t->name, name);
            t->at = at + 8;
            if (jtensor(p, t)) return -1;
        }
        if (jnext(p, &more)) return -1;
    }
    jws(p);
    if (p->i != p->n) return jfail(p, "unexpected data after the header object");
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

/* Bytes per element of a dtype the reader knows, 0 for any other. */
static int dtype_size(const char *dtype, cg_wdtype *out)
{
    static const struct { const char *name; cg_wdtype d; int size; } known[] = {
        {"F32", CG_W_F32, 4}, {"F16", CG_W_F16, 2}, {"BF16", CG_W_BF16, 2}};
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (strcmp(dtype, known[k].name) == 0) {
            *out = known[k].d;
            return known[k].size;
        }
    return 0;
}

/* Check one entry against the data section: F32, F16 or BF16, size = element
 * size * prod(shape), in range. */
static int check_entry(const char *path, const st_entry *t, unsigned long long data_len,
                       long long *count, cg_wdtype *dtype, cg_err *e)
{
    int size = dtype_size(t->dtype, dtype);
    if (!size)
        return cg_fail(e, "%s: tensor '%s' has dtype %s; convgen reads F32, F16 and BF16", path,
                       t->name, t->dtype);
    unsigned long long c = 1;
    for (int k = 0; k < t->ndim; k++) {
        unsigned long long d = (unsigned long long)t->shape[k];
        if (d && c > (1ull << 60) / d)
            return cg_fail(e, "%s: tensor '%s': shape too large", path, t->name);
        c *= d;
    }
    if (t->begin > t->end || t->end > data_len)
        return cg_fail(e, "%s: tensor '%s': data_offsets [%llu,%llu] outside the data section "
                       "of %llu bytes", path, t->name, t->begin, t->end, data_len);
    if (t->end - t->begin != (unsigned long long)size * c)
        return cg_fail(e, "%s: tensor '%s': data_offsets [%llu,%llu] hold %llu bytes, its shape "
                       "needs %llu (%d x %llu elements of %s)", path, t->name, t->begin, t->end,
                       t->end - t->begin, (unsigned long long)size * c, size, c, t->dtype);
    *count = (long long)c;
    return 0;
}

/* Order entries by where their data begins (ties by end), to find overlaps. */
static int by_begin(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* No two non-empty tensors may share a byte of data. */
static int check_overlaps(const char *path, st_entry *t, int n, cg_err *e)
{
    const st_entry **order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return cg_fail(e, "%s: out of memory", path);
    for (int k = 0; k < n; k++) order[k] = &t[k];
    qsort(order, (size_t)n, sizeof *order, by_begin);
    const st_entry *last = NULL;
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        if (order[k]->begin == order[k]->end) continue;
        if (last && order[k]->begin < last->end)
            rc = cg_fail(e, "%s: tensors '%s' [%llu,%llu] and '%s' [%llu,%llu] overlap", path,
                         last->name, last->begin, last->end, order[k]->name, order[k]->begin,
                         order[k]->end);
        if (!last || order[k]->end > last->end) last = order[k];
    }
    free(order);
    return rc;
}

/* ---- element conversions ------------------------------------------------ */

/* Bits of a float and back, without aliasing trouble. */
static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float cg_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = h >> 10 & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | man << 13); /* inf, NaN (payload kept) */
    if (exp) return bits_f32(sign | (exp + 112) << 23 | man << 13);
    if (!man) return bits_f32(sign); /* signed zero */
    /* subnormal: man x 2^-24, normalised so that its leading 1 becomes implicit */
    uint32_t e32 = 113;
    while (!(man & 0x400)) man <<= 1, e32--;
    return bits_f32(sign | e32 << 23 | (man & 0x3ff) << 13);
}

float cg_bf16_to_f32(uint16_t b)
{
    return bits_f32((uint32_t)b << 16);
}

uint16_t cg_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)(x >> 16 & 0x8000);
    uint32_t exp = x >> 23 & 0xff, man = x & 0x7fffff;
    if (exp == 0xff) /* inf stays inf; NaN stays a (quiet) NaN with its top payload bits */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | man >> 13 : 0));
    int e = (int)exp - 127;
    if (e > 15) return (uint16_t)(sign | 0x7c00);
    uint32_t m, shift;
    if (e >= -14) { /* normal range: drop 13 mantissa bits; a carry may reach inf */
        m = (uint32_t)(e + 15) << 10 | man >> 13;
        uint32_t rem = man & 0x1fff, half = 0x1000;
        if (rem > half || (rem == half && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    if (exp == 0 || e < -25) return sign; /* below half the smallest subnormal */
    /* subnormal: the value is (man | 2^23) x 2^(e-23), in units of 2^-24 that is
     * (man | 2^23) >> (-e-1), rounded to nearest, ties to even */
    m = man | 0x800000;
    shift = (uint32_t)(-e - 1);
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

uint16_t cg_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)(x >> 16 | 0x40); /* quiet NaN */
    return (uint16_t)((x + 0x7fff + (x >> 16 & 1)) >> 16);
}

/* ---- reading ------------------------------------------------------------ */

int cg_weights_load(const char *path, cg_weights *w, cg_err *e)
{
    return cg_weights_load_max(path, CG_READ_MAX, w, e);
}

int cg_weights_load_max(const char *path, size_t max_bytes, cg_weights *w, cg_err *e)
{
    memset(w, 0, sizeof *w);
    cg_buf f;
    if (cg_read_file_max(path, max_bytes, &f, e)) return -1;
    int rc = cg_weights_parse(path, f.data, f.len, w, e);
    cg_buf_free(&f);
    return rc;
}

int cg_weights_parse(const char *path, const void *file, size_t len, cg_weights *w, cg_err *e)
{
    memset(w, 0, sizeof *w);
    const unsigned char *b = file;
    st_entry *ent = NULL;
    long long *counts = NULL;
    cg_wdtype *dtypes = NULL;
    int nent = 0, rc = -1;
    unsigned long long hlen = 0;
    if (len < 8) {
        cg_fail(e, "%s: %zu bytes, too short for a safetensors file (8-byte header length)",
                path, len);
        goto done;
    }
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | b[k];
    if (hlen > HEADER_MAX) {
        cg_fail(e, "%s: header length %llu at byte offset 0 exceeds the 100 MiB limit", path,
                hlen);
        goto done;
    }
    if (hlen > len - 8) {
        cg_fail(e, "%s: header length %llu at byte offset 0 runs past the end of the file "
                "(%zu bytes)", path, hlen, len);
        goto done;
    }
    jp p = {path, b + 8, (size_t)hlen, 0, e};
    if (jheader(&p, &ent, &nent)) goto done;
    unsigned long long data_len = len - 8 - hlen;
    counts = malloc((size_t)(nent ? nent : 1) * sizeof *counts);
    dtypes = malloc((size_t)(nent ? nent : 1) * sizeof *dtypes);
    if (!counts || !dtypes) {
        cg_fail(e, "%s: out of memory", path);
        goto done;
    }
    for (int k = 0; k < nent; k++)
        if (check_entry(path, &ent[k], data_len, &counts[k], &dtypes[k], e)) goto done;
    if (check_overlaps(path, ent, nent, e)) goto done;
    w->t = calloc((size_t)(nent ? nent : 1), sizeof *w->t);
    if (!w->t) {
        cg_fail(e, "%s: out of memory", path);
        goto done;
    }
    w->n = nent;
    const unsigned char *data = b + 8 + hlen;
    for (int k = 0; k < nent; k++) {
        cg_tensor *t = &w->t[k];
        strcpy(t->name, ent[k].name);
        t->ndim = ent[k].ndim;
        memcpy(t->shape, ent[k].shape, sizeof t->shape);
        t->count = counts[k];
        t->dtype = dtypes[k];
        size_t bytes = (size_t)counts[k] * sizeof(float); /* <= 2x the file's bytes */
        t->data = malloc(bytes ? bytes : 1);
        if (!t->data) {
            cg_fail(e, "%s: out of memory for tensor '%s'", path, t->name);
            goto done;
        }
        const unsigned char *src = data + ent[k].begin;
        if (dtypes[k] == CG_W_F32) {
            memcpy(t->data, src, bytes); /* little-endian host, checked above */
        } else {
            for (long long i = 0; i < t->count; i++) {
                uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
                t->data[i] = dtypes[k] == CG_W_F16 ? cg_f16_to_f32(h) : cg_bf16_to_f32(h);
            }
        }
    }
    rc = 0;
done:
    if (rc) cg_weights_free(w);
    free(counts);
    free(dtypes);
    free(ent);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* A JSON string literal for a tensor name. */
static int put_json_string(cg_buf *b, const char *s)
{
    if (cg_buf_puts(b, "\"")) return -1;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int rc;
        if (c == '"' || c == '\\') rc = cg_buf_printf(b, "\\%c", c);
        else if (c < 0x20) rc = cg_buf_printf(b, "\\u%04x", c);
        else rc = cg_buf_add(b, s, 1);
        if (rc) return -1;
    }
    return cg_buf_puts(b, "\"");
}

/* Order tensors by name, so the same weights always give the same file. */
static int by_name(const void *a, const void *b)
{
    return strcmp((*(const cg_tensor *const *)a)->name, (*(const cg_tensor *const *)b)->name);
}

int cg_weights_save(const char *path, const cg_weights *w, cg_err *e)
{
    return cg_weights_save_as(path, w, CG_W_F32, e);
}

int cg_weights_save_as(const char *path, const cg_weights *w, cg_wdtype dtype, cg_err *e)
{
    cg_buf out;
    cg_buf_init(&out);
    int rc = cg_weights_encode(path, w, dtype, &out, e) ||
             cg_write_file_atomic(path, out.data, out.len, e);
    cg_buf_free(&out);
    return rc ? -1 : 0;
}

int cg_weights_encode(const char *path, const cg_weights *w, cg_wdtype dtype, cg_buf *out,
                      cg_err *e)
{
    static const char *names[] = {"F32", "F16", "BF16"};
    if ((int)dtype < 0 || (int)dtype > CG_W_BF16)
        return cg_fail(e, "%s: unknown dtype %d", path, (int)dtype);
    size_t esize = dtype == CG_W_F32 ? 4 : 2;
    const cg_tensor **order = malloc((size_t)(w->n ? w->n : 1) * sizeof *order);
    if (!order) return cg_fail(e, "%s: out of memory", path);
    for (int k = 0; k < w->n; k++) {
        const cg_tensor *t = &w->t[k];
        long long c = 1;
        for (int d = 0; d < t->ndim; d++) c *= t->shape[d];
        if (t->ndim < 0 || t->ndim > 4 || c != t->count || (c && !t->data)) {
            free(order);
            return cg_fail(e, "%s: tensor '%s' is malformed (count %lld, shape product %lld)",
                           path, t->name, t->count, c);
        }
        order[k] = t;
    }
    qsort(order, (size_t)w->n, sizeof *order, by_name);
    for (int k = 1; k < w->n; k++)
        if (strcmp(order[k - 1]->name, order[k]->name) == 0) {
            cg_fail(e, "%s: tensor '%s' appears twice", path, order[k]->name);
            free(order);
            return -1;
        }
    cg_buf h;
    cg_buf_init(&h);
    int bad = cg_buf_printf(&h, "{\"__metadata__\":{\"format\":\"pt\",\"producer\":\"convgen %s\"}",
                            CG_VERSION);
    unsigned long long off = 0;
    for (int k = 0; k < w->n && !bad; k++) {
        const cg_tensor *t = order[k];
        bad |= cg_buf_puts(&h, ",") || put_json_string(&h, t->name) ||
               cg_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", names[dtype]);
        for (int d = 0; d < t->ndim && !bad; d++)
            bad |= cg_buf_printf(&h, "%s%lld", d ? "," : "", t->shape[d]);
        unsigned long long bytes = esize * (unsigned long long)t->count;
        bad |= cg_buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", off, off + bytes);
        off += bytes;
    }
    bad |= cg_buf_puts(&h, "}");
    while (!bad && (8 + h.len) % 8) bad |= cg_buf_puts(&h, " ");
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)((unsigned long long)h.len >> (8 * k));
    bad |= cg_buf_add(out, len8, 8) || cg_buf_add(out, h.data, h.len);
    for (int k = 0; k < w->n && !bad; k++) {
        const cg_tensor *t = order[k];
        if (dtype == CG_W_F32) {
            bad |= cg_buf_add(out, t->data, 4 * (size_t)t->count);
            continue;
        }
        for (long long i = 0; i < t->count && !bad; i++) {
            uint16_t h16 = dtype == CG_W_F16 ? cg_f32_to_f16(t->data[i])
                                                 : cg_f32_to_bf16(t->data[i]);
            unsigned char le[2] = {(unsigned char)(h16 & 0xff), (unsigned char)(h16 >> 8)};
            bad |= cg_buf_add(out, le, 2);
        }
    }
    int rc = bad ? cg_fail(e, "%s: out of memory", path) : 0;
    cg_buf_free(&h);
    free(order);
    return rc;
}
