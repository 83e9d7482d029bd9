-- conv2d_winograd.lua — Winograd F(2x2, 3x3) convolution, every layer constant a literal.
--
-- Serves 3x3 kernels with stride 1 (any padding); `check` refuses the others.
-- The conv output is cut into tiles of 2x2 outputs, each computed from a 4x4
-- input tile d of every channel: V = B^T d B (the input transform), U = G g G^T
-- (the 3x3 filter g of a map and channel, transformed to 4x4), then for each of
-- the 16 positions xi of the 4x4 transformed domain a matrix product
-- M[xi][m][t] = sum_c U[xi][m][c] * V[xi][c][t] (maps x tiles), and the inverse
-- transform Y = A^T M A gives the tile's 2x2 outputs: 16 multiply-adds per
-- channel for four outputs instead of 36.
--
-- One kernel per layer: a block owns BN tiles (columns: image, tile row, tile
-- column) x BM maps in (BM/TM)*(BN/TN) thread tiles of TM maps x TN tiles (their
-- maps and tiles contiguous: one float2/float4 shared-memory read each). A
-- thread tile's 16 products are split over 16/XG threads of one warp, 8 lanes
-- apart, each XG products (XG*TM*TN accumulators in registers); in the epilogue
-- each applies the inverse transform to the rows of m it holds and the partial
-- outputs are summed by xor shuffles (none when XG = 16). The reduction over C
-- runs in slices of CS channels, a loop that is not unrolled (the source does
-- not grow with C). Per slice every thread reads the raw 4x4 input tiles and
-- 3x3 filters it transforms (the filters are transformed in the kernel, from
-- weights the runtime uploads transposed to (C*9) x M so that lanes read along
-- m), into registers while the previous slice is multiplied, then transforms and
-- stores them into the other of two shared-memory buffers: vs[16][CS][BN],
-- us[16][CS][BM]. The same code runs on every architecture (no cp.async: the
-- transform needs the raw values in registers anyway).
-- `occ` is __launch_bounds__'s blocks per SM, as in conv2d_igemm.
-- Epilogue: the inverse transform, then with a fused 2x2 pool (max or average,
-- stride 2) the tile is the pooling window (tiles are laid on even rows and
-- columns, so a pooled layer has exactly one tile per pooled output); else bias,
-- activation and the 2x2 store, the last row or column dropped at an odd edge.
-- Other pools leave the kernel unfused (conv + bias, then the pool template).
-- Padding: each input tile keeps two 4-bit masks, its rows and columns inside
-- the input; an element is read where both bits are set, else 0. Rows and
-- columns that cannot fall outside, known from literals, skip the test.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "Winograd F(2x2,3x3); a block computes 16 maps x tiles products through shared-memory slices"

-- Largest unrolled body: the FMAs of one slice of one thread (XG*CS*TM*TN).
local BODY_BUDGET = 4096
-- Most registers the accumulators, prefetched tiles and filters may want (the
-- rest is addressing and the transforms' temporaries, about 48 more: measured 104-112
-- more on sm_90 for 2x2 to 4x2 thread tiles), and never more than __launch_bounds__ leaves.
local REG_BUDGET = 200
local REG_ADDRESSING = 48


-- Channels a slice may hold: the divisors of C up to 16, largest first (a
-- search that refuses the default tries the deepest slice that fits next).
local function slice_channels(l)
  local d, out = common.divisors(l.C, 16), {}
  for i = #d, 1, -1 do out[#out + 1] = d[i] end
  return out
end

T.params = {
  { name = "bm", doc = "output maps per block tile",
    legal = function(l) return common.map_tiles(l, 64) end,
    default = function(l)
      if l.M <= 32 then return l.M end
      return 32
    end },
  { name = "bn", doc = "2x2 output tiles per block tile",
    legal = function(_) return { 32, 64, 16, 128 } end,
    default = function(_) return 32 end },
  { name = "cs", doc = "input channels per slice of the reduction (a divisor of C, at most 16)",
    legal = slice_channels,
    default = function(l)
      for _, v in ipairs(slice_channels(l)) do if v <= 8 then return v end end
      return 1
    end },
  { name = "tm", doc = "maps per thread",
    legal = function(_) return { 4, 2, 1 } end,
    default = function(_) return 4 end },
  { name = "tn", doc = "tiles per thread",
    legal = function(_) return { 4, 2, 1 } end,
    default = function(_) return 4 end },
  { name = "xg", doc = "of the 16 products, those one thread computes (16/xg threads of one warp share a tile, their partial outputs summed by shuffles)",
    legal = function(_) return { 4, 8, 16 } end,
    default = function(_) return 4 end },
  common.occ_param({ 1, 2 }),
}

