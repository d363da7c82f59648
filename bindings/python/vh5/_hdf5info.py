"""Which libhdf5 the loaded libvh5 calls: :func:`hdf5_version` (``vh5_hdf5_version`` and
``vh5_hdf5_origin`` of the C API)."""

from __future__ import annotations

import ctypes
from typing import NamedTuple

__all__ = ["HDF5Info", "hdf5_version"]


class HDF5Info(NamedTuple):
    """The libhdf5 in use: ``version`` (major, minor, release), ``origin`` (``"system"``: a
    shared libhdf5 of the system; ``"vendored"``: HDF5 built from source and linked
    statically, cargo feature ``static-hdf5``) and ``threadsafe`` (libhdf5 built thread-safe;
    vh5 serialises its libhdf5 calls either way). ``str()`` gives
    ``libhdf5 1.10.8 (system, not thread-safe)``, as ``vh5 info --version`` prints it."""

    version: tuple[int, int, int]
    origin: str
    threadsafe: bool

    def __str__(self) -> str:
        v = ".".join(map(str, self.version))
        return f"libhdf5 {v} ({self.origin}, {'thread-safe' if self.threadsafe else 'not thread-safe'})"


def hdf5_version() -> HDF5Info:
    """Version, origin and thread-safety of the libhdf5 vh5 uses (not h5py's, which may differ).

    Raises :class:`vh5.HDF5Error` if libhdf5 cannot report them, ImportError when no libvh5 is
    found."""
    from ._errors import check
    from ._lib import lib

    L = lib()
    a, b, c, ts = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint8()
    check(L.vh5_hdf5_version(ctypes.byref(a), ctypes.byref(b), ctypes.byref(c), ctypes.byref(ts)))
    return HDF5Info((a.value, b.value, c.value), L.vh5_hdf5_origin().decode("ascii"), bool(ts.value))
