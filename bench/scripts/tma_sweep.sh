#!/usr/bin/env bash
# tma_sweep.sh — conv2d_tma written on shapes beyond the shipped and zoo networks (no GPU needed):
# one-layer bf16 networks over C in {16, 24, 32, 40, 56, 64, 72, 136}, K 1/2/3/5/7 ("same" padding
# where K is odd), inputs 5x7, 13x11 and 30x30, M 8/32/96/200, no pool, 2x2 max and 2x2 average
# (every seventh of that grid), each generated for sm_90, built through NVRTC (`convgen build
# --arch 90`, its wall time a line, slowest first), and every sixth emulated on the CPU against the
# reference (build/tests/test_emulate).
#
#   bash bench/scripts/tma_sweep.sh [CONVGEN]     (default build/convgen; run from the repository root)
set -u
cg=${1:-build/convgen}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=0
for c in 16 24 32 40 56 64 72 136; do for k in 1 2 3 5 7; do for hw in "5 7" "13 11" "30 30"; do
  set -- $hw
  [ "$k" -gt "$1" ] && continue
  for m in 8 32 96 200; do for pool in none max2 avg2; do
    i=$((i + 1))
    [ $((i % 7)) -ne 0 ] && continue
    pl=""; [ $pool != none ] && pl=", pool: $pool"
    cat >"$dir/s$i-bf16-wg.yaml" <<EOT
network: s$i
input: {channels: $c, height: $1, width: $2, scale: 0.00392156862745098, offset: -0.5}
seed: $i
precision: bf16
layers:
  - {name: a, op: conv, M: $m, K: $k, padding: $(((k - 1) / 2)), bias: true, activation: relu$pl, strategy: tma}
  - {name: f, op: fc, out: 10}
EOT
  done; done
done; done; done
rc=0 n=0
for f in "$dir"/s*.yaml; do
  n=$((n + 1))
  s=$(date +%s.%N)
  "$cg" build "$f" --arch 90 -o "$dir/x.fatbin" >/dev/null 2>"$dir/err" || { echo "FAIL build $(basename "$f"): $(tail -1 "$dir/err")"; rc=1; }
  echo "$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') $(basename "$f")" >>"$dir/times"
  if [ $((n % 6)) -eq 1 ]; then
    CG_EMULATE_SPEC="$f" timeout 120 build/tests/test_emulate >"$dir/emu" 2>&1 || { echo "FAIL emulate $(basename "$f")"; grep FAIL "$dir/emu" | head -3; rc=1; }
  fi
done
echo "$n networks built; slowest (s, the whole network's kernels):"
sort -rn "$dir/times" | head -3
exit $rc
