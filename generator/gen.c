/* gen.c — drive the templates: spec -> Lua table -> kernels -> files + manifest.
 *
 * Which kernels a layer needs, their sources and launch geometry are decided by
 * templates/lib/planner.lua; this file converts between C and Lua, maps template
 * failures back to positions in the spec, writes file headers and the manifest. */
#include "gen.h"
#include "lua_host.h"
#include "op.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static void set_int(lua_State *L, const char *k, long long v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

/* A float as a C literal's digits: shortest text that round-trips through float,
 * always with a '.' or exponent so that appending 'f' is valid C. */
static void float_text(double v, char out[48])
{
    snprintf(out, 48, "%.9g", v);
    if (!strpbrk(out, ".eE")) strcat(out, ".0");
}

static int push_params(lua_State *L, const char *text, cg_err *e);

/* The target as the Lua table templates read (net.target, l.target). */
static void push_target(lua_State *L, const cg_target *tg)
{
    lua_createtable(L, 0, 7);
    set_int(L, "cc", tg->cc);
    set_int(L, "max_shared", tg->max_shared_optin);
    set_int(L, "regs_per_block", tg->regs_per_block);
    set_int(L, "regs_per_sm", tg->regs_per_sm);
    set_int(L, "sms", tg->sms);
    set_int(L, "max_threads", tg->max_threads);
    lua_pushboolean(L, tg->sm90a);
    lua_setfield(L, -2, "sm90a");
    if (tg->batch > 0) set_int(L, "batch", tg->batch);
}

void cg_gen_push_net(lua_State *L, const cg_spec *s, const cg_target *tg)
{
    char t[48];
    cg_target def;
    if (!tg) cg_target_default(&def), tg = &def;
    lua_createtable(L, 0, 9);
    push_target(L, tg);
    lua_setfield(L, -2, "target");
    set_str(L, "name", s->name);
    set_int(L, "C", s->C);
    set_int(L, "H", s->H);
    set_int(L, "W", s->W);
    float_text(s->scale, t);
    set_str(L, "scale_text", t);
    float_text(s->offset, t);
    set_str(L, "offset_text", t);
    /* the precision generated: the spec's, or its precision_fallback where the target cannot run bf16 */
    set_str(L, "precision", cg_precision_name(cg_spec_precision_on(s, tg->cc)));
    if (s->norm) {
        /* x = pixel * (scale / std[c]) + (-mean[c] / std[c]): the input kernel's
         * factor and term per channel, as float literals */
        lua_createtable(L, s->C, 0);
        for (int c = 0; c < s->C; c++) {
            lua_createtable(L, 2, 0);
            float_text((float)(s->scale / s->std[c]), t);
            lua_pushstring(L, t);
            lua_rawseti(L, -2, 1);
            float_text((float)(-s->mean[c] / s->std[c]), t);
            lua_pushstring(L, t);
            lua_rawseti(L, -2, 2);
            lua_rawseti(L, -2, c + 1);
        }
        lua_setfield(L, -2, "norm");
    }
    lua_createtable(L, s->nlayers, 0);
    for (int i = 0; i < s->nlayers; i++) {
        /* the layer as it runs: a conv a batchnorm folds into gains a bias and
         * the batchnorm's activation, the batchnorm runs no kernel (folded) */
        cg_layer run;
        cg_spec_run_layer(s, i, 1, &run);
        const cg_layer *l = &run;
        lua_createtable(L, 0, 20);
        set_int(L, "index", i + 1);
        set_str(L, "name", l->name);
        set_str(L, "op", cg_op_name(l->op));
        if (cg_ops[l->op].family) set_str(L, "family", cg_ops[l->op].family); /* absent: one template, the op's */
        set_int(L, "C", l->C);
        set_int(L, "H", l->H);
        set_int(L, "W", l->W);
        set_int(L, "M", l->M);
        set_int(L, "K", l->K);
        set_int(L, "pool", l->pool);
        if (l->op == CG_OP_CONV) {
            set_int(L, "pad_t", l->pad[0]);
            set_int(L, "pad_l", l->pad[1]);
            set_int(L, "pad_b", l->pad[2]);
            set_int(L, "pad_r", l->pad[3]);
            set_int(L, "stride", l->stride > 0 ? l->stride : 1);
            set_int(L, "pool_stride", l->pool_stride > 0 ? l->pool_stride : l->pool);
            set_str(L, "pool_op", cg_pool_name(l));
            if (l->pool_pad) set_int(L, "pool_pad", l->pool_pad);
            set_int(L, "groups", cg_layer_groups(l));
        }
        if (l->bn_folded) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "folded");
        }
        set_int(L, "out", l->out);
        lua_pushboolean(L, l->bias);
        lua_setfield(L, -2, "bias");
        set_str(L, "act", cg_act_name(l->act));
        set_str(L, "strategy", l->strategy);
        set_str(L, "precision", cg_precision_name(cg_layer_precision_on(l, tg->cc)));
        set_int(L, "OC", l->OC);
        set_int(L, "OH", l->OH);
        set_int(L, "OW", l->OW);
        lua_createtable(L, 0, l->nparams);
        for (int j = 0; j < l->nparams; j++) set_int(L, l->params[j].key, l->params[j].value);
        lua_setfield(L, -2, "params");
        /* the tuning record's choice for the bucket generated for (cg_tune_apply checked
         * it): { template, bucket, params }, which the planner takes as it stands; params
         * that do not read as "k=v" leave the layer without one */
        const cg_bucket_tuned *bt = cg_spec_bucket_tuned(s, i, tg->batch);
        if (bt) {
            int top = lua_gettop(L);
            cg_err pe;
            lua_createtable(L, 0, 3);
            set_str(L, "template", bt->tpl);
            set_int(L, "bucket", bt->bucket);
            if (push_params(L, bt->params, &pe)) {
                lua_settop(L, top);
            } else {
                lua_setfield(L, -2, "params");
                lua_setfield(L, -2, "tuned");
            }
        }
        /* the tensors it reads, by name: a layer's output is its name, the network's input "input" */
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        lua_createtable(L, nin, 0);
        for (int k = 0; k < nin; k++) {
            lua_pushstring(L, in[k] < 0 ? "input" : s->layers[in[k]].name);
            lua_rawseti(L, -2, k + 1);
        }
        lua_setfield(L, -2, "inputs");
        lua_getfield(L, -3, "target"); /* every layer shares the network's table */
        lua_setfield(L, -2, "target");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "layers");
}

/* Lua-callable (planner module, net, layer index): the layer's template name
 * and, for its first parameter with no legal value and no default, its name and
 * doc (else nil, nil). Run through cg_lua_pcall: within the sandbox's limits. */
static int no_legal_value(lua_State *L)
{
    lua_settop(L, 4); /* 4: the template name, when given */
    lua_getfield(L, 1, "layer_table");
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_call(L, 2, 1); /* 5: l */
    if (lua_isnil(L, 4)) {
        lua_getfield(L, 1, "layer_template");
        lua_pushvalue(L, 5);
        lua_call(L, 1, 1);
        lua_replace(L, 4);
    }
    lua_getglobal(L, "import");
    lua_pushvalue(L, 4);
    lua_call(L, 1, 1); /* 6: T */
    lua_getfield(L, 6, "params"); /* 7 */
    for (lua_Integer i = 1; lua_istable(L, 7) && lua_geti(L, 7, i) == LUA_TTABLE; i++) { /* 8: d */
        lua_getfield(L, 8, "legal");
        lua_pushvalue(L, 5);
        lua_call(L, 1, 1); /* 9 */
        if (!lua_istable(L, 9) || lua_rawlen(L, 9) == 0) {
            lua_getfield(L, 8, "default");
            lua_pushvalue(L, 5);
            lua_newtable(L);
            lua_call(L, 2, 1); /* 10 */
            if (lua_isnil(L, 10)) {
                lua_pushvalue(L, 4);
                lua_getfield(L, 8, "name");
                lua_getfield(L, 8, "doc");
                return 3;
            }
        }
        lua_settop(L, 7);
    }
    lua_pushvalue(L, 4);
    lua_pushnil(L);
    lua_pushnil(L);
    return 3;
}

