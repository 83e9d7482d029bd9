-- softmax.lua — softmax over each image's features; one thread per image, the
-- feature loop unrolled (networks end in a handful of classes).

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "numerically stable softmax, one thread per image"
T.params = { common.block_param(128) }
function T.check(l, _)
  if l.elems > 1024 then return "softmax over " .. l.elems .. " features is too wide for one thread", nil end
  return nil
end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
    const int img = blockIdx.x * {{block}} + threadIdx.x;
    if (img >= n) return;
    const {{in_t}}* x = in + img * {{E}};
    {{out_t}}* y = out + img * {{E}};
    {{acc_t}} v[{{E}}];
    {{acc_t}} m = {{to_acc("x[0]")}};
#pragma unroll
    for (int i = 0; i < {{E}}; i++) {
        v[i] = {{to_acc("x[i]")}};
        m = fmaxf(m, v[i]);
    }
    {{acc_t}} s = 0.0f;
#pragma unroll
    for (int i = 0; i < {{E}}; i++) {
        v[i] = expf(v[i] - m);
        s += v[i];
    }
    const {{acc_t}} inv = 1.0f / s;
#pragma unroll
    for (int i = 0; i < {{E}}; i++) y[i] = {{from_acc("v[i] * inv")}};
}
]], "softmax")

-- l: { elems = features per image }
function T.kernel(l, p)
  local name = string.format("softmax_e%d_b%d", l.elems, p.block)
  local head, args = common.kernel_head(name, p.block, common.std_args({ types = common.types(l) }))
  return {
    name = name,
    args = args,
    source = source(common.typed(l, { name = name, head = head, block = p.block, E = l.elems })),
    grid = { common.batch_dim(1, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d features", l.elems),
  }
end
return T
