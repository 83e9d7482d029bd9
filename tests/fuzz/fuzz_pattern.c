/* fuzz_pattern.c — the sandbox's bound on pattern matching (lua_host.c
 * l_pattern): find, match, gsub and gmatch of a fuzzed pattern on a fuzzed
 * subject, in a sandbox limited to 2 M instructions. The bound is an exact
 * step count of Lua's matcher; if it ever under-counts, a call runs far past
 * what 2 M steps can take, and a call of more than 2 s CPU aborts (as does a
 * multi-line error). Input: the pattern, a NUL byte, the subject. */
#include "fuzz.h"
#include "lua_host.h"

#include <lauxlib.h>
#include <time.h>

static cg_lua *h;
static const char code[] =
    "local s, p = ...\n"
    "pcall(string.find, s, p)\n"
    "pcall(string.match, s, p, 2)\n"
    "pcall(string.gsub, s, p, '%0')\n"
    "pcall(function() for _ in s:gmatch(p) do end end)\n"
    "return string.find(s, p)\n";

/* CPU seconds of this thread. */
static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = fuzz_seed_dir();
    if (dir) {
        static const struct {
            const char *name;
            const char *text;
            size_t len;
        } seeds[] = {
#define SEED(n, t) {n, t, sizeof t - 1}
            SEED("lazy", "a.-b\0aaaaaaab"),
            SEED("balance", "%b()\0f(a(b)c)d"),
            SEED("backref", "(%w+)%1\0xabab"),
            SEED("ident", "[%a_][%w_]*\0int x_1 = 2;"),
            SEED("trim", "^%s*(.-)%s*$\0   hi there  "),
            SEED("frontier", "%f[%w]%w+\0hello, world"),
            SEED("lines", "(.-)\n\0one\ntwo\n\nthree\n"),
            SEED("greedy", ".*x(%d+)()\0ax1bx22cx333"),
            SEED("optional", "a?b?c?d?[^e]+e$\0abde"),
        };
        for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
            fuzz_seed(dir, seeds[i].name, seeds[i].text, seeds[i].len);
        exit(0);
    }
    cg_err e;
    if (cg_lua_open(&h, NULL, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    cg_lua_set_limits(h, 2000000, 64u << 20);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t lp = nul ? (size_t)(nul - data) : size;
    const char *s = nul ? (const char *)nul + 1 : "";
    size_t ls = nul ? size - lp - 1 : 0;
    lua_State *L = cg_lua_state(h);
    if (luaL_loadbufferx(L, code, sizeof code - 1, "=fuzz", "t") != LUA_OK) abort();
    lua_pushlstring(L, s, ls);
    lua_pushlstring(L, (const char *)data, lp);
    cg_err e = {{0}};
    double t0 = cpu();
    if (cg_lua_pcall(h, 2, 0, &e)) fuzz_check_err(&e, "pattern");
    double t = cpu() - t0;
    if (t > 2) {
        fprintf(stderr, "pattern: %.1f s CPU for a call bounded to 2 M steps\n", t);
        abort();
    }
    lua_settop(L, 0);
    return 0;
}
