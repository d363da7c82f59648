"""Reading ``h5py.Dataset`` sources.

**h5py-bound build** (``libvh5_h5py``, see :mod:`vh5._h5pybind`): vh5 runs on h5py's own
libhdf5, so an ``h5py.Dataset`` is used directly by its id (``dset.id.id``, through
``vh5_dataset_from_hdf5_id``): nothing is reopened, and in-memory (``driver='core'``) files,
files h5py holds open for writing and data h5py has not flushed are read exactly as h5py
sees them (:func:`adopt_h5py`).

**Linked build** (the rest of this docstring): vh5 re-opens h5py's file by path through its
own libhdf5.

vh5 links the system libhdf5, which is a *different* library instance from the one inside
h5py wheels: HDF5 ids never cross between them. vh5 therefore opens files by path; an
``h5py.Dataset`` passed to :func:`vh5.read_many_slices` is re-opened by dataset name from the
very file h5py has open: by the open file's current absolute name (``/proc/self/fd/N`` of
h5py's descriptor on Linux) or the absolute given name, whichever has the device and inode
of h5py's descriptor (checked before and after opening); a name that is not h5py's file (a
relative name after ``os.chdir``, a file replaced since h5py opened it) is refused, never
read in its place. h5py itself is never imported by vh5.

File locking: HDF5 >= 1.10 locks files. Two instances may both open a file read-only, but a
file that h5py holds open for writing (mode ``"r+"``, ``"w"``, ``"a"``) is refused by vh5
(a :class:`vh5.HDF5Error` whose message says "unable to lock the file" and gives this hint,
both from :class:`vh5.File` and from :func:`vh5.read_many_slices` of an ``h5py.Dataset``)
unless the environment variable ``HDF5_USE_FILE_LOCKING=FALSE`` is set *before* either
library opens the file. vh5 flushes a writable h5py file before reading it so the data h5py
wrote is on disk; while a :class:`vh5.File` of this process has that file open, such a
writable h5py file is refused (vh5.UnsupportedError): vh5's libhdf5 would share that open
file and its metadata as read when it was opened, not what h5py wrote since.
"""

from __future__ import annotations

import os

from ._datasets import Dataset
from ._errors import error
from ._files import File, open_files_of, unregistered
from ._lib import lib

__all__ = ["is_h5py_dataset", "check_open", "open_h5py", "adopt_h5py", "resolve_source", "REOPENABLE_DRIVERS"]


def is_h5py_dataset(obj) -> bool:
    """True for an h5py.Dataset (open or closed), recognised without importing h5py. The
    attributes are looked up on the class: on a closed dataset h5py's ``file`` property raises
    ValueError ("Not an id of a file object")."""
    cls = type(obj)
    mod = cls.__module__ or ""
    return mod.startswith("h5py") and all(hasattr(cls, a) for a in ("file", "name", "id"))


def check_open(src) -> None:
    """Raise vh5.InvalidHandleError when the h5py dataset ``src`` is closed (its h5py File was
    closed): h5py then no longer gives its name or file (``name`` is None, ``file`` raises
    h5py's "Not an id of a file object")."""
    try:
        valid = bool(src.id.valid)
    except Exception:  # noqa: BLE001 - h5py raises for closed ids in various ways
        valid = False
    if not valid:
        raise error(
            "VH5_ERR_INVALID_HANDLE",
            f"an h5py dataset whose h5py File was closed ({src!r}): h5py no longer gives its name or file, "
            "so vh5 cannot reopen it. Pass it while its h5py File is open, or open the dataset with "
            "vh5.File(path)[name]",
        )


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


