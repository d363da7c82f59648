"""Drop-in ``decode_result`` of PyActiveStorage's Reductionist client
(``activestorage.reductionist.decode_result``), backed by :func:`vh5.decode_payload`.

The original (``cbor2.loads`` + ``numpy.frombuffer``) returns ``(masked result, count)``
but ignores ``byte_order``, keeps ``count`` as a Python list (millions of Python ints for
big results), and its ``count == 0`` mask compares a list to 0, so nothing is ever masked.
This version returns the same 2-tuple with:

- ``result``: a ``numpy.ma.MaskedArray`` of the payload's shape whose elements with count
  0 are masked (one count per element), or all masked when a single count is 0 (full
  reductions, ``select``). Its dtype is the native-order dtype named by the payload
  (e.g. ``float64``), as in the original: native-order payloads are viewed without a copy
  (read-only, keeping the response bytes alive); payloads in the other byte order
  are copied once into native order so values are right.
- ``count``: a 1-D ``numpy.ndarray`` of int64 (not a list), of length 1 for full reductions
  and ``select``, ``prod(shape)`` for axis reductions.

Errors: a JSON error body raises :class:`vh5.ServerError`; a malformed body raises
:class:`vh5.MalformedError` (a ``ValueError``).
"""

from __future__ import annotations

import numpy as np

from ..payload import decode_payload

__all__ = ["decode_result"]


def decode_result(response):
    """Decode a successful Reductionist response into ``(result, count)``.

    Args:
        response: an object with a ``.content`` attribute holding the body bytes (a
            ``requests.Response``), or the body itself (any buffer).

    Returns:
        tuple[numpy.ma.MaskedArray, numpy.ndarray]: the result (shape from ``shape`` /
        ``shape_as_bytes``, ``()`` for scalars, native byte order) masked where the count
        is 0, and the counts as int64.

    Raises:
        vh5.ServerError: the body is a JSON error (the server's message is included).
        vh5.MalformedError, vh5.UnsupportedError, vh5.DtypeError: not a valid payload.
    """
    body = getattr(response, "content", response)
    p = decode_payload(body)
    data = p.data if not p.needs_swap else p.copy_native()
    result = np.ma.MaskedArray(data, mask=p.mask(), copy=False)
    count = p.count if p.count is not None else np.empty(0, dtype=np.int64)
    return result, count
