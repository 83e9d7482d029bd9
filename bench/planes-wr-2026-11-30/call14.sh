set -u
. bench/scripts/cell_spec.sh
cg=.dev/new/convgen
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for t in tests/gpu/layers-small-c-bf16-wg.yaml tests/gpu/layers-planes-wr-bf16-wg.yaml tests/gpu/layers-planes-sw-bf16-wg.yaml; do spec_check $cg $t 7; spec_check $cg $t 300; done
spec_sanitize $cg tests/gpu/layers-small-c-bf16-wg.yaml 7
bash bench/scripts/bf16_auto_device.sh $cg .dev/cur/convgen specs/ece408-2018fa.yaml specs/ece408-2018sp.yaml bench/specs/zoo-inception.yaml bench/specs/zoo-k7pad.yaml bench/specs/zoo-linear.yaml bench/specs/zoo-residual.yaml bench/specs/zoo-deep512.yaml