def open_h5py(src):
    """Open an h5py dataset's file and dataset through vh5; returns (dataset, file).

    Raises vh5.UnsupportedError for an anonymous dataset (``create_dataset(None, ...)``: no
    path to reopen it by) and for an h5py file whose driver is not in
    :data:`REOPENABLE_DRIVERS` (in-memory, file-like, family, parallel, S3, split files), and
    vh5.InvalidHandleError for a closed one (:func:`check_open`)."""
    check_open(src)
    if src.name is None:
        # create_dataset(None, ...): the dataset is in the file but no link names it, and vh5
        # (not bound to h5py's libhdf5) reaches datasets only by reopening the file by path
        # and the dataset by name
        raise error(
            "VH5_ERR_UNSUPPORTED",
            f"the h5py dataset is anonymous (made with create_dataset(None, ...), no path in "
            f"{getattr(src.file, 'filename', '?')!r} leads to it): vh5 reopens the file and opens the dataset "
            "by its path, so it needs a dataset linked into the file (f['name'] = dataset links it), "
            "or the h5py-bound build (libvh5_h5py), which uses h5py's own dataset id",
        )
    h5file = src.file
    driver = getattr(h5file, "driver", None)
    filename = getattr(h5file, "filename", None)
    if driver not in REOPENABLE_DRIVERS or not isinstance(filename, str):
        what = _DRIVER_REASONS.get(driver, f"a file opened with the h5py driver {driver!r}")
        raise error(
            "VH5_ERR_UNSUPPORTED",
            f"the h5py file behind {src.name!r} ({filename!r}) is {what}; vh5 reads through "
            "its own libhdf5 by reopening a single file on disk by its path (h5py drivers "
            f"{', '.join(sorted(REOPENABLE_DRIVERS))}), so it cannot read this one: read it "
            "with h5py, or write it to a file on disk first",
        )
    path, ident = _same_file_path(h5file, driver, filename, src.name)
    if getattr(h5file, "mode", "r") != "r":
        _refuse_if_open_in_vh5(path, ident, src.name, filename)
        # Our libhdf5 reads the file from disk: make what h5py wrote visible first.
        h5file.flush()
    # File adds the HDF5_USE_FILE_LOCKING hint on a lock failure. Not listed as an open File
    # (it lives for this call only; other threads reading h5py sources meanwhile share it).
    with unregistered():
        f = File(path)
    if ident is not None and not _same_inode(path, ident):
        # Renamed or replaced between the check and the open: never read the wrong file.
        f.close()
        raise error(
            "VH5_ERR_IO",
            f"the file h5py has open for {src.name!r} ({filename!r}) was renamed or replaced while "
            f"vh5 reopened it as {path!r}; vh5 refuses to read a different file",
        )
    try:
        return Dataset(f, src.name), f
    except BaseException:
        f.close()
        raise


