-- splitk_reduce.lua — the second kernel of a split reduction (conv2d_igemm with
-- split > 1, which the planner chooses for small batches): the S partial sums
-- of every output, stored as partials[S][n][M][P], added in a fixed order (part
-- 0, then 1 .. S-1: the same sums whatever order the blocks ran in), then the
-- bias and the activation (where the conv's epilogue is fused; else the pool
-- kernel after this one applies it). One thread per four outputs where M*P is a
-- multiple of four (float4 loads and stores: every part and image then starts
-- on a multiple of four), else one per output. Where the conv's epilogue pools 2x2
-- (max or average: `pool`), the partials hold every GEMM column, [S][n][M][4P], a
-- pooling window's four conv outputs side by side: one thread per pooled output
-- adds the window's float4 of every part in the same order, then pools as the
-- conv's epilogue would have (max: the largest of the four, then the bias and the
-- activation; average: the bias and the activation on each, then their mean).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.out_slice = true   -- common.out_slice: the output written into a concat's slice
T.doc = "sums a split reduction's partial sums in order, then bias and activation"
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
% if not bias then
    (void)b;
% end
% if pool then
    // in: the partial sums [{{S}}][n][{{M}}][{{4 * P}}] (2x2 windows of four columns), out: n x {{M}} x {{P}}:
    // the sum of the {{S}} parts in order, then 2x2 {{pool}}{{bias and ", bias" or ""}}{{act_name ~= "none" and (", " .. act_name) or ""}}
% else
    // in: the partial sums [{{S}}][n][{{M}}][{{P}}], out: n x {{M}} x {{P}}: the sum of the {{S}} parts in
    // order{{bias and ", bias" or ""}}{{act_name ~= "none" and (", " .. act_name) or ""}}
% end
% if pool then
    // the four columns of a pooling window, summed over the parts, then pooled {{pool}}
    const int i = blockIdx.x * {{block}} + threadIdx.x;   // pooled output i of the batch: window i
    if (i >= n * {{MP}}) return;
%   if OS ~= MP then
    const int o = (i / {{MP}}) * {{OS}} + i % {{MP}};   // into a concat's slice: its image stride
%   end
    const {{v4}}* const p = reinterpret_cast<const {{v4}}*>(in) + i;
    const int part = n * {{MP}};   // windows of one part
    {{v4}} a = p[0];
#pragma unroll
    for (int s = 1; s < {{S}}; s++) {
        const {{v4}} t = p[s * part];
        a.x += t.x, a.y += t.y, a.z += t.z, a.w += t.w;
    }
%   local bv = bias and " + bv" or ""
%   if bias then
    const {{acc_t}} bv = {{w_to_acc("__ldg(b + (i / " .. P .. ") % " .. M .. ")")}};
%   end
%   if pool == "max" then
    const {{acc_t}} v = fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)){{bv}};
    out[{{oi}}] = {{from_acc(act("v"))}};
%   else
    out[{{oi}}] = {{from_acc("(" .. act("a.x" .. bv) .. " + " .. act("a.y" .. bv) .. " +\n        " .. act("a.z" .. bv) .. " + " .. act("a.w" .. bv) .. ") * 0.25f")}};
