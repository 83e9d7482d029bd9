-- conv2d_tma.lua — a stride-1 convolution of 16-bit tensors (bf16, fp16) on Hopper's tensor
-- cores, its operands brought into shared memory by the bulk tensor copy engine (TMA)
-- (`strategy: tma`; sm_90 built as sm_90a), as two kernels a layer.
--
-- The product: D[pixels x maps] = sum over the K*K taps and the 64-channel chunks of
-- X_tap[pixels x 64] . W_tap[64 x maps]. X_tap is a box of the channels-last input
-- (64 channels, BW x BH pixels, BI images) started at the tile's corner moved by the tap,
-- (c0, x0 + kx - pl, y0 + ky - pt, i0): a tap moves only outer coordinates of a channels-last
-- tensor, and where the box lies outside the image TMA writes zeros, so the padding costs
-- nothing. Its rows are 128 bytes (64 channels) in the 128-byte swizzle: wgmma's K-major
-- operand as it lands. W_tap is the weights as the runtime places them for arg:taps
-- (tap x channel x map, maps innermost): boxes of 64 maps x 64 channels, wgmma's
-- MN-major ("transposed") operand in the same swizzle, one box per 64 maps of the tile.
-- Copies past C or M are zeros, so ragged channel chunks and map tiles add nothing. A layer of 32
-- or 16 channels or fewer steps 32 or 16 channels at a time, the input's rows 64 or 32 bytes in
-- the swizzle of that width (kc_of: written `strategy: tma` only; auto's rules start at 64).
--
-- Why two kernels. convgen's tensors are NCHW, and TMA cannot move a box of an NCHW
-- tensor a pixel sideways: any copy whose innermost start is not on 16 bytes stopped the
-- kernel with "illegal instruction" on an H200 (bench/scripts/tma_box_starts.cu). So the
-- first kernel (`nhwc`) writes the layer's input channels-last into the tensor <layer>.x,
-- and the second (`conv`) reads that through its map and stores NCHW. The transpose costs a
-- read and a write of the input; bench/scripts/tma_conv_probe.py --nchw measures both.
--
-- The conv kernel: a persistent grid (a block an SM; tiles of BM maps x BW*BH*BI pixels
-- taken in turn), blocks of NC consumer warpgroups and one producer warpgroup. The
-- producer gives its registers to the consumers (setmaxnreg) and one of its threads issues
-- each step's copies into a ring of `st` stages, each stage's arrival counted on an
-- mbarrier (`full`) and its release awaited on another (`empty`); it runs ahead into the
-- next tile while the consumers store the last. A consumer issues m64nBMk16 wgmma from the
-- stage (four k16 steps a chunk), keeps one group in flight, and releases the stage before.
-- ping=0: the NC warpgroups share a tile, 64*mw pixels each. ping=1: two warpgroups take the
-- block's tiles in turn, each the whole tile (64*mw pixels), so one stores while the other
-- multiplies; a warpgroup starts a tile's waits only after the other has passed the previous
-- tile's (`turn`): a wait more than one phase of a stage ahead would see an old phase's
-- parity and pass at once. Epilogue: bias, the activation where no pool follows, one
-- rounding to the output type, NCHW (the eight lanes of a quad position store eight
-- neighbouring pixels of one map). A pool runs after it as its own kernel.
--
-- The CPU emulation (tests/test_emulate.c) runs the same copies (common.tma_helpers: element
-- by element in the swizzle, zeros outside) into one stage and the same accumulator layout,
-- with FP32 products read back through the swizzle, the steps ordered by __syncthreads().
-- Figures: bench/RESULTS.md, "conv2d_tma".

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "implicit GEMM on warpgroup tensor cores fed by the bulk tensor copy engine (TMA): the input made " ..
  "channels-last, then wgmma from a ring of stages, a producer warpgroup; 16-bit, stride 1, sm_90 (as sm_90a)"

-- Channels a step: 64 (one 128-byte swizzled row of 16-bit values), or for layers of 32 or 16
-- channels and fewer a row of 64 or 32 bytes in the swizzle of that width (the input's box and
-- wgmma's A operand; the weights' boxes keep rows of 64 maps, 128 bytes, kc rows of channels).
local function kc_of(l) return l.C <= 16 and 16 or l.C <= 32 and 32 or 64 end
local NT_T = 256       -- threads of an nhwc block

-- (skip_hwc: not made where the layer before hands its output over channels-last, l.hwc_in)
T.parts = {
  { part = "nhwc", tensor = "x", shape = function(l) return { l.H, l.W, l.C } end, skip_hwc = true },
  { part = "conv" },
}

-- Channels-last hand-offs (planner.hwc_handoffs): where a tma layer's output is read by a tma
-- layer alone, the first stores it channels-last (l.hwc_out: pairs of maps in 4-byte stores) and
-- the second reads it through its map as it lies (l.hwc_in), without its nhwc kernel. The epilogue
-- must compute the whole layer (its pool fused, if any): T.hwc_out_ok. (A template of another kind
-- may store for it where it declares T.hwc_out_ok: conv2d_direct does, through shared memory.)
T.hwc_in = true
function T.hwc_out_ok(l, p)
  local g = common.conv_geom(l)
  return g.kind == "none" or T.pool_fused(l, p, g)
end

-- The layer's tile: warpgroups, registers and shared memory of parameters p.
local function shape(l, p)
  local s = { PIX = p.bw * p.bh * p.bi }
  s.NC = p.ping == 1 and 2 or s.PIX // (64 * p.mw)
  s.WPIX = 64 * p.mw
  s.threads = s.NC * 128 + 128
  s.ENTRY = math.min(255, 65536 // s.threads) // 8 * 8   -- registers a thread at launch
  s.RDEC = 40
  s.RINC = math.min(240, (s.threads * s.ENTRY - 128 * s.RDEC) // (s.NC * 128) // 8 * 8)
  s.NR = p.bm // 2
  s.KC = kc_of(l)
  s.A_BYTES = s.PIX * s.KC * 2
  s.B_BYTES = p.bm * s.KC * 2
  s.STAGE = s.A_BYTES + s.B_BYTES
  s.smem = p.st * s.STAGE + 1024
  return s
end

-- A 2x2 max or average pool of stride 2 without padding: one the epilogue can compute.
local function pool2x2(g) return common.fused_pool2(g) and (g.PP or 0) == 0 end

-- Whether the epilogue computes the layer's pool: pool2x2's, over tiles 8 pixels wide and an even
-- number of rows (a window's four values in a thread and its lane ^ 4).
function T.pool_fused(l, p, g)
  g = g or common.conv_geom(l)
  return pool2x2(g) and p.bw == 8 and p.bh % 2 == 0
end

local function pow2_at_least(n, cap)
  local v = 1
  while v < n and v < cap do v = v * 2 end
  return v
end

-- The pixel tile of pix pixels over a CH x CW output: the row as a power of two (up to pix),
-- then rows, then images.
local function pixel_tile(g, pix)
  local bw = math.min(pow2_at_least(g.CW, 256), pix)
  -- a fused 2x2 pool: rows of 8 (T.pool_fused)
  if pool2x2(g) and g.CH >= 2 then bw = 8 end
  local bh = math.min(pow2_at_least(g.CH, 256), pix // bw)
  return bw, bh, pix // (bw * bh)
end

-- The default tile, from the probe's best shapes on an H200 (bench/RESULTS.md, "A TMA-fed wgmma
-- convolution on channels-last bf16"): where a tile sums one chunk a tap (C <= 64: nine steps at
-- 3x3) two warpgroups take tiles in turn (ping, 128 pixels, 6-8 stages); else two share a tile,
-- 256 maps x 128 pixels where M >= 256, 128 x 256 below.
local function default_tile(l)
  local g = common.conv_geom(l)
  local p = { st = 4, ping = 0, mw = 1 }
  if l.C <= 64 then
    p.ping, p.mw = 1, 2
    p.bm = l.M <= 64 and 64 or 128
    p.st = p.bm == 64 and 8 or 6
    p.bw, p.bh, p.bi = pixel_tile(g, 128)
  elseif l.M >= 256 then
    p.bm, p.mw = 256, 1
    p.bw, p.bh, p.bi = pixel_tile(g, 128)
  else
    p.bm, p.mw = math.min(128, common.ceil_div(l.M, 64) * 64), 2
    p.bw, p.bh, p.bi = pixel_tile(g, 256)
  end
  return p
end
local tile = common.per_layer(default_tile)

T.params = {
  { name = "bm", doc = "maps a tile (wgmma's N; 64, 128, 192 or 256: boxes of 64 maps)",
    legal = function() return { 128, 64, 256, 192 } end, default = function(l) return tile(l).bm end },
  { name = "mw", doc = "m64 pixel blocks a consumer warpgroup multiplies (its accumulators: mw*bm/2 a thread)",
    legal = function() return { 1, 2, 4 } end, default = function(l) return tile(l).mw end },
  { name = "ping", doc = "1: two consumer warpgroups take the block's tiles in turn (one stores while the other " ..
      "multiplies); 0: the warpgroups share each tile", legal = function() return { 0, 1 } end,
    default = function(l) return tile(l).ping end },
  { name = "bw", doc = "tile pixels along a row (a box side: up to 256)",
    legal = function() return { 8, 16, 32, 4, 64, 2, 1, 128, 256 } end, default = function(l) return tile(l).bw end },
  { name = "bh", doc = "tile rows (a box side: up to 256)",
    legal = function() return { 8, 16, 4, 2, 1, 32, 64, 128, 256 } end, default = function(l) return tile(l).bh end },
  { name = "bi", doc = "tile images (a box side: up to 256)",
    legal = function() return { 1, 2, 4, 8, 16, 32, 64, 128, 256 } end,
    default = function(l) return tile(l).bi end },
  { name = "st", doc = "stages of the copy ring", legal = function() return { 4, 6, 8, 3, 5, 2 } end,
    default = function(l) return tile(l).st end },
  { name = "rn", doc = "1: the producer warpgroup gives its registers to the consumers (setmaxnreg); 0: every " ..
      "warpgroup keeps the launch's share", legal = function() return { 1, 0 } end, default = function() return 1 end },
}

function T.check(l, p)
  local why = common.refuse_groups(l, "conv2d_tma")
  if why then return why, nil end
  local ty = common.types(l)
  if not (common.is_half(ty.in_t) and ty.in_t == ty.w_t) then
    return "conv2d_tma computes 16-bit tensors (precision bf16 or fp16), its input and weights of one type; write " ..
      "strategy auto", nil
  end
  local t = l.target or {}
  if not t.sm90a then
    return string.format("conv2d_tma needs wgmma and the bulk tensor copy engine: sm_90 built as sm_90a (the target " ..
      "is sm_%d%s)", t.cc or 75, (t.cc == 90) and ", built for more than sm_90" or ""), nil
  end
  local g = common.conv_geom(l)
  if g.S ~= 1 then return string.format("conv2d_tma computes stride-1 convolutions; this layer has stride %d", g.S), nil end
  if l.C < 16 or l.C % 8 ~= 0 then
    return string.format("conv2d_tma reads 16, 32 or 64 channels a step in rows of 16 bytes: C must be a multiple " ..
      "of 8 of at least 16 (C = %d)", l.C), nil
  end
  if l.M % 8 ~= 0 then
    return string.format("conv2d_tma's weight boxes need rows of 16 bytes: M must be a multiple of 8 (M = %d)", l.M), nil
  end
  if p.bm % 64 ~= 0 or p.bm > 256 then return string.format("bm=%d: 64, 128, 192 or 256 maps", p.bm), "bm" end
  if p.bm > common.ceil_div(l.M, 64) * 64 then
    return string.format("bm=%d is more than the layer's %d maps (in 64s)", p.bm, l.M), "bm"
  end
  for _, k in ipairs({ "bw", "bh", "bi" }) do
    if p[k] < 1 or p[k] > 256 then return string.format("%s=%d: a box side is 1 to 256", k, p[k]), k end
  end
  local s = shape(l, p)
  if p.ping == 1 then
    if s.PIX ~= 64 * p.mw then
      return string.format("ping=1: a warpgroup takes the whole tile, so bw*bh*bi = %d must be 64*mw = %d", s.PIX,
        64 * p.mw), "mw"
    end
  elseif s.PIX % (64 * p.mw) ~= 0 or s.NC < 1 or s.NC > 2 then
    return string.format("bw*bh*bi = %d pixels must be one or two warpgroups of 64*mw = %d", s.PIX, 64 * p.mw), "mw"
  end
  local regs = p.rn == 1 and s.RINC or s.ENTRY
  if p.mw * s.NR + 40 > regs then
    return string.format("mw=%d x bm=%d: %d accumulators a thread, more than the %d registers a consumer gets", p.mw,
      p.bm, p.mw * s.NR, regs), "mw"
  end
  local max = common.max_shared(l)
  if s.smem > max then
    return string.format("st=%d stages of %d bytes need %d bytes of shared memory; at most %d fit", p.st, s.STAGE,
      s.smem, max), "st"
  end
  return nil
end

-- The cost model: the tensor cores at the wgmma rate (bench/scripts/wgmma_peak.py: about 88 % of
-- the dense peak, 4096 16-bit multiply-adds a clock an SM at full rate), plus the input's transpose
-- (a read and a write at 64 bytes a clock an SM) and the tiles' waste past the image.
function T.cost(l, p)
  local g = common.conv_geom(l)
  local n = common.cost.images(l)
  local sms = ((l.target or {}).sms or 0) > 0 and l.target.sms or 132
  local xt, yt = common.ceil_div(g.CW, p.bw), common.ceil_div(g.CH, p.bh)
  local tiles = common.ceil_div(l.M, p.bm) * xt * yt * common.ceil_div(n, p.bi)
  local kc = kc_of(l)
  local macs = tiles * p.bm * p.bw * p.bh * p.bi * common.ceil_div(l.C, kc) * kc * l.K * l.K
  -- (the transpose's read and write of the input, none where the layer before hands it channels-last)
  local bytes = n * ((l.hwc_in and 0 or 2 * 2 * l.C * l.H * l.W) + 2 * l.M * g.CH * g.CW)
  return (macs / (4096 * 0.88) + bytes / 64) / sms
end

-- ---- the kernels ----

local source_nhwc = engine.compile([=[
{{head}}
{
    // a block: {{PB}} pixels x {{CB}} channels of one image, read along the pixels (NCHW) and written along the
    // channels (channels-last), pairs of 16-bit values a load and a store, through shared memory (rows of
    // {{PB + 1}}: a store's lanes read 32 rows two apart, in 32 banks)
    __shared__ unsigned short t[{{CB}}][{{PB + 1}}];
    const long long b = blockIdx.x;
    const int pt = (int)(b % {{PT}}), ct = (int)(b / {{PT}} % {{CT}});
    const long long img = b / {{PT * CT}};
    if (img >= n) return;
    const int p0 = pt * {{PB}}, c0 = ct * {{CB}};
    for (int i = threadIdx.x; i < {{CB * PB // 2}}; i += {{NT}}) {
        const int c = i / {{PB // 2}}, q = 2 * (i % {{PB // 2}});
        unsigned short lo = 0, hi = 0;
        if (c0 + c < {{C}}) {
            const {{in_t}}* const src = in + (img * {{C}} + c0 + c) * {{HW}} + p0 + q;
% if HW % 2 == 0 then
            if (p0 + q < {{HW}}) {
                const unsigned u = __ldg(reinterpret_cast<const unsigned*>(src));
                lo = (unsigned short)(u & 0xffffu);
                hi = (unsigned short)(u >> 16);
            }
% else
            if (p0 + q < {{HW}}) lo = __ldg(src).x;
            if (p0 + q + 1 < {{HW}}) hi = __ldg(src + 1).x;
% end
        }
        t[c][q] = lo;
        t[c][q + 1] = hi;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < {{CB * PB // 2}}; i += {{NT}}) {
        const int q = i / {{CB // 2}}, c = 2 * (i % {{CB // 2}});
        if (p0 + q < {{HW}} && c0 + c < {{C}})
            *reinterpret_cast<unsigned*>(out + (img * {{HW}} + p0 + q) * {{C}} + c0 + c) =
                (unsigned)t[c][q] | (unsigned)t[c + 1][q] << 16;
    }
}
]=], "conv2d_tma")

-- the epilogue of a consumer warpgroup's tile (GPU and emulation alike): d[w][r] is pixel
-- pbase + 64*w + 16*warp + lane/4 + 8*((r >> 1) & 1) of the tile, map m0 + 8*(r >> 2) + 2*(lane & 3) + (r & 1)
local source_epi = engine.compile([=[
#pragma unroll
            for (int w = 0; w < {{MW}}; w++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int p = pbase + 64 * w + 16 * warp + lane / 4 + 8 * h;
                    const int x = xt * {{BW}} + p % {{BW}}, y = yt * {{BH}} + p / {{BW}} % {{BH}};
                    const long long img = (long long)it * {{BI}} + p / {{BW * BH}};
                    if (x >= {{CW}} || y >= {{CH}} || img >= n) continue;
% if HWC then
                    {{out_t}}* const o = out + ((img * {{CH}} + y) * {{CW}} + x) * {{M}} + m0 + 2 * (lane & 3);
#pragma unroll
                    for (int q = 0; q < {{BM // 8}}; q++) {
% if MGUARD then
                        if (m0 + 8 * q + 2 * (lane & 3) >= {{M}}) continue;
% end
                        const {{acc_t}} v0 = d[w][4 * q + 2 * h]{{bias_term("m0 + 8 * q + 2 * (lane & 3)")}};
                        const {{acc_t}} v1 = d[w][4 * q + 2 * h + 1]{{bias_term("m0 + 8 * q + 2 * (lane & 3) + 1")}};
                        cg_store_pair(o + 8 * q, {{from_acc(act("v0"))}}, {{from_acc(act("v1"))}});
                    }
% else
                    {{out_t}}* const o = out + ((img * {{M}} + m0 + 2 * (lane & 3)) * {{CH}} + y) * {{CW}} + x;
#pragma unroll
                    for (int q = 0; q < {{BM // 8}}; q++)
#pragma unroll
                        for (int e = 0; e < 2; e++) {
% if MGUARD then
                            if (m0 + 8 * q + 2 * (lane & 3) + e >= {{M}}) continue;
% end
                            const {{acc_t}} v = d[w][4 * q + 2 * h + e]{{bias_term("m0 + 8 * q + 2 * (lane & 3) + e")}};
                            o[(long long)(8 * q + e) * {{CH * CW}}] = {{from_acc(act("v"))}};
                        }
% end
                }
]=], "conv2d_tma")

-- the same with a fused 2x2 pool of stride 2 (tiles 8 pixels wide: a thread's h = 0 and 1 registers are
-- one column's two rows, lanes 4 apart the neighbouring column): bias and activation on each value, the
-- window's max (or mean) over the two registers and then across lane ^ 4, stored by the even column's lanes
local source_epi_pool = engine.compile([=[
#pragma unroll
            for (int w = 0; w < {{MW}}; w++) {
                const int p = pbase + 64 * w + 16 * warp + lane / 4;
                const int x = xt * 8 + p % 8, y = yt * {{BH}} + p / 8 % {{BH}};
                const long long img = (long long)it * {{BI}} + p / {{8 * BH}};
                const bool keep = (lane & 4) == 0 && x / 2 < {{OW}} && y / 2 < {{OH}} && img < n;
% if HWC then
                {{out_t}}* const o = out + ((img * {{OH}} + y / 2) * {{OW}} + x / 2) * {{M}} + m0 + 2 * (lane & 3);
% else
                {{out_t}}* const o = out + ((img * {{M}} + m0 + 2 * (lane & 3)) * {{OH}} + y / 2) * {{OW}} + x / 2;
% end
#pragma unroll
                for (int q = 0; q < {{BM // 8}}; q++) {
                    {{acc_t}} vv[2];
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int m = m0 + 8 * q + 2 * (lane & 3) + e;
% if MGUARD then
                        const int mb = m < {{M}} ? m : {{M - 1}};   // (maps past M: a bias read inside it, nothing stored)
% else
                        const int mb = m;
% end
                        (void)mb;
                        const {{acc_t}} v0 = {{act("d[w][4 * q + e]" .. bias_term("mb"))}};
                        const {{acc_t}} v1 = {{act("d[w][4 * q + 2 + e]" .. bias_term("mb"))}};
% if AVG then
                        {{acc_t}} v = v0 + v1;
                        v += __shfl_xor_sync(0xffffffffu, v, 4);
                        v *= 0.25f;
% else
                        {{acc_t}} v = fmaxf(v0, v1);
                        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
% end
                        vv[e] = v;
                    }
% if HWC then
% if MGUARD then
                    if (keep && m0 + 8 * q + 2 * (lane & 3) < {{M}})
% else
                    if (keep)
% end
                        cg_store_pair(o + 8 * q, {{from_acc("vv[0]")}}, {{from_acc("vv[1]")}});
% else
#pragma unroll
                    for (int e = 0; e < 2; e++)
% if MGUARD then
                        if (keep && m0 + 8 * q + 2 * (lane & 3) + e < {{M}})
% else
                        if (keep)
% end
                            o[(long long)(8 * q + e) * {{OH * OW}}] = {{from_acc("vv[e]")}};
% end
                }
            }
]=], "conv2d_tma")

local source_conv = engine.compile([=[
{{tmap_type}}
{{tma_helpers}}
% if HWC then
#ifndef CG_STORE_PAIR
#define CG_STORE_PAIR
// two neighbouring maps of a pixel of a channels-last output: one 4-byte store
template <typename T> __device__ __forceinline__ void cg_store_pair(T* at, const T a, const T b)
{
    const T pr[2] = {a, b};
    unsigned u;
    memcpy(&u, pr, 4);
    *reinterpret_cast<unsigned*>(at) = u;
}
#endif
% end
// GEMM view: tiles of {{BM}} maps x {{PIX}} pixels ({{BW}} x {{BH}} x {{BI}} image{{BI > 1 and "s" or ""}}), {{MT}} x {{XT}} x {{YT}} an image
// group, summed over {{KK}} taps x {{CCH}} chunks of {{KC}} channels ({{ITERS}} steps); stage: [{{PIX}} pixels][{{KC}} channels]
// ({{2 * KC}}-byte rows in the {{2 * KC}}-byte swizzle) then {{BM // 64}} x [{{KC}} channels][64 maps] (128-byte rows in the
// 128-byte swizzle), {{STAGE}} B, {{ST}} stages.
{{head}}
{
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];   // (the stages from the first 1,024-byte boundary: the swizzle's atoms)
    unsigned char* const sm = (unsigned char*)(((size_t)smem4 + 1023) & ~(size_t)1023);
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const long long tiles = (long long)((n + {{BI - 1}}) / {{BI}}) * {{MT * XT * YT}};
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(8) unsigned long long full[{{ST}}], empty[{{ST}}];
    // ping=1: the block's tiles whose main loops have passed their last wait
    __shared__ volatile long long turn;
    if (tid == 0) {
        turn = 0;
        for (int s = 0; s < {{ST}}; s++) {
            cg_mbar_init(&full[s], 1);
            cg_mbar_init(&empty[s], {{PING == 1 and 128 or NC * 128}});
        }
        cg_mbar_fence_init();
    }
    __syncthreads();
    if (wg == {{NC}}) {
        // the producer warpgroup: its registers to the consumers; one thread issues the copies
% if RN == 1 then
        asm volatile("setmaxnreg.dec.sync.aligned.u32 {{RDEC}};");
% end
        if (tid == {{NC * 128}}) {
            long long it_s = 0;
            for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
{{decode}}
                for (int i = 0; i < {{ITERS}}; i++, it_s++) {
                    const int s = (int)(it_s % {{ST}});
                    if (it_s >= {{ST}}) cg_mbar_wait(&empty[s], (int)((it_s / {{ST}} - 1) & 1));
                    cg_mbar_expect_tx(&full[s], {{STAGE}});
{{step}}
                    unsigned char* const st = sm + s * {{STAGE}};
{{copies}}
                }
            }
        }
    } else {
% if RN == 1 then
        asm volatile("setmaxnreg.inc.sync.aligned.u32 {{RINC}};");
% end
{{wgmma_fn}}
        long long it_s = 0, nth = 0;   // stage sequence number; the block's tile count
        for (long long t = blockIdx.x; t < tiles; t += gridDim.x, nth++) {
% if PING == 1 then
            if (nth % 2 != wg) continue;
            it_s = nth * {{ITERS}};
            while (turn < nth) __nanosleep(32);
            const int pbase = 0;
% else
            const int pbase = wg * {{WPIX}};
% end
{{decode}}
            {{acc_t}} d[{{MW}}][{{NR}}];
#pragma unroll
            for (int w = 0; w < {{MW}}; w++)
#pragma unroll
                for (int r = 0; r < {{NR}}; r++) d[w][r] = 0.0f;
            for (int i = 0; i < {{ITERS}}; i++, it_s++) {
                const int s = (int)(it_s % {{ST}});
                cg_mbar_wait(&full[s], (int)((it_s / {{ST}}) & 1));
                const unsigned long long da = {{adesc}} + ((cg_smem(sm + s * {{STAGE}}) + pbase * {{2 * KC}}) >> 4);
                const unsigned long long db = {{bdesc}} + ((cg_smem(sm + s * {{STAGE}} + {{A_BYTES}})) >> 4);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int k = 0; k < {{KC // 16}}; k++)
#pragma unroll
                    for (int w = 0; w < {{MW}}; w++) wgmma(d[w], da + w * {{64 * 2 * KC // 16}} + k * 2, db + k * {{16 * 128 // 16}});
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (i > 0) cg_mbar_arrive(&empty[(it_s - 1) % {{ST}}]);
            }
% if PING == 1 then
            if (tid % 128 == 0) turn = nth + 1;
% end
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            cg_mbar_arrive(&empty[(it_s - 1) % {{ST}}]);
{{epilogue}}
        }
    }
#else
    // the emulation: one stage, the copies by thread 0, FP32 products read through the swizzle
    __shared__ unsigned long long full[1];
    long long nth = 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x, nth++) {
{{decode}}
% if PING == 1 then
        const bool mine = wg < {{NC}} && nth % 2 == wg;
        const int pbase = 0;
% else
        const bool mine = wg < {{NC}};
        const int pbase = wg * {{WPIX}};
% end
        {{acc_t}} d[{{MW}}][{{NR}}];
        for (int w = 0; w < {{MW}}; w++)
            for (int r = 0; r < {{NR}}; r++) d[w][r] = 0.0f;
        for (int i = 0; i < {{ITERS}}; i++) {
            __syncthreads();
            if (tid == 0) {
{{step}}
                unsigned char* const st = sm;
                const int s = 0;
{{copies}}
            }
            __syncthreads();
            if (!mine) continue;
            const {{in_t}}* const xa = (const {{in_t}}*)sm;
            const {{w_t}}* const wb = (const {{w_t}}*)(sm + {{A_BYTES}});
            for (int w = 0; w < {{MW}}; w++)
                for (int r = 0; r < {{NR}}; r++) {
                    const int p = pbase + 64 * w + 16 * warp + lane / 4 + 8 * ((r >> 1) & 1);
                    const int m = 8 * (r >> 2) + 2 * (lane & 3) + (r & 1), mb = m & 63;
                    {{acc_t}} v = 0.0f;
                    for (int c = 0; c < {{KC}}; c++) {
                        // element c of {{2 * KC}}-byte row p in its swizzle: 16-byte chunk (c / 8) ^ (p / {{128 // (2 * KC)}} % {{KC // 8}});
                        // of 128-byte row c of a weight box: chunk (mb / 8) ^ (c % 8)
                        const int ai = p * {{KC}} + (((c >> 3) ^ ((p / {{128 // (2 * KC)}}) & {{KC // 8 - 1}})) << 3) + (c & 7);
                        const int bi = (m >> 6) * {{64 * KC}} + c * 64 + (((mb >> 3) ^ (c & 7)) << 3) + (mb & 7);
                        v = fmaf({{to_acc("xa[ai]")}}, {{w_to_acc("wb[bi]")}}, v);
                    }
                    d[w][r] += v;
                }
        }
        if (!mine) continue;
{{epilogue}}
    }
#endif
}
]=], "conv2d_tma")

local function tag(l, g)
  return string.format("c%dm%dk%d_h%dw%d%s", l.C, l.M, l.K, l.H, l.W, g.tag)
end

-- A block of the channels-last copy: CB channels (all of them up to 64, else 64 at a time) x PB
-- pixels, about 4,096 values, so that a layer of 16 or 32 channels moves as many bytes a block as
-- one of 64 and its stores cover whole runs of pixels (blocks of 64 x 64 had left three quarters of
-- a 16-channel block's threads idle: 2.41 ms for zoo-vgg3x3's 16 x 62 x 62 input at 10,000 images
-- on an H200, about 1 TB/s).
local function nhwc_block(l)
  local CB = math.min(64, l.C)
  return 64 * (64 // CB), CB
end

local function kernel_nhwc(l, g)
  local PB, CB = nhwc_block(l)
  local PT, CT = common.ceil_div(l.H * l.W, PB), common.ceil_div(l.C, CB)
  local ty = common.types(l)
  local name = string.format("conv2d_tma_nhwc_%s", tag(l, g))
  local head, args = common.kernel_head(name, NT_T, { { "in" }, { "out" }, { "n" }, types = ty })
  local v = {
    head = head, PB = PB, CB = CB, PT = PT, CT = CT, HW = l.H * l.W, C = l.C, NT = NT_T,
  }
  return {
    name = name, args = args, source = source_nhwc(common.typed(l, v)),
    grid = { common.batch_dim(PT * CT, 1), 1, 1 }, block = { NT_T, 1, 1 }, shared = 0,
    weights = "none", bias = "none", out_elems = l.C * l.H * l.W,
    shape = string.format("C=%d H=%d W=%d -> channels-last (%dx%dx%d)", l.C, l.H, l.W, l.H, l.W, l.C),
    fused = false,
  }
end

local function kernel_conv(l, p, g)
  local s = shape(l, p)
  local pooled = T.pool_fused(l, p, g)
  local fused = g.kind == "none" or pooled
  if l.hwc_out and not fused then
    error("conv2d_tma stores channels-last only where its epilogue computes the whole layer (T.hwc_out_ok)", 0)
  end
  local act = fused and l.act or "none"
  local ty = common.types(l)
  local wt = ty.w_t == "__half" and "f16" or "bf16"
  local name = string.format("conv2d_tma_%s_%s%s%s_m%dw%dp%d_%dx%dx%d_s%d%s%s", tag(l, g), act,
    pooled and g.pool_tag or "", l.bias and "_bias" or "", p.bm, p.mw, p.ping, p.bw, p.bh, p.bi, p.st,
    p.rn == 0 and "_r0" or "", l.hwc_out and "_hwc" or "")
  local KK = l.K * l.K
  local KC = s.KC
  local mx = common.map_role("in", { l.C, l.W, l.H, "n" }, { KC, p.bw, p.bh, p.bi }, 2 * KC)
  local mwr = common.map_role("weights", { l.M, l.C, KK }, { 64, KC, 1 }, 128)
  local list = { { mx, nil, "tm_x" }, { mwr, nil, "tm_w" } }
  if l.bias then list[#list + 1] = { "bias" } end
  list[#list + 1] = { "out" }
  list[#list + 1] = { "n" }
  list.types = ty
  local head, args = common.kernel_head(name, s.threads, list, nil, 1)
  local MT, XT, YT = common.ceil_div(l.M, p.bm), common.ceil_div(g.CW, p.bw), common.ceil_div(g.CH, p.bh)
  local CCH = common.ceil_div(l.C, KC)
  local v = {
    head = head, tmap_type = common.TMAP_TYPE, tma_helpers = common.tma_helpers(),
    BM = p.bm, MW = p.mw, PING = p.ping, RN = p.rn, BW = p.bw, BH = p.bh, BI = p.bi, ST = p.st, PIX = s.PIX, NC = s.NC,
    WPIX = s.WPIX, NR = s.NR, RDEC = s.RDEC, RINC = s.RINC, A_BYTES = s.A_BYTES, STAGE = s.STAGE,
    MT = MT, XT = XT, YT = YT, KK = KK, CCH = CCH, KC = KC, ITERS = KK * CCH, M = l.M, CH = g.CH, CW = g.CW,
    MGUARD = l.M % p.bm ~= 0, OH = g.OH, OW = g.OW, AVG = g.kind == "avg", HWC = l.hwc_out or false,
    adesc = common.wgmma_desc_swizzle(2 * KC),
    -- MN-major in the 128-byte swizzle: 64-map blocks 128*KC bytes apart (leading), 8-channel groups 1,024 (stride)
    bdesc = string.format("0x%xull", 1 << 62 | (1024 // 16) << 32 | (128 * KC // 16) << 16),
    act = function(e) return common.act(act, e) end,
    bias_term = function(m) return l.bias and (" + " .. ty.w_to_acc("__ldg(b + " .. m .. ")")) or "" end,
  }
  v.decode = string.format([[
                const int mt = (int)(t %% %d);
                const long long rest = t / %d;
                const int xt = (int)(rest %% %d), yt = (int)(rest / %d %% %d);
                const long long it = rest / %d;
                const int m0 = mt * %d;
                (void)m0; (void)it;]], MT, MT, XT, XT, YT, XT * YT, p.bm)
  v.step = string.format([[
                    const int tap = i / %d, cc = i %% %d, ky = tap / %d, kx = tap %% %d;]], CCH, CCH, l.K, l.K)
  local cp = {
    string.format("                    cg_tma_load_4d(st, CG_TMAP(tm_x), cc * %d, xt * %d + kx - %d, yt * %d + ky - %d, " ..
      "(int)(it * %d), &full[s]);", KC, p.bw, g.pl, p.bh, g.pt, p.bi) }
  for j = 0, p.bm // 64 - 1 do
    cp[#cp + 1] = string.format("                    cg_tma_load_3d(st + %d, CG_TMAP(tm_w), m0 + %d, cc * %d, tap, " ..
      "&full[s]);", s.A_BYTES + j * 128 * KC, j * 64, KC)
  end
  v.copies = table.concat(cp, "\n")
  v.wgmma_fn = common.wgmma16_lambda(ty.acc_t, s.NR, p.bm, wt, 0, 1, true)
  common.typed(l, v)
  v.epilogue = (pooled and source_epi_pool or source_epi)(v)
  return {
    name = name, args = args, source = source_conv(v),
    grid = { (l.target or {}).sms and l.target.sms > 0 and l.target.sms or 132, 1, 1 },
    block = { s.threads, 1, 1 }, shared = s.smem,
    weights = string.format("arg:taps:%d", KK), bias = l.bias and "arg" or "none",
    out_elems = pooled and l.M * g.OH * g.OW or l.M * g.CH * g.CW,
    shape = (pooled and common.conv_shape(l, g, act, true, l.M, g.OH, g.OW) or
      common.conv_shape(l, g, act, false, l.M, g.CH, g.CW)) ..
      (l.hwc_in and ", from the layer before's channels-last output" or ", from the channels-last copy") ..
      (l.hwc_out and ", stored channels-last for the layer after" or ""),
    fused = fused, precision = l.precision,
  }
end

-- The kernel of part l.part ("nhwc" or "conv"; the planner's T.parts).
function T.kernel(l, p)
  local g = common.conv_geom(l)
  if l.part == "nhwc" then return kernel_nhwc(l, g) end
  if l.part == "conv" then return kernel_conv(l, p, g) end
  error("conv2d_tma runs as two kernels (nhwc, conv); the layer table names none (l.part = " ..
    tostring(l.part) .. ")", 0)
end

return T
