"""vh5.write_many_slices into chunks stored with a NON-ZERO filter mask (some filters skipped
for that chunk: h5py's write_direct_chunk with filter_mask, or an optional filter that
failed). libhdf5 (1.10 and 2.x) re-stores such a chunk with every filter applied but keeps the
old mask in the chunk index when the new stored size equals the old one, so every reader then
decodes it wrongly. vh5 must leave every touched chunk with filter mask 0 and the values a
numpy reference says, as h5py READS them afterwards; pipelines vh5 does not encode
(scaleoffset) are refused before anything is written.

Differential against h5py reads (and get_chunk_info().filter_mask) over pipelines
shuffle+fletcher32, gzip, shuffle+gzip, gzip+fletcher32 with every filter bit skipped,
partial and full-chunk rows, several chunks (some masked, some not), edge chunks, 1-D/2-D/3-D,
the three chunk indexes libhdf5 1.10 reads (v1 B-tree, fixed array, extensible array), raw
writes and writes through H5Dwrite (convert=True), every planner (child processes)."""

import itertools

import numpy as np
import pytest
import vh5  # noqa: E402
from _testkit import draw_geometry_rows, run_planner_child, touched_chunks  # noqa: E402
from _testkit import encode_masked as _encode  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402

h5py = pytest.importorskip("h5py")
TMP = module_tmp("vh5-py-masked-")

PIPES = {
    "shuffle+fletcher32": dict(shuffle=True, fletcher32=True),
    "gzip": dict(compression="gzip"),
    "shuffle+gzip": dict(shuffle=True, compression="gzip"),
    "gzip+fletcher32": dict(compression="gzip", fletcher32=True),
}
ALL_PIPES = dict(PIPES, **{"shuffle+gzip+fletcher32": dict(shuffle=True, compression="gzip", fletcher32=True)})
# libver / maxshape: the chunk index libhdf5 makes (all readable by libhdf5 1.10)
INDEXES = {
    "btree-v1": (("earliest", "v110"), False),
    "fixed-array": (("v110", "v110"), False),
    "extensible-array": (("v110", "v110"), True),
}


def _chunk_origins(shape, chunks):
    return list(itertools.product(*[range(0, s, c) for s, c in zip(shape, chunks)]))


def make(path, shape, chunks, pipe, index, masks, dtype="<f4"):
    """A dataset `x` whose every chunk is stored with write_direct_chunk under the mask
    `masks(i)` (i: the chunk's number in C order); returns its values."""
    libver, unlimited = INDEXES[index]
    rng = np.random.default_rng(len(shape) * 7 + sum(chunks))
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    maxshape = (None,) + tuple(shape[1:]) if unlimited else None
    with h5py.File(path, "w", libver=libver) as f:
        d = f.create_dataset("x", shape=shape, dtype=dtype, chunks=chunks, maxshape=maxshape, **ALL_PIPES[pipe])
        nf = d.id.get_create_plist().get_nfilters()
        for i, o in enumerate(_chunk_origins(shape, chunks)):
            block = np.zeros(chunks, dtype)
            part = tuple(slice(s, min(s + c, n)) for s, c, n in zip(o, chunks, shape))
            block[tuple(slice(0, p.stop - p.start) for p in part)] = a[part]
            d.id.write_direct_chunk(
                o, _encode(d, block.tobytes(), masks(i) % (1 << nf)), filter_mask=masks(i) % (1 << nf)
            )
    np.testing.assert_array_equal(h5py.File(path)["x"][()], a)
    return a


def masks_of(path):
    with h5py.File(path) as f:
        d = f["x"]
        return {
            tuple(d.id.get_chunk_info(i).chunk_offset): d.id.get_chunk_info(i).filter_mask
            for i in range(d.id.get_num_chunks())
        }


