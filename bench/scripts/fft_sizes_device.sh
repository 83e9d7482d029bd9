#!/usr/bin/env bash
# fft_sizes_device.sh — on a GPU machine: conv2d_fft with transforms of 2^a x 3, 5 or 7 points (up
# to 32) beside the powers of two, checked, sanitized and timed on the networks whose transforms
# it shrinks, beside PyTorch FP32 and the binary before it.
#
#   bash bench/scripts/fft_sizes_device.sh NEW CUR OUTDIR
#
# 1. `convgen check --random-input 1` of tests/gpu/layers-fft.yaml (radix 3, 5 and 7 transforms)
#    at 7 and 300 images, compute-sanitizer memcheck and racecheck of it at 7, and each network of
#    SPECS at 1, 7, 64 and 1,100 images: OUTDIR/checks.txt;
# 2. bench/scripts/compile_cells.py SPECS --batches BATCHES (64,256,1000) with NEW: OUTDIR/cells.txt;
# 3. CUR and NEW at 10,000 images (`run --random-input 1 --images B --batch B --repeat 20 --json`,
#    GPU µs): OUTDIR/times.txt; NEW's per-kernel profile of each at 1,000: OUTDIR/prof.txt.
set -u
NEW=$1 CUR=$2 OUT=${3:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache} STEP_TIMEOUT=${STEP_TIMEOUT:-150}
. "$(dirname "$0")/cell_spec.sh"
SPECS=${SPECS:-"bench/specs/zoo-5x5-c64.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-stem96.yaml"}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
mkdir -p "$OUT"
export -f spec_check
{
  for b in 7 300; do spec_check "$NEW" tests/gpu/layers-fft.yaml "$b"; done
  spec_sanitize "$NEW" tests/gpu/layers-fft.yaml 7
  for s in $SPECS; do for b in 1 7 64 1100; do echo "$s $b"; done; done |
    xargs -P 3 -L 1 bash -c 'spec_check '"$NEW"' $0 $1'
} >"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed $(date +%T)"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -20
timeout 240 python3 -u "$(dirname "$0")/compile_cells.py" $SPECS --batches "${BATCHES:-64,256,1000}" --workers 9 \
  --repeat 50 --convgen "$NEW" 2>&1 | grep -v -e UserWarning -e warnings.warn >"$OUT/cells.txt"
echo "cells: $(date +%T)"
grep "^|" "$OUT/cells.txt"
for s in $SPECS; do
  for cg in "$CUR" "$NEW"; do
    run_time "$cg" "$s" 10000 "$OUT/j.json"
  done
done >"$OUT/times.txt"
cat "$OUT/times.txt"
profile_1000 "$NEW" $SPECS >"$OUT/prof.txt" 2>&1
grep -E "== |conv2d_fft" "$OUT/prof.txt"
echo "done $(date +%T)"
