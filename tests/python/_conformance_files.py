"""HDF5 files for the differential conformance suite (test_conformance.py), written by h5py.

A *storage spec* is a plain JSON-able dict (drawn by the hypothesis strategy
:func:`storage_specs`) that fully determines one dataset: element type, shape, layout, chunk
index, chunk shape, filter pipeline and its order, chunk options, allocation time, fill time,
fill value, what is written, resizes, per-chunk filter masks. :func:`build` writes it with
h5py's own libhdf5 (2.0, low-level API; ``ctypes`` into the same library for
``H5Pset_chunk_opts`` and ``H5Tget_native_type``, which h5py lacks), with libver bounds that
libhdf5 1.10 (vh5's) reads. The same spec always gives the same file content (values come from
a generator seeded by the spec), so a failing case is reproduced from its printed spec with
``python3 tests/python/_conformance_run.py '<spec json>'``.

:func:`oracle_read` is the reference read: libhdf5's ``H5Dread`` of the whole dataset through
h5py with the memory type ``H5Tget_native_type(file type)``, which is the memory type vh5 reads
with (vh5 delivers native byte order; opaque/compound types in their native layout).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os

import h5py
import numpy as np
from hypothesis import strategies as st

# --------------------------------------------------------------------------------------
# h5py's own libhdf5, for the property-list calls h5py does not wrap

_LIB = None


def h5lib():
    """ctypes handle of the libhdf5 inside h5py's wheel (h5py.libs/libhdf5-*.so*)."""
    global _LIB
    if _LIB is None:
        here = os.path.dirname(h5py.__file__)
        cands = glob.glob(os.path.join(here, os.pardir, "h5py.libs", "libhdf5-*.so*"))
        cands = [c for c in cands if "hdf5_hl" not in c]
        lib = ctypes.CDLL(cands[0]) if cands else ctypes.CDLL(h5py.h5z.__file__)
        lib.H5Tget_native_type.restype = ctypes.c_int64
        lib.H5Tget_native_type.argtypes = [ctypes.c_int64, ctypes.c_int]
        lib.H5Pset_chunk_opts.restype = ctypes.c_int
        lib.H5Pset_chunk_opts.argtypes = [ctypes.c_int64, ctypes.c_uint]
        lib.H5Pset_fill_value.restype = ctypes.c_int
        lib.H5Pset_fill_value.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        _LIB = lib
    return _LIB


H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS = 0x0002
LZF_ID = 32000
UNREG_ID = 40000  # no filter of this id exists in either libhdf5 (HDF5_PLUGIN_PATH is emptied)
#: feature of cases whose pipeline no libhdf5 decodes reliably (see unreliable_pipeline)
UNRELIABLE = "filter: pipeline libhdf5 cannot decode reliably (scaleoffset / nbit / szip)"
#: feature of cases (besides UNRELIABLE) whose pipeline has a pass-through nbit / scaleoffset
#: between filters: libhdf5 < 2.2.0 reads its chunks scrambled, 2.2.0 reads them right
PASSTHROUGH_BETWEEN = "filter: pass-through nbit / scaleoffset between filters (libhdf5 < 2.2 reads it scrambled)"
#: feature of write cases whose pipeline libhdf5 < 2.2.0 stores cut short (see cut_pipeline)
CUT_WRITES = "filter: pass-through nbit after deflate (libhdf5 < 2.2 writes chunks cut short)"


def native_type(tid):
    """h5py TypeID of ``H5Tget_native_type(tid, H5T_DIR_DEFAULT)``."""
    return h5py.h5t.TypeID(h5lib().H5Tget_native_type(tid.id, 0)).copy()  # copy(): the typed subclass


# --------------------------------------------------------------------------------------
# element types

ENUM_MEMBERS = {"A": 0, "B": 5, "C": -3, "D": 1000}
INT_KINDS = [f"{o}{k}{n}" for o in "<>" for k in "iu" for n in (1, 2, 4, 8) if not (n == 1 and o == ">")]
FLOAT_KINDS = [f"{o}f{n}" for o in "<>" for n in (2, 4, 8)]
COMPLEX_KINDS = [f"{o}c{n}" for o in "<>" for n in (8, 16)]
SPECIAL = [
    "bool",
    "enum<i2",
    "enum>i2",
    "S7",
    "V5",
    "array<i2",
    "array>f4",
    "cmpd_padded",
    "cmpd_packed",
    "cmpd_nested",
    "nonieee>f4",
    "nonieee<f8",
    "oddint<i4",
    "oddint>u2",
]
ALL_TYPES = INT_KINDS + FLOAT_KINDS + COMPLEX_KINDS + SPECIAL
#: HDF5 2.x's complex number class (H5T_COMPLEX_IEEE_F32LE/BE, F64LE/BE), h5py >= 3.16
#: reading it as these numpy dtypes. Drawn (instead of h5py's {r, i} compound) for half of
#: the complex specs, by their seed, when NATIVE_COMPLEX is set: test_conformance sets it
#: when h5py's libhdf5 (which writes the files) and vh5's (which reads them) are both >= 2.0.
NATIVE_COMPLEX_KINDS = [f"ncplx{k}" for k in COMPLEX_KINDS]
NATIVE_COMPLEX = False

