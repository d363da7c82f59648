//! C ABI of the HDF5 half: file/dataset handles and `vh5_read_many_slices`.
//!
//! Thread safety (all functions here): callable from any thread at once. Every libhdf5 call
//! vh5 makes runs under one process-wide reentrant lock (shared with Rust code using the
//! `hdf5-metno` crate), taken once per vh5 call, so concurrent vh5 calls are serialised inside
//! libhdf5 but each sees consistent state. Results are those of some serial order of the calls.
//! Two threads must not write to overlapping destination memory at the same time (that is a
//! data race in the caller's program).

use std::ffi::c_char;

use hdf5_sys::h5i::H5I_type_t;

use super::args::{array_parts, dst_array, table_args};
pub use super::args::{vh5_array, VH5_MAX_RANK};
use super::{bytes_arg, guard, guard_keeping_last_error, refuse_outputs_in_string, vh5_status, write_out};
use crate::dtype::ByteOrder;
use crate::hdf5::{self as h5, DatasetInfo, Layout};
use crate::transfer;

/// `vh5_file_open` flag: open for reading and writing (`H5F_ACC_RDWR`). Without it (flags 0)
/// the file is opened read-only. Needed by `vh5_write_many_slices`.
pub const VH5_FILE_READ_WRITE: u32 = 1;

/// `vh5_file_open` flag (security): allow datasets that point at other files — raw data in
/// external files (`H5Pset_external`), virtual datasets (`H5D_VIRTUAL`) and paths through
/// external links — for datasets opened from this file id. Without it such datasets are
/// refused with `VH5_ERR_UNSUPPORTED` (message naming the dataset, its file and what it points
/// at) by `vh5_dataset_open`, and by every read and write of a dataset id not opened through a
/// file with this flag (ids of other libraries included): a crafted file could otherwise make
/// a read return the bytes of any file the process may read. Set it only for trusted files.
pub const VH5_FILE_ALLOW_EXTERNAL: u32 = 2;

/// `vh5_read_many_slices` flag: versioned-hdf5 semantics. Counts are silently clipped so that
/// both the source and the destination selections fit in their extents (taking steps into
/// account); rows clipped to zero elements are skipped and later rows still run. Without it,
/// any row reaching outside either extent is an error and nothing is written.
pub const VH5_SLICES_CLIP: u32 = 1;

/// `vh5_read_many_slices` flag: let libhdf5 convert the dataset's element type into the
/// destination dtype (e.g. int16 file -> float64 array). Without it the destination dtype
/// must be the dataset's (byte order aside: big-endian files are always converted to native).
pub const VH5_SLICES_CONVERT: u32 = 2;

/// `vh5_read_many_slices` flag: the destination's elements are stored in the byte order
/// opposite to the host's (e.g. a big-endian `float32` array on a little-endian host, numpy
/// `'>f4'`); without it destinations are in native order. Elements arrive in the
/// destination's order: bytes of a file type already in that order move unchanged, others are
/// byte-swapped while scattering (or converted by libhdf5 into the swapped memory type). With
/// `VH5_SLICES_CONVERT` the conversion targets `dst->dtype` in that order. Numeric dtypes only:
/// `VH5_ERR_DTYPE` for `VH5_DTYPE_OPAQUE`; no effect on 1-byte dtypes and bool. Writes refuse
/// it (`VH5_ERR_INVALID_ARGUMENT`).
pub const VH5_SLICES_SWAPPED: u32 = 4;

/// Storage layout codes (`layout` field of `vh5_dataset_info`).
pub const VH5_LAYOUT_CONTIGUOUS: u32 = 0;
/// Chunked storage (see `chunk`).
pub const VH5_LAYOUT_CHUNKED: u32 = 1;
/// Compact storage (data inside the object header).
pub const VH5_LAYOUT_COMPACT: u32 = 2;
/// Virtual dataset (HDF5 1.10 VDS).
pub const VH5_LAYOUT_VIRTUAL: u32 = 3;

