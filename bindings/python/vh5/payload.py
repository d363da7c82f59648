"""Zero-copy decoding of serialized array payloads into numpy views.

Formats (detected by the library from the first byte; see ``payload_decode_view`` in
``include/vh5.h`` for the exact rules and the specifications they follow):

- ``"reductionist"``: the CBOR map a Reductionist active-storage server returns
  (reductionist-rs 0.12 - 0.13.1: ``bytes``, ``dtype``, ``shape`` / ``shape_as_bytes``,
  ``count`` / ``count_as_bytes``, ``byte_order``);
- ``"typed_array"``: an RFC 8746 typed-array tag (64-87) around one byte string (1-D);
- ``"multidim_array"``: RFC 8746 multi-dimensional array, tag 40 (row-major, C order) or
  1040 (column-major, Fortran order);
- ``"msgpack_numpy"``: a msgpack-numpy map (``nd``, ``type``, ``kind``, ``shape``, ``data``);
  pickled object arrays are refused.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _dtypes
from ._errors import check, error
from ._lib import PAYLOAD_REQUIRE_ALIGNED, PAYLOAD_REQUIRE_NATIVE, PayloadView, lib

__all__ = ["Payload", "decode_payload"]

FORMAT_NAMES = {1: "reductionist", 2: "typed_array", 3: "multidim_array", 4: "msgpack_numpy"}
LAYOUT_NAMES = {
    0: "none",
    1: "reductionist-0.12",
    2: "reductionist-0.13.0",
    3: "reductionist-0.13.1",
    4: "client",
}
COUNT_ABSENT, COUNT_SCALAR, COUNT_BYTES, COUNT_INTS = 0, 1, 2, 3
_NATIVE_I8 = np.dtype("=i8")


def _as_bytes_array(buf) -> np.ndarray:
    """A 1-D uint8 numpy view of ``buf`` (no copy). Its ``.base`` chain keeps ``buf`` alive."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise ValueError("payload buffer must be C-contiguous")
        return buf.reshape(-1).view(np.uint8)
    try:
        mv = memoryview(buf)
    except TypeError:
        raise TypeError(
            f"payload must be bytes, bytearray, memoryview or another buffer, not {type(buf).__name__}"
        ) from None
    if not mv.c_contiguous:
        raise ValueError("payload buffer must be C-contiguous")
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return np.frombuffer(mv, dtype=np.uint8)


_INTP_MAX = np.iinfo(np.intp).max


def numpy_view(flat: np.ndarray, shape: tuple, fortran: bool, where: str) -> np.ndarray:
    """``flat`` (the data bytes viewed as the element type) reshaped to ``shape``.

    The library accepts any shape whose element count times item size fits in 64 bits, so an
    empty array may declare an axis numpy cannot hold: numpy needs every axis, and the
    product of the non-zero axes times the item size, to be at most ``2**63 - 1`` (e.g.
    ``[0, 2**64 - 1]``, ``[0, 2**62, 2**62]``). Such a shape raises
    :class:`vh5.UnsupportedError` naming it and ``where`` (the array's byte offset), not
    numpy's bare ``ValueError``."""
    size = flat.dtype.itemsize
    for n in shape:
        if n:
            size *= n
    if size > _INTP_MAX or any(n > _INTP_MAX for n in shape):
        raise error(
            "VH5_ERR_UNSUPPORTED",
            f"{where}: shape {list(shape)} (item size {flat.dtype.itemsize}) has no numpy equivalent: numpy needs "
            f"every axis, and the product of the non-zero axes times the item size, to be at most 2**63-1",
        )
    return flat.reshape(shape, order="F" if fortran else "C")


