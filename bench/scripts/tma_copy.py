#!/usr/bin/env python3
"""tma_copy.py — bench/compare.py's copy of a spec at a 16-bit precision (its layers' strategy and
params dropped: auto's choices), with `strategy: tma` written on every conv layer conv2d_tma
serves (stride 1, one group, C a multiple of 8 of at least 16, or of MIN_C where given, M a multiple
of 8; the shapes from `convgen info --json`). Writes it beside SPEC as .tma-PRECISION-NAME.yaml and prints its path; the caller removes it.

Usage: python3 bench/scripts/tma_copy.py CONVGEN SPEC PRECISION [MIN_C]
"""
import json, os, re, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare  # noqa: E402


def main():
    cg, spec, prec = sys.argv[1], sys.argv[2], sys.argv[3]
    min_c = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    # the shapes from the spec as written (info's default target takes no 16-bit precision)
    info = json.loads(subprocess.run([cg, "info", spec, "--json"], check=True, capture_output=True, text=True).stdout)
    names = set()
    for l in info["layers"]:
        if l["op"] != "conv":
            continue
        c, m = l["input"][0], l["tensors"][0]["shape"][0]
        p = l["parameters"]
        if c >= max(16, min_c) and c % 8 == 0 and m % 8 == 0 and "stride=1" in p and "groups" not in p:
            names.add(l["name"])
    # beside the spec as .tma-P-NAME.yaml (compare.py's own copy, .prec-P-NAME.yaml, may be in use)
    prec_copy, text = compare.precision_copy(spec, prec, True)
    copy = os.path.join(os.path.dirname(prec_copy), os.path.basename(prec_copy).replace(".prec-", ".tma-", 1))
    out = []
    for line in text.splitlines():
        b = re.match(r"^(\s*)- name:\s*([\w.-]+)\s*(#.*)?$", line)
        f = re.match(r"^(\s*- \{\s*)name:\s*([\w.-]+)", line)
        out.append(line)
        if b and b.group(2) in names:
            out.append(b.group(1) + "  strategy: tma")
        elif f and f.group(2) in names:
            out[-1] = f.group(1) + "strategy: tma, " + line[len(f.group(1)):]
    with open(copy, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
    print(copy)


main()
