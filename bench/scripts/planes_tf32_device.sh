#!/usr/bin/env bash
# planes_tf32_device.sh — on an sm_90 GPU: conv2d_planes under precision tf32 (one TF32
# product a step) checked, then timed beside what a previous binary's auto runs there.
#
#   bash bench/scripts/planes_tf32_device.sh CONVGEN PREVIOUS
#
# PARTS (default "check kernels"):
#   check    `convgen check` of tests/gpu/layers-planes-tf32-wg at 1, 7 and 64 images and of
#            ece408-2018fa's and zoo-5x5-c64's tf32 copies (auto) at 7 and 64;
#            compute-sanitizer memcheck and racecheck of the layer network at 7
#   kernels  each layer of LAYERS ("spec|layer") at each of BATCHES (default 10000): in the spec's
#            tf32 copy (bench/compare.py --auto: strategy and params dropped) CONVGEN's planes
#            and PREVIOUS's auto (igemm_tc where C, M >= 16), and in FP32 CONVGEN's planes
#            (3xTF32) for reference, and CONVGEN's tf32 planes with each of VARIANTS (--params
#            lists, default none); each kernel checked on 64 images, then timed with the L2
#            flushed (`convgen kernel --repeat REPEAT`, default 10)
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1 prev=$2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
parts=${PARTS:-check kernels}
layers=${LAYERS:-specs/ece408-2018fa.yaml\|conv2 specs/ece408-2018sp.yaml\|conv2 bench/specs/zoo-5x5-c64.yaml\|conv2 \
bench/specs/zoo-vgg-same.yaml\|conv2_1 bench/specs/zoo-vgg-same.yaml\|conv3_2 bench/specs/zoo-wide3x3.yaml\|conv2 \
bench/specs/zoo-7x7-large.yaml\|conv2 bench/specs/zoo-alex.yaml\|conv2}
batches=${BATCHES:-10000}
case " $parts " in *" check "*)
  for n in 1 7 64; do spec_check "$cg" tests/gpu/layers-planes-tf32-wg.yaml "$n"; done
  for sp in specs/ece408-2018fa.yaml bench/specs/zoo-5x5-c64.yaml; do
    c=$(auto_copy "$sp" tf32)
    for n in 7 64; do spec_check "$cg" "$c" "$n"; done
    rm -f "$c"
  done
  spec_sanitize "$cg" tests/gpu/layers-planes-tf32-wg.yaml 7
esac
case " $parts " in *" kernels "*)
  for item in $layers; do
    IFS='|' read -r sp l <<<"$item"
    c=$(auto_copy "$sp" tf32) f=$(auto_copy "$sp" fp32)
    for b in $batches; do
      run() {   # label binary spec args...
        local label=$1 bin=$2 s=$3
        shift 3
        echo "$(basename "$sp" .yaml) $l b=$b $label: $(kernel_line "$bin" "$s" "$l" "$b" 64 "$@")"
      }
      run "tf32 planes" "$cg" "$c" --strategy planes
      run "tf32 previous auto" "$prev" "$c"
      run "fp32 planes" "$cg" "$f" --strategy planes
      for v in ${VARIANTS:-}; do run "tf32 planes $v" "$cg" "$c" --strategy planes --params "$v"; done
    done
    rm -f "$c" "$f"
  done
esac