/* What to say when the template's search for a configuration of layer li
 * failed without a message: which parameter has no legal value there, else
 * that no configuration of the template suits it. tpl: the template searched,
 * NULL for the layer's own. */
static void explain_no_config(const cg_spec *s, const cg_target *tg, int li, const char *tpl, char *out, size_t n)
{
    snprintf(out, n, "no configuration of its template suits this layer");
    cg_lua *h;
    cg_err e;
    if (cg_lua_open(&h, NULL, &e)) return;
    lua_State *L = cg_lua_state(h);
    if (!cg_lua_import(h, "lib/planner", &e)) {
        lua_pushcfunction(L, no_legal_value);
        lua_insert(L, -2);
        cg_gen_push_net(L, s, tg);
        lua_pushinteger(L, li + 1);
        if (tpl) lua_pushstring(L, tpl);
        else lua_pushnil(L);
        if (!cg_lua_pcall(h, 4, 3, &e)) {
            const char *t = lua_tostring(L, -3), *name = lua_tostring(L, -2), *doc = lua_tostring(L, -1);
            if (t && name)
                snprintf(out, n, "%s has no legal value of %s on this layer%s%s%s", t, name, doc ? " (" : "",
                         doc ? doc : "", doc ? ")" : "");
            else if (t)
                snprintf(out, n, "no configuration of %s suits this layer", t);
        }
    }
    cg_lua_close(h);
}

/* A structured template failure ({cg_layer, cg_param, cg_where, message}) on top
 * of the stack, reported at the most precise position the spec has. */
static int map_failure(lua_State *L, const cg_spec *s, const cg_target *tg, cg_err *e)
{
    lua_getfield(L, -1, "cg_layer");
    int li = (int)lua_tointeger(L, -1) - 1;
    lua_getfield(L, -2, "cg_param");
    const char *param = lua_tostring(L, -1);
    lua_getfield(L, -3, "cg_where");
    const char *where = lua_tostring(L, -1);
    lua_getfield(L, -4, "message");
    const char *msg = lua_tostring(L, -1);
    char why[512];
    if (!msg && li >= 0 && li < s->nlayers && !param) explain_no_config(s, tg, li, NULL, why, sizeof why), msg = why;
    if (!msg) msg = "template failure";
    if (li < 0 || li >= s->nlayers)
        return cg_fail(e, "%s:1:1: %s", s->path, msg);
    const cg_layer *l = &s->layers[li];
    cg_pos pos = l->strategy[0] ? l->strategy_pos : l->pos;
    if (param) {
        int found = 0;
        for (int j = 0; j < l->nparams; j++) {
            if (strcmp(l->params[j].key, param) == 0) {
                pos = (where && strcmp(where, "key") == 0) ? l->params[j].key_pos : l->params[j].pos;
                found = 1;
            }
        }
        if (!found && l->nparams) pos = l->params_pos;
    }
    return cg_fail(e, "%s:%d:%d: layer '%s': %s", s->path, pos.line, pos.col, l->name, msg);
}

/* Hash identifying a template's code: its file and the shared library files
 * (every templates/lib/ file convgen embeds: a template's output may depend on
 * any of them), each read as the generator reads it (embedded, or from the
 * template directory that replaces them). */
static void template_hash(cg_lua *h, const char *tpl, char out[17])
{
    static const char lib[] = "templates/lib/";
    size_t len = 0;
    const char *t = cg_lua_template_text(h, tpl, &len);
    uint64_t x = cg_hash64(t ? t : "", t ? len : 0, CG_HASH_SEED);
    for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++) {
        char name[64]; /* "templates/lib/NAME.lua" -> "lib/NAME" */
        if (strncmp(f->path, lib, sizeof lib - 1) || cg_template_name(f->path, name, sizeof name) < 0) continue;
        t = cg_lua_template_text(h, name, &len);
        x = cg_hash64(t ? t : "", t ? len : 0, x);
    }
    cg_hex64(x, out);
}

/* field k of the table on top, as a string copied into dst (must exist). */
static int get_str(lua_State *L, const char *k, char *dst, size_t cap, cg_err *e)
{
    lua_getfield(L, -1, k);
    const char *v = lua_tostring(L, -1);
    if (!v || strlen(v) >= cap) {
        lua_pop(L, 1);
        return cg_fail(e, "templates/lib/planner.lua: kernel field '%s' missing or too long", k);
    }
    strcpy(dst, v);
    lua_pop(L, 1);
    return 0;
}

/* The record's `inputs` (table on top): 1 to CG_MAX_INPUTS tensor names, written
 * into dst as the manifest's comma list. */
static int get_inputs(lua_State *L, const char *kernel, char *dst, size_t cap, cg_err *e)
{
    lua_getfield(L, -1, "inputs");
    int ok = lua_istable(L, -1);
    size_t at = 0;
    lua_Integer i = 1;
    dst[0] = 0;
    for (; ok && lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
        const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        size_t n = v ? strlen(v) : 0;
        ok = n && !strchr(v, ',') && i <= CG_MAX_INPUTS && at + n + 1 < cap;
        if (ok) at += (size_t)snprintf(dst + at, cap - at, "%s%s", i > 1 ? "," : "", v);
        lua_pop(L, 1);
    }
    lua_pop(L, ok ? 2 : 1);
    if (!ok || i == 1)
        return cg_fail(e, "templates/lib/planner.lua: kernel %s: 'inputs' is not a list of 1 to %d tensor names",
                       kernel, CG_MAX_INPUTS);
    return 0;
}

/* The record's optional `extra_out` (table on top): the tensors a kernel writes
 * besides `out` (ops/tail.lua: the softmax's and the predictions), at most
 * CG_MAX_OUTPUTS - 1 names, appended to out (its manifest list, "fc2,prob,predict"). */
static int get_extra_out(lua_State *L, const char *kernel, char *out, size_t cap, cg_err *e)
{
    lua_getfield(L, -1, "extra_out");
    const int list = lua_istable(L, -1);
    int ok = list || lua_isnil(L, -1);
    size_t at = strlen(out);
    lua_Integer i = 1;
    for (; ok && list && lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
        const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        size_t n = v ? strlen(v) : 0;
        ok = n && !strchr(v, ',') && i < CG_MAX_OUTPUTS && at + n + 1 < cap;
        if (ok) at += (size_t)snprintf(out + at, cap - at, ",%s", v);
        lua_pop(L, 1);
    }
    lua_pop(L, ok && list ? 2 : 1); /* (a list read to its end: its terminating nil too) */
    if (!ok)
        return cg_fail(e, "templates/lib/planner.lua: kernel %s: 'extra_out' is not a list of at most %d tensor names",
                       kernel, CG_MAX_OUTPUTS - 1);
    return 0;
}

/* "N*a/b" or a positive integer: the forms a grid extent may take; the x extent
 * (x set) also "res:CAP", a whole-network kernel's: as many blocks as are
 * resident at once, at most CAP (the runtime refuses it on any other kernel). */
static int grid_text(lua_State *L, int idx, int x, char out[64], cg_err *e)
{
    if (lua_isinteger(L, idx)) {
        long long v = lua_tointeger(L, idx);
        if (v < 1 || v > 0x7fffffffLL) return cg_fail(e, "templates: grid extent %lld out of range", v);
        snprintf(out, 64, "%lld", v);
        return 0;
    }
    const char *s = lua_tostring(L, idx);
    long long a, b;
    char tail;
    int res = x && s && sscanf(s, "res:%lld%c", &a, &tail) == 1 && a >= 1 && a <= 0x7fffffffLL;
    if (!res && (!s || sscanf(s, "N*%lld/%lld%c", &a, &b, &tail) != 2 || a < 1 || b < 1))
        return cg_fail(e, "templates: bad grid extent '%s' (expected an integer or N*a/b%s)",
                       s ? s : "?", x ? ", or res:CAP" : "");
    snprintf(out, 64, "%s", s);
    return 0;
}

/* A kernel name is also a file name and a C identifier: [A-Za-z_][A-Za-z0-9_]*. */
static int is_identifier(const char *s, size_t n)
{
    if (!n || (!isalpha((unsigned char)s[0]) && s[0] != '_')) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return 0;
    return 1;
}

