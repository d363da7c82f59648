#!/usr/bin/env python3
"""Repeated whole reads of one open dataset: the first read after opening (cold: the page
cache is warm, no reader's chunk cache is) and the median of the next ``--repeat`` reads
(warm: what a reader's chunk cache keeps across calls), for scaling cases 6 and 7a of
`bench_scaling.py` (the same files: its `write` and `field`).

- 6: (3, 74, 3944) f8 gzip, chunks (900, 3, 3): 32,875 chunks of 64,800 decoded bytes of
  which 216 lie inside the dataset (vh5's decoded-chunk cache keeps only those);
- 7a: 2000x2000 f8 gzip+shuffle, 16x16 chunks: all interior, 32 MB decoded (more than the
  cache's 16 MiB: not kept).

Readers: vh5 with each library given (``--lib NAME=PATH``, each in its own child process:
`VH5_LIBRARY` is read once), h5py `read_direct` (default chunk cache) and hidefix 0.12
(`pip install hidefix==0.12.0`; skipped when missing), each checked equal to h5py's read.
``--rounds`` alternates the children (A B A B ...); each figure is the median over rounds.
A child stops repeating after ``--budget`` seconds of reads (h5py takes ~20 s a read of
case 6): the last column counts the reads timed.

Usage: python3 scripts/bench_edge_cache.py [--repeat 9] [--rounds 3]
       [--lib before=/tmp/libvh5-main.so --lib after=target/release/libvh5.so]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CASES = {
    "6": ((3, 74, 3944), (900, 3, 3), False, (None, 74, 3944)),
    "7a": ((2000, 2000), (16, 16), True, None),
}


def make(tmp):
    sys.path.insert(0, HERE)
    import numpy as np
    from bench_scaling import field, write

    rng = np.random.default_rng(0)
    out = {}
    for name, (shape, chunks, shuffle, maxshape) in CASES.items():
        path = os.path.join(tmp, f"c{name}.h5")
        write(path, field(rng, shape), chunks, True, shuffle=shuffle, maxshape=maxshape)
        out[name] = path
    return out


def timings(read, repeat, budget):
    """(first read ms, median of the next `repeat` reads ms: at least one, fewer once the
    reads took `budget` seconds)."""
    t0 = time.perf_counter()
    read()
    cold = (time.perf_counter() - t0) * 1e3
    warm, start = [], time.perf_counter()
    while len(warm) < max(1, repeat) and (not warm or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        read()
        warm.append((time.perf_counter() - t0) * 1e3)
    return cold, statistics.median(warm), len(warm)


def child(reader, path, repeat, budget):
    """One reader on a freshly opened dataset: prints JSON [cold, warm, checksum]."""
    import h5py
    import numpy as np

    with h5py.File(path, "r") as f:
        want = f["x"][()]
    dst = np.zeros_like(want)
    if reader == "vh5":
        sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
        import vh5

        with vh5.File(path) as vf, vf["x"] as vd:
            z = [0] * want.ndim
            r = timings(lambda: vh5.read_many_slices(vd, dst, z, z, list(want.shape)), repeat, budget)
    elif reader == "h5py":
        with h5py.File(path, "r") as f:
            d = f["x"]
            r = timings(lambda: d.read_direct(dst), repeat, budget)
    else:
        import hidefix

        hd = hidefix.Index(path).dataset("x")
        full = tuple(slice(0, s) for s in want.shape)
        r = timings(lambda: dst.__setitem__(Ellipsis, hd[full]), repeat, budget)
    assert np.array_equal(dst, want), f"{reader}: differs from h5py"
    print(json.dumps(r))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of repeated reads per child")
    ap.add_argument("--lib", action="append", default=[], help="NAME=PATH of a libvh5.so (default: this tree's)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], a.child[1], int(a.child[2]), float(a.child[3]))
    libs = [x.split("=", 1) for x in a.lib] or [["vh5", os.path.join(ROOT, "target", "release", "libvh5.so")]]
    try:
        import hidefix  # noqa: F401

        others = ["h5py", "hidefix"]
    except ImportError:
        others = ["h5py"]
        print("# hidefix not installed: its rows are left out", file=sys.stderr)
    readers = [(f"vh5 {n}", "vh5", p) for n, p in libs] + [(o, o, None) for o in others]
    with tempfile.TemporaryDirectory() as tmp:
        files = make(tmp)
        print("| case | reader | first read (ms) | median of next reads (ms) | next reads timed |")
        print("|---|---|---:|---:|---:|")
        for case, path in files.items():
            got = {name: [] for name, _, _ in readers}
            for _ in range(a.rounds):
                for name, kind, lib in readers:
                    env = dict(os.environ, **({"VH5_LIBRARY": lib} if lib else {}))
                    cmd = [sys.executable, __file__, "--child", kind, path, str(a.repeat), str(a.budget)]
                    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
                    got[name].append(json.loads(out.strip().splitlines()[-1]))
            for name, rs in got.items():
                cold = statistics.median(r[0] for r in rs)
                warm = statistics.median(r[1] for r in rs)
                print(f"| {case} | {name} | {cold:.1f} | {warm:.1f} | {sum(r[2] for r in rs)} |", flush=True)


if __name__ == "__main__":
    main()
