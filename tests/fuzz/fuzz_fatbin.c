/* fuzz_fatbin.c — the fat binary reader (cg_fatbin_list) on arbitrary bytes:
 * no memory error, every rejection one line, and what it lists is sorted,
 * without duplicates and within CG_FATBIN_MAX_ARCHS. */
#include "fatbin.h"
#include "fuzz.h"

/* Little-endian stores for the seed. */
static void le(unsigned char *p, unsigned long long v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* One entry (header of hsize bytes, then payload) at p; returns its size. */
static size_t entry(unsigned char *p, int kind, int hsize, int arch, const char *payload, size_t plen)
{
    memset(p, 0, (size_t)hsize);
    le(p, (unsigned)kind, 2);
    le(p + 2, 0x0101, 2);
    le(p + 4, (unsigned)hsize, 4);
    le(p + 8, plen, 8);
    le(p + 24, kind == 1 ? 5 : 1, 2); /* minor */
    le(p + 26, kind == 1 ? 8 : 7, 2); /* major */
    le(p + 28, (unsigned)arch, 4);
    memcpy(p + hsize, payload, plen);
    return (size_t)hsize + plen;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = fuzz_seed_dir();
    if (dir) { /* the layout fatbin.h describes: a cubin for sm_75 and sm_90, PTX for 90 */
        static unsigned char b[1024];
        static const char elf[] = "\177ELF fake cubin payload", ptx[] = ".version 8.5\n.target sm_90\n";
        size_t n = 16;
        n += entry(b + n, 2, 64, 75, elf, sizeof elf);
        n += entry(b + n, 2, 64, 90, elf, sizeof elf);
        n += entry(b + n, 1, 80, 90, ptx, sizeof ptx);
        le(b, CG_FATBIN_MAGIC, 4);
        le(b + 4, 1, 2);
        le(b + 6, 16, 2);
        le(b + 8, n - 16, 8);
        int sm[CG_FATBIN_MAX_ARCHS], px[CG_FATBIN_MAX_ARCHS], nsm, npx;
        cg_err e;
        if (cg_fatbin_list(b, n, sm, &nsm, px, &npx, &e)) {
            fprintf(stderr, "seed does not read back: %s\n", e.msg);
            exit(1);
        }
        fuzz_seed(dir, "three.fatbin", b, n);
        memcpy(b + n, b, n); /* two containers in one file */
        fuzz_seed(dir, "two-containers.fatbin", b, 2 * n);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sm[CG_FATBIN_MAX_ARCHS], ptx[CG_FATBIN_MAX_ARCHS], nsm = -1, nptx = -1;
    cg_err e = {{0}};
    if (cg_fatbin_list(data, size, sm, &nsm, ptx, &nptx, &e)) {
        fuzz_check_err(&e, "cg_fatbin_list");
        return 0;
    }
    if (nsm < 0 || nsm > CG_FATBIN_MAX_ARCHS || nptx < 0 || nptx > CG_FATBIN_MAX_ARCHS) abort();
    for (int i = 1; i < nsm; i++)
        if (sm[i - 1] >= sm[i]) abort();
    for (int i = 1; i < nptx; i++)
        if (ptx[i - 1] >= ptx[i]) abort();
    char text[1024];
    cg_fatbin_describe(sm, nsm, ptx, nptx, text, sizeof text);
    if (strchr(text, '\n')) abort();
    return 0;
}
