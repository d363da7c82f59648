"""Differential conformance suite: vh5 against libhdf5 itself over the HDF5 storage space.

What it does. Storage specs are drawn (``_conformance_files.spec_from_random``, one seeded
``random.Random`` per spec: the same specs on every run, machine and pytest session; also
available as the hypothesis strategy ``storage_specs``, VH5_CONFORMANCE_HYPOTHESIS=1) covering layouts (contiguous
allocated and not, compact, chunked with every chunk index: single chunk, implicit, fixed
array, extensible array, v2 B-tree, v1 B-tree), chunk shapes of 1 element and larger than the
dataset, partial edge chunks, resized datasets, ``H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS``, a
chunk stored unfiltered with a filter mask (``write_direct_chunk``), filter pipelines
(deflate levels, shuffle, fletcher32, scaleoffset, nbit, lzf, an unregistered optional filter,
in drawn orders), allocation times x fill times x user fill values, and every fixed-size type
class (integers and IEEE floats of each size and byte order, float16, non-IEEE floats, integers
of odd precision/offset, bool, enum, complex, padded / packed / nested compounds, fixed
strings, array and opaque types). h5py (libhdf5 2.0) writes each file with libver bounds
libhdf5 1.10 reads. Every spec gives 3 read cases (random row tables with steps on both sides
into C-order, Fortran-order, stepped or reversed destinations), 1 write case and up to 4
corruption cases.

Oracles and rules (a failure prints the case and its spec; reproduce one spec with
``python3 tests/python/_conformance_run.py '<spec json>'``):

- Reads run in child processes, one per ``VH5_PLANNER`` (auto, chunks, rows) x ``VH5_THREADS``
  (1, 2, 4); the ``chunks`` ones with ``VH5_CHUNK_INDEX=always`` (unless set), so that vh5's
  chunk index (its own B-tree walk on libhdf5 1.10) serves every chunk they read whole. The reference is libhdf5's ``H5Dread`` of the whole dataset through h5py with the
  memory type ``H5Tget_native_type(file type)`` (what vh5 reads with), the rows applied to it
  in numpy; the destination starts as 0xA5 bytes, so bytes vh5 must not touch are checked too.
  ASSUMPTION for ``H5D_FILL_TIME_NEVER``: libhdf5 leaves the buffer untouched where no chunk
  is allocated; the reference is its read into a buffer pre-filled with the dataset's fill
  value (0 when none is set), i.e. never-written chunks read as the fill value.
- Writes: the same rows written by vh5 into one copy of the file (``vh5.write_many_slices``)
  and by h5py into another, then both whole datasets read by h5py and compared byte for byte
  (parts not written included). Where h5py's answer contradicts libhdf5's read before the
  write + the rows (and that model is exact), the spec is built again alone in a fresh
  process: libhdf5 2.0 corrupts a build worker's heap on some specs
  (``_conformance_run.reference_doubt``; the scaleoffset / szip / nbit specs that do are each
  built in a child forked for it, ``_conformance_run.HEAP_DAMAGING_FILTERS``). Run under three settings (auto/2, chunks/1, rows/4 threads).
  Where libhdf5 2.0 fails to write the rows or to read its own result back, vh5's result
  (read by h5py) must equal libhdf5's read of the file before the write with the rows applied
  in numpy.
- A vh5 refusal (an exception with a status) where libhdf5 succeeds is a failure except for
  features in ``ALLOWED_REFUSALS`` (documented as unsupported). Where libhdf5 2.0 fails, vh5
  must fail too, unless vh5's ``rows`` planner (libhdf5 1.10's own ``H5Dread``) succeeds with
  the same bytes: libhdf5 1.10 and 2.0 legitimately differ (e.g. 2.0 detects something 1.10
  does not); the table then says "as libhdf5 1.10".
- Corruption campaign: per file, two byte flips in metadata, one in a chunk (or contiguous raw
  data) and one truncation, located with ``H5Dget_chunk_info`` / ``H5Dget_offset``. The damaged
  file is read by h5py in a child process (reference: data or error) and by vh5 in child
  processes (auto/2, chunks/2, rows/1): no crash (signal), no vh5 success where libhdf5
  reports an error and no differing value where both succeed -- again unless vh5 agrees with
  its ``rows`` planner (libhdf5 1.10) and that differs from 2.0. A refusal is always allowed.
- ``KNOWN_DIVERGENCES`` maps each open item of the divergence list (1..12) to the features of
  the cases it affects: such cases count as skipped ("known #N" in the table, whatever their
  outcome; the divergences they show are listed as warnings naming the item) instead of
  failing, unless ``VH5_CONFORMANCE_ALL=1``.
  Delete the line once the fix is merged.

Commands::

    python3 -m pytest -q tests/python/test_conformance.py          # CI: >= 2,000 cases
    VH5_CONFORMANCE_CASES=20000 python3 -m pytest -q tests/python/test_conformance.py
    VH5_CONFORMANCE_SEED=7 ...     # other cases than the CI run's (seed 7)
    VH5_CONFORMANCE_ALL=1 ...      # known divergences fail too
    VH5_UPDATE_DOCS=1 ...          # regenerate the table in docs/ROBUSTNESS.md
    VH5_CONFORMANCE_DUMP=FILE ...  # write every failure / known divergence to FILE
    VH5_CONFORMANCE_KEEP=DIR ...   # keep the files (s<spec index>.h5, damaged copies) in DIR

The table in docs/ROBUSTNESS.md (between ``<!-- conformance-table:begin -->`` and
``<!-- conformance-table:end -->``) is rendered from the default run and compared only then.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import tempfile
import time
import warnings
from pathlib import Path

import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("hypothesis")
import _conformance_corrupt as X  # noqa: E402
import _conformance_files as C  # noqa: E402
import _conformance_run as R  # noqa: E402
from hypothesis import Phase, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
if os.environ.get("VH5_TEST_INSTALLED") != "1" and not os.path.exists(
    os.environ.get("VH5_LIBRARY") or REPO / "target" / "release" / "libvh5.so"
):
    pytest.skip("libvh5 not built (cargo build --release) and VH5_LIBRARY not set", allow_module_level=True)
DEFAULT_CASES = 2000
CASES = int(os.environ.get("VH5_CONFORMANCE_CASES", DEFAULT_CASES))
ALL = os.environ.get("VH5_CONFORMANCE_ALL") == "1"
CORRUPT_CONFIGS = [("auto", 2), ("chunks", 2), ("rows", 1)]

#: issue item -> (what, features that must all be present). One line each; delete when fixed.
#: Items 5-12 are not listed: the generated cases do not reach them (crafted filter
#: parameters, memory bounds, h5py sources, payloads), or they showed no divergence here.
#: Feature of a damaged copy whose flip made an unfiltered chunk's stored-size entry smaller.
SHRUNK_SIZE_ENTRY = "damage: unfiltered chunk's size entry smaller than the chunk"
#: Feature of a damaged copy whose flip changed the type of the filter pipeline message.
LOST_PIPELINE = "damage: filter pipeline message type (filtered chunks read as unfiltered)"
KNOWN_DIVERGENCES = {
    # Inside libhdf5 1.10's scaleoffset decoder (no length checks on a damaged chunk; vh5 does
    # not decode scaleoffset: libhdf5 does, in every planner): run-to-run different bytes.
    16: (
        "libhdf5 1.10: damaged scaleoffset chunk reads as uninitialised bytes, not an error",
        {"corrupt: chunk flip", "filter: scaleoffset"},
    ),
    # libhdf5 < 2.2 (1.10.8, h5py's 2.0) reads an unfiltered chunk whose B-tree key says fewer
    # stored bytes than the chunk has into a buffer of the chunk's size and leaves the rest as it
    # was (2.2: "incorrect chunk size returned from index for unfiltered chunk"); vh5 reads such
    # chunks through libhdf5's H5Dread (its chunk index refuses the entry): the tail differs from
    # process to process in every planner (seed 28 at 8000 cases, case 6691: metadata byte 1096).
    18: (
        "libhdf5 < 2.2: unfiltered chunk whose size entry is smaller than the chunk reads uninitialised bytes",
        {SHRUNK_SIZE_ENTRY},
    ),
    # The same through a flipped byte of the pipeline message's type (version-1 object header,
    # no checksum): libhdf5 ignores the message, the dataset is unfiltered and its filtered
    # chunks are shorter than a chunk; h5py's 2.0 and 1.10.8 alike read the rest as
    # uninitialised memory (heap pointers in h5py's answer; seed 48 at 8000 cases, case 6622,
    # metadata byte 905; seed 70, case 7710, metadata byte 920). vh5 reads what libhdf5 1.10
    # reads (it has no pipeline to check either).
    20: (
        "libhdf5 < 2.2: a damaged pipeline message type leaves filtered chunks read as unfiltered ones: uninitialised bytes",
        {LOST_PIPELINE},
    ),
    # libhdf5's szip filter (libaec) decodes a damaged szip stream without an error and leaves
    # what it did not decode as it was: h5py (2.0) and vh5's rows planner (1.10.8's H5Dread)
    # alike read different values from process to process (seeds 31 and 32 at 8000 cases:
    # chunks of 7 stored bytes). vh5 does not decode szip: libhdf5 does, in every planner.
    19: (
        "libhdf5 + libaec: damaged szip chunk reads as uninitialised bytes, not an error",
        {"corrupt: chunk flip", "filter: szip"},
    ),
}

# vh5 linked to libhdf5 >= 2.2.0 (configuration 2's static build) reads and writes a pipeline
# with a pass-through nbit / scaleoffset between filters right; the oracle, h5py's libhdf5
# 2.0, reads such chunks scrambled (whoever wrote them): the oracle is wrong there, not vh5
# (seed 196 at 4000 cases, case 1454: shuffle, pass-through nbit, deflate on an array of >f4;
# vh5 2.2 reads back the values written by vh5 and by h5py, h5py 2.0 neither).
if __import__("vh5").hdf5_version().version >= (2, 2, 0) and h5py.version.hdf5_version_tuple < (2, 2, 0):
    KNOWN_DIVERGENCES[22] = (
        "h5py's libhdf5 < 2.2 reads a pass-through nbit / scaleoffset between filters scrambled; vh5's libhdf5 >= 2.2 does not",
        {C.PASSTHROUGH_BETWEEN},
    )

#: feature -> (why vh5 may refuse it where libhdf5 (h5py) reads it, regex the message must match).
ALLOWED_REFUSALS = {
    "filter: lzf": ("h5py's own plugin filter: vh5's libhdf5 has no lzf", r"filter 'lzf' is not registered|lzf|32000"),
    # writes: vh5 refuses a pipeline with a filter its libhdf5 lacks (src/hdf5/filter_support.rs)
    "filter: unregistered, optional": (
        "a filter no libhdf5 here has: vh5 does not write such a pipeline",
        r"has no 'filter 40000' filter",
    ),
    C.UNRELIABLE: (
        "scaleoffset / nbit after a filter that changed the chunk's length, szip given partial pixels: libhdf5 (1.10.8, 2.0, 2.2) "
        "reads such chunks as other values, uninitialised memory or an error; a pass-through nbit / scaleoffset between filters: "
        "libhdf5 < 2.2.0 (1.10.8, 2.0.0) reads scrambled values",
        r"No libhdf5 release decodes such chunks reliably|a bug of libhdf5 before 2\.2\.0",
    ),
    # writes only (src/hdf5/filter_support.rs, passthrough_write_problem; its reads are not refused)
    C.CUT_WRITES: (
        "libhdf5 < 2.2.0 (1.10.8, 2.0.0) stores a chunk deflate cannot shrink cut to its input length after a pass-through nbit: "
        "vh5 refuses such writes with its libhdf5 1.10",
        r"stored cut short",
    ),
    # writes only (src/transfer/masked.rs): a write reaching a chunk stored under a non-zero
    # filter mask in a pipeline vh5 does not encode; libhdf5 would keep the stale mask
    "filter mask: a chunk stored unfiltered": (
        "a write reaching a chunk stored under a filter mask in a pipeline vh5 does not encode: "
        "libhdf5 keeps the stale mask for a chunk re-stored at its old size",
        r"is stored with filter mask 0x[0-9a-f]+ .*vh5 does not encode this pipeline",
    ),
    "layout: external storage (H5Pset_external)": (
        "files pointing at other files: refused by default (security)",
        r"(?i)external",
    ),
    "layout: virtual (source in the same file)": (
        "files pointing at other files: refused by default (security)",
        r"(?i)virtual",
    ),
}
#: vh5 refuses a chunk whose szip header claims more decoded bytes than an szip filter can be
#: given for that chunk, or that is shorter than the header, before libhdf5 allocates the claim
#: (src/hdf5/chunk_guard.rs; seed 108 spec 740 and seed 116 spec 1043 at 8000 cases: claims of
#: 3.7 GB and 810 MB for chunks of 12 and 20 bytes, formerly known divergence #21).
SZIP_CLAIM = r"the szip header of the chunk at \[[0-9, ]*\] claims \d+ decoded bytes|fewer than szip's 4-byte header"
ALLOWED_REFUSALS["filter: szip"] = (
    "a chunk whose szip header claims more bytes than the chunk can decode to: libhdf5 allocates the claim",
    SZIP_CLAIM,
)
if (
    __import__("vh5").hdf5_version().origin == "vendored"
):  # the static-hdf5 build: hdf5-metno-src builds HDF5 without szip
    # unnamed in the file: every filter it lacks is listed
    ALLOWED_REFUSALS["filter: szip"] = (
        "the static-hdf5 build's libhdf5 has no szip",
        r"has no ('[^']*', )*'szip'|" + SZIP_CLAIM,
    )

#: libhdf5 < 2.2's own H5Dwrite leaves stale szip masks: a chunk stored szip-encoded at
#: exactly a chunk's size, rewritten with values szip cannot shrink (szip skipped, an optional
#: filter), is rewritten in place and keeps the mask saying szip ran. h5py's libhdf5 2.0
#: "decodes" its raw bytes into other values without an error; 2.2 refuses the chunk ("chunk
#: size is incorrect after being unfiltered"), and vh5 linked to 2.2 passes that refusal on
#: (seed 214 at 8000 cases, a >f4 [unregistered optional, szip] dataset written by h5py: chunk
#: (8, 2, 0) stored as the raw values under mask 0x1).
if __import__("vh5").hdf5_version().version >= (2, 2, 0) and h5py.version.hdf5_version_tuple < (2, 2, 0):
    why, regex = ALLOWED_REFUSALS["filter: szip"]
    ALLOWED_REFUSALS["filter: szip"] = (
        why + "; libhdf5 >= 2.2 refuses a stale szip mask left by libhdf5 < 2.2 (which reads it as other values)",
        regex + "|chunk size is incorrect after being unfiltered",
    )

COLUMNS = [("read", p) for p in R.PLANNERS] + [("write", p) for p in R.PLANNERS]


def draw_specs(n):
    """n storage specs, spec i from ``random.Random(f"vh5-conformance-{seed}-{i}")`` with seed
    0 or VH5_CONFORMANCE_SEED: the same specs on every run, machine and pytest session (a
    hypothesis-derandomized draw depends on what else the session ran before). With
    VH5_CONFORMANCE_HYPOTHESIS=1 hypothesis draws them instead (``storage_specs``)."""
    seed = os.environ.get("VH5_CONFORMANCE_SEED", "0")
    # HDF5 2.x's complex number class: written by h5py, read by vh5, both >= 2.0
    C.NATIVE_COMPLEX = h5py.version.hdf5_version_tuple >= (2, 0, 0) and __import__("vh5").hdf5_version().version >= (
        2,
        0,
        0,
    )
    if os.environ.get("VH5_CONFORMANCE_HYPOTHESIS") != "1":
        return [C.spec_from_random(random.Random(f"vh5-conformance-{seed}-{i}")) for i in range(n)]
    specs = []

    @settings(max_examples=n, derandomize=False, database=None, phases=[Phase.generate], deadline=None)
    @given(C.storage_specs())
    def collect(spec):
        specs.append(spec)

    hypothesis_seed(int(seed))(collect)()
    return specs


def known_item(features):
    for item, (_, need) in KNOWN_DIVERGENCES.items():
        if need <= features:
            return item
    return None


def classify(case, res, rows_res, oracle_failed, corrupt=False):
    """(label, failure message or None) of one case under one setting. `rows_res` is the
    same task's result under VH5_PLANNER=rows (libhdf5 1.10's H5Dread): where libhdf5 2.0
    fails (any file) or returns other values (corrupt files only), vh5 agreeing with it
    byte for byte is "as libhdf5 1.10"."""
    out = res.get("outcome")
    feats = set(case.features)
    if out == "ok":
        return "OK", None
    if out == "ok-model":  # a write libhdf5 2.0 cannot do or read back
        return "OK (libhdf5 2.0 fails; = its read before the write + the rows)", None
    if out == "error":
        st = res.get("status")
        allowed = [f for f in sorted(feats) if f in ALLOWED_REFUSALS]
        # the documented refusal the message names (a case may have several features that allow one)
        named = [f for f in allowed if re.search(ALLOWED_REFUSALS[f][1], res.get("msg") or "")]
        allowed = named + [f for f in allowed if f not in named]
        if allowed and not corrupt and named:
            # vh5's documented refusal, whatever libhdf5 2.0 did: some of these pipelines
            # make libhdf5 fail or not from run to run (uninitialised memory), the label must not.
            return f"refused {st} ({allowed[0].split(': ')[1]})", None
        if oracle_failed:
            return f"refused {st} (libhdf5 too)", None
        if corrupt:
            return f"refused {st} (damaged file)", None
        if allowed:
            if not re.search(ALLOWED_REFUSALS[allowed[0]][1], res.get("msg") or ""):
                return "FAIL", f"vh5 refused {allowed[0]} without naming it: {st}: {res.get('msg')}"
            return f"refused {st} ({allowed[0].split(': ')[1]})", None
        return "FAIL", f"vh5 refused where libhdf5 reads it: {st}: {res.get('msg')}"
    if out in ("ok-but-oracle-failed", "mismatch") and rows_res is not None:
        if (
            rows_res.get("digest")
            and rows_res.get("digest") == res.get("digest")
            and (out == "ok-but-oracle-failed" or corrupt)
        ):
            return "as libhdf5 1.10", None
    if out == "ok-but-oracle-failed":
        return "FAIL", "vh5 returned data where libhdf5 reports an error"
    if out == "crash":
        return "FAIL", f"crash ({res.get('status')}): {res.get('msg')}"
    return "FAIL", f"different value: {res.get('msg')}"


class Suite:
    def __init__(self):
        self.cases = []
        self.labels = {}  # (case id, (op, planner)) -> set of labels
        self.failures = []
        self.known = {}
        self.build_errors = []
        self.timing = {}

    def record(self, case, cfg, label, failure):
        item = None if ALL else known_item(set(case.features))
        if item is not None:
            # a case of an open item counts as skipped whatever its outcome (some of these
            # divergences come and go with memory contents: the table must not)
            label = f"known #{item}"
            if failure:
                self.known.setdefault(item, []).append(f"{case.describe()} [{cfg}]: {failure}")
            failure = None
        if failure:
            failure = failure[:900]
            self.failures.append(f"{case.describe()} [planner {cfg[0]}, threads {cfg[1]}]: {failure}")
            label = "FAIL"
        op = "write" if case.op == "write" else "read"
        self.labels.setdefault((case.id, (op, cfg[0])), set()).add(label)


def run_reads_writes(suite, specs, workdir):
    t0 = time.time()
    cases, rtasks, wtasks, errors = R.build_cases(specs, workdir)
    for c in cases:
        c.features.append("op: " + c.op)
        if c.spec["filters"]:
            c.features.append("filtered")
    suite.cases += cases
    suite.build_errors += errors
    suite.timing["build"] = time.time() - t0
    for kind, tasks, cfgs in (("read", rtasks, R.READ_CONFIGS), ("write", wtasks, R.WRITE_CONFIGS)):
        t0 = time.time()
        res = R.run_settings(tasks, cfgs, workdir, kind)
        suite.timing[kind] = time.time() - t0
        rows_cfg = [c for c in cfgs if c[0] == "rows"][0]
        for cfg, rs in res.items():
            for i, r in rs.items():
                t = tasks[i]
                case = cases[t["case"]]  # case ids are their index
                failed = t.get("oracle_error") or (None if t["expected"] is not None else "libhdf5 failed")
                label, fail = classify(case, r, res[rows_cfg].get(i), failed)
                suite.record(case, cfg, label, fail)


def run_corruption(suite, specs, workdir, first_id):
    import numpy as np

    t0 = time.time()
    cases, otasks, meta = [], [], []
    for k, spec in enumerate(specs):
        path = os.path.join(workdir, f"s{k}.h5")
        if not os.path.exists(path) or spec["layout"] == "external":
            continue
        shape = tuple(spec["resize"] or spec["shape"])
        if 0 in shape:
            continue
        try:
            muts = X.mutations(path, spec["seed"])
        except Exception as e:  # noqa: BLE001
            suite.build_errors.append((spec, f"regions: {e}"))
            continue
        # left out of the table like the spec's read and write cases (render_table)
        unreliable = [C.UNRELIABLE] if spec["layout"] == "chunked" and C.unreliable_pipeline(path) else []
        entries = X.size_entries(path) if any(m[0] == "metadata flip" for m in muts) else []
        pline = X.pipeline_type_fields(path) if any(m[0] == "metadata flip" for m in muts) else []
        for j, m in enumerate(muts):
            bad = os.path.join(workdir, f"s{k}-m{j}.h5")
            X.apply(path, bad, m)
            feats = ["corrupt: " + m[0], "op: read"] + (["filtered"] if spec["filters"] else []) + unreliable
            if X.shrinks_size_entry(entries, m):
                feats.append(SHRUNK_SIZE_ENTRY)
            if X.loses_pipeline(pline, m):
                feats.append(LOST_PIPELINE)
            case = R.Case(first_id + len(cases), spec, "read", feats)
            case.op = "corrupt"
            case.mutation = m[3]
            cases.append(case)
            otasks.append({"kind": "oracle", "path": bad, "name": "d"})
            meta.append((case, bad, shape))
    half = len(otasks) // 2
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as ex:
        a = ex.submit(R.run_batch, otasks[:half], "auto", 1, workdir, "oracle-a")
        b = ex.submit(R.run_batch, otasks[half:], "auto", 1, workdir, "oracle-b")
        ores = dict(a.result())
        ores.update({i + half: r for i, r in b.result().items()})
    vtasks = []
    for i, (case, bad, shape) in enumerate(meta):
        o = ores.get(i, {"outcome": "crash"})
        rng = np.random.default_rng(case.spec["seed"] + 7)
        rows, dst_shape, _ = R.row_table(shape, rng, int(rng.integers(1, 5)))
        full = tuple(
            np.concatenate([t, v[None, :]])
            for t, v in zip(
                rows,
                (
                    np.zeros(len(shape), np.uint64),
                    np.zeros(len(shape), np.uint64),
                    np.array(shape, np.uint64),
                    np.ones(len(shape), np.uint64),
                    np.ones(len(shape), np.uint64),
                ),
            )
        )
        dst_shape = tuple(max(a, b) for a, b in zip(dst_shape, shape))
        size = C.native_type(C.type_of(case.spec["type"])[0]).get_size()
        m = C.native_mask(case.spec["type"])
        mask = None if m is None else m.tobytes()
        expected = None
        if o.get("outcome") == "ok" and tuple(o["shape"]) == shape and o["native_size"] == size:
            arr = np.frombuffer(bytes.fromhex(o["data"]), dtype=f"V{size}").reshape(shape)
            exp = (
                np.frombuffer(bytes([R.SENTINEL]) * (int(np.prod(dst_shape)) * size), dtype=f"V{size}")
                .reshape(dst_shape)
                .copy()
            )
            R.apply_rows(exp, arr, full)
            expected = exp.tobytes()
        vtasks.append(
            {
                "kind": "read",
                "case": case.id,
                "path": bad,
                "name": "d",
                "rows": full,
                "dst_shape": dst_shape,
                "dst_layout": "C",
                "native_size": size,
                "expected": expected,
                "mask": mask,
                "oracle_error": None if expected is not None else (o.get("msg") or o.get("status") or "differs"),
            }
        )
    suite.cases += cases
    res = R.run_settings(vtasks, CORRUPT_CONFIGS, workdir, "corrupt")
    byid = {c.id: c for c in cases}
    for cfg, rs in res.items():
        for i, r in rs.items():
            t = vtasks[i]
            case = byid[t["case"]]
            label, fail = classify(case, r, res[("rows", 1)].get(i), t["oracle_error"], corrupt=True)
            if fail:
                fail = f"{case.mutation}: {fail}"
            suite.record(case, cfg, label, fail)
    suite.timing["corrupt"] = time.time() - t0


@pytest.fixture(scope="module")
def suite():
    s = Suite()
    n_specs = max(4, CASES // 7 + 8)
    keep = os.environ.get("VH5_CONFORMANCE_KEEP")  # triage: keep every file in this directory
    if keep:
        os.makedirs(keep, exist_ok=True)
    with contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory(prefix="vh5conf-") as d:
        t0 = time.time()
        specs = draw_specs(n_specs)
        run_reads_writes(s, specs, d)
        run_corruption(s, specs, d, len(s.cases))
        s.timing["total"] = time.time() - t0
    s.specs = specs
    dump = os.environ.get("VH5_CONFORMANCE_DUMP")
    if dump:  # every failure and known divergence, one per line, for triage
        with open(dump, "w") as fh:
            fh.write(
                "\n".join(
                    ["FAIL " + f for f in s.failures] + [f"KNOWN#{k} {m}" for k, ms in s.known.items() for m in ms]
                )
            )
    return s


def test_conformance(suite):
    """Every case under every setting gives libhdf5's answer or an allowed refusal."""
    print(
        f"\nconformance: {len(suite.cases)} cases from {len(suite.specs)} specs ({len(suite.build_errors)} specs h5py could not write, e.g. {suite.build_errors[:1]}); timings { ({k: round(v, 1) for k, v in suite.timing.items()}) }"
    )
    for item, msgs in sorted(suite.known.items()):
        text = f"SKIPPED (known divergence #{item}: {KNOWN_DIVERGENCES[item][0]}): {len(msgs)} case-settings, e.g. {msgs[0][:300]}"
        print(text)
        warnings.warn(text, stacklevel=1)
    assert len(suite.cases) >= min(CASES, DEFAULT_CASES) * 0.95 or CASES < DEFAULT_CASES
    if suite.failures:
        pytest.fail(f"{len(suite.failures)} divergences from libhdf5:\n" + "\n".join(suite.failures[:40]))


