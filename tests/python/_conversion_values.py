"""Source values and the oracle of the numeric conversion differential
(test_py_numeric_conversions.py): edge values of both types of a pair, random values, and
what each value must become in the destination dtype.

The oracle is numpy's ``astype`` for values the destination can hold, and libhdf5's
documented clipping (its default conversion exception handling, ``H5T_CONV_EXCEPT_*``
unhandled) for the others; each rule says where libhdf5's source does it.
"""

import re

import numpy as np

INTS = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
FLOATS = ["f4", "f8"]
NUMBERS = INTS + FLOATS
F4_MAX = float(np.finfo("f4").max)


def _float_edges():
    """float64 edge values: signed zeros, values around 1 and the halves, float32's and
    float64's subnormal and normal limits and their neighbours, float32's overflow threshold
    (its largest value plus half a step: a tie that IEEE rounds to infinity), rounding ties
    of float64 -> float32 (normal and subnormal), infinities and NaN."""

    def up(x):
        return np.nextafter(x, np.inf)

    def down(x):
        return np.nextafter(x, -np.inf)

    base = [0.0, 0.3, 0.5, 0.7, 0.9999999999, 1.0, 1.5, 2.5, 1e-3, 1e-7, 0.99999999, 16777215.9, 16777215.5]
    f4 = [2.0**-149, 2.0**-150, 3 * 2.0**-150, 2.0**-126 - 2.0**-149, 2.0**-126, 2.0**-127, 1e-40, 1e-45]
    f4 += [F4_MAX, F4_MAX + 2.0**103, F4_MAX + 2.0**104, 2.0**128, 1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, 1.0 - 2.0**-25]
    f8 = [5e-324, 2.0**-1022, 2.0**-1022 - 5e-324, float(np.finfo("f8").max), 1e300, 1e-300]
    vals = []
    with np.errstate(over="ignore"):
        for v in base + f4 + f8:
            vals += [v, float(up(v)), float(down(v))]
    vals = [x for v in vals for x in (v, -v)]
    return vals + [np.inf, -np.inf, np.nan, -np.nan]


def _int_edges():
    """Python-int edge values: every integer type's limits and their neighbours, and the
    powers of two (and neighbours) where float32 and float64 run out of mantissa bits, with
    the rounding ties of int -> float there (2**24 + 1 for float32, 2**53 + 1 for float64,
    and the last ties below 2**31, 2**63 and 2**64)."""
    out = {0, 1, -1, 2, -2}
    for t in INTS:
        info = np.iinfo(t)
        for v in (info.min, info.max):
            out |= {v + k for k in range(-2, 3)}
    for e in (8, 11, 15, 16, 24, 25, 31, 32, 53, 54, 62, 63, 64):
        for k in range(-3, 4):
            out |= {2**e + k, -(2**e) + k}
    for e, p in ((31, 24), (32, 24), (63, 24), (64, 24), (63, 53), (64, 53)):
        half = 2 ** (e - p - 1)  # half a step of a p-bit mantissa just below 2**e
        for k in (1, 3):
            out |= {2**e - k * half, -(2**e) + k * half, 2**e - k * half + 1, 2**e - k * half - 1}
    return out


def _int_ties(rng, n, bits, lo, hi):
    """``n`` Python ints in [lo, hi] that lie exactly halfway between two floats of ``bits``
    mantissa bits, and the integers next to them."""
    out = []
    for _ in range(n):
        v = int(rng.integers(lo, hi, dtype=np.int64 if lo < 0 else np.uint64, endpoint=True))
        length = abs(v).bit_length()
        if length <= bits:
            continue
        cut = length - bits
        t = (abs(v) >> cut << cut) | (1 << (cut - 1))
        t = -t if v < 0 else t
        out += [t, t - 1, t + 1]
    return [v for v in out if lo <= v <= hi]


def _int_in(dt, vals):
    info = np.iinfo(dt)
    return sorted({int(v) for v in vals if info.min <= v <= info.max})


