-- network.lua — the whole network in one kernel, for a few images.
--
-- At one to eight images a layer's work is a few microseconds or less, and a
-- network of per-layer kernels pays a launch (1-3 us on the GPU, inside a graph
-- too) for each. Here one persistent kernel runs every layer: its blocks are all
-- resident at once (a cooperative launch, `grid = res:CAP`: the runtime launches
-- at most what fits), each layer's work is spread over every warp of the grid,
-- and a grid-wide barrier separates one layer from the next. Each layer writes
-- the tensor its per-layer kernel writes (the manifest's t: roles name them), so
-- `check` compares the layers of either path alike, and the memory plan serves
-- both: the layers write in the same order.
--
-- The layers (the planner passes them as `phases`, planner.whole_phases):
--   conv     units of TW outputs along a row (conv_tile: 1 to 4), L lanes a unit
--            (a power of two up to 32 and the C/G*K rows, chosen so that the
--            grid's threads have work), each lane reducing every L-th (channel,
--            kernel row): the row's inputs under each pool window row loaded
--            once for the unit's outputs and windows, its K weights once, the
--            products unrolled; the lanes' sums joined by a butterfly (a fixed
--            order); bias, activation, the pool and a residual add in the
--            epilogue, as the per-layer kernels
--   fc       a warp a (row, chunk of the reduction): vector loads of the row's
--            weights (each read once) and the images' inputs; where a row is
--            split into S chunks, the chunks' sums go to scratch and the warp
--            that finishes a row last (a counter a row) adds them in chunk
--            order, then bias and activation: deterministic, no extra barrier
--   softmax  a warp an image; the argmax (first maximum) of the values it
--            stores is the prediction where it is the network's last layer;
--            a last fc of at most 32 outputs and 8,192 weights and the softmax
--            after it run as one phase (a warp an image, no barrier between)
--   add, concat   elementwise over every thread of the grid; a concat copies only
--            the inputs not written in place (a loop over each one's own elements): a conv writing a concat's input
--            straight into its slice (a view, planner.concat_slices) stores at the
--            concat's image stride
-- Every product is an FP32 FMA: a tf32 network's layers get FP32's accuracy here, not
-- TF32's rounding (auto weighs the two paths by time alone).
-- The network's first layer reads the pixels and scales them as input_u8 does
-- (no input kernel, no barrier for it). The last phase writes the predictions.
--
-- Every index bound is a literal (the bucket's images, every layer's shape);
-- the run-time image count `n` predicates the loads (more images than the
-- bucket run in groups of the bucket, a barrier between groups). The scratch
-- buffer (the barrier's word; 128 bytes on, the split rows' counters, then their
-- sums) is zeroed once by the runtime and needs nothing from the kernel after:
-- every counter returns to zero when its row is finished, and the barrier's word
-- works from any value its last launch left.
-- Code size grows with the layers (one block of code each; unrolled: a conv's K
-- taps times its pool windows, the bucket's images, a fused tail's outputs), not
-- with C, M or the maps' sizes. The 49 distinct network kernels of the shipped,
-- zoo and layer specs at buckets 1 and 8 each compile in at most 1.5 s (nvcc -O3,
-- sm_90, on the 2-core development machine); six spill 8-32 bytes under the
-- 128-register cap that 512 threads and one block an SM leave.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "every layer of a small-batch network in one persistent kernel, grid-wide barriers between layers"

-- The SMs to fill: the target's, else an H100's 132.
local function sms(l) return (l.target and l.target.sms and l.target.sms > 0) and l.target.sms or 132 end

T.params = {
  { name = "threads", doc = "threads per block", legal = function(_) return { 256, 512, 1024 } end,
    default = function(_) return 512 end },
  { name = "per_sm", doc = "blocks per SM the grid is sized for (the runtime caps it at what is resident)",
    legal = function(_) return { 1, 2 } end, default = function(_) return 1 end },
}

function T.check(l, p)
  if p.threads > common.MAX_THREADS then
    return string.format("threads=%d: a block has at most %d", p.threads, common.MAX_THREADS), "threads"
  end
  if not l.phases or #l.phases == 0 then return "no layers to run" end
  return nil
end

local FULL = "0xffffffffu"

-- The grid-wide barrier: one word, bar[0]. Each block's thread 0 adds 1 to it,
-- block 0 adds 2^31 - (blocks - 1), so that the word's top bit flips once every
-- block has arrived, and waits for the flip; the word needs no reset (two
-- barriers add 2^32). The fences on both sides and the block barriers make every
-- write before the barrier visible to every read after it, grid-wide. Measured
-- on an H200 (bench/scripts/grid_sync.cu): 1.0 us a barrier with 132 blocks,
-- against 1.7-1.8 us for a count reset by the last block and a generation word
-- waited on. The CPU emulation defines CG_EMU_GRID and its own barrier (its
-- blocks are fibers of one thread).
local prelude = engine.compile([[
#ifndef CG_EMU_GRID
static __device__ __forceinline__ void {{name}}_sync(unsigned* bar)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
        __threadfence();
        const unsigned old = atomicAdd(bar, add);
        while ((((volatile unsigned*)bar)[0] ^ old) < 0x80000000u) {}
        __threadfence();
    }
    __syncthreads();
}
#define {{name}}_SYNC() {{name}}_sync(scratch)
#else
#define {{name}}_SYNC() emu_grid_sync()
#endif
]], "network")

