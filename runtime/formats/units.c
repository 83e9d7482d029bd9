/* units.c — check's units: a network's kernels grouped so that each group can
 * run alone on the reference's tensors (see units.h). */
#include "units.h"
#include "weights.h"

#include <string.h>

/* The tensor's source as the reference holds it: the layer whose output it is
 * (the last of the layers sharing it), -1 the network's float input, -2 the
 * pixels, -3 none (a tensor inside a layer: partials, a conv before its pool). */
static int source_of(const cg_manifest *m, const cg_units *p, int nlayers, int input_float, int t)
{
    for (int i = nlayers - 1; i >= 0; i--)
        if (p->kept[i] && m->l[i].out == t) return i;
    return t == input_float ? -1 : t == m->input ? -2 : -3;
}

/* Union-find over the kernels: the root of k's set. */
static int root(int *parent, int k)
{
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
}

/* The last layer kernel before `before` that writes tensor t, -1 for none; where none
 * writes t itself, the last that writes a view of it (a concat whose inputs all write
 * their slices in place has no kernel of its own). */
static int writer_of(const cg_manifest *m, int before, int t)
{
    for (int k = before - 1; k >= 0; k--)
        for (int j = 0; j < m->k[k].nout; j++)
            if (m->k[k].outs[j] == t) return k;
    for (int k = before - 1; k >= 0; k--)
        for (int j = 0; j < m->k[k].nout; j++)
            if (m->k[k].outs[j] != t && cg_manifest_root(m, m->k[k].outs[j]) == t) return k;
    return -1;
}

int cg_units_plan(const cg_spec *s, const cg_manifest *m, cg_units *p, cg_err *e)
{
    memset(p, 0, sizeof *p);
    if (m->nlayers != s->nlayers)
        return cg_fail(e, "%s: the manifest has %d layers, the spec %d", s->path, m->nlayers, s->nlayers);
    const int nlk = cg_manifest_layer_kernels(m);
    /* the network's float input: what the input kernel writes, where there is one */
    int input_float = -1;
    for (int k = 0; k < nlk; k++)
        if (!strcmp(m->k[k].tpl, "input_u8") && m->k[k].nin == 1 && m->k[k].in[0] == m->input) input_float = m->k[k].out;
    p->dtype[0] = input_float >= 0 ? m->t[input_float].dtype : CG_DT_F32;
    for (int i = 0; i < s->nlayers; i++) {
        p->kept[i] = !m->l[i].into[0];
        p->dtype[i + 1] = p->kept[i] ? m->t[m->l[i].out].dtype : CG_DT_F32;
    }
    for (int i = 0; i < s->nlayers; i++)
        p->holder[i] = p->kept[i] ? source_of(m, p, s->nlayers, input_float, m->l[i].out) : i;
    /* kernels joined where one reads what another wrote that the reference does not hold */
    int parent[CG_MAN_KERNELS];
    for (int k = 0; k < nlk; k++) parent[k] = k;
    for (int k = 0; k < nlk; k++) {
        const cg_mkernel *mk = &m->k[k];
        if (mk->layer_index < 0) continue;
        for (int j = 0; j < mk->nin; j++) {
            if (source_of(m, p, s->nlayers, input_float, mk->in[j]) != -3) continue;
            int w = writer_of(m, k, mk->in[j]);
            if (w < 0 || m->k[w].layer_index < 0)
                return cg_fail(e, "%s: kernel %s reads tensor %s, which no layer's kernel writes before it", s->path,
                               mk->name, m->t[mk->in[j]].name);
            parent[root(parent, k)] = root(parent, w);
        }
    }
    /* a layer's kernels writing one tensor (a first layer's twins, one reading the
     * pixels and one the float input: planner.pixel_twin) are one unit */
    for (int k = 0; k < nlk; k++)
        for (int w = 0; w < k; w++)
            if (m->k[k].layer_index >= 0 && m->k[w].layer_index >= 0 && m->k[k].out == m->k[w].out)
                parent[root(parent, k)] = root(parent, w);
    /* the kernels writing a concat's slices in place (views) and the concat's own kernel,
     * if it has one, are one unit: together they make the concat's tensor */
    for (int k = 0; k < nlk; k++) {
        if (m->k[k].layer_index < 0) continue;
        for (int j = 0; j < m->k[k].nout; j++) {
            int r = cg_manifest_root(m, m->k[k].outs[j]);
            if (r == m->k[k].outs[j]) continue;
            for (int w = 0; w < nlk; w++) {
                if (w == k || m->k[w].layer_index < 0) continue;
                for (int q = 0; q < m->k[w].nout; q++)
                    if (cg_manifest_root(m, m->k[w].outs[q]) == r) parent[root(parent, k)] = root(parent, w);
            }
        }
    }
    /* units numbered in the order of their first kernels */
    int unit_of_root[CG_MAN_KERNELS];
    for (int k = 0; k < CG_MAN_KERNELS; k++) p->kernel_unit[k] = -1, unit_of_root[k] = -1;
    for (int k = 0; k < nlk; k++) {
        if (m->k[k].layer_index < 0) continue;
        int r = root(parent, k);
        if (unit_of_root[r] < 0) unit_of_root[r] = p->nunits++;
        p->kernel_unit[k] = unit_of_root[r];
        p->kernels[p->kernel_unit[k]]++;
    }
    /* a layer is its tensor's writer's: a kept layer's own tensor, or (into=) the
     * add's, written by the conv's kernel (a batch norm folded into that conv too) */
    for (int i = 0; i < s->nlayers; i++) {
        int k = writer_of(m, nlk, m->l[i].out);
        if (k < 0 || p->kernel_unit[k] < 0)
            return cg_fail(e, "%s: layer %s: no layer kernel computes it", s->path, s->layers[i].name);
        p->unit[i] = p->kernel_unit[k];
    }
    /* what a unit reads from outside must be a tensor of its own (a kept layer's) */
    for (int i = 0; i < s->nlayers; i++) {
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        for (int j = 0; j < nin; j++)
            if (in[j] >= 0 && p->unit[in[j]] != p->unit[i] && !p->kept[in[j]])
                return cg_fail(e, "%s: layer %s reads %s, which is computed inside another layer's kernel", s->path,
                               s->layers[i].name, s->layers[in[j]].name);
    }
    return 0;
}

