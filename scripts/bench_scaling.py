#!/usr/bin/env python3
"""Many-chunk benchmark (issue "cost linear in the work"): a scaling series in the number of
chunks, and the shapes of public bug reports, read by vh5 in each planner mode and by every
peer, in one run; every result checked equal (vh5's by a hash of h5py's answer).

Peers (same files, same selections):
- h5py `d[sel]`: one h5py selection per case when the case is one row (whole read, slab,
  stepped row); h5py 3.16 with its bundled HDF5 2.0, default chunk cache (8 MiB);
- h5py whole + gather: `d[...]` then one numpy fancy-indexing gather (every case);
- h5py tuned: a file opened with `rdcc_nbytes` = 1.25 x the dataset's decoded size (at least
  16 MiB, at most 1 GiB) and `rdcc_nslots` = 10 x its chunks; the better of `d[sel]` and
  whole + gather;
- hidefix 0.12 (optional: `pip install hidefix==0.12.0`): its slab read when the case is one
  unstepped row, else its whole read + gather;
- versioned-hdf5 2.6.0 `read_many_slices`;
- vh5 `read_many_slices` in the planner modes `auto`, `chunks` and `rows` (`vh5.set_planner`),
  default threads, all in one child process: per case, `--rounds` rounds (default 3) of the
  three modes in turn, each mode on a dataset handle of its own (its own decoded-chunk cache);
  each mode keeps its best over the rounds.

Every operation is called once before timing (page cache warm; chunk caches warm where the
reader keeps one across calls: h5py's, vh5's decoded-chunk cache), then the best (minimum) of up to
`--repeat` calls (20x as many when the first call took under 5 ms; fewer once a case has
used `--budget` seconds; a first call longer than the budget is the measurement). Ratios: peer time / vh5
`auto` time (> 1 = vh5 faster); `auto : best mode` = auto's time / the best of its modes
(target <= 1.1).

Usage: python3 scripts/bench_scaling.py [--quick] [--repeat 3] [--rounds 3] [--out FILE.md]
       [--only SUBSTRING] [--no-scaling] [--no-cases]
(`VH5_SHARED_DATA` locates real/test1.nc; the case is skipped with a note when missing.)
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")
os.environ.setdefault("VH5_LIBRARY", os.path.join(ROOT, "target", "release", "libvh5.so"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))

import numpy as np  # noqa: E402

SHARED = os.environ.get("VH5_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
MODES = ("auto", "chunks", "rows")
LIBVER = ("earliest", "v110")  # readable by vh5's libhdf5 1.10


def timed(fn, repeat, budget):
    """Best of up to `repeat` calls after one warm-up call (20x as many when the warm-up took
    under 5 ms: the best of 5 sub-millisecond calls moved by 1.5x between runs); stops early
    past `budget` s (a warm-up call longer than `budget` is the measurement)."""
    t0 = time.perf_counter()
    fn()
    spent = time.perf_counter() - t0
    if spent > budget:
        return spent  # slow case: the warm-up call is the measurement (page cache warm already)
    ts = []
    for _ in range(repeat * 20 if spent < 0.005 else repeat):
        if ts and spent > budget:
            break
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        spent += ts[-1]
    return min(ts)


def digest(a):
    return hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).hexdigest()


# ---------------------------------------------------------------- case definitions


class Case:
    """One selection table on one dataset. `sel` = the h5py selection when the case is one row."""

    def __init__(
        self,
        name,
        path,
        dset,
        src,
        dstart,
        count,
        sstep=None,
        dstep=None,
        dst_shape=None,
        dtype="f8",
        nchunks=None,
        group="cases",
    ):
        n, nd = src.shape
        self.name, self.path, self.dset, self.group = name, path, dset, group
        self.src = np.ascontiguousarray(src, np.uint64)
        self.dstart = np.ascontiguousarray(dstart, np.uint64)
        self.count = np.ascontiguousarray(count, np.uint64)
        self.sstep = np.ones((n, nd), np.uint64) if sstep is None else np.ascontiguousarray(sstep, np.uint64)
        self.dstep = np.ones((n, nd), np.uint64) if dstep is None else np.ascontiguousarray(dstep, np.uint64)
        self.dst_shape, self.dtype, self.nchunks = tuple(dst_shape), dtype, nchunks
        self.sel = None
        if n == 1:
            self.sel = tuple(
                slice(int(s), int(s) + (int(c) - 1) * int(k) + 1, int(k))
                for s, c, k in zip(self.src[0], self.count[0], self.sstep[0])
            )

    @property
    def unstepped(self):
        return bool((self.sstep == 1).all() and (self.dstep == 1).all())


def whole_row(shape):
    nd = len(shape)
    z = np.zeros((1, nd), np.uint64)
    return z, z.copy(), np.array([shape], np.uint64)


def write(path, data, chunks, gzip, shuffle=False, maxshape=None, level=4):
    import h5py

    kw = dict(compression="gzip", compression_opts=level, shuffle=shuffle) if gzip else {}
    with h5py.File(path, "w", libver=LIBVER) as f:
        f.create_dataset("x", data=data, chunks=chunks, maxshape=maxshape, **kw)


def field(rng, shape, dtype="f8"):
    """Compressible but not trivial: a smooth ramp plus noise rounded to 1e-2."""
    n = int(np.prod(shape))
    a = np.linspace(0, 100, n) + np.round(rng.standard_normal(n), 2)
    return a.astype(dtype).reshape(shape)


def one_per_chunk(rng, shape, chunk, cnt):
    """One row of `cnt` elements per axis inside every chunk, random position, random order."""
    grids = [np.arange(0, s, c) for s, c in zip(shape, chunk)]
    origins = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, len(shape))
    room = np.array([c - cnt for c in chunk], np.int64)
    src = origins + rng.integers(0, room + 1, size=origins.shape)
    src = src[rng.permutation(len(src))].astype(np.uint64)
    n = len(src)
    dstart = np.zeros_like(src)
    dstart[:, 0] = np.arange(n, dtype=np.uint64) * cnt
    count = np.full_like(src, cnt)
    dst_shape = (n * cnt,) + (cnt,) * (len(shape) - 1)
    return src, dstart, count, dst_shape


def scaling_cases(tmp, sizes, rng):
    out = []
    for nch in sizes:
        for nd in (1, 2):
            if nd == 1:
                chunk, shape = (16,), (16 * nch,)
            else:
                side = int(round(nch**0.5))
                chunk, shape = (4, 4), (4 * side, 4 * (nch // side))
            data = field(rng, shape)
            for gz in (False, True):
                tag = f"{nd}-D {'gzip' if gz else 'raw'} {nch // 1024}k chunks of {'x'.join(map(str, chunk))}"
                path = os.path.join(tmp, f"scale_{nd}d_{'gz' if gz else 'raw'}_{nch}.h5")
                write(path, data, chunk, gz)
                out.append(
                    Case(f"S {tag}, whole", path, "x", *whole_row(shape), dst_shape=shape, nchunks=nch, group="scaling")
                )
                src, dstart, count, dshape = one_per_chunk(rng, shape, chunk, 2)
                out.append(
                    Case(
                        f"S {tag}, 1 row per chunk",
                        path,
                        "x",
                        src,
                        dstart,
                        count,
                        dst_shape=dshape,
                        nchunks=nch,
                        group="scaling",
                    )
                )
    return out


def issue_cases(tmp, rng, quick):
    out = []
    for k in (8, 16, 32):  # 1: 1-D float64 gzip, 16-element chunks, whole
        path = os.path.join(tmp, f"c1_{k}k.h5")
        write(path, field(rng, (16 * 1024 * k,)), (16,), True)
        out.append(
            Case(
                f"1. 1-D gzip, {k}k chunks of 16, whole",
                path,
                "x",
                *whole_row((16 * 1024 * k,)),
                dst_shape=(16 * 1024 * k,),
                nchunks=1024 * k,
            )
        )
    # 2: 32,768 rows, one per 16x16 chunk of (2048, 4096) float32 gzip (each row = its chunk)
    path = os.path.join(tmp, "c2.h5")
    write(path, field(rng, (2048, 4096), "f4"), (16, 16), True)
    src, dstart, count, dshape = one_per_chunk(rng, (2048, 4096), (16, 16), 16)
    out.append(
        Case(
            "2. 32,768 rows of 16x16, one per chunk, (2048, 4096) f4 gzip",
            path,
            "x",
            src,
            dstart,
            count,
            dst_shape=dshape,
            dtype="f4",
            nchunks=32768,
        )
    )
    # 3: one row with step 2 on axis 0, 10000x2000 f8 uncompressed, 1000x1000 chunks
    path = os.path.join(tmp, "c3.h5")
    write(path, field(rng, (10000, 2000)), (1000, 1000), False)
    out.append(
        Case(
            "3. one row, step 2 on axis 0, 10000x2000 f8 raw, 1000x1000 chunks",
            path,
            "x",
            np.zeros((1, 2)),
            np.zeros((1, 2)),
            np.array([[5000, 2000]]),
            np.array([[2, 1]]),
            dst_shape=(5000, 2000),
            nchunks=20,
        )
    )
    # 4: repeated value[::10] of 1M int64 gzip, 1000-element chunks (per call, file open)
    path = os.path.join(tmp, "c4.h5")
    write(path, np.cumsum(rng.integers(0, 5, 1_000_000)).astype("i8"), (1000,), True)
    out.append(
        Case(
            "4. repeated value[::10], 1M i8 gzip, 1000-element chunks (per call)",
            path,
            "x",
            np.zeros((1, 1)),
            np.zeros((1, 1)),
            np.array([[100_000]]),
            np.array([[10]]),
            dst_shape=(100_000,),
            dtype="i8",
            nchunks=1000,
        )
    )
    # 5: real test1.nc tas, 10,000 random 1x4x4 rows
    tas = os.path.join(SHARED, "real", "test1.nc")
    if os.path.exists(tas):
        n = 10_000
        s = np.stack([rng.integers(0, 12, n), rng.integers(0, 60, n), rng.integers(0, 124, n)], axis=1)
        d = np.zeros((n, 3), np.uint64)
        d[:, 0] = np.arange(n)
        out.append(
            Case(
                "5. real tas (test1.nc), 10,000 random 1x4x4 rows",
                tas,
                "tas",
                s,
                d,
                np.tile([[1, 4, 4]], (n, 1)),
                dst_shape=(n, 4, 4),
                nchunks=16,
            )
        )
    else:
        print(f"# case 5 skipped: {tas} not found (set VH5_SHARED_DATA)", file=sys.stderr)
    # 6: (3, 74, 3944) f8 gzip, chunks (900, 3, 3), whole
    path = os.path.join(tmp, "c6.h5")
    write(path, field(rng, (3, 74, 3944)), (900, 3, 3), True, maxshape=(None, 74, 3944))
    out.append(
        Case(
            "6. (3, 74, 3944) f8 gzip, chunks (900, 3, 3), whole",
            path,
            "x",
            *whole_row((3, 74, 3944)),
            dst_shape=(3, 74, 3944),
            nchunks=25 * 1315,
        )
    )
    # 7: 2000x2000 f8 gzip+shuffle 16x16 chunks: whole, and a 1000x1000 slab
    path = os.path.join(tmp, "c7.h5")
    write(path, field(rng, (2000, 2000)), (16, 16), True, shuffle=True)
    out.append(
        Case(
            "7a. 2000x2000 f8 gzip+shuffle, 16x16 chunks, whole",
            path,
            "x",
            *whole_row((2000, 2000)),
            dst_shape=(2000, 2000),
            nchunks=125 * 125,
        )
    )
    out.append(
        Case(
            "7b. same, 1000x1000 slab at (500, 500)",
            path,
            "x",
            np.array([[500, 500]]),
            np.zeros((1, 2)),
            np.array([[1000, 1000]]),
            dst_shape=(1000, 1000),
            nchunks=63 * 63,
        )
    )
    # 8: 1-D 256k f8 gzip, 64k chunks (of 4), whole
    path = os.path.join(tmp, "c8.h5")
    write(path, field(rng, (1 << 18,)), (4,), True)
    out.append(
        Case(
            "8. 1-D 256k f8 gzip, 64k chunks of 4, whole",
            path,
            "x",
            *whole_row((1 << 18,)),
            dst_shape=(1 << 18,),
            nchunks=1 << 16,
        )
    )
    return out


# ---------------------------------------------------------------- peers


def gather(whole, dst, c):
    """numpy gather of a table with one count per axis (all cases here)."""
    nd = whole.ndim
    cnt = [int(c.count[0, j]) for j in range(nd)]

    def idx(start, step, j):
        return (
            start[:, j].astype(np.int64)[:, None]
            + np.arange(cnt[j], dtype=np.int64)[None, :] * step[:, j].astype(np.int64)[:, None]
        )

    def mesh(ix):
        return tuple(
            ix[j].reshape((ix[j].shape[0],) + tuple(cnt[k] if k == j else 1 for k in range(nd))) for j in range(nd)
        )

    if c.src.shape[0] == 1:
        dsel = tuple(
            slice(int(d), int(d) + (int(n) - 1) * int(k) + 1, int(k))
            for d, n, k in zip(c.dstart[0], c.count[0], c.dstep[0])
        )
        dst[dsel] = whole[c.sel]
        return
    dst[mesh([idx(c.dstart, c.dstep, j) for j in range(nd)])] = whole[mesh([idx(c.src, c.sstep, j) for j in range(nd)])]


def put(dst, c, got):
    dsel = tuple(
        slice(int(d), int(d) + (int(n) - 1) * int(k) + 1, int(k))
        for d, n, k in zip(c.dstart[0], c.count[0], c.dstep[0])
    )
    dst[dsel] = got


def peers(c, repeat, budget, have_hidefix):
    import h5py
    from versioned_hdf5.slicetools import read_many_slices as vh_read

    res, want = {}, None
    h = h5py.File(c.path, "r")
    ds = h[c.dset]
    nbytes = ds.size * ds.dtype.itemsize
    nch = c.nchunks or 1
    ht = h5py.File(
        c.path,
        "r",
        rdcc_nbytes=int(min(1 << 30, max(16 << 20, 1.25 * nbytes))),
        rdcc_nslots=max(8191, 10 * nch + 1),
        rdcc_w0=1.0,
    )
    dt = ht[c.dset]
    outs = {}

    def run(key, fn):
        dst = np.zeros(c.dst_shape, c.dtype)
        res[key] = timed(lambda: fn(dst), repeat, budget)
        outs[key] = dst

    run("h5py whole+gather", lambda dst: gather(ds[...], dst, c))
    want = outs["h5py whole+gather"]
    if c.sel is not None:
        run("h5py d[sel]", lambda dst: put(dst, c, ds[c.sel]))
        run("h5py tuned d[sel]", lambda dst: put(dst, c, dt[c.sel]))
    run("h5py tuned whole+gather", lambda dst: gather(dt[...], dst, c))
    if c.src.shape[0] <= 100_000:
        run("versioned-hdf5", lambda dst: vh_read(ds, dst, c.src, c.dstart, c.count, c.sstep, c.dstep))
    if have_hidefix:
        import hidefix

        hd = hidefix.Index(c.path).dataset(c.dset)
        full = tuple(slice(0, s) for s in ds.shape)
        if c.sel is not None and c.unstepped:
            run("hidefix", lambda dst: put(dst, c, hd[c.sel]))
        else:
            run("hidefix", lambda dst: gather(hd[full], dst, c))
    for k, v in outs.items():
        assert np.array_equal(v, want), f"{c.name}: {k} differs from h5py whole+gather"
    ht.close()
    h.close()
    return res, digest(want)


# ---------------------------------------------------------------- vh5 (one child process, modes in turn)


def child(spec_path, repeat, budget, rounds):
    """Times every case in every planner mode in this one process: per case, `rounds` rounds
    of the modes in turn (`vh5.set_planner`), each mode on a dataset handle of its own (so
    each has its own decoded-chunk cache, as in a process of its own), keeping each mode's
    best. One child per mode (sessions up to 22) let the spread between processes (up to
    20% for identical code) land on one mode alone."""
    import vh5

    spec = json.load(open(spec_path))
    out = {m: {} for m in MODES}
    for i, s in enumerate(spec):
        t = np.load(s["tables"])
        args = (t["src"], t["dstart"], t["count"], t["sstep"], t["dstep"])
        files = {m: vh5.File(s["path"]) for m in MODES}
        for _ in range(rounds):
            for m in MODES:
                d = files[m].dataset(s["dset"])
                dst = np.zeros(tuple(s["dst_shape"]), s["dtype"])
                vh5.set_planner(m)
                old = out[m].get(i)
                try:
                    tm = timed(lambda: vh5.read_many_slices(d, dst, *args), repeat, budget)
                    ok = digest(dst) == s["digest"]
                    if old is not None:
                        ok = ok and old["ok"]
                        tm = tm if old["t"] is None else min(tm, old["t"])
                    out[m][i] = {"t": tm, "ok": ok}
                except Exception as e:  # reported in the table, never hidden
                    out[m][i] = {"t": None, "ok": False, "err": str(e)[:200]}
        vh5.set_planner(None)
        for f in files.values():
            f.close()
    print(json.dumps(out))


def vh5_modes(tmp, cs, digests, repeat, budget, rounds):
    spec = []
    for i, c in enumerate(cs):
        tp = os.path.join(tmp, f"tables_{i}.npz")
        np.savez(tp, src=c.src, dstart=c.dstart, count=c.count, sstep=c.sstep, dstep=c.dstep)
        spec.append(
            {
                "path": c.path,
                "dset": c.dset,
                "tables": tp,
                "dst_shape": c.dst_shape,
                "dtype": c.dtype,
                "digest": digests[i],
            }
        )
    sp = os.path.join(tmp, "spec.json")
    json.dump(spec, open(sp, "w"))
    cmd = [sys.executable, __file__, "--child", sp, "--repeat", str(repeat), "--budget", str(budget)]
    p = subprocess.run(cmd + ["--rounds", str(rounds)], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"vh5 child failed:\n{p.stderr}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    return {m: {int(k): v for k, v in res[m].items()} for m in MODES}


# ---------------------------------------------------------------- report


def fmt(t):
    if t is None:
        return ""
    if t < 1e-3:
        return f"{t * 1e6:.0f} µs"
    return f"{t * 1e3:.1f} ms" if t < 10 else f"{t:.2f} s"


PEER_COLS = (
    "h5py d[sel]",
    "h5py whole+gather",
    "h5py tuned d[sel]",
    "h5py tuned whole+gather",
    "hidefix",
    "versioned-hdf5",
)


def report(cs, pres, vres):
    lines = [
        "| case | "
        + " | ".join(PEER_COLS)
        + " | vh5 auto | vh5 chunks | vh5 rows | best peer : auto | h5py d[...] : auto | versioned-hdf5 : auto | auto : best mode | auto µs/chunk |",
        "|---" * (len(PEER_COLS) + 10) + "|",
    ]
    for i, c in enumerate(cs):
        p = pres[i]
        v = {m: vres[m][i] for m in MODES}
        bad = [m for m in MODES if not v[m]["ok"]]
        tv = {m: v[m]["t"] for m in MODES}
        auto = tv["auto"]
        best_peer = min(p.values())
        best_mode = min(t for t in tv.values() if t is not None)
        h5 = p.get("h5py d[sel]", p["h5py whole+gather"])
        cells = [fmt(p.get(k)) for k in PEER_COLS] + [fmt(tv[m]) for m in MODES]
        r = lambda a, b: "" if a is None or b is None else f"{a / b:.2f}x"  # noqa: E731
        per = "" if auto is None or not c.nchunks else f"{auto / c.nchunks * 1e6:.2f}"
        cells += [r(best_peer, auto), r(h5, auto), r(p.get("versioned-hdf5"), auto), r(auto, best_mode), per]
        note = f" **WRONG RESULT: {', '.join(bad)}** {[v[m].get('err', '') for m in bad]}" if bad else ""
        lines.append(f"| {c.name}{note} | " + " | ".join(cells) + " |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sizes 1k, 16k, 256k; at most 5 timed calls per case")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of the planner modes in turn, in one vh5 process; best per case and mode",
    )
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per case and reader before repeats stop")
    ap.add_argument("--sizes", default=None, help="comma-separated chunk counts in k (default 1,4,16,64,256)")
    ap.add_argument("--only", default=None, help="run only the cases whose name contains this")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-cases", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.repeat, a.budget, a.rounds)
    if a.quick:
        a.repeat = min(a.repeat, 5)
        a.budget = min(a.budget, 1.0)
    sizes = [int(s) * 1024 for s in (a.sizes or ("1,16,256" if a.quick else "1,4,16,64,256")).split(",")]
    try:
        import hidefix  # noqa: F401

        have_hidefix = True
    except ImportError:
        have_hidefix = False
        print("# hidefix not installed (pip install hidefix==0.12.0): its column stays empty", file=sys.stderr)
    import h5py
    import vh5

    rng = np.random.default_rng(7)
    t_start = time.time()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        cs = ([] if a.no_scaling else scaling_cases(tmp, sizes, rng)) + (
            [] if a.no_cases else issue_cases(tmp, rng, a.quick)
        )
        if a.only:
            cs = [c for c in cs if a.only in c.name]
        pres, digests = [], []
        for c in cs:
            r, d = peers(c, a.repeat, a.budget, have_hidefix)
            pres.append(r)
            digests.append(d)
            print(f"# peers done: {c.name}", file=sys.stderr, flush=True)
        vres = vh5_modes(tmp, cs, digests, a.repeat, a.budget, a.rounds)
    load1 = os.getloadavg()[0]
    head = [
        f"vh5 {vh5.library_path()} (threads {vh5.get_num_threads()}), h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}); best of up to {a.repeat} "
        f"(sub-5 ms cases: {20 * a.repeat}) after one warm-up call, {a.budget:g} s budget per case and reader; load average {load0:.2f} before, {load1:.2f} after; "
        f"{time.time() - t_start:.0f} s wall",
        "",
    ]
    text = "\n".join(head + report(cs, pres, vres))
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text + "\n")
    wrong = any(not vres[m][i]["ok"] for m in MODES for i in range(len(cs)))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
