"""vh5: zero-copy array payload views and fast many-slice HDF5 reads (ctypes + numpy).

Pure-Python bindings over the ``libvh5`` shared library (a Rust library with a C ABI; see
``include/vh5.h``). No compiled Python extension; importing vh5 does not import h5py and does
not load the library until it is first used.

- :func:`decode_payload`: Reductionist CBOR, RFC 8746 typed arrays, msgpack-numpy ->
  numpy views of the caller's buffer (no copy), counts as int64 arrays, masks.
- :func:`decode_document`: a whole msgpack / CBOR document (nested maps, lists, scalars)
  with every array inside it as a numpy view, in one pass.
- :class:`File` / :class:`Group` / :class:`Dataset`: h5py-style navigation (``keys()``,
  ``f["grp/x"]``, ``visit``), metadata and basic-selection reads (``d[0, 10:20, ::2]``);
- :func:`read_many_slices`: many hyperslabs from an HDF5 dataset into any numpy array
  layout (either byte order) in one call, from coordinate tables or a list of selections
  (:func:`slice_table`); :func:`write_many_slices` (numpy -> HDF5,
  ``File(path, "r+")``) and :func:`copy_many_slices` (numpy -> numpy) the other directions.
- Files and datasets pickle (read-only ones; :func:`allow_pickling` for writable ones) and
  reopen lazily in the receiving process through a per-process cache; :mod:`vh5.dask`
  (needs ``pip install vh5[dask]``) builds Dask arrays and gathers read by vh5 in workers.
- :func:`hdf5_version`: the libhdf5 vh5 uses (version, origin, thread-safety).
- ``python -m vh5`` / the ``vh5`` command: the command-line tool (see :mod:`vh5.__main__`).
- :mod:`vh5.compat.versioned_hdf5`, :mod:`vh5.compat.pyactivestorage`,
  :mod:`vh5.compat.msgpack_numpy`: drop-in shims.

Every library failure raises a subclass of :class:`Error` (``.status``, ``.status_name``,
``.message``). The GIL is released during every library call.
"""

from . import _errors, _lib
from ._cache import clear as clear_file_cache
from ._cache import set_size as set_file_cache_size
from ._datasets import Dataset
from ._errors import *  # noqa: F403  (the names in _errors.__all__)
from ._files import File, Group
from ._hdf5info import HDF5Info, hdf5_version
from ._links import ExternalLink, HardLink, SoftLink
from ._pickle import allow_pickling
from ._select import SliceTable, slice_table
from ._slices import (
    copy_many_slices,
    get_num_threads,
    get_planner,
    read_many_slices,
    set_num_threads,
    set_planner,
    write_many_slices,
)
from .document import FrozenDict, Simple, Tag, decode_document
from .payload import Payload, decode_payload

__version__ = "0.1.0"

__all__ = [
    "decode_payload",
    "Payload",
    "decode_document",
    "Tag",
    "Simple",
    "FrozenDict",
    "File",
    "Group",
    "Dataset",
    "HardLink",
    "SoftLink",
    "ExternalLink",
    "slice_table",
    "SliceTable",
    "read_many_slices",
    "set_num_threads",
    "get_num_threads",
    "set_planner",
    "get_planner",
    "write_many_slices",
    "copy_many_slices",
    "allow_pickling",
    "clear_file_cache",
    "set_file_cache_size",
    "library_path",
    "library_version",
    "hdf5_version",
    "HDF5Info",
]
__all__ += _errors.__all__


def library_path() -> str:
    """Path of the libvh5 shared library in use (``VH5_LIBRARY`` or the packaged copy).

    Raises ImportError when none is found."""
    return _lib.library_path()


def library_version() -> str:
    """Version string of the loaded libvh5 (``vh5_version_string()``), e.g. ``"0.1.0"``."""
    return _lib.lib().vh5_version_string().decode("ascii")
