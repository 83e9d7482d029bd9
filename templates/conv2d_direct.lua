-- conv2d_direct.lua — direct convolution, every layer constant a literal.
--
-- One thread computes one output position of one image for every output map:
-- with a fused 2x2 max-pool, the four conv outputs under one pooled output
-- (so it reads a (K+1)x(K+1) input patch); without, a single output (K x K).
-- Maps are produced `maps_unroll` at a time, each group's C x K x K products
-- fully unrolled with literal offsets; with one group the weights become
-- immediate constant-bank operands. When the patch of every channel fits in
-- registers it is loaded once and reused by all maps. Weights (and bias) live
-- in __constant__ memory when they fit the network's constant budget; else the
-- block stages each group's weights in shared memory (every thread of a warp
-- then reads the same word: a broadcast).
-- Epilogue (fuse=1): max over the window, + bias, activation, store; pooling
-- before a monotone activation gives the same result with a quarter of the calls.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "direct convolution; one thread per output position and all maps"

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
  { name = "fuse", doc = "1: bias+activation+pool in this kernel; 0: bias only, then separate kernels",
    legal = function(_) return { 0, 1 } end,
    default = function(_) return 1 end },
}

-- Largest input patch (floats, all channels) kept in registers across groups.
local HOIST_LIMIT = 72
-- Most weights per group read straight from constant memory (see T.kernel).
local CONST_GROUP_LIMIT = 256

function T.check(l, p)
  local pk = (l.pool == 2 and p.fuse == 1) and l.K + 1 or l.K
  if p.maps_unroll * ((l.pool == 2 and p.fuse == 1) and 4 or 1) > 64 then
    return "maps_unroll=" .. p.maps_unroll .. " needs more than 64 accumulators per thread", "maps_unroll"
  end
  local CKK = l.C * l.K * l.K
  if 4 * p.maps_unroll * CKK > common.MAX_SHARED then
    return string.format("maps_unroll=%d stages %d bytes of weights in shared memory; at most %d fit",
      p.maps_unroll, 4 * p.maps_unroll * CKK, common.MAX_SHARED), "maps_unroll"
  end
  if pk * pk > 256 then
    return "K=" .. l.K .. " is too large for the direct strategy (patch of " .. pk * pk .. " floats)", nil
  end
  return nil
end

