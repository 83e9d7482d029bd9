/* convgen_mpi.c — `mpirun -np R build/convgen-mpi run SPEC [options]`: one
 * classification job over several processes, on one host or many.
 *
 * Every rank reads the spec, the weights and the images, takes its contiguous
 * share of the images (cg_share: rank order, sizes within one), runs it on the
 * GPU of its local rank (streamed, runtime/cuda/gpu.c) or on the CPU backend in
 * bounded batches, and rank 0 gathers the predictions with MPI_Gatherv and
 * prints what `convgen run` prints for the whole set: the same lines, the same
 * accuracy, each Op Time the slowest rank's. A failure on any rank is agreed
 * on by all (MPI_Allreduce of the exit codes) before anything is printed as a
 * result, so a job never reports an accuracy it did not compute; the failing
 * rank says why on stderr, naming itself and its host. Before any image runs,
 * the ranks compare digests of what they loaded (the spec file's text, the
 * weights, the image count, the images and labels): a rank given another
 * spec, other weights or other data fails the whole job with one line, rather
 * than having its predictions merged into the others'.
 *
 * Built only where mpicc is found (Makefile); docs/user-guide.md, "Throughput at scale".
 * This file drives the backends directly; the library API will take over. */
#include <mpi.h>

#include "batched.h"
#include "cli.h"
#include "cpu.h"
#include "cuda_api.h"
#include "data.h"
#include "gpu.h"
#include "options.h"
#include "pipeline.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mpirun -np R convgen-mpi run SPEC [options]\n"
    "\n"
    "Run the network over the Fashion-MNIST test set split across the MPI ranks\n"
    "(each its contiguous share, on the GPU of its local rank or on the CPU), and\n"
    "print on rank 0, as `convgen run` does, one Op Time per convolution (the\n"
    "slowest rank's) and the accuracy over the whole set.\n"
    "\n"
    "  --images N          the first N test images (default all)\n"
    "  --backend B         auto (default: the local rank's GPU if it answers, else the\n"
    "                      CPU), cuda, cpu\n"
    "  --batch B           images per batch (GPU default: as many as fit; CPU: 1024)\n"
    "  --streams S         batches in flight on each GPU, 1 to 4 (default 2)\n"
    "  --device-base D     the rank of local rank L uses GPU D+L (default 0); more ranks on\n"
    "                      a host than GPUs share them round robin\n"
    "  --fatbin F          kernels from a fat binary instead of NVRTC (GPU)\n"
    "  --data DIR          where the IDX files are (default " CG_DATA_DIR_DEFAULT ")\n"
    "  --random-input S    made-up images from seed S instead of the data set\n"
    "  --repeat-dataset K  the images K times over\n"
    "  --tuning FILE       the tuning record to apply (GPU; default: SPEC's .tuning.yaml)\n"
    "  --no-tuning         ignore any tuning record\n"
    "  --predictions FILE  rank 0 writes every prediction, one per line, in input order\n"
    "  --profile           each rank's share, device, time and images/s, and the total\n"
    "  -h, --help          this text\n";

typedef struct {
    const char *spec, *backend, *fatbin, *data, *tuning, *predictions;
    long long images, batch, streams, device_base, random_seed, repeat_ds;
    int no_tuning, profile, help;
} mpi_opts;

/* What each rank tells rank 0 for --profile. */
typedef struct {
    char host[64], device[96];
    long long off, n;
    double wall_ms, kernel_ms, overlap;
} rank_report;

static int g_rank, g_ranks;

/* The worst exit code over all ranks: every rank learns whether any failed,
 * so all stop together instead of waiting for a message that never comes. */
static int agree(int rc)
{
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* This rank's failure, on stderr, naming the rank and its host. */
static void rank_error(const cg_err *e)
{
    char host[MPI_MAX_PROCESSOR_NAME] = "?";
    int len = 0;
    MPI_Get_processor_name(host, &len);
    fprintf(stderr, "convgen-mpi: rank %d of %d (%s): %s\n", g_rank, g_ranks, host, e->msg);
}

/* The rank's index among the ranks of its host: Open MPI says it in the
 * environment; elsewhere the ranks sharing memory are counted. */
static int local_rank(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (v && *v) return atoi(v);
    MPI_Comm node;
    int r = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &r);
        MPI_Comm_free(&node);
    }
    return r;
}