_CMPD = {
    "cmpd_padded": np.dtype({"names": ["a", "b"], "formats": ["<i2", ">f8"], "offsets": [0, 8], "itemsize": 24}),
    "cmpd_packed": np.dtype([("a", "i1"), ("b", "<f8"), ("c", ">i2"), ("s", "S3")]),
    "cmpd_nested": np.dtype([("x", ">u2"), ("in", [("p", "<f4"), ("q", "i1")]), ("y", "<i8")]),
}


def type_of(name):
    """(h5py TypeID of the file type, numpy dtype h5py writes values with)."""
    if name in NATIVE_COMPLEX_KINDS:
        dt = np.dtype(name[5:])
        order = "BE" if dt.byteorder == ">" else "LE"
        return getattr(h5py.h5t, f"COMPLEX_IEEE_F{4 * dt.itemsize}{order}"), dt
    if name in _CMPD:
        dt = _CMPD[name]
        return h5py.h5t.py_create(dt), dt
    if name == "bool":
        return h5py.h5t.py_create(np.dtype("?"), logical=True), np.dtype("?")
    if name.startswith("enum"):
        dt = h5py.enum_dtype(ENUM_MEMBERS, basetype=name[4:])
        return h5py.h5t.py_create(dt, logical=True), np.dtype(name[4:])
    if name.startswith("array"):
        dt = np.dtype((name[5:], (2, 3)))
        return h5py.h5t.py_create(dt), dt
    if name.startswith("nonieee"):
        base = {">f4": h5py.h5t.IEEE_F32BE, "<f8": h5py.h5t.IEEE_F64LE}[name[7:]]
        t = base.copy()
        t.set_norm(h5py.h5t.NORM_NONE)
        return t, np.dtype(name[7:]).newbyteorder("=")
    if name.startswith("oddint"):
        base = {"<i4": h5py.h5t.STD_I32LE, ">u2": h5py.h5t.STD_U16BE}[name[6:]]
        t = base.copy()
        t.set_precision(12 if name.endswith("i4") else 9)
        t.set_offset(3 if name.endswith("i4") else 2)
        return t, np.dtype(name[6:]).newbyteorder("=")
    dt = np.dtype(name)
    return h5py.h5t.py_create(dt), dt


def mem_type_of(name):
    """The memory type h5py writes values() of type `name` with."""
    tid, dt = type_of(name)
    if name in NATIVE_COMPLEX_KINDS:
        return tid  # the values are in its byte order (h5py's {r, i} compound of them would do too)
    if name == "bool":
        return h5py.h5t.py_create(np.dtype("?"), logical=True)
    if name.startswith("enum"):
        return h5py.h5t.py_create(h5py.enum_dtype(ENUM_MEMBERS, basetype=dt), logical=True)
    return h5py.h5t.py_create(dt)


def type_features(name):
    if name in INT_KINDS:
        f = ["type: integer"] + (["type: big-endian"] if name[0] == ">" else [])
    elif name in FLOAT_KINDS:
        f = ["type: float16" if name.endswith("f2") else "type: IEEE float"] + (
            ["type: big-endian"] if name[0] == ">" else []
        )
    elif name in COMPLEX_KINDS:
        f = ["type: complex"] + (["type: big-endian"] if name[0] == ">" else [])
    elif name in NATIVE_COMPLEX_KINDS:
        f = ["type: complex (HDF5 2.x class)"] + (["type: big-endian"] if name[5] == ">" else [])
    elif name.startswith("cmpd"):
        f = ["type: compound " + name[5:]]
    elif name.startswith("enum"):
        f = ["type: enum"]
    elif name.startswith("array"):
        f = ["type: array"]
    elif name.startswith("nonieee"):
        f = ["type: non-IEEE float"]
    elif name.startswith("oddint"):
        f = ["type: integer, odd precision/offset"]
    else:
        f = [{"bool": "type: bool", "S7": "type: fixed string", "V5": "type: opaque"}[name]]
    return f


