/* net.c — the public API (runtime/convgen.h) over the backend interface
 * (backend.h): argument and shape checks, the error message, ownership of the
 * spec and weights it loads. No backend appears here by name but in
 * backend_of(). */
#include "convgen.h"
#include "backend.h"
#include "aot.h"
#include "cuda_api.h"
#include "fatbin.h"
#include "net_internal.h"
#include "pipeline.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cg_net {
    cg_net_bundle own_b;  /* what cg_net_open_bundle loaded */
    cg_spec *own_spec;    /* what cg_net_open loaded (NULL with cg_net_open_with) */
    cg_weights own_w;
    const cg_spec *s;
    const cg_weights *w;
    const cg_backend *be;
    void *state;          /* the backend's */
    int opened;           /* 0: only cg_net_error, cg_net_log and cg_net_close answer */
    cg_err err;
    cg_buf log;
    double layer_ms[CG_MAX_LAYERS], total_ms;
    cg_weights fold_w;    /* the weights with batch norms folded, where the spec has any */
};

const char *cg_version(void) { return CG_VERSION; }

void cg_net_options_init(cg_net_options *o)
{
    memset(o, 0, sizeof *o);
    o->backend = CG_BACKEND_CPU;
    o->weights_seed = -1;
}

/* The table for a backend kind, NULL for a value outside the enum. */
static const cg_backend *backend_of(cg_backend_kind k)
{
    return k == CG_BACKEND_CPU ? &cg_backend_cpu : k == CG_BACKEND_CUDA ? &cg_backend_cuda : NULL;
}

/* Clear the message for a new call; USAGE when net cannot take one. */
static cg_status begin(cg_net *net)
{
    if (!net) return CG_STATUS_USAGE;
    net->err.msg[0] = 0;
    if (!net->opened)
        return cg_fail(&net->err, "this network did not open; only cg_net_error, cg_net_log and cg_net_close "
                                  "apply"), CG_STATUS_USAGE;
    return CG_STATUS_OK;
}

/* A fresh network holding nothing yet, its log empty. */
static cg_status new_net(cg_net **out)
{
    if (!out) return CG_STATUS_USAGE;
    *out = calloc(1, sizeof **out);
    if (!*out) return CG_STATUS_IO;
    cg_buf_init(&(*out)->log);
    return CG_STATUS_OK;
}

/* Options that only mean something on CUDA, refused on the CPU: the caller
 * asked for something the backend would silently ignore. */
static int check_options(const cg_net_options *o, cg_err *e)
{
    if (!backend_of(o->backend)) return cg_fail(e, "unknown backend %d", (int)o->backend), CG_STATUS_USAGE;
    if (o->device < 0) return cg_fail(e, "device %d: a device index is 0 or more", o->device), CG_STATUS_USAGE;
    if (o->batch < 0) return cg_fail(e, "batch %lld: 0 (as many as fit) or more", o->batch), CG_STATUS_USAGE;
    if (o->streams < 0 || o->streams > CG_PIPE_MAX_SETS)
        return cg_fail(e, "streams %d: 0 (the default, 2) or 1 to %d", o->streams, CG_PIPE_MAX_SETS), CG_STATUS_USAGE;
    if (o->whole < -1 || o->whole > CG_WHOLE_OFF)
        return cg_fail(e, "whole %d: 0 or -1 (auto), 1 (on) or 2 (off)", o->whole), CG_STATUS_USAGE;
    if (o->backend != CG_BACKEND_CPU) return 0;
    const char *gpu = o->fatbin ? "fatbin" : o->tuning ? "tuning" : o->no_cache ? "no_cache" : o->batch ? "batch"
                    : o->profile ? "profile" : o->poison ? "poison" : o->device ? "device"
                    : o->streams ? "streams" : o->whole > 0 ? "whole" : NULL;
    if (gpu) return cg_fail(e, "option %s needs the cuda backend", gpu), CG_STATUS_USAGE;
    return 0;
}

/* Open the backend on a loaded spec and weights (both borrowed), and a
 * bundle's sections where b is not NULL. */
