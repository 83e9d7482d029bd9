#!/usr/bin/env bash
# fc_mma_fp32_device.sh — on an sm_90 GPU: fc_mma on FP32 fc layers (3xTF32) and under
# precision tf32, checked and timed beside the kernels a previous binary's auto runs there.
#
#   bash bench/scripts/fc_mma_fp32_device.sh CONVGEN PREVIOUS
#
# PARTS (default "check kernels torch"):
#   check    `convgen check` of tests/gpu/layers-fc-mma-wg, -tf32-wg and -bf16-wg at 7, 64 and
#            1,000 images; compute-sanitizer memcheck and racecheck of each at 7
#   kernels  each layer of LAYERS ("spec|layer", copies at precision PREC, default fp32, with
#            the spec's strategy and params dropped) at each of BATCHES (default "10000 1000 256"; the kernel is
#            generated for the batch's bucket): CONVGEN's fc_mma with its defaults and with
#            each of VARIANTS (--params lists, default "st=8 split=1 bk=16 bk=16,st=8
#            bm=64,bn=64,st=8"), and PREVIOUS's own
#            choice for the layer (no --strategy: auto's), every kernel checked on 64 images
#            and timed with the L2 flushed (`convgen kernel --repeat REPEAT`, default 10)
#   torch    PyTorch's FP32 (TF32 off) linear + relu on the same shapes and batches
#            (bench/scripts/fc_torch.py)
set -u
. "$(dirname "$0")/cell_spec.sh"
cg=$1 prev=$2
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
parts=${PARTS:-check kernels torch}
layers=${LAYERS:-bench/specs/zoo-mlp.yaml\|fc1 bench/specs/zoo-mlp.yaml\|fc2 bench/specs/zoo-mlp.yaml\|fc3 \
bench/specs/zoo-vgg-same.yaml\|fc1 bench/specs/zoo-vgg3x3.yaml\|fc1 bench/specs/zoo-wide3x3.yaml\|fc1 \
bench/specs/zoo-1x1.yaml\|fc1 specs/ece408-2017.yaml\|fc1 specs/ece408-2018fa.yaml\|fc1}
batches=${BATCHES:-10000 1000 256}
case " $parts " in *" check "*)
  for sp in tests/gpu/layers-fc-mma-wg.yaml tests/gpu/layers-fc-mma-tf32-wg.yaml tests/gpu/layers-fc-mma-bf16-wg.yaml; do
    for n in 7 64 1000; do spec_check "$cg" "$sp" "$n"; done
  done
  for sp in tests/gpu/layers-fc-mma-wg.yaml tests/gpu/layers-fc-mma-tf32-wg.yaml tests/gpu/layers-fc-mma-bf16-wg.yaml; do
    spec_sanitize "$cg" "$sp" 7
  done
esac
case " $parts " in *" kernels "*)
  for item in $layers; do
    IFS='|' read -r sp l <<<"$item"
    c=$(auto_copy "$sp" "${PREC:-fp32}")
    for b in $batches; do
      run() {   # label binary args...
        local label=$1 bin=$2
        shift 2
        echo "$(basename "$sp" .yaml) ${PREC:-fp32} $l b=$b $label: $(kernel_line "$bin" "$c" "$l" "$b" 64 "$@")"
      }
      run "mma" "$cg" --strategy mma
      for v in ${VARIANTS-st=8 split=1 bk=16 bk=16,st=8 bm=64,bn=64,st=8}; do run "mma $v" "$cg" --strategy mma --params "$v"; done
      run "previous auto" "$prev"
    done
    rm -f "$c"
  done
esac
case " $parts " in *" torch "*)
  python3 "$(dirname "$0")/fc_torch.py" --shapes 784x2048,2048x2048,2048x512,4096x256,21632x256,4608x128,3872x64,7200x500,17496x160 \
    --batches "$(echo "$batches" | tr ' ' ',')"
esac
