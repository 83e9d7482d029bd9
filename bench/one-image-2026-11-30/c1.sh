set -u
CG=.dev/cur/convgen
export XDG_CACHE_HOME=/tmp/cgc
. bench/scripts/cell_spec.sh
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
# 1. one-image ablation, per-layer kernels in their graph
for r in 1 2 3; do for s in .dev/abl/*.yaml; do
  for w in "" "--no-pdl"; do
  t=$(timeout 60 $CG run $s --random-input 1 --images 1 --batch 1 --repeat 300 --whole off $w --json /tmp/j.json >/dev/null 2>&1 && python3 -c "import json;j=json.load(open('/tmp/j.json'));print('%.1f'%(j['total_s']*1e6))")
  echo "abl r$r $(basename $s .yaml) ${w:-pdl} $t"
  done
done; done > $OUT/abl.txt
sort -k3,4 $OUT/abl.txt | awk '{k=$3" "$4; a[k]=a[k]" "$5} END{for(k in a) print k, a[k]}' | sort
# 2. what bounds fc_mma: ncu SOL + memory on zoo-mlp fc2/fc1 bf16 10000
for item in bench/specs/zoo-mlp.yaml\|fc2 bench/specs/zoo-mlp.yaml\|fc1; do
  IFS='|' read -r sp l <<<"$item"
  c=$(auto_copy "$sp" bf16)
  $CG kernel "$c" --layer "$l" --strategy mma --repeat 10 --check-images 16 2>&1 | grep -E 'params|median|WRONG' | tr '\n' ' '; echo
  timeout 200 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats -k regex:fc_mma --launch-skip 1 -c 1 \
    $CG kernel "$c" --layer "$l" --strategy mma --repeat 1 --check-images 16 > $OUT/ncu-$l.txt 2>&1
  grep -E "Duration|Throughput|Hit Rate|Registers|Shared Memory Config|Achieved Occ|Block Limit|Bandwidth|Busy" $OUT/ncu-$l.txt | head -40
done
