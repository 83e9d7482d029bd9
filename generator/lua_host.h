/* lua_host.h — a sandboxed Lua 5.4 state for templates.
 *
 * The state has only: base functions minus dofile/loadfile/load/require/
 * collectgarbage(…) side doors, string (without string.dump), table, math,
 * utf8, and `import(name)`, which loads another template file by name
 * (cg_template_path: "lib/engine" -> templates/lib/engine.lua, "conv2d_direct"
 * -> templates/conv2d/direct.lua) in text mode, in the same sandbox, once. A
 * `load(text, chunkname)` that accepts only text chunks and runs them in the
 * sandbox environment is provided for the template engine.
 * `template_text(name)` returns a template's text and chunk name, so the engine
 * can point errors in a template's CUDA text at lines of its file.
 * Every call made through cg_lua_pcall is bounded in instructions and the state
 * in memory; exceeding either is an error like any other. Errors read
 * "templates/FILE.lua:LINE: message", FILE as cg_template_path gives it. */
#ifndef CG_LUA_HOST_H
#define CG_LUA_HOST_H
#include "util.h"
#include <lua.h>

/* Details (generator/lua_host.c): print, warn, collectgarbage, coroutine, io,
 * os, package and debug are absent; setmetatable refuses metatables with __gc
 * (finalizers run with hooks off); xpcall handlers are skipped once the
 * instruction budget is spent; math.random has a fixed seed (same output on
 * every run). load(text [, chunkname [, mode [, env]]]): text must be a string,
 * mode nil or "t", binary chunks raise an error, syntax errors return nil, msg;
 * env defaults to the sandbox globals. import caches by name like require (a
 * template returning nothing imports as true); cycles are errors naming the
 * chain. Run Lua code only through cg_lua_pcall (or cg_lua_import): it resets
 * the instruction budget, and the byte limit is enforced only inside it, so C
 * code pushing values between calls never hits the limit. Errors raised for C
 * callers outside any template carry no position ("template 'x' not found"). */
typedef struct cg_lua cg_lua;

/* One template file as embedded in the binary by tools/embed.c. */
typedef struct {
    const char *path; /* "templates/conv2d/direct.lua" */
    const char *data;
    size_t len;
} cg_embedded_file;
extern const cg_embedded_file cg_embedded_templates[]; /* ends with {NULL,NULL,0} */

/* Default limits; tests lower them. */
#define CG_LUA_MAX_INSTRUCTIONS 200000000LL
#define CG_LUA_MAX_BYTES (256u << 20)
#define CG_LUA_MAX_SECONDS 60.0 /* CPU seconds per call: a backstop, see lua_host.c */

/* The file template NAME lives in, DIR/FILE.lua (dir NULL: "templates"), into
 * out: templates are grouped by the op table's families (generator/op.h), so
 * a NAME that starts with a family prefix and goes on lives in the family's
 * folder, the prefix without its underscore ("conv2d_direct" ->
 * templates/conv2d/direct.lua, "fc_vec" -> templates/fc/vec.lua); a NAME with
 * a '/' is a path below DIR ("lib/engine" -> templates/lib/engine.lua); every
 * other NAME lives in ops/ ("softmax" -> templates/ops/softmax.lua). The length
 * written, or -1 when NAME is not a template name (import's rule, or a '/' name
 * that reaches into ops/ or a family folder, which would name a file twice) or
 * the path does not fit in n bytes. The one place the name -> file rule lives:
 * the loader, the generator's headers and messages and the tuner use it. */
int cg_template_path(const char *dir, const char *name, char *out, size_t n);
/* The template an embedded file holds ("templates/conv2d/direct.lua" ->
 * "conv2d_direct"): the name cg_template_path maps to exactly that path, or -1
 * when none does (a file loose in templates/, one not ending in .lua, one in a
 * folder its name would not lead to) or it does not fit in n bytes. */
int cg_template_name(const char *path, char *out, size_t n);

/* Open a sandbox. template_dir NULL: use the embedded templates; otherwise read
 * the templates from the directory DIR laid out as templates/ is
 * (cg_template_path with DIR; tests use it). */
int cg_lua_open(cg_lua **out, const char *template_dir, cg_err *e);
void cg_lua_close(cg_lua *h);
lua_State *cg_lua_state(cg_lua *h);
void cg_lua_set_limits(cg_lua *h, long long max_instructions, size_t max_bytes);
/* The instruction budget of an outermost call, and setting it alone (0: the default). */
long long cg_lua_instruction_limit(const cg_lua *h);
void cg_lua_set_instruction_limit(cg_lua *h, long long max_instructions);
/* CPU seconds one outermost call may take (0: the default). */
void cg_lua_set_time_limit(cg_lua *h, double seconds);
/* The limits every state opened from now on starts with, process-wide (0:
 * the default): for callers that open states indirectly, as cg_generate does
 * (the fuzzing harness runs the generator with small limits). */
void cg_lua_set_default_limits(long long max_instructions, size_t max_bytes, double seconds);

/* Push the value returned by template NAME (e.g. "conv2d_direct", "lib/planner"). */
int cg_lua_import(cg_lua *h, const char *name, cg_err *e);
/* lua_pcall with the instruction budget reset, memory bounded, and the error
 * turned into one line in e. Pops function+args, pushes nres results on success. */
int cg_lua_pcall(cg_lua *h, int nargs, int nres, cg_err *e);
/* Text of template NAME as the sandbox sees it (for hashing); NULL if absent. */
const char *cg_lua_template_text(cg_lua *h, const char *name, size_t *len);
/* 1 if template NAME exists (embedded, or its file below DIR when opened with a
 * directory), 0 otherwise (including names import would reject). */
int cg_lua_template_exists(cg_lua *h, const char *name);

#endif
