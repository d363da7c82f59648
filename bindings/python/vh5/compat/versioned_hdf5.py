"""Drop-in ``read_many_slices`` of versioned-hdf5 2.6.0 (``versioned_hdf5.slicetools``), backed by vh5.

Same signature, same clipping semantics and the same exception *types* as the original, in
all three directions it supports (checked by experiment against versioned-hdf5 2.6.0):

- HDF5 dataset (``h5py.Dataset`` or :class:`vh5.Dataset`) -> numpy array: ``vh5_read_many_slices``;
- numpy array -> numpy array: ``vh5_copy_many_slices`` (rows whose source and destination
  memory overlap behave as numpy's ``dst[...] = src[...]``, i.e. as if copied to a
  temporary first, which is what the original does);
- numpy array -> HDF5 dataset: ``vh5_write_many_slices`` (chunk-aware) into a
  :class:`vh5.Dataset` of a file opened with ``vh5.File(path, "r+")``, or into an
  ``h5py.Dataset`` when vh5 runs on h5py's libhdf5 (the h5py-bound build, ``libvh5_h5py``:
  the dataset is used by its id). With a linked build an ``h5py.Dataset`` destination is
  written by a per-row h5py loop here (:func:`write_h5py`), because a second libhdf5 must not
  write a file that h5py holds open (two metadata caches corrupt the file).

==============================================  ===========================================
input                                           behaviour
==============================================  ===========================================
0-d dst (or src and dst)                        ValueError "must operate on at least one dimension"
``src.ndim != dst.ndim``                        ValueError "dimensionality mismatch"
``src.dtype != dst.dtype`` (byte order too)      ValueError "dtype mismatch" (no conversion)
read-only numpy dst                             ValueError "dst must be writeable"
empty src or dst, an empty coordinate array     returns, touching nothing
negative coordinate                             OverflowError
float coordinate                                truncated toward zero (``numpy.asarray(x, uint64)``)
coordinate array not 1-D/2-D                    ValueError
wrong number of columns, rows not broadcastable ValueError
any step == 0 (even on rows clipped away)       ValueError "Strides must be strictly greater than zero"
out of bounds                                   counts clipped to both extents; empty rows skipped
overlapping destinations                        later row wins
write to a file opened read-only                RuntimeError
HDF5 failure                                    RuntimeError (a :class:`vh5.HDF5Error`)
==============================================  ===========================================

``fast``: vh5 handles every layout (Fortran order, negative and inner steps) in the library,
where versioned-hdf5 falls back to Python; ``fast=True`` still raises ValueError "fast
transfer is not possible" wherever the original does (no ``h5py.Dataset`` with
``_fast_read_ok`` on one side, or a numpy side no simple dataspace describes), and is
accepted with a :class:`vh5.Dataset`. A versioned-hdf5 ``RawDataView`` destination (a view
onto ``raw_data[offset:]``) is written into ``raw_data`` at that offset, as the original
does.

**Fallbacks.** A numeric or other fixed-size element type is never handed back to
versioned-hdf5. The only calls that are (:data:`FALLBACK_REASONS`), each counted in
:data:`fallback_count` and :data:`fallbacks` (per reason):

- ``"object"``: object arrays (``dtype('O')``: h5py's variable-length strings, vlen);
- ``"stringdtype"``: numpy ``StringDType`` arrays (``dtype.kind == 'T'``);
- ``"container"``: a source that is neither an HDF5 dataset nor a numpy array nor a numpy
  array-like with a ``dtype`` and ``__array__`` (which is converted with ``numpy.asarray``),
  or a destination that is neither a numpy array, an HDF5 dataset, nor (for a numpy source)
  an array-like with ``__setitem__``, ``shape``, ``dtype`` and ``ndim`` (written row by row
  here with ``dst[...] = src[...]``): a list, a memoryview...;
- ``"reopen"``: linked build only (vh5 has its own libhdf5): an ``h5py.Dataset`` source vh5
  cannot reopen by path (h5py holds the file open for writing and file locking is on, an
  in-memory file...; counted, no warning: versioned-hdf5's own test configuration turns
  warnings into errors). The h5py-bound build uses h5py's datasets by id and never falls
  back for them.

:func:`install` routes versioned-hdf5's own calls (its staging and commit code) to this shim.
With versioned-hdf5 not importable a fallback raises ``NotImplementedError``; with the
environment variable ``VH5_COMPAT_STRICT=1`` every fallback raises :class:`FallbackError`
instead (tests use it to prove vh5 did all the work).
"""

