"""HDF5 files and datasets opened through vh5's own libhdf5, and many-slice reads.

vh5 links the system libhdf5, which is a *different* library instance from the one inside
h5py wheels: HDF5 ids never cross between them. vh5 therefore opens files by path; an
``h5py.Dataset`` passed to :func:`read_many_slices` is re-opened by dataset name from the
very file h5py has open: by the open file's current absolute name (``/proc/self/fd/N`` of
h5py's descriptor on Linux) or the absolute given name, whichever has the device and inode
of h5py's descriptor (checked before and after opening); a name that is not h5py's file (a
relative name after ``os.chdir``, a file replaced since h5py opened it) is refused, never
read in its place. h5py itself is never imported by vh5.

File locking: HDF5 >= 1.10 locks files. Two instances may both open a file read-only, but a
file that h5py holds open for writing (mode ``"r+"``, ``"w"``, ``"a"``) is refused by vh5
(a :class:`vh5.HDF5Error` whose message says "unable to lock the file" and gives this hint,
both from :class:`vh5.File` and from :func:`read_many_slices` of an ``h5py.Dataset``)
unless the environment variable ``HDF5_USE_FILE_LOCKING=FALSE`` is set *before* either
library opens the file. vh5 flushes a writable h5py file before
reading it so the data h5py wrote is on disk.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref

import numpy as np

from . import _dtypes
from ._args import name_arg as _name_arg, path_arg as _path_arg, with_lock_hint as _with_lock_hint
from ._errors import Error, make_error
from ._lib import VH5_SLICES_CLIP, VH5_SLICES_CONVERT, Array, DatasetInfo, check, lib

__all__ = ["File", "Dataset", "read_many_slices"]


def _close_id(ident: int) -> None:
    # Called from weakref.finalize: never raise (interpreter may be shutting down).
    try:
        lib().vh5_close(ident)
    except Exception:  # pragma: no cover - best effort at exit
        pass


class _Handle:
    """An open vh5 id, closed exactly once by :meth:`close` or at garbage collection."""

    __slots__ = ("_id", "_finalizer", "__weakref__")

    def __init__(self, ident: int):
        self._id = ident
        self._finalizer = weakref.finalize(self, _close_id, ident)

    @property
    def id(self) -> int:
        """The vh5 (libhdf5 ``hid_t``) id; raises :class:`vh5.InvalidHandleError` once closed.
        It belongs to vh5's libhdf5: never pass it to h5py."""
        if not self._finalizer.alive:
            raise make_error(14, "VH5_ERR_INVALID_HANDLE", f"{type(self).__name__} is closed")
        return self._id

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Close the handle (idempotent)."""
        if self._finalizer.alive:
            self._finalizer.detach()
            check(lib().vh5_close(self._id))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class File(_Handle):
    """An HDF5 file opened through vh5's libhdf5: read-only (mode ``"r"``, the default) or
    read-write (mode ``"r+"``, needed by :func:`vh5.write_many_slices`).

    Use as a context manager or call :meth:`close`; an unreferenced File is closed at
    garbage collection. Datasets opened from it stay valid after the File is closed (HDF5
    keeps the file open until its last object is closed).

    Args:
        path (str | os.PathLike): file name.
        mode (str): ``"r"`` (read-only) or ``"r+"`` (read-write; the file must exist).
        allow_external (bool): security switch, default False: datasets that point at other
            files (raw data in external files, virtual datasets, paths through external
            links) are refused (vh5.UnsupportedError naming the dataset and its target) —
            a crafted file could otherwise make a read return any file this process may
            read. True allows them for datasets opened from this File (trusted files only).

    Raises:
        TypeError: ``path`` is not str, bytes or os.PathLike.
        ValueError: another mode; an embedded NUL byte in ``path``.
        vh5.IoError, vh5.HDF5Error: missing file, permission denied, not an HDF5 file;
            vh5.HDF5Error "unable to lock the file" when another libhdf5 (h5py) holds it
            for writing: the message then ends with a hint on ``HDF5_USE_FILE_LOCKING``
            (see the module docs).

    Thread-safety: a File may be shared by threads; vh5 serialises libhdf5 calls internally.

    Pickling: a File (and a Dataset) pickles as its absolute path, mode and options and is
    reopened lazily, on first use, through a per-process cache of open files in the
    receiving process (:mod:`vh5._pickle`); a writable one raises ``TypeError`` unless
    :func:`vh5.allow_pickling` was called on it.
    """

    __slots__ = ("filename", "mode", "_abspath", "allow_external")

    def __init__(self, path, mode: str = "r", *, allow_external: bool = False):
        if mode not in ("r", "r+"):
            raise ValueError(f"vh5.File supports modes 'r' (read-only) and 'r+' (read-write), not {mode!r}")
        self.filename = _path_arg(path, "path")
        self._abspath = os.path.abspath(self.filename)  # what a pickled copy reopens
        self.mode = mode
        self.allow_external = bool(allow_external)  # kept: a pickled copy reopens the same way
        out = ctypes.c_int64(0)
        flags = (1 if mode == "r+" else 0) | (2 if allow_external else 0)
        try:
            check(lib().vh5_file_open(os.fsencode(self.filename), flags, ctypes.byref(out)))
        except Error as e:
            raise _with_lock_hint(e) from None
        super().__init__(out.value)

    def dataset(self, name: str) -> "Dataset":
        """Open the dataset at path ``name`` (str, or UTF-8 bytes; e.g. ``"/group/data"``).

        Raises:
            TypeError: ``name`` is not str or bytes; ValueError: an embedded NUL byte.
            vh5.NotFoundError: no object of that name; vh5.InvalidHandleError: File closed or
            ``name`` is not a dataset; vh5.HDF5Error: libhdf5 failed.
        """
        return Dataset(self, name)

    __getitem__ = dataset

    def __reduce__(self):
        """Pickles as (absolute path, mode, options); see :mod:`vh5._pickle` (writable
        files refuse unless :func:`vh5.allow_pickling` was called on them)."""
        from ._pickle import reduce_file

        return reduce_file(self)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<vh5.File {self.filename!r} ({state})>"


LAYOUT_NAMES = {0: "contiguous", 1: "chunked", 2: "compact", 3: "virtual"}
FILTER_NAMES = {1: "gzip", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset"}
_UNLIMITED = 2**64 - 1


class Dataset(_Handle):
    """An HDF5 dataset opened through vh5: extent, chunking, element type, and the source of
    :func:`read_many_slices`.

    Attributes:
        name (str): the dataset path inside the file.
        file (File): the file it came from.
        shape (tuple[int, ...]): current extent in elements.
        maxshape (tuple[int | None, ...]): maximum extent, None for unlimited axes (as h5py).
        dtype (numpy.dtype | None): the element type *as stored in the file*, byte order
            included (e.g. ``dtype('>f4')``), like ``h5py.Dataset.dtype``; compound and other
            fixed-size types are ``dtype('V<itemsize>')``; None when vh5 cannot read the type
            (variable-length strings, vlen, references: reads raise
            :class:`vh5.UnsupportedError`). Reads always deliver *native* byte order: the
            destination dtype is ``dtype.newbyteorder('=')``.
        chunks (tuple[int, ...] | None): chunk shape in elements, None when not chunked.
        layout (str): ``"contiguous"``, ``"chunked"``, ``"compact"`` or ``"virtual"``.
        filters (tuple[str | int, ...]): filter pipeline in order (``"gzip"``, ``"shuffle"``,
            ``"fletcher32"``, ... or the numeric id of a plugin filter).
        fillvalue: the fill value (numpy scalar of the native dtype) read for unallocated
            chunks, or None when there is none or it is not representable here.
        ndim (int), size (int): number of axes and of elements.
    """

    __slots__ = ("name", "file", "shape", "maxshape", "dtype", "chunks", "layout", "filters", "fillvalue")

    def __init__(self, file: File, name: str):
        self.file = file
        self.name = name = _name_arg(name, "dataset name")
        out = ctypes.c_int64(0)
        check(lib().vh5_dataset_open(file.id, name.encode("utf-8", "surrogateescape"), ctypes.byref(out)))
        super().__init__(out.value)
        info = DatasetInfo()
        try:
            check(lib().vh5_dataset_get_info(self._id, ctypes.byref(info)))
        except BaseException:
            self.close()
            raise
        nd = int(info.ndim)
        self.shape = tuple(int(info.shape[i]) for i in range(nd))
        self.maxshape = tuple(None if info.maxshape[i] == _UNLIMITED else int(info.maxshape[i]) for i in range(nd))
        self.chunks = tuple(int(info.chunk[i]) for i in range(nd)) if info.chunked else None
        self.layout = LAYOUT_NAMES.get(int(info.layout), str(int(info.layout)))
        self.filters = tuple(FILTER_NAMES.get(int(f), int(f)) for f in info.filter_id[: min(int(info.nfilters), 16)])
        self.dtype = None if info.dtype == 0 else _dtypes.to_numpy(info.dtype, info.itemsize, info.byte_order)
        self.fillvalue = None
        if self.dtype is not None and info.has_fill_value and info.itemsize <= 16:
            native = self.dtype.newbyteorder("=") if self.dtype.itemsize > 1 else self.dtype
            self.fillvalue = np.frombuffer(bytes(info.fill_value)[: info.itemsize], dtype=native)[0]

    def __reduce__(self):
        """Pickles as (file, dataset path, metadata) and reopens lazily through a per-process
        cache; see :mod:`vh5._pickle`."""
        from ._pickle import reduce_dataset

        return reduce_dataset(self)

    @property
    def ndim(self) -> int:
        """Number of axes (0 for a scalar dataset)."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (product of :attr:`shape`)."""
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self) -> str:
        dt = self.dtype.str if self.dtype is not None else None
        return f"<vh5.Dataset {self.name!r} shape={self.shape} dtype={dt} chunks={self.chunks}>"


