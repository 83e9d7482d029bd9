#!/usr/bin/env bash
# test_files.sh — the files convgen writes, through the command line (no GPU):
#  - an output that is one of the command's inputs (same file, any spelling,
#    a hard link) is refused with exit 2, the file untouched: run --output and
#    --json, build -o, tune -o and --csv;
#  - tune --csv never follows a link planted at its name;
#  - what killed runs left is reclaimed by the next run, and nothing else:
#    X.tmp.PID.N beside run's outputs, TMPDIR/convgen-aot-PID-XXXXXX after
#    builds, kernel files of a generate killed while placing its files.
set -u
. tests/lib.sh
cg=$PWD/build/convgen

# mknpy OUT DESCR SHAPE DATA: a version 1.0 .npy of DATA's bytes
mknpy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  local pad=$(( (64 - (${#h} + 11) % 64) % 64 )) hl
  hl=$(( ${#h} + pad + 1 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((hl & 255)))\\x$(printf %02x $((hl >> 8)))"
    printf '%s' "$h"; printf "%${pad}s" ''; printf '\n'; cat "$4"; } > "$1"
}
# a pid no process has now
dead_pid() { sh -c 'exit 0' & local p=$!; wait $p; echo $p; }

cp specs/example-conv.yaml "$t/net.yaml"
head -c $((2 * 784)) /dev/urandom > "$t/raw"
mknpy "$t/imgs.npy" '|u1' "2, 28, 28" "$t/raw"
cp "$t/imgs.npy" "$t/imgs.orig"; cp "$t/net.yaml" "$t/net.orig"
"$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/o.npy" >"$t/out" 2>&1 \
  && [ -s "$t/o.npy" ] && ok || bad "run --input --output: $(cat "$t/out")"

# ---- an output that is an input: exit 2, one line naming it, nothing replaced ----
refused() { # what file-that-must-stay original command...
  local what=$1 keep=$2 orig=$3; shift 3
  "$@" >"$t/out" 2>"$t/e"; local rc=$?
  if [ $rc -eq 2 ] && cmp -s "$keep" "$orig" && grep -q "which this command reads" "$t/e"; then ok
  else bad "$what: exit $rc, $(head -c 300 "$t/e")"; cp "$orig" "$keep"; fi
}
ln "$t/imgs.npy" "$t/hard.npy"
refused "run --output = --input" "$t/imgs.npy" "$t/imgs.orig" \
  "$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/imgs.npy"
refused "run --output = --input, spelled another way" "$t/imgs.npy" "$t/imgs.orig" \
  "$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/./imgs.npy"
refused "run --output a hard link of --input" "$t/imgs.npy" "$t/imgs.orig" \
  "$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/hard.npy"
refused "run --json = --input" "$t/imgs.npy" "$t/imgs.orig" \
  "$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --json "$t/imgs.npy"
refused "run --json = the spec" "$t/net.yaml" "$t/net.orig" \
  "$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --json "$t/net.yaml"
refused "build -o the spec" "$t/net.yaml" "$t/net.orig" "$cg" build "$t/net.yaml" --arch 90 -o "$t/net.yaml"
refused "tune -o the spec" "$t/net.yaml" "$t/net.orig" "$cg" tune "$t/net.yaml" -o "$t/net.yaml"
refused "tune --csv the spec" "$t/net.yaml" "$t/net.orig" "$cg" tune "$t/net.yaml" --csv "$t/net.yaml"
# a spec with a weights file: neither build nor run writes over the weights
mkdir -p "$t/w"
sed 's|^weights: .*|weights: w.safetensors|' specs/ece408-2017.yaml > "$t/w/net.yaml"
grep -q '^weights: w.safetensors' "$t/w/net.yaml" && ok || bad "the spec names no weights file"
cp models/ece408-2017.safetensors "$t/w/w.safetensors"; cp "$t/w/w.safetensors" "$t/w/w.orig"
refused "build -o the weights" "$t/w/w.safetensors" "$t/w/w.orig" \
  "$cg" build "$t/w/net.yaml" --arch 90 -o "$t/w/w.safetensors"
refused "run --json the weights" "$t/w/w.safetensors" "$t/w/w.orig" \
  "$cg" run "$t/w/net.yaml" --backend cpu --random-input 1 --images 2 --json "$t/w/w.safetensors"
# the default tuning record beside the spec is read too
printf 'convgen: %s\ndevice: "X"\ncc: 90\nsms: 132\ndriver: 12000\nbatch: 1\nlayers: []\n' \
  "$("$cg" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)" > "$t/net.tuning.yaml"
cp "$t/net.tuning.yaml" "$t/rec.orig"
refused "build -o the tuning record" "$t/net.tuning.yaml" "$t/rec.orig" \
  "$cg" build "$t/net.yaml" --arch 90 -o "$t/net.tuning.yaml"
rm -f "$t/net.tuning.yaml"
"$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/x.npy" --json "$t/x.npy" >/dev/null 2>"$t/e"
rc=$?; [ $rc -eq 2 ] && [ ! -e "$t/x.npy" ] && ok || bad "--json = --output: exit $rc, $(cat "$t/e")"

# data -o the directory the sets are read from: the resized sets carry the standard names
mkdir -p "$t/ds"; echo keep > "$t/ds/t10k-images-idx3-ubyte"
"$cg" data --resize 14 --data "$t/ds" -o "$t/ds/." >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && [ "$(ls "$t/ds")" = t10k-images-idx3-ubyte ] && [ "$(cat "$t/ds/t10k-images-idx3-ubyte")" = keep ] \
  && ok || bad "data -o its --data directory: exit $rc, $(cat "$t/e")"

# ---- tune --csv: a planted link is refused before anything, its target untouched ----
echo precious > "$t/victim"; ln -s "$t/victim" "$t/link.csv"
"$cg" tune "$t/net.yaml" --csv "$t/link.csv" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && [ "$(cat "$t/victim")" = precious ] && [ -L "$t/link.csv" ] && grep -q "link.csv" "$t/e" \
  && ok || bad "tune --csv through a link: exit $rc, $(cat "$t/e")"

# ---- temp files killed writers left beside an output: reclaimed; others stay ----
dead=$(dead_pid)
for f in "o.npy.tmp.$dead.0" "o.npy.tmp.$dead.12" "r.json.tmp.$dead.0"; do echo x > "$t/$f"; done
for f in "o.npy.tmp.$$.0" "o.npy.tmp.$dead" "o.npy.tmp.$dead.0.mine" "p.npy.tmp.$dead.0"; do echo keep > "$t/$f"; done
ln -s "$t/victim" "$t/o.npy.tmp.$dead.3"
"$cg" run "$t/net.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/o.npy" --json "$t/r.json" >"$t/out" 2>&1 \
  && ok || bad "run: $(cat "$t/out")"
left=$(cd "$t" && ls -A | grep -E '^(o\.npy|r\.json|p\.npy)\.tmp' | sort | tr '\n' ' ')
want=$(printf '%s\n' "o.npy.tmp.$$.0" "o.npy.tmp.$dead" "o.npy.tmp.$dead.0.mine" "o.npy.tmp.$dead.3" \
       "p.npy.tmp.$dead.0" | sort | tr '\n' ' ')
[ "$left" = "$want" ] && [ "$(cat "$t/victim")" = precious ] && ok \
  || bad "temp files beside the outputs: left '$left', expected '$want'"

# ---- build: working directories of killed builds in TMPDIR are removed ----
mkdir -p "$t/tmp/convgen-aot-$dead-Ab12Cd" "$t/tmp/convgen-aot-$$-Ab12Cd" "$t/tmp/convgen-aot-Ab12Cd" \
  "$t/tmp/convgen-aot-$dead-keep01"
for d in "convgen-aot-$dead-Ab12Cd" "convgen-aot-$$-Ab12Cd" "convgen-aot-Ab12Cd" "convgen-aot-$dead-keep01"; do
  touch "$t/tmp/$d/sm_90.cubin" "$t/tmp/$d/compute_90.ptx" "$t/tmp/$d/out.fatbin"
done
touch "$t/tmp/convgen-aot-$dead-keep01/notes.txt"
TMPDIR="$t/tmp" "$cg" build "$t/net.yaml" --arch 90 -o "$t/net.fatbin" >"$t/out" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -qE "fatbinary not found|NVRTC|nvrtc" "$t/out"; then
  echo "skip: build's temp directories (no CUDA toolkit: $(tail -1 "$t/out"))"
else
  [ $rc -eq 0 ] && ok || bad "build: $(cat "$t/out")"
  got=$(cd "$t/tmp" && find . | sort | tr '\n' ' ')
  want=$(cd "$t/tmp" && printf '%s\n' . "./convgen-aot-$$-Ab12Cd" "./convgen-aot-$$-Ab12Cd/sm_90.cubin" \
    "./convgen-aot-$$-Ab12Cd/compute_90.ptx" "./convgen-aot-$$-Ab12Cd/out.fatbin" ./convgen-aot-Ab12Cd \
    ./convgen-aot-Ab12Cd/sm_90.cubin ./convgen-aot-Ab12Cd/compute_90.ptx ./convgen-aot-Ab12Cd/out.fatbin \
    "./convgen-aot-$dead-keep01" "./convgen-aot-$dead-keep01/notes.txt" | sort | tr '\n' ' ')
  [ "$got" = "$want" ] && ok || bad "TMPDIR after a build: '$got', expected '$want'"
fi

# ---- generate killed while placing its files: the next run leaves only what the manifest names ----
same_as_manifest() { # dir
  diff <(awk '$1 == "kernel" { print $2 ".cu" }' "$1/manifest.txt" | sort -u) \
       <(cd "$1" && ls -A | grep -v -e '^manifest.txt$' -e '^mine' | sort) >/dev/null
}
if strace -f -qq -o /dev/null true 2>/dev/null; then
  # killed at its third rename: two new kernels in place, the old manifest still there
  d="$t/gen"; "$cg" generate specs/ece408-2018fa.yaml -o "$d" >/dev/null 2>&1
  echo 'user file' > "$d/mine.cu"; head -3 "$d/softmax_e10_pred_b128.cu" > "$d/mine_copy.cu"
  bash -c 'strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 \
    -e inject=rename,renameat,renameat2:signal=KILL:when=3 "$0" generate specs/ece408-2017.yaml -o "$1"; exit $?' "$cg" "$d" \
    >/dev/null 2>&1
  rc=$?; [ $rc -eq 137 ] && ok || bad "generate under strace was not killed (exit $rc)"
  "$cg" generate specs/ece408-2018fa.yaml -o "$d" >/dev/null 2>&1 && same_as_manifest "$d" \
    && ok || bad "after a generate killed mid-rename: $(ls -A "$d")"
  [ -f "$d/mine.cu" ] && [ -f "$d/mine_copy.cu" ] && ok || bad "files convgen did not write were removed"
  # killed at its first removal: the new manifest in place, the previous kernels not yet removed
  d="$t/gen2"; "$cg" generate specs/ece408-2018fa.yaml -o "$d" >/dev/null 2>&1
  bash -c 'strace -f -qq -o /dev/null -e trace=unlink,unlinkat -e inject=unlink,unlinkat:signal=KILL:when=1 \
    "$0" generate specs/example-conv.yaml -o "$1"; exit $?' "$cg" "$d" >/dev/null 2>&1
  rc=$?; [ $rc -eq 137 ] && ok || bad "generate under strace was not killed (exit $rc)"
  "$cg" generate specs/example-conv.yaml -o "$d" >/dev/null 2>&1 && same_as_manifest "$d" \
    && [ -z "$(ls -A "$d" | grep '^\.convgen-tmp')" ] && ok || bad "after a generate killed mid-removal: $(ls -A "$d")"
else
  echo "skip: generate killed mid-write (strace cannot trace here)"
fi
# an empty manifest.txt is no convgen manifest: refused, as any other file convgen did not write
mkdir -p "$t/gen3"; : > "$t/gen3/manifest.txt"
"$cg" generate specs/example-conv.yaml -o "$t/gen3" >/dev/null 2>&1; rc=$?
[ $rc -eq 5 ] && [ "$(ls -A "$t/gen3")" = manifest.txt ] && [ ! -s "$t/gen3/manifest.txt" ] && ok \
  || bad "an empty manifest.txt was replaced (exit $rc)"

echo "test_files.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
