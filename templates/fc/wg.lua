-- fc_wg.lua — a fully connected layer on Hopper's warpgroup tensor cores (`strategy:
-- wg`; sm_90, built as sm_90a): the layer as the 1x1 convolution of a 1x1 image it is
-- (common.fc.conv_table), run by conv2d_igemm_wg's code — for bf16 and fp16 layers one
-- wgmma m64nNk16 product of the 16-bit operands as stored, FP32 accumulation; for FP32
-- layers 3xTF32 (FP32 accuracy). The images are wgmma's 64-row M side (bn a block, in
-- m64 tiles of one or two warpgroups), the outputs its N (bm, a multiple of 8 up to
-- 256), reduced over the inputs in slices of bk. Where the input size is a multiple of
-- 8 (16-bit) or 4 (FP32), a thread's unit of 8 or 4 rows of one image is one 16-byte
-- load. Without a tensor-core path for 16-bit layers of its own, an fc of a bf16
-- network otherwise runs as vec or gemv: 16-bit loads converted to FP32 and FFMA.
-- auto takes it for 16-bit fc layers at the large batch (planner.AUTO_FC_WG_MIN_BATCH:
-- 2-3.5x fc_vec's time on seven layers, an H200 in bf16).

local common = import("lib/common")

return common.fc.from_conv(import("conv2d_igemm_wg"), "wg", "conv2d_igemm_wg", "wg",
  "the fc as a 1x1 convolution on warpgroup tensor cores (conv2d_igemm_wg: one BF16/FP16 wgmma for 16-bit "
    .. "tensors, 3xTF32 for FP32); sm_90 (as sm_90a)")
