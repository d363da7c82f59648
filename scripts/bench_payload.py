#!/usr/bin/env python3
"""Benchmark: vh5 payload_decode_view (+ payload_decode_count) vs cbor2.loads + np.frombuffer
(+ np.asarray(count)) on a Reductionist-shaped float64 result of shape (365, 180, 360)
(23.65 M elements, 189 MB), once with `count` as a CBOR int array (values above 256) and
once with `count_as_bytes`. Same bytes for both decoders; median of several runs; peak
Python allocations (tracemalloc) and peak RSS growth (VmHWM, reset before the runs, in a fresh subprocess per case).

Usage: python3 scripts/bench_payload.py [--repeat N] [--lib target/release/libvh5.so]
Prints a markdown table. Build first: cargo build --release.
"""

import argparse
import ctypes
import json
import os
import pathlib
import statistics
import struct
import subprocess
import sys
import time
import tracemalloc

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHAPE = (365, 180, 360)


def cbor_text(s):
    b = s.encode()
    assert len(b) < 24
    return bytes([0x60 + len(b)]) + b


def cbor_bytes_head(n):
    return (
        b"\x5a" + struct.pack(">I", n)
        if n >= 65536
        else (b"\x59" + struct.pack(">H", n) if n >= 256 else (b"\x58" + bytes([n]) if n >= 24 else bytes([0x40 + n])))
    )


def make_message(count_as_bytes):
    """A Reductionist 0.13.1 response (serde_cbor key order), built with numpy for speed."""
    n = int(np.prod(SHAPE))
    data = np.linspace(-1.0, 1.0, n).astype("<f8").tobytes()
    counts = 256 + (np.arange(n, dtype=np.int64) % 4000)  # 2-byte CBOR ints (0x19 hh ll)
    parts = [
        b"\xa7",
        cbor_text("bytes"),
        cbor_bytes_head(len(data)),
        data,
        cbor_text("dtype"),
        cbor_text("float64"),
        cbor_text("shape"),
        bytes([0x83]) + b"".join(b"\x19" + struct.pack(">H", s) for s in SHAPE),
        cbor_text("shape_as_bytes"),
        b"\x40",
        cbor_text("count"),
    ]
    if count_as_bytes:
        cab = counts.astype("<i8").tobytes()
        parts += [b"\x80", cbor_text("count_as_bytes"), cbor_bytes_head(len(cab)), cab]
    else:
        arr = np.empty(n, dtype=[("h", "u1"), ("v", ">u2")])
        arr["h"] = 0x19
        arr["v"] = counts
        parts += [b"\x9a" + struct.pack(">I", n), arr.tobytes(), cbor_text("count_as_bytes"), b"\x40"]
    parts += [cbor_text("byte_order"), cbor_text("little")]
    return b"".join(parts)


class View(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("data_len", ctypes.c_size_t),
        ("data_offset", ctypes.c_size_t),
        ("format", ctypes.c_uint32),
        ("layout", ctypes.c_uint32),
        ("dtype", ctypes.c_uint32),
        ("itemsize", ctypes.c_uint32),
        ("byte_order", ctypes.c_uint32),
        ("needs_swap", ctypes.c_uint8),
        ("aligned", ctypes.c_uint8),
        ("fortran_order", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8),
        ("ndim", ctypes.c_uint32),
        ("shape", ctypes.c_uint64 * 64),
        ("nelements", ctypes.c_uint64),
        ("count_form", ctypes.c_uint32),
        ("count_dtype", ctypes.c_uint32),
        ("count_byte_order", ctypes.c_uint32),
        ("count_len", ctypes.c_uint64),
        ("count_scalar", ctypes.c_int64),
        ("count_data", ctypes.c_void_p),
        ("count_offset", ctypes.c_size_t),
    ]


def vh5_decode(lib, buf):
    """View + numpy arrays over the caller's buffer; the count decoded into int64 (or viewed)."""
    v = View()
    n = len(buf)
    st = lib.payload_decode_view(buf, n, 0, ctypes.byref(v))
    assert st == 0, st
    base = ctypes.cast(buf, ctypes.c_void_p).value
    data = np.frombuffer(buf, dtype="<f8", count=v.data_len // 8, offset=v.data - base).reshape(
        tuple(v.shape[: v.ndim])
    )
    if v.count_form == 2:  # BYTES: a view, no copy
        count = np.frombuffer(buf, dtype="<i8", count=v.count_len, offset=v.count_data - base)
    else:
        count = np.empty(v.count_len, dtype=np.int64)
        w = ctypes.c_size_t()
        st = lib.payload_decode_count(buf, n, count.ctypes.data_as(ctypes.c_void_p), v.count_len, ctypes.byref(w))
        assert st == 0 and w.value == v.count_len
    return data, count