%   end
% elseif vec then
    const int q = blockIdx.x * {{block}} + threadIdx.x;   // outputs 4q .. 4q + 3 of the batch
    if (q >= n * {{MP // 4}}) return;
    const {{v4}}* const p = reinterpret_cast<const {{v4}}*>(in) + q;
    const int part = n * {{MP // 4}};   // quads of one part
    {{v4}} a = p[0];
#pragma unroll
    for (int s = 1; s < {{S}}; s++) {
        const {{v4}} t = p[s * part];
        a.x += t.x, a.y += t.y, a.z += t.z, a.w += t.w;
    }
%   if bias and P % 4 == 0 then
    const {{acc_t}} bv = {{w_to_acc("__ldg(b + (q / " .. (P // 4) .. ") % " .. M .. ")")}};   // one map for the four
    a.x += bv, a.y += bv, a.z += bv, a.w += bv;
%   elseif bias then
    const int e = (4 * q) % {{MP}};   // the first one's place in its image; the four may span two maps
    a.x += {{w_to_acc("__ldg(b + e / " .. P .. ")")}};
    a.y += {{w_to_acc("__ldg(b + (e + 1) / " .. P .. ")")}};
    a.z += {{w_to_acc("__ldg(b + (e + 2) / " .. P .. ")")}};
    a.w += {{w_to_acc("__ldg(b + (e + 3) / " .. P .. ")")}};
%   end
%   if act_name ~= "none" then
    a.x = {{act("a.x")}};
    a.y = {{act("a.y")}};
    a.z = {{act("a.z")}};
    a.w = {{act("a.w")}};
%   end
    reinterpret_cast<{{v4}}*>(out)[q] = a;
% else
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{MP}}) return;
    const int part = n * {{MP}};   // elements of one part
    {{acc_t}} a = {{to_acc("in[i]")}};
#pragma unroll
    for (int s = 1; s < {{S}}; s++) a += {{to_acc("in[s * part + i]")}};
%   if bias then
    a += {{w_to_acc("__ldg(b + (i / " .. P .. ") % " .. M .. ")")}};
%   end
%   if OS ~= MP then
    out[(i / {{MP}}) * {{OS}} + i % {{MP}}] = {{from_acc(act("a"))}};   // into a concat's slice: its image stride
%   else
    out[i] = {{from_acc(act("a"))}};
%   end
% end
}
]], "splitk_reduce")

-- l: { S (parts), M, P (outputs a map), bias (boolean), act, pool ("max" or "avg"
-- where the conv's epilogue pools 2x2: P is then the pooled outputs, the partials
-- 4P a map; nil else), final (false where a pool or activation kernel follows, so
-- the sums are not the layer's output) } of the split conv
function T.kernel(l, p)
  local act = l.act or "none"
  local ty = common.types(l)
  local pool = l.pool
  -- the vector paths add the partials in their own type: FP32 partial sums (dtype
  -- f32, the accumulator's width) into an FP32 output
  local f32_in = (l.in_dtype or l.dtype or "f32") == "f32"
  local f32_out = (l.out_dtype or l.dtype or "f32") == "f32"
  if pool and (not f32_in or (pool ~= "max" and pool ~= "avg")) then
    error("splitk_reduce pools 2x2 max or avg from f32 partial sums", 2)
  end
  -- the output written into a concat's slice (common.out_slice): its image stride; one
  -- output a thread then (the slice's first element need not be 16-byte aligned)
  local slice = common.out_slice(l, l.final ~= false)
  local vec = not pool and not slice and (l.M * l.P) % 4 == 0 and f32_in and f32_out
  local name = string.format("splitk_reduce_s%d_m%dp%d_%s%s%s_b%d", l.S, l.M, l.P, act, l.bias and "_bias" or "",
    pool and ("_" .. pool .. "2") or "", p.block) .. (slice and slice.tag or "")
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = ty }))
  local per = vec and l.M * l.P // 4 or l.M * l.P
  return {
    name = name,
    args = args,
    source = source(common.typed(l, { name = name, head = head, block = p.block, S = l.S, M = l.M, P = l.P,
      MP = l.M * l.P, bias = l.bias, vec = vec, pool = pool or false,
      OS = slice and slice.stride or l.M * l.P,
      oi = slice and "o" or "i",
      v4 = (vec or pool) and common.vec_t(ty.in_t, 4) or nil, act_name = act,
      act = function(e) return common.act(act, e) end })),
    grid = { common.batch_dim(per, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = l.bias and "arg" or "none",
    out_elems = l.M * l.P,
    shape = pool and string.format("%d parts of %dx%d -> 2x2 %s, %s%s, %dx%d", l.S, l.M, 4 * l.P, pool,
        l.bias and "bias, " or "", act, l.M, l.P)
      or string.format("%d parts of %dx%d -> %s%s, %dx%d", l.S, l.M, l.P, l.bias and "bias, " or "", act,
      l.M, l.P)
      .. (slice and string.format(", into a slice of %d values an image", slice.stride) or ""),
    out_slice = slice ~= nil,
  }
end
return T
