/* tma_box.h — what tests/test_nvrtc.c (on a GPU) and tests/test_emulate.c (on the CPU)
 * share about the bulk tensor copy: the templates' tensor-map code, and the bytes a box
 * of a channels-last tensor must land as. */
#ifndef CG_TMA_BOX_H
#define CG_TMA_BOX_H
#include <stdio.h>

#include "check.h"
#include "lua_host.h"

/* common.TMAP_TYPE, with helpers common.tma_helpers() after it, into buf (cap bytes):
 * 0, or -1 (reported) where Lua fails or the text does not fit. */
static inline int tma_code(char *buf, size_t cap, int helpers)
{
    cg_lua *h;
    cg_err e = {""};
    if (cg_lua_open(&h, "templates", &e) || cg_lua_import(h, "lib/common", &e)) {
        CHECK(0, "lua: %s", e.msg);
        return -1;
    }
    lua_State *L = cg_lua_state(h);
    lua_getfield(L, -1, "TMAP_TYPE");
    int rc = 0;
    if (helpers) {
        lua_getfield(L, -2, "tma_helpers");
        rc = lua_pcall(L, 0, 1, 0);
        CHECK(rc == LUA_OK, "common.tma_helpers(): %s", rc ? lua_tostring(L, -1) : "");
    }
    const char *type = lua_tostring(L, helpers ? -2 : -1), *more = helpers && rc == LUA_OK ? lua_tostring(L, -1) : "";
    CHECK(type && strstr(type, "cg_tmap"), "common.TMAP_TYPE: %s", type ? type : "(none)");
    int n = rc == LUA_OK && type ? snprintf(buf, cap, "%s\n%s\n", type, more) : -1;
    cg_lua_close(h);
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

/* The box (64, 8, 4, 1) of a bf16 tensor t of TMA_C channels x TMA_W columns x TMA_H rows x
 * images (channels innermost) that starts at (0, x0, y0, n0), as it lands in shared memory in
 * the 128-byte swizzle (the 16-byte chunk c of 128-byte row r at c ^ (r % 8)), zeros outside
 * the tensor: how many of got's elements differ from that. */
enum { TMA_C = 64, TMA_W = 6, TMA_H = 5, TMA_N = 3, TMA_BOX = 64 * 8 * 4 };
static inline int tma_box_wrong(const unsigned short *got, const unsigned short *t, int x0, int y0, int n0)
{
    int wrong = 0;
    for (int i = 0; i < TMA_BOX; i++) { /* element i of the box: channel, then column, then row */
        int c = i % 64, x = x0 + i / 64 % 8, y = y0 + i / 512;
        unsigned lb = (unsigned)i * 2, pb = lb ^ (((lb >> 7) & 7) << 4);
        unsigned short want =
            x < 0 || x >= TMA_W || y < 0 || y >= TMA_H ? 0 : t[((n0 * TMA_H + y) * TMA_W + x) * TMA_C + c];
        wrong += got[pb / 2] != want;
    }
    return wrong;
}

/* Box starts both tests copy: inside, before the first column and row (a 3x3 tap's padding),
 * past the last. */
static const int tma_starts[5][3] = {{0, 0, 0}, {-1, -1, 1}, {-3, 2, 2}, {2, 3, 1}, {5, -2, 0}};
#endif
