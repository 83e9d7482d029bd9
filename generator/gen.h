/* gen.h — from a validated spec to CUDA sources and a launch manifest.
 *
 * The generator hands the spec to templates/lib/planner.lua inside the sandbox;
 * the templates decide which kernels a layer needs, their source and their launch
 * geometry. This file only moves data between C and Lua and writes files. */
#ifndef CG_GEN_H
#define CG_GEN_H
#include "spec.h"
#include "target.h"
#include <lua.h>

#define CG_MAX_KERNELS 256

typedef struct {
    char kernel[128];   /* kernel name, built from its configuration */
    char file[160];     /* kernel + ".cu" */
    char tpl[64];       /* template name, e.g. "conv2d_direct" */
    char tpl_hash[17];  /* hash of the template's code and its libraries (template_hash) */
    char layer[CG_NAME_MAX];
    char *source;       /* malloc'd, full file text including header */
    size_t source_len;
    size_t header_len;  /* the header comment: names the spec path, so not part of the build id */
} cg_gen_kernel;

typedef struct {
    int nkernels;
    cg_gen_kernel k[CG_MAX_KERNELS];
    char *manifest; /* malloc'd manifest text (format: runtime/formats/manifest.h) */
    size_t manifest_len;
    char hash[17];  /* hash of the manifest body and every kernel's code (headers aside):
                       identifies a build, however the spec's path was spelled */
    char note[256]; /* "" or what the caller should tell the user: the precision generated in
                       place of the spec's (precision_fallback); the manifest says it too */
} cg_gen_output;

/* ---- one layer at a time (templates/lib/planner.lua: candidates, check_one,
 * emit_one): what a tuner and the kernel harness call. `layer` is 0-based;
 * `tpl` names a template ("conv2d_direct", "fc_vec"), NULL for the one the
 * layer's strategy names. `params` is "k=v k=v" (commas also separate); a
 * parameter it leaves out takes the spec's value when tpl is the layer's own
 * template, else is searched as a spec's layer's are (its default first, then its
 * legal values: the first combination the template accepts). Failures are one
 * line naming the spec and the layer. ---- */

#define CG_PARAMS_TEXT 512
#define CG_MAX_REASONS 8

/* Launch facts of one kernel, as its manifest record carries them. */
typedef struct {
    char grid[3][64];              /* an integer or "N*a/b": ceil(N*a/b) blocks for N images */
    int block[3];
    int shared;                    /* dynamic shared memory, bytes */
    char weights[200], bias[200];  /* none | arg | arg:transposed | const:SYMBOL */
    char args[64];                 /* the kernel's parameters by role: "in,out,weights,bias,n" */
    char wdtype[8];                /* the 16-bit type its weights and bias are read in ("bf16", "f16"); "": f32 */
    char params[CG_PARAMS_TEXT];   /* "k=v k=v", the template's declared order */
    long long in_elems, out_elems; /* per image */
    int fused;                     /* conv: 0 when activation and pooling are left to other kernels */
    char record[1024];             /* the manifest's kernel line, without its newline */
} cg_kernel_launch;

typedef struct {
    char params[CG_PARAMS_TEXT]; /* "k=v k=v", the template's declared order */
    double cost; /* the template's cost model (T.cost): an estimate comparable among one
                    template's candidates on one layer, lower first; -1 without one */
} cg_candidate;

/* Refusals of the template's check that blamed one parameter. */
typedef struct {
    char param[CG_NAME_MAX]; /* "" when the check named none */
    long long count;
    char example[256];       /* the first such refusal's message */
} cg_refusal;

typedef struct {
    char tpl[64];
    char names[CG_PARAMS_TEXT]; /* the template's parameter names, space-separated */
    long long total;            /* product of the legal-value counts */
    long long examined;         /* combinations put to the check: total, or the cap */
    long long refused;          /* examined and refused */
    int n;                      /* accepted, in c[] (examination order) */
    cg_candidate *c;            /* malloc'd */
    int nreasons;               /* groups of refusals (at most CG_MAX_REASONS kept) */
    cg_refusal reason[CG_MAX_REASONS];
    char note[256];             /* non-empty when the cap cut the enumeration short */
} cg_candidates;

/* Every legal configuration of one layer for one template, filtered through
 * the template's check. cap <= 0: the templates' default cap (1000000). The
 * costs are estimates for 10000 images (common.cost.BATCH); the _for form
 * below takes the batch. */
