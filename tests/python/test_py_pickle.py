"""Pickling of vh5.File / vh5.Dataset and the per-process cache unpickled handles reopen
through (no Dask needed); and that vh5.dask explains a missing Dask.

Files are written by h5py with libver=('earliest', 'v110') (vh5 links libhdf5 1.10) and
closed before vh5 opens them.
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
import vh5  # noqa: E402
from _testkit import run_threads  # noqa: E402
from vh5 import _cache  # noqa: E402

LIBVER = ("earliest", "v110")
RNG = np.random.default_rng(18)
A2 = RNG.random((203, 90))
A3 = RNG.integers(-30000, 30000, size=(9, 40, 33), dtype=np.int16)
C1 = np.arange(1000, dtype=np.int64) * 3


def _write(path):
    with h5py.File(path, "w", libver=LIBVER) as f:
        f.create_dataset("g/a2", data=A2, chunks=(16, 32), compression="gzip", shuffle=True)
        f.create_dataset("a3", data=A3, chunks=(2, 8, 11), compression="gzip")
        f.create_dataset("c1", data=C1)
    return str(path)


def test_pickle_roundtrip_dataset_opens_lazily(tmp_path):
    path = _write(tmp_path / "p.h5")
    with vh5.File(path) as f, f["g/a2"] as d:
        blob = pickle.dumps(d)
        fblob = pickle.dumps(f)
    d2 = pickle.loads(blob)
    assert isinstance(d2, vh5.Dataset) and isinstance(d2.file, vh5.File)
    assert not any(k[1][0] == path for k in _cache.cached_keys())  # nothing opened yet
    assert (d2.name, d2.shape, d2.dtype, d2.chunks, d2.filters) == (
        "/g/a2",
        (203, 90),
        np.dtype("<f8"),
        (16, 32),
        ("shuffle", "gzip"),
    )
    out = np.empty((5, 90))
    vh5.read_many_slices(d2, out, [100, 0], [0, 0], [5, 90])
    assert np.array_equal(out, A2[100:105])
    assert ("d", (path, "r", (("allow_external", False),)), "/g/a2") in _cache.cached_keys()
    d3 = pickle.loads(pickle.dumps(d2))  # an unpickled handle pickles again
    f2 = pickle.loads(fblob)
    assert f2.filename == path and f2.mode == "r"
    with f2["a3"] as a3:
        out = np.empty((2, 40, 33), dtype=np.int16)
        vh5.read_many_slices(a3, out, [3, 0, 0], [0, 0, 0], [2, 40, 33])
        assert np.array_equal(out, A3[3:5])
    d2.close()  # drops d2's reference only: d3 shares the cached dataset
    with pytest.raises(vh5.InvalidHandleError, match="closed"):
        vh5.read_many_slices(d2, np.empty((1, 1)), [0, 0], [0, 0], [1, 1])
    out = np.empty((1, 90))
    vh5.read_many_slices(d3, out, [7, 0], [0, 0], [1, 90])
    assert np.array_equal(out[0], A2[7])


def test_pickle_keeps_absolute_path_of_relative_open(tmp_path, monkeypatch):
    _write(tmp_path / "rel.h5")
    monkeypatch.chdir(tmp_path)
    with vh5.File("rel.h5") as f, f["c1"] as d:
        blob = pickle.dumps(d)
    monkeypatch.chdir("/")
    d2 = pickle.loads(blob)
    assert d2.file.filename == str(tmp_path / "rel.h5")
    out = np.empty(10, dtype=np.int64)
    vh5.read_many_slices(d2, out, [990], [0], [10])
    assert np.array_equal(out, C1[990:])


def test_pickle_writable_refused_unless_allowed(tmp_path):
    path = _write(tmp_path / "w.h5")
    with vh5.File(path, "r+") as f, f["c1"] as d:
        for h in (f, d):
            with pytest.raises(TypeError, match=r"opened for writing .*corrupt.*allow_pickling") as ei:
                pickle.dumps(h)
            assert path in str(ei.value)
        vh5.allow_pickling(f)
        d2 = pickle.loads(pickle.dumps(d))  # allowed through its file
        assert d2.file.mode == "r+"
        pickle.dumps(d2)  # and its copies stay allowed
    with pytest.raises(TypeError, match="vh5.File or vh5.Dataset"):
        vh5.allow_pickling(object())


def test_pickled_dataset_refuses_a_changed_file(tmp_path):
    path = tmp_path / "chg.h5"
    _write(path)
    with vh5.File(path) as f, f["g/a2"] as d:
        blob = pickle.dumps(d)
    with h5py.File(path, "w", libver=LIBVER) as f:
        f.create_dataset("g/a2", data=np.zeros((10, 90)), chunks=(8, 32))
    d2 = pickle.loads(blob)
    with pytest.raises(
        vh5.InvalidHandleError, match=r"changed since this handle was pickled \(shape \(203, 90\) -> \(10, 90\)"
    ):
        vh5.read_many_slices(d2, np.empty((1, 1)), [0, 0], [0, 0], [1, 1])


def test_unpickled_missing_file_names_path(tmp_path):
    path = _write(tmp_path / "gone.h5")
    with vh5.File(path) as f, f["c1"] as d:
        blob = pickle.dumps(d)
    os.unlink(path)
    d2 = pickle.loads(blob)  # lazy: no error yet
    with pytest.raises(vh5.IoError, match=rf"reopening '{path}' dataset '/c1' in process {os.getpid()}.*No such file"):
        vh5.read_many_slices(d2, np.empty(1, dtype=np.int64), [0], [0], [1])


def test_file_cache_is_bounded_and_thread_safe(tmp_path):
    paths = [_write(tmp_path / f"c{i}.h5") for i in range(4)]
    blobs = []
    for p in paths:
        with vh5.File(p) as f, f["c1"] as d:
            blobs.append(pickle.dumps(d))
    old = _cache.get_size()
    _cache.clear()
    vh5.set_file_cache_size(3)
    try:
        errors, results = [], []

        def work(i):
            try:
                for _ in range(20):
                    d = pickle.loads(blobs[i % 4])
                    out = np.empty(3, dtype=np.int64)
                    vh5.read_many_slices(d, out, [i], [0], [3])
                    results.append(np.array_equal(out, C1[i : i + 3]))
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        run_threads(work, [(i,) for i in range(8)])
        assert not errors and len(results) == 160 and all(results)
        assert len(_cache.cached_keys()) <= 3
        # a handle whose entry was evicted still reads (eviction drops, never closes)
        held = pickle.loads(blobs[0])
        out = np.empty(2, dtype=np.int64)
        vh5.read_many_slices(held, out, [5], [0], [2])
        for b in blobs[1:]:
            vh5.read_many_slices(pickle.loads(b), out, [5], [0], [2])
        assert all(k[1][0] != paths[0] for k in _cache.cached_keys())
        vh5.read_many_slices(held, out, [8], [0], [2])
        assert np.array_equal(out, C1[8:10])
        with pytest.raises(ValueError, match="at least 1"):
            vh5.set_file_cache_size(0)
    finally:
        vh5.set_file_cache_size(old)


def test_import_vh5_does_not_import_dask_and_vh5_dask_explains_missing_dask():
    code = (
        "import sys; import vh5; assert 'dask' not in sys.modules, 'vh5 imported dask'\n"
        "sys.modules['dask'] = None\n"
        "try:\n    import vh5.dask\nexcept ImportError as e:\n    print(e)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "pip install 'vh5[dask]'" in r.stdout


def _child_cache_state(q):
    q.put(_cache.cached_keys())


def test_forked_child_starts_with_an_empty_cache(tmp_path):
    import multiprocessing

    path = _write(tmp_path / "fork.h5")
    with vh5.File(path) as f, f["c1"] as d:
        d2 = pickle.loads(pickle.dumps(d))
    vh5.read_many_slices(d2, np.empty(1, dtype=np.int64), [0], [0], [1])  # now cached here
    assert any(k[1][0] == path for k in _cache.cached_keys())
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_cache_state, args=(q,))
    p.start()
    keys = q.get(timeout=30)
    p.join(30)
    assert keys == [] and p.exitcode == 0


def test_pickle_keeps_allow_external(tmp_path):
    """The security switch travels with the handle: a file opened with allow_external=True
    reopens with it in the receiving process, one opened without it reopens without it."""
    path = _write(tmp_path / "x.h5")
    for allow in (False, True):
        with vh5.File(path, allow_external=allow) as f:
            f2 = pickle.loads(pickle.dumps(f))
        assert f2.allow_external is allow
        with f2["g/a2"] as d:
            out = np.empty((2, 90))
            vh5.read_many_slices(d, out, [0, 0], [0, 0], [2, 90])
        assert np.array_equal(out, A2[:2])
        assert any(k[1] == (path, "r", (("allow_external", allow),)) for k in _cache.cached_keys())
