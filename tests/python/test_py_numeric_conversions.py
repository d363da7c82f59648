"""convert=True between every pair of the integer widths, float32, float64 (and complex64 <->
complex128, h5py's compound complex numbers), in every byte-order combination vh5 allows:
each conversion either refuses with a DtypeError naming the linked libhdf5 and the pair, or
gives what numpy's ``astype`` gives, within the rules libhdf5 documents for values out of the
destination's range (``expected`` in _conversion_values.py).

Reads: a dataset written by h5py little- and big-endian, into a native array and into a
byte-swapped one. Writes: a native array into a little- and a big-endian dataset, read back by
h5py (its own libhdf5) as the oracle of what was stored. The values of one pair go through
ONE call, in several orders: libhdf5 keeps state across the elements of a call (before 2.0 a
float32-subnormal element spoiled the rounding of later ones).

libhdf5 converts native types with compiler casts ("hard", ``H5Tcompiler_conv``) and
anything in another byte order with its software functions; where they differ this test
says which it expects (the rules and their evidence: src/transfer/broken_conversions.rs and
docs/ROBUSTNESS.md). The float16 pairs are in test_py_float16_conversions.py.
"""

import numpy as np
import pytest
import vh5

h5py = pytest.importorskip("h5py")
from _conversion_values import (  # noqa: E402
    F4_MAX,
    NUMBERS,
    assert_none_wrong,
    assert_refusal_names_pair,
    complex_values,
    expected,
    source_values,
)
from _tmpdirs import module_tmp  # noqa: E402

TMP = module_tmp("vh5-py-numconv-")
VERSION = vh5.hdf5_version().version
NATIVE = "<" if np.little_endian else ">"
SWAPPED = ">" if np.little_endian else "<"
PAIRS = [(s, d) for s in NUMBERS for d in NUMBERS if s != d] + [("c8", "c16"), ("c16", "c8")]
_counter = [0]


def broken(s, d, hard, swap):
    """The mirror of vh5's rule table (src/transfer/broken_conversions.rs) for these pairs:
    whether vh5 must refuse converting ``s`` to ``d`` with a libhdf5 of VERSION that converts
    them with a compiler cast (``hard``) or by software, across a byte-order change (``swap``)."""
    s, d = np.dtype(s), np.dtype(d)
    if swap and s.kind in "iu" and d.kind in "iu" and s.itemsize == d.itemsize and s.kind != d.kind:
        return True  # IntSignSwap: H5T__conv_order swaps the bytes and keeps the bits
    if hard:
        return False
    if s.kind == "f" and d.kind == "i":
        return VERSION >= (1, 14, 4)  # FloatToSignedInt
    # F64ToF32 (H5T__conv_f_f; also the parts of complex128 -> complex64)
    return (s, d) in ((np.dtype("f8"), np.dtype("f4")), (np.dtype("c16"), np.dtype("c8")))


def may_refuse(s, d, hard):
    """Pairs vh5 may refuse beyond :func:`broken`: complex64 -> complex128 by software on
    libhdf5 2.x, whose complex number class vh5 refuses there (ComplexSpecials) while h5py's
    compound complex numbers are converted part by part (exact)."""
    return not hard and (s, d) == ("c8", "c16") and VERSION >= (2, 0, 0)


