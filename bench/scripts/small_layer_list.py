#!/usr/bin/env python3
"""small_layer_list.py — the variants kernel_variants.sh times for the conv layers of every
shipped and zoo spec at small buckets (`convgen generate SPEC --arch 90 --batch B`; a -low
spec's layers are its base spec's). LAYERS=direct (the default): each layer whose kernel at
bucket B is conv2d_direct, one line for auto's kernel, then with VARY=block (the default)
direct in blocks of 32, 64, 128 and 256 threads with the large batch's maps_unroll (that of
the 10,000-image kernel where it is direct, else the largest divisor of M up to 8), with
VARY=mu direct with each divisor of M up to 8 as maps_unroll, the other parameters left to
the template; then the strategies in STRATEGIES. LAYERS=other: each layer whose kernel is
another conv template, auto's kernel and each strategy of STRATEGIES but auto's own. Layers
of one shape (the same kernel name) are listed once.

  python3 bench/scripts/small_layer_list.py CONVGEN BATCHES [STRATEGIES] > LIST
  e.g. python3 bench/scripts/small_layer_list.py build/convgen 8,64 igemm_tc,igemm,planes
       VARY=mu python3 bench/scripts/small_layer_list.py build/convgen 8,64 > LIST
       LAYERS=other python3 bench/scripts/small_layer_list.py build/convgen 8 planes,winograd,igemm_tc
"""
import glob
import os
import re
import subprocess
import sys
import tempfile


def kernels(cg, spec, batch, out):
    """{layer: kernel name} of the kernels generated for `batch` (the layer's first)."""
    subprocess.run([cg, "generate", spec, "--arch", "90", "--batch", str(batch), "-o", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = {}
    with open(os.path.join(out, "manifest.txt")) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "kernel":
                layer = w[2].split("=", 1)[1]
                got.setdefault(layer, w[1])
    return got


def large_mu(name, M):
    m = re.search(r"_b\d+u(\d+)x", name) if name.startswith("conv2d_direct") else None
    if m:
        return int(m.group(1))
    return max(d for d in range(1, 9) if M % d == 0)


def main():
    cg, batches = sys.argv[1], [int(b) for b in sys.argv[2].split(",")]
    strategies = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else []
    specs = [s for s in sorted(glob.glob("specs/*.yaml")) + sorted(glob.glob("bench/specs/*.yaml"))
             if not s.endswith("-low.yaml")]
    direct = os.environ.get("LAYERS", "direct") == "direct"
    tmp = tempfile.mkdtemp()
    seen = set()
    for spec in specs:
        try:
            large = kernels(cg, spec, 10000, os.path.join(tmp, "large"))
        except subprocess.CalledProcessError:
            continue
        for b in batches:
            small = kernels(cg, spec, b, os.path.join(tmp, "b%d" % b))
            for layer, name in small.items():
                if not name.startswith("conv2d_") or name.startswith("conv2d_direct") != direct or (name, b) in seen:
                    continue
                seen.add((name, b))
                if not direct:
                    print("%s|%s|%d|auto|" % (spec, layer, b))
                    for s in strategies:
                        if not name.startswith("conv2d_%s_" % s):
                            print("%s|%s|%d|%s|--strategy %s" % (spec, layer, b, s, s))
                    continue
                M = int(re.search(r"m(\d+)k", name).group(1))
                mu = large_mu(large.get(layer, ""), M)
                print("%s|%s|%d|auto|" % (spec, layer, b))
                if os.environ.get("VARY", "block") == "mu":
                    for u in [d for d in range(1, 9) if M % d == 0]:
                        print("%s|%s|%d|direct u%d|--strategy direct --params maps_unroll=%d" % (spec, layer, b, u, u))
                else:
                    for block in (32, 64, 128, 256):
                        print("%s|%s|%d|direct b%d u%d|--strategy direct --params block=%d,maps_unroll=%d"
                              % (spec, layer, b, block, mu, block, mu))
                for s in strategies:
                    print("%s|%s|%d|%s|--strategy %s" % (spec, layer, b, s, s))


if __name__ == "__main__":
    main()
