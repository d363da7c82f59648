"""The h5py-bound build of libvh5 (``libvh5_h5py.so``): one libhdf5 per process, h5py's.

These tests run when ``VH5_LIBRARY`` names the h5py-bound build (scripts/test.sh builds it
with scripts/build_h5py_lib.sh when an HDF5 2.x is available); with a linked build only the
build-independent ones run. h5py is the oracle: every read is compared with h5py's own read
of the same object in the same process.
"""

import ctypes
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import vh5
from vh5 import _h5pybind
from vh5._lib import lib

h5py = pytest.importorskip("h5py")

REPO = Path(__file__).resolve().parents[2]

bound = pytest.mark.skipif(
    not lib().h5py_bound,
    reason="needs VH5_LIBRARY=target/h5py/libvh5_h5py.so (the h5py-bound build)",
)
LIBVERS = ["earliest", "v110", "v112", "v114", "v200", "latest"]
#: The first libhdf5 that knows a libver bound (h5py passes it on: an older one has no name for it).
LIBVER_HDF5 = {"v110": (1, 10), "v112": (1, 12), "v114": (1, 14), "v200": (2, 0)}


def _read(src, shape, start=None, count=None, dtype=None):
    nd = len(shape)
    start = [0] * nd if start is None else list(start)
    count = list(shape) if count is None else list(count)
    out = np.zeros(count, dtype=dtype or "f8")
    vh5.read_many_slices(src, out, [start], [[0] * nd], [count])
    return out


# ------------------------------------------------------------------ the binding itself


@bound
def test_hdf5_version_reports_h5py_origin():
    info = vh5.hdf5_version()
    assert info.origin == "h5py"
    assert info.version == tuple(h5py.version.hdf5_version_tuple)
    assert "h5py" in str(info)
    b = [ctypes.c_uint32() for _ in range(3)]
    lib().vh5_hdf5_build_version(*[ctypes.byref(x) for x in b])
    assert b[0].value == info.version[0]


@bound
def test_phil_wraps_exactly_the_libhdf5_calls():
    L = lib()
    for name in _h5pybind.PHIL_FUNCTIONS:
        assert getattr(getattr(L, name), "fn", None) is not None, name
    for name in (
        "payload_decode_view",
        "vh5_copy_many_slices",
        "vh5_last_error_message",
        "vh5_set_num_threads",
    ):
        assert not hasattr(getattr(L, name), "fn"), name


def test_build_kind_from_the_file_name():
    assert _h5pybind.is_h5py_bound("/x/target/h5py/libvh5_h5py.so")
    assert _h5pybind.is_h5py_bound("vh5/libvh5_h5py.so")
    assert not _h5pybind.is_h5py_bound("/x/target/release/libvh5.so")
    assert not _h5pybind.is_h5py_bound("/x/libvh5_h5py/libvh5.so")


