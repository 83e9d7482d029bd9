/* test_manifest.c — a kernel record's input list: `in=` naming two (or up to
 * CG_MAX_INPUTS) tensors parses into the kernel's array in order, with roles
 * in1..in3 naming the further inputs; refused, each at the record's
 * origin:line: an undeclared tensor, more than CG_MAX_INPUTS inputs, the
 * kernel's own output among its inputs, an empty name, and an argument role
 * naming an input the list lacks. common.kernel_head (templates/lib/common.lua)
 * knows the same roles as the manifest's table and declares further inputs
 * const like the first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lua_host.h"
#include "manifest.h"

/* A manifest whose kernel `add` (line 13) reads `in` and writes `out` with
 * arguments `args`: two convolutions of the input summed, then argmax. */
static int parse(const char *in, const char *out, const char *args, cg_manifest *m, cg_err *e)
{
    char text[4096];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
             "tensor pixels u8 784\ntensor input f32 784\ntensor a f32 1152\ntensor b f32 1152\n"
             "tensor sum f32 1152\ntensor predict i32 1\n"
             "kernel k_in layer=input template=input_u8 in=pixels out=input grid=N*196/256,1,1 block=256,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "kernel k_a layer=a template=conv2d_direct in=input out=a grid=N*144/64,1,1 block=64,1,1 "
             "shared=0 weights=arg bias=none args=in,out,weights,bias,n\n"
             "kernel k_add layer=sum template=add in=%s out=%s grid=N*9/2,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=%s\n"
             "kernel k_max layer=predict template=argmax in=sum out=predict grid=N*1/128,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "input pixels\noutput sum\npredict predict\nhash 0123456789abcdef\n",
             in, out, args);
    return cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, e);
}

static void test_inputs(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a,b", "sum", "in1,in,out,n", m, &e);
    CHECK(rc == 0, "a two-input kernel parses: %s", rc ? e.msg : "");
    if (!rc) {
        const cg_mkernel *k = &m->k[2];
        CHECK(!strcmp(k->name, "k_add") && k->nin == 2, "k_add reads %d tensors", k->nin);
        CHECK(k->in[0] == cg_manifest_tensor(m, "a") && k->in[1] == cg_manifest_tensor(m, "b"),
              "inputs in the list's order");
        CHECK(k->out == cg_manifest_tensor(m, "sum"), "its output");
        CHECK(k->nargs == 4 && k->args[0] == CG_ARG_IN1 && k->args[1] == CG_ARG_IN, "roles in1, in");
        CHECK(m->k[1].nin == 1 && m->k[1].in[0] == cg_manifest_tensor(m, "input"), "a chain's kernel reads one");
        /* the launch binds the second input where in1 stands */
        int ta = 10, tb = 11, out = 12, count = 3;
        void *in[CG_MAX_INPUTS] = {&ta, &tb}, *argv[CG_MAX_ARGS];
        CHECK(cg_args_bind(k->args, k->nargs, in, k->nin, &out, NULL, NULL, &count, argv) == 0 && argv[0] == &tb &&
                  argv[1] == &ta && argv[2] == &out && argv[3] == &count,
              "in1 bound to b, in to a");
    }
    rc = parse("a,b,input,a", "sum", "in,in1,in2,in3,out,n", m, &e);
    CHECK(rc == 0 && m->k[2].nin == 4 && m->k[2].in[3] == cg_manifest_tensor(m, "a"),
          "four inputs (a tensor may be read twice): %s", rc ? e.msg : "");
}

static void test_refusals(cg_manifest *m)
{
    cg_err e;
    CHECK(parse("a,zz", "sum", "in,in1,out,n", m, &e) != 0, "an undeclared input refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads 'zz', which is no tensor declared before it");
    CHECK(parse("predict2", "sum", "in,out,n", m, &e) != 0, "an undeclared single input refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads 'predict2'");
    CHECK(parse("a,b,a,b,a", "sum", "in,out,n", m, &e) != 0, "five inputs refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads more than 4 tensors (in=a,b,a,b,a)");
    CHECK(parse("a,sum", "sum", "in,in1,out,n", m, &e) != 0, "the output among the inputs refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads its own output 'sum'");
    CHECK(parse("a", "sum", "in,in1,out,n", m, &e) != 0, "in1 without a second input refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: argument role in1 names input 2, but the kernel reads 1");
    CHECK(parse("a,b", "sum", "in,in2,out,n", m, &e) != 0, "in2 with two inputs refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: argument role in2 names input 3, but the kernel reads 2");
    CHECK(parse("a,,b", "sum", "in,out,n", m, &e) != 0 && parse("a,", "sum", "in,out,n", m, &e) != 0,
          "an empty name refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: bad input list in=a,");
    CHECK(parse("a", "sum", "in,in4,out,n", m, &e) != 0, "no role in4");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for args");
    CHECK(strchr(e.msg, '\n') == NULL, "one line");
}

/* The optional pdl field: 1 marks a kernel with the programmatic-dependent-launch
 * prologue, absent is 0; any other value, or the field twice, is refused at the
 * record's origin:line. */
static void test_pdl(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a,b", "sum", "in,in1,out,n pdl=1", m, &e);
    CHECK(rc == 0, "pdl=1 parses: %s", rc ? e.msg : "");
    CHECK(!rc && m->k[2].pdl == 1 && m->k[1].pdl == 0 && m->k[3].pdl == 0, "only k_add has the prologue");
    rc = parse("a,b", "sum", "in,in1,out,n pdl=0", m, &e);
    CHECK(rc == 0 && m->k[2].pdl == 0, "pdl=0 parses as no prologue");
    CHECK(parse("a,b", "sum", "in,in1,out,n pdl=yes", m, &e) != 0, "pdl=yes refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for pdl: 'yes'");
    CHECK(parse("a,b", "sum", "in,in1,out,n pdl=1 pdl=1", m, &e) != 0, "pdl twice refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: pdl given twice");
    CHECK(parse("a,b", "sum", "in,in1,out,n pdl=", m, &e) != 0, "an empty pdl refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for pdl: ''");
}

