#!/usr/bin/env bash
# one_image_parts.sh — on a GPU: where one image's GPU time goes, measured on variants of a
# network (a layer removed, a size changed: bench/one-image-2026-11-30/specs/).
#
#   ROUNDS=3 bash bench/scripts/one_image_parts.sh CONVGEN SPEC...
#
# For each SPEC, ROUNDS rounds of `convgen run SPEC --random-input 1 --images 1 --batch 1
# --repeat 300 --whole off` (per-layer kernels in their graph) with programmatic dependent
# launch and with --no-pdl: one line "spec way GPU-µs..." (each the median of a run's 300);
# the same with a float input (`--input` of a random float32 .npy of the network's input
# shape: the input_u8 kernel then stands aside, the pixels are not read); then one run under
# --profile (events between kernels, no overlap): its per-kernel lines.
set -u
cg=$1
shift
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
tmp=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
gpu_us() { timeout 60 "$@" --json "$tmp/j.json" >/dev/null 2>&1 &&
  python3 -c "import json, sys; print('%.1f' % (json.load(open(sys.argv[1]))['total_s'] * 1e6))" "$tmp/j.json" || echo FAILED; }
for s in "$@"; do
  python3 - "$s" "$tmp/f.npy" <<'PY'
import re, sys, numpy as np
t = open(sys.argv[1]).read()
dims = [int(re.search(r"^\s+%s:\s*(\d+)" % k, t, re.M).group(1)) for k in ("channels", "height", "width")]
np.save(sys.argv[2], np.random.default_rng(1).random((1, *dims), dtype=np.float32))
PY
  for way in pdl --no-pdl float; do
    line="$(basename "$s" .yaml) $way"
    for r in $(seq 1 "${ROUNDS:-3}"); do
      case $way in
        pdl) a=(--random-input 1) ;;
        float) a=(--input "$tmp/f.npy") ;;
        *) a=(--random-input 1 "$way") ;;
      esac
      line="$line $(gpu_us "$cg" run "$s" "${a[@]}" --images 1 --batch 1 --repeat 300 --whole off)"
    done
    echo "$line"
  done
  echo "  profile: $(timeout 60 "$cg" run "$s" --random-input 1 --images 1 --batch 1 --repeat 300 --whole off --profile 2>&1 |
    grep -E '^ +[0-9.]+% ' | awk '{printf "%s %s; ", $NF, $2}')"
done
rm -rf "$tmp"
