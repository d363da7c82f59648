""":func:`vh5.dask.gather`: many equal-shape hyperslabs as one Dask array (needs Dask).

Plan (all on the client, vectorised): rows are sorted (stably) by the chunk their first
element lies in; the sorted rows are cut into read tasks of about ``rows_per_task`` rows at
chunk boundaries, so no chunk is decoded by two tasks unless more than ``rows_per_task`` rows
start in it; each read task is one :func:`vh5.read_many_slices` call. When the rows were
already in chunk order the read tasks are the blocks of the result; otherwise a second layer
of small tasks puts the rows back in the caller's order (each output block takes its rows
from the read tasks that hold them).
"""

from __future__ import annotations

import math

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
import dask.array as da

from . import _pickle
from ._errors import make_error
from .hdf5 import read_many_slices

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
            raise make_error(6, "VH5_ERR_OUT_OF_BOUNDS", f"{what} row {r} axis {ax} is {v}, past any extent")
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
        raise make_error(
            6,
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


def _read_rows(dset, starts, cnt, steps, dtype):
    """One read task: rows ``starts`` (k, nd) uint64 into a new (k, *cnt) array."""
    k, nd = starts.shape
    out = np.empty((k,) + tuple(cnt), dtype=dtype)
    if out.size == 0:
        return out
    dst = out.reshape((k * cnt[0],) + tuple(cnt[1:]))
    dst_start = np.zeros((k, nd), dtype=np.uint64)
    dst_start[:, 0] = np.arange(k, dtype=np.uint64) * np.uint64(cnt[0])
    counts = np.empty((k, nd), dtype=np.uint64)
    counts[:] = cnt
    read_many_slices(_pickle.resolve(dset), dst, starts, dst_start, counts, steps)
    return out


def _assemble(parts, src_rows, dst_rows, nrows, cnt, dtype):
    """An output block: ``out[dst_rows[i]] = parts[i][src_rows[i]]``."""
    out = np.empty((nrows,) + tuple(cnt), dtype=dtype)
    for part, s, d in zip(parts, src_rows, dst_rows):
        out[d] = part[s]
    return out


def _graph(name, dset, starts, cnt, steps, dtype, order, cuts, rpt):
    """The task dict and the row-axis block sizes of the result."""
    nrows, nd = starts.shape
    rname = name + "-read"
    tail = (0,) * nd
    identity = bool((order == np.arange(nrows)).all())
    dsk = {}
    for t in range(len(cuts) - 1):
        rows = order[cuts[t] : cuts[t + 1]]
        s = np.ascontiguousarray(starts[rows], dtype=np.uint64)
        st = None if steps is None else np.ascontiguousarray(steps[rows], dtype=np.uint64)
        key = (name, t) + tail if identity else (rname, t)
        dsk[key] = (_read_rows, dset, s, cnt, st, dtype)
    if identity:
        return dsk, tuple(int(v) for v in np.diff(cuts))
    pos = np.empty(nrows, dtype=np.int64)
    pos[order] = np.arange(nrows)  # sorted position of each row
    task = np.searchsorted(cuts, pos, side="right") - 1
    local = pos - cuts[task]
    blocks = []
    for j, a in enumerate(range(0, nrows, rpt)):
        b = min(a + rpt, nrows)
        t = task[a:b]
        by = np.argsort(t, kind="stable")
        ts, first = np.unique(t[by], return_index=True)
        groups = np.split(by, first[1:])
        dsk[(name, j) + tail] = (
            _assemble,
            [(rname, int(x)) for x in ts],
            [local[a:b][g] for g in groups],
            groups,
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
    from .dask import _source_dataset, _token_parts

    d = _source_dataset(dset)
    nd = len(d.shape)
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
        import operator

        rpt = operator.index(rows_per_task)
        if rpt < 1:
            raise ValueError(f"rows_per_task must be >= 1, not {rpt}")
    if name is None:
        name = "vh5-gather-" + tokenize(_token_parts(d), starts, cnt, steps, rpt)
    meta = np.empty((0,) * (nd + 1), dtype=dtype)
    if nrows == 0:
        dsk = {(name, 0) + (0,) * nd: np.empty((0,) + cnt, dtype=dtype)}
        blocks = (0,)
    else:
        order, cuts = _plan(starts, d.chunks, rpt)
        dsk, blocks = _graph(name, d, starts, cnt, steps, dtype, order, cuts, rpt)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, (blocks,) + tuple((c,) for c in cnt), meta=meta)
