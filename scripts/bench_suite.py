#!/usr/bin/env python3
"""vh5 benchmark suite: many-slice reads against versioned-hdf5 2.6.0, a naive h5py loop and
"read the whole dataset with h5py, then gather with numpy", case by case, on identical files
and slice tables (every result checked equal); plus payload decoding (bench_payload.py's
message and decoders). Prints a markdown table of medians and the ratios peer : vh5
(> 1 = vh5 faster).

vh5 runs through the Python package (bindings/python, `vh5.read_many_slices` on a
`vh5.Dataset`) with VH5_LIBRARY (default target/release/libvh5.so). Peers use h5py 3.16's
bundled libhdf5 (HDF5 2.0, 8 MiB default chunk cache); vh5 uses the system libhdf5 1.10.8.

Usage: python3 scripts/bench_suite.py [--repeat 5] [--out FILE.md] [--no-payload]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
os.environ.setdefault("VH5_LIBRARY", os.path.join(ROOT, "target", "release", "libvh5.so"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, HERE)

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import vh5  # noqa: E402
from versioned_hdf5.slicetools import read_many_slices as vh_read  # noqa: E402

SHARED = os.environ.get("VH5_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))


def timed(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def axis_index(start, count, step):
    """(n, c) index arrays start + k*step for uniform counts."""
    return start[:, None].astype(np.int64) + np.arange(count, dtype=np.int64)[None, :] * step


def gather(whole, dst, src, dstart, count, sstep, dstep):
    """numpy gather for tables with one count per axis (every case here): fancy indexing."""
    nd = whole.ndim
    c = [int(count[0, j]) for j in range(nd)]
    si = [axis_index(src[:, j], c[j], int(sstep[0, j])) for j in range(nd)]
    di = [axis_index(dstart[:, j], c[j], int(dstep[0, j])) for j in range(nd)]

    def mesh(ix):
        return tuple(
            ix[j].reshape((ix[j].shape[0],) + tuple(c[k] if k == j else 1 for k in range(nd))) for j in range(nd)
        )

    dst[mesh(di)] = whole[mesh(si)]


def naive(ds, dst, src, dstart, count, sstep, dstep):
    nd = ds.ndim
    for i in range(src.shape[0]):
        ssl = tuple(
            slice(int(src[i, j]), int(src[i, j]) + (int(count[i, j]) - 1) * int(sstep[i, j]) + 1, int(sstep[i, j]))
            for j in range(nd)
        )
        dsl = tuple(
            slice(
                int(dstart[i, j]), int(dstart[i, j]) + (int(count[i, j]) - 1) * int(dstep[i, j]) + 1, int(dstep[i, j])
            )
            for j in range(nd)
        )
        dst[dsl] = ds[ssl]


class Case:
    def __init__(self, name, path, dset, src, dstart, count, sstep, dstep, dst_shape, dtype, naive=True, threads=None):
        self.__dict__.update(locals())
        del self.__dict__["self"]


def make_files(tmp):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2000, 2000))
    raw, gz, one = (os.path.join(tmp, n) for n in ("raw.h5", "gzip.h5", "onechunk.h5"))
    with h5py.File(raw, "w") as f:
        f.create_dataset("x", data=data, chunks=(100, 100))
    with h5py.File(gz, "w") as f:
        f.create_dataset("x", data=data, chunks=(100, 100), compression="gzip", compression_opts=4, shuffle=True)
    with h5py.File(one, "w") as f:
        f.create_dataset("x", data=data, chunks=(2000, 2000))
    return raw, gz, one


def cases(tmp, n):
    raw, gz, one = make_files(tmp)
    rng = np.random.default_rng(42)
    src = rng.integers(0, 2000 - 10, size=(n, 2)).astype(np.uint64)
    key = (src[:, 0] // 100) * 20 + src[:, 1] // 100
    srt = np.ascontiguousarray(src[np.argsort(key, kind="stable")])
    dstart = np.zeros((n, 2), np.uint64)
    dstart[:, 0] = np.arange(n, dtype=np.uint64) * 10
    cnt = np.full((n, 2), 10, np.uint64)
    ones = np.ones((n, 2), np.uint64)
    out = [
        Case("1. uncompressed, sorted by chunk", raw, "x", srt, dstart, cnt, ones, ones, (n * 10, 10), "f8"),
        Case("2. uncompressed, random order", raw, "x", src, dstart, cnt, ones, ones, (n * 10, 10), "f8"),
        Case("3. gzip 4 + shuffle, random order", gz, "x", src, dstart, cnt, ones, ones, (n * 10, 10), "f8"),
        Case(
            "3a. case 3, vh5 threads = 1",
            gz,
            "x",
            src,
            dstart,
            cnt,
            ones,
            ones,
            (n * 10, 10),
            "f8",
            naive=False,
            threads=1,
        ),
        Case(
            "3b. case 3, vh5 threads = 2",
            gz,
            "x",
            src,
            dstart,
            cnt,
            ones,
            ones,
            (n * 10, 10),
            "f8",
            naive=False,
            threads=2,
        ),
    ]
    m = 1000
    s4 = np.stack([rng.integers(0, 1900, m), rng.integers(0, 2000 - 199, m)], axis=1).astype(np.uint64)
    d4 = np.zeros((m, 2), np.uint64)
    d4[:, 0] = np.arange(m, dtype=np.uint64) * 100
    out.append(
        Case(
            "4. inner step 2 (100x100 of 2000x2000, one 2000x2000 chunk)",
            one,
            "x",
            s4,
            d4,
            np.full((m, 2), 100, np.uint64),
            np.tile(np.array([[1, 2]], np.uint64), (m, 1)),
            np.ones((m, 2), np.uint64),
            (m * 100, 100),
            "f8",
        )
    )
    out.append(
        Case(
            "5. destination inner step 2 (case 2's slices)",
            raw,
            "x",
            src,
            dstart,
            cnt,
            ones,
            np.tile(np.array([[1, 2]], np.uint64), (n, 1)),
            (n * 10, 20),
            "f8",
        )
    )
    tas = os.path.join(SHARED, "real", "test1.nc")
    if os.path.exists(tas):
        s6 = np.stack([rng.integers(0, 12, n), rng.integers(0, 64 - 4, n), rng.integers(0, 128 - 4, n)], axis=1).astype(
            np.uint64
        )
        d6 = np.zeros((n, 3), np.uint64)
        d6[:, 0] = np.arange(n, dtype=np.uint64)
        c6 = np.tile(np.array([[1, 4, 4]], np.uint64), (n, 1))
        o6 = np.ones((n, 3), np.uint64)
        out.append(
            Case(
                "6. real tas (test1.nc, gzip+shuffle, chunks 6x32x32), 1x4x4 random",
                tas,
                "tas",
                s6,
                d6,
                c6,
                o6,
                o6,
                (n, 4, 4),
                "f8",
            )
        )
    else:
        print(f"# case 6 skipped: {tas} not found (set VH5_SHARED_DATA)")
    return out


def run_case(c, repeat):
    h = h5py.File(c.path, "r")
    ds = h[c.dset]
    f = vh5.File(c.path)
    vd = f.dataset(c.dset)
    want = np.zeros(c.dst_shape, c.dtype)
    res = {}
    if c.naive:
        res["naive"] = timed(lambda: naive(ds, want, c.src, c.dstart, c.count, c.sstep, c.dstep), max(1, repeat // 2))

    got_w = np.zeros_like(want)
    res["whole"] = timed(lambda: gather(ds[...], got_w, c.src, c.dstart, c.count, c.sstep, c.dstep), repeat)
    got_v = np.zeros_like(want)
    res["vh"] = timed(lambda: vh_read(ds, got_v, c.src, c.dstart, c.count, c.sstep, c.dstep), repeat)
    got = np.zeros_like(want)
    old = vh5.get_num_threads()
    if c.threads:
        vh5.set_num_threads(c.threads)
    try:
        res["vh5"] = timed(lambda: vh5.read_many_slices(vd, got, c.src, c.dstart, c.count, c.sstep, c.dstep), repeat)
    finally:
        vh5.set_num_threads(old)
    if not c.naive:
        naive(ds, want, c.src, c.dstart, c.count, c.sstep, c.dstep)
    for name, g in (("whole+gather", got_w), ("versioned-hdf5", got_v), ("vh5", got)):
        assert np.array_equal(g, want), f"{c.name}: {name} result differs from the naive h5py loop"
    f.close()
    h.close()
    return res


def single_row(raw, repeat):
    h = h5py.File(raw, "r")
    ds = h["x"]
    f = vh5.File(raw)
    vd = f.dataset("x")
    s = np.array([[505, 707]], np.uint64)
    d = np.zeros((1, 2), np.uint64)
    c = np.full((1, 2), 10, np.uint64)
    a, b, k = np.zeros((10, 10)), np.zeros((10, 10)), 2000
    res = {
        "naive": timed(lambda: [a.__setitem__(Ellipsis, ds[505:515, 707:717]) for _ in range(k)], repeat) / k,
        "vh": timed(lambda: [vh_read(ds, b, s, d, c) for _ in range(k)], repeat) / k,
        "vh5": timed(lambda: [vh5.read_many_slices(vd, a, s, d, c) for _ in range(k)], repeat) / k,
        # the same call with coordinates as Python lists, and vh5's h5py-style indexing
        "vh5_lists": timed(
            lambda: [vh5.read_many_slices(vd, a, [505, 707], [0, 0], [10, 10]) for _ in range(k)], repeat
        )
        / k,
        "vh5_getitem": timed(lambda: [a.__setitem__(Ellipsis, vd[505:515, 707:717]) for _ in range(k)], repeat) / k,
    }
    assert np.array_equal(a, b)
    f.close()
    h.close()
    return res


def payload(repeat):
    import bench_payload as bp

    lib = __import__("ctypes").CDLL(os.environ["VH5_LIBRARY"])
    lib.payload_decode_view.argtypes = [
        __import__("ctypes").c_char_p,
        __import__("ctypes").c_size_t,
        __import__("ctypes").c_uint32,
        __import__("ctypes").POINTER(bp.View),
    ]
    import ctypes

    lib.payload_decode_count.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    buf = bp.make_message(True)
    d1, c1 = bp.vh5_decode(lib, buf)
    d2, c2 = bp.cbor2_decode(buf)
    assert np.array_equal(d1, d2) and np.array_equal(c1, c2)
    del d1, c1, d2, c2
    return {
        "vh5": timed(lambda: bp.vh5_decode(lib, buf), repeat),
        "cbor2": timed(lambda: bp.cbor2_decode(buf), max(1, repeat // 2)),
        "mb": len(buf) / 1e6,
    }


def fmt(t):
    if t is None:
        return ""
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.1f} ms"


def ratio(a, b):
    return "" if a is None or b is None else f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--nslices", type=int, default=10000)
    ap.add_argument("--out")
    ap.add_argument("--no-payload", action="store_true")
    args = ap.parse_args()
    lines = [
        f"vh5 {vh5.library_path()} (threads {vh5.get_num_threads()}), median of {args.repeat} (naive loop: {max(1, args.repeat // 2)})",
        "",
        "| case | naive h5py loop | h5py whole read + numpy gather | versioned-hdf5 2.6.0 | vh5 | versioned-hdf5 : vh5 | whole+gather : vh5 |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cs = cases(tmp, args.nslices)
        for c in cs:
            r = run_case(c, args.repeat)
            lines.append(
                f"| {c.name} | {fmt(r.get('naive'))} | {fmt(r['whole'])} | {fmt(r['vh'])} | {fmt(r['vh5'])} | {ratio(r['vh'], r['vh5'])} | {ratio(r['whole'], r['vh5'])} |"
            )
            print(lines[-1], flush=True)
        r = single_row(os.path.join(tmp, "raw.h5"), args.repeat)
        lines.append(
            f"| 7. single-row call (10x10, warm) | {fmt(r['naive'])} | | {fmt(r['vh'])} | {fmt(r['vh5'])} | {ratio(r['vh'], r['vh5'])} | |"
        )
        lines.append(
            f"| 7b. same, coordinates as lists ([505, 707], [0, 0], [10, 10]) | {fmt(r['naive'])} | | {fmt(r['vh'])} | {fmt(r['vh5_lists'])} | {ratio(r['vh'], r['vh5_lists'])} | |"
        )
        lines.append(
            f"| 7c. same, vh5's h5py-style d[505:515, 707:717] (naive column: h5py's) | {fmt(r['naive'])} | | | {fmt(r['vh5_getitem'])} | | |"
        )
        print(lines[-1], flush=True)
    if not args.no_payload:
        p = payload(args.repeat)
        lines.append(
            f"| 8. payload decoding ({p['mb']:.0f} MB Reductionist CBOR, count_as_bytes; peer = cbor2.loads + numpy) | | | {fmt(p['cbor2'])} | {fmt(p['vh5'])} | {ratio(p['cbor2'], p['vh5'])} | |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print()
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
