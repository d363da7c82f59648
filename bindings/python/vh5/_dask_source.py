"""The dataset behind a Dask graph of :mod:`vh5.dask`: a lazy, picklable vh5 handle (shared
by :func:`vh5.dask.from_dataset` and :func:`vh5.dask.gather`) and its Dask token."""

from __future__ import annotations

import os

from . import _pickle
from ._datasets import Dataset
from ._errors import error
from ._h5py import is_h5py_dataset, open_h5py

__all__ = ["source_dataset", "token_parts"]


def source_dataset(dset) -> Dataset:
    """A lazy vh5 handle (never closed under the graph) for a vh5 or h5py dataset."""
    if isinstance(dset, Dataset):
        if dset.closed:
            raise error("VH5_ERR_INVALID_HANDLE", f"vh5.Dataset {dset.name!r} is closed")
        lazy = _pickle.lazy_copy(dset)
    elif is_h5py_dataset(dset):
        d, f = open_h5py(dset)  # refuses in-memory / family / ... files, flushes writers
        try:
            lazy = _pickle.lazy_copy(d)
        finally:
            d.close()
            f.close()
    else:
        raise TypeError(f"dset must be a vh5.Dataset or an h5py.Dataset, not {type(dset).__name__}")
    if lazy.dtype is None:
        raise error("VH5_ERR_UNSUPPORTED", f"dataset {lazy.name!r}: vh5 cannot read its element type")
    return lazy


def token_parts(d: Dataset):
    path, mode, options = _pickle.file_key(d.file)
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    return (path, mode, repr(options), d.name, d.shape, d.dtype.str, d.chunks, stamp)
