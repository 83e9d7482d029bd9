-- conv2d_igemm_tc.lua — conv2d_igemm's implicit matrix product with the products
-- on tensor cores (`strategy: igemm_tc`, sm_80 or newer): each operand split into
-- its TF32 value and TF32 remainder, three mma.sync.m16n8k8 a tile, so the result
-- keeps FP32 accuracy; a warp owns tm maps (a multiple of 8) x 8*tn pixels. The
-- code is lib/igemm.lua (its header says what differs from conv2d_igemm).

return import("lib/igemm").template(true)
