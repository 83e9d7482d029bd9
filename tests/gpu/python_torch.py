#!/usr/bin/env python3
"""python_torch.py NET IMAGES-IDX[.gz] [N] — python/convgen.py on a PyTorch
CUDA tensor: the first N (default 10,000) images of an IDX file (resized on the
GPU to the network's input where it differs, as uint8 pixels) classified in
place on the GPU (Net.run_torch, PyTorch's current stream) give the CPU
backend's predictions (Net.run on the same NumPy array); scores within 1e-5.
Differences are allowed only where the CPU's top two scores are within 1e-5
(a tie at float precision). Prints a summary line; exit 0 when they agree.
Run by tests/gpu/run.sh when torch and numpy import."""
import gzip
import sys

import numpy as np
import torch

import convgen


def main():
    net_path, idx = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    raw = (gzip.open if idx.endswith(".gz") else open)(idx, "rb").read()
    x = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 28, 28)[:n].copy()
    with convgen.Net(net_path, backend="cpu") as cpu:
        c, h, w = cpu.input_shape
        xt = torch.from_numpy(x).cuda()
        if (h, w) != (28, 28):  # the module resizes nothing: bilinear on the GPU, back to uint8 pixels
            big = torch.nn.functional.interpolate(xt[:, None].float(), size=(h, w), mode="bilinear",
                                                  align_corners=False)
            xt = big.round().clamp(0, 255).to(torch.uint8).expand(-1, c, -1, -1).contiguous()
            x = xt.cpu().numpy()
        p_cpu, s_cpu = cpu.run(x)
    with convgen.Net(net_path, backend="cuda") as gpu:
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):  # a non-default stream: the library must use the caller's
            pred, scores = gpu.run_torch(xt)
            total = scores.sum(dim=1)  # work queued after it on the same stream sees its answers
        side.synchronize()
        p_gpu, s_gpu, total = pred.cpu().numpy(), scores.cpu().numpy(), total.cpu().numpy()
        device = gpu.device_name
    diff = np.nonzero(p_gpu != p_cpu)[0]
    top2 = np.sort(s_cpu, axis=1)[:, -2:]
    ties = [i for i in diff if top2[i, 1] - top2[i, 0] <= 1e-5]
    err = float(np.abs(s_gpu - s_cpu).max()) if n else 0.0
    ok = len(diff) == len(ties) and err <= 1e-5 and np.allclose(total, 1.0, atol=1e-4)
    print("python_torch: %d images on %s from a CUDA tensor: %d of %d predictions as the CPU's (%d ties), "
          "max score difference %.3e: %s" % (n, device, n - len(diff), n, len(ties), err, "ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
