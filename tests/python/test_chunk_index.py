"""The per-dataset chunk index (src/hdf5/chunk_index.rs): stored chunk bytes read with
positioned reads at the addresses of the file's own chunk index, checked against h5py's
libhdf5 (2.0) on real files. With libhdf5 1.10 vh5 walks the version-1 B-tree itself; with
libhdf5 >= 1.14 the entries come from libhdf5's `H5Dchunk_iter` (every index type, layout
versions 3 and 4). Each read runs in a child process with VH5_CHUNK_INDEX set (`require`: a
dataset of a read-only file that gets no index is an error giving the reason; `0`: never an
index, every raw chunk through H5Dread_chunk)."""

import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
import vh5

h5py = pytest.importorskip("h5py")

LIB = vh5.hdf5_version().version[:2]
# Where the index comes from: vh5's walk of version-1 B-trees through object header addresses,
# which vh5 has only with libhdf5 1.10 (>= 1.12 names objects by token), or libhdf5's own
# H5Dchunk_iter (>= 1.14). libhdf5 1.12: every read goes through libhdf5.
BTREE = LIB == (1, 10)
CHUNK_ITER = LIB >= (1, 14)
pytestmark = pytest.mark.skipif(not (BTREE or CHUNK_ITER), reason="no chunk index with libhdf5 1.12")
needs_btree = pytest.mark.skipif(not BTREE, reason="vh5's own B-tree walk: libhdf5 1.10 builds only")
needs_chunk_iter = pytest.mark.skipif(not CHUNK_ITER, reason="H5Dchunk_iter: libhdf5 >= 1.14 builds only")

LIBVER = ("earliest", "v110")  # layout version 3: a version-1 B-tree (both sources)

CODE = """
import sys, numpy as np, vh5
path, name, dtype, out, mode = sys.argv[1:6]
if mode == 'write':
    # grow: write ones into the last rows (chunks never written before), then read back
    with vh5.File(path, 'r+') as f:
        d = f[name]
        src = np.ones((2,) + tuple(d.shape[1:]), dtype)
        vh5.write_many_slices(src, d, [[0] * src.ndim], [[d.shape[0] - 2] + [0] * (src.ndim - 1)], [list(src.shape)])
        dst = np.zeros(d.shape, dtype)
        vh5.read_many_slices(d, dst, [[0] * dst.ndim], [[0] * dst.ndim], [list(dst.shape)])
elif mode.startswith('part:'):
    # one row of a 1-D dataset: n elements from lo on
    lo, n = map(int, mode[5:].split(','))
    d = vh5.File(path)[name]
    dst = np.zeros(n, dtype)
    vh5.read_many_slices(d, dst, [[lo]], [[0]], [[n]])
else:
    d = vh5.File(path)[name]
    dst = np.zeros(d.shape, dtype)
    for _ in range(2):  # the second call uses the index the first one built
        vh5.read_many_slices(d, dst, [[0] * dst.ndim], [[0] * dst.ndim], [list(dst.shape)])
np.save(out, dst)
print('VH5_OK')
"""


