"""vh5 inside Dask: picklable handles, the per-process file cache, vh5.dask.from_dataset and
vh5.dask.gather, against numpy, h5py and da.from_array(h5py dataset), with the threaded
scheduler and with a dask.distributed LocalCluster of 2 worker processes (one per module).

Files are written by h5py with libver=('earliest', 'v110') (vh5 links libhdf5 1.10) and
closed before vh5 opens them.
"""

import itertools
import os
import pickle

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
da = pytest.importorskip("dask.array", reason="dask is not installed: pip install 'vh5[dask]' (or scripts/setup.sh)")
import dask  # noqa: E402
import vh5  # noqa: E402
import vh5.dask as vd  # noqa: E402

LIBVER = ("earliest", "v110")
RNG = np.random.default_rng(18)
A2 = RNG.random((203, 90))  # float64, chunks (16, 32): partial edge chunks on both axes
A3 = RNG.integers(-30000, 30000, size=(9, 40, 33), dtype=np.int16)
BE = RNG.random((50, 7)).astype(">f4")
C1 = np.arange(1000, dtype=np.int64) * 3


def _write(path, **extra):
    with h5py.File(path, "w", libver=LIBVER) as f:
        f.create_dataset("g/a2", data=A2, chunks=(16, 32), compression="gzip", shuffle=True)
        f.create_dataset("a3", data=A3, chunks=(2, 8, 11), compression="gzip")
        f.create_dataset("be", data=BE, chunks=(8, 7))
        f.create_dataset("c1", data=C1)  # contiguous
        f.create_dataset("s0", data=np.float64(2.5))
        p = f.create_dataset("fill", shape=(40, 40), dtype="f8", chunks=(10, 10), fillvalue=-1.0)
        p[0:10, 0:20] = 7.0  # the other chunks are never written: fill value
        for k, v in extra.items():
            f.create_dataset(k, data=v, chunks=True)
    return str(path)


@pytest.fixture(scope="module")
def h5file(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("dask") / "data.h5")


@pytest.fixture(scope="module")
def expected(h5file):
    with h5py.File(h5file, "r") as f:
        return {k: f[k][()] for k in ("g/a2", "a3", "be", "c1", "s0", "fill")}


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip(
        "dask.distributed", reason="distributed is not installed: pip install distributed"
    )
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


# ----------------------------------------------------------------------------------------
# from_dataset

SELECTIONS = {
    "g/a2": [
        np.s_[:],
        np.s_[3:177:5, ::-3],
        np.s_[5],
        np.s_[..., 7],
        np.s_[None, 10:20, -1],
        np.s_[::-1, 40:2:-7],
        np.s_[200:, 89:],
        np.s_[15:17, 31:33],
        np.s_[50:50],
    ],
    "a3": [np.s_[:], np.s_[1:8:3, ::5, 32], np.s_[-1, 7:9, :], np.s_[..., ::-2], np.s_[4:5, 39, None, ::4]],
    "be": [np.s_[:], np.s_[7:9], np.s_[::7, 3]],
    "c1": [np.s_[:], np.s_[999], np.s_[123:877:13], np.s_[::-9]],
    "s0": [np.s_[()], np.s_[...]],
    "fill": [np.s_[:], np.s_[5:35:3, 15:25]],
}


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_from_dataset_equals_h5py_dask_threads(h5file, expected, name):
    with vh5.File(h5file) as f, f[name] as d, h5py.File(h5file, "r") as hf:
        x = vd.from_dataset(d, chunks=(7, 12, 9)[: d.ndim])
        y = da.from_array(hf[name], chunks=(7, 12, 9)[: d.ndim])
        assert x.shape == y.shape == expected[name].shape
        assert x.dtype == expected[name].dtype.newbyteorder("=")
        for sel in SELECTIONS[name]:
            got = x[sel].compute(scheduler="threads")
            assert np.array_equal(got, y[sel].compute(scheduler="threads")), sel
            assert np.array_equal(got, expected[name][sel]), sel
    # the array outlives the handles it was made from (it holds its own lazy handle)
    assert np.array_equal(x.compute(scheduler="threads"), expected[name])


def test_from_dataset_auto_chunks_on_the_chunk_grid(h5file, expected):
    with vh5.File(h5file) as f, f["a3"] as d, f["g/a2"] as d2:
        with dask.config.set({"array.chunk-size": "16KiB"}):
            for dd, want in ((d, expected["a3"]), (d2, expected["g/a2"])):
                x = vd.from_dataset(dd)
                assert x.npartitions > 1
                for axis, (blocks, c) in enumerate(zip(x.chunks, dd.chunks)):
                    assert all(b % c == 0 for b in blocks[:-1]), (axis, blocks, c)
                assert np.array_equal(x.compute(scheduler="threads"), want)
        # the default: Dask's 128 MiB target, still on the grid; explicit chunks as given
        assert vd.from_dataset(d).chunks == ((9,), (40,), (33,))
        assert vd.from_dataset(d2, chunks=(50, 50)).chunks == ((50, 50, 50, 50, 3), (50, 40))


