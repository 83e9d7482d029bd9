set -u
. bench/scripts/cell_spec.sh
cg=.dev/new/convgen
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for t in tests/gpu/layers-small-c-bf16-wg.yaml tests/gpu/layers-planes-bf16-wg.yaml tests/gpu/layers-planes-fp16-wg.yaml; do spec_check $cg $t 7; spec_check $cg $t 300; done
spec_sanitize $cg tests/gpu/layers-small-c-bf16-wg.yaml 7
for s in specs/ece408-2018fa.yaml specs/ece408-2018sp.yaml; do for pr in bf16 fp16; do c=$(auto_copy $s $pr); spec_check $cg $c 7; spec_check $cg $c 64; rm -f $c; done; done
SKIP_CHECKS=1 VARIANTS="|" bash bench/scripts/planes_wr_device.sh $cg ece408-2018fa:conv2 ece408-2018sp:conv2
bash bench/scripts/bf16_auto_device.sh $cg .dev/cur/convgen specs/ece408-2018fa.yaml specs/ece408-2018sp.yaml specs/ece408-2017.yaml
