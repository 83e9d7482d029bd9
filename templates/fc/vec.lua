-- fc_vec.lua — fully connected layer as a register-tiled matrix product with
-- vector loads and a register-prefetched pipeline.
--
-- out[i][o] = act(sum_k x[i][k] * w[o][k] + b[o]). A block computes a BM x BN
-- tile (BM images, BN outputs); each thread a TM x TN sub-tile held in
-- registers, its operands read from shared memory as float4. Global loads are
-- float4 along k (float2 where IN is a multiple of 2 only, single floats where
-- it is odd: a row must start aligned to the load) and the next BK slice is fetched
-- into registers while the current one is multiplied, so the loads' latency
-- hides behind the arithmetic. Shared rows are padded by 4 floats: float4
-- reads stay aligned and the transposing stores spread over the banks.
--
-- split > 1 (sm_90 and later): the reduction is cut into `split` ranges of whole
-- slices, one per block of a thread-block cluster (grid z). Each block leaves
-- its partial tile in its shared memory; block 0 of the cluster adds the
-- others' tiles through distributed shared memory, always in rank order (the
-- sums do not depend on scheduling), then applies bias and activation. Tall,
-- narrow products (10,000 images x 140 outputs, 10,816 deep) otherwise fill
-- the card with too few tiles, or leave most of a last wave idle.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "register-tiled matrix product, vector loads, prefetch"

local width = common.fc.width

-- bn's default: the tile of outputs a product of this many outputs takes.
local function default_bn(l) return l.out >= 64 and 64 or 16 end

-- bk's default: 8 with single-float loads (a 16-deep slice's prefetch took 221
-- registers on sm_90 and spilled on sm_120 in the default tile), else 16.
local function default_bk(l) return width(l) == 1 and 8 or 16 end

T.params = {
  { name = "bm", doc = "images per block tile", legal = function(_) return { 32, 64, 128 } end,
    default = function(_) return 128 end },
  { name = "bn", doc = "outputs per block tile", legal = function(_) return { 16, 32, 64, 128 } end,
    default = default_bn },
  { name = "bk", doc = "reduction slice staged in shared memory", legal = function(_) return { 8, 16, 32 } end,
    default = default_bk },
  { name = "tm", doc = "images per thread", legal = function(_) return { 4, 8 } end,
    default = function(_) return 8 end },
  { name = "tn", doc = "outputs per thread", legal = function(_) return { 4, 8 } end,
    default = function(l) return l.out >= 64 and 8 or 4 end },
  { name = "split", doc = "blocks of a cluster sharing one tile's reduction (sm_90+)",
    legal = function(l)
      if l.target and l.target.cc and l.target.cc >= 90 then return { 1, 2, 4, 8 } end
      return { 1 }
    end,
    -- default: none before sm_90, nor where the default tiles are more than
    -- 128 (about one an SM); with fewer (a tall, narrow product: 10,000 images
    -- into 10 outputs are 79 tiles of 128 images), the fewest blocks a tile
    -- that make 512 blocks in all, each keeping 16 slices (of the default bk) or
    -- more (363 to 1,089 odd inputs into 10 outputs: 1.6-2.7x faster than
    -- split=1, 1.1-1.6x than counting 16-deep slices; an H100, 2026-11-26). Measured on
    -- an H100 (2026-11-26, bench/journal/2026-11.md): split=8 ran 18,032-45,000
    -- inputs into 10 outputs 2.4-2.5x faster than split=1; on 395 tiles
    -- (10,816 and 17,496 inputs into 140 and 160 outputs) split=4 lost 9-10 %.
    default = function(l)
      if not (l.target and l.target.cc and l.target.cc >= 90) then return 1 end
      local tiles = common.ceil_div(common.cost.images(l), 128) * common.ceil_div(l.out, default_bn(l))
      if tiles > 128 then return 1 end
      local slices, split = common.ceil_div(l.C * l.H * l.W, default_bk(l)), 1
      while split < 8 and tiles * split < 512 and slices // (2 * split) >= 16 do split = split * 2 end
      return split
    end },
}

