"""vh5.write_many_slices into filtered chunked datasets made by h5py: chunks vh5 encodes itself
(shuffle, deflate at the dataset's level, fletcher32) and stores raw with H5Dwrite_chunk must
read back through h5py (its own libhdf5 runs the filters) with exactly the values of a numpy
reference, every stored chunk with filter mask 0; with 1 and 2 threads, edge chunks,
big-endian datasets, unallocated chunks (fill value); scaleoffset (not implemented by vh5)
goes through H5Dwrite and still matches within its precision."""

import numpy as np
import pytest
import vh5  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402

h5py = pytest.importorskip("h5py")
TMP = module_tmp("vh5-py-rawwrite-")

PIPES = {
    "gzip+shuffle": dict(compression="gzip", shuffle=True),
    "gzip+shuffle+fletcher32": dict(compression="gzip", shuffle=True, fletcher32=True),
    "gzip only (level 9)": dict(compression="gzip", compression_opts=9),
    "gzip+shuffle big-endian": dict(compression="gzip", shuffle=True, dtype=">f8"),
    "gzip+shuffle int16": dict(compression="gzip", shuffle=True, dtype="<i2"),
    "scaleoffset (H5Dwrite fallback)": dict(scaleoffset=3),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,chunks", [((200, 230), (40, 50)), ((97, 61), (10, 7))])
@pytest.mark.parametrize("pipe", list(PIPES))
def test_filtered_write_reads_back_in_h5py(pipe, shape, chunks, threads):
    kw = dict(PIPES[pipe])
    dtype = np.dtype(kw.pop("dtype", "<f8"))
    rng = np.random.default_rng(hash((pipe, shape, threads)) % 2**32)
    p = str(TMP / f"r{abs(hash((pipe, shape, threads)))}.h5")
    init = (rng.random(shape) * 1000).astype(dtype)
    with h5py.File(p, "w") as f:
        f.create_dataset("d", data=init, chunks=chunks, **kw)  # every chunk stored
        f.create_dataset("e", shape=shape, dtype=dtype, chunks=chunks, fillvalue=3, **kw)  # none
    n = 300
    src = (rng.random((n * 5, 7)) * 1000).astype(dtype.newbyteorder("="))
    s = np.zeros((n, 2), np.uint64)
    s[:, 0] = np.arange(n) * 5
    d = np.stack([rng.integers(0, shape[0] - 5, n), rng.integers(0, shape[1] - 7, n)], 1).astype(np.uint64)
    d[0] = (0, 0)  # a row in the first chunk
    d[1] = (shape[0] - 5, shape[1] - 7)  # the corner (edge) chunk
    c = np.tile(np.array([5, 7], np.uint64), (n, 1))
    exp_d, exp_e = init.copy(), np.full(shape, 3, dtype)
    for i in range(n):
        blk = src[s[i, 0] : s[i, 0] + 5]
        exp_d[d[i, 0] : d[i, 0] + 5, d[i, 1] : d[i, 1] + 7] = blk
        exp_e[d[i, 0] : d[i, 0] + 5, d[i, 1] : d[i, 1] + 7] = blk
    vh5.set_num_threads(threads)
    try:
        with vh5.File(p, "r+") as f:
            vh5.write_many_slices(src, f["d"], s, d, c)
            vh5.write_many_slices(src, f["e"], s, d, c)
    finally:
        vh5.set_num_threads(0)  # back to the default
    with h5py.File(p, "r") as f:
        for name, exp in (("d", exp_d), ("e", exp_e)):
            got = f[name][()]
            if "scaleoffset" in pipe:
                np.testing.assert_allclose(got, exp, atol=1e-3)
            else:
                np.testing.assert_array_equal(got, exp)
            dsid = f[name].id
            masks = {dsid.get_chunk_info(i).filter_mask for i in range(dsid.get_num_chunks())}
            assert masks == {0}, masks


def test_raw_write_is_seen_through_the_same_open_dataset():
    """A chunk cached by libhdf5 (a small read goes through H5Dread and its chunk cache) and
    then stored raw by a write is read back with the new values through the same handle."""
    p = str(TMP / "cache.h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("d", data=np.arange(400.0).reshape(20, 20), chunks=(10, 10), compression="gzip", shuffle=True)
    with vh5.File(p, "r+") as f:
        d = f["d"]
        out = np.zeros((5, 5))
        vh5.read_many_slices(d, out, [[0, 0]], [[0, 0]], [[5, 5]])
        np.testing.assert_array_equal(out, np.arange(400.0).reshape(20, 20)[:5, :5])
        vh5.write_many_slices(np.full((3, 3), -1.0), d, [[0, 0]], [[1, 1]], [[3, 3]])
        vh5.read_many_slices(d, out, [[0, 0]], [[0, 0]], [[5, 5]])
        d.close()  # the file only really closes once its datasets are closed too
    want = np.arange(400.0).reshape(20, 20)
    want[1:4, 1:4] = -1
    np.testing.assert_array_equal(out, want[:5, :5])
    with h5py.File(p, "r") as f:
        np.testing.assert_array_equal(f["d"][()], want)
