"""Whole msgpack / CBOR documents as Python objects, every array a zero-copy numpy view.

:func:`decode_document` calls ``payload_decode_document`` (one pass over the message in the
library, see ``include/vh5.h``) and builds the Python objects from its item list. What
counts as an array: a msgpack-numpy map (a map with a key ``nd``), an RFC 8746 typed array
(CBOR tags 64-87), a multi-dimensional array (tags 40 / 1040) and a CBOR map with text keys
``bytes`` and ``dtype`` (a Reductionist response).
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping

import numpy as np

from . import _dtypes
from ._errors import check, error
from ._lib import PayloadView, lib
from .payload import _as_bytes_array, numpy_view

__all__ = ["decode_document", "Tag", "Simple", "FrozenDict"]

DOC_FORMATS = {None: 0, "auto": 0, "cbor": 1, "msgpack": 2}
(K_MAP, K_ARRAY, K_TEXT, K_BYTES, K_UINT, K_NEGINT, K_FLOAT, K_BOOL, K_NIL, K_UNDEF, K_SIMPLE, K_TAG, K_EXT, K_VIEW) = (
    range(1, 15)
)
F_INDEFINITE, F_NARROW_FLOAT, F_NUMPY_SCALAR = 1, 2, 4
VH5_ERR_BUFFER_TOO_SMALL = 5

ITEM_DTYPE = np.dtype(
    [
        ("kind", "=u4"),
        ("flags", "=u4"),
        ("parent", "=u8"),
        ("position", "=u8"),
        ("children", "=u8"),
        ("offset", "=u8"),
        ("data_offset", "=u8"),
        ("data_len", "=u8"),
        ("value", "=u8"),
    ]
)
assert ITEM_DTYPE.itemsize == 64


class Tag:
    """A CBOR tag vh5 does not decode itself: ``tag`` (int) and ``value`` (the tagged object)."""

    __slots__ = ("tag", "value")

    def __init__(self, tag: int, value):
        self.tag, self.value = tag, value

    def __eq__(self, other):
        t = getattr(other, "tag", None)
        return t is not None and t == self.tag and getattr(other, "value", None) == self.value

    def __hash__(self):
        # As cbor2's CBORTag: hashable when its value is (a map key's value is made hashable
        # first). Hashing the repr let a key holding a numpy array through, and two such keys
        # then compared arrays (numpy's ambiguous-truth ValueError).
        return hash((self.tag, self.value))

    def __repr__(self):
        return f"vh5.Tag({self.tag}, {self.value!r})"


class FrozenDict(Mapping):
    """An immutable, hashable mapping: what :func:`decode_document` makes of a CBOR map used
    as a map key (as cbor2's ``frozendict``). Equal to any mapping with the same items."""

    __slots__ = ("_d", "_h")

    def __init__(self, items=()):
        self._d = dict(items)
        self._h = None

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __hash__(self):
        if self._h is None:
            self._h = hash(frozenset(self._d.items()))
        return self._h

    def __repr__(self):
        return f"vh5.FrozenDict({self._d!r})"


def _frozen(v):
    """``v`` made hashable for use as a map key, as cbor2 decodes a key: lists (arrays) as
    tuples, dicts (maps) as :class:`FrozenDict`, byte strings as ``bytes``, a tag's value
    likewise, at every depth. Anything else (a numpy array) is returned as is."""
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return FrozenDict((_frozen(k), _frozen(x)) for k, x in v.items())
    if isinstance(v, memoryview):
        return v.tobytes()
    if isinstance(v, Tag):
        return Tag(v.tag, _frozen(v.value))
    return v


class Simple(int):
    """A CBOR simple value other than false/true/null/undefined."""

    def __repr__(self):
        return f"vh5.Simple({int(self)})"


#: An n-item document is built in windows of max(_MIN_WINDOW, n / _WINDOWS) items: the item
#: table and its Python lists then cost about 1/_WINDOWS of an n-item table, and the library
#: walks the document up to each window's end (about _WINDOWS / 2 walks in all).
_WINDOWS = 16
_MIN_WINDOW = 1 << 16


def _format(raw: np.ndarray, fmt: int) -> int:
    """The document format code: ``fmt``, or when 0 (auto) the one the library detects."""
    if fmt:
        return fmt
    out = ctypes.c_uint32(0)
    check(lib().payload_document_format(raw.ctypes.data, raw.size, ctypes.byref(out)))
    return out.value


def _count(raw: np.ndarray, fmt: int):
    """(items, views) of the document: one validating walk with capacities 0."""
    ni, nv = ctypes.c_size_t(0), ctypes.c_size_t(0)
    st = lib().payload_decode_document(
        raw.ctypes.data, raw.size, fmt, None, 0, None, 0, ctypes.byref(ni), ctypes.byref(nv)
    )
    if st != VH5_ERR_BUFFER_TOO_SMALL:
        check(st)
    return ni.value, nv.value


def _range(raw: np.ndarray, fmt: int, first: int, items: np.ndarray, first_view: int = 0, views=None) -> int:
    """payload_decode_document_range: items ``first ..`` into ``items`` and views
    ``first_view ..`` into ``views`` (a ctypes array, or None); returns the number of items
    the library knows of."""
    ni, nv = ctypes.c_size_t(0), ctypes.c_size_t(0)
    st = lib().payload_decode_document_range(
        raw.ctypes.data,
        raw.size,
        fmt,
        first,
        items.ctypes.data,
        items.size,
        first_view,
        ctypes.addressof(views) if views is not None else None,
        len(views) if views is not None else 0,
        ctypes.byref(ni),
        ctypes.byref(nv),
    )
    check(st)
    return ni.value


def _item_offset(raw: np.ndarray, fmt: int, j: int) -> int:
    """The byte offset of item ``j`` (for messages)."""
    one = np.zeros(1, dtype=ITEM_DTYPE)
    _range(raw, fmt, j, one)
    return int(one["offset"][0])


def _array(raw: np.ndarray, v: PayloadView, at: int) -> np.ndarray:
    """The numpy view (read-only) of one payload_view (``at``: its item's byte offset, for
    messages)."""
    dt = _dtypes.to_numpy(v.dtype, v.itemsize, v.byte_order)
    off, nb = int(v.data_offset), int(v.data_len)
    if off + nb > raw.size:
        raise error("VH5_ERR_PANIC", f"library returned data [{off}, {off + nb}) outside a {raw.size}-byte buffer")
    shape = tuple(int(v.shape[i]) for i in range(int(v.ndim)))
    a = numpy_view(raw[off : off + nb].view(dt), shape, bool(v.fortran_order), f"the array at byte {at}")
    a.flags.writeable = False
    return a


def _build(raw, fmt, counts=None, **hooks):
    """The document as Python objects, built from its item list window by window (see
    ``_WINDOWS``): peak memory is the objects built plus one window of items and views.
    ``fmt``: a format code (0: detect); ``counts``: (items, views) when already counted (the
    count walk validates the whole document, which later windows rely on); ``hooks``: as
    :class:`_Builder`."""
    fmt = _format(raw, fmt)
    ni, nv = counts if counts is not None else _count(raw, fmt)
    size = min(ni, max(_MIN_WINDOW, -(-ni // _WINDOWS)))
    items = np.empty(max(size, 1), dtype=ITEM_DTYPE)
    # a window's views are at most as many as its items, numbered on from the earlier ones
    views = (PayloadView * min(size, nv))() if nv else None
    b = _Builder(raw, fmt, **hooks)
    first = 0
    while first < ni:
        known = _range(raw, fmt, first, items, b.nviews, views)
        n = min(known, ni, first + size) - first
        if n <= 0:
            raise error("VH5_ERR_PANIC", f"the library reported {known} items, expected {ni}")
        b.feed(items[:n], first, views)
        first += n
    return b.finish()


class _Builder:
    """Builds the object tree from the pre-order item list, fed in windows (iteratively: no
    recursion). ``key_errors``: an unhashable map key raises vh5.UnsupportedError naming its
    byte offset (else Python's TypeError, as msgpack raises it)."""

    HOOKS = ("bytes_as", "key_bytes", "text", "tag", "ext", "map_hook", "list_hook", "numpy_scalar")

    def __init__(self, raw, fmt, *, key_errors=False, **hooks):
        if set(hooks) != set(self.HOOKS):
            raise TypeError(f"hooks {sorted(hooks)} are not {sorted(self.HOOKS)}")
        self.__dict__.update(hooks)
        self.raw, self.fmt, self.mv = raw, fmt, memoryview(raw)
        self.key_errors = key_errors
        self.nviews = 0  # array items seen so far: the index of the next window's first view
        # frames: [kind, container, remaining, pending key or _NOKEY, tag number, first item,
        # the pending key's first item]; a chunked string's frame collects its chunks
        self.stack = []
        self.root = _NOKEY

    def finish(self):
        if self.stack or self.root is _NOKEY:
            raise error("VH5_ERR_MALFORMED", "document item list ended inside a container")
        return self.root

    def feed(self, win: np.ndarray, first: int, views):
        """Add the items ``first ..`` of the window ``win`` (``views``: its views, the first
        one numbered ``self.nviews``)."""
        kinds = win["kind"].tolist()
        flags = win["flags"].tolist()
        children = win["children"].tolist()
        doff = win["data_offset"].tolist()
        dlen = win["data_len"].tolist()
        vals = win["value"].tolist()
        fvals = win["value"].view(np.float64).tolist() if K_FLOAT in kinds else None
        mv, stack, text, bytes_as = self.mv, self.stack, self.text, self.bytes_as
        for i, k in enumerate(kinds):
            if stack and stack[-1][0] is _CHUNKS:
                f = stack[-1]
                f[1].append(mv[doff[i] : doff[i] + dlen[i]])
                f[2] -= 1
                if f[2]:
                    continue
                stack.pop()
                b = b"".join(f[1])
                v = text(memoryview(b), 0, len(b)) if f[4] == K_TEXT else b
                self._attach(v, f[5])
                continue
            if k == K_MAP or k == K_ARRAY or k == K_TAG:
                c = children[i]
                if k == K_TAG:
                    stack.append([k, None, 1, _NOKEY, vals[i], first + i, 0])
                    continue
                if c:
                    stack.append([k, {} if k == K_MAP else [], c, _NOKEY, 0, first + i, 0])
                    continue
                v = self.map_hook({}) if k == K_MAP else self.list_hook([])
            elif k == K_TEXT or k == K_BYTES:
                if flags[i] & F_INDEFINITE:
                    if children[i]:
                        stack.append([_CHUNKS, [], children[i], _NOKEY, k, first + i, 0])
                        continue
                    v = text(memoryview(b""), 0, 0) if k == K_TEXT else b""
                elif k == K_TEXT:
                    v = text(mv, doff[i], dlen[i])
                else:
                    v = bytes_as(mv, doff[i], dlen[i])
            elif k == K_UINT:
                v = vals[i]
            elif k == K_NEGINT:
                v = -1 - vals[i]
            elif k == K_FLOAT:
                v = fvals[i]
            elif k == K_BOOL:
                v = vals[i] != 0
            elif k == K_NIL or k == K_UNDEF:
                v = None
            elif k == K_VIEW:
                v = _array(self.raw, views[vals[i] - self.nviews], int(win["offset"][i]))
                if flags[i] & F_NUMPY_SCALAR:
                    v = self.numpy_scalar(v)
            elif k == K_EXT:
                code = vals[i] - (1 << 64) if vals[i] >= 1 << 63 else vals[i]
                v = self.ext(code, bytes(mv[doff[i] : doff[i] + dlen[i]]))
            else:
                v = Simple(vals[i])
            self._attach(v, first + i)
        self.nviews += kinds.count(K_VIEW)

    def _attach(self, v, start: int):
        """Attach the complete value ``v`` (first item ``start``) to the open containers,
        closing the ones it completes."""
        stack = self.stack
        while True:
            if not stack:
                if self.root is not _NOKEY:
                    raise error("VH5_ERR_MALFORMED", "document item list has more than one root")
                self.root = v
                return
            f = stack[-1]
            if f[0] == K_MAP:
                if f[3] is _NOKEY:
                    f[3] = self.key_bytes(v)
                    f[6] = start
                else:
                    try:
                        f[1][f[3]] = v
                    except TypeError:
                        if not self.key_errors:
                            raise
                        raise _unhashable_key(_item_offset(self.raw, self.fmt, f[6]), f[3]) from None
                    f[3] = _NOKEY
            elif f[0] == K_ARRAY:
                f[1].append(v)
            else:
                f[1] = v
            f[2] -= 1
            if f[2]:
                return
            stack.pop()
            start = f[5]
            if f[0] == K_MAP:
                v = self.map_hook(f[1])
            elif f[0] == K_ARRAY:
                v = self.list_hook(f[1])
            else:
                v = self.tag(f[4], f[1])


def _unhashable_key(at: int, key) -> Exception:
    """The error for a map key Python cannot hash (``at``: its byte offset)."""

    def holds_array(v):
        if isinstance(v, np.ndarray):
            return True
        if isinstance(v, Tag):
            return holds_array(v.value)
        if isinstance(v, Mapping):
            return any(holds_array(k) or holds_array(x) for k, x in v.items())
        return isinstance(v, tuple) and any(holds_array(x) for x in v)

    if holds_array(key):
        what = "is or holds an array (a numpy array is not hashable)"
    else:
        what = f"is not hashable ({type(key).__name__})"
    return error("VH5_ERR_UNSUPPORTED", f"map key at byte {at} {what}: it cannot be a Python dict key")


class _NoKey:
    pass


_NOKEY = _NoKey()
_CHUNKS = "chunks"  # the frame kind of a chunked (indefinite-length) string


def _text_str(mv, off, n):
    return str(mv[off : off + n], "utf-8")


def _bytes_view(mv, off, n):
    return mv[off : off + n]


def _key(v):
    if isinstance(v, memoryview):
        return v.tobytes()
    return _frozen(v) if isinstance(v, (list, dict, Tag)) else v


def _ident(x):
    return x


def decode_document(buf, format: str | None = None):
    """Decode a whole msgpack or CBOR document: arrays as zero-copy numpy views.

    Args:
        buf: the whole message (``bytes``, ``bytearray``, ``memoryview``, a numpy array or any
            C-contiguous buffer). Not copied: arrays and byte strings view it and keep it
            alive. Do not mutate or resize it while they are in use.
        format: ``None`` / ``"auto"`` (detect: a CBOR map or array tag, or a msgpack map;
            anything valid in both formats, such as a bare scalar, raises
            :class:`vh5.InvalidArgumentError`), ``"cbor"`` or ``"msgpack"``.

    Returns:
        The document as Python objects: ``dict``, ``list``, ``str``, ``int``, ``float``,
        ``bool``, ``None`` (CBOR ``null``, and also CBOR ``undefined``, simple value 23, for
        which cbor2 returns its ``cbor2.undefined`` sentinel: vh5 does not tell the two apart);
        byte strings as read-only ``memoryview`` slices of ``buf`` (map keys
        that are byte strings as ``bytes``, which are hashable); every array (msgpack-numpy
        map, RFC 8746 typed array, tag 40/1040 array) as a read-only numpy array viewing
        ``buf`` (a msgpack-numpy ``nd: false`` scalar as a numpy scalar, as msgpack-numpy
        replaces the map by the array); other CBOR tags as :class:`Tag`; msgpack extension
        types as ``msgpack.ExtType`` when msgpack is installed, else ``(code, bytes)``.

        Reductionist maps (CBOR): a map is one only when it matches the schema exactly: at
        most the keys ``bytes``, ``dtype``, ``shape``, ``shape_as_bytes``, ``count``,
        ``count_as_bytes``, ``byte_order`` (text keys, each once), with ``bytes`` and
        ``dtype``, and values of these CBOR types: ``bytes`` / ``shape_as_bytes`` /
        ``count_as_bytes`` a byte string or RFC 8746 typed array, ``dtype`` / ``byte_order``
        text, ``shape`` an array of unsigned integers, ``count`` an unsigned integer, an array
        of integers (nested or not), a typed array or null. Such a map is returned as a
        ``dict`` with every key, each value exactly as ``cbor2.loads`` reads it (``count`` a
        list, ``shape`` a list, ...: nothing dropped, nothing reinterpreted), except
        ``bytes``, which is the array :func:`vh5.decode_payload` gives for the map alone
        (dtype, byte order and shape applied; a missing ``shape`` means ``[]``, a scalar, as
        Reductionist sends it). So ``doc["bytes"]`` is the array and ``doc["count"]`` the
        counts as sent (use :func:`vh5.decode_payload` for counts as an int64 array and
        masking). Its contents are checked as :func:`vh5.decode_payload` checks them: an
        unknown dtype, a data length that is not prod(shape) x item size, a count of neither
        1 nor prod(shape) elements ... refuse the document. Any other map (an extra user key,
        ``{"bytes": 1, "dtype": "x"}``, ...) is a plain ``dict``, its values decoded as
        everywhere else: as ``cbor2.loads`` with byte strings as memoryviews.

        Map keys are made hashable as cbor2 decodes them: an array key becomes a ``tuple``, a
        map key a :class:`FrozenDict` (equal to a dict of the same items), at every depth,
        with byte strings inside as ``bytes`` and a tag's value likewise (so
        ``decode_document(cbor2.dumps({(1, (2, 3)): 4}))`` is ``{(1, (2, 3)): 4}``). A key
        that is or holds an array (numpy has no hashable array) raises
        :class:`vh5.UnsupportedError` naming the key's byte offset.

    Raises:
        vh5.MalformedError, vh5.UnsupportedError, vh5.DtypeError, vh5.ServerError,
        vh5.InvalidArgumentError: as ``payload_decode_document`` (truncated or malformed
        input, nesting deeper than 64, pickled or structured msgpack-numpy arrays, an empty
        array whose shape numpy cannot hold such as ``[0, 2**64 - 1]``, ...).
        ValueError: ``format`` unknown.
    """
    fmt = DOC_FORMATS.get(format)
    if fmt is None:
        raise ValueError(f"format must be None, 'auto', 'cbor' or 'msgpack', not {format!r}")
    raw = _as_bytes_array(buf)
    return _build(
        raw,
        fmt,
        bytes_as=_bytes_view,
        key_bytes=_key,
        text=_text_str,
        tag=Tag,
        ext=_default_ext,
        map_hook=_ident,
        list_hook=_ident,
        numpy_scalar=lambda a: a[()],
        key_errors=True,
    )


def _default_ext(code, data):
    try:
        import msgpack
    except ImportError:  # pragma: no cover
        return (code, data)
    if code == -1:
        return msgpack.Timestamp.from_bytes(data)
    return msgpack.ExtType(code, data)