from __future__ import annotations

import os

import numpy as np

from .. import _errors
from .._datasets import Dataset
from .._h5py import adopt_h5py, resolve_source
from .._h5py import is_h5py_dataset as _is_h5py_dataset
from .._lib import lib
from .._slices import copy_many_slices, read_tables, write_many_slices

__all__ = [
    "read_many_slices",
    "write_h5py",
    "fallback_count",
    "fallbacks",
    "FALLBACK_REASONS",
    "FallbackError",
    "reset_fallbacks",
    "install",
    "call_count",
]

#: Why a call may be handed back to versioned-hdf5 (see the module docs).
FALLBACK_REASONS = ("object", "stringdtype", "container", "reopen")

#: Calls handed back to versioned-hdf5's own ``read_many_slices`` since import (or
#: :func:`reset_fallbacks`).
fallback_count = 0
#: The same, per reason of :data:`FALLBACK_REASONS`.
fallbacks = dict.fromkeys(FALLBACK_REASONS, 0)


class FallbackError(RuntimeError):
    """A call would be handed back to versioned-hdf5 while ``VH5_COMPAT_STRICT=1``."""


def reset_fallbacks() -> None:
    """Set :data:`call_count`, :data:`fallback_count` and every :data:`fallbacks` entry to 0."""
    global fallback_count, call_count
    fallback_count = 0
    call_count = 0
    for k in fallbacks:
        fallbacks[k] = 0


#: Calls of :func:`read_many_slices` since import (or :func:`reset_fallbacks`).
call_count = 0
#: versioned-hdf5's own function, remembered by :func:`install`.
_ORIG = None


def _original():
    if _ORIG is not None:
        return _ORIG
    try:
        from versioned_hdf5.slicetools import read_many_slices as orig
    except ImportError:
        return None
    return orig


def install() -> int:
    """Route versioned-hdf5's ``read_many_slices`` to this shim: in ``versioned_hdf5.slicetools``
    and in every imported ``versioned_hdf5`` module that imported it by name (e.g.
    ``versioned_hdf5.staged_changes``; all its submodules are imported first), so that
    versioned-hdf5's own staging and commit code and later ``from versioned_hdf5.slicetools
    import read_many_slices`` get the shim. Fallbacks still reach the original. Idempotent;
    returns the number of module attributes replaced. Raises ImportError without
    versioned-hdf5."""
    global _ORIG
    import importlib
    import pkgutil
    import sys

    import versioned_hdf5
    import versioned_hdf5.slicetools as st

    if _ORIG is None:
        _ORIG = st.read_many_slices
    for m in pkgutil.iter_modules(versioned_hdf5.__path__):
        if m.name != "tests":
            try:
                importlib.import_module(f"versioned_hdf5.{m.name}")
            except ImportError:  # pragma: no cover - optional parts of versioned-hdf5
                pass
    n = 0
    for name, mod in list(sys.modules.items()):
        if (name == "versioned_hdf5" or name.startswith("versioned_hdf5.")) and getattr(
            mod, "read_many_slices", None
        ) is _ORIG:
            mod.read_many_slices = read_many_slices
            n += 1
    return n


