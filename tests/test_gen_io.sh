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

echo "test_gen_io: $pass passed, $fail failed"
[ $fail -eq 0 ]
