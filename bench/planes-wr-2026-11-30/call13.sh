set -u
. bench/scripts/cell_spec.sh
cg=.dev/new2/convgen
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for n in zoo-deep512 zoo-inception zoo-k7pad zoo-linear; do c=$(auto_copy bench/specs/$n.yaml bf16); spec_check $cg $c 7; spec_check $cg $c 64; rm -f $c; done
c=$(auto_copy bench/specs/zoo-linear.yaml fp16); spec_check $cg $c 64; spec_check $cg $c 300; rm -f $c
SKIP_CHECKS=1 VARIANTS="| igemm|" bash bench/scripts/planes_wr_device.sh $cg zoo-deep512:conv4 zoo-linear:conv3
bash bench/scripts/bf16_auto_device.sh $cg .dev/cur/convgen bench/specs/zoo-deep512.yaml bench/specs/zoo-inception.yaml bench/specs/zoo-k7pad.yaml bench/specs/zoo-linear.yaml
