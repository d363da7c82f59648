//! Raw chunk access for the read planner: the dataset's filter pipeline as stored
//! (`H5Pget_filter2` with client data), whether a chunk is allocated and its filter mask
//! (`H5Dget_chunk_info_by_coord`, libhdf5 >= 1.10.5) and its stored bytes (`H5Dread_chunk`,
//! >= 1.10.3), and whether the raw file bytes of an element equal the memory type's
//! (`H5Tequal`) or differ only by byte order.
//!
//! Every function takes the lock by reference: the caller holds it.

use std::ffi::{c_char, c_int, c_uint};

use hdf5_sys::h5d::*;
use hdf5_sys::h5f::{H5Fget_intent, H5F_ACC_RDWR};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;
use hdf5_sys::h5t::H5Tequal;

use super::error::{check, clear_stack};
use super::handle::Handle;
use super::lock::H5Lock;
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

/// The storage facts the planner needs about a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLayout {
    /// Chunk shape in elements; `None` when the dataset is not chunked.
    pub chunk: Option<Vec<u64>>,
    /// Filter pipeline in write order (empty when unfiltered or not chunked).
    pub filters: Vec<FilterSpec>,
}

/// Chunk shape and filter pipeline of the open dataset `dset`.
pub fn chunk_layout(lock: &H5Lock, dset: hid_t) -> Result<ChunkLayout> {
    // SAFETY: valid dataset id (checked by the caller); lock held; buffers sized as passed.
    unsafe {
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        if H5Pget_layout(dcpl.id()) != H5D_layout_t::H5D_CHUNKED {
            return Ok(ChunkLayout { chunk: None, filters: vec![] });
        }
        let mut c = [0u64; super::MAX_RANK];
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
        Ok(ChunkLayout { chunk: Some(c[..n].to_vec()), filters })
    }
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
    /// Stored: `size` bytes after the filters at file address `addr`, `filter_mask` bit i
    /// set = filter i was skipped.
    Stored { size: u64, filter_mask: u32, addr: u64 },
    /// libhdf5 could not tell (e.g. an index type it cannot query): read through `H5Dread`.
    Unknown,
}

/// The state of the chunk whose first element is at dataset coordinates `origin`.
pub fn chunk_state(lock: &H5Lock, dset: hid_t, origin: &[u64]) -> ChunkState {
    let mut mask: c_uint = 0;
    let mut addr: hdf5_sys::h5::haddr_t = 0;
    let mut size: u64 = 0;
    // SAFETY: valid dataset id; `origin` has the dataset's rank; out-pointers are locals.
    let r = unsafe { H5Dget_chunk_info_by_coord(dset, origin.as_ptr(), &mut mask, &mut addr, &mut size) };
    if r < 0 {
        clear_stack(lock);
        return ChunkState::Unknown;
    }
    if addr == hdf5_sys::h5::HADDR_UNDEF || size == 0 {
        return ChunkState::Unallocated;
    }
    ChunkState::Stored { size, filter_mask: mask, addr }
}

/// Read the stored bytes of the chunk at `origin` (size from [`chunk_state`]) into `buf`,
/// resized to `size`. Returns the chunk's filter mask. `Hdf5` error naming the chunk on
/// failure; `NoMemory` when `size` bytes cannot be allocated (the caller checks `size`
/// against the file size first: it is a number read from the file's chunk index).
pub fn read_raw_chunk(lock: &H5Lock, dset: hid_t, origin: &[u64], size: u64, buf: &mut Vec<u8>) -> Result<u32> {
    let size = usize::try_from(size).map_err(|_| err!(NoMemory, "chunk at {origin:?}: stored size {size} bytes does not fit in memory"))?;
    buf.clear();
    crate::slices::alloc::reserve_total(buf, size, || format!("stored bytes of the chunk at dataset offset {origin:?}"))?;
    let mut mask: c_uint = 0;
    // SAFETY: valid dataset id; `origin` has the dataset's rank; `buf` has capacity for the
    // `size` bytes libhdf5 reports for this chunk, which is what H5Dread_chunk writes.
    unsafe {
        check(lock, H5Dread_chunk(dset, H5P_DEFAULT, origin.as_ptr(), &mut mask, buf.as_mut_ptr() as *mut _), format_args!("H5Dread_chunk of the chunk at {origin:?}"))?;
        buf.set_len(size);
    }
    Ok(mask)
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
