"""Filter pipelines libhdf5 itself cannot decode reliably (src/hdf5/filter_support.rs), in
files written by h5py (libhdf5 2.0): vh5 refuses to read or write them with
VH5_ERR_UNSUPPORTED naming the file, the dataset, the filters and the linked libhdf5, and
reads the well-formed neighbours of each pipeline exactly as h5py does.

- scaleoffset after a filter that changed the chunk's length (szip then scaleoffset: h5py
  2.0.0 reads other values after every write, libhdf5 2.2.0 errors, 1.10.8 reads zeros);
- szip given bytes that are not whole pixels (scaleoffset or fletcher32 before szip on 8-byte
  types: libaec drops the tail, libhdf5 1.10.8 and 2.2.0 read uninitialised memory);
- with a libhdf5 older than 2.2.0 only: a pass-through nbit between shuffle and deflate /
  fletcher32 (libhdf5 1.10.8 and 2.0.0 hand on the wrong length: scrambled values); writes
  only: a pass-through nbit after deflate (a chunk deflate cannot shrink is stored cut short);
- a 4-byte float scaleoffset chunk libhdf5 stores with 64 bits per value (src/hdf5/scaleoffset.rs)."""

import numpy as np
import pytest
import vh5

h5py = pytest.importorskip("h5py")
h5z = h5py.h5z

LIBVER = ("earliest", "v110")  # vh5 links libhdf5 1.10
N = 64
#: the `static-hdf5` build's libhdf5 has no szip (hdf5-metno-src builds it without): every
#: read or write of a szip dataset's chunks is refused naming the filter instead
NO_SZIP = vh5.hdf5_version().origin == "vendored"


