#!/usr/bin/env python3
"""compare.py — every conv layer of any spec beside cuDNN's bare FP32 convolution (or another precision's).

Run on a GPU machine with PyTorch, from the repository root, after `make`:

    python3 bench/compare.py [SPEC...] [--batch N] [--repeat R] [--convgen build/convgen]
                             [--tuning-dir DIR] [--compile] [--precision fp32|tf32|bf16|fp16] [--dry-run]

With no SPEC, the three course networks (specs/ece408-*.yaml without -low); the
benchmark zoo is `python3 bench/compare.py bench/specs/zoo-*.yaml`.

For every conv layer it prints the shape, the template convgen chose (from
`convgen generate --arch` for the architecture the run's JIT compiled for, or the
spec's tuning record where `convgen run` applied it: "tuned"), the direct-convolution work 2*N*M*C*K*K*OH*OW (OH, OW before
pooling), and for convgen and for cuDNN the median time, TFLOP/s and fraction of
the card's FP32 FMA peak (SMs x FP32 lanes x 2 x max SM clock), the algorithm
class cuDNN used (named from its kernel names, so Winograd and FFT layers, which
beat the direct-FLOP peak, are read for what they are) and the time ratio
convgen/cuDNN. Then each whole network beside eager PyTorch. Two markdown tables
come last. A spec without conv layers gets its whole-network row only.

  * convgen: `convgen run SPEC --backend cuda --random-input 1 --images N
    --repeat R --json F [--tuning DIR/NAME.tuning.yaml]`: medians of CUDA events around each layer's kernels
    (fused bias, activation and pool included) and around the whole network
    (uint8 conversion to argmax); also with the fat binary
    build/fatbin/NETWORK.fatbin when one exists (`make fatbin`).
  * cuDNN: the bare convolution, F.conv2d with the layer's weights, stride and
    padding (uneven padding added to the input beforehand) and no bias
    (PyTorch adds a bias in a kernel of its own, ~1 ms at batch 10,000), in FP32,
    TF32 off, cudnn.benchmark on, input already on the device, L2 flushed by
    writing a 256 MB buffer before each timed call, CUDA events, median of R
    after warm-up; the kernels of one further call recorded by torch.profiler.
  * Whole network: eager nn.Sequential of the same layers on float input, and
    torch.compile(mode="max-autotune") of it with --compile (25-60 s each).

With --precision P (default fp32, as above): convgen runs a copy of each spec with
`precision: P` (written beside it as .prec-P-NAME.yaml, so that relative paths
still resolve, and removed afterwards, also when the run fails), so each layer's
time is its P kernels'; the tuning record is the spec's own (or --tuning-dir's
NAME.tuning.yaml) as at fp32, whose entries name their precision (an fp32
record's do not apply to P layers). PyTorch runs at P too: tf32 with
torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 on;
bf16 and fp16 with the bare convolution's input and weight, and the whole
network's weights and input (eager and --compile), in that type and
channels-last (cuDNN's fast layout for 16-bit convolutions). Each layer's
TFLOP/s is then given as a fraction of the card's dense tensor-core peak for P
(SMs x 4096 FLOP a clock for bf16 and fp16, 2048 for tf32, half these before
sm_90, x the max SM clock: 1070 TFLOP/s bf16 on an H200 at 1980 MHz) instead of
the FP32 FMA peak, the column headers naming it, and the goal is read against
it. The fat binary holds the spec's own kernels and is timed at fp32 only.

--dry-run needs neither PyTorch nor a GPU: it reads the specs, derives every
layer's shape and prints the layer table and the PyTorch module it would build;
with --precision P also the spec copy convgen would run, the dtype and memory
format PyTorch would use and the peak the fractions would be of (it writes no
copy).
The spec reader is a small YAML reader for the subset convgen specs use (PyYAML
is not relied on); the real run checks the derived shapes against the tensor
sizes in convgen's manifest.

Exit status: 0 ok, 1 convgen failed, a check failed or the spec copy could not
be written (the table is still printed when measurements exist), 2 bad usage
(a --precision other than fp32, tf32, bf16, fp16 included), 3 bad spec (for
--precision P, one without a top-level 'network:' line to put `precision: P`
after), 4 no PyTorch or GPU.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SPECS = [os.path.join("specs", n + ".yaml") for n in ("ece408-2017", "ece408-2018sp", "ece408-2018fa")]
FLUSH_BYTES = 256 << 20
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
# dense tensor-core FLOP a clock an SM (Hopper; an A100's are half these)
TENSOR_FLOP_PER_CLOCK = {"tf32": 2048, "bf16": 4096, "fp16": 4096}
# PyTorch's tensor type for a 16-bit precision (tf32 keeps torch.float32, TF32 allowed)
TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


class SpecError(Exception):
    """A spec this script cannot read or whose shapes do not work out (exit 3)."""


class CheckError(Exception):
    """convgen failed, or something measured does not agree with the spec (exit 1)."""


# ---------------------------------------------------------------------------
# A YAML reader for the subset convgen specs use: block mappings and sequences
# by indentation, one-line flow mappings and sequences, plain and quoted
# scalars, comments. Anything else is refused rather than guessed.

def _strip_comment(line):
    """The line without its comment: '#' at the start or after a blank, outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or line[i - 1] in " \t:{[,-"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _split_top(text, sep):
    """Split text at sep where it is outside quotes and brackets."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return parts


def _key_split(content):
    """(key, rest) when content is 'key: rest' or 'key:', else None."""
    quote = None
    for i, ch in enumerate(content):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'" and i == 0:
            quote = ch
        elif ch == ":" and (i + 1 == len(content) or content[i + 1] in " \t"):
            return _scalar(content[:i].strip(), None), content[i + 1:].strip()
        elif ch in "{[" and i == 0:
            return None
    return None


def _scalar(text, where):
    """A plain or quoted scalar, or a one-line flow mapping or sequence."""
    if text.startswith("{") or text.startswith("["):
        close = "}" if text[0] == "{" else "]"
        if not text.endswith(close):
            raise SpecError(f"{where}: flow collection not closed on its line")
        inner = text[1:-1].strip()
        items = [p.strip() for p in _split_top(inner, ",")] if inner else []
        if close == "]":
            return [_scalar(p, where) for p in items]
        out = {}
        for p in items:
            kv = _key_split(p)
            if kv is None:
                raise SpecError(f"{where}: '{p}' is not key: value")
            out[kv[0]] = _scalar(kv[1], where)
        return out
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text[1:-1])
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if text in ("", "~", "null"):
        return None
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", text):
        return float(text)
    return text


def parse_yaml(text, path):
    """The spec file's text as nested dicts, lists and scalars."""
    lines = []  # [indent, content, line number]
    for no, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise SpecError(f"{path}:{no}: tab in indentation")
        body = _strip_comment(raw).rstrip()
        if body.strip() in ("---", "..."):
            raise SpecError(f"{path}:{no}: several documents are not supported")
        if body.strip():
            lines.append([len(body) - len(body.lstrip(" ")), body.strip(), no])
    pos = [0]

    def block(indent):
        first = lines[pos[0]]
        if first[1] == "-" or first[1].startswith("- "):
            seq = []
            while pos[0] < len(lines) and lines[pos[0]][0] == indent and (
                    lines[pos[0]][1] == "-" or lines[pos[0]][1].startswith("- ")):
                ln = lines[pos[0]]
                rest = ln[1][1:].lstrip(" ")
                if not rest:
                    pos[0] += 1
                    seq.append(child(indent, ln[2]))
                elif _key_split(rest) is None:
                    seq.append(_scalar(rest, f"{path}:{ln[2]}"))
                    pos[0] += 1
                else:  # "- key: v": a mapping whose keys line up with 'key'
                    ln[0] = indent + len(ln[1]) - len(rest)
                    ln[1] = rest
                    seq.append(block(ln[0]))
            return seq
        out = {}
        while pos[0] < len(lines) and lines[pos[0]][0] == indent:
            ln = lines[pos[0]]
            kv = _key_split(ln[1])
            if kv is None:
                raise SpecError(f"{path}:{ln[2]}: expected 'key: value', got '{ln[1]}'")
            if kv[0] in out:
                raise SpecError(f"{path}:{ln[2]}: duplicate key '{kv[0]}'")
            pos[0] += 1
            out[kv[0]] = _scalar(kv[1], f"{path}:{ln[2]}") if kv[1] else child(indent, ln[2])
        return out

    def child(indent, no):
        """The block under a 'key:' or '-' line: deeper, or a sequence at the same indent."""
        if pos[0] < len(lines):
            nxt = lines[pos[0]]
            if nxt[0] > indent or (nxt[0] == indent and (nxt[1] == "-" or nxt[1].startswith("- "))):
                return block(nxt[0])
        return None

    if not lines:
        raise SpecError(f"{path}: empty spec")
    doc = block(lines[0][0])
    if pos[0] != len(lines):
        raise SpecError(f"{path}:{lines[pos[0]][2]}: unexpected indentation")
    return doc


