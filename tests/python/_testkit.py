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


def run_planner_child(code, args, planner, timeout=300):
    """Run the Python source ``code`` with ``args`` in a fresh interpreter under
    ``VH5_PLANNER=planner`` (read once per process), this directory and the in-tree package
    importable; return the finished process (the caller checks its returncode and output)."""
    import vh5

    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(os.path.dirname(vh5.__file__))
    env = dict(
        os.environ,
        VH5_PLANNER=planner,
        PYTHONPATH=os.pathsep.join(filter(None, [here, pkg, os.environ.get("PYTHONPATH")])),
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