/* Read one kernel record (table on top) into k and append its manifest line;
 * launch (may be NULL) receives the launch facts. tg: the target the code is
 * for (NULL: the conservative default). */
static int take_kernel(cg_lua *h, const cg_spec *s, const char *regen, const cg_target *tg,
                       cg_gen_kernel *k, cg_buf *man, cg_kernel_launch *launch, cg_err *e)
{
    lua_State *L = cg_lua_state(h);
    char in[CG_MAX_INPUTS * (CG_NAME_MAX + 17)], out[CG_MAX_OUTPUTS * (CG_NAME_MAX + 17)], weights[200], bias[200],
        params[512],
        shape[512], grid[3][64], args[8192];
    long long block[3], shared;
    if (get_str(L, "name", k->kernel, sizeof k->kernel, e) ||
        get_str(L, "template", k->tpl, sizeof k->tpl, e) ||
        get_str(L, "layer", k->layer, sizeof k->layer, e) || get_inputs(L, k->kernel, in, sizeof in, e) ||
        get_str(L, "out", out, sizeof out, e) || get_extra_out(L, k->kernel, out, sizeof out, e) ||
        get_str(L, "weights", weights, sizeof weights, e) ||
        get_str(L, "bias", bias, sizeof bias, e) || get_str(L, "params", params, sizeof params, e) ||
        get_str(L, "shape", shape, sizeof shape, e) || get_str(L, "args", args, sizeof args, e))
        return -1;
    char tfile[sizeof k->tpl + 64]; /* the template's file, for messages and the header */
    if (cg_template_path(NULL, k->tpl, tfile, sizeof tfile) < 0)
        return cg_fail(e, "templates/lib/planner.lua: kernel template '%s' is not a template name", k->tpl);
    /* the kernel's parameters by role (common.kernel_head; a whole-network kernel's
     * t:TENSOR, w:LAYER, b:LAYER name tensors and layers); the runtime checks the names */
    if (!args[0] || strspn(args, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,:_.-") != strlen(args))
        return cg_fail(e, "%s: kernel args '%s' are not a list of roles", tfile, args);
    if (!is_identifier(k->kernel, strlen(k->kernel)))
        return cg_fail(e, "%s: kernel name '%s' is not an identifier", tfile,
                       k->kernel);
    /* these go into the file's header comment and the manifest: one line each */
    const char *fields[][2] = {{"layer", k->layer}, {"in", in}, {"out", out}, {"weights", weights},
                               {"bias", bias}, {"params", params}, {"shape", shape},
                               {"template", k->tpl}, {"spec path", s->path}, {"regenerate", regen}};
    for (size_t f = 0; f < sizeof fields / sizeof *fields; f++)
        for (const char *c = fields[f][1]; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return cg_fail(e, "%s: kernel '%s': %s contains control "
                               "character 0x%02x", tfile, k->kernel, fields[f][0],
                               (unsigned)(unsigned char)*c);
    snprintf(k->file, sizeof k->file, "%s.cu", k->kernel);
    lua_getfield(L, -1, "grid");
    lua_getfield(L, -2, "block");
    for (int d = 0; d < 3; d++) {
        lua_rawgeti(L, -2, d + 1);
        int rc = grid_text(L, -1, d == 0, grid[d], e);
        lua_pop(L, 1);
        lua_rawgeti(L, -1, d + 1);
        block[d] = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (rc) return lua_pop(L, 2), -1;
        if (block[d] < 1 || block[d] > 1024)
            return lua_pop(L, 2), cg_fail(e, "%s: block extent out of range", tfile);
    }
    lua_pop(L, 2);
    if (block[0] * block[1] * block[2] > 1024)
        return cg_fail(e, "%s: more than 1024 threads per block", tfile);
    lua_getfield(L, -1, "shared");
    shared = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (shared < 0 || shared > tg->max_shared_optin)
        return cg_fail(e, "%s: kernel %s asks for %lld bytes of shared memory; the "
                          "target (cc %d) allows 0 to %d", tfile, k->kernel, shared, tg->cc,
                       tg->max_shared_optin);
    lua_getfield(L, -1, "source");
    size_t slen = 0;
    const char *src = lua_tolstring(L, -1, &slen);
    if (!src) return lua_pop(L, 1), cg_fail(e, "%s: kernel has no source", tfile);

    /* optional: why `strategy: auto` chose this template */
    char chosen[512] = "";
    lua_getfield(L, -2, "chosen");
    if (lua_type(L, -1) == LUA_TSTRING) snprintf(chosen, sizeof chosen, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    /* optional: the precision its products are computed in, where the layer's is not fp32 */
    char prec[160] = "";
    lua_getfield(L, -2, "precision_line");
    if (lua_type(L, -1) == LUA_TSTRING) snprintf(prec, sizeof prec, "// precision:  %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    template_hash(h, k->tpl, k->tpl_hash);
    cg_buf b;
    cg_buf_init(&b);
    int bad = cg_buf_printf(&b,
        "// Generated by convgen %s from templates; do not edit, regenerate instead.\n"
        "// spec:       %s (network %s)\n"
        "// layer:      %s\n"
        "// shape:      %s\n"
        "// template:   %s (%s, hash %s)%s%s\n"
        "%s"
        "// params:     %s\n"
        "// launch:     grid (%s, %s, %s) where N = images, block (%lld, %lld, %lld), "
        "%lld B shared\n"
        "// weights:    %s, bias %s\n"
        "// regenerate: %s\n\n",
        CG_VERSION, s->path, s->name, k->layer, shape, k->tpl, tfile, k->tpl_hash,
        chosen[0] ? ", " : "", chosen, prec, params[0] ? params : "(none)", grid[0], grid[1], grid[2], block[0], block[1], block[2],
        shared, weights, bias, regen);
    k->header_len = b.len;
    bad = bad || cg_buf_add(&b, src, slen);
    lua_pop(L, 1);
    /* optional: the source opens with the programmatic-dependent-launch prologue
     * (common.add_pdl): the runtime may launch it with programmatic stream
     * serialization; the field is written only when set */
    lua_getfield(L, -1, "pdl");
    int pdl = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* optional: the 16-bit type its weights and bias are read in (absent: f32) */
    char wdt[8] = "";
    lua_getfield(L, -1, "wdtype");
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *d = lua_tostring(L, -1);
        if (strcmp(d, "f16") && strcmp(d, "bf16") && strcmp(d, "f32")) {
            lua_pop(L, 1);
            cg_buf_free(&b);
            return cg_fail(e, "%s: kernel %s: wdtype '%s' is none of f32, f16, bf16", tfile, k->kernel, d);
        }
        if (strcmp(d, "f32")) snprintf(wdt, sizeof wdt, "%s", d);
    }
    lua_pop(L, 1);
    /* optional: the whole-network kernel (whole = true) and the bytes of its zeroed
     * scratch buffer (scratch = N); written only when set */
    lua_getfield(L, -1, "whole");
    int whole = lua_toboolean(L, -1);
    lua_getfield(L, -2, "scratch");
    long long scratch = lua_isinteger(L, -1) ? (long long)lua_tointeger(L, -1) : 0;
    int bad_scratch = !lua_isnil(L, -1) && (!lua_isinteger(L, -1) || scratch < 1 || scratch > (1LL << 30) || !whole);
    lua_pop(L, 2);
    if (bad_scratch) {
        cg_buf_free(&b);
        return cg_fail(e, "%s: kernel %s: scratch must be a whole-network kernel's bytes, 1 to 2^30", tfile, k->kernel);
    }
    if (!whole && !strncmp(grid[0], "res:", 4)) {
        cg_buf_free(&b);
        return cg_fail(e, "%s: kernel %s: grid res:CAP is the whole-network kernel's alone", tfile, k->kernel);
    }
    /* optional: the host input it runs for (feed = "u8" or "f32": planner.pixel_twin) */
    char feed[12] = "";
    lua_getfield(L, -1, "feed");
    if (!lua_isnil(L, -1)) {
        const char *f = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
        if ((strcmp(f, "u8") && strcmp(f, "f32")) || whole) {
            lua_pop(L, 1);
            cg_buf_free(&b);
            return cg_fail(e, "%s: kernel %s: feed must be u8 or f32, on a per-layer kernel", tfile, k->kernel);
        }
        snprintf(feed, sizeof feed, " feed=%s", f);
    }
    lua_pop(L, 1);
    char extra[64] = "";
    if (whole) snprintf(extra, sizeof extra, scratch ? " whole=1 scratch=%lld" : " whole=1", scratch);
    size_t line_at = man->len;
    bad = bad || cg_buf_printf(man,
        "kernel %s layer=%s template=%s in=%s out=%s grid=%s,%s,%s block=%lld,%lld,%lld "
        "shared=%lld weights=%s bias=%s args=%s%s%s%s%s%s\n",
        k->kernel, k->layer, k->tpl, in, out, grid[0], grid[1], grid[2], block[0], block[1],
        block[2], shared, weights, bias, args, pdl ? " pdl=1" : "", wdt[0] ? " wdtype=" : "", wdt, feed, extra);
    if (!bad && launch) {
        memset(launch, 0, sizeof *launch);
        for (int d = 0; d < 3; d++) {
            snprintf(launch->grid[d], sizeof launch->grid[d], "%s", grid[d]);
            launch->block[d] = (int)block[d];
        }
        launch->shared = (int)shared;
        snprintf(launch->weights, sizeof launch->weights, "%s", weights);
        snprintf(launch->bias, sizeof launch->bias, "%s", bias);
        snprintf(launch->args, sizeof launch->args, "%s", args);
        snprintf(launch->wdtype, sizeof launch->wdtype, "%s", wdt);
        snprintf(launch->params, sizeof launch->params, "%s", params);
        snprintf(launch->record, sizeof launch->record, "%.*s", (int)(man->len - line_at - 1),
                 man->data + line_at);
        lua_getfield(L, -1, "in_elems");
        lua_getfield(L, -2, "out_elems");
        lua_getfield(L, -3, "fused");
        launch->in_elems = lua_tointeger(L, -3);
        launch->out_elems = lua_tointeger(L, -2);
        launch->fused = lua_toboolean(L, -1);
        lua_pop(L, 3);
    }
    if (bad) {
        cg_buf_free(&b);
        return cg_fail(e, "out of memory");
    }
    k->source = b.data;
    k->source_len = b.len;
    return 0;
}

/* The header's layer line of k ("// layer:      NAME\n"): its start and end. */
static void layer_line(const cg_gen_kernel *k, size_t *at, size_t *end)
{
    static const char tag[] = "\n// layer:      ";
    const char *p = NULL;
    for (size_t i = 0; !p && i + sizeof tag - 1 <= k->header_len; i++)
        if (!memcmp(k->source + i, tag, sizeof tag - 1)) p = k->source + i;
    const char *nl = p ? memchr(p + 1, '\n', k->header_len - (size_t)(p + 1 - k->source)) : NULL;
    if (!nl) { /* not there: the whole text is compared */
        *at = *end = 0;
        return;
    }
    *at = (size_t)(p + 1 - k->source);
    *end = (size_t)(nl + 1 - k->source);
}

int cg_gen_same_kernel(const cg_gen_kernel *a, const cg_gen_kernel *b)
{
    size_t a0, a1, b0, b1;
    layer_line(a, &a0, &a1);
    layer_line(b, &b0, &b1);
    return a0 == b0 && a->source_len - a1 == b->source_len - b1 && !memcmp(a->source, b->source, a0) &&
           !memcmp(a->source + a1, b->source + b1, a->source_len - a1);
}

/* Append ", LAYER" to k's header layer line, unless it names LAYER already. */
static int add_layer(cg_gen_kernel *k, const char *layer, cg_err *e)
{
    size_t at, end;
    layer_line(k, &at, &end);
    if (end <= at) return 0;
    const char *names = k->source + at + strlen("// layer:      ");
    size_t nlen = k->source + end - 1 - names, ll = strlen(layer);
    for (const char *p = names; p < names + nlen;) { /* "a, b, c" */
        const char *q = memchr(p, ',', (size_t)(names + nlen - p));
        size_t n = q ? (size_t)(q - p) : (size_t)(names + nlen - p);
        if (n == ll && !memcmp(p, layer, ll)) return 0;
        p = q ? q + 2 : names + nlen;
    }
    char *src = malloc(k->source_len + ll + 3);
    if (!src) return cg_fail(e, "out of memory");
    memcpy(src, k->source, end - 1);
    memcpy(src + end - 1, ", ", 2);
    memcpy(src + end + 1, layer, ll);
    memcpy(src + end + 1 + ll, k->source + end - 1, k->source_len - (end - 1) + 1);
    free(k->source);
    k->source = src;
    k->source_len += ll + 2;
    k->header_len += ll + 2;
    return 0;
}

/* Emit tensors, layers and kernels of the result table on top of the stack. */
static int take_result(cg_lua *h, const cg_spec *s, const char *regen, const cg_target *tg,
                       cg_gen_output *o, cg_err *e)
{
    lua_State *L = cg_lua_state(h);
    cg_buf man;
    cg_buf_init(&man);
    lua_getfield(L, -1, "max_batch");
    long long max_batch = lua_tointeger(L, -1);
    lua_pop(L, 1);
    int bad = cg_buf_printf(&man, "convgen-manifest 1\nnetwork %s\ngenerator %s\nmax_batch %lld\n",
                            s->name, CG_VERSION, max_batch);
    if (!bad && tg && tg->batch > 0) bad = cg_buf_printf(&man, "bucket %d\n", tg->batch);
    if (!bad && o->note[0]) bad = cg_buf_printf(&man, "# %s\n", o->note);
    lua_getfield(L, -1, "tensors");
    for (lua_Integer i = 1; !bad && lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
        lua_getfield(L, -1, "name");
        lua_getfield(L, -2, "dtype");
        lua_getfield(L, -3, "elems");
        lua_getfield(L, -4, "view");     /* a view of a concat's output (planner.concat_slices) */
        lua_getfield(L, -5, "view_off"); /* its first element in the concat's image */
        lua_getfield(L, -6, "hwc");      /* channels-last: { C, H, W } (planner.hwc_handoffs) */
        long long hwc[3] = {0, 0, 0};
        for (int d = 0; d < 3 && lua_type(L, -1) == LUA_TTABLE; d++) {
            lua_rawgeti(L, -1, d + 1);
            hwc[d] = (long long)lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        bad = cg_buf_printf(&man, "tensor %s %s %lld", lua_tostring(L, -5), lua_tostring(L, -4),
                            (long long)lua_tointeger(L, -3)) ||
              (lua_type(L, -2) == LUA_TSTRING &&
               cg_buf_printf(&man, " view=%s:%lld", lua_tostring(L, -2), (long long)lua_tointeger(L, -1))) ||
              (hwc[0] && cg_buf_printf(&man, " hwc=%lld.%lld.%lld", hwc[0], hwc[1], hwc[2])) ||
              cg_buf_printf(&man, "\n");
        lua_pop(L, 6);
    }
    lua_pop(L, 2);
    lua_getfield(L, -1, "layers");
    for (lua_Integer i = 1; !bad && lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
        lua_getfield(L, -1, "name");
        lua_getfield(L, -2, "op");
        lua_getfield(L, -3, "out");
        lua_getfield(L, -4, "fused_into"); /* the add whose kernel computes this layer's output too */
        bad = cg_buf_printf(&man, "layer %s %s %s", lua_tostring(L, -4), lua_tostring(L, -3), lua_tostring(L, -2)) ||
              (lua_type(L, -1) == LUA_TSTRING && cg_buf_printf(&man, " into=%s", lua_tostring(L, -1))) ||
              cg_buf_printf(&man, "\n");
        lua_pop(L, 5);
    }
    lua_pop(L, 2);
    lua_getfield(L, -1, "kernels");
    for (lua_Integer i = 1; !bad && lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
        if (o->nkernels >= CG_MAX_KERNELS) {
            lua_pop(L, 2);
            cg_buf_free(&man);
            return cg_fail(e, "%s: more than %d kernels", s->path, CG_MAX_KERNELS);
        }
        if (take_kernel(h, s, regen, tg, &o->k[o->nkernels], &man, NULL, e)) {
            lua_pop(L, 2);
            cg_buf_free(&man);
            return -1;
        }
        /* a kernel used by two layers (same name, same source but for the header's
         * layer line) is one file, whose layer line names every layer using it */
        cg_gen_kernel *k = &o->k[o->nkernels];
        int dup = 0;
        for (int j = 0; j < o->nkernels && !dup; j++) {
            if (strcmp(o->k[j].kernel, k->kernel)) continue;
            dup = 1;
            int rc = cg_gen_same_kernel(&o->k[j], k) ? add_layer(&o->k[j], k->layer, e)
                                              : cg_fail(e, "%s: two different kernels are both named '%s'",
                                                        s->path, k->kernel);
            if (rc) {
                lua_pop(L, 2);
                cg_buf_free(&man);
                free(k->source);
                k->source = NULL;
                return -1;
            }
        }
        if (dup) free(k->source), k->source = NULL;
        else o->nkernels++;
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    lua_getfield(L, -1, "input");
    lua_getfield(L, -2, "output");
    lua_getfield(L, -3, "predict");
    bad = bad || cg_buf_printf(&man, "input %s\noutput %s\npredict %s\n", lua_tostring(L, -3),
                               lua_tostring(L, -2), lua_tostring(L, -1));
    lua_pop(L, 3);
    if (bad) {
        cg_buf_free(&man);
        return cg_fail(e, "out of memory");
    }
    /* the hash covers the manifest body and every kernel's code: one build, one id */
    uint64_t x = cg_hash64(man.data, man.len, CG_HASH_SEED);
    for (int i = 0; i < o->nkernels; i++)
        x = cg_hash64(o->k[i].source + o->k[i].header_len, o->k[i].source_len - o->k[i].header_len, x);
    cg_hex64(x, o->hash);
    if (cg_buf_printf(&man, "hash %s\n", o->hash)) {
        cg_buf_free(&man);
        return cg_fail(e, "out of memory");
    }
    o->manifest = man.data;
    o->manifest_len = man.len;
    return 0;
}

/* Every conv's and fc's strategy (but auto) names a template conv2d_<strategy> / fc_<strategy>;
 * say which exist if not. */
static int check_strategies(cg_lua *h, const cg_spec *s, cg_err *e)
{
    for (int i = 0; i < s->nlayers; i++) {
        const cg_layer *l = &s->layers[i];
        const char *prefix = cg_ops[l->op].family;
        if (!prefix || !strcmp(l->strategy, "auto")) continue;
        size_t plen = strlen(prefix);
        char name[CG_NAME_MAX + 16];
        (void)cg_op_template(l, l->strategy, name, sizeof name);
        if (cg_lua_template_exists(h, name)) continue;
        char known[512] = "auto", t[CG_NAME_MAX + 16];
        for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++) {
            if (cg_template_name(f->path, t, sizeof t) < 0 || strncmp(t, prefix, plen) || strchr(t, '/')) continue;
            size_t n = strlen(known);
            snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", t + plen);
        }
        return cg_fail(e, "%s:%d:%d: unknown strategy '%s' for layer '%s' (known: %s)", s->path,
                       l->strategy_pos.line, l->strategy_pos.col, l->strategy, l->name, known);
    }
    return 0;
}

/* What extract() needs; it runs under cg_lua_pcall, so a template that hands
 * back tables with metamethods cannot run Lua code outside the sandbox limits.
 * take reads the two results (result, failure) at stack slots 2 and 3. */
typedef struct extract_ctx {
    cg_lua *h;
    const cg_spec *s;
    int (*take)(struct extract_ctx *c, lua_State *L);
    void *out;
    const char *arg;     /* take's own input (generate: the regenerate command) */
    const cg_target *tg; /* the target the code is for; NULL: the default */
    cg_err *e;
    int rc;
    const char *tpl;     /* the template a one-layer call names; NULL: the layer's own */
} extract_ctx;

/* Lua-callable: (ctx, result, failure) -> nothing; fills ctx. */
static int extract(lua_State *L)
{
    extract_ctx *c = lua_touserdata(L, 1);
    c->rc = c->take(c, L);
    return 0;
}

/* Run the function under the two results on top of the stack through extract. */
static int run_extract(extract_ctx *c)
{
    lua_State *L = cg_lua_state(c->h);
    lua_pushcfunction(L, extract);
    lua_insert(L, -3);
    lua_pushlightuserdata(L, c);
    lua_insert(L, -3);
    if (cg_lua_pcall(c->h, 3, 0, c->e)) return -1;
    return c->rc;
}

/* take for cg_generate: the network's result, or its failure at a spec position. */
static int take_network(extract_ctx *c, lua_State *L)
{
    if (lua_istable(L, 2)) {
        lua_settop(L, 2);
        return take_result(c->h, c->s, c->arg, c->tg, c->out, c->e);
    }
    if (lua_istable(L, 3)) {
        lua_settop(L, 3);
        return map_failure(L, c->s, c->tg, c->e);
    }
    return cg_fail(c->e, "templates/lib/planner.lua: generate returned no result");
}

int cg_generate(const cg_spec *s, const char *regen_cmd, cg_gen_output *out, cg_err *e)
{
    return cg_generate_for(s, regen_cmd, NULL, out, e);
}

int cg_generate_for(const cg_spec *s, const char *regen_cmd, const cg_target *t,
                    cg_gen_output *out, cg_err *e)
{
    cg_target def;
    if (!t) cg_target_default(&def), t = &def;
    memset(out, 0, sizeof *out);
    const cg_precision gen_p = cg_spec_precision_on(s, t->cc);
    if (gen_p != s->precision)
        snprintf(out->note, sizeof out->note,
                 "precision %s generated in place of %s: the target is sm_%d, below bf16's sm_%d (the spec's "
                 "precision_fallback)", cg_precision_name(gen_p), cg_precision_name(s->precision), t->cc,
                 CG_BF16_MIN_CC);
    cg_lua *h;
    if (cg_lua_open(&h, NULL, e)) return -1;
    lua_State *L = cg_lua_state(h);
    int rc = check_strategies(h, s, e);
    if (!rc) rc = cg_lua_import(h, "lib/planner", e);
    if (!rc) {
        lua_getfield(L, -1, "generate");
        cg_gen_push_net(L, s, t);
        rc = cg_lua_pcall(h, 1, 2, e);
        if (!rc) {
            extract_ctx c = {h, s, take_network, out, regen_cmd, t, e, 0, NULL};
            rc = run_extract(&c);
        }
    }
    cg_lua_close(h);
    if (rc) cg_gen_free(out);
    return rc;
}

void cg_gen_free(cg_gen_output *o)
{
    for (int i = 0; i < o->nkernels; i++) free(o->k[i].source);
    free(o->manifest);
    memset(o, 0, sizeof *o);
}

/* True if `name` (a .cu file) is written by this output. */
static int produced(const cg_gen_output *o, const char *name)
{
    for (int i = 0; i < o->nkernels; i++)
        if (strcmp(o->k[i].file, name) == 0) return 1;
    return 0;
}

/* Largest manifest.txt read back from an output directory. */
#define MANIFEST_MAX ((size_t)4 << 20)

/* dir/name, a regular file of at most MANIFEST_MAX bytes (never through a
 * link), into text; absent: text->data stays NULL and 0. */
static int read_small(int dfd, const char *dir, const char *name, cg_buf *text, cg_err *e)
{
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    if (fd < 0) return cg_fail(e, "%s/%s: cannot open: %s", dir, name, strerror(errno));
    struct stat st;
    int rc = cg_buf_add(text, "", 0) ? cg_fail(e, "out of memory") : 0; /* present, even if empty */
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        rc = cg_fail(e, "%s/%s: not a regular file; refusing to replace it", dir, name);
    else if ((size_t)st.st_size > MANIFEST_MAX)
        rc = cg_fail(e, "%s/%s: %lld bytes, too large for a convgen manifest", dir, name, (long long)st.st_size);
    for (char chunk[65536]; !rc;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = cg_fail(e, "%s/%s: read error: %s", dir, name, strerror(errno));
        else if (n == 0) break;
        else if (text->len + (size_t)n > MANIFEST_MAX || cg_buf_add(text, chunk, (size_t)n))
            rc = cg_fail(e, "%s/%s: too large for a convgen manifest", dir, name);
    }
    close(fd);
    return rc;
}

/* The .cu files a manifest's complete "kernel NAME ..." lines name, appended
 * to *names as "NAME.cu\0NAME.cu\0..."; -1 when out of memory. */
static int manifest_files(const char *text, cg_buf *names)
{
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end) break; /* a line cut short (a temp copy being written) names nothing */
        size_t len = (size_t)(end - line);
        if (len > 7 && !strncmp(line, "kernel ", 7)) {
            size_t n = strcspn(line + 7, " \n");
            if (is_identifier(line + 7, n) && n < 120 &&
                (cg_buf_add(names, line + 7, n) || cg_buf_add(names, ".cu", 4)))
                return -1;
        }
        line = end + 1;
    }
    return 0;
}

/* Whether a manifest's text ends as cg_generate ends one: "hash HEX16\n". */
static int ends_with_hash(const cg_buf *t)
{
    static const size_t n = 5 + 16 + 1;
    if (t->len < n || t->data[t->len - 1] != '\n' || (t->len > n && t->data[t->len - n - 1] != '\n')) return 0;
    const char *h = t->data + t->len - n;
    return !strncmp(h, "hash ", 5) && strspn(h + 5, "0123456789abcdef") == 16;
}

/* Whether "A\0B\0..." holds name. */
static int listed(const cg_buf *list, const char *name)
{
    for (size_t at = 0; list->data && at < list->len; at += strlen(list->data + at) + 1)
        if (!strcmp(list->data + at, name)) return 1;
    return 0;
}

/* The .cu files DIR's previous manifest names (its "kernel NAME ..." lines), as
 * "NAME.cu\0NAME.cu\0..." in *old, and its text in *text; none when there is no
 * manifest. A manifest.txt that is not a convgen manifest is refused: convgen
 * would replace a file it did not write. */
static int previous_files(int dfd, const char *dir, cg_buf *old, cg_buf *text, cg_err *e)
{
    cg_buf_init(old);
    cg_buf_init(text);
    int rc = read_small(dfd, dir, "manifest.txt", text, e);
    if (!rc && text->data && (strncmp(text->data, "convgen-manifest ", 17) || !ends_with_hash(text)))
        rc = cg_fail(e, "%s/manifest.txt: not a convgen manifest; refusing to replace it", dir);
    if (!rc && text->data && manifest_files(text->data, old)) rc = cg_fail(e, "out of memory");
    if (rc) cg_buf_free(old), cg_buf_free(text);
    return rc;
}

/* Write one file's bytes to a fresh temp name in the directory (O_EXCL, no links). */
static int write_temp(int dfd, const char *dir, const char *tmp, const char *target,
                      const char *p, size_t n, cg_err *e)
{
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return cg_fail(e, "%s/%s: cannot create: %s", dir, target, strerror(errno));
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            int err = errno;
            close(fd), unlinkat(dfd, tmp, 0);
            return cg_fail(e, "%s/%s: write failed: %s", dir, target, strerror(err));
        }
        p += w, n -= (size_t)w;
    }
    if (close(fd)) {
        int err = errno;
        unlinkat(dfd, tmp, 0);
        return cg_fail(e, "%s/%s: write failed: %s", dir, target, strerror(err));
    }
    return 0;
}

/* Temp files of generate runs are ".convgen-tmp-PID-N"; under the directory lock
 * any left are from runs that were killed. */
#define TMP_PREFIX ".convgen-tmp-"

/* The first line of every kernel file convgen writes (cg_generate_for). */
#define KERNEL_HEADER "// Generated by convgen "

/* Whether dir/name is a regular file that starts as convgen's kernels do. */
static int generated_kernel(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    char head[sizeof KERNEL_HEADER - 1];
    struct stat st;
    int ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && read(fd, head, sizeof head) == (ssize_t)sizeof head &&
             !memcmp(head, KERNEL_HEADER, sizeof head);
    close(fd);
    return ok;
}

/* A run killed while placing its files leaves the temp copy of a manifest
 * (its new one, renamed last, or the previous one, kept until the kernels
 * it alone named are removed). Kernel files such a manifest names, that the
 * manifest in place (cur) does not, and that carry convgen's kernel header,
 * were written by convgen and are named by no manifest now: they are removed
 * (the caller holds the directory lock; the temps are swept after). */
static void reclaim_killed(int dfd, const char *dir, const cg_buf *cur)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    cg_buf names;
    cg_buf_init(&names);
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) continue;
        cg_buf text;
        cg_buf_init(&text);
        cg_err ignored;
        if (!read_small(dfd, dir, de->d_name, &text, &ignored) && text.data &&
            !strncmp(text.data, "convgen-manifest ", 17))
            manifest_files(text.data, &names);
        cg_buf_free(&text);
    }
    closedir(d);
    for (size_t at = 0; names.data && at < names.len; at += strlen(names.data + at) + 1) {
        const char *name = names.data + at;
        if (!listed(cur, name) && generated_kernel(dfd, name)) unlinkat(dfd, name, 0);
    }
    cg_buf_free(&names);
}

