"""vh5.write_many_slices into chunks stored under a non-zero filter mask in pipelines vh5 does
not encode as a whole: hdf5plugin's Blosc (an OPTIONAL filter: chunks it cannot shrink are
stored with its mask bit set), szip (optional too), masks set by write_direct_chunk on
shuffle/gzip/fletcher32 + Blosc pipelines. When vh5 encodes every filter the mask leaves on,
it merges the rows into the chunk and stores it again under the SAME mask (libhdf5's
stale-mask bug cannot bite); otherwise (a left-on Blosc, LZ4 or scaleoffset, or a write that
converts types) the write is refused before anything is written, the file unchanged byte
for byte.

Differential: h5py (with hdf5plugin imported) reads the file back and is compared with numpy;
every chunk's get_chunk_info().filter_mask is checked (masked touched chunks keep their mask,
untouched chunks are unchanged). vh5 runs in a child process with HDF5_PLUGIN_PATH set (that
variable breaks h5py's own hdf5plugin registration, so the parent never sets it)."""

import itertools
import json

import numpy as np
import pytest
import vh5  # noqa: E402, F401
from _testkit import draw_geometry_rows, encode_masked, run_planner_child, touched_chunks  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402

h5py = pytest.importorskip("h5py")
hdf5plugin = pytest.importorskip("hdf5plugin")
TMP = module_tmp("vh5-py-masked-opt-")

_CHILD = """
import json, sys
import conftest  # noqa: F401
import numpy as np, vh5
p, new, rows, convert = sys.argv[1], np.load(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4] == "1"
s, d, c = (np.array([r[k] for r in rows], dtype=np.uint64) for k in range(3))
with vh5.File(p, "r+") as f:
    try:
        vh5.write_many_slices(new, f["x"], src_start=s, dst_start=d, count=c, convert=convert)
    except vh5.UnsupportedError as e:
        print("REFUSED", e)
        sys.exit(3)
    except vh5.Error as e:
        print("FAILED", e)
        sys.exit(4)
    np.save(sys.argv[2] + ".back.npy", f["x"][()])  # read back through the same open file
"""


def vh5_write(path, new, rows, convert=False):
    """Write `new[region]` into every row region of `x` in ONE vh5 call (child process with
    the plugins), then read `x` back through the same open file (saved to
    `<path>.new.npy.back.npy`); returns the finished process (returncode 3: refused, stdout
    the message; 4: another vh5 error)."""
    npy = str(path) + ".new.npy"
    np.save(npy, new)
    rows = [([int(v) for v in s], [int(v) for v in s], [int(v) for v in c]) for s, c in rows]
    env = {"HDF5_PLUGIN_PATH": hdf5plugin.PLUGIN_PATH}
    return run_planner_child(_CHILD, [path, npy, json.dumps(rows), int(convert)], "auto", 120, env)


def chunk_masks(path):
    with h5py.File(path) as f:
        d = f["x"]
        infos = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
        return {tuple(i.chunk_offset): i.filter_mask for i in infos}


def check_write(path, rows, seed=0):
    """Write rows of new values with vh5; compare h5py's read with numpy and the masks."""
    with h5py.File(path) as f:
        exp, chunks = f["x"][()], f["x"].chunks
    before = chunk_masks(path)
    new = np.random.default_rng(seed).integers(-99, 99, exp.shape).astype(exp.dtype.newbyteorder("="))
    r = vh5_write(path, new, rows)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    for s, c in rows:
        region = tuple(slice(a, a + k) for a, k in zip(s, c))
        exp[region] = new[region]
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["x"][()], exp)
    np.testing.assert_array_equal(np.load(str(path) + ".new.npy.back.npy"), exp)  # vh5's read
    after = chunk_masks(path)
    hit = touched_chunks(rows, chunks)
    for o, m in before.items():
        if o not in hit or m != 0:
            assert after[o] == m, (o, m, after[o])  # masked touched chunks keep their mask
    return before, after


