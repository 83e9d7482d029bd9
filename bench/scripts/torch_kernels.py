#!/usr/bin/env python3
"""torch_kernels.py — which GPU kernels PyTorch FP32 runs for a spec at a batch, and for how
long: eager (cudnn.benchmark on, TF32 off, as bench/latency.py sets it) and torch.compile
(reduce-overhead), each profiled over 20 calls after warm-up (torch.profiler, CUDA time a
call by kernel name). Says which algorithm cuDNN picked (the kernel names) and what
Inductor fused, beside `convgen run SPEC --profile`'s per-kernel times.

    python3 bench/scripts/torch_kernels.py SPEC BATCH [--no-compile]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import latency  # noqa: E402
import compare  # noqa: E402


def profile(torch, fn, label, calls=20):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile as prof
    with prof(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    rows = sorted(((e.key, e.device_time_total / calls, e.count // calls) for e in p.key_averages()
                   if e.device_time_total > 0), key=lambda r: -r[1])
    total = sum(r[1] for r in rows)
    print(f"== {label}: {total:.1f} µs of kernels a call")
    for name, us, n in rows[:12]:
        print(f"  {us:9.1f} µs  x{n}  {name[:150]}")


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    spec, layers = compare.load_spec(sys.argv[1])
    b = int(sys.argv[2])
    info = latency.net_info(spec)
    t = latency.Torch(20)
    torch = t.torch
    m = t.model(layers)
    x = t.input(torch.rand(b, info["C"], info["H"], info["W"], device="cuda"))
    with torch.inference_mode():
        profile(torch, lambda: m(x), f"{info['name']} batch {b} eager")
        if "--no-compile" not in sys.argv:
            cm = torch.compile(m, mode="reduce-overhead", dynamic=False)
            profile(torch, lambda: cm(x), f"{info['name']} batch {b} torch.compile reduce-overhead")
    return 0


if __name__ == "__main__":
    sys.exit(main())
