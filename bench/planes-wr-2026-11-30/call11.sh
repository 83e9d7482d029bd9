set -u
. bench/scripts/cell_spec.sh
cg=.dev/new/convgen
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for n in zoo-inception zoo-linear zoo-k7pad; do
  c=$(auto_copy bench/specs/$n.yaml bf16)
  echo "== $n bf16, 10000 images: convgen run --random-input 1 --images 10000 --batch 10000 --repeat 5 --profile"
  timeout 120 $cg run $c --random-input 1 --images 10000 --batch 10000 --repeat 5 --profile 2>&1 | grep -vE "^\s*$" | head -40
  rm -f $c
done
