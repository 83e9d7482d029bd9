#!/usr/bin/env python3
"""compare.py — convgen beside PyTorch on the same specs and batch, one process.

Run on a GPU machine with PyTorch, from the repository root, after `make` (and
`make fatbin` for the fat-binary column):

    python3 bench/compare.py [--images 10000] [--repeat 50] [--no-compile] [--data DIR]

For each network it times, with CUDA events, median after warm-up:
  * convgen: each conv layer and the whole network (first kernel to last), JIT
    (NVRTC) and fat binary (`convgen run --repeat R --json`);
  * PyTorch eager FP32 through cuDNN (TF32 off, cudnn.benchmark on): each bare
    convolution, each conv+activation+pool, and the whole network;
  * torch.compile(mode="max-autotune") of the whole network (unless --no-compile).
Inputs are already on the device for every contender. Prints one table.
"""
import argparse, json, os, subprocess, sys, tempfile

import torch
import torch.nn.functional as F
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = ["ece408-2017", "ece408-2018sp", "ece408-2018fa"]


def timed(fn, repeat, warmup=5):
    """Median of `repeat` CUDA-event timings of fn(), in milliseconds."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def build_layers(spec, gen):
    """The spec's layers as PyTorch callables with random weights (timing only)."""
    layers = []
    c, h, w = spec["input"]["channels"], spec["input"]["height"], spec["input"]["width"]
    for l in spec["layers"]:
        if l["op"] == "conv":
            m, k = l["M"], l["K"]
            wt = torch.randn(m, c, k, k, device="cuda", generator=gen) / (c * k * k) ** 0.5
            b = torch.randn(m, device="cuda", generator=gen) if l.get("bias", False) else None
            layers.append(dict(l, weight=wt, bias=b))
            c, h, w = m, h - k + 1, w - k + 1
            if l.get("pool", "none") == "max2":
                h, w = h // 2, w // 2
        elif l["op"] == "fc":
            fin = c * h * w
            wt = torch.randn(l["out"], fin, device="cuda", generator=gen) / fin ** 0.5
            b = torch.randn(l["out"], device="cuda", generator=gen) if l.get("bias", True) else None
            layers.append(dict(l, weight=wt, bias=b))
            c, h, w = l["out"], 1, 1
        else:
            layers.append(dict(l))
    return layers


def act(x, name):
    return torch.tanh(x) if name == "tanh" else torch.relu(x) if name == "relu" else x


def conv_block(l, x):
    y = act(F.conv2d(x, l["weight"], l["bias"]), l.get("activation", "none"))
    return F.max_pool2d(y, 2) if l.get("pool", "none") == "max2" else y


def forward(layers, x):
    for l in layers:
        if l["op"] == "conv":
            x = conv_block(l, x)
        elif l["op"] == "fc":
            x = act(F.linear(x.flatten(1), l["weight"], l["bias"]), l.get("activation", "none"))
        else:
            x = torch.softmax(x.flatten(1), dim=1)
    return x


def convgen(spec_path, args, fatbin=None):
    """Median per-layer and whole-network seconds from convgen's own events."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [os.path.join(ROOT, "build/convgen"), "run", spec_path, "--images", str(args.images),
               "--repeat", str(args.repeat), "--json", f.name]
        if fatbin:
            cmd += ["--fatbin", fatbin]
        if args.data:
            cmd += ["--data", args.data]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(f.name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--data")
    ap.add_argument("--nets", default=",".join(NETS))
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}, batch {args.images}, median of {args.repeat}")
    rows = []
    for net in args.nets.split(","):
        spec_path = os.path.join(ROOT, "specs", net + ".yaml")
        spec = yaml.safe_load(open(spec_path))
        layers = build_layers(spec, gen)
        i = spec["input"]
        x = torch.rand(args.images, i["channels"], i["height"], i["width"], device="cuda", generator=gen)
        jit = convgen(spec_path, args)
        fb_path = os.path.join(ROOT, "build/fatbin", net + ".fatbin")
        fb = convgen(spec_path, args, fb_path) if os.path.exists(fb_path) else None
        cur = x
        for li, l in enumerate(layers):
            if l["op"] == "conv":
                inp = cur
                bare = timed(lambda: F.conv2d(inp, l["weight"], l["bias"]), args.repeat)
                block = timed(lambda: conv_block(l, inp), args.repeat)
                ours = jit["layers"][li]["time_s"] * 1e3
                ours_fb = fb["layers"][li]["time_s"] * 1e3 if fb else float("nan")
                rows.append((net, l["name"], ours, ours_fb, bare, block))
                cur = conv_block(l, inp)
            elif l["op"] == "fc":
                cur = act(F.linear(cur.flatten(1), l["weight"], l["bias"]), l.get("activation", "none"))
        eager = timed(lambda: forward(layers, x), args.repeat)
        comp = float("nan")
        if not args.no_compile:
            cf = torch.compile(lambda t: forward(layers, t), mode="max-autotune")
            comp = timed(lambda: cf(x), args.repeat)
        rows.append((net, "whole network", jit["total_s"] * 1e3,
                     fb["total_s"] * 1e3 if fb else float("nan"), eager, comp))
    print()
    print(f"{'network':15} {'layer':14} {'convgen JIT':>12} {'convgen fatbin':>15} "
          f"{'cuDNN / eager':>14} {'eager block / compile':>22} {'speed-up':>9}")
    for net, name, ours, ours_fb, ref, ref2 in rows:
        print(f"{net:15} {name:14} {ours:10.3f}ms {ours_fb:13.3f}ms {ref:12.3f}ms {ref2:20.3f}ms "
              f"{ref / ours:8.2f}x")
    print("\nconv rows: cuDNN = bare F.conv2d, eager block = conv+activation+pool in eager PyTorch;")
    print("whole-network rows: eager PyTorch, then torch.compile max-autotune; speed-up = reference / convgen JIT.")


if __name__ == "__main__":
    sys.exit(main())