def values(name, n, rng):
    """n values of type `name` as the numpy dtype h5py writes them with."""
    _, dt = type_of(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype("?")
    if name.startswith("enum"):
        return rng.choice(np.array(list(ENUM_MEMBERS.values()), dt), n)
    if name.startswith("nonieee"):
        return (rng.standard_normal(n) * 4).astype(dt)
    if name.startswith("oddint"):
        lo, hi = (-2048, 2048) if name.endswith("i4") else (0, 512)
        return rng.integers(lo, hi, n).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=dt.newbyteorder("=")).astype(dt)
    if dt.kind in "fc":
        v = rng.standard_normal(n) * 100
        if dt.kind == "c":
            v = v + 1j * rng.standard_normal(n)
        v = v.astype(dt)
        if n > 3:
            v[rng.integers(0, n, 2)] = [0.0, np.inf][:2]
        return v
    return np.frombuffer(rng.bytes(n * dt.itemsize), dtype=dt).copy()


# --------------------------------------------------------------------------------------
# specs

FILTERS = ["deflate", "shuffle", "fletcher32", "scaleoffset", "nbit", "szip", "lzf", "unreg_opt"]
INDEX_NAMES = {
    "single": "index: single chunk",
    "implicit": "index: implicit",
    "fixed": "index: fixed array",
    "earray": "index: extensible array",
    "btree2": "index: v2 B-tree",
    "btree1": "index: v1 B-tree",
}


#: Feature of an integer scaleoffset keeping all its type's bits: libhdf5 stores its chunks
#: unchanged, with no scaleoffset header (try25: vh5 took the first data bytes for one).
SO_EVERY_BIT = "filter: scaleoffset keeping every bit (integers stored unchanged)"


def so_keeps_every_bit(spec):
    """Whether spec's integer scaleoffset keeps every bit (one integer spec in three, by its
    seed: no draw of the spec generator changes)."""
    return spec["type"] in INT_KINDS and spec["seed"] % 3 == 0


def _filter_ok(f, tname):
    numeric = tname in INT_KINDS or (tname in FLOAT_KINDS and not tname.endswith("f2"))
    if f in ("scaleoffset", "szip"):
        return numeric
    if f == "nbit":
        return numeric or tname.startswith(("oddint", "cmpd", "array")) or tname.endswith("f2")
    return True


def _chunked(r, spec, tname, shape):
    """The chunked part of a spec (index, max shape, chunk shape, filters, chunk options,
    resize, direct chunk); returns (shape, maxshape, chunks)."""
    ndim = len(shape)
    maxshape = list(shape)
    index = r.choice(list(INDEX_NAMES))
    spec["index"] = index
    if index == "btree1":
        spec["libver"] = "earliest"
        maxshape = [r.choice([None, s, s + 3]) for s in shape]
    elif index == "earray":
        k = r.randint(0, ndim - 1)
        maxshape = [None if i == k else r.choice([s, s + 2]) for i, s in enumerate(shape)]
    elif index == "btree2":
        if ndim < 2:
            ndim, shape = 2, shape + [r.randint(1, 8)]
        k = r.randint(0, ndim - 1)
        maxshape = [s if (i == k and ndim > 2) else None for i, s in enumerate(shape)]
    elif index != "single":
        maxshape = [r.choice([s, s, s + 4]) for s in shape]
    if index == "single":
        chunks = list(shape)
    else:
        chunks = []
        for s, m in zip(shape, maxshape):
            lim = m if m is not None else max(s + 5, 2)
            c = r.choice(["one", "small", "small", "whole", "big"])
            v = {"one": 1, "small": max(1, min(lim, r.randint(1, max(1, s)))), "whole": min(lim, s)}.get(c)
            if v is None:  # larger than the dataset (only with room: unlimited or maxshape > shape)
                v = min(lim, s + r.randint(1, 6))
            chunks.append(max(1, v))
        if index == "fixed" and chunks == maxshape:
            chunks[0] = max(1, chunks[0] - 1) if chunks[0] > 1 else chunks[0]
    nf = r.randint(0, 3)
    if index == "implicit":
        nf = 0
        spec["alloc"] = "early"
    cand = [f for f in FILTERS if _filter_ok(f, tname) and (f != "lzf" or r.random() < 0.3)]
    filters = r.sample(cand, min(nf, len(cand)))
    if "unreg_opt" in filters and "nbit" in filters:
        # libhdf5 2.0 (h5py) writes such files differently from run to run (a chunk it then
        # cannot read back, not always the same one): keep the suite reproducible
        filters.remove("nbit")
    spec["filters"] = [[f, r.randint(0, 9)] if f == "deflate" else [f] for f in filters]
    if index in ("fixed",) and not filters and spec["alloc"] == "early":
        spec["alloc"] = "incr"
    if filters and spec["alloc"] not in ("early",) and spec["libver"] == "v110":
        spec["dont_filter_partial"] = r.random() < 0.5
    grow = [m is None or m > s for s, m in zip(shape, maxshape)]
    if any(grow) and (r.random() < 0.5):
        spec["resize"] = [
            (s + r.randint(-s + 1, 6) if m is None else r.randint(1, m)) if g else s
            for s, m, g in zip(shape, maxshape, grow)
        ]
    spec["direct_chunk"] = bool(filters) and (tname in INT_KINDS or tname in FLOAT_KINDS) and (r.random() < 0.5)
    return shape, maxshape, chunks