/// Description of a dataset, filled by `vh5_dataset_get_info`. Every field is written on
/// success; the struct is zeroed on failure.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct vh5_dataset_info {
    /// Number of axes (0 for a scalar dataset).
    pub ndim: u32,
    /// Current extent per axis, elements (first `ndim` entries; the rest are 0).
    pub shape: [u64; 32],
    /// Maximum extent per axis, elements; `UINT64_MAX` = unlimited.
    pub maxshape: [u64; 32],
    /// Storage layout: `VH5_LAYOUT_*`.
    pub layout: u32,
    /// 1 when the layout is chunked.
    pub chunked: u8,
    /// 1 when the layout is contiguous.
    pub contiguous: u8,
    /// 1 when the layout is compact.
    pub compact: u8,
    /// 1 when the filter pipeline is not empty (`nfilters > 0`).
    pub has_filters: u8,
    /// Chunk shape, elements (first `ndim` entries, when `chunked`; otherwise all 0).
    pub chunk: [u64; 32],
    /// Element type `VH5_DTYPE_*`; `VH5_DTYPE_INVALID` (0) when vh5 cannot read the type
    /// (variable-length strings, vlen, references): reads then fail with VH5_ERR_UNSUPPORTED.
    pub dtype: u32,
    /// Bytes per element of the memory type vh5 reads with: what a destination's `itemsize`
    /// must be. Equals `file_itemsize` except for some `VH5_DTYPE_OPAQUE` types (native
    /// alignment of compound members; the layout itself: `vh5_dataset_mem_type`).
    pub itemsize: usize,
    /// Bytes per element in the file.
    pub file_itemsize: usize,
    /// Byte order of the file type: `VH5_ORDER_LITTLE`, `VH5_ORDER_BIG` or `VH5_ORDER_NONE`
    /// (1-byte types, bool, strings, opaque types without a single order). Reads always deliver
    /// native order.
    pub byte_order: u32,
    /// Number of filters in the pipeline.
    pub nfilters: u32,
    /// Filter ids in pipeline order (first `min(nfilters, 16)` entries): 1 deflate (gzip),
    /// 2 shuffle, 3 fletcher32, 4 szip, 5 nbit, 6 scaleoffset, others registered plugins.
    pub filter_id: [i32; 16],
    /// 1 when a fill value is defined (libhdf5's default zeros count) and vh5 can read the type.
    pub has_fill_value: u8,
    /// 1 when the fill value was set by the writer of the file.
    pub fill_value_user_defined: u8,
    /// The fill value as one element of the memory type (native byte order), in the first
    /// `itemsize` bytes, when `has_fill_value` and `itemsize <= 16`; zero otherwise.
    pub fill_value: [u8; 16],
    /// 1 for a null dataspace (`H5S_NULL`, h5py's `Empty`): the dataset holds no elements
    /// at all (`ndim` is 0 as for a scalar, which holds one); reads of it fail with
    /// `VH5_ERR_UNSUPPORTED`. (Placed in what was the struct's trailing padding: its size
    /// and every other field's offset are unchanged.)
    pub null_dataspace: u8,
    /// 1 when the dataset's extent (`shape`) may change while `dset` is open: its file is
    /// open read-write or SWMR in this process, by vh5 or by another opener of the same
    /// libhdf5 (e.g. h5py in the h5py-bound build; libhdf5 shares one open file and its
    /// intent between openers), so `H5Dset_extent` / `H5Drefresh` may change it: ask again
    /// before relying on `shape`. 0: read-only without SWMR in this process, `shape` stays
    /// valid until the id is closed. (Placed in trailing padding, as `null_dataspace`.)
    pub extent_may_change: u8,
}

