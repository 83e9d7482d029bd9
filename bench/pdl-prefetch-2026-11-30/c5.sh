set -u
export XDG_CACHE_HOME=/tmp/cgcache
SPECS="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-mlp.yaml bench/specs/zoo-vgg3x3.yaml bench/specs/zoo-wide3x3.yaml"
for b in 8 64 1; do
  mkdir -p $OUT/i$b
  IMAGES=$b ROUNDS=2 REPEAT=100 CHECKS=" " bash bench/scripts/ab_images.sh $OUT/i$b "$SPECS" .dev/h/convgen .dev/p/convgen 2>&1 | tail -7
done
CG=.dev/p/convgen
for s in ece408-2018sp ece408-2017; do for w in on off; do
  echo "== ncu graph $s whole $w"
  timeout 100 ncu --graph-profiling graph --cache-control none --clock-control none --metrics gpu__time_duration.sum \
    $CG run specs/$s.yaml --random-input 1 --images 1 --batch 1 --repeat 4 --whole $w 2>&1 | grep -E "gpu__time_duration|GPU time" | tail -5
  $CG run specs/$s.yaml --random-input 1 --images 1 --batch 1 --repeat 200 --whole $w 2>&1 | grep -o "GPU time.*"
done; done
