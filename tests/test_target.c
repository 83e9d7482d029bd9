/* test_target.c — what kernels may assume of their GPU: the default target,
 * the per-architecture table for fat binaries (the minimum over the chosen
 * archs), and the table templates read as net.target and l.target, down to
 * common.max_shared(l). */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "aot.h"
#include "check.h"
#include "gen.h"
#include "lua_host.h"
#include "spec.h"

static void test_default(void)
{
    cg_target t;
    cg_target_default(&t);
    CHECK(t.cc == 75 && t.max_shared_optin == 48 * 1024 && t.regs_per_block == 65536 &&
              t.regs_per_sm == 65536 && t.sms == 0 && t.max_threads == 1024 && !t.sm90a,
          "default: cc %d, %d B", t.cc, t.max_shared_optin);
}

/* NVIDIA's opt-in limits per block, and the minimum over a build's archs. */
static void test_arch_table(void)
{
    struct {
        int arch, kib;
    } want[] = {{75, 64}, {80, 163}, {86, 99}, {89, 99}, {90, 227}, {100, 227}, {120, 99}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cg_target t;
        cg_aot_target(&want[i].arch, 1, &t);
        CHECK(t.cc == want[i].arch && t.max_shared_optin == want[i].kib * 1024,
              "sm_%d: %d bytes, want %d KiB", want[i].arch, t.max_shared_optin, want[i].kib);
        CHECK(t.sms == 0, "SMs unknown for a fat binary");
        CHECK(t.sm90a == (want[i].arch == 90), "sm_%d alone: sm90a %d", want[i].arch, t.sm90a);
    }
    int all[] = {75, 80, 86, 89, 90, 100, 120}, hopper[] = {90, 100}, mixed[] = {86, 90},
        unknown[] = {90, 95};
    cg_target t;
    cg_aot_target(all, 7, &t);
    CHECK(t.cc == 75 && t.max_shared_optin == 64 * 1024, "all shipped: cc %d, %d", t.cc, t.max_shared_optin);
    cg_aot_target(hopper, 2, &t);
    CHECK(t.cc == 90 && t.max_shared_optin == 227 * 1024, "90+100: %d", t.max_shared_optin);
    CHECK(!t.sm90a, "90+100: no sm_90a kernels (sm_100 has no wgmma)");
    cg_aot_target(mixed, 2, &t);
    CHECK(t.cc == 86 && t.max_shared_optin == 99 * 1024 && !t.sm90a, "86+90: %d", t.max_shared_optin);
    cg_aot_target(unknown, 2, &t);
    CHECK(t.max_shared_optin == 48 * 1024, "an arch missing from the table counts as 48 KiB: %d",
          t.max_shared_optin);
    char text[128];
    CHECK(!strcmp(cg_aot_default_archs(text, sizeof text), "75,80,86,89,90,100,120"),
          "default --arch: %s", text);
    int prev = 0, n = 0;
    for (const cg_arch_info *a = cg_aot_archs; a->arch; a++, n++) {
        CHECK(a->arch > prev && a->max_shared_optin >= 48 * 1024, "table ascending: %d", a->arch);
        prev = a->arch;
    }
    CHECK(n >= 7, "table rows: %d", n);
}

static long long int_field(lua_State *L, int idx, const char *k)
{
    lua_getfield(L, idx, k);
    long long v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
    lua_pop(L, 1);
    return v;
}

/* Lua-callable: (common, layer) -> common.max_shared(layer). */
static int call_max_shared(lua_State *L)
{
    lua_getfield(L, 1, "max_shared");
    lua_pushvalue(L, 2);
    lua_call(L, 1, 1);
    return 1;
}

/* max_shared(l) through templates/lib/common.lua, the layer at the top. */
static long long max_shared_of(cg_lua *h, cg_err *e)
{
    lua_State *L = cg_lua_state(h);
    int layer = lua_gettop(L);
    if (cg_lua_import(h, "lib/common", e)) return -1;
    lua_pushcfunction(L, call_max_shared);
    lua_insert(L, -2);
    lua_pushvalue(L, layer);
    if (cg_lua_pcall(h, 2, 1, e)) return -1;
    long long v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -2;
    lua_pop(L, 1);
    return v;
}

