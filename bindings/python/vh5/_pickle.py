"""Pickling of :class:`vh5.File` and :class:`vh5.Dataset` (for Dask, multiprocessing, ...).

HDF5 ids mean nothing in another process, so a handle pickles as what is needed to open it
again: the file's **absolute path** (taken when the file was opened), the **mode**, the
**options** given to ``vh5.File``, and for a dataset its **path** plus the metadata seen at
pickling time (shape, dtype, chunks, ...). Unpickling opens nothing: the result is a *lazy*
handle (an instance of a private subclass, so ``isinstance(h, vh5.Dataset)`` holds) whose
metadata attributes are available at once and which opens the file on first use, through the
per-process cache of :mod:`vh5._cache`. So a scheduler that never reads can unpickle a graph
without access to the file, and the tasks of one worker share one open file.

On first use a lazy dataset checks that the dataset still has the pickled ndim, shape, dtype
and chunk shape, and raises :class:`vh5.InvalidHandleError` naming what changed otherwise (a
Dask array built on the old metadata would read wrong blocks). Open failures raise vh5's own
error (``vh5.IoError``, ``vh5.NotFoundError``, ...) with the path, the dataset, the process
id and the host name in the message: that is what a Dask worker reports to the client.

**Writable handles** (mode ``"r+"``) refuse to pickle with a ``TypeError``: several
processes writing one HDF5 file corrupt it (libhdf5 has no multi-writer support). Call
:func:`allow_pickling` on the handle to pickle it anyway when you serialise the writes
yourself; its unpickled copies reopen the file ``"r+"`` and may be pickled again.

Closing a lazy handle only drops its own reference to the cached object (which others may
share); the file is closed when no handle and no cache entry uses it.
"""

from __future__ import annotations

import copyreg
import inspect
import os
import socket
import weakref

from . import _cache
from ._datasets import Dataset
from ._errors import Error, error, with_message
from ._files import File

__all__ = ["allow_pickling", "file_key", "lazy_copy", "resolve"]

_ALLOWED: weakref.WeakSet = weakref.WeakSet()
_FIXED_PARAMS = frozenset({"self", "path", "mode"})


def allow_pickling(handle):
    """Let a writable (``"r+"``) :class:`vh5.File` or :class:`vh5.Dataset` be pickled, and
    return it. Only do this when at most one process writes the file at a time: HDF5 files
    written by several processes at once are corrupted. Read-only handles always pickle."""
    if not isinstance(handle, (File, Dataset)):
        raise TypeError(f"allow_pickling takes a vh5.File or vh5.Dataset, not {type(handle).__name__}")
    _ALLOWED.add(handle)
    return handle


def _allowed(handle) -> bool:
    if handle in _ALLOWED:
        return True
    return isinstance(handle, Dataset) and handle.file in _ALLOWED


def _file_options(f: File) -> tuple:
    """The keyword options ``f`` was opened with, as a sorted tuple of (name, value) pairs:
    every parameter of ``File.__init__`` besides path and mode, read back from the attribute
    of the same name (or with a leading underscore). An option that cannot be read back
    makes the handle refuse to pickle rather than reopen with a different behaviour."""
    opts = []
    for p in inspect.signature(File.__init__).parameters.values():
        if p.name in _FIXED_PARAMS or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        for attr in (p.name, "_" + p.name):
            try:
                opts.append((p.name, getattr(f, attr)))
                break
            except AttributeError:
                continue
        else:
            raise TypeError(
                f"cannot pickle vh5.File {f.filename!r}: its option {p.name!r} is not stored on "
                "the handle, so the receiving process could not reopen it the same way"
            )
    return tuple(sorted(opts))


def file_key(f: File) -> tuple:
    """``(absolute path, mode, options)``: how the cache of another process reopens ``f``."""
    if isinstance(f, _LazyFile):
        return f._key
    try:
        path = f._abspath
    except AttributeError:  # pragma: no cover - a File made before _abspath existed
        path = os.path.abspath(f.filename)
    return (path, f.mode, _file_options(f))


def _refuse_writable(handle, path: str):
    what = "vh5.Dataset " + repr(handle.name) + " of" if isinstance(handle, Dataset) else "vh5.File"
    raise TypeError(
        f"cannot pickle {what} {path!r} opened for writing (mode 'r+'): several processes "
        "writing one HDF5 file corrupt it. Open it read-only (vh5.File(path)) to share it, "
        "or call vh5.allow_pickling(handle) first if only one process writes at a time"
    )


_META = ("shape", "maxshape", "dtype", "chunks", "layout", "filters", "fillvalue", "_file_itemsize")


def reduce_file(f: File):
    """``File.__reduce__``: (rebuild function, arguments)."""
    key = file_key(f)
    allowed = _allowed(f)
    if key[1] != "r" and not allowed:
        _refuse_writable(f, key[0])
    return (_rebuild_file, (key, allowed))


#: Datasets that pickle as something else: dataset -> function giving the object to pickle
#: in its place (see :func:`pickle_as`).
_PICKLE_AS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pickle_as(d: Dataset, stand_in) -> None:
    """Make ``d`` pickle as ``stand_in()`` (called when pickled; may raise to refuse): a
    dataset on an id vh5 cannot reopen as such in another process (an h5py dataset adopted by
    the h5py-bound build) travels as a lazy handle reopened by path."""
    _PICKLE_AS[d] = stand_in


def has_stand_in(d) -> bool:
    """Whether :func:`pickle_as` was called on ``d``."""
    try:
        return d in _PICKLE_AS
    except TypeError:
        return False