def _dataset(f, name, dtype, filters, data):
    """h5py.h5d.create of a 1-d dataset of N elements in one chunk, with `filters` in this
    write order (h5py's keywords always put scaleoffset first), written whole."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((N,))
    for fl in filters:
        if fl == "deflate":
            dcpl.set_deflate(4)
        elif fl == "shuffle":
            dcpl.set_shuffle()
        elif fl == "fletcher32":
            dcpl.set_fletcher32()
        elif fl == "nbit":
            dcpl.set_filter(h5z.FILTER_NBIT, h5z.FLAG_OPTIONAL, ())
        elif fl == "szip":
            dcpl.set_szip(h5z.SZIP_NN_OPTION_MASK, 8)
        elif fl == "scaleoffset":
            if np.dtype(dtype).kind == "f":
                dcpl.set_scaleoffset(h5z.SO_FLOAT_DSCALE, 3)
            else:
                dcpl.set_scaleoffset(h5z.SO_INT, h5z.SO_INT_MINBITS_DEFAULT)
    ds = h5py.h5d.create(
        f.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype)), h5py.h5s.create_simple((N,)), dcpl=dcpl
    )
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data, dtype=dtype))


def _values(dtype):
    if np.dtype(dtype).kind == "f":
        return np.linspace(-7, 9, N).astype(dtype)
    return (np.arange(N) * 37 % 101).astype(dtype)


def _file(tmp_path, pipelines):
    p = tmp_path / "pipelines.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        for name, (dtype, filters) in pipelines.items():
            _dataset(f, name, dtype, filters, _values(dtype))
    return p


def _read(p, name):
    with vh5.File(p) as f:
        ds = f[name]
        dst = np.zeros(N, ds.dtype.newbyteorder("="))
        vh5.read_many_slices(ds, dst, [[0]], [[0]], [[N]])
    return dst


def _write(p, name, dtype):
    with vh5.File(p, "r+") as f:
        src = _values(np.dtype(dtype).newbyteorder("="))
        vh5.write_many_slices(src, f[name], [[0]], [[0]], [[N]])


def _no_szip(p, name, dtype, must_refuse=False):
    """With a libhdf5 without szip: a read that needs to decode stored szip chunks is refused
    naming the filter, the dataset, the file and the linked libhdf5; a chunk szip left as it
    was (filter mask bit set) reads as h5py reads it. Every write is refused the same way
    (libhdf5 would store chunks without szip, and one rewritten at its old size keeps a filter
    mask saying szip was applied: HDF5 2.2.0 did that to a scaleoffset + szip chunk of u1)."""
    words = (f"`/{name}`", p.name, "libhdf5 " + ".".join(map(str, vh5.hdf5_version().version)), "has no 'szip' filter")
    try:
        got = _read(p, name)
    except vh5.UnsupportedError as err:
        assert all(w in str(err) for w in words), (words, str(err))
    else:
        assert not must_refuse, f"{name}: read without szip"
        with h5py.File(p) as f:
            np.testing.assert_array_equal(got, f[name][...])
    with pytest.raises(vh5.UnsupportedError) as e:
        _write(p, name, dtype)
    assert all(w in str(e.value) for w in words), (words, str(e.value))


def _refused(p, name, dtype, *words):
    if NO_SZIP and "szip" in words[0]:
        return _no_szip(p, name, dtype)
    for op in (lambda: _read(p, name), lambda: _write(p, name, dtype)):
        with pytest.raises(vh5.UnsupportedError) as e:
            op()
        msg = str(e.value)
        for w in (f"`/{name}`", p.name, "libhdf5 " + ".".join(map(str, vh5.hdf5_version().version)), *words):
            assert w in msg, (w, msg)


@pytest.mark.parametrize("dtype", ["u1", "<i4"])
def test_scaleoffset_after_szip_or_deflate_refused(tmp_path, dtype):
    p = _file(
        tmp_path, {"szip_so": (dtype, ["szip", "scaleoffset"]), "deflate_so": (dtype, ["deflate", "scaleoffset"])}
    )
    _refused(
        p,
        "szip_so",
        dtype,
        "[szip, scaleoffset]",
        "scaleoffset comes after szip",
        "No libhdf5 release decodes such chunks reliably",
    )
    _refused(p, "deflate_so", dtype, "[deflate, scaleoffset]", "scaleoffset comes after deflate")


def test_szip_after_scaleoffset_or_fletcher32_on_8_byte_type_refused(tmp_path):
    p = _file(tmp_path, {"so_szip": (">f8", ["scaleoffset", "szip"]), "f32_szip": ("<u8", ["fletcher32", "szip"])})
    _refused(p, "so_szip", ">f8", "[scaleoffset, szip]", "not whole 8-byte pixels")
    _refused(p, "f32_szip", "<u8", "[fletcher32, szip]", f"receives {N * 8 + 4} bytes, not whole 8-byte pixels")


def test_szip_and_scaleoffset_pipelines_libhdf5_decodes_read_as_h5py(tmp_path):
    """The neighbours: scaleoffset first (h5py's order), szip on whole pixels (its own
    elements, after shuffle, after fletcher32 on 4-byte types, any input on 1-byte types)."""
    pipes = {
        "so_deflate": ("<i4", ["scaleoffset", "deflate"]),
        "so_f8_deflate": ("<f8", ["scaleoffset", "shuffle", "deflate"]),
        "shuffle_szip": ("<f8", ["shuffle", "szip"]),
        "f32_szip_i4": ("<i4", ["fletcher32", "szip"]),
        "so_szip_u1": ("u1", ["scaleoffset", "szip"]),
        "szip_f32": ("<f8", ["szip", "fletcher32"]),
    }
    p = _file(tmp_path, pipes)
    with h5py.File(p) as f:
        ref = {name: f[name][...] for name in pipes}
    for name, (dtype, filters) in pipes.items():
        if NO_SZIP and "szip" in filters:
            _no_szip(p, name, dtype)
            continue
        assert (_read(p, name) == ref[name]).all(), name


def test_szip_dataset_reads_as_h5py_or_is_refused_naming_the_missing_filter(tmp_path):
    """A szip dataset reads as h5py reads it where vh5's libhdf5 has szip; with the
    `static-hdf5` build (no szip) reads of stored chunks are VH5_ERR_UNSUPPORTED naming the
    filter, the dataset and the linked libhdf5 (never libhdf5's bare error, never other
    values), and so are writes. Its unwritten part still reads as the fill value (no chunk
    to decode)."""
    p = tmp_path / "szip.h5"
    data = np.arange(4 * N, dtype="<i4")
    with h5py.File(p, "w") as f:
        f.create_dataset("x", data=data, chunks=(N,), compression="szip")
        f.create_dataset("empty", shape=(2 * N,), dtype="<i4", chunks=(N,), compression="szip", fillvalue=7)
    with vh5.File(p) as f:
        dst = np.zeros(2 * N, "<i4")
        vh5.read_many_slices(f["empty"], dst, [[0]], [[0]], [[2 * N]])
        assert (dst == 7).all()
    if not NO_SZIP:
        got = np.zeros(4 * N, "<i4")
        with vh5.File(p) as f:
            vh5.read_many_slices(f["x"], got, [[0]], [[0]], [[4 * N]])
        assert (got == data).all()
        return
    _no_szip(p, "x", "<i4", must_refuse=True)


def test_passthrough_nbit_between_shuffle_and_deflate_refused_before_libhdf5_2_2(tmp_path):
    """nbit on a full-precision type does nothing; libhdf5 before 2.2.0 then hands on the
    buffer's capacity instead of its length, and shuffle decodes the wrong length."""
    pipes = {
        "sh_nbit_deflate": ("<f4", ["shuffle", "nbit", "deflate"]),
        "sh_nbit_f32": ("<i2", ["shuffle", "nbit", "fletcher32"]),
    }
    p = _file(tmp_path, pipes)
    if vh5.hdf5_version().version >= (2, 2, 0):
        for name, (dtype, _) in pipes.items():
            assert (_read(p, name) == _values(dtype)).all(), name
        return
    _refused(
        p,
        "sh_nbit_deflate",
        "<f4",
        "[shuffle, nbit, deflate]",
        "a bug of libhdf5 before 2.2.0",
        "libhdf5 2.2.0 reads it correctly",
    )
    _refused(p, "sh_nbit_f32", "<i2", "[shuffle, nbit, fletcher32]", "a bug of libhdf5 before 2.2.0")
    # without a filter after nbit there is nothing to get wrong
    p2 = _file(tmp_path, {"sh_nbit": ("<f4", ["shuffle", "nbit"]), "nbit_deflate": ("<f4", ["nbit", "deflate"])})
    for name in ("sh_nbit", "nbit_deflate"):
        assert (_read(p2, name) == _values("<f4")).all(), name


