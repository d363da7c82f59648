"""Drop-in for ``msgpack_numpy.unpackb`` (msgpack-numpy 0.4) backed by vh5: arrays are views.

``unpackb(buf, **kw)`` returns what ``msgpack.unpackb(buf, object_hook=msgpack_numpy.decode,
**kw)`` / ``msgpack_numpy.unpackb(buf, **kw)`` returns, except that every array is a
read-only numpy view of ``buf`` instead of a copy (it keeps ``buf`` alive). The whole message
is validated in one walk by the library (``payload_decode_document``), then built from its
items window by window (see :mod:`vh5.document`).

Same results for: nested maps / lists of anything msgpack encodes; keys as ``bytes`` (bin) or
``str``; ``raw=True`` (every str as ``bytes``); ``use_list=False`` (tuples);
``object_hook`` / ``object_pairs_hook`` / ``list_hook`` (applied bottom-up like msgpack);
``strict_map_key`` (keys must be str or bytes, the msgpack >= 1.0 default); extension types
(``ext_hook``, default ``msgpack.ExtType``; type -1 is a ``msgpack.Timestamp``); numpy
scalars (``nd: false``), 0-d, empty, bool, complex, byte-swapped and Fortran-order arrays
(msgpack-numpy packs those as C-order copies); Python ``complex`` values.

Differences (all but the last a refusal rather than a different value; the last one returns an
array where msgpack-numpy returns the map):
- kind ``'O'`` (object arrays) raises :class:`vh5.UnsupportedError`: the pickle is never
  loaded (msgpack-numpy would run it);
- structured dtypes (kind ``'V'``) and dtypes vh5 has no view for (strings ``<U``/``|S``,
  long double ``<f16``, type strings numpy spells otherwise) are decoded by msgpack +
  msgpack-numpy's decode hook (copies, object arrays still refused) when msgpack-numpy is
  installed, else the library's :class:`vh5.UnsupportedError` / :class:`vh5.DtypeError`;
- a map with keys ``nd``, ``type`` and ``data`` that is not a valid msgpack-numpy array
  raises :class:`vh5.MalformedError` (msgpack-numpy may return the map unchanged);
- text keys ``"nd"``, ... also mark an array (msgpack-numpy tests only byte-string keys): a
  map ``{"nd": True, "type": "<f8", "kind": b"", "shape": [1], "data": b"..."}`` (text keys,
  e.g. packed with ``use_bin_type`` and read with ``raw=False``) comes back as the array, where
  msgpack-numpy returns the map itself — a different value, not a refusal.
"""

from __future__ import annotations

from .. import _errors
from ..document import _build, _count, _default_ext, _ident
from ..payload import _as_bytes_array

__all__ = ["unpackb", "loads"]

_IGNORED = {
    "max_buffer_size",
    "max_str_len",
    "max_bin_len",
    "max_array_len",
    "max_map_len",
    "max_ext_len",
    "unicode_errors",
    "timestamp",
}


def _complex_hook(d):
    if b"complex" in d and b"nd" not in d:
        data = d.get(b"data")
        if data is not None:
            return complex(data.decode() if isinstance(data, bytes) else str(data))
    return d


_NOTHING = object()


def _no_arrays(buf, raw, use_list, object_hook, object_pairs_hook, list_hook, strict_map_key, ext_hook):
    """A document without arrays (validated by the library's walk, which found no array
    map): msgpack's own C decoder builds the same objects faster than Python can (and copies
    nothing large: there are no arrays). _NOTHING when the walk must build them (no msgpack)."""
    try:
        import msgpack
    except ImportError:  # pragma: no cover
        return _NOTHING
    if object_pairs_hook is not None:
        hook = None
    elif object_hook is not None:

        def hook(d):
            d = _complex_hook(d)
            return object_hook(d) if isinstance(d, dict) else d
    else:
        hook = _complex_hook
    kw = dict(raw=raw, use_list=use_list, strict_map_key=strict_map_key)
    if hook is not None:
        kw["object_hook"] = hook
    if object_pairs_hook is not None:
        kw["object_pairs_hook"] = object_pairs_hook
    if list_hook is not None:
        kw["list_hook"] = list_hook
    if ext_hook is not None:
        kw["ext_hook"] = ext_hook
    return msgpack.unpackb(memoryview(buf), **kw)


def _is_object_kind(kind) -> bool:
    """True when ``kind`` compares equal to ``b"O"`` or ``"O"`` as msgpack-numpy tests it.
    The hook runs on inner maps first, so ``kind`` may already be a numpy array (a nested
    array map): a one-element ``[b"O"]`` counts (msgpack-numpy would unpickle it), one whose
    comparison has no truth value does not (msgpack-numpy's own ``== b"V"`` test raises
    before it could reach the pickle)."""
    for o in (b"O", "O"):
        try:
            if bool(kind == o):
                return True
        except (ValueError, TypeError):
            pass
    return False


