-- lib/user.lua: a template that imports another and uses load() in the sandbox.
local counter = import("counter")
local m = {}
function m.sum(n)
  local f = assert(load("local n = ... ; local s = 0; for i = 1, n do s = s + i end; return s", "=sum"))
  return f(n)
end
function m.with_global()
  SANDBOX_VALUE = 5
  return load("return SANDBOX_VALUE * counter_value", "=g", "t", {SANDBOX_VALUE = 7, counter_value = counter.value})()
end
function m.uses_global()
  SANDBOX_VALUE = 5
  return load("return SANDBOX_VALUE + 1")()
end
function m.spin(n) local x = 0; for i = 1, n do x = x + i end; return x end
function m.fail() error("deliberate failure") end
function m.break_rep() getmetatable("").__index.rep = nil end
function m.rep() return ("ab"):rep(3) end
function m.xp()
  return xpcall(error, function(msg) return "handled: " .. msg end, "boom", 0)
end
return m
