#!/usr/bin/env bash
# fc_mma_device.sh — on an sm_90 GPU: fc_mma (16-bit fc layers as a matrix product on
# warpgroup tensor cores, operands by cp.async) checked, timed layer by layer beside fc_wg,
# then whole bf16 networks under auto's choices beside a previous binary.
#
#   bash bench/scripts/fc_mma_device.sh NEW_CONVGEN PREV_CONVGEN [SPEC...]
#
# 1. `convgen check` on tests/gpu/layers-fc-mma-bf16-wg.yaml at 300 and 1,000 images (the
#    large-batch kernels: at a small bucket a spec's fc strategy gives way to gemv), and
#    compute-sanitizer memcheck and racecheck on it at 200.
# 2. bench/scripts/fc_wg_device.sh with STRATS="mma wg" (seven fc layers of bf16 copies).
# 3. bench/scripts/bf16_auto_device.sh NEW PREV SPEC... (checks at 300 images, then
#    bench/latency.py --precision bf16 --auto --batches 10000 beside PyTorch BF16).
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 prev=$2
shift 2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
fail=0
s=tests/gpu/layers-fc-mma-bf16-wg.yaml
for b in 300 1000; do spec_check "$new" "$s" "$b" || fail=1; done
spec_sanitize "$new" "$s" 200 || fail=1
STRATS="mma wg" CHECK_IMAGES=${CHECK_IMAGES:-16} bash "$(dirname "$0")/fc_wg_device.sh" "$new" || fail=1
bash "$(dirname "$0")/bf16_auto_device.sh" "$new" "$prev" "$@" || fail=1
exit $fail
