#!/usr/bin/env bash
# test_tune.sh — `convgen tune` and the tuning options as a user meets them
# without a GPU: --list, usage errors, exit 4 with one line, malformed records
# refused with FILE:LINE:COL by the verbs that read them, a stale record
# ignored with one line, a tune run for one bucket keeping the record's entries
# for the others and taking --no-verify (on the stand-in driver), tools/plot_tune.py's pictures of a
# tune CSV and tools/tune_repeat.py's comparison of two records.
set -u
. "$(dirname "$0")/lib.sh"

expect() { # exit-code expected-stderr-text verb args...
  local want=$1 text=$2; shift 2
  $cg "$@" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq "$want" ] && ok || bad "$*: exit $rc, expected $want ($(cat "$t/e"))"
  grep -qF -- "$text" "$t/e" && ok || bad "$*: expected '$text' in: $(cat "$t/e")"
}

# --list: every conv/fc layer, each serving template with its counts, no GPU needed
$cg tune specs/ece408-2017.yaml --list >"$t/o" 2>"$t/e" && ok || bad "--list: $(cat "$t/e")"
[ "$(grep -c '^layer ' "$t/o")" -eq 3 ] && ok || bad "--list: 3 layers expected: $(grep '^layer' "$t/o")"
grep -qE '^  conv2d_direct: [0-9]+ candidates of [0-9]+ combinations \([0-9]+ refused\)' "$t/o" && ok || bad "--list direct line"
grep -qE '^  conv2d_igemm: [0-9]+ candidates' "$t/o" && ok || bad "--list igemm line"
grep -qE '^  fc_vec: [0-9]+ candidates' "$t/o" && ok || bad "--list fc_vec line"
# the counts add up to the total
awk '/^layer /{s=0} /^  total: /{if ($2 != s) b=1; next} /^  [a-z0-9_]+: [0-9]+ candidates/{s+=$2} END{exit b}' "$t/o" \
  && ok || bad "--list totals do not add up"
# the search's order: each layer's first eight candidates with the cost model's estimates, ascending
# after the templates' cheapest (the first of each template)
awk '/^layer /{n=0; on=0} /^  measured first/{on=1; next} on && /^    /{n++; if ($NF+0 <= 0) b=1}
     /^  total:/{t++} END{exit b || NR == 0}' "$t/o" && ok || bad "--list order: $(grep -A2 'measured first' "$t/o")"
[ "$(grep -c '^  measured first' "$t/o")" -eq 3 ] && ok || bad "--list: an order per layer expected"
# --arch CC: the candidates for that target; a bf16 layer refused on the default sm_75,
# listed for sm_90 with conv2d_igemm_wg's 16-bit tiles (kc, its tap-by-tap slices, among them)
cat >"$t/bf16.yaml" <<'EOF2'
network: t-bf16
input: {channels: 32, height: 16, width: 16}
precision: bf16
layers:
  - {name: c, op: conv, M: 64, K: 3, padding: 1}
EOF2
$cg tune "$t/bf16.yaml" --list >"$t/o" 2>"$t/e" && ok || bad "--list bf16 (sm_75): $(cat "$t/e")"
grep -q '^  total: 0 candidates' "$t/o" && grep -q 'precision bf16 needs sm_80 or newer' "$t/o" && ok \
  || bad "--list bf16 on sm_75: every template refused, with the reason: $(head -3 "$t/o")"
$cg tune "$t/bf16.yaml" --list --arch 90 >"$t/o" 2>"$t/e" && ok || bad "--list --arch 90: $(cat "$t/e")"
# (tap by tap first: the cost model charges the offset table's gather more, so kc=0 is not
# among the first shown)
grep -qE '^  conv2d_igemm_wg: [1-9][0-9]* candidates' "$t/o" &&
  grep -A1 '^  conv2d_igemm_wg:' "$t/o" | tail -1 | grep -E 'bk=' | grep -qv 'kc=0' && ok \
  || bad "--list --arch 90: igemm_wg's 16-bit candidates, tap by tap first: $(grep -A3 igemm_wg "$t/o")"
