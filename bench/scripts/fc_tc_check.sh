#!/usr/bin/env bash
# fc_tc_check.sh — on a GPU machine: fc layers on tensor cores (fc_tc; fc_wg with
# STRAT=wg, for 16-bit networks on sm_90) against auto's choice for them (gemv, vec),
# the timing behind planner.AUTO_FC_TC_MIN_BATCH and AUTO_FC_WG_MIN_BATCH
# (templates/lib/planner.lua: from which batch auto takes them). For each spec (default: bench/specs/zoo-mlp.yaml, the course
# networks, tests/gpu/layers-fc-tc.yaml) a copy is written with every fc layer that
# names no strategy given `strategy: STRAT` (`weights:` made absolute), then:
#   - `convgen check` on the copy (--random-input 1, IMAGES images) at the large batch
#     and at --batch 256 (fc_tc's split reductions): every layer within tolerance;
#   - `convgen run --json` on the spec and on the copy at --batch B for every B of
#     BATCHES (--images B, --random-input 1, --repeat REPEAT, --no-tuning), total_s
#     side by side (OUT/NET.B.{auto,STRAT}.json; the kernels' headers say which
#     template each layer took). At 64 images and fewer a spec's fc strategy is for the
#     large batch and gemv serves both sides: the rule starts above AUTO_GEMV_MAX_BATCH.
# A copy's speedup at every batch above 64 is what turning the rule on would give
# those layers (the rule takes fc layers of at least 64 outputs and 256 inputs alone).
#
#   bash bench/scripts/fc_tc_check.sh [BIN] [SPEC...]
#
# BIN defaults to build/convgen. Environment: STRAT (tc or wg, default tc), BATCHES
# (default "256 1000 10000"), IMAGES (check, default 300), REPEAT (default 20), OUT
# (default bench/fc-tc-out). Exit 1 when any check fails.
set -u
BIN=${1:-build/convgen}
shift $(( $# >= 1 ? 1 : 0 ))
SPECS=${*:-bench/specs/zoo-mlp.yaml $(ls specs/ece408-*.yaml) tests/gpu/layers-fc-tc.yaml}
STRAT=${STRAT:-tc} BATCHES=${BATCHES:-256 1000 10000} IMAGES=${IMAGES:-300} REPEAT=${REPEAT:-20}
OUT=${OUT:-bench/fc-tc-out}
mkdir -p "$OUT"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null
# copy SPEC to DEST with `strategy: STRAT` on every fc layer that names none: a flow
# mapping ({name: fc1, op: fc, ...}) gains it before its closing brace, a block mapping
# a line after its `op: fc`
copy() {
    local spec=$1 dest=$2 dir
    dir=$(cd "$(dirname "$spec")" && pwd)
    python3 - "$spec" "$dest" "$STRAT" "$dir" <<'PY'
import re, sys
src, dest, strat, base = sys.argv[1:5]
lines, out, i = open(src).read().split("\n"), [], 0
for n, line in enumerate(lines):
    line = re.sub(r"^weights:\s*([^/\s#]\S*)", lambda m: "weights: %s/%s" % (base, m.group(1)), line)
    if re.search(r"\{[^}]*\bop:\s*fc\b", line) and "strategy:" not in line:
        line = re.sub(r"\}(\s*(#.*)?)$", r", strategy: %s}\1" % strat, line, count=1)
    out.append(line)
    m = re.match(r"^(\s*)(-\s+)?op:\s*fc\s*(#.*)?$", line)
    if m:
        indent = m.group(1) + (" " * len(m.group(2)) if m.group(2) else "")
        # the layer's other lines: until the next item or a shallower line
        j, named = n + 1, False
        while j < len(lines) and lines[j].strip() and not lines[j].lstrip().startswith("-") \
                and len(lines[j]) - len(lines[j].lstrip()) >= len(indent):
            named |= lines[j].strip().startswith("strategy:")
            j += 1
        if not named:
            out.append("%sstrategy: %s" % (indent, strat))
open(dest, "w").write("\n".join(out))
PY
}
total() { python3 -c 'import json,sys; print("%.3f" % (1e3 * json.load(open(sys.argv[1]))["total_s"]))' "$1" 2>/dev/null || echo "-"; }
fail=0
printf '%-22s %-6s %-8s %10s %10s %7s\n' network batch check auto_ms "${STRAT}_ms" speedup
for s in $SPECS; do
    n=$(basename "$s" .yaml)
    copy "$s" "$t/$n.$STRAT.yaml"
    verdict=pass
    for b in 0 256; do
        opt=(); [ "$b" != 0 ] && opt=(--batch "$b")
        "$BIN" check "$t/$n.$STRAT.yaml" --random-input 1 --images "$IMAGES" "${opt[@]}" >"$OUT/$n.check$b.txt" 2>&1 \
            || { verdict=FAIL; fail=1; }
    done
    for b in $BATCHES; do
        "$BIN" run "$s" --random-input 1 --images "$b" --batch "$b" --repeat "$REPEAT" --no-tuning \
            --json "$OUT/$n.$b.auto.json" >"$OUT/$n.$b.auto.txt" 2>&1 || echo "$n: run auto at $b failed"
        "$BIN" run "$t/$n.$STRAT.yaml" --random-input 1 --images "$b" --batch "$b" --repeat "$REPEAT" --no-tuning \
            --json "$OUT/$n.$b.$STRAT.json" >"$OUT/$n.$b.$STRAT.txt" 2>&1 || echo "$n: run $STRAT at $b failed"
        a=$(total "$OUT/$n.$b.auto.json") c=$(total "$OUT/$n.$b.$STRAT.json")
        r=$(python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$a" "$c" 2>/dev/null || echo "-")
        printf '%-22s %-6s %-8s %10s %10s %7s\n' "$n" "$b" "$verdict" "$a" "$c" "$r"
    done
done
exit $fail
