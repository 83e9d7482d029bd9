-- common.lua — small helpers shared by the kernel templates.
local common = {}

-- CUDA expression applying activation `act` to the float expression `v`.
function common.act(act, v)
  if act == "tanh" then return "tanhf(" .. v .. ")" end
  if act == "relu" then return "fmaxf(" .. v .. ", 0.0f)" end
  if act == "none" then return v end
  error("unknown activation '" .. tostring(act) .. "'", 2)
end

-- All divisors of n that are at most `max`, ascending.
function common.divisors(n, max)
  local out = {}
  for d = 1, math.min(n, max or n) do
    if n % d == 0 then out[#out + 1] = d end
  end
  return out
end

-- lo, lo*2, lo*4, ... up to hi.
function common.powers_of_two(lo, hi)
  local out, v = {}, lo
  while v <= hi do out[#out + 1] = v; v = v * 2 end
  return out
end

-- multiples of `step` from `lo` to `hi`.
function common.multiples(step, lo, hi)
  local out = {}
  for v = lo, hi, step do out[#out + 1] = v end
  return out
end

-- The one parameter of the simple one-thread-per-element kernels.
function common.block_param(default)
  return { name = "block", doc = "threads per block",
           legal = function(_) return common.multiples(32, 32, 1024) end,
           default = function(_) return default end }
end

-- A grid extent that grows with the batch: ceil(N * per / div) blocks.
-- The runtime evaluates it; the template alone decides `per` and `div`.
function common.batch_dim(per, div)
  return string.format("N*%d/%d", per, div)
end

function common.ceil_div(a, b) return (a + b - 1) // b end

function common.contains(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- Constant memory a network may use for weights and biases, over all its
-- kernels (a fat binary holds them in one module, whose user constant bank
-- is 64 KiB; leave a margin for the compiler's own constants).
common.CONST_BUDGET = 60 * 1024

-- Limits every launch must respect on every supported architecture.
common.MAX_THREADS = 1024
common.MAX_SHARED = 48 * 1024

return common
