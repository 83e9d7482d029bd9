/* spec_yaml.h — internal to the spec reader: a YAML file turned into a small tree
 * (mappings, sequences, scalars with their positions) by libyaml, and typed access
 * to its nodes that reports "FILE:LINE:COL: message" errors. Only spec*.c use it. */
#ifndef CG_SPEC_YAML_H
#define CG_SPEC_YAML_H
#include "spec.h"

#define CG_SPEC_BYTES_MAX (1 << 20) /* specs larger than 1 MiB are refused */
#define CG_SPEC_DEPTH_MAX 8         /* nested mappings/sequences */
#define CG_SPEC_ENTRIES_MAX 1024    /* entries of one mapping or sequence */

typedef enum { CG_Y_SCALAR, CG_Y_MAP, CG_Y_SEQ } cg_ykind;

typedef struct cg_ynode cg_ynode;
struct cg_ynode {
    cg_ykind kind;
    cg_pos pos;
    char *text;  /* scalar: its value, NUL-terminated (no NUL inside: checked) */
    size_t len;  /* scalar: strlen(text) */
    int plain;   /* scalar: written without quotes, so it may be a number/bool/null */
    cg_ynode **kids; /* mapping: key, value, key, value...; sequence: items */
    size_t n, cap;
};

/* Where errors go: the file name as given and the error buffer. */
typedef struct cg_yctx {
    const char *file;
    cg_err *e;
} cg_yctx;

/* Parse text into a tree. *root is NULL for an empty stream (only comments).
 * Rejects syntax errors, NUL bytes, invalid UTF-8, anchors, aliases, tags,
 * several documents, nesting deeper than CG_SPEC_DEPTH_MAX and duplicate keys. */
int cg_yaml_load(const cg_yctx *c, const char *text, size_t len, cg_ynode **root);
void cg_yaml_free(cg_ynode *n);

/* Formats "FILE:LINE:COL: message" into c->e; always returns -1. */
int cg_y_fail(const cg_yctx *c, cg_pos p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Describes a node for messages: "a mapping", "the string \"5\"", "the number 5.0". */
const char *cg_y_what(const cg_ynode *n, char *buf, size_t size);
/* Copies a scalar into buf for a message: shortened, control bytes replaced. */
const char *cg_y_show(const char *s, char *buf, size_t size);

/* Mapping lookup: the value for key, or NULL. */
const cg_ynode *cg_y_get(const cg_ynode *map, const char *key);
/* Position of a key in a mapping (the mapping's position if absent). */
cg_pos cg_y_key_pos(const cg_ynode *map, const char *key);
/* The known key nearest to s by edit distance when close enough, else NULL. */
const char *cg_y_suggest(const char *s, const char *const *known);

/* Typed reads of the value of key; where says whose key it is for messages
 * ("in layer 'conv1'", "in 'input'", "" at top level). */
int cg_y_int(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
             long long lo, long long hi, long long *out);
int cg_y_u64(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
             unsigned long long *out);
/* Finite numbers only; integers are accepted. */
int cg_y_float(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
               double *out);
/* true or false, unquoted; nothing else (not yes/no/on/off). */
int cg_y_bool(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
              int *out);
/* Any non-null scalar of fewer than size bytes. */
int cg_y_str(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
             char *out, size_t size);
/* A name matching [a-z_][a-z0-9_]* (or [a-z0-9][a-z0-9_.-]* when dotted), < size
 * bytes; quoting is allowed but changes nothing. */
int cg_y_ident(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
               int dotted, char *out, size_t size);
/* One of the words in choices (NULL-terminated, quoted or not); its index in
 * *out. An unknown word is reported as "unknown KEY 'word' WHERE (expected a, b or c)". */
int cg_y_enum(const cg_yctx *c, const cg_ynode *n, const char *key, const char *where,
              const char *const *choices, int *out);
/* Every key of map must be in known; otherwise "unknown key 'x' WHERE (did you
 * mean 'y'?)". where_unknown is e.g. "in layer 'conv1'" or "at top level". */
int cg_y_check_keys(const cg_yctx *c, const cg_ynode *map, const char *const *known,
                    const char *where_unknown);

/* n must be of the given kind; otherwise "expected EXPECTED for 'key' WHERE, got ...". */
int cg_y_kind(const cg_yctx *c, const cg_ynode *n, cg_ykind kind, const char *key,
              const char *where, const char *expected);
/* The value of a required key, or the error "missing required key 'key' WHERE"
 * at the mapping's position (hint, if not NULL, is appended in parentheses). */
const cg_ynode *cg_y_require(const cg_yctx *c, const cg_ynode *map, const char *key,
                             const char *where, const char *hint);
/* s matches [a-z_][a-z0-9_]* (dotted: [a-z0-9][a-z0-9_.-]*). */
int cg_y_is_ident(const char *s, int dotted);

/* a*b into *out when 0 <= a, b and the product is at most limit; -1 otherwise
 * (never overflows). */
int cg_spec_mul(long long a, long long b, long long limit, long long *out);
/* Reads and checks 'layers' into s->layers, shapes derived from s->C/H/W. */
/* A `precision:` value (where: "" or "in layer 'x'"): fp32 or tf32 into *out;
 * bf16 and fp16 are refused as not implemented yet, anything else as unknown. */
int cg_spec_read_precision(const cg_yctx *c, const cg_ynode *v, const char *where, cg_precision *out);
int cg_spec_read_layers(const cg_yctx *c, const cg_ynode *seq, cg_spec *s);
/* The op table's readers (base/op.h: cg_op_desc.read) of a conv, an fc,
 * and an op whose output has its input's shape and that takes no keys. */
int cg_spec_read_conv(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l);
int cg_spec_read_fc(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l);
int cg_spec_read_bn(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l);
int cg_spec_read_same(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l);
/* add's reader: its optional activation; the output has its inputs' shape. */
int cg_spec_read_add(const cg_yctx *c, const cg_ynode *map, const char *where, const char *who, cg_layer *l);

#endif
