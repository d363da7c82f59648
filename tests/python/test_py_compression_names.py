"""``Dataset.compression`` / ``compression_opts`` / ``filter_ids`` and the other filter
properties follow h5py's rule exactly, against h5py on the same file: gzip, lzf, szip looked
for in that order (not the pipeline's), ``"unknown"`` for a pipeline holding a filter h5py
does not know by name (nbit, blosc / zstd / bzip2 ids, any unregistered optional filter),
None otherwise; the options of the last filter when one repeats (vh5 gave None for
unregistered filters and took the pipeline's first compressor)."""

import h5py
import numpy as np
import pytest
import vh5

BLOSC, ZSTD, BZIP2, UNREGISTERED = 32001, 32015, 307, 40123


def _with_filters(f, name, filters, dtype="<f8"):
    """A chunked dataset whose pipeline is ``filters`` (id, flags, cd_values), in order."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((4,))
    for fid, flags, values in filters:
        dcpl.set_filter(fid, flags, values)
    space = h5py.h5s.create_simple((16,))
    tid = h5py.h5t.py_create(np.dtype(dtype))
    h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)


OPT = h5py.h5z.FLAG_OPTIONAL
PIPELINES = {
    "blosc_only": [(BLOSC, OPT, (2, 2, 8, 0, 5, 1, 1))],
    "zstd_gzip": [(ZSTD, OPT, (3,)), (h5py.h5z.FILTER_DEFLATE, 0, (6,))],
    "shuffle_bzip2": [(h5py.h5z.FILTER_SHUFFLE, 0, (8,)), (BZIP2, OPT, (9,))],
    "unregistered_no_values": [(UNREGISTERED, OPT, ())],
    "shuffle_fletcher": [(h5py.h5z.FILTER_SHUFFLE, 0, (8,)), (h5py.h5z.FILTER_FLETCHER32, 0, ())],
    "gzip_twice": [(h5py.h5z.FILTER_DEFLATE, 0, (3,)), (h5py.h5z.FILTER_DEFLATE, 0, (7,))],
    "lzf_then_gzip": [(32000, OPT, ()), (h5py.h5z.FILTER_DEFLATE, 0, (2,))],
    "nbit": [(h5py.h5z.FILTER_NBIT, 0, ())],
    "scaleoffset": [(h5py.h5z.FILTER_SCALEOFFSET, 0, (0, 2))],
    "none": [],
}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("compression") / "filters.h5"
    with h5py.File(p, "w") as f:
        for name, filters in PIPELINES.items():
            _with_filters(f, name, filters)
    return p


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_compression_names_match_h5py(path, name):
    with h5py.File(path, "r") as h, vh5.File(path) as f:
        want, got = h[name], f[name]
        for prop in ("compression", "compression_opts", "filter_ids", "shuffle", "fletcher32", "scaleoffset"):
            assert getattr(got, prop) == getattr(want, prop), (name, prop, getattr(got, prop), getattr(want, prop))


def test_compression_unknown_for_unregistered_optional_filters(path):
    with vh5.File(path) as f:
        assert f["blosc_only"].compression == "unknown" and f["blosc_only"].compression_opts is None
        assert f["unregistered_no_values"].filters == (UNREGISTERED,)
        assert f["zstd_gzip"].compression == "gzip" and f["zstd_gzip"].compression_opts == 6
        assert f["gzip_twice"].compression_opts == 7
        assert f["shuffle_fletcher"].compression is None
