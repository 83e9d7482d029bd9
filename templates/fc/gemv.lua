-- fc_gemv.lua — fully connected layer for a few images: each weight read once.
--
-- out[i][o] = act(sum_k x[i][k] * w[o][k] + b[o]). At a small batch a fully
-- connected layer is a matrix-vector product whose cost is streaming the weights
-- (7,200 x 500 floats: 14.4 MB for 500 multiply-adds an input); the tiled
-- templates cut it into 128-image tiles and leave a handful of blocks to read
-- them. Here a block owns `rows` outputs for `ib` images and all its threads
-- split the reduction: thread t reads the V-float chunks t, t + threads, ... of
-- each of its rows (V = 4, 2 or 1 as the input size keeps rows aligned), every
-- load of the unrolled loop independent of the others, so many loads are in
-- flight on every SM. The images' inputs are read through the read-only cache
-- (a block's rows share them). The sums are reduced in a fixed order (a warp's
-- butterfly, then the warps' partials in warp order), so a result does not
-- depend on scheduling; bias and activation are applied once.
--
-- Blocks: images in groups of `ib` along x (a larger batch repeats the weight
-- stream once per group, from L2 where it fits), outputs in groups of `rows`
-- along y. `auto` picks this template where the network is generated for a
-- small batch (network.auto_fc).
--
-- split > 1 (sm_90 and later): the reduction's chunks are cut into `split` equal
-- ranges, one per block of a thread-block cluster along z. Each block reduces its
-- range as above; block 0 of the cluster then adds the others' sums through
-- distributed shared memory in rank order (the result does not depend on
-- scheduling) and applies bias and activation. A narrow layer otherwise launches
-- one block per output group: zoo-awkward's 45,000 inputs into 10 outputs at 8
-- images ran as 10 blocks, 29 us to stream 1.8 MB (an H200, 2026-11-29).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "matrix-vector product for a few images: the reduction split over a block, weights read once"

local width = common.fc.width

-- The weight vectors a thread loads before the programmatic launch's wait
-- (common.PDL_MARK): its first passes' weights, ROWS vectors a pass, held in
-- registers until the input arrives: at most PRE_VECTORS (8 x 4 floats, 32
-- registers); none in blocks of PRE_MAX_THREADS or more, nor in blocks of one image.
-- A block of 1,024 threads takes 32 registers a thread without them, half an SM's
-- register file, and any more leave one block an SM where two fitted: zoo-vgg3x3's
-- 21,632 -> 256 layer at 8 images took 46 registers with 2 vectors and the network
-- 62.5 -> 65.1 us, ece408-2018fa 40.0 -> 42.1. At one image the networks ran as fast
-- as without any prefetch or slower, where without the gemv's (the tail's and
-- direct's kept) ece408-2017 took 8.6 us against 9.1, -2018sp 16.2 against 17.8,
-- -2018fa 18.9 against 20.5; from 8 images it won (zoo-mlp at 8 images 29.8 -> 26.8,
-- ece408-2018sp at 64 43.3 -> 40.5). An H200, 2026-11-30: bench/RESULTS.md, "Weights
-- fetched before the programmatic launch's wait".
T.PRE_VECTORS = 8
T.PRE_MAX_THREADS = 1024

-- The SMs to fill: the target's, else an H100's 132 (a fat binary serves many).
local function sms(l) return (l.target and l.target.sms and l.target.sms > 0) and l.target.sms or 132 end

-- ib's default: the batch the network is generated for, up to 8 (a power of two); 4 from
-- MANY images on (with rows 4, below: see there).
local MANY = 16
local function default_ib(l)
  local b, ib = common.cost.images(l), 1
  if b >= MANY then return 4 end
  while ib < 8 and ib < b do ib = ib * 2 end
  return ib
end

-- rows' default: the most outputs a block that still leave a block for every SM, within
-- the 32 accumulators a thread T.check allows beside ib's images (8 images: at most 4
-- rows; before, zoo-mlp's 2048 outputs asked for 8, were refused, and fell back to the
-- first legal value, 1: every block re-read its 8 images' inputs for one output).
--
-- From MANY images on, 4 rows (or the outputs' largest power of two below 4) for 4 images:
-- each block re-reads its images' inputs for its rows and the weights are streamed once
-- per image group, so a block of 4 x 4 reads a sixteenth of the bytes of 8 x 1 for the same
-- products. Measured on an H200 (2026-11-29, `convgen tune --batch 64 / 256`, single kernels,
-- L2 flushed; bench/scripts/gemv_split_device.sh): ece408-2018fa's 17,496 -> 160 layer at 64
-- images 40.2 us against 76.5 under the 8 x 1 default, zoo-vgg3x3's 21,632 -> 256 at 256
-- images 229.2 against 658.3, zoo-wide3x3's 4,608 -> 128 at 64 10.2 against 14.5; within
-- 12-35 % of the best of each layer's 136-307 candidates (rows 8 won the 160-output layer,
-- lost the 128-output one by 85 %).
local function default_rows(l)
  if common.cost.images(l) >= MANY then
    local rows = 4
    while rows > l.out do rows = rows // 2 end
    return rows
  end
  local rows, cap = 1, 32 // default_ib(l)
  while rows < 8 and 2 * rows <= cap and common.ceil_div(l.out, rows * 2) >= sms(l) do rows = rows * 2 end
  return rows
end

-- threads' default: enough for every thread to hold about 8 chunks of a row or fewer.
-- (Up to 256 from MANY images on: its blocks are many; up to 1024 from 2 images below MANY,
-- where a thread's chunks each carry ib images' products; 512 at one image.) Measured on an
-- H200 (bench/RESULTS.md, "One image: a ragged split", whole networks): up to 1024 at 8 images
-- took zoo-vgg3x3 66.5 -> 61.9 us and ece408-2018fa 42.4 -> 40.3; at one image it lost on 5
-- of 7 networks (+1.0 to 1.5 us: zoo-7x7-large, zoo-awkward, zoo-odd, zoo-prime, whose narrow
-- layers' cluster splits it halved) and won 1.0 on zoo-stem96.
local function default_threads(l)
  local chunks, t = common.ceil_div(l.C * l.H * l.W, width(l)), 64
  local images = common.cost.images(l)
  local most = images >= MANY and 256 or images > 1 and 1024 or 512
  while t < most and chunks > 8 * t do t = t * 2 end
  return t
end

local function cluster_ok(l) return l.target and l.target.cc and l.target.cc >= 90 end

-- split's default: none before sm_90; else, where the blocks of the default ib and rows
-- are fewer than the SMs, the fewest cluster blocks (up to 8) that give every SM one,
-- while each block's share keeps a chunk for each of its threads.
local function default_split(l)
  if not cluster_ok(l) then return 1 end
  local blocks = common.ceil_div(common.cost.images(l), default_ib(l)) * common.ceil_div(l.out, default_rows(l))
  local chunks, t = common.ceil_div(l.C * l.H * l.W, width(l)), default_threads(l)
  local split = 1
  while split < 8 and blocks * split < sms(l) and common.ceil_div(chunks, 2 * split) >= t do split = split * 2 end
  return split
end

T.params = {
  { name = "ib", doc = "images per block", legal = function(_) return { 1, 2, 4, 8 } end, default = default_ib },
  { name = "rows", doc = "outputs per block", legal = function(_) return { 1, 2, 4, 8 } end, default = default_rows },
  { name = "threads", doc = "threads per block, splitting the reduction",
    legal = function(_) return { 32, 64, 128, 256, 512, 1024 } end, default = default_threads },
  { name = "split", doc = "blocks of a cluster sharing the reduction (sm_90+)",
    legal = function(l) return cluster_ok(l) and { 1, 2, 4, 8 } or { 1 } end, default = default_split },
}

function T.check(l, p)
  if p.ib * p.rows > 32 then
    return string.format("ib*rows = %d accumulators a thread; at most 32", p.ib * p.rows), "rows"
  end
  if p.threads > common.MAX_THREADS then
    return string.format("threads=%d: a block has at most %d", p.threads, common.MAX_THREADS), "threads"
  end
  if p.rows > l.out then return string.format("rows=%d: the layer has %d outputs", p.rows, l.out), "rows" end
  local chunks = common.ceil_div(l.C * l.H * l.W, width(l))
  if p.split > 1 and common.ceil_div(chunks, p.split) < p.threads // 2 then
    return string.format("split=%d leaves %d chunks of %d inputs a block, fewer than half of its %d threads",
      p.split, common.ceil_div(chunks, p.split), width(l), p.threads), "split"
  end
  return nil
end

-- The cost model: per thread its chunks of the block's rows (a load of weights and
-- ib of inputs each, V*rows*ib FMAs), and the reduction's shuffles and barrier.
-- A split adds its blocks and, per extra block, the cluster's exchange (two barriers and
-- a remote read of each sum).
function T.cost(l, p)
  local V, split = width(l), p.split or 1
  local chunks = common.ceil_div(common.ceil_div(common.ceil_div(l.C * l.H * l.W, V), split), p.threads)
  local blocks = common.ceil_div(common.cost.images(l), p.ib) * common.ceil_div(l.out, p.rows) * split
  local per_thread = chunks * (p.rows + p.ib + V * p.rows * p.ib + 2) + 5 * p.rows * p.ib + 40 + 30 * (split - 1)
  return common.cost.issue(l, blocks, p.threads, p.rows * p.ib + V * (p.rows + p.ib) + 8, 0, per_thread, chunks)
