/* test_memplan.c — the memory plan (runtime/formats/memplan.c): live ranges
 * from a manifest's kernels and the tensors' places in one arena. Chains take
 * two buffers in turn; a residual block's tensor stays apart from what runs
 * before its add; concat and a three-input add keep every input apart from
 * their output; random DAGs never give two tensors live at once overlapping
 * bytes, and run through the plan (each kernel a function of its inputs'
 * bytes, executed on the host in one arena) they compute what separate buffers
 * compute, half of them with concats whose parts are views written by kernels of
 * their own (view=: no bytes, the parent live from its first part's kernel);
 * keep_all places every tensor apart; offsets are aligned; a
 * ResNet-18-shaped manifest needs well under the sum of its tensors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memplan.h"

static int add_tensor(cg_manifest *m, const char *name, cg_dtype dt, long long elems)
{
    cg_mtensor *t = &m->t[m->ntensors];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt, t->elems = elems;
    return m->ntensors++;
}

/* A tensor that is a view (view=) of tensor `parent`: its image i is parent's
 * elements off..off+elems-1 of image i. */
static int add_view(cg_manifest *m, const char *name, int parent, long long off, long long elems)
{
    int t = add_tensor(m, name, m->t[parent].dtype, elems);
    m->t[t].view = 1, m->t[t].parent = parent, m->t[t].view_off = off;
    return t;
}

/* A kernel reading ins[0..nin) and writing a new f32 tensor of `elems`. */
static int add_kernel(cg_manifest *m, const char *name, const int *ins, int nin, int out)
{
    cg_mkernel *k = &m->k[m->nkernels++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->layer, sizeof k->layer, "%s", name);
    for (int j = 0; j < nin; j++) k->in[j] = ins[j];
    k->nin = nin, k->out = k->outs[0] = out, k->nout = 1;
    return out;
}

/* The last kernel made writes tensor t too (its out list's next). */
static int also_writes(cg_manifest *m, int t)
{
    cg_mkernel *k = &m->k[m->nkernels - 1];
    k->outs[k->nout++] = t;
    return t;
}

static int op(cg_manifest *m, const char *name, long long elems, const int *ins, int nin)
{
    return add_kernel(m, name, ins, nin, add_tensor(m, name, CG_DT_F32, elems));
}
static int op1(cg_manifest *m, const char *name, long long elems, int in) { return op(m, name, elems, &in, 1); }

/* pixels (u8) -> input (f32): the start of every manifest here */
static int start(cg_manifest *m, long long elems)
{
    memset(m, 0, sizeof *m);
    m->max_batch = 1 << 20;
    m->input = add_tensor(m, "pixels", CG_DT_U8, elems);
    return op1(m, "input", elems, m->input);
}

/* scores into `output`, then argmax into `predict` */
static void finish(cg_manifest *m, int scores)
{
    m->output = scores;
    m->predict = add_kernel(m, "predict", &scores, 1, add_tensor(m, "predict", CG_DT_I32, 1));
}

static int overlap(size_t a, size_t na, size_t b, size_t nb) { return na && nb && a < b + nb && b < a + na; }

