"""H5Tconvert of any libhdf5 against the oracle of tests/python/test_py_numeric_conversions.py,
without vh5: every ordered pair of int8 .. uint64, float32 and float64, every byte-order
combination of source and destination, the same values in one call. Prints each
(pair, orders) with wrong values, whether libhdf5 converts it with a compiler cast
(``H5Tcompiler_conv``), and examples. How the rules of src/transfer/broken_conversions.rs
were checked against libhdf5 builds vh5 is not linked to.

    python3 scripts/h5tconvert_differential.py /path/to/libhdf5.so [s-d ...]
    (e.g. i2-u2 f8-f4 to limit the pairs)
"""

import ctypes
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
import _conversion_values as cv  # noqa: E402

HID = ctypes.c_int64


def type_id(lib, dt, order):
    """The predefined libhdf5 type of numpy dtype ``dt`` in byte order ``order`` ("<"/">")."""
    dt = np.dtype(dt)
    o = "BE" if order == ">" else "LE"
    if dt.kind == "f":
        name = f"H5T_IEEE_F{8 * dt.itemsize}{o}_g"
    else:
        name = f"H5T_STD_{'I' if dt.kind == 'i' else 'U'}{8 * dt.itemsize}{o}_g"
    return HID.in_dll(lib, name).value


def convert(lib, src, s_order, d, d_order):
    """``src`` converted by ``H5Tconvert`` from its dtype in ``s_order`` to ``d`` in ``d_order``,
    returned in native order."""
    sd, dd = src.dtype.newbyteorder(s_order), np.dtype(d).newbyteorder(d_order)
    buf = np.zeros(src.size * max(sd.itemsize, dd.itemsize), "u1")
    buf[: src.size * sd.itemsize] = src.astype(sd).view("u1")
    st = lib.H5Tconvert(type_id(lib, src.dtype, s_order), type_id(lib, d, d_order), src.size, buf.ctypes.data, None, 0)
    if st < 0:
        raise RuntimeError(f"H5Tconvert {src.dtype}{s_order} -> {d}{d_order} failed")
    return buf[: src.size * dd.itemsize].view(dd).astype(np.dtype(d))


def main(path, only):
    lib = ctypes.CDLL(path)
    lib.H5open()
    lib.H5Tconvert.argtypes = [HID, HID, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, HID]
    lib.H5Tcompiler_conv.argtypes = [HID, HID]
    v = [ctypes.c_uint() for _ in range(3)]
    lib.H5get_libversion(*map(ctypes.byref, v))
    print("libhdf5", ".".join(str(x.value) for x in v))
    for s in cv.NUMBERS:
        for d in cv.NUMBERS:
            if s == d or (only and f"{s}-{d}" not in only):
                continue
            src = cv.source_values(s, d)
            want, wrong = cv.expected(src, d)
            for so in "<>"[: 1 + (np.dtype(s).itemsize > 1)]:
                for do in "<>"[: 1 + (np.dtype(d).itemsize > 1)]:
                    got = convert(lib, src, so, d, do)
                    bad = np.nonzero(wrong(got))[0]
                    if bad.size:
                        hard = lib.H5Tcompiler_conv(type_id(lib, s, so), type_id(lib, d, do)) > 0
                        ex = ", ".join(f"{src[i]!r} -> {got[i]!r} (want {want[i]!r})" for i in bad[:4])
                        print(f"{s}{so} -> {d}{do} hard={hard}: {bad.size} of {src.size} wrong: {ex}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
