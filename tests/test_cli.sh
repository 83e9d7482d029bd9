#!/usr/bin/env bash
# test_cli.sh — convgen as a user meets it: generate, error lines, exit codes,
# generated/ up to date, the golden one-layer example, the CPU fallback.
set -u
. "$(dirname "$0")/lib.sh"

# every shipped spec generates, deterministically, and generated/ holds that output
for s in specs/*.yaml; do
  n=$(basename "$s" .yaml)
  if $cg generate "$s" -o "$t/a/$n" >/dev/null && $cg generate "$s" -o "$t/b/$n" >/dev/null; then ok; else bad "generate $s"; continue; fi
  if diff -r "$t/a/$n" "$t/b/$n" >/dev/null; then ok; else bad "$s: two runs differ"; fi
  if diff -r "$t/a/$n" "generated/$n" >/dev/null; then ok; else bad "generated/$n is stale: run 'make generate'"; fi
done

# the golden one-layer example: a template change that moves its output must be deliberate
if diff -r "$t/a/example-conv" tests/golden/example-conv >/dev/null; then ok
else bad "templates changed the output for specs/example-conv.yaml; if intended, copy it to tests/golden/example-conv"; fi

# docs/spec.md's full example is a valid spec, and exactly the file it says it quotes
awk '/^```yaml$/ { on = 1; next } /^```$/ && on { exit } on' docs/spec.md > "$t/readme.yaml"
if $cg generate "$t/readme.yaml" -o "$t/readme" >/dev/null 2>"$t/e"; then ok; else bad "docs/spec.md example: $(cat "$t/e")"; fi
quoted=$(grep -o '^A full example, `specs/[a-z0-9_.-]*\.yaml`' docs/spec.md | grep -o 'specs/[^`]*')
[ -n "$quoted" ] && diff "$quoted" "$t/readme.yaml" >/dev/null && ok || bad "docs/spec.md's full example differs from ${quoted:-the file it names}: copy the file into docs/spec.md"

# generate -o DIR removes only what DIR's previous manifest names; refuses what it did not write
d="$t/gen"; mkdir -p "$d"; echo 'user file' > "$d/mine.cu"
$cg generate specs/ece408-2018fa.yaml -o "$d" >/dev/null 2>&1 && $cg generate specs/example-conv.yaml -o "$d" >/dev/null 2>&1 \
  && ok || bad "generate into a directory with a user file failed"
[ -f "$d/mine.cu" ] && ok || bad "generate removed a .cu file it never wrote"
n=$(ls "$d"/*.cu | wc -l); [ "$n" -eq 4 ] && ok || bad "previous output not replaced: $(ls "$d")"
diff <(ls "$d" | grep -v '^mine.cu$') <(ls tests/golden/example-conv) >/dev/null && ok || bad "generate left: $(ls -A "$d")"
mkdir -p "$t/gen2/manifest.txt"
$cg generate specs/example-conv.yaml -o "$t/gen2" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 5 ] && ok || bad "manifest.txt a directory: expected exit 5, got $rc"
[ "$(ls -A "$t/gen2")" = manifest.txt ] && ok || bad "a failed generate left files: $(ls -A "$t/gen2")"
[ "$(wc -l < "$t/e")" -eq 1 ] && grep -q "gen2/manifest.txt" "$t/e" && ok || bad "one line naming manifest.txt: $(cat "$t/e")"
mkdir -p "$t/gen3"; echo 'my notes' > "$t/gen3/manifest.txt"
$cg generate specs/example-conv.yaml -o "$t/gen3/sub/dir" >/dev/null 2>&1 && ok || bad "generate into a new nested directory"
rm -rf "$t/gen3/sub"
$cg generate specs/example-conv.yaml -o "$t/gen3" >/dev/null 2>&1; rc=$?
[ $rc -eq 5 ] && [ "$(cat "$t/gen3/manifest.txt")" = 'my notes' ] && [ "$(ls -A "$t/gen3")" = manifest.txt ] \
  && ok || bad "a manifest.txt convgen did not write was replaced or files were left (exit $rc)"
$cg generate specs/example-conv.yaml -o "$t/gen4/manifest.txt/x" >/dev/null 2>&1
rm -rf "$t/gen4"; mkdir -p "$t/gen4"; ln -s /dev/null "$t/gen4/manifest.txt"
$cg generate specs/example-conv.yaml -o "$t/gen4" >/dev/null 2>&1; rc=$?
[ $rc -eq 5 ] && [ -L "$t/gen4/manifest.txt" ] && ok || bad "a symlinked manifest.txt was replaced (exit $rc)"
# --arch: generate for what that GPU allows (a JIT there generates the same); a bad list is exit 2
$cg generate bench/specs/zoo-vgg-same.yaml -o "$t/arch90" --arch sm_90 >/dev/null 2>"$t/e" && ok || bad "generate --arch sm_90: $(cat "$t/e")"
[ "$(ls "$t/arch90" | grep -c '^conv2d_winograd_.*_m32n32c8_t8x8_x2\.cu$')" -eq 1 ] && \
  [ "$(ls "$t/arch90" | grep -c '^conv2d_planes_')" -eq 4 ] && ok ||
  bad "--arch 90: four planes kernels and one winograd 32x32 (C = 256) expected: $(ls "$t/arch90")"
$cg generate bench/specs/zoo-vgg-same.yaml -o "$t/arch0" >/dev/null 2>&1 && ! ls "$t/arch0" | grep -q winograd \
  && ok || bad "the default target (48 KiB) holds no winograd default tile: $(ls "$t/arch0")"
$cg generate specs/example-conv.yaml -o "$t/arch60" --arch 60 >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q "60 is below sm_75" "$t/e" && [ ! -e "$t/arch60" ] && ok || bad "--arch 60: exit $rc, $(cat "$t/e")"
# --sms: the device's multiprocessors size the small-batch splits (the kernels' reasons name
# them); out of range is exit 2 with nothing written
$cg generate tests/gpu/layers-splitk.yaml --batch 1 --sms 132 -o "$t/sms" >/dev/null 2>"$t/e" &&
  grep -q "under 8 for each of the target's 132 SMs" "$t/sms"/conv2d_igemm_*_z*.cu && ok ||
  bad "generate --sms 132: $(cat "$t/e")"
$cg generate tests/gpu/layers-splitk.yaml --batch 1 -o "$t/sms100" >/dev/null 2>&1 &&
  grep -q "under 8 for each of an assumed 100 SMs" "$t/sms100"/conv2d_igemm_*_z*.cu && ok ||
  bad "generate without --sms: no assumed 100 SMs"
$cg generate specs/example-conv.yaml --sms 0 -o "$t/sms0" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q -- "--sms expects an integer from 1 to 4096, got '0'" "$t/e" && [ ! -e "$t/sms0" ] && ok ||
  bad "--sms 0: exit $rc, $(cat "$t/e")"
# concurrent runs into one DIR: the manifest always names exactly the .cu files there
d="$t/race"; racefail=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  $cg generate specs/ece408-2018fa.yaml -o "$d" >/dev/null 2>&1 & p1=$!
  $cg generate specs/example-conv.yaml -o "$d" >/dev/null 2>&1 & p2=$!
  $cg generate specs/ece408-2017.yaml -o "$d" >/dev/null 2>&1 & p3=$!
  wait $p1 $p2 $p3
  diff <(awk '$1 == "kernel" { print $2 ".cu" }' "$d/manifest.txt" | sort -u) <(cd "$d" && ls -A | grep -v '^manifest.txt$' | sort) >/dev/null || racefail=1
done
[ $racefail -eq 0 ] && ok || bad "concurrent generate runs left a manifest that disagrees with the directory: $(ls -A "$d")"

# errors: one line FILE:LINE:COL, exit 3, nothing written
expect_err() { # spec-text expected-prefix
  printf '%s\n' "$1" > "$t/bad.yaml"
  rm -rf "$t/out"
  $cg generate "$t/bad.yaml" -o "$t/out" >"$t/stdout" 2>"$t/stderr"; rc=$?
  if [ $rc -eq 3 ]; then ok; else bad "expected exit 3, got $rc for: $2"; fi
  if [ "$(wc -l < "$t/stderr")" -eq 1 ]; then ok; else bad "expected one line on stderr: $(cat "$t/stderr")"; fi
  if grep -qF "$2" "$t/stderr"; then ok; else bad "expected '$2' in: $(cat "$t/stderr")"; fi
  if [ ! -e "$t/out" ]; then ok; else bad "output written despite the error ($2)"; fi
}
base='network: t
input: {channels: 1, height: 28, width: 28}
dataset: {name: fashion-mnist}
layers:
  - name: conv1
    op: conv
    M: 8
    K: 5'
expect_err "$base
    activaton: tanh
    strategy: direct" "bad.yaml:9:5: unknown key 'activaton'"
expect_err "$base
    strategy: gemm" "bad.yaml:9:15: unknown strategy 'gemm' for layer 'conv1' (known: auto, depthwise, direct, fft, igemm, igemm_tc, igemm_wg, planes, pointwise, slide, tma, winograd)"
expect_err "$base
  - name: fc1
    op: fc
    out: 10
    strategy: wide" "bad.yaml:12:15: unknown strategy 'wide' for layer 'fc1' (known: auto, gemv, mma, tc, tiled, vec, wg)"
# the fc templates on tensor cores: refused below their targets, their parameters checked at the spec's place
fc1='  - name: fc1
    op: fc
    out: 10'
expect_err "$base
$fc1
    strategy: tc" "bad.yaml:12:15: layer 'fc1': fc_tc needs tensor cores with TF32 (sm_80 or newer); the target is sm_75"
expect_err "$base
$fc1
    strategy: wg" "bad.yaml:12:15: layer 'fc1': fc_wg needs wgmma: sm_90 built as sm_90a (the target is sm_75)"
expect_err "$base
$fc1
    strategy: tc
    params: {bq: 16}" "bad.yaml:13:14: layer 'fc1': unknown parameter 'bq' for fc_tc (expected bm, bn, bk, tm, tn, occ, stages, split)"
expect_err "$base
$fc1
    strategy: tc
    params: {bm: 24}" "bad.yaml:13:18: layer 'fc1': bm=24 is not legal for fc_tc on this layer (output maps per block tile)"
expect_err "$base
    stride: 2
    strategy: winograd" "bad.yaml:10:15: layer 'conv1': Winograd serves stride 1 only; this layer's is 2"
expect_err "$base
    strategy: direct
    params: {maps_unroll: 3}" "bad.yaml:10:27: layer 'conv1': maps_unroll=3 is not legal"
expect_err "$base
    strategy: direct
    params: {blok: 64}" "bad.yaml:10:14: layer 'conv1': unknown parameter 'blok'"
expect_err "$base
    strategy: direct
    params: {block: 100}" "expected one of 32, 64, 96"

# usage errors exit 2; a missing file exits 3
$cg generate >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "generate without args should exit 2"
$cg frobnicate >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "unknown verb should exit 2"
$cg run specs/ece408-2017.yaml --images zero >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "bad --images should exit 2"
$cg generate "$t/missing.yaml" -o "$t/x" >/dev/null 2>&1; [ $? -eq 3 ] && ok || bad "missing spec should exit 3"

# the command line: --version, per-verb help, --opt=value, --, suggestions, repeats
v=$($cg --version); [ $? -eq 0 ] && [[ "$v" == "convgen "[0-9]* ]] && ok || bad "--version: $v"
for verb in generate build run check data; do
  $cg $verb --help >"$t/o" 2>&1 && grep -q "^usage: convgen $verb" "$t/o" && ok || bad "$verb --help: $(head -1 "$t/o")"
  $cg $verb -h >"$t/o" 2>&1 && grep -q "^usage: convgen $verb" "$t/o" && ok || bad "$verb -h"
  $cg help $verb >"$t/o" 2>&1 && grep -q "^usage: convgen $verb" "$t/o" && ok || bad "help $verb"
done
$cg generate --output="$t/eq" specs/example-conv.yaml >/dev/null 2>&1 && [ -f "$t/eq/manifest.txt" ] && ok || bad "--output=DIR"
$cg generate -o "$t/dd" -- specs/example-conv.yaml >/dev/null 2>&1 && [ -f "$t/dd/manifest.txt" ] && ok || bad "-- before SPEC"
$cg generat specs/example-conv.yaml -o "$t/x" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown verb 'generat' (did you mean 'generate'?)" "$t/e" && ok || bad "verb suggestion: $(cat "$t/e")"
$cg run specs/ece408-2017.yaml --imgaes 5 >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown option '--imgaes' (did you mean '--images'?)" "$t/e" && ok || bad "option suggestion: $(cat "$t/e")"
$cg run specs/ece408-2017.yaml --images 5 --images=6 >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q "option --images given twice" "$t/e" && ok || bad "repeated option: $(cat "$t/e")"
$cg generate specs/example-conv.yaml -o "$t/r1" --output "$t/r2" >/dev/null 2>&1; [ $? -eq 2 ] && [ ! -e "$t/r1" ] && ok || bad "-o and --output together"
$cg run specs/ece408-2017.yaml --no-cache=1 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "a flag with =value"
$cg build specs/example-conv.yaml --arch sm_8x -o "$t/x.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q 'is not an arch number' "$t/e" && ok || bad "--arch sm_8x: $(cat "$t/e")"
$cg build specs/example-conv.yaml --sms 5000 -o "$t/x.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q -- "--sms expects an integer from 1 to 4096, got '5000'" "$t/e" && [ ! -e "$t/x.fatbin" ] &&
  ok || bad "build --sms 5000: exit $rc, $(cat "$t/e")"
# the spec is read before the GPU is probed: a bad spec is exit 3 whatever the backend
printf 'network: [\n' > "$t/broken.yaml"
$cg run "$t/broken.yaml" --backend cuda >/dev/null 2>&1; [ $? -eq 3 ] && ok || bad "a bad spec with --backend cuda should exit 3"
# GPU-only options: refused on the CPU backend (2), and without a GPU (4)
for o in "--profile" "--batch 8" "--no-cache" "--fatbin $t/x.fatbin"; do
  $cg run specs/ece408-2017.yaml --backend cpu $o --images 5 >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 2 ] && grep -q "needs the cuda backend" "$t/e" && ok || bad "--backend cpu $o: exit $rc $(cat "$t/e")"
  if ! [ -e /dev/nvidia0 ]; then
    $cg run specs/ece408-2017.yaml $o --images 5 >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 4 ] && grep -q "needs a GPU" "$t/e" && [ "$(wc -l < "$t/e")" -eq 1 ] && ok || bad "$o without a GPU: exit $rc $(cat "$t/e")"
  fi
done
# --json: regular files only, checked before the run, the error naming the path given
$cg run specs/ece408-2017.yaml --backend cpu --random-input 1 --images 3 --repeat 2 --json "$t/r.json" >/dev/null 2>&1 \
  && grep -q '"repeat": 2' "$t/r.json" && ok || bad "--json with --repeat on the CPU"
# (never a real device here: an old convgen run as root would replace it)
ln -s "$t/target" "$t/link.json"; mkdir "$t/jdir"; mkfifo "$t/fifo.json"
for j in "$t/link.json" "$t/jdir" "$t/fifo.json" "$t/nodir/r.json"; do
  $cg run specs/ece408-2017.yaml --backend cpu --random-input 1 --images 3 --json "$j" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 2 ] && grep -qF "convgen: $j: " "$t/e" && [ ! -s "$t/o" ] && ok || bad "--json $j: exit $rc, $(cat "$t/e") / $(head -1 "$t/o")"
done
[ ! -e "$t/target" ] && [ -L "$t/link.json" ] && [ -d "$t/jdir" ] && [ -p "$t/fifo.json" ] && ok || bad "--json replaced or followed something"
ls "$t" | grep -q '\.tmp\.' && bad "temp files left: $(ls "$t")" || ok
# bounded reads: FIFO, directory or device as spec or weights refused at once, naming it
mkfifo "$t/fifo.yaml"
for s in "$t/fifo.yaml" "$t/jdir" /dev/zero; do
  timeout 10 $cg generate "$s" -o "$t/x" >/dev/null 2>"$t/e"; rc=$?
  [ $rc -eq 3 ] && grep -qF "$s:1:1: cannot read spec: is a" "$t/e" && ok || bad "spec $s: exit $rc $(cat "$t/e")"
done
mkfifo "$t/w.safetensors"
printf '%s\nweights: w.safetensors\n' "$(cat specs/example-conv.yaml)" | sed 's/^network: example-conv/network: wfifo/' > "$t/wfifo.yaml"
timeout 10 $cg check "$t/wfifo.yaml" --random-input 1 --images 2 >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "w.safetensors: is a FIFO, not a regular file" "$t/e" && ok || bad "a FIFO as weights: exit $rc $(cat "$t/e")"
# control characters never reach generated code: a spec path with a newline is refused
nl="$t/a
b.yaml"
cp specs/example-conv.yaml "$nl"
$cg generate "$nl" -o "$t/nl" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "control character 0x0a" "$t/e" && [ ! -e "$t/nl" ] && [ "$(wc -l < "$t/e")" -eq 1 ] \
  && ok || bad "a newline in the spec path: exit $rc $(cat "$t/e")"
# data beyond the set is refused, not silently shortened
if [ -e /usr/share/datasets/fashion-mnist ]; then
  $cg run specs/ece408-2017.yaml --backend cpu --images 20000 >/dev/null 2>"$t/e"; rc=$?
  [ $rc -eq 2 ] && grep -q "test set holds 10000 images" "$t/e" && ok || bad "--images 20000: exit $rc $(cat "$t/e")"
fi
# convgen build: two conv layers of the same shape and parameters share one translation unit
if command -v fatbinary >/dev/null || [ -x /usr/local/cuda/bin/fatbinary ]; then
  cat > "$t/lenet.yaml" <<'YAML'
network: lenet5
input: {channels: 1, height: 28, width: 28}
dataset: {name: fashion-mnist}
layers:
  - {name: conv1, op: conv, M: 6, K: 5, activation: tanh, pool: max2, strategy: direct, params: {block: 64, maps_unroll: 2}}
  - {name: conv2, op: conv, M: 16, K: 5, activation: tanh, pool: max2, strategy: direct, params: {block: 64, maps_unroll: 2}}
  - {name: fc1, op: fc, out: 120, activation: tanh}
  - {name: fc2, op: fc, out: 84, activation: tanh}
  - {name: fc3, op: fc, out: 10}
  - {name: prob, op: softmax}
YAML
  $cg build "$t/lenet.yaml" --arch sm_80 -o "$t/lenet.fatbin" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 0 ] && [ -s "$t/lenet.fatbin" ] && grep -q "compiling 7 kernels for sm_80" "$t/o" && ok || bad "build of a LeNet-5-like spec: exit $rc $(tail -3 "$t/e")"
fi

# no GPU here: --backend cuda is an error saying why; auto falls back to the CPU
if ! [ -e /dev/nvidia0 ]; then
  $cg run specs/ece408-2017.yaml --backend cuda --images 10 >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 4 ] && ok || bad "--backend cuda without a GPU should exit 4 (got $rc)"
  grep -q "no CUDA driver\|no device" "$t/e" && ok || bad "--backend cuda should say why: $(cat "$t/e")"
  $cg run specs/ece408-2017.yaml --images 50 >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 0 ] && ok || bad "auto backend without a GPU failed: $(cat "$t/e")"
  grep -q "running on the CPU backend" "$t/e" && ok || bad "auto should say it uses the CPU"
  grep -q "^New Inference$" "$t/o" && grep -q "^Op Time: " "$t/o" && grep -q "^Correctness: [0-9.]* Model: ece408-2017$" "$t/o" \
    && ok || bad "run output not in the course's form: $(cat "$t/o")"
fi
# --device: a device that is not there is exit 4 with one line naming it (GPU or not);
# on the CPU backend it is refused as usage
for verb in run check; do
  $cg $verb specs/ece408-2017.yaml --device 99 --random-input 1 --images 10 >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 4 ] && ok || bad "$verb --device 99 should exit 4 (got $rc): $(cat "$t/e")"
  [ "$(wc -l < "$t/e")" -eq 1 ] && grep -q "device\|driver" "$t/e" && ok || bad "$verb --device 99: one clear line: $(cat "$t/e")"
done
$cg run specs/ece408-2017.yaml --backend cpu --device 1 >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && grep -q "^convgen: --device needs the cuda backend" "$t/e" && ok || bad "--device on the CPU backend: exit $rc: $(cat "$t/e")"
$cg run specs/example-conv.yaml --device x >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "bad --device should exit 2"

# a network of other than 10 classes: refused on the data set (exit 3, saying how to run it),
# run on made-up images (no accuracy)
printf 'network: k1000\ninput: {channels: 1, height: 8, width: 8}\nlayers:\n  - {name: c1, op: conv, M: 4, K: 3}\n  - {name: f1, op: fc, out: 1000}\n' >"$t/k1000.yaml"
$cg run "$t/k1000.yaml" --backend cpu --images 5 >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "ends in 1000 values; classifying fashion-mnist needs 10 (give --input FILE or --random-input S" "$t/e" \
  && ok || bad "1000 classes on the data set: exit $rc: $(cat "$t/e")"
$cg run "$t/k1000.yaml" --backend cpu --random-input 2 --images 5 >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && grep -q '^Correctness: - Model: k1000 (random input)' "$t/o" && ok \
  || bad "1000 classes on random input: exit $rc: $(cat "$t/e")"

# a grouped layer whose channels a group x K x K pass conv2d_direct's unrolled budget (128 x 3 x 3):
# direct loops over its channels (cl=1); one whose K x K alone passes it (21 x 21 taps) is refused,
# naming direct as the one template for groups
printf 'network: g\ninput: {channels: 256, height: 14, width: 14}\nlayers:\n  - {name: c, op: conv, M: 256, K: 3, padding: 1, groups: 2}\n  - {name: f, op: fc, out: 10}\n' >"$t/g2.yaml"
$cg generate "$t/g2.yaml" -o "$t/g2" >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && ls "$t/g2" | grep -q '^conv2d_direct_c256m256k3_h14w14_p1_g2_.*_cl\.cu$' && ok \
  || bad "grouped layer past direct's unrolled budget: exit $rc: $(cat "$t/e") $(ls "$t/g2" 2>/dev/null)"
printf 'network: g\ninput: {channels: 8, height: 24, width: 24}\nlayers:\n  - {name: c, op: conv, M: 8, K: 21, groups: 2}\n  - {name: f, op: fc, out: 10}\n' >"$t/g21.yaml"
$cg generate "$t/g21.yaml" -o "$t/g21" >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "g21.yaml:4:5: layer 'c': .*grouped layers (groups > 1) run on direct alone" "$t/e" && ! grep -q 'use strategy igemm' "$t/e" \
  && ok || bad "grouped layer past direct's budget, looped too: exit $rc: $(cat "$t/e")"

echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
