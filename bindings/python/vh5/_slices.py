"""Many-slice transfers: HDF5 -> numpy (:func:`read_many_slices`), numpy -> HDF5
(:func:`write_many_slices`) and numpy -> numpy (:func:`copy_many_slices`), each one library
call; and the library's thread count and read strategy (planner).

Row semantics (all three): row i copies, on every axis j,
``dst[d : d+(c-1)*ds+1 : ds] = src[s : s+(c-1)*ss+1 : ss]`` (elements); rows run in order,
the later row wins where destinations overlap, every row is validated before anything is
written. The tables may also be given as a list of basic selections (``np.s_[...]``
objects, index tuples; see :func:`vh5.slice_table`).

Writes go to a :class:`vh5.Dataset` of a file opened with ``vh5.File(path, "r+")``. An
``h5py.Dataset`` is refused as a destination: h5py uses a *different* libhdf5 instance, and
two libhdf5 instances writing one open file corrupt it (each caches the file's metadata).
"""

from __future__ import annotations

import operator

import numpy as np

from . import _dtypes, _marshal, _select
from ._datasets import Dataset
from ._errors import check, error
from ._getitem import read_one_row
from ._h5py import is_h5py_dataset, resolve_source
from ._lib import lib

__all__ = [
    "read_many_slices",
    "write_many_slices",
    "copy_many_slices",
    "set_num_threads",
    "get_num_threads",
    "set_planner",
    "get_planner",
    "read_tables",
]

_ndarray = np.ndarray
_U64 = _marshal.U64
_I64 = _marshal.I64
_READ_FN = None
_addressof = _marshal._addressof
_from_buffer = _marshal._from_buffer


def _read_fn():
    """The ctypes function ``vh5_read_many_slices`` (looked up once)."""
    global _READ_FN
    fn = _READ_FN
    if fn is None:
        fn = _READ_FN = lib().vh5_read_many_slices
    return fn


def _selection_tables(ndim, shape, src_start, dst_start, count, src_step):
    """(src_start, dst_start, count, src_step) from a list of selections given as
    ``src_start`` (``count`` omitted): dst_start stacks them along the first axis unless
    given."""
    if src_step is not None:
        raise TypeError("src_step cannot be given with selections: their slices carry the steps")
    t = _select.slice_table(src_start, shape)
    return t.src_start, (t.dst_start if dst_start is None else dst_start), t.count, t.src_step


