/* test_bundle.c — NET.cgb files: the round trip and layout, every single-byte
 * change and every truncation refused in one line, foreign files and other
 * versions named as such, and the writer leaving nothing half-written. */
#include "bundle.h"
#include "check.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

/* DIR/name */
static const char *tmp(const char *name)
{
    static char path[8][256];
    static int slot;
    char *out = path[slot++ % 8];
    snprintf(out, 256, "%s/%s", dir, name);
    return out;
}

static unsigned char fat[1001], wts[333];
static const char *manifest = "# convgen manifest\nkernel conv1 ...\n";
static const char *spec = "name: tiny\ninput: {channels: 1, height: 8, width: 8}\n";

/* The four sections of the test bundle. */
static void sections(cg_blob s[CG_BUNDLE_NSECTIONS])
{
    for (size_t k = 0; k < sizeof fat; k++) fat[k] = (unsigned char)(k * 7 + 3);
    for (size_t k = 0; k < sizeof wts; k++) wts[k] = (unsigned char)(k ^ 0x5a);
    s[CG_BUNDLE_MANIFEST] = (cg_blob){manifest, strlen(manifest)};
    s[CG_BUNDLE_FATBIN] = (cg_blob){fat, sizeof fat};
    s[CG_BUNDLE_WEIGHTS] = (cg_blob){wts, sizeof wts};
    s[CG_BUNDLE_SPEC] = (cg_blob){spec, strlen(spec)};
}

/* Little-endian u32/u64 at p. */
static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

/* How many entries DIR holds (temp files left behind would show). */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *x; d && (x = readdir(d));) n += x->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void test_round_trip(void)
{
    cg_blob s[CG_BUNDLE_NSECTIONS];
    sections(s);
    cg_err e;
    const char *p = tmp("net.cgb");
    CHECK(cg_bundle_write(p, s, &e) == 0, "write: %s", e.msg);
    cg_bundle b;
    CHECK(cg_bundle_read(p, &b, &e) == 0, "read: %s", e.msg);
    for (int k = 0; k < CG_BUNDLE_NSECTIONS; k++)
        CHECK(b.sec[k].len == s[k].len && memcmp(b.sec[k].data, s[k].data, s[k].len) == 0,
              "section %s back", cg_bundle_section_name(k));
    /* the layout bundle.h describes */
    const unsigned char *f = (const unsigned char *)b.file.data;
    CHECK(b.file.len > 8 && memcmp(f, "\x89" "CGB\r\n\x1a\n", 8) == 0, "magic");
    CHECK(le(f + 8, 4) == 1 && le(f + 12, 4) == 4 && le(f + 16, 8) == b.file.len, "version, "
          "count, length");
    size_t hl = 24 + 32 * 4 + 8;
    CHECK(le(f + hl - 8, 4) == crc32(0, f, (uInt)(hl - 8)), "header CRC");
    size_t at = hl;
    for (int k = 0; k < 4; k++) {
        const unsigned char *t = f + 24 + 32 * k;
        CHECK(le(t, 4) == (uint64_t)k && le(t + 8, 8) == at && le(t + 16, 8) == s[k].len &&
                  le(t + 24, 4) == crc32(0, s[k].data, (uInt)s[k].len) && at % 8 == 0,
              "table entry %d", k);
        at += k < 3 ? (s[k].len + 7) / 8 * 8 : s[k].len;
    }
    CHECK(at == b.file.len, "nothing after the spec: %zu of %zu", at, b.file.len);
    cg_bundle_free(&b);

    /* empty sections (a CPU-only bundle without a fat binary) */
    s[CG_BUNDLE_FATBIN] = (cg_blob){NULL, 0};
    CHECK(cg_bundle_write(p, s, &e) == 0, "write empty fatbin: %s", e.msg);
    CHECK(cg_bundle_read(p, &b, &e) == 0 && b.sec[CG_BUNDLE_FATBIN].len == 0 &&
              b.sec[CG_BUNDLE_WEIGHTS].len == sizeof wts,
          "empty fatbin read: %s", e.msg);
    cg_bundle_free(&b);
}

/* Every byte of a bundle changed three ways, and every truncation: each one
 * refused, in one line naming the file, with the kind of damage. */
