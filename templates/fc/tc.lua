-- fc_tc.lua — a fully connected layer on tensor cores in FP32 accuracy
-- (`strategy: tc`, sm_80 or newer): the layer as the 1x1 convolution of a 1x1
-- image it is (common.fc.conv_table), run by conv2d_igemm_tc's code
-- (lib/igemm.lua: 3xTF32, three mma.sync.m16n8k8 a tile; one under precision
-- tf32; one m16n8k16 for 16-bit tensors). The images are the GEMM's columns and
-- the outputs its maps: a block computes bm outputs x bn images, warps of tm
-- outputs x 8*tn images, reduced over the inputs in slices of bk. The SIMT
-- templates (tiled, vec, gemv) do the products as FFMA; on an H200 zoo-mlp's
-- 2048 x 2048 layer under vec/gemv left it behind PyTorch's FP32 at 64 to 1,000
-- images, hence this one. `split` (parts of the reduction, then splitk_reduce)
-- as conv2d_igemm_tc's; the planner splits where the network is generated for a
-- known batch whose tiles leave SMs idle (planner.fc_split). Not yet timed on a GPU.

local common = import("lib/common")

return common.fc.from_conv(import("lib/igemm").template(true), "tc", "conv2d_igemm_tc", "tc",
  "the fc as a 1x1 convolution on tensor cores (conv2d_igemm_tc: 3xTF32, FP32 accuracy); sm_80+")
