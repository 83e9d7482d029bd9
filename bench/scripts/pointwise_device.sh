#!/usr/bin/env bash
# pointwise_device.sh — on an sm_80+ GPU: conv2d_pointwise (templates/conv2d/pointwise.lua, 1x1
# convolutions of 16-bit tensors as one matrix product over the images' pixels) checked, sanitized and
# timed against auto's kernel of the binary before it.
#
#   bash bench/scripts/pointwise_device.sh NEW CUR
#
# 1. `convgen check` (NEW) of tests/gpu/layers-pointwise-bf16.yaml and its fp16 copy at 7, 64 and
#    1,000 images, the sanitizers at 64 (SKIP_CHECKS=1: none);
# 2. the 1x1 layers of ONES ("spec|layer", bf16 copies) at IMAGES (default 10,000; L2 flushed,
#    median of REPEAT): CUR's auto kernel, NEW's pointwise default, and each of VARIANTS (pointwise
#    params, comma-separated; space between variants).
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 cur=$2
images=${IMAGES:-10000}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
if [ -z "${SKIP_CHECKS:-}" ]; then
  s=tests/gpu/layers-pointwise-bf16.yaml
  h=tests/gpu/.layers-pointwise-fp16.yaml
  sed -e 's/precision: bf16/precision: fp16/' -e 's/layers-pointwise-bf16/layers-pointwise-fp16/' "$s" >"$h"
  for sp in "$s" "$h"; do
    for b in 7 64 1000; do spec_check "$new" "$sp" "$b"; done
  done
  spec_sanitize "$new" "$s" 64
  rm -f "$h"
fi
for item in ${ONES:-zoo-1x1\|expand zoo-1x1\|reduce zoo-1x1\|squeeze zoo-mobile\|pw1 zoo-mobile\|pw2 zoo-mobile\|pw4 zoo-awkward\|conv5 zoo-stem96\|squeeze zoo-linear\|conv3}; do
  IFS='|' read -r n l <<<"$item"
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  echo "$n $l cur auto: $(kernel_line "$cur" "$c" "$l" "$images" 16)"
  echo "$n $l new pointwise: $(kernel_line "$new" "$c" "$l" "$images" 16 --strategy pointwise)"
  for v in ${VARIANTS:-}; do
    echo "$n $l new pointwise $v: $(kernel_line "$new" "$c" "$l" "$images" 16 --strategy pointwise --params "$v")"
  done
  rm -f "$c"
done
