"""HDF5 files and groups opened through vh5's own libhdf5, navigated as in h5py.

:class:`File` opens a file by path (read-only, or ``"r+"``); it is also the root
:class:`Group`. Groups are dict-like: ``keys()``, ``values()``, ``items()``, iteration,
``in``, ``len``, ``get``, ``g["sub/x"]`` paths, ``visit`` / ``visititems``. Members are
listed by the library (``vh5_group_members``) in h5py's order (creation order for a group
that tracks it, else name order; ``visit`` in name order); datasets are :class:`vh5.Dataset`
objects.

Closing: as in h5py, :meth:`File.close` closes every :class:`vh5.Dataset` opened through
that File object; using one afterwards raises :class:`vh5.InvalidHandleError` naming the
dataset and the file (the file is really closed, not kept open behind a forgotten dataset).
A File that is garbage-collected without ``close()`` is closed once its last dataset goes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import weakref
from collections.abc import ItemsView, KeysView, Mapping, ValuesView

from ._args import escaped, name_arg, name_bytes, path_arg, shown_name, with_lock_hint
from ._datasets import Dataset
from ._errors import Error, InvalidArgumentError, NotFoundError, check, error
from ._handle import Handle
from ._lib import VH5_GROUP_RECURSIVE, lib
from ._protocol import two_call

__all__ = ["File", "Group", "Handle", "members", "open_files_of", "unregistered"]

#: Every File opened in this process (closed ones are skipped by :func:`open_files_of`),
#: under its lock (a set must not grow while another thread copies it).
_OPENED: weakref.WeakSet = weakref.WeakSet()
_OPENED_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    global _OPENED_LOCK
    _OPENED_LOCK = threading.Lock()  # another thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


#: Set (per thread) while :func:`unregistered` opens a File.
_UNREGISTERED = threading.local()


@contextlib.contextmanager
def unregistered():
    """Files opened by this thread inside the block are not listed by :func:`open_files_of`:
    the per-call reopen of an h5py source (``vh5._h5py.open_h5py``), closed at the end of
    that call, which other threads reading h5py sources meanwhile may share."""
    _UNREGISTERED.on = True
    try:
        yield
    finally:
        _UNREGISTERED.on = False


def open_files_of(st) -> list:
    """The open :class:`File` objects of this process on the file whose ``os.stat`` result is
    ``st`` (same device and inode, whatever name opened them)."""
    with _OPENED_LOCK:
        files = list(_OPENED)
    return [f for f in files if not f.closed and f._ident == (st.st_dev, st.st_ino)]


def _join(base: str, name: str) -> str:
    """The absolute path of ``name`` relative to the group at ``base``."""
    if name.startswith("/"):
        path = name
    else:
        path = base.rstrip("/") + "/" + name
    parts = [p for p in path.split("/") if p and p != "."]
    return "/" + "/".join(parts)


class _Values(ValuesView):
    """h5py's ``ValuesViewHDF5``: ``get(name)`` of every member, None where the link leads
    nowhere (a dangling soft link) instead of KeyError."""

    def __iter__(self):
        for key in self._mapping:
            yield self._mapping.get(key)


class _Items(ItemsView):
    """h5py's ``ItemsViewHDF5``: ``(name, get(name))`` pairs (see :class:`_Values`)."""

    def __iter__(self):
        for key in self._mapping:
            yield (key, self._mapping.get(key))


