"""Record (structured numpy) dtypes against compound datasets: vh5 moves compound elements as
raw records of libhdf5's native memory type, so a structured array is accepted only when its
layout (names, formats, offsets, item size) is exactly that type; any other layout of the
same size (h5py's dtype, which keeps the file's offsets and byte order) is refused with
vh5.DtypeError instead of landing values in the wrong fields. Differential against h5py:
for every layout vh5 either gives h5py's values or refuses. Also the fill values of record
types, compared with h5py's."""

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp  # noqa: E402
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LIBVER = ("earliest", "v110")
TMP = module_tmp("vh5_records_")
N = 6

REVERSED = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<i4"], "offsets": [4, 0], "itemsize": 8})
PACKED_IN_8 = np.dtype({"names": ["a", "b"], "formats": ["i1", "<i4"], "offsets": [0, 1], "itemsize": 8})


def _fill(x: np.ndarray, rng) -> None:
    """Small valid values in every leaf field of the record array ``x`` (in place)."""
    for name in x.dtype.names:
        field = x[name]
        if field.dtype.names is not None:
            _fill(field, rng)
            x[name] = field
        elif field.dtype.kind == "S":
            x[name] = rng.integers(0, 1000, field.shape).astype(str).astype(field.dtype)
        elif field.dtype.kind == "b":
            x[name] = rng.integers(0, 2, field.shape).astype(bool)
        else:
            x[name] = rng.integers(0, 100, field.shape).astype(field.dtype)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Field for field equality of two record arrays (layouts may differ; names must not)."""
    if a.dtype.names is None or b.dtype.names is None:
        return a.dtype.names == b.dtype.names and a.shape == b.shape and np.array_equal(a, b)
    return a.dtype.names == b.dtype.names and all(_same(a[n], b[n]) for n in a.dtype.names)


def _write(path, name, x, mode="a"):
    with h5py.File(path, mode, libver=LIBVER) as f:
        f.create_dataset(name, data=x)
        return f[name][...]


def _read_or_refuse(path, name, dt):
    """vh5's read of the whole dataset into ``dt``, or None when refused (DtypeError)."""
    out = np.zeros(N, dt)
    with vh5.File(path) as f:
        try:
            vh5.read_many_slices(f[name], out, [0], [0], [N])
        except vh5.DtypeError as e:
            assert name in str(e) and "native memory type" in str(e), e
            return None
    return out


def test_compound_offsets_reversed_read_refused_native_layout_equal_to_h5py():
    """The h5py dtype of a compound stored as a@4, b@0 used to read with a and b swapped."""
    path = str(TMP / "reversed.h5")
    x = np.zeros(N, REVERSED)
    x["a"], x["b"] = np.arange(1, N + 1), -np.arange(1, N + 1)
    ref = _write(path, "c", x)
    with vh5.File(path) as f:
        d = f["c"]
        for call in (
            lambda out: vh5.read_many_slices(d, out, [0], [0], [N]),
            lambda out: vh5.read_many_slices(d, out, [np.s_[:]]),
            lambda out: vh5.read_many_slices(
                d, out, np.zeros((1, 1), np.uint64), np.zeros((1, 1), np.uint64), np.full((1, 1), N, np.uint64)
            ),
            lambda out: d.read_direct(out),
        ):
            out = np.zeros(N, ref.dtype)
            with pytest.raises((vh5.DtypeError, vh5.UnsupportedError)) as e:
                call(out)
            assert not out.view(np.uint8).any()
            if isinstance(e.value, vh5.DtypeError):
                assert "'a': <i4 at 4" in str(e.value) and "'a': <i4 at 0" in str(e.value)
        native = np.dtype([("a", "<i4"), ("b", "<i4")])
        out = np.zeros(N, native)
        vh5.read_many_slices(d, out, [0], [0], [N])
    assert _same(out, ref)


def test_compound_offsets_reversed_write_refused_native_layout_written_right():
    path = str(TMP / "reversed_w.h5")
    x = np.zeros(N, REVERSED)
    _write(path, "c", x)
    src = np.zeros(N, REVERSED)
    src["a"], src["b"] = np.arange(10, 10 + N), -np.arange(10, 10 + N)
    with vh5.File(path, "r+") as f:
        with pytest.raises(vh5.DtypeError, match="src has the record dtype"):
            vh5.write_many_slices(src, f["c"], [0], [0], [N])
        native = np.zeros(N, [("a", "<i4"), ("b", "<i4")])
        native["a"], native["b"] = src["a"], src["b"]
        vh5.write_many_slices(native, f["c"], [0], [0], [N])
    with h5py.File(path, "r") as h:
        assert _same(h["c"][...], src)


