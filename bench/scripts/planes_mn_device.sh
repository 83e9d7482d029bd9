#!/usr/bin/env bash
# planes_mn_device.sh — on an sm_90 GPU: 16-bit planes' tr=1 on 1x1 layers with the planes staged as
# they lie (mn=1, templates/lib/planes_half.lua: pixels innermost, wgmma's B transposed, 16-byte
# cp.async where the pixels align), checked, then timed layer by layer against auto's choice (igemm_wg
# for 1x1 layers) and tr=1 with the planes channels innermost (mn=0) at 10,000 images.
#
#   bash bench/scripts/planes_mn_device.sh CONVGEN
#
# 1. `convgen check` of tests/gpu/layers-planes-mn-bf16-wg.yaml at 7, 64 and 1,000 images;
#    compute-sanitizer memcheck and racecheck at 7 (SKIP_CHECKS=1 leaves them out).
# 2. Each of LAYERS ("spec|layer", default the 1x1 layers of 64 maps or more in bench/specs/) on its
#    bf16 copy under auto, then under each of PARAMS (default "tr=1,mn=0 tr=1,mn=1"; strategy
#    planes, the other params their defaults beside them; a refusal prints its reason): checked on
#    CHECK_IMAGES images (default 32), timed with the L2 flushed, median of REPEAT (default 10).
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
s=tests/gpu/layers-planes-mn-bf16-wg.yaml
if [ -z "${SKIP_CHECKS:-}" ]; then
  for b in 7 64 1000; do spec_check "$cg" "$s" "$b"; done
  spec_sanitize "$cg" "$s" 7
fi
for item in ${LAYERS:-bench/specs/zoo-1x1.yaml\|expand bench/specs/zoo-1x1.yaml\|reduce \
bench/specs/zoo-mobile.yaml\|pw2 bench/specs/zoo-mobile.yaml\|pw4 bench/specs/zoo-squeeze.yaml\|conv4 \
bench/specs/zoo-deep512.yaml\|conv4}; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  for p in auto ${PARAMS:-tr=1,mn=0 tr=1,mn=1}; do
    if [ "$p" = auto ]; then a=(); else a=(--strategy planes --params "$p"); fi
    echo "$(basename "$sp" .yaml) $l $p: $(kernel_line "$cg" "$c" "$l" 10000 "${CHECK_IMAGES:-32}" "${a[@]}")"
  done
  rm -f "$c"
done