end

local source = engine.compile([[
{{head}}
{
    // x: n x {{IN}} (row-major), w: {{OUT}} x {{IN}}, out: n x {{OUT}}
    // block: images [i0, i0 + {{IB}}) x outputs [o0, o0 + {{ROWS}}), the reduction over {{THREADS}} threads
    __shared__ {{acc_t}} part[{{WARPS}}][{{ROWS * IB}}];
    const int tid = threadIdx.x;
    const int i0 = blockIdx.x * {{IB}};
    const int o0 = blockIdx.y * {{ROWS}};
% if not bias then
    (void)b;
% end
    {{acc_t}} acc[{{ROWS}}][{{IB}}];
#pragma unroll
    for (int r = 0; r < {{ROWS}}; r++)
#pragma unroll
        for (int i = 0; i < {{IB}}; i++) acc[r][i] = 0.0f;
% if SPLIT > 1 then
    // this block's share of the {{CHUNKS}} chunks of {{V}} a row: [rank*{{CPS}}, rank*{{CPS}} + {{CPS}})
    const int rank = blockIdx.z;          // == its rank in the (1, 1, {{SPLIT}}) cluster
    const int cbeg = rank * {{CPS}};
% else
    const int cbeg = 0;
% end
% if PRE > 0 then
    // the weights of the first {{PRE}} pass{{PRE > 1 and "es" or ""}}{{bias and " and the bias" or ""}}, loaded before the wait
    // (they depend on no kernel: fetched while the one before runs)
    {{VT}} wpre[{{PRE}}][{{ROWS}}];
#pragma unroll
    for (int it = 0; it < {{PRE}}; it++) {
        const int c = cbeg + tid + it * {{THREADS}};
#pragma unroll
        for (int r = 0; r < {{ROWS}}; r++)
            wpre[it][r] = o0 + r < {{OUT}}{{PARTIAL and (" && c < " .. CHUNKS .. " && c < cbeg + " .. CPS) or ""}} ? reinterpret_cast<const {{VT}}*>(w + (o0 + r) * {{IN}})[c] : {{zero}};
    }
% end
% if bias then
    const {{acc_t}} bpre = tid < {{ROWS * IB}} && o0 + tid / {{IB}} < {{OUT}} ? {{w_to_acc("b[o0 + tid / " .. IB .. "]")}} : 0.0f;
% end
{{PDL_MARK}}
    // {{CPS}} chunks of {{V}} a row, {{ITER}} a thread{{PARTIAL and " (the last pass partial)" or ""}}
% for _, part in ipairs(PARTS) do
{{pass_loop(part)}}
        {{VT}} xv[{{IB}}], wv[{{ROWS}}];
#pragma unroll
        for (int r = 0; r < {{ROWS}}; r++)
% if part.pre then
            wv[r] = wpre[it][r];
% else
            wv[r] = o0 + r < {{OUT}} ? reinterpret_cast<const {{VT}}*>(w + (o0 + r) * {{IN}})[c] : {{zero}};
% end
#pragma unroll
        for (int i = 0; i < {{IB}}; i++)
            xv[i] = i0 + i < n ? __ldg(reinterpret_cast<const {{VT}}*>(in + (size_t)(i0 + i) * {{IN}}) + c) : {{zero}};
#pragma unroll
        for (int r = 0; r < {{ROWS}}; r++)
#pragma unroll
            for (int i = 0; i < {{IB}}; i++) {
% for _, f in ipairs(FIELDS) do
                acc[r][i] = fmaf({{w_to_acc(f("wv[r]"))}}, {{to_acc(f("xv[i]"))}}, acc[r][i]);
% end
            }
    }
% end
    // a warp's sums by butterfly, then the warps' partials in warp order
#pragma unroll
    for (int r = 0; r < {{ROWS}}; r++)
#pragma unroll
        for (int i = 0; i < {{IB}}; i++) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[r][i] += __shfl_xor_sync(0xffffffffu, acc[r][i], o);
        }
    if (tid % 32 == 0) {
#pragma unroll
        for (int r = 0; r < {{ROWS}}; r++)
#pragma unroll
            for (int i = 0; i < {{IB}}; i++) part[tid / 32][r * {{IB}} + i] = acc[r][i];
    }
    __syncthreads();
% if SPLIT > 1 then
    {{acc_t}} s = 0.0f;
    if (tid < {{ROWS * IB}}) {
        s = part[0][tid];
#pragma unroll
        for (int wp = 1; wp < {{WARPS}}; wp++) s += part[wp][tid];
    }
{{cluster_sum("s", ROWS * IB)}}
    if (rank == 0 && tid < {{ROWS * IB}}) {
        const int r = tid / {{IB}}, i = tid % {{IB}};
        const int go = o0 + r, gi = i0 + i;
        if (go < {{OUT}} && gi < n) out[(size_t)gi * {{OUT}} + go] = {{from_acc(act(bias and "s + bpre" or "s"))}};
    }
% else
    if (tid < {{ROWS * IB}}) {
        const int r = tid / {{IB}}, i = tid % {{IB}};
        const int go = o0 + r, gi = i0 + i;
        {{acc_t}} s = part[0][tid];
#pragma unroll
        for (int wp = 1; wp < {{WARPS}}; wp++) s += part[wp][tid];
        if (go < {{OUT}} && gi < n) out[(size_t)gi * {{OUT}} + go] = {{from_acc(act(bias and "s + bpre" or "s"))}};
    }
% end
}
]], "fc_gemv")

