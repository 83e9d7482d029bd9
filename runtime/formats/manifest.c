/* manifest.c — read the launch manifest (format in manifest.h). The runtime
 * trusts nothing it reads: every field is checked, errors name origin:line. */
#include "manifest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Indexed by cg_dtype; templates/lib/common.lua's common.DTYPES has the same rows. */
static const cg_dtype_info dtypes[CG_DT_COUNT] = {
    [CG_DT_U8] = {"u8", 1, "unsigned char"},
    [CG_DT_F32] = {"f32", 4, "float"},
    [CG_DT_I32] = {"i32", 4, "int"},
    [CG_DT_F16] = {"f16", 2, "__half"},
    [CG_DT_BF16] = {"bf16", 2, "__nv_bfloat16"},
};

const cg_dtype_info *cg_dtype_get(cg_dtype t)
{
    return (int)t >= 0 && t < CG_DT_COUNT ? &dtypes[t] : NULL;
}

size_t cg_dtype_size(cg_dtype t)
{
    const cg_dtype_info *d = cg_dtype_get(t);
    return d ? d->size : 0;
}

int cg_dtype_parse(const char *name, cg_dtype *t)
{
    for (int i = 0; i < CG_DT_COUNT; i++)
        if (!strcmp(dtypes[i].name, name)) {
            *t = (cg_dtype)i;
            return 0;
        }
    return -1;
}

long long cg_mdim_eval(cg_mdim d, long long n)
{
    if (!d.div) return d.mul;
    return (n * d.mul + d.div - 1) / d.div;
}

int cg_manifest_tensor(const cg_manifest *m, const char *name)
{
    for (int i = 0; i < m->ntensors; i++)
        if (strcmp(m->t[i].name, name) == 0) return i;
    return -1;
}

int cg_manifest_root(const cg_manifest *m, int t)
{
    return t >= 0 && t < m->ntensors && m->t[t].view ? m->t[t].parent : t;
}

void cg_manifest_gather(const cg_manifest *m, int t, const void *src, long long n, void *dst)
{
    const cg_mtensor *x = &m->t[t];
    const size_t size = cg_dtype_size(x->dtype), per = (size_t)x->elems * size;
    if (!x->view) {
        memmove(dst, src, (size_t)n * per);
        return;
    }
    /* image i's slice moves down (or stays): the slices of the images after it are not yet touched */
    const size_t stride = (size_t)m->t[x->parent].elems * size, off = (size_t)x->view_off * size;
    for (long long i = 0; i < n; i++)
        memmove((unsigned char *)dst + (size_t)i * per, (const unsigned char *)src + (size_t)i * stride + off, per);
}

int cg_manifest_relayout(const cg_mtensor *t, float *data, long long n, int to_chw)
{
    if (!t->hwc[0]) return 0;
    const long long C = t->hwc[0], P = (long long)t->hwc[1] * t->hwc[2];
    float *img = malloc((size_t)(C * P) * sizeof *img);
    if (!img) return -1;
    for (long long i = 0; i < n; i++) {
        float *x = data + i * C * P;
        memcpy(img, x, (size_t)(C * P) * sizeof *img);
        for (long long c = 0; c < C; c++)
            for (long long p = 0; p < P; p++) {
                if (to_chw) x[c * P + p] = img[p * C + c];
                else x[p * C + c] = img[c * P + p];
            }
    }
    free(img);
    return 0;
}

int cg_manifest_whole(const cg_manifest *m)
{
    return m->nkernels > 0 && m->k[m->nkernels - 1].whole ? m->nkernels - 1 : -1;
}

int cg_manifest_layer_kernels(const cg_manifest *m) { return m->nkernels - (cg_manifest_whole(m) >= 0); }

int cg_manifest_feeds(const cg_mkernel *k, int f32)
{
    return k->feed == CG_FEED_ANY || (k->feed == CG_FEED_F32) == (f32 != 0);
}

/* Next whitespace-separated word of *p into w (bounded); 0 if none. */
static int word(const char **p, char *w, size_t cap)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t') s++;
    size_t n = 0;
    while (s[n] && s[n] != ' ' && s[n] != '\t') n++;
    if (!n || n >= cap) return 0;
    memcpy(w, s, n);
    w[n] = 0;
    *p = s + n;
    return 1;
}

