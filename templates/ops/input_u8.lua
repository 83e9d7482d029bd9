-- input_u8.lua — images arrive as bytes; x = pixel * scale + offset, on the device.
-- Four pixels per thread (one 32-bit load, one 16-byte store, 8 bytes for 16-bit
-- tensors), so the conversion runs at copy speed. Where the image size is a multiple
-- of 4 (and, with a mean and std, the plane size too) a thread's four lie in one image
-- and one channel; otherwise the batch is read as one run of n * E bytes, four to a
-- thread, with the channel found per pixel and a scalar path for the run's last
-- pixels and for buffers the vector accesses would misalign.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "uint8 pixels to float32 with the spec's scaling"
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
    const int i = blockIdx.x * {{block}} + threadIdx.x;   // one thread per 4 pixels
% if norm then
    // per channel: x = pixel * (scale / std[c]) + (-mean[c] / std[c])
    const {{acc_t}} fa[{{C}}] = { {{fa}} };
    const {{acc_t}} fb[{{C}}] = { {{fb}} };
% end
% if flat then
    const long long total = (long long)n * {{E}}, e0 = 4ll * i;   // the batch's pixels, this thread's first
    if (e0 >= total) return;
    const bool whole = e0 + 4 <= total &&
        ((reinterpret_cast<unsigned long long>(in) & 3) | (reinterpret_cast<unsigned long long>(out) & {{out_align - 1}})) == 0;
    if (whole) {
        const uchar4 p = reinterpret_cast<const uchar4*>(in)[i];
        {{vec_t(out_t, 4)}} y;
%   for k, c in ipairs({ "x", "y", "z", "w" }) do
        y.{{c}} = {{pixel("p." .. c, "e0 + " .. (k - 1))}};
%   end
        reinterpret_cast<{{vec_t(out_t, 4)}}*>(out)[i] = y;
    } else {
        for (long long e = e0; e < total && e < e0 + 4; ++e) out[e] = {{pixel("in[e]", "e")}};
    }
% else
    if (i >= n * {{E // 4}}) return;
%   if norm then
    const int c = (i * 4 / {{HW}}) % {{C}};
    const {{acc_t}} a = fa[c], t = fb[c];
%   end
    const uchar4 p = reinterpret_cast<const uchar4*>(in)[i];
%   if half then
    {{vec_t(out_t, 4)}} y;
%     for _, c in ipairs({ "x", "y", "z", "w" }) do
    y.{{c}} = {{from_acc("fmaf((" .. acc_t .. ")p." .. c .. ", " .. sc .. ", " .. of .. ")")}};
%     end
    reinterpret_cast<{{vec_t(out_t, 4)}}*>(out)[i] = y;
%   else
    reinterpret_cast<{{vec_t(out_t, 4)}}*>(out)[i] = make_float4(
        fmaf(({{acc_t}})p.x, {{sc}}, {{of}}), fmaf(({{acc_t}})p.y, {{sc}}, {{of}}),
        fmaf(({{acc_t}})p.z, {{sc}}, {{of}}), fmaf(({{acc_t}})p.w, {{sc}}, {{of}}));
%   end
% end
}
]], "input_u8")

-- l: { elems = C*H*W, scale_text, offset_text, and with the input's mean and std
-- norm = { { factor_text, term_text } per channel }, C, HW = H*W }
function T.kernel(l, p)
  -- pixels in, the network's first tensor (the layers' dtype) out
  local ty = { in_dtype = "u8", out_dtype = l.dtype }
  local out_t = common.types(ty).out_t
  -- four pixels to a thread, stored as one float4 or 8 bytes of 16-bit values (one pixel a
  -- thread took zoo-vgg3x3's 4,096 pixels an image 0.199 ms in bf16 at 10,000 images on an
  -- H200, six times its bytes' time; zoo-alex's 3x67x67 images 74 us for 1,000 in FP32,
  -- 0.9 TB/s). flat: the four are not known to share an image and a channel
  local half = common.is_half(out_t)
  local flat = not (l.elems % 4 == 0 and (not l.norm or l.HW % 4 == 0))
  local name = string.format("input_u8_e%d_b%d_%s", l.elems, p.block, common.pixel_tag(l))
  local sc, of, fa, fb = l.scale_text .. "f", l.offset_text .. "f", nil, nil
  if l.norm then
    local a, t = {}, {}
    for c, ft in ipairs(l.norm) do a[c], t[c] = ft[1] .. "f", ft[2] .. "f" end
    sc, of, fa, fb = "a", "t", table.concat(a, ", "), table.concat(t, ", ")
  end
  local types = common.types(ty)
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = types }))
  -- flat: pixel value q (an unsigned char expression) at batch element e (a long long
  -- expression) as an output element; the channel is e's plane modulo C
  local function pixel(q, e)
    local a, t = sc, of
    if l.norm then
      local c = string.format("(int)((%s) / %d %% %d)", e, l.HW, l.C)
      a, t = "fa[" .. c .. "]", "fb[" .. c .. "]"
    end
    return types.from_acc(string.format("fmaf((%s)%s, %s, %s)", types.acc_t, q, a, t))
  end
  return {
    name = name,
    args = args,
    source = source(common.typed(ty, { name = name, head = head, block = p.block, E = l.elems,
                      vec_t = common.vec_t, sc = sc, of = of, norm = l.norm ~= nil, fa = fa, fb = fb, C = l.C,
                      HW = l.HW, half = half, flat = flat, pixel = pixel, out_align = half and 8 or 16 })),
    grid = { flat and common.batch_dim(l.elems, 4 * p.block) or common.batch_dim(l.elems // 4, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = l.norm and string.format("%d bytes -> %d floats, x = p * a[c] + t[c] (a = scale / std[c], t = " ..
        "-mean[c] / std[c]) over %d channels", l.elems, l.elems, l.C)
      or string.format("%d bytes -> %d floats, x = p * %s + %s", l.elems, l.elems, l.scale_text, l.offset_text),
  }
end
return T