def read_many_slices(
    src,
    dst,
    src_start,
    dst_start=None,
    count=None,
    src_step=None,
    dst_step=None,
    *,
    clip: bool = False,
    convert: bool = False,
):
    """Copy many hyperslabs from an HDF5 dataset into a numpy array in one library call.

    The other two directions go through the same function: a numpy ``src`` with a numpy
    ``dst`` is a memory copy (:func:`vh5.copy_many_slices`), a numpy ``src`` with a
    :class:`vh5.Dataset` ``dst`` a write (:func:`vh5.write_many_slices`).

    Row i of the tables copies, on every axis j::

        dst[d[i,j] : d[i,j] + (c[i,j]-1)*ds[i,j] + 1 : ds[i,j]] =
            src[s[i,j] : s[i,j] + (c[i,j]-1)*ss[i,j] + 1 : ss[i,j]]

    with ``s``/``d`` = ``src_start``/``dst_start``, ``c`` = ``count``, ``ss``/``ds`` =
    ``src_step``/``dst_step`` (all in *elements*, steps default to 1 and are never 0).
    Rows run in order; where destinations overlap the later row wins.

    Args:
        src: a :class:`vh5.Dataset`, or an ``h5py.Dataset`` (re-opened by file name and dataset
            name through vh5's libhdf5 for the duration of the call; a writable h5py file is
            flushed first; see the module docs about ``HDF5_USE_FILE_LOCKING``).
        dst (numpy.ndarray): writable destination with ``dst.ndim == src.ndim``, any layout:
            C or Fortran order, sliced, stepped, negative strides. Its dtype must be
            ``src.dtype`` in either byte order (big-endian files are delivered in the
            destination's order: ``src.dtype`` is native) unless ``convert`` is True
            (libhdf5 converts, e.g. int16 -> float64). Written
            in place. A 0-d dataset is read with a 0-d dst and ``(nslices, 0)`` tables.
            Compound (record) datasets: a ``V<n>`` dst takes the raw records; a dst with
            named fields must have exactly the layout of libhdf5's native memory type (the
            records vh5 moves; h5py's ``dset.dtype`` may differ: file offsets, big-endian
            members), else :class:`vh5.DtypeError` naming both layouts. Any other dtype
            vh5 moves as raw bytes (``S<n>``, datetime64 / timedelta64, ``longdouble``) must
            equal that memory type too (``S8`` for an 8-byte string dataset; for h5py's
            datetime64 / timedelta64 datasets, opaque types tagged with the numpy dtype,
            exactly that dtype, unit and byte order included, as h5py reads them), else
            :class:`vh5.DtypeError`; ``V<n>`` takes the raw bytes.
        src_start, dst_start, count: integer array-likes of shape ``(ndim,)`` or
            ``(nslices, ndim)``, broadcast together (a 1-D array applies to every row).
            Or ``src_start`` a list of basic selections of ``src`` (``[np.s_[0:10, ::2],
            (5, slice(None)), ...]``) with ``count`` omitted: the tables of
            :func:`vh5.slice_table`, rows stacked along dst's first axis unless
            ``dst_start`` is given.
        src_step, dst_step: like the above, or None for 1 on every axis.
        clip: versioned-hdf5 semantics: clip every count to both extents and skip rows that
            become empty instead of raising :class:`vh5.OutOfBoundsError`.
        convert: let libhdf5 convert between the file type and ``dst.dtype``. Conversions
            the linked libhdf5 gets wrong for some values (e.g. float32 -> float16 or int32 ->
            float16 before 1.14.4: 65520 -> 65504, 100000 -> NaN) raise :class:`vh5.DtypeError`
            instead (docs/ROBUSTNESS.md).

    Returns:
        None. ``dst`` is modified in place.

    Raises:
        vh5.OutOfBoundsError: a row reaches outside src or dst (without ``clip``); the message
            names the row and axis.
        vh5.InvalidArgumentError: ndim mismatch, step 0, read-only dst...
        vh5.DtypeError: dtype mismatch without ``convert``; non-native dst byte order; a
            conversion the linked libhdf5 gets wrong; a record dst in another layout than
            the dataset's native memory type.
        vh5.HDF5Error: libhdf5 failed (message carries its error stack).
        vh5.IoError, vh5.NotFoundError: re-opening an h5py dataset failed.
        TypeError / ValueError: bad coordinate arrays (non-integer, negative, wrong shape)
            or a non-numpy / read-only ``dst``.

    Memory: vh5 writes only inside ``dst``'s own elements and keeps no pointer after the
    call. The GIL is released during the library call (ctypes does so for every call), so
    other threads run meanwhile; do not let another thread resize or free ``dst``.
    """
    if (
        type(src) is Dataset
        and type(dst) is _ndarray
        and type(src_start) is _ndarray
        and _read_fast(src, dst, src_start, dst_start, count, src_step, dst_step, clip, convert)
    ):
        return
    if (
        type(src) is Dataset
        and type(dst) is _ndarray
        and src_step is None
        and dst_step is None
        and not clip
        and not convert
        and count is not None
        and read_one_row(
            src, dst, src_start, dst_start, count, _marshal.flags(False, False, _dtypes.swapped(dst.dtype))
        )
    ):
        return
    if isinstance(src, np.ndarray) and isinstance(dst, Dataset):
        return write_many_slices(src, dst, src_start, dst_start, count, src_step, dst_step, clip=clip, convert=convert)
    if not isinstance(dst, np.ndarray):
        raise TypeError(f"dst must be a numpy.ndarray, not {type(dst).__name__}")
    if not dst.flags.writeable:
        raise ValueError("dst must be writeable")
    if count is None or (type(src_start) is not _ndarray and _select.is_selection_list(src_start)):
        shape = src._extent() if isinstance(src, Dataset) else src.shape
        src_start, dst_start, count, src_step = _selection_tables(
            len(shape), shape, src_start, dst_start, count, src_step
        )
    if type(src) is Dataset:
        if _dtypes.layout_checked(dst.dtype):
            src._check_records(dst.dtype, "dst")
        tabs, nslices = _marshal.tables(src._rank(), src_start, dst_start, count, src_step, dst_step)
        _marshal.read(src.id, dst, tabs, nslices, _marshal.flags(clip, convert, _dtypes.swapped(dst.dtype)), src._ids)
        return
    if isinstance(src, np.ndarray):
        if convert:
            raise ValueError("convert=True is not supported for numpy -> numpy copies (dtypes must match)")
        return copy_many_slices(src, dst, src_start, dst_start, count, src_step, dst_step, clip=clip)
    dset, to_close = resolve_source(src)
    try:
        read_tables(dset, dst, src_start, dst_start, count, src_step, dst_step, clip=clip, convert=convert)
    finally:
        for h in to_close:
            h.close()


