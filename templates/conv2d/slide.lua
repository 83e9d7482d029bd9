-- conv2d_slide.lua — direct convolution with sliding-window reuse in registers
-- (`strategy: slide`), every layer constant a literal.
--
-- A thread computes tm output maps x one row of `cols` outputs (with a fused
-- F x F pool of stride F, max or average: F conv rows of F*cols conv outputs,
-- `cols` pooled ones; F = 1 without a pool): F conv rows of TS conv columns. The reduction
-- runs over the C*K input rows (c, p) in one loop that is not unrolled: for
-- each, the thread holds the (TS-1)*stride + K elements under each of its conv
-- rows in registers (the next row's already on their way: a register
-- prefetch) and multiplies each into every output it touches, kernel columns
-- q: a loaded element feeds up to K*tm multiply-adds. The input rows come
-- either through L1 (each thread its own; neighbouring threads read the same
-- rows; the first row's loads set off before the weights' barrier) or, with
-- xs=1, from shared memory, where the block stages the rows under all its
-- outputs; xs=2 stages each thread's window of a row in a chunk of its own
-- (an odd number of quads wide, so a warp's float4 reads meet no bank
-- conflict) and reads it as float4. With pf=2 the second row of an iteration
-- is loaded behind a branch (not in the last iteration); pf=3 loads it
-- unconditionally (the last iteration loads a row again): behind the branch,
-- ptxas made the next products wait for those loads as well (Nsight Compute on
-- 2018sp conv2: 11 % of the stall samples on mul(vn)'s first FFMA), without
-- it 16-row blocks ran 0.756 -> 0.732 ms (but 21-row blocks 0.748 -> 0.801,
-- 2018fa's tm=12 tile 4.35 -> 6.15: its registers rose 166 -> 200), so both
-- stay. The weights sit in shared memory as the runtime uploads them,
-- transposed (C*K*K rows of M maps), `cs` channels at a time: a thread's tm
-- maps of one (c, p, q) are one to four vector reads that every thread of a
-- warp shares (a broadcast), each feeding 4*F*TS FMAs.
-- The unrolled body is K*tm*F*TS multiply-adds: it does not grow with C.
-- Measured on an H100 (bench/RESULTS.md), it ran the course's conv2 layers
-- (C = 6 and 12, 16 and 24 maps), whose small C*K*K leaves an implicit GEMM's
-- gather and slice pipeline little to amortise, 1.17-1.25x faster than conv2d_igemm
-- (and lost to conv2d_igemm_tc on zoo layers of 48-50 maps and C*K*K 750-1944);
-- more rows a thread (the input rows of a channel in one loop, each meeting
-- its conv rows at run-time kernel rows) lost 1.3-2x, and so did warps whose
-- threads share a column tile (a partial last tile in its own shorter code,
-- but each read through L1 spread over 16 rows instead of about 5).
-- A block holds `rows` such thread rows (images x output rows, flattened: a
-- block may span images) of every map: rows * (M/tm) * ceil(row/cols) threads.
-- The last thread of a row may be partial (cols need not divide the row): its
-- columns past the row read zeros and are not stored.
-- Padding: the input rows and columns a thread may read outside the input are
-- known from the layer; only those get a bound check, and read 0. Where a thread
-- holds a whole output row (cols = the row), its columns are literals and the
-- products of the padding's columns are left out of the unrolled code (a 7x7
-- kernel with padding 3 on 9x9 maps: 51 of 63 products a row remain). Rows of
-- the padding are not skipped: a warp's threads lie on different rows, and
-- blocks of one output row over several images (each thread its own image's
-- rows) ran 1.2-1.4x slower than the same tiles on consecutive rows through
-- L1, and 2.1-3.8x slower than the best with the rows staged (bench/RESULTS.md).
-- Two ways to feed the same loop lost on the course's conv2 layers, where the FFMAs are
-- 87 % of the instructions and 78 % of the issue slots are busy (Nsight Compute on an
-- H100): input rows copied by cp.async into two buffers, the next stage's in flight while
-- one is multiplied (1.19-1.45x slower: the stalls moved to shared-memory throttling and
-- barriers), and blocks taking several groups of rows in turn with their weights staged
-- once (1.00-1.15x slower); bench/journal/2026-11.md, 2026-11-27. xs=2, which reads
-- each row from shared memory in 4 float4 instead of 13 loads through L1 (whose
-- sectors were most of L1's traffic), took the loop's load stalls away but the
-- block's staging and barrier cost more: 0.763-0.772 ms at 16 rows, 0.83-0.88
-- at 21 (an H100, 2026-11-27). Asking L2 or L1 for a block's rows up front
-- (prefetch) lost 4 %.
-- Epilogue: the F x F max or average, bias, activation, store; other pools
-- (overlapping windows, the global average) leave the kernel unfused: conv +
-- bias, then the pool template.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}

T.out_slice = true   -- common.out_slice: the output written into a concat's slice

T.doc = "direct convolution, each input row reused from registers across a thread's maps, rows and columns"

-- Most multiply-adds in the unrolled body of the loop (K*tm*F*TS an input
-- row), and most registers the tile, its rows of inputs and their prefetch may want.
T.BODY_BUDGET = 4096
local REG_BUDGET = 232

-- The layer's geometry: whether the pool is fused, F (its window, 1 when none),
-- the outputs per row and rows per image of the kernel's output.
local function geom(l)
  local g = common.conv_geom(l)
  local fused = g.kind == "none" or g.tiled_pool
  local pooled = fused and g.kind ~= "none"
  local F = pooled and g.PK or 1
  return g, fused, pooled, F, pooled and g.OW or g.CW, pooled and g.OH or g.CH
end

-- The shared-memory layout of a block's input rows (xs=1). The block's `rows`
-- thread rows are consecutive in (image, row) order, so it may span images:
-- the input rows (slots) under its first image's thread rows come first, from
-- the first one's top, then each later image's from its own top (NFULL slots
-- an image). A thread's conv row f meets kernel row p at slot base + f*S + p.
-- SLOTS: the most slots any block needs (over every first row).
local slot_memo, pitch_memo = {}, {}
local function slots(rows, step, IR, RT)
  local key = string.format("%d %d %d %d", rows, step, IR, RT)
  if slot_memo[key] then return table.unpack(slot_memo[key]) end
  local nfull = (RT - 1) * step + IR        -- under every thread row of an image
  local most = 0
  for o0 = 0, RT - 1 do
    local n0 = (RT - 1 - o0) * step + IR     -- under the first image's rows from o0
    local last = o0 + rows - 1               -- the block's last thread row, counted from image 0
    local used
    if last < RT then used = (last - o0) * step + IR
    else
      local e, o = last // RT, last % RT
      used = n0 + (e - 1) * nfull + o * step + IR
    end
    if used > most then most = used end
  end
  slot_memo[key] = { most, nfull }
  return most, nfull
end

-- The row pitch of the staged input: at least the columns a row's threads read
-- (ragged last thread included), chosen among the next 32 to spread the first
-- warp's reads of a row over the most banks (threads of one row read colstep
-- columns apart, thread rows rowstep rows apart); and the worst bank's number
-- of distinct words.
local function pitch(need, G, CT, rowstep, colstep, threads)
  local key = string.format("%d %d %d %d %d %d", need, G, CT, rowstep, colstep, threads)
  if pitch_memo[key] then return table.unpack(pitch_memo[key]) end
  local best, bestd
  for wp = need, need + 31 do
    local banks, deg = {}, 0
    for lane = 0, math.min(32, threads) - 1 do
      local ct, k = (lane // G) % CT, lane // (G * CT)
      local addr = k * rowstep * wp + ct * colstep
      local b = addr % 32
      banks[b] = banks[b] or { n = 0 }
      if not banks[b][addr] then
        banks[b][addr] = true
        banks[b].n = banks[b].n + 1
        if banks[b].n > deg then deg = banks[b].n end
      end
    end
    if not bestd or deg < bestd then best, bestd = wp, deg end
  end
  pitch_memo[key] = { best, bestd }
  return best, bestd
end

-- The shape of one configuration: threads, registers, shared memory and the tile.
local function shape(l, p)
  local g, fused, pooled, F, RL, RT = geom(l)
  local s = { g = g, fused = fused, pooled = pooled, F = F, RL = RL, RT = RT }
  s.G = l.M // p.tm                        -- map groups
  s.CT = common.ceil_div(RL, p.cols)       -- threads along an output row
  s.threads = p.rows * s.G * s.CT
  s.TS = F * p.cols                        -- conv columns a thread computes (in F rows)
  s.PC = (s.TS - 1) * g.S + l.K            -- input elements under a row of them
  s.IR = (s.F - 1) * g.S + l.K            -- input rows under them, a channel
  s.acc = p.tm * s.F * s.TS
  s.body = l.K * s.acc
  -- the columns a thread may read left of the input (the padding) and right of it
  -- (the last thread's origin plus its PC elements past W): the only ones tested;
  -- a thread holding a whole output row (one column tile) knows its columns as
  -- literals, and the products of the padding's columns are left out of its code
  s.maxx = (s.CT - 1) * s.TS * g.S - g.pl
  s.left_out, s.right_out = g.pl > 0, s.maxx + s.PC > l.W
  s.colskip = s.CT == 1 and (s.left_out or s.right_out)
  s.work = s.body
  if s.colskip then
    local inside = 0
    for t = 0, s.TS - 1 do
      for q = 0, l.K - 1 do
        local j = t * g.S + q
        if j >= g.pl and j < l.W + g.pl then inside = inside + 1 end
      end
    end
    s.work = s.body * inside // (s.TS * l.K)
  end
  s.vec = (p.tm % 4 == 0 and l.M % 4 == 0) and 4 or (p.tm % 2 == 0 and l.M % 2 == 0) and 2 or 1
  -- the tile, its rows of inputs and their prefetch, a weight vector and about
  -- 24 for addresses and indices
  -- input elements in registers, prefetch included; pf=3's unconditional loads
  -- keep a third row's worth live (measured: 2018fa's tm=12 tile 166 -> 200)
  s.inputs = (p.pf == 3 and 3 or p.pf >= 1 and 2 or 1) * s.F * s.PC
  s.regs = s.acc + s.inputs + s.vec + 24
  s.xfloats, s.conflicts = 0, 1
  if p.xs >= 1 then s.SLOTS, s.NFULL = slots(p.rows, s.F * g.S, s.IR, s.RT) end
  if p.xs == 2 then
    -- each thread's window of a slot in its own chunk of WC floats (PC rounded
    -- up to quads), read as float4: xs[cs][SLOTS][CT][WC]; an odd number of quads, so that the float4 reads of 8 consecutive chunks
    -- (a phase of a warp's 128-bit reads) fall on 8 different quads of banks
    s.WV = common.ceil_div(s.PC, 4) * 4          -- the floats read (and written)
    s.WC = s.WV
    if (s.WC // 4) % 2 == 0 then s.WC = s.WC + 4 end
    s.RP, s.CTOFF = s.CT * s.WC, s.WC
    s.xfloats = p.cs * s.SLOTS * s.RP
  elseif p.xs == 1 then
    s.WP, s.conflicts = pitch((s.CT * s.TS - 1) * g.S + l.K, s.G, s.CT, s.F * g.S, s.TS * g.S, s.threads)
    -- rounded up to whole quads: the weights after them are read as float4 (and
    -- float2), which must lie on 16 (8) bytes; 2018sp's conv2 at rows=21 cs=6
    -- xs=1 stopped with a misaligned address when they did not
    s.xfloats = common.ceil_div(p.cs * s.SLOTS * s.WP, 4) * 4
    s.RP, s.CTOFF = s.WP, s.TS * g.S
  end
  s.wfloats = p.cs * l.K * l.K * l.M
  s.smem = 4 * (s.xfloats + s.wfloats)
  return s
end

-- The most channels one stage may hold with the input rows read through L1
-- (xs=0, the default): all C where their weights fit the target's shared
-- memory, at most 64 KiB, so that several blocks share an SM (measured on an
-- H100: one stage of every channel beat two or more on both course layers),
-- else the largest divisor of C that fits.
local function default_cs(l)
  local per, cap = 4 * l.K * l.K * l.M, math.min(common.max_shared(l), 64 * 1024)
  local d = common.divisors(l.C)
  for i = #d, 1, -1 do
    if d[i] * per <= cap then return d[i] end
  end
  return 1
end

-- rows: powers of two, and counts that nearly fill whole warps where a row
-- has 3, 6 or 12 threads (21 rows of 6 threads, 126 of 128 lanes: 0.748 ms
-- against 0.756 for 16 rows on the course's 2018sp conv2 with pf=2; with pf=3
-- 16 rows won, 0.732 against 0.801: bench/RESULTS.md)
local ROWS = { 1, 2, 3, 4, 5, 6, 8, 10, 16, 21, 32, 42, 64 }

-- The preferred configuration: the cheapest (T.cost) over tm, cols and rows
-- (every legal value: layers of many maps or wide rows fit a block only with
-- a few rows) at the other defaults, worked out once a layer.
local preferred = setmetatable({}, { __mode = "k" })
local no_tile = setmetatable({}, { __mode = "k" })   -- layers no configuration fits
local check_tile
local function prefer(l)
  if preferred[l] then return preferred[l] end
  local best, bestc
  local _, _, _, _, RL = geom(l)
  local cs = default_cs(l)
  -- pf=2 where a stage's rows pair up (C*K even, or one stage); else pf=1, then 0
  for _, pf in ipairs({ 2, 1, 0 }) do
    for _, tm in ipairs(common.divisors(l.M, 32)) do
      for cols = 1, math.min(16, RL) do
        for _, rows in ipairs(ROWS) do
          local p = { tm = tm, cols = cols, rows = rows, cs = cs, xs = 0, pf = pf, occ = 1 }
          if not check_tile(l, p) then
            local c = T.cost(l, p)
            if not bestc or c < bestc then best, bestc = p, c end
          end
        end
      end
    end
    if best then break end
  end
  -- none: no tile fits (xs, occ and smaller stages only add to what a block
  -- needs, and the weights' own check comes first)
  no_tile[l] = best == nil
  preferred[l] = best or { tm = 1, cols = 1, rows = 8, cs = cs, xs = 0, pf = 2, occ = 1 }
  return preferred[l]
end

T.params = {
  { name = "tm", doc = "output maps per thread; divides M",
    legal = function(l) return common.divisors(l.M, 32) end,
    default = function(l) return prefer(l).tm end },
  { name = "cols", doc = "outputs (pooled outputs when pooling) per thread along a row",
    legal = function(l)
      local _, _, _, _, RL = geom(l)
      return common.multiples(1, 1, math.min(16, RL))
    end,
    default = function(l) return prefer(l).cols end },
  { name = "rows", doc = "thread rows (of any image) per block",
    legal = function(_) return ROWS end,
    default = function(l) return prefer(l).rows end },
  -- cs is no tuning choice: the fewest stages that fit won wherever measured
  -- (one stage 4.04-4.16 ms, two 4.35, three 4.37 on 2018fa conv2)
  { name = "cs", tune = false,
    doc = "input channels whose weights (and staged input rows) shared memory holds at a time; divides C",
    legal = function(l) return common.divisors(l.C) end,
    default = function(l) return prefer(l).cs end },
  { name = "xs", doc = "1: stage the block's input rows in shared memory; 2: the same, each thread's window in its own chunk read as float4; 0: each thread reads its own through L1",
    legal = function(_) return { 0, 1, 2 } end,
    default = function(_) return 0 end },
  { name = "pf", doc = "1: load the next input row during this row's products; 2: the same, two rows an iteration in registers taken in turn; 3: as 2, the second row's loads unconditional (the last iteration's load again a row of the stage)",
    legal = function(_) return { 0, 1, 2, 3 } end,
    default = function(l) return prefer(l).pf end },
  common.occ_param({ 1, 2, 3, 4, 6, 8 }),   -- blocks are small: up to 8 of them may share an SM
}

function T.check(l, p)
  local why_g = common.refuse_groups(l, "conv2d_slide")
  if why_g then return why_g, nil end
  local why, blame = check_tile(l, p)
  if not why then return nil end
  prefer(l)
  if no_tile[l] and blame ~= "cs" then
    local _, _, _, F, RL = geom(l)
    return string.format("no tile fits this layer: M=%d splits only into groups of tm = %s maps, and every " ..
      "tm x cols tile of an output row of %d%s needs more than %d threads a block, more registers than a " ..
      "thread gets or more than %d unrolled multiply-adds; use strategy igemm", l.M,
      table.concat(common.divisors(l.M, 32), ", "), RL,
      F > 1 and string.format(" (%d conv rows under each, pooled)", F) or "", common.MAX_THREADS, T.BODY_BUDGET), "tm"
  end
  return why, blame
end

check_tile = function(l, p)
  local one = 4 * l.K * l.K * l.M
  if one > common.max_shared(l) then
    -- no configuration holds: the message a layer without params gets
    return string.format("one input channel's weights take %d bytes (M*K*K floats) and shared memory holds %d: " ..
      "use strategy igemm for this layer", one, common.max_shared(l)), "cs"
  end
  local s = shape(l, p)
  if p.cols > s.RL then
    return string.format("cols=%d is longer than the output row of %d", p.cols, s.RL), "cols"
  end
  if s.threads > common.MAX_THREADS then
    return string.format("rows*(M/tm)*ceil(row/cols) = %d threads; a block has at most %d",
      s.threads, common.MAX_THREADS), "rows"
  end
  local unrolled = s.body * (p.pf >= 2 and 2 or 1)
  if unrolled > T.BODY_BUDGET then
    return string.format("K*tm*(conv outputs a thread)%s = %d unrolled multiply-adds; the budget is %d",
      p.pf >= 2 and "*2 rows" or "", unrolled, T.BODY_BUDGET), p.pf >= 2 and "pf" or "tm"
  end
  if s.regs > REG_BUDGET then
    return string.format("the %d accumulators and %d input elements need about %d registers a thread; at most %d",
      s.acc, s.inputs, s.regs, REG_BUDGET), "tm"
  end
  -- a block's warps are dealt to the SM's four schedulers, each with a quarter
  -- of the registers: ptxas caps a thread at what the busiest one's share
  -- allows; the estimate is within about 6 of what ptxas takes, so 8 spare
  local rps = (l.target and l.target.regs_per_sm) or 65536
  local cap = math.min(255, (rps // 4) // (common.ceil_div(common.ceil_div(s.threads, 32), 4) * 32) // 8 * 8)
  if s.regs + 8 > cap and cap < 255 then
    return string.format("%d threads a block leave %d registers a thread; the %d accumulators and their inputs need about %d",
      s.threads, cap, s.acc, s.regs), "rows"
  end
  if s.smem > common.max_shared(l) then
    return string.format("cs=%d stages %d bytes of %sweights in shared memory; at most %d fit",
      p.cs, s.smem, p.xs >= 1 and "input rows and " or "", common.max_shared(l)), "cs"
  end
  if p.pf >= 2 and l.C > p.cs and (p.cs * l.K) % 2 == 1 then
    return string.format("pf=%d takes input rows two at a time, and a stage of cs=%d channels has %d", p.pf, p.cs, p.cs * l.K), "pf"
  end
  local why, blame = common.check_occ(l, p.occ, s.threads, s.regs, s.smem, "the tile and its inputs")
  if why then return why, blame end
  return nil
end

-- The cost model (common.cost): a thread issues, per input row (c, p), F*PC
-- reads (from shared memory slowed by the pitch's bank conflicts; through L1
-- they count twice: a warp's lanes read several rows), K*tm/vec weight reads
-- and K*tm*F*TS FMAs (and with pf=1 F*PC moves); a block stages its
-- weights (and input rows: a load, a store and some indexing a word, the
-- indexing shared by a stage's channels) once per `cs` channels behind two
-- barriers; partial threads compute their missing outputs all the same.
-- Without the prefetch each row's reads are waited for. A thread tile is about
-- acc/32 chains of work. Rough: its first choice ran 2 % (2018fa conv2) and
-- 12-17 % (2018sp conv2) behind the best configuration measured, and lost to
-- `auto`'s choice on seven zoo layers (bench/RESULTS.md); tuning decides.
function T.cost(l, p)
  local s = shape(l, p)
  local copy = p.pf == 1 and s.F * s.PC or 0   -- pf=1 moves the prefetched row into place
  local reads = p.xs == 2 and s.F * s.WV // 2 or s.F * s.PC * (p.xs == 1 and s.conflicts or 2)
  local per_c = l.K * (reads + l.K * (p.tm // s.vec) + s.work + copy + 6)
  local stages = l.C // p.cs
  local staged = p.xs == 1 and s.SLOTS * s.WP * (12 + 2 * p.cs)
    or p.xs == 2 and s.SLOTS * s.CT * (12 + p.cs * (2 * s.PC + s.WC // 4)) or 0
  local stage = (staged + 2 * s.wfloats) // s.threads + 40
  local instr = l.C * per_c + stages * stage + 40 + s.acc
  local blocks = common.ceil_div(common.cost.images(l) * s.RT, p.rows)
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local ilp = math.max(1, math.min(4, s.acc // 32))
  local warps = common.ceil_div(s.threads, 32)
  local clocks = seq * warps * instr / 4 / common.cost.busy(conc, s.threads, ilp)
  if p.pf == 0 then clocks = clocks * 1.1 end
  return clocks * common.cost.spills(squeezed)
end

local source = engine.compile([[
// A block: output rows task0 .. task0+{{rows - 1}} (task = image * {{RT}} + output row), every map;
// {{G}} map group(s) x {{CT}} thread(s) a row: {{threads}} threads; a thread: {{tm}} maps x {{F}} conv
// row(s) x {{TS}} conv columns, from {{F}} x {{PC}} input elements an input row (c, p).
% if xch then
// Shared memory, {{cs}} channel(s) at a time ({{smem}} B): xs[{{cs}}][{{SLOTS}}][{{CT}}][{{WC}}] the block's input
// rows, each thread's window of {{PC}} in its own chunk (zero outside the input), ws[{{cs}} * {{K * K}}][{{M}}]
// their weights (transposed by the runtime)
% elseif xsm then
// Shared memory, {{cs}} channel(s) at a time ({{smem}} B): xs[{{cs}}][{{SLOTS}}][{{WP}}] the block's input rows
// (zero outside the input), ws[{{cs}} * {{K * K}}][{{M}}] their weights (transposed by the runtime)
% else
// Input rows from global memory (through L1); shared memory ({{smem}} B): ws[{{cs}} * {{K * K}}][{{M}}],
// the weights of {{cs}} channel(s) at a time (transposed by the runtime)
% end
{{head}}
{
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
% if xsm then
    {{acc_t}}* const xs = reinterpret_cast<{{acc_t}}*>(smem4);
    {{acc_t}}* const ws = xs + {{xfloats}};
% else
    {{acc_t}}* const ws = reinterpret_cast<{{acc_t}}*>(smem4);
% end
    const int tid = threadIdx.x;
    const int grp = tid % {{G}};                  // maps grp*{{tm}} .. +{{tm - 1}}
    const int ct = (tid / {{G}}) % {{CT}};        // output columns ct*{{cols}} .. +{{cols - 1}}
    const int task0 = blockIdx.x * {{rows}};
    const int task = task0 + tid / {{G * CT}};
    // threads past the batch stage with the others, then store nothing
    const bool live = task < n * {{RT}};
% if xsm then
    const int img0 = task0 / {{RT}}, trow0 = task0 - img0 * {{RT}};
    const int img = task / {{RT}}, trow = task - img * {{RT}};
    // slots under the first image's thread rows; this thread's first slot
    const int n0 = ({{RT - 1}} - trow0) * {{F * S}} + {{IR}};
    const int base = img == img0 ? (trow - trow0) * {{F * S}} : n0 + (img - img0 - 1) * {{NFULL}} + trow * {{F * S}};
    const {{acc_t}}* const xt = xs + base * {{RP}} + ct * {{CTOFF}};
    // slot -> the image and input row it holds (the first image's from trow0's rows on,
    // then each later image's from its top; rows past the batch or the input read zeros)
    auto slot_at = [&](int slot, int& im, int& iy) {
        if (slot < n0) im = img0, iy = trow0 * {{F * S}} - {{pt}} + slot;
        else {
            const int e = (slot - n0) / {{NFULL}};
            im = img0 + 1 + e, iy = slot - n0 - e * {{NFULL}} - {{pt}};
        }
    };
% else
    const int at = live ? task : 0;
    const int img = at / {{RT}}, trow = at - img * {{RT}};
    // the tile's first input row and column (negative in the padding)
    const int iy0 = trow * {{F * S}} - {{pt}}, ix0 = ct * {{TS * S}} - {{pl}};
    const {{in_t}}* const xt = in + img * {{C * H * W}} + iy0 * {{W}} + ix0;
% end
    (void)b_arg;

    // stage channels c0 .. c0+{{cs - 1}}: {{xsm and "input rows (slot -> image, input row) and " or ""}}weights
    auto stage = [&](int c0) {
% if xch then
        // a chunk (slot, column tile) at a time: its PC elements from the
        // input row (zero outside the input), written as float4
#pragma unroll 1
        for (int i = tid; i < {{SLOTS * CT}}; i += {{threads}}) {
            const int slot = i / {{CT}}, tc = i - slot * {{CT}};
            int im, iy;
            slot_at(slot, im, iy);
            const int x0 = tc * {{TS * S}} - {{pl}};
            const bool rok = im < n && (unsigned)iy < {{H}}u;
            const {{in_t}}* const src = in + (rok ? im * {{C * H * W}} + c0 * {{H * W}} + iy * {{W}} : 0) + x0;
            {{vec_t(acc_t, 4)}}* const dst = reinterpret_cast<{{vec_t(acc_t, 4)}}*>(xs) + i * {{WC // 4}};
            // every channel's loads in flight at once where no accumulator is live yet (one stage)
#pragma unroll{{stages == 1 and "" or " 1"}}
            for (int cl = 0; cl < {{cs}}; cl++) {
                {{acc_t}} e[{{WV}}];
#pragma unroll
                for (int j = 0; j < {{WV}}; j++)
                    e[j] = (j < {{PC}} && rok && (unsigned)(x0 + j) < {{W}}u) ? {{to_acc("__ldg(src + cl * " .. H * W .. " + j)")}} : 0.0f;
% -- make_float4: the staged type is the accumulator's, FP32 (common.ACC)
#pragma unroll
                for (int j = 0; j < {{WV}}; j += 4)
                    dst[cl * {{SLOTS * RP // 4}} + j / 4] = make_float4(e[j], e[j + 1], e[j + 2], e[j + 3]);
            }
        }
% elseif xsm then
        // (loops kept rolled: unrolled, their loads in flight took registers
        // beside the accumulators of a stage after the first)
#pragma unroll 1
        for (int i = tid; i < {{SLOTS * WP}}; i += {{threads}}) {
            const int slot = i / {{WP}}, col = i - slot * {{WP}};
            int im, iy;
            slot_at(slot, im, iy);
            const int ix = col - {{pl}};
            const bool ok = im < n && (unsigned)iy < {{H}}u && (unsigned)ix < {{W}}u;
            const {{in_t}}* const src = in + (ok ? im * {{C * H * W}} + c0 * {{H * W}} + iy * {{W}} + ix : 0);
#pragma unroll
            for (int cl = 0; cl < {{cs}}; cl++) xs[cl * {{SLOTS * WP}} + i] = ok ? {{to_acc("__ldg(src + cl * " .. H * W .. ")")}} : 0.0f;
        }
% end
% if wvec then
        const {{vec_t(w_t, 4)}}* const wsrc = reinterpret_cast<const {{vec_t(w_t, 4)}}*>(w_arg + c0 * {{K * K * M}});
#pragma unroll {{wunroll}}
        for (int i = tid; i < {{wfloats // 4}}; i += {{threads}}) smem4[{{xfloats // 4}} + i] = __ldg(wsrc + i);
% else
        const {{w_t}}* const wsrc = w_arg + c0 * {{K * K * M}};
#pragma unroll {{wunroll}}
        for (int i = tid; i < {{wfloats}}; i += {{threads}}) ws[i] = {{w_to_acc("__ldg(wsrc + i)")}};
% end
    };

    {{acc_t}} acc[{{tm}}][{{F}}][{{TS}}];
#pragma unroll
    for (int m = 0; m < {{tm}}; m++)
#pragma unroll
        for (int f = 0; f < {{F}}; f++)
#pragma unroll
            for (int s = 0; s < {{TS}}; s++) acc[m][f][s] = 0.0f;

% if xsm then
    // element j under conv row f at input row r = (channel of the stage, kernel row p)
    auto load = [&]({{acc_t}} (&v)[{{F}}][{{PC}}], int r) {
        const int c = r / {{K}}, p = r - c * {{K}};
        const {{acc_t}}* const xr = xt + (c * {{SLOTS}} + p) * {{RP}};
%   if xch then
        // the window as float4 reads (its chunk lies on 16 bytes)
#pragma unroll
        for (int f = 0; f < {{F}}; f++)
#pragma unroll
            for (int j = 0; j < {{WV}}; j += 4) {
                const {{vec_t(acc_t, 4)}} t = *reinterpret_cast<const {{vec_t(acc_t, 4)}}*>(xr + f * {{S * RP}} + j);
                const {{acc_t}} e[4] = { t.x, t.y, t.z, t.w };
#pragma unroll
                for (int u = 0; u < 4; u++)
                    if (j + u < {{PC}}) v[f][j + u] = e[u];
            }
%   else
#pragma unroll
        for (int f = 0; f < {{F}}; f++)
#pragma unroll
            for (int j = 0; j < {{PC}}; j++) v[f][j] = xr[f * {{S * RP}} + j];
%   end
    };
% else
    // element j under conv row f at input row r = (channel c, kernel row p); 0 outside the input
    auto load = [&]({{acc_t}} (&v)[{{F}}][{{PC}}], int r) {
        const int c = r / {{K}}, p = r - c * {{K}};
        const {{in_t}}* const xr = xt + c * {{H * W}} + p * {{W}};
#pragma unroll
        for (int f = 0; f < {{F}}; f++) {
%   if rowcheck then
            const bool rok = (unsigned)(iy0 + p + f * {{S}}) < {{H}}u;
%   end
#pragma unroll
            for (int j = 0; j < {{PC}}; j++) v[f][j] = {{okexpr}}{{to_acc("__ldg(xr + f * " .. S * W .. " + j)")}}{{okend}};
        }
    };
% end

% if not xsm then
    // the first input row's loads set off before the weights' barrier
    {{acc_t}} v[{{F}}][{{PC}}];
    load(v, 0);
% end
% if stages == 1 then
    stage(0);
    __syncthreads();
% end

    // acc += the products of the stage's input row rl, its elements in x
    auto mul = [&](const {{acc_t}} (&x)[{{F}}][{{PC}}], int rl) {
        const {{acc_t}}* const wr = ws + rl * {{K * M}} + grp * {{tm}};
#pragma unroll
        for (int q = 0; q < {{K}}; q++) {
#pragma unroll
            for (int m = 0; m < {{tm}}; m += {{vec}}) {
% if vec == 4 then
                const {{vec_t(acc_t, 4)}} t = *reinterpret_cast<const {{vec_t(acc_t, 4)}}*>(wr + q * {{M}} + m);
                const {{acc_t}} wv[4] = { t.x, t.y, t.z, t.w };
% elseif vec == 2 then
                const {{vec_t(acc_t, 2)}} t = *reinterpret_cast<const {{vec_t(acc_t, 2)}}*>(wr + q * {{M}} + m);
                const {{acc_t}} wv[2] = { t.x, t.y };
% else
                const {{acc_t}} wv[1] = { wr[q * {{M}} + m] };
% end
#pragma unroll
                for (int u = 0; u < {{vec}}; u++)
#pragma unroll
                    for (int f = 0; f < {{F}}; f++)
#pragma unroll
% if colskip then
                        for (int s = 0; s < {{TS}}; s++) {
                            // the row's columns are literals: those in the padding read zeros, left out
                            if (s * {{S}} + q < {{pl}} || s * {{S}} + q >= {{W + pl}}) continue;
                            acc[m + u][f][s] = fmaf(wv[u], x[f][s * {{S}} + q], acc[m + u][f][s]);
                        }
% else
                        for (int s = 0; s < {{TS}}; s++)
                            acc[m + u][f][s] = fmaf(wv[u], x[f][s * {{S}} + q], acc[m + u][f][s]);
% end
            }
        }
    };

% if xsm then
    {{acc_t}} v[{{F}}][{{PC}}];
% end
% if pf >= 1 then
    {{acc_t}} vn[{{F}}][{{PC}}];
% end
% if stages == 1 and xsm then
    load(v, 0);
% end
    // one loop over the C*K input rows (c, p), {{step}} an iteration; a loop nest here was unrolled by nvcc 13
#pragma unroll 1
    for (int r = 0; r < {{C * K}}; r += {{step}}) {
% if stages > 1 then
        const int rl = r % {{cs * K}};   // the row within its stage
        if (rl == 0) {
            __syncthreads();   // every thread is done with the previous stage
            stage(r / {{K}});
            __syncthreads();
%   if xsm then
            load(v, 0);
%   end
        }
% else
        const int rl = r;
% end
% if pf >= 2 then
        // row rl from v while row rl+1 arrives in vn, then rl+1 from vn while rl+2 arrives in v
        load(vn, {{next}} < {{last_row}} ? {{next}} : {{next}} - 1);
        mul(v, rl);
%   if pf == 3 then
        // unconditional (the last iteration loads a row again, unused): behind a
        // branch (pf=2), mul(vn)'s first FFMA waited for these loads as well
        load(v, {{next2}} < {{last_row}} ? {{next2}} : {{last_row}} - 1);
%   else
        if ({{next2}} < {{last_row}}) load(v, {{next2}});
%   end
%   if (C * K) % 2 == 1 then
        if (r + 1 < {{C * K}}) mul(vn, rl + 1);
%   else
        mul(vn, rl + 1);
%   end
% elseif pf == 1 then
        load(vn, {{next}} < {{last_row}} ? {{next}} : {{next}} - 1);
        mul(v, rl);
#pragma unroll
        for (int f = 0; f < {{F}}; f++)
#pragma unroll
            for (int j = 0; j < {{PC}}; j++) v[f][j] = vn[f][j];
% else
        mul(v, rl);
        if ({{next}} < {{last_row}}) load(v, {{next}});
% end
        // a compiler barrier: without it nvcc 13 unrolls this loop whole when
        // nothing else in it (a stage's barriers) stops it, pragma or not
        asm volatile("" ::: "memory");
    }

    // epilogue: {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, store
    if (!live) return;
    {{out_t}}* const y = out + img * {{OS}} + grp * {{tm * OH * OW}} + trow * {{OW}} + ct * {{cols}};
#pragma unroll
    for (int m = 0; m < {{tm}}; m++) {
% if bias then
        const {{acc_t}} b = {{w_to_acc("__ldg(b_arg + grp * " .. tm .. " + m)")}};
% end
#pragma unroll
        for (int s = 0; s < {{cols}}; s++) {
% if pooled and pool_kind == "max" then
            {{acc_t}} a = acc[m][0][s * {{F}}];
#pragma unroll
            for (int f = 0; f < {{F}}; f++)
#pragma unroll
                for (int d = 0; d < {{F}}; d++) a = fmaxf(a, acc[m][f][s * {{F}} + d]);
            const {{acc_t}} val = {{act("a" .. (bias and " + b" or ""))}};
% elseif pooled then
            {{acc_t}} a = 0.0f;
#pragma unroll
            for (int f = 0; f < {{F}}; f++)
#pragma unroll
                for (int d = 0; d < {{F}}; d++) a += {{act("acc[m][f][s * " .. F .. " + d]" .. (bias and " + b" or ""))}};
            const {{acc_t}} val = a * {{inv}};
% else
            const {{acc_t}} val = {{act("acc[m][0][s]" .. (bias and " + b" or ""))}};
% end
% if ragged then
            if (s < {{last}} || ct < {{CT - 1}}) y[m * {{OH * OW}} + s] = {{from_acc("val")}};
% else
            y[m * {{OH * OW}} + s] = {{from_acc("val")}};
% end
        }
    }
}
]], "conv2d_slide")

function T.kernel(l, p)
  local s = shape(l, p)
  local g = s.g
  local act = s.fused and l.act or "none"
  local OH, OW = s.RT, s.RL
  -- reading through L1: an input row lies outside the input where the padding
  -- or a partial last pool window reaches past it; columns j may fall left of
  -- the input (j < pl) or right of it (the last thread's origin plus j at or
  -- past W); only those are tested
  local rowcheck = g.pt > 0 or (s.RT * s.F - 1) * g.S + l.K - g.pt > l.H
  local conds = {}
  if rowcheck then conds[#conds + 1] = "rok" end
  if s.left_out then conds[#conds + 1] = string.format("(j >= %d || ix0 + j >= 0)", g.pl) end
  if s.right_out then conds[#conds + 1] = string.format("(j < %d || ix0 + j < %d)", l.W - s.maxx, l.W) end
  local okexpr, okend = "", ""
  if #conds > 0 then okexpr, okend = "(" .. table.concat(conds, " && ") .. ") ? ", " : 0.0f" end
  local xsm = p.xs >= 1
  local ty = common.types(l)
  -- the weights staged as quads, copied as they are: where they are stored in
  -- the staged (accumulator) type; otherwise one at a time, converted
  local wvec = s.wfloats % 4 == 0 and ty.w_t == ty.acc_t
  local name = string.format("conv2d_slide_c%dm%dk%d_h%dw%d%s_%s%s%s_t%dx%dr%dc%dx%dp%do%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, s.pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.tm, p.cols, p.rows, p.cs, p.xs, p.pf, p.occ)
  -- the output written into a concat's slice (common.out_slice): its image stride
  local slice = common.out_slice(l, s.fused)
  if slice then name = name .. slice.tag end
  local head, args = common.kernel_head(name, s.threads,
    common.std_args({ types = ty, w_name = "w_arg", b_name = "b_arg" }), nil, p.occ)
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, S = g.S, pt = g.pt, pl = g.pl,
    tm = p.tm, cols = p.cols, rows = p.rows, cs = p.cs, pf = p.pf, occ = p.occ,
    G = s.G, CT = s.CT, RT = s.RT, F = s.F, TS = s.TS, PC = s.PC, IR = s.IR, threads = s.threads,
    SLOTS = s.SLOTS, NFULL = s.NFULL, WP = s.WP,
    xfloats = s.xfloats, wfloats = s.wfloats, smem = s.smem, wvec = wvec,
    vec = s.vec, stages = l.C // p.cs, OH = OH, OW = OW,
    -- one stage: the weights' loads in flight together (up to 8 a thread), no accumulator live yet
    wunroll = l.C // p.cs == 1 and math.min(8, common.ceil_div(s.wfloats // (wvec and 4 or 1), s.threads)) or 1,
    xsm = xsm, xch = p.xs == 2, WC = s.WC, WV = s.WV, RP = s.RP, CTOFF = s.CTOFF, next = xsm and "rl + 1" or "r + 1", next2 = xsm and "rl + 2" or "r + 2",
    last_row = xsm and p.cs * l.K or l.C * l.K, step = p.pf >= 2 and 2 or 1,
    rowcheck = rowcheck, okexpr = okexpr, okend = okend, colskip = s.colskip,
    ragged = s.CT * p.cols > s.RL, last = s.RL - (s.CT - 1) * p.cols,
    pooled = s.pooled, pool_kind = g.kind, inv = string.format("%.9ef", 1.0 / (s.F * s.F)),
    pool_doc = not s.pooled and "" or (g.kind .. " over " .. s.F .. "x" .. s.F .. ", "),
    bias = l.bias, actname = act,
    act = function(e) return common.act(act, e) end,
    OS = slice and slice.stride or l.M * OH * OW,
  }
  common.typed(l, v)
  return {
    name = name,
    args = args,
    source = source(v),
    grid = { common.batch_dim(s.RT, p.rows), 1, 1 },
    block = { s.threads, 1, 1 },
    shared = s.smem,
    weights = "arg:transposed",
    bias = l.bias and "arg" or "none",
    out_elems = l.M * OH * OW,
    shape = common.conv_shape(l, g, act, s.pooled, l.M, OH, OW)
      .. (slice and string.format(", into a slice of %d values an image", slice.stride) or ""),
    fused = s.fused,
    out_slice = slice ~= nil,
  }
end

return T
