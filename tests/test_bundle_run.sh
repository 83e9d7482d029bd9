#!/usr/bin/env bash
# test_bundle_run.sh — bundles and the user's data through the command line,
# on the CPU backend (no GPU needed: `convgen build` compiles with NVRTC).
#  - `convgen build SPEC -o NET.cgb` writes one file; `convgen run NET.cgb`
#    from a directory holding nothing but it gives the spec's predictions and
#    scores (trained F16 weights, and a spec's seeded random ones);
#  - truncated, damaged (a byte changed at many offsets) and foreign bundles,
#    and kernel options on a bundle: one line naming the file, exit 3 (2);
#  - run --input: .npy uint8 and IDX (plain, gzip) give the same predictions
#    for the same images, float32 .npy scaled as the spec says too; --labels
#    gives Correctness, without it none; --output .csv and .npy; shape, dtype
#    and count mismatches refused with what was expected.
set -u
. tests/lib.sh
cg=$PWD/build/convgen
d=/usr/share/datasets/fashion-mnist

# mknpy OUT DESCR SHAPE DATA: a version 1.0 .npy of DATA's bytes
mknpy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  local pad=$(( (64 - (${#h} + 11) % 64) % 64 )) hl
  hl=$(( ${#h} + pad + 1 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((hl & 255)))\\x$(printf %02x $((hl >> 8)))"
    printf '%s' "$h"; printf "%${pad}s" ''; printf '\n'; cat "$4"; } > "$1"
}

# ---- build: one file, atomically written, nothing else left beside it ----
mkdir "$t/b"
"$cg" build specs/ece408-2017.yaml --arch 75 -o "$t/b/net.cgb" >"$t/out" 2>&1 && ok || bad "build: $(cat "$t/out")"
[ "$(ls "$t/b")" = net.cgb ] && ok || bad "build left $(ls "$t/b")"
head -c 4 "$t/b/net.cgb" | od -An -c | grep -q 'C   G   B' && ok || bad "net.cgb lacks the magic"
"$cg" build specs/ece408-2017.yaml --arch 75 -o "$t/nodir/net.cgb" >/dev/null 2>"$t/e"; rc=$?
[ $rc -ne 0 ] && [ ! -e "$t/nodir" ] && ok || bad "build into a missing directory: exit $rc"

# ---- the user's images in every form ----
if [ -e "$d/t10k-images-idx3-ubyte.gz" ]; then
  n=300
  gzip -dc "$d/t10k-images-idx3-ubyte.gz" > "$t/img"
  gzip -dc "$d/t10k-labels-idx1-ubyte.gz" > "$t/lab"
  tail -c +17 "$t/img" | head -c $((n * 784)) > "$t/raw"
  tail -c +9 "$t/lab" | head -c $n > "$t/rawlab"
  mknpy "$t/u8.npy" '|u1' "$n, 28, 28" "$t/raw"
  mknpy "$t/u8c.npy" '|u1' "$n, 1, 28, 28" "$t/raw"
  mknpy "$t/lab.npy" '|u1' "$n," "$t/rawlab"

  # the spec and the bundle (run from an otherwise empty directory) agree exactly
  "$cg" run specs/ece408-2017.yaml --backend cpu --input "$t/u8.npy" --output "$t/spec.csv" >"$t/out" 2>&1 \
    && ok || bad "run spec --input npy: $(cat "$t/out")"
  ! grep -q '^Correctness' "$t/out" && grep -q "^Predictions: $n images (no labels)" "$t/out" && ok \
    || bad "without labels: no Correctness line expected: $(cat "$t/out")"
  (cd "$t/b" && "$cg" run net.cgb --backend cpu --input "$t/u8.npy" --output "$t/bundle.csv") >"$t/out" 2>&1 \
    && ok || bad "run net.cgb: $(cat "$t/out")"
  grep -q 'from the bundle' "$t/out" && ok || bad "bundle run does not say where its weights came from"
  cmp -s "$t/spec.csv" "$t/bundle.csv" && ok || bad "bundle and spec predictions/scores differ"
  [ "$(ls "$t/b")" = net.cgb ] && ok || bad "the run wrote into the bundle's directory: $(ls "$t/b")"
  [ "$(wc -l < "$t/spec.csv")" -eq $((n + 1)) ] && head -1 "$t/spec.csv" | grep -q '^index,prediction,score_0,' \
    && ok || bad "csv shape: $(head -2 "$t/spec.csv")"
  # the data-set run: the same accuracy line
  a=$("$cg" run specs/ece408-2017.yaml --backend cpu --images $n 2>&1 | grep '^Correctness')
  b=$(cd "$t/b" && "$cg" run net.cgb --backend cpu --images $n 2>&1 | grep '^Correctness')
  [ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "Correctness: spec '$a', bundle '$b'"

  # IDX plain and gzip, N x C x H x W .npy: the same predictions and scores
  for f in "$t/img" "$d/t10k-images-idx3-ubyte.gz" "$t/u8c.npy"; do
    "$cg" run specs/ece408-2017.yaml --backend cpu --input "$f" --images $n --output "$t/o.csv" >"$t/out" 2>&1 \
      && cmp -s "$t/o.csv" "$t/spec.csv" && ok || bad "--input $f differs from the .npy: $(tail -2 "$t/out")"
  done
  # labels: idx1 and .npy give the data set's accuracy
  for il in "$t/img $t/lab" "$t/u8.npy $t/lab.npy"; do
    set -- $il
    c=$("$cg" run specs/ece408-2017.yaml --backend cpu --input "$1" --images $n --labels "$2" 2>&1 | grep '^Correctness')
    [ "$c" = "$a" ] && ok || bad "--input $1 --labels $2: '$c', the data set says '$a'"
  done
  # float32 .npy: the spec's scaling applied by the caller gives the same predictions
  if command -v python3 >/dev/null; then
    python3 -c '
import struct, sys
raw = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(struct.pack("<%df" % len(raw), *[p * (1 / 255.0) for p in raw]))' "$t/raw" "$t/rawf"
    mknpy "$t/f32.npy" '<f4' "$n, 28, 28" "$t/rawf"
    "$cg" run specs/ece408-2017.yaml --backend cpu --input "$t/f32.npy" --output "$t/f.csv" >"$t/out" 2>&1 \
      && ok || bad "--input float32: $(cat "$t/out")"
    cut -d, -f2 "$t/f.csv" | cmp -s - <(cut -d, -f2 "$t/spec.csv") && ok || bad "float32 predictions differ from uint8"
  else
    echo "skip: float32 .npy (no python3 to write one)"
  fi
  # --output .npy: float32 N x classes
  "$cg" run specs/ece408-2017.yaml --backend cpu --input "$t/u8.npy" --output "$t/s.npy" >/dev/null 2>&1 && ok || bad "--output .npy"
  head -c 128 "$t/s.npy" | grep -q "'descr': '<f4', 'fortran_order': False, 'shape': ($n, 10)" && ok \
    || bad ".npy output header: $(head -c 128 "$t/s.npy")"
  [ "$(stat -c %s "$t/s.npy")" -eq $((128 + n * 40)) ] && ok || bad ".npy output size $(stat -c %s "$t/s.npy")"

  # a spec with seeded random weights: the bundle stores them, exactly
  "$cg" build specs/example-conv.yaml --arch 75 -o "$t/b/ex.cgb" >"$t/out" 2>&1 && ok || bad "build example-conv: $(cat "$t/out")"
  "$cg" run specs/example-conv.yaml --backend cpu --input "$t/u8.npy" --images 20 --output "$t/ex1.csv" >/dev/null 2>&1
  "$cg" run "$t/b/ex.cgb" --backend cpu --input "$t/u8.npy" --images 20 --output "$t/ex2.csv" >"$t/out" 2>&1
  [ -s "$t/ex1.csv" ] && cmp -s "$t/ex1.csv" "$t/ex2.csv" && ok || bad "random-weight bundle differs: $(cat "$t/out")"
  rm -f "$t/b/ex.cgb"

  # refusals: what was expected, exit 3 (input) or 2 (usage)
  head -c $((4 * 3 * 784)) "$t/raw" > "$t/raw3"; mknpy "$t/c3.npy" '|u1' '4, 3, 28, 28' "$t/raw3"
  head -c $((4 * 784 * 4)) "$t/raw" > "$t/raw4"; mknpy "$t/i4.npy" '<i4' '4, 28, 28' "$t/raw4"
  while IFS=';' read -r want what args; do
    "$cg" run specs/ece408-2017.yaml --backend cpu $args >/dev/null 2>"$t/e"; rc=$?
    [ $rc -eq "$want" ] && grep -qF -- "$what" "$t/e" && [ "$(wc -l < "$t/e")" -le 2 ] && ok \
      || bad "run $args: exit $rc (want $want), '$(cat "$t/e")' lacks '$what'"
  done <<EOF
3;the spec's input has 1;--input $t/c3.npy
3;expected |u1 (uint8) or <f4 (float32);--input $t/i4.npy
3;the images file holds $n images;--input $t/u8.npy --labels $t/lab
2;FILE.csv or FILE.npy expected;--input $t/u8.npy --output $t/x.txt
2;--labels needs --input FILE;--labels $t/lab
2;--output needs --input FILE;--output $t/x.csv
2;--input and --random-input;--input $t/u8.npy --random-input 1
2;holds $n images;--input $t/u8.npy --images $((n + 1))
EOF
else
  echo "skip: --input tests ($d not found)"
fi

# ---- damaged bundles: one line naming the file, exit 3, at many offsets ----
size=$(stat -c %s "$t/b/net.cgb")
for off in 0 3 8 12 16 24 40 56 60 100 1000 5000 50000 $((size / 2)) $((size - 100)) $((size - 1)); do
  cp "$t/b/net.cgb" "$t/x.cgb"
  printf "\\x$(printf %02x $(( ($(od -An -tu1 -j "$off" -N1 "$t/x.cgb") + 1) % 256 )))" \
    | dd of="$t/x.cgb" bs=1 seek="$off" conv=notrunc 2>/dev/null
  "$cg" run "$t/x.cgb" --backend cpu --random-input 1 --images 2 >/dev/null 2>"$t/e"; rc=$?
  [ $rc -eq 3 ] && [ "$(wc -l < "$t/e")" -eq 1 ] && grep -qF "$t/x.cgb" "$t/e" && ok \
    || bad "byte $off changed: exit $rc, $(cat "$t/e")"
done
for len in 0 7 23 200 $((size - 1)); do
  head -c "$len" "$t/b/net.cgb" > "$t/x.cgb"
  "$cg" run "$t/x.cgb" --backend cpu >/dev/null 2>"$t/e"; rc=$?
  [ $rc -eq 3 ] && [ "$(wc -l < "$t/e")" -eq 1 ] && grep -qF "$t/x.cgb" "$t/e" && ok \
    || bad "truncated to $len: exit $rc, $(cat "$t/e")"
done
cp specs/ece408-2017.yaml "$t/foreign.cgb"
"$cg" check "$t/foreign.cgb" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q 'not a convgen bundle' "$t/e" && ok || bad "foreign bundle: exit $rc, $(cat "$t/e")"
# a renamed bundle is still one (its magic)
cp "$t/b/net.cgb" "$t/renamed.bin"
"$cg" run "$t/renamed.bin" --backend cpu --random-input 1 --images 2 >"$t/out" 2>&1 && grep -q 'from the bundle' "$t/out" \
  && ok || bad "renamed bundle: $(cat "$t/out")"
for o in "--fatbin x.fatbin" "--tuning x.yaml" --no-tuning --no-cache; do
  "$cg" run "$t/b/net.cgb" $o >/dev/null 2>"$t/e"; rc=$?
  [ $rc -eq 2 ] && grep -q 'a bundle carries its kernels' "$t/e" && ok || bad "run net.cgb $o: exit $rc, $(cat "$t/e")"
done
echo "test_bundle_run: $pass passed, $fail failed"
[ $fail -eq 0 ]
