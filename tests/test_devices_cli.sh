#!/usr/bin/env bash
# test_devices_cli.sh — `run --devices` and `check --devices` without a GPU:
# every bad list is one line and exit 2 before anything is loaded (empty,
# an empty entry, a non-number, a negative or too large index, a duplicate),
# --devices beside --device is refused, --devices on the CPU backend is exit 2,
# a GPU that is not there exit 4 (no driver here; on a GPU machine, GPU 1023),
# and both verbs' --help name the option. The run itself is tests/test_shards.c.
set -u
. "$(dirname "$0")/lib.sh"
spec=specs/ece408-2017.yaml
# expect CODE TEXT command...: the exit code, and TEXT in a one-line message
expect() {
  local code=$1 text=$2; shift 2
  "$@" >"$t/out" 2>&1; local rc=$?
  if [ $rc -eq "$code" ] && grep -qF -- "$text" "$t/out" && [ "$(grep -c '^convgen:' "$t/out")" -eq 1 ]; then ok
  else bad "$*: exit $rc (expected $code, '$text'): $(cat "$t/out")"; fi
}
for verb in run check; do
  expect 2 "--devices expects GPU indices like 0,1, or all; got ''" $cg $verb $spec --devices ''
  expect 2 "--devices 0,,1: an empty entry" $cg $verb $spec --devices 0,,1
  expect 2 "--devices 0,: an empty entry" $cg $verb $spec --devices 0,
  expect 2 "--devices 0,x: 'x' is not a GPU index (0 to 1023)" $cg $verb $spec --devices 0,x
  expect 2 "--devices -1: '-1' is not a GPU index" $cg $verb $spec --devices=-1
  expect 2 "--devices 1024: '1024' is not a GPU index" $cg $verb $spec --devices 1024
  expect 2 "--devices 0,1,0: GPU 0 listed twice" $cg $verb $spec --devices 0,1,0
  expect 2 "--devices and --device both choose the GPU: give one" $cg $verb $spec --devices 0,1 --device 1
  expect 2 "option --devices given twice" $cg $verb $spec --devices 0 --devices 1
  # the list is read before the spec; the spec before any GPU is probed
  expect 3 "tests/no/such.yaml" $cg $verb tests/no/such.yaml --devices 0,1
  # a GPU that is not there: no driver here, and no GPU 1023 anywhere
  expect 4 "GPU" $cg $verb $spec --devices 0,1023
  $cg $verb --help | grep -q -- '--devices L' && ok || bad "$verb --help lacks --devices"
done
expect 2 "--devices needs the cuda backend" $cg run $spec --devices 0,1 --backend cpu
long=$(seq -s, 0 64)
expect 2 "at most 64 GPUs" $cg run $spec --devices "$long"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  expect 4 "--devices needs a GPU: no CUDA driver" $cg run $spec --devices 0,1
  expect 4 "--devices needs a GPU: no CUDA driver" $cg run $spec --devices all
  expect 4 "--devices all: no CUDA driver" $cg check $spec --devices all
fi
echo "test_devices_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