-- The numbers every part of the template derives from the parameters.
local function shape(l, p)
  local s = {}
  local g = common.conv_geom(l)
  s.g = g
  s.pooled = common.fused_pool2(g)
  s.fused = g.kind == "none" or s.pooled
  s.CH, s.CW = g.CH, g.CW
  if s.pooled then
    s.OH, s.OW = g.OH, g.OW
    s.TH, s.TW = g.OH, g.OW           -- one tile per pooling window
  else
    s.OH, s.OW = s.CH, s.CW
    s.TH, s.TW = common.ceil_div(s.CH, 2), common.ceil_div(s.CW, 2)
  end
  s.PT = s.TH * s.TW                  -- tiles per image
  s.P = s.OH * s.OW                   -- stored outputs per image and map
  s.G = 16 // p.xg                    -- threads sharing a thread tile, one per group of xg products
  s.TT = (p.bm // math.max(p.tm, 1)) * (p.bn // math.max(p.tn, 1))   -- thread tiles of a block
  s.threads = s.G * s.TT
  local nt = math.max(s.threads, 1)
  s.LI = common.ceil_div(p.cs * p.bn, nt)   -- input tiles each thread transforms a slice
  s.LW = common.ceil_div(p.cs * p.bm, nt)   -- filters each thread transforms a slice
  s.slices = l.C // p.cs
  s.smem = 4 * 2 * 16 * p.cs * (p.bn + p.bm)
  -- input rows p in [pt, ylim) and columns q in [pl, xlim) of every tile are inside the input
  s.ylim = l.H - 2 * (s.TH - 1) + g.pt
  s.xlim = l.W - 2 * (s.TW - 1) + g.pl
  s.rowtest = g.pt > 0 or s.ylim < 4
  s.coltest = g.pl > 0 or s.xlim < 4
  -- registers: accumulators, fragments, the prefetched raw tiles and filters, their offsets and masks
  s.regs = p.xg * p.tm * p.tn + p.tm + p.tn + s.LI * (16 + 1) + s.LW * (9 + 1)
    + ((s.rowtest or s.coltest) and 2 * s.LI or 0)
  return s
end

function T.check(l, p)
  if l.K ~= 3 then
    return string.format("Winograd F(2x2,3x3) serves 3x3 kernels only; this layer's is %dx%d", l.K, l.K)
  end
  local g = common.conv_geom(l)
  if g.S ~= 1 then
    return string.format("Winograd F(2x2,3x3) serves stride 1 only; this layer's is %d", g.S)
  end
  if g.CH < 1 or g.CW < 1 then return "the conv output is empty" end
  local why, blame = common.check_thread_tile(l, p)
  if why then return why, blame end
  local s = shape(l, p)
  if s.G > 1 and s.TT % 8 ~= 0 then
    return string.format("(bm/tm)*(bn/tn) = %d thread tiles; with xg=%d they must be a multiple of 8 " ..
      "(the %d threads of a tile lie 8 lanes apart in one warp)", s.TT, p.xg, s.G), "xg"
  end
  if s.threads < 32 or s.threads > common.MAX_THREADS or s.threads % 32 ~= 0 then
    return string.format("(16/xg)*(bm/tm)*(bn/tn) = %d threads; a block needs a multiple of 32 from 32 to %d",
      s.threads, common.MAX_THREADS), "bn"
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
  local why, blame = common.check_occ(l, p.occ, s.threads, s.regs + REG_ADDRESSING, s.smem,
    "the accumulators, prefetched tiles, filters and addressing")
  if why then return why, blame end
  if s.smem > common.max_shared(l) then
    return string.format("two slices of %d channels need %d bytes of shared memory; at most %d fit",
      p.cs, s.smem, common.max_shared(l)), "cs"
  end
  return nil
end

-- The cost model (common.cost), in conv2d_igemm's terms (the registers a thread
-- occupies with the addressing margin counted): the multiply-adds of the
-- 16 products of the tiles the busiest SM computes (16 per channel for a tile of
-- four outputs, where igemm does 36), plus the transforms (about 32 adds an input
-- tile and 28 a filter per channel and block, 24 an output), at the rate the
-- shared-memory reads allow (tm + tn reads feed tm*tn FMAs; four FMAs a read keep
-- the lanes busy), the global loads allow (16 words a tile and 9 a filter per
-- channel feed 16*bm*bn FMAs; twelve a word keep up with L2) and the resident
-- warps allow; or, when longer, the slices' round trips to memory, one in flight.
-- `occ` as in conv2d_igemm (common.cost.spread, common.cost.spills); since the
-- check refuses an occ whose cap is below the estimate, it changes nothing here yet.
function T.cost(l, p)
  local s = shape(l, p)
  local blocks = common.ceil_div(common.cost.images(l) * s.PT, p.bn) * common.ceil_div(l.M, p.bm)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs + REG_ADDRESSING - 16, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local reuse = math.min(1, p.tm * p.tn / (p.tm + p.tn) / 4)
    * math.min(1, 16 * p.bm * p.bn / (16 * p.bn + 9 * p.bm) / 12)
  local work = 16 * p.bm * p.bn * l.C + l.C * (32 * p.bn + 28 * p.bm) + 24 * p.bm * p.bn
  local compute = seq * work / (common.cost.FMA_PER_CLOCK * reuse * common.cost.busy(conc, s.threads, 2))
  local memory = common.ceil_div(seq, conc) * s.slices * common.cost.LATENCY
  return math.max(compute, memory) * common.cost.spills(squeezed)
