set -u
export XDG_CACHE_HOME=/tmp/cgcache
SPECS="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-mlp.yaml bench/specs/zoo-vgg3x3.yaml bench/specs/zoo-wide3x3.yaml bench/specs/zoo-edge.yaml bench/specs/zoo-alex.yaml bench/specs/zoo-5x5-c64.yaml"
for b in 8 64 1; do
  mkdir -p $OUT/i$b
  IMAGES=$b ROUNDS=2 REPEAT=100 CHECKS=" " bash bench/scripts/ab_images.sh $OUT/i$b "$SPECS" .dev/h/convgen .dev/t/convgen .dev/p/convgen 2>&1 | tail -7
done