def rows_for(shape, chunks):
    """Rows (dst_start, count): a 2-wide partial block in the first chunk, a full chunk, the
    last (edge) chunk's corner, and a row across a chunk boundary."""
    n = len(shape)
    rows = [([1] * n, [min(2, s - 1) for s in shape])]
    if all(s >= 2 * c for s, c in zip(shape, chunks)):
        rows.append((list(chunks), list(chunks)))  # chunk [1, 1, ...] whole
    rows.append(([s - 1 for s in shape], [1] * n))  # edge chunk
    mid = [min(c - 1, s - 2) for s, c in zip(shape, chunks)]
    rows.append((mid, [2] * n))  # across boundaries
    return rows


def apply(path, rows, value, convert=False):
    exp = h5py.File(path)["x"][()]
    src_dtype = np.float64 if convert else exp.dtype
    with vh5.File(path, "r+") as f:
        for k, (start, ct) in enumerate(rows):
            src = np.full(ct, value + k, src_dtype)
            vh5.write_many_slices(src, f["x"], src_start=[0] * len(start), dst_start=start, count=ct, convert=convert)
            exp[tuple(slice(s, s + c) for s, c in zip(start, ct))] = value + k
    return exp


GEOMS = [((23,), (5,)), ((21, 17), (5, 4)), ((9, 7, 10), (4, 3, 4))]


