"""HDF5 2.x's complex number class (``H5T_COMPLEX``: ``H5T_COMPLEX_IEEE_F32LE/BE``,
``F64LE/BE``), which h5py >= 3.16 reads as complex64 / complex128, against h5py.

vh5 built against libhdf5 >= 2.0 reported these datasets as opaque ``|V8`` / ``|V16``
records and refused ``d[...]`` ("numpy has no dtype for ..."). It now reads and writes them
as complex64 / complex128 with the native complex memory type (libhdf5 has no conversion
between a big-endian complex type and the native ``{r, i}`` compound it uses for h5py's
compound complex datasets: checked below with ``h5py.h5t.find``) on every path: the row
path (``H5Dread``, ``VH5_PLANNER=rows``), the chunk planner's raw chunks decoded by vh5 (byte
swap per part for big-endian files, ``VH5_PLANNER=chunks``), the decoded-chunk cache (every
read is done twice), raw chunk writes (``H5Dwrite_chunk``: gzip, shuffle, fletcher32) and
``H5Dwrite`` (unfiltered chunks, contiguous, compact). A dataset of float16 parts (numpy has
no complex32) is refused by ``d[...]`` with a message naming it and the raw-records way,
and read as raw records as h5py's low-level read gives them.

Skipped when h5py's HDF5 has no complex class (< 2.0: no test file can be written); with a
vh5 linked to libhdf5 1.x the files are refused as written by a newer HDF5 (checked).
"""

import h5py
import numpy as np
import pytest
import vh5
from _testkit import run_planner_child
from _tmpdirs import module_tmp

H5PY_HDF5 = h5py.version.hdf5_version_tuple
VH5_HDF5 = vh5.hdf5_version().version
pytestmark = pytest.mark.skipif(
    H5PY_HDF5 < (2, 0, 0) or not hasattr(h5py.h5t, "COMPLEX_IEEE_F64BE"),
    reason=f"h5py's HDF5 {h5py.version.hdf5_version} has no complex number class (H5T_COMPLEX needs HDF5 >= 2.0)",
)
needs_vh5_2 = pytest.mark.skipif(
    VH5_HDF5 < (2, 0, 0), reason=f"vh5 is linked to {vh5.hdf5_version()}: the complex number class needs >= 2.0"
)

TMP = module_tmp("vh5_complex_native_")
#: name -> (h5py's predefined type, numpy dtype h5py reads it as)
TYPES = {
    "f32le": ("COMPLEX_IEEE_F32LE", "<c8"),
    "f32be": ("COMPLEX_IEEE_F32BE", ">c8"),
    "f64le": ("COMPLEX_IEEE_F64LE", "<c16"),
    "f64be": ("COMPLEX_IEEE_F64BE", ">c16"),
}
LAYOUTS = ("gzip", "shuffle", "chunked", "fletcher32", "contiguous", "compact")
SHAPE, CHUNKS = (37, 23), (8, 5)
PLANNERS = ("auto", "chunks", "rows")


def values(shape, dtype, seed):
    """Random complex values of `dtype` with some specials (inf, nan, -0.0, tiny)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 1e3 + 1j * rng.standard_normal(shape)).astype(dtype)
    flat = x.reshape(-1)
    flat[:6] = [complex(np.inf, -0.0), complex(np.nan, 1), complex(-0.0, np.inf), 1e-40 + 1e-40j, 0, -1 - 1j]
    return x


def create(path, name, tname, layout, data=None, fill=None, shape=SHAPE):
    """A dataset `name` of h5py's complex type `tname` in `layout`, then `data` written by h5py."""
    with h5py.File(path, "a") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        if layout == "compact":
            dcpl.set_layout(h5py.h5d.COMPACT)
        elif layout != "contiguous":
            dcpl.set_chunk(CHUNKS)
            if layout == "shuffle":
                dcpl.set_shuffle()
            if layout in ("gzip", "shuffle"):
                dcpl.set_deflate(4)
            if layout == "fletcher32":
                dcpl.set_fletcher32()
        if fill is not None:
            dcpl.set_fill_value(np.array(fill, TYPES[tname][1]))
        ftype = getattr(h5py.h5t, TYPES[tname][0])
        h5py.h5d.create(f.id, name.encode(), ftype, h5py.h5s.create_simple(shape), dcpl=dcpl)
        if data is not None:
            f[name][...] = data


@pytest.fixture(scope="module")
def complex_file():
    """One file with every type in every layout, written by h5py; (path, names)."""
    path = str(TMP / "all.h5")
    names = []
    for i, t in enumerate(sorted(TYPES)):
        for j, layout in enumerate(LAYOUTS):
            name = f"{t}_{layout}"
            create(path, name, t, layout, values(SHAPE, TYPES[t][1], 10 * i + j))
            names.append(name)
    return path, names


