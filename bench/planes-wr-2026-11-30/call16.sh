set -u
. bench/scripts/cell_spec.sh
cg=.dev/new/convgen
export XDG_CACHE_HOME=$(mktemp -d)
c=$(auto_copy bench/specs/zoo-linear.yaml bf16); spec_check $cg $c 7; spec_check $cg $c 64; rm -f $c
bash bench/scripts/bf16_auto_device.sh $cg .dev/cur/convgen bench/specs/zoo-linear.yaml