/* The command line; every rank parses it, rank 0 alone prints usage. */
static int parse(int argc, char **argv, mpi_opts *o, cg_err *e)
{
    memset(o, 0, sizeof *o);
    o->random_seed = -1, o->repeat_ds = 1;
    if (argc < 2 || strcmp(argv[1], "run")) {
        if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
            if (g_rank == 0) fputs(usage, stdout);
            o->help = 1;
            return 0;
        }
        return cg_fail(e, "expected the verb 'run' (usage: mpirun -np R convgen-mpi run SPEC [options])"),
               CG_EXIT_USAGE;
    }
    const char *images_t = NULL, *batch_t = NULL, *streams_t = NULL, *base_t = NULL, *random_t = NULL,
               *repeat_t = NULL, *no_tuning = NULL, *profile = NULL;
    const cg_opt opts[] = {{"--images", 1, &images_t},      {"--backend", 1, &o->backend},
                           {"--batch", 1, &batch_t},        {"--streams", 1, &streams_t},
                           {"--device-base", 1, &base_t},   {"--fatbin", 1, &o->fatbin},
                           {"--data", 1, &o->data},         {"--random-input", 1, &random_t},
                           {"--repeat-dataset", 1, &repeat_t}, {"--tuning", 1, &o->tuning},
                           {"--no-tuning", 0, &no_tuning},  {"--predictions", 1, &o->predictions},
                           {"--profile", 0, &profile}};
    /* cg_opts_parse prints --help on stdout: only rank 0 may */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            if (g_rank == 0) fputs(usage, stdout);
            o->help = 1;
            return 0;
        }
    int rc = cg_opts_parse(argc - 1, argv + 1, opts, sizeof opts / sizeof *opts, &o->spec, usage, e);
    if (!rc && !o->spec) rc = (cg_fail(e, "run needs a SPEC"), CG_EXIT_USAGE);
    if (!rc) rc = cg_opt_int("--images", images_t, 1, 0x7fffffffLL, &o->images, e);
    if (!rc) rc = cg_opt_int("--batch", batch_t, 1, 1LL << 31, &o->batch, e);
    if (!rc) rc = cg_opt_int("--streams", streams_t, 1, CG_PIPE_MAX_SETS, &o->streams, e);
    if (!rc) rc = cg_opt_int("--device-base", base_t, 0, 1023, &o->device_base, e);
    if (!rc) rc = cg_opt_int("--random-input", random_t, 0, 1LL << 62, &o->random_seed, e);
    if (!rc) rc = cg_opt_int("--repeat-dataset", repeat_t, 1, 100000, &o->repeat_ds, e);
    o->no_tuning = no_tuning != NULL, o->profile = profile != NULL;
    if (!o->backend) o->backend = "auto";
    if (!rc && strcmp(o->backend, "auto") && strcmp(o->backend, "cuda") && strcmp(o->backend, "cpu"))
        rc = (cg_fail(e, "--backend expects auto, cuda or cpu, got '%s'", o->backend), CG_EXIT_USAGE);
    if (!rc && !strcmp(o->backend, "cpu") && (o->fatbin || streams_t))
        rc = (cg_fail(e, "%s needs the cuda backend", o->fatbin ? "--fatbin" : "--streams"), CG_EXIT_USAGE);
    if (!rc && o->predictions && g_rank == 0 && cg_check_output_file(o->predictions, e)) rc = CG_EXIT_USAGE;
    return rc;
}

/* Everything a rank holds: the spec, weights, all images (each rank reads the
 * same file or makes the same random set), its share, its results. */
typedef struct {
    cg_spec *s;
    cg_weights w;
    cg_dataset d;
    long long off, n;      /* this rank's share */
    int *pred;             /* its predictions (rank 0: room for all) */
    double layer_ms[CG_MAX_LAYERS];
    rank_report rep;
    int use_gpu, device;
    uint64_t data_hash;    /* the images and labels as loaded, before --repeat-dataset */
} mpi_job;