def cbor2_decode(buf):
    import cbor2

    m = cbor2.loads(buf)
    data = np.frombuffer(m["bytes"], dtype="<f8").reshape(m["shape"])
    count = np.frombuffer(m["count_as_bytes"], dtype="<i8") if m["count_as_bytes"] else np.asarray(m["count"])
    return data, count


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak_rss():
    """Reset VmHWM (Linux >= 4.0: write 5 to clear_refs) and return the current RSS in kB."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status_kb("VmRSS")


def msg_path(case):
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), f"vh5_bench_payload_{case}.cbor")


def measure(case, method, repeat, libpath):
    """Runs in a fresh process: times `repeat` runs, then one more under tracemalloc."""
    buf = pathlib.Path(msg_path(case)).read_bytes()  # one allocation: the RSS baseline is clean
    lib = None
    if method == "vh5":
        lib = ctypes.CDLL(libpath)
        lib.payload_decode_view.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.POINTER(View)]
        lib.payload_decode_count.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_size_t),
        ]
        fn = lambda: vh5_decode(lib, buf)  # noqa: E731
        lib.payload_decode_view.restype = lib.payload_decode_count.restype = ctypes.c_int
        view_only = []
        for _ in range(repeat):
            v = View()
            t = time.perf_counter()
            lib.payload_decode_view(buf, len(buf), 0, ctypes.byref(v))
            view_only.append(time.perf_counter() - t)
    else:
        fn = lambda: cbor2_decode(buf)  # noqa: E731
        view_only = [float("nan")]
    rss0 = reset_peak_rss()  # message read, library loaded: peak RSS counts from here
    # correctness of this decoder's result (both see the same bytes)
    data, count = fn()
    assert (
        data.shape == SHAPE
        and count.dtype == np.int64
        and count[0] == 256
        and count[-1] == 256 + (count.size - 1) % 4000
    )
    del data, count
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = fn()
        times.append(time.perf_counter() - t)
        del r
    rss1 = _status_kb("VmHWM")
    tracemalloc.start()
    r = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del r
    return {
        "median_s": statistics.median(times),
        "view_only_s": statistics.median(view_only),
        "tracemalloc_peak_mb": peak / 1e6,
        "rss_growth_mb": (rss1 - rss0) / 1024,
        "message_mb": len(buf) / 1e6,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lib", default=str(ROOT / "target" / "release" / "libvh5.so"))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(a.child[0], a.child[1], a.repeat, a.lib)))
        return
    res = {}
    for case in ("count_array", "count_as_bytes"):
        pathlib.Path(msg_path(case)).write_bytes(make_message(case == "count_as_bytes"))
        for method in ("vh5", "cbor2"):
            out = subprocess.run(
                [sys.executable, __file__, "--repeat", str(a.repeat), "--lib", a.lib, "--child", case, method],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            res[case, method] = json.loads(out)
        os.unlink(msg_path(case))
    n = int(np.prod(SHAPE))
    print(
        f"Reductionist-shaped float64 {SHAPE} ({n / 1e6:.2f} M elements); median of {a.repeat} runs; "
        f"memory = tracemalloc peak (Python allocations) and peak RSS growth (VmHWM after resetting it) over the timed runs.\n"
    )
    print(
        "| count stored as | message | vh5 view only | vh5 view + count | cbor2.loads + numpy | speed-up | vh5 peak (tracemalloc / RSS growth) | cbor2 peak (tracemalloc / RSS growth) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for case in ("count_array", "count_as_bytes"):
        v, c = res[case, "vh5"], res[case, "cbor2"]
        print(
            f"| {case} | {v['message_mb']:.0f} MB | {v['view_only_s'] * 1e6:.1f} µs | {v['median_s'] * 1e3:.3f} ms | "
            f"{c['median_s'] * 1e3:.0f} ms | {c['median_s'] / v['median_s']:.0f}x | "
            f"{v['tracemalloc_peak_mb']:.1f} MB / {v['rss_growth_mb']:.0f} MB | {c['tracemalloc_peak_mb']:.0f} MB / {c['rss_growth_mb']:.0f} MB |"
        )
    print(f"\n(int64 count output alone: {n * 8 / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
