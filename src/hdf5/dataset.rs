//! Files and datasets: open by path, close, describe (shape, chunks, dtype, filters, fill
//! value), list. Hyperslab reads are in [`super::hyperslab`] (re-exported here).

use std::ffi::{c_char, c_int, c_uint, CStr, CString};

use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5i::{hid_t, H5I_type_t};
use hdf5_sys::h5l::H5Lexists;
use hdf5_sys::h5o::H5Oopen;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::{H5S_class_t, H5Sget_simple_extent_type};

use super::error::{check, clear_stack, hdf5_error};
use super::handle::{close_id, dataset_name, id_description, id_type, id_type_name, Handle};
use super::hyperslab::space_dims;
use super::lock::H5Lock;
use super::types::TypeInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::names::escape;

pub use super::hyperslab::{HyperslabReader, SpaceCache};
pub use crate::dtype::MAX_RANK;

/// Open flag: open the file for reading and writing (`H5F_ACC_RDWR`). Default: read-only.
pub const FILE_READ_WRITE: u32 = 1;

/// Open an HDF5 file by path. The path is bytes (a Unix file name: UTF-8 not required, no NUL
/// byte); messages show it as [`crate::names::escape`] does. The file is opened with
/// `H5F_CLOSE_WEAK`: closing the file id while datasets opened from it are still open keeps
/// the file open until the last of them is closed.
///
/// Errors: `Io` when the path does not exist or cannot be read, or is not an HDF5 file (e.g. a
/// netCDF classic file); `InvalidArgument` for unknown flag bits or a path with a NUL byte;
/// `Hdf5` when libhdf5 fails to open it (message with the error stack).
pub fn open_file(lock: &H5Lock, path: impl AsRef<[u8]>, flags: u32) -> Result<Handle> {
    use std::os::unix::ffi::OsStrExt;
    let raw = path.as_ref();
    let path = crate::names::escape(raw);
    let known = FILE_READ_WRITE | super::external::FILE_ALLOW_EXTERNAL;
    if flags & !known != 0 {
        bail!(InvalidArgument, "argument `flags`: unknown bits {:#x} (defined: VH5_FILE_READ_WRITE = 1, VH5_FILE_ALLOW_EXTERNAL = 2)", flags & !known);
    }
    let c = CString::new(raw).map_err(|_| err!(InvalidArgument, "argument `path` contains a NUL byte"))?;
    let fs_path = std::path::Path::new(std::ffi::OsStr::from_bytes(raw));
    let meta = std::fs::metadata(fs_path).map_err(|e| err!(Io, "cannot open `{path}`: {e}"))?;
    if meta.is_dir() {
        bail!(Io, "cannot open `{path}`: it is a directory");
    }
    // Read the first bytes ourselves so a permission problem is reported as such.
    std::fs::File::open(fs_path).map_err(|e| err!(Io, "cannot open `{path}`: {e}"))?;
    // SAFETY: valid C string; we hold the lock.
    unsafe {
        let is = super::compat::is_hdf5(c.as_ptr());
        if is <= 0 {
            clear_stack(lock);
            bail!(Io, "`{path}` is not an HDF5 file (no HDF5 superblock signature; netCDF-3 classic files are not HDF5)");
        }
        let fapl = Handle::new(lock, H5Pcreate(*H5P_CLS_FILE_ACCESS), "H5Pcreate(file access)")?;
        check(lock, H5Pset_fclose_degree(fapl.id(), H5F_close_degree_t::H5F_CLOSE_WEAK), "H5Pset_fclose_degree")?;
        let mode = if flags & FILE_READ_WRITE != 0 { H5F_ACC_RDWR } else { H5F_ACC_RDONLY };
        let id = H5Fopen(c.as_ptr(), mode, fapl.id());
        if id < 0 {
            return Err(open_for_write_elsewhere(hdf5_error(lock, ErrorKind::Hdf5, format_args!("libhdf5 could not open `{path}`"))));
        }
        let h = Handle::new(lock, id, "H5Fopen")?;
        if flags & super::external::FILE_ALLOW_EXTERNAL != 0 {
            super::external::allow(h.id());
        }
        Ok(h)
    }
}

/// libhdf5's advice on a file whose superblock marks it open for writing (file format 1.10 and
/// later: a writer, e.g. a SWMR writer, has it open now, or crashed with it open).
const H5CLEAR_ADVICE: &str = " (may use <h5clear file> to clear file consistency flags)";

