"""Dask arrays whose blocks are read by vh5 in the workers (``pip install vh5[dask]``).

- :func:`from_dataset`: the whole dataset as a ``dask.array.Array``, blocks aligned to the
  HDF5 chunk grid by default (no chunk decoded by two tasks), values equal to
  ``dask.array.from_array(h5py_dataset)``.
- :func:`gather`: many equal-shape hyperslabs (rows) as one ``(nrows, *count)`` Dask array;
  rows are grouped into tasks by the chunk they start in, each task is one
  :func:`vh5.read_many_slices` call, and the result is in row order.

Reductions, masking and the rest are ordinary Dask (``x.sum()``, ``da.ma.masked_equal``...).
The graph holds picklable, lazily reopened handles (:mod:`vh5._pickle`): a worker opens the
file by its absolute path on its first task and keeps it in a per-process cache
(:mod:`vh5._cache`), so every worker must see the file at the path the client used (a shared
filesystem), and the file must not change while a computation runs (a worker that finds a
different shape, dtype or chunk shape refuses with :class:`vh5.InvalidHandleError`). A worker
that cannot open the file raises vh5's error naming the path, the process and the host.
Writable (``"r+"``) datasets are refused when the graph is sent to other processes unless
:func:`vh5.allow_pickling` was called on them. With the h5py-bound build an h5py dataset is
read through its own id by tasks in the calling process (nothing reopened) and reopened by
path only in other processes.

Arrays are delivered as :func:`vh5.read_many_slices` delivers them: native byte order (a
big-endian ``>f4`` dataset gives a ``float32`` Dask array; h5py would give ``>f4``, the
values are the same), compound types as ``dtype('V<n>')`` records in libhdf5's native
layout (h5py gives named fields).
"""

from __future__ import annotations

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
except ImportError as _e:  # pragma: no cover - exercised only without dask
    raise ImportError(
        "vh5.dask needs Dask: pip install 'vh5[dask]' (or pip install 'dask[array]'; add 'distributed' for clusters)"
    ) from _e

from . import _pickle
from ._dask_source import source_dataset as _source_dataset
from ._dask_source import token_parts as _token_parts
from ._datasets import Dataset
from ._gather import gather
from ._slices import read_many_slices

__all__ = ["from_dataset", "gather"]


# ----------------------------------------------------------------------------------------
# from_dataset


class _BlockSource:
    """The array-like handed to ``da.from_array``: ``shape``/``dtype``/``ndim`` and a
    ``__getitem__`` for basic indexing (ints, slices with any step, Ellipsis, None) that reads
    the selection with one :func:`read_many_slices` call. Pickles as its lazy dataset."""

    def __init__(self, dset: Dataset):
        self.dset = dset
        self.shape = dset._extent()  # (an empty dataset, h5py.Empty, is refused)
        self.ndim = len(self.shape)
        self.dtype = dset.dtype.newbyteorder("=") if dset.dtype.itemsize > 1 else dset.dtype

    def __dask_tokenize__(self):
        return ("vh5.dask.from_dataset",) + _token_parts(self.dset)

    def __getitem__(self, key):
        starts, counts, steps, post = _basic_index(key, self.shape)
        out = np.empty(counts, dtype=self.dtype)
        if out.size:
            nd = self.ndim
            d = _pickle.resolve(self.dset)
            unit = all(s == 1 for s in steps)
            read_many_slices(
                d,
                out,
                np.array([starts], dtype=np.uint64).reshape(1, nd),
                np.zeros((1, nd), dtype=np.uint64),
                np.array([counts], dtype=np.uint64).reshape(1, nd),
                None if unit else np.array([steps], dtype=np.uint64).reshape(1, nd),
            )
        return out[post] if post else out