def render_table(suite):
    """Markdown table: storage feature x (read, write) x planner -> outcomes."""
    cells = {}
    by_id = {c.id: c for c in suite.cases}
    for (cid, col), labels in suite.labels.items():
        case = by_id[cid]
        feats = case.features
        if C.UNRELIABLE in feats:
            # Refused by vh5 in every setting (tests/python/test_filter_pipelines.py); left out
            # of the table because h5py's own libaec sometimes crashes writing such files
            # (heap corruption in SZ_BufftoBuffCompress), so whether the case exists varies.
            continue
        if case.op == "corrupt":  # own rows: damaged files, by damage and layout / chunk index
            kind = next(f for f in feats if f.startswith("corrupt: "))
            lay = [f for f in feats if f.startswith(("layout: ", "index: "))]
            feats = [kind] + [f"{kind}, {x}" for x in lay]
        for f in feats:
            if f.startswith(("op: ", "dst: ")) or f == "filtered":
                continue
            cells.setdefault(f, {}).setdefault(col, set()).update(labels)
    lines = [
        "| storage feature | " + " | ".join(f"{op} ({p})" for op, p in COLUMNS) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
    ]
    for f in sorted(cells):
        row = [f]
        for col in COLUMNS:
            labels = cells[f].get(col)
            row.append("; ".join(sorted(labels, key=lambda x: (x != "OK", x))) if labels else "–")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