class _Navigation(Mapping):
    """h5py's group protocol over :func:`members` (shared by :class:`File` and :class:`Group`)."""

    __slots__ = ()

    # subclasses provide: _file (File), _path (absolute path of the group)

    def __getitem__(self, name):
        """The :class:`vh5.Dataset` or :class:`Group` at ``name`` (relative to this group, or
        absolute; ``"sub/x"`` paths go through groups).

        Raises:
            KeyError (:class:`vh5.NotFoundError`): no such object, a component of the path
                is a dataset, a dangling soft link, or (file opened with
                ``allow_external=True``) an external link whose file or object cannot be
                opened (missing, not HDF5), as h5py; the message names the file and the path.
            vh5.UnsupportedError: an external link (unless the file was opened with
                ``allow_external=True``) or an object that is neither a group nor a dataset.
            vh5.HDF5Error (a RuntimeError, as h5py's): the path goes through soft links that
                loop (``a -> b -> a``, or more than 16 in a row: "too many links").
            KeyError (vh5.NotFoundError): ``""`` (as h5py). TypeError: not str or bytes.
        """
        name = name_arg(name, "object name")
        f = self._file
        if not name:
            # h5py (libhdf5): "name parameter cannot be an empty string", a KeyError
            raise error("VH5_ERR_NOT_FOUND", f"{f.filename!r}: an empty name names no object (as in h5py)")
        path = _join(self._path, name)
        if path == "/":
            return f if isinstance(self, File) else Group(f, "/")
        try:
            return Dataset(f, path)
        except NotFoundError as e:
            _raise_if_loop(f, path, e)
            raise
        except InvalidArgumentError as e:
            # vh5_dataset_open's INVALID_ARGUMENT: the object exists and is not a dataset. That
            # it is a group only the message says (no status tells it short of listing the
            # group, vh5_group_members, whose cost grows with the group): its exact text.
            if e.message == f"{f.filename!r}: `{escaped(path)}` is a group, not a dataset":
                return Group(f, path)
            first = e
        except Error as e:
            first = e
        return _not_a_dataset(f, path, first)

    def __iter__(self):
        """Member names (link names) in h5py's order: creation order for a group that tracks it
        (written with h5py's ``track_order=True``, or any group whose creation property list
        has ``H5P_CRT_ORDER_TRACKED``), else name order (byte order). As h5py gives them:
        ``str``, or ``bytes`` for a name that is not UTF-8 (e.g. Latin-1
        ``b"temp\\xe9rature"``)."""
        return iter([shown_name(n) for _, n in members(self._file, self._path)])

    def __len__(self) -> int:
        """Number of links in the group."""
        return len(members(self._file, self._path))

    def __contains__(self, name) -> bool:
        """True when ``name`` (a member name or a path) names a link, as in h5py (a dangling
        soft link counts; opening it raises KeyError); False for ``""``.

        Raises:
            TypeError: ``name`` is not str or bytes (as h5py).
            vh5.HDF5Error (a RuntimeError, as h5py's): the path goes through soft links that
                loop (``a -> b -> a``: "too many links").
        """
        if not isinstance(name, (str, bytes)):
            raise TypeError(f"A name should be string or bytes, not {type(name)}")
        try:
            name = name_arg(name, "object name")
        except ValueError:
            return False
        if not name:
            return False
        path = _join(self._path, name)
        if path == "/":
            return True
        from ._links import link_exists, soft_link_loop, too_many_links

        if link_exists(self._file, path):
            return True
        if path.count("/") > 1:  # a loop before the last component: libhdf5 cannot look
            chain = soft_link_loop(self._file, path)
            if chain is not None:
                raise too_many_links(self._file, path, chain) from None
        return False

    def get(self, name, default=None, getclass=False, getlink=False):
        """The member at ``name`` (a name or path, as ``g[name]``), or ``default`` when
        nothing is there (h5py's ``Group.get``).

        ``getlink=True``: the link itself, not followed: :class:`vh5.HardLink`,
        :class:`vh5.SoftLink` (``.path``) or :class:`vh5.ExternalLink` (``.filename``,
        ``.path``); no file is opened for an external link, with or without
        ``allow_external``. ``getclass=True``: the class of the member (:class:`vh5.Group`,
        :class:`vh5.Dataset`) or, with ``getlink``, of the link. ``default`` when no link has
        that name (a dangling soft link has one); without ``getclass`` / ``getlink``, also
        where ``g[name]`` raises KeyError (a dangling soft link, an external link that cannot
        be followed), as h5py.

        Raises:
            KeyError (vh5.NotFoundError): ``getclass`` alone on a dangling soft link (h5py
                raises RuntimeError).
            vh5.HDF5Error (a RuntimeError, as h5py's): soft links that loop (see ``g[name]``).
            vh5.UnsupportedError: following an external link without ``allow_external``, an
                object that is neither a group nor a dataset (``getclass`` alone; h5py gives
                its ``Datatype`` class for a named datatype), a user-defined link class.
        """
        if not (getclass or getlink):
            try:
                return self[name]
            except KeyError:
                return default
        if name not in self:
            return default
        if not getlink:
            obj = self[name]
            return Group if isinstance(obj, Group | File) else type(obj)
        from ._links import link_value

        link = link_value(self._file, _join(self._path, name_arg(name, "object name")))
        return type(link) if getclass else link

    def keys(self):
        """A view of the member names (h5py's ``KeysViewHDF5``)."""
        return KeysView(self)

    def values(self):
        """A view of the members (datasets and groups, opened as iterated; None for a
        dangling soft link, as h5py gives)."""
        return _Values(self)

    def items(self):
        """A view of (name, member) pairs (member None for a dangling soft link, as in h5py)."""
        return _Items(self)

    def visit(self, func):
        """Call ``func(name)`` for every object below this group (names relative to it, a
        group before its members, each hard link once; soft and external links are not
        followed), stopping at and returning the first value that is not None. Names are
        ``str``, or ``bytes`` when not UTF-8 (as in h5py)."""
        for _, name in members(self._file, self._path, recursive=True):
            r = func(shown_name(name))
            if r is not None:
                return r
        return None

    def visititems(self, func):
        """Like :meth:`visit` with ``func(name, obj)``: ``obj`` the :class:`vh5.Dataset` or
        :class:`Group` (objects of other kinds, e.g. named datatypes, are skipped)."""
        for kind, name in members(self._file, self._path, recursive=True):
            if kind not in ("g", "d"):
                continue
            path = _join(self._path, name)
            obj = Group(self._file, path) if kind == "g" else Dataset(self._file, path)
            r = func(shown_name(name), obj)
            if r is not None:
                return r
        return None

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def _raise_if_loop(f: File, path: str, e: Error) -> None:
    """Raise h5py's RuntimeError (vh5.HDF5Error) "too many links" when ``path``, which could
    not be opened (``e``, a NotFoundError: vh5 reports a soft link loop as dangling), goes
    through soft links that loop."""
    from ._links import soft_link_loop, too_many_links

    chain = soft_link_loop(f, path)
    if chain is not None:
        raise too_many_links(f, path, chain) from e


