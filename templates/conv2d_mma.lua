-- conv2d_mma.lua — convolution as an implicit matrix product on tensor cores
-- (3xTF32: FP32 accuracy), from input rows staged in shared memory; every layer
-- constant a literal.
--
-- The product is conv2d_igemm's: out[m][col] = sum_r w[m][r] * x[r][col], m the
-- output map, r = (c, p, q) the C*K*K reduction, col an output pixel. What
-- differs is where x comes from. conv2d_igemm gathers every x[r][col] from
-- global memory into a shared-memory column, K*K copies of each input element;
-- here a block stages the input rows its pixels need once (a band of `rows`
-- output rows of one image, or `ni` whole images), padding included as zeros,
-- and every x[r][col] is a shared-memory read at base(col) + off(r): base from
-- the pixel, off from (c, p, q). On layers with few maps, where each gathered
-- element feeds only M multiply-adds, the gather was the limit (Nsight Compute:
-- L1 at 73 % on ece408-2018sp conv2 with conv2d_igemm).
--
-- A block: `bm` maps (by eights) x the band's pixels in warps of 16*tn pixels,
-- each warp all bm maps: tn m16 tiles x bm/8 n8 tiles of mma.sync.m16n8k8,
-- pixels as the rows (lib/common.lua, 3xTF32). The reduction runs over slices
-- of `cs` channels (a loop, not unrolled: the source does not grow with C); a
-- slice's cs*K*K rows are padded with zero weights to a multiple of 8, summed
-- apart and added to FP32 accumulators. Slices are double-buffered: the next
-- one's rows and weights are copied (cp.async, sm_80+) while this one is
-- multiplied; one barrier a slice. Each lane's offsets off(r) for the rows it
-- reads (r = 8k + t + 4h) sit in registers; the weights' row stride is padded
-- to 8 or 24 words modulo 32 so a warp's B reads meet 32 banks.
-- Epilogue: the block's tile goes through shared memory, then threads walk the
-- outputs in order (coalesced stores) with bias, activation and a fused 2x2
-- pool (max or average, stride 2); other pools leave the kernel unfused.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "implicit GEMM on tensor cores (3xTF32); input rows staged once in shared memory"

-- Largest unrolled body (instructions of one slice of one warp, estimated) and
-- most registers a thread's tiles, fragments and offsets may want.
local BODY_BUDGET = 2400
local REG_BUDGET = 200
local MAX_KP = 128

local function round8(v) return common.ceil_div(v, 8) * 8 end

local function pad_maps(bm)
  local v = bm
  while v % 32 ~= 8 and v % 32 ~= 24 do v = v + 4 end
  return v
end