def test_passthrough_nbit_after_deflate_write_refused_before_libhdf5_2_2(tmp_path):
    """nbit on a full-precision type after deflate: before 2.2.0 deflate reports its input
    length as the buffer size and nbit hands that on as the data's length, so a chunk deflate
    cannot shrink (random int64) is stored cut to its input length, which no reader decodes.
    vh5 refuses writes with such a libhdf5 and reads such datasets as h5py does (conformance
    seed 36 at 8000 cases: deflate + nbit on <i8)."""
    rng = np.random.default_rng(5)
    noise = rng.integers(-(2**63), 2**63 - 1, N, dtype=np.int64)
    p = tmp_path / "deflate_nbit.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        _dataset(f, "smooth", "<i8", ["deflate", "nbit"], _values("<i8"))
        _dataset(f, "noise_shuffle", "<i8", ["deflate", "nbit", "shuffle"], np.zeros(N, "<i8"))
        _dataset(f, "f32_between", "<i8", ["deflate", "fletcher32", "nbit"], np.zeros(N, "<i8"))
    with h5py.File(p) as f:
        assert (f["smooth"][...] == _values("<i8")).all()
    # reads: what libhdf5 stored decodes (or fails) the same in every version
    assert (_read(p, "smooth") == _values("<i8")).all()
    # fletcher32 between them reports its own output length: nothing to get wrong
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(noise, f["f32_between"], [[0]], [[0]], [[N]])
    assert (_read(p, "f32_between") == noise).all()
    for name, pipe in (("smooth", "[deflate, nbit]"), ("noise_shuffle", "[deflate, nbit, shuffle]")):
        with vh5.File(p, "r+") as f:
            if vh5.hdf5_version().version >= (2, 2, 0):
                vh5.write_many_slices(noise, f[name], [[0]], [[0]], [[N]])
                continue
            with pytest.raises(vh5.UnsupportedError) as e:
                vh5.write_many_slices(noise, f[name], [[0]], [[0]], [[N]])
        if vh5.hdf5_version().version >= (2, 2, 0):
            with h5py.File(p) as f:
                assert (f[name][...] == noise).all(), name
            continue
        msg = str(e.value)
        for w in (
            f"`/{name}`",
            p.name,
            "libhdf5 " + ".".join(map(str, vh5.hdf5_version().version)),
            pipe,
            "stored cut short",
            "before 2.2.0",
        ):
            assert w in msg, (w, msg)
    if vh5.hdf5_version().version < (2, 2, 0):  # the refused writes left the file as it was
        assert (_read(p, "smooth") == _values("<i8")).all()


