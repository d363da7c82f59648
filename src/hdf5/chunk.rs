//! Raw chunk access for the read planner: the dataset's filter pipeline as stored
//! (`H5Pget_filter2` with client data, scaleoffset parameters checked), whether a chunk is
//! allocated and its stored size (`H5Dget_chunk_storage_size`, an index lookup, libhdf5 >=
//! 1.10.2), its stored bytes and filter mask (`H5Dread_chunk`, >= 1.10.3), and whether the raw file bytes of an element equal the memory type's
//! (`H5Tequal`) or differ only by byte order.
//!
//! Every function takes the lock by reference: the caller holds it.

use std::ffi::{c_char, c_int, c_uint};

use hdf5_sys::h5d::*;
use hdf5_sys::h5f::{H5Fget_intent, H5F_ACC_RDWR};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;
use hdf5_sys::h5t::H5Tequal;
use hdf5_sys::h5z::H5Z_FILTER_SCALEOFFSET;

use super::error::{check, clear_stack};
use super::handle::{dataset_name, Handle};
use super::lock::H5Lock;
use crate::codec::{parse_pipeline, Filter};
use crate::error::Result;

/// One filter of a dataset's pipeline, as stored in its creation property list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSpec {
    /// Filter id (`H5Z_FILTER_*`: 1 deflate, 2 shuffle, 3 fletcher32, 4 szip, 5 nbit,
    /// 6 scaleoffset, > 255 registered plugins).
    pub id: i32,
    /// Filter flags (`H5Z_FLAG_OPTIONAL` = 1).
    pub flags: u32,
    /// Client data values (for shuffle: the element size in bytes).
    pub cd_values: Vec<u32>,
}

/// The dataset's filter pipeline (as libhdf5 reports it) as filters vh5 runs itself, or
/// `None` when some filter is not one vh5 implements (see [`parse_pipeline`], the one parser;
/// an empty pipeline is `Some(vec![])`).
pub fn vh5_pipeline(specs: &[FilterSpec]) -> Option<Vec<Filter>> {
    parse_pipeline(&specs.iter().map(|f| (f.id, f.cd_values.as_slice())).collect::<Vec<_>>())
}

/// Whether vh5 decodes every filter of this non-empty pipeline itself (deflate, shuffle,
/// fletcher32): then every chunk a read touches is decoded by vh5's checked decoder, in every
/// planner mode, and a corrupt chunk is refused the same way everywhere
/// (`transfer::chunked::read_chunked`); libhdf5 decodes the chunks of any other non-empty
/// pipeline (which the chunk guard checks first: [`super::chunk_guard`]).
pub fn vh5_decodes(specs: &[FilterSpec]) -> bool {
    !specs.is_empty() && vh5_pipeline(specs).is_some()
}

/// The storage facts the planner needs about a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLayout {
    /// Chunk shape in elements; `None` when the dataset is not chunked.
    pub chunk: Option<Vec<u64>>,
    /// Filter pipeline in write order (empty when unfiltered or not chunked).
    pub filters: Vec<FilterSpec>,
    /// `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS` is set (`H5Pget_chunk_opts`, HDF5 >= 1.10) and
    /// the pipeline is not empty: libhdf5 stores every partial edge chunk (see
    /// [`ChunkLayout::unfiltered_edge`]) without running the filters, with filter mask 0, and reads such a
    /// chunk without running them whatever its stored mask says.
    pub dont_filter_partial: bool,
    /// Storage never written reads as "nothing" in libhdf5: fill time `H5D_FILL_TIME_NEVER`
    /// (netCDF "no fill" files), or `H5D_FILL_TIME_IFSET` with no fill value defined. Then
    /// `H5Dread` leaves the destination of unallocated chunks (or unallocated contiguous
    /// storage) untouched, and a partial write into a new chunk stores zeros in the rest of
    /// the chunk (`H5D__chunk_lock`). Otherwise unallocated storage reads as the fill value,
    /// and a new chunk starts as the fill value throughout (also outside the extent).
    pub fill_never: bool,
}

