#!/usr/bin/env bash
# Call 6: conv2d_pointwise with a 2x2 pool fused (tiles of whole row pairs; fp=1) and auto's rule
# taking such layers. layers-pointwise-bf16 (now with a fused max and average pool) and its fp16 copy
# checked and sanitized, zoo-1x1's pooled 256 -> 128 layer timed against the binary before it with a
# few variants (bench/scripts/pointwise_device.sh), then zoo-1x1 in bf16 at 10,000 images, new and
# before, checked at 7 and 1,000 images first (half_nets_device.sh).
#   OUT=DIR bash bench/pointwise-2026-12-01/call6.sh NEW CUR
set -u
new=$1 cur=$2
out=${OUT:-.}
ONES="zoo-1x1|reduce" VARIANTS="bp=128 wr=1 tpb=4 fp=0" bash bench/scripts/pointwise_device.sh "$new" "$cur"
CHECKS="zoo-1x1" OUT=$out bash bench/scripts/half_nets_device.sh "$new" "$cur" zoo-1x1