def test_scaleoffset_float_chunk_stored_with_64_bits_refused(tmp_path):
    """libhdf5's float D-scale scaleoffset stores a 4-byte float chunk whose first value apart
    from the fill value is NaN, or whose values apart from it are all the same infinity, with
    64 bits per value: 2.0 and 2.2 refuse to decode it, 1.10.8 returned zeros (conformance
    seed 38 at 8000 cases: a >f4 row holding inf). vh5 refuses to read such a chunk and to
    write one; chunks libhdf5 stores readably (inf among finite values: full precision) read
    and write as h5py does."""
    inf = np.float32(np.inf)
    ones = np.ones(N, "<f4")
    bad = {
        "so_inf": ["scaleoffset"],
        "so_inf_deflate": ["scaleoffset", "shuffle", "deflate"],
        "so_inf_f32_nbit": ["scaleoffset", "fletcher32", "nbit"],
    }
    p = tmp_path / "so_inf.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        for name, filters in bad.items():
            _dataset(f, name, "<f4", filters, np.full(N, inf, "<f4"))
        mixed = np.linspace(-7, 9, N).astype("<f4")
        mixed[3] = inf
        _dataset(f, "so_mixed", "<f4", ["scaleoffset"], mixed)
        _dataset(f, "so_ones", "<f4", ["scaleoffset"], ones)
        _dataset(f, "so_ones_f8", "<f8", ["scaleoffset"], ones.astype("<f8"))
    for name in bad:
        with h5py.File(p) as f, pytest.raises(OSError):
            f[name][...]  # libhdf5 2.0 (h5py) cannot decode what it wrote
        with pytest.raises(vh5.HDF5Error) as e:
            _read(p, name)
        if vh5.hdf5_version().version < (1, 14, 0):  # vh5's own check; 1.14.6 and 2.x refuse by themselves
            for w in (f"`/{name}`", p.name, "64 bits per value", "would return zeros"):
                assert w in str(e.value), (w, str(e.value))
    np.testing.assert_array_equal(_read(p, "so_mixed"), h5py.File(p)["so_mixed"][...])
    # a write into part of such a chunk must decode it first: refused as the read is
    with vh5.File(p, "r+") as f, pytest.raises(vh5.HDF5Error):
        vh5.write_many_slices(ones[:5], f["so_inf"], [[0]], [[0]], [[5]])
    # overwriting all of it stores a readable chunk
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(ones, f["so_inf"], [[0]], [[0]], [[N]])
    np.testing.assert_array_equal(h5py.File(p)["so_inf"][...], ones)
    # writes: a chunk libhdf5 would store with 64 bits per value is refused, nothing written
    chunk_words = ("64 bits per value", "nothing of this chunk was written")
    cases = [
        (np.full(N, inf, "<f4"), chunk_words),
        (np.r_[np.float32(np.nan), ones[1:]].astype("<f4"), chunk_words),
        (np.r_[np.full(1, inf), np.zeros(N - 1)].astype("<f4"), chunk_words),  # the rest is the fill value 0
        # float64 source: libhdf5 converts and merges the row itself, vh5 checks the row's values
        (
            np.r_[np.full(1, -np.inf), np.ones(N - 1)],
            ("row 0 holds a value that is not a finite 4-byte float once converted",),
        ),
        (
            np.r_[np.full(1, 1e300), np.ones(N - 1)],
            ("row 0 holds a value that is not a finite 4-byte float once converted",),
        ),
    ]
    for src, words in cases:
        with vh5.File(p, "r+") as f, pytest.raises(vh5.UnsupportedError) as e:
            vh5.write_many_slices(src, f["so_ones"], [[0]], [[0]], [[N]], convert=src.dtype != np.float32)
        for w in ("`/so_ones`", p.name, *words):
            assert w in str(e.value), (w, str(e.value))
        np.testing.assert_array_equal(h5py.File(p)["so_ones"][...], ones)
    with vh5.File(p, "r+") as f:  # finite float64 values convert and write
        vh5.write_many_slices(np.full(N, 2.0), f["so_ones"], [[0]], [[0]], [[N]], convert=True)
    np.testing.assert_array_equal(h5py.File(p)["so_ones"][...], np.full(N, 2.0))
    # readable chunks: inf among finite values, and 8-byte floats (64 bits is their precision)
    for name, dtype in (("so_ones", "<f4"), ("so_ones_f8", "<f8")):
        src = ones.astype(dtype)
        src[5] = np.inf
        with vh5.File(p, "r+") as f:
            vh5.write_many_slices(src, f[name], [[0]], [[0]], [[N]])
        with h5py.File(p) as f:
            np.testing.assert_array_equal(f[name][...], src)
    src = np.full(N, np.inf, "<f8")
    with vh5.File(p, "r+") as f:
        vh5.write_many_slices(src, f["so_ones_f8"], [[0]], [[0]], [[N]])
    np.testing.assert_array_equal(h5py.File(p)["so_ones_f8"][...], src)


@pytest.mark.skipif(vh5._lib.lib().h5py_bound, reason="the h5py-bound build runs on h5py's libhdf5, which has lzf")
def test_write_to_pipeline_with_a_filter_missing_from_vh5s_libhdf5_refused(tmp_path):
    """h5py's lzf (an optional plugin filter only h5py's libhdf5 has): vh5 refuses every write
    to such a dataset, naming the filter, the dataset, the file and the linked libhdf5, and
    the file is left as h5py wrote it. Conformance seed 21 (libhdf5 1.10): vh5's libhdf5
    rewrote shuffle + lzf + scaleoffset and lzf + nbit chunks without lzf, and h5py then
    failed to read them or read other values."""
    p = tmp_path / "lzf.h5"
    data = (np.arange(4 * N) % 7).astype("<i4")
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("x", data=data, chunks=(N,), compression="lzf")
        f.create_dataset(
            "so", data=np.linspace(-7, 9, 4 * N), chunks=(N,), shuffle=True, compression="lzf", scaleoffset=3
        )
        before = {k: f[k][...] for k in ("x", "so")}
    for name in ("x", "so"):
        with vh5.File(p, "r+") as f:
            ds = f[name]
            src = np.zeros(N, ds.dtype.newbyteorder("="))
            with pytest.raises(vh5.UnsupportedError) as e:
                vh5.write_many_slices(src, ds, [[0]], [[0]], [[N]])
        for w in (
            f"`/{name}`",
            p.name,
            "libhdf5 " + ".".join(map(str, vh5.hdf5_version().version)),
            "has no 'lzf' filter",
        ):
            assert w in str(e.value), (w, str(e.value))
    with h5py.File(p) as f:
        for k, v in before.items():
            np.testing.assert_array_equal(f[k][...], v)


