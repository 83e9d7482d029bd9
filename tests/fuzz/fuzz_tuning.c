/* fuzz_tuning.c — the tuning record reader (cg_tune_parse) on arbitrary text:
 * no memory error, every rejection one line. A record that parses must also
 * survive the rest of its life: written again (cg_tune_format) it reads back
 * to the same text, and applied to a small spec (cg_tune_apply, which parses
 * the winner's params and asks the template about them) it either leaves a
 * one-line notice for a stale record or one line per skipped layer. Seeds:
 * the repository's *.tuning.yaml files (copied by tools/run-fuzz.sh, if any)
 * and records written here by cg_tune_format for the spec below. */
#include "fuzz.h"
#include "gen.h"
#include "spec.h"
#include "tune.h"

/* The spec records are applied to: one small conv and one fc layer, so that
 * the template's check and emit are quick. */
static const char spec_text[] = "network: fuzz-tune\n"
                                "input: {channels: 1, height: 28, width: 28, scale: 1.0, offset: 0.0}\n"
                                "dataset: {name: fashion-mnist}\n"
                                "seed: 1\n"
                                "layers:\n"
                                "  - {name: conv1, op: conv, M: 4, K: 3, bias: true, activation: relu, pool: max2}\n"
                                "  - {name: fc1, op: fc, out: 10, bias: true, activation: none}\n";

static cg_spec spec; /* parsed once; each input applies its record to a copy */
static const cg_tune_device device = {"Fuzz GPU", 90, NULL};

/* A record for spec's layers as `convgen tune` would write it, winners taken
 * from each layer's candidates (index pick), into buf. */
static void seed_record(cg_buf *buf, int pick, const char *version)
{
    static cg_tune_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.version, sizeof r.version, "%s", version);
    snprintf(r.device, sizeof r.device, "%s", device.name);
    r.cc = device.cc, r.sms = 132, r.driver = 13000, r.batch = 10000;
    snprintf(r.network, sizeof r.network, "%s", spec.name);
    static const char *const tpl[] = {"conv2d_direct", "fc_tiled"};
    for (int li = 0; li < 2; li++) {
        cg_candidates cs;
        cg_err e = {{0}};
        if (cg_gen_candidates(&spec, li, tpl[li], 0, &cs, &e) || cs.n < 3) abort();
        cg_tune_entry *t = &r.e[r.n++];
        cg_tune_signature(&spec.layers[li], t->sig, sizeof t->sig);
        snprintf(t->layer, sizeof t->layer, "%s", spec.layers[li].name);
        t->measured = 25, t->candidates = cs.n;
        int w = pick % cs.n;
        snprintf(t->winner.tpl, sizeof t->winner.tpl, "%s", tpl[li]);
        snprintf(t->winner.params, sizeof t->winner.params, "%s", cs.c[w].params);
        t->winner.ms = 0.0125 * (li + 1);
        t->default_ms = 0.05;
        t->nrunners = 2;
        for (int j = 0; j < 2; j++) {
            snprintf(t->runner[j].tpl, sizeof t->runner[j].tpl, "%s", tpl[li]);
            snprintf(t->runner[j].params, sizeof t->runner[j].params, "%s", cs.c[(w + 1 + j) % cs.n].params);
            t->runner[j].ms = 0.02 + 0.001 * j;
        }
        cg_gen_kernel k;
        cg_kernel_launch kl;
        if (cg_gen_emit_one(&spec, li, tpl[li], t->winner.params, &k, &kl, &e)) abort();
        snprintf(t->tpl_hash, sizeof t->tpl_hash, "%s", k.tpl_hash);
        cg_gen_kernel_free(&k);
        cg_candidates_free(&cs);
    }
    cg_err e = {{0}};
    if (cg_tune_format(&r, buf, &e)) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    cg_err e = {{0}};
    if (cg_spec_parse("fuzz/net.yaml", spec_text, sizeof spec_text - 1, &spec, &e)) {
        fprintf(stderr, "fuzz_tuning: the harness's spec: %s\n", e.msg);
        abort();
    }
    const char *dir = fuzz_seed_dir();
    if (dir) {
        static const struct {
            const char *name, *version;
            int pick;
        } seeds[] = {{"record-a.tuning.yaml", CG_VERSION, 1}, {"record-b.tuning.yaml", CG_VERSION, 7},
                     {"stale.tuning.yaml", "0.0.1", 2}};
        for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
            cg_buf b;
            cg_buf_init(&b);
            seed_record(&b, seeds[i].pick, seeds[i].version);
            fuzz_seed(dir, seeds[i].name, b.data, b.len);
            cg_buf_free(&b);
        }
        exit(0);
    }
    return 0;
}

/* Aborts unless text is empty or lines of one message each (no empty line). */
static void check_notice(const char *text, const char *what)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        if (nl == p) {
            fprintf(stderr, "%s: an empty line in: \"%s\"\n", what, text);
            abort();
        }
        p = nl ? nl + 1 : p + strlen(p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cg_tune_record r, again;
    static cg_spec s;
    cg_err e = {{0}};
    if (cg_tune_parse("fuzz/rec.tuning.yaml", (const char *)data, size, &r, &e)) {
        fuzz_check_err(&e, "cg_tune_parse");
        return 0;
    }
    /* written again, it reads back to the same text */
    cg_buf t1, t2;
    cg_buf_init(&t1), cg_buf_init(&t2);
    if (cg_tune_format(&r, &t1, &e)) fuzz_check_err(&e, "cg_tune_format");
    else if (cg_tune_parse("fuzz/again.tuning.yaml", t1.data, t1.len, &again, &e)) {
        fprintf(stderr, "a record that parsed does not read back once written: %s\n%.*s\n", e.msg, (int)t1.len,
                t1.data);
        abort();
    } else if (cg_tune_format(&again, &t2, &e) || t1.len != t2.len || memcmp(t1.data, t2.data, t1.len)) {
        fprintf(stderr, "written twice, the record differs:\n%.*s\n---\n%.*s\n", (int)t1.len, t1.data, (int)t2.len,
                t2.data ? t2.data : "");
        abort();
    }
    cg_buf_free(&t1), cg_buf_free(&t2);
    /* applied to the spec: a stale record leaves one line; otherwise a line per skipped layer */
    s = spec;
    int from[CG_MAX_LAYERS];
    char notice[2048];
    int rc = cg_tune_apply(&s, &r, &device, from, notice, sizeof notice, &e);
    if (rc < 0) fuzz_check_err(&e, "cg_tune_apply");
    else if (rc == 1 && (!notice[0] || strchr(notice, '\n'))) {
        fprintf(stderr, "a stale record's notice is not one line: \"%s\"\n", notice);
        abort();
    } else check_notice(notice, "cg_tune_apply");
    return 0;
}
