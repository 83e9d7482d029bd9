#!/usr/bin/env bash
# test_layering.sh — every #include of the C code against the layering table in
# docs/design.md ("The layering: folders and what each may know"): a file in a
# folder may include headers of its own folder and of the folders its row's
# "may use" column names in backticks, nothing else; third-party headers stay in
# their folder (Lua in generator/, libyaml in base/, CUDA in runtime/cuda/, MPI
# in runtime/mpi/, protobuf-c in runtime/formats/); and the folders form layers, no cycle among them.
# Then the checker itself on a tree of its own with one wrong include of each kind.
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*"; }

# check ROOT: prints one line per violation; the table is ROOT/docs/design.md
check() {
  python3 - "$1" <<'PY'
import os, re, sys
root = sys.argv[1]
doc = open(os.path.join(root, "docs/design.md"), encoding="utf-8").read()
sec = doc.split("## The layering", 1)
if len(sec) < 2:
    print("docs/design.md: no section 'The layering'"); sys.exit(0)
allowed = {}
for line in sec[1].splitlines():
    if not line.startswith("| `"):
        if allowed and not line.startswith("|"): break
        continue
    cols = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cols) < 4: continue
    names = re.findall(r"`([^`]+/)`", cols[0])
    uses = re.findall(r"`([^`]+/)`", cols[2])
    for n in names: allowed[n] = set(uses)
code = [d for d in allowed if d == "base/" or d == "generator/" or d.startswith("runtime/")]
if not code:
    print("docs/design.md: the layering table names no C folder"); sys.exit(0)
# every header of the C folders -> the folder it lives in
home = {}
for d in code:
    full = os.path.join(root, d)
    if not os.path.isdir(full):
        print(f"docs/design.md: the layering table names {d}, which is not a folder"); continue
    for f in os.listdir(full):
        if f.endswith(".h"): home.setdefault(f, []).append(d)
for h, ds in sorted(home.items()):
    if len(ds) > 1: print(f"{h}: in {', '.join(sorted(ds))}: one name, two folders")
third = {"lua.h": "generator/", "lauxlib.h": "generator/", "lualib.h": "generator/",
         "yaml.h": "base/", "cuda.h": "runtime/cuda/", "cudaTypedefs.h": "runtime/cuda/",
         "nvrtc.h": "runtime/cuda/", "mpi.h": "runtime/mpi/",
         "protobuf-c/protobuf-c.h": "runtime/formats/"}
# the C folders on disk must all be in the table
for top in ("base", "generator", "runtime"):
    for dp, dn, fn in os.walk(os.path.join(root, top)):
        rel = os.path.relpath(dp, root) + "/"
        if any(f.endswith((".c", ".h")) for f in fn) and rel not in allowed:
            print(f"{rel}: holds C code but has no row in the layering table")
edges = set()
for d in code:
    full = os.path.join(root, d)
    if not os.path.isdir(full): continue
    for f in sorted(os.listdir(full)):
        if not f.endswith((".c", ".h")): continue
        for no, line in enumerate(open(os.path.join(full, f), encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
            if not m: continue
            kind, name = m.groups()
            where = f"{d}{f}:{no}"
            if kind == "<":
                if name in third and third[name] != d:
                    print(f"{where}: includes <{name}>, which only {third[name]} may")
                continue
            if name not in home:
                continue  # a generated header under build/ (none of the folders')
            src = home[name][0]
            if src == d: continue
            if src not in allowed[d]:
                print(f"{where}: includes \"{name}\" from {src}, which the layering table does not let {d} use")
            edges.add((d, src))
# no cycle among the folders
graph = {}
for a, b in edges: graph.setdefault(a, set()).add(b)
state = {}
def visit(n, path):
    state[n] = 1
    for m in sorted(graph.get(n, ())):
        if state.get(m) == 1:
            print("folder cycle: " + " -> ".join(path[path.index(m):] + [m])); continue
        if m not in state: visit(m, path + [m])
    state[n] = 2
for n in sorted(graph):
    if n not in state: visit(n, [n])
PY
}

out=$(check .)
[ -z "$out" ] && ok || bad "the tree breaks the layering table:"$'\n'"$out"

# the checker catches what it should: a copy of the table over a small tree
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/docs" "$t/base" "$t/generator" "$t/runtime/cpu" "$t/runtime/cuda"
cat >"$t/docs/design.md" <<'MD'
## The layering: folders and what each may know

| folder | owns | may use | must not know |
|---|---|---|---|
| `base/` | util | – | – |
| `generator/` | gen | `base/` | – |
| `runtime/cpu/` | cpu | `base/` | – |
| `runtime/cuda/` | gpu | `base/`, `generator/` | – |

After the table.
MD
printf '#include "util.h"\n' >"$t/base/util.c"; : >"$t/base/util.h"
printf '#include "util.h"\n#include <lua.h>\n' >"$t/generator/gen.c"; : >"$t/generator/gen.h"
printf '#include "util.h"\n' >"$t/runtime/cpu/cpu.c"; : >"$t/runtime/cpu/cpu.h"
printf '#include "gen.h"\n#include "util.h"\n#include <cuda.h>\n' >"$t/runtime/cuda/gpu.c"; : >"$t/runtime/cuda/gpu.h"
out=$(check "$t")
[ -z "$out" ] && ok || bad "a tree that keeps its table is refused: $out"

printf '#include "gpu.h"\n' >>"$t/runtime/cpu/cpu.c"        # cpu -> cuda: not in its row
out=$(check "$t")
grep -q '^runtime/cpu/cpu.c:2: includes "gpu.h" from runtime/cuda/' <<<"$out" && ok \
  || bad "an include outside the row's 'may use' is not reported: $out"
printf '#include "util.h"\n' >"$t/runtime/cpu/cpu.c"

printf '#include <lua.h>\n' >>"$t/base/util.c"             # Lua outside generator/
out=$(check "$t")
grep -q '^base/util.c:2: includes <lua.h>, which only generator/ may' <<<"$out" && ok \
  || bad "a third-party header outside its folder is not reported: $out"
printf '#include "util.h"\n' >"$t/base/util.c"

printf '#include "gen.h"\n' >>"$t/base/util.c"               # base -> generator, and back: a cycle
sed -i 's/^| `base\/` | util | – |/| `base\/` | util | `generator\/` |/' "$t/docs/design.md"
out=$(check "$t")
grep -q '^folder cycle: ' <<<"$out" && ok || bad "a folder cycle is not reported: $out"
printf '#include "util.h"\n' >"$t/base/util.c"

mkdir -p "$t/runtime/dist"; : >"$t/runtime/dist/x.c"        # a folder the table does not know
out=$(check "$t")
grep -q '^runtime/dist/: holds C code but has no row' <<<"$out" && ok || bad "a folder without a row is not reported: $out"

echo "test_layering: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
