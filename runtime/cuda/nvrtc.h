/* nvrtc.h — CUDA source to cubin (or PTX) at run time through NVRTC, opened
 * with dlopen like the driver, plus the resource usage ptxas reports.
 *
 * This header does not include CUDA's own <nvrtc.h> (which shares its name);
 * the few NVRTC types it needs are declared in nvrtc.c. */
#ifndef CG_NVRTC_H
#define CG_NVRTC_H
#include "util.h"

typedef struct cg_nvrtc cg_nvrtc;

#define CG_NVRTC_MAX_ARCHS 64
#define CG_NVRTC_MAX_FUNCS 32
#define CG_NVRTC_OPTS_MAX 256
#define CG_NVRTC_MAX_OPTS 16 /* options in one compile */

/* What ptxas said about one entry function (-1: not reported). */
typedef struct {
    char name[128];
    int registers;
    int barriers;
    long stack;        /* bytes of stack frame */
    long spill_stores; /* bytes */
    long spill_loads;  /* bytes */
    long smem;         /* bytes of static shared memory */
} cg_nvrtc_func_stats;

typedef struct {
    int known;          /* 1 when ptxas reported (cubin builds); 0 for PTX */
    int nfuncs;         /* entry functions listed below (at most CG_NVRTC_MAX_FUNCS) */
    cg_nvrtc_func_stats f[CG_NVRTC_MAX_FUNCS];
    int registers;      /* the most any entry function uses */
    long stack;         /* largest stack frame of any function */
    long spill_stores;  /* sum over all functions, callees included */
    long spill_loads;
    long smem;          /* largest static shared memory of any entry */
    long cmem;          /* user __constant__ bytes (cmem[N], N > 0) if ptxas printed it, else 0 */
    char options[CG_NVRTC_OPTS_MAX]; /* the options used, space-joined */
} cg_nvrtc_stats;

/* Tries libnvrtc.so.13, libnvrtc.so, then the same names under $CUDA_HOME/lib64
 * and /usr/local/cuda/lib64. Fails with "no NVRTC (...)" naming what was tried. */
int cg_nvrtc_open(cg_nvrtc **out, cg_err *e);
void cg_nvrtc_close(cg_nvrtc *nv);

/* NVRTC's version as CUDA writes it: 13000 for 13.0. */
int cg_nvrtc_version(const cg_nvrtc *nv);
/* The archs NVRTC can compile for (ascending, e.g. 75, 80, ..., 121). */
const int *cg_nvrtc_archs(const cg_nvrtc *nv, int *n);

/* For a device of compute capability cc (10*major+minor): its own arch as a
 * cubin when NVRTC supports it, else PTX (*as_ptx = 1) of the newest supported
 * arch below cc, for the driver to finish (a device newer than this NVRTC).
 * Returns -1 when cc is older than every supported arch. */
int cg_nvrtc_pick_arch(const cg_nvrtc *nv, int cc, int *arch, int *as_ptx);

/* Can a driver of driver_version (cuDriverGetVersion) load what this NVRTC
 * emits? Cubins need the same major version or newer; PTX needs the driver to
 * be at least as new as NVRTC. Fails with a sentence saying what to install. */
int cg_nvrtc_check_driver(const cg_nvrtc *nv, int driver_version, int as_ptx, cg_err *e);

/* What follows "sm_90" in the architecture a cubin is built for: "a" for sm_90
 * (its arch-specific features: wgmma, which conv2d_igemm_wg needs; such a cubin
 * loads on sm_90 alone, as any sm_90 cubin does), "" otherwise and for PTX. */
const char *cg_nvrtc_arch_suffix(int arch, int as_ptx);

/* The options that decide device code besides the architecture (language
 * standard, floating-point contraction and rounding, ptxas level): the one
 * list the JIT and `convgen build` (both NVRTC) receive, spelled so that nvcc
 * would accept it too (make ptx/sass). */
const char *const *cg_device_options(int *n);

/* The option string cg_nvrtc_compile uses for arch/ptx, space-joined, e.g.
 * "--gpu-architecture=sm_90 -std=c++17 --fmad=true ... --ptxas-options=-v". The cache key
 * needs it before compiling. (With NVRTC 13 or newer the compile also passes
 * --no-cache, which leaves the image unchanged: NVRTC's own cache would skip
 * ptxas and so its register and spill report.) Returns buf. */
const char *cg_nvrtc_options(int arch, int as_ptx, char *buf, size_t n);

/* Compile src (file_name is used in diagnostics) to a cubin for sm_<arch>, or
 * to PTX for compute_<arch> when as_ptx. out receives the image (PTX is
 * NUL-terminated; len excludes the NUL). log (may be NULL) receives NVRTC's
 * whole log, also on failure, when e holds one line naming the file, the
 * options and the first error. st (may be NULL) receives ptxas's numbers. */
int cg_nvrtc_compile(cg_nvrtc *nv, const char *src, const char *file_name, int arch, int as_ptx,
                     cg_buf *out, cg_buf *log, cg_nvrtc_stats *st, cg_err *e);

/* The first line of a compiler's log (NVRTC's, nvcc's, cuobjdump's) that
 * reports an error, else its first non-empty line, else "(empty log)": the
 * one line an error message quotes. */
void cg_log_first_error(const char *log, char *out, size_t n);

/* Fill st from a ptxas -v log (the part of cg_nvrtc_compile that needs no
 * compiler; exposed for tests). Keeps st->options. */
void cg_nvrtc_parse_log(const char *log, cg_nvrtc_stats *st);

#endif
