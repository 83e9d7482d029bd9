/* test_template_files.c — where templates live: grouped by the op table's
 * families (templates/conv2d/, templates/fc/), the rest in templates/ops/, the
 * shared code in templates/lib/; template names stay as they were ("conv2d_direct"
 * lives in templates/conv2d/direct.lua). cg_template_path is the one rule; the
 * loader, the generator's messages and the tuner's list follow it. And every
 * template takes its element types from common.types (test_element_types). */
#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "aot.h"
#include "check.h"
#include "gen.h"
#include "lua_host.h"
#include "op.h"
#include "spec.h"
#include "tune.h"

/* Whether folder is one a template file may lie in: a family's (its prefix
 * without the underscore), ops or lib. */
static int known_folder(const char *folder, size_t n)
{
    if ((n == 3 && !strncmp(folder, "ops", 3)) || (n == 3 && !strncmp(folder, "lib", 3))) return 1;
    for (int op = 0; op < CG_OP_COUNT; op++) {
        const char *fam = cg_ops[op].family;
        if (fam && strlen(fam) == n + 1 && !strncmp(folder, fam, n)) return 1;
    }
    return 0;
}

/* Every embedded file lies in a family folder, ops/ or lib/ (none loose in
 * templates/), names a template whose file is that path, and is served under
 * that name; templates/ on disk holds no loose .lua file and every .lua file in
 * its folders is embedded. */
static void test_layout(void)
{
    cg_lua *h;
    cg_err e = {{0}};
    CHECK(cg_lua_open(&h, NULL, &e) == 0, "open: %s", e.msg);
    int n = 0;
    for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++, n++) {
        const char *rel = f->path + strlen("templates/"), *slash = strchr(rel, '/');
        CHECK(!strncmp(f->path, "templates/", 10) && slash && known_folder(rel, (size_t)(slash - rel)) &&
                  !strchr(slash + 1, '/'),
              "%s: not in a family folder, ops/ or lib/", f->path);
        char name[128], back[192];
        if (cg_template_name(f->path, name, sizeof name) <= 0) {
            CHECK(0, "%s names no template", f->path);
            continue;
        }
        CHECK(cg_template_path(NULL, name, back, sizeof back) > 0 && !strcmp(back, f->path), "%s -> %s -> %s",
              f->path, name, back);
        size_t len = 0;
        CHECK(h && cg_lua_template_text(h, name, &len) == f->data && len == f->len, "%s served as %s", f->path, name);
    }
    int on_disk = 0, loose = 0;
    DIR *top = opendir("templates");
    CHECK(top != NULL, "templates/ readable");
    for (struct dirent *de; top && (de = readdir(top));) {
        if (de->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "templates/%s", de->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            loose += strlen(p) > 4 && !strcmp(p + strlen(p) - 4, ".lua");
            CHECK(0, "%s: loose in templates/ (templates go in conv2d/, fc/, ops/ or lib/)", p);
            continue;
        }
        DIR *d = opendir(p);
        for (struct dirent *fe; d && (fe = readdir(d));)
            on_disk += strlen(fe->d_name) > 4 && !strcmp(fe->d_name + strlen(fe->d_name) - 4, ".lua");
        if (d) closedir(d);
    }
    if (top) closedir(top);
    CHECK(loose == 0 && on_disk == n, "%d template files in templates/*/, %d embedded (rebuild?)", on_disk, n);
    printf("ok %d template files, each in its folder\n", n);
    cg_lua_close(h);
}

/* The rule, both ways: a family prefix picks the folder, '/' names are paths
 * below the directory, everything else is in ops/; names that would reach a
 * file twice, loose files and paths the rule never gives are refused. */
