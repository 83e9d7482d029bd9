#!/usr/bin/env bash
# planes_sw_tf32_device.sh — on an sm_90 GPU: planes' row sweep under precision tf32 (sw=1,
# templates/lib/planes_half.lua: 4 channels a 16-byte unit, k8 steps, one fragment buffer where two
# do not fit) and the sweep's weight descriptors made per kernel column (both precisions), against
# the previous binary.
#
#   bash bench/scripts/planes_sw_tf32_device.sh NEW_CONVGEN PREV_CONVGEN
#
# 1. `convgen check` of tests/gpu/layers-planes-sw-tf32-wg.yaml and layers-planes-sw-bf16-wg.yaml at
#    7 and 300 images, compute-sanitizer memcheck and racecheck of the tf32 one at 7 (SKIP_CHECKS=1:
#    none).
# 2. Each CELL ("precision:network:layer", the network's --auto copy at that precision) under each
#    VARIANT ("strategy|params", the empty strategy auto's choice) with NEW, and auto's choice with
#    PREV: checked on 16 images, timed at 10,000 (`convgen kernel --repeat 10`, L2 flushed).
# 3. NETS ("precision:network", default below): whole networks at 10,000 images, NEW beside PREV
#    (`python3 bench/latency.py --precision P --auto --batches 10000 --baseline PREV`; PyTorch at
#    that precision in the same process).
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 prev=$2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
if [ -z "${SKIP_CHECKS:-}" ]; then
  for t in tests/gpu/layers-planes-sw-tf32-wg.yaml tests/gpu/layers-planes-sw-bf16-wg.yaml; do
    spec_check "$new" $t 7
    spec_check "$new" $t 300
  done
  spec_sanitize "$new" tests/gpu/layers-planes-sw-tf32-wg.yaml 7
fi
cells=${CELLS:-"tf32:ece408-2018fa:conv2 tf32:ece408-2018sp:conv2 tf32:zoo-k7pad:conv4 bf16:ece408-2018fa:conv2 \
bf16:ece408-2018sp:conv2 bf16:zoo-k7pad:conv4 bf16:zoo-inception:br5"}
for cell in $cells; do
  IFS=':' read -r pr n layer <<<"$cell"
  c=$(auto_copy "$(cell_spec "$n")" "$pr")
  for v in ${VARIANTS:-"|" "planes|sw=0" "planes|sw=1"}; do
    IFS='|' read -r st pa <<<"$v"
    echo "new  $pr $n $layer ${st:-auto} ${pa:-default}: $(kernel_line "$new" "$c" "$layer" 10000 16 \
      ${st:+--strategy "$st"} ${pa:+--params "$pa"})"
  done
  echo "prev $pr $n $layer auto default: $(kernel_line "$prev" "$c" "$layer" 10000 16)"
  rm -f "$c"
done
for pr in tf32 bf16; do
  specs=""
  for net in ${NETS:-tf32:ece408-2018fa tf32:ece408-2018sp tf32:zoo-k7pad bf16:ece408-2018fa bf16:ece408-2018sp \
      bf16:zoo-k7pad bf16:zoo-inception}; do
    [ "${net%%:*}" = "$pr" ] && specs="$specs $(cell_spec "${net#*:}")"
  done
  [ -n "$specs" ] || continue
  python3 bench/latency.py $specs --precision "$pr" --auto --batches 10000 --repeat 10 --convgen "$new" --baseline "$prev"
done
