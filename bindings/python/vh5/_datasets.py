"""HDF5 datasets opened through vh5: h5py's metadata attributes and basic-selection reads.

``dset[sel]`` (integers, positive-step slices, ``...``, ``np.s_`` tuples, fewer indices than
axes) reads the hyperslab with one ``vh5_read_many_slices`` call into a new numpy array of
the dataset's dtype (the file's byte order, as h5py), integer axes dropped; a single element
is returned as a numpy scalar. ``read_direct(dst, source_sel, dest_sel)`` reads into an
existing array. Element types vh5 only moves as raw records (compound, enum, string, opaque:
``dtype('V<n>')``) are refused by both with :class:`vh5.UnsupportedError` rather than
returning bytes h5py would show as named fields.
"""

from __future__ import annotations

import ctypes
import json

import numpy as np

from . import _dtypes, _marshal, _select
from ._args import name_arg, name_bytes, shown_name
from ._errors import Error, check, error, with_message
from ._getitem import read_basic
from ._handle import Handle
from ._lib import DatasetInfo, lib

__all__ = ["Dataset", "in_file", "LAYOUT_NAMES", "FILTER_NAMES"]

LAYOUT_NAMES = {0: "contiguous", 1: "chunked", 2: "compact", 3: "virtual"}
FILTER_NAMES = {1: "gzip", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset"}
#: h5py's ``compression`` names by filter (``filters`` keeps LZF as its number, 32000), in the
#: order h5py looks for them (gzip, lzf, szip: not the pipeline's order).
_COMPRESSION = (("gzip", "gzip"), (32000, "lzf"), ("szip", "szip"))
#: The filters h5py knows by name (``h5py._hl.filters._COMP_FILTERS``): any other filter in the
#: pipeline (nbit, and plugins such as blosc, zstd, bzip2 or any unregistered id) makes h5py's
#: ``compression`` ``"unknown"`` when no gzip / lzf / szip is there.
_H5PY_KNOWN_FILTERS = frozenset({"gzip", "szip", 32000, "shuffle", "fletcher32", "scaleoffset"})
_UNLIMITED = 2**64 - 1
_SZIP_EC, _SZIP_NN = 4, 32
_OBJECT_ITEMSIZE = np.dtype(object).itemsize


def _as_view_index(sel):
    """``sel`` as an index of ``dst`` that gives a view even when every axis is an integer:
    numpy's ``dst[0, 0]`` is a scalar copy, ``dst[0, 0, ...]`` a 0-d view of that element
    (h5py's ``read_direct(dst, source_sel, np.s_[0, 0])`` writes into it)."""
    idx = sel if isinstance(sel, tuple) else (sel,)
    return idx if any(i is Ellipsis for i in idx) else (*idx, Ellipsis)


def in_file(e: Error, filename: str) -> Error:
    """``e`` with its message naming ``filename`` (where the library says "this file")."""
    msg = e.message
    if "this file" in msg:
        return with_message(e, msg.replace("this file", repr(filename)))
    if repr(filename) in msg:
        return e
    return with_message(e, f"{filename!r}: {msg}")


class Dataset(Handle):
    """An HDF5 dataset opened through vh5 (``f["name"]`` or ``f.dataset("name")``).

    Attributes (h5py's names and values for the same file):
        name (str | bytes): absolute path of the dataset, e.g. ``"/grp/x"``; ``bytes`` when
            it is not UTF-8 (a file written by another tool), as in h5py: ``b"/temp\\xe9rature"``.
        file (File): the file it came from.
        shape (tuple[int, ...]): current extent in elements: asked of libhdf5 again on every
            use (``d.shape``, ``d[sel]``, ``len(d)``...) when it may change in this process
            (the file is open read-write or SWMR here, by this File or by another opener of
            the same libhdf5: h5py, with the h5py-bound build, resizing the dataset); read
            once at open otherwise (a read-only file nothing in this process can write).
        maxshape (tuple[int | None, ...]): maximum extent, None for unlimited axes.
        dtype (numpy.dtype | None): the element type *as stored in the file*, byte order
            included (e.g. ``dtype('>f4')``); a fixed-length string ``dtype('S<n>')`` (as h5py:
            bytes, NUL-padded whatever the file's padding); compound and other fixed-size
            non-numeric types are ``dtype('V<itemsize>')`` (libhdf5's native record layout, where h5py shows
            named fields; selections refuse them); None when vh5 cannot read the type
            (variable-length strings, vlen, references).
        chunks (tuple[int, ...] | None): chunk shape in elements, None when not chunked.
        layout (str): ``"contiguous"``, ``"chunked"``, ``"compact"`` or ``"virtual"``.
        filters (tuple[str | int, ...]): filter pipeline in order (``"gzip"``, ``"shuffle"``,
            ``"fletcher32"``, ... or the numeric id of a plugin filter, e.g. 32000 for LZF).
        compression, compression_opts, filter_ids, shuffle, fletcher32, scaleoffset: as in h5py
            (properties; ``compression`` is ``"unknown"`` for a pipeline with a filter h5py
            does not know by name and no gzip / lzf / szip, as h5py 3.16 says).
        nbytes (int): :attr:`size` times h5py's item size (the file type's; 8 for a vlen,
            variable-length string or reference, h5py's Python object), as h5py (property).
        fillvalue: the fill value (h5py's value: 0 when the writer set none) as a scalar of
            :attr:`dtype` for numbers; for records, a value of the memory type's numpy dtype
            (the layout vh5 moves them in), what h5py gives field for field: ``np.void`` with
            named fields for a compound, ``np.bytes_`` for a fixed-length string, an array
            for an array type, the base integer for an enum, ``np.void`` bytes for an opaque
            type (a datetime64 / timedelta64 for h5py's, tagged with that dtype; ``np.void``
            where numpy has no exact dtype); None when vh5 cannot read the type.
        ndim (int), size (int): number of axes and of elements.
    """

    __slots__ = (
        "name", "file", "_shape", "_live", "maxshape", "dtype", "chunks", "layout", "filters", "fillvalue", "_by_file",
        "_memtype", "_file_itemsize",
    )  # fmt: skip

    def __init__(self, file, name):
        self.file = file
        name = name_arg(name, "dataset name")
        path = name if name.startswith("/") else "/" + name
        self.name = shown_name(path)
        self._by_file = False
        out = ctypes.c_int64(0)
        fid = file.id
        st = lib().vh5_dataset_open(fid, name_bytes(path), ctypes.byref(out))
        try:
            check(st, {fid: f"file {file.filename!r}"})
        except Error as e:
            raise in_file(e, file.filename) from None
        self._adopt(out.value)
        children = getattr(file, "_children", None)
        if children is not None:
            children.add(self)

    @classmethod
    def _from_hdf5_id(cls, file, name: str, hid: int) -> Dataset:
        """A Dataset on the caller's open dataset id ``hid`` of the libhdf5 vh5 calls
        (``vh5_dataset_from_hdf5_id``: vh5 takes its own reference; closing this Dataset gives
        back only that one). ``file`` is any object with a ``filename`` (for messages)."""
        self = cls.__new__(cls)
        self.file = file
        self.name = name
        self._by_file = False
        out = ctypes.c_int64(0)
        st = lib().vh5_dataset_from_hdf5_id(int(hid), ctypes.byref(out))
        check(st, {int(hid): f"dataset {name!r} of {file.filename!r}"})
        self._adopt(out.value)
        return self

    def _adopt(self, ident: int) -> None:
        """Own the vh5 id ``ident`` and fill the attributes from ``vh5_dataset_get_info``."""
        Handle.__init__(self, ident)
        info = DatasetInfo()
        try:
            check(lib().vh5_dataset_get_info(self._id, ctypes.byref(info)), self._ids())
        except BaseException:
            self.close()
            raise
        self._describe(info)

    def _describe(self, info) -> None:
        nd = int(info.ndim)
        self._shape = tuple(int(info.shape[i]) for i in range(nd))
        # The library says whether the extent may change while the id is open (the file's
        # shared intent is read-write or SWMR): then `shape` asks again on every use.
        self._live = bool(info.extent_may_change)
        self.maxshape = tuple(None if info.maxshape[i] == _UNLIMITED else int(info.maxshape[i]) for i in range(nd))
        if info.null_dataspace:  # h5py.Empty: no elements at all (a scalar has one), as h5py
            self._shape = self.maxshape = None
            self._live = False  # a null dataspace cannot be extended
        self.chunks = tuple(int(info.chunk[i]) for i in range(nd)) if info.chunked else None
        self.layout = LAYOUT_NAMES.get(int(info.layout), str(int(info.layout)))
        self.filters = tuple(FILTER_NAMES.get(int(f), int(f)) for f in info.filter_id[: min(int(info.nfilters), 16)])
        self.dtype = None if info.dtype == 0 else _dtypes.to_numpy(info.dtype, info.itemsize, info.byte_order)
        # h5py's itemsize: the file type's (its dtype keeps the file layout); a Python object
        # reference for the types h5py reads as objects (vlen, variable-length strings, references).
        self._file_itemsize = int(info.file_itemsize)
        if self.dtype is None:
            self._file_itemsize = self._object_itemsize(self._file_itemsize)
        self.fillvalue = None
        self._memtype = None
        if self.dtype is not None and self.dtype.kind == "V":
            # Records: the fill value as a value of the memory type's numpy dtype (any size),
            # what h5py gives field for field (np.void with fields, bytes, an array, an int).
            native, fill = self._mem_type()
            if native is not None and native.kind in "MmS":
                # h5py's datetime64 / timedelta64 (an opaque type tagged with that dtype): its
                # dtype, as h5py gives (the bytes are numpy's, in the tag's byte order). A
                # fixed-length string: numpy's S<n> (NUL-padded), h5py's dtype; libhdf5 converts
                # space-padded and NUL-terminated strings into it (test_py_string_padding.py).
                self.dtype = native
            if fill is not None:
                value = np.frombuffer(fill, dtype=native if native is not None else self.dtype)
                self.fillvalue = value[0]
        elif self.dtype is not None and info.has_fill_value and info.itemsize <= 16:
            native = self.dtype.newbyteorder("=") if self.dtype.itemsize > 1 else self.dtype
            value = np.frombuffer(bytes(info.fill_value)[: info.itemsize], dtype=native)
            self.fillvalue = value.astype(self.dtype)[0]

    def _object_itemsize(self, file_itemsize: int) -> int:
        """h5py's ``dtype.itemsize`` for a type vh5 cannot read: 8 (a Python object) for a
        variable-length string, vlen or reference; the file type's size for a compound or
        array type holding one (h5py's dtype keeps the file's offsets and size, object fields
        8 bytes each). Which of the two it is only the library's refusal says: the reason of
        the UNSUPPORTED status of a read of no rows ("compound member ..." or "array of ..."
        for a container; test_py_nbytes.py pins the texts)."""
        nd = 0 if self._shape is None else len(self._shape)
        t = np.zeros((0, nd), np.uint64)
        try:
            _marshal.read(self._id, np.zeros((1,) * nd, "V1"), [t, t, t, None, None], 0, 0)
        except Error as e:
            if "(compound member " in e.message or "(array of " in e.message:
                return file_itemsize
        return _OBJECT_ITEMSIZE

    def _mem_type(self):
        """(numpy dtype, fill value bytes) of the memory type vh5 moves the elements with
        (``vh5_dataset_mem_type``): the dtype None when numpy has no exact equivalent, the
        bytes None without a fill value. Asked once per dataset."""
        got = getattr(self, "_memtype", None)
        if got is None:
            d = self._mem_type_json()
            fill = d["fill_value"]
            got = (_dtypes.from_description(d["numpy"]), None if fill is None else bytes.fromhex(fill))
            try:
                self._memtype = got
            except AttributeError:
                pass  # a stand-in without the slot
        return got

    def _mem_type_json(self) -> dict:
        """The JSON object ``vh5_dataset_mem_type`` returns (asked anew on every call)."""
        lib_fn, n = lib().vh5_dataset_mem_type, ctypes.c_size_t(0)
        check(lib_fn(self.id, None, 0, ctypes.byref(n)), self._ids())
        buf = ctypes.create_string_buffer(max(n.value, 1))
        check(lib_fn(self.id, buf, n.value, ctypes.byref(n)), self._ids())
        return json.loads(buf.raw[: n.value].decode("utf-8"))

    def _check_records(self, dt: np.dtype, what: str) -> None:
        """Refuse a dtype ``dt`` vh5 would move as raw records (:func:`_dtypes.layout_checked`:
        fields, ``S``, ``M``/``m``, ...) for the array ``what`` unless it is exactly the memory
        type vh5 moves this dataset's elements with (any other dtype of the same size would
        put values in the wrong fields or read bytes as other values: a byte-swapped or
        other-unit datetime64, a compound's bytes as a string), and any numpy unicode dtype
        (``U``: UCS-4 code points, which no HDF5 string type holds)."""
        if dt.kind == "U":
            raise error(
                "VH5_ERR_DTYPE",
                f"dataset {self.name!r} of {self.file.filename!r}: {what} has the numpy unicode dtype {dt.str} (UCS-4 "
                "code points), which no HDF5 type holds: vh5 would move raw bytes into it. Use a bytes dtype "
                f"(np.dtype('S{self._itemsize()}') for a fixed-length string dataset) and decode afterwards",
            )
        native = self._mem_type()[0]
        if native is not None and dt == native:
            return
        if dt.names is None:
            self._refuse_raw(dt, native, what)
        mine = _dtypes.layout_text(dt)
        if native is None:
            theirs = "one numpy cannot describe exactly"
        else:
            theirs = _dtypes.layout_text(native)
        hint = (
            f" Use that dtype (np.dtype({_dtypes.dtype_spec(native)!r})) and rearrange afterwards"
            if native is not None and native.names is not None
            else f" Use np.dtype('V{self._itemsize()}') for the raw records"
        )
        raise error(
            "VH5_ERR_DTYPE",
            f"dataset {self.name!r} of {self.file.filename!r}: {what} has the record dtype {mine}, but vh5 moves this "
            f"dataset's elements as raw records of libhdf5's native memory type, {theirs} (h5py's dtype keeps the "
            "file's offsets and byte order, which may differ): fields would land in the wrong places, so vh5 "
            f"refuses.{hint}, or read with h5py",
        )

    def _refuse_raw(self, dt: np.dtype, native, what: str) -> None:
        """Refuse the non-record dtype ``dt`` (``S``, ``M``/``m``, ``longdouble``...) that vh5
        would move as raw bytes of this dataset's memory type ``native`` (another type)."""
        theirs = "a type numpy cannot describe exactly" if native is None else repr(native.str)
        if native is not None and native.subdtype is not None:
            theirs = repr(_dtypes.dtype_spec(native))
        why = ""
        if dt.kind in "Mm":
            why = (
                " (h5py reads datetime64 / timedelta64 only from an opaque type tagged with that exact dtype, "
                "unit and byte order included, and refuses any other)"
            )
        raise error(
            "VH5_ERR_DTYPE",
            f"dataset {self.name!r} of {self.file.filename!r}: {what} has the numpy dtype {dt.str}, but vh5 moves "
            f"this dataset's elements as raw bytes of libhdf5's native memory type, {theirs}: the bytes would be "
            f"taken as other values, so vh5 refuses{why}. Use np.dtype('V{self._itemsize()}') for the raw records, "
            "or read with h5py",
        )

    def _itemsize(self) -> int:
        return self.dtype.itemsize if self.dtype is not None else 0

    def _ids(self) -> dict:
        """Names for this dataset's (and its file's) raw ids in library messages."""
        desc = f"dataset {self.name!r} of {self.file.filename!r}"
        ids = {self._id: desc}
        fid = getattr(self.file, "_id", None)
        if isinstance(fid, int):
            ids[fid] = f"file {self.file.filename!r}"
        return ids

    def _closed_message(self) -> str:
        why = " (closed with its File)" if self._by_file else ""
        return f"vh5.Dataset {self.name!r} of {self.file.filename!r} is closed{why}"

    def _close_with_file(self) -> None:
        self._by_file = True
        self.close()

    # -- h5py's metadata properties ------------------------------------------------------

    @property
    def shape(self):
        """Current extent (see the class docs): re-read from libhdf5 when it may change in
        this process (``H5Dset_extent`` by vh5's or h5py's handle of the same libhdf5), so it
        is never stale; a closed dataset keeps the last extent seen."""
        if self._live and not self.closed:
            nd, dims = ctypes.c_uint32(0), (ctypes.c_uint64 * 32)()
            check(lib().vh5_dataset_get_shape(self._id, ctypes.byref(nd), dims), self._ids())
            self._shape = tuple(dims[: nd.value])
        return self._shape

    @property
    def ndim(self) -> int:
        """Number of axes (0 for a scalar dataset and for an empty one, h5py's ``Empty``)."""
        return 0 if self._shape is None else len(self._shape)  # the extent's rank never changes

    @property
    def size(self):
        """Number of elements (product of :attr:`shape`); None for an empty dataset (a null
        dataspace, h5py's ``Empty``: :attr:`shape` is None), as h5py."""
        shape = self.shape
        return None if shape is None else int(np.prod(shape, dtype=np.int64))

    def __len__(self) -> int:
        """Length of the first axis (``TypeError`` for a scalar or empty dataset, as h5py)."""
        shape = self.shape
        if shape is None:
            raise TypeError(f"dataset {self.name!r} is empty (a null dataspace, h5py.Empty): it has no len()")
        if not shape:
            raise TypeError(f"dataset {self.name!r} is a scalar (0-d): it has no len()")
        return shape[0]

    @property
    def compression(self):
        """h5py's rule: ``"gzip"``, ``"lzf"`` or ``"szip"`` (the first of these, in this order,
        in the pipeline); else ``"unknown"`` when the pipeline holds a filter h5py does not
        know by name (nbit, blosc, zstd, bzip2, any plugin or unregistered id); else None."""
        for f, name in _COMPRESSION:
            if f in self.filters:
                return name
        if any(f not in _H5PY_KNOWN_FILTERS for f in self.filters):
            return "unknown"
        return None

    @property
    def compression_opts(self):
        """The gzip level, the szip ``(mode, pixels_per_block)`` pair, or None (lzf,
        ``"unknown"``, no compression), as h5py: of the last such filter when the pipeline
        repeats it."""
        comp = self.compression
        if comp not in ("gzip", "szip"):
            return None
        index = max(i for i, f in enumerate(self.filters) if f == comp)
        values = self._filter_params(index)
        if comp == "gzip":
            return int(values[0]) if values else None
        mask, pixels = int(values[0]), int(values[1])
        return ("ec" if mask & _SZIP_EC else "nn" if mask & _SZIP_NN else None, pixels)

    @property
    def nbytes(self) -> int:
        """Bytes the elements take in the file's element type, uncompressed: :attr:`size`
        times the file type's item size (h5py's ``nbytes``, whose dtype keeps the file's
        layout; 8 per element for the types h5py reads as Python objects, the file type's
        size for a compound or array type holding them, as h5py); 0 for an empty dataset (a
        null dataspace)."""
        size = self.size
        if size is None:
            return 0
        itemsize = getattr(self, "_file_itemsize", None)
        if itemsize is None:  # a stand-in made before the attribute existed
            itemsize = self.dtype.itemsize if self.dtype is not None else _OBJECT_ITEMSIZE
        return size * itemsize

    @property
    def scaleoffset(self):
        """The scale-offset filter's setting as in h5py: for integers the number of bits kept
        (0: chosen by libhdf5), for floats the number of decimal digits kept; None when the
        filter is not in the pipeline."""
        if "scaleoffset" not in self.filters:
            return None
        values = self._filter_params(self.filters.index("scaleoffset"))
        return int(values[1]) if len(values) > 1 else None

    @property
    def filter_ids(self) -> tuple:
        """The numeric ids of the pipeline's filters, in order (h5py's ``filter_ids``)."""
        ids = {name: code for code, name in FILTER_NAMES.items()}
        return tuple(ids.get(f, f) for f in self.filters)

    @property
    def shuffle(self) -> bool:
        """True when the shuffle filter is in the pipeline."""
        return "shuffle" in self.filters

    @property
    def fletcher32(self) -> bool:
        """True when the Fletcher-32 checksum filter is in the pipeline."""
        return "fletcher32" in self.filters

    def _filter_params(self, index: int) -> list:
        n = ctypes.c_size_t(0)
        vals = (ctypes.c_uint32 * 64)()
        check(lib().vh5_dataset_filter_params(self.id, index, vals, 64, ctypes.byref(n)), self._ids())
        return list(vals[: min(n.value, 64)])

    # -- reads ---------------------------------------------------------------------------

    def _extent(self) -> tuple:
        """:attr:`shape`, refusing an empty dataset (a null dataspace) as the library does."""
        shape = self.shape
        if shape is None:
            raise error(
                "VH5_ERR_UNSUPPORTED",
                f"dataset {self.name!r} of {self.file.filename!r} has a null dataspace (H5S_NULL, h5py.Empty): "
                "it holds no elements to read",
            )
        return shape

    def _rank(self) -> int:
        """Number of axes, refusing an empty dataset (a null dataspace) as :meth:`_extent`
        does, without asking the library for the extent (its rank never changes)."""
        if self._shape is None:
            self._extent()  # raises
        return len(self._shape)

    def _readable_dtype(self) -> np.dtype:
        dt = self.dtype
        if dt is None:
            raise error(
                "VH5_ERR_UNSUPPORTED",
                f"dataset {self.name!r} of {self.file.filename!r} has an element type vh5 cannot read "
                "(variable-length string, vlen or reference): read it with h5py",
            )
        if dt.kind == "V" and "complex number type" in (desc := self._mem_type_json().get("file_type") or ""):
            # HDF5 2.x's complex class with parts numpy has no complex dtype of (float16).
            raise error(
                "VH5_ERR_UNSUPPORTED",
                f"dataset {self.name!r} of {self.file.filename!r} has {desc}. Pass a np.dtype({dt.str!r}) "
                "destination to vh5.read_many_slices for the raw records (real and imaginary parts side by side, "
                "native byte order)",
            )
        if dt.kind == "V":
            # vh5 reports every type without a plain numpy dtype as opaque records: compound,
            # enum, string, opaque, bitfield, and numbers whose bits are not numpy's layout
            # (reduced precision or a bit offset: what nbit datasets store).
            kind = (
                "numbers with reduced precision or a bit offset (the nbit filter is in its pipeline), "
                "or a compound, enum, string or opaque type"
                if "nbit" in self.filters
                else "a compound, enum, string, opaque or bitfield type, "
                "or numbers with reduced precision or a bit offset"
            )
            raise error(
                "VH5_ERR_UNSUPPORTED",
                f"dataset {self.name!r} of {self.file.filename!r} has an element type numpy has no dtype for ({kind}): "
                f"vh5 moves it only as raw records of libhdf5's native memory type ({dt}), not as h5py's values, "
                f"named fields or strings. Read it with h5py, or pass a np.dtype({dt.str!r}) destination to "
                "vh5.read_many_slices for the raw records",
            )
        return dt

    def _read_hyperslab(self, hs: _select.Hyperslab, dst: np.ndarray, convert: bool) -> None:
        """One ``vh5_read_many_slices`` row: hyperslab ``hs`` into ``dst`` (shape ``hs.count``)."""
        if _dtypes.layout_checked(dst.dtype):
            self._check_records(dst.dtype, "dst")
        nd = len(hs.start)
        stepped = hs.step != (1,) * nd
        rows = (hs.start, (0,) * nd, hs.count, hs.step) if stepped else (hs.start, (0,) * nd, hs.count)
        t = np.array(rows, dtype=np.uint64)  # one array for the tables, a row each
        base, w = _marshal.address(t), 8 * nd
        fl = _marshal.flags(False, convert, _dtypes.swapped(dst.dtype))
        ptrs = [base, base + w, base + 2 * w, base + 3 * w if stepped else None, None]
        _marshal.read_ptrs(self.id, dst, ptrs, 1, fl, self._ids)

    def __getitem__(self, sel):
        """The selected elements as a numpy array of :attr:`dtype` (h5py's basic selections:
        integers, slices with positive steps, ``...``, tuples of those, fewer indices than
        axes); a single element (all axes indexed by integers, or ``d[()]`` of a scalar
        dataset) as a numpy scalar, and a scalar dataset read with ``...`` (``d[...]``,
        ``d[(Ellipsis,)]``) as a 0-d array, as h5py. One library call reads the whole hyperslab.

        Raises:
            IndexError: an integer out of range, too many indices.
            ValueError: a slice step <= 0. TypeError: fancy indexing, masks, None.
            vh5.UnsupportedError: an element type vh5 only moves as raw records.
            vh5.InvalidHandleError: the dataset (or its File) is closed.
        """
        dt = self._readable_dtype()
        out = read_basic(self, sel, dt)
        if out is not None:
            return out
        hs = _select.parse(sel, self._extent())
        out = np.empty(hs.count, dtype=dt)
        if out.size:
            self._read_hyperslab(hs, out, False)
        elif self.closed:
            self.id  # noqa: B018 - raises InvalidHandleError
        out = out.reshape(hs.shape)
        if out.ndim == 0 and sel is not Ellipsis:
            # h5py: a scalar dataset read with `...` (alone or in a tuple, as numpy) gives a 0-d
            # array; `d[()]`, and integers selecting one element of a dataset with axes, a scalar.
            if hs.start == () and isinstance(sel, tuple) and any(k is Ellipsis for k in sel):
                return out
            return out[()]
        return out

    def __array__(self, dtype=None, copy=None):
        """The whole dataset as a numpy array (``np.asarray(dset)``)."""
        a = self[...]
        return a if dtype is None else a.astype(dtype)

    def read_direct(self, dst, source_sel=None, dest_sel=None) -> None:
        """Read ``self[source_sel]`` into ``dst[dest_sel]`` in place (h5py's signature).

        ``source_sel`` / ``dest_sel``: basic selections (e.g. ``np.s_[0:10, 5]``), None for
        everything. The two selections must have the same shape, integer axes dropped (h5py
        also accepts any two shapes of the same size; vh5 does not guess how to reshape). A
        ``dst`` dtype other than :attr:`dtype` is converted by libhdf5 (as h5py does).

        Raises:
            TypeError: ``dst`` is not a numpy array. ValueError: read-only ``dst``, shapes
            differ, a slice step <= 0. IndexError / TypeError: as :meth:`__getitem__`.
        """
        dt = self._readable_dtype()
        if not isinstance(dst, np.ndarray):
            raise TypeError(f"dst must be a numpy.ndarray, not {type(dst).__name__}")
        if not dst.flags.writeable:
            raise ValueError("dst must be writeable")
        hs = _select.parse(() if source_sel is None else source_sel, self._extent())
        view = dst if dest_sel is None else dst[_as_view_index(dest_sel)]
        if not isinstance(view, np.ndarray) or (view.base is None and view is not dst):
            raise TypeError(f"dest_sel {dest_sel!r} must be a basic selection of dst (a view, not a copy)")
        if view.shape != hs.shape:
            raise ValueError(
                f"source selection of dataset {self.name!r} has shape {hs.shape}, the destination selection "
                f"{view.shape}; they must be equal"
            )
        target = view.view()
        target.shape = hs.count  # inserts the integer axes (length 1): never a copy
        if target.size:
            self._read_hyperslab(hs, target, view.dtype.newbyteorder("=") != dt.newbyteorder("="))
        elif self.closed:
            self.id  # noqa: B018 - raises InvalidHandleError

    def __repr__(self) -> str:
        dt = self.dtype.str if self.dtype is not None else None
        return f"<vh5.Dataset {self.name!r} shape={self.shape} dtype={dt} chunks={self.chunks}>"
