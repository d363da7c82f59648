"""vh5's own reading of layout message version 4 chunk indexes with libhdf5 1.10 builds
(src/hdf5/chunk_v4.rs: fixed array, single chunk, implicit; files h5py writes with
libver=('v110', 'v114'); 'latest' for unfiltered ones), differential against h5py's libhdf5. Every read runs with
VH5_CHUNK_INDEX=require (a dataset that gets no index is an error giving the reason), so a
passing read proves the index was built, checked against libhdf5 and used. Damaged index
blocks (a byte flipped: their checksum no longer matches) must never give other values than
h5py's: vh5 declines the index and libhdf5 refuses the read."""

import numpy as np
import pytest
from test_chunk_index import _read

h5py = pytest.importorskip("h5py")
import vh5  # noqa: E402

pytestmark = pytest.mark.skipif(
    vh5.hdf5_version().version[:2] != (1, 10), reason="vh5's own layout version 4 reader: libhdf5 1.10 builds only"
)

RNG = np.random.default_rng(19)
# Layout version 4 for every dataset: HDF5 2.x's h5py writes version 5 for filtered datasets
# with libver='latest' (a libhdf5 1.10 build cannot open those at all).
LIBVER = ("v110", "v114")


def _check(path, names, planners=("auto", "chunks")):
    with h5py.File(path, "r") as f:
        refs = {k: f[k][...] for k in names}
    for name, ref in refs.items():
        for planner in planners:
            rc, se, out = _read(path, name, ref.dtype.str, planner=planner)
            assert rc == 0, (name, planner, se[-800:])
            got = np.load(out)
            assert got.dtype == ref.dtype and np.array_equal(got, ref), (name, planner)


