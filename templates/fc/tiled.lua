-- fc_tiled.lua — fully connected layer as a register-tiled matrix product.
--
-- out[i][o] = act(sum_k x[i][k] * w[o][k] + b[o]) for the n images i of the batch:
-- a product of the n x IN activations by the transposed OUT x IN weights. A block
-- computes a BM x BN tile (BM images, BN outputs), staging BK-wide slices of both
-- operands in shared memory (transposed, so the inner loop reads them with unit
-- stride); each thread accumulates a TM x TN sub-tile in registers. IN and OUT
-- are literals, so bounds checks on them vanish when the tiles divide them.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "register-tiled matrix product with bias and activation"

T.params = {
  { name = "bm", doc = "images per block tile", legal = function(_) return { 16, 32, 64, 128 } end,
    default = function(l) return l.out >= 64 and 64 or 128 end },
  { name = "bn", doc = "outputs per block tile", legal = function(_) return { 8, 16, 32, 64, 128 } end,
    default = function(l) return l.out >= 64 and 64 or 16 end },
  { name = "bk", doc = "reduction slice staged in shared memory", legal = function(_) return { 8, 16, 32 } end,
    default = function(_) return 16 end },
  { name = "tm", doc = "images per thread", legal = function(_) return { 1, 2, 4, 8 } end,
    default = function(_) return 4 end },
  { name = "tn", doc = "outputs per thread", legal = function(_) return { 1, 2, 4, 8 } end,
    default = function(l) return l.out >= 64 and 4 or 2 end },
}

function T.check(_, p)
  local msg, param = common.fc.check(p, p.bk * (p.bm + p.bn + 2))
  if msg then return msg, param end
  local threads = common.fc.threads(p)
  if (p.bm * p.bk) % threads ~= 0 or (p.bn * p.bk) % threads ~= 0 then
    return string.format("bm*bk and bn*bk must be multiples of the %d threads", threads), "bk"
  end
  return nil
end

-- The cost model: common.fc.cost, scalar loads; shared memory as the kernel declares it.
function T.cost(l, p)
  return common.fc.cost(l, p, p.bk * (p.bm + p.bn + 2), 1, 1)
end

local source = engine.compile([[
{{head}}
{
    // x: n x {{IN}} (row-major), w: {{OUT}} x {{IN}}, out: n x {{OUT}}
    __shared__ {{acc_t}} xs[{{BK}}][{{BM + 1}}];
    __shared__ {{acc_t}} ws[{{BK}}][{{BN + 1}}];
    const int tid = threadIdx.x;
    const int tx = tid % {{BN // TN}};   // output column group
    const int ty = tid / {{BN // TN}};   // image row group
    const int i0 = blockIdx.x * {{BM}};
    const int o0 = blockIdx.y * {{BN}};
% if not bias then
    (void)b;
% end
    {{acc_t}} acc[{{TM}}][{{TN}}];
#pragma unroll
    for (int i = 0; i < {{TM}}; i++)
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) acc[i][j] = 0.0f;

#pragma unroll 1
    for (int k0 = 0; k0 < {{IN}}; k0 += {{BK}}) {
        // stage x[i0 .. i0+{{BM - 1}}][k0 .. k0+{{BK - 1}}] and w[o0 ..][k0 ..], coalesced along k
#pragma unroll
        for (int e = tid; e < {{BM * BK}}; e += {{threads}}) {
            const int r = e / {{BK}}, k = e % {{BK}};
            const int gi = i0 + r, gk = k0 + k;
            xs[k][r] = (gi < n && gk < {{IN}}) ? {{to_acc("in[gi * " .. IN .. " + gk]")}} : 0.0f;
        }
#pragma unroll
        for (int e = tid; e < {{BN * BK}}; e += {{threads}}) {
            const int r = e / {{BK}}, k = e % {{BK}};
            const int go = o0 + r, gk = k0 + k;
            ws[k][r] = (go < {{OUT}} && gk < {{IN}}) ? {{w_to_acc("w[go * " .. IN .. " + gk]")}} : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < {{BK}}; k++) {
            {{acc_t}} xr[{{TM}}], wr[{{TN}}];
#pragma unroll
            for (int i = 0; i < {{TM}}; i++) xr[i] = xs[k][ty + i * {{BM // TM}}];
#pragma unroll
            for (int j = 0; j < {{TN}}; j++) wr[j] = ws[k][tx + j * {{BN // TN}}];
#pragma unroll
            for (int i = 0; i < {{TM}}; i++)
#pragma unroll
                for (int j = 0; j < {{TN}}; j++) acc[i][j] = fmaf(xr[i], wr[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < {{TM}}; i++) {
        const int gi = i0 + ty + i * {{BM // TM}};
        if (gi >= n) continue;
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) {
            const int go = o0 + tx + j * {{BN // TN}};
            if (go < {{OUT}}) out[gi * {{OUT}} + go] = {{from_acc(act(bias and ("acc[i][j] + " .. w_to_acc("b[go]")) or "acc[i][j]"))}};
        }
    }
}
]], "fc_tiled")

function T.kernel(l, p)
  return common.fc.kernel(l, p, "tiled", source)
end

return T
