/* lua_host.c — the sandboxed Lua 5.4 state that runs templates.
 *
 * Sandbox = a pruned standard library (base minus its file/loader/GC doors,
 * string minus dump, table, math, utf8), a `setmetatable` that refuses __gc
 * (Lua runs finalizers with hooks off, so they would escape the instruction
 * bound), an xpcall whose handler cannot outlive the budget, a string.rep that
 * checks its size first, a text-only `load`, and `import`. Bounds = a counting allocator that
 * refuses growth past the byte limit while a call is running, and a count hook
 * that charges instructions against a per-call budget. Every error leaves
 * cg_lua_pcall as one line, "templates/NAME.lua:LINE: message". */
#include "lua_host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#define HOOK_STEP 1000             /* instructions between hook calls, normally */
#define LOADED_KEY "convgen.loaded" /* registry table: template name -> its value */
#define NAME_MAX_LEN 200
#define IMPORT_DEPTH_MAX 64

/* A template text read from disk, kept for the life of the host so the text
 * hashed is the text loaded and pointers given out stay valid. */
typedef struct text_entry {
    struct text_entry *next;
    char *name;
    cg_buf text;
} text_entry;

struct cg_lua {
    lua_State *L;
    char *dir;          /* template directory, or NULL: embedded templates */
    char *chunk_prefix; /* "@templates/" or "@DIR/" */
    text_entry *texts;
    long long max_instr, count;
    int step;           /* instructions per hook call: HOOK_STEP, or 1 when precise */
    size_t max_bytes, used;
    int depth;          /* nesting of cg_lua_pcall; the byte limit applies while > 0 */
    int unlimited;      /* set while the host itself composes an error message */
    int mem_refused;    /* the allocator refused a request during this call */
    int precise;        /* memory above half the limit: sample every instruction */
    int sampled, sample_precise, line; /* last position seen by the hook */
    char where[512];
    char called[512];   /* source of the function given to the outermost call */
    const char *importing[IMPORT_DEPTH_MAX]; /* names being imported, outermost first */
    int nimporting;
};

/* The host that owns a state, kept in the state's extra space. */
static cg_lua *host(lua_State *L) { return *(cg_lua **)lua_getextraspace(L); }

static void hook(lua_State *L, lua_Debug *ar);

/* "256 MiB" style rendering of a byte limit for messages. */
static void fmt_bytes(size_t n, char *out, size_t cap)
{
    if (n && n % (1u << 20) == 0)
        snprintf(out, cap, "%zu MiB", n >> 20);
    else if (n && n % 1024 == 0)
        snprintf(out, cap, "%zu KiB", n >> 10);
    else
        snprintf(out, cap, "%zu bytes", n);
}

/* Allocator for the state: tracks bytes in use and, while a call runs,
 * refuses any growth past max_bytes. Crossing half the limit switches the hook
 * to every instruction so a later refusal can be pinned to its line
 * (lua_sethook is safe to call at any point; lua.c calls it from a signal). */
static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    cg_lua *h = ud;
    if (!ptr) osize = 0; /* osize then encodes the object type */
    if (nsize == 0) {
        free(ptr);
        h->used -= osize;
        return NULL;
    }
    if (nsize > osize && h->depth > 0 && !h->unlimited &&
        (h->used > h->max_bytes || nsize - osize > h->max_bytes - h->used)) {
        h->mem_refused = 1;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p) return nsize <= osize ? ptr : NULL; /* Lua assumes shrinking never fails */
    h->used = h->used - osize + nsize;
    if (h->depth > 0 && !h->precise && h->L && h->used > h->max_bytes / 2) {
        h->precise = 1;
        h->step = 1;
        lua_sethook(h->L, hook, LUA_MASKCOUNT, 1);
    }
    return p;
}

/* File name of a function for messages: the full path of "@file" chunks
 * (short_src would truncate it), otherwise Lua's short form. */
