"""vh5.compat.versioned_hdf5.read_many_slices side by side with versioned-hdf5 2.6.0's own.

The same random inputs (valid, out of bounds, and faulty: negative / float coordinates,
step 0, wrong shapes, dtype / ndim mismatch, read-only or empty arrays) go to both; they
must write the same values or raise the same exception type.
"""

import numpy as np
import pytest
import vh5  # noqa: E402
from vh5.compat import versioned_hdf5 as shim  # noqa: E402

h5py = pytest.importorskip("h5py")
slicetools = pytest.importorskip(
    "versioned_hdf5.slicetools",
    reason=f"versioned-hdf5 is not installed (2.6.0 requires h5py 3.16, HDF5 2.x; this h5py {h5py.__version__} runs HDF5 {h5py.version.hdf5_version})",
)
from _tmpdirs import module_tmp  # noqa: E402
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

TMP = module_tmp("vh5-py-compat-")
_n = [0]


def h5_dataset(shape, dtype, chunks, seed):
    _n[0] += 1
    path = str(TMP / f"c{_n[0]}.h5")
    rng = np.random.default_rng(seed)
    data = (rng.normal(size=shape) * 100).astype(dtype)
    with h5py.File(path, "w") as f:
        kw = {"chunks": chunks} if chunks else {}
        f.create_dataset("d", data=data, **kw)
    return path, data


def run_both(src, dst, *args, **kw):
    """Run the original and the shim on copies of dst; return ((result, exc) x 2)."""
    outs = []
    for fn in (slicetools.read_many_slices, shim.read_many_slices):
        d = dst.copy(order="K") if isinstance(dst, np.ndarray) else dst
        if isinstance(dst, np.ndarray) and not dst.flags.writeable:
            d.flags.writeable = False
        try:
            fn(src, d, *args, **kw)
            outs.append((d, None))
        except Exception as e:  # noqa: BLE001 - compared below
            outs.append((d, e))
    return outs


def assert_same_outcome(outs):
    (d1, e1), (d2, e2) = outs
    if e1 is None:
        assert e2 is None, f"original succeeded, shim raised {type(e2).__name__}: {e2}"
        np.testing.assert_array_equal(d2, d1)
    else:
        assert e2 is not None, f"original raised {type(e1).__name__}: {e1}; shim succeeded"
        assert isinstance(e2, type(e1)), (
            f"original raised {type(e1).__name__}: {e1}; shim raised {type(e2).__name__}: {e2}"
        )


@st.composite
def coord(draw, ndim, nrows, lo, hi, fault):
    shape_kind = draw(st.sampled_from(["2d", "2d", "1d"])) if nrows > 0 else "2d"
    rows = 1 if shape_kind == "1d" else nrows
    vals = np.array(draw(st.lists(st.integers(lo, hi), min_size=rows * ndim, max_size=rows * ndim)), dtype=np.int64)
    a = vals.reshape(rows, ndim) if shape_kind == "2d" else vals.reshape(ndim)
    if fault == "negative" and a.size:
        a = a.copy()
        a.flat[draw(st.integers(0, a.size - 1))] = -draw(st.integers(1, 5))
    if fault == "float":
        a = a + draw(st.sampled_from([0.25, 0.5, 0.99]))
    if fault == "wrong_columns":
        a = np.concatenate([a, np.zeros(a.shape[:-1] + (1,), np.int64)], axis=-1)
    if fault == "3d":
        a = a.reshape((1,) + a.shape)
    as_list = draw(st.booleans())
    return a.tolist() if as_list else a


