#!/usr/bin/env bash
# fft_mul_device.sh — on a GPU machine: conv2d_fft's product kernel (operands staged as planes,
# warps of 8 map quads by 4 image quads) and input_u8's four pixels a thread at every image size,
# checked, sanitized and timed against the binary before them.
#
#   bash bench/scripts/fft_mul_device.sh NEW CUR OUTDIR
#
# 1. `convgen check --random-input 1`: tests/gpu/layers-fft.yaml and layers-input-odd-bf16.yaml at
#    7 and 300 images, layers-bn and layers-small-batch-pixels (odd image sizes with a mean and
#    std) at 7, each network of SPECS at 1, 7, 64 and 1,100; compute-sanitizer memcheck and
#    racecheck of layers-fft, layers-input-odd-bf16 and zoo-alex at 7 images: OUTDIR/checks.txt;
# 2. VARIANTS (default "bn=64 ck=32"; "" for none): SPECS' layers of K >= 5 written `strategy: fft`
#    with those parameters (bench/scripts/fft_copies.py), and with none, profiled at 1,000 images,
#    the fft product kernels' times: OUTDIR/variants.txt;
# 3. each network of SPECS under CUR and NEW at BATCHES (default "64 256 1000 10000"): `run
#    --random-input 1 --images B --batch B --repeat 20 --json`, GPU µs a line: OUTDIR/times.txt;
#    NEW's per-kernel profile at 1,000 images: OUTDIR/prof.txt.
set -u
NEW=$1 CUR=$2 OUT=${3:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache} STEP_TIMEOUT=${STEP_TIMEOUT:-150}
. "$(dirname "$0")/cell_spec.sh"
SPECS=${SPECS:-"bench/specs/zoo-5x5-c64.yaml bench/specs/zoo-7x7-large.yaml bench/specs/zoo-bigk.yaml
  bench/specs/zoo-k7pad.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-stem96.yaml bench/specs/zoo-alex.yaml"}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
mkdir -p "$OUT"
export -f spec_check spec_sanitize
{
  for s in tests/gpu/layers-fft.yaml tests/gpu/layers-input-odd-bf16.yaml; do echo "$s 7"; echo "$s 300"; done
  echo "tests/gpu/layers-bn.yaml 7"; echo "tests/gpu/layers-small-batch-pixels.yaml 7"
  for s in $SPECS; do for b in 1 7 64 1100; do echo "$s $b"; done; done
} | xargs -P 6 -L 1 bash -c 'spec_check '"$NEW"' $0 $1' >"$OUT/checks.txt" 2>&1
for s in tests/gpu/layers-fft.yaml tests/gpu/layers-input-odd-bf16.yaml bench/specs/zoo-alex.yaml; do
  spec_sanitize "$NEW" "$s" 7
done >>"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed $(date +%T)"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -20
for v in ${VARIANTS-bn=64 ck=32} ${VARIANTS-none}; do
  [ "$v" = none ] && v=""
  FFT_PARAMS=$v MIN_K=5 python3 "$(dirname "$0")/fft_copies.py" $SPECS |
  while read -r spec copy layers; do
    echo "== ${v:-defaults} $spec ($layers)"
    timeout 60 "$NEW" run "$copy" --random-input 1 --images 1000 --batch 1000 --profile --whole off </dev/null 2>&1 |
      grep -E "conv2d_fft|FAIL|rror"
    rm -f "$copy"
  done
done >"$OUT/variants.txt" 2>&1
cat "$OUT/variants.txt"
echo "variants done $(date +%T)"
for s in $SPECS; do
  for b in ${BATCHES:-64 256 1000 10000}; do
    for cg in "$CUR" "$NEW"; do
      run_time "$cg" "$s" "$b" "$OUT/j.json"
    done
  done
done >"$OUT/times.txt"
cat "$OUT/times.txt"
profile_1000 "$NEW" $SPECS >"$OUT/prof.txt" 2>&1
echo "done $(date +%T)"
