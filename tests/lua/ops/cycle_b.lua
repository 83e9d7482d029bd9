-- cycle_b.lua: the other half of the cycle started by cycle_a.lua.
local a = import("cycle_a")
return {a = a}