def _not_a_dataset(f: File, path: str, first: Error):
    """``f[path]`` once opening ``path`` as a dataset failed with ``first`` (neither NOT_FOUND
    nor a group): a :class:`Group` after all, or the error h5py's ``__getitem__`` gives, told
    apart by the statuses of ``vh5_link_get`` (the link itself) and ``vh5_group_members``."""
    from ._links import ExternalLink, SoftLink, link_value

    try:
        link = link_value(f, path)
    except InvalidArgumentError as e:
        # A component before the last is not a group (the message names it): h5py's KeyError.
        _raise_if_loop(f, path, e)
        detail = e.message.removeprefix(f"{f.filename!r}: ").removeprefix(f"`{escaped(path)}`: ")
        raise error("VH5_ERR_NOT_FOUND", f"no object {shown_name(path)!r} in {f.filename!r}: {detail}") from None
    except Error:
        raise first from None
    if isinstance(link, ExternalLink) and f.allow_external:
        # Followed, and its file or object could not be opened (missing, not HDF5, no such
        # object): KeyError, as h5py (so get() gives the default and values() None).
        raise error(
            "VH5_ERR_NOT_FOUND",
            f"{f.filename!r}: the external link {shown_name(path)!r} to object {link.path!r} of file "
            f"{link.filename!r} cannot be followed: {first.message.removeprefix(f'{f.filename!r}: ')}",
        ) from None
    try:
        members(f, path, count_only=True)
    except NotFoundError as e:
        if isinstance(link, SoftLink):
            _raise_if_loop(f, path, e)
            raise e from None  # a dangling soft link: KeyError, as in h5py
        raise first from None  # e.g. damaged metadata: the dataset's own error says more
    except Error:
        raise first from None  # not a group either: the dataset's own error
    return Group(f, path)


def members(file: File, path: str, *, recursive: bool = False, count_only: bool = False):
    """``[(kind, name), ...]`` of the group at ``path`` in ``file`` (``vh5_group_members``):
    kind ``"g"`` group, ``"d"`` dataset, ``"t"`` named datatype, ``"e"`` external link,
    ``"s"`` dangling soft link, ``"?"`` other. ``path`` and the names are in the internal
    form of :func:`vh5._args.name_arg` (bytes that are not UTF-8 as surrogate escapes).
    Errors name the file."""
    c_path = name_bytes(path)
    fl = VH5_GROUP_RECURSIVE if recursive else 0
    fn = lib().vh5_group_members
    raw = two_call(
        file,
        lambda fid, buf, cap, n: fn(fid, c_path, fl, buf, cap, n),
        f"the members of {shown_name(path)!r}",
        size_only=count_only,
    )
    return [(chr(rec[0]), rec[1:].decode("utf-8", "surrogateescape")) for rec in raw.split(b"\0")[:-1]]


