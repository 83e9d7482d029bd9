#!/usr/bin/env bash
# Call 2: the networks the tf32 sweep and the sweep's one-buffer form move, checked and timed.
#   bash bench/planes-sw-tf32-2026-12-01/call2.sh NEW CUR DATA
set -u
. bench/scripts/cell_spec.sh
new=$1 cur=$2 data=$3
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
# every network whose kernels changed, at 7, 64 and 1,100 images (1,100: the large batch's kernels)
for cell in tf32:ece408-2018fa tf32:ece408-2018sp tf32:zoo-k7pad bf16:zoo-k7pad fp16:zoo-k7pad bf16:ece408-2018fa; do
  c=$(auto_copy "$(cell_spec "${cell#*:}")" "${cell%%:*}")
  for b in 7 64 1100; do spec_check "$new" "$c" $b; done
  [ "$cell" = bf16:zoo-k7pad ] && spec_sanitize "$new" "$c" 7   # conv4 swept with one fragment buffer
  rm -f "$c"
done
# zoo-k7pad's conv4 under tf32: the sweep (4 of 7 images a warpgroup: shared memory) against the tiles
CELLS=tf32:zoo-k7pad:conv4 NETS=" " SKIP_CHECKS=1 bash bench/scripts/planes_sw_tf32_device.sh "$new" "$cur"
python3 bench/latency.py specs/ece408-2018fa.yaml specs/ece408-2018sp.yaml bench/specs/zoo-k7pad.yaml --precision tf32 \
  --auto --batches 10000 --repeat 10 --convgen "$new" --baseline "$cur"
# the course networks' accuracy over the 10,000 test images in fp32, tf32, bf16 and fp16 (auto's choices)
AUTO=1 SKIP_CHECKS=1 PRECISIONS="tf32 bf16 fp16" bash bench/scripts/half_device.sh "$new" "$data"
