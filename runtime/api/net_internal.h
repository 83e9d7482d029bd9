/* net_internal.h — what the command line needs of a cg_net beyond the public
 * API (runtime/convgen.h): opening from a spec it has already read (it prints
 * the data and weights it loads before the backend opens, and keeps them for
 * --json), applying a tuning record with its notices on stderr, and the CUDA
 * backend's profile figures. Not installed; programs use convgen.h. */
#ifndef CG_NET_INTERNAL_H
#define CG_NET_INTERNAL_H
#include "bundle.h"
#include "convgen.h"
#include "gpu.h"
#include "spec.h"
#include "units.h"
#include "weights.h"

/* cg_net_open on a spec and weights the caller has loaded (and tuned: no
 * tuning record is read here) and which must outlive the network. */
cg_status cg_net_open_with(const cg_spec *s, const cg_weights *w, const cg_net_options *o, cg_net **out);

/* A bundle read on the host (runtime/formats/bundle.h): its bytes, its spec
 * parsed from the spec section (s->path is the bundle's path, so messages
 * name it) and its weights from the weights section, checked against the
 * spec. No file but the bundle is read, and nothing is generated. */
typedef struct {
    cg_bundle b;
    cg_spec *s;
    cg_weights w;
} cg_net_bundle;

/* Load path as above; a CG_STATUS_* (INPUT for anything wrong with the file). */
int cg_net_bundle_load(const char *path, cg_net_bundle *nb, cg_err *e);
void cg_net_bundle_free(cg_net_bundle *nb);
/* Whether path is to be read as a bundle: its name ends in .cgb, or its
 * first bytes are the bundle magic (a renamed bundle is still one). */
int cg_is_bundle_path(const char *path);
/* cg_net_open_bundle on a bundle the caller has loaded (it must outlive the
 * network): CPU from its spec and weights, CUDA from its manifest and fat
 * binary too. */
cg_status cg_net_open_bundle_with(const cg_net_bundle *nb, const cg_net_options *o, cg_net **out);

/* Apply the tuning record for a CUDA run of s on device `device` (docs/tuning.md):
 * o->tuning, else the spec's NAME.tuning.yaml if present; nothing
 * with o->no_tuning. Checked against the device when it answers (not with a
 * fat binary, whose kernels were chosen when it was built). from_record[i]: 1
 * where layer i took the record's choice. notices: NULL, printed on stderr
 * (the command), else appended there. */
int cg_net_tune(cg_spec *s, const cg_net_options *o, int from_record[CG_MAX_LAYERS], cg_buf *notices, cg_err *e);

/* `convgen check`'s isolated pass (docs/design.md, "Tolerance"; units.h): the
 * units the network's layers run alone in (CUDA: its kernels grouped; CPU: a
 * layer each), and unit u of plan p (this network's or another's: the CPU
 * reference runs the GPU's units) over n images. pixels: the uint8 images (a
 * unit reading them); ext: the reference's floats by slot (layer i's holder at
 * holder + 1, the network's float input at 0), rounded as p->dtype stores them;
 * out[i]: n * cg_layer_out_elems floats for each layer of the unit (the GPU
 * writes those it keeps). The CUDA network must keep its tensors (keep_tensors). */
cg_status cg_net_units(cg_net *net, cg_units *p);
cg_status cg_net_run_unit(cg_net *net, const cg_units *p, int u, long long n, const unsigned char *pixels,
                          const float *const *ext, float **out);

/* The CUDA backend's figures of the last open and host run; NULL on the CPU. */
const cg_gpu_times *cg_net_gpu_times(const cg_net *net);
const cg_host_costs *cg_net_host_costs(const cg_net *net);
/* The add layer whose kernel computes layer i's output in its epilogue (a conv's,
 * or a batchnorm's folded into it; docs/spec.md, add): the CUDA backend keeps no
 * tensor of layer i and run_layers gives NaN for it. NULL otherwise and on the CPU. */
const char *cg_net_layer_into(const cg_net *net, int i);

/* Whether the CUDA backend's kernels include a whole-network kernel (0 on the CPU). */
int cg_net_has_whole(const cg_net *net);
/* How the runs after choose between it and the per-layer kernels: CG_WHOLE_AUTO,
 * CG_WHOLE_ON or CG_WHOLE_OFF (runtime/cuda/gpu.h); nothing on the CPU. */
void cg_net_set_whole(cg_net *net, int mode);
/* The build id of the CUDA backend's kernels (the manifest's hash; "" on the CPU):
 * what a tuning record's whole-network decision is made for. */
const char *cg_net_build_id(const cg_net *net);
/* Why the tuning record's whole-network decision for the network's bucket was
 * not taken (one line naming the record), "" when there is nothing to say; also
 * appended to cg_net_log when the network opens. */
const char *cg_net_whole_notice(const cg_net *net);

/* How many CUDA devices the driver sees (`run --devices all`): CG_STATUS_OK,
 * or CG_STATUS_DEVICE with why (one line, at most n bytes) saying why none. */
cg_status cg_cuda_device_count(int *count, char *why, size_t n);

#endif
