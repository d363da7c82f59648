"""Non-numeric numpy dtypes that vh5 moves as opaque raw bytes (datetime64 / timedelta64 in any
unit and byte order, ``S<n>``, structured, ``longdouble``) against datasets of every kind
(h5py's opaque types tagged with a numpy dtype, untagged opaque, fixed-length strings,
compounds, numbers): vh5 either gives h5py's values or refuses with vh5.DtypeError naming the
dataset and both dtypes, never other values (a big-endian datetime64 dataset read into a
little-endian array gave year 2007305087; datetime64[D] data read as datetime64[s]; a
compound's bytes read as a string). Plain ``V<n>`` stays the documented raw-records escape.
Differential against h5py for reads (read_many_slices, read_tables, Dataset.read_direct)
and writes (write_many_slices)."""

import shutil

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp
from vh5._dtypes import layout_text
from vh5._slices import read_tables

TMP = module_tmp("vh5_opaque_")
N = 4
TIMES = np.array(["2020-01-01T00:00:01", "1999-12-31T23:59:59", "1970-01-01", "2038-01-19T03:14:08"], "M8[s]")


def _opaque(x: np.ndarray) -> np.ndarray:
    """``x`` as h5py stores a datetime64 / timedelta64 array: an opaque type tagged with its dtype."""
    return x.astype(h5py.opaque_dtype(x.dtype))


DATASETS = {
    "m8s_le": _opaque(TIMES),
    "m8s_be": _opaque(TIMES.astype(">M8[s]")),
    "m8ms_le": _opaque(TIMES.astype("M8[ms]")),
    "m8d_le": _opaque(TIMES.astype("M8[D]")),
    "m8d_be": _opaque(TIMES.astype(">M8[D]")),
    "td_ms_le": _opaque(np.array([1, -2, 3, 40000], "m8[ms]")),
    "td_s_be": _opaque(np.array([1, -2, 3, 40000], ">m8[s]")),
    "void8": np.array([np.void(bytes([i]) * 8) for i in range(N)]),
    "str8": np.array([b"abc", b"defgh", b"", b"12345678"], "S8"),
    "cmp": np.array([(i, 2.5 * i) for i in range(N)], [("a", "<i4"), ("b", "<f4")]),
    "cmp_time": np.array(
        list(zip(TIMES.astype(">M8[s]").astype(h5py.opaque_dtype(np.dtype(">M8[s]"))), np.arange(N) / 4)),
        [("t", h5py.opaque_dtype(np.dtype(">M8[s]"))), ("x", "<f8")],
    ),
    "i8": np.arange(N, dtype="<i8") * 1000,
    "f8_be": np.arange(N, dtype=">f8") / 3,
    "ld": np.arange(N, dtype=np.longdouble) / 3,
}

DTYPES = [
    "<M8[s]",
    ">M8[s]",
    "<M8[ms]",
    "<M8[D]",
    ">M8[D]",
    "<m8[ms]",
    ">m8[s]",
    "<m8[s]",
    "S8",
    "S16",
    "V8",
    np.dtype([("a", "<i4"), ("b", "<f4")]),
    np.dtype([("x", "<i8")]),
    np.dtype([("t", ">M8[s]"), ("x", "<f8")]),
    np.dtype([("t", "<M8[s]"), ("x", "<f8")]),
    "<i8",
    "<f8",
    np.longdouble,
]


@pytest.fixture(scope="module")
def path():
    p = TMP / "opaque.h5"
    with h5py.File(p, "w") as f:
        for name, x in DATASETS.items():
            f.create_dataset(name, data=x)
    return p


def _h5py_read(d, dt):
    """h5py's values of dataset ``d`` as ``dt``, or None when h5py refuses."""
    if d.dtype == dt:
        return d[...]
    try:
        return d.astype(dt)[...]
    except (TypeError, OSError, ValueError):
        return None


def _raw(dt) -> bool:
    return dt.kind == "V" and dt.names is None


def _check_refusal(e: vh5.DtypeError, name: str, dt) -> None:
    """vh5's own check names the dataset and both dtypes."""
    msg = str(e)
    if "native memory type" in msg:
        assert f"'/{name}'" in msg and layout_text(dt) in msg, msg
    else:  # the library's own check (codes, item sizes, byte order)
        assert "VH5_ERR_DTYPE" in msg, msg


