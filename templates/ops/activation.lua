-- activation.lua — a standalone elementwise activation (used when a conv's
-- epilogue is not fused).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "elementwise activation"
T.out_slice = true   -- common.out_slice: the output written into a concat's slice
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
    out[{{oi}}] = {{from_acc(act("v"))}};
}
]], "activation")

-- l: { elems = per-image elements, act = "tanh"|"relu" }
function T.kernel(l, p)
  local name = string.format("activation_%s_e%d_b%d", l.act, l.elems, p.block)
  -- output element i (of n x elems) into a concat's slice (common.out_slice): image i / elems at its stride
  local slice = common.out_slice(l, true)
  if slice then name = name .. slice.tag end
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(l) }))
  local k = {
    name = name,
    args = args,
    source = source(common.typed(l, { name = name, head = head, block = p.block, E = l.elems,
                      oi = slice and string.format("i + i / %d * %d", l.elems, slice.stride - l.elems) or "i",
                      act = function(e) return common.act(l.act, e) end })),
    grid = { common.batch_dim(l.elems, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d elements, %s", l.elems, l.act),
    out_slice = slice ~= nil,
  }
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  return k
end
return T