@pytest.mark.skipif(not vh5._lib.lib().h5py_bound, reason="only the h5py-bound build runs on h5py's libhdf5")
def test_h5py_bound_build_reads_and_writes_lzf(tmp_path):
    """The wheel's h5py-bound library runs on h5py's libhdf5, where h5py registers lzf: lzf
    datasets are read and written, not refused (docs/INSTALL.md said every build refuses them)."""
    p = tmp_path / "lzf.h5"
    data = (np.arange(4 * N) % 7).astype("<i4")
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("x", data=data, chunks=(N,), compression="lzf")
    src = np.full(N, 5, "<i4")
    with vh5.File(p, "r+") as f:
        out = np.empty(N, "<i4")
        vh5.read_many_slices(f["x"], out, [[N]], [[0]], [[N]])
        np.testing.assert_array_equal(out, data[N : 2 * N])
        vh5.write_many_slices(src, f["x"], [[0]], [[0]], [[N]])
    with h5py.File(p) as f:
        assert f["x"].compression == "lzf"
        np.testing.assert_array_equal(f["x"][...], np.concatenate([src, data[N:]]))


def _szip_dataset(f, name, dtype, filters, data):
    """A 1-d dataset of `data` in chunks of N elements (the last one partial) with `filters`
    in this write order (nbit optional, so that h5py's libhdf5 skips it where it cannot pack)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((N,))
    for fl in filters:
        {
            "deflate": lambda: dcpl.set_deflate(4),
            "shuffle": dcpl.set_shuffle,
            "fletcher32": dcpl.set_fletcher32,
            "nbit": lambda: dcpl.set_filter(h5z.FILTER_NBIT, h5z.FLAG_OPTIONAL, ()),
            "szip": lambda: dcpl.set_szip(h5z.SZIP_NN_OPTION_MASK, 8),
            "scaleoffset": lambda: dcpl.set_scaleoffset(h5z.SO_INT, h5z.SO_INT_MINBITS_DEFAULT),
        }[fl]()
    ds = h5py.h5d.create(
        f.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype)), h5py.h5s.create_simple(data.shape), dcpl=dcpl
    )
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data, dtype=dtype))
    return f[name]


@pytest.mark.skipif(
    NO_SZIP, reason="the static-hdf5 build's libhdf5 has no szip (reads of szip chunks are refused naming the filter)"
)
def test_szip_pipelines_read_as_h5py_with_their_headers_checked(tmp_path):
    """vh5 looks at the szip header of every chunk libhdf5 is about to decode (the claimed
    decoded size, src/hdf5/chunk_guard.rs): every well-formed szip pipeline, dtype and chunk
    (partial edge chunk included) must still read exactly as h5py reads it, whole and row by
    row, in every planner (a bound too tight would refuse good files)."""
    pipes = {
        "szip": ["szip"],
        "shuffle_szip": ["shuffle", "szip"],
        "szip_deflate": ["szip", "deflate"],
        "szip_f32": ["szip", "fletcher32"],
        "nbit_szip": ["nbit", "szip"],
        "shuffle_szip_deflate_f32": ["shuffle", "szip", "deflate", "fletcher32"],
    }
    dtypes = ["u1", "<i2", ">i4", "<f4", ">f8"]
    p = tmp_path / "szip_ok.h5"
    ref = {}
    with h5py.File(p, "w", libver=LIBVER) as f:
        for dtype in dtypes:
            data = (
                np.linspace(-50, 200, 3 * N + 5).astype(dtype)
                if np.dtype(dtype).kind == "f"
                else (np.arange(3 * N + 5) * 37 % 101).astype(dtype)
            )
            for name, filters in pipes.items():
                ref[f"{name}_{dtype}"] = _szip_dataset(f, f"{name}_{dtype}", dtype, filters, data)[...]
        ref["deflate_szip_u1"] = _szip_dataset(
            f, "deflate_szip_u1", "u1", ["deflate", "szip"], (np.arange(3 * N + 5) % 13).astype("u1")
        )[...]
        ref["so_szip_u1"] = _szip_dataset(
            f, "so_szip_u1", "u1", ["scaleoffset", "szip"], (np.arange(3 * N + 5) % 13).astype("u1")
        )[...]
    script = f"""
import numpy as np, vh5
ref = np.load({str(tmp_path / "ref.npz")!r})
with vh5.File({str(p)!r}) as f:
    for name in ref.files:
        want = ref[name]
        whole = np.zeros(want.shape, want.dtype.newbyteorder("="))
        vh5.read_many_slices(f[name], whole, [[0]], [[0]], [[len(want)]])
        rows = np.zeros_like(whole)
        starts = np.arange(0, len(want), 7, dtype=np.uint64)[::-1].copy()
        counts = np.minimum(7, len(want) - starts).astype(np.uint64)
        vh5.read_many_slices(f[name], rows, starts[:, None], starts[:, None], counts[:, None])
        assert (whole == want).all() and (rows == want).all(), name
