#!/usr/bin/env bash
# test_tune.sh — `convgen tune` and the tuning options as a user meets them
# without a GPU: --list, usage errors, exit 4 with one line, malformed records
# refused with FILE:LINE:COL by the verbs that read them.
set -u
. "$(dirname "$0")/lib.sh"

expect() { # exit-code expected-stderr-text verb args...
  local want=$1 text=$2; shift 2
  $cg "$@" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq "$want" ] && ok || bad "$*: exit $rc, expected $want ($(cat "$t/e"))"
  grep -qF -- "$text" "$t/e" && ok || bad "$*: expected '$text' in: $(cat "$t/e")"
}

# --list: every conv/fc layer, each serving template with its counts, no GPU needed
$cg tune specs/ece408-2017.yaml --list >"$t/o" 2>"$t/e" && ok || bad "--list: $(cat "$t/e")"
[ "$(grep -c '^layer ' "$t/o")" -eq 3 ] && ok || bad "--list: 3 layers expected: $(grep '^layer' "$t/o")"
grep -qE '^  conv2d_direct: [0-9]+ candidates of [0-9]+ combinations \([0-9]+ refused\)' "$t/o" && ok || bad "--list direct line"
grep -qE '^  conv2d_igemm: [0-9]+ candidates' "$t/o" && ok || bad "--list igemm line"
grep -qE '^  fc_vec: [0-9]+ candidates' "$t/o" && ok || bad "--list fc_vec line"
# the counts add up to the total
awk '/^layer /{s=0} /^  total: /{if ($2 != s) b=1; next} /^  [a-z0-9_]+: [0-9]+ candidates/{s+=$2} END{exit b}' "$t/o" \
  && ok || bad "--list totals do not add up"
$cg tune specs/ece408-2017.yaml --list --layers fc2 >"$t/o" 2>"$t/e" && ok || bad "--list --layers"
[ "$(grep -c '^layer ' "$t/o")" -eq 1 ] && grep -q '^layer fc2 ' "$t/o" && ok || bad "--layers fc2: $(grep '^layer' "$t/o")"

# errors
expect 2 "tune needs SPEC" tune
expect 2 "--budget" tune specs/ece408-2017.yaml --budget 0
expect 2 "unknown option '--topp'" tune specs/ece408-2017.yaml --topp 3
expect 3 "no conv or fc layer 'nope'" tune specs/ece408-2017.yaml --layers conv1,nope --list
$cg tune --help >"$t/o" 2>&1 && grep -q "^usage: convgen tune SPEC" "$t/o" && ok || bad "tune --help"
$cg help | grep -q "^  tune SPEC" && ok || bad "tune in convgen help"

# without a GPU: one line saying why, exit 4, nothing written
if ! $cg run specs/ece408-2017.yaml --backend cuda --images 1 >/dev/null 2>&1; then
  $cg tune specs/ece408-2017.yaml -o "$t/rec.yaml" --csv "$t/c.csv" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 4 ] && ok || bad "tune without a GPU: exit $rc"
  [ "$(wc -l <"$t/e")" -eq 1 ] && grep -q "^convgen: tune measures on a GPU and found none: " "$t/e" && ok \
    || bad "one line expected: $(cat "$t/e")"
  [ ! -e "$t/rec.yaml" ] && [ ! -e "$t/c.csv" ] && ok || bad "nothing should be written without a GPU"
  # the tuning options are GPU options of run
  expect 4 "--no-tuning needs a GPU" run specs/ece408-2017.yaml --no-tuning --images 1
fi

# malformed records: FILE:LINE:COL, exit 3 (build reads the record before compiling)
printf 'convgen: 0.1.0\ndevice: "X"\ncc: 90\nlayers:\n  - signature: "s"\n    template: conv2d_direkt\n    template_hash: "0"\n    params: "block=64"\n    ms: 1\n' >"$t/bad.yaml"
expect 3 "$t/bad.yaml:6:15: unknown template 'conv2d_direkt' in layers entry 1 (did you mean 'conv2d_direct'?)" \
  build specs/example-conv.yaml --tuning "$t/bad.yaml" -o "$t/x.fatbin"
expect 3 "$t/absent.yaml: cannot open" build specs/example-conv.yaml --tuning "$t/absent.yaml" -o "$t/x.fatbin"
[ ! -e "$t/x.fatbin" ] && ok || bad "no fat binary after a bad record"
# the record beside a spec is read by default (a malformed one stops the build); --no-tuning skips it
cp specs/example-conv.yaml "$t/net.yaml"; cp "$t/bad.yaml" "$t/net.tuning.yaml"
expect 3 "$t/net.tuning.yaml:6:15:" build "$t/net.yaml" -o "$t/x.fatbin"
$cg build "$t/net.yaml" --no-tuning --arch 90 -o "$t/x.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -ne 3 ] && ok || bad "--no-tuning should not read the record: $(cat "$t/e")"

echo "test_tune.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