def test_compound_same_itemsize_other_offsets_refused():
    """{i1 at 0, i4 at 1} in 8 bytes: native puts b at 4; b used to read as garbage."""
    path = str(TMP / "packed8.h5")
    y = np.zeros(N, PACKED_IN_8)
    y["a"], y["b"] = np.arange(N), np.arange(N) * 100
    ref = _write(path, "c2", y)
    assert _read_or_refuse(path, "c2", ref.dtype) is None
    got = _read_or_refuse(
        path, "c2", np.dtype({"names": ["a", "b"], "formats": ["i1", "<i4"], "offsets": [0, 4], "itemsize": 8})
    )
    assert got is not None and _same(got, ref)


def test_compound_big_endian_h5py_dtype_refused_dask_and_versioned_shim():
    """h5py's dtype of a big-endian compound has '>i4' fields; vh5 delivers native order."""
    path = str(TMP / "be.h5")
    x = np.zeros(N, [("a", ">i4"), ("b", ">f8")])
    x["a"], x["b"] = np.arange(N), np.arange(N) / 2
    ref = _write(path, "be", x)
    assert _read_or_refuse(path, "be", ref.dtype) is None
    from vh5.compat import versioned_hdf5 as shim

    with h5py.File(path, "r") as h:
        out = np.zeros(N, ref.dtype)
        with pytest.raises(Exception, match="native memory type"):
            shim.read_many_slices(h["be"], out, [[0]], [[0]], [[N]])
        assert not out.view(np.uint8).any()
    native = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f8"], "offsets": [0, 8], "itemsize": 16})
    got = _read_or_refuse(path, "be", native)
    assert got is not None and _same(got, ref)
    with vh5.File(path) as f:  # the unstructured raw records stay accepted, as documented
        raw = np.zeros(N, "V16")
        vh5.read_many_slices(f["be"], raw, [0], [0], [N])
        assert _same(raw.view(native), ref)


def test_unicode_dtype_refused_for_string_datasets_bytes_accepted():
    """numpy's U (UCS-4) has no HDF5 type: a U2 destination of an S8 dataset (8 bytes each)
    used to receive the raw bytes as code points. Refused on every entry point; S8 reads
    h5py's values; numpy -> numpy copies of U arrays are unaffected."""
    path = str(TMP / "strings.h5")
    ref = _write(path, "s", np.array([b"abcdefgh", b"12345678"], "S8"))
    with vh5.File(path, "r+") as f:
        d = f["s"]
        for call in (
            lambda out: vh5.read_many_slices(d, out, [0], [0], [2]),
            lambda out: vh5.read_many_slices(
                d, out, np.zeros((1, 1), np.uint64), np.zeros((1, 1), np.uint64), np.full((1, 1), 2, np.uint64)
            ),
            lambda out: vh5.write_many_slices(out, d, [0], [0], [2]),
        ):
            out = np.zeros(2, "U2")
            with pytest.raises(vh5.DtypeError, match="numpy unicode dtype <U2"):
                call(out)
            assert not out.view(np.uint8).any()
        with pytest.raises((vh5.DtypeError, vh5.UnsupportedError)):  # refuses string datasets anyway
            d.read_direct(np.zeros(2, "U2"))
        out = np.zeros(2, "S8")
        vh5.read_many_slices(d, out, [0], [0], [2])
        assert np.array_equal(out, ref)
    with h5py.File(path, "r") as h:
        assert np.array_equal(h["s"][...], ref)
    u = np.zeros(2, "U2")
    vh5.copy_many_slices(np.array(["ab", "cd"]), u, [0], [0], [2])
    assert list(u) == ["ab", "cd"]


# -- differential against h5py over many layouts -------------------------------------------

LEAVES = ["i1", "u1", "<i2", ">i2", "<i4", ">i4", "<u8", "<f4", ">f4", "<f8", ">f8", "<f2", "S3", "?"]


@st.composite
def record_dtypes(draw, depth=0):
    n = draw(st.integers(1, 4))
    names = [f"f{i}" for i in range(n)]
    formats = []
    for _ in range(n):
        if depth < 1 and draw(st.integers(0, 5)) == 0:
            f = draw(record_dtypes(depth=depth + 1))
        else:
            f = np.dtype(draw(st.sampled_from(LEAVES)))
        if draw(st.integers(0, 4)) == 0:
            f = np.dtype((f, draw(st.sampled_from([(2,), (2, 3)]))))
        formats.append(f)
    order = draw(st.permutations(range(n)))
    offsets, pos = [0] * n, 0
    for i in order:
        pos += draw(st.integers(0, 3)) if draw(st.booleans()) else (-pos) % formats[i].alignment
        offsets[i] = pos
        pos += formats[i].itemsize
    itemsize = pos + draw(st.integers(0, 4))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize})