/// `e` (libhdf5's refusal to open a file) without libhdf5's advice to run h5clear when the
/// file is marked open for writing: on a file being written (a SWMR writer) that would
/// corrupt it. vh5 says what the mark means instead: the file is open for writing
/// elsewhere and vh5 has no SWMR-reader mode.
fn open_for_write_elsewhere(mut e: Error) -> Error {
    if e.message.contains("already open for write") {
        e.message = e.message.replace(H5CLEAR_ADVICE, "");
        e.message.push_str(
            "\nThe file is marked open for writing by another program (for example a writer in SWMR mode): vh5 cannot read a file \
             while it is being written (it has no SWMR-reader mode); read it after the writer has closed it. Only if no program is \
             writing it (a writer crashed) does `h5clear -s FILE` remove the mark.",
        );
    }
    e
}

/// Check that `id` is an open libhdf5 id of one of `kinds`; `InvalidHandle` otherwise.
pub fn expect_kind(lock: &H5Lock, id: hid_t, kinds: &[H5I_type_t], what: &str) -> Result<H5I_type_t> {
    match id_type(lock, id) {
        Some(t) if kinds.contains(&t) => Ok(t),
        Some(t) => {
            let want: Vec<&str> = kinds.iter().map(|&k| id_type_name(k)).collect();
            bail!(InvalidHandle, "{what} {id} is a libhdf5 id of {}, not of {}", id_description(lock, id, t), want.join(" or "))
        }
        None => bail!(InvalidHandle, "{what} {id} is not an open libhdf5 id (closed, never opened, or from another libhdf5 instance such as h5py's)"),
    }
}

/// `e`, the failure of a call on the dataset `dset`, as `InvalidHandle` when `dset` is no
/// longer open: another thread closed it (or its file) during the call, so libhdf5 failed
/// on a stale id ("not a dataset ID"). Other failures are returned as they are.
pub fn closed_during_call(dset: hid_t, e: Error) -> Error {
    if e.kind == ErrorKind::InvalidHandle {
        return e;
    }
    let s = super::error::session();
    if id_type(s.lock(), dset).is_some() {
        return e;
    }
    Error::new(
        ErrorKind::InvalidHandle,
        format!(
            "dataset {dset} was closed during the call (by another thread, or with its file): close a file only after the calls on its datasets \
             have returned; the destination may be partly written (what failed: {})",
            e.message
        ),
    )
}

/// Open the dataset at `name` (a path, possibly through groups: `grp/sub/var` or `/grp/var`)
/// relative to the file or group `loc`. Names are bytes: any bytes but NUL, UTF-8 not
/// required (link names written by other tools may be Latin-1); messages show them as
/// [`crate::names::escape`] does (`a\xe9`).
///
/// Chunked datasets are opened with a chunk cache (`H5Pset_chunk_cache`) of 8 chunks, at
/// least 8 MiB (HDF5 2.0's default; 1.10's is 1 MiB) and at most 64 MiB, with 10007 slots, so
/// that many small reads inside the same chunks read and decompress each chunk once.
///
/// Errors: `InvalidHandle` when `loc` is not an open file or group; `NotFound` when a path
/// component does not exist (naming it); `InvalidArgument` when the object is not a dataset
/// or the name holds a NUL byte;
/// `Hdf5` when libhdf5 cannot read the links or the object (damaged metadata);
/// `Unsupported` when the object is written in a format newer than the linked libhdf5 reads
/// (the link exists but libhdf5 cannot decode its object header: "file `f.h5`, object `x`:
/// written with a newer HDF5 format ...", see [`super::error::newer_format_error`]), and when
/// the path traverses an external link or the dataset's storage is external or virtual,
/// unless `loc` is a file opened with `VH5_FILE_ALLOW_EXTERNAL` (see [`super::external`]).
pub fn open_dataset(lock: &H5Lock, loc: hid_t, name: impl AsRef<[u8]>) -> Result<Handle> {
    let name = name.as_ref();
    expect_kind(lock, loc, &[H5I_type_t::H5I_FILE, H5I_type_t::H5I_GROUP], "file")?;
    let (h, allow_ext) = super::external::with_link_access(
        lock,
        loc,
        || format!("`{}`", escape(name)),
        |lapl, allow_ext| open_dataset_with(lock, loc, name, lapl, allow_ext).map(|h| (h, allow_ext)).map_err(|e| with_file_if_newer_format(lock, loc, e)),
    )?;
    if allow_ext {
        super::external::allow(h.id());
    } else if let Some(what) = super::external::storage_elsewhere(lock, h.id())? {
        return Err(super::external::refusal(&dataset_name(lock, h.id()), &what));
    }
    super::handle::mark_opened_by_vh5(h.id());
    Ok(h)
}