def _vh5_read(path, name, dt, how):
    out = np.zeros(N, dt)
    with vh5.File(path) as f:
        d = f[name]
        try:
            if how == "read_many_slices":
                vh5.read_many_slices(d, out, np.zeros((1, 1), np.uint64), np.zeros((1, 1), np.uint64), [[N]])
            elif how == "selections":
                vh5.read_many_slices(d, out, [np.s_[:]])
            elif how == "convert":  # libhdf5 converts numbers; never opaque bytes
                vh5.read_many_slices(d, out, [0], [0], [N], convert=True)
            elif how == "read_tables":
                read_tables(d, out, [0], [0], [N], clip=True)
            else:
                d.read_direct(out)
        except vh5.DtypeError as e:
            _check_refusal(e, name, dt)
            return None
        except vh5.UnsupportedError:
            assert how == "read_direct"  # read_direct refuses every record type
            return None
    return out


@pytest.mark.parametrize("how", ["read_many_slices", "selections", "convert", "read_tables", "read_direct"])
@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(DATASETS))
def test_opaque_dtype_read_matches_h5py_or_refuses(path, name, dt, how):
    dt = np.dtype(dt)
    got = _vh5_read(path, name, dt, how)
    if got is None or _raw(dt):
        return
    with h5py.File(path) as f:
        want = _h5py_read(f[name], dt)
    assert want is not None, f"vh5 read {name} as {dt} ({got!r}), h5py refuses"
    assert want.dtype == got.dtype and np.array_equal(want, got), (want, got)


def test_opaque_dtype_refusal_names_dataset_and_dtypes(path):
    with vh5.File(path) as f:
        with pytest.raises(vh5.DtypeError) as e:
            vh5.read_many_slices(f["m8s_be"], np.zeros(N, "<M8[s]"), [0], [0], [N])
    msg = str(e.value)
    assert "'/m8s_be'" in msg and "<M8[s]" in msg and ">M8[s]" in msg, msg
    with vh5.File(path) as f:
        with pytest.raises(vh5.DtypeError) as e:
            vh5.read_many_slices(f["cmp"], np.zeros(N, "S8"), [0], [0], [N])
    assert "'/cmp'" in str(e.value) and "|S8" in str(e.value), e.value


def test_opaque_dtype_raw_void_is_the_stored_bytes(path):
    """Plain V<n> is the raw-records escape: a datetime64 dataset's bytes as h5py stored them."""
    out = np.zeros(N, "V8")
    with vh5.File(path) as f:
        vh5.read_many_slices(f["m8s_be"], out, [0], [0], [N])
    assert out.tobytes() == TIMES.astype(">M8[s]").tobytes()


def _h5py_dtype(dt: np.dtype) -> np.dtype:
    """``dt`` with every datetime64 / timedelta64 part as h5py's opaque dtype."""
    if dt.names is not None:
        return np.dtype(
            {
                "names": list(dt.names),
                "formats": [_h5py_dtype(dt.fields[n][0]) for n in dt.names],
                "offsets": [dt.fields[n][1] for n in dt.names],
                "itemsize": dt.itemsize,
            }
        )
    return h5py.opaque_dtype(dt) if dt.kind in "Mm" else dt


def _h5py_write(p, name, src) -> bool:
    """h5py's write of ``src`` (a datetime64 / timedelta64 array as h5py's opaque dtype, the
    way h5py writes those), False when h5py refuses."""
    src = src.astype(_h5py_dtype(src.dtype))
    try:
        with h5py.File(p, "r+") as f:
            f[name][...] = src
        return True
    except (TypeError, OSError, ValueError):
        return False


WRITE_DTYPES = [
    "<M8[s]",
    ">M8[s]",
    "<M8[D]",
    "<m8[ms]",
    "S8",
    np.dtype([("a", "<i4"), ("b", "<f4")]),
    np.dtype([("t", ">M8[s]"), ("x", "<f8")]),
    np.longdouble,
]