/* The images: the data set (or the random one), repeated, this rank's share. */
static int load_images(mpi_job *j, const mpi_opts *o, cg_err *e)
{
    const cg_spec *s = j->s;
    size_t per = (size_t)s->C * (size_t)s->H * (size_t)s->W;
    if (o->random_seed >= 0) {
        if (cg_data_random(&j->d, o->images ? o->images : 10000, per, s->H, s->W,
                           (unsigned long long)o->random_seed, e))
            return CG_EXIT_IO;
    } else {
        if (cg_data_load(o->data, 0, s->resize, (int)o->images, &j->d, e)) return CG_EXIT_INPUT;
        if (o->images > j->d.n)
            return cg_fail(e, "--images %lld: the %s test set holds %d images", o->images, s->dataset, j->d.n),
                   CG_EXIT_USAGE;
        if (j->d.h != s->H || j->d.w != s->W)
            return cg_fail(e, "%s: images are %dx%d, the network's input is %dx%d", o->spec, j->d.h, j->d.w,
                           s->H, s->W), CG_EXIT_INPUT;
    }
    j->data_hash = cg_hash64(j->d.pixels, (size_t)j->d.n * per, CG_HASH_SEED);
    j->data_hash = cg_hash64(j->d.labels, (size_t)j->d.n, j->data_hash);
    if (o->repeat_ds > 1 && cg_data_repeat(&j->d, per, o->repeat_ds, e)) return CG_EXIT_USAGE;
    cg_share(j->d.n, g_ranks, g_rank, &j->off, &j->n);
    return 0;
}

/* What a rank loaded, in digests: ranks must agree on all of it. */
typedef struct {
    uint64_t spec, weights, data;
    long long images;
    char spec_path[96], source[96];
} job_digest;

/* FNV-1a over each tensor's name, shape and float32 values as loaded. */
static uint64_t weights_hash(const cg_weights *w)
{
    uint64_t h = CG_HASH_SEED;
    for (int i = 0; i < w->n; i++) {
        const cg_tensor *t = &w->t[i];
        h = cg_hash64(t->name, strlen(t->name) + 1, h);
        h = cg_hash64(&t->ndim, sizeof t->ndim, h);
        h = cg_hash64(t->shape, sizeof t->shape[0] * (size_t)t->ndim, h);
        h = cg_hash64(t->data, sizeof *t->data * (size_t)t->count, h);
    }
    return h;
}

/* Every rank's digest to rank 0, which compares each with its own; the first
 * rank that differs is named in one line on rank 0's stderr, and every rank
 * returns CG_EXIT_INPUT. */
