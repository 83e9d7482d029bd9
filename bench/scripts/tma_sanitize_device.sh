#!/usr/bin/env bash
# tma_sanitize_device.sh — compute-sanitizer on conv2d_tma's kernels (sm_90 GPU): racecheck and
# synccheck of one-layer networks of its forms (2 or 8 stages, the producer's registers given up or
# not: rn), racecheck of one-layer copies of each tma layer of tests/gpu/layers-tma-bf16-wg.yaml,
# then racecheck of that whole network with convgen's options as given: default (programmatic
# dependent launch on), --no-cache, --profile and --no-pdl; finally the fp16 auto copies of the zoo
# networks tma changes, checked at 1,100 images. One line a run: the tool, the spec, its status and
# the sanitizer's summary.
#
#   bash bench/scripts/tma_sanitize_device.sh CONVGEN
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
one() {   # one NAME C H W LAYER: a network of that layer and an fc on a C x H x W input
  cat >"$dir/$1.yaml" <<EOT
network: $1
input: {channels: $2, height: $3, width: $4, scale: 0.00392156862745098, offset: -0.5}
seed: 5
precision: bf16
layers:
  - $5
  - {name: f, op: fc, out: 10}
EOT
}
base="name: a, op: conv, M: 64, K: 3, padding: 1, bias: true, activation: relu, strategy: tma"
tile="bm: 64, mw: 1, ping: 1, bw: 8, bh: 8, bi: 1"
one st2 64 8 8 "{$base, params: {$tile, st: 2}}"
one st2-r0 64 8 8 "{$base, params: {$tile, st: 2, rn: 0}}"
one st8-r0 64 8 8 "{$base, params: {$tile, st: 8, rn: 0}}"
one st8 64 8 8 "{$base, params: {$tile, st: 8}}"
one c 64 12 10 "{name: c, op: conv, M: 96, K: 3, padding: 1, bias: true, activation: tanh, pool: max2, strategy: tma, params: {bm: 128, mw: 2, ping: 0, bw: 8, bh: 8, bi: 4, st: 3}}"
one d 96 6 5 "{name: d, op: conv, M: 72, K: 2, strategy: tma, params: {bm: 64, mw: 1, ping: 1, bw: 8, bh: 8, bi: 1, st: 4}}"
one e 72 5 4 "{name: e, op: conv, M: 256, K: 3, padding: 1, bias: true, activation: relu, strategy: tma}"
one h 64 2 2 "{name: h, op: conv, M: 136, K: 3, padding: 1, bias: true, activation: tanh, pool: avg2, strategy: tma, params: {bm: 128, mw: 1, ping: 0, bw: 8, bh: 4, bi: 4, st: 2}}"
san() {   # san TOOL SPEC [OPTION]
  timeout 120 compute-sanitizer --tool "$1" --error-exitcode 9 "$cg" run "$2" --random-input 1 --images 7 ${3:-} \
    >"$dir/log" 2>&1
  local rc=$?
  echo "$1 $(basename "$2") ${3:-} rc=$rc $(grep -E "SUMMARY|didn't terminate" "$dir/log" | tr '\n' ' ')"
}
for s in st2 st2-r0 st8-r0 st8; do
  spec_check "$cg" "$dir/$s.yaml" 7
  san racecheck "$dir/$s.yaml"
  san synccheck "$dir/$s.yaml"
done
for s in c d e h; do san racecheck "$dir/$s.yaml"; done
for o in "" --no-cache --profile --no-pdl; do san racecheck tests/gpu/layers-tma-bf16-wg.yaml "$o"; done
for n in zoo-vgg-same zoo-deep512 zoo-wide3x3; do
  c=$(auto_copy "$(cell_spec "$n")" fp16)
  STEP_TIMEOUT=150 spec_check "$cg" "$c" 1100
  rm -f "$c"
done
