/* op.h — the op table: one descriptor per layer op (cg_op), holding what the
 * spec reader, the generator, the CPU reference, the weights loader, the kernel
 * harness and the tuner ask of an op: its name, its spec keys, its shape rule,
 * its weights, its FLOPs and its kernel templates' family. Code switches on an
 * op only where the ops truly differ (the conv's padding and pool fields, the
 * course's "Op Time" line per convolution, the tuning record's signature).
 * The CPU reference of each op is runtime/cpu/cpu.c's, in a table of the same
 * order there: the generator does not link against how layers run. */
#ifndef CG_OP_H
#define CG_OP_H
#include "spec.h"

struct cg_yctx;
struct cg_ynode;

typedef struct {
    const char *name;        /* as a spec writes it: "conv" */
    const char *const *keys; /* the keys a layer of this op may have, NULL-terminated */
    /* Its kernel templates' name prefix: a spec's strategy S names template
     * FAMILY S ("conv2d_" S); these are the layers kernel and tune serve.
     * NULL: one fixed template, no strategy. */
    const char *family;
    int maps_out;  /* its output is maps (C x H x W) a conv may read */
    int needs_maps; /* may follow only the input or a maps_out layer */
    int last_only; /* must be the network's last layer */
    /* The spec reader: the op's keys of mapping map into l, whose C, H, W already
     * hold what flows in (who names it in messages: "the input", "layer 'x'
     * output"); sets the output shape OC, OH, OW. where: "in layer 'x'". */
    int (*read)(const struct cg_yctx *c, const struct cg_ynode *map, const char *where, const char *who,
                cg_layer *l);
    /* The shape rule: the output l's fields define, or -1 with e saying why (a
     * hand-built layer whose fields define none). */
    int (*out_shape)(const cg_layer *l, int *oc, int *oh, int *ow, cg_err *e);
    /* Its weight tensor's shape into shape[]: the number of dimensions, 0 (or
     * NULL) for none. shape[0] is the rows (the bias's length), the product of
     * the rest the fan-in. */
    int (*weight_shape)(const cg_layer *l, long long shape[4]);
    /* Floating-point operations of its main product for n images: a multiply
     * and an add per weight use (NULL: none counted). */
    double (*flop)(const cg_layer *l, long long n);
    /* The layer as one of its kernels computes it when the kernel leaves the
     * epilogue to later kernels (NULL: the layer as it is). */
    void (*unfused)(const cg_layer *l, cg_layer *out);
    /* 0: the op reads one tensor; else 2 to max_inputs (add, concat). Its
     * output is maps when every input is (maps_out is then 1). */
    int max_inputs;
} cg_op_desc;

extern const cg_op_desc cg_ops[CG_OP_COUNT];

/* The descriptor of op, NULL for a value outside the table. */
const cg_op_desc *cg_op_of(cg_op op);
/* The ops' names in table order, NULL-terminated (CG_OP_COUNT + 1 entries). */
void cg_op_names(const char *out[CG_OP_COUNT + 1]);
/* l's weights as rows x fan_in; 0 when its op has none (rows, fan_in 0). */
int cg_op_weights(const cg_layer *l, long long *rows, long long *fan_in);
/* The template a strategy names for l: its family followed by strategy. -1
 * when l's op has no family or the name does not fit in n bytes. */
int cg_op_template(const cg_layer *l, const char *strategy, char *out, size_t n);
/* The strategy template tpl names for l: tpl less its op's family ("conv2d_igemm" ->
 * "igemm"); tpl itself where it does not start with the family. */
const char *cg_op_strategy(const cg_layer *l, const char *tpl);

#endif
