"""Partial writes into new chunks: vh5's write leaves in the file what libhdf5's own H5Dwrite
(h5py) leaves, for every allocation time, fill time and filter. The oracle: h5py's reading of
a file written by h5py against its reading of the same file written by vh5.

Regression (allocation time late + a filter + fill time never): libhdf5's first write
allocates every chunk and fills it with the fill value whatever the fill time; vh5 wrote its
chunks itself (H5Dwrite_chunk) and stored zeros around the element written.
"""

import itertools

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
import vh5  # noqa: E402

FILTERS = {
    "none": lambda p: None,
    "deflate": lambda p: p.set_deflate(4),
    "shuffle": lambda p: p.set_shuffle(),
    "fletcher32": lambda p: p.set_fletcher32(),
    "nbit": lambda p: p.set_filter(5, 0, ()),
    "scaleoffset": lambda p: p.set_scaleoffset(h5py.h5z.SO_INT, 0),
}
ALLOC = {"early": h5py.h5d.ALLOC_TIME_EARLY, "incr": h5py.h5d.ALLOC_TIME_INCR, "late": h5py.h5d.ALLOC_TIME_LATE}
FILL = {"never": h5py.h5d.FILL_TIME_NEVER, "ifset": h5py.h5d.FILL_TIME_IFSET, "alloc": h5py.h5d.FILL_TIME_ALLOC}


def make(path, filt, alloc, fill, shape=(8,), chunk=(4,)):
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(chunk)
        dcpl.set_fill_value(np.array(7, "<u2"))
        dcpl.set_fill_time(FILL[fill])
        dcpl.set_alloc_time(ALLOC[alloc])
        FILTERS[filt](dcpl)
        space = h5py.h5s.create_simple(shape, shape)
        h5py.h5d.create(f.id, b"d", h5py.h5t.py_create(np.dtype("<u2")), space, dcpl=dcpl)


def h5py_read(path):
    with h5py.File(path, "r") as f:
        return f["d"][...]


@pytest.mark.parametrize("filt,alloc,fill", list(itertools.product(FILTERS, ALLOC, FILL)))
def test_partial_write_into_new_chunks_stores_what_h5dwrite_stores(tmp_path, filt, alloc, fill):
    mine, theirs = tmp_path / "vh5.h5", tmp_path / "h5py.h5"
    make(mine, filt, alloc, fill)
    make(theirs, filt, alloc, fill)
    with vh5.File(mine, "r+") as f:
        vh5.write_many_slices(np.array([42], "<u2"), f["d"], src_start=[0], dst_start=[1], count=[1])
    with h5py.File(theirs, "r+") as f:
        f["d"][1] = 42
    np.testing.assert_array_equal(h5py_read(mine), h5py_read(theirs))


@pytest.mark.parametrize("filt", ["none", "deflate", "nbit"])
def test_late_allocation_two_rows_in_two_chunks_then_a_second_write(tmp_path, filt):
    """The allocating element is the first row's first element; later rows and calls (the
    storage now allocated) merge into what libhdf5 filled."""
    mine, theirs = tmp_path / "vh5.h5", tmp_path / "h5py.h5"
    make(mine, filt, "late", "never", shape=(6, 10), chunk=(4, 4))
    make(theirs, filt, "late", "never", shape=(6, 10), chunk=(4, 4))
    src = np.arange(1, 7, dtype="<u2").reshape(2, 3)
    with vh5.File(mine, "r+") as f:
        vh5.write_many_slices(
            src, f["d"], src_start=[[0, 0], [1, 0]], dst_start=[[5, 7], [0, 1]], count=[[1, 3], [1, 3]]
        )
        vh5.write_many_slices(src, f["d"], src_start=[[0, 0]], dst_start=[[2, 2]], count=[[2, 3]])
    with h5py.File(theirs, "r+") as f:
        f["d"][5, 7:10] = src[0]
        f["d"][0, 1:4] = src[1]
        f["d"][2:4, 2:5] = src
    np.testing.assert_array_equal(h5py_read(mine), h5py_read(theirs))