impl From<&DatasetInfo> for vh5_dataset_info {
    fn from(info: &DatasetInfo) -> Self {
        let mut o = vh5_dataset_info { ndim: info.shape.len() as u32, ..Default::default() };
        o.shape[..info.shape.len()].copy_from_slice(&info.shape);
        o.maxshape[..info.maxshape.len()].copy_from_slice(&info.maxshape);
        o.layout = match info.layout {
            Layout::Contiguous => VH5_LAYOUT_CONTIGUOUS,
            Layout::Chunked => VH5_LAYOUT_CHUNKED,
            Layout::Compact => VH5_LAYOUT_COMPACT,
            Layout::Virtual => VH5_LAYOUT_VIRTUAL,
        };
        o.chunked = (info.layout == Layout::Chunked) as u8;
        o.contiguous = (info.layout == Layout::Contiguous) as u8;
        o.compact = (info.layout == Layout::Compact) as u8;
        if let Some(c) = &info.chunk {
            o.chunk[..c.len()].copy_from_slice(c);
        }
        o.dtype = info.dtype.dtype.map_or(0, |d| d.code());
        o.itemsize = info.dtype.mem_itemsize;
        o.file_itemsize = info.dtype.file_itemsize;
        o.byte_order = match info.dtype.byte_order {
            Some(ByteOrder::Little) => 0,
            Some(ByteOrder::Big) => 1,
            None => 2,
        };
        o.nfilters = info.filters.len() as u32;
        o.has_filters = (!info.filters.is_empty()) as u8;
        for (k, (id, _)) in info.filters.iter().take(16).enumerate() {
            o.filter_id[k] = *id;
        }
        if let Some(fv) = &info.fill_value {
            o.has_fill_value = 1;
            if fv.len() <= 16 {
                o.fill_value[..fv.len()].copy_from_slice(fv);
            }
        }
        o.fill_value_user_defined = info.fill_value_user_defined as u8;
        o.null_dataspace = info.null_dataspace as u8;
        o.extent_may_change = info.extent_may_change as u8;
        o
    }
}

/// Open the HDF5 file at `path` and store its id in `*file_out`. `path` is a NUL-terminated
/// byte string, passed to the operating system as it is: UTF-8 is not required (a Unix file
/// name may hold any bytes but NUL); messages show bytes that are not UTF-8 as `\xNN` and a
/// backslash as `\\`.
///
/// `flags`: 0 (read-only), or any of `VH5_FILE_READ_WRITE` and `VH5_FILE_ALLOW_EXTERNAL` (allow
/// datasets pointing at other files; see its doc). The id is a libhdf5 `hid_t` (int64_t);
/// close it with `vh5_close`. The file is opened with the `H5F_CLOSE_WEAK` close degree:
/// closing the file id while datasets opened from it are still open is allowed, and the file
/// stays open until the last of them is closed.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT` (`path` or `file_out` NULL);
/// `VH5_ERR_INVALID_ARGUMENT` (unknown flag bits; `file_out` overlapping the bytes of `path`,
/// which writing it would change: nothing written, the message names the byte offset); `VH5_ERR_IO` (missing or
/// unreadable file, a directory, or not an HDF5 file — e.g. a netCDF classic file: the
/// message says "not an HDF5 file"); `VH5_ERR_HDF5` (libhdf5 failed to open it; message with
/// its error stack). `*file_out` is set to -1 on failure. Thread-safe.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `file_out` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn vh5_file_open(path: *const c_char, flags: u32, file_out: *mut i64) -> vh5_status {
    guard(|| {
        // SAFETY: `path` is NULL or NUL-terminated (the caller's contract).
        unsafe { refuse_outputs_in_string("path", path, &[("file_out", file_out.cast_const().cast(), 8)]) }?;
        // SAFETY: `file_out` is NULL or valid for one write (the caller's contract).
        unsafe { write_out(file_out, "file_out", -1) }?;
        // SAFETY: `path` is NULL or NUL-terminated (the caller's contract).
        let path = unsafe { bytes_arg(path, "path") }?;
        let s = h5::session();
        let f = h5::open_file(s.lock(), path, flags)?;
        // SAFETY: as above.
        unsafe { write_out(file_out, "file_out", f.into_raw()) }
    })
}

