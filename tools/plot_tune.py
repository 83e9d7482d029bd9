#!/usr/bin/env python3
"""plot_tune.py — one picture per layer of a `convgen tune --csv` file.

    python3 tools/plot_tune.py FILE.csv [-o DIR] [--peak TFLOPS] [--plain] [--size WxH]

For each layer, DIR/LAYER.png (DIR default: the CSV's folder) shows the times of
its candidates that were checked and timed, sorted fastest first, on a log
scale: grey dots, the default as a red square with a red vertical line, the
winner as a green ring, and the FP32-peak floor (the layer's work at the card's
FP32 FMA peak) as a blue dashed horizontal line. The peak comes from the CSV's
peak_tflops column (written by `convgen tune`), or --peak; a layer's work from
any timed row (tflops x median). Candidates that failed, spilled, gave wrong
results or were not measured are counted in the title (matplotlib) and left out.

With matplotlib installed the pictures are matplotlib's (with titles and
labels); without it, or with --plain, this file draws them itself with the
standard library alone (zlib for the PNG): the same marks, title, legend and
axis labels in a small pixel font. Exit 0, 2 on usage errors, 3 on a malformed CSV (one
line: FILE:LINE: message), 5 when a picture cannot be written.
"""
import argparse
import csv
import math
import os
import struct
import sys
import zlib

NEEDED = ("layer", "template", "params", "status", "median_ms", "score_ms", "tflops", "default")


class BadInput(Exception):
    """A malformed CSV: the message names FILE:LINE."""


def num(text, path, line, col):
    """The float in a CSV cell ('inf' allowed), or BadInput naming the cell."""
    try:
        return float(text)
    except ValueError:
        raise BadInput(f"{path}:{line}: column '{col}' holds '{text[:40]}', not a number") from None


def read_csv(path):
    """{layer: [row, ...]} in file order, and the peak the rows give (0 if none).
    A row: dict with template, params, status, score, tflops, ms, default."""
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as ex:
        raise BadInput(f"{path}: cannot open: {ex.strerror}") from None
    layers, peak = {}, 0.0
    with f:
        r = csv.reader(f)
        try:
            head = next(r)
        except StopIteration:
            raise BadInput(f"{path}:1: empty file, expected the header of `convgen tune --csv`") from None
        except csv.Error as ex:
            raise BadInput(f"{path}:1: {ex}") from None
        missing = [c for c in NEEDED if c not in head]
        if missing:
            raise BadInput(f"{path}:1: no column '{missing[0]}' in the header (is this `convgen tune --csv` output?)")
        at = {c: head.index(c) for c in head}
        try:
            for cells in r:
                line = r.line_num
                if not cells:
                    continue
                if len(cells) < len(head):
                    raise BadInput(f"{path}:{line}: {len(cells)} columns, the header has {len(head)}")
                row = {
                    "template": cells[at["template"]],
                    "params": cells[at["params"]],
                    "status": cells[at["status"]],
                    "ms": num(cells[at["median_ms"]], path, line, "median_ms"),
                    "score": num(cells[at["score_ms"]], path, line, "score_ms"),
                    "tflops": num(cells[at["tflops"]], path, line, "tflops"),
                    "default": cells[at["default"]] == "default",
                    "retimed": "retime_ms" in at and num(cells[at["retime_ms"]], path, line, "retime_ms") > 0,
                }
                if "peak_tflops" in at:
                    p = num(cells[at["peak_tflops"]], path, line, "peak_tflops")
                    if p > 0 and math.isfinite(p):
                        peak = p
                name = cells[at["layer"]]
                if not name or "/" in name or name.startswith("."):
                    raise BadInput(f"{path}:{line}: layer name '{name[:40]}' cannot name a file")
                layers.setdefault(name, []).append(row)
        except csv.Error as ex:
            raise BadInput(f"{path}:{r.line_num}: {ex}") from None
    if not layers:
        raise BadInput(f"{path}:2: no candidate rows")
    return layers, peak


