#!/usr/bin/env python3
"""Chunk index benchmark (src/hdf5/chunk_index.rs): cold reads of many-chunk files with
`VH5_CHUNK_INDEX=0` (every stored chunk through libhdf5's `H5Dread_chunk` under the lock) and
`=1` (the index built once per open dataset, stored bytes read with `pread` outside the lock),
in alternating child processes of one run, so the ratio is A/B under the same load.

Files (the shapes of scripts/bench_scaling.py's scaling series): 1-D float64 in chunks of 16
and 2-D float64 in chunks of 4x4, 16k and 64k chunks, raw and gzip (level 4), written by
h5py with `libver=LAYOUT` ("earliest": layout version 3, a version-1 B-tree; "latest": layout
version 4, a fixed-array index). Selections: the whole dataset, and one 2-element (2x2) row
inside every chunk in random order.

Each child opens the file, makes ONE `read_many_slices` call (cold: the index is built inside
it when on; page cache warm from the file's writing and the earlier children) and prints its
time; `--pairs` pairs of children per case, medians reported, ratio = index 1 / index 0
(< 1: the index is faster). Every child's answer is checked equal to h5py's (hash).

Usage: python3 scripts/bench_chunk_index.py [--pairs 5] [--sizes 16,64] [--layouts earliest,latest]
       [--dir DIR] [--only SUBSTRING]
       python3 scripts/bench_chunk_index.py --child PATH whole|rows   (one timed read; used by the above)
"""

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")

import numpy as np  # noqa: E402


def selection(shape, chunk, kind):
    """(src, dstart, count, dst_shape) of the whole dataset or one row per chunk."""
    nd = len(shape)
    if kind == "whole":
        z = np.zeros((1, nd), np.uint64)
        return z, z.copy(), np.array([shape], np.uint64), tuple(shape)
    rng = np.random.default_rng(5)
    grids = [np.arange(0, s, c) for s, c in zip(shape, chunk)]
    origins = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, nd)
    src = origins + rng.integers(0, np.array(chunk) - 2 + 1, size=origins.shape)
    src = src[rng.permutation(len(src))].astype(np.uint64)
    n = len(src)
    dstart = np.zeros_like(src)
    dstart[:, 0] = np.arange(n, dtype=np.uint64) * 2
    return src, dstart, np.full_like(src, 2), (n * 2,) + (2,) * (nd - 1)


def child(path, kind):
    import h5py  # only for the dataset's chunk shape (no read)
    import vh5

    with h5py.File(path, "r") as f:
        shape, chunk = f["x"].shape, f["x"].chunks
    src, dstart, count, dshape = selection(shape, chunk, kind)
    dst = np.zeros(dshape, "f8")
    t0 = time.perf_counter()
    f = vh5.File(path)
    vh5.read_many_slices(f.dataset("x"), dst, src, dstart, count)
    t = time.perf_counter() - t0
    f.close()
    print(t, hashlib.sha1(dst.tobytes()).hexdigest())


def make(d, nch, nd, gz, layout):
    import h5py

    if nd == 1:
        chunk, shape = (16,), (16 * nch,)
    else:
        side = int(round(nch**0.5))
        chunk, shape = (4, 4), (4 * side, 4 * (nch // side))
    path = os.path.join(d, f"ix_{layout}_{nd}d_{'gz' if gz else 'raw'}_{nch}.h5")
    if not os.path.exists(path):
        n = int(np.prod(shape))
        data = (np.linspace(0, 100, n) + np.round(np.random.default_rng(1).standard_normal(n), 2)).reshape(shape)
        kw = dict(compression="gzip", compression_opts=4) if gz else {}
        with h5py.File(path, "w", libver=(layout, "latest")) as f:
            f.create_dataset("x", data=data, chunks=chunk, **kw)
    return path, shape, chunk


def expected(path, shape, chunk, kind):
    import h5py

    src, dstart, count, dshape = selection(shape, chunk, kind)
    with h5py.File(path, "r") as f:
        whole = f["x"][...]
    if kind == "whole":
        out = whole
    else:
        nd = len(shape)
        out = np.zeros(dshape, "f8")
        for i in range(len(src)):
            s = tuple(slice(int(a), int(a) + 2) for a in src[i])
            dsl = (slice(int(dstart[i, 0]), int(dstart[i, 0]) + 2),) + (slice(0, 2),) * (nd - 1)
            out[dsl] = whole[s]
    return hashlib.sha1(np.ascontiguousarray(out).tobytes()).hexdigest()


def run(path, kind, index):
    env = dict(os.environ, VH5_CHUNK_INDEX=index)
    r = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", path, kind],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode != 0:
        raise SystemExit(f"child failed ({path} {kind} index {index}):\n{r.stderr[-2000:]}")
    t, h = r.stdout.split()
    return float(t), h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--sizes", default="16,64", help="chunk counts in k")
    ap.add_argument("--layouts", default="earliest,latest", help="h5py libver lower bounds")
    ap.add_argument("--dir", default=None, help="where the files are written (kept; reused when present)")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    d = a.dir or tempfile.mkdtemp(prefix="vh5_ix_")
    os.makedirs(d, exist_ok=True)
    print("| case | index 0 (median) | index 1 (median) | 1 / 0 |")
    print("|---|---|---|---|")
    for layout in a.layouts.split(","):
        for nk in map(int, a.sizes.split(",")):
            for nd in (1, 2):
                for gz in (False, True):
                    for kind in ("whole", "rows"):
                        name = f"{layout} {nd}-D {'gzip' if gz else 'raw'} {nk}k chunks, {'whole' if kind == 'whole' else '1 row per chunk'}"
                        if a.only not in name:
                            continue
                        path, shape, chunk = make(d, nk * 1024, nd, gz, layout)
                        want = expected(path, shape, chunk, kind)
                        ts = {"0": [], "1": []}
                        for _ in range(a.pairs):
                            for ix in ("0", "1"):
                                t, h = run(path, kind, ix)
                                if h != want:
                                    raise SystemExit(f"WRONG ANSWER: {name}, VH5_CHUNK_INDEX={ix}")
                                ts[ix].append(t)
                        m0, m1 = statistics.median(ts["0"]), statistics.median(ts["1"])
                        print(f"| {name} | {m0 * 1e3:.1f} ms | {m1 * 1e3:.1f} ms | {m1 / m0:.2f} |", flush=True)


if __name__ == "__main__":
    main()
