"""The inline fast path of ``vh5.read_many_slices`` (a ``vh5.Dataset`` with ``(n, ndim)``
uint64/int64 tables): tables it must hand to the general path (Fortran order, read-only,
wrong dtype, negative int64), the per-thread ``vh5_array`` cache (same layout from several
threads at once, layouts changed in place), and a closed dataset. Every result is compared
with numpy slicing of an h5py read.
"""

import numpy as np
import pytest
import vh5  # noqa: E402
from _testkit import run_threads  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402

h5py = pytest.importorskip("h5py")

TMP = module_tmp("vh5-py-fast-")


@pytest.fixture(scope="module")
def data_file():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((60, 50))
    path = str(TMP / "fast.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(8, 7))
    return path, data


def expected(data, src, count, dst_shape):
    want = np.zeros(dst_shape)
    for i in range(src.shape[0]):
        a, b = int(src[i, 0]), int(src[i, 1])
        ca, cb = int(count[i, 0]), int(count[i, 1])
        want[i * 4 : i * 4 + ca, :cb] = data[a : a + ca, b : b + cb]
    return want


def tables(n, seed):
    rng = np.random.default_rng(seed)
    src = np.stack([rng.integers(0, 56, n), rng.integers(0, 47, n)], axis=1).astype(np.uint64)
    dst = np.zeros((n, 2), np.uint64)
    dst[:, 0] = np.arange(n, dtype=np.uint64) * 4
    cnt = np.tile(np.array([[4, 3]], np.uint64), (n, 1))
    return src, dst, cnt


def test_tables_the_fast_path_hands_on(data_file):
    path, data = data_file
    src, dst, cnt = tables(30, 1)
    want = expected(data, src, cnt, (120, 3))
    with vh5.File(path) as f:
        d = f.dataset("x")
        ro = src.copy()
        ro.flags.writeable = False
        variants = [
            (src, dst, cnt),
            (np.asfortranarray(src), dst, cnt),  # not C-contiguous
            (ro, dst, cnt),  # read-only: address through __array_interface__
            (src.astype(np.int64), dst.astype(np.int64), cnt.astype(np.int64)),
            (src.astype(np.int32), dst, cnt),  # other integer dtype: general path converts
            (src.tolist(), dst, cnt),  # not an ndarray
            (src, dst, np.array([4, 3], np.uint64)),  # broadcast 1-D count
        ]
        for k, (s, dd, c) in enumerate(variants):
            out = np.zeros((120, 3))
            vh5.read_many_slices(d, out, s, dd, c)
            assert np.array_equal(out, want), f"variant {k}"
        bad = src.astype(np.int64)
        bad[7, 1] = -1
        with pytest.raises(ValueError, match="negative"):
            vh5.read_many_slices(d, np.zeros((120, 3)), bad, dst, cnt)


def test_dst_layout_cache_per_thread_and_layout_changes(data_file):
    path, data = data_file
    with vh5.File(path) as f:
        d = f.dataset("x")
        errors = []

        def job(seed):
            try:
                src, dst, cnt = tables(25, seed)
                want = expected(data, src, cnt, (100, 3))
                for _ in range(200):
                    out = np.zeros((100, 3))  # same (dtype, shape, strides) in every thread
                    vh5.read_many_slices(d, out, src, dst, cnt)
                    if not np.array_equal(out, want):
                        errors.append(f"seed {seed}: wrong result")
                        return
            except Exception as e:  # pragma: no cover - reported below
                errors.append(repr(e))

        run_threads(job, [(s,) for s in range(4)])
        assert not errors, errors

        # One array object whose layout changes in place between calls (shape and strides).
        src, dst, cnt = tables(10, 9)
        want = expected(data, src, cnt, (40, 3))
        buf = np.zeros(40 * 3)
        out = buf.reshape(40, 3)
        vh5.read_many_slices(d, out, src, dst, cnt)
        assert np.array_equal(out, want)
        big = np.zeros((40, 6))
        view = big[:, ::2]  # same shape, other strides
        vh5.read_many_slices(d, view, src, dst, cnt)
        assert np.array_equal(view, want) and not big[:, 1::2].any()
        out.shape = (40, 3)
        out[...] = 0
        vh5.read_many_slices(d, out, src, dst, cnt)
        assert np.array_equal(out, want)


def test_closed_dataset_raises(data_file):
    path, _ = data_file
    f = vh5.File(path)
    d = f.dataset("x")
    src, dst, cnt = tables(3, 2)
    d.close()
    with pytest.raises(vh5.InvalidHandleError):
        vh5.read_many_slices(d, np.zeros((12, 3)), src, dst, cnt)
    f.close()


def test_fast_path_dst_descriptions_cached_and_flags_kept(data_file):
    # Regression (single-row call cost): the hot path looked the dst struct up under a key
    # `array_struct` never stored, so every call described dst again (~3 of a 15 µs call).
    # Then: the last dst layout of a thread is reused without the dict lookup; its struct
    # must stay valid (shape / strides tables alive) after the per-thread cache is cleared.
    from vh5 import _marshal

    path, data = data_file
    src, dst, cnt = tables(5, 4)
    want = expected(data, src, cnt, (20, 3))
    ones = np.ones((5, 2), np.uint64)
    with vh5.File(path) as f:
        d = f.dataset("x")
        first = np.zeros((20, 3))
        vh5.read_many_slices(d, first, src, dst, cnt)
        assert _marshal.cached_struct(first) is not None
        # clip alone must not mark a native dst as byte-swapped, a big-endian dst must be;
        # step tables take the fast path too.
        for kw, o in (({"clip": True}, np.zeros((20, 3))), ({}, np.zeros((20, 3), ">f8"))):
            vh5.read_many_slices(d, o, src, dst, cnt, **kw)
            assert np.array_equal(o, want), kw
        for k in range(300):  # other layouts: the dict is cleared at least once
            big = np.zeros((20, 3 + k))
            vh5.read_many_slices(d, big[:, :3], src, dst, cnt, ones, ones)
            assert np.array_equal(big[:, :3], want) and not big[:, 3:].any(), k
        again = np.zeros((20, 3))
        vh5.read_many_slices(d, again, src, dst, cnt)
        assert np.array_equal(first, want) and np.array_equal(again, want)


def test_one_row_tables_given_as_lists_match_arrays_and_errors(data_file):
    """One row given as lists / tuples of Python ints (``[5, 2]``) takes a shortcut in
    `_marshal.tables` (one uint64 array for all tables, ~1/10 of the general path's cost):
    same result as uint64 tables, steps included; anything else (a negative, a bool, a
    float, a numpy integer, a value past 2**64-1, a wrong length, a missing table) goes the
    general path and gets its value or its error."""
    path, data = data_file
    with vh5.File(path) as f:
        d = f.dataset("x")
        for src, cnt, step in [([5, 2], [4, 3], None), ((0, 0), (2, 2), (3, 5)), ([59, 49], [1, 1], [1, 1])]:
            out, ref = np.zeros((4, 3)), np.zeros((4, 3))
            vh5.read_many_slices(d, out, src, [0, 0], cnt, step)
            a = lambda t: None if t is None else np.array([t], np.uint64)  # noqa: E731
            vh5.read_many_slices(d, ref, a(src), a([0, 0]), a(cnt), a(step))
            np.testing.assert_array_equal(out, ref)
            st = step or (1, 1)
            want = data[
                src[0] : src[0] + (cnt[0] - 1) * st[0] + 1 : st[0], src[1] : src[1] + (cnt[1] - 1) * st[1] + 1 : st[1]
            ]
            np.testing.assert_array_equal(out[: cnt[0], : cnt[1]], want)
        # values the shortcut leaves to the general path: numpy ints, a 1-D array
        out = np.zeros((4, 3))
        vh5.read_many_slices(d, out, [np.int64(5), np.uint8(2)], np.array([0, 0]), [4, 3])
        np.testing.assert_array_equal(out, data[5:9, 2:5])
        bad = [
            (([-1, 0], [0, 0], [1, 1]), ValueError, "negative"),
            (([0, 0], [0, 0], [1.5, 1]), TypeError, "integers"),
            (([0, 0], [0, 0], [1]), ValueError, "columns"),
            (([0, 2**64], [0, 0], [1, 1]), ValueError, "holds 18446744073709551616, outside the range of uint64"),
        ]
        for args, exc, words in bad:
            with pytest.raises(exc, match=words):
                vh5.read_many_slices(d, np.zeros((4, 3)), *args)
        # a bool among the integers is refused, naming its row and axis (numpy would read True
        # as 1: session-14 tryout)
        for args in (([True, 0], [0, 0], [1, 1]), ([[5, np.True_]], [0, 0], [1, 1]), ([0, 0], [0, 0], [1, True])):
            with pytest.raises(
                TypeError, match=r"row 0 axis [01] is (True|np\.True_): coordinates must be integers, not bools"
            ):
                vh5.read_many_slices(d, np.zeros((4, 3)), *args)


def test_reads_of_a_dataset_whose_extent_may_change_ask_only_its_rank(data_file, monkeypatch):
    # r+: Dataset.shape asks the library each time (the extent may change); a many-slice read
    # needs only the rank, which never changes: neither the fast nor the general path asks
    from vh5._lib import lib

    path, data = data_file
    src, dst, cnt = tables(30, 2)
    want = expected(data, src, cnt, (120, 3))
    with vh5.File(path, "r+") as f:
        d = f.dataset("x")
        asked = []
        real = lib().vh5_dataset_get_shape
        monkeypatch.setattr(lib(), "vh5_dataset_get_shape", lambda *a: asked.append(1) or real(*a))
        assert d.shape == (60, 50) and len(asked) == 1, "live extent: asked"
        for s in (src, src.tolist()):  # fast path, general path
            out = np.zeros((120, 3))
            vh5.read_many_slices(d, out, s, dst, cnt)
            assert np.array_equal(out, want)
        assert len(asked) == 1
