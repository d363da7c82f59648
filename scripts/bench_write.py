#!/usr/bin/env python3
"""Many-slice writes (numpy -> HDF5) and memory copies (numpy -> numpy): vh5 vs versioned-hdf5.

Same inputs for both in the same run, results checked equal, medians printed as a markdown
table with the speed-up (versioned-hdf5 time / vh5 time).

numpy -> HDF5: a 2000x2000 float64 dataset written by h5py (zeros, every chunk allocated),
with 100x100 chunks (uncompressed, then gzip+shuffle), then contiguous; 10,000 rows of 10x10 taken from a
(100000, 10) float64 source (row i = src[10*i:10*i+10, :]) written at random positions
(random order, then sorted by position). Each run writes into a fresh copy of the file;
the time covers the call plus closing the file (so data reaching the file is included).
versioned-hdf5 = ``versioned_hdf5.slicetools.read_many_slices(src, h5py_dataset, ...)`` (h5py
3.16 wheel, HDF5 2.0.0); vh5 = ``vh5.write_many_slices(src, vh5.File(path, "r+")[...], ...)``
(system HDF5 1.10.8).

numpy -> numpy: 10,000 rows of 10x10 from a float64 source at random positions into a
(100000, 10) float64 destination (row i at dst[10*i:10*i+10]); source 200x200 (fits in
cache) and 2000x2000 (32 MB: random reads from memory). vh5 = ``vh5.copy_many_slices``
(Python call included).

With --unit-steps every write also passes all-ones step tables (vh5 src_step/dst_step,
versioned-hdf5 src_stride/dst_stride), as callers that always pass steps do. --cases steps
(vh5 only): --nslices one-element rows at random positions of a 2048x2048 float64 dataset in
64x64 chunks, without step tables and with all-ones ones, timed alternately in one process
(their ratio is what the merge's handling of all-ones step tables changes).

Usage: python3 scripts/bench_write.py [--repeat 5] [--nslices 10000] [--cases all|copies|writes|steps]
[--unit-steps] [--out FILE.md]; python3 scripts/bench_write.py --cases steps --nslices 262144
Needs target/release/libvh5.so (cargo build --release) or env VH5_LIBRARY.
Exit status 1 if a result differs or a target is missed (writes: vh5 at least as fast;
gzip: faster; copies: at least 10x faster).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
os.environ.setdefault("VH5_LIBRARY", os.path.join(REPO, "target", "release", "libvh5.so"))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import vh5  # noqa: E402
from versioned_hdf5.slicetools import read_many_slices as vh_rms  # noqa: E402


def med(xs):
    return statistics.median(xs)


def tables(rng, n, shape, sort):
    src_start = np.zeros((n, 2), np.uint64)
    src_start[:, 0] = np.arange(n, dtype=np.uint64) * 10
    dst_start = np.stack([rng.integers(0, shape[0] - 10, n), rng.integers(0, shape[1] - 10, n)], axis=1).astype(
        np.uint64
    )
    if sort:
        order = np.lexsort((dst_start[:, 1], dst_start[:, 0]))
        dst_start = dst_start[order]
    count = np.full((n, 2), 10, np.uint64)
    return src_start, dst_start, count


def bench_writes(tmp, repeat, n, unit_steps=False):
    rng = np.random.default_rng(1)
    ones = np.ones((n, 2), np.uint64) if unit_steps else None
    vh_steps = {"src_stride": ones, "dst_stride": ones} if unit_steps else {}
    src = rng.random((n * 10, 10))
    rows = []
    for comp in (None, "gzip", "contiguous"):
        base = os.path.join(tmp, f"base_{comp}.h5")
        with h5py.File(base, "w") as f:
            kw = {"chunks": (100, 100)}
            if comp == "gzip":
                kw.update(compression="gzip", shuffle=True)
            elif comp == "contiguous":
                kw = {}
            f.create_dataset("d", data=np.zeros((2000, 2000)), **kw)
        for sort in (False, True):
            s, d, c = tables(rng, n, (2000, 2000), sort)
            t_vh, t_v5 = [], []
            for k in range(repeat):
                p1, p2 = os.path.join(tmp, f"a{k}.h5"), os.path.join(tmp, f"b{k}.h5")
                shutil.copy(base, p1)
                shutil.copy(base, p2)
                f = h5py.File(p1, "r+")
                ds = f["d"]
                t0 = time.perf_counter()
                vh_rms(src, ds, s, d, c, **vh_steps)
                f.close()
                t_vh.append(time.perf_counter() - t0)
                vf = vh5.File(p2, "r+")
                vd = vf["d"]
                t0 = time.perf_counter()
                vh5.write_many_slices(src, vd, s, d, c, src_step=ones, dst_step=ones)
                vd.close()
                vf.close()
                t_v5.append(time.perf_counter() - t0)
                if k == 0:
                    with h5py.File(p1, "r") as a, h5py.File(p2, "r") as b:
                        if not np.array_equal(a["d"][()], b["d"][()]):
                            raise SystemExit(f"RESULTS DIFFER: write {comp} sort={sort}")
                os.remove(p1)
                os.remove(p2)
            label = {None: "chunked", "gzip": "chunked gzip+shuffle", "contiguous": "contiguous"}[comp]
            name = f"numpy -> HDF5, {label}, {'sorted' if sort else 'random'}"
            rows.append((name, med(t_vh), med(t_v5), comp == "gzip"))
    return rows


def bench_unit_steps(tmp, repeat, n):
    base = os.path.join(tmp, "points.h5")
    with h5py.File(base, "w") as f:
        f.create_dataset("d", data=np.zeros((2048, 2048)), chunks=(64, 64))
    rng = np.random.default_rng(3)
    src = rng.random((n, 1))
    s = np.zeros((n, 2), np.uint64)
    s[:, 0] = np.arange(n, dtype=np.uint64)
    d = rng.integers(0, 2048, (n, 2)).astype(np.uint64)
    c = np.ones((n, 2), np.uint64)
    times = {None: [], "ones": []}
    for k in range(repeat):
        for steps in times:
            p = os.path.join(tmp, f"p{k}.h5")
            shutil.copy(base, p)
            st = c if steps else None
            with vh5.File(p, "r+") as f, f["d"] as ds:
                t0 = time.perf_counter()
                vh5.write_many_slices(src, ds, s, d, c, src_step=st, dst_step=st)
                times[steps].append(time.perf_counter() - t0)
            os.remove(p)
    t0, t1 = med(times[None]), med(times["ones"])
    print(f"| {n} one-element rows, 64x64 chunks | no step tables | all-ones step tables | ratio |")
    print("|---|---|---|---|")
    print(f"| vh5 | {t0 * 1e3:.1f} ms | {t1 * 1e3:.1f} ms | {t1 / t0:.2f} |")


def bench_copies(repeat, n):
    rows = []
    rng = np.random.default_rng(2)
    for side in (200, 2000):
        src = rng.random((side, side))
        s = np.stack([rng.integers(0, side - 10, n), rng.integers(0, side - 10, n)], axis=1).astype(np.uint64)
        d = np.zeros((n, 2), np.uint64)
        d[:, 0] = np.arange(n, dtype=np.uint64) * 10
        c = np.full((n, 2), 10, np.uint64)
        a, b = np.zeros((n * 10, 10)), np.zeros((n * 10, 10))
        t_vh, t_v5 = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            vh_rms(src, a, s, d, c)
            t_vh.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            vh5.copy_many_slices(src, b, s, d, c)
            t_v5.append(time.perf_counter() - t0)
        if not np.array_equal(a, b):
            raise SystemExit(f"RESULTS DIFFER: copy {side}")
        rows.append((f"numpy -> numpy, source {side}x{side}", med(t_vh), med(t_v5), None))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--nslices", type=int, default=10000)
    ap.add_argument(
        "--cases",
        choices=("all", "copies", "writes", "steps"),
        default="all",
        help="run only the memory copies or only the writes; steps: vh5 alone, all-ones step tables vs none (see the docstring)",
    )
    ap.add_argument("--unit-steps", action="store_true", help="writes pass all-ones step tables")
    ap.add_argument("--out")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vh5-bench-write-")
    if args.cases == "steps":
        try:
            bench_unit_steps(tmp, args.repeat, args.nslices)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        rows = []
        if args.cases != "writes":
            rows += bench_copies(args.repeat, args.nslices)
        if args.cases != "copies":
            rows += bench_writes(tmp, args.repeat, args.nslices, args.unit_steps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        f"| case ({args.nslices} rows of 10x10) | versioned-hdf5 2.6.0 | vh5 | speed-up | target |",
        "|---|---|---|---|---|",
    ]
    ok = True
    for name, tv, t5, comp in rows:
        ratio = tv / t5
        if comp is None:
            target, met = ">= 10x", ratio >= 10
        elif comp:
            target, met = "> 1x", ratio > 1.05  # a win beyond noise
        else:
            target, met = ">= 1x", ratio >= 0.97  # within noise of par
        ok &= met
        per = f" ({t5 / args.nslices * 1e9:.0f} ns/row)" if comp is None else ""
        lines.append(
            f"| {name} | {tv * 1e3:.1f} ms | {t5 * 1e3:.2f} ms{per} | {ratio:.1f}x | {target}: {'met' if met else 'MISSED'} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
