#!/usr/bin/env bash
# launch_modes.sh — on a GPU: one network's GPU time at one batch under each way of launching
# its kernels, to see what the launch path costs where a profile (per-kernel events, no
# programmatic dependent launch) ran faster than the plain run. For each cell SPEC:B and
# each mode, `convgen run SPEC --random-input 1 --images B --repeat R --json F [FLAGS]`
# and its `total_s` (median GPU time of the whole call, µs). MODES: a list of flag sets
# separated by '|' (an empty one: the default), by default
#   (default)            what a user gets
#   --pdl-always         PDL wherever a grid has at most one block a multiprocessor
#   --no-pdl             every kernel launched after the one before completes
#   --no-graphs          stream launches (PDL as default)
#   --no-graphs --no-pdl
#   --profile            events between every two kernels, no PDL
# (before auto's choice of launch ways, the default was --pdl-always's behaviour.)
#
#   bash bench/scripts/launch_modes.sh CONVGEN [SPEC:B ...]      (R: REPEAT, default 50)
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
shift
cells=${*:-ece408-2018sp:256 ece408-2017:256 zoo-bigk:8 zoo-k7pad:8 zoo-odd:256 zoo-mlp:256}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
tmp=$(mktemp -d)
modes=${MODES-"|--pdl-always|--no-pdl|--no-graphs|--no-graphs --no-pdl|--profile"}
IFS='|' read -r -a mode_list <<<"$modes"
head="| network | batch |" rule="|---|---|"
for m in "${mode_list[@]}"; do head="$head ${m:-default} |" rule="$rule---|"; done
echo "$head"
echo "$rule"
for c in $cells; do
  s=$(cell_spec "${c%:*}") b=${c##*:}
  "$cg" run "$s" --random-input 1 --images "$b" --repeat 3 >/dev/null 2>&1   # fill the JIT cache
  row="| $(basename "$s" .yaml) | $b |"
  for m in "${mode_list[@]}"; do
    # shellcheck disable=SC2086
    if "$cg" run "$s" --random-input 1 --images "$b" --repeat "${REPEAT:-50}" --json "$tmp/r.json" $m \
      >"$tmp/log" 2>&1; then
      row="$row $(python3 -c "import json,sys; j=json.load(open(sys.argv[1]))
print('%.1f%s' % (j['total_s'] * 1e6, ' (plain)' if j.get('launch') == 'plain' and j.get('plain_ms') is not None else ''))" "$tmp/r.json") |"
    else
      row="$row failed: $(tail -1 "$tmp/log") |"
    fi
  done
  echo "$row"
done
rm -rf "$tmp"