class Payload:
    """The decoded view of one array payload. Created by :func:`decode_payload`.

    All arrays it hands out view the caller's buffer (no copy) unless stated otherwise, and
    keep that buffer alive through their ``.base`` chain: deleting the caller's own reference
    is safe. They are read-only when the buffer is immutable (``bytes``) and writable views of
    it when the buffer is (``bytearray``): writing through them changes the buffer.

    Attributes:
        data (numpy.ndarray): the result array, shape :attr:`shape`, dtype :attr:`dtype` with
            the payload's byte order (e.g. ``dtype('>f8')``; never byte-swapped), viewing the
            buffer. For column-major payloads (tag 1040) it is Fortran-ordered, so
            ``data[i, j]`` is the element at row i, column j. ``data.flags.aligned`` is False
            when the bytes sit at an address that is not a multiple of the element alignment
            (common for Reductionist float64 results); use :meth:`copy_native` for an aligned
            copy.
        count (numpy.ndarray | None): 1-D int64, the number of non-missing input elements
            behind each result element (Reductionist's ``count``), ``None`` when the payload
            carries none. Its length is :attr:`count_len`: ``prod(shape)`` for axis
            reductions, but 1 for full reductions and ``select``. It is a view of the buffer
            when the payload carries int64 counts as bytes in native order
            (``count_as_bytes``); otherwise it is a new array decoded by the library (never a
            Python list). A bare integer count becomes a 1-element array; an empty count
            (``[]``, Reductionist's companion of ``count_as_bytes``) is ``None``; a count of
            neither 1 nor ``prod(shape)`` elements is refused (:class:`vh5.MalformedError`).
        shape (tuple[int, ...]): the result shape (``()`` for scalars).
        dtype (numpy.dtype): element type including byte order.
        format (str): ``"reductionist"``, ``"typed_array"``, ``"multidim_array"`` or
            ``"msgpack_numpy"``.
        byte_order (str): ``"little"``, ``"big"`` or ``"none"`` (1-byte elements): the order
            of the bytes on the wire.
        layout (str): which variant of a Reductionist map the message is (``payload_view.layout``):
            ``"reductionist-0.12"`` (5 keys; also a 0.13.0 response without ``*_as_bytes``),
            ``"reductionist-0.13.0"`` (``*_as_bytes`` keys only when non-empty),
            ``"reductionist-0.13.1"`` (always 7 keys), ``"client"`` (any other accepted map:
            bare or nested count, missing ``shape`` / ``byte_order``...), ``"none"`` for the
            other formats.
        order (str): ``"C"`` (row-major) or ``"F"`` (column-major, RFC 8746 tag 1040) element
            order of the data.
        aligned (bool): whether the data bytes are aligned for the element type.
        needs_swap (bool): whether the wire order differs from this machine's order.
        data_offset (int): byte offset of the data inside the buffer.
        nbytes (int): byte length of the data.
        count_len (int): number of counts (0 when absent).
    """

    __slots__ = (
        "_raw",
        "_view",
        "data",
        "count",
        "shape",
        "dtype",
        "format",
        "byte_order",
        "layout",
        "order",
        "aligned",
        "needs_swap",
        "data_offset",
        "nbytes",
        "count_len",
        "_count_is_view",
    )

    def __init__(self, raw: np.ndarray, view: PayloadView):
        self._raw = raw
        self._view = view
        ndim = int(view.ndim)
        self.shape = tuple(int(view.shape[i]) for i in range(ndim))
        self.dtype = _dtypes.to_numpy(view.dtype, view.itemsize, view.byte_order)
        self.format = FORMAT_NAMES.get(int(view.format), f"unknown({int(view.format)})")
        self.byte_order = _dtypes.ORDER_NAMES.get(int(view.byte_order), str(int(view.byte_order)))
        fortran = bool(view.fortran_order)
        self.layout = LAYOUT_NAMES.get(int(view.layout), f"unknown({int(view.layout)})")
        self.order = "F" if fortran else "C"
        self.aligned = bool(view.aligned)
        self.needs_swap = bool(view.needs_swap)
        self.data_offset = int(view.data_offset)
        self.nbytes = int(view.data_len)
        self.data = self._data_view(raw, fortran)
        self.count_len = int(view.count_len) if view.count_form != COUNT_ABSENT else 0
        self.count, self._count_is_view = self._decode_count(raw, view)

    def _data_view(self, raw: np.ndarray, fortran: bool) -> np.ndarray:
        off, n = self.data_offset, self.nbytes
        if off + n > raw.size:
            raise error("VH5_ERR_PANIC", f"library returned data [{off}, {off + n}) outside a {raw.size}-byte buffer")
        flat = raw[off : off + n].view(self.dtype)
        return numpy_view(flat, self.shape, fortran, f"the {self.format} payload (data at byte {off})")

    def _decode_count(self, raw: np.ndarray, view: PayloadView):
        form = int(view.count_form)
        if form == COUNT_ABSENT:
            return None, False
        if form == COUNT_SCALAR:
            return np.array([int(view.count_scalar)], dtype=np.int64), False
        n = int(view.count_len)
        if form == COUNT_BYTES:
            dt = _dtypes.to_numpy(view.count_dtype, 8, view.count_byte_order) if view.count_dtype == 5 else None
            if dt is not None and dt.isnative:
                off = int(view.count_data) - raw.__array_interface__["data"][0]
                return raw[off : off + 8 * n].view(np.int64), True
        out = np.empty(n, dtype=np.int64)
        written = ctypes.c_size_t(0)
        check(lib().payload_decode_count(raw.ctypes.data, raw.size, out.ctypes.data, n, ctypes.byref(written)))
        if written.value != n:
            raise error("VH5_ERR_MALFORMED", f"the library decoded {written.value} counts, expected {n}")
        return out, False

    @property
    def count_is_view(self) -> bool:
        """True when :attr:`count` views the buffer (no copy), False when it was decoded."""
        return self._count_is_view

    @property
    def buffer(self) -> np.ndarray:
        """The whole caller buffer as a 1-D uint8 numpy view (no copy)."""
        return self._raw

    def mask(self):
        """The boolean mask of :meth:`masked` (``numpy.ma.nomask`` when nothing is masked).

        Rule: an element is masked when its count is 0, i.e. every input element behind it
        was missing.

        - one count per element (``count_len == prod(shape)``): element i (C order) is
          masked when ``count[i] == 0``;
        - a single count for a result of any other size (full reductions and ``select``):
          everything is masked when that count is 0, nothing otherwise;
        - no count: nothing is masked.

        Raises:
            ValueError: the count length is neither 1 nor ``prod(shape)``.
        """
        if self.count is None:
            return np.ma.nomask
        size = int(np.prod(self.shape, dtype=np.int64))
        if self.count.size == size:
            m = (self.count == 0).reshape(self.shape)
        elif self.count.size == 1:
            m = np.full(self.shape, bool(self.count[0] == 0))
        else:
            raise ValueError(
                f"cannot mask: payload has {self.count.size} counts for {size} elements (expected 1 or one per element)"
            )
        return m if m.any() else np.ma.nomask

    def masked(self) -> np.ma.MaskedArray:
        """:attr:`data` as a ``numpy.ma.MaskedArray`` masking elements whose count is 0.

        The data is not copied (the masked array's data is :attr:`data`); the mask is a new
        boolean array (or ``nomask``). See :meth:`mask` for the rule.
        """
        return np.ma.MaskedArray(self.data, mask=self.mask(), copy=False)

    def copy_native(self) -> np.ndarray:
        """A new, aligned array holding the data in native byte order (via ``payload_copy_data``).

        Same shape as :attr:`data`, dtype :attr:`dtype` in native order, writable, owning its
        memory; C-ordered (Fortran-ordered for column-major payloads, so element order on
        the wire is preserved). Costs one pass over the data (memcpy speed plus the swap).
        """
        dt = self.dtype.newbyteorder("=") if self.dtype.itemsize > 1 else self.dtype
        out = np.empty(self.shape, dtype=dt, order=self.order)
        written = ctypes.c_size_t(0)
        raw = self._raw
        check(lib().payload_copy_data(raw.ctypes.data, raw.size, out.ctypes.data, out.nbytes, ctypes.byref(written)))
        if written.value != out.nbytes:
            raise error("VH5_ERR_MALFORMED", f"the library copied {written.value} bytes, expected {out.nbytes}")
        return out

    def __repr__(self) -> str:
        return (
            f"<vh5.Payload format={self.format} dtype={self.dtype.str} shape={self.shape} "
            f"order={self.order} layout={self.layout} aligned={self.aligned} count_len={self.count_len}>"
        )