def _make_shapes(path, userblock=0):
    """1-D to 4-D fixed-array datasets with partial edge chunks, raw and filtered (gzip,
    shuffle, fletcher32), little- and big-endian, dense and sparse, a maximal extent larger
    than the extent, and more than one page of the data block (default 1024 elements a page,
    the last page partial, a page never written)."""
    with h5py.File(path, "w", libver=LIBVER, userblock_size=userblock) as f:
        for nd, shape, chunks in [
            (1, (1000,), (7,)),
            (2, (53, 41), (8, 6)),
            (3, (13, 11, 9), (4, 3, 5)),
            (4, (7, 6, 5, 9), (2, 4, 3, 4)),
        ]:
            data = np.round(RNG.standard_normal(shape), 3)
            f.create_dataset(f"raw{nd}", data=data, chunks=chunks)
            f.create_dataset(f"be{nd}", data=data.astype(">f8"), chunks=chunks)
            f.create_dataset(f"gz{nd}", data=data, chunks=chunks, compression="gzip", shuffle=True)
            f.create_dataset(f"f32{nd}", data=data.astype("<f4"), chunks=chunks, fletcher32=True, compression="gzip")
            d = f.create_dataset(
                f"sparse{nd}", shape=shape, dtype="<i4", chunks=chunks, fillvalue=-3, compression="gzip"
            )
            d[tuple(slice(1, s // 2) for s in shape)] = 7
        # larger maximal extent than the extent: elements numbered on the maximal grid
        d = f.create_dataset("maxbig", shape=(50, 30), maxshape=(90, 70), chunks=(8, 8), dtype="<f8")
        d[...] = RNG.standard_normal((50, 30))
        d = f.create_dataset(
            "maxbig_gz", shape=(50, 30), maxshape=(90, 70), chunks=(8, 8), dtype="<f8", compression="gzip"
        )
        d[...] = RNG.standard_normal((50, 30))
        # paged data blocks: 3000 chunks (pages of 1024, 1024, 952)
        f.create_dataset("paged", data=np.arange(3000 * 4, dtype="<i8"), chunks=(4,))
        f.create_dataset("paged_gz", data=np.arange(3000 * 4, dtype="<i8"), chunks=(4,), compression="gzip")
        d = f.create_dataset(
            "paged_sparse", shape=(3000 * 4,), dtype="<i8", chunks=(4,), fillvalue=5, compression="gzip"
        )
        d[:100] = 1  # page 0 only partly written
        d[2100 * 4 : 2200 * 4] = 2  # page 2 partly written, page 1 never
        d = f.create_dataset("paged_2d", shape=(61, 259), dtype="<u2", chunks=(1, 8))  # 61 x 33 = 2013 chunks
        d[...] = RNG.integers(0, 60000, (61, 259))


@pytest.mark.parametrize("userblock", [0, 512])
def test_chunk_index_v4_fixed_array_reads_like_h5py(tmp_path, userblock):
    p = tmp_path / f"shapes{userblock}.h5"
    _make_shapes(p, userblock)
    with h5py.File(p, "r") as f:
        names = list(f)
    _check(p, names)


def _make_indexes(path):
    """One dataset of each other index type libhdf5 writes in layout version 4: the implicit
    index (unfiltered, fixed extent, space allocated early), single chunks (raw, gzip, never
    written), an extensible array and a version-2 B-tree."""
    data = np.round(RNG.standard_normal((203, 61)), 2)
    with h5py.File(path, "w", libver=LIBVER) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 8))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        h5py.h5d.create(f.id, b"implicit", h5py.h5t.IEEE_F64LE, h5py.h5s.create_simple((203, 61)), dcpl)
        f["implicit"][...] = data
        f.create_dataset("single_raw", data=data[:40, :30], chunks=(40, 30))
        f.create_dataset("single_gz", data=data[:40, :30], chunks=(40, 30), compression="gzip")
        f.create_dataset("single_none", shape=(40, 30), dtype="<f8", chunks=(40, 30), fillvalue=4.0)
        f.create_dataset("earray", data=data, chunks=(8, 8), maxshape=(None, 61), compression="gzip")
        f.create_dataset("btree2", data=data, chunks=(8, 8), maxshape=(None, None), compression="gzip")


def test_chunk_index_v4_single_and_implicit_read_like_h5py(tmp_path):
    """The implicit index and single chunks read like h5py (a single chunk is one whole
    chunk: `always` builds the index for it); the extensible array and the version-2 B-tree
    are declined (`require` names the index), and read through libhdf5 like h5py otherwise."""
    p = tmp_path / "indexes.h5"
    _make_indexes(p)
    _check(p, ["implicit"])
    for name in ("single_raw", "single_gz", "single_none"):
        ref = h5py.File(p, "r")[name][...]
        rc, se, out = _read(p, name, index="always")
        assert rc == 0, (name, se[-800:])
        assert np.array_equal(np.load(out), ref), name
    for name, why in [("earray", "an extensible array chunk index"), ("btree2", "a version-2 B-tree chunk index")]:
        rc, se, _ = _read(p, name, index="require")
        assert rc != 0 and why in se, (name, se[-600:])
        _check_default(p, name)


def _check_default(path, name):
    ref = h5py.File(path, "r")[name][...]
    rc, se, out = _read(path, name, index="1")
    assert rc == 0, (name, se[-600:])
    assert np.array_equal(np.load(out), ref), name


def test_chunk_index_v4_chunk_with_a_filter_skipped_reads_like_h5py(tmp_path):
    """A chunk written raw with its filter mask saying gzip was skipped (h5py
    write_direct_chunk): the fixed array's element carries the mask, which vh5 honours."""
    p = tmp_path / "mask.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        d = f.create_dataset("d", data=np.arange(40 * 8, dtype="<f8").reshape(40, 8), chunks=(4, 8), compression="gzip")
        d.id.write_direct_chunk((8, 0), np.full((4, 8), 9.5, "<f8").tobytes(), filter_mask=1)
    with h5py.File(p, "r") as f:
        assert f["d"].id.get_chunk_info_by_coord((8, 0)).filter_mask == 1
        assert (f["d"][8:12] == 9.5).all()
    _check(p, ["d"])


def _flip(path, at):
    b = bytearray(path.read_bytes())
    b[at] ^= 0x10
    path.write_bytes(bytes(b))


@pytest.mark.parametrize("block", ["FAHD", "FADB", "page"])
@pytest.mark.parametrize("name", ["paged", "paged_gz"])
def test_chunk_index_v4_damaged_block_never_read(tmp_path, block, name):
    """A byte flipped in the fixed array's header, data block or a data block page (a chunk
    address: its checksum no longer matches): vh5 must never return other values than the
    sound file's; libhdf5 refuses the read (checksum), so does vh5 (it declines the index,
    `require` says why; the default read goes through libhdf5, which errors)."""
    p = tmp_path / "dmg.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset(
            name,
            data=np.arange(3000 * 4, dtype="<i8"),
            chunks=(4,),
            **({"compression": "gzip"} if name.endswith("gz") else {}),
        )
    ref = h5py.File(p, "r")[name][...]
    raw = p.read_bytes()
    hdr = raw.index(b"FAHD")
    dblk = raw.index(b"FADB")
    at = {
        "FAHD": hdr + 10,
        "FADB": dblk + 14,
        "page": dblk + 6 + 8 + 1 + 4 + 1024 * (8 if name == "paged" else 14) + 17,
    }[block]
    _flip(p, at)
    rc, se, _ = _read(p, name, "<i8", index="require")
    assert rc != 0 and "checksum" in se, se[-600:]
    for index in ("1", "0"):
        rc, se, out = _read(p, name, "<i8", index=index)
        assert rc != 0 or np.array_equal(np.load(out), ref), (index, se[-600:])
