#!/usr/bin/env bash
# half_memory_device.sh — on an sm_90 GPU: the 16-bit layers whose time is far above their bytes'
# (first layers of 1 to 3 channels, layers of few maps, 1x1 layers, pooled layers of 32 maps),
# in the bf16 copies (bench/compare.py --auto) of bench/specs/ networks at 10,000 images:
# 1. `convgen check` of the networks at 7 and 1,000 images (CHECKS: which; SKIP_CHECKS=1: none);
# 2. each first layer (FIRST, "spec|layer") under auto and under direct, checked on 16 images,
#    then timed with the L2 flushed (median of 10);
# 3. `convgen tune` of TUNE ("spec|layer,layer"), BUDGET seconds a spec (default 60), each
#    candidate's row written to $OUT/tune-NAME.csv (OUT: default the working directory).
#
#   bash bench/scripts/half_memory_device.sh CONVGEN
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
out=${OUT:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
P=${PREC:-bf16}
if [ -z "${SKIP_CHECKS:-}" ]; then
  # shellcheck disable=SC2086  # the list is words
  copies_check "$cg" "$P" ${CHECKS:-zoo-residual zoo-vgg3x3 zoo-deep512 zoo-squeeze}
fi
for item in ${FIRST:-zoo-squeeze\|conv1 zoo-1x1\|conv1 zoo-5x5-c64\|conv1 zoo-vgg3x3\|conv1 zoo-deep512\|conv1 \
zoo-wide3x3\|conv1 zoo-issue3x3\|conv1 zoo-vgg-same\|conv1_1 zoo-residual\|stem}; do
  IFS='|' read -r n l <<<"$item"
  c=$(auto_copy "$(cell_spec "$n")" "$P")
  echo "$n $l auto: $(kernel_line "$cg" "$c" "$l" 10000 16)"
  echo "$n $l direct: $(kernel_line "$cg" "$c" "$l" 10000 16 --strategy direct)"
  rm -f "$c"
done
for item in ${TUNE:-zoo-squeeze\|conv3 zoo-vgg3x3\|conv2 zoo-issue3x3\|conv2 zoo-residual\|b1c1 zoo-1x1\|expand,reduce}; do
  IFS='|' read -r n ls <<<"$item"
  c=$(auto_copy "$(cell_spec "$n")" "$P")
  timeout $(( ${BUDGET:-60} + 60 )) "$cg" tune "$c" --layers "$ls" --budget "${BUDGET:-60}" --no-verify \
    --csv "$out/tune-$n.csv" -o "$out/tune-$n.yaml" 2>&1 | grep -vE '^ *(compil|tim)' | tail -12
  rm -f "$c"
done
