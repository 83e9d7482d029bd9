/* test_manifest.c — a kernel record's input list: `in=` naming two (or up to
 * CG_MAX_INPUTS) tensors parses into the kernel's array in order, with roles
 * in1..in3 naming the further inputs; refused, each at the record's
 * origin:line: an undeclared tensor, more than CG_MAX_INPUTS inputs, the
 * kernel's own output among its inputs, an empty name, and an argument role
 * naming an input the list lacks. Its output list likewise: `out=` naming up to
 * CG_MAX_OUTPUTS tensors (templates/ops/tail.lua: fc2, prob, predict), roles
 * out1 and out2 bound to the second and third; refused: an undeclared or
 * repeated tensor, more than CG_MAX_OUTPUTS, an output among the inputs, a role
 * naming an output the list lacks, a whole-network kernel with more than one.
 * common.kernel_head (templates/lib/common.lua) knows the same roles as the
 * manifest's table, declares further inputs const like the first and further
 * outputs writable like the first. The whole-network kernel's record (whole=1, scratch=,
 * grid res:CAP, layer=*, roles t:/w:/b:/scratch, up to CG_MAX_ARGS arguments)
 * parses, and each misuse is refused at its line. Weight placements, arg:taps:N
 * among them. Views (tensor ... view=PARENT:OFF: a concat's input written into
 * its slice) with their checks, cg_manifest_root and cg_manifest_gather. Tensor
 * maps (map: roles, test_maps) and cg_map_encode against a stand-in encoder. */
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_api.h"
#include "lua_host.h"
#include "manifest.h"

/* A manifest whose kernel `add` (line 13) reads `in` and writes `out` with
 * arguments `args`: two convolutions of the input summed, then argmax. */
static int parse(const char *in, const char *out, const char *args, cg_manifest *m, cg_err *e)
{
    char text[4096];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
             "tensor pixels u8 784\ntensor input f32 784\ntensor a f32 1152\ntensor b f32 1152\n"
             "tensor sum f32 1152\ntensor predict i32 1\n"
             "kernel k_in layer=input template=input_u8 in=pixels out=input grid=N*196/256,1,1 block=256,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "kernel k_a layer=a template=conv2d_direct in=input out=a grid=N*144/64,1,1 block=64,1,1 "
             "shared=0 weights=arg bias=none args=in,out,weights,bias,n\n"
             "kernel k_add layer=sum template=add in=%s out=%s grid=N*9/2,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=%s\n"
             "kernel k_max layer=predict template=argmax in=sum out=predict grid=N*1/128,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "input pixels\noutput sum\npredict predict\nhash 0123456789abcdef\n",
             in, out, args);
    return cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, e);
}

static void test_inputs(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a,b", "sum", "in1,in,out,n", m, &e);
    CHECK(rc == 0, "a two-input kernel parses: %s", rc ? e.msg : "");
    if (!rc) {
        const cg_mkernel *k = &m->k[2];
        CHECK(!strcmp(k->name, "k_add") && k->nin == 2, "k_add reads %d tensors", k->nin);
        CHECK(k->in[0] == cg_manifest_tensor(m, "a") && k->in[1] == cg_manifest_tensor(m, "b"),
              "inputs in the list's order");
        CHECK(k->out == cg_manifest_tensor(m, "sum"), "its output");
        CHECK(k->nargs == 4 && k->args[0] == CG_ARG_IN1 && k->args[1] == CG_ARG_IN, "roles in1, in");
        CHECK(m->k[1].nin == 1 && m->k[1].in[0] == cg_manifest_tensor(m, "input"), "a chain's kernel reads one");
        /* the launch binds the second input where in1 stands */
        int ta = 10, tb = 11, out = 12, count = 3;
        void *in[CG_MAX_INPUTS] = {&ta, &tb}, *outs[1] = {&out}, *argv[CG_MAX_ARGS];
        CHECK(cg_args_bind(k->args, k->nargs, in, k->nin, outs, 1, NULL, NULL, &count, NULL, 0, argv) == 0 &&
                  argv[0] == &tb && argv[1] == &ta && argv[2] == &out && argv[3] == &count,
              "in1 bound to b, in to a");
    }
    rc = parse("a,b,input,a", "sum", "in,in1,in2,in3,out,n", m, &e);
    CHECK(rc == 0 && m->k[2].nin == 4 && m->k[2].in[3] == cg_manifest_tensor(m, "a"),
          "four inputs (a tensor may be read twice): %s", rc ? e.msg : "");
}

/* A kernel writing several tensors (out=sum,b,predict: ops/tail.lua's fc2, prob,
 * predict): the list in order, out the first; roles out1 and out2 bound to the
 * second and third; every misuse refused at the record's line. */