@st.composite
def storage_specs(draw):
    """Hypothesis strategy of storage specs (one hypothesis-provided Random per spec)."""
    return spec_from_random(draw(st.randoms(use_true_random=False)))


def spec_from_random(r):
    """A storage spec (dict; see the module docs) from the choices of Random `r`."""
    tname = r.choice(ALL_TYPES)
    layout = r.choice(["contiguous", "compact", "chunked", "chunked", "chunked", "chunked", "external", "virtual"])
    if layout in ("external", "virtual") and r.random() < 0.5:
        layout = "chunked"
    if layout == "virtual" and tname not in INT_KINDS + FLOAT_KINDS:
        tname = r.choice(INT_KINDS + FLOAT_KINDS)
    ndim = r.randint(0 if layout in ("contiguous", "compact") else 1, 3)
    big = r.random() < 0.15  # now and then many chunks (the planner's threads get work)
    top = {1: 300 if big else 40, 2: 40 if big else 12, 3: 14 if big else 6}.get(ndim, 1)
    spec = {"type": tname, "layout": layout, "seed": r.randint(0, 2**31 - 1)}
    if NATIVE_COMPLEX and tname in COMPLEX_KINDS and spec["seed"] % 2:
        # decided by the seed already drawn: every spec's other draws stay a 1.x run's
        tname = spec["type"] = "ncplx" + tname
    shape = [r.randint(1, top) for _ in range(ndim)]
    spec["libver"] = "v110"
    spec["filters"] = []
    spec["dont_filter_partial"] = False
    spec["alloc"] = r.choice(["default", "early", "incr", "late"])
    spec["fill_time"] = r.choice(["ifset", "alloc", "ifset", "alloc", "never"])
    spec["fillvalue"] = (r.random() < 0.5) and not tname.startswith("array")
    spec["written"] = r.choice(["all", "part", "part", "none"])
    spec["resize"] = None
    spec["direct_chunk"] = False
    maxshape = list(shape)
    chunks = None
    if layout == "compact":
        spec["alloc"] = "early"
    elif layout == "chunked":
        shape, maxshape, chunks = _chunked(r, spec, tname, shape)
    spec["shape"] = shape
    spec["maxshape"] = maxshape
    spec["chunks"] = chunks
    return spec


def spec_id(spec):
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def features(spec):
    """Storage features of a spec (rows of the ROBUSTNESS.md table)."""
    f = list(type_features(spec["type"]))
    lay = spec["layout"]
    if not spec["shape"]:
        f.append("shape: scalar (0-d)")
    if lay == "contiguous":
        unalloc = spec["written"] == "none" and spec["alloc"] in ("late", "default", "incr")
        f.append("layout: contiguous, unallocated" if unalloc else "layout: contiguous")
    elif lay == "compact":
        f.append("layout: compact")
    elif lay == "external":
        f.append("layout: external storage (H5Pset_external)")
    elif lay == "virtual":
        f.append("layout: virtual (source in the same file)")
    else:
        f.append(INDEX_NAMES[spec["index"]])
        if spec["index"] == "earray" and spec["maxshape"][0] is not None:
            f.append("index: extensible array, unlimited axis not first")
        shape, chunks = spec["resize"] or spec["shape"], spec["chunks"]
        if any(c == 1 for c in chunks) and all(c == 1 for c in chunks):
            f.append("chunk: 1 element")
        if any(c > s for c, s in zip(chunks, shape)):
            f.append("chunk: larger than the dataset")
        if any(s % c for c, s in zip(chunks, shape)):
            f.append("chunk: partial edge chunks")
        if spec["resize"]:
            f.append("resized")
        if spec["dont_filter_partial"]:
            f.append("chunk opts: dont filter partial chunks")
        names = [x[0] for x in spec["filters"]]
        # H5Pset_szip adds szip as an optional filter: a chunk szip cannot shrink is stored
        # with szip's bit set in its filter mask (libhdf5's doing, not the spec's), whenever
        # libhdf5 stores a chunk: at a write, at early allocation, or at the first-element
        # write with which a vh5 write allocates late storage (seed 211: "written: none")
        if spec["direct_chunk"] or "szip" in names:
            f.append("filter mask: a chunk stored unfiltered")
        for n in names:
            f.append("filter: " + {"unreg_opt": "unregistered, optional"}.get(n, n))
        if "scaleoffset" in names and so_keeps_every_bit(spec):
            f.append(SO_EVERY_BIT)
        if len(names) >= 2:
            f.append("filters: two or more")
        if "deflate" in names and "shuffle" in names and names.index("deflate") < names.index("shuffle"):
            f.append("filters: deflate before shuffle")
        if "fletcher32" in names and names[-1] != "fletcher32":
            f.append("filters: fletcher32 not last")
    f.append("alloc time: " + spec["alloc"])
    f.append("fill time: " + spec["fill_time"])
    if spec["fillvalue"]:
        f.append("fill value: user")
    f.append("written: " + spec["written"])
    return f


