"""The `vh5` command-line tool refusing bad inputs early with clear messages: make-sample's
shape and chunk (bounded memory, never an abort), slice-table integers, payload options and
empty input, `read --save` paths.

The binary comes from env VH5_CLI (default target/release/vh5); files are written and checked
with h5py and numpy. No test allocates more than a few tens of MB: the huge shapes are refused
before anything is allocated, and the bounded-memory test runs under a tight RLIMIT_AS.
"""

import os
import resource
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("VH5_CLI", str(REPO / "target" / "release" / "vh5"))
if not os.path.exists(CLI):
    pytest.skip(f"{CLI} not built (cargo build --release, or set VH5_CLI)", allow_module_level=True)
h5py = pytest.importorskip("h5py")


def run(*args, stdin=None, limit_as=None):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    return subprocess.run(
        [CLI, *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        preexec_fn=pre if limit_as else None,
    )


def _sample(shape, rows=slice(None)):
    i = np.arange(shape[0], dtype="f8")[rows, None]
    j = np.arange(shape[1], dtype="f8")[None, :]
    return np.sin(i / 100.0) + np.cos(j / 77.0)


def test_make_sample_shape_overflowing_64_bits_is_refused_not_aborted(tmp_path):
    # 10^11 x 10^11 x 8 bytes: the tool collected this into one Vec and died of SIGABRT
    out = tmp_path / "s.h5"
    r = run("make-sample", out, "--shape", "100000000000,100000000000")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("vh5: VH5_ERR_INVALID_ARGUMENT: --shape 100000000000,100000000000:"), r.stderr
    assert "overflow 64 bits" in r.stderr and not out.exists(), r.stderr


def test_make_sample_shape_larger_than_the_free_disk_is_refused_before_creating(tmp_path):
    # representable (8e18 bytes) but no file system holds it: refused before the file exists
    out = tmp_path / "s.h5"
    r = run("make-sample", out, "--shape", "1000000000,1000000000")
    assert r.returncode == 1 and "VH5_ERR_IO: --shape 1000000000,1000000000" in r.stderr, r.stderr
    assert f"bytes free on the file system of {out}" in r.stderr and not out.exists(), r.stderr


def _smallest_working_limit(tmp_path):
    """The smallest RLIMIT_AS (8 MB steps) under which a tiny make-sample runs: the
    address space the process needs for its libraries, whatever the machine."""
    for mb in range(16, 1025, 8):
        if (
            run("make-sample", tmp_path / "tiny.h5", "--shape", "10,10", "--chunk", "5,5", limit_as=mb << 20).returncode
            == 0
        ):
            return mb << 20
    pytest.skip("make-sample does not run under 1 GB of address space here")


def test_make_sample_memory_is_bounded_by_a_tile_not_the_dataset(tmp_path):
    """A 128 MB dataset written under an address-space limit 40 MB above the tool's baseline:
    the values are written in tiles of at most 8 MiB (the tool held all 128 MB before)."""
    limit = _smallest_working_limit(tmp_path) + (40 << 20)
    out = tmp_path / "s.h5"
    shape = (4000, 4000)
    r = run("make-sample", out, "--shape", "4000,4000", "--chunk", "300,700", limit_as=limit)
    assert r.returncode == 0, (r.returncode, r.stderr[-500:])
    with h5py.File(out, "r") as f:
        d = f["data"]
        assert d.shape == shape and d.chunks == (300, 700) and d.compression == "gzip" and d.shuffle
        # (in blocks of rows: the whole comparison held ~700 MB in the test process)
        for r0 in range(0, shape[0], 500):
            np.testing.assert_array_equal(d[r0 : r0 + 500], _sample(shape, slice(r0, r0 + 500)))


def test_make_sample_without_room_for_a_tile_fails_cleanly(tmp_path):
    # just enough address space to start, not for the 8 MiB tile: an error, never SIGABRT
    limit = _smallest_working_limit(tmp_path)
    r = run("make-sample", tmp_path / "s.h5", "--shape", "4000,4000", limit_as=limit)
    assert r.returncode in (0, 1), (r.returncode, r.stderr)
    if r.returncode == 1:
        assert r.stderr.startswith("vh5: VH5_ERR_"), r.stderr


@pytest.mark.parametrize("shape,chunk", [((7, 5), (3, 2)), ((1, 300), (1, 300)), ((250, 3), (100, 3))])
def test_make_sample_values_match_numpy_over_tile_edges(tmp_path, shape, chunk):
    out = tmp_path / "s.h5"
    r = run("make-sample", out, "--shape", ",".join(map(str, shape)), "--chunk", ",".join(map(str, chunk)))
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["data"][...], _sample(shape))


