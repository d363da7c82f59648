"""Reads served whole by the decoded-chunk cache (rows copied in row order straight from the
cached chunks) against numpy slicing of h5py reads.

Every case opens the dataset once with vh5 and reads the same rows twice: the first call
fills the dataset's decoded-chunk cache, the second finds every chunk it touches there. A
third call adds a row reaching chunks the first two never read (the cached copy stops at
the first missing chunk and the planner writes every row again), then bad rows must raise
and leave the destination as it was. Datasets: 1-4 axes, random chunk shapes, integer,
float and complex types (big-endian files read into native order, and native files into
byte-swapped destinations), gzip, shuffle+gzip, fletcher32 or no filter, partially written
(unallocated chunks read as the fill value). Rows: file-side steps (some larger than a
chunk), destination steps, clipping, overlapping destinations (the later row wins).
Destinations: C and Fortran order, stepped, reversed (negative strides), transposed; bytes
outside the destination's own elements are checked untouched.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import vh5

h5py = pytest.importorskip("h5py")
from _testkit import h5py_filter_kwargs, run_threads  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TMP = module_tmp("vh5-py-cached-gather-")
_counter = [0]

DTYPES = ["<f8", "<f4", "<i4", "<u2", "|i1", "|u1", "<i8", "<c8", "<c16", ">f8", ">i4", ">c16"]
FILTERS = ["gzip", "shuffle_gzip", "fletcher32", "none"]
DST_KINDS = ["C", "F", "stepped", "reversed", "transposed", "stepped_reversed"]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def new_path():
    _counter[0] += 1
    return str(TMP / f"c{_counter[0]}.h5")


# ----------------------------------------------------------------------------- files


def random_data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return rng.normal(size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dtype)


def write_dataset(shape, chunks, dtype, filt, partial, seed):
    """(path, h5py's read of the whole dataset in native byte order)."""
    data = random_data(shape, dtype, seed)
    kw = {"chunks": chunks, **h5py_filter_kwargs(filt)}
    path = new_path()
    fill = np.asarray(7 if dtype.kind in "iu" else -1.5).astype(dtype)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("data", shape=shape, dtype=dtype, fillvalue=fill, **kw)
        if partial:
            # Only the first chunk rows along axis 0: later chunks stay unallocated.
            half = min(shape[0], chunks[0] * max(1, (shape[0] // chunks[0]) // 2))
            d[:half] = data[:half]
        else:
            d[...] = data
    with h5py.File(path, "r") as f:
        full = f["data"][()]
    return path, full.astype(dtype.newbyteorder("="))


# ----------------------------------------------------------------------------- oracle


def expected_read(full, dst, rows, clip):
    """numpy reference: the rows applied in order (later row wins), clipped like vh5."""
    out = dst.copy()
    for s, d, c, ss, ds in zip(*rows):
        sl_s, sl_d = [], []
        for j in range(full.ndim):
            cj = int(c[j])
            if clip:
                cj = min(
                    cj,
                    max(0, -(-(full.shape[j] - int(s[j])) // int(ss[j]))),
                    max(0, -(-(dst.shape[j] - int(d[j])) // int(ds[j]))),
                )
            if cj <= 0:
                break
            sl_s.append(slice(int(s[j]), int(s[j]) + (cj - 1) * int(ss[j]) + 1, int(ss[j])))
            sl_d.append(slice(int(d[j]), int(d[j]) + (cj - 1) * int(ds[j]) + 1, int(ds[j])))
        else:
            out[tuple(sl_d)] = full[tuple(sl_s)]
    return out


def make_dst(kind, shape, dtype, fill):
    """(base array, destination view of logical ``shape``, mask of base elements outside it)."""
    shape = tuple(shape)
    if kind == "C":
        bshape, order, view = shape, "C", lambda b: b
    elif kind == "F":
        bshape, order, view = shape, "F", lambda b: b
    elif kind == "stepped":
        bshape, order, view = (
            tuple(2 * n + 1 for n in shape),
            "C",
            lambda b: b[tuple(slice(1, 1 + 2 * n, 2) for n in shape)],
        )
    elif kind == "reversed":
        bshape, order, view = shape, "C", lambda b: b[(slice(None, None, -1),) * len(shape)]
    elif kind == "transposed":
        bshape, order, view = shape[::-1], "C", lambda b: b.T
    elif kind == "stepped_reversed":
        bshape, order = tuple(3 * n for n in shape), "F"
        view = lambda b: b[tuple(slice(3 * n - 1, None, -3) for n in shape)]  # noqa: E731
    else:
        raise ValueError(kind)
    base = np.full(bshape, fill, dtype=dtype, order=order)
    outside = np.ones(bshape, dtype=bool)
    view(outside)[...] = False
    dst = view(base)
    assert dst.shape == shape
    return base, dst, outside


def as_tables(rows):
    return tuple(np.array(x, dtype=np.int64).reshape(len(rows[0]), -1) for x in rows)


# ----------------------------------------------------------------------------- strategies


@st.composite
def cases(draw, filters=FILTERS):
    ndim = draw(st.integers(1, 4))
    top = {1: 40, 2: 12, 3: 7, 4: 5}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, top), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    filt = draw(st.sampled_from(filters))
    partial = draw(st.integers(0, 3)) == 0
    seed = draw(st.integers(0, 2**31))
    return shape, chunks, dtype, filt, partial, seed


@st.composite
def row_lists(draw, src_shape, dst_shape, chunks, clip, region=None, nrows=(1, 8)):
    """``nrows`` (bounds) rows (src_start, dst_start, count, src_step, dst_step) as lists,
    file side within ``region`` (an upper bound per axis) unless clipping."""
    ndim = len(src_shape)
    region = region or src_shape
    n = draw(st.integers(*nrows))
    overlap = draw(st.booleans())
    rows = ([], [], [], [], [])
    for _ in range(n):
        s, d, c, ss, ds = [], [], [], [], []
        for j in range(ndim):
            sst = draw(st.sampled_from([1, 1, 2, 3, chunks[j] + 1, 2 * chunks[j] + 1]))
            dst_ = draw(st.sampled_from([1, 1, 2, 3]))
            if clip:
                sj = draw(st.integers(0, src_shape[j] + 1))
                dj = draw(st.integers(0, 1 if overlap else dst_shape[j] + 1))
                cj = draw(st.integers(0, max(src_shape[j], dst_shape[j]) + 2))
            else:
                sj = draw(st.integers(0, region[j] - 1))
                dj = draw(st.integers(0, min(1, dst_shape[j] - 1) if overlap else dst_shape[j] - 1))
                cmax = min((region[j] - 1 - sj) // sst, (dst_shape[j] - 1 - dj) // dst_) + 1
                cj = draw(st.integers(0 if draw(st.integers(0, 9)) == 0 else 1, cmax))
            for lst, v in zip((s, d, c, ss, ds), (sj, dj, cj, sst, dst_)):
                lst.append(v)
        for lst, v in zip(rows, (s, d, c, ss, ds)):
            lst.append(v)
    return rows


def first_chunk_region(shape, chunks):
    """The dataset's first chunk slab along the first axis with more than one chunk (rows
    inside it leave the other chunks uncached), or the whole shape."""
    for j, (n, c) in enumerate(zip(shape, chunks)):
        if n > c:
            return tuple(c if k == j else m for k, m in enumerate(shape))
    return tuple(shape)


# ----------------------------------------------------------------------------- the property


def read(vd, rows, dst, clip, use_steps):
    s, d, c, ss, ds = as_tables(rows)
    vh5.read_many_slices(vd, dst, s, d, c, ss if use_steps[0] else None, ds if use_steps[1] else None, clip=clip)


def check_call(vd, full, rows, dst_shape, kind, dtype, clip, use_steps):
    base, dst, outside = make_dst(kind, dst_shape, dtype, 99)
    before = base.copy()
    read(vd, rows, dst, clip, use_steps)
    want = expected_read(full.astype(dtype), make_dst(kind, dst_shape, dtype, 99)[1], as_tables(rows), clip)
    np.testing.assert_array_equal(dst, want)
    np.testing.assert_array_equal(base[outside], before[outside])
    return base, dst


def unit_steps(rows, use_steps):
    """Rows with the steps a call without src_step / dst_step tables uses."""
    s, d, c, ss, ds = rows
    ones = [[1] * len(r) for r in s]
    return s, d, c, ss if use_steps[0] else ones, ds if use_steps[1] else ones


def run_case(case, data, nrows=(1, 8)):
    shape, chunks, dtype, filt, partial, seed = case
    path, full = write_dataset(*case)
    dst_shape = tuple(data.draw(st.integers(1, n + 3)) for n in shape)
    clip = data.draw(st.booleans())
    use_steps = (data.draw(st.booleans()), data.draw(st.booleans()))
    region = first_chunk_region(shape, chunks)
    rows = unit_steps(data.draw(row_lists(shape, dst_shape, chunks, clip, region, nrows)), use_steps)
    native = dtype.newbyteorder("=")
    orders = [native if data.draw(st.integers(0, 3)) else native.newbyteorder("S") for _ in range(3)]
    kinds = [data.draw(st.sampled_from(DST_KINDS)) for _ in range(3)]
    with vh5.File(path) as f, f["data"] as vd:
        # 1: fills the cache; 2: the same rows, every chunk cached.
        check_call(vd, full, rows, dst_shape, kinds[0], orders[0], clip, use_steps)
        check_call(vd, full, rows, dst_shape, kinds[1], orders[1], clip, use_steps)
        # 3: cached rows around a row reaching every chunk (the uncached ones mid-call).
        k = data.draw(st.integers(0, len(rows[0])))
        whole = (
            [0] * len(shape),
            [0] * len(shape),
            [min(a, b) for a, b in zip(shape, dst_shape)],
            [1] * len(shape),
            [1] * len(shape),
        )
        rows3 = tuple(r[:k] + [w] + r[k:] + r[:k] for r, w in zip(rows, whole))
        check_call(vd, full, rows3, dst_shape, kinds[2], orders[2], clip, (True, True))
        # Bad rows after cached ones: an error, nothing written.
        bad = data.draw(st.sampled_from(["src_oob", "dst_oob", "src_step0", "dst_step0"]))
        rows_bad = tuple([list(x) for x in r] for r in rows)
        j = data.draw(st.integers(0, len(shape) - 1))
        row = ([0] * len(shape), [0] * len(shape), [1] * len(shape), [1] * len(shape), [1] * len(shape))
        if bad == "src_oob" and not clip:
            row[0][j] = shape[j]
        elif bad == "dst_oob" and not clip:
            row[1][j], row[2][j] = dst_shape[j] - 1, 2
        elif bad in ("src_step0", "src_oob"):
            row[3][j] = 0
        else:
            row[4][j] = 0
        at = data.draw(st.integers(0, len(rows_bad[0])))
        for r, v in zip(rows_bad, row):
            r.insert(at, v)
        base, dst, _ = make_dst(kinds[0], dst_shape, native, 99)
        before = base.copy()
        err = vh5.InvalidArgumentError if "step0" in bad or clip else vh5.OutOfBoundsError
        with pytest.raises(err):
            read(vd, rows_bad, dst, clip, (True, True))
        np.testing.assert_array_equal(base, before)
        # The dataset still reads right after the failed call.
        check_call(vd, full, rows, dst_shape, kinds[0], native, clip, use_steps)


@settings(max_examples=80, **SETTINGS)
@given(case=cases(), data=st.data())
def test_cached_gather_matches_numpy(case, data):
    run_case(case, data)


@settings(max_examples=40, **SETTINGS)
@given(case=cases(), data=st.data())
def test_cached_gather_lookahead_many_rows(case, data):
    """More rows than the copy looks ahead (each row's first chunk looked up and its bytes
    prefetched 8 rows early): the same property over 9-40 rows, empty and clipped rows
    among them."""
    run_case(case, data, nrows=(9, 40))


def test_cached_gather_lookahead_one_row_per_chunk():
    """One row per chunk in random order over 64 chunks, half of them cached: rows read
    nothing (a zero count, or clipped away past the extent) among them, the rows ahead of a
    missing chunk copied first, then the planner writes every row again. Every call equals
    numpy's, and a later call with every chunk cached too."""
    path, full = write_dataset((256,), (4,), np.dtype("<f8"), "gzip", False, 5)
    rng = np.random.default_rng(7)
    with vh5.File(path) as f, f["data"] as vd:
        evens = ([[s] for s in range(0, 256, 8)], [[i] for i in range(32)], [[1]] * 32, [[1]] * 32, [[1]] * 32)
        check_call(vd, full, evens, (32,), "C", np.dtype("f8"), False, (False, False))
        order = rng.permutation(64)
        rows = ([], [], [], [], [])
        for i, c in enumerate(order):
            kind = i % 7
            s, cnt = 4 * int(c) + int(rng.integers(0, 3)), 2
            if kind == 3:
                cnt = 0
            elif kind == 5:
                s = 256 + int(c)  # past the extent: clipped to nothing
            for lst, v in zip(rows, ([s], [2 * i], [cnt], [1], [1])):
                lst.append(v)
        # Half the chunks cached (the planner takes over), then all of them (the copy alone).
        check_call(vd, full, rows, (128,), "C", np.dtype("f8"), True, (False, False))
        check_call(vd, full, rows, (128,), "reversed", np.dtype("f8"), True, (True, True))


def test_cached_gather_unfiltered_chunks_located_by_index():
    """Unfiltered datasets fill the cache through the chunk index, which the default mode
    builds only for calls reading 16 chunks or more: here it is used for every call."""
    code = f"""
import sys
sys.path[:0] = [{str(Path(__file__).parent)!r}]
if {os.environ.get("VH5_TEST_INSTALLED") != "1"!r}:
    sys.path.insert(0, {str(REPO / "bindings" / "python")!r})
import test_py_cached_gather as t
from hypothesis import given, settings, strategies as st
@settings(max_examples=25, **t.SETTINGS)
@given(case=t.cases(filters=["none"]), data=st.data())
def run(case, data):
    t.run_case(case, data)
run()
print("ok")
"""
    env = dict(os.environ, VH5_CHUNK_INDEX="always")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr


# ----------------------------------------------------------------------------- targeted


def test_cached_gather_overlaps_row_order_and_partial_fill():
    """Overlapping rows on a cached gzip dataset: the later row wins, also when a row in the
    middle reaches an unallocated chunk (fill value) and the planner takes the call over."""
    path, full = write_dataset((12, 10), (4, 5), np.dtype("<f8"), "gzip", True, 3)
    assert (full[4:] == -1.5).all()
    with vh5.File(path) as f, f["data"] as vd:
        rows = (
            [[0, 0], [1, 2], [3, 5]],
            [[0, 0], [0, 1], [1, 0]],
            [[3, 5], [3, 4], [2, 3]],
            [[1, 1], [1, 1], [1, 2]],
            [[1, 1], [1, 1], [1, 1]],
        )
        for _ in range(2):
            check_call(vd, full, rows, (4, 6), "C", np.dtype("f8"), False, (True, True))
        rows3 = tuple(r[:2] + [w] + r[2:] + r[:1] for r, w in zip(rows, ([6, 0], [0, 0], [4, 6], [1, 1], [1, 1])))
        check_call(vd, full, rows3, (4, 6), "reversed", np.dtype("f8"), False, (True, True))
        check_call(vd, full, rows, (4, 6), "F", np.dtype("f8"), False, (True, True))


def test_cached_gather_two_threads():
    """Two Python threads reading one open dataset: warmed first (every chunk cached), or
    cold (one thread's planner fills the cache, with the libhdf5 lock released while its
    chunks are decoded, as the other copies from cached chunks). Every result right."""
    for filt, dtype, warm in [
        ("gzip", "<f8", True),
        ("shuffle_gzip", ">i4", False),
        ("fletcher32", "<c8", True),
        ("gzip", "<i2", False),
    ]:
        path, full = write_dataset((40, 36), (5, 4), np.dtype(dtype), filt, False, 11)
        native = np.dtype(dtype).newbyteorder("=")
        with vh5.File(path) as f, f["data"] as vd:
            if warm:
                everything = np.empty(full.shape, native)
                vh5.read_many_slices(vd, everything, [0, 0], [0, 0], list(full.shape))
                np.testing.assert_array_equal(everything, full)
            errors = []

            def worker(seed, vd=vd, full=full, native=native, errors=errors):
                rng = np.random.default_rng(seed)
                try:
                    for it in range(120):
                        n = int(rng.integers(1, 30))
                        top = 30 if it % 10 == seed else 5
                        c = rng.integers(1, top, size=(n, 2))
                        s = rng.integers(0, np.array(full.shape) - c + 1)
                        ss = np.ones_like(c)
                        d = rng.integers(0, 30 - c + 1)
                        dst = np.zeros((30, 30), native, order="F" if seed % 2 else "C")
                        vh5.read_many_slices(vd, dst, s, d, c, ss)
                        want = expected_read(full, np.zeros((30, 30), native), (s, d, c, ss, np.ones_like(c)), False)
                        np.testing.assert_array_equal(dst, want)
                except Exception as e:  # noqa: BLE001 - reported by the main thread
                    errors.append(e)

            run_threads(worker, [(k,) for k in range(2)])
            assert not errors, errors