# ----------------------------------------------------------------------------------------
# many-slice reads


def _is_h5py_dataset(obj) -> bool:
    """True for an h5py.Dataset, recognised without importing h5py."""
    mod = type(obj).__module__ or ""
    return mod.startswith("h5py") and hasattr(obj, "file") and hasattr(obj, "name") and hasattr(obj, "id")


#: h5py drivers (``h5py.File.driver``) whose file is one ordinary file on disk that vh5 can
#: reopen by its name and read the same bytes from. Every other driver is refused: "core"
#: (in memory; a file of that name on disk, if any, is not its content), "fileobj" (a Python
#: file-like object), "family" (several member files), "mpio"/"mpiposix" (parallel I/O),
#: "ros3" (S3 over HTTP), "split"/"multi" (h5py reports them as "unknown").
REOPENABLE_DRIVERS = frozenset({"sec2", "stdio", "direct", "windows"})

_DRIVER_REASONS = {
    "core": "an in-memory (core driver) file: its content lives in h5py's memory, and a file "
    "of that name on disk, if any, is not it",
    "fileobj": "a Python file-like object (driver 'fileobj'), not a file on disk",
    "family": "a family of member files (driver 'family'), not one file vh5 can open by name",
    "mpio": "a file opened for parallel MPI I/O (driver 'mpio')",
    "mpiposix": "a file opened for parallel MPI I/O (driver 'mpiposix')",
    "ros3": "a read-only S3 object (driver 'ros3'), not a local file",
}


