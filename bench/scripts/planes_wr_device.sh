#!/usr/bin/env bash
# planes_wr_device.sh — on an sm_90 GPU: 16-bit planes with every tap's weights resident (wr=1,
# templates/lib/planes_half.lua) against its two-buffer loop (wr=0) and auto's choice, layer by
# layer, bf16 copies of the shipped and zoo networks with their strategies dropped. First
# `convgen check` of tests/gpu/layers-planes-wr-bf16-wg.yaml at 7 and 300 images and
# compute-sanitizer memcheck and racecheck at 7; then each CELL ("network:layer") under each
# VARIANT ("strategy|params", the empty strategy auto's choice), checked on CHECK_IMAGES images
# (default 16) and timed at 10,000 images, L2 flushed (`convgen kernel --repeat 10`).
#
#   bash bench/scripts/planes_wr_device.sh CONVGEN [CELL...]
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
shift
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
if [ -z "${SKIP_CHECKS:-}" ]; then
  t=tests/gpu/layers-planes-wr-bf16-wg.yaml
  spec_check "$cg" $t 7
  spec_check "$cg" $t 300
  spec_sanitize "$cg" $t 7
fi
cells=${*:-"ece408-2018fa:conv2 ece408-2018sp:conv2 zoo-bigk:conv2 zoo-issue3x3:conv2 zoo-residual:b1c1 zoo-inception:br3 zoo-linear:conv2 zoo-k7pad:conv4"}
for cell in $cells; do
  n=${cell%%:*} layer=${cell#*:}
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  for v in ${VARIANTS:-"|" "planes|tr=0,wr=0" "planes|tr=0,wr=1" "planes|tr=0,wr=1,occ=2"}; do
    IFS='|' read -r st pa <<<"$v"
    echo "$n $layer ${st:-auto} ${pa:-default}: $(kernel_line "$cg" "$c" "$layer" 10000 "${CHECK_IMAGES:-16}" \
      ${st:+--strategy "$st"} ${pa:+--params "$pa"})"
  done
  rm -f "$c"
done
