# cell_spec.sh — sourced by the bench scripts that take cells "SPEC:B": cell_spec SPEC
# prints SPEC's path, a name without a directory looked up in bench/specs/, then specs/.
cell_spec() {
  case $1 in
    */*) echo "$1" ;;
    *) if [ -f "bench/specs/$1.yaml" ]; then echo "bench/specs/$1.yaml"; else echo "specs/$1.yaml"; fi ;;
  esac
}
