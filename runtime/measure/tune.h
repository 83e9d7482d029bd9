/* tune.h — `convgen tune`: every layer's candidates measured, the fastest
 * correct one chosen and kept in a tuning record that run, check and build
 * apply.
 *
 * The parts that need no GPU are here and tested alone: a layer's shape
 * signature, the search order (the templates' cost model, then one-parameter
 * steps around the best), the choice among measured candidates (a candidate
 * that failed to compile, spilled or disagreed with the CPU reference scores
 * +infinity; times within CG_TUNE_MARGIN are a tie, won by the candidate
 * earlier in the model's order), and the record (YAML written, read back with FILE:LINE:COL
 * errors, applied to a spec under the precedence spec > record > defaults).
 * The measuring itself (NVRTC, the GPU) is runtime/cli/cmd_tune.c, behind
 * cg_tune_ops, so that the search can be tested on a fake clock. */
#ifndef CG_TUNE_H
#define CG_TUNE_H
#include "gen.h"
#include "jit.h"
#include "spec.h"

#define CG_TUNE_SIG 256
#define CG_TUNE_RUNNERS 4 /* runners-up kept per layer in the record */
#define CG_TUNE_MARGIN 0.01 /* times closer than this (relative) are a tie: the noise of one timing */
#define CG_TUNE_ENTRIES_MAX (CG_MAX_LAYERS * 6) /* a record's layer entries: each shape at the large
                                                   batch and at the five small buckets */

/* ---- the layer's identity in a record ---- */

/* "conv C=1 H=28 W=28 M=8 K=5 pool=2 act=tanh bias=1 out=0": everything that
 * decides which kernel is fastest for a layer (its name does not). */
void cg_tune_signature(const cg_layer *l, char *out, size_t n);
/* The templates that serve layer l, NULL-terminated: every embedded template of
 * its op's family (base/op.h), by name (none for softmax). */
const char *const *cg_tune_templates(const cg_layer *l);

/* ---- one candidate's outcome ---- */

typedef enum {
    CG_TUNE_PENDING = 0, /* not measured (pruned, or the budget ran out) */
    CG_TUNE_OK,          /* right and timed */
    CG_TUNE_COMPILE_FAILED,
    CG_TUNE_SPILLED,     /* ptxas spilled registers, or the kernel uses local memory */
    CG_TUNE_WRONG,       /* disagreed with the CPU reference */
    CG_TUNE_RUN_FAILED,  /* a CUDA error while loading, checking or timing it */
} cg_tune_status;

const char *cg_tune_status_name(cg_tune_status s);

typedef struct {
    char tpl[64];
    char params[CG_PARAMS_TEXT];
    cg_tune_status status;
    char reason[256];       /* why it was dropped, "" when OK or pending */
    double compile_ms;
    double ms, q1, q3;      /* median and quartiles of the first timing */
    double retime_ms;       /* median of the re-timing passes' medians; 0 if not re-timed */
    double tflops;
    double cost;            /* the template's cost model (cg_candidate.cost), -1: none */
} cg_tune_cand;

/* What a candidate scores: its re-timed median if it has one, else its
 * median; +infinity unless it is OK. Lower is better. */
double cg_tune_score(const cg_tune_cand *c);
/* The indices of the (at most) k best OK candidates into idx, best first;
 * returns how many. Re-timed candidates rank before all others (the choice
 * is made among the re-timed top few), then lower score, then lower index.
 * The first is the winner: of the candidates of the first one's kind
 * (re-timed or not) that score within CG_TUNE_MARGIN of it, the one with the
 * lowest index, i.e. the earliest in the model's order (cg_tune_order), so
 * that noise between near-equal candidates does not decide. */
int cg_tune_best(const cg_tune_cand *c, int n, int k, int *idx);

/* ---- one compile batch (NVRTC, no GPU) ---- */

typedef struct {
    int m;                 /* candidates in the batch */
    cg_gen_output *out;    /* their kernels (those that generated) */
    cg_kernel_launch *kl;  /* m launches */
    int *slot;             /* m: the kernel's index in out, -1 when it did not generate */
    cg_jit_result jr;
} cg_tune_batch;

