"""Storage features against h5py's own libhdf5 (2.0): partial edge chunks stored unfiltered
(H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS, set with ctypes into h5py's bundled libhdf5) written by
vh5 and read back by h5py exactly as if h5py had written the same rows into a copy; an
h5py.Dataset source reopened as the very file h5py has open (relative names after os.chdir,
renamed or replaced files); zero-column (0-d) tables of 10**15 rows in O(1)."""

import ctypes
import glob
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import vh5
from vh5 import _h5py

#: Behaviour of a linked build (its own libhdf5 reopens h5py's files by path); the h5py-bound
#: build reads h5py datasets by id instead (tests/python/test_py_h5py_bound.py).
linked_only = pytest.mark.skipif(
    vh5._lib.lib().h5py_bound, reason="linked-build behaviour; the h5py-bound build uses h5py datasets by id"
)

h5py = pytest.importorskip("h5py")

LIBVER = ("earliest", "v110")  # vh5 links libhdf5 1.10


def _h5py_libhdf5():
    libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*"))
    libs = [p for p in libs if "hl" not in os.path.basename(p)]
    if not libs:
        pytest.skip("h5py's bundled libhdf5 not found (h5py built against a system libhdf5)")
    return ctypes.CDLL(libs[0])


def _dont_filter_partial_dataset(f, name, shape, chunks, data, **filters):
    """h5py.h5d.create with a dcpl on which H5Pset_chunk_opts(DONT_FILTER_PARTIAL_CHUNKS) was
    called through h5py's own libhdf5 (h5py has no keyword for it)."""
    lib = _h5py_libhdf5()
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    if filters.get("shuffle"):
        dcpl.set_shuffle()
    if filters.get("gzip"):
        dcpl.set_deflate(filters["gzip"])
    if filters.get("fletcher32"):
        dcpl.set_fletcher32()
    lib.H5Pset_chunk_opts.argtypes = [ctypes.c_int64, ctypes.c_uint]
    assert lib.H5Pset_chunk_opts(dcpl.id, 2) >= 0  # H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS
    space = h5py.h5s.create_simple(shape, (h5py.h5s.UNLIMITED,) * len(shape))
    dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    d = h5py.Dataset(dsid)
    d[...] = data
    return d


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "pipe",
    [dict(shuffle=True), dict(gzip=4), dict(shuffle=True, gzip=4), dict(shuffle=True, fletcher32=True)],
    ids=["shuffle", "gzip", "shuffle+gzip", "shuffle+fletcher32"],
)
def test_dont_filter_partial_chunks_write_reads_back_in_h5py(tmp_path, pipe, threads):
    shape, chunks = (23, 17), (5, 4)
    rng = np.random.default_rng(len(str(pipe)) + threads)
    init = rng.standard_normal(shape)
    base = tmp_path / "base.h5"
    with h5py.File(base, "w", libver=LIBVER) as f:
        _dont_filter_partial_dataset(f, "d", shape, chunks, init, **pipe)
    a, b = tmp_path / "vh5.h5", tmp_path / "h5py.h5"
    a.write_bytes(base.read_bytes())
    b.write_bytes(base.read_bytes())
    src = rng.standard_normal((12, 8))
    s = np.array([[0, 0], [0, 0], [1, 1], [0, 2], [2, 0], [0, 1]], np.uint64)
    d = np.array([[20, 16], [20, 0], [21, 5], [6, 16], [0, 0], [7, 5]], np.uint64)
    c = np.array([[3, 1], [3, 4], [2, 2], [9, 1], [5, 4], [3, 3]], np.uint64)
    old = vh5.get_num_threads()
    vh5.set_num_threads(threads)
    try:
        with vh5.File(str(a), "r+") as f:
            vh5.write_many_slices(src, f.dataset("d"), s, d, c)
    finally:
        vh5.set_num_threads(old)
    with h5py.File(b, "r+") as f:
        for si, di, ci in zip(s.astype(int), d.astype(int), c.astype(int)):
            f["d"][di[0] : di[0] + ci[0], di[1] : di[1] + ci[1]] = src[si[0] : si[0] + ci[0], si[1] : si[1] + ci[1]]
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        np.testing.assert_array_equal(fa["d"][()], fb["d"][()])
        ia, ib = fa["d"].id, fb["d"].id

        def masks(i):
            return [
                (i.get_chunk_info(k).chunk_offset, i.get_chunk_info(k).filter_mask) for k in range(i.get_num_chunks())
            ]

        assert sorted(masks(ia)) == sorted(masks(ib))
    # and grown: the old edge chunks' bytes outside the extent and their re-filtering
    for p in (a, b):
        with h5py.File(p, "r+") as f:
            f["d"].resize((31, 26))
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        np.testing.assert_array_equal(fa["d"][()], fb["d"][()])
    # vh5 reads its own write back exactly as h5py does, in this process's planner mode
    with vh5.File(str(a)) as f, h5py.File(a, "r") as h:
        out = np.zeros((31, 26))
        vh5.read_many_slices(f.dataset("d"), out, [0, 0], [0, 0], [31, 26])
        np.testing.assert_array_equal(out, h["d"][()])


