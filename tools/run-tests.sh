#!/usr/bin/env bash
# Runs every test given (a binary, or a tests/*.sh script, which runs under bash),
# in the order given, then the tests/test_*.sh not given, each under a time limit,
# CG_TEST_JOBS at a time (default 2: the CI machine's cores; 1 runs them one
# after another). "[k/n] NAME" when a test starts; when it ends, its output
# (less its "ok" lines), its counts and how long it took; last, one closing line
# "N passed, N failed in TIME (n tests)" over all of them.
set -u
limit=${CG_TEST_TIMEOUT:-900}
jobs=${CG_TEST_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-tests.sh: CG_TEST_JOBS must be a positive integer" >&2; exit 2; }
pass=0; fail=0
scripts=()
for s in tests/test_*.sh; do
  [ -e "$s" ] || continue
  given=0
  for a in "$@"; do [ "$a" = "$s" ] && given=1; done
  [ "$given" -eq 1 ] || scripts+=("$s")
done
total=$(( $# + ${#scripts[@]} )); k=0
start=$SECONDS
res=$(mktemp -d); trap 'rm -rf "$res"' EXIT
dur() { # SECONDS -> "42s" or "8m12s"
  if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi
}
declare -A name_of
running=()
start_one() { # name command...
  local name=$1; shift
  k=$((k+1))
  echo "[$k/$total] $name"
  name_of[$k]=$name
  ( t0=$SECONDS
    out=$(timeout "$limit" "$@" 2>&1 </dev/null); rc=$?
    printf '%s\n' "$out" >"$res/$k.out"
    echo "$rc $((SECONDS - t0))" >"$res/$k.rc.tmp" && mv "$res/$k.rc.tmp" "$res/$k.rc" ) &
  running+=("$k")
}
finish_one() { # index
  local i=$1 name=${name_of[$1]} rc secs line p f out
  read -r rc secs <"$res/$i.rc"
  out=$(cat "$res/$i.out")
  printf '%s\n' "$out" | grep -v '^ok ' || true
  [ "$rc" -eq 124 ] && echo "FAIL $name: still running after ${limit}s"
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  p=; f=
  read -r p f < <(printf '%s\n' "$line" | awk '{for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i-1), $(i+1)}')
  local took; took=$(dur "$secs")
  if [ -z "${p:-}" ]; then echo "FAIL $name: no summary line (exit $rc), $took"; fail=$((fail+1)); return; fi
  pass=$((pass+p)); fail=$((fail+f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $name: exit $rc"; fail=$((fail+1)); fi
  echo "[$i/$total] $name: $p passed, $f failed, $took (total $(dur $((SECONDS - start))))"
}
reap() { # report the tests that have ended; keep the others
  local still=() i
  for i in "${running[@]}"; do
    if [ -e "$res/$i.rc" ]; then finish_one "$i"; else still+=("$i"); fi
  done
  running=(${still[@]+"${still[@]}"})
}
launch() { # name command...
  reap
  while [ "${#running[@]}" -ge "$jobs" ]; do sleep 0.2; reap; done
  start_one "$@"
}
for t in "$@"; do
  case $t in *.sh) launch "$t" bash "$t" ;; *) launch "$t" "$t" ;; esac
done
for s in ${scripts[@]+"${scripts[@]}"}; do launch "$s" bash "$s"; done
while [ "${#running[@]}" -gt 0 ]; do sleep 0.2; reap; done
wait
echo "$pass passed, $fail failed in $(dur $((SECONDS - start))) ($total test$([ "$total" -eq 1 ] || echo s))"
[ "$fail" -eq 0 ]
