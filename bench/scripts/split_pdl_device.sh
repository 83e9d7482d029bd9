#!/usr/bin/env bash
# split_pdl_device.sh — on a GPU machine: the split reduction (conv2d_igemm split,
# splitk_reduce), the add fused into the conv epilogue, the liveness arena and
# programmatic dependent launch, checked and then timed against an older binary.
#
#   bash bench/scripts/split_pdl_device.sh NEW BASE OUTDIR [DATA_DIR]
#
# 1. `convgen check` (every layer against the CPU reference, tensors NaN-poisoned
#    first) at --batch 1, 7 and 64 on the layer networks that exercise the new
#    kernels and on graph and deep zoo networks, and at 10,000 images on two;
# 2. compute-sanitizer memcheck and racecheck of one image on the split and
#    fused-add networks (bucket 1: split kernels, fused adds, PDL launches);
# 3. bench/scripts/import_check.py: torchvision's ResNet-18 and MobileNet V2 and a
#    CIFAR ResNet exported and imported, 200 random images against PyTorch;
#    the specs are kept in OUTDIR/imp for later calls;
# 4. GPU time at batch 1 of the shipped networks: NEW, NEW --no-pdl and BASE
#    (`run --random-input 1 --images 1 --batch 1 --repeat 200 --json`, median);
# 5. bench/latency.py with BASE as the baseline on the imported and zoo
#    networks at batch 1 and 8 (OUTDIR/latency.txt);
# 6. same_figures.sh NEW BASE: predictions and accuracies at 10,000 images
#    identical to BASE's, GPU times side by side (OUTDIR/same.txt).
# PARTS (default "check sanitize import pdl latency same") picks the steps, so that
# the whole fits the device's 10-minute calls in two. One line a check; exit 1 when
# any fails.
set -u
NEW=$1 BASE=$2 OUT=$3 DATA=${4:-/usr/share/datasets/fashion-mnist}
mkdir -p "$OUT"
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
PARTS=${PARTS:-check sanitize import pdl latency same}
has() { [[ " $PARTS " == *" $1 "* ]]; }
CHECKS=${CHECKS:-"tests/gpu/layers-splitk.yaml tests/gpu/layers-residual-small-batch.yaml tests/gpu/layers-residual-tc.yaml
  tests/gpu/layers-graph.yaml tests/gpu/layers-small-batch.yaml bench/specs/zoo-residual.yaml bench/specs/zoo-inception.yaml
  bench/specs/zoo-mobile.yaml bench/specs/zoo-bigk.yaml bench/specs/zoo-deep512.yaml bench/specs/zoo-vgg-same.yaml
  specs/ece408-2017.yaml specs/ece408-2018fa.yaml"}
for s in $(has check && echo $CHECKS); do
  for b in 1 7 64; do
    if "$NEW" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$OUT/log" 2>&1; then echo "ok   check $s batch $b"
    else echo "FAIL check $s batch $b"; tail -4 "$OUT/log" | sed 's/^/     /'; fail=1; fi
  done
done
for s in $(has check && echo tests/gpu/layers-residual-tc.yaml bench/specs/zoo-residual.yaml); do
  if "$NEW" check "$s" --random-input 10000 --images 10000 >"$OUT/log" 2>&1; then echo "ok   check $s 10000 images"
  else echo "FAIL check $s 10000 images"; tail -4 "$OUT/log" | sed 's/^/     /'; fail=1; fi
done
for s in $(has sanitize && echo tests/gpu/layers-splitk.yaml tests/gpu/layers-residual-small-batch.yaml \
    bench/specs/zoo-residual.yaml); do
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$NEW" run "$s" --random-input 1 --images 1 --batch 1 \
        >"$OUT/log" 2>&1; then echo "ok   $tool $s batch 1"
    else echo "FAIL $tool $s batch 1"; grep -m3 -E "ERROR|Invalid|hazard" "$OUT/log" | sed 's/^/     /'; fail=1; fi
  done
done
if ! has import; then :
elif python3 bench/scripts/import_check.py --convgen "$NEW" --backends cuda --images 200 --keep "$OUT/imp" \
    >"$OUT/import.txt" 2>&1; then echo "ok   import_check"; else echo "FAIL import_check"; fail=1; fi
has import && tail -4 "$OUT/import.txt"
median() { python3 -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['total_s'] * 1e6))" "$1"; }
has pdl && echo "batch-1 GPU us (median of 200): network new new--no-pdl base"
for s in $(has pdl && echo specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml); do
  "$NEW" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --json "$OUT/a.json" >/dev/null 2>&1
  "$NEW" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --no-pdl --json "$OUT/b.json" >/dev/null 2>&1
  "$BASE" run "$s" --random-input 1 --images 1 --batch 1 --repeat 200 --json "$OUT/c.json" >/dev/null 2>&1
  echo "$(basename "$s" .yaml) $(median "$OUT/a.json") $(median "$OUT/b.json") $(median "$OUT/c.json")"
done
if has latency; then
  python3 bench/latency.py "$OUT"/imp/*.yaml bench/specs/zoo-*.yaml --convgen "$NEW" --baseline "$BASE" \
    --batches ${LAT_BATCHES:-1,8} --repeat 50 >"$OUT/latency.txt" 2>&1 || fail=1
  grep '^|' "$OUT/latency.txt" | head -80
fi
if has same; then
  REPEAT=5 ROUNDS=1 bash bench/scripts/same_figures.sh "$NEW" "$BASE" "$DATA" >"$OUT/same.txt" 2>&1 || fail=1
  cat "$OUT/same.txt"
fi
exit $fail