FAULTS = ["none"] * 8 + [
    "negative",
    "float",
    "wrong_columns",
    "3d",
    "step0",
    "dtype",
    "ndim",
    "readonly",
    "empty_dst",
    "rows_mismatch",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_differential_against_versioned_hdf5(data):
    draw = data.draw
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(["<f8", "<i4", "<f4", ">f8", "|u1"])))
    chunks = tuple(draw(st.integers(1, n)) for n in shape) if draw(st.booleans()) else None
    path, full = h5_dataset(shape, dtype, chunks, draw(st.integers(0, 1000)))
    fault = draw(st.sampled_from(FAULTS))
    dshape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    ddtype = dtype
    if fault == "dtype":
        ddtype = np.dtype(draw(st.sampled_from(["<f8", "<i4", "<f4", ">f8", "|u1", "<i8"])))
    if fault == "ndim":
        dshape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=3)))
    if fault == "empty_dst":
        dshape = (0,) + dshape[1:]
    layout = draw(st.sampled_from(["C", "F", "reversed", "stepped"]))
    dst = np.arange(int(np.prod(dshape)) * 2, dtype=np.int64).astype(ddtype)[: int(np.prod(dshape))].reshape(dshape)
    if layout == "F":
        dst = np.asfortranarray(dst)
    elif layout == "reversed" and dst.ndim:
        dst = dst[::-1]
    elif layout == "stepped" and dst.ndim:
        big = np.repeat(dst, 2, axis=-1)
        dst = big[..., ::2]
    if fault == "readonly":
        dst = dst.copy()
        dst.flags.writeable = False
    nrows = draw(st.integers(0, 8))
    hi = max(max(shape), max(dshape) if dshape else 1) + 2
    kinds = {k: "none" for k in ("src_start", "dst_start", "count", "src_stride", "dst_stride")}
    if fault in ("negative", "float", "wrong_columns", "3d"):
        kinds[draw(st.sampled_from(list(kinds)))] = fault
    src_start = draw(coord(ndim, nrows, 0, hi, kinds["src_start"]))
    dst_start = draw(coord(ndim, nrows, 0, hi, kinds["dst_start"]))
    count = draw(coord(ndim, nrows, 0, hi, kinds["count"]))
    use_steps = (
        draw(st.booleans()) or fault == "step0" or kinds["src_stride"] != "none" or kinds["dst_stride"] != "none"
    )
    src_stride = draw(coord(ndim, nrows, 1, 3, kinds["src_stride"])) if use_steps else None
    dst_stride = draw(coord(ndim, nrows, 1, 3, kinds["dst_stride"])) if use_steps else None
    if fault == "step0" and np.size(src_stride):
        a = np.array(src_stride, dtype=np.int64)
        a.flat[draw(st.integers(0, a.size - 1))] = 0
        src_stride = a
    if fault == "rows_mismatch" and nrows > 0:
        count = np.ones((nrows + 1, ndim), np.int64)
    with h5py.File(path, "r") as f:
        outs = run_both(f["d"], dst, src_start, dst_start, count, src_stride, dst_stride)
    e1 = outs[0][1]
    event(f"fault={fault} outcome={type(e1).__name__ if e1 else 'written'}")
    assert_same_outcome(outs)


