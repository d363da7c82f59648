"""The chunk planner through the Python package, against h5py: files written by h5py with
gzip + shuffle + fletcher32 (and big-endian, partially written chunks with a fill value),
many random slices in random order, read with 1 and 2 threads (vh5.set_num_threads); plus
the fast path of read_many_slices (uint64 / int64 (n, ndim) tables, cached layouts) giving
the same results and errors as the general path.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
import vh5  # noqa: E402

h5py = pytest.importorskip("h5py")


@pytest.fixture()
def gz_file(tmp_path):
    p = tmp_path / "planner.h5"
    rng = np.random.default_rng(7)
    with h5py.File(p, "w") as f:
        f.create_dataset(
            "le", data=rng.standard_normal((60, 70)), chunks=(8, 9), compression="gzip", shuffle=True, fletcher32=True
        )
        f.create_dataset(
            "be",
            data=rng.integers(-1000, 1000, (60, 70)).astype(">i4"),
            chunks=(7, 11),
            compression="gzip",
            shuffle=True,
        )
        d = f.create_dataset("part", shape=(60, 70), dtype="f4", chunks=(10, 10), compression="gzip", fillvalue=-7.5)
        d[:25, :33] = rng.standard_normal((25, 33)).astype("f4")
    return p


@pytest.mark.parametrize("name", ["le", "be", "part"])
@pytest.mark.parametrize("threads", [1, 2])
def test_random_slices_match_h5py(gz_file, name, threads):
    rng = np.random.default_rng(threads * 10 + len(name))
    with h5py.File(gz_file, "r") as h:
        whole = h[name][...]
    n = 400
    count = rng.integers(1, 15, (n, 2)).astype(np.uint64)
    src = np.stack([rng.integers(0, 60 - count[:, 0]), rng.integers(0, 70 - count[:, 1])], axis=1).astype(np.uint64)
    dst_start = np.zeros((n, 2), np.uint64)
    dst_start[:, 0] = np.arange(n, dtype=np.uint64) * 15
    want = np.zeros((n * 15, 15), dtype=whole.dtype.newbyteorder("="))
    for i in range(n):
        a, b = int(src[i, 0]), int(src[i, 1])
        ca, cb = int(count[i, 0]), int(count[i, 1])
        want[15 * i : 15 * i + ca, :cb] = whole[a : a + ca, b : b + cb]
    old = vh5.get_num_threads()
    vh5.set_num_threads(threads)
    try:
        with vh5.File(gz_file) as f:
            got = np.zeros_like(want)
            vh5.read_many_slices(f.dataset(name), got, src, dst_start, count)
            # the general path (int lists, broadcasting) gives the same bytes
            got2 = np.zeros_like(want)
            vh5.read_many_slices(
                f.dataset(name), got2, src.astype(np.int64).tolist(), dst_start.astype(np.int64), count
            )
    finally:
        vh5.set_num_threads(old)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got2, want)


def test_fast_path_errors_and_layout_cache(gz_file):
    with h5py.File(gz_file, "r") as h:
        whole = h["le"][...]
    with vh5.File(gz_file) as f:
        d = f.dataset("le")
        # negative int64 coordinates are rejected by the general path, naming row and axis
        with pytest.raises(ValueError, match="src_start row 0 axis 1 is negative"):
            vh5.read_many_slices(
                d,
                np.zeros((2, 2)),
                np.array([[0, -1]], np.int64),
                np.zeros((1, 2), np.int64),
                np.ones((1, 2), np.int64),
            )
        # same shape/strides, different buffers and layouts: the cached template is per layout
        for order in "CF":
            for _ in range(2):
                dst = np.zeros((5, 6), order=order)
                vh5.read_many_slices(
                    d, dst, np.array([[3, 4]], np.uint64), np.zeros((1, 2), np.uint64), np.array([[5, 6]], np.uint64)
                )
                np.testing.assert_array_equal(dst, whole[3:8, 4:10])
        # a reversed view (negative strides)
        base = np.zeros((5, 6))
        vh5.read_many_slices(
            d,
            base[::-1, ::-1],
            np.array([[3, 4]], np.uint64),
            np.zeros((1, 2), np.uint64),
            np.array([[5, 6]], np.uint64),
        )
        np.testing.assert_array_equal(base[::-1, ::-1], whole[3:8, 4:10])
        with pytest.raises(vh5.OutOfBoundsError, match="row 0 axis 0"):
            vh5.read_many_slices(
                d,
                np.zeros((5, 6)),
                np.array([[58, 0]], np.uint64),
                np.zeros((1, 2), np.uint64),
                np.array([[5, 6]], np.uint64),
            )


def test_set_num_threads_checks_its_argument():
    old = vh5.get_num_threads()
    with pytest.raises(vh5.InvalidArgumentError, match="at most 1024"):
        vh5.set_num_threads(10**9)
    with pytest.raises(TypeError):
        vh5.set_num_threads(2.5)
    with pytest.raises(ValueError):
        vh5.set_num_threads(-1)
    assert vh5.get_num_threads() == old  # unchanged by the refusals
    vh5.set_num_threads(1024)
    assert vh5.get_num_threads() == 1024
    vh5.set_num_threads(0)


def test_set_planner_modes_same_values_and_override_env(gz_file):
    """vh5.set_planner: each mode reads the same values as h5py in one process; a bad mode is
    refused with nothing changed; None goes back to env VH5_PLANNER (checked in a child with
    VH5_PLANNER=rows), which a mode set overrides."""
    import subprocess
    import sys

    rng = np.random.default_rng(3)
    with h5py.File(gz_file, "r") as h:
        want = h["le"][...]
    d = vh5.File(gz_file)["le"]
    n = 200
    src = np.stack([rng.integers(0, 55, n), rng.integers(0, 63, n)], 1).astype(np.uint64)
    cnt = np.stack([rng.integers(1, 6, n), rng.integers(1, 8, n)], 1).astype(np.uint64)
    dst = np.zeros((n * 5, 7))
    ds = np.stack([np.arange(n) * 5, np.zeros(n)], 1).astype(np.uint64)
    expect = np.zeros_like(dst)
    for i in range(n):
        (a, b), (c0, c1) = src[i].astype(int), cnt[i].astype(int)
        expect[i * 5 : i * 5 + c0, :c1] = want[a : a + c0, b : b + c1]
    default = vh5.get_planner()
    try:
        for mode in ["rows", "chunks", "auto", "ROWS"]:
            vh5.set_planner(mode)
            assert vh5.get_planner() == mode.lower()
            dst[...] = 0
            vh5.read_many_slices(d, dst, src, ds, cnt)
            np.testing.assert_array_equal(dst, expect, err_msg=mode)
        for bad in ["fast", 2, ""]:
            with pytest.raises(ValueError, match="planner mode"):
                vh5.set_planner(bad)
            assert vh5.get_planner() == "rows"  # unchanged
    finally:
        vh5.set_planner(None)
    assert vh5.get_planner() == default
    code = (
        "import vh5; a = vh5.get_planner(); vh5.set_planner('chunks'); b = vh5.get_planner(); "
        "vh5.set_planner(None); print(a, b, vh5.get_planner())"
    )
    pkg = os.path.dirname(os.path.dirname(vh5.__file__))
    env = dict(
        os.environ, VH5_PLANNER="rows", PYTHONPATH=os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")]))
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    assert r.stdout.split() == ["rows", "chunks", "rows"]


@pytest.mark.parametrize("planner", ["auto", "chunks", "rows"])
def test_stepped_row_reads_no_chunk_between_its_elements(tmp_path, planner):
    """A row stepping over whole chunks on the inner axis reads only the chunks holding its
    elements, as libhdf5 does: the rows path used to read the row's covering span, so a chunk
    no libhdf5 decodes lying between the row's columns failed a read h5py does (conformance
    seed 36 at 8000 cases: chunks of one column, a step-3 row)."""
    import subprocess
    import sys

    p = tmp_path / "steps.h5"
    data = np.arange(4 * 12, dtype=np.int64).reshape(4, 12)
    with h5py.File(p, "w") as f:
        # deflate + nbit (nothing to pack on int64): a pipeline vh5 leaves to libhdf5
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 1))
        dcpl.set_deflate(4)
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
        ds = h5py.h5d.create(f.id, b"d", h5py.h5t.STD_I64LE, h5py.h5s.create_simple(data.shape), dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
    with h5py.File(p, "r+") as f:
        # column 5: stored bytes that are no zlib stream, filter mask 0 (deflate applied)
        f["d"].id.write_direct_chunk((0, 5), bytes(range(1, 33)), filter_mask=0)
    with h5py.File(p, "r") as f:
        want = f["d"][:, 3::3]
        with pytest.raises(OSError):
            f["d"][:, 5]
    code = (
        "import sys, numpy as np, vh5; d = vh5.File(sys.argv[1])['d']; dst = np.zeros((4, 3), np.int64); "
        "vh5.read_many_slices(d, dst, [[0, 3]], [[0, 0]], [[4, 3]], [[1, 3]]); np.save(sys.argv[2], dst)"
    )
    out = str(p) + f".{planner}.npy"
    pkg = os.path.dirname(os.path.dirname(vh5.__file__))
    env = dict(
        os.environ, VH5_PLANNER=planner, PYTHONPATH=os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")]))
    )
    r = subprocess.run([sys.executable, "-c", code, str(p), out], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    np.testing.assert_array_equal(np.load(out), want)


@pytest.mark.parametrize("gzip", [False, True])
@pytest.mark.parametrize("steps", ["ones", "ones_where_count_1", "some_stepped"])
def test_step_tables_of_ones_match_h5py(tmp_path, gzip, steps):
    """Step tables given explicitly are dropped by the planned read when every step that is
    used is 1 (the scatter then never reads them): one 2x2 row per 4x4 chunk in random order,
    as bench_scaling's one-row-per-chunk tables, with step tables of ones, of ones except large
    steps on axes copying one element (unused), or with some rows really stepped (the tables
    kept). Read twice: the planned read, then the decoded-chunk cache's gather."""
    p = tmp_path / "ones.h5"
    rng = np.random.default_rng(3 + gzip)
    data = rng.standard_normal((64, 80))
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=data, chunks=(4, 4), **(dict(compression="gzip") if gzip else {}))
    origins = np.stack(np.meshgrid(np.arange(0, 64, 4), np.arange(0, 80, 4), indexing="ij"), -1).reshape(-1, 2)
    n = len(origins)
    src = (origins + rng.integers(0, 3, origins.shape))[rng.permutation(n)].astype(np.uint64)
    count = np.full((n, 2), 2, np.uint64)
    sstep, dstep = np.ones((n, 2), np.uint64), np.ones((n, 2), np.uint64)
    if steps == "ones_where_count_1":
        count[::3, 1] = 1
        sstep[::3, 1] = 1000
        dstep[::3, 1] = 77
    elif steps == "some_stepped":
        src[::5] = (origins[: len(src[::5])] // 4 * 4).astype(np.uint64)  # room for a step of 2 inside 4x4
        sstep[::5] = 2
    dstart = np.zeros((n, 2), np.uint64)
    dstart[:, 0] = np.arange(n, dtype=np.uint64) * 2
    want = np.zeros((2 * n, 2))
    for i in range(n):
        a, b, ca, cb = (int(v) for v in (*src[i], *count[i]))
        sa, sb = int(sstep[i, 0]), int(sstep[i, 1])
        want[2 * i : 2 * i + ca, :cb] = data[a : a + (ca - 1) * sa + 1 : sa, b : b + (cb - 1) * sb + 1 : sb]
    with vh5.File(p) as f:
        for _ in range(2):
            got = np.zeros_like(want)
            vh5.read_many_slices(f.dataset("x"), got, src, dstart, count, sstep, dstep)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("gzip", [False, True])
def test_step_tables_of_ones_keep_clipped_overlapping_rows(tmp_path, gzip):
    """With clip=True a row's count depends on its step: a row stepping 3 from the dataset's
    next-to-last index is clipped to one element (step then unused, its table dropped for the
    pieces), but the rows whose destinations overlap are read again from the call's own tables
    (the Rust planner property test found a row read with step 1: two elements)."""
    p = tmp_path / "clip.h5"
    data = np.arange(7 * 29, dtype="f8").reshape(7, 29)
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=data, chunks=(1, 1), **(dict(compression="gzip") if gzip else {}))
    src = np.array([[0, 0], [4, 0]], np.uint64)
    dstart = np.array([[0, 0], [0, 1]], np.uint64)
    count = np.array([[6, 5], [2, 5]], np.uint64)
    sstep = np.array([[1, 1], [3, 1]], np.uint64)
    want = np.full((24, 24), -1.0)
    want[0:6, 0:5] = data[0:6, 0:5]
    want[0:1, 1:6] = data[4:5, 0:5]  # row 1 (later, wins): rows 4 and 7, 7 clipped away
    with vh5.File(p) as f:
        got = np.full((24, 24), -1.0)
        vh5.read_many_slices(f.dataset("x"), got, src, dstart, count, sstep, np.ones_like(sstep), clip=True)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("threads", [1, 2])