def _open_h5py(src):
    """Open an h5py dataset's file and dataset through vh5; returns (dataset, file).

    Raises vh5.UnsupportedError for an h5py file whose driver is not in
    :data:`REOPENABLE_DRIVERS` (in-memory, file-like, family, parallel, S3, split files)."""
    h5file = src.file
    driver = getattr(h5file, "driver", None)
    filename = getattr(h5file, "filename", None)
    if driver not in REOPENABLE_DRIVERS or not isinstance(filename, str):
        what = _DRIVER_REASONS.get(driver, f"a file opened with the h5py driver {driver!r}")
        raise make_error(
            4,  # VH5_ERR_UNSUPPORTED
            "VH5_ERR_UNSUPPORTED",
            f"the h5py file behind {src.name!r} ({filename!r}) is {what}; vh5 reads through "
            "its own libhdf5 by reopening a single file on disk by its path (h5py drivers "
            f"{', '.join(sorted(REOPENABLE_DRIVERS))}), so it cannot read this one: read it "
            "with h5py, or write it to a file on disk first",
        )
    path, ident = _same_file_path(h5file, driver, filename, src.name)
    if getattr(h5file, "mode", "r") != "r":
        # Our libhdf5 reads the file from disk: make what h5py wrote visible first.
        h5file.flush()
    f = File(path)  # adds the HDF5_USE_FILE_LOCKING hint on a lock failure
    if ident is not None and not _same_inode(path, ident):
        # Renamed or replaced between the check and the open: never read the wrong file.
        f.close()
        raise make_error(
            9,  # VH5_ERR_IO
            "VH5_ERR_IO",
            f"the file h5py has open for {src.name!r} ({filename!r}) was renamed or replaced while "
            f"vh5 reopened it as {path!r}; vh5 refuses to read a different file",
        )
    try:
        return Dataset(f, src.name), f
    except BaseException:
        f.close()
        raise