static cg_status open_backend(cg_net *net, const cg_spec *s, const cg_weights *w, const cg_bundle *b,
                              const cg_net_options *o)
{
    /* batch norms folded at load time, for either backend: the kernels and the
     * CPU reference then run the same layers (cg_spec_run_layer) */
    int has_bn = 0;
    for (int i = 0; i < s->nlayers; i++) has_bn |= s->layers[i].op == CG_OP_BATCHNORM;
    if (has_bn && !w->bn_folded) {
        if (cg_weights_fold_bn(s, w, &net->fold_w, &net->err)) return CG_STATUS_INPUT;
        w = &net->fold_w;
    }
    net->s = s, net->w = w;
    net->be = backend_of(o->backend);
    cg_backend_opts bo = {o->device, o->fatbin, o->no_cache, o->batch, o->poison, o->profile, &net->log,
                          o->streams, NULL, 0, NULL, 0, o->no_graphs, o->no_pdl, o->keep_tensors,
                          o->whole < 0 ? CG_WHOLE_AUTO : o->whole, o->pdl_always};
    if (b) {
        bo.manifest = b->sec[CG_BUNDLE_MANIFEST].data, bo.manifest_len = b->sec[CG_BUNDLE_MANIFEST].len;
        bo.fatbin_data = b->sec[CG_BUNDLE_FATBIN].data, bo.fatbin_len = b->sec[CG_BUNDLE_FATBIN].len;
    }
    int rc = net->be->open(&net->state, s, w, &bo, &net->err);
    if (rc) return (cg_status)rc;
    net->opened = 1;
    /* a tuning record's whole-network decision that no longer holds: a notice in
     * the log, as the record's other notices are (the command prints it itself) */
    const char *notice = cg_net_whole_notice(net);
    if (notice[0] && cg_buf_printf(&net->log, "%s\n", notice)) return cg_fail(&net->err, "out of memory"), CG_STATUS_IO;
    return CG_STATUS_OK;
}

int cg_net_tune(cg_spec *s, const cg_net_options *o, int from_record[CG_MAX_LAYERS], cg_buf *notices, cg_err *e)
{
    memset(from_record, 0, CG_MAX_LAYERS * sizeof *from_record);
    if (o->no_tuning) return 0;
    cg_tune_device dev = {NULL, 0, NULL};
    char name[256];
    cg_target tg;
    if (o->fatbin) {
        /* the choices are checked against what the fat binary was built for, its cubins'
         * architectures (as the backend generates for them): else a record's tensor-core
         * choices would be refused for the default sm_75 and the code would not match */
        cg_buf f;
        cg_err ce;
        int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm = 0, nptx = 0;
        if (cg_read_file(o->fatbin, &f, &ce)) return 0; /* the backend's open will say why */
        if (!cg_fatbin_list(f.data, f.len, sm, &nsm, ptx, &nptx, &ce)) {
            cg_aot_target(sm, nsm, &tg);
            dev.target = &tg;
        }
        cg_buf_free(&f);
    } else {
        cg_cu *cu;
        cg_err ce;
        if (cg_cu_open(&cu, o->device, &ce)) return 0; /* the backend's open will say why */
        snprintf(name, sizeof name, "%s", cu->name);
        dev.name = name, dev.cc = cu->cc;
        cg_cu_close(cu);
    }
    return cg_tune_use_to(s, o->tuning, 0, &dev, from_record, notices, e);
}

/* What both opens do first: the handle (*out, also on failure), the options
 * (opt, or the defaults in *defaults) checked, a path given. */
static cg_status open_begin(cg_net **out, const cg_net_options *opt, cg_net_options *defaults, const char *path,
                            const char *what, const cg_net_options **o)
{
    cg_status st = new_net(out);
    if (st) return st;
    cg_net_options_init(defaults);
    *o = opt ? opt : defaults;
    if (!path) return cg_fail(&(*out)->err, "no %s path (NULL)", what), CG_STATUS_USAGE;
    return (cg_status)check_options(*o, &(*out)->err);
}

cg_status cg_net_open(const char *spec, const cg_net_options *opt, cg_net **out)
{
    cg_net_options defaults;
    const cg_net_options *o;
    cg_status st = open_begin(out, opt, &defaults, spec, "spec", &o);
    if (st) return st;
    cg_net *net = *out;
    int rc;
    if (!(net->own_spec = malloc(sizeof *net->own_spec))) return cg_fail(&net->err, "out of memory"), CG_STATUS_IO;
    if (cg_spec_load(spec, net->own_spec, &net->err)) return CG_STATUS_INPUT;
    int from_record[CG_MAX_LAYERS];
    if (o->backend == CG_BACKEND_CUDA && (rc = cg_net_tune(net->own_spec, o, from_record, &net->log, &net->err)))
        return (cg_status)rc;
    if (o->weights_seed >= 0 && !net->own_spec->weights[0]) net->own_spec->seed = (unsigned long long)o->weights_seed;
    if (cg_weights_for_spec(net->own_spec, &net->own_w, &net->err)) return CG_STATUS_INPUT;
    return open_backend(net, net->own_spec, &net->own_w, NULL, o);
}

