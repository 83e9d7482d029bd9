-- patterns.lua: ordinary pattern use that the sandbox's pattern bound must let through
-- (test_sandbox.c test_bounds), with results checked against what Lua returns.
local t = {}
function t.run()
  local lines = {}
  for i = 1, 4000 do lines[i] = ("  int x%d = %d;   "):format(i, i * 7) end
  local text = table.concat(lines, "\n") .. "\n"           -- ~100 KB
  local n = 0
  for line in text:gmatch("(.-)\n") do n = n + #line:match("^%s*(.-)%s*$") end
  local trimmed = select(2, text:gsub("%s+\n", "\n"))
  local words = select(2, text:gsub("%f[%w]%w+", ""))
  local s, e = ("f(a(b)c)d"):find("%b()")
  local dup = ("xyzabcabc"):match("(%a%a%a)%1")
  local last = text:match(".*x(%d+)")
  local plain = text:find("x4000 =", 1, true)
  return table.concat({n, trimmed, words, s, e, dup, last, plain}, ",")
end
return t