static void where_of(const lua_Debug *ar, char *out, size_t cap)
{
    if (ar->source && ar->source[0] == '@')
        snprintf(out, cap, "%s", ar->source + 1);
    else
        snprintf(out, cap, "%s", ar->short_src);
}

/* Count hook: charges instructions to the call's budget, remembers where the
 * code is (for memory errors, which Lua raises without a position) and stops
 * the call once the budget is spent. After that it fires on every instruction,
 * so a template that catches the error with pcall cannot keep running. */
static void hook(lua_State *L, lua_Debug *ar)
{
    cg_lua *h = host(L);
    h->count += h->step;
    if (lua_getinfo(L, "Sl", ar)) {
        where_of(ar, h->where, sizeof h->where);
        h->line = ar->currentline;
        h->sampled = 1;
        h->sample_precise = h->step == 1;
    }
    if (h->count > h->max_instr) {
        if (h->step != 1) {
            h->step = 1;
            lua_sethook(L, hook, LUA_MASKCOUNT, 1);
        }
        lua_pushfstring(L, "%s:%d: instruction limit of %I exceeded (endless loop?)", h->where,
                        h->line, (lua_Integer)h->max_instr);
        lua_error(L);
    }
}

/* The memory-limit message for an error Lua raised without a position: the
 * line sampled on the failing instruction when the hook was precise, else the
 * file last seen running, else `fallback` (a file known to be on the stack). */
static void memory_message(cg_lua *h, const char *fallback, char *out, size_t cap)
{
    char lim[32];
    fmt_bytes(h->max_bytes, lim, sizeof lim);
    if (h->sampled && h->sample_precise)
        snprintf(out, cap, "%s:%d: memory limit of %s exceeded", h->where, h->line, lim);
    else if (h->sampled || (fallback && *fallback))
        snprintf(out, cap, "%s: memory limit of %s exceeded", h->sampled ? h->where : fallback, lim);
    else
        snprintf(out, cap, "memory limit of %s exceeded", lim);
}

/* Pushes "file:line: " of the innermost Lua function with a current line, or
 * "" when none is running: the position for messages the host composes. */
static void push_position(lua_State *L)
{
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            char w[512];
            where_of(&ar, w, sizeof w);
            lua_pushfstring(L, "%s:%d: ", w, ar.currentline);
            return;
        }
    }
    lua_pushliteral(L, "");
}

/* Message handler for every protected call: keeps string messages (Lua already
 * put the position in), names the memory limit when the allocator refused, and
 * turns non-string error values into a line naming their type. No traceback. */
static int msgh(lua_State *L)
{
    cg_lua *h = host(L);
    int t = lua_type(L, 1);
    if (t == LUA_TSTRING || t == LUA_TNUMBER) {
        if (!h->mem_refused || strcmp(lua_tostring(L, 1), "not enough memory") != 0) return 1;
    }
    int saved = h->unlimited;
    h->unlimited = 1; /* the message itself must not fail for lack of memory */
    push_position(L);
    if (t == LUA_TSTRING || t == LUA_TNUMBER) {
        char lim[32];
        fmt_bytes(h->max_bytes, lim, sizeof lim);
        lua_pushfstring(L, "memory limit of %s exceeded", lim);
    } else {
        lua_pushfstring(L, "error object is a %s value", luaL_typename(L, 1));
    }
    lua_concat(L, 2);
    h->unlimited = saved;
    return 1;
}

/* Whether NAME matches ^[a-z0-9_]+(/[a-z0-9_]+)*$ (and is not absurdly long). */
static int valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_LEN || name[0] == '/' || name[n - 1] == '/') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c == '/') {
            if (name[i + 1] == '/') return 0;
        } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
            return 0;
        }
    }
    return 1;
}

/* Text of template NAME from the embedded table or the directory (read once,
 * then kept). Returns NULL with *missing set when there is no such template,
 * or NULL with e filled when it exists but cannot be read. */
