#!/usr/bin/env bash
# planes_pool_device.sh — on an sm_90 GPU: 16-bit planes with maps as wgmma's M (tr=1) and
# its fused 2x2 pool (fp=1), now auto's choice for bf16/fp16 layers of 64+ maps on 12+
# column outputs: checked, then whole networks in bf16 timed beside the previous binary
# and PyTorch BF16.
#
#   bash bench/scripts/planes_pool_device.sh NEW_CONVGEN PREV_CONVGEN [SPEC...]
#
# 1. `convgen check` (every layer against the CPU reference within the 16-bit tolerance,
#    tensors NaN-poisoned first) on tests/gpu/layers-planes-tr-pool-bf16-wg.yaml at 7, 64
#    and 1,000 images and layers-planes-tr-bf16-wg.yaml at 64; compute-sanitizer memcheck
#    and racecheck on the first at 64 images.
# 2. bench/scripts/bf16_device.sh's third step on SPECs (default: the zoo networks whose
#    bf16 layers auto now gives planes): each bf16 copy checked at 64 images, then
#    `bench/latency.py --precision bf16 --batches 10000` with PREV as the baseline (PyTorch
#    BF16 eager channels-last and its CUDA graph in the same process).
set -u
new=$1 prev=$2
shift 2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
if [ -z "${SKIP_CHECKS:-}" ]; then
  s=tests/gpu/layers-planes-tr-pool-bf16-wg.yaml
  for b in 7 64 1000; do
    if "$new" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then
      echo "ok   check $s $b: $(grep -cE 'tolerance' "$log") layers within tolerance"
    else echo "FAIL check $s $b"; grep -E "FAIL|error|above" "$log" | head -6; tail -3 "$log"; fail=1; fi
  done
  s2=tests/gpu/layers-planes-tr-bf16-wg.yaml
  if "$new" check "$s2" --random-input 64 --images 64 --batch 64 >"$log" 2>&1; then echo "ok   check $s2 64"
  else echo "FAIL check $s2 64"; tail -4 "$log"; fail=1; fi
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$new" run "$s" --random-input 64 --images 64 --batch 64 \
        >"$log" 2>&1; then echo "ok   $tool $s 64"
    else echo "FAIL $tool $s 64"; grep -m3 -E "ERROR|Invalid|hazard|error" "$log"; fail=1; fi
  done
fi
rm -f "$log"
specs=${*:-bench/specs/zoo-vgg-same.yaml bench/specs/zoo-wide3x3.yaml bench/specs/zoo-5x5-c64.yaml \
bench/specs/zoo-residual.yaml bench/specs/zoo-7x7-large.yaml}
SKIP_CHECKS=1 SKIP_KERNELS=1 bash "$(dirname "$0")/bf16_device.sh" "$new" "$prev" $specs || fail=1
exit $fail
