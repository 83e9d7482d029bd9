#!/usr/bin/env bash
# The small-input upload from the caller's memory (.dev/inl: this commit's binary) against the
# binary before it (.dev/cur: c60ce9a), every course and zoo network, IMAGES images:
#   IMAGES=1 [SPECS="..."] [TAG=name] bash bench/one-image-2026-11-30/ab.sh
set -u
o=$OUT/i${IMAGES:-1}${TAG:-}
mkdir -p "$o"
ROUNDS=${ROUNDS:-2} REPEAT=200 IMAGES=${IMAGES:-1} bash bench/scripts/ab_images.sh "$o" \
  "${SPECS:-$(ls specs/ece408-*.yaml bench/specs/*.yaml | tr "\n" " ")}" .dev/cur/convgen .dev/inl/convgen
python3 bench/scripts/ab_summary.py cur inl "$o/ab.txt:${IMAGES:-1}"