static const char *find_text(cg_lua *h, const char *name, size_t *len, int *missing, cg_err *e)
{
    *missing = 0;
    if (!valid_name(name)) {
        *missing = 1;
        return NULL;
    }
    if (!h->dir) {
        char path[NAME_MAX_LEN + 32];
        snprintf(path, sizeof path, "templates/%s.lua", name);
        for (const cg_embedded_file *f = cg_embedded_templates; f->path; f++) {
            if (strcmp(f->path, path) == 0) {
                *len = f->len;
                return f->data;
            }
        }
        *missing = 1;
        return NULL;
    }
    for (text_entry *t = h->texts; t; t = t->next) {
        if (strcmp(t->name, name) == 0) {
            *len = t->text.len;
            return t->text.data;
        }
    }
    cg_buf path;
    cg_buf_init(&path);
    if (cg_buf_printf(&path, "%s/%s.lua", h->dir, name)) {
        cg_buf_free(&path);
        cg_fail(e, "out of memory");
        return NULL;
    }
    struct stat st;
    if (stat(path.data, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            *missing = 1;
        else
            cg_fail(e, "%s: %s", path.data, strerror(errno));
        cg_buf_free(&path);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        cg_fail(e, "%s: not a regular file", path.data);
        cg_buf_free(&path);
        return NULL;
    }
    text_entry *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        cg_buf_free(&path);
        cg_fail(e, "out of memory");
        return NULL;
    }
    int rc = cg_read_file(path.data, &t->text, e);
    cg_buf_free(&path);
    if (rc) {
        free(t->name);
        free(t);
        return NULL;
    }
    t->next = h->texts;
    h->texts = t;
    *len = t->text.len;
    return t->text.data;
}

/* The body of `import`: validate, return the cached value, or load
 * templates/NAME.lua in text mode and run it once in the sandbox. The chunk
 * runs under its own pcall so the import chain is unwound on error and a
 * memory error (which carries no position) is named before it travels on. */
static int import_name(lua_State *L, const char *name)
{
    cg_lua *h = host(L);
    if (!valid_name(name))
        return luaL_error(L, "invalid template name '%s' (expected lowercase words joined by '/')", name);
    lua_getfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
    int loaded = lua_gettop(L);
    if (lua_getfield(L, loaded, name) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    for (int i = 0; i < h->nimporting; i++) {
        if (strcmp(h->importing[i], name) != 0) continue;
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (int j = i; j < h->nimporting; j++) {
            luaL_addstring(&b, h->importing[j]);
            luaL_addstring(&b, " -> ");
        }
        luaL_addstring(&b, name);
        luaL_pushresult(&b);
        return luaL_error(L, "cyclic import of template '%s' (%s)", name, lua_tostring(L, -1));
    }
    if (h->nimporting == IMPORT_DEPTH_MAX)
        return luaL_error(L, "imports nested more than %d deep at template '%s'", IMPORT_DEPTH_MAX, name);

    size_t len = 0;
    int missing;
    cg_err err;
    const char *text = find_text(h, name, &len, &missing, &err);
    if (!text && missing) return luaL_error(L, "template '%s' not found", name);
    if (!text) return luaL_error(L, "%s", err.msg);
    const char *chunk = lua_pushfstring(L, "%s%s.lua", h->chunk_prefix, name);
    if (len > 0 && text[0] == LUA_SIGNATURE[0])
        return luaL_error(L, "%s: binary chunks are not allowed (templates are text)", chunk + 1);

    lua_pushcfunction(L, msgh);
    int handler = lua_gettop(L);
    int st = luaL_loadbufferx(L, text, len, chunk, "t");
    if (st == LUA_OK) {
        lua_pushstring(L, name);
        int depth = h->nimporting;
        h->importing[h->nimporting++] = name;
        st = lua_pcall(L, 1, 1, handler);
        h->nimporting = depth;
    }
    if (st == LUA_ERRMEM) {
        char msg[CG_ERR_MAX];
        memory_message(h, chunk + 1, msg, sizeof msg);
        int saved = h->unlimited;
        h->unlimited = 1;
        lua_pushstring(L, msg);
        h->unlimited = saved;
    }
    if (st != LUA_OK) return lua_error(L);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1); /* like require: a template returning nothing is "loaded" */
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, loaded, name);
    return 1;
}

