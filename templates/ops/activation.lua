-- activation.lua — a standalone elementwise activation (used when a conv's
-- epilogue is not fused).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "elementwise activation"
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{E}}) return;
    const {{acc_t}} v = {{to_acc("in[i]")}};
    out[i] = {{from_acc(act("v"))}};
}
]], "activation")

-- l: { elems = per-image elements, act = "tanh"|"relu" }
function T.kernel(l, p)
  local name = string.format("activation_%s_e%d_b%d", l.act, l.elems, p.block)
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(l) }))
  return {
    name = name,
    args = args,
    source = source(common.typed(l, { name = name, head = head, block = p.block, E = l.elems,
                      act = function(e) return common.act(l.act, e) end })),
    grid = { common.batch_dim(l.elems, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d elements, %s", l.elems, l.act),
  }
end
return T
