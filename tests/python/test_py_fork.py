"""fork() while other threads are inside vh5 calls: the child must be able to use vh5.

Before the fix a child forked while another thread held vh5's libhdf5 lock (or one of vh5's
own mutexes, or had worker threads running) inherited it locked, and its first vh5 call
waited forever. Now a fork waits until no vh5 call is in flight (``pthread_atfork``
handlers in libvh5). The parent's threads read gzip chunks with worker threads, open and
close files, write gzip chunks and decode payloads, back to back; the children open the
file, read through a fresh and an inherited handle, decode a payload and write, and must
get the right values and exit. A child that hangs is killed by ``SIGALRM``; the loop stops
at the first failure, so a regression costs one alarm, not one per fork.

Files are written by h5py with libver=('earliest', 'v110') (vh5 links libhdf5 1.10).
"""

import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
cbor2 = pytest.importorskip("cbor2")
import vh5  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")

LIBVER = ("earliest", "v110")
SHAPE = (400, 400)
WANT = np.arange(SHAPE[0] * SHAPE[1], dtype=np.float64).reshape(SHAPE)
VALS = np.arange(64, dtype=np.int32) * 7
BODY = cbor2.dumps({"bytes": VALS.tobytes(), "dtype": "int32", "shape": [8, 8], "byte_order": "little"})
CHILD_ALARM_S = 20  # a child still running after this is killed: counted as hung
FORKS = 30


def _make_files(tmp_path, n_children):
    src = str(tmp_path / "src.h5")
    with h5py.File(src, "w", libver=LIBVER) as f:
        f.create_dataset("x", data=WANT, chunks=(20, 20), compression="gzip")
    scratch = str(tmp_path / "scratch.h5")
    with h5py.File(scratch, "w", libver=LIBVER) as f:
        f.create_dataset("y", data=np.zeros(SHAPE), chunks=(20, 20), compression="gzip")
    children = []
    for i in range(n_children):
        p = str(tmp_path / f"child{i}.h5")
        with h5py.File(p, "w", libver=LIBVER) as f:
            f.create_dataset("z", data=np.zeros((40, 40)), chunks=(10, 10), compression="gzip")
        children.append(p)
    return src, scratch, children


class _Busy:
    """Threads that keep calling vh5 until stopped; errors are collected."""

    def __init__(self, src, scratch):
        self.stop = threading.Event()
        self.errors = []
        self.calls = 0
        self.src_file = vh5.File(src)
        self.src = self.src_file["x"]
        self.scratch_file = vh5.File(scratch, "r+")
        self.scratch = self.scratch_file["y"]
        work = [self._read_many, self._open_read_close, self._write, self._decode]
        self.threads = [threading.Thread(target=self._loop, args=(w, k)) for k, w in enumerate(work)]

    def _loop(self, work, seed):
        rng = np.random.default_rng(seed)
        try:
            while not self.stop.is_set():
                work(rng)
                self.calls += 1
        except Exception as e:  # pragma: no cover - reported by the test
            self.errors.append(repr(e))

    def _read_many(self, rng):
        # many rows over gzip chunks: vh5's worker threads decode outside the libhdf5 lock
        n = 500
        st = rng.integers(0, SHAPE[0] - 8, (n, 2))
        out = np.empty((n * 8, 8))
        vh5.read_many_slices(
            self.src, out, src_start=st, dst_start=np.c_[np.arange(n) * 8, np.zeros(n, int)], count=[8, 8]
        )
        i = int(rng.integers(n))
        assert np.array_equal(out[i * 8 : i * 8 + 8], WANT[st[i, 0] : st[i, 0] + 8, st[i, 1] : st[i, 1] + 8])

    def _open_read_close(self, rng):
        # almost all inside the libhdf5 lock
        with vh5.File(self.src_file.filename) as f, f["x"] as d:
            a, b = (int(v) for v in rng.integers(0, SHAPE[0] - 3, 2))
            assert np.array_equal(d[a : a + 3, b : b + 3], WANT[a : a + 3, b : b + 3])

    def _write(self, rng):
        n = 50
        st = rng.integers(0, SHAPE[0] - 4, (n, 2))
        vh5.write_many_slices(
            np.ones((n * 4, 4)),
            self.scratch,
            src_start=np.c_[np.arange(n) * 4, np.zeros(n, int)],
            dst_start=st,
            count=[4, 4],
        )

    def _decode(self, rng):
        p = vh5.decode_payload(BODY)
        assert np.array_equal(p.data, VALS.reshape(8, 8))

    def __enter__(self):
        for t in self.threads:
            t.start()
        while self.calls < 8:  # every kind of call is under way
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()
        self.src.close()
        self.src_file.close()
        self.scratch.close()
        self.scratch_file.close()
        assert self.errors == []