BEGIN, END = "<!-- conformance-table:begin -->", "<!-- conformance-table:end -->"


def test_robustness_table(suite):
    """docs/ROBUSTNESS.md holds the table of the default run (regenerate: VH5_UPDATE_DOCS=1)."""
    table = render_table(suite)
    if CASES != DEFAULT_CASES or ALL or os.environ.get("VH5_CONFORMANCE_SEED") is not None:
        pytest.skip("the ROBUSTNESS.md table is the default run's (VH5_CONFORMANCE_CASES, _ALL, _SEED unset)")
    import vh5

    linked = vh5.hdf5_version().version
    if linked[:2] != (1, 10):
        # Every case is still checked (test_conformance fails on any divergence); the table's
        # labels ("as libhdf5 1.10", 1.10's known items) belong to CI's first run (system 1.10).
        pytest.skip(f"the ROBUSTNESS.md table is rendered with libhdf5 1.10; linked {'.'.join(map(str, linked))}")
    doc_path = REPO / "docs" / "ROBUSTNESS.md"
    doc = doc_path.read_text()
    b, e = doc.find(BEGIN), doc.find(END)
    assert b >= 0 and e > b, f"markers {BEGIN} / {END} missing in {doc_path}"
    current = doc[b + len(BEGIN) : e].strip()
    if current != table.strip():
        if os.environ.get("VH5_UPDATE_DOCS"):
            doc_path.write_text(doc[:b] + BEGIN + "\n" + table.strip() + "\n" + doc[e:])
            print("docs/ROBUSTNESS.md: conformance table updated")
        else:
            pytest.fail(
                "the conformance table in docs/ROBUSTNESS.md is stale; regenerate it with\n  "
                "VH5_UPDATE_DOCS=1 python3 -m pytest -q tests/python/test_conformance.py\nfresh table:\n" + table
            )


