set -u
export XDG_CACHE_HOME=/tmp/cgcache
SPECS="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml $(for z in mlp vgg3x3 5x5-c64 alex edge awkward bigk linear 1x1 wide3x3; do echo bench/specs/zoo-$z.yaml; done | tr '\n' ' ')"
for b in ${BS:-8 64}; do
  mkdir -p $OUT/i$b
  IMAGES=$b ROUNDS=2 REPEAT=100 bash bench/scripts/ab_images.sh $OUT/i$b "$SPECS" .dev/h/convgen .dev/g/convgen .dev/p/convgen 2>&1 | tail -16
done
