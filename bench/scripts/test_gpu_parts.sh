#!/usr/bin/env bash
# test_gpu_parts.sh — on a GPU machine: make test-gpu's checks (tests/gpu/run.sh)
# in parts side by side, each with its own JIT cache and log, then one summary
# line per part and the total. The parts: each shipped network (specs/*.yaml,
# its trained weights, the Fashion-MNIST test set) and the layer networks
# (tests/gpu/layers-*.yaml and two zoo networks, random pixels).
#
#   bash bench/scripts/test_gpu_parts.sh [OUTDIR]
#
# Needs what run.sh needs (build/convgen, build/tests/gpu/api_gpu, the libraries);
# CONVGEN_DATA points at the IDX files where Debian's dataset is not installed.
set -u
out=${1:-.}
parts=(layers $(for s in specs/*.yaml; do basename "$s" .yaml; done))
pids=()
for p in "${parts[@]}"; do
  CONVGEN_NETS=$p bash tests/gpu/run.sh >"$out/gpu-$p.log" 2>&1 &
  pids+=($!)
done
total_p=0 total_f=0
for i in "${!parts[@]}"; do
  wait "${pids[$i]}"
  line=$(grep -E '^test-gpu: [0-9]+ passed, [0-9]+ failed' "$out/gpu-${parts[$i]}.log" | tail -1)
  echo "${parts[$i]}: ${line:-no summary line}"
  grep '^FAIL' "$out/gpu-${parts[$i]}.log" | head -5
  read -r p f < <(sed -n 's/^test-gpu: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' <<<"$line")
  total_p=$((total_p + ${p:-0})) total_f=$((total_f + ${f:-1}))
done
echo "test-gpu (in parts): $total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