/* Remove temp files killed runs left (the caller holds the directory lock). */
static void sweep_temps(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    for (struct dirent *de; (de = readdir(d));)
        if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) unlinkat(dfd, de->d_name, 0);
    closedir(d);
}

/* The directories of `dir` that do not exist yet, deepest last, "a\0a/b\0". */
static int missing_dirs(const char *dir, cg_buf *out)
{
    cg_buf_init(out);
    size_t len = strlen(dir);
    for (size_t i = 1; i <= len; i++) {
        if (dir[i] != '/' && dir[i] != 0) continue;
        struct stat st;
        char *prefix = strndup(dir, i);
        if (!prefix) return -1;
        int missing = stat(prefix, &st) != 0;
        int bad = missing && cg_buf_add(out, prefix, i + 1);
        free(prefix);
        if (bad) return -1;
    }
    return 0;
}

/* Remove the directories missing_dirs() listed, deepest first, where empty. */
static void remove_created(const cg_buf *created)
{
    if (!created->data) return;
    for (size_t end = created->len; end > 0;) {
        size_t start = end - 1;
        while (start > 0 && created->data[start - 1]) start--;
        rmdir(created->data + start);
        end = start;
    }
}

/* The files of one output, written into a locked directory; see cg_gen_write. */
static int write_locked(const cg_gen_output *o, int dfd, const char *dir, cg_err *e)
{
    cg_buf old, old_text;
    if (previous_files(dfd, dir, &old, &old_text, e)) return -1;
    reclaim_killed(dfd, dir, &old);
    int n = o->nkernels + 1, rc = 0;
    char (*tmp)[64] = calloc((size_t)n, sizeof *tmp);
    unsigned char *existed = calloc((size_t)n, 1);
    if (!tmp || !existed) rc = cg_fail(e, "out of memory");
    /* every target absent or a regular file, before anything is written */
    for (int i = 0; i < n && !rc; i++) {
        const char *name = i < o->nkernels ? o->k[i].file : "manifest.txt";
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            existed[i] = 1;
            if (!S_ISREG(st.st_mode))
                rc = cg_fail(e, "%s/%s: not a regular file; refusing to replace it", dir, name);
        }
    }
    if (!rc) sweep_temps(dfd);
    int written = 0; /* temps tmp[0..written) exist */
    for (; written < n && !rc; written++) {
        int i = written;
        const char *name = i < o->nkernels ? o->k[i].file : "manifest.txt";
        snprintf(tmp[i], sizeof tmp[i], TMP_PREFIX "%ld-%d", (long)getpid(), i);
        rc = i < o->nkernels ? write_temp(dfd, dir, tmp[i], name, o->k[i].source, o->k[i].source_len, e)
                             : write_temp(dfd, dir, tmp[i], name, o->manifest, o->manifest_len, e);
        if (rc) break; /* write_temp removed its own temp */
    }
    /* the previous manifest kept beside until the kernels only it names are
     * removed: a run killed from here on leaves what reclaim_killed needs */
    char prev[64];
    snprintf(prev, sizeof prev, TMP_PREFIX "%ld-prev", (long)getpid());
    int have_prev = 0;
    if (!rc && old_text.len) {
        rc = write_temp(dfd, dir, prev, "manifest.txt", old_text.data, old_text.len, e);
        have_prev = !rc;
    }
    /* into place: kernels first, the manifest last, so a manifest names only files there */
    int placed = 0; /* targets [0..placed) renamed */
    for (; placed < n && !rc; placed++) {
        const char *name = placed < o->nkernels ? o->k[placed].file : "manifest.txt";
        if (renameat(dfd, tmp[placed], dfd, name)) {
            rc = cg_fail(e, "%s/%s: cannot write: %s", dir, name, strerror(errno));
            break;
        }
    }
    if (rc) { /* nothing of this run stays: its temps, and files that were not there before */
        for (int i = placed; i < written; i++) unlinkat(dfd, tmp[i], 0);
        for (int i = 0; i < placed; i++)
            if (!existed[i]) unlinkat(dfd, i < o->nkernels ? o->k[i].file : "manifest.txt", 0);
    }
    /* then the kernels of the previous output that this one does not have: files
     * convgen wrote (a manifest names them, their header says so), nothing else */
    for (size_t at = 0; !rc && old.data && at < old.len; at += strlen(old.data + at) + 1) {
        const char *name = old.data + at;
        struct stat st;
        if (produced(o, name) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode) || !generated_kernel(dfd, name))
            continue;
        if (unlinkat(dfd, name, 0) && errno != ENOENT)
            rc = cg_fail(e, "%s/%s: cannot remove stale file: %s", dir, name, strerror(errno));
    }
    if (have_prev) unlinkat(dfd, prev, 0);
    free(tmp), free(existed);
    cg_buf_free(&old), cg_buf_free(&old_text);
    return rc;
}