static void test_damage(void)
{
    cg_blob s[CG_BUNDLE_NSECTIONS];
    sections(s);
    cg_buf good;
    cg_buf_init(&good);
    cg_err e;
    CHECK(cg_bundle_encode("x.cgb", s, &good, &e) == 0, "encode: %s", e.msg);
    unsigned char *m = malloc(good.len + 16);
    cg_blob out[CG_BUNDLE_NSECTIONS];
    int accepted = 0, oneline = 1, named = 1, tried = 0;
    static const char *kinds[] = {"damaged bundle", "truncated bundle", "not a convgen bundle",
                                  "bundle format version"};
    int kind_ok = 1;
    for (size_t off = 0; m && off < good.len; off++)
        for (int v = 0; v < 3; v++) {
            memcpy(m, good.data, good.len);
            unsigned char was = m[off];
            m[off] = v == 0 ? (unsigned char)(was ^ 1) : v == 1 ? (unsigned char)(was ^ 0x80)
                                                              : (unsigned char)~was;
            tried++;
            if (cg_bundle_parse("x.cgb", m, good.len, out, &e) == 0) {
                if (accepted++ < 3) printf("FAIL byte %zu changed (%02x -> %02x) accepted\n", off, was, m[off]);
                continue;
            }
            oneline &= strchr(e.msg, '\n') == NULL;
            named &= strncmp(e.msg, "x.cgb: ", 7) == 0;
            int known = 0;
            for (int k = 0; k < 4; k++) known |= strstr(e.msg, kinds[k]) != NULL;
            if (!known && kind_ok) printf("FAIL unnamed damage: %s\n", e.msg);
            kind_ok &= known;
        }
    CHECK(accepted == 0, "%d of %d single-byte changes accepted", accepted, tried);
    CHECK(oneline && named && kind_ok, "damage: one line naming the file and the damage");
    int trunc_ok = 1;
    for (size_t len = 0; len < good.len; len++) {
        int rc = cg_bundle_parse("x.cgb", good.data, len, out, &e);
        int ok = rc != 0 && !strchr(e.msg, '\n') && strncmp(e.msg, "x.cgb: ", 7) == 0 &&
                 (strstr(e.msg, "truncated bundle") || (len < 4 && strstr(e.msg, "not a convgen")));
        if (!ok && trunc_ok) printf("FAIL truncated to %zu: rc %d, %s\n", len, rc, e.msg);
        trunc_ok &= ok;
    }
    CHECK(trunc_ok, "every truncation refused as truncated");
    /* bytes appended */
    memcpy(m, good.data, good.len);
    memset(m + good.len, 0, 16);
    CHECK(cg_bundle_parse("x.cgb", m, good.len + 16, out, &e) != 0, "appended bytes accepted");
    CHECK_CONTAINS(e.msg, "x.cgb: damaged bundle: 16 bytes after the");
    /* specific messages */
    memcpy(m, good.data, good.len);
    m[170] ^= 1; /* inside the manifest */
    CHECK(cg_bundle_parse("x.cgb", m, good.len, out, &e) != 0, "manifest damage");
    CHECK_CONTAINS(e.msg, "x.cgb: damaged bundle: section 'manifest' (bytes 160..");
    memcpy(m, good.data, good.len);
    m[good.len - 1] ^= 1;
    CHECK(cg_bundle_parse("x.cgb", m, good.len, out, &e) != 0, "spec damage");
    CHECK_CONTAINS(e.msg, "section 'spec'");
    CHECK_CONTAINS(e.msg, "fails its CRC-32 check");
    memcpy(m, good.data, good.len);
    m[20] ^= 4; /* the file length, inside the header */
    CHECK(cg_bundle_parse("x.cgb", m, good.len, out, &e) != 0, "header damage");
    CHECK_CONTAINS(e.msg, "x.cgb: damaged bundle: its header (bytes 0..159) fails its CRC-32");
    memcpy(m, good.data, good.len);
    m[4] = '\n', m[5] = 0x1a; /* \r\n -> \n, as a text-mode copy does */
    CHECK(cg_bundle_parse("x.cgb", m, good.len, out, &e) != 0, "text-mode damage");
    CHECK_CONTAINS(e.msg, "magic at byte offset 0 was altered");
    CHECK(cg_bundle_parse("x.cgb", good.data, 100, out, &e) != 0, "cut in the header");
    CHECK_CONTAINS(e.msg, "x.cgb: truncated bundle: 100 bytes, shorter than its 160-byte header");
    CHECK(cg_bundle_parse("x.cgb", good.data, 500, out, &e) != 0, "cut in a section");
    CHECK_CONTAINS(e.msg, "truncated bundle: 500 bytes, its header says");
    free(m);
    cg_buf_free(&good);
}

