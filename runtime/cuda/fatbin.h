/* fatbin.h — read the list of cubins and PTX inside an NVIDIA fat binary,
 * without the driver, so errors can say what a file holds ("NET.fatbin holds
 * sm_75, sm_80 and PTX compute_90; this device is sm_89").
 *
 * Container layout, checked against files nvcc 13.0 writes (-fatbin) and
 * against cuobjdump --list-elf/--list-ptx (all integers little-endian):
 *   container header, 16 bytes: u32 magic 0xBA55ED50, u16 version (1),
 *     u16 header size (16), u64 size of the entries that follow
 *   entry header (64 bytes for cubins, 80 for PTX; its own size says which):
 *     +0 u16 kind (1 = PTX, 2 = ELF cubin), +2 u16 (0x0101), +4 u32 header size,
 *     +8 u64 payload size, +16 u32 compressed size, +20 u32, +24 u16 minor,
 *     +26 u16 major (PTX ISA or ELF version), +28 u32 arch (75, 90, 120...),
 *     +40 u64 flags (0x8000: payload zstd-compressed)
 *   payload follows the entry header; the next entry follows the payload.
 * Several containers may follow one another in one file. */
#ifndef CG_FATBIN_H
#define CG_FATBIN_H
#include "util.h"

#define CG_FATBIN_MAGIC 0xBA55ED50u
#define CG_FATBIN_MAX_ARCHS 64

/* sm[] and ptx[] must hold CG_FATBIN_MAX_ARCHS entries each; they come back
 * sorted ascending without duplicates (an sm_90a cubin counts as 90). Any
 * malformed or truncated structure is an error naming its offset. */
int cg_fatbin_list(const void *data, size_t len, int *sm, int *nsm, int *ptx, int *nptx,
                   cg_err *e);

/* "sm_75, sm_80 and PTX compute_90" (or "no cubins and no PTX") into out. */
void cg_fatbin_describe(const int *sm, int nsm, const int *ptx, int nptx, char *out, size_t n);

#endif