int cg_gen_write(const cg_gen_output *o, const char *dir, cg_err *e)
{
    for (int i = 0; i < o->nkernels; i++)
        if (!is_identifier(o->k[i].kernel, strlen(o->k[i].kernel)))
            return cg_fail(e, "kernel name '%s' is not an identifier", o->k[i].kernel);
    cg_buf created;
    if (missing_dirs(dir, &created)) return cg_fail(e, "%s: out of memory", dir);
    if (cg_mkdirs(dir, e)) {
        remove_created(&created);
        cg_buf_free(&created);
        return -1;
    }
    int rc = 0, dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) rc = cg_fail(e, "%s: cannot open: %s", dir, strerror(errno));
    /* one generate at a time per directory: the lock is on the directory itself */
    while (!rc && flock(dfd, LOCK_EX))
        if (errno != EINTR) rc = cg_fail(e, "%s: cannot lock: %s", dir, strerror(errno));
    if (!rc) rc = write_locked(o, dfd, dir, e);
    if (dfd >= 0) close(dfd);
    if (rc) remove_created(&created);
    cg_buf_free(&created);
    return rc;
}

/* ---- one layer at a time (gen.h) ---- */

/* A failure table of planner.call at stack slot idx as one line naming the
 * spec and the layer (the parameters came from the caller, not the spec, so
 * no spec position is claimed). */
