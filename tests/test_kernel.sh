#!/usr/bin/env bash
# test_kernel.sh — `convgen kernel` as a user meets it without a GPU: the
# candidate list (count and entries), errors with their exit codes, and the
# GPU path saying why it cannot run.
set -u
. "$(dirname "$0")/lib.sh"

# --list: example-conv's conv1 has 1280 combinations of declared legal values (fuse is no tuning
# choice: its default only), 416 refused
$cg kernel specs/example-conv.yaml --layer conv1 --list >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && ok || bad "--list exit $rc: $(cat "$t/e")"
grep -q "^864 candidates: 1280 combinations of the declared legal values, 416 refused" "$t/o" && ok || bad "--list count: $(head -3 "$t/o")"
[ "$(grep -cE '^ +[0-9]+  block=' "$t/o")" -eq 864 ] && ok || bad "--list should print 864 candidates"
grep -qE '^ +1  block=32 maps_unroll=1 cols=1 unroll_groups=0 fuse=1 ms=1$' "$t/o" && ok || bad "first candidate"
# another strategy for an fc layer: every listed candidate is one fc_vec accepts
$cg kernel specs/ece408-2017.yaml --layer fc2 --strategy vec --list >"$t/o" 2>"$t/e" && ok || bad "fc --list: $(cat "$t/e")"
n=$(sed -n 's/^\([0-9]*\) candidates: 144 combinations.*/\1/p' "$t/o")
[ -n "$n" ] && [ "$(grep -cE '^ +[0-9]+  bm=' "$t/o")" -eq "$n" ] && ok || bad "fc_vec list: $(head -2 "$t/o")"

# --arch CC: the candidates for that architecture. igemm_tc needs sm_80, so the default
# target (sm_75) refuses every one of zoo-odd conv3's, sm_90 accepts some; the product
# (168,960 combinations, over the former cap of 100,000) is examined whole.
$cg kernel bench/specs/zoo-odd.yaml --layer conv3 --strategy igemm_tc --list >"$t/o" 2>"$t/e" && ok || bad "tc --list: $(cat "$t/e")"
grep -q "^0 candidates: " "$t/o" && grep -q "needs tensor cores with TF32 (sm_80 or newer); the target is sm_75" "$t/o" \
  && ok || bad "tc --list without --arch: $(head -4 "$t/o")"
$cg kernel bench/specs/zoo-odd.yaml --layer conv3 --strategy igemm_tc --list --arch 90 >"$t/o" 2>"$t/e" && ok \
  || bad "tc --list --arch 90: $(cat "$t/e")"
n=$(sed -nE 's/^([0-9]+) candidates: 168960 combinations.*/\1/p' "$t/o")
[ -n "$n" ] && [ "$n" -gt 0 ] && ! grep -q "^note:" "$t/o" && [ "$(grep -cE '^ +[0-9]+  bm=' "$t/o")" -eq "$n" ] \
  && ok || bad "tc --list --arch 90: $(head -3 "$t/o")"
# 16-bit planes on a 12 -> 24 7x7 layer (ece408-2018fa's conv2 in bf16): its product of legal values
# fits under the cap and holds candidates of both forms (wr's tiles and sw's sweep). With wr and sw
# beside every bk, po and fp it was 4.6 million combinations, the first million all tr=1 and refused:
# no candidate at all.
printf 'network: half7\ninput: {channels: 12, height: 33, width: 33}\nprecision: bf16\nseed: 1\nlayers:\n  - {name: c2, op: conv, M: 24, K: 7}\n  - {name: f, op: fc, out: 10}\n  - {name: prob, op: softmax}\n' >"$t/half7.yaml"
$cg kernel "$t/half7.yaml" --layer c2 --strategy planes --list --arch 90 >"$t/o" 2>"$t/e" && ok \
  || bad "bf16 planes --list --arch 90: $(cat "$t/e")"
n=$(sed -nE 's/^([0-9]+) candidates: [0-9]+ combinations.*/\1/p' "$t/o")
# (sw is listed where it is not the layer's default, 1 here: sw=0 lines are the tiles, the rest the sweep)
tiles=$(grep -cE '^ +[0-9]+  .* sw=0' "$t/o")
[ -n "$n" ] && [ "$n" -gt 0 ] && ! grep -q "^note:" "$t/o" && [ "$tiles" -gt 0 ] && [ "$tiles" -lt "$n" ] \
  && ok || bad "bf16 planes --list --arch 90: $(head -3 "$t/o")"
