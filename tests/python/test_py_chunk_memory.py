"""Memory bound of reads of big compressed chunks: the extra memory of a call stays within
(threads + 1) x the decoded chunk size (+ O(rows)), whatever the number of chunks (it was
~7 chunks with 2 threads: queued jobs and recycled buffers each held a whole chunk). Peak RSS
is measured in a child process (its VmHWM, before and after the read: getrusage's ru_maxrss
carries over the RSS of the process that spawned it, which can hide the read's growth)."""

import os
import subprocess
import sys
import textwrap
import zlib

import h5py
import numpy as np
import pytest

CHUNK_ROWS, COLS = 1024, 4096  # 32 MiB of float64 per chunk
NCHUNKS = 8

CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import vh5
    path, threads = sys.argv[1], int(sys.argv[2])
    vh5.set_num_threads(threads)
    f = vh5.File(path)
    d = f.dataset("x")
    out = np.zeros((2 * {n}, 4))
    src = np.array([[k * {rows} + 5, 7] for k in range({n})] * 2, np.uint64)
    dst = np.array([[k, 0] for k in range(2 * {n})], np.uint64)
    cnt = np.tile(np.array([[1, 4]], np.uint64), (2 * {n}, 1))
    def hwm():
        return int([l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1])
    before = hwm()
    vh5.read_many_slices(d, out, src, dst, cnt)
    assert (out == 1.5).all()
    print(before, hwm())
    """
).format(n=NCHUNKS, rows=CHUNK_ROWS)


@pytest.fixture(scope="module")
def big_chunks(tmp_path_factory):
    p = tmp_path_factory.mktemp("bigchunks") / "big.h5"
    n = CHUNK_ROWS * COLS
    planes = np.ascontiguousarray(np.full(n, 1.5, "<f8").view(np.uint8).reshape(n, 8).T).tobytes()
    z = zlib.compress(planes, 6)
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        d = f.create_dataset(
            "x",
            shape=(NCHUNKS * CHUNK_ROWS, COLS),
            dtype="<f8",
            chunks=(CHUNK_ROWS, COLS),
            compression="gzip",
            shuffle=True,
        )
        for k in range(NCHUNKS):
            d.id.write_direct_chunk((k * CHUNK_ROWS, 0), z, 0)
    return p


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_gzip_shuffle_big_chunks_peak_memory_bounded(big_chunks, threads):
    # The child imports the same vh5 package as this process (conftest.py's sys.path).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(big_chunks), str(threads)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    before, after = map(int, r.stdout.split())
    chunk_kib = CHUNK_ROWS * COLS * 8 // 1024
    bound = (threads + 1) * chunk_kib + 16 * 1024  # + 16 MiB slack (rows, allocator)
    assert after - before <= bound, f"peak grew by {(after - before) // 1024} MiB, bound {bound // 1024} MiB"


MID_ROWS, MID_COLS, MID_CHUNKS = 512, 1024, 32  # 4 MiB of float64 per chunk: below the 8 MiB "big" mark


@pytest.fixture(scope="module")
def mid_chunks(tmp_path_factory):
    p = tmp_path_factory.mktemp("midchunks") / "mid.h5"
    z = zlib.compress(np.full(MID_ROWS * MID_COLS, 1.5, "<f8").tobytes(), 1)
    with h5py.File(p, "w", libver=("earliest", "v110")) as f:
        d = f.create_dataset(
            "x", shape=(MID_CHUNKS * MID_ROWS, MID_COLS), dtype="<f8", chunks=(MID_ROWS, MID_COLS), compression="gzip"
        )
        for k in range(MID_CHUNKS):
            d.id.write_direct_chunk((k * MID_ROWS, 0), z, 0)
    return p


@pytest.mark.parametrize("threads", [2, 4])
def test_gzip_chunks_below_8_mib_peak_memory_within_documented_batches(mid_chunks, threads):
    """Chunks below 8 MiB are queued and recycled: the README's bound is (9 W + 3) batches
    (here one chunk each) plus W + 1 decoder spares, W = threads - 1 workers (it once claimed
    (threads + 1) chunks for every size: +157 MiB measured against 38 for 7.6 MiB chunks)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = CHILD.replace(f"range({NCHUNKS})", f"range({MID_CHUNKS})").replace(f"k * {CHUNK_ROWS}", f"k * {MID_ROWS}")
    child = child.replace(f"(2 * {NCHUNKS}", f"(2 * {MID_CHUNKS}")
    r = subprocess.run(
        [sys.executable, "-c", child, str(mid_chunks), str(threads)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    before, after = map(int, r.stdout.split())
    w = threads - 1
    bound = ((9 * w + 3) + (w + 1)) * MID_ROWS * MID_COLS * 8 // 1024 + 16 * 1024  # + 16 MiB slack
    assert after - before <= bound, f"peak grew by {(after - before) // 1024} MiB, bound {bound // 1024} MiB"