/// Whether the chunk whose first element is at `origin` is a partial edge chunk of a
/// dataset of extent `dims` with chunk shape `chunk` (libhdf5's
/// `H5D__chunk_is_partial_edge_chunk`): it reaches past the current extent on some axis.
/// Always against the CURRENT extent: libhdf5 re-filters the old edge chunks that become
/// whole when a dataset grows (`H5D__chunk_update_old_edge_chunks`) and un-filters the ones
/// that become partial when it shrinks (`H5D__chunk_prune_by_extent`).
pub fn is_partial_edge(origin: &[u64], chunk: &[u64], dims: &[u64]) -> bool {
    origin.iter().zip(chunk).zip(dims).any(|((&o, &c), &d)| o.saturating_add(c) > d)
}

impl ChunkLayout {
    /// Whether the chunk at `origin` is stored without filters (see
    /// [`ChunkLayout::dont_filter_partial`]) in a dataset of extent `dims`.
    pub fn unfiltered_edge(&self, origin: &[u64], dims: &[u64]) -> bool {
        match &self.chunk {
            Some(c) if self.dont_filter_partial => is_partial_edge(origin, c, dims),
            _ => false,
        }
    }
}

/// Whether storage never written reads as "nothing" (see [`ChunkLayout::fill_never`]).
///
/// # Safety
/// `dcpl` is a valid dataset creation property list; the lock is held.
unsafe fn fill_never(lock: &H5Lock, dcpl: hid_t) -> Result<bool> {
    let mut time = H5D_fill_time_t::H5D_FILL_TIME_IFSET;
    // SAFETY: valid list, lock held (this function's contract); the out-pointer is a local.
    check(lock, unsafe { H5Pget_fill_time(dcpl, &mut time) }, "H5Pget_fill_time")?;
    let mut status = H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
    // SAFETY: as above.
    check(lock, unsafe { H5Pfill_value_defined(dcpl, &mut status) }, "H5Pfill_value_defined")?;
    Ok(match time {
        H5D_fill_time_t::H5D_FILL_TIME_NEVER => true,
        H5D_fill_time_t::H5D_FILL_TIME_IFSET => status == H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED,
        _ => false,
    })
}

/// Whether `dset` allocates its storage late (`H5D_ALLOC_TIME_LATE`) and not all of it is
/// allocated yet (`H5Dget_space_status`): libhdf5's next `H5Dwrite` of at least one element
/// then allocates every chunk not allocated yet (`H5D__alloc_storage`), and with filters
/// writes the fill value into each of them whatever the fill time, before writing the
/// elements. vh5's chunk-by-chunk writes (`H5Dwrite_chunk`, or `H5Dwrite` of a chunk it
/// merged from what it read before that allocation) would store something else around the
/// rows: the writer makes libhdf5 allocate first (`transfer::write`). Lock held.
pub fn allocation_pending(lock: &H5Lock, dset: hid_t) -> Result<bool> {
    // SAFETY: valid dataset id; lock held; out-pointers are locals.
    unsafe {
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let mut time = H5D_alloc_time_t::H5D_ALLOC_TIME_DEFAULT;
        check(lock, H5Pget_alloc_time(dcpl.id(), &mut time), "H5Pget_alloc_time")?;
        if time != H5D_alloc_time_t::H5D_ALLOC_TIME_LATE {
            return Ok(false);
        }
        let mut status = H5D_space_status_t::H5D_SPACE_STATUS_ERROR;
        check(lock, H5Dget_space_status(dset, &mut status), "H5Dget_space_status")?;
        Ok(status != H5D_space_status_t::H5D_SPACE_STATUS_ALLOCATED)
    }
}

