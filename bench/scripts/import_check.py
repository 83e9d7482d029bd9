#!/usr/bin/env python3
"""import_check.py — `convgen import` against PyTorch on real exports.

Exports torchvision's ResNet-18 and MobileNet V2 (random weights from a fixed
seed, batch-norm running statistics randomised so that the batch norms matter;
no download) and a CIFAR ResNet-20 (32x32) with torch.onnx.export, imports each
with `convgen import`, runs the same random float32 images through PyTorch
(float32, eval mode) and through `convgen run --input X.npy --output S.npy` on
each backend asked for, and prints per model and backend the largest relative
difference of the scores (relative to the largest score magnitude of that image)
and whether the predictions are identical. Exits 1 when a difference exceeds
--tol or a prediction differs.

    python3 bench/scripts/import_check.py [--convgen build/convgen] [--backends cpu,cuda]
                                          [--images 8] [--size 224] [--tol 1e-4] [--keep DIR]

Needs torch, torchvision, numpy and onnx-capable torch.onnx (no onnx package
is needed for export with dynamo=False); run from the repository root after
`make build/convgen`.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class CifarResNet(nn.Module):
    """ResNet-20 for 3x32x32 (He et al.'s CIFAR network): a 3x3 stem of 16 maps, three stages of three
    basic blocks (16, 32, 64 maps; the second and third stages halve the side, with a 1x1 projection
    on their first block's shortcut), global average pool, fc 10: 19 convolutions and the fc."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        blocks = []
        for cin, cout, stride in ((16, 16, 1), (16, 32, 2), (32, 64, 2)):
            blocks += [Block(cin, cout, stride), Block(cout, cout, 1), Block(cout, cout, 1)]
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def randomise_bn(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(1 + 0.1 * torch.randn(c, generator=gen))
            m.bias.data.copy_(0.1 * torch.randn(c, generator=gen))


def export(model, shape, path):
    x = torch.zeros(1, *shape)
    kw = dict(opset_version=13, input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    try:
        torch.onnx.export(model, x, path, dynamo=False, **kw)
    except TypeError:  # a torch without the dynamo argument
        torch.onnx.export(model, x, path, **kw)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        print("  FAILED (exit %d): %s\n  %s" % (p.returncode, " ".join(cmd), p.stderr.strip()))
    return p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--convgen", default="build/convgen")
    ap.add_argument("--backends", default="cpu,cuda")
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--size", type=int, default=224, help="input side of the torchvision models")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest relative score difference (default 1e-4)")
    ap.add_argument("--models", default="cifar_resnet,resnet18,mobilenet_v2")
    ap.add_argument("--keep", help="write the models, specs and outputs here (default: a temporary directory)")
    a = ap.parse_args()
    import torchvision

    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    makers = {
        "cifar_resnet": (lambda: CifarResNet(), (3, 32, 32)),
        "resnet18": (lambda: torchvision.models.resnet18(weights=None), (3, a.size, a.size)),
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (3, a.size, a.size)),
    }
    work = a.keep or tempfile.mkdtemp(prefix="import-check-")
    os.makedirs(work, exist_ok=True)
    bad = 0
    for name in a.models.split(","):
        make, shape = makers[name]
        model = make()
        randomise_bn(model, gen)
        model.eval()
        onnx_path = os.path.join(work, name + ".onnx")
        export(model, shape, onnx_path)
        spec = os.path.join(work, name + ".yaml")
        # float32 .npy input is taken as the network's input as it is: no scaling to match
        if run([a.convgen, "import", onnx_path, "-o", spec, "--force"]):
            bad += 1
            continue
        x = torch.randn(a.images, *shape, generator=gen)
        xin = os.path.join(work, name + ".x.npy")
        np.save(xin, x.numpy().astype(np.float32))
        with torch.no_grad():
            ref = model(x).double().numpy()
        for be in a.backends.split(","):
            out = os.path.join(work, "%s.%s.npy" % (name, be))
            if run([a.convgen, "run", spec, "--backend", be, "--input", xin, "--output", out]):
                bad += 1
                continue
            got = np.load(out).astype(np.float64)
            scale = np.maximum(np.abs(ref).max(axis=1, keepdims=True), 1e-12)
            rel = float((np.abs(got - ref) / scale).max())
            same = bool((got.argmax(1) == ref.argmax(1)).all())
            ok = rel <= a.tol and same
            bad += not ok
            print("%-13s %-5s %d images: max relative difference %.3g, predictions %s  %s"
                  % (name, be, a.images, rel, "identical" if same else "DIFFER", "ok" if ok else "FAIL"))
    print("files in", work)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