@pytest.mark.parametrize("convert", [False, True], ids=["raw", "H5Dwrite"])
@pytest.mark.parametrize("index", list(INDEXES))
@pytest.mark.parametrize("shape,chunks", GEOMS, ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("pipe", list(PIPES))
def test_write_into_masked_chunks_reads_back_in_h5py(pipe, shape, chunks, index, convert):
    p = TMP / f"m-{pipe}-{len(shape)}-{index}-{convert}.h5"
    make(p, shape, chunks, pipe, index, masks=lambda i: i % 4)  # every bit combination, mask 0 too
    before = masks_of(p)
    assert any(before.values())
    rows = rows_for(shape, chunks)
    exp = apply(p, rows, -7.0, convert)
    np.testing.assert_array_equal(h5py.File(p)["x"][()], exp)
    after = masks_of(p)
    for o, m in after.items():
        # touched chunks stored with every filter (mask 0); the others as they were
        assert m == (0 if o in touched_chunks(rows, chunks) else before[o]), (o, m, before[o])
    with vh5.File(p) as f:
        np.testing.assert_array_equal(f["x"][()], exp)


@pytest.mark.parametrize("pipe", list(PIPES))
def test_full_chunk_overwrite_of_masked_chunk(pipe):
    """The full-chunk overwrite: vh5 never reads the chunk, whose new stored size equals the
    old one for shuffle+fletcher32 (every bit of the mask)."""
    for mask in range(4):
        p = TMP / f"full-{pipe}-{mask}.h5"
        make(p, (10, 10), (10, 10), pipe, "btree-v1", masks=lambda i, m=mask: m)
        with vh5.File(p, "r+") as f:
            vh5.write_many_slices(
                np.full((10, 10), -1, "<f4"), f["x"], src_start=[0, 0], dst_start=[0, 0], count=[10, 10]
            )
        np.testing.assert_array_equal(h5py.File(p)["x"][()], np.full((10, 10), -1, "<f4"))
        assert masks_of(p) == {(0, 0): 0}


_CHILD = """
import sys
import conftest  # noqa: F401
import numpy as np, vh5
p = sys.argv[1]
rows = np.array([[i + 2, j + 3] for i in range(0, 40, 10) for j in range(0, 40, 10)])
with vh5.File(p, "r+") as f:
    vh5.write_many_slices(np.full((2, 2), 99.5, "f4"), f["x"], src_start=[0, 0], dst_start=rows, count=[2, 2])
"""


@pytest.mark.parametrize("planner", ["auto", "chunks", "rows"])
def test_planners_write_masked_chunks(planner):
    """Many rows, one per chunk, 16 chunks with every mask of shuffle+gzip+fletcher32."""
    p = TMP / f"planner-{planner}.h5"
    a = make(p, (40, 40), (10, 10), "shuffle+gzip+fletcher32", "btree-v1", masks=lambda i: i % 8)
    r = run_planner_child(_CHILD, [p], planner, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    exp = a.copy()
    for i in range(0, 40, 10):
        for j in range(0, 40, 10):
            exp[i + 2 : i + 4, j + 3 : j + 5] = 99.5
    np.testing.assert_array_equal(h5py.File(p)["x"][()], exp)
    assert set(masks_of(p).values()) == {0}


def _scaleoffset_file(p, fletcher=True):
    """Pipeline [scaleoffset, fletcher32] (or [scaleoffset]): chunk [1, 0] through the
    pipeline (mask 0), chunk [0, 0] stored with the LAST filter skipped (scaleoffset left on
    with fletcher32; raw without)."""
    a = np.arange(100, dtype="<i4").reshape(10, 10)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((5, 10))
    dcpl.set_scaleoffset(h5py.h5z.SO_INT, 0)
    if fletcher:
        dcpl.set_fletcher32()
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        space = h5py.h5s.create_simple((10, 10))
        d = h5py.Dataset(h5py.h5d.create(f.id, b"x", h5py.h5t.py_create(np.dtype("<i4")), space, dcpl=dcpl))
        d[...] = a
        _, b = d.id.read_direct_chunk((0, 0))
        d.id.write_direct_chunk((0, 0), b[:-4] if fletcher else a[:5].tobytes(), filter_mask=2 if fletcher else 1)
    return a


def test_unencodable_pipeline_with_masked_chunk_is_refused_unchanged():
    """scaleoffset left on by the mask (fletcher32 skipped): vh5 cannot store the chunk."""
    p = TMP / "so.h5"
    a = _scaleoffset_file(p)
    np.testing.assert_array_equal(h5py.File(p)["x"][()], a)
    before = p.read_bytes()
    with vh5.File(p, "r+") as f:
        # rows in the unmasked chunk first: nothing may be written before the refusal
        with pytest.raises(vh5.UnsupportedError) as e:
            vh5.write_many_slices(
                np.full((1, 10), -1, "<i4"), f["x"], src_start=[0, 0], dst_start=[[7, 0], [2, 0]], count=[1, 10]
            )
    msg = str(e.value)
    assert e.value.status_name == "VH5_ERR_UNSUPPORTED"
    for part in (
        "so.h5",
        "`/x`",
        "chunk [0, 0]",
        "filter mask 0x2",
        "[scaleoffset]",
        "stale mask",
        "nothing was written",
    ):
        assert part in msg, msg
    assert p.read_bytes() == before
    np.testing.assert_array_equal(h5py.File(p)["x"][()], a)
    # rows only in the unmasked chunk are written
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(np.full((1, 10), -1, "<i4"), f["x"], src_start=[0, 0], dst_start=[7, 0], count=[1, 10])
    a[7] = -1
    np.testing.assert_array_equal(h5py.File(p)["x"][()], a)


def test_masked_chunk_with_only_skipped_unencodable_filters_is_written_under_its_mask():
    """scaleoffset skipped by the mask (the chunk stored raw): vh5 merges the rows into the
    raw chunk and stores it under the same mask; the unmasked chunk through libhdf5."""
    p = TMP / "so-raw.h5"
    a = _scaleoffset_file(p, fletcher=False)
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(
            np.full((1, 10), -1, "<i4"), f["x"], src_start=[0, 0], dst_start=[[7, 0], [2, 0]], count=[1, 10]
        )
    a[[2, 7]] = -1
    np.testing.assert_array_equal(h5py.File(p)["x"][()], a)
    assert masks_of(p) == {(0, 0): 1, (5, 0): 0}
    with h5py.File(p) as f:
        assert f["x"].id.read_direct_chunk((0, 0)) == (1, a[:5].tobytes())


@pytest.mark.parametrize("kind", ["float-dscale", "int-minbits"])
def test_masked_chunk_skipping_a_lossy_scaleoffset_is_refused_unchanged(kind):
    """scaleoffset skipped by the mask, but lossy: decimal scaling of floats, or integers with
    fewer minimum bits than their values need. libhdf5 would apply it to the rewritten chunk
    (the values it stores are rounded); keeping the mask would store the exact values, which
    differ from libhdf5's write (the conformance suite found it: seed 209, float64 scaleoffset
    with a chunk stored raw by write_direct_chunk). Refused, nothing written."""
    p = TMP / f"so-lossy-{kind}.h5"
    dt = "<f8" if kind == "float-dscale" else "<i4"
    a = (np.arange(14) * 1000.123456).astype(dt)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((14,))
    if kind == "float-dscale":
        dcpl.set_scaleoffset(h5py.h5z.SO_FLOAT_DSCALE, 2)
    else:
        dcpl.set_scaleoffset(h5py.h5z.SO_INT, 4)
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        space = h5py.h5s.create_simple((14,))
        d = h5py.Dataset(h5py.h5d.create(f.id, b"x", h5py.h5t.py_create(np.dtype(dt)), space, dcpl=dcpl))
        d.id.write_direct_chunk((0,), a.tobytes(), filter_mask=1)
    np.testing.assert_array_equal(h5py.File(p)["x"][()], a)
    before = p.read_bytes()
    with vh5.File(p, "r+") as f, pytest.raises(vh5.UnsupportedError) as e:
        vh5.write_many_slices(np.full(3, 7777, dt), f["x"], src_start=[0], dst_start=[2], count=[3])
    msg = str(e.value)
    for part in ("chunk [0]", "filter mask 0x1", "[scaleoffset]", "change values", "nothing was written"):
        assert part in msg, msg
    assert p.read_bytes() == before


hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def cases(draw):
    shape, chunks, rows = draw_geometry_rows(draw, st, 5, 6)
    pipe = draw(st.sampled_from(list(PIPES)))
    index = draw(st.sampled_from(list(INDEXES)))
    seed = draw(st.integers(0, 2**16))
    return tuple(shape), tuple(chunks), pipe, index, seed, rows, draw(st.booleans())


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_hypothesis_writes_into_masked_chunks(case):
    shape, chunks, pipe, index, seed, rows, convert = case
    p = TMP / "hyp.h5"
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 8, 1000)
    make(p, shape, chunks, pipe, index, masks=lambda i: int(table[i % 1000]))
    exp = apply(p, rows, 5.5, convert)
    np.testing.assert_array_equal(h5py.File(p)["x"][()], exp)
    after = masks_of(p)
    assert all(after[o] == 0 for o in touched_chunks(rows, chunks) if o in after)


@pytest.mark.parametrize("index", list(INDEXES))
@pytest.mark.parametrize("shape", [(10, 10), (20, 10)], ids=["one-chunk", "two-chunks"])
def test_masked_chunk_reads_right_through_the_same_open_file(index, shape):
    """libhdf5 caches the index entry of the chunk H5Dwrite_chunk stored last with its OLD
    mask: vh5 makes it forget that entry, so reads and partial writes through libhdf5 of the
    same open dataset (here: vh5's read, then a convert=True write, which libhdf5 merges)
    see the chunk right; a one-chunk grid included (single-chunk index under v110)."""
    p = TMP / f"same-{index}-{shape[0]}.h5"
    exp = make(p, shape, (10, 10), "shuffle+fletcher32", index, masks=lambda i: 1 + i % 2)
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(np.full((2, 2), -1, "<f4"), f["x"], src_start=[0, 0], dst_start=[4, 4], count=[2, 2])
        exp[4:6, 4:6] = -1
        np.testing.assert_array_equal(f["x"][()], exp)
        vh5.write_many_slices(
            np.full((2, 2), -2.0), f["x"], src_start=[0, 0], dst_start=[7, 7], count=[2, 2], convert=True
        )
        exp[7:9, 7:9] = -2
        np.testing.assert_array_equal(f["x"][()], exp)
    np.testing.assert_array_equal(h5py.File(p)["x"][()], exp)
    assert masks_of(p)[(0, 0)] == 0
