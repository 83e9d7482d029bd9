#!/usr/bin/env bash
# test_stream_cli.sh — the command-line side of "Throughput at scale" without a
# GPU: --repeat-dataset runs the images K times over (the JSON counts them, the
# accuracy is the set's), refuses 0 and more than 2^31 images; --streams is a
# GPU option, refused on the CPU backend like --batch.
set -u
. "$(dirname "$0")/lib.sh"
spec=specs/ece408-2017.yaml
$cg run $spec --backend cpu --random-input 3 --images 40 --json "$t/one.json" >"$t/one" 2>&1 || bad "40 images: $(cat "$t/one")"
$cg run $spec --backend cpu --random-input 3 --images 40 --repeat-dataset 3 --json "$t/three.json" >"$t/three" 2>&1 ||
  bad "40 images 3 times: $(cat "$t/three")"
grep -q '"images": 120,' "$t/three.json" && ok || bad "--repeat-dataset 3 of 40: $(grep images "$t/three.json")"
grep -q '"images": 40,' "$t/one.json" && ok || bad "40 images: $(grep images "$t/one.json")"
if [ -e /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
  a=$($cg run $spec --backend cpu --images 50 | grep '^Correctness')
  b=$($cg run $spec --backend cpu --images 50 --repeat-dataset 2 | grep '^Correctness')
  [ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "the set twice over has another accuracy: '$a' vs '$b'"
fi
$cg run $spec --backend cpu --repeat-dataset 0 >"$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -- '--repeat-dataset expects an integer from 1' "$t/out" && ok || bad "--repeat-dataset 0: exit $rc: $(cat "$t/out")"
$cg run $spec --backend cpu --random-input 1 --images 100000 --repeat-dataset 30000 >"$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'is more than 2147483647' "$t/out" && ok || bad "3x10^9 images: exit $rc: $(cat "$t/out")"
$cg run $spec --backend cpu --streams 2 >"$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -- '--streams needs the cuda backend' "$t/out" && ok || bad "--streams on the CPU: exit $rc: $(cat "$t/out")"
$cg run $spec --backend cuda --streams 5 >"$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -- '--streams expects an integer from 1 to 4' "$t/out" && ok || bad "--streams 5: exit $rc: $(cat "$t/out")"
$cg check $spec --batch 0 >"$t/out" 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "check --batch 0: exit $rc: $(cat "$t/out")"
$cg run --help | grep -q -- '--repeat-dataset K' && ok || bad "run --help lacks --repeat-dataset"
$cg check --help | grep -q -- '--batch B' && ok || bad "check --help lacks --batch"
echo "test_stream_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
