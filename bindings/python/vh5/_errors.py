"""Exception classes: one :class:`Error` subclass per ``vh5_status`` code.

Every failing vh5 C call becomes an exception carrying

- ``status``: the integer ``vh5_status`` code (stable across releases),
- ``status_name``: its C name, e.g. ``"VH5_ERR_MALFORMED"``,
- ``message``: the library's own message for the failure on the calling thread (it names
  the argument, row, axis, key or byte offset at fault; for HDF5 failures it carries the
  libhdf5 error stack).

Each subclass also derives from the closest built-in exception (``ValueError`` for bad
input, ``OSError`` for file access, ...) so code that catches built-in types keeps working.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "NullArgumentError",
    "InvalidArgumentError",
    "MalformedError",
    "UnsupportedError",
    "BufferTooSmallError",
    "OutOfBoundsError",
    "DtypeError",
    "HDF5Error",
    "IoError",
    "PanicError",
    "MisalignedError",
    "ByteOrderError",
    "NotFoundError",
    "InvalidHandleError",
    "ServerError",
    "NoMemoryError",
    "error_class",
]


class Error(Exception):
    """Base class of every error raised by vh5 for a failed library call.

    Attributes:
        status (int): the ``vh5_status`` code (see ``include/vh5.h``).
        status_name (str): the C name of the status, e.g. ``"VH5_ERR_MALFORMED"``.
        message (str): the library's message (without the status name prefix).
    """

    status: int = -1
    status_name: str = "VH5_UNKNOWN_STATUS"
    message: str = ""

    def __str__(self) -> str:  # noqa: D105 - keeps the message readable
        return f"{self.status_name}: {self.message}" if self.message else self.status_name


class NullArgumentError(Error, ValueError):
    """A required pointer argument was NULL (``VH5_ERR_NULL_ARGUMENT``, 1). A bug in vh5's Python layer."""


class InvalidArgumentError(Error, ValueError):
    """An argument has an invalid value: unknown flags, step 0, ndim mismatch, overlapping
    destination strides... (``VH5_ERR_INVALID_ARGUMENT``, 2)."""


class MalformedError(Error, ValueError):
    """The input bytes are not a well-formed message: truncated, wrong types, data length not
    prod(shape) x item size, trailing bytes, duplicate keys... (``VH5_ERR_MALFORMED``, 3)."""


class UnsupportedError(Error, ValueError):
    """Well-formed input vh5 deliberately does not handle: pickled objects, variable-length
    types, indefinite lengths where a view is required, too many axes...
    (``VH5_ERR_UNSUPPORTED``, 4)."""


class BufferTooSmallError(Error, ValueError):
    """A caller buffer is smaller than needed (``VH5_ERR_BUFFER_TOO_SMALL``, 5)."""


class OutOfBoundsError(Error, IndexError):
    """A selection reaches outside a dataset or array extent and clipping was not asked for
    (``VH5_ERR_OUT_OF_BOUNDS``, 6)."""


class DtypeError(Error, TypeError):
    """Element types do not match (and conversion was not asked for), or a dtype is unknown
    (``VH5_ERR_DTYPE``, 7)."""


class HDF5Error(Error, RuntimeError):
    """libhdf5 reported a failure; the message carries its error stack (``VH5_ERR_HDF5``, 8)."""


class IoError(Error, OSError):
    """Operating-system level failure: missing file, permission denied, not an HDF5 file, or
    a file locked by another HDF5 instance (``VH5_ERR_IO``, 9)."""


class PanicError(Error, RuntimeError):
    """A Rust panic was caught at the ABI boundary: a bug in vh5, please report it
    (``VH5_ERR_PANIC``, 10)."""


class MisalignedError(Error, ValueError):
    """Data is not aligned for its element type and alignment was required
    (``VH5_ERR_MISALIGNED``, 11)."""


class ByteOrderError(Error, ValueError):
    """Data is not in native byte order and native order was required
    (``VH5_ERR_BYTE_ORDER``, 12)."""


class NotFoundError(Error, LookupError):
    """A named object (dataset, group) does not exist (``VH5_ERR_NOT_FOUND``, 13)."""


class InvalidHandleError(Error, ValueError):
    """A handle is not a valid open object of the expected kind: closed, or of the wrong type
    (``VH5_ERR_INVALID_HANDLE``, 14)."""


class ServerError(Error):
    """The input is a server's JSON error body (e.g. Reductionist's ``{"error": ...}``), not an
    array payload; the message carries the server's own text (``VH5_ERR_SERVER_ERROR``, 15)."""


class NoMemoryError(Error, MemoryError):
    """An allocation vh5 needed failed or exceeds a configured limit (``VH5_MAX_CHUNK_BYTES``);
    the message names the chunk (or row) and the bytes (``VH5_ERR_NO_MEMORY``, 16)."""


_BY_STATUS = {
    1: NullArgumentError,
    2: InvalidArgumentError,
    3: MalformedError,
    4: UnsupportedError,
    5: BufferTooSmallError,
    6: OutOfBoundsError,
    7: DtypeError,
    8: HDF5Error,
    9: IoError,
    10: PanicError,
    11: MisalignedError,
    12: ByteOrderError,
    13: NotFoundError,
    14: InvalidHandleError,
    15: ServerError,
    16: NoMemoryError,
}


def error_class(status: int) -> type:
    """The :class:`Error` subclass for a ``vh5_status`` code (``Error`` itself for unknown codes)."""
    return _BY_STATUS.get(int(status), Error)


def make_error(status: int, status_name: str, message: str) -> Error:
    """Build the exception for a failed call (``message`` is the library's last-error text)."""
    cls = error_class(status)
    err = cls(f"{status_name}: {message}" if message else status_name)
    err.status = int(status)
    err.status_name = status_name
    err.message = message
    return err
