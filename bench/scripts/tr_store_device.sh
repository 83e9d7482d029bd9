#!/usr/bin/env bash
# tr_store_device.sh — on an sm_90 GPU: 16-bit planes' tr=1 epilogue storing 4 or 2 outputs at a time,
# and mn=1's 8-byte copies (templates/lib/planes_half.lua), against the binary before them.
#
#   bash bench/scripts/tr_store_device.sh NEW CUR
#
# 1. `convgen check` (NEW) of tests/gpu/layers-planes-mn-bf16-wg.yaml at 7, 64 and 1,000 images and
#    its sanitizers at 64, and of the bf16 copies of NETS at 7 and 1,000 (SKIP_CHECKS=1: none);
# 2. the unpooled tr=1 layers of LAYERS ("spec|layer", bf16 copies, auto's kernel) checked on 16
#    images and timed at 10,000 (L2 flushed, median of 10) under NEW and CUR;
# 3. the 1x1 layers of ONES under auto, tr=1 and tr=1 mn=1 (NEW alone);
# 4. EXTRA: "spec|layer|strategy|params" variants (bf16 copies; NEW alone).
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 cur=$2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
if [ -z "${SKIP_CHECKS:-}" ]; then
  s=tests/gpu/layers-planes-mn-bf16-wg.yaml
  for b in 7 64 1000; do spec_check "$new" "$s" "$b"; done
  spec_sanitize "$new" "$s" 64
  # shellcheck disable=SC2086  # the list is words
  copies_check "$new" bf16 ${NETS:-zoo-vgg-same zoo-wide3x3 zoo-1x1}
fi
for item in ${LAYERS:-zoo-vgg-same\|conv2_1 zoo-vgg-same\|conv3_1 zoo-wide3x3\|conv3 zoo-residual\|b2c1 zoo-vgg3x3\|conv3}; do
  IFS='|' read -r n l <<<"$item"
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  for b in new cur; do
    cg=$new; [ "$b" = cur ] && cg=$cur
    echo "$n $l $b: $(kernel_line "$cg" "$c" "$l" 10000 16)"
  done
  rm -f "$c"
done
for item in ${ONES:-zoo-1x1\|expand zoo-1x1\|reduce zoo-mobile\|pw2 zoo-mobile\|pw4}; do
  IFS='|' read -r n l <<<"$item"
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  for p in auto tr=1,mn=0 tr=1,mn=1; do
    if [ "$p" = auto ]; then a=(); else a=(--strategy planes --params "$p"); fi
    echo "$n $l $p: $(kernel_line "$new" "$c" "$l" 10000 16 "${a[@]}")"
  done
  rm -f "$c"
done
for item in ${EXTRA:-}; do
  IFS='|' read -r n l st pa <<<"$item"
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  echo "$n $l $st $pa: $(kernel_line "$new" "$c" "$l" 10000 16 --strategy "$st" ${pa:+--params "$pa"})"
  rm -f "$c"
done
