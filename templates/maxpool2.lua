-- maxpool2.lua — a standalone 2x2 max-pool, stride 2, floor (used when a conv's
-- epilogue is not fused). One thread per pooled output.

local engine = import("lib/engine")
local common = import("lib/common")

local T = {}
T.doc = "2x2 max pool, stride 2"
T.params = { common.block_param(256) }
function T.check(_, _) return nil end

local source = engine.compile([[
{{head}}
{
    (void)w;
    (void)b;
    // in: n x {{C}} x {{H}} x {{W}}, out: n x {{C}} x {{OH}} x {{OW}}
    const int i = blockIdx.x * {{block}} + threadIdx.x;
    if (i >= n * {{C * OH * OW}}) return;
    const int plane = i / {{OH * OW}};          // image * {{C}} + channel
    const int r = i - plane * {{OH * OW}};
    const int oh = r / {{OW}}, ow = r - oh * {{OW}};
    const float* p = in + plane * {{H * W}} + oh * {{2 * W}} + ow * 2;
    out[i] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[{{W}}], p[{{W + 1}}]));
}
]], "maxpool2")

-- l: { C, H, W } of the tensor being pooled
function T.kernel(l, p)
  local OH, OW = l.H // 2, l.W // 2
  local name = string.format("maxpool2_c%dh%dw%d_b%d", l.C, l.H, l.W, p.block)
  local head, args = common.kernel_head(name, p.block, common.std_args({}))
  return {
    name = name,
    args = args,
    source = source({ name = name, head = head, block = p.block,
                      C = l.C, H = l.H, W = l.W, OH = OH, OW = OW }),
    grid = { common.batch_dim(l.C * OH * OW, p.block), 1, 1 },
    block = { p.block, 1, 1 }, shared = 0, weights = "none", bias = "none",
    out_elems = l.C * OH * OW,
    shape = string.format("%dx%dx%d -> %dx%dx%d", l.C, l.H, l.W, l.C, OH, OW),
  }
end
return T
