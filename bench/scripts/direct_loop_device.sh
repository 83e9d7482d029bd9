#!/usr/bin/env bash
# direct_loop_device.sh — on a GPU machine: conv2d_direct's channel loop (cl=1) against what
# `auto` runs for a deep layer at one image, the case that would take it: ece408-2018fa's conv2
# (C 12, 7x7, 588 products a map: past direct's unrolled budget), which auto gives igemm in
# 32-pixel tiles split 7 ways and a splitk_reduce kernel.
#
#   bash bench/scripts/direct_loop_device.sh CONVGEN [SPEC LAYER]
#
# 1. The network's kernels at one image under Nsight Compute (`ncu --cache-control none
#    --clock-control none --metrics gpu__time_duration.sum`, `run --whole off --no-pdl`,
#    five calls): the split conv and its reduce, for the sum the loop must beat.
# 2. The layer alone under the loop (`convgen kernel SPEC --layer LAYER --strategy direct
#    --params cl=1,maps_unroll=M --batch 1`: checked against the CPU reference, then timed
#    with L2 flushed; ms, the map splits, at their one-image default for each M).
set -u
CG=$1 SPEC=${2:-specs/ece408-2018fa.yaml} LAYER=${3:-conv2}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
echo "== $SPEC at one image, per kernel (ncu, µs)"
timeout 120 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum \
  "$CG" run "$SPEC" --random-input 1 --images 1 --batch 1 --repeat 5 --whole off --no-pdl 2>&1 |
  awk '/^  [a-z]/ {k=$1} /gpu__time_duration.sum/ {print k, $NF}' | head -40
for m in 1 2 3 4 6 8; do
  echo "== $LAYER: direct, cl=1, maps_unroll=$m"
  timeout 60 "$CG" kernel "$SPEC" --layer "$LAYER" --strategy direct --params "cl=1,maps_unroll=$m" --batch 1 \
    --repeat 50 2>&1 | grep -E "kernel|median|refused|error|FAIL" | head -4
done
