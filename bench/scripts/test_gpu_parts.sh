#!/usr/bin/env bash
# test_gpu_parts.sh — on a GPU machine: make test-gpu's checks (tests/gpu/run.sh)
# in parts side by side, each with its own JIT cache and log, then one summary
# line per part and the total. The parts: each shipped classifier (the specs
# models/accuracy.txt lists: its trained weights, the Fashion-MNIST test set),
# the layer networks (tests/gpu/layers-*.yaml and two zoo networks, random
# pixels), and the other shipped specs (specs/example-conv.yaml), which
# run.sh's full run only checks layer by layer: here too, as run.sh does.
#
#   bash bench/scripts/test_gpu_parts.sh [OUTDIR]
#
# Needs what run.sh needs (build/convgen, build/tests/gpu/api_gpu, the libraries);
# CONVGEN_DATA points at the IDX files where Debian's dataset is not installed.
set -u
out=${1:-.}
parts=(layers $(awk '$1 !~ /^#/ && NF {print $1}' models/accuracy.txt))
others=(); for s in specs/*.yaml; do grep -q "^$(basename "$s" .yaml) " models/accuracy.txt || others+=("$s"); done
cg=${CONVGEN:-build/convgen}
data=(); [ -n "${CONVGEN_DATA:-}" ] && data=(--data "$CONVGEN_DATA")
( p=0 f=0
  for s in "${others[@]}"; do
    for args in "--random-input 1 --seed 3" "--random-input 2 --seed 4" ""; do
      # shellcheck disable=SC2086
      if "$cg" check "$s" --images 333 $args "${data[@]}" >/dev/null 2>&1; then p=$((p+1)); echo "ok   $s check $args"
      else f=$((f+1)); echo "FAIL $s check $args"; fi
    done
  done
  echo "test-gpu: $p passed, $f failed" ) >"$out/gpu-others.log" 2>&1 &
others_pid=$!
pids=()
for p in "${parts[@]}"; do
  CONVGEN_NETS=$p bash tests/gpu/run.sh >"$out/gpu-$p.log" 2>&1 &
  pids+=($!)
done
total_p=0 total_f=0
pids+=("$others_pid") parts+=(others)  # the checks above: the last part
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
