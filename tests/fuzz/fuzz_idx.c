/* fuzz_idx.c — the IDX reader (cg_idx_load) on an images file and a labels
 * file cut from one input: byte 0 is max_images (0: all), bytes 1-2 (little
 * endian) the images file's length, the images file, then the labels file.
 * Built twice: plain (the bytes are the files) and with -DFUZZ_GZIP (each
 * file is gzip-compressed first, so the fuzzer works on what is inside the
 * stream). No memory error, every rejection one line. */
#include "data.h"
#include "fuzz.h"

#include <zlib.h>

static char images[4096], labels[4096];

#ifdef FUZZ_GZIP
/* data gzip-compressed into a malloc'd buffer; aborts on failure. */
static unsigned char *gzip_bytes(const uint8_t *data, size_t size, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, (uLong)size) + 32;
    unsigned char *out = malloc(cap);
    if (!out) abort();
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}
#endif

/* Writes one of the two files, compressed in the gzip build. */
static void put(const char *path, const uint8_t *data, size_t size)
{
#ifdef FUZZ_GZIP
    size_t n;
    unsigned char *z = gzip_bytes(data, size, &n);
    fuzz_write(path, z, n);
    free(z);
#else
    fuzz_write(path, data, size);
#endif
}

/* A big-endian u32 at p. */
static void be32(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch(images, sizeof images, "images");
    fuzz_scratch(labels, sizeof labels, "labels");
    const char *dir = fuzz_seed_dir();
    if (dir) { /* two 28x28 images and their labels, in the input layout above */
        enum { N = 2, SIDE = 28, IMG = 16 + N * SIDE * SIDE, LAB = 8 + N };
        static unsigned char seed[3 + IMG + LAB];
        unsigned char *img = seed + 3, *lab = img + IMG;
        seed[0] = 0;
        seed[1] = IMG & 0xff;
        seed[2] = IMG >> 8;
        be32(img, 0x803);
        be32(img + 4, N);
        be32(img + 8, SIDE);
        be32(img + 12, SIDE);
        for (int i = 0; i < N * SIDE * SIDE; i++) img[16 + i] = (unsigned char)(i * 7);
        be32(lab, 0x801);
        be32(lab + 4, N);
        lab[8] = 3;
        lab[9] = 9;
        fuzz_seed(dir, "two.idx", seed, sizeof seed);
        seed[0] = 1;
        fuzz_seed(dir, "two-max1.idx", seed, sizeof seed);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    int max = data[0];
    size_t split = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3;
    size -= 3;
    if (split > size) split = size;
    put(images, data, split);
    put(labels, data + split, size - split);
    cg_dataset d = {0};
    cg_err e = {{0}};
    if (cg_idx_load(images, labels, max, &d, &e))
        fuzz_check_err(&e, "cg_idx_load");
    else
        cg_dataset_free(&d);
    return 0;
}
