#!/usr/bin/env bash
# same_figures.sh — on a GPU machine: does a new convgen binary give the figures
# an older one gives? For every shipped network (specs/, its trained weights,
# the 10,000 Fashion-MNIST test images) and every zoo network (bench/specs/,
# random weights from the default seed and 10,000 made-up images written once),
# both binaries run 10,000 images:
#   - predictions and scores (--output CSV) compared byte for byte;
#   - the shipped models' Correctness line against models/accuracy.txt;
#   - GPU time of the whole network (run --json total_s, --repeat R, the
#     binaries alternating, ROUNDS rounds, the median of each) side by side.
#
#   bash bench/scripts/same_figures.sh NEW BASE [DATA_DIR] [SPEC...]
#
# DATA_DIR holds the Fashion-MNIST IDX files (default: Debian's). Environment:
# REPEAT (default 10), ROUNDS (default 3). One line per network; exit 1 when
# any prediction or accuracy differs.
set -u
NEW=$1 BASE=$2 DATA=${3:-/usr/share/datasets/fashion-mnist}
shift $(( $# >= 3 ? 3 : $# ))
SPECS=${*:-$(ls specs/ece408-*.yaml bench/specs/*.yaml)}
REPEAT=${REPEAT:-10} ROUNDS=${ROUNDS:-3}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
printf '%-22s %10s %10s %7s  %s\n' network new_ms base_ms ratio "predictions / accuracy"
for s in $SPECS; do
  n=$(basename "$s" .yaml)
  want=
  case $s in
    specs/*) src=(--input "$DATA/t10k-images-idx3-ubyte.gz" --labels "$DATA/t10k-labels-idx1-ubyte.gz")
             want=$(awk -v n="$n" '$1 == n {print $2}' models/accuracy.txt) ;;
    *) # 10,000 made-up uint8 images of the network's input shape, the same for both binaries
       python3 - "$NEW" "$s" "$t/$n.npy" <<'PY' || echo "$n: no input images"
import json, random, subprocess, sys
info = json.loads(subprocess.run([sys.argv[1], "info", sys.argv[2], "--json"], check=True,
                                 capture_output=True, text=True).stdout)
c, h, w = info["input"]
hdr = "{'descr': '|u1', 'fortran_order': False, 'shape': (10000, %d, %d, %d), }" % (c, h, w)
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
rng = random.Random(7)
with open(sys.argv[3], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode())
    f.write(bytes(rng.getrandbits(8) for _ in range(10000 * c * h * w)))
PY
       src=(--input "$t/$n.npy") ;;
  esac
  for side in new base; do
    bin=$NEW; [ $side = base ] && bin=$BASE
    "$bin" run "$s" --images 10000 "${src[@]}" --output "$t/$side.csv" >"$t/$side.log" 2>&1 || echo "$n: $side run failed: $(tail -1 "$t/$side.log")"
  done
  same=identical
  cmp -s "$t/new.csv" "$t/base.csv" || { same="DIFFER"; fail=1; }
  [ -s "$t/new.csv" ] || { same="MISSING"; fail=1; }
  if [ -n "$want" ]; then
    got=$(sed -n 's/^Correctness: \([0-9.]*\) Model: .*/\1/p' "$t/new.log")
    if [ "$got" = "$want" ]; then same="$same, Correctness $got as models/accuracy.txt"
    else same="$same, Correctness $got, models/accuracy.txt $want"; fail=1; fi
  fi
  : >"$t/new.times"; : >"$t/base.times"
  for r in $(seq "$ROUNDS"); do
    for side in new base; do
      bin=$NEW; [ $side = base ] && bin=$BASE
      "$bin" run "$s" --images 10000 "${src[@]}" --repeat "$REPEAT" --json "$t/$side.json" >/dev/null 2>&1 \
        && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_s"] * 1e3)' "$t/$side.json" >>"$t/$side.times"
    done
  done
  med() { sort -g "$1" | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }
  a=$(med "$t/new.times") b=$(med "$t/base.times")
  printf '%-22s %10.4f %10.4f %7.3f  %s\n' "$n" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print (b > 0 ? a / b : 0)}')" "$same"
done
exit $fail
