"""Child process of the conformance suite: runs a batch of vh5 reads / writes / oracle reads
under one ``VH5_PLANNER`` / ``VH5_THREADS`` setting (read once per process by vh5, so every
setting gets its own process) and reports each task's outcome as a JSON line.

Usage: ``python3 _conformance_worker.py BATCH.pkl RESULTS.jsonl``. Before each task it writes
``{"start": id}`` and flushes, so when a task kills the process (a signal inside libhdf5) the
parent knows which one it was, records it as a crash and restarts a worker on the rest.

Task kinds (dicts, see _conformance_run.py): ``read`` (vh5.read_many_slices into a
sentinel-filled destination of a given layout, compared byte for byte with the expected
bytes), ``write`` (vh5.write_many_slices into a private copy of the file, then the whole
dataset read back by h5py and compared), ``oracle`` (h5py's read of a possibly corrupt file:
the expected bytes or the error, for the corruption campaign), ``build`` (a spec's file and
reference answers; those of specs that damage libhdf5's heap in a child forked for each:
see in_own_process).
"""

import ctypes
import hashlib
import json
import os
import pickle
import re
import resource
import shutil
import signal
import sys

import numpy as np

SENTINEL = 0xA5


def peak_rss_kb():
    """This process's peak RSS in KiB (VmHWM: getrusage's ru_maxrss carries over the RSS of
    the process that spawned it)."""
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])


def make_dst(dtype, shape, layout):
    """A destination of `shape` and `layout` (C, F, stepped, reversed), every byte SENTINEL."""
    shape = tuple(shape)
    nd = len(shape)
    if layout == "stepped":
        bshape = tuple(2 * s for s in shape)
    else:
        bshape = shape
    n = int(np.prod(bshape, dtype=np.int64)) * dtype.itemsize
    raw = np.full(max(n, 1), SENTINEL, np.uint8)
    base = np.ndarray(bshape, dtype, buffer=raw, order="F" if layout == "F" else "C")
    if nd == 0:
        return base
    if layout == "stepped":
        return base[(slice(None, None, 2),) * nd]
    if layout == "reversed":
        return base[(slice(None, None, -1),) * nd]
    return base


def vh5_dtype(vh5, ds, native_size):
    """The destination/source dtype vh5 wants for `ds` (its dtype is not None): numeric types
    in native byte order, other fixed-size types as V<native memory type size>."""
    dt = ds.dtype
    if dt.kind == "V":
        return np.dtype(f"V{native_size}")
    return dt.newbyteorder("=") if dt.itemsize > 1 else dt


def err(e):
    return {"outcome": "error", "status": getattr(e, "status_name", type(e).__name__), "msg": str(e)[:4000]}