def test_fixed_cases_side_by_side():
    path, full = h5_dataset((10, 10), "<f8", (3, 3), 1)
    cases = [
        ([8, 8], [0, 0], [5, 5], None, None),  # clipped by src
        ([0, 0], [8, 8], [5, 5], None, None),  # clipped by dst
        ([12, 0], [0, 0], [5, 5], None, None),  # start past the end: skipped
        ([[0, 0], [5, 5]], [[0, 0], [0, 0]], [[3, 3], [3, 3]], None, None),  # overlap: later wins
        ([1.7, 0], [0, 0], [1.9, 1], None, None),  # floats truncated
        ([0, 0], [0, 0], [4, 4], [3, 3], [2, 2]),  # steps
        ([2**64 - 1, 0], [0, 0], [1, 1], None, None),  # huge start
        ([-1, 0], [0, 0], [1, 1], None, None),  # OverflowError
        (np.array([-1, 0]), [0, 0], [1, 1], None, None),  # OverflowError from an ndarray
        ([0, 0], [0, 0], [2, 2], [0, 1], None),  # step 0
        ([0, 0], [0, 0], [2, 2], [0.5, 1], None),  # float step truncated to 0
        ([[[0, 0]]], [0, 0], [1, 1], None, None),  # 3-D coordinates
        ([0, 0, 0], [0, 0], [1, 1], None, None),  # wrong columns
        (np.zeros((0, 2)), [0, 0], [1, 1], None, None),  # zero rows
        ([], [], [], None, None),  # empty 1-D coordinate arrays
        (["a", 0], [0, 0], [1, 1], None, None),  # not a number
        ([np.nan, 0], [0, 0], [1, 1], None, None),
        ([0, 0], [0, 0], None, None, None),  # count None: TypeError
    ]
    with h5py.File(path, "r") as f:
        for s, d, c, ss, ds in cases:
            for dst in (
                np.zeros((10, 10)),
                np.zeros((10, 10), order="F"),
                np.zeros((10, 10))[::-1],
                np.zeros((10, 20))[:, ::2],
            ):
                assert_same_outcome(run_both(f["d"], dst, s, d, c, ss, ds))
        ro = np.zeros((10, 10))
        ro.flags.writeable = False
        for dst in (
            np.zeros(()),
            np.zeros(10),
            np.zeros((10, 10), "f4"),
            np.zeros((10, 10), ">f8"),
            ro,
            np.zeros((0, 10)),
        ):
            assert_same_outcome(run_both(f["d"], dst, [0, 0], [0, 0], [3, 3]))


def test_big_endian_dataset_and_destination():
    path, full = h5_dataset((6, 7), ">i4", (2, 3), 2)
    with h5py.File(path, "r") as f:
        dst = np.zeros((6, 7), ">i4")
        outs = run_both(f["d"], dst, [[0, 0], [3, 2]], [[0, 0], [3, 2]], [3, 4])
        assert_same_outcome(outs)
        assert outs[1][0].dtype == np.dtype(">i4") and (outs[1][0][3:6, 2:6] == full[3:6, 2:6]).all()


def test_vh5_dataset_source_and_fast_flag_ignored():
    path, full = h5_dataset((10, 10), "<f8", (4, 4), 3)
    with vh5.File(path) as f, f["d"] as d:
        dst = np.zeros((10, 10), order="F")
        shim.read_many_slices(d, dst, [[0, 0], [5, 5]], [[0, 0], [5, 5]], [5, 5], fast=True)
    want = np.zeros((10, 10))
    want[:5, :5], want[5:, 5:] = full[:5, :5], full[5:, 5:]
    np.testing.assert_array_equal(dst, want)


def test_other_directions_delegate_or_raise(monkeypatch):
    src = np.arange(100.0).reshape(10, 10)
    a, b = np.zeros((10, 10)), np.zeros((10, 10))
    slicetools.read_many_slices(src, a, [2, 2], [0, 0], [3, 3])
    monkeypatch.setattr(shim, "_original", lambda: None)
    shim.read_many_slices(src, b, [2, 2], [0, 0], [3, 3])  # numpy -> numpy: vh5 itself
    np.testing.assert_array_equal(a, b)
    with pytest.raises(NotImplementedError, match="install versioned-hdf5"):
        shim.read_many_slices(src.tolist(), b, [2, 2], [0, 0], [3, 3])  # a list: not handled


def test_hdf5_failure_is_runtime_error():
    """A corrupted chunk: libhdf5 fails to decompress -> RuntimeError in both."""
    path, full = h5_dataset((64, 64), "<f8", (64, 64), 4)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=full, chunks=(64, 64), compression="gzip")
        info = f["d"].id.get_chunk_info(0)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + 10)
        fh.write(b"\xff" * 64)
    with h5py.File(path, "r") as f:
        outs = run_both(f["d"], np.zeros((64, 64)), [0, 0], [0, 0], [64, 64])
    assert isinstance(outs[0][1], RuntimeError)
    assert_same_outcome(outs)
    assert isinstance(outs[1][1], vh5.HDF5Error)  # carries the libhdf5 error stack
