#!/usr/bin/env python3
"""latency.py — whole networks at small batches: convgen beside PyTorch FP32 (or another precision).

Run on a GPU machine with PyTorch, from the repository root, after `make`:

    python3 bench/latency.py [SPEC...] [--batches 1,8,64,256,1000] [--repeat R]
                             [--convgen build/convgen] [--baseline OTHER_CONVGEN]
                             [--compile-batches 1] [--compile-modes reduce-overhead,max-autotune]
                             [--host-latency] [--precision fp32|tf32|bf16|fp16 [--auto]] [--dry-run]

With no SPEC, the three course networks. For every spec and batch size it prints:

  * convgen: `convgen run SPEC --backend cuda --random-input 1 --images B --repeat R
    --json F`: the GPU time (median of CUDA events from the first kernel's start to
    the last's end, the kernels generated for B's bucket, replayed as a CUDA graph)
    and the host latency of one whole call (p50/p90/p99 of the wall clock: uint8
    pixels in host memory to predictions in host memory). With --baseline, the same
    for another convgen binary (e.g. the previous commit's), in the same process.
  * PyTorch FP32 (TF32 off, cudnn.benchmark on), the same layers with random
    weights on float input already on the device, CUDA events around one forward
    call, median of R after warm-up: eager; the eager forward captured with
    torch.cuda.graph and replayed; torch.compile for the batch sizes in
    --compile-batches, in each mode of --compile-modes (default reduce-overhead;
    max-autotune times candidate kernels for every convolution and matrix product
    and can take minutes per network and batch); the table's torch.compile column
    is the fastest mode, and each mode's time is printed on the line above it.
  * With --host-latency, at batch 1: PyTorch's host path as an application would
    take it (a NumPy uint8 array to a CUDA tensor, scaled, the graph replayed,
    argmax, back to the host), wall clock p50 over R calls.

With --precision P (not fp32): convgen runs a copy of each spec with `precision: P`
(written beside it as .prec-P-NAME.yaml and removed after; its baseline the same
copy), and PyTorch at that precision: tf32 with cuDNN's and cuBLAS's TF32 flags on;
bf16 and fp16 with the model's weights and the input in that type, channels-last
(cuDNN's fast layout for 16-bit convolutions). The work is then also given as a
fraction of the card's dense tensor-core peak for P (SMs x 4096 FLOP a clock for
bf16 and fp16, 2048 for tf32, x the max SM clock; 1070 TFLOP/s bf16 on an H200 at
1980 MHz), beside the FP32 FMA peak. With --auto the copy also drops its layers'
`strategy` and `params` (the course specs name FP32 templates and tiles), so that
convgen runs auto's choices at P.

Then: best PyTorch time over convgen's GPU time (the speed-up) and the work as
GFLOP/s beside the FP32 FMA peak (small batches are bound by reading weights, so
the fraction is small by nature). L2 is not flushed: at these sizes the weights
stay in L2 between calls for every contestant alike.

--dry-run needs neither PyTorch nor a GPU: it reads the specs (bench/compare.py's
reader), prints every command and PyTorch module it would run, and exits 0.

Exit status: 0 ok, 1 a run failed, 2 bad usage, 3 bad spec, 4 no PyTorch or GPU.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the spec reader and the PyTorch plan)

ROOT = compare.ROOT


def net_info(spec):
    """The network's name, input shape and input scaling, from the spec's YAML."""
    inp = spec["input"]
    return {"name": spec.get("network", "?"), "C": int(inp["channels"]), "H": int(inp["height"]),
            "W": int(inp["width"]), "scale": float(inp.get("scale", 1.0)), "offset": float(inp.get("offset", 0.0))}


def network_gflop(layers, n):
    """Multiply-adds x 2 of conv and fc layers for n images, in GFLOP."""
    total = 0.0
    for l in layers:
        if l["op"] == "conv":
            total += compare.conv_gflop(l, n)
        elif l["op"] == "fc":
            total += 2.0 * n * l["C"] * l["H"] * l["W"] * l["out"] / 1e9
    return total


def convgen_cmd(convgen, spec, batch, repeat, json_path):
    return [convgen, "run", spec, "--backend", "cuda", "--random-input", "1", "--images", str(batch),
            "--repeat", str(repeat), "--json", json_path]


def run_convgen(convgen, spec, batch, repeat):
    """(GPU ms, host p50, p90, p99 ms, bucket, graph replays, path) of one convgen binary; path:
    "whole" where the whole-network kernel ran, "layers" where the per-layer kernels did with
    programmatic dependent launch, "plain" where they did without it (auto measured it faster)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.json")
        r = subprocess.run(convgen_cmd(convgen, spec, batch, repeat, path), cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{convgen} run {spec} --images {batch}: exit {r.returncode}: "
                               f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
        with open(path) as f:
            j = json.load(f)
    lat = j.get("latency_ms") or {}
    return (j["total_s"] * 1e3, lat.get("p50"), lat.get("p90"), lat.get("p99"), j.get("bucket"),
            j.get("graph_replays"), "whole" if j.get("whole") else "plain" if j.get("launch") == "plain" and
            j.get("plain_ms") is not None else "layers")


class Torch:
    def __init__(self, repeat, precision="fp32"):
        import torch
        import torch.nn as nn
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device for PyTorch")
        self.torch, self.nn, self.repeat, self.precision = torch, nn, repeat, precision
        torch.backends.cudnn.benchmark = True
        self.dtype = compare.torch_precision(torch, precision)

    def model(self, layers):
        return compare.cast_model(self.torch, compare.build_model(self.torch, layers)[0], self.dtype)

    def input(self, x):
        return compare.cast_input(self.torch, x, self.dtype)

    def timed(self, fn, warmup=10):
        torch = self.torch
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        out = []
        for _ in range(self.repeat):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b))
        return statistics.median(out)

    def graphed(self, m, x):
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)
        return g, y

    def measure(self, layers, spec, batch, modes):
        torch = self.torch
        m = self.model(layers)
        x = self.input(torch.rand(batch, spec["C"], spec["H"], spec["W"], device="cuda"))
        res = {}
        with torch.inference_mode():
            res["eager"] = self.timed(lambda: m(x))
            g, _ = self.graphed(m, x)
            res["graph"] = self.timed(g.replay)
            for mode in modes:
                torch._dynamo.reset()
                cm = torch.compile(m, mode=mode)
                for _ in range(3):
                    cm(x)
                res["compile:" + mode] = self.timed(lambda: cm(x))
        done = [v for k, v in res.items() if k.startswith("compile:")]
        if done:
            res["compile"] = min(done)
        return res

    def host_latency(self, layers, spec):
        """A NumPy uint8 image to a prediction in host memory, through a replayed graph."""
        import numpy as np
        torch = self.torch
        m = self.model(layers)
        img = np.random.default_rng(1).integers(0, 256, (1, spec["C"], spec["H"], spec["W"]), dtype=np.uint8)
        static = torch.zeros(1, spec["C"], spec["H"], spec["W"], device="cuda")
        with torch.inference_mode():
            g, y = self.graphed(m, static)
            out = []
            for i in range(self.repeat + 10):
                t0 = time.perf_counter()
                static.copy_(torch.from_numpy(img).cuda().float().mul_(spec["scale"]).add_(spec["offset"]))
                g.replay()
                int(y.argmax(dim=1).cpu()[0])
                if i >= 10:
                    out.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(out)


