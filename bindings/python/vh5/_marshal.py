"""numpy -> C structures: the one place the package builds ``vh5_array`` descriptions, the
``(nslices, ndim)`` uint64 slice tables and the transfer flags, and makes the three
many-slice calls (read, write, memory copy).

Everything here is about memory layout; what a dataset or file *is* lives in
:mod:`vh5._files` / :mod:`vh5._datasets`, the public functions in :mod:`vh5._slices`.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from . import _dtypes
from ._errors import check, error
from ._lib import VH5_SLICES_CLIP, VH5_SLICES_CONVERT, VH5_SLICES_SWAPPED, Array, lib

__all__ = ["flags", "address", "array_struct", "tables", "fast_tables", "read", "write", "copy", "COORD_NAMES"]

COORD_NAMES = ("src_start", "dst_start", "count", "src_step", "dst_step")
U64 = np.dtype(np.uint64)
I64 = np.dtype(np.int64)

_c_char = ctypes.c_char
_addressof = ctypes.addressof
_from_buffer = ctypes.c_char.from_buffer


def flags(clip: bool, convert: bool = False, swapped: bool = False) -> int:
    """The ``VH5_SLICES_*`` bits for the ``clip`` / ``convert`` keywords and a destination in
    non-native byte order (``swapped``, reads only: ``not dst.dtype.isnative``)."""
    return (
        (VH5_SLICES_CLIP if clip else 0)
        | (VH5_SLICES_CONVERT if convert else 0)
        | (VH5_SLICES_SWAPPED if swapped else 0)
    )


def address(a: np.ndarray) -> int:
    """Address of element [0, ..., 0] of ``a`` (the cheap ctypes route for writable contiguous
    arrays, the array interface otherwise)."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]


# ----------------------------------------------------------------------------------------
# arrays

#: per-(dtype, shape, strides) constants of an array description, bounded.
_TEMPLATES: dict = {}
_CACHE_MAX = 256
_TLS = threading.local()


def _template(a: np.ndarray, what: str, any_order: bool):
    """(code, itemsize, lo, span, ndim, shape ptr, strides ptr, shape, strides) of ``a``'s
    layout: ``lo`` is the (non-positive) byte offset of the lowest element from element 0,
    ``span`` the bytes from the lowest to past the highest element."""
    key = (a.dtype, a.shape, a.strides, any_order)
    ent = _TEMPLATES.get(key)
    if ent is not None:
        return ent
    code, itemsize, order = _dtypes.from_numpy(a.dtype)
    if not any_order and order not in (_dtypes.ORDER_NONE, _dtypes.NATIVE_ORDER):
        raise error(
            "VH5_ERR_DTYPE",
            f"{what} has non-native byte order {a.dtype.str}; use a native-order array "
            f"(e.g. {what}.astype({a.dtype.newbyteorder('=').str!r}))",
        )
    nd = a.ndim
    lo = hi = 0
    if a.size != 0:
        hi = itemsize
        for n, st in zip(a.shape, a.strides):
            reach = (n - 1) * st
            if reach < 0:
                lo += reach
            else:
                hi += reach
    shape = (ctypes.c_uint64 * max(nd, 1))(*a.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*a.strides)
    ent = (
        code,
        itemsize,
        lo,
        hi - lo,
        nd,
        ctypes.cast(shape, ctypes.POINTER(ctypes.c_uint64)),
        ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)),
        shape,
        strides,
    )
    if len(_TEMPLATES) >= _CACHE_MAX:
        _TEMPLATES.clear()
    _TEMPLATES[key] = ent
    return ent


def array_struct(a: np.ndarray, what: str = "dst", slot: int = 0) -> Array:
    """The ``vh5_array`` describing numpy array ``a`` (any layout), from a per-thread cache
    keyed by (slot, byte-order permission, dtype, shape, strides): only its ``base`` is set per call. The struct
    keeps its shape/strides tables alive and is valid until the next call on this thread with
    the same ``slot`` (use slots 0 and 1 for the two arrays of one copy). ``what`` names the
    array in errors; a read destination (``"dst"`` in slot 0) may be in either byte order
    (the caller passes ``VH5_SLICES_SWAPPED``), any other array must be native."""
    try:
        cache = _TLS.arrays
    except AttributeError:
        cache = _TLS.arrays = {}
    # The byte-order permission is part of the key: a struct cached for a big-endian read
    # destination must not let a big-endian write source past the native-order check.
    any_order = slot == 0 and what == "dst"
    key = (slot, any_order, a.dtype, a.shape, a.strides)
    ent = cache.get(key)
    if ent is None:
        code, itemsize, lo, span, nd, shape_p, strides_p, shape, strides = _template(a, what, any_order)
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        ent = cache[key] = (Array(0, span, -lo, code, itemsize, nd, shape_p, strides_p), lo, shape, strides)
    arr = ent[0]
    arr.base = address(a) + ent[1]
    return arr