/// Open the dataset `name` (a NUL-terminated path, through groups: "grp/var" or "/grp/var")
/// in the file (or group) `file` and store its id in `*dset_out`; close it with `vh5_close`.
/// The path is bytes, matched byte for byte against the file's link names: UTF-8 is not
/// required (files written by other tools may hold Latin-1 names such as `"temp\xe9rature"`;
/// pass the bytes `vh5_group_members` lists). Messages show bytes that are not UTF-8 as
/// `\xNN` and a backslash as `\\`.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT`; `VH5_ERR_INVALID_HANDLE` (`file` is not an open
/// file or group id: closed, never opened, or an id of another libhdf5 instance);
/// `VH5_ERR_INVALID_ARGUMENT` (`dset_out` overlapping the bytes of `name`: nothing written);
/// `VH5_ERR_NOT_FOUND` (the message names the missing path component);
/// `VH5_ERR_INVALID_ARGUMENT` (the object is a group or a named datatype, not a dataset);
/// `VH5_ERR_UNSUPPORTED` (the path goes through an external link, or the dataset stores its
/// data in external files or is virtual, and `file` was not opened with
/// `VH5_FILE_ALLOW_EXTERNAL`: the message names the dataset and what it points at);
/// `VH5_ERR_HDF5`. `*dset_out` is set to -1 on failure. Chunked datasets are opened with a
/// larger chunk cache than libhdf5's default (see docs/ARCHITECTURE.md). Thread-safe.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `dset_out` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn vh5_dataset_open(file: i64, name: *const c_char, dset_out: *mut i64) -> vh5_status {
    guard(|| {
        // SAFETY: `name` is NULL or NUL-terminated (the caller's contract).
        unsafe { refuse_outputs_in_string("name", name, &[("dset_out", dset_out.cast_const().cast(), 8)]) }?;
        // SAFETY: `dset_out` is NULL or valid for one write (the caller's contract).
        unsafe { write_out(dset_out, "dset_out", -1) }?;
        // SAFETY: `name` is NULL or NUL-terminated (the caller's contract).
        let name = unsafe { bytes_arg(name, "name") }?;
        let s = h5::session();
        let d = h5::open_dataset(s.lock(), file, name)?;
        // SAFETY: as above.
        unsafe { write_out(dset_out, "dset_out", d.into_raw()) }
    })
}

/// Use a dataset id the caller opened itself, through the same libhdf5 this library calls,
/// as a vh5 dataset id: typically h5py's `Dataset.id.id` when libvh5 is the h5py-bound build
/// (`vh5_hdf5_origin` = `"h5py"`: its libhdf5 symbols resolve against h5py's library), or a
/// C program's own `H5Dopen2` id. Nothing is reopened by path: in-memory (core driver) files,
/// files the caller holds open for writing and data it has not flushed are seen exactly as
/// the caller's libhdf5 sees them.
///
/// vh5 takes one reference of its own to `dataset_id` (`H5Iinc_ref`) and stores the same id
/// number in `*out`; `vh5_close(*out)` gives back only that reference, the caller's stays
/// valid (and closing the caller's reference leaves vh5's valid). A caller that closes the
/// id by force (h5py's `File.close()` closes every object of its file) makes later vh5 calls
/// on it fail with `VH5_ERR_INVALID_HANDLE`, never undefined behaviour. Datasets used this way
/// never get vh5's decoded-chunk cache (their file may be written behind vh5's back); their
/// storage in other files (external raw data, virtual datasets) is refused as for any id not
/// opened through a file with `VH5_FILE_ALLOW_EXTERNAL`.
///
/// Valid ONLY when the caller's libhdf5 is the one vh5 calls: an id of another libhdf5
/// instance (h5py's, with a libvh5 linked to the system's libhdf5) names nothing or another
/// object here; it is refused when it is not an open dataset id of vh5's libhdf5.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT` (`out` NULL); `VH5_ERR_INVALID_HANDLE`
/// (`dataset_id` is not an open dataset id of this libhdf5: closed, never opened, another
/// libhdf5's, or a file / group / datatype id — the message names its type); `VH5_ERR_HDF5`
/// (libhdf5 refused the reference). `*out` is set to -1 on failure. Thread-safe (the caller
/// must also hold its own libhdf5 lock when that library is shared with other code: h5py's
/// `phil`, which the Python package takes).
///
/// # Safety
/// `out` must be NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn vh5_dataset_from_hdf5_id(dataset_id: i64, out: *mut i64) -> vh5_status {
    guard(|| {
        // SAFETY: `out` is NULL or valid for one write (the caller's contract).
        unsafe { write_out(out, "out", -1) }?;
        let s = h5::session();
        let d = h5::Handle::adopt_dataset(s.lock(), dataset_id)?;
        // SAFETY: as above.
        unsafe { write_out(out, "out", d.into_raw()) }
    })
}

