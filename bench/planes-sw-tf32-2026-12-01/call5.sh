#!/usr/bin/env bash
# Call 5: the sweep's bound on map tiles (SW_MIN_BM) in: zoo-inception (whose 32 -> 8 5x5 layer it
# moves back to planes' tiles) checked and timed beside CUR; then torch.compile max-autotune in BF16
# on two zoo networks never timed against it (each bounded by 200 s).
#   bash bench/planes-sw-tf32-2026-12-01/call5.sh NEW CUR
set -u
. bench/scripts/cell_spec.sh
new=$1 cur=$2
export XDG_CACHE_HOME=$(mktemp -d)
for pr in bf16 fp16; do
  c=$(auto_copy bench/specs/zoo-inception.yaml $pr)
  for b in 7 64 1100; do spec_check "$new" "$c" $b; done
  rm -f "$c"
done
CELLS=bf16:zoo-inception:br5 NETS=bf16:zoo-inception SKIP_CHECKS=1 VARIANTS="|" \
  bash bench/scripts/planes_sw_tf32_device.sh "$new" "$cur"
for n in zoo-k7pad zoo-residual; do
  timeout 200 python3 bench/latency.py bench/specs/$n.yaml --precision bf16 --auto --batches 10000 --repeat 10 \
    --convgen "$new" --compile-modes max-autotune --compile-batches 10000 || echo "$n: max-autotune did not finish in 200 s"
done