def cached_struct(a: np.ndarray):
    """The per-thread slot-0 struct for ``a``'s layout with its base set, or None when the
    layout was not described yet (the hot path of reads; :func:`array_struct` otherwise).
    The struct depends on the layout alone (dtype, shape, strides; the base is set here), so
    the layout of the last call on this thread is compared first: hashing a dtype for the
    dict lookup took ~1 us of a ~10 us single-row call."""
    tls = _TLS
    last = getattr(tls, "last", None)
    if last is not None and last[0] is a.dtype and last[1] == a.shape and last[2] == a.strides:
        ent = last[3]  # the whole entry: it keeps the shape / strides tables the struct points to
        arr = ent[0]
        arr.base = address(a) + ent[1]
        return arr
    try:
        ent = tls.arrays.get((0, True, a.dtype, a.shape, a.strides))
    except AttributeError:
        return None
    if ent is None:
        return None
    tls.last = (a.dtype, a.shape, a.strides, ent)
    arr = ent[0]
    arr.base = address(a) + ent[1]
    return arr


# ----------------------------------------------------------------------------------------
# tables


def fast_tables(ndim: int, given):
    """The common case of :func:`tables` without broadcasting: every given table a
    C-contiguous 2-D uint64 (or non-negative int64) ndarray of shape (nslices, ndim), same
    nslices. Returns None when the general path is needed (it also produces the errors)."""
    nslices = None
    for a in given:
        if a is None:
            continue
        if type(a) is not np.ndarray or a.ndim != 2 or not a.flags.c_contiguous:
            return None
        dt = a.dtype
        if dt is not U64 and dt != U64:
            if dt != I64 or (a.size and a.min() < 0):
                return None
        r, c = a.shape
        if c != ndim or (nslices is not None and r != nslices):
            return None
        nslices = r
    if nslices is None:
        return None
    return [None if a is None else (a if a.dtype == U64 else a.view(U64)) for a in given], nslices


def one_row_tables(ndim: int, given):
    """The common interactive call of :func:`tables`: one row, every given table a list or
    tuple of ``ndim`` non-negative Python ints (``[5, 0]``), steps None or the same. One
    (k, ndim) uint64 array holds them all (a third of the general path's cost). Returns None
    when the general path is needed (it also produces the errors)."""
    rows = []
    for a in given:
        if a is None:
            continue
        if type(a) not in (list, tuple) or len(a) != ndim:
            return None
        for v in a:
            if type(v) is not int or v < 0 or v > 0xFFFFFFFFFFFFFFFF:
                return None
        rows.append(a)
    if len(rows) < 3 or given[0] is None or given[1] is None or given[2] is None:
        return None
    block = np.array(rows, dtype=U64).reshape(len(rows), 1, ndim)
    it = iter(block)
    return [None if a is None else next(it) for a in given], 1


def _refuse_bools(name: str, a, ndim: int) -> None:
    """TypeError naming the row and axis of a bool (``True``, ``np.True_``) among the integers
    of a coordinate list: numpy would read it as 1 (a list of bools alone is refused as a
    bool array)."""
    rows = a if a and isinstance(a[0], (list, tuple, np.ndarray)) else [a]
    for r, row in enumerate(rows):
        for j, v in enumerate(row if isinstance(row, (list, tuple)) else ()):
            if isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{name} row {r} axis {j} is {v!r}: coordinates must be integers, not bools")


