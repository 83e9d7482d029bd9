set -u
export XDG_CACHE_HOME=/tmp/cgcache
SPECS="specs/ece408-2018fa.yaml specs/ece408-2018sp.yaml specs/ece408-2017.yaml bench/specs/zoo-vgg3x3.yaml bench/specs/zoo-alex.yaml bench/specs/zoo-wide3x3.yaml"
mkdir -p $OUT/i1
IMAGES=1 ROUNDS=6 REPEAT=300 CHECKS=" " bash bench/scripts/ab_images.sh $OUT/i1 "$SPECS" .dev/h/convgen .dev/t/convgen .dev/p/convgen 2>&1 | tail -8