def masked(got, want, t):
    """(got, want) with compound padding bytes (t["mask"], per element) and the elements HDF5
    leaves undefined (t["undefined"], per-element bools: see
    _conformance_run.undefined_after_write) zeroed."""
    m, u = t.get("mask"), t.get("undefined")
    if (m is None and u is None) or not len(got) or len(got) != len(want):
        return got, want
    a = np.frombuffer(got, np.uint8).copy()
    b = np.frombuffer(want, np.uint8).copy()
    if m is not None:
        full = np.tile(np.frombuffer(m, np.uint8), len(got) // len(m))
        a *= full
        b *= full
    if u is not None:
        undefined = np.frombuffer(u, bool)
        if len(got) % len(undefined) == 0:
            keep = np.repeat(~undefined, len(got) // len(undefined))
            a *= keep
            b *= keep
    return a.tobytes(), b.tobytes()


def do_read(vh5, t):
    with vh5.File(t["path"]) as f:
        ds = f[t["name"]]
        try:
            if ds.dtype is None:
                return {"outcome": "error", "status": "VH5_ERR_UNSUPPORTED", "msg": "dtype None (type vh5 cannot read)"}
            dt = vh5_dtype(vh5, ds, t["native_size"])
            if dt.itemsize != t["native_size"]:
                return {
                    "outcome": "mismatch",
                    "msg": f"vh5 item size {dt.itemsize} != native type size {t['native_size']} (dtype {ds.dtype})",
                }
            dst = make_dst(dt, t["dst_shape"], t["dst_layout"])
            s, d, c, ss, dss = t["rows"]
            vh5.read_many_slices(ds, dst, s, d, c, ss, dss)
        finally:
            ds.close()
    got = np.ascontiguousarray(dst).tobytes()
    # padding bytes are not compared, nor part of the digest (compared with the rows
    # planner's where libhdf5 2.0 fails): H5Dread leaves them as they were, vh5's chunk
    # planner may copy a chunk's
    got, want = masked(got, t["expected"] if t["expected"] is not None else got, t)
    if t["expected"] is not None:
        t["expected"] = want
    digest = hashlib.sha1(got).hexdigest()
    if t["expected"] is None:
        return {"outcome": "ok-but-oracle-failed", "digest": digest}
    if got == t["expected"]:
        return {"outcome": "ok", "digest": digest}
    a = np.frombuffer(got, np.uint8)
    b = np.frombuffer(t["expected"], np.uint8)
    k = int(np.argmax(a != b))
    el = k // max(1, t["native_size"])
    idx = np.unravel_index(el, t["dst_shape"]) if t["dst_shape"] else ()
    return {
        "outcome": "mismatch",
        "digest": digest,
        "msg": f"first differing byte {k} (dst element {tuple(int(i) for i in idx)}): got {a[k - k % t['native_size'] : k - k % t['native_size'] + t['native_size']].tobytes().hex()} want {b[k - k % t['native_size'] : k - k % t['native_size'] + t['native_size']].tobytes().hex()}; {int((a != b).sum())} bytes differ",
    }


def do_write(vh5, t, scratch):
    import _conformance_files as C

    path = os.path.join(scratch, f"w{os.getpid()}.h5")
    shutil.copyfile(t["path"], path)
    with vh5.File(path, "r+") as f:
        ds = f[t["name"]]
        try:
            if ds.dtype is None:
                return {
                    "outcome": "error",
                    "status": "VH5_ERR_UNSUPPORTED",
                    "msg": "dtype None (type vh5 cannot write)",
                }
            dt = vh5_dtype(vh5, ds, t["native_size"])
            src = make_dst(dt, t["src_shape"], t.get("src_layout", "C"))
            src[...] = np.frombuffer(t["src"], dtype=dt).reshape(t["src_shape"])
            s, d, c, ss, dss = t["rows"]
            vh5.write_many_slices(src, ds, s, d, c, ss, dss)
        finally:
            ds.close()
    try:
        arr, _ = C.oracle_read(path, t["name"])
    except Exception as e:  # noqa: BLE001 - h5py's refusal is the finding
        if t["expected"] is None:
            return {"outcome": "ok"}
        return {"outcome": "mismatch", "msg": f"h5py cannot read the dataset vh5 wrote: {str(e)[:300]}"}
    if t["expected"] is None:
        if t.get("model") is not None:
            got, want = masked(arr.tobytes(), t["model"], t)
            return {"outcome": "ok-model" if got == want else "ok-but-oracle-failed"}
        return {"outcome": "ok-but-oracle-failed"}
    got, t["expected"] = masked(arr.tobytes(), t["expected"], t)
    if got == t["expected"]:
        return {"outcome": "ok"}
    n = t["native_size"]
    a = np.frombuffer(got, np.uint8)
    b = np.frombuffer(t["expected"], np.uint8)
    bad = np.nonzero(a != b)[0]
    el = sorted({int(i) // n for i in bad})
    idx = [tuple(int(x) for x in np.unravel_index(e, arr.shape)) for e in el[:3]] if arr.shape else [()]
    return {
        "outcome": "mismatch",
        "msg": f"{len(el)} elements differ after the write, first at {idx}: got {a[el[0] * n : (el[0] + 1) * n].tobytes().hex()} want {b[el[0] * n : (el[0] + 1) * n].tobytes().hex()}",
    }


def do_oracle(t):
    import _conformance_files as C

    try:
        arr, size = C.oracle_read(t["path"], t["name"])
    except Exception as e:  # noqa: BLE001
        return {"outcome": "error", "status": type(e).__name__, "msg": str(e)[:300]}
    return {"outcome": "ok", "data": arr.tobytes().hex(), "native_size": size, "shape": list(arr.shape)}


def do_build(t):
    import _conformance_run as R

    built = R.build_one(t["k"], t["spec"], t["workdir"])
    for _, _, task in built:  # which process built it (test_conformance checks the forks)
        task["build_pid"] = os.getpid()
    with open(os.path.join(t["workdir"], f"s{t['k']}.pkl"), "wb") as fh:
        pickle.dump(built, fh)
    return {"outcome": "ok"}


#: Address-space limit of a worker (``VH5_CONFORMANCE_WORKER_MEMORY``: bytes, or with a K / M /
#: G suffix; 0 = none). libhdf5 (h5py's 2.0 building a file, 1.10.8 under vh5's ``rows``
#: planner) allocates what a damaged file claims: seed 108 at 8000 cases grew workers to 7-10 GB.
DEFAULT_WORKER_MEMORY = "3G"


def memory_limit():
    """The worker's address-space limit in bytes from the environment (None: unlimited)."""
    raw = os.environ.get("VH5_CONFORMANCE_WORKER_MEMORY", DEFAULT_WORKER_MEMORY).strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1:], 1)
    n = int(float(raw[:-1] if scale > 1 else raw) * scale)
    return n if n > 0 else None


#: A vh5 refusal that is an allocation failure under the worker's cap (vh5's own
#: VH5_ERR_NO_MEMORY, or libhdf5's "memory allocation failed" in its error stack): recorded as
#: a crash, never as a refusal libhdf5 may share ("refused (libhdf5 too)"). Not libhdf5's
#: "No space available for allocation" alone: its szip filter reports every failed decode so.
NO_MEMORY = re.compile(r"(?i)memory allocation failed")
#: Except known divergence #21 (docs/ROBUSTNESS.md): libhdf5's szip filter allocates the
#: decoded size a chunk's szip header claims (up to 4 GiB) before decoding; a claim above the
#: cap fails there, in libhdf5 (1.10.8 under vh5, 2.0 under h5py) alike: a refusal.
SZIP_CLAIM = "memory allocation failed for szip decompression"


def out_of_memory(r):
    msg = r.get("msg") or ""
    return r.get("status") == "VH5_ERR_NO_MEMORY" or (bool(NO_MEMORY.search(msg)) and SZIP_CLAIM not in msg)


def limit_memory():
    """Cap this process's address space (never raising a lower limit already set)."""
    n = memory_limit()
    if n is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        n = min(n, hard)
    if soft == resource.RLIM_INFINITY or n < soft:
        resource.setrlimit(resource.RLIMIT_AS, (n, hard))


def run_task(vh5, t, scratch):
    """Task `t`'s result dict (an exception is an outcome too)."""
    try:
        if t["kind"] == "read":
            return do_read(vh5, t)
        if t["kind"] == "write":
            return do_write(vh5, t, scratch)
        if t["kind"] == "build":
            return do_build(t)
        return do_oracle(t)
    except MemoryError as e:  # the worker's limit (limit_memory), not a refusal
        return {"outcome": "crash", "status": "memory limit", "msg": f"MemoryError: {e}"[:4000]}
    except Exception as e:  # noqa: BLE001 - every vh5 refusal is an outcome
        r = err(e)
        if t["kind"] in ("read", "write") and out_of_memory(r):
            r = {"outcome": "crash", "status": f"memory limit ({r['status']})", "msg": r["msg"]}
        return r


def in_own_process(fn):
    """fn()'s result (a JSON-able dict), computed in a child forked from this worker: whatever
    fn does to the heap ends with the child, and the worker's later tasks run on its own heap.
    Used for the build of a spec libhdf5 2.0 may write out of its heap blocks on
    (_conformance_run.damages_heap). A fork costs a few ms where a fresh interpreter importing
    h5py costs ~300 ms (a forked build itself runs ~3x slower than in the worker: copy-on-write
    of the interpreter's pages, so only those specs are forked).

    A child killed by a signal or exiting non-zero takes this worker down the same way, so the
    parent (_conformance_run.run_batch) records the task's crash as before and restarts a
    worker after it; the child dies with this worker (PR_SET_PDEATHSIG: a worker killed for a
    hung task leaves no child running)."""
    parent = os.getpid()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 1
        try:
            os.close(rfd)
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:
                os._exit(1)
            data = json.dumps(fn()).encode()
            while data:
                data = data[os.write(wfd, data) :]
            code = 0
        finally:
            os._exit(code)  # no atexit handlers, no flushing of the parent's buffers
    os.close(wfd)
    chunks = []
    while True:
        b = os.read(rfd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(parent, sig)
        os._exit(128 + sig)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        os._exit(code)
    return json.loads(b"".join(chunks))


def main():
    batch, results = sys.argv[1], sys.argv[2]
    limit_memory()
    with open(batch, "rb") as fh:
        tasks = pickle.load(fh)
    scratch = os.path.dirname(os.path.abspath(results))
    vh5 = None
    if any(t["kind"] in ("read", "write") for t in tasks):
        import vh5  # noqa: F811
    R = None
    if any(t["kind"] == "build" for t in tasks):
        import _conformance_run as R  # h5py & co. imported once, before any fork
    with open(results, "a") as out:
        for t in tasks:
            out.write(json.dumps({"start": t["id"]}) + "\n")
            out.flush()
            if t["kind"] == "build" and R.damages_heap(t["spec"]):
                r = in_own_process(lambda t=t: run_task(vh5, t, scratch))
            else:
                r = run_task(vh5, t, scratch)
            r["id"] = t["id"]
            r["maxrss_kb"] = peak_rss_kb()  # peak so far: finds a task that grew
            out.write(json.dumps(r) + "\n")
            out.flush()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