static void test_outputs(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a", "sum,b,predict", "in,out,weights,bias,out1,out2,n", m, &e);
    CHECK(rc == 0, "a three-output kernel parses: %s", rc ? e.msg : "");
    if (!rc) {
        const cg_mkernel *k = &m->k[2];
        CHECK(k->nout == 3 && k->out == cg_manifest_tensor(m, "sum") && k->outs[0] == k->out &&
                  k->outs[1] == cg_manifest_tensor(m, "b") && k->outs[2] == cg_manifest_tensor(m, "predict"),
              "outputs in the list's order, out the first: %d", k->nout);
        CHECK(k->args[4] == CG_ARG_OUT1 && k->args[5] == CG_ARG_OUT2 && cg_arg_output(k->args[5]) == 2 &&
                  cg_arg_output(CG_ARG_OUT) == 0 && cg_arg_output(CG_ARG_IN1) == -1 &&
                  !strcmp(cg_arg_role_name(CG_ARG_OUT2), "out2"),
              "roles out1, out2");
        CHECK(m->k[1].nout == 1 && m->k[1].outs[0] == m->k[1].out, "a chain's kernel writes one");
        int ta = 10, o0 = 20, o1 = 21, o2 = 22, count = 3;
        void *in[CG_MAX_INPUTS] = {&ta}, *outs[CG_MAX_OUTPUTS] = {&o0, &o1, &o2}, *argv[CG_MAX_ARGS] = {0};
        CHECK(cg_args_bind(k->args, k->nargs, in, k->nin, outs, k->nout, NULL, NULL, &count, NULL, 0, argv) == 0 &&
                  argv[0] == &ta && argv[1] == &o0 && argv[4] == &o1 && argv[5] == &o2 && argv[6] == &count,
              "out, out1, out2 bound to sum, b, predict");
        argv[0] = NULL;
        CHECK(cg_args_bind(k->args, k->nargs, in, k->nin, outs, 2, NULL, NULL, &count, NULL, 0, argv) == -1 && !argv[0],
              "out2 with two outputs: nothing bound");
    }
    /* the first output is the tensor a chain's next kernel reads: predict reads sum */
    rc = parse("a", "sum,b", "in,out1,out,n", m, &e);
    CHECK(rc == 0 && m->k[2].nout == 2 && m->k[2].args[1] == CG_ARG_OUT1, "any order of roles: %s", rc ? e.msg : "");
    struct {
        const char *in, *out, *args, *msg;
    } bad[] = {
        {"a", "sum,zz", "in,out,out1,n", "t/manifest.txt:13: kernel k_add writes 'zz', which is no tensor declared before it"},
        {"a", "sum,b,sum", "in,out,n", "t/manifest.txt:13: kernel k_add writes 'sum' twice (out=sum,b,sum)"},
        {"a", "sum,b,predict,input", "in,out,n", "t/manifest.txt:13: kernel k_add writes more than 3 tensors (out=sum,b,predict,input)"},
        {"a,b", "sum,b", "in,in1,out,out1,n", "t/manifest.txt:13: kernel k_add reads its own output 'b'"},
        {"a", "sum", "in,out,out1,n", "t/manifest.txt:13: kernel k_add: argument role out1 names output 2, but the kernel writes 1 (out=)"},
        {"a", "sum,b", "in,out,out2,n", "t/manifest.txt:13: kernel k_add: argument role out2 names output 3, but the kernel writes 2 (out=)"},
        {"a", "sum,", "in,out,n", "t/manifest.txt:13: kernel k_add: bad output list out=sum,"},
        {"a", "sum,,b", "in,out,n", "t/manifest.txt:13: kernel k_add: bad output list out=sum,,b"},
        {"a", "sum", "in,out,out3,n", "t/manifest.txt:13: bad value for args: 'out3' is no role"},
        {"a", "sum,b", "in,out,out1,out1,n", "t/manifest.txt:13: bad value for args: 'out1' given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        CHECK(parse(bad[i].in, bad[i].out, bad[i].args, m, &e) != 0, "output case %zu accepted", i);
        CHECK_CONTAINS(e.msg, bad[i].msg);
        CHECK(!strchr(e.msg, '\n'), "output case %zu: one line", i);
    }
}

static void test_refusals(cg_manifest *m)
{
    cg_err e;
    CHECK(parse("a,zz", "sum", "in,in1,out,n", m, &e) != 0, "an undeclared input refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads 'zz', which is no tensor declared before it");
    CHECK(parse("predict2", "sum", "in,out,n", m, &e) != 0, "an undeclared single input refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads 'predict2'");
    CHECK(parse("a,b,a,b,a", "sum", "in,out,n", m, &e) != 0, "five inputs refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads more than 4 tensors (in=a,b,a,b,a)");
    CHECK(parse("a,sum", "sum", "in,in1,out,n", m, &e) != 0, "the output among the inputs refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add reads its own output 'sum'");
    CHECK(parse("a", "sum", "in,in1,out,n", m, &e) != 0, "in1 without a second input refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: argument role in1 names input 2, but the kernel reads 1");
    CHECK(parse("a,b", "sum", "in,in2,out,n", m, &e) != 0, "in2 with two inputs refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: argument role in2 names input 3, but the kernel reads 2");
    CHECK(parse("a,,b", "sum", "in,out,n", m, &e) != 0 && parse("a,", "sum", "in,out,n", m, &e) != 0,
          "an empty name refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: bad input list in=a,");
    CHECK(parse("a", "sum", "in,in4,out,n", m, &e) != 0, "no role in4");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for args");
    CHECK(strchr(e.msg, '\n') == NULL, "one line");
}

/* A manifest whose tensors a and b are declared by `decl` (lines 7 and 8, after
 * cat f32 10 at line 6), written by kernels ka and kb (lines 11, 12), and cat
 * read by kernel kr (line 13, reading `rin`, writing `kout`), `out` the network's
 * output: a concat's inputs written into their slices (view=PARENT:OFF). */
static int parse_views(const char *decl, const char *rin, const char *kout, const char *out, cg_manifest *m,
                       cg_err *e)
{
    char text[4096];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
             "tensor pixels u8 16\ntensor cat f32 10\n%s"
             "tensor s f32 10\ntensor predict i32 1\n"
             "kernel ka layer=a template=conv2d_direct in=pixels out=a grid=N*1/8,1,1 block=64,1,1 "
             "shared=0 weights=arg bias=none args=in,out,weights,n\n"
             "kernel kb layer=b template=conv2d_direct in=pixels out=b grid=N*1/8,1,1 block=64,1,1 "
             "shared=0 weights=arg bias=none args=in,out,weights,n\n"
             "kernel kr layer=s template=softmax in=%s out=%s grid=N*1/8,1,1 block=64,1,1 "
             "shared=0 weights=none bias=none args=in,out,n\n"
             "kernel km layer=predict template=argmax in=s out=predict grid=N*1/8,1,1 block=64,1,1 "
             "shared=0 weights=none bias=none args=in,out,n\n"
             "input pixels\noutput %s\npredict predict\nhash 0123456789abcdef\n",
             decl, rin, kout, out);
    return cg_manifest_parse(text, strlen(text), "v/manifest.txt", m, e);
}

/* Views (view=PARENT:OFF, planner.concat_slices): parsed with their parent and
 * offset; cg_manifest_root and cg_manifest_gather (a view's slice of each image,
 * in place too); every misuse refused with one line at the record's
 * origin:line: no parent declared before, a view of a view, another dtype, a
 * slice past the parent's image or overlapping another view, a malformed value,
 * a kernel reading a tensor and writing a view of it, a kernel reading a view, a
 * view as the output. */
