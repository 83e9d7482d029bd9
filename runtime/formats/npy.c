/* npy.c — the NumPy .npy format, read and written by hand:
 *
 *   bytes 0..5   magic "\x93NUMPY"
 *   bytes 6, 7   format version, major and minor (1.0 or 2.0 read here)
 *   then         header length, uint16 LE (1.0) or uint32 LE (2.0)
 *   then         that many bytes of header: a Python dict literal
 *                {'descr': '<f4', 'fortran_order': False, 'shape': (N, H, W), }
 *                padded with spaces and ended by '\n'
 *   then         the data, count × element size bytes, C order
 *
 * The header is parsed by a strict reader of exactly that grammar (quoted
 * strings without escapes, True/False, tuples of non-negative integers). */
#include "npy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "convgen reads and writes .npy data as little-endian"
#endif

#define MAGIC "\x93NUMPY"
#define DIM_MAX (1ll << 40)

size_t cg_npy_type_size(cg_npy_type t)
{
    switch (t) {
    case CG_NPY_U8: return 1;
    case CG_NPY_F32: return 4;
    case CG_NPY_I32: return 4;
    case CG_NPY_I64: return 8;
    }
    return 0;
}

const char *cg_npy_type_name(cg_npy_type t)
{
    switch (t) {
    case CG_NPY_U8: return "|u1";
    case CG_NPY_F32: return "<f4";
    case CG_NPY_I32: return "<i4";
    case CG_NPY_I64: return "<i8";
    }
    return "?";
}

/* The type's name for people, beside numpy's spelling in messages. */
static const char *type_word(cg_npy_type t)
{
    static const char *w[] = {"uint8", "float32", "int32", "int64"};
    return (unsigned)t < 4 ? w[t] : "?";
}

/* "|u1 (uint8) or <f4 (float32)": the types a mask allows, for messages. */
static void mask_words(unsigned types, char *out, size_t cap)
{
    size_t len = 0;
    int first = 1, total = 0, seen = 0;
    out[0] = 0;
    for (int t = 0; t < 4; t++) total += (types >> t & 1) != 0;
    for (int t = 0; t < 4 && len < cap; t++) {
        if (!(types >> t & 1)) continue;
        seen++;
        len += (size_t)snprintf(out + len, cap - len, "%s%s (%s)",
                                first ? "" : seen == total ? " or " : ", ",
                                cg_npy_type_name((cg_npy_type)t), type_word((cg_npy_type)t));
        first = 0;
    }
}

/* ---- the header --------------------------------------------------------- */

/* Header parser state: text, position, and the file offset of its first byte. */
typedef struct {
    const char *path;
    const unsigned char *s;
    size_t n, i, base;
    cg_err *e;
} hp;

/* A syntax error at the current position, as a byte offset in the file. */
static int hfail(hp *p, const char *what)
{
    return cg_fail(p->e, "%s: .npy header at byte offset %zu: %s", p->path, p->base + p->i, what);
}

