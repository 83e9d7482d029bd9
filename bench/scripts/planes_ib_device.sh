#!/usr/bin/env bash
# planes_ib_device.sh — on an sm_90 GPU: 16-bit planes with maps as wgmma's M (tr=1) stacking
# several whole images a block (ib > 1), for layers whose maps are too small to fill wgmma's N
# (zoo-vgg-same's 8x8 layers lost to igemm_wg with one image a block).
#
#   bash bench/scripts/planes_ib_device.sh CONVGEN
#
# 1. `convgen check` on tests/gpu/layers-planes-tr-ib-bf16-wg.yaml at 7 and 1,000 images,
#    compute-sanitizer memcheck at 64.
# 2. `convgen kernel` (checked on 16 images, then timed at 10,000, L2 flushed, median of 10) on
#    the bf16 copy of zoo-vgg-same's conv3_1 and conv3_2 under planes tr=1 with ib 2, 3 and 4.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
s=tests/gpu/layers-planes-tr-ib-bf16-wg.yaml
for b in 7 1000; do
  if "$cg" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then echo "ok   check $s $b"
  else echo "FAIL check $s $b"; grep -E "FAIL" "$log" | head -3; tail -2 "$log"; fail=1; fi
done
if compute-sanitizer --tool memcheck --error-exitcode 9 "$cg" run "$s" --random-input 64 --images 64 --batch 64 \
    >"$log" 2>&1; then echo "ok   memcheck $s 64"
else echo "FAIL memcheck $s 64"; grep -m3 -E "ERROR|Invalid|error" "$log"; fail=1; fi
c=$(auto_copy bench/specs/zoo-vgg-same.yaml bf16)
for l in conv3_1 conv3_2; do
  for pa in ${PARAMS:-tr=1,ib=2 tr=1,ib=3 tr=1,ib=4}; do
    out=$("$cg" kernel "$c" --layer "$l" --strategy planes --params "$pa" --repeat 10 --check-images 16 2>&1)
    echo "$l $pa: $(echo "$out" | grep -E 'params|registers|median|WRONG|convgen:' | tr '\n' ' ' | cut -c1-300)"
  done
done
rm -f "$c" "$log"
exit $fail
