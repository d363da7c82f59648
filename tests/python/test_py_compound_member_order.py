"""Compound datasets whose members are not stored in offset order ({b at 8, a at 0}): vh5
moves them in the native memory type libhdf5 derives from the file type (members packed in
member order: {b at 0, a at 8}). libhdf5 sorts the members of every compound type a
conversion touches, in place (the dataset's own type in 1.10's H5Dread / H5Dwrite, vh5's
type handle in a chunk conversion), and the native type derived from a sorted type is
{a at 0, b at 8}: reads after the first one used to land each field's bits in the other
field, and ``vh5_dataset_mem_type`` described another layout than the reads used. Checked
against h5py for read / read again / write / read back, in every planner mode (each in its
own process: the mode is read once), for gzip, shuffle+fletcher32, unfiltered chunks and
contiguous storage, and for random member orders and offsets."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp  # noqa: E402
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TMP = module_tmp("vh5_member_order_")
N = 5
OUT_OF_ORDER = np.dtype({"names": ["b", "a"], "formats": ["<f4", "<i8"], "offsets": [8, 0], "itemsize": 16})
NATIVE = np.dtype({"names": ["b", "a"], "formats": ["<f4", "<i8"], "offsets": [0, 8], "itemsize": 16})
STORAGE = {
    "gzip": {"chunks": (2,), "compression": "gzip"},
    "shuffle_fletcher32": {"chunks": (2,), "shuffle": True, "fletcher32": True},
    "plain_chunks": {"chunks": (2,)},
    "contiguous": {},
}


def _fresh_mem_type(d):
    """What ``vh5_dataset_mem_type`` says now (not the copy the dataset object keeps)."""
    d._memtype = None
    return d._mem_type()[0]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Field for field equality (names in the same order; offsets may differ)."""
    if a.dtype.names is None or b.dtype.names is None:
        return a.dtype.names == b.dtype.names and np.array_equal(a, b)
    return a.dtype.names == b.dtype.names and all(_same(a[n], b[n]) for n in a.dtype.names)


def _values(dt, seed):
    x = np.zeros(N, dt)
    rng = np.random.default_rng(seed)
    for name in dt.names:
        f = x[name]
        if f.dtype.kind == "S":
            x[name] = rng.integers(0, 1000, f.shape).astype(str).astype(f.dtype)
        else:
            x[name] = (
                rng.integers(1, 100, f.shape) * (1 if f.dtype.kind == "u" else -1) ** rng.integers(0, 2, f.shape)
            ).astype(f.dtype)
    return x


def _check_storage(path, kw, file_dtype, native, seed=0):
    """Read / read again / write / read back through vh5, checking the layout it describes
    and the values against h5py at every step."""
    x = _values(file_dtype, seed)
    with h5py.File(path, "w") as h:
        h.create_dataset("c", data=x, **kw)
    with vh5.File(path, "r+") as f:
        d = f["c"]
        before = _fresh_mem_type(d)
        if native is not None:
            assert before == native, before
        for _ in range(3):
            out = np.zeros(N, before)
            vh5.read_many_slices(d, out, [0], [0], [N])
            assert _same(out, x), (out, x)
            assert _fresh_mem_type(d) == before
        y = _values(before, seed + 1)
        vh5.write_many_slices(y, d, [0], [0], [N])
        assert _fresh_mem_type(d) == before
        for _ in range(2):
            out = np.zeros(N, before)
            vh5.read_many_slices(d, out, [0], [0], [N])
            assert _same(out, y), (out, y)
        assert _fresh_mem_type(d) == before
    with h5py.File(path, "r") as h:
        assert _same(h["c"][...], y)
    with vh5.File(path) as f:  # a fresh open describes the same layout
        assert _fresh_mem_type(f["c"]) == before


def _check_all(tag):
    for name, kw in STORAGE.items():
        _check_storage(str(TMP / f"{tag}_{name}.h5"), kw, OUT_OF_ORDER, NATIVE)


@pytest.mark.parametrize("planner", ["chunks", "rows"])
def test_compound_member_order_every_planner(planner):
    """Each planner mode in a process of its own (``VH5_PLANNER`` is read once)."""
    env = dict(os.environ, VH5_PLANNER=planner)
    code = f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import conftest; import test_py_compound_member_order as t; t._check_all({planner!r})"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def test_compound_member_order_default_planner():
    _check_all("auto")


def test_compound_member_order_two_ids_of_one_dataset():
    """The layout does not change when the dataset's type was reordered before vh5 derived it
    (another id of the same open dataset read first): each id keeps its own description."""
    path = str(TMP / "two_ids.h5")
    x = _values(OUT_OF_ORDER, 3)
    with h5py.File(path, "w") as h:
        h.create_dataset("c", data=x, chunks=(2,), compression="gzip")
    with vh5.File(path) as f:
        d1 = f["c"]
        out = np.zeros(N, d1._mem_type()[0])
        vh5.read_many_slices(d1, out, [0], [0], [N])
        d2 = f["c"]
        for d in (d1, d2, d1, d2):
            dt = _fresh_mem_type(d)
            out = np.zeros(N, dt)
            vh5.read_many_slices(d, out, [0], [0], [N])
            assert _same(out[list(OUT_OF_ORDER.names)], x), (dt, out, x)


FORMATS = ["i1", "<i2", "<u4", "<i8", "<f4", "<f8", "S3", "<f8"]


@st.composite
def out_of_order_dtypes(draw):
    k = draw(st.integers(2, 4))
    formats = [draw(st.sampled_from(FORMATS)) for _ in range(k)]
    names = [f"m{i}" for i in range(k)]
    order = draw(st.permutations(range(k)))  # storage order of the members
    gaps = [draw(st.integers(0, 3)) for _ in range(k)]
    offsets, at = [0] * k, 0
    for i, g in zip(order, gaps):
        at += g
        offsets[i] = at
        at += np.dtype(formats[i]).itemsize
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": at + draw(st.integers(0, 3))})


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(dt=out_of_order_dtypes(), storage=st.sampled_from(sorted(STORAGE)), seed=st.integers(0, 1000))
def test_compound_member_order_random_layouts(dt, storage, seed):
    _check_storage(str(TMP / f"random_{storage}.h5"), STORAGE[storage], dt, None, seed)


def test_compound_member_order_kept_past_many_open_ids():
    """More open dataset ids than vh5's per-dataset caches hold (4096): the layout of an id
    read before stays what it described (it is never dropped while the id is open)."""
    path = str(TMP / "many_ids.h5")
    x = _values(OUT_OF_ORDER, 4)
    with h5py.File(path, "w") as h:
        h.create_dataset("c", data=x)  # contiguous: H5Dread sorts the dataset's own type
    with vh5.File(path) as f:
        d = f["c"]
        native = d._mem_type()[0]
        out = np.zeros(N, native)
        vh5.read_many_slices(d, out, [0], [0], [N])
        others = [f["c"] for _ in range(4200)]
        for o in others:
            o._mem_type()
        assert _fresh_mem_type(d) == native
        out = np.zeros(N, native)
        vh5.read_many_slices(d, out, [0], [0], [N])
        assert _same(out, x)