def _child_work(src, inherited, target, i):
    """What a forked child does; returns True when every value was right."""
    with vh5.File(src) as f, f["x"] as d:
        a = (7 * i) % (SHAPE[0] - 5)
        ok = np.array_equal(d[a : a + 5, 10:15], WANT[a : a + 5, 10:15])
    ok &= np.array_equal(inherited[100:110, 100:110], WANT[100:110, 100:110])
    out = np.empty((50, 8))
    vh5.read_many_slices(
        inherited, out, src_start=[[i, 0], [200, 300]] * 5, dst_start=[[k * 5, 0] for k in range(10)], count=[5, 8]
    )
    ok &= np.array_equal(out[:5], WANT[i : i + 5, 0:8]) and np.array_equal(out[5:10], WANT[200:205, 300:308])
    ok &= np.array_equal(vh5.decode_payload(BODY).data, VALS.reshape(8, 8))
    with vh5.File(target, "r+") as f, f["z"] as z:
        vh5.write_many_slices(np.full((3, 3), float(i)), z, src_start=[0, 0], dst_start=[5, 5], count=[3, 3])
        ok &= np.array_equal(z[4:9, 4:9][1:4, 1:4], np.full((3, 3), float(i)))
    return bool(ok)


def test_fork_while_another_thread_reads_child_works(tmp_path):
    """os.fork() at random moments while 4 threads read, open/close, write and decode: every
    child reads the right values, decodes, writes and exits within the alarm."""
    src, scratch, targets = _make_files(tmp_path, FORKS)
    results = []
    with _Busy(src, scratch) as busy:
        rng = np.random.default_rng(5)
        for i in range(FORKS):
            time.sleep(float(rng.uniform(0.002, 0.03)))
            pid = os.fork()
            if pid == 0:  # child: nothing but vh5 and _exit
                code = 1
                try:
                    signal.alarm(CHILD_ALARM_S)
                    code = 0 if _child_work(src, busy.src, targets[i], i) else 3
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            results.append(status)
            if status != 0:
                break
    what = [
        ("hung (SIGALRM)" if os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGALRM else f"status {s:#x}")
        for s in results
        if s != 0
    ]
    assert what == [], f"child {len(results) - 1} of {FORKS}: {what}"
    assert len(results) == FORKS
    for i, p in enumerate(targets):
        with h5py.File(p, "r") as f:
            assert np.array_equal(f["z"][5:8, 5:8], np.full((3, 3), float(i)))


def _pool_task(args):
    src, a = args
    with vh5.File(src) as f, f["x"] as d:
        got = d[a : a + 4, a : a + 4]
    p = vh5.decode_payload(BODY)
    return float(got.sum()), int(p.data.sum())


def test_fork_pool_while_another_thread_reads_workers_work(tmp_path):
    """multiprocessing with the fork start method: pools created (their workers forked) while
    threads are inside vh5 calls answer every task with the right values."""
    src, scratch, _ = _make_files(tmp_path, 0)
    ctx = multiprocessing.get_context("fork")
    with _Busy(src, scratch):
        for round_ in range(6):
            args = [(src, (round_ * 31 + k * 17) % (SHAPE[0] - 4)) for k in range(8)]
            with ctx.Pool(2) as pool:
                got = pool.map_async(_pool_task, args).get(timeout=60)
            want = [(float(WANT[a : a + 4, a : a + 4].sum()), int(VALS.sum())) for _, a in args]
            assert got == want, f"round {round_}"
