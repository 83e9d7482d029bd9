-- bad_syntax.lua: a syntax error on line 2.
local x = = 1
