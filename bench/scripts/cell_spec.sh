# cell_spec.sh — sourced by the bench scripts that take cells "SPEC:B": cell_spec SPEC
# prints SPEC's path, a name without a directory looked up in bench/specs/, then specs/.
# spec_copy SPEC DEST: SPEC copied to DEST (another directory) with a relative
# `weights:` made absolute, so that the copy reads the spec's own weights file (a plain
# copy of specs/ece408-2018sp.yaml looked for DEST's ../models/ and failed: "cannot open").
# auto_copy SPEC P: bench/compare.py's copy of SPEC at precision P less its layers' strategy
# and params (compare.py --auto), written beside SPEC as .prec-P-NAME.yaml; prints its path,
# which the caller removes.
cell_spec() {
  case $1 in
    */*) echo "$1" ;;
    *) if [ -f "bench/specs/$1.yaml" ]; then echo "bench/specs/$1.yaml"; else echo "specs/$1.yaml"; fi ;;
  esac
}
spec_copy() {
  local dir
  dir=$(cd "$(dirname "$1")" && pwd) || return 1
  sed -E "s|^weights:[[:space:]]*([^/[:space:]#][^[:space:]#]*)|weights: $dir/\1|" "$1" >"$2"
}
auto_copy() {
  python3 -c "import sys; sys.path.insert(0, sys.argv[3]); import compare
print(compare.precision_spec(sys.argv[1], sys.argv[2], True))" "$1" "$2" "$(dirname "${BASH_SOURCE[0]}")/.."
}
