#!/usr/bin/env bash
# test_kernel.sh — `convgen kernel` as a user meets it without a GPU: the
# candidate list (count and entries), errors with their exit codes, and the
# GPU path saying why it cannot run.
set -u
. "$(dirname "$0")/lib.sh"

# --list: example-conv's conv1 has 1280 combinations of declared legal values (fuse is no tuning
# choice: its default only), 416 refused
$cg kernel specs/example-conv.yaml --layer conv1 --list >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && ok || bad "--list exit $rc: $(cat "$t/e")"
grep -q "^864 candidates: 1280 combinations of the declared legal values, 416 refused" "$t/o" && ok || bad "--list count: $(head -3 "$t/o")"
[ "$(grep -cE '^ +[0-9]+  block=' "$t/o")" -eq 864 ] && ok || bad "--list should print 864 candidates"
grep -qE '^ +1  block=32 maps_unroll=1 cols=1 unroll_groups=0 fuse=1$' "$t/o" && ok || bad "first candidate"
# another strategy for an fc layer: every listed candidate is one fc_vec accepts
$cg kernel specs/ece408-2017.yaml --layer fc2 --strategy vec --list >"$t/o" 2>"$t/e" && ok || bad "fc --list: $(cat "$t/e")"
n=$(sed -n 's/^\([0-9]*\) candidates: 144 combinations.*/\1/p' "$t/o")
[ -n "$n" ] && [ "$(grep -cE '^ +[0-9]+  bm=' "$t/o")" -eq "$n" ] && ok || bad "fc_vec list: $(head -2 "$t/o")"

# errors: usage 2, bad input 3, one line each
expect() { # exit-code expected-text args...
  local want=$1 text=$2; shift 2
  $cg kernel "$@" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq "$want" ] && ok || bad "kernel $*: exit $rc, expected $want ($(cat "$t/e"))"
  grep -qF -- "$text" "$t/e" && ok || bad "kernel $*: expected '$text' in: $(cat "$t/e")"
}
expect 2 "kernel needs SPEC and --layer NAME" specs/example-conv.yaml
expect 2 "--batch expects an integer" specs/example-conv.yaml --layer conv1 --batch -1
expect 3 "no layer 'conv9' (layers: conv1)" specs/example-conv.yaml --layer conv9
expect 3 "is a softmax" specs/ece408-2017.yaml --layer prob --list
expect 3 "no template 'conv2d_fft'" specs/example-conv.yaml --layer conv1 --strategy fft --list
expect 3 "layer 'conv2': Winograd serves kernels up to 7x7; this layer's is 9x9" bench/specs/zoo-bigk.yaml --layer conv2 --strategy winograd
expect 3 "layer 'conv1': maps_unroll=8 with cols=4 needs 128 accumulators" specs/example-conv.yaml --layer conv1 --params maps_unroll=8,cols=4
expect 3 "unknown parameter 'blok'" specs/example-conv.yaml --layer conv1 --params blok=64

# no GPU here: the harness says why, exit 4
if ! [ -e /dev/nvidia0 ]; then
  expect 4 "no CUDA driver" specs/example-conv.yaml --layer conv1 --batch 64
fi
echo "test_kernel: $pass passed, $fail failed"
[ $fail -eq 0 ]
