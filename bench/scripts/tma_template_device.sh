#!/usr/bin/env bash
# tma_template_device.sh — conv2d_tma on a GPU (sm_90): its layer networks checked against the
# CPU reference (bf16 and fp16, at 7, 64 and 1,100 images), under compute-sanitizer (memcheck,
# racecheck) at 7, then zoo networks in bf16 twice, auto's choices and tma_copy.py's copy (every
# layer of TMA_MIN_C channels or more conv2d_tma serves written `strategy: tma`; default 16, the
# template's least): the copy checked at 64 images, then both profiled at IMAGES (default 10000)
# images, each kernel's time (`convgen run --profile`). The layer networks: -tma-bf16-wg and -fp16-wg,
# -tma-odd-bf16-wg, -tma-chain-bf16-wg, -tma-c32-bf16-wg (16- to 32-channel steps) and -direct-hwc-bf16-wg.
#
#   bash bench/scripts/tma_template_device.sh CONVGEN [NETWORK...]
#
# NETWORK: zoo names (bench/specs/NAME.yaml); default the zoo networks with layers tma serves.
# SKIP_CHECKS=1 leaves out the layer networks' checks and the sanitizer.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
nets=${*:-zoo-vgg-same zoo-deep512 zoo-wide3x3 zoo-residual zoo-1x1 zoo-5x5-c64 zoo-alex zoo-vgg3x3 zoo-squeeze zoo-issue3x3}
images=${IMAGES:-10000}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null
rc=0
# a first check bounded short: a kernel that hangs or faults stops the script here
STEP_TIMEOUT=40 spec_check "$cg" tests/gpu/layers-tma-bf16-wg.yaml 7 || exit 1
if [ "${SKIP_CHECKS:-0}" != 1 ]; then
  for s in tests/gpu/layers-tma-bf16-wg.yaml tests/gpu/layers-tma-fp16-wg.yaml tests/gpu/layers-tma-odd-bf16-wg.yaml \
      tests/gpu/layers-tma-chain-bf16-wg.yaml tests/gpu/layers-tma-c32-bf16-wg.yaml tests/gpu/layers-direct-hwc-bf16-wg.yaml; do
    for i in 7 64 1100; do spec_check "$cg" "$s" "$i" || rc=1; done
  done
  for tool in memcheck racecheck; do
    log=$(mktemp)
    if timeout "${SAN_TIMEOUT:-150}" compute-sanitizer --tool $tool --error-exitcode 9 "$cg" run \
        tests/gpu/layers-tma-bf16-wg.yaml --random-input 1 --images 7 >"$log" 2>&1; then
      echo "ok   $tool tests/gpu/layers-tma-bf16-wg.yaml 7"
    else
      echo "FAIL $tool tests/gpu/layers-tma-bf16-wg.yaml 7"; grep -v "^Op Time" "$log" | tail -12; rc=1
    fi
    rm -f "$log"
  done
fi
for n in $nets; do
  sp=$(cell_spec "$n")
  a=$(auto_copy "$sp" bf16)
  t=$(python3 "$(dirname "$0")/tma_copy.py" "$cg" "$sp" bf16 "${TMA_MIN_C:-16}")
  spec_check "$cg" "$t" 64 || rc=1
  for c in "$a" "$t"; do
    echo "== $n bf16 $( [ "$c" = "$a" ] && echo auto || echo tma ) $images images"
    timeout 120 "$cg" run "$c" --random-input 1 --images "$images" --batch "$images" --profile --whole off </dev/null 2>&1 |
      grep -v "^Correct" | head -60
  done
  rm -f "$a" "$t"
done
exit $rc