cg_status cg_net_open_with(const cg_spec *s, const cg_weights *w, const cg_net_options *o, cg_net **out)
{
    cg_status st = new_net(out);
    if (st) return st;
    int rc = check_options(o, &(*out)->err);
    return rc ? (cg_status)rc : open_backend(*out, s, w, NULL, o);
}

int cg_is_bundle_path(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && !strcmp(path + n - 4, ".cgb")) return 1;
    /* a FIFO, directory or device is not waited on: the spec reader refuses it */
    int fd;
    size_t size;
    cg_err ignored;
    if (cg_open_regular(path, CG_BUNDLE_MAX, &fd, &size, &ignored)) return 0;
    char head[8];
    int is = size >= 8 && read(fd, head, 8) == 8 && !memcmp(head, CG_BUNDLE_MAGIC, 8);
    close(fd);
    return is;
}

int cg_net_bundle_load(const char *path, cg_net_bundle *nb, cg_err *e)
{
    memset(nb, 0, sizeof *nb);
    cg_buf_init(&nb->b.file);
    if (cg_bundle_read(path, &nb->b, e)) return CG_STATUS_INPUT;
    if (!(nb->s = malloc(sizeof *nb->s))) return cg_fail(e, "out of memory"), CG_STATUS_IO;
    const cg_blob *sp = &nb->b.sec[CG_BUNDLE_SPEC], *wt = &nb->b.sec[CG_BUNDLE_WEIGHTS];
    if (cg_spec_parse(path, sp->data, sp->len, nb->s, e)) return CG_STATUS_INPUT;
    char name[CG_PATH_MAX + 16];
    snprintf(name, sizeof name, "%s (weights)", path);
    if (cg_weights_for_spec_bytes(nb->s, name, wt->data, wt->len, &nb->w, e)) return CG_STATUS_INPUT;
    return 0;
}

void cg_net_bundle_free(cg_net_bundle *nb)
{
    cg_weights_free(&nb->w);
    free(nb->s);
    nb->s = NULL;
    cg_bundle_free(&nb->b);
}

cg_status cg_net_open_bundle_with(const cg_net_bundle *nb, const cg_net_options *o, cg_net **out)
{
    cg_status st = new_net(out);
    if (st) return st;
    cg_net *net = *out;
    int rc = check_options(o, &net->err);
    if (rc) return (cg_status)rc;
    if (o->fatbin || o->tuning)
        return cg_fail(&net->err, "%s: option %s: a bundle carries its kernels, built and tuned by 'convgen build'",
                       nb->s->path, o->fatbin ? "fatbin" : "tuning"), CG_STATUS_USAGE;
    return open_backend(net, nb->s, &nb->w, &nb->b, o);
}

cg_status cg_net_open_bundle(const char *path, const cg_net_options *opt, cg_net **out)
{
    cg_net_options defaults;
    const cg_net_options *o;
    cg_status st = open_begin(out, opt, &defaults, path, "bundle", &o);
    if (st) return st;
    cg_net *net = *out;
    int rc;
    if (o->fatbin || o->tuning)
        return cg_fail(&net->err, "%s: option %s: a bundle carries its kernels, built and tuned by 'convgen build'",
                       path, o->fatbin ? "fatbin" : "tuning"), CG_STATUS_USAGE;
    if ((rc = cg_net_bundle_load(path, &net->own_b, &net->err))) return (cg_status)rc;
    return open_backend(net, net->own_b.s, &net->own_b.w, &net->own_b.b, o);
}

const char *cg_net_error(const cg_net *net) { return net ? net->err.msg : "no network (NULL)"; }
const char *cg_net_log(const cg_net *net) { return net && net->log.data ? net->log.data : ""; }

cg_status cg_net_input_shape(cg_net *net, int *c, int *h, int *w)
{
    cg_status st = begin(net);
    if (st) return st;
    if (c) *c = net->s->C;
    if (h) *h = net->s->H;
    if (w) *w = net->s->W;
    return CG_STATUS_OK;
}

