-- softmax.lua — softmax over each image's features; one thread per image, the
-- feature loop unrolled (networks end in a handful of classes). Where it is the
-- network's last layer (l.predict) it writes the predictions too, as ops/argmax.lua
-- would from the values it stores (the first maximum, ties to the lowest index):
-- one kernel instead of two at the end of the network (role out1, the manifest's
-- second output).

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
% if predict then
    // the prediction: the first maximum of the values stored (ops/argmax.lua)
    {{acc_t}} best = v[0] * inv;
    int arg = 0;
#pragma unroll
    for (int i = 0; i < {{E}}; i++) {
        const {{acc_t}} q = v[i] * inv;
        y[i] = {{from_acc("q")}};
        if (q > best) {
            best = q;
            arg = i;
        }
    }
    pred[img] = arg;
% else
#pragma unroll
    for (int i = 0; i < {{E}}; i++) y[i] = {{from_acc("v[i] * inv")}};
% end
}
]], "softmax")

-- l: { elems = features per image, predict = also the predictions (out1) }
function T.kernel(l, p)
  local name = string.format("softmax_e%d%s_b%d", l.elems, l.predict and "_pred" or "", p.block)
  local ty = common.types(l)
  -- the predictions compare the values as stored: FP32 (a network's output is)
  if l.predict and (l.out_dtype or l.dtype or "f32") ~= "f32" then
    error("softmax: the predictions of a 16-bit output", 0)
  end
  local args = common.std_args({ types = ty })
  if l.predict then table.insert(args, #args, { "out1", "int", "pred" }) end
  local head, roles = common.kernel_head(name, p.block, args)
  return {
    name = name,
    args = roles,
    source = source(common.typed(l, { name = name, head = head, block = p.block, E = l.elems,
      predict = l.predict or false })),
    grid = { common.batch_dim(1, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.elems,
    shape = string.format("%d features%s", l.elems, l.predict and ", and the prediction" or ""),
  }
end
return T