expect 2 "--arch goes with --list" tune "$t/bf16.yaml" --arch 90
expect 2 "--arch" tune "$t/bf16.yaml" --list --arch 9
# the fc templates on tensor cores: fc_tc refused on sm_75, listed for sm_80 (no
# candidate splits: a split is two kernels, which the harness does not time), fc_wg for sm_90
$cg tune specs/ece408-2017.yaml --list --layers fc2 >"$t/o" 2>"$t/e" && ok || bad "--list fc2: $(cat "$t/e")"
grep -qE '^  fc_tc: 0 candidates of [0-9]+ combinations' "$t/o" && ok || bad "--list fc2 on sm_75: fc_tc refused: $(grep -A2 'fc_tc' "$t/o")"
$cg tune specs/ece408-2017.yaml --list --layers fc2 --arch 80 >"$t/o" 2>"$t/e" && ok || bad "--list fc2 --arch 80: $(cat "$t/e")"
grep -qE '^  fc_tc: [1-9][0-9]* candidates' "$t/o" && ! grep -A5 '^  fc_tc:' "$t/o" | grep -q 'split=' && \
  grep -qE '^  fc_wg: 0 candidates' "$t/o" && ok || bad "--list fc2 --arch 80: fc_tc's candidates: $(grep -A3 'fc_' "$t/o")"
$cg tune specs/ece408-2017.yaml --list --layers fc2 --arch 90 >"$t/o" 2>"$t/e" && ok || bad "--list fc2 --arch 90: $(cat "$t/e")"
grep -qE '^  fc_wg: [1-9][0-9]* candidates' "$t/o" && ok || bad "--list fc2 --arch 90: fc_wg's candidates: $(grep -A3 fc_wg "$t/o")"
# a 3x3 layer: conv2d_winograd among the candidates; a 9x9 one: refused (n = 10 points)
$cg tune bench/specs/zoo-wide3x3.yaml --list --layers conv3 >"$t/o" 2>"$t/e" && ok || bad "--list wide3x3: $(cat "$t/e")"
grep -qE '^  conv2d_winograd: [1-9][0-9]* candidates of ' "$t/o" && ok || bad "--list: winograd candidates for a 3x3 layer"
$cg tune bench/specs/zoo-bigk.yaml --list --layers conv2 >"$t/o" 2>"$t/e" && ok || bad "--list bigk: $(cat "$t/e")"
grep -qE '^  conv2d_winograd: 0 candidates of ' "$t/o" && ok || bad "--list: no winograd candidate for a 9x9 layer"
$cg tune specs/ece408-2017.yaml --list --layers fc2 >"$t/o" 2>"$t/e" && ok || bad "--list --layers"
# --batch reaches the cost model: for 64 images conv1's estimates are smaller and its direct candidates
# come in another order than for the default 10000 (the search's first candidate differs)
$cg tune specs/ece408-2017.yaml --list --layers conv1 >"$t/d" 2>"$t/e" && ok || bad "--list conv1: $(cat "$t/e")"
$cg tune specs/ece408-2017.yaml --list --layers conv1 --batch 64 >"$t/b" 2>"$t/e" && ok || bad "--list --batch 64: $(cat "$t/e")"
first() { grep -A1 '^  measured first' "$1" | tail -n 1; }
[ "$(first "$t/d" | awk '{print $NF}')" != "$(first "$t/b" | awk '{print $NF}')" ] && \
  awk -v d="$(first "$t/d" | awk '{print $NF}')" -v b="$(first "$t/b" | awk '{print $NF}')" 'BEGIN{exit !(b * 10 < d)}' \
  && ok || bad "--batch 64 estimates: $(first "$t/b") vs $(first "$t/d")"
[ "$(first "$t/d" | awk '{$NF=""; print}')" != "$(first "$t/b" | awk '{$NF=""; print}')" ] && ok \
  || bad "--batch 64 should change conv1's first candidate: $(first "$t/b")"
[ "$(grep -c '^layer ' "$t/o")" -eq 1 ] && grep -q '^layer fc2 ' "$t/o" && ok || bad "--layers fc2: $(grep '^layer' "$t/o")"

# errors
expect 2 "tune needs SPEC" tune
expect 2 "--budget" tune specs/ece408-2017.yaml --budget 0
expect 2 "unknown option '--topp'" tune specs/ece408-2017.yaml --topp 3
expect 3 "no conv or fc layer 'nope'" tune specs/ece408-2017.yaml --layers conv1,nope --list
$cg tune --help >"$t/o" 2>&1 && grep -q "^usage: convgen tune SPEC" "$t/o" && ok || bad "tune --help"
grep -q '^  --no-verify  ' "$t/o" && grep -q 'this run.s entries' "$t/o" && ok || bad "tune --help: --no-verify"
$cg help | grep -q "^  tune SPEC" && ok || bad "tune in convgen help"

