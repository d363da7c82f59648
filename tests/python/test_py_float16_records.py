"""Records with float16 members (top level, in arrays, in nested compounds). libhdf5 1.10's
native memory type of a float16 member is float32, and its float32 -> float16 conversion
(H5T__conv_f_f) is wrong for some values (65520 -> 65504 instead of inf, 2049 -> 2050):
vh5 wrote such records silently wrong. Writes are now refused with vh5.DtypeError naming
the member whenever the linked libhdf5 converts that member in software (the same rule as
for plain float16 datasets), and the file is left unchanged. Reads (float16 -> float32,
exact) keep working: every float16 bit pattern reads as h5py reads it."""

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp  # noqa: E402

TMP = module_tmp("vh5_f16_records_")

FLAT = np.dtype([("h", "<f2"), ("n", "<i4")])
ARRAY = np.dtype([("n", "<i4"), ("arr", "<f2", (2,))])
NESTED = np.dtype([("n", "<i4"), ("in", FLAT)])
BIG = np.dtype([("h", ">f2"), ("n", "<i4")])
CASES = {"flat": (FLAT, "h"), "array": (ARRAY, "arr[]"), "nested": (NESTED, "in.h"), "big_endian": (BIG, "h")}


VERSION = vh5.hdf5_version().version
VALUES = np.array([2049.0, 65520.0, -65520.0, 1.0], np.float32)  # numpy: 2048, inf, -inf, 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_float16_record_member_write_refused_or_exact(case):
    """Refused (file unchanged) where libhdf5 narrows in software: always before 1.14.4;
    where it is written, h5py reads numpy's float16 rounding (2049 -> 2048)."""
    dt, member = CASES[case]
    path = str(TMP / f"w_{case}.h5")
    x = np.zeros(4, dt)
    with h5py.File(path, "w") as h:
        h.create_dataset("c", data=x, chunks=(2,), compression="gzip")
        h.create_dataset("k", data=x)
    written = {}
    with vh5.File(path, "r+") as f:
        for name in ("c", "k"):
            d = f[name]
            src = np.zeros(4, d._mem_type()[0])
            leaf = src["in"]["h"] if case == "nested" else src[member.rstrip("[]")]
            leaf[...] = VALUES.reshape((4,) + (1,) * (leaf.ndim - 1))
            try:
                vh5.write_many_slices(src, d, [0], [0], [4])
                written[name] = src
            except vh5.DtypeError as e:
                assert f"record member `{member}` is float16" in str(e) and "H5T__conv_f_f" in str(e), e
    assert VERSION >= (1, 14, 4) or not written
    with h5py.File(path, "r") as h:
        for name in ("c", "k"):
            got = h[name][...]
            if name not in written:
                assert got.tobytes() == x.tobytes()
            else:
                leaf = got["in"]["h"] if case == "nested" else got[member.rstrip("[]")]
                want = VALUES.astype(np.float16).reshape((4,) + (1,) * (leaf.ndim - 1))
                assert np.array_equal(leaf, np.broadcast_to(want, leaf.shape))


@pytest.mark.parametrize("order", ["<", ">"])
def test_float16_record_member_reads_every_bit_pattern_like_h5py(order):
    dt = np.dtype([("h", order + "f2"), ("n", "<i4")])
    path = str(TMP / f"r_{order == '<'}.h5")
    x = np.zeros(65536, dt)
    x["h"] = np.arange(65536, dtype=np.uint16).view(np.float16)
    x["n"] = np.arange(65536)
    with h5py.File(path, "w") as h:
        h.create_dataset("c", data=x, chunks=(4096,), compression="gzip")
        ref = h["c"][...]
    with vh5.File(path) as f:
        d = f["c"]
        out = np.zeros(65536, d._mem_type()[0])
        for _ in range(2):
            vh5.read_many_slices(d, out, [0], [0], [65536])
            assert np.array_equal(out["n"], ref["n"])
            assert np.array_equal(out["h"], ref["h"].astype(out["h"].dtype), equal_nan=True)