/* Every invariant of a plan; returns the failures (each CHECKed). */
static int invariants(const cg_manifest *m, const cg_memplan *p, const char *what)
{
    int bad = 0;
    for (int i = 0; i < p->n; i++) {
        /* a view: no bytes of its own, its place its parent's plus its offset, live as its parent */
        const cg_mtensor *v = &m->t[i];
        if (v->view && (p->bytes[i] || p->off[i] != p->off[v->parent] + (size_t)v->view_off * 4 ||
                        p->first[i] != p->first[v->parent] || p->last[i] != p->last[v->parent])) {
            bad++;
            CHECK(0, "%s: view %s at %zu (%zu bytes), live %d..%d; its parent %s at %zu, live %d..%d", what, v->name,
                  p->off[i], p->bytes[i], p->first[i], p->last[i], m->t[v->parent].name, p->off[v->parent],
                  p->first[v->parent], p->last[v->parent]);
        }
        if ((!v->view && p->off[i] % CG_MEMPLAN_ALIGN) || p->off[i] + p->size[i] > p->arena || p->first[i] > p->last[i] ||
            p->size[i] != p->bytes[i] * (size_t)p->batch) {
            bad++;
            CHECK(0, "%s: tensor %d at %zu + %zu (arena %zu), live %d..%d", what, i, p->off[i], p->size[i], p->arena,
                  p->first[i], p->last[i]);
        }
        for (int j = i + 1; j < p->n; j++) {
            int live = p->first[i] <= p->last[j] && p->first[j] <= p->last[i];
            if (live && overlap(p->off[i], p->size[i], p->off[j], p->size[j])) {
                bad++;
                CHECK(0, "%s: tensors %s (%d..%d at %zu+%zu) and %s (%d..%d at %zu+%zu) live together overlap", what,
                      m->t[i].name, p->first[i], p->last[i], p->off[i], p->size[i], m->t[j].name, p->first[j],
                      p->last[j], p->off[j], p->size[j]);
            }
        }
    }
    /* what a kernel writes is apart from what it reads, and its outputs from each other */
    for (int k = 0; k < m->nkernels; k++)
        for (int o = 0; o < m->k[k].nout; o++) {
            int a = m->k[k].outs[o];
            for (int j = 0; j < m->k[k].nin; j++) {
                int b = m->k[k].in[j];
                if (overlap(p->off[a], p->size[a], p->off[b], p->size[b])) {
                    bad++;
                    CHECK(0, "%s: kernel %d writes %s over its input %s", what, k, m->t[a].name, m->t[b].name);
                }
            }
            for (int q = o + 1; q < m->k[k].nout; q++) {
                int b = m->k[k].outs[q];
                if (overlap(p->off[a], p->size[a], p->off[b], p->size[b])) {
                    bad++;
                    CHECK(0, "%s: kernel %d writes %s and %s over each other", what, k, m->t[a].name, m->t[b].name);
                }
            }
        }
    int kept[] = {m->input, m->output, m->predict};
    for (int i = 0; i < 3; i++)
        if (!cg_memplan_kept(p, m, kept[i])) {
            bad++;
            CHECK(0, "%s: %s not kept to the end", what, m->t[kept[i]].name);
        }
    return bad;
}

static void test_chain(cg_manifest *m)
{
    int t = start(m, 1000);
    int mid[10];
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        t = mid[i] = op1(m, name, 1000, t);
    }
    finish(m, op1(m, "softmax", 10, t));
    cg_memplan *p = malloc(sizeof *p);
    cg_memplan_make(m, 0, 1, p);
    CHECK(invariants(m, p, "chain") == 0, "chain");
    /* the chain's tensors take two places in turn (input f32 is the first c0 reads) */
    size_t places[16];
    int np = 0;
    for (int i = 0; i < 10; i++) {
        int seen = 0;
        for (int j = 0; j < np; j++) seen |= places[j] == p->off[mid[i]];
        if (!seen) places[np++] = p->off[mid[i]];
    }
    CHECK(np == 2, "a chain of 10 layers took %d places", np);
    /* pixels (1000 B), two of 4000, and the rest small: far below 12 x 4000 */
    CHECK(p->arena <= 1024 + 2 * 4096 + 4096 + 256 + 256, "chain arena %zu bytes", p->arena);
    CHECK(p->sum == 1000 + 11 * 4000 + 40 + 4, "chain sum %zu", p->sum);
    /* step k is kernel k: c3 (kernel 4) lives from 4 to 5 (c4 reads it) */
    CHECK(p->first[mid[3]] == 4 && p->last[mid[3]] == 5, "c3 live %d..%d", p->first[mid[3]], p->last[mid[3]]);
    CHECK(p->first[m->input] == 0 && p->last[m->input] == m->nkernels, "pixels live %d..%d", p->first[m->input],
          p->last[m->input]);
    CHECK(!cg_memplan_kept(p, m, mid[3]) && cg_memplan_kept(p, m, m->output), "kept");
    free(p);
}

/* A small-batch network's tail in one kernel (templates/ops/tail.lua): conv,
 * fc1, then one kernel writing fc2, prob and predict (no argmax kernel). Its
 * three outputs live from its step, apart from fc1 and from each other; fc2 is
 * read by no kernel after it, yet written: it may not share the bytes of
 * anything live at that step; prob and predict are kept. */
