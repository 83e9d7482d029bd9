#!/usr/bin/env bash
# half_nets_device.sh — on a GPU: networks' bf16 copies (bench/compare.py --auto; PREC: another
# precision) at 10,000 images under two binaries, each's `run --profile` (per-kernel times) through
# prof_cells.sh, NEW then CUR in the same call, written to $OUT/nets-new.txt and nets-cur.txt (OUT:
# default the working directory); printed: each network's GPU time under both. CHECKS: networks
# also checked (NEW) at 7 and 1,000 images first.
#
#   bash bench/scripts/half_nets_device.sh NEW CUR [NETWORK ...]
set -u
. "$(dirname "$0")/cell_spec.sh"
new=$1 cur=$2
shift 2
out=${OUT:-.}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
P=${PREC:-bf16}
# shellcheck disable=SC2086  # the list is words
copies_check "$new" "$P" ${CHECKS:-}
cells=()
for n in "$@"; do cells+=("$n:10000"); done
PREC=$P REPEAT=${REPEAT:-5} bash "$(dirname "$0")/prof_cells.sh" "$new" "${cells[@]}" >"$out/nets-new.txt" 2>&1
PREC=$P REPEAT=${REPEAT:-5} bash "$(dirname "$0")/prof_cells.sh" "$cur" "${cells[@]}" >"$out/nets-cur.txt" 2>&1
for f in new cur; do
  echo "== $f"
  awk '/^===/{n=$2} /GPU time/{sub(/.*GPU time /, ""); print n, $0}' "$out/nets-$f.txt"
done
