-- input_u8.lua — images arrive as bytes; x = pixel * scale + offset, on the device.
-- Four pixels per thread (one 32-bit load, one 16-byte store) when the image
-- size allows it, so the conversion runs at copy speed.

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
% if vec == 4 then
    const uchar4 p = reinterpret_cast<const uchar4*>(in)[i];
    reinterpret_cast<{{vec_t(out_t, 4)}}*>(out)[i] = make_float4(
        fmaf(({{acc_t}})p.x, {{scale}}f, {{offset}}f), fmaf(({{acc_t}})p.y, {{scale}}f, {{offset}}f),
        fmaf(({{acc_t}})p.z, {{scale}}f, {{offset}}f), fmaf(({{acc_t}})p.w, {{scale}}f, {{offset}}f));
% else
    out[i] = {{from_acc("fmaf((" .. acc_t .. ")in[i], " .. scale .. "f, " .. offset .. "f)")}};
% end
}
]], "input_u8")

-- The float32 bits of a scale or offset as 8 hex digits: the kernel's name
-- carries them, so two networks' input kernels of one size but other scaling
-- never share a name (their sources linked into one program would clash).
local function bits(text)
  return string.format("%08x", string.unpack("<I4", string.pack("<f", tonumber(text))))
end

-- l: { elems = C*H*W, scale = s, offset = o }
function T.kernel(l, p)
  -- pixels in, the network's first tensor (the layers' dtype) out
  local ty = { in_dtype = "u8", out_dtype = l.dtype }
  local out_t = common.types(ty).out_t
  -- four pixels to a thread where the output has a 4-wide vector type (make_float4: FP32)
  local vec = (l.elems % 4 == 0 and out_t == "float") and 4 or 1
  local name = string.format("input_u8_e%d_b%d_s%so%s", l.elems, p.block, bits(l.scale_text), bits(l.offset_text))
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(ty) }))
  return {
    name = name,
    args = args,
    source = source(common.typed(ty, { name = name, head = head, block = p.block, E = l.elems, vec = vec,
                      vec_t = common.vec_t, scale = l.scale_text, offset = l.offset_text })),
    grid = { common.batch_dim(l.elems // vec, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d bytes -> %d floats, x = p * %s + %s", l.elems, l.elems, l.scale_text, l.offset_text),
  }
end
return T
