-- pool.lua — a standalone pool over a conv's output (used when a conv's epilogue
-- does not pool): max or average over K x K windows with a stride (windows that
-- do not fit are dropped), or the global average of each map. The conv's
-- activation is applied here, to each value read: act(max) = max(act) for the
-- monotone activations, and an average must average activated values.
-- Window pools: one thread per pooled output. Global average: G lanes per map
-- (a power of two, about one lane per eight values, at most a warp), each summing
-- every G-th value, then a shuffle reduction within the G: a 4x4 map takes two
-- lanes, not a warp of which half would idle.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "max or average pool (K x K, stride S) or global average, with the conv's activation"
T.out_slice = true   -- common.out_slice: the output written into a concat's slice
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
% if global then
    // in: n x {{C}} x {{H}} x {{W}}, out: n x {{C}}: the mean of {{act_name}}(x) over each map,
    // {{G}} lane{{G > 1 and "s" or ""}} per map; every lane of a warp takes part in the shuffles
    const int t = blockIdx.x * {{block}} + threadIdx.x;
    const int i = t / {{G}};
    const bool live = i < n * {{C}};
    {{acc_t}} s = 0.0f;
    if (live) {
        const {{in_t}}* p = in + i * {{H * W}};
        for (int j = t % {{G}}; j < {{H * W}}; j += {{G}}) s += {{act(to_acc("p[j]"))}};
    }
%   if G > 1 then
#pragma unroll
    for (int o = {{G // 2}}; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
%   end
    if (live && t % {{G}} == 0) out[{{oi}}] = {{from_acc("s * " .. inv)}};
% else
    // in: n x {{C}} x {{H}} x {{W}}, out: n x {{C}} x {{OH}} x {{OW}}: {{kind}} of {{act_name}}(x) over
    // {{PK}}x{{PK}} windows, stride {{PS}}
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{C * OH * OW}}) return;
    const int plane = i / {{OH * OW}};          // image * {{C}} + channel
    const int r = i - plane * {{OH * OW}};
    const int oh = r / {{OW}}, ow = r - oh * {{OW}};
%   if PP > 0 then
    // padded by {{PP}}: the window's origin may lie outside the map; max skips such
    // positions, the average counts them as zeros (divides by {{PK * PK}}, PyTorch's
    // count_include_pad=True)
    const {{in_t}}* p = in + plane * {{H * W}};
    const int h0 = oh * {{PS}} - {{PP}}, w0 = ow * {{PS}} - {{PP}};
    {{acc_t}} v = {{kind == "max" and "-3.402823466e+38f" or "0.0f"}};
%     for r = 0, PK - 1 do
    if ((unsigned)(h0 + {{r}}) < {{H}}u) {
%       for s = 0, PK - 1 do
        if ((unsigned)(w0 + {{s}}) < {{W}}u) {
%         if kind == "max" then
            v = fmaxf(v, {{to_acc("p[(h0 + " .. r .. ") * " .. W .. " + w0 + " .. s .. "]")}});
%         else
            v += {{act(to_acc("p[(h0 + " .. r .. ") * " .. W .. " + w0 + " .. s .. "]"))}};
%         end
        }
%       end
    }
%     end
%     if kind == "max" then
    out[{{oi}}] = {{from_acc(act("v"))}};
%     else
    out[{{oi}}] = {{from_acc("v * " .. inv)}};
%     end
%   else
    const {{in_t}}* p = in + plane * {{H * W}} + oh * {{PS * W}} + ow * {{PS}};
%   if kind == "max" then
    {{acc_t}} v = {{to_acc("p[0]")}};
%     for r = 0, PK - 1 do
%       for s = 0, PK - 1 do
%         if r + s > 0 then
    v = fmaxf(v, {{to_acc("p[" .. (r * W + s) .. "]")}});
%         end
%       end
%     end
    out[{{oi}}] = {{from_acc(act("v"))}};
%   else
    {{acc_t}} v = 0.0f;
%     for r = 0, PK - 1 do
%       for s = 0, PK - 1 do
    v += {{act(to_acc("p[" .. (r * W + s) .. "]"))}};
%       end
%     end
    out[{{oi}}] = {{from_acc("v * " .. inv)}};
%   end
%   end
% end
}
]], "pool")

-- l: { C, H, W } of the tensor being pooled (a conv's output before its pool),
-- kind "max" | "avg" | "global_avg", PK, PS (window pools), PP (window pools:
-- padding on every side, 0..PK/2, default 0), act (of the conv)
function T.kernel(l, p)
  local global = l.kind == "global_avg"
  local act = l.act or "none"
  local PP = l.PP or 0
  local OH, OW, name
  if global then
    OH, OW = 1, 1
    name = string.format("pool_gavg_%s_c%dh%dw%d_b%d", act, l.C, l.H, l.W, p.block)
  else
    OH, OW = (l.H + 2 * PP - l.PK) // l.PS + 1, (l.W + 2 * PP - l.PK) // l.PS + 1
    name = string.format("pool_%s%ds%d%s_%s_c%dh%dw%d_b%d", l.kind, l.PK, l.PS, PP > 0 and ("p" .. PP) or "", act,
      l.C, l.H, l.W, p.block)
  end
  -- output element i (of n x E) into a concat's slice (common.out_slice): image i / E at its stride
  local E = global and l.C or l.C * OH * OW
  local slice = common.out_slice(l, true)
  if slice then name = name .. slice.tag end
  local oi = slice and string.format("i + i / %d * %d", E, slice.stride - E) or "i"
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(l) }))
  local count = global and l.H * l.W or l.PK * l.PK
  -- lanes per map of the global average: a power of two near count/8, 1 to 32
  local G = 1
  while G < 32 and G * 8 < count do G = G * 2 end
  local k = {
    name = name,
    args = args,
    source = source(common.typed(l, { name = name, head = head, block = p.block, global = global, kind = l.kind, G = G,
                      C = l.C, H = l.H, W = l.W, OH = OH, OW = OW, PK = l.PK, PS = l.PS, PP = PP,
                      inv = string.format("%.9ef", 1.0 / count), act_name = act, oi = oi,
                      act = function(e) return common.act(act, e) end })),
    grid = { global and common.batch_dim(l.C * G, p.block) or common.batch_dim(l.C * OH * OW, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.C * OH * OW,
    shape = global and string.format("%dx%dx%d -> %s, global average -> %dx1x1", l.C, l.H, l.W, act, l.C)
      or string.format("%dx%dx%d -> %s, %s-pool %dx%d stride %d%s -> %dx%dx%d", l.C, l.H, l.W, act, l.kind,
        l.PK, l.PK, l.PS, PP > 0 and (" padding " .. PP) or "", l.C, OH, OW),
    out_slice = slice ~= nil,
  }
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  return k
end
return T
