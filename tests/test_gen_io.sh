#!/usr/bin/env bash
# test_gen_io.sh — the verbs that write files, where they fail: identical layers
# share a kernel (generate, build), a full disk is exit 5 with nothing left
# (data, build), build reads every input before compiling and prints the
# compiler's log only for a failed compile, generate removes only files it wrote,
# a layer no configuration suits says which parameter has no legal value.
set -u
. "$(dirname "$0")/lib.sh"

# a file-size limit stands in for a full disk: writes past it fail with EFBIG
full_disk() { ( trap '' XFSZ; ulimit -f "$1"; shift; exec "$@" ); }

# ---- data: a full disk or an unwritable directory is exit 5, and no half set is left
be32() { printf "\\x$(printf %02x $(($1>>24&255)))\\x$(printf %02x $(($1>>16&255)))\\x$(printf %02x $(($1>>8&255)))\\x$(printf %02x $(($1&255)))"; }
idx() { # DIR SET IMAGES: an 8x8 set of IMAGES blank images, labels 0
  { be32 2051; be32 "$3"; be32 8; be32 8; head -c $(($3 * 64)) /dev/zero; } > "$1/$2-images-idx3-ubyte"
  { be32 2049; be32 "$3"; head -c "$3" /dev/zero; } > "$1/$2-labels-idx1-ubyte"
}
mkdir -p "$t/src"; idx "$t/src" train 2; idx "$t/src" t10k 40   # the test set's images: 2576 bytes
$cg data --resize 8 --data "$t/src" -o "$t/ok" >/dev/null 2>"$t/e" && [ "$(ls "$t/ok" | wc -l)" -eq 4 ] \
  && ok || bad "data into a fresh directory: $(cat "$t/e")"
full_disk 1 $cg data --resize 8 --data "$t/src" -o "$t/full/sub" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 5 ] && ok || bad "data on a full disk: expected exit 5, got $rc: $(cat "$t/e")"
[ "$(wc -l < "$t/e")" -eq 1 ] && grep -q "t10k-images-idx3-ubyte: write failed" "$t/e" && ok || bad "data on a full disk: one line naming the file: $(cat "$t/e")"
[ ! -e "$t/full" ] && ok || bad "data on a full disk left: $(ls -AR "$t/full")"
mkdir -p "$t/part"; echo mine > "$t/part/notes"
full_disk 1 $cg data --resize 8 --data "$t/src" -o "$t/part" >/dev/null 2>&1; rc=$?
[ $rc -eq 5 ] && [ "$(ls -A "$t/part")" = notes ] && ok || bad "data on a full disk, existing directory: exit $rc, left: $(ls -A "$t/part")"
$cg data --resize 8 --data "$t/nosuch" -o "$t/in" >/dev/null 2>&1; rc=$?
[ $rc -eq 3 ] && [ ! -e "$t/in" ] && ok || bad "data from a missing source: expected exit 3 and nothing made, got $rc"
if [ "$(id -u)" -ne 0 ]; then # root writes anywhere
  mkdir -p "$t/ro"; chmod 555 "$t/ro"
  $cg data --resize 8 --data "$t/src" -o "$t/ro" >/dev/null 2>&1; rc=$?
  [ $rc -eq 5 ] && [ -z "$(ls -A "$t/ro")" ] && ok || bad "data into a read-only directory: exit $rc"
  chmod 755 "$t/ro"
fi

# ---- generate removes only kernel files it wrote, whatever a manifest.txt names
d="$t/hand"; mkdir -p "$d"; echo 'my code' > "$d/mine.cu"
printf 'convgen-manifest 1\nkernel mine layer=x\nhash 0123456789abcdef\n' > "$d/manifest.txt"
$cg generate specs/example-conv.yaml -o "$d" >/dev/null 2>"$t/e"; rc=$?
[ "$(cat "$d/mine.cu" 2>/dev/null)" = 'my code' ] && ok || bad "generate removed mine.cu, which a hand-written manifest named (exit $rc)"
d="$t/hand2"; mkdir -p "$d"; echo 'my code' > "$d/mine.cu"
printf 'convgen-manifest 1\nkernel mine layer=x\n' > "$d/manifest.txt"
$cg generate specs/example-conv.yaml -o "$d" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 5 ] && [ "$(cat "$d/mine.cu")" = 'my code' ] && [ "$(ls -A "$d" | sort | tr '\n' ' ')" = 'manifest.txt mine.cu ' ] \
  && grep -q "not a convgen manifest" "$t/e" && ok || bad "a manifest without convgen's hash line: exit $rc, $(cat "$t/e"), left $(ls -A "$d")"
# what generate wrote itself is still replaced
d="$t/regen"
$cg generate specs/ece408-2017.yaml -o "$d" >/dev/null && $cg generate specs/example-conv.yaml -o "$d" >/dev/null \
  && diff <(ls "$d") <(ls tests/golden/example-conv) >/dev/null && ok || bad "a previous output not replaced: $(ls "$d")"

