#!/usr/bin/env bash
# Runs every test binary given, then tests/test_*.sh, each under a time limit.
# Before each test: "[k/n] NAME"; after it, its counts and how long it took;
# last, one closing line "N passed, N failed in TIME (n tests)" over all of them.
set -u
limit=${CG_TEST_TIMEOUT:-900}
pass=0; fail=0
scripts=()
for s in tests/test_*.sh; do [ -e "$s" ] && scripts+=("$s"); done
total=$(( $# + ${#scripts[@]} )); k=0
start=$SECONDS
dur() { # SECONDS -> "42s" or "8m12s"
  if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi
}
run_one() { # name command...
  local name=$1; shift
  k=$((k+1))
  echo "[$k/$total] $name"
  local out rc line p f t0=$SECONDS
  out=$(timeout "$limit" "$@" 2>&1 </dev/null); rc=$?
  printf '%s\n' "$out" | grep -v '^ok ' || true
  [ $rc -eq 124 ] && echo "FAIL $name: still running after ${limit}s"
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  read -r p f < <(printf '%s\n' "$line" | awk '{for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i-1), $(i+1)}')
  local took; took=$(dur $((SECONDS - t0)))
  if [ -z "${p:-}" ]; then echo "FAIL $name: no summary line (exit $rc), $took"; fail=$((fail+1)); return; fi
  pass=$((pass+p)); fail=$((fail+f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $name: exit $rc"; fail=$((fail+1)); fi
  echo "[$k/$total] $name: $p passed, $f failed, $took (total $(dur $((SECONDS - start))))"
}
for t in "$@"; do run_one "$t" "$t"; done
for s in ${scripts[@]+"${scripts[@]}"}; do run_one "$s" bash "$s"; done
echo "$pass passed, $fail failed in $(dur $((SECONDS - start))) ($total test$([ "$total" -eq 1 ] || echo s))"
[ "$fail" -eq 0 ]
