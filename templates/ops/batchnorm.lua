-- batchnorm.lua — a batch norm that runs as a kernel of its own (one not folded
-- into a conv before it): y = act(x * a[c] + t[c]) per channel c, a and t the
-- folded scale and shift the weights loader makes (runtime/formats/weights.c,
-- cg_weights_fold_bn: a = gamma / sqrt(running_var + eps), t = beta -
-- running_mean * a), taken as the layer's weights and bias. One thread per element.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "per-channel scale and shift (a batch norm), with its activation"
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{E}}) return;
    const int c = (i / {{HW}}) % {{C}};
    const {{acc_t}} v = fmaf({{to_acc("in[i]")}}, {{w_to_acc("w[c]")}}, {{w_to_acc("b[c]")}});
    out[i] = {{from_acc(act("v"))}};
}
]], "batchnorm")

-- l: { elems = C*H*W per image, C, H, W, act }
function T.kernel(l, p)
  local act = l.act or "none"
  local name = string.format("batchnorm_%s_c%dh%dw%d_b%d", act, l.C, l.H, l.W, p.block)
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(l) }))
  return {
    name = name,
    args = args,
    source = source(common.typed(l, { name = name, head = head, block = p.block, E = l.elems, HW = l.H * l.W, C = l.C,
                      act = function(e) return common.act(act, e) end })),
    grid = { common.batch_dim(l.elems, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "arg", bias = "arg",
    out_elems = l.elems,
    shape = string.format("%dx%dx%d, x * scale[c] + shift[c], %s", l.C, l.H, l.W, act),
  }
end
return T
