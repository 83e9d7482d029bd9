#!/usr/bin/env bash
# Runs every test binary given, then tests/test_*.sh, each under a time limit,
# and prints one closing line "N passed, N failed" over all of them.
set -u
limit=${CG_TEST_TIMEOUT:-900}
pass=0; fail=0
run_one() { # name command...
  local name=$1; shift
  echo "== $name"
  local out rc line p f
  out=$(timeout "$limit" "$@" 2>&1 </dev/null); rc=$?
  printf '%s\n' "$out" | grep -v '^ok ' || true
  [ $rc -eq 124 ] && echo "FAIL $name: still running after ${limit}s"
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  read -r p f < <(printf '%s\n' "$line" | awk '{for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i-1), $(i+1)}')
  if [ -z "${p:-}" ]; then echo "FAIL $name: no summary line (exit $rc)"; fail=$((fail+1)); return; fi
  pass=$((pass+p)); fail=$((fail+f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $name: exit $rc"; fail=$((fail+1)); fi
}
for t in "$@"; do run_one "$t" "$t"; done
for s in tests/test_*.sh; do [ -e "$s" ] && run_one "$s" bash "$s"; done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