static void test_rule(void)
{
    static const char *const map[][2] = {
        {"conv2d_direct", "templates/conv2d/direct.lua"},   {"conv2d_igemm_tc", "templates/conv2d/igemm_tc.lua"},
        {"fc_vec", "templates/fc/vec.lua"},                 {"softmax", "templates/ops/softmax.lua"},
        {"input_u8", "templates/ops/input_u8.lua"},         {"lib/engine", "templates/lib/engine.lua"},
        {"conv2d_nosuch", "templates/conv2d/nosuch.lua"},
    };
    char out[256], name[128];
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        int k = cg_template_path(NULL, map[i][0], out, sizeof out);
        CHECK(k == (int)strlen(map[i][1]) && !strcmp(out, map[i][1]), "%s -> %s (%d)", map[i][0], out, k);
        k = cg_template_name(map[i][1], name, sizeof name);
        CHECK(k == (int)strlen(map[i][0]) && !strcmp(name, map[i][0]), "%s -> %s (%d)", map[i][1], name, k);
    }
    CHECK(cg_template_path("tests/lua", "counter", out, sizeof out) > 0 && !strcmp(out, "tests/lua/ops/counter.lua"),
          "another directory: %s", out);
    CHECK(cg_template_path("/", "fc_gemv", out, sizeof out) > 0 && !strcmp(out, "/fc/gemv.lua"), "root: %s", out);
    static const char *const bad_names[] = {"conv2d/direct", "ops/softmax", "fc/vec", "../x", "", "Softmax", "a//b"};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++)
        CHECK(cg_template_path(NULL, bad_names[i], out, sizeof out) == -1, "'%s' is not a template name", bad_names[i]);
    CHECK(cg_template_path(NULL, "conv2d_direct", out, 27) == -1 &&
              cg_template_path(NULL, "conv2d_direct", out, 28) == 27,
          "the length counts");
    static const char *const bad_paths[] = {"templates/softmax.lua",     "templates/conv2d_direct.lua",
                                            "templates/ops/conv2d_x.lua", "templates/conv2d/direct.txt",
                                            "templates/ops/conv2d/direct.lua", "tests/lua/ops/counter.lua"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof *bad_paths; i++)
        CHECK(cg_template_name(bad_paths[i], name, sizeof name) == -1, "%s holds no template", bad_paths[i]);
}

/* The loader finds a family template in its folder only; a missing one's error
 * names the file looked for; the tuner lists exactly templates/conv2d/'s files. */
static void test_lookup(void)
{
    cg_lua *h;
    cg_err e = {{0}};
    CHECK(cg_lua_open(&h, NULL, &e) == 0, "open: %s", e.msg);
    if (h) {
        CHECK(cg_lua_template_exists(h, "conv2d_direct") && cg_lua_template_exists(h, "fc_gemv") &&
                  cg_lua_template_exists(h, "argmax"),
              "family and ops templates found");
        CHECK(!cg_lua_template_exists(h, "conv2d/direct") && !cg_lua_template_exists(h, "ops/argmax") &&
                  !cg_lua_template_exists(h, "conv2d_nosuch"),
              "no second name for a file, no missing template");
        cg_lua_close(h);
    }
    cg_spec *s = malloc(sizeof *s);
    if (!s || cg_spec_load("specs/example-conv.yaml", s, &e)) {
        CHECK(0, "example-conv: %s", s ? e.msg : "no memory");
        free(s);
        return;
    }
    char why[256];
    CHECK(cg_gen_check_one(s, 0, "conv2d_nosuch", "", why, sizeof why, &e) == -1, "a missing template");
    CHECK_CONTAINS(e.msg, "no template 'conv2d_nosuch' (templates/conv2d/nosuch.lua)");
    CHECK(cg_gen_check_one(s, 0, "conv2d/direct", "", why, sizeof why, &e) == -1, "a path is no template name");
    CHECK_CONTAINS(e.msg, "no template 'conv2d/direct' (not a template name)");

    /* the strategies: one per file of templates/conv2d/, read from disk here */
    const char *const *t = cg_tune_templates(&s->layers[0]);
    int n = 0;
    while (t[n]) n++;
    int found = 0, files = 0;
    DIR *d = opendir("templates/conv2d");
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".lua")) continue;
        files++;
        char want[128];
        snprintf(want, sizeof want, "conv2d_%.*s", (int)(len - 4), de->d_name);
        for (int i = 0; i < n; i++) found += !strcmp(t[i], want);
    }
    if (d) closedir(d);
    CHECK(files == 11 && n == files && found == files, "strategies: %d listed, %d files, %d matched", n, files, found);
    free(s);
}

/* The first identifier in CUDA source src, outside comments and string
 * literals, that names an FP32 C type: float or a vector of it (float2,
 * float4, ...). Its line (1-based) and the identifier into tok; 0 when none.
 * make_float4, __float_as_uint and the like are identifiers of their own (FP32
 * math a template may need) and do not count. */