static void test_tail(cg_manifest *m)
{
    int x = start(m, 784);
    int c1 = op1(m, "conv1", 7200, x);
    int f1 = op1(m, "fc1", 500, c1);
    int f2 = op1(m, "fc2", 10, f1);
    int prob = also_writes(m, add_tensor(m, "prob", CG_DT_F32, 10));
    int pred = also_writes(m, add_tensor(m, "predict", CG_DT_I32, 1));
    m->output = prob, m->predict = pred;
    cg_memplan *p = malloc(sizeof *p);
    for (long long batch = 1; batch <= 8; batch += 7) {
        cg_memplan_make(m, 0, batch, p);
        CHECK(invariants(m, p, "tail") == 0, "tail, batch %lld", batch);
        int k = m->nkernels - 1;
        CHECK(m->k[k].nout == 3 && p->first[f2] == k && p->last[f2] == k, "fc2 live %d..%d (the tail is step %d)",
              p->first[f2], p->last[f2], k);
        CHECK(p->first[prob] == 0 && p->last[prob] == m->nkernels && p->first[pred] == 0 &&
                  p->last[pred] == m->nkernels && cg_memplan_kept(p, m, prob) && cg_memplan_kept(p, m, pred),
              "prob and predict kept: %d..%d, %d..%d", p->first[prob], p->last[prob], p->first[pred], p->last[pred]);
        CHECK(!cg_memplan_kept(p, m, f2) && !overlap(p->off[f2], p->size[f2], p->off[f1], p->size[f1]),
              "fc2 apart from fc1, not kept");
    }
    free(p);
}

/* conv1 -> conv2 -> conv3 -> add(conv1, conv3): conv1 is read by the add, so
 * stays apart from conv2 and conv3; conv2 may go where nothing live is. */
static void test_residual(cg_manifest *m)
{
    int x = start(m, 512);
    int c1 = op1(m, "conv1", 2048, x);
    int c2 = op1(m, "conv2", 2048, c1);
    int c3 = op1(m, "conv3", 2048, c2);
    int ins[2] = {c1, c3};
    int sum = op(m, "add", 2048, ins, 2);
    int c4 = op1(m, "conv4", 2048, sum);
    finish(m, op1(m, "softmax", 10, c4));
    cg_memplan *p = malloc(sizeof *p);
    cg_memplan_make(m, 0, 3, p);
    CHECK(invariants(m, p, "residual") == 0, "residual");
    CHECK(p->first[c1] == 1 && p->last[c1] == 4, "conv1 live %d..%d (read by the add, kernel 4)", p->first[c1],
          p->last[c1]);
    CHECK(!overlap(p->off[c1], p->size[c1], p->off[c2], p->size[c2]) &&
              !overlap(p->off[c1], p->size[c1], p->off[c3], p->size[c3]),
          "conv1 shares bytes with conv2 or conv3 before the add reads it");
    /* conv4 (kernel 5) may reuse conv1's or conv3's place: both died at the add */
    CHECK(p->off[c4] == p->off[c1] || p->off[c4] == p->off[c3] || p->off[c4] == p->off[c2],
          "conv4 at %zu reuses nothing", p->off[c4]);
    free(p);
}

/* concat of three branches and a three-input add: every input apart from the
 * output and from each other. */