@pytest.mark.skipif(
    __import__("vh5").hdf5_version().version[:2] != (1, 10),
    reason="libhdf5 1.10's reading of this damaged B-tree (>= 2.0 reports 'bad coordinate offset', which vh5 passes on)",
)
def test_btree1_damaged_chunk_key_padded_compound_same_bytes_in_every_planner(tmp_path):
    """Seed 1's damaged v1 B-tree (metadata byte 1586 of this spec): libhdf5 1.10.8 no longer
    finds a chunk whose key was damaged and reads it as the fill value (H5Dread and
    H5Dget_chunk_storage_size alike, "chunk storage is not allocated"); libhdf5 2.0 reports
    "bad coordinate offset". vh5 gave 1.10's member bytes in every planner (the chunk planner
    copies compound padding bytes that H5Dread leaves alone, so the digest the suite compares
    with the rows planner's leaves padding out: it once failed the chunks planner); since
    session 14 it refuses the read in every planner, as 2.0 does (every key of every node
    vh5 reads is checked, src/hdf5/chunk_btree.rs `Tree::check_keys`; the whole tree, when small
    enough, at the dataset's first use: src/hdf5/chunk_tree.rs)."""
    import numpy as np

    spec = {
        "alloc": "late",
        "chunks": [2, 4, 7],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "alloc",
        "fillvalue": False,
        "filters": [["fletcher32"], ["unreg_opt"], ["deflate", 7]],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [None, None, None],
        "resize": [5, 2, 6],
        "seed": 2088360435,
        "shape": [2, 1, 4],
        "type": "cmpd_padded",
        "written": "none",
    }
    path, bad = str(tmp_path / "s.h5"), str(tmp_path / "bad.h5")
    C.build(spec, path)
    X.apply(path, bad, ("metadata flip", 1586, 241, "metadata byte 1586"))
    shape = (5, 2, 6)
    rng = np.random.default_rng(spec["seed"] + 7)
    rows, dst_shape, _ = R.row_table(shape, rng, int(rng.integers(1, 5)))
    last = (
        np.zeros(3, np.uint64),
        np.zeros(3, np.uint64),
        np.array(shape, np.uint64),
        np.ones(3, np.uint64),
        np.ones(3, np.uint64),
    )
    full = tuple(np.concatenate([t, v[None, :]]) for t, v in zip(rows, last))
    m = C.native_mask(spec["type"])
    task = {
        "kind": "read",
        "case": 0,
        "path": bad,
        "name": "d",
        "rows": full,
        "dst_shape": tuple(max(a, b) for a, b in zip(dst_shape, shape)),
        "dst_layout": "C",
        "native_size": C.native_type(C.type_of(spec["type"])[0]).get_size(),
        "expected": None,
        "mask": None if m is None else m.tobytes(),
        "oracle_error": "libhdf5 2.0 fails",
    }
    res = R.run_settings([task], CORRUPT_CONFIGS, str(tmp_path), "btree1")
    outs = {cfg: r[0] for cfg, r in res.items()}
    assert all(o["outcome"] == "error" and o["status"] == "VH5_ERR_HDF5" for o in outs.values()), outs


