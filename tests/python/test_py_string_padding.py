"""Fixed-length strings stored space-padded (H5T_STR_SPACEPAD) or NUL-terminated
(H5T_STR_NULLTERM): vh5 moves them as numpy ``S`` (NUL-padded) strings the way h5py does,
letting libhdf5 convert. It used to copy the stored bytes: a space-padded b'ab' read as
b'ab    ' and a write stored NUL padding where h5py stores spaces. Differential against
h5py for reads (whole and partial) and for the bytes a write stores, top-level and inside
compounds and arrays, contiguous and chunked (gzip, unfiltered), in every planner mode."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp  # noqa: E402

TMP = module_tmp("vh5_strpad_")
PADS = ("SPACEPAD", "NULLTERM", "NULLPAD")
STORED = np.array([b"ab    ", b"abcdef", b"a b \0x", b"", b"  x   ", b"zz"], "S6")
WRITTEN = np.array([b"ab", b"abcdef", b"a b ", b" x", b"", b"q  "], "S6")
N = len(STORED)


def _string_type(pad):
    t = h5py.h5t.C_S1.copy()
    t.set_size(6)
    t.set_strpad(getattr(h5py.h5t, "STR_" + pad))
    return t


def _record_type(pad):
    """{n: int32, s: the string, arr: 2 of the string}, a file type h5py cannot spell."""
    s = _string_type(pad)
    t = h5py.h5t.create(h5py.h5t.COMPOUND, 4 + 6 + 12)
    t.insert(b"n", 0, h5py.h5t.STD_I32LE)
    t.insert(b"s", 4, s)
    t.insert(b"arr", 10, h5py.h5t.array_create(s, (2,)))
    return t


def _record_values(strings):
    dt = np.dtype(
        {"names": ["n", "s", "arr"], "formats": ["<i4", "S6", ("S6", (2,))], "offsets": [0, 4, 10], "itemsize": 22}
    )
    x = np.zeros(N, dt)
    x["n"] = np.arange(N)
    x["s"] = strings
    x["arr"] = np.stack([strings[::-1], strings], axis=1)
    return x


def _create(path, ftype, chunked, raw):
    """A dataset of file type ``ftype`` holding the bytes of ``raw`` unconverted."""
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        if chunked:
            dcpl.set_chunk((4,))
            if chunked == "gzip":
                dcpl.set_deflate(4)
        for name in (b"c", b"twin"):
            d = h5py.h5d.create(f.id, name, ftype, h5py.h5s.create_simple((N,)), dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(raw).view(np.uint8), mtype=ftype)


def _stored_bytes(h, name, ftype):
    out = np.zeros(N * ftype.get_size(), np.uint8)
    h[name].id.read(h5py.h5s.ALL, h5py.h5s.ALL, out, mtype=ftype)
    return out.tobytes()


def _same(a, b):
    """Equal values and equal bytes of every string (numpy's == ignores trailing NULs)."""
    if a.dtype.names is not None:
        return a.dtype.names == b.dtype.names and all(_same(a[n], b[n]) for n in a.dtype.names)
    return a.shape == b.shape and [x.tobytes() for x in a.reshape(-1)] == [x.tobytes() for x in b.reshape(-1)]


def _check(tag, pad, chunked, record):
    path = str(TMP / f"{tag}_{pad}_{chunked}_{record}.h5")
    ftype = _record_type(pad) if record else _string_type(pad)
    stored, written = (_record_values(STORED), _record_values(WRITTEN)) if record else (STORED, WRITTEN)
    raw = stored
    if record:  # the file layout has no padding: pack the values by hand
        raw = np.zeros(
            N,
            np.dtype(
                {
                    "names": stored.dtype.names,
                    "formats": ["<i4", "S6", ("S6", (2,))],
                    "offsets": [0, 4, 10],
                    "itemsize": 22,
                }
            ),
        )
        for n in stored.dtype.names:
            raw[n] = stored[n]
    _create(path, ftype, chunked, raw)
    with h5py.File(path, "r") as h:
        ref = h["c"][...]
    with vh5.File(path, "r+") as f:
        d = f["c"]
        native = d._mem_type()[0]
        if not record:
            assert native == np.dtype("S6"), native
        out = np.zeros(N, native)
        vh5.read_many_slices(d, out, [0], [0], [N])
        assert _same(out[list(ref.dtype.names)] if record else out, ref), (pad, out, ref)
        part = np.zeros(2, native)
        vh5.read_many_slices(d, part, [1], [0], [2])
        assert _same(part[list(ref.dtype.names)] if record else part, ref[1:3])
        src = np.zeros(N, native)
        if record:
            for n in written.dtype.names:
                src[n] = written[n]
        else:
            src[...] = written
        vh5.write_many_slices(src, d, [0], [0], [N])
    with h5py.File(path, "r+") as h:
        h["twin"][...] = written  # what h5py stores for the same values
    with h5py.File(path, "r") as h:
        assert _stored_bytes(h, "c", ftype) == _stored_bytes(h, "twin", ftype), pad
        assert _same(h["c"][...], h["twin"][...])


CASES = [(pad, chunked, record) for pad in PADS for chunked in (None, "plain", "gzip") for record in (False, True)]


@pytest.mark.parametrize("pad,chunked,record", CASES)
def test_string_padding_read_write_like_h5py(pad, chunked, record):
    _check("auto", pad, chunked, record)


def _check_all(tag):
    for case in CASES:
        _check(tag, *case)


@pytest.mark.parametrize("planner", ["chunks", "rows"])
def test_string_padding_every_planner(planner):
    """Each planner mode in a process of its own (``VH5_PLANNER`` is read once)."""
    env = dict(os.environ, VH5_PLANNER=planner)
    here = os.path.dirname(__file__)
    code = f"import sys; sys.path.insert(0, {here!r}); import conftest; import test_py_string_padding as t; t._check_all({planner!r})"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("pad", PADS)
def test_fixed_string_dataset_dtype_and_selections_like_h5py(pad, tmp_path):
    """A fixed-length string dataset's Dataset.dtype was '|V6' (h5py: '|S6') and d[()] was
    refused advising a '|V6' destination, while read_many_slices into S6 gave h5py's values.
    Now dtype is h5py's S<n> and selections read h5py's values (padding converted by libhdf5
    as above), also for netCDF-4's char variables (S1, h5py's dtype for them)."""
    path = str(tmp_path / f"fixed_{pad}.h5")
    _create(path, _string_type(pad), "plain", STORED)
    with h5py.File(path, "a") as h:
        h["nc_char"] = np.array([[b"a", b"b", b""], [b"c", b"", b"d"]], "S1")
    with vh5.File(path) as f, h5py.File(path, "r") as h:
        for name in ("c", "nc_char"):
            d, ref = f[name], h[name]
            assert d.dtype == ref.dtype and d.dtype.kind == "S", (name, d.dtype, ref.dtype)
            assert _same(d[()], ref[()]) and _same(d[1:], ref[1:]), (name, d[()], ref[()])
            assert d.fillvalue == ref.fillvalue and d.nbytes == ref.nbytes, name
        assert type(f["c"][0]) is type(h["c"][0]) and f["c"][0] == h["c"][0]
        out = np.zeros(N, "S6")
        f["c"].read_direct(out)
        assert _same(out, h["c"][...])
