/* fuzz_bundle_sections.c — bundles whose CRCs and layout are valid and whose
 * sections are hostile: the input is the four sections (manifest, fat binary,
 * weights, spec) separated by FUZZ_SEP, encoded by cg_bundle_encode so that
 * every CRC matches, then read back as `convgen run` and `convgen info` read
 * a bundle: cg_net_bundle_load (the spec parsed from its section, the weights
 * checked against it), the manifest parsed, the fat binary listed, and a
 * bundle that loads and is small (fuzz_net.h) opened on the CPU backend and
 * run on two images. No memory error, every rejection one line, the sections
 * read back byte for byte, predictions classes of the network. Seeds: bundles
 * of the small specs in specs/ and bench/specs/ (their generated manifest,
 * seeded random weights as F32 and F16) and a built-in one. */
#include "bundle.h"
#include "convgen.h"
#include "fatbin.h"
#include "fuzz_net.h"
#include "gen.h"
#include "manifest.h"
#include "net_internal.h"
#include "op.h"
#include "weights.h"

#include <glob.h>
#include <omp.h>

#define FUZZ_SEP "\n@@cgb-section@@\n"
#define FUZZ_SEP_LEN (sizeof FUZZ_SEP - 1)

static char path[4096];

/* Little-endian stores for the seed's fat binary. */
static void le(unsigned char *p, unsigned long long v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A fat binary (the layout fatbin.h describes) holding one sm_75 cubin entry
 * and PTX for 75, into b; returns its length. */
static size_t seed_fatbin(unsigned char *b)
{
    static const char elf[] = "\177ELF fake cubin payload", ptx[] = ".version 8.5\n.target sm_75\n";
    size_t n = 16;
    const struct { int kind, hsize; const char *p; size_t len; } ent[2] = {{2, 64, elf, sizeof elf},
                                                                            {1, 80, ptx, sizeof ptx}};
    for (int i = 0; i < 2; i++) {
        unsigned char *p = b + n;
        memset(p, 0, (size_t)ent[i].hsize);
        le(p, (unsigned)ent[i].kind, 2);
        le(p + 2, 0x0101, 2);
        le(p + 4, (unsigned)ent[i].hsize, 4);
        le(p + 8, ent[i].len, 8);
        le(p + 24, ent[i].kind == 1 ? 5 : 1, 2);
        le(p + 26, ent[i].kind == 1 ? 8 : 7, 2);
        le(p + 28, 75, 4);
        memcpy(p + ent[i].hsize, ent[i].p, ent[i].len);
        n += (size_t)ent[i].hsize + ent[i].len;
    }
    le(b, CG_FATBIN_MAGIC, 4);
    le(b + 4, 1, 2);
    le(b + 6, 16, 2);
    le(b + 8, n - 16, 8);
    return n;
}

/* Appends n bytes to out, aborting when memory runs out. */
static void append(cg_buf *out, const void *p, size_t n)
{
    if (cg_buf_add(out, p, n)) abort();
}

/* One seed from the spec text: its generated manifest, the fat binary above,
 * its seeded random weights as dtype, the text itself. 0 when the spec is
 * too large to make a small seed of, or is refused. */
static int seed_of(const char *dir, const char *name, const char *text, size_t len, cg_wdtype dtype)
{
    static cg_spec s;
    static cg_gen_output o;
    cg_err e;
    if (cg_spec_parse(name, text, len, &s, &e) || !fuzz_net_small(&s)) return 0;
    long long params = 0;
    for (int i = 0; i < s.nlayers; i++) {
        long long rows, fan_in;
        if (cg_op_weights(&s.layers[i], &rows, &fan_in)) params += rows * fan_in + rows;
    }
    if (params > 6000) return 0;
    s.weights[0] = 0;
    cg_weights w;
    cg_buf wb, out;
    cg_buf_init(&wb), cg_buf_init(&out);
    memset(&o, 0, sizeof o);
    if (cg_generate(&s, "fuzz seed", &o, &e) || cg_weights_for_spec(&s, &w, &e) ||
        cg_weights_encode(name, &w, dtype, &wb, &e)) {
        fprintf(stderr, "seed %s: %s\n", name, e.msg);
        exit(1);
    }
    unsigned char fat[512];
    size_t fatlen = seed_fatbin(fat);
    append(&out, o.manifest, o.manifest_len);
    append(&out, FUZZ_SEP, FUZZ_SEP_LEN);
    append(&out, fat, fatlen);
    append(&out, FUZZ_SEP, FUZZ_SEP_LEN);
    append(&out, wb.data, wb.len);
    append(&out, FUZZ_SEP, FUZZ_SEP_LEN);
    append(&out, text, len);
    char file[512];
    const char *base = strrchr(name, '/');
    snprintf(file, sizeof file, "%s-%s.in", base ? base + 1 : name, dtype == CG_W_F16 ? "f16" : "f32");
    fuzz_seed(dir, file, out.data, out.len);
    cg_gen_free(&o);
    cg_weights_free(&w);
    cg_buf_free(&wb), cg_buf_free(&out);
    return 1;
}

static void write_seeds(const char *dir)
{
    static const char tiny[] =
        "network: tiny\ninput: {channels: 1, height: 8, width: 8, scale: 0.0039, offset: 0}\nseed: 3\n"
        "layers:\n"
        "  - {name: conv1, op: conv, M: 4, K: 3, bias: true, activation: tanh, pool: max2}\n"
        "  - {name: fc1, op: fc, out: 5, bias: true, activation: relu}\n"
        "  - {name: prob, op: softmax}\n";
    int n = seed_of(dir, "tiny.yaml", tiny, sizeof tiny - 1, CG_W_F32);
    n += seed_of(dir, "tiny.yaml", tiny, sizeof tiny - 1, CG_W_F16);
    glob_t g;
    if (glob("specs/*.yaml", 0, NULL, &g) == 0) {
        glob("bench/specs/*.yaml", GLOB_APPEND, NULL, &g);
        for (size_t i = 0; i < g.gl_pathc; i++) {
            cg_buf t;
            cg_err e;
            if (cg_read_file(g.gl_pathv[i], &t, &e)) continue;
            n += seed_of(dir, g.gl_pathv[i], t.data, t.len, CG_W_F16);
            cg_buf_free(&t);
        }
        globfree(&g);
    }
    if (n < 2) {
        fprintf(stderr, "seeds: the built-in spec was refused\n");
        exit(1);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    omp_set_num_threads(1); /* two cores are shared: one thread per harness */
    fuzz_scratch(path, sizeof path, "s.cgb");
    const char *dir = fuzz_seed_dir();
    if (dir) {
        write_seeds(dir);
        exit(0);
    }
    return 0;
}

/* The first FUZZ_SEP in p .. end, or NULL. */
static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end)
{
    for (; (size_t)(end - p) >= FUZZ_SEP_LEN; p++)
        if (*p == FUZZ_SEP[0] && !memcmp(p, FUZZ_SEP, FUZZ_SEP_LEN)) return p;
    return NULL;
}

/* Whether a and b hold the same bytes (either may be empty). */
static int same(const cg_blob *a, const cg_blob *b)
{
    return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the four sections: FUZZ_SEP between them, the last one takes the rest */
    cg_blob sec[CG_BUNDLE_NSECTIONS];
    const uint8_t *p = data, *end = data + size;
    for (int k = 0; k < CG_BUNDLE_NSECTIONS; k++) {
        const uint8_t *q = k + 1 < CG_BUNDLE_NSECTIONS ? find_sep(p, end) : NULL;
        sec[k].data = p;
        sec[k].len = (size_t)((q ? q : end) - p);
        p = q ? q + FUZZ_SEP_LEN : end;
    }
    cg_buf file;
    cg_buf_init(&file);
    cg_err e = {{0}};
    if (cg_bundle_encode("fuzz.cgb", sec, &file, &e)) {
        fprintf(stderr, "cg_bundle_encode: %s\n", e.msg);
        abort();
    }
    cg_blob back[CG_BUNDLE_NSECTIONS];
    if (cg_bundle_parse("fuzz.cgb", file.data, file.len, back, &e)) {
        fprintf(stderr, "cg_bundle_parse refused what cg_bundle_encode wrote: %s\n", e.msg);
        abort();
    }
    for (int k = 0; k < CG_BUNDLE_NSECTIONS; k++)
        if (!same(&sec[k], &back[k])) {
            fprintf(stderr, "section %s does not read back\n", cg_bundle_section_name(k));
            abort();
        }
    fuzz_write(path, file.data, file.len);
    cg_buf_free(&file);
    if (!cg_is_bundle_path(path)) {
        fprintf(stderr, "%s is not seen as a bundle\n", path);
        abort();
    }

    /* each section's reader on its own, whatever the others hold */
    static cg_manifest m;
    if (cg_manifest_parse(sec[CG_BUNDLE_MANIFEST].data, sec[CG_BUNDLE_MANIFEST].len, "fuzz.cgb (manifest)", &m, &e))
        fuzz_check_err(&e, "cg_manifest_parse");
    int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm, nptx;
    if (cg_fatbin_list(sec[CG_BUNDLE_FATBIN].data, sec[CG_BUNDLE_FATBIN].len, sm, &nsm, ptx, &nptx, &e))
        fuzz_check_err(&e, "cg_fatbin_list");
    cg_weights w;
    if (cg_weights_parse("fuzz.cgb (weights)", sec[CG_BUNDLE_WEIGHTS].data, sec[CG_BUNDLE_WEIGHTS].len, &w, &e))
        fuzz_check_err(&e, "cg_weights_parse");
    else
        cg_weights_free(&w);

    /* the bundle as the commands load it */
    cg_net_bundle nb;
    if (cg_net_bundle_load(path, &nb, &e)) {
        fuzz_check_err(&e, "cg_net_bundle_load");
        cg_net_bundle_free(&nb);
        return 0;
    }
    if (fuzz_net_small(nb.s)) {
        cg_net_options o;
        cg_net_options_init(&o);
        cg_net *net = NULL;
        cg_status st = cg_net_open_bundle_with(&nb, &o, &net);
        if (st) {
            fprintf(stderr, "cg_net_open_bundle_with (cpu) refused a bundle that loaded: %s\n", cg_net_error(net));
            abort();
        }
        const cg_spec *s = nb.s;
        size_t img = (size_t)s->C * s->H * s->W;
        unsigned char *px = malloc(2 * img);
        if (!px) abort();
        for (size_t i = 0; i < 2 * img; i++) px[i] = (unsigned char)(i * 131 + size);
        int pred[2];
        cg_input in = {CG_INPUT_U8, 2, s->C, s->H, s->W, px};
        if (cg_net_run(net, &in, pred, NULL)) {
            fprintf(stderr, "cg_net_run (cpu) failed on a bundle that loaded: %s\n", cg_net_error(net));
            abort();
        }
        fuzz_check_pred(s, pred, 2, "cg_net_run");
        free(px);
        cg_net_close(net);
    }
    cg_net_bundle_free(&nb);
    return 0;
}