/// The dataset's fill value as one element of `mem_type` (`H5Pget_fill_value`, which
/// converts it), `itemsize` bytes; zeros when none is defined. `Hdf5` error when libhdf5
/// cannot convert it to `mem_type`.
pub fn fill_element(lock: &H5Lock, dset: hid_t, mem_type: hid_t, itemsize: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; itemsize];
    // SAFETY: valid dataset and type ids (checked by the caller); lock held; `buf` holds one
    // element of `mem_type` (`itemsize` is its size).
    unsafe {
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let mut status = H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
        check(lock, H5Pfill_value_defined(dcpl.id(), &mut status), "H5Pfill_value_defined")?;
        if status != H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED {
            check(lock, H5Pget_fill_value(dcpl.id(), mem_type, buf.as_mut_ptr() as *mut _), "H5Pget_fill_value (the dataset's fill value in the memory type)")?;
        }
    }
    Ok(buf)
}

/// Fill `buf` with copies of the element `value` (`buf.len()` a multiple of its size).
pub fn fill_with(buf: &mut [u8], value: &[u8]) {
    if value.iter().all(|&b| b == 0) || value.is_empty() {
        buf.fill(0);
        return;
    }
    for e in buf.chunks_exact_mut(value.len()) {
        e.copy_from_slice(value);
    }
}

/// Size in bytes of one element of the dataset's file datatype (`H5Tget_size`).
pub fn file_type_size(lock: &H5Lock, dset: hid_t) -> Result<u64> {
    // SAFETY: valid dataset id (checked by the caller); lock held.
    unsafe {
        let t = Handle::new(lock, H5Dget_type(dset), "H5Dget_type")?;
        Ok(hdf5_sys::h5t::H5Tget_size(t.id()) as u64)
    }
}

/// Chunk shape and filter pipeline of the open dataset `dset`.
pub fn chunk_layout(lock: &H5Lock, dset: hid_t) -> Result<ChunkLayout> {
    // SAFETY: valid dataset id (checked by the caller); lock held; buffers sized as passed.
    unsafe {
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let fill_never = fill_never(lock, dcpl.id())?;
        if H5Pget_layout(dcpl.id()) != H5D_layout_t::H5D_CHUNKED {
            return Ok(ChunkLayout { chunk: None, filters: vec![], dont_filter_partial: false, fill_never });
        }
        let mut c = [0u64; crate::dtype::MAX_RANK];
        let n = check(lock, H5Pget_chunk(dcpl.id(), c.len() as c_int, c.as_mut_ptr()), "H5Pget_chunk")? as usize;
        let nf = check(lock, H5Pget_nfilters(dcpl.id()), "H5Pget_nfilters")?;
        let mut filters = Vec::with_capacity(nf as usize);
        for i in 0..nf as c_uint {
            let mut flags: c_uint = 0;
            let mut cd = [0 as c_uint; 16];
            let mut ncd: usize = cd.len();
            let mut name = [0 as c_char; 64];
            let mut config: c_uint = 0;
            let id = H5Pget_filter2(dcpl.id(), i, &mut flags, &mut ncd, cd.as_mut_ptr(), name.len(), name.as_mut_ptr(), &mut config);
            let id = check(lock, id, "H5Pget_filter2")?;
            filters.push(FilterSpec { id, flags, cd_values: cd[..ncd.min(cd.len())].to_vec() });
        }
        let mut opts: c_uint = 0;
        check(lock, H5Pget_chunk_opts(dcpl.id(), &mut opts), "H5Pget_chunk_opts")?;
        let dont_filter_partial = opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS != 0 && !filters.is_empty();
        if let Some(so) = filters.iter().find(|f| f.id == H5Z_FILTER_SCALEOFFSET) {
            check_scaleoffset(lock, dset, &c[..n], &so.cd_values)?;
        }
        Ok(ChunkLayout { chunk: Some(c[..n].to_vec()), filters, dont_filter_partial, fill_never })
    }
}

