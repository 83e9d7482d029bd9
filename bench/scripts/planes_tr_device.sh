#!/usr/bin/env bash
# planes_tr_device.sh — on an sm_90 GPU: conv2d_planes' 16-bit tr=1 path (maps as wgmma's M,
# weights by cp.async through a ring; templates/lib/planes_half.lua) checked, then timed
# layer by layer beside igemm_wg (auto's 16-bit choice) and planes' tr=0.
#
#   bash bench/scripts/planes_tr_device.sh CONVGEN
#
# 1. `convgen check` (every layer against the CPU reference within the 16-bit tolerance,
#    tensors NaN-poisoned first) on tests/gpu/layers-planes-tr-bf16-wg.yaml at --batch 7, 64
#    and 1,000 and layers-planes-bf16-wg.yaml at 64; compute-sanitizer memcheck and racecheck
#    on the first at 64 images.
# 2. `convgen kernel` (checked, then timed with the L2 flushed, batch 10,000, median of
#    REPEAT) on bf16 copies of zoo-vgg-same's and zoo-wide3x3's layers of 16 channels or
#    more: planes (tr=1 by default), planes tr=0, igemm_wg. LAYERS: "spec|layer" items
#    (spec vgg or wide) to time instead; CHECK_IMAGES (default 64) the images each is checked on
#    (the CPU reference of 10,000 images took about 30 s a kernel).
set -u
cg=$1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
if [ -z "${SKIP_CHECKS:-}" ]; then
  for b in 7 64 1000; do
    s=tests/gpu/layers-planes-tr-bf16-wg.yaml
    if "$cg" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then
      echo "ok   check $s $b: $(grep -cE 'tolerance' "$log") layers within tolerance"
    else echo "FAIL check $s $b"; grep -E "FAIL|error|above" "$log" | head -6; tail -3 "$log"; fail=1; fi
  done
  s=tests/gpu/layers-planes-bf16-wg.yaml
  if "$cg" check "$s" --random-input 64 --images 64 --batch 64 >"$log" 2>&1; then echo "ok   check $s 64"
  else echo "FAIL check $s 64"; tail -4 "$log"; fail=1; fi
  for tool in memcheck racecheck; do
    s=tests/gpu/layers-planes-tr-bf16-wg.yaml
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$cg" run "$s" --random-input 64 --images 64 --batch 64 \
        >"$log" 2>&1; then echo "ok   $tool $s 64"
    else echo "FAIL $tool $s 64"; grep -m3 -E "ERROR|Invalid|hazard|error" "$log"; fail=1; fi
  done
fi
copy() {  # spec precision -> a copy with precision: P
  local c; c=$(dirname "$1")/.prec-$2-$(basename "$1")
  sed "s/^network: .*/&\nprecision: $2/" "$1" >"$c"; echo "$c"
}
vb=$(copy bench/specs/zoo-vgg-same.yaml bf16)
wb=$(copy bench/specs/zoo-wide3x3.yaml bf16)
for item in ${LAYERS:-vgg\|conv1_2 vgg\|conv2_1 vgg\|conv2_2 vgg\|conv3_1 vgg\|conv3_2 wide\|conv2 wide\|conv3 wide\|conv4}; do
  IFS='|' read -r sp l <<<"$item"
  case $sp in vgg) f=$vb ;; *) f=$wb ;; esac
  for v in ${VARIANTS:-"planes|tr=1" "planes|tr=0" "igemm_wg|"}; do
    IFS='|' read -r st pa <<<"$v"
    out=$("$cg" kernel "$f" --layer "$l" --strategy "$st" ${pa:+--params "$pa"} --repeat "${REPEAT:-10}" --check-images "${CHECK_IMAGES:-64}" 2>&1)
    echo "$sp $l $st ${pa:-default}: $(echo "$out" | grep -E 'params|ms|FAIL|error' | tr '\n' ' ' | cut -c1-420)"
  done
done
rm -f "$vb" "$wb" "$log"
exit $fail
