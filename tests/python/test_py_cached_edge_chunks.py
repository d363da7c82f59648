"""Decoded-chunk cache entries of partial edge chunks (only the chunk's box inside the
dataset is kept) against h5py's reads of the same selections.

Datasets of 1-4 axes whose chunks reach past the extent on some axes (chunk dims larger
than the axis, or extents that are no multiple of the chunk), unfiltered, gzip, shuffle or
shuffle+gzip, little- and big-endian element types (big-endian ones are kept byte-swapped:
the cache's memory form 1). Each case reads random hyperslab tables several times on one
open vh5 dataset (the first call fills the cache, the next find their chunks there; a call
adding rows elsewhere mixes cached and uncached chunks), into destinations of several
layouts with destination steps, every call compared to h5py's read of each row. Cache hits
are counted by the CLI's `vh5 read --repeat` summary (the only place vh5 reports them); a
child process repeats the property with a cache of a few hundred bytes (evictions between
calls).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import vh5

h5py = pytest.importorskip("h5py")
from _tmpdirs import module_tmp  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TMP = module_tmp("vh5-py-cached-edge-")
CLI = os.environ.get("VH5_CLI", str(REPO / "target" / "release" / "vh5"))
_counter = [0]

DTYPES = ["<f8", ">f8", "<i4", ">i4", ">i2", "<u2", "|u1", ">c8"]
FILTERS = {
    "none": {},
    "gzip": {"compression": "gzip"},
    "shuffle": {"shuffle": True},
    "shuffle_gzip": {"compression": "gzip", "shuffle": True},
}
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def new_path():
    _counter[0] += 1
    return str(TMP / f"e{_counter[0]}.h5")


def write_dataset(shape, chunks, dtype, filt, seed):
    """Path of a new file with dataset "data" (every chunk written)."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-100, 100, size=shape)
    if dtype.kind == "u":
        data = np.abs(data)
    data = (data * (1.5 if dtype.kind in "fc" else 1)).astype(dtype)
    path = new_path()
    # (h5py takes chunks larger than an axis only when that axis may grow.)
    maxshape = tuple(None if c > n else n for n, c in zip(shape, chunks))
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("data", data=data, chunks=chunks, maxshape=maxshape, **FILTERS[filt])
    return path


@st.composite
def edge_cases(draw):
    """(shape, chunks, dtype, filter, seed): some axis has a chunk larger than its extent
    or an extent that is no multiple of its chunk."""
    ndim = draw(st.integers(1, 4))
    top = {1: 60, 2: 14, 3: 8, 4: 5}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, top), min_size=ndim, max_size=ndim)))
    chunks = []
    for n in shape:
        kind = draw(st.sampled_from(["over", "over", "ragged", "any"]))
        if kind == "over":
            chunks.append(draw(st.integers(n + 1, n + 40)))
        elif kind == "ragged" and n > 2:
            chunks.append(draw(st.integers(2, n - 1).filter(lambda c, n=n: n % c)))
        else:
            chunks.append(draw(st.integers(1, n)))
    if all(n % c == 0 for n, c in zip(shape, chunks)):
        chunks[0] = shape[0] + draw(st.integers(1, 9))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    filt = draw(st.sampled_from(sorted(FILTERS)))
    return shape, tuple(chunks), dtype, filt, draw(st.integers(0, 2**31))


