#!/usr/bin/env python3
"""compile_cells.py — issue 30's table with torch.compile in it: every (network, batch) cell's
convgen GPU time beside PyTorch FP32 eager, its CUDA graph and torch.compile (reduce-overhead),
all measured in one process tree on one GPU.

    python3 bench/scripts/compile_cells.py [SPEC...] [--batches 1,8,64] [--workers 12]
        [--repeat 100] [--convgen build/convgen] [--mode reduce-overhead] [--dry-run]

With no SPEC: the three course networks and every bench/specs/ network.

torch.compile takes 20-60 s a network and batch (bench/journal/2026-11.md), so a sequential
table of 27 networks at five batches would take over an hour. Here the compiling is spread
over --workers processes (each with TORCHINDUCTOR_COMPILE_THREADS=1), and the timing is not:

  1. every worker compiles its share of the cells and runs each compiled module three times
     (the CUDA graph recorded), while the main process runs each cell's convgen once
     untimed (its JIT cache filled);
  2. once every worker has finished, the cells are timed one at a time, nothing else on the
     GPU: the owning worker times PyTorch eager, the eager forward captured in a CUDA graph,
     and the compiled module, exactly as bench/latency.py does (CUDA events around one call,
     median of --repeat after 10 untimed); then the main process times convgen
     (`convgen run SPEC --random-input 1 --images B --repeat R --json F`, its GPU time).

Output: one line a cell as it is timed, then a markdown table with the best PyTorch time over
convgen's (issue 30's goal: 1.5x or more). --dry-run needs neither PyTorch nor a GPU: it lists
the cells, the PyTorch modules and the convgen commands, and exits 0.

Exit status: 0 ok, 1 a cell failed, 2 bad usage, 3 bad spec, 4 no PyTorch or GPU.
"""
import argparse
import glob
import multiprocessing as mp
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import compare  # noqa: E402
import latency  # noqa: E402


def worker(wid, cells, repeat, mode, inbox, outbox):
    """Compile `cells` ((index, path, batch) with the spec's layers and shape), report
    ready, then time a cell each time the main process asks."""
    try:
        t = latency.Torch(repeat)
    except (ImportError, RuntimeError) as err:
        outbox.put(("error", wid, str(err)))
        return
    torch = t.torch
    built = {}
    for idx, path, b, spec, layers in cells:
        t0 = time.time()
        try:
            m = t.model(layers)
            x = t.input(torch.rand(b, spec["C"], spec["H"], spec["W"], device="cuda"))
            with torch.inference_mode():
                cm = torch.compile(m, mode=mode, dynamic=False)
                for _ in range(3):
                    cm(x)
            torch.cuda.synchronize()
            built[idx] = (cm, x, spec, layers, b)
            outbox.put(("compiled", wid, idx, time.time() - t0))
        except Exception as err:  # a compile that fails is reported, its cell left out
            outbox.put(("compiled", wid, idx, -1.0, f"{type(err).__name__}: {err}"))
    outbox.put(("ready", wid))
    while True:
        msg = inbox.get()
        if msg is None:
            return
        idx = msg
        if idx not in built:
            outbox.put(("timed", wid, idx, None))
            continue
        cm, x, spec, layers, b = built[idx]
        res = t.measure(layers, spec, b, [])   # eager and its CUDA graph, as latency.py times them
        with torch.inference_mode():
            res["compile"] = t.timed(lambda: cm(x))
        outbox.put(("timed", wid, idx, res))


