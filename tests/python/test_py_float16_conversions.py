"""convert=True into and out of float16 (and the other software conversions of libhdf5 that
get values wrong): every conversion either refuses with a DtypeError naming the linked libhdf5
and the pair, or gives what numpy's ``astype`` gives, within the rules libhdf5 documents for
values out of the destination's range.

The differential runs on whatever libhdf5 vh5 is linked to. libhdf5 before 1.14.4 has no
native float16: every float16 conversion goes through its software functions there, so what
must be refused is known from the version alone. From 1.14.4 on, a libhdf5 built with
``_Float16`` converts native-order float16 with compiler casts (not refused), one without it,
or a big-endian float16, by software (refused where that software is wrong): for native order
either outcome is accepted, as long as it is one of the two. The rules and their evidence:
src/transfer/broken_conversions.rs and docs/ROBUSTNESS.md.
"""

import numpy as np
import pytest
import vh5

h5py = pytest.importorskip("h5py")
from _conversion_values import assert_none_wrong, assert_refusal_names_pair  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402

TMP = module_tmp("vh5-py-f16conv-")
VERSION = vh5.hdf5_version().version
INTS = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
_counter = [0]


def new_path(stem="f16"):
    _counter[0] += 1
    return str(TMP / f"{stem}{_counter[0]}.h5")


def broken(src, dst, hard):
    """The mirror of vh5's rule table (src/transfer/broken_conversions.rs): whether vh5 must
    refuse converting numpy dtype ``src`` to ``dst`` with a libhdf5 of VERSION that converts
    them with a compiler cast (``hard``) or by software."""
    s, d = np.dtype(src), np.dtype(dst)
    if s == np.float16 and d in (np.int64, np.uint64) and VERSION < (1, 14, 4):
        return True
    if hard:
        return False
    if s.kind == "f" and d.kind == "i":
        return VERSION >= (1, 14, 4)
    if d == np.float16:
        return (s.kind in "iu" and s.itemsize >= 4) or s in (np.float32, np.float64)
    return s == np.float64 and d == np.float32


def source_values(dt):
    """Every float16 bit pattern for float16; edge values for the others: zeros, +-1, the
    largest float16 and the values around its overflow threshold (65520), past it, the
    float16 subnormals and what rounds to them, rounding ties, integer limits, inf and nan."""
    dt = np.dtype(dt)
    if dt == np.float16:
        return np.arange(65536, dtype="u2").view("<f2")
    base = [
        0.0,
        -0.0,
        1,
        -1,
        0.3,
        -0.3,
        -1e-3,
        2.5,
        -2.5,
        65504,
        -65504,
        65519.99,
        -65519.99,
        65520,
        -65520,
        65535,
        65536,
        -65536,
        65505,
        65519,
        65568,
        65569,
        98304,
        100000,
        -100000,
        131039,
        131040,
        131072,
        1e9,
        3e38,
        -3e38,
        np.inf,
        -np.inf,
        np.nan,
        6e-8,
        5.960464477539063e-08,
        2.98e-8,
        2.9802322387695312e-08,
        8.9406967e-08,
        1e-9,
        6.1e-5,
        2049,
        2051,
        4095,
        32767,
        32768,
        -32768,
        -32769,
        127,
        128,
        -128,
        -129,
        255,
        256,
        2**24 + 1,
        2**31 - 1,
        -(2**31),
        2**32,
        2**53 + 1,
        1e19,
        -1e19,
    ]
    if dt.kind == "f":
        with np.errstate(all="ignore"):
            return np.array(base, "f8").astype(dt)
    info = np.iinfo(dt)
    ints = {int(v) for v in base if np.isfinite(v) and float(v).is_integer() and info.min <= v <= info.max}
    ints |= {info.min, info.max, info.min + 1, info.max - 1}
    return np.array(sorted(ints), dt)