@pytest.mark.parametrize("dt", WRITE_DTYPES, ids=str)
@pytest.mark.parametrize(
    "name", ["m8s_le", "m8s_be", "m8d_le", "td_ms_le", "void8", "str8", "cmp", "cmp_time", "i8", "ld"]
)
def test_opaque_dtype_write_matches_h5py_or_refuses(path, name, dt, tmp_path):
    dt = np.dtype(dt)
    src = np.zeros(N, dt)
    src[...] = np.frombuffer(bytes(range(1, 1 + N * dt.itemsize)), dt) if dt.kind != "M" else TIMES
    if dt.kind in "fc":
        src = (np.arange(N) / 7).astype(dt)
    mine, theirs = tmp_path / "vh5.h5", tmp_path / "h5py.h5"
    shutil.copy(path, mine)
    shutil.copy(path, theirs)
    with vh5.File(mine, "r+") as f:
        try:
            vh5.write_many_slices(src, f[name], [0], [0], [N])
        except vh5.DtypeError as e:
            _check_refusal(e, name, dt)
            return
    assert _h5py_write(theirs, name, src), f"vh5 wrote {dt} into {name}, h5py refuses"
    with h5py.File(mine) as a, h5py.File(theirs) as b:
        x, y = a[name][...], b[name][...]
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (x, y)


@pytest.mark.parametrize("name", [n for n in DATASETS if n.startswith(("m8", "td"))])
def test_opaque_dtype_h5py_time_types_read_as_h5py(path, name):
    """h5py's datetime64 / timedelta64 datasets (opaque types tagged ``NUMPY:<dtype>``) read
    into exactly that dtype give h5py's values (big-endian ones included, bytes unswapped);
    their fill value is h5py's too."""
    with h5py.File(path) as h:
        want, hfill = h[name][...], h[name].fillvalue
    for how in ("read_many_slices", "selections", "read_tables"):
        got = _vh5_read(path, name, want.dtype, how)
        assert got is not None and got.dtype == want.dtype and np.array_equal(got, want), (how, got, want)
    with vh5.File(path) as f:
        fill = f[name].fillvalue
    assert fill.dtype == hfill.dtype and fill == hfill, (fill, hfill)


TAGS = [
    b"NUMPY:<M8[s]",
    b"NUMPY:>m8[ms]",
    b"NUMPY:<M8",
    b"NUMPY:<M8[25us]",
    b"NUMPY:<f8",
    b"NUMPY:<M8[s",
    b"numpy:<M8[s]",
    b"",
]


@pytest.mark.parametrize("tag", TAGS, ids=lambda t: t.decode() or "untagged")
def test_opaque_dtype_tags_described_as_h5py_reads_them(tmp_path, tag):
    """``vh5_dataset_mem_type`` describes an opaque type as the datetime64 / timedelta64 dtype
    of its h5py tag (``NUMPY:<M8[s]``), else as ``V<n>``; a read into that dtype gives h5py's
    values, any other non-raw dtype is refused."""
    p = tmp_path / "tags.h5"
    raw = np.arange(1, N + 1, dtype="<i8")
    with h5py.File(p, "w") as f:
        tid = h5py.h5t.create(h5py.h5t.OPAQUE, 8)
        if tag:
            tid.set_tag(tag)
        d = h5py.h5d.create(f.id, b"x", tid, h5py.h5s.create_simple((N,)))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, raw.view("V8"), mtype=tid)
    spec = tag.removeprefix(b"NUMPY:").decode()
    time = tag.startswith(b"NUMPY:") and spec[1:2] in ("M", "m") and spec.count("[") == spec.count("]")
    with vh5.File(p) as f:
        native = f["x"]._mem_type()[0]
    assert native == (np.dtype(spec) if time else np.dtype("V8")), (tag, native)
    for dt in {native, np.dtype("<M8[s]"), np.dtype("<m8[ms]"), np.dtype("S8")}:
        got = _vh5_read(p, "x", dt, "read_many_slices")
        if got is None:
            continue
        if _raw(dt):  # the raw-records escape: the stored bytes
            assert got.tobytes() == raw.tobytes()
            continue
        with h5py.File(p) as f:
            want = f["x"][...]
        assert dt == native and want.dtype == dt and np.array_equal(got, want), (tag, dt, got, want)