static int parse_ll(const char *s, long long lo, long long hi, long long *v)
{
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

static int parse_dim(const char *s, cg_mdim *d)
{
    long long a, b;
    char tail;
    if (s[0] == 'N') {
        if (sscanf(s, "N*%lld/%lld%c", &a, &b, &tail) != 2 || a < 1 || b < 1 || a > (1LL << 31) ||
            b > (1LL << 31))
            return -1;
        d->mul = a, d->div = b;
        return 0;
    }
    d->div = 0;
    return parse_ll(s, 1, 0x7fffffffLL, &d->mul);
}

/* Indexed by cg_arg_role; templates/lib/common.lua's common.ROLE_DEFAULTS has the same roles. */
static const char *const role_names[CG_ARG_ROLES] = {
    [CG_ARG_IN] = "in",       [CG_ARG_OUT] = "out", [CG_ARG_WEIGHTS] = "weights", [CG_ARG_BIAS] = "bias",
    [CG_ARG_N] = "n",         [CG_ARG_IN1] = "in1", [CG_ARG_IN2] = "in2",         [CG_ARG_IN3] = "in3",
    [CG_ARG_OUT1] = "out1",   [CG_ARG_OUT2] = "out2",
};

const char *cg_arg_role_name(cg_arg_role r)
{
    return (int)r >= 0 && r < CG_ARG_ROLES ? role_names[r] : "?";
}

int cg_arg_input(cg_arg_role r)
{
    if (r == CG_ARG_IN) return 0;
    if (r >= CG_ARG_IN1 && r <= CG_ARG_IN3) return 1 + (int)(r - CG_ARG_IN1);
    return -1;
}

int cg_args_past_inputs(const cg_arg_role *roles, int n, int nin)
{
    for (int i = 0; i < n; i++)
        if (cg_arg_input(roles[i]) >= nin) return i;
    return -1;
}

int cg_arg_output(cg_arg_role r)
{
    if (r == CG_ARG_OUT) return 0;
    if (r == CG_ARG_OUT1 || r == CG_ARG_OUT2) return 1 + (int)(r - CG_ARG_OUT1);
    return -1;
}

int cg_args_past_outputs(const cg_arg_role *roles, int n, int nout)
{
    for (int i = 0; i < n; i++)
        if (cg_arg_output(roles[i]) >= nout) return i;
    return -1;
}

static int parse_map(const char *p, size_t len, cg_mmap *mp, char *why, size_t cap);

int cg_args_parse_maps(const char *text, cg_arg_role *roles, int *n, cg_mmap *maps, int *nmaps, char *why,
                       size_t cap)
{
    *n = 0;
    if (nmaps) *nmaps = 0;
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",");
        int r = -1;
        if (!len) return snprintf(why, cap, "an empty role"), -1;
        if (*n >= CG_MAX_ARGS) return snprintf(why, cap, "more than %d roles", CG_MAX_ARGS), -1;
        if (maps && len > 4 && !strncmp(p, "map:", 4)) {
            char w[160];
            if (*nmaps >= CG_MAX_MAPS) return snprintf(why, cap, "more than %d tensor maps", CG_MAX_MAPS), -1;
            if (parse_map(p, len, &maps[*nmaps], w, sizeof w))
                return snprintf(why, cap, "'%.*s': %s", (int)len, p, w), -1;
            (*nmaps)++;
            r = CG_ARG_MAP;
        } else {
            for (int i = 0; i < CG_ARG_ROLES; i++)
                if (strlen(role_names[i]) == len && !strncmp(p, role_names[i], len)) r = i;
            if (r < 0)
                return snprintf(why, cap, "'%.*s': these are not roles (in, in1, in2, in3, out, out1, out2, weights, "
                                          "bias, n%s)", (int)len, p, maps ? ", map:" : ""), -1;
            for (int i = 0; i < *n; i++)
                if ((int)roles[i] == r) return snprintf(why, cap, "'%.*s' given twice", (int)len, p), -1;
        }
        roles[(*n)++] = (cg_arg_role)r;
        p += len;
        if (!*p) return 0;
        if (!*++p) return snprintf(why, cap, "a trailing comma"), -1;
    }
}

int cg_args_parse(const char *text, cg_arg_role *roles, int *n)
{
    char why[200];
    return cg_args_parse_maps(text, roles, n, NULL, NULL, why, sizeof why);
}

int cg_args_bind(const cg_arg_role *roles, int n, void *const *in, int nin, void *const *out, int nout, void *w,
                 void *b, void *count, void *const *maps, int nmaps, void **argv)
{
    if (cg_args_past_inputs(roles, n, nin) >= 0 || cg_args_past_outputs(roles, n, nout) >= 0) return -1;
    int nm = 0;
    for (int i = 0; i < n; i++) {
        if (roles[i] == CG_ARG_MAP && ++nm <= nmaps) continue;
        if ((int)roles[i] < 0 || roles[i] >= CG_ARG_ROLES) return -1;
    }
    nm = 0;
    for (int i = 0; i < n; i++) {
        switch (roles[i]) {
        case CG_ARG_MAP: argv[i] = maps[nm++]; break;
        case CG_ARG_WEIGHTS: argv[i] = w; break;
        case CG_ARG_BIAS: argv[i] = b; break;
        case CG_ARG_N: argv[i] = count; break;
        case CG_ARG_OUT:
        case CG_ARG_OUT1:
        case CG_ARG_OUT2: argv[i] = out[cg_arg_output(roles[i])]; break;
        default: argv[i] = in[cg_arg_input(roles[i])]; break; /* in, in1, in2, in3 */
        }
    }
    return 0;
}

int cg_map_geometry(const cg_mmap *mp, size_t esize, long long images, uint64_t *dims, uint64_t *strides,
                    uint32_t *box, char *why, size_t cap)
{
    uint64_t stride = esize;
    for (int d = 0; d < mp->rank; d++) {
        dims[d] = mp->dims[d] ? (uint64_t)mp->dims[d] : (uint64_t)images;
        box[d] = (uint32_t)mp->box[d];
        if (dims[d] < 1 || dims[d] > (1ULL << 32)) {
            snprintf(why, cap, "dimension %d of %llu elements (1 to 2^32)", d, (unsigned long long)dims[d]);
            return -1;
        }
        if (d > 0) {
            strides[d - 1] = stride;
            if (stride % 16 || stride >= (1ULL << 40)) {
                snprintf(why, cap, "dimension %d's stride of %llu bytes (a multiple of 16 below 2^40)", d,
                         (unsigned long long)stride);
                return -1;
            }
        }
        stride *= dims[d];
    }
    size_t row = (size_t)mp->box[0] * esize;
    if (row % 16 || (mp->swizzle && row > (size_t)mp->swizzle)) {
        snprintf(why, cap, "a box row of %zu bytes (a multiple of 16%s)", row,
                 mp->swizzle ? ", at most the swizzle span" : "");
        return -1;
    }
    return 0;
}

long long cg_map_elems(const cg_mmap *mp)
{
    long long per = 1;
    for (int d = 0; d < mp->rank; d++)
        if (mp->dims[d]) per *= mp->dims[d];
    return per;
}

static const char *map_target_name(cg_arg_role r) { return r == CG_ARG_WEIGHTS ? "weights" : cg_arg_role_name(r); }

