-- conv2d_fft.lua — a stride-1 convolution of FP32 tensors through the discrete Fourier
-- transform (`strategy: fft`), as three kernels a layer.
--
-- A valid correlation y[i][j] = sum_{a,b} x[i+a][j+b] w[a][b] over an input plane padded to
-- HP x WP equals, for every output the layer keeps (i + a <= HP - 1), the circular one over
-- FH x FW points where FH >= HP and FW >= WP. In the transformed domain that is a product at
-- each frequency: Y(u,v) = X(u,v) * G(u,v), G(u,v) = sum_{a,b} w[a][b] e^{+2 pi i (ua/FH + vb/FW)}
-- (the conjugate of the filter's transform: a correlation, not a convolution), and the sum
-- over the channels stays a sum: Y[m](u,v) = sum_c X[c](u,v) G[m][c](u,v). So a layer of
-- C x M x K x K multiply-adds a pixel becomes C x M complex multiply-adds a frequency: for
-- zoo-7x7-large's 32 -> 64 7x7 layer on 61x61 inputs (a 64 x 64 transform) 17 times fewer
-- operations, for zoo-5x5-c64's 64 -> 128 5x5 on 26x26 (32 x 32) 5.6 times fewer.
-- The planes are real, so only the frequencies v = 0 .. FW/2 are kept (NV = FW/2 + 1; the
-- others are their conjugates): NF = FH x NV frequencies an image.
--
-- The kernels (the planner runs them in order, `T.parts`; tensors <layer>.fx and <layer>.fy
-- hold the transforms, NF x C and NF x M complex values an image, channel or map innermost):
--   in   a block takes `cg` channels of one image: each thread transforms one input row
--        (FW points, the padding's columns known zeros) into shared memory, then one column
--        of frequencies v (FH points, the padding's rows known zeros) and stores the FH
--        results, the block's channels side by side: fx[n][u][v][c].
--   mul  a block takes `fg` frequencies and `bm` maps: it first copies their filters'
--        transforms G into shared memory (the weights argument is G for every frequency,
--        channel and map, NF x C x M complex: weights=arg:fft:FHxFW, which the runtime computes
--        from the M x C x K x K weights in double once when it loads them, cg_weights_fft),
--        then, for `ib` tiles of `bn` images, the product of each frequency's
--        bn x C and C x bm complex matrices (the images' transforms staged `ck` channels a step,
--        the next step's loaded into registers during this one; a thread 4 images x 4 maps, 4
--        FMAs a complex product), stored as fy[n][u][v][m]. Operands are staged as planes of
--        real and imaginary parts, and a warp spans 8 map quads by 4 image quads: the kernel is
--        bound by shared memory (Nsight Compute: L1 86 % busy, FMAs 64 %), and these took
--        zoo-5x5-c64's product 0.932 -> 0.884 ms at 1,000 images on an H200. Three FMAs a
--        complex product (Gauss's sums kept apart, a third plane staged) and 8 maps a thread
--        were both slower there.
--   out  a block takes `mg` maps of one image: each thread inverts one column of frequencies v
--        (FH points, only the rows the layer keeps computed) into shared memory, then a pair of
--        output rows at once (the two real rows as one complex transform: a + i b), scales by
--        1 / (FH FW), adds the bias, applies the activation and a fused 2x2 pool of stride 2
--        (max or average), and the block's maps leave as one contiguous run of the output.
--        Other pools leave the epilogue unfused (conv + bias, then the pool kernel).
-- Every transform is straight-line code the generator writes for its sizes (radix 2, then a
-- radix-3, 5 or 7 stage summed directly, the roots of unity literals, the known zeros of the
-- padding and the outputs no one reads left out), so FH and FW are powers of two from 2 to 64
-- or, up to 32, a power of two times 3, 5 or 7 (size_at_least), and a kernel's source is bounded
-- by two 64-point transforms and their epilogue (about 110 KB; a 28-point `out` 94 KB; under a
-- second to compile). FP32 throughout: the error is the transforms' rounding, about log2(FH FW)
-- units of FP32 (1e-7 to 3e-7 relative L2 measured against the double reference). On an H200
-- zoo-7x7-large at 1,000 images 7.76 -> 3.24 ms, zoo-5x5-c64 (a 28-point transform where it had
-- 32) 2.28 -> 1.28 ms (bench/RESULTS.md, "FP32 convolutions of large kernels through the Fourier
-- transform" and "conv2d_fft's product from planes, transforms of 28 points").

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "FFT convolution: the planes' discrete Fourier transforms, a complex matrix product a frequency, the " ..
  "inverse transform with bias, activation and pool (three kernels)"

T.MAX_F = 64
local NT = 256   -- threads of an `in` or `out` block

-- The transform sizes the template writes: powers of two up to 64, and up to 32 a power of two
-- times 3, 5 or 7 (6, 10, 12, 14, 20, 24, 28; the odd factor's stage a sum of 3 to 7 terms an
-- output, so a 28-point kernel's source is about twice a 32-point one's: 94 KB for zoo-5x5-c64's
-- `out`; a 56-point one's was 207 KB); the least of them at least n.
local function size_at_least(n)
  local best = math.huge
  for _, r in ipairs({ 1, 3, 5, 7 }) do
    local f = 2 * r
    while f < n do f = f * 2 end
    if f < best and (r == 1 or f <= 32) then best = f end
  end
  return best
end

-- The layer's transform sizes and what the inverse transform must produce.
local function geom(l)
  local g = common.conv_geom(l)
  local ge = { g = g }
  ge.HP, ge.WP = l.H + g.pt + g.pb, l.W + g.pl + g.pr
  ge.FH, ge.FW = size_at_least(ge.HP), size_at_least(ge.WP)
  ge.NV = ge.FW // 2 + 1
  ge.NF = ge.FH * ge.NV
  ge.pool = g.tiled_pool and g.PK == 2 and (g.PP or 0) == 0
  ge.fused = ge.pool or g.kind == "none"
  if ge.pool then ge.OH, ge.OW, ge.R, ge.RW = g.OH, g.OW, 2 * g.OH, 2 * g.OW
  else ge.OH, ge.OW, ge.R, ge.RW = g.CH, g.CW, g.CH, g.CW end
  ge.RP = common.ceil_div(ge.R, 2)   -- row pairs of the inverse row transform
  return ge
end
T.geom = geom

-- The kernels of a layer, in order (planner.lua runs a template with T.parts as one kernel a part,
-- l.part naming it); the tensors between them are <layer>.<tensor>, of the shape given.
T.parts = {
  { part = "in", tensor = "fx", shape = function(l) return { geom(l).NF, l.C, 2 } end },
  { part = "mul", tensor = "fy", shape = function(l) return { geom(l).NF, l.M, 2 } end },
  { part = "out" },
}

-- ---- straight-line transforms ----
-- A complex value is { re = e, im = e } with e a C expression of type float, or nil where that
-- part is exactly zero; a value of nil is zero. `em` collects the lines.

local function lit(x)
  if x == math.floor(x) then return string.format("%.1ff", x) end
  local s = string.format("%.9gf", x)
  return x < 0 and ("(" .. s .. ")") or s
end

local function emitter(prefix, ind, ctype)
  local em = { lines = {}, n = 0 }
  function em.tmp(expr)
    em.n = em.n + 1
    local name = prefix .. em.n
    em.lines[#em.lines + 1] = string.format("%sconst %s %s = %s;", ind, ctype, name, expr)
    return name
  end
  return em
end

local function neg(e) return e and ("(-" .. e .. ")") or nil end
local function zero(z) return z == nil or (z.re == nil and z.im == nil) end
local function value(re, im)
  if re == nil and im == nil then return nil end
  return { re = re, im = im }
end

local function part_sum(em, a, b)
  if not a then return b end
  if not b then return a end
  return em.tmp(a .. " + " .. b)
end

local function part_diff(em, a, b)
  if not b then return a end
  if not a then return neg(b) end
  return em.tmp(a .. " - " .. b)
end

local function cadd(em, a, b)
  if zero(a) then return b end
  if zero(b) then return a end
  return value(part_sum(em, a.re, b.re), part_sum(em, a.im, b.im))
end

local function csub(em, a, b)
  if zero(b) then return a end
  if zero(a) then return value(neg(b.re), neg(b.im)) end
  return value(part_diff(em, a.re, b.re), part_diff(em, a.im, b.im))
end

-- z * e^{sign 2 pi i k / n}
local function twiddle(em, z, k, n, sign)
  if zero(z) then return nil end
  k = k % n
  if k == 0 then return z end
  if (4 * k) % n == 0 then
    local q = (4 * k) // n                      -- quarter turns: i^q (sign +) or i^-q
    local r = sign > 0 and q or (4 - q) % 4
    if r == 1 then return value(neg(z.im), z.re) end
    if r == 2 then return value(neg(z.re), neg(z.im)) end
    return value(z.im, neg(z.re))
  end
  local th = sign * 2 * math.pi * k / n
  local c, s = math.cos(th), math.sin(th)
  local a, b = z.re, z.im
  local re, im
  if a and b then
    re = em.tmp(string.format("%s * %s - %s * %s", lit(c), a, lit(s), b))
    im = em.tmp(string.format("%s * %s + %s * %s", lit(s), a, lit(c), b))
  elseif a then
    re, im = em.tmp(lit(c) .. " * " .. a), em.tmp(lit(s) .. " * " .. a)
  else
    re, im = em.tmp(lit(-s) .. " * " .. b), em.tmp(lit(c) .. " * " .. b)
  end
  return value(re, im)
end

-- y[k] = sum_j x[j] e^{sign 2 pi i j k / n} for the k with need[k] (decimation in time: radix 2
-- while n is even, then radix p for n's least odd prime factor p, a sum of p terms an output);
-- xs[0 .. n-1] are values (nil: zero). Returns the table of y[k] (nil: zero).
local function dft(em, xs, n, need, sign)
  if n == 1 then return { [0] = xs[0] } end
  local any = false
  for j = 0, n - 1 do if not zero(xs[j]) then any = true break end end
  if not any then return {} end
  if n % 2 == 1 then
    local p = 3
    while n % p ~= 0 do p = p + 2 end
    local m = n // p
    local subs, nm = {}, {}
    for k = 0, n - 1 do if need[k] then nm[k % m] = true end end
    for q = 0, p - 1 do
      local part = {}
      for j = 0, m - 1 do part[j] = xs[q + p * j] end
      subs[q] = dft(em, part, m, nm, sign)
    end
    local ys = {}
    for k = 0, n - 1 do
      if need[k] then
        local y
        for q = 0, p - 1 do y = cadd(em, y, twiddle(em, subs[q][k % m], q * k, n, sign)) end
        ys[k] = y
      end
    end
    return ys
  end
  local h = n // 2
  local ev, od, nh = {}, {}, {}
  for j = 0, h - 1 do ev[j], od[j] = xs[2 * j], xs[2 * j + 1] end
  for k = 0, n - 1 do if need[k] then nh[k % h] = true end end
  local E = dft(em, ev, h, nh, sign)
  local O = dft(em, od, h, nh, sign)
  local ys, tw = {}, {}
  for k = 0, n - 1 do
    if need[k] then
      local kk = k % h
      if tw[kk] == nil then tw[kk] = twiddle(em, O[kk], kk, n, sign) or false end
      local t = tw[kk] or nil
      if k < h then ys[k] = cadd(em, E[kk], t) else ys[k] = csub(em, E[kk], t) end
    end
  end
  return ys
end
T.dft = dft

local function needs(lo, hi)
  local t = {}
  for k = lo, hi do t[k] = true end
  return t
end

local function re_of(z) return z and z.re or "0.0f" end
local function im_of(z) return z and z.im or "0.0f" end

-- ---- parameters ----

local function in_smem(l, p) local ge = geom(l); return p.cg * l.H * ge.NV * 8 end
local function out_smem(l, p) local ge = geom(l); return p.mg * (ge.R * ge.NV * 8 + ge.OH * ge.OW * 4) end
local function xs_row(p) return p.bn + 4 end   -- a staged channel's images in a plane, padded by 16 bytes
local function cp(l, p) return common.ceil_div(l.C, p.ck) * p.ck end   -- C in whole chunks
-- the filters' transforms and a step's images in two planes of floats, re and im
local function mul_smem(l, p) return (p.fg * cp(l, p) * p.bm + p.ck * xs_row(p)) * 8 end
local function mul_threads(p) return (p.bm // 4) * (p.bn // 4) end
local function lpt(p) return common.ceil_div(p.bn * p.ck, mul_threads(p)) end   -- a step's loads a thread
local function mul_regs(p) return 32 + 16 + 2 * lpt(p) + 40 end

-- Image tiles at the cost model's batch, and the blocks of `mul`.
local function image_tiles(l, p) return common.ceil_div(common.cost.images(l), p.bn) end
local function mul_blocks(l, p)
  local ge = geom(l)
  return common.ceil_div(image_tiles(l, p), p.ib) * common.ceil_div(ge.NF, p.fg) * common.ceil_div(l.M, p.bm)
end

-- Channel or map counts a block may take: up to 32, the layer's own where fewer, then the powers
-- of two below it, largest first.
local function counts(n)
  local out = { math.min(n, 32) }
  for _, v in ipairs({ 32, 16, 8, 4, 2, 1 }) do
    if v < out[1] then out[#out + 1] = v end
  end
  return out
end

-- The default tiles: `in` and `out` blocks of as many channels or maps (up to 32) as leave two
-- blocks an SM; `mul` 64 maps (M rounded up to 4 where fewer) by 32 images, one frequency a
-- block, 16 channels a step (8, or C itself up to 24, where 16 does not divide C: no chunk half
-- zeros), and as many image tiles a block as leave 16 blocks an SM (eight
-- waves of two: the last wave's idle SMs a small part; the filters' transforms computed once
-- for every 2 .. 64 tiles).
local function default_tile(l)
  local ge = geom(l)
  local half = (common.max_shared(l) - 1024) // 2
  local p = {}
  for _, v in ipairs(counts(l.C)) do
    p.cg = v
    if in_smem(l, p) <= half then break end
  end
  for _, v in ipairs(counts(l.M)) do
    p.mg = v
    if out_smem(l, p) <= half then break end
  end
  p.bm = math.min(64, common.ceil_div(l.M, 4) * 4)
  p.bn = 32
  while mul_threads(p) < 32 do p.bn = p.bn * 2 end   -- (a warp at least: 64 or 128 images under 16 maps)
  p.fg = 1
  p.ck = 16
  for _, ck in ipairs({ 16, l.C <= 24 and l.C or 16, 8 }) do
    if l.C % ck == 0 then p.ck = ck break end
  end
  -- at most 16 loads a thread a step, 4 under 16 maps (few maps, few threads: fewer channels a
  -- step; ptxas, given the block's threads alone, spilled a 3-map tile's 16)
  local most = p.bm < 16 and 4 or 16
  while p.ck > 1 and common.ceil_div(p.bn * p.ck, mul_threads(p)) > most do p.ck = common.ceil_div(p.ck, 2) end
  while p.bm > 16 and mul_smem(l, p) > common.max_shared(l) do p.bm = p.bm // 2 end
  local t = l.target or {}
  local sms = (t.sms and t.sms > 0) and t.sms or 100
  local tiles = image_tiles(l, p)
  local others = common.ceil_div(ge.NF, p.fg) * common.ceil_div(l.M, p.bm)
  p.ib = 1
  for _, ib in ipairs({ 64, 32, 16, 8, 4, 2 }) do
    if common.ceil_div(tiles, ib) * others >= 16 * sms then p.ib = ib break end
  end
  return p
end

local tile = common.per_layer(default_tile)

-- A parameter's legal values: `list` where the layer is one the template computes, else its
-- first alone (which check refuses with the reason).
local function served(l)
  local ty = common.types(l)
  local g = common.conv_geom(l)
  return not common.is_half(ty.in_t) and g.S == 1 and g.G == 1 and l.K >= 2
end
local function legal(list)
  return function(l) if served(l) then return list(l) end return { list(l)[1] } end
end

T.params = {
  { name = "cg", doc = "channels an `in` block transforms (up to 32)",
    legal = legal(function(l) return counts(l.C) end),
    default = function(l) return tile(l).cg end },
  { name = "mg", doc = "maps an `out` block inverts (up to 32)",
    legal = legal(function(l) return counts(l.M) end),
    default = function(l) return tile(l).mg end },
  { name = "bm", doc = "maps a `mul` block computes (a multiple of 4)",
    legal = legal(function(l)
      local list, r = { 64, 32, 128, 16 }, common.ceil_div(l.M, 4) * 4
      if r < 128 and not common.contains(list, r) then list[#list + 1] = r end
      return list
    end),
    default = function(l) return tile(l).bm end },
  { name = "bn", doc = "images a `mul` tile (a multiple of 4)",
    legal = legal(function() return { 32, 64, 16, 128 } end),
    default = function(l) return tile(l).bn end },
  { name = "fg", doc = "frequencies a `mul` block (their filters' transforms computed once)",
    legal = legal(function() return { 1, 2, 4 } end),
    default = function(l) return tile(l).fg end },
  { name = "ck", doc = "channels of the images' transforms a `mul` step stages (the last chunk zero past C)",
    legal = legal(function(l) return counts(l.C) end),
    default = function(l) return tile(l).ck end },
  { name = "ib", doc = "image tiles a `mul` block computes, one after another",
    legal = legal(function() return { 1, 2, 4, 8, 16, 32, 64 } end),
    default = function(l) return tile(l).ib end },
}

function T.check(l, p)
  local ty = common.types(l)
  local why = common.refuse_groups(l, "conv2d_fft")
  if why then return why, nil end
  local g = common.conv_geom(l)
  if common.is_half(ty.in_t) or common.is_half(ty.w_t) or common.is_half(ty.out_t) then
    return "conv2d_fft computes FP32 tensors (precision fp32); write strategy auto", nil
  end
  if l.precision == "tf32" then
    return "conv2d_fft computes in FP32; precision tf32 asks for TF32 products (write strategy auto)", nil
  end
  if g.S ~= 1 then
    return string.format("conv2d_fft computes stride-1 convolutions; this layer has stride %d", g.S), nil
  end
  if l.K < 2 then return "conv2d_fft needs a kernel of 2x2 or more (a 1x1 layer is a plain matrix product)", nil end
  local ge = geom(l)
  if ge.FH > T.MAX_F or ge.FW > T.MAX_F then
    return string.format("the padded %dx%d input needs a %dx%d transform; conv2d_fft writes transforms of up to " ..
      "%d points a side", ge.HP, ge.WP, ge.FH, ge.FW, T.MAX_F), nil
  end
  if p.cg > l.C then return string.format("cg=%d is more than the layer's %d channels", p.cg, l.C), "cg" end
  if p.mg > l.M then return string.format("mg=%d is more than the layer's %d maps", p.mg, l.M), "mg" end
  if p.ck > l.C then return string.format("ck=%d is more than the layer's %d channels", p.ck, l.C), "ck" end
  if p.bm % 4 ~= 0 or p.bn % 4 ~= 0 then
    return string.format("bm=%d, bn=%d: a thread computes 4 maps x 4 images (multiples of 4)", p.bm, p.bn), "bm"
  end
  if p.bm > common.ceil_div(l.M, 4) * 4 then
    return string.format("bm=%d is more than the layer's %d maps (in fours)", p.bm, l.M), "bm"
  end
  local nt = mul_threads(p)
  if nt > common.MAX_THREADS or nt < 32 then
    return string.format("bm=%d x bn=%d: %d threads a `mul` block (32 to %d)", p.bm, p.bn, nt, common.MAX_THREADS), "bn"
  end
  local max = common.max_shared(l)
  if in_smem(l, p) > max then
    return string.format("cg=%d channels' row transforms need %d bytes of shared memory; at most %d fit", p.cg,
      in_smem(l, p), max), "cg"
  end
  if out_smem(l, p) > max then
    return string.format("mg=%d maps' column transforms and outputs need %d bytes of shared memory; at most %d fit",
      p.mg, out_smem(l, p), max), "mg"
  end
  if mul_smem(l, p) > max then
    return string.format("fg=%d frequencies of %d x %d filter transforms and %d staged channels need %d bytes of " ..
      "shared memory; at most %d fit", p.fg, l.C, p.bm, p.ck, mul_smem(l, p), max), p.fg > 1 and "fg" or "bm"
  end
  return nil
end

-- The cost model (common.cost): the three kernels' bytes (the transforms written and read
-- once, the filters' transforms once a `mul` block, at 64 bytes a clock an SM from L2 and
-- memory alike) and `mul`'s FMAs (4 a complex product, at the SM's FMA rate).
function T.cost(l, p)
  local ge = geom(l)
  local n = common.cost.images(l)
  local sms = ((l.target or {}).sms or 0) > 0 and l.target.sms or 100
  local fx, fy = ge.NF * l.C * 8, ge.NF * l.M * 8
  local bytes = n * (l.C * l.H * l.W * 4 + 2 * fx + 2 * fy + l.M * ge.OH * ge.OW * 4)
  local fmas = n * ge.NF * l.C * l.M * 4
  bytes = bytes + mul_blocks(l, p) * p.fg * cp(l, p) * p.bm * 8   -- the filters' transforms, once a block
  local seq, conc = common.cost.spread(l, mul_blocks(l, p), mul_threads(p), mul_regs(p), mul_smem(l, p))
  if conc == 0 then return math.huge end
  return (bytes / 64 + fmas / common.cost.FMA_PER_CLOCK) / sms + seq * common.cost.LATENCY
end

-- ---- the kernels ----

local source_in = engine.compile([=[
{{head}}
{
    // in: n x {{C}} x {{H}} x {{W}}; out: n x {{NF}} x {{C}} complex ({{FH}} x {{NV}} frequencies, channels innermost)
    extern __shared__ {{c4}} smem4[];
    {{c2}}* const rs = reinterpret_cast<{{c2}}*>(smem4);   // [{{CG}}][{{H}}][{{NV}}]: each input row's transform
    const int tid = threadIdx.x;
    const int img = blockIdx.x / {{CT}}, c0 = (blockIdx.x % {{CT}}) * {{CG}};
    if (img >= n) return;
% if RAGGED then
    const int nc = {{C}} - c0 < {{CG}} ? {{C}} - c0 : {{CG}};   // the last block's channels: fewer
% else
    const int nc = {{CG}};
% end
    for (int t = tid; t < nc * {{H}}; t += {{NT}}) {
        // row r of channel c0 + t / {{H}}: {{W}} values at columns {{PL}} .. {{PL + W - 1}} of {{FW}}
        const {{in_t}}* const src = in + ((size_t)img * {{C}} + c0) * {{H * W}} + (size_t)t * {{W}};
% for j = 0, W - 1 do
        const {{acc_t}} x{{j}} = {{to_acc("src[" .. j .. "]")}};
% end
{{row_lines}}
        {{c2}}* const dst = rs + t * {{NV}};
% for v = 0, NV - 1 do
        dst[{{v}}] = make_float2({{row_re(v)}}, {{row_im(v)}});
% end
    }
    __syncthreads();
    {{c2}}* const fx = reinterpret_cast<{{c2}}*>(out);   // (FP32 transforms: the tensor is FP32)
    for (int t = tid; t < {{CG * NV}}; t += {{NT}}) {
        // frequency column v = t / {{CG}} of channel c0 + t % {{CG}}: {{H}} rows at {{PT}} .. {{PT + H - 1}} of {{FH}}
        const int v = t / {{CG}}, cl = t - v * {{CG}};
% if RAGGED then
        if (cl >= nc) continue;
% end
        const {{c2}}* const z = rs + cl * {{H * NV}} + v;
{{col_lines}}
        {{c2}}* const dst = fx + ((size_t)img * {{NF}} + v) * {{C}} + c0 + cl;
% for u = 0, FH - 1 do
        dst[{{u * NV * C}}] = make_float2({{col_re(u)}}, {{col_im(u)}});
% end
    }
}
]=], "conv2d_fft")

local source_mul = engine.compile([=[
{{head}}
{
    // in: n x {{NF}} x {{C}} complex; w: {{M}} x {{C}} x {{K}} x {{K}}; out: n x {{NF}} x {{M}} complex
    extern __shared__ {{c4}} smem4[];
    // the operands staged in two planes of floats, re and im (a thread's four images or maps one
    // 16-byte load a plane)
    {{acc_t}}* const gs = reinterpret_cast<{{acc_t}}*>(smem4);   // [{{FG}}][{{CP}}][2][{{BM}}]: the filters' transforms
    {{acc_t}}* const xs = gs + {{FG * CP * 2 * BM}};               // [{{CK}}][2][{{XS}}]: a step's images' transforms
    const {{c2}}* const fx = reinterpret_cast<const {{c2}}*>(in);
    {{c2}}* const fy = reinterpret_cast<{{c2}}*>(out);
    const int tid = threadIdx.x;
    // a thread: 4 images (ty) x 4 maps (tx)
% if WARP8 then
    // a warp: 8 map quads x 4 image quads
    const int tx = (tid / 32) % {{BM // 32}} * 8 + tid % 8, ty = tid / 32 / {{BM // 32}} * 4 + tid % 32 / 8;
% else
    const int tx = tid % {{BM // 4}}, ty = tid / {{BM // 4}};
% end
    const int f0 = blockIdx.y * {{FG}}, m0 = blockIdx.z * {{BM}};
    // the steps: image tile it, frequency fi, channel chunk ch ({{CK}} channels), in that order; each
    // step's {{BN}} x {{CK}} values are loaded into registers during the step before
    {{c2}} pre[{{LPT}}];
    const auto load = [&](int s) {
        const int it = s / {{FG * NCH}}, r = s - it * {{FG * NCH}}, fi = r / {{NCH}}, ch = r - fi * {{NCH}};
        const int n0 = (blockIdx.x * {{IB}} + it) * {{BN}}, f = f0 + fi;
#pragma unroll
        for (int q = 0; q < {{LPT}}; q++) {
            const int t = tid + q * {{NTM}}, cl = t % {{CK}}, c = ch * {{CK}} + cl, nn = n0 + t / {{CK}};
            const bool ok = {{LPT * NTM > BN * CK and ("t < " .. BN * CK .. " && ") or ""}}nn < n && f < {{NF}}{{CRAG and (" && c < " .. C) or ""}};
            pre[q] = ok ? fx[((size_t)nn * {{NF}} + f) * {{C}} + c] : make_float2(0.0f, 0.0f);
        }
    };
    load(0);
    __syncthreads();
    // the block's filter transforms: w is G[f][c][m] = sum_{a,b} w[m][c][a][b] e^{2 pi i (u a/{{FH}} + v b/{{FW}})}
    // ({{NF}} x {{C}} x {{M}} complex, made from the weights once when they are loaded); zero past C and M
    const {{c2}}* const g = reinterpret_cast<const {{c2}}*>(w);
    for (int t = tid; t < {{FG * CP * BM}}; t += {{NTM}}) {
        const int ml = t % {{BM}}, c = (t / {{BM}}) % {{CP}}, f = f0 + t / {{CP * BM}}, m = m0 + ml;
        const {{c2}} v = m < {{M}} && c < {{C}} && f < {{NF}} ? g[((size_t)f * {{C}} + c) * {{M}} + m] : make_float2(0.0f, 0.0f);
        {{acc_t}}* const d = gs + (t / {{BM}}) * {{2 * BM}} + ml;
        d[0] = v.x, d[{{BM}}] = v.y;
    }
    {{acc_t}} ar[4][4], ai[4][4];   // [image][map]
    for (int s = 0; s < {{STEPS}}; s++) {
        const int it = s / {{FG * NCH}}, r = s - it * {{FG * NCH}}, fi = r / {{NCH}}, ch = r - fi * {{NCH}};
        const int n0 = (blockIdx.x * {{IB}} + it) * {{BN}}, f = f0 + fi;
        if (n0 >= n) break;
        __syncthreads();   // the filters' transforms written; the step before done with xs
#pragma unroll
        for (int q = 0; q < {{LPT}}; q++) {
            const int t = tid + q * {{NTM}};
% if LPT * NTM > BN * CK then
            if (t < {{BN * CK}}) {
% else
            {
% end
                {{acc_t}}* const d = xs + (t % {{CK}}) * {{2 * XS}} + t / {{CK}};
                d[0] = pre[q].x, d[{{XS}}] = pre[q].y;
            }
        }
        __syncthreads();
        if (s + 1 < {{STEPS}}) load(s + 1);
        if (ch == 0) {
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) ar[j][i] = 0.0f, ai[j][i] = 0.0f;
        }
        const {{acc_t}}* const gch = gs + (fi * {{CP}} + ch * {{CK}}) * {{2 * BM}} + tx * 4;
#pragma unroll 4
        for (int cl = 0; cl < {{CK}}; cl++) {
            const {{acc_t}}* const xp = xs + cl * {{2 * XS}} + ty * 4;
            const {{acc_t}}* const gp = gch + cl * {{2 * BM}};
            const {{c4}} xr4 = *reinterpret_cast<const {{c4}}*>(xp), xi4 = *reinterpret_cast<const {{c4}}*>(xp + {{XS}});
            const {{c4}} gr4 = *reinterpret_cast<const {{c4}}*>(gp), gi4 = *reinterpret_cast<const {{c4}}*>(gp + {{BM}});
            const {{acc_t}} xr[4] = { xr4.x, xr4.y, xr4.z, xr4.w }, xi[4] = { xi4.x, xi4.y, xi4.z, xi4.w };
            const {{acc_t}} gr[4] = { gr4.x, gr4.y, gr4.z, gr4.w }, gi[4] = { gi4.x, gi4.y, gi4.z, gi4.w };
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    ar[j][i] = fmaf(xr[j], gr[i], ar[j][i]);
                    ar[j][i] = fmaf(-xi[j], gi[i], ar[j][i]);
                    ai[j][i] = fmaf(xr[j], gi[i], ai[j][i]);
                    ai[j][i] = fmaf(xi[j], gr[i], ai[j][i]);
                }
        }
        if (ch == {{NCH - 1}} && f < {{NF}}) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int nn = n0 + ty * 4 + j;
                if (nn >= n) break;
                {{c2}}* const dst = fy + ((size_t)nn * {{NF}} + f) * {{M}} + m0 + tx * 4;
% if VEC then
                if (m0 + tx * 4 < {{M}}) {
                    reinterpret_cast<{{c4}}*>(dst)[0] = make_float4(ar[j][0], ai[j][0], ar[j][1], ai[j][1]);
                    reinterpret_cast<{{c4}}*>(dst)[1] = make_float4(ar[j][2], ai[j][2], ar[j][3], ai[j][3]);
                }
% else
#pragma unroll
                for (int i = 0; i < 4; i++)
                    if (m0 + tx * 4 + i < {{M}}) dst[i] = make_float2(ar[j][i], ai[j][i]);
% end
            }
        }
    }
}
]=], "conv2d_fft")

local source_out = engine.compile([=[
{{head}}
{
    // in: n x {{NF}} x {{M}} complex; out: n x {{M}} x {{OH}} x {{OW}}
    extern __shared__ {{c4}} smem4[];
    {{c2}}* const zs = reinterpret_cast<{{c2}}*>(smem4);      // [{{MG}}][{{R}}][{{NV}}]: rows' transforms
    {{acc_t}}* const os = reinterpret_cast<{{acc_t}}*>(zs + {{MG * R * NV}});   // [{{MG}}][{{OH}}][{{OW}}]
    const {{c2}}* const fy = reinterpret_cast<const {{c2}}*>(in);
    const int tid = threadIdx.x;
    const int img = blockIdx.x / {{MT}}, m0 = (blockIdx.x % {{MT}}) * {{MG}};
    if (img >= n) return;
% if RAGGED then
    const int nm = {{M}} - m0 < {{MG}} ? {{M}} - m0 : {{MG}};   // the last block's maps: fewer
% else
    const int nm = {{MG}};
% end
    for (int t = tid; t < {{MG * NV}}; t += {{NT}}) {
        // frequency column v = t / {{MG}} of map m0 + t % {{MG}}: rows 0 .. {{R - 1}} of {{FH}}
        const int v = t / {{MG}}, ml = t - v * {{MG}};
% if RAGGED then
        if (ml >= nm) continue;
% end
        const {{c2}}* const src = fy + ((size_t)img * {{NF}} + v) * {{M}} + m0 + ml;
% for u = 0, FH - 1 do
        const {{c2}} y{{u}} = src[{{u * NV * M}}];
% end
{{col_lines}}
        {{c2}}* const dst = zs + ml * {{R * NV}} + v;
% for i = 0, R - 1 do
        dst[{{i * NV}}] = make_float2({{col_re(i)}}, {{col_im(i)}});
% end
    }
    __syncthreads();
    for (int t = tid; t < nm * {{RP}}; t += {{NT}}) {
        // rows 2p and 2p + 1 (p = t % {{RP}}) of map m0 + t / {{RP}} as one transform: a + i b
        const int ml = t / {{RP}}, p = t - ml * {{RP}};
        const {{c2}}* const za = zs + (ml * {{R}} + 2 * p) * {{NV}};
% if R % 2 == 1 then
        const {{c2}}* const zb = 2 * p + 1 < {{R}} ? za + {{NV}} : za;
% else
        const {{c2}}* const zb = za + {{NV}};
% end
{{row_lines}}
% if bias then
        const {{acc_t}} bv = {{w_to_acc("b[m0 + ml]")}};
% end
% for j = 0, RW - 1 do
        const {{acc_t}} e{{j}} = {{act(epi(row_re(j)))}};
        const {{acc_t}} o{{j}} = {{act(epi(row_im(j)))}};
% end
% if POOL then
        {{acc_t}}* const dst = os + (ml * {{OH}} + p) * {{OW}};
%   for q = 0, OW - 1 do
%     if pool_kind == "max" then
        dst[{{q}}] = fmaxf(fmaxf(e{{2 * q}}, e{{2 * q + 1}}), fmaxf(o{{2 * q}}, o{{2 * q + 1}}));
%     else
        dst[{{q}}] = ((e{{2 * q}} + e{{2 * q + 1}}) + (o{{2 * q}} + o{{2 * q + 1}})) * 0.25f;
%     end
%   end
% else
        {{acc_t}}* const dst = os + (ml * {{OH}} + 2 * p) * {{OW}};
%   for j = 0, OW - 1 do
        dst[{{j}}] = e{{j}};
%   end
%   if R % 2 == 1 then
        if (2 * p + 1 < {{R}}) {
%   end
%   for j = 0, OW - 1 do
        dst[{{OW + j}}] = o{{j}};
%   end
%   if R % 2 == 1 then
        }
%   end
% end
    }
    __syncthreads();
    {{out_t}}* const dst = out + ((size_t)img * {{M}} + m0) * {{OH * OW}};
    for (int t = tid; t < nm * {{OH * OW}}; t += {{NT}}) dst[t] = {{from_acc("os[t]")}};
}
]=], "conv2d_fft")

local function suffix(l, p, ge)
  local g = ge.g
  return string.format("c%dm%dk%d_h%dw%d%s_f%dx%d", l.C, l.M, l.K, l.H, l.W, g.tag, ge.FH, ge.FW), p
end

-- The `in` kernel: rows, then frequency columns.
local function kernel_in(l, p, ge)
  local name = string.format("conv2d_fft_in_%s_g%d", suffix(l, p, ge), p.cg)
  local head, args = common.kernel_head(name, NT, common.std_args({ types = common.types(l) }))
  -- the row transform: x_j at column pl + j, the rest zero; frequencies 0 .. NV-1
  local em = emitter("r", "        ", common.ACC)
  local xs = {}
  for j = 0, l.W - 1 do xs[ge.g.pl + j] = value("x" .. j, nil) end
  local rows = dft(em, xs, ge.FW, needs(0, ge.NV - 1), -1)
  local row_lines = table.concat(em.lines, "\n")
  local ec = emitter("q", "        ", common.ACC)
  local zs = {}
  for r = 0, l.H - 1 do
    zs[ge.g.pt + r] = value(string.format("z[%d].x", r * ge.NV), string.format("z[%d].y", r * ge.NV))
  end
  local cols = dft(ec, zs, ge.FH, needs(0, ge.FH - 1), -1)
  local v = {
    head = head, c2 = common.vec_t(common.ACC, 2), c4 = common.vec_t(common.ACC, 4), C = l.C, H = l.H, W = l.W, NV = ge.NV, NF = ge.NF, FH = ge.FH, FW = ge.FW, CG = p.cg,
    CT = common.ceil_div(l.C, p.cg), RAGGED = l.C % p.cg ~= 0, NT = NT, PL = ge.g.pl, PT = ge.g.pt,
    row_lines = row_lines, col_lines = table.concat(ec.lines, "\n"),
    row_re = function(k) return re_of(rows[k]) end, row_im = function(k) return im_of(rows[k]) end,
    col_re = function(k) return re_of(cols[k]) end, col_im = function(k) return im_of(cols[k]) end,
  }
  return {
    name = name, args = args, source = source_in(common.typed(l, v)),
    grid = { common.batch_dim(common.ceil_div(l.C, p.cg), 1), 1, 1 }, block = { NT, 1, 1 }, shared = in_smem(l, p),
    weights = "none", bias = "none", out_elems = ge.NF * l.C * 2,
    shape = string.format("C=%d H=%d W=%d%s -> the planes' %dx%d transforms (%d frequencies x %d channels, complex)",
      l.C, l.H, l.W, ge.g.conv_words, ge.FH, ge.FW, ge.NF, l.C),
    fused = false, precision = l.precision,
  }
end

local function kernel_mul(l, p, ge)
  local name = string.format("conv2d_fft_mul_%s_m%dn%dk%d_f%d_i%d", suffix(l, p, ge), p.bm, p.bn, p.ck, p.fg, p.ib)
  local nt = mul_threads(p)
  local head, args = common.kernel_head(name, nt, common.std_args({ types = common.types(l) }))
  -- sm_100 and newer: at least one block an SM said too (NVRTC's ptxas, given the threads alone,
  -- spilled 8 bytes of layers-fft's 24-map product for sm_120; sm_90's registers, as measured, unchanged)
  head = head:gsub(" __launch_bounds__%(%d+%)", string.format("\n#if __CUDA_ARCH__ >= 1000\n" ..
    "__launch_bounds__(%d, 1)\n#else\n__launch_bounds__(%d)\n#endif", nt, nt), 1)
  local v = {
    head = head, c2 = common.vec_t(common.ACC, 2), c4 = common.vec_t(common.ACC, 4), C = l.C, M = l.M, K = l.K, NV = ge.NV, NF = ge.NF, FH = ge.FH, FW = ge.FW,
    BM = p.bm, BN = p.bn, CK = p.ck, FG = p.fg, IB = p.ib, XS = xs_row(p), NTM = nt,
    VEC = l.M % 4 == 0, CP = cp(l, p), NCH = cp(l, p) // p.ck, CRAG = l.C % p.ck ~= 0, LPT = lpt(p),
    STEPS = p.ib * p.fg * (cp(l, p) // p.ck), WARP8 = p.bm % 32 == 0 and p.bn % 16 == 0,
  }
  return {
    name = name, args = args, source = source_mul(common.typed(l, v)),
    grid = { common.batch_dim(1, p.bn * p.ib), common.ceil_div(ge.NF, p.fg), common.ceil_div(l.M, p.bm) },
    block = { nt, 1, 1 }, shared = mul_smem(l, p),
    weights = string.format("arg:fft:%dx%d", ge.FH, ge.FW), bias = "none", out_elems = ge.NF * l.M * 2,
    shape = string.format("%d frequencies x C=%d -> M=%d (complex products with the %dx%d filters' transforms)",
      ge.NF, l.C, l.M, l.K, l.K),
    fused = false, precision = l.precision,
  }
end

local function kernel_out(l, p, ge)
  local g = ge.g
  local act = ge.fused and l.act or "none"
  local name = string.format("conv2d_fft_out_%s_%s%s%s_g%d", suffix(l, p, ge), act, ge.pool and g.pool_tag or "",
    l.bias and "_bias" or "", p.mg)
  local head, args = common.kernel_head(name, NT, common.std_args({ types = common.types(l) }))
  -- the column transform: y_u for every u, rows 0 .. R-1
  local ec = emitter("q", "        ", common.ACC)
  local ys = {}
  for u = 0, ge.FH - 1 do ys[u] = value("y" .. u .. ".x", "y" .. u .. ".y") end
  local cols = dft(ec, ys, ge.FH, needs(0, ge.R - 1), 1)
  -- the row pair's transform: S[v] = A[v] + i B[v] over all FW frequencies (A, B Hermitian)
  local er = emitter("r", "        ", common.ACC)
  local s = {}
  local h = ge.FW // 2
  for k = 0, ge.FW - 1 do
    local a = function(q, part) return string.format("za[%d].%s", q, part) end
    local b = function(q, part) return string.format("zb[%d].%s", q, part) end
    if k == 0 or k == h then
      s[k] = value(a(k, "x"), b(k, "x"))
    elseif k < h then
      s[k] = value(er.tmp(a(k, "x") .. " - " .. b(k, "y")), er.tmp(a(k, "y") .. " + " .. b(k, "x")))
    else
      local q = ge.FW - k
      s[k] = value(er.tmp(a(q, "x") .. " + " .. b(q, "y")), er.tmp(b(q, "x") .. " - " .. a(q, "y")))
    end
  end
  local rows = dft(er, s, ge.FW, needs(0, ge.RW - 1), 1)
  local scale = lit(1 / (ge.FH * ge.FW))
  local v = {
    head = head, c2 = common.vec_t(common.ACC, 2), c4 = common.vec_t(common.ACC, 4), M = l.M, NV = ge.NV, NF = ge.NF, FH = ge.FH, FW = ge.FW, MG = p.mg, MT = common.ceil_div(l.M, p.mg), RAGGED = l.M % p.mg ~= 0, NT = NT,
    R = ge.R, RP = ge.RP, RW = ge.RW, OH = ge.OH, OW = ge.OW, POOL = ge.pool, pool_kind = g.kind, bias = l.bias,
    col_lines = table.concat(ec.lines, "\n"), row_lines = table.concat(er.lines, "\n"),
    col_re = function(k) return re_of(cols[k]) end, col_im = function(k) return im_of(cols[k]) end,
    row_re = function(k) return re_of(rows[k]) end, row_im = function(k) return im_of(rows[k]) end,
    epi = function(e)
      if l.bias then return string.format("fmaf(%s, %s, bv)", e, scale) end
      return string.format("%s * %s", e, scale)
    end,
    act = function(e) return common.act(act, e) end,
  }
  return {
    name = name, args = args, source = source_out(common.typed(l, v)),
    grid = { common.batch_dim(common.ceil_div(l.M, p.mg), 1), 1, 1 }, block = { NT, 1, 1 }, shared = out_smem(l, p),
    weights = "none", bias = l.bias and "arg" or "none", out_elems = l.M * ge.OH * ge.OW,
    shape = string.format("the %dx%d transforms of M=%d maps -> the conv, K=%d%s%s -> %dx%dx%d", ge.FH, ge.FW, l.M,
      l.K, g.conv_words, ge.fused and (ge.pool and (", " .. l.act .. ", " .. g.pool_words) or
        (act ~= "none" and (", " .. act) or "")) or "", l.M, ge.OH, ge.OW),
    fused = ge.fused, precision = l.precision,
  }
end

-- The kernel of part l.part ("in", "mul" or "out"; the planner's T.parts).
function T.kernel(l, p)
  local ge = geom(l)
  if l.part == "in" then return kernel_in(l, p, ge) end
  if l.part == "mul" then return kernel_mul(l, p, ge) end
  if l.part == "out" then return kernel_out(l, p, ge) end
  error("conv2d_fft runs as three kernels (in, mul, out); the layer table names none (l.part = " ..
    tostring(l.part) .. ")", 0)
end

return T
