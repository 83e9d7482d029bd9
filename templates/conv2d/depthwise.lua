-- conv2d_depthwise.lua — depthwise convolution (`strategy: depthwise`): groups =
-- C = M, each output map the K x K correlation of its own input channel.
--
-- Memory-bound: K*K multiply-adds per output against one input value read per
-- output (stride 1), so a thread computes a `rows` x `cols` tile of adjacent
-- outputs of one channel of one image and reuses each input value it loads for
-- every output of the tile that covers it. The tile's input window,
-- ((TR-1)*stride + K) rows of ((TS-1)*stride + K) columns, passes through
-- registers one row at a time: the row's values are loaded, then multiplied
-- into every tile row whose kernel row p it is, all indices literals. The
-- channel's K*K weights and bias sit in registers (one read each; the threads
-- of a warp mostly share a channel, so the reads are broadcasts). Threads are
-- ordered tile column fastest, then tile row, channel and image: a warp's loads
-- fall on neighbouring columns of the same rows.
-- Padding: the window's rows and columns that may leave the input are known
-- from the layer alone; only their loads get a bound check (a comparison of the
-- tile's origin with a literal) and read 0 outside.
-- Epilogue (fuse=1): + bias, activation, store; a max or average pool of N x N
-- windows with stride N is fused (the tile is then N*rows x N*cols conv outputs:
-- max before the monotone activation, the average of activated values). Other
-- pools (overlapping windows, the global average) leave the kernel unfused: the
-- conv + bias, then the pool template applies the activation and pools.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "depthwise convolution (groups = C = M); one thread per rows x cols output tile of one channel"
T.out_slice = true   -- common.out_slice: the output written into a concat's slice

-- The layer's geometry, and whether this kernel applies the activation and pool.
local function geom(l, fuse)
  local g = common.conv_geom(l)
  local fused = fuse ~= 0 and (g.kind == "none" or g.tiled_pool)
  return g, fused, fused and g.kind ~= "none"
end

-- The kernel's output map (pooled when it pools): height, width, pool side F.
local function out_dims(l, fuse)
  local g, _, pooled = geom(l, fuse)
  if pooled then return g.OH, g.OW, g.PK end
  return g.CH, g.CW, 1
end

-- The largest divisor of n up to max.
local function largest_divisor(n, max)
  local d = common.divisors(n, max)
  return d[#d]
end

T.params = {
  { name = "block", doc = "threads per block",
    legal = function(_) return common.multiples(32, 32, 1024) end,
    default = function(_) return 128 end },
  { name = "rows", doc = "outputs (pooled outputs when pooling) per thread down a column; divides the column",
    legal = function(l) return common.divisors((out_dims(l, 1)), 8) end,
    default = function(l) return largest_divisor((out_dims(l, 1)), 2) end },
  { name = "cols", doc = "outputs (pooled outputs when pooling) per thread along a row; divides the row",
    legal = function(l) local _, OW = out_dims(l, 1); return common.divisors(OW, 8) end,
    default = function(l) local _, OW = out_dims(l, 1); return largest_divisor(OW, 4) end },
  { name = "fuse", tune = false, doc = "1: bias+activation+pool in this kernel; 0: bias only, then separate kernels",
    legal = function(_) return { 0, 1 } end,
    default = function(_) return 1 end },
}

-- The tile a thread computes: TR x TS conv outputs from a PR x PC input window.
local function tile(l, p)
  local g = common.conv_geom(l)
  local OH, OW, F = out_dims(l, p.fuse)
  local TR, TS = F * p.rows, F * p.cols
  return { g = g, OH = OH, OW = OW, F = F, TR = TR, TS = TS,
           PR = (TR - 1) * g.S + l.K, PC = (TS - 1) * g.S + l.K }
end

-- Most multiply-adds in a thread's unrolled body (compile time), accumulators
-- per thread and window row length in registers.
T.BODY_BUDGET = 2048
T.MAX_ACC = 64
T.MAX_WINDOW = 64

function T.check(l, p)
  local G = l.groups or 1
  if G ~= l.C or l.M ~= l.C then
    return string.format("conv2d_depthwise serves depthwise layers (groups = C = M); this one has C = %d, " ..
      "M = %d, groups = %d (use strategy direct for other grouped layers)", l.C, l.M, G), nil
  end
  local t = tile(l, p)
  if t.OH % p.rows ~= 0 then
    return string.format("rows=%d must divide the output column of %d", p.rows, t.OH), "rows"
  end
  if t.OW % p.cols ~= 0 then
    return string.format("cols=%d must divide the output row of %d", p.cols, t.OW), "cols"
  end
  if t.TR * t.TS > T.MAX_ACC then
    return string.format("rows=%d with cols=%d needs %d accumulators per thread; at most %d", p.rows, p.cols,
      t.TR * t.TS, T.MAX_ACC), "cols"
  end
  if t.PC > T.MAX_WINDOW then
    return string.format("the window row of %d inputs (cols=%d) is more than %d registers", t.PC, p.cols,
      T.MAX_WINDOW), "cols"
  end
  local body = t.TR * t.TS * l.K * l.K
  if body > T.BODY_BUDGET then
    return string.format("the unrolled body holds %d multiply-adds (outputs*K*K); the budget is %d", body,
      T.BODY_BUDGET), "rows"
  end
  return nil
end

-- The cost model (common.cost): a thread issues its FMAs, its window's loads
-- (with their bound checks where padded), its K*K weight loads and a store per
-- output; one chain of work per accumulator row.
function T.cost(l, p)
  local t = tile(l, p)
  local threads = common.cost.images(l) * l.C * (t.OH // p.rows) * (t.OW // p.cols)
  local loads = t.PR * t.PC * (t.g.padded and 2 or 1)
  local instr = t.TR * t.TS * l.K * l.K + loads + l.K * l.K + p.rows * p.cols + 24
  local regs = t.TR * t.TS + t.PC + l.K * l.K
  return common.cost.issue(l, common.ceil_div(threads, p.block), p.block, regs, 0, instr, t.TR)
end

local source = engine.compile([[
{{head}}
{
    // thread -> (image, channel, tile row, tile column): {{TH}}x{{TW}} tiles of {{rows}}x{{cols}} outputs a channel
    const int idx = blockIdx.x * {{block}} + threadIdx.x;
    if (idx >= n * {{C * TH * TW}}) return;
    const int img = idx / {{C * TH * TW}};
    const int r0 = idx - img * {{C * TH * TW}};
    const int c = r0 / {{TH * TW}};
    const int t = r0 - c * {{TH * TW}};
    const int ty = t / {{TW}};
    const int tx = t - ty * {{TW}};
    // the window's first input row and column (negative in the padding)
    const int iy0 = ty * {{TR * S}} - {{pt}}, ix0 = tx * {{TS * S}} - {{pl}};
    const {{in_t}}* __restrict__ x = in + (img * {{C}} + c) * {{H * W}};
    (void)b;
    // channel c's {{K}}x{{K}} weights
    {{acc_t}} k[{{K * K}}];
#pragma unroll
    for (int i = 0; i < {{K * K}}; i++) k[i] = {{w_to_acc("__ldg(w + c * " .. K * K .. " + i)")}};
    {{acc_t}} a[{{TR}}][{{TS}}] = {};
    {{acc_t}} v[{{PC}}];
% for pr = 0, PR - 1 do
    // window row {{pr}}
%   for q = 0, PC - 1 do
%     local cond = conds(pr, q)
%     local at = string.format("x[(iy0 + %d) * %d + ix0 + %d]", pr, W, q)
%     if cond then
    v[{{q}}] = {{cond}} ? {{to_acc(at)}} : 0.0f;
%     else
    v[{{q}}] = {{to_acc(at)}};
%     end
%   end
%   for r = 0, TR - 1 do
%     local p = pr - r * S
%     if p >= 0 and p < K then
%       for s = 0, TS - 1 do
%         for q = 0, K - 1 do
    a[{{r}}][{{s}}] = fmaf(v[{{s * S + q}}], k[{{p * K + q}}], a[{{r}}][{{s}}]);
%         end
%       end
%     end
%   end
% end

    // epilogue: {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, store
% if bias then
    const {{acc_t}} bv = {{w_to_acc("__ldg(b + c)")}};
% end
% if OS then
    {{out_t}}* __restrict__ y = out + img * {{OS}} + c * {{OH * OW}} + ty * {{rows * OW}} + tx * {{cols}};   // a slice of a concat's output
% else
    {{out_t}}* __restrict__ y = out + (img * {{C}} + c) * {{OH * OW}} + ty * {{rows * OW}} + tx * {{cols}};
% end
% local bb = bias and " + bv" or ""
% for r = 0, rows - 1 do
%   for s = 0, cols - 1 do
%     local val
%     if pooled then
%       local terms = {}
%       for i = 0, F - 1 do
%         for j = 0, F - 1 do
%           local e = string.format("a[%d][%d]", r * F + i, s * F + j)
%           terms[#terms + 1] = pool_kind == "max" and e or act(e .. bb)
%         end
%       end
%       if pool_kind == "max" then val = act(maxtree(terms) .. bb)
%       else val = "(" .. table.concat(terms, " + ") .. ") * " .. inv end
%     else
%       val = act(string.format("a[%d][%d]", r, s) .. bb)
%     end
    y[{{r * OW + s}}] = {{from_acc(val)}};
%   end
% end
}
]], "conv2d_depthwise")

function T.kernel(l, p)
  local t = tile(l, p)
  local g, fused, pooled = geom(l, p.fuse)
  local TH, TW = t.OH // p.rows, t.OW // p.cols
  -- the window rows pr that may lie above the input (pr < pt) or below it (the
  -- last tile row's origin + pr >= H), likewise for columns
  local maxy = (TH - 1) * t.TR * g.S - g.pt
  local maxx = (TW - 1) * t.TS * g.S - g.pl
  local function conds(pr, q)
    local c = {}
    if pr < g.pt then c[#c + 1] = string.format("iy0 + %d >= 0", pr) end
    if maxy + pr >= l.H then c[#c + 1] = string.format("iy0 + %d < %d", pr, l.H) end
    if q < g.pl then c[#c + 1] = string.format("ix0 + %d >= 0", q) end
    if maxx + q >= l.W then c[#c + 1] = string.format("ix0 + %d < %d", q, l.W) end
    if #c == 0 then return nil end
    return "(" .. table.concat(c, " && ") .. ")"
  end
  local act = fused and l.act or "none"
  local name = string.format("conv2d_depthwise_c%dk%d_h%dw%d%s_%s%s%s_b%dr%dx%df%d",
    l.C, l.K, l.H, l.W, g.tag, act, pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.block, p.rows, p.cols, p.fuse)
  -- the output written into a concat's slice (common.out_slice): its image stride
  local slice = common.out_slice(l, fused)
  if slice then name = name .. slice.tag end
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(l) }))
  local v = {
    name = name, head = head, block = p.block, rows = p.rows, cols = p.cols,
    C = l.C, H = l.H, W = l.W, K = l.K, S = g.S, pt = g.pt, pl = g.pl,
    TR = t.TR, TS = t.TS, PR = t.PR, PC = t.PC, F = t.F, TH = TH, TW = TW, OH = t.OH, OW = t.OW,
    conds = conds, pooled = pooled, pool_kind = g.kind, bias = l.bias,
    pool_doc = not pooled and "" or (g.kind .. " over " .. t.F .. "x" .. t.F .. ", "),
    maxtree = common.max_tree, inv = string.format("%.9ef", 1.0 / (t.F * t.F)),
    actname = act, act = function(e) return common.act(act, e) end,
    OS = slice and slice.stride or false,
  }
  local k = {
    name = name,
    args = args,
    source = source(common.typed(l, v)),
    grid = { common.batch_dim(l.C * TH * TW, p.block), 1, 1 },
    block = { p.block, 1, 1 },
    shared = 0,
    weights = "arg",
    bias = l.bias and "arg" or "none",
    out_elems = l.C * t.OH * t.OW,
    shape = common.conv_shape(l, g, act, pooled, l.M, t.OH, t.OW),
    fused = fused,
    out_slice = slice ~= nil,
  }
  if slice then k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride) end
  return k
end

return T
