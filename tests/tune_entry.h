/* tune_entry.h — a tuning record's layer entry made as `convgen tune --batch N` writes
 * one, for tests of records (test_tune, test_tune_verify): layer li of s at bucket (0:
 * the large batch) on an sm_90 device, template tpl's candidate `pick` for that bucket's
 * target, with its template and kernel hashes; winner.ms 0.001, nothing else timed. */
#ifndef CG_TUNE_ENTRY_H
#define CG_TUNE_ENTRY_H
#include <stdio.h>
#include <string.h>

#include "aot.h"
#include "check.h"
#include "gen.h"
#include "tune.h"

static int tune_entry_for(const cg_spec *s, int li, int bucket, const char *tpl, int pick, cg_tune_entry *t)
{
    cg_target tg;
    int cc = 90;
    cg_aot_target(&cc, 1, &tg);
    tg.batch = bucket;
    cg_err e = {{0}};
    cg_candidates cs;
    memset(t, 0, sizeof *t);
    if (cg_gen_candidates_for(s, &tg, li, tpl, 0, bucket ? bucket : 10000, &cs, &e) || !cs.n) {
        CHECK(0, "%s candidates for %s: %s", tpl, s->layers[li].name, e.msg);
        return -1;
    }
    cg_tune_signature(&s->layers[li], t->sig, sizeof t->sig);
    t->bucket = bucket;
    snprintf(t->layer, sizeof t->layer, "%s", s->layers[li].name);
    t->measured = t->candidates = cs.n;
    snprintf(t->winner.tpl, sizeof t->winner.tpl, "%s", tpl);
    snprintf(t->winner.params, sizeof t->winner.params, "%s", cs.c[pick % cs.n].params);
    t->winner.ms = 0.001;
    cg_candidates_free(&cs);
    cg_gen_kernel k;
    cg_kernel_launch kl;
    if (cg_gen_emit_one_for(s, &tg, li, tpl, t->winner.params, &k, &kl, &e)) {
        CHECK(0, "%s %s: %s", tpl, t->winner.params, e.msg);
        return -1;
    }
    snprintf(t->tpl_hash, sizeof t->tpl_hash, "%s", k.tpl_hash);
    cg_tune_kernel_hash(k.source, t->kernel_hash);
    cg_gen_kernel_free(&k);
    return 0;
}

#endif
