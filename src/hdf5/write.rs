//! Writing hyperslabs: the write-intent check of a dataset's file and a hyperslab writer that
//! reuses its file and memory dataspaces across `H5Dwrite` calls (the write twin of
//! [`super::dataset::HyperslabReader`]).

use std::ffi::{c_int, c_uint};

use hdf5_sys::h5d::H5Dwrite;
use hdf5_sys::h5f::{H5Fget_intent, H5F_ACC_RDWR};
use hdf5_sys::h5i::{hid_t, H5Iget_file_id};
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::*;

use super::error::check;
use super::handle::Handle;
use super::lock::H5Lock;
use crate::error::Result;

/// Whether the file holding object `id` (a dataset) was opened for writing
/// (`H5Fget_intent` includes `H5F_ACC_RDWR`).
pub fn file_is_writable(lock: &H5Lock, id: hid_t) -> Result<bool> {
    // SAFETY: valid object id (checked by the caller); lock held; H5Iget_file_id returns a new
    // reference that the Handle closes.
    unsafe {
        let f = Handle::new(lock, H5Iget_file_id(id), "H5Iget_file_id")?;
        let mut intent: c_uint = 0;
        check(lock, H5Fget_intent(f.id(), &mut intent), "H5Fget_intent")?;
        Ok(intent & H5F_ACC_RDWR != 0)
    }
}

/// Writes hyperslabs of one dataset from buffers of one memory type, reusing its file and
/// memory dataspaces. Create one per operation, under the lock.
pub struct HyperslabWriter<'l> {
    lock: &'l H5Lock,
    dset: hid_t,
    mem_type: hid_t,
    mem_itemsize: usize,
    file_space: Handle,
    mem_space: Handle,
    shape: Vec<u64>,
    mem_extent: Vec<u64>,
}

impl<'l> HyperslabWriter<'l> {
    /// `mem_type` must stay open for the writer's life; `mem_itemsize` is its size in bytes.
    pub fn new(lock: &'l H5Lock, dset: hid_t, mem_type: hid_t, mem_itemsize: usize) -> Result<Self> {
        let (file_space, mem_space, shape) = super::hyperslab::row_spaces(lock, dset, "write")?;
        Ok(HyperslabWriter { lock, dset, mem_type, mem_itemsize, file_space, mem_space, shape, mem_extent: vec![1] })
    }

    /// Current extent of the dataset (empty for a scalar dataset).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Write `buf`, a dense C-order block of `prod(count)` elements of the memory type
    /// (`buf.len()` must equal `prod(count) * mem_itemsize`), to the hyperslab `start`,
    /// `stride` (`None` = all 1), `count` of the dataset (validated by the caller against
    /// [`Self::shape`]; all counts > 0). For a scalar dataset the slices are empty and one
    /// element is written.
    pub fn write(&mut self, start: &[u64], stride: Option<&[u64]>, count: &[u64], buf: &[u8]) -> Result<()> {
        let n = self.shape.len();
        if start.len() != n || count.len() != n || stride.is_some_and(|s| s.len() != n) {
            bail!(InvalidArgument, "internal: hyperslab rank mismatch");
        }
        let elems: u64 = count.iter().product();
        if (elems as u128) * (self.mem_itemsize as u128) != buf.len() as u128 {
            bail!(BufferTooSmall, "internal: hyperslab buffer of {} bytes for {elems} elements of {} bytes", buf.len(), self.mem_itemsize);
        }
        let l = self.lock;
        // SAFETY: ids are valid; selection arrays have `n` entries; `buf` holds exactly the
        // selected number of elements of the memory type, so H5Dwrite reads inside it.
        unsafe {
            if n == 0 {
                check(l, H5Dwrite(self.dset, self.mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_ptr() as *const _), "H5Dwrite (scalar)")?;
                return Ok(());
            }
            let sp = stride.map_or(std::ptr::null(), |s| s.as_ptr());
            check(l, H5Sselect_hyperslab(self.file_space.id(), H5S_seloper_t::H5S_SELECT_SET, start.as_ptr(), sp, count.as_ptr(), std::ptr::null()), "H5Sselect_hyperslab (file)")?;
            if self.mem_extent != count {
                check(l, H5Sset_extent_simple(self.mem_space.id(), n as c_int, count.as_ptr(), std::ptr::null()), "H5Sset_extent_simple (memory)")?;
                self.mem_extent.clear();
                self.mem_extent.extend_from_slice(count);
            }
            check(
                l,
                H5Dwrite(self.dset, self.mem_type, self.mem_space.id(), self.file_space.id(), H5P_DEFAULT, buf.as_ptr() as *const _),
                format_args!("H5Dwrite of hyperslab start {start:?} stride {:?} count {count:?}", stride.unwrap_or(&[])),
            )?;
        }
        Ok(())
    }
}

/// The identity of dataset `dset` in this process, the same through every dataset id and
/// file id opened on it: (libhdf5's number of its file, its object header address or token),
/// see [`super::compat::object_identity`]. The caller holds the lock and checked `dset` is an
/// open dataset. `Hdf5` error when libhdf5 cannot tell.
pub fn dataset_identity(lock: &H5Lock, dset: hid_t) -> Result<(u64, [u8; 16])> {
    // SAFETY: valid dataset id (checked by the caller); lock held.
    match unsafe { super::compat::object_identity(dset) } {
        Some(id) => Ok(id),
        None => Err(super::error::hdf5_error(lock, crate::error::ErrorKind::Hdf5, format_args!("H5Oget_info of dataset {dset}"))),
    }
}

/// Store `data`, the already-filtered bytes of one whole chunk, as the chunk whose first
/// element is at dataset coordinates `origin` (one entry per axis, a multiple of the chunk
/// shape), with `filter_mask` (bit i set = filter i of the pipeline was skipped; 0 = all
/// applied): `H5Dwrite_chunk` (libhdf5 >= 1.10.3), which allocates or reallocates the
/// chunk's file space and evicts any cached copy of the chunk. The caller holds the lock
/// and has checked the dataset is chunked and writable. `Hdf5` error naming the chunk.
pub fn write_raw_chunk(lock: &H5Lock, dset: hid_t, origin: &[u64], filter_mask: u32, data: &[u8]) -> Result<()> {
    if u32::try_from(data.len()).is_err() {
        bail!(Unsupported, "chunk at {origin:?}: {} stored bytes exceed the 4 GiB chunk limit of HDF5 1.10", data.len());
    }
    // SAFETY: valid chunked dataset id (checked by the caller); lock held; `origin` has the
    // dataset's rank; libhdf5 reads exactly `data.len()` bytes from `data`.
    unsafe {
        check(
            lock,
            hdf5_sys::h5d::H5Dwrite_chunk(dset, H5P_DEFAULT, filter_mask, origin.as_ptr(), data.len(), data.as_ptr() as *const _),
            format_args!("H5Dwrite_chunk of the chunk at {origin:?}"),
        )?;
    }
    Ok(())
}
