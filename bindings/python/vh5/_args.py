"""Checks of the arguments the Python layer passes down to C as strings, and the hint added
to libhdf5's file-lock failure.

C strings end at the first NUL byte, so a Python ``str``/``bytes`` holding one would silently
name a different file or object (``"a.h5\\0x"`` opens ``a.h5``): such arguments raise
``ValueError`` here, as ``open()`` does.
"""

from __future__ import annotations

import os

from ._errors import Error, with_message

__all__ = ["path_arg", "name_arg", "name_bytes", "shown_name", "escaped", "with_lock_hint", "LOCK_HINT"]


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
    """An HDF5 object name or path in vh5's internal form: a ``str`` in which the bytes of the
    name that are not UTF-8 are surrogate escapes (``"a\\udce9"`` for ``b"a\\xe9"``, what
    ``bytes.decode("utf-8", "surrogateescape")`` and ``os.fsdecode`` give), so every byte
    string round-trips exactly (see :func:`name_bytes`).

    Accepts ``str`` (as h5py: its UTF-8 bytes; a surrogate-escaped ``str`` stands for those
    bytes, where h5py raises UnicodeEncodeError) and ``bytes`` (any bytes, as in h5py:
    ``f[b"temp\\xe9rature"]``).

    Raises:
        TypeError: not str or bytes (naming ``what``).
        ValueError: an embedded NUL, or a ``str`` holding a lone surrogate outside
            U+DC80..U+DCFF (it stands for no byte; UnicodeEncodeError is a ValueError).
    """
    if isinstance(name, (bytes, bytearray)):
        if b"\0" in name:
            raise ValueError(f"embedded null byte in {what} {bytes(name)!r}")
        return bytes(name).decode("utf-8", "surrogateescape")
    if not isinstance(name, str):
        raise TypeError(f"{what} must be str or bytes, not {type(name).__name__}")
    if "\0" in name:
        raise ValueError(f"embedded null byte in {what} {name!r}")
    try:
        # the one internal form of these bytes ("\udcc3\udca9" is "é")
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"{what} {name!r} holds a lone surrogate that stands for no byte ({e.reason}); give names "
            "that are not UTF-8 as bytes, or as str decoded with errors='surrogateescape'"
        ) from None


def name_bytes(name: str) -> bytes:
    """The bytes of a name in the internal form of :func:`name_arg` (what libhdf5 stores)."""
    return name.encode("utf-8", "surrogateescape")


def shown_name(name: str):
    """A name in the internal form as h5py gives names (``keys()``, ``visit``, ``.name``):
    ``str`` when its bytes are UTF-8, else the ``bytes`` themselves (h5py's ``_d``)."""
    b = name_bytes(name)
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def escaped(name: str) -> str:
    """A name in the internal form as the library's messages write it: UTF-8 as it is, a
    backslash as ``\\\\``, a byte that is not UTF-8 and each UTF-8 byte of a control character
    (C0, DEL, C1: newline, tab...) as ``\\xNN`` (Rust ``vh5::names::escape``)."""
    text = name_bytes(name).replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")
    return "".join("".join(f"\\x{b:02x}" for b in c.encode()) if _is_control(c) else c for c in text)


def _is_control(c: str) -> bool:
    """Rust's ``char::is_control`` (Unicode category Cc): U+0000..U+001F and U+007F..U+009F."""
    return c < "\x20" or "\x7f" <= c <= "\x9f"


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