def test_linked_build_is_never_bound_to_h5py():
    """A normal libvh5 loaded after `import h5py`: its own libhdf5, origin not "h5py"."""
    linked = REPO / "target" / "release" / "libvh5.so"
    if not linked.exists():
        pytest.skip("no target/release/libvh5.so")
    code = "import h5py, vh5; from vh5._lib import lib; i = vh5.hdf5_version(); print(lib().h5py_bound, i.origin)"
    env = dict(
        os.environ,
        VH5_LIBRARY=str(linked),
        PYTHONPATH=str(REPO / "bindings" / "python"),
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    bound_flag, origin = out.stdout.split()
    assert bound_flag == "False" and origin != "h5py"


class _FakeLib:
    """check_versions' view of a libvh5: build and run-time versions set by the test."""

    def __init__(self, built, running):
        self.vh5_hdf5_build_version = self._fill(built, None)
        self.vh5_hdf5_version = self._fill(running, 0)

    @staticmethod
    def _fill(values, ret):
        def f(*refs):
            for r, v in zip(refs, values):
                r._obj.value = v
            return ret

        return f


def test_major_version_mismatch_is_refused_naming_both():
    with pytest.raises(ImportError) as e:
        _h5pybind.check_versions(
            _FakeLib((2, 2, 0), (1, 14, 6)),
            "libvh5_h5py.so",
            "/h5py.libs/libhdf5.so",
            h5py,
        )
    msg = str(e.value)
    assert "2.2.0" in msg and "1.14.6" in msg and "libhdf5.so" in msg
    _h5pybind.check_versions(_FakeLib((2, 2, 0), (2, 0, 0)), "libvh5_h5py.so", "/h5py.libs/libhdf5.so", h5py)


def test_hdf5_1_x_must_match_major_and_minor():
    # 1.x minor releases changed the API and ABI: a 1.14 build runs on any 1.14.x only.
    ok = [((1, 14, 6), (1, 14, 6)), ((1, 14, 6), (1, 14, 2)), ((1, 14, 4), (1, 14, 6))]
    for built, running in ok:
        _h5pybind.check_versions(_FakeLib(built, running), "libvh5_h5py_1_14.so", "/h5py.libs/libhdf5.so", h5py)
    for built, running in [
        ((1, 14, 6), (1, 12, 2)),
        ((1, 14, 6), (1, 10, 8)),
        ((1, 14, 6), (2, 0, 0)),
        ((2, 2, 0), (1, 14, 6)),
    ]:
        with pytest.raises(ImportError) as e:
            _h5pybind.check_versions(_FakeLib(built, running), "libvh5_h5py_1_14.so", "/h5py.libs/libhdf5.so", h5py)
        b, r = (".".join(map(str, v)) for v in (built, running))
        assert b in str(e.value) and r in str(e.value) and "series differ" in str(e.value), str(e.value)


def test_series_of_versions_and_file_names():
    assert _h5pybind.hdf5_series((2, 0, 0)) == _h5pybind.hdf5_series("2.2.0") == "2"
    assert _h5pybind.hdf5_series((1, 14, 6)) == _h5pybind.hdf5_series("1.14.2") == "1.14"
    assert _h5pybind.hdf5_series((1, 12, 2)) == "1.12" and _h5pybind.hdf5_series("?") == "?"
    assert _h5pybind.library_series("/x/libvh5_h5py.so") == "2"
    assert _h5pybind.library_series("vh5/libvh5_h5py_1_14.so") == "1.14"
    assert _h5pybind.library_series("libvh5_h5py_3.so") == "3"
    assert _h5pybind.library_series("libvh5_h5py_x.so") == _h5pybind.library_series("libvh5.so") == "?"


class _FakeH5py:
    """The parts of h5py that pick() reads: a version and the file of its libhdf5."""

    def __init__(self, version):
        self.__version__ = "9.9"
        self.__file__ = h5py.__file__
        self.version = type("v", (), {"hdf5_version_tuple": version})


def test_pick_chooses_the_build_of_h5pys_hdf5_series_or_names_them_all():
    both = ["/p/vh5/libvh5_h5py.so", "/p/vh5/libvh5_h5py_1_14.so"]
    assert _h5pybind.pick(both, _FakeH5py((2, 0, 0))) == both[0]
    assert _h5pybind.pick(both, _FakeH5py((1, 14, 2))) == both[1]
    assert _h5pybind.pick(both[1:], _FakeH5py((1, 14, 6))) == both[1]
    with pytest.raises(ImportError) as e:
        _h5pybind.pick(both, _FakeH5py((1, 12, 2)))
    msg = str(e.value)
    assert "1.12.2" in msg and both[0] in msg and both[1] in msg and "HDF5 1.14.x" in msg and "HDF5 2.x" in msg, msg
    with pytest.raises(ImportError, match=r"libvh5_h5py\.so \(HDF5 2\.x\)"):
        _h5pybind.pick(both[:1], _FakeH5py((1, 14, 6)))


def test_installed_package_loads_the_build_of_h5pys_series(tmp_path):
    # The package directory of a wheel holding both builds (empty stand-in files: only the
    # choice is tested here; tests/python/test_wheel.py installs real ones).
    from vh5 import _lib

    for name in ("libvh5_h5py.so", "libvh5_h5py_1_14.so", "__init__.py"):
        (tmp_path / name).write_bytes(b"")
    want = "libvh5_h5py.so" if h5py.version.hdf5_version_tuple[0] >= 2 else "libvh5_h5py_1_14.so"
    if _h5pybind.h5py_hdf5_series(h5py) not in ("2", "1.14"):
        with pytest.raises(ImportError, match="other HDF5 series"):
            _lib._installed_library(tmp_path)
    else:
        assert _lib._installed_library(tmp_path) == str(tmp_path / want)


@bound
def test_h5py_libhdf5_is_found_and_not_loaded_twice():
    path = _h5pybind.h5py_libhdf5_path(h5py)
    assert "h5py" in path and os.path.basename(path).startswith("libhdf5")
    with open("/proc/self/maps") as f:
        mapped = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    hdf5s = {p for p in mapped if os.path.basename(p).startswith("libhdf5") and "_hl" not in os.path.basename(p)}
    assert hdf5s == {path}, f"more than one libhdf5 mapped: {hdf5s}"


# ------------------------------------------------------------------ h5py datasets by id


@bound
def test_dataset_from_hdf5_id_takes_its_own_reference(tmp_path):
    p = tmp_path / "ref.h5"
    data = np.arange(60.0).reshape(6, 10)
    with h5py.File(p, "w") as f:
        d = f.create_dataset("x", data=data, chunks=(3, 5))
        v = vh5._h5py.adopt_h5py(d)
        assert v.shape == (6, 10) and v.chunks == (3, 5)
        np.testing.assert_array_equal(v[...], data)
        v.close()
        np.testing.assert_array_equal(d[...], data)  # h5py's reference still valid
        v = vh5._h5py.adopt_h5py(d)
    # h5py's File.close() closes every object of the file, vh5's reference included
    with pytest.raises(vh5.InvalidHandleError):
        v[...]


@bound
def test_dataset_from_hdf5_id_refuses_other_ids(tmp_path):
    p = tmp_path / "ids.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=np.zeros(3))
        out = ctypes.c_int64(7)
        st = lib().vh5_dataset_from_hdf5_id(f.id.id, ctypes.byref(out))
        assert vh5._lib.status_name(st) == "VH5_ERR_INVALID_HANDLE" and out.value == -1
        assert "is a libhdf5 id of a file, not of a dataset" in vh5._lib.last_error_message()
        st = lib().vh5_dataset_from_hdf5_id(123456789, ctypes.byref(out))
        assert vh5._lib.status_name(st) == "VH5_ERR_INVALID_HANDLE"


def test_dataset_from_hdf5_id_with_vh5s_own_ids(tmp_path):
    """Any build: an id of vh5's own libhdf5 (a vh5.Dataset's) is adopted with a second reference."""
    p = tmp_path / "own.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=np.arange(10.0))
    with vh5.File(str(p)) as f, f["x"] as d:
        out = ctypes.c_int64(-1)
        assert lib().vh5_dataset_from_hdf5_id(d.id, ctypes.byref(out)) == 0
        assert out.value == d.id
        assert lib().vh5_close(out.value) == 0
        np.testing.assert_array_equal(d[...], np.arange(10.0))  # the first reference is intact


# ------------------------------------------------------------------ every libver h5py writes


@bound
@pytest.mark.parametrize("libver", LIBVERS)
def test_libver_files_read_and_written_through_vh5(tmp_path, libver):
    need = LIBVER_HDF5.get(libver, (0, 0))
    if tuple(h5py.version.hdf5_version_tuple[:2]) < need:
        pytest.skip(
            f"libver={libver!r} needs HDF5 >= {need[0]}.{need[1]}; this h5py {h5py.__version__} runs HDF5 {h5py.version.hdf5_version}"
        )
    p = str(tmp_path / f"{libver}.h5")
    rng = np.random.default_rng(5)
    a = rng.normal(size=(40, 30))
    b = rng.integers(-1000, 1000, size=(50,), dtype="<i4")
    with h5py.File(p, "w", libver=libver) as f:
        f.create_dataset(
            "g/chunked",
            data=a,
            chunks=(8, 7),
            compression="gzip",
            shuffle=True,
            maxshape=(None, 30),
        )
        f.create_dataset("contig", data=b)
        f.create_dataset("big", data=a.astype(">f4"), chunks=(10, 10))
    with h5py.File(p, "r") as f:
        for name in ("g/chunked", "contig", "big"):
            want = f[name][...]
            with vh5.File(p) as g:
                got = g[name][...]
            np.testing.assert_array_equal(got, want)
            got2 = _read(f[name], want.shape, dtype=want.dtype.newbyteorder("="))
            np.testing.assert_array_equal(got2, want)
    src = rng.normal(size=(10, 10))
    with vh5.File(p, "r+") as g, g["g/chunked"] as d:
        vh5.write_many_slices(src, d, [[0, 0], [5, 5]], [[3, 2], [30, 20]], [[5, 5], [5, 5]])
    want = a.copy()
    want[3:8, 2:7] = src[:5, :5]
    want[30:35, 20:25] = src[5:, 5:]
    with h5py.File(p, "r") as f:
        np.testing.assert_array_equal(f["g/chunked"][...], want)


# ------------------------------------------------------------------ state only h5py's libhdf5 has


@bound
def test_unflushed_h5py_writes_read_through_vh5(tmp_path):
    p = str(tmp_path / "unflushed.h5")
    f = h5py.File(p, "w")
    try:
        d = f.create_dataset("x", shape=(64, 64), dtype="f8", chunks=(16, 16), compression="gzip")
        d[...] = np.arange(64 * 64.0).reshape(64, 64)
        e = f.create_dataset("new_unflushed", data=np.arange(7, dtype="i8"))
        d[10:20, 10:20] = -5.0  # no flush: only in h5py's libhdf5 caches
        want = d[...]
        np.testing.assert_array_equal(_read(d, (64, 64)), want)
        with vh5.File(p) as g:
            np.testing.assert_array_equal(g["x"][...], want)
            np.testing.assert_array_equal(g["new_unflushed"][...], e[...])
        d[0, 0] = 123.0
        np.testing.assert_array_equal(_read(d, (64, 64)), d[...])
    finally:
        f.close()


@bound
def test_core_driver_file_read_and_written(tmp_path):
    f = h5py.File(str(tmp_path / "mem.h5"), "w", driver="core", backing_store=False)
    try:
        data = np.arange(200.0).reshape(20, 10)
        d = f.create_dataset("x", data=data, chunks=(5, 5), compression="gzip")
        np.testing.assert_array_equal(_read(d, (20, 10)), data)
        np.testing.assert_array_equal(_read(d, (20, 10), start=(3, 4), count=(5, 2)), data[3:8, 4:6])
        from vh5.compat import versioned_hdf5 as shim

        shim.read_many_slices(np.full((2, 2), -1.0), d, [0, 0], [1, 1], [2, 2])
        assert d[1, 1] == -1.0 and d[2, 2] == -1.0
    finally:
        f.close()
    assert not (tmp_path / "mem.h5").exists()


@bound
def test_file_open_for_writing_in_h5py_read_without_fallback(tmp_path, monkeypatch):
    from vh5.compat import versioned_hdf5 as shim

    monkeypatch.setenv("VH5_COMPAT_STRICT", "1")
    monkeypatch.delenv("HDF5_USE_FILE_LOCKING", raising=False)  # file locking at its default
    p = str(tmp_path / "locked.h5")
    before = shim.fallback_count
    with h5py.File(p, "a") as f:
        d = f.create_dataset("x", data=np.arange(100, dtype="i8").reshape(10, 10), chunks=(4, 4))
        dst = np.zeros((3, 3), dtype="i8")
        shim.read_many_slices(d, dst, [2, 3], [0, 0], [3, 3])
        np.testing.assert_array_equal(dst, d[2:5, 3:6])
        with vh5.File(p) as g:  # vh5 opens the same file by path: shared, no lock error
            np.testing.assert_array_equal(g["x"][...], d[...])
    assert shim.fallback_count == before


@bound
def test_chunk_cache_never_stale_on_a_file_h5py_writes(tmp_path):
    """vh5 opens read-only a file h5py holds for writing (shared intent read-write): its
    decoded-chunk cache must be off, so every read sees h5py's latest writes."""
    p = str(tmp_path / "shared.h5")
    with h5py.File(p, "a") as f:
        d = f.create_dataset("x", data=np.zeros((32, 32)), chunks=(8, 8), compression="gzip")
        f.flush()
        with vh5.File(p) as g, g["x"] as v:
            for k in range(1, 4):
                d[0:16, 0:16] = float(k)
                np.testing.assert_array_equal(v[0:16, 0:16], np.full((16, 16), float(k)))
                np.testing.assert_array_equal(_read(d, (32, 32)), d[...])


@bound
def test_dataset_shape_follows_h5py_resize_in_the_same_process(tmp_path):
    """A vh5.Dataset on a file h5py holds for writing (one libhdf5: shared intent read-write)
    shows the live extent: shape, len, d[()] and d[...] follow h5py's resize, growing and
    shrinking (once frozen at open: d[()] missed the new rows, and after a shrink failed
    with a src_start/count message the caller never passed)."""
    p = str(tmp_path / "grow.h5")
    with h5py.File(p, "w") as f:
        d = f.create_dataset("x", shape=(4, 3), maxshape=(None, 3), chunks=(2, 3), dtype="f8", fillvalue=-1)
        d[...] = 1
        with vh5.File(p) as g, g["x"] as v:
            assert v.shape == (4, 3)
            d.resize((8, 3))
            d[4:8] = 2
            assert v.shape == d.shape == (8, 3) and len(v) == 8 and v.size == 24
            np.testing.assert_array_equal(v[()], d[()])
            np.testing.assert_array_equal(v[6:], d[6:])
            d.resize((2, 3))
            assert v.shape == (2, 3) and len(v) == 2
            np.testing.assert_array_equal(v[()], d[()])
            np.testing.assert_array_equal(np.asarray(v), d[...])
            with pytest.raises(IndexError):
                v[3]
    with h5py.File(p, "r") as f, vh5.File(p) as g:  # read-only everywhere: the extent is fixed
        assert not g["x"]._live and g["x"].shape == f["x"].shape == (2, 3)


@bound
def test_read_only_file_still_cached_and_correct(tmp_path):
    p = str(tmp_path / "ro.h5")
    data = np.arange(1024.0).reshape(32, 32)
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=data, chunks=(8, 8), compression="gzip")
    with vh5.File(p) as g, g["x"] as v:
        for _ in range(3):
            np.testing.assert_array_equal(v[4:20, 4:20], data[4:20, 4:20])
    with h5py.File(p, "r") as f:  # h5py opens a file vh5 had open: fine after close
        np.testing.assert_array_equal(f["x"][...], data)


