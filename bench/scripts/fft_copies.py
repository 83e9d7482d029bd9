#!/usr/bin/env python3
"""fft_copies.py — copies of specs with the conv layers `conv2d_fft` serves written
`strategy: fft`, to time them against `auto` (bench/scripts/fft_device.sh).

    python3 bench/scripts/fft_copies.py SPEC...

For each spec that has such a layer: a copy beside it, .fft-NAME.yaml (relative paths in it
still resolve), every layer's strategy and params dropped (auto's choices, as compare.py
--auto drops them) and those layers given `strategy: fft` (and, with FFT_PARAMS="k=v,...",
those parameters); one line "SPEC COPY LAYER,..." a spec. A layer is taken where it is a conv of stride 1 and one group with K >= MIN_K (default
3), C >= 8, M >= 8 and a padded input of at most 64 x 64 (the largest transform the template
writes). The caller removes the copies."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare  # noqa: E402

MIN_K = int(os.environ.get("MIN_K", "3"))
PARAMS = os.environ.get("FFT_PARAMS", "")
CHOICE = "strategy: fft" + (", params: {" + PARAMS.replace("=", ": ").replace(",", ", ") + "}" if PARAMS else "")


def served(l):
    if l["op"] != "conv" or l["stride"] != 1 or l["groups"] != 1:
        return False
    t, lf, b, r = l["pad"]
    return l["K"] >= MIN_K and l["C"] >= 8 and l["M"] >= 8 and l["H"] + t + b <= 64 and l["W"] + lf + r <= 64


def copy_text(path, layers):
    with open(path, encoding="utf-8") as f:
        lines = compare.drop_choices(f.read().splitlines(), path)
    out = []
    for line in lines:
        block = re.match(r"(\s*)- name: *([^\s#]+)", line)
        flow = re.match(r"\s*- *\{ *name: *([^,}\s]+)", line)
        if flow and flow.group(1) in layers:
            end = line.rfind("}")
            line = line[:end].rstrip() + ", " + CHOICE + line[end:]
        out.append(line)
        if block and block.group(2) in layers:
            out.append(block.group(1) + "  strategy: fft")
            if PARAMS:
                out.append(block.group(1) + "  params: {" + PARAMS.replace("=", ": ").replace(",", ", ") + "}")
    return "\n".join(out) + "\n"


def main(argv):
    for path in argv:
        _, table = compare.load_spec(path)
        layers = [l["name"] for l in table if served(l)]
        if not layers:
            continue
        copy = os.path.join(os.path.dirname(path) or ".", ".fft-" + os.path.basename(path))
        with open(copy, "w", encoding="utf-8") as f:
            f.write(copy_text(path, set(layers)))
        print(path, copy, ",".join(layers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