function T.kernel(l, p)
  local IN = l.C * l.H * l.W
  local V = width(l)
  local chunks = IN // V
  local split = p.split or 1
  local cps = common.ceil_div(chunks, split)
  local iter = common.ceil_div(cps, p.threads)
  local partial = cps % p.threads ~= 0 or chunks % cps ~= 0   -- the last pass partial
  -- the passes whose weights are loaded before the wait: at most PRE_VECTORS vectors a thread
  local pre = (p.threads >= T.PRE_MAX_THREADS or p.ib == 1) and 0 or math.min(iter, T.PRE_VECTORS // p.rows)
  local parts = {}
  if pre > 0 then parts[1] = { from = 0, to = pre, unroll = pre, pre = true } end
  if iter > pre then parts[#parts + 1] = { from = pre, to = iter, unroll = math.min(iter - pre, 8), pre = false } end
  local name = string.format("fc_gemv_i%do%d_%s%s_b%dr%dt%d%s", IN, l.out, l.act, l.bias and "_bias" or "",
    p.ib, p.rows, p.threads, split > 1 and ("_s" .. split) or "")
  local ty = common.types(l)
  -- x and w go through the same V-wide registers: one element type for both
  if ty.in_t ~= ty.w_t then error("fc_gemv loads inputs and weights of one element type", 2) end
  local head, args = common.kernel_head(name, p.threads, common.std_args({ types = ty }),
    split > 1 and string.format("__cluster_dims__(1, 1, %d)", split) or nil)
  local fields = V == 4 and { "x", "y", "z", "w" } or V == 2 and { "x", "y" } or { false }
  local F = {}
  for j, f in ipairs(fields) do
    F[j] = f and function(e) return e .. "." .. f end or function(e) return e end
  end
  local v = {
    head = head, IN = IN, OUT = l.out, IB = p.ib, ROWS = p.rows, THREADS = p.threads,
    WARPS = common.ceil_div(p.threads, 32), V = V, CHUNKS = chunks, ITER = iter, SPLIT = split, CPS = cps,
    PARTIAL = partial,
    PRE = pre, PARTS = parts, PDL_MARK = common.PDL_MARK:sub(1, -2),
    pass_loop = function(part) return common.fc.pass_loop(part, p.threads, chunks, cps, partial) end,
    bias = l.bias, FIELDS = F,
    cluster_sum = function(var, n) return common.cluster_sum(ty.acc_t, var, n, split) end,
    VT = common.vec_t(ty.in_t, V),
    zero = common.vec_zero(ty.in_t, V),
    act = function(e) return common.act(l.act, e) end,
  }
  return common.fc.record(l, name, args, source(common.typed(l, v)),
    { common.batch_dim(1, p.ib), common.ceil_div(l.out, p.rows), split }, p.threads)
end

return T