int cg_gen_candidates(const cg_spec *s, int layer, const char *tpl, long long cap,
                      cg_candidates *out, cg_err *e);
void cg_candidates_free(cg_candidates *c);
/* The template's verdict on one configuration: 0 accepted, 1 refused (why
 * receives the message), -1 error (e). */
int cg_gen_check_one(const cg_spec *s, int layer, const char *tpl, const char *params, char *why,
                     size_t why_n, cg_err *e);
/* Source (with header) and launch of the layer's conv or fc kernel alone under
 * one configuration; out->source is malloc'd (cg_gen_kernel_free). */
int cg_gen_emit_one(const cg_spec *s, int layer, const char *tpl, const char *params,
                    cg_gen_kernel *out, cg_kernel_launch *launch, cg_err *e);
/* The three calls above for target tg (the device a kernel will run on, or the
 * architectures of a fat binary); the plain ones use the conservative default
 * (cg_target_default), where shared memory, clusters and the like are smallest.
 * batch: the images per launch the candidates' costs are estimated for (tune's
 * --batch; <= 0: the cost model's default, 10000). */
int cg_gen_candidates_for(const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                          long long cap, long long batch, cg_candidates *out, cg_err *e);
int cg_gen_check_one_for(const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                         const char *params, char *why, size_t why_n, cg_err *e);
int cg_gen_emit_one_for(const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                        const char *params, cg_gen_kernel *out, cg_kernel_launch *launch, cg_err *e);
void cg_gen_kernel_free(cg_gen_kernel *k);

/* One Lua sandbox kept across emissions (and checks), the planner and templates imported
 * once, for a caller emitting or checking many configurations in a row (the tuner's compile
 * batches, the tests): each cg_gen_emit_one_for opens a sandbox of its own, and
 * importing a large template costs more than emitting a kernel from it. Each
 * call still runs under its own instruction and time budget; what one call leaves
 * in the sandbox is the module cache only (the planner and templates keep no
 * state between calls: test_generate compares kept and fresh emissions byte for
 * byte). One thread at a time. */
typedef struct cg_gen_emitter cg_gen_emitter;
int cg_gen_emitter_open(cg_gen_emitter **out, cg_err *e);
void cg_gen_emitter_close(cg_gen_emitter *em);
/* cg_gen_emit_one_for through em (NULL: a sandbox of its own). */
int cg_gen_emit_one_with(cg_gen_emitter *em, const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                         const char *params, cg_gen_kernel *out, cg_kernel_launch *launch, cg_err *e);
/* cg_gen_check_one_for through em (NULL: a sandbox of its own): a caller putting many
 * configurations to the template's check one at a time. */
int cg_gen_check_one_with(cg_gen_emitter *em, const cg_spec *s, const cg_target *tg, int layer, const char *tpl,
                          const char *params, char *why, size_t why_n, cg_err *e);

/* regen_cmd goes into each file header (see cg_regen_command). Generates for
 * the default target (cg_target_default). */
int cg_generate(const cg_spec *s, const char *regen_cmd, cg_gen_output *out, cg_err *e);
/* The same for target t (NULL: the default); kernels needing more shared
 * memory than t allows are refused. */
int cg_generate_for(const cg_spec *s, const char *regen_cmd, const cg_target *t,
                    cg_gen_output *out, cg_err *e);
/* Push the network table templates/lib/planner.lua receives, target included
 * (NULL: the default). Exposed so tests (and a tuner) can build it alone. */
void cg_gen_push_net(lua_State *L, const cg_spec *s, const cg_target *t);
/* Write DIR/<kernel>.cu for each kernel and DIR/manifest.txt; stale .cu files in
 * DIR that this output does not contain are removed. Nothing is written on error. */
int cg_gen_write(const cg_gen_output *o, const char *dir, cg_err *e);
void cg_gen_free(cg_gen_output *o);
/* Whether a and b are one kernel: the same text but for the header's layer
 * line. cg_generate writes such kernels (two identical layers) once, the
 * header's layer line naming every layer; the manifest has a kernel line for
 * each layer. Two kernels of one name that differ otherwise are an error. */
int cg_gen_same_kernel(const cg_gen_kernel *a, const cg_gen_kernel *b);

#endif
