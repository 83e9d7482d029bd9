# lib.sh — the opening every shell test shares (sourced, not run): the binary
# under test, the pass/fail counters with ok/bad, and a temporary directory
# removed on exit. The test prints "NAME: N passed, N failed" itself.
cg=build/convgen
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*"; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
