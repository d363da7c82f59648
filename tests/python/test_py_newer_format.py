"""Files written by h5py's HDF5 (2.x in h5py 3.16 wheels) with libver 'v112', 'v114' and
'latest': read through vh5 equal to h5py where the linked libhdf5 reads the object formats,
otherwise refused with vh5.UnsupportedError saying so (file, object, the format feature, the
linked libhdf5 version and which build reads it) — never NotFoundError or a bare error stack.
Also vh5.hdf5_version() (which libhdf5 vh5 uses)."""

import re

import h5py
import numpy as np
import pytest
import vh5

DATA = np.arange(60, dtype="<f8").reshape(6, 10)


def _writer():
    """(major, minor) of h5py's libhdf5, which writes the files."""
    return tuple(h5py.version.hdf5_version_tuple[:2])


def _file(tmp_path, libver, **kw):
    p = tmp_path / f"{libver}.h5"
    try:
        with h5py.File(p, "w", libver=libver) as f:
            f.create_dataset("x", data=DATA, **kw)
    except ValueError as e:  # an h5py whose HDF5 lacks this libver
        pytest.skip(str(e))
    return p


def test_hdf5_version_reports_version_origin_threadsafety():
    v = vh5.hdf5_version()
    assert v.version >= (1, 10, 0) and len(v.version) == 3, v
    assert v.origin in ("system", "vendored", "h5py") and isinstance(v.threadsafe, bool), v
    assert (v.origin == "h5py") == vh5._lib.lib().h5py_bound, v
    assert re.fullmatch(r"libhdf5 \d+\.\d+\.\d+ \((system|vendored|h5py), (not )?thread-safe\)", str(v)), str(v)


@pytest.mark.parametrize("libver", ["v112", "v114", "latest"])
@pytest.mark.parametrize("kw", [dict(chunks=(3, 5), compression="gzip"), dict()], ids=["chunked_gzip", "contiguous"])
def test_newer_format_read_equal_to_h5py_or_refused_naming_it(tmp_path, libver, kw):
    p = _file(tmp_path, libver, **kw)
    with h5py.File(p) as f:
        want = f["x"][1:5, 2:9]
    out = np.zeros((4, 7))
    try:
        with vh5.File(p) as f, f["x"] as d:
            vh5.read_many_slices(d, out, [[1, 2]], [[0, 0]], [[4, 7]])
    except vh5.UnsupportedError as e:
        msg = str(e)
        linked = vh5.hdf5_version().version[:2]
        # refused only by a libhdf5 older than the writer (1.14 refuses HDF5 2.x's 'latest')
        assert linked < _writer(), (linked, msg)
        assert re.search(
            rf"file `{re.escape(str(p))}`, object `/?x`: written with a newer HDF5 format than the linked libhdf5 {linked[0]}\.",
            msg,
        ), msg
        assert "bad version number for" in msg and "error stack" not in msg, msg
        # the static-hdf5 hint (HDF5 2.2) wherever the linked libhdf5 is older than 2.0
        assert ("static-hdf5" in msg) == (linked < (2, 0)), msg
        if "layout message" in msg:  # HDF5 2.x's version 5: 1.12 / 1.14 refuse it too
            assert "needs libhdf5 2.0 or newer" in msg and "1.12 or newer" not in msg, msg
        return
    np.testing.assert_array_equal(out, want)


def test_newer_layout_message_is_unsupported_not_not_found(tmp_path):
    """The case of the report: h5py 3.16 + libver='latest' chunked gzip dataset."""
    p = _file(tmp_path, "latest", chunks=(3, 5), compression="gzip")
    if vh5.hdf5_version().version[:2] >= _writer():
        pytest.skip("the linked libhdf5 reads the newer layout message (it is as new as h5py's)")
    with vh5.File(p) as f:
        with pytest.raises(vh5.UnsupportedError, match=r"layout message") as ei:
            f["x"]
    assert not isinstance(ei.value, vh5.NotFoundError)
    assert ei.value.status_name == "VH5_ERR_UNSUPPORTED"
