#!/usr/bin/env bash
# tune_repeat.sh — issue 9's "tuning twice gives the same choices or choices within 3 %".
# Each network is tuned twice with the same budget (the first run with the JIT cache as
# it finds it, the second with the cache the first one filled: the two plan with different
# compile costs, as two real runs do); tools/tune_repeat.py compares the two records and
# times every pair of differing choices again in one call; then the whole network runs
# with each record (random input, no data set needed).
#
#   bench/scripts/tune_repeat.sh OUTDIR [BUDGET] [SPEC...]
#     (default: budget 45 s; bench/specs/zoo-issue3x3.yaml zoo-odd.yaml zoo-vgg3x3.yaml)
#   CONVGEN=path/to/convgen overrides build/convgen.
# Writes OUTDIR/NAME.{a,b}.{tuning.yaml,csv,log,run.txt} and OUTDIR/NAME.compare.txt;
# exit 0 when every network's two records choose alike.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/scripts/tune_repeat.sh OUTDIR [BUDGET] [SPEC...]}
budget=${2:-45}
shift $(($# < 2 ? $# : 2))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(bench/specs/zoo-issue3x3.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-vgg3x3.yaml)
cg=${CONVGEN:-build/convgen}
mkdir -p "$out" || exit 2
rc=0
for s in "${specs[@]}"; do
  n=$(basename "$s" .yaml)
  for r in a b; do
    if ! "$cg" tune "$s" --budget "$budget" -o "$out/$n.$r.tuning.yaml" --csv "$out/$n.$r.csv" >"$out/$n.$r.log" 2>&1; then
      echo "$n ($r): tune failed: $(tail -1 "$out/$n.$r.log")"
      rc=1
      continue 2
    fi
    echo "== $n, run $r: $(grep -E '^measured|^tuned in' "$out/$n.$r.log" | tr '\n' ' ')"
    sed -n '/^layer .*measured .*best template/,/^measured /p' "$out/$n.$r.log" | sed '$d'   # the summary table
  done
  python3 tools/tune_repeat.py "$out/$n.a.tuning.yaml" "$out/$n.b.tuning.yaml" --spec "$s" --convgen "$cg" \
    >"$out/$n.compare.txt" 2>&1 || rc=1
  cat "$out/$n.compare.txt"
  for r in a b; do
    "$cg" run "$s" --tuning "$out/$n.$r.tuning.yaml" --random-input 1 --repeat 20 >"$out/$n.$r.run.txt" 2>&1
    echo "   network with record $r: $(grep -E 'Op Time|ms' "$out/$n.$r.run.txt" | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
  done
done
exit $rc