# a 1x1 layer of 2,048 channels into 2,048 maps: igemm_tc's candidates were once past the
# Lua budget (each check counted C's divisors up to 2,048)
printf 'network: wide1x1\ninput: {channels: 2048, height: 2, width: 2}\nseed: 1\nlayers:\n  - {name: c1, op: conv, M: 2048, K: 1}\n  - {name: f, op: fc, out: 10}\n  - {name: prob, op: softmax}\n' >"$t/wide.yaml"
$cg kernel "$t/wide.yaml" --layer c1 --strategy igemm_tc --list --arch 90 >"$t/o" 2>"$t/e" && ok \
  || bad "C=2048 tc --list --arch 90: $(cat "$t/e")"
n=$(sed -nE 's/^([0-9]+) candidates: [0-9]+ combinations.*/\1/p' "$t/o")
[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$(grep -cE '^ +[0-9]+  bm=' "$t/o")" -eq "$n" ] \
  && ok || bad "C=2048 tc --list --arch 90: $(head -3 "$t/o")"

# an fc on tensor cores: fc_tc refused on the default sm_75 with its own name, fc_wg listed for
# sm_90 (ece408-2017's fc2: 500 inputs into 10 outputs)
$cg kernel specs/ece408-2017.yaml --layer fc2 --strategy tc --list >"$t/o" 2>"$t/e" && ok || bad "fc tc --list: $(cat "$t/e")"
grep -q "^0 candidates: " "$t/o" && grep -q "fc_tc needs tensor cores with TF32 (sm_80 or newer); the target is sm_75" "$t/o" \
  && ok || bad "fc tc --list without --arch: $(head -4 "$t/o")"
$cg kernel specs/ece408-2017.yaml --layer fc2 --strategy wg --list --arch 90 >"$t/o" 2>"$t/e" && ok \
  || bad "fc wg --list --arch 90: $(cat "$t/e")"
n=$(sed -nE 's/^([0-9]+) candidates: [0-9]+ combinations.*/\1/p' "$t/o")
[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$(grep -cE '^ +[0-9]+  bm=' "$t/o")" -eq "$n" ] && ok || bad "fc wg --list --arch 90: $(head -3 "$t/o")"

# errors: usage 2, bad input 3, one line each
expect() { # exit-code expected-text args...
  local want=$1 text=$2; shift 2
  $cg kernel "$@" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq "$want" ] && ok || bad "kernel $*: exit $rc, expected $want ($(cat "$t/e"))"
  grep -qF -- "$text" "$t/e" && ok || bad "kernel $*: expected '$text' in: $(cat "$t/e")"
}
expect 2 "kernel needs SPEC and --layer NAME" specs/example-conv.yaml
expect 2 "--batch expects an integer" specs/example-conv.yaml --layer conv1 --batch -1
expect 2 "--arch goes with --list" specs/example-conv.yaml --layer conv1 --arch 90
expect 2 "--arch expects an integer from 30 to 999, got 'sm90'" specs/example-conv.yaml --layer conv1 --list --arch sm90
expect 3 "no layer 'conv9' (layers: conv1)" specs/example-conv.yaml --layer conv9
expect 3 "is a softmax" specs/ece408-2017.yaml --layer prob --list
expect 3 "no template 'conv2d_nosuch' (templates/conv2d/nosuch.lua)" specs/example-conv.yaml --layer conv1 --strategy nosuch --list
# conv2d_fft runs as three kernels: no candidate to time alone, and the list says why
$cg kernel bench/specs/zoo-5x5-c64.yaml --layer conv2 --strategy fft --list >"$t/o" 2>"$t/e" &&
  grep -qF "0 candidates" "$t/o" && grep -qF "conv2d_fft runs as 3 kernels (in, mul, out): not timed alone" "$t/o" &&
  ok || bad "kernel --strategy fft --list: $(cat "$t/o" "$t/e")"
expect 3 "layer 'conv2': Winograd serves kernels up to 7x7; this layer's is 9x9" bench/specs/zoo-bigk.yaml --layer conv2 --strategy winograd
expect 3 "layer 'conv1': maps_unroll=8 with cols=4 needs 128 accumulators" specs/example-conv.yaml --layer conv1 --params maps_unroll=8,cols=4,fuse=1
expect 3 "unknown parameter 'blok'" specs/example-conv.yaml --layer conv1 --params blok=64
# a split reduction into more parts than slices (1x1, C = 256 in 4 slices of 64), or not into whole slices
expect 3 "split=8: more parts than the reduction C*K*K = 256 has slices of bk=64 (4)" tests/gpu/layers-splitk.yaml \
  --layer c4 --strategy igemm --params bk=64,split=8
expect 3 "split=33 is not legal for conv2d_igemm" tests/gpu/layers-splitk.yaml --layer c4 --strategy igemm --params split=33

# no GPU here: the harness says why, exit 4
if ! [ -e /dev/nvidia0 ]; then
  expect 4 "no CUDA driver" specs/example-conv.yaml --layer conv1 --batch 64
  # no --params: the configuration generate would pick, not the template's raw defaults (igemm's
  # tm=8 does not divide zoo-odd conv2's M=30; generate picks bm=32), so no refusal (exit 3) but
  # the missing GPU (exit 4)
  expect 4 "no CUDA driver" bench/specs/zoo-odd.yaml --layer conv2 --strategy igemm --batch 64
  # the spec's params belong to its own strategy (conv1: direct, block=64 ...), not to igemm
  expect 4 "no CUDA driver" specs/ece408-2018fa.yaml --layer conv1 --strategy igemm --batch 64
  expect 4 "no CUDA driver" specs/ece408-2018fa.yaml --layer fc1 --strategy tiled --batch 64
  expect 4 "no CUDA driver" specs/ece408-2018fa.yaml --layer conv2 --strategy direct --batch 1
  # the parameters --params leaves out are searched as a spec's are: maps_unroll=8 with cols=4
  # passes with fuse=0 (the pool left to its own kernel), and planes' fp=1 with occ=1
  expect 4 "no CUDA driver" specs/example-conv.yaml --layer conv1 --params maps_unroll=8,cols=4 --batch 64
  expect 4 "no CUDA driver" bench/specs/zoo-vgg-same.yaml --layer conv1_2 --strategy planes --params fp=1 --batch 64
fi
# a layer no configuration of the template suits is still refused, with the template's reason:
# ece408-2018fa's conv2 (C*K*K = 588) under direct unrolled whole (cl=0); its channel loop
# (cl=1, legal only where nothing unrolls whole) is what direct gives it without --params
expect 3 "layer 'conv2': the unrolled body makes" specs/ece408-2018fa.yaml --layer conv2 --strategy direct --params cl=0
expect 3 "cl=1: the layer's 6 x 5 x 5 products unroll whole" specs/ece408-2018sp.yaml --layer conv2 --strategy direct --params cl=1
expect 3 "cl=1 is not legal for conv2d_direct on this layer" specs/example-conv.yaml --layer conv1 --params cl=1
# the configuration a layer gets at a small bucket when none is given is the network's kernel
# there, less its split (a kernel is timed alone): zoo-k7pad's 7x7 conv4 at one image in igemm's
# 32-pixel tiles in four stages (the network splits it 14 ways), zoo-awkward's 5x5 conv3 there in winograd's
# small tiles (planner.small_winograd: no split), at 1,100 (the large batch) in igemm's default
# tiles and under the network's own template, planes (the fake driver's sm_90). The stand-in
# driver runs no kernel, so what the check against the CPU reference finds is not looked at:
# at 1,100 images it checks one (--check-images 1), not all 1,100 (about 20 s of CPU reference each)
fake=build/tests/fake
if [ -e "$fake/libcuda.so.1" ]; then
  LD_LIBRARY_PATH=$fake $cg kernel bench/specs/zoo-k7pad.yaml --layer conv4 --batch 1 >"$t/o" 2>&1
  grep -q "template conv2d_igemm, params bm=8 bn=32 bk=7 tm=2 tn=4 occ=1 stages=4$" "$t/o" && ok \
    || bad "one image's default: $(head -2 "$t/o")"
  LD_LIBRARY_PATH=$fake $cg kernel bench/specs/zoo-awkward.yaml --layer conv3 --batch 1 >"$t/o" 2>&1
  grep -q "template conv2d_winograd, params mt=2 bm=16 bn=16 cs=11 tm=8 tn=4 xg=1 occ=1$" "$t/o" && ok \
    || bad "one image's winograd: $(head -2 "$t/o")"
  LD_LIBRARY_PATH=$fake $cg kernel bench/specs/zoo-awkward.yaml --layer conv3 --strategy igemm --batch 1100 --check-images 1 >"$t/o" 2>&1
  grep -q "template conv2d_igemm, params bm=64 bn=128 bk=5 tm=8 tn=8 occ=1 stages=2$" "$t/o" && ok \
    || bad "10,000 images' igemm: $(head -2 "$t/o")"
  LD_LIBRARY_PATH=$fake $cg kernel bench/specs/zoo-awkward.yaml --layer conv3 --batch 1100 --check-images 1 >"$t/o" 2>&1
  grep -q "template conv2d_planes, " "$t/o" && ok || bad "10,000 images' default: $(head -2 "$t/o")"
fi
echo "test_kernel: $pass passed, $fail failed"
[ $fail -eq 0 ]
