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

import re

from . import _lib

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

#: ``vh5_status`` names by number, read once from the library (``vh5_status_name``); the
#: numbers are never written in the Python package.
_STATUS_BY_NUMBER: dict = {}
_UNKNOWN = "VH5_UNKNOWN_STATUS"


def status_table() -> dict:
    """``{number: name}`` of every status the loaded library defines (read from
    ``vh5_status_name`` on first use; empty when no library can be loaded)."""
    if not _STATUS_BY_NUMBER:
        try:
            name = _lib.status_name
            table = {}
            for i in range(0, 256):
                n = name(i)
                if n != _UNKNOWN:
                    table[i] = n
        except (ImportError, OSError):
            return {}
        _STATUS_BY_NUMBER.update(table)
    return _STATUS_BY_NUMBER


def status_number(name: str) -> int:
    """The ``vh5_status`` number of a status name (-1 when the library does not define it)."""
    for k, v in status_table().items():
        if v == name:
            return k
    return -1


class Error(Exception):
    """Base class of every error raised by vh5 for a failed library call.

    Attributes:
        status (int): the ``vh5_status`` code (see ``include/vh5.h``).
        status_name (str): the C name of the status, e.g. ``"VH5_ERR_MALFORMED"``.
        message (str): the library's message (without the status name prefix).
    """

    status_name: str = _UNKNOWN
    message: str = ""

    @property
    def status(self) -> int:
        """The ``vh5_status`` number (from the library's table; -1 for an unknown status)."""
        st = self.__dict__.get("_status")
        return status_number(self.status_name) if st is None else st

    @status.setter
    def status(self, value: int) -> None:
        self.__dict__["_status"] = int(value)

    def __str__(self) -> str:  # noqa: D105 - keeps the message readable
        return f"{self.status_name}: {self.message}" if self.message else self.status_name


class NullArgumentError(Error, ValueError):
    """A required pointer argument was NULL (``VH5_ERR_NULL_ARGUMENT``). A bug in vh5's Python layer."""

    status_name = "VH5_ERR_NULL_ARGUMENT"


class InvalidArgumentError(Error, ValueError):
    """An argument has an invalid value: unknown flags, step 0, ndim mismatch, overlapping
    destination strides... (``VH5_ERR_INVALID_ARGUMENT``)."""

    status_name = "VH5_ERR_INVALID_ARGUMENT"


class MalformedError(Error, ValueError):
    """The input bytes are not a well-formed message: truncated, wrong types, data length not
    prod(shape) x item size, trailing bytes, duplicate keys... (``VH5_ERR_MALFORMED``)."""

    status_name = "VH5_ERR_MALFORMED"


class UnsupportedError(Error, ValueError):
    """Well-formed input vh5 deliberately does not handle: pickled objects, variable-length
    types, indefinite lengths where a view is required, too many axes, HDF5 filter pipelines
    libhdf5 cannot decode reliably, chunks needing a filter vh5's libhdf5 lacks (and any write
    to a pipeline holding one)... (``VH5_ERR_UNSUPPORTED``)."""

    status_name = "VH5_ERR_UNSUPPORTED"


class BufferTooSmallError(Error, ValueError):
    """A caller buffer is smaller than needed (``VH5_ERR_BUFFER_TOO_SMALL``)."""

    status_name = "VH5_ERR_BUFFER_TOO_SMALL"


class OutOfBoundsError(Error, IndexError):
    """A selection reaches outside a dataset or array extent and clipping was not asked for
    (``VH5_ERR_OUT_OF_BOUNDS``)."""

    status_name = "VH5_ERR_OUT_OF_BOUNDS"


class DtypeError(Error, TypeError):
    """Element types do not match (and conversion was not asked for), or a dtype is unknown
    (``VH5_ERR_DTYPE``)."""

    status_name = "VH5_ERR_DTYPE"


class HDF5Error(Error, RuntimeError):
    """libhdf5 reported a failure; the message carries its error stack (``VH5_ERR_HDF5``)."""

    status_name = "VH5_ERR_HDF5"


class IoError(Error, OSError):
    """Operating-system level failure: missing file, permission denied, not an HDF5 file, or
    a file locked by another HDF5 instance (``VH5_ERR_IO``)."""

    status_name = "VH5_ERR_IO"


