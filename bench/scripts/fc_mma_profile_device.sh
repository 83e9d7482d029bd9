#!/usr/bin/env bash
# fc_mma_profile_device.sh — on an sm_90 GPU with Nsight Compute: what bounds fc_mma (the bf16
# fc as a wgmma matrix product, templates/fc/mma.lua) on 10,000 images.
#
#   bash bench/scripts/fc_mma_profile_device.sh CONVGEN [OUTDIR]
#
# For each "spec|layer" of LAYERS (default zoo-mlp's fc2 and ece408-2017's fc1; bf16 copies under
# auto): its time under each "params" of PARAMS (default: the template's own tile, then a few
# others), then one Nsight Compute profile of the default tile (the timed launch after the check,
# `--set full`), printed as its details page and the twenty SASS lines with the most stall
# samples. OUTDIR (default: a temporary folder) keeps the reports.
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1
out=${2:-$(mktemp -d)}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for item in ${LAYERS:-bench/specs/zoo-mlp.yaml\|fc2 specs/ece408-2017.yaml\|fc1}; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  name=$(basename "$sp" .yaml)-$l
  for p in ${PARAMS:-default bm=64 bn=128 bn=256 bk=32 bk=128 bm=64,bn=256}; do
    if [ "$p" = default ]; then a=(); else a=(--params "$p"); fi
    r=$("$cg" kernel "$c" --layer "$l" --strategy mma "${a[@]}" --repeat "${REPEAT:-10}" --check-images 16 2>&1)
    echo "$name mma $p: $(echo "$r" | grep -E 'params|median|WRONG|convgen:' | tr '\n' ' ' | cut -c1-300)"
  done
  if command -v ncu >/dev/null; then
    ncu --set full -k regex:fc_mma --launch-skip 1 -c 1 -f -o "$out/$name" \
      "$cg" kernel "$c" --layer "$l" --strategy mma --repeat 1 --check-images 16 >/dev/null 2>&1 ||
      echo "ncu failed on $name"
    ncu -i "$out/$name.ncu-rep" --page details 2>&1 | grep -vE '^\s*-+\s*$' | head -220
    ncu -i "$out/$name.ncu-rep" --page source --print-source sass --csv 2>/dev/null >"$out/$name-sass.csv"
    python3 - "$out/$name-sass.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
if not rows:
    print("no source page"); sys.exit()
head = rows[0]
def col(*names):
    for n in names:
        for i, h in enumerate(head):
            if h.strip().lower() == n.lower():
                return i
    return None
src = col("Source")
stall = col("Warp Stall Sampling (All Samples)", "Sampling Data (All)")
if src is None or stall is None:
    print("columns:", head[:30]); sys.exit()
def num(s):
    try: return float(s.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[1:] if len(r) > max(src, stall)]
total = sum(num(r[stall]) for r in body) or 1
print(f"SASS lines {len(body)}, stall samples {total:.0f}; the top twenty:")
for r in sorted(body, key=lambda r: -num(r[stall]))[:20]:
    print(f"  {100 * num(r[stall]) / total:5.1f}%  {r[src][:110]}")
EOF
  fi
  rm -f "$c"
done