/// `e` with "file `path`, " in front when it is the newer-format error of
/// [`super::error::newer_format_error`] (whose context names only the object).
fn with_file_if_newer_format(lock: &H5Lock, loc: hid_t, mut e: crate::error::Error) -> crate::error::Error {
    if e.kind == ErrorKind::Unsupported && e.message.contains(super::error::NEWER_FORMAT) {
        e.message = format!("file `{}`, {}", file_name(lock, loc), e.message);
    }
    e
}

/// The name of the file holding the object `id` (`H5Fget_name`) as [`escape`] shows it, `?`
/// when libhdf5 cannot say.
pub fn file_name(lock: &H5Lock, id: hid_t) -> String {
    super::handle::file_name_bytes(lock, id).map_or_else(|| "?".into(), |b| escape(&b))
}

/// The components of the path `name` (bytes) that name links: empty ones and `.` left out.
pub(super) fn components(name: &[u8]) -> impl Iterator<Item = &[u8]> {
    name.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".")
}

/// `name` without its trailing slashes.
pub(super) fn trim_slashes(name: &[u8]) -> &[u8] {
    let n = name.iter().rposition(|&c| c != b'/').map_or(0, |i| i + 1);
    &name[..n]
}

/// [`open_dataset`] with the link access list `lapl` (refusing external links unless
/// `allow_ext`).
fn open_dataset_with(lock: &H5Lock, loc: hid_t, name: &[u8], lapl: hid_t, allow_ext: bool) -> Result<Handle> {
    if name.is_empty() {
        bail!(NotFound, "empty dataset name");
    }
    let shown = escape(name);
    let c = CString::new(name).map_err(|_| err!(InvalidArgument, "argument `name` contains a NUL byte"))?;
    // Walk the path so a missing component is named precisely.
    let mut prefix: Vec<u8> = Vec::new();
    if name.starts_with(b"/") {
        prefix.push(b'/');
    }
    for comp in components(name) {
        if !prefix.is_empty() && !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(comp);
        let p = CString::new(prefix.as_slice()).map_err(|_| err!(InvalidArgument, "argument `name` contains a NUL byte"))?;
        // SAFETY: valid C string and loc; lock held.
        let e = unsafe { H5Lexists(loc, p.as_ptr(), lapl) };
        if e < 0 {
            // Not "missing": libhdf5 could not read the group's links (damaged metadata, a
            // component that is not a group).
            return Err(hdf5_error(lock, ErrorKind::Hdf5, format_args!("cannot look up `{}` (opening dataset `{shown}`)", escape(&prefix))));
        }
        if e == 0 {
            clear_stack(lock);
            if prefix == trim_slashes(name) {
                bail!(NotFound, "no dataset `{shown}` in this file");
            }
            bail!(NotFound, "no dataset `{shown}` in this file: `{}` does not exist", escape(&prefix));
        }
    }
    let name = shown.as_str();
    let peek = super::chunk_tree::FileView::open(lock, loc).map(|v| super::layout_peek::peek(lock, &v, loc, &c, lapl)).unwrap_or_default();
    if let Some(why) = peek.damaged_type {
        return Err(super::layout_peek::damaged_type(&file_name(lock, loc), name, &why));
    }
    if let Some(why) = peek.damaged_pipeline {
        return Err(super::layout_peek::damaged_pipeline(&file_name(lock, loc), name, &why));
    }
    if let Some(mapping) = peek.virtual_mapping.filter(|_| !allow_ext) {
        return Err(super::layout_peek::refusal(&file_name(lock, loc), name, &mapping));
    }
    // SAFETY: valid C string; lock held.
    let obj = Handle::new(lock, unsafe { H5Oopen(loc, c.as_ptr(), lapl) }, format_args!("opening `{name}`")).map_err(|mut e| {
        if e.kind == ErrorKind::Unsupported {
            // the newer-format error: "object `x`: written with ..."
            e.message = e.message.replacen(&format!("opening `{name}`"), &format!("object `{name}`"), 1);
        }
        e
    })?;
    match id_type(lock, obj.id()) {
        Some(H5I_type_t::H5I_DATASET) => match chunk_cache_bytes(lock, obj.id())? {
            // libhdf5 1.10's default chunk cache (1 MiB) holds few chunks, which are then read
            // and decompressed again for every row: reopen with a larger cache.
            Some(nbytes) => {
                drop(obj);
                // SAFETY: valid ids and C string; lock held.
                unsafe {
                    let dapl = Handle::new(lock, H5Pcreate(*H5P_CLS_DATASET_ACCESS), "H5Pcreate(dataset access)")?;
                    check(lock, H5Pset_chunk_cache(dapl.id(), CHUNK_CACHE_SLOTS, nbytes, -1.0), "H5Pset_chunk_cache")?;
                    if !allow_ext {
                        // Same refusal of external links as `lapl` (a dataset access list is
                        // also a link access list).
                        let (mut f, mut d): (hdf5_sys::h5l::H5L_elink_traverse_t, *mut std::ffi::c_void) = (None, std::ptr::null_mut());
                        check(lock, H5Pget_elink_cb(lapl, &mut f, &mut d), "H5Pget_elink_cb")?;
                        check(lock, H5Pset_elink_cb(dapl.id(), f, d), "H5Pset_elink_cb")?;
                    }
                    Handle::new(lock, H5Dopen2(loc, c.as_ptr(), dapl.id()), format_args!("opening dataset `{name}`"))
                }
            }
            None => Ok(obj),
        },
        Some(H5I_type_t::H5I_GROUP) => bail!(InvalidArgument, "`{name}` is a group, not a dataset"),
        // an object reached by a path is committed: a named datatype
        Some(H5I_type_t::H5I_DATATYPE) => bail!(InvalidArgument, "`{name}` is a named datatype, not a dataset"),
        Some(t) => bail!(InvalidArgument, "`{name}` is {}, not a dataset", id_type_name(t)),
        None => bail!(InvalidArgument, "`{name}` is not a dataset (libhdf5 gives no object type for it)"),
    }
}