cg_status cg_net_input_scaling(cg_net *net, double *scale, double *offset)
{
    cg_status st = begin(net);
    if (st) return st;
    if (scale) *scale = net->s->scale;
    if (offset) *offset = net->s->offset;
    return CG_STATUS_OK;
}

cg_status cg_net_classes(cg_net *net, int *classes)
{
    cg_status st = begin(net);
    if (st) return st;
    if (!classes) return cg_fail(&net->err, "cg_net_classes: classes is NULL"), CG_STATUS_USAGE;
    *classes = (int)cg_layer_out_elems(&net->s->layers[net->s->nlayers - 1]);
    return CG_STATUS_OK;
}

const char *cg_net_backend(const cg_net *net) { return net && net->be ? net->be->name : "?"; }

const char *cg_net_device_name(const cg_net *net)
{
    return net && net->opened ? net->be->device_name(net->state) : "?";
}

int cg_net_layer_count(const cg_net *net) { return net && net->opened ? net->s->nlayers : 0; }

const char *cg_net_layer_name(const cg_net *net, int i)
{
    return net && net->opened && i >= 0 && i < net->s->nlayers ? net->s->layers[i].name : NULL;
}

long long cg_net_layer_size(const cg_net *net, int i)
{
    return net && net->opened && i >= 0 && i < net->s->nlayers ? cg_layer_out_elems(&net->s->layers[i]) : -1;
}

/* The checks every run makes before the backend sees it: arguments present,
 * the type known and taken, the shape the network's. */
static cg_status check_input(cg_net *net, const char *fn, const cg_input *in, const int *pred)
{
    cg_err *e = &net->err;
    const cg_spec *s = net->s;
    if (!in) return cg_fail(e, "%s: input is NULL", fn), CG_STATUS_USAGE;
    if (!pred) return cg_fail(e, "%s: pred is NULL (it receives the predictions)", fn), CG_STATUS_USAGE;
    if (in->n < 0) return cg_fail(e, "%s: %lld images", fn, in->n), CG_STATUS_USAGE;
    if (!in->data && in->n > 0) return cg_fail(e, "%s: input data is NULL", fn), CG_STATUS_USAGE;
    if (in->type != CG_INPUT_U8 && in->type != CG_INPUT_F32)
        return cg_fail(e, "%s: unknown input type %d (CG_INPUT_U8 or CG_INPUT_F32)", fn, (int)in->type),
               CG_STATUS_USAGE;
    if (in->c != s->C || in->h != s->H || in->w != s->W)
        return cg_fail(e, "%s: input images are %dx%dx%d (CxHxW), %s takes %dx%dx%d", fn, in->c, in->h, in->w,
                       s->name, s->C, s->H, s->W), CG_STATUS_USAGE;
    if (in->type == CG_INPUT_F32 && !net->be->takes_f32(net->state))
        return cg_fail(e, "%s: %s's first kernel reads uint8 pixels itself: give it CG_INPUT_U8", fn, s->name),
               CG_STATUS_USAGE;
    return CG_STATUS_OK;
}

/* One run of any kind through the backend; host runs keep their times. */
static cg_status run(cg_net *net, const char *fn, const cg_input *in, int *pred, float *scores, float **layer_out,
                     int on_device, void *stream)
{
    cg_status st = begin(net);
    if (st || (st = check_input(net, fn, in, pred))) return st;
    if (in->n == 0) return CG_STATUS_OK;
    cg_backend_run r;
    memset(&r, 0, sizeof r);
    r.type = in->type, r.input = in->data, r.n = in->n, r.pred = pred, r.scores = scores;
    r.layer_out = layer_out, r.on_device = on_device, r.stream = stream;
    int rc = net->be->run(net->state, &r, &net->err);
    if (rc) return (cg_status)rc;
    if (!on_device) {
        memcpy(net->layer_ms, r.layer_ms, sizeof net->layer_ms);
        net->total_ms = r.total_ms;
    }
    return CG_STATUS_OK;
}

cg_status cg_net_run(cg_net *net, const cg_input *in, int *pred, float *scores)
{
    return run(net, "cg_net_run", in, pred, scores, NULL, 0, NULL);
}

cg_status cg_net_run_layers(cg_net *net, const cg_input *in, int *pred, float *scores, float **layer_out)
{
    return run(net, "cg_net_run_layers", in, pred, scores, layer_out, 0, NULL);
}

