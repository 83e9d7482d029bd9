#!/usr/bin/env bash
# The final call: the networks the 16-bit memory paths moved, in bf16 at 10,000 images under the new
# binary and the one before (bench/scripts/half_nets_device.sh, checks first), then torch.compile
# max-autotune in BF16 beside convgen on the three closest to issue 31's 1.3x (bench/latency.py,
# bounded by 110 s each), then the course networks' accuracy in bf16 and fp16 (half_device.sh).
#   OUT=DIR bash bench/half-memory-2026-12-01/final.sh NEW CUR DATA
set -u
new=$1 cur=$2 data=$3
out=${OUT:-.}
CHECKS="zoo-squeeze zoo-residual zoo-vgg-same zoo-5x5-c64" OUT=$out bash bench/scripts/half_nets_device.sh "$new" "$cur" \
  zoo-1x1 zoo-5x5-c64 zoo-7x7-large zoo-awkward zoo-deep512 zoo-edge zoo-inception zoo-k7pad zoo-linear zoo-mobile \
  zoo-residual zoo-squeeze zoo-vgg-same zoo-vgg3x3 zoo-wide3x3 zoo-issue3x3 ece408-2017 ece408-2018sp ece408-2018fa fashion-resnet
for n in ${NETS:-zoo-squeeze zoo-vgg3x3 zoo-residual}; do
  timeout 110 python3 bench/latency.py bench/specs/$n.yaml --precision bf16 --auto --batches 10000 --repeat 10 \
    --convgen "$new" --compile-modes max-autotune --compile-batches 10000 2>&1 | grep -E "^\| zoo|batch 10000:|^\| network" \
    || echo "$n: max-autotune did not finish in 110 s"
done
AUTO=1 SKIP_CHECKS=1 PRECISIONS="bf16 fp16" timeout 150 bash bench/scripts/half_device.sh "$new" "$data" 2>&1 | grep -iE "accuracy|ece408" | head -20
