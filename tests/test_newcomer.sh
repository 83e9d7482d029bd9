#!/usr/bin/env bash
# test_newcomer.sh — what a first-time user meets: help for help, a binary file
# given as a spec, a spec without a data set, one image's wording, the
# progress line (on a terminal only), tools/plot_tune.py without matplotlib,
# examples/classify.c on a resized network, and `convgen info`.
set -u
. "$(dirname "$0")/lib.sh"

mknpy() { # FILE DESCR SHAPE DATAFILE: a version-1 .npy
  local h="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  local pad=$(( (64 - (${#h} + 11) % 64) % 64 )) hl
  hl=$(( ${#h} + pad + 1 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((hl & 255)))\\x$(printf %02x $((hl >> 8)))"
    printf '%s' "$h"; printf "%${pad}s" ''; printf '\n'; cat "$4"; } > "$1"
}

# help --help, help -h: the usage, exit 0 (not "unknown verb")
for a in --help -h help; do
  $cg help $a >"$t/out" 2>"$t/e"; rc=$?
  [ $rc -eq 0 ] && grep -q '^usage: convgen VERB' "$t/out" && ok || bad "help $a: exit $rc: $(cat "$t/e")"
done

# an .npy (or gzip, or IDX) file given where a spec goes: said so, exit 3
head -c 784 /dev/zero > "$t/raw"
mknpy "$t/imgs.npy" '|u1' "1, 28, 28" "$t/raw"
$cg run "$t/imgs.npy" --backend cpu >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "imgs.npy:1:1: this looks like a NumPy .npy file, not a spec (specs are YAML" "$t/e" \
  && [ "$(wc -l < "$t/e")" -eq 1 ] && ok || bad "run imgs.npy: exit $rc: $(cat "$t/e")"
printf 'x' | gzip > "$t/x.gz"
$cg generate "$t/x.gz" -o "$t/g" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "this looks like a gzip file" "$t/e" && ok || bad "generate x.gz: exit $rc: $(cat "$t/e")"

# a spec with no data set: run names --input as well as --random-input; check only the latter
sed -e "/^dataset:/,/^ *name: fashion-mnist/d" -e "s|^weights: *|weights: $PWD/models/|" specs/ece408-2017.yaml > "$t/nodata.yaml"
! grep -q dataset "$t/nodata.yaml" && ok || bad "could not strip the dataset from the spec"
$cg run "$t/nodata.yaml" --backend cpu >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q -- "--input FILE" "$t/e" && grep -q -- "--random-input SEED" "$t/e" && ok \
  || bad "run without a data set: exit $rc: $(cat "$t/e")"
# one image: "1 image", "1 prediction"
$cg run "$t/nodata.yaml" --backend cpu --input "$t/imgs.npy" --output "$t/p.csv" >"$t/out" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && grep -q '^Predictions: 1 image (no labels)' "$t/out" && grep -q '^Output: 1 prediction and' "$t/out" \
  && ok || bad "one image: exit $rc: $(cat "$t/out" "$t/e")"

# tools/run-tests.sh: "[k/n] NAME" before each test, its counts and time after, a closing summary
r="$t/rt"; mkdir -p "$r/tests"
printf 'echo "a: 3 passed, 0 failed"\n' > "$r/tests/test_a.sh"
printf 'sleep 1; echo "b: 1 passed, 1 failed"; exit 1\n' > "$r/tests/test_b.sh"
printf '#!/bin/sh\necho "bin: 2 passed, 0 failed"\n' > "$r/bin"; chmod +x "$r/bin"
(cd "$r" && bash "$OLDPWD/tools/run-tests.sh" ./bin) >"$t/out" 2>&1; rc=$?
[ $rc -ne 0 ] && grep -q '^\[1/3\] ./bin$' "$t/out" && grep -q '^\[2/3\] tests/test_a.sh$' "$t/out" \
  && grep -q '^\[3/3\] tests/test_b.sh: 1 passed, 1 failed, [0-9]*s (total [0-9]*s)$' "$t/out" \
  && [ "$(tail -n 1 "$t/out" | grep -E '^6 passed, 1 failed in [0-9]+s \(3 tests\)$')" ] \
  && ok || bad "run-tests.sh progress: exit $rc: $(cat "$t/out")"

# convgen info: every layer's shapes, parameters, FLOPs, weight tensors and kernels
$cg info specs/ece408-2017.yaml >"$t/info" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && ok || bad "info spec: exit $rc: $(cat "$t/e")"
grep -Eq '^conv1 +conv +1x28x28 +50x12x12 +1\.44M +1\.25K +5\.00K +K=5 stride=1 pad=0,0,0,0 act=tanh pool=max2/2' "$t/info" \
  && grep -Eq '^fc1 +fc +50x12x12 +500x1x1 +7\.20M .*in=7200 out=500 act=tanh bias=yes' "$t/info" \
  && grep -q '^total: 8.65M FLOPs per image, 3606760 parameters' "$t/info" \
  && grep -Eq '^  conv1 +conv2d_direct \(conv2d_direct_c1m50k5_.*\); strategy direct' "$t/info" \
  && grep -Eq '^device memory per image: [0-9.]+ KB planned \([0-9.]+ KB without reuse\); 7 tensors$' "$t/info" \
  && ok || bad "info spec table: $(cat "$t/info")"
# the weight tensors it names are the weights file's, with the same shapes
hdr=$(head -c 2000 models/ece408-2017.safetensors | tr -c '[:print:]' '.')
for tn in conv1.weight:50x1x5x5:50,1,5,5 fc1.weight:500x7200:500,7200 fc1.bias:500:500 fc2.weight:10x500:10,500; do
  IFS=: read -r name shape js <<<"$tn"
  grep -Eq "^  $name +$shape " "$t/info" && [[ $hdr == *"\"$name\":{\"dtype\":\"F16\",\"shape\":[$js]"* ]] \
    && ok || bad "info's $name $shape does not match the weights file or the table: $(grep "$name" "$t/info")"
done
$cg info specs/ece408-2017.yaml --json >"$t/info.json" 2>"$t/e" && grep -q '"name": "fc1", "op": "fc", "input": \[50, 12, 12\], "output": \[500, 1, 1\], "flops": 7200000' "$t/info.json" \
  && grep -q '{"name": "fc1.weight", "shape": \[500, 7200\]}' "$t/info.json" && ok || bad "info --json: $(cat "$t/info.json" "$t/e")"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["parameters"] == 3606760 and len(d["layers"]) == 4' "$t/info.json" \
    && ok || bad "info --json is not the JSON expected"
fi
# a bundle: the same table, its own kernels
if $cg build specs/ece408-2017.yaml --arch 75 -o "$t/net.cgb" >/dev/null 2>"$t/e"; then
  $cg info "$t/net.cgb" >"$t/binfo" 2>"$t/e" && grep -q "kernels (the bundle's)" "$t/binfo" \
    && diff <(grep -E '^(conv1|fc1|fc2|prob) ' "$t/info") <(grep -E '^(conv1|fc1|fc2|prob) ' "$t/binfo") >/dev/null \
    && ok || bad "info net.cgb: $(cat "$t/binfo" "$t/e")"
else
  echo "skip: info on a bundle (build failed: $(head -1 "$t/e"))"
fi
# a bundle for one image: the network's tail (fc2, the softmax, the predictions) is one
# kernel (templates/ops/tail.lua), listed under both layers it computes
if $cg build specs/ece408-2017.yaml --arch 75 --batch 1 -o "$t/one.cgb" >/dev/null 2>"$t/e"; then
  $cg info "$t/one.cgb" >"$t/oinfo" 2>"$t/e" \
    && grep -Eq '^  fc2 +tail \(tail_i500o10_none_bias_softmax_t[0-9]+\)$' "$t/oinfo" \
    && grep -Eq '^  prob +tail \(tail_i500o10_none_bias_softmax_t[0-9]+, with fc2\)$' "$t/oinfo" \
    && ok || bad "info one.cgb: $(cat "$t/oinfo" "$t/e")"
else
  echo "skip: info on a one-image bundle (build failed: $(head -1 "$t/e"))"
fi
$cg info "$t/absent.yaml" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "absent.yaml" "$t/e" && ok || bad "info on a missing spec: exit $rc: $(cat "$t/e")"
$cg info >/dev/null 2>"$t/e"; [ $? -eq 2 ] && ok || bad "info without a spec should exit 2"
$cg help info | grep -q '^usage: convgen info' && ok || bad "help info"

# tools/plot_tune.py without matplotlib (--plain): a title and a legend on the first
# line (text in black, the legend's marks in their colours), above the plot
if command -v python3 >/dev/null; then
  cat >"$t/c.csv" <<'CSV'
layer,template,params,status,compile_ms,median_ms,iqr_ms,retime_ms,score_ms,tflops,reason,default,peak_tflops,model
conv1,conv2d_direct,"block=64",ok,310.2,0.412,0.003,0.405,0.405,12.5,"",default,67.6,2000
conv1,conv2d_direct,"block=128",ok,300.2,0.52,0.003,0,0.52,9.7,"",,67.6,3000
conv1,conv2d_igemm,"bm=64",ok,500.1,0.21,0.002,0.2,0.2,24.1,"",,67.6,4000
CSV
  python3 tools/plot_tune.py "$t/c.csv" --plain -o "$t/plot" >/dev/null 2>"$t/e" && python3 - "$t/plot/conv1.png" <<'PY' >"$t/out" 2>&1 \
    && ok || bad "plot_tune.py --plain: no title or legend: $(cat "$t/e" "$t/out")"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
w, h = struct.unpack(">II", d[16:24])
at, idat = 8, b""
while at < len(d):
    n, = struct.unpack(">I", d[at:at + 4])
    if d[at + 4:at + 8] == b"IDAT":
        idat += d[at + 8:at + 8 + n]
    at += 12 + n
raw = zlib.decompress(idat)
band = set()
for y in range(0, 12):
    row = raw[y * (1 + 3 * w) + 1:(y + 1) * (1 + 3 * w)]
    band |= {tuple(row[i:i + 3]) for i in range(0, 3 * w, 3)}
want = {(0, 0, 0): "text", (220, 30, 30): "default", (0, 160, 60): "winner", (30, 80, 230): "floor"}
missing = [v for k, v in want.items() if k not in band]
assert not missing, "the first 12 rows lack " + ", ".join(missing)
PY
fi

# the progress line of tune --list and of a CPU run: on stderr when it is a terminal, else nothing
$cg tune specs/example-conv.yaml --list >/dev/null 2>"$t/e" && [ ! -s "$t/e" ] && ok || bad "tune --list wrote to a non-terminal stderr: $(cat "$t/e")"
$cg run "$t/nodata.yaml" --backend cpu --random-input 1 --images 20 >/dev/null 2>"$t/e" && [ ! -s "$t/e" ] && ok \
  || bad "a CPU run wrote to a non-terminal stderr: $(cat "$t/e")"
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "$cg tune specs/example-conv.yaml --list 2>&1 >/dev/null" /dev/null >"$t/tty" 2>&1
  grep -aq 'tune --list: enumerating conv2d_direct for layer conv1 (1 of 1)' "$t/tty" && ok || bad "tune --list on a terminal: $(cat -v "$t/tty")"
  script -qec "$cg run $t/nodata.yaml --backend cpu --random-input 1 --images 20 2>&1 >/dev/null" /dev/null >"$t/tty" 2>&1
  grep -aq 'running 20 images on the CPU backend' "$t/tty" && ok || bad "CPU run on a terminal: $(cat -v "$t/tty")"
else
  echo "skip: the progress line on a terminal (no working script(1))"
fi

echo "test_newcomer: $pass passed, $fail failed"
[ $fail -eq 0 ]
