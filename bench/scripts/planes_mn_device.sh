#!/usr/bin/env bash
# planes_mn_device.sh — on an sm_90 GPU: 16-bit planes' tr=1 on 1x1 layers with the planes staged as
# they lie (mn=1, templates/lib/planes_half.lua: pixels innermost, wgmma's B transposed, 16-byte
# cp.async where the pixels align): planes_po_device.sh's checks of tests/gpu/layers-planes-mn-bf16-wg.yaml
# (7, 64 and 1,000 images, sanitizers at 64), then the 1x1 layers of 64 maps or more in bench/specs/
# (bf16 copies) under auto (igemm_wg), tr=1 (planes channels innermost) and tr=1 mn=1, checked and
# timed at 10,000 images. LAYERS and PARAMS as planes_po_device.sh takes them.
#
#   bash bench/scripts/planes_mn_device.sh CONVGEN
CHECK_SPEC=tests/gpu/layers-planes-mn-bf16-wg.yaml \
LAYERS=${LAYERS:-"bench/specs/zoo-1x1.yaml|expand bench/specs/zoo-1x1.yaml|reduce bench/specs/zoo-mobile.yaml|pw2 \
bench/specs/zoo-mobile.yaml|pw4 bench/specs/zoo-squeeze.yaml|conv4 bench/specs/zoo-deep512.yaml|conv4"} \
PARAMS=${PARAMS:-"tr=1,mn=0 tr=1,mn=1"} \
  bash "$(dirname "$0")/planes_po_device.sh" "$@"
