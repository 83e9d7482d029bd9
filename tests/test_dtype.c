/* test_dtype.c — the element-type table: its rows, the manifest parser reading
 * every dtype it names (and refusing others), and templates/lib/common.lua's
 * common.DTYPES agreeing with it row for row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lua_host.h"
#include "manifest.h"

static void test_table(void)
{
    static const struct {
        cg_dtype t;
        const char *name, *ctype;
        size_t size;
    } want[] = {
        {CG_DT_U8, "u8", "unsigned char", 1}, {CG_DT_F32, "f32", "float", 4}, {CG_DT_I32, "i32", "int", 4},
        {CG_DT_F16, "f16", "__half", 2},      {CG_DT_BF16, "bf16", "__nv_bfloat16", 2},
    };
    CHECK(sizeof want / sizeof want[0] == CG_DT_COUNT, "one row per dtype");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cg_dtype_info *d = cg_dtype_get(want[i].t);
        CHECK(d && !strcmp(d->name, want[i].name), "row %zu: name %s", i, d ? d->name : "(none)");
        CHECK(d && !strcmp(d->ctype, want[i].ctype), "%s: C type %s", want[i].name, d ? d->ctype : "(none)");
        CHECK(cg_dtype_size(want[i].t) == want[i].size, "%s: %zu bytes", want[i].name, cg_dtype_size(want[i].t));
        cg_dtype t = CG_DT_COUNT;
        CHECK(cg_dtype_parse(want[i].name, &t) == 0 && t == want[i].t, "%s parses", want[i].name);
    }
    cg_dtype t = CG_DT_F32;
    CHECK(cg_dtype_parse("f64", &t) == -1 && t == CG_DT_F32, "f64 is no dtype");
    CHECK(cg_dtype_parse("F32", &t) == -1, "names are lower case");
    CHECK(cg_dtype_parse("", &t) == -1, "empty name");
    CHECK(cg_dtype_get(CG_DT_COUNT) == NULL && cg_dtype_size(CG_DT_COUNT) == 0, "nothing past the table");
}

/* A manifest whose tensor `input` has dtype `mid` and whose output tensor has
 * dtype `outdt`. */
static int parse(const char *mid, const char *outdt, cg_manifest *m, cg_err *e)
{
    char text[2048];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
             "tensor pixels u8 784\ntensor input %s 784\ntensor conv1 %s 1152\ntensor predict i32 1\n"
             "layer conv1 conv conv1\n"
             "kernel a layer=input template=input_u8 in=pixels out=input grid=N*196/256,1,1 block=256,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "kernel b layer=conv1 template=conv2d_direct in=input out=conv1 grid=N*144/64,1,1 block=64,1,1 "
             "shared=0 weights=arg bias=none args=in,out,weights,bias,n\n"
             "kernel c layer=predict template=argmax in=conv1 out=predict grid=N*1/128,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "input pixels\noutput conv1\npredict predict\nhash 0123456789abcdef\n",
             mid, outdt);
    return cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, e);
}

static void test_manifest(void)
{
    cg_manifest *m = malloc(sizeof *m);
    cg_err e;
    if (!m) return;
    const char *ok[] = {"f32", "f16", "bf16"};
    const cg_dtype dt[] = {CG_DT_F32, CG_DT_F16, CG_DT_BF16};
    for (int i = 0; i < 3; i++) {
        int rc = parse(ok[i], "f32", m, &e);
        CHECK(rc == 0, "an %s tensor parses: %s", ok[i], rc ? e.msg : "");
        int t = rc ? -1 : cg_manifest_tensor(m, "input");
        CHECK(t >= 0 && m->t[t].dtype == dt[i], "%s read as its dtype", ok[i]);
        CHECK(t >= 0 && m->t[t].elems * (long long)cg_dtype_size(m->t[t].dtype) == 784LL * (i ? 2 : 4),
              "%s: bytes per image", ok[i]);
    }
    CHECK(parse("f64", "f32", m, &e) != 0, "f64 refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:6: unknown dtype 'f64'");
    CHECK(parse("f32", "f16", m, &e) != 0, "a half-width output refused (the host reads FP32)");
    CHECK_CONTAINS(e.msg, "output f32");
    free(m);
}

