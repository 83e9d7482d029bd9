-- argmax.lua — the predicted class of each image: index of the first maximum.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "index of the first maximum, one thread per image"
T.params = { common.block_param(128) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
    const int img = blockIdx.x * {{block}} + threadIdx.x;
    if (img >= n) return;
    const float* x = in + img * {{E}};
    float best = x[0];
    int arg = 0;
#pragma unroll
    for (int i = 1; i < {{E}}; i++) {
        const float v = x[i];
        if (v > best) {
            best = v;
            arg = i;
        }
    }
    out[img] = arg;
}
]], "argmax")

-- l: { elems = scores per image }
function T.kernel(l, p)
  local name = string.format("argmax_e%d_b%d", l.elems, p.block)
  local head, args = common.kernel_head(name, p.block, common.std_args({out_type = "int"}))
  return {
    name = name,
    args = args,
    source = source({ name = name, head = head, block = p.block, E = l.elems }),
    grid = { common.batch_dim(1, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = 1,
    shape = string.format("%d scores -> class index", l.elems),
  }
end
return T