# ---------------------------------------------------------------------------
# Shapes, as convgen derives them (docs/spec.md).

ACTS = {"relu": "ReLU", "tanh": "Tanh", "relu6": "ReLU6", "sigmoid": "Sigmoid"}


def layer_inputs(l, prev, shapes, path, name):
    """The tensors a layer reads: its 'input' (a name or a list), by default the layer before."""
    given = l.get("input", prev)
    names = given if isinstance(given, list) else [given]
    for n in names:
        if n not in shapes:
            raise SpecError(f"{path}: layer '{name}': input '{n}' is no earlier layer")
    return names


def layer_table(spec, path):
    """Each layer with its input and output shape and the tensors it reads (`inputs`: layer
    names, "input" for the network's); conv layers also get CH, CW (before pooling)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("layers"), list):
        raise SpecError(f"{path}: no 'layers' sequence")
    inp = spec.get("input") or {}
    try:
        c, h, w = int(inp["channels"]), int(inp["height"]), int(inp["width"])
    except (KeyError, TypeError, ValueError):
        raise SpecError(f"{path}: input.channels, .height and .width are required integers")
    out, shapes, prev = [], {"input": (c, h, w)}, "input"
    for l in spec["layers"]:
        name, op = l.get("name"), l.get("op")
        inputs = layer_inputs(l, prev, shapes, path, name)
        c, h, w = shapes[inputs[0]]
        row = dict(name=name, op=op, C=c, H=h, W=w, bias=bool(l.get("bias", op == "fc")), inputs=inputs,
                   act=l.get("activation", "none"), pool=l.get("pool", "none"))
        if op in ("add", "concat"):
            if len(inputs) < 2:
                raise SpecError(f"{path}: layer '{name}': {op} reads at least two tensors")
            if op == "concat":
                c = sum(shapes[n][0] for n in inputs)
        elif len(inputs) != 1:
            raise SpecError(f"{path}: layer '{name}': {op} reads one tensor")
        if op == "conv":
            for key, have in (("C", c), ("H", h), ("W", w)):
                if key in l and l[key] != have:
                    raise SpecError(f"{path}: layer '{name}': {key} is {l[key]}, the previous output gives {have}")
            m, k = l.get("M"), l.get("K")
            if not isinstance(m, int) or not isinstance(k, int) or m < 1 or k < 1:
                raise SpecError(f"{path}: layer '{name}': M and K must be positive integers")
            pad, stride = conv_padding(l, k, path, name), l.get("stride", 1)
            if not isinstance(stride, int) or stride < 1:
                raise SpecError(f"{path}: layer '{name}': stride must be a positive integer")
            groups = l.get("groups", 1)
            if not isinstance(groups, int) or groups < 1 or c % groups or m % groups:
                raise SpecError(f"{path}: layer '{name}': groups {groups!r} must divide C={c} and M={m}")
            ph, pw = h + pad[0] + pad[2], w + pad[1] + pad[3]
            if k > ph or k > pw:
                raise SpecError(f"{path}: layer '{name}': K={k} is larger than the input {ph}x{pw}"
                                + (" with its padding" if any(pad) else ""))
            ch, cw = (ph - k) // stride + 1, (pw - k) // stride + 1
            row.update(M=m, K=k, CH=ch, CW=cw, pad=pad, stride=stride, groups=groups)
            kind, pk, ps = conv_pool(l, path, name)
            pp = l.get("pool_padding", 0)
            row.update(pool_kind=kind, PK=pk, PS=ps, PP=pp)
            if kind == "global_avg":
                ch, cw = 1, 1
            elif kind != "none":
                if ch + 2 * pp < pk or cw + 2 * pp < pk:
                    raise SpecError(f"{path}: layer '{name}': {row['pool']} needs a conv output of at least {pk}x{pk}")
                ch, cw = (ch + 2 * pp - pk) // ps + 1, (cw + 2 * pp - pk) // ps + 1
            c, h, w = m, ch, cw
        elif op == "fc":
            if not isinstance(l.get("out"), int) or l["out"] < 1:
                raise SpecError(f"{path}: layer '{name}': 'out' must be a positive integer")
            row["out"] = l["out"]
            c, h, w = l["out"], 1, 1
        elif op == "batchnorm":
            row["eps"] = float(l.get("eps", 1e-5))
        elif op not in ("softmax", "add", "concat"):
            raise SpecError(f"{path}: layer '{name}': op '{op}'")
        if row["act"] != "none" and row["act"] not in ACTS:
            raise SpecError(f"{path}: layer '{name}': activation '{row['act']}'")
        row.update(OC=c, OH=h, OW=w)
        out.append(row)
        shapes[name], prev = (c, h, w), name
    return out


def is_graph(layers):
    """True when some layer reads other than the layer before it (or several tensors)."""
    prev = "input"
    for l in layers:
        if l["inputs"] != [prev]:
            return True
        prev = l["name"]
    return False


def conv_padding(l, k, path, name):
    """[top, left, bottom, right] from a conv's 'padding' (an integer, four, same or valid)."""
    p = l.get("padding", 0)
    if p == "valid":
        return [0, 0, 0, 0]
    if p == "same":
        if k % 2 == 0 or l.get("stride", 1) != 1:
            raise SpecError(f"{path}: layer '{name}': padding same needs an odd K and stride 1")
        return [(k - 1) // 2] * 4
    pad = [p] * 4 if isinstance(p, int) else p
    if not isinstance(pad, list) or len(pad) != 4 or not all(isinstance(x, int) and 0 <= x < k for x in pad):
        raise SpecError(f"{path}: layer '{name}': padding {p!r}")
    return pad


def conv_pool(l, path, name):
    """(kind, window, stride) of a conv's pool: none, max or avg K with pool_stride, global_avg."""
    pool = l.get("pool", "none")
    if pool in ("none", "global_avg"):
        return pool, 0, 0
    mt = re.fullmatch(r"(max|avg)([1-9][0-9]*)", str(pool))
    if not mt or int(mt.group(2)) < 2:
        raise SpecError(f"{path}: layer '{name}': pool '{pool}'")
    k = int(mt.group(2))
    return mt.group(1), k, l.get("pool_stride", k)


def torch_padding(l):
    """Conv2d's padding argument when the padding is the same top and bottom, left and
    right (cuDNN pads itself); None when it is not (the input is padded beforehand)."""
    t, lf, b, r = l["pad"]
    return (t, lf) if t == b and lf == r else None


def load_spec(path):
    """(spec dict, layer table) for one spec file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as ex:
        raise SpecError(f"{path}: {ex.strerror}")
    spec = parse_yaml("\n".join(join_flows(text.splitlines())) + "\n", path)
    return spec, layer_table(spec, path)


def join_flows(lines):
    """`lines` with each flow mapping that spans several lines on its first (comments
    removed), the lines it took left blank so that line numbers stay (the reader takes
    flow collections on one line only)."""
    out, i = [], 0
    while i < len(lines):
        if opens_flow(lines[i]):
            j, text = flow_lines(lines, i)
            out += [text] + [""] * (j - i - 1)
            i = j
        else:
            out.append(lines[i])
            i += 1
    return out


def drop_flow_choices(text, path, n):
    """A flow-style layer's mapping `text` ({name: ..., strategy: S, params: {...}}, its
    comments removed) less its strategy and params entries; SpecError where a params
    mapping nests another."""
    text = re.sub(r",\s*strategy:\s*[^,}]+", "", text)
    m = re.search(r",\s*params:\s*\{", text)
    if m:
        end = text.index("}", m.end())
        if "{" in text[m.end():end]:
            raise SpecError(f"{path}:{n}: a flow-style layer whose params nest a mapping")
        text = text[:m.start()] + text[end + 1:]
    return text


def opens_flow(line):
    """Whether `line` starts a flow mapping: a layer's ({...}) or one left open at its end."""
    code = line.split("#")[0]
    return code.lstrip("- ").startswith("{") or code.count("{") > code.count("}")


