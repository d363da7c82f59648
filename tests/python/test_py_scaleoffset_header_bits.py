"""Integer (and 8-byte float) scaleoffset chunks whose header says more bits per value than
the elements have (a damaged chunk): libhdf5 1.10 decoded them into values that are not the
data (every element of a damaged int32 chunk read as -239) and vh5 returned them with
success; h5py (libhdf5 2.x) refuses them. vh5 now refuses the read naming the dataset, the
chunk and the claim; undamaged chunks read as h5py reads them."""

import h5py
import numpy as np
import pytest
import vh5
from _tmpdirs import module_tmp

TMP = module_tmp("vh5_so_bits_")
DTYPES = ["<i1", "<u2", "<i4", ">i4", "<i8", "<u8"]


def _write(path, dt):
    a = (np.arange(400) % 97 - 40).astype(dt).reshape(20, 20)
    if np.dtype(dt).kind == "u":
        a = (np.arange(400) % 97).astype(dt).reshape(20, 20)
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("so", data=a, chunks=(10, 10), scaleoffset=0)
        info = f["so"].id.get_chunk_info(1)  # the chunk at [0, 10]
    return a, info.byte_offset


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("bits_over", [1, 100, 1 << 20])
def test_scaleoffset_header_claiming_more_bits_than_the_type_is_refused(dt, bits_over):
    path = str(TMP / f"so_{dt[1:]}_{'be' if dt[0] == '>' else 'le'}_{bits_over}.h5")
    a, off = _write(path, dt)
    claim = 8 * np.dtype(dt).itemsize + bits_over
    with open(path, "r+b") as fh:
        fh.seek(off)
        fh.write(claim.to_bytes(4, "little"))
    with vh5.File(path) as f:
        d = f["so"]
        # chunks untouched by the damage read as h5py does
        assert np.array_equal(d[10:20, :], h5py.File(path, "r")["so"][10:20, :])
        with pytest.raises(vh5.HDF5Error, match=rf"/so.*chunk at \[0, 10\] says {claim} bits per value"):
            d[...]


@pytest.mark.parametrize("dt", DTYPES)
def test_scaleoffset_undamaged_reads_as_h5py(dt):
    path = str(TMP / f"ok_{dt[1:]}_{'be' if dt[0] == '>' else 'le'}.h5")
    a, _ = _write(path, dt)
    with vh5.File(path) as f, h5py.File(path, "r") as h:
        assert np.array_equal(f["so"][...], h["so"][...])
        assert np.array_equal(f["so"][...], a)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("after", [None, "gzip"])
def test_scaleoffset_full_precision_integer_passes_through_reads_as_h5py(dt, after):
    # scaleoffset=<all the type's bits> on integers: libhdf5's filter passes the chunk through
    # unchanged in both directions (H5Z__filter_scaleoffset: "no need to process data"), so a
    # stored chunk has no header. vh5 read its first 4 data bytes as the header and refused
    # the file as corrupted (tryout: uint8 with scaleoffset=8 'says 1178669877 bits per value').
    bits = 8 * np.dtype(dt).itemsize
    a = np.random.default_rng(bits).integers(0, min(2**30, int(np.iinfo(dt).max)), size=(20, 20)).astype(dt)
    path = str(TMP / f"full_{dt[1:]}_{'be' if dt[0] == '>' else 'le'}_{after}.h5")
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("so", data=a, chunks=(10, 10), scaleoffset=bits, compression=after)
    with vh5.File(path) as f, h5py.File(path, "r") as h:
        np.testing.assert_array_equal(f["so"][...], h["so"][...])
        np.testing.assert_array_equal(f["so"][3:17, 5:15], a[3:17, 5:15])
