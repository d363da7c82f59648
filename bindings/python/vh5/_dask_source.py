"""The dataset behind a Dask graph of :mod:`vh5.dask`: a lazy, picklable vh5 handle (shared
by :func:`vh5.dask.from_dataset` and :func:`vh5.dask.gather`) and its Dask token."""

from __future__ import annotations

import os

from . import _pickle
from ._datasets import Dataset
from ._errors import error
from ._h5py import adopt_h5py, is_h5py_dataset, open_h5py
from ._lib import lib

__all__ = ["source_dataset", "token_parts"]


def _reopened(h5):
    """The lazy vh5 handle of an h5py dataset's file reopened by path (flushes an h5py
    writer; refuses in-memory / family / ... files)."""
    d, f = open_h5py(h5)
    try:
        return _pickle.lazy_copy(d)
    finally:
        d.close()
        f.close()


def source_dataset(dset) -> Dataset:
    """A vh5 handle for a vh5 or h5py dataset, never closed under the graph: a lazy one
    (reopened by path where it runs), or with the h5py-bound build and an h5py dataset, that
    dataset's own id (tasks in this process read exactly what h5py sees: unflushed writes,
    in-memory files), pickled as the lazy handle of its file reopened by path when the graph
    goes to other processes."""
    if isinstance(dset, Dataset):
        if dset.closed:
            raise error("VH5_ERR_INVALID_HANDLE", f"vh5.Dataset {dset.name!r} is closed")
        lazy = _pickle.lazy_copy(dset)
    elif is_h5py_dataset(dset) and lib().h5py_bound:
        lazy = adopt_h5py(dset)
        _pickle.pickle_as(lazy, lambda: _reopened(dset))
    elif is_h5py_dataset(dset):
        lazy = _reopened(dset)
    else:
        raise TypeError(f"dset must be a vh5.Dataset or an h5py.Dataset, not {type(dset).__name__}")
    if lazy.dtype is None:
        raise error("VH5_ERR_UNSUPPORTED", f"dataset {lazy.name!r}: vh5 cannot read its element type")
    return lazy


def token_parts(d: Dataset):
    on_disk = True
    if _pickle.has_stand_in(d):  # an h5py dataset's own id (h5py-bound build): its file's id
        path, mode, options = d.file.filename, "h5py", f"file id {d.file.file_id}"
        # an in-memory (core) file's name is no file on disk (or an unrelated one)
        on_disk = d.file.on_disk
    else:
        path, mode, options = _pickle.file_key(d.file)
    stamp = None
    try:
        if on_disk:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        pass
    return (path, mode, repr(options), d.name, d.shape, d.dtype.str, d.chunks, stamp)