def test_fill_time_never_unwritten_elements_of_new_chunks_are_undefined(tmp_path):
    """Fill time "never": only the elements of the chunks a write creates (not stored before
    it) that it does not cover are left out of the comparison (HDF5 writes no fill value
    there; libhdf5 1.10.8, 1.14 and 2.2 leave zeros, 2.0 the fill value: seed 0 case 4398,
    seed 4 case 2219 at 8000 cases, nothing written before; seed 197 case 88 at 4000 cases,
    a dataset written in part); covered elements, chunks stored before the write and untouched
    chunks are still compared."""
    import numpy as np

    spec = {"fill_time": "never", "written": "none", "layout": "chunked", "chunks": [2, 3]}
    # (source start, dataset start, count, source step, dataset step): rows writing [0, 1:3]
    # and [0, 4]
    rows = (
        np.array([[0, 0], [0, 0]]),
        np.array([[0, 1], [0, 4]]),
        np.array([[1, 2], [1, 1]]),
        np.ones((2, 2), np.int64),
        np.ones((2, 2), np.int64),
    )
    path = str(tmp_path / "f.h5")
    with h5py.File(path, "w") as f:  # chunk [0, 1] (elements [0:2, 3:6]) stored, [0, 0] not
        d = f.create_dataset("d", shape=(4, 6), dtype="u1", chunks=(2, 3), fillvalue=9)
        d[0, 3] = 1
    want = np.zeros((4, 6), bool)
    want[0:2, 0:3] = True  # the chunks the write touches, not stored before it ...
    want[0, 1:3] = False  # ... but not the elements it wrote
    for written, extra in (("none", [(slice(0, 2), slice(3, 6))]), ("part", [])):
        u = np.frombuffer(R.undefined_after_write(dict(spec, written=written), (4, 6), rows, (1, 2), path), bool)
        w = want.copy()
        for sl in extra:  # nothing written: every touched chunk counts as new
            w[sl] = True
            w[0, 4] = False
        assert (u.reshape(4, 6) == w).all(), (written, u.reshape(4, 6))
    assert R.undefined_after_write(dict(spec, fill_time="alloc"), (4, 6), rows, (1, 2), path) is None


def test_virtual_dataset_damaged_selection_refused_before_libhdf5_opens_it(tmp_path):
    """Seed 3 at 8000 cases, case 8031: one flipped byte (metadata byte 2117) in the source
    selection of a small virtual dataset made libhdf5 1.10.8's H5Oopen crash (SIGSEGV in
    H5S_select_deserialize) or loop forever, in vh5's group listing and dataset open. vh5 now
    reads the layout class from the object header itself and refuses the virtual dataset
    without letting libhdf5 open it; listings take an object's type from H5Oget_info_by_name.
    Child processes (a crash must not take pytest down), three times each (it crashed in
    about 8 runs of 10)."""
    spec = {
        "alloc": "default",
        "chunks": None,
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "alloc",
        "fillvalue": False,
        "filters": [],
        "layout": "virtual",
        "libver": "v110",
        "maxshape": [278],
        "resize": None,
        "seed": 608990844,
        "shape": [278],
        "type": "<u1",
        "written": "all",
    }
    path, bad = str(tmp_path / "s.h5"), str(tmp_path / "bad.h5")
    C.build(spec, path)
    X.apply(path, bad, ("metadata flip", 2117, 233, "metadata byte 2117"))
    _open_refused_in_child(bad, "UnsupportedError", ["virtual dataset", "bad.h5"], runs=3, listed=True)
    _cli_info_names(bad, "virtual")


def test_enum_datatype_size_damaged_refused_before_libhdf5_opens_it(tmp_path):
    """Seed 26 at 8000 cases, case 7587: one flipped byte (metadata byte 863) in the size of
    an `enum>i2` dataset's datatype message (an enumeration of 1006632962 bytes over a 2-byte
    base type) made libhdf5 1.10.8's H5Oopen crash (SIGSEGV in H5T_copy) in every planner;
    libhdf5 2.0 refuses it ("ENUM datatype size does not match parent"). vh5 now reads the
    datatype message from the object header itself and refuses such a type (an HDF5 error
    naming the object, the file and both sizes) before libhdf5 opens the dataset, in the
    dataset open and the listing; h5py's libhdf5 refuses the file too. Child processes (a crash
    must not take pytest down)."""
    spec = {
        "alloc": "late",
        "chunks": [29],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "alloc",
        "fillvalue": False,
        "filters": [["shuffle"], ["deflate", 7], ["unreg_opt"]],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [29],
        "resize": [11],
        "seed": 1635544187,
        "shape": [26],
        "type": "enum>i2",
        "written": "part",
    }
    _damaged_type_refused(
        tmp_path,
        spec,
        (863, 60),
        "ENUM datatype size does not match parent",
        ["datatype message is damaged: an enumeration of", "bad.h5"],
        (11,),
        "enumeration of",
    )


