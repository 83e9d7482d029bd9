-- conv2d_igemm_wg.lua — the implicit matrix product of conv2d_igemm on Hopper's
-- warpgroup tensor cores (`strategy: igemm_wg`; sm_90, whose cubins convgen builds
-- as sm_90a): wgmma.mma_async with both operands in shared memory, 3xTF32 as in
-- conv2d_igemm_tc (lib/common.lua), so the result keeps FP32 accuracy.
--
-- The product is columns (output pixels) x maps: each warpgroup (128 threads) owns
-- mt m64 tiles of columns against the block's bm maps (wgmma's N: bm, a multiple of
-- 8 up to 256), accumulators in registers. The reduction C*K*K runs in slices of bk
-- rows that need not be whole kernel rows (conv2d_igemm_tc's free slices: offsets
-- from a table in constant memory, the first slice short where bk does not divide
-- C*K*K, its first rows zeros, so that only the prologue tests rows). While the
-- tensor cores multiply one slice, every thread gathers the next one's input
-- elements into registers, splits each into its TF32 value and remainder and stores
-- both, 16 bytes at a time, then does the same with its weights (one set of registers
-- at a time: both at once spilled under occ=3's cap), into the other of two
-- shared-memory buffers; then it waits for the products. (Splitting and storing
-- after the wait, as first written, cost 7 %; weights by cp.async 10 %: bench/RESULTS.md.)
-- The buffers hold the layout wgmma reads without swizzling: core matrices of 8 rows x 4
-- reduction rows (128 contiguous bytes), the columns' (or maps') core matrices
-- adjacent, the next four reduction rows a column of cores further on. The split
-- happens once per element per block, where conv2d_igemm_tc splits every fragment
-- element in every warp that reads it. A slice's products (small terms first) go
-- into accumulators of their own, added to the running sum once they land (the
-- tensor cores' additions drop low bits; summed apart as in conv2d_igemm_tc).
-- Epilogue: bias, activation and the stores straight from the accumulators (a
-- warp's store is eight neighbouring columns of four maps: whole 32-byte sectors);
-- with a fused 2x2 pool, the block's tile through shared memory, then conv2d_igemm's
-- (a thread's four columns are a pooling window). Without sm_90a (the CPU emulation of
-- test_emulate, or a PTX build for a later GPU) the same buffers are multiplied by
-- plain FMAs: correct, slow, and never chosen for such a target.
-- Measured on an H100 (2026-11-27, bench/journal/2026-11.md).
-- A residual add (common.residual: the planner's fused adds) is computed in the
-- epilogue without a pool: the add's other operands read at the element stored.
--
-- 16-bit tensors (precision bf16 or fp16): the operands are staged as they are
-- stored, 2 bytes an element, and multiplied once (wgmma m64nNk16 with BF16 or FP16
-- operands, FP32 accumulation straight into the running sum: no split, no second
-- set of accumulators). A core matrix is then 8 rows x 8 reduction rows, the same
-- 128 bytes as FP32's 8 x 4, so the buffers, descriptors and the steps between
-- them are FP32's, a k16 step taking the place of two k8 steps; a thread gathers
-- eight reduction rows of a column (16 bytes) where FP32's gathers four. Slices
-- are a multiple of 16 rows. With `kc` (16-bit layers whose C the slice depth
-- divides, the default there) the reduction runs tap by tap, each slice bk
-- channels of one kernel tap (the weights arrive reordered K*K x C x M,
-- weights=arg:taps), so a slice's offsets are literal multiples of H*W from one
-- base and a padded column tests its tap once a slice, not once an element: the
-- gather, which bounds these kernels, costs a load and half a pack an element.
--
-- A 1x1 image under a 1x1 kernel (an fc layer as its convolution: fc_wg,
-- common.fc.conv_table): a unit's EL reduction rows are EL of one image's inputs side
-- by side, loaded at once (a float4, or two 8-byte vectors of 16-bit values) where the
-- input size is a multiple of EL; the offset table is not needed then.

local engine = import("lib/engine")
local common = import("lib/common")
local igemm = import("lib/igemm")

local T = {}

T.fuses_add = true   -- common.residual: an add computed in the epilogue
T.out_slice = true   -- common.out_slice: the output written into a concat's slice

T.doc = "implicit GEMM on warpgroup tensor cores (wgmma, 3xTF32: FP32 accuracy; one BF16/FP16 product for 16-bit tensors), operands in shared memory; sm_90 (as sm_90a)"

-- Most registers the accumulators and a slice's prefetch may want (ADDRESSING
-- more go to pointers, masks and loop state; an H100 build of a 56-map tile with
-- mt = 2 and bk = 16 took 168 against 128 + 40; bk = 24 spilled at 168).
local REG_BUDGET = 200
local ADDRESSING = 40


-- The default tile of 16-bit layers (bm, bn, wgs, bk). Their products take a sixth of
-- 3xTF32's tensor-core time, so the gather bounds them and a deeper map tile (each
-- gathered element feeding more maps) pays: up to 64 maps, one block row of them
-- over one warpgroup of 128 columns; more, rows of up to 128 maps over two
-- warpgroups of 256 columns; slices of 32, of 16 with several rows (the map tests'
-- registers), and the largest of these that divides C (kc's slices of one tap).
-- Measured on an H200 in bf16 at 10,000 images, tap by tap (bench/RESULTS.md,
-- 2026-11-29): 64 maps from 64 channels, 3x3 on 32x32, 208 TFLOP/s (200 with
-- 64-deep slices, 200 over two warpgroups); 128 from 128 on 16x16 268; 256 from
-- 128 and from 256 on 8x8 189 and 199 in two rows of 128 against 160 and 175 in
-- one row of 256 over 64 columns (slices of 16: 128 accumulators a thread).
local function half_tile(l)
  local bm, bn, wgs, bk
  if l.M <= 64 then bm, bn, wgs, bk = common.wgmma_rows_tile(l, 1), 128, 1, 32
  else
    local rows = common.ceil_div(l.M, 128)
    bm, bn, wgs, bk = common.wgmma_rows_tile(l, rows), 256, 2, rows > 1 and 16 or 32
  end
  while bk > 16 and l.C % bk ~= 0 do bk = bk // 2 end
  return bm, bn, wgs, bk
end

local bm_param = common.wgmma_bm_param()
local bm_fp32 = bm_param.default
bm_param.default = function(l)
  if common.half_dtype(l) then return (half_tile(l)) end
  return bm_fp32(l)
end

T.params = {
  bm_param,
  { name = "bn", doc = "output pixels (columns) per block tile: wgs warpgroups of mt m64 tiles each",
    legal = function(_) return { 128, 256, 64, 512 } end,
    default = function(l) return common.half_dtype(l) and select(2, half_tile(l)) or 128 end },
  { name = "wgs", doc = "warpgroups (128 threads each) a block",
    legal = function(_) return { 1, 2 } end,
    default = function(l) return common.half_dtype(l) and select(3, half_tile(l)) or 1 end },
  { name = "kc", quiet = true,
    doc = "16-bit tensors: 1 reduces tap by tap (slices of bk channels of one kernel tap; bk divides C), 0 in "
      .. "(channel, row, column) order through an offset table",
    legal = function(l) return common.half_dtype(l) and { 1, 0 } or { 0 } end,
    default = function(l) return common.half_dtype(l) and l.C % 16 == 0 and 1 or 0 end },
  { name = "bk", doc = "reduction rows of one slice, a multiple of 8 (of 16 for 16-bit tensors; offsets from a table)",
    legal = function(l)
      if common.half_dtype(l) then return { 32, 16, 48, 64 } end
      return { 16, 8, 24, 32, 40, 48, 56, 64 }
    end,
    default = function(l) return common.half_dtype(l) and select(4, half_tile(l)) or 16 end },
  -- (padded layers: 1, since 2 of 23 random padded shapes spilled 4-12 bytes under occ=3's
  -- cap, which the estimate does not foresee; occ=1 took the same time as occ=3 on zoo-alex
  -- conv2 and zoo-awkward conv4, an H100, 2026-11-27)
  { name = "occ", doc = "blocks one SM must hold at once (__launch_bounds__): registers capped at the SM's / (occ*threads)",
    legal = function(_) return { 3, 2, 4, 1 } end,
    default = function(l) return common.conv_geom(l).padded and 1 or 3 end },
}

local function shape(l, p)
  local s = {}
  local g = common.conv_geom(l)
  s.g = g
  s.pooled = common.fused_pool2(g)
  s.fused = g.kind == "none" or s.pooled
  if s.pooled then
    s.OH, s.OW = g.OH, g.OW
    s.COLS = 4 * s.OH * s.OW          -- GEMM columns per image: four per pooling window
  else
    s.OH, s.OW = g.CH, g.CW
    s.COLS = s.OH * s.OW
  end
  s.P = s.OH * s.OW
  s.KK = l.K * l.K
  s.R = l.C * s.KK
  s.threads = 128 * p.wgs
  -- 16-bit operands ("bf16" or "f16"): one k16 product, 8 reduction rows a core-matrix row
  s.half = common.half_dtype(l)
  s.EL = s.half and 8 or 4            -- reduction rows in a core matrix's 16-byte row
  s.ES = s.half and 2 or 4            -- bytes an element in the buffers
  s.MT = p.bn // (64 * p.wgs)         -- m64 tiles of a warpgroup
  s.NPX = math.max(p.bn // s.threads, 1)   -- columns a thread gathers (bn < threads: two threads a column)
  s.AI = s.MT * p.bk // (2 * s.EL)    -- its units (EL reduction rows of one column) a slice
  s.BQ = p.bm * p.bk // s.EL          -- weight units of a slice
  s.BI = common.ceil_div(s.BQ, s.threads)
  s.slices = common.ceil_div(s.R, p.bk)
  s.pad0 = s.slices * p.bk - s.R      -- the first slice's zero rows
  s.kc = p.kc == 1                    -- tap by tap: slices of bk channels of one tap (bk divides C)
  -- a 1x1 image under a 1x1 kernel (an fc as its convolution, common.fc.conv_table): a
  -- unit's EL reduction rows are side by side in memory, 16 aligned bytes where C is a
  -- multiple of EL (so is every slice's first row, and the first slice's zero rows are
  -- whole units): one float4 or two 8-byte loads a unit, where the gather took EL loads
  -- (the lanes still go by columns: images C elements apart)
  s.x1 = l.K == 1 and l.H == 1 and l.W == 1 and not g.padded and l.C % s.EL == 0
  s.NR = p.bm // 2                    -- accumulators of one m64 tile a thread
  s.A, s.B = p.bk * p.bn, p.bk * p.bm -- elements of one operand (one part of it, split) in a buffer
  s.BUF = (s.half and 1 or 2) * (s.A + s.B)
  s.ER = p.bn + 4                     -- row stride of the staged tile
  s.smem = math.max(s.ES * 2 * s.BUF, 4 * p.bm * s.ER)
  s.const_bytes = (s.kc or s.x1) and 0 or 4 * (s.KK + p.bk) * (g.padded and 2 or 1)
  s.ETM = p.bm * p.bn // (4 * s.threads)
  -- (several block rows of maps: the row's first map and the map tests, 4 more; a 56-map
  -- tile in four rows spilled at 168 on an H100)
  s.regs = (s.half and 1 or 2) * s.MT * s.NR + math.max(s.MT * p.bk // 2, s.EL * s.BI) + ADDRESSING
    + (common.ceil_div(l.M, p.bm) > 1 and 4 or 0)
  return s
end

function T.check(l, p)
  local why_g = common.refuse_groups(l, "conv2d_igemm_wg")
  if why_g then return why_g, nil end
  local s = shape(l, p)
  local why0, blame0 = common.check_wgmma(l, p, "conv2d_igemm_wg", true)
  if why0 then return why0, blame0 end
  if s.half then
    local t = common.types(l)
    if t.in_t ~= t.w_t then
      return string.format("conv2d_igemm_wg multiplies operands of one type: the input is %s, the weights %s",
        t.in_t, t.w_t), nil
    end
    if p.bk % 16 ~= 0 then return string.format("bk=%d: 16-bit wgmma reduces 16 rows at a time", p.bk), "bk" end
  end
  if s.kc and l.C % p.bk ~= 0 then
    return string.format("kc=1 takes slices of bk channels of one tap: bk=%d must divide C=%d", p.bk, l.C), "kc"
  end
  if s.MT ~= 1 and s.MT ~= 2 and s.MT ~= 4 then
    return string.format("bn=%d over %d warpgroup%s is %d m64 tiles each; 1, 2 or 4 are served", p.bn, p.wgs,
      p.wgs > 1 and "s" or "", s.MT), "bn"
  end
  if s.const_bytes > (l.const_left or common.CONST_BUDGET) then
    return string.format("bk=%d: the slices' offset table needs %d bytes of constant memory; %d are left",
      p.bk, s.const_bytes, l.const_left or common.CONST_BUDGET), "bk"
  end
  if l.K > 64 then return string.format("K=%d: the offset table takes kernels up to 64 wide", l.K), "bk" end
  if s.regs > REG_BUDGET then
    return string.format("the accumulators and a slice's prefetch need about %d registers a thread; at most %d",
      s.regs, REG_BUDGET), "bm"
  end
  local why, blame = common.check_occ(l, p.occ, s.threads, s.regs, s.smem, "the accumulators and prefetch")
  if why then return why, blame end
  if s.smem > common.max_shared(l) then
    return string.format("two slices of bk=%d (or the staged tile) need %d bytes of shared memory; at most %d fit",
      p.bk, s.smem, common.max_shared(l)), "bk"
  end
  return nil
end

-- The cost model: three TF32 products a multiply-add on tensor cores at about
-- four times FFMA's rate each (16-bit operands: one product at twice TF32's
-- rate), over the padded tile (maps to bm, reduction to whole slices), or the
-- gather, which issues about ten instructions an element through the offset
-- table and feeds bm maps (about six tap by tap, kc=1: a load and half a pack
-- instead of a table read, two mask tests, the load and the pack; on an H200 the
-- same bf16 layers ran 1.5-1.75x faster so), when that is longer; resident
-- warpgroups hide one another's.
function T.cost(l, p)
  local s = shape(l, p)
  local blocks = common.ceil_div(common.cost.images(l) * s.COLS, p.bn) * common.ceil_div(l.M, p.bm)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local depth = s.slices * p.bk
  local tensor = seq * p.bm * p.bn * depth * (s.half and 1 / 8 or 3 / 4) / common.cost.FMA_PER_CLOCK
  local gather = seq * (p.bn + p.bm) * depth * (s.kc and 6 or 10) / (4 * 32) / common.cost.busy(conc, s.threads, 2)
  return math.max(tensor, gather) * common.cost.spills(squeezed)
end

local source = engine.compile([=[
// GEMM view: (N*{{COLS}}) columns x {{M}} maps, reduced over C*K*K = {{R}} in {{S}} slices of {{BK}}
// ({{pad0 > 0 and string.format("the first short: its rows 0 .. %d zeros", pad0 - 1) or "none short"}}); block tile {{BN}} columns x {{BM}} maps, {{WGS}} warpgroup{{WGS > 1 and "s" or ""}} of
% if half then
// {{MT}} m64 tiles, {{NT}} threads. Products: wgmma.mma_async m64n{{BM}}k16 {{wt}}, FP32 accumulation.
// Shared memory (dynamic, {{smem}} B): two buffers, each A [{{BK // 8}}][{{BN // 8}}][8][8] (columns) and
// B [{{BK // 8}}][{{BM // 8}}][8][8] (maps): core matrices of 8 rows x 8 reduction rows; the block's
% else
// {{MT}} m64 tiles, {{NT}} threads. Products: wgmma.mma_async m64n{{BM}}k8 TF32, 3xTF32 (big*big, big*small, small*big).
// Shared memory (dynamic, {{smem}} B): two buffers, each A hi, A lo [{{BK // 4}}][{{BN // 8}}][8][4] (columns) and
// B hi, B lo [{{BK // 4}}][{{BM // 8}}][8][4] (maps): core matrices of 8 rows x 4 reduction rows; the block's
% end
// tile staged as es[{{BM}}][{{ER}}] for the epilogue.
% if kc then
// Slice s: channels c0 .. c0 + {{BK - 1}} of kernel tap t = s / {{CB}} (row t / {{K}}, column t % {{K}}), c0 = {{BK}}*(s % {{CB}});
// reduction row k of it lies (c0 + k)*{{H * W}} + (t / {{K}})*{{W}} + t % {{K}} elements from its column's base. The weights
// arrive reordered {{KK}} taps x {{C}} channels x {{M}} maps (weights=arg:taps:{{KK}}).
% elseif x1 then
// A 1x1 image: slice s is rows s*{{BK}}{{pad0 > 0 and (" - " .. pad0) or ""}} on of each column (an image's inputs), a unit of {{EL}} rows one
// {{half and "pair of 8-byte loads" or "16-byte load"}}{{pad0 > 0 and string.format("; the first slice's first %d rows zeros", pad0) or ""}}
% else
// Slice s: reduction index r = s*{{BK}} + k - {{pad0}} lies {{xof}} elements plus
// tab[{{e0}} + k] from its column's base, tab[i] = (i / {{KK}})*{{H * W}} + ((i % {{KK}}) / {{K}})*{{W}} + i % {{K}}
__constant__ int {{name}}_tab[{{KK + BK}}] = {{tab}};
% if padded then
// and its kernel row and column, 64*p + q
__constant__ int {{name}}_pq[{{KK + BK}}] = {{pq}};
% end
% end

{{head}}
{
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
    {{stage_t}}* const sm = reinterpret_cast<{{stage_t}}*>(smem4);
    const int tid = threadIdx.x;
    const int lane = tid & 31, wq = (tid >> 5) & 3, wg = tid >> 7;   // warp in its warpgroup, warpgroup
    const int col0 = blockIdx.x * {{BN}};
% if MB == 1 then
    const int m0 = 0;   // one block row of maps
% else
    const int m0 = blockIdx.y * {{BM}};
% end
    const int total = n * {{COLS}};
    (void)b_arg;

    // the input element under reduction index 0 of each column this thread gathers
    // (columns {{CX}} + {{NT}}*j)
    const {{in_t}}* xb[{{NPX}}];
% if padded then
    {{mtype}} rm[{{NPX}}], cm[{{NPX}}];   // kernel rows / columns of each column inside the input
% end
#pragma unroll
    for (int j = 0; j < {{NPX}}; j++) {
        int c = col0 + {{CX}} + j * {{NT}};
        if (c >= total) c = 0;   // past the batch: read something valid, store nothing
% if pooled then
        const int win = c >> 2, d = c & 3;
        const int img = win / {{P}}, at = win - img * {{P}};
        const int oy = 2 * (at / {{OW}}) + (d >> 1), ox = 2 * (at % {{OW}}) + (d & 1);
% else
        const int img = c / {{P}}, at = c - img * {{P}};
        const int oy = at / {{OW}}, ox = at % {{OW}};
% end
        const int iy = oy * {{STR}} - {{pt}}, ix = ox * {{STR}} - {{pl}};
        xb[j] = in + img * {{C * H * W}} + iy * {{W}} + ix;
% if padded then
        rm[j] = 0, cm[j] = 0;
#pragma unroll
        for (int p = 0; p < {{K}}; p++) {
            if ((unsigned)(iy + p) < {{H}}u) rm[j] |= {{one}} << p;
            if ((unsigned)(ix + p) < {{W}}u) cm[j] |= {{one}} << p;
        }
% end
    }

    // a slice in registers: unit i of this thread is column slot i % {{NPX}}, reduction rows
    // {{EL}}*({{QX}}) .. +{{EL - 1}}
    {{stage_t}} xr[{{AI}}][{{EL}}];
    // first: s is the first slice, the short one (a literal at every call: the main loop's loads
    // carry no row test)
% if kc then
    auto fetch_x = [&](int s, bool first) {
        (void)first;
        const int t = s / {{CB}};
        const int ky = t / {{K}}, kx = t - ky * {{K}};
        const int o = (s - t * {{CB}}) * {{BK * H * W}} + ky * {{W}} + kx;
        const {{in_t}}* xp[{{NPX}}];
#pragma unroll
        for (int j = 0; j < {{NPX}}; j++) {
            xp[j] = xb[j] + o;
            asm("" : "+l"(xp[j]));
        }
% if padded then
        bool in_tap[{{NPX}}];   // whether the tap falls inside the input for each column
#pragma unroll
        for (int j = 0; j < {{NPX}}; j++) in_tap[j] = (rm[j] >> ky) & (cm[j] >> kx) & 1;
% end
#pragma unroll
        for (int i = 0; i < {{AI}}; i++) {
            const {{in_t}}* const q = xp[i % {{NPX}}] + {{EL}} * ({{QX}}) * {{H * W}};
% if x1 then
            {{unit_load("q")}}
% else
#pragma unroll
            for (int e = 0; e < {{EL}}; e++)
% if padded then
                xr[i][e] = in_tap[i % {{NPX}}] ? __ldg(q + e * {{H * W}}) : {{stage_t}}{0};
% else
                xr[i][e] = __ldg(q + e * {{H * W}});
% end
% end
        }
    };
% elseif x1 then
    auto fetch_x = [&](int s, bool first) {
%   if pad0 == 0 then
        (void)first;
%   end
{{xp_init(x1_off, "a unit")}}
#pragma unroll
        for (int i = 0; i < {{AI}}; i++) {
            const {{in_t}}* const q = xp[i % {{NPX}}] + {{EL}} * ({{QX}});
%   if pad0 > 0 then
            if (first && {{EL}} * ({{QX}}) < {{pad0}}) {   // the first slice's zero rows
#pragma unroll
                for (int e = 0; e < {{EL}}; e++) xr[i][e] = {{half and (stage_t .. "{0}") or "0.0f"}};
                continue;
            }
%   end
            {{unit_load("q")}}
        }
    };
% else
    auto fetch_x = [&](int s, bool first) {
{{xp_init(xof, "an element", "        const int e0 = " .. e0 .. ";\n")}}
#pragma unroll
        for (int i = 0; i < {{AI}}; i++) {
#pragma unroll
            for (int e = 0; e < {{EL}}; e++) {
                const int r = {{EL}} * ({{QX}}) + e;
% if padded then
                const int pq = {{name}}_pq[e0 + r];
                const bool ok = (!first || r >= {{pad0}}) && ((rm[i % {{NPX}}] >> (pq >> 6)) & (cm[i % {{NPX}}] >> (pq & 63)) & 1);
% else
                const bool ok = !first || r >= {{pad0}};
% end
% if half then
                xr[i][e] = ok ? __ldg(xp[i % {{NPX}}] + {{name}}_tab[e0 + r]) : {{stage_t}}{0};
% else
                xr[i][e] = ok ? {{to_acc("__ldg(xp[i % " .. NPX .. "] + " .. name .. "_tab[e0 + r])")}} : 0.0f;
% end
            }
        }
    };
% end
    // the slice's weights: unit i of this thread is u = tid + {{NT}}*i, map u % {{BM}}, rows {{EL}}*(u / {{BM}}) .. +{{EL - 1}}
    {{stage_t}} wr[{{BI}}][{{EL}}];
    auto fetch_w = [&](int s, bool first) {
        const {{w_t}}* wp = w_arg + {{wso}} + m0;
        asm("" : "+l"(wp));
#pragma unroll
        for (int i = 0; i < {{BI}}; i++) {
            const int u = tid + i * {{NT}};
            const int m = u % {{BM}}, q = u / {{BM}};
#pragma unroll
            for (int e = 0; e < {{EL}}; e++) {
                const int r = {{EL}} * q + e;
                const bool ok = {{wok}};
% if half then
                wr[i][e] = ok ? __ldg(wp + r * {{M}} + m) : {{stage_t}}{0};
% else
                wr[i][e] = ok ? {{w_to_acc("__ldg(wp + r * " .. M .. " + m)")}} : 0.0f;
% end
            }
        }
    };
% if half then
{{put8}}
% else
    // each value as its TF32 part (truncated) and the remainder (lib/common.lua), 16 bytes a store
    auto put = []({{stage_t}}* hi, {{stage_t}}* lo, const {{stage_t}} (&v)[4]) {
        {{vec_t(stage_t, 4)}} h, l;
        h.x = __uint_as_float(__float_as_uint(v[0]) & 0xffffe000u), l.x = v[0] - h.x;
        h.y = __uint_as_float(__float_as_uint(v[1]) & 0xffffe000u), l.y = v[1] - h.y;
        h.z = __uint_as_float(__float_as_uint(v[2]) & 0xffffe000u), l.z = v[2] - h.z;
        h.w = __uint_as_float(__float_as_uint(v[3]) & 0xffffe000u), l.w = v[3] - h.w;
        *reinterpret_cast<{{vec_t(stage_t, 4)}}*>(hi) = h;
        *reinterpret_cast<{{vec_t(stage_t, 4)}}*>(lo) = l;
    };
% end
    auto stash_x = [&](int b) {
        {{stage_t}}* const a = sm + b * {{BUF}};
#pragma unroll
        for (int i = 0; i < {{AI}}; i++) {
            const int c = {{CX}} + (i % {{NPX}}) * {{NT}}, q = {{QX}};
            {{stage_t}}* const at = a + (q * {{BN // 8}} + c / 8) * {{8 * EL}} + (c % 8) * {{EL}};
            put(at, {{half and "" or ("at + " .. A .. ", ")}}xr[i]);
        }
    };
    auto stash_w = [&](int b) {
        {{stage_t}}* const a = sm + b * {{BUF}} + {{BOFF}};
#pragma unroll
        for (int i = 0; i < {{BI}}; i++) {
            const int u = tid + i * {{NT}};
% if BQ % NT ~= 0 then
            if (u >= {{BQ}}) break;
% end
            const int m = u % {{BM}}, q = u / {{BM}};
            {{stage_t}}* const at = a + (q * {{BM // 8}} + m / 8) * {{8 * EL}} + (m % 8) * {{EL}};
            put(at, {{half and "" or ("at + " .. B .. ", ")}}wr[i]);
        }
    };
    // slice s into buffer b: its input elements, then its weights (each set of registers free
    // again before the next is loaded: they are live while the tensor cores work)
    auto load = [&](int s, int b, bool first) {
        fetch_x(s, first);
        stash_x(b);
        fetch_w(s, first);
        stash_w(b);
    };

% if half then
    // cf: the running sum, the products added to it on the tensor cores. Tile t of this
    // warpgroup, register r: column 64*({{MT}}*wg + t) + 16*wq + lane/4 + 8*((r >> 1) & 1),
    // map 8*(r >> 2) + 2*(lane & 3) + (r & 1)
    {{acc_t}} cf[{{MT}}][{{NR}}];
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) cf[t][r] = 0.0f;
% else
    // cf: the running sum; sl: one slice's products. Tile t of this warpgroup, register r:
    // column 64*({{MT}}*wg + t) + 16*wq + lane/4 + 8*((r >> 1) & 1), map 8*(r >> 2) + 2*(lane & 3) + (r & 1)
    {{acc_t}} cf[{{MT}}][{{NR}}], sl[{{MT}}][{{NR}}];
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) cf[t][r] = 0.0f, sl[t][r] = 0.0f;
% end
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // descriptors of no-swizzle K-major operands: start address / 16, the distance between
    // core matrices along the reduction (leading) and along the rows (stride), in 16 bytes
    const unsigned long long d0 = ((unsigned)__cvta_generic_to_shared(sm) >> 4);
    auto wgmma = []({{acc_t}} (&d)[{{NR}}], unsigned long long da, unsigned long long db, int acc) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %{{NR + 2}}, 0;\n"
% if half then
            "wgmma.mma_async.sync.aligned.m64n{{BM}}k16.f32.{{wt}}.{{wt}} {{dregs}}, %{{NR}}, %{{NR + 1}}, p, 1, 1, 0, 0;\n}\n"
% else
            "wgmma.mma_async.sync.aligned.m64n{{BM}}k8.f32.tf32.tf32 {{dregs}}, %{{NR}}, %{{NR + 1}}, p, 1, 1;\n}\n"
% end
            : {{douts}}
            : "l"(da), "l"(db), "r"(acc));
    };
#endif
% if half then
    // cf += the slice in buffer b
% else
    // sl = the slice in buffer b (its first products onto zero)
% end
    auto multiply = [&](int b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int k = 0; k < {{BK // KS}}; k++) {
            const unsigned long long bh = d0 + {{adesc_b}} + b * {{BUF16}} + k * {{2 * BM}};
% if half then
#pragma unroll
            for (int t = 0; t < {{MT}}; t++)
                wgmma(cf[t], d0 + {{adesc_a}} + b * {{BUF16}} + k * {{2 * BN}} + ({{MT}} * wg + t) * 64, bh, 1);
% else
#pragma unroll
            for (int t = 0; t < {{MT}}; t++) {
                const unsigned long long ah = d0 + {{adesc_a}} + b * {{BUF16}} + k * {{2 * BN}} + ({{MT}} * wg + t) * 64;
                wgmma(sl[t], ah + {{A // 4}}, bh, k > 0);   // small * big
                wgmma(sl[t], ah, bh + {{B // 4}}, 1);         // big * small
                wgmma(sl[t], ah, bh, 1);                    // big * big
            }
% end
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
% if half then
        // without wgmma: each accumulator plus a dot product of the buffer's values, in FP32
% else
        // without wgmma: each accumulator a dot product of the buffer's values (big + small: exact)
% end
        const {{stage_t}}* const a = sm + b * {{BUF}};
#pragma unroll 1
        for (int t = 0; t < {{MT}}; t++)
#pragma unroll 1
            for (int r = 0; r < {{NR}}; r++) {
                const int c = 64 * ({{MT}} * wg + t) + 16 * wq + (lane >> 2) + 8 * ((r >> 1) & 1);
                const int m = 8 * (r >> 2) + 2 * (lane & 3) + (r & 1);
                {{acc_t}} v = 0.0f;
#pragma unroll 1
                for (int k = 0; k < {{BK}}; k++) {
                    const int ao = ((k >> {{ELS}}) * {{BN // 8}} + c / 8) * {{8 * EL}} + (c % 8) * {{EL}} + (k & {{EL - 1}});
                    const int bo = {{BOFF}} + ((k >> {{ELS}}) * {{BM // 8}} + m / 8) * {{8 * EL}} + (m % 8) * {{EL}} + (k & {{EL - 1}});
                    v = fmaf({{emu_x("ao", A)}}, {{emu_x("bo", B)}}, v);
                }
                {{half and "cf[t][r] += v;" or "sl[t][r] = v;"}}
            }
#endif
    };
    auto land = [&]() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
% if not half then
#pragma unroll
        for (int t = 0; t < {{MT}}; t++)
#pragma unroll
            for (int r = 0; r < {{NR}}; r++) cf[t][r] += sl[t][r];
% end
    };
    // the tensor cores read shared memory through the async proxy: ordinary stores fenced before the barrier
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define {{name}}_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#else
#define {{name}}_FENCE() ((void)0)
#endif

    load(0, 0, true);
    {{name}}_FENCE();
    __syncthreads();
#pragma unroll 1
    for (int s = 0; s < {{S}}; s++) {
        multiply(s & 1);   // asynchronous on the tensor cores
        if (s + 1 < {{S}}) {
            load(s + 1, (s & 1) ^ 1, false);   // meanwhile, into the other buffer
            {{name}}_FENCE();
        }
        land();
        __syncthreads();
    }
#undef {{name}}_FENCE

% if pooled then
    // the block's tile through shared memory (over the buffers, read by now): es[map][column],
    // then each thread takes {{ETM}} maps x 4 columns of it
% -- es: the accumulators over the stage (stage_t is acc_t: see kernel())
    {{acc_t}}* const es = reinterpret_cast<{{acc_t}}*>(smem4);
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int r = 0; r < {{NR}}; r++)
            es[(8 * (r >> 2) + 2 * (lane & 3) + (r & 1)) * {{ER}} + 64 * ({{MT}} * wg + t) + 16 * wq + (lane >> 2) + 8 * ((r >> 1) & 1)] = cf[t][r];
    __syncthreads();
    const int tx = tid % {{BN // 4}}, ty = tid / {{BN // 4}};
    {{acc_t}} acc[{{ETM}}][4];
#pragma unroll
    for (int i = 0; i < {{ETM}}; i++) {
        const {{vec_t(acc_t, 4)}} t = *reinterpret_cast<const {{vec_t(acc_t, 4)}}*>(es + (ty * {{ETM}} + i) * {{ER}} + tx * 4);
        acc[i][0] = t.x, acc[i][1] = t.y, acc[i][2] = t.z, acc[i][3] = t.w;
    }

{{epilogue}}
% else
    // epilogue: {{bias and "bias, " or ""}}{{actname}}, {{res and "add, " or ""}}stored from the accumulators: this thread's columns
    // are rows lane/4 and lane/4 + 8 of its m64 tiles, its maps 2*(lane & 3) and the next of each eight
    // (a warp's store: eight neighbouring columns of four maps)
#pragma unroll
    for (int t = 0; t < {{MT}}; t++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int c = col0 + 64 * ({{MT}} * wg + t) + 16 * wq + (lane >> 2) + 8 * h;
            if (c >= total) continue;
            const int img = c / {{P}}, at = c - img * {{P}};
%   if OS == M * P or res then
            const int ob = img * {{M * P}} + at;   // the column's element of map 0
%   end
%   if OS == M * P then
            {{out_t}}* const o = out + ob;
%   else
            {{out_t}}* const o = out + img * {{OS}} + at;   // into a concat's slice: its image stride
%   end
{{map_stores}}
        }
}
% end
]=], "conv2d_igemm_wg")

function T.kernel(l, p)
  local s = shape(l, p)
  local g = s.g
  local act = s.fused and l.act or "none"
  -- an add computed here (common.residual): its other operands read at the stored elements
  local res = common.residual(l, s.fused and not s.pooled)
  -- the output written into a concat's slice (common.out_slice): its image stride
  local slice = common.out_slice(l, s.fused)
  local name = string.format("conv2d_igemm_c%dm%dk%d_h%dw%d%s_%s%s%s_m%dn%dk%d_g%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, s.pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.bm, p.bn, p.bk, p.wgs) .. (p.occ > 1 and string.format("_o%d", p.occ) or "") .. (s.kc and "_kc" or "") .. "_wg"
    .. (res and res.tag or "") .. (slice and slice.tag or "")
  local std = common.std_args({ types = common.types(l), w_name = "w_arg", b_name = "b_arg" })
  local head, args = common.kernel_head(name, s.threads, res and res.args(std) or std, nil, p.occ)
  local dregs, douts = common.wgmma_dregs(s.NR)
  local mguard = l.M % p.bm ~= 0
  local wok = {}
  if mguard then wok[#wok + 1] = string.format("m0 + m < %d", l.M) end
  if s.pad0 > 0 then wok[#wok + 1] = string.format("(!first || r >= %d)", s.pad0) end
  if s.BQ % s.threads ~= 0 then wok[#wok + 1] = string.format("u < %d", s.BQ) end
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, KK = s.KK, R = s.R,
    BM = p.bm, BN = p.bn, BK = p.bk, WGS = p.wgs, MT = s.MT, NT = s.threads, NPX = s.NPX, AI = s.AI,
    -- this thread's column (of slot 0) and the quad of its slice unit i
    CX = p.bn >= s.threads and "tid" or string.format("tid %% %d", p.bn),
    QX = p.bn >= s.threads and string.format("i / %d", s.NPX) or string.format("tid / %d + i * %d", p.bn, s.threads // p.bn),
    BI = s.BI, BQ = s.BQ, NR = s.NR, A = s.A, B = s.B, BUF = s.BUF, ER = s.ER, ETM = s.ETM, ETN = 4,
    S = s.slices, pad0 = s.pad0, MB = common.ceil_div(l.M, p.bm), COLS = s.COLS, P = s.P, OW = s.OW, smem = s.smem,
    pooled = s.pooled, padded = g.padded, STR = g.S, pt = g.pt, pl = g.pl,
    mtype = l.K > 32 and "unsigned long long" or "unsigned", one = l.K > 32 and "1ull" or "1u",
    dregs = dregs, douts = douts,
    -- descriptors: core matrices of a slice's rows (bn or bm of them) apart along the reduction
    adesc_a = common.wgmma_desc(p.bn), adesc_b = string.format("%s + %d", common.wgmma_desc(p.bm), (s.half and 1 or 2) * s.A * s.ES // 16),
    -- 16-bit operands: their PTX type; the buffer in 16-byte units, B's offset in it in elements
    half = s.half ~= nil, wt = s.half, EL = s.EL, BUF16 = s.BUF * s.ES // 16, BOFF = (s.half and 1 or 2) * s.A,
    kc = s.kc, CB = l.C // p.bk, x1 = s.x1,
    -- reduction rows a wgmma takes (16-bit: 16; TF32: 8) and log2 of a core matrix row's
    KS = s.half and 16 or 8, ELS = s.half and 3 or 2,
    wok = #wok > 0 and table.concat(wok, " && ") or "true",
    -- conv2d_igemm's epilogue
    bias = l.bias, vec = s.P % 4 == 0, mguard = mguard, actname = act,
    act = function(e) return common.act(act, e) end,
    pool_kind = g.kind, pool_doc = not s.pooled and "" or g.max2 and "2x2 max, " or "2x2 average, ",
    OS = slice and slice.stride or l.M * s.P,
  }
  -- (the offset table only where the slices read it: not tap by tap)
  for k, x in pairs(igemm.free_slices(l, p.bk, s.pad0, not s.kc and not s.x1)) do v[k] = x end
  common.typed(l, v)
  -- the operands' stage: FP32 values split into a TF32 part and its remainder
  -- (3xTF32), the accumulator's type; 16-bit tensors' values as they are stored
  v.stage_t = s.half and v.in_t or v.acc_t
  v.put8 = s.half and common.put8_lambda(v.stage_t, v.vec_t(v.acc_t, 4)) or ""
  -- a 1x1 image's unit (s.x1): its EL rows from q into xr[i], one float4 (converted) or
  -- two 8-byte vectors of four 16-bit values; and slice s's first row
  v.unit_load = function(q)
    if s.half then
      local vt = v.vec_t(v.in_t, 4)
      return string.format("const %s lo = __ldg(reinterpret_cast<const %s*>(%s)), hi = __ldg(reinterpret_cast<const %s*>(%s + 4));\n"
        .. "            xr[i][0] = lo.x, xr[i][1] = lo.y, xr[i][2] = lo.z, xr[i][3] = lo.w;\n"
        .. "            xr[i][4] = hi.x, xr[i][5] = hi.y, xr[i][6] = hi.z, xr[i][7] = hi.w;", vt, vt, q, vt, q)
    end
    local vt = v.vec_t(v.in_t, 4)
    return string.format("const %s u = __ldg(reinterpret_cast<const %s*>(%s));\n"
      .. "            xr[i][0] = %s, xr[i][1] = %s, xr[i][2] = %s, xr[i][3] = %s;", vt, vt, q,
      v.to_acc("u.x"), v.to_acc("u.y"), v.to_acc("u.z"), v.to_acc("u.w"))
  end
  v.x1_off = string.format("s * %d", p.bk) .. (s.pad0 > 0 and (" - " .. s.pad0) or "")
  -- a slice's column pointers: xb[j] moved on by the slice's offset `off` (after_o: a line after o's)
  v.xp_init = function(off, what, after_o)
    return string.format("        const int o = %s;\n%s"
      .. "        const %s* xp[%d];   // kept from folding into 64-bit index arithmetic %s\n"
      .. "#pragma unroll\n"
      .. "        for (int j = 0; j < %d; j++) {\n"
      .. "            xp[j] = xb[j] + o;\n"
      .. "            asm(\"\" : \"+l\"(xp[j]));\n"
      .. "        }", off, after_o or "", v.in_t, v.NPX, what, v.NPX)
  end
  -- the emulation's operand at buffer offset i: the 16-bit value widened, or the
  -- split value's two parts summed (exact), the second `half` elements further on
  v.emu_x = function(i, half)
    if s.half then return v.to_acc(string.format("a[%s]", i)) end
    return string.format("a[%s] + a[%s + %d]", i, i, half)
  end
  -- e, the conv's value at map m of the column (element ob + m*P), with the add applied
  v.res = res or false
  v.radd = function(e)
    if not res then return e end
    local others = {}
    for k = 1, res.n do
      others[k] = v.to_acc(string.format("__ldg(%s + ob + m * %d)", res.names[k], s.P))
    end
    return res.sum(e, others)
  end
  v.map_stores = common.wgmma_map_stores(p.bm, mguard and l.M, s.P, "(lane & 3)", function(r)
    return v.from_acc(v.radd(v.act(r .. (l.bias and (" + " .. v.w_to_acc("__ldg(b_arg + m)")) or ""))))
  end)
  v.epilogue = s.pooled and igemm.epilogue(v) or ""
  local k = common.tiled_conv_record(l, p, s, act, name, args, source(v), s.COLS)
  k.const_bytes = s.const_bytes
  if s.half then k.precision = l.precision end
  if s.kc then k.weights = string.format("arg:taps:%d", s.KK) end
  k.residual = res ~= nil
  k.out_slice = slice ~= nil
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  return k
end

return T
