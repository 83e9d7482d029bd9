-- winograd.lua — the three matrices of Winograd's minimal filtering F(m, r), worked
-- out exactly (in rationals) from interpolation points, and the C statements that
-- apply them on both sides of a small tile.
--
-- F(m, r) computes m outputs of an r-tap correlation, y_i = sum_k d_(i+k) g_k,
-- from n = m + r - 1 inputs with n multiplications: y = AT [(G g) * (BT d)]
-- (elementwise *). In two dimensions Y = AT [(G g G^T) * (BT d B)] A.
-- Derivation (the modified Toom-Cook construction): take n - 1 finite points a_j
-- and the point at infinity. The linear convolution s = g x (x of length m) is
-- s(x) = sum_j s(a_j) N_j(x) / f_j + s_(n-1) P(x), where N_j is the product of
-- (x - a_l) over l ~= j, f_j = N_j(a_j), P the product over every l, and
-- s_(n-1) = g_(r-1) x_(m-1) the leading coefficient. So s = C [(G g) * (A x)]
-- with A[j][i] = a_j^i (the last row picks x_(m-1)), G[j][k] = a_j^k / f_j (the
-- last row picks g_(r-1)) and C's columns the coefficients of N_j and P. The
-- correlation is the transpose of that convolution: y = A^T [(G g) * (C^T d)],
-- so AT = A^T and BT = C^T: BT[j][k] is the coefficient of x^k in N_j (in P for
-- the last row). The points are 0, 1, -1, 2, -2, 1/2, -1/2 (small, so the
-- float rounding of larger tiles stays near float's own); n is at most 8.

local W = {}

local POINT_NUM = { 0, 1, -1, 2, -2, 1, -1 }
local POINT_DEN = { 1, 1, 1, 1, 1, 2, 2 }
W.MAX_N = #POINT_NUM + 1

-- rationals {num, den}, den > 0, in lowest terms
local function gcd(a, b)
  a, b = math.abs(a), math.abs(b)
  while b ~= 0 do a, b = b, a % b end
  return a
end
local function q(n, d)
  d = d or 1
  if d < 0 then n, d = -n, -d end
  local g = gcd(n, d)
  if g > 1 then n, d = n // g, d // g end
  return { n, d }
end
local function add(a, b) return q(a[1] * b[2] + b[1] * a[2], a[2] * b[2]) end
local function sub(a, b) return q(a[1] * b[2] - b[1] * a[2], a[2] * b[2]) end
local function mul(a, b) return q(a[1] * b[1], a[2] * b[2]) end
local function div(a, b) return q(a[1] * b[2], a[2] * b[1]) end
local function pow(a, k)
  local r = q(1)
  for _ = 1, k do r = mul(r, a) end
  return r
end

-- p(x) * (x - a), p a list of coefficients (p[1] for x^0)
local function times_root(p, a)
  local r = {}
  for k = 1, #p + 1 do r[k] = q(0) end
  for k = 1, #p do
    r[k + 1] = add(r[k + 1], p[k])
    r[k] = sub(r[k], mul(a, p[k]))
  end
  return r
end

-- M v for a rational matrix M and vector v
local function apply(M, v)
  local out = {}
  for j = 1, #M do
    local s = q(0)
    for k = 1, #v do s = add(s, mul(M[j][k], v[k])) end
    out[j] = s
  end
  return out
end

-- Whether the matrices compute the correlation exactly, on integer vectors.
local function exact(t)
  for trial = 1, 3 do
    local d, g = {}, {}
    for i = 1, t.n do d[i] = q((i * 7 + trial * 3) % 11 - 5) end
    for k = 1, t.r do g[k] = q((k * 5 + trial) % 9 - 4) end
    local gd, bd = apply(t.G, g), apply(t.BT, d)
    local prod = {}
    for j = 1, t.n do prod[j] = mul(gd[j], bd[j]) end
    local y = apply(t.AT, prod)
    for i = 1, t.m do
      local want = q(0)
      for k = 1, t.r do want = add(want, mul(d[i + k - 1], g[k])) end
      if y[i][1] ~= want[1] or y[i][2] ~= want[2] then return false end
    end
  end
  return true
end

local cache = {}

-- The matrices of F(m, r): {m, r, n, AT (m x n), G (n x r), BT (n x n)}, entries
-- rationals; errors where n = m + r - 1 is outside 2 .. MAX_N.
function W.matrices(m, r)
  local key = m * 100 + r
  if cache[key] then return cache[key] end
  local n = m + r - 1
  if m < 1 or r < 1 or n < 2 or n > W.MAX_N then
    error(string.format("F(%d, %d) needs %d points; from 2 to %d are known", m, r, n, W.MAX_N), 2)
  end
  local a = {}
  for j = 1, n - 1 do a[j] = q(POINT_NUM[j], POINT_DEN[j]) end
  local AT, G, BT = {}, {}, {}
  for i = 1, m do
    AT[i] = {}
    for j = 1, n - 1 do AT[i][j] = pow(a[j], i - 1) end
    AT[i][n] = q(i == m and 1 or 0)
  end
  for j = 1, n do
    G[j] = {}
    if j < n then
      local f = q(1)
      for l = 1, n - 1 do if l ~= j then f = mul(f, sub(a[j], a[l])) end end
      for k = 1, r do G[j][k] = div(pow(a[j], k - 1), f) end
    else
      for k = 1, r do G[j][k] = q(k == r and 1 or 0) end
    end
  end
  for j = 1, n do
    local p = { q(1) }
    for l = 1, n - 1 do if l ~= j then p = times_root(p, a[l]) end end
    BT[j] = {}
    for k = 1, n do BT[j][k] = p[k] or q(0) end
  end
  local t = { m = m, r = r, n = n, AT = AT, G = G, BT = BT }
  if not exact(t) then error(string.format("F(%d, %d): the transforms do not reproduce the correlation", m, r), 2) end
  cache[key] = t
  return t
end

-- A C float literal of rational c.
local function literal(c)
  local s = string.format("%.9g", c[1] / c[2])
  if not s:find("[.eEn]") then s = s .. ".0" end
  return s .. "f"
end

-- The C expression sum_k row[k] * x(k), zero terms left out, +-1 without a product.
local function combination(row, x)
  local terms = {}
  for k, c in ipairs(row) do
    if c[1] ~= 0 then
      local neg, mag = c[1] < 0, q(math.abs(c[1]), c[2])
      local e = (mag[1] == 1 and mag[2] == 1) and x(k) or (literal(mag) .. " * " .. x(k))
      terms[#terms + 1] = (neg and "- " or "+ ") .. e
    end
  end
  if #terms == 0 then return "0.0f" end
  local s = table.concat(terms, " ")
  if s:sub(1, 2) == "+ " then return s:sub(3) end
  return "-" .. s:sub(3)
end

-- Terms a combination of row costs (additions, counting a product as one).
local function nonzeros(row)
  local n = 0
  for _, c in ipairs(row) do if c[1] ~= 0 then n = n + 1 end end
  return n
end

-- C statements for out = L in R^T (out[j][k] = sum_p,q L[j][p] in[p][q] R[k][q]),
-- as two unrolled loops (the source grows with the matrices' rows, not their
-- squares): x(p, c) gives in[p][c]'s expression for row p (0-based) and column
-- expression c; store(j, k, e) the statement storing out[j][k] for row expression
-- j and column k; the temporaries are the array tmp of C type ctype (the
-- accumulator type), in a block of their own.
function W.sandwich(L, R, x, store, tmp, ctype)
  local Q = #R[1]
  local lines = { "{", string.format("%s %s[%d][%d];", ctype, tmp, #L, Q), "#pragma unroll",
    string.format("for (int %s_c = 0; %s_c < %d; %s_c++) {", tmp, tmp, Q, tmp) }
  for j = 1, #L do
    lines[#lines + 1] = string.format("    %s[%d][%s_c] = %s;", tmp, j - 1, tmp,
      combination(L[j], function(p) return x(p - 1, tmp .. "_c") end))
  end
  lines[#lines + 1] = "}"
  lines[#lines + 1] = "#pragma unroll"
  lines[#lines + 1] = string.format("for (int %s_j = 0; %s_j < %d; %s_j++) {", tmp, tmp, #L, tmp)
  for k = 1, #R do
    lines[#lines + 1] = "    " .. store(tmp .. "_j", k - 1, combination(R[k],
      function(c) return string.format("%s[%s_j][%d]", tmp, tmp, c - 1) end))
  end
  lines[#lines + 1] = "}"
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n")
end

-- The additions (and products) W.sandwich(L, R, ...) performs.
function W.sandwich_ops(L, R)
  local ops, Q = 0, #R[1]
  for j = 1, #L do ops = ops + Q * nonzeros(L[j]) end
  for k = 1, #R do ops = ops + #L * nonzeros(R[k]) end
  return ops
end

return W