def test_from_dataset_of_h5py_dataset_and_token(h5file, expected):
    with h5py.File(h5file, "r") as hf:
        x = vd.from_dataset(hf["g/a2"], chunks=(64, 64))
        assert np.array_equal(x.compute(scheduler="threads"), expected["g/a2"])
        assert x.name == vd.from_dataset(hf["g/a2"], chunks=(64, 64)).name
        assert x.name != vd.from_dataset(hf["g/a2"], chunks=(32, 64)).name
        assert x.name != vd.from_dataset(hf["a3"], chunks=(64, 64, 64)).name
    with pytest.raises(TypeError, match="vh5.Dataset or an h5py.Dataset"):
        vd.from_dataset(np.zeros(3))


def test_reductions_are_ordinary_dask(h5file, expected):
    with vh5.File(h5file) as f, f["fill"] as d, f["a3"] as d3:
        x = vd.from_dataset(d, chunks=(10, 20))
        want = expected["fill"]
        assert x.sum().compute(scheduler="threads") == want.sum()
        assert x.max().compute(scheduler="threads") == want.max()
        m = da.ma.masked_equal(x, d.fillvalue).mean().compute(scheduler="threads")
        assert m == np.ma.masked_equal(want, -1.0).mean() == 7.0
        y = vd.from_dataset(d3, chunks=(4, 16, 11))
        assert np.array_equal(
            y.astype(np.int64).sum(axis=(0, 2)).compute(scheduler="threads"),
            expected["a3"].astype(np.int64).sum(axis=(0, 2)),
        )


# ----------------------------------------------------------------------------------------
# gather


def _rows(a, starts, count, steps=None):
    steps = np.ones_like(starts) if steps is None else np.broadcast_to(steps, starts.shape)
    return (
        np.stack(
            [
                a[tuple(slice(s, s + (c - 1) * t + 1, t) for s, c, t in zip(r, count, st))]
                for r, st in zip(starts, steps)
            ]
        )
        if len(starts)
        else np.empty((0,) + tuple(count), a.dtype)
    )


@pytest.mark.parametrize("rows_per_task", [None, 1, 37, 400])
def test_gather_random_rows_in_row_order(h5file, rows_per_task):
    starts = np.c_[RNG.integers(0, 200, 1500), RNG.integers(0, 80, 1500)]
    with vh5.File(h5file) as f, f["g/a2"] as d:
        g = vd.gather(d, starts, [4, 10], rows_per_task=rows_per_task)
        assert g.shape == (1500, 4, 10) and g.dtype == np.float64
        assert np.array_equal(g.compute(scheduler="threads"), _rows(A2, starts, (4, 10)))
        assert np.array_equal(g[100:300:7].compute(scheduler="threads"), _rows(A2, starts[100:300:7], (4, 10)))