/// The scaleoffset filter's parameters as libhdf5 stores them (`H5Zscaleoffset.c`,
/// `H5Z__set_local_scaleoffset`): [0] scale type (0 float D-scale, 1 float E-scale, 2 int),
/// [1] scale factor, [2] elements per chunk, [3] class (0 integer, 1 float), [4] element size,
/// [5] sign (0 unsigned, 1 signed), [6] byte order (0 little, 1 big), [7] fill value defined
/// (0/1), then the fill value. libhdf5's decoder trusts them (a corrupted element size makes
/// libhdf5 1.10 write far past its buffer), so vh5 checks them against the dataset before
/// any read or write reaches the filter: `Hdf5` naming the dataset and the parameter.
fn check_scaleoffset(lock: &H5Lock, dset: hid_t, chunk: &[u64], cd: &[u32]) -> Result<()> {
    let name = || dataset_name(lock, dset);
    if cd.len() < 8 {
        bail!(Hdf5, "dataset {}: the scaleoffset filter has {} parameters, libhdf5 stores at least 8: the file is corrupted", name(), cd.len());
    }
    // SAFETY: valid dataset id; lock held.
    let (size, class, order) = unsafe {
        let t = Handle::new(lock, H5Dget_type(dset), "H5Dget_type")?;
        (hdf5_sys::h5t::H5Tget_size(t.id()), hdf5_sys::h5t::H5Tget_class(t.id()), hdf5_sys::h5t::H5Tget_order(t.id()))
    };
    use hdf5_sys::h5t::{H5T_class_t, H5T_order_t};
    let want_class = match class {
        H5T_class_t::H5T_INTEGER | H5T_class_t::H5T_ENUM => 0,
        H5T_class_t::H5T_FLOAT => 1,
        _ => u32::MAX,
    };
    let want_order = match order {
        H5T_order_t::H5T_ORDER_BE => 1,
        _ => 0,
    };
    let elems = chunk.iter().try_fold(1u64, |a, &b| a.checked_mul(b)).unwrap_or(u64::MAX);
    let bad = |what: &str, got: u32, want: String| -> Result<()> {
        bail!(Hdf5, "dataset {}: scaleoffset filter parameter {what} is {got} ({got:#x}), the dataset needs {want}: the file is corrupted", name())
    };
    if cd[0] > 2 {
        bad("[0] (scale type)", cd[0], "0, 1 or 2".into())?;
    }
    if u64::from(cd[2]) != elems {
        bad("[2] (elements per chunk)", cd[2], format!("{elems} (the chunk shape {chunk:?})"))?;
    }
    if cd[3] != want_class {
        bad("[3] (type class)", cd[3], format!("{want_class} for its type class {class:?}"))?;
    }
    if cd[4] as usize != size || !matches!(size, 1 | 2 | 4 | 8) {
        bad("[4] (element size)", cd[4], format!("{size} (its element size)"))?;
    }
    if cd[5] > 1 {
        bad("[5] (sign)", cd[5], "0 or 1".into())?;
    }
    if cd[6] != want_order {
        bad("[6] (byte order)", cd[6], format!("{want_order} for its byte order"))?;
    }
    if cd[7] > 1 {
        bad("[7] (fill value defined)", cd[7], "0 or 1".into())?;
    }
    Ok(())
}

/// Whether the file opening `dset` was opened read-write (chunks may then sit modified in
/// libhdf5's chunk cache: see [`flush_dataset`]).
pub fn opened_read_write(lock: &H5Lock, dset: hid_t) -> Result<bool> {
    // SAFETY: valid dataset id; lock held.
    unsafe {
        let f = Handle::new(lock, hdf5_sys::h5i::H5Iget_file_id(dset), "H5Iget_file_id")?;
        let mut intent: c_uint = 0;
        check(lock, H5Fget_intent(f.id(), &mut intent), "H5Fget_intent")?;
        Ok(intent & H5F_ACC_RDWR != 0)
    }
}

/// Size in bytes of the file holding `dset` (`H5Fget_filesize`: the end of the file's
/// allocated space or of the file on disk, whichever is larger).
pub fn file_size(lock: &H5Lock, dset: hid_t) -> Result<u64> {
    // SAFETY: valid dataset id; lock held; the out-pointer is a local.
    unsafe {
        let f = Handle::new(lock, hdf5_sys::h5i::H5Iget_file_id(dset), "H5Iget_file_id")?;
        let mut size: hdf5_sys::h5::hsize_t = 0;
        check(lock, hdf5_sys::h5f::H5Fget_filesize(f.id(), &mut size), "H5Fget_filesize")?;
        Ok(size)
    }
}