void cg_map_text(const cg_mmap *mp, char *buf, size_t cap)
{
    size_t at = (size_t)snprintf(buf, cap, "map:%s:", map_target_name(mp->target));
    for (int d = 0; d < mp->rank && at < cap; d++)
        at += (size_t)(mp->dims[d] ? snprintf(buf + at, cap - at, "%s%lld", d ? "." : "", mp->dims[d])
                                   : snprintf(buf + at, cap - at, "%sn", d ? "." : ""));
    for (int d = 0; d < mp->rank && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%d", d ? "." : ":", mp->box[d]);
    if (at < cap) snprintf(buf + at, cap - at, ":%d", mp->swizzle);
}

/* The extents of a map role's DIMS or BOX field s (up to the next ':' or the end, '.'-separated): at
 * most CG_MAP_RANK, each 1 to hi, or 'n' where n_ok (the last of DIMS: the images, stored as 0).
 * Their count, or -1. *end: past the field. */
static int map_extents(const char *s, const char **end, long long hi, int n_ok, long long *out)
{
    int k = 0;
    for (;;) {
        if (k >= CG_MAP_RANK) return -1;
        if (n_ok && *s == 'n' && (s[1] == ':' || s[1] == '.' || !s[1])) {
            out[k++] = 0;
            s++;
        } else {
            char *e;
            if (*s < '0' || *s > '9') return -1;
            long long v = strtoll(s, &e, 10);
            if (v < 1 || v > hi) return -1;
            out[k++] = v;
            s = e;
        }
        if (*s != '.') break;
        s++;
    }
    for (int i = 0; i + 1 < k; i++)
        if (!out[i]) return -1; /* n only last */
    *end = s;
    return k;
}

/* One role map:TARGET:DIMS:BOX:SWIZZLE (p, len bytes) into *mp: its syntax (what needs the
 * kernel's tensors is checked once the record is read). 0, or -1 with a reason in why. */
static int parse_map(const char *p, size_t len, cg_mmap *mp, char *why, size_t cap)
{
    char t[160];
    if (len >= sizeof t) return snprintf(why, cap, "too long"), -1;
    memcpy(t, p, len);
    t[len] = 0;
    const char *s = t + 4, *colon = strchr(s, ':');
    memset(mp, 0, sizeof *mp);
    mp->target = CG_ARG_ALL_ROLES;
    for (int r = 0; r < CG_ARG_ROLES && colon; r++)
        if (r != CG_ARG_BIAS && r != CG_ARG_N && strlen(role_names[r]) == (size_t)(colon - s) &&
            !strncmp(s, role_names[r], (size_t)(colon - s)))
            mp->target = (cg_arg_role)r;
    if (mp->target == CG_ARG_ALL_ROLES)
        return snprintf(why, cap, "its target is none of in, in1-in3, out, out1, out2, weights"), -1;
    long long dims[CG_MAP_RANK], box[CG_MAP_RANK];
    const char *e;
    int nd = map_extents(colon + 1, &e, 1LL << 32, 1, dims);
    if (nd < 1 || *e != ':')
        return snprintf(why, cap, "its dimensions are not 1 to %d extents of 1 to 2^32 (the last may be n)",
                        CG_MAP_RANK), -1;
    int nb = map_extents(e + 1, &e, 256, 0, box);
    if (nb != nd || *e != ':')
        return snprintf(why, cap, "its box is not %d extents of 1 to 256", nd), -1;
    if (strcmp(e + 1, "0") && strcmp(e + 1, "32") && strcmp(e + 1, "64") && strcmp(e + 1, "128"))
        return snprintf(why, cap, "its swizzle is not 0, 32, 64 or 128"), -1;
    mp->swizzle = atoi(e + 1);
    mp->rank = nd;
    for (int d = 0; d < nd; d++) {
        mp->dims[d] = dims[d];
        mp->box[d] = (int)box[d];
    }
    if ((mp->target == CG_ARG_WEIGHTS) != (dims[nd - 1] != 0))
        return snprintf(why, cap, mp->target == CG_ARG_WEIGHTS ? "weights have no images (n)"
                                                               : "a tensor's last dimension is its images (n)"), -1;
    return 0;
}

/* Whether s is a name the spec and manifest allow for a tensor or layer:
 * letters, digits, '_', '.', '-'. */
static int plain_name(const char *s, size_t n)
{
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-') return 0;
    return 1;
}

/* A kernel's args=: the per-layer roles by name, and the whole-network kernel's
 * t:TENSOR (a tensor declared before), w:LAYER and b:LAYER (a layer record
 * before) and scratch, each with what it names in k->argref. Whether the kernel
 * may take the latter is checked once its whole= is known. */
static int parse_roles(const char *val, const cg_manifest *m, cg_mkernel *k, const char *origin, int ln,
                       cg_err *e)
{
    k->nargs = 0;
    for (const char *p = val;; p++) {
        size_t len = strcspn(p, ",");
        if (!len) return cg_fail(e, "%s:%d: bad value for args: '%s' (an empty role)", origin, ln, val);
        if (k->nargs >= CG_MAX_ARGS)
            return cg_fail(e, "%s:%d: kernel %s takes more than %d arguments", origin, ln, k->name, CG_MAX_ARGS);
        int r = -1, ref = -1;
        for (int i = 0; i < CG_ARG_ROLES; i++)
            if (strlen(role_names[i]) == len && !strncmp(p, role_names[i], len)) r = i;
        if (len == 7 && !strncmp(p, "scratch", 7)) r = CG_ARG_SCRATCH;
        if (len > 4 && !strncmp(p, "map:", 4)) {
            char why[160];
            if (k->nmaps >= CG_MAX_MAPS)
                return cg_fail(e, "%s:%d: kernel %s takes more than %d tensor maps", origin, ln, k->name, CG_MAX_MAPS);
            if (parse_map(p, len, &k->maps[k->nmaps], why, sizeof why))
                return cg_fail(e, "%s:%d: kernel %s: argument '%.*s': %s", origin, ln, k->name, (int)len, p, why);
            r = CG_ARG_MAP;
            ref = k->nmaps++;
        }
        if (r < 0 && len > 2 && p[1] == ':' && (p[0] == 't' || p[0] == 'w' || p[0] == 'b')) {
            char name[CG_NAME_MAX + 16];
            if (len - 2 >= sizeof name || !plain_name(p + 2, len - 2))
                return cg_fail(e, "%s:%d: kernel %s: argument '%.*s' names no tensor or layer", origin, ln, k->name,
                               (int)len, p);
            memcpy(name, p + 2, len - 2);
            name[len - 2] = 0;
            if (p[0] == 't') {
                r = CG_ARG_TENSOR;
                if ((ref = cg_manifest_tensor(m, name)) < 0)
                    return cg_fail(e, "%s:%d: kernel %s: argument t:%s names no tensor declared before it", origin,
                                   ln, k->name, name);
            } else {
                r = p[0] == 'w' ? CG_ARG_LWEIGHTS : CG_ARG_LBIAS;
                for (int i = 0; i < m->nlayers && ref < 0; i++)
                    if (!strcmp(m->l[i].name, name)) ref = i;
                if (ref < 0)
                    return cg_fail(e, "%s:%d: kernel %s: argument %c:%s names no layer declared before it", origin,
                                   ln, k->name, p[0], name);
            }
        }
        if (r < 0) return cg_fail(e, "%s:%d: bad value for args: '%.*s' is no role", origin, ln, (int)len, p);
        for (int i = 0; i < k->nargs; i++)
            if ((int)k->args[i] == r && k->argref[i] == ref)
                return cg_fail(e, "%s:%d: bad value for args: '%.*s' given twice", origin, ln, (int)len, p);
        k->args[k->nargs] = (cg_arg_role)r;
        k->argref[k->nargs++] = ref;
        p += len;
        if (!*p) return 0;
    }
}

int cg_place_parse(const char *s, cg_place *p, char *sym, size_t cap, int *taps)
{
    sym[0] = 0;
    if (strcmp(s, "none") == 0) *p = CG_PLACE_NONE;
    else if (strcmp(s, "arg") == 0) *p = CG_PLACE_ARG;
    else if (strcmp(s, "arg:transposed") == 0) *p = CG_PLACE_ARG_T;
    else if (taps && strncmp(s, "arg:taps:", 9) == 0) {
        char *end;
        long n = strtol(s + 9, &end, 10);
        if (end == s + 9 || *end || n < 1 || n > 4096) return -1;
        *p = CG_PLACE_ARG_TAPS;
        *taps = (int)n;
    }
    else if (taps && strncmp(s, "arg:fft:", 8) == 0) {
        char *end, *end2;
        long fh = strtol(s + 8, &end, 10), fw = *end == 'x' ? strtol(end + 1, &end2, 10) : 0;
        if (end == s + 8 || *end != 'x' || end2 == end + 1 || *end2) return -1;
        if (fh < 2 || fw < 2 || fh > 1024 || fw > 1024) return -1;
        *p = CG_PLACE_ARG_FFT;
        *taps = CG_FFT_SIZES((int)fh, (int)fw);
    }
    else if (strncmp(s, "const:", 6) == 0 && s[6] && strlen(s + 6) < cap) {
        *p = CG_PLACE_CONST;
        strcpy(sym, s + 6);
    } else return -1;
    return 0;
}

int cg_place_reorder(cg_place p, int taps)
{
    /* (arg:fft is no reorder: cg_weights_fft) */
    return p == CG_PLACE_ARG_T ? 1 : p == CG_PLACE_ARG_TAPS ? taps : 0;
}

/* A kernel's `in` list (writes 0: 1 to CG_MAX_INPUTS declared tensors,
 * comma-separated, into k->in) or `out` list (writes 1: 1 to CG_MAX_OUTPUTS
 * distinct declared tensors, into k->outs; k->out the first). */
static int parse_tensors(const char *val, int writes, const cg_manifest *m, cg_mkernel *k, const char *origin,
                         int ln, cg_err *e)
{
    const char *key = writes ? "out" : "in", *verb = writes ? "writes" : "reads";
    int *list = writes ? k->outs : k->in, *count = writes ? &k->nout : &k->nin;
    const int cap = writes ? CG_MAX_OUTPUTS : CG_MAX_INPUTS;
    *count = 0;
    for (const char *p = val;; p++) {
        size_t len = strcspn(p, ",");
        char name[sizeof m->t[0].name];
        if (!len || len >= sizeof name)
            return cg_fail(e, "%s:%d: kernel %s: bad %s list %s=%s", origin, ln, k->name,
                           writes ? "output" : "input", key, val);
        memcpy(name, p, len);
        name[len] = 0;
        if (*count >= cap)
            return cg_fail(e, "%s:%d: kernel %s %s more than %d tensors (%s=%s)", origin, ln, k->name, verb, cap,
                           key, val);
        int t = cg_manifest_tensor(m, name);
        if (t < 0)
            return cg_fail(e, "%s:%d: kernel %s %s '%s', which is no tensor declared before it", origin, ln,
                           k->name, verb, name);
        for (int j = 0; writes && j < *count; j++)
            if (list[j] == t)
                return cg_fail(e, "%s:%d: kernel %s writes '%s' twice (out=%s)", origin, ln, k->name, name, val);
        list[(*count)++] = t;
        p += len;
        if (!*p) {
            if (writes) k->out = k->outs[0];
            return 0;
        }
    }
}

/* A tensor record's view=PARENT:OFF (a, the word) for tensor t: PARENT declared
 * before, no view itself, of t's dtype, elements OFF..OFF+elems-1 inside its
 * image and apart from its other views'. */
static int parse_view(const char *a, const cg_manifest *m, cg_mtensor *t, const char *origin, int ln, cg_err *e)
{
    const char *colon = strrchr(a, ':');
    char parent[sizeof t->name];
    long long off;
    if (strncmp(a, "view=", 5) || !colon || colon - (a + 5) < 1 || (size_t)(colon - (a + 5)) >= sizeof parent ||
        parse_ll(colon + 1, 0, CG_ELEMS_MAX, &off))
        return cg_fail(e, "%s:%d: tensor %s: bad '%s' (expected view=PARENT:OFFSET)", origin, ln, t->name, a);
    memcpy(parent, a + 5, (size_t)(colon - (a + 5)));
    parent[colon - (a + 5)] = 0;
    int p = cg_manifest_tensor(m, parent);
    if (p < 0)
        return cg_fail(e, "%s:%d: tensor %s: view of '%s', which is no tensor declared before it", origin, ln,
                       t->name, parent);
    const cg_mtensor *pt = &m->t[p];
    if (pt->view)
        return cg_fail(e, "%s:%d: tensor %s: view of '%s', itself a view (of '%s')", origin, ln, t->name, parent,
                       m->t[pt->parent].name);
    if (pt->dtype != t->dtype)
        return cg_fail(e, "%s:%d: tensor %s: a %s view of '%s', a %s tensor", origin, ln, t->name,
                       cg_dtype_get(t->dtype)->name, parent, cg_dtype_get(pt->dtype)->name);
    if (off + t->elems > pt->elems)
        return cg_fail(e, "%s:%d: tensor %s: elements %lld..%lld past the %lld of '%s'", origin, ln, t->name, off,
                       off + t->elems - 1, pt->elems, parent);
    for (int i = 0; i < m->ntensors; i++)
        if (m->t[i].view && m->t[i].parent == p && off < m->t[i].view_off + m->t[i].elems && m->t[i].view_off < off + t->elems)
            return cg_fail(e, "%s:%d: tensor %s: its slice of '%s' overlaps that of %s", origin, ln, t->name, parent,
                           m->t[i].name);
    t->view = 1, t->parent = p, t->view_off = off;
    return 0;
}

/* A tensor record's hwc=C.H.W (a, the word) for tensor t: three extents of at least 1
 * whose product is t's elements, given once. */
static int parse_hwc(const char *a, cg_mtensor *t, const char *origin, int ln, cg_err *e)
{
    long long d[3];
    char tail;
    if (t->hwc[0] || sscanf(a + 4, "%lld.%lld.%lld%c", &d[0], &d[1], &d[2], &tail) != 3 || d[0] < 1 || d[1] < 1 ||
        d[2] < 1 || d[0] > CG_ELEMS_MAX || d[1] > CG_ELEMS_MAX || d[2] > CG_ELEMS_MAX)
        return cg_fail(e, "%s:%d: tensor %s: bad '%s' (expected hwc=C.H.W once, each at least 1)", origin, ln, t->name,
                       a);
    if (d[0] * d[1] * d[2] != t->elems)
        return cg_fail(e, "%s:%d: tensor %s: hwc=%lld.%lld.%lld is %lld elements an image, not its %lld", origin, ln,
                       t->name, d[0], d[1], d[2], d[0] * d[1] * d[2], t->elems);
    for (int i = 0; i < 3; i++) t->hwc[i] = (int)d[i];
    return 0;
}

/* One "kernel" record: NAME then key=value fields, all required. */
static int parse_kernel(const char *rest, cg_manifest *m, const char *origin, int ln, cg_err *e)
{
    if (m->nkernels >= CG_MAN_KERNELS) return cg_fail(e, "%s:%d: too many kernels", origin, ln);
    cg_mkernel *k = &m->k[m->nkernels];
    memset(k, 0, sizeof *k);
    k->wdtype = CG_DT_F32;
    if (!word(&rest, k->name, sizeof k->name)) return cg_fail(e, "%s:%d: kernel name", origin, ln);
    int whole = cg_manifest_whole(m);
    if (whole >= 0)
        return cg_fail(e, "%s:%d: kernel %s follows the whole-network kernel %s, which must be the last kernel record",
                       origin, ln, k->name, m->k[whole].name);
    enum { F_LAYER = 1, F_TPL = 2, F_IN = 4, F_OUT = 8, F_GRID = 16, F_BLOCK = 32, F_SHARED = 64,
           F_W = 128, F_B = 256, F_ARGS = 512, F_ALL = 1023, F_PDL = 1024, F_WDT = 2048, /* optional: */
           F_WHOLE = 4096, F_SCRATCH = 8192, F_FEED = 16384 };
    int seen = 0;
    char w[CG_MAN_LINE];
    while (word(&rest, w, sizeof w)) {
        char *eq = strchr(w, '=');
        if (!eq) return cg_fail(e, "%s:%d: expected key=value, got '%s'", origin, ln, w);
        *eq = 0;
        const char *key = w, *val = eq + 1;
        int bad = 0, flag = 0;
        if (!strcmp(key, "layer")) {
            flag = F_LAYER;
            bad = strlen(val) >= sizeof k->layer;
            if (!bad) strcpy(k->layer, val);
        } else if (!strcmp(key, "template")) {
            flag = F_TPL;
            bad = strlen(val) >= sizeof k->tpl;
            if (!bad) strcpy(k->tpl, val);
        } else if (!strcmp(key, "in")) {
            flag = F_IN;
            if (parse_tensors(val, 0, m, k, origin, ln, e)) return -1;
        } else if (!strcmp(key, "out")) {
            flag = F_OUT;
            if (parse_tensors(val, 1, m, k, origin, ln, e)) return -1;
        } else if (!strcmp(key, "grid") || !strcmp(key, "block")) {
            flag = key[0] == 'g' ? F_GRID : F_BLOCK;
            char parts[3][64];
            if (sscanf(val, "%63[^,],%63[^,],%63s", parts[0], parts[1], parts[2]) != 3) bad = 1;
            for (int d = 0; d < 3 && !bad; d++) {
                long long cap = 0;
                if (flag == F_GRID && d == 0 && !strncmp(parts[0], "res:", 4)) {
                    /* as many blocks as are resident at once, at most CAP (whole=1, checked below) */
                    bad = parse_ll(parts[0] + 4, 1, 0x7fffffffLL, &cap);
                    k->res_cap = cap, k->grid[0].mul = cap, k->grid[0].div = 0;
                } else if (flag == F_GRID) bad = parse_dim(parts[d], &k->grid[d]);
                else {
                    long long b = 0;
                    bad = parse_ll(parts[d], 1, 1024, &b);
                    k->block[d] = (int)b;
                }
            }
            if (!bad && flag == F_BLOCK && (long long)k->block[0] * k->block[1] * k->block[2] > 1024)
                bad = 1;
        } else if (!strcmp(key, "shared")) {
            flag = F_SHARED;
            long long v = 0;
            bad = parse_ll(val, 0, 227 * 1024, &v);
            k->shared = (int)v;
        } else if (!strcmp(key, "weights")) {
            flag = F_W;
            bad = cg_place_parse(val, &k->wplace, k->wsym, sizeof k->wsym, &k->wtaps);
        } else if (!strcmp(key, "bias")) {
            flag = F_B;
            bad = cg_place_parse(val, &k->bplace, k->bsym, sizeof k->bsym, NULL);
        } else if (!strcmp(key, "args")) {
            flag = F_ARGS;
            if (seen & F_ARGS) return cg_fail(e, "%s:%d: args given twice", origin, ln);
            if (parse_roles(val, m, k, origin, ln, e)) return -1;
        } else if (!strcmp(key, "pdl")) {
            flag = F_PDL;
            bad = strcmp(val, "0") && strcmp(val, "1");
            k->pdl = !strcmp(val, "1");
        } else if (!strcmp(key, "wdtype")) {
            flag = F_WDT;
            bad = cg_dtype_parse(val, &k->wdtype) || (k->wdtype != CG_DT_F16 && k->wdtype != CG_DT_BF16);
        } else if (!strcmp(key, "whole")) {
            flag = F_WHOLE;
            bad = strcmp(val, "0") && strcmp(val, "1");
            k->whole = !strcmp(val, "1");
        } else if (!strcmp(key, "scratch")) {
            flag = F_SCRATCH;
            bad = parse_ll(val, 1, CG_MAX_SCRATCH, &k->scratch);
        } else if (!strcmp(key, "feed")) {
            flag = F_FEED;
            bad = strcmp(val, "u8") && strcmp(val, "f32");
            k->feed = !strcmp(val, "u8") ? CG_FEED_U8 : CG_FEED_F32;
        } else {
            return cg_fail(e, "%s:%d: unknown kernel field '%s'", origin, ln, key);
        }
        if (bad) return cg_fail(e, "%s:%d: bad value for %s: '%s'", origin, ln, key, val);
        if (seen & flag) return cg_fail(e, "%s:%d: %s given twice", origin, ln, key);
        seen |= flag;
    }
    if ((seen & F_ALL) != F_ALL) return cg_fail(e, "%s:%d: kernel record incomplete", origin, ln);
    /* what only the whole-network kernel may have, and what it must */
    const char *alone = !strcmp(k->layer, "*") ? "layer=*" : k->res_cap ? "grid=res:" : k->scratch ? "scratch=" : NULL;
    if (k->whole && k->feed)
        return cg_fail(e, "%s:%d: kernel %s: feed= is a per-layer kernel's (the whole-network kernel reads pixels)",
                       origin, ln, k->name);
    /* (the pixels are the uint8 tensor; the input record comes after the kernels) */
    for (int j = 0; j < k->nin && k->feed == CG_FEED_F32; j++)
        if (m->t[k->in[j]].dtype == CG_DT_U8 && strcmp(k->tpl, "input_u8"))
            return cg_fail(e, "%s:%d: kernel %s: feed=f32 on a kernel reading the pixels '%s' (only input_u8's may)",
                           origin, ln, k->name, m->t[k->in[j]].name);
    for (int i = 0; i < k->nargs && !alone; i++)
        if (k->args[i] >= CG_ARG_ROLES && k->args[i] != CG_ARG_MAP) alone = "arguments t:, w:, b: and scratch";
    if (k->whole && k->nmaps)
        return cg_fail(e, "%s:%d: kernel %s: the whole-network kernel takes no tensor maps (map:)", origin, ln,
                       k->name);
    for (int j = 0; j < k->nmaps; j++) {
        const cg_mmap *mp = &k->maps[j];
        char txt[160];
        cg_map_text(mp, txt, sizeof txt);
        if (mp->target == CG_ARG_WEIGHTS) {
            if (k->wplace != CG_PLACE_ARG && k->wplace != CG_PLACE_ARG_T && k->wplace != CG_PLACE_ARG_TAPS)
                return cg_fail(e, "%s:%d: kernel %s: %s over weights not placed as an argument (weights=arg, "
                                  "arg:transposed or arg:taps:N)", origin, ln, k->name, txt);
            continue;
        }
        int in = cg_arg_input(mp->target), out = cg_arg_output(mp->target);
        if ((in >= 0 && in >= k->nin) || (out >= 0 && out >= k->nout))
            return cg_fail(e, "%s:%d: kernel %s: %s: the kernel %s %d tensors", origin, ln, k->name, txt,
                           in >= 0 ? "reads" : "writes", in >= 0 ? k->nin : k->nout);
        const cg_mtensor *t = &m->t[in >= 0 ? k->in[in] : k->outs[out]];
        long long per = cg_map_elems(mp);
        if (t->view)
            return cg_fail(e, "%s:%d: kernel %s: %s over '%s', a view (its images lie a parent's image apart)", origin,
                           ln, k->name, txt, t->name);
        if (per != t->elems)
            return cg_fail(e, "%s:%d: kernel %s: %s: its dimensions hold %lld elements an image, '%s' %lld", origin,
                           ln, k->name, txt, per, t->name, t->elems);
        uint64_t dims[CG_MAP_RANK], strides[CG_MAP_RANK];
        uint32_t box[CG_MAP_RANK];
        char why[160];
        if (cg_map_geometry(mp, cg_dtype_size(t->dtype), 1, dims, strides, box, why, sizeof why))
            return cg_fail(e, "%s:%d: kernel %s: %s over %s '%s': %s", origin, ln, k->name, txt,
                           cg_dtype_get(t->dtype)->name, t->name, why);
    }
    if (!k->whole && alone)
        return cg_fail(e, "%s:%d: kernel %s: %s belong to the whole-network kernel alone (whole=1)", origin, ln,
                       k->name, alone);
    if (k->whole && strcmp(k->layer, "*"))
        return cg_fail(e, "%s:%d: kernel %s: the whole-network kernel runs every layer: layer=*, not layer=%s", origin,
                       ln, k->name, k->layer);
    int takes_scratch = 0;
    for (int i = 0; i < k->nargs; i++) takes_scratch |= k->args[i] == CG_ARG_SCRATCH;
    if (k->whole && takes_scratch != (k->scratch > 0))
        return cg_fail(e, "%s:%d: kernel %s: %s", origin, ln, k->name,
                       takes_scratch ? "argument scratch without scratch=BYTES" : "scratch= without an argument scratch");
    if (k->whole && k->nout > 1)
        return cg_fail(e, "%s:%d: kernel %s: the whole-network kernel's out= names one tensor (the predictions; "
                          "the others are its t: arguments)", origin, ln, k->name);
    /* a kernel reads its inputs' images back to back: a view's lie a parent's image apart */
    for (int j = 0; j < k->nin; j++)
        if (m->t[k->in[j]].view)
            return cg_fail(e, "%s:%d: kernel %s reads '%s', a view of '%s' (view=): views are written, not read",
                           origin, ln, k->name, m->t[k->in[j]].name, m->t[m->t[k->in[j]].parent].name);
    for (int j = 0; j < k->nin; j++)
        for (int o = 0; o < k->nout; o++) {
            if (k->in[j] == k->outs[o])
                return cg_fail(e, "%s:%d: kernel %s reads its own output '%s'", origin, ln, k->name,
                               m->t[k->outs[o]].name);
            /* a view and the tensor it lies in (or two views of one) share memory */
            int ri = cg_manifest_root(m, k->in[j]), ro = cg_manifest_root(m, k->outs[o]);
            if (ri == ro && (k->in[j] == ri || k->outs[o] == ro))
                return cg_fail(e, "%s:%d: kernel %s reads '%s' and writes '%s', one memory (view=)", origin, ln,
                               k->name, m->t[k->in[j]].name, m->t[k->outs[o]].name);
        }
    int past = cg_args_past_inputs(k->args, k->nargs, k->nin);
    if (past >= 0)
        return cg_fail(e, "%s:%d: kernel %s: argument role %s names input %d, but the kernel reads %d (in=)",
                       origin, ln, k->name, cg_arg_role_name(k->args[past]), cg_arg_input(k->args[past]) + 1,
                       k->nin);
    past = cg_args_past_outputs(k->args, k->nargs, k->nout);
    if (past >= 0)
        return cg_fail(e, "%s:%d: kernel %s: argument role %s names output %d, but the kernel writes %d (out=)",
                       origin, ln, k->name, cg_arg_role_name(k->args[past]), cg_arg_output(k->args[past]) + 1,
                       k->nout);
    k->layer_index = -1;
    for (int i = 0; i < m->nlayers && !k->whole; i++)
        if (!strcmp(m->l[i].name, k->layer)) k->layer_index = i;
    m->nkernels++;
    return 0;
}

int cg_manifest_parse(const char *text, size_t len, const char *origin, cg_manifest *m, cg_err *e)
{
    memset(m, 0, sizeof *m);
    m->input = m->output = m->predict = -1;
    if (memchr(text, 0, len)) return cg_fail(e, "%s: not a text file", origin);
    int ln = 0;
    const char *p = text, *end = text + len;
    char line[CG_MAN_LINE];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        ln++;
        if (n >= sizeof line) return cg_fail(e, "%s:%d: line too long", origin, ln);
        memcpy(line, p, n);
        line[n] = 0;
        p += n + (nl ? 1 : 0);
        if (!line[0] || line[0] == '#') continue;
        const char *rest = line;
        char kw[32], a[256], b[256], c[256];
        if (!word(&rest, kw, sizeof kw)) return cg_fail(e, "%s:%d: empty record", origin, ln);
        if (ln == 1) {
            if (strcmp(kw, "convgen-manifest") || !word(&rest, a, sizeof a) || strcmp(a, "1"))
                return cg_fail(e, "%s:1: not a convgen manifest (version 1)", origin);
            continue;
        }
        if (!strcmp(kw, "network")) {
            if (!word(&rest, m->network, sizeof m->network))
                return cg_fail(e, "%s:%d: network name", origin, ln);
        } else if (!strcmp(kw, "generator")) {
            continue;
        } else if (!strcmp(kw, "max_batch")) {
            if (!word(&rest, a, sizeof a) || parse_ll(a, 1, 0x7fffffffLL, &m->max_batch))
                return cg_fail(e, "%s:%d: bad max_batch", origin, ln);
        } else if (!strcmp(kw, "bucket")) {
            long long bk;
            if (!word(&rest, a, sizeof a) || parse_ll(a, 1, 1024, &bk) || cg_batch_bucket(bk) != bk)
                return cg_fail(e, "%s:%d: bad bucket (1, 8, 64, 256 or 1024)", origin, ln);
            m->bucket = (int)bk;
        } else if (!strcmp(kw, "tensor")) {
            long long el;
            if (m->ntensors >= CG_MAX_TENSORS) return cg_fail(e, "%s:%d: too many tensors", origin, ln);
            cg_mtensor *t = &m->t[m->ntensors];
            if (!word(&rest, t->name, sizeof t->name) || !word(&rest, b, sizeof b) ||
                !word(&rest, c, sizeof c) || parse_ll(c, 1, CG_ELEMS_MAX, &el))
                return cg_fail(e, "%s:%d: bad tensor record", origin, ln);
            if (cg_dtype_parse(b, &t->dtype))
                return cg_fail(e, "%s:%d: unknown dtype '%s' (u8, f32, i32, f16 or bf16)", origin, ln, b);
            if (cg_manifest_tensor(m, t->name) >= 0)
                return cg_fail(e, "%s:%d: tensor '%s' declared twice", origin, ln, t->name);
            t->elems = el;
            t->view = 0, t->parent = 0, t->view_off = 0;
            t->hwc[0] = t->hwc[1] = t->hwc[2] = 0;
            /* view= first, hwc= anywhere (a word after them is the record's unexpected one) */
            for (int opt = 0; opt < 2; opt++) {
                const char *mark = rest;
                if (!word(&rest, a, sizeof a)) break;
                if (!strncmp(a, "hwc=", 4)) {
                    if (parse_hwc(a, t, origin, ln, e)) return -1;
                } else if (opt == 0) {
                    if (parse_view(a, m, t, origin, ln, e)) return -1;
                } else {
                    rest = mark;
                    break;
                }
            }
            if (t->view && t->hwc[0])
                return cg_fail(e, "%s:%d: tensor %s: a view (view=) cannot be channels-last (hwc=)", origin, ln, t->name);
            m->ntensors++;
        } else if (!strcmp(kw, "layer")) {
            if (m->nlayers >= CG_MAX_LAYERS) return cg_fail(e, "%s:%d: too many layers", origin, ln);
            cg_mlayer *l = &m->l[m->nlayers];
            if (!word(&rest, l->name, sizeof l->name) || !word(&rest, l->op, sizeof l->op) ||
                !word(&rest, a, sizeof a) || (l->out = cg_manifest_tensor(m, a)) < 0)
                return cg_fail(e, "%s:%d: bad layer record", origin, ln);
            l->into[0] = 0;
            if (word(&rest, a, sizeof a)) {
                if (strncmp(a, "into=", 5) || !a[5] || strlen(a + 5) >= sizeof l->into || strcmp(a + 5, m->t[l->out].name))
                    return cg_fail(e, "%s:%d: bad layer record: '%s' (expected into=ITS_TENSOR)", origin, ln, a);
                strcpy(l->into, a + 5);
            }
            m->nlayers++;
        } else if (!strcmp(kw, "kernel")) {
            int had = cg_manifest_whole(m);
            if (parse_kernel(rest, m, origin, ln, e)) {
                /* a second whole-network kernel: say so rather than that it is not last */
                char name[128];
                if (had >= 0 && word(&rest, name, sizeof name) && strstr(rest, " whole=1"))
                    return cg_fail(e, "%s:%d: kernel %s: a second whole-network kernel (%s is one): at most one", origin,
                                   ln, name, m->k[had].name);
                return -1;
            }
        } else if (!strcmp(kw, "input") || !strcmp(kw, "output") || !strcmp(kw, "predict")) {
            int t = word(&rest, a, sizeof a) ? cg_manifest_tensor(m, a) : -1;
            if (t < 0) return cg_fail(e, "%s:%d: %s names no tensor", origin, ln, kw);
            if (kw[0] == 'i') m->input = t;
            else if (kw[0] == 'o') m->output = t;
            else m->predict = t;
        } else if (!strcmp(kw, "hash")) {
            if (!word(&rest, a, sizeof a) || strlen(a) != 16 || strspn(a, "0123456789abcdef") != 16)
                return cg_fail(e, "%s:%d: bad hash", origin, ln);
            strcpy(m->hash, a);
        } else {
            return cg_fail(e, "%s:%d: unknown record '%s'", origin, ln, kw);
        }
        if (word(&rest, a, sizeof a) && strcmp(kw, "kernel"))
            return cg_fail(e, "%s:%d: unexpected '%s'", origin, ln, a);
    }
    if (ln == 0) return cg_fail(e, "%s: empty manifest", origin);
    if (!cg_manifest_layer_kernels(m) || m->input < 0 || m->output < 0 || m->predict < 0 || !m->hash[0] ||
        !m->max_batch)
        return cg_fail(e, "%s: incomplete manifest (kernels, input, output, predict, hash)", origin);
    if (m->t[m->input].dtype != CG_DT_U8 || m->t[m->output].dtype != CG_DT_F32 ||
        m->t[m->predict].dtype != CG_DT_I32)
        return cg_fail(e, "%s: input must be u8, output f32 and predict i32", origin);
    if (m->t[m->input].view || m->t[m->output].view || m->t[m->predict].view)
        return cg_fail(e, "%s: the input, output and predictions must be tensors of their own, not views (view=)",
                       origin);
    if (m->t[m->input].hwc[0] || m->t[m->output].hwc[0] || m->t[m->predict].hwc[0])
        return cg_fail(e, "%s: the input, output and predictions are C x H x W, not channels-last (hwc=)", origin);
    return 0;
}
