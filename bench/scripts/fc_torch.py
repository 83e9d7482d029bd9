#!/usr/bin/env python3
"""fc_torch.py — PyTorch's time for fully connected layers alone, the baseline beside
`convgen kernel` on the same shapes: x (images x IN) @ w.T + b, then the activation, in
FP32 with TF32 off (cuBLAS's FP32 GEMM, as PyTorch runs an FP32 network by default), or
in tf32 / bf16 with --precision. Inputs and weights random (never zeros); before each
timed run a 256 MiB buffer is written to flush the L2; CUDA events, the median of
--repeat runs after 5 untimed.

    python3 bench/scripts/fc_torch.py --shapes 784x2048,2048x2048 --batches 256,1000,10000
"""
import argparse
import statistics

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", required=True, help="INxOUT items, comma-separated")
    ap.add_argument("--batches", default="256,1000,10000")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"])
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dt = torch.bfloat16 if a.precision == "bf16" else torch.float32
    dev = torch.device("cuda")
    flush = torch.empty(64 << 20, dtype=torch.float32, device=dev)
    print(f"# {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}, {a.precision}, "
          f"median of {a.repeat}, L2 flushed")
    g = torch.Generator(device=dev).manual_seed(3)
    for shape in a.shapes.split(","):
        IN, OUT = (int(v) for v in shape.split("x"))
        w = (torch.rand(OUT, IN, device=dev, generator=g) - 0.5).mul_(2.0 / IN ** 0.5).to(dt)
        b = (torch.rand(OUT, device=dev, generator=g) - 0.5).to(dt)
        for n in (int(v) for v in a.batches.split(",")):
            x = (torch.rand(n, IN, device=dev, generator=g) - 0.5).to(dt)
            times = []
            for i in range(a.repeat + 5):
                flush.fill_(float(i))
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.relu(torch.nn.functional.linear(x, w, b))
                e.record()
                torch.cuda.synchronize()
                if i >= 5:
                    times.append(s.elapsed_time(e))
            ms = statistics.median(times)
            print(f"torch {IN}x{OUT} n={n}: {ms:.4f} ms, {2.0 * n * IN * OUT / ms / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