static int same_job(const mpi_job *j, const mpi_opts *o, cg_err *e)
{
    job_digest mine;
    memset(&mine, 0, sizeof mine);
    int rc = 0;
    cg_buf text;
    if (cg_read_file_max(o->spec, (size_t)1 << 20, &text, e)) {
        rank_error(e), rc = CG_EXIT_INPUT;
    } else {
        mine.spec = cg_hash64(text.data, text.len, CG_HASH_SEED);
        cg_buf_free(&text);
    }
    mine.weights = weights_hash(&j->w);
    mine.data = j->data_hash;
    mine.images = j->d.n;
    snprintf(mine.spec_path, sizeof mine.spec_path, "%.95s", o->spec);
    if (o->random_seed >= 0) snprintf(mine.source, sizeof mine.source, "random seed %lld", o->random_seed);
    else snprintf(mine.source, sizeof mine.source, "%.95s", o->data ? o->data : CG_DATA_DIR_DEFAULT);
    job_digest *all = g_rank == 0 ? calloc((size_t)g_ranks, sizeof *all) : NULL;
    if (g_rank == 0 && !all) {
        fprintf(stderr, "convgen-mpi: rank 0: out of memory comparing %d ranks\n", g_ranks);
        rc = CG_EXIT_IO;
    }
    if ((rc = agree(rc))) return free(all), rc;
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        int first = -1, others = 0;
        for (int r = 1; r < g_ranks; r++) {
            const job_digest *d = &all[r];
            if (d->spec == mine.spec && d->weights == mine.weights && d->data == mine.data &&
                d->images == mine.images)
                continue;
            if (first < 0) first = r;
            else others++;
        }
        if (first >= 0) {
            const job_digest *d = &all[first];
            char what[400], more[64] = "";
            if (d->spec != mine.spec)
                snprintf(what, sizeof what, "its spec %s differs from rank 0's %s", d->spec_path, mine.spec_path);
            else if (d->weights != mine.weights)
                snprintf(what, sizeof what, "its weights (for spec %s) differ from rank 0's (for %s)", d->spec_path,
                         mine.spec_path);
            else if (d->images != mine.images)
                snprintf(what, sizeof what, "it has %lld images (%s), rank 0 has %lld (%s)", d->images, d->source,
                         mine.images, mine.source);
            else
                snprintf(what, sizeof what, "its %lld images (%s) differ from rank 0's (%s)", d->images, d->source,
                         mine.source);
            if (others) snprintf(more, sizeof more, " (and %d more rank%s)", others, others > 1 ? "s" : "");
            fprintf(stderr, "convgen-mpi: rank %d of %d%s: %s; every rank must load the same spec, weights and "
                    "images\n", first, g_ranks, more, what);
            rc = CG_EXIT_INPUT;
        }
    }
    free(all);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

/* Which backend this rank uses: a GPU when asked or when auto finds one
 * answering, the one of its local rank (GPU D + L; with more ranks on a host
 * than GPUs from D on, they share them round robin); with it, the tuning
 * record for that device. */
static int pick_device(mpi_job *j, const mpi_opts *o, cg_err *e)
{
    int base = (int)o->device_base;
    j->device = base + local_rank();
    if (!strcmp(o->backend, "cpu")) return 0;
    cg_cu *cu;
    cg_err why;
    int count = 0;
    if (cg_cu_open(&cu, base, &why) == 0) {
        if (CG_CU(&why, cu->cuDeviceGetCount(&count))) count = 0;
        cg_cu_close(cu);
        if (count > base) j->device = base + local_rank() % (count - base);
    }
    if (count <= base || cg_cu_open(&cu, j->device, &why)) {
        if (!strcmp(o->backend, "cuda") || o->fatbin)
            return cg_fail(e, "GPU %d: %s", j->device, why.msg), CG_EXIT_DEVICE;
        return 0; /* auto: this rank runs on the CPU */
    }
    char name[256];
    snprintf(name, sizeof name, "%s", cu->name);
    cg_tune_device dev = {name, cu->cc, NULL};
    cg_cu_close(cu);
    j->use_gpu = 1;
    int from_record[CG_MAX_LAYERS];
    return cg_exit_of(cg_tune_use(j->s, o->tuning, o->no_tuning,
                                  o->fatbin ? &(cg_tune_device){NULL, 0, NULL} : &dev, from_record, e));
}

