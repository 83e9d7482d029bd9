/* aot.h — ahead-of-time fat binaries: every kernel of a generated network,
 * compiled by NVRTC (as the JIT compiles) into one file holding a cubin per
 * requested arch plus PTX of the newest one (for GPUs newer than any of them). */
#ifndef CG_AOT_H
#define CG_AOT_H
#include "gen.h"

#define CG_AOT_MAX_ARCHS 32
#define CG_AOT_MIN_ARCH 75

/* One architecture convgen knows: the limits a kernel built for it must
 * respect, and whether `convgen build` includes it by default. The numbers are
 * those of NVIDIA's compute-capability tables (shared memory per block with
 * opt-in = shared memory per SM less the 1 KiB the driver reserves per block
 * from sm_80 on). This table is the one list of target architectures: the
 * default --arch, the Makefile's fatbin target and test-gpu take it from here. */
typedef struct {
    int arch;             /* 10*major+minor */
    int max_shared_optin; /* bytes per block */
    int regs_per_block, regs_per_sm, max_threads;
    int by_default;       /* part of the default --arch list */
} cg_arch_info;
extern const cg_arch_info cg_aot_archs[]; /* ascending; ends with arch 0 */

/* The default --arch list as text into out, "75,80,86,89,90,100,120"; returns out. */
const char *cg_aot_default_archs(char *out, size_t n);

/* What code in a fat binary for archs[0..n) may assume: cc of the oldest
 * arch, the smallest limits over all of them (an arch missing from the table
 * counts as 48 KiB of shared memory), SMs unknown (0). */
void cg_aot_target(const int *archs, int n, cg_target *t);

/* "75,80,86" -> {75, 80, 86}, sorted ascending. Rejects an empty list, empty
 * items, anything but digits and commas, archs below 75 or above 999, more
 * than max items, and duplicates, naming the offending item. */
int cg_aot_parse_archs(const char *s, int *archs, int max, int *n, cg_err *e);

/* Build out_path from o: one translation unit with every kernel source (each
 * under a #line naming its file, so compiler messages point into the kernel
 * files) and `extern "C" __device__ const char cg_build_id[17] = "<o->hash>"`,
 * compiled by NVRTC -- the JIT's compiler with the JIT's options
 * (cg_nvrtc_options), so a kernel from the fat binary is the kernel the JIT
 * runs -- to a cubin per arch and PTX of the newest, then packed by CUDA's
 * fatbinary tool ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin; run through
 * fork/execv, no shell). NVRTC's logs (ptxas -v, under a "-- sm_XX (NVRTC) --"
 * line each) go to log (may be NULL), followed by a line saying how the result
 * was checked: the file must hold every requested cubin and the PTX (read by
 * fatbin.c; also by cuobjdump --list-elf/--list-ptx when cuobjdump is
 * installed, which must agree). out_path is written atomically, only when all
 * of that succeeded; the temp dir is removed. */
int cg_aot_build(const cg_gen_output *o, const int *archs, int narch, const char *out_path,
                 cg_buf *log, cg_err *e);
/* The same fat binary appended to out (initialised by the caller) instead of
 * written: what a bundle's fatbin section holds. out_path only names it. */
int cg_aot_build_buf(const cg_gen_output *o, const int *archs, int narch, const char *out_path,
                     cg_buf *out, cg_buf *log, cg_err *e);
/* The working directories of builds, TMPDIR/convgen-aot-<pid>-XXXXXX, that
 * builds killed before cleaning up left: each directory of this user whose
 * build process is gone loses the files a build writes there (sm_N.cubin,
 * compute_N.ptx, out.fatbin and their temp files) and then itself, if that
 * left it empty; nothing else is touched. tmpdir NULL: $TMPDIR, else /tmp.
 * Returns how many directories were removed. Called by every build. */
int cg_aot_reclaim(const char *tmpdir);

#endif
