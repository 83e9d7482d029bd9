/* memplan.c — tensor live ranges and their places in one arena (see memplan.h). */
#include "memplan.h"

#include <stdio.h>
#include <string.h>

void cg_memplan_live(const cg_manifest *m, int keep_all, cg_memplan *p)
{
    /* the per-layer kernels' steps; the whole-network kernel writes the same
     * tensors in the same order, so their plan serves it too */
    const int end = cg_manifest_layer_kernels(m);
    p->n = m->ntensors;
    p->keep_all = keep_all;
    p->sum = 0;
    for (int t = 0; t < m->ntensors; t++) {
        p->first[t] = end + 1, p->last[t] = -1;
        /* a view (view=) has no bytes of its own: it lies in its parent's */
        p->bytes[t] = m->t[t].view ? 0 : (size_t)m->t[t].elems * cg_dtype_size(m->t[t].dtype);
        p->sum += p->bytes[t];
    }
    for (int k = 0; k < end; k++) {
        const cg_mkernel *kr = &m->k[k];
        int touched[CG_MAX_INPUTS + CG_MAX_OUTPUTS], nt = 0;
        for (int j = 0; j < kr->nout && j < CG_MAX_OUTPUTS; j++) touched[nt++] = kr->outs[j];
        for (int j = 0; j < kr->nin && j < CG_MAX_INPUTS; j++) touched[nt++] = kr->in[j];
        for (int j = 0; j < nt; j++) {
            /* a view's use is its parent's: the parent is live from the first
             * kernel writing any of its slices */
            int t = cg_manifest_root(m, touched[j]);
            if (t < 0 || t >= m->ntensors) continue;
            if (k < p->first[t]) p->first[t] = k;
            if (k > p->last[t]) p->last[t] = k;
        }
        /* a float input is uploaded where the kernel reading the uint8 input
         * writes, before any kernel runs */
        for (int j = 0; j < kr->nin; j++)
            if (kr->in[j] == m->input && kr->out >= 0 && kr->out < m->ntensors) p->first[kr->out] = 0;
    }
    for (int t = 0; t < m->ntensors; t++) {
        if (m->t[t].view) continue;
        int kept = keep_all || t == m->input || t == m->output || t == m->predict || p->last[t] < 0;
        if (kept) p->first[t] = 0, p->last[t] = end;
        if (t == m->input) p->first[t] = 0; /* uploaded before the first kernel */
    }
    /* a view lives as long as its parent (what is kept of one is kept of the other) */
    for (int t = 0; t < m->ntensors; t++)
        if (m->t[t].view) p->first[t] = p->first[m->t[t].parent], p->last[t] = p->last[m->t[t].parent];
}

void cg_memplan_assign(int n, const size_t *bytes, const int *first, const int *last, size_t align, size_t *off,
                       size_t *arena)
{
    int order[CG_MAX_TENSORS], placed[CG_MAX_TENSORS], np = 0;
    size_t size[CG_MAX_TENSORS];
    if (n > CG_MAX_TENSORS) n = CG_MAX_TENSORS;
    for (int i = 0; i < n; i++) {
        size[i] = (bytes[i] + align - 1) & ~(align - 1);
        /* largest first, ties by index: insertion into order[0..i) */
        int at = i;
        while (at > 0 && size[order[at - 1]] < size[i]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    *arena = 0;
    for (int a = 0; a < n; a++) {
        int i = order[a];
        /* the placed tensors live while i is, by offset */
        int near[CG_MAX_TENSORS], nn = 0;
        for (int b = 0; b < np; b++) {
            int j = placed[b];
            if (first[j] > last[i] || first[i] > last[j] || size[j] == 0) continue;
            int at = nn++;
            while (at > 0 && off[near[at - 1]] > off[j]) {
                near[at] = near[at - 1];
                at--;
            }
            near[at] = j;
        }
        size_t cand = 0;
        for (int b = 0; b < nn && size[i] > 0; b++) {
            int j = near[b];
            if (cand + size[i] <= off[j]) break; /* fits in the gap before j */
            if (off[j] + size[j] > cand) cand = off[j] + size[j];
        }
        off[i] = cand;
        placed[np++] = i;
        if (cand + size[i] > *arena) *arena = cand + size[i];
    }
}

void cg_memplan_make(const cg_manifest *m, int keep_all, long long batch, cg_memplan *p)
{
    cg_memplan_live(m, keep_all, p);
    p->batch = batch < 1 ? 1 : batch;
    for (int t = 0; t < p->n; t++) p->size[t] = p->bytes[t] * (size_t)p->batch;
    cg_memplan_assign(p->n, p->size, p->first, p->last, CG_MEMPLAN_ALIGN, p->off, &p->arena);
    /* a view's first element: its parent's image 0 from view_off on (its image i
     * then lies i images of the parent further: a kernel steps by the parent's) */
    for (int t = 0; t < p->n; t++)
        if (m->t[t].view)
            p->off[t] = p->off[m->t[t].parent] + (size_t)m->t[t].view_off * cg_dtype_size(m->t[t].dtype);
}

size_t cg_memplan_per_image(const cg_memplan *p)
{
    size_t off[CG_MAX_TENSORS], arena;
    cg_memplan_assign(p->n, p->bytes, p->first, p->last, 1, off, &arena);
    return arena;
}

int cg_memplan_kept(const cg_memplan *p, const cg_manifest *m, int t)
{
    return t >= 0 && t < p->n && p->last[t] >= cg_manifest_layer_kernels(m);
}

void cg_memplan_bytes_text(size_t b, char *buf, size_t n)
{
    const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1000 && u < 4) v /= 1000, u++;
    if (u == 0) snprintf(buf, n, "%zu B", b);
    else snprintf(buf, n, "%.1f %s", v, unit[u]);
}

void cg_memplan_describe(const cg_memplan *p, char *buf, size_t n)
{
    char a[32], s[32];
    cg_memplan_bytes_text(cg_memplan_per_image(p), a, sizeof a);
    cg_memplan_bytes_text(p->sum, s, sizeof s);
    snprintf(buf, n, "%s %s (%s without reuse)", a, p->keep_all ? "every tensor kept" : "planned", s);
}
