#!/usr/bin/env python3
"""train.py — train a convgen network spec, or a small ResNet, on Fashion-MNIST with PyTorch.

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

--model resnet trains a residual network defined here in PyTorch instead of a
spec (no SPEC argument): a 3x3 stem conv (batch norm, relu), then one stage per
--widths entry of --blocks basic blocks each (3x3 conv, batch norm, relu, 3x3
conv, batch norm, plus the shortcut: the block's input, or a 1x1 conv and batch
norm where the stride or width changes; relu), the stage's first block with
the stride of --strides, global average pool, fc to 10 (defaults: widths
16,32,64, blocks 1,1,1, strides 2,2,2). Input x = pixel / 255 (convgen import's
default scaling). Trained with SGD (momentum 0.9, Nesterov, weight decay 5e-4,
batch 256, learning rate 0.1 by default, one warm-up epoch then cosine decay
over 30 epochs, all of them run unless --target is given) on randomly shifted
(up to 2 pixels) and mirrored images.
--onnx OUT.onnx writes the trained network in eval mode (batch norms with their
running statistics) as ONNX (opset 17), for `convgen import`:

    python3 tools/train.py --model resnet --data /usr/share/datasets/fashion-mnist --onnx fashion-resnet.onnx
    convgen import fashion-resnet.onnx -o fashion-resnet.yaml

(models/fashion-resnet.onnx was trained with these settings written out as flags:
0.9318, 75 s on an H200 that ran five other trainings beside it.)

--onnx works for a spec's network too (then -o is optional).
"""
import argparse, gzip, os, struct, sys, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


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


class Block(nn.Module):
    """A basic residual block: conv-bn-relu-conv-bn, plus the shortcut, relu."""

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


class ResNet(nn.Module):
    """Stem (3x3 conv, bn, relu), stages of basic blocks, global average pool, fc."""

    def __init__(self, widths, blocks, strides, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU())
        layers, c = [], widths[0]
        for w, nb, s in zip(widths, blocks, strides):
            for b in range(nb):
                layers.append(Block(c, w, s if b == 0 else 1))
                c = w
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def augment(x, gen):
    """Each image shifted by up to 2 pixels each way (zeros fill in) and mirrored with probability 1/2."""
    n, _, h, w = x.shape
    pad = F.pad(x, (2, 2, 2, 2))
    dy = torch.randint(0, 5, (n, 1, 1), device=x.device, generator=gen)
    dx = torch.randint(0, 5, (n, 1, 1), device=x.device, generator=gen)
    rows = dy + torch.arange(h, device=x.device).view(1, h, 1)
    cols = dx + torch.arange(w, device=x.device).view(1, 1, w)
    out = pad[torch.arange(n, device=x.device).view(n, 1, 1), 0, rows, cols].unsqueeze(1)
    flip = torch.rand(n, device=x.device, generator=gen) < 0.5
    return torch.where(flip.view(n, 1, 1, 1), out.flip(3), out)


def ints(text, what):
    try:
        v = [int(t) for t in text.split(",")]
    except ValueError:
        sys.exit(f"train.py: {what} {text}: not a comma-separated list of integers")
    if not v or min(v) < 1:
        sys.exit(f"train.py: {what} {text}: every number must be 1 or more")
    return v


