#!/usr/bin/env bash
# import_device.sh — on a GPU: issue 32's imported networks end to end. torchvision's
# ResNet-18 and MobileNet V2 (224x224) and a CIFAR ResNet-20 (32x32) exported by
# torch.onnx.export, imported by `convgen import`, compared with PyTorch on 1,000
# random images, checked layer by layer, then timed beside PyTorch FP32 (eager, CUDA
# graph, torch.compile max-autotune) at batch 1 and 256 (224x224) or 10,000 (32x32).
#
#   STEPS="import check time warm tune" bash bench/scripts/import_device.sh NEW_CONVGEN [PREV_CONVGEN]
#
# Steps (each one's lines start with ok/FAIL or are latency.py's):
#   import  python3 bench/scripts/import_check.py --backends cuda --images ${IMPORT_IMAGES:-1000} --keep $IMP
#           (largest relative score difference at most 1e-4, predictions identical)
#   check   `convgen check` of each imported spec at 1, 7 and 64 images (random input),
#           and of each spec in $CHECK_SPECS at 1, 7 and 64; compute-sanitizer memcheck
#           and racecheck at one image on each spec in $SANITIZE_SPECS
#   time    python3 bench/latency.py (convgen, PREV, PyTorch eager and CUDA graph)
#   warm    torch.compile max-autotune's compiles and autotuning for every network and batch of
#           $TUNE_NETS at once, concurrent processes on the one GPU, each cut at $TUNE_TIMEOUT
#           seconds, their times not reported (a figure is only taken by tune, alone on the
#           GPU): the autotuning of a 224x224 network at 256 images ran past 170-290 s a process,
#           most of it Triton compiles on the host's cores; the choices land in
#           $TORCHINDUCTOR_CACHE_DIR, where tune finds them
#   tune    the same with torch.compile max-autotune, one process per network and batch,
#           each cut at $TUNE_TIMEOUT seconds (default 240); autotuning results are kept
#           in $TORCHINDUCTOR_CACHE_DIR (default $IMP/inductor), so a cut run can be
#           finished by a later call that brings the directory back
# IMP (default /tmp/import-device) holds the ONNX files, specs and weights.
set -u
new=$1 prev=${2:-}
IMP=${IMP:-/tmp/import-device}
STEPS=${STEPS:-import check time tune}
REPEAT=${REPEAT:-20}
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$IMP/inductor}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$(mktemp -d)}
mkdir -p "$IMP" "$TORCHINDUCTOR_CACHE_DIR"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
fail=0
log=$(mktemp)
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
# network: batches it is timed at
nets="resnet18:1,256 mobilenet_v2:1,256 cifar_resnet:1,10000"
base=()
[ -n "$prev" ] && base=(--baseline "$prev")

if has import; then
  python3 bench/scripts/import_check.py --convgen "$new" --backends cuda --images "${IMPORT_IMAGES:-1000}" --keep "$IMP" || fail=1
fi
if has check; then
  for s in $IMP/cifar_resnet.yaml $IMP/resnet18.yaml $IMP/mobilenet_v2.yaml ${CHECK_SPECS:-}; do
    for b in 1 7 64; do
      if "$new" check "$s" --random-input "$b" --images "$b" --batch "$b" >"$log" 2>&1; then echo "ok   check $s $b"
      else echo "FAIL check $s $b"; tail -4 "$log"; fail=1; fi
    done
  done
  for s in ${SANITIZE_SPECS:-}; do
    for tool in memcheck racecheck; do
      if compute-sanitizer --tool "$tool" --error-exitcode 9 "$new" run "$s" --random-input 1 --images 1 --batch 1 \
        >"$log" 2>&1; then echo "ok   $tool $s 1"
      else echo "FAIL $tool $s 1"; grep -m3 -E "ERROR|Invalid|hazard|rror" "$log"; fail=1; fi
    done
  done
fi
if has time; then
  for nb in $nets; do
    python3 bench/latency.py "$IMP/${nb%%:*}.yaml" --batches "${nb#*:}" --repeat "$REPEAT" --convgen "$new" \
      "${base[@]}" || fail=1
  done
fi
if has warm; then
  pids=()
  for nb in ${TUNE_NETS:-$nets}; do
    bs=${nb#*:}
    for one in ${bs//,/ }; do
      ( timeout "${TUNE_TIMEOUT:-240}" python3 bench/latency.py "$IMP/${nb%%:*}.yaml" --batches "$one" --repeat 3 \
          --convgen "$new" --compile-batches "$one" --compile-modes max-autotune >/dev/null 2>&1
        echo "   warm ${nb%%:*} batch $one: exit $?" ) &
      pids+=($!)
    done
  done
  t0=$(date +%s)
  wait "${pids[@]}"
  echo "   warm: $(($(date +%s) - t0)) s for ${#pids[@]} processes"
fi
if has tune; then
  for nb in ${TUNE_NETS:-$nets}; do
    bs=${nb#*:}
    for one in ${bs//,/ }; do
      echo "== max-autotune ${nb%%:*} batch $one"
      t0=$(date +%s)
      timeout "${TUNE_TIMEOUT:-240}" python3 bench/latency.py "$IMP/${nb%%:*}.yaml" --batches "$one" \
        --repeat "$REPEAT" --convgen "$new" --compile-batches "$one" --compile-modes max-autotune 2>"$log" \
        | grep -v '^$'
      rc=${PIPESTATUS[0]}
      echo "   exit $rc after $(($(date +%s) - t0)) s"
      [ "$rc" = 0 ] || { tail -3 "$log"; fail=1; }
    done
  done
  du -sh "$TORCHINDUCTOR_CACHE_DIR" 2>/dev/null
fi
rm -f "$log"
exit $fail
