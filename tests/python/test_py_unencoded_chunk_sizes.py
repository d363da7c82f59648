"""Chunks of a pipeline libhdf5 decodes (szip, scaleoffset) stored unencoded under a filter
mask that skips every filter sizing them: such a chunk must hold exactly a chunk's bytes (plus
4 per fletcher32 it applied). libhdf5 (1.10 .. 2.x) copies a whole chunk out of whatever is
stored, so a short one was read past its end and vh5 returned heap bytes with success (a
crafted szip chunk under mask 1 stored as 318 of its 400 bytes; h5py returns garbage too).
vh5 now refuses it, naming the dataset, the chunk, the mask and both sizes; chunks of the
right size read as h5py reads them. Every planner, in child processes."""

import json

import h5py
import numpy as np
import pytest
from _testkit import fletcher32, run_planner_child
from _tmpdirs import module_tmp

TMP = module_tmp("vh5_unencoded_")
A = np.arange(100, dtype="<i4").reshape(10, 10)
F32 = (np.arange(100, dtype="<f4") / 4).reshape(10, 10)


def _szip_ok():
    return h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP)


SO, SZ = h5py.h5z.FILTER_SCALEOFFSET, h5py.h5z.FILTER_SZIP


#: name -> (filters in pipeline order as (id, cd_values), dtype, stored bytes, whether vh5
#: must refuse). Every chunk skips the filters that size it (scaleoffset, szip).
def _cases():
    raw, fraw = A.tobytes(), F32.tobytes()
    so_int, so_f = (SO, (2, 0)), (SO, (0, 2))  # H5Z_SO_INT, minbits 0 / H5Z_SO_FLOAT_DSCALE, 2
    shuffle, fletcher = (h5py.h5z.FILTER_SHUFFLE, ()), (h5py.h5z.FILTER_FLETCHER32, ())
    c = {
        "so_short": ([so_int], "<i4", raw[:318], True),
        "so_long": ([so_int], "<i4", raw + b"\0" * 8, True),
        "so_exact": ([so_int], "<i4", raw, False),
        "shuffle_so_short": ([shuffle, so_int], "<i4", raw[:396], True),
        "so_fletcher_exact": ([so_int, fletcher], "<i4", raw + fletcher32(raw), False),
        "so_fletcher_short": ([so_int, fletcher], "<i4", raw[:396] + fletcher32(raw[:396]), True),
        "so_fletcher_unchecked": ([so_int, fletcher], "<i4", raw, True),
        "sof_short": ([so_f], "<f4", fraw[:200], True),
        "sof_exact": ([so_f], "<f4", fraw, False),
    }
    if h5py.h5z.filter_avail(SZ):
        szip = (SZ, (h5py.h5z.SZIP_NN_OPTION_MASK, 8))
        c["szip_short"] = ([szip], "<i4", raw[:318], True)
        c["szip_exact"] = ([szip], "<i4", raw, False)
        c["shuffle_szip_short"] = ([shuffle, szip], "<i4", raw[:300], True)
    return c


def _mask(filters):
    return sum(1 << i for i, (fid, _) in enumerate(filters) if fid in (SO, SZ))


@pytest.fixture(scope="module")
def path():
    p = str(TMP / "unencoded.h5")
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        for name, (filters, dt, stored, _) in _cases().items():
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((10, 10))
            for fid, cd in filters:
                dcpl.set_filter(fid, h5py.h5z.FLAG_OPTIONAL if fid == SZ else 0, cd)
            space = h5py.h5s.create_simple((10, 10))
            dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(np.dtype(dt)), space, dcpl=dcpl)
            dsid.write_direct_chunk((0, 0), stored, filter_mask=_mask(filters))
    return p


CHILD = r"""
import conftest, json, sys
import numpy as np, vh5
out = {}
with vh5.File(sys.argv[1]) as f:
    for name in json.loads(sys.argv[2]):
        try:
            out[name] = ["ok", f[name][()].tolist()]
        except vh5.Error as e:
            out[name] = [type(e).__name__, str(e)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("planner", ["auto", "chunks", "rows"])
def test_unencoded_chunk_of_another_size_is_refused(path, planner):
    cases = _cases()
    p = run_planner_child(CHILD, [path, json.dumps(sorted(cases))], planner)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    with h5py.File(path, "r") as h:
        for name, (filters, _, stored, refuse) in cases.items():
            kind, val, mask = *got[name], _mask(filters)
            if refuse:
                assert kind == "HDF5Error", (name, kind, val)
                assert f"/{name}" in val and "stored unencoded" in val and f"filter mask {mask:#x}" in val, val
                assert f"as {len(stored)} bytes" in val, val
            else:
                assert kind == "ok", (name, kind, val)
                assert np.array_equal(np.array(val, dtype=h[name].dtype), h[name][()]), name
