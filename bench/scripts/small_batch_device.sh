#!/usr/bin/env bash
# small_batch_device.sh — on a GPU machine: the small-batch kernels (split
# reductions with and without a fused pool, at buckets 1 and 8; fused residual
# adds; the shipped residual model) checked, sanitized, then timed beside PyTorch
# and an older binary.
#
#   bash bench/scripts/small_batch_device.sh NEW BASE OUTDIR [DATA_DIR]
#
# 1. `convgen check` at --batch 1, 7, 8 and 64 on the split and graph networks;
# 2. compute-sanitizer memcheck and racecheck on the pooled split (bucket 1), the
#    tensor-core split (bucket 8) and zoo-5x5-c64 at bucket 8;
# 3. specs/fashion-resnet.yaml over the 10,000 test images (DATA_DIR: the
#    Fashion-MNIST IDX files; default Debian's): its Correctness line, which
#    must be models/accuracy.txt's;
# 4. bench/scripts/import_check.py exports and imports ResNet-18, MobileNet V2 and
#    a CIFAR ResNet (kept in OUTDIR/imp), then bench/latency.py times them, the
#    shipped residual model and every zoo network at BATCHES (default 1,8) with
#    BASE as the baseline (OUTDIR/latency.txt).
set -u
NEW=$1 BASE=$2 OUT=$3 DATA=${4:-/usr/share/datasets/fashion-mnist}
mkdir -p "$OUT"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
for s in tests/gpu/layers-splitk-pool.yaml tests/gpu/layers-splitk8-tc.yaml tests/gpu/layers-splitk.yaml \
    bench/specs/zoo-5x5-c64.yaml bench/specs/zoo-vgg-same.yaml bench/specs/zoo-residual.yaml bench/specs/zoo-bigk.yaml \
    specs/fashion-resnet.yaml; do
  for b in 1 7 8 64; do
    if "$NEW" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$OUT/log" 2>&1; then echo "ok   check $s $b"
    else echo "FAIL check $s $b"; tail -3 "$OUT/log"; fail=1; fi
  done
done
for x in "tests/gpu/layers-splitk-pool.yaml 1" "tests/gpu/layers-splitk8-tc.yaml 8" "bench/specs/zoo-5x5-c64.yaml 8"; do
  set -- $x
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$NEW" run "$1" --random-input "$2" --images "$2" \
        --batch "$2" >"$OUT/log" 2>&1; then echo "ok   $tool $1 $2"
    else echo "FAIL $tool $1 $2"; grep -m3 -E "ERROR|Invalid|hazard" "$OUT/log"; fail=1; fi
  done
done
want=$(awk '$1 == "fashion-resnet" {print $2}' models/accuracy.txt)
got=$("$NEW" run specs/fashion-resnet.yaml --input "$DATA/t10k-images-idx3-ubyte.gz" \
  --labels "$DATA/t10k-labels-idx1-ubyte.gz" 2>&1 | awk '/^Correctness/ {print $2}')
if [ -n "$want" ] && [ "$got" = "$want" ]; then echo "ok   fashion-resnet on the GPU: $got as models/accuracy.txt"
else echo "FAIL fashion-resnet on the GPU: $got, models/accuracy.txt $want"; fail=1; fi
python3 bench/scripts/import_check.py --convgen "$NEW" --backends cuda --images 8 --keep "$OUT/imp" \
  >"$OUT/import.txt" 2>&1 || { echo "FAIL import_check"; tail -5 "$OUT/import.txt"; fail=1; }
python3 bench/latency.py "$OUT"/imp/resnet18.yaml "$OUT"/imp/mobilenet_v2.yaml "$OUT"/imp/cifar_resnet.yaml \
  specs/fashion-resnet.yaml bench/specs/zoo-*.yaml --convgen "$NEW" --baseline "$BASE" \
  --batches "${BATCHES:-1,8}" --repeat 50 >"$OUT/latency.txt" 2>&1 || fail=1
grep '^|' "$OUT/latency.txt"
exit $fail
