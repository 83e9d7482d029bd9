#!/usr/bin/env bash
# whole_ablation.sh — where the whole-network kernel's time goes, by taking layers away:
# each course network cut after its first k layers (random weights, the same shapes),
# plus a one-layer network (fc 16 -> 10) for the fixed cost, each run at one image
# with --whole on and --whole off (median GPU time of 300 calls).
#
#   bash bench/scripts/whole_ablation.sh CONVGEN OUTDIR
#
# A cut network ends in an argmax over its last layer's tensor (one warp an image in
# the whole kernel, one thread an image in the per-layer argmax kernel, which is why
# the cuts that end on a large tensor are slow per layer).
set -u
CG=$1 OUT=$2
mkdir -p "$OUT/specs"
python3 - "$OUT/specs" <<'EOF'
import re, sys
out = sys.argv[1]
for net in ["ece408-2017", "ece408-2018sp", "ece408-2018fa"]:
    s = open(f"specs/{net}.yaml").read()
    s = re.sub(r"^(weights|seed):.*\n", "", s, flags=re.M)
    head, layers = s.split("layers:\n", 1)
    items = re.split(r"(?m)^(?=  - name:)", layers)[1:]
    for k in range(1, len(items) + 1):
        spec = head.replace(f"network: {net}", f"network: {net}-l{k}") + "seed: 5\nlayers:\n" + "".join(items[:k])
        open(f"{out}/{net}-l{k}.yaml", "w").write(spec)
open(f"{out}/tiny.yaml", "w").write("network: tiny\ninput: {channels: 1, height: 4, width: 4, scale: 0.0039, "
                                    "offset: 0}\nseed: 3\nlayers:\n  - {name: fc1, op: fc, out: 10, bias: true}\n")
EOF
med() { python3 -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['total_s'] * 1e6))" "$1" 2>/dev/null || echo "-"; }
echo "network (first k layers) | --whole on us | --whole off us"
for s in "$OUT"/specs/*.yaml; do
  for w in on off; do
    "$CG" run "$s" --random-input 1 --images 1 --batch 1 --repeat 300 --whole $w --json "$OUT/$w.json" >"$OUT/log" 2>&1 ||
      tail -2 "$OUT/log"
  done
  echo "$(basename "$s" .yaml) | $(med "$OUT/on.json") | $(med "$OUT/off.json")"
done
