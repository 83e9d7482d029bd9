/* tune_verify.h — `convgen tune`'s check of its entries in the network
 * (docs/tuning.md, "Verified in the network"). The tuner times each layer's
 * candidates alone in the kernel harness, where a split pair (a main kernel and
 * its reduction, a cluster split) cannot run: at small buckets the network's own
 * kernel for a layer is often such a pair, and an entry the harness found faster
 * made the network slower (NVIDIA H200, 2026-11-29: zoo-k7pad at 8 images 244.3
 * us with the record, 72.7 us without; zoo-mlp at 256 images 248.4 us against
 * 195.4). So before the record is written, the network with this run's entries
 * for its bucket and the network without them are opened (the public API, the
 * CUDA backend, profile on: every layer timed) and run alternately on seeded
 * random images; an entry stays only where the layers it decides take less
 * time, by CG_TUNE_VERIFY_MARGIN, with it than without. Through the public API,
 * so tests run it on the stand-in driver (tests/fake_cuda.c). */
#ifndef CG_TUNE_VERIFY_H
#define CG_TUNE_VERIFY_H
#include "spec.h"
#include "tune.h"

/* An entry is kept only where its layers' time with it is below (1 - margin)
 * times their time without it. Twice CG_TUNE_MARGIN (the noise of one kernel's
 * timing): each side is a sum of medians taken in a network of its own, so
 * their difference carries the noise of both, and an entry kept on a gain
 * within that may be the slower one at the next run. */
#define CG_TUNE_VERIFY_MARGIN 0.02

/* One entry's verdict. */
typedef struct {
    int entry;                            /* its index in the record */
    int keep;                             /* 1: kept; 0: dropped */
    int layers_keep;                      /* kept by its layers' times (keep: and then by the
                                             network's as run runs it) */
    int alone_checked;                    /* the network with it alone timed as run runs it: */
    double alone_ms, alone_without_ms;    /* with it alone, and without any of this run's */
    int applied;                          /* the layers of its shape it decides (0: none, it was
                                             skipped or the spec chooses for them) */
    unsigned char counted[CG_MAX_LAYERS]; /* the layers whose times were summed (the rule in
                                             docs/tuning.md, "Verified in the network") */
    double with_ms, without_ms;           /* those layers' medians, summed, each network */
} cg_tune_verdict;

typedef struct {
    int bucket;                   /* the bucket checked (0: the large batch) */
    long long images;             /* the images of each run */
    int rounds;                   /* runs of each network timed (after the warm-up) */
    double with_ms, without_ms;   /* the whole network's median, each way (profiled) */
    int run_checked;              /* some entry was kept by its layers' times, and the
                                     network with those timed as run runs it: */
    int run_rounds;
    double run_with_ms, run_without_ms; /* its median with them and without any (NaN: not timed) */
    int run_slower;               /* not faster with them: each timed alone (alone_*), those
                                     faster alone kept, and where two or more are: */
    int again_checked;            /* those timed together again: */
    double again_with_ms, again_without_ms; /* not faster with them: only the best alone kept */
    int n;                        /* verdicts: one per entry of this run */
    cg_tune_verdict v[CG_MAX_LAYERS];
} cg_tune_verify_result;

/* The check itself: s is the spec as loaded (no record applied); rec the record
 * about to be written, whose first nfresh entries are this run's (all for the
 * bucket of `batch`; cg_tune_merge appends the older record's after them). The
 * network with rec applied and the network with rec less those nfresh entries
 * applied (as `run` applies a record on device name/cc; whole-network kernel
 * off: the per-layer kernels are what the entries choose) are opened on CUDA
 * device `device` with profile on, for `batch` images (at the large batch at
 * most CG_TUNE_VERIFY_LARGE_IMAGES), and run alternately on the same seeded random
 * images: 3 warm-up rounds, then 15 timed ones (fewer where they would pass
 * CG_TUNE_VERIFY_SECONDS, at least 5). Each layer's time is the median of its
 * per-layer GPU times, and each entry is judged on its layers'. Where some are
 * kept, the network with those and the network without any are then opened
 * without profile, as run opens them (the profile's events between kernels
 * leave out programmatic dependent launch, and on an H200 zoo-mlp's record at
 * 256 images was about 30 % faster profiled and 5 % slower as run ran it) and timed
 * the same way, the whole network alone: where it is not faster with them, each
 * of them alone, and those faster alone together; so what is kept was timed
 * faster as run runs it (check_as_run in tune_verify.c). The verdicts go into r
 * (rec is not changed). CG_STATUS_OK, or
 * another cg_status with e set (a device error, out of memory). */
#define CG_TUNE_VERIFY_LARGE_IMAGES 10000
#define CG_TUNE_VERIFY_SECONDS 30.0
int cg_tune_verify(const cg_spec *s, const cg_tune_record *rec, int nfresh, const char *device_name, int cc,
                   long long batch, int device, int no_cache, cg_tune_verify_result *r, cg_err *e);

/* What `convgen tune` does after its layers are tuned and the older record
 * merged (rec: this run's nfresh entries first; replaced[i], NULL for none: entry
 * i replaced an older entry of its shape and bucket): unless no_verify,
 * cg_tune_verify, one line per entry and one for the network printed, and the
 * entries dropped removed from rec (an older entry replaced is not restored:
 * docs/tuning.md says why). A failure there is printed on stderr and rec keeps
 * its entries as measured. Then the whole-network step (cg_tune_whole_step,
 * small buckets) on the record as it stands, and the record written to out
 * (cg_tune_write). 0, or a CG_EXIT_* with e set when the record could not be
 * written. */
typedef struct {
    const char *device_name;
    int cc, device, no_cache, no_verify;
    long long batch;
} cg_tune_finish_opts;
int cg_tune_finish(const cg_spec *s, cg_tune_record *rec, int nfresh, const unsigned char *replaced,
                   const cg_tune_finish_opts *o, const char *out, cg_err *e);

#endif