local conv_source = engine.compile([[
    // ---- layer {{layer}}: {{shape}}
    //      {{L}} lanes a unit of {{TW}} output{{TW > 1 and "s" or ""}} along a row ({{GPW}} units a warp), each lane reducing every
    //      {{L}}-th of the {{RR}} rows (channel, kernel row): the row's {{NCOL}} inputs under each of the {{PK}} pool
    //      window row{{PK > 1 and "s" or ""}} loaded once for the unit's {{TW}} x {{WIN}} windows, its {{K}} weights once
    for (int g0 = gwarp * {{GPW}}; g0 < n * {{UNITS}}; g0 += nwarps * {{GPW}}) {
        const int u = g0 + lane / {{L}}, sub = lane % {{L}};
        const bool ok = u < n * {{UNITS}};
        const int b = u / {{UNITS}}, m = (u / {{OH * OWT}}) % {{M}}, oh = (u / {{OWT}}) % {{OH}}, ow = (u % {{OWT}}) * {{TW}};
        const int o = b * {{OUTS}} + (m * {{OH}} + oh) * {{OW}} + ow;   // the unit's first output
        {{acc_t}} acc[{{TW}}][{{WIN}}];
#pragma unroll
        for (int t = 0; t < {{TW}}; t++)
#pragma unroll
            for (int j = 0; j < {{WIN}}; j++) acc[t][j] = 0.0f;
        if (ok) {
            // the input's row and column under output ow, window (0, 0) and kernel tap (0, 0)
            const int ih0 = oh * {{PS * S}} - {{PT}}, iw0 = ow * {{PS * S}} - {{PL}};
            const int x0 = b * {{XE}}{{cbase}} + ih0 * {{W}} + iw0;
            const {{w_t}}* wm = {{w}} + m * {{RR * K}};
#pragma unroll 2
            for (int rr = sub; rr < {{RR}}; rr += {{L}}) {
                const int c = rr / {{K}}, p = rr % {{K}};
                const int xr = x0 + c * {{H * W}} + p * {{W}};
% for q = 0, K - 1 do
                const {{acc_t}} w{{q}} = {{w_to_acc("__ldg(wm + rr * " .. K .. " + " .. q .. ")")}};
% end
% for a = 0, PK - 1 do
                {
                    // window row {{a}}: input columns iw0 .. iw0 + {{NCOL - 1}}
% if padded then
                    const bool rok = (unsigned)(ih0 + p + {{a * S}}) < {{H}}u;
% end
% for j = 0, NCOL - 1 do
% if padded then
                    const {{acc_t}} xv{{j}} = rok && (unsigned)(iw0 + {{j}}) < {{W}}u ? {{load("xr + " .. (a * S * W + j))}} : 0.0f;
% else
                    const {{acc_t}} xv{{j}} = {{load("xr + " .. (a * S * W + j))}};
% end
% end
% for t = 0, TW - 1 do
% for c = 0, PK - 1 do
% for q = 0, K - 1 do
                    acc[{{t}}][{{a * PK + c}}] = fmaf(xv{{t * PS * S + c * S + q}}, w{{q}}, acc[{{t}}][{{a * PK + c}}]);
% end
% end
% end
                }
% end
            }
        }
% if L > 1 then
#pragma unroll
        for (int t = 0; t < {{TW}}; t++)
#pragma unroll
            for (int j = 0; j < {{WIN}}; j++)
#pragma unroll
                for (int s = {{L // 2}}; s > 0; s >>= 1) acc[t][j] += __shfl_xor_sync({{FULL}}, acc[t][j], s);
% end
        if (ok && sub == 0) {
#pragma unroll
            for (int t = 0; t < {{TW}}; t++) {
                const int oo = o + t;
                {{acc_t}} v = {{act("acc[t][0]" .. bias_term)}};
% if pool ~= "none" then
#pragma unroll
                for (int j = 1; j < {{WIN}}; j++) {
                    const {{acc_t}} u2 = {{act("acc[t][j]" .. bias_term)}};
% if pool == "max" then
                    v = fmaxf(v, u2);
% else
                    v += u2;
% end
                }
% if pool == "avg" then
                v *= {{1.0 / WIN}}f;
% end
% end
% if residual then
                // the add computed here: {{residual.n + 1}} tensors in order, this conv's at place {{residual.at}}, then {{residual.act}}
                v = {{residual.expr}};
% end
                {{out}}[{{ostore}}] = {{from_acc("v")}};
            }
        }
    }
]], "network")

-- A conv phase's unit: TW outputs along a row (a divisor of the output's width, at most
-- CONV_TILE_MAX), whose lanes load a kernel row's inputs once for all of them (NCOL
-- values under each pool window row) and its K weights once: the loads a product fall
-- from (WIN + 1) / WIN to about (NCOL + K) / (TW * WIN * K). Only for reductions of at
-- least CONV_TILE_MIN_ROWS rows (a short one has few products a lane to share them), where
-- the units at 32 lanes each still give a quarter of the grid's threads (TT) one, and while
-- the unit's accumulators, inputs and weights stay within CONV_TILE_REGS registers.
-- Measured on an H200 (bench/RESULTS.md, "The whole-network kernel's conv phases in
-- tiles"): ece408-2018fa's conv2 (12 -> 24 maps, 7x7 on 33x33, 84 rows of 7 products)
-- took 13.1 us as one output a unit (two loads a product), 7.7 in units of 3; zoo-edge's
-- 64 -> 1 1x1 layer on 6x16 in units of 4 (24 units for 67,584 threads) cost 2.5 us.
local CONV_TILE_MAX, CONV_TILE_MIN_ROWS, CONV_TILE_REGS = 4, 16, 64
-- Returns TW and NCOL, the input columns a unit's lanes load under a pool window row.
local function conv_tile(ly, g, RR, WIN, PK, PS, outs, TT)
  local function ncol(tw) return (tw - 1) * PS * g.S + (PK - 1) * g.S + ly.K end
  if RR >= CONV_TILE_MIN_ROWS then
    for tw = CONV_TILE_MAX, 2, -1 do
      if g.OW % tw == 0 and tw * WIN + ncol(tw) + ly.K <= CONV_TILE_REGS and 4 * (outs // tw) * math.min(32, RR) >= TT then
        return tw, ncol(tw)
      end
    end
  end
  return 1, ncol(1)
end

local fc_source = engine.compile([[
    // ---- layer {{layer}}: {{shape}}
    //      a warp a (row, chunk): {{OUT}} rows x {{S}} chunks of {{CH}} {{VT}} ({{NV}} a row)
    for (int u = gwarp; u < {{OUT * S}}; u += nwarps) {
        const int row = u / {{S}}, s = u % {{S}};
        {{acc_t}} acc[{{B}}];
#pragma unroll
        for (int i = 0; i < {{B}}; i++) acc[i] = 0.0f;
        const {{VT}}* wr = reinterpret_cast<const {{VT}}*>({{w}} + row * {{IN}});
        const int v_end = s == {{S - 1}} ? {{NV}} : (s + 1) * {{CH}};
        // {{ITER}} passes a lane, unrolled{{ITER > 16 and " by 16" or ""}}: their loads independent, in flight together
#pragma unroll {{ITER > 16 and 16 or ITER}}
        for (int it = 0; it < {{ITER}}; it++) {
            const int v = s * {{CH}} + lane + it * 32;
            if (v >= v_end) continue;
            const {{VT}} wv = __ldg(wr + v);
#pragma unroll
            for (int i = 0; i < {{B}}; i++) {
                if (i < n) {
% if V == 4 then
                    const {{XVT}} xv = reinterpret_cast<const {{XVT}}*>({{x}} + i * {{IN}})[v];
% local function wx(f) return w_to_acc("wv." .. f) end
% local function xx(f) return to_acc("xv." .. f) end
                    acc[i] = fmaf({{wx("x")}}, {{xx("x")}}, fmaf({{wx("y")}}, {{xx("y")}}, fmaf({{wx("z")}}, {{xx("z")}}, fmaf({{wx("w")}}, {{xx("w")}}, acc[i]))));
% else
                    acc[i] = fmaf({{w_to_acc("wv")}}, {{load("i * " .. IN .. " + v")}}, acc[i]);
% end
                }
            }
        }
#pragma unroll
        for (int i = 0; i < {{B}}; i++)
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[i] += __shfl_xor_sync({{FULL}}, acc[i], o);
% if S == 1 then
        if (lane < n && lane < {{B}}) {
            {{acc_t}} t = acc[0];
#pragma unroll
            for (int i = 1; i < {{B}}; i++) if (lane == i) t = acc[i];
            {{out}}[lane * {{OUT}} + row] = {{from_acc(act("t" .. bias_term))}};
        }
% else
        // the chunk's sums to scratch; the warp finishing the row's last chunk adds them in chunk order
        {{acc_t}}* part = reinterpret_cast<{{acc_t}}*>(scratch + {{part_at}});
        unsigned* count = scratch + {{count_at}};
        int last = 0;
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < {{B}}; i++) part[(s * {{B}} + i) * {{OUT}} + row] = acc[i];
            __threadfence();
            last = atomicAdd(count + row, 1u) == {{S - 1}};
        }
        last = __shfl_sync({{FULL}}, last, 0);
        if (last) {
            __threadfence();
            if (lane < n && lane < {{B}}) {
                {{acc_t}} t = 0.0f;
                for (int c = 0; c < {{S}}; c++) t += __ldcg(part + (c * {{B}} + lane) * {{OUT}} + row);
                {{out}}[lane * {{OUT}} + row] = {{from_acc(act("t" .. bias_term))}};
            }
            if (lane == 0) count[row] = 0;
        }
% end
    }
]], "network")

-- A last fully connected layer of at most 32 outputs and the softmax reading it,
-- in one phase: a warp an image holds every output's sum (a lane's share of the
-- reduction, then a butterfly, so every lane has them all), applies bias and
-- activation, stores them, and goes on to the softmax and the prediction
-- without a barrier between (the weights, OUT x IN, read once an image).
-- At most this many weights (OUT x IN): one warp streams them all for its image
-- (ece408-2017's fc2, 5,000: 14.4 -> 12.3 us for the whole network on an H200;
-- zoo-odd's 22,050 -> 10 layer, 220,500, took 187 us against 42 split over the grid).
local FUSED_TAIL_WEIGHTS = 8192
local fc_softmax_source = engine.compile([[
    // ---- layers {{layer}} and {{sm_layer}}: {{shape}}, then softmax over {{OUT}}{{predict and " and the prediction" or ""}}
    //      a warp an image: {{ITER}} passes of a lane over the {{NV}} {{VT}} of a row, for every row
    for (int b = gwarp; b < n; b += nwarps) {
        {{acc_t}} acc[{{OUT}}];
#pragma unroll
        for (int r = 0; r < {{OUT}}; r++) acc[r] = 0.0f;
#pragma unroll {{ITER > 8 and 8 or ITER}}
        for (int it = 0; it < {{ITER}}; it++) {
            const int v = lane + it * 32;
            if (v >= {{NV}}) continue;
% if V == 4 then
            const {{XVT}} xv = reinterpret_cast<const {{XVT}}*>({{x}} + b * {{IN}})[v];
% else
            const {{acc_t}} xv = {{load("b * " .. IN .. " + v")}};
% end
#pragma unroll
            for (int r = 0; r < {{OUT}}; r++) {
                const {{VT}} wv = __ldg(reinterpret_cast<const {{VT}}*>({{w}} + r * {{IN}}) + v);
% if V == 4 then
% local function wx(f) return w_to_acc("wv." .. f) end
% local function xx(f) return to_acc("xv." .. f) end
                acc[r] = fmaf({{wx("x")}}, {{xx("x")}}, fmaf({{wx("y")}}, {{xx("y")}}, fmaf({{wx("z")}}, {{xx("z")}}, fmaf({{wx("w")}}, {{xx("w")}}, acc[r]))));
% else
                acc[r] = fmaf({{w_to_acc("wv")}}, xv, acc[r]);
% end
            }
        }
        {{acc_t}} mx = 0.0f;
#pragma unroll
        for (int r = 0; r < {{OUT}}; r++) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync({{FULL}}, acc[r], o);
            acc[r] = {{act("acc[r]" .. bias_term)}};
            mx = r == 0 ? acc[r] : fmaxf(mx, acc[r]);
        }
        {{acc_t}} sum = 0.0f;
#pragma unroll
        for (int r = 0; r < {{OUT}}; r++) sum += expf(acc[r] - mx);
        const {{acc_t}} inv = 1.0f / sum;
        if (lane == 0) {
            {{acc_t}} best = 0.0f;
            int arg = 0;
#pragma unroll
            for (int r = 0; r < {{OUT}}; r++) {
                const {{acc_t}} p = expf(acc[r] - mx) * inv;
                {{out}}[b * {{OUT}} + r] = {{from_acc("acc[r]")}};
                {{sm_out}}[b * {{OUT}} + r] = {{from_acc("p")}};
                if (r == 0 || p > best) best = p, arg = r;
            }
% if predict then
            pred[b] = arg;
% else
            (void)arg;
% end
        }
    }
]], "network")

