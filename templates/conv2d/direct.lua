-- conv2d_direct.lua — direct convolution, every layer constant a literal.
--
-- One thread computes a small tile of outputs of one image for every output
-- map: `cols` outputs along a row (with a fused F x F pool of stride F, max or
-- average, `cols` pooled outputs, i.e. an F x F*cols tile of conv outputs),
-- reading the input patch under that tile: ((rows-1)*stride + K) x ((cols-1)*stride + K).
-- Padding: the patch's rows and columns that may fall outside the input are
-- known from the layer alone; only those get a bound check, a comparison of the
-- tile's origin with a literal, and read 0 outside. Maps are produced `maps_unroll` at a time; each group's
-- C x K x K products are fully unrolled with literal offsets, one weight
-- feeding every output of the tile. When the patch of every channel fits in
-- registers it is loaded once and reused by all maps. Weights (and bias) live
-- in __constant__ memory when they fit the network's constant budget and a
-- group is small; else the block stages each group's weights in shared memory
-- (every thread of a warp then reads the same word: a broadcast).
-- Epilogue (fuse=1): max over the window, + bias, activation, store (pooling
-- before a monotone activation gives the same result with fewer calls); or the
-- average of the activated values. Pools a tile cannot cover (overlapping
-- windows, the global average) leave the kernel unfused: conv + bias, then the
-- pool template applies the activation and pools.
-- Channel groups (groups = G > 1): a map group lies in one channel group
-- (maps_unroll divides M/G), reads its C/G channels from the input and its
-- weights [M, C/G, K, K]; the patch is then read per channel, never hoisted.
-- A layer whose channels x K x K cannot be unrolled whole within the budgets below
-- (T.CALL_BUDGET, T.SOURCE_BUDGET, T.BODY_BUDGET even at one map a thread) loops over
-- its channels instead (cl=1): one channel's patch and its K x K taps unrolled, the
-- channel a run-time index of the input and the weights. cl=1 is legal only there, so
-- every layer that unrolls whole keeps its kernel; it lets a grouped layer of many
-- channels a group run (direct alone serves those) and a spec name direct for a deep
-- layer. Not yet timed on a GPU against igemm, which `auto` takes for such layers.
-- The network's pixels (l.pixels, the planner's pixel twin of a first layer): the
-- input is uint8, each element read scaled as ops/input_u8.lua scales it
-- (common.pixel_reader), a padded patch's outside still 0, so the layer needs no
-- input kernel before it.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "direct convolution; one thread per output tile and all maps"
T.fuses_add = true   -- common.residual: an add computed in the epilogue
T.out_slice = true   -- common.out_slice: the output written into a concat's slice

-- The layer's geometry, and whether this kernel applies the activation and pool.
local function geom(l, fuse)
  local g = common.conv_geom(l)
  local fused = fuse ~= 0 and (g.kind == "none" or g.tiled_pool)
  return g, fused, fused and g.kind ~= "none"
end

-- Channels and maps of one channel group (C and M for an ungrouped layer).
local function per_group(l)
  local G = (l.groups and l.groups > 1) and l.groups or 1
  return l.C // G, l.M // G, G
end

-- The side of the pool window the kernel applies (1 when it pools nothing).
local function pool_side(l, fuse)
  local g, _, pooled = geom(l, fuse)
  return pooled and g.PK or 1
end

-- The outputs per row of the kernel (pooled ones when it pools).
local function row_len(l, fuse)
  local g, _, pooled = geom(l, fuse)
  return pooled and g.OW or g.CW
end

-- maps_unroll's default: the largest divisor of M up to 8 whose unrolled calls
-- (about 100 bytes of source each) stay within the source budget (see T.check)
-- and whose accumulators fit a fused pool's F x F tile (else the search would
-- find fuse=0 before a smaller maps_unroll); where that leaves fewer than 4
-- maps (M = 13, 17, 26: prime or twice a prime), the smallest divisor from 9 to
-- 32 that fits: measured on an H100 (2026-11-26, bench/journal/2026-11.md), one map a
-- thread ran 17 maps of a 3x3 layer 11.7x slower than 17.
-- The SMs to fill: the target's, else an H100's 132 (a fat binary serves many).
local function target_sms(l) return (l.target and l.target.sms and l.target.sms > 0) and l.target.sms or 132 end