def blosc_file(path, shape, chunks, dtype, blosc, seed=0):
    """Random (incompressible: Blosc bit set) data with every third chunk zeros (compressed)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, "u1").view(dtype).reshape(shape)
    for k, o in enumerate(itertools.product(*[range(0, s, c) for s, c in zip(shape, chunks)])):
        if k % 3 == 0:
            a[tuple(slice(x, x + c) for x, c in zip(o, chunks))] = 0
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=a, chunks=chunks, **blosc)
    return a


BLOSCS = {
    "lz4-shuffle": dict(cname="lz4", clevel=5, shuffle=1),
    "zstd-bitshuffle": dict(cname="zstd", clevel=3, shuffle=2),
    "blosclz-noshuffle": dict(cname="blosclz", clevel=9, shuffle=0),
}
GEOMS = [((37,), (8,)), ((21, 17), (8, 8)), ((9, 7, 10), (4, 3, 4))]


def rows_for(shape, chunks):
    """A partial block in the first chunks, a whole interior chunk, the edge corner, and a
    row across chunk boundaries."""
    n = len(shape)
    rows = [([1] * n, [min(2, s - 1) for s in shape])]
    if all(s >= 2 * c for s, c in zip(shape, chunks)):
        rows.append((list(chunks), list(chunks)))
    rows.append(([s - 1 for s in shape], [1] * n))
    rows.append(([min(c - 1, s - 2) for s, c in zip(shape, chunks)], [2] * n))
    return rows


@pytest.mark.parametrize("dtype", ["<i4", ">f8", "<i2"])
@pytest.mark.parametrize("shape,chunks", GEOMS, ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("cfg", list(BLOSCS))
def test_write_into_blosc_masked_chunks(cfg, shape, chunks, dtype):
    p = TMP / f"blosc-{cfg}-{len(shape)}-{dtype[1:]}{'be' if dtype[0] == '>' else 'le'}.h5"
    blosc_file(p, shape, chunks, dtype, hdf5plugin.Blosc(**BLOSCS[cfg]))
    assert 1 in chunk_masks(p).values()
    check_write(p, rows_for(shape, chunks))


def test_blosc_masked_chunk_stores_the_merged_raw_chunk():
    """A Blosc-only chunk with its bit set is stored as the raw chunk bytes (file order),
    the part of an edge chunk beyond the extent kept as it was stored."""
    p = TMP / "raw-bytes.h5"
    blosc_file(p, (23, 23), (8, 8), ">i4", hdf5plugin.Blosc(cname="lz4", shuffle=1), seed=3)
    with h5py.File(p) as f:
        old_mask, old_edge = f["x"].id.read_direct_chunk((16, 16))
    assert old_mask == 1
    check_write(p, [([17, 15], [3, 2]), ([2, 9], [4, 5]), ([20, 20], [3, 3])], seed=4)
    with h5py.File(p) as f:
        d = f["x"]
        v = d[()]
        for o in [(16, 8), (0, 8), (16, 16)]:
            m, b = d.id.read_direct_chunk(o)
            assert m == 1, (o, m)
            got = np.frombuffer(b, ">i4").reshape(8, 8)
            ext = v[o[0] : o[0] + 8, o[1] : o[1] + 8]
            np.testing.assert_array_equal(got[: ext.shape[0], : ext.shape[1]], ext)
    # edge chunk (16, 16) holds 7 x 7 elements: the bytes beyond were kept as stored
    old = np.frombuffer(old_edge, ">i4").reshape(8, 8)
    np.testing.assert_array_equal(got[7:], old[7:])
    np.testing.assert_array_equal(got[:, 7:], old[:, 7:])


def _pipeline_file(path, shape, chunks, filters, masks, dtype="<f4", seed=0):
    """Dataset `x` with the pipeline `filters` (names in order), values written by h5py (mask
    0, or the Blosc bit on incompressible chunks), then the chunks numbered in `masks` (C
    order) stored again with write_direct_chunk under that mask (Blosc skipped)."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    for name in filters:
        if name == "shuffle":
            dcpl.set_shuffle()
        elif name == "gzip":
            dcpl.set_deflate(4)
        elif name == "fletcher32":
            dcpl.set_fletcher32()
        else:
            spec = {"blosc": hdf5plugin.Blosc(cname="lz4", shuffle=1), "lz4": hdf5plugin.LZ4()}[name]
            dcpl.set_filter(spec["compression"], h5py.h5z.FLAG_OPTIONAL, spec["compression_opts"])
    with h5py.File(path, "w") as f:
        space = h5py.h5s.create_simple(shape)
        dsid = h5py.h5d.create(f.id, b"x", h5py.h5t.py_create(np.dtype(dtype)), space, dcpl=dcpl)
        d = h5py.Dataset(dsid)
        d[...] = a
        origins = list(itertools.product(*[range(0, s, c) for s, c in zip(shape, chunks)]))
        for k, m in masks.items():
            o = origins[k]
            block = np.zeros(chunks, dtype)
            part = tuple(slice(s, min(s + c, n)) for s, c, n in zip(o, chunks, shape))
            block[tuple(slice(0, p.stop - p.start) for p in part)] = a[part]
            d.id.write_direct_chunk(o, encode_masked(d, block.tobytes(), m), filter_mask=m)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["x"][()], a)
    return a