static void test_concat_add3(cg_manifest *m)
{
    int x = start(m, 300);
    int a = op1(m, "a", 700, x), b = op1(m, "b", 500, x), c = op1(m, "c", 300, x);
    int cat_in[3] = {a, b, c};
    int cat = op(m, "cat", 1500, cat_in, 3);
    int d = op1(m, "d", 1500, cat), e = op1(m, "e", 1500, cat), f = op1(m, "f", 1500, d);
    int add_in[3] = {d, e, f};
    int sum = op(m, "add3", 1500, add_in, 3);
    finish(m, op1(m, "softmax", 10, sum));
    cg_memplan *p = malloc(sizeof *p);
    for (long long batch = 1; batch <= 5; batch += 2) {
        cg_memplan_make(m, 0, batch, p);
        CHECK(invariants(m, p, "concat/add3") == 0, "concat/add3 batch %lld", batch);
        int all[] = {a, b, c, cat};
        for (int i = 0; i < 4; i++)
            for (int j = i + 1; j < 4; j++)
                CHECK(!overlap(p->off[all[i]], p->size[all[i]], p->off[all[j]], p->size[all[j]]),
                      "concat: %s and %s overlap", m->t[all[i]].name, m->t[all[j]].name);
        int all3[] = {d, e, f, sum};
        for (int i = 0; i < 4; i++)
            for (int j = i + 1; j < 4; j++)
                CHECK(!overlap(p->off[all3[i]], p->size[all3[i]], p->off[all3[j]], p->size[all3[j]]),
                      "add3: %s and %s overlap", m->t[all3[i]].name, m->t[all3[j]].name);
    }
    free(p);
}

/* A concat whose inputs a and b are views of its output written by their own
 * kernels (view=), c copied into its slice by the concat's kernel: the output
 * is live from a's kernel on (not from the concat's), a and b take no bytes and
 * lie at its offset plus theirs, and a tensor made between a's kernel and the
 * concat's (d, large) is kept apart from it; a view read after the batch is
 * kept as its parent is. */
static void test_concat_views(cg_manifest *m)
{
    int x = start(m, 300);
    int cat = add_tensor(m, "cat", CG_DT_F32, 1200);
    int a = add_kernel(m, "a", &x, 1, add_view(m, "a", cat, 0, 500));
    int d = op1(m, "d", 5000, x);
    int b = add_kernel(m, "b", &d, 1, add_view(m, "b", cat, 500, 400));
    int c = op1(m, "c", 300, x);
    int ka = 1, kc = m->nkernels; /* a's kernel (after input's), the concat's */
    add_kernel(m, "cat", &c, 1, cat);
    int e = op1(m, "e", 9000, cat);
    finish(m, op1(m, "softmax", 10, e));
    cg_memplan *p = malloc(sizeof *p);
    for (long long batch = 1; batch <= 5; batch += 2) {
        cg_memplan_make(m, 0, batch, p);
        CHECK(invariants(m, p, "concat views") == 0, "concat views batch %lld", batch);
        CHECK(p->first[cat] == ka && p->last[cat] == kc + 1, "cat live %d..%d, want %d..%d", p->first[cat],
              p->last[cat], ka, kc + 1);
        CHECK(p->bytes[a] == 0 && p->bytes[b] == 0 && p->bytes[cat] == 1200 * 4, "views take no bytes");
        CHECK(p->off[a] == p->off[cat] && p->off[b] == p->off[cat] + 500 * 4, "a at %zu, b at %zu, cat at %zu",
              p->off[a], p->off[b], p->off[cat]);
        CHECK(!overlap(p->off[d], p->size[d], p->off[cat], p->size[cat]) &&
                  !overlap(p->off[c], p->size[c], p->off[cat], p->size[cat]),
              "d and c apart from cat");
        CHECK(p->sum == 300 + (size_t)(300 + 1200 + 5000 + 300 + 9000 + 10) * 4 + 4, "the sum counts no view: %zu",
              p->sum);
    }
    cg_memplan_make(m, 1, 2, p);
    CHECK(invariants(m, p, "concat views, keep_all") == 0 && cg_memplan_kept(p, m, a) && cg_memplan_kept(p, m, b),
          "views kept with keep_all");
    free(p);
}

/* keep_all: every tensor live throughout, so every tensor apart: the arena is
 * the sum of the aligned sizes, and every tensor is kept. */
