#!/usr/bin/env bash
# make test-gpu — needs an NVIDIA GPU, its driver, the CUDA toolkit (fatbinary, for fat binaries) and
# compute-sanitizer. CONVGEN_DATA points at the Fashion-MNIST IDX files where
# Debian's package is not installed.
#  1. every kernel of every shipped spec against the float64-accumulating CPU
#     reference, on fresh random weights and random pixels, tensors poisoned
#     with NaN before the run (an unwritten element fails the check);
#  2. each network over all 10,000 test images, JIT and fat binary, giving the
#     CPU backend's predictions (differences only on genuine ties);
#  3. the JIT cache: a second run compiles nothing;
#  4. compute-sanitizer memcheck and racecheck on a small batch;
#  5. the C API (tests/gpu/api_gpu.c): host, float and device-pointer input.
#  6. the networks of padding, stride and the pools (tests/gpu/layers-*.yaml and
#     two of bench/specs/) as in 1, on random pixels, and memcheck; a tuning
#     record made and applied (run --json names the tuned layer).
set -u
cd "$(dirname "$0")/../.."
cg=${CONVGEN:-build/convgen}
data=()
[ -n "${CONVGEN_DATA:-}" ] && data=(--data "$CONVGEN_DATA")
pass=0; fail=0
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
export XDG_CACHE_HOME="$t/cache"
step() { # name command...
  local name=$1; shift
  if "$@" >"$t/log" 2>&1; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$t/log" | tail -n 30; fi
}
# CONVGEN_NETS="ece408-2017 ..." narrows the run to those specs (and their models)
# and skips step 6; CONVGEN_NETS=layers runs step 6 alone. The full run takes
# several minutes; these parts may run side by side (each has its own cache).
read -r -a names <<< "${CONVGEN_NETS:-ece408-2017 ece408-2018sp ece408-2018fa}"
nets=(); for n in "${names[@]}"; do [ "$n" = layers ] || nets+=("specs/$n.yaml"); done
specs=("${nets[@]}"); [ -z "${CONVGEN_NETS:-}" ] && specs=(specs/*.yaml)
layers=0; [ -z "${CONVGEN_NETS:-}" ] || [[ " $CONVGEN_NETS " == *" layers "* ]] && layers=1
for s in "${specs[@]}"; do
  for i in 1 2; do
    step "$s random input #$i" $cg check "$s" --images 333 --seed "$RANDOM$RANDOM" --random-input "$RANDOM$RANDOM"
  done
  step "$s real images" $cg check "$s" --images 1000 "${data[@]}"
done
# padding, stride, the pools and 3-channel input (issue 12): the layer networks of
# tests/gpu/ and the benchmark networks that use them, on random pixels (they
# name no dataset), then memcheck over their padded gathers
if [ $layers = 1 ]; then
  for s in tests/gpu/layers-*.yaml bench/specs/zoo-vgg-same.yaml bench/specs/zoo-resnet-stem.yaml; do
    for i in 1 2; do
      step "$s random input #$i" $cg check "$s" --images 333 --seed "$RANDOM$RANDOM" --random-input "$RANDOM$RANDOM"
    done
    if command -v compute-sanitizer >/dev/null; then
      step "$s: compute-sanitizer memcheck" compute-sanitizer --tool memcheck --error-exitcode 1 \
        $cg run "$s" --random-input 5 --images 64 --no-cache
    fi
  done
  # a tuning record made here is applied by run, whose --json names the tuned layer
  step "zoo-issue3x3 conv3: convgen tune" $cg tune bench/specs/zoo-issue3x3.yaml --layers conv3 --budget 10 \
    --batch 1000 -o "$t/issue3x3.tuning.yaml"
  $cg run bench/specs/zoo-issue3x3.yaml --tuning "$t/issue3x3.tuning.yaml" --random-input 1 --images 64 \
    --json "$t/tuned.json" >/dev/null 2>&1
  # the conv strategies: every file of templates/conv2d/ (the Makefile embeds all of templates/*/*.lua)
  step "zoo-issue3x3: run --json names the tuned layer" python3 - "$t/tuned.json" templates/conv2d/*.lua <<'PY'
import json, os, sys
strategies = {os.path.basename(p)[:-len(".lua")] for p in sys.argv[2:]}
assert strategies, "no templates/conv2d/*.lua"
j = {l["name"]: l for l in json.load(open(sys.argv[1]))["layers"]}
t = j["conv3"].get("tuned")
assert t and t["strategy"] in strategies and "=" in t["params"], (j["conv3"], sorted(strategies))
assert all("tuned" not in j[n] for n in j if n != "conv3"), j
PY
fi
for s in "${nets[@]}"; do
  n=$(basename "$s" .yaml)
  step "$n: 10000 images, JIT" $cg check "$s" --images 10000 "${data[@]}"
  step "$n: convgen build" $cg build "$s" -o "$t/$n.fatbin"  # every default arch (runtime/cuda/aot.c)
  step "$n: 10000 images, fat binary" $cg check "$s" --images 10000 --fatbin "$t/$n.fatbin" "${data[@]}"
  rm -rf "$t/cache"
  $cg run "$s" --images 100 --json "$t/first.json" "${data[@]}" >/dev/null 2>&1
  $cg run "$s" --images 100 --json "$t/second.json" "${data[@]}" >/dev/null 2>&1
  step "$n: cache miss then hit" python3 - "$t/first.json" "$t/second.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["compiled"] > 0 and a["cache_hits"] == 0, a
assert b["compiled"] == 0 and b["cache_hits"] == a["compiled"], b
PY
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      step "$n: compute-sanitizer $tool" compute-sanitizer --tool $tool --error-exitcode 1 \
        $cg run "$s" --images 64 --no-cache "${data[@]}"
    done
  fi
done
# the library: CUDA = CPU, float input, device pointers on a caller's stream, overlap
for s in "${nets[@]}"; do
  step "$(basename "$s" .yaml): the C API on the GPU" bash -c "build/tests/gpu/api_gpu $s 1000 | tee /dev/stderr | grep -q ' 0 failed'"
done
# bundles: built here, run and checked from a directory holding nothing else
# (no spec, weights, templates or cache: the kernels are the bundle's); the
# Python module on a PyTorch CUDA tensor where torch and numpy import
img=${CONVGEN_DATA:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz
for s in "${nets[@]}"; do
  n=$(basename "$s" .yaml)
  mkdir -p "$t/only-$n"
  step "$n: convgen build -o $n.cgb" $cg build "$s" -o "$t/only-$n/$n.cgb"
  step "$n: check $n.cgb, 10000 images" bash -c "cd '$t/only-$n' && '$(realpath "$cg")' check $n.cgb --images 10000 ${data[*]}"
  if python3 -c 'import torch, numpy' 2>/dev/null; then
    step "$n: python/convgen.py on a CUDA tensor" env PYTHONPATH=python python3 tests/gpu/python_torch.py \
      "$t/only-$n/$n.cgb" "$img" 10000
  else
    echo "skip $n: python/convgen.py on a CUDA tensor (python3 cannot import torch and numpy)"
  fi
done
# trained models: the GPU prints the accuracy the CPU backend printed (models/accuracy.txt)
while read -r name want; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -n "${CONVGEN_NETS:-}" ] && [[ " $CONVGEN_NETS " != *" $name "* ]] && continue
  step "$name: GPU Correctness $want" bash -c \
    "$cg run specs/$name.yaml ${data[*]} | tee /dev/stderr | grep -qx 'Correctness: $want Model: $name'"
done < models/accuracy.txt
# streamed execution (docs/user-guide.md, "Throughput at scale"): several batches in flight,
# poisoned, against the CPU; the same predictions with 1, 2 and 4 stream sets;
# the MPI driver on the GPU where it was built
for s in "${nets[@]}"; do
  n=$(basename "$s" .yaml)
  step "$n: check in batches of 97 over 2 stream sets" $cg check "$s" --images 1000 --batch 97 "${data[@]}"
  for k in 1 2 4; do
    $cg run "$s" --images 10000 --batch 999 --streams $k "${data[@]}" 2>&1 | grep '^Correctness' >"$t/streams$k"
  done
  step "$n: --streams 1, 2, 4 agree" bash -c "[ -s '$t/streams1' ] && cmp '$t/streams1' '$t/streams2' && cmp '$t/streams1' '$t/streams4'"
  if command -v compute-sanitizer >/dev/null; then
    step "$n: compute-sanitizer memcheck, 3 batches in flight" compute-sanitizer --tool memcheck --error-exitcode 1 \
      $cg run "$s" --images 100 --batch 16 --streams 3 "${data[@]}"
  fi
  if [ -x build/convgen-mpi ] && command -v mpirun >/dev/null; then
    $cg run "$s" --images 2000 "${data[@]}" 2>&1 | grep '^Correctness' >"$t/one"
    step "$n: mpirun -np 2 on the GPU gives run's accuracy" bash -c \
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 build/convgen-mpi run '$s' --backend cuda --images 2000 ${data[*]} | grep '^Correctness' | cmp - '$t/one'"
  fi
done
# every GPU of the host in one process (--devices all; one GPU is a shard of
# all images): predictions and scores byte for byte those of --device 0, over
# made-up images in batches of 1000 and uneven shards; check on every GPU
mknpy() { # FILE N H W: N random uint8 images as a .npy (format 1.0)
  local hdr="{'descr': '|u1', 'fortran_order': False, 'shape': ($2, $3, $4), }"
  local pad=$(( (64 - (10 + ${#hdr} + 1) % 64) % 64 ))
  hdr="$hdr$(printf '%*s' $pad '')"
  local len=$(( ${#hdr} + 1 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
    printf '%s\n' "$hdr"; head -c $(( $2 * $3 * $4 )) /dev/urandom; } >"$1"
}
mknpy "$t/x.npy" 10001 28 28
for s in "${nets[@]}"; do
  n=$(basename "$s" .yaml)
  $cg run "$s" --input "$t/x.npy" --batch 1000 --device 0 --output "$t/one.csv" >/dev/null 2>&1
  $cg run "$s" --input "$t/x.npy" --batch 1000 --devices all --output "$t/all.csv" --profile >"$t/all.log" 2>&1
  step "$n: --devices all gives --device 0's answers" bash -c "[ -s '$t/one.csv' ] && cmp '$t/one.csv' '$t/all.csv'"
  step "$n: check --devices all" $cg check "$s" --devices all --images 2000 --batch 97 "${data[@]}"
done
echo "test-gpu: $pass passed, $fail failed"
[ $fail -eq 0 ]