COMBOS = {
    "shuffle+gzip+blosc": (["shuffle", "gzip", "blosc"], 4),
    "blosc+shuffle+gzip": (["blosc", "shuffle", "gzip"], 1),
    "blosc+fletcher32": (["blosc", "fletcher32"], 1),
    "gzip+blosc+fletcher32": (["gzip", "blosc", "fletcher32"], 2),
}


@pytest.mark.parametrize("shape,chunks", GEOMS, ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("combo", list(COMBOS))
def test_write_into_masked_chunks_of_plugin_pipelines(combo, shape, chunks):
    """Masks with the Blosc bit set and every combination of the other bits; chunks with
    mask 0 (Blosc applied by libhdf5) in the same call go through libhdf5."""
    filters, bbit = COMBOS[combo]
    others = [1 << i for i in range(len(filters)) if (1 << i) != bbit]
    masks = [bbit | sum(s) for k in range(len(others) + 1) for s in itertools.combinations(others, k)]
    nchunks = int(np.prod([-(-s // c) for s, c in zip(shape, chunks)]))
    table = {k: masks[k % len(masks)] for k in range(nchunks) if k % 3 != 2}
    p = TMP / f"combo-{combo}-{len(shape)}.h5"
    _pipeline_file(p, shape, chunks, filters, table)
    before, after = check_write(p, rows_for(shape, chunks))
    assert any(m != 0 for o, m in before.items() if o in touched_chunks(rows_for(shape, chunks), chunks))


def _assert_refused(p, rows, parts, convert=False):
    before = p.read_bytes()
    with h5py.File(p) as f:
        new = np.zeros(f["x"].shape, np.float64 if convert else f["x"].dtype.newbyteorder("="))
    r = vh5_write(p, new, rows, convert)
    assert r.returncode == 3, (r.stdout + r.stderr)[-2000:]
    for part in parts + ["stale mask", "nothing was written"]:
        assert part in r.stdout, r.stdout
    assert p.read_bytes() == before


@pytest.mark.parametrize(
    "filters,mask,left_on",
    [
        (["shuffle", "blosc"], 1, "blosc (filter 32001)"),
        (["blosc", "lz4"], 1, "lz4 (filter 32004)"),
        (["gzip", "blosc"], 1, "blosc (filter 32001)"),
    ],
    ids=["blosc-left-on", "lz4-left-on", "gzip-skipped-blosc-on"],
)
def test_masked_chunk_with_unencodable_filter_left_on_is_refused(filters, mask, left_on):
    """Rows in an unmasked chunk come first in the call: nothing may be written."""
    p = TMP / f"refuse-{'-'.join(filters)}.h5"
    _pipeline_file(p, (16, 8), (8, 8), filters, {})
    _store_with_mask(p, filters, mask)
    _assert_refused(p, [([9, 0], [2, 8]), ([1, 1], [2, 2])], ["chunk [0, 0]", f"filter mask {mask:#x}", left_on])


def _store_with_mask(p, filters, mask):
    """Store chunk (0, 0) of `x` under `mask`, encoded by libhdf5 through a twin dataset `t`
    whose pipeline is the filters `mask` leaves on."""
    on = [f for i, f in enumerate(filters) if not mask & (1 << i)]
    with h5py.File(p, "r+") as f:
        d = f["x"]
        _pipeline_twin(f, d, on)
        m, b = f["t"].id.read_direct_chunk((0, 0))
        assert m == 0
        d.id.write_direct_chunk((0, 0), b, filter_mask=mask)
        del f["t"]


def _pipeline_twin(f, d, filters):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(d.chunks)
    for name in filters:
        spec = {"blosc": hdf5plugin.Blosc(cname="lz4", shuffle=1), "lz4": hdf5plugin.LZ4()}.get(name)
        if name == "shuffle":
            dcpl.set_shuffle()
        elif name == "gzip":
            dcpl.set_deflate(4)
        else:
            dcpl.set_filter(spec["compression"], 0, spec["compression_opts"])
    space = h5py.h5s.create_simple(d.shape)
    t = h5py.Dataset(h5py.h5d.create(f.id, b"t", h5py.h5t.py_create(d.dtype), space, dcpl=dcpl))
    t[...] = np.ones(d.shape, d.dtype)  # compressible: every filter applied


def test_type_converting_write_into_masked_blosc_chunk_is_refused():
    p = TMP / "convert.h5"
    blosc_file(p, (16, 8), (8, 8), "<i4", hdf5plugin.Blosc(cname="lz4", shuffle=1))
    assert chunk_masks(p)[(8, 0)] == 1
    _assert_refused(p, [([9, 0], [2, 8])], ["chunk [1, 0]", "filter mask 0x1", "converts types"], convert=True)


def _szip_file(p):
    rng = np.random.default_rng(5)
    a = rng.integers(-(2**31), 2**31, (40, 40)).astype("<i4")
    a[:20, :20] = 0
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=a, chunks=(20, 20), compression="szip")
    return a


def test_write_into_szip_masked_chunks():
    if not h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
        pytest.skip("h5py's libhdf5 has no szip")
    p = TMP / "szip.h5"
    _szip_file(p)
    assert set(chunk_masks(p).values()) == {0, 1}
    with h5py.File(p) as f:
        exp = f["x"][()]
    new = np.full(exp.shape, 7, "<i4")
    r = vh5_write(p, new, [([5, 5], [30, 30])])
    out = r.stdout + r.stderr
    if r.returncode != 0 and "szip" in out and "stale mask" not in out:
        pytest.skip("vh5's libhdf5 does not write szip: " + out[-300:])
    assert r.returncode == 0, out[-2000:]
    exp[5:35, 5:35] = 7
    with h5py.File(p) as f:
        np.testing.assert_array_equal(f["x"][()], exp)
    after = chunk_masks(p)
    assert after[(0, 20)] == after[(20, 0)] == after[(20, 20)] == 1


hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def cases(draw):
    shape, chunks, rows = draw_geometry_rows(draw, st, 6, 5)
    cfg = draw(st.sampled_from(list(BLOSCS)))
    dtype = draw(st.sampled_from(["<i4", ">i4", "<f8", ">u2", "|u1"]))
    return tuple(shape), tuple(chunks), cfg, dtype, rows, draw(st.integers(0, 2**16))


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_hypothesis_writes_into_blosc_chunks(case):
    shape, chunks, cfg, dtype, rows, seed = case
    p = TMP / "hyp.h5"
    blosc_file(p, shape, chunks, dtype, hdf5plugin.Blosc(**BLOSCS[cfg]), seed=seed)
    check_write(p, rows, seed=seed + 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stale_mask_after_optional_filter_fails_repaired(seed):
    """Chunks stored with mask 0 at exactly the raw chunk size (Blosc succeeds at that size:
    1-5% of small random chunks) go through libhdf5's H5Dwrite; when Blosc then fails on the
    new values libhdf5 stores them raw but keeps mask 0 in the index: no reader could decode
    them (found by a new-user tryout; h5py's own overwrite does the same). vh5 records the
    mask libhdf5 meant (transfer::stale_mask): h5py reads every chunk back equal to the new
    values, and the repaired chunks carry Blosc's mask bit."""
    path = TMP / f"stale{seed}.h5"
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        d = f.create_dataset("x", data=rng.random((64, 64)) * 1e6, chunks=(8, 8), **hdf5plugin.Blosc(cname="lz4"))
        infos = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
    at_raw_size = [tuple(i.chunk_offset) for i in infos if i.filter_mask == 0 and i.size == 8 * 8 * 8]
    if not at_raw_size:
        pytest.skip(f"seed {seed}: no chunk stored with mask 0 at the raw size (Blosc build differs)")
    new = rng.random((64, 64)) * 1e6  # incompressible: Blosc fails on every chunk
    r = vh5_write(path, new, [((0, 0), (64, 64))])
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    with h5py.File(path) as f:
        d = f["x"]
        for i in range(d.id.get_num_chunks()):
            o = d.id.get_chunk_info(i).chunk_offset
            np.testing.assert_array_equal(d[o[0] : o[0] + 8, o[1] : o[1] + 8], new[o[0] : o[0] + 8, o[1] : o[1] + 8])
    np.testing.assert_array_equal(np.load(str(path) + ".new.npy.back.npy"), new)
    masks = chunk_masks(path)
    # the case arose (Blosc failed on a chunk that was stored mask 0 at the raw size): else the
    # seed tests nothing
    assert any(masks[o] == 1 for o in at_raw_size), {o: masks[o] for o in at_raw_size}


def test_stale_mask_repaired_when_the_write_fails_part_way():
    """A write through libhdf5 that fails part-way (a corrupt chunk read for a partial update,
    after the whole chunks before it in chunk order were written) still repairs the stale
    masks of the chunks libhdf5 wrote before the failure: the chunk loop's error is returned
    after the stale-mask watch settles."""
    path = TMP / "stale_partway.h5"
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        with h5py.File(path, "w", libver=("earliest", "v110")) as f:
            d = f.create_dataset("x", data=rng.random((64, 64)) * 1e6, chunks=(8, 8), **hdf5plugin.Blosc(cname="lz4"))
            infos = {tuple(i.chunk_offset): i for i in (d.id.get_chunk_info(k) for k in range(d.id.get_num_chunks()))}
        at_raw_size = [o for o, i in infos.items() if o[0] < 56 and i.filter_mask == 0 and i.size == 8 * 8 * 8]
        victims = [o for o, i in infos.items() if o[0] == 56 and i.filter_mask == 0 and i.size < 8 * 8 * 8]
        if at_raw_size and victims:
            break
    else:
        pytest.skip("no chunk stored with mask 0 at the raw size (Blosc build differs)")
    victim = infos[victims[0]]
    with open(path, "r+b") as fh:  # Blosc cannot decode the victim chunk any more
        fh.seek(victim.byte_offset)
        fh.write(b"\xff" * victim.size)
    new = rng.random((64, 64)) * 1e6  # incompressible: Blosc fails on every chunk
    r = vh5_write(path, new, [((0, 0), (56, 64)), ((victims[0][0] + 1, victims[0][1] + 1), (2, 2))])
    assert r.returncode == 4 and "write failed part-way" in r.stdout, (r.stdout + r.stderr)[-2000:]
    assert "rows written completely before the failure: 0; rows written in part: none" in r.stdout, r.stdout
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["x"][:56], new[:56])
    masks = chunk_masks(path)
    assert any(masks[o] == 1 for o in at_raw_size), {o: masks[o] for o in at_raw_size}


def test_stale_mask_conversion_write_refused():
    """A converting write goes through libhdf5 row by row: vh5 cannot check the chunks it
    did not merge itself for the stale mask above, so a converting write reaching a stored
    chunk of a pipeline with an optional filter vh5 does not run is refused, nothing written,
    naming the fix (numpy's astype); the same values as the dataset's dtype write."""
    path = TMP / "stale_convert.h5"
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", data=np.arange(64 * 64, dtype="<f4").reshape(64, 64), chunks=(8, 8), **hdf5plugin.Blosc())
    before = path.read_bytes()
    new = np.random.default_rng(5).random((64, 64)) * 1e3
    rows = [((3, 5), (9, 20))]
    r = vh5_write(path, new, rows, convert=True)
    assert r.returncode == 3, (r.stdout + r.stderr)[-2000:]
    for w in ("optional filter vh5 does not run", "astype", "nothing was written"):
        assert w in r.stdout, (w, r.stdout)
    assert path.read_bytes() == before
    check_write(path, rows, seed=5)  # float32 values (the dataset's dtype): written


def _write_rows(path, src, rows, convert):
    """vh5 writes `src[src_start + count]` to `x[dst_start + count]` for every row
    `(src_start, dst_start, count)`, in ONE call (child process with the plugins)."""
    npy = str(path) + ".src.npy"
    np.save(npy, src)
    env = {"HDF5_PLUGIN_PATH": hdf5plugin.PLUGIN_PATH}
    return run_planner_child(_CHILD, [path, npy, json.dumps(rows), int(convert)], "auto", 120, env)


def test_stale_mask_converting_write_reaching_a_chunk_twice_refused():
    """A converting write goes through libhdf5 one row at a time: a chunk not stored when the
    call starts is stored by the first row that reaches it (libhdf5 flushes it when its chunk
    cache evicts it; Blosc succeeds at exactly the raw size for some 8x8 float64 chunks, mask
    0) and written again by a later row, where Blosc may fail: libhdf5 then stores the chunk
    raw at the same size and keeps mask 0, which no reader decodes. Two rows over an empty
    768x768 dataset left chunks h5py could not read with a success status (until session 22).
    Now refused before anything is written; one row per chunk still writes, and so do the
    same rows without a conversion (vh5 merges and checks the chunks itself)."""
    path = TMP / "stale_convert_twice.h5"
    n = 768
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", shape=(n, n), dtype="<f8", chunks=(8, 8), **hdf5plugin.Blosc(cname="lz4"))
    before = path.read_bytes()
    src = np.random.default_rng(2).integers(0, 2**52, (2 * n, n)).astype(np.int64)
    twice = [((0, 0), (0, 0), (n, n)), ((n, 0), (0, 0), (n, n))]
    r = _write_rows(path, src, twice, convert=True)
    assert r.returncode == 3, (r.stdout + r.stderr)[-2000:]
    for w in ("more than one row", "optional filter vh5 does not run", "astype", "nothing was written"):
        assert w in r.stdout, (w, r.stdout)
    assert path.read_bytes() == before
    r = _write_rows(path, src.astype("<f8"), twice, convert=False)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["x"][()], src[n:].astype("<f8"))
    once = TMP / "stale_convert_once.h5"
    with h5py.File(once, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("x", shape=(n, n), dtype="<f8", chunks=(8, 8), **hdf5plugin.Blosc(cname="lz4"))
    r = _write_rows(once, src, [((0, 0), (0, 0), (n // 2, n)), ((n, 0), (n // 2, 0), (n // 2, n))], convert=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    with h5py.File(once) as f:
        np.testing.assert_array_equal(f["x"][()], np.concatenate([src[: n // 2], src[n : n + n // 2]]).astype("<f8"))


def test_stale_mask_unchecked_pipeline_refused():
    """LZ4 then Blosc, both optional plugin filters: where Blosc fails on the new values
    libhdf5 stores LZ4's output under the same size and keeps mask 0 (it meant mask 2), and
    vh5 cannot decode LZ4 to recognise that (transfer::stale_mask tries masks whose left-on
    filters it decodes). vh5 let libhdf5 write such chunks with a success status: 43 of 67
    chunks stored mask 0 at LZ4's raw-size output could not be read back (session 22). Now
    refused before anything is written; a write reaching no stored chunk still writes."""
    path = TMP / "stale_lz4_blosc.h5"
    shape = (256, 256)
    rng = np.random.default_rng(0)
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 8))
        for flt in (hdf5plugin.LZ4(), hdf5plugin.Blosc(cname="lz4")):
            dcpl.set_filter(flt.filter_id, h5py.h5z.FLAG_OPTIONAL, flt.filter_options)
        sid = h5py.h5s.create_simple((512, 256))
        h5py.h5d.create(f.id, b"x", h5py.h5t.IEEE_F64LE, sid, dcpl=dcpl)
        f["x"][:256] = rng.random(shape) * 1e6
    masks = chunk_masks(path)
    with h5py.File(path) as f:
        d = f["x"]
        infos = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
    at_raw = [tuple(i.chunk_offset) for i in infos if i.filter_mask == 0 and i.size == 8 * 8 * 8 + 16]
    if not at_raw:
        pytest.skip("no chunk stored with mask 0 at LZ4's raw-size output (plugin builds differ)")
    new = rng.random((512, 256)) * 1e6
    before = path.read_bytes()
    r = vh5_write(path, new, [(o, (8, 8)) for o in at_raw])
    assert r.returncode == 3, (r.stdout + r.stderr)[-2000:]
    for w in ("stale filter mask", "vh5 cannot check this pipeline", "nothing was written"):
        assert w in r.stdout, (w, r.stdout)
    assert path.read_bytes() == before
    assert chunk_masks(path) == masks
    r = vh5_write(path, new, [((256, 0), (256, 256))])  # no chunk stored there yet
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["x"][256:], new[256:])


def test_stale_mask_unchecked_pipeline_late_allocation_refused_unchanged():
    """LZ4 then Blosc with allocation time late, nothing written yet: vh5's write would first
    write one element through libhdf5 (allocating, and so storing, every chunk) and only then
    find stored chunks it cannot check. Refused before that element: the file unchanged byte
    for byte, the dataset still unallocated."""
    path = TMP / "stale_lz4_blosc_late.h5"
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 8))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_LATE)
        for flt in (hdf5plugin.LZ4(), hdf5plugin.Blosc(cname="lz4")):
            dcpl.set_filter(flt.filter_id, h5py.h5z.FLAG_OPTIONAL, flt.filter_options)
        h5py.h5d.create(f.id, b"x", h5py.h5t.IEEE_F64LE, h5py.h5s.create_simple((64, 64)), dcpl=dcpl)
    before = path.read_bytes()
    new = np.random.default_rng(1).random((64, 64)) * 1e6
    r = vh5_write(path, new, [((0, 0), (8, 8))])
    assert r.returncode == 3, (r.stdout + r.stderr)[-2000:]
    for w in ("allocated late and not yet", "stale filter mask", "nothing was written"):
        assert w in r.stdout, (w, r.stdout)
    assert path.read_bytes() == before
    with h5py.File(path) as f:
        assert f["x"].id.get_num_chunks() == 0


def test_stale_mask_unchecked_pipeline_scaleoffset_blosc_refused():
    """scaleoffset then Blosc (h5py's scaleoffset= with hdf5plugin's Blosc): where Blosc
    fails, the chunk is stored as scaleoffset's output, often at the size Blosc's output had,
    under a stale mask 0, and vh5 does not decode scaleoffset to recognise it. A vh5 write
    into the 153 chunks of a 1024x1024 float32 dataset (16x16 chunks) stored mask 0 at a size
    other chunks have under mask 2 returned success and left 42 of them unreadable or wrong
    (session 22). Now refused, the file unchanged."""
    path = TMP / "stale_so_blosc.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        data = rng.integers(0, 2**28, (1024, 1024)).astype("<f4")
        f.create_dataset("x", data=data, chunks=(16, 16), scaleoffset=2, **hdf5plugin.Blosc(cname="lz4"))
        d = f["x"]
        infos = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
    skipped = {i.size for i in infos if i.filter_mask == 2}
    at_risk = [tuple(i.chunk_offset) for i in infos if i.filter_mask == 0 and i.size in skipped]
    if not at_risk:
        pytest.skip("no chunk stored with mask 0 at a size Blosc-skipped chunks have (plugin builds differ)")
    before = path.read_bytes()
    r = vh5_write(path, rng.integers(0, 2**28, (1024, 1024)).astype("<f4"), [(o, (16, 16)) for o in at_risk])
    assert r.returncode == 3, (r.stdout + r.stderr)[-2000:]
    for w in ("stale filter mask", "scaleoffset", "nothing was written"):
        assert w in r.stdout, (w, r.stdout)
    assert path.read_bytes() == before
