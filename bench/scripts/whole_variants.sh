#!/usr/bin/env bash
# whole_variants.sh — the whole-network kernel's block shape (templates/ops/network.lua's
# `threads` and `per_sm` defaults), measured: which would a tuner pick?
#
#   here:        bash bench/scripts/whole_variants.sh build OUTDIR
#                (a convgen binary for each shape, built in a scratch worktree of HEAD with
#                the two defaults changed; OUTDIR/convgen_tT_sS)
#   GPU machine: bash bench/scripts/whole_variants.sh time OUTDIR
#                (every binary with --whole on at 1 and 8 images, median GPU time of 200 calls)
set -u
MODE=$1 OUT=$2
SHAPES=${SHAPES:-"512 1 256 2 256 1 1024 1"}
if [ "$MODE" = build ]; then
  mkdir -p "$OUT"
  wt=$(mktemp -d)
  git worktree add -f "$wt" HEAD >/dev/null || exit 1
  set -- $SHAPES
  while [ $# -ge 2 ]; do
    python3 - "$wt/templates/ops/network.lua" "$1" "$2" <<'EOF'
import re, sys
p, t, s = sys.argv[1:]
src = open(p).read()
src = re.sub(r'(name = "threads".*?default = function\(_\) return )\d+', r"\g<1>" + t, src, flags=re.S)
src = re.sub(r'(name = "per_sm".*?default = function\(_\) return )\d+', r"\g<1>" + s, src, flags=re.S)
open(p, "w").write(src)
EOF
    make -C "$wt" -j2 build/convgen >/dev/null && cp "$wt/build/convgen" "$OUT/convgen_t$1_s$2" || exit 1
    shift 2
  done
  git worktree remove --force "$wt"
  exit 0
fi
med() { python3 -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['total_s'] * 1e6))" "$1" 2>/dev/null || echo "-"; }
export XDG_CACHE_HOME=$(mktemp -d)
bins=$(ls "$OUT"/convgen_t*_s*)
echo "network batch | $(for b in $bins; do printf '%s | ' "$(basename "$b")"; done)"
for s in ${NETS:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml specs/fashion-resnet.yaml \
    bench/specs/zoo-mlp.yaml bench/specs/zoo-edge.yaml bench/specs/zoo-prime.yaml bench/specs/zoo-bigk.yaml \
    bench/specs/zoo-linear.yaml tests/gpu/layers-graph.yaml}; do
  for n in 1 8; do
    line="$(basename "$s" .yaml) $n"
    for b in $bins; do
      "$b" run "$s" --random-input $n --images $n --batch $n --repeat 200 --whole on --json "$OUT/r.json" >"$OUT/log" 2>&1 ||
        echo "ERR $(basename "$b") $(tail -1 "$OUT/log")"
      line="$line | $(med "$OUT/r.json")"
    done
    echo "$line"
  done
done