def receive(outbox, procs):
    """The next message from the workers; None once one of them has died without a word (a
    crash or an out-of-memory kill would otherwise leave the main process waiting forever)."""
    import queue
    while True:
        try:
            return outbox.get(timeout=10)
        except queue.Empty:
            dead = [i for i, p in enumerate(procs) if not p.is_alive()]
            if dead:
                print(f"compile_cells.py: worker {dead[0]} ended (exit code {procs[dead[0]].exitcode}) "
                      "with cells left", file=sys.stderr)
                return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--convgen", default=os.path.join("build", "convgen"))
    ap.add_argument("--mode", default="reduce-overhead")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    try:
        batches = [int(b) for b in a.batches.split(",") if b]
    except ValueError:
        print("compile_cells.py: --batches takes comma-separated integers", file=sys.stderr)
        return 2
    if not batches or min(batches) < 1 or a.repeat < 1 or a.workers < 1:
        print("compile_cells.py: batches, --repeat and --workers must be positive", file=sys.stderr)
        return 2
    specs = a.specs or compare.DEFAULT_SPECS + sorted(glob.glob(os.path.join("bench", "specs", "*.yaml")))
    cells = []
    for path in specs:
        try:
            spec, layers = compare.load_spec(path)
        except compare.SpecError as err:
            print(f"compile_cells.py: {err}", file=sys.stderr)
            return 3
        for b in batches:
            cells.append((len(cells), path, b, latency.net_info(spec), layers))
    if a.dry_run:
        for idx, path, b, spec, layers in cells:
            print(f"cell {idx}: {spec['name']} batch {b}, worker {idx % a.workers}")
            if b == batches[0]:
                for e in compare.torch_plan(layers):
                    print(f"  torch: {compare.plan_text(e)}")
            print("  " + " ".join(latency.convgen_cmd(a.convgen, path, b, a.repeat, "RUN.json")))
        return 0
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    ctx = mp.get_context("spawn")
    outbox = ctx.Queue()
    nw = min(a.workers, len(cells))
    inboxes, procs = [], []
    for w in range(nw):
        q = ctx.Queue()
        p = ctx.Process(target=worker, args=(w, [c for c in cells if c[0] % nw == w], a.repeat, a.mode, q, outbox))
        p.start()
        inboxes.append(q)
        procs.append(p)
    # phase 1: convgen's kernels compiled (untimed runs) while the workers compile theirs
    failed = 0
    t0 = time.time()
    for idx, path, b, spec, layers in cells:
        cmd = latency.convgen_cmd(a.convgen, path, b, 1, os.devnull + ".json")[:-2]
        r = subprocess.run(cmd, cwd=latency.ROOT, capture_output=True, text=True)
        if r.returncode:
            print(f"convgen {spec['name']} batch {b}: exit {r.returncode} (warm-up)", flush=True)
    print(f"convgen warm-ups done in {time.time() - t0:.0f} s", flush=True)
    ready = 0
    while ready < nw:
        msg = receive(outbox, procs)
        if msg is None:
            for p in procs:
                p.kill()
            return 1
        if msg[0] == "error":
            print(f"compile_cells.py: worker {msg[1]}: {msg[2]}", file=sys.stderr)
            for q in inboxes:
                q.put(None)
            return 4
        if msg[0] == "compiled":
            c = cells[msg[2]]
            print(f"compiled {c[3]['name']} batch {c[2]} in {msg[3]:.0f} s" + (f": {msg[4]}" if len(msg) > 4 else ""),
                  flush=True)
        elif msg[0] == "ready":
            ready += 1
    print(f"every cell compiled, {time.time() - t0:.0f} s after the start", flush=True)
    # phase 2: one cell at a time
    rows = []
    for idx, path, b, spec, layers in cells:
        inboxes[idx % nw].put(idx)
        msg = receive(outbox, procs)
        while msg is not None and msg[0] != "timed":
            msg = receive(outbox, procs)
        if msg is None:
            for p in procs:
                p.kill()
            return 1
        pt = msg[3]
        try:
            cg = latency.run_convgen(a.convgen, path, b, a.repeat)
        except RuntimeError as err:
            print(f"compile_cells.py: {err}", file=sys.stderr)
            failed = 1
            continue
        if pt is None:
            print(f"{spec['name']} batch {b}: torch.compile failed; convgen {cg[0] * 1e3:.1f} µs", flush=True)
            failed = 1
            continue
        best = min(pt.values())
        rows.append((spec["name"], b, cg, pt, best, latency.network_gflop(layers, b)))
        print(f"{spec['name']} batch {b}: convgen {cg[0] * 1e3:.1f} µs ({cg[6]}), eager {pt['eager'] * 1e3:.1f}, "
              f"graph {pt['graph'] * 1e3:.1f}, compile {pt['compile'] * 1e3:.1f}, best/convgen {best / cg[0]:.2f}x",
              flush=True)
    for q in inboxes:
        q.put(None)
    for p in procs:
        p.join()
    import torch
    peak, peak_text = compare.fp32_peak(torch)
    print(f"\ndevice: {peak_text}; PyTorch {torch.__version__}; torch.compile mode {a.mode}; times in µs")
    print("| network | batch | convgen GPU µs | GFLOP/s (% FP32 peak) | PyTorch eager | CUDA graph | "
          "torch.compile | best PyTorch / convgen |")
    print("|---|---|---|---|---|---|---|---|")
    for name, b, cg, pt, best, gf in rows:
        rate = gf / (cg[0] / 1e3)
        print(f"| {name} | {b} | {cg[0] * 1e3:.1f} | {rate:.0f} ({100 * rate / (peak * 1e3):.2f} %) | "
              f"{pt['eager'] * 1e3:.1f} | {pt['graph'] * 1e3:.1f} | {pt['compile'] * 1e3:.1f} | {best / cg[0]:.2f}x |")
    below = [r for r in rows if r[4] / r[2][0] < 1.5]
    print(f"\n{len(rows) - len(below)} of {len(rows)} cells at 1.5x or more"
          + ("; below: " + ", ".join(f"{r[0]} at {r[1]} ({r[4] / r[2][0]:.2f}x)" for r in below) if below else ""))
    return failed


if __name__ == "__main__":
    sys.exit(main())