static void test_keep_all(cg_manifest *m)
{
    int x = start(m, 333);
    int c1 = op1(m, "conv1", 1001, x), c2 = op1(m, "conv2", 77, c1);
    finish(m, op1(m, "softmax", 10, op1(m, "conv3", 1001, c2)));
    cg_memplan *p = malloc(sizeof *p);
    cg_memplan_make(m, 1, 7, p);
    CHECK(invariants(m, p, "keep_all") == 0, "keep_all");
    size_t aligned = 0;
    for (int i = 0; i < p->n; i++) {
        aligned += (p->bytes[i] * 7 + CG_MEMPLAN_ALIGN - 1) / CG_MEMPLAN_ALIGN * CG_MEMPLAN_ALIGN;
        CHECK(cg_memplan_kept(p, m, i), "keep_all: %s not kept", m->t[i].name);
        for (int j = i + 1; j < p->n; j++)
            CHECK(!overlap(p->off[i], p->size[i], p->off[j], p->size[j]), "keep_all: %d and %d overlap", i, j);
    }
    CHECK(p->arena == aligned, "keep_all arena %zu, aligned sizes %zu", p->arena, aligned);
    CHECK(cg_memplan_per_image(p) == p->sum, "keep_all per image %zu, sum %zu", cg_memplan_per_image(p), p->sum);
    char text[128];
    cg_memplan_describe(p, text, sizeof text);
    CHECK(strstr(text, "every tensor kept") != NULL, "describe: %s", text);
    cg_memplan_make(m, 0, 7, p);
    CHECK(cg_memplan_per_image(p) < p->sum, "reuse: per image %zu, sum %zu", cg_memplan_per_image(p), p->sum);
    cg_memplan_describe(p, text, sizeof text);
    CHECK(strstr(text, "planned (") && strstr(text, "without reuse)"), "describe: %s", text);
    free(p);
}

/* Odd sizes and batches: every offset a multiple of CG_MEMPLAN_ALIGN. */
static void test_alignment(void)
{
    size_t bytes[6] = {1, 255, 257, 4, 1000, 0}, off[6], arena;
    int first[6] = {0, 0, 1, 1, 2, 0}, last[6] = {5, 1, 2, 5, 3, 5};
    cg_memplan_assign(6, bytes, first, last, 256, off, &arena);
    for (int i = 0; i < 6; i++) CHECK(off[i] % 256 == 0, "tensor %d at %zu", i, off[i]);
    /* 1000 (-> 1024) first at 0; 257 (-> 512) live 1..2 beside it; 255 and 4 and 1 each 256 */
    CHECK(off[4] == 0, "the largest at %zu", off[4]);
    CHECK(arena % 256 == 0 && arena >= 1024 + 512, "arena %zu", arena);
    cg_memplan_assign(6, bytes, first, last, 1, off, &arena);
    CHECK(arena <= 1000 + 257 + 4 + 1 + 255, "unaligned arena %zu", arena);
}

/* ---- random DAGs ---- */

static unsigned long long rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A random network: pixels -> input, then kernels reading 1 to 4 earlier
 * tensors (the float input or later ones; never the u8 pixels or predict), of
 * random sizes, a few of them writing one or two more tensors (later kernels
 * may read those too), the last into scores. With views: now and then a
 * concat's output whose 2 to 4 parts are views written by kernels of their own
 * (other kernels between them), read (whole, or a part) only once every part is
 * written, as planner.concat_slices makes them. */
static void random_dag(cg_manifest *m, int nk, int views)
{
    int t = start(m, 1 + rnd(40));
    (void)t;
    int open = -1, parts = 0, filled = 0; /* a concat's output being written, its parts, those written */
    long long part_elems = 0;
    for (int k = 0; k < nk || open >= 0; k++) {
        if (views && open < 0 && k < nk && !rnd(6)) {
            char pname[16];
            snprintf(pname, sizeof pname, "cat%d", k);
            parts = 2 + (int)rnd(3), filled = 0, part_elems = 1 + rnd(32);
            open = add_tensor(m, pname, CG_DT_F32, parts * part_elems);
        }
        int ins[CG_MAX_INPUTS], nin = 1 + (int)rnd(CG_MAX_INPUTS);
        for (int j = 0; j < nin; j++) {
            /* mostly recent tensors, sometimes far back (long skips) */
            int back = rnd(3) ? 1 + (int)rnd(3) : 1 + (int)rnd((unsigned)m->ntensors - 1);
            int pick = m->ntensors - back;
            /* (not the concat's output before its parts are all written) */
            ins[j] = pick < 1 || pick == open ? 1 : pick;
        }
        char name[16];
        snprintf(name, sizeof name, "k%d", k);
        if (open >= 0 && (rnd(2) || k >= nk)) {
            /* the next part of the open concat's output, written by this kernel */
            add_kernel(m, name, ins, nin, add_view(m, name, open, filled * part_elems, part_elems));
            if (++filled == parts) open = -1;
            continue;
        }
        op(m, name, 1 + rnd(64), ins, nin);
        for (int more = rnd(4) ? 0 : 1 + (int)rnd(CG_MAX_OUTPUTS - 1); more > 0; more--) {
            char extra[24];
            snprintf(extra, sizeof extra, "k%d.%d", k, more);
            also_writes(m, add_tensor(m, extra, CG_DT_F32, 1 + rnd(64)));
        }
    }
    finish(m, op1(m, "scores", 1 + rnd(12), m->ntensors - 1));
}

