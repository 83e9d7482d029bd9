#!/usr/bin/env bash
# planes1_gemv_device.sh — on an sm_90 GPU: planes at one image (planner.small_planes) and
# fc_gemv's defaults from 16 images on (4 images x 4 outputs a block) checked, sanitized and
# timed beside PREV (a binary from before them), every course and bench/specs network.
#
#   bash bench/scripts/planes1_gemv_device.sh NEW_CONVGEN PREV_CONVGEN
#
#   checks    the networks whose one-image kernels moved to planes (1), fc layers now under
#             gemv's new defaults (64, 256, 1,000)
#   sanitize  zoo-awkward at one image (planes in 16-map tiles on five layers)
#   times     every network at 1, 64 and 256 images; at 8 too where fc_gemv's split changed
#             its kernels
set -u
new=$1 prev=${2:-}
B=bench/specs
CHECKS="$B/zoo-7x7-large.yaml:1 $B/zoo-awkward.yaml:1 $B/zoo-squeeze.yaml:1 $B/zoo-stem96.yaml:1 $B/zoo-alex.yaml:1 \
$B/zoo-resnet-stem.yaml:1 $B/zoo-inception.yaml:1 $B/zoo-mobile.yaml:1 specs/ece408-2018fa.yaml:1 \
$B/zoo-vgg3x3.yaml:256 $B/zoo-mlp.yaml:64 specs/ece408-2018fa.yaml:64 $B/zoo-1x1.yaml:1000" \
SANITIZE="$B/zoo-awkward.yaml:1" \
TIMES="$(for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml $B/*.yaml; do
  case $(basename "$s" .yaml) in
    zoo-1x1|zoo-5x5-c64|zoo-7x7-large|zoo-awkward|zoo-k7pad|zoo-linear|zoo-odd|zoo-prime|zoo-stem96|zoo-wide3x3)
      echo "$s:1,8,64,256" ;;
    *) echo "$s:1,64,256" ;;
  esac
done)" \
REPEAT=${REPEAT:-20} bash bench/scripts/device_batch.sh "$new" "$prev"
