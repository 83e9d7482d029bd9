#!/usr/bin/env bash
# Call 3: 16-bit planes' po=1 (the planes staged a channel slice at a time beside the products, never
# run on a GPU before) on the wide layers; the sweep's one-buffer form with the slots that sweep the
# fewest rows; one fragment buffer everywhere (AB1: an experiment binary) against two.
#   bash bench/planes-sw-tf32-2026-12-01/call3.sh NEW AB1
set -u
. bench/scripts/cell_spec.sh
new=$1 ab1=$2
export XDG_CACHE_HOME=$(mktemp -d)
LAYERS="bench/specs/zoo-vgg-same.yaml|conv1_2 bench/specs/zoo-vgg-same.yaml|conv2_1 bench/specs/zoo-vgg-same.yaml|conv2_2 \
bench/specs/zoo-vgg-same.yaml|conv3_1 bench/specs/zoo-vgg-same.yaml|conv3_2 bench/specs/zoo-wide3x3.yaml|conv3 \
bench/specs/zoo-deep512.yaml|conv2" bash bench/scripts/planes_po_device.sh "$new"
for cell in bf16:ece408-2018fa:conv2 bf16:ece408-2018sp:conv2 bf16:zoo-k7pad:conv4; do
  IFS=':' read -r pr n layer <<<"$cell"
  c=$(auto_copy "$(cell_spec "$n")" "$pr")
  echo "new $cell: $(kernel_line "$new" "$c" "$layer" 10000 16)"
  echo "ab1 $cell: $(kernel_line "$ab1" "$c" "$layer" 10000 16)"
  rm -f "$c"
done
c=$(auto_copy bench/specs/zoo-k7pad.yaml tf32)
echo "new tf32 zoo-k7pad conv4 sw=1 (8 slots): $(kernel_line "$new" "$c" conv4 10000 16 --strategy planes --params sw=1)"
rm -f "$c"