-- The prediction from each lane's (best, arg) over its share of E values (arg = E:
-- none): a butterfly keeping the larger value, the lower index on a tie, so every
-- lane ends with the first maximum; lane 0 stores it. One text for the softmax
-- and argmax phases.
local first_max_source = engine.compile([[
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const {{acc_t}} ob = __shfl_xor_sync({{FULL}}, best, o);
            const int oa = __shfl_xor_sync({{FULL}}, arg, o);
            if (oa < {{E}} && (arg == {{E}} || ob > best || (ob == best && oa < arg))) best = ob, arg = oa;
        }
        if (lane == 0) pred[b] = arg;]], "network")

local softmax_source = engine.compile([[
    // ---- layer {{layer}}: softmax over {{E}} values, a warp an image{{predict and ", and the prediction (the first maximum)" or ""}}
    for (int b = gwarp; b < n; b += nwarps) {
        {{acc_t}} mx = {{load("b * " .. E)}};
        for (int i = lane; i < {{E}}; i += 32) mx = fmaxf(mx, {{load("b * " .. E .. " + i")}});
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync({{FULL}}, mx, o));
        {{acc_t}} sum = 0.0f;
        for (int i = lane; i < {{E}}; i += 32) sum += expf({{load("b * " .. E .. " + i")}} - mx);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync({{FULL}}, sum, o);
        const {{acc_t}} inv = 1.0f / sum;
% if predict then
        {{acc_t}} best = __uint_as_float(0xff800000u);
        int arg = {{E}};
% end
        for (int i = lane; i < {{E}}; i += 32) {
            const {{acc_t}} v = expf({{load("b * " .. E .. " + i")}} - mx) * inv;
            {{out}}[b * {{E}} + i] = {{from_acc("v")}};
% if predict then
            if (arg == {{E}} || v > best) best = v, arg = i;
% end
        }
% if predict then
{{first_max}}
% end
    }
]], "network")