/// Describe the dataset `dset` into `*out` (see `vh5_dataset_info`; fully written on success,
/// zeroed on failure).
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT`; `VH5_ERR_INVALID_HANDLE` (`dset` is not an open
/// dataset id); `VH5_ERR_HDF5`. A dataset whose type vh5 cannot read still succeeds, with
/// `dtype` = `VH5_DTYPE_INVALID`. Thread-safe.
///
/// # Safety
/// `out` must be NULL or valid for writing one `vh5_dataset_info`.
#[no_mangle]
pub unsafe extern "C" fn vh5_dataset_get_info(dset: i64, out: *mut vh5_dataset_info) -> vh5_status {
    guard(|| {
        // SAFETY: `out` is NULL or valid for one write (the caller's contract).
        unsafe { write_out(out, "out", vh5_dataset_info::default()) }?;
        let s = h5::session();
        let info = h5::dataset_info(s.lock(), dset)?;
        // SAFETY: as above.
        unsafe { write_out(out, "out", vh5_dataset_info::from(&info)) }
    })
}

/// The current extent of the dataset `dset`: `*ndim` axes (0 for a scalar dataset and for a
/// null dataspace), their lengths in elements in `shape[0..*ndim]` (the rest of `shape` is
/// left untouched). The `shape` of `vh5_dataset_get_info` alone, at a fraction of its cost:
/// for datasets whose `extent_may_change` is 1 (their file is open read-write or SWMR in this
/// process), whose extent another handle of the same libhdf5 may change between calls.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT`; `VH5_ERR_INVALID_HANDLE` (`dset` is not an open
/// dataset id); `VH5_ERR_HDF5`. On failure `*ndim` is 0. Thread-safe.
///
/// # Safety
/// `ndim` must be NULL or valid for writing one `uint32_t`; `shape` NULL or valid for writing
/// 32 `uint64_t` (the most axes a dataset vh5 opens can have).
#[no_mangle]
pub unsafe extern "C" fn vh5_dataset_get_shape(dset: i64, ndim: *mut u32, shape: *mut u64) -> vh5_status {
    guard(|| {
        // SAFETY: `ndim` is NULL or valid for one write (the caller's contract).
        unsafe { write_out(ndim, "ndim", 0) }?;
        if shape.is_null() {
            return Err(super::null_arg("shape"));
        }
        let s = h5::session();
        let dims = h5::dataset_shape(s.lock(), dset)?;
        // SAFETY: `shape` is valid for 32 writes (the caller's contract) and `dims` has at most
        // MAX_RANK (32) entries (`space_dims` refuses more).
        unsafe { std::ptr::copy_nonoverlapping(dims.as_ptr(), shape, dims.len().min(h5::MAX_RANK)) };
        // SAFETY: as above.
        unsafe { write_out(ndim, "ndim", dims.len() as u32) }
    })
}

/// Close a file or dataset id obtained from `vh5_file_open` / `vh5_dataset_open` (or any
/// file/dataset `hid_t` of the same libhdf5 the caller owns).
///
/// Closing a file opened with `VH5_FILE_READ_WRITE` flushes it first, so everything written
/// through vh5 is on disk even while datasets opened from it are still open (they keep the
/// file open until they are closed: `H5F_CLOSE_WEAK`).
///
/// Returns `VH5_OK`; `VH5_ERR_INVALID_HANDLE` (not an open file or dataset id, e.g. closed
/// twice); `VH5_ERR_HDF5`. A successful close leaves the message of the calling thread's last
/// failure (`vh5_last_error_message`) as it was, so handles can be closed between a failing
/// call and the read of its message. Thread-safe; do not close an id another thread is
/// still using.
#[no_mangle]
pub extern "C" fn vh5_close(id: i64) -> vh5_status {
    guard_keeping_last_error(|| {
        let s = h5::session();
        h5::dataset::expect_kind(s.lock(), id, &[H5I_type_t::H5I_FILE, H5I_type_t::H5I_DATASET], "id")?;
        h5::close(s.lock(), id)
    })
}

/// Copy many hyperslabs of dataset `dset` into the caller's array `*dst`.
///
/// Row i (0 <= i < nslices) copies, on every axis j (0 <= j < dst->ndim),
/// `dst[d : d+(c-1)*ds+1 : ds] = src[s : s+(c-1)*ss+1 : ss]` where s = src_start[i*ndim+j],
/// d = dst_start[i*ndim+j], c = count[i*ndim+j], ss = src_step[i*ndim+j] (1 if `src_step` is
/// NULL), ds = dst_step[i*ndim+j] (1 if NULL); all in ELEMENTS. Each table holds
/// `nslices * dst->ndim` uint64 values, row-major (may be NULL when that product is 0).
/// Snapshot: the tables are copied (nslices x ndim x 8 bytes each) before anything is
/// written, and the call uses only the copy, so tables lying in dst's memory (the same
/// addresses, or a second mapping of the same pages: two `mmap`s of one file) may be written
/// over by rows and change nothing of the call. Rows run in order: where destinations
/// overlap, the later row wins.
/// A row with a count of 0 on any axis copies nothing and is not bounds-checked.
/// The dataset must have `dst->ndim` axes. A scalar (0-d) dataset is read with `ndim` 0 and
/// empty tables: each row copies the single element.
///
/// `flags`: `VH5_SLICES_CLIP`, `VH5_SLICES_CONVERT`, `VH5_SLICES_SWAPPED` (or 0).
///
/// Every row and the array layout are validated before the first read, so on any status
/// below except `VH5_ERR_HDF5` nothing has been written. Unallocated chunks read as the
/// dataset's fill value, in every planner mode; also under fill time never
/// (`H5D_FILL_TIME_NEVER`, netCDF "no fill" files), where libhdf5's `H5Dread` leaves the
/// destination of never-written storage untouched: vh5 writes the fill value there (0 when
/// none is defined), never bytes of another row. Elements are delivered in native byte order
/// (big-endian datasets are swapped), or in the opposite order with `VH5_SLICES_SWAPPED`.
///
/// Returns `VH5_OK` (also for nslices 0 and zero-size arrays, which touch nothing);
/// `VH5_ERR_NULL_ARGUMENT` (dst, a required table, shape, or base with base_len > 0 NULL);
/// `VH5_ERR_INVALID_ARGUMENT` (unknown flag bits; a step of 0 — naming row, axis and table;
/// ndim of the table/array different from the dataset's; itemsize not the dtype's size;
/// destination strides that do not nest, see `vh5_array.strides`); `VH5_ERR_UNSUPPORTED` (more than 32
/// axes; variable-length, vlen or reference dataset types; a dataset with external or
/// virtual storage not opened through a file with `VH5_FILE_ALLOW_EXTERNAL`; a filter
/// pipeline libhdf5 cannot decode reliably, naming the filters; a stored chunk that needs a
/// filter the linked libhdf5 lacks, e.g. szip in a `static-hdf5` build or h5py's lzf,
/// naming the filter, the dataset and the file);
/// `VH5_ERR_BUFFER_TOO_SMALL`
/// (shape x strides reaching outside `[base, base+base_len)`: the message gives the byte
/// offsets); `VH5_ERR_OUT_OF_BOUNDS` (without CLIP: a row reaching outside the dataset or the
/// array extent, or whose `start + (count-1)*step` overflows uint64 — naming row, axis and the
/// numbers); `VH5_ERR_DTYPE` (unknown dtype code; dataset dtype differs from `dst->dtype`
/// without CONVERT; no libhdf5 conversion path with CONVERT; opaque itemsize mismatch; `VH5_SLICES_SWAPPED` with an opaque dtype);
/// `VH5_ERR_INVALID_HANDLE` (`dset` is not an open dataset id, or another thread closed it or
/// its file during the call: earlier rows may have been written); `VH5_ERR_HDF5` (libhdf5
/// failed during a read, e.g. a corrupt chunk or a missing filter plugin; earlier rows may
/// have been written); `VH5_ERR_NO_MEMORY` (a buffer vh5 needed — a whole chunk, its stored
/// bytes, a row's staging buffer — could not be allocated; the message names the chunk or
/// row and the bytes; earlier rows may have been written).
///
/// Memory: a buffer vh5 allocates for a whole chunk is at most env `VH5_MAX_CHUNK_BYTES`
/// (bytes, read once; default 1 GiB; larger chunks are read in pieces with the same
/// results); sizes read from the file are checked before they size a buffer, and a failed
/// allocation is a status, never an abort. How reads are planned: docs/ARCHITECTURE.md.
///
/// Thread-safe (see the module notes); the caller must not access `*dst`'s memory from
/// another thread during the call.
///
/// # Safety
/// `dst` must be NULL or point to a `vh5_array` whose `base` is valid for reads and writes of
/// `base_len` bytes and whose `shape`/`strides` hold `ndim` entries; each non-NULL table must
/// hold `nslices * ndim` values. Nothing is retained after the call.
#[no_mangle]
pub unsafe extern "C" fn vh5_read_many_slices(
    dset: i64,
    dst: *const vh5_array,
    nslices: usize,
    src_start: *const u64,
    dst_start: *const u64,
    count: *const u64,
    src_step: *const u64,
    dst_step: *const u64,
    flags: u32,
) -> vh5_status {
    guard(|| {
        // SAFETY: `dst` as this function's contract says.
        let (base, dtype, layout) = unsafe { array_parts(dst, "dst", false) }?;
        let mut copies = None;
        // SAFETY: the tables as this function's contract says (copied before any write).
        let table = unsafe { table_args(layout.shape.len(), nslices, src_start, dst_start, count, src_step, dst_step, &mut copies) }?;
        // SAFETY: dst's memory as this function's contract says; no table borrows it.
        let mut d = unsafe { dst_array(base, dtype, layout) };
        transfer::read_many_slices(dset, &mut d, &table, flags).map(drop)
    })
}

// The header needs literals (cbindgen); the library's own constants are the definitions.
const _: () = assert!(VH5_MAX_RANK as usize == crate::dtype::MAX_RANK);
const _: () = assert!(VH5_SLICES_CLIP == transfer::SLICES_CLIP && VH5_SLICES_CONVERT == transfer::SLICES_CONVERT && VH5_SLICES_SWAPPED == transfer::SLICES_SWAPPED);
const _: () = assert!(VH5_FILE_READ_WRITE == h5::FILE_READ_WRITE);