static void test_views(cg_manifest *m)
{
    cg_err e;
    int rc = parse_views("tensor a f32 4 view=cat:0\ntensor b f32 6 view=cat:4\n", "cat", "s", "s", m, &e);
    CHECK(rc == 0, "views parse: %s", rc ? e.msg : "");
    if (!rc) {
        int cat = cg_manifest_tensor(m, "cat"), a = cg_manifest_tensor(m, "a"), b = cg_manifest_tensor(m, "b");
        CHECK(!m->t[cat].view && m->t[a].view && m->t[a].parent == cat && m->t[a].view_off == 0 && m->t[b].view &&
                  m->t[b].parent == cat && m->t[b].view_off == 4 && m->t[b].elems == 6,
              "a and b views of cat at 0 and 4");
        CHECK(cg_manifest_root(m, a) == cat && cg_manifest_root(m, b) == cat && cg_manifest_root(m, cat) == cat,
              "roots");
        float img[30], out[18];
        for (int i = 0; i < 30; i++) img[i] = (float)i;
        cg_manifest_gather(m, b, img, 3, out);
        CHECK(out[0] == 4 && out[5] == 9 && out[6] == 14 && out[17] == 29, "b's slices of three images: %g %g %g %g",
              out[0], out[5], out[6], out[17]);
        cg_manifest_gather(m, a, img, 3, img); /* in place */
        CHECK(img[0] == 0 && img[3] == 3 && img[4] == 10 && img[11] == 23, "a's slices gathered in place");
        cg_manifest_gather(m, cat, out, 1, img);
        CHECK(img[0] == 4 && img[9] == 17, "a tensor of its own: its images as they are");
    }
    static const struct {
        const char *decl, *rin, *kout, *msg;
    } bad[] = {
        {"tensor a f32 4 view=zz:0\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: view of 'zz', which is no tensor declared before it"},
        {"tensor a f32 4 view=s:0\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: view of 's', which is no tensor declared before it"},
        {"tensor a f32 4 view=cat:0\ntensor b f32 2 view=a:1\n", "cat", "s",
         "v/manifest.txt:8: tensor b: view of 'a', itself a view (of 'cat')"},
        {"tensor a i32 4 view=cat:0\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: a i32 view of 'cat', a f32 tensor"},
        {"tensor a f32 4 view=cat:7\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: elements 7..10 past the 10 of 'cat'"},
        {"tensor a f32 4 view=cat:0\ntensor b f32 6 view=cat:3\n", "cat", "s",
         "v/manifest.txt:8: tensor b: its slice of 'cat' overlaps that of a"},
        {"tensor a f32 4 view=cat\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: bad 'view=cat' (expected view=PARENT:OFFSET)"},
        {"tensor a f32 4 view=cat:-1\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: bad 'view=cat:-1' (expected view=PARENT:OFFSET)"},
        {"tensor a f32 4 view=:0\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: bad 'view=:0' (expected view=PARENT:OFFSET)"},
        {"tensor a f32 4 vue=cat:0\ntensor b f32 6\n", "cat", "s",
         "v/manifest.txt:7: tensor a: bad 'vue=cat:0' (expected view=PARENT:OFFSET)"},
        {"tensor a f32 4 view=cat:0 x\ntensor b f32 6\n", "cat", "s", "v/manifest.txt:7: unexpected 'x'"},
        {"tensor a f32 4 view=cat:0\ntensor b f32 6 view=cat:4\n", "cat", "a",
         "v/manifest.txt:13: kernel kr reads 'cat' and writes 'a', one memory (view=)"},
        {"tensor a f32 4 view=cat:0\ntensor b f32 6 view=cat:4\n", "b", "s",
         "v/manifest.txt:13: kernel kr reads 'b', a view of 'cat' (view=): views are written, not read"},
        {"tensor a f32 4 view=cat:0\ntensor b f32 6 view=cat:4\n", "cat", "OUT",
         "v/manifest.txt: the input, output and predictions must be tensors of their own, not views (view=)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        /* (kout OUT: kr writes s, and a is the network's output) */
        int as_out = !strcmp(bad[i].kout, "OUT");
        CHECK(parse_views(bad[i].decl, bad[i].rin, as_out ? "s" : bad[i].kout, as_out ? "a" : "s", m, &e) != 0,
              "view case %zu refused", i);
        CHECK_CONTAINS(e.msg, bad[i].msg);
        CHECK(!strchr(e.msg, '\n'), "view case %zu: one line", i);
    }
}

/* Channels-last tensors (hwc=C.H.W, planner.hwc_handoffs): parsed beside view= in either order;
 * cg_manifest_relayout turns n images between H x W x C and C x H x W (and leaves any other tensor
 * as it is); each misuse refused with one line at origin:line: a malformed or repeated value, extents
 * whose product is not the tensor's elements, a view, the network's output. */
static void test_hwc(cg_manifest *m)
{
    cg_err e;
    int rc = parse_views("tensor a f32 4 hwc=1.2.2\ntensor b f32 6 hwc=3.1.2\n", "cat", "s", "s", m, &e);
    CHECK(rc == 0, "hwc parses: %s", rc ? e.msg : "");
    if (!rc) {
        const cg_mtensor *a = &m->t[cg_manifest_tensor(m, "a")], *b = &m->t[cg_manifest_tensor(m, "b")];
        const cg_mtensor *cat = &m->t[cg_manifest_tensor(m, "cat")];
        CHECK(a->hwc[0] == 1 && a->hwc[1] == 2 && a->hwc[2] == 2 && b->hwc[0] == 3 && b->hwc[1] == 1 &&
                  b->hwc[2] == 2 && !cat->hwc[0] && !a->view,
              "a 1.2.2, b 3.1.2, cat C x H x W");
        /* two images of b, C x H x W: image i, channel c, pixel p holds 100i + 10c + p */
        float x[12], want[12];
        for (int i = 0; i < 2; i++)
            for (int c = 0; c < 3; c++)
                for (int p = 0; p < 2; p++) x[i * 6 + c * 2 + p] = want[i * 6 + c * 2 + p] = (float)(100 * i + 10 * c + p);
        CHECK(cg_manifest_relayout(b, x, 2, 0) == 0, "to channels-last");
        CHECK(x[0] == 0 && x[1] == 10 && x[2] == 20 && x[3] == 1 && x[5] == 21 && x[6] == 100 && x[11] == 121,
              "channels-last: pixel 0's three channels, then pixel 1's: %g %g %g %g", x[0], x[1], x[2], x[3]);
        CHECK(cg_manifest_relayout(b, x, 2, 1) == 0 && !memcmp(x, want, sizeof x), "and back to C x H x W");
        CHECK(cg_manifest_relayout(cat, x, 1, 1) == 0 && !memcmp(x, want, sizeof x), "a C x H x W tensor unchanged");
    }
    rc = parse_views("tensor a f32 4 view=cat:0 hwc=1.2.2\ntensor b f32 6\n", "cat", "s", "s", m, &e);
    CHECK(rc != 0, "a channels-last view refused");
    CHECK_CONTAINS(e.msg, "v/manifest.txt:7: tensor a: a view (view=) cannot be channels-last (hwc=)");
    static const struct {
        const char *decl, *msg;
    } bad[] = {
        {"tensor a f32 4 hwc=1.2\ntensor b f32 6\n", "v/manifest.txt:7: tensor a: bad 'hwc=1.2' (expected hwc=C.H.W once"},
        {"tensor a f32 4 hwc=1.2.2x\ntensor b f32 6\n", "v/manifest.txt:7: tensor a: bad 'hwc=1.2.2x'"},
        {"tensor a f32 4 hwc=0.2.2\ntensor b f32 6\n", "v/manifest.txt:7: tensor a: bad 'hwc=0.2.2'"},
        {"tensor a f32 4\ntensor b f32 6 hwc=1.2.3 hwc=1.2.3\n", "v/manifest.txt:8: tensor b: bad 'hwc=1.2.3'"},
        {"tensor a f32 4 hwc=2.2.2\ntensor b f32 6\n",
         "v/manifest.txt:7: tensor a: hwc=2.2.2 is 8 elements an image, not its 4"},
        {"tensor a f32 4 hwc=1.2.2 zz\ntensor b f32 6\n", "v/manifest.txt:7: unexpected 'zz'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        CHECK(parse_views(bad[i].decl, "cat", "s", "s", m, &e) != 0, "hwc case %zu refused", i);
        CHECK_CONTAINS(e.msg, bad[i].msg);
        CHECK(!strchr(e.msg, '\n'), "hwc case %zu: one line", i);
    }
    /* the network's output channels-last: a, with kr writing s */
    rc = parse_views("tensor a f32 4 hwc=1.2.2\ntensor b f32 6\n", "cat", "s", "a", m, &e);
    CHECK(rc != 0, "a channels-last output refused");
    CHECK_CONTAINS(e.msg, "v/manifest.txt: the input, output and predictions are C x H x W, not channels-last (hwc=)");
}

/* The optional pdl field: 1 marks a kernel with the programmatic-dependent-launch
 * prologue, absent is 0; any other value, or the field twice, is refused at the
 * record's origin:line. */
static void test_pdl(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a,b", "sum", "in,in1,out,n pdl=1", m, &e);
    CHECK(rc == 0, "pdl=1 parses: %s", rc ? e.msg : "");
    CHECK(!rc && m->k[2].pdl == 1 && m->k[1].pdl == 0 && m->k[3].pdl == 0, "only k_add has the prologue");
    rc = parse("a,b", "sum", "in,in1,out,n pdl=0", m, &e);
    CHECK(rc == 0 && m->k[2].pdl == 0, "pdl=0 parses as no prologue");
    CHECK(parse("a,b", "sum", "in,in1,out,n pdl=yes", m, &e) != 0, "pdl=yes refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for pdl: 'yes'");
    CHECK(parse("a,b", "sum", "in,in1,out,n pdl=1 pdl=1", m, &e) != 0, "pdl twice refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: pdl given twice");
    CHECK(parse("a,b", "sum", "in,in1,out,n pdl=", m, &e) != 0, "an empty pdl refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for pdl: ''");
}

/* The optional wdtype field: the 16-bit type a kernel reads its weights and bias
 * in (f16 or bf16); absent is f32; f32 itself, any other word, or the field
 * twice is refused at the record's origin:line. */
static void test_wdtype(cg_manifest *m)
{
    cg_err e;
    int rc = parse("a,b", "sum", "in,in1,out,n wdtype=bf16", m, &e);
    CHECK(rc == 0 && m->k[2].wdtype == CG_DT_BF16 && m->k[1].wdtype == CG_DT_F32 && m->k[3].wdtype == CG_DT_F32,
          "wdtype=bf16 on k_add only: %s", rc ? e.msg : "");
    rc = parse("a,b", "sum", "in,in1,out,n wdtype=f16", m, &e);
    CHECK(rc == 0 && m->k[2].wdtype == CG_DT_F16, "wdtype=f16: %s", rc ? e.msg : "");
    CHECK(parse("a,b", "sum", "in,in1,out,n wdtype=f32", m, &e) != 0, "wdtype=f32 refused (absent means it)");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for wdtype: 'f32'");
    CHECK(parse("a,b", "sum", "in,in1,out,n wdtype=half", m, &e) != 0, "wdtype=half refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for wdtype: 'half'");
    CHECK(parse("a,b", "sum", "in,in1,out,n wdtype=f16 wdtype=f16", m, &e) != 0, "wdtype twice refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: wdtype given twice");
}

/* The optional feed field (a first layer's twins, planner.pixel_twin): u8 or f32,
 * the host input a per-layer kernel runs for; absent, either. A kernel reading
 * the pixels may not be feed=f32 unless it is input_u8's; any other value, or the
 * field twice, is refused at the record's origin:line. */
static void test_feed(cg_manifest *m)
{
    cg_err e;
    int rc = parse("pixels", "sum", "in,out,n feed=u8", m, &e);
    CHECK(rc == 0, "feed=u8 on a kernel reading the pixels parses: %s", rc ? e.msg : "");
    if (!rc) {
        CHECK(m->k[2].feed == CG_FEED_U8 && m->k[1].feed == CG_FEED_ANY, "only k_add has a feed");
        CHECK(cg_manifest_feeds(&m->k[2], 0) && !cg_manifest_feeds(&m->k[2], 1), "feed=u8: runs for pixels alone");
        CHECK(cg_manifest_feeds(&m->k[1], 0) && cg_manifest_feeds(&m->k[1], 1), "no feed: runs for either input");
    }
    rc = parse("a,b", "sum", "in,in1,out,n feed=f32", m, &e);
    CHECK(rc == 0 && !cg_manifest_feeds(&m->k[2], 0) && cg_manifest_feeds(&m->k[2], 1),
          "feed=f32: runs for floats alone: %s", rc ? e.msg : "");
    CHECK(parse("pixels", "sum", "in,out,n feed=f32", m, &e) != 0, "feed=f32 on a kernel reading the pixels refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: kernel k_add: feed=f32 on a kernel reading the pixels 'pixels'");
    CHECK(parse("a,b", "sum", "in,in1,out,n feed=f16", m, &e) != 0, "feed=f16 refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: bad value for feed: 'f16'");
    CHECK(parse("a,b", "sum", "in,in1,out,n feed=u8 feed=u8", m, &e) != 0, "feed twice refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:13: feed given twice");
    CHECK(!strchr(e.msg, '\n'), "one line");
}

/* Weight placements: weights=arg:taps:N (reordered N taps x C x M for kernels
 * reducing a tap's channels at a time) parses with its N; N outside 1..4096, no
 * number, trailing text, or arg:taps for the bias is refused at the record's line.
 * The other placements leave wtaps 0. */
static int parse_place_text(const char *w, const char *b, cg_manifest *m, cg_err *e)
{
    char text[2048];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
             "tensor pixels u8 784\ntensor input f32 784\ntensor a f32 1152\ntensor predict i32 1\n"
             "kernel k_a layer=a template=conv2d_igemm_wg in=input out=a grid=N*144/64,1,1 block=128,1,1 "
             "shared=0 weights=%s bias=%s args=in,out,weights,bias,n\n"
             "kernel k_max layer=predict template=argmax in=a out=predict grid=N*1/128,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "input pixels\noutput a\npredict predict\nhash 0123456789abcdef\n",
             w, b);
    return cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, e);
}

