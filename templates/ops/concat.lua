-- concat.lua — 2 to 4 tensors joined along channels: each image's output is
-- input 0's maps, then input 1's, ... (roles in, in1, in2, in3 in the layer's
-- `input` order). One kernel for all inputs: a thread per output element (a
-- float4 of them where every input's part of an image is a multiple of 4
-- elements), which finds its input by comparing its offset in the image with
-- the parts' bounds, literals in the source.
-- Where the planner placed some inputs in their slices already (their producers
-- wrote there: planner.concat_slices), the kernel copies only the others: l.offs
-- gives each copied part's first element in the output's image, and a thread
-- writes its element there (the kernel's name lists the offsets); a concat of
-- one copied part is then legal.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "channel concatenation of 2 to 4 tensors of one height and width"
T.params = { common.block_param(256) }

local ROLES = { "in", "in1", "in2", "in3" }

function T.check(l, _)
  if #l.parts < (l.offs and 1 or 2) or #l.parts > #ROLES then
    return "concat joins 2 to 4 tensors, got " .. #l.parts, nil
  end
  return nil
end

local source = engine.compile([[
{{head}}
{
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{V}}) return;
    const int img = i / {{V}}, r = i - img * {{V}};
% local lo = 0
% for k = 1, #parts do
%   local P = parts[k] // width
%   if k < #parts then
    {{k == 1 and "if" or "else if"}} (r < {{lo + P}})
%   elseif k > 1 then
    else
%   end
%   if offs then
%     local d = offs[k] // width - lo
        reinterpret_cast<{{vt}}*>(out)[img * {{E // width}} + r{{d >= 0 and (" + " .. d) or (" - " .. -d)}}] = reinterpret_cast<const {{vt}}*>({{names[k]}})[img * {{P}} + r - {{lo}}];
%   else
        reinterpret_cast<{{vt}}*>(out)[i] = reinterpret_cast<const {{vt}}*>({{names[k]}})[img * {{P}} + r - {{lo}}];
%   end
%   lo = lo + P
% end
}
]], "concat")

-- l: { parts = { elements per image of each input }, elems = the output's elements per image,
--      offs = { each part's first element in the output's image } or nil (the parts back to back,
--      filling it) }
function T.kernel(l, p)
  local types = common.types(l)
  local width = types.in_t == "float" and types.out_t == "float" and 4 or 1
  for _, e in ipairs(l.parts) do if e % 4 ~= 0 then width = 1 end end
  local sizes, copied = {}, 0
  for k, e in ipairs(l.parts) do sizes[k], copied = tostring(e), copied + e end
  local name = string.format("concat%d_e%s_v%d_b%d", #l.parts, table.concat(sizes, "_"), width, p.block)
  -- the parts placed where the offsets say (not back to back from 0, or not all of the output)
  local offs = false
  if l.offs then
    local at, apart = 0, copied ~= l.elems
    for k, e in ipairs(l.parts) do
      if l.offs[k] ~= at then apart = true end
      if l.offs[k] % 4 ~= 0 then width = 1 end
      at = at + e
    end
    if apart then
      offs = l.offs
      local o = {}
      for k, x in ipairs(offs) do o[k] = tostring(x) end
      if l.elems % 4 ~= 0 then width = 1 end
      name = string.format("concat%d_e%s_v%d_b%d_of%s_at%s", #l.parts, table.concat(sizes, "_"), width, p.block,
        l.elems, table.concat(o, "_"))
    end
  end
  local args, names = { types = types }, {}
  for k = 1, #l.parts do
    args[k] = { ROLES[k] }
    names[k] = ROLES[k]
  end
  args[#args + 1] = { "out" }
  args[#args + 1] = { "n" }
  local head, roles = common.kernel_head(name, p.block, args)
  -- the elements (vectors) a thread copies: every copied part's
  local V = copied // width
  local shape = string.format("%d inputs of %s elements", #l.parts, table.concat(sizes, ", "))
  if offs then
    local o = {}
    for k, x in ipairs(offs) do o[k] = tostring(x) end
    shape = shape .. string.format(" into %s of %d elements an image (the other parts are written there by " ..
      "their layers' kernels)", #o == 1 and ("element " .. o[1]) or ("elements " .. table.concat(o, ", ")), l.elems)
  end
  return {
    name = name,
    args = roles,
    source = source(common.typed(l, { name = name, head = head, block = p.block, V = V, width = width,
                      parts = l.parts, names = names, vt = common.vec_t(types.in_t, width), offs = offs,
                      E = l.elems })),
    grid = { common.batch_dim(V, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = shape,
  }
end
return T