def flow_lines(lines, i):
    """The index past the last line of the flow mapping that starts on lines[i] (braces
    balanced, comments ignored) and the mapping's text on one line, comments removed."""
    depth, parts = 0, []
    while i < len(lines):
        code = lines[i].split("#")[0]
        parts.append(code.strip() if parts else code.rstrip())
        depth += code.count("{") - code.count("}")
        i += 1
        if depth <= 0:
            break
    return i, " ".join(parts)


def drop_choices(lines, path):
    """`lines` of a spec less its layers' `strategy:` and `params:` keys (block style: a
    params mapping on the lines below it, indented deeper, goes too; flow style
    ({name: ..., strategy: ..., params: {...}}, over one line or several, joined on its
    first: join_flows): the entries)."""
    out, depth = [], None
    for n, line in enumerate(join_flows(lines), 1):
        body = line.lstrip()
        indent = len(line) - len(body)
        if depth is not None and body and indent > depth:
            continue
        depth = None
        if line.lstrip("- ").startswith("{") and ("strategy:" in line or "params:" in line):
            out.append(drop_flow_choices(line, path, n))
            continue
        if body.startswith(("strategy:", "params:")) and indent > 0:
            if body.startswith("params:") and not body[len("params:"):].split("#")[0].strip():
                depth = indent
            continue
        out.append(line)
    return out