/* Another version (header CRC valid) and files that are no bundle at all. */
static void test_foreign(void)
{
    cg_blob s[CG_BUNDLE_NSECTIONS], out[CG_BUNDLE_NSECTIONS];
    sections(s);
    cg_buf b;
    cg_buf_init(&b);
    cg_err e;
    CHECK(cg_bundle_encode("x.cgb", s, &b, &e) == 0, "encode");
    unsigned char *f = (unsigned char *)b.data;
    f[8] = 2;
    uint32_t c = (uint32_t)crc32(0, f, 152);
    for (int k = 0; k < 4; k++) f[152 + k] = (unsigned char)(c >> (8 * k));
    CHECK(cg_bundle_parse("v2.cgb", f, b.len, out, &e) != 0, "version 2 accepted");
    CHECK_CONTAINS(e.msg, "v2.cgb: bundle format version 2; this convgen (" CG_VERSION ") reads "
                          "version 1 (written by a newer convgen?)");
    f[8] = 0xff, f[11] = 0xff;
    CHECK(cg_bundle_parse("vx.cgb", f, b.len, out, &e) != 0, "version garbage accepted");
    CHECK_CONTAINS(e.msg, "(damaged?)");
    cg_buf_free(&b);
    static const struct { const char *what; const char *bytes; size_t n; } foreign[] = {
        {"npy", "\x93NUMPY\x01\x00\x76\x00{'descr'", 18},
        {"safetensors", "\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":", 13},
        {"fatbin", "\x50\xed\x55\xba\x01\x00\x10\x00", 8},
        {"text", "name: ece408-2017\n", 18},
        {"empty", "", 0},
        {"gzip", "\x1f\x8b\x08\x00", 4}};
    for (size_t k = 0; k < sizeof foreign / sizeof *foreign; k++) {
        CHECK(cg_bundle_parse("f.cgb", foreign[k].bytes, foreign[k].n, out, &e) != 0,
              "%s accepted", foreign[k].what);
        CHECK_CONTAINS(e.msg, "f.cgb: not a convgen bundle (it does not begin with \\x89CGB");
    }
    cg_bundle bd;
    CHECK(cg_bundle_read(dir, &bd, &e) != 0, "directory read");
    CHECK_CONTAINS(e.msg, "is a directory, not a regular file");
    CHECK(cg_bundle_read(tmp("absent.cgb"), &bd, &e) != 0, "missing file read");
    CHECK_CONTAINS(e.msg, "absent.cgb: cannot open");
    const char *fifo = tmp("fifo.cgb");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(cg_bundle_read(fifo, &bd, &e) != 0, "FIFO read");
    CHECK_CONTAINS(e.msg, "fifo.cgb: is a FIFO");
    unlink(fifo);
}

/* The writer: atomic, refusing what it cannot write, leaving nothing behind. */
static void test_write(void)
{
    cg_blob s[CG_BUNDLE_NSECTIONS];
    sections(s);
    cg_err e;
    const char *p = tmp("w.cgb");
    CHECK(cg_bundle_write(p, s, &e) == 0, "write: %s", e.msg);
    int before = entries();
    /* replaced whole */
    s[CG_BUNDLE_SPEC] = (cg_blob){"name: other\n", 12};
    CHECK(cg_bundle_write(p, s, &e) == 0, "rewrite: %s", e.msg);
    cg_bundle b;
    CHECK(cg_bundle_read(p, &b, &e) == 0 && b.sec[CG_BUNDLE_SPEC].len == 12, "rewritten");
    cg_bundle_free(&b);
    CHECK(entries() == before, "no temporary file left: %d entries, was %d", entries(), before);
    /* too large: refused before anything is read or written */
    cg_blob big[CG_BUNDLE_NSECTIONS];
    memcpy(big, s, sizeof big);
    big[CG_BUNDLE_MANIFEST] = (cg_blob){fat, CG_BUNDLE_MAX + 1};
    const char *q = tmp("big.cgb");
    CHECK(cg_bundle_write(q, big, &e) != 0, "oversized bundle written");
    CHECK_CONTAINS(e.msg, "big.cgb: the bundle would exceed 1073741824 bytes (section 'manifest'");
    CHECK(access(q, F_OK) != 0 && entries() == before, "nothing written for it");
    big[CG_BUNDLE_MANIFEST] = (cg_blob){NULL, 5};
    CHECK(cg_bundle_write(q, big, &e) != 0, "NULL section written");
    CHECK_CONTAINS(e.msg, "section 'manifest' has no bytes");
    /* bad places */
    CHECK(cg_bundle_write(tmp("no/such/dir.cgb"), s, &e) != 0, "missing directory");
    CHECK_CONTAINS(e.msg, "no/such/dir.cgb: ");
    CHECK(cg_bundle_write(dir, s, &e) != 0, "written over a directory");
    CHECK_CONTAINS(e.msg, "is a directory");
    const char *link = tmp("link.cgb");
    CHECK(symlink(p, link) == 0, "symlink");
    CHECK(cg_bundle_write(link, s, &e) != 0, "written through a symbolic link");
    CHECK(entries() == before + 1, "only the link was added");
}

int main(void)
{
    strcpy(dir, "/tmp/cg_test_bundle_XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    test_round_trip();
    test_damage();
    test_foreign();
    test_write();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", dir);
    return cg_test_done("bundle");
}