def _fallback(reason: str, what: str, args):
    """Hand the call ``args`` to versioned-hdf5 (counted), or raise (strict mode, or
    versioned-hdf5 missing)."""
    global fallback_count
    if os.environ.get("VH5_COMPAT_STRICT", "") not in ("", "0"):
        raise FallbackError(
            f"vh5.compat.versioned_hdf5.read_many_slices would hand {what} back to versioned-hdf5 "
            f"(reason {reason!r}); VH5_COMPAT_STRICT is set"
        )
    orig = _original()
    if orig is None:
        raise NotImplementedError(
            f"vh5.compat.versioned_hdf5.read_many_slices does not move {what}; "
            "install versioned-hdf5 to have it delegated"
        )
    fallback_count += 1
    fallbacks[reason] += 1
    return orig(*args)


def _fallback_reason(*arrays):
    """The fallback reason for element types vh5 does not move, or None."""
    for a in arrays:
        kind = getattr(getattr(a, "dtype", None), "kind", None)
        if kind == "O":
            return "object"
        if kind == "T":
            return "stringdtype"
    return None


def _as_uint64(a) -> np.ndarray:
    """versioned-hdf5's coordinate conversion: truncates floats, OverflowError on negatives."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "i" and a.size and a.min() < 0:
        raise OverflowError("index out of bounds for uint64")
    return np.asarray(a, dtype=np.uint64)


def read_many_slices(
    src,
    dst,
    src_start,
    dst_start,
    count,
    src_stride=None,
    dst_stride=None,
    fast=None,
):
    """Transfer many n-dimensional slices from ``src`` to ``dst`` (versioned-hdf5 2.6.0 API).

    For each row i: ``dst[dst_start[i] : ... : dst_stride[i]] = src[src_start[i] : ... :
    src_stride[i]]`` with ``count[i]`` elements per axis, counts clipped to both extents.

    Args:
        src: ``h5py.Dataset`` or :class:`vh5.Dataset` (other sources are delegated).
        dst (numpy.ndarray): writable, same ndim and dtype (byte order included) as src, any
            layout; written in place.
        src_start, dst_start, count: array-likes of shape (ndim,) or (nslices, ndim), cast to
            uint64 and broadcast together.
        src_stride, dst_stride: steps in elements (not bytes), same format, default 1.
        fast: ignored (accepted for compatibility).

    Returns:
        None.

    Raises:
        ValueError, OverflowError, RuntimeError: as listed in the module docs.
        NotImplementedError: a direction vh5 does not support and versioned-hdf5 is not installed.
    """
    global call_count
    call_count += 1
    args = (src, dst, src_start, dst_start, count, src_stride, dst_stride, fast)
    hdf5_src = isinstance(src, Dataset) or _is_h5py_dataset(src)
    if not hdf5_src and not isinstance(src, np.ndarray) and hasattr(src, "__array__") and hasattr(src, "dtype"):
        src = np.asarray(src)  # a numpy array-like source (the ArrayProtocol): read, never written
    np_src = isinstance(src, np.ndarray)
    np_dst = isinstance(dst, np.ndarray)
    raw_view = _is_raw_data_view(dst)
    h5_dst = isinstance(dst, Dataset) or _is_h5py_dataset(dst) or raw_view
    # A writable array-like destination (versioned-hdf5's MinimalMutableArray): per-row
    # ``dst[...] = src[...]`` by this module, as the original's generic path does.
    other_dst = not (np_dst or h5_dst) and all(hasattr(dst, a) for a in ("__setitem__", "shape", "dtype", "ndim"))
    if not ((hdf5_src and np_dst) or (np_src and (np_dst or h5_dst or other_dst))):
        what = (
            f"{type(src).__name__} -> {type(dst).__name__} "
            "(supported: HDF5 dataset -> numpy, numpy -> numpy, numpy -> HDF5 dataset)"
        )
        return _fallback("container", what, args)
    reason = _fallback_reason(src, dst)
    if reason is not None:
        return _fallback(reason, f"{reason} arrays ({src.dtype} -> {dst.dtype})", args)

    if dst.ndim == 0:
        raise ValueError("must operate on at least one dimension")
    if src.ndim != dst.ndim:
        raise ValueError(f"dimensionality mismatch: src.ndim={src.ndim} != dst.ndim={dst.ndim}")
    if src.dtype != dst.dtype:
        raise ValueError(f"dtype mismatch: src.dtype={src.dtype!r} != dst.dtype={dst.dtype!r}")
    if np_dst and not dst.flags.writeable:
        raise ValueError("dst must be writeable")
    if int(np.prod(src.shape, dtype=np.int64)) == 0 or int(np.prod(dst.shape, dtype=np.int64)) == 0:
        return
    offset0 = 0
    if raw_view:  # versioned-hdf5's writeable view onto raw_data[offset:]
        offset0, dst = int(dst.offset), dst.raw_data
    if fast is True and not _fast_possible(src, dst):
        raise ValueError("fast transfer is not possible with given src/dst arrays")

    parsed = _tables(dst.ndim, src_start, dst_start, count, src_stride, dst_stride)
    if parsed is None:
        return
    tables, nslices = parsed
    if offset0:
        tables[1] = tables[1].copy()
        tables[1][:, 0] += np.uint64(offset0)

    if np_src:
        if np_dst:
            try:
                copy_many_slices(src, dst, *tables, clip=True)
            except _errors.Error as e:
                _reraise(e)
            return
        if other_dst:
            return write_h5py(src, dst, tables)
        to_close = []
        if _is_h5py_dataset(dst):
            if not lib().h5py_bound:
                return write_h5py(src, dst, tables)
            dst = adopt_h5py(dst)
            to_close.append(dst)
        source = src
        if not src.dtype.isnative and src.dtype.itemsize > 1:
            source = src.astype(src.dtype.newbyteorder("="))  # libhdf5 converts back to the file order
        try:
            write_many_slices(source, dst, *tables, clip=True)
        except _errors.Error as e:
            _reraise(e)
        finally:
            for h in to_close:
                h.close()
        return

    try:
        dset, to_close = resolve_source(src)
    except _errors.Error as e:
        if isinstance(e, _errors.InvalidHandleError) or lib().h5py_bound:
            raise  # a closed h5py dataset; or vh5 runs on h5py's libhdf5: nothing to reopen
        return _fallback("reopen", f"{src.name!r}, which vh5's own libhdf5 cannot open ({e.message})", args)
    try:
        read_tables(dset, dst, *tables, clip=True)  # a dst in either byte order is read in place
    except _errors.Error as e:
        if isinstance(e, (ValueError, RuntimeError)):
            raise
        raise RuntimeError(str(e)) from e
    finally:
        for h in to_close:
            h.close()


def _is_raw_data_view(obj) -> bool:
    """versioned-hdf5's ``RawDataView`` (a writeable view onto ``raw_data[offset:]``)."""
    return type(obj).__name__ == "RawDataView" and hasattr(obj, "raw_data") and hasattr(obj, "offset")


