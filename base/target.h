/* target.h — what generated kernels may assume of the GPU that runs them, and
 * the regeneration command file headers show. Shared by the generator (which
 * hands the target to the templates) and the runtime (which fills it from the
 * device or the architecture table) without either including the other. */
#ifndef CG_TARGET_H
#define CG_TARGET_H
#include <stddef.h>

/* What generated kernels may assume of the GPU that runs them. JIT fills it
 * from the device (cuDeviceGetAttribute), `convgen build` from a
 * per-architecture table (the minimum over the chosen archs, runtime/cuda/aot.c).
 * Templates see it as net.target and l.target (one table):
 * { cc=, max_shared=, regs_per_block=, regs_per_sm=, sms=, max_threads=, sm90a= (a boolean),
 *   batch= (only where > 0) }. */
typedef struct {
    int cc;               /* compute capability compiled for: 10*major+minor */
    int max_shared_optin; /* bytes of shared memory one block may use, opt-in included */
    int regs_per_block;   /* 32-bit registers one block may use */
    int regs_per_sm;
    int sms;              /* multiprocessors; 0 when unknown (a fat binary serves many GPUs) */
    int max_threads;      /* threads per block */
    int sm90a;            /* 1: the kernels are built for sm_90 alone, as sm_90a (wgmma: conv2d_igemm_wg) */
    int batch;            /* the images a launch is generated for, as a bucket (cg_batch_bucket:
                             1, 8, 64, 256, 1024); 0: the large-batch default (templates tile for 10,000) */
} cg_target;

/* The conservative default a NULL target means: cc 75, 48 KiB of shared
 * memory, 64 Ki registers per block and per SM, 1024 threads, SMs unknown. */
void cg_target_default(cg_target *t);
/* The most any supported architecture allows (the newest cc, 227 KiB of shared
 * memory): a configuration this refuses is refused everywhere, so it can be
 * reported as bad input before any device is asked. */
void cg_target_widest(cg_target *t);

/* The command that regenerates a spec's files, as file headers show it. */
void cg_regen_command(const char *spec_path, char *out, size_t n);

#endif