def _read(path, name, dtype="f8", index="require", planner="auto", mode="read"):
    out = f"{path}.{index}.{planner}.npy"
    pkg = os.path.dirname(os.path.dirname(vh5.__file__))
    env = dict(
        os.environ,
        VH5_CHUNK_INDEX=index,
        VH5_PLANNER=planner,
        PYTHONPATH=os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")])),
    )
    r = subprocess.run(
        [sys.executable, "-c", CODE, str(path), name, dtype, out, mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode, r.stderr, out


def _make(path, userblock=0, **kw):
    rng = np.random.default_rng(7)
    data = np.round(rng.standard_normal((203, 61)), 2)
    with h5py.File(path, "w", libver=LIBVER, userblock_size=userblock) as f:
        f.create_dataset("gz", data=data, chunks=(8, 8), compression="gzip", shuffle=True)
        f.create_dataset("raw", data=data, chunks=(8, 8))
        f.create_dataset("f32", data=data.astype(">f4"), chunks=(16, 4), compression="gzip")
        # some chunks never written: they read as the fill value
        d = f.create_dataset("sparse", shape=(203, 61), chunks=(8, 8), dtype="f8", fillvalue=-7.5, compression="gzip")
        d[40:90, 10:30] = data[40:90, 10:30]
    return data


@pytest.mark.parametrize("userblock", [0, 512, 4096])
def test_chunk_index_userblock_reads_like_h5py(tmp_path, userblock):
    """A user block moves every address by its size (libhdf5 makes the superblock's offset the
    base address): the index reads the same values as h5py with 0, 512 and 4096 bytes."""
    p = tmp_path / f"ub{userblock}.h5"
    _make(p, userblock)
    with h5py.File(p, "r") as f:
        assert f.userblock_size == userblock
        refs = {k: f[k][...] for k in ("gz", "raw", "f32", "sparse")}
    for name, ref in refs.items():
        for planner in ("auto", "chunks"):
            rc, se, out = _read(p, name, "f4" if name == "f32" else "f8", planner=planner)
            assert rc == 0, (name, planner, se[-600:])
            got = np.load(out)
            assert np.array_equal(got, ref.astype(got.dtype)), (name, planner)


@needs_btree
def test_chunk_index_extensible_array_unlimited_axis_not_first_not_indexed(tmp_path):
    """Layout version 4 (an extensible-array index whose unlimited axis is not axis 0, where
    H5Dget_chunk_info_by_coord answers for another chunk): no index (`require` says why), and
    the default read, through libhdf5, equals h5py's."""
    p = tmp_path / "earray.h5"
    rng = np.random.default_rng(1)
    with h5py.File(p, "w", libver=("v110", "v110")) as f:
        d = f.create_dataset("d", shape=(4, 1200), maxshape=(4, None), chunks=(1, 50), dtype="<f8", compression="gzip")
        d[...] = rng.standard_normal((4, 1200))
    ref = h5py.File(p)["d"][...]
    rc, se, _ = _read(p, "d", index="require")
    assert rc != 0 and "layout message version 4" in se, se[-600:]
    rc, se, out = _read(p, "d", index="1")
    assert rc == 0, se[-600:]
    assert np.array_equal(np.load(out), ref)


def test_chunk_index_file_grown_by_vh5_write_after_index_built(tmp_path):
    """A read-only open builds the index; the file is then grown by vh5's own write (new chunks
    allocated, read-write open: no index used there) and opened read-only again: the new index
    sees the new chunks, and every read equals h5py's."""
    p = tmp_path / "grow.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        d = f.create_dataset("d", shape=(64, 40), chunks=(4, 8), dtype="f8", compression="gzip", fillvalue=3.0)
        d[:32] = np.arange(32 * 40).reshape(32, 40)
    rc, se, out = _read(p, "d")
    assert rc == 0, se[-600:]
    assert np.array_equal(np.load(out), h5py.File(p)["d"][...])
    rc, se, out = _read(p, "d", mode="write")  # read-write: reads back without an index
    assert rc == 0, se[-600:]
    with h5py.File(p, "r") as f:
        ref = f["d"][...]
    assert (ref[-2:] == 1).all() and (ref[32:-2] == 3).all()
    assert np.array_equal(np.load(out), ref)
    rc, se, out = _read(p, "d")
    assert rc == 0, se[-600:]
    assert np.array_equal(np.load(out), ref)


def test_chunk_index_damaged_chunk_address_refused(tmp_path):
    """A B-tree entry whose chunk address points past the end of the file: no index (`require`
    names the entry), and the default read fails with a clear status naming the chunk; never a
    read past the end of the file or an allocation of its claimed size."""
    p = tmp_path / "dmg.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("d", data=np.arange(64 * 64, dtype="f8").reshape(64, 64), chunks=(8, 8), compression="gzip")
    with h5py.File(p, "r") as f:
        info = f["d"].id.get_chunk_info_by_coord((24, 16))
    b = bytearray(p.read_bytes())
    key = struct.pack("<Q", info.byte_offset)
    assert b.count(key) == 1
    b[b.index(key) : b.index(key) + 8] = struct.pack("<Q", len(b) * 16)
    p.write_bytes(bytes(b))
    rc, se, _ = _read(p, "d", index="require")
    source = "B-tree" if BTREE else "H5Dchunk_iter"
    assert rc != 0 and f"{source} entry at dataset offset [24, 16]" in se, se[-600:]
    for index in ("1", "0"):
        rc, se, _ = _read(p, "d", index=index)
        assert rc != 0 and "VH5_OK" not in se and "Traceback" in se, (index, se[-600:])
        assert "[3, 2]" in se or "[24, 16]" in se, (index, se[-600:])


def test_chunk_index_unfiltered_chunk_size_entry_too_large_no_overflow(tmp_path):
    """Regression (found by fuzzing B-tree keys): an unfiltered chunk whose index entry claims
    4,256 stored bytes instead of its 160. libhdf5 reads 160 bytes at its address; its
    `H5Dread_chunk` (1.10 / 1.14: no buffer size) read 4,256 into vh5's 160-byte buffer (heap
    overflow, SIGSEGV) in every VH5_CHUNK_INDEX mode; 2.x's bounded one refused the read. Now:
    no index for such a dataset, and unfiltered chunks without one are read through libhdf5's
    H5Dread on every build: what the linked libhdf5 reads. Up to 2.0 (h5py's) that is the values
    at the chunk's address; libhdf5 2.2 checks the entry against the chunk's size and refuses
    the read ("incorrect chunk size returned from index", H5D__chunk_lock), which vh5 passes on
    as an error (found by CI on the static 2.2 build). With libhdf5 1.10 and 1.14 .. 2.1 vh5
    refuses it too (the entry's size differs from the chunk's)."""
    p = tmp_path / "size.h5"
    rng = np.random.default_rng(5)
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("g", data=rng.standard_normal((100, 100)), chunks=(5, 5), compression="gzip", shuffle=True)
        f.create_dataset("p", data=rng.integers(0, 9, (100, 100)), chunks=(4, 5))  # unfiltered, 160-byte chunks
    b = bytearray(p.read_bytes())
    at = b.index(struct.pack("<IIQQQ", 160, 0, 32, 90, 0))  # a B-tree key: size, mask, chunk offset
    struct.pack_into("<I", b, at, 160 + 4096)
    p.write_bytes(bytes(b))
    with h5py.File(p, "r") as f:
        want = f["p"][...]
    # Refused by libhdf5 2.2 itself, and by vh5 with libhdf5 1.10 and 1.14 .. 2.1 (it reads the
    # chunk's index entry itself: src/hdf5/stored_sizes.rs); read at the chunk's address by 1.12.
    version = vh5.hdf5_version().version[:2]
    refusal = {
        True: "incorrect chunk size returned from index for unfiltered chunk",
        False: "is stored as 4256 bytes (its chunk index entry), an unfiltered chunk holds 160",
    }
    for index in ("0", "1", "always"):
        rc, se, out = _read(p, "p", dtype="i8", index=index)
        if not (1, 12) <= version < (1, 14):
            assert rc == 1 and "VH5_OK" not in se, (index, rc, se[-600:])
            assert refusal[version >= (2, 2)] in se, (index, se[-600:])
            continue
        assert rc == 0, (index, rc, se[-600:])
        assert np.array_equal(np.load(out), want), index


def _make_v4(path, userblock=0):
    """A layout version 4 file (h5py `libver='latest'`): every chunk index type libhdf5
    writes there, with and without filters, dense and sparse."""
    rng = np.random.default_rng(11)
    data = np.round(rng.standard_normal((203, 61)), 2)
    with h5py.File(path, "w", libver="latest", userblock_size=userblock) as f:
        f.create_dataset("fixed_gz", data=data, chunks=(8, 8), compression="gzip", shuffle=True)  # fixed array
        f.create_dataset("fixed_raw", data=data, chunks=(8, 8))
        f.create_dataset("single_gz", data=data, chunks=(203, 61), compression="gzip")  # single chunk
        f.create_dataset(
            "earray", data=data, chunks=(8, 8), maxshape=(None, 61), compression="gzip"
        )  # extensible array, axis 0
        f.create_dataset(
            "btree2", data=data, chunks=(8, 8), maxshape=(None, None), compression="gzip"
        )  # version-2 B-tree
        d = f.create_dataset(
            "btree2_sparse",
            shape=(203, 61),
            dtype="f8",
            chunks=(8, 8),
            maxshape=(None, None),
            fillvalue=2.5,
            compression="gzip",
        )
        d[40:90, 10:30] = data[40:90, 10:30]
        d = f.create_dataset(
            "fixed_sparse", shape=(203, 61), dtype="f8", chunks=(8, 8), fillvalue=-7.5, compression="gzip"
        )
        d[40:90, 10:30] = data[40:90, 10:30]
        # implicit index: unfiltered, fixed extent, space allocated early
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 8))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        h5py.h5d.create(f.id, b"implicit", h5py.h5t.IEEE_F64LE, h5py.h5s.create_simple((203, 61)), dcpl)
        f["implicit"][...] = data
        f.create_dataset("f32_1d", data=np.arange(5000, dtype="<f4"), chunks=(16,), compression="gzip")