# ---- identical layers: one kernel used twice, by generate and by build
twofc='network: twofc
input: {channels: 1, height: 28, width: 28}
dataset: {name: fashion-mnist}
layers:
  - {name: fc1, op: fc, out: 784, activation: relu}
  - {name: fc2, op: fc, out: 784, activation: relu}
  - {name: fc3, op: fc, out: 10}'
printf '%s\n' "$twofc" > "$t/twofc.yaml"
$cg generate "$t/twofc.yaml" -o "$t/twofc" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && [ "$(ls "$t/twofc" | grep -c '^fc_vec_i784o784_relu_')" -eq 1 ] && ok || bad "generate, two identical fc layers: exit $rc $(cat "$t/e")"
[ "$(grep -c '^kernel fc_vec_i784o784_relu_' "$t/twofc/manifest.txt" 2>/dev/null)" = 2 ] && ok || bad "the shared kernel not launched once per layer"
grep -q '^// layer:      fc1, fc2$' "$t/twofc"/fc_vec_i784o784_relu_*.cu 2>/dev/null && ok || bad "the shared kernel's header does not name both layers"
printf '%s\n' "network: threeconv
input: {channels: 1, height: 28, width: 28}
dataset: {name: fashion-mnist}
layers:
  - {name: c0, op: conv, M: 8, K: 3, padding: 1}
  - {name: c1, op: conv, M: 8, K: 3, padding: 1}
  - {name: c2, op: conv, M: 8, K: 3, padding: 1}
  - {name: c3, op: conv, M: 8, K: 3, padding: 1}
  - {name: fc1, op: fc, out: 10}" > "$t/threeconv.yaml"
$cg generate "$t/threeconv.yaml" -o "$t/threeconv" >/dev/null 2>"$t/e" && ok || bad "generate, three identical padded convs: $(cat "$t/e")"
$cg run "$t/twofc.yaml" --backend cpu --random-input 1 --images 4 >/dev/null 2>"$t/e" && ok || bad "run on the CPU: $(cat "$t/e")"
if command -v fatbinary >/dev/null || [ -x /usr/local/cuda/bin/fatbinary ]; then
  $cg build "$t/twofc.yaml" --arch 75 -o "$t/twofc.fatbin" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 0 ] && [ -s "$t/twofc.fatbin" ] && grep -q "compiling 4 kernels" "$t/o" && ok || bad "build, two identical fc layers: exit $rc $(tail -3 "$t/e")"
  # ---- build reads every input before compiling, and prints no compiler log unless a compile failed
  cp specs/example-conv.yaml "$t/conv.yaml"
  printf '%s\nweights: missing.safetensors\n' "$(cat specs/example-conv.yaml)" > "$t/noweights.yaml"
  $cg build "$t/noweights.yaml" --arch 75 -o "$t/nw.cgb" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 3 ] && [ "$(wc -l < "$t/e")" -eq 1 ] && grep -q "missing.safetensors" "$t/e" && ok || bad "build with a missing weights file: exit $rc, $(wc -l < "$t/e") lines: $(head -3 "$t/e")"
  grep -q "compiling" "$t/o" && bad "build compiled before reading the weights: $(cat "$t/o")" || ok
  [ ! -e "$t/nw.cgb" ] && ok || bad "build with a missing weights file wrote $t/nw.cgb"
  for o in "$t/full.fatbin" "$t/full.cgb"; do
    full_disk 1 $cg build "$t/conv.yaml" --arch 75 -o "$o" >/dev/null 2>"$t/e"; rc=$?
    [ $rc -eq 5 ] && ok || bad "build -o $o on a full disk: expected exit 5, got $rc"
    [ "$(wc -l < "$t/e")" -eq 1 ] && grep -q "File too large" "$t/e" && ok || bad "build -o $o on a full disk printed $(wc -l < "$t/e") lines: $(head -3 "$t/e")"
    [ ! -e "$o" ] && ok || bad "build on a full disk left $o"
  done
fi

# ---- a layer no configuration suits: the parameter without a legal value, named
printf '%s\n' "network: k100
input: {channels: 1, height: 128, width: 128}
dataset: {name: fashion-mnist, resize: 128}
layers:
  - {name: c1, op: conv, M: 8, K: 100}
  - {name: fc1, op: fc, out: 10}" > "$t/k100.yaml"
$cg generate "$t/k100.yaml" -o "$t/k100" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && [ "$(wc -l < "$t/e")" -eq 1 ] && [ ! -e "$t/k100" ] && ok || bad "K=100: exit $rc, $(cat "$t/e")"
grep -q "k100.yaml:5:5: layer 'c1': conv2d_igemm has no legal value of bk on this layer (reduction depth" "$t/e" \
  && ok || bad "K=100 does not name the parameter without a legal value: $(cat "$t/e")"

echo "test_gen_io: $pass passed, $fail failed"
[ $fail -eq 0 ]