static void test_places(cg_manifest *m)
{
    cg_err e;
    int rc = parse_place_text("arg:taps:9", "arg", m, &e);
    CHECK(rc == 0 && m->k[0].wplace == CG_PLACE_ARG_TAPS && m->k[0].wtaps == 9 && m->k[0].bplace == CG_PLACE_ARG,
          "weights=arg:taps:9: %s", rc ? e.msg : "");
    rc = parse_place_text("arg:taps:4096", "none", m, &e);
    CHECK(rc == 0 && m->k[0].wtaps == 4096, "4096 taps (a 64x64 kernel): %s", rc ? e.msg : "");
    rc = parse_place_text("arg:transposed", "none", m, &e);
    CHECK(rc == 0 && m->k[0].wplace == CG_PLACE_ARG_T && m->k[0].wtaps == 0, "arg:transposed: no taps");
    const char *bad[] = {"arg:taps:0", "arg:taps:4097", "arg:taps:", "arg:taps:9x", "arg:taps:-3", "arg:taps"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(parse_place_text(bad[i], "none", m, &e) != 0, "weights=%s refused", bad[i]);
        CHECK_CONTAINS(e.msg, "t/manifest.txt:9: bad value for weights");
    }
    CHECK(parse_place_text("arg", "arg:taps:9", m, &e) != 0, "bias=arg:taps:9 refused");
    CHECK_CONTAINS(e.msg, "t/manifest.txt:9: bad value for bias");
}

/* A layer record's into=ADD (a conv whose kernel computes an add): parsed with
 * the add's tensor as the layer's; refused, at its line, naming another tensor
 * or with another key. */
static void test_layer_into(cg_manifest *m)
{
    static const char head[] = "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
                               "tensor input u8 4\ntensor a f32 4\ntensor r f32 4\ntensor p i32 1\n";
    static const char *const rec[] = {"layer c conv r into=r\nlayer r add r\n", "layer c conv r into=a\n",
                                      "layer c conv r fused=r\n"};
    cg_err e;
    for (int i = 0; i < 3; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s%s", head, rec[i],
                 "kernel k layer=c template=conv2d_direct in=input out=r grid=N*1/32,1,1 block=32,1,1 shared=0 "
                 "weights=none bias=none args=in,out,weights,bias,n\n"
                 "kernel m layer=predict template=argmax in=r out=p grid=N*1/32,1,1 block=32,1,1 shared=0 "
                 "weights=none bias=none args=in,out,weights,bias,n\n"
                 "input input\noutput r\npredict p\nhash 0123456789abcdef\n");
        int rc = cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, &e);
        if (i == 0)
            CHECK(rc == 0 && m->nlayers == 2 && !strcmp(m->l[0].into, "r") && m->l[0].out == cg_manifest_tensor(m, "r") &&
                      !m->l[1].into[0],
                  "into=r parses: %s", rc ? e.msg : "");
        else
            CHECK(rc != 0 && strstr(e.msg, "t/manifest.txt:9: bad layer record") && strstr(e.msg, "into=ITS_TENSOR"),
                  "record %d refused: %s", i, rc ? e.msg : "(accepted)");
    }
}

/* A manifest of two layers (conv1, fc1) and their kernels, then `tail` (kernel
 * records from line 12 on) and the closing records. */
