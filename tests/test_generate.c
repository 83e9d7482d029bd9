/* test_generate.c — the generator's output for the shipped specs: deterministic,
 * self-describing, a manifest the runtime accepts, and loops really unrolled
 * (the PTX of every conv kernel holds C*K*K fused multiply-adds per output it
 * computes). */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/nvrtc.h" /* by path: a bare "nvrtc.h" finds CUDA's */
#include "check.h"
#include "gen.h"
#include "lua_host.h"
#include "manifest.h"
#include "spec.h"

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The generated kernel serving spec layer `name` with template conv2d_*. */
static const cg_gen_kernel *conv_kernel(const cg_gen_output *o, const char *layer)
{
    for (int i = 0; i < o->nkernels; i++)
        if (!strcmp(o->k[i].layer, layer) && !strncmp(o->k[i].tpl, "conv2d_", 7)) return &o->k[i];
    return NULL;
}

static long long param(const char *src, const char *key)
{
    const char *p = strstr(src, "// params:");
    const char *q = p ? strstr(p, key) : NULL;
    return q ? atoll(q + strlen(key) + 1) : -1;
}

/* Run tests/lua/NAME.lua's returned function; its string result or error in *out. */
static int run_template(const char *name, char *out, size_t n)
{
    cg_lua *h;
    cg_err e;
    int rc = cg_lua_open(&h, "tests/lua", &e);
    if (!rc) rc = cg_lua_import(h, name, &e);
    if (!rc) rc = cg_lua_pcall(h, 0, 1, &e);
    if (!rc) snprintf(out, n, "%s", lua_tostring(cg_lua_state(h), -1) ? lua_tostring(cg_lua_state(h), -1) : "");
    else snprintf(out, n, "%s", e.msg);
    cg_lua_close(h);
    return rc;
}

/* The template engine: statements, values, and errors at the template file's lines. */
static void test_engine(void)
{
    char out[CG_ERR_MAX];
    CHECK(run_template("engine_ok", out, sizeof out) == 0, "engine_ok: %s", out);
    CHECK(!strcmp(out, "a[0] = 0; // row\na[1] = 2; // row\na[2] = 4; // row\nx = 0.5;\n"), "engine output: %s", out);
    CHECK(run_template("engine_bad", out, sizeof out) != 0, "undefined name fails");
    CHECK(strstr(out, "tests/lua/engine_bad.lua:6: template uses undefined name 'missing_name'"), "got: %s", out);
    CHECK(run_template("engine_syntax", out, sizeof out) != 0, "syntax error fails");
    CHECK(strstr(out, "tests/lua/engine_syntax.lua:6:"), "got: %s", out);
}