void cg_units_per_layer(const cg_spec *s, cg_units *p)
{
    memset(p, 0, sizeof *p);
    p->nunits = s->nlayers;
    for (int k = 0; k < CG_MAN_KERNELS; k++) p->kernel_unit[k] = -1;
    for (int i = 0; i <= s->nlayers; i++) p->dtype[i] = CG_DT_F32;
    for (int i = 0; i < s->nlayers; i++) p->unit[i] = i, p->kept[i] = 1, p->holder[i] = i;
}

void cg_units_inputs(const cg_spec *s, const cg_units *p, int u, unsigned char need[CG_MAX_LAYERS + 1])
{
    for (int i = 0; i < s->nlayers; i++) {
        if (p->unit[i] != u) continue;
        int in[CG_MAX_INPUTS], nin = cg_layer_inputs(s, i, in);
        for (int j = 0; j < nin; j++)
            if (in[j] < 0) need[0] = 1;
            else if (p->unit[in[j]] != u) need[p->holder[in[j]] + 1] = 1;
    }
}

void cg_units_round(cg_dtype dt, const float *in, float *out, size_t n)
{
    if (dt == CG_DT_BF16)
        for (size_t i = 0; i < n; i++) out[i] = cg_bf16_to_f32(cg_f32_to_bf16(in[i]));
    else if (dt == CG_DT_F16)
        for (size_t i = 0; i < n; i++) out[i] = cg_f16_to_f32(cg_f32_to_f16(in[i]));
    else if (in != out)
        memcpy(out, in, n * sizeof *out);
}
