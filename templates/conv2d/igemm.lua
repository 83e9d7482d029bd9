-- conv2d_igemm.lua — convolution as an implicit matrix product (`strategy: igemm`),
-- every layer constant a literal: a block computes a maps x pixels tile, each
-- thread a tm x tn register tile of FFMA outer products, reduced over C*K*K in
-- slices staged in shared memory. The code is lib/igemm.lua, shared with
-- conv2d_igemm_tc (the same tiling with the products on tensor cores).

return import("lib/igemm").template(false)