/// Write the dataset's cached modified chunks to the file (`H5Dflush`) so raw chunk reads see them.
pub fn flush_dataset(lock: &H5Lock, dset: hid_t) -> Result<()> {
    // SAFETY: valid dataset id; lock held.
    check(lock, unsafe { H5Dflush(dset) }, "H5Dflush").map(|_| ())
}

/// Where a chunk stands in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkState {
    /// Never written: reads give the fill value.
    Unallocated,
    /// Stored: `size` bytes after the filters (the filter mask comes with the bytes, from
    /// [`read_raw_chunk`]).
    Stored { size: u64 },
    /// libhdf5 could not tell (e.g. an index type it cannot query): read through `H5Dread`.
    Unknown,
}

extern "C" {
    // libhdf5 >= 1.10.2 (H5Dpublic.h); not declared by hdf5-sys.
    fn H5Dget_chunk_storage_size(dset_id: hid_t, offset: *const hdf5_sys::h5::hsize_t, chunk_bytes: *mut hdf5_sys::h5::hsize_t) -> hdf5_sys::h5::herr_t;
}

/// What libhdf5 1.10 .. 1.14 report (innermost frame of `H5Dget_chunk_storage_size`'s error
/// stack) for a chunk that was never written; newer versions return size 0 instead.
const NOT_ALLOCATED: &str = "chunk storage is not allocated";

/// The state of the chunk whose first element is at dataset coordinates `origin`.
///
/// `Stored` may also be reported for a chunk of an UNFILTERED dataset that sits only in
/// libhdf5's chunk cache (e.g. after a read of its fill value) and was never written: libhdf5
/// then reports the cached chunk's size. [`read_raw_chunk`] returns `None` for such a chunk.
///
/// Cost: one lookup in the dataset's chunk index (`H5Dget_chunk_storage_size`: a B-tree or
/// array lookup, ~2 us on a 32k-chunk dataset). `H5Dget_chunk_info_by_coord`, which this
/// replaced, iterates over the whole index in libhdf5 1.10 (~1.7 ms per call on the same
/// dataset: quadratic in the number of chunks per read). When the lookup fails for another
/// reason than an unallocated chunk the state is `Unknown` (the chunk is read through
/// `H5Dread`).
pub fn chunk_state(lock: &H5Lock, dset: hid_t, origin: &[u64]) -> ChunkState {
    let mut size: u64 = 0;
    // SAFETY: valid dataset id; `origin` has the dataset's rank; the out-pointer is a local.
    let r = unsafe { H5Dget_chunk_storage_size(dset, origin.as_ptr(), &mut size) };
    if r >= 0 {
        return if size == 0 { ChunkState::Unallocated } else { ChunkState::Stored { size } };
    }
    if super::error::take_stack(lock).contains(NOT_ALLOCATED) {
        return ChunkState::Unallocated;
    }
    // Not `H5Dget_chunk_info_by_coord`: besides scanning the index, it answers for ANOTHER
    // chunk on an extensible-array index whose unlimited axis is not the first (libhdf5 1.10
    // and 2.0), and a buffer sized from its answer overflowed in `H5Dread_chunk`.
    ChunkState::Unknown
}

/// The filter mask of the stored chunk at `origin` (bit i set = filter i was skipped), `None`
/// when libhdf5 cannot tell or the chunk is not stored. A scan of the chunk index in libhdf5
/// 1.10 (`H5Dget_chunk_info_by_coord`), which may even answer for another chunk on an
/// extensible-array index whose unlimited axis is not the first: for rare checks that refuse
/// on doubt only, never to size a buffer; a fetched chunk's mask comes with its bytes
/// ([`read_raw_chunk`]).
pub fn chunk_filter_mask(lock: &H5Lock, dset: hid_t, origin: &[u64]) -> Option<u32> {
    let mut mask: c_uint = 0;
    let mut addr: hdf5_sys::h5::haddr_t = 0;
    let mut size: u64 = 0;
    // SAFETY: valid dataset id; `origin` has the dataset's rank; out-pointers are locals.
    let r = unsafe { H5Dget_chunk_info_by_coord(dset, origin.as_ptr(), &mut mask, &mut addr, &mut size) };
    if r < 0 {
        clear_stack(lock);
        return None;
    }
    (addr != hdf5_sys::h5::HADDR_UNDEF && size > 0).then_some(mask)
}