def _two_files_same_name(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for sub, off in (("a", 0.0), ("b", 100.0)):
        with h5py.File(tmp_path / sub / "x.h5", "w", libver=LIBVER) as f:
            f["d"] = np.arange(10.0) + off


def test_h5py_source_relative_name_after_chdir_reads_the_file_h5py_has_open(tmp_path, monkeypatch):
    _two_files_same_name(tmp_path)
    monkeypatch.chdir(tmp_path / "a")
    with h5py.File("x.h5", "r") as h:
        monkeypatch.chdir(tmp_path / "b")  # 'x.h5' now names the other file
        out = np.full(4, -1.0)
        vh5.read_many_slices(h["d"], out, [2], [0], [4])
        np.testing.assert_array_equal(out, [2.0, 3.0, 4.0, 5.0])


def test_h5py_source_renamed_or_replaced_after_open_reads_the_file_h5py_has_open(tmp_path):
    _two_files_same_name(tmp_path)
    p = tmp_path / "a" / "x.h5"
    with h5py.File(p, "r") as h:
        os.rename(p, tmp_path / "a" / "moved.h5")
        os.rename(tmp_path / "b" / "x.h5", p)  # another file under h5py's name
        out = np.full(3, -1.0)
        vh5.read_many_slices(h["d"], out, [0], [0], [3])
        np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
        # reopened by the file's current ordinary name (a /proc/self/fd path would name
        # another file in another process once a handle is pickled)
        d, f = _h5py.open_h5py(h["d"])
        try:
            assert f.filename == str(tmp_path / "a" / "moved.h5"), f.filename
        finally:
            d.close()
            f.close()


@linked_only
def test_h5py_source_deleted_and_replaced_is_refused(tmp_path):
    _two_files_same_name(tmp_path)
    p = tmp_path / "a" / "x.h5"
    with h5py.File(p, "r") as h:
        os.remove(p)
        os.rename(tmp_path / "b" / "x.h5", p)  # h5py's file has no name any more
        out = np.full(3, -1.0)
        with pytest.raises(vh5.IoError, match="not the file h5py has open") as ei:
            vh5.read_many_slices(h["d"], out, [0], [0], [3])
        assert str(p) in str(ei.value)
        np.testing.assert_array_equal(out, [-1.0, -1.0, -1.0])


@linked_only
def test_h5py_source_without_descriptor_and_relative_name_is_refused(tmp_path, monkeypatch):
    # The stdio driver hands out no file descriptor: a relative name cannot be checked, with
    # or without a chdir since: refused as unsupported (it was an IoError, while the README
    # said stdio files can be re-opened), saying why and what works instead.
    _two_files_same_name(tmp_path)
    monkeypatch.chdir(tmp_path / "a")
    for move in (False, True):
        with h5py.File("x.h5", "r", driver="stdio") as h:
            if move:
                monkeypatch.chdir(tmp_path / "b")
            out = np.full(3, -1.0)
            with pytest.raises(vh5.UnsupportedError) as ei:
                vh5.read_many_slices(h["d"], out, [0], [0], [3])
            msg = str(ei.value)
            assert "'x.h5'" in msg and "'/d'" in msg and "'stdio' driver" in msg and "absolute path" in msg, msg
            np.testing.assert_array_equal(out, [-1.0, -1.0, -1.0])
    with h5py.File(str(tmp_path / "a" / "x.h5"), "r", driver="stdio") as h:  # an absolute name is read
        out = np.full(3, -1.0)
        vh5.read_many_slices(h["d"], out, [0], [0], [3])
        np.testing.assert_array_equal(out, h["d"][:3])


def _h5py_writer_with_a_vh5_file_open(p):
    """Child of the test below (HDF5_USE_FILE_LOCKING=FALSE: each libhdf5 reads it once)."""
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("d", data=np.zeros((20, 20)), chunks=(10, 10), compression="gzip")
    new = np.random.default_rng(0).random((10, 10))
    out = np.full((10, 10), -1.0)
    with h5py.File(p, "r+") as h:
        other = vh5.File(os.path.join(os.path.dirname(p), ".", "x.h5"))  # another name of the file
        np.testing.assert_array_equal(other["d"][0:10, 0:10], 0.0)
        h["d"][0:10, 0:10] = new  # the chunk grows: libhdf5 stores it elsewhere
        with pytest.raises(vh5.UnsupportedError, match="also has it open as vh5.File") as ei:
            vh5.read_many_slices(h["d"], out, [0, 0], [0, 0], [10, 10])
        assert "'/d'" in str(ei.value) and "Close the vh5.File first" in str(ei.value), ei.value
        np.testing.assert_array_equal(out, -1.0)
        other.close()
        vh5.read_many_slices(h["d"], out, [0, 0], [0, 0], [10, 10])  # reopened afresh
        np.testing.assert_array_equal(out, new)
    with h5py.File(p, "r") as h, vh5.File(p) as other:  # h5py only reads: nothing refused
        out[...] = -1.0
        vh5.read_many_slices(h["d"], out, [0, 0], [0, 0], [10, 10])
        np.testing.assert_array_equal(out, new)
        np.testing.assert_array_equal(other["d"][0:10, 0:10], new)


def _h5py_dask_graph_then_h5py_writes(p):
    """Child of the test below: a vh5.dask graph of a writable h5py dataset, computed in this
    process, leaves its file open in vh5's per-process file cache."""
    import vh5.dask

    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("d", data=np.zeros((40, 40)), chunks=(10, 10), compression="gzip")
    new = np.random.default_rng(0).random((40, 40))
    with h5py.File(p, "r+") as h:
        assert float(vh5.dask.from_dataset(h["d"]).sum().compute(scheduler="threads")) == 0.0
        h["d"][...] = new  # every chunk grows and moves
        for read in (
            lambda: vh5.dask.from_dataset(h["d"]).sum().compute(scheduler="threads"),
            lambda: vh5.read_many_slices(h["d"], np.zeros((40, 40)), [0, 0], [0, 0], [40, 40]),
        ):
            with pytest.raises(vh5.UnsupportedError, match=r"vh5.clear_file_cache\(close=True\)"):
                read()
        vh5.clear_file_cache(close=True)
        got = vh5.dask.from_dataset(h["d"]).compute(scheduler="threads")
        np.testing.assert_array_equal(got, new)


def _h5py_writer_read_by_threads(p):
    """Child of the test below: the per-call reopens of other threads are no open File."""
    import threading

    a = np.random.default_rng(1).random((60, 60))
    failures = []
    with h5py.File(p, "w", libver=LIBVER) as h:
        h.create_dataset("d", data=a, chunks=(10, 10), compression="gzip")

        def work():
            for _ in range(25):
                out = np.zeros((60, 60))
                try:
                    vh5.read_many_slices(h["d"], out, [0, 0], [0, 0], [60, 60])
                    if not np.array_equal(out, a):
                        failures.append("values differ")
                except Exception as e:  # noqa: BLE001 - collected, asserted below
                    failures.append(repr(e))

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[:3]


def _run_child(func, path):
    """``func(path)`` of this module in a child process with HDF5_USE_FILE_LOCKING=FALSE (each
    libhdf5 reads it once per process), so that vh5 and h5py open one file for writing."""
    code = f"""
import sys
sys.path[:0] = [{os.path.dirname(__file__)!r}]
import conftest  # noqa: F401
import test_storage_features as t
t.{func}({str(path)!r})
print("ok")
"""
    env = dict(os.environ, HDF5_USE_FILE_LOCKING="FALSE")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr


@linked_only
def test_h5py_source_written_by_h5py_while_a_vh5_file_has_it_open_is_refused(tmp_path):
    # vh5's libhdf5 does not reopen a file it already has open: it shares that open file and
    # its metadata as read then. A chunk h5py moved since (it grew) was read at its old
    # address: old values with VH5_OK (tryout, session 25), or a chunk reported corrupt.
    _run_child("_h5py_writer_with_a_vh5_file_open", tmp_path / "x.h5")


@linked_only
def test_h5py_source_writable_read_by_threads_at_once_not_refused(tmp_path):
    # The refusal above must not count another thread's per-call reopen as an open File.
    _run_child("_h5py_writer_read_by_threads", tmp_path / "x.h5")


@linked_only
def test_h5py_source_of_dask_graph_rewritten_by_h5py_refused_until_file_cache_cleared(tmp_path):
    # The per-process file cache of vh5.dask kept the file open after the first compute: a new
    # graph of the same h5py dataset, after h5py rewrote it, summed the old zeros (tryout).
    pytest.importorskip("dask")
    _run_child("_h5py_dask_graph_then_h5py_writes", tmp_path / "x.h5")


def test_zero_column_tables_of_1e15_rows_cost_o1(tmp_path):
    p = tmp_path / "s.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        f["s"] = np.float64(3.5)
    n = 10**15
    z = np.zeros((n, 0), np.uint64)  # zero bytes
    t0 = time.monotonic()
    with vh5.File(str(p)) as f:
        out = np.zeros((), np.float64)
        vh5.read_many_slices(f.dataset("s"), out, z, z, z)
        assert out == 3.5
    b = np.zeros(())
    vh5.copy_many_slices(np.array(1.5), b, z, z, z)
    assert b == 1.5
    with vh5.File(str(p), "r+") as f:
        vh5.write_many_slices(np.array(9.0), f.dataset("s"), z, z, z)
    assert time.monotonic() - t0 < 5
    with h5py.File(p, "r") as f:
        assert f["s"][()] == 9.0


PLANNERS = ("auto", "chunks", "rows")


def _read_in_child(path, name, planner, dtype):
    """Read the whole dataset with vh5 in a child process (a crash is an exit status, not the
    end of the test run): (returncode, stdout, stderr)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, vh5; d = vh5.File(sys.argv[1])[sys.argv[2]]; dst = np.zeros(d.shape, sys.argv[3]); "
        "vh5.read_many_slices(d, dst, [[0]*dst.ndim], [[0]*dst.ndim], [list(dst.shape)]); "
        "np.save(sys.argv[4], dst); print('VH5_OK')"
    )
    out = str(path) + f".{planner}.npy"
    pkg = os.path.dirname(os.path.dirname(vh5.__file__))
    env = dict(
        os.environ, VH5_PLANNER=planner, PYTHONPATH=os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")]))
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(path), name, dtype, out], env=env, capture_output=True, text=True, timeout=120
    )
    return r.returncode, r.stdout, r.stderr, out


def test_scaleoffset_corrupt_parameters_refused_not_crash(tmp_path):
    """A flipped byte in the scaleoffset filter's element-size parameter (v1 object header: no
    checksum) made libhdf5 1.10 crash inside the filter in every planner; vh5 now checks the
    parameters against the dataset first and refuses, naming the dataset and the parameter."""
    p = tmp_path / "so.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset(
            "d", data=np.arange(8 * 12 * 3, dtype=">i2").reshape(8, 12, 3), chunks=(1, 12, 3), scaleoffset=0
        )
    for planner in PLANNERS:  # intact file: read as h5py reads it
        rc, so, se, out = _read_in_child(p, "d", planner, "i2")
        assert rc == 0, se
        assert (np.load(out) == h5py.File(p)["d"][...]).all()
    cd = h5py.File(p)["d"].id.get_create_plist().get_filter(0)[2]
    b = bytearray(p.read_bytes())
    off = b.find(np.array(cd[:5], "<u4").tobytes())
    assert off > 0
    b[off + 4 * 4 + 3] ^= 0x43  # cd_values[4], the element size: 2 -> 0x43000002
    p.write_bytes(bytes(b))
    for planner in PLANNERS:
        rc, so, se, _ = _read_in_child(p, "d", planner, "i2")
        assert rc == 1 and "VH5_ERR_HDF5" in se and "scaleoffset filter parameter [4]" in se and "/d" in se, (
            planner,
            rc,
            se[-400:],
        )


def test_extensible_array_index_unlimited_axis_not_first_reads_right_chunks(tmp_path):
    """Extensible-array chunk index whose unlimited axis is not axis 0: libhdf5's
    H5Dget_chunk_info_by_coord answers for another chunk there, and sizing H5Dread_chunk's
    buffer from it overflowed the heap. Chunks are now looked up with the same index lookup
    H5Dread_chunk uses (H5Dget_chunk_storage_size): values equal h5py's in every planner."""
    p = tmp_path / "earray.h5"
    rng = np.random.default_rng(1)
    with h5py.File(p, "w", libver=("v110", "v110")) as f:
        d = f.create_dataset(
            "d", shape=(4, 600, 1), maxshape=(4, None, 1), chunks=(1, 500, 1), dtype="<f8", compression="gzip"
        )
        d[...] = 0.0
        d[:, 500:, 0] = rng.standard_normal((4, 100))  # edge chunks incompressible, the others tiny
    ref = h5py.File(p)["d"][...]
    for planner in PLANNERS:
        rc, so, se, out = _read_in_child(p, "d", planner, "f8")
        assert rc == 0, (planner, rc, se[-400:])
        assert (np.load(out) == ref).all(), planner
