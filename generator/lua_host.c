/* lua_host.c — the sandboxed Lua 5.4 state that runs templates.
 *
 * Sandbox = a pruned standard library (base minus its file/loader/GC doors,
 * string minus dump, table, math, utf8), a `setmetatable` that refuses __gc
 * (Lua runs finalizers with hooks off, so they would escape the instruction
 * bound), an xpcall whose handler cannot outlive the budget, a string.rep that
 * checks its size first, a text-only `load`, and `import`. Bounds = a counting allocator that
 * refuses growth past the byte limit while a call is running, and a count hook
 * that charges instructions against a per-call budget. Every error leaves
 * cg_lua_pcall as one line, "templates/FILE.lua:LINE: message" (FILE:
 * cg_template_path, below). */
#include "lua_host.h"
#include "op.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>

#define HOOK_STEP 1000             /* instructions between hook calls, normally */
#define LOADED_KEY "convgen.loaded" /* registry table: template name -> its value */
#define READONLY_KEY "convgen.readonly" /* registry set of the read-only library tables */
#define CLOCK_EVERY 1024           /* precise hook: read the CPU clock every this many calls */
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
    char *chunk;        /* "@" and a template's file (cg_template_path), composed by chunk_name */
    size_t chunk_cap;
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
    double max_seconds;  /* CPU time per outermost call */
    double started;      /* CPU time of this thread when the call started */
    int clock_skip;      /* precise hook calls left before the next clock read */
    int timed_out;       /* the time limit was hit during this call */
    char time_text[32];  /* max_seconds for messages */
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

/* CPU time of the calling thread in seconds: the sandbox's time limit is
 * CPU, not wall, time so that a loaded machine does not fail a template. */
