#!/usr/bin/env bash
# test_cli.sh — convgen as a user meets it: generate, error lines, exit codes,
# generated/ up to date, the golden one-layer example, the CPU fallback.
set -u
cg=build/convgen
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*"; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT

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

# the README's full example is a valid spec
awk '/^```yaml$/ { on = 1; next } /^```$/ && on { exit } on' README.md > "$t/readme.yaml"
if $cg generate "$t/readme.yaml" -o "$t/readme" >/dev/null 2>"$t/e"; then ok; else bad "README example: $(cat "$t/e")"; fi

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
    strategy: winograd" "bad.yaml:9:15: unknown strategy 'winograd'"
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
echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
