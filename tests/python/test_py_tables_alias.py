"""Slice tables that are views of the destination array (found by a new-user tryout).

numpy hands table views to vh5 without copying, so ``vh5.copy_many_slices(src, dst, dst[0:2],
...)`` passes tables lying inside ``dst``'s memory. Before the fix a copy validated every row,
then re-read a later row's entries after an earlier row had written over them: it wrote
outside ``dst`` (SIGSEGV with a large value), and reads depended on the planner (an error after
a partial write in one mode, success in another). Now the tables are read once, before
anything is written: every call gives the result of the same call with copies of the tables,
in every planner mode, and nothing outside ``dst`` changes.
"""

import numpy as np
import pytest
import vh5
from _testkit import run_planner_child
from _tmpdirs import module_tmp

h5py = pytest.importorskip("h5py")
TMP = module_tmp("vh5-py-tables-alias-")


def _aliased_case(rng, n_dst):
    """A uint64 buffer ``big`` whose first ``n_dst`` elements are the destination, and three
    2 x 1 tables as views of its first 6 elements, filled so that row 0 writes over row 1's
    entries with the source's values."""
    big = np.zeros(2 * n_dst, np.uint64)
    dst = big[:n_dst]
    tabs = [dst[2 * k : 2 * k + 2].reshape(2, 1) for k in range(3)]  # src_start, dst_start, count
    tabs[0][:] = [[0], [rng.integers(0, 2)]]
    tabs[1][:] = [[rng.integers(0, 5)], [rng.integers(8, n_dst - 2)]]
    tabs[2][:] = [[2], [1]]
    return big, dst, tabs


def test_copy_tables_inside_destination_are_read_before_any_write():
    rng = np.random.default_rng(5)
    for _ in range(200):
        big, dst, tabs = _aliased_case(rng, 64)
        # values that, as dst_start / count, reach far outside dst
        src = rng.choice(np.array([0, 1, 63, 64, 100, 10**9, 2**63], np.uint64), 4)
        ref_big = big.copy()
        ref_tabs = [t.copy() for t in tabs]
        vh5.copy_many_slices(src, ref_big[:64], *ref_tabs)
        vh5.copy_many_slices(src, dst, *tabs)
        np.testing.assert_array_equal(big, ref_big)
        assert not big[64:].any()


# One child per planner mode (VH5_PLANNER is read once per process).
CHILD = r"""
import sys, numpy as np, vh5
from test_py_tables_alias import _aliased_case
rng = np.random.default_rng(7)
with vh5.File(sys.argv[1]) as f:
    for name in ("contiguous", "chunked", "gzip"):
        for _ in range(50):
            big, dst, tabs = _aliased_case(rng, 64)
            ref_big = big.copy()
            vh5.read_many_slices(f[name], ref_big[:64], *[t.copy() for t in tabs])
            vh5.read_many_slices(f[name], dst, *tabs)
            assert np.array_equal(big, ref_big), (name, big[:8], ref_big[:8])
            assert not big[64:].any(), name
print("ok")
"""


@pytest.mark.parametrize("planner", ["auto", "chunks", "rows"])
def test_read_tables_inside_destination_are_read_before_any_write(planner):
    p = TMP / "u64.h5"
    if not p.exists():
        data = np.array([2, 100, 5, 6, 64, 10**9, 3, 2**63], np.uint64)
        with h5py.File(p, "w") as f:
            f.create_dataset("contiguous", data=data)
            f.create_dataset("chunked", data=data, chunks=(2,))
            f.create_dataset("gzip", data=data, chunks=(2,), compression="gzip")
    r = run_planner_child(CHILD, [p], planner)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def _two_maps(tmp, n):
    """Two ``np.memmap`` s of one file of ``n`` uint64: different addresses, the same memory
    (an address comparison sees no overlap)."""
    path = tmp / f"two-maps-{n}.bin"
    np.zeros(n, np.uint64).tofile(path)
    a = np.memmap(path, np.uint64, "r+", shape=(n,))
    b = np.memmap(path, np.uint64, "r+", shape=(n,))
    assert a.ctypes.data != b.ctypes.data
    return a, b


def _tryout_tables(a, b):
    """The tryout's case: the destination is ``a[:64]``, the 2 x 1 tables ``b[0:6]`` (the same
    memory as ``a[0:6]``); row 0 writes over row 1's dst_start (40 -> 100, past dst)."""
    a[:] = 0
    a[:6] = [0, 0, 2, 40, 2, 1]
    return [b[2 * k : 2 * k + 2].reshape(2, 1) for k in range(3)]


def test_copy_tables_in_a_second_memmap_of_the_destination_are_a_snapshot(tmp_path):
    a, b = _two_maps(tmp_path, 512)
    tabs = _tryout_tables(a, b)
    vh5.copy_many_slices(np.array([2, 100], np.uint64), a[:64], *tabs)
    assert list(a[:6]) == [0, 0, 2, 100, 2, 1]
    assert a[40] == 2, "row 1 uses its dst_start as passed (40)"
    assert not a[64:].any(), "written outside dst"


@pytest.mark.parametrize("name", ["contiguous", "chunked", "gzip"])
def test_read_tables_in_a_second_memmap_of_the_destination_are_a_snapshot(tmp_path, name):
    p = tmp_path / "u64.h5"
    data = np.array([2, 100, 5, 6], np.uint64)
    with h5py.File(p, "w") as f:
        f.create_dataset("contiguous", data=data)
        f.create_dataset("chunked", data=data, chunks=(2,))
        f.create_dataset("gzip", data=data, chunks=(2,), compression="gzip")
    a, b = _two_maps(tmp_path, 512)
    tabs = _tryout_tables(a, b)
    with vh5.File(p) as f:
        vh5.read_many_slices(f[name], a[:64], *tabs)
    assert list(a[:6]) == [0, 0, 2, 100, 2, 1]
    assert a[40] == 2, "row 1 uses its dst_start as passed (40)"
    assert not a[64:].any(), "written outside dst"


def test_write_tables_in_a_memmap_are_used_as_passed(tmp_path):
    p = tmp_path / "w.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=np.zeros(64, np.uint64), chunks=(8,))
    a, b = _two_maps(tmp_path, 512)
    tabs = _tryout_tables(a, b)
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(np.array([7, 9], np.uint64), f["x"], *tabs)
    want = np.zeros(64, np.uint64)
    want[[2, 3, 40]] = [7, 9, 7]
    with h5py.File(p) as f:
        np.testing.assert_array_equal(f["x"][:], want)
