#!/usr/bin/env python3
"""classify.py — classify the images of an .npy file with a convgen network
from Python (python/convgen.py, over libconvgen.so):

    PYTHONPATH=python python3 examples/classify.py NET.cgb images.npy [--backend cpu|cuda] [--torch]

Prints "index,prediction" and one line per image, as examples/classify.c
does. --torch (CUDA backend, needs PyTorch): the images are copied to a CUDA
tensor and classified in place on the device (Net.run_torch), the answers
read back once PyTorch's stream is done.
"""
import argparse
import sys

import numpy as np

import convgen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("net", help="a bundle (NET.cgb) or a spec (.yaml)")
    ap.add_argument("images", help=".npy of uint8 or float32, N x H x W or N x C x H x W")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--torch", action="store_true", help="run on a PyTorch CUDA tensor, in place")
    a = ap.parse_args()
    images = np.load(a.images)
    try:
        with convgen.Net(a.net, backend="cuda" if a.torch else a.backend, device=a.device) as net:
            if a.torch:
                import torch
                x = torch.from_numpy(images).to("cuda:%d" % a.device)
                pred_t, scores_t = net.run_torch(x)
                torch.cuda.current_stream(x.device).synchronize()
                pred, scores = pred_t.cpu().numpy(), scores_t.cpu().numpy()
            else:
                pred, scores = net.run(images)
            backend, device = net.backend, net.device_name
    except convgen.Error as e:
        print("classify.py: %s" % e, file=sys.stderr)
        return e.status
    print("index,prediction")
    for i, p in enumerate(pred):
        print("%d,%d" % (i, p))
    top = float(scores[np.arange(len(pred)), pred].mean()) if len(pred) else 0.0
    print("classify.py: %d images on %s (%s)%s, mean top score %.4f"
          % (len(pred), backend, device, " from a CUDA tensor" if a.torch else "", top), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
