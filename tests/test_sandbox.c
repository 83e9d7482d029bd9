/* test_sandbox.c — the Lua template sandbox (generator/lua_host.c) and the
 * template embedder (tools/embed.c): every way out of the sandbox fails with a
 * one-line error naming file and line, the bounds hold and reset per call, the
 * state survives errors, and embedded templates equal the files on disk. */
#include "check.h"
#include "lua_host.h"

#include <lauxlib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ESC "tests/lua/ops/escapes.lua"

/* Import MODULE, fetch field FN from it and call it through the sandbox. */
static int call(cg_lua *h, const char *module, const char *fn, int nres, cg_err *e)
{
    if (cg_lua_import(h, module, e)) return -1;
    lua_State *L = cg_lua_state(h);
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    return cg_lua_pcall(h, 0, nres, e);
}

/* Open a sandbox on tests/lua; abort the test binary if that fails. */
static cg_lua *open_tests(void)
{
    cg_lua *h;
    cg_err e;
    if (cg_lua_open(&h, "tests/lua", &e)) {
        printf("FAIL cannot open sandbox: %s\n", e.msg);
        exit(1);
    }
    return h;
}

/* One escape attempt: must fail, at escapes.lua:LINE, with message MSG, on one line. */
static void expect_escape_fails(cg_lua *h, const char *fn, int line, const char *msg)
{
    cg_err e = {{0}};
    lua_State *L = cg_lua_state(h);
    int top = lua_gettop(L);
    int rc = call(h, "escapes", fn, 0, &e);
    CHECK(rc != 0, "%s: expected an error", fn);
    char where[64];
    snprintf(where, sizeof where, ESC ":%d: ", line);
    CHECK(strncmp(e.msg, where, strlen(where)) == 0, "%s: expected \"%s\" at the start of \"%s\"", fn,
          where, e.msg);
    CHECK_CONTAINS(e.msg, msg);
    CHECK(!strchr(e.msg, '\n') && !strstr(e.msg, "traceback"), "%s: not one line: %s", fn, e.msg);
    CHECK(lua_gettop(L) == top, "%s: stack not balanced (%d vs %d)", fn, lua_gettop(L), top);
    /* the state is still usable: a following call succeeds */
    CHECK(call(h, "lib/user", "rep", 1, &e) == 0, "%s: state unusable afterwards: %s", fn, e.msg);
    lua_settop(L, top);
}

