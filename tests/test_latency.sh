#!/usr/bin/env bash
# test_latency.sh — what latency users read, without a GPU: `run --repeat` prints each
# call's host latency (p50 <= p90 <= p99) and writes it to --json; bench/latency_embed
# (cg_net_run one image at a time, as an embedding program calls it) runs on the CPU
# backend and prints its percentiles; bench/latency.py --dry-run reads every shipped and
# zoo spec and prints the convgen commands and PyTorch modules a GPU run would time, and
# bench/scripts/compile_cells.py --dry-run lists its cells.
. "$(dirname "$0")/lib.sh"

$cg run specs/ece408-2017.yaml --backend cpu --random-input 1 --images 2 --repeat 3 --json "$t/r.json" \
  >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && ok || bad "run --repeat 3 exit $rc: $(cat "$t/e")"
line=$(grep '^Latency: ' "$t/o")
if [[ $line =~ p50\ ([0-9.]+)\ ms,\ p90\ ([0-9.]+)\ ms,\ p99\ ([0-9.]+)\ ms\ per\ call\ of\ 2\ images ]]; then
  awk -v a="${BASH_REMATCH[1]}" -v b="${BASH_REMATCH[2]}" -v c="${BASH_REMATCH[3]}" \
    'BEGIN { exit !(a > 0 && a <= b && b <= c) }' && ok || bad "percentiles out of order: $line"
else bad "no Latency line: $(cat "$t/o")"; fi
grep -q '"latency_ms": {"p50": [0-9.]*, "p90": [0-9.]*, "p99": [0-9.]*}' "$t/r.json" && ok || bad "--json lacks latency_ms"
# one run: no percentiles to report
$cg run specs/ece408-2017.yaml --backend cpu --random-input 1 --images 2 >"$t/o1" 2>/dev/null
! grep -q '^Latency' "$t/o1" && ok || bad "a single run printed a Latency line"

if [ -x build/bench/latency_embed ]; then
  build/bench/latency_embed specs/ece408-2017.yaml cpu 5 >"$t/l" 2>"$t/le"; rc=$?
  [ $rc -eq 0 ] && ok || bad "latency_embed exit $rc: $(cat "$t/le")"
  grep -qE '^specs/ece408-2017.yaml on cpu, batch 1, 5 calls: p50 [0-9.]+ us, p90 [0-9.]+ us, p99 [0-9.]+ us' "$t/l" \
    && ok || bad "latency_embed: $(cat "$t/l")"
  build/bench/latency_embed specs/ece408-2017.yaml gpu 5 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "latency_embed accepted 'gpu'"
else bad "build/bench/latency_embed not built"; fi

if command -v python3 >/dev/null; then
  python3 bench/latency.py --dry-run --batches 1,8 >"$t/d" 2>"$t/de"; rc=$?
  [ $rc -eq 0 ] && ok || bad "latency.py --dry-run exit $rc: $(cat "$t/de")"
  [ "$(grep -c -- '--images 8 --repeat' "$t/d")" -eq 3 ] && ok || bad "dry run: $(head -5 "$t/d")"
  python3 bench/latency.py --dry-run bench/specs/zoo-*.yaml >/dev/null 2>"$t/de" && ok || bad "zoo dry run: $(cat "$t/de")"
  python3 bench/latency.py --dry-run --batches 0 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "batch 0 accepted"
  python3 bench/latency.py --dry-run --compile-batches 1 --compile-modes , >/dev/null 2>&1; [ $? -eq 2 ] && ok \
    || bad "--compile-modes without a mode accepted"
  # --precision: compare.py's list and spec copy (a spec copy needs a network line: exit 3)
  python3 bench/latency.py --dry-run --precision bf16 --batches 1 >/dev/null 2>"$t/de" && ok || bad "bf16 dry run: $(cat "$t/de")"
  python3 bench/latency.py --dry-run --precision fp64 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--precision fp64 accepted"
  grep -v '^network:' specs/example-conv.yaml >"$t/nonet.yaml"
  python3 bench/latency.py --dry-run --precision bf16 "$t/nonet.yaml" >/dev/null 2>"$t/de"; [ $? -eq 3 ] \
    && grep -q "no top-level 'network:' line" "$t/de" && ok || bad "bf16 without a network line: $(cat "$t/de")"
  # bench/scripts/compile_cells.py: every shipped course network and zoo network, a cell a
  # (network, batch), the workers' shares and the convgen commands; bad batches exit 2
  python3 bench/scripts/compile_cells.py --dry-run --batches 1,256 --workers 4 >"$t/c" 2>"$t/ce"; rc=$?
  nz=$(ls bench/specs/*.yaml | wc -l)
  [ $rc -eq 0 ] && [ "$(grep -c '^cell ' "$t/c")" -eq $(( (nz + 3) * 2 )) ] && ok \
    || bad "compile_cells.py --dry-run exit $rc, $(grep -c '^cell ' "$t/c") cells: $(cat "$t/ce")"
  grep -q '^cell 3: ece408-2018sp batch 256, worker 3$' "$t/c" && grep -q -- '--images 256 --repeat 100' "$t/c" && ok \
    || bad "compile_cells.py cells: $(head -3 "$t/c")"
  python3 bench/scripts/compile_cells.py --dry-run --batches 8,x >/dev/null 2>&1; [ $? -eq 2 ] && ok \
    || bad "compile_cells.py took batch x"
else echo "skip: no python3 for bench/latency.py"; fi

echo "test_latency: $pass passed, $fail failed"
[ $fail -eq 0 ]
