-- escapes.lua: each function tries one way out of the sandbox (test_sandbox.c).
local t = {}
t.os_execute = function() return os.execute("true") end
t.io_open = function() return io.open("/etc/passwd") end
t.require = function() return require("os") end
t.dofile = function() return dofile("/etc/passwd") end
t.loadfile = function() return loadfile("/etc/passwd") end
t.package = function() return package.loaded end
t.debug = function() return debug.getinfo(1) end
t.load_binary = function() return load("\27Lua\84\0\25\147\13\10\26\10") end
t.load_mode_b = function() return load("return 1", "=x", "b") end
t.load_function = function() return load(function() return nil end) end
t.string_dump = function() return string.dump(function() end) end
t.rep_bomb = function() return string.rep("x", 1 << 30) end
t.concat_bomb = function() local s = "x"; while true do s = s .. s end end
t.table_bomb = function() local a = {}; for i = 1, math.maxinteger do a[i] = i end end
t.endless = function() while true do end end
t.endless_pcall = function() while true do pcall(function() while true do end end) end end
t.gc_loop = function() setmetatable({}, {__gc = function() while true do end end}) end
t.recursion = function() local function f(n) return f(n + 1) + 1 end; return f(1) end
t.import_dotdot = function() return import("../x") end
t.import_missing = function() return import("no_such_template") end
t.error_table = function() error({}) end
t.print = function() print("hello") end
t.collectgarbage = function() return collectgarbage("count") end
t.xpcall_loop = function() xpcall(error, function() while true do end end); return 1 end
t.coroutine = function() return coroutine.wrap(function() end) end
t.rep_empty = function() return #string.rep("", 1 << 62) + #("").rep("", 1 << 62, "") end
t.rep_huge = function() return string.rep("x", 1 << 40) end
t.move_huge = function() return table.move({}, 1, 1 << 50, 2) end
t.concat_huge = function() return table.concat(setmetatable({}, {__index = rawlen}), "", 1, 1 << 50) end
t.remove_huge = function() return table.remove(setmetatable({}, {__len = function() return 1 << 50 end}), 1) end
t.insert_huge = function() table.insert(setmetatable({}, {__len = function() return 1 << 50 end}), 1, "x") end
t.find_backtrack = function() return string.find(("a"):rep(30), ("a.-"):rep(30) .. "b") end
t.match_backtrack = function() return ("a"):rep(30):match(("a.-"):rep(30) .. "b") end
t.gmatch_backtrack = function() for _ in ("a"):rep(30):gmatch(("a.-"):rep(30) .. "b") do end end
t.gsub_backtrack = function() return ("a"):rep(30):gsub(("a.-"):rep(30) .. "b", "") end
t.plain_find_huge = function() return ("a"):rep(1 << 24):find(("a"):rep(1 << 23) .. "b", 1, true) end
t.caught_limit = function() pcall(table.move, {}, 1, 1 << 50, 2); while true do end end
t.string_meta = function() getmetatable("").__index.rep = nil end
t.string_set = function() string.rep = nil end
t.string_rawset = function() rawset(string, "rep", nil) end
t.string_setmeta = function() setmetatable(string, {}) end
t.sort_huge = function() table.sort(setmetatable({}, {__len = function() return (1 << 31) - 2 end, __index = rawlen})) end
t.slow_c_calls = function() local s = ("x"):rep(1 << 22); for _ = 1, 1 << 40 do s:upper() end end
t.table_set = function() table.concat = nil end
t.move_float = function() return table.move({}, 1, 2^50, 2) end
t.concat_string = function() return table.concat(setmetatable({}, {__index = rawlen}), "", 1, "1e15") end
t.gsub_repl = function() return ("y"):rep(1 << 18):gsub("(x?)", ("%1"):rep(1 << 18)) end
return t