/* Generate candidates idx[0..m) of layer li (c: the layer's table) and
 * compile them together through cg_jit_build (jo: arch, cache). A candidate
 * that does not generate or compile, or that ptxas says spills, gets its
 * status and reason here (slot -1); the others keep their status (PENDING,
 * or OK for a re-timing) with their image in b->jr.k[b->slot[j]].image and
 * compile_ms set. -1 only when out of memory. */
int cg_tune_compile(const cg_spec *s, const cg_target *tg, int li, cg_tune_cand *c, const int *idx, int m, cg_nvrtc *nv,
                    const cg_jit_opts *jo, cg_tune_batch *b, cg_err *e);
void cg_tune_batch_free(cg_tune_batch *b);

/* ---- the search order (documented in docs/tuning.md) ---- */

/* Put a layer's candidates c[0..n) in the order the search measures them,
 * by the templates' cost model (cost: estimated clocks, lowest first): each
 * template's cheapest first (templates in the order they appear in c), then
 * all the others by cost; equal costs keep the templates' order, then the
 * list's. Where some candidate has no estimate (cost < 0), each template's
 * list is ordered alone (no estimate: the list's order) and the lists are
 * taken in turn: the first of each, then the second of each, ...
 * Deterministic: the same list gives the same order. -1 only when out of
 * memory. */
int cg_tune_order(cg_tune_cand *c, int n);
/* Whether two "k=v k=v" texts of one template differ in exactly one parameter. */
int cg_tune_one_step(const char *a, const char *b);

/* ---- the search of one layer within its share of the budget ---- */

/* A layer's candidates while it is tuned. */
typedef struct {
    cg_tune_cand *c;
    int n;
    int def;      /* the default configuration's index */
    int measured; /* candidates whose outcome is known (timed, or dropped with a reason) */
    int planned;  /* what the search means to measure, for the progress line */
    int retimed;  /* candidates re-timed before the choice */
    int cut;      /* 1 when the budget ended the search before its plan was done */
    int fresh;    /* set by the search before ops->compile: 1 when a candidate of the batch
                     is new to this search, so the batch is compiled, not read from the
                     cache (cg_jit_opts.refresh); 0 for re-timing's recompiles */
} cg_tune_layer;

/* What measuring has cost so far. The search plans with these, learns them as
 * it goes, and the caller carries them from one layer to the next; the run's
 * first search measures each once before it plans (calibration). */
typedef struct {
    double round_s;    /* one compile round (one kernel per compile thread), mean */
    double hit_s;      /* compiling one candidate compiled before (a cache hit), mean */
    double run_s;      /* checking and first timing one candidate, the last layer's mean */
    double pass_ratio; /* one re-timing pass's cost over a first timing's, mean */
    int rounds, hits, runs, passes;
} cg_tune_costs;

typedef struct {
    int sample;    /* candidates taken down the model's order at a time (--sample) */
    int top;       /* candidates re-timed before choosing (--top) */
    int passes;    /* interleaved re-timing passes */
    int threads;   /* kernels compiled at once */
    int batch_max; /* candidates compiled together at most */
    double pass_factor; /* a re-timing pass's cost over a first timing's before one is seen */
} cg_tune_plan;

/* The measuring, behind a clock: cmd_tune.c's NVRTC and GPU, or a test's fakes. */
typedef struct {
    void *ctx;
    double (*now)(void *ctx); /* seconds, monotonic */
    /* Compile candidates idx[0..m) together. One that does not generate, compile
     * or fit gets its status and reason here. -1: an error that ends the run (e). */
    int (*compile)(void *ctx, cg_tune_layer *lr, const int *idx, int m, cg_err *e);
    /* Check and time candidate i, the j-th of the batch compiled last, into its
     * status, ms, q1, q3; or (retime) one re-timing pass: time it again, with no
     * check (it passed one), its median into retime_ms (a failure sets its
     * status). 1 when it ran, 0 when there was nothing to run (dropped when
     * compiled), -1 an error that ends the run. */
    int (*run)(void *ctx, cg_tune_layer *lr, int j, int i, int retime, cg_err *e);
    void (*release)(void *ctx);                           /* the batch compiled last is done with */
    void (*progress)(void *ctx, const cg_tune_layer *lr); /* NULL: none */
} cg_tune_ops;