/* This rank's share, on its GPU (streamed) or the CPU (bounded batches). */
static int run_share(mpi_job *j, const mpi_opts *o, cg_err *e)
{
    const unsigned char *px = j->d.pixels + (size_t)j->off * (size_t)j->s->C * (size_t)j->s->H * (size_t)j->s->W;
    int *pred = j->pred + (g_rank == 0 ? j->off : 0);
    rank_report *r = &j->rep;
    int len = 0;
    char host[MPI_MAX_PROCESSOR_NAME] = "?";
    MPI_Get_processor_name(host, &len);
    snprintf(r->host, sizeof r->host, "%.63s", host);
    r->off = j->off, r->n = j->n;
    double t0 = cg_now_ms();
    if (!j->use_gpu) {
        snprintf(r->device, sizeof r->device, "cpu");
        if (cg_cpu_run_batched(j->s, &j->w, px, j->n, o->batch ? o->batch : 1024, pred, NULL, j->layer_ms, e))
            return CG_EXIT_IO;
        r->wall_ms = cg_now_ms() - t0;
        for (int l = 0; l < j->s->nlayers; l++) r->kernel_ms += j->layer_ms[l];
        return 0;
    }
    cg_gpu *g = NULL;
    cg_gpu_opts go = {.fatbin = o->fatbin, .batch = o->batch, .device = j->device, .streams = (int)o->streams};
    cg_host_costs hc;
    cg_gpu_times t;
    memset(&t, 0, sizeof t);
    int rc = 0;
    if (cg_gpu_open(&g, j->s, &j->w, &go, &hc, e)) rc = CG_EXIT_DEVICE;
    if (!rc) snprintf(r->device, sizeof r->device, "GPU %d: %.80s", j->device, cg_gpu_device_name(g));
    /* the tuning record's whole-network decision not taken: said as its other notices are */
    if (!rc && cg_gpu_whole_notice(g)[0]) fprintf(stderr, "convgen: %s\n", cg_gpu_whole_notice(g));
    t0 = cg_now_ms();
    if (!rc && cg_gpu_run(g, px, j->n, pred, NULL, NULL, &t, &hc, e)) rc = CG_EXIT_DEVICE;
    r->wall_ms = cg_now_ms() - t0;
    cg_gpu_close(g);
    if (rc) return rc;
    memcpy(j->layer_ms, t.layer_ms, sizeof t.layer_ms);
    r->kernel_ms = t.total_ms, r->overlap = cg_gpu_overlap(&t);
    return 0;
}

/* Rank 0: every rank's share into j->pred, in input order. */
static void gather(mpi_job *j)
{
    int *counts = NULL, *displs = NULL;
    if (g_rank == 0) {
        counts = malloc((size_t)g_ranks * sizeof *counts);
        displs = malloc((size_t)g_ranks * sizeof *displs);
        for (int r = 0; r < g_ranks; r++) {
            long long off, n;
            cg_share(j->d.n, g_ranks, r, &off, &n);
            counts[r] = (int)n, displs[r] = (int)off;
        }
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, j->pred, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    } else {
        MPI_Gatherv(j->pred, (int)j->n, MPI_INT, NULL, NULL, NULL, MPI_INT, 0, MPI_COMM_WORLD);
    }
    free(counts), free(displs);
}

/* --profile on rank 0: each rank's share and rate, and the job's. */
static void print_ranks(const rank_report *all, long long total)
{
    double slowest = 0;
    printf("==convgen-mpi== %d ranks\n", g_ranks);
    printf("%5s %-20s %-32s %12s %11s %12s %11s %8s\n", "rank", "host", "device", "first image", "images",
           "wall ms", "images/s", "overlap");
    for (int r = 0; r < g_ranks; r++) {
        const rank_report *p = &all[r];
        if (p->wall_ms > slowest) slowest = p->wall_ms;
        printf("%5d %-20.20s %-32.32s %12lld %11lld %12.3f %11.0f %7.1f%%\n", r, p->host, p->device, p->off, p->n,
               p->wall_ms, p->wall_ms > 0 ? (double)p->n / (p->wall_ms / 1e3) : 0, 100 * p->overlap);
    }
    printf("  all ranks: %lld images, slowest rank %.3f ms: %.0f images/s\n", total, slowest,
           slowest > 0 ? (double)total / (slowest / 1e3) : 0);
}

/* Rank 0's output, the way `convgen run` prints it. */
static int report(mpi_job *j, const mpi_opts *o, const double *layer_ms, cg_err *e)
{
    const cg_spec *s = j->s;
    printf("New Inference\n");
    for (int l = 0; l < s->nlayers; l++)
        if (s->layers[l].op == CG_OP_CONV) printf("Op Time: %.6f\n", layer_ms[l] / 1e3);
    long long ok = 0;
    for (long long i = 0; i < j->d.n; i++) ok += j->pred[i] == j->d.labels[i];
    if (o->random_seed >= 0) printf("Correctness: - Model: %s (random input)\n", s->name);
    else printf("Correctness: %.4f Model: %s\n", j->d.n ? (double)ok / (double)j->d.n : 0.0, s->name);
    if (!o->predictions) return 0;
    /* one line of at most 11 characters per image */
    char *text = malloc((size_t)j->d.n * 12 + 1);
    if (!text) return cg_fail(e, "%s: out of memory", o->predictions), CG_EXIT_IO;
    size_t len = 0;
    for (long long i = 0; i < j->d.n; i++) len += (size_t)sprintf(text + len, "%d\n", j->pred[i]);
    int rc = cg_write_file_atomic(o->predictions, text, len, e) ? CG_EXIT_IO : 0;
    free(text);
    return rc;
}

