/* gen.h — from a validated spec to CUDA sources and a launch manifest.
 *
 * The generator hands the spec to templates/lib/network.lua inside the sandbox;
 * the templates decide which kernels a layer needs, their source and their launch
 * geometry. This file only moves data between C and Lua and writes files. */
#ifndef CG_GEN_H
#define CG_GEN_H
#include "spec.h"

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

/* The command that regenerates a spec's files, as file headers show it. */
void cg_regen_command(const char *spec_path, char *out, size_t n);
/* regen_cmd goes into each file header (see cg_regen_command). */
int cg_generate(const cg_spec *s, const char *regen_cmd, cg_gen_output *out, cg_err *e);
/* Write DIR/<kernel>.cu for each kernel and DIR/manifest.txt; stale .cu files in
 * DIR that this output does not contain are removed. Nothing is written on error. */
int cg_gen_write(const cg_gen_output *o, const char *dir, cg_err *e);
void cg_gen_free(cg_gen_output *o);

#endif