def _basic_index(key, shape):
    """(starts, counts, positive steps, indexer applied after the read) for a basic index.

    Negative steps read the same elements with the positive step and reverse them; integers
    read one element and drop the axis; None adds an axis. Raises IndexError / TypeError as
    numpy does for out-of-range integers, too many indices or non-basic keys."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > len(shape):
        raise IndexError(f"too many indices: the dataset has {len(shape)} axes, {used} were indexed")
    if n_ell:
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - used) + key[i + 1 :]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    starts, counts, steps, post, axis, trivial = [], [], [], [], 0, True
    for k in key:
        if k is None:
            post.append(None)
            trivial = False
            continue
        n = shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            c = len(range(start, stop, step))
            if step < 0:
                first = start + (c - 1) * step if c else 0
                starts.append(first)
                steps.append(-step)
                post.append(slice(None, None, -1))
                trivial = False
            else:
                starts.append(start if c else 0)
                steps.append(step)
                post.append(slice(None))
            counts.append(c)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            starts.append(i % n)
            counts.append(1)
            steps.append(1)
            post.append(0)
            trivial = False
        else:
            raise TypeError(f"vh5.dask reads basic indices only (ints, slices, ..., None), not {type(k).__name__}")
        axis += 1
    return starts, counts, steps, (None if trivial else tuple(post))


def _aligned_chunks(chunks, dset: Dataset, dtype):
    """Dask block sizes. ``"auto"`` (or None) asks Dask for sizes near ``array.chunk-size``
    that are multiples of the HDF5 chunk shape (``previous_chunks``), then rounds any block
    that is not (Dask's rounding can leave one) so every boundary is on the chunk grid."""
    from dask.array.core import normalize_chunks

    shape = dset.shape
    if chunks is None:
        chunks = "auto"
    hchunks = dset.chunks
    if not (isinstance(chunks, str) and chunks == "auto") or hchunks is None:
        return normalize_chunks(chunks, shape, dtype=dtype, previous_chunks=hchunks)
    norm = normalize_chunks("auto", shape, dtype=dtype, previous_chunks=hchunks)
    out = []
    for blocks, c, n in zip(norm, hchunks, shape):
        if all(b % c == 0 for b in blocks[:-1]):
            out.append(blocks)
            continue
        size = max(c, round(max(blocks) / c) * c)  # pragma: no cover - Dask already aligns
        out.append(tuple(min(size, n - a) for a in range(0, n, size)) or (0,))
    return tuple(out)


def from_dataset(dset, chunks="auto", *, name=None, inline_array: bool = False):
    """A ``dask.array.Array`` of the whole dataset, each block read by vh5 where it runs.

    Args:
        dset: a :class:`vh5.Dataset` or an ``h5py.Dataset``. The array keeps its own lazy
            handle: closing ``dset`` afterwards does not invalidate it. An h5py dataset is
            reopened by file and dataset name with the linked build; with the h5py-bound build
            tasks in this process read through its own id (in-memory files, unflushed
            writes), and a graph sent to other processes reopens the file by path there
            (pickling refuses a file with no path, such as an in-memory one).
        chunks: ``"auto"`` (default): blocks of about Dask's ``array.chunk-size`` whose
            boundaries are on the HDF5 chunk grid, so no chunk is decoded by two tasks
            (contiguous datasets: Dask's plain ``"auto"``). Or anything
            ``dask.array.from_array`` accepts (a block shape ``(1000, 100)``, per-axis block
            tuples, ``-1``...): used as given, aligned or not.
        name: the Dask key prefix (default: a token of the file path, modification time,
            dataset name, shape, dtype and chunks).
        inline_array: as in ``dask.array.from_array``.

    Returns:
        dask.array.Array of ``dset.shape`` and the dataset's dtype in native byte order.
        Slicing it reads only the blocks (and, after Dask's slice fusion, only the
        elements) selected.

    Raises:
        TypeError: another kind of ``dset``. vh5.UnsupportedError: an element type vh5
        cannot read (variable-length strings...), an empty dataset (a null dataspace,
        h5py's ``Empty``). vh5.InvalidHandleError: ``dset`` closed.
    """
    src = _BlockSource(_source_dataset(dset))
    norm = _aligned_chunks(chunks, src.dset, src.dtype)
    if name is None:
        name = "vh5-" + tokenize(src, norm)
    return da.from_array(
        src,
        chunks=norm,
        name=name,
        lock=False,
        asarray=False,
        fancy=False,
        inline_array=inline_array,
        meta=np.empty((0,) * src.ndim, dtype=src.dtype),
    )