/* The optional wdtype field: the 16-bit type a kernel reads its weights and bias
 * in (f16 or bf16); absent is f32; f32 itself, any other word, or the field
 * twice is refused at the record's origin:line. */
static void test_wdtype(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a,b", "sum", "in,in1,out,n wdtype=bf16", m, &e);
    CHECK(rc == 0 && m->k[2].wdtype == CG_DT_BF16 && m->k[1].wdtype == CG_DT_F32 && m->k[3].wdtype == CG_DT_F32,
          "wdtype=bf16 on k_add only: %s", rc ? e.msg : "");
    rc = parse("a,b", "sum", "in,in1,out,n wdtype=f16", m, &e);
    CHECK(rc == 0 && m->k[2].wdtype == CG_DT_F16, "wdtype=f16: %s", rc ? e.msg : "");
    CHECK(parse("a,b", "sum", "in,in1,out,n wdtype=f32", m, &e) != 0, "wdtype=f32 refused (absent means it)");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for wdtype: 'f32'");
    CHECK(parse("a,b", "sum", "in,in1,out,n wdtype=half", m, &e) != 0, "wdtype=half refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for wdtype: 'half'");
    CHECK(parse("a,b", "sum", "in,in1,out,n wdtype=f16 wdtype=f16", m, &e) != 0, "wdtype twice refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: wdtype given twice");
}

/* A layer record's into=ADD (a conv whose kernel computes an add): parsed with
 * the add's tensor as the layer's; refused, at its line, naming another tensor
 * or with another key. */
static void test_layer_into(cg_manifest *m)
{
    static const char head[] = "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
                               "tensor input u8 4\ntensor a f32 4\ntensor r f32 4\ntensor p i32 1\n";
    static const char *const rec[] = {"layer c conv r into=r\nlayer r add r\n", "layer c conv r into=a\n",
                                      "layer c conv r fused=r\n"};
    cg_err e;
    for (int i = 0; i < 3; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s%s", head, rec[i],
                 "kernel k layer=c template=conv2d_direct in=input out=r grid=N*1/32,1,1 block=32,1,1 shared=0 "
                 "weights=none bias=none args=in,out,weights,bias,n\n"
                 "kernel m layer=predict template=argmax in=r out=p grid=N*1/32,1,1 block=32,1,1 shared=0 "
                 "weights=none bias=none args=in,out,weights,bias,n\n"
                 "input input\noutput r\npredict p\nhash 0123456789abcdef\n");
        int rc = cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, &e);
        if (i == 0)
            CHECK(rc == 0 && m->nlayers == 2 && !strcmp(m->l[0].into, "r") && m->l[0].out == cg_manifest_tensor(m, "r") &&
                      !m->l[1].into[0],
                  "into=r parses: %s", rc ? e.msg : "");
        else
            CHECK(rc != 0 && strstr(e.msg, "t/manifest.txt:9: bad layer record") && strstr(e.msg, "into=ITS_TENSOR"),
                  "record %d refused: %s", i, rc ? e.msg : "(accepted)");
    }
}

/* Every role of the C table declared by common.kernel_head, in the order given,
 * and its roles string parsed back into the same roles. */
static void test_lua_roles(void)
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
        lua_getfield(L, -1, "kernel_head");
        lua_pushstring(L, "k");
        lua_pushinteger(L, 128);
        lua_createtable(L, CG_ARG_ROLES, 0);
        for (int r = CG_ARG_ROLES - 1, i = 1; r >= 0; r--, i++) { /* the table's order reversed */
            lua_createtable(L, 1, 0);
            lua_pushstring(L, cg_arg_role_name((cg_arg_role)r));
            lua_rawseti(L, -2, 1);
            lua_rawseti(L, -2, i);
        }
        rc = lua_pcall(L, 3, 2, 0);
        CHECK(rc == LUA_OK, "kernel_head with every role: %s", rc ? lua_tostring(L, -1) : "");
        if (rc == LUA_OK) {
            const char *head = lua_tostring(L, -2), *roles = lua_tostring(L, -1);
            cg_arg_role r[CG_MAX_ARGS];
            int n = 0;
            CHECK(roles && cg_args_parse(roles, r, &n) == 0 && n == CG_ARG_ROLES, "roles '%s' parse",
                  roles ? roles : "(none)");
            for (int i = 0; i < n; i++) CHECK((int)r[i] == CG_ARG_ROLES - 1 - i, "role %d in order", i);
            CHECK(head && strstr(head, "k(const float* __restrict__ in3, const float* __restrict__ in2,") &&
                      strstr(head, " const float* __restrict__ in1, int n, ") &&
                      strstr(head, "float* __restrict__ out, const float* __restrict__ in)"),
                  "further inputs declared const: %s", head ? head : "(none)");
        }
    }
    cg_lua_close(h);
}

int main(void)
{
    {
        cg_manifest *lm = malloc(sizeof *lm);
        if (lm) test_layer_into(lm);
        free(lm);
    }
    cg_manifest *m = malloc(sizeof *m);
    if (!m) return 1;
    test_inputs(m);
    test_refusals(m);
    test_pdl(m);
    test_wdtype(m);
    test_lua_roles();
    free(m);
    return cg_test_done("test_manifest");
}
