#!/usr/bin/env bash
# planes_po_device.sh — on an sm_90 GPU: conv2d_planes' 16-bit po=1 (the planes staged a channel
# slice at a time beside the products; templates/lib/planes_half.lua) checked, then timed layer
# by layer against auto's choice (po=0) at 10,000 images.
#
#   bash bench/scripts/planes_po_device.sh CONVGEN
#
# 1. `convgen check` of tests/gpu/layers-planes-po-bf16-wg.yaml (CHECK_SPEC: another) at 7, 64 and
#    1,000 images; compute-sanitizer memcheck and racecheck at 64 (SKIP_CHECKS=1 leaves them out).
# 2. `convgen kernel` (checked on CHECK_IMAGES images, default 32, then timed with the L2 flushed,
#    median of REPEAT, default 10) on the bf16 copies of LAYERS ("spec|layer", default the 16-bit
#    planes layers of zoo-vgg-same, -wide3x3, -5x5-c64, -deep512 and -residual): the layer as auto
#    generates it, then under each of PARAMS (default "po=1 po=1,bk=32 po=1,bk=16"; params left out are
#    the defaults beside them; a refusal prints its reason).
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
s=${CHECK_SPEC:-tests/gpu/layers-planes-po-bf16-wg.yaml}
if [ -z "${SKIP_CHECKS:-}" ]; then
  for b in 7 64 1000; do spec_check "$cg" "$s" "$b"; done
  spec_sanitize "$cg" "$s" 64
fi
for item in ${LAYERS:-bench/specs/zoo-vgg-same.yaml\|conv1_2 bench/specs/zoo-vgg-same.yaml\|conv2_1 \
bench/specs/zoo-vgg-same.yaml\|conv2_2 bench/specs/zoo-vgg-same.yaml\|conv3_1 bench/specs/zoo-wide3x3.yaml\|conv2 \
bench/specs/zoo-wide3x3.yaml\|conv3 bench/specs/zoo-5x5-c64.yaml\|conv2 bench/specs/zoo-deep512.yaml\|conv2 \
bench/specs/zoo-residual.yaml\|b2c1}; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  for p in auto ${PARAMS:-po=1 po=1,bk=32 po=1,bk=16}; do
    if [ "$p" = auto ]; then a=(); else a=(--strategy planes --params "$p"); fi
    out=$("$cg" kernel "$c" --layer "$l" "${a[@]}" --repeat "${REPEAT:-10}" --check-images "${CHECK_IMAGES:-32}" 2>&1)
    echo "$(basename "$sp" .yaml) $l $p: $(echo "$out" | grep -E 'template|median|WRONG|convgen:' | sed -e 's/IQR.*//' -e 's/  */ /g' | tr '\n' ' ' | cut -c1-300)"
  done
  rm -f "$c"
done
