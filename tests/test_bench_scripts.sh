#!/usr/bin/env bash
# test_bench_scripts.sh — the scripts behind bench/RESULTS.md's figures stay runnable: every
# shell script under bench/ parses (`bash -n`), every Python one compiles (py_compile, its
# cache kept out of the tree), and each names how it is run in its opening comment. They run
# on a GPU machine, so nothing here executes them (test_latency.sh dry-runs latency.py and
# compile_cells.py).
. "$(dirname "$0")/lib.sh"

n=0
for f in bench/*.sh bench/scripts/*.sh; do
  [ -e "$f" ] || continue
  n=$((n+1))
  bash -n "$f" 2>"$t/e" && ok || bad "$f does not parse: $(head -2 "$t/e")"
done
[ $n -ge 10 ] && ok || bad "only $n shell scripts found under bench/"
if command -v python3 >/dev/null; then
  for f in bench/*.py bench/scripts/*.py; do
    [ -e "$f" ] || continue
    PYTHONPYCACHEPREFIX="$t/pyc" python3 -m py_compile "$f" 2>"$t/e" && ok || bad "$f does not compile: $(tail -2 "$t/e")"
  done
else echo "skip: no python3"; fi
# the opening comment says how the script runs: a usage line naming the script itself
for f in bench/scripts/*.sh bench/scripts/*.py bench/scripts/*.cu; do
  [ -e "$f" ] || continue
  b=$(basename "$f")
  head -30 "$f" | grep -q -- "$b\|${b%.*}" && ok || bad "$f: its opening comment does not say how it is run"
done

echo "test_bench_scripts: $pass passed, $fail failed"
[ $fail -eq 0 ]
