#!/usr/bin/env bash
# half_device.sh — on a GPU machine: precision bf16 and fp16 checked and timed.
#
#   bash bench/scripts/half_device.sh CONVGEN [DATA_DIR]
#
# `convgen check` (every layer against the CPU reference within the 16-bit
# tolerance, tensors NaN-poisoned first) on tests/gpu/layers-bf16.yaml and
# layers-fp16.yaml at --batch 7 and 64 and 1,000 images, compute-sanitizer
# memcheck and racecheck on each at 64 images; then bf16 and fp16 copies of the
# course networks (the spec with `precision:` added, written beside it and removed
# after) over the 10,000 test images: accuracy and GPU time (run --repeat 5
# --json, total_s) beside FP32's. SKIP_CHECKS=1: the accuracies alone; PRECISIONS
# (default "bf16 fp16") the reduced precisions to measure, e.g. "bf16 fp16 tf32". AUTO=1:
# the copies drop the layers' strategy and params (auto's choices at that precision).
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1 DATA=${2:-/usr/share/datasets/fashion-mnist}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
for s in $([ -z "${SKIP_CHECKS:-}" ] && echo tests/gpu/layers-bf16.yaml tests/gpu/layers-fp16.yaml); do
  for b in 7 64 1000; do
    if "$cg" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then
      echo "ok   check $s $b: $(grep -ciE 'tolerance|ok' "$log") lines"
    else echo "FAIL check $s $b"; tail -4 "$log"; fail=1; fi
  done
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 "$cg" run "$s" --random-input 64 --images 64 --batch 64 \
        >"$log" 2>&1; then echo "ok   $tool $s 64"
    else echo "FAIL $tool $s 64"; grep -m3 -E "ERROR|Invalid|hazard" "$log"; fail=1; fi
  done
done
sec() { python3 -c "import json,sys; print('%.3f' % (json.load(open(sys.argv[1]))['total_s'] * 1e3))" "$1"; }
printf '%-16s %-6s %10s %10s\n' network prec accuracy gpu_ms
for n in ece408-2017 ece408-2018sp ece408-2018fa; do
  for p in fp32 ${PRECISIONS:-bf16 fp16}; do
    s=specs/$n.yaml
    if [ "$p" != fp32 ]; then
      if [ -n "${AUTO:-}" ]; then   # the layers' strategy and params dropped too (bench/compare.py --auto)
        s=$(auto_copy "specs/$n.yaml" "$p")
      else
        s=specs/.half-$n-$p.yaml
        sed "s/^network: .*/&\nprecision: $p/" "specs/$n.yaml" >"$s"
      fi
    fi
    acc=$("$cg" run "$s" --input "$DATA/t10k-images-idx3-ubyte.gz" --labels "$DATA/t10k-labels-idx1-ubyte.gz" \
      --repeat 5 --json "$log.json" 2>"$log" | awk '/^Correctness/ {print $2}')
    [ -n "$acc" ] || { tail -2 "$log"; fail=1; }
    printf '%-16s %-6s %10s %10s\n' "$n" "$p" "${acc:-FAIL}" "$( [ -n "$acc" ] && sec "$log.json")"
    [ "$p" != fp32 ] && rm -f "$s"
  done
done
rm -f "$log" "$log.json"
exit $fail
