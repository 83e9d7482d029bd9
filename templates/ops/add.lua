-- add.lua — the elementwise sum of 2 to 4 tensors of one shape (a residual
-- connection), the layer's activation applied to the sum. Inputs are the roles
-- in, in1, in2, in3 in the layer's `input` order; summed in that order in the
-- accumulator type. Four elements a load and a store (float4, or 8 bytes of 16-bit
-- elements) where the elements per image are a multiple of 4 (every tensor is one
-- allocation, so image i's elements start 16- or 8-byte aligned), single elements
-- otherwise. (16-bit tensors had single elements: zoo-residual's bf16 add of 16,384
-- elements an image took 0.774 ms at 10,000 images on an H200, a third of its bytes' time.)

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "elementwise sum of 2 to 4 tensors, activation fused"
T.params = { common.block_param(256) }

local ROLES = { "in", "in1", "in2", "in3" }

function T.check(l, _)
  if l.n_in < 2 or l.n_in > #ROLES then return "add sums 2 to 4 tensors, got " .. l.n_in, nil end
  return nil
end

local source = engine.compile([[
{{head}}
{
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{V}}) return;
% if width == 4 then
% for k = 1, #names do
    const {{vin}} x{{k - 1}} = reinterpret_cast<const {{vin}}*>({{names[k]}})[i];
% end
    {{vout}} y;
% for _, c in ipairs({ "x", "y", "z", "w" }) do
    y.{{c}} = {{from_acc(act(sum(c)))}};
% end
    reinterpret_cast<{{vout}}*>(out)[i] = y;
% else
    const {{acc_t}} v = {{sum(nil)}};
    out[i] = {{from_acc(act("v"))}};
% end
}
]], "add")

-- l: { elems = elements per image of each input, n_in = inputs, act = "none"|"tanh"|"relu" }
function T.kernel(l, p)
  local types = common.types(l)
  local wide = function(t) return t == "float" or common.is_half(t) end
  local width = (l.elems % 4 == 0 and wide(types.in_t) and wide(types.out_t)) and 4 or 1
  local name = string.format("add%d_%s_e%d_v%d_b%d", l.n_in, l.act, l.elems, width, p.block)
  local args, names = { types = types }, {}
  for k = 1, l.n_in do
    args[k] = { ROLES[k] }
    names[k] = ROLES[k]
  end
  args[#args + 1] = { "out" }
  args[#args + 1] = { "n" }
  local head, roles = common.kernel_head(name, p.block, args)
  -- the sum of every input's element (component c of the float4 loads, or [i])
  local function sum(c)
    local terms = {}
    for k = 1, l.n_in do
      terms[k] = types.to_acc(c and string.format("x%d.%s", k - 1, c) or (names[k] .. "[i]"))
    end
    return table.concat(terms, " + ")
  end
  local V = l.elems // width
  return {
    name = name,
    args = roles,
    source = source(common.typed(l, { name = name, head = head, block = p.block, V = V, width = width,
                      names = names, sum = sum, act = function(e) return common.act(l.act, e) end,
                      vin = common.vec_t(types.in_t, width), vout = common.vec_t(types.out_t, width) })),
    grid = { common.batch_dim(V, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d inputs of %d elements, %s", l.n_in, l.elems, l.act),
  }
end
return T