def test_compound_member_past_compound_end_refused_before_libhdf5_opens_it(tmp_path):
    """Seed 102 at 8000 cases, case 5747: one flipped byte (metadata byte 951) in a compound
    member's offset of a `>c8` dataset (a complex number: a compound of two `>f4`), the second
    member now at byte offset 1694498820 of an 8-byte compound, made libhdf5 1.10.8 crash
    (SIGSEGV) opening the dataset in every planner; libhdf5 2.0 refuses it ("member type
    extends outside its parent compound type"). vh5's datatype peek refuses such a type before
    libhdf5 opens the object (dataset open and listing); h5py's libhdf5 refuses it too."""
    spec = {
        "alloc": "late",
        "chunks": [1, 13],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "alloc",
        "fillvalue": True,
        "filters": [],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [4, None],
        "resize": None,
        "seed": 1919193703,
        "shape": [1, 8],
        "type": ">c8",
        "written": "part",
    }
    _damaged_type_refused(
        tmp_path,
        spec,
        (951, 101),
        "member type extends outside its parent compound type",
        ["datatype message is damaged: compound member 1 of 4 bytes", "reaches past the compound's 8 bytes", "bad.h5"],
        (1, 8),
        "compound member",
    )


def test_float_type_fields_outside_precision_refused_before_libhdf5_opens_it(tmp_path):
    """Seed 104 at 8000 cases, case 4971: one flipped byte (metadata byte 887) in the mantissa
    size of a big-endian float type (23 -> 175 bits in a 32-bit precision). libhdf5 1.10.8
    opened the dataset and converted with that type: every planner and process read other
    values (uninitialised bits) where libhdf5 2.0 refuses the type ("mantissa range out of
    bounds"). vh5's datatype peek refuses number types whose bit fields do not fit (what
    H5Tset_fields refuses to create) before libhdf5 opens the object; types h5py creates,
    custom ones included, open as before."""
    spec = {
        "alloc": "early",
        "chunks": [1, 11],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "ifset",
        "fillvalue": True,
        "filters": [["shuffle"], ["deflate", 5]],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [9, 12],
        "resize": [8, 12],
        "seed": 1588760345,
        "shape": [6, 12],
        "type": "nonieee>f4",
        "written": "none",
    }
    _damaged_type_refused(
        tmp_path,
        spec,
        (887, 184),
        "mantissa range out of bounds",
        [
            "datatype message is damaged: a floating-point type with its exponent or mantissa outside the precision",
            "mantissa 175 bits",
        ],
        (8, 12),
        "floating-point type",
    )


def _damaged_type_refused(tmp_path, spec, flip, h5py_says, vh5_says, shape, cli_word):
    """Build `spec`'s file, flip metadata byte `flip[0]` by xor `flip[1]`: h5py's libhdf5
    refuses the damaged dataset saying `h5py_says`, vh5 refuses it (child process) with an
    HDF5 error holding `vh5_says` (the dataset still listed), opens the undamaged one (extent `shape`) as before, and
    `vh5 info` of the damaged file names `cli_word`."""
    path, bad = str(tmp_path / "s.h5"), str(tmp_path / "bad.h5")
    C.build(spec, path)
    X.apply(path, bad, ("metadata flip", flip[0], flip[1], f"metadata byte {flip[0]}"))
    with h5py.File(bad, "r") as f:
        with pytest.raises(Exception, match=h5py_says):
            f["d"]
    _open_refused_in_child(bad, "HDF5Error", vh5_says, listed=True)
    with __import__("vh5").File(path) as f:
        assert f["d"].shape == shape
    _cli_info_names(bad, cli_word)


@pytest.mark.parametrize("case", ["u4_size", "c16_member_offset"])
def test_numeric_size_or_compound_member_damaged_refused_before_libhdf5_opens_it(tmp_path, case):
    """Seed 54 at 8000 cases, case 6866 (metadata byte 862: a `<u4` of 9764868 bytes) and seed
    58, case 4513 (metadata byte 966: a `<c16` member at offset 4915208): libhdf5 1.10.8
    crashed (SIGSEGV) opening the dataset in every planner; libhdf5 2.0 refuses both ("datatype
    has unusually large # of unused bits", "member type extends outside its parent compound
    type"). vh5 now refuses them from the datatype message before libhdf5 opens the dataset."""
    specs = {
        "u4_size": (
            {
                "alloc": "late",
                "chunks": [2],
                "direct_chunk": False,
                "dont_filter_partial": False,
                "fill_time": "ifset",
                "fillvalue": False,
                "filters": [],
                "index": "btree1",
                "layout": "chunked",
                "libver": "earliest",
                "maxshape": [None],
                "resize": None,
                "seed": 423186046,
                "shape": [4],
                "type": "<u4",
                "written": "all",
            },
            (862, 149),
            "unusually large # of unused bits",
            "unusually many unused bits",
        ),
        "c16_member_offset": (
            {
                "alloc": "late",
                "chunks": [6, 2, 3],
                "direct_chunk": False,
                "dont_filter_partial": False,
                "fill_time": "alloc",
                "fillvalue": True,
                "filters": [["deflate", 6]],
                "index": "btree1",
                "layout": "chunked",
                "libver": "earliest",
                "maxshape": [9, 5, 4],
                "resize": None,
                "seed": 67475886,
                "shape": [6, 2, 4],
                "type": "<c16",
                "written": "part",
            },
            (966, 75),
            "extends outside its parent compound type",
            "reaches past the compound's 16 bytes",
        ),
    }
    spec, flip, h5py_says, words = specs[case]
    _damaged_type_refused(
        tmp_path,
        spec,
        flip,
        h5py_says,
        ["datatype message is damaged", words, "bad.h5"],
        tuple(spec["shape"]),
        "damaged",
    )


def test_nbit_nothing_to_pack_flag_of_any_nonzero_value_counts(tmp_path):
    """Seed 54 at 8000 cases, case 5786 (metadata byte 1174): a flipped byte of nbit's client
    data [1] (1 -> 3080193) in a shuffle + nbit + deflate pipeline. libhdf5 tests that value
    for non-zero: nbit still has nothing to do, and libhdf5 1.10 reads the scrambled values
    of a pass-through nbit between filters; vh5 only counted the value 1 as pass-through and
    read them. Now any non-zero value counts, and the read is refused as for the undamaged
    file."""
    import numpy as np

    spec = {
        "alloc": "incr",
        "chunks": [1, 32],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "never",
        "fillvalue": False,
        "filters": [["shuffle"], ["nbit"], ["deflate", 3]],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [12, 32],
        "resize": [6, 32],
        "seed": 1015926630,
        "shape": [9, 32],
        "type": "cmpd_packed",
        "written": "part",
    }
    path, bad = str(tmp_path / "s.h5"), str(tmp_path / "bad.h5")
    C.build(spec, path)
    X.apply(path, bad, [m for m in X.mutations(path, spec["seed"]) if m[3] == "metadata byte 1174"][0])
    with h5py.File(bad, "r") as f:
        assert f["d"].id.get_create_plist().get_filter(1)[2][1] == 3080193
    vh5 = __import__("vh5")
    for p in (path, bad):
        with vh5.File(p) as f:
            d = f["d"]
            dst = np.zeros(d.shape, d.dtype.newbyteorder("="))
            if vh5.hdf5_version().version >= (2, 2, 0):
                vh5.read_many_slices(d, dst, [[0, 0]], [[0, 0]], [list(d.shape)])
                continue
            with pytest.raises(vh5.UnsupportedError, match=r"\[shuffle, nbit, deflate\].*nbit has nothing to do here"):
                vh5.read_many_slices(d, dst, [[0, 0]], [[0, 0]], [list(d.shape)])