def _h5py_fd(h5file, driver):
    """The OS file descriptor h5py's libhdf5 reads the file through, or None when h5py does
    not give one: only the sec2 driver (h5py's default) hands out its descriptor through
    ``get_vfd_handle``; for other drivers the value is a pointer into that libhdf5."""
    if driver != "sec2":
        return None
    try:
        handle = h5file.id.get_vfd_handle()
    except Exception:
        return None
    if not isinstance(handle, int) or handle < 0:
        return None
    try:
        os.fstat(handle)
    except OSError:
        return None
    return handle


def _same_inode(path, st) -> bool:
    try:
        p = os.stat(path)
    except OSError:
        return False
    return (p.st_dev, p.st_ino) == (st.st_dev, st.st_ino)


def _same_file_path(h5file, driver, filename, name):
    """(absolute path, os.stat_result or None): a name of the very file h5py has open, for
    vh5's libhdf5 to open, and the identity to check it against after opening.

    ``h5py.File.filename`` is the name as given to h5py: a relative one names another file
    after ``os.chdir``, and any name may have been renamed or replaced since. With h5py's
    file descriptor (sec2 driver) the candidates are the open file's current name
    (``/proc/self/fd/N`` on Linux) and the absolute given name; one is accepted only when its
    device and inode are those of the descriptor (``os.stat`` vs ``os.fstat``). The path
    returned is an ordinary absolute name (never ``/proc/self/fd/N``, which would mean
    another file in another process, e.g. once pickled). Without a descriptor (other
    drivers) an absolute given name is used as is and a relative one refused. Raises
    vh5.IoError naming the names when no candidate is h5py's file."""
    fd = _h5py_fd(h5file, driver)
    given = os.path.abspath(filename)
    if fd is None:
        if os.path.isabs(filename):
            return filename, None
        why = (
            "h5py gives no file descriptor to check it against (driver "
            f"{driver!r}), and the name is relative (the working directory may have changed since h5py opened it)"
        )
    else:
        st = os.fstat(fd)
        cands = []
        try:
            cands.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
        cands.append(given)
        for cand in cands:
            if os.path.isabs(cand) and _same_inode(cand, st):
                return cand, st
        why = "it is not the file h5py has open (device and inode differ, or it no longer exists)"
        if len(cands) > 1 and cands[0] != given:
            why += f"; h5py's file is now {cands[0]!r}"
    raise make_error(
        9,  # VH5_ERR_IO
        "VH5_ERR_IO",
        f"cannot reopen the file h5py has open for {name!r}: h5py opened {filename!r}, which now "
        f"resolves to {given!r}, but {why}; vh5 refuses to read a different file. Open it with "
        "vh5.File(absolute_path) instead",
    )


def resolve_source(src):
    """(vh5 Dataset, list of handles to close after the call) for a supported source."""
    if isinstance(src, Dataset):
        return src, []
    if _is_h5py_dataset(src):
        d, f = _open_h5py(src)
        return d, [d, f]
    raise TypeError(
        f"src must be a vh5.Dataset or an h5py.Dataset, not {type(src).__name__} "
        "(numpy sources go with a numpy dst or a vh5.Dataset dst)"
    )


_COORD_NAMES = ("src_start", "dst_start", "count", "src_step", "dst_step")


