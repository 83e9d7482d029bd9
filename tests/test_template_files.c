/* test_template_files.c — where templates live: grouped by the op table's
 * families (templates/conv2d/, templates/fc/), the rest in templates/ops/, the
 * shared code in templates/lib/; template names stay as they were ("conv2d_direct"
 * lives in templates/conv2d/direct.lua). cg_template_path is the one rule; the
 * loader, the generator's messages and the tuner's list follow it. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    CHECK(files == 8 && n == files && found == files, "strategies: %d listed, %d files, %d matched", n, files, found);
    free(s);
}

int main(void)
{
    test_layout();
    test_rule();
    test_lookup();
    return cg_test_done("test_template_files");
}