def test_planning_halves_on_two_threads_rows_errors_and_overlaps(tmp_path, threads):
    """Calls of 32k rows or more are planned in two halves on two threads, joined in row
    order: the values equal numpy's (overlapping destinations across the halves: the later
    row wins), and a bad row is reported as on one thread: the first bad row, whichever half
    holds it, nothing written."""
    p = tmp_path / "halves.h5"
    rng = np.random.default_rng(3)
    data = rng.standard_normal(64 * 1024)
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=data, chunks=(16,), compression="gzip")
    n = 40_000
    src = rng.integers(0, data.size - 2, (n, 1)).astype(np.uint64)
    dstart = (np.arange(n, dtype=np.uint64) * 2).reshape(n, 1)
    dstart[n - 1] = dstart[5]  # the last row overwrites row 5 (first half)
    dstart[n // 2 - 1] = dstart[n // 2 + 7]  # a first-half row overlapped by a second-half row
    count = np.full((n, 1), 2, np.uint64)
    want = np.zeros(2 * n)
    for s, d in zip(src[:, 0], dstart[:, 0]):
        want[d : d + 2] = data[s : s + 2]
    old = vh5.get_num_threads()
    vh5.set_num_threads(threads)
    try:
        with vh5.File(p) as f:
            d = f.dataset("x")
            got = np.zeros(2 * n)
            vh5.read_many_slices(d, got, src, dstart, count)
            np.testing.assert_array_equal(got, want)
            for bad in ([30_000], [35_000, 10_000], [25_000, 39_999]):
                s2 = src.copy()
                for b in bad:
                    s2[b] = data.size  # past the extent
                got = np.zeros(2 * n)
                with pytest.raises(vh5.OutOfBoundsError, match=f"row {min(bad)}\\b"):
                    vh5.read_many_slices(d, got, s2, dstart, count)
                assert not got.any()
    finally:
        vh5.set_num_threads(old)