-- Map tiles: multiples of 8 up to 64 and M rounded up to 8, the one covering M first.
local function map_tiles(l)
  local top = math.min(64, round8(l.M))
  local out = { top }
  for v = 8, 64, 8 do if v ~= top and v <= round8(l.M) then out[#out + 1] = v end end
  return out
end

-- Channels a slice may hold: divisors of C with at most MAX_KP rows.
local function slice_channels(l)
  local out = {}
  for _, d in ipairs(common.divisors(l.C)) do
    if d * l.K * l.K <= MAX_KP then out[#out + 1] = d end
  end
  if #out == 0 then out[1] = 1 end   -- refused by check, with the reason
  return out
end

-- The slice with the least zero padding (cs*K*K against its multiple of 8), smaller first.
local function default_cs(l)
  local best, waste = nil, math.huge
  for _, d in ipairs(slice_channels(l)) do
    local bk = d * l.K * l.K
    local w = (round8(bk) - bk) / round8(bk)
    if w < waste - 0.02 then best, waste = d, w end
  end
  return best
end

-- Band heights: the whole conv output, then about a half, a third ... an eighth of it.
local function band_rows(l)
  local g = common.conv_geom(l)
  local out, seen = {}, {}
  for k = 1, 8 do
    local r = common.ceil_div(g.CH, k)
    if common.fused_pool2(g) and k > 1 and r % 2 == 1 then r = r + 1 end
    if r <= g.CH and not seen[r] then seen[r] = true; out[#out + 1] = r end
  end
  return out
end

T.params = {
  { name = "bm", doc = "output maps per block (a multiple of 8)",
    legal = map_tiles,
    default = function(l) return math.min(32, round8(l.M)) end },
  { name = "tn", doc = "m16 pixel tiles per warp (16*tn pixels)",
    legal = function(_) return { 2, 4, 1, 6, 8 } end,
    default = function(l) return round8(l.M) <= 16 and 4 or 2 end },
  { name = "rows", doc = "output rows per block (a band of one image)",
    legal = band_rows,
    default = function(l) return band_rows(l)[1] end },
  { name = "ni", doc = "whole images per block (rows = the conv output's height)",
    legal = function(_) return { 1, 2, 4, 8 } end,
    default = function(l)
      local g = common.conv_geom(l)
      local ni = 1
      while ni < 8 and ni * g.CH * g.CW < 192 do ni = ni * 2 end
      return ni
    end },
  { name = "cs", doc = "input channels per slice (a divisor of C; cs*K*K at most 128)",
    legal = slice_channels,
    default = default_cs },
  common.occ_param({ 1, 2 }),
}

local function shape(l, p)
  local s = {}
  local g = common.conv_geom(l)
  s.g = g
  s.pooled = common.fused_pool2(g)
  s.fused = g.kind == "none" or s.pooled
  s.CH, s.CW = g.CH, g.CW
  if s.pooled then s.OH, s.OW = g.OH, g.OW else s.OH, s.OW = s.CH, s.CW end
  s.P = s.OH * s.OW
  s.S = g.S
  s.KK = l.K * l.K
  s.BK = p.cs * s.KK
  s.KP = round8(s.BK)
  s.TWp = l.W + g.pl + g.pr                   -- a staged row, padding included
  s.TR = (p.rows - 1) * g.S + l.K             -- staged rows of a band
  s.bands = common.ceil_div(s.CH, p.rows)
  s.NC = p.ni * p.rows * s.CW                 -- the block's pixels
  s.warps = common.ceil_div(s.NC, 16 * p.tn)
  s.threads = 32 * s.warps
  s.BC = s.warps * 16 * p.tn                  -- its columns, the last ones past the pixels
  s.FP, s.FM = p.tn, p.bm // 8
  s.WR = pad_maps(p.bm)
  s.ER = s.BC + 4                             -- row stride of the staged tile
  s.IMG = s.TR * s.TWp                        -- one image's staged rows, one channel
  s.XC = p.ni * s.IMG                         -- one channel's
  s.XT = common.ceil_div(p.cs * s.XC, 4) * 4  -- a slice's input, rounded to float4
  s.stage = s.XT + 2 * s.KP * s.WR           -- floats: the input, then the weights as (TF32, remainder) pairs
  s.WL = common.ceil_div(s.BK * p.bm, s.threads)   -- weights each thread loads a slice
  s.smem = 4 * math.max(2 * s.stage, p.bm * s.ER)
  s.slices = l.C // p.cs
  s.PR = s.pooled and p.rows // 2 or p.rows   -- stored rows of a band
  -- registers: accumulators and a slice's, fragments, pixel bases, row offsets
  s.regs = 8 * s.FP * s.FM + 8 * s.FP + 4 * s.FM + 2 * s.FP + s.KP // 4 + s.WL + 24
  s.body = (s.KP // 8) * (3 * s.FP * s.FM + 12 * s.FP + 6 * s.FM)
  return s
end

function T.check(l, p)
  local cc = l.target and l.target.cc or 75
  if cc < 80 then
    return string.format("conv2d_mma needs tensor cores with TF32 (sm_80 or newer); the target is sm_%d", cc)
  end
  local g = common.conv_geom(l)
  if g.CH < 1 or g.CW < 1 then return "the conv output is empty" end
  if p.bm % 8 ~= 0 or p.bm > round8(l.M) then
    return string.format("bm=%d must be a multiple of 8 no larger than M=%d rounded up to 8", p.bm, l.M), "bm"
  end
  if l.C % p.cs ~= 0 then return string.format("cs=%d does not divide C=%d", p.cs, l.C), "cs" end
  local s = shape(l, p)
  if s.KP > MAX_KP then
    return string.format("cs*K*K = %d rows a slice; at most %d", s.BK, MAX_KP), "cs"
  end
  if p.ni > 1 and p.rows ~= s.CH then
    return string.format("ni=%d images a block need rows = %d (whole images)", p.ni, s.CH), "ni"
  end
  if s.pooled and s.bands > 1 and p.rows % 2 ~= 0 then
    return string.format("the fused 2x2 pool needs bands of an even number of rows; rows=%d", p.rows), "rows"
  end
  if s.threads > common.MAX_THREADS then
    return string.format("%d pixels in warps of %d need %d threads; at most %d", s.NC, 16 * p.tn, s.threads,
      common.MAX_THREADS), "rows"
  end
  if s.body > BODY_BUDGET then
    return string.format("a slice unrolls about %d instructions a warp; the budget is %d", s.body, BODY_BUDGET), "cs"
  end
  local cap = math.min(REG_BUDGET, common.reg_cap(l, s.threads, 1))
  if s.regs > cap then
    return string.format("the tiles, fragments and offsets need about %d registers a thread; at most %d with %d threads",
      s.regs, cap, s.threads), "tn"
  end
  local why, blame = common.check_occ(l, p.occ, s.threads, s.regs, s.smem, "the tiles, fragments and offsets")
  if why then return why, blame end
  if s.smem > common.max_shared(l) then
    return string.format("two slices of %d channels (%d staged rows) and their weights need %d bytes of shared " ..
      "memory; at most %d fit", p.cs, p.ni * s.TR, s.smem, common.max_shared(l)), "cs"
  end
  return nil
end

-- The cost model (common.cost): the busiest SM's mma.sync (taken at one per
-- 1.6 clocks an SM, the rate measured on an H100 was about 0.6 a clock) at the
-- rate its resident warps keep busy, or, when longer, a round trip to memory a slice.
function T.cost(l, p)
  local s = shape(l, p)
  local blocks = common.ceil_div(common.cost.images(l), p.ni) * s.bands * common.ceil_div(l.M, p.bm)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local hmma = s.warps * s.slices * (s.KP // 8) * 3 * s.FP * s.FM
  local compute = seq * hmma * 1.6 / common.cost.busy(conc, s.threads, s.FP * s.FM)
  local memory = common.ceil_div(seq, conc) * s.slices * common.cost.LATENCY
  return math.max(compute, memory) * common.cost.spills(squeezed)
end

local source = engine.compile([=[
// Implicit GEMM on tensor cores: {{M}} maps x ({{NI}} image{{NI > 1 and "s" or ""}} x {{ROWS}} rows x {{CW}}) pixels a block{{BANDS > 1 and (" (" .. BANDS .. " bands an image)") or ""}},
// reduced over C*K*K = {{C * KK}} in {{SL}} slices of {{CS}} channel{{CS > 1 and "s" or ""}} ({{BK}} rows, {{KP}} with the zero pad);
// {{WARPS}} warps of {{16 * FP}} pixels x {{BM}} maps ({{FP}}x{{FM}} m16n8k8 tiles, 3xTF32).
// Shared memory (dynamic, {{smem}} B): two stages of xs[{{CS}}][{{NI}}][{{TR}}][{{TWp}}] (staged input, padding as
// zeros) and ws[{{KP}}][{{WR}}] (weights, each as its TF32 value and remainder: uint2); then es[{{BM}}][{{ER}}],
// the block's tile.

{{head}}
{
    extern __shared__ float4 smem4[];
    float* const sm = reinterpret_cast<float*>(smem4);
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g8 = lane >> 2, t4 = lane & 3;
% if NI > 1 then
    const int img0 = blockIdx.x * {{NI}};   // whole images img0 .. +{{NI - 1}}
    const int y0 = 0;
% else
    const int img0 = blockIdx.x / {{BANDS}};
    const int y0 = (blockIdx.x % {{BANDS}}) * {{ROWS}};   // the band's first conv row
% end
    const int m0 = blockIdx.y * {{BM}};
    (void)b_arg;

    // the staged offsets of this lane's pixels: tile i, rows g8 and g8 + 8 of its m16
    int base[{{FP}}][2];
#pragma unroll
    for (int i = 0; i < {{FP}}; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int c = warp * {{16 * FP}} + 16 * i + g8 + 8 * h;
            if (c >= {{NC}}) c = 0;   // past the block's pixels: read something, store nothing
            const int im = c / {{ROWS * CW}}, at = c - im * {{ROWS * CW}};
            base[i][h] = im * {{IMG}} + (at / {{CW}}) * {{S * TWp}} + (at % {{CW}}) * {{S}};
        }
    // the offsets of the slice rows this lane reads, r = 8k + t4 + 4h: (c, p, q) -> c*{{XC}} + p*{{TWp}} + q;
    // the pad rows (r >= {{BK}}) have zero weights and read offset 0
    int off[{{KP // 8}}][2];
#pragma unroll
    for (int k = 0; k < {{KP // 8}}; k++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = 8 * k + t4 + 4 * h;
            off[k][h] = r < {{BK}} ? (r / {{KK}}) * {{XC}} + ((r % {{KK}}) / {{K}}) * {{TWp}} + r % {{K}} : 0;
        }

    // zeros where no copy lands: the padding columns of every staged row, the weights' pad rows
% if PADCOLS then
    for (int e = tid; e < {{2 * CS * NI * TR * (PL + PADR)}}; e += {{NT}}) {
        const int b = e / {{CS * NI * TR * (PL + PADR)}}, rest = e - b * {{CS * NI * TR * (PL + PADR)}};
        const int row = rest / {{PL + PADR}}, k = rest - row * {{PL + PADR}};
        sm[b * {{STAGE}} + row * {{TWp}} + (k < {{PL}} ? k : {{W}} + k)] = 0.0f;
    }
% end
% if KP > BK then
    for (int e = tid; e < {{4 * (KP - BK) * WR}}; e += {{NT}}) {
        const int b = e / {{2 * (KP - BK) * WR}};
        sm[b * {{STAGE}} + {{XT + 2 * BK * WR}} + e - b * {{2 * (KP - BK) * WR}}] = 0.0f;
    }
% end

    // slice s into stage b: cs channels of the staged rows (rows outside the input, and
    // images past the batch, as zeros), copied; the slice's {{BK}} x {{BM}} weights (maps past M as
    // zeros) through registers, split for the tensor cores on the way (the weights arrive
    // transposed, ({{C * KK}}) x {{M}})
#if __CUDA_ARCH__ >= 800
    unsigned s0;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(s0) : "l"(sm));
    auto copy4 = [](unsigned dst, const float* src, bool ok) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
    };
#define {{name}}_PUT(i, src, ok) copy4(s0 + 4 * (i), ok ? (src) : in, ok)
    {{split}}
#else
#define {{name}}_PUT(i, src, ok) (sm[i] = ok ? *(src) : 0.0f)
#endif
    auto issue = [&](int s, int b) {
#pragma unroll 4
        for (int e = tid; e < {{CS * NI * TR * W}}; e += {{NT}}) {
            const int cr = e / {{W}}, x = e - cr * {{W}};     // (channel, image, row), column
            const int c = cr / {{NI * TR}}, ir = cr - c * {{NI * TR}};
            const int im = ir / {{TR}}, row = ir - im * {{TR}};
            const int iy = y0 * {{S}} - {{PT}} + row;
            const bool ok = (unsigned)iy < {{H}}u && img0 + im < n;
            {{name}}_PUT(b * {{STAGE}} + cr * {{TWp}} + {{PL}} + x,
                         in + (img0 + im) * {{C * H * W}} + (s * {{CS}} + c) * {{H * W}} + iy * {{W}} + x, ok);
        }
    };
    float wr[{{WL}}];
    auto load_w = [&](int s) {
#pragma unroll
        for (int i = 0; i < {{WL}}; i++) {
            const int e = tid + i * {{NT}}, r = e / {{BM}}, m = e - r * {{BM}};
            wr[i] = {{WOK}} ? __ldg(w_arg + (s * {{BK}} + r) * {{M}} + m0 + m) : 0.0f;
        }
    };
    auto stash_w = [&](int b) {
#pragma unroll
        for (int i = 0; i < {{WL}}; i++) {
            const int e = tid + i * {{NT}}, r = e / {{BM}}, m = e - r * {{BM}};
%   if WTAIL then
            if (e >= {{BK * BM}}) break;
%   end
            uint2* const d = reinterpret_cast<uint2*>(sm + b * {{STAGE}} + {{XT}}) + r * {{WR}} + m;
#if __CUDA_ARCH__ >= 800
            unsigned hi, lo;
            split(wr[i], hi, lo);
            *d = make_uint2(hi, lo);
#else
            *d = make_uint2(__float_as_uint(wr[i]), 0u);   // emulation: the value, and a zero remainder
#endif
        }
    };

    float cf[{{FP}}][{{FM}}][4];   // tile i, j: pixels 16i + g8 (+8), maps 8j + 2*t4 (+1)
#pragma unroll
    for (int i = 0; i < {{FP}}; i++)
#pragma unroll
        for (int j = 0; j < {{FM}}; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) cf[i][j][r] = 0.0f;

    // cf += slice in stage b
    auto multiply = [&](int b) {
        const float* const x = sm + b * {{STAGE}};
        // the offsets taken afresh each slice: else the compiler keeps every base + offset sum,
        // loop-invariant, in registers of its own ({{2 * FP}} x {{KP // 4}} of them)
        int o[{{KP // 8}}][2];
#pragma unroll
        for (int k = 0; k < {{KP // 8}}; k++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                o[k][h] = off[k][h];
                asm volatile("" : "+r"(o[k][h]));
            }
        const uint2* const w = reinterpret_cast<const uint2*>(sm + b * {{STAGE}} + {{XT}}) + g8;
#if __CUDA_ARCH__ >= 800
        // 3xTF32 (lib/common.lua); the slice summed apart (the tensor cores' own additions
        // lose low bits), then added to cf
        float sl[{{FP}}][{{FM}}][4];
#pragma unroll
        for (int i = 0; i < {{FP}}; i++)
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 4; r++) sl[i][j][r] = 0.0f;
#pragma unroll
        for (int k = 0; k < {{KP // 8}}; k++) {
            unsigned ah[{{FP}}][4], al[{{FP}}][4], bh[{{FM}}][2], bl[{{FM}}][2];
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int r = 0; r < 4; r++) split(x[base[i][r & 1] + o[k][r >> 1]], ah[i][r], al[i][r]);
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const uint2 v = w[(8 * k + t4 + 4 * h) * {{WR}} + 8 * j];
                    bh[j][h] = v.x, bl[j][h] = v.y;
                }
            {{mma3}}
        }
#pragma unroll
        for (int i = 0; i < {{FP}}; i++)
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 4; r++) cf[i][j][r] += sl[i][j][r];
#else
        // without tensor cores (and in emulation): each accumulator as its own dot product
#pragma unroll
        for (int i = 0; i < {{FP}}; i++)
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    for (int k = 0; k < {{BK}}; k++)
                        cf[i][j][r] = fmaf(x[base[i][r >> 1] + (k / {{KK}}) * {{XC}} + ((k % {{KK}}) / {{K}}) * {{TWp}} + k % {{K}}],
                                           __uint_as_float(w[k * {{WR}} + 8 * j + 2 * t4 + (r & 1) - g8].x), cf[i][j][r]);
#endif
    };

    issue(0, 0);
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
    load_w(0);
    stash_w(0);
#pragma unroll 1
    for (int s = 0; s < {{SL}}; s++) {
#if __CUDA_ARCH__ >= 800
        asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
        __syncthreads();   // slice s landed for every thread; stage (s+1)&1 is free
        if (s + 1 < {{SL}}) issue(s + 1, (s + 1) & 1), load_w(s + 1);
#if __CUDA_ARCH__ >= 800
        asm volatile("cp.async.commit_group;" ::: "memory");
#endif
        multiply(s & 1);
        if (s + 1 < {{SL}}) stash_w((s + 1) & 1);   // its stage was last read before this slice's barrier
    }
#undef {{name}}_PUT

    // epilogue: the tile into es[map][pixel] (over the stages, all read by now), then the
    // outputs in order: {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, store
    __syncthreads();
    float* const es = sm;
#pragma unroll
    for (int i = 0; i < {{FP}}; i++)
#pragma unroll
        for (int j = 0; j < {{FM}}; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                es[(8 * j + 2 * t4 + (r & 1)) * {{ER}} + warp * {{16 * FP}} + 16 * i + g8 + 8 * (r >> 1)] = cf[i][j][r];
    __syncthreads();
#pragma unroll 1
    for (int e = tid; e < {{BM * NI * PR * OW}}; e += {{NT}}) {
        const int m = e / {{NI * PR * OW}}, rest = e - m * {{NI * PR * OW}};
        const int im = rest / {{PR * OW}}, at = rest - im * {{PR * OW}};
        const int oy = at / {{OW}}, ox = at - oy * {{OW}};
% if POOLED then
        if ({{MGUARD and ("m0 + m >= " .. M .. " || ") or ""}}img0 + im >= n || y0 / 2 + oy >= {{OH}}) continue;
        const float* const t = es + m * {{ER}} + im * {{ROWS * CW}} + 2 * oy * {{CW}} + 2 * ox;
%   if bias then
        const float bv = __ldg(b_arg + m0 + m);
%   end
%   if POOL_KIND == "avg" then
        const float v = ({{act("t[0]" .. B)}} + {{act("t[1]" .. B)}} + {{act("t[" .. CW .. "]" .. B)}} + {{act("t[" .. (CW + 1) .. "]" .. B)}}) * 0.25f;
%   else
        const float v = {{act("fmaxf(fmaxf(t[0], t[1]), fmaxf(t[" .. CW .. "], t[" .. (CW + 1) .. "]))" .. B)}};
%   end
        out[(img0 + im) * {{M * P}} + (m0 + m) * {{P}} + (y0 / 2 + oy) * {{OW}} + ox] = v;
% else
        if ({{MGUARD and ("m0 + m >= " .. M .. " || ") or ""}}img0 + im >= n || y0 + oy >= {{CH}}) continue;
%   if bias then
        const float bv = __ldg(b_arg + m0 + m);
%   end
        out[(img0 + im) * {{M * P}} + (m0 + m) * {{P}} + (y0 + oy) * {{CW}} + ox] =
            {{act("es[m * " .. ER .. " + im * " .. (ROWS * CW) .. " + oy * " .. CW .. " + ox]" .. B)}};
% end
    }
}
]=], "conv2d_mma")

function T.kernel(l, p)
  local s = shape(l, p)
  local g = s.g
  local act = s.fused and l.act or "none"
  local name = string.format("conv2d_mma_c%dm%dk%d_h%dw%d%s_%s%s%s_m%dt%dr%di%dc%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, s.pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.bm, p.tn, p.rows, p.ni, p.cs) .. (p.occ > 1 and string.format("_o%d", p.occ) or "")
  local head, args = common.kernel_head(name, s.threads, common.std_args({ w_name = "w_arg", b_name = "b_arg" }),
    nil, p.occ)
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, KK = s.KK, S = s.S, CW = s.CW, CH = s.CH, OH = s.OH, OW = s.OW,
    P = s.P, PT = g.pt, PL = g.pl, PADR = g.pr, PADCOLS = g.pl + g.pr > 0,
    BM = p.bm, FP = s.FP, FM = s.FM, NI = p.ni, ROWS = p.rows, BANDS = s.bands, CS = p.cs, BK = s.BK, KP = s.KP,
    TR = s.TR, TWp = s.TWp, IMG = s.IMG, XC = s.XC, XT = s.XT, WR = s.WR, ER = s.ER, STAGE = s.stage,
    NC = s.NC, NT = s.threads, WL = s.WL, WTAIL = s.WL * s.threads ~= s.BK * p.bm,
    WOK = table.concat((function()
      local t = {}
      if s.WL * s.threads ~= s.BK * p.bm then t[#t + 1] = string.format("e < %d", s.BK * p.bm) end
      if l.M % p.bm ~= 0 then t[#t + 1] = string.format("m0 + m < %d", l.M) end
      if #t == 0 then t[1] = "true" end
      return t
    end)(), " && "), WARPS = s.warps, SL = s.slices, PR = s.PR, smem = s.smem,
    POOLED = s.pooled, POOL_KIND = g.kind, MGUARD = l.M % p.bm ~= 0, bias = l.bias, B = l.bias and " + bv" or "",
    actname = act, act = function(e) return common.act(act, e) end,
    pool_doc = not s.pooled and "" or g.max2 and "2x2 max, " or "2x2 average, ",
    split = common.tf32x3_split(), mma3 = common.tf32x3_mma("sl", s.FP, s.FM),
  }
  -- grid: (images / ni) * bands blocks by the map tiles (common.tiled_conv_record's
  -- batch_dim(per, bn): N * bands / 1, or N * 1 / ni)
  return common.tiled_conv_record(l, { bm = p.bm, bn = p.ni }, s, act, name, args, source(v),
    p.ni > 1 and 1 or s.bands)
end

return T
