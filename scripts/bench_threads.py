#!/usr/bin/env python3
"""Thread scaling of vh5_read_many_slices on compressed chunks (issue 6, case 3 alone).

A 2000x2000 float64 dataset with 100x100 chunks, gzip level 4 + shuffle (written by h5py),
10,000 random 10x10 rows into a (100000, 10) array; median of --repeat calls, alternating
vh5.set_num_threads(1) and (2) three times so drifting machine load hits both. Prints each
median and the 1-thread / 2-thread ratio. Needs an idle machine to mean anything.

    python3 scripts/bench_threads.py [--repeat 7]     (after cargo build --release)
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python"))
os.environ.setdefault("VH5_LIBRARY", str(REPO / "target" / "release" / "libvh5.so"))
import vh5  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    path = os.path.join(tempfile.mkdtemp(prefix="vh5-threads-"), "gzip.h5")
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "d", data=rng.random((2000, 2000)), chunks=(100, 100), compression="gzip", compression_opts=4, shuffle=True
        )
    n = 10_000
    src_start = np.c_[rng.integers(0, 1990, n), rng.integers(0, 1990, n)].astype(np.uint64)
    dst_start = np.c_[np.arange(n) * 10, np.zeros(n)].astype(np.uint64)
    count = np.full((n, 2), 10, np.uint64)
    out = np.empty((n * 10, 10))
    with h5py.File(path, "r") as f:
        want = np.stack([f["d"][s0 : s0 + 10, s1 : s1 + 10] for s0, s1 in src_start]).reshape(-1, 10)
    medians = {1: [], 2: []}
    with vh5.File(path) as f, f["d"] as d:
        for t in (1, 2, 1, 2, 1, 2):
            vh5.set_num_threads(t)
            times = []
            for _ in range(args.repeat):
                out[:] = 0
                t0 = time.perf_counter()
                vh5.read_many_slices(d, out, src_start, dst_start, count)
                times.append(time.perf_counter() - t0)
            assert np.array_equal(out, want), "vh5 result differs from h5py"
            medians[t].append(float(np.median(times)))
    vh5.set_num_threads(0)
    for t, v in medians.items():
        print(f"threads={t}: " + " / ".join(f"{x * 1e3:.1f} ms" for x in v))
    print(
        f"1-thread / 2-thread: {np.median(medians[1]) / np.median(medians[2]):.2f}x (load average {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