/* Word i (of its n images) of f32 tensor t placed at tp[t]: a view's image
 * steps by its parent's (the runtime binds it at its first element, and a
 * kernel writes image img at img times the parent's elements). */
static uint32_t *word_at(const cg_manifest *m, unsigned char *const *tp, int t, long long i)
{
    const cg_mtensor *x = &m->t[t];
    if (!x->view) return (uint32_t *)tp[t] + i;
    return (uint32_t *)tp[t] + i / x->elems * m->t[x->parent].elems + i % x->elems;
}

/* Run the network on the host through tensor places tp (bytes, batch n):
 * each kernel writes element i of every image of each of its outputs as a mix
 * of its inputs' elements (uint32 words, wrapped), the first kernel from the
 * pixels. The result: the predict tensor's and scores' bytes, and every
 * tensor's (keep). */
static void execute(const cg_manifest *m, unsigned char *const *tp, long long n)
{
    for (int k = 0; k < m->nkernels; k++) {
        const cg_mkernel *kr = &m->k[k];
        for (int o = 0; o < kr->nout; o++) {
            long long oe = m->t[kr->outs[o]].elems * n;
            for (long long i = 0; i < oe; i++) {
                uint32_t v = (uint32_t)(k * CG_MAX_OUTPUTS + o) * 2654435761u;
                for (int j = 0; j < kr->nin; j++) {
                    int t = kr->in[j];
                    long long ie = m->t[t].elems * n;
                    uint32_t x = m->t[t].dtype == CG_DT_U8 ? tp[t][i % ie] : *word_at(m, tp, t, i % ie);
                    v = (v ^ x) * 16777619u + (uint32_t)j;
                }
                *word_at(m, tp, kr->outs[o], i) = v;
            }
        }
    }
}

static void test_random(void)
{
    cg_manifest *m = malloc(sizeof *m);
    cg_memplan *p = malloc(sizeof *p);
    int bad = 0, runs = 0, wrong = 0;
    size_t saved = 0, total = 0;
    for (int trial = 0; trial < 400 && bad == 0; trial++) {
        random_dag(m, 2 + (int)rnd(40), trial % 2);
        long long n = 1 + rnd(4);
        int keep = trial % 5 == 0;
        cg_memplan_make(m, keep, n, p);
        bad += invariants(m, p, keep ? "random, keep_all" : "random");
        saved += p->arena, total += p->sum * (size_t)n;
        /* executed through the arena and through separate buffers: the same
         * predictions and scores (every kept tensor the same) */
        unsigned char *arena = calloc(1, p->arena + 1), *sep[CG_MAX_TENSORS], *in_arena[CG_MAX_TENSORS];
        for (int t = 0; t < m->ntensors; t++) {
            size_t b = p->size[t];
            /* (a view: in its parent's buffer, declared before it) */
            const cg_mtensor *v = &m->t[t];
            sep[t] = v->view ? sep[v->parent] + v->view_off * 4 : calloc(1, b + 4);
            in_arena[t] = arena + p->off[t];
        }
        for (long long i = 0; i < m->t[m->input].elems * n; i++)
            sep[m->input][i] = in_arena[m->input][i] = (unsigned char)rnd(256);
        execute(m, sep, n);
        execute(m, in_arena, n);
        for (int t = 0; t < m->ntensors; t++) {
            if (cg_memplan_kept(p, m, t) && memcmp(sep[t], in_arena[t], p->size[t])) wrong++;
            if (!m->t[t].view) free(sep[t]);
        }
        free(arena);
        runs++;
    }
    CHECK(bad == 0, "random DAGs: %d invariant failures", bad);
    CHECK(wrong == 0, "random DAGs: %d kept tensors differ from separate buffers' over %d runs", wrong, runs);
    CHECK(runs == 400, "random DAGs: %d runs", runs);
    CHECK(saved < total, "random DAGs: arenas %zu bytes, tensors %zu", saved, total);
    free(m), free(p);
}

