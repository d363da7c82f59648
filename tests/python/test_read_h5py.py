"""vh5_read_many_slices through ctypes (minimal declarations; the real Python package is
separate) against numpy slicing of h5py reads and against versioned-hdf5 2.6.0's
read_many_slices, on files written by h5py; and the CLI's `vh5 read --save .npy`.

Library: env VH5_LIBRARY (default target/release/libvh5.so); CLI: env VH5_CLI.
h5py uses its own libhdf5: files are closed by h5py before vh5 opens them (read-only).
"""

import ctypes
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
h5py = pytest.importorskip("h5py")
from _tmpdirs import module_tmp  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LIB = os.environ.get("VH5_LIBRARY", str(REPO / "target" / "release" / "libvh5.so"))
CLI = os.environ.get("VH5_CLI", str(REPO / "target" / "release" / "vh5"))
if not os.path.exists(LIB):
    pytest.skip(f"{LIB} not built (cargo build --release)", allow_module_level=True)
if os.path.basename(LIB).startswith("libvh5_h5py"):
    # The h5py-bound build resolves its libhdf5 symbols against h5py's, which only the
    # package's loader puts in global scope (these single-threaded tests then call it
    # directly, through a CDLL object of their own: argtypes are per CDLL object).
    from vh5._lib import lib as _vh5_lib

    _vh5_lib()
    lib = ctypes.CDLL(LIB)
else:
    lib = ctypes.CDLL(LIB)
if not hasattr(lib, "vh5_read_many_slices"):
    pytest.skip(f"{LIB} has no HDF5 exports", allow_module_level=True)

DTYPE_CODES = {
    "?": 1,
    "i1": 2,
    "i2": 3,
    "i4": 4,
    "i8": 5,
    "u1": 6,
    "u2": 7,
    "u4": 8,
    "u8": 9,
    "f2": 10,
    "f4": 11,
    "f8": 12,
    "c8": 13,
    "c16": 14,
}
VH5_SLICES_CLIP = 1


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


P = ctypes.c_void_p
lib.vh5_file_open.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int64)]
lib.vh5_dataset_open.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]
lib.vh5_close.argtypes = [ctypes.c_int64]
lib.vh5_last_error_message.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.vh5_last_error_message.restype = ctypes.c_size_t
lib.vh5_read_many_slices.argtypes = [
    ctypes.c_int64,
    ctypes.POINTER(Vh5Array),
    ctypes.c_size_t,
    P,
    P,
    P,
    P,
    P,
    ctypes.c_uint32,
]


def last_error():
    buf = ctypes.create_string_buffer(8192)
    lib.vh5_last_error_message(buf, len(buf))
    return buf.value.decode()


def vh5_read(path, name, dst, src_start, dst_start, count, src_step=None, dst_step=None, flags=0):
    """Read into the numpy view `dst` (any strides); returns (status, message)."""
    f, d = ctypes.c_int64(), ctypes.c_int64()
    assert lib.vh5_file_open(str(path).encode(), 0, ctypes.byref(f)) == 0, last_error()
    try:
        assert lib.vh5_dataset_open(f, name.encode(), ctypes.byref(d)) == 0, last_error()
        # The buffer is the whole base array; offset locates element [0, ...].
        base = dst.base if dst.base is not None else dst
        while base.base is not None:
            base = base.base
        offset = dst.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        shape = (ctypes.c_uint64 * dst.ndim)(*dst.shape)
        strides = (ctypes.c_int64 * dst.ndim)(*dst.strides)
        a = Vh5Array(
            base.ctypes.data,
            base.nbytes,
            offset,
            DTYPE_CODES[dst.dtype.str[1:] if dst.dtype.kind != "b" else "?"],
            dst.itemsize,
            dst.ndim,
            shape,
            strides,
        )
        tabs = [
            np.ascontiguousarray(t, dtype=np.uint64) if t is not None else None
            for t in (src_start, dst_start, count, src_step, dst_step)
        ]
        ptrs = [t.ctypes.data if t is not None else None for t in tabs]
        st_ = lib.vh5_read_many_slices(d, ctypes.byref(a), len(tabs[2]), *ptrs, flags)
        return st_, last_error()
    finally:
        lib.vh5_close(d)
        lib.vh5_close(f)


