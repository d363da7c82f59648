"""h5py's datetime64 / timedelta64 datasets (an opaque type tagged ``NUMPY:<dtype>``) through
vh5's h5py-style Dataset: ``dtype`` is the tagged numpy dtype, as h5py gives (it was the raw
``|V8``), and ``d[...]``, ``d[sel]``, ``read_direct`` and the fill value give h5py's values
(``d[...]`` used to refuse: "numpy has no dtype for"). Differential against h5py over units,
byte orders, layouts and filters."""

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp

TMP = module_tmp("vh5_datetime_")
BASE = np.array(["2020-01-01T00:00:01", "1999-12-31T23:59:59", "1970-01-01", "2038-01-19T03:14:08"] * 5, "M8[s]")
DTYPES = ["<M8[s]", ">M8[s]", "<M8[ms]", ">M8[D]", "<m8[ms]", ">m8[s]", "<M8[ns]"]
LAYOUTS = {
    "contiguous": {},
    "chunked": {"chunks": (3,)},
    "gzip_shuffle": {"chunks": (4,), "compression": "gzip", "shuffle": True},
    "fill": {"chunks": (4,), "maxshape": (None,)},
}


def _values(dt: str) -> np.ndarray:
    d = np.dtype(dt)
    if d.kind == "m":
        return (np.arange(len(BASE), dtype=np.int64) * 37 - 100).astype(d)
    return BASE.astype(d)


@pytest.fixture(scope="module")
def path():
    p = str(TMP / "times.h5")
    with h5py.File(p, "w") as f:
        for dt in DTYPES:
            x = _values(dt)
            for lay, kw in LAYOUTS.items():
                name = f"{dt.replace('<', 'le').replace('>', 'be').replace('[', '_').replace(']', '')}_{lay}"
                ds = f.create_dataset(name, data=x.astype(h5py.opaque_dtype(x.dtype)), **kw)
                if lay == "fill":
                    ds.resize((len(x) + 7,))  # unwritten chunks: h5py reads the fill value
    return p


def _names(path):
    with h5py.File(path, "r") as f:
        return sorted(f)


@pytest.mark.parametrize("sel", [Ellipsis, slice(2, 17, 3), slice(5, 6), 7])
def test_datetime_dataset_reads_as_h5py(path, sel):
    with h5py.File(path, "r") as h, vh5.File(path) as v:
        for name in h:
            want, d = h[name], v[name]
            assert d.dtype == want.dtype, name
            got = d[sel]
            exp = want[sel]
            assert np.asarray(got).dtype == np.asarray(exp).dtype, name
            assert np.asarray(got).tobytes() == np.asarray(exp).tobytes(), (name, got, exp)


def test_datetime_dataset_read_direct_and_fillvalue(path):
    with h5py.File(path, "r") as h, vh5.File(path) as v:
        for name in h:
            want, d = h[name], v[name]
            out = np.zeros(want.shape, want.dtype)
            d.read_direct(out)
            assert np.array_equal(out.view("u1"), want[...].view("u1")), name
            assert np.asarray(d.fillvalue).tobytes() == np.asarray(want.fillvalue).astype(want.dtype).tobytes(), name
            assert d.nbytes == want.nbytes, name


def test_datetime_dataset_other_unit_destination_refused(path):
    with vh5.File(path) as v:
        d = v["leM8_s_chunked"]
        with pytest.raises(vh5.DtypeError, match="leM8_s_chunked|/leM8_s_chunked"):
            vh5.read_many_slices(d, np.zeros(d.shape, "<M8[ms]"), [0], [0], [d.shape[0]])
