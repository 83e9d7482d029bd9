#!/usr/bin/env bash
# Installs what convgen needs to build and test, or prints the exact command.
# `deps.sh fuzz`: what `make fuzz` needs instead (clang, libFuzzer, OpenMP).
set -eu
need=()
if [ "${1:-}" = fuzz ]; then
  # make fuzz only: clang with libFuzzer (compiler-rt) and OpenMP. Probed by
  # building a tiny fuzzer, since clang can be present without the runtime.
  command -v clang >/dev/null || need+=(clang)
  if [ ${#need[@]} -eq 0 ]; then
    probe=$(mktemp -d)
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$probe/p.c"
    clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null || need+=(libclang-rt-dev)
    printf 'int main(void) { return 0; }\n' > "$probe/o.c"
    clang -fopenmp "$probe/o.c" -o "$probe/o" 2>/dev/null || need+=(libomp-dev)
    rm -rf "$probe"
  else
    need+=(libclang-rt-dev libomp-dev)
  fi
else
pkg-config --exists lua5.4 2>/dev/null || need+=(liblua5.4-dev)
pkg-config --exists yaml-0.1 2>/dev/null || need+=(libyaml-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
# protobuf-c: `convgen import` reads ONNX models (runtime/formats/onnx_subset.proto, compiled by protoc-c)
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need+=(libprotobuf-c-dev)
command -v protoc-c >/dev/null || need+=(protobuf-c-compiler)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
# Open MPI: build/convgen-mpi and tests/test_mpi.sh (docs/user-guide.md, "Throughput at scale")
command -v mpicc >/dev/null || need+=(libopenmpi-dev)
command -v mpirun >/dev/null || need+=(openmpi-bin)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "deps: missing ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