def test_filter_pipeline_message_damaged_refused_before_libhdf5_opens_it(tmp_path):
    """Seed 43 at 8000 cases, case 6059: one flipped byte (metadata byte 915) in the name
    length of a fletcher32 + nbit pipeline message (16 -> 31248 bytes, past the message's 80):
    libhdf5 2.0 refuses to open the dataset ("ran off end of input buffer while decoding"),
    libhdf5 1.10.8 opened it, decoding the next filter from bytes after the message, and vh5
    read data h5py could not (run to run different verdicts). vh5 now reads the pipeline
    message from the object header itself and refuses a damaged one (an HDF5 error naming the
    object, the file and the damage) before libhdf5 opens the dataset."""
    spec = {
        "alloc": "default",
        "chunks": [17],
        "direct_chunk": True,
        "dont_filter_partial": False,
        "fill_time": "never",
        "fillvalue": False,
        "filters": [["fletcher32"], ["nbit"]],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [None],
        "resize": None,
        "seed": 467139446,
        "shape": [13],
        "type": ">f2",
        "written": "none",
    }
    path, bad = str(tmp_path / "s.h5"), str(tmp_path / "bad.h5")
    C.build(spec, path)
    X.apply(path, bad, ("metadata flip", 915, 122, "metadata byte 915"))
    with h5py.File(bad, "r") as f:
        with pytest.raises(Exception, match="ran off end of input buffer"):
            f["d"]
    _open_refused_in_child(
        bad,
        "HDF5Error",
        ["filter pipeline message is damaged: filter 0's name (31248 bytes) runs past the end", "bad.h5"],
        listed=True,
    )
    with __import__("vh5").File(path) as f:  # the undamaged file: opened as before
        assert f["d"].shape == (13,)
    _cli_info_names(bad, "filter pipeline message is damaged")


def test_chunk_btree_key_off_the_chunk_grid_refused(tmp_path):
    """Seed 53 at 8000 cases, case 8244 (and seed 46, cases 5566 and 7690): one flipped byte
    of a chunk dimension in the layout message (1 -> 152) leaves the v1 B-tree's keys off the
    chunk grid. libhdf5 2.0 refuses to read ("bad coordinate offset"); libhdf5 1.10.8 read the
    chunks on the wrong grid and vh5 returned other or uninitialised bytes, different in each
    planner. vh5 now checks the keys of the B-tree's root node at the dataset's first use and
    refuses (an HDF5 error naming the dataset, the key and the chunk dimensions) in every
    planner; the undamaged file reads as h5py reads it."""
    import subprocess
    import sys

    import numpy as np

    spec = {
        "alloc": "early",
        "chunks": [1, 1],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "ifset",
        "fillvalue": True,
        "filters": [],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [None, 11],
        "resize": [4, 11],
        "seed": 1690758590,
        "shape": [1, 11],
        "type": "<u8",
        "written": "all",
    }
    path, bad = str(tmp_path / "s.h5"), str(tmp_path / "bad.h5")
    C.build(spec, path)
    X.apply(path, bad, ("metadata flip", 955, 153, "metadata byte 955"))
    with h5py.File(bad, "r") as f:
        with pytest.raises(Exception, match="bad coordinate offset"):
            f["d"][...]
    code = (
        "import sys, numpy as np, vh5; d = vh5.File(sys.argv[1])['d']; dst = np.zeros(d.shape, np.uint64)\n"
        "try:\n    vh5.read_many_slices(d, dst, [[0, 0]], [[0, 0]], [list(d.shape)])\nexcept vh5.HDF5Error as e:\n    print(e.message)\n"
        "else:\n    np.save(sys.argv[2], dst)"
    )
    pkg = str(REPO / "bindings" / "python") if os.environ.get("VH5_TEST_INSTALLED") != "1" else ""
    for planner in ("auto", "chunks", "rows"):
        env = dict(
            os.environ,
            VH5_PLANNER=planner,
            PYTHONPATH=os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")])),
        )
        for f, want in ((bad, "not multiples of the chunk dimensions and element size [152, 1,"), (path, None)):
            out = str(tmp_path / f"{planner}.npy")
            r = subprocess.run(
                [sys.executable, "-c", code, f, out], env=env, capture_output=True, text=True, timeout=60
            )
            assert r.returncode == 0, r.stderr[-1500:]
            if want:
                # vh5's own check (it reads the B-tree with libhdf5 1.10); a newer libhdf5
                # (the static 2.2 build) refuses the key itself first, with its own message
                assert "bad coordinate offset" in r.stdout, (planner, r.stdout)
                if __import__("vh5").hdf5_version().version[:2] == (1, 10):
                    assert want in r.stdout, (planner, r.stdout)
            else:
                with h5py.File(path) as h:
                    np.testing.assert_array_equal(np.load(out), h["d"][...])


def _open_refused_in_child(bad, error, words, runs=1, listed=False):
    """Open dataset "d" of the damaged file `bad` with vh5 in a child process (a crash must not
    take pytest down), `runs` times: refused with vh5.<error> whose message holds `words`
    (and, when `listed`, "d" is in the file's listing)."""
    import subprocess
    import sys

    code = f"""
import sys
if {os.environ.get("VH5_TEST_INSTALLED") != "1"!r}:
    sys.path.insert(0, {str(REPO / "bindings" / "python")!r})
import vh5
with vh5.File({bad!r}) as f:
    if {listed!r}:
        assert "d" in list(f.keys()), list(f.keys())
    try:
        f["d"]
        raise SystemExit("opened")
    except vh5.{error} as e:
        assert all(w in e.message for w in {words!r}), e.message
print("ok")
"""
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout + r.stderr)


def _cli_info_names(bad, word):
    """`vh5 info` of the damaged file `bad` ends (status 0 or 1, no crash) mentioning `word`."""
    import subprocess

    cli = os.environ.get("VH5_CLI", str(REPO / "target" / "release" / "vh5"))
    if os.path.exists(cli):
        r = subprocess.run([cli, "info", bad], capture_output=True, text=True, timeout=60)
        assert r.returncode in (0, 1) and word in (r.stdout + r.stderr), (r.returncode, r.stdout + r.stderr)


