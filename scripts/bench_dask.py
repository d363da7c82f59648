#!/usr/bin/env python3
"""vh5 inside Dask: whole-array sum and a 100,000-row gather of a >= 1 GB gzip+shuffle dataset.

Peers, all in this one run on the same file, every result checked against the others:

- ``vh5.dask``: ``vh5.dask.from_dataset(d).sum()`` and ``vh5.dask.gather(d, starts, count)``
  on a ``dask.distributed.LocalCluster`` of N worker processes (1 thread each);
- ``dask+h5py``: ``da.from_array(h5py_dataset, chunks=<the same blocks>).sum()`` and the
  gather written the ordinary Dask way, ``x.vindex[rows, cols]`` (point indices of every
  element of every row; graph building is timed too, it is part of the cost), on the same
  cluster;
- ``vh5 1-proc``: one process, no Dask: the sum as a loop of one ``vh5.read_many_slices``
  call per 2048-row band, the gather as one ``read_many_slices`` call of all rows (vh5's own
  threads decode chunks on every core, as always).

The dataset (32768 x 4096 float64 = 1 GiB decoded, chunks 256 x 512 = 1 MiB, gzip level 4 +
shuffle, a smooth field plus noise rounded to 1e-3: 706 MB on disk) is generated once
into ``--path`` (default /tmp/vh5-bench-dask.h5; rebuilt when missing or of another
version). Times are the minimum of ``--repeat`` runs (dask+h5py: of min(2, --repeat) runs);
one small read per cluster first lets the workers import vh5 and open the file; the OS page
cache holds the compressed file after generation.

    python3 scripts/bench_dask.py [--workers 1,2,4] [--repeat 3] [--rows 100000]
                                  [--worker-vh5-threads N] [--no-h5py]
                                  (after cargo build --release; pip install 'dask[array]' distributed)
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python"))
os.environ.setdefault("VH5_LIBRARY", str(REPO / "target" / "release" / "libvh5.so"))
# Workers are spawned processes: they inherit the environment, and sys.path through spawn.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO / "bindings" / "python"), os.environ.get("PYTHONPATH", "")]
).rstrip(os.pathsep)

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import h5py  # noqa: E402
import vh5  # noqa: E402
import vh5.dask as vd  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

SHAPE, CHUNKS, VERSION = (32768, 4096), (256, 512), 1
ROW = (4, 16)  # shape of every gathered row


def ensure_file(path: str) -> None:
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("vh5_bench_dask") == VERSION and f["d"].shape == SHAPE:
                return
    except (OSError, KeyError):
        pass
    print(f"generating {path} ({np.prod(SHAPE) * 8 / 2**30:.1f} GiB decoded) ...", flush=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(18)
    j = np.arange(SHAPE[1])
    with h5py.File(path + ".tmp", "w", libver=("earliest", "v110")) as f:
        d = f.create_dataset(
            "d", shape=SHAPE, dtype="f8", chunks=CHUNKS, compression="gzip", compression_opts=4, shuffle=True
        )
        band = CHUNKS[0] * 8
        for a in range(0, SHAPE[0], band):
            i = np.arange(a, a + band)[:, None]
            field = 280.0 + 10.0 * np.sin(i / 700.0) * np.cos(j / 300.0) + rng.normal(0.0, 0.5, (band, SHAPE[1]))
            d[a : a + band] = np.round(field, 3)
        f.attrs["vh5_bench_dask"] = VERSION
    os.replace(path + ".tmp", path)
    print(f"  done in {time.perf_counter() - t0:.0f} s, {os.path.getsize(path) / 1e6:.0f} MB on disk", flush=True)


def best(fn, repeat: int):
    """(min seconds, last result) of ``repeat`` calls."""
    times, res = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return min(times), res


def single_process(path, starts, repeat):
    out = {}
    with vh5.File(path) as f, f["d"] as d:
        band = np.empty((2048, SHAPE[1]))

        def vsum():
            total = 0.0
            for a in range(0, SHAPE[0], 2048):
                vh5.read_many_slices(d, band, [a, 0], [0, 0], [2048, SHAPE[1]])
                total += band.sum()
            return total

        out["sum"] = best(vsum, repeat)
        n = len(starts)
        rows = np.empty((n,) + ROW)
        dst = np.zeros((n, 2), np.uint64)
        dst[:, 0] = np.arange(n, dtype=np.uint64) * ROW[0]
        cnt = np.tile(np.array(ROW, np.uint64), (n, 1))
        s = starts.astype(np.uint64)

        def vgather():
            vh5.read_many_slices(d, rows.reshape(n * ROW[0], ROW[1]), s, dst, cnt)
            return rows

        out["gather"] = best(vgather, repeat)
    return out


def on_cluster(client, path, starts, repeat, with_h5py: bool):
    out = {}
    with vh5.File(path) as f, f["d"] as d:
        x = vd.from_dataset(d)
        client.compute(x[:1, :1]).result()  # workers import vh5 and open the file once
        out["vh5 sum"] = best(lambda: client.compute(x.sum()).result(), repeat)
        g = vd.gather(d, starts, ROW)
        out["vh5 gather"] = best(lambda: client.compute(vd.gather(d, starts, ROW)).result(), repeat)
        out["blocks"] = x.chunks
        out["gather tasks"] = len(g.__dask_graph__())
    if with_h5py:
        hf = h5py.File(path, "r")
        y = da.from_array(hf["d"], chunks=x.chunks)
        out["h5py sum"] = best(lambda: client.compute(y.sum()).result(), min(2, repeat))
        i = starts[:, 0, None, None] + np.arange(ROW[0])[None, :, None]
        j = starts[:, 1, None, None] + np.arange(ROW[1])[None, None, :]
        i, j = np.broadcast_arrays(i, j)
        out["h5py gather"] = best(lambda: client.compute(y.vindex[i, j]).result(), min(2, repeat))
        hf.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", default="/tmp/vh5-bench-dask.h5")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument(
        "--worker-vh5-threads", type=int, default=0, help="VH5_THREADS in the workers (0: vh5's default, all cores)"
    )
    ap.add_argument("--no-h5py", action="store_true", help="skip the dask+h5py peer")
    args = ap.parse_args()
    ensure_file(args.path)
    rng = np.random.default_rng(0)
    starts = np.c_[rng.integers(0, SHAPE[0] - ROW[0] + 1, args.rows), rng.integers(0, SHAPE[1] - ROW[1] + 1, args.rows)]
    print(
        f"vh5 {vh5.library_version()}, dask {dask.__version__}, h5py {h5py.__version__}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}; {SHAPE} float64, chunks {CHUNKS}, gzip 4 + shuffle; "
        f"gather: {args.rows} rows of {ROW}",
        flush=True,
    )
    single = single_process(args.path, starts, args.repeat)
    ref_sum, ref_rows = single["sum"][1], single["gather"][1].copy()
    print(f"vh5 1-proc:   sum {single['sum'][0]:6.2f} s   gather {single['gather'][0]:6.2f} s", flush=True)
    results = {}
    for n in [int(w) for w in args.workers.split(",")]:
        env = {"VH5_THREADS": str(args.worker_vh5_threads)} if args.worker_vh5_threads else {}
        with (
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, env=env) as cluster,
            Client(cluster) as client,
        ):
            r = on_cluster(client, args.path, starts, args.repeat, with_h5py=not args.no_h5py)
        results[n] = r
        assert np.isclose(r["vh5 sum"][1], ref_sum, rtol=1e-12, atol=0), (r["vh5 sum"][1], ref_sum)
        assert np.array_equal(r["vh5 gather"][1], ref_rows), "vh5.dask gather differs from read_many_slices"
        line = f"{n} worker(s):  vh5.dask sum {r['vh5 sum'][0]:6.2f} s   gather {r['vh5 gather'][0]:6.2f} s"
        if "h5py sum" in r:
            assert np.isclose(r["h5py sum"][1], ref_sum, rtol=1e-12, atol=0), (r["h5py sum"][1], ref_sum)
            assert np.array_equal(r["h5py gather"][1], ref_rows), "dask+h5py gather differs from vh5"
            line += f"   | dask+h5py sum {r['h5py sum'][0]:6.2f} s   gather {r['h5py gather'][0]:6.2f} s"
        print(
            line + f"   (blocks {tuple(len(c) for c in r['blocks'])}, gather tasks {r['gather tasks']}, "
            f"load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    print("ratios (time of peer / time of vh5.dask on the same cluster):")
    for n, r in results.items():
        cells = []
        for op in ("sum", "gather"):
            if "h5py " + op in r:
                cells.append(f"{op}: dask+h5py {r['h5py ' + op][0] / r['vh5 ' + op][0]:4.1f}x")
            cells.append(f"{op}: vh5 1-proc {single[op][0] / r['vh5 ' + op][0]:4.2f}x")
        print(f"  {n} worker(s): " + "   ".join(cells))
    first = min(results)
    print(f"scaling (time with {first} worker(s) / time with N):")
    for n, r in results.items():
        cells = [
            f"vh5.dask sum {results[first]['vh5 sum'][0] / r['vh5 sum'][0]:4.2f}x",
            f"gather {results[first]['vh5 gather'][0] / r['vh5 gather'][0]:4.2f}x",
        ]
        if "h5py sum" in r:
            cells += [
                f"dask+h5py sum {results[first]['h5py sum'][0] / r['h5py sum'][0]:4.2f}x",
                f"gather {results[first]['h5py gather'][0] / r['h5py gather'][0]:4.2f}x",
            ]
        print(f"  N={n}: " + "   ".join(cells))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