static int one_failure(lua_State *L, int idx, const extract_ctx *c, cg_err *e)
{
    const cg_spec *s = c->s;
    lua_getfield(L, idx, "cg_layer");
    int li = (int)lua_tointeger(L, -1) - 1;
    lua_getfield(L, idx, "cg_param");
    int param = !lua_isnil(L, -1);
    lua_getfield(L, idx, "message");
    const char *msg = lua_tostring(L, -1);
    char why[512];
    if (!msg && li >= 0 && li < s->nlayers && !param)
        explain_no_config(s, c->tg, li, c->tpl, why, sizeof why), msg = why;
    if (!msg) msg = "template failure";
    if (li < 0 || li >= s->nlayers) return cg_fail(e, "%s: %s", s->path, msg);
    return cg_fail(e, "%s: layer '%s': %s", s->path, s->layers[li].name, msg);
}

/* Push "k=v k=v" (commas also separate) as a table { k = v }; NULL pushes nil. */
static int push_params(lua_State *L, const char *text, cg_err *e)
{
    if (!text) {
        lua_pushnil(L);
        return 0;
    }
    lua_newtable(L);
    for (const char *p = text; *(p += strspn(p, " ,\t"));) {
        size_t n = strcspn(p, " ,\t");
        char tok[128], *end = NULL;
        long long v = 0;
        snprintf(tok, sizeof tok, "%.*s", (int)(n < sizeof tok ? n : sizeof tok - 1), p);
        char *eq = strchr(tok, '=');
        if (eq) v = strtoll(eq + 1, &end, 10);
        if (n >= sizeof tok || !eq || eq == tok || !eq[1] || *end)
            return cg_fail(e, "bad parameter '%s' (expected key=value, the value an integer)", tok);
        *eq = 0;
        if (lua_getfield(L, -1, tok) != LUA_TNIL) return cg_fail(e, "parameter '%s' given twice", tok);
        lua_pop(L, 1);
        lua_pushinteger(L, v);
        lua_setfield(L, -2, tok);
        p += n;
    }
    return 0;
}

