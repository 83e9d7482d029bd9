-- returns_nothing.lua: a template with no return value imports as true.
local _ = 1
