#!/usr/bin/env bash
# latency_final.sh — on a GPU machine, the figures of bench/RESULTS.md's "Whole networks at small
# batches": the shipped networks through latency_device.sh (checks at 1, 7, 64 and 10,000 images,
# sanitizers, latency.py with torch.compile at batch 1), batch 10,000 beside the previous binary,
# the strided zoo stems at 8 and 64 images, then the final-tree checks (20 images in batches of 8:
# two stream sets and the graphs they hold), memcheck of that run, and bench/latency_embed.
#
#   bash bench/scripts/latency_final.sh NEW_CONVGEN BASE_CONVGEN LATENCY_EMBED OUTDIR
#
# The zoo: CHECKS="$(ls bench/specs/zoo-*.yaml)" CHECK_BATCHES="1 7" REPEAT=30 \
#   bash bench/scripts/latency_device.sh NEW BASE OUTDIR bench/specs/zoo-*.yaml
set -u
NEW=$1 BASE=$2 EMBED=$3 OUT=$4
D=$(dirname "$0")
CHECK_BATCHES="1 7 64 10000" COMPILE_BATCHES=1 bash "$D/latency_device.sh" "$NEW" "$BASE" "$OUT" 2>&1 |
  grep -v "^check .*: ok"
echo "== batch 10,000 (GPU time, median of 10; new then previous binary)"
for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml; do
  for bin in "$NEW" "$BASE"; do
    "$bin" run "$s" --backend cuda --random-input 1 --images 10000 --repeat 10 --json "$OUT/j.json" >/dev/null 2>&1
    echo "$s $bin $(python3 -c "import json;print(round(json.load(open('$OUT/j.json'))['total_s']*1e3,4),'ms')")"
  done
done
echo "== strided stems at 8 and 64 images"
BATCHES=8,64 REPEAT=30 CHECKS=bench/specs/zoo-alex.yaml CHECK_BATCHES=8 bash "$D/latency_device.sh" "$NEW" "$BASE" \
  "$OUT" bench/specs/zoo-alex.yaml bench/specs/zoo-resnet-stem.yaml bench/specs/zoo-stem96.yaml 2>&1 | grep "^| zoo"
echo "== the final tree: checks, several batches a run, memcheck, latency, cg_net_run one image at a time"
for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml tests/gpu/layers-small-batch.yaml \
         bench/specs/zoo-vgg-same.yaml bench/specs/zoo-1x1.yaml; do
  for b in 1 7 64; do
    "$NEW" check "$s" --random-input 1 --images "$b" --batch "$b" >"$OUT/c.log" 2>&1 && echo "check $s $b ok" ||
      { echo "check $s $b FAILED"; tail -3 "$OUT/c.log"; }
  done
  "$NEW" check "$s" --random-input 1 --images 20 --batch 8 >"$OUT/c.log" 2>&1 && echo "check $s 20 in batches of 8 ok" ||
    { echo "check $s 20/8 FAILED"; tail -3 "$OUT/c.log"; }
done
compute-sanitizer --tool memcheck --error-exitcode 9 "$NEW" run specs/ece408-2018sp.yaml --backend cuda --random-input 1 \
  --images 20 --batch 8 --repeat 2 >"$OUT/m.log" 2>&1
echo "memcheck 20 in batches of 8: exit $? $(grep -m1 'ERROR SUMMARY' "$OUT/m.log")"
PYTHONUNBUFFERED=1 python3 bench/latency.py --convgen "$NEW" --batches 1,8,64 --repeat 100 2>&1 | grep "^|"
for s in specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml; do "$EMBED" "$s" cuda 2000; done