/* Skip the whitespace Python allows inside a dict literal. */
static void hws(hp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

/* Consume one expected character after whitespace. */
static int hexpect(hp *p, char c)
{
    hws(p);
    if (p->i >= p->n || p->s[p->i] != (unsigned char)c) {
        char msg[32];
        snprintf(msg, sizeof msg, "expected '%c'", c);
        return hfail(p, msg);
    }
    p->i++;
    return 0;
}

/* A quoted string ('...' or "..."), printable ASCII, no escapes, into out. */
static int hstring(hp *p, char *out, size_t cap)
{
    hws(p);
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"'))
        return hfail(p, "expected a quoted string");
    unsigned char q = p->s[p->i++];
    size_t len = 0;
    for (;;) {
        if (p->i >= p->n) return hfail(p, "unterminated string");
        unsigned char c = p->s[p->i];
        if (c == q) break;
        if (c < 0x20 || c > 0x7e || c == '\\') return hfail(p, "unexpected character in string");
        if (len + 1 >= cap) return hfail(p, "string too long");
        out[len++] = (char)c;
        p->i++;
    }
    p->i++;
    out[len] = 0;
    return 0;
}

/* True or False. */
static int hbool(hp *p, int *v)
{
    hws(p);
    if (p->n - p->i >= 4 && memcmp(p->s + p->i, "True", 4) == 0) {
        p->i += 4, *v = 1;
        return 0;
    }
    if (p->n - p->i >= 5 && memcmp(p->s + p->i, "False", 5) == 0) {
        p->i += 5, *v = 0;
        return 0;
    }
    return hfail(p, "expected True or False");
}

/* A tuple of up to CG_NPY_MAX_DIMS non-negative integers: (), (N,), (N, H, W),
 * (N, H, W,). A single element needs its comma: (N) is not a tuple. */
static int hshape(hp *p, long long *shape, int *ndim)
{
    *ndim = 0;
    if (hexpect(p, '(')) return -1;
    for (;;) {
        hws(p);
        if (p->i < p->n && p->s[p->i] == ')') { /* () or after a comma */
            p->i++;
            return 0;
        }
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
            return hfail(p, "expected a non-negative integer in the shape");
        if (*ndim == CG_NPY_MAX_DIMS) return hfail(p, "more than 4 dimensions");
        long long v = 0;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            v = v * 10 + (p->s[p->i++] - '0');
            if (v > DIM_MAX) return hfail(p, "dimension larger than 2^40");
        }
        shape[(*ndim)++] = v;
        hws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == ')') {
            if (*ndim == 1) return hfail(p, "a one-element shape needs its trailing comma, (N,)");
            p->i++;
            return 0;
        }
        return hfail(p, "expected ',' or ')' in the shape");
    }
}

/* The header's fields, before they are checked against what the caller allows. */
typedef struct {
    char descr[24];
    int fortran;
    int ndim;
    long long shape[CG_NPY_MAX_DIMS];
} npy_header;

/* The dict: exactly 'descr', 'fortran_order' and 'shape', once each, then
 * spaces and the closing '\n'. */
static int hdict(hp *p, npy_header *h)
{
    int seen[3] = {0, 0, 0};
    if (hexpect(p, '{')) return -1;
    for (;;) {
        hws(p);
        if (p->i < p->n && p->s[p->i] == '}') break;
        char key[32];
        size_t at = p->i;
        if (hstring(p, key, sizeof key) || hexpect(p, ':')) return -1;
        int k = strcmp(key, "descr") == 0 ? 0 : strcmp(key, "fortran_order") == 0 ? 1
              : strcmp(key, "shape") == 0 ? 2 : -1;
        if (k < 0 || seen[k]) {
            p->i = at;
            char msg[96];
            snprintf(msg, sizeof msg, "%s key '%s'", k < 0 ? "unexpected" : "repeated", key);
            return hfail(p, msg);
        }
        seen[k] = 1;
        int rc = k == 0 ? hstring(p, h->descr, sizeof h->descr)
               : k == 1 ? hbool(p, &h->fortran) : hshape(p, h->shape, &h->ndim);
        if (rc) return -1;
        hws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == '}') break;
        return hfail(p, "expected ',' or '}'");
    }
    p->i++;
    static const char *names[3] = {"descr", "fortran_order", "shape"};
    for (int k = 0; k < 3; k++)
        if (!seen[k]) {
            char msg[64];
            snprintf(msg, sizeof msg, "the header lacks '%s'", names[k]);
            return hfail(p, msg);
        }
    while (p->i < p->n && p->s[p->i] == ' ') p->i++;
    if (p->i + 1 != p->n || p->s[p->i] != '\n')
        return hfail(p, "the header must end with spaces and one newline after '}'");
    return 0;
}

/* Magic, version, header length and header: fills a's type and shape, and
 * *data_at / *data_bytes, checked against total (the file's length). b holds
 * the first avail bytes of the file. */