def _decode_refusing_objects(decode, obj, chain=None):
    """msgpack-numpy's ``decode`` hook for the structured-dtype fallback, refusing kind 'O'
    (pickled object arrays) like the library does: pickled data is never loaded."""
    if isinstance(obj, dict):
        nd = obj.get(b"nd", obj.get("nd"))
        kind = obj.get(b"kind", obj.get("kind"))
        if nd is not None and _is_object_kind(kind):
            raise _errors.error(
                "VH5_ERR_UNSUPPORTED",
                "msgpack-numpy object array (kind 'O'): its data is a pickle, which vh5 never loads",
            )
    return decode(obj, chain=chain)


def unpackb(
    packed,
    *,
    raw: bool = False,
    use_list: bool = True,
    object_hook=None,
    object_pairs_hook=None,
    list_hook=None,
    strict_map_key: bool = True,
    ext_hook=None,
    **kwargs,
):
    """Unpack one msgpack message like ``msgpack_numpy.unpackb``, arrays as views of ``packed``.

    Args: as ``msgpack.unpackb`` (see the module doc for what is supported); the size limits
    (``max_*_len``, ``max_buffer_size``) and ``unicode_errors`` are accepted and ignored (the
    library bounds the work by the input size), ``timestamp`` other than 0 is refused.

    Raises: the :class:`vh5.Error` subclasses of :func:`vh5.decode_document`; ``ValueError``
    for a non-str/bytes map key under ``strict_map_key``; ``TypeError`` for unknown keywords.
    """
    unknown = set(kwargs) - _IGNORED
    if unknown:
        raise TypeError(f"unpackb() got unexpected keyword arguments {sorted(unknown)}")
    if kwargs.get("timestamp", 0) != 0:
        raise TypeError("vh5.compat.msgpack_numpy.unpackb supports only timestamp=0")
    if object_hook is not None and object_pairs_hook is not None:
        raise TypeError("object_pairs_hook and object_hook are mutually exclusive")
    buf = _as_bytes_array(packed)
    try:
        # First pass counts only (the library walks and validates the whole message).
        ni, nv = _count(buf, 2)
        if nv == 0:
            fast = _no_arrays(buf, raw, use_list, object_hook, object_pairs_hook, list_hook, strict_map_key, ext_hook)
            if fast is not _NOTHING:
                return fast
    except (_errors.UnsupportedError, _errors.DtypeError) as e:
        if "structured dtype" in str(e) or "unsupported numpy type string" in str(e):
            try:
                import msgpack_numpy
            except ImportError:
                raise e from None
            import functools

            import msgpack

            # msgpack-numpy's own decoder, but never on an object array: msgpack_numpy.unpackb
            # would unpickle it (arbitrary code from the message), even when a structured
            # array earlier in the same message is what sent us here.
            kw = dict(raw=raw, use_list=use_list, strict_map_key=strict_map_key, **kwargs)
            for k, v in (("object_pairs_hook", object_pairs_hook), ("list_hook", list_hook), ("ext_hook", ext_hook)):
                if v is not None:
                    kw[k] = v
            kw["object_hook"] = functools.partial(_decode_refusing_objects, msgpack_numpy.decode, chain=object_hook)
            return msgpack.unpackb(bytes(memoryview(buf)), **kw)
        raise

    def key(k):
        if isinstance(k, (str, bytes)):
            return k
        if strict_map_key:
            raise ValueError(f"{type(k).__name__} is not allowed for map key when strict_map_key=True")
        return tuple(k) if isinstance(k, list) else k

    def map_hook(d):
        d = _complex_hook(d)
        if not isinstance(d, dict):
            return d
        if object_pairs_hook is not None:
            return object_pairs_hook(list(d.items()))
        return object_hook(d) if object_hook is not None else d

    seq = _ident if use_list else tuple
    lh = (lambda x: list_hook(seq(x))) if list_hook is not None else seq
    ext = ext_hook if ext_hook is not None else _default_ext
    return _build(
        buf,
        2,
        (ni, nv),
        bytes_as=lambda mv, o, n: mv[o : o + n].tobytes(),
        key_bytes=key,
        text=(lambda mv, o, n: mv[o : o + n].tobytes()) if raw else (lambda mv, o, n: str(mv[o : o + n], "utf-8")),
        tag=lambda t, v: (t, v),
        ext=ext,
        map_hook=map_hook,
        list_hook=lh,
        numpy_scalar=lambda a: a[()],
    )


loads = unpackb
