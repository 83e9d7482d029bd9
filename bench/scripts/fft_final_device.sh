#!/usr/bin/env bash
# fft_final_device.sh — on a GPU machine: the networks whose layers auto gives conv2d_fft, checked
# and timed beside PyTorch FP32 (eager, CUDA graph, torch.compile reduce-overhead) and the binary
# before the template.
#
#   bash bench/scripts/fft_final_device.sh NEW CUR OUTDIR
#
# 1. tests/gpu/layers-fft.yaml: `convgen check` at 7 and 300 images, compute-sanitizer memcheck and
#    racecheck at 7;
# 2. each network of SPECS checked (`check --random-input 1`) at 1, 7, 64 and 1,100 images;
# 3. bench/scripts/compile_cells.py SPECS --batches BATCHES (64,256,1000) with NEW: OUTDIR/cells.txt;
# 4. CUR at BATCHES and both binaries at 10,000 images (`run --random-input 1 --images B --batch B
#    --repeat 20 --json`, GPU µs): OUTDIR/times.txt;
# 5. NEW's per-kernel profile of each at 1,000 images: OUTDIR/prof.txt.
set -u
NEW=$1 CUR=$2 OUT=${3:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache} STEP_TIMEOUT=${STEP_TIMEOUT:-150}
. "$(dirname "$0")/cell_spec.sh"
SPECS=${SPECS:-"bench/specs/zoo-5x5-c64.yaml bench/specs/zoo-7x7-large.yaml bench/specs/zoo-bigk.yaml
  bench/specs/zoo-k7pad.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-stem96.yaml"}
BATCHES=${BATCHES:-64,256,1000}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
mkdir -p "$OUT"
for b in 7 300; do spec_check "$NEW" tests/gpu/layers-fft.yaml "$b"; done
for tool in memcheck racecheck; do
  timeout "$STEP_TIMEOUT" compute-sanitizer --tool "$tool" --error-exitcode 9 "$NEW" check tests/gpu/layers-fft.yaml \
    --random-input 1 --images 7 >"$OUT/$tool.txt" 2>&1
  echo "$tool layers-fft 7: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1)"
done
export -f spec_check
for s in $SPECS; do for b in 1 7 64 1100; do echo "$s $b"; done; done |
  xargs -P 6 -L 1 bash -c 'spec_check '"$NEW"' $0 $1' >"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed $(date +%T)"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -20
timeout 400 python3 -u "$(dirname "$0")/compile_cells.py" $SPECS --batches "$BATCHES" --workers 14 --repeat 50 \
  --convgen "$NEW" >"$OUT/cells.txt" 2>&1
echo "cells: exit $? $(date +%T)"
grep "^|" "$OUT/cells.txt"
for s in $SPECS; do
  for b in $(echo "$BATCHES" | tr , ' ') 10000; do
    for cg in "$CUR" "$NEW"; do
      [ "$b" != 10000 ] && [ "$cg" = "$NEW" ] && continue   # (NEW's time at BATCHES: cells.txt)
      run_time "$cg" "$s" "$b" "$OUT/j.json"
    done
  done
done >"$OUT/times.txt"
cat "$OUT/times.txt"
profile_1000 "$NEW" $SPECS >"$OUT/prof.txt" 2>&1
echo "profiles done $(date +%T)"
