#!/usr/bin/env bash
# fc_mma_ws_device.sh — on an sm_90 GPU: fc_mma's warp-specialized loop (ws=1: a warpgroup that
# only copies, warpgroups that only multiply, stages handed over by mbarriers) against the loop
# where every thread copies and multiplies (ws=0), on 16-bit fc layers at 10,000 images.
#
#   bash bench/scripts/fc_mma_ws_device.sh NEW [OLD]
#
# (NEW: a binary built with bench/fc-mma-ws-2026-11-30/fc-mma-ws.patch applied; the template
# change was dropped, see bench/RESULTS.md.)
# 1. `convgen check` of bench/fc-mma-ws-2026-11-30/layers-fc-mma-ws-bf16-wg.yaml at 7, 64 and 1,000 images,
#    compute-sanitizer memcheck and racecheck at 64 (NEW);
# 2. each "spec|layer" of LAYERS (default: the bf16 fc layers of the course networks, zoo-mlp and
#    zoo-vgg-same), a bf16 copy under auto: NEW under each of PARAMS (default "ws=0 ws=1
#    ws=1,st=3 ws=1,bk=32,st=8"), then OLD under its own default: `convgen kernel --strategy mma
#    --repeat 10 --check-images 16` (checked on 16 images, then timed with the L2 flushed; the
#    median). One line each: layer, binary, params, median ms.
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 old=${2:-}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
t=bench/fc-mma-ws-2026-11-30/layers-fc-mma-ws-bf16-wg.yaml
for n in 7 64 1000; do spec_check "$new" "$t" "$n"; done
spec_sanitize "$new" "$t" 64
for item in ${LAYERS:-bench/specs/zoo-mlp.yaml\|fc1 bench/specs/zoo-mlp.yaml\|fc2 bench/specs/zoo-mlp.yaml\|fc3 \
specs/ece408-2017.yaml\|fc1 specs/ece408-2018sp.yaml\|fc1 specs/ece408-2018fa.yaml\|fc1 bench/specs/zoo-vgg-same.yaml\|fc1}; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  name=$(basename "$sp" .yaml)-$l
  run() {
    local r
    r=$("$@" --repeat "${REPEAT:-10}" --check-images 16 2>&1)
    echo "$(echo "$r" | grep -oE 'params [^ ]+( [a-z]+=[^ ]+)*' | head -1) | $(echo "$r" | grep -oE 'median [0-9.]+ ms|WRONG.*|convgen:.*' | head -1)"
  }
  for p in ${PARAMS:-ws=0 ws=1 ws=1,st=3 ws=1,bk=32,st=8}; do
    echo "$name new $p: $(run "$new" kernel "$c" --layer "$l" --strategy mma --params "$p")"
  done
  [ -n "$old" ] && echo "$name old default: $(run "$old" kernel "$c" --layer "$l" --strategy mma)"
  rm -f "$c"
done
