""":func:`vh5.dask.gather`: many equal-shape hyperslabs as one Dask array (needs Dask).

Plan (all on the client, vectorised): rows are sorted (stably) by the chunk their first
element lies in; the sorted rows are cut into read tasks of about ``rows_per_task`` rows at
chunk boundaries, preferably at the start of a band of chunks (first-axis chunk index); each
read task is one :func:`vh5.read_many_slices` call. When every cut is at a band start, a row
that reaches into the next task's band is split along axis 0: each task reads the part in
its own bands, so no chunk is decoded by two tasks. Otherwise (bands larger than
``rows_per_task``) a chunk can be decoded by two tasks: the one whose rows start in it and
the one whose rows reach into it. When the rows were
already in chunk order the read tasks are the blocks of the result; otherwise a second layer
of small tasks puts the rows back in the caller's order (each output block takes its rows
from the read tasks that hold them).
"""

from __future__ import annotations

import math
import operator

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from . import _pickle
from ._dask_source import source_dataset, token_parts
from ._errors import error
from ._slices import read_many_slices

__all__ = ["gather"]

_I64_MAX = 2**63 - 1
#: default cap of one task's output (bytes)
TASK_BYTES = 64 << 20


def _table(what: str, a, nd: int, nrows):
    """``a`` as an int64 array of shape (nrows, nd) (a (nd,) array is broadcast when nrows
    is known). Raises TypeError / ValueError / vh5.OutOfBoundsError naming row and axis."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        if arr.size == 0:
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{what} must hold integers, not {arr.dtype}")
    if arr.ndim == 1 and nrows is not None:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != nd:
        want = "(nrows, ndim)" if nrows is None else "(ndim,) or (nrows, ndim)"
        raise ValueError(f"{what} must have shape {want} with ndim = {nd}, not {arr.shape}")
    if nrows is not None and arr.shape[0] not in (1, nrows):
        raise ValueError(f"{what} has {arr.shape[0]} rows, src_start has {nrows}")
    if arr.size:
        bad = arr < 0 if arr.dtype.kind == "i" else arr > _I64_MAX
        if bad.any():
            r, ax = np.argwhere(bad)[0]
            v = arr[r, ax]
            if arr.dtype.kind == "i":
                raise ValueError(f"{what} row {r} axis {ax} is negative ({v})")
            raise error("VH5_ERR_OUT_OF_BOUNDS", f"{what} row {r} axis {ax} is {v}, past any extent")
    arr = arr.astype(np.int64, copy=False)
    if nrows is not None and arr.shape[0] == 1 and nrows != 1:
        arr = np.broadcast_to(arr, (nrows, nd))
    return arr


def _count(count, nd: int, nrows: int):
    c = _table("count", count, nd, nrows)
    if c.shape[0] and not (c == c[0]).all():
        r = int(np.flatnonzero((c != c[0]).any(axis=1))[0])
        raise ValueError(
            f"gather needs one count for all rows (the result is (nrows, *count)): row {r} has "
            f"{tuple(int(v) for v in c[r])}, row 0 {tuple(int(v) for v in c[0])}"
        )
    return tuple(int(v) for v in c[0]) if c.shape[0] else tuple(int(v) for v in np.asarray(count).reshape(-1, nd)[0])


def _check_bounds(starts, cnt, steps, shape, name):
    """Every row's last element inside the extent (rows of an empty count read nothing)."""
    if not starts.size or 0 in cnt:
        return
    ext = np.array(shape, dtype=np.int64)
    c1 = np.array(cnt, dtype=np.int64) - 1
    over = starts >= ext
    if steps is None:
        over |= c1 > (ext - 1 - np.minimum(starts, ext - 1))
    else:
        over |= c1 > (ext - 1 - np.minimum(starts, ext - 1)) // steps
    if over.any():
        r, ax = (int(v) for v in np.argwhere(over)[0])
        t = 1 if steps is None else int(steps[r, ax])
        raise error(
            "VH5_ERR_OUT_OF_BOUNDS",
            f"row {r} axis {ax}: start {int(starts[r, ax])} + (count {cnt[ax]} - 1) * step {t} "
            f"is past the extent {shape[ax]} of dataset {name!r}",
        )