def test_gather_steps_sorted_rows_and_edge_cases(h5file, expected):
    with vh5.File(h5file) as f, f["a3"] as d, f["g/a2"] as d2, f["be"] as dbe, f["c1"] as dc:
        starts = np.c_[RNG.integers(0, 5, 300), RNG.integers(0, 30, 300), RNG.integers(0, 20, 300)]
        steps = np.c_[RNG.integers(1, 3, 300), RNG.integers(1, 4, 300), np.full(300, 3)]
        g = vd.gather(d, starts, [2, 3, 4], src_step=steps, rows_per_task=50)
        assert np.array_equal(g.compute(scheduler="threads"), _rows(A3, starts, (2, 3, 4), steps))
        # rows already in chunk order: the read tasks are the result's blocks
        s2 = np.c_[np.repeat(np.arange(0, 200, 5), 3), np.tile([0, 33, 70], 40)]
        s2 = s2[np.lexsort((s2[:, 1] // 32, s2[:, 0] // 16))]
        g2 = vd.gather(d2, s2, [3, 20], rows_per_task=10)
        assert not any("-read" in k[0] for k in dict(g2.__dask_graph__()))
        assert np.array_equal(g2.compute(scheduler="threads"), _rows(A2, s2, (3, 20)))
        # big-endian data arrives native; contiguous datasets; one row; no rows; empty count
        gb = vd.gather(dbe, np.array([[49, 0], [3, 2]]), [1, 5])
        assert gb.dtype == np.dtype("f4") and np.array_equal(
            gb.compute(), _rows(BE, np.array([[49, 0], [3, 2]]), (1, 5))
        )
        sc = RNG.integers(0, 990, (500, 1))
        assert np.array_equal(vd.gather(dc, sc, [10], src_step=[1]).compute(), _rows(C1, sc, (10,)))
        assert vd.gather(d2, np.zeros((0, 2), int), [3, 3]).compute().shape == (0, 3, 3)
        assert vd.gather(d2, np.array([[5, 5]]), [0, 3]).compute().shape == (1, 0, 3)
        assert np.array_equal(vd.gather(d2, np.array([[1, 2]]), np.array([[3, 3]])).compute()[0], A2[1:4, 2:5])


def test_gather_tasks_follow_the_chunks(h5file):
    # 40 chunk rows x 3 chunk columns of (16, 32); 2000 random rows of 1 x 8 inside chunks
    starts = np.c_[RNG.integers(0, 203, 2000), RNG.integers(0, 3, 2000) * 32 + RNG.integers(0, 3, 2000)]
    starts[:, 1] = np.minimum(starts[:, 1], 82)
    with vh5.File(h5file) as f, f["g/a2"] as d:
        g = vd.gather(d, starts, [1, 8], rows_per_task=300)
        graph = dict(g.__dask_graph__())
        seen = {}
        for k, v in graph.items():
            if "-read" in k[0]:
                rows = v.args[1] if hasattr(v, "args") else v[2]
                rows = getattr(rows, "value", rows)
                for c in {tuple(r) for r in rows // [16, 32]}:
                    assert c not in seen, f"chunk {c} read by tasks {seen[c]} and {k}"
                    seen[c] = k
        assert len(seen) == len({tuple(r) for r in starts // [16, 32]})
        assert np.array_equal(g.compute(scheduler="threads"), _rows(A2, starts, (1, 8)))


def _task_chunks(entry_src, entry_count, entry_step, chunks):
    """Every chunk (coordinates) that the entries of one read task touch."""
    out = set()
    for s, c, t in zip(entry_src, entry_count, entry_step):
        last = s + (c - 1) * t
        ranges = [range(int(a) // ch, int(b) // ch + 1) for a, b, ch in zip(s, last, chunks)]
        out |= set(itertools.product(*ranges))
    return out


@pytest.mark.parametrize("step0", [1, 3])
def test_gather_rows_crossing_task_boundaries_are_split(h5file, step0):
    # rows of 9 (or 9 with step 3: 25 elements) along axis 0 cross the 16-row chunk bands
    # often; tasks of <= 200 rows (about 2 bands of ~92 rows) end at band boundaries, so
    # every chunk is read by exactly one task
    n0 = 9
    span = (n0 - 1) * step0 + 1
    starts = np.c_[RNG.integers(0, 203 - span + 1, 1200), RNG.integers(0, 83, 1200)]
    steps = np.c_[np.full(1200, step0), np.ones(1200, int)]
    with vh5.File(h5file) as f, f["g/a2"] as d:
        g = vd.gather(d, starts, [n0, 7], src_step=steps, rows_per_task=200)
        assert len([k for k in dict(g.__dask_graph__()) if "-read" in k[0]]) >= 5
        seen = {}
        for k, v in dict(g.__dask_graph__()).items():
            if "-read" in k[0]:
                args = [getattr(a, "value", a) for a in (v.args if hasattr(v, "args") else v[1:])]
                src, counts, st = args[1], args[3], args[4]
                st = np.ones_like(src) if st is None else st
                for c in _task_chunks(src.astype(np.int64), counts.astype(np.int64), st.astype(np.int64), d.chunks):
                    assert c not in seen, f"chunk {c} read by tasks {seen[c]} and {k}"
                    seen[c] = k
        assert np.array_equal(g.compute(scheduler="threads"), _rows(A2, starts, (n0, 7), steps))
        assert np.array_equal(
            g[::-1][5:900:3].compute(scheduler="sync"), _rows(A2, starts, (n0, 7), steps)[::-1][5:900:3]
        )
        # rows taller than a task's bands (spanning 3-4 tasks) are split into every task
        tall = np.c_[RNG.integers(0, 100, 50), RNG.integers(0, 80, 50)]
        g2 = vd.gather(d, tall, [100, 3], rows_per_task=3)
        assert np.array_equal(g2.compute(scheduler="threads"), _rows(A2, tall, (100, 3)))


def test_gather_bad_tables(h5file):
    with vh5.File(h5file) as f, f["g/a2"] as d, f["s0"] as d0:
        with pytest.raises(
            vh5.OutOfBoundsError, match=r"row 2 axis 1: start 85 \+ \(count 6 - 1\) \* step 1 is past the extent 90"
        ):
            vd.gather(d, [[0, 0], [1, 1], [0, 85]], [2, 6])
        with pytest.raises(vh5.OutOfBoundsError, match=r"row 1 axis 0: start 190 \+ \(count 2 - 1\) \* step 13"):
            vd.gather(d, [[0, 0], [190, 1]], [2, 6], src_step=[13, 1])
        with pytest.raises(ValueError, match="row 1 axis 0 is negative"):
            vd.gather(d, [[0, 0], [-1, 1]], [2, 6])
        with pytest.raises(ValueError, match="src_step row 0 axis 1 is 0"):
            vd.gather(d, [[0, 0]], [2, 6], src_step=[1, 0])
        with pytest.raises(ValueError, match="one count for all rows.*row 1"):
            vd.gather(d, [[0, 0], [1, 1]], [[2, 6], [2, 5]])
        with pytest.raises(ValueError, match=r"src_start must have shape \(nrows, ndim\) with ndim = 2"):
            vd.gather(d, [0, 0], [2, 6])
        with pytest.raises(TypeError, match="integers"):
            vd.gather(d, [[0.5, 0]], [2, 6])
        with pytest.raises(ValueError, match="scalar"):
            vd.gather(d0, np.zeros((1, 0), int), [])
        with pytest.raises(ValueError, match="rows_per_task"):
            vd.gather(d, [[0, 0]], [1, 1], rows_per_task=0)


def test_from_dataset_of_writable_dataset_refuses_to_pickle(tmp_path):
    path = _write(tmp_path / "w.h5")
    with vh5.File(path, "r+") as f, f["c1"] as d:
        x = vd.from_dataset(d)
        assert np.array_equal(x.compute(scheduler="threads"), C1)  # in-process: fine
        with pytest.raises(TypeError, match="opened for writing"):
            pickle.dumps(x)  # what sending the graph to worker processes does


# ----------------------------------------------------------------------------------------
# LocalCluster: 2 worker processes


def test_distributed_from_dataset_and_gather(cluster_client, h5file, expected):
    client = cluster_client
    with vh5.File(h5file) as f, f["g/a2"] as d, f["a3"] as d3, h5py.File(h5file, "r") as hf:
        x = vd.from_dataset(d, chunks=(32, 64))
        y = da.from_array(hf["g/a2"], chunks=(32, 64))
        assert np.isclose(client.compute(x.sum()).result(), expected["g/a2"].sum())
        for sel in SELECTIONS["g/a2"][:6]:
            assert np.array_equal(client.compute(x[sel]).result(), client.compute(y[sel]).result()), sel
        z = vd.from_dataset(d3, chunks=(3, 16, 11))
        assert np.array_equal(client.compute(z).result(), expected["a3"])
        starts = np.c_[RNG.integers(0, 200, 3000), RNG.integers(0, 80, 3000)]
        g = vd.gather(d, starts, [3, 10], rows_per_task=400)
        assert np.array_equal(client.compute(g).result(), _rows(A2, starts, (3, 10)))
        assert np.isclose(client.compute(g.max(axis=0)).result(), _rows(A2, starts, (3, 10)).max(axis=0)).all()
    # both workers ran tasks and keep the file in their cache
    keys = client.run(lambda: [k for k in __import__("vh5")._cache.cached_keys() if k[0] == "d"])
    assert len(keys) == 2 and all(
        ("d", (h5file, "r", (("allow_external", False),)), "/g/a2") in v for v in keys.values()
    )


def test_distributed_worker_that_cannot_open_reports_path(cluster_client, tmp_path):
    path = _write(tmp_path / "moved.h5")
    with vh5.File(path) as f, f["g/a2"] as d:
        x = vd.from_dataset(d, chunks=(64, 64))
        g = vd.gather(d, [[0, 0], [100, 50]], [2, 2])
    os.rename(path, path + ".away")  # the workers have never opened it
    for arr in (x.sum(), g):
        with pytest.raises(
            vh5.IoError,
            match=rf"reopening '{path}' dataset '/g/a2' in process \d+ on .*cannot open `{path}`: No such file",
        ):
            cluster_client.compute(arr).result()


def test_distributed_refuses_writable_graph(cluster_client, tmp_path):
    path = _write(tmp_path / "rw.h5")
    with vh5.File(path, "r+") as f, f["c1"] as d:
        with pytest.raises(Exception) as ei:
            cluster_client.compute(vd.from_dataset(d).sum()).result()
        chain, e = [], ei.value
        while e is not None:
            chain.append(str(e))
            e = e.__cause__ or e.__context__
        assert any("opened for writing (mode 'r+')" in m and path in m for m in chain), chain