static int fp32_type_line(const char *src, char *tok, size_t n)
{
    int line = 1;
    for (const char *c = src; *c;) {
        if (*c == '\n') line++, c++;
        else if (c[0] == '/' && c[1] == '/') {
            while (*c && *c != '\n') c++;
        } else if (c[0] == '/' && c[1] == '*') {
            for (c += 2; *c && !(c[0] == '*' && c[1] == '/'); c++) line += *c == '\n';
            if (*c) c += 2;
        } else if (*c == '"') {
            for (c++; *c && *c != '"'; c++) {
                if (*c == '\\' && c[1]) c++;
                line += *c == '\n';
            }
            if (*c) c++;
        } else if (isalpha((unsigned char)*c) || *c == '_' || isdigit((unsigned char)*c)) {
            const char *b = c;
            while (isalnum((unsigned char)*c) || *c == '_' || (isdigit((unsigned char)*b) && *c == '.')) c++;
            size_t len = (size_t)(c - b), k = 5;
            if (len >= 5 && !strncmp(b, "float", 5)) {
                while (k < len && isdigit((unsigned char)b[k])) k++;
                if (k == len) {
                    snprintf(tok, n, "%.*s", (int)len, b);
                    return line;
                }
            }
        } else c++;
    }
    return 0;
}

