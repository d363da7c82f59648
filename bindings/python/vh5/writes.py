"""Many-slice writes (numpy -> HDF5) and memory copies (numpy -> numpy).

Both use the row semantics of :func:`vh5.read_many_slices`: row i copies, on every axis j,
``dst[d : d+(c-1)*ds+1 : ds] = src[s : s+(c-1)*ss+1 : ss]`` (elements); rows run in order,
the later row wins where destinations overlap, every row is validated before anything is
written.

Writes go to a :class:`vh5.Dataset` of a file opened with ``vh5.File(path, "r+")``. An
``h5py.Dataset`` is refused as a destination: h5py uses a *different* libhdf5 instance, and
two libhdf5 instances writing one open file corrupt it (each caches the file's metadata).
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _dtypes
from ._errors import make_error
from ._lib import VH5_SLICES_CLIP, VH5_SLICES_CONVERT, Array, check, lib
from .hdf5 import Dataset, _is_h5py_dataset, coordinate_tables, describe_array

__all__ = ["write_many_slices", "copy_many_slices"]


def _describe(a: np.ndarray):
    """A ``vh5_array`` for numpy array ``a`` (any layout, native byte order) and the ctypes
    arrays that must stay alive while it is used. Plain-Python arithmetic: a few µs."""
    code, itemsize, order = _dtypes.from_numpy(a.dtype)
    if order not in (_dtypes.ORDER_NONE, _dtypes.NATIVE_ORDER):
        raise make_error(7, "VH5_ERR_DTYPE", f"array has non-native byte order {a.dtype.str}; use a native-order array")
    ptr = a.__array_interface__["data"][0]
    shape, strides = a.shape, a.strides
    lo = hi = ptr
    if a.size:
        hi += itemsize
        for n, st in zip(shape, strides):
            reach = (n - 1) * st
            if reach < 0:
                lo += reach
            else:
                hi += reach
    nd = len(shape)
    cshape = (ctypes.c_uint64 * nd)(*shape)
    cstrides = (ctypes.c_int64 * nd)(*strides)
    arr = Array()
    arr.base = lo
    arr.base_len = hi - lo
    arr.offset = ptr - lo
    arr.dtype = code
    arr.itemsize = itemsize
    arr.ndim = nd
    arr.shape = ctypes.cast(cshape, ctypes.POINTER(ctypes.c_uint64))
    arr.strides = ctypes.cast(cstrides, ctypes.POINTER(ctypes.c_int64))
    return arr, (cshape, cstrides)


def _tables(ndim, src_start, dst_start, count, src_step, dst_step):
    """Slice tables as C-contiguous (nslices, ndim) uint64 arrays: used as they are when they
    already are such arrays with the same number of rows, else via ``coordinate_tables``."""
    given = (src_start, dst_start, count, src_step, dst_step)
    rows = None
    for k, t in enumerate(given):
        if t is None and k >= 3:
            continue
        if not (
            isinstance(t, np.ndarray)
            and t.dtype == np.uint64
            and t.ndim == 2
            and t.shape[1] == ndim
            and t.flags.c_contiguous
            and (rows is None or t.shape[0] == rows)
        ):
            return coordinate_tables(ndim, *given)
        rows = t.shape[0]
    return list(given), rows


def _native_view(a: np.ndarray) -> np.ndarray:
    """A native-byte-order view of the same bytes (a reinterpretation, not a conversion)."""
    if a.dtype.isnative or a.dtype.itemsize == 1 or a.dtype.kind == "V":
        return a
    return a.view(a.dtype.newbyteorder("="))


def write_many_slices(
    src,
    dst,
    src_start,
    dst_start,
    count,
    src_step=None,
    dst_step=None,
    *,
    clip: bool = False,
    convert: bool = False,
):
    """Write many slices of a numpy array into an HDF5 dataset in one library call.

    ``src_*`` coordinates index the ARRAY ``src``; ``dst_*`` index the DATASET ``dst``
    (all in elements; steps default to 1, never 0). Coordinate arrays are integer
    array-likes of shape ``(ndim,)`` or ``(nslices, ndim)``, broadcast together.

    Args:
        src (numpy.ndarray): any layout (C/Fortran order, sliced, stepped, negative or zero
            strides), native byte order, ``src.ndim == dst.ndim``; only read.
        dst (vh5.Dataset): a dataset of a file opened with ``vh5.File(path, "r+")``.
        clip: versioned-hdf5 semantics: counts clipped to both extents, empty rows skipped,
            instead of :class:`vh5.OutOfBoundsError`.
        convert: let libhdf5 convert ``src.dtype`` to the dataset's type (e.g. float64 ->
            int16); otherwise the dtypes must match (byte order aside: a big-endian dataset
            is converted by libhdf5 from native order).

    Chunked datasets are written chunk by chunk: each touched chunk is written once per call,
    read first only when the rows cover it in part. Data reaches the file at the latest
    when the dataset and file are closed. If the process dies mid-write (HDF5 1.10 has no
    journal) the file still opens and other datasets are intact; an uncompressed dataset
    with pre-allocated storage holds old or new values; a compressed one may be unreadable.

    Raises:
        TypeError: ``dst`` is not a vh5.Dataset (an ``h5py.Dataset`` is refused, see the
            module docs) or ``src`` is not a numpy array; bad coordinate arrays.
        vh5.InvalidArgumentError: file opened read-only ("no write intent"), ndim mismatch,
            step 0 (naming row and axis); vh5.OutOfBoundsError (without clip);
            vh5.DtypeError (dtype mismatch, non-native ``src``); vh5.HDF5Error (libhdf5
            failed part-way: the message lists the rows written completely / in part).
    """
    if not isinstance(src, np.ndarray):
        raise TypeError(f"src must be a numpy.ndarray, not {type(src).__name__}")
    if _is_h5py_dataset(dst):
        raise TypeError(
            "dst is an h5py.Dataset: vh5 writes through its own libhdf5, which must not write a "
            "file h5py holds open (two metadata caches corrupt it). Close it in h5py and use "
            "vh5.File(path, 'r+')[name], or write through h5py"
        )
    if not isinstance(dst, Dataset):
        raise TypeError(f"dst must be a vh5.Dataset, not {type(dst).__name__}")
    tables, nslices = _tables(dst.ndim, src_start, dst_start, count, src_step, dst_step)
    arr, keep = _describe(src)
    ptrs = [None if t is None else t.ctypes.data for t in tables]
    flags = (VH5_SLICES_CLIP if clip else 0) | (VH5_SLICES_CONVERT if convert else 0)
    status = lib().vh5_write_many_slices(dst.id, ctypes.byref(arr), nslices, *ptrs, flags)
    del keep
    check(status)


def copy_many_slices(
    src,
    dst,
    src_start,
    dst_start,
    count,
    src_step=None,
    dst_step=None,
    *,
    clip: bool = False,
):
    """Copy many slices between two numpy arrays in one library call (numpy -> numpy).

    Same row semantics as :func:`vh5.read_many_slices`. ``src`` and ``dst`` must have the
    same dtype (byte order included: bytes are moved unchanged) and ndim; any layouts. They
    may share memory (even be the same array): each row then behaves as if its source were
    first copied to a temporary, like ``dst[...] = src[...]`` in numpy.

    Raises:
        TypeError / ValueError: non-numpy arguments, read-only ``dst``, bad coordinates.
        vh5.DtypeError: different dtypes; vh5.InvalidArgumentError: ndim mismatch, step 0,
            ``dst`` strides under which elements overlap; vh5.OutOfBoundsError (without clip).
    """
    if not isinstance(src, np.ndarray) or not isinstance(dst, np.ndarray):
        raise TypeError(f"src and dst must be numpy arrays, not {type(src).__name__} and {type(dst).__name__}")
    if not dst.flags.writeable:
        raise ValueError("dst must be writeable")
    if src.dtype != dst.dtype:
        raise make_error(7, "VH5_ERR_DTYPE", f"dtype mismatch: src is {src.dtype.str}, dst is {dst.dtype.str} (memory copies never convert)")
    if src.ndim != dst.ndim:
        raise make_error(2, "VH5_ERR_INVALID_ARGUMENT", f"dimensionality mismatch: src.ndim={src.ndim} != dst.ndim={dst.ndim}")
    tables, nslices = _tables(dst.ndim, src_start, dst_start, count, src_step, dst_step)
    # describe_array caches the shape/stride description per (dtype, shape, strides).
    sa, k1 = describe_array(_native_view(src))
    da, k2 = describe_array(_native_view(dst))
    ptrs = [None if t is None else t.__array_interface__["data"][0] for t in tables]
    status = lib().vh5_copy_many_slices(ctypes.byref(sa), ctypes.byref(da), nslices, *ptrs, VH5_SLICES_CLIP if clip else 0)
    del k1, k2
    check(status)