def unreliable_pipeline(path, name="d"):
    """Why libhdf5 cannot decode the chunks of dataset `name` reliably, or None: the rule of
    vh5's ``src/hdf5/filter_support.rs`` (scaleoffset or compressing nbit after a filter that
    changed the chunk's length; szip given something other than whole pixels), from the
    pipeline libhdf5 stored. Filters other than libhdf5's own (ids > 6: lzf, the unregistered
    one) count as skipped, as in vh5's libhdf5, which has none of them."""
    with h5py.File(path, "r") as f:
        ds = f[name].id
        dcpl = ds.get_create_plist()
        if dcpl.get_layout() != h5py.h5d.CHUNKED:
            return None
        chunk_bytes = int(np.prod(dcpl.get_chunk())) * ds.get_type().get_size()
        filters = [dcpl.get_filter(i)[:3:2] for i in range(dcpl.get_nfilters())]
    n = chunk_bytes
    for fid, cd in filters:
        if fid > 6:
            continue
        packs = fid == 5 and (len(cd) < 2 or cd[1] == 0)
        if (fid == 6 or packs) and n != chunk_bytes:
            return f"filter {fid} after a filter that changed the chunk's length"
        if fid == 4:
            bpp = cd[2] if len(cd) > 2 else 64
            px = 1 if bpp <= 8 else 2 if bpp <= 16 else 4 if bpp <= 32 else 8
            if px > 1 and (n is None or n % px):
                return f"szip given {n} bytes, not whole {px}-byte pixels"
        n = n if fid == 2 or (fid == 5 and not packs) else (n + 4 if fid == 3 and n is not None else None)
    # libhdf5 < 2.2.0: a pass-through nbit / scaleoffset between a filter and a later one
    # that leaves a buffer larger than its data (vh5 refuses it with its libhdf5 1.10)
    used = [(fid, cd) for fid, cd in filters if fid <= 6]
    for i, (fid, cd) in enumerate(used):
        through = (fid == 5 and len(cd) > 1 and cd[1] != 0) or (
            fid == 6 and len(cd) > 4 and cd[0] == 2 and cd[1] == cd[4] * 8
        )
        if through and i > 0 and any(g not in (2, 4) for g, _ in used[i + 1 :]):
            return f"pass-through filter {fid} between filters (libhdf5 < 2.2.0)"
    return None


def cut_pipeline(path, name="d"):
    """Why libhdf5 < 2.2.0 may store chunks of dataset `name` cut short, or None: the write
    rule of vh5's ``src/hdf5/filter_support.rs`` (``passthrough_write_problem``): a
    pass-through nbit / scaleoffset whose nearest earlier filter that does something is
    deflate, which reports its input length as the buffer size (a chunk it cannot shrink is
    stored cut to that length). Filters with ids > 6 count as skipped (unreliable_pipeline)."""
    with h5py.File(path, "r") as f:
        dcpl = f[name].id.get_create_plist()
        if dcpl.get_layout() != h5py.h5d.CHUNKED:
            return None
        used = [dcpl.get_filter(i)[:3:2] for i in range(dcpl.get_nfilters())]
    used = [(fid, cd) for fid, cd in used if fid <= 6]
    through = [
        (fid == 5 and len(cd) > 1 and cd[1] != 0) or (fid == 6 and len(cd) > 4 and cd[0] == 2 and cd[1] == cd[4] * 8)
        for fid, cd in used
    ]
    for i in range(len(used)):
        before = [used[j][0] for j in range(i) if not through[j]]
        if through[i] and before and before[-1] == 1:
            return f"pass-through filter {used[i][0]} after deflate (libhdf5 < 2.2.0)"
    return None


