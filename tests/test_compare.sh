#!/usr/bin/env bash
# test_compare.sh — bench/compare.py without a GPU: --dry-run reads every shipped
# and zoo spec, derives the shapes convgen derives (checked against the tensor
# sizes of convgen's manifest), prints the layer table and the PyTorch modules;
# its small YAML reader agrees with PyYAML where PyYAML is installed; bad specs,
# bad usage and a failing convgen give non-zero exits; --precision P names the spec
# copy convgen runs and PyTorch's type and layout, and removes the copy after
# convgen ran (or failed). Skipped without python3.
set -u
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*"; }
if ! command -v python3 >/dev/null; then
  echo "skip: no python3"
  echo "compare: 0 passed, 0 failed"
  exit 0
fi
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
cmp=bench/compare.py

# every spec: exit 0, one Conv2d per conv layer, a module list
for s in specs/*.yaml bench/specs/zoo-*.yaml; do
  if python3 $cmp --dry-run "$s" >"$t/out" 2>"$t/err"; then ok; else bad "--dry-run $s: $(cat "$t/err")"; continue; fi
  convs=$(grep -cE '(^ +|[{,] *)op: conv( |,|}|$)' "$s")
  got=$(grep -c 'Conv2d(' "$t/out")
  if [ "$convs" -eq "$got" ]; then ok; else bad "$s: $convs conv layers, $got Conv2d in the dry run"; fi
  if grep -q 'torch.nn.Sequential(' "$t/out"; then ok; else bad "$s: no module list"; fi
done
# every zoo network ends like the shipped ones: fc with 10 outputs, softmax
for s in bench/specs/zoo-*.yaml; do
  python3 $cmp --dry-run "$s" | grep -E '^ +[A-Z][A-Za-z0-9]*\(.*# ' | tail -2 | tr -d ' ' >"$t/tail"
  if grep -q 'Linear([0-9]*,10,bias=True),#' "$t/tail" && grep -q '^Softmax(dim=1),#' "$t/tail"; then ok
  else bad "$s: does not end in fc 10 and softmax: $(cat "$t/tail")"; fi
done
ls bench/specs/zoo-*.yaml | wc -l | { read -r n; [ "$n" -ge 8 ]; } && ok || bad "fewer than eight zoo specs"

# shapes and work as a reader would check them by hand
python3 $cmp --dry-run --batch 10000 specs/ece408-2018sp.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-bigk.yaml >"$t/out"
expect() { if grep -qF -- "$1" "$t/out"; then ok; else bad "dry run lacks '$1'"; fi; }
expect "C6 30x30 -> M16 K5 -> 16x26x26"                  # 2*1e4*16*6*25*26*26 = 32.45 GFLOP
expect "    150     32.45"
expect "C20 53x53 -> M30 K3 relu pool bias -> 30x25x25"  # odd sides, pool floors
expect "C48 7x7 -> M96 K6 relu pool -> 96x1x1"
expect "Linear(22050, 10, bias=True)"
expect "Conv2d(24, 48, 9, bias=True)"

# --precision: fp32, given or not, prints what the dry run always printed; bf16 adds
# three lines per spec (the copy convgen would run, PyTorch's type and layout, the
# peak) and nothing else, and writes no copy; tf32 and fp16 name theirs
three="specs/ece408-2018sp.yaml bench/specs/zoo-odd.yaml bench/specs/zoo-bigk.yaml"
python3 $cmp --dry-run --batch 10000 --precision fp32 $three >"$t/out32"
if cmp -s "$t/out" "$t/out32"; then ok; else bad "--precision fp32 changed the dry run: $(diff "$t/out" "$t/out32" | head -5)"; fi
if grep -qE 'precision|\.prec-|bfloat16|channels_last|tf32' "$t/out"; then bad "the fp32 dry run names a precision"; else ok; fi
python3 $cmp --dry-run --batch 10000 --precision bf16 $three >"$t/out16" 2>"$t/err"; rc=$?
if [ $rc -eq 0 ]; then ok; else bad "--dry-run --precision bf16: exit $rc: $(cat "$t/err")"; fi
for s in $three; do
  c=$(dirname "$s")/.prec-bf16-$(basename "$s")
  if grep -qF "   precision bf16: convgen runs $c (the spec with precision: bf16, written beside it and removed after)" \
      "$t/out16"; then ok; else bad "bf16 dry run does not name $c: $(grep 'precision' "$t/out16")"; fi
  if [ -e "$c" ]; then bad "the bf16 dry run left $c behind"; rm -f "$c"; else ok; fi
done
n=$(grep -c '^   precision bf16: PyTorch dtype=torch.bfloat16, memory_format=torch.channels_last (weights and input)$' "$t/out16")
if [ "$n" -eq 3 ]; then ok; else bad "bf16 dry run: $n PyTorch bfloat16 channels-last lines, not 3"; fi
n=$(grep -c '^   precision bf16: % peak = fraction of the dense bf16 tensor-core peak (SMs x 4096 FLOP a clock' "$t/out16")
if [ "$n" -eq 3 ]; then ok; else bad "bf16 dry run: $n tensor-peak lines, not 3"; fi
if grep -v '^   precision bf16: ' "$t/out16" | cmp -s - "$t/out"; then ok
else bad "bf16 dry run differs from fp32's beyond its precision lines"; fi
python3 $cmp --dry-run --precision tf32 specs/example-conv.yaml >"$t/outtf" 2>&1
if grep -qF "precision tf32: PyTorch dtype=torch.float32, torch.backends.cudnn.allow_tf32 = True, torch.backends.cuda.matmul.allow_tf32 = True" "$t/outtf" \
   && grep -qF "convgen runs specs/.prec-tf32-example-conv.yaml" "$t/outtf" \
   && grep -qF "the dense tf32 tensor-core peak (SMs x 2048 FLOP" "$t/outtf"; then ok; else bad "tf32 dry run: $(cat "$t/outtf")"; fi
# --auto: the precision copy less its layers' strategy and params (the course specs name
# FP32 templates), block-style keys and flow-style entries (a flow mapping over several lines
# joined); refused without a precision other than fp32 and on a flow-style layer whose params
# nest a mapping (exit 3, the file and line)
python3 $cmp --dry-run --precision bf16 --auto specs/ece408-2018fa.yaml >"$t/outau" 2>&1
if grep -qF "convgen runs specs/.prec-bf16-ece408-2018fa.yaml (the spec with precision: bf16, less its layers strategy and params" "$t/outau"
then ok; else bad "--auto dry run: $(grep precision "$t/outau")"; fi
python3 $cmp --dry-run --auto specs/example-conv.yaml >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "auto needs --precision" "$t/err"; then ok; else bad "--auto without a precision: exit $rc"; fi
printf 'network: flow\ninput: {channels: 1, height: 8,   # comment\n        width: 8}\nlayers:\n  - {name: c1, op: conv, M: 4, K: 3, strategy: direct,\n     params: {block: 64}, activation: relu}   # c1\n  - {name: f, op: fc, out: 3, strategy: vec}\n' \
  >"$t/flow.yaml"
python3 $cmp --dry-run --precision bf16 --auto "$t/flow.yaml" >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 0 ] && [ ! -e "$t/.prec-bf16-flow.yaml" ]; then ok
else bad "--auto on flow-style layers: exit $rc: $(cat "$t/err")"; fi
python3 - "$t/flow.yaml" <<'PY' >"$t/au" 2>&1 || bad "--auto flow copy: $(cat "$t/au")"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("compare", "bench/compare.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
_, text = m.precision_copy(sys.argv[1], "bf16", True)
want = ["  - {name: c1, op: conv, M: 4, K: 3, activation: relu}", "  - {name: f, op: fc, out: 3}",
        "input: {channels: 1, height: 8, width: 8}"]
for w in want:
    assert w in text.splitlines(), (w, text)
assert "strategy" not in text and "params" not in text, text
PY
printf 'network: flow\ninput: {channels: 1, height: 8, width: 8}\nlayers:\n  - {name: c1, op: conv, M: 4, K: 3, params: {a: {b: 1}}}\n' \
  >"$t/flow2.yaml"
python3 $cmp --dry-run --precision bf16 --auto "$t/flow2.yaml" >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 3 ] && grep -q "flow2.yaml:4: a flow-style layer whose params nest a mapping" "$t/err"; then ok
else bad "--auto on nested flow params: exit $rc: $(cat "$t/err")"; fi
python3 - <<'PY' >"$t/au" 2>&1 || bad "--auto copy: $(cat "$t/au")"
import importlib.util
spec = importlib.util.spec_from_file_location("compare", "bench/compare.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
for path in ("specs/ece408-2017.yaml", "specs/ece408-2018sp.yaml", "specs/ece408-2018fa.yaml"):
    _, text = m.precision_copy(path, "bf16", True)
    _, kept = m.precision_copy(path, "bf16")
    assert "strategy:" not in text and "params:" not in text and "block: 64" not in text, path
    assert "strategy:" in kept and "precision: bf16" in text, path
    assert m.layer_table(m.parse_yaml(text, path), path) == m.load_spec(path)[1], path
PY
[ -s "$t/au" ] || ok
python3 $cmp --dry-run --precision fp16 specs/example-conv.yaml >"$t/outfp" 2>&1
if grep -qF "precision fp16: PyTorch dtype=torch.float16, memory_format=torch.channels_last" "$t/outfp"; then ok
else bad "fp16 dry run: $(cat "$t/outfp")"; fi

# the real run's shape check against convgen's manifest, and the YAML reader
# against PyYAML (where installed), from Python without torch
cat > "$t/check.py" <<'EOF'
import glob, importlib.util, sys
spec = importlib.util.spec_from_file_location("compare", "bench/compare.py")
c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
assert "torch" not in sys.modules, "compare.py imported torch for a dry run"
fails = 0
for p in sorted(glob.glob("specs/*.yaml")):
    s, layers = c.load_spec(p)
    chosen = c.convgen_templates("build/convgen", p, layers)   # raises CheckError on a mismatch
    for l in layers:
        if l["op"] == "conv" and not chosen[l["name"]].startswith("conv2d_"):
            print(f"FAIL: {p} {l['name']}: template {chosen[l['name']]}"); fails += 1
try:
    import yaml
except ImportError:
    yaml = None
tricky = '''# comment
network: "a # not a comment"   # a comment
quoted: 'it''s'
flow: {bm: 128, bn: 64}
list: [1, 2.5, true]
nested:
  deeper:
    - x: 1
      y: -2
    - plain words
layers:
- name: a
  K: 3
'''
texts = [("tricky", tricky)] + [(p, open(p).read()) for p in sorted(glob.glob("specs/*.yaml") + glob.glob("bench/specs/*.yaml"))]
for p, text in texts:
    got = c.parse_yaml(text, p)
    if yaml is not None and got != yaml.safe_load(text):
        print(f"FAIL: {p}: the YAML reader and PyYAML disagree"); fails += 1
if yaml is None:
    print("note: no PyYAML: the YAML reader was not cross-checked")
print("parsed", len(texts))

# the peaks and PyTorch's settings a precision takes, with a stand-in for torch (no
# nvidia-smi: the clock comes from the device properties)
import types
def no_smi(*a, **k):
    raise OSError("no nvidia-smi here")
c.subprocess.run = no_smi
for props, want in ((types.SimpleNamespace(major=9, minor=0, multi_processor_count=132, name="NVIDIA H200",
                                           clock_rate=1980000), {"fp32": None, "tf32": 535.3, "bf16": 1070.5, "fp16": 1070.5}),
                    (types.SimpleNamespace(major=8, minor=0, multi_processor_count=108, name="NVIDIA A100",
                                           clock_rate=1410000), {"fp32": None, "tf32": 155.9, "bf16": 311.9, "fp16": 311.9})):
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_properties=lambda i, p=props: p))
    for prec, tf in want.items():
        got = c.tensor_peak(fake, prec)
        if (got is None) != (tf is None) or (got is not None and round(got, 1) != tf):
            print(f"FAIL: {props.name} {prec}: tensor peak {got}, want {tf}"); fails += 1
fake = types.SimpleNamespace(bfloat16="BF16", float16="F16", backends=types.SimpleNamespace(
    cudnn=types.SimpleNamespace(allow_tf32=None), cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=None))))
for prec, dtype in (("fp32", None), ("tf32", None), ("bf16", "BF16"), ("fp16", "F16")):
    got = c.torch_precision(fake, prec)
    flags = (fake.backends.cudnn.allow_tf32, fake.backends.cuda.matmul.allow_tf32)
    if got != dtype or flags != (prec == "tf32",) * 2:
        print(f"FAIL: torch_precision {prec}: {got}, TF32 flags {flags}"); fails += 1
if c.PRECISIONS != ("fp32", "tf32", "bf16", "fp16"):
    print(f"FAIL: PRECISIONS {c.PRECISIONS}"); fails += 1
sys.exit(1 if fails else 0)
EOF
if python3 "$t/check.py" >"$t/out" 2>&1; then ok; else bad "manifest/PyYAML cross-check: $(cat "$t/out")"; fi
grep -v '^parsed' "$t/out" | grep . || true

# bad spec, missing file: exit 3 naming the file; bad usage: exit 2
sed 's/^    K: 5 /    K: 31 /' specs/example-conv.yaml > "$t/bigk.yaml"
python3 $cmp --dry-run "$t/bigk.yaml" >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 3 ] && grep -q "bigk.yaml: layer 'conv1': K=31 is larger than the input 28x28" "$t/err"; then ok; else bad "K too large: exit $rc: $(cat "$t/err")"; fi
python3 $cmp --dry-run "$t/none.yaml" >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 3 ] && grep -q "none.yaml" "$t/err"; then ok; else bad "missing spec: exit $rc: $(cat "$t/err")"; fi
python3 $cmp --dry-run --repeat 0 specs/example-conv.yaml >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then ok; else bad "--repeat 0: exit $rc"; fi
for p in fp64 BF16 ""; do
  python3 $cmp --dry-run --precision "$p" specs/example-conv.yaml >/dev/null 2>"$t/err"; rc=$?
  if [ $rc -eq 2 ] && grep -q "argument --precision: invalid choice" "$t/err"; then ok
  else bad "--precision '$p': exit $rc: $(cat "$t/err")"; fi
done
# a spec without a top-level network line has nowhere to put precision: P (exit 3)
grep -v '^network:' specs/example-conv.yaml > "$t/nonet.yaml"
python3 $cmp --dry-run --precision bf16 "$t/nonet.yaml" >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 3 ] && grep -q "nonet.yaml: no top-level 'network:' line" "$t/err"; then ok
else bad "--precision bf16 without a network line: exit $rc: $(cat "$t/err")"; fi

# a failing convgen ends the run with exit 1 and its message (no GPU here, or a
# convgen that does not exist)
python3 $cmp --convgen "$t/no-convgen" specs/example-conv.yaml >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "no-convgen" "$t/err"; then ok; else bad "missing convgen: exit $rc: $(cat "$t/err")"; fi
printf '#!/bin/sh\necho "convgen: planted failure" >&2\nexit 4\n' > "$t/failing"; chmod +x "$t/failing"
python3 $cmp --convgen "$t/failing" specs/example-conv.yaml >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "exited 4: convgen: planted failure" "$t/err"; then ok; else bad "failing convgen: exit $rc: $(cat "$t/err")"; fi

# --precision bf16's convgen side: the copy (precision: bf16 after the network line, the
# spec's own top-level precision dropped) is what convgen runs and generates from,
# with the spec's own tuning record, no fat binary (it holds the spec's kernels), and
# the copy is gone afterwards: after a failing convgen (exit 1) and after a working one
# (a stand-in for `run`, the real `generate`; then exit 4 where there is no PyTorch)
{ cat bench/specs/zoo-odd.yaml; echo "precision: fp16"; } > "$t/odd.yaml"
echo "layers: {}" > "$t/odd.tuning.yaml"
mkdir -p "$t/fb" && : > "$t/fb/zoo-odd.fatbin"
python3 $cmp --convgen "$t/failing" --precision bf16 "$t/odd.yaml" >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "\.prec-bf16-odd\.yaml .*exited 4: convgen: planted failure" "$t/err"; then ok
else bad "failing convgen at bf16: exit $rc: $(cat "$t/err")"; fi
if ls -A "$t" | grep -q '^\.prec-'; then bad "a failing convgen left $(ls -A "$t" | grep '^\.prec-') behind"; rm -f "$t"/.prec-*; else ok; fi
mkdir -p "$t/fake"
cat > "$t/fake/convgen" <<'EOF'
#!/usr/bin/env python3
import importlib.util, json, os, shutil, sys
a = sys.argv[1:]
log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls")
with open(log, "a") as f:
    f.write(" ".join(a) + "\n")
if a[0] == "generate":
    os.execv("build/convgen", ["build/convgen"] + a)
shutil.copy(a[1], log + ".spec")  # the spec run was given, as it was then
m = importlib.util.spec_from_file_location("compare", "bench/compare.py")
c = importlib.util.module_from_spec(m); m.loader.exec_module(c)
layers = c.load_spec(a[1])[1]
with open(a[a.index("--json") + 1], "w") as f:
    json.dump({"backend": "cuda", "images": int(a[a.index("--images") + 1]), "device": "stand-in", "arch": "sm_90",
               "total_s": 0.005, "layers": [{"name": l["name"], "op": l["op"], "time_s": 0.001} for l in layers]}, f)
EOF
chmod +x "$t/fake/convgen"
if python3 -c 'import torch' 2>/dev/null; then echo "skip: PyTorch is installed: the bf16 convgen side is not run without it"
else
  python3 $cmp --convgen "$t/fake/convgen" --fatbin-dir "$t/fb" --precision bf16 --batch 64 "$t/odd.yaml" \
    >/dev/null 2>"$t/err"; rc=$?
  if [ $rc -eq 4 ] && grep -q "no PyTorch" "$t/err"; then ok; else bad "stand-in convgen at bf16: exit $rc: $(cat "$t/err")"; fi
  if grep -qx "convgen: $t/.prec-bf16-odd.yaml" "$t/err" && grep -qF "$t/fb/zoo-odd.fatbin holds the spec's own kernels: not timed at bf16" "$t/err"
  then ok; else bad "stand-in convgen at bf16: $(cat "$t/err")"; fi
  if grep -qx "run $t/.prec-bf16-odd.yaml --backend cuda --random-input 1 --images 64 --repeat 50 --json .* --tuning $t/odd.tuning.yaml" \
      "$t/fake/calls" && grep -qx "generate $t/.prec-bf16-odd.yaml -o .* --arch 90" "$t/fake/calls" \
      && [ "$(wc -l < "$t/fake/calls")" -eq 2 ]; then ok; else bad "convgen calls at bf16: $(cat "$t/fake/calls")"; fi
  if grep -A1 '^network:' "$t/fake/calls.spec" | tail -1 | grep -qx 'precision: bf16' \
      && [ "$(grep -c '^precision:' "$t/fake/calls.spec")" -eq 1 ]; then ok
  else bad "the copy convgen ran: $(grep -n '^network:\|^precision' "$t/fake/calls.spec")"; fi
  if ls -A "$t" | grep -q '^\.prec-'; then bad "the bf16 run left $(ls -A "$t" | grep '^\.prec-') behind"; else ok; fi
fi

echo "compare: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
