-- conv2d_planes.lua — the implicit matrix product on Hopper's warpgroup tensor cores
-- (`strategy: planes`; sm_90, built as sm_90a): a block holds whole input images, or
-- the input rows a band of one image's output rows reaches, in shared memory, every
-- channel's plane with its padding written out as zeros, and reads wgmma's A operand
-- (output pixels x reduction rows) from them straight into registers; there is no
-- im2col buffer and no bounds test in the main loop.
--
-- Why: conv2d_igemm_wg gathers, splits and stores every (pixel, reduction row) element
-- of the product, once per element, which costs about as much as the products it feeds
-- when the layer has few maps (24 maps: 24 products an element), and a padded layer
-- gathers its padding's zeros with a test each. Here an input element is copied from
-- global memory once per block (then read up to K*K times, from shared memory), the
-- padding is read as the zeros it is, and a fragment element costs one shared-memory
-- load and its TF32 split (two integer/float operations) in the thread that multiplies it.
-- The copy is 4-byte cp.async, every copy in flight at once: through registers, with the
-- padding rows tested, it took up to 1.8x the whole kernel's time (an H100,
-- 2026-11-27, bench/journal/2026-11.md).
--
-- The product: the block's columns (output pixels of ib images, or of a band of `rows`
-- rows of one image, row-major) are wgmma's m64 rows, wgs warpgroups of mt m64 tiles
-- each; its bm maps are wgmma's N (a multiple of 8 up to 256). The reduction C*K*K runs
-- in slices of bk rows (the last completed with zero weights). Each 8-row step, a thread
-- loads its fragment of A from the planes: rows lane/4 and lane/4 + 8 of each of its
-- tiles (a base offset per row, fixed for the kernel), reduction rows lane%4 and
-- lane%4 + 4 (an offset per row from a table the block writes once into shared
-- memory), splits them (3xTF32, lib/common.lua) and issues three wgmma per tile, A from
-- registers, B (the slice's weights, split once when staged, in the no-swizzle K-major
-- layout of conv2d_igemm_wg) from shared memory. Two register sets of fragments: a
-- step's loads overlap the previous step's products (wgmma.wait_group 1). The next
-- slice's weights are fetched into registers at a slice's start and staged into the
-- other buffer at its end. A slice's products go into accumulators of their own, added
-- to the running sum once they land (conv2d_igemm_tc's accuracy measure). Epilogue:
-- bias, activation, stores from the accumulators; pools run as a kernel of their own
-- after it, or (fp=1) a 2x2 pool of stride 2 is fused: the tile through shared memory,
-- then a pooled output a thread. fp=1 is the default where it keeps the tile (even
-- bands, the same blocks an SM: default_fp32_fp): alone, the kernel was 0-3 % slower on
-- an H100 (journal, 2026-11-27), but the network gains the pool kernel and its pass over
-- the unpooled tensor: on an H200 at 10,000 images nine zoo networks 0-4.2 % faster,
-- at 8-1,000 images up to 5 % (bench/RESULTS.md, "planes: the fused pool by default, ...").
-- Where even bands change the tile (zoo-5x5-c64's 22 rows in bands of 11) it lost
-- 1.3-3x, and stays off. Without sm_90a (the CPU
-- emulation of test_emulate, a PTX build) each accumulator is a dot product of the same
-- planes, table and staged weights by FMAs.
--
-- Precision tf32: each operand rounded to TF32 once (cvt.rna: the weights when staged, the
-- fragments when loaded) and one wgmma a tile a step; the weights' buffers hold no remainders.
--
-- 16-bit tensors (precision bf16 or fp16) take lib/planes_half.lua's kernel instead: the
-- band staged channels innermost, so that a kernel tap's A operand is the staged copy
-- shifted and both operands go to wgmma by descriptor (stride 1; its header says more).
-- Its parameters are these: ib 1, bk the channels of a slice (a multiple of 16), fp 0; and, 16-bit
-- only, tr (which of maps and pixels is wgmma's M), po, wr (tr=0: every tap's weights resident)
-- and sw (tr=0: the input rows swept, A loaded once into registers for a kernel column's K products).
-- Under precision tf32, sw=1 takes that kernel too (its sweep with 4 FP32 channels a 16-byte unit and
-- k8 steps; the default where its block fits and K >= 5, as in 16 bits); sw=0 is the kernel below.

local engine = import("lib/engine")
local common = import("lib/common")
local half = import("lib/planes_half")   -- 16-bit tensors: both operands by descriptor (its header)

local T = {}

T.out_slice = true   -- common.out_slice: the output written into a concat's slice (FP32 and 16-bit)
T.fuses_add = true   -- common.residual: an add computed in the epilogue (16-bit tr=0 alone; elsewhere the add runs after)

T.doc = "implicit GEMM on warpgroup tensor cores (wgmma, 3xTF32; one TF32 product under precision tf32), A read from the padded input planes (whole images, or a band of rows) held in shared memory; sm_90 (as sm_90a)"

-- Registers a thread spends besides accumulators, fragments and weights (row bases,
-- pointers, loop state). The estimate counts 10 a quad of the next slice's weights (4
-- values, their addresses and tests): with 4, a 40-map tile of two m64 tiles and 3 quads
-- spilled 32 bytes under occ=3's 168 (a random shape beyond the zoo; test_shapes keeps it).
local ADDRESSING = 28
local REG_BUDGET = 232
local MAX_TILES = 4          -- m64 tiles of one warpgroup

local rows_tile = common.wgmma_rows_tile

-- What the layer alone decides: the conv output and the padded planes' width.
local function geometry(l)
  local g = common.conv_geom(l)
  local d = { g = g }
  d.COLS = g.CH * g.CW                        -- GEMM columns of one image
  d.PW = (g.CW - 1) * g.S + l.K               -- columns of a padded plane that windows touch
  d.KK = l.K * l.K
  d.R = l.C * d.KK
  return d
end

-- Plane rows a band of r output rows needs.
local function band_rows(l, g, r) return (r - 1) * g.S + l.K end

-- A block's output rows by default: the whole image where it has at most 256 pixels
-- (four m64 tiles), else the tallest band of at most 256 pixels whose tiles are filled
-- within 5 % as well as the best band's (the last band's idle rows counted): a band
-- of r rows copies r*stride + K - stride input rows, so short bands of a wide kernel
-- copy each row many times (zoo-7x7-large's 55-pixel rows: one a band, 0.85x auto's
-- choice on an H100). With fp=1 given, among the even bands only (a band must not
-- split a pooling window): before, the search found one for fp=1 alone by changing
-- the rows first and the tile after (zoo-5x5-c64: 22 rows, bm=16, 40 ms).
local function default_rows(l, fp)
  local d = geometry(l)
  local g = d.g
  if d.COLS <= 256 then return g.CH end
  local use, best_use, top = {}, 0, 0
  for r = 1, g.CH do
    if r * g.CW > 256 then break end
    if fp ~= 1 or r % 2 == 0 then
      use[r] = d.COLS / (common.ceil_div(g.CH, r) * 64 * common.ceil_div(r * g.CW, 64))
      best_use, top = math.max(best_use, use[r]), r
    end
  end
  for r = top, 1, -1 do
    if use[r] and use[r] >= 0.95 * best_use then return r end
  end
  return (fp == 1 and g.CH > 1) and 2 or 1
end

-- The warpgroups a block of ib images' bands of r rows gets by default: two m64
-- tiles each (fewer registers, more warps resident than four), up to four.
local function default_wgs(l, ib, r)
  local d = geometry(l)
  return math.min(4, common.ceil_div(common.ceil_div(ib * r * d.g.CW, 64), 2))
end

-- But a warpgroup a tile (up to four) where the block's shared memory leaves room for
-- one block an SM and the registers allow it: there two tiles a warpgroup leave an SM
-- 8 warps to hide the planes' loads behind. zoo-7x7-large's conv2 (C32 61x61, K7, M64:
-- bands of 4 rows, 117 KB) at 1,000 images on an H200: 7.32 ms with two warpgroups,
-- 6.59 with four (bench/RESULTS.md, "planes: the fused pool by default, a warpgroup a tile
-- where one block fits").
-- The block as given (ib, rows, bm, bk); nil where the rule does not apply.
local shape
local function wgs_one_block(l, ib, r, bm, bk)
  local d = geometry(l)
  local tt = common.ceil_div(ib * r * d.g.CW, 64)
  local all = math.min(4, tt)
  if all <= common.ceil_div(tt, 2) then return nil end
  local s = shape(l, { ib = ib, rows = r, wgs = all, bm = bm, bk = bk, occ = 1, fp = 0 })
  if 2 * (s.smem + 1024) <= common.max_shared(l) + 1024 then return nil end
  if s.regs > REG_BUDGET or s.regs > common.reg_cap(l, s.threads, 1) then return nil end
  return all
end

function shape(l, p)
  local s = geometry(l)
  local g = s.g
  s.threads = 128 * p.wgs
  s.RB = p.rows                               -- output rows of a block (a band of an image)
  s.NB = common.ceil_div(g.CH, p.rows)        -- bands of an image
  s.BC = p.rows * g.CW                        -- columns of one image's band
  s.NCB = p.ib * s.BC                         -- columns of a block
  s.PH = band_rows(l, g, p.rows)              -- plane rows a block holds
  s.PL = s.PH * s.PW
  s.TT = common.ceil_div(s.NCB, 64)           -- m64 tiles the columns need
  s.MT = common.ceil_div(s.TT, p.wgs)         -- tiles a warpgroup
  s.NR = p.bm // 2                            -- accumulators of one tile a thread
  s.KS = p.bk // 8                            -- 8-row steps a slice
  s.S = common.ceil_div(s.R, p.bk)
  s.R8 = s.S * p.bk
  s.BQ = p.bm * p.bk // 4                     -- weight quads of a slice
  s.BI = common.ceil_div(s.BQ, s.threads)
  s.x3 = l.precision ~= "tf32"                -- 3xTF32 (FP32 accuracy), else one TF32 product
  s.WS = (s.x3 and 2 or 1) * p.bk * p.bm      -- floats a buffer of weights: hi (and lo)
  s.WB = 2 * s.WS                             -- two buffers
  s.OT = s.WB                                 -- the offset table: R8 ints
  s.PB = s.OT + s.R8                          -- the planes
  s.PLN = (p.ib * l.C * s.PL + 3) // 4 * 4
  s.pooled = p.fp == 1
  s.ER = common.ceil_div(s.NCB, 32) * 32 + 4    -- row stride of the tile staged for a fused pool
  s.smem = 4 * math.max(s.PB + s.PLN, s.pooled and p.bm * s.ER or 0)
  s.regs = 2 * s.MT * s.NR + (s.x3 and 16 or 8) * s.MT + 10 * s.BI + 2 * s.MT + ADDRESSING
  return s
end

-- ib: with whole images, the fewest whose columns fill at least 90 % of their m64
-- tiles, within four tiles and half the target's shared memory (two blocks an SM);
-- else the best fill. With bands, one.
local function default_ib(l, fp)
  local d = geometry(l)
  if default_rows(l, fp) < d.g.CH then return 1 end
  local best, best_use
  local plane = band_rows(l, d.g, d.g.CH) * d.PW
  for ib = 1, 8 do
    local tt = common.ceil_div(ib * d.COLS, 64)
    local smem = 4 * (4 * 32 * rows_tile(l, common.ceil_div(l.M, 64)) + d.R + ib * l.C * plane)
    if (tt <= 4 or ib == 1) and smem <= common.max_shared(l) // 2 then
      local use = ib * d.COLS / (64 * tt)
      if use >= 0.9 then return ib end
      if not best or use > best_use + 1e-9 then best, best_use = ib, use end
    end
  end
  return best or 1
end

-- The layers and configurations lib/planes_half.lua's kernel computes: 16-bit tensors, and under
-- precision tf32 the row sweep (sw=1, there by default where half.default_sw says so).
local function half_sw(l, given) return half.tf32(l) and half.default_sw(l, given) == 1 end
local function halfish(l, given) return common.half_dtype(l) ~= nil or half_sw(l, given) end
local function half_kernel(l, p) return common.half_dtype(l) ~= nil or (half.tf32(l) and p.sw == 1) end

local bm_param = common.wgmma_bm_param()
local bm_fp32 = bm_param.default
bm_param.default = function(l, given)
  if halfish(l, given) then return half.default_bm(l, given) end
  return bm_fp32(l, given)
end

-- The default warpgroups: a warpgroup a tile where wgs_one_block says so for the block
-- as given (ib, rows, bm, bk; their defaults where not given), else default_wgs under the
-- defaults of ib and rows (for fp as given).
local function default_wgs_given(l, given)
  if halfish(l, given) then return half.default_wgs(l, given) end
  local fp = given and given.fp
  local dib, dr = default_ib(l, fp), default_rows(l, fp)
  local ib, r = given and given.ib or dib, given and given.rows or dr
  return wgs_one_block(l, ib, r, given and given.bm or bm_fp32(l, given), given and given.bk or 32)
    or default_wgs(l, dib, dr)
end

-- fp's FP32 default: 1 where the layer has a 2x2 pool of stride 2 and fusing it changes
-- neither the block's default band (rows, and the images a block) nor the blocks its
-- shared memory lets an SM hold (the staged tile fits where the planes were), so the tile
-- is the same and the pool kernel after it goes; else 0. With the tile kept, the fused
-- pool cost 0-3 % more kernel time on an H100 at 10,000 images (journal, 2026-11-27),
-- about what the pool kernel it saves costs; where even bands changed the tile it lost
-- 1.3-3x (zoo-5x5-c64's 11-row bands), hence only where they do not.
local function default_fp32_fp(l, given)
  if given and given.fp ~= nil then return given.fp end
  local g = common.conv_geom(l)
  if not common.fused_pool2(g) then return 0 end
  local rows = given and given.rows or default_rows(l, nil)
  local ib = given and given.ib or default_ib(l, nil)
  if rows < g.CH and rows % 2 == 1 then return 0 end
  if not (given and given.rows) and default_rows(l, 1) ~= rows then return 0 end
  if not (given and given.ib) and default_ib(l, 1) ~= ib then return 0 end
  local p = { ib = ib, rows = rows, wgs = given and given.wgs or default_wgs(l, ib, rows),
              bk = given and given.bk or 32, occ = 1 }
  p.bm = given and given.bm or bm_fp32(l, given)
  p.fp = 0
  local s0 = shape(l, p)
  p.fp = 1
  local s1 = shape(l, p)
  local cap = common.max_shared(l)
  return (cap // s1.smem >= cap // s0.smem) and 1 or 0
end

T.params = {
  { name = "tr", quiet = true,
    doc = "16-bit tensors: 1 makes maps wgmma's M (64 a warpgroup) and the band's pixels its N, weights copied by "
      .. "cp.async; 0 the pixels M and the maps N",
    legal = function(l) return common.half_dtype(l) and { 1, 0 } or { 0 } end,
    default = function(l, given) return common.half_dtype(l) and half.default_tr(l, given) or 0 end },
  { name = "ib", doc = "images a block (their planes in shared memory; their pixels the block's columns)",
    legal = function(_) return { 1, 2, 3, 4, 5, 6, 7, 8 } end,
    default = function(l, given)
      if halfish(l, given) then return half.default_ib(l, given) end
      return default_ib(l, given and given.fp)
    end },
  { name = "rows", doc = "output rows a block (a band of one image; all of them: whole images)",
    legal = function(l)
      local g = common.conv_geom(l)
      local v = { g.CH }
      for r = math.min(g.CH - 1, 64), 1, -1 do   -- (the tallest band first: a search's fallback)
        if r * g.CW <= 1024 then v[#v + 1] = r end
      end
      return v
    end,
    default = function(l, given)
      if halfish(l, given) then return half.default_rows(l, given) end
      return default_rows(l, given and given.fp)
    end },
  { name = "wgs", doc = "warpgroups (128 threads each) a block, the block's m64 tiles shared among them",
    legal = function(_) return { 1, 2, 3, 4 } end,
    default = default_wgs_given },
  bm_param,
  { name = "bk", doc = "reduction rows of one slice, a multiple of 8 (its products summed apart)",
    -- (16-bit: the multiples of 16 that divide C rounded up to 16, the only ones its check takes; the tuner's
    -- product of legal values stays under planner.CANDIDATE_CAP with wr and sw beside them: ece408-2018fa's
    -- conv2 had 4.6 million combinations, and the first million, all tr=1, none of them legal)
    legal = function(l)
      if not common.half_dtype(l) then return { 32, 64, 16, 24, 48, 8, 128 } end
      return half.legal_bk(l)
    end,
    default = function(l, given) return halfish(l, given) and half.default_bk(l, given) or 32 end },
  { name = "occ", doc = "blocks one SM must hold at once (__launch_bounds__): registers capped at the SM's / (occ*threads)",
    legal = function(_) return { 3, 2, 1, 4 } end,
    default = function(l, given)
      if halfish(l, given) then return 1 end
      return ({ 3, 2, 1, 1 })[default_wgs_given(l, given)]
    end },
  { name = "fp", doc = "1: a 2x2 pool of stride 2 fused into the epilogue (the tile through shared memory); 0: a pool kernel after",
    legal = function(_) return { 0, 1 } end,
    default = function(l, given)
      if halfish(l, given) then return half.default_fp(l, given) end
      return default_fp32_fp(l, given)
    end },
  { name = "po", quiet = true,
    doc = "16-bit tensors, tr=1: 1 stages the planes a channel slice at a time, the next while one multiplies; "
      .. "0 all of them before the first product",
    -- (more than one slice of 16 channels needed: C over 16)
    legal = function(l) return (common.half_dtype(l) and l.C > 16) and { 0, 1 } or { 0 } end,
    default = function(_) return 0 end },
  { name = "mn", quiet = true,
    doc = "16-bit tensors, tr=1, 1x1 layers without padding: 1 stages the planes as they lie, pixels innermost "
      .. "(wgmma's B transposed; 16-byte copies where the pixels align); 0 channels innermost",
    legal = function(l)
      local g = common.conv_geom(l)
      return (common.half_dtype(l) and l.K == 1 and g.pt + g.pb + g.pl + g.pr == 0) and { 0, 1 } or { 0 }
    end,
    default = function(_) return 0 end },
  { name = "wr", quiet = true,
    doc = "16-bit tensors, tr=0: 1 copies every tap's weights into shared memory once and issues all the products "
      .. "back to back; 0 two slices' buffers, a barrier a slice",
    legal = function(l) return (common.half_dtype(l) and l.M % 8 == 0) and { 0, 1 } or { 0 } end,
    default = function(l, given) return common.half_dtype(l) and half.default_wr(l, given) or 0 end },
  { name = "sw", quiet = true,
    doc = "16-bit tensors (tr=0 and wr=1) and precision tf32, on whole images: 1 sweeps the input rows, each kernel "
      .. "column's fragment loaded once into registers for its K taps (ib images a warpgroup); 0 m64 tiles of the band's pixels",
    legal = function(l) return ((common.half_dtype(l) or half.tf32(l)) and half.sw_possible(l)) and { 0, 1 } or { 0 } end,
    default = function(l, given) return (common.half_dtype(l) or half.tf32(l)) and half.default_sw(l, given) or 0 end },
}

-- The shape of the least block a layer may have (see T.check), worked out once a layer
-- and fp: the search checks thousands of configurations of one layer.
local least_memo = setmetatable({}, { __mode = "k" })
local function least_block(l, fp)
  least_memo[l] = least_memo[l] or {}
  local m = least_memo[l]
  if not m[fp] then
    local CH = common.conv_geom(l).CH
    m[fp] = shape(l, { ib = 1, rows = (fp == 1 and CH > 1) and 2 or 1, wgs = 1, bm = 8, bk = 8, occ = 1, fp = fp })
  end
  return m[fp]
end

function T.check(l, p)
  local why_g = common.refuse_groups(l, "conv2d_planes")
  if why_g then return why_g, nil end
  if half_kernel(l, p) then return half.check(l, p) end
  local s = shape(l, p)
  local why0, blame0 = common.check_wgmma(l, p, "conv2d_planes", false, true)
  if why0 then return why0, blame0 end
  -- no block fits where the least one does not (one image's band of one output row, two
  -- with a fused pool, and the smallest slices): said first, so a layer planes cannot
  -- hold gets that reason, not the first of its defaults' other refusals
  local least = least_block(l, p.fp)
  if least.smem > common.max_shared(l) then
    return string.format("a band of %d output row%s reads %d input rows of each of the %d channels (planes %d wide): " ..
      "%d bytes of shared memory at the least, at most %d fit", least.RB, least.RB > 1 and "s" or "", least.PH, l.C,
      least.PW, least.smem, common.max_shared(l)), "rows"
  end
  if p.fp == 1 and not common.fused_pool2(s.g) then
    return "fp=1: the layer has no 2x2 pool of stride 2 to fuse", "fp"
  end
  if p.fp == 1 and p.rows < s.g.CH and p.rows % 2 == 1 then
    return string.format("fp=1: bands of %d rows would split pooling windows (an even number, or all %d)", p.rows, s.g.CH), "rows"
  end
  if p.ib > 1 and p.rows < s.g.CH then
    return string.format("ib=%d: several images a block need whole images (rows=%d, not %d)", p.ib, s.g.CH, p.rows), "ib"
  end
  if s.MT > MAX_TILES then
    return string.format("ib=%d x %d rows of %d pixels are %d m64 tiles, %d a warpgroup over %d; at most %d",
      p.ib, p.rows, s.g.CW, s.TT, s.MT, p.wgs, MAX_TILES), "rows"
  end
  if s.MT * (p.wgs - 1) >= s.TT then
    return string.format("wgs=%d: %d m64 tiles leave a warpgroup without one", p.wgs, s.TT), "wgs"
  end
  if s.regs > REG_BUDGET then
    return string.format("the accumulators, fragments and weights need about %d registers a thread; at most %d",
      s.regs, REG_BUDGET), "bm"
  end
  local cap = common.reg_cap(l, s.threads, 1)
  if s.regs > cap then
    return string.format("wgs=%d: %d threads leave %d registers a thread; the accumulators and fragments need about %d",
      p.wgs, s.threads, cap, s.regs), "wgs"
  end
  local why2, blame2 = common.check_occ(l, p.occ, s.threads, s.regs, s.smem, "the accumulators and fragments")
  if why2 then return why2, blame2 end
  if s.smem > common.max_shared(l) then
    return string.format("ib=%d images of %d padded %dx%d planes and the weights need %d bytes of shared memory; at most %d fit",
      p.ib, l.C, s.PH, s.PW, s.smem, common.max_shared(l)), "ib"
  end
  return nil
end

-- The cost model: three TF32 products (one under precision tf32) a multiply-add on tensor cores at about four
-- times FFMA's rate, over the block's whole tiles (padding and the idle rows of the
-- last tile included); or the fragment loads, about 16 instructions a tile a step for
-- each warp, when that is longer; plus the planes' copy.
function T.cost(l, p)
  if half_kernel(l, p) then return half.cost(l, p) end
  local s = shape(l, p)
  local blocks = common.ceil_div(common.cost.images(l) * s.NB, p.ib) * common.ceil_div(l.M, p.bm)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local rows = 64 * s.MT * p.wgs
  local tensor = seq * rows * p.bm * s.R8 * (s.x3 and 3 or 1) / (4 * common.cost.FMA_PER_CLOCK)
  local issue = seq * (s.threads // 32) * (s.R8 // 8) * (2 + 16 * s.MT) / 4 / common.cost.busy(conc, s.threads, 2)
  local copy = seq * (p.ib * l.C * s.PH * l.W * 12 + s.PLN) / s.threads * (s.threads // 32) / 4
  return (math.max(tensor, issue) + copy) * common.cost.spills(squeezed)
end

local source = engine.compile([=[
% if NB == 1 then
// GEMM view: the block's {{NCB}} columns ({{IB}} image{{IB > 1 and "s" or ""}} x {{COLS}} pixels) in {{TT}} m64 tile{{TT > 1 and "s" or ""}} ({{WGS}} warpgroup{{WGS > 1 and "s" or ""}} of {{MT}})
% else
// GEMM view: the block's {{NCB}} columns (a band of {{RB}} of an image's {{CH}} output rows, {{NB}} bands) in {{TT}} m64 tile{{TT > 1 and "s" or ""}} ({{WGS}} warpgroup{{WGS > 1 and "s" or ""}} of {{MT}})
% end
// x {{BM}} maps, reduced over C*K*K = {{R}} in {{NS}} slices of {{BK}} ({{R8 - R}} zero rows at the end). Products:
% if x3 then
// wgmma.mma_async m64n{{BM}}k8 TF32, A from registers, 3xTF32 (small*big, big*small, big*big).
// Shared memory (dynamic, {{smem}} B), in floats: [0, {{WB}}) two buffers of a slice's weights, hi then lo,
% else
// wgmma.mma_async m64n{{BM}}k8 TF32, A from registers: precision tf32, each operand rounded to TF32 once.
// Shared memory (dynamic, {{smem}} B), in floats: [0, {{WB}}) two buffers of a slice's weights (rounded),
% end
// each [{{BK // 4}}][{{BM // 8}}][8][4] (core matrices of 8 maps x 4 reduction rows); [{{OT}}, {{PB}}) the offset of
// reduction row r in a plane, as int2 pairs (r, r + 4) of each 8-row step; from {{PB}}: {{IB}} x {{C}} planes of
// {{PH}}x{{PW}} (the input{{NB > 1 and "'s rows the band's windows reach" or ""}} with its padding as zeros), {{PL}} floats each.
{{head}}
{
    extern __shared__ {{vec_t(stage_t, 4)}} smem4[];
    {{stage_t}}* const sm = reinterpret_cast<{{stage_t}}*>(smem4);
    int* const ot = reinterpret_cast<int*>(sm + {{OT}});
    const int tid = threadIdx.x;
    const int lane = tid & 31, wq = (tid >> 5) & 3, wg = tid >> 7;   // warp in its warpgroup, warpgroup
    const int g = lane >> 2, t4 = lane & 3;
% if NB == 1 then
    const int img0 = blockIdx.x * {{IB}};
    const int y0 = 0;   // whole images
% else
    const int img0 = blockIdx.x / {{NB}};
    const int y0 = (blockIdx.x - img0 * {{NB}}) * {{RB}};   // the band's first output row
% end
% if MB == 1 then
    const int m0 = 0;   // one block row of maps
% else
    const int m0 = blockIdx.y * {{BM}};
% end
    (void)b_arg;
% if not x3 then
    // precision tf32: v rounded to TF32 (to nearest, ties away from zero), as a float
{{tf32_rna}}
% end

    // the slice's weights: quad i of this thread is u = tid + {{NT}}*i, map u % {{BM}}, rows 4*(u / {{BM}}) .. +3
    {{stage_t}} wr[{{BI}}][4];
    auto fetch_w = [&](int s) {
        const {{w_t}}* wp = w_arg + s * {{BK * M}} + m0;
        asm("" : "+l"(wp));
#pragma unroll
        for (int i = 0; i < {{BI}}; i++) {
            const int u = tid + i * {{NT}};
            const int m = u % {{BM}}, q = u / {{BM}};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = 4 * q + e;
                const bool ok = {{wok}};
                wr[i][e] = ok ? {{w_to_acc("__ldg(wp + r * " .. M .. " + m)")}} : 0.0f;
            }
        }
    };
% if x3 then
    // each weight as its TF32 part (truncated) and the remainder, 16 bytes a store
% else
    // each weight rounded to TF32, 16 bytes a store
% end
    auto stash_w = [&](int b) {
        {{stage_t}}* const a = sm + b * {{WS}};
#pragma unroll
        for (int i = 0; i < {{BI}}; i++) {
            const int u = tid + i * {{NT}};
% if BQ % NT ~= 0 then
            if (u >= {{BQ}}) break;
% end
            const int m = u % {{BM}}, q = u / {{BM}};
            {{stage_t}}* const at = a + (q * {{BM // 8}} + m / 8) * 32 + (m % 8) * 4;
% if x3 then
            {{vec_t(stage_t, 4)}} h, l;
            h.x = __uint_as_float(__float_as_uint(wr[i][0]) & 0xffffe000u), l.x = wr[i][0] - h.x;
            h.y = __uint_as_float(__float_as_uint(wr[i][1]) & 0xffffe000u), l.y = wr[i][1] - h.y;
            h.z = __uint_as_float(__float_as_uint(wr[i][2]) & 0xffffe000u), l.z = wr[i][2] - h.z;
            h.w = __uint_as_float(__float_as_uint(wr[i][3]) & 0xffffe000u), l.w = wr[i][3] - h.w;
            *reinterpret_cast<{{vec_t(stage_t, 4)}}*>(at) = h;
            *reinterpret_cast<{{vec_t(stage_t, 4)}}*>(at + {{BK * BM}}) = l;
% else
            {{vec_t(stage_t, 4)}} h;
            h.x = rna(wr[i][0]), h.y = rna(wr[i][1]), h.z = rna(wr[i][2]), h.w = rna(wr[i][3]);
            *reinterpret_cast<{{vec_t(stage_t, 4)}}*>(at) = h;
% end
        }
    };
    // the tensor cores read the weights through the async proxy: ordinary stores fenced before the barrier
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define {{name}}_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#else
#define {{name}}_FENCE() ((void)0)
#endif

    // the planes' padding (and everything else) zero, and the offset table
#pragma unroll 4
    for (int i = tid; i < {{PLN // 4}}; i += {{NT}})
        reinterpret_cast<{{vec_t(stage_t, 4)}}*>(sm + {{PB}})[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int e = tid; e < {{R8 // 2}}; e += {{NT}}) {
        int r = 8 * (e >> 2) + (e & 3);
#pragma unroll
        for (int h = 0; h < 2; h++, r += 4) {
            const int c = r / {{KK}}, pq = r - c * {{KK}}, p = pq / {{K}};
            ot[2 * e + h] = r < {{R}} ? c * {{PL}} + p * {{PW}} + pq - p * {{K}} : 0;
        }
    }
    __syncthreads();
    // the block's images into their planes (plane q: image q / {{C}}, channel q % {{C}}), by cp.async: every
    // copy in flight at once, none waiting in a register; meanwhile the first slice's weights
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const unsigned sm0 = (unsigned)__cvta_generic_to_shared(sm);
#define {{name}}_COPY(d, g) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(sm0 + 4 * (d)), "l"(g) : "memory")
#else
#define {{name}}_COPY(d, g) (sm[d] = __ldg(g))
#endif
    {
% -- the planes hold the input as stored (4-byte copies an element): the stage's type where in_t
% -- is FP32, as every layer's is; a narrower in_t would need converting copies
        const {{in_t}}* const src = in + img0 * {{C * H * W}};
% if NB == 1 then
        // input rows 0 .. {{NRW - 1}} of each plane{{NRW < H and " (the rest no window reaches)" or ""}}: plane row py + {{pt}}
        const int lim = (n - img0 < {{IB}} ? n - img0 : {{IB}}) * {{C * NRW * W}};
#pragma unroll 4
        for (int i = tid; i < lim; i += {{NT}}) {
            const int q = i / {{NRW * W}}, rem = i - q * {{NRW * W}};
            const int py = rem / {{W}}, ix = rem - py * {{W}};
%   if clip then
            if (ix + {{pl}} >= {{PW}}) continue;   // columns no window reaches
%   end
%   if NRW == H then
            {{name}}_COPY({{PB}} + q * {{PL}} + (py + {{pt}}) * {{PW}} + ix + {{pl}}, src + i);
%   else
            {{name}}_COPY({{PB}} + q * {{PL}} + (py + {{pt}}) * {{PW}} + ix + {{pl}}, src + q * {{H * W}} + rem);
%   end
        }
% else
        // plane row py: input row y0*{{STR}} - {{pt}} + py
        const int lim = (n - img0 < {{IB}} ? n - img0 : {{IB}}) * {{C * PH * W}};
        const int iy0 = y0 * {{STR}} - {{pt}};
#pragma unroll 4
        for (int i = tid; i < lim; i += {{NT}}) {
            const int q = i / {{PH * W}}, rem = i - q * {{PH * W}};
            const int py = rem / {{W}}, ix = rem - py * {{W}};
            const int iy = iy0 + py;
%   if clip then
            if ((unsigned)iy >= {{H}}u || ix + {{pl}} >= {{PW}}) continue;   // padding, or columns no window reaches
%   else
            if ((unsigned)iy >= {{H}}u) continue;   // padding rows
%   end
            {{name}}_COPY({{PB}} + q * {{PL}} + py * {{PW}} + ix + {{pl}}, src + q * {{H * W}} + iy * {{W}} + ix);
        }
% end
    }
#undef {{name}}_COPY
    fetch_w(0);
    stash_w(0);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
    {{name}}_FENCE();
    __syncthreads();

    // this thread's rows of each tile t: columns 64*({{MT}}*wg + t) + 16*wq + lane/4 (+ 8); each one's
    // window corner in the planes (a row past the block's columns reads the first plane, stores nothing)
    int rb[{{MT}}][2];
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int c = 64 * ({{MT}} * wg + t) + 16 * wq + g + 8 * h;
            const int il = c / {{BC}}, at = c - il * {{BC}};
            const int oy = at / {{CW}}, ox = at - oy * {{CW}};   // oy: in the band
            rb[t][h] = c < {{NCB}} ? {{PB}} + il * {{C * PL}} + oy * {{STR * PW}} + ox * {{STR}} : {{PB}};
        }

    // cf: the running sum; sl: one slice's products. Tile t, register r: column
    // 64*({{MT}}*wg + t) + 16*wq + lane/4 + 8*((r >> 1) & 1), map 8*(r >> 2) + 2*(lane & 3) + (r & 1)
    {{acc_t}} cf[{{MT}}][{{NR}}], sl[{{MT}}][{{NR}}];
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) cf[t][r] = 0.0f, sl[t][r] = 0.0f;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // B: no-swizzle K-major weights, start address / 16, the distance between core matrices along
    // the reduction (leading) and along the maps (stride), in 16 bytes
    const unsigned long long d0 = ((unsigned)__cvta_generic_to_shared(sm) >> 4) + {{bdesc}};
    // A fragment (rows g, g + 8; reduction rows t4, t4 + 4): {{aorder}}
    auto wgmma = []({{acc_t}} (&d)[{{NR}}], const unsigned (&a)[4], unsigned long long db, int acc) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %{{NR + 5}}, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n{{BM}}k8.f32.tf32.tf32 {{dregs}}, {{aregs}}, %{{NR + 4}}, p, 1, 1;\n}\n"
            : {{douts}}
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
    };
% if x3 then
    // two sets of fragments, big and small parts: a step's loads overlap the last step's products
    unsigned ah[2][{{MT}}][4], al[2][{{MT}}][4];
% else
    // two sets of fragments (rounded to TF32): a step's loads overlap the last step's products
    unsigned ah[2][{{MT}}][4];
% end
    // step k (of the whole reduction) into set b
    auto frag = [&](int k, int b) {
        const int2 o = reinterpret_cast<const int2*>(ot)[4 * k + t4];
#pragma unroll
        for (int t = 0; t < {{MT}}; t++) {
            const {{stage_t}} v[4] = { sm[rb[t][0] + o.x], sm[rb[t][1] + o.x], sm[rb[t][0] + o.y], sm[rb[t][1] + o.y] };
#pragma unroll
            for (int e = 0; e < 4; e++) {
% if x3 then
                ah[b][t][e] = __float_as_uint(v[e]) & 0xffffe000u;
                al[b][t][e] = __float_as_uint(v[e] - __uint_as_float(ah[b][t][e]));
% else
                ah[b][t][e] = __float_as_uint(rna(v[e]));
% end
            }
        }
    };
    // keeps a set's registers from reuse until the products that read them have landed
    auto hold = [&](int b) {
#pragma unroll
        for (int t = 0; t < {{MT}}; t++)
#pragma unroll
% if x3 then
            for (int e = 0; e < 4; e++) asm volatile("" : "+r"(ah[b][t][e]), "+r"(al[b][t][e]) :: "memory");
% else
            for (int e = 0; e < 4; e++) asm volatile("" : "+r"(ah[b][t][e]) :: "memory");
% end
    };
#endif

#pragma unroll 1
    for (int s = 0; s < {{NS}}; s++) {
        if (s + 1 < {{NS}}) fetch_w(s + 1);   // in flight during the slice's products
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#pragma unroll
        for (int j = 0; j < {{KS}}; j++) {
            if (j >= 2) {
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                hold(j & 1);
            }
            frag(s * {{KS}} + j, j & 1);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            const unsigned long long db = d0 + (s & 1) * {{WS // 4}} + j * {{2 * BM}};
#pragma unroll
            for (int t = 0; t < {{MT}}; t++) {
% if x3 then
                wgmma(sl[t], al[j & 1][t], db, j > 0);          // small * big
                wgmma(sl[t], ah[j & 1][t], db + {{BK * BM // 4}}, 1);   // big * small
                wgmma(sl[t], ah[j & 1][t], db, 1);              // big * big
% else
                wgmma(sl[t], ah[j & 1][t], db, j > 0);
% end
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        }
#else
        // without wgmma: each accumulator a dot product of the planes and the staged weights
        {
            const {{stage_t}}* const wb = sm + (s & 1) * {{WS}};
#pragma unroll 1
            for (int t = 0; t < {{MT}}; t++)
#pragma unroll 1
                for (int r = 0; r < {{NR}}; r++) {
                    const int m = 8 * (r >> 2) + 2 * t4 + (r & 1);
                    const int base = rb[t][(r >> 1) & 1];
                    {{acc_t}} v = 0.0f;
#pragma unroll 1
                    for (int k = 0; k < {{BK}}; k++) {
                        const int e = 4 * (s * {{KS}} + (k >> 3)) + (k & 3);
                        const int off = ot[2 * e + ((k >> 2) & 1)];
                        const int wo = ((k >> 2) * {{BM // 8}} + m / 8) * 32 + (m % 8) * 4 + (k & 3);
% if x3 then
                        v = fmaf(sm[base + off], wb[wo] + wb[wo + {{BK * BM}}], v);
% else
                        v = fmaf(rna(sm[base + off]), wb[wo], v);
% end
                    }
                    sl[t][r] = v;
                }
        }
#endif
        if (s + 1 < {{NS}}) {
            stash_w((s & 1) ^ 1);   // the other buffer: its last readers landed before the last barrier
            {{name}}_FENCE();
        }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int t = 0; t < {{MT}}; t++)
#pragma unroll
            for (int r = 0; r < {{NR}}; r++) asm volatile("" : "+f"(sl[t][r]) :: "memory");
#endif
#pragma unroll
        for (int t = 0; t < {{MT}}; t++)
#pragma unroll
            for (int r = 0; r < {{NR}}; r++) cf[t][r] += sl[t][r];
        __syncthreads();
    }
#undef {{name}}_FENCE

% if pooled then
    // epilogue: the block's tile through shared memory (over the weights and planes, read by now),
    // es[map][column], then each thread takes pooled outputs: 2x2 {{pool_kind}}, {{bias and "bias, " or ""}}{{actname}}
% -- es: the accumulators over the stage (stage_t is acc_t: see kernel())
    {{acc_t}}* const es = sm;
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) {
            const int c = 64 * ({{MT}} * wg + t) + 16 * wq + g + 8 * ((r >> 1) & 1);
            if (c < {{NCB}}) es[(8 * (r >> 2) + 2 * t4 + (r & 1)) * {{ER}} + c] = cf[t][r];
        }
    __syncthreads();
    // pooled output u of the block: map u / {{PBC}}, then image, pooled row (in the band), column
    for (int u = tid; u < {{BM * PBC}}; u += {{NT}}) {
        const int mm = u / {{PBC}}, v = u - mm * {{PBC}};
        const int il = v / {{PBR}}, w = v - il * {{PBR}};
        const int py = w / {{OW}}, px = w - py * {{OW}};
        const int m = m0 + mm, oy = y0 / 2 + py;
        if (img0 + il >= n{{mguard and string.format(" || m >= %d", M) or ""}}{{CH % RB ~= 0 and string.format(" || oy >= %d", OH) or ""}}) continue;
        const {{acc_t}}* const e = es + mm * {{ER}} + il * {{BC}} + 2 * py * {{CW}} + 2 * px;
%   if pool_kind == "avg" then
        const {{acc_t}} v4 = ({{act("e[0]" .. b)}} + {{act("e[1]" .. b)}} + {{act("e[" .. CW .. "]" .. b)}} +
            {{act("e[" .. CW + 1 .. "]" .. b)}}) * 0.25f;
%   else
        const {{acc_t}} v4 = fmaxf(fmaxf(e[0], e[1]), fmaxf(e[{{CW}}], e[{{CW + 1}}])){{b}};
%   end
        out[(img0 + il) * {{OS}} + m * {{OH * OW}} + oy * {{OW}} + px] = {{from_acc(pool_kind == "avg" and "v4" or act("v4"))}};
    }
}
% else
    // epilogue: {{bias and "bias, " or ""}}{{actname}}, stored from the accumulators: this thread's columns are
    // rows lane/4 and lane/4 + 8 of its tiles, its maps 2*(lane & 3) and the next of each eight
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int c = 64 * ({{MT}} * wg + t) + 16 * wq + g + 8 * h;
            const int il = c / {{BC}}, at = y0 * {{CW}} + c - il * {{BC}};   // at: the pixel in its image
% if CH % RB ~= 0 then
            if (c >= {{NCB}} || img0 + il >= n || at >= {{COLS}}) continue;
% else
            if (c >= {{NCB}} || img0 + il >= n) continue;
% end
            {{out_t}}* const o = out + (img0 + il) * {{OS}} + at;
{{map_stores}}
        }
}
% end
]=], "conv2d_planes")

-- The A fragment's registers: (row g, row t4), (g + 8, t4), (g, t4 + 4), (g + 8, t4 + 4), as
-- mma.sync.m16n8k8's A (lib/common.lua).
local AORDER = "(g, t4), (g + 8, t4), (g, t4 + 4), (g + 8, t4 + 4)"

function T.kernel(l, p)
  if half_kernel(l, p) then return half.kernel(l, p) end
  local s = shape(l, p)
  local g = s.g
  local fused = g.kind == "none" or s.pooled
  local act = fused and l.act or "none"
  local name = string.format("conv2d_planes_c%dm%dk%d_h%dw%d%s_%s%s_i%d%s_m%dk%d_g%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, l.bias and "_bias" or "", p.ib,
    p.rows < g.CH and string.format("r%d", p.rows) or "", p.bm, p.bk, p.wgs)
    .. (p.occ > 1 and string.format("_o%d", p.occ) or "") .. (s.pooled and "_fp" .. g.pool_tag or "")
    .. (s.x3 and "" or "_tf32")
  -- the output written into a concat's slice (common.out_slice): its image stride
  local pre = common.planes_prelude(l, name, fused, s.threads, p.occ, s.NR)
  local slice, ty, head, args, dregs, douts = pre.slice, pre.ty, pre.head, pre.args, pre.dregs, pre.douts
  name = pre.name
  local mguard = l.M % p.bm ~= 0
  local wok = {}
  if mguard then wok[#wok + 1] = string.format("m0 + m < %d", l.M) end
  if s.R8 ~= s.R then wok[#wok + 1] = string.format("s * %d + r < %d", p.bk, s.R) end
  if s.BQ % s.threads ~= 0 then wok[#wok + 1] = string.format("u < %d", s.BQ) end
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, KK = s.KK, R = s.R, R8 = s.R8,
    IB = p.ib, BM = p.bm, BK = p.bk, WGS = p.wgs, MT = s.MT, TT = s.TT, NT = s.threads, KS = s.KS,
    NCB = s.NCB, COLS = s.COLS, CW = g.CW, CH = g.CH, STR = g.S, NS = s.S, pt = g.pt, pl = g.pl,
    RB = s.RB, NB = s.NB, BC = s.BC, NRW = math.min(l.H, s.PH - g.pt),
    PH = s.PH, PW = s.PW, PL = s.PL, PLN = s.PLN, WB = s.WB, WS = s.WS, OT = s.OT, PB = s.PB, x3 = s.x3,
    BI = s.BI, BQ = s.BQ, NR = s.NR, smem = s.smem, MB = common.ceil_div(l.M, p.bm),
    clip = l.W + g.pl > s.PW,
    dregs = dregs, douts = douts,
    aregs = string.format("{%%%d, %%%d, %%%d, %%%d}", s.NR, s.NR + 1, s.NR + 2, s.NR + 3),
    aorder = AORDER,
    bdesc = common.wgmma_desc(p.bm),
    wok = #wok > 0 and table.concat(wok, " && ") or "true",
    bias = l.bias, mguard = mguard, actname = act,
    pooled = s.pooled, pool_kind = g.kind, ER = s.ER, OH = g.OH, OW = g.OW,
    PBR = (p.rows // 2) * g.OW, PBC = p.ib * (p.rows // 2) * g.OW,
    b = l.bias and (" + " .. ty.w_to_acc("__ldg(b_arg + m)")) or "",
    act = function(e) return common.act(act, e) end,
    OS = slice and slice.stride or (s.pooled and l.M * g.OH * g.OW or l.M * s.COLS),
  }
  common.typed(l, v)
  v.map_stores = common.wgmma_map_stores(p.bm, mguard and l.M, s.COLS, "t4",
    function(r) return v.from_acc(v.act(r .. v.b)) end)
  -- the weights' stage (and the planes): FP32 values split into a TF32 part and its
  -- remainder (3xTF32) or rounded to TF32 (tf32), whatever the tensors hold: the accumulator's type
  v.stage_t = v.acc_t
  v.tf32_rna = common.tf32_rna_lambda()
  return {
    name = name,
    args = args,
    source = source(v),
    grid = { common.batch_dim(s.NB, p.ib), common.ceil_div(l.M, p.bm), 1 },
    block = { s.threads, 1, 1 },
    shared = s.smem,
    weights = "arg:transposed",
    bias = l.bias and "arg" or "none",
    out_elems = s.pooled and l.M * g.OH * g.OW or l.M * s.COLS,
    shape = (s.pooled and common.conv_shape(l, g, act, true, l.M, g.OH, g.OW) or common.conv_shape(l, g, act, false, l.M, g.CH, g.CW))
      .. (slice and string.format(", into a slice of %d values an image", slice.stride) or ""),
    fused = fused,
    out_slice = slice ~= nil,
    precision = (not s.x3) and "tf32" or nil,   -- (the header's precision line: one TF32 product)
  }
end

return T
