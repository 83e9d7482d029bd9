#!/usr/bin/env bash
# ab_images.sh — on a GPU machine: several convgen binaries on the same networks at one image
# count, GPU time only (no PyTorch: for A/B of template rules; bench/latency.py gives the
# baselines).
#
#   IMAGES=1 ROUNDS=3 CHECKS="SPEC..." bash bench/scripts/ab_images.sh OUTDIR "SPEC..." BIN...
#
# 1. a compile pass of every (binary, spec) in parallel (the JIT cache serves the rest);
# 2. `convgen check --random-input 1 --images IMAGES` with the last binary (the new one: list
#    the baseline first) on CHECKS (default: every spec), eight at a time;
# 3. ROUNDS rounds, each binary in turn on each spec: `convgen run SPEC --random-input 1
#    --images IMAGES --batch IMAGES --repeat REPEAT (200) --json`; one line a run: round, spec,
#    binary, GPU µs (total_s), the launch way auto chose and the host latency's p50 (µs, pixels
#    in host memory to predictions in host memory). OUTDIR/ab.txt.
set -u
OUT=$1 SPECS=$2
shift 2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache} STEP_TIMEOUT=${STEP_TIMEOUT:-150}
B=${IMAGES:-1}
. "$(dirname "$0")/cell_spec.sh"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for s in $SPECS; do for cg in "$@"; do echo "$cg $s"; done; done |
  xargs -P 16 -L 1 sh -c 'timeout 300 $0 run $1 --random-input 1 --images '"$B"' --batch '"$B"' --repeat 1 >/dev/null 2>&1 || echo "compile/run FAILED: $0 $1"'
echo "compiled $(date +%T)"
export -f spec_check
NEW=${*: -1}
for s in ${CHECKS:-$SPECS}; do echo "$s"; done | xargs -P 8 -L 1 bash -c 'spec_check '"$NEW"' $0 '"$B" >"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed $(date +%T)"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -20
for r in $(seq 1 "${ROUNDS:-3}"); do
  for s in $SPECS; do
    for cg in "$@"; do
      timeout 60 "$cg" run "$s" --random-input 1 --images "$B" --batch "$B" --repeat "${REPEAT:-200}" --json "$OUT/j.json" \
        >/dev/null 2>&1 && python3 -c "import json, sys; j = json.load(open(sys.argv[4]))
print(sys.argv[1], sys.argv[2], sys.argv[3], '%.1f' % (j['total_s'] * 1e6), 'whole' if j.get('whole') else j.get('launch'),
      '%.1f' % (j['latency_ms']['p50'] * 1e3))" \
        "$r" "$s" "$cg" "$OUT/j.json" || echo "$r $s $cg FAILED"
    done
  done
done >"$OUT/ab.txt"
echo "rounds done $(date +%T)"
python3 - "$OUT/ab.txt" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[-1] != "FAILED":
        t[(f[1], f[2])].append(float(f[3]))
specs = sorted({k[0] for k in t}); bins = sorted({k[1] for k in t}, key=lambda b: list(dict.fromkeys(k[1] for k in t)).index(b))
print("spec " + " ".join(bins))
for s in specs:
    print(s.split("/")[-1], " ".join("%.1f" % statistics.median(t[(s, b)]) if t[(s, b)] else "-" for b in bins))
PY
