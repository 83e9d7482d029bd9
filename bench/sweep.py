#!/usr/bin/env python3
"""sweep.py — time one layer of a spec under several template parameter sets.

A stand-in until `convgen tune` exists: writes a variant spec per parameter set,
runs `convgen run --repeat R --json`, and prints the median time of the layer.
Every variant is also checked against the CPU reference first (`convgen check`
on random inputs); a variant that fails or does not compile is reported, not
timed. Exits 1 when every variant failed.

    python3 bench/sweep.py specs/ece408-2017.yaml conv1 'block=64,128 maps_unroll=5,10 unroll_groups=0,1'
"""
import itertools, json, os, subprocess, sys, tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    spec_path, layer, grid = sys.argv[1], sys.argv[2], sys.argv[3]
    extra = sys.argv[4:]
    keys, values = [], []
    for part in grid.split():
        k, v = part.split("=")
        keys.append(k)
        values.append([int(x) for x in v.split(",")])
    spec = yaml.safe_load(open(spec_path))
    base_dir = os.path.dirname(os.path.abspath(spec_path))
    cg = os.path.join(ROOT, "build/convgen")
    results = []
    for combo in itertools.product(*values):
        params = dict(zip(keys, combo))
        for l in spec["layers"]:
            if l["name"] == layer:
                l["params"] = dict(l.get("params") or {}, **params)
        # written beside the original so a relative weights path still resolves
        fd, path = tempfile.mkstemp(suffix=".yaml", dir=base_dir)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(spec, f, sort_keys=False)
        try:
            chk = subprocess.run([cg, "check", path, "--images", "256", "--seed", "7", "--random-input", "7"] + extra,
                                 capture_output=True, text=True)
            if chk.returncode:
                results.append((params, None, (chk.stderr or chk.stdout).strip().splitlines()[-1]))
                continue
            with tempfile.NamedTemporaryFile(suffix=".json") as j:
                run = subprocess.run([cg, "run", path, "--repeat", "20", "--json", j.name, "--random-input", "1"] + extra,
                                     capture_output=True, text=True)
                if run.returncode:
                    results.append((params, None, run.stderr.strip().splitlines()[-1]))
                    continue
                data = json.load(open(j.name))
            t = [x["time_s"] for x in data["layers"] if x["name"] == layer][0]
            results.append((params, t * 1e3, ""))
        finally:
            os.unlink(path)
        p, t, why = results[-1]
        print(f"{p}: {t:.4f} ms" if t is not None else f"{p}: FAILED {why}", flush=True)
    ok = sorted((r for r in results if r[1] is not None), key=lambda r: r[1])
    if not ok:
        print(f"sweep.py: every one of the {len(results)} variants failed; nothing timed", file=sys.stderr)
        sys.exit(1)
    print(f"best for {layer}: {ok[0][0]} at {ok[0][1]:.4f} ms")


if __name__ == "__main__":
    main()