/* Run Lua chunk `code` in h's sandbox. */
static int run_chunk(cg_lua *h, const char *code, cg_err *e)
{
    lua_State *L = cg_lua_state(h);
    if (luaL_loadstring(L, code) != LUA_OK) {
        snprintf(e->msg, sizeof e->msg, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    return cg_lua_pcall(h, 0, 0, e);
}

/* Every template takes its element types from common.types (templates/lib/
 * common.lua): none writes the C type `float` for a tensor pointer, a tensor
 * element, an accumulator or a staged value. Scanning the templates' Lua text
 * would have to tell comments, Lua code and CUDA text apart, and template
 * expressions from literal text; instead the test generates kernels with the
 * names changed: common.DTYPES' f32 row names the C type ELEM_T, the
 * accumulator (common.ACC) is ACC_T, conversions between the two are calls
 * (CVT_ACC_T(e), CVT_ELEM_T(e)) and the vector types ELEM_T_X4 and the like. A
 * template that took its types from common.types writes no `float` at all
 * then (outside comments); one that wrote `float` itself still does, and the
 * line names it. Every kernel of every shipped and layer spec (and of a
 * spec with an fc_tiled layer) is generated so, for the default target, sm_80
 * (conv2d_igemm_tc), sm_90 (the wgmma templates) and one image (fc_gemv), and
 * every template under templates/conv2d, fc and ops must have
 * been among them (a new template needs a spec that uses it). FP32 itself
 * comes out byte-identical either way: tools/gen-compare.sh checks that. */
static void test_element_types(void)
{
    static const char patch[] =
        "local common = import('lib/common')\n"
        "common.DTYPES.f32 = { c = 'ELEM_T', size = 4 }\n"
        "common.ACC = 'ACC_T'\n"
        "common.convert = function(from, to, e)\n"
        "  if from == to then return e end\n"
        "  return 'CVT_' .. to:gsub(' ', '_') .. '(' .. e .. ')'\n"
        "end\n"
        "common.vec_t = function(c, w) if w == 1 then return c end return c .. '_X' .. w end\n";
    static cg_spec s;
    cg_lua *h;
    cg_err e = {{0}};
    int rc = cg_lua_open(&h, NULL, &e);
    CHECK(rc == 0, "open: %s", e.msg);
    if (rc) return;
    rc = run_chunk(h, patch, &e);
    CHECK(rc == 0, "patch common: %s", e.msg);
    lua_State *L = cg_lua_state(h);
    rc = rc ? rc : cg_lua_import(h, "lib/planner", &e);
    CHECK(rc == 0, "import lib/planner: %s", e.msg);
    if (rc) {
        cg_lua_close(h);
        return;
    }
    char seen[4096] = " ";
    int kernels = 0;
    glob_t g;
    int gr = glob("specs/*.yaml", 0, NULL, &g);
    if (gr == 0 || gr == GLOB_NOMATCH) gr = glob("tests/gpu/*.yaml", GLOB_APPEND, NULL, &g);
    CHECK(gr == 0 && g.gl_pathc > 10, "specs to generate: %zu", gr == 0 ? g.gl_pathc : 0);
    /* and one of fc_tiled, which no auto choice and no shipped spec picks */
    static const char extra[] = "network: types-extra\n"
                                "input: {channels: 2, height: 6, width: 6, scale: 1, offset: 0}\n"
                                "layers:\n"
                                "  - {name: f1, op: fc, out: 12, bias: true, activation: relu, strategy: tiled}\n"
                                "  - {name: prob, op: softmax}\n";
    size_t nspecs = gr == 0 ? g.gl_pathc + 1 : 0;
    for (size_t i = 0; i < nspecs; i++) {
        const char *path = i < g.gl_pathc ? g.gl_pathv[i] : "types-extra.yaml";
        if (i < g.gl_pathc ? cg_spec_load(path, &s, &e) : cg_spec_parse(path, extra, strlen(extra), &s, &e)) {
            CHECK(0, "%s", e.msg);
            continue;
        }
        /* the renamed FP32 type is what this checks: 16-bit networks (their own types and
         * the half prelude's conversions) are test_emulate's and test_kernels_compile's; they
         * are generated for sm_90 only to count their templates as seen (fc_mma takes 16-bit
         * layers alone) */
        const int half = s.precision == CG_PREC_BF16 || s.precision == CG_PREC_FP16;
        /* the default target, sm_80, sm_90 and one image (fc_gemv, direct's map splits) */
        for (int t = half ? 2 : 0; t < (half ? 3 : 4); t++) {
            cg_target tg;
            cg_target_default(&tg);
            if (t == 1) tg.cc = 80;
            if (t == 2) cg_aot_target((int[]){90}, 1, &tg);
            if (t == 3) tg.batch = 1;
            lua_getfield(L, -1, "generate");
            cg_gen_push_net(L, &s, &tg);
            if (cg_lua_pcall(h, 1, 2, &e)) {
                CHECK(0, "%s (target %d): %s", path, t, e.msg);
                continue;
            }
            if (!lua_istable(L, -2)) { /* a refusal for this target */
                lua_pop(L, 2);
                continue;
            }
            lua_getfield(L, -2, "kernels");
            for (lua_Integer k = 1; lua_rawgeti(L, -1, k) == LUA_TTABLE; k++) {
                lua_getfield(L, -1, "name");
                lua_getfield(L, -2, "template");
                lua_getfield(L, -3, "source");
                const char *name = lua_tostring(L, -3), *tpl = lua_tostring(L, -2), *src = lua_tostring(L, -1);
                char tok[32] = "", word[80];
                int line = src && !half ? fp32_type_line(src, tok, sizeof tok) : 0;
                CHECK(line == 0, "%s (%s, from %s): `%s` at line %d of the kernel: take the type from common.types",
                      name ? name : "?", tpl ? tpl : "?", path, tok, line);
                CHECK(half || (src && strstr(src, "ELEM_T")), "%s (%s): no element type from common.types",
                      name ? name : "?", tpl ? tpl : "?");
                snprintf(word, sizeof word, " %s ", tpl ? tpl : "?");
                if (!strstr(seen, word) && strlen(seen) + strlen(word) < sizeof seen)
                    strcat(seen, word + 1);
                kernels += !half;
                lua_pop(L, 4);
            }
            lua_pop(L, 4);
        }
    }
    if (gr == 0) globfree(&g);
    CHECK(kernels > 100, "%d kernels generated", kernels);
    /* every template of a family folder or ops/ was generated */
    for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++) {
        char name[64], word[80];
        if (cg_template_name(f->path, name, sizeof name) < 0 || strchr(name, '/')) continue;
        snprintf(word, sizeof word, " %s ", name);
        CHECK(strstr(seen, word), "template %s: no spec generated a kernel of it", name);
    }
    cg_lua_close(h);
}

int main(void)
{
    test_layout();
    test_rule();
    test_lookup();
    test_element_types();
    return cg_test_done("test_template_files");
}