@needs_vh5_2
@pytest.mark.parametrize("tname", sorted(TYPES))
def test_native_complex_dtype_and_whole_reads_match_h5py(complex_file, tname):
    path, _ = complex_file
    with h5py.File(path, "r") as h:
        refs = {layout: (h[f"{tname}_{layout}"].dtype, h[f"{tname}_{layout}"][...]) for layout in LAYOUTS}
    with vh5.File(path) as f:
        for layout, (hdt, ref) in refs.items():
            d = f[f"{tname}_{layout}"]
            assert d.dtype == hdt == np.dtype(TYPES[tname][1]), layout
            got = d[...]
            assert got.dtype == hdt and got.tobytes() == ref.tobytes(), layout  # h5py's byte order too
            part = d[3:30:4, 5:]
            assert part.dtype == hdt and part.tobytes() == ref[3:30:4, 5:].tobytes(), layout
            assert d[2, 7] == ref[2, 7]


def random_rows(rng, n, shape, maxc=6):
    """`n` rows (start, count, step) inside `shape`, steps 1..3."""
    rows = []
    for _ in range(n):
        step = rng.integers(1, 4, len(shape))
        count = [int(rng.integers(1, min(maxc, (e - 1) // s + 1) + 1)) for e, s in zip(shape, step)]
        start = [int(rng.integers(0, e - (c - 1) * s)) for e, c, s in zip(shape, count, step)]
        rows.append((start, count, [int(s) for s in step]))
    return rows


#: The child of test_random_tables_match_h5py: argv = path, seed, then dataset names. Reads
#: every dataset with 300 random stepped rows into native and byte-swapped destinations,
#: twice (the second read hits the decoded-chunk cache), and converted to the other complex
#: size; compares each with numpy slicing of h5py's whole read.
READ_CHILD = """
import conftest  # noqa: F401
import sys
import h5py, numpy as np, vh5
from test_py_complex_native import random_rows
path, seed, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
with h5py.File(path, "r") as h:
    refs = {n: h[n][...] for n in names}
rng = np.random.default_rng(seed)
with vh5.File(path) as f:
    for n in names:
        d, ref = f[n], refs[n]
        rows = random_rows(rng, 300, ref.shape)
        src = np.array([r[0] for r in rows], np.uint64)
        cnt = np.array([r[1] for r in rows], np.uint64)
        step = np.array([r[2] for r in rows], np.uint64)
        dst_start = np.zeros_like(src)
        dst_start[:, 0] = np.arange(len(rows)) * 6
        native = ref.dtype.newbyteorder("=")
        other = "c16" if native.itemsize == 8 else "c8"
        for dt, convert in ((native, False), (native.newbyteorder(">" if sys.byteorder == "little" else "<"), False), (np.dtype(other), True)):
            want = np.zeros((len(rows) * 6, 6), dt)
            for i, (s, c, st) in enumerate(rows):
                sel = tuple(slice(a, a + (k - 1) * b + 1, b) for a, k, b in zip(s, c, st))
                want[i * 6 : i * 6 + c[0], : c[1]] = ref[sel].astype(dt)
            for _ in range(2):
                got = np.zeros_like(want)
                if convert and ref.dtype.byteorder == ">":
                    # libhdf5's H5T__conv_complex garbles specials: refused (see the test below)
                    try:
                        vh5.read_many_slices(d, got, src, dst_start, cnt, step, convert=True)
                        raise AssertionError(("converted", n))
                    except vh5.DtypeError as e:
                        assert "H5T__conv_complex" in str(e), e
                    continue
                vh5.read_many_slices(d, got, src, dst_start, cnt, step, convert=convert)
                assert got.tobytes() == want.tobytes(), (n, dt, convert)
print("ok", len(names))
"""


@needs_vh5_2
@pytest.mark.parametrize("planner", PLANNERS)
def test_random_tables_match_h5py(complex_file, planner):
    path, names = complex_file
    p = run_planner_child(READ_CHILD, [path, PLANNERS.index(planner), *names], planner)
    assert p.returncode == 0 and p.stdout.strip() == f"ok {len(names)}", p.stdout + p.stderr


@needs_vh5_2
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", sorted(TYPES))
def test_writes_read_back_by_h5py(tname, layout):
    """Random stepped rows written (later rows win where they overlap) over h5py's data and
    over unwritten storage (fill value 3-4j), native and converted from the other complex
    size; h5py reads every element as numpy predicts."""
    path = str(TMP / f"w_{tname}_{layout}.h5")
    dt = np.dtype(TYPES[tname][1])
    native = dt.newbyteorder("=")
    old = values(SHAPE, dt, 7)
    create(path, "x", tname, layout, old)
    create(path, "fresh", tname, layout, fill=3 - 4j)
    rng = np.random.default_rng(hash((tname, layout)) % 2**32)
    want = {"x": old.astype(native), "fresh": np.full(SHAPE, 3 - 4j, native)}
    with vh5.File(path, "r+") as f:
        for name, convert in (("x", False), ("fresh", False), ("x", True)):
            src = values((40, 30), native, int(rng.integers(1 << 30)))
            if convert:
                src = src.astype("c16" if native.itemsize == 8 else "c8")
            rows = random_rows(rng, 60, SHAPE, maxc=9)
            args = (src, f[name], np.zeros((len(rows), 2), np.uint64), [r[0] for r in rows], [r[1] for r in rows])
            if convert and dt.byteorder == ">":
                with pytest.raises(vh5.DtypeError, match="H5T__conv_complex"):
                    vh5.write_many_slices(*args, dst_step=[r[2] for r in rows], convert=True)
                continue
            for s, c, st in rows:
                sel = tuple(slice(a, a + (k - 1) * b + 1, b) for a, k, b in zip(s, c, st))
                want[name][sel] = src[: c[0], : c[1]].astype(native)
            vh5.write_many_slices(*args, dst_step=[r[2] for r in rows], convert=convert)
        assert f["fresh"].fillvalue == 3 - 4j
    with h5py.File(path, "r") as h:
        for name, w in want.items():
            got = h[name][...]
            assert got.dtype == dt and got.astype(native).tobytes() == w.tobytes(), name


def test_no_libhdf5_conversion_between_big_endian_complex_and_native_compound():
    """Why vh5 moves H5T_COMPLEX datasets with the native complex type: libhdf5 converts a
    complex type to the {r, i} compound only when the parts are the same type (byte order
    included), and it has the byte-order conversion between complex types."""
    compound = h5py.h5t.py_create(np.dtype("c16"))
    assert compound.get_class() == h5py.h5t.COMPOUND
    assert h5py.h5t.find(h5py.h5t.COMPLEX_IEEE_F64BE, compound) is None
    assert h5py.h5t.find(h5py.h5t.COMPLEX_IEEE_F64LE, compound) is not None
    assert h5py.h5t.find(h5py.h5t.COMPLEX_IEEE_F64BE, h5py.h5t.NATIVE_DOUBLE_COMPLEX) is not None


#: numbers whose specials libhdf5 2.x's H5T__conv_complex garbles (found against numpy's astype)
SPECIALS = [complex(np.inf, 2), complex(3, -np.inf), complex(np.nan, 1), 1.5 - 2.5j, 1e-40 + 1e-45j]


@needs_vh5_2
@pytest.mark.parametrize("tname", sorted(TYPES))
def test_complex_size_conversions_exact_or_refused(tname):
    """complex64 <-> complex128 with VH5_SLICES_CONVERT: exact (numpy's astype) between
    native-order types (libhdf5's compiler casts), refused with vh5.DtypeError naming
    H5T__conv_complex when either side is byte-swapped (its software path garbles the other
    part of a number with an inf or NaN part: libhdf5 2.0.0 and 2.2.0). h5py's own read
    through that path shows the damage."""
    dt = np.dtype(TYPES[tname][1])
    other = np.dtype("c16" if dt.itemsize == 8 else "c8")
    path = str(TMP / f"conv_{tname}.h5")
    create(path, "x", tname, "contiguous", np.array(SPECIALS, dt), shape=(len(SPECIALS),))
    swapped_file = dt.byteorder == ">"
    with vh5.File(path) as f:
        for dst_dt in (other, other.newbyteorder(">")):
            got = np.zeros(len(SPECIALS), dst_dt)
            if swapped_file or dst_dt.byteorder == ">":
                with pytest.raises(vh5.DtypeError, match="H5T__conv_complex"):
                    vh5.read_many_slices(f["x"], got, [0], [0], [len(SPECIALS)], convert=True)
            else:
                vh5.read_many_slices(f["x"], got, [0], [0], [len(SPECIALS)], convert=True)
                assert got.tobytes() == np.array(SPECIALS, dt).astype(dst_dt).tobytes()
    if swapped_file:
        with h5py.File(path, "r") as h:
            mtype = h5py.h5t.NATIVE_DOUBLE_COMPLEX if other.itemsize == 16 else h5py.h5t.NATIVE_FLOAT_COMPLEX
            via = np.zeros(len(SPECIALS), other)
            h["x"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, via, mtype=mtype)
            assert not np.array_equal(via, np.array(SPECIALS, dt).astype(other), equal_nan=True)


@needs_vh5_2
@pytest.mark.parametrize("tname", sorted(TYPES))
def test_complex_to_real_conversions_exact_or_refused(tname):
    """complex -> float16 / int32 / float64 with VH5_SLICES_CONVERT: libhdf5 2.x keeps the real
    part (numpy's astype does too) with its float conversion code, whose bugs vh5 refuses as
    for float sources (software float -> float16 rounds 2049 to 2050 and 65520 to 65504;
    software float -> signed integer turns -0.3 into the minimum; software float64 -> float32
    rounds ties away from zero: a big-endian complex128 16777217+1j became float32 16777218);
    anything converted equals numpy's astype of the real part."""
    dt = np.dtype(TYPES[tname][1])
    x = np.array([2049 + 1j, 65520 + 0j, -0.3 + 1j, 2.7 - 1j, -2.7, 1e-6], dt)
    path = str(TMP / f"real_{tname}.h5")
    create(path, "x", tname, "contiguous", x, shape=(len(x),))
    narrowing = ("f2", "i4", "<f4") if dt.itemsize == 16 else ("f2", "i4")
    with vh5.File(path) as f:
        for to in ("f2", "i4", "f8", "<f4"):
            got = np.zeros(len(x), to)
            try:
                vh5.read_many_slices(f["x"], got, [0], [0], [len(x)], convert=True)
            except vh5.DtypeError as e:
                assert "H5T__conv_f_" in str(e) and to in narrowing, e
                continue
            # a big-endian source always takes libhdf5's software path: refused above
            assert not (dt.byteorder == ">" and to in narrowing), to
            with np.errstate(all="ignore"):
                want = x.real.astype(to)
            assert got.tobytes() == want.tobytes(), (to, got, want)


@needs_vh5_2
def test_complex_float16_parts_refused_and_read_as_raw_records():
    path = str(TMP / "c32.h5")
    parts = np.arange(2 * 15, dtype="<f2") / 4
    with h5py.File(path, "w") as h:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_deflate(1)
        h5py.h5d.create(h.id, b"half", h5py.h5t.COMPLEX_IEEE_F16BE, h5py.h5s.create_simple((15,)), dcpl=dcpl)
        h["half"].id.write(h5py.h5s.ALL, h5py.h5s.ALL, parts.view("V4"), mtype=h5py.h5t.COMPLEX_IEEE_F16LE)
        with pytest.raises(TypeError):
            h["half"].dtype  # noqa: B018  (h5py has no numpy dtype for it either)
    with vh5.File(path) as f:
        d = f["half"]
        with pytest.raises(vh5.UnsupportedError) as e:
            d[...]
        msg = str(e.value)
        assert "'/half'" in msg and "complex number type of float16 (big-endian) parts" in msg, msg
        assert f"np.dtype('|V{d.dtype.itemsize}')" in msg and "vh5.read_many_slices" in msg, msg
        # libhdf5's native type of it: complex of float16 parts (a libhdf5 built with
        # _Float16) or of float32 (without: the static-hdf5 build)
        raw = np.zeros(15, d.dtype)
        vh5.read_many_slices(d, raw, [0], [0], [15])
        part = {4: np.float16, 8: np.float32}[d.dtype.itemsize]
        assert np.array_equal(raw.view(part), parts.astype(part))


def test_linked_libhdf5_1x_refuses_the_files_as_newer_format(complex_file):
    if VH5_HDF5 >= (2, 0, 0):
        pytest.skip(f"vh5 is linked to {vh5.hdf5_version()}, which reads the complex class")
    path, names = complex_file
    with pytest.raises(vh5.UnsupportedError, match="newer HDF5 format"):
        with vh5.File(path) as f:
            f[names[0]].dtype  # noqa: B018


@needs_vh5_2
def test_cli_info_names_the_complex_class(complex_file):
    import os
    import subprocess

    cli = os.environ.get("VH5_CLI")
    if not cli or "h5py" in os.path.basename(os.environ.get("VH5_LIBRARY", "")):
        pytest.skip("no VH5_CLI of the linked build")
    path, _ = complex_file
    out = subprocess.run([cli, "info", path], capture_output=True, text=True, check=True).stdout
    assert "/f64be_gzip: shape [37, 23], complex128 (HDF5 complex number type of float64 (big-endian))" in out, out