/// Hash-table slots of vh5's chunk cache (a prime, as libhdf5 recommends).
const CHUNK_CACHE_SLOTS: usize = 10_007;
/// Largest chunk cache vh5 asks for, bytes.
const CHUNK_CACHE_MAX: usize = 64 << 20;
/// Smallest chunk cache vh5 asks for, bytes: HDF5 2.0's default (1.10's is 1 MiB / 521 slots).
const CHUNK_CACHE_MIN: usize = 8 << 20;

/// The chunk cache size to open a chunked dataset with: room for 8 chunks, at least 8 MiB and
/// at most 64 MiB; `None` for other layouts.
fn chunk_cache_bytes(lock: &H5Lock, dset: hid_t) -> Result<Option<usize>> {
    // SAFETY: valid dataset id; lock held; buffers of MAX_RANK entries.
    unsafe {
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        if H5Pget_layout(dcpl.id()) != H5D_layout_t::H5D_CHUNKED {
            return Ok(None);
        }
        let mut c = [0u64; MAX_RANK];
        let n = check(lock, H5Pget_chunk(dcpl.id(), MAX_RANK as c_int, c.as_mut_ptr()), "H5Pget_chunk")? as usize;
        let t = Handle::new(lock, H5Dget_type(dset), "H5Dget_type")?;
        let size = hdf5_sys::h5t::H5Tget_size(t.id()) as u128;
        let bytes = c[..n].iter().fold(size, |a, &b| a.saturating_mul(b as u128)).saturating_mul(8);
        Ok(Some(bytes.clamp(CHUNK_CACHE_MIN as u128, CHUNK_CACHE_MAX as u128) as usize))
    }
}

