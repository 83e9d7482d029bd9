#!/usr/bin/env bash
# Runs every test binary given, then the shell-level tests, and prints one closing
# line "N passed, N failed" over all of them. Exit 1 if anything failed.
set -u
pass=0; fail=0
for t in "$@"; do
  echo "== $t"
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^ok ' || true
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  p=$(printf '%s' "$line" | sed -nE 's/.* ?([0-9]+) passed, ([0-9]+) failed.*/\1/p')
  f=$(printf '%s' "$line" | sed -nE 's/.* ?([0-9]+) passed, ([0-9]+) failed.*/\2/p')
  if [ -z "$p" ]; then echo "FAIL $t: no summary line (exit $rc)"; fail=$((fail+1)); continue; fi
  pass=$((pass+p)); fail=$((fail+f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $t: exit $rc"; fail=$((fail+1)); fi
done
for s in tests/test_*.sh; do
  [ -e "$s" ] || continue
  echo "== $s"
  out=$(bash "$s" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^ok ' || true
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  p=$(printf '%s' "$line" | sed -nE 's/.* ?([0-9]+) passed, ([0-9]+) failed.*/\1/p')
  f=$(printf '%s' "$line" | sed -nE 's/.* ?([0-9]+) passed, ([0-9]+) failed.*/\2/p')
  if [ -z "$p" ]; then echo "FAIL $s: no summary line (exit $rc)"; fail=$((fail+1)); continue; fi
  pass=$((pass+p)); fail=$((fail+f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $s: exit $rc"; fail=$((fail+1)); fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
