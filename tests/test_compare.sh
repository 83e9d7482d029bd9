#!/usr/bin/env bash
# test_compare.sh — bench/compare.py without a GPU: --dry-run reads every shipped
# and zoo spec, derives the shapes convgen derives (checked against the tensor
# sizes of convgen's manifest), prints the layer table and the PyTorch modules;
# its small YAML reader agrees with PyYAML where PyYAML is installed; bad specs,
# bad usage and a failing convgen give non-zero exits. Skipped without python3.
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

# a failing convgen ends the run with exit 1 and its message (no GPU here, or a
# convgen that does not exist)
python3 $cmp --convgen "$t/no-convgen" specs/example-conv.yaml >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "no-convgen" "$t/err"; then ok; else bad "missing convgen: exit $rc: $(cat "$t/err")"; fi
printf '#!/bin/sh\necho "convgen: planted failure" >&2\nexit 4\n' > "$t/failing"; chmod +x "$t/failing"
python3 $cmp --convgen "$t/failing" specs/example-conv.yaml >/dev/null 2>"$t/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "exited 4: convgen: planted failure" "$t/err"; then ok; else bad "failing convgen: exit $rc: $(cat "$t/err")"; fi

echo "compare: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