static int parse_whole(const char *tail, cg_manifest *m, cg_err *e)
{
    char text[8192];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\nbucket 1\n"
             "tensor pixels u8 16\ntensor conv1 f32 8\ntensor fc1 f32 4\ntensor predict i32 1\n"
             "layer conv1 conv conv1\nlayer fc1 fc fc1\n"
             "%s"
             "input pixels\noutput fc1\npredict predict\nhash 0123456789abcdef\n",
             tail);
    return cg_manifest_parse(text, strlen(text), "w/manifest.txt", m, e);
}

#define K_CONV "kernel kc layer=conv1 template=conv2d_direct in=pixels out=conv1 grid=N*1/8,1,1 block=64,1,1 " \
               "shared=0 weights=arg bias=arg args=in,out,weights,bias,n\n"
#define K_FC "kernel kf layer=fc1 template=fc_vec in=conv1 out=fc1 grid=N*1/8,1,1 block=64,1,1 " \
             "shared=0 weights=arg bias=arg args=in,out,weights,bias,n\n"
#define K_MAX "kernel km layer=predict template=argmax in=fc1 out=predict grid=N*1/8,1,1 block=64,1,1 " \
              "shared=0 weights=none bias=none args=in,out,n\n"
#define K_WHOLE_HEAD "kernel net_b1 layer=* template=network in=pixels out=predict grid=res:264,1,1 block=256,1,1 " \
                     "shared=0 weights=none bias=none "
#define K_WHOLE K_WHOLE_HEAD "args=in,out,t:conv1,t:fc1,w:conv1,b:conv1,w:fc1,b:fc1,scratch,n whole=1 scratch=4096\n"

/* The whole-network kernel's record: whole=1, scratch=, grid res:CAP, layer=*
 * and the roles t:, w:, b: and scratch, parsed; every misuse refused at its
 * line: a whole kernel that is not the last record, two of them, res:, scratch=
 * or layer=* on another kernel, scratch without whole, role names that are no
 * roles, t: naming no tensor, w: no layer, an argument list past CG_MAX_ARGS. */
