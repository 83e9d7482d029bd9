-- tail.lua — the end of a small-batch network in one kernel: its last fully
-- connected layer, the softmax after it (where there is one) and the prediction.
--
-- At a few images each of the network's last kernels is a launch gap (0.8-1 us
-- on an H200, inside a CUDA graph too) around well under a microsecond of work:
-- fc_gemv for fc2 (ece408-2017: 500 -> 10), softmax, argmax. Here one kernel
-- does all three, a block an image: its threads split the fc's reduction (thread
-- t the V-float chunks t, t + threads, ... of the input row, against every
-- output's weights: each weight read once an image, the loads of a pass
-- independent), a warp's sums join by butterfly and the warps' partials in warp
-- order (a fixed order: the result does not depend on scheduling), bias and
-- activation once. It writes the three tensors the three kernels write — the fc's
-- outputs, the probabilities, the predictions — so `convgen check` compares each
-- layer and the memory plan sees them written (the manifest's out= list names
-- all three: roles out, out1, out2). The softmax is ops/softmax.lua's arithmetic
-- on the fc's outputs as stored (the maximum, expf of each less it, their sum in
-- index order, each times the sum's inverse: the same values softmax writes from
-- the same scores), spread over one thread an output; the prediction is
-- ops/argmax.lua's, the first maximum of the values stored (ties to the lowest
-- index), by one thread.
--
-- Where the network ends in the fc (no softmax): the fc and the prediction.
-- The planner (planner.tail_layers) chooses it where the network is generated
-- for a small batch and the fc is small enough for one block an image
-- (planner.TAIL_MAX_OUT outputs, planner.TAIL_MAX_WEIGHTS weights); FP32 tensors
-- only (16-bit networks keep the separate kernels). Measured on an H200: ece408-2017
-- at one image 9.8 us against 11.0 with the three kernels (bench/RESULTS.md).
-- Code size: the OUT outputs' accumulators and their FMAs unrolled once per
-- vector (at most 32 x 4), the passes of a thread unrolled up to 4.
--
-- split > 1 (sm_90 and later, from 2 to SPLIT_MAX_BATCH images): an fc too large for one
-- block an image (more than MAX_WEIGHTS weights) shares each image's reduction over the
-- `split` blocks of a thread-block cluster along z, each reducing its range of the
-- chunks as above for every output; rank 0 then adds the others' sums through
-- distributed shared memory in rank order (a fixed order) and goes on to bias,
-- activation, softmax and prediction. So a wide input into a few outputs
-- (zoo-awkward's 45,000 -> 10 before its softmax) is one kernel where fc_gemv's
-- split and the softmax were two. Measured on an H200 (bench/RESULTS.md, "Small
-- batches: the tail split over a cluster"): at 8 images (64 blocks for 8 clusters)
-- 1.4-2.8 us faster on 6 of 7 zoo networks; at one image its 8 blocks streamed the
-- weights slower than fc_gemv's 80 (zoo-odd +2.0 us, zoo-awkward +0.9), hence from 2.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "a small-batch network's last fc, its softmax and the prediction in one kernel, a block an image"

-- The most outputs: a thread holds an accumulator for each, and the softmax
-- gives each to a thread of the first warp.
T.MAX_OUT = 32

-- A thread loads its first pass's weights (a V-wide vector of each output's row)
-- before the programmatic launch's wait (common.PDL_MARK) where the outputs are at
-- most this many (16 x 4 floats: 64 registers).
T.PRE_VECTORS = 16

local width = common.fc.width

-- threads' default: a thread for each chunk of the row (one pass), from 32 to 256.
local function default_threads(l)
  local chunks, t = common.ceil_div(l.C * l.H * l.W, width(l)), 32
  while t < 256 and t < chunks do t = t * 2 end
  return t
end

-- At most this many weights for one block an image; a split's blocks at most
-- SPLIT_WEIGHTS each (256 KB: about 2,000 cycles of an SM's share of L2 bandwidth);
-- clusters of at most MAX_SPLIT blocks (the portable size); split only from
-- SPLIT_MIN_BATCH images (one image's clusters are too few blocks to stream the
-- weights) up to SPLIT_MAX_BATCH (a cluster an image re-reads every weight for each).
-- Up to 64 images instead was tried on an H200 (2026-11-30, the seven zoo networks it
-- changes at 64 images, bench/tail-split-64-2026-11-30/): -1.0 to +3.5 us, no gain.
T.MAX_WEIGHTS = 16384
T.SPLIT_WEIGHTS = 65536
T.MAX_SPLIT = 8
T.SPLIT_MIN_BATCH = 2
T.SPLIT_MAX_BATCH = 8

local function cluster_ok(l)
  local images = common.cost.images(l)
  return l.target and l.target.cc and l.target.cc >= 90 and images >= T.SPLIT_MIN_BATCH and images <= T.SPLIT_MAX_BATCH
end

-- The blocks an image's reduction needs: 1 where its weights fit one block, else the
-- fewest (a power of two) whose shares fit SPLIT_WEIGHTS where clusters may; nil where
-- none does (the planner then keeps the separate kernels). l: { C, H, W, out, target, batch }.
function T.split_for(l)
  local weights = l.C * l.H * l.W * l.out
  if weights <= T.MAX_WEIGHTS then return 1 end
  if not cluster_ok(l) then return nil end
  local s = 2
  while s <= T.MAX_SPLIT do
    if common.ceil_div(weights, s) <= T.SPLIT_WEIGHTS then return s end
    s = s * 2
  end
  return nil
end

T.params = {
  { name = "threads", doc = "threads per block (an image), splitting the fc's reduction",
    legal = function(_) return { 32, 64, 128, 256, 512 } end, default = function(l)
      if (T.split_for(l) or 1) > 1 then return 512 end
      return default_threads(l)
    end },
  { name = "split", doc = "blocks of a cluster sharing an image's reduction (sm_90+, a few images)",
    legal = function(l) return cluster_ok(l) and { 1, 2, 4, 8 } or { 1 } end,
    default = function(l) return T.split_for(l) or 1 end },
}

function T.check(l, p)
  if l.out > T.MAX_OUT then
    return string.format("%d outputs: at most %d (an accumulator each in every thread)", l.out, T.MAX_OUT), nil
  end
  if common.half_dtype(l) then return "FP32 tensors only (16-bit networks keep the separate kernels)", nil end
  if p.threads > common.MAX_THREADS then
    return string.format("threads=%d: a block has at most %d", p.threads, common.MAX_THREADS), "threads"
  end
  local weights = l.C * l.H * l.W * l.out
  if common.ceil_div(weights, p.split) > (p.split > 1 and T.SPLIT_WEIGHTS or T.MAX_WEIGHTS) then
    return string.format("%d weights in %d block%s an image: at most %d a block", weights, p.split,
      p.split > 1 and "s" or "", p.split > 1 and T.SPLIT_WEIGHTS or T.MAX_WEIGHTS), "split"
  end
  return nil
end

local source = engine.compile([[
{{head}}
{
    // one block an image: its row of x (n x {{IN}}) against w ({{OUT}} x {{IN}}) over {{THREADS}} threads
    __shared__ {{acc_t}} part[{{WARPS}}][{{OUT}}];
    __shared__ {{acc_t}} z[{{OUT}}];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int img = blockIdx.x;
    if (img >= n) return;   // (a cluster's blocks share their image: all of them, or none)
% if SPLIT > 1 then
    // this block's share of the {{CHUNKS}} chunks: [rank*{{CPS}}, rank*{{CPS}} + {{CPS}})
    const int rank = blockIdx.z;   // == its rank in the (1, 1, {{SPLIT}}) cluster
    const int cbeg = rank * {{CPS}};
% else
    const int cbeg = 0;
% end
% if not bias then
    (void)b;
% end
    const {{VT}}* xr = reinterpret_cast<const {{VT}}*>(in + (size_t)img * {{IN}});
    {{acc_t}} acc[{{OUT}}];
#pragma unroll
    for (int r = 0; r < {{OUT}}; r++) acc[r] = 0.0f;
% if PRE then
    // the first pass's weights{{bias and " and the bias" or ""}}, loaded before the wait (they depend
    // on no kernel: fetched while the one before runs)
    {{WVT}} wpre[{{OUT}}];
    {
        const int c = cbeg + tid;
#pragma unroll
        for (int r = 0; r < {{OUT}}; r++)
            wpre[r] = {{PARTIAL and ("c < " .. CHUNKS .. " && c < cbeg + " .. CPS .. " ? ") or ""}}__ldg(reinterpret_cast<const {{WVT}}*>(w + r * {{IN}}) + c){{PARTIAL and (" : " .. zero) or ""}};
    }
% end
% if bias then
    const {{acc_t}} bpre = tid < {{OUT}} ? {{w_to_acc("b[tid]")}} : 0.0f;
% end
{{PDL_MARK}}
    // {{CPS}} chunks of {{V}} a row, {{ITER}} a thread{{PARTIAL and " (the last pass partial)" or ""}}
% for _, part in ipairs(PARTS) do
{{pass_loop(part)}}
        const {{VT}} xv = __ldg(xr + c);
#pragma unroll
        for (int r = 0; r < {{OUT}}; r++) {
% if part.pre then
            const {{WVT}} wv = wpre[r];
% else
            const {{WVT}} wv = __ldg(reinterpret_cast<const {{WVT}}*>(w + r * {{IN}}) + c);
% end
% for _, f in ipairs(FIELDS) do
            acc[r] = fmaf({{w_to_acc(f("wv"))}}, {{to_acc(f("xv"))}}, acc[r]);
% end
        }
    }
% end
    // each output: a warp's sums by butterfly, then the warps' partials in warp order
#pragma unroll
    for (int r = 0; r < {{OUT}}; r++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
    }
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < {{OUT}}; r++) part[warp][r] = acc[r];
    }
    __syncthreads();
    {{acc_t}} s = 0.0f;
    if (tid < {{OUT}}) {
        s = part[0][tid];
#pragma unroll
        for (int wp = 1; wp < {{WARPS}}; wp++) s += part[wp][tid];
    }
% if SPLIT > 1 then
{{cluster_sum("s", OUT)}}
    if (rank != 0) return;
% end
    if (tid < {{OUT}}) {
        const {{acc_t}} v = {{act(bias and "s + bpre" or "s")}};
        out[(size_t)img * {{OUT}} + tid] = {{from_acc("v")}};
        z[tid] = v;
    }
    __syncthreads();
% if softmax then
    // layer {{sm_layer}}: softmax over the {{OUT}} values as ops/softmax.lua computes it
    __shared__ {{acc_t}} ez[{{OUT}}];
    if (tid < {{OUT}}) {
        {{acc_t}} m = z[0];
#pragma unroll
        for (int i = 0; i < {{OUT}}; i++) m = fmaxf(m, z[i]);
        ez[tid] = expf(z[tid] - m);
    }
    __syncthreads();
    if (tid < {{OUT}}) {
        {{acc_t}} s = 0.0f;
#pragma unroll
        for (int i = 0; i < {{OUT}}; i++) s += ez[i];
        const {{acc_t}} inv = 1.0f / s;
        prob[(size_t)img * {{OUT}} + tid] = {{from_acc("ez[tid] * inv")}};
        if (tid == 0) {
            // the prediction: the first maximum of the probabilities stored (ops/argmax.lua)
            {{acc_t}} best = ez[0] * inv;
            int arg = 0;
#pragma unroll
            for (int i = 1; i < {{OUT}}; i++) {
                const {{acc_t}} p = ez[i] * inv;
                if (p > best) {
                    best = p;
                    arg = i;
                }
            }
            pred[img] = arg;
        }
    }
% else
    if (tid == 0) {
        // the prediction: the first maximum of the scores stored (ops/argmax.lua)
        {{acc_t}} best = z[0];
        int arg = 0;
#pragma unroll
        for (int i = 1; i < {{OUT}}; i++) {
            if (z[i] > best) {
                best = z[i];
                arg = i;
            }
        }
        pred[img] = arg;
    }
% end
}
]], "tail")