def coordinate_tables(ndim: int, src_start, dst_start, count, src_step=None, dst_step=None):
    """Broadcast the coordinate arrays into C-contiguous uint64 tables of shape (nslices, ndim).

    Each argument is an integer array-like of shape ``(ndim,)`` or ``(nslices, ndim)``; steps
    may be None (default 1, passed to the library as NULL). Returns a list of 5 arrays (None
    where a step was None) and nslices.

    Raises:
        TypeError: a coordinate array is not of an integer dtype.
        ValueError: negative value (naming array, row and axis), not 1-D/2-D, wrong number of
            columns, or row counts that do not broadcast.
    """
    given = [src_start, dst_start, count, src_step, dst_step]
    fast = _fast_tables(ndim, given)
    if fast is not None:
        return fast
    arrays = []
    for name, a in zip(_COORD_NAMES, given):
        if a is None:
            if name in ("src_step", "dst_step"):
                arrays.append(None)
                continue
            raise TypeError(f"{name} is required")
        arr = np.asarray(a)
        if arr.dtype.kind not in "iu":
            if arr.size == 0 and arr.dtype.kind in "fO":
                arr = arr.astype(np.uint64)
            else:
                raise TypeError(f"{name} must hold integers, not {arr.dtype}")
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
        rows = {n: (a.shape[0] if a.ndim == 2 else "1-D") for n, a in zip(_COORD_NAMES, arrays) if a is not None}
        raise ValueError(f"coordinate arrays do not broadcast to (nslices, {ndim}): rows {rows}") from None
    out = [
        None if a is None else np.ascontiguousarray(np.broadcast_to(a, shapes), dtype=np.uint64)
        for a in arrays
    ]
    return out, shapes[0]


_U64 = np.dtype(np.uint64)
_I64 = np.dtype(np.int64)


def _fast_tables(ndim: int, given):
    """The common case of :func:`coordinate_tables` without broadcasting: every given table a
    C-contiguous 2-D uint64 (or non-negative int64) ndarray of shape (nslices, ndim), same
    nslices. Returns None when the general path is needed (it also produces the errors)."""
    nslices = None
    for a in given:
        if a is None:
            continue
        if type(a) is not np.ndarray or a.ndim != 2 or not a.flags.c_contiguous:
            return None
        dt = a.dtype
        if dt is not _U64 and dt != _U64:
            if dt != _I64 or (a.size and a.min() < 0):
                return None
        r, c = a.shape
        if c != ndim or (nslices is not None and r != nslices):
            return None
        nslices = r
    if nslices is None:
        return None
    return [None if a is None else (a if a.dtype == _U64 else a.view(_U64)) for a in given], nslices


_c_char = ctypes.c_char
_addressof = ctypes.addressof
_from_buffer = ctypes.c_char.from_buffer
_ndarray = np.ndarray


def _address(a: np.ndarray) -> int:
    """Address of element [0, ..., 0] of `a` (the cheap ctypes route for writable contiguous
    arrays, the array interface otherwise)."""
    try:
        return _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]


#: describe_array's per-(dtype, shape, strides) constants, bounded.
_ARRAY_CACHE: dict = {}
_ARRAY_CACHE_MAX = 256


def _array_template(dst: np.ndarray):
    key = (dst.dtype, dst.shape, dst.strides)
    ent = _ARRAY_CACHE.get(key)
    if ent is not None:
        return ent
    code, itemsize, order = _dtypes.from_numpy(dst.dtype)
    if order not in (_dtypes.ORDER_NONE, _dtypes.NATIVE_ORDER):
        raise make_error(
            7,
            "VH5_ERR_DTYPE",
            f"dst has non-native byte order {dst.dtype.str}; use a native-order array "
            "(vh5 moves elements in native memory order)",
        )
    nd = dst.ndim
    lo = hi = 0
    if dst.size != 0:
        hi = itemsize
        for n, st in zip(dst.shape, dst.strides):
            reach = (n - 1) * st
            if reach < 0:
                lo += reach
            else:
                hi += reach
    shape = (ctypes.c_uint64 * max(nd, 1))(*dst.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*dst.strides)
    ent = (code, itemsize, lo, hi - lo, nd, ctypes.cast(shape, ctypes.POINTER(ctypes.c_uint64)), ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), shape, strides)
    if len(_ARRAY_CACHE) >= _ARRAY_CACHE_MAX:
        _ARRAY_CACHE.clear()
    _ARRAY_CACHE[key] = ent
    return ent


