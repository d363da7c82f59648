"""The one-step ``Dataset.__getitem__`` (``vh5._getitem.read_basic``): a slice without step
or an integer per axis, read from per-thread coordinate tables. Every selection, those it
takes and those it hands to the general path (steps, ``...``, fewer indices, empty or
out-of-range selections, numpy / bool integers), is compared with h5py's ``d[sel]`` on the
same file: value, dtype, shape, and scalar versus array. Also: big-endian and integer
datasets, a 1-D dataset indexed without a tuple, threads reading at once (the tables are per
thread), a dataset closed in between, and errors raised as the general path raises them.
"""

import threading

import numpy as np
import pytest
import vh5  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402

h5py = pytest.importorskip("h5py")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

TMP = module_tmp("vh5-py-getitem-")
SHAPES = {"a1": (37,), "a2": (23, 17), "a3": (5, 9, 11), "be": (12, 10), "i2": (30, 4)}


@pytest.fixture(scope="module")
def files():
    rng = np.random.default_rng(21)
    path = str(TMP / "getitem.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("a1", data=rng.standard_normal(37), chunks=(8,))
        f.create_dataset("a2", data=rng.standard_normal((23, 17)).astype(np.float32), chunks=(5, 4), compression="gzip")
        f.create_dataset("a3", data=rng.integers(-9, 9, (5, 9, 11)).astype(np.int64), chunks=(2, 3, 4))
        f.create_dataset("be", data=rng.standard_normal((12, 10)).astype(">f8"))
        f.create_dataset("i2", data=rng.integers(-300, 300, (30, 4)).astype("<i2"), chunks=(7, 4), shuffle=True)
    h = h5py.File(path, "r")
    v = vh5.File(path)
    yield h, v
    v.close()
    h.close()


def same(h, v, name, sel):
    """vh5's ``d[sel]`` equals h5py's, or both raise (vh5 with a subclass of h5py's error
    kind: IndexError, ValueError or TypeError)."""
    try:
        want = h[name][sel]
    except (IndexError, ValueError, TypeError) as e:
        with pytest.raises((IndexError, ValueError, TypeError)):
            v[name][sel]
        return type(e)
    got = v[name][sel]
    assert type(got) is type(want), (name, sel, type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, (name, sel)
    assert np.shape(got) == np.shape(want), (name, sel)
    np.testing.assert_array_equal(got, want)
    return None


def index(n):
    """An index of one axis of length ``n``: in range, negative, out of range, clipped slices,
    steps, numpy and bool integers."""
    ints = st.integers(-n - 2, n + 1)
    bounds = st.one_of(st.none(), st.integers(-n - 3, n + 3))
    return st.one_of(
        ints,
        st.builds(slice, bounds, bounds),
        st.builds(slice, bounds, bounds, st.sampled_from([None, 1, 2, 3])),
        ints.map(np.int64),
        st.just(Ellipsis),
    )


@st.composite
def selection(draw):
    name = draw(st.sampled_from(sorted(SHAPES)))
    shape = SHAPES[name]
    k = draw(st.integers(1, len(shape)))
    sel = tuple(draw(index(n)) for n in shape[:k])
    if sum(s is Ellipsis for s in sel) > 1:
        sel = tuple(s for s in sel if s is not Ellipsis)
    if len(sel) == 1 and draw(st.booleans()):
        sel = sel[0]  # not a tuple
    return name, sel


@settings(max_examples=400, deadline=None)
@given(selection())
def test_getitem_matches_h5py(files, case):
    h, v = files
    same(h, v, *case)


@pytest.mark.parametrize(
    "name, sel",
    [
        ("a1", 5),
        ("a1", -1),
        ("a1", slice(3, 9)),
        ("a1", slice(None)),
        ("a2", (4, 7)),
        ("a2", (-1, -17)),
        ("a2", (slice(2, 9), 3)),
        ("a2", (slice(0, 100), slice(-5, None))),
        ("a3", (1, slice(2, 5), -3)),
        ("a3", (4, 8, 10)),
        ("be", (slice(1, 4), slice(2, 9))),
        ("be", (3, 3)),
        ("i2", (slice(5, 29), slice(1, 3))),
        ("a2", (np.int32(2), slice(1, 2))),
        ("a2", (np.uint64(22), np.int8(-1))),
        ("a3", (np.int64(-5), slice(2, 5), np.intp(3))),
        ("a2", (slice(5, 5), 1)),  # empty
        ("a2", (23, 1)),  # out of range
        ("a2", (slice(1, 5, 1), 1)),  # explicit step 1
    ],
)
def test_getitem_cases(files, name, sel):
    h, v = files
    same(h, v, name, sel)


def test_getitem_bool_is_a_mask(files):
    # A bool is not an integer index for vh5 (documented: masks are refused), whatever h5py does.
    _, v = files
    with pytest.raises(TypeError, match="boolean index"):
        v["a2"][True, 3]


def test_getitem_big_endian_keeps_file_order(files):
    h, v = files
    got = v["be"][2:5, 1:4]
    assert got.dtype == np.dtype(">f8") == h["be"].dtype
    np.testing.assert_array_equal(got, h["be"][2:5, 1:4])


def test_getitem_threads(files):
    h, v = files
    want = h["a3"][...]
    d = v["a3"]
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                i, j, k = (int(rng.integers(0, n)) for n in want.shape)
                c = int(rng.integers(1, want.shape[2] - k + 1))
                np.testing.assert_array_equal(d[i, j:, k : k + c], want[i, j:, k : k + c])
                assert d[i, j, k] == want[i, j, k]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_getitem_closed_dataset(files):
    h, _ = files
    with vh5.File(h.filename) as f:
        d = f["a2"]
        assert d[1, 2] == h["a2"][1, 2]
    with pytest.raises(vh5.InvalidHandleError):
        d[1, 2]
    with pytest.raises(vh5.InvalidHandleError):
        d[0:3, 0:2]


def outcome(fn):
    """(result kind, message) of a call: ("ok", None) or (exception type, message)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)
    return "ok", None


ROW_CASES = [
    ([3, 4], [0, 0], [5, 6], (5, 6), np.float32),
    ([0, 0], [1, 2], [2, 2], (4, 4), np.float32),
    ((18, 13), (0, 0), (5, 4), (5, 4), np.float32),  # tuples, up to the extent
    ([19, 13], [0, 0], [5, 4], (5, 4), np.float32),  # past the extent on axis 0
    ([3, 4], [0, 0], [5, 6], (4, 6), np.float32),  # past dst
    ([3, 4], [0, 0], [0, 6], (4, 6), np.float32),  # a zero count
    ([3, 4], [0, 0], [5, 6], (5, 6), np.float64),  # dtype differs (no convert)
    ([3, 4], [0, 0], [5, 6], (5, 6, 1), np.float32),  # ndim differs
    ([3], [0], [5], (5,), np.float32),  # table width differs
    ([-1, 4], [0, 0], [5, 6], (5, 6), np.float32),  # negative start
    ([3, 4], [0, 0], [5, 6], (5, 6), ">f4"),  # big-endian dst: swapped by vh5
]


@pytest.mark.parametrize("start, dstart, count, shape, dtype", ROW_CASES)
def test_one_row_lists_match_tables(files, start, dstart, count, shape, dtype):
    """``read_many_slices`` with one row given as lists (the one-step path) ends as with the
    same row given as (1, ndim) uint64 tables: same values, or the same error and message."""
    h, v = files
    d = v["a2"]
    a, b = np.zeros(shape, dtype), np.zeros(shape, dtype)
    got = outcome(lambda: vh5.read_many_slices(d, a, start, dstart, count))
    try:
        tabs = [np.array([t], np.uint64) for t in (start, dstart, count)]
    except (TypeError, ValueError, OverflowError):
        tabs = [np.array([t]) for t in (start, dstart, count)]  # the general path's own error
    want = outcome(lambda: vh5.read_many_slices(d, b, *tabs))
    if want[0] == "ok" or got[0] == "ok":
        assert got == want
        np.testing.assert_array_equal(a, b)
    else:
        assert got[0] is want[0] or issubclass(got[0], want[0]) or issubclass(want[0], got[0]), (got, want)


def test_one_row_lists_read_only_dst(files):
    _, v = files
    a = np.zeros((5, 6), np.float32)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        vh5.read_many_slices(v["a2"], a, [3, 4], [0, 0], [5, 6])


@pytest.mark.parametrize("big", [2**64, 2**64 + 5, 2**70])
def test_one_row_lists_past_uint64_refused(files, big):
    """A coordinate past 2**64-1 must not wrap in the per-thread ctypes tables (2**64 would
    read row 0): the general path refuses it by value."""
    _, v = files
    a = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="outside the range of uint64"):
        vh5.read_many_slices(v["a2"], a, [0, big], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="outside the range of uint64"):
        vh5.read_many_slices(v["a2"], a, [0, 0], [0, 0], [big, 1])
    assert not a.any()