local argmax_source = engine.compile([[
    // ---- the prediction: the first maximum of {{E}} scores, a warp an image
    for (int b = gwarp; b < n; b += nwarps) {
        {{acc_t}} best = __uint_as_float(0xff800000u);
        int arg = {{E}};
        for (int i = lane; i < {{E}}; i += 32) {
            const {{acc_t}} v = {{load("b * " .. E .. " + i")}};
            if (arg == {{E}} || v > best) best = v, arg = i;
        }
{{first_max}}
    }
]], "network")

local add_source = engine.compile([[
    // ---- layer {{layer}}: the sum of {{#ins}} tensors of {{E}} values, then {{act_name}}
    for (int i = gtid; i < n * {{E}}; i += nthreads) {{out}}[i] = {{from_acc(act(sum))}};
]], "network")

local concat_source = engine.compile([[
% if gaps then
    // ---- layer {{layer}}: {{#ins}} tensor{{#ins > 1 and "s" or ""}} copied into {{#ins > 1 and "their slices" or "its slice"}} of {{E}} values an image (the others written there in place)
%   for _, part in ipairs(parts) do
    for (int i = gtid; i < n * {{part.P}}; i += nthreads) {   // only this part's elements
        const int b = i / {{part.P}}, e = i % {{part.P}};
        {{out}}[b * {{E}} + {{part.from}} + e] = {{from_acc(part.whole)}};
    }
%   end
% else
    // ---- layer {{layer}}: {{#ins}} tensors joined along channels ({{E}} values an image)
    for (int i = gtid; i < n * {{E}}; i += nthreads) {
        const int b = i / {{E}}, e = i % {{E}};
%   for j, part in ipairs(parts) do
        {{j > 1 and "else " or ""}}if (e < {{part.to}}) {{out}}[i] = {{from_acc(part.load)}};
%   end
    }
% end
]], "network")

