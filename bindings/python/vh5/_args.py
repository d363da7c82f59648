"""Checks of the arguments the Python layer passes down to C as strings, and the hint added
to libhdf5's file-lock failure.

C strings end at the first NUL byte, so a Python ``str``/``bytes`` holding one would silently
name a different file or object (``"a.h5\\0x"`` opens ``a.h5``): such arguments raise
``ValueError`` here, as ``open()`` does.
"""

from __future__ import annotations

import os

from ._errors import Error, with_message

__all__ = ["path_arg", "name_arg", "with_lock_hint", "LOCK_HINT"]


def path_arg(path, what: str) -> str:
    """``os.fspath(path)`` for a str / bytes / os.PathLike argument passed to C as a
    NUL-terminated string (bytes are decoded with ``os.fsdecode``).

    Raises:
        TypeError: another type (naming ``what``).
        ValueError: an embedded NUL, which C would silently treat as the end of the string
            (``open()`` refuses it the same way).
    """
    try:
        p = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what} must be str, bytes or os.PathLike, not {type(path).__name__}") from None
    if isinstance(p, bytes):
        if b"\0" in p:
            raise ValueError(f"embedded null byte in {what} {p!r}")
        p = os.fsdecode(p)
    if "\0" in p:
        raise ValueError(f"embedded null byte in {what} {p!r}")
    return p


def name_arg(name, what: str) -> str:
    """An HDF5 object name (str, or UTF-8 bytes) checked for embedded NUL bytes.

    Raises:
        TypeError: not str or bytes (naming ``what``).
        ValueError: an embedded NUL, or bytes that are not UTF-8.
    """
    if isinstance(name, (bytes, bytearray)):
        if b"\0" in name:
            raise ValueError(f"embedded null byte in {what} {bytes(name)!r}")
        try:
            name = bytes(name).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{what} {bytes(name)!r} is not UTF-8: {e}") from None
    elif not isinstance(name, str):
        raise TypeError(f"{what} must be str or bytes, not {type(name).__name__}")
    if "\0" in name:
        raise ValueError(f"embedded null byte in {what} {name!r}")
    return name


LOCK_HINT = (
    "\nhint: another libhdf5 (e.g. h5py's) holds this file open; if it is open for writing, "
    "set HDF5_USE_FILE_LOCKING=FALSE in the environment before either library opens the file"
)


def with_lock_hint(e: Error) -> Error:
    """``e`` with the HDF5_USE_FILE_LOCKING hint appended when libhdf5 refused the file
    because another process or library instance holds its lock (libhdf5 1.10's message is
    "unable to lock the file"); ``e`` itself otherwise."""
    if "unable to lock" not in e.message or "HDF5_USE_FILE_LOCKING" in e.message:
        return e
    return with_message(e, e.message + LOCK_HINT)
