#!/usr/bin/env bash
# direct_hwc_device.sh — on an sm_90 GPU: conv2d_direct's channels-last store for the conv2d_tma layer
# after it (T.hwc_out_ok, staged in shared memory). Its layer networks (layers-direct-hwc-bf16-wg and
# layers-tma-chain-bf16-wg, whose 3 -> 64 first layer stores so) checked against the CPU reference at
# 7, 64 and 1,100 images and under memcheck at 7; then each zoo network's bf16 auto copy checked at
# 1,100 images and profiled at IMAGES (default 10000) images by every binary given (each kernel's GPU
# time, `convgen run --profile`, median of the run's launches), the first binary's copy for all.
#
#   bash bench/scripts/direct_hwc_device.sh CONVGEN [CONVGEN...] [-- NETWORK...]
set -u
. "$(dirname "$0")/cell_spec.sh"
cgs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do cgs+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift; done
[ $# -gt 0 ] && shift
nets=${*:-zoo-squeeze zoo-1x1 zoo-vgg-same zoo-deep512}
images=${IMAGES:-10000}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
rc=0
cg=${cgs[0]}
STEP_TIMEOUT=40 spec_check "$cg" tests/gpu/layers-direct-hwc-bf16-wg.yaml 7 || exit 1
for s in tests/gpu/layers-direct-hwc-bf16-wg.yaml tests/gpu/layers-tma-chain-bf16-wg.yaml; do
  for i in 64 1100; do spec_check "$cg" "$s" "$i" || rc=1; done
  log=$(mktemp)
  if timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$cg" run "$s" --random-input 1 --images 7 \
      >"$log" 2>&1; then echo "ok   memcheck $s 7"; else echo "FAIL memcheck $s 7"; tail -12 "$log"; rc=1; fi
  rm -f "$log"
done
for n in $nets; do
  c=$(auto_copy "$(cell_spec "$n")" bf16)
  STEP_TIMEOUT=150 spec_check "$cg" "$c" 1100 || rc=1
  for b in "${cgs[@]}"; do
    echo "== $n bf16 auto $images images: $(basename "$b")"
    timeout 120 "$b" run "$c" --random-input 1 --images "$images" --batch "$images" --profile --whole off </dev/null 2>&1 |
      grep -E "^ +[0-9.]+%|GPU time|total" | awk '{print $2, $NF}'
  done
  rm -f "$c"
done
exit $rc