local kernel_source = engine.compile([[
// {{#phases}} layers for {{B}} images at most, {{barriers}} grid-wide barriers between them
{{prelude}}
extern "C" __global__ void __launch_bounds__({{threads}}, 1)
{{name}}({{params}})
{
    const int lane = threadIdx.x % 32;
    const int gwarp = blockIdx.x * {{WPB}} + threadIdx.x / 32, nwarps = gridDim.x * {{WPB}};
    const int gtid = blockIdx.x * {{threads}} + threadIdx.x, nthreads = gridDim.x * {{threads}};
    (void)lane, (void)gwarp, (void)nwarps, (void)gtid, (void)nthreads;
% for _, c in ipairs(consts) do
{{c}}
% end
    // the images {{B}} at a time (the bucket: at most one group where the runtime serves it)
    for (int i0 = 0; i0 < n_all; i0 += {{B}}) {
        const int n = n_all - i0 < {{B}} ? n_all - i0 : {{B}};
% for _, g in ipairs(groups) do
{{g}}
% end
        (void)px, (void)pred;
% for j, body in ipairs(bodies) do
{{body}}
% if j < #bodies then
        {{name}}_SYNC();
% end
% end
        if (i0 + {{B}} < n_all) {{name}}_SYNC();   // the next group reuses the scratch
    }
}
#ifdef CG_EMULATION
// the CPU emulation calls the kernel through this (its arguments as one array)
extern "C" void {{name}}_emu(void* const* a, int n)
{
    {{name}}({{emu_args}});
}
#endif
]], "network")

