-- lib/igemm.lua — convolution as an implicit matrix product, every layer constant a
-- literal: the code of two templates, conv2d_igemm (the products as FFMA in
-- thread tiles) and conv2d_igemm_tc (the products on tensor cores), which
-- differ in their parameters and multiply step and share everything else.
--
-- The product: out[m][col] = sum_r w[m][r] * x[r][col], where m is the output map,
-- r = (c, p, q) runs over the C*K*K reduction and col over every output pixel of
-- the batch. With a fused 2x2 pool (max or average, stride 2) the columns are ordered (image, pooled row,
-- pooled column, dy, dx), so four neighbouring columns are one pooling window;
-- else (image, row, column). Nothing is unrolled into a matrix in memory: the
-- gather x[r][col] = in[base(col) + offset(r)] reads the input directly.
--
-- A block computes a BM x BN tile (maps x columns) with (BM/TM)*(BN/TN) threads,
-- each an TM x TN register tile of outer products. The reduction advances in
-- slices of BK: either `BK/(K*K)` whole channels or `BK/K` rows of one channel, so
-- within a slice the offset of every reduction index is a literal and the loop
-- over slices is the only loop that is not unrolled: the source and the unrolled
-- body do not grow with C. Slices are double-buffered in shared memory; the next
-- slice is fetched into registers while the current one is multiplied.
-- Each thread gathers BN/T whole columns of a slice (coalesced along the columns)
-- and BK*BM/T weights (coalesced along m: the runtime stores them transposed; in
-- 16-byte quads of four maps where M and BM allow). `occ` is __launch_bounds__'s
-- blocks per SM: measured on an H100 (bench/RESULTS.md), 256-thread tiles ran
-- 10 % faster capped at 128 registers (occ=2) than at 137 (occ=1), and 128-column
-- tiles (occ=1) faster still, so bn=128 is the default. Epilogue: 2x2 max, bias, activation and
-- store, in registers; float4 stores where a thread's four columns are contiguous.
-- Other pools (other windows, overlapping ones, the global average) leave the
-- kernel unfused: conv + bias, then the pool template.
-- conv2d_igemm_tc (sm_80+): the same slices and epilogue, the products on tensor cores in
-- FP32 accuracy (3xTF32, lib/common.lua), each warp tm maps x 8*tn columns of
-- m16n8k8 tiles with the columns as rows; slices of whole kernel rows or
-- channels padded with zero rows to a multiple of 8, or of any multiple of 8
-- (their offsets from a table in constant memory), and summed apart (the tensor cores' own additions drop low bits:
-- without it a 1944-deep reduction ended 1.4e-5 from the CPU reference, with
-- it 3e-7, 4-7e-7 since the split truncates); the block's tile goes through
-- shared memory to the epilogue. Measured on an H100 (2026-11-27, bench/journal/2026-11.md),
-- instructions other than mma.sync bound it (the tensor pipe half busy):
-- what a slice spends besides them is kept small — one integer operation and one
-- subtraction a split element, no row tests past the prologue, one wide
-- multiply-add a gathered element.
-- Tuned on an H100, 1.28x the tuned FFMA kernel on a 7x7 layer with 32
-- channels and 64 maps and 1.18x winograd on a 5x5 one with 64 and 128; slower
-- on the course's 16- and 24-map layers, where each split column element feeds
-- too few maps (bench/RESULTS.md).
-- Stride: a column's input origin is (row*stride - pad_top, col*stride - pad_left).
-- Padding: each gathered column keeps two bit masks, the kernel rows and columns
-- that fall inside the input; a reduction index reads its element where both bits
-- are set, else 0 (cp.async of 0 bytes: zero fill). Rows and columns that cannot
-- fall outside, known from literals, skip the test (the compiler folds it away).
-- A 1x1 image under a 1x1 kernel (an fc layer as its convolution: fc_tc,
-- common.fc.conv_table): the columns are images and a column's reduction rows are
-- one image's inputs side by side, so conv2d_igemm_tc stages a slice column by
-- column (xs[BN][XT]) and copies it in runs along the rows, 16 bytes a copy where
-- the input size and bk are multiples of 4, with the lanes along the rows; the
-- gather above (a lane a column, a 4-byte copy a row) would make every lane of a
-- warp read another image's line. The fragments read the same tile transposed.

local engine = import("lib/engine")
local common = import("lib/common")

local igemm = {}

-- Largest unrolled body: FMAs in one slice of one thread (BK*TM*TN), and the most
-- registers the tile, prefetch and fragments may want (the rest is addressing).
local BODY_BUDGET = 6144
local REG_BUDGET = 200