-- Phases of a split's exchange: the partial tile (bm*bn floats) goes through
-- shared memory in as few equal parts as fit beside the staged slices.
local function phases(p)
  local left = common.MAX_SHARED // 4 - p.bk * (p.bm + p.bn + 8)
  local ph = 1
  while ph < p.tm * p.tn and p.bm * p.bn // ph > left do ph = ph * 2 end
  return ph
end

-- Floats of shared memory a block needs: the staged slices, and with a split
-- the part of the partial tile one exchange phase moves.
local function smem_floats(p)
  return p.bk * (p.bm + p.bn + 8) + (p.split > 1 and p.bm * p.bn // phases(p) or 0)
end

function T.check(l, p)
  local IN = l.C * l.H * l.W
  if width(l) == 1 and p.bk > 16 then
    return string.format("bk=%d: with single-float loads (%d inputs, odd) a slice's prefetch needs too many registers; "
      .. "at most 16", p.bk, IN), "bk"
  end
  if p.split > 1 and common.ceil_div(IN, p.bk) < 2 * p.split then
    return string.format("split=%d leaves fewer than two %d-deep slices per block of %d inputs",
      p.split, p.bk, IN), "split"
  end
  return common.fc.check(p, smem_floats(p))
end

-- The cost model: common.fc.cost, loads width(l) floats wide, the next slice prefetched.
function T.cost(l, p)
  return common.fc.cost(l, p, smem_floats(p), width(l), 2)
end

local source = engine.compile([[
{{head}}
{
    // x: n x {{IN}} (row-major), w: {{OUT}} x {{IN}}, out: n x {{OUT}}
    __shared__ __align__(16) {{acc_t}} xs[{{BK}}][{{BM + 4}}];
    __shared__ __align__(16) {{acc_t}} ws[{{BK}}][{{BN + 4}}];
    const int tid = threadIdx.x;
    const int tx = tid % {{BN // TN}};   // this thread's outputs: COL(0..{{TN - 1}})
    const int ty = tid / {{BN // TN}};   // this thread's images: ROW(0..{{TM - 1}})
    // a thread's rows (columns) come in groups of four, one group in each
    // {{BM // (TM // 4)}}-row ({{BN // (TN // 4)}}-column) band of the tile: a warp's float4
    // reads of one k then cover adjacent words, without bank conflicts
#define ROW(i) (((i) / 4) * {{BM // (TM // 4)}} + ty * 4 + (i) % 4)
#define COL(j) (((j) / 4) * {{BN // (TN // 4)}} + tx * 4 + (j) % 4)
    const int i0 = blockIdx.x * {{BM}};
    const int o0 = blockIdx.y * {{BN}};
% if SPLIT > 1 then
    // this block's share of the reduction: slices [rank*{{SPR}}, rank*{{SPR}} + {{SPR}})
    const int rank = blockIdx.z;          // == its rank in the (1, 1, {{SPLIT}}) cluster
    const int kbeg = rank * {{SPR * BK}};
    const int kend = min(kbeg + {{SPR * BK}}, {{IN}});
% else
    const int kbeg = 0, kend = {{IN}};
% end
% if not bias then
    (void)b;
% end
    // one {{VT}} of x per (row, k/{{V}}) slot: {{XL}} slot(s) per thread, {{WL}} of w
    {{VT}} xr[{{XL}}], wr[{{WL}}];
    const {{VT}} zero = {{zero}};
#define FETCH(k0)                                                                  \
    do {                                                                           \
        _Pragma("unroll") for (int s = 0; s < {{XL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // V}}, k = (e % {{BK // V}}) * {{V}}; \
            const int gi = i0 + r, gk = (k0) + k;                                  \
            xr[s] = (e < {{BM * BK // V}} && gi < n && gk < {{IN}})                 \
                        ? *reinterpret_cast<const {{VT}}*>(in + gi * {{IN}} + gk) : zero; \
        }                                                                          \
        _Pragma("unroll") for (int s = 0; s < {{WL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // V}}, k = (e % {{BK // V}}) * {{V}}; \
            const int go = o0 + r, gk = (k0) + k;                                  \
            wr[s] = (e < {{BN * BK // V}} && go < {{OUT}} && gk < {{IN}})           \
                        ? *reinterpret_cast<const {{VT}}*>(w + go * {{IN}} + gk) : zero; \
        }                                                                          \
    } while (0)
#define STAGE()                                                                    \
    do {                                                                           \
        _Pragma("unroll") for (int s = 0; s < {{XL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // V}}, k = (e % {{BK // V}}) * {{V}}; \
            if (e < {{BM * BK // V}}) {                                             \
% if V == 4 then
                xs[k][r] = {{to_acc("xr[s].x")}}; xs[k + 1][r] = {{to_acc("xr[s].y")}};                        \
                xs[k + 2][r] = {{to_acc("xr[s].z")}}; xs[k + 3][r] = {{to_acc("xr[s].w")}};                    \
% else
                {{store("xs", "xr")}}                                              \
% end
            }                                                                      \
        }                                                                          \
        _Pragma("unroll") for (int s = 0; s < {{WL}}; s++) {                       \
            const int e = tid + s * {{threads}}, r = e / {{BK // V}}, k = (e % {{BK // V}}) * {{V}}; \
            if (e < {{BN * BK // V}}) {                                             \
% if V == 4 then
                ws[k][r] = {{w_to_acc("wr[s].x")}}; ws[k + 1][r] = {{w_to_acc("wr[s].y")}};                        \
                ws[k + 2][r] = {{w_to_acc("wr[s].z")}}; ws[k + 3][r] = {{w_to_acc("wr[s].w")}};                    \
% else
                {{store("ws", "wr")}}                                              \
% end
            }                                                                      \
        }                                                                          \
    } while (0)

    {{acc_t}} acc[{{TM}}][{{TN}}];
#pragma unroll
    for (int i = 0; i < {{TM}}; i++)
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) acc[i][j] = 0.0f;

    FETCH(kbeg);
#pragma unroll 1
    for (int k0 = kbeg; k0 < kend; k0 += {{BK}}) {
        __syncthreads();                  // the previous slice is no longer read
        STAGE();
        __syncthreads();
        if (k0 + {{BK}} < kend) FETCH(k0 + {{BK}});   // next slice in flight during the products
#pragma unroll
        for (int k = 0; k < {{BK}}; k++) {
            {{acc_t}} a[{{TM}}], c[{{TN}}];
#pragma unroll
            for (int i = 0; i < {{TM}}; i += 4)
                *reinterpret_cast<{{vec_t(acc_t, 4)}}*>(&a[i]) = *reinterpret_cast<const {{vec_t(acc_t, 4)}}*>(&xs[k][ROW(i)]);
#pragma unroll
            for (int j = 0; j < {{TN}}; j += 4)
                *reinterpret_cast<{{vec_t(acc_t, 4)}}*>(&c[j]) = *reinterpret_cast<const {{vec_t(acc_t, 4)}}*>(&ws[k][COL(j)]);
#pragma unroll
            for (int i = 0; i < {{TM}}; i++)
#pragma unroll
                for (int j = 0; j < {{TN}}; j++) acc[i][j] = fmaf(a[i], c[j], acc[i][j]);
        }
    }
#undef FETCH
#undef STAGE
% if SPLIT > 1 then

#if defined(CG_EMULATION)
    // the CPU emulation (tests/test_emulate.c) runs a cluster's blocks one after another, its
    // last rank first: ranks 1.. leave their partial tiles in one static array, rank 0 adds
    // them in rank order
    static {{acc_t}} part_emu[{{SPLIT}}][{{TM * TN}}][{{threads}}];
    if (rank != 0) {
        for (int v = 0; v < {{TM * TN}}; v++) part_emu[rank][v][tid] = acc[v / {{TN}}][v % {{TN}}];
        return;
    }
    for (int r = 1; r < {{SPLIT}}; r++)
        for (int v = 0; v < {{TM * TN}}; v++) acc[v / {{TN}}][v % {{TN}}] += part_emu[r][v][tid];
#else
    // the cluster's reduction, in {{PH}} phase(s) of {{VP}} values per thread: ranks 1..
    // publish, rank 0 adds them in rank order, and no block moves on (or leaves)
    // while rank 0 still reads its shared memory
    __shared__ __align__(16) {{acc_t}} part[{{VP}}][{{threads}}];
    const unsigned mine = (unsigned)__cvta_generic_to_shared(&part[0][tid]);
#pragma unroll
    for (int ph = 0; ph < {{PH}}; ph++) {
        if (rank != 0) {
#pragma unroll
            for (int v = 0; v < {{VP}}; v++) part[v][tid] = acc[(ph * {{VP}} + v) / {{TN}}][(ph * {{VP}} + v) % {{TN}}];
        }
        asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
        if (rank == 0) {
#pragma unroll 1
            for (int r = 1; r < {{SPLIT}}; r++) {
                unsigned theirs;
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(r));
#pragma unroll
% -- the partial sums are acc_t, FP32: ld.shared::cluster.f32 and "=f" read them
                for (int v = 0; v < {{VP}}; v++) {
                    {{acc_t}} x;
                    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x)
                                 : "r"(theirs + (unsigned)(v * {{threads}} * 4)) : "memory");
                    acc[(ph * {{VP}} + v) / {{TN}}][(ph * {{VP}} + v) % {{TN}}] += x;
                }
            }
        }
        asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    }
    if (rank != 0) return;
#endif
% end

#pragma unroll
    for (int i = 0; i < {{TM}}; i++) {
        const int gi = i0 + ROW(i);
        if (gi >= n) continue;
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) {
            const int go = o0 + COL(j);
            if (go < {{OUT}}) out[gi * {{OUT}} + go] = {{from_acc(act(bias and ("acc[i][j] + " .. w_to_acc("b[go]")) or "acc[i][j]"))}};
        }
    }
#undef ROW
#undef COL
}
]], "fc_vec")

function T.kernel(l, p)
  local threads = common.fc.threads(p)
  local V = width(l)
  -- x and w go through the same V-wide registers: one element type for both
  local ty = common.types(l)
  if ty.in_t ~= ty.w_t then error("fc_vec loads inputs and weights of one element type", 2) end
  local VT = common.vec_t(ty.in_t, V)
  return common.fc.kernel(l, p, "vec", source, {
    V = V, VT = VT,
    zero = common.vec_zero(ty.in_t, V),
    -- the V floats (1 or 2) of register slot s into rows k .. k+V-1 of shared array a
    -- (converted to acc_t)
    store = function(a, r)
      local cv = a == "xs" and ty.to_acc or ty.w_to_acc
      if V == 1 then return string.format("%s[k][r] = %s;", a, cv(r .. "[s]")) end
      return string.format("%s[k][r] = %s; %s[k + 1][r] = %s;", a, cv(r .. "[s].x"), a, cv(r .. "[s].y"))
    end,
    XL = common.ceil_div(p.bm * p.bk // V, threads), WL = common.ceil_div(p.bn * p.bk // V, threads),
    SPLIT = p.split, SPR = common.ceil_div(common.ceil_div(l.C * l.H * l.W, p.bk), p.split),
    PH = phases(p), VP = p.tm * p.tn // phases(p),
  })
end

return T
