-- The engine's output: statements drive loops, {{ }} inserts values.
local engine = import("lib/engine")
local f = engine.compile([[
% for i = 0, n - 1 do
a[{{i}}] = {{ 2 * i }}; // {{ label }}
% end
x = {{ 0.5 }};
]], "engine_ok")
return function() return f({ n = 3, label = "row" }) end
