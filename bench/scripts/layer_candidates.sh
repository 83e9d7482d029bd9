#!/usr/bin/env bash
# layer_candidates.sh — on a GPU: one layer's kernel under each of several strategies at
# a batch size, beside what auto gives it there (the kernel generated for the batch's
# bucket, checked against the CPU reference on CHECK images, default 64, then timed with
# the L2 flushed: `convgen kernel --repeat REPEAT`, default 10). One line a kernel:
# "spec layer b=B strategy: template params median".
#
#   bash bench/scripts/layer_candidates.sh CONVGEN "SPEC|LAYER|B" ...
#
# STRATEGIES (default "igemm_tc planes winograd igemm direct"): the strategies tried
# besides auto; a strategy the layer refuses prints convgen's one-line reason.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
shift
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for item in "$@"; do
  IFS='|' read -r sp l b <<<"$item"
  sp=$(cell_spec "$sp")
  for s in auto ${STRATEGIES:-igemm_tc planes winograd igemm direct}; do
    args=()
    [ "$s" = auto ] || args=(--strategy "$s")
    echo "$(basename "$sp" .yaml) $l b=$b $s: $(kernel_line "$cg" "$sp" "$l" "$b" "${CHECK:-64}" "${args[@]}")"
  done
done
