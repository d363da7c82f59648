//! Hyperslab reads of one dataset ([`HyperslabReader`]) with file and memory dataspaces
//! reused across reads, and kept across calls ([`SpaceCache`]) when the dataset's extent
//! cannot change while it is open (the slot lives in the dataset's cached facts,
//! `meta::DatasetMeta::space_cache`).

use std::ffi::c_int;
use std::sync::Mutex;

use hdf5_sys::h5d::{H5Dget_space, H5Dread};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::*;

use super::error::check;
use super::handle::Handle;
use super::lock::H5Lock;
use crate::dtype::MAX_RANK;
use crate::error::Result;

/// Current and maximum extent of a dataspace (`shape`, `maxshape`; both empty for a scalar or
/// null space). `Unsupported` beyond [`MAX_RANK`] axes.
pub fn space_dims(lock: &H5Lock, space: hid_t) -> Result<(Vec<u64>, Vec<u64>)> {
    // SAFETY: valid dataspace id; buffers of MAX_RANK entries.
    unsafe {
        let n = check(lock, H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims")? as usize;
        if n > MAX_RANK {
            bail!(Unsupported, "a dataspace of {n} axes: at most {MAX_RANK} are supported");
        }
        let mut dims = [0u64; MAX_RANK];
        let mut max = [0u64; MAX_RANK];
        if n > 0 {
            check(lock, H5Sget_simple_extent_dims(space, dims.as_mut_ptr(), max.as_mut_ptr()), "H5Sget_simple_extent_dims")?;
        }
        Ok((dims[..n].to_vec(), max[..n].to_vec()))
    }
}

/// The file and memory dataspaces of one dataset, kept across calls by the dataset's cached
/// facts when its extent cannot change while it is open (`meta::DatasetMeta::space_cache`).
/// `shape` is the extent of `file_space`; `mem_extent` the current extent of `mem_space`.
#[derive(Debug)]
pub struct SpaceCache {
    file_space: Handle,
    mem_space: Handle,
    shape: Vec<u64>,
    mem_extent: Vec<u64>,
}

/// A check run before each read of a [`HyperslabReader`] that has one: (lock, the dataset's
/// extent, start, stride, count) of the hyperslab about to be read; an error stops the read.
pub type SelectionCheck<'l> = Box<dyn FnMut(&H5Lock, &[u64], &[u64], Option<&[u64]>, &[u64]) -> Result<()> + 'l>;

/// Reads hyperslabs of one dataset with one memory type, reusing its file and memory
/// dataspaces across reads. Create one per operation, under the lock.
pub struct HyperslabReader<'l> {
    lock: &'l H5Lock,
    dset: hid_t,
    mem_type: hid_t,
    mem_itemsize: usize,
    /// Always `Some` while the reader lives (taken back by `Drop` when it has a `home`).
    spaces: Option<SpaceCache>,
    /// Where the dataspaces are returned on drop (a dataset's cache slot), if anywhere.
    home: Option<&'l Mutex<Option<SpaceCache>>>,
    /// Run before every read ([`HyperslabReader::set_check`]).
    check: Option<SelectionCheck<'l>>,
}

impl<'l> HyperslabReader<'l> {
    /// `mem_type` must stay open for the reader's life; `mem_itemsize` is its size in bytes.
    pub fn new(lock: &'l H5Lock, dset: hid_t, mem_type: hid_t, mem_itemsize: usize) -> Result<Self> {
        let spaces = new_spaces(lock, dset)?;
        Ok(HyperslabReader { lock, dset, mem_type, mem_itemsize, spaces: Some(spaces), home: None, check: None })
    }

    /// Like [`HyperslabReader::new`], but takes the dataspaces from `slot` when it holds
    /// some (created on first use otherwise) and puts them back there when dropped. `slot`
    /// must belong to `dset` and only be given when its extent cannot change (see
    /// `meta::DatasetMeta::space_cache`). A slot already in use (a second reader of
    /// the same dataset in one operation) leaves this reader with dataspaces of its own.
    pub fn with_cache(lock: &'l H5Lock, dset: hid_t, mem_type: hid_t, mem_itemsize: usize, slot: &'l Mutex<Option<SpaceCache>>) -> Result<Self> {
        let cached = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        let spaces = match cached {
            Some(sp) => sp,
            None => new_spaces(lock, dset)?,
        };
        Ok(HyperslabReader { lock, dset, mem_type, mem_itemsize, spaces: Some(spaces), home: Some(slot), check: None })
    }

    fn sp(&self) -> &SpaceCache {
        self.spaces.as_ref().expect("reader dataspaces present until drop")
    }

    /// Read with `mem_type` from now on (a type of the same item size; it must outlive the
    /// reader's use).
    pub fn set_mem_type(&mut self, mem_type: hid_t) {
        self.mem_type = mem_type;
    }

    /// Run `check` before every read from now on (e.g. `chunk_guard::ReadGuard::check`: the
    /// chunks a read reaches, checked before libhdf5 decodes them).
    pub fn set_check(&mut self, check: SelectionCheck<'l>) {
        self.check = Some(check);
    }

    /// Run the check of [`HyperslabReader::set_check`] (if any) on a hyperslab without
    /// reading it: for a write libhdf5 merges into stored chunks itself (it reads them).
    pub fn check_selection(&mut self, start: &[u64], stride: Option<&[u64]>, count: &[u64]) -> Result<()> {
        let l = self.lock;
        let shape = &self.spaces.as_ref().expect("reader dataspaces present until drop").shape;
        match self.check.as_mut() {
            Some(c) => c(l, shape, start, stride, count),
            None => Ok(()),
        }
    }

