#!/usr/bin/env bash
# mma_fp16_device.sh — on an sm_90 GPU: the 16-bit tensor-core paths new in this version checked
# in fp16 too, the course networks' accuracy in bf16 and fp16 under auto's choices, and
# `convgen tune`'s verification in the network (both of its steps) on one cell.
#
#   bash bench/scripts/mma_fp16_device.sh CONVGEN DATA_DIR
#
# 1. `convgen check` on tests/gpu/layers-mma-fp16-wg.yaml (planes tr=1 with a fused average
#    pool, fc_mma) at 300 and 1,000 images with the large-batch kernels; memcheck and
#    racecheck at 200.
# 2. AUTO=1 SKIP_CHECKS=1 bench/scripts/half_device.sh CONVGEN DATA_DIR: the course networks
#    over the 10,000 test images in fp32, bf16 and fp16 (copies without the specs' strategies).
# 3. BUDGET=${BUDGET:-60} bench/scripts/bucket_tune_device.sh CONVGEN zoo-mlp:256.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1 data=$2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
fail=0
s=tests/gpu/layers-mma-fp16-wg.yaml
for b in 300 1000; do spec_check "$cg" "$s" "$b" || fail=1; done
spec_sanitize "$cg" "$s" 200 || fail=1
AUTO=1 SKIP_CHECKS=1 bash "$(dirname "$0")/half_device.sh" "$cg" "$data" || fail=1
BUDGET=${BUDGET:-60} bash "$(dirname "$0")/bucket_tune_device.sh" "$cg" zoo-mlp:256 || fail=1
exit $fail