# --------------------------------------------------------------------------------------
# building files


def _dcpl(spec, tid, fill, path=None):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    lay = spec["layout"]
    if lay == "external":
        n = int(np.prod(spec["shape"], dtype=np.int64)) * tid.get_size()
        dcpl.set_external(os.path.abspath(path + ".ext").encode(), 0, n)
    if lay == "compact":
        dcpl.set_layout(h5py.h5d.COMPACT)
    elif lay == "chunked":
        dcpl.set_chunk(tuple(spec["chunks"]))
        for f in spec["filters"]:
            n = f[0]
            if n == "deflate":
                dcpl.set_deflate(f[1])
            elif n == "shuffle":
                dcpl.set_shuffle()
            elif n == "fletcher32":
                dcpl.set_fletcher32()
            elif n == "scaleoffset":
                if tid.get_class() == h5py.h5t.FLOAT:
                    dcpl.set_scaleoffset(h5py.h5z.SO_FLOAT_DSCALE, 3)
                elif so_keeps_every_bit(spec):
                    dcpl.set_scaleoffset(h5py.h5z.SO_INT, tid.get_size() * 8)
                else:
                    dcpl.set_scaleoffset(h5py.h5z.SO_INT, h5py.h5z.SO_INT_MINBITS_DEFAULT)
            elif n == "szip":
                nelem = int(np.prod(spec["chunks"]))
                dcpl.set_szip(h5py.h5z.SZIP_NN_OPTION_MASK, 8 if nelem >= 8 else 2)
            elif n == "nbit":
                dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
            elif n == "lzf":
                dcpl.set_filter(LZF_ID, h5py.h5z.FLAG_OPTIONAL, ())
            elif n == "unreg_opt":
                dcpl.set_filter(UNREG_ID, h5py.h5z.FLAG_OPTIONAL, ())
        if spec["dont_filter_partial"]:
            assert h5lib().H5Pset_chunk_opts(dcpl.id, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) >= 0
    alloc = {"early": h5py.h5d.ALLOC_TIME_EARLY, "incr": h5py.h5d.ALLOC_TIME_INCR, "late": h5py.h5d.ALLOC_TIME_LATE}
    if spec["alloc"] in alloc:
        dcpl.set_alloc_time(alloc[spec["alloc"]])
    ft = {"ifset": h5py.h5d.FILL_TIME_IFSET, "alloc": h5py.h5d.FILL_TIME_ALLOC, "never": h5py.h5d.FILL_TIME_NEVER}
    dcpl.set_fill_time(ft[spec["fill_time"]])
    if fill is not None:
        set_fill_value(dcpl, fill)
    return dcpl


def set_fill_value(dcpl, fill):
    """``dcpl.set_fill_value(fill)``, fixed-length strings through libhdf5's H5Pset_fill_value
    itself: h5py >= 3.7's ``PropDCID.set_fill_value`` passes any ``S`` array as a variable-length
    string (the address of a ``char *``) with the fixed-length type, so libhdf5 stored the first
    bytes of a heap address as the fill value (seed 121 at 8000 cases, ``S7`` specs 94, 161 and
    385: files and references different from run to run). h5py's own create_dataset goes round it
    through a variable-length type, which would cut values at their first zero byte."""
    if fill.dtype.kind != "S":
        dcpl.set_fill_value(fill)
        return
    buf = np.ascontiguousarray(fill)
    tid = h5py.h5t.py_create(buf.dtype)  # held: its id closes with the object
    assert h5lib().H5Pset_fill_value(dcpl.id, tid.id, buf.ctypes.data) >= 0


def _box(rng, shape):
    start = [int(rng.integers(0, s)) if s else 0 for s in shape]
    cnt = [int(rng.integers(1, s - a + 1)) if s else 0 for a, s in zip(start, shape)]
    return start, cnt


def _write_box(ds, tname, wdt, start, cnt, rng):
    n = int(np.prod(cnt, dtype=np.int64))
    if n == 0:
        return
    data = values(tname, n, rng)
    data = data.reshape(tuple(cnt) + data.shape[1:])
    fs = ds.get_space()
    if cnt:
        fs.select_hyperslab(tuple(start), tuple(cnt))
    ms = h5py.h5s.create_simple(tuple(cnt)) if cnt else h5py.h5s.create(h5py.h5s.SCALAR)
    mtype = mem_type_of(tname)
    ds.write(ms, fs, np.ascontiguousarray(data), mtype=mtype)