_COUNTS = {"equal": 0, "refused": 0}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(dt=record_dtypes(), align=st.booleans(), seed=st.integers(0, 2**31))
def test_record_layouts_equal_to_h5py_or_refused(dt, align, seed):
    """Random field orders, padding, nested compounds, array members, both byte orders: read
    into h5py's dtype and into the aligned native-order dtype of the same fields, and write
    from h5py's dtype: vh5 gives exactly h5py's values or refuses, never other values."""
    rng = np.random.default_rng(seed)
    x = np.zeros(N, dt)
    _fill(x, rng)
    path = str(TMP / f"rand_{seed}.h5")
    ref = _write(path, "r", x, mode="w")
    native_guess = np.dtype([(n, ref.dtype.fields[n][0].newbyteorder("=")) for n in ref.dtype.names], align=align)
    for cand in (ref.dtype, native_guess):
        got = _read_or_refuse(path, "r", cand)
        if got is None:
            _COUNTS["refused"] += 1
        else:
            _COUNTS["equal"] += 1
            assert _same(got, ref), (cand, got, ref)
    src = np.zeros(N, ref.dtype)
    _fill(src, rng)
    with vh5.File(path, "r+") as f:
        try:
            vh5.write_many_slices(src, f["r"], [0], [0], [N])
            wrote = True
        except vh5.DtypeError:
            wrote = False
    with h5py.File(path, "r") as h:
        back = h["r"][...]
    assert _same(back, src if wrote else ref)


def test_record_layouts_some_accepted():
    """The differential test is not vacuous: native layouts are accepted (run after it)."""
    path = str(TMP / "accepted.h5")
    dt = np.dtype(
        [("a", "<i4"), ("b", "<f8"), ("s", [("x", "<i2"), ("y", "<f4", (3,))]), ("m", "<i8", (2, 2))], align=True
    )
    x = np.zeros(N, dt)
    _fill(x, np.random.default_rng(1))
    ref = _write(path, "ok", x)
    got = _read_or_refuse(path, "ok", dt)
    assert got is not None and _same(got, ref)


# -- fill values of record types, as h5py --------------------------------------------------


def test_record_fillvalues_match_h5py():
    """Compound (nested too), array type, string, enum, opaque: vh5's fillvalue is h5py's value
    (field for field); it used to be None for some and raw bytes for others."""
    path = str(TMP / "fills.h5")
    cmp = np.dtype([("a", "<i4"), ("b", ">f8")])
    nested = np.dtype([("s", [("x", "<i2"), ("y", "<f4", (3,))]), ("m", "<i8", (2, 2))])
    with h5py.File(path, "w", libver=LIBVER) as h:
        h.create_dataset("cmp", shape=(4,), dtype=cmp, fillvalue=np.array((5, 2.5), cmp))
        h.create_dataset("cmp_rev", shape=(4,), dtype=REVERSED, fillvalue=np.array((1, -1), REVERSED))
        h.create_dataset(
            "nested", shape=(4,), dtype=nested, fillvalue=np.array(((3, [1, 2, 3]), [[4, 5], [6, 7]]), nested)
        )
        h.create_dataset("arr", shape=(4,), dtype=np.dtype((">f8", (2, 3))))  # h5py sets no array fill value
        h.create_dataset("s5", shape=(4,), dtype="S5", fillvalue=b"xy")
        h.create_dataset(
            "enum", shape=(4,), dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="i1"), fillvalue=2
        )
        h.create_dataset("opaque", shape=(4,), dtype="V4", fillvalue=np.void(b"abcd"))
        h.create_dataset("plain", shape=(4,), dtype=">i4", fillvalue=42)
        h.create_dataset("longdouble", shape=(4,), dtype=np.longdouble, fillvalue=1.5)
    with vh5.File(path) as f, h5py.File(path, "r") as h:
        for name in h:
            want, got = h[name].fillvalue, f[name].fillvalue
            assert got is not None, name
            if isinstance(want, np.ndarray):
                assert isinstance(got, np.ndarray) and np.array_equal(got, want), name
            elif isinstance(want, np.void) and want.dtype.names is None:
                assert bytes(got) == bytes(want), name
            else:
                assert type(got) is type(want) and _same(np.asarray(got), np.asarray(want)), (name, got, want)
