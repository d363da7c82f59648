"""Mapping between vh5 dtype / byte-order codes (``VH5_DTYPE_*``, ``VH5_ORDER_*``) and numpy."""

from __future__ import annotations

import sys

import numpy as np

from ._errors import error

# VH5_DTYPE_* code -> numpy kind+size (without byte order). 15 (opaque) is 'V<itemsize>'.
CODE_TO_CHAR = {
    1: "b1",
    2: "i1",
    3: "i2",
    4: "i4",
    5: "i8",
    6: "u1",
    7: "u2",
    8: "u4",
    9: "u8",
    10: "f2",
    11: "f4",
    12: "f8",
    13: "c8",
    14: "c16",
}
CHAR_TO_CODE = {v: k for k, v in CODE_TO_CHAR.items()}
OPAQUE = 15

ORDER_LITTLE, ORDER_BIG, ORDER_NONE = 0, 1, 2
ORDER_NAMES = {ORDER_LITTLE: "little", ORDER_BIG: "big", ORDER_NONE: "none"}
NATIVE_ORDER = ORDER_LITTLE if sys.byteorder == "little" else ORDER_BIG


def to_numpy(code: int, itemsize: int, byte_order: int) -> np.dtype:
    """The numpy dtype for a vh5 dtype code, item size (bytes) and byte-order code.

    The byte order is part of the result: big-endian float64 is ``dtype('>f8')``.
    Raises :class:`vh5.DtypeError` for an unknown code.
    """
    if code == OPAQUE:
        return np.dtype(f"V{int(itemsize)}")
    char = CODE_TO_CHAR.get(int(code))
    if char is None:
        raise error("VH5_ERR_DTYPE", f"unknown vh5 dtype code {code}")
    dt = np.dtype(char)
    if dt.itemsize != itemsize:
        raise error("VH5_ERR_DTYPE", f"dtype code {code} has item size {dt.itemsize}, library said {itemsize}")
    if dt.itemsize > 1 and byte_order in (ORDER_LITTLE, ORDER_BIG):
        dt = dt.newbyteorder("<" if byte_order == ORDER_LITTLE else ">")
    return dt


def from_numpy(dt: np.dtype):
    """(code, itemsize, byte-order code) of a numpy dtype; opaque (15) for anything not numeric
    (structured, void, fixed strings...). Object dtypes raise :class:`vh5.DtypeError`."""
    dt = np.dtype(dt)
    if dt.hasobject:
        raise error("VH5_ERR_DTYPE", f"object dtype {dt} cannot be moved as raw bytes")
    key = f"{dt.kind}{dt.itemsize}"
    code = CHAR_TO_CODE.get(key, OPAQUE)
    if dt.itemsize <= 1 or dt.byteorder == "|":
        order = ORDER_NONE
    elif dt.isnative:
        order = NATIVE_ORDER
    else:
        order = ORDER_BIG if NATIVE_ORDER == ORDER_LITTLE else ORDER_LITTLE
    return code, dt.itemsize, order