@bound
def test_h5py_and_vh5_threads_share_the_library(tmp_path):
    """h5py calls and vh5 calls from two threads at once (h5py's phil serialises them)."""
    p = str(tmp_path / "threads.h5")
    data = np.arange(64 * 64.0).reshape(64, 64)
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=data, chunks=(8, 8), compression="gzip")
    errors = []
    with h5py.File(p, "r") as f:
        d = f["x"]

        def h5py_reads():
            try:
                for i in range(150):
                    np.testing.assert_array_equal(d[i % 56 : i % 56 + 8, :], data[i % 56 : i % 56 + 8, :])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        t = threading.Thread(target=h5py_reads)
        t.start()
        for i in range(150):
            np.testing.assert_array_equal(
                _read(d, (64, 64), start=(i % 50, 3), count=(10, 20)),
                data[i % 50 : i % 50 + 10, 3:23],
            )
        t.join()
    assert not errors, errors


# ------------------------------------------------------------------ the versioned-hdf5 shim's fallbacks


def test_shim_fallbacks_are_counted_by_reason_and_strict_mode_refuses_them(monkeypatch):
    pytest.importorskip(
        "versioned_hdf5",
        reason=f"versioned-hdf5 is not installed (2.6.0 requires h5py 3.16, HDF5 2.x; this h5py {h5py.__version__} runs HDF5 {h5py.version.hdf5_version})",
    )
    from vh5.compat import versioned_hdf5 as shim

    monkeypatch.delenv("VH5_COMPAT_STRICT", raising=False)
    src = np.array(["a", "bb", "ccc", "d"], dtype=object)
    dst = np.empty(4, dtype=object)
    before, obj = shim.fallback_count, shim.fallbacks["object"]
    shim.read_many_slices(src, dst, [[1]], [[0]], [[2]])
    assert list(dst[:2]) == ["bb", "ccc"]
    assert shim.fallback_count == before + 1 and shim.fallbacks["object"] == obj + 1
    n = shim.fallback_count
    shim.read_many_slices(np.arange(4.0), np.zeros(4), [[1]], [[0]], [[2]])  # numeric: vh5 itself
    assert shim.fallback_count == n
    monkeypatch.setenv("VH5_COMPAT_STRICT", "1")
    with pytest.raises(shim.FallbackError, match="object"):
        shim.read_many_slices(src, dst, [[1]], [[0]], [[2]])
    assert shim.fallback_count == n


