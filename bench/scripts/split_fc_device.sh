#!/usr/bin/env bash
# split_fc_device.sh — on an sm_90 GPU: the wider split rule (planner.split_of's divisors
# past the powers of two, up to SPLIT_MAX_WIDE) and fc layers on tensor cores (fc_tc,
# fc_wg) checked and timed, beside PREV (a binary from before them).
#
#   bash bench/scripts/split_fc_device.sh NEW_CONVGEN PREV_CONVGEN
#
# Through bench/scripts/device_batch.sh:
#   checks    layers-fc-tc (7, 64, 1000: the split at the 1,024 bucket), layers-fc-wg and
#             layers-fc-bf16-wg (64), layers-planes-bf16-wg (1000), layers-splitk (1), the
#             networks whose splits changed: zoo-bigk, zoo-k7pad, zoo-alex (8), zoo-odd (1)
#   sanitize  layers-fc-tc (7)
#   kernels   zoo-mlp's fc2 (2048 -> 2048) under tc, vec and gemv at 256 images, tc and vec
#             at 1,000 and 10,000; its fc1 (784 -> 2048) at 1,000; ece408-2017's fc1 (7,200
#             -> 500) at 10,000; zoo-5x5-c64's fc1 (15,488 -> 10) under tc and gemv at 256
#   times     the networks whose splits changed, at 1, 8, 64 (ece408-2018fa at 1, 8; zoo-odd at 1)
# With FC_TIMES=1 instead: zoo-mlp at 256 and 1,000, ece408-2017 and -2018fa at 10,000, and
# zoo-mlp, zoo-vgg3x3, zoo-wide3x3, zoo-1x1 at 10,000 (where planner.AUTO_FC_TC_MIN_BATCH
# gives fc layers to fc_tc).
set -u
new=$1 prev=${2:-}
G=tests/gpu B=bench/specs
if [ "${FC_TIMES:-0}" = 1 ]; then
  CHECKS="$B/zoo-mlp.yaml:256 $B/zoo-mlp.yaml:1000" \
  TIMES="$B/zoo-mlp.yaml:256,1000,10000 specs/ece408-2017.yaml:10000 specs/ece408-2018fa.yaml:10000 \
$B/zoo-vgg3x3.yaml:10000 $B/zoo-wide3x3.yaml:10000 $B/zoo-1x1.yaml:10000" \
  REPEAT=${REPEAT:-20} bash bench/scripts/device_batch.sh "$new" "$prev"
  exit $?
fi
CHECKS="$G/layers-fc-tc.yaml:7 $G/layers-fc-tc.yaml:64 $G/layers-fc-tc.yaml:1000 $G/layers-fc-wg.yaml:64 \
$G/layers-fc-bf16-wg.yaml:64 $G/layers-planes-bf16-wg.yaml:1000 $G/layers-splitk.yaml:1 $B/zoo-bigk.yaml:8 \
$B/zoo-k7pad.yaml:8 $B/zoo-alex.yaml:8 $B/zoo-odd.yaml:1" \
SANITIZE="$G/layers-fc-tc.yaml:7" \
KERNELS="$B/zoo-mlp.yaml|fc2|tc|-|256 $B/zoo-mlp.yaml|fc2|vec|-|256 $B/zoo-mlp.yaml|fc2|gemv|-|256 \
$B/zoo-mlp.yaml|fc2|tc|-|1000 $B/zoo-mlp.yaml|fc2|vec|-|1000 $B/zoo-mlp.yaml|fc2|tc|-|10000 \
$B/zoo-mlp.yaml|fc2|vec|-|10000 $B/zoo-mlp.yaml|fc1|tc|-|1000 $B/zoo-mlp.yaml|fc1|vec|-|1000 \
specs/ece408-2017.yaml|fc1|tc|-|10000 specs/ece408-2017.yaml|fc1|vec|-|10000 \
$B/zoo-5x5-c64.yaml|fc1|tc|-|256 $B/zoo-5x5-c64.yaml|fc1|gemv|-|256" \
TIMES="$B/zoo-bigk.yaml:1,8,64 $B/zoo-k7pad.yaml:1,8,64 $B/zoo-alex.yaml:1,8,64 specs/ece408-2018fa.yaml:1,8 \
$B/zoo-odd.yaml:1" \
REPEAT=${REPEAT:-20} bash bench/scripts/device_batch.sh "$new" "$prev"
