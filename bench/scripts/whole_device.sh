#!/usr/bin/env bash
# whole_device.sh — on a GPU machine: the whole-network kernel (templates/ops/network.lua)
# checked, sanitized and timed against the per-layer kernels, an older binary and PyTorch.
#
#   bash bench/scripts/whole_device.sh NEW BASE OUTDIR
#
# 1. `convgen check` at --batch 1, 7 and 8 (every layer against the CPU reference,
#    tensors NaN-poisoned first; with the default --whole auto, check runs the
#    per-layer kernels and then the whole-network kernel) on every network the
#    planner gives one at those buckets;
# 2. compute-sanitizer memcheck and racecheck, one image, --whole on;
# 3. GPU time at one image of the networks: NEW (auto), NEW --whole on, NEW --whole off
#    and BASE (`run --random-input 1 --images 1 --batch 1 --repeat 200 --json`, median);
# 4. bench/latency.py at batch 1 and 8 with BASE as the baseline: PyTorch FP32 eager,
#    its CUDA graph, torch.compile reduce-overhead (batch 1) in the same process, and
#    the host latency of one call (OUTDIR/latency.txt).
# PARTS (default "check sanitize time latency") picks the steps. One line a check;
# exit 1 when any fails.
set -u
NEW=$1 BASE=$2 OUT=$3
mkdir -p "$OUT"
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
PARTS=${PARTS:-check sanitize time latency}
has() { [[ " $PARTS " == *" $1 "* ]]; }
NETS=${NETS:-"specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml specs/fashion-resnet.yaml
  bench/specs/zoo-mlp.yaml bench/specs/zoo-edge.yaml bench/specs/zoo-prime.yaml bench/specs/zoo-odd.yaml
  bench/specs/zoo-bigk.yaml bench/specs/zoo-issue3x3.yaml bench/specs/zoo-linear.yaml bench/specs/zoo-1x1.yaml
  tests/gpu/layers-graph.yaml"}
for s in $(has check && echo $NETS); do
  for b in 1 7 8; do
    if "$NEW" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$OUT/log" 2>&1; then
      echo "ok   check $s batch $b $(grep -c -i 'whole' "$OUT/log") whole-kernel lines"
    else echo "FAIL check $s batch $b"; tail -4 "$OUT/log" | sed 's/^/     /'; fail=1; fi
  done
done
for s in $(has sanitize && echo specs/ece408-2017.yaml specs/fashion-resnet.yaml tests/gpu/layers-graph.yaml); do
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$NEW" run "$s" --random-input 1 --images 1 --batch 1 \
        --whole on >"$OUT/log" 2>&1; then echo "ok   $tool $s batch 1 --whole on"
    else echo "FAIL $tool $s batch 1 --whole on"; grep -m3 -E "ERROR|Invalid|hazard|rror" "$OUT/log" | sed 's/^/     /'; fail=1; fi
  done
done
median() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('%.1f' % (d['total_s'] * 1e6))" "$1" 2>/dev/null || echo "-"; }
has time && echo "one image, GPU us (median of 200): network | auto | --whole on | --whole off | base"
for s in $(has time && echo $NETS); do
  "$NEW" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --json "$OUT/a.json" >"$OUT/a.log" 2>&1
  "$NEW" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --whole on --json "$OUT/b.json" >/dev/null 2>&1
  "$NEW" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --whole off --json "$OUT/c.json" >/dev/null 2>&1
  "$BASE" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --json "$OUT/d.json" >/dev/null 2>&1
  echo "$(basename "$s" .yaml) | $(median "$OUT/a.json") | $(median "$OUT/b.json") | $(median "$OUT/c.json") | $(median "$OUT/d.json")"
done
has time && "$NEW" run specs/ece408-2017.yaml --random-input 1 --images 1 --batch 1 --repeat 200 --profile 2>&1 | tail -12
if has latency; then
  python3 bench/latency.py specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml \
    --convgen "$NEW" --baseline "$BASE" --batches 1,8 --repeat 100 --compile-batches 1 --host-latency \
    >"$OUT/latency.txt" 2>&1 || fail=1
  python3 bench/latency.py specs/fashion-resnet.yaml bench/specs/zoo-mlp.yaml bench/specs/zoo-edge.yaml \
    bench/specs/zoo-prime.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-bigk.yaml bench/specs/zoo-issue3x3.yaml \
    bench/specs/zoo-linear.yaml bench/specs/zoo-1x1.yaml \
    --convgen "$NEW" --baseline "$BASE" --batches 1,8 --repeat 100 >>"$OUT/latency.txt" 2>&1 || fail=1
  grep -E '^\||host|compile' "$OUT/latency.txt" | head -80
fi
exit $fail
