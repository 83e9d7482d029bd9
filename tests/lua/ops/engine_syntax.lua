-- A syntax error inside a template expression: reported at its line in this file.
local engine = import("lib/engine")
return function()
  return engine.compile([[
line one
line two {{ 1 + }}
]], "engine_syntax")
end
