#!/usr/bin/env bash
# precision_checks_device.sh — on a GPU: `convgen check` of every shipped network (specs/),
# every zoo network (bench/specs/) and every layer network (tests/gpu/layers-*.yaml) in each
# reduced precision, under auto's choices (compare.py's copy of the spec at that precision,
# its layers' strategy and params dropped), on random inputs.
#
#   bash bench/scripts/precision_checks_device.sh CONVGEN [IMAGES...]
#
# IMAGES: the image counts each copy is checked at (default "7 64 1100": the buckets of 8 and
# 64 images and the large batch). PRECISIONS (default "bf16 fp16 tf32"; "spec": each spec as it
# is written, its own precision and strategies), SPECS (default all
# three sets) and JOBS (checks at once, default 6; each at a batch of its images) narrow it. One line a check: "ok" or "FAIL",
# the precision, spec and images, then the worst layer's relative L2 error over its tolerance
# (the layer-alone rows where check ran layers alone); a FAIL is followed by its failing rows.
# A spec whose copy cannot be written shows the reason (SKIP); one whose layer keeps a precision of
# another tensor type (tests/gpu/layers-tf32.yaml, -fc-tc) is refused by the reader (MIXED).
# Last line: the counts. Exit status 1 when any check failed.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
images=${*:-7 64 1100}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null
work=$(mktemp -d)
copies=()
trap 'rm -f "${copies[@]}"' EXIT
specs=${SPECS:-$(ls specs/ece408-*.yaml bench/specs/*.yaml tests/gpu/layers-*.yaml)}
for p in ${PRECISIONS:-bf16 fp16 tf32}; do
  for sp in $specs; do
    if [ "$p" = spec ]; then c=$sp
    else
      c=$(auto_copy "$sp" "$p" 2>"$work/err") || { echo "SKIP $p $sp: $(tail -1 "$work/err")" | tee -a "$work/out"; continue; }
      copies+=("$c")
    fi
    for i in $images; do echo "$c $p $sp $i"; done >>"$work/jobs"
  done
done
one() {
  local c=$1 p=$2 sp=$3 i=$4 log
  log=$(mktemp)
  if "$cg" check "$c" --random-input 1 --images "$i" --batch "$i" >"$log" 2>&1; then st=ok; else st=FAIL; fi
  worst=$(awk 'function num(x) { return x ~ /^[0-9][0-9.e+-]*$/ }
    { r = 0 } ($3 == "alone" || $3 == "network") && num($6) && num($7) && $7 > 0 { r = $6 / $7 }
    $3 != "alone" && $3 != "network" && num($5) && num($6) && $6 > 0 { r = $5 / $6 }
    r > w { w = r } END { printf "%.3f", w }' "$log")
  # a copy whose layer keeps its own precision of another tensor type is refused as the
  # reader must (a layer network mixing precisions on purpose): not a check
  if [ $st = FAIL ] && grep -q "a layer's precision must keep the network's tensor type" "$log"; then st=MIXED; fi
  # one write a check, its reasons with it (the checks run side by side)
  if [ $st != ok ]; then
    printf '%s\n%s\n' "$st $p $sp $i worst=$worst" "$(grep -E "FAIL|convgen:" "$log" | head -4 | sed 's/^/    /')"
  else echo "$st $p $sp $i worst=$worst"; fi
  rm -f "$log"
}
export -f one
# each check's CPU reference (OpenMP) gets its share of the cores, not all of them
jobs=${JOBS:-6}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / jobs > 0 ? $(nproc) / jobs : 1 ))}
export cg
xargs -P "$jobs" -L 1 bash -c 'one "$@"' _ <"$work/jobs" | tee -a "$work/out"
echo "checks: $(grep -c '^ok' "$work/out") ok, $(grep -c '^FAIL' "$work/out") failed, $(grep -c '^SKIP' "$work/out") skipped," \
  "$(grep -c '^MIXED' "$work/out") refused (a layer's own precision of another tensor type)"
! grep -q '^FAIL' "$work/out"
