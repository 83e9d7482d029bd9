-- counter.lua: counts how many times it has been run (import must run it once).
LOADS = (LOADS or 0) + 1
return {value = 42, loads = function() return LOADS end}
