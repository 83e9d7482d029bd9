-- conv2d_direct.lua — direct convolution, every layer constant a literal.
--
-- One thread computes a small tile of outputs of one image for every output
-- map: `cols` outputs along a row (with a fused 2x2 max-pool, `cols` pooled
-- outputs, i.e. a 2 x 2*cols tile of conv outputs), reading the input patch
-- under that tile. Maps are produced `maps_unroll` at a time; each group's
-- C x K x K products are fully unrolled with literal offsets, one weight
-- feeding every output of the tile. When the patch of every channel fits in
-- registers it is loaded once and reused by all maps. Weights (and bias) live
-- in __constant__ memory when they fit the network's constant budget and a
-- group is small; else the block stages each group's weights in shared memory
-- (every thread of a warp then reads the same word: a broadcast).
-- Epilogue (fuse=1): max over the window, + bias, activation, store; pooling
-- before a monotone activation gives the same result with a quarter of the calls.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "direct convolution; one thread per output tile and all maps"

-- Output positions per row a thread can take: divisors of the row, up to 8.
local function row_len(l, fuse)
  local ow = l.W - l.K + 1
  if l.pool == 2 and fuse ~= 0 then ow = ow // 2 end
  return ow
end

-- Tunable parameters: the autotuner enumerates exactly `legal(layer)`.
T.params = {
  { name = "block", doc = "threads per block",
    legal = function(_) return common.multiples(32, 32, 1024) end,
    default = function(_) return 128 end },
  { name = "maps_unroll", doc = "output maps accumulated together in registers; divides M",
    legal = function(l) return common.divisors(l.M, 32) end,
    default = function(l)
      local d = common.divisors(l.M, 8)
      return d[#d]
    end },
  { name = "cols", doc = "outputs (pooled outputs when pooling) per thread along a row; divides the row",
    legal = function(l) return common.divisors(row_len(l, 1), 8) end,
    default = function(_) return 1 end },
  { name = "unroll_groups", doc = "1: unroll the loop over map groups too (weights become immediate operands)",
    legal = function(_) return { 0, 1 } end,
    default = function(_) return 0 end },
  { name = "fuse", tune = false, doc = "1: bias+activation+pool in this kernel; 0: bias only, then separate kernels",
    legal = function(_) return { 0, 1 } end,
    default = function(_) return 1 end },
}

-- Most multiply-adds one thread's fully unrolled body may hold: code size and
-- compile time grow with it (ece408-2018fa conv2, 2352, compiles in about 2 s).
T.BODY_BUDGET = 2560
-- Most unrolled tile calls (one source line each, about 80 bytes): the source size.
T.CALL_BUDGET = 400

-- Largest input patch (floats, all channels) kept in registers across groups.
local HOIST_LIMIT = 72
-- Most weights per group read straight from constant memory (see T.kernel).
local CONST_GROUP_LIMIT = 256

-- The tile a thread computes: TR x TS conv outputs, from a PR x PC patch.
local function tile(l, p)
  local pooled = l.pool == 2 and p.fuse == 1
  local TR, TS = pooled and 2 or 1, (pooled and 2 or 1) * p.cols
  return pooled, TR, TS, TR + l.K - 1, TS + l.K - 1
end

function T.check(l, p)
  local pooled, TR, TS, PR, PC = tile(l, p)
  if row_len(l, p.fuse) % p.cols ~= 0 then
    return string.format("cols=%d must divide the output row of %d", p.cols, row_len(l, p.fuse)), "cols"
  end
  if p.maps_unroll * TR * TS > 64 then
    return string.format("maps_unroll=%d with cols=%d needs %d accumulators per thread; at most 64",
      p.maps_unroll, p.cols, p.maps_unroll * TR * TS), "maps_unroll"
  end
  local CKK = l.C * l.K * l.K
  local body = p.maps_unroll * CKK * TR * TS * (p.unroll_groups == 1 and l.M // p.maps_unroll or 1)
  local calls = p.maps_unroll * CKK * (p.unroll_groups == 1 and l.M // p.maps_unroll or 1)
  if calls > T.CALL_BUDGET then
    return string.format("the unrolled body makes %d tile calls (maps_unroll*C*K*K%s); the budget is %d, " ..
      "so that the source stays under about 40 KB: use strategy igemm for this layer",
      calls, p.unroll_groups == 1 and "*groups" or "", T.CALL_BUDGET), "maps_unroll"
  end
  if body > T.BODY_BUDGET then
    return string.format("the unrolled body holds %d multiply-adds (maps_unroll*C*K*K*outputs%s); " ..
      "the budget is %d, so that it compiles in seconds: use strategy igemm for this layer",
      body, p.unroll_groups == 1 and "*groups" or "", T.BODY_BUDGET), "maps_unroll"
  end
  if 4 * p.maps_unroll * CKK > common.MAX_SHARED then
    return string.format("maps_unroll=%d stages %d bytes of weights in shared memory; at most %d fit",
      p.maps_unroll, 4 * p.maps_unroll * CKK, common.MAX_SHARED), "maps_unroll"
  end
  if PR * PC > 256 then
    return string.format("the %dx%d input patch is too large for the direct strategy", PR, PC), pooled and "cols" or nil
  end
  return nil
end

local source = engine.compile([[
% if const then
__constant__ float {{wsym}}[{{M * CKK}}];
%   if bias then
__constant__ float {{bsym}}[{{M}}];
%   end

// weights of map m, channel c, row p, column q: W(((m * {{C}} + c) * {{K}} + p) * {{K}} + q)
#define W(i) {{wsym}}[i]
% else
// weights of map g+m (the group staged in shared memory), channel c, row p, column q:
// W((m * {{C}} + c) * {{K * K}} + p * {{K}} + q)
#define W(i) ws[i]
% end
% if bias then
#define B(m) {{bsrc}}[m]
% end

// one weight into every output of the thread's {{TR}}x{{TS}} tile; p, q are literals
template <int P, int Q>
__device__ __forceinline__ void {{name}}_fma(float (&a)[{{TR}}][{{TS}}], float k, const float (&v)[{{PR}}][{{PC}}])
{
#pragma unroll
    for (int r = 0; r < {{TR}}; r++)
#pragma unroll
        for (int s = 0; s < {{TS}}; s++) a[r][s] = fmaf(v[P + r][Q + s], k, a[r][s]);
}

{{head}}
{
    // thread -> (image, output row, first of {{cols}} output column(s)); {{P // cols}} threads per image
    const int idx = blockIdx.x * {{block}} + threadIdx.x;
% if const then
    if (idx >= n * {{P // cols}}) return;
    const int at = idx;
% else
    // threads past the batch still help stage weights, then store nothing
    const bool live = idx < n * {{P // cols}};
    const int at = live ? idx : 0;
    __shared__ float ws[{{mu * CKK}}];
% end
    const int img = at / {{P // cols}};
    const int t = at - img * {{P // cols}};
    const int row = t / {{TW // cols}};
    const int col = (t - row * {{TW // cols}}) * {{cols}};
    const float* __restrict__ x = in + img * {{C * H * W}} + row * {{TR * W}} + col * {{TR}};
    float* __restrict__ y = out + img * {{M * P}} + row * {{TW}} + col;
    (void)w_arg;
    (void)b_arg;
% if hoist then

    // the {{C}}x{{PR}}x{{PC}} input patch, loaded once for all {{M}} maps
    float v[{{C}}][{{PR}}][{{PC}}];
#pragma unroll
    for (int c = 0; c < {{C}}; c++)
#pragma unroll
        for (int p = 0; p < {{PR}}; p++)
#pragma unroll
            for (int q = 0; q < {{PC}}; q++)
                v[c][p][q] = x[c * {{H * W}} + p * {{W}} + q];
% end
% local groups = M // mu

#pragma unroll {{unroll_groups and "" or "1"}}
    for (int g = 0; g < {{M}}; g += {{mu}}) {
% if not const then
        __syncthreads();   // every thread is done with the previous group's weights
        for (int i = threadIdx.x; i < {{mu * CKK}}; i += {{block}}) ws[i] = w_arg[g * {{CKK}} + i];
        __syncthreads();
% end
% local ind = "        "
% for m = 0, mu - 1 do
        float a{{m}}[{{TR}}][{{TS}}] = {};
% end
% for c = 0, C - 1 do
%   local vc = hoist and ("v[" .. c .. "]") or "v"
%   if not hoist then
        {
            // channel {{c}}: its {{PR}}x{{PC}} patch
            float v[{{PR}}][{{PC}}];
#pragma unroll
            for (int p = 0; p < {{PR}}; p++)
#pragma unroll
                for (int q = 0; q < {{PC}}; q++)
                    v[p][q] = x[{{c * H * W}} + p * {{W}} + q];
%     ind = "            "
%   end
%   for m = 0, mu - 1 do
{{ind}}// map g+{{m}}, c={{c}}
%     for p = 0, K - 1 do
%       for q = 0, K - 1 do
%         local wi = m * CKK + c * K * K + p * K + q
%         local wx = (groups > 1 and const) and ("W(g * " .. CKK .. " + " .. wi .. ")") or ("W(" .. wi .. ")")
{{ind}}{{name}}_fma<{{p}}, {{q}}>(a{{m}}, {{wx}}, {{vc}});
%       end
%     end
%   end
%   if not hoist then
        }
%     ind = "        "
%   end
% end

        // epilogue: {{pooled and "2x2 max, " or ""}}{{bias and "bias, " or ""}}{{actname}}, store
% local guard = const and "" or "if (live) "
% for m = 0, mu - 1 do
%   for s = 0, cols - 1 do
%     local val
%     if pooled then
%       local a, b = 2 * s, 2 * s + 1
%       val = string.format("fmaxf(fmaxf(a%d[0][%d], a%d[0][%d]), fmaxf(a%d[1][%d], a%d[1][%d]))", m, a, m, b, m, a, m, b)
%     else
%       val = string.format("a%d[0][%d]", m, s)
%     end
%     if bias then val = val .. " + B(g + " .. m .. ")" end
        {{guard}}y[(g + {{m}}) * {{P}} + {{s}}] = {{act(val)}};
%   end
% end
    }
}
#undef W
% if bias then
#undef B
% end
]], "conv2d_direct")

function T.kernel(l, p)
  local pooled, TR, TS, PR, PC = tile(l, p)
  local CH, CW = l.H - l.K + 1, l.W - l.K + 1
  local OH, OW = CH, CW
  if pooled then OH, OW = CH // 2, CW // 2 end
  local CKK = l.C * l.K * l.K
  local wbytes = 4 * (l.M * CKK + (l.bias and l.M or 0))
  -- constant memory indexed by the group counter turns into loads the compiler
  -- hoists far ahead (hundreds of live registers, then spills) once a group has
  -- more than ~256 weights; such layers stage each group in shared memory
  local const = wbytes <= l.const_left and p.maps_unroll * CKK <= CONST_GROUP_LIMIT
  local name = string.format("conv2d_direct_c%dm%dk%d_h%dw%d_%s%s%s_%s_b%du%dx%dg%df%d",
    l.C, l.M, l.K, l.H, l.W, p.fuse == 1 and l.act or "none", pooled and "_pool2" or "",
    l.bias and "_bias" or "", const and "wc" or "ws", p.block, p.maps_unroll, p.cols, p.unroll_groups, p.fuse)
  local act = p.fuse == 1 and l.act or "none"
  local head, args = common.kernel_head(name, p.block, common.std_args({ w_name = "w_arg", b_name = "b_arg" }))
  local v = {
    name = name, head = head,
    block = p.block, mu = p.maps_unroll, cols = p.cols, unroll_groups = p.unroll_groups == 1,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, CKK = CKK,
    TR = TR, TS = TS, PR = PR, PC = PC,
    P = OH * OW, TW = OW,
    pooled = pooled, hoist = l.C * PR * PC <= HOIST_LIMIT,
    const = const, bias = l.bias,
    wsym = name .. "_w", bsym = name .. "_b",
    bsrc = const and (name .. "_b") or "b_arg",
    actname = act,
    act = function(e) return common.act(act, e) end,
  }
  return {
    name = name,
    args = args,
    source = source(v),
    grid = { common.batch_dim(OH * OW // p.cols, p.block), 1, 1 },
    block = { p.block, 1, 1 },
    shared = 0,   -- dynamic shared memory; the staged weights are static
    const_bytes = const and wbytes or 0,
    weights = const and ("const:" .. v.wsym) or "arg",
    bias = (not l.bias) and "none" or (const and ("const:" .. v.bsym) or "arg"),
    out_elems = l.M * OH * OW,
    shape = string.format("C=%d H=%d W=%d -> M=%d K=%d%s -> %dx%dx%d",
      l.C, l.H, l.W, l.M, l.K,
      pooled and (", " .. l.act .. ", max-pool 2x2") or (act ~= "none" and (", " .. act) or ""),
      l.M, OH, OW),
    fused = p.fuse == 1,
  }
end

return T