def acceptable(src, got, dst):
    """Elementwise: ``got`` (``src`` converted to ``dst`` by libhdf5) is what numpy gives, or
    for values out of an integer destination's range (and NaN) libhdf5's clipping rule (its
    software conversions clip, NaN to 0, while its compiler casts give what C, and numpy,
    give), or for libhdf5 1.14.4+ converting into float16 by compiler cast +-inf for values
    above 65504 that IEEE rounds down to it (65505 .. 65519.99: libhdf5 tests the value against
    the largest float16 before rounding; documented, not refused)."""
    dst = np.dtype(dst)
    with np.errstate(all="ignore"):
        want = src.astype(dst)
    if dst.kind == "f":
        ok = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
        if dst == np.float16 and VERSION >= (1, 14, 4):
            a = np.abs(src.astype("f8"))
            ok |= (a > 65504) & (a < 65520) & np.isinf(got) & (np.signbit(got) == np.signbit(src.astype("f8")))
        return ok
    ok = got == want
    if src.dtype.kind == "f":
        info = np.iinfo(dst)
        x = src.astype("f8")
        out = ~(np.isfinite(x) & (x > info.min - 1.0) & (x < info.max + 1.0))
        for i in np.nonzero(out)[0]:  # few: clip in Python integers (float64 cannot hold 2**64 - 1)
            v = x[i]
            ok[i] |= int(got[i]) == (0 if np.isnan(v) else info.max if v > 0 else info.min)
    return ok


def _check(pair, direction, order, outcome, src):
    """``outcome`` (the DtypeError vh5 raised, or the converted values) is right for the
    conversion of ``src`` along ``pair`` with a ``order``-endian dataset."""
    s, d = pair
    where = f"{s}->{d} {direction} ({order} dataset, libhdf5 {'.'.join(map(str, VERSION))})"
    # What must be refused: known for software paths (every path before 1.14.4, every
    # big-endian dataset of a multi-byte type); a native-order path of 1.14.4+ may be either.
    file_dtype = np.dtype(s if direction == "read" else d)
    soft_known = VERSION < (1, 14, 4) or (order == ">" and file_dtype.itemsize > 1)
    must = broken(s, d, hard=False) if soft_known else None
    if isinstance(outcome, vh5.DtypeError):
        assert must is not False, f"{where}: refused, but libhdf5 gets it right: {outcome}"
        assert broken(s, d, hard=False), f"{where}: refused, not in the rule table: {outcome}"
        assert_refusal_names_pair(outcome, s, d)
        return
    assert must is not True, f"{where}: converted, but libhdf5 gets it wrong and vh5 must refuse"
    assert_none_wrong(where, ~acceptable(src, outcome, d), src, outcome)


PAIRS = [(x, "f2") for x in INTS + ["f4", "f8"]] + [("f2", x) for x in INTS + ["f4", "f8"]]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_float16_conversion_overflow_never_silently_wrong(pair):
    """Every integer width, float32 and float64 to and from float16, reads (dataset -> array)
    and writes (array -> dataset), little- and big-endian datasets: every float16 value, and
    the edge values of the others (overflow threshold, subnormals, ties, integer limits).
    libhdf5 1.10.8 used to return NaN for int32 100000 -> float16, 65504 for float32 65520
    (IEEE and numpy: inf), 2050 for 2049.0 (2048) and, after a subnormal value in the same
    call, 16384 for 32767.0; libhdf5 1.14.4+ converts a big-endian float16 -0.3 to int32's
    minimum. vh5 refuses these where the linked libhdf5 has the bug."""
    s, d = pair
    src = source_values(s)
    path = new_path()
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        for order in "<>":
            f.create_dataset(
                f"src{order}", data=src.astype(np.dtype(s).newbyteorder(order)), chunks=(min(4096, src.size),)
            )
            f.create_dataset(f"dst{order}", shape=src.shape, dtype=np.dtype(d).newbyteorder(order))
    results = []
    with vh5.File(path, "r+") as f:
        for order in "<>":
            out = np.zeros(src.shape, d)
            try:
                vh5.read_many_slices(f[f"src{order}"], out, [0], [0], [src.size], convert=True)
                results.append(("read", order, out))
            except vh5.DtypeError as e:
                results.append(("read", order, e))
            try:
                vh5.write_many_slices(src, f[f"dst{order}"], [0], [0], [src.size], convert=True)
                results.append(("write", order, None))
            except vh5.DtypeError as e:
                results.append(("write", order, e))
    with h5py.File(path) as f:
        for direction, order, outcome in results:
            if direction == "write" and outcome is None:
                outcome = f[f"dst{order}"][...].astype(d)  # byte order only
            _check(pair, direction, order, outcome, src)


