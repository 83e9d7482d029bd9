#!/usr/bin/env bash
# bf16_auto_device.sh — on an sm_90 GPU: networks in bf16 under auto's choices (the specs'
# own strategy and params dropped: bench/compare.py's precision_copy with --auto), checked
# at the large batch, then timed at 10,000 images beside the previous binary and PyTorch BF16.
#
#   bash bench/scripts/bf16_auto_device.sh NEW_CONVGEN PREV_CONVGEN [SPEC...]
#
# 1. `convgen check` (every layer against the CPU reference within the 16-bit tolerance,
#    tensors NaN-poisoned first) of each SPEC's bf16 --auto copy on 300 random images with
#    the large-batch kernels (fc_wg's rule, planner.AUTO_FC_WG_MIN_BATCH, applies there
#    alone), and tests/gpu/layers-planes-tr-pool-bf16-wg.yaml at 64 images.
# 2. `python3 bench/latency.py SPEC... --precision bf16 --auto --batches 10000` with PREV as
#    the baseline (PyTorch BF16 eager channels-last and its CUDA graph in the same process).
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 prev=$2
shift 2
specs=${*:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-mlp.yaml \
bench/specs/zoo-vgg-same.yaml bench/specs/zoo-1x1.yaml bench/specs/zoo-vgg3x3.yaml}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
if [ -z "${SKIP_CHECKS:-}" ]; then
  for s in $specs; do
    c=$(auto_copy "$s" bf16)
    if "$new" check "$c" --random-input 1 --images 300 >"$log" 2>&1; then
      echo "ok   check $c 300 (large batch): $(grep -cE 'tolerance' "$log") lines within tolerance"
    else echo "FAIL check $c 300"; grep -E "FAIL|above|error" "$log" | head -4; tail -2 "$log"; fail=1; fi
    rm -f "$c"
  done
  s=tests/gpu/layers-planes-tr-pool-bf16-wg.yaml
  if "$new" check "$s" --random-input 64 --images 64 --batch 64 >"$log" 2>&1; then echo "ok   check $s 64"
  else echo "FAIL check $s 64"; tail -4 "$log"; fail=1; fi
fi
rm -f "$log"
python3 bench/latency.py $specs --precision bf16 --auto --batches 10000 --repeat "${REPEAT:-10}" --convgen "$new" \
  --baseline "$prev" || fail=1
exit $fail