def precision_copy(path, precision, auto=False):
    """(path, text) of a copy of spec `path` with `precision: P` after its top-level
    'network:' line (any top-level precision line dropped), beside it (.prec-P-NAME.yaml)
    so that relative paths in it still resolve; checked to read back as the same layers
    at P. With `auto`, the layers' strategy and params are dropped too (drop_choices: the
    course specs name FP32 templates, which a copy would otherwise keep at P). Nothing is
    written."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("precision:")]
    except OSError as ex:
        raise SpecError(f"{path}: {ex.strerror}")
    if auto:
        lines = drop_choices(lines, path)
    out, done = [], False
    for line in lines:
        out.append(line)
        if not done and line.startswith("network:"):
            out.append(f"precision: {precision}")
            done = True
    if not done:
        raise SpecError(f"{path}: no top-level 'network:' line to put the precision after")
    copy = os.path.join(os.path.dirname(path) or ".", f".prec-{precision}-{os.path.basename(path)}")
    text = "\n".join(out) + "\n"
    again = parse_yaml(text, copy)
    if again.get("precision") != precision or layer_table(again, copy) != load_spec(path)[1]:
        raise SpecError(f"{path}: its copy with precision: {precision} does not read back as the same layers")
    return copy, text


def precision_spec(path, precision, auto=False):
    """Write precision_copy's copy of spec `path` and return its path; the caller removes it."""
    copy, text = precision_copy(path, precision, auto)
    try:
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text)
    except BaseException:
        if os.path.exists(copy):
            os.remove(copy)
        raise
    return copy


def torch_precision_text(precision):
    """The tensor type, memory format and flags PyTorch runs at `precision`, in words."""
    if precision in TORCH_DTYPES:
        return f"dtype=torch.{TORCH_DTYPES[precision]}, memory_format=torch.channels_last (weights and input)"
    if precision == "tf32":
        return ("dtype=torch.float32, torch.backends.cudnn.allow_tf32 = True, "
                "torch.backends.cuda.matmul.allow_tf32 = True")
    return "dtype=torch.float32, TF32 off"


def peak_text(precision):
    """What a fraction of peak at `precision` is a fraction of, in words."""
    if precision in TENSOR_FLOP_PER_CLOCK:
        return (f"the dense {precision} tensor-core peak (SMs x {TENSOR_FLOP_PER_CLOCK[precision]} FLOP a clock, "
                "half that before sm_90, x the max SM clock)")
    return "the FP32 FMA peak (SMs x FP32 lanes x 2 x the max SM clock)"