def test_float16_conversion_big_endian_float_to_int_and_f64_to_f32():
    """Software conversions beyond float16 with the same bugs: a big-endian float32 -0.3 read
    into int32 (libhdf5 1.14.4+: -2147483648; refused there) and a big-endian float64 read
    into float32 after a float32-subnormal value (before 2.0.0: 16777215.9 -> 8388608 and
    0.99999999 -> 0.5; refused on every version: 2.x rounds ties away from zero). libhdf5
    before 1.14.4 converts the float32 -> int32 correctly."""
    path = new_path("be")
    neg = np.array([-0.3, -1e-3, -0.7, -1.5, 2.0], ">f4")
    carry = np.array([1e-40, 16777215.9, 0.99999999, 3.0], ">f8")
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("neg", data=neg)
        f.create_dataset("carry", data=carry)
    with vh5.File(path) as f:
        out = np.zeros(neg.shape, "i4")
        if VERSION >= (1, 14, 4):
            with pytest.raises(vh5.DtypeError, match="cannot convert float32 to int32: .* integer's minimum"):
                vh5.read_many_slices(f["neg"], out, [0], [0], [neg.size], convert=True)
        else:
            vh5.read_many_slices(f["neg"], out, [0], [0], [neg.size], convert=True)
            np.testing.assert_array_equal(out, neg.astype("i4"))
        unsigned = np.zeros(neg.shape, "u2")  # not affected: negative values clip to 0
        vh5.read_many_slices(f["neg"], unsigned, [0], [0], [neg.size], convert=True)
        np.testing.assert_array_equal(unsigned, [0, 0, 0, 0, 2])
        out = np.zeros(carry.shape, "f4")
        with pytest.raises(vh5.DtypeError, match="cannot convert float64 to float32: .*halves"):
            vh5.read_many_slices(f["carry"], out, [0], [0], [carry.size], convert=True)


def test_complex_compound_conversion_f64_to_f32_carry():
    """h5py's complex numbers (compounds of two floats, libhdf5 1.x) are converted part by part
    with the float code: a big-endian complex128 read into complex64 (or complex128 written
    into a big-endian complex64 dataset) loses the carry like float64 -> float32 before 2.0.0
    (1.10.8 returned 8388608+0.5j for 16777215.9+0.99999999j with VH5_OK). Refused on every
    version (2.x rounds the parts' ties away from zero); native-order parts (a compiler cast)
    convert as numpy's astype."""
    path = new_path("cplx")
    carry = np.array([1e-40 + 1e-40j, 16777215.9 + 0.99999999j, 0.99999999 + 16777215.9j, 3 + 4j], ">c16")
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("be", data=carry)
        f.create_dataset("le", data=carry.astype("<c16"))
        f.create_dataset("dst", shape=(4,), dtype=">c8")
    with vh5.File(path, "r+") as f:
        native = np.zeros(4, np.complex64)
        vh5.read_many_slices(f["le"], native, [0], [0], [4], convert=True)
        np.testing.assert_array_equal(native, carry.astype(np.complex64))
        out = np.zeros(4, np.complex64)
        src = carry.astype(np.complex128)
        with pytest.raises(vh5.DtypeError, match="cannot convert complex128 to complex64: .*halves"):
            vh5.read_many_slices(f["be"], out, [0], [0], [4], convert=True)
        with pytest.raises(vh5.DtypeError, match="cannot convert complex128 to complex64: .*halves"):
            vh5.write_many_slices(src, f["dst"], [0], [0], [4], convert=True)
        assert not out.any()
