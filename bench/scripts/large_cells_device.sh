#!/usr/bin/env bash
# large_cells_device.sh — on a GPU machine: every course and zoo network at 256 and 1,000 images
# (bench/latency.py beside PyTorch FP32 eager and its CUDA graph), their per-kernel profiles, and
# make test-gpu's C API step (tests/gpu/api_gpu.c) on the three course networks.
#
#   bash bench/scripts/large_cells_device.sh CONVGEN API_GPU OUTDIR
#
# CONVGEN: a static convgen; API_GPU: build/tests/gpu/api_gpu built beside it. Logs under
# OUTDIR: api_NAME.txt, big.txt (latency.py's table), prof.txt (`run --profile --whole off`).
set -u
NEW=$1 API=$2 OUT=${3:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
ALL="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml specs/fashion-resnet.yaml $(ls bench/specs/*.yaml)"
for s in $ALL; do for b in ${BATCHES:-256 1000}; do echo "$NEW $s $b"; done; done |
  xargs -P 16 -L 1 sh -c 'timeout 300 $0 run $1 --random-input 1 --images $2 --batch $2 --repeat 1 >/dev/null 2>&1 || echo "compile/run FAILED: $0 $1 $2"'
echo "compiled $(date +%T)"
for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml; do
  n=$(basename "$s" .yaml)
  timeout 120 "$API" "$s" 1000 >"$OUT/api_$n.txt" 2>&1
  echo "api_gpu $s: exit $?, $(tail -1 "$OUT/api_$n.txt")"
done
timeout 330 python3 -u bench/latency.py $ALL --batches "$(echo ${BATCHES:-256 1000} | tr ' ' ,)" --repeat 30 \
  --convgen "$NEW" >"$OUT/big.txt" 2>&1
echo "latency: exit $? $(date +%T)"
grep "^|" "$OUT/big.txt"
for s in $ALL; do for b in ${BATCHES:-256 1000}; do
  echo "== $s $b"; timeout 60 "$NEW" run "$s" --random-input 1 --images "$b" --batch "$b" --profile --whole off 2>&1 | grep -v "^Correct"
done; done >"$OUT/prof.txt" 2>&1
echo "profiles done $(date +%T)"
