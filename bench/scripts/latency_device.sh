#!/usr/bin/env bash
# latency_device.sh — on a GPU machine: the small-batch path checked, then timed.
#
#   bash bench/scripts/latency_device.sh NEW_CONVGEN BASE_CONVGEN [OUTDIR] [SPEC...]
#
# 1. `convgen check` (every layer against the CPU reference, outputs NaN-poisoned
#    first) at --batch 1, 7 and 64 (the buckets 1, 8 and 64) on random images;
# 2. compute-sanitizer memcheck of a batch-1 run and racecheck of its kernels;
# 3. bench/latency.py: convgen's GPU time and host latency at batch 1, 8, 64, 256
#    and 1,000 beside the previous binary (BASE_CONVGEN) and PyTorch FP32 eager,
#    CUDA graph and (batch 1) torch.compile reduce-overhead, all in this one call.
# Logs go to OUTDIR (default: the current directory). Environment: CHECKS (the
# specs checked; default SPEC... and tests/gpu/layers-small-batch.yaml),
# CHECK_BATCHES (default "1 7 64"), BATCHES (default 1,8,64,256,1000), REPEAT
# (default 100), COMPILE_BATCHES (torch.compile's; default none), STEP_TIMEOUT (seconds a check or
# sanitizer run may take, default 120: exit 124 past it, reported as a failure).
set -u
NEW=$1 BASE=$2 OUT=${3:-.}
shift $(( $# >= 3 ? 3 : $# ))
SPECS=${*:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml}
CHECKS=${CHECKS:-$SPECS tests/gpu/layers-small-batch.yaml}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
for s in $CHECKS; do
  for b in ${CHECK_BATCHES:-1 7 64}; do
    if timeout "${STEP_TIMEOUT:-120}" "$NEW" check "$s" --random-input 1 --images "$b" --batch "$b" >"$OUT/check.log" 2>&1; then
      echo "check $s batch $b: ok ($(grep -c '' "$OUT/check.log") lines)"
    else
      echo "check $s batch $b: FAILED"; tail -5 "$OUT/check.log"; fail=1
    fi
  done
done
if command -v compute-sanitizer >/dev/null; then
  for s in specs/ece408-2018sp.yaml tests/gpu/layers-small-batch.yaml; do
    for tool in memcheck racecheck; do
      timeout "${STEP_TIMEOUT:-120}" compute-sanitizer --tool $tool --error-exitcode 9 "$NEW" run "$s" --backend cuda \
        --random-input 1 --images 3 --batch 8 >"$OUT/$tool.log" 2>&1
      echo "$tool $s batch 8 (3 images): exit $? ($(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log"))"
    done
  done
fi
PYTHONUNBUFFERED=1 python3 bench/latency.py $SPECS --convgen "$NEW" --baseline "$BASE" --repeat "${REPEAT:-100}" \
  --batches "${BATCHES:-1,8,64,256,1000}" \
  --compile-batches "${COMPILE_BATCHES:-}" --host-latency || fail=1
exit $fail
