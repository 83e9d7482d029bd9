#!/usr/bin/env bash
# tma_zoo_device.sh — on an sm_90 GPU: the zoo networks conv2d_tma changes under auto (bf16 copies,
# bench/compare.py's --auto), each checked at 1,100 images (the large batch's kernels), then timed at
# 10,000 images by bench/latency.py beside the previous binary, PyTorch BF16 eager (channels-last), its
# CUDA graph and torch.compile max-autotune in the same process (each network bounded by TIMEOUT
# seconds, default 170; autotuning's own lines filtered out); then racecheck of conv2d_tma's layer
# network, its log's tail shown (RACECHECK=0 leaves it out).
#
#   bash bench/scripts/tma_zoo_device.sh NEW PREV [NETWORK...]
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 prev=$2
shift 2
nets=${*:-zoo-vgg-same zoo-deep512 zoo-wide3x3}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
rc=0
for n in $nets; do
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  STEP_TIMEOUT=150 spec_check "$new" "$c" 1100 || rc=1
  rm -f "$c"
done
for n in $nets; do
  timeout "${TIMEOUT:-170}" python3 bench/latency.py "$(cell_spec "$n")" --precision bf16 --auto --batches 10000 \
    --repeat 10 --convgen "$new" --baseline "$prev" --compile-modes max-autotune --compile-batches 10000 2>&1 |
    grep -E "^\| zoo|batch 10000:" || { echo "$n: not finished in ${TIMEOUT:-170} s"; rc=1; }
done
[ "${RACECHECK:-1}" = 0 ] && exit $rc
log=$(mktemp)
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$new" run tests/gpu/layers-tma-bf16-wg.yaml \
  --random-input 1 --images 7 >"$log" 2>&1
echo "racecheck rc=$?"
grep -v "^Op Time" "$log" | tail -25
rm -f "$log"
exit $rc
