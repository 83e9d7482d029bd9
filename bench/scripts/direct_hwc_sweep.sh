#!/usr/bin/env bash
# direct_hwc_sweep.sh — conv2d_direct's channels-last store (T.hwc_out_ok) on shapes beyond the shipped
# and zoo networks (no GPU needed): two-layer bf16 networks, a direct layer of C in {1, 2, 3, 4, 8}
# channels, M 16/32/48/64/96/128 maps, K 1/3/5 (valid, or "same" padding every other), no pool, 2x2 max
# or 2x2 average, on inputs 7x9, 14x18 and 31x29, then a 3x3 layer written tma that reads it (every
# fifth of that grid). Each is generated for sm_90 (a line saying whether the direct layer stored
# channels-last), built through NVRTC (`convgen build --arch 90`, its wall time a line, slowest first)
# and every fourth emulated on the CPU against the reference (build/tests/test_emulate).
#
#   bash bench/scripts/direct_hwc_sweep.sh [CONVGEN]     (default build/convgen; run from the repository root)
set -u
cg=${1:-build/convgen}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=0
for c in 1 2 3 4 8; do for m in 16 32 48 64 96 128; do for k in 1 3 5; do for hw in "7 9" "14 18" "31 29"; do
  set -- $hw
  for pool in none max2 avg2; do
    i=$((i + 1))
    [ $((i % 5)) -ne 0 ] && continue
    pl=""; [ $pool != none ] && pl=", pool: $pool"
    pad=0; [ $((i % 2)) -eq 0 ] && pad=$(((k - 1) / 2))
    cat >"$dir/d$i-bf16-wg.yaml" <<EOT
network: d$i
input: {channels: $c, height: $1, width: $2, scale: 0.00392156862745098, offset: -0.5}
seed: $i
precision: bf16
layers:
  - {name: a, op: conv, M: $m, K: $k, padding: $pad, bias: true, activation: relu$pl, strategy: direct}
  - {name: b, op: conv, M: 64, K: 3, padding: 1, activation: tanh, strategy: tma}
  - {name: f, op: fc, out: 10}
EOT
  done
done; done; done; done
rc=0 n=0 hwc=0
for f in "$dir"/d*.yaml; do
  n=$((n + 1))
  rm -rf "$dir/g"
  if "$cg" generate "$f" -o "$dir/g" --arch 90 >/dev/null 2>"$dir/err"; then
    grep -q "^kernel conv2d_direct.*_hwc_bf16 " "$dir/g/manifest.txt" && hwc=$((hwc + 1))
  else echo "FAIL generate $(basename "$f"): $(tail -1 "$dir/err")"; rc=1; continue; fi
  s=$(date +%s.%N)
  "$cg" build "$f" --arch 90 -o "$dir/x.fatbin" >/dev/null 2>"$dir/err" || { echo "FAIL build $(basename "$f"): $(tail -1 "$dir/err")"; rc=1; }
  echo "$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') $(basename "$f")" >>"$dir/times"
  if [ $((n % 4)) -eq 1 ]; then
    CG_EMULATE_SPEC="$f" timeout 120 build/tests/test_emulate >"$dir/emu" 2>&1 || { echo "FAIL emulate $(basename "$f")"; grep FAIL "$dir/emu" | head -3; rc=1; }
  fi
done
echo "$n networks generated, $hwc with the direct layer storing channels-last; slowest builds (s, the whole network's kernels):"
sort -rn "$dir/times" | head -3
exit $rc
