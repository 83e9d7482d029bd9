-- activation.lua — a standalone elementwise activation (used when a conv's
-- epilogue is not fused).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "elementwise activation"
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
extern "C" __global__ void __launch_bounds__({{block}})
{{name}}(const float* __restrict__ in, float* __restrict__ out,
{{pad}} const float* __restrict__ w, const float* __restrict__ b, int n)
{
    (void)w;
    (void)b;
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{E}}) return;
    const float v = in[i];
    out[i] = {{act("v")}};
}
]], "activation")

-- l: { elems = per-image elements, act = "tanh"|"relu" }
function T.kernel(l, p)
  local name = string.format("activation_%s_e%d_b%d", l.act, l.elems, p.block)
  return {
    name = name,
    source = source({ name = name, pad = string.rep(" ", #name), block = p.block, E = l.elems,
                      act = function(e) return common.act(l.act, e) end }),
    grid = { common.batch_dim(l.elems, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d elements, %s", l.elems, l.act),
  }
end
return T