-- FNV-1a of a string, 8 hex digits: the kernel's name carries its layers' digest.
local function digest(s)
  local h = 0x811c9dc5
  for i = 1, #s do h = ((h ~ s:byte(i)) * 0x01000193) & 0xffffffff end
  return string.format("%08x", h)
end

-- The header's shape line: every layer's shape where they fit on one line (the
-- manifest's limit), else their number and the first ones (each layer's shape
-- opens its code's block too).
local function shape_line(shapes)
  local all = table.concat(shapes, "; ")
  if #all <= 400 then return all end
  local head, used = {}, 0
  for _, s in ipairs(shapes) do
    if used + #s > 340 then break end
    head[#head + 1] = s
    used = used + #s + 2
  end
  return string.format("%d layers: %s; ... (each in its block below)", #shapes, table.concat(head, "; "))
end

-- The kernel record. l: { phases, input = { C, HW, scale_text, offset_text, norm },
-- batch, target, tensors (the planner's, by name: elems) }; each phase: { op, layer (its table), ins (tensor names),
-- out (tensor name), residual = { others, at, act } for a conv computing an add,
-- predict (softmax: also write the predictions) }, and a last { op = "argmax" }
-- where the network's last layer is no softmax.
function T.kernel(l, p)
  local B = l.batch
  local threads, WPB = p.threads, p.threads // 32
  -- the element types (FP32 tensors and weights; the accumulator FP32 always)
  local ty = common.types({})
  local el_t, w_t, acc_t = ty.out_t, ty.w_t, ty.acc_t
  local TT = sms(l) * p.per_sm * threads       -- the threads the grid is sized for
  local TW = TT // 32
  -- the kernel's pointer arguments, by role, in order of first use
  local params, roles, emu, cname = {}, {}, {}, {}
  local function arg(role, decl)
    roles[#roles + 1] = role
    params[#params + 1] = decl
    emu[#emu + 1] = "(" .. decl:gsub("%s*[%w_]+$", "") .. ")a[" .. (#emu) .. "]"
  end
  -- each image group's pointers: the arguments (named with a trailing _) offset by
  -- the group's first image
  local groups = {}
  arg("in", "const unsigned char* __restrict__ px_")
  groups[1] = string.format("        const unsigned char* px = px_ + (size_t)i0 * %d;", l.input.C * l.input.HW)
  arg("out", "int* pred_")
  groups[2] = "        int* pred = pred_ + i0;"
  local function tensor(name)
    if not cname[name] then
      cname[name] = "t" .. (#roles - 1)
      arg("t:" .. name, el_t .. "* " .. cname[name] .. "_")
      local t = l.tensors[name] or error("network: no tensor '" .. tostring(name) .. "'", 0)
      -- (a view of a concat's output, bound at its slice, steps by the concat's images)
      local e = t.view and l.tensors[t.view].elems or t.elems
      groups[#groups + 1] = string.format("        " .. el_t .. "* %s = %s_ + (size_t)i0 * %d;", cname[name], cname[name], e)
    end
    return cname[name]
  end
  local weights = {}
  local function wptr(layer, kind)
    local key = kind .. ":" .. layer
    if not weights[key] then
      weights[key] = kind .. (#roles - 1)
      arg(key, "const " .. w_t .. "* __restrict__ " .. weights[key])
    end
    return weights[key]
  end
  -- an element of tensor `name` at index expression idx: the network's input is
  -- read as pixels, scaled as input_u8 scales them (common.pixel_reader; with a
  -- mean and std, the channel taken from idx)
  local inp = l.input
  local px_decl, px_read = common.pixel_reader(inp, acc_t)
  local consts = {}
  local function loader(name)
    if name ~= "input" then
      local t = tensor(name)
      return function(idx) return ty.to_acc(t .. "[" .. idx .. "]") end
    end
    -- the per-channel factors and terms, declared once however many layers read the input
    if px_decl ~= "" and #consts == 0 then consts[1] = px_decl end
    return function(idx)
      return px_read("px[" .. idx .. "]", inp.norm and string.format("(((%s) / %d) %% %d)", idx, inp.HW, inp.C))
    end
  end

  local bodies, scratch_words, shapes = {}, 32, {}
  -- whether tensor `name` is read by a phase after the j-th
  local function read_after(j, name)
    for k = j + 1, #l.phases do
      for _, t in ipairs(l.phases[k].ins or {}) do if t == name then return true end end
      for _, t in ipairs(l.phases[k].residual and l.phases[k].residual.others or {}) do
        if t == name then return true end
      end
    end
    return false
  end
  -- what an fc phase and an fc + softmax phase share: the shapes, the vector width
  -- (4 where rows and images stay 16-byte aligned and the input is a tensor), the
  -- weights, the input, activation and bias (indexed by `row`)
  local function fc_values(ly, ph, row)
    local IN, OUT = ly.C * ly.H * ly.W, ly.out
    local V = (IN % 4 == 0 and ph.ins[1] ~= "input") and 4 or 1
    return {
      layer = ly.name, IN = IN, OUT = OUT, V = V, NV = IN // V, VT = common.vec_t(w_t, V),
      XVT = common.vec_t(el_t, 4), x = V == 4 and tensor(ph.ins[1]) or false, load = loader(ph.ins[1]),
      w = wptr(ly.name, "w"), FULL = FULL, out = tensor(ph.out),
      shape = string.format("fc %d -> %d, %s%s", IN, OUT, ly.act, ly.bias and ", bias" or ""),
      act = function(v) return common.act(ly.act, v) end,
      bias_term = ly.bias and (" + " .. ty.w_to_acc(wptr(ly.name, "b") .. "[" .. row .. "]")) or "",
    }
  end
  local skip = {}
  for j, ph in ipairs(l.phases) do
    local ly = ph.layer
    local nx = l.phases[j + 1]
    if skip[j] then
      -- (computed with the phase before it)
    elseif ph.op == "fc" and ly.out <= 32 and ly.out * ly.C * ly.H * ly.W <= FUSED_TAIL_WEIGHTS and nx and
        nx.op == "softmax" and nx.ins[1] == ph.out and not read_after(j + 1, ph.out) then
      local v = fc_values(ly, ph, "r")
      v.sm_layer, v.sm_out, v.predict = nx.layer.name, tensor(nx.out), nx.predict or false
      v.ITER = common.ceil_div(v.NV, 32)
      shapes[#shapes + 1] = ly.name .. ": " .. v.shape .. " + " .. nx.layer.name .. ": softmax"
      bodies[#bodies + 1] = fc_softmax_source(common.typed({}, v))
      skip[j + 1] = true
    elseif ph.op == "conv" then
      local g = common.conv_geom(ly)
      local Cg = ly.C // g.G
      local RR = Cg * ly.K
      local OUTS = ly.M * g.OH * g.OW
      local PK, PS = 1, 1
      if g.kind == "max" or g.kind == "avg" then PK, PS = g.PK, g.PS end
      local WIN = PK * PK
      -- outputs a unit (TW, along a row): conv_tile
      local TW, NCOL = conv_tile(ly, g, RR, WIN, PK, PS, B * OUTS, TT)
      local UNITS = OUTS // TW
      -- lanes a unit: enough that the grid's threads have work, at most the rows
      local L = 1
      while L < 32 and L * 2 <= RR and B * UNITS * L < TT do L = L * 2 end
      local bias_term = ly.bias and (" + " .. ty.w_to_acc(wptr(ly.name, "b") .. "[m]")) or ""
      local residual
      if ph.residual then
        local terms, k = {}, 0
        for j = 1, #ph.residual.others + 1 do
          if j == ph.residual.at then terms[j] = "v"
          else k = k + 1; terms[j] = loader(ph.residual.others[k])("oo") end
        end
        residual = { n = #ph.residual.others, at = ph.residual.at, act = ph.residual.act,
          expr = common.act(ph.residual.act, table.concat(terms, " + ")) }
      end
      local shape = string.format("conv %dx%dx%d -> %dx%dx%d (K %d, stride %d, pad %d,%d,%d,%d%s), %s%s%s",
        ly.C, ly.H, ly.W, ly.M, g.CH, g.CW, ly.K, g.S, g.pt, g.pl, g.pb, g.pr,
        g.G > 1 and (", groups " .. g.G) or "", ly.act,
        (g.kind ~= "none") and string.format(", %s pool %dx%d/%d -> %dx%d", g.kind, PK, PK, PS, g.OH, g.OW) or "",
        ly.bias and ", bias" or "")
      -- output o of image b into a concat's slice (a view: its image stride the concat's)
      local ot = l.tensors[ph.out]
      local ostore = "oo"
      if ot and ot.view then
        ostore = string.format("oo + b * %d", l.tensors[ot.view].elems - OUTS)
        shape = shape .. ", into a slice of " .. ot.view
      end
      shapes[#shapes + 1] = ly.name .. ": " .. shape
      bodies[#bodies + 1] = conv_source(common.typed({}, {
        layer = ly.name, shape = shape, L = L, RR = RR, GPW = 32 // L, OUTS = OUTS, OH = g.OH, OW = g.OW, M = ly.M,
        WIN = WIN, PK = PK, TW = TW, OWT = g.OW // TW, UNITS = UNITS, NCOL = NCOL, XE = ly.C * ly.H * ly.W,
        cbase = g.G > 1 and string.format(" + (m / %d) * %d", ly.M // g.G, Cg * ly.H * ly.W) or "",
        w = wptr(ly.name, "w"), K = ly.K, PS = PS, S = g.S, PT = g.pt, PL = g.pl,
        padded = g.padded, H = ly.H, W = ly.W, load = loader(ph.ins[1]), FULL = FULL, pool = PK > 1 and g.kind or
          "none", act = function(v) return common.act(ly.act, v) end, bias_term = bias_term, residual = residual or false,
        out = tensor(ph.out), ostore = ostore,
      }))
    elseif ph.op == "fc" then
      local v = fc_values(ly, ph, "row")
      -- chunks a row: the warps the grid has over the rows, at least a vector a lane a chunk
      local S = math.max(1, math.min(TW // v.OUT, v.NV // 32))
      local CH = common.ceil_div(v.NV, S)
      S = common.ceil_div(v.NV, CH)
      local count_at, part_at = scratch_words, scratch_words + v.OUT
      if S > 1 then
        part_at = common.ceil_div(part_at, 4) * 4
        scratch_words = part_at + S * B * v.OUT
      end
      v.S, v.CH, v.ITER, v.B, v.count_at, v.part_at = S, CH, common.ceil_div(CH, 32), B, count_at, part_at
      shapes[#shapes + 1] = ly.name .. ": " .. v.shape
      bodies[#bodies + 1] = fc_source(common.typed({}, v))
    elseif ph.op == "softmax" then
      shapes[#shapes + 1] = ly.name .. ": softmax over " .. ph.E
      bodies[#bodies + 1] = softmax_source(common.typed({}, { layer = ly.name, E = ph.E, load = loader(ph.ins[1]), FULL = FULL,
        out = tensor(ph.out), predict = ph.predict or false,
        first_max = first_max_source(common.typed({}, { E = ph.E, FULL = FULL })) }))
    elseif ph.op == "argmax" then
      shapes[#shapes + 1] = "predict: argmax over " .. ph.E
      bodies[#bodies + 1] = argmax_source(common.typed({}, { E = ph.E, load = loader(ph.ins[1]), FULL = FULL,
        first_max = first_max_source(common.typed({}, { E = ph.E, FULL = FULL })) }))
    elseif ph.op == "add" then
      local terms = {}
      for j, name in ipairs(ph.ins) do terms[j] = loader(name)("i") end
      shapes[#shapes + 1] = ly.name .. ": add of " .. #ph.ins
      bodies[#bodies + 1] = add_source(common.typed({}, { layer = ly.name, ins = ph.ins, E = ph.E, out = tensor(ph.out),
        act_name = ly.act, act = function(v) return common.act(ly.act, v) end, sum = table.concat(terms, " + ") }))
    elseif ph.op == "concat" then
      -- (ph.at: each copied part's first element in the image, where some parts
      -- were written into their slices by their conv phases)
      local parts, at = {}, 0
      for j, name in ipairs(ph.ins) do
        local P = ph.parts[j]
        local from = ph.at and ph.at[j] or at
        parts[j] = { from = from, to = from + P, P = P, load = loader(name)(string.format("b * %d + e - %d", P, from)),
          whole = loader(name)("i") }
        at = at + P
      end
      local gaps = at ~= ph.E
      shapes[#shapes + 1] = ly.name .. ": concat of " .. #ph.ins .. (gaps and " (the others in place)" or "")
      bodies[#bodies + 1] = concat_source(common.typed({}, { layer = ly.name, ins = ph.ins, E = ph.E, parts = parts,
        out = tensor(ph.out), gaps = gaps }))
    else
      error("network: no phase for op '" .. tostring(ph.op) .. "'", 0)
    end
  end
  -- the bodies sit inside the loop over image groups: one more level of indentation
  for j, text in ipairs(bodies) do
    bodies[j] = text:gsub("[^\n]+", function(line) return line:sub(1, 1) == "#" and line or ("    " .. line) end)
  end
  arg("scratch", "unsigned* scratch")
  params[#params + 1] = "int n_all"
  roles[#roles + 1] = "n"
  local emu_args = table.concat(emu, ", ") .. ", n"
  local name = string.format("network_b%d_t%d_s%d_%s", B, threads, p.per_sm,
    digest(table.concat(roles, ",") .. table.concat(consts, "\n") .. table.concat(bodies, "\n")))
  local source = kernel_source({
    name = name, prelude = prelude({ name = name }), threads = threads, WPB = WPB, B = B,
    phases = l.phases, barriers = #bodies - 1, consts = consts, bodies = bodies, groups = groups,
    params = table.concat(params, ",\n    "), emu_args = emu_args,
  })
  return {
    name = name, source = source, args = table.concat(roles, ","),
    grid = { "res:" .. (sms(l) * p.per_sm), 1, 1 }, block = { threads, 1, 1 }, shared = 0,
    weights = "none", bias = "none", whole = true, scratch = scratch_words * 4,
    out_elems = 1, shape = shape_line(shapes),
  }
end

return T
