#!/usr/bin/env bash
# zoo_latency.sh — on a GPU: issue 30's table, every shipped course network and every
# bench/specs network at several batch sizes, convgen's GPU time beside PyTorch FP32
# eager and its CUDA graph (torch.compile is left to latency.py --compile-batches: it
# takes minutes a network).
#
#   bash bench/scripts/zoo_latency.sh CONVGEN [SPEC...]
#
# First every (spec, batch) is run once, twelve at a time, so that the JIT cache
# ($XDG_CACHE_HOME) holds every bucket's kernels before anything is timed; then
# `python3 bench/latency.py SPEC... --batches $BATCHES --repeat $REPEAT` (defaults
# 1,8,64,256,1000 and 20), which prints a line per network and batch as it goes.
set -u
cg=$1
shift
specs=${*:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml $(ls bench/specs/*.yaml)}
BATCHES=${BATCHES:-1,8,64,256,1000}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
t0=$(date +%s)
for s in $specs; do
  for b in ${BATCHES//,/ }; do echo "$s $b"; done
done | xargs -P 12 -n 2 sh -c '"$0" run "$1" --random-input 1 --images "$2" --repeat 1 >/dev/null 2>&1 ||
  echo "FAIL warm-up $1 $2"' "$cg"
echo "kernels compiled in $(($(date +%s) - t0)) s"
python3 bench/latency.py $specs --batches "$BATCHES" --repeat "${REPEAT:-20}" --convgen "$cg"