/* The search of docs/tuning.md for one layer, ending by deadline (seconds
 * on ops->now's clock); lr->c in the model's order (cg_tune_order). When no
 * cost is known yet (the run's first layer), one compile round of the default
 * and the candidates leading the order comes first, then the default is timed,
 * compiled again (a cache hit) and re-timed once: every cost is learnt before
 * anything is planned.
 * Then: the default and the next p->sample candidates of the order, one-
 * parameter steps around the best while they find a better one (beyond
 * CG_TUNE_MARGIN), the next p->sample, ..., until all are measured or the
 * budget ends it; then the best p->top and the default re-timed in
 * p->passes interleaved passes (A B C, A B C, ...), each candidate's time the
 * median of its passes. No batch is compiled, no candidate timed and no pass
 * started that the costs so far say would end past the deadline (less what
 * the re-timing needs); the exception is the calibration, which nothing can
 * plan. Given the same measurements, the same candidates are measured and
 * the same one chosen. Leaves every outcome in lr->c; 0, or -1 with e set when
 * a callback failed. */
int cg_tune_search(cg_tune_layer *lr, const cg_tune_plan *p, const cg_tune_ops *ops, cg_tune_costs *cost,
                   double deadline, cg_err *e);

/* ---- the record ---- */

typedef struct {
    char tpl[64];
    char params[CG_PARAMS_TEXT];
    double ms;
} cg_tune_choice;

typedef struct {
    char sig[CG_TUNE_SIG];
    int bucket;               /* the batch bucket it was tuned for (cg_batch_bucket of tune's --batch:
                                 1, 8, 64, 256 or 1024); 0: the large batch. Written `bucket: N` or
                                 `bucket: large`; an entry without one is the record's `batch:`'s */
    char layer[CG_NAME_MAX];  /* the layer it was tuned on (for a reader) */
    char tpl_hash[17];        /* the winner's template hash when tuned */
    char kernel_hash[17];     /* its kernel's code (cg_tune_kernel_hash) as tuned; "" when unknown */
    long long measured, candidates;
    cg_tune_choice winner;
    double default_ms;        /* the untuned configuration's time, 0 if unknown */
    int nrunners;
    cg_tune_choice runner[CG_TUNE_RUNNERS];
} cg_tune_entry;

typedef struct {
    char version[32];   /* convgen's */
    char device[256];
    int cc, sms, driver;
    char network[CG_NAME_MAX];
    long long batch;
    int n;
    cg_tune_entry e[CG_TUNE_ENTRIES_MAX]; /* one per layer shape and bucket */
    /* `whole`: per batch bucket, the whole-network kernel against the per-layer
     * kernels (base/spec.h; tune_whole.h measures it), one entry a bucket */
    int nwhole;
    cg_whole_tuned whole[CG_WHOLE_TUNED_MAX];
} cg_tune_record;

/* Write r as YAML to path through cg_write_file_atomic (a fresh temp file
 * renamed into place: nothing half-written, no link followed). */
int cg_tune_write(const cg_tune_record *r, const char *path, cg_err *e);
/* The same text into buf (what cg_tune_write writes). */
int cg_tune_format(const cg_tune_record *r, cg_buf *buf, cg_err *e);
/* Read a record; errors are "FILE:LINE:COL: message". */
int cg_tune_read(const char *path, cg_tune_record *r, cg_err *e);
int cg_tune_parse(const char *path, const char *text, size_t len, cg_tune_record *r, cg_err *e);

/* The images a layer's candidates are timed at: `batch`, or as many as keep every
 * index below 2^31 where `batch` would not: of its input, its output and, for a conv,
 * its output before any pool (which a kernel with the pool left to the next one
 * writes). The tuner scales the times of fewer images to `batch`. */