def _refuse_if_open_in_vh5(path, ident, name, filename) -> None:
    """Raise vh5.UnsupportedError when a :class:`vh5.File` of this process has the file h5py
    holds for writing open: vh5's libhdf5 would then not open it afresh but share that open
    file, whose metadata (chunk index, extents) it read when it opened it, and read chunks
    h5py has moved since at their old addresses: old values with no error, or a chunk
    reported corrupt."""
    try:
        st = ident if ident is not None else os.stat(path)
    except OSError:
        return  # File(path) below reports a missing file
    others = open_files_of(st)
    if others:
        from . import _cache

        held = any(o in others for o in _cache.cached_files())
        raise error(
            "VH5_ERR_UNSUPPORTED",
            f"cannot read {name!r} of the file h5py has open for writing ({filename!r}): this process "
            f"also has it open as vh5.File({others[0].filename!r}, {others[0].mode!r}), and vh5's libhdf5 would "
            "share that open file and read its metadata as it was when that File opened it, not what h5py "
            "has written since (old values, or chunks reported corrupt). Close the vh5.File first (and "
            "reopen it after h5py has closed the file to see h5py's writes)"
            + (
                "; vh5's per-process file cache (vh5.dask graphs, unpickled handles) holds it: "
                "vh5.clear_file_cache(close=True) closes it"
                if held
                else ""
            ),
        )


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
    drivers: ``stdio``, ``direct``) an absolute given name is used as is and a relative one
    refused (vh5.UnsupportedError: the directory it was resolved against is unknown). Raises
    vh5.IoError naming the names when no candidate is h5py's file."""
    fd = _h5py_fd(h5file, driver)
    given = os.path.abspath(filename)
    if fd is None:
        if os.path.isabs(filename):
            return filename, None
        raise error(
            "VH5_ERR_UNSUPPORTED",
            f"cannot reopen the file h5py has open for {name!r}: h5py opened it by the relative name "
            f"{filename!r} with the {driver!r} driver, which gives no file descriptor, and the working "
            f"directory that name was resolved against is not known (it may have changed since; the name "
            f"now resolves to {given!r}), so vh5 cannot tell which file on disk it is. Open the h5py file "
            "by an absolute path (or with the default 'sec2' driver), or use vh5.File(path)",
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
    raise error(
        "VH5_ERR_IO",
        f"cannot reopen the file h5py has open for {name!r}: h5py opened {filename!r}, which now "
        f"resolves to {given!r}, but {why}; vh5 refuses to read a different file. Open it with "
        "vh5.File(absolute_path) instead",
    )


class H5pyFileName:
    """What a :class:`vh5.Dataset` made from an h5py dataset knows of its file: the name, for
    messages (``filename``, asked of h5py on first use)."""

    __slots__ = ("_src", "_name")

    def __init__(self, src):
        self._src = src
        self._name = None

    @property
    def filename(self) -> str:
        if self._name is None:
            try:
                self._name = str(self._src.file.filename)
            except Exception:  # noqa: BLE001 - a closed h5py file: still name something
                self._name = "<closed h5py file>"
        return self._name

    @property
    def file_id(self) -> int:
        """The libhdf5 id of the h5py file (-1 when closed): the same for every dataset
        object h5py hands out of one open file."""
        try:
            return int(self._src.file.id.id)
        except Exception:  # noqa: BLE001 - a closed h5py file
            return -1

    @property
    def on_disk(self) -> bool:
        """Whether the h5py file's driver keeps it in the one file ``filename`` names (sec2,
        stdio, direct): not an in-memory (core), family, split or multi file."""
        try:
            return self._src.file.driver in ("sec2", "stdio", "direct")
        except Exception:  # noqa: BLE001 - a closed h5py file
            return False

    def __repr__(self) -> str:
        return f"<h5py file {self.filename!r}>"


def adopt_h5py(src) -> Dataset:
    """A :class:`vh5.Dataset` on the h5py dataset ``src``'s own id (h5py-bound build only:
    ``vh5_dataset_from_hdf5_id``). vh5 holds its own reference until the Dataset is closed;
    the h5py dataset stays usable. Raises vh5.InvalidHandleError when the h5py dataset is
    closed."""
    if not lib().h5py_bound:
        raise error(
            "VH5_ERR_INVALID_HANDLE",
            f"h5py dataset {getattr(src, 'name', '?')!r}: its id belongs to h5py's libhdf5, and the loaded "
            f"libvh5 ({lib().path}) links its own; only the h5py-bound build (libvh5_h5py) uses h5py ids",
        )
    check_open(src)
    hid = src.id.id
    name = src.name if getattr(src, "name", None) else "(anonymous dataset)"
    return Dataset._from_hdf5_id(H5pyFileName(src), name, hid)


def resolve_source(src):
    """(vh5 Dataset, list of handles to close after the call) for a supported source."""
    if isinstance(src, Dataset):
        return src, []
    if is_h5py_dataset(src):
        if lib().h5py_bound:
            d = adopt_h5py(src)
            return d, [d]
        d, f = open_h5py(src)
        return d, [d, f]
    raise TypeError(
        f"src must be a vh5.Dataset or an h5py.Dataset, not {type(src).__name__} "
        "(numpy sources go with a numpy dst or a vh5.Dataset dst)"
    )
