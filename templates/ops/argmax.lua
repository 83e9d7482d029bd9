-- argmax.lua — the predicted class of each image: index of the first maximum.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "index of the first maximum, one thread per image"
-- The scan is unrolled whole up to 64 scores, by 8 past that: a network ending in a
-- conv of 10 maps on 17x17 (2,890 scores) unrolled whole took nvcc 7.8 s for sm_90a.
T.params = { common.block_param(128) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
    const int img = blockIdx.x * {{block}} + threadIdx.x;
    if (img >= n) return;
    const {{in_t}}* x = in + img * {{E}};
    {{acc_t}} best = {{to_acc("x[0]")}};
    int arg = 0;
#pragma unroll{{E <= 64 and "" or " 8"}}
    for (int i = 1; i < {{E}}; i++) {
        const {{acc_t}} v = {{to_acc("x[i]")}};
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
  -- the scores as the tensor it reads holds them (FP32 where a 16-bit network writes
  -- its output; l.in_dtype), the class index an i32
  local ty = { dtype = l.dtype, in_dtype = l.in_dtype, out_dtype = "i32" }
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(ty) }))
  return {
    name = name,
    args = args,
    source = source(common.typed(ty, { name = name, head = head, block = p.block, E = l.elems })),
    grid = { common.batch_dim(1, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = 1,
    shape = string.format("%d scores -> class index", l.elems),
  }
end
return T