static void test_whole(cg_manifest *m)
{
    cg_err e;
    int rc = parse_whole(K_CONV K_FC K_MAX K_WHOLE, m, &e);
    CHECK(rc == 0, "a whole-network kernel parses: %s", rc ? e.msg : "");
    if (!rc) {
        CHECK(m->nkernels == 4 && cg_manifest_layer_kernels(m) == 3 && cg_manifest_whole(m) == 3,
              "4 kernels, 3 per-layer, the whole one last: %d %d %d", m->nkernels, cg_manifest_layer_kernels(m),
              cg_manifest_whole(m));
        const cg_mkernel *k = &m->k[3];
        CHECK(k->whole == 1 && k->scratch == 4096 && k->res_cap == 264 && cg_mdim_eval(k->grid[0], 1) == 264 &&
                  k->layer_index == -1 && !strcmp(k->layer, "*"),
              "whole %d scratch %lld res %lld layer %d", k->whole, k->scratch, k->res_cap, k->layer_index);
        CHECK(k->nargs == 10 && k->args[0] == CG_ARG_IN && k->args[1] == CG_ARG_OUT && k->args[9] == CG_ARG_N,
              "10 arguments: %d", k->nargs);
        CHECK(k->args[2] == CG_ARG_TENSOR && k->argref[2] == cg_manifest_tensor(m, "conv1") &&
                  k->args[3] == CG_ARG_TENSOR && k->argref[3] == cg_manifest_tensor(m, "fc1"),
              "t:conv1, t:fc1");
        CHECK(k->args[4] == CG_ARG_LWEIGHTS && k->argref[4] == 0 && k->args[5] == CG_ARG_LBIAS && k->argref[5] == 0 &&
                  k->args[6] == CG_ARG_LWEIGHTS && k->argref[6] == 1 && k->args[7] == CG_ARG_LBIAS && k->argref[7] == 1,
              "w:/b: of layers 0 and 1");
        CHECK(k->args[8] == CG_ARG_SCRATCH && k->argref[8] == -1 && k->argref[0] == -1, "scratch, plain roles ref -1");
        CHECK(!m->k[0].whole && m->k[0].scratch == 0 && m->k[0].res_cap == 0 && m->k[0].layer_index == 0,
              "the conv kernel is per-layer");
        /* bound as a per-layer kernel: refused, nothing bound */
        void *argv[CG_MAX_ARGS] = {0}, *in[1] = {NULL}, *outs[1] = {NULL};
        int count = 1;
        CHECK(cg_args_bind(k->args, k->nargs, in, 1, outs, 1, NULL, NULL, &count, NULL, 0, argv) == -1 && !argv[9],
              "cg_args_bind refuses the whole kernel's roles");
    }
    /* whole=0 is a plain kernel; scratch without an argument and the other way */
    rc = parse_whole(K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,n whole=1\n", m, &e);
    CHECK(rc == 0 && m->k[3].scratch == 0 && cg_manifest_whole(m) == 3, "no scratch: %s", rc ? e.msg : "");
    rc = parse_whole(K_CONV K_FC K_MAX, m, &e);
    CHECK(rc == 0 && cg_manifest_whole(m) == -1 && cg_manifest_layer_kernels(m) == 3, "no whole kernel: %s",
          rc ? e.msg : "");

    struct {
        const char *tail, *msg;
    } bad[] = {
        {K_CONV K_FC K_WHOLE K_MAX, "w/manifest.txt:15: kernel km follows the whole-network kernel net_b1, which must be the last"},
        {K_CONV K_FC K_MAX K_WHOLE "kernel net2 layer=* template=network in=pixels out=predict grid=res:8,1,1 "
                                  "block=32,1,1 shared=0 weights=none bias=none args=in,out,n whole=1\n",
         "w/manifest.txt:16: kernel net2: a second whole-network kernel (net_b1 is one): at most one"},
        {K_CONV K_FC "kernel km layer=predict template=argmax in=fc1 out=predict grid=res:8,1,1 block=64,1,1 "
                     "shared=0 weights=none bias=none args=in,out,n\n" K_WHOLE,
         "w/manifest.txt:14: kernel km: grid=res: belong to the whole-network kernel alone (whole=1)"},
        {K_CONV K_FC "kernel km layer=predict template=argmax in=fc1 out=predict grid=1,res:8,1 block=64,1,1 "
                     "shared=0 weights=none bias=none args=in,out,n\n",
         "w/manifest.txt:14: bad value for grid: '1,res:8,1'"},
        {K_CONV K_FC "kernel km layer=predict template=argmax in=fc1 out=predict grid=N*1/8,1,1 block=64,1,1 "
                     "shared=0 weights=none bias=none args=in,out,scratch,n scratch=64\n",
         "w/manifest.txt:14: kernel km: scratch= belong to the whole-network kernel alone (whole=1)"},
        {K_CONV K_FC "kernel km layer=* template=argmax in=fc1 out=predict grid=N*1/8,1,1 block=64,1,1 "
                     "shared=0 weights=none bias=none args=in,out,n\n",
         "w/manifest.txt:14: kernel km: layer=* belong to the whole-network kernel alone (whole=1)"},
        {K_CONV K_FC "kernel km layer=predict template=argmax in=fc1 out=predict grid=N*1/8,1,1 block=64,1,1 "
                     "shared=0 weights=none bias=none args=in,out,t:conv1,n\n",
         "w/manifest.txt:14: kernel km: arguments t:, w:, b: and scratch belong to the whole-network kernel alone"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,scratch,n whole=1\n",
         "w/manifest.txt:15: kernel net_b1: argument scratch without scratch=BYTES"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,n whole=1 scratch=16\n",
         "w/manifest.txt:15: kernel net_b1: scratch= without an argument scratch"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,scratch,n whole=1 scratch=0\n",
         "w/manifest.txt:15: bad value for scratch: '0'"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,scratch,n whole=1 scratch=1073741825\n",
         "w/manifest.txt:15: bad value for scratch: '1073741825'"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,n whole=2\n", "w/manifest.txt:15: bad value for whole: '2'"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,t:zz,n whole=1\n",
         "w/manifest.txt:15: kernel net_b1: argument t:zz names no tensor declared before it"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,w:fc9,n whole=1\n",
         "w/manifest.txt:15: kernel net_b1: argument w:fc9 names no layer declared before it"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,b:conv1,b:conv1,n whole=1\n",
         "w/manifest.txt:15: bad value for args: 'b:conv1' given twice"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,x:conv1,n whole=1\n",
         "w/manifest.txt:15: bad value for args: 'x:conv1' is no role"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,t:,n whole=1\n",
         "w/manifest.txt:15: bad value for args: 't:' is no role"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,t:a/b,n whole=1\n",
         "w/manifest.txt:15: kernel net_b1: argument 't:a/b' names no tensor or layer"},
        {K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,,n whole=1\n", "w/manifest.txt:15: bad value for args: "},
        {K_CONV K_FC K_MAX "kernel net_b1 layer=fc1 template=network in=pixels out=predict grid=res:264,1,1 "
                           "block=256,1,1 shared=0 weights=none bias=none args=in,out,n whole=1\n",
         "w/manifest.txt:15: kernel net_b1: the whole-network kernel runs every layer: layer=*, not layer=fc1"},
        {K_CONV K_FC K_MAX "kernel net_b1 layer=* template=network in=pixels out=predict,fc1 grid=res:264,1,1 "
                           "block=256,1,1 shared=0 weights=none bias=none args=in,out,n whole=1\n",
         "w/manifest.txt:15: kernel net_b1: the whole-network kernel's out= names one tensor"},
        {K_WHOLE, "w/manifest.txt: incomplete manifest"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        rc = parse_whole(bad[i].tail, m, &e);
        CHECK(rc != 0, "case %zu accepted", i);
        CHECK_CONTAINS(e.msg, bad[i].msg);
        CHECK(!strchr(e.msg, '\n'), "case %zu: one line", i);
    }
    /* up to CG_MAX_ARGS arguments (here in, out, n and 61 tensors); one more is refused */
    for (int more = 0; more < 2; more++) {
        static char text[32768];
        int at = snprintf(text, sizeof text, "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
                                             "tensor pixels u8 16\ntensor conv1 f32 8\ntensor fc1 f32 4\n"
                                             "tensor predict i32 1\n");
        for (int t = 0; t < 62; t++) at += snprintf(text + at, sizeof text - (size_t)at, "tensor x%d f32 4\n", t);
        at += snprintf(text + at, sizeof text - (size_t)at, "layer conv1 conv conv1\nlayer fc1 fc fc1\n"
                       K_CONV K_FC K_MAX K_WHOLE_HEAD "args=in,out,n");
        for (int t = 0; t < 61 + more; t++) at += snprintf(text + at, sizeof text - (size_t)at, ",t:x%d", t);
        snprintf(text + at, sizeof text - (size_t)at,
                 " whole=1\ninput pixels\noutput fc1\npredict predict\nhash 0123456789abcdef\n");
        rc = cg_manifest_parse(text, strlen(text), "w/manifest.txt", m, &e);
        if (!more)
            CHECK(rc == 0 && m->k[3].nargs == CG_MAX_ARGS && m->k[3].argref[63] == cg_manifest_tensor(m, "x60"),
                  "%d arguments: %s", CG_MAX_ARGS, rc ? e.msg : "");
        else {
            CHECK(rc != 0, "%d arguments accepted", CG_MAX_ARGS + 1);
            CHECK_CONTAINS(e.msg, "w/manifest.txt:76: kernel net_b1 takes more than 64 arguments");
        }
    }
}

/* Every role of the C table declared by common.kernel_head, in the order given,
 * and its roles string parsed back into the same roles. */
static void test_lua_roles(void)
{
    cg_lua *h;
    cg_err e;
    int rc = cg_lua_open(&h, "templates", &e);
    CHECK(rc == 0, "lua: %s", rc ? e.msg : "");
    if (rc) return;
    rc = cg_lua_import(h, "lib/common", &e);
    CHECK(rc == 0, "import lib/common: %s", rc ? e.msg : "");
    lua_State *L = cg_lua_state(h);
    if (!rc) {
        lua_getfield(L, -1, "kernel_head");
        lua_pushstring(L, "k");
        lua_pushinteger(L, 128);
        lua_createtable(L, CG_ARG_ROLES, 0);
        for (int r = CG_ARG_ROLES - 1, i = 1; r >= 0; r--, i++) { /* the table's order reversed */
            lua_createtable(L, 1, 0);
            lua_pushstring(L, cg_arg_role_name((cg_arg_role)r));
            lua_rawseti(L, -2, 1);
            lua_rawseti(L, -2, i);
        }
        rc = lua_pcall(L, 3, 2, 0);
        CHECK(rc == LUA_OK, "kernel_head with every role: %s", rc ? lua_tostring(L, -1) : "");
        if (rc == LUA_OK) {
            const char *head = lua_tostring(L, -2), *roles = lua_tostring(L, -1);
            cg_arg_role r[CG_MAX_ARGS];
            int n = 0;
            CHECK(roles && cg_args_parse(roles, r, &n) == 0 && n == CG_ARG_ROLES, "roles '%s' parse",
                  roles ? roles : "(none)");
            for (int i = 0; i < n; i++) CHECK((int)r[i] == CG_ARG_ROLES - 1 - i, "role %d in order", i);
            CHECK(head && strstr(head, "k(float* __restrict__ out2, float* __restrict__ out1,") &&
                      strstr(head, " const float* __restrict__ in3, const float* __restrict__ in2, "
                                   "const float* __restrict__ in1, int n, ") &&
                      strstr(head, "float* __restrict__ out, const float* __restrict__ in)"),
                  "further inputs declared const, further outputs not: %s", head ? head : "(none)");
        }
    }
    cg_lua_close(h);
}

/* A manifest whose kernel k_f (line 10) reads the bf16 input (784 an image) and writes h
 * (2048 an image) with weights placed `wplace` (wdtype=bf16) and arguments `args`. */
static int parse_f(const char *wplace, const char *args, cg_manifest *m, cg_err *e)
{
    char text[4096];
    snprintf(text, sizeof text,
             "convgen-manifest 1\nnetwork t\ngenerator 0\nmax_batch 100\n"
             "tensor pixels u8 784\ntensor input bf16 784\ntensor h bf16 2048\ntensor o f32 2048\n"
             "tensor predict i32 1\n"
             "kernel k_f layer=f template=fc_x in=input out=h grid=N*1/128,16,1 block=384,1,1 "
             "shared=100000 weights=%s bias=arg wdtype=bf16 args=%s\n"
             "kernel k_o layer=o template=activation in=h out=o grid=N*8/1,1,1 block=256,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "kernel k_max layer=predict template=argmax in=o out=predict grid=N*1/128,1,1 block=128,1,1 "
             "shared=0 weights=none bias=none args=in,out,weights,bias,n\n"
             "input pixels\noutput o\npredict predict\nhash 0123456789abcdef\n",
             wplace, args);
    return cg_manifest_parse(text, strlen(text), "t/manifest.txt", m, e);
}

static CUresult fake_rc;
static struct {
    int calls;
    CUtensorMapDataType type;
    cuuint32_t rank;
    void *addr;
    cuuint64_t dims[5], strides[5];
    cuuint32_t box[5], es[5];
    CUtensorMapInterleave il;
    CUtensorMapSwizzle swz;
    CUtensorMapFloatOOBfill fill;
} enc;
static CUresult CUDAAPI fake_encode(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr,
                                    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                    const cuuint32_t *es, CUtensorMapInterleave il, CUtensorMapSwizzle swz,
                                    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill)
{
    (void)l2;
    enc.calls++, enc.type = type, enc.rank = rank, enc.addr = addr, enc.il = il, enc.swz = swz, enc.fill = fill;
    for (cuuint32_t d = 0; d < rank && d < 5; d++) {
        enc.dims[d] = dims[d], enc.box[d] = box[d], enc.es[d] = es[d];
        if (d + 1 < rank) enc.strides[d] = strides[d];
    }
    memset(map, 0xab, sizeof *map);
    return fake_rc;
}

/* Tensor maps (role map:TARGET:DIMS:BOX:SWIZZLE): parsed with the kernel's
 * other roles, bound in order by cg_args_bind, their geometry (dims, dense byte
 * strides, box) for a batch, written back as the manifest wrote them, each
 * misuse refused at the record's line; cg_map_encode hands the driver that
 * geometry (a stand-in for cuTensorMapEncodeTiled) and says why where it cannot. */
static void test_maps(cg_manifest *m)
{
    cg_err e;
    const char *good = "map:in:784.n:64.128:128,map:weights:784.2048:64.256:128,bias,out,n";
    int rc = parse_f("arg", good, m, &e);
    CHECK(rc == 0, "a kernel with two tensor maps parses: %s", rc ? e.msg : "");
    if (rc) return;
    const cg_mkernel *k = &m->k[0];
    CHECK(k->nmaps == 2 && k->nargs == 5 && k->args[0] == CG_ARG_MAP && k->argref[0] == 0 &&
              k->args[1] == CG_ARG_MAP && k->argref[1] == 1 && k->args[2] == CG_ARG_BIAS,
          "two maps, args in order: %d maps, %d args", k->nmaps, k->nargs);
    const cg_mmap *a = &k->maps[0], *w = &k->maps[1];
    CHECK(a->target == CG_ARG_IN && a->rank == 2 && a->dims[0] == 784 && a->dims[1] == 0 && a->box[0] == 64 &&
              a->box[1] == 128 && a->swizzle == 128,
          "the input's map: rank %d, dims %lld.%lld, box %d.%d, swizzle %d", a->rank, a->dims[0], a->dims[1],
          a->box[0], a->box[1], a->swizzle);
    CHECK(w->target == CG_ARG_WEIGHTS && w->dims[1] == 2048 && w->box[1] == 256, "the weights' map");
    char txt[160];
    cg_map_text(a, txt, sizeof txt);
    CHECK(!strcmp(txt, "map:in:784.n:64.128:128"), "written back: %s", txt);
    cg_map_text(w, txt, sizeof txt);
    CHECK(!strcmp(txt, "map:weights:784.2048:64.256:128"), "written back: %s", txt);
    uint64_t dims[CG_MAP_RANK], strides[CG_MAP_RANK];
    uint32_t box[CG_MAP_RANK];
    char why[160];
    CHECK(cg_map_geometry(a, 2, 300, dims, strides, box, why, sizeof why) == 0 && dims[0] == 784 && dims[1] == 300 &&
              strides[0] == 1568 && box[0] == 64 && box[1] == 128,
          "geometry for 300 images: %llu x %llu, stride %llu", (unsigned long long)dims[0],
          (unsigned long long)dims[1], (unsigned long long)strides[0]);
    CHECK(cg_map_geometry(a, 2, (1LL << 32) + 1, dims, strides, box, why, sizeof why) == -1 &&
              strstr(why, "dimension 1 of 4294967297"),
          "2^32 + 1 images refused: %s", why);
    CHECK(cg_map_geometry(a, 4, 300, dims, strides, box, why, sizeof why) == -1 &&
              strstr(why, "a box row of 256 bytes"),
          "f32 rows of 64 past a 128-byte swizzle refused: %s", why);
    /* bound in order: the j-th map role the j-th encoded map */
    int count = 7, x = 1, o = 2, b = 3, m0 = 4, m1 = 5;
    void *in[1] = {&x}, *outs[1] = {&o}, *maps[2] = {&m0, &m1}, *argv[CG_MAX_ARGS] = {0};
    CHECK(cg_args_bind(k->args, k->nargs, in, 1, outs, 1, NULL, &b, &count, maps, 2, argv) == 0 &&
              argv[0] == &m0 && argv[1] == &m1 && argv[2] == &b && argv[3] == &o && argv[4] == &count,
          "maps bound in order");
    CHECK(cg_args_bind(k->args, k->nargs, in, 1, outs, 1, NULL, &b, &count, maps, 1, argv) == -1,
          "a map role past the maps given refused");

    /* the harness's parse of a kernel's roles, maps among them */
    {
        cg_arg_role r[CG_MAX_ARGS];
        cg_mmap mm[CG_MAX_MAPS];
        int nr = 0, nm = 0;
        CHECK(cg_args_parse_maps(good, r, &nr, mm, &nm, why, sizeof why) == 0 && nr == 5 && nm == 2 &&
                  r[0] == CG_ARG_MAP && r[1] == CG_ARG_MAP && r[2] == CG_ARG_BIAS && r[3] == CG_ARG_OUT &&
                  r[4] == CG_ARG_N && mm[0].target == CG_ARG_IN && mm[1].target == CG_ARG_WEIGHTS && mm[1].box[1] == 256,
              "cg_args_parse_maps: %d roles, %d maps", nr, nm);
        CHECK(cg_args_parse_maps("in,map:out:2048.n:64.64:128,n", r, &nr, mm, &nm, why, sizeof why) == 0 && nr == 3 &&
                  r[0] == CG_ARG_IN && r[1] == CG_ARG_MAP && r[2] == CG_ARG_N && nm == 1 && mm[0].target == CG_ARG_OUT,
              "a map between plain roles");
        CHECK(cg_args_parse_maps("in,out,n", r, &nr, mm, &nm, why, sizeof why) == 0 && nr == 3 && nm == 0,
              "no maps");
        CHECK(cg_args_parse_maps("in,map:in:784.n:64.128:7,n", r, &nr, mm, &nm, why, sizeof why) == -1 &&
                  strstr(why, "its swizzle is not"),
              "a bad map: %s", why);
        CHECK(cg_args_parse_maps("in,t:x,n", r, &nr, mm, &nm, why, sizeof why) == -1 && strstr(why, "are not roles"),
              "a whole kernel's role: %s", why);
        CHECK(cg_args_parse_maps("in,out,", r, &nr, mm, &nm, why, sizeof why) == -1 && strstr(why, "trailing comma"),
              "a trailing comma: %s", why);
    }

    /* refusals, each at line 10 with its reason */
    static const struct {
        const char *wplace, *args, *says;
    } bad[] = {
        {"arg", "map:bias:784.n:64.128:128,out,n", "its target is none of"},
        {"arg", "map:in:784.n.3:64.128.1:128,out,n", "its dimensions are not"},
        {"arg", "map:in:784.n:64:128,out,n", "its box is not 2 extents"},
        {"arg", "map:in:784.n:64.300:128,out,n", "its box is not 2 extents of 1 to 256"},
        {"arg", "map:in:784.n:64.128:16,out,n", "its swizzle is not 0, 32, 64 or 128"},
        {"arg", "map:in:784:64:128,out,n", "a tensor's last dimension is its images (n)"},
        {"arg", "map:weights:784.n:64.128:128,out,n", "weights have no images"},
        {"arg", "map:in:392.n:64.128:128,out,n", "its dimensions hold 392 elements an image, 'input' 784"},
        {"arg", "map:in:784.n:128.128:128,out,n", "a box row of 256 bytes"},
        {"arg", "map:in:7.112.n:8.16.1:0,out,n", "dimension 1's stride of 14 bytes"},
        {"arg", "map:in1:784.n:64.128:128,out,n", "the kernel reads 1 tensors"},
        {"arg", "map:out1:2048.n:64.128:128,out,n", "the kernel writes 1 tensors"},
        {"none", "map:weights:784.2048:64.256:128,out,n", "over weights not placed as an argument"},
        {"arg", "map:in:784.n:64.8:0,map:in:784.n:64.8:0,map:in:784.n:64.8:0,map:in:784.n:64.8:0,"
                "map:in:784.n:64.8:0,out,n", "more than 4 tensor maps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = parse_f(bad[i].wplace, bad[i].args, m, &e);
        CHECK(rc == -1 && strstr(e.msg, "t/manifest.txt:10: kernel k_f") && strstr(e.msg, bad[i].says),
              "refused (%s): %s", bad[i].says, rc ? e.msg : "parsed");
    }

    /* cg_map_encode: the geometry handed to the driver, the base address as given */
    rc = parse_f("arg", good, m, &e);
    CHECK(rc == 0, "parsed again: %s", rc ? e.msg : "");
    if (rc) return;
    cg_cu cu;
    memset(&cu, 0, sizeof cu);
    CUtensorMap map;
    rc = cg_map_encode(&cu, "k_f", a, CG_DT_BF16, 0x10000, 300, &map, &e);
    CHECK(rc == -1 && strstr(e.msg, "kernel k_f takes a tensor map (map:in:784.n:64.128:128): the driver has no "
                                    "cuTensorMapEncodeTiled"),
          "no encoder: %s", rc ? e.msg : "encoded");
    cu.cuTensorMapEncodeTiled = fake_encode;
    fake_rc = CUDA_SUCCESS;
    rc = cg_map_encode(&cu, "k_f", a, CG_DT_BF16, 0x10000, 300, &map, &e);
    CHECK(rc == 0 && enc.calls == 1 && enc.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && enc.rank == 2 &&
              enc.addr == (void *)0x10000 && enc.dims[0] == 784 && enc.dims[1] == 300 && enc.strides[0] == 1568 &&
              enc.box[0] == 64 && enc.box[1] == 128 && enc.es[0] == 1 && enc.es[1] == 1 &&
              enc.il == CU_TENSOR_MAP_INTERLEAVE_NONE && enc.swz == CU_TENSOR_MAP_SWIZZLE_128B &&
              enc.fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && map.opaque[0] == 0xababababababababULL,
          "encoded: %s", rc ? e.msg : "");
    rc = cg_map_encode(&cu, "k_f", w, CG_DT_F16, 0x20000, 300, &map, &e);
    CHECK(rc == 0 && enc.type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && enc.dims[1] == 2048 && enc.box[1] == 256,
          "the weights' map: no images in it: %s", rc ? e.msg : "");
    rc = cg_map_encode(&cu, "k_f", a, CG_DT_BF16, 0x10008, 300, &map, &e);
    CHECK(rc == -1 && strstr(e.msg, "not 16-byte aligned") && enc.calls == 2, "a misaligned base refused: %s",
          rc ? e.msg : "encoded");
    rc = cg_map_encode(&cu, "k_f", a, CG_DT_F32, 0x10000, 300, &map, &e);
    CHECK(rc == -1 && strstr(e.msg, "a box row of 256 bytes") && enc.calls == 2,
          "refused before the driver: %s", rc ? e.msg : "encoded");
    fake_rc = CUDA_ERROR_INVALID_VALUE;
    rc = cg_map_encode(&cu, "k_f", a, CG_DT_BF16, 0x10000, 300, &map, &e);
    CHECK(rc == -1 && strstr(e.msg, "cuTensorMapEncodeTiled(kernel k_f, map:in:784.n:64.128:128, 300 images)") &&
              strstr(e.msg, "CUDA error 1"), /* (no driver opened: the code as a number) */
          "the driver's refusal named: %s", rc ? e.msg : "encoded");
}

/* common.map_role and kernel_head: a tensor map declared by value as cg_tmap under its
 * name, its role string what the manifest reader takes back; a map without a name refused. */
static void test_lua_maps(cg_manifest *m)
{
    cg_lua *h;
    cg_err e;
    int rc = cg_lua_open(&h, "templates", &e);
    CHECK(rc == 0, "lua: %s", rc ? e.msg : "");
    if (rc) return;
    rc = cg_lua_import(h, "lib/common", &e);
    lua_State *L = cg_lua_state(h);
    if (!rc) {
        lua_setglobal(L, "common");
        const char *code = "local r = common.map_role('in', {784, 'n'}, {64, 128}, 128)\n"
                           "local w = common.map_role('weights', {784, 2048}, {64, 256}, 128)\n"
                           "local head, roles = common.kernel_head('k', 384, { { r, nil, 'tm_x' }, { w, nil, 'tm_w' },\n"
                           "  { 'bias' }, { 'out' }, { 'n' } })\n"
                           "local ok, err = pcall(common.kernel_head, 'k', 384, { { r } })\n"
                           "return head, roles, err";
        rc = luaL_loadstring(L, code) || lua_pcall(L, 0, 3, 0);
        CHECK(rc == LUA_OK, "map roles through kernel_head: %s", rc ? lua_tostring(L, -1) : "");
        if (rc == LUA_OK) {
            const char *head = lua_tostring(L, -3), *roles = lua_tostring(L, -2), *err = lua_tostring(L, -1);
            CHECK(head && strstr(head, "k(const __grid_constant__ cg_tmap tm_x, const __grid_constant__ cg_tmap tm_w,"),
                  "maps by value: %s", head ? head : "(none)");
            CHECK(roles && !strcmp(roles, "map:in:784.n:64.128:128,map:weights:784.2048:64.256:128,bias,out,n"),
                  "roles: %s", roles ? roles : "(none)");
            int prc = roles ? parse_f("arg", roles, m, &e) : -1;
            CHECK(prc == 0 && m->k[0].nmaps == 2, "the manifest reader takes them back: %s", prc ? e.msg : "");
            CHECK(err && strstr(err, "has no C name"), "a map without a name refused: %s", err ? err : "(none)");
        }
    }
    cg_lua_close(h);
}

int main(void)
{
    {
        cg_manifest *lm = malloc(sizeof *lm);
        if (lm) test_layer_into(lm);
        free(lm);
    }
    cg_manifest *m = malloc(sizeof *m);
    if (!m) return 1;
    test_inputs(m);
    test_outputs(m);
    test_refusals(m);
    test_pdl(m);
    test_wdtype(m);
    test_feed(m);
    test_places(m);
    test_whole(m);
    test_views(m);
    test_hwc(m);
    test_lua_roles();
    test_maps(m);
    test_lua_maps(m);
    free(m);
    return cg_test_done("test_manifest");
}