static void test_escapes(void)
{
    cg_lua *h = open_tests();
    cg_lua_set_limits(h, 50000000, 64u << 20);
    static const struct {
        const char *fn;
        int line;
        const char *msg;
    } cases[] = {
        {"os_execute", 3, "attempt to index a nil value (global 'os')"},
        {"io_open", 4, "attempt to index a nil value (global 'io')"},
        {"require", 5, "attempt to call a nil value (global 'require')"},
        {"dofile", 6, "attempt to call a nil value (global 'dofile')"},
        {"loadfile", 7, "attempt to call a nil value (global 'loadfile')"},
        {"package", 8, "attempt to index a nil value (global 'package')"},
        {"debug", 9, "attempt to index a nil value (global 'debug')"},
        {"load_binary", 10, "binary chunks are not allowed"},
        {"load_mode_b", 11, "mode 'b' is not allowed"},
        {"load_function", 12, "bad argument #1 to 'load' (string expected, got function)"},
        {"string_dump", 13, "attempt to call a nil value (field 'dump')"},
        {"rep_bomb", 14, "memory limit of 64 MiB exceeded"},
        {"concat_bomb", 15, "memory limit of 64 MiB exceeded"},
        {"table_bomb", 16, "memory limit of 64 MiB exceeded"},
        {"gc_loop", 19, "__gc metamethods are not allowed"},
        {"recursion", 20, "stack overflow"},
        {"import_dotdot", 21, "invalid template name '../x'"},
        {"import_missing", 22, "template 'no_such_template' not found"},
        {"error_table", 23, "error object is a table value"},
        {"print", 24, "attempt to call a nil value (global 'print')"},
        {"collectgarbage", 25, "attempt to call a nil value (global 'collectgarbage')"},
        {"coroutine", 27, "attempt to index a nil value (global 'coroutine')"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_escape_fails(h, cases[i].fn, cases[i].line, cases[i].msg);
    cg_lua_set_limits(h, 100000, 64u << 20);
    expect_escape_fails(h, "endless", 17, "instruction limit of 100000 exceeded (endless loop?)");
    expect_escape_fails(h, "endless_pcall", 18, "instruction limit of 100000 exceeded");
    expect_escape_fails(h, "xpcall_loop", 26, "instruction limit of 100000 exceeded");
    cg_lua_close(h);
}

static void test_import(void)
{
    cg_lua *h = open_tests();
    lua_State *L = cg_lua_state(h);
    cg_err e = {{0}};
    CHECK(cg_lua_import(h, "counter", &e) == 0, "import counter: %s", e.msg);
    CHECK(lua_istable(L, -1), "a template returns a table");
    lua_getfield(L, -1, "value");
    CHECK(lua_tointeger(L, -1) == 42, "counter.value");
    lua_pop(L, 1);
    CHECK(cg_lua_import(h, "counter", &e) == 0, "import counter again: %s", e.msg);
    CHECK(lua_rawequal(L, -1, -2), "import is cached: the same table both times");
    lua_getfield(L, -1, "loads");
    CHECK(cg_lua_pcall(h, 0, 1, &e) == 0, "counter.loads(): %s", e.msg);
    CHECK(lua_tointeger(L, -1) == 1, "template ran once, not %d times", (int)lua_tointeger(L, -1));
    lua_settop(L, 0);

    /* nested names, import from a template, load() of text in the sandbox env */
    CHECK(cg_lua_import(h, "lib/user", &e) == 0, "import lib/user: %s", e.msg);
    lua_getfield(L, -1, "sum");
    lua_pushinteger(L, 100);
    CHECK(cg_lua_pcall(h, 1, 1, &e) == 0 && lua_tointeger(L, -1) == 5050, "load()ed chunk runs: %s",
          e.msg);
    lua_settop(L, 0);
    CHECK(call(h, "lib/user", "uses_global", 1, &e) == 0 && lua_tointeger(L, -1) == 6,
          "load() sees the sandbox globals: %s", e.msg);
    lua_settop(L, 0);
    CHECK(call(h, "lib/user", "with_global", 1, &e) == 0 && lua_tointeger(L, -1) == 294,
          "load() with an env table: %s", e.msg);
    lua_settop(L, 0);

    CHECK(call(h, "lib/user", "xp", 2, &e) == 0 && !lua_toboolean(L, -2) &&
              lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "handled: boom") == 0,
          "xpcall runs its handler: %s", e.msg);
    lua_settop(L, 0);

    CHECK(cg_lua_import(h, "returns_nothing", &e) == 0 && lua_isboolean(L, -1) && lua_toboolean(L, -1),
          "a template returning nothing imports as true: %s", e.msg);
    lua_settop(L, 0);

    /* errors from C callers carry no position; the caller maps them to the spec */
    CHECK(cg_lua_import(h, "no_such", &e) != 0, "missing template");
    CHECK(strcmp(e.msg, "template 'no_such' not found") == 0, "got \"%s\"", e.msg);
    CHECK(cg_lua_import(h, "../escapes", &e) != 0, "../ rejected");
    CHECK_CONTAINS(e.msg, "invalid template name '../escapes'");
    CHECK(cg_lua_import(h, "Counter", &e) != 0, "upper case rejected");
    CHECK(cg_lua_import(h, "lib//user", &e) != 0, "empty path element rejected");
    CHECK(cg_lua_import(h, "lib/", &e) != 0, "trailing slash rejected");

    CHECK(cg_lua_import(h, "bad_syntax", &e) != 0, "syntax error");
    CHECK_CONTAINS(e.msg, "tests/lua/ops/bad_syntax.lua:2:");

    CHECK(cg_lua_import(h, "cycle_a", &e) != 0, "cyclic import");
    CHECK_CONTAINS(e.msg, "tests/lua/ops/cycle_b.lua:2: cyclic import of template 'cycle_a'");
    CHECK_CONTAINS(e.msg, "cycle_a -> cycle_b -> cycle_a");
    CHECK(cg_lua_import(h, "cycle_a", &e) != 0, "cyclic import, again");
    CHECK_CONTAINS(e.msg, "cyclic import of template 'cycle_a'");

    /* a template failing at import fails the same way each time (nothing stale) */
    cg_err e2 = {{0}};
    CHECK(cg_lua_import(h, "import_error", &e) != 0, "import_error");
    CHECK(cg_lua_import(h, "import_error", &e2) != 0, "import_error again");
    CHECK_CONTAINS(e.msg, "tests/lua/ops/import_error.lua:2: failing at import");
    CHECK(strcmp(e.msg, e2.msg) == 0, "same error twice: \"%s\" vs \"%s\"", e.msg, e2.msg);

    CHECK(call(h, "lib/user", "fail", 0, &e) != 0, "error() in a template");
    CHECK_CONTAINS(e.msg, "tests/lua/lib/user.lua:");
    CHECK_CONTAINS(e.msg, "deliberate failure");
    CHECK(call(h, "lib/user", "rep", 1, &e) == 0 && strcmp(lua_tostring(L, -1), "ababab") == 0,
          "usable after an error: %s", e.msg);
    CHECK(lua_gettop(L) == 1, "stack holds just the result");
    lua_settop(L, 0);

    /* template text and existence */
    size_t len = 0;
    const char *text = cg_lua_template_text(h, "counter", &len);
    cg_buf disk;
    CHECK(cg_read_file("tests/lua/ops/counter.lua", &disk, &e) == 0, "read: %s", e.msg);
    CHECK(text && len == disk.len && memcmp(text, disk.data, len) == 0, "template text is the file");
    CHECK(cg_lua_template_text(h, "counter", NULL) == text, "text kept alive and reused");
    cg_buf_free(&disk);
    CHECK(cg_lua_template_exists(h, "lib/user") == 1, "exists lib/user");
    CHECK(cg_lua_template_exists(h, "nope") == 0, "not exists nope");
    CHECK(cg_lua_template_exists(h, "../lua/counter") == 0, "invalid name does not exist");
    CHECK(cg_lua_template_text(h, "nope", &len) == NULL, "text of a missing template");
    cg_lua_close(h);
}

/* Seconds of wall time since an arbitrary start, for the speed checks below. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* C library calls that loop inside one instruction (issue 10, item 7): each
 * is stopped by its bound, quickly. Every case runs under alarm(), so a
 * regression kills the test binary (a failure) instead of hanging it. */
static void test_bounds(void)
{
    cg_lua *h = open_tests();
    lua_State *L = cg_lua_state(h);
    cg_lua_set_limits(h, 50000000, 64u << 20);
    static const struct {
        const char *fn;
        int line;
        const char *msg;
    } cases[] = {
        {"rep_huge", 29, "memory limit of 64 MiB exceeded"},
        {"move_huge", 30, "instruction limit of 50000000 exceeded (table.move would take up to"},
        {"concat_huge", 31, "instruction limit of 50000000 exceeded (table.concat would take"},
        {"remove_huge", 32, "instruction limit of 50000000 exceeded (table.remove would take"},
        {"insert_huge", 33, "instruction limit of 50000000 exceeded (table.insert would take"},
        {"find_backtrack", 34, "instruction limit of 50000000 exceeded (string.find would take"},
        {"match_backtrack", 35, "instruction limit of 50000000 exceeded (string.match would take"},
        {"gmatch_backtrack", 36, "instruction limit of 50000000 exceeded (string.gmatch would take"},
        {"gsub_backtrack", 37, "instruction limit of 50000000 exceeded (string.gsub would take"},
        {"plain_find_huge", 38, "instruction limit of 50000000 exceeded (string.find would take"},
        {"caught_limit", 39, "instruction limit of 50000000 exceeded"},
        {"string_meta", 40, "attempt to index a boolean value"},
        {"string_set", 41, "the string library is read-only in templates"},
        {"string_rawset", 42, "rawset: the string library is read-only in templates"},
        {"string_setmeta", 43, "cannot change a protected metatable"},
        {"sort_huge", 44, "instruction limit of 50000000 exceeded (table.sort would take"},
        {"table_set", 46, "the table library is read-only in templates"},
        {"move_float", 47, "instruction limit of 50000000 exceeded (table.move would take up to"},
        {"concat_string", 48, "instruction limit of 50000000 exceeded (table.concat would take"},
        {"gsub_repl", 49, "instruction limit of 50000000 exceeded (string.gsub would take"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t0 = now();
        if (getenv("CG_TEST_VERBOSE")) fprintf(stderr, "case %s\n", cases[i].fn);
        alarm(60);
        expect_escape_fails(h, cases[i].fn, cases[i].line, cases[i].msg);
        alarm(0);
        CHECK(now() - t0 < 10, "%s took %.1f s", cases[i].fn, now() - t0);
    }

    /* an empty repetition is empty at once, however many times */
    cg_err e = {{0}};
    alarm(60);
    CHECK(call(h, "escapes", "rep_empty", 1, &e) == 0 && lua_tointeger(L, -1) == 0, "rep_empty: %s", e.msg);
    lua_settop(L, 0);

    /* the CPU-time backstop: many linear C calls, each within every bound */
    cg_lua_set_limits(h, 4000000000LL, 64u << 20);
    cg_lua_set_time_limit(h, 0.5);
    double t0 = now();
    expect_escape_fails(h, "slow_c_calls", 45, "time limit of 0.5 s CPU exceeded");
    CHECK(now() - t0 < 10, "slow_c_calls took %.1f s", now() - t0);
    cg_lua_set_time_limit(h, 0);
    cg_lua_set_limits(h, 0, 0);

    /* ordinary patterns on a 100 KB text are let through, with Lua's results */
    CHECK(call(h, "patterns", "run", 1, &e) == 0, "patterns: %s", e.msg);
    const char *got = lua_tostring(L, -1);
    CHECK(got && strcmp(got, "69308,4000,12000,2,8,abc,4000,93291") == 0, "patterns gave %s", got ? got : "nil");
    alarm(0);
    lua_settop(L, 0);
    cg_lua_close(h);
}

/* Instruction and memory budgets are per call; states are independent. */
static void test_limits_and_states(void)
{
    cg_lua *h = open_tests(), *h2 = open_tests();
    lua_State *L = cg_lua_state(h);
    cg_err e = {{0}};
    cg_lua_set_limits(h, 300000, 64u << 20);
    for (int i = 0; i < 3; i++) {
        CHECK(cg_lua_import(h, "lib/user", &e) == 0, "import: %s", e.msg);
        lua_getfield(L, -1, "spin");
        lua_pushinteger(L, 100000); /* about 200k instructions: fits once, not three times */
        CHECK(cg_lua_pcall(h, 1, 1, &e) == 0, "spin #%d within a fresh budget: %s", i, e.msg);
        lua_settop(L, 0);
    }
    lua_getglobal(L, "import");
    lua_pushliteral(L, "lib/user");
    CHECK(cg_lua_pcall(h, 1, 1, &e) == 0, "import from a C-pushed call: %s", e.msg);
    lua_getfield(L, -1, "spin");
    lua_pushinteger(L, 1000000);
    CHECK(cg_lua_pcall(h, 1, 1, &e) != 0, "spin beyond the budget fails");
    CHECK_CONTAINS(e.msg, "tests/lua/lib/user.lua:16: instruction limit of 300000 exceeded");
    lua_settop(L, 0);

    /* memory: after a bomb, ordinary calls work again */
    cg_lua_set_limits(h, 0, 32u << 20);
    CHECK(call(h, "escapes", "concat_bomb", 0, &e) != 0, "concat bomb");
    CHECK_CONTAINS(e.msg, ESC ":15: memory limit of 32 MiB exceeded");
    CHECK(call(h, "escapes", "rep_bomb", 0, &e) != 0, "rep bomb");
    CHECK_CONTAINS(e.msg, ESC ":14: memory limit of 32 MiB exceeded");
    CHECK(call(h, "lib/user", "rep", 1, &e) == 0, "usable after memory errors: %s", e.msg);
    lua_settop(L, 0);

    /* the string metatable cannot be broken, so string methods stay intact */
    CHECK(call(h, "lib/user", "break_rep", 0, &e) != 0, "break_rep refused");
    CHECK(call(h, "lib/user", "rep", 1, &e) == 0, "rep intact in the first state: %s", e.msg);
    lua_settop(L, 0);
    CHECK(call(h2, "lib/user", "rep", 1, &e) == 0, "rep intact in the second state: %s", e.msg);
    lua_settop(cg_lua_state(h2), 0);
    CHECK(call(h2, "counter", "loads", 1, &e) == 0 && lua_tointeger(cg_lua_state(h2), -1) == 1,
          "globals are per state: %s", e.msg);
    cg_lua_close(h);
    cg_lua_close(h2);
}

/* A directory other than "templates" (laid out as templates/ is: a template
 * outside a family lives in ops/) names its files by their real path, and a
 * binary chunk on disk is refused. */
static void test_other_dir(void)
{
    char dir[] = "/tmp/cg_sandbox_XXXXXX";
    cg_err e = {{0}};
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/ops", dir);
    CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/ops/boom.lua", dir);
    CHECK(cg_write_file_atomic(path, "\n\nerror('boom')\n", 15, &e) == 0, "write: %s", e.msg);
    snprintf(path, sizeof path, "%s/ops/bin.lua", dir);
    CHECK(cg_write_file_atomic(path, "\033Lua\124\0", 6, &e) == 0, "write: %s", e.msg);
    cg_lua *h;
    char slashed[256];
    snprintf(slashed, sizeof slashed, "%s//", dir);
    CHECK(cg_lua_open(&h, slashed, &e) == 0, "open: %s", e.msg);
    if (h) {
        char want[300];
        snprintf(want, sizeof want, "%s/ops/boom.lua:3: boom", dir);
        CHECK(cg_lua_import(h, "boom", &e) != 0, "boom fails");
        CHECK_CONTAINS(e.msg, want);
        CHECK(cg_lua_import(h, "bin", &e) != 0, "binary template refused");
        CHECK_CONTAINS(e.msg, "bin.lua: binary chunks are not allowed");
        cg_lua_close(h);
    }
    unlink(path);
    snprintf(path, sizeof path, "%s/ops/boom.lua", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/ops", dir);
    rmdir(path);
    rmdir(dir);
}

/* The embedded table holds exactly the files on disk at the same paths, and
 * the embedded sandbox serves them. */
static void test_embedded(void)
{
    cg_lua *h;
    cg_err e = {{0}};
    CHECK(cg_lua_open(&h, NULL, &e) == 0, "open embedded: %s", e.msg);
    int n = 0;
    for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++, n++) {
        cg_buf disk;
        CHECK(cg_read_file(f->path, &disk, &e) == 0, "embedded %s on disk: %s", f->path, e.msg);
        CHECK(disk.len == f->len && memcmp(disk.data, f->data, f->len) == 0,
              "%s: embedded copy differs from disk (rebuild?)", f->path);
        cg_buf_free(&disk);
        char name[256];
        CHECK(cg_template_name(f->path, name, sizeof name) > 0, "path %s names a template", f->path);
        size_t len = 0;
        CHECK(cg_lua_template_text(h, name, &len) == f->data && len == f->len, "text of %s", name);
        CHECK(cg_lua_template_exists(h, name), "%s exists", name);
    }
    printf("ok %d embedded templates\n", n);
    CHECK(!cg_lua_template_exists(h, "escapes"), "test templates are not embedded");
    CHECK(cg_lua_import(h, "no_such", &e) != 0 && strcmp(e.msg, "template 'no_such' not found") == 0,
          "embedded: missing template: %s", e.msg);
    cg_lua_close(h);
}

/* Decode adjacent C string literals starting at *p (as tools/embed.c writes
 * them) into out; returns the decoded length or -1 on anything unexpected. */
static long decode_literals(const char **p, unsigned char *out, size_t cap)
{
    size_t n = 0;
    const char *s = *p;
    while (*s == ' ' || *s == '\n') s++;
    if (*s != '"') return -1;
    while (*s == '"') {
        for (s++; *s != '"'; s++) {
            int c = (unsigned char)*s;
            if (c == 0 || c == '\n') return -1;
            if (c == '\\') {
                s++;
                if (*s == 'n') c = '\n';
                else if (*s == 't') c = '\t';
                else if (*s == '\\' || *s == '"') c = *s;
                else if (s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7') {
                    c = (s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0');
                    s += 2;
                } else return -1;
            }
            if (n == cap) return -1;
            out[n++] = (unsigned char)c;
        }
        s++;
        while (*s == ' ' || *s == '\n') s++;
    }
    *p = s;
    return (long)n;
}

/* Run build/embed on a file holding every byte value and tricky sequences;
 * decode its output and compare byte for byte; check line widths and trigraphs. */
static void test_embed_tool(void)
{
    char dir[] = "/tmp/cg_embed_XXXXXX";
    cg_err e = {{0}};
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    unsigned char data[300];
    size_t len = 0;
    for (int i = 0; i < 256; i++) data[len++] = (unsigned char)i;
    static const char tricky[] = "?\?=?\?/\0017\\x41\"\n\n"; /* trigraphs, digit after escape */
    memcpy(data + len, tricky, sizeof tricky - 1);
    len += sizeof tricky - 1;
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/all bytes.lua", dir);
    CHECK(cg_write_file_atomic(path, data, len, &e) == 0, "write: %s", e.msg);
    snprintf(cmd, sizeof cmd, "build/embed '%s' '%s' > '%s/out.c'", path, path, dir);
    CHECK(system(cmd) == 0, "build/embed ran");
    snprintf(cmd, sizeof cmd, "%s/out.c", dir);
    cg_buf out;
    if (cg_read_file(cmd, &out, &e) == 0) {
        int longest = 0, col = 0;
        for (size_t i = 0; i < out.len; i++) {
            col = out.data[i] == '\n' ? 0 : col + 1;
            if (col > longest) longest = col;
        }
        CHECK(longest <= 100, "longest output line %d", longest);
        CHECK(!strstr(out.data, "??"), "no trigraph can form");
        CHECK_CONTAINS(out.data, "#include \"lua_host.h\"");
        const char *p = strstr(out.data, "cg_embedded_templates[] = {");
        int entries = 0;
        while (p && (p = strstr(p, "\n    {\"")) != NULL) {
            p += 6;
            unsigned char got[400];
            long n = decode_literals(&p, got, sizeof got);
            CHECK(n == (long)strlen(path) && memcmp(got, path, (size_t)n) == 0, "path decoded");
            CHECK(*p == ',', "comma after path");
            p++;
            n = decode_literals(&p, got, sizeof got);
            CHECK(n == (long)len && memcmp(got, data, len) == 0, "all %zu bytes round-trip (%ld)", len, n);
            unsigned long declared = 0;
            CHECK(sscanf(p, ", %lu}", &declared) == 1 && declared == len, "declared length %lu", declared);
            entries++;
        }
        CHECK(entries == 2, "two entries, got %d", entries);
        CHECK_CONTAINS(out.data, "{NULL, NULL, 0}};\n");
        cg_buf_free(&out);
    } else {
        CHECK(0, "read embed output: %s", e.msg);
    }
    snprintf(cmd, sizeof cmd, "build/embed /nonexistent/x.lua > /dev/null 2>&1");
    CHECK(system(cmd) != 0, "embed fails on a missing file");
    unlink(path);
    snprintf(cmd, sizeof cmd, "%s/out.c", dir);
    unlink(cmd);
    rmdir(dir);
}

int main(void)
{
    test_escapes();
    test_bounds();
    test_import();
    test_limits_and_states();
    test_other_dir();
    test_embedded();
    test_embed_tool();
    return cg_test_done("test_sandbox");
}