/* The job, phase by phase, every rank agreeing after each one that can fail
 * on some ranks only. Rank 0 prints the course-style lines as `run` does. */
static int job(const mpi_opts *o, cg_err *e)
{
    mpi_job j;
    memset(&j, 0, sizeof j);
    int rc = 0;
    j.s = malloc(sizeof *j.s);
    if (!j.s) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    if (!rc && cg_spec_load(o->spec, j.s, e)) rc = CG_EXIT_INPUT;
    if (!rc && cg_layer_out_elems(&j.s->layers[j.s->nlayers - 1]) != 10)
        rc = (cg_fail(e, "%s: the network ends in %lld values; classifying %s needs 10", o->spec,
                      cg_layer_out_elems(&j.s->layers[j.s->nlayers - 1]), j.s->dataset), CG_EXIT_INPUT);
    if (!rc) rc = pick_device(&j, o, e);
    int worst;
    if (rc) rank_error(e);
    if ((worst = agree(rc))) goto out;
    if (g_rank == 0) {
        if (o->random_seed >= 0)
            printf("Making %lld random images (seed %lld)...", o->images ? o->images : 10000, o->random_seed);
        else printf("Loading %s data...", j.s->dataset);
        fflush(stdout);
    }
    rc = load_images(&j, o, e);
    if (rc) rank_error(e);
    worst = agree(rc);
    if (g_rank == 0) printf(worst ? " failed\n" : " done\nLoading model..."), fflush(stdout);
    if (worst) goto out;
    if (cg_weights_for_spec(j.s, &j.w, e)) rank_error(e), rc = CG_EXIT_INPUT;
    worst = agree(rc);
    if (!worst) worst = same_job(&j, o, e);
    if (g_rank == 0) {
        if (worst) printf(" failed\n");
        else if (j.w.random) printf(" done (no weights file: seeded random weights, seed %llu)\n", j.s->seed);
        else printf(" done\n");
        fflush(stdout);
    }
    if (worst) goto out;
    j.pred = malloc((size_t)(g_rank == 0 ? j.d.n : j.n) * sizeof *j.pred + 1);
    if (!j.pred) rc = (cg_fail(e, "out of memory"), CG_EXIT_IO);
    if (!rc) rc = run_share(&j, o, e);
    if (rc) rank_error(e);
    if ((worst = agree(rc))) goto out;
    gather(&j);
    double layer_ms[CG_MAX_LAYERS];
    MPI_Reduce(j.layer_ms, layer_ms, CG_MAX_LAYERS, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    rank_report *all = g_rank == 0 ? malloc((size_t)g_ranks * sizeof *all) : NULL;
    MPI_Gather(&j.rep, (int)sizeof j.rep, MPI_BYTE, all, (int)sizeof j.rep, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        rc = report(&j, o, layer_ms, e);
        if (!rc && o->profile && all) print_ranks(all, j.d.n);
        if (rc) rank_error(e);
    }
    free(all);
    worst = agree(rc);
out:
    free(j.s), free(j.pred);
    cg_weights_free(&j.w);
    cg_dataset_free(&j.d);
    return worst;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
    cg_err e = {""};
    mpi_opts o;
    int rc = parse(argc, argv, &o, &e);
    if (rc && g_rank == 0) fprintf(stderr, "convgen-mpi: %s\n", e.msg);
    rc = agree(rc); /* --predictions is checked on rank 0 alone */
    if (!rc && !o.help) rc = job(&o, &e);
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