-- l: the fc layer's table (C, H, W, out, bias, act), and softmax = the name of
-- the softmax layer computed here too (false: none; the fc is the network's last).
-- The arguments: in, out (the fc's outputs), weights, bias, then out1 = the
-- probabilities and out2 = the predictions, or out1 = the predictions, then n.
function T.kernel(l, p)
  local IN = l.C * l.H * l.W
  local V = width(l)
  local chunks = IN // V
  local split = p.split or 1
  local cps = common.ceil_div(chunks, split)
  local iter = common.ceil_div(cps, p.threads)
  local partial = cps % p.threads ~= 0 or chunks % cps ~= 0   -- the last pass partial
  -- the first pass's weights loaded before the wait where they are at most PRE_VECTORS a thread
  local pre = l.out <= T.PRE_VECTORS
  local first = pre and 1 or 0
  local parts = {}
  if pre then parts[1] = { from = 0, to = 1, unroll = 1, pre = true } end
  if iter > first then parts[#parts + 1] = { from = first, to = iter, unroll = math.min(iter - first, 4), pre = false } end
  local ty = common.types(l)
  local name = string.format("tail_i%do%d_%s%s%s_t%d%s", IN, l.out, l.act, l.bias and "_bias" or "",
    l.softmax and "_softmax" or "", p.threads, split > 1 and ("_s" .. split) or "")
  local args = common.std_args({ types = ty })
  local n_arg = table.remove(args)
  if l.softmax then args[#args + 1] = { "out1", ty.out_t, "prob" } end
  args[#args + 1] = { l.softmax and "out2" or "out1", "int", "pred" }
  args[#args + 1] = n_arg
  local head, roles = common.kernel_head(name, p.threads, args,
    split > 1 and string.format("__cluster_dims__(1, 1, %d)", split) or nil)
  local fields = V == 4 and { "x", "y", "z", "w" } or V == 2 and { "x", "y" } or { false }
  local F = {}
  for j, f in ipairs(fields) do
    F[j] = f and function(e) return e .. "." .. f end or function(e) return e end
  end
  local v = {
    head = head, IN = IN, OUT = l.out, THREADS = p.threads, WARPS = common.ceil_div(p.threads, 32), V = V,
    CHUNKS = chunks, ITER = iter, bias = l.bias, FIELDS = F,
    PRE = pre, PARTS = parts, PDL_MARK = common.PDL_MARK:sub(1, -2),
    pass_loop = function(part) return common.fc.pass_loop(part, p.threads, chunks, cps, partial) end,
    zero = common.vec_zero(ty.w_t, V),
    SPLIT = split, CPS = cps, PARTIAL = partial,
    cluster_sum = function(var, n) return common.cluster_sum(ty.acc_t, var, n, split) end,
    VT = common.vec_t(ty.in_t, V), WVT = common.vec_t(ty.w_t, V), softmax = l.softmax and true or false, sm_layer = l.softmax or "",
    act = function(e) return common.act(l.act, e) end,
  }
  return {
    name = name,
    args = roles,
    source = source(common.typed(l, v)),
    grid = { common.batch_dim(1, 1), 1, split },
    block = { p.threads, 1, 1 }, shared = 0,
    weights = "arg", bias = l.bias and "arg" or "none",
    out_elems = l.out,
    shape = string.format("%d -> %d%s%s, then %sthe prediction%s", IN, l.out, l.bias and ", bias" or "",
      l.act ~= "none" and (", " .. l.act) or "", l.softmax and "softmax and " or "",
      split > 1 and string.format(" (an image's reduction over a cluster of %d blocks)", split) or ""),
    fused = true,
  }
end

return T