    /// Current extent of the dataset (empty for a scalar dataset).
    pub fn shape(&self) -> &[u64] {
        &self.sp().shape
    }

    /// Read the hyperslab `start`, `stride` (`None` = all 1), `count` (elements per axis,
    /// all > 0, validated by the caller against [`Self::shape`]) into `buf`, a dense C-order
    /// block of `count` elements of the memory type: `buf.len()` must equal
    /// `prod(count) * mem_itemsize`. For a scalar dataset the slices are empty and one
    /// element is read.
    pub fn read(&mut self, start: &[u64], stride: Option<&[u64]>, count: &[u64], buf: &mut [u8]) -> Result<()> {
        let l = self.lock;
        let (dset, mem_type, mem_itemsize) = (self.dset, self.mem_type, self.mem_itemsize);
        let spc = self.spaces.as_mut().expect("reader dataspaces present until drop");
        let n = spc.shape.len();
        if start.len() != n || count.len() != n || stride.is_some_and(|s| s.len() != n) {
            bail!(InvalidArgument, "internal: hyperslab rank mismatch");
        }
        let elems: u64 = count.iter().product();
        if (elems as u128) * (mem_itemsize as u128) != buf.len() as u128 {
            bail!(BufferTooSmall, "internal: hyperslab buffer of {} bytes for {elems} elements of {} bytes", buf.len(), mem_itemsize);
        }
        if let Some(c) = self.check.as_mut() {
            c(l, &spc.shape, start, stride, count)?;
        }
        // SAFETY: ids are valid; selection arrays have `n` entries; `buf` holds exactly the
        // selected number of elements of the memory type, so H5Dread writes inside it.
        unsafe {
            if n == 0 {
                check(l, H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr() as *mut _), "H5Dread (scalar)")?;
                return Ok(());
            }
            let sp = stride.map_or(std::ptr::null(), |s| s.as_ptr());
            check(l, H5Sselect_hyperslab(spc.file_space.id(), H5S_seloper_t::H5S_SELECT_SET, start.as_ptr(), sp, count.as_ptr(), std::ptr::null()), "H5Sselect_hyperslab (file)")?;
            if spc.mem_extent != count {
                // Forget the extent first: if the call fails the space's extent is unknown.
                spc.mem_extent.clear();
                check(l, H5Sset_extent_simple(spc.mem_space.id(), n as c_int, count.as_ptr(), std::ptr::null()), "H5Sset_extent_simple (memory)")?;
                spc.mem_extent.extend_from_slice(count);
            }
            check(
                l,
                H5Dread(dset, mem_type, spc.mem_space.id(), spc.file_space.id(), H5P_DEFAULT, buf.as_mut_ptr() as *mut _),
                format_args!("H5Dread of hyperslab start {start:?} stride {:?} count {count:?}", stride.unwrap_or(&[])),
            )?;
        }
        Ok(())
    }
}

impl Drop for HyperslabReader<'_> {
    fn drop(&mut self) {
        if let (Some(home), Some(sp)) = (self.home, self.spaces.take()) {
            let mut slot = home.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(sp);
                return;
            }
            drop(slot);
            drop(sp); // another reader returned its dataspaces first: close ours
        }
    }
}

/// Fresh file and memory dataspaces for reading `dset` (`Unsupported` for a null dataspace).
fn new_spaces(lock: &H5Lock, dset: hid_t) -> Result<SpaceCache> {
    let (file_space, mem_space, shape) = row_spaces(lock, dset, "read")?;
    Ok(SpaceCache { file_space, mem_space, shape, mem_extent: vec![1] })
}

/// What a transfer of `dset` row by row starts from: its file dataspace, the extent of that
/// dataspace, and a one-element memory dataspace (scalar for a scalar dataset, else 1-d, to
/// be re-extended per row). `Unsupported` for a null dataspace (h5py.Empty, `H5S_NULL`: no
/// elements at all, not a scalar, which has one; libhdf5 would read or write nothing and
/// report success, losing the rows), the message naming the dataset and what it holds no
/// elements `to` do ("read", "write").
pub(super) fn row_spaces(lock: &H5Lock, dset: hid_t, to: &str) -> Result<(Handle, Handle, Vec<u64>)> {
    // SAFETY: valid dataset id (checked by the caller); lock held.
    unsafe {
        let file_space = Handle::new(lock, H5Dget_space(dset), "H5Dget_space")?;
        if H5Sget_simple_extent_type(file_space.id()) == H5S_class_t::H5S_NULL {
            bail!(Unsupported, "dataset {}: a null dataspace (H5S_NULL, h5py.Empty): it holds no elements to {to}", super::handle::dataset_name(lock, dset));
        }
        let (shape, _) = space_dims(lock, file_space.id())?;
        let one = [1u64];
        let mem_space = if shape.is_empty() {
            Handle::new(lock, H5Screate(H5S_class_t::H5S_SCALAR), "H5Screate(scalar)")?
        } else {
            Handle::new(lock, H5Screate_simple(1, one.as_ptr(), std::ptr::null()), "H5Screate_simple")?
        };
        Ok((file_space, mem_space, shape))
    }
}