def conv_gflop(l, n):
    """Direct-convolution work of a conv layer over n images, in GFLOP (2 per FMA; C/groups
    channels per map)."""
    return 2.0 * n * l["M"] * (l["C"] // l.get("groups", 1)) * l["K"] * l["K"] * l["CH"] * l["CW"] / 1e9


def shape_text(l):
    """'C32 26x26 -> M32 K3 relu pool -> 32x12x12' for a conv layer."""
    t, lf, b, r = l["pad"]
    pad = "" if not any(l["pad"]) else f"p{t}" if t == lf == b == r else f"p{t},{lf},{b},{r}"
    kind, pool = l["pool_kind"], ""
    if kind == "global_avg":
        pool = "gavg"
    elif kind == "max" and l["PK"] == 2 and l["PS"] == 2:
        pool = "pool"
    elif kind != "none":
        pool = f"{kind}{l['PK']}" + (f"/{l['PS']}" if l["PS"] != l["PK"] else "")
    extra = "".join(f" {x}" for x in (pad, f"s{l['stride']}" if l["stride"] > 1 else "",
                                        l["act"] if l["act"] != "none" else "", pool,
                                        "bias" if l["bias"] else "") if x)
    return f"C{l['C']} {l['H']}x{l['W']} -> M{l['M']} K{l['K']}{extra} -> {l['OC']}x{l['OH']}x{l['OW']}"


def torch_plan(layers):
    """The PyTorch modules equivalent to the spec: (layer, class in torch.nn, args, kwargs).
    An fc or softmax reading maps starts with a Flatten; add and concat are the
    pseudo-modules "Add" and "Cat", which build_model's forward carries out."""
    plan, flat_of = [], {"input": False}
    for l in layers:
        flat = flat_of[l["inputs"][0]]
        flat_of[l["name"]] = flat or l["op"] in ("fc", "softmax")
        if l["op"] == "conv":
            kw = {"bias": l["bias"]}
            if l["stride"] > 1:
                kw["stride"] = l["stride"]
            if l["groups"] > 1:
                kw["groups"] = l["groups"]
            if any(l["pad"]):
                sym = torch_padding(l)
                if sym:
                    kw["padding"] = sym
                else:
                    t, lf, b, r = l["pad"]
                    plan.append((l["name"], "ZeroPad2d", ((lf, r, t, b),), {}))
            plan.append((l["name"], "Conv2d", (l["C"], l["M"], l["K"]), kw))
        elif l["op"] == "fc":
            if not flat:
                plan.append((l["name"], "Flatten", (), {}))
            plan.append((l["name"], "Linear", (l["C"] * l["H"] * l["W"], l["out"]), {"bias": l["bias"]}))
        elif l["op"] == "batchnorm":
            plan.append((l["name"], "BatchNorm2d", (l["C"],), {"eps": l["eps"]}))
        elif l["op"] in ("add", "concat"):
            plan.append((l["name"], "Add" if l["op"] == "add" else "Cat", (), {}))
        else:
            if not flat:
                plan.append((l["name"], "Flatten", (), {}))
            plan.append((l["name"], "Softmax", (), {"dim": 1}))
        if l["op"] != "softmax" and l["act"] != "none":
            plan.append((l["name"], ACTS[l["act"]], (), {}))
        if l["op"] == "conv" and l["pool_kind"] == "global_avg":
            plan.append((l["name"], "AdaptiveAvgPool2d", (1,), {}))
        elif l["op"] == "conv" and l["pool_kind"] != "none":
            kw = {} if l["PS"] == l["PK"] else {"stride": l["PS"]}
            if l["PP"]:
                kw["padding"] = l["PP"]  # AvgPool2d counts the padding (count_include_pad), as convgen does
            plan.append((l["name"], "MaxPool2d" if l["pool_kind"] == "max" else "AvgPool2d", (l["PK"],), kw))
    return plan


def build_model(torch, layers):
    """The spec's network in PyTorch, random weights: an nn.Sequential for a chain, else a
    module running each layer's nn.Sequential on the tensors it reads. Also each layer's
    modules (name -> list)."""
    nn = torch.nn
    mods_of, seqs = {}, {}
    for name, cls, a, kw in torch_plan(layers):
        mods = mods_of.setdefault(name, [])
        if cls not in ("Add", "Cat"):
            mods.append(getattr(nn, cls)(*a, **kw))
    if not is_graph(layers):
        return nn.Sequential(*[m for l in layers for m in mods_of.get(l["name"], [])]).cuda().eval(), mods_of

    class Graph(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleDict({l["name"]: nn.Sequential(*mods_of.get(l["name"], [])) for l in layers})

        def forward(self, x):
            t = {"input": x}
            for l in layers:
                ins = [t[n] for n in l["inputs"]]
                if l["op"] == "add":
                    y = ins[0]
                    for z in ins[1:]:
                        y = y + z
                elif l["op"] == "concat":
                    y = torch.cat(ins, 1)
                else:
                    y = ins[0]
                t[l["name"]] = self.layers[l["name"]](y)
            return t[layers[-1]["name"]]

    return Graph().cuda().eval(), mods_of


def plan_text(entry):
    _, cls, args, kw = entry
    return f"{cls}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kw.items()])})"


def dry_run(specs, batch, precision="fp32", copies=None, auto=False):
    """Print what a real run would measure, without PyTorch; for a precision other than
    fp32, also the spec copy convgen would run (copies: spec path -> copy path), PyTorch's
    type and layout and the peak."""
    for path, spec, layers in specs:
        print(f"== {spec.get('network', '?')} ({path}): input {layers[0]['C']}x{layers[0]['H']}x{layers[0]['W']}, "
              f"batch {batch}")
        if precision != "fp32":
            print(f"   precision {precision}: convgen runs {copies[path]} (the spec with precision: {precision}"
                  f"{', less its layers strategy and params' if auto else ''}, written beside it and removed after)")
            print(f"   precision {precision}: PyTorch {torch_precision_text(precision)}")
            print(f"   precision {precision}: % peak = fraction of {peak_text(precision)}")
        print(f"   {'layer':12} {'op':8} {'shape':52} {'C*K*K':>7} {'GFLOP':>9}")
        for l in layers:
            if l["op"] == "conv":
                print(f"   {l['name']:12} {'conv':8} {shape_text(l):52} {l['C'] * l['K'] ** 2:7d} "
                      f"{conv_gflop(l, batch):9.2f}")
            elif l["op"] == "fc":
                desc = f"{l['C'] * l['H'] * l['W']} -> {l['out']}" + (" " + l["act"] if l["act"] != "none" else "")
                print(f"   {l['name']:12} {'fc':8} {desc:52}")
            else:
                size = l["OC"] * l["OH"] * l["OW"] if l["op"] == "softmax" else f"{l['OC']}x{l['OH']}x{l['OW']}"
                print(f"   {l['name']:12} {l['op']:8} {size}")
        graph = is_graph(layers)
        print("   a torch.nn.Sequential( per layer, on the tensors each reads:" if graph else "   torch.nn.Sequential(")
        for entry in torch_plan(layers):
            reads = next(("".join(f" <- {', '.join(l['inputs'])}") for l in layers if l["name"] == entry[0]), "")
            print(f"       {plan_text(entry)},  # {entry[0]}" + (reads if graph else ""))
        print("   )")


# ---------------------------------------------------------------------------
# convgen's side.

def run_convgen(cmd):
    """Run one convgen command; any failure ends the comparison."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as ex:
        raise CheckError(f"{cmd[0]}: {ex.strerror} (build it with make build/convgen)")
    if r.returncode != 0:
        raise CheckError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def convgen_templates(convgen, path, layers, arch=None):
    """Layer name -> 'template params' from `convgen generate` (for the architecture the
    JIT compiled for, so the choice is the one the run made); checks the tensor sizes."""
    with tempfile.TemporaryDirectory() as d:
        run_convgen([convgen, "generate", path, "-o", d] + (["--arch", arch] if arch else []))
        with open(os.path.join(d, "manifest.txt")) as f:
            manifest = f.read().splitlines()
        tensors, chosen, layer_tensor = {}, {}, {}
        for line in manifest:
            w = line.split()
            if w[:1] == ["tensor"]:
                tensors[w[1]] = int(w[3])
            elif w[:1] == ["layer"] and len(w) >= 4:
                # the tensor holding the layer's output: its own, or (a batch norm folded
                # into its conv, a conv computing an add: into=ADD) the one it shares
                layer_tensor[w[1]] = w[3]
            elif w[:1] == ["kernel"]:
                kv = dict(x.split("=", 1) for x in w[2:] if "=" in x)
                if kv.get("template", "").startswith("conv2d_"):
                    with open(os.path.join(d, w[1] + ".cu")) as f:
                        head = f.read(4096)
                    m = re.search(r"^// params:\s*(.*)$", head, re.M)
                    chosen[kv["layer"]] = kv["template"] + (f" ({m.group(1)})" if m else "")
    for l in layers:
        want = l["OC"] * l["OH"] * l["OW"]
        have = tensors.get(layer_tensor.get(l["name"], l["name"]))
        if have != want:
            raise CheckError(f"{path}: layer '{l['name']}': convgen's manifest has {have} "
                             f"elements per image, this script derived {want}")
        if l["op"] == "conv" and l["name"] not in chosen:
            raise CheckError(f"{path}: layer '{l['name']}': no conv2d_* kernel in convgen's manifest")
    return chosen


def convgen_times(convgen, path, layers, args, fatbin=None, named=None):
    """convgen's own medians: {'layers': {name: ms}, 'total': ms, 'device': ...}. named: the
    spec whose tuning record applies where path is its precision copy (path itself if None)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run.json")
        cmd = [convgen, "run", path, "--backend", "cuda", "--random-input", "1", "--images", str(args.batch),
               "--repeat", str(args.repeat), "--json", out]
        if fatbin:
            cmd += ["--fatbin", fatbin]
        named = named or path
        record = os.path.join(args.tuning_dir, os.path.basename(named)[:-len(".yaml")] + ".tuning.yaml") \
            if args.tuning_dir else None
        if not record and named != path:
            # the spec's own record, which convgen run would look for beside the copy's name
            record = re.sub(r"\.ya?ml$", "", named) + ".tuning.yaml"
        if record and os.path.exists(record):
            cmd += ["--tuning", record]
        run_convgen(cmd)
        with open(out) as f:
            j = json.load(f)
    if j.get("backend") != "cuda" or j.get("images") != args.batch:
        raise CheckError(f"{path}: convgen ran on {j.get('backend')} with {j.get('images')} images")
    names = [x["name"] for x in j["layers"]]
    if names != [l["name"] for l in layers]:
        raise CheckError(f"{path}: convgen's layers {names} are not the spec's")
    times = {x["name"]: x["time_s"] * 1e3 for x in j["layers"]}
    for l in layers:
        if l["op"] == "conv" and not (times[l["name"]] > 0 and math.isfinite(times[l["name"]])):
            raise CheckError(f"{path}: layer '{l['name']}': convgen reported {times[l['name']]} ms")
    # layers whose kernel came from the spec's tuning record (run applies it; generate does not)
    tuned = {x["name"]: f"conv2d_{x['tuned']['strategy']} ({x['tuned']['params']}), tuned"
             for x in j["layers"] if x.get("tuned") and x["op"] == "conv"}
    # the architecture the JIT compiled for ("sm_90", "compute_120 (PTX)"; "fatbin": none)
    arch = re.match(r"(?:sm|compute)_(\d+)", j.get("arch") or "")
    return {"layers": times, "total": j["total_s"] * 1e3, "device": j.get("device", "?"), "tuned": tuned,
            "arch": arch.group(1) if arch else None}


# ---------------------------------------------------------------------------
# PyTorch's side (imported only for a real run).

def algo_class(names):
    """cuDNN's algorithm class from the CUDA kernel names one convolution ran."""
    low = [n.lower() for n in names]
    if any("winograd" in n for n in low):
        return "Winograd"
    if any("fft" in n for n in low):
        return "FFT"
    if any("precomp" in n for n in low):
        return "implicit GEMM precomputed"
    if any(k in n for n in low for k in ("implicit_gemm", "igemm", "sgemm", "xmma_fprop", "cutlass", "gemm")):
        return "implicit GEMM"
    return None


def fp32_lanes(p):
    """FP32 lanes an SM of device properties p."""
    return 64 if (p.major, p.minor) in ((6, 0), (7, 0), (7, 5), (8, 0)) else 128


def fp32_peak(torch):
    """(TFLOP/s, description): SMs x FP32 lanes x 2 x max SM clock of device 0."""
    p = torch.cuda.get_device_properties(0)
    lanes = fp32_lanes(p)
    mhz, src = None, None
    try:
        r = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
        mhz, src = float(r.stdout.strip().splitlines()[0]), "nvidia-smi clocks.max.sm"
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        pass
    if mhz is None and getattr(p, "clock_rate", 0):
        mhz, src = p.clock_rate / 1e3, "device properties clock_rate"
    if mhz is None and ("H100" in p.name or "H200" in p.name):
        mhz, src = 1980.0, "H100/H200 SXM boost clock 1980 MHz (documented constant)"
    if mhz is None:
        raise CheckError(f"{p.name}: no SM clock from nvidia-smi or the device properties")
    peak = p.multi_processor_count * lanes * 2 * mhz * 1e6 / 1e12
    return peak, (f"{p.name}, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs x {lanes} FP32 lanes x 2 x "
                  f"{mhz:.0f} MHz ({src}) = {peak:.1f} TFLOP/s FP32 FMA peak")


def tensor_peak(torch, precision):
    """Dense tensor-core TFLOP/s of device 0 at `precision` (None for fp32): SMs x
    TENSOR_FLOP_PER_CLOCK (half before sm_90) x the max SM clock fp32_peak found."""
    if precision not in TENSOR_FLOP_PER_CLOCK:
        return None
    p = torch.cuda.get_device_properties(0)
    fp32, _ = fp32_peak(torch)
    mhz = fp32 * 1e12 / (p.multi_processor_count * fp32_lanes(p) * 2) / 1e6
    per = TENSOR_FLOP_PER_CLOCK[precision] // (2 if p.major < 9 else 1)
    return p.multi_processor_count * per * mhz * 1e6 / 1e12


def torch_precision(torch, precision):
    """Set PyTorch's TF32 flags for `precision` (on for tf32 only) and return the tensor
    type weights and input take (None: they stay torch.float32)."""
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    return getattr(torch, TORCH_DTYPES[precision]) if precision in TORCH_DTYPES else None


def cast_model(torch, m, dtype):
    """Module m in dtype, channels-last (as it is where dtype is None)."""
    return m if dtype is None else m.to(dtype=dtype, memory_format=torch.channels_last)


def cast_input(torch, x, dtype):
    """Tensor x in dtype, channels-last (as it is where dtype is None)."""
    return x if dtype is None else x.to(dtype=dtype).contiguous(memory_format=torch.channels_last)


class Torch:
    """The PyTorch measurements, in one place so that torch is imported only here."""

    def __init__(self, repeat, precision="fp32"):
        try:
            import torch
        except ImportError as ex:
            raise RuntimeError(f"no PyTorch ({ex})")
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no GPU")
        self.torch, self.repeat = torch, repeat
        torch.backends.cudnn.benchmark = True
        self.dtype = torch_precision(torch, precision)
        torch.manual_seed(0)
        self.flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")

    def timed(self, fn, warmup=5):
        """Median CUDA-event time of fn() in ms, L2 flushed before each call."""
        torch = self.torch
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.repeat):
            self.flush.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times)

    def kernels(self, fn):
        """(name, microseconds) of every CUDA kernel one call of fn() ran."""
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        out = []
        for e in prof.events():
            if str(getattr(e, "device_type", "")).endswith("CUDA"):
                try:
                    us = e.time_range.elapsed_us()
                except AttributeError:
                    us = getattr(e, "device_time", 0)
                out.append((e.name, us))
        if not out:  # older or newer profilers: the raw Kineto events
            try:
                for ke in prof.profiler.kineto_results.events():
                    if str(ke.device_type()).endswith("CUDA"):
                        out.append((ke.name(), ke.duration_ns() / 1e3))
            except AttributeError:
                pass
        return out

    def build(self, layers):
        """The spec's network in PyTorch (random weights; in the precision's type and
        channels-last for bf16 and fp16, the modules converted in place) and each layer's modules."""
        model, mods_of = build_model(self.torch, layers)
        return cast_model(self.torch, model, self.dtype), mods_of

    def input(self, *shape):
        """A random input of that shape on the device, in the precision's type and layout."""
        return cast_input(self.torch, self.torch.rand(*shape, device="cuda"), self.dtype)


