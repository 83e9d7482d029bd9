set -u
export XDG_CACHE_HOME=/tmp/cgcache STEP_TIMEOUT=150
. bench/scripts/cell_spec.sh
export -f spec_check spec_sanitize
CG=.dev/p/convgen
SPECS="specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml specs/fashion-resnet.yaml $(ls bench/specs/*.yaml | tr '\n' ' ') tests/gpu/layers-tail.yaml tests/gpu/layers-small-batch.yaml tests/gpu/layers-fc-odd.yaml tests/gpu/layers-fc-split-wg.yaml tests/gpu/layers-tail-split-wg.yaml tests/gpu/layers-direct.yaml"
(for b in 1 7 64; do for s in $SPECS; do echo "$s $b"; done; done; echo "bench/specs/zoo-prime.yaml 1100") |
  xargs -P 12 -L 1 bash -c 'spec_check '"$CG"' $0 $1' > $OUT/checks.txt 2>&1
echo "checks: $(grep -c '^ok' $OUT/checks.txt) ok, $(grep -c '^FAIL' $OUT/checks.txt) failed"; grep -A3 FAIL $OUT/checks.txt | head -20
for c in "specs/ece408-2018sp.yaml 1" "bench/specs/zoo-mlp.yaml 8" "bench/specs/zoo-prime.yaml 1" "specs/ece408-2017.yaml 64" "bench/specs/zoo-vgg3x3.yaml 1"; do
  echo "$c"; done | xargs -P 5 -L 1 bash -c 'spec_sanitize '"$CG"' $0 $1' 2>&1 | tee $OUT/sanitize.txt
