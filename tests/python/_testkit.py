"""Small helpers several test modules share (h5py filter keywords, threads, child processes
under a planner, libhdf5's fletcher32)."""

import os
import subprocess
import sys
import threading


def h5py_filter_kwargs(name):
    """``h5py.create_dataset`` keywords of a filter pipeline named as the tests name them:
    "gzip", "shuffle_gzip", "fletcher32"; anything else: no filter."""
    return {
        "gzip": {"compression": "gzip"},
        "shuffle_gzip": {"compression": "gzip", "shuffle": True},
        "fletcher32": {"fletcher32": True},
    }.get(name, {})


def run_threads(target, args):
    """Run ``target(*a)`` on one thread per entry of ``args``; return when all have ended
    (the caller collects their errors: an exception in a thread does not propagate)."""
    ts = [threading.Thread(target=target, args=a) for a in args]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def run_planner_child(code, args, planner, timeout=300, extra_env=None):
    """Run the Python source ``code`` with ``args`` in a fresh interpreter under
    ``VH5_PLANNER=planner`` (read once per process), this directory and the in-tree package
    importable, plus the variables ``extra_env``; return the finished process (the caller
    checks its returncode and output)."""
    import vh5

    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(os.path.dirname(vh5.__file__))
    env = dict(
        os.environ,
        VH5_PLANNER=planner,
        PYTHONPATH=os.pathsep.join(filter(None, [here, pkg, os.environ.get("PYTHONPATH")])),
        **(extra_env or {}),
    )
    argv = [sys.executable, "-c", code, *map(str, args)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=here)


def fletcher32(data: bytes) -> bytes:
    """libhdf5's ``H5_checksum_fletcher32`` of ``data`` (16-bit big-endian words, sums folded
    every 360 words), as the fletcher32 filter stores it after the data (4 bytes)."""
    s1 = s2 = 0
    n, i, words = len(data), 0, len(data) // 2
    while words:
        blk = min(words, 360)
        words -= blk
        for _ in range(blk):
            s1 += (data[i] << 8) | data[i + 1]
            s2 += s1
            i += 2
        s1, s2 = (s1 & 0xFFFF) + (s1 >> 16), (s2 & 0xFFFF) + (s2 >> 16)
    if n % 2:
        s1 += data[i] << 8
        s2 += s1
        s1, s2 = (s1 & 0xFFFF) + (s1 >> 16), (s2 & 0xFFFF) + (s2 >> 16)
    s1, s2 = (s1 & 0xFFFF) + (s1 >> 16), (s2 & 0xFFFF) + (s2 >> 16)
    return ((s2 << 16) | s1).to_bytes(4, "little")


def encode_masked(d, raw: bytes, mask: int) -> bytes:
    """The stored bytes of a chunk of `d` with the filters of `mask` skipped (pipeline order
    read from the dataset's creation property list): shuffle, deflate and fletcher32 only."""
    import zlib

    import h5py
    import numpy as np

    plist = d.id.get_create_plist()
    b = raw
    for i in range(plist.get_nfilters()):
        fid, _, cd, _ = plist.get_filter(i)
        if mask & (1 << i):
            continue
        if fid == h5py.h5z.FILTER_SHUFFLE:
            b = np.frombuffer(b, "u1").reshape(-1, d.dtype.itemsize).T.tobytes()
        elif fid == h5py.h5z.FILTER_DEFLATE:
            b = zlib.compress(b, cd[0] if cd else 6)
        elif fid == h5py.h5z.FILTER_FLETCHER32:
            b = b + fletcher32(b)
        else:
            raise AssertionError(f"filter {fid}")
    return b


def draw_geometry_rows(draw, st, max_chunk, max_rows):
    """Hypothesis draws (``draw``, strategies module ``st``) of a 1-D to 3-D dataset shape,
    its chunk shape (at most ``max_chunk`` per axis, an edge chunk likely) and 1 to
    ``max_rows`` rows ``(dst_start, count)`` inside it."""
    n = draw(st.integers(1, 3))
    chunks = [draw(st.integers(1, max_chunk)) for _ in range(n)]
    shape = [draw(st.integers(c, 3 * c + 2)) for c in chunks]
    rows = []
    for _ in range(draw(st.integers(1, max_rows))):
        s = [draw(st.integers(0, x - 1)) for x in shape]
        rows.append((s, [draw(st.integers(1, x - si)) for x, si in zip(shape, s)]))
    return tuple(shape), tuple(chunks), rows


def touched_chunks(rows, chunks):
    """First elements of the chunks (shape ``chunks``) the rows ``(dst_start, count)`` reach."""
    import itertools

    out = set()
    for start, ct in rows:
        rng = [range(s // c, (s + k - 1) // c + 1) for s, k, c in zip(start, ct, chunks)]
        out |= {tuple(i * c for i, c in zip(ix, chunks)) for ix in itertools.product(*rng)}
    return out