/* common.DTYPES (the templates' table) has the rows of the C table. */
static void test_lua_table(void)
{
    cg_lua *h;
    cg_err e;
    int rc = cg_lua_open(&h, "templates", &e);
    CHECK(rc == 0, "lua: %s", rc ? e.msg : "");
    if (rc) return;
    rc = cg_lua_import(h, "lib/common", &e);
    CHECK(rc == 0, "import lib/common: %s", rc ? e.msg : "");
    lua_State *L = cg_lua_state(h);
    if (!rc) {
        lua_getfield(L, -1, "DTYPES");
        int rows = 0;
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            rows++;
            lua_pop(L, 1);
        }
        CHECK(rows == CG_DT_COUNT, "common.DTYPES has %d rows", rows);
        for (int i = 0; i < CG_DT_COUNT; i++) {
            const cg_dtype_info *d = cg_dtype_get((cg_dtype)i);
            lua_getfield(L, -1, d->name);
            int row = lua_istable(L, -1);
            CHECK(row, "common.DTYPES.%s", d->name);
            if (row) {
                lua_getfield(L, -1, "c");
                lua_getfield(L, -2, "size");
                CHECK(lua_tostring(L, -2) && !strcmp(lua_tostring(L, -2), d->ctype), "%s: C type %s", d->name,
                      lua_tostring(L, -2) ? lua_tostring(L, -2) : "(none)");
                CHECK(lua_tointeger(L, -1) == (lua_Integer)d->size, "%s: size", d->name);
                lua_pop(L, 2);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        /* common.types: FP32 without a dtype, conversions only where the types differ */
        lua_getfield(L, -1, "types");
        lua_newtable(L);
        lua_pushstring(L, "bf16");
        lua_setfield(L, -2, "dtype");
        rc = cg_lua_pcall(h, 1, 1, &e);
        CHECK(rc == 0, "common.types: %s", rc ? e.msg : "");
        if (!rc) {
            const char *want[][2] = {{"in_t", "__nv_bfloat16"}, {"out_t", "__nv_bfloat16"},
                                     {"w_t", "__nv_bfloat16"}, {"acc_t", "float"}};
            for (int i = 0; i < 4; i++) {
                lua_getfield(L, -1, want[i][0]);
                CHECK(lua_tostring(L, -1) && !strcmp(lua_tostring(L, -1), want[i][1]), "bf16 %s", want[i][0]);
                lua_pop(L, 1);
            }
            lua_getfield(L, -1, "to_acc");
            lua_pushstring(L, "x[i]");
            rc = cg_lua_pcall(h, 1, 1, &e);
            CHECK(!rc && !strcmp(lua_tostring(L, -1), "__bfloat162float(x[i])"), "bf16 to_acc: %s",
                  rc ? e.msg : lua_tostring(L, -1));
            if (!rc) lua_pop(L, 1);
            lua_pop(L, 1);
        }
        lua_getfield(L, -1, "types");
        rc = cg_lua_pcall(h, 0, 1, &e);
        if (!rc) {
            lua_getfield(L, -1, "from_acc");
            lua_pushstring(L, "v");
            rc = cg_lua_pcall(h, 1, 1, &e);
            CHECK(!rc && !strcmp(lua_tostring(L, -1), "v"), "f32 from_acc adds nothing: %s",
                  rc ? e.msg : lua_tostring(L, -1));
            if (!rc) lua_pop(L, 1);
            lua_getfield(L, -1, "in_t");
            CHECK(!strcmp(lua_tostring(L, -1), "float"), "no dtype: f32");
            lua_pop(L, 2);
        }
    }
    cg_lua_close(h);
}

int main(void)
{
    test_table();
    test_manifest();
    test_lua_table();
    return cg_test_done("test_dtype");
}