def describe_array(dst: np.ndarray):
    """A ``vh5_array`` describing numpy array ``dst`` (any layout) and the objects that must
    stay alive while it is used (shape/strides tables)."""
    code, itemsize, lo, span, nd, shape_p, strides_p, shape, strides = _array_template(dst)
    ptr = _address(dst)
    a = Array(ptr + lo, span, -lo, code, itemsize, nd, shape_p, strides_p)
    return a, (shape, strides)


_TLS = threading.local()
_READ_FN = None


def _read_fn():
    """The ctypes function ``vh5_read_many_slices`` (looked up once)."""
    global _READ_FN
    fn = _READ_FN
    if fn is None:
        fn = _READ_FN = lib().vh5_read_many_slices
    return fn


def _dst_struct(dst: np.ndarray) -> Array:
    """The ``vh5_array`` describing ``dst`` (same fields as :func:`describe_array`), from a
    per-thread cache keyed by (dtype, shape, strides): only its ``base`` is set per call. The
    struct keeps its shape/strides tables alive; per thread, so a call releasing the GIL
    never sees another thread's ``base``."""
    try:
        cache = _TLS.arrays
    except AttributeError:
        cache = _TLS.arrays = {}
    key = (dst.dtype, dst.shape, dst.strides)
    ent = cache.get(key)
    if ent is None:
        code, itemsize, lo, span, nd, shape_p, strides_p, shape, strides = _array_template(dst)
        if len(cache) >= _ARRAY_CACHE_MAX:
            cache.clear()
        ent = cache[key] = (Array(0, span, -lo, code, itemsize, nd, shape_p, strides_p), lo, shape, strides)
    arr = ent[0]
    try:
        ptr = _addressof(_from_buffer(dst))
    except (TypeError, ValueError, BufferError):
        ptr = dst.__array_interface__["data"][0]
    arr.base = ptr + ent[1]
    return arr


