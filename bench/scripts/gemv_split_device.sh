#!/usr/bin/env bash
# gemv_split_device.sh — on an sm_90 GPU: fc_gemv's cluster split (a narrow fc at a small
# batch: the reduction over up to 8 blocks of a cluster) checked, sanitized and timed beside
# PREV (a binary from before it), then the tuner's view of the fc layers at 64 and 256
# images and of the slowest batch-1 convolutions, as CSV files and logs in OUT for the planner's rules.
#
#   OUT=DIR bash bench/scripts/gemv_split_device.sh NEW_CONVGEN PREV_CONVGEN
#
#   checks    layers-fc-odd (1, 7: float2 and single-float loads), zoo-awkward, zoo-7x7-large,
#             zoo-prime (1, 8), zoo-stem96 (8)
#   sanitize  zoo-awkward at 8 images (memcheck, racecheck)
#   times     zoo-awkward, zoo-7x7-large, zoo-stem96, zoo-prime, zoo-odd, zoo-5x5-c64 at 1, 8, 64
#   tune      `convgen tune --batch B --layers L --budget S --csv DIR/tune-NET-B.csv` (no record
#             kept: -o into a temporary directory) on zoo-mlp fc1,fc2; zoo-vgg3x3, ece408-2018fa,
#             ece408-2017, zoo-wide3x3, zoo-1x1's fc1 at 64 and 256; zoo-7x7-large conv2,
#             zoo-awkward conv3,conv4, zoo-squeeze conv2, zoo-stem96 stem at one image
set -u
new=$1 prev=${2:-}
out=${OUT:-$(mktemp -d)}
G=tests/gpu B=bench/specs
CHECKS="$G/layers-fc-odd.yaml:1 $G/layers-fc-odd.yaml:7 $B/zoo-awkward.yaml:1 $B/zoo-awkward.yaml:8 \
$B/zoo-7x7-large.yaml:1 $B/zoo-7x7-large.yaml:8 $B/zoo-prime.yaml:1 $B/zoo-prime.yaml:8 $B/zoo-stem96.yaml:8" \
SANITIZE="$B/zoo-awkward.yaml:8" \
TIMES="$B/zoo-awkward.yaml:1,8,64 $B/zoo-7x7-large.yaml:1,8,64 $B/zoo-stem96.yaml:1,8,64 $B/zoo-prime.yaml:1,8,64 \
$B/zoo-odd.yaml:1,8,64 $B/zoo-5x5-c64.yaml:1,8,64" \
REPEAT=${REPEAT:-20} bash bench/scripts/device_batch.sh "$new" "$prev"
fail=$?
[ "${TUNE:-1}" = 1 ] || exit $fail
rec=$(mktemp -d)
tune() {  # SPEC LAYERS BATCH BUDGET
  local n; n=$(basename "$1" .yaml)
  echo "== tune $n $2 batch $3"
  "$new" tune "$1" --layers "$2" --batch "$3" --budget "$4" -o "$rec/$n-$3.yaml" --csv "$out/tune-$n-$3.csv" \
    >"$out/tune-$n-$3.log" 2>&1 || echo "FAIL tune $n $2 $3"
  tail -n 6 "$out/tune-$n-$3.log"
}
for b in 64 256; do
  tune $B/zoo-mlp.yaml fc1,fc2 "$b" 30
  tune $B/zoo-vgg3x3.yaml fc1 "$b" 15
  tune specs/ece408-2018fa.yaml fc1 "$b" 15
  tune specs/ece408-2017.yaml fc1 "$b" 15
  tune $B/zoo-wide3x3.yaml fc1 "$b" 12
  tune $B/zoo-1x1.yaml fc1 "$b" 12
done
tune $B/zoo-7x7-large.yaml conv2 1 20
tune $B/zoo-awkward.yaml conv3,conv4 1 30
tune $B/zoo-squeeze.yaml conv2 1 15
tune $B/zoo-stem96.yaml stem 1 15
exit $fail
