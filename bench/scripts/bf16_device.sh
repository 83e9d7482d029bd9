#!/usr/bin/env bash
# bf16_device.sh — on an sm_90 GPU: conv2d_igemm_wg's 16-bit path checked, its
# tiles timed, and whole networks in bf16 beside PyTorch BF16.
#
#   bash bench/scripts/bf16_device.sh NEW_CONVGEN PREV_CONVGEN [SPEC...]
#
# 1. `convgen check` (every layer against the CPU reference within the 16-bit
#    tolerance, tensors NaN-poisoned first) on tests/gpu/layers-bf16-wg.yaml,
#    layers-fp16-wg.yaml and layers-bf16.yaml at --batch 7, 64 and 1,000;
#    compute-sanitizer memcheck and racecheck on the two -wg networks at 64 images.
# 2. `convgen kernel` (checked, then timed with the L2 flushed, batch 10,000) on
#    bf16 copies of zoo-vgg-same's and zoo-wide3x3's wide layers: igemm_wg's
#    default, its offset-table slices (kc=0), igemm_tc's bf16 path, and FP32's
#    own choice (VARIANTS: other items).
# 3. Each SPEC's bf16 copy checked at 64 images, then
#    `python3 bench/latency.py SPEC... --precision bf16 --batches 10000` with the
#    previous binary as baseline (PyTorch BF16 eager channels-last and its CUDA
#    graph in the same process), then each spec in FP32 by the new binary.
set -u
new=$1 prev=$2
shift 2
specs=${*:-bench/specs/zoo-vgg-same.yaml bench/specs/zoo-wide3x3.yaml bench/specs/zoo-alex.yaml specs/ece408-2018fa.yaml specs/ece408-2017.yaml}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
if [ -z "${SKIP_CHECKS:-}" ]; then
for s in tests/gpu/layers-bf16-wg.yaml tests/gpu/layers-fp16-wg.yaml tests/gpu/layers-bf16.yaml; do
  for b in 7 64 1000; do
    if "$new" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then
      echo "ok   check $s $b: $(grep -cE 'tolerance' "$log") layers within tolerance"
    else echo "FAIL check $s $b"; tail -5 "$log"; fail=1; fi
  done
done
for s in tests/gpu/layers-bf16-wg.yaml tests/gpu/layers-fp16-wg.yaml; do
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$new" run "$s" --random-input 64 --images 64 --batch 64 \
        >"$log" 2>&1; then echo "ok   $tool $s 64"
    else echo "FAIL $tool $s 64"; grep -m3 -E "ERROR|Invalid|hazard|error" "$log"; fail=1; fi
  done
done
fi
copy() {  # spec precision -> a copy with precision: P
  local c; c=$(dirname "$1")/.prec-$2-$(basename "$1")
  sed "s/^network: .*/&\nprecision: $2/" "$1" >"$c"; echo "$c"
}
kern() {  # spec layer strategy params label
  local out
  out=$("$new" kernel "$1" --layer "$2" ${3:+--strategy "$3"} ${4:+--params "$4"} --repeat 10 2>&1)
  echo "$(basename "$1") $2 ${3:-own} ${4:-default}: $(echo "$out" | tail -3 | tr '\n' ' ' | cut -c1-400)"
}
if [ -z "${SKIP_KERNELS:-}" ]; then
# VARIANTS: "spec|layer|strategy|params" items (spec: vgg or wide for the bf16 copies,
# vgg32 or wide32 for the FP32 specs; an empty strategy is the layer's own)
vb=$(copy bench/specs/zoo-vgg-same.yaml bf16)
wb=$(copy bench/specs/zoo-wide3x3.yaml bf16)
for item in ${VARIANTS:-$(for l in conv1_2 conv2_2 conv3_1 conv3_2; do
    echo "vgg|$l|igemm_wg| vgg|$l|igemm_wg|kc=0 vgg|$l|igemm_tc| vgg32|$l||"; done
    for l in conv2 conv3 conv4; do echo "wide|$l|igemm_wg| wide32|$l||"; done)}; do
  IFS='|' read -r sp l st pa <<<"$item"
  case $sp in vgg) f=$vb ;; wide) f=$wb ;; vgg32) f=bench/specs/zoo-vgg-same.yaml ;; *) f=bench/specs/zoo-wide3x3.yaml ;; esac
  kern "$f" "$l" "$st" "$pa"
done
rm -f "$vb" "$wb"
fi
# every network's bf16 copy checked at 64 images (the default tiles), then timed
for s in $specs; do
  c=$(copy "$s" bf16)
  if "$new" check "$c" --random-input 64 --images 64 --batch 64 >"$log" 2>&1; then echo "ok   check $c 64"
  else echo "FAIL check $c 64"; tail -4 "$log"; fail=1; fi
  rm -f "$c"
done
python3 bench/latency.py $specs --precision bf16 --batches 10000 --repeat ${REPEAT:-10} --convgen "$new" --baseline "$prev" || fail=1
for s in $specs; do
  "$new" run "$s" --random-input 1 --images 10000 --repeat ${REPEAT:-10} --json "$log.json" >/dev/null 2>&1 &&
    echo "fp32 $(basename "$s" .yaml): $(python3 -c "import json,sys; print('%.3f ms' % (json.load(open(sys.argv[1]))['total_s'] * 1e3))" "$log.json")"
done
rm -f "$log" "$log.json"
exit $fail
