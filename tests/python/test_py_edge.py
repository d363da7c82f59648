"""Edge cases found by a new-user trial: each must give a clear error, not a silent value."""

import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

import vh5  # noqa: E402
from _tmpdirs import module_tmp  # noqa: E402
from vh5 import _h5py  # noqa: E402

#: Behaviour of a linked build (its own libhdf5 reopens h5py's files by path); the h5py-bound
#: build reads h5py datasets by id instead (tests/python/test_py_h5py_bound.py).
linked_only = pytest.mark.skipif(
    vh5._lib.lib().h5py_bound, reason="linked-build behaviour; the h5py-bound build uses h5py datasets by id"
)

h5py = pytest.importorskip("h5py")
TMP = module_tmp("vh5-py-edge-")


def test_null_dataspace_is_refused_not_read_as_a_scalar():
    p = str(TMP / "null.h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("null", data=h5py.Empty("f8"))
        f.create_dataset("scalar", data=2.5)
    with vh5.File(p) as f:
        out = np.full((), -1.0)
        with pytest.raises(vh5.UnsupportedError, match="null dataspace"):
            vh5.read_many_slices(
                f["null"], out, np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64)
            )
        assert out == -1.0  # untouched
        # a real scalar still reads its one element
        vh5.read_many_slices(
            f["scalar"], out, np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64), np.zeros((1, 0), np.uint64)
        )
        assert out == 2.5


@linked_only
def test_h5py_dataset_backed_by_a_python_file_object_is_explained():
    bio = io.BytesIO()
    with h5py.File(bio, "w") as f:
        f["x"] = np.arange(10.0)
    with h5py.File(bio, "r") as f:
        out = np.zeros(3)
        with pytest.raises(vh5.Error, match="file-like|in-memory|cannot be reopened"):
            vh5.read_many_slices(f["x"], out, [2], [0], [3])