static int parse_header(const char *path, const unsigned char *b, size_t avail, size_t total,
                        unsigned types, int min_ndim, int max_ndim, cg_npy *a, size_t *data_at,
                        size_t *data_bytes, cg_err *e)
{
    if (avail < 10 || memcmp(b, MAGIC, 6) != 0) {
        if (avail >= 6 && memcmp(b, MAGIC, 6) == 0)
            return cg_fail(e, "%s: %zu bytes, truncated inside the .npy preamble", path, total);
        return cg_fail(e, "%s: not a .npy file (it does not begin with \\x93NUMPY)", path);
    }
    if ((b[6] != 1 && b[6] != 2) || b[7] != 0)
        return cg_fail(e, "%s: .npy format version %u.%u; convgen reads 1.0 and 2.0", path, b[6],
                       b[7]);
    size_t pre = b[6] == 1 ? 10 : 12;
    if (avail < pre)
        return cg_fail(e, "%s: %zu bytes, truncated inside the .npy preamble", path, total);
    unsigned long long hlen = (unsigned long long)b[8] | (unsigned long long)b[9] << 8;
    if (b[6] == 2) hlen |= (unsigned long long)b[10] << 16 | (unsigned long long)b[11] << 24;
    if (hlen > CG_NPY_HEADER_MAX)
        return cg_fail(e, "%s: .npy header length %llu at byte offset 8 exceeds the %d-byte limit",
                       path, hlen, CG_NPY_HEADER_MAX);
    if (pre + hlen > total)
        return cg_fail(e, "%s: .npy header length %llu at byte offset 8 runs past the end of the "
                       "file (%zu bytes)", path, hlen, total);
    if (pre + hlen > avail) return cg_fail(e, "%s: truncated while read", path);
    npy_header h;
    memset(&h, 0, sizeof h);
    hp p = {path, b + pre, (size_t)hlen, 0, pre, e};
    if (hdict(&p, &h)) return -1;

    /* the dtype: little-endian (or byte-order-free) and one the caller allows */
    static const struct { const char *descr; cg_npy_type t; } known[] = {
        {"|u1", CG_NPY_U8}, {"<u1", CG_NPY_U8}, {"<f4", CG_NPY_F32},
        {"<i4", CG_NPY_I32}, {"<i8", CG_NPY_I64}};
    int found = -1;
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (strcmp(h.descr, known[k].descr) == 0) found = (int)k;
    char allowed[128];
    mask_words(types, allowed, sizeof allowed);
    if (found < 0 && h.descr[0] == '>')
        return cg_fail(e, "%s: dtype '%s' is big-endian; convgen reads little-endian %s only "
                       "(save with arr.astype(arr.dtype.newbyteorder('<')))", path, h.descr,
                       allowed);
    if (found < 0 || !(types >> known[found].t & 1))
        return cg_fail(e, "%s: dtype '%s'; expected %s", path, h.descr, allowed);
    a->type = known[found].t;
    if (h.fortran)
        return cg_fail(e, "%s: fortran_order is True (column-major); convgen reads C order only "
                       "(save np.ascontiguousarray(arr))", path);
    if (h.ndim < min_ndim || h.ndim > max_ndim) {
        if (min_ndim == max_ndim)
            return cg_fail(e, "%s: %d dimensions; expected %d", path, h.ndim, min_ndim);
        return cg_fail(e, "%s: %d dimensions; expected %d to %d", path, h.ndim, min_ndim,
                       max_ndim);
    }
    a->ndim = h.ndim;
    memcpy(a->shape, h.shape, sizeof a->shape);
    size_t esize = cg_npy_type_size(a->type), count = 1, bytes;
    for (int d = 0; d < h.ndim; d++)
        if (cg_mul_size(count, (size_t)h.shape[d], &count))
            return cg_fail(e, "%s: shape too large (its element count overflows)", path);
    if (cg_mul_size(count, esize, &bytes) || count > (size_t)LLONG_MAX)
        return cg_fail(e, "%s: shape too large (its byte count overflows)", path);
    a->count = (long long)count;
    size_t at = pre + (size_t)hlen;
    if (total - at < bytes)
        return cg_fail(e, "%s: truncated: the header's shape needs %zu bytes of data after byte "
                       "offset %zu, the file holds %zu", path, bytes, at, total - at);
    if (total - at > bytes)
        return cg_fail(e, "%s: %zu bytes after the %zu bytes of data its header describes", path,
                       total - at - bytes, bytes);
    *data_at = at;
    *data_bytes = bytes;
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

int cg_npy_parse(const char *path, const void *bytes, size_t len, unsigned types, int min_ndim,
                 int max_ndim, cg_npy *a, cg_err *e)
{
    memset(a, 0, sizeof *a);
    size_t at, n;
    if (parse_header(path, bytes, len, len, types, min_ndim, max_ndim, a, &at, &n, e)) return -1;
    a->data = malloc(n ? n : 1);
    if (!a->data) return cg_fail(e, "%s: out of memory for %zu bytes of data", path, n);
    memcpy(a->data, (const unsigned char *)bytes + at, n);
    return 0;
}

/* Read n bytes at offset off, retrying short reads; 0, or -1 with errno (0 at EOF). */
static int pread_full(int fd, void *buf, size_t n, size_t off)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = 0;
            return -1;
        }
        p += r, n -= (size_t)r, off += (size_t)r;
    }
    return 0;
}

