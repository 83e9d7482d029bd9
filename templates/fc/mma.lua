-- fc_mma.lua — a fully connected layer as a plain matrix product on Hopper's warpgroup
-- tensor cores (`strategy: mma`; bf16, fp16 or FP32 tensors, sm_90 built as sm_90a).
--
-- out[i][o] = act(sum_k x[i][k] * w[o][k] + b[o]): the images are wgmma's M (64 rows a
-- warpgroup, bm a block), the outputs its N (bn a block), the inputs its K (a k16 step of
-- 16-bit values, a k8 step of TF32 ones: 32 bytes of a row either way). Both operands are
-- K-major as they lie in memory (x: n x IN, w: OUT x IN, rows of 16-byte chunks of 8
-- 16-bit or 4 FP32 inputs), so a block copies them by 16-byte cp.async straight into the
-- swizzled layout wgmma reads (below): nothing goes through registers. (fc_wg runs the fc
-- as conv2d_igemm_wg's 1x1 convolution, whose operands are gathered, packed and stored by
-- every thread: 33-112 TFLOP/s on seven layers on an H200 in bf16, where PyTorch's cuBLAS
-- ran zoo-mlp's at about 530 TFLOP/s; this template 199-520 TFLOP/s on the same layers,
-- bench/RESULTS.md, "fc_mma fed faster"; its first version, copying into the no-swizzle
-- layout behind the products, 67-167. In FP32 40-81 TFLOP/s at 10,000 images, 1.3-2.0x
-- cuBLAS's FP32 GEMM: "fc_mma in FP32".)
--
-- How the products are taken (mode): 16-bit values as stored, one m64nNk16 product a step;
-- FP32 values by 3xTF32 (a = ah + al, ah the top 19 bits the tensor cores read, al the exact
-- remainder: al*bh + ah*bl + ah*bh, three m64nNk8 products a step): once a stage's copies have
-- landed, the thread that copied a chunk writes its four remainders at the same place of one
-- of two remainder buffers (the stage's own parity), and the stage's products go into
-- accumulators of their own (sl, small terms first), added to the running sum once they land
-- (the tensor cores' additions drop low bits); precision tf32: the thread rounds its chunks
-- in place (cvt.rna.tf32.f32), one m64nNk8 product a step into the running sum.
--
-- Shared memory (1,024-byte aligned): a ring of st stages, each bk inputs deep: the x tile
-- then the w tile, each as panels of [rows][pw] values (128-byte rows: 64 16-bit or 32 FP32
-- inputs; 64-byte where a stage's rows are 64 bytes) in wgmma's 128-byte (64-byte) swizzle:
-- row r's 16-byte chunk c at r*128 + (c ^ (r % 8))*16 (r*64 + (c ^ (r / 2 % 4))*16); eight
-- rows are an atom, the stride offset; under 3xTF32 two more stages' worth of remainders
-- after the ring. A warp's copy is 32 chunks of whole rows (4 rows of 128 bytes, or 8 of
-- 64): each row one piece of global memory, each 128 bytes of the atom written by 8 lanes
-- in 8 distinct bank groups (4 wavefronts for 512 bytes), and half the L1 requests of
-- copying 8 rows x 4 chunks of 64-input rows.
-- Rows past the batch or the outputs, and chunks past IN, are zero-filled (cp.async with a
-- source size of 0).
--
-- The loop: stages 0 .. st-3 copied first; for stage s, its copies awaited (this
-- thread's; then its split or rounding; then a barrier for everyone's), its products issued,
-- then stage s + st - 2 copied into the buffer stage s - 2 used (every warpgroup waited for
-- s - 2's products before the barrier), then a wait for stage s - 1's products (one group
-- in flight; 3xTF32 waits for stage s's, to add them): the tensor cores start on s while the
-- copies are issued. Blocks run the outputs' tiles of one image tile next to each other (the
-- block index's remainder by the output tiles), so the image tile is read from DRAM once and
-- the weights stay in L2. With split > 1 the blocks of a (1, 1, split) cluster take
-- consecutive shares of the stages; ranks 1.. leave their partial sums in their ring, rank 0
-- adds them in rank order through distributed shared memory (sums independent of
-- scheduling) and alone runs the epilogue. Epilogue: bias (loaded once for a thread's two
-- rows) and activation from the accumulators, a thread's two neighbouring outputs of a row
-- stored as one word (4 bytes of 16-bit outputs, 8 of FP32 ones: a 16-bit layer writing the
-- network's output writes FP32) where OUT is even, one by one where it is odd. Without
-- sm_90a (the CPU emulation of test_emulate) the accumulators add the staged values by
-- FMAs, in FP32, reading the swizzled layout (3xTF32: the truncated parts and remainders
-- as the tensor cores read them).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.doc = "the fc as a matrix product on warpgroup tensor cores, both operands copied by cp.async into shared "
  .. "memory (bf16/fp16; FP32 as 3xTF32; sm_90 as sm_90a)"

local function inputs(l) return l.C * l.H * l.W end

-- How the layer's operands are multiplied: "half" (bf16 or fp16 as stored, one m64nNk16
-- product), "x3" (FP32, 3xTF32: three m64nNk8 TF32 products of each value's truncated part
-- and remainder) or "tf32" (precision tf32: each value rounded to TF32 once, one product);
-- nil where the input and the weights differ in type (mixed-precision layers).
local function mode(l)
  local t = common.types(l)
  if t.in_t ~= t.w_t then return nil end
  if common.half_dtype(l) then return "half" end
  if t.in_t ~= "float" then return nil end
  return l.precision == "tf32" and "tf32" or "x3"
end

-- bytes an element of the staged operands
local function esize(l) return mode(l) == "half" and 2 or 4 end

-- shared memory: the ring's st stages, under 3xTF32 two more stages' worth of remainders
-- (a stage's remainders written while the other pair is read), and the alignment's 1,024
local function smem(l, p)
  local stage = (p.bm + p.bn) * p.bk * esize(l)
  return (p.st + (mode(l) == "x3" and 2 or 0)) * stage + 1024
end

-- accumulators a thread: bn / 2 a set, 3xTF32's second set for a stage's products
local function accs(l, p) return (p.bn // 2) * (mode(l) == "x3" and 2 or 1) end

-- a block's threads: a warpgroup for each 64 images
local function threads_of(p) return 128 * (p.bm // 64) end

-- the registers a thread may take besides 8 of headroom: the 65,536 of an SM for one block,
-- 232 at most (ptxas's 255 less headroom); a thread wants its accumulators and about 40 more
local function reg_cap(p) return math.min(232, 65536 // threads_of(p) - 8) end

-- The cost model: each SM's share of the blocks (common.cost.spread), each block the
-- larger of its products at the dense 16-bit rate (16 FP32 FMAs' worth a lane a clock;
-- TF32 half that, 3xTF32 three products) and its copies at 64 bytes a clock from L2, plus
-- a pipeline's fill (st memory round trips) a block.
function T.cost(l, p)
  local IN = inputs(l)
  local blocks = common.ceil_div(common.cost.images(l), p.bm) * common.ceil_div(l.out, p.bn)
  local seq, conc = common.cost.spread(l, blocks, threads_of(p), accs(l, p) + 40, smem(l, p))
  if conc == 0 then return math.huge end
  local kp = common.ceil_div(IN, p.bk) * p.bk
  local rate = ({ half = 16, tf32 = 8, x3 = 8 / 3 })[mode(l) or "x3"]
  local tensor = p.bm * p.bn * kp / (rate * common.cost.FMA_PER_CLOCK)
  local copy = (p.bm + p.bn) * kp * esize(l) / 64
  return seq * (math.max(tensor, copy) + common.cost.LATENCY * 2) + common.cost.LATENCY * p.st / conc
end

-- The default tile: of bm 64 or 128 images and bn 64 to 256 outputs (a multiple of 16
-- covering up to OUT), four stages of 128-byte rows (64 16-bit inputs, 32 FP32), the one the
-- cost model puts lowest of those that fit. FP32 at the large batch (more than 1,024 images)
-- in a tile smaller than 128 x 128: 16-deep stages, a ring half the size, so more blocks an SM
-- (on an H200, 2026-11-29, 10,000 images: 3-26 % faster on seven FP32 layers whose default tile
-- is 64 x 64 or 128 x 64, 3-5 % slower on two of 128 x 128; bench/RESULTS.md, "fc_mma in FP32").

local function default_tile(l)
  local best, best_cost
  local top = math.min(256, common.ceil_div(l.out, 16) * 16)
  for _, bm in ipairs({ 128, 64 }) do
    for _, bn in ipairs({ 256, 192, 128, 96, 64 }) do
      if bn <= math.max(top, 64) then
        local p = { bm = bm, bn = bn, bk = 128 // esize(l), st = 4 }
        local c = T.cost(l, p)
        if smem(l, p) > common.max_shared(l) or accs(l, p) + 40 > reg_cap(p) then c = math.huge end
        if not best or c < best_cost then best, best_cost = p, c end
      end
    end
    if top < 64 then break end
  end
  if esize(l) == 4 and common.cost.images(l) > 1024 and best.bm * best.bn < 128 * 128 then best.bk = 16 end
  return best
end

local tile = common.per_layer(default_tile)

-- split's default: 1, or where the default tile's blocks fill at most half the block slots
-- of the card (the target's SMs, 100 when unknown, times the blocks an SM holds at once)
-- the fewest blocks a tile (up to 8, a portable cluster) that fill more than half, each
-- keeping SPLIT_MIN_STAGES stages or more: a block's stages run one after another, each
-- waiting on its copies, so a deep reduction over few blocks is bound by their latency. On an
-- H200 (2026-11-29, FP32, 256 and 1,000 images) splits of 2-8 ran twelve layers 1.5-6.6x faster
-- than none where the blocks were 4-64; with 128 blocks of 128 x 128 (one an SM) a split of 2
-- lost 5-20 %, with 128 of 64 x 64 (two an SM) it gained 1.15-1.5x. 16-bit layers at the large
-- batch, timed without a split, keep none.
T.SPLIT_MIN_STAGES = 8

local function default_split(l)
  if esize(l) == 2 and not (l.batch and l.batch > 0) then return 1 end
  local p = tile(l)
  local t = l.target or {}
  local sms = (t.sms and t.sms > 0) and t.sms or 100
  local blocks = common.ceil_div(common.cost.images(l), p.bm) * common.ceil_div(l.out, p.bn)
  local _, per = common.cost.spread(l, math.huge, threads_of(p), accs(l, p) + 40, smem(l, p))
  local slots = math.max(per, 1) * sms
  local NK, split = common.ceil_div(inputs(l), p.bk), 1
  while split < 8 and 2 * blocks * split <= slots and NK // (2 * split) >= T.SPLIT_MIN_STAGES do split = split * 2 end
  return split
end

T.params = {
  { name = "bm", doc = "images per block: wgmma's M, 64 a warpgroup",
    legal = function(_) return { 128, 64, 192, 256 } end,
    default = function(l) return tile(l).bm end },
  { name = "bn", doc = "outputs per block: wgmma's N, a multiple of 8 up to 256",
    legal = function(_) return { 256, 128, 64, 192, 96, 32, 160, 224, 16 } end,
    default = function(l) return tile(l).bn end },
  { name = "bk", doc = "inputs a stage, rows of 64, 128 or 256 bytes (16-bit: 32, 64 or 128; FP32: 16, 32 or 64) "
      .. "in panels of one swizzled row",
    legal = function(l) return esize(l) == 2 and { 64, 32, 128 } or { 32, 16, 64 } end,
    default = function(l) return tile(l).bk end },
  -- (16-bit: 4 only. On an H200, 2026-11-29, st=3 and st=5 gave wrong sums, relative L2 error
  -- 1.1-1.4, on every layer of tests/gpu/layers-fc-mma-bf16-wg.yaml that st=4 computed within
  -- 0.003, even where st=5 copied every stage before the loop; the CPU emulation passed both. Not
  -- yet understood; that was the first, no-swizzle version, and rings other than 4 were not tried
  -- since. FP32 and tf32: 4, 6 or 8.)
  { name = "st", doc = "stages in the ring of shared-memory buffers (st - 2 copied ahead of the products)",
    legal = function(l) return esize(l) == 2 and { 4 } or { 4, 6, 8 } end,
    default = function(_) return 4 end },
  { name = "split", doc = "blocks of a cluster sharing one tile's reduction, added in rank order",
    legal = function(_) return { 1, 2, 4, 8 } end,
    default = function(l) return default_split(l) end },
}

function T.check(l, p)
  local t = l.target or {}
  if not mode(l) then
    return "fc_mma multiplies an input and weights of one type (bf16, fp16 or FP32); the layer's differ: write "
      .. "strategy wg, tc or auto", nil
  end
  if not t.sm90a then
    return string.format("fc_mma needs wgmma: sm_90 built as sm_90a (the target is sm_%d%s)", t.cc or 75,
      (t.cc == 90) and ", built for more than sm_90" or ""), nil
  end
  local IN, E = inputs(l), esize(l)
  if IN % (16 // E) ~= 0 then
    return string.format("fc_mma copies rows of 16-byte chunks: the input size %d must be a multiple of %d", IN,
      16 // E), nil
  end
  if p.bm % 64 ~= 0 or p.bm > 256 then return string.format("bm=%d: 64 images a warpgroup, at most 4", p.bm), "bm" end
  if p.bn % 8 ~= 0 or p.bn > 256 then return string.format("bn=%d: wgmma takes N a multiple of 8 up to 256", p.bn), "bn" end
  if p.bn > 2 * l.out and p.bn > 16 then
    return string.format("bn=%d is more than twice the layer's %d outputs", p.bn, l.out), "bn"
  end
  if p.bk * E ~= 64 and p.bk * E ~= 128 and p.bk * E ~= 256 then
    return string.format("bk=%d: %d, %d or %d (rows of 64, 128 or 256 bytes)", p.bk, 64 // E, 128 // E, 256 // E), "bk"
  end
  if E == 2 and p.st ~= 4 then
    return string.format("st=%d: the ring holds 4 stages of 16-bit values (3 and 5 computed wrong sums)", p.st), "st"
  end
  if p.st ~= 4 and p.st ~= 6 and p.st ~= 8 then return string.format("st=%d: 4, 6 or 8 stages", p.st), "st" end
  local NK, split = common.ceil_div(IN, p.bk), p.split or 1
  local spr = common.ceil_div(NK, split)
  if split ~= 1 and split ~= 2 and split ~= 4 and split ~= 8 then
    return string.format("split=%d: a cluster of 1, 2, 4 or 8 blocks", split), "split"
  end
  if (split - 1) * spr >= NK then
    return string.format("split=%d leaves a block without one of the %d stages of %d inputs", split, NK, p.bk), "split"
  end
  if p.st > 2 + spr then
    return string.format("st=%d: %d stages of %d inputs a block leave buffers without a stage", p.st, spr, p.bk), "st"
  end
  if split > 1 and p.bm * p.bn * 4 > p.st * (p.bm + p.bn) * p.bk * E then
    return string.format("split=%d: the %d x %d partial sums do not fit in the ring of %d stages", split, p.bm, p.bn,
      p.st), "split"
  end
  if accs(l, p) + 40 > reg_cap(p) then
    return string.format("bn=%d: %d accumulators a thread, of %d threads (at most %d registers each)", p.bn,
      accs(l, p), threads_of(p), reg_cap(p) + 8), "bn"
  end
  if smem(l, p) > common.max_shared(l) then
    return string.format("st=%d stages of (%d + %d) x %d %d-byte values%s need %d bytes of shared memory; at most %d fit",
      p.st, p.bm, p.bn, p.bk, E, mode(l) == "x3" and " and two stages of remainders" or "", smem(l, p),
      common.max_shared(l)), p.bk * E > 128 and "bk" or "bn"
  end
  return nil
end

local source = engine.compile([=[
{{head}}
{
    // x: n x {{IN}} (row-major), w: {{OUT}} x {{IN}}, out: n x {{OUT}}
    // block: images [i0, i0 + {{BM}}) x outputs [o0, o0 + {{BN}}); warpgroup wg its rows 64*wg .. +63
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
    // the swizzle's atoms need 1,024-byte alignment (the launch gives 1,024 bytes more)
    {{in_t}}* const sm = reinterpret_cast<{{in_t}}*>((reinterpret_cast<unsigned long long>(smem4) + 1023) & ~1023ull);
    const int tid = threadIdx.x;
    const int lane = tid & 31, wq = (tid >> 5) & 3, wg = tid >> 7;
    const int g = lane >> 2, t4 = lane & 3;
% if OB == 1 then
    const int i0 = blockIdx.x * {{BM}};
    const int o0 = 0;
% else
    // the grid is (image tiles, output tiles); blocks taken output tile first
    const int bid = blockIdx.x + blockIdx.y * gridDim.x;
    const int i0 = (bid / {{OB}}) * {{BM}};
    const int o0 = (bid % {{OB}}) * {{BN}};
% end
    if (i0 >= n) return;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const unsigned sbase = (unsigned)__cvta_generic_to_shared(sm);
#endif

    // stage s (of the whole reduction) into buffer b: unit u = tid + {{NT}}*j copies chunk kc = u % {{CPR}} (inputs k0 + {{VC}}*kc ..
    // +{{VC - 1}}) of row u / {{CPR}}, of x's {{BM}} rows then w's {{BN}}, to panel kc / {{CPP}}, swizzled chunk
    // (kc % {{CPP}}) ^ {{swz("row")}}
    auto issue = [&](int s, int b) {
        const int k0 = s * {{BK}};
{{x_units}}
            const bool ok = i0 + row < n{{kguard}};
            const {{in_t}}* const src = ok ? x_arg + (long long)(i0 + row) * {{IN}} + k0 + {{VC}} * kc : x_arg;
            const int d = b * {{STAGE}} + {{at(BM, "row", "kc")}};
{{cp16}}
        }
{{w_units}}
            const bool ok = {{oguard}}{{kguard}};
            const {{w_t}}* const src = ok ? w_arg + (long long)(o0 + row) * {{IN}} + k0 + {{VC}} * kc : w_arg;
            const int d = b * {{STAGE}} + {{BM * BK}} + {{at(BN, "row", "kc")}};
{{cp16}}
        }
    };
    auto commit = [&]() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("cp.async.commit_group;" ::: "memory");
#endif
    };
% if mode == "x3" then
    // this block's stage s in buffer b: each of this thread's chunks (as issue copied them) split,
    // its values' remainders below their TF32 parts (the tensor cores read the values truncated to
    // their top 19 bits) written at the same place of remainder buffer s & 1 ({{LO}} values on)
    auto split = [&](int s, int b) {
        auto rest = [&](int e) {
            const float4 v = *reinterpret_cast<const float4*>(sm + b * {{STAGE}} + e);
            float4 r;
            r.x = v.x - __uint_as_float(__float_as_uint(v.x) & 0xffffe000u);
            r.y = v.y - __uint_as_float(__float_as_uint(v.y) & 0xffffe000u);
            r.z = v.z - __uint_as_float(__float_as_uint(v.z) & 0xffffe000u);
            r.w = v.w - __uint_as_float(__float_as_uint(v.w) & 0xffffe000u);
            *reinterpret_cast<float4*>(sm + {{LO}} + (s & 1) * {{STAGE}} + e) = r;
        };
% elseif mode == "tf32" then
    // this block's stage s in buffer b: each of this thread's chunks (as issue copied them) rounded
    // to TF32 in place (to nearest, ties away from zero: cvt.rna.tf32.f32)
    auto split = [&](int s, int b) {
        (void)s;
        auto rest = [&](int e) {
            float4* const p = reinterpret_cast<float4*>(sm + b * {{STAGE}} + e);
            float4 v = *p;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
            unsigned r;
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v.x)); v.x = __uint_as_float(r);
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v.y)); v.y = __uint_as_float(r);
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v.z)); v.z = __uint_as_float(r);
            asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v.w)); v.w = __uint_as_float(r);
#else
            {{tf32_round_emu}}
            v.x = tf32r(v.x), v.y = tf32r(v.y), v.z = tf32r(v.z), v.w = tf32r(v.w);
#endif
            *p = v;
        };
% end
% if mode ~= "half" then
{{x_units}}
            rest({{at(BM, "row", "kc")}});
        }
{{w_units}}
            rest({{BM * BK}} + {{at(BN, "row", "kc")}});
        }
    };
% end

    {{acc_t}} cf[{{NR}}];
#pragma unroll
    for (int r = 0; r < {{NR}}; r++) cf[r] = 0.0f;
% if mode == "x3" then
    // sl: a stage's products (small terms first, onto zero), added to cf once they land (the tensor
    // cores' additions drop low bits: lib/common.lua)
    {{acc_t}} sl[{{NR}}];
% end
{{wgmma_fn}}
% if SPLIT > 1 then
    // this block's share of the reduction: stages [sb, sb + nk) of {{NK}}, {{SPR}} a rank
    const int rank = blockIdx.z;   // == its rank in the (1, 1, {{SPLIT}}) cluster
    const int sb = rank * {{SPR}}, nk = min({{NK}} - sb, {{SPR}});
% else
    const int sb = 0, nk = {{NK}};
% end
#pragma unroll
    for (int s = 0; s < {{ST - 2}}; s++) {
        if (s < nk) issue(sb + s, s);
        commit();
    }
#pragma unroll 1
    for (int s = 0; s < nk; s++) {
        const int b = s % {{ST}};
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("cp.async.wait_group {{ST - 3}};" ::: "memory");   // stage s's copies (this thread's) landed
% if mode ~= "half" then
#endif
        split(s, b);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
% end
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // visible to the tensor cores' reads
#endif
        // everyone's copies of stage s are in, and every warpgroup waited for stage s - 2's products
        __syncthreads();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        // k{{KS}} step k: panel k / {{SPP}}, 32 bytes a step inside the swizzled row
        const unsigned long long da = d0 + {{desc}} + b * {{STAGE16}} + wg * {{64 * PWB // 16}};
        const unsigned long long db = d0 + {{desc}} + b * {{STAGE16}} + {{BM * BK * E // 16}};
% if mode == "x3" then
        // from a stage's values to their remainders
        const unsigned long long lo = {{LO * E // 16}} + (s & 1) * {{STAGE16}} - b * {{STAGE16}};
% end
#pragma unroll
        for (int k = 0; k < {{BK // KS}}; k++) {
            const unsigned long long ak = da + (k / {{SPP}}) * {{BM * PWB // 16}} + (k % {{SPP}}) * 2;
            const unsigned long long bk = db + (k / {{SPP}}) * {{BN * PWB // 16}} + (k % {{SPP}}) * 2;
% if mode == "x3" then
            wgmma(sl, ak + lo, bk, k > 0);   // small * big
            wgmma(sl, ak, bk + lo, 1);       // big * small
            wgmma(sl, ak, bk, 1);            // big * big
% elseif mode == "tf32" then
            wgmma(cf, ak, bk, 1);
% else
            wgmma(cf, ak, bk);
% end
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
        // without wgmma: each accumulator {{mode == "x3" and "the staged products (each operand's truncated part and remainder as the tensor cores read them)" or "plus its row's and output's staged products"}}, in FP32
        const {{in_t}}* const xa = sm + b * {{STAGE}};
        const {{w_t}}* const wa = sm + b * {{STAGE}} + {{BM * BK}};
% if mode == "x3" then
        const float* const xl = sm + {{LO}} + (s & 1) * {{STAGE}};
        const float* const wl = xl + {{BM * BK}};
        auto tr = [](float v) { return __uint_as_float(__float_as_uint(v) & 0xffffe000u); };
% end
#pragma unroll 1
        for (int r = 0; r < {{NR}}; r++) {
            const int row = 64 * wg + 16 * wq + g + 8 * ((r >> 1) & 1), col = 8 * (r >> 2) + 2 * t4 + (r & 1);
            {{acc_t}} v = 0.0f;
            for (int k = 0; k < {{BK}}; k++) {
                const int ix = {{at(BM, "row", "(k >> " .. VCS .. ")")}} + (k & {{VC - 1}});
                const int iw = {{at(BN, "col", "(k >> " .. VCS .. ")")}} + (k & {{VC - 1}});
% if mode == "x3" then
                v = fmaf(tr(xl[ix]), tr(wa[iw]), v);
                v = fmaf(tr(xa[ix]), tr(wl[iw]), v);
                v = fmaf(tr(xa[ix]), tr(wa[iw]), v);
% else
                v = fmaf({{to_acc("xa[ix]")}}, {{w_to_acc("wa[iw]")}}, v);
% end
            }
            {{mode == "x3" and "sl[r] = v;" or "cf[r] += v;"}}
        }
#endif
        // the copies of stage s + {{ST - 2}} while the tensor cores work on stage s
        if (s + {{ST - 2}} < nk) issue(sb + s + {{ST - 2}}, (s + {{ST - 2}}) % {{ST}});
        commit();
% if mode == "x3" then
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");   // stage s's products landed
#endif
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) cf[r] += sl[r];
% else
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");   // stage s - 1's products landed
#endif
% end
    }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
% if SPLIT > 1 then
#if defined(CG_EMULATION)
    // the CPU emulation (tests/test_emulate.c) runs a cluster's blocks one after another, its last
    // rank first: ranks 1.. leave their partial sums in one static array, rank 0 adds them in rank order
    static {{acc_t}} part_emu[{{SPLIT}}][{{NR}}][{{NT}}];
    if (rank != 0) {
        for (int r = 0; r < {{NR}}; r++) part_emu[rank][r][tid] = cf[r];
        return;
    }
    for (int q = 1; q < {{SPLIT}}; q++)
        for (int r = 0; r < {{NR}}; r++) cf[r] += part_emu[q][r][tid];
#else
    // the cluster's reduction: ranks 1.. leave their partial sums in their ring (free: every
    // warpgroup's products landed, every copy awaited), rank 0 adds them in rank order through
    // distributed shared memory, and no block leaves while rank 0 still reads its shared memory
    __syncthreads();
    {{acc_t}}* const part = reinterpret_cast<{{acc_t}}*>(sm);
    if (rank != 0) {
#pragma unroll
        for (int r = 0; r < {{NR}}; r++) part[r * {{NT}} + tid] = cf[r];
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank == 0) {
        const unsigned mine = (unsigned)__cvta_generic_to_shared(part + tid);
#pragma unroll 1
        for (int q = 1; q < {{SPLIT}}; q++) {
            unsigned theirs;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(q));
#pragma unroll
            for (int r = 0; r < {{NR}}; r++) {
                {{acc_t}} x;
                asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(theirs + (unsigned)(r * {{NT * 4}})) : "memory");
                cf[r] += x;
            }
        }
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank != 0) return;
#endif
% end
    // epilogue: {{bias and "bias, " or ""}}{{actname}}; register 4*j + 2*h + e is row 16*wq + g + 8*h of the
    // warpgroup's 64, output 8*j + 2*t4 + e{{pair and ("; the pair e = 0, 1 stored as one " .. (out_t == "float" and 8 or 4) .. "-byte word (OUT is even)") or ""}}
    const int ia = i0 + 64 * wg + 16 * wq + g;
#pragma unroll
    for (int j = 0; j < {{BN // 8}}; j++) {
        const int c = o0 + 8 * j + 2 * t4;
% if oedge then
        if (c >= {{OUT}}) continue;
% end
% if bias then
        const {{acc_t}} b0 = {{w_to_acc("__ldg(b_arg + c)")}};
%   if pair then
        const {{acc_t}} b1 = {{w_to_acc("__ldg(b_arg + c + 1)")}};
%   else
        const {{acc_t}} b1 = c + 1 < {{OUT}} ? {{w_to_acc("__ldg(b_arg + c + 1)")}} : 0.0f;
%   end
% end
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int i = ia + 8 * h;
            if (i >= n) continue;
            {{out_t}}* const o = out + (long long)i * {{OUT}} + c;
            const {{out_t}} v[2] = { {{from_acc(act("cf[4 * j + 2 * h]" .. (bias and " + b0" or "")))}},
                                     {{from_acc(act("cf[4 * j + 2 * h + 1]" .. (bias and " + b1" or "")))}} };
% if pair and out_t == "float" then
            float2 p2;
            p2.x = v[0], p2.y = v[1];
            *reinterpret_cast<float2*>(o) = p2;
% elseif pair then
            unsigned u;
            memcpy(&u, v, 4);
            *reinterpret_cast<unsigned*>(o) = u;
% else
            o[0] = v[0];
            if (c + 1 < {{OUT}}) o[1] = v[1];
% end
        }
    }
}
]=], "fc_mma")

function T.kernel(l, p)
  local IN = inputs(l)
  local NK = common.ceil_div(IN, p.bk)
  local threads = threads_of(p)
  local m, E = mode(l), esize(l)
  local split = p.split or 1
  local name = string.format("fc_mma_i%do%d_%s%s_m%dn%dk%d_s%d%s%s", IN, l.out, l.act, l.bias and "_bias" or "",
    p.bm, p.bn, p.bk, p.st, split > 1 and ("_p" .. split) or "", m == "half" and "" or ("_" .. m))
  local ty = common.types(l)
  local head, args = common.kernel_head(name, threads,
    { { "in", nil, "x_arg" }, { "out" }, { "weights", nil, "w_arg" }, { "bias", nil, "b_arg" }, { "n" }, types = ty },
    split > 1 and string.format("__cluster_dims__(1, 1, %d)", split) or nil, 1)
  local kguard = IN % p.bk ~= 0
  -- panels of pw inputs, rows of pwb = pw*E bytes (128, or 64 where the stage's rows are 64
  -- bytes) in the swizzle of that width: the row's bits that select its chunks' permutation
  -- (r % 8 for 128 bytes, r / 2 % 4 for 64); vc values a 16-byte chunk
  local pwb = math.min(p.bk * E, 128)
  local pw, vc = pwb // E, 16 // E
  local swz = function(row)
    return pwb == 128 and string.format("(%s & 7)", row) or string.format("((%s >> 1) & 3)", row)
  end
  local stage = (p.bm + p.bn) * p.bk
  local v = {
    head = head, IN = IN, OUT = l.out, BM = p.bm, BN = p.bn, BK = p.bk, ST = p.st, NK = NK, NT = threads,
    NR = p.bn // 2, STAGE = stage, STAGE16 = stage * E // 16, OB = common.ceil_div(l.out, p.bn),
    XU = p.bm * (p.bk // vc) // threads, WU = common.ceil_div(p.bn * (p.bk // vc), threads), CPR = p.bk // vc,
    PWB = pwb, CPP = pwb // 16, VC = vc, VCS = vc == 8 and 3 or 2, E = E, swz = swz,
    KS = 32 // E, SPP = pwb // 32, LO = p.st * stage, mode = m, SPLIT = split, SPR = common.ceil_div(NK, split),
    -- the element offset in a stage's tile of `rows` rows of (row, 16-byte chunk kc of the stage)
    at = function(rows, row, kc)
      return string.format("(%s / %d) * %d + %s * %d + (((%s %% %d) ^ %s) << %d)", kc, pwb // 16, rows * pw, row, pw,
        kc, pwb // 16, swz(row), vc == 8 and 3 or 2)
    end,
    kguard = kguard and string.format(" && k0 + %d * kc < %d", vc, IN) or "",
    oguard = l.out % p.bn ~= 0 and string.format("o0 + row < %d", l.out) or "true",
    oedge = l.out % p.bn ~= 0, pair = l.out % 2 == 0,
    desc = common.wgmma_desc_swizzle(pwb),
    cp16 = common.cp_async16("            ", string.format("sbase + %d * d", E), "sm + d", "src", "ok"),
    tf32_round_emu = common.tf32_round_emu(),
    bias = l.bias, actname = l.act,
    act = function(e) return common.act(l.act, e) end,
  }
  -- the heads of the loops over a thread's chunks of a stage (issue's copies, split's
  -- remainders): unit u = tid + NT*j, the x tile's rows, then the w tile's
  local head = "#pragma unroll\n        for (int j = 0; j < %d; j++) {\n            const int u = tid + j * %d, row = " ..
    "u / %d, kc = u %% %d;"
  v.x_units = string.format(head, v.XU, threads, v.CPR, v.CPR)
  v.w_units = string.format(head, v.WU, threads, v.CPR, v.CPR) .. (v.WU * threads ~= p.bn * v.CPR and
    string.format("\n            if (u >= %d) break;", p.bn * v.CPR) or "")
  common.typed(l, v)
  if m == "half" then
    v.wgmma_fn = common.wgmma16_lambda(v.acc_t, v.NR, p.bn, common.half_dtype(l) == "bf16" and "bf16" or "f16", 0)
  else
    v.wgmma_fn = common.wgmma_tf32_lambda(v.acc_t, v.NR, p.bn)
  end
  local rec = common.fc.record(l, name, args, source(v), { common.batch_dim(1, p.bm), v.OB, split }, threads)
  rec.shared = smem(l, p)
  if m == "tf32" then rec.precision = "tf32" end   -- (the header's precision line: one TF32 product)
  return rec
end

return T