def read_many_slices(
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
            ``src.dtype`` in native byte order (big-endian files are delivered natively)
            unless ``convert`` is True (libhdf5 converts, e.g. int16 -> float64). Written
            in place. A 0-d dataset is read with a 0-d dst and ``(nslices, 0)`` tables.
        src_start, dst_start, count: integer array-likes of shape ``(ndim,)`` or
            ``(nslices, ndim)``, broadcast together (a 1-D array applies to every row).
        src_step, dst_step: like the above, or None for 1 on every axis.
        clip: versioned-hdf5 semantics: clip every count to both extents and skip rows that
            become empty instead of raising :class:`vh5.OutOfBoundsError`.
        convert: let libhdf5 convert between the file type and ``dst.dtype``.

    Returns:
        None. ``dst`` is modified in place.

    Raises:
        vh5.OutOfBoundsError: a row reaches outside src or dst (without ``clip``); the message
            names the row and axis.
        vh5.InvalidArgumentError: ndim mismatch, step 0, read-only dst...
        vh5.DtypeError: dtype mismatch without ``convert``; non-native dst byte order.
        vh5.HDF5Error: libhdf5 failed (message carries its error stack).
        vh5.IoError, vh5.NotFoundError: re-opening an h5py dataset failed.
        TypeError / ValueError: bad coordinate arrays (non-integer, negative, wrong shape)
            or a non-numpy / read-only ``dst``.

    Memory: vh5 writes only inside ``dst``'s own elements and keeps no pointer after the
    call. The GIL is released during the library call (ctypes does so for every call), so
    other threads run meanwhile; do not let another thread resize or free ``dst``.
    """
    if isinstance(src, np.ndarray) and isinstance(dst, Dataset):
        from .writes import write_many_slices

        return write_many_slices(src, dst, src_start, dst_start, count, src_step, dst_step, clip=clip, convert=convert)
    if not isinstance(dst, np.ndarray):
        raise TypeError(f"dst must be a numpy.ndarray, not {type(dst).__name__}")
    if not dst.flags.writeable:
        raise ValueError("dst must be writeable")
    if type(src) is Dataset:
        # Fast path (a vh5.Dataset, nothing to close): no try/finally, no broadcasting; the
        # common table layout is handled inline (one Python frame: ~2 µs of a ~6 µs call).
        ndim = len(src.shape)
        addrs = []
        nslices = -1
        for a in (src_start, dst_start, count) if src_step is None and dst_step is None else (src_start, dst_start, count, src_step, dst_step):
            if a is None:
                addrs.append(None)
                continue
            if type(a) is not _ndarray or a.ndim != 2:
                break
            dt = a.dtype
            if dt is not _U64 and dt != _U64 and (dt != _I64 or (a.size and a.min() < 0)):
                break
            r, k = a.shape
            if k != ndim or (nslices >= 0 and r != nslices):
                break
            nslices = r
            try:
                # Succeeds only for a writable C-contiguous buffer (numpy refuses others).
                addrs.append(_addressof(_from_buffer(a)))
            except (TypeError, ValueError, BufferError):
                if not a.flags.c_contiguous:
                    break
                addrs.append(a.__array_interface__["data"][0])
        else:
            if nslices >= 0 and addrs[0] is not None and addrs[1] is not None and addrs[2] is not None:
                if len(addrs) == 3:
                    addrs += (None, None)
                if not src._finalizer.alive:
                    src.id  # raises InvalidHandleError
                # _dst_struct inlined: the per-thread cached vh5_array for dst's layout.
                try:
                    cache = _TLS.arrays
                except AttributeError:
                    cache = _TLS.arrays = {}
                ent = cache.get((dst.dtype, dst.shape, dst.strides))
                if ent is None:
                    arr = _dst_struct(dst)
                else:
                    arr = ent[0]
                    try:
                        ptr = _addressof(_from_buffer(dst))
                    except (TypeError, ValueError, BufferError):
                        ptr = dst.__array_interface__["data"][0]
                    arr.base = ptr + ent[1]
                flags = (VH5_SLICES_CLIP if clip else 0) | (VH5_SLICES_CONVERT if convert else 0)
                status = (_READ_FN or _read_fn())(src._id, arr, nslices, addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], flags)
                if status:
                    check(status)
                return
        tables, nslices = coordinate_tables(ndim, src_start, dst_start, count, src_step, dst_step)
        _call_read(src, dst, tables, nslices, clip=clip, convert=convert)
        return
    if isinstance(src, np.ndarray):
        if convert:
            raise ValueError("convert=True is not supported for numpy -> numpy copies (dtypes must match)")
        from .writes import copy_many_slices

        return copy_many_slices(src, dst, src_start, dst_start, count, src_step, dst_step, clip=clip)
    dset, to_close = resolve_source(src)
    try:
        tables, nslices = coordinate_tables(dset.ndim, src_start, dst_start, count, src_step, dst_step)
        _call_read(dset, dst, tables, nslices, clip=clip, convert=convert)
    finally:
        for h in to_close:
            h.close()


def _call_read(dset: Dataset, dst: np.ndarray, tables, nslices: int, *, clip: bool, convert: bool):
    arr, keep = describe_array(dst)
    s, d, c, ss, ds = tables
    s, d, c = _address(s), _address(d), _address(c)
    if ss is not None:
        ss = _address(ss)
    if ds is not None:
        ds = _address(ds)
    flags = (VH5_SLICES_CLIP if clip else 0) | (VH5_SLICES_CONVERT if convert else 0)
    status = lib().vh5_read_many_slices(dset.id, ctypes.byref(arr), nslices, s, d, c, ss, ds, flags)
    del keep
    if status:
        check(status)


def set_num_threads(n: int) -> None:
    """Set how many threads :func:`read_many_slices` may use to decompress and scatter chunks
    (process-wide; ``vh5_set_num_threads``). 1 = no extra threads; 0 = the default (env
    ``VH5_THREADS``, else the cores available). At most 1024 (``VH5_MAX_THREADS``):
    larger values raise :class:`InvalidArgumentError`; a call never starts more workers than
    twice the cores (at least 4). ``n`` must be an integer (``TypeError`` for 2.5)."""
    import operator

    n = operator.index(n)
    if not 0 <= n < 2**32:
        raise ValueError(f"n must be in [0, 2**32), not {n}")
    check(lib().vh5_set_num_threads(n))


def get_num_threads() -> int:
    """The number of threads :func:`read_many_slices` may use now (``vh5_get_num_threads``)."""
    return int(lib().vh5_get_num_threads())
