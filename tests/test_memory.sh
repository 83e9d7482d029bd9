#!/usr/bin/env bash
# test_memory.sh — memory follows what is asked for, not what a file could
# make of it, checked under `ulimit -v` (address space, in KiB):
#  - `convgen data --resize S` resizes and writes a chunk of images at a time:
#    160 images resized to 512x512 (41 MB) are written under a 48 MiB limit
#    (holding the whole set, as once, took about 100 MB), and a request the
#    file system cannot hold is refused up front, naming the bytes it needs;
#  - `run --input X.idx.gz --images 10` decodes 10 images, not the whole file:
#    a 270 kB gzip IDX whose 256 images of 1024x1024 unpack to 256 MiB runs
#    under the same limit, and its labels are still checked against its count.
# The files are made here (zeros, random bytes, sparse files), in a temporary
# directory removed on exit. Under AddressSanitizer (make sanitize), which
# reserves far more address space than any limit here, the limit is left off
# and only the results are checked.
set -u
. "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
limit=49152 # KiB
asan=; grep -qa __asan_init $cg && asan=1 && echo "test_memory: AddressSanitizer build: no ulimit -v"
limited() { if [ -n "$asan" ]; then "$@"; else (ulimit -v $limit && exec "$@"); fi; }

# IDX headers: be32 N; hdr KIND COUNT [SIDE] (KIND 3: images, 1: labels)
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
hdr() { printf "\\x00\\x00\\x08\\x0$1"; be32 "$2"; [ "$1" = 3 ] && { be32 "$3"; be32 "$3"; }; true; }
set_of() { # dir name count: 28x28 random images, labels 0
  { hdr 3 "$3" 28; head -c $(($3 * 784)) /dev/urandom; } >"$1/$2-images-idx3-ubyte"
  { hdr 1 "$3"; head -c "$3" /dev/zero; } >"$1/$2-labels-idx1-ubyte"
}
sparse_set() { # dir name count: the same, all zeros, as sparse files (no disk)
  hdr 3 "$3" 28 >"$1/$2-images-idx3-ubyte"; truncate -s $((16 + $3 * 784)) "$1/$2-images-idx3-ubyte"
  hdr 1 "$3" >"$1/$2-labels-idx1-ubyte"; truncate -s $((8 + $3)) "$1/$2-labels-idx1-ubyte"
}

# 1. data --resize: a chunk at a time
mkdir -p "$t/src" "$t/one"
set_of "$t/src" train 160; set_of "$t/src" t10k 1
limited $cg data --resize 512 -o "$t/out" --data "$t/src" >"$t/d.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ok || bad "data --resize 512 of 160 images under ${limit} KiB: exit $rc: $(cat "$t/d.out")"
[ "$(stat -c %s "$t/out/train-images-idx3-ubyte" 2>/dev/null)" = $((16 + 160 * 512 * 512)) ] && ok ||
  bad "train images not the size of 160 images of 512x512"
# the last image written is what `data` makes of that image alone
{ hdr 3 1 28; tail -c 784 "$t/src/train-images-idx3-ubyte"; } >"$t/one/train-images-idx3-ubyte"
{ hdr 1 1; printf '\x00'; } >"$t/one/train-labels-idx1-ubyte"
cp "$t/src"/t10k-* "$t/one/"
$cg data --resize 512 -o "$t/one-out" --data "$t/one" >/dev/null 2>&1
[ -s "$t/one-out/train-images-idx3-ubyte" ] && [ -s "$t/out/train-images-idx3-ubyte" ] &&
  cmp -s <(tail -c $((512 * 512)) "$t/out/train-images-idx3-ubyte") <(tail -c $((512 * 512)) "$t/one-out/train-images-idx3-ubyte") &&
  ok || bad "the last image written differs from that image resized alone"
[ -z "$(ls "$t/out" | grep tmp)" ] && ok || bad "temporary files left in $t/out: $(ls "$t/out")"
rm -rf "$t/out" "$t/one-out"
# more than the file system holds: refused before anything is written, the
# output directory included
need=$((2 * (16 + 8) + 70000 * (1 + 4096 * 4096)))
free=$(df --output=avail -B1 "$t" 2>/dev/null | tail -n 1)
if [ -n "$free" ] && [ "$free" -lt "$need" ]; then
  mkdir -p "$t/big"; sparse_set "$t/big" train 60000; sparse_set "$t/big" t10k 10000
  $cg data --resize 4096 -o "$t/out" --data "$t/big" >"$t/d.out" 2>&1
  rc=$?
  [ $rc -ne 0 ] && grep -q "(70000 images) need $need bytes (1.2 TB); the file system there has .* free" "$t/d.out" && ok ||
    bad "data --resize 4096 of 70000 images: exit $rc: $(cat "$t/d.out")"
  [ ! -e "$t/out" ] && ok || bad "$t/out made before the refusal: $(ls -A "$t/out")"
  rm -rf "$t/big"
else
  echo "test_memory: ${free:-?} bytes free here: the up-front refusal is not tried"
fi

# 2. run --input X.idx.gz --images 10: 10 images decoded of 256 MiB
head -c 1048576 /dev/zero | gzip -9 >"$t/z.gz"
zs=(); for _ in $(seq 256); do zs+=("$t/z.gz"); done
{ hdr 3 256 1024 | gzip; cat "${zs[@]}"; } >"$t/big.idx.gz"
run10() { limited $cg run specs/ece408-2017.yaml --backend cpu --input "$t/big.idx.gz" --images 10 "$@" >"$t/r.out" 2>&1; }
run10
rc=$?
[ $rc -eq 0 ] && grep -q '^Predictions: 10 images' "$t/r.out" && ok ||
  bad "run --input (256 MiB unpacked) --images 10 under ${limit} KiB: exit $rc: $(tail -2 "$t/r.out")"
# the labels are checked against the header's 256, whatever --images keeps
{ hdr 1 256; head -c 256 /dev/zero; } >"$t/lab256"
{ hdr 1 255; head -c 255 /dev/zero; } >"$t/lab255"
run10 --labels "$t/lab256"
rc=$?
[ $rc -eq 0 ] && grep -q '^Correctness: ' "$t/r.out" && ok || bad "256 labels: exit $rc: $(tail -2 "$t/r.out")"
run10 --labels "$t/lab255"
rc=$?
[ $rc -eq 3 ] && grep -q 'lab255: holds 255 labels, the images file holds 256 images' "$t/r.out" && ok ||
  bad "255 labels for 256 images: exit $rc: $(tail -2 "$t/r.out")"
# --images beyond the file is still refused
$cg run specs/ece408-2017.yaml --backend cpu --input "$t/src/train-images-idx3-ubyte" --images 300 >"$t/r.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q 'holds 160 images' "$t/r.out" && ok || bad "--images 300 of 160: exit $rc: $(tail -2 "$t/r.out")"

echo "test_memory: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
