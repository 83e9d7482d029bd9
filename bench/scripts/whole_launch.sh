#!/usr/bin/env bash
# whole_launch.sh — on a GPU machine: every course and zoo network at one and eight images, the
# whole-network kernel forced on inside its CUDA graph, forced on without graphs (a plain
# cooperative launch between events on the stream), and the per-layer kernels' graph; GPU µs,
# median of 100 (`convgen run SPEC --random-input 1 --images B --batch B --repeat 100 --json`).
# Where a network has no whole kernel for B, the first two columns time its per-layer kernels
# (in a graph, then without one). bench/RESULTS.md, "The whole-network kernel's launch".
#
#   bash bench/scripts/whole_launch.sh BIN
set -u
B=$1
t() { python3 -c "import json;print(round(json.load(open('$2'))['total_s']*1e6,1))" 2>/dev/null || echo NA; }
J=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
echo "spec batch whole-graph whole-nograph layers-graph"
for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/*.yaml; do
  for b in 1 8; do
    r() { "$B" run "$s" --random-input 1 --images $b --batch $b --repeat 100 "$@" --json "$J/j.json" >/dev/null 2>&1; t x "$J/j.json"; }
    echo "$(basename "$s" .yaml) $b $(r --whole on) $(r --whole on --no-graphs) $(r --whole off)"
  done
done
rm -rf "$J"