/// Close a file, dataset (or any other libhdf5 id) given out by [`open_file`]/[`open_dataset`].
/// `InvalidHandle` when `id` is not open.
pub fn close(lock: &H5Lock, id: hid_t) -> Result<()> {
    if id_type(lock, id).is_none() {
        bail!(InvalidHandle, "id {id} is not an open libhdf5 id (already closed or never opened)");
    }
    super::meta::forget(id);
    super::external::forget(id);
    if id_type(lock, id) == Some(H5I_type_t::H5I_FILE) {
        // With H5F_CLOSE_WEAK the file stays open while datasets opened from it live: flush
        // a writable file now, so what was written is on disk for other readers (another
        // libhdf5, e.g. h5py's) as soon as the caller closes the file id.
        let mut intent: std::os::raw::c_uint = 0;
        // SAFETY: valid file id under the lock; `intent` is a valid out pointer.
        let writable = unsafe { hdf5_sys::h5f::H5Fget_intent(id, &mut intent) } >= 0 && intent & hdf5_sys::h5f::H5F_ACC_RDWR != 0;
        if writable {
            // SAFETY: as above.
            check(lock, unsafe { hdf5_sys::h5f::H5Fflush(id, hdf5_sys::h5f::H5F_scope_t::H5F_SCOPE_LOCAL) }, format_args!("flushing file id {id} before closing it"))?;
        }
    }
    close_id(lock, id)
}

/// Storage layout of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Contiguous,
    Chunked,
    Compact,
    Virtual,
}

/// Everything vh5 reports about a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetInfo {
    /// Current extent per axis, elements. Empty for a scalar (0-d) dataset.
    pub shape: Vec<u64>,
    /// Maximum extent per axis, elements (`u64::MAX` = unlimited).
    pub maxshape: Vec<u64>,
    pub layout: Layout,
    /// Chunk shape (elements) when chunked.
    pub chunk: Option<Vec<u64>>,
    /// The element type.
    pub dtype: TypeInfo,
    /// Filter pipeline: (filter id, name as stored), in order (1 = deflate, 2 = shuffle,
    /// 3 = fletcher32, 4 = szip, ...).
    pub filters: Vec<(i32, String)>,
    /// Fill value as bytes of the memory type (native order), when the type is supported
    /// and a fill value is defined (libhdf5's default of zeros counts as defined).
    pub fill_value: Option<Vec<u8>>,
    /// True when the fill value was set by the file's writer (not libhdf5's default zeros).
    pub fill_value_user_defined: bool,
    /// True for a null dataspace (`H5S_NULL`, h5py's `Empty`): no elements at all; `shape`
    /// and `maxshape` are then empty, as for a scalar, which has one element.
    pub null_dataspace: bool,
    /// True when the extent may change while the id is open (the file is open read-write or
    /// SWMR in this process, by whoever opened it: `meta::extent_is_fixed`).
    pub extent_may_change: bool,
}

/// The current extent of the dataset `dset` (must be an open dataset id: `InvalidHandle`
/// otherwise): one entry per axis, empty for a scalar or a null dataspace. What
/// [`dataset_info`] reports as `shape`, without the rest (two libhdf5 calls).
pub fn dataset_shape(lock: &H5Lock, dset: hid_t) -> Result<Vec<u64>> {
    Ok(dataset_extent(lock, dset)?.1)
}

/// The dataspace of the dataset `dset` (checked to be an open dataset id: `InvalidHandle`
/// otherwise) with its current and maximum extent: the one reading of the extent behind
/// [`dataset_shape`] and [`dataset_info`].
fn dataset_extent(lock: &H5Lock, dset: hid_t) -> Result<(Handle, Vec<u64>, Vec<u64>)> {
    expect_kind(lock, dset, &[H5I_type_t::H5I_DATASET], "dataset")?;
    // SAFETY: valid dataset id under the lock.
    let space = Handle::new(lock, unsafe { H5Dget_space(dset) }, "H5Dget_space")?;
    let (shape, maxshape) = space_dims(lock, space.id())?;
    Ok((space, shape, maxshape))
}

