set -u
. bench/scripts/cell_spec.sh
cg=.dev/new/convgen
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
t=tests/gpu/layers-planes-wr-bf16-wg.yaml
spec_check $cg $t 7; spec_check $cg $t 300; spec_sanitize $cg $t 7
for t in tests/gpu/layers-first-bf16-wg.yaml tests/gpu/layers-planes-bf16-wg.yaml tests/gpu/layers-planes-fp16-wg.yaml tests/gpu/layers-concat-bf16-wg.yaml tests/gpu/layers-small-c-bf16-wg.yaml; do
  spec_check $cg $t 7; spec_check $cg $t 300
done
for s in bench/specs/zoo-k7pad.yaml bench/specs/zoo-residual.yaml; do c=$(auto_copy $s fp16); spec_check $cg $c 64; rm -f $c; done
SKIP_CHECKS=1 VARIANTS="| igemm_wg|" bash bench/scripts/planes_wr_device.sh $cg zoo-k7pad:conv4 zoo-residual:b1c2 zoo-residual:b1c1
bash bench/scripts/bf16_auto_device.sh $cg .dev/cur/convgen specs/ece408-2018fa.yaml bench/specs/zoo-inception.yaml bench/specs/zoo-k7pad.yaml bench/specs/zoo-linear.yaml bench/specs/zoo-residual.yaml
