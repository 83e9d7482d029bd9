#!/usr/bin/env bash
# tf32_check.sh — on a GPU machine: precision tf32 against fp32. For each spec
# (default: tests/gpu/layers-tf32.yaml, the shipped course networks and the zoo),
# two copies are written to a temporary folder, the network's `precision:` set to
# fp32 and to tf32 (a top-level line; layers that write their own keep it;
# `weights:` made absolute so the copies read the spec's own file), then:
#   - `convgen check` on the tf32 copy (--random-input 1, IMAGES images): every
#     layer within its tolerance (docs/design.md, "Precision"); the table is kept
#     in OUT/NET.check.txt, its worst layer printed;
#   - `convgen run --json` on both copies (--random-input 1, 10,000 images,
#     --repeat REPEAT, --no-tuning: the fp32 records do not apply to tf32 layers,
#     whose signatures differ, so both sides run auto's choices), total_s side by
#     side, and the templates each side chose (OUT/NET.{fp32,tf32}.json).
#
#   bash bench/scripts/tf32_check.sh [BIN] [SPEC...]
#
# BIN defaults to build/convgen. Environment: IMAGES (check, default 200), REPEAT
# (default 10), OUT (default bench/tf32-out). Exit 1 when any check fails.
set -u
BIN=${1:-build/convgen}
shift $(( $# >= 1 ? 1 : 0 ))
SPECS=${*:-tests/gpu/layers-tf32.yaml $(ls specs/ece408-*.yaml bench/specs/*.yaml)}
IMAGES=${IMAGES:-200} REPEAT=${REPEAT:-10} OUT=${OUT:-bench/tf32-out}
mkdir -p "$OUT"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null
# copy SPEC to DEST with the network's precision P
. "$(dirname "$0")/cell_spec.sh" # spec_copy: `weights:` made absolute
copy() {
    local spec=$1 dest=$2 p=$3
    spec_copy "$spec" "$dest.tmp" && sed '/^precision:/d' "$dest.tmp" >"$dest" && rm -f "$dest.tmp"
    printf 'precision: %s\n' "$p" >>"$dest"
}
total() { python3 -c 'import json,sys; print("%.3f" % (1e3 * json.load(open(sys.argv[1]))["total_s"]))' "$1" 2>/dev/null || echo "-"; }
fail=0
printf '%-22s %-6s %12s %10s %10s %7s\n' network check worst_relL2 fp32_ms tf32_ms speedup
for s in $SPECS; do
    n=$(basename "$s" .yaml)
    copy "$s" "$t/$n.fp32.yaml" fp32
    copy "$s" "$t/$n.tf32.yaml" tf32
    verdict=pass
    "$BIN" check "$t/$n.tf32.yaml" --random-input 1 --images "$IMAGES" >"$OUT/$n.check.txt" 2>&1 || { verdict=FAIL; fail=1; }
    # the worst layer: rel L2 error over its tolerance
    worst=$(awk '$3 ~ /e/ && $6 ~ /e/ { r = $5 / $6; if (r > m) { m = r; w = $1 " " $5 "/" $6 } } END { print w }' \
        "$OUT/$n.check.txt")
    for p in fp32 tf32; do
        "$BIN" run "$t/$n.$p.yaml" --random-input 1 --images 10000 --repeat "$REPEAT" --no-tuning \
            --json "$OUT/$n.$p.json" >"$OUT/$n.$p.run.txt" 2>&1 || echo "$n: run $p failed (see $OUT/$n.$p.run.txt)"
    done
    a=$(total "$OUT/$n.fp32.json") b=$(total "$OUT/$n.tf32.json")
    ratio=$(python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$a" "$b" 2>/dev/null || echo "-")
    printf '%-22s %-6s %12s %10s %10s %7s\n' "$n" "$verdict" "${worst:--}" "$a" "$b" "$ratio"
done
exit $fail