def build(spec, path, name="d"):
    """Write the dataset `name` described by `spec` into a new file `path`."""
    rng = np.random.default_rng(spec["seed"])
    tname = spec["type"]
    tid, wdt = type_of(tname)
    fill = None
    if spec["fillvalue"]:
        fill = np.frombuffer(values(tname, 1, rng).tobytes(), dtype=wdt).reshape(())
    libver = ("earliest", "v110") if spec["libver"] == "earliest" else ("v110", "v110")
    if tname in NATIVE_COMPLEX_KINDS:
        libver = (libver[0], "v200")  # the complex class's datatype message (version 5)
    shape = tuple(spec["shape"])
    with h5py.File(path, "w", libver=libver) as f:
        dcpl = _dcpl(spec, tid, None if fill is None else np.ascontiguousarray(fill), path)
        maxs = tuple(h5py.h5s.UNLIMITED if m is None else m for m in spec["maxshape"])
        space = h5py.h5s.create_simple(shape, maxs) if shape else h5py.h5s.create(h5py.h5s.SCALAR)
        if spec["layout"] == "virtual":
            # the data lives in `src`; `d` maps it, its last index on axis 0 unmapped when
            # there is more than one (reads the fill value)
            src = h5py.h5d.create(
                f.id,
                b"src",
                tid,
                space,
                dcpl=_dcpl(dict(spec, layout="contiguous"), tid, None if fill is None else np.ascontiguousarray(fill)),
            )
            vspace = h5py.h5s.create_simple(shape, maxs)
            cnt = (max(1, shape[0] - 1),) + tuple(shape[1:])
            vspace.select_hyperslab((0,) * len(shape), cnt)
            sspace = h5py.h5s.create_simple(shape, maxs)
            sspace.select_hyperslab((0,) * len(shape), cnt)
            dcpl.set_virtual(vspace, b".", b"src", sspace)
            h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
            ds = src
        else:
            ds = h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
        if spec["written"] == "all":
            _write_box(ds, tname, wdt, [0] * len(shape), list(shape), rng)
        elif spec["written"] == "part" and shape:
            _write_box(ds, tname, wdt, *_box(rng, shape), rng)
        if spec["resize"]:
            ds.set_extent(tuple(spec["resize"]))
            shape = tuple(spec["resize"])
            if rng.integers(0, 2) and all(shape):
                _write_box(ds, tname, wdt, *_box(rng, shape), rng)
    if spec.get("direct_chunk"):
        _direct_chunk(spec, path, name, rng)


def _direct_chunk(spec, path, name, rng):
    """Overwrite one chunk with raw (unfiltered) bytes and a filter mask skipping every filter."""
    shape = spec["resize"] or spec["shape"]
    chunks = spec["chunks"]
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    if not all(grid):
        return
    coord = [int(rng.integers(0, g)) * c for g, c in zip(grid, chunks)]
    with h5py.File(path, "r+") as f:
        ds = f[name]
        n = int(np.prod(chunks)) * ds.id.get_type().get_size()
        mask = (1 << len(spec["filters"])) - 1
        # First one byte longer: libhdf5 rewrites a chunk stored at the same size in place and
        # keeps its OLD filter mask (the stale mask of src/transfer/masked.rs), which left a
        # chunk of random bytes marked as szip-encoded (seed 214: libhdf5 2.0 decoded it to
        # garbage, 2.2 refused it); at another size the chunk is reallocated and its mask
        # recorded. No rng draw, so every other spec is unchanged.
        ds.id.write_direct_chunk(tuple(coord), bytes(n + 1), filter_mask=mask)
        ds.id.write_direct_chunk(tuple(coord), rng.bytes(n), filter_mask=mask)
        assert ds.id.get_chunk_info_by_coord(tuple(coord)).filter_mask == mask


# --------------------------------------------------------------------------------------
# the oracle


