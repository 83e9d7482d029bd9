#!/usr/bin/env bash
# Call 6: torch.compile max-autotune in BF16 at 10,000 images beside convgen's bf16 (auto's choices)
# on the zoo networks never timed against it, one `bench/latency.py` each (bounded by 110 s), until
# the call's 520 s are near; autotuning's own lines filtered out.
#   bash bench/planes-sw-tf32-2026-12-01/call6.sh NEW   (NETS: the list; BUDGET: seconds before the last start, default 400)
# Call 7 ran it again: NETS="zoo-mlp zoo-vgg3x3 zoo-issue3x3 zoo-bigk zoo-awkward zoo-edge zoo-odd zoo-prime zoo-stem96 zoo-7x7-large" BUDGET=170.
set -u
new=$1
start=$(date +%s)
for n in ${NETS:-zoo-deep512 zoo-wide3x3 zoo-1x1 zoo-5x5-c64 zoo-linear zoo-inception zoo-alex zoo-mobile zoo-resnet-stem \
    zoo-squeeze zoo-vgg3x3 zoo-issue3x3 zoo-bigk zoo-awkward zoo-edge zoo-odd zoo-prime zoo-stem96 zoo-mlp zoo-7x7-large}; do
  [ $(( $(date +%s) - start )) -gt ${BUDGET:-400} ] && { echo "$n: not run (the call's time)"; continue; }
  timeout 110 python3 bench/latency.py bench/specs/$n.yaml --precision bf16 --auto --batches 10000 --repeat 10 \
    --convgen "$new" --compile-modes max-autotune --compile-batches 10000 2>&1 | grep -E "^\| zoo|batch 10000:" \
    || echo "$n: max-autotune did not finish in 110 s"
done
