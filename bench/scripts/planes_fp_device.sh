#!/usr/bin/env bash
# planes_fp_device.sh — on a GPU machine: conv2d_planes' FP32 default fusing a 2x2 pool
# (fp=1 where the fused pool keeps the tile: templates/conv2d/planes.lua, default_fp32_fp)
# checked, sanitized and timed against a previous binary.
#
#   bash bench/scripts/planes_fp_device.sh NEW_CONVGEN PREV_CONVGEN OUTDIR
#
# 1. `convgen check --random-input 1` at 7 and 64 images (and 200, the 256-image bucket, for the zoo networks) on
#    every network whose kernels the default changes (NETS; their layer test specs TESTS);
# 2. compute-sanitizer memcheck and racecheck on two of them (one zoo, one test spec) at 8;
# 3. bench/latency.py at 8, 64, 256 and 1,000 images beside PREV_CONVGEN, ROUNDS (default 2)
#    times; then at 10,000 images, `convgen run --random-input 1 --images 10000 --repeat 10
#    --json` of each binary in turn, ROUNDS times (total_s, ms).
# Logs under OUTDIR: checks.txt, lat1.txt..., big.txt.
set -u
NEW=$1 PREV=$2 OUT=${3:-.}
export STEP_TIMEOUT=${STEP_TIMEOUT:-150} XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache}
. "$(dirname "$0")/cell_spec.sh"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
NETS=${NETS:-$(for n in 7x7-large awkward bigk deep512 issue3x3 squeeze stem96 vgg-same wide3x3; do echo bench/specs/zoo-$n.yaml; done)}
TESTS=${TESTS:-$(for n in planes-wg splitk-odd splitk-pool planes-tf32-wg concat direct slices-tc slide-pad; do echo tests/gpu/layers-$n.yaml; done)}
for s in $NETS; do for b in 8 64 256 1000 10000; do for cg in "$NEW" "$PREV"; do echo "$cg $s $b"; done; done; done |
  xargs -P 16 -L 1 sh -c 'timeout 300 $0 run $1 --random-input 1 --images $2 --batch $2 --repeat 1 >/dev/null 2>&1 || echo "compile/run FAILED: $0 $1 $2"'
echo "compiled $(date +%T)"
export -f spec_check
{ for s in $NETS; do for b in 7 64 200; do echo "$s $b"; done; done
  for s in $TESTS; do for b in 7 64; do echo "$s $b"; done; done; } |
  xargs -P 8 -L 1 bash -c 'spec_check '"$NEW"' $0 $1' >"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed $(date +%T)"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -30
for s in bench/specs/zoo-wide3x3.yaml tests/gpu/layers-planes-wg.yaml; do spec_sanitize "$NEW" "$s" 8; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  timeout "${LAT_TIMEOUT:-200}" python3 -u bench/latency.py $NETS --batches ${BATCHES:-8,64,256,1000} --repeat 50 \
    --convgen "$NEW" --baseline "$PREV" >"$OUT/lat$r.txt" 2>&1
  echo "latency round $r: exit $? $(date +%T)"
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for s in $NETS; do
    for cg in "$NEW" "$PREV"; do
      timeout 120 "$cg" run "$s" --random-input 1 --images 10000 --repeat 10 --json "$OUT/j.json" >/dev/null 2>&1 &&
        python3 -c "import json, sys; print(sys.argv[1], sys.argv[2], sys.argv[3], '%.3f' % (json.load(open(sys.argv[4]))['total_s'] * 1e3))" \
          "$r" "$s" "$cg" "$OUT/j.json" || echo "$r $s $cg FAILED"
    done
  done
done >"$OUT/big.txt"
echo "10000 done $(date +%T)"
