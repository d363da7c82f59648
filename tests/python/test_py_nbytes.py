"""Dataset.nbytes of the types vh5 cannot read (variable-length strings, vlen, references), as
h5py's ``size * dtype.itemsize``: 8 bytes (a Python object) per element for such a type at the
top, but the file type's size for a compound or array type holding one (h5py's dtype keeps
the file's offsets and item size: a compound of int32 and a vlen string is 12 bytes, vh5 said
8). Differential against h5py, including scalar, empty and multi-dimensional datasets."""

import h5py
import numpy as np
import pytest
import vh5

SD = h5py.string_dtype()
VL = h5py.vlen_dtype("i4")
TYPES = {
    "str": SD,
    "vlen": VL,
    "ref": h5py.ref_dtype,
    "regionref": h5py.regionref_dtype,
    "cmp_str": np.dtype([("a", "<i4"), ("s", SD)]),
    "cmp_vlen": np.dtype([("a", "<i8"), ("v", VL)]),
    "cmp_ref": np.dtype([("a", "<i4"), ("r", h5py.ref_dtype)]),
    "cmp_regionref": np.dtype([("a", "<i4"), ("r", h5py.regionref_dtype)]),
    "cmp_only_ref": np.dtype([("r", h5py.ref_dtype)]),
    "cmp_only_vlen": np.dtype([("v", VL)]),
    "cmp_three": np.dtype([("s", SD), ("v", VL), ("x", "u1")]),
    "cmp_nested": np.dtype([("a", "<i2"), ("n", [("s", SD), ("b", "<f8")])]),
    "cmp_array_member": np.dtype([("a", "<i2"), ("s", SD, (3,))]),
    "array_of_str": np.dtype((SD, (3,))),
}
SHAPES = {"1d": (5,), "2d": (2, 3), "scalar": (), "empty": None}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("kind", list(TYPES))
def test_nbytes_of_object_types_matches_h5py(tmp_path, kind, shape):
    p = tmp_path / "nbytes.h5"
    with h5py.File(p, "w") as h:
        h.create_dataset("d", shape=SHAPES[shape], dtype=TYPES[kind])
    with h5py.File(p, "r") as h, vh5.File(p) as f:
        assert f["d"].dtype is None
        assert f["d"].nbytes == h["d"].nbytes, (kind, shape, h["d"].dtype)