/* planner.call(fname, net, layer + 1, tpl, extra) in a fresh sandbox, for
 * target tg (NULL: the conservative default), its two results handed to take.
 * extra: the cap (candidates) or the params table. batch > 0 becomes net.batch
 * (the images the cost model estimates for). */
/* keep: a sandbox kept across calls (cg_gen_emitter), its stack emptied before
 * and after; NULL: one opened and closed here. */
#define CANDIDATES_INSTR_FACTOR 10 /* planner.candidates' instruction budget, in calls' (one_call) */

static int one_call(cg_lua *keep, const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                    const char *fname, const char *params, long long cap, long long batch,
                    int (*take)(extract_ctx *, lua_State *), void *out, const char *arg, cg_err *e)
{
    if (layer < 0 || layer >= s->nlayers)
        return cg_fail(e, "%s: no layer %d (the network has %d)", s->path, layer + 1, s->nlayers);
    cg_lua *h = keep;
    if (!h && cg_lua_open(&h, NULL, e)) return -1;
    lua_State *L = cg_lua_state(h);
    lua_settop(L, 0);
    int rc = 0;
    char file[CG_NAME_MAX + 80];
    if (tpl && !cg_lua_template_exists(h, tpl))
        rc = cg_template_path(NULL, tpl, file, sizeof file) < 0
                 ? cg_fail(e, "no template '%s' (not a template name)", tpl)
                 : cg_fail(e, "no template '%s' (%s)", tpl, file);
    if (!rc) rc = cg_lua_import(h, "lib/planner", e);
    if (!rc) {
        lua_getfield(L, -1, "call");
        lua_pushstring(L, fname);
        cg_target dt;
        cg_target_default(&dt);
        if (!tg) tg = &dt;
        cg_gen_push_net(L, s, tg);
        if (batch > 0) set_int(L, "batch", batch);
        lua_pushinteger(L, layer + 1);
        if (tpl) lua_pushstring(L, tpl);
        else lua_pushnil(L);
        if (params) rc = push_params(L, params, e);
        else if (cap > 0) lua_pushinteger(L, cap);
        else lua_pushnil(L);
        /* planner.candidates checks up to its cap of configurations (1,000,000), a
         * template's check of some hundreds of instructions each: it gets
         * CANDIDATES_INSTR_FACTOR times one call's budget (conv2d_planes on
         * zoo-resnet-stem's stem, 344,064 configurations, every one refused, came within
         * a few percent of 200 million); the CPU-time backstop still holds */
        long long budget = cg_lua_instruction_limit(h);
        if (!rc && !strcmp(fname, "candidates")) cg_lua_set_instruction_limit(h, budget * CANDIDATES_INSTR_FACTOR);
        if (!rc) rc = cg_lua_pcall(h, 5, 2, e);
        cg_lua_set_instruction_limit(h, budget);
        if (!rc) {
            extract_ctx c = {h, s, take, out, arg, tg, e, 0, tpl};
            rc = run_extract(&c);
        }
    }
    if (keep) lua_settop(L, 0);
    else cg_lua_close(h);
    return rc;
}