def export_onnx(net, shape, path):
    """The network in eval mode as ONNX (opset 17, batch dimension named 'n')."""
    net = net.eval().cpu().float()
    x = torch.zeros(1, *shape)
    kw = dict(opset_version=17, input_names=["x"], output_names=["y"],
              dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        torch.onnx.export(net, x, path, dynamo=False, **kw)
    except TypeError:  # a torch without the dynamo argument
        torch.onnx.export(net, x, path, **kw)


def onnx_accuracy(path, x, y):
    """The exported file's test accuracy under onnxruntime, where it is installed (else None)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    xs = x.cpu().numpy()
    pred = np.concatenate([sess.run(None, {"x": xs[i:i + 1000]})[0].argmax(1) for i in range(0, len(xs), 1000)])
    return float((pred == y.cpu().numpy()).mean())


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
    ap.add_argument("spec", nargs="?", help="the spec to train (not with --model resnet)")
    ap.add_argument("--data", required=True, help="directory written by convgen data --resize S")
    ap.add_argument("-o", "--out", help="the safetensors file to write (spec networks)")
    ap.add_argument("--onnx", help="also (or, for --model resnet, only) write the network as ONNX")
    ap.add_argument("--model", choices=["spec", "resnet"], default="spec")
    ap.add_argument("--widths", default="16,32,64", help="resnet: each stage's channels")
    ap.add_argument("--blocks", default="1,1,1", help="resnet: each stage's basic blocks")
    ap.add_argument("--strides", default="2,2,2", help="resnet: each stage's first stride")
    ap.add_argument("--epochs", type=int, help="at most this many epochs (default 20; resnet 30)")
    ap.add_argument("--target", type=float,
                    help="stop once test accuracy reaches this (default 0.90; resnet: none, the whole schedule runs)")
    ap.add_argument("--lr", type=float, help="learning rate (default 1e-3; resnet 0.1)")
    ap.add_argument("--batch", type=int, help="batch size (default 128; resnet 256)")
    ap.add_argument("--seed", type=int, default=408)
    ap.add_argument("--low", help="LO,HI: stop at the first evaluation with accuracy in [LO, HI]")
    ap.add_argument("--state", help="resnet: also write the PyTorch state dict (torch.save), to export again elsewhere")
    ap.add_argument("--limit", type=int, help="train on the first N training images only (a quick check)")
    args = ap.parse_args()
    resnet = args.model == "resnet"
    if resnet and args.spec:
        sys.exit("train.py: --model resnet takes no spec")
    if not resnet and not args.spec:
        sys.exit("train.py: name the spec to train, or pass --model resnet")
    if resnet and args.out:
        sys.exit("train.py: --model resnet writes --onnx only (convgen import makes the spec and its weights)")
    if not (args.out or args.onnx):
        sys.exit("train.py: nothing to write: pass -o OUT.safetensors or --onnx OUT.onnx")
    lr = args.lr if args.lr is not None else 0.1 if resnet else 1e-3
    epochs = args.epochs if args.epochs is not None else 30 if resnet else 20
    target = args.target if args.target is not None else 1.0 if resnet else 0.90
    batch = args.batch if args.batch is not None else 256 if resnet else 128

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if resnet:
        widths, blocks, strides = ints(args.widths, "--widths"), ints(args.blocks, "--blocks"), ints(args.strides, "--strides")
        if not len(widths) == len(blocks) == len(strides):
            sys.exit("train.py: --widths, --blocks and --strides need one number per stage each")
        spec = None
        x0 = read_idx(find(args.data, "train-images-idx3-ubyte"))
        i = {"channels": 1, "height": x0.shape[1], "width": x0.shape[2]}
        scale, offset = 1.0 / 255, 0.0
    else:
        import yaml
        spec = yaml.safe_load(open(args.spec))
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
    if args.limit:
        xtr, ytr = xtr[:args.limit], ytr[:args.limit]
    xte, yte = load("t10k")
    net = (ResNet(widths, blocks, strides) if resnet else Net(spec)).to(dev)
    steps_epoch = (len(xtr) + batch - 1) // batch
    steps_total = epochs * steps_epoch
    if resnet:
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
        # one epoch's linear warm-up, then cosine decay to zero
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda k: (k + 1) / steps_epoch if k < steps_epoch else
            0.5 * (1 + np.cos(np.pi * (k - steps_epoch) / max(1, steps_total - steps_epoch))))
    else:
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        # cosine decay over the whole run: the last epochs settle instead of bouncing
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps_total)
    low = [float(v) for v in args.low.split(",")] if args.low else None
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    t0 = time.time()
    acc, done = accuracy(net, xte, yte), False
    step = 0
    for epoch in range(epochs):
        perm = torch.randperm(len(xtr), device=dev, generator=gen)
        for b in range(0, len(xtr), batch):
            idx = perm[b:b + batch]
            xb = augment(xtr[idx], gen) if resnet else xtr[idx]
            loss = F.cross_entropy(net(xb), ytr[idx])
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
        if not low and acc >= target:
            break
    if low and not done:
        sys.exit(f"train.py: accuracy never landed in [{low[0]}, {low[1]}]")
    took = time.time() - t0
    if resnet and args.state:
        torch.save(net.state_dict(), args.state)
    if args.onnx:
        export_onnx(net, (i["channels"], i["height"], i["width"]), args.onnx)
        oacc = onnx_accuracy(args.onnx, xte, yte)
        print(f"{args.onnx}: written" + ("" if oacc is None else f"; onnxruntime test accuracy {oacc:.4f}"))
    if not args.out:
        print(f"{args.onnx}: {step} steps in {took:.1f} s, test accuracy {acc:.4f}")
        return
    from safetensors.torch import save_file
    tensors = {}
    for name, p in net.layers.items():
        tensors[f"{name}.weight"] = p.weight.detach().float().cpu().contiguous()
        if p.bias is not None:
            tensors[f"{name}.bias"] = p.bias.detach().float().cpu().contiguous()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_file(tensors, args.out, metadata={"spec": os.path.basename(args.spec), "steps": str(step),
                                           "seed": str(args.seed)})
    print(f"{args.out}: {step} steps in {took:.1f} s, test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
