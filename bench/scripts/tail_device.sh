#!/usr/bin/env bash
# tail_device.sh — on a GPU: the small-batch tail (templates/ops/tail.lua: the last
# fc, the softmax and the predictions in one kernel at buckets up to 64) checked,
# then whole networks timed at one and eight images beside PyTorch FP32.
#
#   bash bench/scripts/tail_device.sh NEW_CONVGEN PREV_CONVGEN [SPEC...]
#
# `convgen check` (every layer against the CPU reference, tensors NaN-poisoned) at
# --batch 1, 7 and 8 on each SPEC and on tests/gpu/layers-tail.yaml (a network
# ending in an fc); compute-sanitizer memcheck and racecheck at one image on the
# first SPEC; then `python3 bench/latency.py SPEC... --batches 1,8 --baseline PREV`.
set -u
new=$1 prev=$2
shift 2
specs=${*:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
for s in $specs tests/gpu/layers-tail.yaml; do
  for b in 1 7 8; do
    if "$new" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then echo "ok   check $s $b"
    else echo "FAIL check $s $b"; tail -4 "$log"; fail=1; fi
  done
done
first=${specs%% *}
for tool in memcheck racecheck; do
  if compute-sanitizer --tool "$tool" --error-exitcode 9 "$new" run "$first" --random-input 1 --images 1 --batch 1 \
      --whole off >"$log" 2>&1; then echo "ok   $tool $first 1"
  else echo "FAIL $tool $first 1"; grep -m3 -E "ERROR|Invalid|hazard|rror" "$log"; fail=1; fi
done
python3 bench/latency.py $specs --batches 1,8 --repeat ${REPEAT:-100} --convgen "$new" --baseline "$prev" || fail=1
rm -f "$log"
exit $fail