# ------------------------------------------------------------------ Dask on h5py's own ids


@bound
def test_dask_of_h5py_dataset_uses_its_id_in_process_and_reopens_by_path_when_pickled(tmp_path):
    """vh5.dask on an h5py dataset (bound build): tasks in this process read through the
    h5py dataset's own id — an in-memory file and unflushed writes read as h5py sees them —
    and the graph pickles as a lazy handle that reopens the file by path (refused, naming
    the reason, for a file that has no path)."""
    import pickle

    da = pytest.importorskip("dask.array")
    import vh5.dask

    data = np.arange(60 * 7, dtype="f8").reshape(60, 7)
    rows = np.array([[50, 2], [3, 0], [17, 4]], dtype=np.int64)
    # In-memory (core driver, no backing store): nothing on disk to reopen.
    with h5py.File("mem.h5", "w", driver="core", backing_store=False) as hf:
        d = hf.create_dataset("x", data=data, chunks=(8, 7))
        x = vh5.dask.from_dataset(d, chunks=(16, 7))
        np.testing.assert_array_equal(x.compute(scheduler="threads"), data)
        g = vh5.dask.gather(d, rows, count=(3, 3))
        want = np.stack([data[r : r + 3, c : c + 3] for r, c in rows.tolist()])
        np.testing.assert_array_equal(g.compute(scheduler="sync"), want)
        with pytest.raises(vh5.UnsupportedError, match="in-memory|core"):
            pickle.dumps(x)
    # On disk, written and not flushed: seen in process; pickled it reopens by path (the
    # file flushed first, so the other side sees the same values).
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as hf:
        d = hf.create_dataset("x", data=np.zeros_like(data), chunks=(8, 7))
        d[...] = data
        x = vh5.dask.from_dataset(d)
        np.testing.assert_array_equal(x.compute(scheduler="threads"), data)
        y = pickle.loads(pickle.dumps(x))
        np.testing.assert_array_equal(y[5:9].compute(scheduler="sync"), data[5:9])
    assert isinstance(da.Array, type)


