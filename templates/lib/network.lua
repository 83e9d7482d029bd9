-- network.lua — from a validated network to the list of kernels that run it.
--
-- The generator (C) passes the spec as a table; this file decides which
-- template serves each layer, resolves and checks each template's parameters,
-- renders the sources, and names the tensors each kernel reads and writes.
-- The returned table is all the generator writes into files and the manifest.
--
-- net = { name, C, H, W, scale_text, offset_text,
--         layers = { { index, name, op, C, H, W, M, K, pool, bias, act, out,
--                      strategy, params = { key = value }, OC, OH, OW }, ... } }

local common = import("lib/common")

local network = {}

-- A structured failure the generator maps to a position in the spec.
-- `where` is "key" when the parameter's name is at fault, else its value is.
local function fail(layer, param, message, where)
  error({ cg_layer = layer, cg_param = param, message = message, cg_where = where or "value" }, 0)
end

local function join(list)
  local s = {}
  for i, v in ipairs(list) do s[i] = tostring(v) end
  return table.concat(s, ", ")
end

-- Combinations resolve() tries before it gives up looking for a legal one.
local SEARCH_LIMIT = 20000

-- Resolve a template's parameters for one layer: spec values checked against
-- the declared legal values; every parameter the spec leaves out is searched,
-- its declared default first, then its legal values in order, for the first
-- combination the template's own cross-checks accept. So a layer without
-- `params` always gets a legal kernel when one exists. Returns the values and
-- their "k=v" list in declared order.
local function resolve(T, tname, l, given, index)
  local known, choices = {}, {}
  for i, d in ipairs(T.params) do
    known[d.name] = true
    local legal = d.legal(l)
    local v = given and given[d.name]
    if v ~= nil then
      if not common.contains(legal, v) then
        local shown = legal
        if #legal > 16 then shown = { legal[1], legal[2], legal[3], "...", legal[#legal] } end
        fail(index, d.name, string.format("%s=%d is not legal for %s on this layer (%s); expected one of %s",
          d.name, v, tname, d.doc, join(shown)))
      end
      choices[i] = { v }
    else
      local def = d.default(l)
      local list = { def }
      for _, x in ipairs(legal) do if x ~= def then list[#list + 1] = x end end
      choices[i] = list
    end
  end
  for k, _ in pairs(given or {}) do
    if not known[k] then
      local names = {}
      for _, d in ipairs(T.params) do names[#names + 1] = d.name end
      fail(index, k, string.format("unknown parameter '%s' for %s (expected %s)", k, tname,
        table.concat(names, ", ")), "key")
    end
  end
  local p, tried, first_msg, first_param = {}, 0, nil, nil
  local function search(i)
    if i > #T.params then
      tried = tried + 1
      local msg, param = T.check(l, p)
      if not msg then return true end
      if not first_msg then first_msg, first_param = msg, param end
      return false
    end
    for _, v in ipairs(choices[i]) do
      p[T.params[i].name] = v
      if search(i + 1) or tried >= SEARCH_LIMIT then return tried < SEARCH_LIMIT end
    end
    return false
  end
  if not search(1) then fail(index, first_param, first_msg) end
  local listed = {}
  for _, d in ipairs(T.params) do listed[#listed + 1] = d.name .. "=" .. p[d.name] end
  return p, table.concat(listed, " ")
end

-- The rule `strategy: auto` follows until a tuner measures: a reduction
-- C*K*K of at most AUTO_DIRECT_MAX is unrolled whole by `direct` (it wins on
-- one-channel layers); anything deeper goes to `igemm`, whose code does not
-- grow with C. Returns the template name and the reason, for the file header.
network.AUTO_DIRECT_MAX = 64

function network.auto_strategy(l)
  local ckk = l.C * l.K * l.K
  if ckk <= network.AUTO_DIRECT_MAX then
    return "conv2d_direct", string.format("auto: direct, since C*K*K = %d <= %d", ckk, network.AUTO_DIRECT_MAX)
  end
  return "conv2d_igemm", string.format("auto: igemm, since C*K*K = %d > %d", ckk, network.AUTO_DIRECT_MAX)
end

function network.build(net)
  local out = { tensors = {}, layers = {}, kernels = {}, input = "pixels", predict = "predict" }
  local elems_max = 1
  local function tensor(name, dtype, elems)
    out.tensors[#out.tensors + 1] = { name = name, dtype = dtype, elems = elems }
    if elems > elems_max then elems_max = elems end
    return name
  end
  local seen = {}
  -- constant memory left for weights: all kernels of a network may share one
  -- module (a fat binary), and a module has one 64 KiB constant bank
  local const_left = common.CONST_BUDGET
  local function add(tname, l, given, index, layer, input, output_name, dtype)
    local T = import(tname)
    l.const_left = const_left
    local p, listed = resolve(T, tname, l, given, index)
    local k = T.kernel(l, p)
    if seen[k.name] and (k.weights:sub(1, 6) == "const:") then
      -- constant-memory symbols belong to one layer: give this one its own kernel
      fail(index, nil, "two layers generate the same kernel '" .. k.name ..
        "' with weights in constant memory; change a parameter of one of them")
    end
    seen[k.name] = true
    const_left = const_left - (k.const_bytes or 0)
    k.template = tname
    k.layer = layer
    k.params = listed
    k["in"] = input
    k.out = tensor(output_name, dtype or "f32", k.out_elems)
    out.kernels[#out.kernels + 1] = k
    return k
  end

  local elems_in = net.C * net.H * net.W
  tensor("pixels", "u8", elems_in)
  local cur = add("input_u8", { elems = elems_in, scale_text = net.scale_text, offset_text = net.offset_text },
    nil, 0, "input", "pixels", "input")
  cur = cur.out
  for _, l in ipairs(net.layers) do
    local i = l.index
    if l.op == "conv" then
      local tname, why = "conv2d_" .. l.strategy, nil
      if l.strategy == "auto" then tname, why = network.auto_strategy(l) end
      local k = add(tname, l, l.params, i, l.name, cur, l.name)
      k.chosen = why
      if not k.fused then
        -- unfused epilogue: conv (+bias) at full size, then activation, then pool
        local CH, CW = l.H - l.K + 1, l.W - l.K + 1
        out.tensors[#out.tensors].name = l.name .. ".conv"
        k.out = l.name .. ".conv"
        local last = k.out
        if l.act ~= "none" then
          local a = add("activation", { elems = l.M * CH * CW, act = l.act }, nil, i, l.name, last,
            l.pool == 2 and (l.name .. ".act") or l.name)
          last = a.out
        end
        if l.pool == 2 then
          add("maxpool2", { C = l.M, H = CH, W = CW }, nil, i, l.name, last, l.name)
        elseif l.act == "none" then
          out.tensors[#out.tensors].name = l.name
          k.out = l.name
        end
      end
    elseif l.op == "fc" then
      add("fc_" .. l.strategy, l, l.params, i, l.name, cur, l.name)
    elseif l.op == "softmax" then
      add("softmax", { elems = l.C * l.H * l.W }, nil, i, l.name, cur, l.name)
    else
      fail(i, nil, "no template for op '" .. tostring(l.op) .. "'")
    end
    out.layers[#out.layers + 1] = { name = l.name, op = l.op, out = l.name }
    cur = l.name
  end
  local last = net.layers[#net.layers]
  out.output = cur
  add("argmax", { elems = last.OC * last.OH * last.OW }, nil, #net.layers, "predict", cur, "predict", "i32")
  out.max_batch = 0x7fffffff // elems_max
  return out
end

-- Entry point for the generator: (result) or (nil, failure table).
function network.generate(net)
  local ok, res = pcall(network.build, net)
  if ok then return res end
  if type(res) == "table" then return nil, res end
  error(res, 0)
end

return network
