#!/usr/bin/env bash
# new_ops_device.sh — on a GPU machine: the kernels of graph networks (add,
# concat), batch norm, per-channel input normalization, padded pools, grouped and
# depthwise convolutions, relu6 and sigmoid, checked against the CPU reference.
#
#   bash bench/scripts/new_ops_device.sh CONVGEN [SPEC...]
#
# For each spec (default: the layer networks that exercise those ops and the zoo
# networks built of them): `convgen check` (every layer against the CPU
# reference, outputs NaN-poisoned first) on random images at batch 1, 7, 64 and
# 10,000 (each its bucket's kernels), then compute-sanitizer memcheck and
# racecheck of a run of 64 images. One line each; exit 1 on any failure.
set -u
cg=$1; shift
SPECS=${*:-tests/gpu/layers-graph.yaml tests/gpu/layers-bn.yaml tests/gpu/layers-depthwise.yaml
  bench/specs/zoo-residual.yaml bench/specs/zoo-inception.yaml bench/specs/zoo-mobile.yaml}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
export XDG_CACHE_HOME="$t/cache"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null
fail=0
for s in $SPECS; do
  for b in 1 7 64 10000; do
    if "$cg" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$t/log" 2>&1; then
      echo "ok   check $s batch $b ($(grep -c '' "$t/log") lines)"
    else
      echo "FAIL check $s batch $b"; tail -5 "$t/log" | sed 's/^/     /'; fail=1
    fi
  done
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      if compute-sanitizer --tool $tool --error-exitcode 9 "$cg" run "$s" --backend cuda --random-input 3 \
           --images 64 >"$t/$tool" 2>&1; then
        echo "ok   $tool $s ($(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$t/$tool"))"
      else
        echo "FAIL $tool $s"; grep -m3 -E 'ERROR|Invalid|race|convgen:' "$t/$tool" | sed 's/^/     /'; fail=1
      fi
    done
  fi
done
exit $fail