@bound
def test_dask_token_of_in_memory_h5py_file_ignores_a_disk_file_of_that_name(tmp_path, monkeypatch):
    """The Dask token of an h5py dataset of an in-memory (core) file does not take the stamp
    (mtime, size, inode) of whatever file on disk has its name: that file is not its data."""
    from vh5._dask_source import source_dataset, token_parts

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mem.h5").write_bytes(b"an unrelated file")
    with h5py.File("mem.h5", "w", driver="core", backing_store=False) as hf:
        d = hf.create_dataset("x", data=np.arange(10.0), chunks=(5,))
        parts = token_parts(source_dataset(d))
        assert parts[-1] is None, parts
    with h5py.File(tmp_path / "disk.h5", "w") as hf:
        d = hf.create_dataset("x", data=np.arange(10.0), chunks=(5,))
        hf.flush()
        assert token_parts(source_dataset(d))[-1] is not None


def test_write_many_slices_to_h5py_dataset_refusal_true_for_each_build(tmp_path):
    """Writing to an h5py.Dataset is refused; the message said "its own libhdf5 ... two metadata
    caches" in the h5py-bound build too, where there is one libhdf5: each build now says its
    own truth, and the bound build's advice (vh5.File r+ next to h5py's handle) works."""
    p = str(tmp_path / "w.h5")
    with h5py.File(p, "w") as f:
        d = f.create_dataset("x", data=np.zeros(8), chunks=(4,))
        with pytest.raises(TypeError) as e:
            vh5.write_many_slices(np.ones(2), d, [0], [0], [2])
        msg = str(e.value)
        if lib().h5py_bound:
            assert "shares h5py's libhdf5" in msg and "two metadata caches" not in msg, msg
            with vh5.File(p, "r+") as g:
                vh5.write_many_slices(np.ones(2), g["x"], [0], [0], [2])
            np.testing.assert_array_equal(d[:], [1, 1, 0, 0, 0, 0, 0, 0])
        else:
            assert "its own libhdf5" in msg and "two metadata caches" in msg, msg
