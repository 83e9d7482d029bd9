#!/usr/bin/env bash
# prof_cells.sh — on a GPU: where the time goes in chosen (network, batch) cells: for each,
# `convgen run SPEC --random-input 1 --images B --batch B --repeat 20 --profile` (every
# kernel's time, the host's steps), one block of output a cell under a "=== SPEC B" line.
#
#   bash bench/scripts/prof_cells.sh CONVGEN [SPEC:B ...]
#
# Default cells: the 44 of bench/RESULTS.md's "Every network at 1 to 1,000 images" table
# below issue 30's 1.5x (2026-11-29), worst first. A spec named without a directory is
# looked up in bench/specs/, then specs/. PREC=bf16 (fp16, tf32): each spec's --auto copy at that
# precision (bench/compare.py's, its layers' strategies and params left out) instead of the spec.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
shift
cells=${*:-zoo-bigk:8 zoo-awkward:1 zoo-5x5-c64:1000 zoo-mlp:1000 zoo-mlp:64 zoo-5x5-c64:256 zoo-k7pad:8 \
zoo-mlp:256 zoo-7x7-large:1 zoo-stem96:1 ece408-2018sp:256 zoo-bigk:64 ece408-2018fa:64 zoo-awkward:8 zoo-k7pad:1 \
zoo-alex:8 zoo-vgg3x3:64 zoo-7x7-large:256 zoo-inception:8 zoo-linear:8 zoo-odd:1 zoo-squeeze:1 zoo-7x7-large:8 \
zoo-5x5-c64:64 zoo-7x7-large:1000 ece408-2017:256 zoo-k7pad:64 zoo-k7pad:256 zoo-linear:64 zoo-prime:1 zoo-alex:64 \
zoo-prime:8 zoo-alex:256 zoo-vgg3x3:8 zoo-1x1:8 zoo-5x5-c64:8 zoo-mlp:8 zoo-wide3x3:1000 zoo-7x7-large:64 \
zoo-bigk:256 zoo-odd:8 zoo-odd:256 zoo-bigk:1000 zoo-vgg3x3:256}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
for c in $cells; do
  s=$(cell_spec "${c%:*}") b=${c##*:}
  echo "=== $s $b ${PREC:-}"
  r=$s
  if [ -n "${PREC:-}" ]; then r=$(auto_copy "$s" "$PREC"); fi
  "$cg" run "$r" --random-input 1 --images "$b" --batch "$b" --repeat "${REPEAT:-20}" --profile 2>&1 |
    grep -v '^Op Time' || fail=1
  if [ "$r" != "$s" ]; then rm -f "$r"; fi
done
exit $fail
