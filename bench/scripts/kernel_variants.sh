#!/usr/bin/env bash
# kernel_variants.sh — on a GPU: layers' kernels under given strategies and parameters,
# each checked against the CPU reference on CHECK images (default 16) and timed with the
# L2 flushed (`convgen kernel --repeat REPEAT`, default 10). LIST has one variant a line,
#   SPEC|LAYER|B|LABEL|ARGS
# ARGS: `convgen kernel` options (empty: the kernel auto generates for B's bucket). One
# output line a variant: "spec layer b=B LABEL: template params median". Lines starting
# with # are skipped. DEADLINE (seconds, default none): stop starting variants after it.
#
#   bash bench/scripts/kernel_variants.sh CONVGEN LIST
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
list=$2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
while IFS='|' read -r sp l b label args; do
  case $sp in ''|'#'*) continue ;; esac
  if [ -n "${DEADLINE:-}" ] && [ $(($(date +%s) - start)) -ge "$DEADLINE" ]; then
    echo "# deadline of ${DEADLINE} s reached: the rest not run"
    break
  fi
  sp=$(cell_spec "$sp")
  # shellcheck disable=SC2086  # ARGS are words
  echo "$(basename "$sp" .yaml) $l b=$b $label: $(kernel_line "$cg" "$sp" "$l" "$b" "${CHECK:-16}" $args)"
done <"$list"
