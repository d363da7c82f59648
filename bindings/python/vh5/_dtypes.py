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
    if dt.itemsize <= 1 or dt.byteorder == "|" or code == OPAQUE:
        order = ORDER_NONE  # opaque records are moved as raw bytes, unswapped
    elif dt.isnative:
        order = NATIVE_ORDER
    else:
        order = ORDER_BIG if NATIVE_ORDER == ORDER_LITTLE else ORDER_LITTLE
    return code, dt.itemsize, order


def swapped(dt: np.dtype) -> bool:
    """Whether a read destination of dtype ``dt`` needs ``VH5_SLICES_SWAPPED`` (numbers in
    non-native byte order). Not a datetime64 / timedelta64 one, nor records holding one: vh5
    moves those as opaque raw bytes, which :func:`layout_checked` has checked are the
    dataset's own memory type (byte order included)."""
    return not dt.isnative and dt.kind not in "MmV"


def layout_checked(dt: np.dtype) -> bool:
    """Whether moving ``dt`` to or from a dataset needs :meth:`Dataset._check_records`: every
    dtype vh5 moves as opaque raw records (code 15) except plain ``V<n>`` (raw records on
    purpose): record dtypes (fields), subarrays, fixed-length bytes (``S``), datetime64 /
    timedelta64 (``M``/``m``: h5py stores them as opaque types tagged with the numpy dtype),
    numpy's unicode strings (``U``, UCS-4, which no HDF5 type is) and numbers without a vh5
    code (``longdouble``). Plain numbers are checked by the library (codes and byte order)."""
    kind = dt.kind
    if kind in "biu":
        return False
    if kind in "fc":  # float16/32/64, complex64/128 have codes; longdouble does not
        return dt.itemsize not in ((2, 4, 8) if kind == "f" else (8, 16))
    if kind == "V":
        return dt.names is not None or dt.subdtype is not None
    return kind != "O"  # object dtypes are refused by from_numpy


def from_description(d):
    """The numpy dtype of a ``vh5_dataset_mem_type`` description (JSON decoded: a type string,
    numpy's dict form of a compound, ``[base, dims]`` for an array type), None for null."""
    if d is None:
        return None
    return np.dtype(_dtype_arg(d))


def _dtype_arg(d):
    if isinstance(d, str):
        return d
    if isinstance(d, list):
        return (_dtype_arg(d[0]), tuple(int(n) for n in d[1]))
    return {
        "names": list(d["names"]),
        "formats": [_dtype_arg(f) for f in d["formats"]],
        "offsets": [int(o) for o in d["offsets"]],
        "itemsize": int(d["itemsize"]),
    }


def layout_text(dt: np.dtype) -> str:
    """A record dtype's full layout for messages: names, formats, offsets and item size
    (numpy's dict form; ``repr(dt)`` leaves the offsets out for packed layouts)."""
    if dt.names is None:
        return dt.str if dt.subdtype is None else repr(dt)
    parts = []
    for name in dt.names:
        fdt, off = dt.fields[name][:2]
        parts.append(f"{name!r}: {layout_text(fdt) if fdt.names else _leaf(fdt)} at {off}")
    return "{" + ", ".join(parts) + f"; itemsize {dt.itemsize}}}"


def _leaf(dt: np.dtype) -> str:
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{layout_text(base) if base.names else base.str} x {shape}"
    return dt.str


def dtype_spec(dt: np.dtype):
    """``dt`` as an argument of ``np.dtype`` that keeps every offset (for messages)."""
    if dt.names is None:
        return dt.str if dt.subdtype is None else (dtype_spec(dt.subdtype[0]), dt.subdtype[1])
    return {
        "names": list(dt.names),
        "formats": [dtype_spec(dt.fields[n][0]) for n in dt.names],
        "offsets": [dt.fields[n][1] for n in dt.names],
        "itemsize": dt.itemsize,
    }
