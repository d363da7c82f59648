//! C ABI of the other two directions of many-slice transfers: `vh5_copy_many_slices` (array ->
//! array in memory) and `vh5_write_many_slices` (array -> HDF5 dataset).
//!
//! Thread safety: as `vh5_read_many_slices` (see the notes of the HDF5 exports): callable from
//! any thread; libhdf5 calls are serialised by vh5's process-wide lock. The caller must not
//! modify (or, for a destination, access) the arrays' memory from another thread during a call.

use super::args::vh5_array;
use super::args::{array_parts, src_array, table_args};
use super::{guard, null_arg, vh5_status};

/// Copy many slices from the array `*src` into the array `*dst`, both in memory (numpy ->
/// numpy).
///
/// Row i (0 <= i < nslices) copies, on every axis j (0 <= j < ndim),
/// `dst[d : d+(c-1)*ds+1 : ds] = src[s : s+(c-1)*ss+1 : ss]` where s = src_start[i*ndim+j]
/// (an index into `*src`), d = dst_start[i*ndim+j] (an index into `*dst`),
/// c = count[i*ndim+j], ss = src_step[i*ndim+j] and ds = dst_step[i*ndim+j] (1 when the
/// table is NULL); all in ELEMENTS. Each table holds `nslices * ndim` uint64 values,
/// row-major (NULL allowed when that product is 0). Snapshot: the tables are copied before
/// anything is written and the call uses only the copy, so tables lying in dst's memory (the
/// same addresses or a second mapping of its pages) change nothing of the call when rows
/// write over them. Rows run in order: where destinations
/// overlap, the later row wins. A row with a count of 0 on some axis copies nothing and is not
/// bounds-checked. `src->ndim` and `dst->ndim` must be equal (0-d arrays: every row copies
/// the single element).
///
/// Same memory: `src` and `dst` may describe the same buffer or overlapping views of it. Each
/// row then behaves as if its source block were first copied to a temporary (memmove
/// semantics, like numpy's `dst[...] = src[...]`): it sees the results of earlier rows.
///
/// `flags`: 0 or `VH5_SLICES_CLIP` (counts silently clipped to both extents, rows clipped to
/// nothing skipped). `VH5_SLICES_CONVERT` is refused: the dtypes (and item sizes) must be
/// equal and bytes are moved unchanged (so two arrays of the same non-native byte order work).
///
/// Every row and both layouts are validated before the first byte is written, so on any
/// error nothing has been written. Returns `VH5_OK` (also for nslices 0 and empty arrays);
/// `VH5_ERR_NULL_ARGUMENT` (src, dst, a required table, a shape, or a base with base_len > 0
/// NULL); `VH5_ERR_INVALID_ARGUMENT` (unknown flag bits or CONVERT; ndim mismatch; step 0,
/// naming row, axis and table; itemsize not the dtype's size; destination strides that do not
/// nest, see `vh5_array.strides`: the message starts with "dst:"); `VH5_ERR_DTYPE` (unknown dtype
/// code, different dtypes or item sizes); `VH5_ERR_UNSUPPORTED` (more than 32 axes);
/// `VH5_ERR_BUFFER_TOO_SMALL` (an array reaching outside `[base, base+base_len)`: the message
/// starts with "src:" or "dst:" and gives the byte offsets); `VH5_ERR_OUT_OF_BOUNDS` (without
/// CLIP, a row reaching outside an extent: the message names row, axis and side).
///
/// The source may have strides under which indices share bytes (e.g. a broadcast array with
/// stride 0): it is only read. Thread-safe; no libhdf5 call is made.
///
/// # Safety
/// `src` and `dst` must be NULL or point to `vh5_array`s whose `shape`/`strides` hold `ndim`
/// entries; `src->base` must be valid for reads of `src->base_len` bytes and `dst->base` for
/// reads and writes of `dst->base_len` bytes for the call. Nothing is retained.
#[no_mangle]
pub unsafe extern "C" fn vh5_copy_many_slices(
    src: *const vh5_array,
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
        // Both arrays are checked for NULL before either is decoded (the order of the statuses).
        for (a, name) in [(src, "src"), (dst, "dst")] {
            if a.is_null() {
                return Err(null_arg(name));
            }
        }
        // SAFETY: `src` and `dst` point to `vh5_array`s (this function's contract).
        let ((sp, sd, sl), (dp, dd, dl)) = unsafe { (array_parts(src, "src", true)?, array_parts(dst, "dst", true)?) };
        let mut copies = None;
        // SAFETY: the tables as this function's contract says (copied before any write).
        let table = unsafe { table_args(dl.shape.len(), nslices, src_start, dst_start, count, src_step, dst_step, &mut copies) }?;
        // SAFETY: the caller's contract on src/dst memory; the core never holds a shared and a
        // mutable borrow of the same bytes at once.
        unsafe { crate::transfer::memcopy::copy_many_slices_raw(sp, &sl, sd, dp, &dl, dd, &table, flags) }.map(drop)
    })
}

