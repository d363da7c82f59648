#!/usr/bin/env python3
"""Benchmark: whole documents with arrays inside (the msgpack-numpy request's own setting).

An xarray ``Dataset.to_dict("array")``-shaped document (a time coordinate and two float64
variables of n elements, attributes; built with xarray when installed, else a dict of the
same shape) packed with ``msgpack.packb(..., default=msgpack_numpy.encode)``, decoded by:

- vh5: ``vh5.compat.msgpack_numpy.unpackb`` (arrays as views of the input);
- msgpack + msgpack-numpy: ``msgpack_numpy.unpackb`` (copies);
- msgspec: ``msgspec.msgpack.decode`` then msgpack-numpy's decode of each array map
  (``np.frombuffer`` of the decoded bytes; msgspec has no hook for maps);
- the CBOR form (RFC 8746 typed arrays, tag 86): ``vh5.decode_document`` vs
  ``cbor2.loads`` with a typed-array ``tag_hook`` (``np.frombuffer``).

Plus a document without arrays (100,000 small items: ints, floats, short strings in maps)
against ``msgpack.unpackb``. Median of --repeat runs; "array bytes allocated" is
tracemalloc's peak during one vh5 decode (Python allocations; the input is not counted).

Usage: python3 scripts/bench_document.py [--repeat N] [--max-exp 7]
Needs VH5_LIBRARY (or an installed vh5), numpy, msgpack, msgpack-numpy, cbor2; msgspec and
xarray optional. Prints markdown tables.
"""

import argparse
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "bindings", "python"))

import cbor2  # noqa: E402
import msgpack  # noqa: E402
import msgpack_numpy  # noqa: E402
import vh5  # noqa: E402
from vh5.compat import msgpack_numpy as vh5_mn  # noqa: E402

try:
    import msgspec
except ImportError:  # optional
    msgspec = None


def dataset_dict(n):
    try:
        import xarray as xr

        return xr.Dataset(
            {"a": ("time", np.linspace(0, 1, n)), "b": ("time", np.random.default_rng(0).random(n))},
            coords={"time": np.arange(n, dtype=np.int64)},
            attrs={"title": "bench"},
        ).to_dict("array"), "xarray"
    except ImportError:
        return {
            "coords": {"time": {"dims": ("time",), "attrs": {}, "data": np.arange(n, dtype=np.int64)}},
            "attrs": {"title": "bench"},
            "dims": {"time": n},
            "data_vars": {
                "a": {"dims": ("time",), "attrs": {"units": "m"}, "data": np.linspace(0, 1, n)},
                "b": {"dims": ("time",), "attrs": {}, "data": np.random.default_rng(0).random(n)},
            },
        }, "dict shaped like xarray to_dict('array') (xarray not installed)"


def to_cbor(x):
    if isinstance(x, np.ndarray):
        assert x.dtype.kind in "if" and x.dtype.itemsize == 8
        le = np.little_endian if x.dtype.byteorder in "=|" else x.dtype.byteorder == "<"
        tag = (86 if le else 82) if x.dtype.kind == "f" else (79 if le else 75)
        return cbor2.CBORTag(tag, x.tobytes())
    if isinstance(x, dict):
        return {k: to_cbor(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_cbor(v) for v in x]
    return x


def cbor2_hook(*args):
    tag = next(a for a in args if isinstance(a, cbor2.CBORTag))
    dt = {86: "<f8", 82: ">f8", 79: "<i8", 75: ">i8"}.get(tag.tag)
    return np.frombuffer(tag.value, dt) if dt else tag


def msgspec_decode(buf):
    def walk(x):
        if isinstance(x, dict):
            if b"nd" in x:
                return msgpack_numpy.decode(x)
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(msgspec.msgpack.decode(buf))


def timeit(f, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def fmt(t):
    return f"{t * 1e6:,.0f} µs" if t < 1e-2 else f"{t * 1e3:,.1f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--max-exp", type=int, default=7)
    a = ap.parse_args()
    print(
        f"vh5 library {vh5.library_version()}, msgpack {'.'.join(map(str, msgpack.version))}, numpy {np.__version__}"
        + (f", msgspec {msgspec.__version__}" if msgspec else "")
    )
    rows = []
    for e in range(3, a.max_exp + 1):
        n = 10**e
        doc, what = dataset_dict(n)
        packed = msgpack.packb(doc, default=msgpack_numpy.encode)
        cb = cbor2.dumps(to_cbor(doc))
        rep = a.repeat if n <= 10**6 else max(3, a.repeat // 2)
        # correctness first: same arrays
        got, want = vh5_mn.unpackb(packed), msgpack_numpy.unpackb(packed)
        np.testing.assert_array_equal(got["data_vars"]["b"]["data"], want["data_vars"]["b"]["data"])
        assert np.shares_memory(got["data_vars"]["b"]["data"], np.frombuffer(packed, np.uint8))
        t_vh5 = timeit(lambda: vh5_mn.unpackb(packed), rep)
        t_mn = timeit(lambda: msgpack_numpy.unpackb(packed), rep)
        t_ms = timeit(lambda: msgspec_decode(packed), rep) if msgspec else float("nan")
        t_vc = timeit(lambda: vh5.decode_document(cb), rep)
        t_c2 = timeit(lambda: cbor2.loads(cb, tag_hook=cbor2_hook), rep)
        tracemalloc.start()
        vh5_mn.unpackb(packed)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append((n, len(packed), t_vh5, t_mn, t_ms, t_vc, t_c2, peak))
        print(f"n=10^{e} done", file=sys.stderr)
    print(f"\nDocument: {what}; two float64 variables + int64 coordinate of n elements.\n")
    print(
        "| n | message | vh5 (msgpack) | msgpack + msgpack-numpy | msgspec + np.frombuffer | vh5 speed-up vs msgpack-numpy | vh5 (CBOR) | cbor2 + typed-array hook | Python bytes allocated by vh5 (peak) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n, size, t_vh5, t_mn, t_ms, t_vc, t_c2, peak in rows:
        print(
            f"| 10^{len(str(n)) - 1} | {size / 1e6:,.2f} MB | {fmt(t_vh5)} | {fmt(t_mn)} | {fmt(t_ms)} | {t_mn / t_vh5:,.1f}× | {fmt(t_vc)} | {fmt(t_c2)} | {peak:,} B |"
        )
    # no arrays: 100k small items
    small = [{"i": i, "x": i * 0.5, "s": f"k{i % 100}"} for i in range(100_000 // 7)]
    packed = msgpack.packb(small)
    got = vh5_mn.unpackb(packed)
    assert got == msgpack.unpackb(packed)
    t_vh5 = timeit(lambda: vh5_mn.unpackb(packed), a.repeat)
    t_mp = timeit(lambda: msgpack.unpackb(packed), a.repeat)
    n_items = 1 + len(small) * 7
    print(f"\nNo arrays: a list of {len(small):,} maps of 3 entries ({n_items:,} items, {len(packed) / 1e6:.2f} MB):\n")
    print("| decoder | time | vs msgpack |")
    print("|---|---|---|")
    print(f"| msgpack.unpackb | {fmt(t_mp)} | 1.0× |")
    print(f"| vh5.compat.msgpack_numpy.unpackb | {fmt(t_vh5)} | {t_vh5 / t_mp:.1f}× slower |")


if __name__ == "__main__":
    main()
