#!/usr/bin/env python3
"""ab_summary.py — medians of several ab_images.sh runs put together.

    python3 bench/scripts/ab_summary.py BEFORE AFTER FILE:IMAGES...

Each FILE is an ab.txt of bench/scripts/ab_images.sh (one line a run: round, spec, binary,
GPU µs, launch way, and in later files the host latency's p50 in µs) run at IMAGES images. Binaries are named by the folder holding them
(.dev/NAME/convgen -> NAME). For every (spec, images) both binaries ran: the runs' count,
the median GPU µs of each, the change in per cent, and the fastest and slowest run of each
(at one image some networks' times are bimodal from round to round, which a median alone
hides). Where every run of a cell has the p50, the medians of the p50s too.
"""
import collections
import statistics
import sys


def binary_name(path):
    parts = path.split("/")
    return parts[-2] if len(parts) >= 2 else path


def main(argv):
    if len(argv) < 4 or any(":" not in a for a in argv[3:]):
        sys.exit("usage: ab_summary.py BEFORE AFTER FILE:IMAGES...")
    before, after = argv[1], argv[2]
    runs = collections.defaultdict(list)
    host = collections.defaultdict(list)
    for arg in argv[3:]:
        path, images = arg.rsplit(":", 1)
        try:
            lines = open(path).read().splitlines()
        except OSError as err:
            sys.exit("ab_summary.py: %s: %s" % (path, err.strerror))
        for n, line in enumerate(lines, 1):
            f = line.split()
            if len(f) >= 3 and f[-1] == "FAILED":
                continue
            if len(f) < 4:
                sys.exit("ab_summary.py: %s:%d: expected 'round spec binary µs ...'" % (path, n))
            spec = f[1].split("/")[-1].removesuffix(".yaml")
            runs[(spec, int(images), binary_name(f[2]))].append(float(f[3]))
            host[(spec, int(images), binary_name(f[2]))].append(float(f[5]) if len(f) >= 6 else None)
    cells = sorted({(s, i) for s, i, _ in runs}, key=lambda c: (c[1], c[0]))
    print("| network | images | runs | %s µs | %s µs | change | %s min-max | %s min-max | host p50 %s | %s |" % (
        before, after, before, after, before, after))
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec, images in cells:
        b, a = runs.get((spec, images, before)), runs.get((spec, images, after))
        if not b or not a:
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        hb, ha = host[(spec, images, before)], host[(spec, images, after)]
        hosts = ["%.1f" % statistics.median(h) if None not in h else "-" for h in (hb, ha)]
        print("| %s | %d | %d | %.1f | %.1f | %+.1f %% | %.1f-%.1f | %.1f-%.1f | %s | %s |" % (
            spec, images, min(len(a), len(b)), mb, ma, 100.0 * (ma - mb) / mb, min(b), max(b), min(a), max(a), *hosts))


if __name__ == "__main__":
    main(sys.argv)