def test_worker_memory_limit_is_a_crash_not_a_refusal(tmp_path, monkeypatch):
    """Seed 108 at 8000 cases grew conformance workers to 7-10 GB (libhdf5 under h5py building
    a file, libhdf5 1.10.8 under the rows planner). Every worker caps its address space
    (VH5_CONFORMANCE_WORKER_MEMORY, default 3 GiB); a task that reaches the cap is recorded as
    a crash with status "memory limit" (the test fails), never as a refusal. Here the
    destination of a read (2 GiB) does not fit under a 256 MiB cap."""
    import numpy as np

    path = str(tmp_path / "s.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(4, dtype=np.uint8))
    monkeypatch.setenv("VH5_CONFORMANCE_WORKER_MEMORY", "256M")
    z = np.zeros((1, 1), np.uint64)
    task = {
        "kind": "read",
        "path": path,
        "name": "d",
        "rows": (z, z, z + 1, z + 1, z + 1),
        "dst_shape": (1 << 31,),
        "dst_layout": "C",
        "native_size": 1,
        "expected": None,
        "oracle_error": None,
        "mask": None,
    }
    res = R.run_batch([task], "auto", 1, str(tmp_path), "memory")
    assert res[0]["outcome"] == "crash" and res[0]["status"] == "memory limit", res[0]
    import types

    for oracle_failed in (None, "libhdf5 refused too"):  # a crash fails whatever libhdf5 said
        assert classify(types.SimpleNamespace(features=[]), res[0], None, oracle_failed)[0] == "FAIL"


def test_write_reference_doubted_when_libhdf5_write_contradicts_its_own_read_and_rebuilt_alone(tmp_path):
    """Seed 121 at 8000 cases, specs 490 and 572 (``>c8``, nothing written before): a build
    worker's libhdf5 2.0, its heap written out of bounds by earlier specs of the same process
    (scaleoffset / szip filters, see _conformance_run.reference_doubt), read its own write back
    as zeros where the rows wrote values, from run to run: 6 write cases blamed vh5 for writing
    the rows. The write reference is now checked against libhdf5's read before the write + the
    rows and a doubtful spec is built again alone in a fresh process."""
    import pickle

    import numpy as np

    spec = {
        "alloc": "incr",
        "chunks": None,
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "alloc",
        "fillvalue": False,
        "filters": [],
        "layout": "contiguous",
        "libver": "v110",
        "maxshape": [5, 5],
        "resize": None,
        "seed": 773069192,
        "shape": [5, 5],
        "type": ">c8",
        "written": "none",
    }
    built = R.build_one(0, spec, str(tmp_path))
    (task,) = [t for op, _, t in built if op == "write"]
    assert task["expected"] is not None and task["reference_doubt"] is None
    full, _ = C.oracle_read(task["path"])
    src = np.frombuffer(task["src"], f"V{task['native_size']}").reshape(task["src_shape"])
    # what the failing run's reference was: the file as before the write (all zeros)
    why = R.reference_doubt(spec, full, full.tobytes(), src, task["rows"], task["mask"], task["undefined"])
    assert why and why.startswith("3 elements of libhdf5 2.0's write differ")
    # a doubtful spec is rebuilt in a process of its own, which answers as the standalone run
    doubted = [(op, extra, dict(t, reference_doubt=why)) for op, extra, t in built]
    with open(tmp_path / "s0.pkl", "wb") as fh:
        pickle.dump(doubted, fh)
    again = R.rebuild_alone(0, spec, str(tmp_path), doubted)
    (task2,) = [t for op, _, t in again if op == "write"]
    assert task2["reference_doubt"] is None and task2["expected"] == task["expected"]


def _small_spec(seed, filters=()):
    """A chunked `<i4` dataset of 8 elements, every chunk written, with `filters`."""
    return {
        "alloc": "incr",
        "chunks": [4],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "alloc",
        "fillvalue": False,
        "filters": [list(f) for f in filters],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [8],
        "resize": None,
        "seed": seed,
        "shape": [8],
        "type": "<i4",
        "written": "all",
    }


def _build_pids(specs, workdir):
    """{spec index: the pid of the process that built it} through R.build_cases."""
    cases, rtasks, wtasks, errors = R.build_cases(specs, workdir)
    assert not errors, errors
    pids = {}
    for t in rtasks + wtasks:
        pids.setdefault(specs.index(cases[t["case"]].spec), set()).add(t["build_pid"])
    assert all(len(p) == 1 for p in pids.values()) and len(pids) == len(specs), pids
    return {k: p.pop() for k, p in pids.items()}


def test_scaleoffset_szip_or_nbit_spec_built_in_a_process_no_later_spec_shares(tmp_path):
    """libhdf5 2.0 writes out of its heap blocks building scaleoffset, szip and nbit specs
    (valgrind); build workers ran hundreds of specs in one process and later specs got silently
    wrong references (seed 121 at 8000 cases, specs 490 and 572). Such a spec is now built in a
    child forked for it: neither the spec after it nor the one before runs in its process,
    while other specs of the same worker still share one (no fresh interpreter per spec)."""
    specs = [
        _small_spec(1),
        _small_spec(2, [("scaleoffset",)]),
        _small_spec(3),
        _small_spec(4),
        _small_spec(5, [("szip",)]),
        _small_spec(6),
    ]  # build-a: 0-2, build-b: 3-5
    assert [R.damages_heap(s) for s in specs] == [False, True, False, False, True, False]
    assert R.damages_heap(_small_spec(7, [("deflate", 4), ("nbit",)]))
    pid = _build_pids(specs, str(tmp_path))
    for before, damaging, after in ((0, 1, 2), (3, 4, 5)):
        assert pid[damaging] not in (pid[before], pid[after]), pid
        assert pid[before] == pid[after], pid
    assert len(set(pid.values())) == 4, pid


def test_build_worker_replaced_after_bounded_number_of_specs(tmp_path, monkeypatch):
    """A build worker builds at most R.BUILD_WORKER_SPECS specs, then a fresh one continues:
    a spec damaging libhdf5's heap outside the known filters spoils a bounded number of later
    references."""
    monkeypatch.setattr(R, "BUILD_WORKER_SPECS", 2)
    pid = _build_pids([_small_spec(k) for k in range(6)], str(tmp_path))  # build-a: 0-2, build-b: 3-5
    assert pid[0] == pid[1] != pid[2] and pid[3] == pid[4] != pid[5], pid


def test_forked_build_dying_takes_its_worker_down_the_same_way():
    """A forked build (_conformance_worker.in_own_process) killed by a signal kills its worker
    with that signal, so run_batch records the spec's crash as for an unforked build ("h5py
    could not write it: signal 11") and continues with a fresh worker; a build that returns
    hands its result to the worker."""
    import subprocess
    import sys

    code = (
        "import os, signal, sys; sys.path.insert(0, sys.argv[1]); import _conformance_worker as W\n"
        "assert W.in_own_process(lambda: {'pid': os.getpid()})['pid'] != os.getpid()\n"
        "W.in_own_process(lambda: os.kill(os.getpid(), signal.SIGSEGV))\nprint('survived')"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).resolve().parent)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == -11 and "survived" not in r.stdout, (r.returncode, r.stdout, r.stderr[-1000:])


def test_fixed_string_fill_value_is_the_drawn_value_not_a_heap_address(tmp_path):
    """Seed 121 at 8000 cases, specs 94, 161 and 385 (``S7`` with a fill value): the fill value
    stored in the file, and so every unwritten element libhdf5 and vh5 read, was the first 7
    bytes of a heap address (different from run to run, ``0x7f...``): h5py >= 3.7's
    ``PropDCID.set_fill_value`` passes a fixed-length ``S`` array like a variable-length string.
    The builder now sets such fill values through libhdf5 itself (_conformance_files.set_fill_value)."""
    import numpy as np

    spec = {
        "alloc": "early",
        "chunks": [12, 1],
        "direct_chunk": False,
        "dont_filter_partial": False,
        "fill_time": "ifset",
        "fillvalue": True,
        "filters": [],
        "index": "btree1",
        "layout": "chunked",
        "libver": "earliest",
        "maxshape": [None, 3],
        "resize": [9, 3],
        "seed": 1109717225,
        "shape": [8, 3],
        "type": "S7",
        "written": "all",
    }
    path = str(tmp_path / "s.h5")
    C.build(spec, path)
    drawn = C.values("S7", 1, np.random.default_rng(spec["seed"]))[0]  # build's first draw
    assert len(drawn.rstrip(b"\0")) == 7  # (a pointer has at most 6 significant bytes)
    with h5py.File(path, "r") as f:
        assert f["d"].fillvalue == drawn
        assert list(f["d"][8, [0, 2]]) == [drawn, drawn]  # the row the resize added, not written after it
    full, _ = C.oracle_read(path)
    assert full[8, 0].tobytes() == drawn