def hard_allowed(src, got, d, wrong):
    """Elementwise: where a compiler cast of libhdf5 (``H5T_CONV_Fx_NOEX_CORE``,
    ``H5T_CONV_Ff_NOEX_CORE`` in H5Tconv_macros.h; unchanged 1.10.8 .. 2.2.0) differs from the
    oracle, and what it gives, which these tests accept (not refused; docs/ROBUSTNESS.md):

    - float -> integer: a NaN, or a value equal to the destination's maximum once rounded to
      the source type (float32 2**31 -> int32, 2**32 -> uint32, 2**63 -> int64, float32 or
      float64 2**64 -> uint64: ``(float)INT_MAX`` rounds up, so the range test lets it
      through) reaches the C cast, undefined in C: x86-64 gives the integer's minimum
      (0 for uint32 and 2**63 for uint64 from NaN, 0 for 2**32 and 2**64). That is what
      numpy's ``astype`` gives on the same machine; libhdf5's software path gives 0 for NaN
      and the maximum for the others;
    - float64 -> float32: values above float32's largest that IEEE rounds down to it (up to
      half a step above) become +-inf: the macro tests the value against ``FLT_MAX`` before
      rounding."""
    dt = np.dtype(d)
    with np.errstate(all="ignore"):
        cast = src.astype(dt)
    bad = wrong(got)
    if src.dtype.kind == "f" and dt.kind in "iu":
        info = np.iinfo(dt)
        x = src.astype("f8")
        outside = np.isnan(x) | (x >= float(info.max)) | (x < float(info.min))
        return bad & ~(outside & (got == cast))
    if (src.dtype, dt) == (np.dtype("f8"), np.dtype("f4")):
        a = np.abs(src)
        top = (a > F4_MAX) & (a < F4_MAX + 2.0**103) & np.isinf(got) & (np.signbit(got) == np.signbit(src))
        return bad & ~top
    return bad


def _wrong(src, got, d, hard):
    """Elementwise: ``got`` (``src`` converted to ``d``) breaks the oracle, complex numbers
    part by part (libhdf5 converts h5py's compound complex numbers member by member)."""
    if src.dtype.kind == "c":
        part = np.dtype(d).type(0).real.dtype
        return _wrong(src.real, got.real, part, hard) | _wrong(src.imag, got.imag, part, hard)
    _, wrong = expected(src, d)
    return hard_allowed(src, got, d, wrong) if hard else wrong(got)


def _values(s, d):
    if np.dtype(s).kind == "c":
        return complex_values(s)
    return source_values(s, d)


def _check(pair, case, outcome, src):
    """``outcome`` (the DtypeError vh5 raised, or the converted values in native order) is
    right for ``pair`` along ``case`` = (direction, dataset order, array order)."""
    s, d = pair
    direction, order, array_order = case
    where = f"{s}->{d} {direction} ({order} dataset, {array_order} array, libhdf5 {'.'.join(map(str, VERSION))})"
    file_dt = np.dtype(s if direction == "read" else d)
    arr_dt = np.dtype(d if direction == "read" else s)
    # hard: both sides native (1-byte types have no order); swap: one side in the other order
    arr_o = NATIVE if arr_dt.itemsize == 1 else array_order
    file_o = NATIVE if file_dt.itemsize == 1 else order
    hard = file_o == NATIVE and arr_o == NATIVE
    swap = file_o != arr_o
    must = broken(s, d, hard, swap)
    if isinstance(outcome, vh5.DtypeError):
        assert must or may_refuse(s, d, hard), f"{where}: refused, not in the rule table: {outcome}"
        assert_refusal_names_pair(outcome, s, d)
        return
    assert not must, f"{where}: converted, but libhdf5 gets it wrong and vh5 must refuse"
    assert_none_wrong(where, _wrong(src, outcome, d, hard), src, outcome)


def _run(pair):
    """Every read and write of ``pair``: ``[(case, outcome)]`` (see :func:`_check`)."""
    s, d = pair
    src = _values(s, d)
    _counter[0] += 1
    path = str(TMP / f"conv{_counter[0]}.h5")
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        for order in "<>":
            f.create_dataset(f"src{order}", data=src.astype(np.dtype(s).newbyteorder(order)))
            f.create_dataset(f"dst{order}", shape=src.shape, dtype=np.dtype(d).newbyteorder(order))
    orders = [NATIVE] if np.dtype(d).itemsize == 1 else [NATIVE, SWAPPED]
    results = []
    with vh5.File(path, "r+") as f:
        for order in "<>":
            for array_order in orders:
                out = np.zeros(src.shape, np.dtype(d).newbyteorder(array_order))
                try:
                    vh5.read_many_slices(f[f"src{order}"], out, [0], [0], [src.size], convert=True)
                    results.append((("read", order, array_order), out.astype(d)))
                except vh5.DtypeError as e:
                    results.append((("read", order, array_order), e))
            try:
                vh5.write_many_slices(src, f[f"dst{order}"], [0], [0], [src.size], convert=True)
                results.append((("write", order, NATIVE), None))
            except vh5.DtypeError as e:
                results.append((("write", order, NATIVE), e))
    with h5py.File(path) as f:
        for i, (case, outcome) in enumerate(results):
            if outcome is None:
                results[i] = (case, f[f"dst{case[1]}"][...].astype(d))  # byte order only
    return src, results


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_numeric_conversion_never_silently_wrong(pair):
    """Every ordered pair, every direction and byte-order combination: refused where the
    linked libhdf5 gets values wrong (int16 -1 through a byte swap to uint16 65535; a
    big-endian float64 16777217.0 read as float32 16777218), else equal to the oracle for
    the edge values (limits and their neighbours, ties, subnormals, infinities, NaN) and a few
    thousand random ones."""
    src, results = _run(pair)
    for case, outcome in results:
        _check(pair, case, outcome, src)


