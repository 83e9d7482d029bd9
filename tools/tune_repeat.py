#!/usr/bin/env python3
"""tune_repeat.py — do two tuning records of one network choose alike?

    python3 tools/tune_repeat.py A.tuning.yaml B.tuning.yaml [--spec SPEC]
        [--convgen build/convgen] [--rounds 3] [--repeat 20] [--batch 10000] [--within 3]

Prints one row per layer entry of record A (a layer shape at one batch bucket: the
large batch's, or "@8" for bucket 8 after the layer's name): the kernel each record
chose (template and parameters) and the times the records hold (each from its own
run); an entry is compared with B's of the same shape and bucket. With --spec,
every layer whose two choices differ is timed again in this one call: both
kernels through `convgen kernel SPEC --layer L --strategy S --params P` (for a
small bucket's entry at that many images, else at --batch), A then B,
--rounds times (so a drift of the device hits both alike), each the median of
--repeat launches with the L2 flushed; a kernel's time is the median of its
rounds, and the row gets B's time over A's. Two records choose alike when every
layer chose the same kernel or kernels within --within per cent (default 3: issue
9's "tuning twice gives the same choices or choices within 3 %").

Exit 0 when they choose alike, 1 when some layer differs by more (or was not
timed: without --spec the records' own times decide), 2 on usage errors, 3 on a
record it cannot read (FILE:LINE: message), 4 when `convgen kernel` fails.
"""
import argparse
import re
import statistics
import subprocess
import sys


class BadRecord(Exception):
    """A record this script cannot read: the message names FILE:LINE."""


def bucket_of(batch):
    """The batch bucket of `batch` images as convgen names it (cg_batch_bucket):
    "1", "8", "64", "256", "1024", or "large" above (and for none)."""
    for b in (1, 8, 64, 256, 1024):
        if 0 < batch <= b:
            return str(b)
    return "large"


def read_record(path):
    """[{layer, sig, bucket, tpl, params, ms}] in the record's order: the winners of
    `convgen tune`'s YAML (cg_tune_format's layout; runners-up are skipped). An
    entry without `bucket` is the bucket of the record's `batch:` (none: large)."""
    try:
        lines = open(path, encoding="utf-8").read().split("\n")
    except OSError as ex:
        raise BadRecord(f"{path}: cannot open: {ex.strerror}") from None
    out, cur, batch = [], None, 0
    for n, line in enumerate(lines, 1):
        if line.startswith("whole:"):  # the whole-network decisions: no layer's
            cur = None
            continue
        m = re.match(r"^batch: ([0-9]+)$", line)
        if m:
            batch = int(m.group(1))
            continue
        m = re.match(r"^  - signature: \"(.*)\"$", line)
        if m:
            cur = {"layer": "?", "sig": m.group(1), "bucket": None, "tpl": None, "params": None, "ms": None,
                   "line": n}
            out.append(cur)
            continue
        m = re.match(r"^    (layer|bucket|template|params|ms): (.*)$", line)
        if not m or cur is None:
            continue
        key, val = m.group(1), m.group(2).strip()
        if key == "params":
            if not (len(val) >= 2 and val[0] == '"' and val[-1] == '"'):
                raise BadRecord(f"{path}:{n}: params: expected a quoted string, got {val[:40]}")
            cur["params"] = val[1:-1]
        elif key == "ms":
            try:
                cur["ms"] = float(val)
            except ValueError:
                raise BadRecord(f"{path}:{n}: ms: not a number: {val[:40]}") from None
        else:
            cur["tpl" if key == "template" else key] = val
    for e in out:
        if e["bucket"] is None:
            e["bucket"] = bucket_of(batch)
        if e["tpl"] is None or e["params"] is None or e["ms"] is None:
            raise BadRecord(f"{path}:{e['line']}: entry without template, params or ms")
    if not out:
        raise BadRecord(f"{path}:1: no layers: not a tuning record of `convgen tune`")
    return out


def kernel_ms(args, layer, bucket, tpl, params):
    """The median time of one kernel, from `convgen kernel` (raises RuntimeError):
    at a small bucket's images, else at --batch."""
    strategy = tpl.split("_", 2)[-1] if tpl.startswith("conv2d_") else tpl.split("_", 1)[-1]
    batch = args.batch if bucket == "large" else int(bucket)
    cmd = [args.convgen, "kernel", args.spec, "--layer", layer, "--strategy", strategy,
           "--params", ",".join(params.split()), "--repeat", str(args.repeat),
           "--batch", str(batch), "--check-images", str(min(8, batch))]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", p.stdout)
    if p.returncode or not m:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[:300]}")
    return float(m.group(1))


def time_pair(args, layer, a, b):
    """The two choices' times, measured alternately in --rounds rounds: (A ms, B ms)."""
    ta, tb = [], []
    for _ in range(args.rounds):
        ta.append(kernel_ms(args, layer, a["bucket"], a["tpl"], a["params"]))
        tb.append(kernel_ms(args, layer, b["bucket"], b["tpl"], b["params"]))
    return statistics.median(ta), statistics.median(tb)


def main():
    ap = argparse.ArgumentParser(description="Compare the choices of two tuning records of one network.")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--spec", help="time differing choices again with `convgen kernel SPEC`")
    ap.add_argument("--convgen", default="build/convgen")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--within", type=float, default=3.0, help="per cent (default 3)")
    args = ap.parse_args()
    if args.rounds < 1 or args.repeat < 1 or args.batch < 1 or args.within < 0:
        ap.error("--rounds, --repeat and --batch must be positive, --within not negative")
    try:
        ra, rb = read_record(args.a), read_record(args.b)
    except BadRecord as ex:
        print(f"tune_repeat.py: {ex}", file=sys.stderr)
        return 3
    by_key = {(e["sig"], e["bucket"]): e for e in rb}
    alike, worst = True, 0.0
    print(f"{'layer':<10} {'same':<5} {'A: template params (ms)':<58} {'B: template params (ms)':<58} {'B/A':>7}")
    for a in ra:
        b = by_key.get((a["sig"], a["bucket"]))
        name = a["layer"] if a["bucket"] == "large" else f"{a['layer']}@{a['bucket']}"
        if b is None:
            print(f"{name:<10} {'-':<5} {a['tpl']} {a['params']}  (not in {args.b})")
            alike = False
            continue
        same = a["tpl"] == b["tpl"] and a["params"] == b["params"]
        ta, tb, how = a["ms"], b["ms"], "records"
        if not same and args.spec:
            try:
                ta, tb = time_pair(args, a["layer"], a, b)
            except RuntimeError as ex:
                print(f"tune_repeat.py: {ex}", file=sys.stderr)
                return 4
            how = "same call"
        ratio = tb / ta if ta > 0 else float("inf")
        diff = abs(ratio - 1) * 100
        if not same:
            worst = max(worst, diff)
            alike &= diff <= args.within
        sa = f"{a['tpl']} {a['params']} ({ta:.4f})"
        sb = f"{b['tpl']} {b['params']} ({tb:.4f})"
        print(f"{name:<10} {'yes' if same else 'no':<5} {sa:<58} {sb:<58} {ratio:7.4f}"
              + ("" if same else f"  ({how})"))
    if alike:
        print(f"alike: every layer the same kernel or within {args.within:g} % (largest difference {worst:.2f} %)")
    else:
        print(f"NOT alike: largest difference {worst:.2f} % (allowed {args.within:g} %)")
    return 0 if alike else 1


if __name__ == "__main__":
    sys.exit(main())