cg_status cg_net_run_device(cg_net *net, const cg_input *in, int *pred, float *scores, void *stream)
{
    return run(net, "cg_net_run_device", in, pred, scores, NULL, 1, stream);
}

cg_status cg_net_times(cg_net *net, double *total_ms, double *layer_ms)
{
    cg_status st = begin(net);
    if (st) return st;
    if (total_ms) *total_ms = net->total_ms;
    if (layer_ms) memcpy(layer_ms, net->layer_ms, (size_t)net->s->nlayers * sizeof *layer_ms);
    return CG_STATUS_OK;
}

cg_status cg_net_units(cg_net *net, cg_units *p)
{
    cg_status st = begin(net);
    if (st || !p) return st ? st : (cg_fail(&net->err, "cg_net_units: p is NULL"), CG_STATUS_USAGE);
    return (cg_status)net->be->units(net->state, p, &net->err);
}

cg_status cg_net_run_unit(cg_net *net, const cg_units *p, int u, long long n, const unsigned char *pixels,
                          const float *const *ext, float **out)
{
    cg_status st = begin(net);
    if (st) return st;
    if (!p || !ext || !out) return cg_fail(&net->err, "cg_net_run_unit: p, ext and out are needed"), CG_STATUS_USAGE;
    if (u < 0 || u >= p->nunits)
        return cg_fail(&net->err, "cg_net_run_unit: unit %d of %d", u, p->nunits), CG_STATUS_USAGE;
    if (n < 0) return cg_fail(&net->err, "cg_net_run_unit: %lld images", n), CG_STATUS_USAGE;
    return n ? (cg_status)net->be->run_unit(net->state, p, u, n, pixels, ext, out, &net->err) : CG_STATUS_OK;
}

const cg_gpu_times *cg_net_gpu_times(const cg_net *net)
{
    return net && net->opened && net->be == &cg_backend_cuda ? cg_backend_cuda_times(net->state) : NULL;
}

const char *cg_net_layer_into(const cg_net *net, int i)
{
    return net && net->opened && net->be == &cg_backend_cuda ? cg_backend_cuda_into(net->state, i) : NULL;
}

int cg_net_has_whole(const cg_net *net)
{
    return net && net->opened && net->be == &cg_backend_cuda && cg_backend_cuda_has_whole(net->state);
}

void cg_net_set_whole(cg_net *net, int mode)
{
    if (net && net->opened && net->be == &cg_backend_cuda) cg_backend_cuda_set_whole(net->state, mode);
}

const char *cg_net_build_id(const cg_net *net)
{
    return net && net->opened && net->be == &cg_backend_cuda ? cg_backend_cuda_build_id(net->state) : "";
}

const char *cg_net_whole_notice(const cg_net *net)
{
    return net && net->opened && net->be == &cg_backend_cuda ? cg_backend_cuda_whole_notice(net->state) : "";
}

const cg_host_costs *cg_net_host_costs(const cg_net *net)
{
    return net && net->opened && net->be == &cg_backend_cuda ? cg_backend_cuda_costs(net->state) : NULL;
}

void cg_net_close(cg_net *net)
{
    if (!net) return;
    if (net->be) net->be->close(net->state);
    cg_weights_free(&net->own_w);
    cg_weights_free(&net->fold_w);
    free(net->own_spec);
    cg_net_bundle_free(&net->own_b);
    cg_buf_free(&net->log);
    free(net);
}

cg_status cg_cuda_probe(int device, char *why, size_t n)
{
    cg_cu *cu;
    cg_err e;
    if (cg_cu_open(&cu, device, &e)) {
        if (why && n) snprintf(why, n, "%s", e.msg);
        return CG_STATUS_DEVICE;
    }
    cg_cu_close(cu);
    if (why && n) why[0] = 0;
    return CG_STATUS_OK;
}

cg_status cg_cuda_device_count(int *count, char *why, size_t n)
{
    cg_cu *cu;
    cg_err e;
    *count = 0;
    if (cg_cu_open(&cu, 0, &e) || CG_CU(&e, cu->cuDeviceGetCount(count))) {
        if (cu) cg_cu_close(cu);
        if (why && n) snprintf(why, n, "%s", e.msg);
        return CG_STATUS_DEVICE;
    }
    cg_cu_close(cu);
    if (why && n) why[0] = 0;
    return CG_STATUS_OK;
}
