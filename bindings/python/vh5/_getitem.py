"""The common ``Dataset.__getitem__`` in one step: a selection of plain slices (no step) and
integers, one per axis, read with one ``vh5_read_many_slices`` row from per-thread coordinate
tables (no numpy table array, no parsing into a :class:`vh5._select.Hyperslab`). Its cost is
what a loop of small reads pays per call (docs/BENCHMARKS.md, "single-row call"). Anything
else (steps, ``...``, fewer indices than axes, an empty or out-of-range selection, records)
returns None and takes the general path, which raises the errors users see.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from . import _dtypes, _marshal
from ._errors import check
from ._lib import lib

__all__ = ["read_basic", "read_one_row"]

#: Most axes a dataset has (libhdf5's H5S_MAX_RANK).
_MAX_RANK = 32
_TLS = threading.local()
_READ_FN = None
_slice = slice
_int = int
_ZEROS = (0,) * _MAX_RANK
_U64_MAX = 2**64 - 1
#: numpy's integer scalar types (indices from np.arange, np.random...); not np.bool_.
_NP_INTS = frozenset(np.dtype(c).type for c in "bhilqpBHILQP")


def _tables():
    """This thread's (start, dst_start, count) tables as one ctypes buffer, and their
    addresses; each call writes the rows it passes."""
    t = getattr(_TLS, "tables", None)
    if t is None:
        buf = (ctypes.c_uint64 * (3 * _MAX_RANK))()
        base = ctypes.addressof(buf)
        t = _TLS.tables = (buf, base, base + 8 * _MAX_RANK, base + 16 * _MAX_RANK)
    return t


def _call(dset, dst, fl: int) -> None:
    """``vh5_read_many_slices`` of one row from this thread's tables into ``dst``."""
    global _READ_FN
    _, a_start, a_dst, a_count = _tables()
    arr = _marshal.cached_struct(dst) or _marshal.array_struct(dst, "dst")
    if not dset._finalizer.alive:
        dset.id  # noqa: B018 - raises InvalidHandleError
    fn = _READ_FN
    if fn is None:
        fn = _READ_FN = lib().vh5_read_many_slices
    status = fn(dset._id, arr, 1, a_start, a_dst, a_count, None, None, fl)
    if status:
        check(status, dset._ids())


def _ints(v, nd: int) -> bool:
    """Whether ``v`` is a list or tuple of ``nd`` Python ints in uint64's range (bools are
    not: the general path refuses them by name)."""
    tv = type(v)
    if (tv is not list and tv is not tuple) or len(v) != nd:
        return False
    for x in v:
        if type(x) is not _int or x < 0 or x > _U64_MAX:  # ctypes would wrap 2**64 to 0
            return False
    return True


def read_one_row(dset, dst, start, dst_start, count, fl: int) -> bool:
    """``vh5.read_many_slices(dset, dst, start, dst_start, count)`` for three lists (or
    tuples) of ``ndim`` non-negative Python ints (one row, no steps) into a writable ndarray
    of a plain dtype: True when done, False (nothing read) for anything else. Bounds are the
    library's to check (its errors name the row and axis)."""
    nd = dset._rank()
    if nd == 0 or not (_ints(start, nd) and _ints(dst_start, nd) and _ints(count, nd)):
        return False
    if not dst.flags.writeable or _dtypes.layout_checked(dst.dtype):
        return False
    buf = _tables()[0]
    buf[0:nd] = start
    buf[_MAX_RANK : _MAX_RANK + nd] = dst_start
    buf[2 * _MAX_RANK : 2 * _MAX_RANK + nd] = count
    _call(dset, dst, fl)
    return True


def read_basic(dset, sel, dt: np.dtype):
    """``dset[sel]`` for ``sel`` an integer (Python's or numpy's), a slice without step, or a tuple of exactly one
    such index per axis, selecting at least one element inside the extent: a new array of
    ``dt`` (integer axes dropped; a numpy scalar when every axis is an integer), or None
    (nothing read) for any other selection. ``dt`` is the dataset's readable dtype."""
    global _READ_FN
    if type(sel) is not tuple:
        sel = (sel,)
    shape = dset._extent()
    nd = len(shape)
    if len(sel) != nd or nd == 0 or _dtypes.layout_checked(dt):
        return None
    starts = []
    counts = []
    dropped = False
    for k, n in zip(sel, shape):
        tk = type(k)
        if tk is _slice:
            if k.step is not None and k.step != 1:
                return None
            start, stop, _ = k.indices(n)
            if stop <= start:
                return None
            starts.append(start)
            counts.append(stop - start)
        elif tk is _int or tk in _NP_INTS:
            k = _int(k)
            if k < 0:
                k += n
            if not 0 <= k < n:
                return None
            starts.append(k)
            counts.append(1)
            dropped = True
        else:
            return None
    buf = _tables()[0]
    buf[0:nd] = starts
    buf[_MAX_RANK : _MAX_RANK + nd] = _ZEROS[:nd]
    buf[2 * _MAX_RANK : 2 * _MAX_RANK + nd] = counts
    out = np.empty(counts, dtype=dt)
    _call(dset, out, _marshal.flags(False, False, _dtypes.swapped(dt)))
    if dropped:
        out = out.reshape([c for k, c in zip(sel, counts) if type(k) is _slice])
        if out.ndim == 0:
            return out[()]
    return out