@needs_chunk_iter
@pytest.mark.parametrize("userblock", [0, 512])
def test_chunk_index_chunk_iter_layout_v4_reads_like_h5py(tmp_path, userblock):
    """H5Dchunk_iter: a layout version 4 file (fixed and extensible arrays, version-2 B-trees,
    a single chunk, the implicit index; dense and sparse; with a user block) gets an index on
    every dataset whose read qualifies (`require`: >= 16 whole chunks), and every read equals
    h5py's. (The layout version 3 files of the tests above run on these builds too.)"""
    p = tmp_path / f"v4_{userblock}.h5"
    _make_v4(p, userblock)
    with h5py.File(p, "r") as f:
        refs = {k: f[k][...] for k in f}
    for name, ref in refs.items():
        for planner in ("auto", "chunks"):
            rc, se, out = _read(p, name, ref.dtype.str, planner=planner)
            assert rc == 0, (name, planner, se[-600:])
            assert np.array_equal(np.load(out), ref), (name, planner)


@needs_chunk_iter
@pytest.mark.parametrize("libver", ["latest", "earliest"])
def test_chunk_index_chunk_iter_unlimited_axis_not_first_not_indexed(tmp_path, libver):
    """One unlimited axis that is not the first (with libver 'latest' an extensible-array
    index, which libhdf5's H5Dchunk_iter reports in another chunk order than it looks chunks
    up: a sparse one even passes the count and grid checks): no index (`require` says why),
    and the default read, through libhdf5, equals h5py's."""
    p = tmp_path / "earray.h5"
    with h5py.File(p, "w", libver=libver) as f:
        d = f.create_dataset("d", shape=(4, 1200), maxshape=(4, None), chunks=(1, 50), dtype="<f8", compression="gzip")
        d[0, :200] = 1.0
    ref = h5py.File(p)["d"][...]
    rc, se, _ = _read(p, "d", index="require")
    assert rc != 0 and "unlimited axis (1) that is not the first" in se, se[-600:]
    for index in ("1", "0"):
        rc, se, out = _read(p, "d", index=index)
        assert rc == 0, se[-600:]
        assert np.array_equal(np.load(out), ref)


