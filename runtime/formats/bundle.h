/* bundle.h — one file, NET.cgb, holding everything a built network needs to
 * run without its source tree: the manifest text, the fat binary, the weights
 * (safetensors bytes) and the spec's text.
 *
 * Layout (all integers little-endian):
 *   0    magic "\x89CGB\r\n\x1a\n" (8 bytes; the \r\n and \x1a catch text-mode
 *        transfers and `type`, as PNG's magic does)
 *   8    u32 format version (CG_BUNDLE_VERSION)
 *   12   u32 section count (CG_BUNDLE_NSECTIONS)
 *   16   u64 file length
 *   24   section table, one 32-byte entry per section, in kind order:
 *        u32 kind, u32 zero, u64 offset, u64 length, u32 CRC-32 of the bytes,
 *        u32 zero
 *   then u32 CRC-32 of bytes 0 .. the table's end, u32 zero
 *   then the sections, each starting at a multiple of 8, in table order,
 *        the gaps between them (under 8 bytes) zero, nothing after the last.
 * Every byte of the file is covered: the header by its CRC, each section by
 * its own, the padding by being required zero. */
#ifndef CG_BUNDLE_H
#define CG_BUNDLE_H
#include "util.h"

#define CG_BUNDLE_MAGIC "\x89" "CGB\r\n\x1a\n"
#define CG_BUNDLE_VERSION 1
/* The largest bundle read or written (the fat binary for every architecture
 * and the weights of the largest shipped model are well under it). */
#define CG_BUNDLE_MAX ((size_t)1 << 30)

/* The sections, in the order the file holds them. */
typedef enum {
    CG_BUNDLE_MANIFEST, /* manifest.txt of the generated kernels */
    CG_BUNDLE_FATBIN,   /* the fat binary (cubins + PTX) */
    CG_BUNDLE_WEIGHTS,  /* a safetensors file */
    CG_BUNDLE_SPEC,     /* the spec's YAML text */
    CG_BUNDLE_NSECTIONS
} cg_bundle_section;

/* Some bytes, not owned. */
typedef struct {
    const void *data;
    size_t len;
} cg_blob;

/* A bundle read into memory: sec[k] points into file. */
typedef struct {
    cg_buf file;
    cg_blob sec[CG_BUNDLE_NSECTIONS];
} cg_bundle;

/* "manifest", "fatbin", "weights", "spec" (for messages). */
const char *cg_bundle_section_name(int k);

/* The bundle's bytes for the four sections, appended to out (initialised by
 * the caller). Fails only when the total would exceed CG_BUNDLE_MAX or memory
 * runs out; path names the file in messages. */
int cg_bundle_encode(const char *path, const cg_blob sec[CG_BUNDLE_NSECTIONS], cg_buf *out,
                     cg_err *e);
/* Encode and write path atomically (a temp file beside it, then a rename):
 * a reader never sees half a bundle, and on error nothing is left behind. */
int cg_bundle_write(const char *path, const cg_blob sec[CG_BUNDLE_NSECTIONS], cg_err *e);

/* Check len bytes as a bundle: magic, version, lengths, table, CRCs and
 * padding; on success sec[k] points into bytes. Every refusal is one line
 * naming path: "not a convgen bundle", "truncated bundle", "damaged bundle",
 * "bundle format version N". */
int cg_bundle_parse(const char *path, const void *bytes, size_t len,
                    cg_blob sec[CG_BUNDLE_NSECTIONS], cg_err *e);
/* Read a regular file of at most CG_BUNDLE_MAX bytes and check it as above. */
int cg_bundle_read(const char *path, cg_bundle *b, cg_err *e);
void cg_bundle_free(cg_bundle *b);

#endif
