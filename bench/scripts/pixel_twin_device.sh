#!/usr/bin/env bash
# pixel_twin_device.sh — on a GPU machine: first layers reading the pixels (planner.pixel_twin)
# checked, sanitized, compared through float input, then timed beside a previous binary.
#
#   bash bench/scripts/pixel_twin_device.sh NEW_CONVGEN PREV_CONVGEN OUTDIR
#
# 1. `convgen check --random-input 1` at 1, 7 and 64 images on every shipped course network,
#    fashion-resnet, every bench/specs/ network, the pixel-twin test specs and layers-bn, and on
#    bf16 copies of four networks (their isolated units are fed floats: the twin reading the float
#    input); every run bounded by STEP_TIMEOUT seconds (default 150);
# 2. compute-sanitizer memcheck and racecheck of ece408-2018sp and layers-small-batch-pixels at 8;
# 3. the same random images as a uint8 .npy and as a float32 .npy of their scaled values through
#    ece408-2018sp on the GPU (each batch size and launch option) against the CPU's scores;
# 4. bench/latency.py at 1, 8 and 64 images on every network beside PREV_CONVGEN (LAT_SPECS, default
#    all of the above), then ROUNDS (default 3) more rounds at 1 and 8 of AB_SPECS (eight networks).
# Logs under OUTDIR: checks.txt, lat.txt, ab1.txt...
set -u
NEW=$1 PREV=$2 OUT=${3:-.}
export STEP_TIMEOUT=${STEP_TIMEOUT:-150}
. "$(dirname "$0")/cell_spec.sh"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
ALL="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml specs/fashion-resnet.yaml $(ls bench/specs/*.yaml)"
B16=$(for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-k7pad.yaml; do auto_copy "$s" bf16; done)
# compile pass, both binaries, in parallel (the JIT cache then serves every later run)
for s in ${LAT_SPECS:-$ALL}; do for b in 1 8 64; do for cg in "$NEW" "$PREV"; do echo "$cg $s $b"; done; done; done |
  xargs -P 16 -L 1 sh -c 'timeout 300 $0 run $1 --random-input 1 --images $2 --batch $2 --repeat 1 >/dev/null 2>&1 || echo "compile/run FAILED: $0 $1 $2"'
export -f spec_check
for s in $ALL tests/gpu/layers-small-batch-pixels.yaml tests/gpu/layers-small-batch-pixels-h.yaml tests/gpu/layers-bn.yaml $B16; do
  for b in 1 7 64; do echo "$s $b"; done
done | xargs -P 10 -L 1 bash -c 'spec_check '"$NEW"' $0 $1' >"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -30
rm -f $B16
for s in specs/ece408-2018sp.yaml tests/gpu/layers-small-batch-pixels.yaml; do
  for tool in memcheck racecheck; do
    timeout "$STEP_TIMEOUT" compute-sanitizer --tool $tool --error-exitcode 9 "$NEW" run "$s" --random-input 1 --images 3 \
      --batch 8 --whole off >"$OUT/$tool.log" 2>&1
    echo "$tool $s: exit $? $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log")"
  done
done
python3 - "$OUT" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(5)
u = rng.integers(0, 256, (9, 1, 64, 64), dtype=np.uint8)
np.save(sys.argv[1] + "/px.npy", u)
np.save(sys.argv[1] + "/fx.npy", (u.astype(np.float64) / 255.0).astype(np.float32))
PY
S=specs/ece408-2018sp.yaml
"$NEW" run $S --backend cpu --input "$OUT/px.npy" --output "$OUT/cpu.npy" >/dev/null 2>&1
i=0
for opt in "--batch 1" "--batch 1 --no-graphs" "--batch 1 --whole off" "--batch 1 --no-pdl" "--batch 8" ""; do
  for x in px fx; do
    i=$((i + 1))
    timeout "$STEP_TIMEOUT" "$NEW" run $S --input "$OUT/$x.npy" --output "$OUT/g$i.npy" $opt >/dev/null 2>&1
    python3 -c "import sys, numpy as np; g = np.load(sys.argv[1]); c = np.load(sys.argv[2])
print(f'{sys.argv[3]} input, {sys.argv[4] or \"defaults\"}: max |gpu - cpu| {abs(g - c).max():.3g}, same predictions {(g.argmax(1) == c.argmax(1)).all()}')" \
      "$OUT/g$i.npy" "$OUT/cpu.npy" "$([ $x = px ] && echo uint8 || echo float32)" "$opt" || echo "run $x $opt failed"
  done
done
PYTHONUNBUFFERED=1 timeout 450 python3 bench/latency.py ${LAT_SPECS:-$ALL} --batches 1,8,64 --repeat 100 \
  --convgen "$NEW" --baseline "$PREV" >"$OUT/lat.txt" 2>&1
echo "latency: exit $?"
AB=${AB_SPECS:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-k7pad.yaml bench/specs/zoo-prime.yaml bench/specs/zoo-issue3x3.yaml bench/specs/zoo-awkward.yaml bench/specs/zoo-edge.yaml}
for r in $(seq 1 "${ROUNDS:-3}"); do
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/latency.py $AB --batches 1,8 --repeat 200 --convgen "$NEW" \
    --baseline "$PREV" >"$OUT/ab$r.txt" 2>&1
  echo "round $r: exit $?"
done