# without a GPU: one line saying why, exit 4, nothing written
if ! $cg run specs/ece408-2017.yaml --backend cuda --images 1 >/dev/null 2>&1; then
  $cg tune specs/ece408-2017.yaml -o "$t/rec.yaml" --csv "$t/c.csv" >"$t/o" 2>"$t/e"; rc=$?
  [ $rc -eq 4 ] && ok || bad "tune without a GPU: exit $rc"
  [ "$(wc -l <"$t/e")" -eq 1 ] && grep -q "^convgen: tune measures on a GPU and found none: " "$t/e" && ok \
    || bad "one line expected: $(cat "$t/e")"
  [ ! -e "$t/rec.yaml" ] && [ ! -e "$t/c.csv" ] && ok || bad "nothing should be written without a GPU"
  # the tuning options are GPU options of run
  expect 4 "--no-tuning needs a GPU" run specs/ece408-2017.yaml --no-tuning --images 1
fi

# malformed records: FILE:LINE:COL, exit 3 (build reads the record before compiling)
printf 'convgen: 0.1.0\ndevice: "X"\ncc: 90\nlayers:\n  - signature: "s"\n    template: conv2d_direkt\n    template_hash: "0"\n    params: "block=64"\n    ms: 1\n' >"$t/bad.yaml"
expect 3 "$t/bad.yaml:6:15: unknown template 'conv2d_direkt' in layers entry 1 (did you mean 'conv2d_direct'?)" \
  build specs/example-conv.yaml --tuning "$t/bad.yaml" -o "$t/x.fatbin"
expect 3 "$t/absent.yaml: cannot open" build specs/example-conv.yaml --tuning "$t/absent.yaml" -o "$t/x.fatbin"
# a malformed whole-network decision: the same, one line naming the file, line and column
printf 'convgen: 0.1.0\ndevice: "X"\ncc: 90\nlayers: []\nwhole:\n  - bucket: 8\n    choice: both\n    kernels: "ab"\n' >"$t/badw.yaml"
expect 3 "$t/badw.yaml:7:13: unknown choice 'both' in whole entry 1 (expected layers or whole)" \
  build specs/example-conv.yaml --tuning "$t/badw.yaml" -o "$t/x.fatbin"
[ "$(wc -l <"$t/e")" -eq 1 ] && ok || bad "a malformed whole entry: one line expected: $(cat "$t/e")"
[ ! -e "$t/x.fatbin" ] && ok || bad "no fat binary after a bad record"
# the record beside a spec is read by default (a malformed one stops the build); --no-tuning skips it
cp specs/example-conv.yaml "$t/net.yaml"; cp "$t/bad.yaml" "$t/net.tuning.yaml"
expect 3 "$t/net.tuning.yaml:6:15:" build "$t/net.yaml" -o "$t/x.fatbin"
$cg build "$t/net.yaml" --no-tuning --arch 90 -o "$t/x.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -ne 3 ] && ok || bad "--no-tuning should not read the record: $(cat "$t/e")"

# a record from another convgen version: one line on stderr, ignored, the build goes on
sed 's/^convgen: 0.1.0$/convgen: 0.0.1/; s/conv2d_direkt/conv2d_direct/' "$t/bad.yaml" >"$t/stale.yaml"
$cg build specs/example-conv.yaml --tuning "$t/stale.yaml" --arch 90 -o "$t/y.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && [ -s "$t/y.fatbin" ] && ok || bad "a stale record stops nothing: exit $rc ($(cat "$t/e"))"
[ "$(wc -l <"$t/e")" -eq 1 ] && grep -qx "convgen: tuning record $t/stale.yaml: made by convgen 0.0.1, this is [0-9.]*: ignored" "$t/e" \
  && ok || bad "stale record: one line expected: $(cat "$t/e")"