def summarise(rows, peak):
    """What a layer's picture shows: sorted times, the default's and the winner's
    rank (None when not timed; the winner is convgen's: the fastest re-timed one), the floor in ms (None without a peak), and the
    count of rows left out."""
    timed = [r for r in rows if r["status"] == "ok" and math.isfinite(r["score"]) and r["score"] > 0]
    timed.sort(key=lambda r: r["score"])
    times = [r["score"] for r in timed]
    default = next((i for i, r in enumerate(timed) if r["default"]), None)
    # convgen's choice: the fastest of the re-timed, when any were (cg_tune_best)
    winner = next((i for i, r in enumerate(timed) if r["retimed"]), 0 if timed else None)
    floor = None
    if peak > 0:
        work = [r["tflops"] * r["ms"] for r in timed if r["tflops"] > 0 and r["ms"] > 0]
        if work:
            floor = work[0] / peak  # TFLOP/s x ms / (TFLOP/s) = ms
    return times, default, winner, floor, len(rows) - len(timed)


# ---- a PNG drawn with the standard library ----

# 3x5 digits and the marks a tick label needs, one row of 3 bits per line.
FONT = {
    "0": (7, 5, 5, 5, 7), "1": (2, 6, 2, 2, 7), "2": (7, 1, 7, 4, 7), "3": (7, 1, 7, 1, 7),
    "4": (5, 5, 7, 1, 1), "5": (7, 4, 7, 1, 7), "6": (7, 4, 7, 5, 7), "7": (7, 1, 2, 2, 2),
    "8": (7, 5, 7, 5, 7), "9": (7, 5, 7, 1, 7), ".": (0, 0, 0, 0, 2), "-": (0, 0, 7, 0, 0),
    "e": (0, 7, 7, 4, 7),
    # lower-case letters and the punctuation of titles, axis labels and the legend
    "a": (0, 6, 1, 7, 7), "b": (4, 4, 7, 5, 7), "c": (0, 7, 4, 4, 7), "d": (1, 1, 7, 5, 7),
    "f": (3, 4, 6, 4, 4), "g": (7, 5, 7, 1, 6), "h": (4, 4, 7, 5, 5), "i": (2, 0, 2, 2, 2),
    "j": (1, 0, 1, 5, 7), "k": (4, 5, 6, 5, 5), "l": (6, 2, 2, 2, 7), "m": (0, 7, 7, 5, 5),
    "n": (0, 6, 5, 5, 5), "o": (0, 7, 5, 5, 7), "p": (0, 7, 5, 7, 4), "q": (0, 7, 5, 7, 1),
    "r": (0, 7, 4, 4, 4), "s": (0, 3, 6, 1, 6), "t": (4, 7, 4, 4, 3), "u": (0, 5, 5, 5, 7),
    "v": (0, 5, 5, 5, 2), "w": (0, 5, 5, 7, 7), "x": (0, 5, 2, 2, 5), "y": (5, 5, 7, 1, 6),
    "z": (0, 7, 1, 4, 7), ":": (0, 2, 0, 2, 0), ",": (0, 0, 0, 2, 4), "(": (1, 2, 2, 2, 1),
    ")": (4, 2, 2, 2, 4), "/": (1, 1, 2, 4, 4), "_": (0, 0, 0, 0, 7), "=": (0, 7, 0, 7, 0),
    " ": (0, 0, 0, 0, 0),
}

WHITE, BLACK, GREY = (255, 255, 255), (0, 0, 0), (110, 110, 110)
LIGHT, RED, GREEN, BLUE = (225, 225, 225), (220, 30, 30), (0, 160, 60), (30, 80, 230)