def _identity(x):
    return x


def reduce_dataset(d: Dataset):
    """``Dataset.__reduce__``: (rebuild function, arguments)."""
    stand_in = _PICKLE_AS.get(d)
    if stand_in is not None:
        return (_identity, (stand_in(),))
    key = file_key(d.file)
    allowed = _allowed(d)
    if key[1] != "r" and not allowed:
        _refuse_writable(d, key[0])
    meta = tuple(getattr(d, m) for m in _META)
    return (_rebuild_dataset, (key, d.name, meta, allowed))


def _rebuild_file(key, allowed):
    f = _LazyFile(key)
    if allowed:
        _ALLOWED.add(f)
    return f


def _rebuild_dataset(key, name, meta, allowed):
    d = _LazyDataset(_LazyFile(key), name, meta)
    if allowed:
        _ALLOWED.add(d)
    return d


def lazy_copy(handle):
    """A lazy handle on the same file / dataset as ``handle`` (what unpickling it gives, made
    without pickling; nothing is opened). It stays usable after ``handle`` is closed."""
    if isinstance(handle, (_LazyFile, _LazyDataset)):
        return handle
    if isinstance(handle, Dataset):
        d = _LazyDataset(_LazyFile(file_key(handle.file)), handle.name, tuple(getattr(handle, m) for m in _META))
        if _allowed(handle):
            _ALLOWED.add(d)
        return d
    f = _LazyFile(file_key(handle))
    if _allowed(handle):
        _ALLOWED.add(f)
    return f


def resolve(handle):
    """The open (cached) :class:`vh5.File` / :class:`vh5.Dataset` behind a lazy handle, or
    ``handle`` itself when it is an ordinary one."""
    if isinstance(handle, (_LazyFile, _LazyDataset)):
        return handle._resolve()
    return handle


def _closed_error(handle):
    kind = "Dataset" if isinstance(handle, Dataset) else "File"
    return error("VH5_ERR_INVALID_HANDLE", f"{kind} is closed")


def _with_context(e: Error, path: str, name) -> Error:
    where = f"reopening {path!r}" + (f" dataset {name!r}" if name is not None else "")
    where += f" in process {os.getpid()} on {socket.gethostname()}"
    return with_message(e, f"{where}: {e.message}")


class _Lazy:
    """Mixin overriding the handle machinery of :class:`vh5.hdf5._Handle`: the id and
    finalizer are the cached target's, resolved on first use; ``close`` drops the target."""

    __slots__ = ()

    # the read fast path reads ``_id`` / ``_finalizer`` directly: resolve those too
    @property
    def _id(self):
        return self._resolve()._id

    @property
    def _finalizer(self):
        return self._resolve()._finalizer

    @property
    def id(self) -> int:
        return self._resolve().id

    @property
    def closed(self) -> bool:
        return self._closed_here

    def close(self) -> None:
        self._closed_here = True
        self._target = None

    def _resolve(self):
        if self._closed_here:
            raise _closed_error(self)
        t = self._target
        if t is None or t.closed:
            t = self._target = self._open()
        return t


class _LazyFile(_Lazy, File):
    """An unpickled :class:`vh5.File`: opens through the per-process cache on first use."""

    __slots__ = ("_key", "_target", "_closed_here")

    def __init__(self, key):  # noqa: D107 - File.__init__ deliberately not called
        self._key = key
        self._target = None
        self._closed_here = False
        self.filename, self.mode = key[0], key[1]
        self._abspath = key[0]
        for k, v in key[2]:
            try:
                setattr(self, k, v)
            except AttributeError:
                pass  # an option File stores under another name; kept in _key

    def _open(self):
        try:
            return _cache.open_file(self._key)
        except Error as e:
            raise _with_context(e, self._key[0], None) from None


class _LazyDataset(_Lazy, Dataset):
    """An unpickled :class:`vh5.Dataset`: metadata from the pickle, opened on first use."""

    __slots__ = ("_target", "_closed_here")

    def __init__(self, file: _LazyFile, name: str, meta):  # noqa: D107
        self._target = None
        self._closed_here = False
        self.file = file
        self.name = name
        self._live = False  # the pickled extent (a lazy handle resolves nothing to show it)
        for m, v in zip(_META, meta):
            setattr(self, "_shape" if m == "shape" else m, v)

    def _open(self):
        key = self.file._key
        try:
            d = _cache.open_dataset(key, self.name)
        except Error as e:
            raise _with_context(e, key[0], self.name) from None
        changed = [
            f"{m} {getattr(self, m)!r} -> {getattr(d, m)!r}"
            for m in ("shape", "dtype", "chunks")
            if getattr(self, m) != getattr(d, m)
        ]
        if changed:
            raise error(
                "VH5_ERR_INVALID_HANDLE",
                f"dataset {self.name!r} of {key[0]!r} changed since this handle was pickled "
                f"({'; '.join(changed)}); rebuild the handle (and any Dask array on it)",
            )
        return d


# Pickling is registered here rather than with ``__reduce__`` methods on the classes, so the
# file and dataset modules never import this one (which imports them): the dependency runs
# one way. ``copyreg`` is consulted by pickle (and cloudpickle) before ``__reduce_ex__``.
for _cls in (File, _LazyFile):
    copyreg.pickle(_cls, reduce_file)
for _cls in (Dataset, _LazyDataset):
    copyreg.pickle(_cls, reduce_dataset)
