#!/usr/bin/env bash
# Call 3: conv2d_pointwise with auto's rule. layers-pointwise-bf16 and its fp16 copy checked and
# sanitized (bench/scripts/pointwise_device.sh, no layers timed); the networks auto now gives
# pointwise layers, in bf16 at 10,000 images under the new binary and the one before
# (bench/scripts/half_nets_device.sh: checked at 7 and 1,000 images, per-kernel times); then
# torch.compile max-autotune in BF16 beside convgen on zoo-1x1 (bench/latency.py, bounded by 110 s).
#   OUT=DIR bash bench/pointwise-2026-12-01/call3.sh NEW CUR
set -u
new=$1 cur=$2
out=${OUT:-.}
ONES=" " bash bench/scripts/pointwise_device.sh "$new" "$cur"
nets="zoo-1x1 zoo-mobile zoo-stem96 zoo-linear zoo-inception"
# shellcheck disable=SC2086  # the list is words
CHECKS="$nets" OUT=$out bash bench/scripts/half_nets_device.sh "$new" "$cur" $nets
for n in ${NETS:-zoo-1x1}; do
  timeout 110 python3 bench/latency.py bench/specs/$n.yaml --precision bf16 --auto --batches 10000 --repeat 10 \
    --convgen "$new" --compile-modes max-autotune --compile-batches 10000 2>&1 | grep -E "^\| zoo|batch 10000:|^\| network" \
    || echo "$n: max-autotune did not finish in 110 s"
done
