#!/usr/bin/env bash
# test_docs.sh — the documentation stays in its shape: README.md a newcomer's page
# (at most 10 KB; the manual lives in docs/), every relative link of README.md and
# docs/*.md names a file in the tree, every in-tree script bench/RESULTS.md names
# exists, and no file refers to rounds of development (an ordinal before the word for a round):
# comments, docs and results say what was measured, where and why.
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*"; }

size=$(wc -c < README.md)
[ "$size" -le 10240 ] && ok || bad "README.md is $size bytes; at most 10240 (move the detail into docs/)"

for f in docs/user-guide.md docs/spec.md docs/tuning.md docs/library.md docs/design.md docs/testing.md; do
  [ -s "$f" ] && ok || bad "$f is missing"
done

# relative links [text](path#anchor) in README.md and docs/*.md resolve to files
for md in README.md docs/*.md bench/RESULTS.md; do
  dir=$(dirname "$md")
  while IFS= read -r link; do
    path=${link%%#*}
    [ -z "$path" ] && continue
    case $path in http*|mailto:*) continue ;; esac
    [ -e "$dir/$path" ] && ok || bad "$md links to $link, which is not in the tree"
  done < <(grep -o '](\([^)]*\))' "$md" | sed 's/^](//; s/)$//')
done

# every script of the tree that bench/RESULTS.md names is there
while IFS= read -r s; do
  [ -e "$s" ] && ok || bad "bench/RESULTS.md names $s, which is not in the tree"
done < <(grep -oE '(bench|tools)/[A-Za-z0-9_./-]+\.(py|sh|cu)' bench/RESULTS.md | sort -u)

# no file refers to rounds of development
ord='first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth'
ord="$ord|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|[0-9]+(st|nd|rd|th)"
deic='last|next|previous|this|that|earlier|later|same'
pat="\\b($ord) (development )?(session|round)s?\\b|\\b($deic) (development )?sessions?\\b"
pat="$pat|\\bsessions? [0-9]+\\b|\\b(development|working) sessions?\\b"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard | grep -v '^tests/test_docs\.sh$')
else
  files=$(find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||' | grep -v '^tests/test_docs\.sh$')
fi
hits=$(printf '%s\n' "$files" | while IFS= read -r f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
       | xargs -0 grep -nIiE "$pat" 2>/dev/null | head -n 20 | cut -c1-200)
[ -z "$hits" ] && ok || bad "files refer to rounds of development (say what was measured, where and why):
$hits"

echo "docs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
