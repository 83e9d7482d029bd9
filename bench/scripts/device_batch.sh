#!/usr/bin/env bash
# device_batch.sh — on a GPU: one call's worth of checks, sanitizer runs, single-kernel
# timings and whole-network timings, each list given by the caller.
#
#   CHECKS="SPEC:B ..." SANITIZE="SPEC:B ..." KERNELS="SPEC|LAYER|STRATEGY|PARAMS|B ..." \
#   TIMES="SPEC:B,B ..." bash bench/scripts/device_batch.sh NEW_CONVGEN [PREV_CONVGEN]
#
#   CHECKS    `convgen check SPEC --random-input 1 --images B --batch B` (every layer against
#             the CPU reference, tensors NaN-poisoned; both paths where a whole kernel exists)
#   SANITIZE  compute-sanitizer memcheck and racecheck of `convgen run` at B images
#   KERNELS   `convgen kernel SPEC --layer LAYER --strategy STRATEGY [--params PARAMS] --batch B`
#             (checked, then timed with the L2 flushed; PARAMS "-" for the defaults)
#   TIMES     `python3 bench/latency.py SPEC --batches B,B --baseline PREV` (PyTorch eager and
#             CUDA graph beside both binaries)
# Every line of the first three starts with ok or FAIL; the exit status is 1 if any failed.
set -u
new=$1 prev=${2:-}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
for sb in ${CHECKS:-}; do
  s=${sb%%:*} b=${sb#*:}
  if "$new" check "$s" --random-input 1 --images "$b" --batch "$b" >"$log" 2>&1; then
    echo "ok   check $s $b$(grep -m1 -o 'worst.*' "$log" | sed 's/^/: /')"
  else echo "FAIL check $s $b"; tail -6 "$log"; fail=1; fi
done
for sb in ${SANITIZE:-}; do
  s=${sb%%:*} b=${sb#*:}
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$new" run "$s" --random-input 1 --images "$b" --batch "$b" \
        >"$log" 2>&1; then echo "ok   $tool $s $b"
    else echo "FAIL $tool $s $b"; grep -m3 -E "ERROR|Invalid|hazard|rror" "$log"; fail=1; fi
  done
done
for k in ${KERNELS:-}; do
  IFS='|' read -r s layer st params b <<<"$k"
  args=(kernel "$s" --layer "$layer" --strategy "$st" --batch "$b" --repeat 20)
  [ "$params" != "-" ] && args+=(--params "$params")
  if "$new" "${args[@]}" >"$log" 2>&1; then
    echo "ok   kernel $s $layer $st $params batch $b: $(grep -m1 '^layer' "$log" | sed 's/.*params //') |" \
      "$(grep -m1 'median' "$log" | sed 's/^ *//')"
  else echo "FAIL kernel $s $layer $st $params batch $b"; tail -3 "$log"; fail=1; fi
done
base=()
[ -n "$prev" ] && base=(--baseline "$prev")
for sb in ${TIMES:-}; do
  python3 bench/latency.py "${sb%%:*}" --batches "${sb#*:}" --repeat "${REPEAT:-50}" --convgen "$new" "${base[@]}" \
    2>&1 | grep -v '^$' | grep -v '^|' || fail=1
done
rm -f "$log"
exit $fail
