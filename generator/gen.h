/* gen.h — from a validated spec to CUDA sources and a launch manifest.
 *
 * The generator hands the spec to templates/lib/network.lua inside the sandbox;
 * the templates decide which kernels a layer needs, their source and their launch
 * geometry. This file only moves data between C and Lua and writes files. */
#ifndef CG_GEN_H
#define CG_GEN_H
#include "spec.h"
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
    char *manifest; /* malloc'd manifest text (format: runtime/manifest.h) */
    size_t manifest_len;
    char hash[17];  /* hash of the manifest body and every kernel's code (headers aside):
                       identifies a build, however the spec's path was spelled */
} cg_gen_output;

/* What generated kernels may assume of the GPU that runs them. JIT fills it
 * from the device (cuDeviceGetAttribute), `convgen build` from a
 * per-architecture table (the minimum over the chosen archs, runtime/aot.c).
 * Templates see it as net.target and l.target (one table):
 * { cc=, max_shared=, regs_per_block=, regs_per_sm=, sms=, max_threads= }. */
typedef struct {
    int cc;               /* compute capability compiled for: 10*major+minor */
    int max_shared_optin; /* bytes of shared memory one block may use, opt-in included */
    int regs_per_block;   /* 32-bit registers one block may use */
    int regs_per_sm;
    int sms;              /* multiprocessors; 0 when unknown (a fat binary serves many GPUs) */
    int max_threads;      /* threads per block */
} cg_target;

/* The conservative default a NULL target means: cc 75, 48 KiB of shared
 * memory, 64 Ki registers per block and per SM, 1024 threads, SMs unknown. */
void cg_target_default(cg_target *t);

/* The command that regenerates a spec's files, as file headers show it. */
void cg_regen_command(const char *spec_path, char *out, size_t n);
/* regen_cmd goes into each file header (see cg_regen_command). Generates for
 * the default target (cg_target_default). */
int cg_generate(const cg_spec *s, const char *regen_cmd, cg_gen_output *out, cg_err *e);
/* The same for target t (NULL: the default); kernels needing more shared
 * memory than t allows are refused. */
int cg_generate_for(const cg_spec *s, const char *regen_cmd, const cg_target *t,
                    cg_gen_output *out, cg_err *e);
/* Push the network table templates/lib/network.lua receives, target included
 * (NULL: the default). Exposed so tests (and a tuner) can build it alone. */
void cg_gen_push_net(lua_State *L, const cg_spec *s, const cg_target *t);
/* Write DIR/<kernel>.cu for each kernel and DIR/manifest.txt; stale .cu files in
 * DIR that this output does not contain are removed. Nothing is written on error. */
int cg_gen_write(const cg_gen_output *o, const char *dir, cg_err *e);
void cg_gen_free(cg_gen_output *o);

#endif