-- Whether the layer's channels x K x K unroll whole at one map a thread, one output and no
-- split (T.check's budgets for that block and fuse; by default 32 threads, fused): where they
-- do not, the kernel loops over its channels (cl=1), and cl=1 is legal only there.
local function unrolls(l, block, fuse)
  return not T.check(l, { block = block or 32, maps_unroll = 1, cols = 1, unroll_groups = 0, fuse = fuse or 1,
                          ms = 1, cl = 0 })
end

-- The taps a map's unrolled body holds: every channel's, or one channel's where the kernel
-- loops over channels.
local function map_taps(l)
  return unrolls(l) and per_group(l) * l.K * l.K or l.K * l.K
end

-- Whether d maps a thread of `taps` taps each fit the source budget and a fused pool's
-- accumulators.
local function mu_fits(l, d, taps)
  local F = pool_side(l, 1)
  return d * taps * 100 + 4096 <= 40 * 1024 and d * F * F <= 64
end

local function default_mu(l)
  local _, MG = per_group(l)
  local taps = map_taps(l)
  local function fits(d) return mu_fits(l, d, taps) end
  local best = 1
  for _, d in ipairs(common.divisors(MG, 8)) do
    if fits(d) then best = d end
  end
  if best >= 4 or best == MG then return best end
  for _, d in ipairs(common.divisors(MG, 32)) do
    if d > 8 and fits(d) then return d end
  end
  return best
end

-- Whether the layer is generated for a small batch (a bucket of at most 64 images).
local function small_batch(l) return l.batch and l.batch > 0 and l.batch <= 64 end

-- Whether it takes the one-image tile (block and maps_unroll below: smaller, so that
-- one image's outputs make blocks enough): at one image, and for 16-bit tensors at
-- every small batch (the FP32 tile from two images on, below, was timed in FP32; the
-- bf16 copy of ece408-2018fa took 77.3 -> 82.7 us at 64 images with it on its first
-- layer, an H200, bench/direct-small-latency-bf16-2026-11-30.log).
local function small_tile(l)
  return l.batch == 1 or (small_batch(l) and l.dtype ~= nil and l.dtype ~= "f32")
end

-- maps_unroll's one-image default: the smallest divisor of M from 2, so that the
-- map groups can be shared out over blocks (ms). A prime M has no such divisor: it
-- keeps its M maps a thread where they fit the source budget and one image's blocks
-- of 32 threads reach the SMs; else one map a thread, which ms then shares out.
-- (Before, a prime M was always M maps a thread: zoo-prime's 13-map 5x5 layer ran
-- as 29 blocks of one warp at one image, its 23-map 3x3 layer, past the budget,
-- fell back to one map a thread with the split its 23 maps had been given, none:
-- 25 blocks for an H200's 132 SMs.)
local function small_mu(l)
  local _, MG = per_group(l)
  for _, d in ipairs(common.divisors(MG, MG)) do
    if d >= 2 and d < MG then return d end
  end
  local g = common.conv_geom(l)
  local outs = pool_side(l, 1) > 1 and g.OH * g.OW or g.CH * g.CW
  local sms = target_sms(l)
  if MG > 1 and mu_fits(l, MG, map_taps(l)) and common.ceil_div((l.batch or 1) * outs, 32) >= sms then return MG end
  return 1
end

-- From two images to 64 (FP32) a thread keeps the large batch's block and at most
-- SMALL_MAX_MU of its maps (SMALL_MAX_MU_8 up to 8 images; the largest divisor of M up
-- to that, or the large batch's where M has none from 2: a prime M), and ms shares
-- the map groups out over the fewest blocks that give the grid SMALL_FILL_THREADS
-- threads an SM (or each group a block). On an H200 (2026-11-30, single kernels, L2
-- flushed, the 29 direct layer shapes of the shipped and zoo specs at 8 and 64 images):
-- the one-image tile (32 threads, 2 maps, blocks enough for one an SM) ran 1.05-3.3x
-- slower than the large batch's tile on 42 of 50 layer-batches
-- (bench/direct-small-2026-11-30.log; zoo-vgg-same's 3 -> 64 layer took 24 us at 64
-- images under every block size: 65,536 threads). With the grid filled, maps_unroll
-- 1, 2, 4 and 8 timed on each (bench/direct-mu-2026-11-30.log): 2 maps at 8 images and 4
-- at 64 came within 10 % of the best on 43 of 51 layer-batches (sum 523 us against the
-- best's 507), where 4 at both came within it on 39, 8 at both on 31; a prime M's 17
-- maps ran 6.4x faster than 1 a thread on zoo-awkward's first layer at 64 images.
T.SMALL_FILL_THREADS = 2048
T.SMALL_MAX_MU_8 = 2
T.SMALL_MAX_MU = 4

local function default_block(l)
  if small_tile(l) then return 32 end
  local F = pool_side(l, 1)
  return default_mu(l) * F * F <= 32 and 256 or 128
end

local function mu_default(l)
  if small_tile(l) then return small_mu(l) end
  local big = default_mu(l)
  if not small_batch(l) then return big end
  local _, MG = per_group(l)
  local ds = common.divisors(MG, math.min(big, l.batch <= 8 and T.SMALL_MAX_MU_8 or T.SMALL_MAX_MU))
  return ds[#ds] > 1 and ds[#ds] or big
end

-- ms's default: 1 at a large batch; for a small batch, the fewest splits of the
-- map groups that give every SM of the target (an H100's 132 where unknown) a
-- block with the one-image tile, else SMALL_FILL_THREADS threads an SM.
local function default_ms(l, given)
  if not small_batch(l) then return 1 end
  local mu = (given and given.maps_unroll) or mu_default(l)
  local block = (given and given.block) or default_block(l)
  local F = pool_side(l, 1)
  local g = common.conv_geom(l)
  local outs = (F > 1 and g.OH * g.OW or g.CH * g.CW) // ((given and given.cols) or 1)
  local blocks = common.ceil_div(l.batch * outs, block)
  local sms = target_sms(l)
  local want = small_tile(l) and sms or common.ceil_div(sms * T.SMALL_FILL_THREADS, block)
  local best = 1
  for _, d in ipairs(common.divisors(l.M // mu, 64)) do
    best = d
    if blocks * d >= want then break end
  end
  return best
end

-- Largest input patch (floats, all channels) kept in registers across groups.
local HOIST_LIMIT = 72
local HOIST_LIMIT_PADDED = 64

-- Whether a thread's PR x PC patch of every channel is loaded once and kept in registers across
-- the map groups (ungrouped layers without the channel loop, cl = 1, and within the limits above).
local function hoists(l, g, PR, PC, cl)
  return g.G == 1 and cl ~= 1 and l.C * PR * PC <= (g.padded and HOIST_LIMIT_PADDED or HOIST_LIMIT)
end

-- cols' default: 1; for a 16-bit layer at the large batch the largest divisor of the row up to 4
-- whose accumulators fit a fused pool's tile (64 a thread: 2 columns under a 2x2 pool of 8 maps).
-- On an H200 in bf16 at 10,000 images (bench/scripts/tr_store_device.sh EXTRA, ms, 1 column /
-- more): zoo-5x5-c64's 1 -> 64 on 28x28 0.672 / 0.517 (2), zoo-vgg-same's 3 -> 64 same on 32x32
-- 1.763 / 1.370 (2) / 0.888 (4), zoo-deep512's 1 -> 128 with its pool 0.655 / 0.512 (2),
-- zoo-squeeze's 128 -> 3 (cl=1) 2.610 / 1.107 (4); FP32 layers were not timed and keep 1.
-- Only where a thread's registers stay light: the patch of every channel hoisted (first layers), or
-- the channel loop (cl=1) with at most 4 maps a thread; elsewhere ptxas spilled (a 24 -> 24 3x3 with
-- 2 columns at sm_80, a 24 -> 24 5x5 channel loop of 8 maps with 4 at sm_120: test_kernels_compile).
local function default_cols(l, given)
  if not common.half_dtype(l) or small_batch(l) then return 1 end
  local F = pool_side(l, 1)
  local mu = (given and given.maps_unroll) or mu_default(l)
  local g = common.conv_geom(l)
  local loop = not unrolls(l)
  local best = 1
  for _, d in ipairs(common.divisors(row_len(l, 1), 4)) do
    local PR, PC = (F - 1) * g.S + l.K, (F * d - 1) * g.S + l.K
    if mu * F * F * d <= 64 and (hoists(l, g, PR, PC, 0) or (loop and mu <= 4)) then best = d end
  end
  return best
end

-- Tunable parameters: the autotuner enumerates exactly `legal(layer)`.
T.params = {
  { name = "block", doc = "threads per block",
    legal = function(_) return common.multiples(32, 32, 1024) end,
    -- 256 where a thread's default tile is at most 32 accumulators, else 128: on
    -- an H100 (2026-11-26, bench/journal/2026-11.md) 256 ran 11 of 14 direct zoo layers
    -- 1-9 % faster and one of 52 accumulators (13 maps, pooled) 18 % slower
    default = default_block },
  { name = "maps_unroll", doc = "output maps accumulated together in registers; divides M",
    legal = function(l) return common.divisors(l.M, 32) end,
    default = mu_default },
  { name = "cols", doc = "outputs (pooled outputs when pooling) per thread along a row; divides the row",
    legal = function(l) return common.divisors(row_len(l, 1), 8) end,
    default = default_cols },
  { name = "unroll_groups", doc = "1: unroll the loop over map groups too (weights become immediate operands)",
    legal = function(_) return { 0, 1 } end,
    default = function(_) return 0 end },
  { name = "fuse", tune = false, doc = "1: bias+activation+pool in this kernel; 0: bias only, then separate kernels",
    legal = function(_) return { 0, 1 } end,
    default = function(_) return 1 end },
  -- last, and no tuning choice yet (the tuner enumerates its default only): at a
  -- large batch 1, which leaves every kernel and search of a spec as it was
  { name = "ms", tune = false, doc = "map splits: the map groups shared out over this many blocks (grid y); for small batches",
    legal = function(l) return common.divisors(l.M, 64) end,
    default = default_ms },
  -- after ms, quiet (a header lists it only as cl=1), and legal only where the layer does
  -- not unroll whole (T.check): a search reaches it only where every unrolled kernel was
  -- refused, so every layer that resolved before resolves to the same kernel
  { name = "cl", quiet = true,
    doc = "1: a loop over the input channels, a channel's K x K taps unrolled (layers that do not unroll whole)",
    legal = function(l) return per_group(l) > 1 and { 0, 1 } or { 0 } end,
    default = function(_) return 0 end },
}

-- Most multiply-adds one thread's fully unrolled body may hold: code size and
-- compile time grow with it (ece408-2018fa conv2, 2352, compiles in about 2 s).
T.BODY_BUDGET = 2560
-- Most unrolled tile calls (one source line each, about 80 bytes): the source size.
T.CALL_BUDGET = 400

-- Most weights per group read straight from constant memory (see T.kernel).
local CONST_GROUP_LIMIT = 256

-- The tile a thread computes: TR x TS conv outputs, from a PR x PC patch.
local function tile(l, p)
  local g, _, pooled = geom(l, p.fuse)
  local F = pool_side(l, p.fuse)
  local TR, TS = F, F * p.cols
  return pooled, TR, TS, (TR - 1) * g.S + l.K, (TS - 1) * g.S + l.K
end

-- The kernel's name, whether its weights go to constant memory, and their bytes.
local function naming(l, p)
  local g, fused, pooled = geom(l, p.fuse)
  local CKK = per_group(l) * l.K * l.K
  local wbytes = 4 * (l.M * CKK + (l.bias and l.M or 0))
  -- constant memory indexed by the group counter turns into loads the compiler
  -- hoists far ahead (hundreds of live registers, then spills) once a group has
  -- more than ~256 weights; such layers stage each group in shared memory
  local const = wbytes <= (l.const_left or common.CONST_BUDGET) and p.maps_unroll * CKK <= CONST_GROUP_LIMIT
  local name = string.format("conv2d_direct_c%dm%dk%d_h%dw%d%s_%s%s%s_%s_b%du%dx%dg%df%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, fused and l.act or "none", pooled and g.pool_tag or "",
    l.bias and "_bias" or "", const and "wc" or "ws", p.block, p.maps_unroll, p.cols, p.unroll_groups, p.fuse)
  if p.ms > 1 then name = name .. "_ms" .. p.ms end
  if p.cl == 1 then name = name .. "_cl" end
  return name, const, wbytes
end

-- A channels-last store for a conv2d_tma layer that alone reads the output (planner.hwc_handoffs,
-- l.hwc_out): the block's outputs, every map of its block x cols pixels, staged in shared memory
-- (a pixel's maps a row of M/2 pairs and one word more, so that a warp's pair stores fall in
-- different banks), then copied out in 4-byte words: in channels-last order a block's pixels are
-- one run of memory. Where the epilogue computes the whole layer (the pool fused), one block holds
-- every map (ms = 1), maps come in pairs (M and maps_unroll even), 16-bit, one group, no add or
-- slice, and the staging fits HWC_MAX_STAGE bytes (two blocks an SM), HWC_MAX_STAGE_POOLED with a
-- pool fused (one block an SM, whose copy-out then waits on its products: four of them a stored
-- value). On an H200 in bf16 at 10,000 images (bench/RESULTS.md, "conv2d_direct's channels-last
-- store"), against the C x H x W store and the tma layer's copy: zoo-squeeze's 1 -> 64 on 46x46
-- (67.6 KB) 1.393 ms against 1.629 + 1.563, zoo-1x1's (67.6 KB) 0.332 against 0.373 + 0.373,
-- zoo-deep512's pooled 1 -> 128 (133 KB) 0.756 against 0.514 + 0.528; but zoo-vgg-same's unpooled
-- 3 -> 64 of four columns a thread (135 KB) 1.863 against 0.890 + 0.739. (Stores straight from the
-- registers, a thread's pixels each M maps apart, had run 2.3-5x slower: "Channels-last hand-offs".)
T.HWC_MAX_STAGE = 100 * 1024
T.HWC_MAX_STAGE_POOLED = 200 * 1024
local function hwc_row(l) return l.M // 2 + 1 end   -- 4-byte words a staged pixel
local function hwc_stage(l, p) return p.block * p.cols * hwc_row(l) * 4 end
local function hwc_max(l, p)
  local _, _, pooled = geom(l, p.fuse)
  return pooled and T.HWC_MAX_STAGE_POOLED or T.HWC_MAX_STAGE
end
function T.hwc_out_ok(l, p)
  local _, fused = geom(l, p.fuse)
  return fused and p.ms == 1 and l.M % 2 == 0 and p.maps_unroll % 2 == 0 and common.half_dtype(l) ~= nil
    and per_group(l) == l.C and not l.residual and not l.out_slice and hwc_stage(l, p) <= hwc_max(l, p)
end

-- Most bytes of source: one unrolled tile call is a line of the kernel's name and
-- about 40 bytes more, the rest of the kernel about 4 KB and the epilogue's lines.
T.SOURCE_BUDGET = 40 * 1024

function T.check(l, p)
  local pooled, TR, TS, PR, PC = tile(l, p)
  local CG, MG, G = per_group(l)
  if MG % p.maps_unroll ~= 0 then
    return string.format("maps_unroll=%d must divide the %d maps of each of the %d channel groups", p.maps_unroll,
      MG, G), "maps_unroll"
  end
  if (l.M // p.maps_unroll) % p.ms ~= 0 then
    return string.format("ms=%d must divide the %d map groups of maps_unroll=%d", p.ms, l.M // p.maps_unroll,
      p.maps_unroll), "ms"
  end
  if p.ms > 1 and p.unroll_groups == 1 then
    return "ms > 1 shares the map groups out over blocks: their loop cannot be unrolled (unroll_groups=0)", "ms"
  end
  if row_len(l, p.fuse) % p.cols ~= 0 then
    return string.format("cols=%d must divide the output row of %d", p.cols, row_len(l, p.fuse)), "cols"
  end
  if p.maps_unroll * TR * TS > 64 then
    return string.format("maps_unroll=%d with cols=%d needs %d accumulators per thread; at most 64",
      p.maps_unroll, p.cols, p.maps_unroll * TR * TS), "maps_unroll"
  end
  local CKK = CG * l.K * l.K
  if p.cl == 1 and unrolls(l, p.block, p.fuse) then
    return string.format("cl=1: the layer's %d x %d x %d products unroll whole (cl=0 fits the budgets at one map " ..
      "a thread); the channel loop is for layers that do not", CG, l.K, l.K), "cl"
  end
  -- the taps one pass of the body unrolls: every channel's, or one channel's under the loop
  local taps = p.cl == 1 and l.K * l.K or CKK
  -- what to use instead: igemm, except for a grouped layer, which only direct serves
  local instead = (l.groups or 1) > 1
      and "grouped layers (groups > 1) run on direct alone, so its channels per group x K x K must fit"
      or "use strategy igemm for this layer"
  local body = p.maps_unroll * taps * TR * TS * (p.unroll_groups == 1 and l.M // p.maps_unroll or 1)
  local calls = p.maps_unroll * taps * (p.unroll_groups == 1 and l.M // p.maps_unroll or 1)
  local what = p.cl == 1 and "K*K" or "C*K*K"
  if calls > T.CALL_BUDGET then
    return string.format("the unrolled body makes %d tile calls (maps_unroll*%s%s); the budget is %d, " ..
      "so that the source stays under about 40 KB: %s",
      calls, what, p.unroll_groups == 1 and "*groups" or "", T.CALL_BUDGET, instead), "maps_unroll"
  end
  local source = calls * (#naming(l, p) + 40) + 4096 + p.maps_unroll * p.cols * (60 + 24 * TR * TR)
  if source > T.SOURCE_BUDGET then
    return string.format("the unrolled body makes about %d bytes of source (%d tile calls of the kernel's name); " ..
      "the budget is %d: %s", source, calls, T.SOURCE_BUDGET, instead), "maps_unroll"
  end
  if body > T.BODY_BUDGET then
    return string.format("the unrolled body holds %d multiply-adds (maps_unroll*" .. what .. "*outputs%s); " ..
      "the budget is %d, so that it compiles in seconds: %s",
      body, p.unroll_groups == 1 and "*groups" or "", T.BODY_BUDGET, instead), "maps_unroll"
  end
  if 4 * p.maps_unroll * CKK > common.MAX_SHARED then
    return string.format("maps_unroll=%d stages %d bytes of weights in shared memory; at most %d fit",
      p.maps_unroll, 4 * p.maps_unroll * CKK, common.MAX_SHARED), "maps_unroll"
  end
  if PR * PC > 256 then
    return string.format("the %dx%d input patch is too large for the direct strategy", PR, PC), pooled and "cols" or nil
  end
  return nil
end

-- The cost model (common.cost): a thread issues its FMAs, its loads (the
-- input patch once, or once per map group when the patch is not kept in
-- registers; each weight too, unless weights are immediate operands: in
-- constant memory with one group or the group loop unrolled), a store per
-- output and about 40 instructions per map group, one chain of work per warp.
function T.cost(l, p)
  local pooled, TR, TS, PR, PC = tile(l, p)
  local g = common.conv_geom(l)
  local OH, OW = g.CH, g.CW
  if pooled then OH, OW = g.OH, g.OW end
  local CG = per_group(l)
  local CKK, groups = CG * l.K * l.K, l.M // p.maps_unroll
  local hoist = hoists(l, g, PR, PC, p.cl)
  local _, const = naming(l, p)
  local loads = CG * PR * PC * (hoist and 1 or groups)
  if not (const and (groups == 1 or p.unroll_groups == 1)) then loads = loads + l.M * CKK end
  local instr = (l.M * CKK * TR * TS + loads + l.M * p.cols + 40 * (p.unroll_groups == 1 and 1 or groups)) / p.ms
  local regs = p.maps_unroll * TR * TS + (hoist and l.C * PR * PC or PR * PC)
  local blocks = common.ceil_div(common.ceil_div(common.cost.images(l) * OH * OW, p.cols), p.block) * p.ms
  return common.cost.issue(l, blocks, p.block, regs, 0, instr, 1)
end

local source = engine.compile([[
% if const then
__constant__ {{w_t}} {{wsym}}[{{M * CKK}}];
%   if bias then
__constant__ {{b_t}} {{bsym}}[{{M}}];
%   end

// weights of map m, channel c, row p, column q: W(((m * {{CG}} + c) * {{K}} + p) * {{K}} + q)
#define W(i) {{w_to_acc(wsym .. "[i]")}}
% else
// weights of map g+m (the group staged in shared memory), channel c, row p, column q:
// W((m * {{CG}} + c) * {{K * K}} + p * {{K}} + q)
#define W(i) {{w_to_acc("ws[i]")}}
% end
% if bias then
#define B(m) {{w_to_acc(bsrc .. "[m]")}}
% end

// one weight into every output of the thread's {{TR}}x{{TS}} tile; p, q are literals
template <int P, int Q>
__device__ __forceinline__ void {{name}}_fma({{acc_t}} (&a)[{{TR}}][{{TS}}], {{acc_t}} k, const {{acc_t}} (&v)[{{PR}}][{{PC}}])
{
#pragma unroll
    for (int r = 0; r < {{TR}}; r++)
#pragma unroll
% if S == 1 then
        for (int s = 0; s < {{TS}}; s++) a[r][s] = fmaf(v[P + r][Q + s], k, a[r][s]);
% else
        for (int s = 0; s < {{TS}}; s++) a[r][s] = fmaf(v[P + r * {{S}}][Q + s * {{S}}], k, a[r][s]);
% end
}

{{head}}
{
    // thread -> (image, output row, first of {{cols}} output column(s)); {{P // cols}} threads per image
    const int idx = blockIdx.x * {{block}} + threadIdx.x;
% if const and not hwc then
    if (idx >= n * {{P // cols}}) return;
    const int at = idx;
% else
    // threads past the batch still help stage {{hwc and "and store the block's outputs" or "weights"}}, then store nothing
    const bool live = idx < n * {{P // cols}};
    const int at = live ? idx : 0;
%   if not const then
    __shared__ {{w_t}} ws[{{mu * CKK}}];
%   end
% end
% if hwc then
    // the block's outputs channels-last: thread t's column s at row s * {{block}} + t, {{SW}} words a row
    // ({{M // 2}} pairs of maps and one word more: a warp's stores in different banks)
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
    {{vec_t(out_t, 2)}}* __restrict__ hs = reinterpret_cast<{{vec_t(out_t, 2)}}*>(smem4);
% end
    const int img = at / {{P // cols}};
    const int t = at - img * {{P // cols}};
    const int row = t / {{TW // cols}};
    const int col = (t - row * {{TW // cols}}) * {{cols}};
% if padded then
    // the patch's first input row and column (negative in the padding); rows p and
    // columns q that may fall outside are known here, and only they are checked
    const int iy0 = row * {{TR * S}} - {{pt}}, ix0 = col * {{TR * S}} - {{pl}};
    const {{in_t}}* __restrict__ x = in + img * {{C * H * W}};
    const int o = iy0 * {{W}} + ix0;
#define {{name}}_IN(p, q) ({{incond}})
#define {{name}}_X(c, p, q) ({{name}}_IN(p, q) ? {{to_acc(xv .. "[o + (c) * " .. H * W .. " + (p) * " .. W .. " + (q)]", "(c)")}} : 0.0f)
% else
    const {{in_t}}* __restrict__ x = in + img * {{C * H * W}} + row * {{TR * S * W}} + col * {{TR * S}};
% end
% if not hwc then
    {{out_t}}* __restrict__ y = out + img * {{OS}} + row * {{TW}} + col;
% end
% if res then
%   for k = 1, res.n do
    const {{in_t}}* __restrict__ r{{k}} = {{res.names[k]}} + img * {{M * P}} + row * {{TW}} + col;   // the add's operand {{k}}
%   end
% end
    (void)w_arg;
    (void)b_arg;
% if staged_once then
    // the block's one group of weights, staged before the wait (they depend on no kernel:
    // fetched while the one before runs)
    for (int i = threadIdx.x; i < {{mu * CKK}}; i += {{block}}) ws[i] = w_arg[blockIdx.y * {{M // ms * CKK}} + i];
    __syncthreads();
{{PDL_MARK}}
% end
% if px_decl ~= "" then
{{px_decl}}
% end
% if hoist then

    // the {{C}}x{{PR}}x{{PC}} input patch, loaded once for all {{M}} maps
    {{acc_t}} v[{{C}}][{{PR}}][{{PC}}];
#pragma unroll
    for (int c = 0; c < {{C}}; c++)
#pragma unroll
        for (int p = 0; p < {{PR}}; p++)
#pragma unroll
            for (int q = 0; q < {{PC}}; q++)
% if padded then
                v[c][p][q] = {{name}}_X(c, p, q);
% else
                v[c][p][q] = {{to_acc("x[c * " .. H * W .. " + p * " .. W .. " + q]", "c")}};
% end
% end
% local groups = M // mu

#pragma unroll {{unroll_groups and "" or "1"}}
% if ms > 1 then
    // this block's share of the maps: {{M // ms}} of {{M}} (grid y = {{ms}} splits)
    for (int g = blockIdx.y * {{M // ms}}; g < blockIdx.y * {{M // ms}} + {{M // ms}}; g += {{mu}}) {
% else
    for (int g = 0; g < {{M}}; g += {{mu}}) {
% end
% if not const and not staged_once then
        __syncthreads();   // every thread is done with the previous group's weights
        for (int i = threadIdx.x; i < {{mu * CKK}}; i += {{block}}) ws[i] = w_arg[g * {{CKK}} + i];
        __syncthreads();
% end
% if G > 1 then
        // the {{CG}} channels of these maps' group ({{M // G}} maps a group)
        const {{in_t}}* __restrict__ xg = x + (g / {{M // G}}) * {{CG * H * W}};
% end
% local ind = "        "
% for m = 0, mu - 1 do
        {{acc_t}} a{{m}}[{{TR}}][{{TS}}] = {};
% end
% if cl then
        // the {{CG}} channels in a loop (cl=1), a channel's {{K}}x{{K}} taps unrolled
#pragma unroll 1
        for (int c = 0; c < {{CG}}; c++) {
{{patch_load("c")}}
%   for m = 0, mu - 1 do
            // map g+{{m}}
%     for p = 0, K - 1 do
%       for q = 0, K - 1 do
%         local wi = "c * " .. KK .. " + " .. (m * CKK + p * K + q)
%         local wx = (groups > 1 and const) and ("W(g * " .. CKK .. " + " .. wi .. ")") or ("W(" .. wi .. ")")
            {{name}}_fma<{{p}}, {{q}}>(a{{m}}, {{wx}}, v);
%       end
%     end
%   end
        }
% end
% for c = 0, cl and -1 or CG - 1 do
%   local vc = hoist and ("v[" .. c .. "]") or "v"
%   if not hoist then
        {
            // channel {{c}}: its {{PR}}x{{PC}} patch
{{patch_load(c)}}
%     ind = "            "
%   end
%   for m = 0, mu - 1 do
{{ind}}// map g+{{m}}, c={{c}}
%     for p = 0, K - 1 do
%       for q = 0, K - 1 do
%         local wi = m * CKK + c * K * K + p * K + q
%         local wx = (groups > 1 and const) and ("W(g * " .. CKK .. " + " .. wi .. ")") or ("W(" .. wi .. ")")
{{ind}}{{name}}_fma<{{p}}, {{q}}>(a{{m}}, {{wx}}, {{vc}});
%       end
%     end
%   end
%   if not hoist then
        }
%     ind = "        "
%   end
% end

        // epilogue: {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, {{res and "add, " or ""}}store
% local guard = const and "" or "if (live) "
% local mvals = {}
% for m = 0, mu - 1 do
%   local vals = {}
%   mvals[m] = vals
%   for s = 0, cols - 1 do
%     local val
%     local b = bias and (" + B(g + " .. m .. ")") or ""
%     if pooled and pool_kind == "max" then
%       local terms = {}
%       for r = 0, TR - 1 do
%         for d = 0, TR - 1 do terms[#terms + 1] = string.format("a%d[%d][%d]", m, r, s * TR + d) end
%       end
%       val = act(maxtree(terms) .. b)
%     elseif pooled then
%       local terms = {}
%       for r = 0, TR - 1 do
%         for d = 0, TR - 1 do terms[#terms + 1] = act(string.format("a%d[%d][%d]", m, r, s * TR + d) .. b) end
%       end
%       val = "(" .. table.concat(terms, " + ") .. ") * " .. inv
%     else
%       val = act(string.format("a%d[0][%d]", m, s) .. b)
%     end
%     vals[s] = from_acc(radd(val, "(g + " .. m .. ") * " .. P .. " + " .. s))
%     if hwc then
%       if m % 2 == 1 then
        hs[({{s * block}} + threadIdx.x) * {{SW}} + g / 2 + {{(m - 1) // 2}}] = {{vec_t(out_t, 2)}}{ {{mvals[m - 1][s]}}, {{vals[s]}} };
%       end
%     elseif not pair then
        {{guard}}y[(g + {{m}}) * {{P}} + {{s}}] = {{vals[s]}};
%     elseif s % 2 == 1 then
        {{guard}}*reinterpret_cast<{{vec_t(out_t, 2)}}*>(y + (g + {{m}}) * {{P}} + {{s - 1}}) = {{vec_t(out_t, 2)}}{ {{vals[s - 1]}}, {{vals[s]}} };
%     end
%   end
% end
    }
% if hwc then

    // the block's {{block * cols}} pixels channels-last, one run of memory: copied out in pairs of maps
    __syncthreads();
    const int base = blockIdx.x * {{block * cols}};
    const int cnt = min({{block * cols}}, n * {{P}} - base) * {{M // 2}};
    {{vec_t(out_t, 2)}}* __restrict__ yo = reinterpret_cast<{{vec_t(out_t, 2)}}*>(out) + (size_t)base * {{M // 2}};
    for (int i = threadIdx.x; i < cnt; i += {{block}}) {
        const int j = i / {{M // 2}};
        yo[i] = hs[((j % {{cols}}) * {{block}} + j / {{cols}}) * {{SW}} + i - j * {{M // 2}}];
    }
% end
}
#undef W
% if padded then
#undef {{name}}_X
#undef {{name}}_IN
% end
% if bias then
#undef B
% end
]], "conv2d_direct")

function T.kernel(l, p)
  local pooled, TR, TS, PR, PC = tile(l, p)
  local g, fused = geom(l, p.fuse)
  local OH, OW = g.CH, g.CW
  if pooled then OH, OW = g.OH, g.OW end
  -- padding: the patch rows p that may lie above the input (p < pt) or below it
  -- (the last tile row's origin + p >= H), likewise for columns
  local incond = "1"
  if g.padded then
    local conds = {}
    local maxy = (OH - 1) * TR * g.S - g.pt
    local maxx = (OW - p.cols) * TR * g.S - g.pl
    if g.pt > 0 then conds[#conds + 1] = string.format("((p) >= %d || iy0 + (p) >= 0)", g.pt) end
    if maxy + PR - 1 >= l.H then conds[#conds + 1] = string.format("((p) < %d || iy0 + (p) < %d)", l.H - maxy, l.H) end
    if g.pl > 0 then conds[#conds + 1] = string.format("((q) >= %d || ix0 + (q) >= 0)", g.pl) end
    if maxx + PC - 1 >= l.W then conds[#conds + 1] = string.format("((q) < %d || ix0 + (q) < %d)", l.W - maxx, l.W) end
    if #conds > 0 then incond = table.concat(conds, " && ") end
  end
  local CG = per_group(l)
  local CKK = CG * l.K * l.K
  local name, const, wbytes = naming(l, p)
  if l.hwc_out then
    if not T.hwc_out_ok(l, p) then
      error("conv2d_direct stores channels-last only where T.hwc_out_ok holds (the pool fused, ms = 1, " ..
        "maps in pairs, 16-bit, one group, the staging within " .. hwc_max(l, p) .. " bytes)", 0)
    end
    name = name .. "_hwc"
  end
  local act = fused and l.act or "none"
  -- an add computed here (common.residual): its other operands read at the stored elements
  local res = common.residual(l, fused and not pooled)
  if res then name = name .. res.tag end
  -- the output written into a concat's slice (common.out_slice): its image stride
  local slice = common.out_slice(l, fused)
  if slice then name = name .. slice.tag end
  -- a 16-bit layer's __constant__ weights and bias are FP32 (the manifest's wdtype f32) where every
  -- channel's patch is hoisted (first layers): an FFMA takes an FP32 constant as its operand, where a
  -- 16-bit one is a load and a widening per product. (Elsewhere they stay 16-bit: with FP32 ones
  -- ptxas spilled a 24 -> 24 3x3 layer's kernel at sm_80, its patch reloaded a map group.)
  local hoisted = hoists(l, g, PR, PC, p.cl)
  local lt = (const and hoisted and common.half_dtype(l)) and setmetatable({ w_dtype = "f32" }, { __index = l }) or l
  local ty = common.types(lt)
  -- the pixels read scaled (the name says so and their scaling): uint8 in
  local px_decl, px_read, hty = "", nil, ty
  if l.pixels then
    if g.G > 1 then error("conv2d_direct reads pixels in ungrouped layers only", 2) end
    name = name .. "_px" .. common.pixel_tag(l.pixels)
    px_decl, px_read = common.pixel_reader(l.pixels, ty.acc_t)
    hty = setmetatable({ in_t = common.DTYPES.u8.c }, { __index = ty })
  end
  local to_acc = px_read or function(e) return ty.to_acc(e) end
  local xv = g.G > 1 and "xg" or "x"   -- the input pointer a channel group reads
  local std = common.std_args({ w_name = "w_arg", b_name = "b_arg", types = hty })
  local head, args = common.kernel_head(name, p.block, res and res.args(std) or std)
  local v = {
    name = name, head = head, px_decl = px_decl,
    in_t = hty.in_t, to_acc = to_acc,
    block = p.block, mu = p.maps_unroll, cols = p.cols, unroll_groups = p.unroll_groups == 1, ms = p.ms,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, CKK = CKK, CG = CG, G = g.G, xv = xv,
    TR = TR, TS = TS, PR = PR, PC = PC,
    P = OH * OW, TW = OW, OS = slice and slice.stride or l.M * OH * OW,
    -- 16-bit outputs two at a time (one 4-byte store) where a thread's columns, the rows, maps and
    -- images keep every pair on 4 bytes
    pair = common.is_half(ty.out_t) and p.cols % 2 == 0 and OW % 2 == 0 and (OH * OW) % 2 == 0
      and (slice and slice.stride or l.M * OH * OW) % 2 == 0,
    -- a padded patch also keeps its bounds' predicates live: a smaller one is hoisted
    pooled = pooled,
    hoist = hoisted,
    cl = p.cl == 1, KK = l.K * l.K,
    S = g.S, pt = g.pt, pl = g.pl, padded = g.padded, incond = incond,
    pool_doc = not pooled and "" or g.max2 and "2x2 max, " or (g.kind .. " over " .. TR .. "x" .. TR .. ", "),
    maxtree = common.max_tree,
    pool_kind = g.kind, inv = string.format("%.9ef", 1.0 / (TR * TR)),
    const = const, bias = l.bias,
    -- one channel's patch into v[PR][PC]: channel c, a literal (the unrolled channels) or
    -- the loop's "c" (cl=1)
    patch_load = function(c)
      local at = type(c) == "number" and tostring(c * l.H * l.W) or ("c * " .. l.H * l.W)
      local load = g.padded and string.format("%s_X(%s, p, q)", name, c)
        or to_acc(string.format("%s[%s + p * %d + q]", xv, at, l.W), c)
      return table.concat({
        string.format("            %s v[%d][%d];", ty.acc_t, PR, PC),
        "#pragma unroll",
        string.format("            for (int p = 0; p < %d; p++)", PR),
        "#pragma unroll",
        string.format("                for (int q = 0; q < %d; q++)", PC),
        "                    v[p][q] = " .. load .. ";",
      }, "\n")
    end,
    -- a block whose map loop runs once stages its weights before the programmatic launch's wait
    staged_once = not const and l.M // p.ms == p.maps_unroll, PDL_MARK = common.PDL_MARK:sub(1, -2),
    wsym = name .. "_w", bsym = name .. "_b",
    bsrc = const and (name .. "_b") or "b_arg",
    actname = act,
    act = function(e) return common.act(act, e) end,
    res = res or false,
    hwc = l.hwc_out and true or false, SW = hwc_row(l),
    -- e, the conv's value at element idx of the thread's outputs, with the add applied
    radd = function(e, idx)
      if not res then return e end
      local others = {}
      for k = 1, res.n do others[k] = ty.to_acc(string.format("__ldg(r%d + %s)", k, idx)) end
      return res.sum(e, others)
    end,
  }
  local k = {
    name = name,
    args = args,
    source = source(common.typed(lt, v)),
    grid = { common.batch_dim(OH * OW // p.cols, p.block), p.ms, 1 },
    block = { p.block, 1, 1 },
    -- dynamic shared memory: the channels-last staging (the staged weights are static)
    shared = l.hwc_out and hwc_stage(l, p) or 0,
    const_bytes = const and wbytes or 0,
    weights = const and ("const:" .. v.wsym) or "arg",
    bias = (not l.bias) and "none" or (const and ("const:" .. v.bsym) or "arg"),
    out_elems = l.M * OH * OW,
    shape = common.conv_shape(l, g, act, pooled, l.M, OH, OW),
    fused = fused,
    residual = res ~= nil,
    out_slice = slice ~= nil,
    wdtype = lt ~= l and "f32" or nil,
  }
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  if l.hwc_out then k.shape = k.shape .. ", stored channels-last for the layer after" end
  return k
end

return T
