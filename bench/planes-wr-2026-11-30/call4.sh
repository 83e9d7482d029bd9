set -u
. bench/scripts/cell_spec.sh
VARIANTS="| planes|tr=0,wr=1,rows=27,wgs=4 planes|tr=0,wr=1,rows=27,wgs=4,occ=2 planes|tr=0,wr=1,rows=14,wgs=4" bash bench/scripts/planes_wr_device.sh .dev/new/convgen ece408-2018fa:conv2 zoo-k7pad:conv4
for s in specs/ece408-2018fa.yaml bench/specs/zoo-inception.yaml bench/specs/zoo-k7pad.yaml bench/specs/zoo-linear.yaml bench/specs/zoo-residual.yaml; do
  c=$(auto_copy $s bf16); spec_check .dev/new/convgen $c 7; spec_check .dev/new/convgen $c 64; rm -f $c
done
bash bench/scripts/bf16_auto_device.sh .dev/new/convgen .dev/cur/convgen specs/ece408-2018fa.yaml bench/specs/zoo-inception.yaml bench/specs/zoo-k7pad.yaml bench/specs/zoo-linear.yaml bench/specs/zoo-residual.yaml