int cg_npy_read(const char *path, unsigned types, int min_ndim, int max_ndim, size_t max_bytes,
                cg_npy *a, cg_err *e)
{
    memset(a, 0, sizeof *a);
    int fd;
    size_t size;
    if (cg_open_regular(path, max_bytes, &fd, &size, e)) return -1;
    /* the preamble and header first: at most 12 + CG_NPY_HEADER_MAX bytes */
    size_t head = size < 12 + CG_NPY_HEADER_MAX ? size : 12 + CG_NPY_HEADER_MAX;
    unsigned char *b = malloc(head ? head : 1);
    size_t at, n;
    int rc = -1;
    if (!b) {
        cg_fail(e, "%s: out of memory", path);
        goto done;
    }
    if (pread_full(fd, b, head, 0)) {
        cg_fail(e, "%s: read error: %s", path, errno ? strerror(errno) : "the file shrank");
        goto done;
    }
    if (parse_header(path, b, head, size, types, min_ndim, max_ndim, a, &at, &n, e)) goto done;
    /* the size is now known to match the header: only then is it allocated */
    a->data = malloc(n ? n : 1);
    if (!a->data) {
        cg_fail(e, "%s: out of memory for %zu bytes of data", path, n);
        goto done;
    }
    if (pread_full(fd, a->data, n, at)) {
        cg_fail(e, "%s: read error: %s", path, errno ? strerror(errno) : "the file shrank");
        goto done;
    }
    rc = 0;
done:
    if (rc) cg_npy_free(a);
    free(b);
    close(fd);
    return rc;
}

/* "(2, 3, 4)" for messages. */
static void shape_str(const cg_npy *a, char *out, size_t cap)
{
    size_t len = (size_t)snprintf(out, cap, "(");
    for (int d = 0; d < a->ndim && len < cap; d++)
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", d ? ", " : "", a->shape[d]);
    if (len < cap) snprintf(out + len, cap - len, "%s)", a->ndim == 1 ? "," : "");
}

