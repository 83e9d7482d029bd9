# cell_spec.sh — sourced by the bench scripts that take cells "SPEC:B": cell_spec SPEC
# prints SPEC's path, a name without a directory looked up in bench/specs/, then specs/.
# spec_copy SPEC DEST: SPEC copied to DEST (another directory) with a relative
# `weights:` made absolute, so that the copy reads the spec's own weights file (a plain
# copy of specs/ece408-2018sp.yaml looked for DEST's ../models/ and failed: "cannot open").
# auto_copy SPEC P: bench/compare.py's copy of SPEC at precision P less its layers' strategy
# and params (compare.py --auto), written beside SPEC as .prec-P-NAME.yaml; prints its path,
# which the caller removes. spec_check and spec_sanitize (below): the checks and sanitizer runs of one
# spec, a line each, every run bounded by STEP_TIMEOUT seconds (default 120; a run past it is a
# failure, "timed out": a sanitizer's racecheck of a 64-image run once took a whole 600-second
# device call). kernel_line (below): one layer's kernel checked and timed, summed up on a line.
# run_time and profile_1000 (below): a network's GPU time at a batch, a line; its kernels' times at
# 1,000 images.
cell_spec() {
  case $1 in
    */*) echo "$1" ;;
    *) if [ -f "bench/specs/$1.yaml" ]; then echo "bench/specs/$1.yaml"; else echo "specs/$1.yaml"; fi ;;
  esac
}
spec_copy() {
  local dir
  dir=$(cd "$(dirname "$1")" && pwd) || return 1
  sed -E "s|^weights:[[:space:]]*([^/[:space:]#][^[:space:]#]*)|weights: $dir/\1|" "$1" >"$2"
}
auto_copy() {
  python3 -c "import sys; sys.path.insert(0, sys.argv[3]); import compare
print(compare.precision_spec(sys.argv[1], sys.argv[2], True))" "$1" "$2" "$(dirname "${BASH_SOURCE[0]}")/.."
}
# spec_check CONVGEN SPEC IMAGES: `convgen check SPEC --random-input 1 --images IMAGES`, one
# line "ok   check SPEC IMAGES" or "FAIL ..." and the failing lines; its status.
spec_check() {
  local log rc=0
  log=$(mktemp)
  timeout "${STEP_TIMEOUT:-120}" "$1" check "$2" --random-input 1 --images "$3" >"$log" 2>&1
  case $? in
    0) echo "ok   check $2 $3" ;;
    124) echo "FAIL check $2 $3: timed out after ${STEP_TIMEOUT:-120} s"; rc=1 ;;
    *) echo "FAIL check $2 $3"; grep -E "FAIL" "$log" | head -3; tail -3 "$log"; rc=1 ;;
  esac
  rm -f "$log"
  return $rc
}
# copies_check CONVGEN P NETWORK...: spec_check of each network's auto_copy at precision P at 7 and
# 1,000 images (a network named as cell_spec takes it), the copy removed after; its status.
copies_check() {
  local cg=$1 p=$2 n c b rc=0
  shift 2
  for n in "$@"; do
    c=$(auto_copy "$(cell_spec "$n")" "$p")
    for b in 7 1000; do spec_check "$cg" "$c" "$b" || rc=1; done
    rm -f "$c"
  done
  return $rc
}
# spec_sanitize CONVGEN SPEC IMAGES: `compute-sanitizer --tool T convgen run SPEC --random-input 1
# --images IMAGES` for memcheck and racecheck, a line each; its status.
spec_sanitize() {
  local log tool rc=0
  log=$(mktemp)
  for tool in memcheck racecheck; do
    timeout "${STEP_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$1" run "$2" --random-input 1 \
      --images "$3" >"$log" 2>&1
    case $? in
      0) echo "ok   $tool $2 $3" ;;
      124) echo "FAIL $tool $2 $3: timed out after ${STEP_TIMEOUT:-120} s"; rc=1 ;;
      *) echo "FAIL $tool $2 $3"; grep -m3 -E "ERROR|Invalid|hazard|error" "$log"; rc=1 ;;
    esac
  done
  rm -f "$log"
  return $rc
}
# kernel_line CONVGEN SPEC LAYER B CHECK [ARGS...]: `convgen kernel SPEC --layer LAYER --batch B
# --repeat REPEAT (default 10) --check-images CHECK ARGS...` (checked against the CPU reference, then
# timed with the L2 flushed), its template, params and median (or its failure) on one line.
kernel_line() {
  local cg=$1 sp=$2 l=$3 b=$4 n=$5
  shift 5
  "$cg" kernel "$sp" --layer "$l" --batch "$b" --repeat "${REPEAT:-10}" --check-images "$n" "$@" 2>&1 |
    grep -E 'template|params|median|WRONG|FAIL|convgen:' | tr '\n' ' ' | cut -c1-400
}
# run_time CONVGEN SPEC IMAGES JSON: `convgen run SPEC --random-input 1 --images IMAGES --batch
# IMAGES --repeat REPEAT (default 20) --json JSON`, one line "IMAGES SPEC CONVGEN µs" (the GPU time,
# total_s) or "IMAGES SPEC CONVGEN FAILED".
run_time() {
  timeout 120 "$1" run "$2" --random-input 1 --images "$3" --batch "$3" --repeat "${REPEAT:-20}" --json "$4" \
    </dev/null >/dev/null 2>&1 && python3 -c "import json, sys; j = json.load(open(sys.argv[4]))
print(sys.argv[3], sys.argv[2], sys.argv[1], '%.1f' % (j['total_s'] * 1e6))" "$1" "$2" "$3" "$4" ||
    echo "$3 $2 $1 FAILED"
}
# profile_1000 CONVGEN SPEC...: "== SPEC 1000", then `convgen run SPEC --random-input 1 --images 1000
# --batch 1000 --profile --whole off` (each kernel's time), for each SPEC.
profile_1000() {
  local cg=$1 s
  shift
  for s in "$@"; do
    echo "== $s 1000"
    timeout 60 "$cg" run "$s" --random-input 1 --images 1000 --batch 1000 --profile --whole off </dev/null 2>&1 |
      grep -v "^Correct"
  done
}
