#!/usr/bin/env bash
# bucket_tune_device.sh — on a GPU: what tuning per batch bucket buys. For each SPEC:B cell,
# a copy of SPEC in a scratch directory is tuned at B images (`convgen tune --batch B`, its
# record beside the copy, where run finds it), checked at B with the record applied, then
# timed by bench/latency.py (beside PyTorch eager and its CUDA graph), and the original spec
# (no record) timed by the same binary on the next line ("untuned:").
#
#   BUDGET=S bash bench/scripts/bucket_tune_device.sh CONVGEN [SPEC:B ...]
#
# The copy's `weights:` is made absolute (spec_copy, cell_spec.sh): a relative one named a
# file beside the scratch directory and ece408-2018sp's tune failed ("cannot open").
#
# Default cells: those still below issue 30's 1.5x in bench/RESULTS.md's "The 44 slow cells
# profiled" table. BUDGET: tune's wall-time ceiling a cell (default 120 s; it was 40), shared
# by the cell's layers: a conv layer's first candidates are NVRTC compiles, and on an H200
# (2026-11-29) BUDGET=25 ended every conv layer's search before one candidate was timed
# ("0/25 best none yet"). tune checks its entries in the network before writing them
# (docs/tuning.md, "Verified in the network"), outside the budget.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
shift
cells=${*:-zoo-5x5-c64:256 zoo-mlp:256 zoo-k7pad:8 ece408-2018sp:256 zoo-mlp:64 zoo-awkward:1 ece408-2018fa:64 \
zoo-k7pad:64 zoo-linear:8 zoo-odd:8 zoo-prime:8 zoo-7x7-large:256}
work=$(mktemp -d)
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$work/cache}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
for c in $cells; do
  s=$(cell_spec "${c%:*}") b=${c##*:}
  n=$(basename "$s" .yaml)
  mkdir -p "$work/$n-$b"
  spec_copy "$s" "$work/$n-$b/$n.yaml" || { echo "FAIL copy $s"; fail=1; continue; }
  echo "=== $n $b"
  if ! "$cg" tune "$work/$n-$b/$n.yaml" --batch "$b" --budget "${BUDGET:-120}" >"$work/$n-$b/tune.log" 2>&1; then
    echo "FAIL tune $n $b"; tail -3 "$work/$n-$b/tune.log"; fail=1; continue
  fi
  grep -E '^[a-z0-9_]+ +[0-9]+/' "$work/$n-$b/tune.log" | head -12
  if "$cg" check "$work/$n-$b/$n.yaml" --random-input 1 --images "$b" --batch "$b" >"$work/$n-$b/check.log" 2>&1; then
    echo "ok   check $n $b (record applied)"
  else echo "FAIL check $n $b (record applied)"; tail -4 "$work/$n-$b/check.log"; fail=1; fi
  python3 bench/latency.py "$work/$n-$b/$n.yaml" --batches "$b" --repeat "${REPEAT:-20}" --convgen "$cg" \
    2>&1 | grep "batch $b:" || fail=1
  python3 bench/latency.py "$s" --batches "$b" --repeat "${REPEAT:-20}" --convgen "$cg" 2>&1 | grep "batch $b:" \
    | sed 's/^/untuned: /' || fail=1
  # both without programmatic dependent launch (run --no-pdl): how much of a record's gain or
  # loss the overlapped launches make (zoo-mlp at 256 ran 30 % faster profiled, launch by launch)
  for sp in "$work/$n-$b/$n.yaml" "$s"; do
    for pdl in "" --no-pdl; do
      "$cg" run "$sp" --random-input 1 --images "$b" --batch "$b" --repeat "${REPEAT:-20}" $pdl \
        --json "$work/run.json" >/dev/null 2>&1 && python3 -c "import json, sys
print('run %s %s: %.1f us' % (sys.argv[2], sys.argv[3] or 'pdl', json.load(open(sys.argv[1]))['total_s'] * 1e6))" \
        "$work/run.json" "$([ "$sp" = "$s" ] && echo untuned || echo tuned)" "$pdl" || fail=1
      rm -f "$work/run.json"
    done
  done
done
exit $fail