class Canvas:
    """An RGB raster with the few strokes a plot needs."""

    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(WHITE * (w * h))

    def dot(self, x, y, c):
        x, y = int(round(x)), int(round(y))
        if 0 <= x < self.w and 0 <= y < self.h:
            i = 3 * (y * self.w + x)
            self.px[i:i + 3] = bytes(c)

    def hline(self, x0, x1, y, c, dash=0):
        for x in range(int(x0), int(x1) + 1):
            if not dash or (x // dash) % 2 == 0:
                self.dot(x, y, c)

    def vline(self, x, y0, y1, c, dash=0):
        for y in range(int(min(y0, y1)), int(max(y0, y1)) + 1):
            if not dash or (y // dash) % 2 == 0:
                self.dot(x, y, c)

    def disc(self, cx, cy, r, c, ring=False):
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                d = dx * dx + dy * dy
                if d <= r * r and (not ring or d >= (r - 2) * (r - 2)):
                    self.dot(cx + dx, cy + dy, c)

    def square(self, cx, cy, r, c):
        for dy in range(-r, r + 1):
            self.hline(cx - r, cx + r, cy + dy, c)

    def text(self, x, y, s, c, scale=2):
        """s in FONT's characters, top-left at (x, y)."""
        for ch in s:
            for row, bits in enumerate(FONT.get(ch, FONT.get(ch.lower(), (0,) * 5))):
                for col in range(3):
                    if bits & (4 >> col):
                        for sy in range(scale):
                            for sx in range(scale):
                                self.dot(x + col * scale + sx, y + row * scale + sy, c)
            x += 4 * scale

    def png(self):
        """The PNG file's bytes: 8-bit RGB, no filter."""
        raw = b"".join(b"\0" + bytes(self.px[3 * y * self.w:3 * (y + 1) * self.w]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def label(v):
    """A tick value in FONT's characters."""
    s = f"{v:.3g}"
    return s.replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")


def ticks(lo, hi):
    """Values 1, 2, 5 x 10^k within [lo, hi] (log axis), at most about 8."""
    out = []
    for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** k
            if lo <= v <= hi:
                out.append(v)
    while len(out) > 8:
        out = out[::2]
    return out


def draw_plain(times, default, winner, floor, size, title=""):
    """The picture as PNG bytes, drawn here: the title and the legend on the
    first line, the axes' labels, the marks."""
    w, h = size
    c = Canvas(w, h)
    left, right, top, bottom = 70, w - 20, 44, h - 52
    c.text(8, 2, title, BLACK)
    # the legend, right-aligned on the title's line: each mark, then its name
    items = [("candidates", GREY), ("default", RED), ("winner", GREEN)] + ([("fp32 peak", BLUE)] if floor else [])
    x = w - 8 - sum(8 * len(name) + 30 for name, _ in items)
    for name, colour in items:
        if colour == GREY:
            c.disc(x + 6, 7, 3, GREY)
        elif colour == RED:
            c.square(x + 6, 7, 4, RED)
        elif colour == GREEN:
            c.disc(x + 6, 7, 6, GREEN, ring=True)
        else:
            c.hline(x, x + 14, 7, BLUE, dash=4)
        c.text(x + 18, 2, name, BLACK)
        x += 8 * len(name) + 30
    c.text(8, top - 16, "time, ms (log)", BLACK)
    c.text((left + right) // 2 - 4 * len("candidates, fastest first"), h - 16, "candidates, fastest first", BLACK)
    vals = times + ([floor] if floor else [])
    lo = min(vals) / 1.25 if vals else 0.1
    hi = max(vals) * 1.25 if vals else 10.0
    if hi <= lo:
        hi = lo * 10

    def ypos(v):
        return bottom - (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) * (bottom - top)

    def xpos(i):
        n = max(len(times), 2)
        return left + 10 + i * (right - left - 20) / (n - 1)

    for v in ticks(lo, hi):
        y = ypos(v)
        c.hline(left, right, y, LIGHT)
        c.hline(left - 5, left, y, BLACK)
        s = label(v)
        c.text(left - 8 - 8 * len(s), int(y) - 5, s, BLACK)
    n = len(times)
    for i in sorted({0, n - 1, n // 2, n // 4, 3 * n // 4}) if n else []:
        c.vline(xpos(i), bottom, bottom + 5, BLACK)
        c.text(int(xpos(i)) - 4 * len(str(i + 1)), bottom + 10, str(i + 1), BLACK)
    c.vline(left, top, bottom, BLACK)
    c.hline(left, right, bottom, BLACK)
    if floor:
        c.hline(left, right, ypos(floor), BLUE, dash=6)
    if default is not None:
        c.vline(xpos(default), top, bottom, RED, dash=4)
    for i, v in enumerate(times):
        c.disc(xpos(i), ypos(v), 3, GREY)
    if default is not None:
        c.square(xpos(default), ypos(times[default]), 5, RED)
    if winner is not None:
        c.disc(xpos(winner), ypos(times[winner]), 8, GREEN, ring=True)
    return c.png()


def draw_matplotlib(plt, layer, times, default, winner, floor, left_out, size):
    """The picture as PNG bytes, by matplotlib."""
    import io

    fig, ax = plt.subplots(figsize=(size[0] / 100, size[1] / 100), dpi=100)
    xs = list(range(1, len(times) + 1))
    ax.scatter(xs, times, s=8, color="grey", label="candidates (checked, timed)")
    if default is not None:
        ax.axvline(default + 1, color="red", linestyle=":", linewidth=1)
        ax.scatter([default + 1], [times[default]], marker="s", s=50, color="red", label="default")
    if winner is not None:
        ax.scatter([winner + 1], [times[winner]], marker="o", s=120, facecolors="none", edgecolors="green",
                   linewidths=2, label="winner")
    if floor:
        ax.axhline(floor, color="blue", linestyle="--", label="FP32-peak floor")
    ax.set_yscale("log")
    ax.set_xlabel("candidates, fastest first")
    ax.set_ylabel("time, ms")
    ax.set_title(f"{layer}: {len(times)} timed, {left_out} failed or not measured")
    ax.legend(loc="upper left", fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


class Args(argparse.ArgumentParser):
    """argparse, with a usage error on one line."""

    def error(self, message):
        print(f"plot_tune.py: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv):
    ap = Args(prog="plot_tune.py", description="One PNG per layer of a `convgen tune --csv` file.")
    ap.add_argument("csv")
    ap.add_argument("-o", "--output", metavar="DIR", help="where the pictures go (default: the CSV's folder)")
    ap.add_argument("--peak", type=float, metavar="TFLOPS", help="the FP32 peak, over the CSV's peak_tflops")
    ap.add_argument("--plain", action="store_true", help="draw with the standard library even if matplotlib is there")
    ap.add_argument("--size", default="800x500", metavar="WxH", help="picture size in pixels (default 800x500)")
    a = ap.parse_args(argv)
    try:
        size = tuple(int(v) for v in a.size.lower().split("x"))
        if len(size) != 2 or not (200 <= size[0] <= 4000 and 150 <= size[1] <= 4000):
            raise ValueError
    except ValueError:
        ap.error(f"--size: '{a.size}' is not WxH within 200x150..4000x4000")
    if a.peak is not None and not (a.peak > 0 and math.isfinite(a.peak)):
        ap.error("--peak must be a positive number of TFLOP/s")
    try:
        layers, peak = read_csv(a.csv)
    except BadInput as ex:
        print(f"plot_tune.py: {ex}", file=sys.stderr)
        return 3
    if a.peak:
        peak = a.peak
    plt = None
    if not a.plain:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            plt = None
    out = a.output or os.path.dirname(os.path.abspath(a.csv))
    try:
        os.makedirs(out, exist_ok=True)
        for layer, rows in layers.items():
            times, default, winner, floor, left_out = summarise(rows, peak)
            data = (draw_matplotlib(plt, layer, times, default, winner, floor, left_out, size) if plt else
                    draw_plain(times, default, winner, floor, size,
                               f"{layer}: {len(times)} timed, {left_out} failed or not measured"))
            path = os.path.join(out, layer + ".png")
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)  # nothing half-written
            print(f"{path}: {len(times)} timed of {len(rows)}" + ("" if floor else ", no FP32-peak floor (no peak)"))
    except OSError as ex:
        print(f"plot_tune.py: {ex.filename or out}: {ex.strerror}", file=sys.stderr)
        return 5
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
