"""Loading ``libvh5`` with ctypes and declaring its C ABI (mirrors ``include/vh5.h``).

The shared library is found, in order:

1. the path in the environment variable ``VH5_LIBRARY`` (e.g. ``target/release/libvh5.so``
   of a cargo build; used by the project's test command);
2. the copy installed inside this package by ``pip install``: when h5py is importable and
   h5py-bound builds are installed (``vh5/libvh5_h5py.so`` for HDF5 2.x,
   ``vh5/libvh5_h5py_1_14.so`` for HDF5 1.14), the one built for the HDF5 series of h5py's
   libhdf5 (:func:`vh5._h5pybind.pick`; none of that series: ImportError naming h5py's HDF5
   version and every installed build); else ``vh5/libvh5.so`` (or ``libvh5.dylib`` /
   ``vh5.dll``).

A library whose file name starts with ``libvh5_h5py`` is the *h5py-bound* build: it runs on
the libhdf5 h5py loaded (one libhdf5 per process), every call that touches libhdf5 holds
h5py's global lock, and h5py datasets are used by id (see :mod:`vh5._h5pybind` and
docs/ARCHITECTURE.md). Any other library is loaded as is and never given h5py's libhdf5.

It is loaded once, lazily, on first use, so ``import vh5`` never fails for want of it and
never imports h5py (only loading the h5py-bound build does). Every call goes through
``ctypes.CDLL``, which **releases the GIL for the duration of each foreign call**: other
Python threads run while vh5 decodes or reads.

Struct layouts here must match the header field for field; ``tests/python/test_py_abi.py``
compiles a C program against ``include/vh5.h`` and compares every ``offsetof``/``sizeof``.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from ctypes import (
    POINTER,
    Structure,
    c_char_p,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

__all__ = ["lib", "library_path", "last_error_message", "status_name", "PayloadView", "DatasetInfo", "Array"]

#: Flags of ``payload_decode_view``.
PAYLOAD_REQUIRE_ALIGNED = 1
PAYLOAD_REQUIRE_NATIVE = 2
#: Flags of ``vh5_read_many_slices`` / ``vh5_write_many_slices`` / ``vh5_copy_many_slices``.
VH5_SLICES_CLIP = 1
VH5_SLICES_CONVERT = 2
VH5_SLICES_SWAPPED = 4
#: Flag of ``vh5_group_members``.
VH5_GROUP_RECURSIVE = 1

PAYLOAD_MAX_NDIM = 64
VH5_MAX_NDIM = 32


class PayloadView(Structure):
    """``payload_view``: a borrowed view of one array message (see ``payload_decode_view``)."""

    _fields_ = [
        ("data", c_void_p),
        ("data_len", c_size_t),
        ("data_offset", c_size_t),
        ("format", c_uint32),
        ("layout", c_uint32),
        ("dtype", c_uint32),
        ("itemsize", c_uint32),
        ("byte_order", c_uint32),
        ("needs_swap", c_uint8),
        ("aligned", c_uint8),
        ("fortran_order", c_uint8),
        ("reserved", c_uint8),
        ("ndim", c_uint32),
        ("shape", c_uint64 * PAYLOAD_MAX_NDIM),
        ("nelements", c_uint64),
        ("count_form", c_uint32),
        ("count_dtype", c_uint32),
        ("count_byte_order", c_uint32),
        ("count_len", c_uint64),
        ("count_scalar", c_int64),
        ("count_data", c_void_p),
        ("count_offset", c_size_t),
    ]


class DatasetInfo(Structure):
    """``vh5_dataset_info``: extent, layout, chunking, filters, element type and fill value."""

    _fields_ = [
        ("ndim", c_uint32),
        ("shape", c_uint64 * VH5_MAX_NDIM),
        ("maxshape", c_uint64 * VH5_MAX_NDIM),
        ("layout", c_uint32),
        ("chunked", c_uint8),
        ("contiguous", c_uint8),
        ("compact", c_uint8),
        ("has_filters", c_uint8),
        ("chunk", c_uint64 * VH5_MAX_NDIM),
        ("dtype", c_uint32),
        ("itemsize", c_size_t),
        ("file_itemsize", c_size_t),
        ("byte_order", c_uint32),
        ("nfilters", c_uint32),
        ("filter_id", c_int32 * 16),
        ("has_fill_value", c_uint8),
        ("fill_value_user_defined", c_uint8),
        ("fill_value", c_uint8 * 16),
        ("null_dataspace", c_uint8),
        ("extent_may_change", c_uint8),
    ]


class Array(Structure):
    """``vh5_array``: a caller-owned strided destination (byte strides, may be negative)."""

    _fields_ = [
        ("base", c_void_p),
        ("base_len", c_size_t),
        ("offset", c_size_t),
        ("dtype", c_uint32),
        ("itemsize", c_size_t),
        ("ndim", c_uint32),
        ("shape", POINTER(c_uint64)),
        ("strides", POINTER(c_int64)),
    ]


# name -> (restype, argtypes)
_SIGNATURES = {
    "vh5_last_error_message": (c_size_t, [ctypes.c_char_p, c_size_t]),
    "vh5_status_name": (c_char_p, [c_int32]),
    "vh5_version_string": (c_char_p, []),
    "vh5_hdf5_version": (c_int32, [POINTER(c_uint32), POINTER(c_uint32), POINTER(c_uint32), POINTER(c_uint8)]),
    "vh5_hdf5_origin": (c_char_p, []),
    "vh5_hdf5_build_version": (None, [POINTER(c_uint32), POINTER(c_uint32), POINTER(c_uint32)]),
    "vh5_dtype_name": (c_char_p, [c_uint32]),
    "payload_decode_view": (c_int32, [c_void_p, c_size_t, c_uint32, POINTER(PayloadView)]),
    "payload_decode_count": (
        c_int32,
        [c_void_p, c_size_t, c_void_p, c_size_t, POINTER(c_size_t)],
    ),
    "payload_decode_document": (
        c_int32,
        [c_void_p, c_size_t, c_uint32, c_void_p, c_size_t, c_void_p, c_size_t, POINTER(c_size_t), POINTER(c_size_t)],
    ),
    "payload_decode_document_range": (
        c_int32,
        [
            c_void_p,
            c_size_t,
            c_uint32,
            c_size_t,
            c_void_p,
            c_size_t,
            c_size_t,
            c_void_p,
            c_size_t,
            POINTER(c_size_t),
            POINTER(c_size_t),
        ],
    ),
    "payload_document_format": (c_int32, [c_void_p, c_size_t, POINTER(c_uint32)]),
    "payload_copy_data": (
        c_int32,
        [c_void_p, c_size_t, c_void_p, c_size_t, POINTER(c_size_t)],
    ),
    "vh5_file_open": (c_int32, [c_char_p, c_uint32, POINTER(c_int64)]),
    "vh5_dataset_open": (c_int32, [c_int64, c_char_p, POINTER(c_int64)]),
    "vh5_dataset_from_hdf5_id": (c_int32, [c_int64, POINTER(c_int64)]),
    "vh5_dataset_get_info": (c_int32, [c_int64, POINTER(DatasetInfo)]),
    "vh5_dataset_get_shape": (c_int32, [c_int64, POINTER(c_uint32), POINTER(c_uint64)]),
    "vh5_close": (c_int32, [c_int64]),
    "vh5_group_members": (c_int32, [c_int64, c_char_p, c_uint32, c_void_p, c_size_t, POINTER(c_size_t)]),
    "vh5_link_get": (c_int32, [c_int64, c_char_p, POINTER(c_uint8), c_void_p, c_size_t, POINTER(c_size_t)]),
    "vh5_dataset_filter_params": (c_int32, [c_int64, c_uint32, POINTER(c_uint32), c_size_t, POINTER(c_size_t)]),
    "vh5_dataset_mem_type": (c_int32, [c_int64, c_void_p, c_size_t, POINTER(c_size_t)]),
    "vh5_set_num_threads": (c_int32, [c_uint32]),
    "vh5_get_num_threads": (c_uint32, []),
    "vh5_set_planner": (c_int32, [c_uint32]),
    "vh5_get_planner": (c_uint32, []),
    "vh5_read_many_slices": (
        c_int32,
        [
            c_int64,
            POINTER(Array),
            c_size_t,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_uint32,
        ],
    ),
    "vh5_write_many_slices": (
        c_int32,
        [c_int64, POINTER(Array), c_size_t, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_uint32],
    ),
    "vh5_copy_many_slices": (
        c_int32,
        [POINTER(Array), POINTER(Array), c_size_t, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_uint32],
    ),
}


def _default_library_names():
    if sys.platform == "darwin":
        return ["libvh5.dylib"]
    if sys.platform == "win32":
        return ["vh5.dll"]
    return ["libvh5.so"]


#: File names of the h5py-bound builds when packaged beside this module (one per HDF5 series).
_BOUND_GLOB = "libvh5_h5py*.so"


def _h5py_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("h5py") is not None


def library_path() -> str:
    """The path of the shared library vh5 loads (or would load).

    Raises:
        ImportError: ``VH5_LIBRARY`` names a missing file, no library is installed in the
            package (build it with ``pip install ./bindings/python`` or ``cargo build --release``
            and set ``VH5_LIBRARY``), or only h5py-bound builds are, none for the HDF5 series
            of h5py's libhdf5.
    """
    env = os.environ.get("VH5_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise ImportError(f"VH5_LIBRARY={env!r} does not exist")
        return env
    return _installed_library(Path(__file__).resolve().parent)


def _installed_library(here: Path) -> str:
    """The library installed in the package directory ``here`` (see :func:`library_path`)."""
    bound = sorted(str(p) for p in here.glob(_BOUND_GLOB))
    if bound and _h5py_importable():
        import h5py

        from . import _h5pybind

        return _h5pybind.pick(bound, h5py)
    for name in _default_library_names():
        p = here / name
        if p.exists():
            return str(p)
    if bound:  # only h5py-bound builds are installed (the wheel): their loader says h5py is missing
        return bound[0]
    raise ImportError(
        f"libvh5 not found in {here} and VH5_LIBRARY is not set: install the package with "
        "`pip install ./bindings/python` (builds the Rust library) or run "
        "`cargo build --release` and set VH5_LIBRARY=target/release/libvh5.so"
    )


class _Missing:
    """Stand-in for a function the loaded library does not export (an older build)."""

    def __init__(self, name):
        self.__name__ = name

    def __call__(self, *args):
        raise NotImplementedError(f"the loaded library ({library_path()}) does not export {self.__name__}; rebuild it")


class _Lib:
    """The loaded library: one attribute per C function of ``_SIGNATURES``.

    ``h5py_bound``: True for the h5py-bound build (then the functions that call libhdf5 hold
    h5py's ``phil`` for each call); ``phil``: that lock, or None."""

    def __init__(self, path: str):
        from . import _h5pybind

        self.path = path
        self.h5py_bound = _h5pybind.is_h5py_bound(path)
        self.phil = None
        if self.h5py_bound:
            self.cdll, self.phil = _h5pybind.load(path)
        else:
            self.cdll = ctypes.CDLL(path)
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(self.cdll, name)
            except AttributeError:
                setattr(self, name, _Missing(name))
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            if self.phil is not None and name in _h5pybind.PHIL_FUNCTIONS:
                fn = _h5pybind.with_phil(fn, self.phil)
            setattr(self, name, fn)


_LIB = None
_LOCK = threading.Lock()


def lib() -> _Lib:
    """The loaded library (loaded on first call; thread-safe)."""
    global _LIB
    if _LIB is None:
        with _LOCK:
            if _LIB is None:
                _LIB = _Lib(library_path())
    return _LIB


def last_error_message() -> str:
    """The message of the last failure on the calling thread ('' after a success, except a
    successful ``vh5_close``, which keeps it: a finalizer closing a lost handle between a
    failing call and this read leaves the message intact)."""
    f = lib().vh5_last_error_message
    n = f(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    f(buf, n + 1)
    return buf.value.decode("utf-8", "replace")


def status_name(status: int) -> str:
    """The C name of a status code (``"VH5_ERR_MALFORMED"``...)."""
    return lib().vh5_status_name(int(status)).decode("ascii")