def test_make_sample_chunk_larger_than_shape_names_the_axis(tmp_path):
    out = tmp_path / "s.h5"
    r = run("make-sample", out, "--shape", "10,10", "--chunk", "20,20")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert (
        "VH5_ERR_INVALID_ARGUMENT: --chunk 20,20: the chunk is 20 along axis 0, larger than the shape's 10" in r.stderr
    )
    r = run("make-sample", out, "--shape", "10,10", "--chunk", "5,11")
    assert r.returncode == 1 and "11 along axis 1" in r.stderr, r.stderr
    r = run("make-sample", out, "--shape", "100000,100000", "--chunk", "50000,50000")
    assert r.returncode == 1 and "4 GiB" in r.stderr and not out.exists(), r.stderr


def test_libhdf5_errors_give_the_innermost_frame_first(tmp_path):
    # H5Fcreate in a missing directory: the reason (errno, 'No such file or directory') is in
    # libhdf5's innermost frame; it follows the context, then the frames innermost first
    r = run("make-sample", tmp_path / "missing" / "s.h5", "--shape", "10,10", "--chunk", "5,5")
    assert r.returncode == 1, r.stderr
    head, _, frames = r.stderr.partition("; libhdf5 error stack, innermost frame first:")
    assert "No such file or directory" in head and head.startswith("vh5: VH5_ERR_HDF5: creating "), r.stderr
    numbers = [int(ln.split(":")[0].strip().lstrip("#")) for ln in frames.splitlines() if ln.startswith("  #")]
    assert len(numbers) >= 2 and numbers == sorted(numbers, reverse=True) and numbers[-1] == 0, r.stderr


@pytest.fixture
def grid(tmp_path):
    p = tmp_path / "g.h5"
    with h5py.File(p, "w") as f:
        f["d"] = np.arange(100, dtype="<f8")
    return p


def test_table_integer_above_u64_max_is_named_as_such(grid, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("0 0 1\n0 0 99999999999999999999\n")
    r = run("read", grid, "d", "--table", t)
    want = f'{t} line 2: data row 1, column 3 (count_0): "99999999999999999999" is an integer above 2^64 - 1'
    assert r.returncode == 1 and want in r.stderr and "float" not in r.stderr, r.stderr


def test_table_count_past_the_dataset_is_out_of_bounds_naming_the_row(grid, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text(f"0 0 1\n0 0 {2**64 - 1}\n")
    r = run("read", grid, "d", "--table", t)
    assert r.returncode == 1 and r.stderr.startswith("vh5: VH5_ERR_OUT_OF_BOUNDS: row 1 axis 0:"), r.stderr
    assert "NO_MEMORY" not in r.stderr and "extent 100" in r.stderr, r.stderr


def test_table_with_a_leading_utf8_bom_reads(grid, tmp_path):
    t = tmp_path / "t.csv"
    t.write_bytes(b"\xef\xbb\xbfsrc,dst,count\n3,0,4\n")
    out = tmp_path / "o.npy"
    r = run("read", grid, "d", "--table", t, "--save", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out), np.arange(3, 7, dtype="<f8"))


def test_read_save_path_is_checked_before_reading(grid, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("0 0 1\n")
    bad = tmp_path / "missing" / "x.npy"
    r = run("read", grid, "d", "--table", t, "--save", bad)
    assert r.returncode == 1 and f"VH5_ERR_IO: --save {bad}: cannot create the file" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout  # nothing was read (no rows, no summary)
    # a failing read leaves no new file behind, and an existing one untouched
    new = tmp_path / "new.npy"
    r = run("read", grid, "nosuch", "--table", t, "--save", new)
    assert r.returncode == 1 and not new.exists(), r.stderr
    old = tmp_path / "old.npy"
    old.write_bytes(b"keep")
    r = run("read", grid, "nosuch", "--table", t, "--save", old)
    assert r.returncode == 1 and old.read_bytes() == b"keep", r.stderr
    # overwriting a longer file leaves a valid .npy
    old.write_bytes(b"x" * 10000)
    assert run("read", grid, "d", "--table", t, "--save", old).returncode == 0
    np.testing.assert_array_equal(np.load(old), [0.0])


@pytest.mark.parametrize("value", ["abc", "99999999999999999999999", "-1"])
def test_payload_bad_values_option_is_named(value):
    r = run("payload", "--values", value)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(
        f'vh5 payload: --values expects a non-negative integer up to {2**64 - 1} or `all`, got "{value}"'
    ), r.stderr
    assert "usage: vh5 payload" in r.stderr


def test_payload_empty_input_is_malformed_as_the_library_says():
    vh5 = pytest.importorskip("vh5")
    with pytest.raises(vh5.Error) as e:
        vh5.decode_payload(b"")
    r = run("payload", stdin="")
    assert r.returncode == 1, r.stdout
    assert e.value.status_name == "VH5_ERR_MALFORMED", e.value
    assert r.stdout == f"-: VH5_ERR_MALFORMED: {e.value.message}\n", (r.stdout, e.value.message)
    assert "input is empty input" not in r.stdout