class PanicError(Error, RuntimeError):
    """A Rust panic was caught at the ABI boundary: a bug in vh5, please report it
    (``VH5_ERR_PANIC``)."""

    status_name = "VH5_ERR_PANIC"


class MisalignedError(Error, ValueError):
    """Data is not aligned for its element type and alignment was required
    (``VH5_ERR_MISALIGNED``)."""

    status_name = "VH5_ERR_MISALIGNED"


class ByteOrderError(Error, ValueError):
    """Data is not in native byte order and native order was required
    (``VH5_ERR_BYTE_ORDER``)."""

    status_name = "VH5_ERR_BYTE_ORDER"


class NotFoundError(Error, KeyError):
    """A named object (dataset, group) does not exist (``VH5_ERR_NOT_FOUND``)."""

    status_name = "VH5_ERR_NOT_FOUND"


class InvalidHandleError(Error, ValueError):
    """A handle is not a valid open object of the expected kind: closed, or of the wrong type
    (``VH5_ERR_INVALID_HANDLE``)."""

    status_name = "VH5_ERR_INVALID_HANDLE"


class ServerError(Error):
    """The input is a server's JSON error body (e.g. Reductionist's ``{"error": ...}``), not an
    array payload; the message carries the server's own text (``VH5_ERR_SERVER_ERROR``)."""

    status_name = "VH5_ERR_SERVER_ERROR"


class NoMemoryError(Error, MemoryError):
    """An allocation vh5 needed failed or exceeds a configured limit (``VH5_MAX_CHUNK_BYTES``);
    the message names the chunk (or row) and the bytes (``VH5_ERR_NO_MEMORY``)."""

    status_name = "VH5_ERR_NO_MEMORY"


def _classes() -> dict:
    return {c.status_name: c for c in Error.__subclasses__() if c.status_name != _UNKNOWN}


def error_class(status) -> type:
    """The :class:`Error` subclass for a ``vh5_status`` number or name (``Error`` itself for an
    unknown status)."""
    name = status if isinstance(status, str) else status_table().get(int(status), _UNKNOWN)
    return _classes().get(name, Error)


def error(status_name: str, message: str) -> Error:
    """The exception for status ``status_name`` (e.g. ``"VH5_ERR_DTYPE"``) with ``message``:
    how the Python layer raises a status itself (the number comes from the library)."""
    cls = _classes().get(status_name)
    if cls is None:
        raise ValueError(f"unknown vh5 status name {status_name!r}")
    err = cls(f"{status_name}: {message}" if message else status_name)
    err.message = message
    return err


def make_error(status: int, status_name: str, message: str) -> Error:
    """The exception for a failed call returning ``status`` (``message``: the library's
    last-error text)."""
    cls = error_class(status)
    err = cls(f"{status_name}: {message}" if message else status_name)
    err.status = int(status)
    if cls is Error:
        err.status_name = status_name
    err.message = message
    return err


def with_message(e: Error, message: str) -> Error:
    """A new exception of ``e``'s class and status with another message."""
    err = type(e)(f"{e.status_name}: {message}" if message else e.status_name)
    err.status = e.status
    err.status_name = e.status_name
    err.message = message
    return err


