#!/usr/bin/env bash
# fc_wg_device.sh — on an sm_90 GPU: fc layers of bf16 networks on warpgroup tensor cores
# (fc_wg: the fc as conv2d_igemm_wg's 1x1 convolution, one BF16 wgmma a k16 step) against
# fc_vec (16-bit loads, FFMA), the template a bf16 fc takes without the rule
# planner.AUTO_FC_WG_MIN_BATCH, at 10,000 images.
#
#   bash bench/scripts/fc_wg_device.sh CONVGEN
#
# Each layer of a bf16 copy (the spec's `strategy` and `params` dropped, so both templates
# take their own defaults) is checked against the CPU reference on CHECK_IMAGES images
# (default 64), then timed with the L2 flushed (`convgen kernel --repeat 10`). LAYERS:
# "spec|layer" items to time instead; STRATS the templates (default "wg vec"; mma: fc_mma); BATCH
# the images (default 10,000; a smaller count times the kernels generated for its bucket).
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for item in ${LAYERS:-specs/ece408-2017.yaml\|fc1 specs/ece408-2018sp.yaml\|fc1 specs/ece408-2018fa.yaml\|fc1 \
bench/specs/zoo-vgg-same.yaml\|fc1 bench/specs/zoo-mlp.yaml\|fc1 bench/specs/zoo-mlp.yaml\|fc2 bench/specs/zoo-mlp.yaml\|fc3}; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  for st in ${STRATS:-wg vec}; do
    out=$("$cg" kernel "$c" --layer "$l" --strategy "$st" --batch "${BATCH:-10000}" --repeat "${REPEAT:-10}" \
      --check-images "${CHECK_IMAGES:-64}" 2>&1)
    echo "$(basename "$sp" .yaml) $l $st: $(echo "$out" | grep -E 'params|median|WRONG|convgen:' | tr '\n' ' ' | cut -c1-360)"
  done
  rm -f "$c"
done
