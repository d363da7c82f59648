"""h5py / numpy *basic* selections -> hyperslab rows (start, count, step per axis).

A selection is what goes between the brackets of ``dset[...]``: an integer, a slice with a
positive step, ``Ellipsis``, or a tuple of those (``np.s_[0:10, ::2, 5]``), with fewer
entries than axes meaning "all of the remaining axes". Integers select one element and drop
their axis from the result (as numpy and h5py do); slices are clipped to the extent as numpy
clips them. Everything else is refused with an error naming the selection and the axis:
negative steps and a step of 0 (``ValueError``, as h5py), lists, arrays and boolean masks
(``TypeError``: vh5 reads hyperslabs, not point lists), ``None`` / ``np.newaxis``
(``TypeError``), out-of-range integers (``IndexError``, numpy's message).

Pure Python + numpy: no library calls.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

__all__ = ["Hyperslab", "parse", "slice_table", "SliceTable", "is_selection_list"]


class Hyperslab(NamedTuple):
    """One selection in dataset coordinates: ``start``/``count``/``step`` per axis (integer
    axes have count 1) and ``shape``, the shape numpy would give the result (integer axes
    dropped)."""

    start: tuple
    count: tuple
    step: tuple
    shape: tuple


def _where(index) -> str:
    return "" if index is None else f"selection {index}: "


def _as_tuple(sel) -> tuple:
    if isinstance(sel, tuple):
        return sel
    return (sel,)


def _describe(k) -> str:
    if isinstance(k, slice):
        parts = ["" if v is None else str(v) for v in (k.start, k.stop, k.step)]
        return ":".join(parts[:2]) + (":" + parts[2] if k.step is not None else "")
    r = repr(k)
    return r if len(r) <= 60 else r[:57] + "..."


def parse(sel, shape, index=None) -> Hyperslab:
    """The hyperslab of basic selection ``sel`` on a dataset of ``shape``.

    ``index`` (the position of ``sel`` in a list of selections) is named in error messages.

    Raises:
        IndexError: too many indices, more than one Ellipsis, an integer out of range.
        ValueError: a slice step <= 0.
        TypeError: anything but integers, slices and Ellipsis (lists, arrays, masks, None,
            floats, strings).
    """
    hs = _plain(sel, shape)
    return hs if hs is not None else _parse_general(sel, shape, index)


def _parse_general(sel, shape, index=None) -> Hyperslab:
    """:func:`parse` of any selection (the checks and messages)."""
    shape = tuple(int(n) for n in shape)
    keys = _as_tuple(sel)
    nd = len(shape)
    n_ell = sum(1 for k in keys if k is Ellipsis)
    if n_ell > 1:
        raise IndexError(f"{_where(index)}an index can only have a single ellipsis ('...'), got {keys!r}")
    explicit = len(keys) - n_ell
    if explicit > nd:
        raise IndexError(f"{_where(index)}too many indices for a dataset of {nd} axes: {len(keys)} given ({sel!r})")
    if n_ell:
        i = next(i for i, k in enumerate(keys) if k is Ellipsis)
        keys = keys[:i] + (slice(None),) * (nd - explicit) + keys[i + 1 :]
    else:
        keys = keys + (slice(None),) * (nd - explicit)
    start, count, step, out = [], [], [], []
    for axis, (k, n) in enumerate(zip(keys, shape)):
        if isinstance(k, slice):
            s, e, st = _slice(k, n, axis, index)
            c = max(0, -(-(e - s) // st))
            start.append(s if c else 0)
            count.append(c)
            step.append(st)
            out.append(c)
            continue
        if isinstance(k, (bool, np.bool_)):
            raise TypeError(
                f"{_where(index)}axis {axis}: boolean index {k!r} (a mask) is not a basic selection; "
                "vh5 reads hyperslabs (integers, slices with positive steps, ...)"
            )
        try:
            i = operator.index(k)
        except TypeError:
            raise TypeError(_unsupported(k, axis, index)) from None
        if not -n <= i < n:
            raise IndexError(f"{_where(index)}index {i} is out of bounds for axis {axis} with size {n}")
        start.append(i % n if n else 0)
        count.append(1)
        step.append(1)
    return Hyperslab(tuple(start), tuple(count), tuple(step), tuple(out))


def _plain(sel, shape):
    """:func:`parse` of the common selections alone, cheaply (``d[sel]`` of one small row):
    a tuple of at most one entry per axis (or one entry), each a Python ``int`` in range or
    a ``slice`` of ``int`` / None bounds and no step, the remaining axes whole; ``shape`` a
    tuple of ``int``. None for anything else (:func:`parse` then decides, and names what is wrong)."""
    keys = sel if type(sel) is tuple else (sel,)
    if type(shape) is not tuple or len(keys) > len(shape):
        return None
    if len(keys) < len(shape):  # the remaining axes whole (an Ellipsis among keys declines below)
        keys = keys + (slice(None),) * (len(shape) - len(keys))
    start, count, out = [], [], []
    for k, n in zip(keys, shape):
        tk = type(k)
        if tk is slice:
            if k.step is not None or type(n) is not int:
                return None
            a, b = k.start, k.stop
            if not (a is None or type(a) is int) or not (b is None or type(b) is int):
                return None
            s, e, _ = k.indices(n)
            c = e - s if e > s else 0
            start.append(s if c else 0)
            count.append(c)
            out.append(c)
        elif tk is int and type(n) is int and -n <= k < n:
            start.append(k % n)
            count.append(1)
        else:
            return None
    return Hyperslab(tuple(start), tuple(count), (1,) * len(shape), tuple(out))


def _slice(k: slice, n: int, axis: int, index):
    for v, what in ((k.start, "start"), (k.stop, "stop"), (k.step, "step")):
        if v is not None:
            try:
                operator.index(v)
            except TypeError:
                raise TypeError(
                    f"{_where(index)}axis {axis}: slice {what} must be an integer or None, "
                    f"not {type(v).__name__} ({_describe(k)})"
                ) from None
    if k.step is not None and operator.index(k.step) <= 0:
        st = operator.index(k.step)
        if st == 0:
            raise ValueError(
                f"{_where(index)}axis {axis}: slice {_describe(k)} has a zero step (slice step cannot be zero, "
                "as in numpy and h5py): use a step of 1 or more, or None for every element"
            )
        raise ValueError(
            f"{_where(index)}axis {axis}: slice {_describe(k)} has a negative ({st}) step; vh5 (like h5py) reads "
            "positive steps only: read with a positive step and reverse the result (e.g. d[::2][::-1])"
        )
    return k.indices(n)


def _unsupported(k, axis: int, index) -> str:
    if k is None:
        what = "None (np.newaxis) does not select data; add the axis to the result with np.expand_dims"
    elif isinstance(k, (list, np.ndarray)):
        a = np.asarray(k)
        kind = "a boolean mask" if a.dtype == bool else "a list or array of indices (fancy indexing)"
        what = (
            f"{kind} is not a basic selection; vh5 reads hyperslabs: use slices, "
            "or several selections with vh5.read_many_slices"
        )
    elif isinstance(k, str):
        what = "field names are not supported"
    else:
        what = f"{type(k).__name__} is not an index (integers, slices with positive steps and ... are)"
    return f"{_where(index)}axis {axis}: {_describe(k)}: {what}"


def is_selection_list(obj) -> bool:
    """True when ``obj`` reads as selections rather than a coordinate table: a slice,
    Ellipsis, a tuple holding one, or a list whose first entry is one of those."""

    def one(x):
        if isinstance(x, slice) or x is Ellipsis:
            return True
        return isinstance(x, tuple) and any(isinstance(k, slice) or k is Ellipsis for k in x)

    if one(obj):
        return True
    return isinstance(obj, list) and len(obj) > 0 and one(obj[0])


class SliceTable(NamedTuple):
    """Tables for :func:`vh5.read_many_slices`, one row per selection (uint64, shape
    ``(nslices, ndim)``): ``src_start``, ``count``, ``src_step``, and ``dst_start`` stacking
    the selections along the first axis of a destination of shape ``dst_shape`` (the sum of
    the first-axis counts, then the largest count of every other axis)."""

    src_start: np.ndarray
    count: np.ndarray
    src_step: np.ndarray
    dst_start: np.ndarray
    dst_shape: tuple


def slice_table(selections, shape) -> SliceTable:
    """Turn a list of basic selections (index tuples, ``np.s_[...]`` objects, slices,
    integers) into the slice tables of :func:`vh5.read_many_slices` for a dataset of
    ``shape`` (integers keep their axis, with count 1, in the tables).

    Raises what :func:`parse` raises, naming the selection's position and the axis."""
    shape = tuple(int(n) for n in shape)
    if isinstance(selections, (tuple, slice)) or selections is Ellipsis:
        selections = [selections]
    rows = [parse(s, shape, i) for i, s in enumerate(selections)]
    nd = len(shape)
    n = len(rows)
    start = np.array([r.start for r in rows], dtype=np.uint64).reshape(n, nd)
    count = np.array([r.count for r in rows], dtype=np.uint64).reshape(n, nd)
    step = np.array([r.step for r in rows], dtype=np.uint64).reshape(n, nd)
    dst = np.zeros((n, nd), dtype=np.uint64)
    if nd and n:
        dst[1:, 0] = np.cumsum(count[:-1, 0])
        dshape = (int(count[:, 0].sum()),) + tuple(int(v) for v in count[:, 1:].max(axis=0))
    else:
        dshape = (0,) * nd if not n else ()
    return SliceTable(start, count, step, dst, dshape)
