-- common.lua — small helpers shared by the kernel templates.
local common = {}

-- CUDA expression applying activation `act` to the float expression `v`.
function common.act(act, v)
  if act == "tanh" then return "tanhf(" .. v .. ")" end
  if act == "relu" then return "fmaxf(" .. v .. ", 0.0f)" end
  if act == "relu6" then return "fminf(fmaxf(" .. v .. ", 0.0f), 6.0f)" end
  -- expf, not __expf: within 2 ulp over the whole range, where __expf's error
  -- grows with |v| (the CPU reference computes 1 / (1 + exp(-v)) in double)
  if act == "sigmoid" then return "(1.0f / (1.0f + expf(-(" .. v .. "))))" end
  if act == "none" then return v end
  error("unknown activation '" .. tostring(act) .. "'", 2)
end

-- The geometry of a conv layer table l (fields C H W M K, and where the spec has
-- them pad_t pad_l pad_b pad_r stride pool pool_stride pool_op): the conv output
-- before the pool CH x CW, after it OH x OW, the padding and stride with their
-- defaults filled in, and the pool as
--   kind  "none" | "max" | "avg" | "global_avg"
--   PK, PS  window side and stride (global: the whole CH x CW map).
-- `tag` is what names add for all this: "" for a valid stride-1 conv with no pool
-- or max2 (whose names say "_pool2", as before), else e.g. "_p1_s2_avg3s2".
function common.conv_geom(l)
  local g = { pt = l.pad_t or 0, pl = l.pad_l or 0, pb = l.pad_b or 0, pr = l.pad_r or 0 }
  g.S = (l.stride and l.stride > 0) and l.stride or 1
  g.CH = (l.H + g.pt + g.pb - l.K) // g.S + 1
  g.CW = (l.W + g.pl + g.pr - l.K) // g.S + 1
  g.kind = "none"
  if (l.pool or 0) > 0 then g.kind = l.pool_op or "max" end
  g.OH, g.OW = g.CH, g.CW
  if g.kind == "global_avg" then
    g.PK, g.PS, g.OH, g.OW = 0, 0, 1, 1
  elseif g.kind ~= "none" then
    g.PK = l.pool
    g.PS = (l.pool_stride and l.pool_stride > 0) and l.pool_stride or l.pool
    g.PP = l.pool_pad or 0
    g.OH, g.OW = (g.CH + 2 * g.PP - g.PK) // g.PS + 1, (g.CW + 2 * g.PP - g.PK) // g.PS + 1
  end
  g.padded = g.pt + g.pl + g.pb + g.pr > 0
  -- the 2x2 max of old, and the non-overlapping windows a thread tile can cover
  g.max2 = g.kind == "max" and g.PK == 2 and g.PS == 2
  g.tiled_pool = (g.kind == "max" or g.kind == "avg") and g.PK == g.PS
  local t = ""
  if g.padded then
    if g.pt == g.pl and g.pt == g.pb and g.pt == g.pr then t = t .. "_p" .. g.pt
    else t = t .. string.format("_p%d_%d_%d_%d", g.pt, g.pl, g.pb, g.pr) end
  end
  if g.S > 1 then t = t .. "_s" .. g.S end
  -- channel groups (l.groups, 1 where absent): map m reads channels
  -- [gi*C/G, (gi+1)*C/G) of its group gi = m // (M/G); names and shapes say so only where G > 1
  g.G = (l.groups and l.groups > 1) and l.groups or 1
  if g.G > 1 then t = t .. "_g" .. g.G end
  g.tag = t
  if g.kind == "global_avg" then g.pool_tag = "_gavg"
  elseif g.kind == "none" then g.pool_tag = ""
  elseif g.max2 then g.pool_tag = "_pool2"
  else g.pool_tag = "_" .. g.kind .. g.PK .. (g.PS ~= g.PK and ("s" .. g.PS) or "") end
  -- the shape line's words: "padding 1, stride 2" and "max-pool 2x2" ...
  local words = {}
  if g.padded then words[#words + 1] = string.format("padding %d,%d,%d,%d", g.pt, g.pl, g.pb, g.pr) end
  if g.S > 1 then words[#words + 1] = "stride " .. g.S end
  if g.G > 1 then words[#words + 1] = "groups " .. g.G end
  g.conv_words = #words > 0 and (" " .. table.concat(words, " ")) or ""
  if g.kind == "global_avg" then g.pool_words = "global average pool"
  elseif g.kind ~= "none" then
    g.pool_words = string.format("%s-pool %dx%d%s", g.kind, g.PK, g.PK, g.PS ~= g.PK and (" stride " .. g.PS) or "")
  end
  return g
end

-- fmaxf over a list of float expressions, as a balanced tree of pairs
-- (fmaxf(fmaxf(a, b), fmaxf(c, d)) for four).
function common.max_tree(terms)
  while #terms > 1 do
    local next = {}
    for i = 1, #terms, 2 do
      next[#next + 1] = terms[i + 1] and string.format("fmaxf(%s, %s)", terms[i], terms[i + 1]) or terms[i]
    end
    terms = next
  end
  return terms[1]
end

-- The `shape` line of a conv kernel: input, conv, epilogue, output.
-- `done` names what the kernel applies ("act" and/or "pool" true).
function common.conv_shape(l, g, act, pooled, M, OH, OW)
  local tail
  if pooled then tail = ", " .. l.act .. ", " .. g.pool_words
  elseif act ~= "none" then tail = ", " .. act
  else tail = "" end
  return string.format("C=%d H=%d W=%d -> M=%d K=%d%s%s -> %dx%dx%d",
    l.C, l.H, l.W, l.M, l.K, g.conv_words, tail, M, OH, OW)
end

-- A check's refusal of a grouped conv layer (groups > 1) by a template that
-- reduces over all C channels for every map: nil for one group, else the message.
function common.refuse_groups(l, tname)
  if l.groups and l.groups > 1 then
    return string.format("%s reduces over all C channels for every map; this layer has groups = %d " ..
      "(use strategy depthwise where groups = C = M, else direct)", tname, l.groups)
  end
  return nil
end

-- All divisors of n that are at most `max`, ascending.
function common.divisors(n, max)
  local out = {}
  for d = 1, math.min(n, max or n) do
    if n % d == 0 then out[#out + 1] = d end
  end
  return out
end

-- lo, lo*2, lo*4, ... up to hi.
function common.powers_of_two(lo, hi)
  local out, v = {}, lo
  while v <= hi do out[#out + 1] = v; v = v * 2 end
  return out
end

-- multiples of `step` from `lo` to `hi`.
function common.multiples(step, lo, hi)
  local out = {}
  for v = lo, hi, step do out[#out + 1] = v end
  return out
end

-- The one parameter of the simple one-thread-per-element kernels.
function common.block_param(default)
  return { name = "block", doc = "threads per block",
           legal = function(_) return common.multiples(32, 32, 1024) end,
           default = function(_) return default end }
end

-- A grid extent that grows with the batch: ceil(N * per / div) blocks.
-- The runtime evaluates it; the template alone decides `per` and `div`.
function common.batch_dim(per, div)
  return string.format("N*%d/%d", per, div)
end

function common.ceil_div(a, b) return (a + b - 1) // b end

-- f(l) for layer table l, computed once a table (a template's default tile, which each
-- parameter's default asks for): the cache holds its tables weakly.
function common.per_layer(f)
  local memo = setmetatable({}, { __mode = "k" })
  return function(l)
    if not memo[l] then memo[l] = f(l) end
    return memo[l]
  end
end

function common.contains(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- Constant memory a network may use for weights and biases, over all its
-- kernels (a fat binary holds them in one module, whose user constant bank
-- is 64 KiB; leave a margin for the compiler's own constants).
common.CONST_BUDGET = 60 * 1024

-- Limits every launch must respect on every supported architecture.
common.MAX_THREADS = 1024
common.MAX_SHARED = 48 * 1024

-- Bytes of shared memory one block of layer l may use on the target the code
-- is generated for (the device's opt-in limit for JIT, the smallest over the
-- chosen architectures for a fat binary); 48 KiB when no target is known.
function common.max_shared(l)
    return l.target and l.target.max_shared or 48 * 1024
end

-- Element types. A tensor's dtype (the name the manifest writes) gives its C type
-- and size; runtime/formats/manifest.c's table has the same rows (test_dtype
-- checks that they agree). f16 and bf16 are half-width floats that kernels load
-- and convert to FP32, accumulate in FP32 and convert back on the store.
common.DTYPES = {
  u8   = { c = "unsigned char", size = 1 },
  f32  = { c = "float",         size = 4 },
  i32  = { c = "int",           size = 4 },
  f16  = { c = "__half",        size = 2 },
  bf16 = { c = "__nv_bfloat16", size = 2 },
}
-- The accumulator (and epilogue) type of every kernel, whatever its tensors hold.
common.ACC = "float"

-- C expression converting `e` of C type `from` to C type `to` ("" where the
-- two are the same type, so FP32 kernels carry no conversions).
function common.convert(from, to, e)
  if from == to then return e end
  if to == "float" then
    if from == "__half" then return "__half2float(" .. e .. ")" end
    if from == "__nv_bfloat16" then return "__bfloat162float(" .. e .. ")" end
    return "(float)(" .. e .. ")"
  end
  if from == "float" then
    if to == "__half" then return "__float2half_rn(" .. e .. ")" end
    if to == "__nv_bfloat16" then return "__float2bfloat16_rn(" .. e .. ")" end
  end
  error("no conversion from " .. from .. " to " .. to, 2)
end

-- The C types a kernel of layer l works with: l.dtype (absent: "f32") is the
-- dtype of its tensors; l.in_dtype, l.out_dtype, l.w_dtype override it for the
-- input, the output and the weights (and bias). The answer:
--   in_t, out_t, w_t, b_t   the element types of the in, out, weights, bias roles
--   acc_t                   the accumulator: FP32 always (common.ACC)
--   to_acc(e)               an input element as acc_t
--   w_to_acc(e)             a weight or bias element as acc_t
--   from_acc(e)             an acc_t value as an output element
-- For FP32 tensors every type is "float" and the conversions return e as it is.
function common.types(l)
  l = l or {}
  local function ctype(dt)
    dt = dt or l.dtype or "f32"
    local d = common.DTYPES[dt]
    if not d then error("unknown dtype '" .. tostring(dt) .. "'", 3) end
    return d.c
  end
  local t = { in_t = ctype(l.in_dtype), out_t = ctype(l.out_dtype), w_t = ctype(l.w_dtype), acc_t = common.ACC }
  t.b_t = t.w_t
  t.to_acc = function(e) return common.convert(t.in_t, t.acc_t, e) end
  t.w_to_acc = function(e) return common.convert(t.w_t, t.acc_t, e) end
  t.from_acc = function(e) return common.convert(t.acc_t, t.out_t, e) end
  return t
end

-- The CUDA vector type of `width` elements of C type `ctype` for wide loads
-- (1: ctype itself): float2, float4; for the 16-bit types the structs of
-- common.HALF_PRELUDE (cg_f16x2, cg_f16x4, cg_bf16x2, cg_bf16x4: 4 and 8 bytes,
-- aligned to their size, so a template's alignment reasoning in elements holds).
local HALF_VEC = { __half = "cg_f16x", __nv_bfloat16 = "cg_bf16x" }
function common.vec_t(ctype, width)
  if width == 1 then return ctype end
  if ctype == "float" and (width == 2 or width == 4) then return "float" .. width end
  if HALF_VEC[ctype] and (width == 2 or width == 4) then return HALF_VEC[ctype] .. width end
  error("no " .. width .. "-wide vector type of " .. ctype, 2)
end

-- A zero of common.vec_t(ctype, width) as a C expression (a 16-bit vector's struct
-- value-initialized).
function common.vec_zero(ctype, width)
  if common.is_half(ctype) then return common.vec_t(ctype, width) .. "{}" end
  return width == 4 and "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" or width == 2 and "make_float2(0.0f, 0.0f)" or "0.0f"
end

-- Whether C type `ctype` is one of the 16-bit floats (__half, __nv_bfloat16).
function common.is_half(ctype) return HALF_VEC[ctype] ~= nil end

-- The 16-bit dtype ("bf16" or "f16") of layer table l's input or weights, nil
-- where both are FP32 (cheap: checks ask it of every candidate configuration).
function common.half_dtype(l)
  local d = l.in_dtype or l.dtype
  if d == "bf16" or d == "f16" then return d end
  d = l.w_dtype or l.dtype
  if d == "bf16" or d == "f16" then return d end
  return nil
end

-- What a kernel with 16-bit tensors opens with (NVRTC has no CUDA headers on its
-- search path, so nothing is included): the types __half and __nv_bfloat16 as
-- their 16 bits, their conversions to and from float (PTX cvt, rounding to
-- nearest even; bf16 below sm_80 in integer arithmetic, bit for bit the same),
-- __ldg of each, and the vector structs of common.vec_t with __ldg as one wide
-- load. Each part once per translation unit (a fat binary's module holds every
-- kernel). The functions are inline, not static: nvcc warns (#177) of every
-- static one a kernel does not call; test_emulate's shim defines CG_HALF_TYPES and the types and
-- conversions for the host.
common.HALF_PRELUDE = [[
#ifndef CG_HALF_TYPES
#define CG_HALF_TYPES
// 16-bit floats: IEEE binary16 and bfloat16, as their bits
struct __align__(2) __half { unsigned short x; };
struct __align__(2) __nv_bfloat16 { unsigned short x; };
__device__ __forceinline__ float __half2float(const __half h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
    return f;
}
__device__ __forceinline__ __half __float2half_rn(const float f)
{
    __half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}
__device__ __forceinline__ float __bfloat162float(const __nv_bfloat16 b)
{
    return __uint_as_float((unsigned)b.x << 16);
}
__device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(const float f)
{
    __nv_bfloat16 b;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b.x) : "f"(f));
#else
    const unsigned u = __float_as_uint(f);
    b.x = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u)
                                          : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
    return b;
}
__device__ __forceinline__ __half __ldg(const __half* p)
{
    __half h;
    h.x = __ldg(reinterpret_cast<const unsigned short*>(p));
    return h;
}
__device__ __forceinline__ __nv_bfloat16 __ldg(const __nv_bfloat16* p)
{
    __nv_bfloat16 b;
    b.x = __ldg(reinterpret_cast<const unsigned short*>(p));
    return b;
}
#endif
#ifndef CG_HALF_VECTORS
#define CG_HALF_VECTORS
// vectors of 16-bit elements for wide loads and stores (4 and 8 bytes)
struct __align__(4) cg_f16x2 { __half x, y; };
struct __align__(8) cg_f16x4 { __half x, y, z, w; };
struct __align__(4) cg_bf16x2 { __nv_bfloat16 x, y; };
struct __align__(8) cg_bf16x4 { __nv_bfloat16 x, y, z, w; };
#ifdef __CUDA_ARCH__
#define CG_HALF_LDG(T, U) \
    __device__ __forceinline__ T __ldg(const T* p) \
    { const U u = __ldg(reinterpret_cast<const U*>(p)); T t; memcpy(&t, &u, sizeof t); return t; }
CG_HALF_LDG(cg_f16x2, unsigned)
CG_HALF_LDG(cg_f16x4, uint2)
CG_HALF_LDG(cg_bf16x2, unsigned)
CG_HALF_LDG(cg_bf16x4, uint2)
#undef CG_HALF_LDG
#endif
#endif
]]

-- Kernel record k with common.HALF_PRELUDE put before its source where layer
-- table l's tensors or weights are 16-bit; k unchanged otherwise (FP32 kernels
-- stay as they were).
function common.add_half_prelude(k, l)
  local t = common.types(l)
  for _, c in ipairs({ t.in_t, t.out_t, t.w_t }) do
    if HALF_VEC[c] then
      k.source = common.HALF_PRELUDE .. k.source
      return k
    end
  end
  return k
end

-- ---- the network's pixels read by a kernel ----
--
-- Images arrive as uint8 pixels, x = pixel * scale + offset (or, with the input's
-- mean and std, pixel * a[c] + t[c] per channel). ops/input_u8.lua converts them
-- in a kernel of its own; a first layer that reads its input element by element
-- may read the pixels instead (planner: the pixel twin), through the converter
-- below. px: { scale_text, offset_text, norm = { { factor_text, term_text } per
-- channel } or nil, C }.

-- The float32 bits of a scale or offset as 8 hex digits.
local function f32_bits(text)
  return string.format("%08x", string.unpack("<I4", string.pack("<f", tonumber(text))))
end

-- What a kernel's name carries of px: the scale's and offset's bits ("s3b808081o00000000"),
-- and with a mean and std "_n" and a 32-bit FNV-1a hash of every factor's and term's bits,
-- so two networks' kernels of one shape but other scaling never share a name (their
-- sources linked into one program would clash).
function common.pixel_tag(px)
  local tag = string.format("s%so%s", f32_bits(px.scale_text), f32_bits(px.offset_text))
  if not px.norm then return tag end
  local h = 0x811c9dc5
  for _, ft in ipairs(px.norm) do
    for _, text in ipairs(ft) do
      for ch in f32_bits(text):gmatch(".") do h = ((h ~ ch:byte()) * 0x01000193) & 0xffffffff end
    end
  end
  return tag .. string.format("_n%08x", h)
end

-- For a kernel reading px: the declaration line its body opens with ("" without a
-- mean and std; else the per-channel factors px_a and terms px_t) and a function(e, c)
-- giving the acc_t value of pixel expression e of channel expression c.
function common.pixel_reader(px, acc_t)
  if not px.norm then
    return "", function(e)
      return string.format("fmaf((%s)(%s), %sf, %sf)", acc_t, e, px.scale_text, px.offset_text)
    end
  end
  local a, t = {}, {}
  for c, ft in ipairs(px.norm) do a[c], t[c] = ft[1] .. "f", ft[2] .. "f" end
  local decl = string.format("    const %s px_a[%d] = { %s }, px_t[%d] = { %s };", acc_t, px.C,
    table.concat(a, ", "), px.C, table.concat(t, ", "))
  return decl, function(e, c)
    if not c then error("pixels normalised per channel need the channel of each read", 2) end
    return string.format("fmaf((%s)(%s), px_a[%s], px_t[%s])", acc_t, e, c, c)
  end
end

-- `values` (a template's values table) with the types of common.types(l) added
-- under their names (in_t, out_t, w_t, b_t, acc_t, to_acc, w_to_acc, from_acc),
-- and common.vec_t as vec_t; returns values.
function common.typed(l, values)
  for k, v in pairs(common.types(l)) do
    if values[k] == nil then values[k] = v end
  end
  if values.vec_t == nil then values.vec_t = common.vec_t end
  return values
end

-- An add computed in the epilogue of the conv that produces one of its operands
-- (planner.residual_adds): the planner sets l.residual = { n = the add's other
-- operands, at = the conv's place among the add's inputs, act = the add's
-- activation } on the conv's layer table, and a template declaring `fuses_add`
-- reads the other operands as inputs in1.. at the element it writes. nil where
-- the layer has none or the kernel's epilogue (`fused`: bias and activation
-- applied, no pool) is not the place; else
--   n, names        the other operands' count and argument names (in1, in2, in3)
--   tag             the kernel name's suffix ("_add2p1_relu")
--   args(list)      a common.std_args list with the roles in1.. put before n
--   sum(e, others)  the add's activation of its inputs' sum in the add's order
--                   (as ops/add.lua sums them): e, the conv's value (its bias and
--                   activation applied), at its place, others[k] (acc_t
--                   expressions) the k-th other operand's element
function common.residual(l, fused)
  local r = l.residual
  if not r or not fused then return nil end
  local t = { n = r.n, names = {}, tag = string.format("_add%dp%d_%s", r.n + 1, r.at, r.act) }
  for k = 1, r.n do t.names[k] = "in" .. k end
  function t.args(list)
    local last = table.remove(list)
    for k = 1, r.n do list[#list + 1] = { t.names[k] } end
    list[#list + 1] = last
    return list
  end
  function t.sum(e, others)
    local terms, j = {}, 1
    for i = 1, r.n + 1 do
      -- (e in parentheses after the first place: its own sum, e.g. + bias, comes first)
      if i == r.at then terms[i] = i > 1 and "(" .. e .. ")" or e else terms[i], j = others[j], j + 1 end
    end
    return common.act(r.act, table.concat(terms, " + "))
  end
  return t
end

-- A layer's output written straight into its slice of a concat's output
-- (planner.concat_slices): the planner sets l.out_slice = { stride = the
-- concat's elements an image } on the table of the kernel that writes the
-- layer's output, where its template declares `T.out_slice`. The runtime binds
-- the `out` argument at the slice's first element (the manifest's view= tensor),
-- so the kernel only changes its image stride: element (img, e) of its output
-- goes to out[img * stride + e]. nil where the layer has none or this kernel
-- does not write the layer's output (`final` false: an unfused epilogue, a
-- split's partial sums); else { stride, tag = the kernel name's suffix
-- ("_os12288": kernels of other strides are other code) }. A template that
-- applies it sets its record's `out_slice`; without that the planner keeps the
-- tensor apart and the concat copies it.
function common.out_slice(l, final)
  local s = l.out_slice
  if not s or not final then return nil end
  return { stride = s.stride, tag = "_os" .. s.stride }
end

-- The kernel contract. A kernel's parameters are named by role; the template
-- lists them in order, `common.kernel_head` writes the declaration, and the
-- kernel record's `args` (which the manifest carries) names the roles, so the
-- runtime binds each argument by its role, never by position. Roles:
--   in       the kernel's first input tensor (const, of the input's dtype): the
--            first of the record's `inputs` list (tensor names the planner sets)
--   in1, in2, in3  its second, third and fourth inputs, where the record lists them
--            (the runtime refuses a role naming an input the list lacks)
--   out      the output tensor
--   out1, out2  a second and third output tensor, where the record names them
--            (`extra_out`: a kernel computing later layers too, ops/tail.lua)
--   weights  the layer's weights, where the record's `weights` says (arg, arg:transposed)
--   bias     the layer's bias
--   n        images in this launch (int)
--   a tensor map, common.map_role(...): the bulk tensor copy engine's view of one of
--            the above's memory (the runtime encodes it; manifest.h, cg_mmap), passed
--            by value as `const __grid_constant__ cg_tmap NAME`; its entry names it
--            ({ common.map_role(...), nil, "tm_in" }) and the source declares the type
--            (common.TMAP_TYPE)
-- An entry is { role, C type, C name }; the name has a default, and the type's
-- default is the role's entry of the argument list's `types` (common.types;
-- FP32 where the list has none), `int` for n.
common.ROLE_DEFAULTS = {
  ["in"] = { "in_t", "in" }, out = { "out_t", "out" }, weights = { "w_t", "w" },
  bias = { "b_t", "b" }, n = { nil, "n" },
  in1 = { "in_t", "in1" }, in2 = { "in_t", "in2" }, in3 = { "in_t", "in3" },
  out1 = { "out_t", "out1" }, out2 = { "out_t", "out2" },
}

-- The role of a tensor map over `target` (in, in1..in3, out, out1, out2 or weights):
-- dims and box lists of extents innermost first (dims' last "n" for a tensor's
-- images: weights have none), swizzle 0, 32, 64 or 128 bytes. The runtime checks
-- what the driver would (strides of 16 bytes, box rows within the swizzle, the
-- dims' elements those of the tensor) when it reads the manifest.
function common.map_role(target, dims, box, swizzle)
  return string.format("map:%s:%s:%s:%d", target, table.concat(dims, "."), table.concat(box, "."), swizzle)
end

-- The kernel parameter type of a tensor map: on the GPU as opaque as the driver's
-- CUtensorMap (128 bytes, 128-aligned in CUDA 13's cuda.h), which NVRTC's sources cannot
-- include; CG_TMAP(t) the address the copies name. Under CG_EMULATION (tests/test_emulate.c)
-- a pointer to the geometry the emulation's runner fills in (its shim's struct cg_tmap_emu:
-- base, dims, byte strides, box, rank, swizzle, element size), CG_TMAP(t) t itself.
common.TMAP_TYPE = [[
#ifndef CG_TMAP_TYPE
#define CG_TMAP_TYPE
#if defined(CG_EMULATION)
typedef const struct cg_tmap_emu *cg_tmap;
#define CG_TMAP(t) (t)
#else
struct __align__(128) cg_tmap { unsigned long long opaque[16]; };
#define CG_TMAP(t) (&(t))
#endif
#endif]]

-- The helpers of a kernel feeding shared memory by the bulk tensor copy engine (after
-- common.TMAP_TYPE): cg_tma_load_1d .. _5d(dst, CG_TMAP(tm), c0, .., bar) copies the box of
-- map tm that starts at (c0, ..) (elements, innermost first; outside the tensor zeros) to
-- shared memory at dst (aligned to the swizzle's 1,024, 512 or 256 bytes), completing
-- its bytes on the mbarrier at bar; cg_mbar_init(bar, arrivals), cg_mbar_fence_init(),
-- cg_mbar_expect_tx(bar, bytes) (one arrival, and the bytes the phase awaits),
-- cg_mbar_arrive(bar) and cg_mbar_wait(bar, parity) (until the phase of that parity has
-- completed). Under CG_EMULATION a copy is done when the call returns, element by element in
-- the swizzle (the 16-byte chunk c of each 128-byte row r at c ^ (r % 8) for 128 bytes,
-- c ^ (r / 2 % 4)... as address bits 4-6 ^ 7-9: bench/scripts/tma_box_starts.cu and
-- tests/test_nvrtc.c checked it on an H200), and the mbarrier calls do nothing: a kernel's
-- emulation orders its copies and their readers with __syncthreads().
function common.tma_helpers()
  local L = {
    "#ifndef CG_TMA_HELPERS",
    "#define CG_TMA_HELPERS",
    "#if defined(CG_EMULATION)",
    "static inline void cg_tma_emu(void* dst, cg_tmap m, const int* c, int rank)",
    "{",
    "    if (rank != m->rank) __builtin_trap();   // (a copy of the wrong rank faults on the GPU too)",
    "    long long total = 1;",
    "    for (int d = 0; d < m->rank; d++) total *= m->box[d];",
    "    const unsigned long long mask = m->swizzle ? (unsigned long long)(m->swizzle / 16 - 1) : 0;",
    "    for (long long e = 0; e < total; e++) {",
    "        long long r = e, off = 0;",
    "        int out = 0;",
    "        for (int d = 0; d < m->rank; d++) {",
    "            const long long x = c[d] + r % m->box[d];",
    "            r /= m->box[d];",
    "            if (x < 0 || x >= m->dims[d]) out = 1;",
    "            else off += x * m->strides[d];",
    "        }",
    "        const unsigned long long lb = (unsigned long long)e * m->esize, pb = lb ^ (((lb >> 7) & mask) << 4);",
    "        unsigned char* const to = (unsigned char*)dst + pb;",
    "        for (int b = 0; b < m->esize; b++) to[b] = out ? 0 : m->base[off + b];",
    "    }",
    "}",
  }
  local coords = { "c0", "c1", "c2", "c3", "c4" }
  for r = 1, 5 do
    local ps = {}
    for d = 1, r do ps[d] = "int " .. coords[d] end
    L[#L + 1] = string.format("static inline void cg_tma_load_%dd(void* dst, cg_tmap m, %s, unsigned long long* bar)",
      r, table.concat(ps, ", "))
    L[#L + 1] = string.format("{ (void)bar; const int c[%d] = { %s }; cg_tma_emu(dst, m, c, %d); }", r,
      table.concat(coords, ", ", 1, r), r)
  end
  L[#L + 1] = "static inline void cg_mbar_init(unsigned long long*, int) {}"
  L[#L + 1] = "static inline void cg_mbar_fence_init() {}"
  L[#L + 1] = "static inline void cg_mbar_expect_tx(unsigned long long*, int) {}"
  L[#L + 1] = "static inline void cg_mbar_arrive(unsigned long long*) {}"
  L[#L + 1] = "static inline void cg_mbar_wait(unsigned long long*, int) {}"
  L[#L + 1] = "#else"
  L[#L + 1] = "__device__ __forceinline__ unsigned cg_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }"
  for r = 1, 5 do
    local ps, regs = {}, {}
    for d = 1, r do ps[d] = "int " .. coords[d]; regs[d] = "%" .. (d + 1) end
    local ins = {}
    for d = 1, r do ins[d] = string.format('"r"(%s)', coords[d]) end
    L[#L + 1] = string.format("__device__ __forceinline__ void cg_tma_load_%dd(void* dst, const cg_tmap* m, %s, "
      .. "unsigned long long* bar)", r, table.concat(ps, ", "))
    L[#L + 1] = "{"
    L[#L + 1] = string.format('    asm volatile("cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes '
      .. '[%%0], [%%1, {%s}], [%%%d];"', r, table.concat(regs, ", "), r + 2)
    L[#L + 1] = string.format('                 :: "r"(cg_smem(dst)), "l"(m), %s, "r"(cg_smem(bar)) : "memory");',
      table.concat(ins, ", "))
    L[#L + 1] = "}"
  end
  L[#L + 1] = [[__device__ __forceinline__ void cg_mbar_init(unsigned long long* bar, int n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(cg_smem(bar)), "r"(n) : "memory");
}
__device__ __forceinline__ void cg_mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void cg_mbar_expect_tx(unsigned long long* bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(cg_smem(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cg_mbar_arrive(unsigned long long* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(cg_smem(bar)) : "memory");
}
__device__ __forceinline__ void cg_mbar_wait(unsigned long long* bar, int parity)
{
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n"
                 :: "r"(cg_smem(bar)), "r"(parity) : "memory");
}
#endif
#endif]]
  return table.concat(L, "\n")
end

-- The standard argument list (in, out, weights, bias, n), with its C names and
-- types: opt.types (common.types of the layer) gives the element types,
-- opt.in_type / opt.out_type override the in and out roles'.
function common.std_args(opt)
  opt = opt or {}
  return {
    { "in", opt.in_type }, { "out", opt.out_type }, { "weights", nil, opt.w_name },
    { "bias", nil, opt.b_name }, { "n" },
    types = opt.types,
  }
end

-- The declaration of kernel `name` with `threads` per block and arguments `args`
-- (see above), two arguments on the name's line and the rest aligned below; and
-- the roles as the record's `args` ("in,out,weights,bias,n"). `attrs`, if
-- given, is written before __launch_bounds__ (e.g. "__cluster_dims__(1, 1, 2)");
-- `min_blocks`, if given, is __launch_bounds__'s second operand: the compiler
-- keeps registers low enough for that many blocks on one SM (1: as many as the
-- thread count allows; without it ptxas picks its own cap, and may spill under it).
function common.kernel_head(name, threads, args, attrs, min_blocks)
  local decl, roles = {}, {}
  local types = args.types or common.types()
  for i, a in ipairs(args) do
    local role = a[1]
    local d = common.ROLE_DEFAULTS[role]
    if type(role) == "string" and role:sub(1, 4) == "map:" then
      if not a[3] then error("tensor map argument '" .. role .. "' has no C name", 2) end
      d = { nil, a[3] }
    end
    if not d then error("unknown kernel argument role '" .. tostring(role) .. "'", 2) end
    local ctype, cname = a[2] or (d[1] and types[d[1]] or "int"), a[3] or d[2]
    if role:sub(1, 4) == "map:" then decl[i] = "const __grid_constant__ cg_tmap " .. cname
    elseif role == "n" then decl[i] = ctype .. " " .. cname
    elseif role:sub(1, 3) == "out" then decl[i] = ctype .. "* __restrict__ " .. cname
    else decl[i] = "const " .. ctype .. "* __restrict__ " .. cname end
    roles[i] = role
  end
  local bounds = min_blocks and string.format("%d, %d", threads, min_blocks) or tostring(threads)
  local lines = { string.format('extern "C" __global__ void %s__launch_bounds__(%s)',
    attrs and (attrs .. " ") or "", bounds) }
  local pad = string.rep(" ", #name)
  local first = table.concat(decl, ", ", 1, math.min(2, #decl))
  lines[2] = name .. "(" .. first .. (#decl > 2 and "," or ")")
  if #decl > 2 then lines[3] = pad .. " " .. table.concat(decl, ", ", 3) .. ")" end
  return table.concat(lines, "\n"), table.concat(roles, ",")
end

-- ---- programmatic dependent launch (sm_90 and newer) ----
--
-- On a target of compute capability 9.0 or newer every kernel opens with
--   griddepcontrol.wait               -- the kernel before it in the stream has completed
--                                     -- and its writes are visible
--   griddepcontrol.launch_dependents  -- the kernel after it may be scheduled
-- before any global memory access, under __CUDA_ARCH__ >= 900 (older archs and
-- the CPU emulation see nothing). The runtime launches such a kernel (its
-- manifest line says pdl=1) with programmatic stream serialization, so that its
-- launch overlaps the tail of the kernel before it; the wait keeps the full
-- dependency (every kernel still reads only completed, flushed results, and a
-- buffer reused by liveness is still written only after its last reader ended).
-- Launched without the attribute both instructions are no-ops. The prologue is
-- emitted for every batch bucket: at large batch launch_dependents lets the next
-- grid in only once every block of this one has started, so it costs nothing.
-- planner.lua applies common.add_pdl to every kernel record, so every template
-- gets it from this one place and the record's `pdl` always says whether the
-- source has it.
common.PDL_CC = 90
common.PDL_PROLOGUE = table.concat({
  "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900",
  "    // programmatic dependent launch: wait for the kernel before, then let the next one launch",
  '    asm volatile("griddepcontrol.wait;" ::: "memory");',
  '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");',
  "#endif",
}, "\n") .. "\n"

-- Whether kernels generated for `target` (nil: the default, cc 75) get the prologue.
function common.pdl(target)
  return target ~= nil and (target.cc or 0) >= common.PDL_CC
end

-- A kernel may read what no kernel writes (its weights and bias) before it waits:
-- a template puts the line PDL_MARK where the wait goes, after loads of weights
-- alone (no global store, no read of an activation above it). Launched early, its
-- blocks fetch their weights while the kernel before still runs, and the tail of
-- that kernel hides the fetch (fc_gemv and the tail at a few images: a layer whose
-- time is the weights' fetch from L2). The prologue then goes there instead of at
-- the top; without PDL the line is dropped.
common.PDL_MARK = "    // @@pdl-wait@@\n"
common.PDL_PROLOGUE_MARKED = table.concat({
  "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900",
  "    // programmatic dependent launch: the loads above read weights only, fetched while the",
  "    // kernel before runs; now wait for it, then let the next one launch",
  '    asm volatile("griddepcontrol.wait;" ::: "memory");',
  '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");',
  "#endif",
}, "\n") .. "\n"

-- Kernel record k with the prologue put right after its body's opening brace
-- (the line "{" after the one declaration common.kernel_head writes), or at the
-- template's PDL_MARK where it has one, and k.pdl = true, where `target` asks for
-- it; else k with its PDL_MARK line, if any, removed.
function common.add_pdl(k, target)
  local at = k.source:find(common.PDL_MARK, 1, true)
  if at and k.source:find(common.PDL_MARK, at + 1, true) then
    error("kernel " .. tostring(k.name) .. ": more than one place marked for the launch prologue", 0)
  end
  if not common.pdl(target) then
    if at then k.source = k.source:sub(1, at - 1) .. k.source:sub(at + #common.PDL_MARK) end
    return k
  end
  if at then
    k.source = k.source:sub(1, at - 1) .. common.PDL_PROLOGUE_MARKED .. k.source:sub(at + #common.PDL_MARK)
    k.pdl = true
    return k
  end
  local src = k.source
  local decl = src:find('extern "C" __global__', 1, true)
  if not decl or src:find('extern "C" __global__', decl + 1, true) then
    error("kernel " .. tostring(k.name) .. ": expected one __global__ declaration for the launch prologue", 0)
  end
  local _, brace = src:find("\n{\n", decl, true)
  if not brace then error("kernel " .. tostring(k.name) .. ": no line '{' opens its body", 0) end
  k.source = src:sub(1, brace) .. common.PDL_PROLOGUE .. src:sub(brace + 1)
  k.pdl = true
  return k
end

-- ---- a reduction split over a thread-block cluster's blocks (sm_90) ----
--
-- The text after which, in a kernel whose `rank` is its block's rank in a
-- (1, 1, split) cluster, rank 0's `var` (acc_t, in threads tid < n) holds the sum of
-- every rank's `var` in rank order: ranks 1.. publish theirs in shared memory, rank 0
-- adds them through distributed shared memory (mapa, ld.shared::cluster), a cluster
-- barrier either side so that no block leaves while rank 0 still reads it. Ranks
-- 1.. carry on past it with their own values (the caller lets rank 0 alone store).
-- The CPU emulation (test_emulate, CG_EMULATION) runs a cluster's blocks one after
-- another, its last rank first: there ranks 1.. leave their sums in one static array
-- and return, rank 0 adds them in rank order. fc_gemv's and the tail's splits.
function common.cluster_sum(acc_t, var, n, split)
  local v = { acc_t = acc_t, var = var, n = n, split = split }
  return (string.gsub([[
#if defined(CG_EMULATION)
    // the CPU emulation (tests/test_emulate.c) runs a cluster's blocks one after another, its
    // last rank first: ranks 1.. leave their sums in one static array, rank 0 adds them in
    // rank order
    static $acc_t mine_emu[$split][$n];
    if (rank != 0) {
        if (tid < $n) mine_emu[rank][tid] = $var;
        return;
    }
    if (tid < $n)
        for (int r = 1; r < $split; r++) $var += mine_emu[r][tid];
#else
    // the cluster's reduction: ranks 1.. publish their sums, rank 0 adds them in rank
    // order, and no block leaves while rank 0 still reads its shared memory
    __shared__ $acc_t mine[$n];
    if (tid < $n) mine[tid] = $var;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank == 0 && tid < $n) {
        const unsigned at = (unsigned)__cvta_generic_to_shared(&mine[tid]);
#pragma unroll 1
        for (int r = 1; r < $split; r++) {
            unsigned theirs;
            $acc_t x;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(at), "r"(r));
            asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(theirs) : "memory");
            $var += x;
        }
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif]], "%$([%w_]+)", function(k) return tostring(v[k]) end))
end

-- ---- the cost model: a template's optional T.cost(l, p) ----
--
-- A tuner measures a layer's candidates in the order of T.cost, cheapest first,
-- so that those most likely to win are measured whatever its budget allows
-- (docs/tuning.md). T.cost estimates a launch's time for common.cost.images(l)
-- images (tune's --batch) in SM clock cycles from its shape alone: the
-- instructions the busiest SM issues (four warp instructions a clock), slowed
-- where its resident warps cannot hide latency. Rough by design: it orders
-- candidates, measuring decides.
common.cost = {
  BATCH = 10000,      -- images the estimate is for when the layer table has no `batch` (tune's default)
  FMA_PER_CLOCK = 128, -- FP32 lanes of an SM: four warp instructions a clock
  LATENCY = 800,      -- clocks of a round trip to memory
  WARPS_BUSY = 16,    -- resident warps (times their independent work) that keep an SM issuing
  SPILL = 0.02,       -- slowdown per register a __launch_bounds__ cap takes from a thread's estimate
}

-- The registers a thread may use under __launch_bounds__(threads, occ): the
-- SM's registers over occ*threads, in steps of 8, at most 255.
function common.reg_cap(l, threads, occ)
  local rps = (l.target and l.target.regs_per_sm) or 65536
  return math.min(255, (rps // (occ * threads)) // 8 * 8)
end

-- The images one launch of layer l is estimated for: l.batch where the caller
-- gave one (tune --batch, through planner.layer_table), else BATCH.
function common.cost.images(l)
  return (l.batch and l.batch > 0) and l.batch or common.cost.BATCH
end

-- What one SM of l's target holds at once, and how many SMs there are (100
-- when unknown: a fat binary's target).
local function sm_limits(l)
  local t = l.target or {}
  local cc = t.cc or 75
  local small = cc < 80 or cc == 86 or cc == 89
  return {
    threads = cc < 80 and 1024 or small and 1536 or 2048,
    blocks = small and 16 or 32,
    regs = t.regs_per_sm or 65536,
    shared = (t.max_shared or 48 * 1024) + 1024,
    sms = (t.sms and t.sms > 0) and t.sms or 100,
  }
end

-- How `blocks` blocks of `threads` threads, each thread wanting about `regs`
-- registers (16 more for addressing) and each block `smem` bytes of shared
-- memory, spread over the SMs: the blocks the busiest SM runs in all (seq) and
-- at once (conc, 0 when one block does not fit). With `occ` (a kernel declaring
-- __launch_bounds__(threads, occ): conv2d_igemm's and conv2d_winograd's `occ`) a
-- thread gets no more than common.reg_cap(l, threads, occ): where the estimate
-- is above that cap, the compiler keeps to the cap, so more blocks fit at once,
-- and the registers it takes away come back third (squeezed, 0 when none) for
-- common.cost.spills.
function common.cost.spread(l, blocks, threads, regs, smem, occ)
  local s = sm_limits(l)
  local want, squeezed = math.max(regs + 16, 32), 0
  if occ then
    squeezed = math.max(0, want - common.reg_cap(l, threads, occ))
    want = want - squeezed
  end
  local per = math.min(s.threads // threads, s.regs // (threads * want), s.blocks)
  if smem > 0 then per = math.min(per, s.shared // (smem + 1024)) end
  local seq = common.ceil_div(blocks, s.sms)
  return seq, math.min(per, seq), squeezed
end

-- What spills cost: each register a cap squeezed out of a thread's estimate
-- (spread's third result) is a value the compiler keeps in local memory and
-- reloads inside the loop, counted as SPILL (2 %) of the time. A guess, like
-- the other constants: it makes a squeezed configuration pay for the blocks
-- it gains, and measuring decides.
function common.cost.spills(squeezed)
  return 1 + common.cost.SPILL * squeezed
end

-- The share of an SM's issue slots that `conc` resident blocks of `threads`
-- threads keep busy, each warp with `ilp` independent chains of work.
function common.cost.busy(conc, threads, ilp)
  return math.min(1, conc * common.ceil_div(threads, 32) * ilp / common.cost.WARPS_BUSY)
end

-- Clocks for `blocks` blocks of `threads` threads issuing `instr` instructions
-- each (registers and shared memory as for spread); math.huge when a block
-- does not fit.
function common.cost.issue(l, blocks, threads, regs, smem, instr, ilp)
  local seq, conc = common.cost.spread(l, blocks, threads, regs, smem)
  if conc == 0 then return math.huge end
  return seq * common.ceil_div(threads, 32) * instr / 4 / common.cost.busy(conc, threads, ilp)
end

-- The main loop of a template whose slices pass through registers (conv2d_winograd;
-- conv2d_igemm before sm_80): lambdas fetch(s) (global -> registers), multiply(b)
-- (buffer b) and stash(b) (registers -> buffer b), over S slices (a number, or the name
-- of a variable holding it: conv2d_igemm's ragged split), two buffers;
-- `note`: a comment line first.
function common.prefetch_loop(S, note)
  return (note and "// two buffers: the next slice is read into registers during the products\n    " or "") ..
    string.format([[fetch(0);
    stash(0);
    __syncthreads();
#pragma unroll 1
    for (int s = 0; s < %s; s++) {
        if (s + 1 < %s) fetch(s + 1);   // global loads in flight during the products
        multiply(s & 1);
        if (s + 1 < %s) stash((s & 1) ^ 1);
        __syncthreads();
    }]], S, S, S)
end

-- ---- 3xTF32 on tensor cores (conv2d_igemm_tc, lib/igemm.lua) ----
--
-- A product a*b in FP32 accuracy from three TF32 products: a = ah + al, where
-- ah is a's top 19 bits (truncated: one integer operation; rounding them took a
-- second, and every fragment element pays it) and al the exact remainder, which
-- the tensor core reads truncated to TF32; a*b ~ al*bh + ah*bl + ah*bh (al*bl,
-- under 2^-20 of the product, dropped).
-- Fragments of mma.sync.m16n8k8 (row.col, f32 += tf32 * tf32): A 16x8 in four
-- registers a lane, (row g, col t), (g+8, t), (g, t+4), (g+8, t+4); B 8x8 in
-- two, (row t, col g), (t+4, g); C 16x8 in four, (g, 2t), (g, 2t+1), (g+8, 2t),
-- (g+8, 2t+1), with g = lane / 4, t = lane % 4.

-- C statements defining the lambda `split(v, hi, lo)` (v: an FP32 value, of the
-- accumulator type common.ACC; hi, lo: unsigned).
function common.tf32x3_split()
  return [[auto split = [](]] .. common.ACC .. [[ v, unsigned& hi, unsigned& lo) {
            hi = __float_as_uint(v) & 0xffffe000u;
            lo = __float_as_uint(v - __uint_as_float(hi));
        };]]
end

-- Precision tf32 (a layer's `precision: tf32`): each operand rounded to TF32 once,
-- one mma.sync a tile. C statements defining the lambda `tf32(v)`: v (acc_t, FP32)
-- rounded to TF32 by cvt.rna.tf32.f32 (to nearest, ties away from zero), as the
-- 32-bit register mma.sync reads.
function common.tf32_round()
  return [[auto tf32 = [](]] .. common.ACC .. [[ v) {
            unsigned r;
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
            return r;
        };]]
end

-- The same rounding in plain C++ for the paths without tensor cores (the CPU
-- emulation): the lambda `tf32r(v)` returns v rounded to TF32 as a float, as
-- cvt.rna does for finite v: half a unit of the 13 dropped bits added to the
-- magnitude's bits, then those bits cleared.
function common.tf32_round_emu()
  return [[auto tf32r = [](]] .. common.ACC .. [[ v) {
            return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
        };]]
end

-- The lines (indented four) defining the lambda `rna(v)`: v rounded to TF32 as a float, by
-- cvt.rna.tf32.f32 under sm_90a, else (the CPU emulation) by common.tf32_round_emu's C.
function common.tf32_rna_lambda()
  return table.concat({
    "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)",
    "    auto rna = [](" .. common.ACC .. [[ v) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v)); return __uint_as_float(r); };]],
    "#else",
    "    " .. common.tf32_round_emu(),
    "    auto rna = tf32r;",
    "#endif" }, "\n")
end

-- C statements setting the accumulators d[fp][fm][4] to zero, the loops indented by
-- `base` spaces (the pragmas in column 0).
function common.tf32x3_zero(d, fp, fm, base)
  local i = string.rep(" ", base)
  return string.format("#pragma unroll\n%sfor (int i = 0; i < %d; i++)\n#pragma unroll\n%s    for (int j = 0; j < %d; j++)\n" ..
    "#pragma unroll\n%s        for (int r = 0; r < 4; r++) %s[i][j][r] = 0.0f;", i, fp, i, fm, i, d)
end

-- C statements defining the lambdas mma(d, a, b): d += a*b, and mma0(d, a, b): d =
-- a*b (the accumulator not read: no zeroing moves), one mma.sync.m16n8k8 each, d the
-- four accumulators (common.ACC, FP32) of a C fragment, a and b the A and B fragments' registers.
-- kind: nil for the m16n8k8 TF32 product; "bf16" or "f16" for m16n8k16 with
-- operands of that type (A four registers of two elements, B two, FP32 accumulators).
-- no_mma0: mma alone (a template that never starts a sum without reading its accumulators).
function common.tf32x3_mma_defs(kind, no_mma0)
  local head = 'asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, '
  if kind then
    head = string.format('asm("mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%%0, %%1, %%2, %%3}, ' ..
      '{%%4, %%5, %%6, %%7}, {%%8, %%9}, ', kind, kind)
  end
  local ab = '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])'
  local defs = {
    "auto mma = [](" .. common.ACC .. " (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {",
    "            " .. head .. '{%0, %1, %2, %3};"',
    '                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : ' .. ab .. ");",
    "        };",
    "        auto mma0 = [](" .. common.ACC .. " (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {",
    "            " .. head .. '{%10, %10, %10, %10};"',
    '                : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : ' .. ab .. ', "f"(0.0f));',
    "        };" }
  if no_mma0 then defs = { defs[1], defs[2], defs[3], defs[4] } end
  return table.concat(defs, "\n")
end

-- The tiled conv templates (conv2d_igemm, conv2d_winograd): the 2x2 pools
-- (max or average, stride 2) their epilogue takes, of conv geometry g.
function common.fused_pool2(g) return g.tiled_pool and g.PK == 2 end

-- Their map tiles: M itself when it is no more than `largest`, the eights that
-- cover it, and the powers of two from 8 to `largest`; those that cover M come first, smallest first (one
-- block row, least waste), then the smaller ones, largest first.
function common.map_tiles(l, largest)
  local all, t = {}, 8
  while t <= largest do all[#all + 1], t = t, t * 2 end
  if l.M <= largest and not common.contains(all, l.M) then all[#all + 1] = l.M end
  -- and the eights covering M, for an M no thread tile divides (23: 24, not 32)
  local m8 = (l.M + 7) // 8 * 8
  if m8 <= largest and not common.contains(all, m8) then all[#all + 1] = m8 end
  table.sort(all, function(a, b)
    local ca, cb = a >= l.M, b >= l.M
    if ca ~= cb then return ca end
    if ca then return a < b end
    return a > b
  end)
  return all
end

-- Their kernel record: a grid of `per` columns an image in blocks of p.bn by
-- M in blocks of p.bm, s.threads a block (s from the template's shape: threads,
-- smem, P, g, pooled, fused, OH, OW), weights uploaded transposed.
function common.tiled_conv_record(l, p, s, act, name, args, source, per)
  return {
    name = name,
    args = args,
    source = source,
    grid = { common.batch_dim(per, p.bn), common.ceil_div(l.M, p.bm), 1 },
    block = { s.threads, 1, 1 },
    shared = s.smem,
    weights = "arg:transposed",
    bias = l.bias and "arg" or "none",
    out_elems = l.M * s.P,
    shape = common.conv_shape(l, s.g, act, s.pooled, l.M, s.OH, s.OW),
    fused = s.fused,
  }
end

-- A map tile bm at most twice M (above 8: conv2d_igemm_wg's too); nil or the
-- reason and the blamed parameter.
function common.check_map_tile(l, bm)
  if bm > 2 * l.M and bm > 8 then
    return string.format("bm=%d is more than twice the layer's %d maps", bm, l.M), "bm"
  end
  return nil
end

-- ---- the wgmma templates (conv2d_igemm_wg, conv2d_planes) ----

-- The fewest eights that cover M in r block rows.
function common.wgmma_rows_tile(l, r) return (l.M + 8 * r - 1) // (8 * r) * 8 end

-- What conv2d_planes' kernels (FP32 and 16-bit) declare first: kernel `name` (with a
-- concat slice's tag where the output is written into one: common.out_slice, `fused` as
-- it takes it) on `threads` threads (`occ` blocks an SM), the standard arguments with
-- weights and bias named w_arg and b_arg (and an add's other operands where `res`, common.residual,
-- is given: its tag before the slice's), and the accumulator operands of nr registers.
-- Returns { name, slice, ty, head, args, dregs, douts }.
function common.planes_prelude(l, name, fused, threads, occ, nr, res)
  local r = { slice = common.out_slice(l, fused), ty = common.types(l) }
  name = res and (name .. res.tag) or name
  r.name = r.slice and (name .. r.slice.tag) or name
  local std = common.std_args({ types = r.ty, w_name = "w_arg", b_name = "b_arg" })
  r.head, r.args = common.kernel_head(r.name, threads, res and res.args(std) or std, nil, occ)
  r.dregs, r.douts = common.wgmma_dregs(nr)
  return r
end

-- A wgmma's accumulator operands for an asm statement with nr of them a thread: the
-- register list ("{%0, %1, ...}") and the outputs ('"+f"(d[0]), ...'), in that order.
function common.wgmma_dregs(nr)
  local dregs, douts = {}, {}
  for i = 0, nr - 1 do
    dregs[#dregs + 1] = "%" .. i
    douts[#douts + 1] = string.format('"+f"(d[%d])', i)
  end
  return "{" .. table.concat(dregs, ", ") .. "}", table.concat(douts, ", ")
end

-- The stores of one column's outputs from a wgmma accumulator tile (register r of tile t:
-- map 8*(r >> 2) + 2*(lane & 3) + (r & 1), r = 4*j + 2*h + e), inside the loops over t and
-- h with the column's output pointer `o`: for each of the bm maps from m0, where m < M
-- (guard_m; nil: every map is one), o[m * stride] = value(register expression). t4: the
-- lane's (lane & 3) as the kernel names it.
function common.wgmma_map_stores(bm, guard_m, stride, t4, value)
  local L = {
    "#pragma unroll",
    string.format("            for (int j = 0; j < %d; j++)", bm // 8),
    "#pragma unroll",
    "                for (int e = 0; e < 2; e++) {",
    string.format("                    const int m = m0 + 8 * j + 2 * %s + e;", t4) }
  if guard_m then L[#L + 1] = string.format("                    if (m >= %d) continue;", guard_m) end
  L[#L + 1] = string.format("                    o[m * %d] = %s;", stride, value("cf[t][4 * j + 2 * h + e]"))
  L[#L + 1] = "                }"
  return table.concat(L, "\n")
end

-- A wgmma lambda's lines (under sm_90a, ending in a newline), with d0, the shared memory
-- `sm`'s start address / 16 (not where no_base: a kernel making its descriptors from its own
-- addresses): `instr` the instruction's text after its accumulators and two descriptors, `scale`
-- the C expression of the scale-d predicate's operand, `extra` any parameter after db.
local function wgmma_lambda_lines(acc_t, nr, n, shape, instr, scale, extra, no_base)
  local dregs, douts = common.wgmma_dregs(nr)
  local L = {
    "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)",
    "    const unsigned long long d0 = ((unsigned)__cvta_generic_to_shared(sm) >> 4);",
    string.format("    auto wgmma = [](%s (&d)[%d], unsigned long long da, unsigned long long db%s) {", acc_t, nr, extra),
    string.format([[        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %%%d, 0;\n"]], nr + 2),
    string.format([[            "wgmma.mma_async.sync.aligned.m64n%d%s %s, %%%d, %%%d, %s;\n}\n"]], n, shape, dregs, nr,
      nr + 1, instr),
    "            : " .. douts,
    string.format([[            : "l"(da), "l"(db), "r"(%s));]], scale),
    "    };",
    "#endif",
    "" }
  if no_base then table.remove(L, 2) end
  return table.concat(L, "\n")
end

-- The 16-bit wgmma templates' lambda wgmma(d, da, db): d += A * B, one m64nNk16 product of
-- `wt` (bf16 or f16) operands by no-swizzle descriptors (start address / 16, then the leading
-- and stride offsets in 16 bytes), A transposed (MN-major) where trans_a is 1, into nr FP32
-- accumulators of type acc_t a thread; B likewise where trans_b is 1 (nil: 0); and, unless
-- no_base, d0, the shared memory `sm`'s start address / 16. Lines of a kernel's body (under
-- sm_90a), ending in a newline.
function common.wgmma16_lambda(acc_t, nr, n, wt, trans_a, trans_b, no_base)
  return wgmma_lambda_lines(acc_t, nr, n, string.format("k16.f32.%s.%s", wt, wt),
    string.format("p, 1, 1, %d, %d", trans_a, trans_b or 0), "1", "", no_base)
end

-- The same for TF32 operands (fc_mma's FP32 layers): wgmma(d, da, db, acc), one
-- m64nNk8 product of FP32 values in shared memory as the tensor cores read them
-- (truncated to TF32), d = a*b where acc is 0, else d += a*b; and d0, the buffers' base.
function common.wgmma_tf32_lambda(acc_t, nr, n)
  return wgmma_lambda_lines(acc_t, nr, n, "k8.f32.tf32.tf32", "p, 1, 1", "acc", ", int acc")
end

-- A copy of `bytes` (16: cp.async.cg; 8 or 4: .ca, as .cg copies 16 bytes alone) from global memory
-- into shared memory as the 16-bit wgmma templates stage their operands (fc_mma, planes' tr=1
-- weights, mn=1's planes) and conv2d_pointwise its runs: the lines (indented `ind`) of one cp.async
-- of `src` to shared address `saddr`, zero-filled where `ok` is false (a source size of 0), under
-- the preprocessor condition `guard` (default: sm_90a, the wgmma templates' target), and, where it
-- fails (the CPU emulation), a memcpy to element pointer `dst` or zeros.
function common.cp_async(bytes, ind, saddr, dst, src, ok, guard)
  return table.concat({
    "#if " .. (guard or "defined(__CUDA_ARCH_FEAT_SM90_ALL)"),
    string.format('%sasm volatile("cp.async.%s.shared.global [%%0], [%%1], %d, %%2;" :: "r"(%s), "l"(%s), "r"(%s ? %d : 0)',
      ind, bytes == 16 and "cg" or "ca", bytes, saddr, src, ok, bytes),
    ind .. '             : "memory");',
    "#else",
    string.format("%sif (%s) memcpy(%s, %s, %d);", ind, ok, dst, src, bytes),
    string.format("%selse memset(%s, 0, %d);", ind, dst, bytes),
    "#endif" }, "\n")
end
function common.cp_async16(ind, saddr, dst, src, ok) return common.cp_async(16, ind, saddr, dst, src, ok) end
function common.cp_async8(ind, saddr, dst, src, ok) return common.cp_async(8, ind, saddr, dst, src, ok) end

-- The lambda `put(at, v)` of a kernel staging 16-bit operands (type stage_t) for wgmma:
-- eight values as they are, packed in pairs, one 16-byte store of vector type v4 at
-- `at` (a line of its own in the kernel's body, indented four).
function common.put8_lambda(stage_t, v4)
  return table.concat({
    "    // eight 16-bit values as they are, one 16-byte store",
    string.format("    auto put = [](%s* at, const %s (&v)[8]) {", stage_t, stage_t),
    "        unsigned u[4];",
    "#pragma unroll",
    "        for (int k = 0; k < 4; k++) u[k] = (unsigned)v[2 * k].x | ((unsigned)v[2 * k + 1].x << 16);",
    string.format("        %s q;", v4),
    "        memcpy(&q, u, 16);",
    string.format("        *reinterpret_cast<%s*>(at) = q;", v4),
    "    };" }, "\n")
end

-- The bits of a no-swizzle K-major wgmma descriptor above its start address: the
-- leading (reduction) byte offset lead16 and the stride (8-row) byte offset 128, each
-- in 16-byte units, as a C literal to add the start address / 16 to.
function common.wgmma_desc(lead16)
  return string.format("0x%xull", lead16 << 16 | (128 // 16) << 32)
end

-- The bits of a K-major wgmma descriptor in the swizzle of `bytes` (128, 64 or 32) above
-- its start address: the leading offset 1 (unused: a k16 step's 32 bytes lie inside one
-- swizzled row), the stride (8-row atom) offset 8 * bytes, and the layout type (1, 2, 3 for
-- 128, 64, 32 bytes), as a C literal to add the start address / 16 to. The atoms must be
-- aligned to their size; a k16 step inside a row adds 32 bytes to the start address.
function common.wgmma_desc_swizzle(bytes)
  local layout = ({ [128] = 1, [64] = 2, [32] = 3 })[bytes]
  return string.format("0x%xull", layout << 62 | (8 * bytes // 16) << 32 | 1 << 16)
end

-- Their `bm`, maps per block tile (wgmma's N): the fewest eights covering M in one to
-- four block rows, then 64, 128, 32, 16, 8; by default as many rows as 64-map tiles
-- would take.
function common.wgmma_bm_param()
  return { name = "bm", doc = "maps per block tile: wgmma's N, a multiple of 8 up to 256",
    legal = function(l)
      local v = {}
      for r = 1, 4 do
        local b = common.wgmma_rows_tile(l, r)
        if b <= 256 and not common.contains(v, b) then v[#v + 1] = b end
      end
      for _, b in ipairs({ 64, 128, 32, 16, 8 }) do
        if not common.contains(v, b) then v[#v + 1] = b end
      end
      return v
    end,
    default = function(l) return math.min(common.wgmma_rows_tile(l, common.ceil_div(l.M, 64)), 64) end }
end

-- Their first checks: precision fp32, or tf32 where `tf32` (the template has a one-product
-- path), or, where `halves` (the template stages 16-bit operands), bf16 or fp16; a target built as sm_90a, bm a multiple of 8 up to 256 and at most
-- twice M, bk a multiple of 8; nil or the reason and the blamed parameter.
function common.check_wgmma(l, p, tname, halves, tf32)
  local t = l.target or {}
  if l.precision == "tf32" and not tf32 then
    return string.format("%s computes 3xTF32 (FP32 accuracy) only; precision tf32 (one TF32 product) is not "
      .. "written for it yet: write strategy igemm_tc or auto, or precision fp32", tname)
  end
  if not halves and common.half_dtype(l) then
    return string.format("%s stages FP32 operands for wgmma only; 16-bit tensors (precision %s) are not written "
      .. "for it yet: write strategy igemm_tc or auto", tname, l.precision or common.half_dtype(l))
  end
  if not t.sm90a then
    return string.format("%s needs wgmma: sm_90 built as sm_90a (the target is sm_%d%s)", tname,
      t.cc or 75, (t.cc == 90) and ", built for more than sm_90" or "")
  end
  if p.bm % 8 ~= 0 or p.bm > 256 then return string.format("bm=%d: wgmma takes N a multiple of 8 up to 256", p.bm), "bm" end
  local why, blame = common.check_map_tile(l, p.bm)
  if why then return why, blame end
  if p.bk % 8 ~= 0 then return string.format("bk=%d: wgmma reduces 8 rows at a time", p.bk), "bk" end
  return nil
end

-- Their thread-tile checks: tm divides bm, tn divides bn, bm at most twice M
-- (above 8); nil or the reason and the blamed parameter.
function common.check_thread_tile(l, p)
  if p.bm % p.tm ~= 0 then
    return string.format("tm=%d must divide bm=%d", p.tm, p.bm), "tm"
  end
  if p.bn % p.tn ~= 0 then
    return string.format("tn=%d must divide bn=%d", p.tn, p.bn), "tn"
  end
  return common.check_map_tile(l, p.bm)
end

-- `occ`, the blocks per SM a tiled conv template asks __launch_bounds__ for
-- (registers capped at the SM's over occ*threads); `legal`: its legal values.
function common.occ_param(legal)
  return { name = "occ", doc = "blocks one SM must hold at once (__launch_bounds__): registers capped at the SM's / (occ*threads)",
    legal = function(_) return legal end,
    default = function(_) return 1 end }
end

-- nil, or why `occ` blocks of `threads` threads, each thread needing about
-- `regs` registers (`what` needs them) and each block `smem` bytes, cannot or
-- need not share one SM of l's target; the blamed parameter is occ.
function common.check_occ(l, occ, threads, regs, smem, what)
  if occ <= 1 then return nil end
  local cap = common.reg_cap(l, threads, occ)
  if cap >= 255 or occ * threads > 2 * common.MAX_THREADS then
    return string.format("occ=%d with %d threads changes nothing (a cap of %d registers) or cannot be resident",
      occ, threads, cap), "occ"
  end
  if regs > cap then
    return string.format("occ=%d leaves %d registers a thread; %s need about %d", occ, cap, what, regs), "occ"
  end
  if occ * (smem + 1024) > common.max_shared(l) + 1024 then
    return string.format("occ=%d blocks need %d bytes of shared memory on one SM", occ, occ * smem), "occ"
  end
  return nil
end

-- Shared by the fc templates (a BM x BN block tile, TM x TN per thread).
common.fc = {}

-- Threads of a block for a tile and per-thread sub-tile.
function common.fc.threads(p) return (p.bm // p.tm) * (p.bn // p.tn) end

-- The checks every fc tiling needs; `smem_floats` is its shared-memory size.
function common.fc.check(p, smem_floats)
  if p.tm > p.bm then return "tm must not exceed bm", "tm" end
  if p.tn > p.bn then return "tn must not exceed bn", "tn" end
  local threads = common.fc.threads(p)
  if threads < 32 or threads > common.MAX_THREADS then
    return string.format("(bm/tm)*(bn/tn) = %d threads; a block needs 32 to %d", threads,
      common.MAX_THREADS), "bm"
  end
  if 4 * smem_floats > common.MAX_SHARED then
    return "tiles need more than 48 KiB of shared memory", "bk"
  end
  return nil
end

-- The cost model of an fc template (common.cost): per slice a thread issues
-- its bk*tm*tn FMAs, its shared-memory reads, its share of the slice's global
-- loads (`width` floats to a load) and about 20 more for the loop and
-- barriers; one chain of work per warp (ilp 2 where the next slice is
-- prefetched). A reduction split over a cluster pays 10 % per extra block for
-- the exchange of partial tiles.
function common.fc.cost(l, p, smem_floats, width, ilp)
  local IN, split = l.C * l.H * l.W, p.split or 1
  local threads = common.fc.threads(p)
  local blocks = common.ceil_div(common.cost.images(l), p.bm) * common.ceil_div(l.out, p.bn) * split
  local slices = common.ceil_div(common.ceil_div(IN, split), p.bk)
  local per_slice = p.bk * p.tm * p.tn + p.bk * (p.tm + p.tn) / width + p.bk * (p.bm + p.bn) / threads / width + 20
  local regs = p.tm * p.tn + p.tm + p.tn + (ilp > 1 and 8 or 0)
  return common.cost.issue(l, blocks, threads, regs, 4 * smem_floats, slices * per_slice, ilp) * (1 + 0.1 * (split - 1))
end

-- The width of an fc layer's global loads along its inputs: four floats where the
-- input size keeps every row 16-byte aligned, else two, else one.
function common.fc.width(l)
  local IN = l.C * l.H * l.W
  return IN % 4 == 0 and 4 or IN % 2 == 0 and 2 or 1
end

-- The opening of one run of a reduction's passes (fc_gemv and the tail): thread tid's
-- chunk c of pass it in [part.from, part.to), the loop unrolled part.unroll times, and
-- where the last pass is partial (partial) a chunk past the `chunks` chunks or past its
-- block's share [cbeg, cbeg + cps) skipped. The caller writes the body and its "}".
function common.fc.pass_loop(part, threads, chunks, cps, partial)
  local lines = {
    string.format("#pragma unroll %d", part.unroll),
    string.format("    for (int it = %d; it < %d; it++) {", part.from, part.to),
    string.format("        const int c = cbeg + tid + it * %d;", threads),
  }
  if partial then
    lines[4] = string.format("        if (c >= %d || c >= cbeg + %d) continue;   // (a predicate: the passes' loads still issue together)",
      chunks, cps)
  end
  return table.concat(lines, "\n")
end

-- The record every fc kernel returns: its name, arguments, source and launch,
-- weights and bias as arguments, l.out outputs an image, fused bias and activation.
function common.fc.record(l, name, args, source, grid, threads)
  return {
    name = name,
    args = args,
    source = source,
    grid = grid,
    block = { threads, 1, 1 },
    shared = 0,
    weights = "arg",
    bias = l.bias and "arg" or "none",
    out_elems = l.out,
    shape = string.format("%d -> %d%s%s", l.C * l.H * l.W, l.out, l.bias and ", bias" or "",
      l.act ~= "none" and (", " .. l.act) or ""),
    fused = true,
  }
end

-- The kernel record of an fc template: name from the configuration, the
-- batch along x, output tiles along y, weights and bias as arguments. A
-- template splitting the reduction over a cluster of blocks gives `split` > 1
-- in `values`: the blocks of one tile lie along z, the name ends in _sS.
function common.fc.kernel(l, p, strategy, source, values)
  local IN = l.C * l.H * l.W
  local split = values and values.SPLIT or 1
  local name = string.format("fc_%s_i%do%d_%s%s_m%dn%dk%d_t%dx%d%s", strategy, IN, l.out, l.act,
    l.bias and "_bias" or "", p.bm, p.bn, p.bk, p.tm, p.tn, split > 1 and ("_s" .. split) or "")
  local head, args = common.kernel_head(name, common.fc.threads(p), common.std_args({ types = common.types(l) }),
    split > 1 and string.format("__cluster_dims__(1, 1, %d)", split) or nil)
  local v = {
    name = name, head = head, threads = common.fc.threads(p),
    IN = IN, OUT = l.out, BM = p.bm, BN = p.bn, BK = p.bk, TM = p.tm, TN = p.tn,
    bias = l.bias,
    act = function(e) return common.act(l.act, e) end,
  }
  common.typed(l, v)
  for k, x in pairs(values or {}) do v[k] = x end
  return common.fc.record(l, name, args, source(v),
    { common.batch_dim(1, p.bm), common.ceil_div(l.out, p.bn), split }, v.threads)
end

-- ---- an fc layer as the 1x1 convolution it is (fc_tc, fc_wg) ----
--
-- out[i][o] = act(sum_k x[i][k] * w[o][k] + b[o]) is a convolution of a 1x1 image of
-- IN = C*H*W channels (the flatten of the input) into out maps with a 1x1 kernel:
-- weights [out][IN] are conv weights [M][C][1][1], the input [n][IN] a conv input
-- [n][IN][1][1], the output [n][out] a conv output [n][out][1][1]. The implicit-GEMM
-- conv templates then run it with the images as their columns (output pixels)
-- and the outputs as their maps.

-- The conv layer table of fc layer table l: C = IN, H = W = K = 1, stride 1, no
-- padding, no pool, M = out, its bias and activation; every other field (target,
-- batch, dtypes, precision, const_left) as l has it.
function common.fc.conv_table(l)
  local c = {}
  for k, v in pairs(l) do c[k] = v end
  c.C, c.H, c.W, c.M, c.K = l.C * l.H * l.W, 1, 1, l.out, 1
  c.pad_t, c.pad_l, c.pad_b, c.pad_r, c.stride, c.groups = 0, 0, 0, 0, 1, 1
  c.pool, c.pool_stride, c.pool_op, c.pool_pad = 0, 0, "none", nil
  c.OC, c.OH, c.OW = l.out, 1, 1
  return c
end

-- The fc template `fc_<strategy>` that conv template CT (its params, check, cost
-- and kernel, named `ctname` in its messages) is for the fc's conv table: the same
-- parameters, checks and cost model; its kernel renamed fc_<strategy>_i<IN>o<out>
-- followed by what CT's name says after the conv's shape (activation, tile,
-- split, ...) less the word `marker` that tells CT's kernels from its sibling's
-- ("tc": the strategy says it), every symbol named after it following, and its
-- shape line the fc's. T.conv_table gives the planner the table a split's
-- reduction is planned on.
function common.fc.from_conv(CT, strategy, ctname, marker, doc)
  local T = { doc = doc, conv_table = common.fc.conv_table }
  local tname = "fc_" .. strategy
  -- the conv table of each layer table, made once (a search checks thousands of
  -- candidates against one layer table)
  local made = setmetatable({}, { __mode = "k" })
  local function ct(l)
    local c = made[l]
    if not c then c = common.fc.conv_table(l); made[l] = c end
    return c
  end
  T.params = {}
  for i, d in ipairs(CT.params) do
    local w = {}
    for k, v in pairs(d) do w[k] = v end
    w.legal = function(l) return d.legal(ct(l)) end
    w.default = function(l, given) return d.default(ct(l), given) end
    T.params[i] = w
  end
  -- (the conv's words for the fc's: its template, and C*K*K, the reduction, is the input size)
  -- (each message rewritten once: a search meets the same refusal thousands of times,
  -- and the sandbox charges every gsub by its matcher's steps)
  local said = {}
  local function say(msg)
    if not msg then return nil end
    local m = said[msg]
    if not m then
      m = msg:gsub(ctname, tname):gsub("C%*K%*K", "the input size"):gsub("strategy igemm_(%a+)", "strategy %1")
      said[msg] = m
    end
    return m
  end
  function T.check(l, p)
    local msg, param = CT.check(ct(l), p)
    return say(msg), param
  end
  if CT.cost then function T.cost(l, p) return CT.cost(ct(l), p) end end
  function T.kernel(l, p)
    local c = ct(l)
    local k = CT.kernel(c, p)
    local head = string.format("conv2d_igemm_c%dm%dk1_h1w1_", c.C, c.M)
    if k.name:sub(1, #head) ~= head then
      error(string.format("%s: kernel name %s does not start %s", tname, k.name, head), 0)
    end
    local rest = (k.name:sub(#head + 1) .. "_"):gsub("_" .. marker .. "_", "_", 1):sub(1, -2)
    local name = string.format("fc_%s_i%do%d_", strategy, c.C, c.M) .. rest
    -- (names are letters, digits and underscores: no pattern characters)
    k.source = k.source:gsub(k.name, name)
    if k.weights:sub(1, 6) == "const:" then k.weights = k.weights:gsub(k.name, name) end
    k.name = name
    -- (one tap reordered is the transposition)
    if k.weights == "arg:taps:1" then k.weights = "arg:transposed" end
    k.shape = string.format("%d -> %d%s%s (a 1x1 convolution of a 1x1 image)%s", c.C, c.M,
      l.bias and ", bias" or "", l.act ~= "none" and (", " .. l.act) or "",
      k.split and string.format(", reduced in %d parts (partial sums)", k.split) or "")
    return k
  end
  return T
end

return common
