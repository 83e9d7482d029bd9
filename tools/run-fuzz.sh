#!/usr/bin/env bash
# run-fuzz.sh SECONDS TARGET... — make fuzz's runner: for each harness
# build/fuzz/fuzz_TARGET, fill build/fuzz/corpus-TARGET with seeds from the
# repository and the harness's own (CG_FUZZ_SEEDS), replay
# tests/fuzz/regress/TARGET/*, then fuzz for SECONDS. One harness at a time.
# Exits 1 if any harness found a crash, leak, timeout or multi-line error
# (libFuzzer's non-zero exit); the input is left in build/fuzz/artifacts/.
set -u
secs=$1
shift
root=$(pwd)
# scratch files go to a directory of this run's own, so that two runs (of
# different targets) side by side do not remove each other's
export TMPDIR=$root/build/fuzz/tmp-$$
mkdir -p build/fuzz/artifacts "$TMPDIR"
export LSAN_OPTIONS=suppressions=$root/tools/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1
failed=()
for t in "$@"; do
  bin=build/fuzz/fuzz_$t
  corpus=build/fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in
    spec) cp specs/*.yaml bench/specs/*.yaml tests/specs_bad/* "$corpus/" ;;
    gen) cp specs/*.yaml "$corpus/" ;;
    cpu) cp specs/*.yaml bench/specs/*.yaml "$corpus/" ;; # and the harness's own small specs
    manifest) for m in generated/*/manifest.txt; do cp "$m" "$corpus/$(basename "$(dirname "$m")").txt"; done ;;
    tuning) git ls-files -z '*.tuning.yaml' | xargs -0 -r cp -t "$corpus/" ;; # and the harness's own
  esac
  if ! CG_FUZZ_SEEDS=$corpus "$bin"; then
    echo "fuzz $t: writing seeds failed" >&2
    failed+=("$t")
    continue
  fi
  regress=(tests/fuzz/regress/$t/*)
  if [ -e "${regress[0]}" ] && ! "$bin" -runs=0 "${regress[@]}" >build/fuzz/$t.regress.log 2>&1; then
    echo "fuzz $t: a regression input fails again (build/fuzz/$t.regress.log)" >&2
    failed+=("$t")
    continue
  fi
  echo "fuzz $t: ${secs}s"
  if "$bin" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
      -artifact_prefix="build/fuzz/artifacts/$t-" "$corpus" >build/fuzz/$t.log 2>&1; then
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' build/fuzz/$t.log | tail -2 | sed "s/^/fuzz $t: /"
  else
    echo "fuzz $t: FAILED, see build/fuzz/$t.log and build/fuzz/artifacts/$t-*" >&2
    grep -E 'ERROR|SUMMARY|not one line' build/fuzz/$t.log | head -5 >&2
    failed+=("$t")
  fi
done
rm -rf "$TMPDIR"
if [ ${#failed[@]} -gt 0 ]; then
  echo "make fuzz: ${#failed[@]} harness(es) failed: ${failed[*]}" >&2
  exit 1
fi
echo "make fuzz: $# harnesses, ${secs}s each, no crash, leak, timeout or multi-line error"
