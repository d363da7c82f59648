"""The hint of a dtype mismatch matches what libhdf5 can convert: ``convert=True`` is suggested
only when the conversion exists (a bitfield dataset read into uint8 was told to pass
convert=True, which then said no conversion exists), otherwise the raw-bytes route (an opaque
``V<n>`` destination) is given; types moved as raw bytes are described naturally ("dataset
has an enum type", not "dataset is opaque: enum"). Differential against h5py's values."""

import h5py
import numpy as np
import pytest
import vh5

N = 6


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("hints") / "types.h5"
    with h5py.File(p, "w") as f:
        space = h5py.h5s.create_simple((N,))
        bf = h5py.h5d.create(f.id, b"bitfield", h5py.h5t.STD_B8LE.copy(), space)
        bf.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(N, dtype="u1") * 3)
        f.create_dataset(
            "enum", data=np.arange(N, dtype="u1") % 3, dtype=h5py.enum_dtype({"a": 0, "b": 1, "c": 2}, basetype="u1")
        )
    return p


def _read(ds, dtype, **kw):
    out = np.zeros(N, dtype)
    one = lambda v: np.array([[v]], "u8")  # noqa: E731
    vh5.read_many_slices(ds, out, one(0), one(0), one(N), **kw)
    return out


def _stored_bytes(path, name):
    with h5py.File(path, "r") as f:
        ds = f[name]
        raw = np.zeros(N, "u1")
        ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=h5py.h5t.NATIVE_UINT8 if name == "enum" else ds.id.get_type())
        return raw


@pytest.mark.parametrize("name,kind", [("bitfield", "a bitfield type"), ("enum", "an enum type")])
def test_dtype_hint_suggests_convert_only_when_libhdf5_converts(path, name, kind):
    want = _stored_bytes(path, name)
    with vh5.File(path) as f:
        ds = f[name]
        with pytest.raises(vh5.DtypeError) as e:
            _read(ds, "u1")
        msg = e.value.message
        assert f"dataset has {kind} of 1 byte in the file" in msg and "opaque:" not in msg, msg
        if "pass convert=True" in msg:
            # the hint is honest: convert=True then reads h5py's values
            np.testing.assert_array_equal(_read(ds, "u1", convert=True), want)
        else:
            assert "libhdf5 has no conversion for it; use an opaque destination" in msg and "itemsize 1" in msg, msg
            with pytest.raises(vh5.DtypeError) as e2:
                _read(ds, "u1", convert=True)
            assert "pass convert=True" not in e2.value.message and "use an opaque destination" in e2.value.message
        # the raw-bytes route always works and gives the stored bytes
        np.testing.assert_array_equal(_read(ds, "V1").view("u1"), want)


def test_dtype_hint_bitfield_to_float_gives_the_raw_bytes_route(path):
    # libhdf5 converts a bitfield to no float: one hint, the raw-bytes route
    with vh5.File(path) as f:
        with pytest.raises(vh5.DtypeError) as e:
            _read(f["bitfield"], "f8")
    msg = e.value.message
    assert "pass convert=True" not in msg and "use an opaque destination" in msg, msg