/// What `H5Dread_chunk` reports (innermost frame) for a chunk with no file address.
const NO_ADDRESS: &str = "chunk address isn't defined";

/// Read the stored bytes of the chunk at `origin` (size from [`chunk_state`]) into `buf`,
/// resized to `size`. Returns the chunk's filter mask, or `None` when the chunk has no file
/// address after all (a never-written chunk that only libhdf5's chunk cache holds: see
/// [`chunk_state`]; read it through `H5Dread` as unallocated). `Hdf5` error naming the chunk
/// on any other failure; `NoMemory` when `size` bytes cannot be allocated (the caller checks
/// `size` against the file size first: it is a number read from the file's chunk index).
pub fn read_raw_chunk(lock: &H5Lock, dset: hid_t, origin: &[u64], size: u64, buf: &mut Vec<u8>) -> Result<Option<u32>> {
    let size = usize::try_from(size).map_err(|_| err!(NoMemory, "chunk at {origin:?}: stored size {size} bytes does not fit in memory"))?;
    buf.clear();
    crate::mem::reserve_total(buf, size, || format!("stored bytes of the chunk at dataset offset {origin:?}"))?;
    let mut mask: c_uint = 0;
    // SAFETY: valid dataset id; `origin` has the dataset's rank; `buf` has capacity for the
    // `size` bytes libhdf5 reports for this chunk, which is what H5Dread_chunk writes.
    let (r, stored) = unsafe { super::compat::read_chunk(dset, origin.as_ptr(), &mut mask, buf.as_mut_ptr(), size) };
    if r < 0 {
        let stack = super::error::take_stack(lock);
        if stack.contains(NO_ADDRESS) {
            return Ok(None);
        }
        return Err(err!(Hdf5, "H5Dread_chunk of the chunk at {origin:?}; libhdf5 error stack:{stack}"));
    }
    if stored != size {
        return Err(err!(Hdf5, "H5Dread_chunk of the chunk at {origin:?}: libhdf5 reports {stored} stored bytes, its chunk index said {size}"));
    }
    // SAFETY: H5Dread_chunk wrote the chunk's `size` stored bytes.
    unsafe { buf.set_len(size) };
    Ok(Some(mask))
}

/// Whether two datatypes are equal (`H5Tequal`): raw file bytes are then memory bytes.
pub fn types_equal(lock: &H5Lock, a: hid_t, b: hid_t) -> bool {
    // SAFETY: valid type ids; lock held.
    let r = unsafe { H5Tequal(a, b) };
    if r < 0 {
        clear_stack(lock);
    }
    r > 0
}

/// Convert `elems` elements in place from `src` to `dst` (`H5Tconvert` with the default
/// transfer properties: what `H5Dread` applies). `buf` holds the `src` elements and must
/// have room for `elems` elements of the larger of both types; `bkg` (zeroed, `elems`
/// elements of `dst`) is libhdf5's background buffer (compound conversions). `Hdf5` error
/// with libhdf5's reason on failure.
pub fn convert(lock: &H5Lock, src: hid_t, dst: hid_t, elems: usize, buf: &mut [u8], bkg: &mut [u8]) -> Result<()> {
    // SAFETY: valid type ids; lock held; `buf` and `bkg` are sized by the caller as above.
    let r = unsafe { hdf5_sys::h5t::H5Tconvert(src, dst, elems, buf.as_mut_ptr() as *mut _, bkg.as_mut_ptr() as *mut _, H5P_DEFAULT) };
    check(lock, r, "H5Tconvert").map(|_| ())
}
