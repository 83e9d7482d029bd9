#!/usr/bin/env bash
# small_c_half_device.sh — on an sm_90 GPU: the course networks' conv2 layers (ece408-2018fa: 12 -> 24
# maps, 7x7 on 33x33; ece408-2018sp: 6 -> 16, 5x5 on 30x30) in bf16, under the templates that
# take them: auto's choice (igemm, FFMA: C < 16 is below the tensor-core rules), 16-bit planes
# (C padded to 16 with zeros, both operands by descriptor) and igemm_wg (the offset table).
# Each checked on CHECK_IMAGES images (default 16), then timed at 10,000 images, L2 flushed
# (`convgen kernel --repeat 10`), on a bf16 copy with the spec's strategies dropped.
#
#   bash bench/scripts/small_c_half_device.sh CONVGEN
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for n in ece408-2018fa ece408-2018sp; do
  c=$(auto_copy "specs/$n.yaml" bf16)
  for v in ${VARIANTS:-"|" "planes|" "planes|bm=16" "planes|rows=8" "igemm_wg|" "igemm_tc|"}; do
    IFS='|' read -r st pa <<<"$v"
    out=$("$cg" kernel "$c" --layer conv2 ${st:+--strategy "$st"} ${pa:+--params "$pa"} --repeat 10 \
      --check-images "${CHECK_IMAGES:-16}" 2>&1)
    echo "$n conv2 ${st:-auto} ${pa:-default}: $(echo "$out" | grep -E 'template|params|median|WRONG|convgen:' | tr '\n' ' ' | cut -c1-330)"
  done
  rm -f "$c"
done
