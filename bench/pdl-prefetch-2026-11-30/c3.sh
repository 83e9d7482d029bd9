set -u
export XDG_CACHE_HOME=/tmp/cgcache
SPECS="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml specs/fashion-resnet.yaml $(ls bench/specs/*.yaml | tr '\n' ' ')"
for b in 1 8; do
  mkdir -p $OUT/i$b
  IMAGES=$b ROUNDS=2 REPEAT=200 bash bench/scripts/ab_images.sh $OUT/i$b "$SPECS" .dev/h/convgen .dev/p/convgen 2>&1 | tail -40
done
