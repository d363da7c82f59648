"""An anonymous h5py dataset (``create_dataset(None, ...)``: in the file, but no link names
it) given as a source: vh5 (not bound to h5py's libhdf5) reopens datasets by path, so it
refuses with a message saying why, instead of "dataset name must be str or bytes, not
NoneType"; the h5py-bound build reads it through h5py's id (values as h5py's). A dataset
whose h5py File was closed (h5py gives no name for it either) is vh5.InvalidHandleError, not
h5py's own "ValueError: Not an id of a file object"."""

import importlib

import h5py
import numpy as np
import pytest
import vh5
from vh5._lib import lib


def test_h5py_anonymous_dataset_source_is_named_as_anonymous(tmp_path):
    p = tmp_path / "anon.h5"
    data = np.arange(12, dtype="<f8")
    with h5py.File(p, "w") as f:
        anon = f.create_dataset(None, data=data)
        assert anon.name is None
        out = np.zeros(4)
        one = lambda v: np.array([[v]], "u8")  # noqa: E731
        if lib().h5py_bound:
            vh5.read_many_slices(anon, out, one(3), one(0), one(4))
            np.testing.assert_array_equal(out, anon[3:7])
            return
        with pytest.raises(vh5.UnsupportedError) as e:
            vh5.read_many_slices(anon, out, one(3), one(0), one(4))
        msg = e.value.message
        assert "the h5py dataset is anonymous (made with create_dataset(None, ...)" in msg, msg
        assert "needs a dataset linked into the file" in msg and str(p) in msg, msg
        assert "NoneType" not in msg
        f["linked"] = anon
    # linked, the same dataset reads as h5py's values
    with h5py.File(p, "r") as f:
        vh5.read_many_slices(f["linked"], out, one(3), one(0), one(4))
        np.testing.assert_array_equal(out, f["linked"][3:7])


@pytest.mark.parametrize("how", ["read_many_slices", "dask"])
def test_h5py_dataset_of_a_closed_file_source_is_invalid_handle(tmp_path, how):
    p = tmp_path / "closed.h5"
    with h5py.File(p, "w") as f:
        f["x"] = np.arange(5.0)
    h = h5py.File(p, "r")
    d = h["x"]
    h.close()
    with pytest.raises(vh5.InvalidHandleError) as e:
        if how == "dask":
            pytest.importorskip("dask")
            importlib.import_module("vh5.dask").from_dataset(d)
        else:
            one = lambda v: np.array([[v]], "u8")  # noqa: E731
            vh5.read_many_slices(d, np.zeros(5), one(0), one(0), one(5))
    msg = e.value.message
    assert "an h5py dataset whose h5py File was closed (<Closed HDF5 dataset>)" in msg, msg
    assert "vh5.File(path)[name]" in msg and "Not an id" not in msg, msg