@st.composite
def tables(draw, shape, dst_shape, whole_row=False):
    """Rows (src_start, dst_start, count, src_step, dst_step), each a list per row; with
    ``whole_row`` first a row from the origin as large as both shapes allow."""
    ndim = len(shape)
    rows = ([], [], [], [], [])
    if whole_row:
        count = [min(a, b) for a, b in zip(shape, dst_shape)]
        for col, v in zip(rows, ([0] * ndim, [0] * ndim, count, [1] * ndim, [1] * ndim)):
            col.append(v)
    for _ in range(draw(st.integers(1, 6))):
        s, d, c, ss, ds = [], [], [], [], []
        for j in range(ndim):
            sst, dst_ = draw(st.sampled_from([1, 1, 2, 3])), draw(st.sampled_from([1, 1, 2]))
            sj = draw(st.integers(0, shape[j] - 1))
            dj = draw(st.integers(0, dst_shape[j] - 1))
            cmax = min((shape[j] - 1 - sj) // sst, (dst_shape[j] - 1 - dj) // dst_) + 1
            for lst, v in zip((s, d, c, ss, ds), (sj, dj, draw(st.integers(1, cmax)), sst, dst_)):
                lst.append(v)
        for col, v in zip(rows, (s, d, c, ss, ds)):
            col.append(v)
    return rows


def h5py_expected(hd, rows, dst):
    """``dst`` (a copy) after h5py's read of each row, applied in row order."""
    out = dst.copy()
    for s, d, c, ss, ds in zip(*rows):
        src = tuple(slice(a, a + (n - 1) * k + 1, k) for a, n, k in zip(s, c, ss))
        dsel = tuple(slice(a, a + (n - 1) * k + 1, k) for a, n, k in zip(d, c, ds))
        out[dsel] = hd[src]
    return out


def destination(kind, shape, dtype):
    """(base array, destination view of ``shape``): C, Fortran, stepped or reversed."""
    if kind == "stepped":
        base = np.full(tuple(2 * n + 1 for n in shape), 99, dtype)
        return base, base[tuple(slice(1, 1 + 2 * n, 2) for n in shape)]
    base = np.full(shape, 99, dtype, order="F" if kind == "F" else "C")
    return base, base[(slice(None, None, -1),) * len(shape)] if kind == "reversed" else base


def check_call(vd, hd, rows, dst_shape, kind, dtype):
    base, dst = destination(kind, dst_shape, dtype)
    want = h5py_expected(hd, rows, dst)
    s, d, c, ss, ds = (np.array(x, dtype=np.int64) for x in rows)
    vh5.read_many_slices(vd, dst, s, d, c, ss, ds)
    np.testing.assert_array_equal(dst, want)


def run_case(case, data):
    shape, chunks, dtype, filt, seed = case
    path = write_dataset(*case)
    dst_shape = tuple(data.draw(st.integers(1, n + 2)) for n in shape)
    native = dtype.newbyteorder("=")
    first = data.draw(tables(shape, dst_shape, whole_row=data.draw(st.booleans())))
    other = data.draw(tables(shape, dst_shape))
    kinds = [data.draw(st.sampled_from(["C", "F", "stepped", "reversed"])) for _ in range(4)]
    with h5py.File(path, "r") as hf, vh5.File(path) as f, f["data"] as vd:
        hd = hf["data"]
        # 1 fills the cache, 2 finds its chunks there, 3 mixes them with others, 4 again.
        for k, rows in enumerate([first, first, tuple(a + b for a, b in zip(other, first)), first]):
            check_call(vd, hd, rows, dst_shape, kinds[k], native)


@settings(max_examples=60, **SETTINGS)
@given(case=edge_cases(), data=st.data())
def test_cached_edge_chunks_match_h5py(case, data):
    run_case(case, data)


def run_child(env, filters=None, examples=25):
    """The property in a child process under ``env`` (read once per process)."""
    code = f"""
import sys
sys.path[:0] = [{str(Path(__file__).parent)!r}]
import conftest  # noqa: F401
import test_py_cached_edge_chunks as t
from hypothesis import given, settings, strategies as st
@settings(max_examples={examples}, **t.SETTINGS)
@given(case=t.edge_cases(), data=st.data())
def run(case, data):
    t.run_case(case, data)
run()
print("ok")
"""
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, **env), timeout=600
    )
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_cached_edge_chunks_with_evictions():
    """A cache of 512 bytes: calls touching few chunks keep them, the next calls evict."""
    run_child({"VH5_CHUNK_CACHE_BYTES": "512"})