def test_signedness_change_across_byte_orders_refused():
    """A converting read of a big-endian int16 dataset into a native uint16 array returned
    -1 as 65535 and -32768 as 32768 with VH5_OK (libhdf5 1.10.8, 2.0.0, 2.2.0): libhdf5 takes
    a same-size signedness change with a byte-order change for a byte swap
    (``H5T__conv_order``) and keeps the bits. Refused, reads and writes; without a byte-order
    change (a big-endian dataset into a byte-swapped array) libhdf5 clips as numpy's clip."""
    path = str(TMP / "signswap.h5")
    vals = np.array([-1, -32768, 5, 32767], ">i2")
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("be", data=vals)
        f.create_dataset("dst", shape=(4,), dtype=">i4")
    with vh5.File(path, "r+") as f:
        out = np.zeros(4, "u2")
        with pytest.raises(vh5.DtypeError, match="cannot convert int16 to uint16: .*swapping the bytes"):
            vh5.read_many_slices(f["be"], out, [0], [0], [4], convert=True)
        assert not out.any()
        same_order = np.zeros(4, ">u2")
        vh5.read_many_slices(f["be"], same_order, [0], [0], [4], convert=True)
        np.testing.assert_array_equal(same_order, [0, 0, 5, 32767])
        with pytest.raises(vh5.DtypeError, match="cannot convert uint32 to int32: .*swapping the bytes"):
            vh5.write_many_slices(np.array([3000000000, 1, 2, 3], "u4"), f["dst"], [0], [0], [4], convert=True)
    with h5py.File(path) as f:
        assert not f["dst"][...].any()


def test_big_endian_float64_to_float32_ties_refused():
    """libhdf5's software float64 -> float32 (a big-endian dataset, a byte-swapped array) rounds
    exact ties away from zero and values just above float32's largest to it: 16777217.0 became
    16777218 (IEEE and numpy: 16777216) and 3.4028235677973366e38 became 3.4028235e38 (inf)
    with VH5_OK on libhdf5 2.0.0 and 2.2.0 (before 2.0 the pair was refused for a lost carry).
    Refused on every version; native order (a compiler cast) rounds to even."""
    path = str(TMP / "f8ties.h5")
    ties = np.array([16777217.0, 1 + 2.0**-24, 3.4028235677973366e38, 3 * 2.0**-150], "f8")
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("be", data=ties.astype(">f8"))
        f.create_dataset("le", data=ties)
    with vh5.File(path) as f:
        out = np.zeros(4, "f4")
        with pytest.raises(vh5.DtypeError, match="cannot convert float64 to float32: .*ties away from zero"):
            vh5.read_many_slices(f["be"], out, [0], [0], [4], convert=True)
        with pytest.raises(vh5.DtypeError, match="cannot convert float64 to float32: .*ties away from zero"):
            vh5.read_many_slices(f["le"], np.zeros(4, ">f4"), [0], [0], [4], convert=True)
        vh5.read_many_slices(f["le"], out, [0], [0], [4], convert=True)
    # the compiler cast: ties to even; the value above FLT_MAX becomes inf either way
    np.testing.assert_array_equal(out, [16777216.0, 1.0, np.inf, 2.0**-148])
