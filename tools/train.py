#!/usr/bin/env python3
"""train.py — train a convgen network spec on Fashion-MNIST with PyTorch.

The network is built from the spec YAML itself (conv / fc / softmax layers,
biases, activations, pools, pixel scaling), trained on the 60,000 training
images as written by `convgen data --resize S -o DIR` (convgen's own resize, so
training and inference see the same pixels), with a fixed seed, and written as
safetensors with the tensor names convgen reads ("<layer>.weight",
"<layer>.bias"). The test accuracy PyTorch computes (float32, TF32 off) is
printed last: convgen must reproduce it.

    convgen data --resize 64 -o data64
    python3 tools/train.py specs/ece408-2018sp.yaml --data data64 -o models/ece408-2018sp.safetensors
    python3 tools/train.py specs/ece408-2018sp.yaml --data data64 --low 0.55,0.75 -o models/x-low.safetensors

--low LO,HI trains deliberately little: it stops at the first evaluation whose
accuracy lies in [LO, HI] (the course shipped such "low" weights too).
"""
import argparse, gzip, os, struct, sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml
from safetensors.torch import save_file


def read_idx(path):
    """An IDX file (plain or .gz) as a numpy uint8 array."""
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(dirname, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(dirname, name)
        if os.path.exists(p):
            return p
    sys.exit(f"train.py: {dirname} has no {stem}; run convgen data --resize S -o {dirname}")


class Net(nn.Module):
    """The spec's layers, in order; forward returns the logits (softmax excluded)."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        self.layers = nn.ModuleDict()
        c, h, w = spec["input"]["channels"], spec["input"]["height"], spec["input"]["width"]
        for l in spec["layers"]:
            if l["op"] == "conv":
                self.layers[l["name"]] = nn.Conv2d(c, l["M"], l["K"], bias=l.get("bias", False))
                c, h, w = l["M"], h - l["K"] + 1, w - l["K"] + 1
                if l.get("pool", "none") == "max2":
                    h, w = h // 2, w // 2
            elif l["op"] == "fc":
                self.layers[l["name"]] = nn.Linear(c * h * w, l["out"], bias=l.get("bias", True))
                c, h, w = l["out"], 1, 1

    def forward(self, x):
        for l in self.spec["layers"]:
            act = l.get("activation", "none")
            if l["op"] == "conv":
                x = self.layers[l["name"]](x)
                x = torch.tanh(x) if act == "tanh" else torch.relu(x) if act == "relu" else x
                if l.get("pool", "none") == "max2":
                    x = F.max_pool2d(x, 2)
            elif l["op"] == "fc":
                x = self.layers[l["name"]](x.flatten(1))
                x = torch.tanh(x) if act == "tanh" else torch.relu(x) if act == "relu" else x
        return x


def accuracy(net, x, y):
    """Test accuracy in plain float32 (TF32 off), as convgen computes it."""
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    net.eval()
    with torch.no_grad():
        pred = torch.cat([net(x[i:i + 1000]).argmax(1) for i in range(0, len(x), 1000)])
    net.train()
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
    return (pred == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--data", required=True, help="directory written by convgen data --resize S")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--target", type=float, default=0.90, help="stop once test accuracy reaches this")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=408)
    ap.add_argument("--low", help="LO,HI: stop at the first evaluation with accuracy in [LO, HI]")
    args = ap.parse_args()

    spec = yaml.safe_load(open(args.spec))
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    i = spec["input"]
    scale, offset = float(i.get("scale", 1.0)), float(i.get("offset", 0.0))

    def load(kind):
        x = read_idx(find(args.data, f"{kind}-images-idx3-ubyte"))
        y = read_idx(find(args.data, f"{kind}-labels-idx1-ubyte"))
        if x.shape[1:] != (i["height"], i["width"]):
            sys.exit(f"train.py: {args.data} holds {x.shape[1]}x{x.shape[2]} images; "
                     f"{args.spec} wants {i['height']}x{i['width']}")
        xt = torch.tensor(x, dtype=torch.float32, device=dev).unsqueeze(1) * scale + offset
        return xt, torch.tensor(y, dtype=torch.long, device=dev)

    xtr, ytr = load("train")
    xte, yte = load("t10k")
    net = Net(spec).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    # cosine decay over the whole run: the last epochs settle instead of bouncing
    steps_total = args.epochs * ((len(xtr) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps_total)
    low = [float(v) for v in args.low.split(",")] if args.low else None
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    acc, done = accuracy(net, xte, yte), False
    step = 0
    for epoch in range(args.epochs):
        perm = torch.randperm(len(xtr), device=dev, generator=gen)
        for b in range(0, len(xtr), args.batch):
            idx = perm[b:b + args.batch]
            loss = F.cross_entropy(net(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if low and step % 5 == 0:
                acc = accuracy(net, xte, yte)
                if low[0] <= acc <= low[1]:
                    done = True
                    break
        if done:
            break
        acc = accuracy(net, xte, yte)
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {acc:.4f}", flush=True)
        if not low and acc >= args.target:
            break
    if low and not done:
        sys.exit(f"train.py: accuracy never landed in [{low[0]}, {low[1]}]")
    tensors = {}
    for name, p in net.layers.items():
        tensors[f"{name}.weight"] = p.weight.detach().float().cpu().contiguous()
        if p.bias is not None:
            tensors[f"{name}.bias"] = p.bias.detach().float().cpu().contiguous()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_file(tensors, args.out, metadata={"spec": os.path.basename(args.spec), "steps": str(step),
                                           "seed": str(args.seed)})
    print(f"{args.out}: {step} steps, test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