def tables(ndim: int, src_start, dst_start, count, src_step=None, dst_step=None):
    """Broadcast the coordinate arrays into C-contiguous uint64 tables of shape (nslices, ndim).

    Each argument is an integer array-like of shape ``(ndim,)`` or ``(nslices, ndim)``; steps
    may be None (default 1, passed to the library as NULL). Returns a list of 5 arrays (None
    where a step was None) and nslices.

    Raises:
        TypeError: a coordinate array is not of an integer dtype (or is missing).
        ValueError: negative value (naming array, row and axis), not 1-D/2-D, wrong number of
            columns, or row counts that do not broadcast.
    """
    given = [src_start, dst_start, count, src_step, dst_step]
    fast = fast_tables(ndim, given)
    if fast is None:
        fast = one_row_tables(ndim, given)
    if fast is not None:
        return fast
    arrays = []
    for name, a in zip(COORD_NAMES, given):
        if a is None:
            if name in ("src_step", "dst_step"):
                arrays.append(None)
                continue
            raise TypeError(f"{name} is required")
        if isinstance(a, (list, tuple)):
            _refuse_bools(name, a, ndim)
        arr = np.asarray(a)
        if arr.dtype.kind not in "iu":
            if arr.size == 0 and arr.dtype.kind in "fO":
                arr = arr.astype(np.uint64)
            elif arr.dtype.kind == "O" and all(type(v) is int for v in arr.flat):
                if (big := next((v for v in arr.flat if not 0 <= v <= 0xFFFFFFFFFFFFFFFF), None)) is not None:
                    raise ValueError(f"{name} holds {big}, outside the range of uint64 coordinates (0 .. 2**64-1)")
                arr = arr.astype(np.uint64)
            else:
                raise TypeError(
                    f"{name} must hold integers, not {arr.dtype} (for slice objects such as np.s_[0:10, 5:8] "
                    "pass a list of them as src_start without count, or use vh5.slice_table)"
                )
        if arr.ndim not in (1, 2):
            raise ValueError(f"{name} must have shape (ndim,) or (nslices, ndim), not {arr.shape}")
        if arr.shape[-1] != ndim:
            raise ValueError(f"{name} has {arr.shape[-1]} columns, the dataset has {ndim} axes")
        if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
            row, axis = np.argwhere(arr.reshape(-1, ndim) < 0)[0]
            raise ValueError(f"{name} row {row} axis {axis} is negative ({arr.reshape(-1, ndim)[row, axis]})")
        arrays.append(arr)
    present = [a for a in arrays if a is not None]
    try:
        shapes = np.broadcast_shapes(*(a.shape if a.ndim == 2 else (1, ndim) for a in present))
    except ValueError:
        rows = {n: (a.shape[0] if a.ndim == 2 else "1-D") for n, a in zip(COORD_NAMES, arrays) if a is not None}
        raise ValueError(f"coordinate arrays do not broadcast to (nslices, {ndim}): rows {rows}") from None
    out = [None if a is None else np.ascontiguousarray(np.broadcast_to(a, shapes), dtype=np.uint64) for a in arrays]
    return out, shapes[0]


def _table_ptrs(tabs):
    return [None if t is None else address(t) for t in tabs]


# ----------------------------------------------------------------------------------------
# calls


def read(dset_id: int, dst: np.ndarray, tabs, nslices: int, fl: int, ids=None) -> None:
    """``vh5_read_many_slices`` of prepared tables into ``dst`` (``ids``: names for the
    handles in error messages, see :func:`vh5._errors.python_message`, or a function making
    them, called only on an error)."""
    read_ptrs(dset_id, dst, _table_ptrs(tabs), nslices, fl, ids)


def read_ptrs(dset_id: int, dst: np.ndarray, ptrs, nslices: int, fl: int, ids=None) -> None:
    """:func:`read` with the five tables given as addresses (or None), which the caller keeps
    alive through the call."""
    arr = array_struct(dst, "dst")
    status = lib().vh5_read_many_slices(dset_id, ctypes.byref(arr), nslices, *ptrs, fl)
    if status:
        check(status, ids() if callable(ids) else ids)


def write(src: np.ndarray, dset_id: int, tabs, nslices: int, fl: int, ids=None) -> None:
    """``vh5_write_many_slices`` of prepared tables from ``src`` (``ids``: as for :func:`read`)."""
    arr = array_struct(src, "src")
    status = lib().vh5_write_many_slices(dset_id, ctypes.byref(arr), nslices, *_table_ptrs(tabs), fl)
    if status:
        check(status, ids() if callable(ids) else ids)


def copy(src: np.ndarray, dst: np.ndarray, tabs, nslices: int, fl: int) -> None:
    """``vh5_copy_many_slices`` of prepared tables (``src`` and ``dst`` of one dtype)."""
    sa = array_struct(src, "src", slot=1)
    da = array_struct(dst, "dst")
    status = lib().vh5_copy_many_slices(ctypes.byref(sa), ctypes.byref(da), nslices, *_table_ptrs(tabs), fl)
    if status:
        check(status)


def addressof_writable(a: np.ndarray) -> int:
    """Address of a writable C-contiguous array's buffer; raises TypeError / ValueError /
    BufferError for any other array (the caller then takes the general path)."""
    return _addressof(_from_buffer(a))