/// Describe the dataset `dset` (must be an open dataset id: `InvalidHandle` otherwise).
pub fn dataset_info(lock: &H5Lock, dset: hid_t) -> Result<DatasetInfo> {
    let (space, shape, maxshape) = dataset_extent(lock, dset)?;
    // SAFETY: valid ids under the lock; every buffer is sized as libhdf5 requires.
    unsafe {
        let null_dataspace = H5Sget_simple_extent_type(space.id()) == H5S_class_t::H5S_NULL;
        let ftype = Handle::new(lock, H5Dget_type(dset), "H5Dget_type")?;
        let dtype = super::meta::classify_dataset(lock, dset, ftype.id())?;
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let layout = match H5Pget_layout(dcpl.id()) {
            H5D_layout_t::H5D_CHUNKED => Layout::Chunked,
            H5D_layout_t::H5D_COMPACT => Layout::Compact,
            H5D_layout_t::H5D_VIRTUAL => Layout::Virtual,
            _ => Layout::Contiguous,
        };
        let chunk = if layout == Layout::Chunked {
            let mut c = [0u64; MAX_RANK];
            let n = check(lock, H5Pget_chunk(dcpl.id(), MAX_RANK as c_int, c.as_mut_ptr()), "H5Pget_chunk")? as usize;
            Some(c[..n.min(shape.len())].to_vec())
        } else {
            None
        };
        let nf = check(lock, H5Pget_nfilters(dcpl.id()), "H5Pget_nfilters")?;
        let mut filters = Vec::with_capacity(nf as usize);
        for i in 0..nf as c_uint {
            let mut flags: c_uint = 0;
            let mut nelmts: usize = 0;
            let mut name = [0 as c_char; 128];
            let mut config: c_uint = 0;
            let id = H5Pget_filter2(dcpl.id(), i, &mut flags, &mut nelmts, std::ptr::null_mut(), name.len(), name.as_mut_ptr(), &mut config);
            let id = check(lock, id, "H5Pget_filter2")?;
            filters.push((id, CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned()));
        }
        let mut status = H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
        check(lock, H5Pfill_value_defined(dcpl.id(), &mut status), "H5Pfill_value_defined")?;
        let mut fill_value = None;
        if status != H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED && dtype.unsupported.is_none() {
            let mem = super::types::mem_type_of(lock, &dtype, dset)?;
            let mut buf = vec![0u8; dtype.mem_itemsize];
            if H5Pget_fill_value(dcpl.id(), mem.id(), buf.as_mut_ptr() as *mut _) >= 0 {
                fill_value = Some(buf);
            } else {
                clear_stack(lock);
            }
        }
        Ok(DatasetInfo {
            shape,
            maxshape,
            layout,
            chunk,
            dtype,
            filters,
            fill_value,
            fill_value_user_defined: status == H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED,
            null_dataspace,
            extent_may_change: !super::meta::extent_is_fixed(lock, dset),
        })
    }
}

/// One object of [`list_datasets`]: a dataset, or an object libhdf5 could not open (then
/// `error` says why; it may be a group or a dataset).
#[derive(Debug)]
pub struct Listed {
    /// Full path from the root as [`escape`] shows it, e.g. `/grp/var`, `/temp\xe9rature`.
    pub path: String,
    /// The same path as bytes (what [`open_dataset`] takes back).
    pub raw_path: Vec<u8>,
    /// Why libhdf5 could not open the object (`Unsupported` for an object written in a
    /// format newer than the linked libhdf5 reads, `Hdf5` with the error stack otherwise).
    pub error: Option<crate::error::Error>,
}

