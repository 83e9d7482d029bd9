-- input_u8.lua — images arrive as bytes; x = pixel * scale + offset, on the device.
-- Four pixels per thread (one 32-bit load, one 16-byte store, 8 bytes for 16-bit
-- tensors) when the image size allows it, so the conversion runs at copy speed.

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
    const int i = blockIdx.x * {{block}} + threadIdx.x;   // one thread per {{vec}} pixel(s)
    if (i >= n * {{E // vec}}) return;
% if norm then
    // per channel: x = pixel * (scale / std[c]) + (-mean[c] / std[c])
    const {{acc_t}} fa[{{C}}] = { {{fa}} };
    const {{acc_t}} fb[{{C}}] = { {{fb}} };
    const int c = ({{vec == 4 and "i * 4" or "i"}} / {{HW}}) % {{C}};
    const {{acc_t}} a = fa[c], t = fb[c];
% end
% if vec == 4 and half then
    const uchar4 p = reinterpret_cast<const uchar4*>(in)[i];
    {{vec_t(out_t, 4)}} y;
%   for _, c in ipairs({ "x", "y", "z", "w" }) do
    y.{{c}} = {{from_acc("fmaf((" .. acc_t .. ")p." .. c .. ", " .. sc .. ", " .. of .. ")")}};
%   end
    reinterpret_cast<{{vec_t(out_t, 4)}}*>(out)[i] = y;
% elseif vec == 4 then
    const uchar4 p = reinterpret_cast<const uchar4*>(in)[i];
    reinterpret_cast<{{vec_t(out_t, 4)}}*>(out)[i] = make_float4(
        fmaf(({{acc_t}})p.x, {{sc}}, {{of}}), fmaf(({{acc_t}})p.y, {{sc}}, {{of}}),
        fmaf(({{acc_t}})p.z, {{sc}}, {{of}}), fmaf(({{acc_t}})p.w, {{sc}}, {{of}}));
% else
    out[i] = {{from_acc("fmaf((" .. acc_t .. ")in[i], " .. sc .. ", " .. of .. ")")}};
% end
}
]], "input_u8")

-- l: { elems = C*H*W, scale_text, offset_text, and with the input's mean and std
-- norm = { { factor_text, term_text } per channel }, C, HW = H*W }
function T.kernel(l, p)
  -- pixels in, the network's first tensor (the layers' dtype) out
  local ty = { in_dtype = "u8", out_dtype = l.dtype }
  local out_t = common.types(ty).out_t
  -- four pixels to a thread where the output has a 4-wide vector type (float4, or 8 bytes of
  -- 16-bit values: one pixel a thread took zoo-vgg3x3's 4,096 pixels an image 0.199 ms in bf16
  -- at 10,000 images on an H200, six times its bytes' time); with a mean and std, where the
  -- four lie in one channel
  local half = common.is_half(out_t)
  local vec = (l.elems % 4 == 0 and (out_t == "float" or half) and (not l.norm or l.HW % 4 == 0)) and 4 or 1
  local name = string.format("input_u8_e%d_b%d_%s", l.elems, p.block, common.pixel_tag(l))
  local sc, of, fa, fb = l.scale_text .. "f", l.offset_text .. "f", nil, nil
  if l.norm then
    local a, t = {}, {}
    for c, ft in ipairs(l.norm) do a[c], t[c] = ft[1] .. "f", ft[2] .. "f" end
    sc, of, fa, fb = "a", "t", table.concat(a, ", "), table.concat(t, ", ")
  end
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(ty) }))
  return {
    name = name,
    args = args,
    source = source(common.typed(ty, { name = name, head = head, block = p.block, E = l.elems, vec = vec,
                      vec_t = common.vec_t, sc = sc, of = of, norm = l.norm ~= nil, fa = fa, fb = fb, C = l.C,
                      HW = l.HW, half = half })),
    grid = { common.batch_dim(l.elems // vec, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = l.norm and string.format("%d bytes -> %d floats, x = p * a[c] + t[c] (a = scale / std[c], t = " ..
        "-mean[c] / std[c]) over %d channels", l.elems, l.elems, l.C)
      or string.format("%d bytes -> %d floats, x = p * %s + %s", l.elems, l.elems, l.scale_text, l.offset_text),
  }
end
return T