/// Copy many slices of the caller's array `*src` into the HDF5 dataset `dset` (numpy ->
/// HDF5). `src_*` tables index the ARRAY `*src`; `dst_*` tables index the DATASET.
///
/// Row i (0 <= i < nslices) writes, on every axis j (0 <= j < ndim),
/// `dataset[d : d+(c-1)*ds+1 : ds] = src[s : s+(c-1)*ss+1 : ss]` where s = src_start[i*ndim+j],
/// d = dst_start[i*ndim+j], c = count[i*ndim+j], ss = src_step[i*ndim+j], ds =
/// dst_step[i*ndim+j] (steps 1 when the table is NULL); all in ELEMENTS. Each table holds
/// `nslices * ndim` uint64 values, row-major (NULL allowed when that product is 0), copied
/// at the start of the call (a snapshot: memory the write changes, such as a mapping of the
/// file, changes nothing of the call). Rows run
/// in order: where destinations overlap, the later row wins. A row with a count of 0 on some
/// axis writes nothing and is not bounds-checked. The dataset must have `src->ndim` axes; a
/// scalar dataset is written with `ndim` 0 and empty tables (the single element).
///
/// The file must have been opened for writing (`vh5_file_open` with `VH5_FILE_READ_WRITE`,
/// or the caller's own `H5Fopen(..., H5F_ACC_RDWR, ...)`). The source array may have any
/// layout (C or Fortran order, sliced, stepped, negative strides, stride 0 broadcasting); it
/// is only read. Elements are written in native byte order with the dataset's native memory
/// type; libhdf5 converts to the file's byte order (e.g. into a big-endian dataset).
///
/// `flags`: `VH5_SLICES_CLIP` (counts silently clipped to the array and dataset extents,
/// rows clipped to nothing skipped), `VH5_SLICES_CONVERT` (let libhdf5 convert from the
/// array's dtype to the dataset's, e.g. float64 -> int16) or 0.
///
/// The file ends up as libhdf5's own `H5Dwrite` of the same rows leaves it, whichever path
/// vh5 takes (chunks assembled and written once per call, filters run by vh5 on worker
/// threads for deflate / shuffle / fletcher32 pipelines: see docs/ARCHITECTURE.md): a new
/// chunk starts as the fill value throughout (also outside the extent of an edge chunk,
/// visible after a resize), or as zeros under fill time never; a stored edge chunk keeps its
/// bytes outside the extent; with `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS` partial edge chunks
/// are stored unfiltered (filter mask 0).
/// Chunks stored under a non-zero filter mask (filters skipped for that chunk:
/// `H5Dwrite_chunk` with a mask, an optional filter that failed) end up stored with every
/// filter applied and mask 0 in the chunk index, which libhdf5's own `H5Dwrite` (and
/// `H5Dwrite_chunk`) do not guarantee: at an unchanged stored size they keep the old mask and
/// the chunk no longer decodes (details: `transfer::masked` in the Rust docs). In a pipeline
/// vh5 does not encode (szip, scaleoffset, nbit, plugins such as Blosc) such a chunk is
/// stored again under its SAME mask, vh5 running only the filters the mask leaves on, when
/// they are all deflate / shuffle / fletcher32, every filter the mask skips is lossless (not
/// scaleoffset of floats, nbit, zfp, ...: libhdf5 would apply those to the rewritten chunk)
/// and the array needs no type conversion (byte order aside): e.g. a Blosc or szip chunk its optional filter could not shrink stays
/// stored raw, not compressed again. Otherwise the call fails with `VH5_ERR_UNSUPPORTED`
/// before anything is written. Chunks stored with mask 0 in a pipeline with an optional
/// filter vh5 does not run (Blosc, szip) are written by libhdf5 and checked afterwards: where
/// that filter failed on the new values and libhdf5 kept a stale mask 0, vh5 records the right
/// mask; a converting write (`VH5_SLICES_CONVERT` with another dtype) reaching such a stored
/// chunk, or a chunk of such a pipeline with more than one row, fails with
/// `VH5_ERR_UNSUPPORTED` before anything is written; so does any write reaching a stored
/// chunk of a pipeline where vh5 cannot recognise a stale mask (LZ4 or scaleoffset then
/// Blosc: skipping Blosc leaves on a filter vh5 does not decode; more than 4 optional
/// filters), and any write into such a pipeline whose late-allocated storage is not allocated
/// yet.
/// Data reaches the file when libhdf5 flushes its caches: at the latest when the dataset and
/// file are closed (`vh5_close`).
///
/// Crash safety (HDF5 1.10 files are not journaled; tested by killing a writer with SIGKILL):
/// the file still opens and its other datasets and attributes read back intact; an
/// uncompressed dataset whose chunks (or contiguous storage) existed before the call holds,
/// element by element, either its old or its new value; a compressed dataset being written
/// may be unreadable afterwards (rewritten chunks move and the chunk index on disk is stale).
///
/// Every row and the array layout are validated before the first write, so on any status
/// except `VH5_ERR_HDF5` nothing has been written. Returns `VH5_OK` (also for nslices 0 and
/// empty arrays or datasets); `VH5_ERR_NULL_ARGUMENT` (src, a required table, shape, or base
/// with base_len > 0 NULL); `VH5_ERR_INVALID_ARGUMENT` (unknown flag bits; the file was
/// opened read-only: the message says "no write intent" and names VH5_FILE_READ_WRITE; ndim
/// of the table/array different from the dataset's; a step of 0, naming row, axis and
/// table; itemsize not the dtype's size); `VH5_ERR_UNSUPPORTED` (more than 32 axes;
/// variable-length, vlen or reference dataset types; a dataset with external or virtual
/// storage not opened through a file with `VH5_FILE_ALLOW_EXTERNAL`; a filter pipeline
/// libhdf5 cannot decode reliably, or one with a filter the linked libhdf5 lacks, e.g. szip
/// in a `static-hdf5` build or h5py's lzf: refused before anything is written, naming the
/// filter, the dataset and the file; a row reaching a chunk stored under a non-zero filter
/// mask in a pipeline vh5 does not encode (szip, scaleoffset, nbit, plugins): refused before
/// anything is written, naming the dataset, the file, the chunk and its mask);
/// `VH5_ERR_BUFFER_TOO_SMALL` (the array
/// reaches outside `[base, base+base_len)`; message starts with "src:");
/// `VH5_ERR_OUT_OF_BOUNDS` (without CLIP, a row reaching outside the array or the dataset:
/// the message names row, axis and side); `VH5_ERR_DTYPE` (unknown dtype code, dtype
/// mismatch without CONVERT, no libhdf5 conversion with it); `VH5_ERR_INVALID_HANDLE`
/// (`dset` is not an open dataset id, or another thread closed it or its file during the
/// call: earlier rows may have been written); `VH5_ERR_HDF5` (libhdf5 failed part-way, e.g. a
/// corrupt chunk that had to be read, a filter failure, a full disk: the message says which
/// rows had been written completely, which in part, and carries libhdf5's error stack);
/// `VH5_ERR_NO_MEMORY` (a chunk-sized or row-sized staging buffer could not be allocated;
/// the message names the chunk or row and the bytes; earlier rows may have been written).
///
/// Thread-safe, also for calls running at once on the same dataset (through one or several
/// dataset ids, file ids or `vh5.File`s of the same file in this process): no call's elements
/// are lost, whichever chunks the calls share. libhdf5 calls are serialised by vh5's lock.
/// Writes through `H5Dwrite` (unfiltered chunked, contiguous and compact datasets, pipelines
/// vh5 does not encode, conversions) hold it for the whole call: they run one at a time.
/// Filtered writes vh5 encodes hold it only while they read and store chunks and encode with
/// it released: calls on different datasets, and on different chunks of one dataset, encode
/// in parallel; a chunk another call stored between this call's read and its store is read
/// and merged again before it is stored (so only elements both calls write take the value
/// of the later store). Calls are not atomic with respect to each other: two calls writing
/// the same elements in several chunks may leave some chunks with one's values, others with
/// the other's. Not coordinated: other processes, another copy of libhdf5 in this process,
/// and libhdf5 writes of the same chunks made without vh5 (its calls from h5py's bound build
/// hold h5py's lock). The caller must not modify `*src`'s memory from another thread during
/// the call.
///
/// # Safety
/// `src` must be NULL or point to a `vh5_array` whose `base` is valid for reads of
/// `base_len` bytes and whose `shape`/`strides` hold `ndim` entries; each non-NULL table must
/// hold `nslices * ndim` values. Nothing is retained after the call.
#[no_mangle]
pub unsafe extern "C" fn vh5_write_many_slices(
    dset: i64,
    src: *const vh5_array,
    nslices: usize,
    src_start: *const u64,
    dst_start: *const u64,
    count: *const u64,
    src_step: *const u64,
    dst_step: *const u64,
    flags: u32,
) -> vh5_status {
    guard(|| {
        // SAFETY: `src` and its memory as this function's contract says.
        let a = unsafe { src_array(src, "src") }?;
        // Copied like every call's tables: the file written may be mapped where they lie.
        let mut copies = None;
        // SAFETY: the tables as this function's contract says.
        let table = unsafe { table_args(a.layout.shape.len(), nslices, src_start, dst_start, count, src_step, dst_step, &mut copies) }?;
        crate::transfer::write_many_slices(dset, &a, &table, flags).map(drop)
    })
}
