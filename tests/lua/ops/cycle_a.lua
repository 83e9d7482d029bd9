-- cycle_a.lua: imports cycle_b, which imports this file again (an error).
local b = import("cycle_b")
return {b = b}
