#!/usr/bin/env bash
# fc_mma_profile_device.sh — on an sm_90 GPU with Nsight Compute: what bounds fc_mma (the bf16
# fc as a wgmma matrix product, templates/fc/mma.lua) on 10,000 images.
#
#   bash bench/scripts/fc_mma_profile_device.sh CONVGEN [OUTDIR]
#
# For each "spec|layer" of LAYERS (default zoo-mlp's fc2 and ece408-2017's fc1; bf16 copies under
# auto): its time under each "params" of PARAMS (default: the template's own tile, then a few
# others), then one Nsight Compute profile of the default tile (the timed launch after the check,
# `--set full`), printed as its details page and the twenty SASS lines with the most stall
# samples. OUTDIR (default: a temporary folder) keeps the reports.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
out=${2:-$(mktemp -d)}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for item in ${LAYERS:-bench/specs/zoo-mlp.yaml\|fc2 specs/ece408-2017.yaml\|fc1}; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  name=$(basename "$sp" .yaml)-$l
  for p in ${PARAMS:-default bm=64 bn=128 bn=256 bk=32 bk=128 bm=64,bn=256}; do
    if [ "$p" = default ]; then a=(); else a=(--params "$p"); fi
    r=$("$cg" kernel "$c" --layer "$l" --strategy mma "${a[@]}" --repeat "${REPEAT:-10}" --check-images 16 2>&1)
    echo "$name mma $p: $(echo "$r" | grep -E 'params|median|WRONG|convgen:' | tr '\n' ' ' | cut -c1-300)"
  done
  if command -v ncu >/dev/null; then
    ncu --set full -k regex:fc_mma --launch-skip 1 -c 1 -f -o "$out/$name" \
      "$cg" kernel "$c" --layer "$l" --strategy mma --repeat 1 --check-images 16 >/dev/null 2>&1 ||
      echo "ncu failed on $name"
    ncu -i "$out/$name.ncu-rep" --page details 2>&1 | grep -vE '^\s*-+\s*$' | head -220
    ncu -i "$out/$name.ncu-rep" --page source --print-source sass --csv 2>/dev/null >"$out/$name-sass.csv"
    python3 "$(dirname "$0")/ncu_top_stalls.py" "$out/$name-sass.csv"
  fi
  rm -f "$c"
done