static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Count hook: charges instructions to the call's budget, remembers where the
 * code is (for memory errors, which Lua raises without a position) and stops
 * the call once the budget is spent. It also reads the thread's CPU clock (on
 * every normal call, every CLOCK_EVERY precise ones) and stops the call past
 * the time limit: C library calls between two hook calls are bounded by their
 * wrappers' charges, and this catches what adds up across many of them.
 * After either stop it fires on every instruction, so a template that catches
 * the error with pcall cannot keep running. */
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
    if (!h->timed_out && (h->step != 1 || --h->clock_skip <= 0)) {
        h->clock_skip = CLOCK_EVERY;
        if (cpu_seconds() - h->started > h->max_seconds) {
            h->timed_out = 1;
            h->count = h->max_instr + 1; /* also skips xpcall handlers, as for the count */
        }
    }
    if (h->timed_out) {
        if (h->step != 1) {
            h->step = 1;
            lua_sethook(L, hook, LUA_MASKCOUNT, 1);
        }
        lua_pushfstring(L, "%s:%d: time limit of %s s CPU exceeded", h->where, h->line, h->time_text);
        lua_error(L);
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

int cg_template_path(const char *dir, const char *name, char *out, size_t n)
{
    if (!dir) dir = "templates";
    if (!valid_name(name)) return -1;
    const char *folder = "ops", *rest = name;
    size_t flen = 3;
    const char *slash = strchr(name, '/');
    if (slash) {
        folder = NULL; /* a path below dir, unless it reaches into a folder named by the rule below */
        size_t first = (size_t)(slash - name);
        if (first == 3 && !strncmp(name, "ops", 3)) return -1;
        for (int op = 0; op < CG_OP_COUNT; op++) {
            const char *fam = cg_ops[op].family;
            if (fam && strlen(fam) == first + 1 && !strncmp(name, fam, first)) return -1;
        }
    } else {
        for (int op = 0; op < CG_OP_COUNT; op++) {
            const char *fam = cg_ops[op].family;
            size_t p = fam ? strlen(fam) : 0;
            if (p > 1 && fam[p - 1] == '_' && !strncmp(name, fam, p) && name[p]) {
                folder = fam, flen = p - 1, rest = name + p;
                break;
            }
        }
    }
    size_t d = strlen(dir);
    const char *sep = d && dir[d - 1] == '/' ? "" : "/";
    int k = folder ? snprintf(out, n, "%s%s%.*s/%s.lua", dir, sep, (int)flen, folder, rest)
                   : snprintf(out, n, "%s%s%s.lua", dir, sep, name);
    return k < 0 || (size_t)k >= n ? -1 : k;
}

int cg_template_name(const char *path, char *out, size_t n)
{
    static const char top[] = "templates/";
    size_t len = strlen(path);
    if (strncmp(path, top, sizeof top - 1) || len < sizeof top + 4 || strcmp(path + len - 4, ".lua")) return -1;
    const char *rel = path + sizeof top - 1, *slash = strchr(rel, '/');
    size_t rlen = len - (sizeof top - 1) - 4;
    if (!slash) return -1; /* loose in templates/ */
    char cand[NAME_MAX_LEN + 32];
    size_t first = (size_t)(slash - rel);
    const char *fam = NULL;
    for (int op = 0; op < CG_OP_COUNT && !fam; op++) {
        const char *f = cg_ops[op].family;
        if (f && strlen(f) == first + 1 && !strncmp(rel, f, first)) fam = f;
    }
    int k;
    if (fam) /* conv2d/direct -> conv2d_direct */
        k = snprintf(cand, sizeof cand, "%s%.*s", fam, (int)(rlen - first - 1), slash + 1);
    else if (first == 3 && !strncmp(rel, "ops", 3)) /* ops/softmax -> softmax */
        k = snprintf(cand, sizeof cand, "%.*s", (int)(rlen - 4), rel + 4);
    else /* lib/engine */
        k = snprintf(cand, sizeof cand, "%.*s", (int)rlen, rel);
    if (k < 0 || (size_t)k >= sizeof cand || (size_t)k >= n) return -1;
    char back[NAME_MAX_LEN + 64];
    if (cg_template_path(NULL, cand, back, sizeof back) < 0 || strcmp(back, path)) return -1;
    memcpy(out, cand, (size_t)k + 1);
    return k;
}

/* "@" and the file of template NAME, the chunk name its code carries, in the
 * host's buffer (sized at open for any valid name); NULL when NAME has no file
 * (cg_template_path refuses it). */
static const char *chunk_name(cg_lua *h, const char *name)
{
    h->chunk[0] = '@';
    return cg_template_path(h->dir, name, h->chunk + 1, h->chunk_cap - 1) < 0 ? NULL : h->chunk;
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
        if (cg_template_path(NULL, name, path, sizeof path) < 0) {
            *missing = 1;
            return NULL;
        }
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
    const char *file = chunk_name(h, name);
    if (!file) {
        *missing = 1;
        return NULL;
    }
    cg_buf path;
    cg_buf_init(&path);
    if (cg_buf_printf(&path, "%s", file + 1)) {
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

/* The body of `import`: validate, return the cached value, or load the
 * template's file (cg_template_path) in text mode and run it once in the sandbox. The chunk
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
    const char *chunk = lua_pushstring(L, chunk_name(h, name));
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
 * its chunk carries ("@templates/conv2d/direct.lua"), so the template engine can map
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
    lua_pushstring(L, chunk_name(h, name));
    return 2;
}

/* ---- bounds on C library functions ------------------------------------------
 * The count hook sees only Lua instructions: a C library function that loops
 * (string.rep of an empty string 2^62 times, table.move over 2^50 slots, a
 * backtracking pattern) would run unbounded inside one instruction. The
 * wrappers below work out, before calling the library function, an upper
 * bound on the steps it will take and charge that to the same instruction
 * budget (one step = one instruction). A call whose bound does not fit in
 * what is left fails at its line with the instruction-limit message. The
 * CPU-time check in the hook is the backstop for everything else (many calls
 * of linear C functions on large strings). */

#define ORIGINAL_FN lua_upvalueindex(1)

/* Charges `steps` of C work to the current call's instruction budget, or
 * raises the instruction-limit error (naming `what`) when they do not fit.
 * Outside cg_lua_pcall (depth 0) nothing is charged. */
static void charge(lua_State *L, double steps, const char *what)
{
    cg_lua *h = host(L);
    if (h->depth == 0 || steps <= 0) return;
    double left = (double)(h->max_instr - h->count);
    if (steps <= left) {
        h->count += (long long)steps;
        return;
    }
    h->count = h->max_instr + 1; /* spent: the hook stops any pcall that catches this */
    h->step = 1;
    lua_sethook(L, hook, LUA_MASKCOUNT, 1);
    char n[32];
    snprintf(n, sizeof n, "%.3g", steps);
    luaL_error(L, "instruction limit of %I exceeded (%s would take up to %s steps)", (lua_Integer)h->max_instr,
               what, n);
}

/* Calls the wrapped library function (upvalue 1) with the wrapper's arguments
 * and returns all its results. */
static int call_original(lua_State *L)
{
    lua_pushvalue(L, ORIGINAL_FN);
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* Number of integers in [i, j] as a double (0 when empty), without overflow. */
static double span(lua_Integer i, lua_Integer j)
{
    return j < i ? 0 : (double)((lua_Unsigned)j - (lua_Unsigned)i) + 1;
}

/* Argument idx as the library reads an integer (an integral float or a
 * numeric string counts), def when absent; *ok = 0 when it is not one, and
 * the library function then raises the error itself. */
static lua_Integer int_arg(lua_State *L, int idx, lua_Integer def, int *ok)
{
    if (lua_isnoneornil(L, idx)) return def;
    int isnum;
    lua_Integer v = lua_tointegerx(L, idx, &isnum);
    if (!isnum) *ok = 0;
    return v;
}

/* #t (with __len) for the table functions below; -1 when arg 1 is not a table,
 * in which case the library function reports the error itself. */
static lua_Integer table_len(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TTABLE) return -1;
    return luaL_len(L, 1);
}

/* table.move(a1, f, e, t [,a2]): one step per element moved. */
static int l_table_move(lua_State *L)
{
    int ok = !lua_isnoneornil(L, 2) && !lua_isnoneornil(L, 3);
    lua_Integer f = int_arg(L, 2, 0, &ok), e = int_arg(L, 3, 0, &ok);
    if (ok) charge(L, span(f, e), "table.move");
    return call_original(L);
}

/* table.concat(t [, sep [, i [, j]]]): one step per element joined. */
static int l_table_concat(lua_State *L)
{
    int ok = lua_type(L, 1) == LUA_TTABLE;
    lua_Integer i = int_arg(L, 3, 1, &ok), j = int_arg(L, 4, 0, &ok);
    if (ok && lua_isnoneornil(L, 4)) j = table_len(L);
    if (ok) charge(L, span(i, j), "table.concat");
    return call_original(L);
}

/* table.unpack(t [, i [, j]]): one step per value. */
static int l_table_unpack(lua_State *L)
{
    int ok = 1;
    lua_Integer i = int_arg(L, 2, 1, &ok), j = int_arg(L, 3, 0, &ok);
    if (ok && lua_isnoneornil(L, 3)) j = lua_type(L, 1) == LUA_TTABLE ? luaL_len(L, 1) : 0;
    if (ok) charge(L, span(i, j), "table.unpack");
    return call_original(L);
}

/* table.insert(t, pos, v) and table.remove(t, pos) shift the elements between
 * pos and #t (a __len can make #t huge): one step per element shifted. */
static int l_table_shift(lua_State *L)
{
    int insert = lua_tointeger(L, lua_upvalueindex(2)) == 'i';
    int ok = insert ? lua_gettop(L) == 3 : lua_gettop(L) >= 1;
    lua_Integer pos = int_arg(L, 2, -1, &ok);
    if (ok) {
        lua_Integer n = table_len(L);
        if (pos == -1 && lua_isnoneornil(L, 2)) pos = n;
        if (n >= 0) charge(L, span(pos, n), insert ? "table.insert" : "table.remove");
    }
    return call_original(L);
}

/* table.sort(t [, comp]): n log2 n comparisons and moves at most, twice. */
static int l_table_sort(lua_State *L)
{
    lua_Integer n = table_len(L);
    if (n > 1) {
        double dn = (double)n, lg = 1;
        while (lg < 64 && (double)((lua_Unsigned)1 << (int)lg) < dn) lg++;
        charge(L, 2 * dn * (lg + 1), "table.sort");
    }
    return call_original(L);
}

/* string.rep with the result size checked against the memory budget first:
 * the classic memory bomb then fails at its line, instead of deep inside an
 * allocation, where Lua raises its memory error without a position. An empty
 * result (empty string and separator) is returned at once: Lua would loop n
 * times copying nothing. */
static int l_rep(lua_State *L)
{
    cg_lua *h = host(L);
    size_t len, seplen;
    luaL_checklstring(L, 1, &len);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &seplen);
    if (n <= 0 || len + seplen == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    /* the result is built in a buffer and then copied: twice its size at peak */
    size_t unit = 2 * (len + seplen), left = h->used < h->max_bytes ? h->max_bytes - h->used : 0;
    if (h->depth > 0 && n > 1 && (lua_Unsigned)n - 1 > left / unit) {
        char lim[32];
        fmt_bytes(h->max_bytes, lim, sizeof lim);
        return luaL_error(L, "memory limit of %s exceeded", lim);
    }
    return call_original(L);
}

/* -- pattern matching cost --------------------------------------------------
 * Lua's matcher backtracks: ("a.-"):rep(30).."b" on 30 a's takes ~10^17 steps.
 * pattern_cost computes, for one call, how many steps the matcher takes from
 * every start position, by dynamic programming over (pattern item, subject
 * position) from the last item backwards: T[k][q] = steps of matching items
 * k.. at q, M[k][q] = whether they match there (the matcher stops at the first
 * success, so M decides where a loop over a repetition ends). That is exact for
 * the matcher's search order; a back reference (%1) has a length the table
 * cannot know, so it is charged its worst case and treated as never matching,
 * which can only over-count. The table also gives where each match ends, so
 * the walk of gsub and gmatch over start positions is followed exactly. It
 * costs items x positions steps (charged too) and 74 bytes per position (from
 * the memory budget). */

enum { IT_SINGLE, IT_OPEN, IT_CLOSE, IT_BAL, IT_FRONT, IT_BACKREF, IT_END };
typedef struct {
    int kind;
    const char *p, *ep; /* IT_SINGLE / IT_FRONT: the class text [p, ep) */
    char quant;         /* IT_SINGLE: 0 or one of * + - ? */
} pat_item;

/* Whether byte c is in class letter cl (%a, %D, ... or an escaped literal). */
static int class_match(int c, int cl)
{
    int r;
    switch (cl | 0x20) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'g': r = isgraph(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    default: return cl == c;
    }
    if (isupper(cl)) r = !r;
    return r != 0;
}

/* Whether byte c is in the set [p, end) where *p == '[' and *end == ']'. */
static int set_match(int c, const char *p, const char *end)
{
    int in = 1;
    p++;
    if (*p == '^') {
        in = 0;
        p++;
    }
    for (; p < end; p++) {
        if (*p == '%' && p + 1 < end) {
            p++;
            if (class_match(c, (unsigned char)*p)) return in;
        } else if (p + 2 < end && p[1] == '-') {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2]) return in;
            p += 2;
        } else if ((unsigned char)*p == c) {
            return in;
        }
    }
    return !in;
}

/* Whether byte c matches the single-character class [p, ep). */
static int single_match(int c, const char *p, const char *ep)
{
    switch (*p) {
    case '.': return 1;
    case '%': return class_match(c, (unsigned char)p[1]);
    case '[': return set_match(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

/* End of the single-character class starting at pat[i] (pat is NUL-ended, as
 * Lua strings are), or 0 with *err set for a malformed class. */
static size_t class_end(const char *pat, size_t lp, size_t i, const char **err)
{
    char c = pat[i++];
    if (c == '%') {
        if (i >= lp) {
            *err = "malformed pattern (ends with '%')";
            return 0;
        }
        return i + 1;
    }
    if (c == '[') {
        if (pat[i] == '^') i++;
        do {
            if (i >= lp) {
                *err = "malformed pattern (missing ']')";
                return 0;
            }
            if (pat[i++] == '%' && i < lp) i++;
        } while (pat[i] != ']');
        return i + 1;
    }
    return i;
}

/* Splits a pattern into items; *anchored reports a leading '^' when allowed
 * (find, match, gsub; gmatch takes '^' literally). -1 with *err when malformed. */
static int parse_pattern(const char *pat, size_t lp, int anchor_ok, pat_item *it, int *n, int *anchored,
                         const char **err)
{
    size_t i = 0;
    *n = 0;
    *anchored = 0;
    if (anchor_ok && lp > 0 && pat[0] == '^') {
        *anchored = 1;
        i = 1;
    }
    while (i < lp) {
        pat_item x = {IT_SINGLE, pat + i, NULL, 0};
        char c = pat[i];
        if (c == '(') {
            x.kind = IT_OPEN;
            i += pat[i + 1] == ')' ? 2 : 1;
        } else if (c == ')') {
            x.kind = IT_CLOSE;
            i++;
        } else if (c == '$' && i + 1 == lp) {
            x.kind = IT_END;
            i++;
        } else if (c == '%' && i + 1 < lp && pat[i + 1] == 'b') {
            if (i + 3 >= lp) {
                *err = "malformed pattern (missing arguments to '%b')";
                return -1;
            }
            x.kind = IT_BAL;
            x.p = pat + i + 2;
            i += 4;
        } else if (c == '%' && i + 1 < lp && pat[i + 1] == 'f') {
            i += 2;
            if (pat[i] != '[') {
                *err = "missing '[' after '%f' in pattern";
                return -1;
            }
            size_t e = class_end(pat, lp, i, err);
            if (!e) return -1;
            x.kind = IT_FRONT;
            x.p = pat + i;
            x.ep = pat + e;
            i = e;
        } else if (c == '%' && i + 1 < lp && isdigit((unsigned char)pat[i + 1])) {
            x.kind = IT_BACKREF;
            i += 2;
        } else {
            size_t e = class_end(pat, lp, i, err);
            if (!e) return -1;
            x.ep = pat + e;
            if (e < lp && strchr("*+-?", pat[e])) x.quant = pat[e++];
            i = e;
        }
        it[(*n)++] = x;
    }
    return 0;
}

/* Steps the matcher takes for one call on s[lo..n] (every start position from
 * lo, or only lo when anchored), charged with the table's own work. */
static double pattern_cost(lua_State *L, const char *s, size_t n, size_t lo, const pat_item *it, int nit,
                           int anchored, int which, double *matches)
{
    size_t len = n - lo + 2; /* positions lo..n, plus one past the end */
    charge(L, (double)(nit + 1) * (double)len, "pattern analysis");
    size_t bytes = len * (4 * sizeof(double) + 5 * sizeof(long long) + 2);
    double *Tn = lua_newuserdatauv(L, bytes, 0); /* freed by the GC, counted by the allocator */
    double *Tc = Tn + len, *PS = Tc + len, *mx = PS + len;
    long long *nxt = (long long *)(mx + len), *prv = nxt + len, *bal = prv + len;
    long long *En = bal + len, *Ec = En + len; /* where a match from q ends, when M */
    char *Mn = (char *)(Ec + len), *Mc = Mn + len;
    int backref = 0; /* M under-approximated: no jumps in the traversal below */
#define AT(q) ((q) - lo)
    for (size_t q = lo; q <= n; q++) {
        Tn[AT(q)] = 1;
        Mn[AT(q)] = 1;
        En[AT(q)] = (long long)q;
    }
    for (int k = nit - 1; k >= 0; k--) {
        /* summaries of row k+1: prefix sums, next/previous matching position, suffix max */
        PS[0] = 0;
        for (size_t q = lo; q <= n; q++) PS[AT(q) + 1] = PS[AT(q)] + Tn[AT(q)];
        long long last = -1;
        for (size_t q = lo; q <= n; q++) {
            if (Mn[AT(q)]) last = (long long)q;
            prv[AT(q)] = last;
        }
        long long next = (long long)n + 1;
        double best = 0;
        for (size_t q = n + 1; q-- > lo;) {
            if (Mn[AT(q)]) next = (long long)q;
            nxt[AT(q)] = next;
            if (Tn[AT(q)] > best) best = Tn[AT(q)];
            mx[AT(q)] = best;
        }
        const pat_item *x = &it[k];
        if (x->kind == IT_BAL) { /* bal[q]: one past the closing byte of a %b starting at q, or 0 */
            int open = (unsigned char)x->p[0], close = (unsigned char)x->p[1];
            long long top = -1; /* a stack of open positions, kept in bal[] itself */
            for (size_t q = lo; q < n; q++) bal[AT(q)] = 0;
            if (open == close) {
                long long after = 0;
                for (size_t q = n; q-- > lo;) {
                    bal[AT(q)] = (unsigned char)s[q] == open ? after : 0;
                    if ((unsigned char)s[q] == open) after = (long long)q + 1;
                }
            } else {
                /* nxt[] is free to hold the stack links here: it is not read for %b */
                for (size_t q = lo; q < n; q++) {
                    int c = (unsigned char)s[q];
                    if (c == close && top >= 0) {
                        long long o = top;
                        top = nxt[AT(o)];
                        bal[AT(o)] = (long long)q + 1;
                    } else if (c == open) {
                        nxt[AT(q)] = top;
                        top = (long long)q;
                    }
                }
            }
        }
        size_t run = 0;
        for (size_t q = n + 1; q-- > lo;) {
            int sm = x->kind == IT_SINGLE && q < n && single_match((unsigned char)s[q], x->p, x->ep);
            run = sm ? run + 1 : 0;
            double T = 1;
            int M = 0;
            size_t at = q; /* the row k+1 position whose match end is ours, when M */
            switch (x->kind) {
            case IT_SINGLE:
                if (x->quant == 0) {
                    if (sm) T += Tn[AT(q + 1)], M = Mn[AT(q + 1)], at = q + 1;
                } else if (x->quant == '?') {
                    if (sm) T += Tn[AT(q + 1)], M = Mn[AT(q + 1)], at = q + 1;
                    if (!M) T += Tn[AT(q)], M = Mn[AT(q)], at = q;
                } else if (x->quant == '-') {
                    size_t j = (size_t)nxt[AT(q)];
                    M = j <= q + run;
                    if (!M) j = q + run;
                    T += (double)(j - q) + PS[AT(j) + 1] - PS[AT(q)];
                    at = j;
                } else if (x->quant == '*' || sm) { /* '*', or '+' with a first match */
                    size_t from = x->quant == '*' ? q : q + 1;
                    long long j = prv[AT(q + run)];
                    M = j >= (long long)from;
                    size_t lo_sum = M ? (size_t)j : from;
                    at = lo_sum;
                    T += (double)run + PS[AT(q + run) + 1] - PS[AT(lo_sum)];
                }
                break;
            case IT_OPEN:
            case IT_CLOSE:
                T += Tn[AT(q)];
                M = Mn[AT(q)];
                break;
            case IT_END:
                if (q == n) T += Tn[AT(q)], M = Mn[AT(q)];
                break;
            case IT_FRONT: {
                int prev = q == 0 ? 0 : (unsigned char)s[q - 1], cur = q < n ? (unsigned char)s[q] : 0;
                if (!set_match(prev, x->p, x->ep - 1) && set_match(cur, x->p, x->ep - 1))
                    T += Tn[AT(q)], M = Mn[AT(q)];
                break;
            }
            case IT_BAL:
                if (q < n && (unsigned char)s[q] == (unsigned char)x->p[0]) {
                    size_t e = (size_t)bal[AT(q)];
                    if (e) T += (double)(e - q) + Tn[AT(e)], M = Mn[AT(e)], at = e;
                    else T += (double)(n - q);
                }
                break;
            case IT_BACKREF:
                T += (double)(n - q) + mx[AT(q)];
                backref = 1;
                break;
            }
            Tc[AT(q)] = T;
            Mc[AT(q)] = (char)M;
            Ec[AT(q)] = M ? En[AT(at)] : -1;
        }
        double *td = Tn;
        Tn = Tc;
        Tc = td;
        long long *te = En;
        En = Ec;
        Ec = te;
        char *tm = Mn;
        Mn = Mc;
        Mc = tm;
    }
    /* Follow the library function's own walk over start positions: find and
     * match stop at the first start that matches; gsub and gmatch go on from
     * each match's end and retry an empty match's end once (see lstrlib.c).
     * With a back reference M may miss matches: every start counts, twice. */
    double total = 0;
    size_t src = lo;
    long long last = -1;
    *matches = 0;
    for (;;) {
        total += Tn[AT(src)];
        if (anchored) break;
        if (which == 'f' || which == 'm') {
            if ((Mn[AT(src)] && !backref) || src == n) break;
            src++;
        } else if (Mn[AT(src)] && !backref && En[AT(src)] != last) {
            ++*matches;
            src = (size_t)En[AT(src)];
            last = (long long)src;
        } else if (src < n) {
            src++;
        } else {
            break;
        }
    }
    if (backref && (which == 'g' || which == 's')) {
        total *= 2;
        *matches = (double)(n - lo) + 1;
    }
#undef AT
    lua_pop(L, 1);
    return total;
}

/* Start offset of a find/match/gmatch call from its init argument (1-based,
 * negative from the end), as Lua computes it; SIZE_MAX when past the end. */
static size_t start_offset(lua_State *L, int arg, size_t n)
{
    lua_Integer i = luaL_optinteger(L, arg, 1);
    if (i > 0) return (lua_Unsigned)i - 1 > n ? SIZE_MAX : (size_t)i - 1;
    if (i == 0) return 0;
    lua_Unsigned back = (lua_Unsigned)0 - (lua_Unsigned)i;
    return back >= n ? 0 : n - (size_t)back;
}

/* string.find/match/gmatch/gsub: the matcher's steps, bounded as above, are
 * charged before the library function runs. Upvalue 2 says which function:
 * 'f'ind, 'm'atch, 'g'match, 's'ub; gmatch is charged for its whole walk when
 * the iterator is made, gsub also for reading a string replacement once per
 * match (it may add nothing: "%1" of an empty capture). A plain find is a substring search: charged
 * (occurrences of the needle's first byte) x (needle length). */
static int l_pattern(lua_State *L)
{
    int which = (int)lua_tointeger(L, lua_upvalueindex(2));
    size_t n, lp;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *pat = luaL_checklstring(L, 2, &lp);
    size_t lo = which == 's' ? 0 : start_offset(L, 3, n);
    const char *what = which == 'f' ? "string.find" : which == 'm' ? "string.match"
                     : which == 'g' ? "string.gmatch" : "string.gsub";
    if (lo == SIZE_MAX) return call_original(L);
    int plain = which == 'f' && lua_toboolean(L, 4);
    if (which == 'f' && !plain) {
        plain = 1; /* no special byte anywhere: Lua does a substring search */
        for (size_t i = 0; i < lp && plain; i++)
            if (pat[i] && strchr("^$*+?.([%-", pat[i])) plain = 0;
    }
    if (plain) {
        double hits = 0;
        if (lp > 0 && lp <= n - lo)
            for (const char *p = s + lo; (p = memchr(p, pat[0], (size_t)(s + n - p))) != NULL; p++) hits++;
        charge(L, (double)(n - lo) + hits * (double)lp, what);
        return call_original(L);
    }
    pat_item *items = lua_newuserdatauv(L, (lp + 1) * sizeof *items, 0);
    int nit, anchored;
    const char *err = NULL;
    if (parse_pattern(pat, lp, which != 'g', items, &nit, &anchored, &err)) return luaL_error(L, "%s", err);
    double matches;
    double steps = pattern_cost(L, s, n, lo, items, nit, anchored, which, &matches);
    lua_pop(L, 1);
    if (which == 's' && lua_type(L, 3) == LUA_TSTRING) /* the replacement is read once per match */
        steps += matches * (double)lua_rawlen(L, 3);
    charge(L, steps, what);
    return call_original(L);
}

/* Replaces field NAME of the table on top of the stack by closure F over the
 * original function (upvalue 1) and, when tag is not 0, the integer tag
 * (upvalue 2). */
static void wrap(lua_State *L, const char *name, lua_CFunction f, int tag)
{
    lua_getfield(L, -1, name);
    if (tag) lua_pushinteger(L, tag);
    lua_pushcclosure(L, f, tag ? 2 : 1);
    lua_setfield(L, -2, name);
}

/* __newindex of a read-only library: every assignment is an error. */
static int l_readonly_set(lua_State *L)
{
    return luaL_error(L, "the %s library is read-only in templates", lua_tostring(L, lua_upvalueindex(1)));
}

/* The iterator pairs() gives for a read-only library: next() over the real
 * table (upvalue 1), which it never hands out. */
static int l_readonly_next(lua_State *L)
{
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_replace(L, 1);
    if (lua_next(L, 1)) return 2;
    lua_pushnil(L);
    return 1;
}

/* __pairs of a read-only library: the iterator above, the proxy, nil. */
static int l_readonly_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/* Replaces global library NAME by an empty proxy that reads through to it and
 * refuses writes (__newindex, a protected metatable, and rawset below). The
 * real table stays reachable only from C and through the string metatable,
 * whose __metatable hides it. */
static void make_readonly(lua_State *L, const char *name)
{
    lua_getglobal(L, name);      /* real */
    lua_newtable(L);             /* proxy */
    lua_createtable(L, 0, 4);    /* its metatable */
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, l_readonly_set, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, l_readonly_next, 1);
    lua_pushcclosure(L, l_readonly_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_getfield(L, LUA_REGISTRYINDEX, READONLY_KEY);
    lua_pushvalue(L, -2);
    lua_pushstring(L, name);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_setglobal(L, name);
    lua_pop(L, 1);
}

/* rawset as in Lua, refused on the read-only library proxies (rawset would
 * otherwise bypass their __newindex). */
static int l_rawset(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, READONLY_KEY);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) == LUA_TSTRING)
        return luaL_error(L, "rawset: the %s library is read-only in templates", lua_tostring(L, -1));
    lua_pop(L, 2);
    return call_original(L);
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
    wrap(L, "rep", l_rep, 0);
    wrap(L, "find", l_pattern, 'f');
    wrap(L, "match", l_pattern, 'm');
    wrap(L, "gmatch", l_pattern, 'g');
    wrap(L, "gsub", l_pattern, 's');
    lua_pop(L, 1);
    lua_getglobal(L, LUA_TABLIBNAME);
    wrap(L, "move", l_table_move, 0);
    wrap(L, "concat", l_table_concat, 0);
    wrap(L, "unpack", l_table_unpack, 0);
    wrap(L, "insert", l_table_shift, 'i');
    wrap(L, "remove", l_table_shift, 'r');
    wrap(L, "sort", l_table_sort, 0);
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
    lua_getglobal(L, "rawset");
    lua_pushcclosure(L, l_rawset, 1);
    lua_setglobal(L, "rawset");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
    /* One state serves every template: the libraries and the metatable all
     * strings share must not be changeable by one template under another. */
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, READONLY_KEY);
    static const char *const frozen[] = {LUA_STRLIBNAME, LUA_TABLIBNAME, LUA_MATHLIBNAME, LUA_UTF8LIBNAME, NULL};
    for (const char *const *n = frozen; *n; n++) make_readonly(L, *n);
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable"); /* getmetatable("") is false, setmetatable refuses */
    lua_pop(L, 2);
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

/* Limits a newly opened state starts with (cg_lua_set_default_limits). */
static long long default_instr = CG_LUA_MAX_INSTRUCTIONS;
static size_t default_bytes = CG_LUA_MAX_BYTES;
static double default_seconds = CG_LUA_MAX_SECONDS;

void cg_lua_set_default_limits(long long max_instructions, size_t max_bytes, double seconds)
{
    default_instr = max_instructions > 0 ? max_instructions : CG_LUA_MAX_INSTRUCTIONS;
    default_bytes = max_bytes > 0 ? max_bytes : CG_LUA_MAX_BYTES;
    default_seconds = seconds > 0 ? seconds : CG_LUA_MAX_SECONDS;
}

int cg_lua_open(cg_lua **out, const char *template_dir, cg_err *e)
{
    *out = NULL;
    cg_lua *h = calloc(1, sizeof *h);
    if (!h) return cg_fail(e, "out of memory");
    h->max_instr = default_instr;
    h->max_bytes = default_bytes;
    cg_lua_set_time_limit(h, default_seconds);
    h->step = HOOK_STEP;
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
    }
    h->chunk_cap = strlen(h->dir ? h->dir : "templates") + NAME_MAX_LEN + 64; /* "@", "/", a folder, ".lua" */
    h->chunk = malloc(h->chunk_cap);
    if (!h->chunk) {
        cg_lua_close(h);
        return cg_fail(e, "out of memory");
    }
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
    free(h->chunk);
    free(h);
}

lua_State *cg_lua_state(cg_lua *h) { return h->L; }

void cg_lua_set_limits(cg_lua *h, long long max_instructions, size_t max_bytes)
{
    h->max_instr = max_instructions > 0 ? max_instructions : CG_LUA_MAX_INSTRUCTIONS;
    h->max_bytes = max_bytes > 0 ? max_bytes : CG_LUA_MAX_BYTES;
}

long long cg_lua_instruction_limit(const cg_lua *h) { return h->max_instr; }

void cg_lua_set_instruction_limit(cg_lua *h, long long max_instructions)
{
    h->max_instr = max_instructions > 0 ? max_instructions : CG_LUA_MAX_INSTRUCTIONS;
}

void cg_lua_set_time_limit(cg_lua *h, double seconds)
{
    h->max_seconds = seconds > 0 ? seconds : CG_LUA_MAX_SECONDS;
    snprintf(h->time_text, sizeof h->time_text, "%g", h->max_seconds);
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
    h->timed_out = 0;
    h->clock_skip = CLOCK_EVERY;
    h->started = cpu_seconds();
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
