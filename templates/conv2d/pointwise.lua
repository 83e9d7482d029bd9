-- conv2d_pointwise.lua — a 1x1 convolution of 16-bit tensors (`strategy: pointwise`; bf16 or
-- fp16, sm_80 and newer) as the matrix product it is in NCHW: for each image,
-- out[M][P] = w[M][C] x in[C][P], P = H*W pixels, each channel's plane and each map's plane
-- contiguous. The images' pixels are one long N dimension (column q = image * P + pixel), so
-- a block's tile is bm maps by bp consecutive columns, and every operand lies as it is stored:
-- the weights K-major (a row of C channels a map), the input N-major (a plane's pixels), the
-- output N-major. Nothing is gathered: a block copies the weights' rows and the planes' runs of
-- pixels by cp.async (16, 8 or 4 bytes: the largest run of 8, 4 or 2 pixels that divides P, so
-- no run crosses an image or leaves its alignment; one 2-byte load where P is odd) into a ring
-- of st stages of bk channels, and writes the tile back through shared memory in the same runs.
--
-- Why a template of its own: these layers move (C + M) * P values an image for 2*C*M*P
-- operations, under the H200's BF16 ridge of about 220 operations a byte for C, M up to a few
-- hundred, so they are bound by memory. The implicit-GEMM templates stage the input channels
-- innermost from 2-byte gathers and store 2-byte outputs map by map; on an H200 in bf16 at
-- 10,000 images zoo-1x1's 64 -> 256 layer took 4.46 ms under igemm_wg, against a bytes' floor
-- near 0.65 ms; here 1.94 (bench/RESULTS.md, "1x1 layers of 16-bit tensors as one matrix product").
--
-- A block keeps its map tile (bid % MT) and computes tpb column tiles one after another; wr=1
-- copies its bm rows of weights once (zeros past C), wr=0 a [bm][bk] tile with every stage. The
-- ring: stages (tile, channel slice) 0 .. st-2 copied first; for stage i: its copies awaited, a
-- barrier, stage i + st - 1 copied into the buffer stage i - 1 used (the next tile's while this
-- one's products and epilogue run), stage i's products. Products: mma.sync.m16n8k16 (FP32
-- accumulators), A (weights) by ldmatrix.x4, B (input) by ldmatrix.x4.trans from [bk][bp] rows
-- (two n8 tiles a load); rows padded by 16 bytes so that ldmatrix's eight rows fall in distinct
-- banks. A warp computes a (bm/wm) x (bp/wn) tile. Channels past C and columns past the batch
-- are zero-filled. After a tile's last stage, its epilogue (bias loaded once a block, activation,
-- rounded once; a pair of neighbouring columns one store) goes into a [bm][bp] tile of its own,
-- then each thread writes runs of pixels with one store each. Where a tile row's runs divide the
-- threads, a thread's runs keep one column of the tile, so it finds their image and pixel once a
-- stage. fp=1 fuses a 2x2 pool of stride 2: a column tile is then whole row pairs of one image,
-- pooled from the epilogue tile (FP32 under an average) a window a thread; fp=0 stores the conv +
-- bias unpooled and leaves the activation and the pool to the pool kernel. Without sm_80 (the CPU
-- emulation of test_emulate) the copies are memcpy and the products FMAs on the staged values,
-- in FP32.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.out_slice = true   -- common.out_slice: the output written into a concat's slice

T.doc = "1x1 convolution of 16-bit tensors as a plain matrix product over the images' pixels: operands copied "
  .. "by cp.async as they lie, mma.sync k16 (sm_80+)"

-- The largest run of 8, 4 or 2 elements dividing n (1 where n is odd).
local function run_of(n)
  for _, r in ipairs({ 8, 4, 2 }) do
    if n % r == 0 then return r end
  end
  return 1
end

-- Whether the layer's pool is one the kernel may fuse: 2x2 windows of stride 2, max or average.
local function poolable(g) return g.tiled_pool and g.PK == 2 end

-- The layer's geometry and element sizes (configuration p: its fp; nil: unpooled): P pixels a
-- plane, the runs of the input (GX) and the weights' rows (GW), whether the kernel applies the
-- activation (no pool to follow, or the pool fused: pool), the epilogue tile's element size and
-- row padding. Fused, a column tile is RP pairs of rows of one image (TP = 2*RP*W of its bp
-- columns; the rest idle), TPI such tiles an image, and a run lies in one row pair: GX divides 2W.
local function geom(l, p)
  local g = common.conv_geom(l)
  local t = common.types(l)
  local pool = p ~= nil and p.fp == 1 and poolable(g)
  local ge = { g = g, P = l.H * l.W, GX = run_of(l.H * l.W), GW = run_of(l.C), fused = g.kind == "none" or pool,
    pool = pool, osize = t.out_t == "float" and 4 or 2 }
  -- the epilogue tile: the output type, or FP32 where an average is taken of it (one rounding)
  ge.esize = (pool and g.kind == "avg") and 4 or ge.osize
  ge.OPAD = 16 // ge.esize
  if pool then
    ge.GX = math.min(ge.GX, run_of(2 * l.W))
    ge.RP = p.bp // (2 * l.W)
    ge.TP = 2 * ge.RP * l.W
    ge.TPI = ge.RP > 0 and common.ceil_div(g.OH, ge.RP) or 0
  end
  return ge
end

-- threads of a block
local function threads_of(p) return 32 * p.wm * p.wn end
-- accumulators a thread: its warp's (bm/wm) x (bp/wn) tile over 32 lanes
local function accs(p) return (p.bm // p.wm) * (p.bp // p.wn) // 32 end
-- registers a thread wants: its accumulators, the fragments of one k16 step, 48 for the copies'
-- addresses and the epilogue (ptxas spilled a few bytes of 128 x 128 tiles, 64 accumulators, under
-- a cap of 128)
local function regs(p) return accs(p) + (p.bm // p.wm // 16) * 4 + (p.bp // p.wn // 8) * 2 + 48 end

-- The reduction padded to whole stages, and the stages a tile.
local function kp(l, p) return common.ceil_div(l.C, p.bk) * p.bk end

-- Shared memory (bytes), in order: the weights (wr=1: the block's bm rows of every channel, once;
-- wr=0: a [bm][bk + 8] tile a stage of the ring), the ring's st stages of [bk][bp + 8] input
-- values, the epilogue's [bm][bp + OPAD] tile (apart, so the ring's copies go on under it).
local function layout(l, p)
  local ge = geom(l, p)
  local w = p.wr == 1 and p.bm * (kp(l, p) + 8) or p.st * p.bm * (p.bk + 8)
  local x = p.st * p.bk * (p.bp + 8)
  local e = p.bm * (p.bp + ge.OPAD) * ge.esize
  return { w = w, x = x, e = e, bytes = (w + x) * 2 + e }
end
local function smem(l, p) return layout(l, p).bytes end

-- Column tiles of bp over the images' pixels (pool fused: TPI an image) at the cost model's batch.
local function col_tiles(l, p)
  local ge = geom(l, p)
  if ge.pool then return common.cost.images(l) * math.max(ge.TPI, 1) end
  return common.ceil_div(common.cost.images(l) * ge.P, p.bp)
end

-- The cost model (common.cost): each SM's share of the blocks, each block its tpb tiles, each
-- tile the larger of its products (mma.sync at half wgmma's dense rate: 8 FP32 FMAs' worth a
-- lane a clock) and its bytes (copies in, the tile out, at 64 bytes a clock from L2), the
-- weights once a block (wr=1) or once a tile, plus the ring's fill once a block; blocks an SM
-- holds at once overlap one another's latency.
function T.cost(l, p)
  local ge = geom(l, p)
  local MT = common.ceil_div(l.M, p.bm)
  local blocks = MT * common.ceil_div(col_tiles(l, p), p.tpb)
  local seq, conc = common.cost.spread(l, blocks, threads_of(p), regs(p), smem(l, p), p.occ)
  if conc == 0 then return math.huge end
  local KP = kp(l, p)
  local tensor = p.bm * p.bp * KP / (8 * common.cost.FMA_PER_CLOCK)
  local wbytes = p.bm * KP * 2
  local outs = ge.pool and p.bm * ge.TP // 4 or p.bm * p.bp
  local bytes = p.bp * KP * 2 + outs * ge.osize + (p.wr == 1 and wbytes / p.tpb or wbytes)
  local tile = math.max(tensor, bytes / 64)
  return seq * (p.tpb * tile + common.cost.LATENCY * (1 + 4 / p.st)) / math.max(1, conc / 2)
end

-- The default tile: bm the 32s covering M up to 128 (16 for 16 maps or fewer; more than 128:
-- several block rows, the input tile read again from L2), bp 128 pixels (64 where a thread's
-- registers would not leave two blocks an SM), eight warps (two over the maps where bm >= 32),
-- bk up to 64 channels, and as many stages as keep about 32 KB of input copies ahead of the
-- products (at most 8) while two blocks fit an SM, with the weights resident where two blocks fit
-- with them (zoo-1x1's 256 -> 128 with its pool fused: 2.447 ms resident, 67.6 KB, against 3.044
-- copied a stage at a time; on an H200, bf16, 10,000 images); tiles a block: up to 16, as many as
-- leave 4 blocks a block slot of the card. A pooled layer's tile holds a pair of rows (fp=1).
T.RING_AHEAD = 32 * 1024
local function default_tile(l)
  local bm = l.M <= 16 and 16 or math.min(128, common.ceil_div(l.M, 32) * 32)
  local wm = bm >= 32 and 2 or 1
  local bk = math.min(64, common.ceil_div(l.C, 16) * 16)
  local p = { bm = bm, bp = 128, wm = wm, wn = 8 // wm, bk = bk, st = 2, occ = 2, wr = 1, tpb = 1, fp = 0 }
  if regs(p) > common.reg_cap(l, threads_of(p), 2) then p.bp = 64 end
  -- a fused pool's tile holds a pair of rows at least: bp up to 256 (a whole number of pairs)
  if poolable(common.conv_geom(l)) then
    p.fp = 1
    while p.bp < 2 * l.W and p.bp < 256 do p.bp = p.bp * 2 end
    if p.bp < 2 * l.W or accs(p) > 64 then p.fp, p.bp = 0, math.min(p.bp, 128) end
    if regs(p) > common.reg_cap(l, threads_of(p), 2) then p.occ = 1 end
  end
  local function fits(q) return 2 * (smem(l, q) + 1024) <= common.max_shared(l) + 1024 end
  local st0 = math.max(2, math.min(8, common.ceil_div(T.RING_AHEAD, p.bk * (p.bp + 8) * 2) + 1))
  p.st = st0
  while p.st > 2 and not fits(p) do p.st = p.st - 1 end
  if not fits(p) then
    p.wr, p.st = 0, st0   -- resident weights that leave one block an SM: copied a stage at a time instead
    while p.st > 2 and not fits(p) do p.st = p.st - 1 end
  end
  if not fits(p) then p.occ = 1 end
  local t = l.target or {}
  local sms = (t.sms and t.sms > 0) and t.sms or 100
  local blocks = common.ceil_div(l.M, p.bm) * col_tiles(l, p)
  p.tpb = math.max(1, math.min(16, blocks // (4 * sms * p.occ)))
  return p
end

local tile = common.per_layer(default_tile)

-- A parameter's legal values: `list` where the layer is one the template computes (a 16-bit 1x1
-- layer: the tuner and the test of every candidate enumerate their product), else its first alone
-- (the one combination, which check refuses with the reason).
local function legal(list)
  return function(l)
    local ty = common.types(l)
    if l.K == 1 and common.is_half(ty.in_t) then return list end
    return { list[1] }
  end
end

T.params = {
  { name = "bm", doc = "maps per block tile, a multiple of 16 a warp row",
    legal = legal({ 128, 64, 32, 256, 16, 48, 96 }),
    default = function(l) return tile(l).bm end },
  { name = "bp", doc = "pixel columns (of the images' pixels in a row) per block tile",
    legal = legal({ 128, 64, 256, 32 }),
    default = function(l) return tile(l).bp end },
  { name = "wm", doc = "warps over the maps",
    legal = legal({ 2, 1, 4 }),
    default = function(l) return tile(l).wm end },
  { name = "wn", doc = "warps over the pixel columns",
    legal = legal({ 4, 2, 8, 1 }),
    default = function(l) return tile(l).wn end },
  { name = "bk", doc = "channels a stage, a multiple of 16",
    legal = legal({ 64, 32, 16, 128 }),
    default = function(l) return tile(l).bk end },
  { name = "st", doc = "stages in the ring of shared-memory buffers (st - 1 copied ahead of the products)",
    legal = legal({ 2, 3, 4, 6, 8 }),
    default = function(l) return tile(l).st end },
  { name = "wr", doc = "1: the block's weights copied once into shared memory; 0: a tile of them every stage",
    legal = legal({ 1, 0 }),
    default = function(l) return tile(l).wr end },
  { name = "tpb", doc = "column tiles a block computes one after another, the ring's copies running on across them",
    legal = legal({ 1, 2, 3, 4, 8, 16, 32 }),
    default = function(l) return tile(l).tpb end },
  { name = "fp", doc = "1: a 2x2 pool of stride 2 computed in the epilogue (tiles of whole row pairs); 0: the conv "
      .. "stored for the pool kernel",
    legal = legal({ 1, 0 }),
    default = function(l) return tile(l).fp end },
  common.occ_param({ 1, 2, 3 }),
}
T.params[#T.params].default = function(l) return tile(l).occ end
T.params[#T.params].legal = legal({ 1, 2, 3 })

function T.check(l, p)
  local t = l.target or {}
  local ty = common.types(l)
  local why = common.refuse_groups(l, "conv2d_pointwise")
  if why then return why, nil end
  local g = common.conv_geom(l)
  if l.K ~= 1 or g.S ~= 1 or g.padded then
    return string.format("conv2d_pointwise computes 1x1 convolutions of stride 1 without padding; this layer has " ..
      "K = %d, stride %d%s: write strategy auto", l.K, g.S, g.padded and ", padding" or ""), nil
  end
  if not common.is_half(ty.in_t) or ty.w_t ~= ty.in_t then
    return "conv2d_pointwise multiplies 16-bit inputs and weights of one type (precision bf16 or fp16); write " ..
      "strategy auto", nil
  end
  if (t.cc or 75) < 80 then
    return string.format("conv2d_pointwise needs mma.sync with 16-bit operands and cp.async: sm_80 or newer " ..
      "(the target is sm_%d)", t.cc or 75), nil
  end
  if p.bm % (16 * p.wm) ~= 0 then
    return string.format("bm=%d: %d warps over the maps take 16 maps each at least (a multiple of %d)", p.bm, p.wm,
      16 * p.wm), "bm"
  end
  if p.bp % (16 * p.wn) ~= 0 then
    return string.format("bp=%d: %d warps over the pixels take two 8-pixel tiles each at least (a multiple of %d)",
      p.bp, p.wn, 16 * p.wn), "bp"
  end
  why = common.check_map_tile(l, p.bm)
  if why then return why, "bm" end
  if p.bk % 16 ~= 0 then return string.format("bk=%d: mma.sync reduces 16 channels at a time", p.bk), "bk" end
  if p.bk > common.ceil_div(l.C, 16) * 16 then
    return string.format("bk=%d is more than the layer's %d channels (in sixteens)", p.bk, l.C), "bk"
  end
  local NT = threads_of(p)
  if NT > common.MAX_THREADS then return string.format("wm=%d x wn=%d warps: more than %d threads", p.wm, p.wn,
    common.MAX_THREADS), "wn" end
  if accs(p) > 128 then
    return string.format("bm=%d x bp=%d over %d warps: %d accumulators a thread (at most 128)", p.bm, p.bp,
      p.wm * p.wn, accs(p)), "bp"
  end
  if p.tpb < 1 then return string.format("tpb=%d: a block computes one tile or more", p.tpb), "tpb" end
  if p.fp == 1 and poolable(g) and p.bp < 2 * l.W then
    return string.format("fp=1: a tile holds a pair of the %d-pixel rows at least (bp=%d < %d)", l.W, p.bp, 2 * l.W), "bp"
  end
  local bytes = smem(l, p)
  if bytes > common.max_shared(l) then
    return string.format("st=%d stages of %d x %d pixels, %s weights and the %d x %d epilogue tile need %d bytes " ..
      "of shared memory; at most %d fit", p.st, p.bk, p.bp, p.wr == 1 and "resident" or "staged", p.bm, p.bp,
      bytes, common.max_shared(l)), p.wr == 1 and "wr" or "st"
  end
  why = common.check_occ(l, p.occ, NT, regs(p), bytes, "the accumulators and fragments")
  if why then return why, "occ" end
  return nil
end

-- The lines (indented `ind`) copying `bytes` (4, 8 or 16: common.cp_async under sm_80; 2: a plain
-- load) from global element pointer `src` to shared element pointer `dst`, zero where `ok` is
-- false; without sm_80 (the CPU emulation) a memcpy or zeros.
local function copy(ind, bytes, dst, src, ok, elem)
  if bytes == 2 then
    return string.format("%sif (%s) %s[0] = %s[0]; else %s[0] = %s{};", ind, ok, dst, src, dst, elem)
  end
  return common.cp_async(bytes, ind, string.format("(unsigned)__cvta_generic_to_shared(%s)", dst), dst, src, ok,
    "__CUDA_ARCH__ >= 800")
end

-- The type of a store of `bytes` (2 to 16): its bits copied as they are (the vector float types
-- for 8 and 16 bytes, as the CPU emulation knows them).
local WORD = { [2] = "unsigned short", [4] = "unsigned", [8] = "float2", [16] = "float4" }

local source = engine.compile([=[
{{head}}
{
    // in: n x {{C}} x {{P}}, w: {{M}} x {{C}}, out: n x {{M}} x {{P}}; column q = image * {{P}} + pixel
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
    {{in_t}}* const ws = reinterpret_cast<{{in_t}}*>(smem4);   // {{wdoc}}
    {{in_t}}* const xs = ws + {{WSZ}};   // {{ST}} stages of [{{BK}}][{{XS}}] input values
    {{e_t}}* const es = reinterpret_cast<{{e_t}}*>(xs + {{XSZ}});   // the epilogue's [{{BM}}][{{OS}}]
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    // the block: map tile bid % {{MT}} (map tiles of the same columns next to each other), column tiles
    // t0 .. t0 + nt - 1 of {{BP}} columns, {{KT}} stage{{KT > 1 and "s" or ""}} of {{BK}} channels each
    const int bid = blockIdx.x + blockIdx.y * gridDim.x;
    const int m0 = (bid % {{MT}}) * {{BM}};
% if not POOL then
    const long long NP = (long long)n * {{P}};
% end
    const long long t0 = (long long)(bid / {{MT}}) * {{TPB}};
% if POOL then
    const long long left = (long long)n * {{TPI}} - t0;   // tiles of {{RP}} row pair{{RP > 1 and "s" or ""}}, {{TPI}} an image
% else
    const long long left = (NP + {{BP - 1}}) / {{BP}} - t0;
% end
    const int NI = (int)(left < {{TPB}} ? left : {{TPB}}) * {{KT}};
    // the warp's tile: rows wr0 .. +{{WR - 1}}, columns wc0 .. +{{WC - 1}}
    const int wr0 = (warp / {{WN}}) * {{WR}}, wc0 = (warp % {{WN}}) * {{WC}};
% if FIXED then
    // a thread's runs of {{GX}} columns, in the copies and the stores alike: column jx of a tile, rows rx + {{RSTEP}}k
    const int jx = (tid % {{XJ}}) * {{GX}}, rx = tid / {{XJ}};
% end
% if bias then
    // the bias of the thread's maps (rows wr0 + 16i + g and + 8), once
    {{acc_t}} bv[{{FM}}][2];
#pragma unroll
    for (int i = 0; i < {{FM}}; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int m = m0 + wr0 + i * 16 + g + 8 * h;
            bv[i][h] = m < {{M}} ? {{w_to_acc("__ldg(b + m)")}} : 0.0f;
        }
% else
    (void)b;
% end

% if WRES then
    // the block's weights, once: {{BM}} rows of {{KP}} channels (zeros past {{C}}) in runs of {{GW}}
#pragma unroll 1
    for (int u = tid; u < {{BM * KP // GW}}; u += {{NT}}) {
        const int r = u / {{KP // GW}}, c = (u % {{KP // GW}}) * {{GW}};
        const bool ok = m0 + r < {{M}} && c < {{C}};
        const {{in_t}}* const src = ok ? w + (long long)(m0 + r) * {{C}} + c : w;
        {{in_t}}* const dst = ws + r * {{WS}} + c;
{{copy_w}}
    }
% end
    // stage i (tile i / {{KT}}, channels from (i % {{KT}}) * {{BK}}) into buffer i % {{ST}}: {{not WRES and "the weights' " .. BM .. " rows of " .. BK .. " channels in runs of " .. GW .. ", then " or ""}}the
    // input's {{BK}} planes of {{BP}} columns in runs of {{GX}} (a run lies in one image: {{GX}} divides {{P}})
    auto issue = [&](int i) {
        const int k0 = (i % {{KT}}) * {{BK}};
% if not POOL then
        const long long q0 = (t0 + i / {{KT}}) * {{BP}};
% end
        {{in_t}}* const xd = xs + (i % {{ST}}) * {{XSTAGE}};
% if not WRES then
        {{in_t}}* const wd = ws + (i % {{ST}}) * {{WSTAGE}};
#pragma unroll
        for (int u = tid; u < {{BM * BK // GW}}; u += {{NT}}) {
            const int r = u / {{BK // GW}}, c = (u % {{BK // GW}}) * {{GW}};
            const bool ok = m0 + r < {{M}} && k0 + c < {{C}};
            const {{in_t}}* const src = ok ? w + (long long)(m0 + r) * {{C}} + k0 + c : w;
            {{in_t}}* const dst = wd + r * {{WS}} + c;
{{copy_w}}
        }
% end
% if POOL then
        // tile t: image t / {{TPI}}, row pairs from (t % {{TPI}}) * {{RP}}: columns j < jmax of its {{TP}} are its pixels
        // pr0 * {{2 * W}} + j (the rest idle)
        const long long t = t0 + i / {{KT}};
        const long long img = t / {{TPI}};
        const int pr0 = (int)(t - img * {{TPI}}) * {{RP}};
        const int jmax = min({{TP}}, ({{OH}} - pr0) * {{2 * W}});
        const {{in_t}}* const run = in + img * {{C * P}} + pr0 * {{2 * W}};
% if not FIXED then
#pragma unroll
        for (int u = tid; u < {{BK * BP // GX}}; u += {{NT}}) {
            const int r = u / {{BP // GX}}, j = (u % {{BP // GX}}) * {{GX}};
            const bool ok = k0 + r < {{C}} && j < jmax;
            const {{in_t}}* const src = ok ? run + (k0 + r) * {{P}} + j : in;
            {{in_t}}* const dst = xd + r * {{XS}} + j;
{{copy_x}}
        }
% end
% elseif FIXED then
        // this thread's run: columns jx .. +{{GX - 1}} of planes rx, rx + {{RSTEP}}, ...: one image and pixel a stage
        const long long q = q0 + jx;
        const long long img = q / {{P}};
        const {{in_t}}* const run = in + img * {{C * P}} + (q - img * {{P}});
% end
% if FIXED then
#pragma unroll
        for (int r = rx; r < {{BK}}; r += {{RSTEP}}) {
            const bool ok = k0 + r < {{C}} && {{POOL and "jx < jmax" or "q < NP"}};
            const {{in_t}}* const src = ok ? run + (k0 + r) * {{P}}{{POOL and " + jx" or ""}} : in;
            {{in_t}}* const dst = xd + r * {{XS}} + jx;
{{copy_x}}
        }
% elseif not POOL then
#pragma unroll
        for (int u = tid; u < {{BK * BP // GX}}; u += {{NT}}) {
            const int r = u / {{BP // GX}}, j = (u % {{BP // GX}}) * {{GX}};
            const long long q = q0 + j;
            const bool ok = k0 + r < {{C}} && q < NP;
            const long long img = q / {{P}};
            const {{in_t}}* const src = ok ? in + (img * {{C}} + k0 + r) * {{P}} + (q - img * {{P}}) : in;
            {{in_t}}* const dst = xd + r * {{XS}} + j;
{{copy_x}}
        }
% end
    };
    auto commit = [&]() {
#if __CUDA_ARCH__ >= 800
        asm volatile("cp.async.commit_group;" ::: "memory");
#endif
    };

    {{acc_t}} acc[{{FM}}][{{FN}}][4];
#pragma unroll
    for (int i = 0; i < {{FM}}; i++)
#pragma unroll
        for (int j = 0; j < {{FN}}; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;
#if __CUDA_ARCH__ >= 800
    {{mma_defs}}
#endif

    // the ring: stages 0 .. {{ST - 2}} first{{WRES and " (the weights in the first group)" or ""}}
#pragma unroll
    for (int i = 0; i < {{ST - 1}}; i++) {
        if (i < NI) issue(i);
        commit();
    }
#pragma unroll 1
    for (int i = 0; i < NI; i++) {
#if __CUDA_ARCH__ >= 800
        asm volatile("cp.async.wait_group {{ST - 2}};" ::: "memory");   // stage i's copies (this thread's) landed
#endif
        __syncthreads();   // everyone's, and every warp done with stage i - 1's buffer and the epilogue tile
        if (i + {{ST - 1}} < NI) issue(i + {{ST - 1}});
        commit();   // (empty past the last stage: the wait counts stay put)
% if WRES then
        const {{in_t}}* const wb = ws + (i % {{KT}}) * {{BK}};
% else
        const {{in_t}}* const wb = ws + (i % {{ST}}) * {{WSTAGE}};
% end
        const {{in_t}}* const xb = xs + (i % {{ST}}) * {{XSTAGE}};
#pragma unroll
        for (int kk = 0; kk < {{BK}}; kk += 16) {
#if __CUDA_ARCH__ >= 800
            unsigned a[{{FM}}][4], bf[{{FN}}][2];
#pragma unroll
            for (int i2 = 0; i2 < {{FM}}; i2++) {
                const unsigned at = (unsigned)__cvta_generic_to_shared(wb + (wr0 + i2 * 16 + (lane & 15)) * {{WS}} + kk + (lane >> 4) * 8);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(a[i2][0]), "=r"(a[i2][1]), "=r"(a[i2][2]), "=r"(a[i2][3]) : "r"(at));
            }
#pragma unroll
            for (int j = 0; j < {{FN}}; j += 2) {
                const unsigned at = (unsigned)__cvta_generic_to_shared(xb + (kk + (lane & 15)) * {{XS}} + wc0 + j * 8 + (lane >> 4) * 8);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(bf[j][0]), "=r"(bf[j][1]), "=r"(bf[j + 1][0]), "=r"(bf[j + 1][1]) : "r"(at));
            }
#pragma unroll
            for (int i2 = 0; i2 < {{FM}}; i2++)
#pragma unroll
                for (int j = 0; j < {{FN}}; j++) mma(acc[i2][j], a[i2], bf[j]);
#else
            // the same sums by FMAs: element r of fragment (i2, j) is map wr0 + 16*i2 + g (+8 for r >= 2),
            // column wc0 + 8j + 2*t4 (+1 for odd r)
            for (int i2 = 0; i2 < {{FM}}; i2++)
                for (int j = 0; j < {{FN}}; j++)
                    for (int r = 0; r < 4; r++) {
                        const int m = wr0 + i2 * 16 + g + (r >> 1) * 8, q = wc0 + j * 8 + 2 * t4 + (r & 1);
                        for (int k = 0; k < 16; k++)
                            acc[i2][j][r] += {{to_acc("wb[m * " .. WS .. " + kk + k]")}} * {{to_acc("xb[(kk + k) * " .. XS .. " + q]")}};
                    }
#endif
        }
        if (i % {{KT}} != {{KT - 1}}) continue;

        // the tile's epilogue: {{bias and "bias, " or ""}}{{actname}}{{e_t == "float" and " (FP32 for the average)" or ", rounded once,"}} into es; the ring's copies go on
#pragma unroll
        for (int i2 = 0; i2 < {{FM}}; i2++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int m = wr0 + i2 * 16 + g + 8 * h;
#pragma unroll
                for (int j = 0; j < {{FN}}; j++) {
                    {{vec_t(e_t, 2)}} v2;   // the pair of neighbouring columns, one store
                    v2.x = {{to_e(act("acc[i2][j][2 * h]" .. (bias and " + bv[i2][h]" or "")))}};
                    v2.y = {{to_e(act("acc[i2][j][2 * h + 1]" .. (bias and " + bv[i2][h]" or "")))}};
                    *reinterpret_cast<{{vec_t(e_t, 2)}}*>(es + m * {{OS}} + wc0 + j * 8 + 2 * t4) = v2;
                    acc[i2][j][2 * h] = 0.0f;
                    acc[i2][j][2 * h + 1] = 0.0f;
                }
            }
        __syncthreads();
% if POOL then
        // the tile's {{RP}} pooled row{{RP > 1 and "s" or ""}} out: {{pool_kind}} of each 2x2 window, one output a thread
        const long long t = t0 + i / {{KT}};
        const long long img = t / {{TPI}};
        const int pr0 = (int)(t - img * {{TPI}}) * {{RP}};
#pragma unroll 1
        for (int u = tid; u < {{BM * RP * OW}}; u += {{NT}}) {
            const int r = u / {{RP * OW}}, e = u % {{RP * OW}}, py = e / {{OW}}, px = e % {{OW}};
            if (m0 + r >= {{M}} || pr0 + py >= {{OH}}) continue;
            const {{e_t}}* const s0 = es + r * {{OS}} + py * {{2 * W}} + 2 * px;
% if pool_kind == "max" then
            const {{acc_t}} v = fmaxf(fmaxf({{e_acc("s0[0]")}}, {{e_acc("s0[1]")}}), fmaxf({{e_acc("s0[" .. W .. "]")}}, {{e_acc("s0[" .. W + 1 .. "]")}}));
% else
            const {{acc_t}} v = (s0[0] + s0[1] + s0[{{W}}] + s0[{{W + 1}}]) * 0.25f;
% end
            out[img * {{IMG}} + (m0 + r) * {{OH * OW}} + (pr0 + py) * {{OW}} + px] = {{from_acc("v")}};{{OSL and "   // a slice of a concat's output" or ""}}
        }
% else
        // the tile out: runs of {{GX}} columns, {{OB}} bytes a store{{OB > 16 and " (in 16-byte words)" or ""}}
        const long long q0 = (t0 + i / {{KT}}) * {{BP}};
% if FIXED then
        const long long q = q0 + jx;
        const long long img = q / {{P}};
        {{out_t}}* const run = out + img * {{IMG}} + (q - img * {{P}});{{OSL and "   // a slice of a concat's output" or ""}}
#pragma unroll
        for (int r = rx; r < {{BM}}; r += {{RSTEP}}) {
            if (m0 + r >= {{M}} || q >= NP) continue;
            {{out_t}}* const dst = run + (m0 + r) * {{P}};
            const {{out_t}}* const src = es + r * {{OS}} + jx;
% else
#pragma unroll
        for (int u = tid; u < {{BM * BP // GX}}; u += {{NT}}) {
            const int r = u / {{BP // GX}}, j = (u % {{BP // GX}}) * {{GX}};
            const long long q = q0 + j;
            if (m0 + r >= {{M}} || q >= NP) continue;
            const long long img = q / {{P}};
            {{out_t}}* const dst = out + img * {{IMG}} + (m0 + r) * {{P}} + (q - img * {{P}});{{OSL and "   // a slice of a concat's output" or ""}}
            const {{out_t}}* const src = es + r * {{OS}} + j;
% end
% for o = 0, OB - 1, WB do
            *reinterpret_cast<{{WORD}}*>(reinterpret_cast<unsigned char*>(dst) + {{o}}) =
                *reinterpret_cast<const {{WORD}}*>(reinterpret_cast<const unsigned char*>(src) + {{o}});
% end
        }
% end
    }
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;" ::: "memory");   // (only empty groups are left)
#endif
}
]=], "conv2d_pointwise")

function T.kernel(l, p)
  local ge = geom(l, p)
  local g = ge.g
  local ty = common.types(l)
  local act = ge.fused and l.act or "none"
  local OH, OW = l.H, l.W
  if ge.pool then OH, OW = g.OH, g.OW end
  local NT = threads_of(p)
  local MT = common.ceil_div(l.M, p.bm)
  local KP = kp(l, p)
  local lay = layout(l, p)
  local name = string.format("conv2d_pointwise_c%dm%d_h%dw%d_%s%s%s_m%dp%dk%d_w%dx%d_s%d_r%dt%d_o%d", l.C, l.M, l.H,
    l.W, act, ge.pool and g.pool_tag or "", l.bias and "_bias" or "", p.bm, p.bp, p.bk, p.wm, p.wn, p.st, p.wr,
    p.tpb, p.occ)
  -- the output written into a concat's slice (common.out_slice): its image stride
  local slice = common.out_slice(l, ge.fused)
  if slice then name = name .. slice.tag end
  local head, args = common.kernel_head(name, NT, common.std_args({ types = ty }), nil, p.occ)
  local WRES = p.wr == 1
  local WS = WRES and KP + 8 or p.bk + 8
  local XS, OS = p.bp + 8, p.bp + ge.OPAD
  local OB = ge.GX * ge.osize
  local v = {
    head = head, C = l.C, M = l.M, P = ge.P, BM = p.bm, BP = p.bp, BK = p.bk, ST = p.st, NT = NT, MT = MT,
    KT = KP // p.bk, KP = KP, TPB = p.tpb, WRES = WRES, WS = WS, XS = XS, OS = OS, WSTAGE = p.bm * WS,
    XSTAGE = p.bk * XS, WSZ = lay.w, XSZ = lay.x,
    wdoc = WRES and string.format("the block's weights, [%d][%d]", p.bm, WS)
      or string.format("%d stages of [%d][%d] weights", p.st, p.bm, WS),
    WN = p.wn, WR = p.bm // p.wm, WC = p.bp // p.wn, FM = p.bm // p.wm // 16, FN = p.bp // p.wn // 8,
    IMG = slice and slice.stride or l.M * OH * OW, OSL = slice ~= nil,
    POOL = ge.pool, pool_kind = g.kind, RP = ge.RP, TP = ge.TP, TPI = ge.TPI, OH = OH, OW = OW, W = l.W,
    e_t = ge.esize == 4 and "float" or ty.out_t,
    to_e = function(e) return ge.esize == 4 and e or common.convert("float", ty.out_t, e) end,
    e_acc = function(e) return common.convert(ty.out_t, "float", e) end,
    -- (a thread's runs keep one column where a tile's row of runs divides the threads)
    XJ = p.bp // ge.GX, FIXED = NT % (p.bp // ge.GX) == 0, RSTEP = NT // math.max(1, p.bp // ge.GX),
    GX = ge.GX, GW = ge.GW, OB = OB, WB = math.min(OB, 16), WORD = WORD[math.min(OB, 16)],
    bias = l.bias, actname = act, act = function(e) return common.act(act, e) end,
    mma_defs = common.tf32x3_mma_defs(common.half_dtype(l) == "bf16" and "bf16" or "f16", true),
    copy_w = copy(WRES and "        " or "            ", ge.GW * 2, "dst", "src", "ok", ty.in_t),
    copy_x = copy("            ", ge.GX * 2, "dst", "src", "ok", ty.in_t),
  }
  local k = {
    name = name,
    args = args,
    source = source(common.typed(l, v)),
    grid = { ge.pool and common.batch_dim(ge.TPI, p.tpb) or common.batch_dim(ge.P, p.bp * p.tpb), MT, 1 },
    block = { NT, 1, 1 },
    shared = smem(l, p),
    weights = "arg",
    bias = l.bias and "arg" or "none",
    out_elems = l.M * OH * OW,
    shape = common.conv_shape(l, g, act, ge.pool, l.M, OH, OW),
    fused = ge.fused,
    precision = l.precision,
    out_slice = slice ~= nil,
  }
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  return k
end

return T