#: (text of a library message written for C callers, its Python equivalent): the library
#: names C flags and functions; :func:`python_message` rewrites them into the Python API's
#: keywords so no Python user reads a C name.
_PYTHON_TERMS = (
    (
        "PAYLOAD_REQUIRE_ALIGNED was given; copy it with payload_copy_data",
        "require_aligned=True was given; decode without require_aligned and call "
        "Payload.copy_native() for an aligned native-order copy",
    ),
    (
        "PAYLOAD_REQUIRE_NATIVE was given; copy it with payload_copy_data",
        "require_native=True was given; decode without require_native and call "
        "Payload.copy_native() for a native-order copy",
    ),
    (
        "it has no contiguous view; use payload_copy_data",
        "it has no contiguous view, which vh5.decode_payload needs: decode this message "
        "with cbor2 instead (or have the sender use a definite-length byte string)",
    ),
    ("(pass VH5_SLICES_CONVERT to let libhdf5 convert)", "(pass convert=True to let libhdf5 convert)"),
    ("(VH5_DTYPE_OPAQUE, itemsize ", "(a numpy void dtype, np.dtype('V'), itemsize "),
    (
        'open the file with VH5_FILE_READ_WRITE (Python: vh5.File(path, "r+"))',
        'open the file with vh5.File(path, "r+")',
    ),
    (
        "open the file with VH5_FILE_ALLOW_EXTERNAL (Python: vh5.File(path, allow_external=True))",
        "open the file with vh5.File(path, allow_external=True)",
    ),
    (
        "(only VH5_SLICES_CLIP = 1; memory copies never convert dtypes)",
        "(only clip=True; memory copies never convert dtypes)",
    ),
    ("give the document format (PAYLOAD_DOC_CBOR or PAYLOAD_DOC_MSGPACK)", 'pass format="cbor" or format="msgpack"'),
    ("(PAYLOAD_MAX_DEPTH; ", "(vh5's limit; "),
    (" (PAYLOAD_MAX_DEPTH)", " (vh5's limit)"),
    (" (PAYLOAD_MAX_NDIM)", " (vh5's limit)"),
    ("(PAYLOAD_MAX_NDIM)", "(vh5's limit)"),
    ("without `VH5_SLICES_CLIP`", "without clip=True"),
    (
        "open it with vh5_file_open and read it with vh5_read_many_slices "
        "(Python: vh5.File(path); command line: vh5 info FILE)",
        "open it with vh5.File(path) (command line: vh5 info FILE)",
    ),
    (
        "read it with the netCDF library (Python: netCDF4.Dataset or scipy.io.netcdf_file)",
        "read it with the netCDF library (netCDF4.Dataset or scipy.io.netcdf_file)",
    ),
)

_C_NAME = re.compile(r"\b(VH5_SLICES_|VH5_FILE_|VH5_GROUP_|PAYLOAD_)[A-Z_]+")
#: How the library names a libhdf5 id in a message: the number right after "dataset_id",
#: "file_id", "(libhdf5|dataset|file) id", "id", "dataset" or "file" (e.g. "dataset_id N is not
#: an open ...", "closing libhdf5 id N", "dataset N belongs to a file opened read-only").
#: Numbers anywhere else (coordinates, byte counts, shapes) are data and are never rewritten.
_ID_MENTION = re.compile(r"\b(?:dataset_id|file_id|(?:(?:libhdf5|dataset|file) )?id|dataset|file) (-?\d+)\b")
#: A number that is certainly a raw libhdf5 id (their type tag sits in the high bits).
_RAW_ID_DIGITS = 15


def python_message(message: str, ids=None) -> str:
    """``message`` in the Python API's terms: C flag and function names replaced by the
    Python keywords (``_PYTHON_TERMS``), and the raw libhdf5 ids the message names (``ids``:
    ``{id: description}``, e.g. ``{360287970189639681: "dataset '/x' of 'f.h5'"}``) by what
    they name. Only a number the message gives as an id (see ``_ID_MENTION``) is an id: a
    long one not in ``ids`` becomes "(an HDF5 id)" (meaningless to a Python user), and every
    other number (a coordinate or byte count of 2**64-1, a shape) is kept as written. Any
    C flag name left over is replaced by a neutral word rather than shown."""
    if "VH5_" in message or "PAYLOAD_" in message or "payload_copy_data" in message or "(Python: " in message:
        for c_text, py_text in _PYTHON_TERMS:
            message = message.replace(c_text, py_text)
    named = {int(k): v for k, v in ids.items()} if ids else {}

    def name_id(m: re.Match) -> str:
        digits = m.group(1)
        desc = named.get(int(digits))
        if desc is not None:
            return desc
        if len(digits.lstrip("-")) >= _RAW_ID_DIGITS:
            return m.group(0)[: m.start(1) - m.start(0)] + "(an HDF5 id)"
        return m.group(0)

    message = _ID_MENTION.sub(name_id, message)
    if _C_NAME.search(message):
        message = _C_NAME.sub("(a flag)", message)
    return message


def check(status: int, ids=None) -> None:
    """Raise the :class:`Error` subclass for ``status`` with the thread's last library message
    in Python terms (:func:`python_message`, ``ids`` naming the handles involved) unless it is
    ``VH5_OK`` (0). Must be called on the thread that made the failing call."""
    if status != 0:
        raise make_error(status, _lib.status_name(status), python_message(_lib.last_error_message(), ids))
