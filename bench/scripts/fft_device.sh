#!/usr/bin/env bash
# fft_device.sh — on a GPU machine: conv2d_fft (templates/conv2d/fft.lua) checked, then every
# shipped and zoo network whose layers it serves timed with those layers written `strategy: fft`
# (bench/scripts/fft_copies.py's copies, the rest auto) against the network under auto.
#
#   bash bench/scripts/fft_device.sh NEW CUR OUTDIR
#
# NEW: the convgen with the template; CUR: the one before it (timed on the networks as shipped).
# 1. `convgen check tests/gpu/layers-fft.yaml` at 7 and 300 images; compute-sanitizer memcheck and
#    racecheck at 7 (SKIP_SANITIZE=1 leaves them out);
# 2. each copy checked at CHECK_IMAGES (default 64) images, eight at a time;
# 3. each network, as shipped under CUR and NEW and its copy under NEW, at each of BATCHES
#    (default "1000"): `run --random-input 1 --images B --batch B --repeat REPEAT (20) --json`,
#    GPU µs (total_s) a line in OUTDIR/times.txt; then `run --profile --whole off` of each at
#    PROFILE_BATCH (default 1000) into OUTDIR/prof.txt (each kernel's time).
# SPECS (default: specs/*.yaml and bench/specs/*.yaml) narrows the networks.
set -u
NEW=$1 CUR=$2 OUT=${3:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cgcache} STEP_TIMEOUT=${STEP_TIMEOUT:-150}
. "$(dirname "$0")/cell_spec.sh"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
mkdir -p "$OUT"
for b in 7 300; do spec_check "$NEW" tests/gpu/layers-fft.yaml "$b"; done
if [ -z "${SKIP_SANITIZE:-}" ]; then
  for tool in memcheck racecheck; do
    timeout "$STEP_TIMEOUT" compute-sanitizer --tool "$tool" --error-exitcode 9 "$NEW" check tests/gpu/layers-fft.yaml \
      --random-input 1 --images 7 >"$OUT/$tool.txt" 2>&1
    echo "$tool layers-fft 7: exit $? $(grep -E 'ERROR SUMMARY' "$OUT/$tool.txt" | tail -1)"
  done
fi
python3 "$(dirname "$0")/fft_copies.py" ${SPECS:-specs/*.yaml bench/specs/*.yaml} >"$OUT/copies.txt"
cat "$OUT/copies.txt"
trap 'cut -d" " -f2 "$OUT/copies.txt" | xargs rm -f' EXIT
export -f spec_check
cut -d" " -f2 "$OUT/copies.txt" | xargs -P 8 -I{} bash -c 'spec_check '"$NEW"' {} '"${CHECK_IMAGES:-64}" \
  >"$OUT/checks.txt" 2>&1
echo "checks: $(grep -c '^ok' "$OUT/checks.txt") ok, $(grep -c '^FAIL' "$OUT/checks.txt") failed $(date +%T)"
grep -A4 '^FAIL' "$OUT/checks.txt" | head -20
while read -r spec copy layers; do
  for b in ${BATCHES:-1000}; do
    for run in "$CUR $spec" "$NEW $spec" "$NEW $copy"; do
      set -- $run
      timeout 120 "$1" run "$2" --random-input 1 --images "$b" --batch "$b" --repeat "${REPEAT:-20}" --json "$OUT/j.json" </dev/null \
        >/dev/null 2>&1 && python3 -c "import json, sys; j = json.load(open(sys.argv[4]))
print(sys.argv[1], sys.argv[2], sys.argv[3], '%.1f' % (j['total_s'] * 1e6))" "$b" "$2" "$1" "$OUT/j.json" ||
        echo "$b $2 $1 FAILED"
    done
  done
done <"$OUT/copies.txt" >"$OUT/times.txt"
cat "$OUT/times.txt"
while read -r spec copy layers; do
  for s in "$spec" "$copy"; do
    echo "== $s ${PROFILE_BATCH:-1000} ($layers)"
    timeout 60 "$NEW" run "$s" --random-input 1 --images "${PROFILE_BATCH:-1000}" --batch "${PROFILE_BATCH:-1000}" \
      --profile --whole off </dev/null 2>&1 | grep -v "^Correct"
  done
done <"$OUT/copies.txt" >"$OUT/prof.txt" 2>&1
echo "profiles done $(date +%T)"
# VARIANTS="k=v,... k=v,..." (optional): each networks' copy with those parameters on its fft
# layers, profiled at PROFILE_BATCH; the fft kernels' times into OUTDIR/variants.txt.
for v in ${VARIANTS:-}; do
  FFT_PARAMS=$v python3 "$(dirname "$0")/fft_copies.py" ${SPECS:-specs/*.yaml bench/specs/*.yaml} |
  while read -r spec copy layers; do
    echo "== $v $spec ($layers)"
    timeout 60 "$NEW" run "$copy" --random-input 1 --images "${PROFILE_BATCH:-1000}" --batch "${PROFILE_BATCH:-1000}" \
      --profile --whole off </dev/null 2>&1 | grep -E "conv2d_fft|FAIL|rror"
    rm -f "$copy"
  done
done >"$OUT/variants.txt" 2>&1
[ -n "${VARIANTS:-}" ] && cat "$OUT/variants.txt"
echo "variants done $(date +%T)"