def _fast_possible(src, dst) -> bool:
    """versioned-hdf5's condition for ``fast=True`` (else it raises ValueError): an
    ``h5py.Dataset`` with ``_fast_read_ok`` on one side, and on the other a numpy array whose
    memory a simple dataspace can describe (positive strides, innermost axis contiguous, no
    overlap: C order, slices, steps on outer axes). vh5 moves every layout; the check only
    keeps the original's refusal. A :class:`vh5.Dataset` side is always accepted."""
    if isinstance(src, Dataset) or isinstance(dst, Dataset):
        return True
    if _is_h5py_dataset(src) and isinstance(dst, np.ndarray):
        h5, arr = src, dst
    elif _is_h5py_dataset(dst) and isinstance(src, np.ndarray):
        h5, arr = dst, src
    else:
        return False
    return bool(getattr(h5, "_fast_read_ok", False)) and _hyperslab_layout(arr)


def _hyperslab_layout(arr: np.ndarray) -> bool:
    """versioned-hdf5's ``_np_hyperslab_dims`` test: can a row-major dataspace be laid over
    ``arr``'s buffer so that its element strides are ``arr``'s?"""
    shape, itemsize = arr.shape, arr.itemsize
    el = []
    for j, (n, st) in enumerate(zip(shape, arr.strides)):
        if n > 1:
            if st <= 0 or st % itemsize:
                return False
            el.append(st // itemsize)
        else:
            el.append(el[j - 1] if j else 0)
    if shape[-1] > 1 and el[-1] != 1:
        return False
    inner, reach = 1, shape[-1]
    for j in range(len(shape) - 2, -1, -1):
        least = inner * reach
        sj = el[j] or least
        if sj < least or sj % inner:
            return False
        inner, reach = sj, shape[j]
    return True


def _reraise(e):
    """versioned-hdf5's exception types for a vh5 error: ValueError stays, writes to a
    read-only file and libhdf5 failures are RuntimeError."""
    if isinstance(e, ValueError) and "no write intent" not in e.message:
        raise e
    raise RuntimeError(str(e)) from e


def _tables(ndim, src_start, dst_start, count, src_stride, dst_stride):
    """versioned-hdf5's coordinate handling: (5 tables, nslices) or None when some array is
    empty (nothing to do). Raises as the original (see the module docs)."""
    given = [src_start, dst_start, count, src_stride, dst_stride]
    arrays = []
    for k, a in enumerate(given):
        if a is None and k >= 3:  # strides default to 1; a None start/count fails to convert
            arrays.append(None)
            continue
        arr = _as_uint64(a)
        if arr.ndim not in (1, 2):
            raise ValueError("Coordinates arrays must have 1 or 2 dimensions")
        arrays.append(arr)
    present = [a for a in arrays if a is not None]
    if any(a.size == 0 for a in present):
        return None
    # The (1, ndim) template makes a wrong number of columns a broadcast error, as upstream.
    bcast = np.broadcast_arrays(np.empty((1, ndim), dtype=np.uint64), *present)[1:]
    if bcast[0].shape[1] != ndim:  # (1, ndim) broadcasts against a (n, k) template
        raise ValueError("Coordinates arrays must have as many columns as src.ndim")
    tables = []
    it = iter(bcast)
    for a in arrays:
        tables.append(None if a is None else np.ascontiguousarray(next(it)))
    for t in tables[3:]:
        if t is not None and (t == 0).any():
            raise ValueError("Strides must be strictly greater than zero")
    return tables, tables[0].shape[0]


def write_h5py(src: np.ndarray, dst, tables) -> None:
    """numpy -> ``h5py.Dataset`` (through h5py, with a linked build of libvh5) or any writable
    array-like, one ``dst[...] = src[...]`` per row after clipping every count to both
    extents (versioned-hdf5's semantics); ``tables`` as returned by :func:`_tables`."""
    s, d, c = (t.astype(np.int64) for t in tables[:3])
    ss = np.ones_like(s) if tables[3] is None else tables[3].astype(np.int64)
    ds = np.ones_like(d) if tables[4] is None else tables[4].astype(np.int64)
    sext = np.asarray(src.shape, dtype=np.int64)
    dext = np.asarray(dst.shape, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        fit_s = np.where(s < sext, (sext - 1 - s) // ss + 1, 0)
        fit_d = np.where(d < dext, (dext - 1 - d) // ds + 1, 0)
    c = np.minimum(c, np.minimum(fit_s, fit_d))
    for i in range(c.shape[0]):
        if (c[i] <= 0).any():
            continue
        sidx = tuple(slice(a, a + (n - 1) * st + 1, st) for a, n, st in zip(s[i], c[i], ss[i]))
        didx = tuple(slice(a, a + (n - 1) * st + 1, st) for a, n, st in zip(d[i], c[i], ds[i]))
        dst[didx] = src[sidx]