def test_chunk_index_spans_chunks_in_any_file_order_and_gaps_read_like_h5py(tmp_path):
    """Small indexed chunks are read in spans (src/transfer/chunk_span.rs): one positioned read
    per run of chunks adjacent in the file, the bytes between chunks at most 4 KiB apart read
    and dropped. Chunks written in reverse and in random order (file order unlike grid order:
    every run breaks), interleaved with another dataset's 64-byte and 16 KiB chunks (gaps
    inside and past the limit), some never written (fill value inside a span), raw, gzip and
    byte-swapped: every read equals h5py's, with and without the index, in both planners."""
    p = tmp_path / "order.h5"
    rng = np.random.default_rng(11)
    data = np.round(rng.standard_normal((96, 80)), 3)
    grid = [(i, j) for i in range(0, 96, 8) for j in range(0, 80, 8)]
    orders = {"rev": grid[::-1], "rand": [grid[k] for k in rng.permutation(len(grid))], "gaps": grid, "far": grid}
    with h5py.File(p, "w", libver=LIBVER, rdcc_nbytes=0) as f:  # every chunk written at once
        ds = {}
        for name in orders:
            for kind, kw in (("raw", {}), ("gz", dict(compression="gzip")), ("be", dict(dtype=">f8"))):
                ds[name, kind] = f.create_dataset(
                    f"{name}_{kind}",
                    shape=data.shape,
                    chunks=(8, 8),
                    fillvalue=-99.0,
                    dtype=kw.pop("dtype", "<f8"),
                    **kw,
                )
        small = f.create_dataset("small", shape=(4096,), chunks=(8,), dtype="f8")
        big = f.create_dataset("big", shape=(4096 * 512,), chunks=(2048,), dtype="f8")
        for name, order in orders.items():
            for k, (i, j) in enumerate(order):
                if name == "rand" and k % 7 == 3:
                    continue  # never written: the fill value
                for kind in ("raw", "gz", "be"):
                    ds[name, kind][i : i + 8, j : j + 8] = data[i : i + 8, j : j + 8]
                    if name == "gaps":
                        small[8 * k : 8 * k + 8] = k
                    elif name == "far":
                        big[2048 * k : 2048 * k + 2048] = k
    with h5py.File(p, "r") as f:
        refs = {n: f[n][...] for n in f if n not in ("small", "big")}
        assert (refs["rand_raw"] == -99).any() and not (refs["rev_gz"] == -99).any()
    for name, ref in refs.items():
        for index, planner in (("require", "auto"), ("require", "chunks"), ("0", "chunks")):
            rc, se, out = _read(p, name, index=index, planner=planner)
            assert rc == 0, (name, index, planner, se[-600:])
            assert np.array_equal(np.load(out), ref), (name, index, planner)


