#!/bin/bash
# runs tma_box_starts (built beside this script, see its header) over layouts, swizzles and box starts; each in its own process (a fault ends the context)
for perm in 0 1; do for swz in 0 1 2 3; do
  for xy in "0 0" "60 0" "0 14" "-1 0" "0 -1" "-1 -1" "-3 -2"; do
    timeout 20 ./tma_box_starts $perm $swz $xy 2>&1 | tail -1
  done
done; done