def _read_fast(src: Dataset, dst, src_start, dst_start, count, src_step, dst_step, clip: bool, convert: bool) -> bool:
    """The common read of :func:`read_many_slices` in one step, or False (nothing done) when
    the general path is needed: a writable dst and C-contiguous uint64 (or non-negative int64)
    ndarray tables of shape ``(nslices, ndim)`` (steps None or such tables too). Its cost
    matters for small calls (docs/BENCHMARKS.md, "single-row call"); the general path
    broadcasts, converts and checks in Python and raises the errors users see, so every
    refusal here defers to it (an empty dataset, h5py.Empty, raises as that path does:
    :meth:`Dataset._rank`)."""
    if count is None or not dst.flags.writeable or _dtypes.layout_checked(dst.dtype):
        return False  # records (numpy fields) are checked against the memory type on the general path
    ndim = src._rank()  # no library call for a live extent: only the rank matters here
    nslices = -1
    addrs = []
    for a in (src_start, dst_start, count, src_step, dst_step):
        if a is None and len(addrs) > 2:
            addrs.append(None)
            continue
        if type(a) is not _ndarray or a.ndim != 2:
            return False
        dt = a.dtype
        if dt is not _U64 and dt != _U64 and (dt != _I64 or (a.size and a.min() < 0)):
            return False
        r, k = a.shape
        if k != ndim or (nslices >= 0 and r != nslices):
            return False
        nslices = r
        try:
            # Succeeds only for a writable C-contiguous buffer (numpy refuses others).
            addrs.append(_addressof(_from_buffer(a)))
        except (TypeError, ValueError, BufferError):
            if not a.flags.c_contiguous:
                return False
            addrs.append(a.__array_interface__["data"][0])
    arr = _marshal.cached_struct(dst) or _marshal.array_struct(dst, "dst")
    if not src._finalizer.alive:
        src.id  # noqa: B018 - raises InvalidHandleError
    fl = _marshal.flags(clip, convert, not dst.dtype.isnative)
    status = (_READ_FN or _read_fn())(src._id, arr, nslices, *addrs, fl)
    if status:
        check(status, src._ids())
    return True


def read_tables(
    dset: Dataset, dst, src_start, dst_start, count, src_step=None, dst_step=None, *, clip=False, convert=False
):
    """:func:`read_many_slices` of an open :class:`vh5.Dataset` and coordinate tables (no
    dispatch, no selections): the building block of the compatibility shims."""
    if _dtypes.layout_checked(dst.dtype):
        dset._check_records(dst.dtype, "dst")
    tabs, nslices = _marshal.tables(dset.ndim, src_start, dst_start, count, src_step, dst_step)
    _marshal.read(dset.id, dst, tabs, nslices, _marshal.flags(clip, convert, _dtypes.swapped(dst.dtype)), dset._ids)


