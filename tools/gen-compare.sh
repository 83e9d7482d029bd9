#!/usr/bin/env bash
# gen-compare.sh — the kernels two convgen binaries generate, compared.
#
#   tools/gen-compare.sh OLD_BIN NEW_BIN [OUTDIR]
#
# Generates every shipped (specs/), zoo (bench/specs/) and layer (tests/gpu/)
# spec with both binaries, for the large batch and for the sm_90 and small-batch
# targets, and compares the outputs with the header's template line (its path
# and hash) ignored. Manifests are compared too, apart from their hash line.
# Exit 0 when identical; otherwise the differing files are listed.
set -u
old=$1 new=$2 out=${3:-$(mktemp -d)}
variants=("" "--arch 90" "--arch 90 --batch 1" "--batch 8")
rc=0
for spec in specs/*.yaml bench/specs/*.yaml tests/gpu/*.yaml; do
    base=$(basename "$spec" .yaml)
    for i in "${!variants[@]}"; do
        for side in old new; do
            bin=$old; [ $side = new ] && bin=$new
            dir=$out/$side/$base.$i; mkdir -p "$out/$side"
            # shellcheck disable=SC2086
            "$bin" generate "$spec" ${variants[$i]} -o "$dir" >/dev/null 2>"$dir.err" || echo "generate failed" >>"$dir.err"
        done
        same=1
        if [ -d "$out/old/$base.$i" ] || [ -d "$out/new/$base.$i" ]; then
            diff -r -q -I '^// template:' -I '^hash ' "$out/old/$base.$i" "$out/new/$base.$i" >/dev/null 2>&1 || same=0
        fi
        diff -q "$out/old/$base.$i.err" "$out/new/$base.$i.err" >/dev/null || same=0
        if [ $same = 0 ]; then
            echo "differs: $spec ${variants[$i]}"
            rc=1
        fi
    done
done
[ $rc = 0 ] && echo "identical: every spec, ${#variants[@]} targets each ($out)"
exit $rc