end

local source = engine.compile([=[
// Winograd F(2x2,3x3): {{M}} maps of {{CH}}x{{CW}} from {{C}} channels of {{H}}x{{W}}; {{PT}} tiles of 2x2
// outputs an image ({{TH}}x{{TW}}{{pooled and ", one per pooling window" or ""}}). Products: 16 of {{M}} maps x (N*{{PT}}) tiles,
// reduced over C = {{C}} in {{S}} slices of {{CS}} channels; block tile {{BM}}x{{BN}}, thread tile {{TM}}x{{TN}} of {{XG}} products
// (products g*{{XG}} .. +{{XG - 1}} in lanes of group g = (tid / 8) % {{G}}), {{NT}} threads.
// Shared memory (dynamic, {{smem}} B): vs[2][16][{{CS}}][{{BN}}] transformed input, us[2][16][{{CS}}][{{BM}}] transformed filters.

{{head}}
{
    extern __shared__ float4 smem4[];
    float* const vs = reinterpret_cast<float*>(smem4);
    float* const us = vs + {{2 * 16 * CS * BN}};
    const int tid = threadIdx.x;
% if G > 1 then
    const int grp = (tid / 8) % {{G}};                  // products grp*{{XG}} .. +{{XG - 1}}
    const int tt = tid % 8 + 8 * (tid / {{8 * G}});   // the thread tile
% else
    const int grp = 0, tt = tid;                      // every product, one thread a tile
% end
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
        const int iy = 2 * (at / {{TW}}) - {{pt}}, ix = 2 * (at % {{TW}}) - {{pl}};
        xo[i] = img * {{C * H * W}} + k * {{H * W}} + iy * {{W}} + ix;
% if masks then
        rm[i] = 0, cm[i] = 0;
#pragma unroll
        for (int p = 0; p < 4; p++) {
            if ((unsigned)(iy + p) < {{H}}u) rm[i] |= 1u << p;
            if ((unsigned)(ix + p) < {{W}}u) cm[i] |= 1u << p;
        }
% end
    }
    // the filters this thread transforms: pair e = tid + i*{{NT}} of the slice's {{CS}} x {{BM}}
    // (channel e / {{BM}}, map e % {{BM}}); the weights arrive transposed, (C*9) x {{M}}
    int wo[{{LW}}];
% if wguard then
    bool wok[{{LW}}];   // inside the slice and the layer's maps (else zero)
% end
#pragma unroll
    for (int i = 0; i < {{LW}}; i++) {
        const int e = tid + i * {{NT}};
        const int k = e / {{BM}}, m = e % {{BM}};
        wo[i] = k * {{9 * M}} + m0 + m;
% if wguard then
        wok[i] = {{wok}};
        if (!wok[i]) wo[i] = 0;
% end
    }

    float acc[{{XG}}][{{TM}}][{{TN}}];
#pragma unroll
    for (int x = 0; x < {{XG}}; x++)
#pragma unroll
        for (int i = 0; i < {{TM}}; i++)
#pragma unroll
            for (int j = 0; j < {{TN}}; j++) acc[x][i][j] = 0.0f;

    // slice s in registers: raw 4x4 input tiles and 3x3 filters
    float d[{{LI}}][16], f[{{LW}}][9];
    auto fetch = [&](int s) {
#pragma unroll
        for (int i = 0; i < {{LI}}; i++) {
            const float* const x = in + xo[i] + s * {{CS * H * W}};
% for p = 0, 3 do
%   for q = 0, 3 do
            d[i][{{4 * p + q}}] = {{load(p, q)}};
%   end
% end
        }
#pragma unroll
        for (int i = 0; i < {{LW}}; i++)
#pragma unroll
            for (int r = 0; r < 9; r++)
% if wguard then
                f[i][r] = wok[i] ? __ldg(w_arg + wo[i] + s * {{CS * 9 * M}} + r * {{M}}) : 0.0f;
% else
                f[i][r] = __ldg(w_arg + wo[i] + s * {{CS * 9 * M}} + r * {{M}});
% end
    };
    // the registers transformed into shared-memory buffer b: V = B^T d B, U = G g G^T;
    // pair e lands at [xi][e] of its 16 x {{CS}} x {{BN}} (or x {{BM}}) buffer
    auto stash = [&](int b) {
        float* const v = vs + b * {{16 * CS * BN}} + tid;
        float* const u = us + b * {{16 * CS * BM}} + tid;
#pragma unroll
        for (int i = 0; i < {{LI}}; i++) {
% if itail then
            if (tid + i * {{NT}} >= {{CS * BN}}) break;
% end
            float t[16];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                t[j] = d[i][j] - d[i][8 + j];
                t[4 + j] = d[i][4 + j] + d[i][8 + j];
                t[8 + j] = d[i][8 + j] - d[i][4 + j];
                t[12 + j] = d[i][4 + j] - d[i][12 + j];
            }
#pragma unroll
            for (int r = 0; r < 4; r++) {
                v[(4 * r) * {{CS * BN}} + i * {{NT}}] = t[4 * r] - t[4 * r + 2];
                v[(4 * r + 1) * {{CS * BN}} + i * {{NT}}] = t[4 * r + 1] + t[4 * r + 2];
                v[(4 * r + 2) * {{CS * BN}} + i * {{NT}}] = t[4 * r + 2] - t[4 * r + 1];
                v[(4 * r + 3) * {{CS * BN}} + i * {{NT}}] = t[4 * r + 1] - t[4 * r + 3];
            }
        }
#pragma unroll
        for (int i = 0; i < {{LW}}; i++) {
% if wtail then
            if (tid + i * {{NT}} >= {{CS * BM}}) break;
% end
            float t[12];
#pragma unroll
            for (int j = 0; j < 3; j++) {
                t[j] = f[i][j];
                t[3 + j] = 0.5f * (f[i][j] + f[i][3 + j] + f[i][6 + j]);
                t[6 + j] = 0.5f * (f[i][j] - f[i][3 + j] + f[i][6 + j]);
                t[9 + j] = f[i][6 + j];
            }
#pragma unroll
            for (int r = 0; r < 4; r++) {
                u[(4 * r) * {{CS * BM}} + i * {{NT}}] = t[3 * r];
                u[(4 * r + 1) * {{CS * BM}} + i * {{NT}}] = 0.5f * (t[3 * r] + t[3 * r + 1] + t[3 * r + 2]);
                u[(4 * r + 2) * {{CS * BM}} + i * {{NT}}] = 0.5f * (t[3 * r] - t[3 * r + 1] + t[3 * r + 2]);
                u[(4 * r + 3) * {{CS * BM}} + i * {{NT}}] = t[3 * r + 2];
            }
        }
    };
    // acc += this thread's {{XG}} products of the slice in buffer b; its maps and tiles are
    // contiguous, read as one {{vec(TM)}} and one {{vec(TN)}}
    auto multiply = [&](int b) {
        const float* const v = vs + b * {{16 * CS * BN}} + grp * {{XG * CS * BN}} + tx * {{TN}};
        const float* const u = us + b * {{16 * CS * BM}} + grp * {{XG * CS * BM}} + ty * {{TM}};
#pragma unroll
        for (int x = 0; x < {{XG}}; x++)
#pragma unroll
            for (int k = 0; k < {{CS}}; k++) {
                float a[{{TM}}], y[{{TN}}];
                {{read("a", "u", TM, "(x * " .. CS .. " + k) * " .. BM)}}
                {{read("y", "v", TN, "(x * " .. CS .. " + k) * " .. BN)}}
#pragma unroll
                for (int i = 0; i < {{TM}}; i++)
#pragma unroll
                    for (int j = 0; j < {{TN}}; j++) acc[x][i][j] = fmaf(a[i], y[j], acc[x][i][j]);
            }
    };

    // two buffers: the next slice is read into registers during the products
    fetch(0);
    stash(0);
    __syncthreads();
#pragma unroll 1
    for (int s = 0; s < {{S}}; s++) {
        if (s + 1 < {{S}}) fetch(s + 1);   // global loads in flight during the products
        multiply(s & 1);
        if (s + 1 < {{S}}) stash((s & 1) ^ 1);
        __syncthreads();
    }

    // epilogue: Y = A^T M A, {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, store. This thread holds
    // rows {{XG // 4}}*grp .. of the 4x4 product m: its part of Y[a][b] (y[2a+b]) is
    // sum over its rows r of At[a][r] * (m[r] A)[b], At = (1 1 1 0; 0 1 -1 -1)
#pragma unroll
    for (int j = 0; j < {{TN}}; j++) {
        const int c = col0 + tx * {{TN}} + j;
        const int img = c / {{PT}}, at = c - img * {{PT}};
% if not pooled then
        const int oy = 2 * (at / {{TW}}), ox = 2 * (at % {{TW}});
% end
#pragma unroll
        for (int i = 0; i < {{TM}}; i++) {
            const int m = m0 + ty * {{TM}} + i;
            float y[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int h = 0; h < {{XG // 4}}; h++) {
                const int r = {{XG // 4}} * grp + h;
                const float s0 = acc[4 * h][i][j] + acc[4 * h + 1][i][j] + acc[4 * h + 2][i][j];
                const float s1 = acc[4 * h + 1][i][j] - acc[4 * h + 2][i][j] - acc[4 * h + 3][i][j];
                const float w0 = r < 3 ? 1.0f : 0.0f, w1 = r == 0 ? 0.0f : r == 1 ? 1.0f : -1.0f;
                y[0] += w0 * s0, y[1] += w0 * s1, y[2] += w1 * s0, y[3] += w1 * s1;
            }
% for _, off in ipairs(shuffles) do
            // the rows of the lanes {{off}} apart (every lane takes part: no exit before)
#pragma unroll
            for (int a = 0; a < 4; a++) y[a] += __shfl_xor_sync(0xffffffffu, y[a], {{off}});
% end
            if (grp != 0 || c >= total{{mguard and (" || m >= " .. M) or ""}}) continue;
% local b = bias and " + bv" or ""
% if bias then
            const float bv = __ldg(b_arg + m);
% end
% if pooled and pool_kind == "avg" then
            out[img * {{M * P}} + m * {{P}} + at] = ({{act("y[0]" .. b)}} + {{act("y[1]" .. b)}} +
                {{act("y[2]" .. b)}} + {{act("y[3]" .. b)}}) * 0.25f;
% elseif pooled then
            const float v = fmaxf(fmaxf(y[0], y[1]), fmaxf(y[2], y[3])){{b}};
            out[img * {{M * P}} + m * {{P}} + at] = {{act("v")}};
% else
            float* const o = out + img * {{M * P}} + m * {{P}} + oy * {{CW}} + ox;
            o[0] = {{act("y[0]" .. b)}};
%   if CW % 2 == 1 then
            if (ox + 1 < {{CW}}) o[1] = {{act("y[1]" .. b)}};
%   else
            o[1] = {{act("y[1]" .. b)}};
%   end
%   if CH % 2 == 1 then
            if (oy + 1 < {{CH}}) {
%     if CW % 2 == 1 then
                o[{{CW}}] = {{act("y[2]" .. b)}};
                if (ox + 1 < {{CW}}) o[{{CW + 1}}] = {{act("y[3]" .. b)}};
%     else
                o[{{CW}}] = {{act("y[2]" .. b)}};
                o[{{CW + 1}}] = {{act("y[3]" .. b)}};
%     end
            }
%   else
            o[{{CW}}] = {{act("y[2]" .. b)}};
%     if CW % 2 == 1 then
            if (ox + 1 < {{CW}}) o[{{CW + 1}}] = {{act("y[3]" .. b)}};
%     else
            o[{{CW + 1}}] = {{act("y[3]" .. b)}};
%     end
%   end
% end
        }
    }
}
]=], "conv2d_winograd")

-- The load of element (p, q) of input tile i: a plain read where row p and column q
-- are inside the input for every tile (known from literals), else under its mask bits.
local function load_expr(s, W)
  return function(p, q)
    local tests = {}
    if s.rowtest and (p < s.g.pt or p >= s.ylim) then tests[#tests + 1] = string.format("((rm[i] >> %d) & 1)", p) end
    if s.coltest and (q < s.g.pl or q >= s.xlim) then tests[#tests + 1] = string.format("((cm[i] >> %d) & 1)", q) end
    local rd = string.format("__ldg(x + %d)", p * W + q)
    if #tests == 0 then return rd end
    return string.format("%s ? %s : 0.0f", table.concat(tests, " && "), rd)
  end
end

-- The float vector type of n floats (1, 2 or 4).
local function vec(n) return n == 1 and "float" or ("float" .. n) end

-- C statements reading n floats at src + off into dst[0..n-1], as one vector load.
local function read(dst, src, n, off)
  if n == 1 then return string.format("%s[0] = %s[%s];", dst, src, off) end
  local f = { "x", "y", "z", "w" }
  local t = { string.format("const %s %s_ = *reinterpret_cast<const %s*>(%s + %s);", vec(n), dst, vec(n), src, off) }
  for i = 1, n do t[#t + 1] = string.format("%s[%d] = %s_.%s;", dst, i - 1, dst, f[i]) end
  return table.concat(t, " ")
end

function T.kernel(l, p)
  local s = shape(l, p)
  local g = s.g
  local act = s.fused and l.act or "none"
  local name = string.format("conv2d_winograd_c%dm%dk3_h%dw%d%s_%s%s%s_m%dn%dc%d_t%dx%d_x%d",
    l.C, l.M, l.H, l.W, g.tag, act, s.pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.bm, p.bn, p.cs, p.tm, p.tn, p.xg) .. (p.occ > 1 and string.format("_o%d", p.occ) or "")
  local shuffles = {}
  for off = 8, 8 * s.G // 2, 8 do if off & (off - 1) == 0 then shuffles[#shuffles + 1] = off end end
  local head, args = common.kernel_head(name, s.threads, common.std_args({ w_name = "w_arg", b_name = "b_arg" }),
    nil, p.occ)
  local wt = {}
  if l.M % p.bm ~= 0 then wt[#wt + 1] = string.format("m0 + m < %d", l.M) end
  if s.LW * s.threads ~= p.cs * p.bm then wt[#wt + 1] = string.format("e < %d", p.cs * p.bm) end
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, CH = s.CH, CW = s.CW, TH = s.TH, TW = s.TW, PT = s.PT, P = s.P,
    BM = p.bm, BN = p.bn, CS = p.cs, TM = p.tm, TN = p.tn, NT = s.threads, LI = s.LI, LW = s.LW,
    S = s.slices, smem = s.smem, pooled = s.pooled, bias = l.bias,
    pt = g.pt, pl = g.pl, masks = s.rowtest or s.coltest, load = load_expr(s, l.W),
    mguard = l.M % p.bm ~= 0,
    wguard = #wt > 0, wok = table.concat(wt, " && "),
    itail = s.LI * s.threads ~= p.cs * p.bn,
    wtail = s.LW * s.threads ~= p.cs * p.bm,
    actname = act,
    act = function(e) return common.act(act, e) end,
    vec = vec, read = read, XG = p.xg, G = s.G, shuffles = shuffles,
    pool_kind = g.kind,
    pool_doc = not s.pooled and "" or g.max2 and "2x2 max, " or "2x2 average, ",
  }
  return {
    name = name,
    args = args,
    source = source(v),
    grid = { common.batch_dim(s.PT, p.bn), common.ceil_div(l.M, p.bm), 1 },
    block = { s.threads, 1, 1 },
    shared = s.smem,
    weights = "arg:transposed",
    bias = l.bias and "arg" or "none",
    out_elems = l.M * s.P,
    shape = common.conv_shape(l, g, act, s.pooled, l.M, s.OH, s.OW),
    fused = s.fused,
  }
end

return T
