#!/usr/bin/env bash
# rerun.sh — the commands behind recorded figures, run again from a checkout.
#
#   bash bench/scripts/rerun.sh table [--list]          every distinct command of the
#        *command* column of bench/RESULTS.md's "Where things stand" table
#   bash bench/scripts/rerun.sh journal TITLE [--list]  every command a journal section
#        (bench/journal/2026-11.md, the heading that starts with "## TITLE") quotes in
#        backticks: convgen verbs (as build/convgen), python3 bench/... and bash bench/...,
#        leaving out the templates that name a placeholder (convgen check SPEC ...)
#
# --list prints the commands instead of running them. Each command runs from the
# repository root with its output under a header line; the exit status is 1 when any
# failed. Commands that need a GPU or PyTorch need the GPU machine, as the section says.
set -u
cd "$(dirname "$0")/../.."
mode=${1:-}; shift || true
list=0
case $mode in
  table)
    [ "${1:-}" = --list ] && list=1
    cmds=$(awk -F'|' '/^\| network \| layer \|/ {t = 1; next} t && !/^\|/ {exit}
                      t && NF > 9 {print $10}' bench/RESULTS.md | grep -o '`[^`]*`' | tr -d '`' | sort -u) ;;
  journal)
    title=${1:?"journal needs the section's title (its start)"}; [ "${2:-}" = --list ] && list=1
    cmds=$(awk -v t="## $title" 'index($0, t) == 1 {on = 1; next} on && /^## / {exit} on' bench/journal/2026-11.md |
           tr '\n' ' ' | grep -o '`[^`]*`' | tr -d '`' |
           grep -E '^(convgen|build/convgen|python3 bench/|bash bench/|tools/)[^ ]* ' |
           grep -vE ' [A-Z][A-Z_]{2,}( |$)' | sort -u) ;;  # not the templates (SPEC, DIR, ...)
  *) echo "usage: rerun.sh table [--list] | rerun.sh journal TITLE [--list]" >&2; exit 2 ;;
esac
[ -n "$cmds" ] || { echo "rerun.sh: no commands found" >&2; exit 1; }
fail=0
while IFS= read -r c; do
  c=${c/#convgen /build/convgen }
  if [ $list = 1 ]; then echo "$c"; continue; fi
  echo "== $c"
  bash -c "$c" || { echo "== failed: $c"; fail=1; }
done <<<"$cmds"
exit $fail
