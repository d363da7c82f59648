"""File.close when a close fails: a read-write file whose flush cannot be written.

Found by a tryout: a write that ran out of file space (here: the process's file size limit,
``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored so the write fails with EFBIG instead of killing
the process) left data in libhdf5's chunk cache; ``File.close()`` then failed closing the
first dataset and stopped there, and the File still said "(open)", its remaining datasets
open. Now every dataset and the file are closed whatever fails, and the first failure is
raised. The test runs in a child process (the limit and libhdf5's state stay there).

What vh5 cannot change: libhdf5 itself, at process exit, cannot close a file whose dirty
data never reached the disk. libhdf5 1.10.8 then crashes in its exit handler (SIGSEGV in
``H5F__close_cb`` under ``H5_term_library``, even when nothing was closed before); 1.14 and
2.x print "infinite loop closing library". h5py (HDF5 2.0) crashes the same way after the same
write. The child therefore leaves with ``os._exit``.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("h5py")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="needs RLIMIT_FSIZE and SIGXFSZ (Linux)")

CHILD = textwrap.dedent(
    """
    import conftest  # noqa: F401 - makes the in-tree vh5 importable
    import os, resource, signal, sys
    import h5py, numpy as np, vh5

    path = sys.argv[1]
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.create_dataset("a", shape=(4000, 1000), dtype="f8", chunks=(100, 100))
        f.create_dataset("b", shape=(10,), dtype="i4")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, resource.RLIM_INFINITY))
    f = vh5.File(path, "r+")
    a, b = f["a"], f["b"]
    try:
        vh5.write_many_slices(np.ones((4000, 1000)), a, [[0, 0]], [[0, 0]], [[4000, 1000]])
        print("write: ok")
    except vh5.Error as e:
        print("write:", type(e).__name__)
    try:
        f.close()
        print("close: ok")
    except vh5.Error as e:
        print("close:", type(e).__name__)
    print("state:", f.closed, a.closed, b.closed, repr(f))
    f.close()  # idempotent, raises nothing now
    try:
        a.id
    except vh5.InvalidHandleError:
        print("dataset id: closed")
    sys.stdout.flush()
    os._exit(0)  # libhdf5's own exit handler would crash here (see the module docs)
    """
)


def test_file_close_closes_everything_when_a_flush_fails(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    p = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "x.h5")], env=env, capture_output=True, text=True, timeout=120
    )
    out = p.stdout
    assert "write: HDF5Error" in out, (out, p.stderr)
    assert "close: " in out, (out, p.stderr)
    assert "state: True True True <vh5.File" in out and "(closed)>" in out, (out, p.stderr)
    assert "dataset id: closed" in out, (out, p.stderr)