long long cg_tune_layer_images(const cg_layer *l, long long batch);

/* The hash a record keeps of a kernel's code: its source after the header's
 * comment lines (which name the spec's path and the template's hash), so an
 * entry stays valid while its template generates the same kernel for it. */
void cg_tune_kernel_hash(const char *source, char out[17]);

/* The whole-network entry of r for bucket (cg_batch_bucket), NULL if none. */
const cg_whole_tuned *cg_tune_whole_find(const cg_tune_record *r, int bucket);
/* Put w into r: it replaces the entry of its bucket, else is added (the
 * buckets are five, the table holds eight). */
void cg_tune_whole_put(cg_tune_record *r, const cg_whole_tuned *w);

/* The layer entry of r for signature sig at bucket (0: the large batch), NULL if none. */
const cg_tune_entry *cg_tune_entry_find(const cg_tune_record *r, const char *sig, int bucket);
/* A record written again by a tune run for bucket (0: the large batch) keeps what
 * that run did not measure: into rec (the run's entries) go old's layer entries for
 * other buckets, and with layers_only (tune --layers) old's entries for this bucket
 * whose shapes rec lacks; and old's whole-network entries for other buckets (this
 * bucket's is measured again). old must be of the same device and convgen: the
 * caller checks (another's would be ignored anyway). */
void cg_tune_merge(cg_tune_record *rec, const cg_tune_record *old, int bucket, int layers_only);

/* The record a spec uses by default: the spec's path with ".yaml" (or ".yml")
 * replaced by ".tuning.yaml" (otherwise appended). */
void cg_tune_default_path(const char *spec_path, char *out, size_t n);

/* The device a record is checked against; name NULL: no device check (build,
 * whose fat binary serves many GPUs, checks cc against its archs instead).
 * Each choice is checked against target (what the code is generated for: build
 * passes its architectures' limits), else cc's architecture, else the
 * conservative default. */
typedef struct {
    const char *name;
    int cc;
    const cg_target *target;
} cg_tune_device;

/* Apply record r to spec s, layer by layer. Returns 0 and sets from_record[i]
 * for each layer that took the record's large-batch choice (its strategy and
 * params set from it); 1 when the whole record is
 * stale (another device or convgen version: notice says so in one line, the
 * spec is unchanged). A layer keeps the spec's choice when the spec writes
 * params for it, or a strategy naming another template than the record's; an
 * entry whose template changed since (hash) or whose parameters the template
 * now refuses is skipped, with a line added to notice. An entry for a small
 * bucket is checked the same way on the kernel generated for that bucket and
 * kept in s->bucket_tuned (cg_spec_bucket_tuned), which only the kernels
 * generated for that bucket take; the layer's strategy and params stay the
 * spec's (or the large-batch entry's). The record's whole-network
 * decisions are copied into s->whole_tuned as they are: whether one still holds
 * (the build id of the kernels) is known only once the kernels are generated, and
 * the CUDA backend checks it. -1 on an error (e). */
int cg_tune_apply(cg_spec *s, const cg_tune_record *r, const cg_tune_device *dev, int from_record[CG_MAX_LAYERS],
                  char *notice, size_t notice_n, cg_err *e);

/* What the verbs do: find the record (explicit: --tuning FILE, which must
 * exist; else the default path, if present), read it (a malformed one is an
 * error), apply it, print notices on stderr. no_tuning: do nothing.
 * Returns 0 (CG_STATUS_OK), or a cg_status with e set: CG_STATUS_INPUT for a
 * missing or malformed record, CG_STATUS_IO for memory. */
int cg_tune_use(cg_spec *s, const char *explicit_path, int no_tuning, const cg_tune_device *dev,
                int from_record[CG_MAX_LAYERS], cg_err *e);
/* The same with the notices appended to *notices (one line each, "tuning record
 * PATH: ...") instead of printed: what the library (runtime/api) uses. */
int cg_tune_use_to(cg_spec *s, const char *explicit_path, int no_tuning, const cg_tune_device *dev,
                   int from_record[CG_MAX_LAYERS], cg_buf *notices, cg_err *e);

#endif
