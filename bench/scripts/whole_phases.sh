#!/usr/bin/env bash
# whole_phases.sh — where the whole-network kernel's time goes, phase by phase: block 0's
# clock64() after every layer's phase and every grid-wide barrier, printed by its thread 0
# (converted to us at the card's 1980 MHz; other cards: set MHZ when building).
#
#   here:        bash bench/scripts/whole_phases.sh build OUTDIR
#                (a convgen binary built in a scratch worktree of HEAD whose network.lua
#                emits the clocks and the printf; OUTDIR/convgen_phases)
#   GPU machine: bash bench/scripts/whole_phases.sh time OUTDIR
#                (each network with --whole on at one image; the last of five runs' lines:
#                "PHASES layer barrier layer barrier ... layer", us)
#
# The figures of bench/RESULTS.md, "The whole-network kernel's conv phases in tiles", came from
# such a build (2026-11-30, an H200). The printf makes the run's own times meaningless: read the
# phases only.
set -u
MODE=$1 OUT=$2
if [ "$MODE" = build ]; then
  mkdir -p "$OUT"
  wt=$(mktemp -d)
  git worktree add -f "$wt" HEAD >/dev/null || exit 1
  python3 - "$wt/templates/ops/network.lua" "${MHZ:-1980}" <<'PY' || { git worktree remove --force "$wt"; exit 1; }
import sys
p, mhz = sys.argv[1:]
src = open(p).read()
old = """        (void)px, (void)pred;
% for j, body in ipairs(bodies) do
{{body}}
% if j < #bodies then
        {{name}}_SYNC();
% end
% end"""
new = """        (void)px, (void)pred;
        long long TS[64]; int nts = 0; TS[nts++] = clock64();
% for j, body in ipairs(bodies) do
{{body}}
        if (nts < 64) TS[nts++] = clock64();
% if j < #bodies then
        {{name}}_SYNC();
        if (nts < 64) TS[nts++] = clock64();
% end
% end
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            printf("PHASES");
            for (int q = 1; q < nts; q++) printf(" %.2f", (TS[q] - TS[q - 1]) / MHZ.0);
            printf("\\n");
        }""".replace("MHZ", mhz)
if src.count(old) != 1:
    sys.exit("whole_phases.sh: templates/ops/network.lua's phase loop is not where this script expects it")
open(p, "w").write(src.replace(old, new))
PY
  make -C "$wt" -j2 build/convgen >/dev/null && cp "$wt/build/convgen" "$OUT/convgen_phases" || exit 1
  git worktree remove --force "$wt"
  exit 0
fi
export XDG_CACHE_HOME=$(mktemp -d)
for s in ${NETS:-specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-mlp.yaml \
    bench/specs/zoo-prime.yaml}; do
  echo "$(basename "$s" .yaml) $("$OUT/convgen_phases" run "$s" --random-input 1 --images 1 --batch 1 --whole on --repeat 5 2>&1 |
    grep PHASES | tail -1)"
done