def reference(full, dst, src_start, dst_start, count, src_step, dst_step, clip):
    out = dst.copy()
    for i in range(len(count)):
        ss, ds = [], []
        for j in range(full.ndim):
            s, d, c = int(src_start[i][j]), int(dst_start[i][j]), int(count[i][j])
            a, b = int(src_step[i][j]), int(dst_step[i][j])
            if clip:
                c = min(c, max(0, -(-(full.shape[j] - s) // a)), max(0, -(-(dst.shape[j] - d) // b)))
            if c <= 0:
                break
            ss.append(slice(s, s + (c - 1) * a + 1, a))
            ds.append(slice(d, d + (c - 1) * b + 1, b))
        else:
            out[tuple(ds)] = full[tuple(ss)]
    return out


TMP = module_tmp("vh5-py-read-")
DTYPES = ["?", "<i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", ">u8", "<f2", ">f4", "<f8", ">f8", "<c8", ">c16"]


@st.composite
def cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    dshape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    chunks = draw(st.one_of(st.none(), st.tuples(*[st.integers(1, n) for n in shape])))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    gzip = chunks is not None and draw(st.booleans())
    layout = draw(st.sampled_from(["C", "F", "stepped", "reversed"]))
    nrows = draw(st.integers(0, 5))
    row = st.tuples(
        *[
            st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(0, 4), st.integers(1, 3), st.integers(1, 3))
            for _ in range(ndim)
        ]
    )
    rows = draw(st.lists(row, min_size=nrows, max_size=nrows))
    return shape, dshape, chunks, dtype, gzip, layout, rows, draw(st.integers(0, 2**31))


def make_dst(dshape, dtype, layout):
    if layout == "F":
        return np.zeros(dshape, dtype=dtype, order="F")
    if layout == "stepped":
        return np.zeros(tuple(2 * n + 1 for n in dshape), dtype=dtype)[tuple(slice(1, None, 2) for _ in dshape)][
            tuple(slice(0, n) for n in dshape)
        ]
    if layout == "reversed":
        return np.zeros(dshape, dtype=dtype)[tuple(slice(None, None, -1) for _ in dshape)]
    return np.zeros(dshape, dtype=dtype)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_matches_numpy_slicing_of_h5py(case):
    shape, dshape, chunks, dtype, gzip, layout, rows, seed = case
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        data = rng.integers(0, 2, size=shape).astype(bool)
    elif dtype.kind == "c":
        data = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    elif dtype.kind == "f":
        data = rng.standard_normal(shape).astype(dtype)
    else:
        data = rng.integers(
            np.iinfo(dtype).min, np.iinfo(dtype).max, size=shape, dtype=dtype.newbyteorder("="), endpoint=True
        ).astype(dtype)
    path = TMP / f"c{seed}_{len(shape)}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "g/x", data=data, dtype=dtype, chunks=chunks, compression="gzip" if gzip else None, shuffle=gzip
        )
    with h5py.File(path, "r") as f:
        full = f["g/x"][()]
    ndim = len(shape)
    tab = lambda k: np.array([[r[j][k] for j in range(ndim)] for r in rows], dtype=np.uint64).reshape(len(rows), ndim)  # noqa: E731
    s, d, c, ss, ds = (tab(k) for k in range(5))
    native = dtype.newbyteorder("=") if dtype.kind != "b" else dtype
    for clip in (True, False):
        dst = make_dst(dshape, native, layout)
        dst[...] = np.ones((), dtype=native)
        before = dst.copy()
        st_, msg = vh5_read(path, "/g/x", dst, s, d, c, ss, ds, VH5_SLICES_CLIP if clip else 0)
        try:
            want = reference(full, before, s, d, c, ss, ds, clip)
            inbounds = True
        except (IndexError, ValueError):
            inbounds = False
        if not clip:
            # numpy slicing clips silently: decide strict in-bounds ourselves.
            inbounds = all(
                int(c[i][j]) == 0
                or any(int(c[i][k]) == 0 for k in range(ndim))
                or (
                    int(s[i][j]) + (int(c[i][j]) - 1) * int(ss[i][j]) < shape[j]
                    and int(d[i][j]) + (int(c[i][j]) - 1) * int(ds[i][j]) < dshape[j]
                )
                for i in range(len(rows))
                for j in range(ndim)
            )
        if clip or inbounds:
            assert st_ == 0, msg
            np.testing.assert_array_equal(dst, want)
        else:
            assert st_ == 6, (st_, msg)  # VH5_ERR_OUT_OF_BOUNDS
            assert "row " in msg and "axis " in msg
            np.testing.assert_array_equal(dst, before)


def test_clip_matches_versioned_hdf5():
    vh = pytest.importorskip(
        "versioned_hdf5.slicetools",
        reason=f"versioned-hdf5 is not installed (2.6.0 requires h5py 3.16, HDF5 2.x; this h5py {h5py.__version__} runs HDF5 {h5py.version.hdf5_version})",
    )
    rng = np.random.default_rng(7)
    path = TMP / "vh.h5"
    data = rng.standard_normal((50, 40))
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(7, 9), compression="gzip", shuffle=True)
    n = 300
    src_start = rng.integers(0, 55, size=(n, 2)).astype(np.uint64)
    dst_start = rng.integers(0, 35, size=(n, 2)).astype(np.uint64)
    count = rng.integers(0, 12, size=(n, 2)).astype(np.uint64)
    src_step = rng.integers(1, 4, size=(n, 2)).astype(np.uint64)
    dst_step = rng.integers(1, 3, size=(n, 2)).astype(np.uint64)
    want = np.full((30, 30), -1.0)
    with h5py.File(path, "r") as f:
        vh.read_many_slices(f["x"], want, src_start, dst_start, count, src_step, dst_step)
    got = np.full((30, 30), -1.0)
    st_, msg = vh5_read(path, "x", got, src_start, dst_start, count, src_step, dst_step, VH5_SLICES_CLIP)
    assert st_ == 0, msg
    np.testing.assert_array_equal(got, want)
    assert (got != -1.0).sum() > 100


