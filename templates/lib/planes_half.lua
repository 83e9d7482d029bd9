-- planes_half.lua — conv2d_planes for 16-bit tensors (bf16, fp16): both wgmma
-- operands read by descriptor from shared memory, nothing gathered through registers.
--
-- Why: conv2d_igemm_wg's 16-bit products take a sixth of 3xTF32's tensor time, so its
-- gather (every (pixel, reduction row) element loaded, packed and stored once per block)
-- bounds it at 19-25 % of the dense BF16 peak (bench/RESULTS.md, 2026-11-29). Here a
-- block copies its input band once into shared memory channels innermost, and for a
-- stride-1 convolution every kernel tap's A operand is then that copy shifted: output
-- pixel (y, x) of the band, numbered y * PW + x over the padded width PW (the columns
-- x >= the output width are computed and never stored), reads staged pixel
-- (y + ky) * PW + x + kx = its number + ky * PW + kx. So a tap's A is a descriptor whose
-- start moves by ky * PW + kx pixels (16 bytes each: a pixel's 8 channels of one group),
-- and the tensor cores read it straight from the copy: no per-tap, per-element work.
--
-- Shared memory (16-byte units = 8 elements): two weight buffers of one slice each,
-- [channel group bk/8][map group BM/8][8 maps][8 channels] (conv2d_igemm_wg's B layout:
-- the no-swizzle K-major core matrices), then the planes, [channel group CP/8][pixel
-- NPIX][8 channels]: core matrices of 8 consecutive pixels x 8 channels are 128
-- contiguous bytes, the next 8 pixels 128 bytes on (the stride offset), the next 8
-- channels NPIX * 16 bytes on (the leading offset). CP is C rounded up to 16 (one k16
-- step takes two channel groups; the padding channels are zeros in planes and weights),
-- NPIX the staged pixels: the band's input rows (with the padding as zeros) and, past
-- them, zeros up to what the last m64 tile's widest tap reads.
--
-- The loop runs over slices of bk channels of one tap (tap by tap, CP/bk slices each):
-- the planes and slice 0's weights staged; then for each slice, the next one's weights
-- fetched into registers, bk/16 wgmma m64nBMk16 for each of the warpgroup's MT tiles
-- issued on this slice's buffer, the fetched weights stored into the other buffer while
-- they run, then the wait and a barrier. (A whole tap a slice held CP*BM/threads
-- weights a thread in registers: 128 for 256 channels into 128 maps, which spilled.) Weights arrive reordered K*K x C x M
-- (weights=arg:taps:K*K, as conv2d_igemm_wg's tap-by-tap slices). Epilogue: bias and
-- activation from the accumulators, stored where the pixel is an output (no fused pool:
-- a pool runs as a kernel after it; tr=1 below fuses one). Stride 1 only. Without sm_90a (the CPU emulation of
-- test_emulate) each accumulator adds the same staged values by FMAs, in FP32.

-- tr=1 (the default on layers of 64 maps or more whose outputs are 12 columns wide or more:
-- H.default_tr): maps are wgmma's M and pixels its N. With the maps
-- as N (tr=0, above) a warpgroup's m64 tile of pixels meets at most bm maps, so every
-- k16 step reads 2 KB of planes and bm*32 bytes of weights for 64*bm*32 FLOP: at
-- bm = 64 shared memory's 128 bytes a clock only just feed the tensor cores, and the
-- H200 ran such layers at 19-21 % of the BF16 peak. With 64 maps as M and up to 256
-- pixels as N (m64nNPk16) a step reads 2 KB of weights and NP*32 bytes of planes for
-- 64*NP*32 FLOP, half the bytes a FLOP at NP = 256. The planes are the same (B, K-major:
-- 8 pixels x 8 channels a core matrix); the weights (A) are copied by 16-byte cp.async
-- straight from the taps-reordered tensor, 8 maps of one channel a copy, into
-- [channel group][map group][8 channels][8 maps]: the MN-major (transposed) no-swizzle
-- layout, map groups 128 bytes apart (the stride offset), channel groups bm*16 (the
-- leading offset); so M must be a multiple of 8. Slices go through a ring of TR_STAGES
-- buffers: slice s + TR_STAGES - 2 is copied while slice s multiplies and slice s - 1
-- may still be on the tensor cores (wgmma.wait_group 1), one barrier a slice. A block is
-- bm/64 warpgroups over maps times wgs/(bm/64) over the band's pixels, NP each.
-- Its epilogue stages the block's tile in shared memory (map-major rows of the band's
-- pixels) and stores rows of consecutive outputs; with fp=1 (a 2x2 pool of stride 2, bands
-- of an even number of rows) the tile is staged as FP32 sums and each thread takes pooled
-- outputs, so the conv output is never written.
--
-- wr=1 (tr=0, M a multiple of 8): every slice's weights resident. Before the planes, the
-- block copies all K*K*CP/bk slices' weights by 16-byte cp.async (8 maps of one channel a
-- copy, straight from the taps-reordered tensor) into [slice][channel group][map group][8
-- channels][8 maps], B's MN-major (transposed) no-swizzle layout: the same offsets as tr=0's
-- K-major buffers (channel groups bm*16 bytes apart, map groups 128), the core matrices
-- transposed and wgmma told so. Then one barrier, and every tap's products are issued back to
-- back, waited for once. With two buffers (wr=0) each slice ends in a wait for its products and
-- a barrier: a layer of few channels and maps (ece408-2018fa's conv2, 16 padded channels into
-- 24 maps: 4 small products a warpgroup a tap) spends its time there, not on the tensor cores.
--
-- sw=1 (tr=0, wr=1, whole images): the rows swept. Under tr=0 an m64n{bm}k16 product reads 2 KB
-- of planes for bm maps, K*K of them a tile, and with few maps shared memory bounds the kernel
-- (ece408-2018fa's conv2, 24 maps: the L1/shared pipe at 77 % of its peak, the tensor pipe at
-- 35 %). Here a warpgroup's 64 rows are output columns (ib whole images of CW <= 64 columns each,
-- ib*CW of them used) and it sweeps the input rows: at row yi it loads, for each kernel column kx,
-- the pixels x + kx of row yi once into registers (ldmatrix, A of wgmma's register form) and
-- multiplies them by the K taps (ky, kx), each adding to output row yi - ky: one load feeds K
-- products. The K + 1 (K + 2 where K is even) output rows in flight live in accumulator slots; a slot's
-- first product overwrites it (scale-d 0). After a row's products the next row's fragments are
-- loaded, then wgmma.wait_group 0, and output row yi - K + 1, whole now, is stored from its slot
-- (a quad's lanes: consecutive columns). The sweep is unrolled by the slots (their registers named
-- at compile time): a loop over whole groups of S rows, then the rows left unrolled apart (before,
-- the last group swept rows past the padded height: 40 for 33 on ece408-2018fa's conv2). Two
-- things did not work (an H200, bench/RESULTS.md): columns swept instead of rows stored each
-- output column as 2-byte writes to 32 lines a warp (L2 at 81 % of its throughput, ece408-2018fa's
-- conv2 1.97 ms), and waiting for the row before the last only (wait_group 1, K + 1 slots in
-- flight) made ptxas serialize every product (C7514: accumulators read while products run).
-- Weights as wr=1. Each kernel column's weight descriptors are made from a base hidden from ptxas
-- (an empty asm): else it computes all K*K taps' descriptors once and holds them, two registers
-- each, across the sweep (238 registers a thread on ece408-2018fa's conv2 in bf16, 178 without).
-- Where two rows' fragments do not fit the registers (two k-steps a 7x7 tap), one buffer: the
-- next row's fragments are loaded after the wait, and K slots suffice (the row stored is the one
-- the next row's first product overwrites), the ldmatrix latency then in the sweep's path.
--
-- Precision tf32 (FP32 tensors, one TF32 product a step) runs this kernel too: a 16-byte unit is 4
-- FP32 channels, a k8 step two units, so the planes' layout, ldmatrix's addresses and the fragment
-- registers are the 16-bit ones (ldmatrix's 8x8 16-bit matrices are 8x4 FP32 ones, in TF32 A's
-- register order); the planes and weights are rounded to TF32 (cvt.rna) as they are staged, and the
-- weights go through registers into the K-major layout [slice][channel group][map group][8 maps][4
-- channels] (tf32 wgmma takes no transposed operand). On an H200 at 10,000 images
-- (bench/scripts/planes_sw_tf32_device.sh): ece408-2018fa's conv2 2.911 -> 2.258 ms, ece408-2018sp's
-- (6 -> 16, 5x5) 0.403 against igemm's 0.934.
--
-- mn=1 (tr=1, 1x1 layers without padding; no default: no faster than tr=1 on an H200, zoo-1x1's
-- 64 -> 256 on 22x22 3.06 against 3.05 ms): the planes staged as
-- they lie in memory, pixels innermost, B's transposed (MN-major) layout [channel group][pixel
-- group][8 channels][8 pixels]: the same 16-byte units apart as tr=1's channels-innermost planes
-- (so the same descriptors, wgmma told of the transpose), each unit a row of 8 pixels of one
-- channel, copied by 16-byte cp.async straight from the input where every 8 pixels' first lies on
-- 16 bytes (H*W and the band's pixels multiples of 8), by two 8-byte ones where every 4 pixels'
-- first lies on 8 bytes, else gathered through registers. With no
-- tap to shift (K = 1) nothing needs the channels innermost, and the staging is a plain copy where
-- tr=1's builds each unit from 8 two-byte loads.
--
-- po=1 (tr=1, two or more channel slices; not a default: slower on every layer timed): the loop runs
-- channel slice by channel slice, each tap in turn (slice s: channel slice s / K*K, tap
-- s % K*K), and only the first channel slice's planes are staged before it. At a channel
-- slice's first tap every thread loads its units of the next channel slice's planes into
-- registers (SU units of 8 values), and after its last tap's products are issued stores them
-- and fences them for the tensor cores; the barrier at the top of the next slice publishes
-- them. The staging then runs beside the products where it ran before the first one (a block
-- alone on its SM spent 45 % of its stalls there on zoo-vgg-same's conv2_2).

local engine = import("lib/engine")
local common = import("lib/common")

local H = {}

local MAX_TILES = 4      -- m64 tiles of one warpgroup
local SW_MAX_WGMMA = 1280 -- sw=1: wgmma instructions the unrolled sweep may hold (ptxas: 686 in 0.83 s, 1029 in 1.21 s)
local TR_STAGES = 4      -- tr=1: weight buffers in the ring (two slices copied ahead)
local TR_MAX_N = 256     -- tr=1: wgmma's largest N, a warpgroup's pixels
local REG_BUDGET = 232   -- accumulators, the next slice's weights and addressing a thread
local ADDRESSING = 40

-- Precision tf32 (FP32 tensors, one TF32 product) takes sw=1's kernel alone (the sw paragraph
-- below): there a 16-byte unit holds 4 channels (EU) and a k8 step 8 (KC), both operands'
-- values rounded to TF32 (cvt.rna) when staged; B stays K-major (tf32 wgmma has no transposed
-- operand), so the weights go through registers, not cp.async.
local function tf32(l) return l.precision == "tf32" and not common.half_dtype(l) end
local function eu(l) return tf32(l) and 4 or 8 end        -- elements of a 16-byte unit
local function cpad(l) return common.ceil_div(l.C, 2 * eu(l)) * 2 * eu(l) end   -- C rounded up to a k-step
H.tf32 = tf32

-- The whole images a sweeping warpgroup's 64 rows hold by default (sw=1): the most, up to 8, whose
-- block (the tile and slice as given, else their defaults) fits the shared memory, down to half
-- the rows used (zoo-k7pad's 20 -> 24 7x7 on 9x9 under tf32: 4 images of 9 columns, not 7, beside
-- every tap's FP32 weights); the most where none fits (the check refuses it then).
local function sw_images(l, given)
  local g = common.conv_geom(l)
  local top = math.max(1, math.min(8, 64 // g.CW))
  local p = { sw = 1, tr = 0, rows = g.CH, wgs = given and given.wgs or 1,
    bm = given and given.bm or H.default_bm(l, given), bk = given and given.bk or H.default_bk(l, given) }
  for ib = top, 1, -1 do
    if ib < top and ib * g.CW < 32 then break end
    p.ib = ib
    if H.shape(l, p).smem <= common.max_shared(l) then return ib end
  end
  return top
end

-- What the layer and the band decide.
function H.shape(l, p)
  local g = common.conv_geom(l)
  local s = { g = g }
  s.PW = l.W + g.pl + g.pr                    -- a staged row: the padded input's width
  s.T32 = tf32(l)
  s.MN = false                                -- mn=1 (tr=1 below): the planes pixels innermost
  s.EU = eu(l)                                -- elements a 16-byte unit (8; tf32 4)
  s.KC = 2 * s.EU                             -- channels a k-step (k16; tf32 k8)
  s.ES = 16 // s.EU                           -- bytes an element
  s.CP = cpad(l)
  s.CG = s.CP // s.EU                         -- channel groups of a unit (16 bytes a pixel)
  s.KK = l.K * l.K
  s.RB = p.rows                               -- output rows of a block (a band)
  s.NB = common.ceil_div(g.CH, p.rows)        -- bands of an image
  s.BPX = p.rows * s.PW                       -- the band's pixels over the padded width
  -- tr=1 with ib > 1 (whole images): ib images' padded inputs staged one below the other, PH rows
  -- each, and computed as one tall band: output row y of image i is band row i*PH + y; the K - 1
  -- rows between images straddle two and are never stored
  s.IB = p.ib or 1
  s.PH = l.H + g.pt + g.pb
  s.TT = common.ceil_div(s.BPX, 64)           -- m64 tiles
  s.MT = common.ceil_div(s.TT, p.wgs)         -- tiles a warpgroup
  s.threads = 128 * p.wgs
  s.ROWS_IN = p.rows + l.K - 1                -- staged input rows
  if s.IB > 1 then
    s.ROWS_IN = s.IB * s.PH
    s.BPX = (s.ROWS_IN - l.K + 1) * s.PW
  end
  s.REAL = s.ROWS_IN * s.PW                   -- staged pixels holding the input (or its padding)
  s.CS = s.CP // p.bk                        -- slices a tap
  s.NS = s.KK * s.CS                          -- slices
  s.WBUF = p.bk * p.bm                        -- elements of one slice's weights
  -- weight units a slice, 16 bytes each (tr=0: 8 channels of one map, through registers;
  -- tr=1: 8 maps of one channel, a cp.async copy)
  s.WU = p.bk * p.bm // s.EU
  s.WI = common.ceil_div(s.WU, s.threads)
  if p.sw == 1 then
    -- sw=1: ib whole images a warpgroup, wgs warpgroups a block (each its own images)
    s.SW, s.WR, s.PO, s.tr = true, true, false, false
    s.IBW = p.ib                              -- images a warpgroup: its m64 rows, ib*CW columns
    s.IB = p.ib * p.wgs                       -- images a block (the prologue's)
    s.RB, s.NB = g.CH, 1
    s.KS = s.CP // s.KC                       -- k-steps a tap
    s.NR = p.bm // 2
    s.MG = p.bm // 8
    -- AB fragment buffers: two (the next row's loaded while this row's products run) where the
    -- registers allow, else one (loaded after the row's products are in). Accumulator slots: K,
    -- or with two buffers K + 1 or K + 2, even (the buffers alternate across the unrolled rows).
    -- (With each kernel column's weight descriptors made from an opaque base ptxas takes about 26
    -- more than the accumulators and fragments: 178 for 8 slots of 12 and two buffers of 7 x 4 in
    -- bf16, 166 for 7 slots and one buffer of 7 x 8 in tf32; before, holding all 49 taps'
    -- descriptors, 238 for the first and 255 with spills for the second.)
    local function regs(ab, slots) return slots * s.NR + ab * l.K * s.KS * 4 + ADDRESSING end
    local slots2 = l.K + 1 + (l.K % 2 == 0 and 1 or 0)   -- two buffers: an even count
    s.AB = regs(2, slots2) <= REG_BUDGET and 2 or 1
    s.S = s.AB == 2 and slots2 or l.K
    s.regs = regs(s.AB, s.S)
    -- the PH input rows swept in groups of S (a loop over PHF rows, the slots' registers named in
    -- its unrolled body), then the RT rows left, unrolled apart: the last group had swept S rows
    -- past the padded height (ece408-2018fa's conv2 in bf16: 40 rows for 33)
    s.PHF = s.PH // s.S * s.S
    s.RT = s.PH - s.PHF
    s.NPIX = s.IB * s.PH * s.PW
    s.REAL = s.NPIX
    s.PU = s.CG * s.NPIX
    s.PB = s.NS * s.WBUF
    s.smem = s.ES * (s.PB + s.PU * s.EU)
    s.WGMMAS = (s.S + s.RT) * s.KK * s.KS     -- wgmma instructions of the unrolled sweep
    return s
  end
  s.tr = p.tr == 1
  if s.tr then
    -- maps as wgmma's M: MR warpgroups over the block's bm maps (64 each), PG over its
    -- pixels, NP pixels (wgmma's N) each
    s.MR = math.max(1, p.bm // 64)
    s.PG = math.max(1, p.wgs // s.MR)
    s.NP = common.ceil_div(common.ceil_div(s.BPX, s.PG), 8) * 8
    s.NPIX = math.max(s.REAL, s.PG * s.NP + (l.K - 1) * (s.PW + 1))
    s.MG = p.bm // 8                          -- map groups of a slice's weights
    s.PB = TR_STAGES * s.WBUF                 -- the planes' first element, after the ring
    s.NR = s.NP // 2                          -- accumulators a thread
    s.regs = s.NR + 2 * s.WI + ADDRESSING
    -- mn=1: the planes pixels innermost (the header's mn paragraph), NPIX a whole number of 8-pixel
    -- groups (PGN); FAST16: every group's first pixel on 16 bytes in the input (the image's pixels and
    -- the band's a multiple of 8), so a group is one 16-byte copy
    s.MN = p.mn == 1
    if s.MN then
      s.NPIX = common.ceil_div(s.NPIX, 8) * 8
      s.PGN = s.NPIX // 8
      s.FAST16 = (l.H * l.W) % 8 == 0 and (s.NB == 1 or (p.rows * l.W) % 8 == 0)
      -- FAST8: not FAST16, but every 4 pixels' first on 8 bytes, so a group is two 8-byte copies
      -- (zoo-1x1's 22x22 maps: the 2-byte gathers had bounded its mn=1 kernel, 3.07 ms on an H200)
      s.FAST8 = not s.FAST16 and (l.H * l.W) % 4 == 0 and (s.NB == 1 or (p.rows * l.W) % 4 == 0)
    end
  else
    -- the widest tap of the last tile a warpgroup computes reads up to pixel 64*MT*wgs - 1 +
    -- (K-1)*PW + K-1: with wgs warpgroups of MT tiles each that is past the TT tiles the band
    -- needs where wgs does not divide TT (22 columns x 20 rows: 7 tiles, warpgroup 1 computes
    -- tiles 4 to 7; staged only up to tile 6's reach, wgmma read past the shared memory)
    s.NPIX = math.max(s.REAL, s.MT * p.wgs * 64 + (l.K - 1) * (s.PW + 1))
    s.NR = p.bm // 2                          -- accumulators of one tile a thread
    s.WR = p.wr == 1
    if s.WR then
      -- wr=1: every slice's weights resident, copied by cp.async (MG map groups of 8 a channel)
      s.MG = p.bm // 8
      s.PB = s.NS * s.WBUF
      s.regs = s.MT * s.NR + ADDRESSING
    else
      s.PB = 2 * s.WBUF                       -- the planes' first element, after two slices
      s.regs = s.MT * s.NR + 8 * s.WI + ADDRESSING
    end
  end
  s.PU = s.CG * s.NPIX                        -- plane units (8 channels of one pixel)
  -- po=1 (tr=1): the planes staged a channel slice at a time, the next slice's units held in
  -- registers (SU a thread, 8 16-bit values each) while the slice before multiplies
  s.PO = s.tr and p.po == 1
  s.SUN = s.NPIX * p.bk // 8                  -- plane units of one channel slice
  s.SU = common.ceil_div(s.SUN, s.threads)
  if s.PO then s.regs = s.regs + 4 * s.SU end
  s.smem = 2 * (s.PB + s.PU * 8)
  if s.tr then
    -- the epilogue's staged tile: bm maps x EP pixels (a row 4 bytes past a multiple of 128, so
    -- that the eight maps a warp stores at once fall in different banks), in the output's type
    -- (with a fused pool, fp=1: the sums in FP32, pooled and rounded once)
    s.EP = s.PG * s.NP + 2
    s.pooled = p.fp == 1
    s.smem = math.max(s.smem, p.bm * s.EP * ((s.pooled or common.types(l).out_t == "float") and 4 or 2))
  end
  return s
end

-- tr's default for l, given the parameters the spec gives: 1 for a stride-1 layer of at
-- least 64 maps (a multiple of 8: the weights' 16-byte copies) whose conv output is 12 or
-- more columns wide, or 8 to 11 where whole images stack (below), else 0. On an H200 in bf16
-- at 10,000 images (bench/RESULTS.md, 2026-11-29), tr=1 with the epilogue staged through shared memory against tr=0 and
-- igemm_wg (ms): zoo-vgg-same conv1_2 (64 -> 64, 32x32) 2.40 against 3.70 and 3.65
-- (without its pool, a kernel after it then: the pool is fused since, fp), conv2_2
-- (128 -> 128, 16x16) 2.17 (bm=64) against 4.64 and 2.83, zoo-wide3x3 conv3 (64 -> 128,
-- 14x14) 1.09 against 1.57 (igemm_wg); conv2_1 (64 -> 128, 16x16) 1.82 against 1.84
-- (bm=128); on 8x8 maps tr=1 lost (conv3_1 2.63 against igemm_wg's 2.02, conv3_2 4.93 /
-- 3.82): a band's padded width (10 for 8) wastes a fifth of the columns and a block has
-- too few pixels for wgmma's N. (Its first epilogue, stores straight from the
-- accumulators, lost to tr=0 on four of five of those layers: a warp's store reached
-- eight maps of four pixels two apart, 5.5x the output's bytes in L2 sectors.)
--
-- Outputs of 8 to 11 columns take tr=1 too where whole images stack (stack_ib below): on 8x8
-- outputs (zoo-vgg-same's conv3_1, 128 -> 256, and conv3_2, 256 -> 256 with its pool) one image a
-- block lost (2.63 and 4.93 ms against igemm_wg's 2.02 and 3.82: 80 pixels a block, 20 of them
-- padding columns, the weights copied for each), 2 / 3 / 4 images a block took 1.569 / 1.284 /
-- 1.563 ms and 3.284 / 2.564 / 2.481 (bench/scripts/planes_ib_device.sh, H200, bf16, 10,000 images).
H.TR_MIN_CW = 12
H.TR_MIN_M = 64
H.TR_STACK_MIN_CW = 8
H.TR_STACK_PIX = 320   -- the tallest stack's computed pixels (3 images of 8x8, padded 10x10: 280)

-- The slice the band and the stack are sized with: the most channels of 64, 32, 16 (and, under
-- tf32, 8) that divide CP and are whole k-steps.
local function base_bk(l)
  local CP = cpad(l)
  for _, bk in ipairs({ 64, 32, 16, 8 }) do if CP % bk == 0 and bk % (2 * eu(l)) == 0 then return bk end end
  return 16
end

-- The whole images a block stacks by default under tr=1: for a stride-1 layer whose outputs
-- are TR_STACK_MIN_CW to TR_MIN_CW - 1 columns wide, the most (up to 4, at least 2) whose
-- stack computes at most TR_STACK_PIX pixels and whose block fits (wgmma's N, shared memory,
-- registers), for the map tile and warpgroups given (else 64 and 2); else 1.
local stack_memo = setmetatable({}, { __mode = "k" })   -- per layer table and given tile: the defaults ask often
local function stack_ib(l, given)
  local key = string.format("%s/%s/%s", given and given.wgs, given and given.bm, given and given.fp)
  stack_memo[l] = stack_memo[l] or {}
  if stack_memo[l][key] == nil then stack_memo[l][key] = H.stack_ib(l, given) end
  return stack_memo[l][key]
end

function H.stack_ib(l, given)
  local g = common.conv_geom(l)
  if g.S ~= 1 or g.CW < H.TR_STACK_MIN_CW or g.CW >= H.TR_MIN_CW then return 1 end
  local PH, PW = l.H + g.pt + g.pb, l.W + g.pl + g.pr
  local fp = (given and given.fp) or (common.fused_pool2(g) and 1 or 0)
  for ib = 4, 2, -1 do
    if (ib * PH - l.K + 1) * PW <= H.TR_STACK_PIX then
      local s = H.shape(l, { rows = g.CH, ib = ib, wgs = given and given.wgs or 2, bm = given and given.bm or 64,
        bk = base_bk(l), tr = 1, fp = fp })
      if s.NP <= TR_MAX_N and s.smem <= common.max_shared(l) and s.regs <= REG_BUDGET then return ib end
    end
  end
  return 1
end

function H.default_tr(l, given)
  if given and given.tr ~= nil then return given.tr end
  local g = common.conv_geom(l)
  if tf32(l) or g.S ~= 1 or l.M < H.TR_MIN_M or l.M % 8 ~= 0 then return 0 end
  if g.CW >= H.TR_MIN_CW then return 1 end
  return (given and given.ib or stack_ib(l, given)) > 1 and 1 or 0
end

-- ib's default: stack_ib's where tr is 1, else 1.
function H.default_ib(l, given)
  if given and given.ib then return given.ib end
  -- sw=1: the whole images a warpgroup's 64 rows hold (up to 8)
  if H.default_sw(l, given) == 1 then return sw_images(l, given) end
  return H.default_tr(l, given) == 1 and stack_ib(l, given) or 1
end

-- fp's default: 1 (the pool in the epilogue) where tr=1 and the layer has a 2x2 pool of
-- stride 2, as tr=0's pool kernel after it reads the whole conv output again.
function H.default_fp(l, given)
  if given and given.fp ~= nil then return given.fp end
  return (H.default_tr(l, given) == 1 and common.fused_pool2(common.conv_geom(l))) and 1 or 0
end

-- The default band: the most rows whose tiles the warpgroups' MT_MAX tiles hold (each
-- with bm/2 accumulators a thread: at most 128 of them) and whose planes fit beside the
-- weights; wgs 2.
function H.default_bm(l, given)
  -- tr=1: 64 maps, one warpgroup's M (zoo-vgg-same's conv2_2, 128 maps: 2.17 ms in two
  -- block rows of 64, 2.83 in one of 128 on an H200 in bf16)
  if H.default_tr(l, given) == 1 then return 64 end
  if l.M <= 128 then return common.wgmma_rows_tile(l, 1) end
  return common.wgmma_rows_tile(l, common.ceil_div(l.M, 128))
end

-- wgs' default: 2, or 1 under sw=1 (ece408-2018fa's conv2 0.865 ms with one warpgroup a block,
-- 0.869 with two; ece408-2018sp's 0.328 / 0.364)
function H.default_wgs(l, given)
  if given and given.wgs then return given.wgs end
  return H.default_sw(l, given) == 1 and 1 or 2
end

-- sw's default: 1 under tr=0 (as given, else its default) where K >= SW_MIN_K, wr is not given 0, rows
-- are not given as a band and the sweep's block (one warpgroup of 64 // CW images, up to 8, the tile and slice as given, else
-- their defaults) passes the check, else 0. On an H200 in bf16 at 10,000 images
-- (bench/scripts/planes_wr_device.sh; planes tr=0 wr=1 / sw=1, ms): ece408-2018fa's conv2 (12 -> 24,
-- 7x7) 1.138 / 0.865, ece408-2018sp's conv2 (6 -> 16, 5x5) 1.264 / 0.328 (igemm_wg 0.726); 3x3
-- layers lost: zoo-residual's 32 -> 32 1.20 / 1.22-1.37, zoo-inception's 32 -> 24 0.99 / 1.24,
-- zoo-linear's 16 -> 40 0.83 / 0.87 (three products a load, and a wait each row).
H.SW_MIN_K = 5
H.SW_MIN_BM = 16
H.SW_TF32_MIN_USE = 0.75

-- The layers a sweep can take at all (its check asks more): stride 1, K >= 2, M a multiple of 8
-- (the weights' 16-byte copies) and at most 64 output columns (a warpgroup's rows).
function H.sw_possible(l)
  local g = common.conv_geom(l)
  return g.S == 1 and l.K >= 2 and l.M % 8 == 0 and g.CW <= 64
end

-- bk's values the check takes (16-bit): multiples of 16 dividing C rounded up to 16, from {32, 64, 16, 128}.
function H.legal_bk(l)
  local v = {}
  for _, bk in ipairs({ 32, 64, 16, 128 }) do if cpad(l) % bk == 0 then v[#v + 1] = bk end end
  return v
end

function H.default_sw(l, given)
  if given and given.sw ~= nil then return given.sw end
  local t32 = tf32(l)
  if l.K < H.SW_MIN_K or not H.sw_possible(l) or (given and given.wr == 0 and not t32) or H.default_tr(l, given) ~= 0 then
    return 0
  end
  local g = common.conv_geom(l)
  if given and given.rows and given.rows ~= g.CH then return 0 end
  local p = { tr = 0, wr = t32 and 0 or 1, sw = 1, fp = given and given.fp or 0, po = given and given.po or 0, rows = g.CH,
    occ = given and given.occ or 1, ib = given and given.ib or sw_images(l, given), wgs = given and given.wgs or 1,
    bm = given and given.bm or H.default_bm(l, given) }
  p.bk = given and given.bk or H.default_bk(l, given)
  -- tf32: only where the blocks (ib*wgs images each) fill the SMs: at 64 images ece408-2018fa's conv2
  -- would be 32 blocks, and planes' tiles (192 blocks) or igemm's split serve it (not timed; the
  -- 16-bit rule, older, has no such bound)
  if t32 and common.ceil_div(common.cost.images(l), p.ib * p.wgs) < ((l.target and (l.target.sms or 0) > 0) and
      l.target.sms or 100) then
    return 0
  end
  -- and only on tiles of SW_MIN_BM maps or more: an m64n8 product a tap is too little work for a
  -- row's wait (zoo-inception's 32 -> 8 5x5 same on 32x32, bf16: 1.318 ms swept against 1.106 in
  -- tiles; 16 to 24 maps won 1.7-3.9x: bench/scripts/planes_sw_tf32_device.sh, H200, 10,000 images)
  if p.bm < H.SW_MIN_BM then return 0 end
  if H.check(l, p) ~= nil then return 0 end
  -- tf32: only where H.SW_TF32_MIN_USE or more of a warpgroup's 64 rows are its images' columns: on
  -- an H200 at 10,000 images the sweep won at 0.84 and 0.81 (ece408-2018fa's conv2 2.258 against the
  -- tiles' 2.911 ms, ece408-2018sp's 0.403 against 0.884) and lost at 0.70 (zoo-k7pad's 20 -> 24 7x7
  -- on 9x9, 5 images of 9 columns: 0.80 against 0.50, its 20 channels three k8 steps a tap)
  -- (bench/scripts/planes_sw_tf32_device.sh; those sweeps ran whole groups of rows past the padded
  -- height: 35, 30 and 16 rows for 33, 30 and 15)
  if t32 and p.ib * g.CW / 64 < H.SW_TF32_MIN_USE then return 0 end
  return 1
end

-- wr's default: 1 under tr=0 where M is a multiple of 8 and the block (its other parameters as
-- given, else their defaults) still fits with every tap's weights in shared memory, else 0. On an
-- H200 in bf16 at 10,000 images (bench/scripts/planes_wr_device.sh; wr=0 / wr=1, ms): ece408-2018fa's
-- conv2 (12 -> 24, 7x7: 49 slices) 1.86 / 1.14, zoo-k7pad's conv4 (20 -> 24, 7x7) 0.79 / 0.52,
-- ece408-2018sp's conv2 (6 -> 16, 5x5) 1.49 / 1.26, zoo-linear's conv2 (16 -> 40, 3x3) 0.87 /
-- 0.83; 3x3 layers of 32 channels (9 slices) level: 0.76 / 0.75, 1.20 / 1.20, 0.97 / 0.99.
function H.default_wr(l, given)
  if given and given.wr ~= nil then return given.wr end
  if H.default_sw(l, given) == 1 then return 1 end   -- (the sweep reads the resident weights)
  if l.M % 8 ~= 0 or H.default_tr(l, given) ~= 0 then return 0 end
  local p = { tr = 0, ib = 1, wr = 1, fp = 0, po = 0, occ = given and given.occ or 1,
    wgs = given and given.wgs or H.default_wgs(l), bm = given and given.bm or H.default_bm(l, given) }
  p.bk = given and given.bk or H.default_bk(l, given)
  p.rows = given and given.rows or H.default_rows(l, given)
  return H.check(l, p) == nil and 1 or 0
end

-- bk's default: base_bk, or under tr=1 half of it where the block (its other parameters as
-- given, else their defaults) holds one block an SM at base_bk and two at half (the weight ring
-- is TR_STAGES slices: half the slice, a quarter to a half less shared memory). On an H200 in
-- bf16 at 10,000 images (bench/probe-2026-11-29.log) zoo-vgg-same's conv2_2 took 2.17 ms at
-- bk=64 (116,224 bytes: one block an SM, 45 % of its stalls on the planes' loads before the
-- first product) and 1.84 at 32 (99,840: two); layers already holding two gained nothing.
function H.default_bk(l, given)
  local bk = base_bk(l)
  if bk < 32 or H.default_tr(l, given) ~= 1 then return bk end
  local p = { tr = 1, ib = H.default_ib(l, given), wgs = given and given.wgs or H.default_wgs(l),
    bm = given and given.bm or H.default_bm(l, given), fp = H.default_fp(l, given) }
  p.rows = given and given.rows or H.default_rows(l, given)
  local function two(b)
    p.bk = b
    local s = H.shape(l, p)
    return s.smem <= common.max_shared(l) and not common.check_occ(l, 2, s.threads, s.regs, s.smem, "")
  end
  if not two(bk) and two(bk // 2) then return bk // 2 end
  return bk
end

-- rows' default: the band that computes the fewest m64 tiles an image (bands x the tiles
-- its warpgroups compute), the taller band where two tie. The tallest band that fits is not
-- it where the bands do not divide the image: zoo-vgg-same's conv1_2 (32 rows over a padded
-- width of 34) in bands of 15 computes 3 x 8 tiles an image, in bands of 11 3 x 6.
function H.default_rows(l, given)
  local g = common.conv_geom(l)
  if H.default_sw(l, given) == 1 then return g.CH end   -- sw=1: whole images
  if (given and given.ib or H.default_ib(l, given)) > 1 then return g.CH end   -- several whole images
  local bm, wgs = H.default_bm(l, given), 2
  if H.default_tr(l, given) == 1 then
    -- tr=1 (for the map tile and warpgroups given, else their defaults): the tallest band,
    -- within wgmma's N and the shared memory, computing at most 5 % more pixel columns an
    -- image (bands x PG x NP) than the fewest; not the fewest alone, which with a wide kernel
    -- is often one-row bands whose K - 1 extra staged rows cost more than the columns saved
    -- (a 7x7 layer over 29 rows: 29 bands of one row, staging 7 rows each)
    -- (with a fused pool, fp=1, an even band or the whole image)
    bm, wgs = given and given.bm or bm, given and given.wgs or wgs
    local fp = H.default_fp(l, given)
    local fit = {}
    for r = 1, g.CH do
      local s = H.shape(l, { rows = r, wgs = wgs, bm = bm, bk = base_bk(l), tr = 1, fp = fp })
      if s.NP > TR_MAX_N or s.smem > common.max_shared(l) then break end
      if fp ~= 1 or r % 2 == 0 or r == g.CH then fit[r] = s.NB * s.PG * s.NP end
    end
    local fewest, best = math.huge, 1
    for _, cols in pairs(fit) do fewest = math.min(fewest, cols) end
    for r, cols in pairs(fit) do if cols <= 1.05 * fewest and r > best then best = r end end
    return best
  end
  local mt = math.max(1, math.min(MAX_TILES, 128 // (bm // 2)))
  local best, best_tiles = 1, math.huge
  for r = 1, g.CH do
    local s = H.shape(l, { rows = r, wgs = wgs, bm = bm, bk = base_bk(l) })
    if s.TT > wgs * mt or s.smem > common.max_shared(l) then break end
    local tiles = s.NB * s.MT * wgs
    if s.MT * (wgs - 1) < s.TT and tiles <= best_tiles then best, best_tiles = r, tiles end
  end
  return best
end

function H.check(l, p)
  local why0, blame0 = common.check_wgmma(l, p, "conv2d_planes", true, true)
  if why0 then return why0, blame0 end
  local s = H.shape(l, p)
  local g = s.g
  if s.T32 and (p.sw ~= 1 or p.tr == 1 or p.wr == 1 or p.po == 1) then
    return "precision tf32: planes' channels-innermost kernel is the row sweep alone (sw=1; tr, wr, po 0)", "sw"
  end
  if g.S ~= 1 then
    return string.format("planes' channels-innermost kernel reads a tap as the staged input shifted: stride 1 only (the layer's is %d)",
      g.S), nil
  end
  if p.ib ~= 1 and p.tr ~= 1 and p.sw ~= 1 then
    return string.format("ib=%d: 16-bit planes with tr=0 holds one image's band a block", p.ib), "ib"
  end
  if p.ib > 1 and p.rows < g.CH then
    return string.format("ib=%d: several images a block need whole images (rows=%d, not %d)", p.ib, g.CH, p.rows), "ib"
  end
  if p.bk % s.KC ~= 0 or s.CP % p.bk ~= 0 then
    return string.format("bk=%d: a slice is a multiple of %d channels (a k-step) dividing the %d (C rounded up to %d)",
      p.bk, s.KC, s.CP, s.KC), "bk"
  end
  if p.fp == 1 and p.tr ~= 1 then return "fp=1: 16-bit planes fuses a pool with tr=1 only (tr=0: a pool kernel after)", "fp" end
  if p.po == 1 and p.tr ~= 1 then return "po=1: 16-bit planes overlaps the staging with tr=1 only", "po" end
  if p.mn == 1 then
    if p.tr ~= 1 or p.po == 1 then return "mn=1: the planes pixels innermost are tr=1's B, staged whole (po=0)", "mn" end
    if l.K ~= 1 or g.pt + g.pb + g.pl + g.pr > 0 then
      return string.format("mn=1: pixels innermost take no tap's shift: 1x1 layers without padding (K=%d)", l.K), "mn"
    end
  end
  if p.wr == 1 and p.tr == 1 then return "wr=1: 16-bit planes holds every slice's weights with tr=0 only", "wr" end
  if p.sw == 1 then
    if p.tr == 1 or (p.wr ~= 1 and not s.T32) then return "sw=1: the row sweep is a tr=0 kernel reading every tap's weights (wr=1)", "sw" end
    if p.fp == 1 or p.po == 1 then return "sw=1: no fused pool (fp) or staged slices (po)", "sw" end
    if p.rows ~= g.CH then
      return string.format("sw=1: a warpgroup's rows are whole images' (rows=%d, not %d)", p.rows, g.CH), "rows"
    end
    if p.ib * g.CW > 64 then
      return string.format("sw=1: ib=%d images of %d output columns are more than a warpgroup's 64", p.ib, g.CW), "ib"
    end
    if s.regs > REG_BUDGET then
      return string.format("sw=1: %d accumulator slots of %d and a row's fragments need about %d registers a " ..
        "thread; at most %d", s.S, s.NR, s.regs, REG_BUDGET), "bm"
    end
    if s.WGMMAS > SW_MAX_WGMMA then
      return string.format("sw=1: the sweep unrolled holds %d products (%d + %d rows x %d taps x %d k%d steps); at " ..
        "most %d compile in a few seconds", s.WGMMAS, s.S, s.RT, s.KK, s.KS, s.KC, SW_MAX_WGMMA), "sw"
    end
  end
  if p.wr == 1 and l.M % 8 ~= 0 then
    return string.format("wr=1: weights are copied 8 maps (16 bytes) at a time: M=%d must be a multiple of 8", l.M),
      "wr"
  end
  if p.po == 1 and s.CS == 1 then
    return string.format("po=1: bk=%d takes all %d channels in one slice: nothing is staged while a slice multiplies",
      p.bk, s.CP), "po"
  end
  if p.fp == 1 and not common.fused_pool2(g) then return "fp=1: the layer has no 2x2 pool of stride 2 to fuse", "fp" end
  if p.fp == 1 and p.rows < g.CH and p.rows % 2 == 1 then
    return string.format("fp=1: bands of %d rows would split pooling windows (an even number, or all %d)", p.rows, g.CH),
      "rows"
  end
  if s.NPIX >= 16384 and not s.SW then
    return string.format("%d staged pixels: a descriptor's leading offset holds fewer than 16384", s.NPIX), "rows"
  end
  if s.tr then
    if p.bm % 64 ~= 0 then
      return string.format("tr=1: maps are wgmma's M, 64 a warpgroup: bm=%d must be a multiple of 64", p.bm), "bm"
    end
    if p.wgs % s.MR ~= 0 then
      return string.format("tr=1: bm=%d maps take %d warpgroups of 64; wgs=%d is not a multiple", p.bm, s.MR, p.wgs),
        "wgs"
    end
    if l.M % 8 ~= 0 then
      return string.format("tr=1: weights are copied 8 maps (16 bytes) at a time: M=%d must be a multiple of 8", l.M),
        "tr"
    end
    if s.NP > TR_MAX_N then
      return string.format("rows=%d: %d pixels over the padded width are %d a warpgroup over %d; wgmma's N is at most %d",
        p.rows, s.BPX, s.NP, s.PG, TR_MAX_N), "rows"
    end
    if s.regs > REG_BUDGET then
      return string.format("%d pixels a warpgroup need about %d registers a thread; at most %d", s.NP, s.regs,
        REG_BUDGET), "rows"
    end
  elseif not s.SW then
    if s.MT > MAX_TILES then
      return string.format("rows=%d: %d pixels over the padded width are %d m64 tiles, %d a warpgroup over %d; at most %d",
        p.rows, s.BPX, s.TT, s.MT, p.wgs, MAX_TILES), "rows"
    end
    if s.MT * (p.wgs - 1) >= s.TT then
      return string.format("wgs=%d: %d m64 tiles leave a warpgroup without one", p.wgs, s.TT), "wgs"
    end
    if s.regs > REG_BUDGET then
      return string.format("%d tiles of %d accumulators need about %d registers a thread; at most %d", s.MT, s.NR, s.regs,
        REG_BUDGET), "bm"
    end
  end
  local why2, blame2 = common.check_occ(l, p.occ, s.threads, s.regs, s.smem, "the accumulators")
  if why2 then return why2, blame2 end
  if s.smem > common.max_shared(l) then
    if s.WR and s.ES * s.PB > common.max_shared(l) // 2 then
      return string.format("wr=1: the %d taps' weights (%d channels x %d maps) need %d bytes of shared memory beside " ..
        "the planes' %d; at most %d fit", s.KK, s.CP, p.bm, s.ES * s.PB, 16 * s.PU, common.max_shared(l)), "wr"
    end
    return string.format("rows=%d: %d staged pixels of %d channels and %s weights need %d bytes of shared " ..
      "memory; at most %d fit", p.rows, s.NPIX, s.CP, s.WR and "every tap's" or "two taps'", s.smem,
      common.max_shared(l)), "rows"
  end
  return nil
end

-- The cost model: the tensor cores' k16 products (16 FP32 FMAs' worth a clock each lane:
-- the dense 16-bit rate) over the block's whole tiles and padded channels, beside the
-- issue of the planes' and weights' copies, which run before the products and between taps.
function H.cost(l, p)
  local s = H.shape(l, p)
  local blocks = common.ceil_div(common.cost.images(l), s.IB) * s.NB * common.ceil_div(l.M, p.bm)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local cols = s.tr and s.NP * s.PG or 64 * s.MT * p.wgs
  if s.SW then
    -- sw=1: a block is ib*wgs whole images; a warpgroup's 64 rows times the columns swept
    blocks = common.ceil_div(common.cost.images(l), s.IB) * common.ceil_div(l.M, p.bm)
    seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
    if conc == 0 then return math.huge end
    cols = 64 * p.wgs * s.PH
  end
  local tensor = seq * cols * p.bm * s.CP * s.KK / ((s.T32 and 8 or 16) * common.cost.FMA_PER_CLOCK)
  -- (tr=1's weights go by cp.async, a copy an instruction where tr=0 loads and packs eight;
  -- po=1 stages the first channel slice's planes before the products, the others beside them)
  local copy = seq * ((s.PO and s.SUN or s.PU) * 10 + s.NS * s.WU * ((s.tr or s.WR) and 2 or 10)) / s.threads * (s.threads // 32) / 4
  return (tensor + copy) * common.cost.spills(squeezed)
end

-- Both kernels' start: the head, the block's image, band and map tile, and the band's
-- planes staged (unit u = 8 channels of one pixel, one 16-byte store; the kernel's
-- stores still to be fenced for wgmma). tr=1 issues its first weight copies first.

local prologue = engine.compile([=[
{{head}}
{
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
    {{stage_t}}* const sm = reinterpret_cast<{{stage_t}}*>(smem4);
    const int tid = threadIdx.x;
    const int lane = tid & 31, wq = (tid >> 5) & 3, wg = tid >> 7;   // warp in its warpgroup, warpgroup
    const int g = lane >> 2, t4 = lane & 3;
% if IB > 1 then
    const int img = blockIdx.x * {{IB}}, y0 = 0;   // images img .. img + {{IB - 1}}, whole
% elseif NB == 1 then
    const int img = blockIdx.x, y0 = 0;   // whole images
% else
    const int img = blockIdx.x / {{NB}}, y0 = (blockIdx.x - img * {{NB}}) * {{RB}};   // the band's first output row
% end
% if MB == 1 then
    const int m0 = 0;
% else
    const int m0 = blockIdx.y * {{BM}};
% end
    if (img >= n) return;
% if not bias then
    (void)b_arg;
% end

{{put8}}
% if tr or WR then
{{issue_first}}
% end
% if MN then
    const {{in_t}}* const xb = in + (long long)img * {{C * H * W}};
{{stage_mn}}
% else
    // the planes: unit u = (channel group u / {{NPIX}}, pixel u % {{NPIX}}), its {{EU}} channels, loaded into v;
    // it is stored at sm + {{PB}} + {{EU}}*u
    const {{in_t}}* const xb = in + (long long)img * {{C * H * W}};
    auto load_unit = [&](int u, {{stage_t}} (&v)[{{EU}}]) {
        const int cg = u / {{NPIX}}, p = u - cg * {{NPIX}};
% if IB > 1 then
        // (pixel p: image p / {{PH * PW}} of the block's {{IB}}, its padded input's row and column)
        const int im = p / {{PH * PW}}, q = p - im * {{PH * PW}};
        const int py = q / {{PW}}, iy = py - {{pt}}, ix = q - py * {{PW}} - {{pl}};
        const bool live = p < {{REAL}} && img + im < n && iy >= 0 && iy < {{H}} && ix >= 0 && ix < {{W}};
        const {{in_t}}* const xi = xb + (long long)(live ? im : 0) * {{C * H * W}};
% else
        const int py = p / {{PW}}, iy = y0 + py - {{pt}}, ix = p - py * {{PW}} - {{pl}};
        const bool live = p < {{REAL}} && iy >= 0 && iy < {{H}} && ix >= 0 && ix < {{W}};
        const {{in_t}}* const xi = xb;
% end
#pragma unroll
        for (int e = 0; e < {{EU}}; e++) {
            const int c = {{EU}} * cg + e;
% if CP ~= C then
            v[e] = live && c < {{C}} ? __ldg(xi + c * {{H * W}} + iy * {{W}} + ix) : {{stage_t}}{0};
% else
            v[e] = live ? __ldg(xi + c * {{H * W}} + iy * {{W}} + ix) : {{stage_t}}{0};
% end
        }
    };
% if PO then
    // (po=1: the first channel slice's {{SUN}} units here, each later one while the slice before it multiplies)
% end
#pragma unroll 4
    for (int u = tid; u < {{PO and SUN or PU}}; u += {{NT}}) {
        {{stage_t}} v[{{EU}}];
        load_unit(u, v);
        put(sm + {{PB}} + u * {{EU}}, v);
    }
% end
]=], "conv2d_planes_half_prologue")

-- mn=1's staging (the header's mn paragraph): unit u = (channel u / PGN, pixel group u % PGN), 8
-- pixels of one channel, at sm + PB + ((channel group * PGN + pixel group) * 8 + channel % 8) * 8
-- (one 16-byte cp.async, FAST16; two 8-byte ones, FAST8; else eight 2-byte loads and a store);
-- the copies committed and awaited here (the weights' ring waits by its own group count).
local stage_mn_src = engine.compile([=[
    // the planes pixels innermost (mn=1): unit u = (channel u / {{PGN}}, pixel group u % {{PGN}}), 8 pixels of one
    // channel, stored at sm + {{PB}} + ((channel group * {{PGN}} + pixel group) * 8 + channel % 8) * 8
    // pixel p of the block: {{IB > 1 and ("image p / " .. H * W .. " of its " .. IB .. ", pixel p % " .. H * W) or "the band's"}}; live below {{REAL}}
#pragma unroll 4
    for (int u = tid; u < {{CP * PGN}}; u += {{NT}}) {
        const int c = u / {{PGN}}, q = u - c * {{PGN}};
        const int d = {{PB}} + (((c >> 3) * {{PGN}} + q) * 8 + (c & 7)) * 8;
% if FAST16 then
        const int p = 8 * q;
{{mn_src("        ")}}
{{cp16}}
% elseif FAST8 then
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int p = 8 * q + 4 * hh;
{{mn_src("            ")}}
{{cp8}}
        }
% else
        {{stage_t}} v[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const int p = 8 * q + e;
{{mn_src("            ")}}
            v[e] = ok ? __ldg(src) : {{stage_t}}{0};
        }
        put(sm + d, v);
% end
    }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
]=], "conv2d_planes_half_stage_mn")

local source = engine.compile([=[
// GEMM view: the band's {{BPX}} pixels ({{RB}} output row{{RB > 1 and "s" or ""}} of {{CH}} over the padded width {{PW}},
// {{NB}} band{{NB > 1 and "s" or ""}} an image) in {{TT}} m64 tile{{TT > 1 and "s" or ""}} ({{WGS}} warpgroup{{WGS > 1 and "s" or ""}} of {{MT}}) x {{BM}} maps, reduced tap by tap
// over {{CP}} channels ({{CP - C}} of them zeros) in {{NS}} slices of {{BK}} (one tap's), k16 steps: wgmma.mma_async
// m64n{{BM}}k16 {{wt}}, both operands by descriptor from shared memory. Shared memory ({{smem}} B), in elements:
% if WR then
// [0, {{PB}}) every slice's weights (wr=1), each [{{BK // 8}}][{{MG}}][8 channels][8 maps] (B transposed); from {{PB}}:
// the planes, [{{CG}}][{{NPIX}} pixels][8 channels]
% else
// [0, {{PB}}) two slices' weights, each [{{BK // 8}}][{{BM // 8}}][8 maps][8 channels]; from {{PB}}: the planes,
// [{{CG}}][{{NPIX}} pixels][8 channels]
% end
// ({{REAL}} pixels of {{ROWS_IN}} input rows x {{PW}} with the padding as zeros, then zeros).
{{prologue}}
% if not WR then
    // a slice's weights: unit u = tid + {{NT}}*i is (channel group u / {{BM}}, map u % {{BM}}), 8 channels
    {{stage_t}} wr[{{WI}}][8];
    auto fetch_w = [&](int s) {
        const int tap = s / {{CS}}, c0 = (s - tap * {{CS}}) * {{BK}};
        const {{w_t}}* const wp = w_arg + tap * {{C * M}} + c0 * {{M}} + m0;
#pragma unroll
        for (int i = 0; i < {{WI}}; i++) {
            const int u = tid + i * {{NT}};
            const int cg = u / {{BM}}, m = u - cg * {{BM}};
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const int c = 8 * cg + e;
                const bool ok = {{wok}};
                wr[i][e] = ok ? __ldg(wp + c * {{M}} + m) : {{stage_t}}{0};
            }
        }
    };
    auto stash_w = [&](int b) {
#pragma unroll
        for (int i = 0; i < {{WI}}; i++) {
            const int u = tid + i * {{NT}};
% if WU % NT ~= 0 then
            if (u >= {{WU}}) break;
% end
            const int cg = u / {{BM}}, m = u - cg * {{BM}};
            put(sm + b * {{WBUF}} + (cg * {{BM // 8}} + m / 8) * 64 + (m % 8) * 8, wr[i]);
        }
    };
% end

    // cf: the sum. Tile t of this warpgroup, register r: pixel 64*({{MT}}*wg + t) + 16*wq + lane/4 +
    // 8*((r >> 1) & 1) of the band, map 8*(r >> 2) + 2*(lane & 3) + (r & 1)
    {{acc_t}} cf[{{MT}}][{{NR}}];
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) cf[t][r] = 0.0f;
{{wgmma_fn}}    // cf += slice s's products, its weights in buffer b
    auto multiply = [&](int s, int b) {
        const int tap = s / {{CS}}, cs = s - tap * {{CS}};
        const int ky = tap / {{K}}, kx = tap - ky * {{K}};
        const int shift = ky * {{PW}} + kx;   // the tap's pixels: the band's, moved on this far
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
% if not WR then
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
% end
        const unsigned long long da = d0 + {{adesc}} + cs * {{BK // 8 * NPIX}} + shift + {{MT}} * wg * 64;
        const unsigned long long db = d0 + {{bdesc}} + b * {{WBUF // 8}};
#pragma unroll
        for (int j = 0; j < {{BK // 16}}; j++)
#pragma unroll
            for (int t = 0; t < {{MT}}; t++) wgmma(cf[t], da + j * {{2 * NPIX}} + t * 64, db + j * {{2 * BM}});
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
        // without wgmma: each accumulator plus the tap's dot products of the staged values, in FP32
        const {{stage_t}}* const a = sm + {{PB}};
        const {{stage_t}}* const w = sm + b * {{WBUF}};
#pragma unroll 1
        for (int t = 0; t < {{MT}}; t++)
#pragma unroll 1
            for (int r = 0; r < {{NR}}; r++) {
                const int p = 64 * ({{MT}} * wg + t) + 16 * wq + g + 8 * ((r >> 1) & 1) + shift;
                const int m = 8 * (r >> 2) + 2 * t4 + (r & 1);
                {{acc_t}} v = 0.0f;
                for (int c = 0; c < {{BK}}; c++)
                    v = fmaf({{to_acc("a[((cs * " .. BK // 8 .. " + (c >> 3)) * " .. NPIX .. " + p) * 8 + (c & 7)]")}},
% if WR then
                             {{w_to_acc("w[((c >> 3) * " .. MG .. " + (m >> 3)) * 64 + (c & 7) * 8 + (m & 7)]")}}, v);
% else
                             {{w_to_acc("w[((c >> 3) * " .. BM // 8 .. " + (m >> 3)) * 64 + (m & 7) * 8 + (c & 7)]")}}, v);
% end
                cf[t][r] += v;
            }
#endif
    };
    auto wait = [&]() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
    };

    // the tensor cores read shared memory through the async proxy: the planes' and the weights'
    // ordinary stores fenced before the barrier that publishes them
    auto fence = [&]() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
    };

% if WR then
    // wr=1: every slice's weights copied (this thread's copies landed, then everyone's by the
    // barrier), and the products of all {{NS}} slices issued back to back into one group
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
    fence();
    __syncthreads();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
#pragma unroll 1
    for (int s = 0; s < {{NS}}; s++) multiply(s, s);
    wait();
% else
    fetch_w(0);
    stash_w(0);
    fence();
    __syncthreads();
#pragma unroll 1
    for (int s = 0; s < {{NS}}; s++) {
        const int b = s & 1;
        if (s + 1 < {{NS}}) fetch_w(s + 1);
        multiply(s, b);
        if (s + 1 < {{NS}}) {
            stash_w(b ^ 1);   // the other buffer: last read by the previous slice, waited for
            fence();
        }
        wait();
        __syncthreads();
    }
% end

    // epilogue: {{bias and "bias, " or ""}}{{actname}}{{res and ", the add" or ""}}, stored from the accumulators where the pixel is an output
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int p = 64 * ({{MT}} * wg + t) + 16 * wq + g + 8 * h;
            const int py = p / {{PW}}, px = p - py * {{PW}};
            if (p >= {{BPX}} || px >= {{CW}} || y0 + py >= {{CH}}) continue;
            {{out_t}}* const o = out + (long long)img * {{OS}} + (y0 + py) * {{CW}} + px;
% if res then
            const long long ro = (long long)img * {{M * COLS}} + (y0 + py) * {{CW}} + px;   // the add's other operands
% end
{{map_stores}}
        }
}
]=], "conv2d_planes_half")

-- tr=1's kernel (the header's last paragraph).
local source_tr = engine.compile([=[
// GEMM view, maps as wgmma's M: {{BM}} maps ({{MR}} warpgroup{{MR > 1 and "s" or ""}} of 64) x the band's {{BPX}} pixels ({{RB}} output row{{RB > 1 and "s" or ""}} of {{CH}}
// over the padded width {{PW}}, {{NB}} band{{NB > 1 and "s" or ""}} an image; {{PG}} warpgroup{{PG > 1 and "s" or ""}} of {{NP}} pixels), reduced tap by tap over {{CP}} channels
// ({{CP - C}} of them zeros) in {{NS}} slices of {{BK}}, k16 steps: wgmma.mma_async m64n{{NP}}k16 {{wt}}, the weights (A,
// transposed: maps innermost) and the planes (B) by descriptor. Shared memory ({{smem}} B), in elements: [0, {{PB}})
// a ring of {{ST}} slices' weights, each [{{BK // 8}}][{{MG}}][8 channels][8 maps]; from {{PB}}: the planes,
// [{{CG}}][{{NPIX}} pixels][8 channels] ({{REAL}} pixels of {{ROWS_IN}} input rows x {{PW}} with the padding as zeros, then zeros).
{{prologue}}
    // cf: the sum. Register r: map {{MR > 1 and "64*mr + " or ""}}16*wq + lane/4 + 8*((r >> 1) & 1) of the tile, pixel
    // {{PG > 1 and (NP .. "*pg + ") or ""}}8*(r >> 2) + 2*(lane & 3) + (r & 1) of the band
% if MR > 1 then
    const int mr = wg % {{MR}}, pg = wg / {{MR}};   // this warpgroup's maps (of 64) and pixels (of {{NP}})
% else
    const int mr = 0, pg = wg;
% end
    (void)mr, (void)pg;
    {{acc_t}} cf[{{NR}}];
#pragma unroll
    for (int r = 0; r < {{NR}}; r++) cf[r] = 0.0f;
% if PO then
    {{stage_t}} pv[{{SU}}][8];   // po=1: the next channel slice's planes, this thread's units
% end
{{wgmma_fn}}    // cf += slice s's products, its weights in ring buffer b
    auto multiply = [&](int s, int b) {
        {{tapcs}}
        const int ky = tap / {{K}}, kx = tap - ky * {{K}};
        const int shift = ky * {{PW}} + kx;   // the tap's pixels: the band's, moved on this far
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        const unsigned long long da = d0 + {{adesc}} + b * {{WBUF // 8}} + mr * 64;
        const unsigned long long db = d0 + {{bdesc}} + cs * {{BK // 8 * NPIX}} + shift + pg * {{NP}};
#pragma unroll
        for (int j = 0; j < {{BK // 16}}; j++) wgmma(cf, da + j * {{2 * BM}}, db + j * {{2 * NPIX}});
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
        // without wgmma: each accumulator plus the tap's dot products of the staged values, in FP32
        const {{stage_t}}* const a = sm + {{PB}};
        const {{stage_t}}* const w = sm + b * {{WBUF}};
#pragma unroll 1
        for (int r = 0; r < {{NR}}; r++) {
            const int m = 64 * mr + 16 * wq + g + 8 * ((r >> 1) & 1);
            const int p = {{NP}} * pg + 8 * (r >> 2) + 2 * t4 + (r & 1) + shift;
            {{acc_t}} v = 0.0f;
            for (int c = 0; c < {{BK}}; c++)
                v = fmaf({{w_to_acc("w[((c >> 3) * " .. MG .. " + (m >> 3)) * 64 + (c & 7) * 8 + (m & 7)]")}},
                         {{to_acc(plane_at)}}, v);
            cf[r] += v;
        }
#endif
    };

    // the tensor cores read shared memory through the async proxy: the copies' and the
    // planes' writes fenced before the barrier that publishes them
#pragma unroll 1
    for (int s = 0; s < {{NS}}; s++) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("cp.async.wait_group {{ST - 3}};" ::: "memory");   // slice s's copies (this thread's) landed
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
        // after it every thread's copies of slice s are in, and every warpgroup is past its
        // wait for slice s - 2's products: that slice's buffer takes slice s + {{ST - 2}}
        __syncthreads();
        if (s + {{ST - 2}} < {{NS}}) issue_w(s + {{ST - 2}}, (s + {{ST - 2}}) % {{ST}});
        commit_w();
        multiply(s, s % {{ST}});
% if PO then
        {
            // po=1: the next channel slice's planes loaded at this slice's first tap, stored (and fenced
            // for the tensor cores) after its last tap's products were issued: the barrier above
            // publishes them before the next slice's first product
            {{tapcs}}
            if (cs + 1 < {{CS}}) {
                if (tap == 0) {
#pragma unroll
                    for (int i = 0; i < {{SU}}; i++)
                        if (tid + i * {{NT}} < {{SUN}}) load_unit((cs + 1) * {{SUN}} + tid + i * {{NT}}, pv[i]);
                }
                if (tap == {{KK - 1}}) {
#pragma unroll
                    for (int i = 0; i < {{SU}}; i++)
                        if (tid + i * {{NT}} < {{SUN}}) put(sm + {{PB}} + ((cs + 1) * {{SUN}} + tid + i * {{NT}}) * 8, pv[i]);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
                }
            }
        }
% end
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");   // slice s - 1's products landed
#endif
    }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif

    // epilogue: {{bias and "bias, " or ""}}{{actname}}, the block's tile through shared memory, es[map][pixel]
    // ({{BM}} x {{EP}}: the planes and weights are read by now), then stored a row of {{CW}} outputs at a
    // time, consecutive threads consecutive outputs (stored from the accumulators, a warp's store
    // reached eight maps of four pixels two apart: eight sectors for 64 bytes, which bound it)
    __syncthreads();
% if pooled then
    // (a fused 2x2 {{pool_kind}} pool: the sums{{bias and " and bias" or ""}} staged as they are, in {{acc_t}}; the {{actname}} at the pool)
    {{acc_t}}* const es = reinterpret_cast<{{acc_t}}*>(smem4);
% else
    {{out_t}}* const es = reinterpret_cast<{{out_t}}*>(smem4);
% end
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int ml = 64 * mr + 16 * wq + g + 8 * h;
% if bias then
        const {{acc_t}} bm = {{w_to_acc("__ldg(b_arg + (m0 + ml < " .. M .. " ? m0 + ml : 0))")}};
% end
#pragma unroll
        for (int j = 0; j < {{NP // 8}}; j++)
#pragma unroll
            for (int e = 0; e < 2; e++)
% if pooled then
                es[ml * {{EP}} + {{NP}} * pg + 8 * j + 2 * t4 + e] = cf[4 * j + 2 * h + e]{{bias and " + bm" or ""}};
% else
                es[ml * {{EP}} + {{NP}} * pg + 8 * j + 2 * t4 + e] = {{from_acc(act("cf[4 * j + 2 * h + e]" .. (bias and " + bm" or "")))}};
% end
    }
    __syncthreads();
% if pooled then
    // pooled outputs: {{PR}} rows of {{OW}} a band, consecutive threads consecutive outputs
    {{out_t}}* const ob = out + (long long)img * {{OS}} + m0 * {{OH * OW}} + (y0 / 2) * {{OW}};
#pragma unroll 4
    for (int i = tid; i < {{BM * IB * PR * OW}}; i += {{NT}}) {
{{unpack(PR, OW, "pooled row and column")}}
%   if IB > 1 then
        const {{acc_t}}* const e = es + m * {{EP}} + (im * {{PH}} + 2 * py) * {{PW}} + 2 * px;
%   else
%     if NB * PR > OH then
        if (y0 / 2 + py >= {{OH}}) continue;   // the last band's rows past the pooled output
%     end
        const {{acc_t}}* const e = es + m * {{EP}} + 2 * py * {{PW}} + 2 * px;
%   end
%   if pool_kind == "avg" then
        const {{acc_t}} v4 = ({{act("e[0]")}} + {{act("e[1]")}} + {{act("e[" .. PW .. "]")}} + {{act("e[" .. PW + 1 .. "]")}}) * 0.25f;
        ob[{{IB > 1 and ("im * " .. OS .. " + ") or ""}}m * {{OH * OW}} + py * {{OW}} + px] = {{from_acc("v4")}};
%   else
        const {{acc_t}} v4 = fmaxf(fmaxf(e[0], e[1]), fmaxf(e[{{PW}}], e[{{PW + 1}}]));
        ob[{{IB > 1 and ("im * " .. OS .. " + ") or ""}}m * {{OH * OW}} + py * {{OW}} + px] = {{from_acc(act("v4"))}};
%   end
    }
% else
    {{out_t}}* const ob = out + (long long)img * {{OS}} + m0 * {{COLS}} + y0 * {{CW}};
% if EV > 1 then
    // {{EV}} consecutive outputs a thread, one {{EV}}-wide store (a row of {{CW}} is whole vectors)
#pragma unroll 4
    for (int i = tid; i < {{BM * IB * RB * CW // EV}}; i += {{NT}}) {
{{unpack(RB, CW // EV, "row and vector of the row")}}
%   if IB == 1 and NB * RB > CH then
        if (y0 + py >= {{CH}}) continue;   // the last band's rows past the output
%   end
        const {{out_t}}* const e = es + m * {{EP}} + {{IB > 1 and ("(im * " .. PH .. " + py)") or "py"}} * {{PW}} + {{EV}} * px;
        {{vec_t(out_t, EV)}} y;
%   for k = 1, EV do
        y.{{({ "x", "y", "z", "w" })[k]}} = e[{{k - 1}}];
%   end
        *reinterpret_cast<{{vec_t(out_t, EV)}}*>(ob + {{IB > 1 and ("im * " .. OS .. " + ") or ""}}m * {{COLS}} + py * {{CW}} + {{EV}} * px) = y;
    }
% else
#pragma unroll 4
    for (int i = tid; i < {{BM * IB * RB * CW}}; i += {{NT}}) {
{{unpack(RB, CW, "row and column")}}
% if IB > 1 then
        ob[im * {{OS}} + m * {{COLS}} + py * {{CW}} + px] = es[m * {{EP}} + (im * {{PH}} + py) * {{PW}} + px];
% else
% if NB * RB > CH then
        if (y0 + py >= {{CH}}) continue;   // the last band's rows past the output
% end
        ob[m * {{COLS}} + py * {{CW}} + px] = es[m * {{EP}} + py * {{PW}} + px];
% end
    }
% end
% end
}
]=], "conv2d_planes_half_tr")

-- sw=1's kernel (the header's sw paragraph).
local source_sw = engine.compile([=[
// GEMM view, swept by rows: a warpgroup's m64 rows are the output columns of its {{IBW}} image{{IBW > 1 and "s" or ""}} ({{IBW * CW}} of 64
// used), wgmma's N the {{BM}} maps; the input rows are swept one at a time ({{PH}} of them, {{PHF}} in groups of {{S}} and {{RT}} apart): at
// row yi each of the {{K}} kernel columns' A fragments (the staged columns x + kx of row yi, {{KS}} k{{KC}} step{{KS > 1 and "s" or ""}}) is loaded
// once by ldmatrix and multiplied by the {{K}} taps (ky, kx), adding to output row yi - ky in accumulator slot
// (yi - ky) % {{S}}: m64n{{BM}}k{{KC}} {{wt}}, A from registers, B (every tap's weights, resident{{T32 and ", K-major" or ", transposed"}}) by descriptor.
% if T32 then
// Precision tf32: both operands rounded to TF32 (cvt.rna) when staged. One fragment buffer: a row's loaded once its
// products before are in.
// Shared memory ({{smem}} B), in elements: [0, {{PB}}) the weights, [slice][{{BK // 4}}][{{MG}}][8 maps][4 channels];
// from {{PB}}: the planes, [{{CG}}][{{NPIX}} pixels][4 channels] ({{IB}} whole padded image{{IB > 1 and "s" or ""}} of {{PH}}x{{PW}}).
% else
// Shared memory ({{smem}} B), in elements: [0, {{PB}}) the weights, [slice][{{BK // 8}}][{{MG}}][8 channels][8 maps];
// from {{PB}}: the planes, [{{CG}}][{{NPIX}} pixels][8 channels] ({{IB}} whole padded image{{IB > 1 and "s" or ""}} of {{PH}}x{{PW}}).
% end
{{prologue}}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
    __syncthreads();
    (void)y0;

    // this thread's two output columns (h = 0, 1: row 16*wq + g + 8*h of the warpgroup's 64) as an
    // image of the block and a column of it: their outputs' offset, or -1 past the columns or the batch
    long long ocol[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = 16 * wq + g + 8 * h, i = r / {{CW}}, x = r - i * {{CW}};
        const int im = {{IBW}} * wg + i;
        ocol[h] = (r < {{IBW * CW}} && img + im < n) ? (long long)(img + im) * {{OS}} + x : -1;
    }
    // output row o (0 <= o < {{CH}}) from slot d: {{bias and "bias, " or ""}}{{actname}}, stored where the column is live
    // (lanes 4 apart: consecutive columns of a map)
    auto store_row = [&](const {{acc_t}} (&d)[{{NR}}], int o) {
        if (o < 0 || o >= {{CH}}) return;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (ocol[h] < 0) continue;
            {{out_t}}* const ob = out + ocol[h] + o * {{CW}};
#pragma unroll
            for (int j = 0; j < {{NR // 4}}; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int m = m0 + 8 * j + 2 * t4 + e;
% if mguard then
                    if (m >= {{M}}) continue;
% end
                    ob[m * {{COLS}}] = {{from_acc(act("d[4 * j + 2 * h + e]" .. b))}};
                }
        }
    };

    {{acc_t}} acc[{{S}}][{{NR}}];
#pragma unroll
    for (int u = 0; u < {{S}}; u++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) acc[u][r] = 0.0f;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // ldmatrix's row for this lane (matrices: rows 0-7 and 8-15 of the warp's 16, the first and the
    // second 16 bytes of a k-step's channels), as a shared address at input row 0, kernel column 0
    const int lr = 16 * wq + (lane & 7) + 8 * ((lane >> 3) & 1);
    const int lrc = lr < {{IBW * CW}} ? lr : 0;   // (rows past the images: any staged pixel, never stored)
    const int li = lrc / {{CW}}, lx = lrc - li * {{CW}};
    const unsigned abase = (unsigned)__cvta_generic_to_shared(sm + {{PB}}) +
        16u * (unsigned)(({{IBW}} * wg + li) * {{PH * PW}} + lx + ((lane >> 4) & 1) * {{NPIX}});
    const unsigned long long d0 = ((unsigned)__cvta_generic_to_shared(sm) >> 4);
    auto wgmma_rs = []({{acc_t}} (&d)[{{NR}}], const unsigned (&a)[4], unsigned long long db, int scale) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %{{NR + 5}}, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n{{BM}}{{kshape}} {{dregs}}, {%{{NR}}, %{{NR + 1}}, %{{NR + 2}}, %{{NR + 3}}}, %{{NR + 4}}, p, 1, 1{{T32 and "" or ", 1"}};\n}\n"
            : {{douts}}
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale));
    };
% if AB == 2 then
    unsigned a[2][{{K}}][{{KS}}][4];   // two rows' fragments: the next one loading while this one's products run
% else
    unsigned a[1][{{K}}][{{KS}}][4];   // a row's fragments: the next row's loaded once this one's products are in
% end
    // input row yi's fragments into f: kernel column kx's pixels x + kx, k-step j (past the padded height: its last row)
    auto load_a = [&](unsigned (&f)[{{K}}][{{KS}}][4], int yi) {
        const unsigned ar = abase + 16u * (unsigned)((yi < {{PH}} ? yi : {{PH - 1}}) * {{PW}});
#pragma unroll
        for (int kx = 0; kx < {{K}}; kx++)
#pragma unroll
            for (int j = 0; j < {{KS}}; j++)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                    : "=r"(f[kx][j][0]), "=r"(f[kx][j][1]), "=r"(f[kx][j][2]), "=r"(f[kx][j][3])
                    : "r"(ar + 16u * (unsigned)(kx + 2 * j * {{NPIX}})));
    };
    load_a(a[0], 0);
% if PHF > 0 then
#pragma unroll 1
    for (int rb = 0; rb < {{PHF}}; rb += {{S}}) {
#pragma unroll
        for (int u = 0; u < {{S}}; u++) {
{{row_body}}        }
    }
% end
% if RT > 0 then
    {   // the last {{RT}} row{{RT > 1 and "s" or ""}}, apart (the slots' and buffers' numbering goes on: {{PHF}} is a multiple of {{S}})
        const int rb = {{PHF}};
#pragma unroll
        for (int u = 0; u < {{RT}}; u++) {
{{row_body}}        }
    }
% end
#else
    // without wgmma: each output row's sums by FMAs from the staged planes and weights, in FP32
    const {{stage_t}}* const pl = sm + {{PB}};
#pragma unroll 1
    for (int o = 0; o < {{CH}}; o++) {
#pragma unroll 1
        for (int r = 0; r < {{NR}}; r++) {
            const int row = 16 * wq + g + 8 * ((r >> 1) & 1), mm = 8 * (r >> 2) + 2 * t4 + (r & 1);
            const int rc = row < {{IBW * CW}} ? row : 0, i = rc / {{CW}}, x = rc - i * {{CW}};
            {{acc_t}} v = 0.0f;
            for (int ky = 0; ky < {{K}}; ky++)
                for (int kx = 0; kx < {{K}}; kx++)
                    for (int c = 0; c < {{CP}}; c++) {
                        const int px = (({{IBW}} * wg + i) * {{PH}} + o + ky) * {{PW}} + x + kx;
                        const int s = (ky * {{K}} + kx) * {{CS}} + c / {{BK}}, cl = c % {{BK}};
                        v = fmaf({{to_acc("pl[((c / " .. EU .. ") * " .. NPIX .. " + px) * " .. EU .. " + (c % " .. EU .. ")]")}},
                                 {{w_to_acc("sm[s * " .. WBUF .. " + " .. wemu .. "]")}}, v);
                    }
            acc[0][r] = v;
        }
        store_row(acc[0], o);
    }
#endif
}
]=], "conv2d_planes_half_sw")

-- sw=1: one input row yi = rb + u of the sweep (u its place in an unrolled group: the slots' and the
-- fragment buffers' numbers), written into the kernel twice (the loop over whole groups, the rows left)
local sw_row_src = engine.compile([=[
            const int yi = rb + u;
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int kx = 0; kx < {{K}}; kx++) {
                // kernel column kx's weights: its descriptors from a base ptxas cannot see through (else it holds
                // every tap's {{KK * KS}} descriptors in registers across the sweep, 2 each)
                unsigned long long dk = d0 + {{bdesc}} + kx * {{CS * WBUF // EU}};
                asm volatile("" : "+l"(dk));
#pragma unroll
                for (int ky = 0; ky < {{K}}; ky++)
#pragma unroll
                    for (int j = 0; j < {{KS}}; j++) {
                        // tap (ky, kx), channels {{KC}}j..: slice (tap, {{KC}}j / {{BK}}), its channel group ({{KC}}j % {{BK}}) / {{EU}}
                        const unsigned long long db = dk + ky * {{K * CS * WBUF // EU}} + ({{KC}} * j) / {{BK}} * {{WBUF // EU}} +
                            (({{KC}} * j) % {{BK}}) / {{EU}} * {{MG * 8}};
                        wgmma_rs(acc[(u - ky + {{S}}) % {{S}}], a[{{AB == 2 and "u & 1" or "0"}}][kx][j], db, ky + kx + j > 0);
                    }
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
% if AB == 2 then
            load_a(a[(u + 1) & 1], yi + 1);
% end
            // every product in: output row yi - {{K - 1}} is whole (its slot's next product, row
            // yi + {{S - K + 1}}'s, overwrites it); the accumulators are read only with nothing in flight
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
% if AB == 1 then
            load_a(a[0], yi + 1);
% end
            store_row(acc[(u - {{K - 1}} + {{S}}) % {{S}}], yi - {{K - 1}});
]=], "conv2d_planes_half_sw_row")

-- tr=1's weight copies: the lambda issue_w(s, b) (slice s's weights into ring buffer b,
-- 16-byte cp.async, zeros past M or C), commit_w(), and the first TR_STAGES - 2 slices issued.
local issue_src = engine.compile([=[
    // slice s's weights into ring buffer b: copy u = tid + {{NT}}*i is channel u / {{MG}} of the slice,
    // maps 8*(u % {{MG}}) .. +7 of the tile (zeros past M or C)
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const unsigned smw = (unsigned)__cvta_generic_to_shared(sm);
#endif
    auto issue_w = [&](int s, int b) {
        {{tapcs}}
        const int c0 = cs * {{BK}};
        const {{w_t}}* const wp = w_arg + tap * {{C * M}} + c0 * {{M}} + m0;
#pragma unroll
        for (int i = 0; i < {{WI}}; i++) {
            const int u = tid + i * {{NT}};
% if WU % NT ~= 0 then
            if (u >= {{WU}}) break;
% end
            const int c = u / {{MG}}, mg = u - c * {{MG}};
            const int d = b * {{WBUF}} + ((c >> 3) * {{MG}} + mg) * 64 + (c & 7) * 8;
            const bool ok = {{wok}};
            const {{w_t}}* const src = ok ? wp + c * {{M}} + 8 * mg : w_arg;
{{cp16}}
        }
    };
    auto commit_w = [&]() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("cp.async.commit_group;" ::: "memory");
#endif
    };
#pragma unroll
    for (int s = 0; s < {{ST - 2}}; s++) {
        if (s < {{NS}}) issue_w(s, s);
        commit_w();
    }
]=], "conv2d_planes_half_issue")

-- wr=1's weight copies, issued before the planes are staged: every slice's, 16-byte cp.async,
-- zeros past C (M is a multiple of 8 and of no concern past the tile: m0 + 8 * mg < M tested).
local issue_all_src = engine.compile([=[
    // every slice's weights: copy u is slice u / {{WU}}, its channel (u % {{WU}}) / {{MG}} and maps
    // 8*(u % {{MG}}) .. +7 of the tile, into [slice][channel group][map group][8 channels][8 maps]
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const unsigned smw = (unsigned)__cvta_generic_to_shared(sm);
#endif
#pragma unroll 4
    for (int u = tid; u < {{NS * WU}}; u += {{NT}}) {
        const int s = u / {{WU}}, r = u - s * {{WU}};
        const int tap = s / {{CS}}, c0 = (s - tap * {{CS}}) * {{BK}};
        const int c = r / {{MG}}, mg = r - c * {{MG}};
        const int d = s * {{WBUF}} + ((c >> 3) * {{MG}} + mg) * 64 + (c & 7) * 8;
        const bool ok = {{wok}};
        const {{w_t}}* const src = ok ? w_arg + tap * {{C * M}} + (c0 + c) * {{M}} + m0 + 8 * mg : w_arg;
{{cp16}}
    }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
]=], "conv2d_planes_half_issue_all")

-- tf32 (sw=1): the lambdas rna(v) (v rounded to TF32: cvt.rna, or the CPU emulation's same rounding in C)
-- and put(at, v) (four FP32 values rounded, one 16-byte store).
local tf32_put_src = engine.compile([=[
{{tf32_rna}}
    // four FP32 values rounded to TF32, one 16-byte store
    auto put = [&]({{acc_t}}* at, const {{acc_t}} (&v)[4]) {
        *reinterpret_cast<{{vec_t(acc_t, 4)}}*>(at) = make_float4(rna(v[0]), rna(v[1]), rna(v[2]), rna(v[3]));
    };
]=], "conv2d_planes_half_tf32_put")

local function tf32_put(v)
  v.tf32_rna = common.tf32_rna_lambda()
  return tf32_put_src(v)
end

-- tf32 (sw=1): every slice's weights, each rounded to TF32, through registers into B's K-major
-- layout (tf32 wgmma reads no transposed operand, so no 16-byte copy of 8 maps serves).
local weights_tf32_src = engine.compile([=[
    // every slice's weights, rounded to TF32: element e is slice e / {{WBUF}}, its channel (e % {{WBUF}}) / {{BM}} and
    // map e % {{BM}} of the tile, into [slice][channel group][map group][8 maps][4 channels] (zeros past C{{mguard and " or M" or ""}})
#pragma unroll 4
    for (int e = tid; e < {{NS * WBUF}}; e += {{NT}}) {
        const int s = e / {{WBUF}}, r = e - s * {{WBUF}};
        const int tap = s / {{CS}}, c0 = (s - tap * {{CS}}) * {{BK}};
        const int c = r / {{BM}}, m = r - c * {{BM}};
        const bool ok = {{wok}};
        sm[s * {{WBUF}} + ((c >> 2) * {{MG}} + (m >> 3)) * 32 + (m & 7) * 4 + (c & 3)] =
            ok ? rna(__ldg(w_arg + tap * {{C * M}} + (c0 + c) * {{M}} + m0 + m)) : 0.0f;
    }
]=], "conv2d_planes_half_weights_tf32")

function H.kernel(l, p)
  local s = H.shape(l, p)
  local g = s.g
  local fused = g.kind == "none" or s.pooled
  local act = fused and l.act or "none"
  local name = string.format("conv2d_planes_c%dm%dk%d_h%dw%d%s_%s%s_%s_m%d_g%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, l.bias and "_bias" or "",
    p.rows < g.CH and string.format("r%d", p.rows) or "ri", p.bm, p.wgs)
    .. (p.bk ~= H.default_bk(l, p) and string.format("_k%d", p.bk) or "")
    .. (p.occ > 1 and string.format("_o%d", p.occ) or "") .. (s.tr and "_tr" or "") .. (s.IB > 1 and ("_i" .. s.IB) or "") .. (s.pooled and "_fp" or "")
    .. (s.PO and "_po" or "") .. (s.MN and "_mn" or "") .. (s.SW and ("_sw" .. s.IBW) or s.WR and "_wr" or "")
    .. (s.T32 and "_tf32" or "")
  -- the output written into a concat's slice (common.out_slice): its image stride
  -- tr=0: an add computed in the epilogue (common.residual), its other operands read where the
  -- accumulators are stored (tr=1's epilogue through shared memory takes none: the add runs after)
  local res = not s.tr and not s.SW and common.residual(l, fused) or nil
  local pre = common.planes_prelude(l, name, fused, s.threads, p.occ, s.NR, res)
  local slice, ty, head, args, dregs, douts = pre.slice, pre.ty, pre.head, pre.args, pre.dregs, pre.douts
  name = pre.name
  local mguard = l.M % p.bm ~= 0
  local os_ = slice and slice.stride or (s.pooled and l.M * g.OH * g.OW or l.M * g.CH * g.CW)
  local wt = s.T32 and "tf32" or common.half_dtype(l) == "bf16" and "bf16" or "f16"   -- wgmma's operand type
  local wok = {}
  if mguard then wok[#wok + 1] = string.format((s.tr or s.WR) and "m0 + 8 * mg < %d" or "m0 + m < %d", l.M) end
  if s.CP ~= l.C then wok[#wok + 1] = string.format("c0 + c < %d", l.C) end
  if s.WU % s.threads ~= 0 and not s.tr and not s.WR then wok[#wok + 1] = string.format("u < %d", s.WU) end
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, KK = s.KK, CP = s.CP, CG = s.CG,
    BM = p.bm, BK = p.bk, CS = s.CS, NS = s.NS, WGS = p.wgs, MT = s.MT, TT = s.TT, NT = s.threads, NR = s.NR,
    RB = s.RB, NB = s.NB, BPX = s.BPX, PW = s.PW, CH = g.CH, CW = g.CW, COLS = g.CH * g.CW,
    ROWS_IN = s.ROWS_IN, REAL = s.REAL, NPIX = s.NPIX, PU = s.PU, WU = s.WU, WI = s.WI, WBUF = s.WBUF, PB = s.PB,
    pt = g.pt, pl = g.pl, smem = s.smem, MB = common.ceil_div(l.M, p.bm),
    dregs = dregs, douts = douts,
    -- A: the planes (channel groups NPIX pixels apart), B: a weight buffer (groups BM/8 cores apart)
    adesc = string.format("%s + %d", common.wgmma_desc(s.NPIX), s.PB // 8), bdesc = common.wgmma_desc(p.bm),
    wt = wt,
    wok = #wok > 0 and table.concat(wok, " && ") or "true",
    bias = l.bias, mguard = mguard, actname = act,
    b = l.bias and (" + " .. ty.w_to_acc("__ldg(b_arg + m)")) or "",
    act = function(e) return common.act(act, e) end,
    OS = os_,
    -- tr=1's unpooled epilogue with whole images a block (ib > 1): outputs a store, 4 or 2 where the
    -- rows and images are whole vectors. On an H200 in bf16 at 10,000 images (bench/scripts/
    -- tr_store_device.sh) zoo-vgg-same's conv3_1 (8x8, three images a block) 1.288 -> 1.177 ms; on
    -- bands of rows it was level or lost: 16x16 and 14x14 within 1.5 %, zoo-1x1's 22x22 (two outputs
    -- a store) 3.05 -> 3.23, so bands store one output at a time
    EV = (s.tr and not s.pooled and s.IB > 1) and ((g.CW % 4 == 0 and os_ % 4 == 0) and 4
      or (g.CW % 2 == 0 and os_ % 2 == 0) and 2 or 1) or 1,
    pooled = s.pooled, pool_kind = g.kind, OH = g.OH, OW = g.OW, PR = math.min(p.rows, g.CH) // 2,
    IB = s.IB, PH = s.PH,
    tr = s.tr, MR = s.MR, PG = s.PG, NP = s.NP, MG = s.MG, ST = TR_STAGES, EP = s.EP,
    PO = s.PO, SUN = s.SUN, SU = s.SU, WR = s.WR, MN = s.MN, PGN = s.PGN, FAST16 = s.FAST16, FAST8 = s.FAST8,
    IBW = s.IBW, S = s.S, PHF = s.PHF, RT = s.RT, KS = s.KS, AB = s.AB, EU = s.EU, KC = s.KC, T32 = s.T32,
    -- sw=1's wgmma shape and types, and the CPU emulation's index of weight (slice s) channel cl, map mm
    kshape = s.T32 and "k8.f32.tf32.tf32" or string.format("k16.f32.%s.%s", wt, wt),
    wemu = s.T32 and string.format("((cl >> 2) * %d + (mm >> 3)) * 32 + (mm & 7) * 4 + (cl & 3)", s.MG or 0)
      or string.format("((cl >> 3) * %d + (mm >> 3)) * 64 + (cl & 7) * 8 + (mm & 7)", s.MG or 0),
    -- tr=1: slice s's tap and channel slice (po=1: channel slice by channel slice, each tap in turn;
    -- else tap by tap)
    tapcs = s.PO and string.format("const int cs = s / %d, tap = s - cs * %d;", s.KK, s.KK)
      or string.format("const int tap = s / %d, cs = s - tap * %d;", s.CS, s.CS),
  }
  if s.tr then
    -- A: a weight buffer, transposed (channel groups bm/8 cores apart), B: the planes
    v.adesc, v.bdesc = common.wgmma_desc(p.bm), string.format("%s + %d", common.wgmma_desc(s.NPIX), s.PB // 8)
  end
  common.typed(l, v)
  v.res = res ~= nil
  v.map_stores = common.wgmma_map_stores(p.bm, mguard and l.M, g.CH * g.CW, "t4", function(r)
    local e = v.act(r .. v.b)
    if res then
      local others = {}
      for k = 1, res.n do others[k] = v.to_acc(string.format("__ldg(%s + ro + m * %d)", res.names[k], g.CH * g.CW)) end
      e = res.sum(e, others)
    end
    return v.from_acc(e)
  end)
  v.stage_t = v.in_t
  v.put8 = s.T32 and tf32_put(v) or (s.MN and (s.FAST16 or s.FAST8)) and "    // (mn=1: every 8 pixels one 16-byte copy or two 8-byte ones, no put)"
    or common.put8_lambda(v.stage_t, v.vec_t(v.acc_t, 4))
  v.cp16 = common.cp_async16("            ", "smw + 2 * d", "sm + d", "src", "ok")
  v.cp8 = common.cp_async8("            ", "smw + 2 * (d + 4 * hh)", "sm + d + 4 * hh", "src", "ok")
  -- mn=1's copies: whether channel c's pixel p of the block is live, and its source (lines indented ind)
  v.mn_src = function(ind)
    local HW = l.H * l.W
    local L = s.IB > 1 and {
      string.format("const int im = p / %d;", HW),
      string.format("const bool ok = c < %d && p < %d && img + im < n;", l.C, s.REAL),
      string.format("const %s* const src = ok ? xb + (long long)im * %d + c * %d + (p - im * %d) : in;", ty.in_t,
        l.C * HW, HW, HW),
    } or {
      string.format("const bool ok = c < %d && p < %d && y0 * %d + p < %d;", l.C, s.REAL, l.W, HW),
      string.format("const %s* const src = ok ? xb + c * %d + y0 * %d + p : in;", ty.in_t, HW, l.W),
    }
    return ind .. table.concat(L, "\n" .. ind)
  end
  -- tr=1's epilogue: output i of the block's tile as map m, image im of the block (ib > 1), row py
  -- of R and column px of Wd; past M (a partial map tile) the loop ends, past the batch it skips
  v.unpack = function(R, Wd, what)
    local L = {}
    if s.IB > 1 then
      L[#L + 1] = string.format("        // (output i: map, image of the block, %s)", what)
      L[#L + 1] = string.format("        const int m = i / %d, rem0 = i - m * %d;", s.IB * R * Wd, s.IB * R * Wd)
      L[#L + 1] = string.format("        const int im = rem0 / %d, rem = rem0 - im * %d;", R * Wd, R * Wd)
    else
      L[#L + 1] = string.format("        const int m = i / %d, rem = i - m * %d;", R * Wd, R * Wd)
    end
    L[#L + 1] = string.format("        const int py = rem / %d, px = rem - py * %d;", Wd, Wd)
    if mguard then L[#L + 1] = string.format("        if (m0 + m >= %d) break;", l.M) end
    if s.IB > 1 then L[#L + 1] = "        if (img + im >= n) continue;   // images past the batch" end
    return table.concat(L, "\n")
  end
  if s.T32 then
    local ok = { string.format("c0 + c < %d", l.C) }
    if mguard then ok[#ok + 1] = string.format("m0 + m < %d", l.M) end
    v.wok = table.concat(ok, " && ")
  end
  v.issue_first = (s.tr and issue_src(v)) or (s.T32 and weights_tf32_src(v)) or (s.WR and issue_all_src(v)) or ""
  v.N, v.TA = s.tr and s.NP or p.bm, s.tr and 1 or 0
  -- both kernels' wgmma(d, da, db) (A the planes and B the weights; tr=1: A the weights,
  -- transposed) and d0
  v.wgmma_fn = common.wgmma16_lambda(v.acc_t, s.NR, v.N, v.wt, v.TA, (s.WR or s.MN) and 1 or 0)
  if s.MN then v.stage_mn = stage_mn_src(v) end
  -- tr=1's CPU emulation: slice cs's channel c of band pixel p in the planes (a: their first element)
  v.plane_at = s.MN and string.format("a[((cs * %d + (c >> 3)) * %d + (p & ~7)) * 8 + (c & 7) * 8 + (p & 7)]", p.bk // 8,
    s.NPIX or 0) or string.format("a[((cs * %d + (c >> 3)) * %d + p) * 8 + (c & 7)]", p.bk // 8, s.NPIX or 0)
  v.prologue = prologue(v)
  if s.SW then v.row_body = sw_row_src(v) end
  return {
    name = name,
    args = args,
    source = ((s.SW and source_sw) or (s.tr and source_tr) or source)(v),
    grid = { (s.IB > 1 or s.SW) and common.batch_dim(1, s.IB) or common.batch_dim(s.NB, 1), common.ceil_div(l.M, p.bm), 1 },
    block = { s.threads, 1, 1 },
    shared = s.smem,
    weights = string.format("arg:taps:%d", s.KK),
    bias = l.bias and "arg" or "none",
    out_elems = s.pooled and l.M * g.OH * g.OW or l.M * g.CH * g.CW,
    shape = (s.pooled and common.conv_shape(l, g, act, true, l.M, g.OH, g.OW) or common.conv_shape(l, g, act, false, l.M, g.CH, g.CW))
      .. (slice and string.format(", into a slice of %d values an image", slice.stride) or ""),
    fused = fused,
    out_slice = slice ~= nil,
    residual = res ~= nil,
    precision = s.T32 and "tf32" or nil,   -- (the header's precision line: one TF32 product)
  }
end

return H
