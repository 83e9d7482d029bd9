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

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "matrix-vector product for a few images: the reduction split over a block, weights read once"

local width = common.fc.width

-- The SMs to fill: the target's, else an H100's 132 (a fat binary serves many).
local function sms(l) return (l.target and l.target.sms and l.target.sms > 0) and l.target.sms or 132 end

-- ib's default: the batch the network is generated for, up to 8 (a power of two).
local function default_ib(l)
  local b, ib = common.cost.images(l), 1
  while ib < 8 and ib < b do ib = ib * 2 end
  return ib
end

-- rows' default: the most outputs a block that still leave a block for every SM, within
-- the 32 accumulators a thread T.check allows beside ib's images (8 images: at most 4
-- rows; before, zoo-mlp's 2048 outputs asked for 8, were refused, and fell back to the
-- first legal value, 1: every block re-read its 8 images' inputs for one output).
local function default_rows(l)
  local rows, cap = 1, 32 // default_ib(l)
  while rows < 8 and 2 * rows <= cap and common.ceil_div(l.out, rows * 2) >= sms(l) do rows = rows * 2 end
  return rows
end

-- threads' default: enough for every thread to hold about 8 chunks of a row or fewer.
local function default_threads(l)
  local chunks, t = common.ceil_div(l.C * l.H * l.W, width(l)), 64
  while t < 512 and chunks > 8 * t do t = t * 2 end
  return t
end

T.params = {
  { name = "ib", doc = "images per block", legal = function(_) return { 1, 2, 4, 8 } end, default = default_ib },
  { name = "rows", doc = "outputs per block", legal = function(_) return { 1, 2, 4, 8 } end, default = default_rows },
  { name = "threads", doc = "threads per block, splitting the reduction",
    legal = function(_) return { 32, 64, 128, 256, 512, 1024 } end, default = default_threads },
}

function T.check(l, p)
  if p.ib * p.rows > 32 then
    return string.format("ib*rows = %d accumulators a thread; at most 32", p.ib * p.rows), "rows"
  end
  if p.threads > common.MAX_THREADS then
    return string.format("threads=%d: a block has at most %d", p.threads, common.MAX_THREADS), "threads"
  end
  if p.rows > l.out then return string.format("rows=%d: the layer has %d outputs", p.rows, l.out), "rows" end
  return nil
end

-- The cost model: per thread its chunks of the block's rows (a load of weights and
-- ib of inputs each, V*rows*ib FMAs), and the reduction's shuffles and barrier.
function T.cost(l, p)
  local V = width(l)
  local chunks = common.ceil_div(common.ceil_div(l.C * l.H * l.W, V), p.threads)
  local blocks = common.ceil_div(common.cost.images(l), p.ib) * common.ceil_div(l.out, p.rows)
  local per_thread = chunks * (p.rows + p.ib + V * p.rows * p.ib + 2) + 5 * p.rows * p.ib + 40
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
    // {{CHUNKS}} chunks of {{V}} a row, {{ITER}} a thread (the last pass partial)
#pragma unroll {{UNROLL}}
    for (int it = 0; it < {{ITER}}; it++) {
        const int c = tid + it * {{THREADS}};
% if CHUNKS % THREADS ~= 0 then
        if (c >= {{CHUNKS}}) continue;   // (a predicate: the passes' loads still issue together)
% end
        {{VT}} xv[{{IB}}], wv[{{ROWS}}];
#pragma unroll
        for (int r = 0; r < {{ROWS}}; r++)
            wv[r] = o0 + r < {{OUT}} ? reinterpret_cast<const {{VT}}*>(w + (o0 + r) * {{IN}})[c] : {{zero}};
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
    if (tid < {{ROWS * IB}}) {
        const int r = tid / {{IB}}, i = tid % {{IB}};
        const int go = o0 + r, gi = i0 + i;
        {{acc_t}} s = part[0][tid];
#pragma unroll
        for (int wp = 1; wp < {{WARPS}}; wp++) s += part[wp][tid];
        if (go < {{OUT}} && gi < n) out[(size_t)gi * {{OUT}} + go] = {{from_acc(act(bias and ("s + " .. w_to_acc("b[go]")) or "s"))}};
    }
}
]], "fc_gemv")

function T.kernel(l, p)
  local IN = l.C * l.H * l.W
  local V = width(l)
  local chunks = IN // V
  local iter = common.ceil_div(chunks, p.threads)
  local name = string.format("fc_gemv_i%do%d_%s%s_b%dr%dt%d", IN, l.out, l.act, l.bias and "_bias" or "",
    p.ib, p.rows, p.threads)
  local ty = common.types(l)
  -- x and w go through the same V-wide registers: one element type for both
  if ty.in_t ~= ty.w_t then error("fc_gemv loads inputs and weights of one element type", 2) end
  local head, args = common.kernel_head(name, p.threads, common.std_args({ types = ty }))
  local fields = V == 4 and { "x", "y", "z", "w" } or V == 2 and { "x", "y" } or { false }
  local F = {}
  for j, f in ipairs(fields) do
    F[j] = f and function(e) return e .. "." .. f end or function(e) return e end
  end
  local v = {
    head = head, IN = IN, OUT = l.out, IB = p.ib, ROWS = p.rows, THREADS = p.threads,
    WARPS = common.ceil_div(p.threads, 32), V = V, CHUNKS = chunks, ITER = iter,
    UNROLL = math.min(iter, 8), bias = l.bias, FIELDS = F,
    VT = common.vec_t(ty.in_t, V),
    zero = common.is_half(ty.in_t) and (common.vec_t(ty.in_t, V) .. "{}")
      or V == 4 and "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" or V == 2 and "make_float2(0.0f, 0.0f)" or "0.0f",
    act = function(e) return common.act(l.act, e) end,
  }
  return common.fc.record(l, name, args, source(common.typed(l, v)),
    { common.batch_dim(1, p.ib), common.ceil_div(l.out, p.rows), 1 }, p.threads)
end

return T