/// Every dataset reachable by hard links from the root group of `file`, in libhdf5's name
/// order, plus every object there that libhdf5 could not open (it may be a dataset, so it is
/// never left out silently: e.g. a dataset written with a newer HDF5 format than the linked
/// libhdf5 reads). Errors: `InvalidHandle` when `file` is not an open file or group; `Hdf5`
/// (or `Unsupported`, newer format) when the links cannot be walked.
pub fn list_datasets(lock: &H5Lock, file: hid_t) -> Result<Vec<Listed>> {
    use super::compat::{link_type, LinkInfo};
    use hdf5_sys::h5l::H5L_type_t;
    unsafe extern "C" fn cb(_g: hid_t, name: *const c_char, info: *const LinkInfo, data: *mut std::ffi::c_void) -> hdf5_sys::h5::herr_t {
        // SAFETY: libhdf5 passes a valid link info and NUL-terminated name for the callback;
        // `data` is the `Vec<Vec<u8>>` given to H5Lvisit below, alive during it.
        unsafe {
            let out = &mut *(data as *mut Vec<Vec<u8>>);
            if link_type(info) == H5L_type_t::H5L_TYPE_HARD {
                out.push(CStr::from_ptr(name).to_bytes().to_vec());
            }
        }
        0
    }
    expect_kind(lock, file, &[H5I_type_t::H5I_FILE, H5I_type_t::H5I_GROUP], "file")?;
    // Named before any failure: every libhdf5 API call clears the error stack.
    let fname = file_name(lock, file);
    let allow_ext = super::external::allowed(file);
    let mut names: Vec<Vec<u8>> = Vec::new();
    // SAFETY: callback only pushes into `names`; lock held.
    unsafe {
        check(lock, super::compat::visit(file, cb, &mut names as *mut Vec<Vec<u8>> as *mut _), format_args!("listing the objects of `{fname}`"))?;
    }
    names.sort_by(|a, b| crate::names::path_order(a, b));
    // Read once for every object's peek (None: nothing is peeked, libhdf5 opens all).
    let view = super::chunk_tree::FileView::open(lock, file).ok();
    let mut out = Vec::new();
    for n in names {
        let raw_path = [&b"/"[..], &n].concat();
        let path = escape(&raw_path);
        let c = CString::new(n).unwrap_or_default();
        let peek = view.as_ref().map(|v| super::layout_peek::peek(lock, v, file, &c, H5P_DEFAULT)).unwrap_or_default();
        if let Some(why) = peek.damaged_type {
            out.push(Listed { path: path.clone(), raw_path, error: Some(super::layout_peek::damaged_type(&fname, &path, &why)) });
            continue;
        }
        if let Some(why) = peek.damaged_pipeline {
            out.push(Listed { path: path.clone(), raw_path, error: Some(super::layout_peek::damaged_pipeline(&fname, &path, &why)) });
            continue;
        }
        if peek.virtual_mapping.is_some() && !allow_ext {
            out.push(Listed { path, raw_path, error: None }); // a dataset, refused when opened
            continue;
        }
        // SAFETY: valid C string; lock held.
        let o = unsafe { H5Oopen(file, c.as_ptr(), H5P_DEFAULT) };
        if o < 0 {
            let e = hdf5_error(lock, ErrorKind::Hdf5, format_args!("file `{fname}`, object `{path}`"));
            out.push(Listed { path, raw_path, error: Some(e) });
            continue;
        }
        let o = Handle::new(lock, o, "H5Oopen")?;
        if id_type(lock, o.id()) == Some(H5I_type_t::H5I_DATASET) {
            out.push(Listed { path, raw_path, error: None });
        }
    }
    Ok(out)
}

/// The client data values (`cd_values`) of filter number `index` (0-based, pipeline order) of
/// the dataset `dset`, e.g. `[level]` for deflate, `[options_mask, pixels_per_block, ...]`
/// for szip. `InvalidHandle` when `dset` is not an open dataset; `InvalidArgument` when the
/// pipeline has no filter `index`; `Hdf5` when libhdf5 fails.
pub fn filter_params(lock: &H5Lock, dset: hid_t, index: u32) -> Result<Vec<u32>> {
    expect_kind(lock, dset, &[H5I_type_t::H5I_DATASET], "dataset")?;
    // SAFETY: valid ids under the lock; the cd_values buffer holds `nelmts` entries.
    unsafe {
        let dcpl = Handle::new(lock, H5Dget_create_plist(dset), "H5Dget_create_plist")?;
        let nf = check(lock, H5Pget_nfilters(dcpl.id()), "H5Pget_nfilters")?;
        if index as c_int >= nf || index > i32::MAX as u32 {
            bail!(InvalidArgument, "argument `index`: {index}, the dataset has {nf} filters");
        }
        let mut values = vec![0 as c_uint; 64];
        let (mut flags, mut config): (c_uint, c_uint) = (0, 0);
        let mut nelmts: usize = values.len();
        check(lock, H5Pget_filter2(dcpl.id(), index, &mut flags, &mut nelmts, values.as_mut_ptr(), 0, std::ptr::null_mut(), &mut config), "H5Pget_filter2")?;
        if nelmts > values.len() {
            values = vec![0; nelmts];
            check(lock, H5Pget_filter2(dcpl.id(), index, &mut flags, &mut nelmts, values.as_mut_ptr(), 0, std::ptr::null_mut(), &mut config), "H5Pget_filter2")?;
        }
        values.truncate(nelmts);
        Ok(values)
    }
}