def test_closing_a_writable_file_flushes_even_while_a_dataset_lives():
    p = str(TMP / "flush.h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=np.zeros((4, 4)), chunks=(2, 2))
    with vh5.File(p, mode="r+") as f:
        d = f["x"]  # stays alive after the with block: libhdf5 keeps the file open
        vh5.write_many_slices(np.arange(4.0).reshape(2, 2), d, [0, 0], [1, 1], [2, 2])
    # h5py (its own libhdf5) sees the data although `d` still holds the file open
    # vh5's libhdf5 still holds the file (and its write lock) through `d`: h5py reads it
    # with locking off, as documented for files open for writing elsewhere.
    with h5py.File(p, "r", locking=False) as g:
        got = g["x"][()]
    want = np.zeros((4, 4))
    want[1:3, 1:3] = [[0, 1], [2, 3]]
    np.testing.assert_array_equal(got, want)
    d.close()


@linked_only
def test_h5py_in_memory_core_file_is_refused_not_read_from_disk(tmp_path, monkeypatch):
    """The trial's repro: an h5py core-driver file named mem.h5 while a *different* mem.h5
    holding zeros sits on disk: vh5 must not read the on-disk zeros."""
    monkeypatch.chdir(tmp_path)
    with h5py.File("mem.h5", "w") as f:
        f["tas"] = np.zeros(10)
    with h5py.File("mem.h5", "w", driver="core", backing_store=False) as mem:
        mem["tas"] = np.arange(1.0, 11.0)
        assert mem.driver == "core"
        out = np.full(10, -7.0)
        with pytest.raises(vh5.UnsupportedError) as ei:
            vh5.read_many_slices(mem["tas"], out, [0], [0], [10])
        msg = str(ei.value)
        assert "in-memory (core driver)" in msg and "'mem.h5'" in msg and "/tas" in msg, msg
        np.testing.assert_array_equal(out, np.full(10, -7.0))  # untouched: no zeros from disk
        # writes never accept an h5py dataset (whatever its driver)
        with pytest.raises(TypeError, match="h5py.Dataset"):
            vh5.write_many_slices(np.ones(10), mem["tas"], [0], [0], [10])
    with h5py.File("mem.h5", "r") as f:
        np.testing.assert_array_equal(f["tas"][()], np.zeros(10))  # the disk file is untouched
    # core driver over an existing file (read into memory) is refused too: its content may
    # differ from the disk once written, and vh5 cannot tell
    with h5py.File("mem.h5", "r", driver="core") as mem:
        with pytest.raises(vh5.UnsupportedError, match="core driver"):
            vh5.read_many_slices(mem["tas"], out, [0], [0], [10])


@linked_only
def test_h5py_drivers_other_than_one_file_on_disk_are_refused(tmp_path):
    data = np.arange(12.0)
    # family: several member files, the name is a printf pattern
    fam = str(tmp_path / "fam%d.h5")
    with h5py.File(fam, "w", driver="family", memb_size=1 << 20) as f:
        f["x"] = data
        assert f.driver == "family"
        with pytest.raises(vh5.UnsupportedError, match="driver 'family'"):
            vh5.read_many_slices(f["x"], np.zeros(12), [0], [0], [12])
    # split: metadata and raw data in two files (h5py reports the driver as 'unknown')
    split = str(tmp_path / "split")
    with h5py.File(split, "w", driver="split") as f:
        f["x"] = data
        drv = f.driver
        assert drv not in _h5py.REOPENABLE_DRIVERS
        with pytest.raises(vh5.UnsupportedError, match=f"driver {drv!r}"):
            vh5.read_many_slices(f["x"], np.zeros(12), [0], [0], [12])
    # the single-file drivers are read, with the right values
    p = str(tmp_path / "plain.h5")
    with h5py.File(p, "w") as f:
        f["x"] = data
    for drv in ("sec2", "stdio"):
        with h5py.File(p, "r", driver=drv) as f:
            assert f.driver == drv
            out = np.zeros(5)
            vh5.read_many_slices(f["x"], out, [3], [0], [5])
            np.testing.assert_array_equal(out, data[3:8])


def test_embedded_nul_bytes_are_refused_not_truncated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with h5py.File("nul.h5", "w") as f:
        f["tas"] = np.arange(3.0)
        f["tas\x01EVIL"] = np.arange(3.0)  # a name that differs from "tas" after the cut point
    for bad in ("nul.h5\0garbage", b"nul.h5\0garbage", Path("nul.h5\0garbage")):
        with pytest.raises(ValueError, match="embedded null byte in path"):
            vh5.File(bad)
    with pytest.raises(TypeError, match="path must be str, bytes or os.PathLike, not int"):
        vh5.File(3)
    with vh5.File(b"nul.h5") as f, vh5.File(Path("nul.h5")) as g:
        assert f["tas"].shape == g["tas"].shape == (3,)
        assert f[b"tas"].name == "/tas"
        for bad in ("tas\0EVIL", b"tas\0EVIL"):
            with pytest.raises(ValueError, match="embedded null byte in object name"):
                f[bad]
            with pytest.raises(ValueError, match="embedded null byte in dataset name"):
                f.dataset(bad)
        with pytest.raises(TypeError, match="object name must be str or bytes, not int"):
            f[3]
        # bytes that are not UTF-8 are a name like any other (test_py_non_utf8_names.py):
        # looked up as they are, and this file has no such link
        with pytest.raises(KeyError, match=r"no dataset `/\\xff`"):
            f[b"\xff"]


@linked_only
def test_vh5_file_of_a_file_h5py_holds_for_writing_gives_the_locking_hint(tmp_path):
    """Run in a child process with file locking on (other test modules turn it off for this
    process at import, and libhdf5 reads the variable once)."""
    import subprocess

    code = f"""
import os, sys, numpy as np, h5py
if os.environ.get("VH5_TEST_INSTALLED") != "1":
    sys.path.insert(0, {str(REPO / "bindings" / "python")!r})
import vh5
p = {str(tmp_path / "held.h5")!r}
with h5py.File(p, "w") as hf:
    hf["x"] = np.arange(3.0)
    hf.flush()
    try:
        vh5.File(p)
        raise SystemExit("opened a file h5py holds for writing")
    except vh5.Error as e:
        msg = str(e)
        assert "unable to lock" in msg and "HDF5_USE_FILE_LOCKING=FALSE" in msg, msg
    try:  # the same through h5py's dataset object (vh5 reopens the file by path)
        vh5.read_many_slices(hf["x"], np.zeros(3), [0], [0], [3])
        raise SystemExit("read a file h5py holds for writing")
    except vh5.Error as e:
        assert "HDF5_USE_FILE_LOCKING=FALSE" in str(e), str(e)
with vh5.File(p) as f:  # released: opens
    assert f["x"].shape == (3,)
try:
    vh5.File({str(tmp_path / "missing_block.h5")!r})
except vh5.Error as e:
    assert "HDF5_USE_FILE_LOCKING" not in str(e), str(e)  # other failures get no hint
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "HDF5_USE_FILE_LOCKING"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.strip() == "ok", r.stdout + r.stderr


def test_destination_strides_that_do_not_nest_refused_without_claiming_overlap():
    """A (2, 4) view with strides (40, 24) has 8 distinct offsets, none sharing a byte, but
    its strides do not nest: vh5 refuses it (its check is conservative) and says so, rather
    than claiming that indices share bytes (session-15 tryout)."""
    buf = np.zeros(15, np.float64)
    dst = np.ndarray((2, 4), dtype=np.float64, buffer=buf.data, strides=(40, 24))
    with pytest.raises(vh5.InvalidArgumentError, match="may share bytes.*strides nest.*contiguous array"):
        vh5.copy_many_slices(np.ones((2, 4)), dst, src_start=[0, 0], dst_start=[0, 0], count=[2, 4])
    assert not buf.any()  # nothing written


@linked_only
def test_swmr_file_being_written_is_refused_without_h5clear_advice(tmp_path):
    """A file h5py writes in SWMR mode (marked open for writing in its superblock) is refused by
    vh5's own libhdf5 as "already open for write"; libhdf5's advice to run h5clear (which would
    corrupt a file being written) is replaced by what the mark means and what vh5 lacks."""
    p = tmp_path / "swmr.h5"
    with h5py.File(p, "w", libver=("v110", "v110")) as hf:
        hf.create_dataset("x", data=np.arange(10.0), maxshape=(None,), chunks=(5,))
        hf.swmr_mode = True
        with pytest.raises(vh5.HDF5Error) as e:
            vh5.File(p)
    msg = str(e.value)
    assert "already open for write" in msg and "h5clear file>" not in msg, msg
    assert "open for writing by another program" in msg and "SWMR-reader" in msg, msg