/* import(name) as templates call it. */
static int l_import(lua_State *L) { return import_name(L, luaL_checkstring(L, 1)); }

/* import for cg_lua_import: the name arrives as a C pointer so that nothing
 * is allocated before the protected call starts. */
static int l_import_c(lua_State *L) { return import_name(L, lua_touserdata(L, 1)); }

/* load(text [, chunkname [, mode [, env]]]): Lua's load restricted to text:
 * the chunk must be a string (no reader functions), mode may only be "t", and a
 * binary chunk is an error. The chunk's environment is the sandbox globals
 * unless env is given. Syntax errors return nil plus the message, as load does. */
static int l_load(lua_State *L)
{
    size_t len;
    if (lua_type(L, 1) != LUA_TSTRING) return luaL_typeerror(L, 1, "string");
    const char *s = lua_tolstring(L, 1, &len);
    const char *chunkname = luaL_optstring(L, 2, "=(load)");
    const char *mode = luaL_optstring(L, 3, "t");
    if (strcmp(mode, "t") != 0)
        return luaL_error(L, "load: mode '%s' is not allowed (templates load text chunks only)", mode);
    if (len > 0 && s[0] == LUA_SIGNATURE[0])
        return luaL_error(L, "load: binary chunks are not allowed (templates load text chunks only)");
    if (luaL_loadbufferx(L, s, len, chunkname, "t") != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (!lua_isnone(L, 4)) {
        lua_pushvalue(L, 4);
        if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
}

/* setmetatable without __gc: Lua runs finalizers with hooks disabled, so a
 * finalizer could loop past the instruction bound. Otherwise as in Lua. */
static int l_setmetatable(lua_State *L)
{
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
        return luaL_error(L, "cannot change a protected metatable");
    if (t == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "setmetatable: __gc metamethods are not allowed in templates");
        lua_pop(L, 1);
    }
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* string.rep with the result size checked against the memory budget first:
 * the classic memory bomb then fails at its line, instead of deep inside an
 * allocation, where Lua raises its memory error without a position. */
static int l_rep(lua_State *L)
{
    cg_lua *h = host(L);
    size_t len, seplen;
    luaL_checklstring(L, 1, &len);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &seplen);
    /* the result is built in a buffer and then copied: twice its size at peak */
    size_t unit = 2 * (len + seplen), left = h->used < h->max_bytes ? h->max_bytes - h->used : 0;
    if (h->depth > 0 && n > 1 && unit > 0 && (lua_Unsigned)n - 1 > left / unit) {
        char lim[32];
        fmt_bytes(h->max_bytes, lim, sizeof lim);
        return luaL_error(L, "memory limit of %s exceeded", lim);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* Message handler installed by xpcall below: runs the template's handler,
 * except once the instruction budget is spent. That error is raised inside the
 * count hook, where Lua has hooks switched off, so a handler that looped would
 * never be stopped; the message goes through unchanged instead. */
static int xpcall_handler(lua_State *L)
{
    cg_lua *h = host(L);
    if (h->count > h->max_instr) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* xpcall(f, handler, ...) as in Lua, with the handler wrapped as above. */
static int l_xpcall(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, xpcall_handler, 1);
    lua_replace(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* template_text(name) -> text, chunkname: a template file's text and the name
 * its chunk carries ("@templates/NAME.lua"), so the template engine can map
 * errors in a template's CUDA text to lines of its file. nil if absent. */
static int l_template_text(lua_State *L)
{
    cg_lua *h = host(L);
    const char *name = luaL_checkstring(L, 1);
    if (!valid_name(name)) return luaL_error(L, "invalid template name '%s'", name);
    size_t len = 0;
    const char *text = cg_lua_template_text(h, name, &len);
    if (!text) return 0;
    lua_pushlstring(L, text, len);
    lua_pushfstring(L, "%s%s.lua", h->chunk_prefix, name);
    return 2;
}

/* Builds the sandbox inside a protected call (so a failed allocation is an
 * error, not a panic): opens the allowed libraries, removes the doors out. */
static int setup(lua_State *L)
{
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},      {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL}};
    for (const luaL_Reg *l = libs; l->name; l++) {
        luaL_requiref(L, l->name, l->func, 1);
        lua_pop(L, 1);
    }
    static const char *const removed[] = {"dofile", "loadfile", "load",  "require",
                                          "collectgarbage", "print", "warn", NULL};
    for (const char *const *n = removed; *n; n++) {
        lua_pushnil(L);
        lua_setglobal(L, *n);
    }
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_getfield(L, -1, "rep");
    lua_pushcclosure(L, l_rep, 1);
    lua_setfield(L, -2, "rep");
    lua_pop(L, 1);
    /* Templates must generate the same code on every run: fix the random seed. */
    lua_getglobal(L, LUA_MATHLIBNAME);
    lua_getfield(L, -1, "randomseed");
    lua_pushinteger(L, 408);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    lua_getglobal(L, "xpcall");
    lua_pushcclosure(L, l_xpcall, 1);
    lua_setglobal(L, "xpcall");
    lua_register(L, "load", l_load);
    lua_register(L, "import", l_import);
    lua_register(L, "template_text", l_template_text);
    lua_register(L, "setmetatable", l_setmetatable);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
    return 0;
}

/* Last resort for an error outside any protected call (a host bug): say what
 * it was before Lua aborts the process. */
static int panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "convgen: unprotected Lua error: %s\n", msg ? msg : "(not a string)");
    return 0;
}

int cg_lua_open(cg_lua **out, const char *template_dir, cg_err *e)
{
    *out = NULL;
    cg_lua *h = calloc(1, sizeof *h);
    if (!h) return cg_fail(e, "out of memory");
    h->max_instr = CG_LUA_MAX_INSTRUCTIONS;
    h->max_bytes = CG_LUA_MAX_BYTES;
    h->step = HOOK_STEP;
    const char *prefix_dir = "templates";
    if (template_dir) {
        size_t n = strlen(template_dir);
        while (n > 1 && template_dir[n - 1] == '/') n--;
        if (n == 0) {
            free(h);
            return cg_fail(e, "template directory is empty");
        }
        h->dir = strndup(template_dir, n);
        if (!h->dir) {
            free(h);
            return cg_fail(e, "out of memory");
        }
        prefix_dir = h->dir;
    }
    size_t plen = strlen(prefix_dir) + 3;
    h->chunk_prefix = malloc(plen);
    if (!h->chunk_prefix) {
        cg_lua_close(h);
        return cg_fail(e, "out of memory");
    }
    snprintf(h->chunk_prefix, plen, "@%s%s", prefix_dir, strcmp(prefix_dir, "/") ? "/" : "");
    h->L = lua_newstate(alloc, h);
    if (!h->L) {
        cg_lua_close(h);
        return cg_fail(e, "cannot create a Lua state: out of memory");
    }
    *(cg_lua **)lua_getextraspace(h->L) = h;
    lua_atpanic(h->L, panic);
    lua_pushcfunction(h->L, setup);
    if (lua_pcall(h->L, 0, 0, 0) != LUA_OK) {
        cg_fail(e, "cannot set up the Lua sandbox: %s", lua_tostring(h->L, -1));
        cg_lua_close(h);
        return -1;
    }
    lua_sethook(h->L, hook, LUA_MASKCOUNT, HOOK_STEP);
    *out = h;
    return 0;
}

void cg_lua_close(cg_lua *h)
{
    if (!h) return;
    if (h->L) lua_close(h->L);
    for (text_entry *t = h->texts, *next; t; t = next) {
        next = t->next;
        free(t->name);
        cg_buf_free(&t->text);
        free(t);
    }
    free(h->dir);
    free(h->chunk_prefix);
    free(h);
}

lua_State *cg_lua_state(cg_lua *h) { return h->L; }

void cg_lua_set_limits(cg_lua *h, long long max_instructions, size_t max_bytes)
{
    h->max_instr = max_instructions > 0 ? max_instructions : CG_LUA_MAX_INSTRUCTIONS;
    h->max_bytes = max_bytes > 0 ? max_bytes : CG_LUA_MAX_BYTES;
}

/* Fresh budget for an outermost call: instruction count to zero, hook back to
 * its normal step unless memory is already above half the limit. */
static void start_call(cg_lua *h)
{
    h->count = 0;
    h->unlimited = 0;
    h->mem_refused = 0;
    h->sampled = 0;
    h->nimporting = 0;
    h->called[0] = 0;
    h->precise = h->used > h->max_bytes / 2;
    h->step = h->precise ? 1 : HOOK_STEP;
    lua_sethook(h->L, hook, LUA_MASKCOUNT, h->step);
}

int cg_lua_pcall(cg_lua *h, int nargs, int nres, cg_err *e)
{
    lua_State *L = h->L;
    int fn = lua_gettop(L) - nargs;
    if (nargs < 0 || fn < 1) return cg_fail(e, "cg_lua_pcall: no function on the Lua stack");
    if (!lua_checkstack(L, 2)) return cg_fail(e, "cg_lua_pcall: Lua stack exhausted");
    if (h->depth == 0) {
        start_call(h);
        lua_Debug ar;
        lua_pushvalue(L, fn);
        if (lua_getinfo(L, ">S", &ar) && ar.what[0] != 'C') where_of(&ar, h->called, sizeof h->called);
    }
    lua_pushcfunction(L, msgh);
    lua_insert(L, fn);
    h->depth++;
    int st = lua_pcall(L, nargs, nres, fn);
    h->depth--;
    if (st == LUA_OK) {
        lua_remove(L, fn);
        return 0;
    }
    if (st == LUA_ERRMEM || (st == LUA_ERRERR && h->mem_refused)) {
        char msg[CG_ERR_MAX];
        memory_message(h, h->called, msg, sizeof msg);
        cg_fail(e, "%s", msg);
    } else if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
        cg_fail(e, "%s", lua_tostring(L, -1));
    } else {
        cg_fail(e, "error object is a %s value", luaL_typename(L, -1));
    }
    lua_pop(L, 2); /* error value and message handler */
    if (h->mem_refused && h->depth == 0) lua_gc(L, LUA_GCCOLLECT); /* room for the caller */
    return -1;
}

int cg_lua_import(cg_lua *h, const char *name, cg_err *e)
{
    if (!lua_checkstack(h->L, 3)) return cg_fail(e, "cg_lua_import: Lua stack exhausted");
    lua_pushcfunction(h->L, l_import_c);
    lua_pushlightuserdata(h->L, (void *)name);
    return cg_lua_pcall(h, 1, 1, e);
}

const char *cg_lua_template_text(cg_lua *h, const char *name, size_t *len)
{
    int missing;
    cg_err err;
    size_t n = 0;
    const char *text = find_text(h, name, &n, &missing, &err);
    if (text && len) *len = n;
    return text;
}

int cg_lua_template_exists(cg_lua *h, const char *name)
{
    return cg_lua_template_text(h, name, NULL) != NULL;
}
