-- The template engine must name this file and the line of the faulty expression.
local engine = import("lib/engine")
local f = engine.compile([[
ok line {{ 1 + 1 }}
% for i = 1, 2 do
value {{ missing_name }}
% end
]], "engine_bad")
return function() return f({}) end
