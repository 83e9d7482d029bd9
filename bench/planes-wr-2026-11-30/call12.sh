set -u
cg=.dev/new/convgen
SKIP_CHECKS=1 VARIANTS="| planes|tr=0,wr=1,sw=1 planes|tr=0,wr=1 igemm_wg|" bash bench/scripts/planes_wr_device.sh $cg zoo-inception:br5
SKIP_CHECKS=1 VARIANTS="| planes|tr=0,bm=16 igemm_wg|bm=16" bash bench/scripts/planes_wr_device.sh $cg zoo-k7pad:conv2
SKIP_CHECKS=1 VARIANTS="| mma| wg|" bash bench/scripts/planes_wr_device.sh $cg zoo-linear:fc1
