"""The two-call protocol of the C functions that return a variable-size result
(``vh5_group_members``, ``vh5_link_get``): a size query, then the copy."""

from __future__ import annotations

import ctypes

from ._datasets import in_file
from ._errors import Error, check, error, status_number

__all__ = ["two_call"]


def two_call(file, call, what: str, *, size_only: bool = False) -> bytes:
    """The result of a C function of the two-call protocol (``vh5_group_members``,
    ``vh5_link_get``): ``call(file_id, buf, cap, len_out)`` returns a status; a size query
    (``buf`` None, ``cap`` 0), then the copy, again when the result grew between the two
    calls (another writer of an r+ file). ``size_only``: the query alone (its errors), giving
    ``b""``. Errors name the file; ``what`` names the result when it keeps changing."""
    fid = file.id
    ids = {fid: f"file {file.filename!r}"}
    n = ctypes.c_size_t(0)
    too_small = status_number("VH5_ERR_BUFFER_TOO_SMALL")
    for _ in range(8):
        try:
            check(call(fid, None, 0, ctypes.byref(n)), ids)
            if size_only:
                return b""
            buf = ctypes.create_string_buffer(max(n.value, 1))
            st = call(fid, buf, n.value, ctypes.byref(n))
            if st == too_small:
                continue
            check(st, ids)
        except Error as e:
            raise in_file(e, file.filename) from None
        return buf.raw[: n.value]
    raise error("VH5_ERR_HDF5", f"{what} in {file.filename!r} kept changing while read")
