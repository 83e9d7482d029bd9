# call 12: the large batch unchanged (inputs over 64 KB a batch go up from the pinned staging as
# before) and every network checked at 1,100 images (the large batch's kernels) with the change
set -u
export XDG_CACHE_HOME=/tmp/cgc
. bench/scripts/cell_spec.sh
export -f spec_check
ls specs/ece408-*.yaml bench/specs/*.yaml | xargs -P 8 -L 1 bash -c 'spec_check .dev/inl/convgen $0 1100' > $OUT/checks-1100.txt 2>&1
echo "checks at 1,100: $(grep -c '^ok' $OUT/checks-1100.txt) ok, $(grep -c '^FAIL' $OUT/checks-1100.txt) failed"
grep -A3 '^FAIL' $OUT/checks-1100.txt | head
python3 bench/latency.py specs/ece408-2017.yaml specs/ece408-2018sp.yaml specs/ece408-2018fa.yaml --batches 10000 --repeat 10 \
  --convgen .dev/inl/convgen --baseline .dev/cur/convgen 2>&1 | tail -12
