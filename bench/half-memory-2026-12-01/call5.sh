#!/usr/bin/env bash
# Call 5: tests/gpu/layers-direct-pair-bf16.yaml checked (7 and 1,000 images) and sanitized (64), then
# 16-bit direct with more columns a thread (pairs stored) on the zoo's first layers and zoo-squeeze's
# 128 -> 3 layer (bf16 copies, `convgen kernel`, 10,000 images, L2 flushed, median of 10).
#   bash bench/half-memory-2026-12-01/call5.sh NEW CUR
set -u
. bench/scripts/cell_spec.sh
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
for b in 7 1000; do spec_check "$1" tests/gpu/layers-direct-pair-bf16.yaml $b; done
spec_sanitize "$1" tests/gpu/layers-direct-pair-bf16.yaml 64
SKIP_CHECKS=1 LAYERS=" " ONES=" " EXTRA="zoo-squeeze|conv1|direct|cols=2 zoo-squeeze|conv1|direct|cols=2,maps_unroll=16 \
zoo-5x5-c64|conv1|direct|cols=2 zoo-1x1|conv1|direct|cols=2 zoo-vgg-same|conv1_1|direct|cols=2 \
zoo-vgg-same|conv1_1|direct|cols=4 zoo-residual|stem|direct|cols=4 zoo-wide3x3|conv1|direct|cols=2 \
zoo-vgg3x3|conv1|direct|cols=2 zoo-deep512|conv1|direct|cols=2 zoo-deep512|conv1|direct|cols=4 \
zoo-squeeze|conv3|direct|cols=4,cl=1 zoo-squeeze|conv3|direct|cols=5,cl=1 \
zoo-squeeze|conv3|direct|block=1024,maps_unroll=3,cols=5,cl=1 zoo-squeeze|conv3|direct|block=1024,cols=4,cl=1" \
  bash bench/scripts/tr_store_device.sh "$1" "$2"