def write_many_slices(
    src,
    dst,
    src_start,
    dst_start,
    count=None,
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
            is converted by libhdf5 from native order). Conversions the linked libhdf5 gets
            wrong for some values raise :class:`vh5.DtypeError` (as for reads).

    Chunked datasets are written chunk by chunk: each touched chunk is written once per call,
    read first only when the rows cover it in part. Data reaches the file at the latest
    when the dataset and file are closed. If the process dies mid-write (HDF5 1.10 has no
    journal) the file still opens and other datasets are intact; an uncompressed dataset
    with pre-allocated storage holds old or new values; a compressed one may be unreadable.
    Chunks stored under a non-zero filter mask (filters skipped for them, e.g. by h5py's
    ``write_direct_chunk(..., filter_mask=m)``) are left stored with every filter and mask 0
    (h5py's own write keeps the stale mask and leaves them unreadable); in pipelines vh5
    does not encode (szip, plugins such as hdf5plugin's Blosc) they are stored again under
    the same mask when it leaves on only deflate / shuffle / fletcher32 and every filter it
    skips is lossless (a Blosc chunk its optional filter could not shrink stays stored raw,
    not re-compressed). Chunks stored with
    mask 0 whose optional filter (Blosc, szip) fails on the new values, which libhdf5 would
    leave under a stale mask 0, are recorded under the right mask. The write of a
    plugin-filtered dataset needs the plugin in vh5's libhdf5 (``HDF5_PLUGIN_PATH``).

    Raises:
        TypeError: ``dst`` is not a vh5.Dataset (an ``h5py.Dataset`` is refused, see the
            module docs) or ``src`` is not a numpy array; bad coordinate arrays.
        vh5.InvalidArgumentError: file opened read-only ("no write intent"), ndim mismatch,
            step 0 (naming row and axis); vh5.OutOfBoundsError (without clip);
            vh5.DtypeError (dtype mismatch, non-native ``src``, a record ``src`` in another
            layout than the dataset's native memory type, an ``S``, datetime64 or other raw
            ``src`` of another type, as for reads); vh5.UnsupportedError (a row reaches a
            chunk stored under a filter mask that leaves on a filter vh5 does not encode:
            szip, scaleoffset, nbit, plugins, or that skips a filter changing values:
            scaleoffset of floats, nbit, zfp; or such a chunk in a write that converts
            types; or a converting write reaching a stored chunk, or one chunk with more than
            one row, of a pipeline with an optional filter vh5 does not run, Blosc or szip:
            convert with ``astype`` first; or a stored chunk of a pipeline where vh5 cannot
            recognise a stale filter mask, e.g. LZ4 or scaleoffset then Blosc, or any
            chunk of such a pipeline when the dataset's late-allocated storage is not
            allocated yet; nothing written); vh5.HDF5Error (libhdf5
            failed part-way: the message lists the rows written completely / in part).
    """
    if not isinstance(src, np.ndarray):
        raise TypeError(f"src must be a numpy.ndarray, not {type(src).__name__}")
    if is_h5py_dataset(dst):
        if lib().h5py_bound:
            why = (
                "vh5 writes only datasets it opened itself. This build shares h5py's libhdf5, so "
                "vh5.File(path, 'r+')[name] may stay open next to h5py's handle (one open file, one "
                "metadata cache); write through it, or through h5py"
            )
        else:
            why = (
                "vh5 writes through its own libhdf5, which must not write a file h5py holds open "
                "(two metadata caches corrupt it). Close it in h5py and use vh5.File(path, 'r+')[name], "
                "or write through h5py"
            )
        raise TypeError(f"dst is an h5py.Dataset: {why}")
    if not isinstance(dst, Dataset):
        raise TypeError(f"dst must be a vh5.Dataset, not {type(dst).__name__}")
    if count is None or _select.is_selection_list(dst_start):
        raise TypeError("write_many_slices takes coordinate tables (src_start, dst_start, count), not selections")
    if _dtypes.layout_checked(src.dtype):
        dst._check_records(src.dtype, "src")
    tabs, nslices = _marshal.tables(dst.ndim, src_start, dst_start, count, src_step, dst_step)
    _marshal.write(src, dst.id, tabs, nslices, _marshal.flags(clip, convert), dst._ids)


def copy_many_slices(
    src,
    dst,
    src_start,
    dst_start,
    count=None,
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
        raise error(
            "VH5_ERR_DTYPE",
            f"dtype mismatch: src is {src.dtype.str}, dst is {dst.dtype.str} (memory copies never convert)",
        )
    if src.ndim != dst.ndim:
        raise error("VH5_ERR_INVALID_ARGUMENT", f"dimensionality mismatch: src.ndim={src.ndim} != dst.ndim={dst.ndim}")
    if count is None:
        raise TypeError("copy_many_slices takes coordinate tables (src_start, dst_start, count), not selections")
    tabs, nslices = _marshal.tables(dst.ndim, src_start, dst_start, count, src_step, dst_step)
    _marshal.copy(_native_view(src), _native_view(dst), tabs, nslices, _marshal.flags(clip))


def _native_view(a: np.ndarray) -> np.ndarray:
    """A native-byte-order view of the same bytes (a reinterpretation, not a conversion)."""
    if a.dtype.isnative or a.dtype.itemsize == 1 or a.dtype.kind == "V":
        return a
    return a.view(a.dtype.newbyteorder("="))


def set_num_threads(n: int) -> None:
    """Set how many threads :func:`read_many_slices` may use to decompress and scatter chunks
    (process-wide; ``vh5_set_num_threads``). 1 = no extra threads; 0 = the default (env
    ``VH5_THREADS``, else the cores available). At most 1024 (``VH5_MAX_THREADS``):
    larger values raise :class:`InvalidArgumentError`; a call never starts more workers than
    twice the cores (at least 4). ``n`` must be an integer (``TypeError`` for 2.5)."""
    n = operator.index(n)
    if not 0 <= n < 2**32:
        raise ValueError(f"n must be in [0, 2**32), not {n}")
    check(lib().vh5_set_num_threads(n))


def get_num_threads() -> int:
    """The number of threads :func:`read_many_slices` may use now (``vh5_get_num_threads``)."""
    return int(lib().vh5_get_num_threads())


_PLANNERS = {"auto": 1, "chunks": 2, "rows": 3}


def set_planner(mode: str | None) -> None:
    """Set the read strategy of every later :func:`read_many_slices` call, process-wide
    (``vh5_set_planner``): ``"auto"`` (per call and chunk, whichever vh5's cost model predicts
    faster), ``"chunks"`` (every chunk touched read whole once, every row copied out of it),
    ``"rows"`` (one ``H5Dread`` per row; datasets whose filters vh5 decodes itself are read as
    under ``"chunks"``), or ``None`` = back to the default (env ``VH5_PLANNER``, else
    ``"auto"``). Results are identical in every mode; only speed and memory differ. Any other
    value raises ``ValueError`` (nothing changed)."""
    if mode is None:
        code = 0
    elif isinstance(mode, str) and mode.lower() in _PLANNERS:
        code = _PLANNERS[mode.lower()]
    else:
        raise ValueError(f"planner mode must be one of 'auto', 'chunks', 'rows' or None, not {mode!r}")
    check(lib().vh5_set_planner(code))


def get_planner() -> str:
    """The read strategy a :func:`read_many_slices` call starting now uses (``vh5_get_planner``):
    ``"auto"``, ``"chunks"`` or ``"rows"`` (see :func:`set_planner`)."""
    code = int(lib().vh5_get_planner())
    return {v: k for k, v in _PLANNERS.items()}[code]