def test_cli_save_npy_matches_h5py():
    if not os.path.exists(CLI):
        pytest.skip(f"{CLI} not built")
    path = TMP / "cli.h5"
    data = np.arange(60 * 50, dtype=">i4").reshape(60, 50)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(16, 16))
    table = TMP / "rows.csv"
    table.write_text("# src0,src1,dst0,dst1,c0,c1,ss0,ss1,ds0,ds1\n0,0,0,0,3,4,2,3,1,1\n50,40,3,0,2,5,1,2,1,2\n")
    out = TMP / "out.npy"
    r = subprocess.run(
        [CLI, "read", str(path), "v", "--table", str(table), "--save", str(out)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    got = np.load(out)
    want = np.zeros((5, 9), dtype="=i4")
    want[0:3, 0:4] = data[0:6:2, 0:12:3]
    want[3:5, 0:9:2] = data[50:52, 40:50:2]
    assert got.dtype == np.dtype("=i4")
    np.testing.assert_array_equal(got, want)
    assert "rows: 2 read, 0 skipped (count 0, or clipped to nothing by --clip); 22 elements copied" in r.stdout, (
        r.stdout
    )
    r = subprocess.run(
        [CLI, "read", str(path), "v", "--random", "100", "--size", "5,5", "--seed", "9"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "rows: 100 read, 0 skipped" in r.stdout and "2500 elements copied" in r.stdout, (
        r.stdout + r.stderr
    )
    # libhdf5's automatic error printing is silenced: one vh5 line, no HDF5-DIAG dump.
    r = subprocess.run(
        [CLI, "read", str(path), "nope/v", "--random", "1", "--size", "1,1"], capture_output=True, text=True
    )
    assert r.returncode == 1 and "HDF5-DIAG" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "`nope` does not exist" in r.stderr


def test_errors_through_ctypes():
    path = TMP / "err.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.zeros((4, 4)))
        f.create_dataset("s", data=np.array(["a", "bb"], dtype=h5py.string_dtype()))
    dst = np.zeros((4, 4))
    one = np.zeros((1, 2), dtype=np.uint64)
    st_, msg = vh5_read(path, "x", dst, one, one, np.full((1, 2), 5, dtype=np.uint64))
    assert st_ == 6 and "row 0 axis 0" in msg
    st_, msg = vh5_read(path, "x", dst.astype(np.float32), one, one, np.ones((1, 2), dtype=np.uint64))
    assert st_ == 7 and "dtype mismatch" in msg
    st_, msg = vh5_read(path, "s", np.zeros((2,), dtype=np.uint8), np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)))
    assert st_ == 4 and "variable-length" in msg
    f = ctypes.c_int64()
    assert lib.vh5_file_open(str(TMP / "missing.h5").encode(), 0, ctypes.byref(f)) == 9