class Group(_Navigation):
    """A group of a :class:`File` (h5py-style, see the module docs). Holds no libhdf5 handle:
    members are listed through the file on each call, so a Group is valid as long as its
    File is open.

    Attributes:
        name (str | bytes): absolute path of the group (``"/"`` for the root); ``bytes``
            when the path is not UTF-8, as in h5py.
        file (File): the file it belongs to.
    """

    __slots__ = ("_file", "_path")

    def __init__(self, file: File, path: str):
        self._file = file
        self._path = _join("/", path)

    @property
    def name(self):
        """Absolute path: ``str``, or ``bytes`` when it is not UTF-8 (as h5py's)."""
        return shown_name(self._path)

    @property
    def file(self) -> File:
        return self._file

    def __repr__(self) -> str:
        return f"<vh5.Group {shown_name(self._path)!r} of {self._file.filename!r}>"


class File(Handle, _Navigation):
    """An HDF5 file opened through vh5's libhdf5: read-only (mode ``"r"``, the default) or
    read-write (mode ``"r+"``, needed by :func:`vh5.write_many_slices`). It is the root
    :class:`Group`: ``keys()``, ``f["grp/x"]``, ``visit``... (see the module docs).

    Use as a context manager or call :meth:`close`, which also closes the datasets opened
    through this File (as in h5py).

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
            for writing: the message then ends with a hint on ``HDF5_USE_FILE_LOCKING``.

    Thread-safety: a File may be shared by threads; vh5 serialises libhdf5 calls internally.

    Pickling: a File (and a Dataset) pickles as its absolute path, mode and options and is
    reopened lazily, on first use, through a per-process cache of open files in the
    receiving process (:mod:`vh5._pickle`); a writable one raises ``TypeError`` unless
    :func:`vh5.allow_pickling` was called on it.
    """

    __slots__ = ("filename", "mode", "_abspath", "allow_external", "_children", "_ident")

    def __init__(self, path, mode: str = "r", *, allow_external: bool = False):
        if mode not in ("r", "r+"):
            raise ValueError(f"vh5.File supports modes 'r' (read-only) and 'r+' (read-write), not {mode!r}")
        self.filename = path_arg(path, "path")
        self._abspath = os.path.abspath(self.filename)  # what a pickled copy reopens
        self.mode = mode
        self.allow_external = bool(allow_external)  # kept: a pickled copy reopens the same way
        self._children = weakref.WeakSet()
        out = ctypes.c_int64(0)
        flags = (1 if mode == "r+" else 0) | (2 if allow_external else 0)
        try:
            check(lib().vh5_file_open(os.fsencode(self.filename), flags, ctypes.byref(out)))
        except Error as e:
            raise with_lock_hint(e) from None
        super().__init__(out.value)
        try:
            st = os.stat(self.filename)
            self._ident = (st.st_dev, st.st_ino)
        except OSError:
            self._ident = None
        if not getattr(_UNREGISTERED, "on", False):
            with _OPENED_LOCK:
                _OPENED.add(self)

    @property
    def _file(self):
        return self

    @property
    def _path(self):
        return "/"

    @property
    def name(self) -> str:
        """``"/"``: the file is its root group (as in h5py)."""
        return "/"

    @property
    def file(self) -> File:
        return self

    def _closed_message(self) -> str:
        return f"vh5.File {self.filename!r} is closed"

    def dataset(self, name) -> Dataset:
        """Open the dataset at path ``name`` (str, or bytes: any bytes, as stored in the file;
        e.g. ``"/group/data"``, ``b"/temp\\xe9rature"``).

        Raises:
            TypeError: ``name`` is not str or bytes; ValueError: an embedded NUL byte.
            vh5.NotFoundError (a KeyError): no object of that name; vh5.InvalidArgumentError:
            ``name`` is not a dataset; vh5.InvalidHandleError: File closed; vh5.HDF5Error:
            libhdf5 failed. Messages name the file.
        """
        return Dataset(self, _join("/", name_arg(name, "dataset name")))

    def close(self) -> None:
        """Close the file and every :class:`vh5.Dataset` opened through this File object
        (idempotent). Using those datasets afterwards raises :class:`vh5.InvalidHandleError`.

        Every dataset and the file are closed even when one close fails (e.g. a read-write
        file whose flush hits a full disk): the File and its datasets are closed afterwards
        either way, and the first failure is raised."""
        first = None
        children = getattr(self, "_children", None)
        if children is not None:
            for d in list(children):
                try:
                    d._close_with_file()
                except Exception as e:  # noqa: BLE001 - re-raised below, after the file's close
                    first = first or e
        try:
            super().close()
        except Exception as e:  # noqa: BLE001
            first = first or e
        if first is not None:
            raise first

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<vh5.File {self.filename!r} ({state})>"