def _default_rows_per_task(nrows: int, row_bytes: int) -> int:
    """About 32 tasks, at least 1024 rows each, at most TASK_BYTES of output each."""
    cap = max(1, TASK_BYTES // max(1, row_bytes))
    return max(1, min(max(math.ceil(nrows / 32), 1024), cap))


def _plan(starts, chunks, rpt: int):
    """(order, cuts): ``order`` sorts rows stably by the chunk of their first element (by
    start for a contiguous dataset); read task t takes sorted rows ``cuts[t]:cuts[t+1]``.

    Cuts fall near multiples of ``rpt`` but on group boundaries: at the start of the group
    of rows sharing the chunk coordinates of the first k axes, for the smallest k whose group
    there holds at most ``rpt`` rows (k = 1 first: whole bands of chunks stay together, so
    the rows that cross into the next chunk along a later axis usually find it decoded in
    the same task); inside a single chunk's group only when it alone has more than ``rpt``."""
    nrows, nd = starts.shape
    cidx = starts // np.array(chunks, dtype=np.int64) if chunks else starts
    order = np.lexsort(cidx.T[::-1]) if nd > 1 else np.argsort(cidx[:, 0], kind="stable")
    cs = cidx[order]
    p = np.arange(rpt, nrows, rpt)
    cut = p.copy()
    todo = np.ones(len(p), dtype=bool)
    differs = np.zeros(max(nrows - 1, 0), dtype=bool)
    for k in range(nd):
        differs |= cs[1:, k] != cs[:-1, k]
        gstart = np.r_[0, np.flatnonzero(differs) + 1]
        gsize = np.diff(np.r_[gstart, nrows])
        gi = np.searchsorted(gstart, p, side="right") - 1
        ok = todo & (gsize[gi] <= rpt)
        cut[ok] = gstart[gi[ok]]
        todo &= ~ok
    return order, np.unique(np.r_[0, cut, nrows])


def _split_plan(starts, cnt, steps, order, cuts, chunks):
    """Rows crossing a read-task boundary along axis 0, split into one piece per task.

    Applies when every cut is at the start of a band of chunks (first-axis chunk index):
    task t then owns the dataset rows ``[bound[t-1], bound[t])`` of axis 0 and no chunk
    belongs to two tasks. Returns ``(k1, extras)``: ``k1[p]`` = how many of sorted row p's
    elements along axis 0 its own task reads (``count[0]`` when it does not cross), and
    ``extras[t]`` = list of ``(p, ka, kb)``: task t also reads elements ``ka:kb`` of row p.
    None when not applicable (no straddling rows, cuts inside bands, or so many straddling
    rows that the bookkeeping would cost more than decoding twice)."""
    nrows = starts.shape[0]
    n0 = cnt[0]
    if not chunks or len(cuts) <= 2 or n0 <= 1:
        return None
    s0 = starts[order, 0]
    band = s0 // chunks[0]
    inner = cuts[1:-1]
    if (band[inner] == band[inner - 1]).any():
        return None
    bound = np.r_[band[inner] * chunks[0], np.iinfo(np.int64).max]
    t0 = np.ones(nrows, dtype=np.int64) if steps is None else steps[order, 0]
    task_of = np.repeat(np.arange(len(cuts) - 1), np.diff(cuts))
    k1 = np.minimum(n0, -((s0 - bound[task_of]) // t0))  # ceil((bound - s0) / t0)
    split = np.flatnonzero(k1 < n0)
    if len(split) == 0 or len(split) > max(1000, nrows // 5):
        return None
    extras = [[] for _ in range(len(cuts) - 1)]
    for p in split.tolist():
        t, ka = int(task_of[p]), int(k1[p])
        while ka < n0:  # the last task's bound is "infinite": the loop ends there at the latest
            t += 1
            kb = min(n0, -((int(s0[p]) - int(bound[t])) // int(t0[p])))
            if kb > ka:
                extras[t].append((p, ka, kb))
                ka = kb
    return k1, extras


def _read_pieces(dset, src, dst, counts, steps, m, cnt, dtype):
    """One read task: ``m`` row entries of shape ``cnt`` (the parts of split rows that other
    tasks read are left unset), with one :func:`read_many_slices` call of prepared tables."""
    out = np.empty((m,) + tuple(cnt), dtype=dtype)
    if out.size == 0:
        return out
    flat = out.reshape((m * cnt[0],) + tuple(cnt[1:]))
    read_many_slices(_pickle.resolve(dset), flat, src, dst, counts, steps)
    return out


def _assemble(parts, src_rows, dst_rows, patches, nrows, cnt, dtype):
    """An output block: ``out[dst_rows[i]] = parts[i][src_rows[i]]``, then every patch
    row ``(i, e, r, ka, kb)`` of the int64 array ``patches``: ``out[r, ka:kb] =
    parts[i][e, ka:kb]`` (the pieces of rows split between read tasks)."""
    out = np.empty((nrows,) + tuple(cnt), dtype=dtype)
    for part, s, d in zip(parts, src_rows, dst_rows):
        if len(s):
            out[d] = part[s]
    for i, e, r, ka, kb in patches.tolist():
        out[r, ka:kb] = parts[i][e, ka:kb]
    return out


def _task_tables(starts, cnt, steps, order, lo, hi, k1, extra):
    """(src, dst, counts, steps, m) of one read task: its own sorted rows lo:hi (axis-0
    count cut to k1 where split) then its extra pieces of other tasks' rows."""
    nd = starts.shape[1]
    n0 = cnt[0]
    pos = np.arange(lo, hi)
    ep = np.array([e[0] for e in extra], dtype=np.int64)
    ka = np.array([e[1] for e in extra], dtype=np.int64)
    kb = np.array([e[2] for e in extra], dtype=np.int64)
    rows = order[np.r_[pos, ep]]
    m = len(rows)
    src = starts[rows].copy()
    counts = np.tile(np.array(cnt, dtype=np.int64), (m, 1))
    dst = np.zeros((m, nd), dtype=np.int64)
    dst[:, 0] = np.arange(m) * n0
    st = None if steps is None else np.ascontiguousarray(steps[rows])
    if k1 is not None:
        counts[: len(pos), 0] = k1[pos]
    if len(ep):
        own = len(pos)
        src[own:, 0] += ka * (1 if st is None else st[own:, 0])
        dst[own:, 0] += ka
        counts[own:, 0] = kb - ka
    u = np.uint64
    return (
        np.ascontiguousarray(src, dtype=u),
        np.ascontiguousarray(dst, dtype=u),
        np.ascontiguousarray(counts, dtype=u),
        None if st is None else np.ascontiguousarray(st, dtype=u),
        m,
    )


def _graph(name, dset, starts, cnt, steps, dtype, order, cuts, rpt, chunks):
    """The task dict and the row-axis block sizes of the result."""
    nrows, nd = starts.shape
    rname = name + "-read"
    tail = (0,) * nd
    ntasks = len(cuts) - 1
    sp = _split_plan(starts, cnt, steps, order, cuts, chunks)
    k1, extras = sp if sp is not None else (None, [[] for _ in range(ntasks)])
    identity = sp is None and bool((order == np.arange(nrows)).all())
    dsk = {}
    for t in range(ntasks):
        src, dst, counts, st, m = _task_tables(starts, cnt, steps, order, cuts[t], cuts[t + 1], k1, extras[t])
        key = (name, t) + tail if identity else (rname, t)
        dsk[key] = (_read_pieces, dset, src, dst, counts, st, m, cnt, dtype)
    if identity:
        return dsk, tuple(int(v) for v in np.diff(cuts))
    pos = np.empty(nrows, dtype=np.int64)
    pos[order] = np.arange(nrows)  # sorted position of each row
    task = np.searchsorted(cuts, pos, side="right") - 1
    local = pos - cuts[task]
    # extra pieces: (output row, task, entry index in that task, ka, kb)
    xs = [
        (int(order[p]), t, cuts[t + 1] - cuts[t] + e, ka, kb)
        for t in range(ntasks)
        for e, (p, ka, kb) in enumerate(extras[t])
    ]
    xs = np.array(xs, dtype=np.int64).reshape(-1, 5)
    blocks = []
    for j, a in enumerate(range(0, nrows, rpt)):
        b = min(a + rpt, nrows)
        t = task[a:b]
        xb = xs[(xs[:, 0] >= a) & (xs[:, 0] < b)]
        ts = np.unique(np.r_[t, xb[:, 1]])
        index = {int(x): i for i, x in enumerate(ts)}
        src_rows, dst_rows = [], []
        for x in ts:
            g = np.flatnonzero(t == x)
            src_rows.append(local[a:b][g])
            dst_rows.append(g)
        patches = np.array([(index[int(x[1])], x[2], x[0] - a, x[3], x[4]) for x in xb], dtype=np.int64).reshape(-1, 5)
        dsk[(name, j) + tail] = (
            _assemble,
            [(rname, int(x)) for x in ts],
            src_rows,
            dst_rows,
            patches,
            b - a,
            cnt,
            dtype,
        )
        blocks.append(b - a)
    return dsk, tuple(blocks)


def gather(dset, src_start, count, src_step=None, rows_per_task=None, *, name=None):
    """Rows of equal shape from an HDF5 dataset as one Dask array, read by vh5 in the workers.

    Row i is ``dset[s[i,0] : s[i,0] + (c[0]-1)*t[i,0] + 1 : t[i,0], ...]`` (``s`` =
    ``src_start``, ``c`` = ``count``, ``t`` = ``src_step``), and the result is
    ``stack([row 0, row 1, ...])``, in the order given.

    Args:
        dset: a :class:`vh5.Dataset` or an ``h5py.Dataset`` (see :func:`from_dataset`).
        src_start: integer array (nrows, ndim), in elements.
        count: integer array (ndim,): the shape of every row (a (nrows, ndim) table whose
            rows are all equal is accepted).
        src_step: None (1 on every axis), or integer array (ndim,) or (nrows, ndim), >= 1.
        rows_per_task: rows per read task (about: tasks end at chunk boundaries); default
            about nrows / 32, at least 1024, at most 64 MiB of output per task. Also the
            block size of the result along its first axis when rows need reordering.
        name: Dask key prefix (default: a token of the dataset and the tables).

    Returns:
        dask.array.Array of shape ``(nrows, *count)``, the dataset's dtype in native order.

    Raises (on the client, before any task runs):
        TypeError: non-integer tables, another kind of ``dset``. ValueError: wrong table
        shapes, negative values, a step of 0, rows of different counts, a 0-d dataset.
        vh5.OutOfBoundsError: a row reaching past the extent (naming row and axis).
    """
    d = source_dataset(dset)
    nd = len(d._extent())
    if nd == 0:
        raise ValueError(f"dataset {d.name!r} is a scalar (0-d): there are no rows to gather")
    starts = np.ascontiguousarray(_table("src_start", src_start, nd, None))
    nrows = starts.shape[0]
    cnt = _count(count, nd, nrows)
    steps = None
    if src_step is not None:
        steps = _table("src_step", src_step, nd, nrows)
        if steps.size and (steps == 0).any():
            r, ax = np.argwhere(steps == 0)[0]
            raise ValueError(f"src_step row {r} axis {ax} is 0 (steps must be >= 1)")
        if steps.size and (steps == 1).all():
            steps = None
    _check_bounds(starts, cnt, steps, d.shape, d.name)
    dtype = d.dtype.newbyteorder("=") if d.dtype.itemsize > 1 else d.dtype
    if rows_per_task is None:
        rpt = _default_rows_per_task(nrows, math.prod(cnt) * dtype.itemsize)
    else:
        rpt = operator.index(rows_per_task)
        if rpt < 1:
            raise ValueError(f"rows_per_task must be >= 1, not {rpt}")
    if name is None:
        name = "vh5-gather-" + tokenize(token_parts(d), starts, cnt, steps, rpt)
    meta = np.empty((0,) * (nd + 1), dtype=dtype)
    if nrows == 0:
        dsk = {(name, 0) + (0,) * nd: np.empty((0,) + cnt, dtype=dtype)}
        blocks = (0,)
    else:
        order, cuts = _plan(starts, d.chunks, rpt)
        dsk, blocks = _graph(name, d, starts, cnt, steps, dtype, order, cuts, rpt, d.chunks)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, (blocks,) + tuple((c,) for c in cnt), meta=meta)
