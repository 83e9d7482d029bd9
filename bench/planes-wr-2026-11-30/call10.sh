set -u
. bench/scripts/cell_spec.sh
cg=.dev/new/convgen
export XDG_CACHE_HOME=$(mktemp -d)
sp=bench/planes-wr-2026-11-30/specs/sw-probe.yaml
spec_check $cg $sp 7; spec_check $cg $sp 300
SKIP_CHECKS=1 VARIANTS="| planes|tr=0,wr=1,sw=0 igemm_wg|" bash bench/scripts/planes_wr_device.sh $cg $sp:b $sp:c $sp:d $sp:f
