-- conv2d_winograd.lua — Winograd F(m x m, r x r) convolution, every layer constant a literal.
--
-- Serves stride-1 layers whose kernel side r = K and output tile side m = `mt` need
-- n = m + r - 1 <= 8 points (3x3 with m = 2, 4 or 6; 5x5 with m = 2 or 4; 7x7 with
-- m = 2; 2x2 to 6x6 alike); `check` refuses the others. The conv output is cut
-- into tiles of m x m outputs, each computed from an n x n input tile d of every
-- channel: V = BT d B (the input transform), U = G g G^T (the r x r filter g of a
-- map and channel, to n x n), then for each of the n*n positions xi of the
-- transformed domain a matrix product M[xi][map][tile] = sum_c U[xi][map][c] *
-- V[xi][c][tile], and the inverse transform Y = AT M A gives the tile's m x m
-- outputs: n*n multiply-adds per channel where a direct convolution does m*m*r*r.
-- The matrices come from lib/winograd.lua (exact rationals, the transforms emitted
-- as literal additions and products).
--
-- One kernel per layer, tiled as conv2d_igemm is: a block owns BM maps x BN tiles
-- and computes all n*n products of them, each product a BM x BN matrix product in
-- thread tiles of TM maps x TN tiles (outer products from shared memory, the
-- maps and tiles of a thread contiguous: float4 reads). The threads form n*n/XG
-- groups of (BM/TM)*(BN/TN), group g computing products g*XG .. g*XG+XG-1. The
-- reduction over C runs in slices of CS channels, a loop that is not unrolled
-- (the source does not grow with C). Per slice every thread reads the raw input
-- tiles and filters it transforms (filters transformed in the kernel, from
-- weights the runtime uploads transposed to (C*r*r) x M so that lanes read along
-- maps) into registers while the previous slice is multiplied, then transforms
-- them into the other of two shared-memory buffers: vs[n*n][CS][BN] and
-- us[n*n][CS][BM] (each product's part padded by four floats, so that threads
-- of one warp reading different products meet other banks).
-- Epilogue: the products go through shared memory (ms[n*n][BM][BN], over the
-- slices' buffers), then each thread takes (map, tile) pairs, applies the
-- inverse transform, and with a fused 2x2 pool (max or average, stride 2; tiles
-- start on even rows and columns) stores (m/2)x(m/2) pooled outputs, else bias,
-- activation and the m x m outputs, those past the conv output's edge dropped.
-- Other pools leave the kernel unfused (conv + bias, then the pool template).
-- Padding: each input tile keeps two n-bit masks, its rows and columns inside
-- the input; an element is read where both bits are set, else 0. Rows and
-- columns that cannot fall outside, known from literals, skip the test.
-- `occ` is __launch_bounds__'s blocks per SM, as in conv2d_igemm.

local engine = import("lib/engine")
local common = import("lib/common")
local wino = import("lib/winograd")

local T = {}

T.out_slice = true   -- common.out_slice: the output written into a concat's slice

T.doc = "Winograd F(m x m, r x r); a block computes the n*n products of a maps x tiles tile through shared-memory slices"

-- Largest unrolled body: the FMAs of one slice of one thread (XG*CS*TM*TN).
local BODY_BUDGET = 4096
-- Most registers the accumulators, prefetched tiles and filters may want (the
-- rest is addressing and the transforms' temporaries), and never more than
-- __launch_bounds__ leaves. 216 admits F(2x2,3x3) in 32x32 tiles with xg=2 on a
-- padded layer (about 210 here; 254 registers and no spill on an H100, 1.28-1.42x
-- igemm's default on zoo-vgg-same), which 208 refused for xg=1 (1-9 % behind igemm).
local REG_BUDGET = 216
local REG_ADDRESSING = 40

-- The output tile sides a layer of kernel side K may take (n = m + K - 1 <= 8).
local function tile_sides(l)
  local out = {}
  for _, m in ipairs({ 2, 4, 6 }) do
    if m + l.K - 1 <= wino.MAX_N then out[#out + 1] = m end
  end
  if #out == 0 then out[1] = 2 end   -- refused by check, with the reason
  return out
end

-- Channels a slice may hold: the divisors of C up to 16, largest first (a
-- search that refuses the default tries the deepest slice that fits next).
local function slice_channels(l)
  local d, out = common.divisors(l.C, 16), {}
  for i = #d, 1, -1 do out[#out + 1] = d[i] end
  return out
end

-- The points of the default tile (m = 2): n = K + 1.
local function default_n(l) return l.K + 1 end

T.params = {
  { name = "mt", doc = "output tile side m: F(m x m, K x K) from n = m + K - 1 points (at most 8)",
    legal = tile_sides,
    default = function(_) return 2 end },
  { name = "bm", doc = "output maps per block tile",
    legal = function(l) return common.map_tiles(l, 64) end,
    default = function(l)
      local most = default_n(l) <= 4 and 32 or 16
      if l.M <= most then return l.M end
      return most
    end },
  { name = "bn", doc = "output tiles per block tile",
    legal = function(_) return { 32, 16, 64, 128 } end,
    default = function(l) return default_n(l) <= 6 and 32 or 16 end },
  { name = "cs", doc = "input channels per slice of the reduction (a divisor of C, at most 16)",
    legal = slice_channels,
    default = function(l)
      local most = default_n(l) <= 4 and 8 or 4
      for _, v in ipairs(slice_channels(l)) do if v <= most then return v end end
      return 1
    end },
  { name = "tm", doc = "maps per thread",
    legal = function(_) return { 8, 4, 2, 1 } end,
    default = function(_) return 8 end },
  { name = "tn", doc = "tiles per thread",
    legal = function(_) return { 8, 4, 2, 1 } end,
    default = function(_) return 8 end },
  { name = "xg", doc = "of the n*n products, those one thread computes",
    legal = function(_) return { 1, 2, 4, 8, 16 } end,
    default = function(l) return default_n(l) <= 4 and 2 or 1 end },
  common.occ_param({ 1, 2 }),
}

-- The numbers every part of the template derives from the parameters.
local function shape(l, p)
  local s = {}
  local g = common.conv_geom(l)
  s.g = g
  s.n = p.mt + l.K - 1                -- points: input tiles are n x n
  s.NN = s.n * s.n                    -- products
  s.pooled = common.fused_pool2(g)
  s.fused = g.kind == "none" or s.pooled
  s.CH, s.CW = g.CH, g.CW
  if s.pooled then
    s.PO = p.mt // 2                  -- pooled outputs a tile side
    s.OH, s.OW = g.OH, g.OW
    s.TH, s.TW = common.ceil_div(g.OH, s.PO), common.ceil_div(g.OW, s.PO)
  else
    s.OH, s.OW = s.CH, s.CW
    s.TH, s.TW = common.ceil_div(s.CH, p.mt), common.ceil_div(s.CW, p.mt)
  end
  s.PT = s.TH * s.TW                  -- tiles per image
  s.P = s.OH * s.OW                   -- stored outputs per image and map
  s.G = s.NN // p.xg                  -- thread groups, one per xg products
  s.TT = (p.bm // math.max(p.tm, 1)) * (p.bn // math.max(p.tn, 1))   -- thread tiles of a group
  s.threads = s.G * s.TT
  local nt = math.max(s.threads, 1)
  s.LI = common.ceil_div(p.cs * p.bn, nt)   -- input tiles each thread transforms a slice
  s.LW = common.ceil_div(p.cs * p.bm, nt)   -- filters each thread transforms a slice
  s.slices = l.C // p.cs
  -- floats between two products: a slice's part, rounded to float4 and padded by one
  s.XS = common.ceil_div(p.cs * p.bn, 4) * 4 + 4
  s.XU = common.ceil_div(p.cs * p.bm, 4) * 4 + 4
  s.XM = common.ceil_div(p.bm * p.bn, 4) * 4 + 4
  s.smem = 4 * math.max(2 * s.NN * (s.XS + s.XU), s.NN * s.XM)
  -- input rows p in [pt, ylim) and columns q in [pl, xlim) of every tile are inside the input
  s.ylim = l.H - p.mt * (s.TH - 1) + g.pt
  s.xlim = l.W - p.mt * (s.TW - 1) + g.pl
  s.rowtest = g.pt > 0 or s.ylim < s.n
  s.coltest = g.pl > 0 or s.xlim < s.n
  -- registers: accumulators, fragments, the prefetched raw tiles and filters, their offsets and
  -- masks, and the transforms' temporaries in flight (about two rows of n). An estimate: ptxas
  -- may still need more (an F(2x2,7x7) tile with padding masks spilled 8-24 bytes on sm_90
  -- where this says 193-213); the tuner refuses a candidate that spills
  s.regs = p.xg * p.tm * p.tn + p.tm + p.tn + s.LI * (s.NN + 1) + s.LW * (l.K * l.K + 1)
    + ((s.rowtest or s.coltest) and 2 * s.LI or 0) + 2 * s.n
  return s
end

function T.check(l, p)
  local why_g = common.refuse_groups(l, "conv2d_winograd")
  if why_g then return why_g, nil end
  local g = common.conv_geom(l)
  if g.S ~= 1 then
    return string.format("Winograd serves stride 1 only; this layer's is %d", g.S)
  end
  if l.K < 2 then return "Winograd serves kernels of 2x2 and more; this layer's is 1x1" end
  if p.mt + l.K - 1 > wino.MAX_N then
    if 2 + l.K - 1 > wino.MAX_N then
      return string.format("Winograd serves kernels up to %dx%d; this layer's is %dx%d", wino.MAX_N - 1,
        wino.MAX_N - 1, l.K, l.K)
    end
    return string.format("mt=%d with a %dx%d kernel needs %d points; at most %d", p.mt, l.K, l.K,
      p.mt + l.K - 1, wino.MAX_N), "mt"
  end
  if g.CH < 1 or g.CW < 1 then return "the conv output is empty" end
  local why, blame = common.check_thread_tile(l, p)
  if why then return why, blame end
  local s = shape(l, p)
  if s.NN % p.xg ~= 0 then
    return string.format("xg=%d must divide the %d products of F(%dx%d, %dx%d)", p.xg, s.NN, p.mt, p.mt,
      l.K, l.K), "xg"
  end
  -- (a block need not be whole warps: with an odd number of points, n*n products seldom are)
  if s.threads < 32 or s.threads > common.MAX_THREADS then
    return string.format("(%d/xg)*(bm/tm)*(bn/tn) = %d threads; a block needs from 32 to %d",
      s.NN, s.threads, common.MAX_THREADS), "bn"
  end
  if p.xg * p.cs * p.tm * p.tn > BODY_BUDGET then
    return string.format("xg*cs*tm*tn = %d unrolled multiply-adds per slice; the budget is %d",
      p.xg * p.cs * p.tm * p.tn, BODY_BUDGET), "cs"
  end
  local rps = (l.target and l.target.regs_per_sm) or 65536
  local cap = math.min(255, (rps // s.threads) // 8 * 8) - REG_ADDRESSING
  if s.regs > math.min(REG_BUDGET, cap) then
    return string.format("the accumulators, prefetched tiles and filters need about %d registers a thread; " ..
      "at most %d with %d threads", s.regs, math.min(REG_BUDGET, cap), s.threads), "tm"
  end
  why, blame = common.check_occ(l, p.occ, s.threads, s.regs + REG_ADDRESSING, s.smem,
    "the accumulators, prefetched tiles, filters and addressing")
  if why then return why, blame end
  if s.smem > common.max_shared(l) then
    return string.format("two slices of %d channels and the %d products of a %dx%d tile need %d bytes of " ..
      "shared memory; at most %d fit", p.cs, s.NN, p.bm, p.bn, s.smem, common.max_shared(l)), "cs"
  end
  return nil
end

-- The cost model (common.cost), in conv2d_igemm's terms (the registers a thread
-- occupies with the addressing margin counted): the multiply-adds of the n*n
-- products of the tiles the busiest SM computes, plus the transforms (their
-- additions counted from the matrices: an input tile and a filter per channel
-- and block, an output per map and tile), at the rate the shared-memory reads
-- allow (tm + tn reads feed tm*tn FMAs; four FMAs a read keep the lanes busy)
-- and the resident warps allow; or, when longer, the slices' round trips to
-- memory, one in flight. `occ` as in conv2d_igemm (common.cost.spread,
-- common.cost.spills); since the check refuses an occ whose cap is below the
-- estimate, it changes nothing here yet.
function T.cost(l, p)
  local s = shape(l, p)
  local f = wino.matrices(p.mt, l.K)
  local blocks = common.ceil_div(common.cost.images(l) * s.PT, p.bn) * common.ceil_div(l.M, p.bm)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs + REG_ADDRESSING - 16, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local reuse = math.min(1, p.tm * p.tn / (p.tm + p.tn) / 4)
  local work = s.NN * p.bm * p.bn * l.C / reuse
    + l.C * (wino.sandwich_ops(f.BT, f.BT) * p.bn + wino.sandwich_ops(f.G, f.G) * p.bm)
    + (wino.sandwich_ops(f.AT, f.AT) + s.NN) * p.bm * p.bn
  local compute = seq * work / (common.cost.FMA_PER_CLOCK * common.cost.busy(conc, s.threads, 2))
  local memory = common.ceil_div(seq, conc) * s.slices * common.cost.LATENCY
  return math.max(compute, memory) * common.cost.spills(squeezed)
end

local source = engine.compile([=[
// Winograd F({{MT}}x{{MT}}, {{K}}x{{K}}): {{M}} maps of {{CH}}x{{CW}} from {{C}} channels of {{H}}x{{W}}; {{PT}} tiles of
// {{MT}}x{{MT}} outputs an image ({{TH}}x{{TW}}{{pooled and ", pooled in the kernel" or ""}}), each from {{N}}x{{N}} inputs. Products: {{NN}} of
// {{M}} maps x (N*{{PT}}) tiles, reduced over C = {{C}} in {{S}} slices of {{CS}} channels; block tile {{BM}}x{{BN}},
// thread tile {{TM}}x{{TN}} of {{XG}} products (group g = tid / {{TT}}: products g*{{XG}} .. +{{XG - 1}}), {{NT}} threads.
// Shared memory (dynamic, {{smem}} B): vs[2][{{NN}}][{{XS}}] transformed input ({{CS}}x{{BN}} a product),
// us[2][{{NN}}][{{XU}}] transformed filters ({{CS}}x{{BM}}); then ms[{{NN}}][{{XM}}] the products ({{BM}}x{{BN}}).

{{head}}
{
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
% -- the transformed tiles and filters, in acc_t
    {{acc_t}}* const vs = reinterpret_cast<{{acc_t}}*>(smem4);
    {{acc_t}}* const us = vs + {{2 * NN * XS}};
    const int tid = threadIdx.x;
    const int grp = tid / {{TT}};      // products grp*{{XG}} .. +{{XG - 1}}
    const int tt = tid % {{TT}};       // the thread tile
    const int tx = tt % {{BN // TN}};   // tiles tx*{{TN}} .. +{{TN - 1}}
    const int ty = tt / {{BN // TN}};   // maps ty*{{TM}} .. +{{TM - 1}}
    const int col0 = blockIdx.x * {{BN}};
    const int m0 = blockIdx.y * {{BM}};
    const int total = n * {{PT}};
    (void)b_arg;

    // the input tiles this thread transforms: pair e = tid + i*{{NT}} of the slice's
    // {{CS}} x {{BN}} (channel e / {{BN}}, tile e % {{BN}}); xo: its first element in slice 0
    int xo[{{LI}}];
% if masks then
    unsigned rm[{{LI}}], cm[{{LI}}];   // the tile's rows / columns inside the input
% end
#pragma unroll
    for (int i = 0; i < {{LI}}; i++) {
        const int e = tid + i * {{NT}};
% if itail then
        const int k = e < {{CS * BN}} ? e / {{BN}} : 0;   // past the slice's pairs: read channel 0, store nothing
% else
        const int k = e / {{BN}};
% end
        int c = col0 + e % {{BN}};
        if (c >= total) c = 0;   // past the batch: read something valid, store nothing
        const int img = c / {{PT}}, at = c - img * {{PT}};
        const int iy = {{MT}} * (at / {{TW}}) - {{pt}}, ix = {{MT}} * (at % {{TW}}) - {{pl}};
        xo[i] = img * {{C * H * W}} + k * {{H * W}} + iy * {{W}} + ix;
% if masks then
        rm[i] = 0, cm[i] = 0;
#pragma unroll
        for (int p = 0; p < {{N}}; p++) {
            if ((unsigned)(iy + p) < {{H}}u) rm[i] |= 1u << p;
            if ((unsigned)(ix + p) < {{W}}u) cm[i] |= 1u << p;
        }
% end
    }
    // the filters this thread transforms: pair e = tid + i*{{NT}} of the slice's {{CS}} x {{BM}}
    // (channel e / {{BM}}, map e % {{BM}}); the weights arrive transposed, (C*{{KK}}) x {{M}}
    int wo[{{LW}}];
% if wguard then
    bool wok[{{LW}}];   // inside the slice and the layer's maps (else zero)
% end
#pragma unroll
    for (int i = 0; i < {{LW}}; i++) {
        const int e = tid + i * {{NT}};
        const int k = e / {{BM}}, m = e % {{BM}};
        wo[i] = k * {{KK * M}} + m0 + m;
% if wguard then
        wok[i] = {{wok}};
        if (!wok[i]) wo[i] = 0;
% end
    }

    {{acc_t}} acc[{{XG}}][{{TM}}][{{TN}}];
#pragma unroll
    for (int x = 0; x < {{XG}}; x++)
#pragma unroll
        for (int i = 0; i < {{TM}}; i++)
#pragma unroll
            for (int j = 0; j < {{TN}}; j++) acc[x][i][j] = 0.0f;

    // slice s in registers: raw {{N}}x{{N}} input tiles and {{K}}x{{K}} filters
    {{acc_t}} d[{{LI}}][{{NN}}], f[{{LW}}][{{KK}}];
    auto fetch = [&](int s) {
#pragma unroll
        for (int i = 0; i < {{LI}}; i++) {
            const {{in_t}}* const x = in + xo[i] + s * {{CS * H * W}};
% for p = 0, N - 1 do
            {{load(p)}}
% end
        }
#pragma unroll
        for (int i = 0; i < {{LW}}; i++)
#pragma unroll
            for (int r = 0; r < {{KK}}; r++)
% if wguard then
                f[i][r] = wok[i] ? {{w_to_acc("__ldg(w_arg + wo[i] + s * " .. CS * KK * M .. " + r * " .. M .. ")")}} : 0.0f;
% else
                f[i][r] = {{w_to_acc("__ldg(w_arg + wo[i] + s * " .. CS * KK * M .. " + r * " .. M .. ")")}};
% end
    };
    // the registers transformed into shared-memory buffer b: V = BT d B, U = G g G^T;
    // pair e lands at [xi][e] of its {{NN}} x {{XS}} (or x {{XU}}) buffer
    auto stash = [&](int b) {
        {{acc_t}}* const v = vs + b * {{NN * XS}} + tid;
        {{acc_t}}* const u = us + b * {{NN * XU}} + tid;
#pragma unroll
        for (int i = 0; i < {{LI}}; i++) {
% if itail then
            if (tid + i * {{NT}} >= {{CS * BN}}) break;
% end
            {{vtrans}}
        }
#pragma unroll
        for (int i = 0; i < {{LW}}; i++) {
% if wtail then
            if (tid + i * {{NT}} >= {{CS * BM}}) break;
% end
            {{utrans}}
        }
    };
    // acc += this thread's {{XG}} products of the slice in buffer b; its maps and tiles are
    // contiguous, read as float4s where they can be
    auto multiply = [&](int b) {
        const {{acc_t}}* const v = vs + b * {{NN * XS}} + grp * {{XG * XS}} + tx * {{TN}};
        const {{acc_t}}* const u = us + b * {{NN * XU}} + grp * {{XG * XU}} + ty * {{TM}};
#pragma unroll
        for (int x = 0; x < {{XG}}; x++)
#pragma unroll
            for (int k = 0; k < {{CS}}; k++) {
                {{acc_t}} a[{{TM}}], y[{{TN}}];
                {{read("a", "u", TM, "x * " .. XU .. " + k * " .. BM)}}
                {{read("y", "v", TN, "x * " .. XS .. " + k * " .. BN)}}
#pragma unroll
                for (int i = 0; i < {{TM}}; i++)
#pragma unroll
                    for (int j = 0; j < {{TN}}; j++) acc[x][i][j] = fmaf(a[i], y[j], acc[x][i][j]);
            }
    };

    {{loop}}

    // epilogue: the products into ms[xi][map][tile] (over the slices' buffers, all read by now)
    {{acc_t}}* const ms = vs;
#pragma unroll
    for (int x = 0; x < {{XG}}; x++)
#pragma unroll
        for (int i = 0; i < {{TM}}; i++)
#pragma unroll
            for (int j = 0; j < {{TN}}; j++)
                ms[(grp * {{XG}} + x) * {{XM}} + (ty * {{TM}} + i) * {{BN}} + tx * {{TN}} + j] = acc[x][i][j];
    __syncthreads();
    // then pair e = (map e / {{BN}}, tile e % {{BN}}): Y = AT M A, {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, store
#pragma unroll 1
    for (int e = tid; e < {{BM * BN}}; e += {{NT}}) {
        const int c = col0 + e % {{BN}};
        const int m = m0 + e / {{BN}};
        if (c >= total{{mguard and (" || m >= " .. M) or ""}}) continue;
        {{acc_t}} mv[{{NN}}], y[{{MT * MT}}];
#pragma unroll
        for (int xi = 0; xi < {{NN}}; xi++) mv[xi] = ms[xi * {{XM}} + e];
        {{ytrans}}
        const int img = c / {{PT}}, at = c - img * {{PT}};
% if bias then
        const {{acc_t}} bv = {{w_to_acc("__ldg(b_arg + m)")}};
% end
% if pooled then
        {{out_t}}* const o = out + img * {{OS}} + m * {{P}} + {{PO}} * (at / {{TW}}) * {{OW}} + {{PO}} * (at % {{TW}});
% else
        {{out_t}}* const o = out + img * {{OS}} + m * {{P}} + {{MT}} * (at / {{TW}}) * {{CW}} + {{MT}} * (at % {{TW}});
% end
% for _, st in ipairs(stores) do
        {{st}}
% end
    }
}
]=], "conv2d_winograd")

-- The loads of row p of input tile i, a loop over its columns q: plain reads where
-- row p and column q are inside the input for every tile (known from literals: the
-- unrolled loop's tests fold away), else under the tile's mask bits.
local function load_expr(s, W, ty)
  return function(p)
    local tests = {}
    if s.rowtest and (p < s.g.pt or p >= s.ylim) then tests[#tests + 1] = string.format("((rm[i] >> %d) & 1)", p) end
    if s.coltest then
      tests[#tests + 1] = string.format("((q >= %d && q < %d) || ((cm[i] >> q) & 1))", s.g.pl, s.xlim)
    end
    local rd = ty.to_acc(string.format("__ldg(x + %d + q)", p * W))
    local e = #tests == 0 and rd or string.format("%s ? %s : 0.0f", table.concat(tests, " && "), rd)
    return string.format("#pragma unroll\n            for (int q = 0; q < %d; q++) d[i][%d + q] = %s;", s.n, p * s.n, e)
  end
end

-- C statements reading n acc_t values (shared memory) at src + off into
-- dst[0..n-1]: 4-wide vectors (then a 2-wide one, a scalar) where n allows.
local function read(dst, src, n, off)
  local f = { "x", "y", "z", "w" }
  local t, at = {}, 0
  while at < n do
    local w = n - at >= 4 and 4 or n - at >= 2 and 2 or 1
    local nm = string.format("%s_%d", dst, at)
    if w == 1 then
      t[#t + 1] = string.format("%s[%d] = %s[%s + %d];", dst, at, src, off, at)
    else
      local vt = common.vec_t(common.ACC, w)
      t[#t + 1] = string.format("const %s %s = *reinterpret_cast<const %s*>(%s + %s + %d);", vt, nm, vt,
        src, off, at)
      for i = 1, w do t[#t + 1] = string.format("%s[%d] = %s.%s;", dst, at + i - 1, nm, f[i]) end
    end
    at = at + w
  end
  return table.concat(t, " ")
end

-- The statements storing a tile's outputs y[a*m + b] through pointer o: m x m conv
-- outputs, or (m/2)x(m/2) pooled ones; an output past the edge (possible only in
-- the last tile row or column, known from literals) under a test.
local function store_lines(s, p, act, bias, ty)
  local lines, b = {}, bias and " + bv" or ""
  local function guard(a, bcol, side, rows, cols)
    local tests = {}
    local rrem, crem = rows % side, cols % side
    if rrem ~= 0 and a >= rrem then tests[#tests + 1] = string.format("%d * (at / %d) + %d < %d", side, s.TW, a, rows) end
    if crem ~= 0 and bcol >= crem then tests[#tests + 1] = string.format("%d * (at %% %d) + %d < %d", side, s.TW, bcol, cols) end
    return #tests > 0 and ("if (" .. table.concat(tests, " && ") .. ") ") or ""
  end
  local mt = p.mt
  if s.pooled then
    for a = 0, s.PO - 1 do
      for c = 0, s.PO - 1 do
        local y = {}
        for u = 0, 1 do for w = 0, 1 do y[#y + 1] = string.format("y[%d]", (2 * a + u) * mt + 2 * c + w) end end
        local v
        if s.g.kind == "avg" then
          local parts = {}
          for i = 1, 4 do parts[i] = common.act(act, y[i] .. b) end
          v = "(" .. table.concat(parts, " + ") .. ") * 0.25f"
        else
          v = common.act(act, string.format("fmaxf(fmaxf(%s, %s), fmaxf(%s, %s))%s", y[1], y[2], y[3], y[4], b))
        end
        lines[#lines + 1] = guard(a, c, s.PO, s.OH, s.OW) .. string.format("o[%d] = %s;", a * s.OW + c, ty.from_acc(v))
      end
    end
  else
    for a = 0, mt - 1 do
      for c = 0, mt - 1 do
        lines[#lines + 1] = guard(a, c, mt, s.CH, s.CW) ..
          string.format("o[%d] = %s;", a * s.CW + c, ty.from_acc(common.act(act, string.format("y[%d]%s", a * mt + c, b))))
      end
    end
  end
  return lines
end

function T.kernel(l, p)
  local s = shape(l, p)
  local g = s.g
  local f = wino.matrices(p.mt, l.K)
  local act = s.fused and l.act or "none"
  local name = string.format("conv2d_winograd_c%dm%dk%d_h%dw%d%s_%s%s%s_f%d_m%dn%dc%d_t%dx%d_x%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, s.pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.mt, p.bm, p.bn, p.cs, p.tm, p.tn, p.xg) .. (p.occ > 1 and string.format("_o%d", p.occ) or "")
  -- the output written into a concat's slice (common.out_slice): its image stride
  local slice = common.out_slice(l, s.fused)
  if slice then name = name .. slice.tag end
  local ty = common.types(l)
  local head, args = common.kernel_head(name, s.threads, common.std_args({ w_name = "w_arg", b_name = "b_arg",
    types = ty }), nil, p.occ)
  local wt = {}
  if l.M % p.bm ~= 0 then wt[#wt + 1] = string.format("m0 + m < %d", l.M) end
  if s.LW * s.threads ~= p.cs * p.bm then wt[#wt + 1] = string.format("e < %d", p.cs * p.bm) end
  local n = s.n
  local vtrans = wino.sandwich(f.BT, f.BT, function(a, c) return string.format("d[i][%d + %s]", a * n, c) end,
    function(j, k, e) return string.format("v[(%s * %d + %d) * %d + i * %d] = %s;", j, n, k, s.XS, s.threads, e) end, "t", ty.acc_t)
  local utrans = wino.sandwich(f.G, f.G, function(a, c) return string.format("f[i][%d + %s]", a * l.K, c) end,
    function(j, k, e) return string.format("u[(%s * %d + %d) * %d + i * %d] = %s;", j, n, k, s.XU, s.threads, e) end, "t", ty.acc_t)
  local ytrans = wino.sandwich(f.AT, f.AT, function(a, c) return string.format("mv[%d + %s]", a * n, c) end,
    function(j, k, e) return string.format("y[%s * %d + %d] = %s;", j, p.mt, k, e) end, "t", ty.acc_t)
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, KK = l.K * l.K, CH = s.CH, CW = s.CW, TH = s.TH, TW = s.TW,
    PT = s.PT, P = s.P, OW = s.OW, PO = s.PO, MT = p.mt, N = n, NN = s.NN,
    BM = p.bm, BN = p.bn, CS = p.cs, TM = p.tm, TN = p.tn, NT = s.threads, TT = s.TT, LI = s.LI, LW = s.LW,
    XS = s.XS, XU = s.XU, XM = s.XM,
    S = s.slices, smem = s.smem, pooled = s.pooled, bias = l.bias,
    pt = g.pt, pl = g.pl, masks = s.rowtest or s.coltest, load = load_expr(s, l.W, ty),
    mguard = l.M % p.bm ~= 0,
    wguard = #wt > 0, wok = table.concat(wt, " && "),
    itail = s.LI * s.threads ~= p.cs * p.bn,
    wtail = s.LW * s.threads ~= p.cs * p.bm,
    actname = act, read = read, XG = p.xg,
    vtrans = vtrans, utrans = utrans, ytrans = ytrans,
    stores = store_lines(s, p, act, l.bias, ty), loop = common.prefetch_loop(s.slices, true),
    pool_doc = not s.pooled and "" or g.max2 and "2x2 max, " or "2x2 average, ",
    OS = slice and slice.stride or l.M * s.P,
  }
  local k = common.tiled_conv_record(l, p, s, act, name, args, source(common.typed(l, v)), s.PT)
  k.out_slice = slice ~= nil
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  return k
end

return T
