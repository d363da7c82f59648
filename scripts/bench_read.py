#!/usr/bin/env python3
"""Many-slice read benchmark: vh5 vs versioned-hdf5 read_many_slices vs a naive h5py loop.

All three read the same file in the same run: a 2000x2000 float64 dataset with 100x100
chunks (uncompressed, and gzip+shuffle), 10,000 slices of 10x10 at random positions, in
random order and sorted by chunk, into a (100000, 10) float64 destination (row i at
dst[10*i:10*i+10, :]). Results are checked equal. Prints a markdown table of medians.

Usage: python3 scripts/bench_read.py [--repeat 5] [--nslices 10000] [--out FILE.md]
Needs target/release/libvh5.so (cargo build --release) or env VH5_LIBRARY.
vh5 is called through ctypes with minimal declarations (the Python package comes later).
h5py and vh5 use two different libhdf5 instances in this process; both open the file read-only.
"""

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from versioned_hdf5.slicetools import read_many_slices as vh_read_many_slices  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.environ.get("VH5_LIBRARY", os.path.join(HERE, "..", "target", "release", "libvh5.so"))
VH5_DTYPE_FLOAT64 = 12


class Vh5Array(ctypes.Structure):
    _fields_ = [
        ("base", ctypes.c_void_p),
        ("base_len", ctypes.c_size_t),
        ("offset", ctypes.c_size_t),
        ("dtype", ctypes.c_uint32),
        ("itemsize", ctypes.c_size_t),
        ("ndim", ctypes.c_uint32),
        ("shape", ctypes.POINTER(ctypes.c_uint64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
    ]


def load_vh5():
    lib = ctypes.CDLL(LIB)
    lib.vh5_file_open.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int64)]
    lib.vh5_dataset_open.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]
    lib.vh5_close.argtypes = [ctypes.c_int64]
    lib.vh5_last_error_message.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.vh5_last_error_message.restype = ctypes.c_size_t
    p = ctypes.c_void_p
    lib.vh5_read_many_slices.argtypes = [
        ctypes.c_int64,
        ctypes.POINTER(Vh5Array),
        ctypes.c_size_t,
        p,
        p,
        p,
        p,
        p,
        ctypes.c_uint32,
    ]
    return lib


def check(lib, st):
    if st != 0:
        buf = ctypes.create_string_buffer(4096)
        lib.vh5_last_error_message(buf, 4096)
        raise RuntimeError(f"vh5 status {st}: {buf.value.decode()}")


class Vh5Reader:
    def __init__(self, lib, path, name):
        self.lib = lib
        self.f = ctypes.c_int64()
        self.d = ctypes.c_int64()
        check(lib, lib.vh5_file_open(path.encode(), 0, ctypes.byref(self.f)))
        check(lib, lib.vh5_dataset_open(self.f, name.encode(), ctypes.byref(self.d)))

    def read(self, dst, src_start, dst_start, count):
        shape = (ctypes.c_uint64 * dst.ndim)(*dst.shape)
        a = Vh5Array(dst.ctypes.data, dst.nbytes, 0, VH5_DTYPE_FLOAT64, 8, dst.ndim, shape, None)
        st = self.lib.vh5_read_many_slices(
            self.d,
            ctypes.byref(a),
            len(count),
            src_start.ctypes.data,
            dst_start.ctypes.data,
            count.ctypes.data,
            None,
            None,
            0,
        )
        check(self.lib, st)

    def close(self):
        self.lib.vh5_close(self.d)
        self.lib.vh5_close(self.f)


def make_file(path, gzip):
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        kw = dict(compression="gzip", shuffle=True) if gzip else {}
        f.create_dataset("x", data=rng.standard_normal((2000, 2000)), chunks=(100, 100), **kw)


def tables(n, order, rng):
    src = rng.integers(0, 2000 - 10, size=(n, 2), dtype=np.uint64)
    if order == "sorted":
        key = (src[:, 0] // 100) * 20 + src[:, 1] // 100
        src = src[np.argsort(key, kind="stable")]
    dst = np.zeros((n, 2), dtype=np.uint64)
    dst[:, 0] = np.arange(n, dtype=np.uint64) * 10
    count = np.full((n, 2), 10, dtype=np.uint64)
    return np.ascontiguousarray(src), dst, count


def timed(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--nslices", type=int, default=10000)
    ap.add_argument("--out")
    args = ap.parse_args()
    lib = load_vh5()
    n = args.nslices
    rng = np.random.default_rng(42)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for gzip in (False, True):
            path = os.path.join(tmp, f"bench_{'gzip' if gzip else 'raw'}.h5")
            make_file(path, gzip)
            h = h5py.File(path, "r")
            ds = h["x"]
            r = Vh5Reader(lib, path, "x")
            for order in ("random", "sorted"):
                src, dstart, count = tables(n, order, rng)
                want = np.zeros((n * 10, 10))
                got_vh = np.zeros_like(want)
                got_v5 = np.zeros_like(want)

                def naive():
                    for i in range(n):
                        a, b = int(src[i, 0]), int(src[i, 1])
                        want[10 * i : 10 * i + 10, :] = ds[a : a + 10, b : b + 10]

                t_naive = timed(naive, max(1, args.repeat // 2))
                t_vh = timed(lambda: vh_read_many_slices(ds, got_vh, src, dstart, count), args.repeat)
                t_v5 = timed(lambda: r.read(got_v5, src, dstart, count), args.repeat)
                assert np.array_equal(want, got_vh), "versioned-hdf5 result differs"
                assert np.array_equal(want, got_v5), "vh5 result differs"
                rows.append((("gzip+shuffle, " if gzip else "") + order, t_naive, t_vh, t_v5))
            # Single-row call overhead (one 10x10 row, repeated; warm cache).
            one_src, one_dst, one_cnt = src[:1].copy(), dstart[:1].copy(), count[:1].copy()
            small = np.zeros((10, 10))
            k = 2000
            t_vh1 = (
                timed(
                    lambda: [vh_read_many_slices(ds, small, one_src, one_dst, one_cnt) for _ in range(k)], args.repeat
                )
                / k
            )
            t_v51 = timed(lambda: [r.read(small, one_src, one_dst, one_cnt) for _ in range(k)], args.repeat) / k
            rows.append((("gzip+shuffle, " if gzip else "") + "single-row call", None, t_vh1, t_v51))
            r.close()
            h.close()
    lines = [
        f"2000x2000 float64, 100x100 chunks, {n} slices of 10x10 (median of {args.repeat}; naive of {max(1, args.repeat // 2)})",
        "",
        "| case | naive h5py loop | versioned-hdf5 2.6.0 read_many_slices | vh5 | vh5 speed-up vs versioned-hdf5 |",
        "|---|---|---|---|---|",
    ]
    for name, tn, tv, t5 in rows:
        if tn is None:
            lines.append(f"| {name} | | {tv * 1e6:.1f} µs | {t5 * 1e6:.1f} µs | {tv / t5:.1f}x |")
        else:
            lines.append(f"| {name} | {tn * 1e3:.1f} ms | {tv * 1e3:.1f} ms | {t5 * 1e3:.1f} ms | {tv / t5:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    slower = [r for r in rows if r[3] > r[2] * 1.05]
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