/* Copy the string field k of the table on top into dst; "" when absent. */
static int opt_str(lua_State *L, const char *k, char *dst, size_t cap, cg_err *e)
{
    lua_getfield(L, -1, k);
    size_t n = 0;
    const char *v = lua_tolstring(L, -1, &n);
    if (v && n >= cap) return lua_pop(L, 1), cg_fail(e, "templates/lib/planner.lua: '%s' too long", k);
    snprintf(dst, cap, "%s", v ? v : "");
    lua_pop(L, 1);
    return 0;
}

/* take for cg_gen_candidates: planner.candidates' result table into a cg_candidates. */
static int take_candidates(extract_ctx *c, lua_State *L)
{
    cg_candidates *o = c->out;
    cg_err *e = c->e;
    if (!lua_istable(L, 2))
        return lua_istable(L, 3) ? one_failure(L, 3, c, e)
                                 : cg_fail(e, "templates/lib/planner.lua: candidates returned nothing");
    lua_settop(L, 2);
    if (opt_str(L, "template", o->tpl, sizeof o->tpl, e) || opt_str(L, "note", o->note, sizeof o->note, e))
        return -1;
    lua_getfield(L, 2, "names");
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
        size_t n = strlen(o->names);
        snprintf(o->names + n, sizeof o->names - n, "%s%s", n ? " " : "", lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    const char *counts[] = {"total", "examined", "refused"};
    long long *dst[] = {&o->total, &o->examined, &o->refused};
    for (int i = 0; i < 3; i++) {
        lua_getfield(L, 2, counts[i]);
        *dst[i] = lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    lua_getfield(L, 2, "accepted");
    size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
    o->c = calloc(n ? n : 1, sizeof *o->c);
    if (!o->c) return cg_fail(e, "out of memory for %zu candidates", n);
    for (size_t i = 0; i < n; i++, o->n++) {
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        if (!lua_istable(L, -1) || opt_str(L, "text", o->c[i].params, sizeof o->c[i].params, e))
            return lua_istable(L, -1) ? -1 : cg_fail(e, "templates/lib/planner.lua: bad candidate");
        lua_getfield(L, -1, "cost"); /* a number >= 0 (planner.lua checks it) or nil */
        o->c[i].cost = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    lua_getfield(L, 2, "reasons");
    for (lua_Integer i = 1; o->nreasons < CG_MAX_REASONS && lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
        cg_refusal *r = &o->reason[o->nreasons++];
        if (opt_str(L, "param", r->param, sizeof r->param, e)) return -1;
        lua_getfield(L, -1, "example");
        snprintf(r->example, sizeof r->example, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
        lua_getfield(L, -2, "count");
        r->count = lua_tointeger(L, -1);
        lua_pop(L, 3);
    }
    lua_pop(L, 2);
    return 0;
}

int cg_gen_candidates_for(const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                          long long cap, long long batch, cg_candidates *out, cg_err *e)
{
    memset(out, 0, sizeof *out);
    int rc = one_call(NULL, s, tg, layer, tpl, "candidates", NULL, cap, batch, take_candidates, out, NULL, e);
    if (rc) cg_candidates_free(out);
    return rc;
}

int cg_gen_candidates(const cg_spec *s, int layer, const char *tpl, long long cap,
                      cg_candidates *out, cg_err *e)
{
    return cg_gen_candidates_for(s, NULL, layer, tpl, cap, 0, out, e);
}

void cg_candidates_free(cg_candidates *c)
{
    free(c->c);
    memset(c, 0, sizeof *c);
}

/* What take_check fills. */
typedef struct {
    char *why;
    size_t n;
} check_out;

/* take for cg_gen_check_one: (nil) accepted, (message, param) refused, (nil, failure). */
static int take_check(extract_ctx *c, lua_State *L)
{
    check_out *o = c->out;
    if (lua_type(L, 2) == LUA_TSTRING) {
        snprintf(o->why, o->n, "%s", lua_tostring(L, 2));
        return 1;
    }
    if (lua_istable(L, 3)) return one_failure(L, 3, c, c->e);
    return 0;
}

int cg_gen_check_one_for(const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                         const char *params, char *why, size_t why_n, cg_err *e)
{
    return cg_gen_check_one_with(NULL, s, tg, layer, tpl, params, why, why_n, e);
}

int cg_gen_check_one(const cg_spec *s, int layer, const char *tpl, const char *params, char *why,
                     size_t why_n, cg_err *e)
{
    return cg_gen_check_one_for(s, NULL, layer, tpl, params, why, why_n, e);
}

/* What take_emit fills. */
typedef struct {
    cg_gen_kernel *k;
    cg_kernel_launch *launch;
} emit_out;

/* take for cg_gen_emit_one: the kernel record through take_kernel. */
static int take_emit(extract_ctx *c, lua_State *L)
{
    emit_out *o = c->out;
    if (!lua_istable(L, 2))
        return lua_istable(L, 3) ? one_failure(L, 3, c, c->e)
                                 : cg_fail(c->e, "templates/lib/planner.lua: emit_one returned nothing");
    lua_settop(L, 2);
    cg_buf man;
    cg_buf_init(&man);
    cg_kernel_launch scratch;
    int rc = take_kernel(c->h, c->s, c->arg, c->tg, o->k, &man, o->launch ? o->launch : &scratch, c->e);
    cg_buf_free(&man);
    return rc;
}

int cg_gen_emit_one(const cg_spec *s, int layer, const char *tpl, const char *params,
                    cg_gen_kernel *out, cg_kernel_launch *launch, cg_err *e)
{
    return cg_gen_emit_one_for(s, NULL, layer, tpl, params, out, launch, e);
}

struct cg_gen_emitter {
    cg_lua *h;
};

int cg_gen_emitter_open(cg_gen_emitter **out, cg_err *e)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return cg_fail(e, "out of memory");
    if (cg_lua_open(&(*out)->h, NULL, e)) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

void cg_gen_emitter_close(cg_gen_emitter *em)
{
    if (!em) return;
    cg_lua_close(em->h);
    free(em);
}

int cg_gen_check_one_with(cg_gen_emitter *em, const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                          const char *params, char *why, size_t why_n, cg_err *e)
{
    check_out o = {why, why_n};
    if (why_n) why[0] = 0;
    return one_call(em ? em->h : NULL, s, tg, layer, tpl, "check_one", params ? params : "", 0, 0, take_check, &o,
                    NULL, e);
}

int cg_gen_emit_one_for(const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                        const char *params, cg_gen_kernel *out, cg_kernel_launch *launch, cg_err *e)
{
    return cg_gen_emit_one_with(NULL, s, tg, layer, tpl, params, out, launch, e);
}

int cg_gen_emit_one_with(cg_gen_emitter *em, const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                         const char *params, cg_gen_kernel *out, cg_kernel_launch *launch, cg_err *e)
{
    memset(out, 0, sizeof *out);
    /* the header's regenerate line: this call as a command */
    char regen[CG_PATH_MAX + 3 * CG_PARAMS_TEXT];
    int n = snprintf(regen, sizeof regen, "convgen kernel %s --layer %s", s->path,
                     layer >= 0 && layer < s->nlayers ? s->layers[layer].name : "?");
    const char *strategy = tpl ? strchr(tpl, '_') : NULL;
    if (strategy && n > 0 && (size_t)n < sizeof regen)
        n += snprintf(regen + n, sizeof regen - (size_t)n, " --strategy %s", strategy + 1);
    if (params && params[strspn(params, " ,\t")] && n > 0 && (size_t)n < sizeof regen) {
        n += snprintf(regen + n, sizeof regen - (size_t)n, " --params ");
        for (const char *p = params + strspn(params, " ,\t"); *p && (size_t)n + 1 < sizeof regen; p++)
            if (!(strchr(" ,\t", *p) && (!p[1] || strchr(" ,\t", p[1]))))
                regen[n++] = strchr(" \t", *p) ? ',' : *p;
        regen[n] = 0;
    }
    emit_out o = {out, launch};
    int rc = one_call(em ? em->h : NULL, s, tg, layer, tpl, "emit_one", params ? params : "", 0, 0, take_emit, &o,
                      regen, e);
    if (rc) cg_gen_kernel_free(out);
    return rc;
}

void cg_gen_kernel_free(cg_gen_kernel *k)
{
    free(k->source);
    k->source = NULL;
    k->source_len = k->header_len = 0;
}