static void test_lua_table(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {""};
    cg_lua *h = NULL;
    if (!s || cg_spec_load("specs/ece408-2017.yaml", s, &e) || cg_lua_open(&h, NULL, &e)) {
        CHECK(0, "setup: %s", e.msg);
        free(s);
        return;
    }
    lua_State *L = cg_lua_state(h);
    cg_target t = {90, 232448, 65536, 65536, 132, 1024, 1, 0};
    cg_gen_push_net(L, s, &t);
    int net = lua_gettop(L);
    lua_getfield(L, net, "target");
    int tg = lua_gettop(L);
    CHECK(lua_istable(L, tg), "net.target is a table");
    CHECK(int_field(L, tg, "cc") == 90 && int_field(L, tg, "max_shared") == 232448 &&
              int_field(L, tg, "regs_per_block") == 65536 && int_field(L, tg, "regs_per_sm") == 65536 &&
              int_field(L, tg, "sms") == 132 && int_field(L, tg, "max_threads") == 1024,
          "net.target fields");
    lua_getfield(L, tg, "sm90a");
    CHECK(lua_isboolean(L, -1) && lua_toboolean(L, -1), "net.target.sm90a is the boolean true");
    lua_pop(L, 1);
    lua_getfield(L, net, "layers");
    int nl = (int)luaL_len(L, -1);
    CHECK(nl == s->nlayers, "layers: %d", nl);
    for (int i = 1; i <= nl; i++) {
        lua_rawgeti(L, -1, i);
        lua_getfield(L, -1, "target");
        CHECK(lua_rawequal(L, -1, tg), "layer %d: l.target is net.target", i);
        lua_pop(L, 1);
        if (i == 1) {
            CHECK(max_shared_of(h, &e) == 232448, "common.max_shared(l) = the target's: %s", e.msg);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 3);
    /* no target given: the default */
    cg_gen_push_net(L, s, NULL);
    lua_getfield(L, -1, "target");
    CHECK(int_field(L, -1, "max_shared") == 48 * 1024 && int_field(L, -1, "cc") == 75, "default target");
    lua_getfield(L, -1, "sm90a");
    CHECK(lua_isboolean(L, -1) && !lua_toboolean(L, -1), "default target: sm90a false");
    lua_pop(L, 1);
    lua_pop(L, 2);
    /* a layer table with no target at all: 48 KiB */
    lua_newtable(L);
    CHECK(max_shared_of(h, &e) == 48 * 1024, "common.max_shared without a target: %s", e.msg);
    lua_pop(L, 1);
    cg_lua_close(h);
    free(s);
}

/* Generating for a target changes nothing where no template uses what differs
 * (example-conv's direct kernel on an sm_80 with more shared memory and SMs: sm_90
 * would add the programmatic-dependent-launch prologue), and the default is what
 * cg_generate uses. */
static cg_gen_output ga, gb;
static void test_generate_for(void)
{
    cg_spec *s = malloc(sizeof *s);
    cg_err e = {""};
    cg_target big = {80, 232448, 65536, 65536, 132, 1024, 0, 0};
    if (!s || cg_spec_load("specs/example-conv.yaml", s, &e) || cg_generate(s, "r", &ga, &e) ||
        cg_generate_for(s, "r", &big, &gb, &e)) {
        CHECK(0, "generate: %s", e.msg);
        free(s);
        return;
    }
    CHECK(ga.nkernels == gb.nkernels && !strcmp(ga.hash, gb.hash), "same build for both targets");
    cg_gen_free(&ga), cg_gen_free(&gb);
    free(s);
}

int main(void)
{
    test_default();
    test_arch_table();
    test_lua_table();
    test_generate_for();
    return cg_test_done("target");
}