local source = engine.compile([[
% if const then
__constant__ float {{wsym}}[{{M * CKK}}];
%   if bias then
__constant__ float {{bsym}}[{{M}}];
%   end

% end
% if const then
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
% if pooled then
// the four conv outputs under one pooled output share each weight
__device__ __forceinline__ void fma4(float (&a)[4], float k, float v00, float v01, float v10, float v11)
{
    a[0] = fmaf(v00, k, a[0]);
    a[1] = fmaf(v01, k, a[1]);
    a[2] = fmaf(v10, k, a[2]);
    a[3] = fmaf(v11, k, a[3]);
}

% end
extern "C" __global__ void __launch_bounds__({{block}})
{{name}}(const float* __restrict__ in, float* __restrict__ out,
{{pad}} const float* __restrict__ w_arg, const float* __restrict__ b_arg, int n)
{
    // thread -> (image, output row, output column); {{P}} positions per image
    const int idx = blockIdx.x * {{block}} + threadIdx.x;
% if const then
    if (idx >= n * {{P}}) return;
    const int at = idx;
% else
    // threads past the batch still help stage weights, then store nothing
    const bool live = idx < n * {{P}};
    const int at = live ? idx : 0;
    __shared__ float ws[{{mu * CKK}}];
% end
    const int img = at / {{P}};
    const int pos = at - img * {{P}};
    const int row = pos / {{TW}};
    const int col = pos - row * {{TW}};
    const float* __restrict__ x = in + img * {{C * H * W}} + row * {{S * W}} + col * {{S}};
    float* __restrict__ y = out + img * {{M * P}} + pos;
    (void)w_arg;
    (void)b_arg;
% if hoist then

    // the {{C}}x{{PK}}x{{PK}} input patch, loaded once for all {{M}} maps
    float v[{{C}}][{{PK}}][{{PK}}];
#pragma unroll
    for (int c = 0; c < {{C}}; c++)
#pragma unroll
        for (int p = 0; p < {{PK}}; p++)
#pragma unroll
            for (int q = 0; q < {{PK}}; q++)
                v[c][p][q] = x[c * {{H * W}} + p * {{W}} + q];
% end
% local groups = M // mu
% if groups > 1 then

#pragma unroll 1
    for (int g = 0; g < {{M}}; g += {{mu}}) {
% else
    {
        const int g = 0;
% end
% if not const then
        __syncthreads();   // every thread is done with the previous group's weights
        for (int i = threadIdx.x; i < {{mu * CKK}}; i += {{block}}) ws[i] = w_arg[g * {{CKK}} + i];
        __syncthreads();
% end
% local ind = "        "
% for m = 0, mu - 1 do
%   if pooled then
        float a{{m}}[4] = {0.0f, 0.0f, 0.0f, 0.0f};
%   else
        float a{{m}} = 0.0f;
%   end
% end
% for c = 0, C - 1 do
%   local vc = hoist and ("v[" .. c .. "]") or "v"
%   if not hoist then
        {
            // channel {{c}}: its {{PK}}x{{PK}} patch
            float v[{{PK}}][{{PK}}];
#pragma unroll
            for (int p = 0; p < {{PK}}; p++)
#pragma unroll
                for (int q = 0; q < {{PK}}; q++)
                    v[p][q] = x[{{c * H * W}} + p * {{W}} + q];
%     ind = "            "
%   end
%   for m = 0, mu - 1 do
{{ind}}// map g+{{m}}, c={{c}}
%     for p = 0, K - 1 do
%       for q = 0, K - 1 do
%         local wi = m * CKK + c * K * K + p * K + q
%         local wx = (groups > 1 and const) and ("W(g * " .. CKK .. " + " .. wi .. ")") or ("W(" .. wi .. ")")
%         if pooled then
{{ind}}fma4(a{{m}}, {{wx}}, {{vc}}[{{p}}][{{q}}], {{vc}}[{{p}}][{{q + 1}}], {{vc}}[{{p + 1}}][{{q}}], {{vc}}[{{p + 1}}][{{q + 1}}]);
%         else
{{ind}}a{{m}} = fmaf({{vc}}[{{p}}][{{q}}], {{wx}}, a{{m}});
%         end
%       end
%     end
%   end
%   if not hoist then
        }
%     ind = "        "
%   end
% end

        // epilogue
% for m = 0, mu - 1 do
%   local val = pooled and ("fmaxf(fmaxf(a" .. m .. "[0], a" .. m .. "[1]), fmaxf(a" .. m .. "[2], a" .. m .. "[3]))") or ("a" .. m)
%   if bias then
%     val = val .. " + B(g + " .. m .. ")"
%   end
        {{const and "" or "if (live) "}}y[(g + {{m}}) * {{P}}] = {{act(val)}};
% end
    }
}
#undef W
% if bias then
#undef B
% end
]], "conv2d_direct")

function T.kernel(l, p)
  local pooled = l.pool == 2 and p.fuse == 1
  local CH, CW = l.H - l.K + 1, l.W - l.K + 1
  local OH, OW = CH, CW
  if pooled then OH, OW = CH // 2, CW // 2 end
  local PK = pooled and l.K + 1 or l.K
  local CKK = l.C * l.K * l.K
  local wbytes = 4 * (l.M * CKK + (l.bias and l.M or 0))
  -- constant memory indexed by the group counter turns into loads the compiler
  -- hoists far ahead (hundreds of live registers, then spills) once a group has
  -- more than ~256 weights; such layers stage each group in shared memory
  local const = wbytes <= l.const_left and p.maps_unroll * CKK <= CONST_GROUP_LIMIT
  local name = string.format("conv2d_direct_c%dm%dk%d_h%dw%d_%s%s_b%du%d",
    l.C, l.M, l.K, l.H, l.W, p.fuse == 1 and l.act or "none",
    pooled and "_pool2" or "", p.block, p.maps_unroll)
  local v = {
    name = name, pad = string.rep(" ", #name),
    block = p.block, mu = p.maps_unroll,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, CKK = CKK, PK = PK,
    P = OH * OW, TW = OW, S = pooled and 2 or 1,
    pooled = pooled, hoist = l.C * PK * PK <= HOIST_LIMIT,
    const = const, bias = l.bias,
    wsym = name .. "_w", bsym = name .. "_b",
    wsrc = const and (name .. "_w") or "w_arg",
    bsrc = const and (name .. "_b") or "b_arg",
    act = function(e) return common.act(p.fuse == 1 and l.act or "none", e) end,
  }
  return {
    name = name,
    source = source(v),
    grid = { common.batch_dim(OH * OW, p.block), 1, 1 },
    block = { p.block, 1, 1 },
    shared = 0,   -- dynamic shared memory; the staged weights are static
    const_bytes = const and wbytes or 0,
    weights = const and ("const:" .. v.wsym) or "arg",
    bias = (not l.bias) and "none" or (const and ("const:" .. v.bsym) or "arg"),
    out_elems = l.M * OH * OW,
    shape = string.format("C=%d H=%d W=%d -> M=%d K=%d%s -> %dx%dx%d",
      l.C, l.H, l.W, l.M, l.K,
      pooled and (", " .. l.act .. ", max-pool 2x2") or (p.fuse == 1 and (", " .. l.act) or ""),
      l.M, OH, OW),
    fused = p.fuse == 1,
  }
end

return T