def member_mask(tid):
    """uint8 array of the type's size: 1 for bytes that belong to a member, 0 for padding
    between / after compound members (recursively), whose content libhdf5 leaves as the
    destination buffer had it: they are not compared."""
    size = tid.get_size()
    cls = tid.get_class()
    if cls == h5py.h5t.COMPOUND:
        m = np.zeros(size, np.uint8)
        for i in range(tid.get_nmembers()):
            off = tid.get_member_offset(i)
            sub = member_mask(tid.get_member_type(i))
            m[off : off + len(sub)] |= sub
        return m
    if cls == h5py.h5t.ARRAY:
        base = tid.get_super()
        return np.tile(member_mask(base), size // base.get_size())
    return np.ones(size, np.uint8)


def fill_bytes(ds, ntype):
    """The dataset's fill value converted to the native memory type (bytes); zeros when the
    fill value is libhdf5's default."""
    size = ntype.get_size()
    dcpl = ds.id.get_create_plist()
    if dcpl.fill_value_defined() != h5py.h5d.FILL_VALUE_USER_DEFINED:
        return bytes(size)
    tmp = np.zeros(1, dtype=ds.dtype)
    dcpl.get_fill_value(tmp)  # converted to tmp's type by libhdf5
    if ntype.get_class() == getattr(h5py.h5t, "COMPLEX", None):
        # libhdf5 converts h5py's {r, i} compound to a complex type only of identical parts
        return tmp.astype(tmp.dtype.newbyteorder("=")).tobytes()
    raw = np.zeros(max(tmp.dtype.itemsize, size), dtype=np.uint8)
    raw[: tmp.dtype.itemsize] = np.frombuffer(tmp.tobytes(), np.uint8)
    h5py.h5t.convert(h5py.h5t.py_create(tmp.dtype), ntype, 1, raw)
    return raw[:size].tobytes()


def oracle_read(path, name="d"):
    """libhdf5's (h5py's) read of the whole dataset with the native memory type.

    Returns (array of dtype V<native size>, native size); the destination is pre-filled with
    the fill value so that chunks never written under H5D_FILL_TIME_NEVER (libhdf5 leaves
    the buffer as it is) read as the fill value. Raises what h5py raises."""
    with h5py.File(path, "r") as f:
        ds = f[name]
        ntype = native_type(ds.id.get_type())
        size = ntype.get_size()
        shape = ds.shape
        fb = fill_bytes(ds, ntype)
        arr = np.frombuffer(fb * int(np.prod(shape, dtype=np.int64)), dtype=f"V{size}").reshape(shape).copy()
        if arr.size:
            ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, arr, mtype=ntype)
        return arr, size


def oracle_read_rows(path, rows, dst, name="d"):
    """Apply each row of `rows` (src side = dataset) to `dst` (V<native size>) from libhdf5's
    read of just that row's selection (fill-value pre-filled like :func:`oracle_read`):
    the reference when the whole-dataset read fails on a chunk the rows may not touch.
    Raises what h5py raises for a row it cannot read."""
    s0, d0, cnt, ss, ds_ = rows
    with h5py.File(path, "r") as f:
        ds = f[name]
        ntype = native_type(ds.id.get_type())
        fb = fill_bytes(ds, ntype)
        for i in range(len(cnt)):
            c = tuple(int(x) for x in cnt[i])
            buf = np.frombuffer(fb * int(np.prod(c, dtype=np.int64)), dtype=dst.dtype).reshape(c).copy()
            fs = ds.id.get_space()
            if c:
                fs.select_hyperslab(tuple(int(x) for x in s0[i]), c, tuple(int(x) for x in ss[i]))
            ms = h5py.h5s.create_simple(c) if c else h5py.h5s.create(h5py.h5s.SCALAR)
            ds.id.read(ms, fs, buf, mtype=ntype)
            if c:
                dst[
                    tuple(
                        slice(int(a), int(a) + (int(k) - 1) * int(st_) + 1, int(st_))
                        for a, k, st_ in zip(d0[i], c, ds_[i])
                    )
                ] = buf
            else:
                dst[()] = buf[()]


def native_mask(tname):
    """member_mask of the native memory type of type `tname`, or None when it has no padding."""
    m = member_mask(native_type(type_of(tname)[0]))
    return None if m.all() else m


def oracle_write(path, rows, src, name="d"):
    """Write the rows of `src` (V<native size> array) into `path` with h5py (libhdf5)."""
    s0, d0, cnt, ss, ds_ = rows
    with h5py.File(path, "r+") as f:
        ds = f[name]
        ntype = native_type(ds.id.get_type())
        for i in range(len(cnt)):
            if not ds.shape:
                ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(src), mtype=ntype)
                continue
            sl = tuple(
                slice(int(a), int(a) + (int(c) - 1) * int(st_) + 1, int(st_)) for a, c, st_ in zip(s0[i], cnt[i], ss[i])
            )
            piece = np.ascontiguousarray(src[sl])
            fs = ds.id.get_space()
            fs.select_hyperslab(
                tuple(int(x) for x in d0[i]), tuple(int(x) for x in cnt[i]), tuple(int(x) for x in ds_[i])
            )
            ms = h5py.h5s.create_simple(piece.shape)
            ds.id.write(ms, fs, piece, mtype=ntype)