def fmt(x, spec):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0].split("— ", 1)[-1])
    ap.add_argument("specs", nargs="*", metavar="SPEC", help="spec files (default: the three course networks)")
    ap.add_argument("--batch", "--images", type=int, default=10000, help="images per run (default 10000)")
    ap.add_argument("--repeat", type=int, default=50, help="timed repeats, median reported (default 50)")
    ap.add_argument("--convgen", default=os.path.join(ROOT, "build", "convgen"), help="convgen binary")
    ap.add_argument("--fatbin-dir", default=os.path.join(ROOT, "build", "fatbin"),
                    help="also time NETWORK.fatbin from here when it exists")
    ap.add_argument("--tuning-dir", metavar="DIR",
                    help="run each SPEC with DIR/SPEC-NAME.tuning.yaml where it exists (else SPEC's own record, "
                         "as convgen run does), e.g. bench/tune/h100")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile max-autotune of each network")
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS,
                    help="convgen's spec precision (a .prec-P-NAME.yaml copy) and PyTorch's (default fp32)")
    ap.add_argument("--auto", action="store_true",
                    help="with --precision P: the copy drops its layers' strategy and params (auto's choices at P)")
    ap.add_argument("--dry-run", action="store_true", help="print the layer tables and modules; no PyTorch, no GPU")
    args = ap.parse_args()
    if args.auto and args.precision == "fp32":
        ap.error("--auto needs --precision other than fp32 (it applies to the precision copy)")
    if args.batch < 1 or args.repeat < 1:
        ap.error("--batch and --repeat must be at least 1")
    paths = args.specs or [os.path.join(ROOT, p) for p in DEFAULT_SPECS]
    try:
        specs = [(p,) + load_spec(p) for p in paths]
    except SpecError as ex:
        print(f"compare.py: {ex}", file=sys.stderr)
        return 3
    try:
        # the precision copies' names, checked now (written only when convgen runs)
        copies = {p: precision_copy(p, args.precision, args.auto)[0] if args.precision != "fp32" else p for p in paths}
    except SpecError as ex:
        print(f"compare.py: {ex}", file=sys.stderr)
        return 3
    for p, spec, layers in specs:
        if not any(l["op"] == "conv" for l in layers):
            # an fc-only network (zoo-mlp) still gets its whole-network row
            print(f"compare.py: {p}: no conv layer; the whole network only", file=sys.stderr)
    if args.dry_run:
        dry_run(specs, args.batch, args.precision, copies, args.auto)
        return 0

    # convgen first, before PyTorch holds device memory
    ours = []
    try:
        for p, spec, layers in specs:
            run = precision_spec(p, args.precision, args.auto) if args.precision != "fp32" else p
            try:
                print(f"convgen: {run}", file=sys.stderr)
                jit = convgen_times(args.convgen, run, layers, args, named=p)
                chosen = convgen_templates(args.convgen, run, layers, jit["arch"])
                chosen.update(jit["tuned"])
                fb_path = os.path.join(args.fatbin_dir, spec["network"] + ".fatbin")
                fb = None
                if os.path.exists(fb_path) and run != p:
                    print(f"compare.py: {fb_path} holds the spec's own kernels: not timed at {args.precision}",
                          file=sys.stderr)
                elif os.path.exists(fb_path):
                    fb = convgen_times(args.convgen, p, layers, args, fb_path)
            finally:
                if run != p:
                    os.remove(run)
            ours.append((chosen, jit, fb))
    except (CheckError, SpecError, OSError) as ex:
        print(f"compare.py: {ex}", file=sys.stderr)
        return 1
    try:
        T = Torch(args.repeat, args.precision)
    except RuntimeError as ex:
        print(f"compare.py: {ex}", file=sys.stderr)
        return 4
    torch = T.torch
    peak, card = fp32_peak(torch)
    # the peak each layer's fraction is of: the FP32 FMA peak, or P's dense tensor-core peak
    tpeak = tensor_peak(torch, args.precision)
    ppeak = tpeak or peak
    print(f"device: {card}")
    print(f"convgen reports device: {ours[0][1]['device']}; torch {torch.__version__}, cuDNN "
          f"{torch.backends.cudnn.version()}, batch {args.batch}, median of {args.repeat}")
    if tpeak:
        print(f"precision {args.precision}: convgen runs each spec with precision: {args.precision}; PyTorch "
              f"{torch_precision_text(args.precision)}; dense {args.precision} tensor-core peak {tpeak:.1f} TFLOP/s")

    problems, conv_rows, net_rows = [], [], []
    with torch.inference_mode():
        for (p, spec, layers), (chosen, jit, fb) in zip(specs, ours):
            net = spec["network"]
            model, mods_of = T.build(layers)
            for l in layers:
                if l["op"] != "conv":
                    continue
                print(f"cuDNN: {net} {l['name']}", file=sys.stderr)
                weight = next(m for m in mods_of[l["name"]] if hasattr(m, "weight")).weight
                if weight.dtype != (T.dtype or torch.float32):
                    problems.append(f"{net} {l['name']}: PyTorch weight in {weight.dtype}")
                # the bare convolution with the layer's stride and padding; uneven
                # padding is added to the input beforehand (same work for cuDNN)
                sym = torch_padding(l)
                conv = lambda t: torch.nn.functional.conv2d(t, weight, stride=l["stride"],  # noqa: E731
                                                            padding=sym or 0, groups=l["groups"])
                t, lf, b, r = l["pad"]
                xh, xw = (l["H"], l["W"]) if sym else (l["H"] + t + b, l["W"] + lf + r)
                x = T.input(args.batch, l["C"], xh, xw)
                y = conv(x)
                if tuple(y.shape) != (args.batch, l["M"], l["CH"], l["CW"]):
                    problems.append(f"{net} {l['name']}: PyTorch output {tuple(y.shape)}")
                del y
                ms = T.timed(lambda: conv(x))
                ks = T.kernels(lambda: conv(x))
                del x
                if not ks:
                    problems.append(f"{net} {l['name']}: torch.profiler recorded no CUDA kernel")
                main_k = max(ks, key=lambda k: k[1])[0] if ks else "?"
                algo = algo_class([k[0] for k in ks]) or main_k[:60]
                g = conv_gflop(l, args.batch)
                cg = jit["layers"][l["name"]]
                goal = "–"
                if l["C"] >= 16:
                    goal = "met" if g / cg >= min(g / ms / 1.2, 0.75 * ppeak) else "missed"
                conv_rows.append([net, l["name"], shape_text(l), chosen[l["name"]], g, cg,
                                  fb["layers"][l["name"]] if fb else None, ms, algo, goal, main_k])
                torch.cuda.empty_cache()
            x = T.input(args.batch, layers[0]["C"], layers[0]["H"], layers[0]["W"])
            print(f"eager: {net}", file=sys.stderr)
            out = model(x)
            if out.numel() != args.batch * layers[-1]["OC"] * layers[-1]["OH"] * layers[-1]["OW"]:
                problems.append(f"{net}: PyTorch network output {tuple(out.shape)}")
            del out
            eager = T.timed(lambda: model(x))
            comp = None
            if args.compile:
                cm = torch.compile(model, mode="max-autotune")
                comp = T.timed(lambda: cm(x))
            net_rows.append([net, jit["total"], fb["total"] if fb else None, eager, comp])
            del x, model
            torch.cuda.empty_cache()

    print("\ncuDNN kernels (the longest of each call):")
    for r in conv_rows:
        print(f"  {r[0]} {r[1]}: {r[10]}")
    if tpeak:
        pk = f"% {args.precision} tensor peak"
        print(f"\nConv layers, batch {args.batch}, {args.precision.upper()} (convgen: the spec with precision: "
              f"{args.precision}{', strategies and params dropped' if args.auto else ''}; cuDNN: {torch_precision_text(args.precision)}); GFLOP = 2*N*M*C*K*K*OH*OW "
              f"(direct convolution, before pooling); {pk} = fraction of the dense {args.precision} tensor-core peak "
              f"of {tpeak:.1f} TFLOP/s; ratio = convgen time / cuDNN time; goal (C >= 16): convgen reaches the "
              f"lower of cuDNN/1.2 and 75% of that peak.\n")
    else:
        pk = "% peak"
        print(f"\nConv layers, batch {args.batch}, FP32; GFLOP = 2*N*M*C*K*K*OH*OW (direct convolution, "
              f"before pooling); % peak of {peak:.1f} TFLOP/s; ratio = convgen time / cuDNN time; goal (C >= 16): "
              f"convgen reaches the lower of cuDNN/1.2 and 75% of peak.\n")
    print(f"| network | layer | shape | convgen template | GFLOP | convgen ms | convgen TFLOP/s | convgen {pk} "
          f"| convgen fatbin ms | cuDNN ms | cuDNN TFLOP/s | cuDNN {pk} | cuDNN algorithm | convgen/cuDNN | goal |")
    print("|" + "---|" * 15)
    for net, name, shp, tpl, g, cg, cgfb, ms, algo, goal, _ in conv_rows:
        print(f"| {net} | {name} | {shp} | {tpl} | {g:.2f} | {cg:.3f} | {g / cg:.1f} | {100 * g / cg / ppeak:.0f}% "
              f"| {fmt(cgfb, '.3f')} | {ms:.3f} | {g / ms:.1f} | {100 * g / ms / ppeak:.0f}% | {algo} "
              f"| {cg / ms:.2f} | {goal} |")
    if args.precision == "fp32":
        print(f"\nWhole networks, batch {args.batch}: convgen from its first kernel (uint8 to float) to its last "
              f"(argmax); PyTorch eager nn.Sequential on float input (ratio = convgen JIT / eager).\n")
    else:
        first = "float" if args.precision == "tf32" else args.precision  # tf32 tensors are float in memory
        print(f"\nWhole networks, batch {args.batch}, {args.precision.upper()}: convgen (the spec with precision: "
              f"{args.precision}{', strategies and params dropped' if args.auto else ''}) from its first kernel (uint8 to {first}) to its last (argmax); PyTorch eager "
              f"and torch.compile: {torch_precision_text(args.precision)} (ratio = convgen JIT / eager).\n")
    print("| network | convgen JIT ms | convgen fatbin ms | PyTorch eager ms | torch.compile ms | convgen/eager |")
    print("|---|---|---|---|---|---|")
    for net, t, tfb, eager, comp in net_rows:
        print(f"| {net} | {t:.3f} | {fmt(tfb, '.3f')} | {eager:.3f} | {fmt(comp, '.3f')} | {t / eager:.2f} |")
    if problems:
        print("\ncompare.py: checks failed:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
