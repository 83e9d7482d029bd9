-- engine.lua — the template engine: CUDA text with Lua embedded in it.
--
-- A template is text, read line by line:
--   * a line whose first non-blank character is '%' is a Lua statement
--     (% for m = 0, M - 1 do ... % end); the '%' and what precedes it are dropped;
--   * on every other line, {{ expr }} is replaced by the value of expr (integers
--     print without a decimal point, floats with enough digits to round-trip);
--     the rest of the line is copied as it is.
-- compile() turns the text into one Lua chunk whose line N is the template's
-- line N, so an error inside a template names templates/NAME.lua and the line
-- of the file where the faulty expression was written.

local engine = {}

-- format a value the way C wants to read it
local function render(v)
  local t = type(v)
  if t == "number" then
    if math.type(v) == "integer" then return string.format("%d", v) end
    if v == math.floor(v) and math.abs(v) < 2^53 then return string.format("%.1f", v) end
    return string.format("%.9g", v)
  elseif t == "string" then
    return v
  elseif t == "boolean" then
    return v and "true" or "false"
  end
  error("template expression gave a " .. t .. ", expected a number or a string", 3)
end

-- A Lua string literal for s on one source line (%q would break lines at
-- newlines, shifting every later line number of the chunk).
local function quote(s)
  return (string.format("%q", s):gsub("\\\n", "\\n"))
end

-- one template line (not a statement) as a Lua expression appending to _o
local function emit_line(line)
  local parts, pos = {}, 1
  while true do
    local s, e = line:find("{{", pos, true)
    if not s then break end
    local close = line:find("}}", e + 1, true)
    if not close then error("unclosed '{{' in template line: " .. line, 0) end
    if s > pos then parts[#parts + 1] = quote(line:sub(pos, s - 1)) end
    parts[#parts + 1] = "_r(" .. line:sub(e + 1, close - 1) .. ")"
    pos = close + 2
  end
  parts[#parts + 1] = quote(line:sub(pos) .. "\n")
  return "_o[#_o+1]=" .. table.concat(parts, "..")
end

-- Compile `text` (found in templates/NAME.lua) to a function(values) -> string.
-- `name` is the template name ("conv2d_direct"); the line where `text` starts
-- inside the file is looked up so that errors point into the file.
function engine.compile(text, name)
  local src, chunkname = template_text(name)
  local first = 1
  local at = src and src:find(text, 1, true)
  if at then
    local _, nl = src:sub(1, at - 1):gsub("\n", "")
    first = nl + 1
  end
  -- the text's first line is line `first` of the file; the preamble takes the
  -- line before it (the one holding the opening bracket)
  local code = { string.rep("\n", math.max(first - 2, 0)) ..
                 "local _o, _r, _ENV = {}, ...; return function()" }
  for line in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do
    local stmt = line:match("^%s*%%(.*)$")
    if stmt then
      code[#code + 1] = stmt
    else
      code[#code + 1] = emit_line(line)
    end
  end
  code[#code + 1] = "return table.concat(_o) end"
  -- statements and emitted lines are one per line, so line numbers match
  local chunk = table.concat(code, "\n")
  local f, err = load(chunk, chunkname or ("@templates/" .. name .. ".lua"))
  if not f then error(err, 0) end
  return function(values)
    local env = setmetatable({}, { __index = function(_, k)
      local v = values[k]
      if v == nil then v = _G[k] end
      if v == nil then error("template uses undefined name '" .. tostring(k) .. "'", 2) end
      return v
    end })
    return f(render, env)()
  end
end

return engine
