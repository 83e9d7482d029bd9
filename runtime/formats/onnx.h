/* onnx.h — an ONNX model turned into a convgen spec and its weights
 * (`convgen import`, docs/user-guide.md "Importing an ONNX model"). The model is
 * read with protobuf-c through runtime/formats/onnx_subset.proto; each node is
 * mapped onto the spec's layers or refused with one line naming the node, its op
 * and why. Nothing is printed and nothing is written here. */
#ifndef CG_ONNX_H
#define CG_ONNX_H
#include "spec.h"

typedef struct {
    const char *network; /* the spec's `network:` (a valid network name) */
    const char *weights; /* the spec's `weights:` (the file name written beside it) */
    double scale;        /* input.scale */
    int nmean, nstd;     /* input.mean / input.std given: that many numbers (0: none) */
    double mean[CG_INPUT_NORM_MAX], std[CG_INPUT_NORM_MAX];
} cg_onnx_options;

/* Read the ONNX model at path and convert it: spec (initialised by the caller)
 * gains the spec's YAML text, weights the safetensors file's bytes (F32). The
 * result is checked by the spec reader and the weights loader before it is
 * returned. 0; -1 for a model that cannot be read or converted (e: "PATH: ..."
 * naming the node, op and reason where one is at fault); -2 for an I/O
 * failure or no memory. */
int cg_onnx_import(const char *path, const cg_onnx_options *o, cg_buf *spec, cg_buf *weights, cg_err *e);

#endif
