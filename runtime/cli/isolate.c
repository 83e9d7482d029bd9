/* isolate.c — check's isolated pass (see isolate.h). */
#include "isolate.h"
#include "cli.h"
#include "cpu.h"
#include "net_internal.h"
#include "units.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cg_alone_wanted(const cg_spec *s, int want[CG_MAX_LAYERS])
{
    double tol[CG_MAX_LAYERS];
    cg_spec_tols(s, tol);
    int n = 0;
    for (int i = 0; i < s->nlayers; i++) n += want[i] = tol[i] > CG_HARNESS_TOL;
    return n;
}

/* A library failure's message into e (naming the unit), its exit status. */
static int unit_fail(const cg_net *net, cg_status st, const cg_spec *s, const cg_units *p, int u, cg_err *e)
{
    int first = 0;
    while (first < s->nlayers && p->unit[first] != u) first++;
    cg_fail(e, "layer %s run alone: %s", first < s->nlayers ? s->layers[first].name : "?", cg_net_error(net));
    return cg_exit_of(st);
}

/* Unit u: its inputs rounded, run on dut and ref, its layers compared into r. */
static int check_unit(cg_net *dut, cg_net *ref, const cg_spec *s, const cg_units *p, int u, const unsigned char *pixels,
                      long long n, float *const *act, const double *tol, cg_alone *r, cg_err *e)
{
    unsigned char need[CG_MAX_LAYERS + 1] = {0};
    cg_units_inputs(s, p, u, need);
    const float *ext[CG_MAX_LAYERS + 1] = {0};
    float *own[CG_MAX_LAYERS + 1] = {0}, *got[CG_MAX_LAYERS] = {0}, *want[CG_MAX_LAYERS] = {0};
    int rounded = 0, rc = 0, nl = 0;
    const size_t img = (size_t)s->C * s->H * s->W;
    for (int slot = 0; slot <= s->nlayers && !rc; slot++) {
        if (!need[slot]) continue;
        size_t count = (size_t)n * (slot ? (size_t)cg_layer_out_elems(&s->layers[slot - 1]) : img);
        int narrow = p->dtype[slot] == CG_DT_F16 || p->dtype[slot] == CG_DT_BF16;
        if (slot && !narrow) {
            ext[slot] = act[slot - 1];
            continue;
        }
        /* the network's float input (made from the pixels as the reference makes it), or a 16-bit tensor */
        if (!(own[slot] = malloc(count * sizeof(float)))) {
            rc = (cg_fail(e, "out of memory for %zu floats", count), CG_EXIT_IO);
            break;
        }
        if (slot) cg_units_round(p->dtype[slot], act[slot - 1], own[slot], count);
        else cg_cpu_input(s, pixels, (int)n, own[0]), cg_units_round(p->dtype[0], own[0], own[0], count);
        rounded |= narrow;
        ext[slot] = own[slot];
    }
    for (int i = 0; i < s->nlayers && !rc; i++) {
        if (p->unit[i] != u) continue;
        nl++;
        size_t count = (size_t)n * (size_t)cg_layer_out_elems(&s->layers[i]);
        got[i] = malloc(count * sizeof(float));
        want[i] = rounded ? malloc(count * sizeof(float)) : act[i];
        if (!got[i] || !want[i]) rc = (cg_fail(e, "out of memory for %zu floats", count), CG_EXIT_IO);
        for (size_t q = 0; got[i] && q < count; q++) got[i][q] = NAN; /* what the GPU does not write */
    }
    cg_status st = CG_STATUS_OK;
    if (!rc && (st = cg_net_run_unit(dut, p, u, n, pixels, ext, got))) rc = unit_fail(dut, st, s, p, u, e);
    if (!rc && rounded && (st = cg_net_run_unit(ref, p, u, n, pixels, ext, want))) rc = unit_fail(ref, st, s, p, u, e);
    for (int i = 0; i < s->nlayers && !rc; i++) {
        if (p->unit[i] != u || !p->kept[i]) continue;
        size_t count = (size_t)n * (size_t)cg_layer_out_elems(&s->layers[i]);
        cg_harness_compare(got[i], want[i], count, tol[i], &r->d[i]);
        r->alone[i] = 1, r->tol[i] = tol[i], r->kernels[i] = p->kernels[u], r->layers[i] = nl;
    }
    for (int i = 0; i < s->nlayers; i++) {
        free(got[i]);
        if (rounded) free(want[i]);
    }
    for (int slot = 0; slot <= s->nlayers; slot++) free(own[slot]);
    return rc;
}

int cg_check_alone(cg_net *dut, cg_net *ref, const cg_spec *s, const unsigned char *pixels, long long n,
                   float *const *act, const int want[CG_MAX_LAYERS], cg_alone *r, cg_err *e)
{
    memset(r, 0, sizeof *r);
    cg_units *p = malloc(sizeof *p);
    if (!p) return cg_fail(e, "out of memory"), CG_EXIT_IO;
    cg_status st = cg_net_units(dut, p);
    if (st) {
        cg_fail(e, "%s: its units: %s", s->path, cg_net_error(dut));
        return free(p), cg_exit_of(st);
    }
    double tol[CG_MAX_LAYERS];
    cg_unit_tols(s, p->unit, tol);
    int rc = 0;
    for (int u = 0; u < p->nunits && !rc; u++) {
        int any = 0;
        for (int i = 0; i < s->nlayers; i++) any |= p->unit[i] == u && want[i] && p->kept[i];
        if (any) rc = check_unit(dut, ref, s, p, u, pixels, n, act, tol, r, e);
    }
    free(p);
    return rc;
}

void cg_alone_merge(cg_alone *r, const cg_alone *o, int nlayers)
{
    for (int i = 0; i < nlayers; i++) {
        if (!o->alone[i]) continue;
        if (!r->alone[i]) {
            r->alone[i] = 1, r->d[i] = o->d[i], r->tol[i] = o->tol[i];
            r->kernels[i] = o->kernels[i], r->layers[i] = o->layers[i];
            continue;
        }
        cg_harness_diff *d = &r->d[i];
        const cg_harness_diff *x = &o->d[i];
        d->n += x->n, d->nonfinite += x->nonfinite;
        d->rel_l2 = fmax(d->rel_l2, x->rel_l2);
        d->max_abs = fmax(d->max_abs, x->max_abs), d->max_rel = fmax(d->max_rel, x->max_rel);
        d->ok = d->ok && x->ok;
    }
}