def _chunk_btree_nodes(b, level=None):
    """File offsets of the version-1 B-tree nodes of raw data chunks in the file bytes `b`
    (of `level` only, when given)."""
    nodes, i = [], 0
    while (i := b.find(b"TREE", i + 1)) >= 0:
        if b[i + 4] == 1 and level in (None, b[i + 5]):
            nodes.append(i)
    return nodes


def test_chunk_index_damaged_key_deep_in_the_btree_refused(tmp_path):
    """Regression (new-user tryout, session 14): a leaf key of a two-level chunk B-tree whose
    axis-0 offset is no multiple of the chunk shape. libhdf5 2.x refuses every read of the
    dataset ("bad coordinate offset"); 1.10.8 looks the damaged chunk up in vain and reads it
    as never written (the fill value: 150 zeros, VH5_OK, in every planner). vh5's own B-tree
    walk (the chunk index build, libhdf5 1.10 builds) now tells such a key (damage) from an
    index it merely cannot use and refuses the read, naming the dataset and the key; every
    key of a tree of up to 8,192 nodes is checked at the dataset's first use (any read, any
    planner), those of a larger tree as reads reach them (see
    test_chunk_btree_damaged_key_beyond_the_first_use_check_refused_by_small_and_rows_reads)."""
    p0, p = tmp_path / "deep0.h5", tmp_path / "deep.h5"
    a = np.arange(200 * 150, dtype="i4").reshape(200, 150) + 1
    with h5py.File(p0, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("gz", data=a, chunks=(10, 15), compression="gzip", shuffle=True)  # 200 chunks, 2 levels
        f.create_dataset("raw", data=a, chunks=(10, 15))
    b = bytearray(p0.read_bytes())
    leaves = _chunk_btree_nodes(b, level=0)
    assert len(leaves) >= 4, len(leaves)
    for i in (leaves[0], leaves[-1]):  # one leaf of each dataset's tree (the trees are apart in the file)
        k = i + 24 + 5 * (32 + 8)  # key 5 (node header 24 bytes; key 8 + 3 offsets, child address 8)
        b[k + 9] ^= 0xA4  # axis-0 offset + 0xA4 * 256
    p.write_bytes(bytes(b))
    for name in ("gz", "raw"):
        with h5py.File(p) as f:
            if tuple(map(int, h5py.version.hdf5_version.split(".")[:2])) >= (2, 0):
                with pytest.raises(OSError, match="bad coordinate offset"):
                    f[name][...]
        for planner in ("rows", "chunks", "auto"):
            rc, se, _ = _read(p, name, "<i4", index="1", planner=planner)
            assert rc == 1 and "VH5_OK" not in se, (name, planner, se[-600:])
            if vh5.hdf5_version().version < (1, 12, 0):
                assert re.search(
                    r"key 5 of the chunk B-tree node at file address \d+ holds the offsets \[\d+, \d+, 0\], not multiples of the chunk dimensions and element size \[10, 15, 4\]",
                    se,
                ), (name, planner, se[-600:])
        if vh5.hdf5_version().version < (
            1,
            12,
            0,
        ):  # a one-element read too (the tree has 200 chunks: checked whole at first use)
            with vh5.File(p) as f, pytest.raises(vh5.HDF5Error, match="key 5 of the chunk B-tree node at file address"):
                vh5.read_many_slices(f[name], np.zeros((1, 1), "<i4"), [0, 0], [0, 0], [1, 1])
    # A tree of 5,000 chunks (checked whole at first use since session 15; before, the first
    # 64 nodes, the rest by the chunk index build).
    p1, p2 = tmp_path / "big0.h5", tmp_path / "big.h5"
    with h5py.File(p1, "w", libver=("earliest", "v110")) as f:
        f.create_dataset(
            "gz", data=np.arange(100 * 5000, dtype="<i4").reshape(100, 5000), chunks=(10, 10), compression="gzip"
        )
    b = bytearray(p1.read_bytes())
    leaves = _chunk_btree_nodes(b, level=0)
    b[leaves[len(leaves) // 2] + 24 + 5 * 40 + 9] ^= 0xA4
    p2.write_bytes(bytes(b))
    for planner in ("rows", "chunks", "auto"):
        rc, se, _ = _read(p2, "gz", "<i4", index="1", planner=planner)
        assert rc == 1 and "VH5_OK" not in se, (planner, se[-600:])
        if vh5.hdf5_version().version < (1, 12, 0):
            # (the first-use walk may meet the key before its 4096-chunk limit)
            assert re.search(
                r"not (a multiple of the chunk shape \[10, 10\]|multiples of the chunk dimensions and element size \[10, 10, 4\])",
                se,
            ), (planner, se[-600:])


@pytest.mark.parametrize("key,value", [(3, 2**64 - 1), (3, 1), (20, 5)])
def test_chunk_btree_element_offset_damage_refused(tmp_path, key, value):
    """Regression (session-14 tryout): each version-1 B-tree key ends with the element offset
    libhdf5 writes as 0; libhdf5 2.x refuses a key whose element offset is no multiple of the
    element size ("bad coordinate offset"). 1.10.8 then missed the chunk and read the fill
    value (2**64-1), or read on (1; the last key, 5) where 2.x refuses. vh5 checks every
    offset of every key of the tree's first nodes at the dataset's first use, the element
    offset included (the whole tree when it has at most 8,192 nodes), in every planner."""
    p = tmp_path / "elem.h5"
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=np.arange(1, 141, dtype="i4"), chunks=(7,))  # 20 chunks, one node
    b = bytearray(p.read_bytes())
    k = (
        _chunk_btree_nodes(b)[0] + 24 + key * (8 + 16 + 8)
    )  # key: size 4, mask 4, offsets 8 + 8 (axis, element); child 8
    b[k + 16 : k + 24] = struct.pack("<Q", value)
    p.write_bytes(bytes(b))
    with h5py.File(p) as f:
        if tuple(map(int, h5py.version.hdf5_version.split(".")[:2])) >= (2, 0):
            with pytest.raises(OSError, match="bad coordinate offset"):
                f["x"][...]
    for planner in ("rows", "chunks", "auto"):
        rc, se, _ = _read(p, "x", "<i4", index="1", planner=planner)
        assert rc == 1 and "VH5_OK" not in se, (planner, se[-600:])
        if vh5.hdf5_version().version < (1, 12, 0):
            assert (
                f"key {key} of its chunk B-tree's root node holds the offsets" in se and "element size [7, 4]" in se
            ), (planner, se[-600:])


def test_chunk_btree_damaged_key_beyond_the_first_use_check_refused_by_small_and_rows_reads(tmp_path):
    """Regression (session-15 review): the first-use key check read a tree's first 64 nodes;
    a damaged key deeper was met only by the chunk index build, which reads of fewer than 16
    chunks and `rows` reads of an unfiltered dataset never make: libhdf5 1.10 read the chunk
    as never written (3 zeros, VH5_OK). A tree of more nodes than the first-use check reads
    whole (500,000 chunks: ~8,900 nodes, 8,192 read at first use), a key of its leftmost leaf
    (the walk's last) moved off the grid: libhdf5 2.x refuses reads through that leaf ("bad
    coordinate offset") and reads the other chunks; vh5 refuses the small reads through it in
    every planner (the keys on the way to each chunk read are checked) and a read of 100
    chunks (the index build), and reads the other chunks as h5py does."""
    p = tmp_path / "wide.h5"
    n = 500_000
    with h5py.File(p, "w", libver=LIBVER) as f:
        d = f.create_dataset("raw", shape=(3 * n,), dtype="<i4", chunks=(3,))
        for lo in range(0, 3 * n, 60_000):  # (libhdf5 2.x holds ~4 KB per chunk a write covers: ~2 GB at once)
            d[lo : lo + 60_000] = np.arange(lo, lo + 60_000, dtype="<i4")
    b = bytearray(p.read_bytes())
    leaves = _chunk_btree_nodes(b, level=0)
    assert len(_chunk_btree_nodes(b)) > 8192, len(_chunk_btree_nodes(b))
    first = min(leaves, key=lambda i: struct.unpack_from("<Q", b, i + 24 + 8)[0])  # its key 0: offset 0
    k = first + 24 + 5 * (8 + 16 + 8) + 8  # key 5's axis-0 offset (15)
    assert struct.unpack_from("<Q", b, k)[0] == 15
    b[k] ^= 1  # 14: off the grid of 3
    p.write_bytes(bytes(b))
    with h5py.File(p) as f:
        if tuple(map(int, h5py.version.hdf5_version.split(".")[:2])) >= (2, 0):
            for lo in (0, 15):
                with pytest.raises(OSError, match="bad coordinate offset"):
                    f["raw"][lo : lo + 3]
        assert list(f["raw"][3000:3003]) == [3000, 3001, 3002]
    for planner in ("auto", "chunks", "rows"):
        for lo, count in ((15, 3), (0, 3), (0, 300)):
            rc, se, _ = _read(p, "raw", "<i4", index="1", planner=planner, mode=f"part:{lo},{count}")
            assert rc == 1 and "VH5_OK" not in se, (planner, lo, count, se[-600:])
            if BTREE:
                assert re.search(
                    r"key 5 of the chunk B-tree node at file address \d+ holds the offsets \[14, 0\], not multiples of the chunk dimensions and element size \[3, 4\]",
                    se,
                ), (planner, lo, se[-600:])
        for lo in (3000, 3 * n - 3):
            rc, se, out = _read(p, "raw", "<i4", index="1", planner=planner, mode=f"part:{lo},3")
            assert rc == 0, (planner, lo, se[-600:])
            assert list(np.load(out)) == [lo, lo + 1, lo + 2], (planner, lo)