print("ok", len(ref.files))
"""
    np.savez(tmp_path / "ref.npz", **ref)
    for planner in ("auto", "chunks", "rows"):
        out = _run_planner(script, planner)
        assert out.strip() == f"ok {len(ref)}", (planner, out)


#: Prelude of the planner scripts: `refused(call, *words)` runs `call` and requires a
#: vh5.HDF5Error whose message holds every word.
REFUSED = """
import numpy as np, vh5

def refused(call, *words):
    try:
        call()
    except vh5.HDF5Error as e:
        missing = [w for w in words if w not in str(e)]
        assert not missing, (missing, str(e))
    else:
        raise AssertionError("no error: " + repr(words))
"""


def _bounded_in_every_planner(script):
    """`script` (it raises on a wrong answer) under every planner, each process's peak RSS
    under 400 MB (a size claimed by a damaged chunk was not allocated). The peak is the
    process's own VmHWM: getrusage's ru_maxrss carries over the RSS of the process that
    spawned it (execve keeps the larger; pytest's, 877 MB after another test file, failed this
    test in the full run)."""
    script += "\nhwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\nprint('ok', int(hwm.split()[1]) // 1024)\n"
    for planner in ("auto", "chunks", "rows"):
        out = _run_planner(script, planner).split()
        assert out[0] == "ok" and int(out[1]) < 400, (planner, out)


def _run_planner(script, planner):
    """`script` in a fresh Python under VH5_PLANNER=planner (read once per process); its
    stdout. Fails with its stderr when it fails."""
    import os
    import subprocess
    import sys

    env = dict(
        os.environ,
        VH5_PLANNER=planner,
        PYTHONPATH=os.pathsep.join([os.path.dirname(vh5.__path__[0]), os.environ.get("PYTHONPATH", "")]),
    )
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (planner, r.stderr[-600:])
    return r.stdout


@pytest.mark.skipif(
    NO_SZIP, reason="the static-hdf5 build's libhdf5 has no szip (reads of szip chunks are refused naming the filter)"
)
def test_szip_header_claiming_more_than_its_chunk_refused_before_libhdf5_allocates(tmp_path):
    """libhdf5's szip filter (1.10 .. 2.x) allocates the decoded size a chunk's 4-byte header
    claims before libaec decodes anything (conformance seed 116 at 8000 cases: a 6 KB file
    whose 20-byte chunk claims 810,723,495 bytes, 832 MB of RSS in libhdf5 1.10.8 and 2.0
    alike; h5py reads this test's chunk so too). vh5 refuses such a chunk before libhdf5 sees
    it (claim above what an szip filter can be given for the chunk; fewer than the 4 header
    bytes), behind the filters that come after szip (deflate undone; a fletcher32 the chunk's
    filter mask says was skipped), in every planner and for a write merging into it, naming
    the dataset, the chunk and the claim; its good chunks read as h5py reads them."""
    import zlib

    claim = 810_723_495
    data = np.arange(4 * N, dtype="<i4")
    p = tmp_path / "szip_claims.h5"
    with h5py.File(p, "w", libver=LIBVER) as f:
        for name, filters in {
            "szip": ["szip"],
            "szip_deflate": ["szip", "deflate"],
            "szip_f32": ["szip", "fletcher32"],
        }.items():
            ds = _szip_dataset(f, name, "<i4", filters, data).id
            mask, stored = ds.read_direct_chunk((N,))
            if name == "szip_deflate":
                encoded = zlib.decompress(stored)
                ds.write_direct_chunk((N,), zlib.compress(claim.to_bytes(4, "little") + encoded[4:]), 0)
                ds.write_direct_chunk((2 * N,), zlib.compress(b"\x01\x02"), 0)
            elif name == "szip_f32":  # fletcher32 marked skipped (mask bit 1): szip's bytes as they are
                ds.write_direct_chunk((N,), claim.to_bytes(4, "little") + stored[4:-4], 1 << 1)
                ds.write_direct_chunk((2 * N,), b"\x01\x02", 1 << 1)
            else:
                ds.write_direct_chunk((N,), claim.to_bytes(4, "little") + stored[4:], 0)
                ds.write_direct_chunk((2 * N,), b"\x01\x02", 0)
    script = (
        REFUSED
        + f"""
N = {N}
with vh5.File({str(p)!r}) as f:
    for name in ("szip", "szip_deflate", "szip_f32"):
        good = np.zeros(N, "<i4")
        vh5.read_many_slices(f[name], good, [[3 * N]], [[0]], [[N]])
        assert (good == np.arange(3 * N, 4 * N)).all(), name
        claimed = ("szip header of the chunk at [{N}]", "claims {claim} decoded bytes", "more than the {N * 4}")
        short = ("szip-encoded chunk at [{2 * N}] has 2 bytes, fewer than szip's 4-byte header",)
        # the whole dataset (its first bad chunk is named), then each bad chunk alone
        for first, start, words in ((0, N, claimed), (N, N, claimed), (2 * N, 2 * N, short)):
            dst = np.zeros(4 * N, "<i4")
            read = lambda: vh5.read_many_slices(f[name], dst, [[first], [start]], [[0], [0]], [[4 * N - first], [N]])  # noqa: E731
            refused(read, f"`/{{name}}`", *words, "vh5 refuses the read")
with vh5.File({str(p)!r}, "r+") as f:
    refused(lambda: vh5.write_many_slices(np.ones(5, "<i4"), f["szip"], [[0]], [[N + 3]], [[5]]), "claims {claim} decoded bytes")
"""
    )
    _bounded_in_every_planner(script)


def test_chunk_size_entry_past_the_file_refused_before_libhdf5_allocates(tmp_path):
    """A pipeline libhdf5 decodes (scaleoffset, nbit, szip, plugins): libhdf5 allocates a
    filtered chunk's stored size, a number of the chunk index, before reading it (conformance
    seed 136 at 8000 cases: a flipped B-tree key of a 1-element scaleoffset chunk, "memory
    allocation failed for raw data chunk" under the suite's memory cap). vh5 refuses a chunk
    whose stored size exceeds the file, in every planner, naming the chunk; the other chunks
    read as h5py reads them."""
    import struct

    p = tmp_path / "bigkey.h5"
    data = (np.arange(40) * 7 % 23).astype("<i2")
    with h5py.File(p, "w", libver=LIBVER) as f:
        f.create_dataset("d", data=data, chunks=(8,), scaleoffset=0)
        info = f["d"].id.get_chunk_info_by_coord((16,))
    b = bytearray(p.read_bytes())
    at = b.index(struct.pack("<IIQQ", info.size, 0, 16, 0))  # the B-tree key of chunk [16]
    struct.pack_into("<I", b, at, 0xF0000000)
    p.write_bytes(bytes(b))
    script = (
        REFUSED
        + f"""
with vh5.File({str(p)!r}) as f:
    good = np.zeros(8, "<i2")
    vh5.read_many_slices(f["d"], good, [[24]], [[0]], [[8]])
    assert (good == {data[24:32].tolist()!r}).all(), good
    for first, count in ((16, 8), (0, 40), (20, 1)):
        read = lambda: vh5.read_many_slices(f["d"], np.zeros(count, "<i2"), [[first]], [[0]], [[count]])  # noqa: E731
        refused(read, *WORDS)
"""
    )
    # vh5's own refusal where it reads the size from libhdf5 1.10's lookup; a later libhdf5
    # may refuse the entry itself first (any error, memory still bounded).
    words = (
        ["the chunk at [16] stores 4026531840 bytes, more than the whole file"]
        if vh5.hdf5_version().version < (1, 12, 0)
        else []
    )
    script = script.replace("*WORDS", repr(words)[1:-1] or "")
    _bounded_in_every_planner(script)


def _nbit_szip_file(p, specs):
    """h5py writes 1-d datasets of reduced-precision integers: name -> (base dtype, precision,
    offset, chunk, filters in write order); 2.5 chunks of values within the precision."""
    ref = {}
    with h5py.File(p, "w", libver=LIBVER) as f:
        for name, (base, prec, off, chunk, filters) in specs.items():
            t = h5py.h5t.py_create(np.dtype(base)).copy()
            t.set_precision(prec)
            t.set_offset(off)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((chunk,))
            for fl in filters:
                if fl == "nbit":
                    dcpl.set_filter(h5z.FILTER_NBIT, 0, ())
                elif fl == "szip":
                    dcpl.set_szip(h5z.SZIP_NN_OPTION_MASK, 8)
                else:
                    {"shuffle": dcpl.set_shuffle, "fletcher32": dcpl.set_fletcher32}[fl]()
            data = (np.arange(chunk * 5 // 2, dtype=np.uint64) * 2654435761 % (1 << (prec - 1))).astype(base)
            ds = h5py.h5d.create(f.id, name.encode(), t, h5py.h5s.create_simple(data.shape), dcpl=dcpl)
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
            ref[name] = f[name][...]
    return ref


def _raw_read(p, name, base):
    """vh5 reads a reduced-precision integer as raw records of libhdf5's native integer for
    its precision (`H5Tget_native_type`: 1 byte for 5 bits)."""
    with vh5.File(p) as f:
        ds = f[name]
        dst = np.zeros(ds.shape, ds.dtype)
        vh5.read_many_slices(ds, dst, [[0]], [[0]], [list(ds.shape)])
    return dst.view(f"{np.dtype(base).kind}{dst.itemsize}").astype(np.dtype(base).newbyteorder("="))


def _raw_write(p, name, values):
    with vh5.File(p, "r+") as f:
        ds = f[name]
        native = values.astype(f"{values.dtype.kind}{ds.dtype.itemsize}")
        vh5.write_many_slices(np.ascontiguousarray(native).view(ds.dtype), ds, [[0]], [[0]], [list(ds.shape)])


@pytest.mark.skipif(NO_SZIP or not h5z.filter_avail(h5z.FILTER_SZIP), reason="no szip in vh5's or h5py's libhdf5")
def test_nbit_then_szip_on_whole_full_pixels_reads_and_writes_as_h5py(tmp_path):
    """nbit packs a number type into elements * precision / 8 + 1 bytes whatever the data;
    szip after it (shuffle or fletcher32 between them or not) decodes exactly in libhdf5
    1.10.8, 2.0.0 and 2.2.0 when that is whole pixels and szip codes every bit of them
    (precision at a bit offset, or of 25 bits and more: szip's samples are the type's size)."""
    specs = {
        "u2p5_nbit_szip": ("<u2", 5, 3, 1000, ["nbit", "szip"]),  # 626 bytes, 16-bit samples
        "u2p5_nbit_shuffle_szip": (">u2", 5, 3, 1000, ["nbit", "shuffle", "szip"]),
        "i8p40_nbit_f32_szip": ("<i8", 40, 0, 999, ["nbit", "fletcher32", "szip"]),  # 4996 + 4 bytes
    }
    p = tmp_path / "nbit_szip_ok.h5"
    ref = _nbit_szip_file(p, specs)
    for name, (base, prec, _, _, _) in specs.items():
        np.testing.assert_array_equal(_raw_read(p, name, base), ref[name], err_msg=name)
        new = ((ref[name].astype(np.uint64) * 7 + 3) % (1 << (prec - 1))).astype(base)
        with h5py.File(p) as f:
            masks = [f[name].id.get_chunk_info(i).filter_mask for i in range(f[name].id.get_num_chunks())]
        if any(masks):
            # szip (optional) skipped for a chunk: libhdf5 would keep that mask for a chunk it
            # re-stores at the same size with szip applied: vh5 refuses, writing nothing
            # (test_py_write_masked_chunks)
            before = p.read_bytes()
            with pytest.raises(vh5.UnsupportedError, match="stored with filter mask 0x"):
                _raw_write(p, name, new)
            assert p.read_bytes() == before
            # the chunks stored with every filter (mask 0) are written
            chunk = specs[name][3]
            new[: chunk * (len(masks) - 1)] = ref[name][: chunk * (len(masks) - 1)]
            with vh5.File(p, "r+") as f:
                ds = f[name]
                native = new.astype(f"{new.dtype.kind}{ds.dtype.itemsize}").view(ds.dtype)
                last = chunk * (len(masks) - 1)
                vh5.write_many_slices(native, ds, [[last]], [[last]], [[len(new) - last]])
        else:
            _raw_write(p, name, new)
        with h5py.File(p) as f:
            np.testing.assert_array_equal(f[name][...], new, err_msg=name)
        np.testing.assert_array_equal(_raw_read(p, name, base), new, err_msg=name)


@pytest.mark.skipif(NO_SZIP or not h5z.filter_avail(h5z.FILTER_SZIP), reason="no szip in vh5's or h5py's libhdf5")
def test_nbit_then_szip_refused_where_szip_loses_bits_or_bytes(tmp_path):
    """szip of a type's precision of 1 .. 24 bits at offset 0 (other than 8 and 16) keeps
    only those low bits of each pixel: after nbit (or shuffle) libhdf5 reads other values or
    fails; nbit's output not whole pixels leaves bytes undecoded. Reads and writes refused."""
    specs = {
        "u2p12_nbit_szip": ("<u2", 12, 0, 1000, ["nbit", "szip"]),
        "u2p12_shuffle_szip": ("<u2", 12, 0, 1000, ["shuffle", "szip"]),
        "i8p40_nbit_szip": ("<i8", 40, 0, 999, ["nbit", "szip"]),
    }
    p = tmp_path / "nbit_szip_refused.h5"
    ref = _nbit_szip_file(p, specs)
    why = {
        "u2p12_nbit_szip": "szip codes 12-bit samples (the type's precision) in 2-byte pixels and keeps only their low 12 bits, but what nbit",
        "u2p12_shuffle_szip": "keeps only their low 12 bits, but what shuffle hands on",
        "i8p40_nbit_szip": "szip after nbit receives 4996 bytes, not whole 8-byte pixels",
    }
    for name, (base, _, _, _, filters) in specs.items():
        for op, args in ((_raw_read, (p, name, base)), (_raw_write, (p, name, ref[name]))):
            with pytest.raises(vh5.UnsupportedError) as e:
                op(*args)
            msg = str(e.value)
            for w in (f"`/{name}`", p.name, f"[{', '.join(filters)}]", why[name]):
                assert w in msg, (w, msg)


def test_reduced_precision_integer_named_in_the_unsupported_dtype_message(tmp_path):
    """ds[...] of an nbit dataset of reduced-precision integers (opaque records for vh5) says
    so, not that the type is a compound, enum, string or opaque one."""
    p = tmp_path / "nbit_u2.h5"
    _nbit_szip_file(p, {"u2p12_nbit": ("<u2", 12, 0, 100, ["nbit"])})
    with vh5.File(p) as f, pytest.raises(vh5.UnsupportedError) as e:
        f["u2p12_nbit"][...]
    assert "numbers with reduced precision or a bit offset (the nbit filter is in its pipeline)" in str(e.value), str(
        e.value
    )
