/* memplan.h — where each manifest tensor lives in one device arena.
 *
 * The kernels of a batch run in manifest order, one after another; step k is
 * kernel k, and step nkernels the downloads after the last (the per-layer
 * kernels, cg_manifest_layer_kernels: a whole-network kernel runs the same
 * layers in the same order, so the plan serves it too). A tensor is live
 * from the first step that writes or reads it (a kernel writes every tensor of its
 * `out` list) to the last, both ends included:
 * a kernel's output is then live while its inputs are, so no kernel writes over
 * what it reads. Tensors whose live ranges share a step get disjoint bytes;
 * others may share. Kept to the end (step nkernels): the network's input, the
 * scores (`output`) and predictions (`predict`), the tensor a float input is
 * uploaded to (live from step 0), any tensor no kernel touches, and with
 * keep_all every tensor (then nothing is shared: a caller that reads any tensor
 * after a batch, or poisons each one before it, asks for that).
 *
 * A view (a manifest tensor with view=PARENT:OFF) has no bytes of its own: a
 * kernel's use of it is a use of PARENT (so PARENT is live from the first kernel
 * writing any of its slices), it is live as PARENT is, and its off[] is PARENT's
 * plus OFF elements (not a multiple of the alignment).
 *
 * A plan is for a batch of B images: tensor t takes bytes[t] * B rounded up to
 * CG_MEMPLAN_ALIGN, at off[t] (a multiple of it). Placement is greedy and
 * deterministic: largest first (ties: lower index), each at the lowest offset
 * not overlapping a placed tensor live at the same time. */
#ifndef CG_MEMPLAN_H
#define CG_MEMPLAN_H
#include "manifest.h"

#define CG_MEMPLAN_ALIGN 256

typedef struct {
    int n;                         /* tensors (the manifest's ntensors) */
    int first[CG_MAX_TENSORS];     /* live range: steps first..last, inclusive */
    int last[CG_MAX_TENSORS];
    size_t bytes[CG_MAX_TENSORS];  /* bytes per image, as the manifest gives */
    size_t size[CG_MAX_TENSORS];   /* bytes for the batch */
    size_t off[CG_MAX_TENSORS];    /* offset in the arena */
    size_t arena;                  /* the arena's bytes */
    long long batch;               /* images */
    size_t sum;                    /* every tensor's bytes per image, none shared */
    int keep_all;
} cg_memplan;

/* Live ranges of m's tensors into p (n, first, last, bytes, keep_all); steps
 * 0..m->nkernels. */
void cg_memplan_live(const cg_manifest *m, int keep_all, cg_memplan *p);

/* Place n tensors of bytes[i] live over [first[i], last[i]]: off[i] (multiples
 * of align, a power of two), and the arena's size in *arena. Tensors whose
 * ranges intersect get disjoint [off, off + bytes). A pure function of its
 * arguments. */
void cg_memplan_assign(int n, const size_t *bytes, const int *first, const int *last, size_t align, size_t *off,
                       size_t *arena);

/* Both: the plan of m's tensors for a batch of `batch` images (>= 1). */
void cg_memplan_make(const cg_manifest *m, int keep_all, long long batch, cg_memplan *p);

/* The arena's bytes per image as the batch grows (the plan of the bytes per
 * image, unaligned): what sizes the batch that fits. */
size_t cg_memplan_per_image(const cg_memplan *p);

/* Whether tensor t is readable after a batch (live at step nkernels). */
int cg_memplan_kept(const cg_memplan *p, const cg_manifest *m, int t);

/* Bytes as "812 B", "1.9 KB", "6.2 MB", "1.1 GB" (powers of 1000). */
void cg_memplan_bytes_text(size_t b, char *buf, size_t n);
/* Per image: "1.9 MB planned (6.2 MB without reuse)" */
void cg_memplan_describe(const cg_memplan *p, char *buf, size_t n);

#endif
