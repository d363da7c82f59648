"""Drop-in ``read_many_slices`` of versioned-hdf5 2.6.0 (``versioned_hdf5.slicetools``), backed by vh5.

Same signature, same clipping semantics and the same exception *types* for HDF5 -> numpy
reads, checked in the same order as the original:

==============================================  ===========================================
input                                           behaviour
==============================================  ===========================================
0-d dst (or src and dst)                        ValueError "must operate on at least one dimension"
``src.ndim != dst.ndim``                        ValueError "dimensionality mismatch"
``src.dtype != dst.dtype`` (byte order too)      ValueError "dtype mismatch" (no conversion)
read-only dst                                   ValueError "dst must be writeable"
empty src or dst, an empty coordinate array     returns, touching nothing
negative coordinate                             OverflowError
float coordinate                                truncated toward zero (``numpy.asarray(x, uint64)``)
coordinate array not 1-D/2-D                    ValueError
wrong number of columns, rows not broadcastable ValueError
any step == 0 (even on rows clipped away)       ValueError "Strides must be strictly greater than zero"
out of bounds                                   counts clipped to both extents; empty rows skipped
overlapping destinations                        later row wins
HDF5 failure                                    RuntimeError (a :class:`vh5.HDF5Error`)
==============================================  ===========================================

``fast`` is accepted and ignored: vh5 handles every destination layout (Fortran order,
negative and inner steps) in the library, where versioned-hdf5 falls back to Python.

Directions the vh5 library does not implement yet (numpy -> numpy, numpy -> HDF5, or any
source/destination other than an HDF5 dataset and a numpy array) are delegated to
versioned-hdf5's own function when it is importable, and otherwise raise
``NotImplementedError`` (planned in a later issue). When vh5 cannot re-open the dataset
that h5py holds (h5py opened the file for writing and ``HDF5_USE_FILE_LOCKING`` is not
``FALSE``, an in-memory file, ...), the call is likewise delegated to versioned-hdf5 when
available (with a ``RuntimeWarning``), else vh5's error is raised.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _errors
from ..hdf5 import Dataset, _call_read, _is_h5py_dataset, resolve_source

__all__ = ["read_many_slices"]


def _original():
    try:
        from versioned_hdf5.slicetools import read_many_slices as orig
    except ImportError:
        return None
    return orig


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
    hdf5_src = isinstance(src, Dataset) or _is_h5py_dataset(src)
    if not (hdf5_src and isinstance(dst, np.ndarray)):
        orig = _original()
        if orig is None:
            raise NotImplementedError(
                "vh5.compat.versioned_hdf5.read_many_slices supports HDF5 dataset -> numpy array "
                "only; numpy -> numpy and numpy -> HDF5 transfers are planned in a later issue "
                "(install versioned-hdf5 to have them delegated)"
            )
        return orig(src, dst, src_start, dst_start, count, src_stride, dst_stride, fast)

    if dst.ndim == 0:
        raise ValueError("must operate on at least one dimension")
    if src.ndim != dst.ndim:
        raise ValueError(f"dimensionality mismatch: src.ndim={src.ndim} != dst.ndim={dst.ndim}")
    if src.dtype != dst.dtype:
        raise ValueError(f"dtype mismatch: src.dtype={src.dtype!r} != dst.dtype={dst.dtype!r}")
    if not dst.flags.writeable:
        raise ValueError("dst must be writeable")
    if int(np.prod(src.shape, dtype=np.int64)) == 0 or dst.size == 0:
        return

    ndim = dst.ndim
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
        return
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
    nslices = tables[0].shape[0]

    try:
        dset, to_close = resolve_source(src)
    except _errors.Error as e:
        orig = _original()
        if orig is None:
            raise
        warnings.warn(
            f"vh5 could not open {getattr(src.file, 'filename', '?')!r} ({e.message}); "
            "delegating to versioned_hdf5 (set HDF5_USE_FILE_LOCKING=FALSE if h5py holds it "
            "open for writing)",
            RuntimeWarning,
            stacklevel=2,
        )
        return orig(src, dst, src_start, dst_start, count, src_stride, dst_stride, fast)
    try:
        target = dst
        if not dst.dtype.isnative and dst.dtype.itemsize > 1:
            # vh5 moves native-order elements: stage through a native copy (keeps untouched values).
            target = dst.astype(dst.dtype.newbyteorder("="))
        _call_read(dset, target, tables, nslices, clip=True, convert=False)
        if target is not dst:
            dst[...] = target
    except _errors.Error as e:
        if isinstance(e, (ValueError, RuntimeError)):
            raise
        raise RuntimeError(str(e)) from e
    finally:
        for h in to_close:
            h.close()
