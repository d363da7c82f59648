"""Edge cases found by a new-user trial: each must give a clear error, not a silent value."""

import io
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
if os.environ.get("VH5_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(REPO / "bindings" / "python"))

import vh5  # noqa: E402
from vh5 import _lib  # noqa: E402

if not hasattr(_lib.lib().cdll, "vh5_read_many_slices"):
    pytest.skip(f"the loaded library ({_lib.library_path()}) has no HDF5 exports yet", allow_module_level=True)

h5py = pytest.importorskip("h5py")
TMP = Path(tempfile.mkdtemp(prefix="vh5-py-edge-"))


def test_null_dataspace_is_refused_not_read_as_a_scalar():
    p = str(TMP / "null.h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("null", data=h5py.Empty("f8"))
        f.create_dataset("scalar", data=2.5)
    with vh5.File(p) as f:
        out = np.full((), -1.0)
        with pytest.raises(vh5.UnsupportedError, match="null dataspace"):
            vh5.read_many_slices(f["null"], out, np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64))
        assert out == -1.0  # untouched
        # a real scalar still reads its one element
        vh5.read_many_slices(f["scalar"], out, np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64))
        assert out == 2.5


def test_h5py_dataset_backed_by_a_python_file_object_is_explained():
    bio = io.BytesIO()
    with h5py.File(bio, "w") as f:
        f["x"] = np.arange(10.0)
    with h5py.File(bio, "r") as f:
        out = np.zeros(3)
        with pytest.raises(vh5.Error, match="file-like|in-memory|cannot be reopened"):
            vh5.read_many_slices(f["x"], out, [2], [0], [3])


def test_closing_a_writable_file_flushes_even_while_a_dataset_lives():
    p = str(TMP / "flush.h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=np.zeros((4, 4)), chunks=(2, 2))
    with vh5.File(p, mode="r+") as f:
        d = f["x"]  # stays alive after the with block: libhdf5 keeps the file open
        vh5.write_many_slices(np.arange(4.0).reshape(2, 2), d, [0, 0], [1, 1], [2, 2])
    # h5py (its own libhdf5) sees the data although `d` still holds the file open
    # vh5's libhdf5 still holds the file (and its write lock) through `d`: h5py reads it
    # with locking off, as documented for files open for writing elsewhere.
    with h5py.File(p, "r", locking=False) as g:
        got = g["x"][()]
    want = np.zeros((4, 4))
    want[1:3, 1:3] = [[0, 1], [2, 3]]
    np.testing.assert_array_equal(got, want)
    d.close()
