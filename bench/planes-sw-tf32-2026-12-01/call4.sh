#!/usr/bin/env bash
# Call 4: the final binary (the sweep's last rows unrolled apart, no group past the padded height):
# layer specs and every network it moves checked, layers and networks timed beside CUR, accuracy.
#   bash bench/planes-sw-tf32-2026-12-01/call4.sh NEW CUR DATA
set -u
. bench/scripts/cell_spec.sh
new=$1 cur=$2 data=$3
export XDG_CACHE_HOME=$(mktemp -d)
p=bench/planes-wr-2026-11-30/specs/sw-probe.yaml
spec_check "$new" $p 7
spec_check "$new" $p 300
for cell in tf32:ece408-2018fa tf32:ece408-2018sp bf16:ece408-2018fa bf16:ece408-2018sp fp16:ece408-2018fa \
    bf16:zoo-k7pad bf16:zoo-inception; do
  c=$(auto_copy "$(cell_spec "${cell#*:}")" "${cell%%:*}")
  for b in 7 64 1100; do spec_check "$new" "$c" $b; done
  rm -f "$c"
done
bash bench/scripts/planes_sw_tf32_device.sh "$new" "$cur"
AUTO=1 SKIP_CHECKS=1 PRECISIONS="tf32 bf16 fp16" bash bench/scripts/half_device.sh "$new" "$data"