int cg_npy_read_images(const char *path, size_t max_bytes, cg_npy *a, int *n, int *c, int *h,
                       int *w, cg_err *e)
{
    if (cg_npy_read(path, CG_NPY_IMAGE_TYPES, 3, 4, max_bytes, a, e)) return -1;
    const long long *s = a->shape;
    long long nn = s[0], cc = a->ndim == 4 ? s[1] : 1, hh = s[a->ndim - 2], ww = s[a->ndim - 1];
    if (nn < 1 || cc < 1 || hh < 1 || ww < 1 || nn > INT_MAX || cc > 65536 || hh > 65536 ||
        ww > 65536) {
        char shape[128];
        shape_str(a, shape, sizeof shape);
        cg_npy_free(a);
        return cg_fail(e, "%s: images of shape %s; expected N×H×W or N×C×H×W, every dimension "
                       "at least 1 (C, H and W at most 65536)", path, shape);
    }
    *n = (int)nn, *c = (int)cc, *h = (int)hh, *w = (int)ww;
    return 0;
}

void cg_npy_free(cg_npy *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- writing ------------------------------------------------------------ */

int cg_npy_write(const char *path, cg_npy_type type, int ndim, const long long *shape,
                 const void *data, cg_err *e)
{
    if (type != CG_NPY_U8 && type != CG_NPY_F32 && type != CG_NPY_I32)
        return cg_fail(e, "%s: convgen writes .npy arrays of uint8, float32 or int32 only", path);
    if (ndim < 0 || ndim > CG_NPY_MAX_DIMS)
        return cg_fail(e, "%s: %d dimensions; convgen writes 0 to 4", path, ndim);
    size_t count = 1, bytes;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0 || shape[d] > DIM_MAX || cg_mul_size(count, (size_t)shape[d], &count))
            return cg_fail(e, "%s: bad shape for a .npy array", path);
    if (cg_mul_size(count, cg_npy_type_size(type), &bytes))
        return cg_fail(e, "%s: bad shape for a .npy array", path);
    cg_buf h, out;
    cg_buf_init(&h), cg_buf_init(&out);
    int bad = cg_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                            cg_npy_type_name(type));
    for (int d = 0; d < ndim && !bad; d++)
        bad |= cg_buf_printf(&h, "%s%lld", d ? ", " : "", shape[d]);
    bad |= cg_buf_puts(&h, ndim == 1 ? ",), }" : "), }");
    /* numpy pads the preamble and header to a multiple of 64 bytes, ending in '\n' */
    while (!bad && (10 + h.len + 1) % 64) bad |= cg_buf_puts(&h, " ");
    bad |= cg_buf_puts(&h, "\n");
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h.len & 0xff),
                             (unsigned char)(h.len >> 8)};
    bad |= cg_buf_add(&out, pre, sizeof pre) || cg_buf_add(&out, h.data, h.len) ||
           cg_buf_add(&out, data, bytes);
    int rc = bad ? cg_fail(e, "%s: out of memory", path)
                 : cg_write_file_atomic(path, out.data, out.len, e);
    cg_buf_free(&h), cg_buf_free(&out);
    return rc;
}

int cg_csv_write_predictions(const char *path, int n, const int *pred, int k, const float *scores,
                             cg_err *e)
{
    if (n < 0 || (scores && k < 1)) return cg_fail(e, "%s: nothing sensible to write", path);
    cg_buf b;
    cg_buf_init(&b);
    int bad = cg_buf_puts(&b, "index,prediction");
    for (int j = 0; scores && j < k && !bad; j++) bad |= cg_buf_printf(&b, ",score_%d", j);
    bad |= cg_buf_puts(&b, "\n");
    for (int i = 0; i < n && !bad; i++) {
        bad |= cg_buf_printf(&b, "%d,%d", i, pred[i]);
        for (int j = 0; scores && j < k && !bad; j++)
            bad |= cg_buf_printf(&b, ",%.9g", (double)scores[(size_t)i * (size_t)k + (size_t)j]);
        bad |= cg_buf_puts(&b, "\n");
    }
    int rc = bad ? cg_fail(e, "%s: out of memory", path)
                 : cg_write_file_atomic(path, b.data, b.len, e);
    cg_buf_free(&b);
    return rc;
}