def _random(rng, s, d, n):
    """``n`` random values of dtype ``s`` (uniform integers over its range, or random bit
    patterns for floats), plus values spread over the destination's range (uniform
    integers, or for a float source uniform floats across an integer destination's limits)
    and rounding ties of the destination's mantissa."""
    s, d = np.dtype(s), np.dtype(d)
    parts = []
    if s.kind == "f":
        parts.append(rng.integers(0, 2 ** (8 * s.itemsize), n, dtype=f"u{s.itemsize}").view(s))
        if d.kind in "iu":
            info = np.iinfo(d)
            lo, hi = float(info.min), float(info.max)
            parts.append(rng.uniform(lo - 4, hi + 4, n // 4).astype(s))
            parts.append(rng.uniform(-1, 1, n // 8).astype(s) * rng.choice([1, 10, 1000, 1e6], n // 8))
        else:  # float64 -> float32 ties: a float32 plus half its step, exactly
            x = rng.integers(0, 2**32, n // 4, dtype="u4").view("f4")
            x = x[np.isfinite(x)].astype("f8")
            parts.append((x + (np.spacing(x.astype("f4")).astype("f8") / 2)).astype(s))
        return np.concatenate(parts)
    info = np.iinfo(s)
    parts.append(rng.integers(info.min, info.max, n, dtype=s, endpoint=True))
    if d.kind in "iu" and (d.itemsize < s.itemsize or (d.kind == "u") != (s.kind == "u")):
        di = np.iinfo(d)
        lo, hi = max(info.min, di.min - 3), min(info.max, di.max + 3)
        parts.append(rng.integers(lo, hi, n // 4, dtype=s, endpoint=True))
    if d.kind == "f":
        bits = 24 if d.itemsize == 4 else 53
        parts.append(np.array(_int_ties(rng, n // 4, bits, info.min, info.max), s))
    return np.concatenate(parts)


def source_values(s, d, n=3000, seed=0):
    """The values of dtype ``s`` to convert to ``d`` in ONE call, in the orders libhdf5's
    state across elements could care about: a float32-subnormal value first (libhdf5
    before 2.0 keeps a "denormalized" flag across the elements of a call), the edge values
    sorted, reversed and shuffled, random values between them."""
    s, d = np.dtype(s), np.dtype(d)
    rng = np.random.default_rng([seed, s.num, d.num, s.itemsize, d.itemsize])
    if s.kind == "f":
        with np.errstate(all="ignore"):
            floats = np.array(_float_edges() + [float(v) for v in _int_edges()], "f8").astype(s)
        edges = np.unique(floats)  # sorted; NaN last (once)
        first = np.array([1e-40], s)
    else:
        ints = _int_edges() | {int(v) for v in _float_edges() if np.isfinite(v) and float(v).is_integer()}
        edges = np.array(_int_in(s, ints), s)
        first = edges[:1]
    with np.errstate(all="ignore"):
        rand = _random(rng, s, d, n)
    shuffled = edges.copy()
    rng.shuffle(shuffled)
    parts = [first, edges, rand[: rand.size // 2], edges[::-1], rand[rand.size // 2 :], shuffled]
    return np.concatenate(parts).astype(s)


def complex_values(s, n=1000, seed=0):
    """complex64 / complex128 values: every float edge value as the real part with a
    shuffled one as the imaginary part (and the other way round), and random bit patterns."""
    s = np.dtype(s)
    part = np.dtype(f"f{s.itemsize // 2}")
    rng = np.random.default_rng([seed, s.itemsize])
    with np.errstate(all="ignore"):
        edges = np.array(_float_edges(), "f8").astype(part)
    other = edges.copy()
    rng.shuffle(other)
    bits = rng.integers(0, 2 ** (8 * part.itemsize), (n, 2), dtype=f"u{part.itemsize}").view(part)
    with np.errstate(all="ignore"):
        re = np.concatenate([[1e-40], edges, other, bits[:, 0]]).astype(part)
        im = np.concatenate([[0.0], other, edges, bits[:, 1]]).astype(part)
    out = np.empty(re.size, s)
    out.real, out.imag = re, im
    return out


def expected(src, d):
    """What each value of ``src`` must become in dtype ``d``, as ``(want, wrong)``: ``want``
    the oracle array and ``wrong(got)`` the elementwise mismatch of a result.

    - integer -> integer: the value, or out of range the destination's limit on that side:
      libhdf5 clips (``H5T__conv_i_i`` and the hard ``H5T_CONV_*`` macros raise the
      ``H5T_CONV_EXCEPT_RANGE_HI`` / ``_LOW`` exception and, unhandled, store the limit);
    - integer -> float: numpy's round to nearest, ties to even (IEEE); nothing overflows;
    - float -> integer: truncated toward zero when the truncated value fits; else the limit
      on that side (infinities too), and NaN -> 0 (``H5T__conv_f_i``: ``H5T_CONV_EXCEPT_NAN``
      unhandled stores 0; the hard macros test NaN before the range);
    - float -> float (and the parts of complex numbers): numpy's ``astype`` (ties to even,
      overflow to +-infinity, signed zeros kept; any NaN for NaN).
    """
    d = np.dtype(d)
    s = src.dtype
    if s.kind == "c":
        with np.errstate(all="ignore"):
            want = src.astype(d)
        re, im = _float_wrong(src.real, want.real), _float_wrong(src.imag, want.imag)
        return want, lambda got: re(got.real) | im(got.imag)
    if d.kind == "f":
        with np.errstate(all="ignore"):
            want = src.astype(d)
        return want, _float_wrong(src, want)
    info = np.iinfo(d)
    if s.kind == "f":
        x = src.astype("f8")
        with np.errstate(all="ignore"):
            t = np.trunc(x)
            fits = np.isfinite(t) & (t >= float(info.min)) & (t < float(info.max) + 1.0)
            want = np.where(fits, t, 0).astype(d)
        want[~fits & (x > 0)] = info.max
        want[~fits & (x < 0)] = info.min
        want[np.isnan(x)] = 0
    else:
        want = np.clip(src.astype(object), info.min, info.max).astype(d)
    return want, lambda got: got != want


def _float_wrong(src, want):
    def wrong(got):
        same = (got == want) & (np.signbit(got) == np.signbit(want))
        return ~(same | (np.isnan(got) & np.isnan(want)))

    return wrong


def assert_refusal_names_pair(err, s, d):
    """The DtypeError ``err`` of a refused conversion names the linked libhdf5, the pair
    ``s`` -> ``d`` (numpy dtypes) and what to do instead."""
    frm, to = np.dtype(s).name, np.dtype(d).name
    assert re.search(
        f"libhdf5 [0-9.]+ cannot convert {frm} to {to}: .*; (read the dataset as|convert the array to)",
        str(err),
    ), str(err)


def assert_none_wrong(where, bad, src, got):
    """No element of the mask ``bad`` is set; else name the first few ``src`` -> ``got``."""
    idx = np.nonzero(bad)[0][:5]
    assert not bad.any(), f"{where}: {bad.sum()} of {src.size} values wrong, e.g. " + ", ".join(
        f"{src[i]!r} -> {got[i]!r}" for i in idx
    )
