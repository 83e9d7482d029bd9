#!/usr/bin/env bash
# Installs what convgen needs to build and test, or prints the exact command.
set -eu
need=()
pkg-config --exists lua5.4 2>/dev/null || need+=(liblua5.4-dev)
pkg-config --exists yaml-0.1 2>/dev/null || need+=(libyaml-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "deps: missing ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
