set -u
. bench/scripts/cell_spec.sh
cg=.dev/sw/convgen
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
t=tests/gpu/layers-planes-sw-bf16-wg.yaml
spec_check $cg $t 7; spec_check $cg $t 300; spec_sanitize $cg $t 7
SKIP_CHECKS=1 VARIANTS="| planes|tr=0,wr=1,sw=1,wgs=1 planes|tr=0,wr=1,sw=1,wgs=2" bash bench/scripts/planes_wr_device.sh $cg ece408-2018fa:conv2 ece408-2018sp:conv2 zoo-residual:b1c1 zoo-inception:br3 zoo-linear:conv2 zoo-k7pad:conv4