def test_cached_edge_chunks_located_by_index():
    """Every call through the chunk index (chunk spans: the cache looked up per span)."""
    run_child({"VH5_CHUNK_INDEX": "always"})


# ----------------------------------------------------------------------------- cache hits


def cli_read(path, rows, repeat, env=None):
    """`vh5 read --table --repeat` of ``rows``: (hits, misses, saved array)."""
    _counter[0] += 1
    table, out = TMP / f"t{_counter[0]}.txt", TMP / f"o{_counter[0]}.npy"
    with open(table, "w") as fh:
        for r in zip(*rows):
            fh.write(" ".join(str(v) for col in r for v in col) + "\n")
    cmd = [CLI, "read", path, "data", "--table", str(table), "--repeat", str(repeat), "--save", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"chunk cache: (\d+) hits, (\d+) misses", r.stdout)
    assert m, r.stdout
    return int(m.group(1)), int(m.group(2)), np.load(out)


@settings(max_examples=12, **SETTINGS)
@given(case=edge_cases().filter(lambda c: c[3] != "none"), data=st.data())
def test_repeated_reads_are_served_from_the_cache(case, data):
    """The second call of the same table finds every chunk of the first in the cache
    (filtered chunks, which vh5 reads whole and decodes; small unfiltered reads go to
    libhdf5 row by row), and both equal h5py's read."""
    shape, chunks, dtype, filt, seed = case
    path = write_dataset(*case)
    dst_shape = tuple(data.draw(st.integers(n, n + 2)) for n in shape)
    rows = data.draw(tables(shape, dst_shape, whole_row=True))
    hits, misses, got = cli_read(path, rows, 2)
    nchunks = int(np.prod([-(-n // c) for n, c in zip(shape, chunks)]))
    # The last call: every chunk its rows touch (the whole row: all of them) a hit.
    assert (hits, misses) == (nchunks, 0)
    with h5py.File(path, "r") as hf:
        want = h5py_expected(hf["data"], rows, np.zeros(got.shape, got.dtype))
    np.testing.assert_array_equal(got, want)


def test_edge_chunks_fit_where_whole_chunks_do_not():
    """Issue 14's shape, scaled down: (3, 20, 40) float64 gzip in (900, 3, 3) chunks, 98
    chunks of 64,800 decoded bytes (6.4 MB) of which 216 or fewer lie inside the dataset
    (19 KB in all). A 64 KiB cache keeps every chunk's in-extent box: the second whole read
    is served from it (before, no chunk was kept: the whole chunks never fit). More than
    16,384 chunks: the cached gather declines and the planner scatters every hit (through
    the chunk index's spans)."""
    for shape, chunks, cap, nchunks in [
        ((3, 20, 40), (900, 3, 3), 64 << 10, 7 * 14),
        # 17,000 chunks; the last along axis 2 holds 1 of 4 columns (strides of the box
        # differ from the chunk's on axis 1): entries 1,040,000 bytes, whole chunks 1,088,000.
        ((1000, 2, 65), (1, 2, 4), 1_060_000, 1000 * 17),
    ]:
        rng = np.random.default_rng(5)
        data = rng.standard_normal(shape)
        path = new_path()
        with h5py.File(path, "w", libver=("earliest", "v110")) as f:
            f.create_dataset("data", data=data, chunks=chunks, compression="gzip", maxshape=(None,) + shape[1:])
        whole = ([[0] * 3], [[0] * 3], [list(shape)], [[1] * 3], [[1] * 3])
        hits, misses, got = cli_read(path, whole, 3, {"VH5_CHUNK_CACHE_BYTES": str(cap)})
        assert (hits, misses) == (nchunks, 0), (shape, hits, misses)
        np.testing.assert_array_equal(got, data)
        # The in-extent bytes over the bound: nothing kept, every call decodes again.
        hits, misses, got = cli_read(path, whole, 2, {"VH5_CHUNK_CACHE_BYTES": str(data.nbytes - 8)})
        assert (hits, misses) == (0, nchunks), (shape, hits, misses)
        np.testing.assert_array_equal(got, data)
