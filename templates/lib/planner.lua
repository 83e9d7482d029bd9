-- planner.lua — from a validated network to the list of kernels that run it.
--
-- The generator (C) passes the spec as a table; this file decides which
-- template serves each layer, resolves and checks each template's parameters,
-- renders the sources, and names the tensors each kernel reads and writes.
-- The returned table is all the generator writes into files and the manifest.
--
-- net = { name, C, H, W, scale_text, offset_text, target, (one layer's calls:) batch,
--         layers = { { index, name, op, C, H, W, M, K, pool, bias, act, out,
--                      (conv:) pad_t, pad_l, pad_b, pad_r, stride, pool_stride, pool_op, groups, pool_pad,
--                      strategy, params = { key = value }, OC, OH, OW,
--                      (batchnorm:) folded: true where it folds into the conv before it }, ... },
--         norm = { { factor_text, term_text } per input channel } (input mean/std), or nil }

local common = import("lib/common")

local planner = {}

-- A structured failure the generator maps to a position in the spec.
-- `where` is "key" when the parameter's name is at fault, else its value is.
local function fail(layer, param, message, where)
  error({ cg_layer = layer, cg_param = param, message = message, cg_where = where or "value" }, 0)
end

local function join(list)
  local s = {}
  for i, v in ipairs(list) do s[i] = tostring(v) end
  return table.concat(s, ", ")
end

-- Combinations resolve() tries before it gives up looking for a legal one:
-- enough for every combination of the later parameters under a few values of
-- the first (it searches in declared order, the last parameter fastest, so a
-- default refused for an early parameter costs a whole sweep of the later
-- ones); about 0.1 s per 20,000 checks.
local SEARCH_LIMIT = 100000

-- The legal values of each parameter of template T on layer l: the given
-- (spec or caller) value alone when there is one, checked against the declared
-- legal values; else the declared default first, then the legal values in order.
-- Unknown names are refused.
local function choices(T, tname, l, given, index)
  local known, out = {}, {}
  for i, d in ipairs(T.params) do
    known[d.name] = true
    local legal = d.legal(l)
    local v = given and given[d.name]
    if v ~= nil then
      if not common.contains(legal, v) then
        local shown = legal
        if #legal > 16 then shown = { legal[1], legal[2], legal[3], "...", legal[#legal] } end
        fail(index, d.name, string.format("%s=%d is not legal for %s on this layer (%s); expected one of %s",
          d.name, v, tname, d.doc, join(shown)))
      end
      out[i] = { v }
    else
      local def = d.default(l, given)   -- (a default may depend on the values given)
      local list = { def }
      -- (a parameter declared `search = false`, conv2d_igemm's split: its default alone)
      if d.search ~= false then
        for _, x in ipairs(legal) do if x ~= def then list[#list + 1] = x end end
      end
      out[i] = list
    end
  end
  for k, _ in pairs(given or {}) do
    if not known[k] then
      local names = {}
      for _, d in ipairs(T.params) do names[#names + 1] = d.name end
      fail(index, k, string.format("unknown parameter '%s' for %s (expected %s)", k, tname,
        table.concat(names, ", ")), "key")
    end
  end
  return out
end

-- The "k=v" list of values p in T's declared order; a parameter declared
-- `quiet` is left out where it has its default (conv2d_igemm's split=1), so that
-- headers and tuning records written before it was declared stay as they were.
local function listing(T, l, p)
  local out = {}
  for _, d in ipairs(T.params) do
    if not (d.quiet and p[d.name] == d.default(l)) then out[#out + 1] = d.name .. "=" .. p[d.name] end
  end
  return table.concat(out, " ")
end

-- A template's parameter values for one layer: the given values, defaults for
-- the rest. Returns the values and their "k=v" list in declared order; the
-- template's check is not run.
local function values(T, tname, l, given, index)
  local c, p = choices(T, tname, l, given, index), {}
  for i, d in ipairs(T.params) do p[d.name] = c[i][1] end
  return p, listing(T, l, p)
end

-- The legal values of template T's parameter `name` for layer l ({} where T has none).
local function legal_values(T, name, l)
  for _, d in ipairs(T.params) do if d.name == name then return d.legal(l) end end
  return {}
end

-- The multiply-adds of conv layer l (geometry g) for `images` images.
local function conv_macs(l, g, images)
  return l.M * g.CH * g.CW * (l.C // g.G) * l.K * l.K * images
end

-- Resolve a template's parameters for one layer: every parameter the caller
-- leaves out is searched, its default first, then its legal values in order,
-- for the first combination the template's own cross-checks accept. So a layer
-- without `params` always gets a legal kernel when one exists. Returns the
-- values and their "k=v" list in declared order.
local function resolve(T, tname, l, given, index)
  local c = choices(T, tname, l, given, index)
  local p, tried, first_msg, first_param = {}, 0, nil, nil
  local function search(i)
    if i > #T.params then
      tried = tried + 1
      local msg, param = T.check(l, p)
      if not msg then return true end
      if not first_msg then first_msg, first_param = msg, param end
      return false
    end
    for _, v in ipairs(c[i]) do
      p[T.params[i].name] = v
      if search(i + 1) or tried >= SEARCH_LIMIT then return tried < SEARCH_LIMIT end
    end
    return false
  end
  if not search(1) then fail(index, first_param, first_msg) end
  return p, listing(T, l, p)
end

-- The rule `strategy: auto` follows until a tuner measures: `direct` unrolls
-- the whole C*K*K reduction and wins on layers with one to three input channels
-- and a small kernel (43-52 TFLOP/s fused on the course's one-channel layers, on
-- an H200); with more channels its per-thread unrolling falls to 8-20 TFLOP/s
-- (a 1x1 layer with C=64: 19.7) while `igemm` holds 40-45 (bench/RESULTS.md).
-- `winograd`'s default, F(2x2,3x3) in 32x32 tiles over slices of 8 channels,
-- beat igemm's default on every 3x3 stride-1 layer of the zoo with C a multiple
-- of 8 from 32 and M a multiple of 32 (12 layers, 1.11-1.42x on an H100) and lost
-- or tied on the others (C = 16 or 20, M = 30 or 40). Only that tile was
-- measured to win, so `auto` takes winograd only where the target can hold it
-- (66,560 bytes of shared memory: a JIT on the device, a fat binary whose oldest
-- architecture is sm_80 or newer); elsewhere igemm, or `igemm_tc` where the
-- target has TF32 tensor cores (every architecture sm_80 or newer), C >= 16 and
-- M >= 32: its default beat igemm's on 11 of the 13 such zoo layers that auto
-- gave igemm (1.08-1.34x on an H100: 5x5, 7x7, 9x9, 6x6, stride-2 3x3, 1x1 with
-- C = 256, 3x3 with C = 16), tied on one (a 1x1 layer with M = 32) and lost 3.5 %
-- on one (a 1x1 layer with C = 64, M = 256); with fewer maps it lost or tied
-- (M = 12: 32 %, M = 30: 6 %, the course's M = 16: 5-10 %, M = 24: within 1 %),
-- and layers with fewer channels were not measured. Where the conv output is
-- so small that F(2x2,3x3)'s tiles of 2x2 outputs cover much more than it
-- (a 3x3 output in four tiles: 16 outputs for 9), igemm or igemm_tc: on the
-- 3x3 maps of zoo-alex (C = 96 and 128, padding 1) winograd's default took
-- 0.63 and 0.45 ms, igemm_tc tuned 0.42 and 0.30 (1.5x; winograd without the
-- waste would take about 0.36 and 0.25: the break-even is near 1.2x).
-- Returns the template name and the reason, for the file header.
planner.AUTO_DIRECT_MAX_C = 3
planner.AUTO_DIRECT_MAX_CKK = 64
planner.AUTO_WINOGRAD_MIN_C = 32
planner.AUTO_WINOGRAD_MAX_COVER = 1.2   -- outputs the 2x2 tiles cover / conv outputs
planner.AUTO_TC_MIN_C = 16
planner.AUTO_TC_MIN_M = 32
-- igemm_wg (wgmma) instead of igemm_tc where the target is sm_90 built as sm_90a,
-- the reduction is deep, the stride 1 and the conv output not tiny: its default
-- beat igemm_tc's on 8 of the 10 such zoo layers auto gave igemm_tc (an H100,
-- 2026-11-27: 1.01-1.17x on 5x5, 7x7, 3x3 with C = 96 and 128, M = 50
-- to 144), tied on one (9x9, C = 24) and lost 15 % on one (M = 71 in two rows
-- of 40); it lost on shallower reductions (1x1, C = 16 or 17: 1.1-1.4x slower),
-- stride 2 (8-10 %) and a 2x2 output (16 %).
planner.AUTO_WG_MIN_CKK = 600
planner.AUTO_WG_MIN_OUT = 9

-- planes (wgmma, A read from the input planes held in shared memory) first of all
-- where the target is sm_90 built as sm_90a, C >= 16, M >= 16, K >= 2, C*K*K >= 256,
-- stride 1 and, for 3x3 kernels (winograd's
-- ground), C <= 128 and M >= 64. Measured on an H100 (2026-11-27) against
-- auto's former choice on 28 zoo layers: faster on every kernel from 5x5 to 9x9 (8
-- layers against igemm_wg or igemm: 1.09-1.76x; zoo-k7pad's padded 7x7
-- layer 1.02 -> 0.58 ms, level with cuDNN's FFT) and on 14 of the 16 3x3 layers the
-- rule admits (1.02-1.49x, winograd's default on 11 of them; zoo-wide3x3 conv4, C =
-- M = 128 unpadded, 0.90x, and zoo-stem96 conv2, C = 48 on 48x48 maps, M = 96 in two
-- block rows, 0.83x); slower on 3x3 layers with C = 256 (0.75-0.77x) or M = 32
-- (0.74x) and with C*K*K = 144 (0.86x), which the rule leaves to winograd or igemm_tc.
-- 1x1 layers (an element of a plane read once), stride 2 and 2x2 outputs lost or
-- were hardly measured. Since planes stacks up to 8 images a block (ib), conv outputs
-- under 9 pixels take it too where the network is generated for a bucket of at most
-- PLANES_TINY_MAX_BATCH images: zoo-bigk's conv3 (48 -> 96, 6x6 on 7x7: a 2x2 output) took
-- 48.7 us under planes (8 images a block) against igemm_tc's 157.4 at 1,000 images on an
-- H200 (bench/layer-candidates-2026-11-29.log; the network 503.1 -> 395.9 us at 1,000,
-- 189.2 -> 142.8 at 256), but 0.452 against 0.368 ms at 10,000, where igemm_tc's tiles fill
-- the card (bench/small-conv-2026-11-29.log).
planner.PLANES_TINY_MAX_BATCH = 1024
planner.AUTO_PLANES_MIN_CKK = 256
planner.AUTO_PLANES_MIN_M = 16
planner.AUTO_PLANES_3X3_MAX_C = 128
planner.AUTO_PLANES_3X3_MIN_M = 64

-- What both wgmma rules (planes, igemm_wg) ask first: a target built as sm_90a, C >= 16,
-- stride 1 and a conv output of at least 9 pixels (g: the layer's conv geometry).
-- (any_stride: 16-bit layers', whose rule below does not ask for stride 1; any_out: planes'
-- at a bucket, where it stacks the images of small outputs)
local function wgmma_layer(l, g, any_stride, any_out)
  return l.target and l.target.sm90a and l.C >= planner.AUTO_TC_MIN_C and (any_stride or g.S == 1)
    and (any_out or g.CH * g.CW >= planner.AUTO_WG_MIN_OUT)
end

-- The planes rule above; nil or the template and the reason.
local function planes_rule(l)
  local g = common.conv_geom(l)
  -- (conv outputs under 9 pixels too where generated for a bucket: planes stacks several
  -- images a block there)
  local tiny_ok = l.batch and l.batch > 0 and l.batch <= planner.PLANES_TINY_MAX_BATCH
  if wgmma_layer(l, g, false, tiny_ok) and l.M >= planner.AUTO_PLANES_MIN_M and l.K >= 2
      and l.C * l.K * l.K >= planner.AUTO_PLANES_MIN_CKK
      and (l.K ~= 3 or (l.C <= planner.AUTO_PLANES_3X3_MAX_C and l.M >= planner.AUTO_PLANES_3X3_MIN_M))
      and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
    return "conv2d_planes", string.format("auto: planes, since the target is sm_90 (built as sm_90a: wgmma), " ..
      "C = %d >= %d, M = %d >= %d, K = %d >= 2, C*K*K = %d >= %d, stride 1, a %dx%d conv output%s", l.C,
      planner.AUTO_TC_MIN_C, l.M, planner.AUTO_PLANES_MIN_M, l.K, l.C * l.K * l.K, planner.AUTO_PLANES_MIN_CKK, g.CH, g.CW,
      l.K == 3 and string.format(" and, 3x3, C = %d <= %d, M = %d >= %d", l.C, planner.AUTO_PLANES_3X3_MAX_C, l.M,
        planner.AUTO_PLANES_3X3_MIN_M) or "")
  end
  return nil
end

-- igemm, or igemm_tc where the rule above gives it and a legal configuration
-- exists (the search a layer without params gets); why: the reason for igemm.
local function igemm_or_tc(l, why)
  local cc = l.target and l.target.cc or 75
  local g = common.conv_geom(l)
  if wgmma_layer(l, g) and l.M >= planner.AUTO_TC_MIN_M and l.C * l.K * l.K >= planner.AUTO_WG_MIN_CKK
      and pcall(resolve, import("conv2d_igemm_wg"), "conv2d_igemm_wg", l, nil, nil) then
    return "conv2d_igemm_wg", string.format("auto: igemm_wg, since the target is sm_90 (built as sm_90a: wgmma), " ..
      "C = %d >= %d, M = %d >= %d, C*K*K = %d >= %d, stride 1 and a %dx%d conv output (else %s)", l.C,
      planner.AUTO_TC_MIN_C, l.M, planner.AUTO_TC_MIN_M, l.C * l.K * l.K, planner.AUTO_WG_MIN_CKK, g.CH, g.CW,
      (why:gsub("^auto: ", "")))
  end
  if cc >= 80 and l.C >= planner.AUTO_TC_MIN_C and l.M >= planner.AUTO_TC_MIN_M
      and pcall(resolve, import("conv2d_igemm_tc"), "conv2d_igemm_tc", l, nil, nil) then
    return "conv2d_igemm_tc", string.format("auto: igemm_tc, since the target has TF32 tensor cores (sm_%d), " ..
      "C = %d >= %d and M = %d >= %d (else %s)", cc, l.C, planner.AUTO_TC_MIN_C, l.M, planner.AUTO_TC_MIN_M,
      (why:gsub("^auto: ", "")))
  end
  return "conv2d_igemm", why
end

-- Grouped layers (groups > 1): `depthwise` where groups = C = M (a thread's tile of
-- one channel's outputs from a register window), else `direct`, the template that
-- reads each map's group of channels; the other conv templates reduce over all
-- C channels for every map and refuse such layers in their checks.
function planner.grouped_strategy(l)
  if l.groups == l.C and l.M == l.C then
    return "conv2d_depthwise", string.format("auto: depthwise, since groups = C = M = %d", l.C)
  end
  return "conv2d_direct", string.format("auto: direct, the template that serves grouped layers " ..
    "(groups = %d: %d channels into %d maps a group)", l.groups, l.C // l.groups, l.M // l.groups)
end

-- Precision tf32 (`precision: tf32`): igemm_tc where the target has TF32 tensor
-- cores (every architecture sm_80 or newer), C >= 16 and M >= 16 and a legal
-- configuration exists (after planes' rule below on sm_90a): its products are then one
-- mma.sync a tile, not 3xTF32's three and the split, so the FFMA templates (winograd
-- included, whose transforms save 2.25x of the products of a 3x3 layer, against tensor
-- cores' 8x the FP32 rate of an H100) and igemm_wg (its check refuses tf32: no
-- one-product path) are passed over, and M >= 16 suffices where 3xTF32 needed 32 (fewer
-- maps leave a split input element fewer products to share its cost; without the split
-- that cost is gone). Elsewhere the fp32 rule.
planner.AUTO_TF32_MIN_C = 16
planner.AUTO_TF32_MIN_M = 16
-- 16-bit layers take the wgmma rules below (planes with pixels as M, igemm_wg) from 8 maps, a wgmma N
-- of 8 or a 16-map tile with its last maps idle, where igemm's FFMA took them before: on an H200 in
-- bf16 at 10,000 images (bench/scripts/planes_wr_device.sh, single kernels, L2 flushed; ms)
-- zoo-inception's 32 -> 8 5x5 same on 32x32 7.17 under igemm, 3.13 igemm_wg, 1.34 planes (rows
-- swept); zoo-k7pad's 32 -> 12 3x3 on 24x24 1.50 igemm, 0.58 igemm_wg (16-map tile), 0.63 planes.
-- Under 16 maps only where C*K*K >= AUTO_HALF_SMALL_C_MIN_CKK: zoo-deep512's 512 -> 10 1x1 took 0.071
-- under igemm_wg against 0.157, but zoo-linear's 40 -> 12 1x1 0.361 against igemm's 0.313.
planner.AUTO_HALF_WG_MIN_M = 8
-- Whether a 16-bit layer has the maps (and, under 16, the reduction) for those rules.
local function half_wg_maps(l)
  return l.M >= planner.AUTO_TF32_MIN_M
    or (l.M >= planner.AUTO_HALF_WG_MIN_M and l.C * l.K * l.K >= planner.AUTO_HALF_SMALL_C_MIN_CKK)
end
-- First of all on an sm_90a target: planes, whose tf32 path rounds each operand once and
-- issues one wgmma a step (3xTF32's three and the split gone), on stride-1 layers of
-- K >= 2, C >= AUTO_TF32_PLANES_MIN_C (12: planes' offset table takes any C, unlike
-- igemm_tc's 16-row slices), C*K*K >= AUTO_HALF_SMALL_C_MIN_CKK, M >= AUTO_TF32_MIN_M,
-- conv outputs of AUTO_WG_MIN_OUT pixels or more and, 3x3, padding and C <=
-- AUTO_PLANES_3X3_MAX_C. On an H200 at 10,000 images (bench/planes-tf32-2026-11-29.log and
-- planes-tf32-3x3-2026-11-29.log, single kernels, L2 flushed; tf32 planes / igemm_tc, ms):
-- every layer of 5x5 or 7x7 won: ece408-2018fa's conv2 (12 -> 24, 7x7) 2.91 / 5.26 (igemm's
-- FFMA there: C < 16), zoo-5x5-c64's conv2 16.35 / 22.83, zoo-7x7-large's conv2 56.3 / 67.8,
-- zoo-alex's conv2 (5x5 on 7x7) 1.65 / 1.86; padded 3x3 layers won (planes reads the padding
-- as the zeros it holds, igemm_tc tests each gathered element): zoo-vgg-same's conv1_2,
-- conv2_1, conv2_2, conv3_1 7.23 / 9.16, 3.31 / 4.77, 6.09 / 8.68, 3.84 / 4.52, but not its
-- conv3_2 of 256 channels, 13.08 / 8.57; unpadded 3x3 layers lost 3-23 % (zoo-wide3x3's conv3
-- and conv4, zoo-vgg3x3's conv3 and conv4, zoo-issue3x3's conv2 and conv3), but for
-- zoo-wide3x3's conv2, 4.01 / 4.32. ece408-2018sp's conv2 (C = 6) 0.893 / 0.935 (igemm):
-- left to igemm (one layer).
planner.AUTO_TF32_PLANES_MIN_C = 12
planner.AUTO_HALF_SMALL_C_MIN_CKK = 128
planner.AUTO_HALF_PLANES_MIN_C = 12
planner.AUTO_HALF_PLANES_MIN_COLS = 0.6   -- 16-bit planes, tr=0: conv output columns over the padded width
-- First layers in 16 bits (C < 16 and C*K*K below AUTO_HALF_SMALL_C_MIN_CKK: images of 1 to 3
-- channels) of AUTO_HALF_FIRST_MIN_M maps or more on sm_90a: igemm_wg, or igemm_tc where C*K*K <=
-- AUTO_HALF_FIRST_TC_MAX_CKK (one 3x3 tap set of one channel: igemm_wg's k16 slice would be
-- mostly padding), not direct's FFMA. On an H200 in bf16 at 10,000 images (bench/first-half-2026-11-29.log,
-- single kernels, L2 flushed; direct / igemm_wg / igemm_tc / planes, ms): zoo-vgg-same's conv1_1
-- (3 -> 64, 3x3 pad 1, 32x32) 2.24 / 1.01 / 1.85 / 1.27; zoo-5x5-c64's conv1 (1 -> 64, 3x3, 28x28)
-- 1.70 / 1.12 / 0.79 / 1.43; six first layers outside bench/specs: 1 -> 32 3x3 on 48x48 1.15 / 1.24 /
-- 0.56 / 2.11, 1 -> 64 3x3 on 32x32 1.79 / 1.03 / 1.09 / 1.28, 1 -> 64 5x5 on 28x28 1.25 / 0.60 /
-- 0.67 / 1.22, 3 -> 128 3x3 on 32x32 6.31 / 2.51 / 3.70 / 2.54, 3 -> 32 3x3 on 64x64 4.09 / 2.16 /
-- 2.68 / 3.59, 3 -> 64 5x5 on 32x32 8.15 (igemm's FFMA, auto before: 3.33) / 1.39 / 2.62 / 2.07.
-- Networks (bench/first-half-2026-11-29.log, bf16 at 10,000 images, GPU ms, before /
-- after): zoo-vgg-same 12.29 / 11.04, zoo-5x5-c64 6.46 / 5.63, zoo-wide3x3 4.73 / 4.57, ece408-2017
-- (1 -> 50, 5x5, pool fused) 1.010 / 0.876; but zoo-deep512 (1 -> 128, 3x3 pad 1, 2x2 max pool fused)
-- 10.18 / 11.12 under igemm_tc: direct's fused pool writes a quarter of the outputs, so a layer
-- with a pool keeps direct unless C*K*K > AUTO_HALF_FIRST_TC_MAX_CKK (ece408-2017's 25 gained).
-- Fewer maps (the course networks' 6 and 12) keep the rules below (not timed).
-- Since 2026-12-01 direct reads FP32 __constant__ weights in 16-bit layers whose patch it hoists
-- (a 16-bit one had been a load and a widening per product) and at the large batch computes up to
-- 4 columns a thread (2
-- under a 2x2 pool), storing them in pairs; it then beats those templates on first layers but
-- for one tap set of one channel into fewer than AUTO_HALF_FIRST_DIRECT_MIN_M maps. On an H200 in
-- bf16 at 10,000 images (bench/scripts/tr_store_device.sh EXTRA, single kernels, L2 flushed; direct
-- / the template before, ms): zoo-squeeze's 1 -> 64 on 48x48 1.618 / 1.837 (igemm_tc),
-- zoo-5x5-c64's 1 -> 64 on 28x28 0.517 / 0.784, zoo-1x1's 1 -> 64 on 24x24 0.368 / 0.431,
-- zoo-vgg-same's 3 -> 64 same on 32x32 0.888 / 1.010 (igemm_wg), zoo-residual's 3 -> 32 same
-- 0.458 / 0.546 (igemm_wg); but zoo-wide3x3's 1 -> 32 on 36x36 0.375 / 0.284 (igemm_tc). Larger or
-- strided kernels stay with igemm_wg: in whole networks (bench/scripts/half_nets_device.sh, the same
-- card and batch, per-kernel times) direct lost zoo-7x7-large's 1 -> 32 7x7 with its pool 10.95 /
-- 7.32, zoo-k7pad's 3 -> 32 5x5 1.31 / 0.50, ece408-2017's 1 -> 50 5x5 with its pool 0.322 / 0.272
-- and zoo-edge's 3 -> 64 3x3 of stride 3 0.464 / 0.257, so the rule asks K <= 3 and stride 1.
planner.AUTO_HALF_FIRST_MIN_M = 32
planner.AUTO_HALF_FIRST_TC_MAX_CKK = 9
planner.AUTO_HALF_FIRST_DIRECT_MIN_M = 64
planner.AUTO_HALF_FIRST_DIRECT_MAX_K = 3
-- (and fewer maps, where a tma layer alone reads the output, which direct then stores channels-last
-- (planner.tma_chains, l.hwc_first): zoo-wide3x3's 1 -> 32 on 36x36, 0.284 ms in igemm_tc, and the
-- tma layer's copy of its output 0.444, against direct's 0.375 storing C x H x W)

-- FP32 layers of large kernels through the Fourier transform (conv2d_fft): a stride-1 layer of
-- one group, K >= AUTO_FFT_MIN_K, C and M >= AUTO_FFT_MIN_CM, a padded input that a transform of
-- up to 64 points a side holds, and AUTO_FFT_MIN_GAIN or more times as many multiply-adds done
-- directly (K*K a conv output) as complex products (4 multiply-adds each) a frequency, at 64
-- images or more. Measured on an H200 (bench/scripts/fft_device.sh, FP32, whole networks with
-- and without the layers written fft, GPU us at 64 / 256 / 1,000 images): zoo-7x7-large's 32 ->
-- 64 7x7 on 61x61 (gain 17.5) 537 -> 274, 2050 -> 915, 7763 -> 3358; zoo-5x5-c64's 64 -> 128
-- 5x5 on 26x26 (5.6) 157 -> 123, 604 -> 417, 2253 -> 1484; zoo-bigk's 24 -> 48 9x9 on 15x15
-- (6.9) 77 -> 51, 141 -> 110, 391 -> 337; zoo-k7pad's 20 -> 24 7x7 padded on 9x9 (6.9), zoo-odd's
-- 30 -> 50 5x5 (5.1) and zoo-stem96's 40 -> 120 5x5 (6.6) 4-12 % faster. They lost where the gain
-- was 3 or less (zoo-alex's 48 -> 96 5x5 on 7x7 inputs, zoo-inception's 32 -> 8 5x5, zoo-bigk's
-- 6x6 on 7x7) or the channels few (ece408-2018fa's 12 -> 24 7x7: gain 4.2, 727 -> 851 us at
-- 1,000 images; its transforms cost more than its products). 3x3 layers (gain 2-3.5) lost on
-- every zoo network (planes and winograd run them on tensor cores or in fewer products).
planner.AUTO_FFT_MIN_K = 5
planner.AUTO_FFT_MIN_CM = 16
planner.AUTO_FFT_MIN_GAIN = 4
planner.AUTO_FFT_MIN_BATCH = 64
function planner.auto_fft(l)
  if l.op ~= "conv" or (l.groups or 1) > 1 or (l.precision and l.precision ~= "fp32") then return nil end
  if (l.dtype or "f32") ~= "f32" or l.K < planner.AUTO_FFT_MIN_K then return nil end
  if l.C < planner.AUTO_FFT_MIN_CM or l.M < planner.AUTO_FFT_MIN_CM then return nil end
  if l.batch and l.batch > 0 and l.batch < planner.AUTO_FFT_MIN_BATCH then return nil end
  local g = common.conv_geom(l)
  if g.S ~= 1 then return nil end
  local T = import("conv2d_fft")
  local ge = T.geom(l)
  if ge.FH > T.MAX_F or ge.FW > T.MAX_F then return nil end
  local gain = l.K * l.K * g.CH * g.CW / (4 * ge.NF)
  if gain < planner.AUTO_FFT_MIN_GAIN or not pcall(resolve, T, "conv2d_fft", l, nil, nil) then return nil end
  return "conv2d_fft", string.format("auto: fft, since precision is fp32, stride 1, K = %d >= %d, C = %d and M = %d " ..
    ">= %d, the %dx%d padded input fits a %dx%d transform and direct multiply-adds are %.1f >= %d times the " ..
    "transform's complex products (4 each) at %s", l.K, planner.AUTO_FFT_MIN_K, l.C, l.M, planner.AUTO_FFT_MIN_CM,
    ge.HP, ge.WP, ge.FH, ge.FW, gain, planner.AUTO_FFT_MIN_GAIN,
    (l.batch and l.batch > 0) and string.format("%d images", l.batch) or "the large batch")
end

-- 16-bit stride-1 layers of many channels through the bulk tensor copy engine (conv2d_tma: the input made
-- channels-last, then wgmma from a ring of TMA-fed stages) where the target is sm_90a: C >= AUTO_TMA_MIN_C
-- (a multiple of 8), M >= AUTO_TMA_MIN_M (a multiple of 8), K >= AUTO_TMA_MIN_K and a conv output of
-- AUTO_TMA_MIN_OUT pixels or more, at the large batch. Measured on an H200 in bf16 at 10,000 images
-- (bench/scripts/tma_template_device.sh, whole networks with and without these layers written tma, GPU
-- ms of the layer's kernels, the transpose's included, against auto's before): zoo-vgg-same's 128 -> 128
-- on 16x16 with its pool 1.53 / 1.83, 128 -> 256 on 8x8 0.71 / 1.17, 256 -> 256 on 8x8 with its pool
-- 1.08 / 2.56; zoo-deep512's 128 -> 256 on 16x16 2.53 / 3.61 and 256 -> 512 on 8x8 1.98 / 5.05;
-- zoo-wide3x3's 128 -> 128 on 14x14 with its pool 1.45 / 1.60. Not where C = 64 (zoo-wide3x3's 64 ->
-- 128 on 16x16 valid 1.39 / 0.98, zoo-vgg3x3's on 28x28 2.95 / 2.72, zoo-5x5-c64's 5x5 5.21 / 4.29:
-- the transpose and the shared memory's bandwidth (three quarters busy) eat the gain; zoo-vgg-same's
-- C = 64 layers and zoo-squeeze's won 6-8 %), on 3x3 outputs (zoo-alex's 96 -> 128 0.17 / 0.13) or
-- 1x1 kernels (zoo-1x1's 256 -> 128 on 22x22 3.37 / 1.95: two memory-bound passes).
planner.AUTO_TMA_MIN_C = 128
planner.AUTO_TMA_MIN_M = 64
planner.AUTO_TMA_MIN_K = 3
planner.AUTO_TMA_MIN_OUT = 64
-- (a layer in a tma chain, planner.tma_chains: C and M at least these, any kernel and output size; M = 32
-- since zoo-1x1's 128 -> 32 1x1 on 11x11, 0.208 ms in tma against igemm's 0.162, let the layer before it
-- store channels-last: 0.869 ms with its pool, about 1.25 C x H x W by the two networks' times)
planner.AUTO_TMA_CHAIN_MIN_C = 64
planner.AUTO_TMA_CHAIN_MIN_M = 32
-- (a layer that alone reads a conv2d_direct layer's output, which that stores channels-last, joins at
-- K <= this: zoo-squeeze's 64 -> 128 3x3 on 46x46 with its pool ran 5.59 ms in tma against planes'
-- 7.81 without the transpose's 1.56; zoo-5x5-c64's 5x5 4.72 against 4.29 even without its 0.51)
planner.AUTO_TMA_DIRECT_MAX_K = 3
-- (a layer of K <= AUTO_TMA_DIRECT_MAX_K and AUTO_TMA_MIN_M maps or more whose output goes only to a tma
-- layer joins from this many channels: zoo-wide3x3's 32 -> 64 3x3 on 34x34 with its pool, 0.444 ms
-- copy + 1.049 in tma against planes' 1.730 and the next layer's copy 0.187. Not at M = 32:
-- zoo-residual's 32 -> 32 on 32x32 1.595 ms in tma against planes' 1.194)
planner.AUTO_TMA_HANDOFF_MIN_C = 32

-- Whether layer l may be conv2d_tma under auto at all: 16-bit, sm_90a, the large batch, and the
-- template's check (stride 1, one group, C and M multiples of 8).
local function tma_serves(l)
  if l.op ~= "conv" or not (l.precision == "bf16" or l.precision == "fp16") then return false end
  if not (l.target and l.target.sm90a) or (l.batch and l.batch > 0) then return false end
  return pcall(resolve, import("conv2d_tma"), "conv2d_tma", l, nil, nil)
end

-- Whether template tname stores layer l's output channels-last (its T.hwc_out_ok) with the parameters
-- it resolves to (given: the spec's or a record's); false where it has no such store or no legal
-- configuration (resolve's refusal is then add_conv's to report).
local function stores_hwc(tname, l, given, index)
  local T = import(tname)
  if not T.hwc_out_ok then return false end
  local ok, p = pcall(resolve, T, tname, l, given, index)
  return ok and T.hwc_out_ok(l, p) or false
end

function planner.auto_tma(l)
  if l.op ~= "conv" then return nil end
  local g = common.conv_geom(l)
  if l.tma_chain then
    -- (planner.tma_chains checked tma_serves and the bounds)
    return "conv2d_tma", string.format("auto: tma, since precision is %s, the target is sm_90 (built as sm_90a), " ..
      "C = %d >= %d and M = %d >= %d, and %s", l.precision, l.C, planner.AUTO_TMA_CHAIN_MIN_C, l.M,
      planner.AUTO_TMA_CHAIN_MIN_M, l.tma_chain)
  end
  if l.K < planner.AUTO_TMA_MIN_K or l.C < planner.AUTO_TMA_MIN_C or l.M < planner.AUTO_TMA_MIN_M
      or g.CH * g.CW < planner.AUTO_TMA_MIN_OUT then return nil end
  if not tma_serves(l) then return nil end
  return "conv2d_tma", string.format("auto: tma, since precision is %s, the target is sm_90 (built as sm_90a: wgmma " ..
    "and the bulk tensor copy engine), stride 1, C = %d >= %d, M = %d >= %d, K = %d >= %d, a %dx%d conv output and " ..
    "the kernels are for the large batch", l.precision, l.C, planner.AUTO_TMA_MIN_C, l.M, planner.AUTO_TMA_MIN_M, l.K,
    planner.AUTO_TMA_MIN_K, g.CH, g.CW)
end


function planner.auto_strategy(l)
  if (l.groups or 1) > 1 then return planner.grouped_strategy(l) end
  local ph = import("lib/planes_half")   -- (planes' 16-bit and tf32 defaults: tr, sw)
  local ckk = l.C * l.K * l.K
  local cc = l.target and l.target.cc or 75
  if l.precision == "tf32" and l.target and l.target.sm90a then
    local g = common.conv_geom(l)
    if g.S == 1 and l.K >= 2 and l.C >= planner.AUTO_TF32_PLANES_MIN_C and ckk >= planner.AUTO_HALF_SMALL_C_MIN_CKK
        and l.M >= planner.AUTO_TF32_MIN_M and g.CH * g.CW >= planner.AUTO_WG_MIN_OUT
        and (l.K ~= 3 or (l.C <= planner.AUTO_PLANES_3X3_MAX_C and (g.pt > 0 or g.pl > 0)))
        and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
      return "conv2d_planes", string.format("auto: planes, since precision is tf32 (one TF32 product a step), the " ..
        "target is sm_90 (built as sm_90a: wgmma), stride 1, K = %d >= 2, C = %d >= %d, C*K*K = %d >= %d, M = %d >= %d " ..
        "and a %dx%d conv output%s", l.K, l.C, planner.AUTO_TF32_PLANES_MIN_C, ckk, planner.AUTO_HALF_SMALL_C_MIN_CKK,
        l.M, planner.AUTO_TF32_MIN_M, g.CH, g.CW,
        l.K == 3 and string.format(" (3x3: padded, C <= %d)", planner.AUTO_PLANES_3X3_MAX_C) or "")
    end
    -- fewer channels: planes where its rows are swept (sw=1: a fragment loaded once feeds K products);
    -- ece408-2018sp's conv2 (6 -> 16, 5x5) 0.403 ms against igemm's 0.934 and planes' tiles' 0.884
    -- (bench/scripts/planes_sw_tf32_device.sh, H200, tf32, 10,000 images)
    if g.S == 1 and l.C < planner.AUTO_TF32_PLANES_MIN_C and ckk >= planner.AUTO_HALF_SMALL_C_MIN_CKK
        and l.M >= planner.AUTO_TF32_MIN_M and g.CH * g.CW >= planner.AUTO_WG_MIN_OUT and ph.default_sw(l) == 1
        and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
      return "conv2d_planes", string.format("auto: planes (rows swept), since precision is tf32 (one TF32 product a " ..
        "step), the target is sm_90 (built as sm_90a: wgmma), stride 1, C = %d < %d, C*K*K = %d >= %d, M = %d >= %d " ..
        "and K = %d >= %d", l.C, planner.AUTO_TF32_PLANES_MIN_C, ckk, planner.AUTO_HALF_SMALL_C_MIN_CKK, l.M,
        planner.AUTO_TF32_MIN_M, l.K, ph.SW_MIN_K)
    end
  end
  if l.precision == "tf32" and cc >= 80 and l.C >= planner.AUTO_TF32_MIN_C and l.M >= planner.AUTO_TF32_MIN_M
      and pcall(resolve, import("conv2d_igemm_tc"), "conv2d_igemm_tc", l, nil, nil) then
    return "conv2d_igemm_tc", string.format("auto: igemm_tc, since precision is tf32 (one TF32 product a tile), " ..
      "the target has TF32 tensor cores (sm_%d), C = %d >= %d and M = %d >= %d", cc, l.C, planner.AUTO_TF32_MIN_C,
      l.M, planner.AUTO_TF32_MIN_M)
  end
  -- bf16 and fp16: igemm_wg where the target is sm_90a, C >= 16, M >= 16 and the
  -- conv output has 9 pixels or more, any stride (the gather takes the stride in
  -- each column's origin; FP32's stride-1 condition weighs 3xTF32's products, which
  -- 16-bit layers do not pay): one m64nNk16 product of 16-bit operands staged as
  -- they are stored; elsewhere the rule below (one m16n8k16 product a tile, slices
  -- padded to 16 rows). Measured on an H200 in bf16
  -- (bench/RESULTS.md, 2026-11-29): igemm_wg 200-270 TFLOP/s on stride-1 3x3
  -- layers where igemm_tc took 30-34; a strided layer not timed yet.
  local g16 = common.conv_geom(l)
  -- Before it, planes with maps as wgmma's M (tr=1, whose default takes stride-1 layers
  -- of 64 maps or more, a multiple of 8, with conv outputs 12 or more columns wide, or 8 to
  -- 11 with whole images stacked a block) where K >= 2: both operands read by descriptor
  -- from shared memory, the input staged once a block. On an H200 in bf16 at 10,000 images
  -- 1.3-1.5x igemm_wg's time on 3x3 layers of 64 to 128 maps on 14x14 to 32x32 outputs, level
  -- on one; on 8x8 outputs 1.5x with three images a block, where one lost
  -- (lib/planes_half.lua, H.default_tr).
  local half = l.precision == "bf16" or l.precision == "fp16"
  -- First, 1x1 layers of stride 1 without padding or a pool to fuse, at the large batch: pointwise
  -- (a plain matrix product over the images' pixels, both operands copied as they lie), where the
  -- planes have an even number of pixels (runs of 2 or more: cp.async; odd planes load element by
  -- element), C >= AUTO_TC_MIN_C and M >= AUTO_HALF_WG_MIN_M. On an H200 in bf16 at 10,000 images
  -- (bench/scripts/pointwise_device.sh, single kernels, L2 flushed; pointwise / auto before, ms):
  -- zoo-1x1's 64 -> 256 on 22x22 2.055 / 4.447 (igemm_wg), zoo-mobile's 32 -> 64 on 32x32 0.550 /
  -- 1.053, 64 -> 128 on 16x16 0.346 / 0.716, 128 -> 256 on 8x8 0.281 / 0.561, zoo-stem96's 96 -> 40
  -- on 24x24 0.652 / 0.680, zoo-linear's 40 -> 12 on 26x26 0.293 / 0.313 (igemm); but odd planes
  -- (zoo-1x1's 128 -> 32 on 11x11 0.675 / 0.158, zoo-awkward's 144 -> 200 on 15x15 5.06 / 2.28) and
  -- zoo-1x1's 256 -> 128 with its 2x2 pool (2.672 unpooled, then the pool kernel, against igemm_wg's
  -- 1.946 with the pool fused; 2.177 unpooled in the final kernel, 2.447 with the pool fused, fp=1,
  -- its weights resident: zoo-1x1 5.58 ms against 4.49 with igemm_wg there). Smaller batches
  -- (buckets) not timed: they keep the rules below.
  if half and cc >= 80 and l.K == 1 and g16.S == 1 and not g16.padded and g16.kind == "none"
      and (l.H * l.W) % 2 == 0 and l.C >= planner.AUTO_TC_MIN_C and l.M >= planner.AUTO_HALF_WG_MIN_M
      and not (l.batch and l.batch > 0)
      and pcall(resolve, import("conv2d_pointwise"), "conv2d_pointwise", l, nil, nil) then
    return "conv2d_pointwise", string.format("auto: pointwise, since precision is %s, the layer is 1x1 of stride 1 " ..
      "without padding or a pool, its %dx%d planes have an even number of pixels, C = %d >= %d, M = %d >= %d and " ..
      "the kernels are for the large batch (sm_%d: mma.sync k16, cp.async)", l.precision, l.H, l.W, l.C,
      planner.AUTO_TC_MIN_C, l.M, planner.AUTO_HALF_WG_MIN_M, cc)
  end
  if half and wgmma_layer(l, g16) and l.K >= 2 and ph.default_tr(l) == 1
      and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
    return "conv2d_planes", string.format("auto: planes (maps as wgmma's M), since precision is %s, the target " ..
      "is sm_90 (built as sm_90a: wgmma), C = %d >= %d, M = %d >= %d, K = %d >= 2, stride 1 and a %dx%d conv output " ..
      "(%s)", l.precision, l.C, planner.AUTO_TC_MIN_C, l.M, ph.TR_MIN_M, l.K, g16.CH, g16.CW,
      g16.CW >= ph.TR_MIN_CW and string.format("%d columns >= %d", g16.CW, ph.TR_MIN_CW)
        or string.format("%d columns: whole images stacked a block", g16.CW))
  end
  -- Then planes with pixels as wgmma's M (tr=0; its weights resident where they fit, wr; its rows
  -- swept from K >= 5, sw) for stride-1 layers of AUTO_HALF_WG_MIN_M to 63 maps (a multiple of 8: the
  -- weights' 16-byte copies) with K >= 2 and
  -- no pool to fuse (igemm_wg fuses it, tr=0 does not), whose conv output fills at least
  -- AUTO_HALF_PLANES_MIN_COLS of the padded width a band computes over. On an H200 in bf16 at
  -- 10,000 images (bench/scripts/planes_wr_device.sh, single kernels, L2 flushed; planes /
  -- igemm_wg, ms): zoo-residual's 32 -> 32 3x3 same on 32x32 1.20 / 1.59, zoo-inception's
  -- 32 -> 24 3x3 same on 32x32 0.99 / 1.46, zoo-k7pad's 20 -> 24 7x7 on 9x9 padded to 15x15
  -- 0.52 / 0.89, zoo-linear's 16 -> 40 3x3 on 26x26 0.83 / 0.82; zoo-bigk's 24 -> 48 9x9 on a
  -- 7x7 output (7 of 15 columns) 1.25 / 0.97.
  if half and wgmma_layer(l, g16) and l.K >= 2 and half_wg_maps(l) and l.M < ph.TR_MIN_M
      and l.M % 8 == 0 and g16.kind == "none" and g16.CW >= planner.AUTO_HALF_PLANES_MIN_COLS * (l.W + g16.pl + g16.pr)
      and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
    return "conv2d_planes", string.format("auto: planes (pixels as wgmma's M), since precision is %s, the target " ..
      "is sm_90 (built as sm_90a: wgmma), C = %d >= %d, %d <= M = %d < %d (a multiple of 8), K = %d >= 2, stride 1, " ..
      "no pool and %d of the %d padded columns outputs", l.precision, l.C, planner.AUTO_TC_MIN_C,
      planner.AUTO_HALF_WG_MIN_M, l.M, ph.TR_MIN_M, l.K, g16.CW, l.W + g16.pl + g16.pr)
  end
  -- 16-bit layers of fewer than 16 channels (the course networks' second layers) on sm_90a,
  -- C*K*K >= AUTO_HALF_SMALL_C_MIN_CKK and M >= 16: planes where C >= AUTO_HALF_PLANES_MIN_C
  -- (C is padded to 16 with zero channels: a quarter wasted at 12), stride 1 and K >= 2, else
  -- igemm_wg (its offset table pads the reduction to 16 rows alone). On an H200 in bf16 at 10,000
  -- images (bench/scripts/small_c_half_device.sh): ece408-2018fa's conv2 (12 -> 24, 7x7) 1.86 ms
  -- under planes, 2.97 igemm_wg, 3.18 igemm_tc, 6.84 under igemm's FFMA (the rule before);
  -- ece408-2018sp's (6 -> 16, 5x5) 0.725 igemm_wg, 0.685 igemm_tc, 0.99-1.49 planes, 1.14 igemm.
  if half and l.target and l.target.sm90a and l.C < planner.AUTO_TC_MIN_C and l.C * l.K * l.K >= planner.AUTO_HALF_SMALL_C_MIN_CKK
      and l.M >= planner.AUTO_TF32_MIN_M and g16.CH * g16.CW >= planner.AUTO_WG_MIN_OUT then
    local why = string.format("since precision is %s, the target is sm_90 (built as sm_90a: wgmma), C = %d < %d, " ..
      "C*K*K = %d >= %d and M = %d >= %d", l.precision, l.C, planner.AUTO_TC_MIN_C, l.C * l.K * l.K,
      planner.AUTO_HALF_SMALL_C_MIN_CKK, l.M, planner.AUTO_TF32_MIN_M)
    if l.C >= planner.AUTO_HALF_PLANES_MIN_C and g16.S == 1 and l.K >= 2
        and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
      return "conv2d_planes", string.format("auto: planes, %s, C = %d >= %d (a quarter or less of the 16 padded " ..
        "channels zeros), stride 1 and K = %d >= 2", why, l.C, planner.AUTO_HALF_PLANES_MIN_C, l.K)
    end
    -- fewer channels: planes where its rows are swept (sw=1, K >= 5: a fragment loaded once feeds K
    -- products, which pays for the padded channels); ece408-2018sp's conv2 (6 -> 16, 5x5) 0.328 ms
    -- against igemm_wg's 0.726 (bench/scripts/planes_wr_device.sh, H200, bf16, 10,000 images)
    if g16.S == 1 and ph.default_sw(l) == 1
        and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, nil, nil) then
      return "conv2d_planes", string.format("auto: planes (rows swept), %s, stride 1 and K = %d >= %d", why, l.K,
        ph.SW_MIN_K)
    end
    if pcall(resolve, import("conv2d_igemm_wg"), "conv2d_igemm_wg", l, nil, nil) then
      return "conv2d_igemm_wg", "auto: igemm_wg, " .. why
    end
  end
  if half and l.target and l.target.sm90a and l.C < planner.AUTO_TC_MIN_C and ckk < planner.AUTO_HALF_SMALL_C_MIN_CKK
      and l.M >= planner.AUTO_HALF_FIRST_MIN_M and g16.CH * g16.CW >= planner.AUTO_WG_MIN_OUT
      and (g16.kind == "none" or ckk > planner.AUTO_HALF_FIRST_TC_MAX_CKK) then
    local why = string.format("since precision is %s, the target is sm_90 (built as sm_90a), C = %d < %d, " ..
      "C*K*K = %d < %d and M = %d >= %d", l.precision, l.C, planner.AUTO_TC_MIN_C, ckk,
      planner.AUTO_HALF_SMALL_C_MIN_CKK, l.M, planner.AUTO_HALF_FIRST_MIN_M)
    local tc = ckk <= planner.AUTO_HALF_FIRST_TC_MAX_CKK
    if l.K <= planner.AUTO_HALF_FIRST_DIRECT_MAX_K and g16.S == 1
        and (not tc or l.M >= planner.AUTO_HALF_FIRST_DIRECT_MIN_M or l.hwc_first)
        and pcall(resolve, import("conv2d_direct"), "conv2d_direct", l, nil, nil) then
      return "conv2d_direct", string.format("auto: direct, %s, K = %d <= %d, stride 1 and %s (FP32 constant " ..
        "weights, columns in pairs)", why, l.K, planner.AUTO_HALF_FIRST_DIRECT_MAX_K,
        (tc and l.M < planner.AUTO_HALF_FIRST_DIRECT_MIN_M) and l.hwc_first
          or tc and string.format("M = %d >= %d", l.M, planner.AUTO_HALF_FIRST_DIRECT_MIN_M)
          or string.format("C*K*K = %d > %d", ckk, planner.AUTO_HALF_FIRST_TC_MAX_CKK))
    end
    local order = tc and { "conv2d_igemm_tc", "conv2d_igemm_wg" } or { "conv2d_igemm_wg", "conv2d_igemm_tc" }
    local notes = { tc and string.format(" (C*K*K = %d <= %d: igemm_tc's slices)", ckk,
      planner.AUTO_HALF_FIRST_TC_MAX_CKK) or "", string.format(" (%s has no legal configuration)", order[1]:sub(8)) }
    for i, t in ipairs(order) do
      if pcall(resolve, import(t), t, l, nil, nil) then
        return t, string.format("auto: %s, %s%s", t:sub(8), why, notes[i])
      end
    end
  end
  if half and wgmma_layer(l, g16, true)
      and half_wg_maps(l)
      and pcall(resolve, import("conv2d_igemm_wg"), "conv2d_igemm_wg", l, nil, nil) then
    return "conv2d_igemm_wg", string.format("auto: igemm_wg, since precision is %s (one m64nNk16 product of " ..
      "16-bit operands), the target is sm_90 (built as sm_90a: wgmma), C = %d >= %d, M = %d >= %d " ..
      "and a %dx%d conv output%s", l.precision, l.C, planner.AUTO_TC_MIN_C, l.M, planner.AUTO_HALF_WG_MIN_M,
      g16.CH, g16.CW, g16.S > 1 and string.format(" (stride %d)", g16.S) or "")
  end
  if half and cc >= 80 and l.C >= planner.AUTO_TF32_MIN_C
      and l.M >= planner.AUTO_TF32_MIN_M
      and pcall(resolve, import("conv2d_igemm_tc"), "conv2d_igemm_tc", l, nil, nil) then
    return "conv2d_igemm_tc", string.format("auto: igemm_tc, since precision is %s (one m16n8k16 product a " ..
      "tile), the target has its tensor cores (sm_%d), C = %d >= %d and M = %d >= %d", l.precision, cc, l.C,
      planner.AUTO_TF32_MIN_C, l.M, planner.AUTO_TF32_MIN_M)
  end
  -- 16-bit layers of fewer maps than wgmma's rules take, and C*K*K >= AUTO_HALF_SMALL_C_MIN_CKK:
  -- direct (its channel loop, cl=1, where the layer does not unroll whole), not igemm's FFMA tiles,
  -- whose maps pad to the tile: on an H200 in bf16 at 10,000 images zoo-squeeze's 128 -> 3 3x3 on
  -- 22x22 took 1.107 ms under direct with 4 columns a thread against igemm's 2.408
  -- (bench/scripts/tr_store_device.sh EXTRA). (Shallower ones keep igemm: two such layers alike
  -- would share direct's kernel and its __constant__ weights, which the planner refuses.)
  if half and l.M < planner.AUTO_HALF_WG_MIN_M and ckk >= planner.AUTO_HALF_SMALL_C_MIN_CKK
      and pcall(resolve, import("conv2d_direct"), "conv2d_direct", l, nil, nil) then
    return "conv2d_direct", string.format("auto: direct, since precision is %s, M = %d < %d (the maps of " ..
      "wgmma's rules) and C*K*K = %d >= %d", l.precision, l.M, planner.AUTO_HALF_WG_MIN_M, ckk,
      planner.AUTO_HALF_SMALL_C_MIN_CKK)
  end
  local planes, why = planes_rule(l)
  if planes then return planes, why end
  if l.C <= planner.AUTO_DIRECT_MAX_C and ckk <= planner.AUTO_DIRECT_MAX_CKK then
    return "conv2d_direct", string.format("auto: direct, since C = %d <= %d and C*K*K = %d <= %d",
      l.C, planner.AUTO_DIRECT_MAX_C, ckk, planner.AUTO_DIRECT_MAX_CKK)
  end
  if l.K == 3 and (l.stride or 1) <= 1 and l.C >= planner.AUTO_WINOGRAD_MIN_C and l.C % 8 == 0
      and l.M % 32 == 0 then
    local g = common.conv_geom(l)
    local cover = 4 * ((g.CH + 1) // 2) * ((g.CW + 1) // 2) / math.max(1, g.CH * g.CW)
    if cover > planner.AUTO_WINOGRAD_MAX_COVER then
      return igemm_or_tc(l, string.format("auto: igemm, since winograd's 2x2 output tiles would cover %.2fx " ..
        "the %dx%d conv output (more than %.1fx)", cover, g.CH, g.CW, planner.AUTO_WINOGRAD_MAX_COVER))
    end
    local W = import("conv2d_winograd")
    local why = W.check(l, (values(W, "conv2d_winograd", l)))
    if not why then
      return "conv2d_winograd", string.format("auto: winograd, since K = 3, stride 1, C = %d (a multiple of 8, " ..
        "at least %d), M = %d (a multiple of 32) and its default tile fits the target", l.C,
        planner.AUTO_WINOGRAD_MIN_C, l.M)
    end
    return igemm_or_tc(l, "auto: igemm, since winograd's default tile does not fit the target: " .. why)
  end
  return igemm_or_tc(l, string.format("auto: igemm, since %s",
    l.C > planner.AUTO_DIRECT_MAX_C and string.format("C = %d > %d", l.C, planner.AUTO_DIRECT_MAX_C)
      or string.format("C*K*K = %d > %d", ckk, planner.AUTO_DIRECT_MAX_CKK)))
end

-- `strategy: auto` for an fc layer (the default): `vec`, its loads float4,
-- float2 or single floats as the input size allows. On an H100 (2026-11-26,
-- bench/journal/2026-11.md) vec's default ran 1,944-45,000 inputs into 10 outputs 3.2-3.5x
-- faster than tiled's without a split and 6.0-8.6x with its sm_90 default split
-- (22,050 inputs through float2 loads: 8.4x; 10,933 through single floats: 6.0x),
-- and the course's 140-500 inputs into 10 outputs 2.1-3.7x.
--
-- Where the network is generated for a small batch (l.batch, the bucket: `--batch`
-- of generate, build and run, or a library call's batch), `gemv`: vec's 128-image
-- tiles leave a few blocks to stream all the weights, where gemv splits each
-- output's reduction over a block and reads every weight once per 8 images.
planner.AUTO_GEMV_MAX_BATCH = 64

function planner.auto_fc(l)
  local IN = l.C * l.H * l.W
  if l.batch and l.batch > 0 and l.batch <= planner.AUTO_GEMV_MAX_BATCH then
    return "fc_gemv", string.format("auto: gemv, since the network is generated for %d image%s (at most %d)",
      l.batch, l.batch == 1 and "" or "s", planner.AUTO_GEMV_MAX_BATCH)
  end
  local v = IN % 4 == 0 and "float4" or IN % 2 == 0 and "float2" or "single-float"
  return "fc_vec", string.format("auto: vec (%s loads for %d inputs)", v, IN)
end

-- A conv layer generated for a small batch: `direct` with its small-batch
-- defaults (the map groups split over blocks until every SM has one) where its
-- unrolled body allows and the layer is shallow (C up to AUTO_SMALL_DIRECT_MAX_C,
-- C*K*K up to AUTO_SMALL_DIRECT_MAX_CKK, a legal configuration), whatever the
-- spec's strategy, whose params are for the large
-- batch: at one image the tiled strategies' blocks are a handful (ece408-2018fa's
-- conv2 under slide's 16-row tiles: 2 blocks). Elsewhere `igemm` in small tiles
-- (32 pixels, 2x4 a thread), its default tile being 128 pixels of 8x8 a thread.
-- Returns { template, why, params } or nil.
planner.AUTO_SMALL_DIRECT_MAX_CKK = 1024
planner.AUTO_SMALL_DIRECT_MAX_C = 16
planner.AUTO_SMALL_DIRECT_MAX_CKK_8 = 160
-- And from two images on, fewer than AUTO_SMALL_DIRECT_MAX_C_8 channels where K >= 3 and
-- M >= AUTO_TC_MIN_M (the large-batch choice then has tensor cores): 16-channel 3x3 layers
-- (C*K*K = 144) ran 3-4x slower under direct than under the large-batch choice on an H200
-- (bench/layer-candidates-2026-11-29.log, single kernels, L2 flushed, direct / igemm_tc /
-- winograd / planes, us): zoo-vgg3x3's conv2 (16 -> 32 on 62x62, pool) 154.6 / 50.4 / 54.4 /
-- 64.1 at 64 images and 43.9 / 12.0 / 11.5 / 11.1 at 8; zoo-linear's conv2 (16 -> 40 on
-- 28x28) 60.0 / 18.1 / 25.2 / 22.6 at 64 and 36.6 / 17.0 / 8.5 / 12.4 at 8. 1x1 layers were
-- not measured; fashion-resnet's 16 -> 16 3x3 layers (M < 32) under igemm's FFMA took its
-- network from 61.2 to 63.5 us at 8 images, so they keep direct.
planner.AUTO_SMALL_DIRECT_MAX_C_8 = 16
-- Four stages (three slices in flight, cp.async on sm_80+): a block of 8x32 at one image
-- is one warp, its time a chain of slice loads; on an H200 (2026-11-30, against two stages,
-- whole networks at one image, bench/scripts/ab_images.sh, log bench/igemm-stages-2026-11-30.log)
-- 16 of 19 networks faster (ece408-2018fa 20.5 -> 19.1 us, zoo-inception 29.5 -> 27.1,
-- zoo-alex 35.0 -> 32.5, zoo-issue3x3 14.8 -> 13.1), zoo-odd, zoo-squeeze and zoo-wide3x3
-- 0.3-0.9 us slower (two rounds, about the rounds' spread).
planner.SMALL_IGEMM = { bn = 32, tm = 2, tn = 4, stages = 4 }

-- Split reductions (conv2d_igemm's `split`): at one image a deep layer's small
-- tiles are few (ResNet-18's 512-map 3x3 layer on 7x7 maps: 2 column tiles x 64
-- map tiles of one warp each, 128 warps for 132 SMs), and each block walks the
-- whole C*K*K = 4608 reduction alone. Split S ways, S blocks share a tile's
-- reduction, each a run of whole slices, and splitk_reduce adds their partial
-- sums in order. S: the least power of two (up to SPLIT_MAX) that gives the
-- target's SMs SPLIT_WARPS_PER_SM warps each, while every part keeps at least
-- SPLIT_MIN_DEPTH of the reduction and a whole number of slices; at one image, where no
-- power of two divides the slices, the least other divisor that reaches the warps (else
-- the largest up to SPLIT_MAX), and where none does, a ragged split (parts of
-- ceil(slices / S) slices, the last shorter); 1 where the tiles already give that many warps. A layer pooling 2x2 in the epilogue splits
-- too (its partials keep the GEMM columns, splitk_reduce pools). The SM count is the target's (a JIT's device),
-- 100 where unknown (a fat binary, `generate` without a device). The thresholds
-- are estimates, not yet timed on a GPU.
planner.SPLIT_MAX = 16
planner.SPLIT_WARPS_PER_SM = 8
planner.SPLIT_MIN_DEPTH = 64
planner.SPLIT_UNKNOWN_SMS = 100
planner.SPLIT_MAX_WIDE = 32

-- The split of layer l under conv2d_igemm's parameters p (split 1; tc: conv2d_igemm_tc's,
-- whose warps own tm x 8*tn tiles), and why: 1 and nil, or S > 1 and the reason's words.
function planner.split_of(l, p, tc)
  -- (16-bit tensors: not split yet; conv2d_igemm stores partial sums in its output's type)
  if l.dtype and l.dtype ~= "f32" then return 1, nil end
  local g = common.conv_geom(l)
  -- the GEMM columns an image: four a pooled output where the epilogue pools 2x2
  local cols = common.fused_pool2(g) and 4 * g.OH * g.OW or g.CH * g.CW
  local R = l.C * l.K * l.K
  if R % p.bk ~= 0 then return 1, nil end
  local slices = R // p.bk
  local tiles = common.ceil_div((l.batch or 1) * cols, p.bn) * common.ceil_div(l.M, p.bm)
  local warps = tiles * (tc and (p.bm // p.tm) * (p.bn // (8 * p.tn)) or math.max(1, (p.bm // p.tm) * (p.bn // p.tn) // 32))
  local known = l.target and l.target.sms and l.target.sms > 0
  local sms = known and l.target.sms or planner.SPLIT_UNKNOWN_SMS
  local want = sms * planner.SPLIT_WARPS_PER_SM
  -- the least divisor d of the slices in [lo, hi] whose parts keep SPLIT_MIN_DEPTH and whose
  -- warps reach want, else the largest such d, else S
  local function divisor_split(S, lo, hi)
    for d = lo, hi do
      if slices % d == 0 and R // d >= planner.SPLIT_MIN_DEPTH then
        S = d
        if warps * d >= want then break end
      end
    end
    return S
  end
  local S = 1
  while S < planner.SPLIT_MAX and warps * S < want and slices % (2 * S) == 0
      and R // (2 * S) >= planner.SPLIT_MIN_DEPTH do
    S = 2 * S
  end
  if S == 1 and warps < want and (l.batch or 1) == 1 then
    -- no even number of whole slices (an odd C*K*K has only odd slice counts: zoo-awkward's
    -- C*K*K = 825 in 165 slices of 5, one 32-thread block of 8x32 a tile, 261 warps at one
    -- image): the least divisor of the slice count that reaches the warps, else the largest
    -- up to SPLIT_MAX, each part keeping SPLIT_MIN_DEPTH. Measured at one image only (an
    -- H200: zoo-awkward 113.8 -> 72.9 us); from two images on small_split tries other slice
    -- depths instead.
    S = divisor_split(S, 3, planner.SPLIT_MAX)
    if S == 1 then
      -- no divisor either (a prime slice count: zoo-awkward's conv4, C*K*K = 639 in 71 slices
      -- of 9, 144 one-warp blocks at one image): a ragged split, every part ceil(slices / S)
      -- slices but the last, the least S up to SPLIT_MAX whose warps reach want (else the
      -- largest), each part keeping SPLIT_MIN_DEPTH and the last at least one slice. Measured
      -- on an H200 (bench/RESULTS.md, "One image: a ragged split"): zoo-awkward at one image
      -- 51.9 -> 42.3 us (conv4 17.6 -> 8.9 + 2.4 for splitk_reduce; conv2's 17 slices in 9
      -- and 8 another 1.2 us off)
      for d = 2, planner.SPLIT_MAX do
        local q = common.ceil_div(slices, d)
        if slices - (d - 1) * q >= 1 and q * p.bk >= planner.SPLIT_MIN_DEPTH then
          S = d
          if warps * d >= want then break end
        end
      end
    end
  end
  if S > 1 and warps * S < want then
    -- the powers of two stop short (a slice count with few factors of two: zoo-bigk's conv2
    -- at 8 images, C*K*K = 1944 in 216 slices of 9, stops at 8 parts, 128 warps for 1,056):
    -- the least larger divisor up to SPLIT_MAX_WIDE that reaches the warps, else the largest
    -- (zoo-bigk at 8 images 112.2 -> 58.4 us on an H200, bench/RESULTS.md)
    S = divisor_split(S, S + 1, planner.SPLIT_MAX_WIDE)
  end
  if S == 1 then return 1, nil end
  local q = common.ceil_div(slices, S)
  return S, string.format("split %d ways (C*K*K = %d in parts of %d%s): %d warp%s at %d image%s, under %d for " ..
    "each of %s %d SMs", S, R, q * p.bk, slices % S ~= 0 and string.format(", the last %d", R - (S - 1) * q * p.bk) or "",
    warps, warps == 1 and "" or "s", l.batch or 1, (l.batch or 1) == 1 and "" or "s",
    planner.SPLIT_WARPS_PER_SM, known and "the target's" or "an assumed", sms)
end

-- From two images on (buckets 2..64), a deep layer keeps its large-batch choice
-- unless that launches fewer blocks than the target has SMs (SMALL_SPLIT_BLOCKS_PER_SM
-- a multiprocessor; the SM count as split_of takes it): ResNet-18's 512-map layer on
-- 7x7 maps at 8 images gives igemm_tc's 64x128 tiles 32 blocks, and zoo-bigk's conv3
-- 2. There the layer takes igemm_tc (the target has TF32 tensor cores and C, M reach
-- auto's thresholds AUTO_TC_MIN_C, AUTO_TC_MIN_M; products in FP32 accuracy), else
-- igemm, in the template's default tiles, its reduction split as split_of splits it
-- (by warps an SM), where that split is more than 1 and gives more blocks than the
-- large-batch choice. The default tiles and not one image's 32-pixel ones: with 8
-- images and more the columns are enough that a split of the default tiles reaches the
-- SMs, and an 8x8 thread tile feeds 64 FMAs from 16 shared-memory reads where 2x4 feeds
-- 8 from 6 (a third of the FMA rate, common.cost's reuse); igemm_tc's tiles beat
-- igemm's on 11 of 13 zoo layers at the large batch. Measured on an H200 (132 SMs, 8
-- images, against the large-batch choice): ResNet-18 2176 -> 1020 us, MobileNet V2 1024
-- -> 599, zoo-vgg-same 229 -> 117, zoo-wide3x3 115 -> 63, zoo-deep512 183 -> 92, but
-- zoo-7x7-large 127 -> 187: its 7x7 layer under planes launches a near-full wave
-- (between 100 and 131 blocks of wgmma tiles), which a split of igemm_tc loses to. So
-- the rule switches only a choice that fills fewer than half the SMs.
planner.SMALL_SPLIT_BLOCKS_PER_SM = 0.5
-- But from SMALL_KEEP_PLANES.batch images a planes layer keeps its kernel from per_sm blocks
-- an SM: on an H200 (2026-11-30, bench/small-keep-planes-2026-11-30/, three rounds of
-- `ab_images.sh` against the split) zoo-residual at 64 images 147.0 -> 136.4 us (its two
-- 64-map 3x3 layers on 16x16, 64 blocks each), zoo-issue3x3 46.9 -> 44.3 (64 blocks), zoo-bigk
-- 78.4 -> 79.7 within its rounds' spread (77.6-80.4); at 8 images the same threshold lost
-- (zoo-odd 40.3 -> 46.0, zoo-vgg3x3 61.8 -> 66.8), hence 64 images and up.
planner.SMALL_KEEP_PLANES = { batch = 64, per_sm = 0.4 }

-- The blocks kernel record k launches for `batch` images (its grid's x extent
-- evaluated as the runtime evaluates "N*per/div").
local function launch_blocks(k, batch)
  local n = 1
  for _, d in ipairs(k.grid) do
    if type(d) == "string" then
      local per, div = d:match("^N%*(%d+)/(%d+)$")
      if not per then return nil end
      d = common.ceil_div(batch * tonumber(per), tonumber(div))
    end
    n = n * d
  end
  return n
end

-- Up to SMALL_WINOGRAD_MAX_BATCH images, an FP32 stride-1 layer of a 3x3 or 5x5 kernel
-- (SMALL_WINOGRAD_K) whose small-batch rule would split igemm's or igemm_tc's reduction
-- (at one image igemm's 32-pixel tiles; from two images small_split) takes
-- conv2d_winograd, F(2x2, KxK), in small tiles instead: the first of SMALL_WINOGRAD that
-- gives half the SMs a block (as small_split counts), its slices the deepest channel
-- count the template accepts. One kernel where the split takes two (the partial sums
-- and splitk_reduce), and (K+1)^2 products for the 4*K*K multiply-adds of 2x2 outputs.
-- Not for a 3x3 layer of more than SMALL_WINOGRAD_MAX_MACS_3 multiply-adds at the
-- bucket's images, where the tensor cores' split kept the lead. Measured on an H200
-- (2026-11-30, bench/winograd-small-2026-11-30.log: `bench/latency.py --repeat 50`,
-- whole networks against the binary before, same call): at one image zoo-5x5-c64 43.1
-- -> 20.8 us, zoo-stem96 53.1 -> 39.5, zoo-vgg3x3 48.8 -> 36.2, zoo-awkward 74.0 ->
-- 63.0, zoo-odd 32.6 -> 29.4, zoo-deep512 38.1 -> 36.0, zoo-vgg-same 53.7 -> 52.0,
-- zoo-residual 36.4 -> 35.4, zoo-wide3x3 36.9 -> 37.9; at 8 images zoo-issue3x3 31.5 ->
-- 21.9, zoo-residual 60.1 -> 50.8, zoo-vgg3x3 78.9 -> 67.8, zoo-5x5-c64 74.1 -> 64.6,
-- zoo-k7pad 47.6 -> 40.2, zoo-vgg-same 107.7 -> 99.8, zoo-linear 33.9 -> 28.0, zoo-alex
-- 67.4 -> 62.7, zoo-wide3x3 61.5 -> 57.3, zoo-squeeze 82.3 -> 82.8, zoo-stem96 123.4 ->
-- 125.1, and zoo-deep512 81.7 -> 89.5: its two 3x3 layers of 604 M multiply-adds at 8
-- images, which igemm_tc split on the card's 132 SMs; the cap (set after that call, not
-- timed again) gives those two their previous kernels and no other measured layer.
planner.SMALL_WINOGRAD_K = { [3] = true, [5] = true }
planner.SMALL_WINOGRAD_MAX_BATCH = 8
planner.SMALL_WINOGRAD_MAX_MACS_3 = 512 * 1024 * 1024
planner.SMALL_WINOGRAD = { { bm = 16, bn = 16, tm = 8, tn = 4 }, { bm = 8, bn = 16, tm = 8, tn = 4 } }

local function small_winograd(l, spec, split_why)
  local n = l.batch or 1
  if n > planner.SMALL_WINOGRAD_MAX_BATCH or (l.dtype and l.dtype ~= "f32") or (l.stride or 1) ~= 1
      or not planner.SMALL_WINOGRAD_K[l.K] then return nil end
  if l.K == 3 and conv_macs(l, common.conv_geom(l), n) > planner.SMALL_WINOGRAD_MAX_MACS_3 then return nil end
  local t = l.target or {}
  local sms = (t.sms and t.sms > 0) and t.sms or planner.SPLIT_UNKNOWN_SMS
  local T = import("conv2d_winograd")
  local slices = legal_values(T, "cs", l)
  for _, q in ipairs(planner.SMALL_WINOGRAD) do
    for _, cs in ipairs(slices) do
      -- not one channel a slice where there are more (a prime C: zoo-awkward's 71-channel
      -- conv4 at one image, 60.2 -> 72.5 us on an H200 under winograd with cs=1, where
      -- igemm splits it ragged)
      if cs == 1 and l.C > 1 then break end
      local given = { mt = 2, bm = q.bm, bn = q.bn, tm = q.tm, tn = q.tn, xg = 1, cs = cs }
      local ok, p = pcall(resolve, T, "conv2d_winograd", l, given, nil)
      local ok2, k = false, nil
      if ok then ok2, k = pcall(T.kernel, l, p) end
      local blocks = ok2 and launch_blocks(k, n)
      if blocks then
        -- (the grid is the tile's, whatever the slice: one that fits settles the tile)
        if blocks < sms * planner.SMALL_SPLIT_BLOCKS_PER_SM then break end
        return { "conv2d_winograd", string.format("small batch: winograd F(2x2, %dx%d) in %dx%d tiles, %d channels a " ..
          "slice (%d blocks), since the network is generated for %d image%s and igemm would %s%s",
          l.K, l.K, q.bm, q.bn, cs, blocks, n, n == 1 and "" or "s", split_why, spec), given }
      end
    end
  end
  return nil
end

-- The rule above: nil (the large-batch choice stays) or { template, why, params }.
local function small_split(l, spec)
  local tname, chosen
  if l.strategy == "auto" then tname, chosen = planner.auto_strategy(l) else tname = "conv2d_" .. l.strategy end
  local T = import(tname)
  local ok, p = pcall(resolve, T, tname, l, l.params, nil)
  if not ok then return nil end
  local ok2, k = pcall(T.kernel, l, p)
  local blocks = ok2 and launch_blocks(k, l.batch)
  if not blocks then return nil end
  local known = l.target and l.target.sms and l.target.sms > 0
  local sms = known and l.target.sms or planner.SPLIT_UNKNOWN_SMS
  local keep = planner.SMALL_SPLIT_BLOCKS_PER_SM
  if tname == "conv2d_planes" and l.batch >= planner.SMALL_KEEP_PLANES.batch then
    keep = planner.SMALL_KEEP_PLANES.per_sm
  end
  if blocks >= sms * keep then return nil end
  local cc = l.target and l.target.cc or 75
  local tc = cc >= 80 and l.C >= planner.AUTO_TC_MIN_C and l.M >= planner.AUTO_TC_MIN_M
  local alt = tc and "conv2d_igemm_tc" or "conv2d_igemm"
  local ok3, q = pcall(resolve, import(alt), alt, l, {}, nil)
  if not ok3 and tc then
    tc, alt = false, "conv2d_igemm"
    ok3, q = pcall(resolve, import(alt), alt, l, {}, nil)
  end
  if not ok3 then return nil end
  local S, split_why = planner.split_of(l, q, tc)
  if S == 1 then
    -- the default slice depth may leave an odd number of slices (zoo-bigk's conv2:
    -- C*K*K = 1944 in 81 slices of 24): the legal depth whose split is widest (the
    -- first of the widest in the template's order)
    for _, bk in ipairs(legal_values(import(alt), "bk", l)) do
      local ok4, q4 = pcall(resolve, import(alt), alt, l, { bk = bk }, nil)
      if ok4 then
        local S4, why4 = planner.split_of(l, q4, tc)
        if S4 > S then q, S, split_why = q4, S4, why4 end
      end
    end
  end
  local g = common.conv_geom(l)
  local cols = common.fused_pool2(g) and 4 * g.OH * g.OW or g.CH * g.CW
  local mine = common.ceil_div(l.batch * cols, q.bn) * common.ceil_div(l.M, q.bm) * S
  if S == 1 or mine <= blocks then return nil end
  local wino = small_winograd(l, spec, split_why)
  if wino then return wino end
  local given = {}
  for key, v in pairs(q) do given[key] = v end
  given.split = S
  local whose = string.format("%s %d SMs", known and "the target's" or "an assumed", sms)
  local fewer = planner.SMALL_SPLIT_BLOCKS_PER_SM == 1 and whose
    or planner.SMALL_SPLIT_BLOCKS_PER_SM == 0.5 and "half of " .. whose
    or string.format("%g a SM on %s", planner.SMALL_SPLIT_BLOCKS_PER_SM, whose)
  return { alt, string.format("small batch: %s in %dx%d tiles, split, since %s would launch %d block%s at " ..
    "%d images, fewer than %s%s; %s%s", tc and "igemm_tc" or "igemm", q.bm, q.bn,
    (tname:gsub("^conv2d_", "")), blocks, blocks == 1 and "" or "s", l.batch, fewer,
    tc and string.format(" (tensor cores: sm_%d, C = %d >= %d, M = %d >= %d)", cc, l.C, planner.AUTO_TC_MIN_C, l.M,
      planner.AUTO_TC_MIN_M) or "",
    split_why, chosen and "" or spec), given }
end

-- At one image on a target with warpgroup tensor cores (sm_90, built as sm_90a), an FP32
-- layer of a large kernel (K at least SMALL_PLANES_MIN_K, M at least SMALL_PLANES_MIN_M,
-- C*K*K at least SMALL_PLANES_MIN_CKK, maps of SMALL_PLANES_MIN_PIXELS or more; before
-- direct's and igemm's rules below) takes conv2d_planes in narrow map tiles and deep
-- slices, the first of SMALL_PLANES the template accepts, in bands of rows that give half
-- the SMs a block: a 16-map tile gives a layer of 48-144 maps three to nine times the
-- blocks of planes' default tile, and a 128-row slice a fourth of the 32-row slice's
-- barriers. Measured on an H200 (2026-11-29; bench/scripts/gemv_split_device.sh's `convgen
-- tune --batch 1`, single kernels, L2 flushed): zoo-7x7-large's conv2 (32 -> 64 maps, 7x7)
-- 30.4 us under planes bm=16 bk=128, where the network's kernel (igemm's 32-pixel tiles,
-- split 2 ways) took 78 in its profile (bench/prof-cells-2026-11-29.log), zoo-stem96's stem
-- (3 -> 48, 7x7 stride 2) 8.2 (bm=16 bk=64) against 33.6 under direct.
-- Whole networks at one image (bench/scripts/planes1_gemv_device.sh: every deep layer,
-- no bound on K or M, against the binary before): zoo-7x7-large 101.4 -> 64.4 us (its one
-- 7x7 layer), zoo-stem96 74.8 -> 54.7, but ten networks lost 1.4-33 us (zoo-vgg-same 53.3
-- -> 86.5, zoo-wide3x3 37.5 -> 57.6: their 3x3 layers). The next call, K >= 5 against
-- K >= 7: zoo-stem96 59.1 / 53.5, zoo-awkward 76.3 / 72.9, zoo-odd 34.9 / 30.5, zoo-5x5-c64
-- 39.4 / 42.8, the other eight networks within 1 us; hence 7.
planner.SMALL_PLANES_MIN_CKK = 128
planner.SMALL_PLANES_MIN_PIXELS = 128
planner.SMALL_PLANES_MIN_K = 7
planner.SMALL_PLANES_MIN_M = 32
planner.SMALL_PLANES = { { bm = 16, bk = 128 }, { bm = 16, bk = 64 }, { bm = 8, bk = 128 }, { bm = 8, bk = 64 } }

-- The band: the most output rows whose pixels fill at most two m64 tiles and still give
-- half the SMs a block (rows 2 the best on zoo-7x7-large's conv2, where rows 3 lost 39 %:
-- 76 blocks for 132 SMs; rows 2 and 3 within 1 % of the best on zoo-awkward's conv4).
local function small_planes(l, spec)
  local t = l.target or {}
  if not t.sm90a or (l.dtype and l.dtype ~= "f32") or l.C * l.K * l.K < planner.SMALL_PLANES_MIN_CKK
      or l.K < planner.SMALL_PLANES_MIN_K or l.M < planner.SMALL_PLANES_MIN_M then return nil end
  local g = common.conv_geom(l)
  -- (maps of fewer than SMALL_PLANES_MIN_PIXELS pixels leave most of an m64 tile empty and
  -- cannot split their reduction: igemm's split serves them)
  if g.CH * g.CW < planner.SMALL_PLANES_MIN_PIXELS then return nil end
  local sms = (t.sms and t.sms > 0) and t.sms or planner.SPLIT_UNKNOWN_SMS
  for _, q in ipairs(planner.SMALL_PLANES) do
    local rows = math.max(1, 128 // g.CW)
    while rows > 1 and common.ceil_div(g.CH, rows) * common.ceil_div(l.M, q.bm) < sms * planner.SMALL_SPLIT_BLOCKS_PER_SM do
      rows = rows - 1
    end
    for _, given in ipairs({ { bm = q.bm, bk = q.bk, rows = rows }, { bm = q.bm, bk = q.bk } }) do
      if pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, given, nil) then
        return { "conv2d_planes", string.format("small batch: planes in %d-map tiles and %d-row slices%s, since the " ..
          "network is generated for 1 image, the target is sm_90 (built as sm_90a: wgmma) and C*K*K = %d >= %d%s",
          q.bm, q.bk, given.rows and string.format(", bands of %d row%s", rows, rows == 1 and "" or "s") or "",
          l.C * l.K * l.K, planner.SMALL_PLANES_MIN_CKK, spec), given }
      end
    end
  end
  return nil
end

-- At the 64 bucket (more than SMALL_PLANES_64_MIN_BATCH images) on a target with
-- warpgroup tensor cores, an FP32 stride-1 layer of at least 3 channels and a K of at
-- least 3 that direct would serve takes planes with its defaults. Measured on an H200
-- (2026-11-30, single kernels, L2 flushed, 64 images; direct with its small-batch tile
-- against planes, us; bench/direct-mu-2026-11-30.log and direct-small-2026-11-30.log):
-- ece408-2018sp's conv2 (6 -> 16, 5x5) 35.1 / 12.6, zoo-prime's conv2 (13 -> 23, 3x3)
-- 41.7 / 16.8, zoo-k7pad's conv1 (3 -> 32, 5x5) 19.4 / 12.5, 3 -> 32 and 3 -> 64 padded
-- 3x3 stems 12.1-20.2 / 8.2-11.6, fashion-resnet's 16 -> 16 3x3 9.2 / 9.3; zoo-k7pad's
-- 2x2 layer (K < 3) 6.1 / 7.0. Of the 19 first layers of 1 or 2 channels, direct's tile
-- won or tied on 15 (zoo-odd's 13.6 / 22.0, ece408-2018fa's 14.2 / 27.1) and lost on 3
-- (ece408-2017's 10.8 / 8.0, zoo-linear's 9.0 / 6.0, zoo-bigk's 11x11 21.9 / 16.3;
-- zoo-prime's 13 maps not timed with it), so they keep direct. At 8 images
-- direct's tile won or tied on those layers (zoo-k7pad's conv1 6.9 / 7.6, zoo-inception's
-- stem 5.2 / 6.1) but two (ece408-2018sp's conv2 9.7 / 9.4, zoo-prime's conv2 9.6 / 8.1).
planner.SMALL_PLANES_64_MIN_BATCH = 8
planner.SMALL_PLANES_64_MIN_C = 3

-- Whether planes serves FP32 layer l on this target (sm_90a) with the params `given`.
local function planes_fp32(l, given)
  return (l.target or {}).sm90a and not (l.dtype and l.dtype ~= "f32")
    and pcall(resolve, import("conv2d_planes"), "conv2d_planes", l, given, nil)
end

local function small_planes_64(l, spec)
  if l.batch <= planner.SMALL_PLANES_64_MIN_BATCH or l.C < planner.SMALL_PLANES_64_MIN_C or l.K < 3
      or (l.stride or 1) ~= 1 or not planes_fp32(l, {}) then return nil end
  return { "conv2d_planes", string.format("small batch: planes, since the network is generated for %d images " ..
    "(more than %d), the target is sm_90 (built as sm_90a: wgmma), the layer has stride 1, C = %d >= %d and K = %d >= 3%s",
    l.batch, planner.SMALL_PLANES_64_MIN_BATCH, l.C, planner.SMALL_PLANES_64_MIN_C, l.K, spec), {} }
end

-- Up to 8 images (from two) on a target with warpgroup tensor cores, an FP32 layer of
-- a K of at least 3 that keeps its large-batch igemm or igemm_tc kernel (no split: its
-- tiles give half the SMs a block) takes planes with its defaults (a tiled 2x2 pool
-- fused, fp=1). Measured on an H200 (2026-11-30, bench/small-layers-8-2026-11-30.log:
-- single kernels at 8 images, L2 flushed, us, the large-batch kernel against planes):
-- the 8 such layers in the zoo 1.08-2.9x faster (zoo-inception's 32 -> 8 5x5 branch
-- 73.8 / 25.1, zoo-alex's 11x11 stride-4 stem 45.2 / 20.8, zoo-odd's 20 -> 30 3x3 22.0 /
-- 12.7 and zoo-vgg3x3's 16 -> 32 3x3 12.0 / 11.1 without their pools, zoo-awkward's
-- 17 -> 33 3x3 stride 2 17.4 / 15.3); 1x1 layers (K = 1) lost 9 of 11 (1.1-1.9x).
planner.SMALL_PLANES_8_MAX_BATCH = 8

local function small_planes_8(l, spec)
  if l.batch > planner.SMALL_PLANES_8_MAX_BATCH or l.K < 3 then return nil end
  -- a pool the other templates fuse (tiled windows) and planes cannot would be a launch
  -- more: such layers keep their kernel (overlapping windows run a pool kernel anyway)
  local g = common.conv_geom(l)
  local given = (g.kind ~= "none" and g.tiled_pool) and { fp = 1 } or {}
  if (given.fp and not common.fused_pool2(g)) or not planes_fp32(l, given) then return nil end
  local large = l.strategy == "auto" and planner.auto_strategy(l) or ("conv2d_" .. l.strategy)
  if large ~= "conv2d_igemm" and large ~= "conv2d_igemm_tc" then return nil end
  return { "conv2d_planes", string.format("small batch: planes%s, since the network is generated for %d images " ..
    "(at most %d), the target is sm_90 (built as sm_90a: wgmma), K = %d >= 3 and %s's tiles need no split%s",
    given.fp and " with its pool fused" or "", l.batch, planner.SMALL_PLANES_8_MAX_BATCH, l.K,
    (large:gsub("^conv2d_", "")), spec), given }
end

function planner.small_conv(l)
  local ckk = l.C * l.K * l.K
  local spec = l.strategy ~= "auto" and string.format("; the spec's strategy %s is for the large batch", l.strategy)
    or ""
  -- from two images on, strided stems (zoo-alex's 11x11 stride 4, zoo-resnet-stem's
  -- and zoo-stem96's 7x7 stride 2) ran 1.1-2.1x slower under direct than under
  -- their large-batch strategies at 8 and 64 images (an H200): direct there only
  -- for stride 1, C*K*K up to AUTO_SMALL_DIRECT_MAX_CKK_8 and, K >= 3 and M >= AUTO_TC_MIN_M, C below
  -- AUTO_SMALL_DIRECT_MAX_C_8
  if l.batch == 1 then
    local planes = small_planes(l, spec)
    if planes then return planes end
  end
  local wide = l.batch > 1 and ((l.stride or 1) > 1 or ckk > planner.AUTO_SMALL_DIRECT_MAX_CKK_8
    or (l.C >= planner.AUTO_SMALL_DIRECT_MAX_C_8 and l.K >= 3 and l.M >= planner.AUTO_TC_MIN_M))
  local within = l.C <= planner.AUTO_SMALL_DIRECT_MAX_C and ckk <= planner.AUTO_SMALL_DIRECT_MAX_CKK
  local direct_ok, direct_err = true, nil
  if not wide and within then
    -- unrolled whole (cl=0): the channel loop is not timed against igemm here yet
    direct_ok, direct_err = pcall(resolve, import("conv2d_direct"), "conv2d_direct", l, { cl = 0 }, nil)
  end
  if wide or not within or not direct_ok then
    -- deeper layers: igemm's small tiles at one image; from two images on, the
    -- large-batch choice (zoo-1x1's C = 64-256 1x1 layers under direct at 8 and
    -- 64 images ran 1.6x and 6x slower than their own strategies, on an H200)
    -- unless it leaves SMs without a block (small_split)
    if l.batch > 1 then return small_split(l, spec) or small_planes_8(l, spec) end
    local given = {}
    for k, v in pairs(planner.SMALL_IGEMM) do given[k] = v end
    local ok, p = pcall(resolve, import("conv2d_igemm"), "conv2d_igemm", l, given, nil)
    if not ok then return nil end
    local S, split_why = planner.split_of(l, p)
    if S > 1 then
      local wino = small_winograd(l, spec, split_why)
      if wino then return wino end
      given.split = S
    end
    -- why not direct: the layer is past its bounds, or within them its check refuses every
    -- configuration (it unrolls C*K*K: ece408-2018fa's conv2, C*K*K = 588, passes its budget)
    local not_direct = within
      and string.format("direct's check refuses the layer (%s)",
        type(direct_err) == "table" and direct_err.message or tostring(direct_err))
      or string.format("direct is for layers with C <= %d and C*K*K <= %d (C = %d, C*K*K = %d)",
        planner.AUTO_SMALL_DIRECT_MAX_C, planner.AUTO_SMALL_DIRECT_MAX_CKK, l.C, ckk)
    return { "conv2d_igemm", string.format("small batch: igemm in 32-pixel tiles, since the network is generated " ..
      "for 1 image and %s%s%s", not_direct, split_why and ("; " .. split_why) or "", spec), given }
  end
  local planes64 = small_planes_64(l, spec)
  if planes64 then return planes64 end
  return { "conv2d_direct", string.format("small batch: direct, since the network is generated for %d image%s " ..
    "(at most %d), C = %d <= %d and C*K*K = %d <= %d%s", l.batch, l.batch == 1 and "" or "s",
    planner.AUTO_GEMV_MAX_BATCH, l.C, planner.AUTO_SMALL_DIRECT_MAX_C, ckk, planner.AUTO_SMALL_DIRECT_MAX_CKK, spec), {} }
end

-- Between AUTO_GEMV_MAX_BATCH and SMALL_FC_MAX_BATCH images an fc layer left to auto
-- takes gemv where vec's default tiles would launch fewer blocks than half the SMs
-- (SMALL_SPLIT_BLOCKS_PER_SM, as small_split counts): zoo-5x5-c64's 15,488 inputs into
-- 10 outputs at 256 images ran vec's 128-image tiles split 8 ways, 16 blocks, in 116 us
-- of a 745 us network (an H200, 2026-11-29), where gemv's blocks of 8 images and one
-- output are 320 and read the 620 KB of weights from L2. Returns why, or nil.
planner.SMALL_FC_MAX_BATCH = 1024

local function few_fc_blocks(l)
  if not (l.batch and l.batch > planner.AUTO_GEMV_MAX_BATCH and l.batch <= planner.SMALL_FC_MAX_BATCH) then
    return nil
  end
  local ok, p = pcall(resolve, import("fc_vec"), "fc_vec", l, l.params, nil)
  local ok2, k = false, nil
  if ok then ok2, k = pcall(import("fc_vec").kernel, l, p) end
  local blocks = ok2 and launch_blocks(k, l.batch)
  if not blocks then return nil end
  local known = l.target and l.target.sms and l.target.sms > 0
  local sms = known and l.target.sms or planner.SPLIT_UNKNOWN_SMS
  if blocks >= sms * planner.SMALL_SPLIT_BLOCKS_PER_SM then return nil end
  if not pcall(resolve, import("fc_gemv"), "fc_gemv", l, nil, nil) then return nil end
  return string.format("auto: gemv, since vec's tiles would launch %d block%s at %d images, fewer than half of %s " ..
    "%d SMs", blocks, blocks == 1 and "" or "s", l.batch, known and "the target's" or "an assumed", sms)
end

-- fc layers on tensor cores under `auto`: fc_tc (FP32 tensors, 3xTF32; one TF32 product
-- under precision tf32) on an sm_80 or newer target, fc_wg (bf16 and fp16 tensors, one
-- wgmma m64nNk16 product) on an sm_90a one, where the network is generated for at least
-- AUTO_FC_TC_MIN_BATCH images (the large batch counts as more than any), the fc has
-- AUTO_FC_TC_MIN_OUT outputs or more (the GEMM's maps: fewer leave most of a 16-map tile
-- empty) and AUTO_FC_TC_MIN_IN inputs or more (a reduction deep enough to amortise a
-- block's tile and epilogue), and a legal configuration exists; before the rules below
-- (gemv, vec). The switch is AUTO_FC_TC_MIN_BATCH: nil leaves the rule off; 1025 (past
-- the largest bucket) gives it the large batch alone. Measured on an H200 (2026-11-29,
-- bench/fc-tc-2026-11-29.log): single kernels, L2 flushed, fc_tc / vec: zoo-mlp's 2048 x
-- 2048 layer 1.622 / 2.065 ms at 10,000 images, 0.184 / 0.239 at 1,000, 0.107 / 0.106
-- (vec split 8) at 256; ece408-2017's 7,200 -> 500 layer 1.370 / 1.858 ms at 10,000. Whole
-- networks at 10,000 images with the rule on the large batch: zoo-mlp 3517.9 -> 2852.1 us,
-- zoo-vgg3x3 29469 -> 28621, zoo-wide3x3 18421 -> 18210, zoo-1x1 10438 -> 10356. On from
-- 65 images it lost zoo-mlp at 256 images, 193.8 -> 279.4 us (its layers split 4 to 16
-- ways at that bucket, partial sums of 8 MB a layer), and gained nothing at 1,000 (447.2
-- -> 442.8). And fc_tc
-- on 15,488 inputs into 10 outputs at 256 images took 0.731 ms where gemv took 0.024 (the
-- MIN_OUT bound keeps such layers off it).
planner.AUTO_FC_TC_MIN_BATCH = 1025
-- The same rule for 16-bit layers (fc_wg), on the large batch alone: on an H200 in bf16 at
-- 10,000 images (bench/fc-wg-2026-11-29.log, bench/scripts/fc_wg_device.sh: single
-- kernels, L2 flushed) fc_wg / vec took 1.039 / 2.828 ms on ece408-2017's 7,200 -> 500
-- layer, 0.921 / 1.810 on ece408-2018sp's 10,816 -> 140, 1.238 / 3.258 on ece408-2018fa's
-- 17,496 -> 160, 0.319 / 0.789 on zoo-vgg-same's 4,096 -> 256 and 0.287 / 1.002, 0.794 /
-- 2.700, 0.340 / 0.812 on zoo-mlp's three; small batches not timed.
planner.AUTO_FC_WG_MIN_BATCH = 1025
planner.AUTO_FC_TC_MIN_OUT = 64
-- 16-bit layers' bound instead (fc_mma: the images are wgmma's M, the outputs its N): on an H200 in
-- bf16 at 10,000 images zoo-linear's 8,112 -> 32 layer took 0.087 ms under fc_mma, 0.541 under
-- fc_wg and 1.525 under vec (bench/scripts/planes_wr_device.sh, single kernels, L2 flushed)
planner.AUTO_FC_HALF_MIN_OUT = 32
planner.AUTO_FC_TC_MIN_IN = 256

-- FP32 fc layers on an sm_90a target take fc_mma (3xTF32, both operands copied by cp.async
-- into wgmma's swizzled layout, the reduction split over a cluster where the tiles are few)
-- from AUTO_FC_MMA_MIN_BATCH images, under the same bounds on outputs and inputs, before
-- fc_tc, gemv and vec. On an H200 (2026-11-29, single kernels, L2 flushed, nine FP32 layers of
-- the course and zoo networks; bench/RESULTS.md, "fc_mma in FP32") it ran 1.19-1.84x faster than
-- fc_tc at 10,000 images and 1.28-2.58x faster than vec or gemv at 1,000 and 256 images, but for
-- one layer (zoo-1x1's 3,872 -> 64 at 256 images: 20.6 against gemv's 13.7 us); zoo-mlp whole
-- 183.8 -> 98.4 us at 256 images, 446.6 -> 205.9 at 1,000. Precision tf32 (one TF32 product)
-- takes it alike: on an H200 (2026-11-29, bench/fc-mma-small-2026-11-29.log) fc_mma / auto's
-- previous choice took 0.538 / 1.284 ms (fc_tc) on zoo-mlp's 2,048 x 2,048 layer at 10,000
-- images, 0.757 / 1.164 on ece408-2017's 7,200 -> 500, 0.245 / 0.450 on zoo-vgg-same's
-- 4,096 -> 256, and 0.037-0.139 / 0.094-0.281 ms (vec) on four layers at 1,000 images.
planner.AUTO_FC_MMA_MIN_BATCH = 65
-- And from AUTO_FC_MMA_SMALL.batch images (the bucket of 64), where the reduction is at most
-- max_in inputs and the layer has min_out outputs or more: on the same card (single kernels,
-- L2 flushed, 64 images) fc_mma / gemv took 16.6 / 23.5 us on zoo-mlp's 784 -> 2,048 layer,
-- 28.9 / 63.6 on its 2,048 -> 2,048 and 14.4-15.5 / 23.2 on its 2,048 -> 512, but 50.1-62.8 /
-- 40.9 on ece408-2018fa's 17,496 -> 160 and 60.7-73.3 / 59.7 on zoo-vgg3x3's 21,632 -> 256
-- (a deep reduction over few output tiles: a cluster's 8-way split leaves 2,000-2,700 inputs
-- to each of 24-32 blocks). Fewer images keep gemv (bm = 64 rows of wgmma for 8 images).
planner.AUTO_FC_MMA_SMALL = { batch = 64, max_in = 4096, min_out = 256 }

-- The rule above: nil, or the template and why.
function planner.auto_fc_tc(l)
  local half = l.precision == "bf16" or l.precision == "fp16"
  local min = planner.AUTO_FC_TC_MIN_BATCH
  if half then min = planner.AUTO_FC_WG_MIN_BATCH end
  local t = l.target or {}
  local mma_min = not half and t.sm90a and planner.AUTO_FC_MMA_MIN_BATCH
  local images = (l.batch and l.batch > 0) and l.batch or math.huge
  local IN = l.C * l.H * l.W
  local small = planner.AUTO_FC_MMA_SMALL
  if mma_min and small and images >= small.batch and images < mma_min and IN <= small.max_in
      and l.out >= small.min_out then
    mma_min = small.batch
  end
  if mma_min and (not min or mma_min < min) then min = mma_min end
  if not min then return nil end
  local min_out = half and planner.AUTO_FC_HALF_MIN_OUT or planner.AUTO_FC_TC_MIN_OUT
  if images < min or l.out < min_out or IN < planner.AUTO_FC_TC_MIN_IN then return nil end
  local cc = t.cc or 75
  local gen = images == math.huge and "the large batch" or string.format("%d images", images)
  local why = string.format("the network is generated for %s (at least %d), out = %d >= %d and %d inputs >= %d",
    gen, min, l.out, min_out, IN, planner.AUTO_FC_TC_MIN_IN)
  if half then
    -- fc_mma first (both operands copied by cp.async, where the input size is a multiple of 8),
    -- else fc_wg (conv2d_igemm_wg's gather)
    if t.sm90a and pcall(resolve, import("fc_mma"), "fc_mma", l, nil, nil) then
      return "fc_mma", string.format("auto: mma, since precision is %s (one m64nNk16 product of 16-bit operands "
        .. "copied by cp.async), the target is sm_90 (built as sm_90a: wgmma), %s", l.precision, why)
    end
    if t.sm90a and pcall(resolve, import("fc_wg"), "fc_wg", l, nil, nil) then
      return "fc_wg", string.format("auto: wg, since precision is %s (one m64nNk16 product of 16-bit operands), " ..
        "the target is sm_90 (built as sm_90a: wgmma), %s", l.precision, why)
    end
    return nil
  end
  if mma_min and images >= mma_min and pcall(resolve, import("fc_mma"), "fc_mma", l, nil, nil) then
    return "fc_mma", string.format("auto: mma, since precision is %s (%s of FP32 operands copied by cp.async), "
      .. "the target is sm_90 (built as sm_90a: wgmma), %s", l.precision or "fp32",
      l.precision == "tf32" and "one TF32 product" or "3xTF32", why)
  end
  if images < (planner.AUTO_FC_TC_MIN_BATCH or math.huge) then return nil end
  if cc >= 80 and pcall(resolve, import("fc_tc"), "fc_tc", l, nil, nil) then
    return "fc_tc", string.format("auto: tc, since the target has TF32 tensor cores (sm_%d), %s", cc, why)
  end
  return nil
end

-- Split reductions of fc_tc (conv2d_igemm_tc's `split` on the fc's conv table: the
-- partial sums of each part, then splitk_reduce): its GEMM's columns are the images, so
-- where the network is generated for a known batch (a bucket: l.batch) a deep layer's
-- tiles may be few (15,488 inputs into 10 outputs at 1,024 images: 8 tiles of two warps),
-- and planner.split_of splits it as it splits a conv at a small batch (warps for every
-- SM, whole slices, each part at least SPLIT_MIN_DEPTH deep), over the layer's slice
-- depth or, where that splits nothing (an odd number of slices) and the spec gives none,
-- the first of FC_SPLIT_DEPTHS that does. Not at the large batch (10,000 images are 79
-- column tiles) nor where the spec gives a split. An estimate, not yet timed on a GPU.
-- Returns the parameters with the split and why, or nil.
planner.FC_SPLIT_DEPTHS = { 16, 32, 8, 24, 48, 64, 40, 56 }

local function fc_split(l, tname, given)
  if tname ~= "fc_tc" or not (l.batch and l.batch > 0) then return nil end
  given = given or {}
  if given.split ~= nil then return nil end
  local T = import(tname)
  local c = T.conv_table(l)
  local function try(q)
    local ok, p = pcall(resolve, T, tname, l, q, nil)
    if not ok then return nil end
    local S, why = planner.split_of(c, p, true)
    if S > 1 then return p, S, why end
    return nil
  end
  local p, S, why = try(given)
  if not p and given.bk == nil then
    for _, bk in ipairs(planner.FC_SPLIT_DEPTHS) do
      local q = { bk = bk }
      for k, v in pairs(given) do q[k] = v end
      p, S, why = try(q)
      if p then break end
    end
  end
  if not p then return nil end
  local out = {}
  for k, v in pairs(p) do out[k] = v end
  out.split = S
  return out, (why:gsub("C%*K%*K = (%d+)", "%1 inputs"))
end

-- Template tname of fc layer l with its split where fc_split gives one (its params
-- and the reason then), else as chosen (why, own).
local function with_fc_split(l, tname, why, own)
  local p, split_why = fc_split(l, tname, own or l.params)
  if not p then return tname, why, own end
  return tname, (why and (why .. "; ") or "") .. split_why, p
end

-- The template serving layer l by the rules below (layer_choice, without a tuning
-- record's choice) and, where `auto` chose it, why. A spec's fc
-- strategy and params are choices for the large batch: kernels generated for a
-- small batch (l.batch up to AUTO_GEMV_MAX_BATCH) take gemv with its own defaults
-- instead (so do conv layers: planner.small_conv); the third result is then the
-- params to use in place of the spec's.
local function rule_choice(l)
  -- grouped layers: the spec's strategy, or auto's, at every batch (small_conv's
  -- choices reduce over all channels)
  if l.op == "conv" and (l.groups or 1) > 1 and l.strategy == "auto" then return planner.auto_strategy(l) end
  if l.op == "conv" and l.strategy == "auto" then
    local t, why = planner.auto_fft(l)
    if t then return t, why end
    t, why = planner.auto_tma(l)
    if t then return t, why end
  end
  if l.op == "conv" and (l.groups or 1) <= 1 and l.batch and l.batch > 0 and l.batch <= planner.AUTO_GEMV_MAX_BATCH then
    local d = planner.small_conv(l)
    if d then return d[1], d[2], d[3] end
  end
  if l.strategy == "auto" then
    if l.op == "conv" then return planner.auto_strategy(l) end
    local tc, tc_why = planner.auto_fc_tc(l)
    if tc then return with_fc_split(l, tc, tc_why, nil) end
    local few = few_fc_blocks(l)
    if few then return "fc_gemv", few end
    return planner.auto_fc(l)
  end
  if l.op == "fc" and l.strategy ~= "gemv" and l.batch and l.batch > 0
      and l.batch <= planner.AUTO_GEMV_MAX_BATCH then
    local _, why = planner.auto_fc(l)
    return "fc_gemv", why .. string.format("; the spec's strategy %s is for the large batch", l.strategy), {}
  end
  -- Above gemv's buckets (256 and 1,024 images) a spec's CUDA-core fc strategy (vec,
  -- tiled) is still a choice for the large batch: where auto's rule takes fc_mma at this
  -- many images, fc_mma serves, with its own defaults (a tensor-core strategy the spec names
  -- stands). On an H200 (2026-11-30, bench/compile-cells-256-1000-2026-11-30.log) ece408-2017's
  -- fc1 (7,200 -> 500, the spec's vec) took 280 of the network's 325 us at 1,000 images,
  -- where cuBLAS's FP32 GEMM took 153; with fc_mma the network took 187 against 327, and
  -- 100-102 against 138 at 256 (bench/fc-mma-buckets-2026-11-30/).
  if l.op == "fc" and (l.strategy == "vec" or l.strategy == "tiled") and l.batch
      and l.batch > planner.AUTO_GEMV_MAX_BATCH then
    local tc, tc_why = planner.auto_fc_tc(l)
    if tc == "fc_mma" then
      return tc, tc_why .. string.format("; the spec's strategy %s is for the large batch", l.strategy), {}
    end
  end
  if l.op == "fc" then return with_fc_split(l, "fc_" .. l.strategy, nil, nil) end
  return "conv2d_" .. l.strategy, nil
end

-- The template serving layer l, why where a rule chose it, and the params to use in
-- place of the spec's where they are not its. A tuning record's choice for the bucket
-- the network is generated for (l.tuned = { template, bucket, params }: the generator
-- passes one for that bucket alone, after cg_tune_apply checked it) is a measurement
-- made at that many images: it is taken as it stands, before the small-batch rules and
-- the spec's strategy, with its params and no split added. Where the template's check
-- refuses it here (say, constant memory the layers before took, which a layer tuned
-- alone had: const_left, planner.build's), the rules choose, and the kernel's header
-- says why.
local function layer_choice(l, const_left)
  local t = l.tuned
  if not t then return rule_choice(l) end
  local images = string.format("%d image%s", t.bucket, t.bucket == 1 and "" or "s")
  local lc = l
  if const_left then
    lc = {}
    for k, v in pairs(l) do lc[k] = v end
    lc.const_left = const_left
  end
  local ok, err = pcall(function() return resolve(import(t.template), t.template, lc, t.params, nil) end)
  if ok then return t.template, "tuned: the tuning record's choice for " .. images, t.params end
  local tname, why, own = rule_choice(l)
  local msg = type(err) == "table" and err.message or tostring(err)
  return tname, string.format("the tuning record's choice for %s (%s) is refused here: %s%s", images,
    t.template, msg, why and ("; " .. why) or ""), own
end

-- A conv layer table without its pool and activation, at the conv's full
-- output size: what a template serves when the pool runs as a kernel of its own
-- (a padded pool, `pool_pad`, which no template fuses).
function planner.unpooled(l)
  local bare = {}
  for k, v in pairs(l) do bare[k] = v end
  local g = common.conv_geom(l)
  bare.pool, bare.pool_stride, bare.pool_op, bare.pool_pad, bare.act = 0, 0, "none", nil, "none"
  bare.OH, bare.OW = g.CH, g.CW
  return bare
end

-- The images a launch of net's kernels is generated for: the caller's (tune --batch),
-- else the target's bucket; nil for the large-batch default.
local function batch_of(net)
  return net.batch or (net.target and net.target.batch and net.target.batch > 0 and net.target.batch) or nil
end

-- The tensors a layer reads, by name: `l.inputs` as the generator passes them
-- (the spec's `input:`, by default the layer before; a layer's output is its
-- name, the network's float input is "input"), else the output of the layer
-- before it (`prev`; the first layer reads the network's input).
local function layer_inputs(l, prev)
  if l.inputs and #l.inputs > 0 then
    local out = {}
    for j, name in ipairs(l.inputs) do out[j] = name end
    return out
  end
  return { prev }
end
planner.layer_inputs = layer_inputs

-- The pixel twin: where the network is generated for a small batch (a bucket),
-- its first layer is a conv whose kernel k (template conv2d_direct, ungrouped,
-- bias, activation and any pool fused, no add or concat slice) reads the input
-- tensor and no other layer reads it, the planner writes that kernel twice: k
-- reading the float input input_u8 writes, and a twin reading the uint8 pixels
-- and scaling each as it loads it (templates/conv2d/direct.lua, l.pixels). The
-- manifest marks them feed=f32 (input_u8 and k) and feed=u8 (the twin): the
-- runtime runs, for pixels, the twin without input_u8 (a launch and a pass over
-- the input fewer), and for float input (cg_net_run's CG_INPUT_F32, check's
-- isolated layers) k, the input copied where input_u8 would have written it.
function planner.pixel_twin(net, l, k, inputs)
  if not batch_of(net) or k.template ~= "conv2d_direct" or not k.fused or k.split or k.residual or k.out_slice then
    return false
  end
  if (l.groups or 1) > 1 or #inputs ~= 1 or inputs[1] ~= "input" then return false end
  for _, o in ipairs(net.layers) do
    if o ~= l then
      for _, name in ipairs(o.inputs or {}) do if name == "input" then return false end end
    end
  end
  return true
end

-- The network's tail in one kernel (templates/ops/tail.lua): where the network
-- is generated for at most TAIL_MAX_BATCH images (AUTO_GEMV_MAX_BATCH's cut) and
-- ends in a fully connected layer, or in one and a softmax reading it, the fc,
-- the softmax and the prediction run as one kernel instead of fc_gemv, softmax
-- and argmax (two launch gaps fewer: 0.8-1 us each on an H200). The kernel gives
-- each image one block, which streams all of the fc's weights (where fc_gemv
-- spreads a layer's rows over every SM), so the fc must be small: at most
-- TAIL_MAX_OUT outputs (a thread holds an accumulator for each, and the softmax
-- takes a thread an output) and TAIL_MAX_WEIGHTS weights (64 KB: at an SM's share
-- of L2 bandwidth, some 64 bytes a clock, about 1,000 cycles or 0.6 us, under the
-- launch gap of either kernel it saves; ece408-2017's fc2, 5,000 weights, and
-- every shipped network's last fc fit, 5,000 to 1,600). FP32 tensors only. On sm_90,
-- from 2 to 8 images, a larger fc shares each image's reduction over a cluster of up to
-- 8 blocks (ops/tail.lua's split, tail.split_for: at most 65,536 weights a block), so
-- a classifier reading a wide feature map (zoo-awkward's 45,000 inputs into 10) ends
-- in one kernel too (the template's default split, tail.split_for, is the one asked
-- here). Returns nil, or { fc = the fc layer, softmax = the softmax layer or nil,
-- why = the header's reason }.
planner.TAIL_MAX_BATCH = planner.AUTO_GEMV_MAX_BATCH
planner.TAIL_MAX_OUT = 32
planner.TAIL_MAX_WEIGHTS = import("tail").MAX_WEIGHTS

function planner.tail_layers(net, batch, dt, final_out)
  if not batch or batch <= 0 or batch > planner.TAIL_MAX_BATCH or dt ~= "f32" then return nil end
  local n = #net.layers
  local fc, sm = net.layers[n], nil
  if fc and fc.op == "softmax" and fc.name == final_out and n >= 2 then
    sm, fc = fc, net.layers[n - 1]
    local ins = layer_inputs(sm, fc.name)
    if #ins ~= 1 or ins[1] ~= fc.name then return nil end
  elseif not fc or fc.name ~= final_out then
    return nil
  end
  if fc.op ~= "fc" then return nil end
  -- an fc the tuning record chose a kernel for at this bucket runs that kernel (layer_choice)
  if fc.tuned then return nil end
  local IN = fc.C * fc.H * fc.W
  if fc.out > planner.TAIL_MAX_OUT then return nil end
  local tail = import("tail")
  local split = tail.split_for({ C = fc.C, H = fc.H, W = fc.W, out = fc.out, target = net.target, batch = batch })
  if not split then return nil end
  local room = split == 1 and string.format("at most %d", planner.TAIL_MAX_WEIGHTS)
    or string.format("more than %d: an image's reduction over a cluster of %d blocks, at most %d weights each",
      planner.TAIL_MAX_WEIGHTS, split, tail.SPLIT_WEIGHTS)
  local why = string.format("small batch: the network's tail (%s%s and the prediction) in one kernel, since " ..
    "the network is generated for %d image%s (at most %d) and the fc has %d outputs (at most %d) and %d " ..
    "weights (%s)%s", fc.name, sm and (", " .. sm.name) or "", batch, batch == 1 and "" or "s",
    planner.TAIL_MAX_BATCH, fc.out, planner.TAIL_MAX_OUT, IN * fc.out, room,
    fc.strategy ~= "auto" and string.format("; the spec's strategy %s is for the large batch", fc.strategy) or "")
  return { fc = fc, softmax = sm, why = why }
end

-- The kernels of a network and the tensors they thread. Every tensor has a
-- name; `tensors` (by name, and `out.tensors` in the order the manifest lists
-- them) holds its dtype, elements per image and shape { C, H, W } as the
-- planner knows it, and every kernel record names the tensors it reads as a
-- list, `inputs` (a chain's kernels read one each), and the one it writes, `out`,
-- with `extra_out`, the further tensors it writes where it computes later layers
-- too (ops/tail.lua; a softmax writing the predictions), in the order of roles out1, out2.
-- An op without a template family (generator/op.c; softmax, add, concat) is
-- served by the template named after the op, which receives { elems, C, H, W }
-- of its first input (concat: elems of its output), n_in and parts (each
-- input's elements per image) and the layer's act. A tensor may be read by
-- several later kernels (a residual: conv1 read by conv2 and by the add).
-- The element type (the manifest's dtype) of the tensors between the layers of a
-- network of precision `precision`, and of a layer's weights and bias: FP32 for
-- fp32 and tf32, the 16-bit formats for bf16 and fp16 (base/spec.c cg_precision_dtype).
function planner.dtype_of(precision)
  if precision == "bf16" then return "bf16" end
  if precision == "fp16" then return "f16" end
  return "f32"
end

-- The network's tensor type (planner.dtype_of its precision), after refusing
-- bf16 on a target below sm_80 (BF16 conversions and tensor cores; fp16's FFMA
-- templates run on sm_75 too, its tensor-core template refuses).
function planner.half_target(net)
  local dt = planner.dtype_of(net.precision)
  local cc = net.target and net.target.cc or 75
  if dt == "bf16" and cc < 80 then
    fail(0, nil, string.format("precision bf16 needs sm_80 or newer (BF16 conversions and tensor cores); the " ..
      "target is sm_%d (generate for --arch 80 or newer, use fp16, tf32 or fp32, or write precision_fallback: " ..
      "fp32 or fp16 for such targets)", cc))
  end
  return dt
end

-- Kernel record k of layer table l in a network of precision `precision`: for
-- 16-bit tensors the source opens with common.HALF_PRELUDE, the name (the
-- function and every symbol named after it) ends in the type ("_bf16", "_f16"),
-- the header's precision line says so and k.wdtype names its weights' type (the
-- manifest's wdtype=, which the runtime converts them to at load; a template's own
-- k.wdtype kept: conv2d_direct's FP32 __constant__ weights); k unchanged for FP32 tensors.
function planner.half_kernel(k, l, precision)
  local dt = planner.dtype_of(precision)
  if dt == "f32" then return k end
  common.add_half_prelude(k, l)
  local old, new = k.name, k.name .. "_" .. dt
  k.source = k.source:gsub(old, new)
  k.name = new
  if k.weights:sub(1, 6) == "const:" then k.weights = k.weights:gsub(old, new) end
  if k.bias:sub(1, 6) == "const:" then k.bias = k.bias:gsub(old, new) end
  k.precision_line = string.format("%s (%s tensors; FP32 arithmetic)", precision, dt)
  if k.weights ~= "none" or k.bias ~= "none" then
    k.wdtype = k.wdtype or (common.types(l).w_t == "float" and "f32" or dt)
  end
  return k
end

-- The generated header's precision line for kernel record k of layer l: nil
-- for fp32 (so fp32 files stay as they were), else what the kernel computes:
-- the layer's precision where the template computes it (k.precision, set by
-- conv2d_igemm_tc under tf32), or FP32 where it has no such path (the FFMA
-- templates: more accurate than asked).
function planner.precision_line(l, k)
  if not l.precision or l.precision == "fp32" then return nil end
  if l.precision == "bf16" or l.precision == "fp16" then
    -- half-width tensors: what the products are computed in
    if k.precision == l.precision then
      return string.format("%s (%s tensors, weights and bias; products on tensor cores, FP32 accumulation)",
        l.precision, planner.dtype_of(l.precision))
    end
    return string.format("%s (%s tensors%s; %s computes its products in FP32)", l.precision,
      planner.dtype_of(l.precision), k.wdtype == "f32" and ", FP32 weights and bias" or ", weights and bias",
      k.template)
  end
  if k.precision == l.precision then return l.precision end
  return string.format("fp32 (the layer asks %s; %s computes its products in FP32)", l.precision, k.template)
end

-- The network's layers by name, and each layer's readers: how many times later
-- layers read its output (a layer reading it twice counts twice), where a folded
-- batchnorm's output is its conv's (`root`: the layer whose tensor a name is).
local function graph_readers(net)
  local by_name, alias, readers = {}, {}, {}
  for _, l in ipairs(net.layers) do
    by_name[l.name] = l
    local ins = l.inputs and #l.inputs > 0 and l.inputs or nil
    if l.op == "batchnorm" and l.folded then
      -- a folded batchnorm's output is its conv's: its readers are the conv's
      local src = ins and ins[1] or net.layers[l.index - 1].name
      alias[l.name] = alias[src] or src
    else
      local list = ins or { l.index > 1 and net.layers[l.index - 1].name or "input" }
      for _, name in ipairs(list) do
        local root = alias[name] or name
        readers[root] = (readers[root] or 0) + 1
      end
    end
  end
  return by_name, readers, function(name) return alias[name] or name end
end

-- The layers auto also gives conv2d_tma for their neighbours (l.tma_chain, the reason): a conv layer
-- of C >= AUTO_TMA_CHAIN_MIN_C and M >= AUTO_TMA_CHAIN_MIN_M written `auto` whose output only a
-- tma layer reads (it then stores that output channels-last, planner.hwc_handoffs), or which alone
-- reads a tma layer's output (it reads it as it lies, without its transpose); grown from the layers
-- choose(l) gives conv2d_tma, and from every two such layers of AUTO_TMA_MIN_M maps or more of which
-- the second alone reads the first's output, until no layer joins. Measured on an H200 in bf16 at
-- 10,000 images (bench/RESULTS.md, "Channels-last hand-offs"). Pairs (whole networks): zoo-1x1's 64 ->
-- 256 -> 128 1x1 layers 1.652 + 0.869 ms with the transpose's 0.375 against pointwise's and igemm's
-- 1.934 + 1.936 (the network 4.48 -> 3.54 ms, 1.34x max-autotune), zoo-alex's 96 -> 128 -> 64 on 3x3
-- (2.42 -> 2.38 ms), zoo-residual's 64 -> 64 pair on 16x16 (5.55 -> 5.31 ms). Neighbours of tma layers
-- (the layer's kernels, transpose included, against auto's before): output handed on: zoo-vgg-same's
-- 64 -> 64 on 32x32 with its pool 2.36 / 2.59 and 64 -> 128 on 16x16 0.71 / 1.09, zoo-wide3x3's 64 -> 128 on 14x14 0.86 / 0.98; input taken as it lies:
-- zoo-residual's 64 -> 64 on 16x16 0.45 / 0.61, zoo-1x1's 256 -> 128 1x1 with its pool 0.86 / 1.95,
-- zoo-alex's 128 -> 64 on 3x3 0.06 / 0.13. The channels-last store is what turns the C = 64 layers
-- (their C x H x W store had cost zoo-wide3x3's 64 -> 128 1.21 ms, the channels-last one 0.68).
function planner.tma_chains(net, choose)
  local by_name, readers = graph_readers(net)
  local tma, order = {}, {}
  for i, l in ipairs(net.layers) do
    if l.op == "conv" and (l.pool_pad or 0) == 0 then
      tma[l.name] = choose(l) == "conv2d_tma"
      -- the layer l alone reads: p, where l reads only p and nothing else reads p
      local ins = l.inputs and #l.inputs > 0 and l.inputs or { i > 1 and net.layers[i - 1].name or "input" }
      local p = #ins == 1 and by_name[ins[1]]
      if p and p.op == "conv" and (p.pool_pad or 0) == 0 and readers[p.name] == 1 then order[#order + 1] = { p, l } end
    end
  end
  local function may(l, min_m, min_c)
    return not tma[l.name] and l.strategy == "auto" and not l.tuned and l.C >= (min_c or planner.AUTO_TMA_CHAIN_MIN_C)
        and l.M >= (min_m or planner.AUTO_TMA_CHAIN_MIN_M) and tma_serves(l)
  end
  -- whether choose(l) gives conv2d_direct with parameters that store channels-last (its T.hwc_out_ok)
  local function direct_hands_off(l)
    local tname, _, own = choose(l)
    return tname == "conv2d_direct" and stores_hwc(tname, l, own or l.params, nil)
  end
  local function joins(l, why, handing)
    -- (a layer handing its output on channels-last may be narrower: AUTO_TMA_HANDOFF_MIN_C)
    if not (may(l) or handing and l.K <= planner.AUTO_TMA_DIRECT_MAX_K
        and may(l, planner.AUTO_TMA_MIN_M, planner.AUTO_TMA_HANDOFF_MIN_C)) then return false end
    l.tma_chain, tma[l.name] = why, true
    return true
  end
  -- two such layers of AUTO_TMA_MIN_M maps or more of which the second alone reads the first's
  -- output: a chain of their own
  for _, pq in ipairs(order) do
    local p, q = pq[1], pq[2]
    if may(p, planner.AUTO_TMA_MIN_M) and may(q, planner.AUTO_TMA_MIN_M) then
      joins(p, string.format("its output goes to %s alone, which takes tma too, channels-last", q.name))
      joins(q, string.format("it alone reads %s's output, which takes tma too, as it lies (channels-last)", p.name))
    end
  end
  -- a layer of K <= AUTO_TMA_DIRECT_MAX_K and AUTO_TMA_MIN_M maps or more that alone reads the output
  -- of a layer auto gives conv2d_direct, which stores it channels-last (conv2d_direct's T.hwc_out_ok)
  for _, pq in ipairs(order) do
    local p, q = pq[1], pq[2]
    if q.K <= planner.AUTO_TMA_DIRECT_MAX_K and may(q, planner.AUTO_TMA_MIN_M) and direct_hands_off(p) then
      joins(q, string.format("it alone reads %s's output, which conv2d_direct stores channels-last", p.name))
    end
  end
  local grown = true
  while grown do
    grown = false
    for _, pq in ipairs(order) do
      local p, q = pq[1], pq[2]
      if tma[q.name] and joins(p, string.format("its output goes to %s, a tma layer, channels-last", q.name), true) then
        grown = true
      end
      if tma[p.name] and joins(q, string.format("it reads %s, a tma layer's output, as it lies (channels-last)",
          p.name)) then grown = true end
    end
  end
  -- a first layer whose output a tma layer alone reads takes direct, which stores it channels-last
  -- (planner.auto_strategy's rule for first layers, l.hwc_first), where direct's parameters allow it
  for _, pq in ipairs(order) do
    local p, q = pq[1], pq[2]
    if tma[q.name] and not tma[p.name] and p.strategy == "auto" and not p.tuned then
      p.hwc_first = string.format("its output goes to %s alone, a tma layer, which direct stores channels-last", q.name)
      if not direct_hands_off(p) then p.hwc_first = nil end
    end
  end
end

-- The adds a conv's kernel may compute in its epilogue (the conv's strategy
-- permitting, `fuses_add` of its template): by conv layer name, { add = the add
-- layer, at = the conv's place among the add's inputs, others = the other
-- inputs by layer name, in the add's order }. An add qualifies through operand
-- X where X is a conv's output (or that of a batchnorm folded into the conv)
-- that nothing else reads and the add reads once, the conv has no pool (its
-- activation, its own or a folded batchnorm's, applies before the sum, the
-- add's after it) and every other operand is made before the conv (so its
-- kernel can read it): of several such operands the last conv's.
function planner.residual_adds(net)
  local by_name, readers, root = graph_readers(net)
  local out = {}
  for _, a in ipairs(net.layers) do
    if a.op == "add" and a.inputs and #a.inputs >= 2 then
      local best
      for j, name in ipairs(a.inputs) do
        local c = by_name[root(name)]
        if c and c.op == "conv" and readers[c.name] == 1 and (c.pool or 0) == 0 and (c.pool_pad or 0) == 0
            and (not best or c.index > best.conv.index) then
          best = { conv = c, at = j }
        end
      end
      if best then
        local others, ok = {}, true
        for j, name in ipairs(a.inputs) do
          if j ~= best.at then
            local src = by_name[root(name)]
            if root(name) == best.conv.name or (src and src.index >= best.conv.index) then ok = false end
            others[#others + 1] = name
          end
        end
        if ok then out[best.conv.name] = { add = a, at = best.at, others = others } end
      end
    end
  end
  return out
end

-- The concat inputs written straight into their slices of the concat's output
-- (the concat then copies only the others, or is no kernel at all): by the name of
-- the conv layer that produces the input (its tensor's name), { concat = the
-- concat layer's name, off = the input's first element in the concat's image
-- (its channel offset times H*W), stride = the concat's elements an image, shape
-- = the concat's { C, H, W } }. An input qualifies where it is a conv's output (or
-- that of a batchnorm folded into the conv) that nothing else reads and the concat
-- reads once (so no other kernel reads the slice's place, and the conv's own
-- tensor is never made), and the concat's tensor has the network's element type
-- (a 16-bit network's last layer writes FP32: its inputs do not). Whether the
-- kernel that writes the conv's output can write a slice is its template's
-- (`T.out_slice`, common.out_slice; not a split's partial sums): planner.build
-- asks it, and where it cannot, the tensor stays apart and the concat copies it.
-- The runtime binds the conv's tensor as a view of the concat's
-- (`tensor NAME DTYPE ELEMS view=CONCAT:OFF` in the manifest).
function planner.concat_slices(net, dt, final_out)
  local by_name, readers, root = graph_readers(net)
  local out = {}
  for _, c in ipairs(net.layers) do
    if c.op == "concat" and c.inputs and (dt == "f32" or c.name ~= final_out) then
      local at = 0
      for _, name in ipairs(c.inputs) do
        local src = by_name[name]
        local p = by_name[root(name)]
        if p and p.op == "conv" and readers[p.name] == 1 and not out[p.name] then
          out[p.name] = { concat = c.name, off = at, stride = c.OC * c.OH * c.OW, shape = { c.OC, c.OH, c.OW } }
        end
        at = at + (src and src.OC * src.OH * src.OW or net.C * net.H * net.W)
      end
    end
  end
  return out
end

-- The channels-last hand-offs of net: by conv layer name, { tname } (its template, as
-- choose(l) gives it), where the layer's output is read by one
-- layer alone, the next conv, and the templates of both can hand it over channels-last (the
-- first's T.hwc_out_ok: it stores it so, l.hwc_out, where that says its parameters allow; the
-- second's T.hwc_in: it reads it as it lies, l.hwc_in, leaving out its parts marked skip_hwc).
-- Only where no whole-network kernel is made (which writes every tensor C x H x W): above
-- planner.WHOLE_MAX_BATCH images.
function planner.hwc_handoffs(net, batch, choose)
  local out = {}
  if batch and batch <= planner.WHOLE_MAX_BATCH then return out end
  local by_name, readers = graph_readers(net)
  local function hands(l, side)
    if l.op ~= "conv" or (l.pool_pad or 0) > 0 then return nil end
    local tname = choose(l)
    if import(tname)[side] then return tname end
  end
  local last = net.layers[#net.layers]
  for i, q in ipairs(net.layers) do
    local ins = q.inputs and #q.inputs > 0 and q.inputs or { i > 1 and net.layers[i - 1].name or "input" }
    local p = #ins == 1 and by_name[ins[1]]
    if p and p ~= last and readers[p.name] == 1 then
      local tname = hands(p, "hwc_out_ok")
      if tname and hands(q, "hwc_in") then out[p.name] = { tname = tname } end
    end
  end
  return out
end

function planner.build(net)
  local out = { tensors = {}, layers = {}, kernels = {}, input = "pixels", predict = "predict" }
  local tensors = {}
  local elems_max = 1
  local function tensor(name, dtype, elems, shape)
    local t = { name = name, dtype = dtype, elems = elems, shape = shape }
    out.tensors[#out.tensors + 1] = t
    tensors[name] = t
    if elems > elems_max then elems_max = elems end
    return name
  end
  -- tensor `name` as a view of a concat's output (planner.concat_slices: place
  -- pl), its elements of image i those of the concat's image i from pl.off on;
  -- the concat's tensor is made here where it is not yet (before its view, as the
  -- manifest wants it), `premade` until the concat layer takes it
  local function view(name, dtype, elems, shape, pl)
    if not tensors[pl.concat] then
      tensor(pl.concat, dtype, pl.stride, pl.shape)
      tensors[pl.concat].premade = true
    end
    tensor(name, dtype, elems, shape)
    tensors[name].view, tensors[name].view_off = pl.concat, pl.off
    return name
  end
  local function rename(old, new)
    local t = tensors[old]
    tensors[old], tensors[new], t.name = nil, t, new
    return new
  end
  local seen = {}
  -- the network's tensor type: every tensor between layers, every layer's weights
  -- and bias (pixels stay u8, predictions i32)
  local dt = planner.half_target(net)
  -- the tensor that is the network's output: the last layer's (a folded
  -- batchnorm's is its conv's)
  local final_out
  do
    local last = net.layers[#net.layers]
    local by_name = {}
    for _, x in ipairs(net.layers) do by_name[x.name] = x end
    while last and last.op == "batchnorm" and last.folded do
      local src = last.inputs and #last.inputs > 0 and last.inputs[1] or
        (last.index > 1 and net.layers[last.index - 1].name)
      last = src and by_name[src]
    end
    final_out = last and last.name
  end
  -- the concat inputs their producers may write into the concat's output (by
  -- producer: { concat, off, stride, shape }), where the kernel writing them can
  local slices = planner.concat_slices(net, dt, final_out)
  -- constant memory left for weights: all kernels of a network may share one
  -- module (a fat binary), and a module has one 64 KiB constant bank
  local const_left = common.CONST_BUDGET
  local was_seen   -- whether the last kernel add() made had a name seen before it (to undo it)
  local function add(tname, l, given, index, layer, inputs, output_name, shape, dtype)
    local T = import(tname)
    l.const_left = const_left
    if dt ~= "f32" then
      -- half-width tensors: input_u8 reads pixels, argmax writes indices; a kernel
      -- reads its input in the type that tensor has, and the one writing the
      -- network's output (the scores the host reads) writes FP32; every other
      -- role is the network's type
      if l.dtype == nil then l.dtype = dt end
      if tname == "input_u8" then l.in_dtype = "u8" end
      if tname == "argmax" then l.out_dtype = "i32" end
      local src = tname ~= "input_u8" and tensors[inputs[1]]
      if src and src.dtype ~= l.dtype then l.in_dtype = src.dtype end
      if output_name == final_out then l.out_dtype = "f32" end
    end
    local p, listed = resolve(T, tname, l, given, index)
    -- a concat's input: its kernel writes the concat's slice where the template can
    local place = slices[output_name]
    local odt = dtype or l.out_dtype or dt
    if place and T.out_slice and odt == dt then l.out_slice = { stride = place.stride } end
    local k = common.add_pdl(planner.half_kernel(T.kernel(l, p), l, net.precision), net.target)
    l.out_slice = nil
    was_seen = seen[k.name]
    if seen[k.name] and (k.weights:sub(1, 6) == "const:") then
      -- constant-memory symbols belong to one layer: give this one its own kernel
      fail(index, nil, "two layers generate the same kernel '" .. k.name ..
        "' with weights in constant memory; change a parameter of one of them")
    end
    seen[k.name] = true
    const_left = const_left - (k.const_bytes or 0)
    k.template = tname
    k.layer = layer
    k.params = listed
    k.inputs = {}
    for j, name in ipairs(inputs) do
      if not tensors[name] then fail(index, nil, "input '" .. tostring(name) .. "' is no tensor made before it") end
      k.inputs[j] = name
    end
    local made = tensors[output_name]
    if k.out_slice then
      k.out = view(output_name, odt, k.out_elems, shape, place)
    elseif made and made.premade then
      -- a concat's output, made before by its first input written in place
      if made.elems ~= k.out_elems or made.dtype ~= odt then
        fail(index, nil, string.format("kernel %s writes %d %s elements an image into '%s', made for %d %s",
          k.name, k.out_elems, odt, output_name, made.elems, made.dtype))
      end
      made.premade = nil
      k.out = output_name
    else
      k.out = tensor(output_name, odt, k.out_elems, shape)
    end
    out.kernels[#out.kernels + 1] = k
    return k
  end
  -- A further tensor kernel k writes (its record's `extra_out`, the roles out1 and
  -- out2 in order): a later layer's output or the predictions, computed in k.
  local function also(k, name, dtype, elems, shape)
    k.extra_out = k.extra_out or {}
    k.extra_out[#k.extra_out + 1] = tensor(name, dtype, elems, shape)
  end
  -- the network's last fc, softmax and prediction in one kernel, where they fit
  -- (planner.tail_layers), and whether a kernel has written the predictions
  local tail = planner.tail_layers(net, batch_of(net), dt, final_out)
  local predicted = false

  -- A kernel k of conv layer table kl (or of an fc's conv table: fc_tc) that splits its reduction (k.split > 1)
  -- writes partial sums: its output becomes the partials tensor "<out>.partials"
  -- ([split][n][M][P]) and splitk_reduce, which adds them in order, then the
  -- bias and, where k's epilogue is fused, the activation, writes the tensor k
  -- was given. Returns the kernel that writes that tensor.
  -- Where k pools 2x2 in its epilogue (k.split_pool), the partials hold its GEMM
  -- columns (four a pooled output: [split][n][M][4*OH*OW]) and splitk_reduce pools.
  local function reduce_split(k, kl, index)
    if not k.split then return k end
    local g = common.conv_geom(kl)
    local H, W = g.CH, g.CW
    if k.split_pool then H, W = g.OH, g.OW end
    local name, P = k.out, H * W
    k.out = rename(k.out, name .. ".partials")
    tensors[k.out].shape = k.split_pool and { k.split * kl.M, 2 * H, 2 * W } or { k.split * kl.M, H, W }
    -- (final: the sums are the layer's output, which a concat may take in place; not where a
    -- pool or activation kernel follows the unfused epilogue)
    local r = add("splitk_reduce", { S = k.split, M = kl.M, P = P, bias = kl.bias,
      act = k.fused and kl.act or "none", pool = k.split_pool, final = k.fused }, nil, index, kl.name, { k.out }, name,
      tensors[k.out].shape)
    tensors[name].shape = { kl.M, H, W }
    r.fused = k.fused
    return r
  end

  -- A conv's kernels under template tname: one (add), or, for a template of several kernels
  -- (T.parts: conv2d_fft), one a part in order, each reading the tensor the part before wrote
  -- (<layer>.<part's tensor>, a tensor no layer holds), the last writing output_name. Returns the
  -- last kernel, and every kernel made.
  local function add_conv(tname, l, given, index, layer, inputs, output_name, shape)
    local T = import(tname)
    if not T.parts then
      local k = add(tname, l, given, index, layer, inputs, output_name, shape)
      return k, { k }
    end
    local k, kin, made = nil, inputs, {}
    for j, part in ipairs(T.parts) do
      if not (part.skip_hwc and l.hwc_in) then
        l.part = part.part
        local last = j == #T.parts
        k = add(tname, l, given, index, layer, kin, last and output_name or (layer .. "." .. part.tensor),
          last and shape or part.shape(l))
        made[#made + 1] = k
        kin = { k.out }
      end
    end
    l.part = nil
    return k, made
  end
  -- the chosen line and the precision line of every kernel a conv made
  local function chosen(made, why, l)
    for _, k in ipairs(made) do
      k.chosen = why
      k.precision_line = planner.precision_line(l, k)
    end
  end

  local batch = batch_of(net)
  for _, l in ipairs(net.layers) do
    if dt ~= "f32" then l.dtype = dt end
    l.batch = batch
  end
  -- a conv layer's choice, asked once where no tuning record makes it depend on the constant
  -- memory left (planner.hwc_handoffs asks first)
  local rule_of = {}
  local function choose(l, cl)
    if l.tuned then return layer_choice(l, cl) end
    rule_of[l] = rule_of[l] or table.pack(layer_choice(l, nil))
    return rule_of[l][1], rule_of[l][2], rule_of[l][3]
  end
  -- (tma: 16-bit layers at the large batch)
  local half = false
  for _, l in ipairs(net.layers) do half = half or l.precision == "bf16" or l.precision == "fp16" end
  if half and not batch then planner.tma_chains(net, function(l) return layer_choice(l, nil) end) end
  local handoffs = planner.hwc_handoffs(net, batch, choose)
  local elems_in = net.C * net.H * net.W
  local shape_in = { net.C, net.H, net.W }
  tensor("pixels", "u8", elems_in, shape_in)
  local input_k = add("input_u8", { elems = elems_in, scale_text = net.scale_text, offset_text = net.offset_text,
    norm = net.norm, C = net.C, HW = net.H * net.W }, nil, 0, "input", { "pixels" }, "input", shape_in)
  local prev = input_k.out
  -- the tensor each layer's output is: its name, but a folded batchnorm's is
  -- the conv's it was folded into, and a conv's whose add its kernel computes
  -- (and the batchnorm's folded into that conv) is the add's
  local tensor_of = {}
  local residuals = planner.residual_adds(net)
  local fused_by = {}   -- add layer name -> the conv whose kernel computes it
  local into = {}       -- a conv's own tensor name -> the add computed in its kernel
  for _, l in ipairs(net.layers) do
    local i = l.index
    local inputs = layer_inputs(l, prev)
    for j, name in ipairs(inputs) do inputs[j] = tensor_of[name] or name end
    local shape = { l.OC, l.OH, l.OW }
    l.batch = batch
    local out_name = l.name
    local fused_into
    if l.op == "conv" and (l.pool_pad or 0) > 0 then
      -- a padded pool is no template's epilogue: the conv at full size (its bias
      -- only), then the pool kernel with the activation
      local bare = planner.unpooled(l)
      local tname, why, own = layer_choice(bare, const_left)
      local k, made = add_conv(tname, bare, own or l.params, i, l.name, inputs, l.name .. ".conv",
        { l.M, bare.OH, bare.OW })
      chosen(made, why, l)
      k = reduce_split(k, bare, i)
      local g = common.conv_geom(l)
      add("pool", { C = l.M, H = g.CH, W = g.CW, kind = g.kind, PK = g.PK, PS = g.PS, PP = g.PP, act = l.act },
        nil, i, l.name, { k.out }, l.name, shape)
    elseif l.op == "conv" then
      local tname, why, own = choose(l, const_left)
      local r = residuals[l.name]
      local k
      if r and import(tname).fuses_add then
        -- the add's other operands (tensors made before this kernel) read in the epilogue
        local operands = {}
        for j, name in ipairs(r.others) do operands[j] = tensor_of[name] or name end
        l.residual = { n = #r.others, at = r.at, act = r.add.act }
        local kin = { inputs[1] }
        for _, name in ipairs(operands) do kin[#kin + 1] = name end
        k = add(tname, l, own or l.params, i, l.name, kin, r.add.name, shape)
        l.residual = nil
        if k.residual then
          fused_by[r.add.name] = l.name
          into[l.name] = r.add.name
          out_name, fused_into = r.add.name, r.add.name
          -- (the shape line names no layer or tensor: two layers may share the kernel,
          -- and the header's layer line names each; the manifest's into= names the add)
          k.shape = string.format("%s; then an add of %d tensors (the conv's at place %d), %s, in the epilogue",
            k.shape, #r.others + 1, r.at, r.add.act)
        else
          -- the template left its epilogue unfused (e.g. direct's fuse=0): as without the add
          out.kernels[#out.kernels] = nil
          out.tensors[#out.tensors] = nil
          tensors[r.add.name] = nil
          seen[k.name] = was_seen
          const_left = const_left + (k.const_bytes or 0)
          k = nil
        end
      end
      local made = { k }
      if not k then
        -- a channels-last hand-off (planner.hwc_handoffs): stored so where the epilogue computes
        -- the whole layer with the parameters it takes; read so where the layer before stored it so
        local ho = handoffs[l.name]
        l.hwc_out = ho and ho.tname == tname and stores_hwc(tname, l, own or l.params, i) or nil
        l.hwc_in = tensors[inputs[1]] and tensors[inputs[1]].hwc and true or nil
        if l.hwc_in and not import(tname).hwc_in then
          fail(i, nil, string.format("'%s' is channels-last, which %s does not read", inputs[1], tname))
        end
        k, made = add_conv(tname, l, own or l.params, i, l.name, inputs, l.name, shape)
        if l.hwc_out then tensors[k.out].hwc = shape end
        l.hwc_out, l.hwc_in = nil, nil
      end
      chosen(made, why, l)
      k = reduce_split(k, l, i)
      if planner.pixel_twin(net, l, k, inputs) then
        -- the same kernel reading the pixels: the u8 feed runs it and neither
        -- input_u8 nor k (planner.pixel_twin)
        local pl = {}
        for key, val in pairs(l) do pl[key] = val end
        pl.pixels = { scale_text = net.scale_text, offset_text = net.offset_text, norm = net.norm, C = net.C }
        tensors[k.out].premade = true
        local tw = add(tname, pl, own or l.params, i, l.name, { "pixels" }, k.out, shape)
        tw.chosen = (why and (why .. "; ") or "") .. "reads the uint8 pixels itself (the input kernel folded in)"
        tw.precision_line = k.precision_line
        input_k.feed, k.feed, tw.feed = "f32", "f32", "u8"
      end
      if not k.fused then
        -- unfused epilogue: conv (+bias) at full size, then the pool (which applies
        -- the activation to what it reads), or the activation alone
        local g = common.conv_geom(l)
        k.out = rename(k.out, l.name .. ".conv")
        tensors[k.out].shape = { l.M, g.CH, g.CW }
        if g.kind ~= "none" then
          add("pool", { C = l.M, H = g.CH, W = g.CW, kind = g.kind, PK = g.PK, PS = g.PS, act = l.act },
            nil, i, l.name, { k.out }, l.name, shape)
        elseif l.act ~= "none" then
          add("activation", { elems = l.M * g.CH * g.CW, act = l.act }, nil, i, l.name, { k.out }, l.name, shape)
        else
          k.out = rename(k.out, l.name)
          tensors[k.out].shape = shape
        end
      end
    elseif l.op == "fc" and tail and tail.fc == l then
      -- ops/tail.lua: the fc, then the softmax after it (out1) and the predictions
      l.softmax = tail.softmax and tail.softmax.name or false
      local k = add("tail", l, nil, i, l.name, inputs, l.name, shape)
      l.softmax = nil
      k.chosen = tail.why
      k.precision_line = planner.precision_line(l, k)
      if tail.softmax then
        local sm = tail.softmax
        also(k, sm.name, dt, sm.OC * sm.OH * sm.OW, { sm.OC, sm.OH, sm.OW })
      end
      also(k, out.predict, "i32", 1, { 1, 1, 1 })
      predicted = true
    elseif l.op == "softmax" and tail and tail.softmax == l then
      -- computed by the tail's kernel (its tensor made there)
    elseif l.op == "fc" then
      local tname, why, own = layer_choice(l, const_left)
      local k = add(tname, l, own or l.params, i, l.name, inputs, l.name, shape)
      k.chosen = why
      k.precision_line = planner.precision_line(l, k)
      -- a split reduction (fc_tc's, as the 1x1 convolution it runs): its partials, then splitk_reduce
      if k.split then reduce_split(k, import(tname).conv_table(l), i) end
    elseif l.op == "batchnorm" and l.folded then
      -- folded into the conv before it (its weights, bias and activation): no
      -- kernel; the layer's output is the conv's tensor
      out_name = inputs[1]
      for _, add_name in pairs(into) do
        if add_name == out_name then fused_into = add_name end
      end
    elseif l.op == "add" and fused_by[l.name] then
      -- computed in the epilogue of the conv that produces one of its operands
      out_name = l.name
    elseif l.op == "batchnorm" then
      local s = tensors[inputs[1]].shape
      add("batchnorm", { elems = s[1] * s[2] * s[3], C = s[1], H = s[2], W = s[3], act = l.act }, nil, i, l.name,
        inputs, l.name, shape)
    elseif l.op == "concat" and tensors[l.name] then
      -- some inputs were written into their slices by their own kernels
      -- (planner.concat_slices); the kernel copies the others, if any, to theirs
      local parts, offs, copy, at = {}, {}, {}, 0
      for _, name in ipairs(inputs) do
        local t = tensors[name]
        if not t then fail(i, nil, "input '" .. tostring(name) .. "' is no tensor made before it") end
        if t.view ~= l.name then
          copy[#copy + 1], parts[#parts + 1], offs[#offs + 1] = name, t.elems, at
        elseif t.view_off ~= at then
          fail(i, nil, string.format("input '%s' was written at element %d of '%s', not at %d", name, t.view_off,
            l.name, at))
        end
        at = at + t.elems
      end
      if #copy > 0 then
        local s = tensors[copy[1]].shape
        add("concat", { elems = l.OC * l.OH * l.OW, C = s[1], H = s[2], W = s[3], n_in = #copy, parts = parts,
          offs = offs, act = l.act }, nil, i, l.name, copy, l.name, shape)
      else
        -- every input in place: no kernel; the tensor is whole once its last input's kernel ran
        tensors[l.name].premade = nil
      end
    elseif not l.family then
      local s = tensors[inputs[1]] and tensors[inputs[1]].shape
      if not s then fail(i, nil, "input '" .. tostring(inputs[1]) .. "' is no tensor made before it") end
      -- ops of several inputs (add, concat) also get each input's elements and the activation
      local parts = {}
      for j, name in ipairs(inputs) do parts[j] = tensors[name] and tensors[name].elems or 0 end
      local elems = l.op == "concat" and l.OC * l.OH * l.OW or s[1] * s[2] * s[3]
      -- a softmax ending the network writes the predictions too (one kernel, not two)
      local predict = l.op == "softmax" and l.name == final_out
      local k = add(l.op, { elems = elems, C = s[1], H = s[2], W = s[3], n_in = #inputs, parts = parts, act = l.act,
        predict = predict }, nil, i, l.name, inputs, l.name, shape)
      if predict then
        also(k, out.predict, "i32", 1, { 1, 1, 1 })
        predicted = true
      end
    else
      fail(i, nil, "no template for op '" .. tostring(l.op) .. "'")
    end
    out.layers[#out.layers + 1] = { name = l.name, op = l.op, inputs = inputs, out = out_name, fused_into = fused_into }
    tensor_of[l.name] = out_name
    prev = out_name
  end
  out.output = prev
  local s = tensors[prev].shape
  if not predicted then
    add("argmax", { elems = s[1] * s[2] * s[3] }, nil, #net.layers, "predict", { prev }, out.predict, { 1, 1, 1 },
      "i32")
  end
  out.max_batch = 0x7fffffff // elems_max
  -- at a few images, the whole network in one kernel besides the per-layer ones
  -- (the runtime runs one or the other: `--whole`, by measurement by default)
  local phases = dt == "f32" and planner.whole_phases(net, out, tensors, tensor_of, residuals, fused_by)
  if phases then
    local T = import("network")
    local wl = { phases = phases, batch = batch, target = net.target, tensors = tensors,
      input = { C = net.C, HW = net.H * net.W, scale_text = net.scale_text, offset_text = net.offset_text,
                norm = net.norm } }
    local p, listed = resolve(T, "network", wl, nil, #net.layers)
    local k = T.kernel(wl, p)
    k.template, k.layer, k.params, k.inputs, k.out = "network", "*", listed, { "pixels" }, "predict"
    out.kernels[#out.kernels + 1] = k
  end
  return out
end

-- The whole-network kernel (templates/ops/network.lua) is generated for buckets
-- of up to WHOLE_MAX_BATCH images, networks of at most WHOLE_MAX_PHASES layers
-- (its code grows with them), and at most WHOLE_MAX_MACS convolution
-- multiply-adds a launch: it spreads each output's reduction over at most a warp
-- and tiles nothing, so a deep convolution at many images is the tiled per-layer
-- kernels' work (a launch's worth of FP32 FMAs at 10 % of an H100's peak: 32 M
-- multiply-adds take about 10 us, more than the launches it saves).
planner.WHOLE_MAX_BATCH = 8
planner.WHOLE_MAX_PHASES = 16
planner.WHOLE_MAX_MACS = 32 * 1024 * 1024

-- The layers of the network as the whole-network kernel runs them: a list of
-- phases { op, layer, ins, out, ... } over the tensors the per-layer kernels
-- write (out.layers, built by planner.build), or nil where the network has a
-- layer the kernel does not run (a padded or global pool, a batch norm not
-- folded, 16-bit tensors), is too large (above), or no bucket is asked for.
function planner.whole_phases(net, out, tensors, tensor_of, residuals, fused_by)
  local batch = batch_of(net)
  if not batch or batch > planner.WHOLE_MAX_BATCH then return nil end
  local phases, macs = {}, 0
  for idx, l in ipairs(net.layers) do
    local ol = out.layers[idx]
    local ph = { op = l.op, layer = l, ins = ol.inputs, out = ol.out }
    if l.op == "conv" then
      local g = common.conv_geom(l)
      if (l.pool_pad or 0) > 0 or g.kind == "global_avg" or (g.kind ~= "none" and g.PK ~= g.PS) then return nil end
      macs = macs + conv_macs(l, g, batch)
      local r = residuals[l.name]
      if ol.fused_into and r then
        local others = {}
        for j, name in ipairs(r.others) do others[j] = tensor_of[name] or name end
        ph.residual = { others = others, at = r.at, act = r.add.act }
        ph.ins = { ol.inputs[1] }
      end
    elseif l.op == "fc" then
      ph.ins = { ol.inputs[1] }
    elseif l.op == "batchnorm" and l.folded then
      ph = nil
    elseif l.op == "add" then
      -- (an add computed in a conv's epilogue is that conv's phase)
      if fused_by[l.name] then ph = nil else ph.E = tensors[ol.inputs[1]].elems end
    elseif l.op == "concat" then
      -- (the inputs written into their slices by their conv phases are not copied:
      -- parts and their first elements, `at`, are the others'; none, no phase)
      ph.E = tensors[ol.out].elems
      ph.parts, ph.at, ph.ins = {}, {}, {}
      local at = 0
      for _, name in ipairs(ol.inputs) do
        if tensors[name].view ~= ol.out then
          ph.ins[#ph.ins + 1], ph.parts[#ph.parts + 1], ph.at[#ph.at + 1] = name, tensors[name].elems, at
        end
        at = at + tensors[name].elems
      end
      if #ph.ins == 0 then ph = nil end
    elseif l.op == "softmax" then
      ph.E = tensors[ol.inputs[1]].elems
    else
      return nil
    end
    -- a tensor written into a concat's slice: by a conv phase alone (network.lua stores it so)
    if ph and tensors[ph.out] and tensors[ph.out].view and ph.op ~= "conv" then return nil end
    if ph then phases[#phases + 1] = ph end
  end
  if #phases == 0 or #phases > planner.WHOLE_MAX_PHASES or macs > planner.WHOLE_MAX_MACS then return nil end
  local last = phases[#phases]
  if last.op == "softmax" and last.out == out.output then
    last.predict = true
  else
    phases[#phases + 1] = { op = "argmax", ins = { out.output }, E = tensors[out.output].elems }
  end
  return phases
end

-- ---- one layer, one template, one configuration (for tuning and the harness) ----
--
-- A tuner enumerates a layer's configurations, asks the template's check about
-- each, and emits the survivors one at a time, without building the network.
-- `index` is the layer's 1-based position in net.layers; `tname` a template
-- name ("conv2d_direct", "fc_vec"), nil for the one the spec's strategy names.

-- Most combinations candidates() examines unless told otherwise (about 0.45 s a
-- 100,000 on the development machine). The largest product on the zoo's layers
-- is 261,120 (igemm_tc on a 1x1 layer of 200 maps); at the former cap of
-- 100,000 the search skipped every later value of the first parameter (bm).
planner.CANDIDATE_CAP = 1000000

-- The layer at `index`, or a failure naming it.
local function layer_at(net, index)
  local l = net.layers[index]
  if not l then fail(0, nil, string.format("no layer %s (the network has %d)", tostring(index), #net.layers)) end
  if l.op ~= "conv" and l.op ~= "fc" then
    fail(index, nil, string.format("layer '%s' is a %s; only conv and fc layers have tunable kernels", l.name, l.op))
  end
  return l
end

-- The template serving layer l when none is named: conv2d_<strategy> or fc_<strategy>.
function planner.layer_template(l) return (layer_choice(l)) end

-- The table a conv or fc template receives for layer `index`: the spec's layer
-- fields plus `const_left`, the constant memory its weights may take (alone, a
-- layer has the whole budget; planner.build gives it what earlier layers left),
-- and `batch`, the images a launch is estimated for (net.batch: the caller's,
-- e.g. tune --batch; nil for common.cost's default), which only T.cost reads.
function planner.layer_table(net, index, const_left)
  local l = {}
  local src = layer_at(net, index)
  if (src.pool_pad or 0) > 0 then src = planner.unpooled(src) end
  for k, v in pairs(src) do l[k] = v end
  l.params = nil
  if planner.half_target(net) ~= "f32" then l.dtype = planner.dtype_of(net.precision) end
  l.const_left = const_left or common.CONST_BUDGET
  l.batch = batch_of(net)
  return l
end

-- Template `tname` (default: the layer's own) and the layer table for it.
local function setup(net, index, tname)
  local l = planner.layer_table(net, index)
  tname = tname or planner.layer_template(l)
  local prefix = l.op == "conv" and "conv2d_" or "fc_"
  if tname:sub(1, #prefix) ~= prefix then
    fail(index, nil, string.format("template %s does not serve %s layers", tname, l.op))
  end
  return import(tname), tname, l
end

-- The parts of a template of several kernels, as words ("in, mul, out").
local function parts_list(T)
  local w = {}
  for i, part in ipairs(T.parts) do w[i] = part.part end
  return table.concat(w, ", ")
end

-- The template's cost estimate for one accepted configuration (T.cost, optional:
-- nil without one); a number >= 0 (math.huge for "cannot run well"), else an error.
local function cost_of(T, tname, l, p)
  if not T.cost then return nil end
  local c = T.cost(l, p)
  if type(c) ~= "number" or c ~= c or c < 0 then
    error(string.format("%s: T.cost returned %s; expected a number >= 0", tname, tostring(c)), 0)
  end
  return c
end

-- Every legal configuration of layer `index` for template `tname`: the cartesian
-- product of each declared parameter's legal(l) values (only default(l) for one
-- declared with `tune = false`: a choice of what is computed, not how fast,
-- e.g. conv2d_direct's `fuse`), first parameter varying
-- slowest, each put to the template's check. At most `cap` combinations
-- (default planner.CANDIDATE_CAP) are examined; `note` says so when the product
-- is larger. Returns { template, names = {declared order}, total, examined,
-- refused, note, accepted = { { params = {k = v}, text = "k=v k=v", cost = T.cost(l, p)
-- or nil when the template declares no cost model }, ... },
-- reasons = { { param, count, example }, ... } (refusals grouped by the
-- parameter the check blamed, in order of first appearance) }.
function planner.candidates(net, index, tname, cap)
  local T, name, l = setup(net, index, tname)
  cap = cap or planner.CANDIDATE_CAP
  local names, lists, total = {}, {}, 1
  for i, d in ipairs(T.params) do
    names[i] = d.name
    -- a parameter declared `tune = false` is no tuning choice: its default only
    if d.tune == false then lists[i] = { d.default(l) } else lists[i] = d.legal(l) end
    total = total * #lists[i]
  end
  local res = { template = name, names = names, total = total, examined = 0, refused = 0,
                accepted = {}, reasons = {} }
  if T.parts then
    -- a template of several kernels: no candidate the harness (one kernel) can time
    res.note = string.format("%s runs as %d kernels (%s): not timed alone; write strategy %s in the spec and time " ..
      "the network (convgen run --profile)", name, #T.parts, parts_list(T), (name:gsub("^conv2d_", "")))
    return res
  end
  if total > cap then
    res.note = string.format("%d combinations, more than the cap of %d: only the first %d were examined",
      total, cap, cap)
  end
  local at, by = {}, {}
  for i = 1, #lists do at[i] = 1 end
  while res.examined < math.min(total, cap) do
    local p = {}
    for i, d in ipairs(names) do p[d] = lists[i][at[i]] end
    res.examined = res.examined + 1
    local msg, param = T.check(l, p)
    if msg then
      res.refused = res.refused + 1
      local key = param or "-"
      if not by[key] then
        by[key] = { param = param, count = 0, example = msg }
        res.reasons[#res.reasons + 1] = by[key]
      end
      by[key].count = by[key].count + 1
    else
      res.accepted[#res.accepted + 1] = { params = p, text = listing(T, l, p), cost = cost_of(T, name, l, p) }
    end
    -- next combination: the last parameter advances fastest
    local i = #lists
    while i >= 1 do
      at[i] = at[i] + 1
      if at[i] <= #lists[i] then break end
      at[i] = 1
      i = i - 1
    end
    if i < 1 then break end
  end
  return res
end

-- The parameters a caller gives for layer `index`, over the spec's own when
-- `tname` is the layer's template (the spec's values were written for it), or
-- over the tuning record's for this bucket when `tname` is its template.
--
-- At a bucket whose rules give the layer's template parameters of their own (small_conv's
-- 32-pixel tiles, small_planes' 16-map tiles, fc_split's), those, less a `split` (a kernel is
-- timed alone here): the kernel the network runs at that bucket, or its unsplit self. Before,
-- `tune --batch 1` measured its candidates against the template's own defaults (47.7-119.2 us
-- on an H200 where the networks' kernels took 20-78 us: bench/RESULTS.md, 2026-11-29).
local function given(net, index, tname, params)
  local l, out = net.layers[index], {}
  local tn, own = nil, nil
  if not (l.tuned and tname == l.tuned.template) and batch_of(net) then
    local _
    tn, _, own = layer_choice(planner.layer_table(net, index))
  end
  if l.tuned and tname == l.tuned.template then
    for k, v in pairs(l.tuned.params) do out[k] = v end
  elseif own and tname == tn then
    for k, v in pairs(own) do
      if k ~= "split" then out[k] = v end
    end
  elseif tname == planner.layer_template(l) then
    for k, v in pairs(l.params or {}) do out[k] = v end
  end
  for k, v in pairs(params or {}) do out[k] = v end
  return out
end

-- The configuration of layer `index` for template T a caller means: the
-- parameters asked for (over the spec's, see given()) fixed, the rest searched
-- as a spec's layer gets them (resolve: each default first, then its legal
-- values, the first combination the template accepts), so `--params fp=1` means
-- what `params: {fp: 1}` in the spec means and a full set is checked as it is.
-- Returns the values and their "k=v" list; an illegal, unknown or refused value
-- is a failure.
local function configure(T, name, l, net, index, params)
  return resolve(T, name, l, given(net, index, name, params), index)
end

-- The template's verdict on one configuration (chosen as configure() does):
-- nil when accepted, else (message, parameter) for an illegal value, an unknown
-- name, a refusal of the check, or a layer no configuration suits.
function planner.check_one(net, index, tname, params)
  local T, name, l = setup(net, index, tname)
  local ok, res = pcall(configure, T, name, l, net, index, params)
  if not ok then
    if type(res) == "table" then return res.message, res.cg_param end
    error(res, 0)
  end
  return nil
end

-- The kernel record of layer `index` under one configuration (chosen as
-- configure() does; an illegal or refused one is a failure): what
-- planner.build lists for the layer's conv or fc kernel, with tensors
-- "input" and the layer's output ("<layer>.conv" when the epilogue is not fused).
function planner.emit_one(net, index, tname, params)
  local T, name, l = setup(net, index, tname)
  if T.parts then
    fail(index, nil, string.format("%s runs as %d kernels (%s) and a kernel is timed alone here; generate " ..
      "the network to run it (convgen run --profile times its kernels)", name, #T.parts, parts_list(T)))
  end
  local p, listed = configure(T, name, l, net, index, params)
  local k = common.add_pdl(planner.half_kernel(T.kernel(l, p), l, net.precision), l.target or net.target)
  if k.split then
    -- the harness launches one kernel and compares its output with the layer's
    fail(index, "split", string.format("split=%d runs as two kernels (the partial sums, then splitk_reduce), " ..
      "and a kernel is timed alone here; generate the network to run it (generate --batch 1 splits " ..
      "where planner.split_of finds the tiles too few)", k.split))
  end
  k.template = name
  k.layer = l.name
  k.params = listed
  k.inputs = { "input" }
  k.out = k.fused and l.name or (l.name .. ".conv")
  k.in_elems = l.C * l.H * l.W
  return k
end

-- Entry point for C callers of the functions above: planner[fname](...) as
-- (result...) or (nil, failure table).
function planner.call(fname, ...)
  local res = table.pack(pcall(planner[fname], ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  if type(res[2]) == "table" then return nil, res[2] end
  error(res[2], 0)
end

-- Entry point for the generator: (result) or (nil, failure table).
function planner.generate(net)
  local ok, res = pcall(planner.build, net)
  if ok then return res end
  if type(res) == "table" then return nil, res end
  error(res, 0)
end

return planner
