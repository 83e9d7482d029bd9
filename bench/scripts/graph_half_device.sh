#!/usr/bin/env bash
# graph_half_device.sh — on an sm_90 GPU: what was written and tested on the CPU only
# (the emulation, the fake driver) checked and timed: concat inputs written in place
# (manifest views), check's isolated verdicts for layers not fp32, fc_gemv's rows at 8
# images and more, and conv2d_planes for 16-bit tensors (lib/planes_half.lua).
#
#   bash bench/scripts/graph_half_device.sh NEW_CONVGEN PREV_CONVGEN
#
# Through bench/scripts/device_batch.sh:
#   checks    layers-concat (1, 7, 64), layers-concat-fp16 (64), layers-concat-wg (7, 64: slices
#             written by igemm_wg, planes, winograd, slide), -bf16-wg (64), layers-splitk and
#             -splitk-pool (1), -splitk8-tc (8: splitk_reduce writing slices), zoo-inception (1, 7, 64),
#             layers-graph (7); layers-bf16-wg, layers-bf16, layers-fp16, layers-tf32 (64:
#             the isolated pass); layers-planes-bf16-wg and -fp16-wg (7, 64, 1000); zoo-mlp (64)
#   sanitize  layers-concat (7), layers-concat-wg (7), layers-planes-bf16-wg (64)
#   kernels   zoo-mlp's fc2 under gemv at 64 images with the new rows and the old (rows=1);
#             bf16 copies of zoo-vgg-same's conv1_2 (64 -> 64 maps, 32x32) and conv2_2
#             (128 -> 128, 16x16) and zoo-wide3x3's conv3 under planes and igemm_wg, 10,000
#             images (the copies written to $TMP as .planes-bf16-NAME.yaml)
#   times     zoo-inception at 1, 8, 64; zoo-mlp at 8, 64 (beside PREV and PyTorch)
set -u
new=$1 prev=${2:-}
T=${TMPDIR:-/tmp}
for n in zoo-vgg-same zoo-wide3x3; do
  sed "s/^network: .*/&\nprecision: bf16/" "bench/specs/$n.yaml" | grep -v '^weights:' >"$T/.planes-bf16-$n.yaml"
done
G=tests/gpu B=bench/specs V=$T/.planes-bf16-zoo-vgg-same.yaml W=$T/.planes-bf16-zoo-wide3x3.yaml
CHECKS="$G/layers-concat.yaml:1 $G/layers-concat.yaml:7 $G/layers-concat.yaml:64 $G/layers-concat-fp16.yaml:64 \
$G/layers-concat-wg.yaml:7 $G/layers-concat-wg.yaml:64 $G/layers-concat-bf16-wg.yaml:64 \
$G/layers-splitk.yaml:1 $G/layers-splitk-pool.yaml:1 $G/layers-splitk8-tc.yaml:8 \
$B/zoo-inception.yaml:1 $B/zoo-inception.yaml:7 $B/zoo-inception.yaml:64 $G/layers-graph.yaml:7 \
$G/layers-bf16-wg.yaml:64 $G/layers-bf16.yaml:64 $G/layers-fp16.yaml:64 $G/layers-tf32.yaml:64 \
$G/layers-planes-bf16-wg.yaml:7 $G/layers-planes-bf16-wg.yaml:64 $G/layers-planes-bf16-wg.yaml:1000 \
$G/layers-planes-fp16-wg.yaml:64 $B/zoo-mlp.yaml:64" \
SANITIZE="$G/layers-concat.yaml:7 $G/layers-concat-wg.yaml:7 $G/layers-planes-bf16-wg.yaml:64" \
KERNELS="$B/zoo-mlp.yaml|fc2|gemv|-|64 $B/zoo-mlp.yaml|fc2|gemv|ib=8,rows=1|64 \
$V|conv1_2|planes|-|10000 $V|conv1_2|igemm_wg|-|10000 $V|conv2_2|planes|-|10000 $V|conv2_2|igemm_wg|-|10000 \
$W|conv3|planes|-|10000 $W|conv3|igemm_wg|-|10000" \
TIMES="$B/zoo-inception.yaml:1,8,64 $B/zoo-mlp.yaml:8,64" \
  bash bench/scripts/device_batch.sh "$new" "$prev"
rc=$?
rm -f "$T/.planes-bf16-zoo-vgg-same.yaml" "$T/.planes-bf16-zoo-wide3x3.yaml"
exit $rc
