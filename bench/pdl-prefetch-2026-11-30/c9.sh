set -u
export XDG_CACHE_HOME=/tmp/cgcache
SPECS="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml bench/specs/zoo-mlp.yaml"
mkdir -p $OUT/i1 $OUT/i8
IMAGES=1 ROUNDS=4 REPEAT=300 bash bench/scripts/ab_images.sh $OUT/i1 "$SPECS" .dev/h/convgen .dev/p/convgen 2>&1 | tail -6
IMAGES=8 ROUNDS=3 REPEAT=200 bash bench/scripts/ab_images.sh $OUT/i8 "$SPECS" .dev/h/convgen .dev/p/convgen 2>&1 | tail -6