int main(void)
{
    test_engine();
    glob_t g;
    CHECK(glob("specs/*.yaml", 0, NULL, &g) == 0 && g.gl_pathc >= 4, "four shipped specs");
    cg_nvrtc *nv = NULL;
    cg_err ne;
    int have_nvrtc = cg_nvrtc_open(&nv, &ne) == 0;
    CHECK(have_nvrtc, "NVRTC is needed for the unroll check: %s", ne.msg);
    cg_spec *s = malloc(sizeof *s);
    cg_gen_output *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    cg_manifest *m = malloc(sizeof *m);
    for (size_t f = 0; f < g.gl_pathc && s && a && b && m; f++) {
        const char *path = g.gl_pathv[f];
        cg_err e;
        if (cg_spec_load(path, s, &e)) {
            CHECK(0, "%s: %s", path, e.msg);
            continue;
        }
        int ra = cg_generate(s, "convgen generate X -o DIR", a, &e);
        CHECK(ra == 0, "%s: %s", path, e.msg);
        if (ra) continue;
        int rb = cg_generate(s, "convgen generate X -o DIR", b, &e);
        CHECK(rb == 0, "%s: second run: %s", path, e.msg);
        /* byte-identical across runs */
        CHECK(rb == 0 && a->nkernels == b->nkernels && !strcmp(a->manifest, b->manifest) && !strcmp(a->hash, b->hash),
              "%s: two runs give the same manifest", path);
        for (int i = 0; rb == 0 && i < a->nkernels && i < b->nkernels; i++)
            CHECK(a->k[i].source_len == b->k[i].source_len && !memcmp(a->k[i].source, b->k[i].source, a->k[i].source_len),
                  "%s: %s identical across runs", path, a->k[i].file);
        /* the manifest the runtime reads */
        int rm = cg_manifest_parse(a->manifest, a->manifest_len, path, m, &e);
        CHECK(rm == 0, "%s: manifest: %s", path, e.msg);
        if (!rm) {
            CHECK(m->nlayers == s->nlayers, "%s: one manifest layer per spec layer", path);
            CHECK(!strcmp(m->hash, a->hash), "%s: manifest carries the build hash", path);
            CHECK(m->t[m->output].elems == cg_layer_out_elems(&s->layers[s->nlayers - 1]), "%s: output size", path);
            for (int l = 0; l < s->nlayers && l < m->nlayers; l++)
                CHECK(m->t[m->l[l].out].elems == cg_layer_out_elems(&s->layers[l]), "%s: layer %s output elements",
                      path, s->layers[l].name);
        }
        /* headers: who made the file and how to make it again */
        for (int i = 0; i < a->nkernels; i++) {
            const char *src = a->k[i].source;
            CHECK(strstr(src, "do not edit") && strstr(src, "// spec:       ") && strstr(src, path) &&
                      strstr(src, "// template:   ") && strstr(src, ", hash ") && strstr(src, "// params:") &&
                      strstr(src, "// regenerate: ") && strstr(src, CG_VERSION),
                  "%s: %s header names spec, template, hash, params, version, command", path, a->k[i].file);
            char want[200];
            snprintf(want, sizeof want, "%s.cu", a->k[i].kernel);
            CHECK(!strcmp(want, a->k[i].file), "%s: file named after kernel %s", path, a->k[i].kernel);
            snprintf(want, sizeof want, "\n%s(", a->k[i].kernel);
            CHECK(strstr(src, want) != NULL, "%s: kernel %s defined under its name", path, a->k[i].kernel);
        }
        /* every conv's C x K x K loops unrolled: at least C*K*K fma per output computed */
        for (int l = 0; have_nvrtc && l < s->nlayers; l++) {
            const cg_layer *ly = &s->layers[l];
            if (ly->op != CG_OP_CONV) continue;
            const cg_gen_kernel *k = conv_kernel(a, ly->name);
            CHECK(k != NULL, "%s: a conv kernel for %s", path, ly->name);
            /* only direct unrolls the whole reduction; igemm's loop over slices stays a loop */
            if (!k || strcmp(k->tpl, "conv2d_direct")) continue;
            long long mu = param(k->source, "maps_unroll");
            CHECK(mu >= 1, "%s: maps_unroll in header", path);
            cg_buf ptx, log;
            cg_buf_init(&ptx), cg_buf_init(&log);
            int rc = cg_nvrtc_compile(nv, k->source, k->file, 90, 1, &ptx, &log, NULL, &e);
            CHECK(rc == 0, "%s: PTX of %s: %s", path, k->file, e.msg);
            if (!rc) {
                int fma = count(ptx.data, "fma.rn.f32");
                long long need = (long long)ly->C * ly->K * ly->K * mu;
                CHECK(fma >= need, "%s: %s has %d fma, want >= %lld (C*K*K per output, %lld outputs)", path,
                      k->file, fma, need, mu);
            }
            cg_buf_free(&ptx), cg_buf_free(&log);
        }
        cg_gen_free(a);
        if (rb == 0) cg_gen_free(b);
    }
    free(s), free(a), free(b), free(m);
    if (nv) cg_nvrtc_close(nv);
    globfree(&g);
    return cg_test_done("generate");
}