/* ResNet-18 at 224x224: the stem, four stages of two basic blocks (conv, conv,
 * add with the block's input or a 1x1 downsampling conv), average pool, fc,
 * softmax, argmax: one kernel a layer, each writing its own tensor. */
static void test_resnet18(cg_manifest *m)
{
    int t = start(m, 3 * 224 * 224);
    t = op1(m, "conv1", 64LL * 112 * 112, t);
    t = op1(m, "pool1", 64LL * 56 * 56, t);
    int c = 64, hw = 56;
    for (int s = 0; s < 4; s++) {
        for (int b = 0; b < 2; b++) {
            int down = s > 0 && b == 0;
            int oc = down ? c * 2 : c, ohw = down ? hw / 2 : hw;
            char n1[32], n2[32], nd[32], na[32];
            snprintf(n1, sizeof n1, "l%d.%d.conv1", s + 1, b), snprintf(n2, sizeof n2, "l%d.%d.conv2", s + 1, b);
            snprintf(nd, sizeof nd, "l%d.%d.down", s + 1, b), snprintf(na, sizeof na, "l%d.%d.add", s + 1, b);
            int a1 = op1(m, n1, (long long)oc * ohw * ohw, t);
            int a2 = op1(m, n2, (long long)oc * ohw * ohw, a1);
            int skip = down ? op1(m, nd, (long long)oc * ohw * ohw, t) : t;
            int ins[2] = {a2, skip};
            t = op(m, na, (long long)oc * ohw * ohw, ins, 2);
            c = oc, hw = ohw;
        }
    }
    t = op1(m, "gavg", 512, t);
    t = op1(m, "fc", 1000, t);
    finish(m, op1(m, "softmax", 1000, t));
    cg_memplan *p = malloc(sizeof *p);
    cg_memplan_make(m, 0, 256, p);
    CHECK(invariants(m, p, "resnet18") == 0, "resnet18");
    size_t per = cg_memplan_per_image(p), peak = 0;
    /* no plan needs less than the bytes live at its busiest step */
    for (int step = 0; step <= m->nkernels; step++) {
        size_t live = 0;
        for (int i = 0; i < p->n; i++) live += p->first[i] <= step && step <= p->last[i] ? p->bytes[i] : 0;
        if (live > peak) peak = live;
    }
    char text[128];
    cg_memplan_describe(p, text, sizeof text);
    printf("resnet-18 (%d tensors): %s, %zu bytes live at the busiest step; batch 256: %zu bytes\n", m->ntensors,
           text, peak, p->arena);
    /* the stem's step (pixels, the float input and conv1's 3.2 MB) bounds it:
     * under a third of the sum, within 10% of that bound */
    CHECK(per * 3 < p->sum, "resnet18: %zu bytes per image planned, %zu without reuse", per, p->sum);
    CHECK(per * 10 <= peak * 11, "resnet18: %zu bytes per image planned, %zu live at once", per, peak);
    CHECK(p->arena < (size_t)256 * p->sum / 3, "resnet18 at batch 256: %zu bytes", p->arena);
    cg_memplan_make(m, 1, 256, p);
    CHECK(invariants(m, p, "resnet18 keep_all") == 0 && p->arena >= (size_t)256 * p->sum, "resnet18 keep_all");
    free(p);
}

int main(void)
{
    cg_manifest *m = malloc(sizeof *m);
    test_chain(m);
    test_residual(m);
    test_concat_add3(m);
    test_concat_views(m);
    test_tail(m);
    test_keep_all(m);
    test_alignment();
    test_random();
    test_resnet18(m);
    free(m);
    return cg_test_done("memplan");
}