def decode_payload(buf, *, require_aligned: bool = False, require_native: bool = False) -> Payload:
    """Decode one serialized array message into zero-copy numpy views.

    Args:
        buf: the whole message: ``bytes``, ``bytearray``, ``memoryview``, a numpy array or any
            C-contiguous object supporting the buffer protocol. It is not copied; the returned
            arrays view it and keep it alive (dropping your own reference is safe). Do not
            resize or mutate it while the views are in use.
        require_aligned: raise :class:`vh5.MisalignedError` unless the data is aligned for its
            element type (instead of handing out an unaligned view).
        require_native: raise :class:`vh5.ByteOrderError` unless the data is in this machine's
            byte order.

    Returns:
        Payload: ``.data`` (numpy view, correct dtype and byte order), ``.count`` (int64 array
        or None), ``.shape``, ``.dtype``, ``.format``, ``.byte_order``, ``.layout``, ``.order``,
        ``.aligned``, ``.masked()``, ``.copy_native()``.

    Raises:
        vh5.MalformedError: not a well-formed message (truncated, wrong types, data length not
            prod(shape) x item size, ...); the message names the key and byte offset.
        vh5.UnsupportedError: well-formed but refused (pickled msgpack objects, indefinite
            lengths, too many axes, an empty array's shape numpy cannot hold such as
            ``[0, 2**64 - 1]``, ...).
        vh5.ServerError: the bytes are a server's JSON error body; the message is the server's.
        vh5.DtypeError: unknown dtype name.
        vh5.MisalignedError, vh5.ByteOrderError: with ``require_aligned`` / ``require_native``.
        TypeError / ValueError: ``buf`` is not a C-contiguous buffer.

    Thread-safety: safe to call from many threads at once; the GIL is released while the
    library walks the message.
    """
    raw = _as_bytes_array(buf)
    flags = (PAYLOAD_REQUIRE_ALIGNED if require_aligned else 0) | (PAYLOAD_REQUIRE_NATIVE if require_native else 0)
    view = PayloadView()
    check(lib().payload_decode_view(raw.ctypes.data, raw.size, flags, ctypes.byref(view)))
    return Payload(raw, view)