def fmt(x, unit_us=True):
    if x is None:
        return "-"
    return f"{x * 1e3:.1f}" if unit_us else f"{x:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--batches", default="1,8,64,256,1000")
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--convgen", default=os.path.join("build", "convgen"))
    ap.add_argument("--baseline", help="another convgen binary, measured the same way")
    ap.add_argument("--compile-batches", default="", help="batch sizes to time torch.compile at (slow)")
    ap.add_argument("--compile-modes", default="reduce-overhead",
                    help="torch.compile modes, comma-separated (reduce-overhead, max-autotune, ...)")
    ap.add_argument("--host-latency", action="store_true")
    ap.add_argument("--precision", default="fp32", choices=compare.PRECISIONS,
                    help="convgen's spec precision and PyTorch's (default fp32)")
    ap.add_argument("--auto", action="store_true",
                    help="with --precision P: the copy drops its layers' strategy and params (auto's choices at P)")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.auto and a.precision == "fp32":
        ap.error("--auto needs --precision other than fp32 (it applies to the precision copy)")
    try:
        batches = [int(b) for b in a.batches.split(",") if b]
        compiled = {int(b) for b in a.compile_batches.split(",") if b}
        modes = [m for m in a.compile_modes.split(",") if m]
    except ValueError:
        print("latency.py: --batches and --compile-batches take comma-separated integers", file=sys.stderr)
        return 2
    if compiled and not modes:
        print("latency.py: --compile-modes names no mode", file=sys.stderr)
        return 2
    if not batches or min(batches) < 1 or a.repeat < 1:
        print("latency.py: batches and --repeat must be positive", file=sys.stderr)
        return 2
    specs = a.specs or compare.DEFAULT_SPECS
    loaded = []
    for path in specs:
        try:
            spec, layers = compare.load_spec(path)
            if a.precision != "fp32":
                compare.precision_copy(path, a.precision, a.auto)  # checked now, written when convgen runs
        except compare.SpecError as err:
            print(f"latency.py: {err}", file=sys.stderr)
            return 3
        loaded.append((path, net_info(spec), layers))
    if a.dry_run:
        for path, spec, layers in loaded:
            print(f"{path}: {spec['C']}x{spec['H']}x{spec['W']}, {len(layers)} layers")
            for e in compare.torch_plan(layers):
                print(f"  torch: {compare.plan_text(e)}")
            for b in batches:
                print("  " + " ".join(convgen_cmd(a.convgen, path, b, a.repeat, "RUN.json")))
        return 0
    try:
        t = Torch(a.repeat, a.precision)
    except (ImportError, RuntimeError) as err:
        print(f"latency.py: {err}", file=sys.stderr)
        return 4
    peak, peak_text = compare.fp32_peak(t.torch)  # TFLOP/s
    tpeak = compare.tensor_peak(t.torch, a.precision)
    print(f"device: {peak_text}; PyTorch {t.torch.__version__}, cuDNN {t.torch.backends.cudnn.version()}; "
          f"precision {a.precision}" + (f" (dense tensor peak {tpeak:.0f} TFLOP/s)" if tpeak else "")
          + "; times in µs")
    rows, failed = [], 0
    for path, spec, layers in loaded:
        if a.host_latency:
            print(f"{spec['name']}: PyTorch host path at batch 1 (uint8 NumPy -> graph -> argmax -> host): "
                  f"p50 {t.host_latency(layers, spec) * 1e3:.1f} µs")
        try:
            run_path = compare.precision_spec(path, a.precision, a.auto) if a.precision != "fp32" else path
        except OSError as err:
            print(f"latency.py: {err}", file=sys.stderr)
            failed = 1
            continue
        try:
            for b in batches:
                try:
                    cg = run_convgen(a.convgen, run_path, b, a.repeat)
                    base = run_convgen(a.baseline, run_path, b, a.repeat) if a.baseline else None
                except RuntimeError as err:
                    print(f"latency.py: {err}", file=sys.stderr)
                    failed = 1
                    continue
                pt = t.measure(layers, spec, b, modes if b in compiled else [])
                best = min(v for k, v in pt.items() if not k.startswith("compile:"))
                gf = network_gflop(layers, b)
                rows.append((spec["name"], b, cg, base, pt, best, gf))
                print(f"{spec['name']} batch {b}: convgen {cg[0] * 1e3:.1f} µs (bucket {cg[4]}, {cg[6]}, host p50 "
                      f"{fmt(cg[1])}), eager {pt['eager'] * 1e3:.1f}, graph {pt['graph'] * 1e3:.1f}"
                      + "".join(f", {k[8:]} {v * 1e3:.1f}" for k, v in pt.items() if k.startswith("compile:"))
                      + (f", baseline {base[0] * 1e3:.1f}" if base else ""), flush=True)
        finally:
            if run_path != path:
                os.remove(run_path)
    print()
    print("| network | batch | convgen GPU µs | host p50 / p90 / p99 µs | GFLOP/s (% FP32 peak"
          + (f"; % {a.precision} tensor peak" if tpeak else "") + ") | "
          "baseline convgen µs | PyTorch eager | CUDA graph | torch.compile | best PyTorch / convgen |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, b, cg, base, pt, best, gf in rows:
        rate = gf / (cg[0] / 1e3)
        print(f"| {name} | {b} | {cg[0] * 1e3:.1f} | {fmt(cg[1])} / {fmt(cg[2])} / {fmt(cg[3])} | "
              f"{rate:.0f} ({100 * rate / (peak * 1e3):.2f} %"
              + (f"; {100 * rate / (tpeak * 1e3):.2f} %" if tpeak else "") + f") | {fmt(base[0]) if base else '-'} | "
              f"{pt['eager'] * 1e3:.1f} | {pt['graph'] * 1e3:.1f} | {fmt(pt.get('compile'))} | "
              f"{best / cg[0]:.2f}x |")
    return failed


if __name__ == "__main__":
    sys.exit(main())
