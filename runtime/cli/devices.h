/* devices.h — `run --devices 0,1|all` and `check --devices`: the list of GPUs
 * read from the command line and checked against the driver, and what each
 * GPU did with its shard, for --profile and --json. The run itself is
 * runtime/cli/shards.c: one network per GPU, each a contiguous shard. */
#ifndef CG_DEVICES_H
#define CG_DEVICES_H
#include "convgen.h"
#include "gpu.h"
#include "shards.h"

#include <stdio.h>

typedef struct {
    int k;                  /* GPUs listed */
    int id[CG_SHARDS_MAX];  /* their indices, in the order given */
    int all;                /* "all": every GPU the driver sees (filled by cg_devices_probe) */
} cg_devices;

/* "0,1" (indices 0..1023, each once, at most CG_SHARDS_MAX) or "all" into d:
 * 0, or CG_EXIT_USAGE with one line quoting the list. */
int cg_devices_parse(const char *text, cg_devices *d, cg_err *e);
/* Every listed GPU opened once (cg_cuda_probe), "all" first resolved to
 * 0..count-1: 0, or CG_EXIT_DEVICE naming the GPU that does not answer. */
int cg_devices_probe(cg_devices *d, cg_err *e);
/* "GPU 0 (NVIDIA H100 80GB HBM3): " + msg: a failed network's message naming
 * its device. */
void cg_devices_fail(const cg_devices *d, cg_net *const *nets, int failed, cg_err *e);

/* --profile: each GPU's shard, wall time, images/s, kernels' share and
 * overlap, then the whole run's images/s over its wall time (host clock). */
void cg_devices_print(FILE *f, const cg_devices *d, cg_net *const *nets, const cg_shard *sh, long long n,
                      double wall_ms);
/* --json: "devices" (one object per GPU, with its "streamed" figures) and
 * "sharded" (the whole run), each line ending in ",\n". */
void cg_devices_json(FILE *f, const cg_devices *d, cg_net *const *nets, const cg_shard *sh, long long n,
                     double wall_ms);

/* A JSON string, quoted and escaped (shared with run's --json writer). */
void cg_json_str(FILE *f, const char *s);
/* The "streamed" object's fields of one GPU's last run (no braces). */
void cg_json_streamed(FILE *f, const cg_gpu_times *t);

#endif