-- Reduction depths that make slices of whole kernel rows: kp rows of one channel
-- (kp divides K) or cs whole channels (cs divides C), at most 64 deep.
-- (Kept by C and K, a fresh copy to each caller: a check asks for them on every
-- candidate, and a 1x1 kernel counts C's divisors to 64 each time; an fc of 784
-- inputs refused on sm_75, 100,000 candidates, ran past the Lua budget so.)
local depths_of = {}
local function slice_depths(l)
  local key = l.C .. "x" .. l.K
  local known = depths_of[key]
  if not known then
    local seen = {}
    known = {}
    local function add(v) if v <= 64 and not seen[v] then seen[v] = true; known[#known + 1] = v end end
    for _, kp in ipairs(common.divisors(l.K)) do if kp < l.K then add(kp * l.K) end end
    -- (divisors up to the 64-deep bound only: a check asks for these on every
    -- candidate, and counting to C = 2048 each time ran past the Lua budget)
    for _, cs in ipairs(common.divisors(l.C, 64 // (l.K * l.K))) do add(cs * l.K * l.K) end
    table.sort(known)
    depths_of[key] = known
  end
  return table.move(known, 1, #known, 1, {})
end

-- The preferred slice depth: the deepest one up to 18 (one kernel row of a 5x5
-- or 7x7 kernel, two channels of a 3x3, sixteen of a 1x1), else the shallowest.
-- Measured on an H200 (bench/RESULTS.md): 25- and 49-deep slices lost to one
-- kernel row on 5x5 and 7x7 layers, 18 beat 9 and 36 on a 3x3 layer.
-- conv2d_igemm_tc's other slices: any depth a multiple of 8 up to 64, so that no
-- slice is padded with zero rows (a 25-deep slice took 32 rows of tensor-core
-- work). Their reduction indices do not fall on literal offsets: a table of
-- the offsets (in constant memory, KK + bk entries) gives them, read at one
-- uniform index a slice row; the first slice is short (its first rows zeros) where bk
-- does not divide C*K*K, so that only the prologue tests rows.
local FREE_DEPTHS = { 8, 16, 24, 32, 40, 48, 56, 64 }
local function free_depths(l)
  local lit, out = slice_depths(l), {}
  for _, v in ipairs(FREE_DEPTHS) do
    if not common.contains(lit, v) then out[#out + 1] = v end
  end
  return out
end

local function default_bk(l)
  local d, best = slice_depths(l), nil
  for _, v in ipairs(d) do if v <= 18 then best = v end end
  return best or d[1]
end

-- conv2d_igemm_tc's: 16 or 24 rows, whichever pads the last slice less (24 on a
-- tie). Measured on an H100 (bench/RESULTS.md), free slices of 16 or 24 beat
-- every padded slice on four layers (a 9x9 one: 1.91 ms at bk=24 against 2.39 at
-- 27 padded to 32), and deeper ones took more registers and lost.
local function default_bk_tc(l)
  -- a 1x1 image (an fc): 16, four 16-byte copies a column where the input size is a
  -- multiple of 4, so that a thread keeps one row of every column it copies (the
  -- slices are staged column by column; a short first slice is a few zero rows of a
  -- deep reduction). Not yet timed on a GPU.
  if l.K == 1 and l.H == 1 and l.W == 1 then return 16 end
  local R = l.C * l.K * l.K
  return (-R) % 24 <= (-R) % 16 and 24 or 16
end

-- The declared parameters: conv2d_igemm's (tc false) or conv2d_igemm_tc's. The
-- tensor-core tiles go by warps: tm maps (a multiple of 8) x 8*tn columns.
-- The smallest tile of eights that covers M in r block rows.
local function rows_tile(l, r) return (l.M + 8 * r - 1) // (8 * r) * 8 end
-- conv2d_igemm_tc's default map tile (bm) and warp tile (tm maps x 8*tn columns):
-- as many block rows as 64-map tiles need (every block row gathers the same
-- input again), each the fewest eights that cover them. 40 or 48 maps are one
-- warp's (tn 4), and 56 where they are the only block row (M = 49..56); 56 in
-- several rows go to 64 as two warps of 32 (tn 8); 32 and fewer, one warp (tn 8).
-- Measured on an H100 (bench/RESULTS.md): M = 33, 40, 71, 96 and 144 ran 6-24 %
-- faster than on 64-map tiles, more block rows than that (M = 120 as three of
-- 40, 200 as five) lost (2026-11-26); M = 50 on one warp of 56 ran 5-7 % faster
-- than on two of 32 once igemm_tc's slices cost fewer instructions (2026-11-27; with
-- the costlier slices it had been 6 % slower), 200 in four rows of 56 2 % slower.
local function tc_tile(l)
  local bm = math.min(rows_tile(l, common.ceil_div(l.M, 64)), 64)
  if bm == 56 and l.M <= 56 then return 56, 56, 4 end
  if bm > 48 then return 64, 32, 8 end
  if bm > 32 then return bm, bm, 4 end
  return bm, bm, 8
end

local function params(tc)
  local t = {
    { name = "bm", doc = "output maps per block tile",
      legal = function(l)
        local v = common.map_tiles(l, 128)
        if tc then
          -- and the fewest eights covering M in 2 to 4 block rows (M = 71: 40, 24;
          -- map_tiles already holds those for one row, 72)
          for r = 4, 2, -1 do
            local b = rows_tile(l, r)
            if b <= 128 and not common.contains(v, b) then table.insert(v, 1, b) end
          end
        end
        return v
      end,
      default = function(l)
        if tc then return (tc_tile(l)) end
        if l.M <= 64 then return l.M end
        return 64
      end },
    { name = "bn", doc = "output pixels (columns) per block tile",
      legal = function(_) return { 128, 256, 512, 64, 32 } end,
      default = function(_) return 128 end },
    { name = "bk", doc = tc and "reduction depth of one slice: kp*K (kp | K) or cs*K*K (cs | C), at most 64, "
        .. "padded to a multiple of 8; or any multiple of 8 up to 64 (offsets from a table)"
        or "reduction depth of one slice: kp*K (kp | K) or cs*K*K (cs | C), at most 64",
      legal = function(l)
        local v = slice_depths(l)
        if tc then for _, d in ipairs(free_depths(l)) do v[#v + 1] = d end end
        return v
      end,
      default = tc and default_bk_tc or default_bk },
  }
  if tc then
    t[#t + 1] = { name = "tm", doc = "maps per warp (a multiple of 8)",
      legal = function(_) return { 8, 16, 24, 32, 40, 48, 56, 64 } end,
      default = function(l) return select(2, tc_tile(l)) end }
    t[#t + 1] = { name = "tn", doc = "columns per warp in eights (8*tn columns: tn/2 m16 tiles)",
      legal = function(_) return { 8, 4, 12, 16 } end,
      default = function(l) return select(3, tc_tile(l)) end }
    t[#t + 1] = common.occ_param({ 1, 2, 3, 4 })
  else
    t[#t + 1] = { name = "tm", doc = "maps per thread (rows of its register tile)",
      legal = function(_) return { 16, 12, 8, 6, 4, 3, 2, 1 } end,
      default = function(_) return 8 end }
    t[#t + 1] = { name = "tn", doc = "pixels per thread (columns of its register tile), in groups of four",
      legal = function(_) return { 4, 8, 12, 16 } end,
      default = function(_) return 8 end }
    t[#t + 1] = common.occ_param({ 1, 2, 3, 4 })
  end
  t[#t + 1] = { name = "stages", doc = "slices in shared memory (sm_80+: copied by cp.async, stages-1 in flight; older: 2, through registers)",
    legal = function(_) return { 2, 3, 4 } end,
    default = function(_) return 2 end }
  -- split > 1 (both templates): grid z cuts the reduction into `split` runs of whole
  -- slices (the last run shorter where split does not divide the slices), each block's partial sums stored raw into a partials tensor that a
  -- kernel of its own (ops/splitk_reduce) sums in order; the planner chooses it for
  -- small batches (planner.split_of). Quiet: split=1 is left out of the
  -- "k=v" lists, so files generated before it stay as they were; no search:
  -- a layer's other parameters are searched with split=1 (or the split given)
  -- as before it was declared, within the same search limit. conv2d_igemm_tc's
  -- slices of no whole kernel rows split where they divide C*K*K (no short first slice).
  t[#t + 1] = { name = "split", tune = false, quiet = true, search = false,
    doc = "parts of the C*K*K reduction, each a run of whole slices in its own blocks (grid z); "
      .. "> 1: partial sums, then a splitk_reduce kernel adds them, the bias and the activation",
    legal = function(_)
      local v = { 1, 2, 4, 8, 16, 32 }
      for d = 3, 31 do if d ~= 4 and d ~= 8 and d ~= 16 then v[#v + 1] = d end end
      return v
    end,
    default = function(_) return 1 end }
  return t
end

-- Tensor cores: warps of 32 threads, each a tm x 8*tn tile of maps x columns made of
-- m16n8k8 tiles with the columns as the 16 rows (so maps go by eight: M = 24
-- takes three, not two sixteens); slices padded with zero rows to a multiple
-- of 8; row strides of the slices padded (columns by 8, maps to 8 or 24 modulo
-- 32 words) so that the fragment reads of a warp meet 32 banks.
local function pad_maps(bm)
  local v = bm
  while v % 4 ~= 0 or (v % 32 ~= 8 and v % 32 ~= 24) do v = v + 1 end
  return v
end

-- The numbers every part of the template derives from the parameters.
local function shape(l, p, tc)
  local s = {}
  local g = common.conv_geom(l)
  s.g = g
  s.pooled = common.fused_pool2(g)   -- the epilogue's 2x2 pool: four columns of a thread
  s.fused = g.kind == "none" or s.pooled
  s.CH, s.CW = g.CH, g.CW
  if s.pooled then
    s.OH, s.OW = g.OH, g.OW
    s.COLS = 4 * s.OH * s.OW          -- GEMM columns per image: four per pooling window
  else
    s.OH, s.OW = s.CH, s.CW
    s.COLS = s.OH * s.OW
  end
  s.P = s.OH * s.OW                   -- stored outputs per image and map
  s.KK = l.K * l.K
  s.R = l.C * s.KK
  s.mma = tc
  -- precision tf32 (conv2d_igemm_tc only): one TF32 product a tile, no split
  s.tf32 = tc and l.precision == "tf32"
  -- 16-bit tensors (bf16, fp16): conv2d_igemm_tc takes one m16n8k16 product of that
  -- type a tile (s.half: "bf16" or "f16"); both templates stage the slices as stored
  -- (2 bytes an element), through registers (cp.async copies 4, 8 or 16 bytes)
  local hd = common.half_dtype(l)
  s.narrow = hd ~= nil
  s.half = tc and hd or nil
  -- a tensor-core slice of a depth that is no whole number of kernel rows or channels
  s.free = tc and not common.contains(slice_depths(l), p.bk)
  if s.mma then
    s.threads = 32 * (p.bm // math.max(p.tm, 1)) * (p.bn // (8 * p.tn))
    s.KP = common.ceil_div(p.bk, s.half and 16 or 8) * (s.half and 16 or 8)   -- slice rows, zero-padded
    s.XR, s.WR = p.bn + 8, pad_maps(p.bm)        -- row strides of the slices
    s.ER = p.bn + 4                              -- row stride of the staged tile
    s.FP, s.FM = p.tn // 2, p.tm // 8            -- m16 column tiles, n8 map tiles of a warp
    s.ETM = p.tm * p.tn // 16                    -- the epilogue's thread tile: ETM maps x 4 columns
    s.ETN = 4
  else
    s.threads = (p.bm // math.max(p.tm, 1)) * (p.bn // math.max(p.tn, 1))
    s.KP, s.XR, s.WR = p.bk, p.bn, p.bm
    s.ETM, s.ETN = p.tm, p.tn
  end
  s.LC = s.threads > 0 and p.bn // s.threads or 0   -- columns each thread gathers
  -- a 1x1 image under a 1x1 kernel (an fc layer as its convolution, common.fc.conv_table):
  -- a column's reduction rows lie side by side in memory (an image's inputs), and the
  -- columns of a tile are images IN elements apart, so conv2d_igemm_tc's gather (lanes
  -- along the columns, a 4-byte copy a row) would touch a line a lane. Here the tensor-core
  -- path stages a slice column by column instead, xs[BN][XT] (XT = KP + 4 words, KP + 8
  -- 16-bit elements: the A fragments' reads meet 32 banks), and copies it in runs of V
  -- elements along each column's rows (V = 4 where the input size and bk are multiples of
  -- 4, a 16-byte copy; else 1), QPC copies a column, the lanes along the rows: a warp reads
  -- whole runs of an image's inputs. A thread's copies are q = tid + i*threads (XQ of
  -- them): column q / QPC, rows V*(q % QPC) on; with threads a multiple of QPC (xfix) its
  -- row is fixed and its columns are threads/QPC apart.
  s.xt = tc and l.K == 1 and l.H == 1 and l.W == 1 and not g.padded
  if s.xt then
    s.V = (l.C % 4 == 0 and p.bk % 4 == 0) and 4 or 1
    s.XT = s.KP + (s.half and 8 or 4)
    s.XB = p.bn * s.XT
    s.QPC = p.bk // s.V
    s.XQ = common.ceil_div(p.bn * s.QPC, math.max(s.threads, 1))   -- (whole: check has threads divide bn)
    s.xfix = s.threads % s.QPC == 0
  else
    s.XB = s.KP * s.XR                 -- a stage's gathered input, in elements
  end
  s.WL = common.ceil_div(p.bk * p.bm, math.max(s.threads, 1))  -- weights each thread loads
  s.slices = common.ceil_div(s.R, p.bk)
  s.split = p.split or 1
  -- slices of one block's part of the reduction: every part SS but the last, LAST (fewer
  -- where split does not divide the slices: a ragged split, zoo-awkward's 71 slices in 8 parts
  -- of 9 and a last of 8)
  s.SS = common.ceil_div(s.slices, s.split)
  s.LAST = s.slices - (s.split - 1) * s.SS
  s.tail = s.free and s.R % p.bk ~= 0   -- the first slice is short: its first pad0 rows are zeros
  s.pad0 = s.tail and s.slices * p.bk - s.R or 0
  -- a free slice's offset table (and, with padding, its kernel rows and columns) in constant memory
  s.const_bytes = s.free and not s.xt and 4 * (s.KK + p.bk) * (g.padded and 2 or 1) or 0
  s.smem = 4 * p.stages * (s.XB + s.KP * s.WR)
  if s.mma then s.smem = math.max(s.smem, 4 * p.bm * s.ER) end
  -- registers: the tile, fragments, gather pointers and weight offsets; the
  -- register-prefetch path (before sm_80) also holds a whole slice
  s.async = not (l.target and l.target.cc and l.target.cc < 80) and not s.narrow
  local tile = s.mma and (p.tm * p.tn // 2 + 4 * p.tn + p.tm // 2) or (p.tm * p.tn + p.tm + p.tn)
  -- (a column-staged slice: one pointer, or a column and row worked out a copy, whose
  -- addresses the compiler keeps, a pointer each: 333 inputs in slices of 24 through 64
  -- threads, 48 copies a thread, took 255 registers and spilled on sm_80; the register
  -- path holds XQ copies of V elements)
  local gather = s.xt and (s.xfix and 2 or 2 + 2 * s.XQ) or 2 * s.LC
  local held = s.xt and s.XQ * s.V or p.bk * s.LC
  s.regs = tile + gather + (s.threads > 0 and s.threads % p.bm == 0 and 2 or 2 * s.WL) + (s.async and 0 or (held + s.WL))
    + (g.padded and 2 * s.LC or 0)
  return s
end

local function check(l, p, tc)
  local why_g = common.refuse_groups(l, tc and "conv2d_igemm_tc" or "conv2d_igemm")
  if why_g then return why_g, nil end
  local why, blame = common.check_thread_tile(l, p)
  if why then return why, blame end
  local s = shape(l, p, tc)
  if s.mma then
    local cc = l.target and l.target.cc or 75
    if cc < 80 then
      return string.format("conv2d_igemm_tc needs tensor cores with %s (sm_80 or newer); the target is sm_%d",
        s.half and (s.half == "bf16" and "BF16" or "FP16 m16n8k16") or "TF32", cc)
    end
    if p.tm % 8 ~= 0 then return string.format("the tensor cores take maps by eight: tm=%d", p.tm), "tm" end
    if p.bn % (8 * p.tn) ~= 0 then
      return string.format("a warp's 8*tn = %d columns must divide bn=%d", 8 * p.tn, p.bn), "tn"
    end
    if s.threads > 0 and (p.bn % s.threads ~= 0 or p.bm % s.ETM ~= 0) then
      return string.format("%d threads must divide bn=%d and tm*tn/16 = %d divide bm=%d",
        s.threads, p.bn, s.ETM, p.bm), "tm"
    end
  end
  if s.threads < 32 or s.threads > common.MAX_THREADS or s.threads % 32 ~= 0 then
    return string.format("(bm/tm)*(bn/tn) = %d threads; a block needs a multiple of 32 from 32 to %d",
      s.threads, common.MAX_THREADS), "bn"
  end
  if not s.mma and (p.tm * p.tn) % p.bm ~= 0 then
    -- bn = LC * threads: every thread gathers whole columns of a slice
    return string.format("tm*tn = %d must be a multiple of bm=%d (each thread gathers whole columns)",
      p.tm * p.tn, p.bm), "tm"
  end
  if s.free and p.bk % 8 ~= 0 then
    return string.format("bk=%d is no whole number of kernel rows or channels; such a slice must be a multiple of 8 deep", p.bk), "bk"
  end
  if s.const_bytes > (l.const_left or common.CONST_BUDGET) then
    return string.format("bk=%d: the slices' offset table needs %d bytes of constant memory; %d are left",
      p.bk, s.const_bytes, l.const_left or common.CONST_BUDGET), "bk"
  end
  if s.free and l.K > 64 then
    return string.format("bk=%d: slices of no whole kernel rows take kernels up to 64 wide; K=%d", p.bk, l.K), "bk"
  end
  if not s.free and s.R % p.bk ~= 0 then
    return string.format("bk=%d does not divide the reduction C*K*K = %d", p.bk, s.R), "bk"
  end
  if s.split > 1 then
    if s.split > s.slices then
      return string.format("split=%d: more parts than the reduction C*K*K = %d has slices of bk=%d (%d)",
        s.split, s.R, p.bk, s.slices), "split"
    end
    if s.LAST < 1 then
      return string.format("split=%d leaves its last part no slice: %d slices of bk=%d (C*K*K = %d) in parts of %d",
        s.split, s.slices, p.bk, s.R, s.SS), "split"
    end
    if s.tail then
      return string.format("split=%d: the first slice is short (bk=%d does not divide C*K*K = %d)", s.split,
        p.bk, s.R), "split"
    end
    if (l.out_dtype or l.dtype or "f32") ~= "f32" then
      return string.format("split=%d: partial sums are stored as f32; the layer's output is %s", s.split,
        l.out_dtype or l.dtype), "split"
    end
  end
  if not s.mma and p.bk * p.tm * p.tn > BODY_BUDGET then
    return string.format("bk*tm*tn = %d unrolled multiply-adds per slice; the budget is %d",
      p.bk * p.tm * p.tn, BODY_BUDGET), "bk"
  end
  if s.regs > REG_BUDGET then
    return string.format("the tile, prefetch and fragments need about %d registers a thread; at most %d",
      s.regs, REG_BUDGET), "tm"
  end
  local why, blame = common.check_occ(l, p.occ, s.threads, s.regs, s.smem, "the tile, prefetch and fragments")
  if why then return why, blame end
  if s.smem > common.max_shared(l) then
    return string.format("%d slices%s need %d bytes of shared memory; at most %d fit",
      p.stages, s.mma and " (or the staged tile)" or "", s.smem, common.max_shared(l)), "bk"
  end
  return nil
end

-- The cost model (common.cost): the FMAs of the tiles the busiest SM computes
-- (padding of a partial tile included) at the rate its shared-memory reads
-- allow (tm + tn reads feed tm*tn FMAs; four FMAs a read keep the lanes busy),
-- its global loads allow (bm + bn words a slice row feed bm*bn FMAs; twelve a
-- word keep up with L2) and its resident warps allow (a thread tile is two
-- chains of work); or, when longer, the slices' round trips to memory,
-- stages-1 of them in flight. `occ` caps the registers (common.cost.spread):
-- where the estimate is above its cap, more blocks are resident and the
-- registers squeezed out are paid for as spills (common.cost.spills).
local function cost(l, p, tc)
  local s = shape(l, p, tc)
  local blocks = common.ceil_div(common.cost.images(l) * s.COLS, p.bn) * common.ceil_div(l.M, p.bm) * s.split
  local seq, conc, squeezed = common.cost.spread(l, blocks, s.threads, s.regs, s.smem, p.occ)
  if conc == 0 then return math.huge end
  local reuse = math.min(1, p.tm * p.tn / (p.tm + p.tn) / 4) * math.min(1, p.bm * p.bn / (p.bm + p.bn) / 12)
  local depth = s.R // s.split
  if s.mma then
    -- three mma.sync a product, the padded rows included; each split column element
    -- feeds tm/8 map tiles: measured on an H100 (bench/RESULTS.md) at 0.89x FFMA's
    -- time with tm = 16 and 1.14x with tm = 32, after the pad rows
    reuse = (0.98 + 0.08 * s.FM) * math.min(1, p.bm * p.bn / (p.bm + p.bn) / 12)
    depth = s.SS * s.KP
    -- precision tf32: one mma.sync a tile and a conversion a fragment element, where
    -- 3xTF32 took three and a split (an estimate, not yet measured: a third of the time)
    if s.tf32 then reuse = 3 * reuse end
    -- 16-bit operands: one m16n8k16 a tile (twice tf32's depth a product; an
    -- estimate, not yet measured)
    if s.half then reuse = 6 * reuse end
  end
  local compute = seq * p.bm * p.bn * depth / (common.cost.FMA_PER_CLOCK * reuse * common.cost.busy(conc, s.threads, 2))
  local memory = common.ceil_div(seq, conc) * s.SS * common.cost.LATENCY / math.max(p.stages - 1, 1)
  return math.max(compute, memory) * common.cost.spills(squeezed)
end

local source = engine.compile([=[
// GEMM view: {{M}} maps x (N*{{COLS}}) columns, reduced over C*K*K = {{R}} in {{SLICES}} slices of {{BK}}
// ({{slice_doc}}); block tile {{BM}}x{{BN}}, thread tile {{TM}}x{{TN}}, {{NT}} threads.
% if SPLIT > 1 then
% if LAST ~= SS then
// Split {{SPLIT}} ways (grid z), ragged: block z reduces slices z*{{SS}} .. z*{{SS}} + {{SS - 1}} ({{LAST}} of them in the
// last part, z = {{SPLIT - 1}}) and stores its raw partial
% else
// Split {{SPLIT}} ways (grid z): block z reduces slices z*{{S}} .. z*{{S}} + {{S - 1}} and stores its raw partial
% end
// sums (no bias, no activation) as part z of out = partials[{{SPLIT}}][n][{{M}}][{{COLS}}]; splitk_reduce adds them.
%   if pooled then
// The partials keep every GEMM column: a 2x2 pooling window's four conv outputs side by side; splitk_reduce pools.
%   end
% end
% if xt then
// Shared memory (dynamic, {{smem}} B): xs[{{ST}}][{{BN}}][{{XT}}] input, column by column (a 1x1 image: a column's
// slice rows lie side by side in memory), ws[{{ST}}][{{KP}}][{{WR}}] weights.
% else
// Shared memory (dynamic, {{smem}} B): xs[{{ST}}][{{KP}}][{{XR}}] gathered input, ws[{{ST}}][{{KP}}][{{WR}}] weights.
% end
% if mma and half then
// Products on tensor cores in precision {{half}}: warps of {{TM}} maps x {{8 * TN}} columns, m16n8k16 {{half}} tiles
// with the columns as rows, one mma.sync a tile, FP32 accumulation. Slices padded from {{BK}} to {{KP}} rows with
// zeros; the block's tile is staged in shared memory (es[{{BM}}][{{ER}}], FP32) for the epilogue.
% elseif mma and tf32 then
// Products on tensor cores in precision tf32: warps of {{TM}} maps x {{8 * TN}} columns, m16n8k8 TF32 tiles with
// the columns as rows; each operand rounded to TF32 (cvt.rna.tf32.f32: to nearest, ties away from zero), one
// mma.sync a tile, FP32 accumulation. Slices padded from {{BK}} to {{KP}} rows with zeros; the block's tile is
// staged in shared memory (es[{{BM}}][{{ER}}]) for the epilogue.
% elseif mma then
// Products on tensor cores: warps of {{TM}} maps x {{8 * TN}} columns, m16n8k8 TF32 tiles with the columns as
// rows; each operand split in a TF32 value and its TF32 remainder, three mma.sync a tile (big*big, big*small,
// small*big), FP32 accumulation. Slices padded from {{BK}} to {{KP}} rows with zeros; the block's tile is
// staged in shared memory (es[{{BM}}][{{ER}}]) for the epilogue.
% end

% if xt then
// a 1x1 image: reduction index r of a column (an image) is its input r; slice s is rows s*{{BK}}{{pad0 > 0 and (" - " .. pad0) or ""}} on
% if pad0 > 0 then
// (the first short: its rows 0 .. {{pad0 - 1}} zeros)
% end
% elseif free then
% if tail then
// slices of {{BK}}, no whole number of kernel rows, the first one short: its rows 0 .. {{pad0 - 1}} are
// zeros, so that reduction index r = s*{{BK}} + k - {{pad0}} of every other slice needs no test; r
// lies ((s*{{BK}} + {{D}}) / {{KK}} - {{CP}}) channels and tab[(s*{{BK}} + {{D}}) % {{KK}} + k] elements from its
// column's base, tab[i] = (i / {{KK}})*{{H * W}} + ((i % {{KK}}) / {{K}})*{{W}} + i % {{K}}
% else
// slices of {{BK}}, no whole number of kernel rows: reduction index r = s*{{BK}} + k lies
// ((s*{{BK}}) / {{KK}}) channels and tab[(s*{{BK}}) % {{KK}} + k] elements from its column's
// base, tab[i] = (i / {{KK}})*{{H * W}} + ((i % {{KK}}) / {{K}})*{{W}} + i % {{K}}
% end
__constant__ int {{name}}_tab[{{KK + BK}}] = {{tab}};
%   if padded then
// and its kernel row and column, 64*p + q
__constant__ int {{name}}_pq[{{KK + BK}}] = {{pq}};
%   end
% else
// offset of reduction index r of a slice from the slice's first input element
#define {{name}}_OFF(r) (((r) / {{KK}}) * {{H * W}} + (((r) % {{KK}}) / {{K}}) * {{W}} + (r) % {{K}})
% end

{{head}}
{
    extern __shared__ {{vec_t(acc_t, 4)}} smem4[];
% -- the slices staged as stored (cp.async copies bytes): inputs, then weights
    {{in_t}}* const xs = reinterpret_cast<{{in_t}}*>(smem4);
    {{w_t}}* const ws = xs + {{ST * XB}};
    const int tid = threadIdx.x;
% if mma then
    const int lane = tid & 31, warp = tid >> 5;
    const int g8 = lane >> 2, t4 = lane & 3;   // the fragments' groupID and thread in group
    const int wp0 = (warp % {{BN // (8 * TN)}}) * {{8 * TN}};   // the warp's first column of the block tile
    const int wm0 = (warp / {{BN // (8 * TN)}}) * {{TM}};       // and first map
% else
    const int tx = tid % {{BN // TN}};   // column group: columns tx*4 + {{4 * (BN // TN)}}*j + 0..3
    const int ty = tid / {{BN // TN}};   // map group: maps ty*{{TM}} .. +{{TM - 1}}
% end
    const int col0 = blockIdx.x * {{BN}};
    const int m0 = blockIdx.y * {{BM}};
    const int total = n * {{COLS}};
% if SPLIT > 1 then
    const int s0 = blockIdx.z * {{SS}};   // this block's first slice of the reduction
%   if LAST ~= SS then
    const int ns = blockIdx.z == {{SPLIT - 1}} ? {{LAST}} : {{SS}};   // and its count of slices (the last part's fewer)
%   end
% end
    (void)b_arg;

% if xt then
    // this thread's copies of a slice: copy q = tid + {{NT}}*i of the {{BN}} columns' {{QPC}} runs of {{V}} row{{V > 1 and "s" or ""}} is
    // column q / {{QPC}}, rows {{V}}*(q % {{QPC}}) on{{xfix and string.format(" (%d threads a multiple of %d: one row for every i, the columns %d apart)", NT, QPC, NT // QPC) or ""}}
%   if xfix then
    const int xc = tid / {{QPC}}, xr0 = {{V > 1 and string.format("%d * (tid %% %d)", V, QPC) or string.format("tid %% %d", QPC)}};
    const {{in_t}}* const xq = in + (col0 + xc) * {{C}} + xr0;   // (a column past the batch is never read)
#define {{name}}_XC(i) (xc + (i) * {{NT // QPC}})
#define {{name}}_XR(i) xr0
%   else
#define {{name}}_XC(i) ((tid + (i) * {{NT}}) / {{QPC}})
#define {{name}}_XR(i) ({{V > 1 and (V .. " * ") or ""}}(tid + (i) * {{NT}} - {{name}}_XC(i) * {{QPC}}))
%   end
    // whether copy i reads: its column is an image of the batch{{tail and string.format(" and its rows are not the first slice's %d zero rows", pad0) or ""}}
#define {{name}}_XOK(i) (col0 + {{name}}_XC(i) < total{{tail and string.format(" && (!first || %s_XR(i) >= %d)", name, pad0) or ""}})
% else
    // the input element under reduction index 0 of each column this thread gathers
    const {{in_t}}* xb[{{LC}}];
% if padded then
    {{mtype}} rm[{{LC}}], cm[{{LC}}];
%   if free then
    // whether slice row r of column j reads inside the input{{tail and " and the reduction" or ""}}
#define {{name}}_OK(j, r) ({{tail and string.format("(!first || (r) >= %d) && ", pad0) or ""}}((rm[j] >> ({{name}}_pq[e0 + (r)] >> 6)) & (cm[j] >> ({{name}}_pq[e0 + (r)] & 63)) & 1))
%   elseif whole then
    // whether reduction index r (a literal) of column j reads inside the input
#define {{name}}_OK(j, r) ({{rowok}} && {{colok}})
%   else
    // whether reduction index r (a literal) of column j reads inside the input; kp0: the slice's first kernel row
#define {{name}}_OK(j, r) (((rm[j] >> (kp0 + (r) / {{K}})) & 1) && {{colok}})
%   end
% end
#pragma unroll
    for (int j = 0; j < {{LC}}; j++) {
        int c = col0 + tid + j * {{NT}};
        if (c >= total) c = 0;   // past the batch: read something valid, store nothing
% if pooled then
        const int win = c >> 2, d = c & 3;
        const int img = win / {{P}}, at = win - img * {{P}};
        const int oy = 2 * (at / {{OW}}) + (d >> 1), ox = 2 * (at % {{OW}}) + (d & 1);
% else
        const int img = c / {{P}}, at = c - img * {{P}};
        const int oy = at / {{OW}}, ox = at % {{OW}};
% end
% if padded then
        // the input origin of the column, in the padding when negative or past the edge;
        // rm/cm: the kernel rows/columns inside the input (only those are read)
        const int iy = oy * {{STR}} - {{pt}}, ix = ox * {{STR}} - {{pl}};
        xb[j] = in + img * {{C * H * W}} + iy * {{W}} + ix;
        rm[j] = 0, cm[j] = 0;
#pragma unroll
        for (int p = 0; p < {{K}}; p++) {
            if ((unsigned)(iy + p) < {{H}}u) rm[j] |= {{one}} << p;
            if ((unsigned)(ix + p) < {{W}}u) cm[j] |= {{one}} << p;
        }
% elseif STR > 1 then
        xb[j] = in + img * {{C * H * W}} + oy * {{STR * W}} + ox * {{STR}};
% else
        xb[j] = in + img * {{C * H * W}} + oy * {{W}} + ox;
% end
    }
% end
    // the weights this thread loads: element e = tid + i*{{NT}} of the {{BK}}x{{BM}} slice; the
    // weights arrive transposed, {{R}} x {{M}} (reduction-major), so lanes read and store along m
% if wstep then
    // {{NT}} threads are whole rows of the slice: every i has this thread's map, {{NT // BM}} rows on
    const int wm = tid % {{BM}};
    const int wg0 = (tid / {{BM}}) * {{M}} + m0 + wm;
%   if mguard then
    const bool wok = m0 + wm < {{M}};
%   end
#define {{name}}_WG(i) (wg0 + (i) * {{NT // BM * M}})
%   if WR == BM then
#define {{name}}_WX(i) (tid + (i) * {{NT}})
%   else
    const int wx0 = (tid / {{BM}}) * {{WR}} + wm;
#define {{name}}_WX(i) (wx0 + (i) * {{NT // BM * WR}})
%   end
% else
    int wg[{{WL}}], wsx[{{WL}}];
#pragma unroll
    for (int i = 0; i < {{WL}}; i++) {
        const int e = tid + i * {{NT}};
        const int r = e / {{BM}}, m = e - r * {{BM}};
%   if wguard then
        wg[i] = (e < {{BK * BM}} && m0 + m < {{M}}) ? r * {{M}} + m0 + m : -1;
%   else
        wg[i] = r * {{M}} + m0 + m;
%   end
        wsx[i] = r * {{WR}} + m;
    }
#define {{name}}_WG(i) wg[i]
#define {{name}}_WX(i) wsx[i]
% end
% if free and tail and not padded and not xt then
    // whether slice row r is inside the reduction (not in the first slice's zero rows)
#define {{name}}_OK(j, r) (!first || (r) >= {{pad0}})
% end
% if wguard then
    // whether weight i of a slice is inside the layer (else it is zero-filled)
#define {{name}}_WOK(i) ({{wok}})
% end

    // slice s starts at input offset xo(s) from each column's base, and at s*{{BK}} in a weight row
    auto xo = [&](int s) {
% if xt then
        return s * {{BK}}{{pad0 > 0 and (" - " .. pad0) or ""}};
% elseif free then
        return {{xof}};
% elseif whole then
        return s * {{BK // KK * H * W}};
% else
        const int ch = s / {{SPC}};
        return ch * {{H * W}} + (s - ch * {{SPC}}) * {{BK // K * W}};
% end
    };

% if mma then
    // cf[i][j]: the m16n8 tile of columns wp0 + 16i .., maps wm0 + 8j ..; element r at column
    // wp0 + 16i + g8 + 8*(r >> 1), map wm0 + 8j + 2*t4 + (r & 1)
    {{acc_t}} cf[{{FP}}][{{FM}}][4];
{{zero_cf}}
%   if KP > BK then
%     if xt then
    // the slices' pad rows {{BK}} .. {{KP - 1}} of every column: zeros, never copied over
    for (int e = tid; e < {{ST * BN * (KP - BK)}}; e += {{NT}}) {
        const int c = e / {{KP - BK}}, k = e - c * {{KP - BK}};   // c: stage * {{BN}} + column
        xs[c * {{XT}} + {{BK}} + k] = {{in_zero}};
    }
%     else
    // the slices' pad rows {{BK}} .. {{KP - 1}}: zeros, never copied over
    for (int e = tid; e < {{ST * (KP - BK) * XR}}; e += {{NT}}) {
        const int b = e / {{(KP - BK) * XR}}, o = e - b * {{(KP - BK) * XR}};
        xs[b * {{KP * XR}} + {{BK * XR}} + o] = {{in_zero}};
    }
%     end
    for (int e = tid; e < {{ST * (KP - BK) * WR}}; e += {{NT}}) {
        const int b = e / {{(KP - BK) * WR}}, o = e - b * {{(KP - BK) * WR}};
        ws[b * {{KP * WR}} + {{BK * WR}} + o] = {{w_zero}};
    }
%   end

    // cf += the slice in shared-memory buffer b
    auto multiply = [&](int b) {
        const {{in_t}}* const x = xs + b * {{XB}} + {{xt and ("(wp0 + g8) * " .. XT) or "wp0 + g8"}};
        const {{w_t}}* const w = ws + b * {{KP * WR}} + wm0 + g8;
#if __CUDA_ARCH__ >= 800
% if half then
        // one {{half}} product a tile: m16n8k16 with the columns as rows, the A fragments from the
        // columns, B from the weights, two reduction rows a register (the lower one in the low
        // half); the slice summed apart, then added to cf
        {{mma_defs}}
        {{acc_t}} sl[{{FP}}][{{FM}}][4];   // set by the first k step's products
#pragma unroll
        for (int k = 0; k < {{KP}}; k += 16) {
            unsigned ah[{{FP}}][4], bh[{{FM}}][2];
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    const {{in_t}}* const xk = x + {{xi("(k + 2 * t4 + 8 * (r >> 1))", "16 * i + 8 * (r & 1)")}};
                    ah[i][r] = (unsigned)xk[0].x | ((unsigned)xk[{{XK}}].x << 16);
                }
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    const {{w_t}}* const wk = w + (k + 2 * t4 + 8 * r) * {{WR}} + 8 * j;
                    bh[j][r] = (unsigned)wk[0].x | ((unsigned)wk[{{WR}}].x << 16);
                }
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int j = 0; j < {{FM}}; j++) {
                    if (k == 0) mma0(sl[i][j], ah[i], bh[j]);
                    else mma(sl[i][j], ah[i], bh[j]);
                }
        }
% elseif tf32 then
        // one TF32 product a tile (lib/common.lua): the A fragments from the columns, B from the
        // weights, each rounded to TF32; the slice summed apart, then added to cf
        {{tf32_round}}
        {{mma_defs}}
        {{acc_t}} sl[{{FP}}][{{FM}}][4];   // set by the first k step's products
#pragma unroll
        for (int k = 0; k < {{KP}}; k += 8) {
            unsigned ah[{{FP}}][4], bh[{{FM}}][2];
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int r = 0; r < 4; r++) ah[i][r] = tf32(x[{{xi("(k + t4 + 4 * (r >> 1))", "16 * i + 8 * (r & 1)")}}]);
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 2; r++) bh[j][r] = tf32(w[(k + t4 + 4 * r) * {{WR}} + 8 * j]);
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int j = 0; j < {{FM}}; j++) {
                    if (k == 0) mma0(sl[i][j], ah[i], bh[j]);
                    else mma(sl[i][j], ah[i], bh[j]);
                }
        }
% else
        // 3xTF32 (lib/common.lua): the A fragments from the columns, B from the weights; the
        // slice summed apart (the tensor cores' own additions lose low bits), then added to cf
        {{split}}
        {{mma_defs}}
        {{acc_t}} sl[{{FP}}][{{FM}}][4];   // set by the first k step's first products
#pragma unroll
        for (int k = 0; k < {{KP}}; k += 8) {
            unsigned ah[{{FP}}][4], al[{{FP}}][4], bh[{{FM}}][2], bl[{{FM}}][2];
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    split(x[{{xi("(k + t4 + 4 * (r >> 1))", "16 * i + 8 * (r & 1)")}}], ah[i][r], al[i][r]);
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 2; r++) split(w[(k + t4 + 4 * r) * {{WR}} + 8 * j], bh[j][r], bl[j][r]);
            // the small terms first, each a pass over every tile, so that consecutive
            // mma.sync write different accumulators; the slice's first products onto zero
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int j = 0; j < {{FM}}; j++) {
                    if (k == 0) mma0(sl[i][j], al[i], bh[j]);
                    else mma(sl[i][j], al[i], bh[j]);
                }
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int j = 0; j < {{FM}}; j++) mma(sl[i][j], ah[i], bl[j]);
#pragma unroll
            for (int i = 0; i < {{FP}}; i++)
#pragma unroll
                for (int j = 0; j < {{FM}}; j++) mma(sl[i][j], ah[i], bh[j]);
        }
% end
#pragma unroll
        for (int i = 0; i < {{FP}}; i++)
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 4; r++) cf[i][j][r] += sl[i][j][r];
#else
% if tf32 then
        // without tensor cores (and in emulation): each fragment element as its own dot product
        // of the operands rounded to TF32 as cvt.rna.tf32.f32 rounds them (the product of two
        // TF32 values is exact in FP32)
        {{tf32_round_emu}}
% else
        // without tensor cores (and in emulation): each fragment element as its own dot product
% end
        const {{in_t}}* const xw = x - {{xt and ("g8 * " .. XT) or "g8"}}, * const ww = w - g8;
#pragma unroll
        for (int i = 0; i < {{FP}}; i++)
#pragma unroll
            for (int j = 0; j < {{FM}}; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    for (int k = 0; k < {{BK}}; k++)
% if tf32 then
                        cf[i][j][r] = fmaf(tf32r({{to_acc("xw[" .. xi("k", "16 * i + g8 + 8 * (r >> 1)") .. "]")}}),
                                           tf32r({{w_to_acc("ww[k * " .. WR .. " + 8 * j + 2 * t4 + (r & 1)]")}}), cf[i][j][r]);
% else
                        cf[i][j][r] = fmaf({{to_acc("xw[" .. xi("k", "16 * i + g8 + 8 * (r >> 1)") .. "]")}},
                                           {{w_to_acc("ww[k * " .. WR .. " + 8 * j + 2 * t4 + (r & 1)]")}}, cf[i][j][r]);
% end
#endif
    };
% else
    {{acc_t}} acc[{{TM}}][{{TN}}];
#pragma unroll
    for (int i = 0; i < {{TM}}; i++)
#pragma unroll
        for (int j = 0; j < {{TN}}; j++) acc[i][j] = 0.0f;

    // acc += the slice in shared-memory buffer b
    auto multiply = [&](int b) {
        const {{in_t}}* const x = xs + b * {{BK * BN}} + tx * 4;
        const {{w_t}}* const w = ws + b * {{BK * BM}} + ty * {{TM}};
#pragma unroll
        for (int k = 0; k < {{BK}}; k++) {
            {{acc_t}} a[{{TM}}], v[{{TN}}];
% if TM % 4 == 0 then
#pragma unroll
            for (int i = 0; i < {{TM}}; i += 4) {
                const {{vec_t(w_t, 4)}} t = *reinterpret_cast<const {{vec_t(w_t, 4)}}*>(w + k * {{BM}} + i);
                a[i] = {{w_to_acc("t.x")}}, a[i + 1] = {{w_to_acc("t.y")}}, a[i + 2] = {{w_to_acc("t.z")}}, a[i + 3] = {{w_to_acc("t.w")}};
            }
% elseif TM % 2 == 0 then
#pragma unroll
            for (int i = 0; i < {{TM}}; i += 2) {
                const {{vec_t(w_t, 2)}} t = *reinterpret_cast<const {{vec_t(w_t, 2)}}*>(w + k * {{BM}} + i);
                a[i] = {{w_to_acc("t.x")}}, a[i + 1] = {{w_to_acc("t.y")}};
            }
% else
#pragma unroll
            for (int i = 0; i < {{TM}}; i++) a[i] = {{w_to_acc("w[k * " .. BM .. " + i]")}};
% end
#pragma unroll
            for (int j = 0; j < {{TN}}; j += 4) {
                const {{vec_t(in_t, 4)}} t = *reinterpret_cast<const {{vec_t(in_t, 4)}}*>(x + k * {{BN}} + j * {{BN // TN}});
                v[j] = {{to_acc("t.x")}}, v[j + 1] = {{to_acc("t.y")}}, v[j + 2] = {{to_acc("t.z")}}, v[j + 3] = {{to_acc("t.w")}};
            }
#pragma unroll
            for (int i = 0; i < {{TM}}; i++)
#pragma unroll
                for (int j = 0; j < {{TN}}; j++) acc[i][j] = fmaf(a[i], v[j], acc[i][j]);
        }
    };
% end

% if cpasync then
#if __CUDA_ARCH__ >= 800
    // {{ST}}-stage pipeline: slices copied global -> shared by cp.async, {{ST - 1}} in flight
    // while one is multiplied; one barrier per slice
    // shared-memory addresses as cp.async takes them (32-bit, in bytes)
    unsigned sx;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(sx) : "l"(xs));
    const unsigned sw = sx + {{4 * ST * XB}};
% -- copy4 and copy16 copy inputs and weights alike (one element type: see kernel())
% if not (xt and V == 4 and wvec) then
    auto copy4 = [](unsigned dst, const {{in_t}}* src, int bytes) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
    };
% end
% if wvec then
    // the weights in quads: 16-byte copies of four maps; quad e = tid + i*{{NT}} of the
    // slice's {{BK * BM // 4}}, every i of this thread on the same four maps, {{NT // (BM // 4)}} rows on
% end
% if wvec or (xt and V == 4) then
    auto copy16 = [](unsigned dst, const {{in_t}}* src, int bytes) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
    };
% end
% if wvec then
    const int wq = tid % {{BM // 4}};
    const int wq0 = (tid / {{BM // 4}}) * {{M}} + m0 + 4 * wq;
%   if WR ~= BM then
    const int wqx = 4 * ((tid / {{BM // 4}}) * {{WR}} + 4 * wq);   // byte offset of quad 0 in a slice
%   end
%   if mguard then
    const bool wqok = m0 + 4 * wq < {{M}};   // M % 4 == 0: a quad is wholly in or out
%   end
%   if wstep then
    (void)wg0;   // the register path's
%     if mguard then
    (void)wok;
%     end
%   else
    (void)wg, (void)wsx;
%   end
% end
% if tail then
    // first: s is the first slice, the short one (a literal at every call: the
    // main loop's copies carry no test)
% end
    auto issue = [&](int s, int b{{tail and ", bool first" or ""}}) {
% if SPLIT > 1 then
        s += s0;   // from the block's slice to the reduction's
% end
% if xt then
        const unsigned x = sx + b * {{4 * XB}};
% else
        const unsigned x = sx + b * {{4 * KP * XR}} + 4 * tid;
% end
        const unsigned w = sw + b * {{4 * KP * WR}};
        const int o = xo(s);
% if xt then
        // the columns' runs of rows, {{4 * V}} bytes a copy; a column past the batch{{tail and " or a zero row" or ""}}: 0
        // bytes copied, zeros filled, nothing read
{{xt_src_def}}
#pragma unroll
        for (int i = 0; i < {{XQ}}; i++) {
            {{V == 4 and "copy16" or "copy4"}}(x + 4 * ({{name}}_XC(i) * {{XT}} + {{name}}_XR(i)), {{xt_src}}, {{name}}_XOK(i) ? {{4 * V}} : 0);
        }
% else
% if free then
        const int e0 = {{e0}};
% elseif padded and not whole then
        const int kp0 = (s % {{SPC}}) * {{BK // K}};
% end
% if padded then
        // outside the input: 0 bytes copied, zeros filled, nothing read; the address
        // stays base + literal so that the literal folds into the copy instruction
% end
#pragma unroll
        for (int j = 0; j < {{LC}}; j++) {
            {{xpdef}}
#pragma unroll
            for (int r = 0; r < {{BK}}; r++) copy4(x + 4 * (r * {{XR}} + j * {{NT}}), {{xat}}, {{xbytes}});
        }
% end
        // the slice's weights (kept from folding into 64-bit index arithmetic, as xp);
        // a copy of 0 bytes reads nothing, so its address may lie outside them
        const {{w_t}}* wp = w_arg + {{wso}};
        asm("" : "+l"(wp));
% if wvec then
#pragma unroll
        for (int i = 0; i < {{WQ}}; i++) {
%   if wqtail then
            if (tid + i * {{NT}} >= {{BK * BM // 4}}) break;
%   end
%   if qok then
            copy16(w + {{wqdst}}, wp + wq0 + i * {{NT // (BM // 4) * M}}, {{qok}} ? 16 : 0);   // 0: zero fill
%   else
            copy16(w + {{wqdst}}, wp + wq0 + i * {{NT // (BM // 4) * M}}, 16);
%   end
        }
% else
#pragma unroll
        for (int i = 0; i < {{WL}}; i++) {
% if wtail then
            if (tid + i * {{NT}} >= {{BK * BM}}) break;
% end
% if wguard then
            copy4(w + 4 * {{name}}_WX(i), wp + {{name}}_WG(i), {{name}}_WOK(i) ? 4 : 0);   // 0: zero fill
% else
            copy4(w + 4 * {{name}}_WX(i), wp + {{name}}_WG(i), 4);
% end
        }
% end
    };
#pragma unroll
    for (int s = 0; s < {{ST - 1}}; s++) {
        if (s < {{S}}) issue(s, s{{tail and ", s == 0" or ""}});
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
#pragma unroll 1
    for (int s = 0; s < {{S}}; s++) {
        asm volatile("cp.async.wait_group {{ST - 2}};" ::: "memory");
        __syncthreads();   // slice s landed for every thread; slice s-1's buffer is free
        if (s + {{ST - 1}} < {{S}}) issue(s + {{ST - 1}}, (s + {{ST - 1}}) % {{ST}}{{tail and ", false" or ""}});
        asm volatile("cp.async.commit_group;" ::: "memory");
        multiply(s % {{ST}});
    }
#else
% end
    // two buffers: the next slice is loaded into registers during the products
% if xt then
    {{VT}} xr[{{XQ}}];
    {{in_t}} wr[{{WL}}];
% else
    {{in_t}} xr[{{LC}}][{{BK}}], wr[{{WL}}];
% end
    auto fetch = [&](int s) {
% if SPLIT > 1 then
        s += s0;   // from the block's slice to the reduction's
% end
% if tail then
        const bool first = s == 0;
% end
        const int o = xo(s);
% if xt then
{{xt_src_def}}
#pragma unroll
        for (int i = 0; i < {{XQ}}; i++) {
            xr[i] = {{name}}_XOK(i) ? __ldg(reinterpret_cast<const {{VT}}*>({{xt_src}})) : {{VT}}{};
        }
% else
% if free then
        const int e0 = {{e0}};
% elseif padded and not whole then
        const int kp0 = (s % {{SPC}}) * {{BK // K}};
% end
#pragma unroll
        for (int j = 0; j < {{LC}}; j++) {
            {{xpdef}}
#pragma unroll
            for (int r = 0; r < {{BK}}; r++) xr[j][r] = {{xload}};
        }
% end
#pragma unroll
        for (int i = 0; i < {{WL}}; i++)
% if wguard then
            wr[i] = {{name}}_WOK(i) ? __ldg(w_arg + {{name}}_WG(i) + {{wso}}) : {{w_zero}};
% else
            wr[i] = __ldg(w_arg + {{name}}_WG(i) + {{wso}});
% end
    };
    auto stash = [&](int b) {
        {{in_t}}* const x = xs + b * {{XB}};
        {{w_t}}* const w = ws + b * {{KP * WR}};
% if xt then
#pragma unroll
        for (int i = 0; i < {{XQ}}; i++) {
            *reinterpret_cast<{{VT}}*>(x + {{name}}_XC(i) * {{XT}} + {{name}}_XR(i)) = xr[i];
        }
% else
#pragma unroll
        for (int j = 0; j < {{LC}}; j++)
#pragma unroll
            for (int r = 0; r < {{BK}}; r++) x[r * {{XR}} + tid + j * {{NT}}] = xr[j][r];
% end
#pragma unroll
        for (int i = 0; i < {{WL}}; i++) {
% if wtail then
            if (tid + i * {{NT}} >= {{BK * BM}}) break;
% end
            w[{{name}}_WX(i)] = wr[i];
        }
    };
    {{loop}}
% if cpasync then
#endif
% end

% if mma then
    // the block's tile through shared memory (over the slices' buffers, read by now):
    // es[map][column], then each thread takes {{ETM}} maps x 4 columns of it
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
    __syncthreads();
% -- es: the accumulators over the staging buffers (as written, in_t == acc_t; a narrower
% -- in_t needs es = reinterpret_cast<acc_t*>(smem4) and ER sized in acc_t)
% if narrow then
    {{acc_t}}* const es = reinterpret_cast<{{acc_t}}*>(smem4);
% else
    {{acc_t}}* const es = xs;
% end
#pragma unroll
    for (int i = 0; i < {{FP}}; i++)
#pragma unroll
        for (int j = 0; j < {{FM}}; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                es[(wm0 + 8 * j + 2 * t4 + (r & 1)) * {{ER}} + wp0 + 16 * i + g8 + 8 * (r >> 1)] = cf[i][j][r];
    __syncthreads();
    const int tx = tid % {{BN // 4}}, ty = tid / {{BN // 4}};
    {{acc_t}} acc[{{ETM}}][4];
#pragma unroll
    for (int i = 0; i < {{ETM}}; i++) {
        const {{vec_t(acc_t, 4)}} t = *reinterpret_cast<const {{vec_t(acc_t, 4)}}*>(es + (ty * {{ETM}} + i) * {{ER}} + tx * 4);
        acc[i][0] = t.x, acc[i][1] = t.y, acc[i][2] = t.z, acc[i][3] = t.w;
    }

% end
{{epilogue}}
% if xt then
#undef {{name}}_XC
#undef {{name}}_XR
#undef {{name}}_XOK
% elseif not free then
#undef {{name}}_OFF
% end
#undef {{name}}_WG
#undef {{name}}_WX
% if wguard then
#undef {{name}}_WOK
% end
% if (padded or tail) and not xt then
#undef {{name}}_OK
% end
]=], "conv2d_igemm")

-- The epilogue (conv2d_igemm_wg's too): each thread's ETM maps x ETN columns in acc
-- (tx, ty: its column and map group; col0, m0, total as in the kernel) get the fused
-- pool, bias and activation and are stored; vectors of four where a thread's four
-- columns lie in one image.
local epilogue_source = engine.compile([=[
    // epilogue: {{pool_doc}}{{bias and "bias, " or ""}}{{actname}}, {{res and "add, " or ""}}store
#pragma unroll
    for (int j = 0; j < {{ETN}}; j += 4) {
        const int c = col0 + tx * 4 + j * {{BN // ETN}};   // first of four columns
        if (c >= total) continue;
% if pooled then
        const int win = c >> 2;   // the four columns are one pooling window
        const int img = win / {{P}}, at = win - img * {{P}};
% elseif vec then
        const int img = c / {{P}}, at = c - img * {{P}};   // four neighbours in one image
% end
% if pooled or vec then
#pragma unroll
        for (int i = 0; i < {{ETM}}; i++) {
            const int m = m0 + ty * {{ETM}} + i;
%   if mguard then
            if (m >= {{M}}) break;
%   end
%   local b = bias and (" + " .. w_to_acc("__ldg(b_arg + m)")) or ""
%   if pooled and pool_kind == "avg" then
%     if bias then
            const {{acc_t}} bv = {{w_to_acc("__ldg(b_arg + m)")}};
%       b = " + bv"
%     end
            out[img * {{OS}} + m * {{P}} + at] = {{from_acc("(" .. act("acc[i][j]" .. b) .. " + " .. act("acc[i][j + 1]" .. b) .. " +\n                " .. act("acc[i][j + 2]" .. b) .. " + " .. act("acc[i][j + 3]" .. b) .. ") * 0.25f")}};
%   elseif pooled then
            const {{acc_t}} v = fmaxf(fmaxf(acc[i][j], acc[i][j + 1]), fmaxf(acc[i][j + 2], acc[i][j + 3])){{b}};
            out[img * {{OS}} + m * {{P}} + at] = {{from_acc(act("v"))}};
%   else
%     if bias then
            const {{acc_t}} bv = {{w_to_acc("__ldg(b_arg + m)")}};
%       b = " + bv"
%     end
%     if res then
%       for k = 1, res.n do
            const {{vec_t(in_t, 4)}} r{{k}} = __ldg(reinterpret_cast<const {{vec_t(in_t, 4)}}*>({{res.names[k]}} + img * {{M * P}} + m * {{P}} + at));
%       end
%     end
            {{vec_t(out_t, 4)}} t;
            t.x = {{from_acc(radd(act("acc[i][j]" .. b), "x"))}};
            t.y = {{from_acc(radd(act("acc[i][j + 1]" .. b), "y"))}};
            t.z = {{from_acc(radd(act("acc[i][j + 2]" .. b), "z"))}};
            t.w = {{from_acc(radd(act("acc[i][j + 3]" .. b), "w"))}};
            *reinterpret_cast<{{vec_t(out_t, 4)}}*>(out + img * {{OS}} + m * {{P}} + at) = t;
%   end
        }
% else
        // four columns that may straddle images: each its own place, then every map
#pragma unroll
        for (int d = 0; d < 4; d++) {
            if (c + d >= total) break;
            const int img = (c + d) / {{P}}, at = (c + d) - img * {{P}};
#pragma unroll
            for (int i = 0; i < {{ETM}}; i++) {
                const int m = m0 + ty * {{ETM}} + i;
%   if mguard then
                if (m >= {{M}}) break;
%   end
                out[img * {{OS}} + m * {{P}} + at] = {{from_acc(radd(act("acc[i][j + d]" .. (bias and (" + " .. w_to_acc("__ldg(b_arg + m)")) or "")), nil, "img * " .. M * P .. " + m * " .. P .. " + at"))}};
            }
        }
% end
    }
}
]=], "conv2d_igemm")

-- The epilogue's text for values v (which carry common.typed's types), to stand
-- on a line of its own; v.res and v.radd (an add computed here) default to none,
-- v.OS (the output's image stride in elements) to M*P.
function igemm.epilogue(v)
  if v.res == nil then v.res = false end
  -- the output's elements an image: its own M*P, or a concat's (common.out_slice)
  if v.OS == nil then v.OS = v.M * v.P end
  if v.radd == nil then v.radd = function(e) return e end end
  return (epilogue_source(v):gsub("\n$", ""))
end

-- The test that weight i of a slice is inside the layer (w: the weight
-- layout's flags): in the general layout its index is -1 outside; with whole
-- rows per thread, the thread's map (wok) and, in a last partial round, the
-- element index.
local function wok_expr(w, p, s)
  local t = {}
  if not w.wstep then
    t[1] = "wg[i] >= 0"
  else
    if w.mguard then t[#t + 1] = "wok" end
    if w.wtail then t[#t + 1] = string.format("tid + (i) * %d < %d", s.threads, p.bk * p.bm) end
  end
  if s.tail then
    -- free slices: the first one's zero rows
    local row = w.wstep and string.format("tid / %d + (i) * %d", p.bm, s.threads // p.bm)
      or string.format("(tid + (i) * %d) / %d", s.threads, p.bm)
    t[#t + 1] = string.format("(!first || %s >= %d)", row, s.pad0)
  end
  return #t > 0 and table.concat(t, " && ") or "true"
end

-- The same for quad i of the 16-byte path: nil when every quad is inside.
local function qok_expr(w, p, s)
  local t = {}
  if w.mguard then t[#t + 1] = "wqok" end
  if s.tail then
    t[#t + 1] = string.format("(!first || tid / %d + i * %d >= %d)", p.bm // 4, s.threads // (p.bm // 4), s.pad0)
  end
  if #t == 0 then return nil end
  return #t == 1 and t[1] or "(" .. table.concat(t, " && ") .. ")"
end

-- How a slice's weights are loaded: partial map tile (mguard), a last partial
-- round of loads (wtail), either (wguard), whole rows per thread (wstep), 16-byte
-- quads (wvec: M and bm multiples of 4, sm_80+) in WQ rounds, the last partial (wqtail).
local function weight_layout(l, p, s)
  local w = {
    mguard = l.M % p.bm ~= 0,
    wtail = s.WL * s.threads ~= p.bk * p.bm,
    wstep = s.threads % p.bm == 0,
    wvec = s.async and l.M % 4 == 0 and p.bm % 4 == 0 and s.threads % (p.bm // 4) == 0,
    WQ = common.ceil_div(p.bk * p.bm // 4, s.threads),
  }
  w.wguard = w.mguard or w.wtail or s.tail
  w.wqtail = w.WQ * s.threads ~= p.bk * p.bm // 4
  w.wok = wok_expr(w, p, s)
  w.qok = w.wvec and qok_expr(w, p, s) or false
  return w
end

-- Slices of bk reduction rows that need not be whole kernel rows ("free"), the
-- first one short by pad0 zero rows (0: none): for slice s, D and CP (its first
-- reduction index s*bk - pad0 is s*bk + D counted from CP channels back, never
-- negative), e0 (C text: the slice's first index into the table), xof (its
-- input offset from a column's base) and wso (its first weight row times M);
-- with `tables`, tab and pq, the table of KK + bk offsets and kernel rows and
-- columns (64*p + q) as C initialisers: reduction index r of the slice lies
-- xof + tab[e0 + r] elements from the column's base.
function igemm.free_slices(l, bk, pad0, tables)
  local KK = l.K * l.K
  local v = {}
  v.D, v.CP = pad0 == 0 and 0 or (-pad0) % KK, common.ceil_div(pad0, KK)
  v.e0 = v.D == 0 and string.format("(s * %d) %% %d", bk, KK) or string.format("(s * %d + %d) %% %d", bk, v.D, KK)
  v.xof = v.D == 0 and v.CP == 0 and string.format("(s * %d) / %d * %d", bk, KK, l.H * l.W)
    or string.format("((s * %d + %d) / %d - %d) * %d", bk, v.D, KK, v.CP, l.H * l.W)
  v.wso = pad0 == 0 and string.format("s * %d", bk * l.M) or string.format("(s * %d - %d) * %d", bk, pad0, l.M)
  if tables then
    local tab, pq = {}, {}
    for i = 0, KK + bk - 1 do
      local e = i % KK
      tab[#tab + 1] = (i // KK) * l.H * l.W + (e // l.K) * l.W + e % l.K
      pq[#pq + 1] = 64 * (e // l.K) + e % l.K
    end
    v.tab = "{" .. table.concat(tab, ", ") .. "}"
    v.pq = "{" .. table.concat(pq, ", ") .. "}"
  end
  return v
end

local function kernel(l, p, tc)
  local s = shape(l, p, tc)
  local g = s.g
  local whole = not s.free and p.bk % s.KK == 0
  local act = s.fused and l.act or "none"
  -- an add computed here (common.residual): its other operands read at the stored elements
  -- (not with a split: the parts are raw partial sums, and the add stays a kernel)
  local res = common.residual(l, s.fused and not s.pooled and s.split == 1)
  -- the output written into a concat's slice (common.out_slice): not with a split
  -- (the parts are raw partial sums; splitk_reduce writes the output)
  local slice = common.out_slice(l, s.fused and s.split == 1)
  local name = string.format("conv2d_igemm_c%dm%dk%d_h%dw%d%s_%s%s%s_m%dn%dk%d_t%dx%d_s%d",
    l.C, l.M, l.K, l.H, l.W, g.tag, act, s.pooled and g.pool_tag or "", l.bias and "_bias" or "",
    p.bm, p.bn, p.bk, p.tm, p.tn, p.stages) .. (p.occ > 1 and string.format("_o%d", p.occ) or "")
    .. (s.mma and "_tc" or "") .. (s.tf32 and "_tf32" or "") .. (res and res.tag or "")
    .. (s.split > 1 and string.format("_z%d", s.split) or "") .. (slice and slice.tag or "")
  local ty = common.types(l)
  -- inputs and weights share the staging buffers, copy and register declarations
  if ty.in_t ~= ty.w_t then error("conv2d_igemm stages inputs and weights of one element type", 2) end
  local std = common.std_args({ w_name = "w_arg", b_name = "b_arg", types = ty })
  local head, args = common.kernel_head(name, s.threads, res and res.args(std) or std, nil, p.occ)
  -- padding: kernel rows p in [pt, ylim) and columns q in [pl, xlim) are inside the
  -- input for every column of the product; only the others test their mask bit
  local rowok, colok = "1", "1"
  if g.padded then
    local ylim = l.H - ((s.CH - 1) * g.S - g.pt)
    local xlim = l.W - ((s.CW - 1) * g.S - g.pl)
    local pr = string.format("(((r) %% %d) / %d)", s.KK, l.K)
    if g.pt > 0 or ylim < l.K then
      rowok = string.format("((%s >= %d && %s < %d) || ((rm[j] >> %s) & 1))", pr, g.pt, pr, ylim, pr)
    end
    if g.pl > 0 or xlim < l.K then
      colok = string.format("(((r) %% %d >= %d && (r) %% %d < %d) || ((cm[j] >> ((r) %% %d)) & 1))",
        l.K, g.pl, l.K, xlim, l.K)
    end
  end
  -- the block's count of slices: a literal, or (a ragged split) the variable ns
  local nslices = s.LAST ~= s.SS and "ns" or s.SS
  local v = {
    name = name, head = head,
    C = l.C, H = l.H, W = l.W, M = l.M, K = l.K, KK = s.KK, R = s.R,
    BM = p.bm, BN = p.bn, BK = p.bk, TM = p.tm, TN = p.tn, ST = p.stages,
    mma = s.mma, tf32 = s.tf32, split = common.tf32x3_split(), tf32_round = common.tf32_round(),
    tf32_round_emu = common.tf32_round_emu(), loop = common.prefetch_loop(nslices),
    zero_cf = s.mma and common.tf32x3_zero("cf", s.FP, s.FM, 4) or "",
    mma_defs = common.tf32x3_mma_defs(s.half), half = s.half or false, narrow = s.narrow, cpasync = not s.narrow,
    KP = s.KP, XR = s.XR, WR = s.WR, ER = s.ER, FP = s.FP, FM = s.FM, ETM = s.ETM, ETN = s.ETN,
    NT = s.threads, LC = s.LC, WL = s.WL, S = nslices, SS = s.SS, LAST = s.LAST, SLICES = s.slices, SPLIT = s.split, COLS = s.COLS, P = s.P, OW = s.OW,
    smem = s.smem, pooled = s.pooled, bias = l.bias,
    whole = whole, SPC = (whole or s.free) and 1 or (l.K // (p.bk // l.K)),
    slice_doc = s.xt and string.format("%d rows each, staged column by column", p.bk)
      or s.free and string.format("%d reduction rows each, offsets from a table", p.bk)
      or whole and string.format("%d whole channel%s each", p.bk // s.KK, p.bk // s.KK > 1 and "s" or "")
      or string.format("%d kernel row%s of one channel each", p.bk // l.K, p.bk // l.K > 1 and "s" or ""),
    vec = s.P % 4 == 0,
    actname = act,
    act = function(e) return common.act(act, e) end,
    STR = g.S, pt = g.pt, pl = g.pl, padded = g.padded,
    mtype = l.K > 32 and "unsigned long long" or "unsigned", one = l.K > 32 and "1ull" or "1u",
    rowok = rowok, colok = colok,
    -- one gathered element: its bytes to copy (sm_80+) and its register load (older);
    -- in the padding, 0 bytes and 0.0f
    xbytes = (g.padded or s.tail) and (name .. "_OK(j, r) ? 4 : 0") or "4",
    -- the address of slice row r (a literal) of column j
    xat = s.free and string.format("xp + %s_tab[e0 + r]", name) or string.format("xp + %s_OFF(r)", name),
    -- the column's slice base; the empty asm keeps the compiler from folding it back
    -- into in + 4*(index) (64-bit arithmetic an element): each element is then one
    -- wide multiply-add of its table offset (or a literal in the copy instruction)
    xpdef = 'const ' .. ty.in_t .. '* xp = xb[j] + o;\n            asm("" : "+l"(xp));',
    pool_kind = g.kind,
    pool_doc = not s.pooled and "" or g.max2 and "2x2 max, " or "2x2 average, ",
  }
  for k, x in pairs(weight_layout(l, p, s)) do v[k] = x end
  v.free, v.tail, v.pad0 = s.free, s.tail, s.pad0
  -- the input's stage: row k, column c of a slice at xs + b*XB + xi(k, c); XK between rows
  v.xt, v.XB = s.xt, s.XB
  v.XK = s.xt and 1 or s.XR
  v.xi = function(k, c)
    if s.xt then return string.format("(%s) * %d + %s", c, s.XT, k) end
    return string.format("%s * %d + %s", k, s.XR, c)
  end
  if s.xt then
    v.XT, v.V, v.QPC, v.XQ, v.xfix = s.XT, s.V, s.QPC, s.XQ, s.xfix
    v.VT = common.vec_t(ty.in_t, s.V)
    -- copy i's first element: from this thread's pointer at a literal offset (xfix), or
    -- from its column and row
    if s.xfix then
      v.xt_src_def = "        const " .. ty.in_t .. "* xp = xq + o;   // (kept from folding into 64-bit index arithmetic a copy)\n"
        .. '        asm("" : "+l"(xp));'
      v.xt_src = string.format("xp + i * %d", s.threads // s.QPC * l.C)
    else
      v.xt_src_def = "        // copy i reads from in + (col0 + its column)*" .. l.C .. " + o + its row"
      v.xt_src = string.format("in + (col0 + %s_XC(i)) * %d + o + %s_XR(i)", name, l.C, name)
    end
  end
  for k, x in pairs(igemm.free_slices(l, p.bk, s.pad0, s.free)) do v[k] = x end
  common.typed(l, v)
  -- a zero element of the input and weight types ("0.0f" for FP32)
  v.in_zero, v.w_zero = common.convert("float", ty.in_t, "0.0f"), common.convert("float", ty.w_t, "0.0f")
  v.xload = (g.padded or s.tail) and string.format("%s_OK(j, r) ? __ldg(%s) : %s", name, v.xat, v.in_zero)
    or string.format("__ldg(%s)", v.xat)
  -- the byte offset in a slice of this thread's quad i of weights
  v.wqdst = s.WR == p.bm and string.format("16 * (tid + i * %d)", s.threads)
    or string.format("wqx + i * %d", 4 * (s.threads // (p.bm // 4)) * s.WR)
  v.res = res or false
  -- e, the conv's value, with the add applied: its other operands from the float4
  -- registers rK (component c) or, c nil, their elements at index idx
  v.radd = function(e, c, idx)
    if not res then return e end
    local others = {}
    for k = 1, res.n do
      others[k] = c and ty.to_acc(string.format("r%d.%s", k, c)) or ty.to_acc(string.format("__ldg(%s + %s)", res.names[k], idx))
    end
    return res.sum(e, others)
  end
  if s.split > 1 then
    -- the block's raw partial sums, stored as the epilogue stores outputs (float4
    -- where a thread's four columns lie in one image) into part z of the partials;
    -- with a fused 2x2 pool every GEMM column is stored, in the columns' order (a
    -- pooling window's four conv outputs side by side: COLS = 4P an image and map),
    -- and splitk_reduce pools
    local pv = {}
    for key, x in pairs(v) do pv[key] = x end
    pv.bias, pv.pooled, pv.pool_doc = false, false, ""
    pv.P, pv.vec = s.COLS, s.COLS % 4 == 0
    pv.actname = string.format("part z of %d, raw partial sums (splitk_reduce adds the bias%s%s)", s.split,
      act ~= "none" and (" and " .. act) or "", s.pooled and (", pools 2x2 " .. g.kind) or "")
    pv.act = function(e) return e end
    v.epilogue = string.format("    out += (long long)blockIdx.z * n * %d;   // partials[z]\n", l.M * s.COLS)
      .. igemm.epilogue(pv)
  else
    v.OS = slice and slice.stride or nil
    v.epilogue = igemm.epilogue(v)
  end
  local k = common.tiled_conv_record(l, p, s, act, name, args, source(v), s.COLS)
  k.const_bytes = s.const_bytes
  if s.split > 1 then
    -- the partials [split][n][M][P]: the planner names the tensor and adds splitk_reduce
    k.grid[3] = s.split
    k.out_elems = s.split * l.M * s.COLS
    k.bias = "none"
    k.split = s.split
    k.split_pool = s.pooled and g.kind or nil   -- "max" or "avg": splitk_reduce pools the four columns
    k.shape = k.shape .. string.format(", reduced in %d parts (partial sums)", s.split)
  end
  k.residual = res ~= nil
  if slice then
    k.out_slice = true
    k.shape = k.shape .. string.format(", into a slice of %d values an image", slice.stride)
  end
  if s.tf32 then k.precision = "tf32" end
  if s.half then k.precision = l.precision end
  return k
end

-- Template `tc` (conv2d_igemm_tc) or not (conv2d_igemm): its parameters, and
-- check, cost and kernel for that mode.
function igemm.template(tc)
  local T = {}
  T.fuses_add = true   -- common.residual: an add computed in the epilogue
  T.out_slice = true   -- common.out_slice: the output written into a concat's slice
  T.doc = tc and "implicit GEMM with the products on tensor cores (3xTF32: FP32 accuracy); sm_80+"
    or "implicit GEMM; a block computes a maps x pixels tile through shared-memory slices"
  T.params = params(tc)
  function T.check(l, p) return check(l, p, tc) end
  function T.cost(l, p) return cost(l, p, tc) end
  function T.kernel(l, p) return kernel(l, p, tc) end
  return T
end

return igemm
