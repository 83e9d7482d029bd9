#!/usr/bin/env bash
# launch_ways_device.sh — on a GPU: whole networks at the (network, batch) cells given, GPU time
# of a new convgen binary beside a previous one and PyTorch FP32 (eager, CUDA graph), in one
# process per network: `python3 bench/latency.py SPEC --batches B1,B2,... --repeat R --convgen NEW
# --baseline PREV`. Written for auto's choice between overlapped and plain launches (NEW) against
# overlapped launches always (PREV); the table's path column says "plain" where auto kept plain
# launches.
#
#   bash bench/scripts/launch_ways_device.sh NEW PREV [SPEC:B ...]      (R: REPEAT, default 20)
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 prev=$2
shift 2
cells=${*:-ece408-2017:256 ece408-2018sp:256 ece408-2018fa:64 zoo-bigk:8 zoo-k7pad:8 zoo-alex:64}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
declare -A batches
order=()
for c in $cells; do
  s=$(cell_spec "${c%:*}")
  [ -z "${batches[$s]:-}" ] && order+=("$s")
  batches[$s]="${batches[$s]:+${batches[$s]},}${c##*:}"
done
fail=0
for s in "${order[@]}"; do
  python3 bench/latency.py "$s" --batches "${batches[$s]}" --repeat "${REPEAT:-20}" --convgen "$new" \
    --baseline "$prev" 2>&1 | grep -E '^\| [a-z0-9]| batch [0-9]+: convgen|Error' | grep -v '^| network' || fail=1
done
exit $fail
