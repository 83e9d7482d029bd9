#!/usr/bin/env bash
# Call 5: conv2d_pointwise with a thread's runs in one column of the tile (one image and pixel found
# a stage, not a run), the bias loaded once a block and the epilogue's pairs stored as one word.
# layers-pointwise-bf16 and its fp16 copy checked and sanitized, the 1x1 layers auto gives it timed
# against the binary before it (bench/scripts/pointwise_device.sh), then the networks in bf16 at
# 10,000 images, new and before, checked at 7 and 1,000 images first (half_nets_device.sh).
#   OUT=DIR bash bench/pointwise-2026-12-01/call5.sh NEW CUR
set -u
new=$1 cur=$2
out=${OUT:-.}
ONES="zoo-1x1|expand zoo-mobile|pw1 zoo-mobile|pw2 zoo-mobile|pw4 zoo-stem96|squeeze zoo-linear|conv3" \
  VARIANTS="st=3 tpb=4" bash bench/scripts/pointwise_device.sh "$new" "$cur"
nets="zoo-1x1 zoo-mobile zoo-stem96 zoo-linear zoo-inception"
# shellcheck disable=SC2086  # the list is words
CHECKS="$nets" OUT=$out bash bench/scripts/half_nets_device.sh "$new" "$cur" $nets