# build checks a record's choice against its own architectures: the H100 record's 66,560-byte
# winograd tile holds for --arch 90 and is refused (one line) with sm_75 (64 KiB) in the list;
# the record is the shipped one with today's template hash (so template edits keep this valid)
$cg generate bench/specs/zoo-wide3x3.yaml --arch 80 -o "$t/v3" >/dev/null 2>&1   # (winograd: on sm_90, planes)
h=$(grep -ho 'conv2d_winograd (templates/conv2d/winograd.lua, hash [0-9a-f]*' "$t"/v3/*.cu | head -n 1 | awk '{print $4}')
sed "s/template_hash: \"[0-9a-f]*\"/template_hash: \"$h\"/" bench/tune/h100/zoo-wide3x3.tuning.yaml >"$t/v3.tuning.yaml"
$cg build bench/specs/zoo-wide3x3.yaml --tuning "$t/v3.tuning.yaml" --arch 90 -o "$t/v3.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$t/e" ] && ok || bad "build --arch 90 with the H100 record: exit $rc, $(cat "$t/e")"
$cg build bench/specs/zoo-wide3x3.yaml --tuning "$t/v3.tuning.yaml" --arch 75,90 -o "$t/v3b.fatbin" >/dev/null 2>"$t/e"; rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <"$t/e")" -eq 1 ] && grep -q "layer conv4: the record's choice is refused now .*at most 65536 fit): skipped" "$t/e" \
  && ok || bad "build --arch 75,90 with the H100 record: exit $rc, $(cat "$t/e")"

# tools/plot_tune.py: one valid PNG per layer of a CSV as `tune --csv` writes it
cat >"$t/c.csv" <<'CSV'
layer,template,params,status,compile_ms,median_ms,iqr_ms,retime_ms,score_ms,tflops,reason,default,peak_tflops,model
conv1,conv2d_direct,"block=64 maps_unroll=5 cols=3 unroll_groups=0 fuse=1",ok,310.2,0.412,0.003,0.405,0.405,12.5,"",default,67.6,2000
conv1,conv2d_direct,"block=128 maps_unroll=5 cols=3 unroll_groups=0 fuse=1",ok,300.2,0.52,0.003,0,0.52,9.7,"",,67.6,3000
conv1,conv2d_igemm,"bm=64 bn=256 bk=5 tm=8 tn=8 stages=2",ok,500.1,0.21,0.002,0.2,0.2,24.1,"",,67.6,4000
conv1,conv2d_igemm,"bm=64 bn=128 bk=5 tm=8 tn=8 stages=2",wrong,500.1,0,0,0,inf,0,"disagrees with the CPU reference",,67.6,5000
conv1,conv2d_igemm,"bm=32 bn=128 bk=5 tm=8 tn=8 stages=2",pending,0,0,0,0,inf,0,"",,67.6,6000
fc1,fc_tiled,"bm=64 bn=64 bk=16 tm=4 tn=4",ok,200,0.05,0.001,0.049,0.049,3.1,"",default,67.6,7000
fc1,fc_vec,"bm=64 bn=64 bk=16 tm=4 tn=4",compile-failed,0,0,0,0,inf,0,"compile: x",,67.6,8000
CSV
# png_check FILE W H [colour...]: a whole PNG of that size (signature, chunk CRCs, IDAT
# inflating to H rows of W RGB pixels) holding each colour given as r,g,b
png_check() {
  python3 - "$@" <<'PY'
import struct, sys, zlib
path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = open(path, "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "signature"
at, idat, kinds = 8, b"", []
while at < len(d):
    n, = struct.unpack(">I", d[at:at + 4]); kind = d[at + 4:at + 8]; body = d[at + 8:at + 8 + n]
    crc, = struct.unpack(">I", d[at + 8 + n:at + 12 + n])
    assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, "CRC of " + kind.decode()
    kinds.append(kind); idat += body if kind == b"IDAT" else b""
    if kind == b"IHDR": W, H, depth, ctype = struct.unpack(">IIBB", body[:10])
    at += 12 + n
assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND", kinds
if w:
    assert (W, H, depth, ctype) == (w, h, 8, 2), (W, H, depth, ctype)
    raw = zlib.decompress(idat)
    assert len(raw) == h * (1 + 3 * w), len(raw)
    rows = [raw[y * (1 + 3 * w) + 1:(y + 1) * (1 + 3 * w)] for y in range(h)]
    for c in sys.argv[4:]:
        rgb = bytes(int(v) for v in c.split(","))
        assert any(any(r[i:i + 3] == rgb for i in range(0, len(r), 3)) for r in rows), "no pixel " + c
PY
}
# the CSV above has the header convgen writes
strings $cg | grep -qx "$(head -1 "$t/c.csv")" && ok || bad "tune --csv's header differs from the test's"
python3 tools/plot_tune.py "$t/c.csv" -o "$t/plots" --plain >"$t/o" 2>"$t/e" && ok || bad "plot_tune.py: $(cat "$t/e")"
[ "$(ls "$t/plots")" = "$(printf 'conv1.png\nfc1.png')" ] && ok || bad "one PNG per layer: $(ls "$t/plots")"
grep -q "conv1.png: 3 timed of 5" "$t/o" && ok || bad "plot_tune.py counts: $(cat "$t/o")"
# conv1: grey candidates, the red default, the green winner, the blue floor (12.5*0.412/67.6 ms)
png_check "$t/plots/conv1.png" 800 500 110,110,110 220,30,30 0,160,60 30,80,230 && ok || bad "conv1.png"
png_check "$t/plots/fc1.png" 800 500 0,160,60 30,80,230 && ok || bad "fc1.png"
python3 tools/plot_tune.py "$t/c.csv" -o "$t/p2" --plain --size 400x300 >/dev/null && png_check "$t/p2/fc1.png" 400 300 \
  && ok || bad "--size 400x300"
# without a peak (none in the CSV, none given) there is no floor line
cut -d, -f1-12 "$t/c.csv" >"$t/nopeak.csv"
python3 tools/plot_tune.py "$t/nopeak.csv" -o "$t/p3" --plain >"$t/o" 2>&1 && grep -q "no FP32-peak floor" "$t/o" \
  && ! png_check "$t/p3/fc1.png" 800 500 30,80,230 2>/dev/null && ok || bad "no peak, no floor: $(cat "$t/o")"
python3 tools/plot_tune.py "$t/nopeak.csv" -o "$t/p4" --plain --peak 67.6 >/dev/null && png_check "$t/p4/fc1.png" 800 500 30,80,230 \
  && ok || bad "--peak draws the floor"
# with matplotlib, when installed, the same files (its own size)
python3 tools/plot_tune.py "$t/c.csv" -o "$t/p5" >/dev/null 2>&1 && png_check "$t/p5/conv1.png" 0 0 && ok || bad "default drawing"
# errors: one line, FILE:LINE, exit 3; usage exit 2
printf 'layer,template\nconv1,x\n' >"$t/bad.csv"
python3 tools/plot_tune.py "$t/bad.csv" -o "$t/p6" 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && [ "$(wc -l <"$t/e")" -eq 1 ] && grep -q "^plot_tune.py: $t/bad.csv:1: no column 'params'" "$t/e" && ok \
  || bad "bad CSV: exit $rc: $(cat "$t/e")"
sed '3s/,0.52,/,fast,/' "$t/c.csv" >"$t/bad2.csv"
python3 tools/plot_tune.py "$t/bad2.csv" -o "$t/p6" 2>"$t/e"; rc=$?
[ $rc -eq 3 ] && grep -q "bad2.csv:3: column 'median_ms' holds 'fast'" "$t/e" && [ ! -e "$t/p6" ] && ok \
  || bad "bad number: exit $rc: $(cat "$t/e")"
python3 tools/plot_tune.py "$t/c.csv" --size 10 2>"$t/e"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$t/e")" -eq 1 ] && ok || bad "usage error: exit $rc: $(cat "$t/e")"

# tools/tune_repeat.py: two records of one network, the same kernel or within 3 %
rec() { # FILE conv1-params conv1-ms fc1-params fc1-ms
  printf 'convgen: 0.1.0\ndevice: "X"\ncc: 90\nsms: 132\ndriver: 1\nbatch: 10000\nlayers:\n' >"$1"
  printf '  - signature: "conv C=1"\n    layer: conv1\n    template_hash: "ab"\n    measured: 9\n    candidates: 99\n' >>"$1"
  printf '    template: conv2d_igemm\n    params: "%s"\n    ms: %s\n    default_ms: 2\n' "$2" "$3" >>"$1"
  printf '    runners_up:\n      - template: conv2d_direct\n        params: "block=64"\n        ms: 9\n' >>"$1"
  printf '  - signature: "fc C=4"\n    layer: fc1\n    template_hash: "ab"\n    template: fc_vec\n' >>"$1"
  printf '    params: "%s"\n    ms: %s\n' "$4" "$5" >>"$1"
}
rec "$t/ra.yaml" "bm=32 bn=256" 1.000 "bm=128 bn=32" 0.5
rec "$t/rb.yaml" "bm=32 bn=128" 1.020 "bm=128 bn=32" 0.51
python3 tools/tune_repeat.py "$t/ra.yaml" "$t/rb.yaml" >"$t/o" 2>"$t/e" && ok || bad "tune_repeat: alike expected: $(cat "$t/o" "$t/e")"
grep -qE '^conv1 +no .*bm=32 bn=256 \(1\.0000\).*bm=32 bn=128 \(1\.0200\) +1\.0200' "$t/o" && grep -qE '^fc1 +yes ' "$t/o" \
  && grep -q "^alike: .*largest difference 2.00 %" "$t/o" && ok || bad "tune_repeat rows: $(cat "$t/o")"
rec "$t/rc.yaml" "bm=64 bn=128" 1.050 "bm=128 bn=32" 0.5
python3 tools/tune_repeat.py "$t/ra.yaml" "$t/rc.yaml" >"$t/o" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "^NOT alike: largest difference 5.00 %" "$t/o" && ok || bad "tune_repeat: 5 % apart: exit $rc: $(cat "$t/o")"
# an entry per bucket: compared with the other record's of its shape and bucket (one without
# `bucket` is its record's `batch:`'s)
bucket8() { # FILE params ms: conv1's entry for bucket 8 appended
  printf '  - signature: "conv C=1"\n    bucket: 8\n    layer: conv1\n    template_hash: "ab"\n' >>"$1"
  printf '    template: conv2d_direct\n    params: "%s"\n    ms: %s\n' "$2" "$3" >>"$1"
}
cp "$t/ra.yaml" "$t/rd.yaml" && bucket8 "$t/rd.yaml" "block=32" 0.100
cp "$t/rb.yaml" "$t/re.yaml" && bucket8 "$t/re.yaml" "block=32" 0.101
python3 tools/tune_repeat.py "$t/rd.yaml" "$t/re.yaml" >"$t/o" 2>"$t/e" && grep -qE '^conv1 +no .*bm=32 bn=256' "$t/o" \
  && grep -qE '^conv1@8 +yes .*block=32 \(0\.1000\)' "$t/o" && ok || bad "tune_repeat, bucket 8: $(cat "$t/o" "$t/e")"
printf 'convgen: 0.1.0\ndevice: "X"\ncc: 90\nbatch: 8\nlayers:\n  - signature: "conv C=1"\n    layer: conv1\n    template_hash: "ab"\n    template: conv2d_direct\n    params: "block=64"\n    ms: 0.2\n' >"$t/rf.yaml"
python3 tools/tune_repeat.py "$t/rf.yaml" "$t/re.yaml" >"$t/o" 2>"$t/e"; rc=$?
[ $rc -eq 1 ] && grep -qE '^conv1@8 +no .*block=64 \(0\.2000\).*block=32 \(0\.1010\)' "$t/o" && ok \
  || bad "tune_repeat, an old record's entries are its batch's bucket: exit $rc: $(cat "$t/o" "$t/e")"
sed 's/ms: 1.000/ms: fast/' "$t/ra.yaml" >"$t/rbad.yaml"
python3 tools/tune_repeat.py "$t/rbad.yaml" "$t/rb.yaml" 2>"$t/e" >/dev/null; rc=$?
[ $rc -eq 3 ] && grep -q "^tune_repeat.py: $t/rbad.yaml:15: ms: not a number" "$t/e" && ok || bad "tune_repeat bad record: exit $rc: $(cat "$t/e")"

# on the stand-in driver (tests/fake_cuda.c, which runs no kernel: every check fails there):
# tune's whole-network step at a small bucket, and run taking or refusing a record's decision
fake=build/tests/fake
if [ -e "$fake/libcuda.so.1" ]; then
  printf 'network: wholenet\ninput: {channels: 1, height: 12, width: 12}\nseed: 5\nlayers:\n  - {name: c1, op: conv, M: 4, K: 3, activation: relu, pool: max2}\n  - {name: fc1, op: fc, out: 20, bias: true, activation: tanh}\n  - {name: fc2, op: fc, out: 10, bias: true}\n  - {name: prob, op: softmax}\n' >"$t/w.yaml"
  onfake() { LD_LIBRARY_PATH="$fake" XDG_CACHE_HOME="$t/cache" $cg "$@"; }
  # a record of an earlier run: bucket 1's decision is kept by --layers, bucket 8's measured again
  printf 'convgen: %s\ndevice: "fake sm_90"\ncc: 90\nlayers: []\nwhole:\n  - bucket: 1\n    choice: whole\n    kernels: "ab"\n  - bucket: 8\n    choice: whole\n    kernels: "cd"\n' \
    "$($cg --version | awk '{print $2}')" >"$t/w.tuning.yaml"
  onfake tune "$t/w.yaml" --batch 8 --budget 1 --layers fc2 >"$t/o" 2>"$t/e"; rc=$?
  if [ $rc -eq 4 ] && grep -qi nvrtc "$t/e"; then
    echo "skip: tune on the stand-in driver: no NVRTC"
  else
    [ $rc -eq 0 ] && ok || bad "tune on the fake: exit $rc: $(cat "$t/e")"
    grep -q "^whole-network kernel, bucket 8: neither path passed its check (per-layer kernels: layer c1: 800 elements unwritten or not finite; whole-network kernel: layer c1: .*): nothing recorded$" "$t/o" \
      && ok || bad "tune's whole line: $(grep whole "$t/o")"
    grep -q '^  - bucket: 1$' "$t/w.tuning.yaml" && ! grep -q '^  - bucket: 8$' "$t/w.tuning.yaml" && ok \
      || bad "--layers: bucket 1 kept, bucket 8 measured again (nothing right): $(cat "$t/w.tuning.yaml")"
    # every layer tuned again for bucket 8: the record's entries for other buckets kept, bucket 8's
    # replaced (by nothing: no candidate is right on the stand-in), bucket 1's whole decision kept
    printf 'convgen: %s\ndevice: "fake sm_90"\ncc: 90\nbatch: 8\nlayers:\n' "$($cg --version | awk '{print $2}')" >"$t/w.tuning.yaml"
    for b in large 8 64; do
      printf '  - signature: "fc C=99 H=1 W=1 M=0 K=0 pool=0 act=none bias=1 out=%s"\n    bucket: %s\n    template_hash: "ab"\n    template: fc_vec\n    params: "bm=32"\n    ms: 1\n' "$b" "$b" >>"$t/w.tuning.yaml"
    done
    printf 'whole:\n  - bucket: 1\n    choice: whole\n    kernels: "ab"\n' >>"$t/w.tuning.yaml"
    onfake tune "$t/w.yaml" --batch 5 --budget 1 >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && grep -q '^    bucket: large$' "$t/w.tuning.yaml" && grep -q '^    bucket: 64$' "$t/w.tuning.yaml" \
      && ! grep -q '^    bucket: 8$' "$t/w.tuning.yaml" && grep -q '^  - bucket: 1$' "$t/w.tuning.yaml" && ok \
      || bad "tune --batch 5: other buckets' entries kept, bucket 8's replaced: exit $rc: $(cat "$t/e" "$t/w.tuning.yaml")"
    # no entry of this run to check in the network: no verify line; --no-verify is taken and writes
    # the same record (tests/test_tune_verify.c checks the check itself, with entries)
    ! grep -q '^verify' "$t/o" && ok || bad "nothing to verify, no line expected: $(grep verify "$t/o")"
    cp "$t/w.tuning.yaml" "$t/w.verified.yaml"
    onfake tune "$t/w.yaml" --batch 5 --budget 1 --no-verify >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && cmp -s "$t/w.tuning.yaml" "$t/w.verified.yaml" && ! grep -q '^verify' "$t/o" && ok \
      || bad "tune --no-verify: exit $rc: $(cat "$t/e"; diff "$t/w.verified.yaml" "$t/w.tuning.yaml")"
    # run: a decision for other kernels is one line naming the record, both paths timed
    printf 'convgen: %s\ndevice: "fake sm_90"\ncc: 90\nlayers: []\nwhole:\n  - bucket: 8\n    choice: layers\n    kernels: "00000000deadbeef"\n    whole_ms: 2\n    layers_ms: 1\n' \
      "$($cg --version | awk '{print $2}')" >"$t/w8.yaml"
    onfake run "$t/w.yaml" --random-input 1 --images 3 --batch 8 --tuning "$t/w8.yaml" --profile --json "$t/w.json" >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && [ "$(wc -l <"$t/e")" -eq 1 ] && grep -q "^convgen: tuning record $t/w8.yaml: whole-network kernel, bucket 8: the network's kernels changed since it was tuned (build 00000000deadbeef, now [0-9a-f]*): ignored, both paths timed at first use$" "$t/e" \
      && ok || bad "stale whole decision: exit $rc: $(cat "$t/e")"
    grep -q '"whole_choice": "measured"' "$t/w.json" && grep -q "^  network: .* (measured now)$" "$t/o" && ok \
      || bad "stale: measured now: $(grep whole "$t/w.json")"
    # the same decision for these kernels: taken, nothing timed, said in the profile and the JSON
    id=$(sed -n 's/.*now \([0-9a-f]*\)).*/\1/p' "$t/e")
    sed -i "s/00000000deadbeef/$id/" "$t/w8.yaml"
    onfake run "$t/w.yaml" --random-input 1 --images 3 --batch 8 --tuning "$t/w8.yaml" --profile --json "$t/w.json" >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && [ ! -s "$t/e" ] && grep -q '"whole_choice": "record"' "$t/w.json" && grep -q '"whole": false' "$t/w.json" \
      && grep -q "^  network: whole-network kernel 2000.0 us, per-layer kernels 1000.0 us: per-layer (tuning record)$" "$t/o" \
      && ok || bad "the record's decision: exit $rc: $(cat "$t/e") $(grep network: "$t/o")"
    onfake run "$t/w.yaml" --random-input 1 --images 3 --batch 8 --tuning "$t/w8.yaml" --whole on --json "$t/w.json" >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && grep -q '"whole_choice": "forced"' "$t/w.json" && grep -q '"whole": true' "$t/w.json" && ok \
      || bad "--whole on over the record: exit $rc: $(cat "$t/e") $(grep whole "$t/w.json")"
    # run's launch ways at bucket 64 (no whole kernel): overlapped and plain launches both timed
    # (the fake's kernels cost the same either way: the overlapped kept), --pdl-always times
    # neither, --no-pdl launches plainly; --pdl-always is a GPU option
    onfake run "$t/w.yaml" --random-input 1 --images 20 --json "$t/l.json" >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && grep -q '"bucket": 64,' "$t/l.json" && grep -q '"launch": "pdl",' "$t/l.json" \
      && grep -q '"pdl_ms": [0-9]' "$t/l.json" && grep -q '"plain_ms": [0-9]' "$t/l.json" && ok \
      || bad "run at 20 images, launch ways timed: exit $rc: $(cat "$t/e") $(grep -E 'bucket|launch|_ms' "$t/l.json")"
    onfake run "$t/w.yaml" --random-input 1 --images 20 --pdl-always --json "$t/l.json" >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && grep -q '"launch": "pdl",' "$t/l.json" && grep -q '"pdl_ms": null' "$t/l.json" \
      && grep -q '"plain_ms": null' "$t/l.json" && ok \
      || bad "run --pdl-always: nothing timed: exit $rc: $(cat "$t/e") $(grep -E 'launch|_ms' "$t/l.json")"
    onfake run "$t/w.yaml" --random-input 1 --images 20 --no-pdl --json "$t/l.json" >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 0 ] && grep -q '"launch": "plain",' "$t/l.json" && grep -q '"pdl_launches": 0,' "$t/l.json" \
      && grep -q '"plain_ms": null' "$t/l.json" && ok \
      || bad "run --no-pdl: plain launches, nothing timed: exit $rc: $(cat "$t/e") $(grep -E 'launch|_ms' "$t/l.json")"
    $cg run "$t/w.yaml" --random-input 1 --images 2 --backend cpu --pdl-always >"$t/o" 2>"$t/e"; rc=$?
    [ $rc -eq 2 ] && grep -q -- "^convgen: --pdl-always needs the cuda backend" "$t/e" && ok \
      || bad "--pdl-always with the CPU backend: exit $rc: $(cat "$t/e")"
  fi
fi

echo "test_tune.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
