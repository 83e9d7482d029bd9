-- fc_vec.lua — fully connected layer as a register-tiled matrix product with
-- 16-byte loads and a register-prefetched pipeline.
--
-- out[i][o] = act(sum_k x[i][k] * w[o][k] + b[o]). A block computes a BM x BN
-- tile (BM images, BN outputs); each thread a TM x TN sub-tile held in
-- registers, its operands read from shared memory as float4. Global loads are
-- float4 along k (IN must be a multiple of 4) and the next BK slice is fetched
-- into registers while the current one is multiplied, so the loads' latency
-- hides behind the arithmetic. Shared rows are padded by 4 floats: float4
-- reads stay aligned and the transposing stores spread over the banks.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "register-tiled matrix product, float4 loads, prefetch"

T.params = {
  { name = "bm", doc = "images per block tile", legal = function(_) return { 32, 64, 128 } end,
    default = function(_) return 128 end },
  { name = "bn", doc = "outputs per block tile", legal = function(_) return { 16, 32, 64, 128 } end,
    default = function(l) return l.out >= 64 and 64 or 16 end },
  { name = "bk", doc = "reduction slice staged in shared memory", legal = function(_) return { 8, 16, 32 } end,
    default = function(_) return 16 end },
  { name = "tm", doc = "images per thread", legal = function(_) return { 4, 8 } end,
    default = function(_) return 8 end },
  { name = "tn", doc = "outputs per thread", legal = function(_) return { 4, 8 } end,
    default = function(l) return l.out >= 64 and 8 or 4 end },
}

function T.check(l, p)
  local IN = l.C * l.H * l.W
  if IN % 4 ~= 0 then return "the vec strategy needs an input size divisible by 4 (got " .. IN .. ")", nil end
  return common.fc.check(p, p.bk * (p.bm + p.bn + 8))
end

local source = engine.compile([[
{{head}}
{
    // x: n x {{IN}} (row-major), w: {{OUT}} x {{IN}}, out: n x {{OUT}}
    __shared__ __align__(16) float xs[{{BK}}][{{BM + 4}}];
    __shared__ __align__(16) float ws[{{BK}}][{{BN + 4}}];
    const int tid = threadIdx.x;
    const int tx = tid % {{BN // TN}};   // this thread's outputs: tx*{{TN}} ..
    const int ty = tid / {{BN // TN}};   // this thread's images: ty*{{TM}} ..
    const int i0 = blockIdx.x * {{BM}};
    const int o0 = blockIdx.y * {{BN}};
% if not bias then
    (void)b;
% end
    // one float4 of x per (row, k/4) slot: {{XL}} slot(s) per thread, {{WL}} of w
    float4 xr[{{XL}}], wr[{{WL}}];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#define FETCH(k0)                                                                  \
    do {                                                                           \
        _Pragma("unroll") for (int s = 0; s < {{XL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // 4}}, k = (e % {{BK // 4}}) * 4; \
            const int gi = i0 + r, gk = (k0) + k;                                  \
            xr[s] = (e < {{BM * BK // 4}} && gi < n && gk < {{IN}})                 \
                        ? *reinterpret_cast<const float4*>(in + gi * {{IN}} + gk) : zero; \
        }                                                                          \
        _Pragma("unroll") for (int s = 0; s < {{WL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // 4}}, k = (e % {{BK // 4}}) * 4; \
            const int go = o0 + r, gk = (k0) + k;                                  \
            wr[s] = (e < {{BN * BK // 4}} && go < {{OUT}} && gk < {{IN}})           \
                        ? *reinterpret_cast<const float4*>(w + go * {{IN}} + gk) : zero; \
        }                                                                          \
    } while (0)
#define STAGE()                                                                    \
    do {                                                                           \
        _Pragma("unroll") for (int s = 0; s < {{XL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // 4}}, k = (e % {{BK // 4}}) * 4; \
            if (e < {{BM * BK // 4}}) {                                             \
                xs[k][r] = xr[s].x; xs[k + 1][r] = xr[s].y;                        \
                xs[k + 2][r] = xr[s].z; xs[k + 3][r] = xr[s].w;                    \
            }                                                                      \
        }                                                                          \
        _Pragma("unroll") for (int s = 0; s < {{WL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // 4}}, k = (e % {{BK // 4}}) * 4; \
            if (e < {{BN * BK // 4}}) {                                             \
                ws[k][r] = wr[s].x; ws[k + 1][r] = wr[s].y;                        \
                ws[k + 2][r] = wr[s].z; ws[k + 3][r] = wr[s].w;                    \
            }                                                                      \
        }                                                                          \
    } while (0)

    float acc[{{TM}}][{{TN}}];
#pragma unroll
    for (int i = 0; i < {{TM}}; i++)
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) acc[i][j] = 0.0f;

    FETCH(0);
#pragma unroll 1
    for (int k0 = 0; k0 < {{IN}}; k0 += {{BK}}) {
        __syncthreads();                  // the previous slice is no longer read
        STAGE();
        __syncthreads();
        if (k0 + {{BK}} < {{IN}}) FETCH(k0 + {{BK}});   // next slice in flight during the products
#pragma unroll
        for (int k = 0; k < {{BK}}; k++) {
            float a[{{TM}}], c[{{TN}}];
#pragma unroll
            for (int i = 0; i < {{TM}}; i += 4)
                *reinterpret_cast<float4*>(&a[i]) = *reinterpret_cast<const float4*>(&xs[k][ty * {{TM}} + i]);
#pragma unroll
            for (int j = 0; j < {{TN}}; j += 4)
                *reinterpret_cast<float4*>(&c[j]) = *reinterpret_cast<const float4*>(&ws[k][tx * {{TN}} + j]);
#pragma unroll
            for (int i = 0; i < {{TM}}; i++)
#pragma unroll
                for (int j = 0; j < {{TN}}; j++) acc[i][j] = fmaf(a[i], c[j], acc[i][j]);
        }
    }
#undef FETCH
#undef STAGE

#pragma unroll
    for (int i = 0; i < {{TM}}; i++) {
        const int gi = i0 + ty * {{TM}} + i;
        if (gi >= n) continue;
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) {
            const int go = o0 + tx * {{TN}} + j;
            if (go < {{OUT}}) out[gi * {{OUT}} + go] = {{act(bias and "acc[i][j] + b[go]" or "acc[i][j]")}};
        }
    }
}
]], "fc_vec")

function T.kernel(l, p)
  local threads = common.fc.threads(p)
  return common.fc.kernel(l, p, "vec", source, {
    XL = common.ceil_div(p.bm * p.bk // 4, threads), WL = common.ceil_div(p.bn * p.bk // 4, threads),
  })
end

return T
