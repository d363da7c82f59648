//! Per-dataset facts that never change while a dataset id is open (file datatype and its
//! classification, chunk shape, filter pipeline), cached by id so that a many-slice call of
//! one row costs a few microseconds instead of re-querying libhdf5 (~10 calls).
//!
//! Keyed by the dataset's `hid_t`: libhdf5 1.10 never hands out an id number twice in a
//! process (ids grow monotonically per type), and closing an id through vh5 forgets its entry;
//! an id closed behind vh5's back fails the "open dataset" check before the cache is
//! consulted. The extent (and the dataspaces that carry it) is cached only when it cannot
//! change while the id is open: the file was opened read-only without SWMR
//! ([`DatasetMeta::space_cache`]); otherwise every call asks libhdf5 again. At most [`MAX_ENTRIES`] entries
//! are kept (the cache is emptied beyond that). Every access happens under the libhdf5 lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use hdf5_sys::h5i::hid_t;

use super::chunk::{chunk_layout, ChunkLayout};
use super::chunk_cache::ChunkCache;
use super::chunk_guard::{Checked, CheckedChunks};
use super::chunk_index::IndexSlot;
use super::chunk_tree::DatasetFile;
use super::handle::{dataset_name, Handle};
use super::hyperslab::{space_dims, SpaceCache};
use super::lock::H5Lock;
use super::types::{classify, TypeInfo};
use crate::error::Result;

/// Entries kept before the cache is emptied.
pub const MAX_ENTRIES: usize = 4096;

/// What vh5 caches about an open dataset.
#[derive(Debug)]
pub struct DatasetMeta {
    /// The dataset's file datatype (`H5Dget_type`), kept open.
    pub ftype: Handle,
    /// Its classification.
    pub finfo: TypeInfo,
    /// Chunk shape and filter pipeline.
    pub layout: ChunkLayout,
    /// What the dataset's storage points at outside its file (external raw data, virtual
    /// layout), described; `None` when its data lives in its own file.
    pub elsewhere: Option<String>,
    /// The file's intent is exactly read-only (no `H5F_ACC_RDWR`, no SWMR flag): nothing in
    /// this process can change the dataset's extent while it is open.
    fixed_extent: bool,
    /// Dataspaces kept across calls (when `fixed_extent`), lent to one reader at a time.
    spaces: Mutex<Option<SpaceCache>>,
    /// vh5 opened the dataset id itself ([`super::handle::opened_by_vh5`]); ids handed in by
    /// a caller (h5py's) never get a decoded-chunk cache.
    own: bool,
    /// Chunks vh5 decoded, kept for later calls (when `fixed_extent` and `own`; created by the first
    /// read that uses it, see [`DatasetMeta::chunk_cache`]).
    chunks: OnceLock<ChunkCache>,
    /// The dataset's chunk index (when `fixed_extent`; built by the first read that wants it).
    /// It shares the dataset's [`DatasetFile`] (one file view, one parse of the layout message
    /// per open dataset) with the first-use key check and `guarded`; kept only when
    /// `fixed_extent` and `own` (the only datasets vh5 reads this way after their first use:
    /// no file descriptor is held for the others).
    index: IndexSlot,
    /// Chunks whose headers [`super::chunk_guard::ReadGuard`] found sound, kept for later calls
    /// (when `fixed_extent` and `own`: the stored chunks cannot change in this process).
    guarded: CheckedChunks,
}

impl DatasetMeta {
    /// The dataspace slot to give [`super::hyperslab::HyperslabReader::with_cache`], or `None`
    /// when the dataset's extent may change (file opened read-write or SWMR: `H5Dset_extent`,
    /// `H5Drefresh`), in which case every reader creates fresh dataspaces.
    pub fn space_cache(&self) -> Option<&Mutex<Option<SpaceCache>>> {
        self.fixed_extent.then_some(&self.spaces)
    }

    /// The dataset's decoded-chunk cache ([`ChunkCache`], created with `cap()` bytes on first
    /// use), or `None` when the file may change in this process (its shared open intent,
    /// whoever opened it — vh5 or h5py in the same libhdf5 — is read-write or SWMR) or the
    /// dataset id was not opened by vh5 (an h5py dataset's id: its file may be written
    /// through the same libhdf5 behind vh5's back).
    pub fn chunk_cache(&self, cap: impl FnOnce() -> u64) -> Option<&ChunkCache> {
        (self.fixed_extent && self.own).then(|| self.chunks.get_or_init(|| ChunkCache::new(cap())))
    }

    /// The slot of the dataset's chunk index ([`IndexSlot`]), or `None` when the file may
    /// change in this process (opened read-write or SWMR) or the dataset id was not opened by
    /// vh5 (an h5py dataset's id): then every raw chunk goes through libhdf5 (`H5Dread_chunk`).
    pub fn chunk_index(&self) -> Option<&IndexSlot> {
        (self.fixed_extent && self.own).then_some(&self.index)
    }

    /// The chunks found sound by earlier reads' guards, to share with this read's
    /// [`super::chunk_guard::ReadGuard`]; `None` (every call checks again) when the stored
    /// chunks may change in this process (as for [`DatasetMeta::chunk_index`]).
    pub fn guarded_chunks(&self) -> Option<CheckedChunks> {
        (self.fixed_extent && self.own).then(|| Arc::clone(&self.guarded))
    }
}

/// Whether the file holding `dset` is open read-only without SWMR (its datasets' extents
/// cannot change while open). `H5Fget_intent` reports the intent of the *shared* file: a file
/// vh5 opened read-only that another opener in the same libhdf5 (h5py, when vh5 is bound to
/// its library) holds open for writing answers read-write. Any failure answers `false` (no
/// caching).
pub(crate) fn extent_is_fixed(lock: &H5Lock, dset: hid_t) -> bool {
    use hdf5_sys::h5f::{H5Fget_intent, H5F_ACC_RDWR, H5F_ACC_SWMR_READ, H5F_ACC_SWMR_WRITE};
    // SAFETY: valid dataset id (checked by the caller); lock held; `intent` is a local.
    unsafe {
        let Ok(f) = Handle::new(lock, hdf5_sys::h5i::H5Iget_file_id(dset), "H5Iget_file_id") else {
            super::error::clear_stack(lock);
            return false;
        };
        let mut intent: std::ffi::c_uint = 0;
        if H5Fget_intent(f.id(), &mut intent) < 0 {
            super::error::clear_stack(lock);
            return false;
        }
        intent & (H5F_ACC_RDWR | H5F_ACC_SWMR_READ | H5F_ACC_SWMR_WRITE) == 0
    }
}

/// The cached facts of each open dataset ([`dataset_meta`]). Emptied wholesale when it reaches
/// [`MAX_ENTRIES`] (every entry can be computed again), which is why the native types, which
/// must never be derived twice for an open dataset, live apart in [`NATIVES`].
static CACHE: Mutex<Option<HashMap<hid_t, Arc<DatasetMeta>>>> = Mutex::new(None);

/// The native memory type of each open dataset's file type, derived once per dataset id
/// ([`stable_native`]); forgotten when vh5 closes the id, or by a sweep once the id is no
/// longer valid ([`sweep_closed`]), never while the dataset is open.
static NATIVES: Mutex<Option<HashMap<hid_t, Arc<Handle>>>> = Mutex::new(None);

/// Size of [`NATIVES`] from which the next call sweeps it.
static NEXT_SWEEP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(MAX_ENTRIES);

/// Once `c` holds [`NEXT_SWEEP`] entries: take out those of ids no longer valid (closed
/// behind vh5's back; libhdf5 never reuses an id number) and return them. Entries of open
/// datasets are never dropped (a later call must see the same layout); the next sweep waits
/// until the map has doubled past them. The caller holds the libhdf5 lock.
fn sweep_closed(c: &mut HashMap<hid_t, Arc<Handle>>) -> Vec<Arc<Handle>> {
    use std::sync::atomic::Ordering::Relaxed;
    if c.len() < NEXT_SWEEP.load(Relaxed) {
        return Vec::new();
    }
    // SAFETY: H5Iis_valid accepts any id; the caller holds the lock.
    let gone: Vec<hid_t> = c.keys().copied().filter(|&id| unsafe { hdf5_sys::h5i::H5Iis_valid(id) } <= 0).collect();
    let closed = gone.iter().filter_map(|id| c.remove(id)).collect();
    NEXT_SWEEP.store((2 * c.len()).max(MAX_ENTRIES), Relaxed);
    closed
}

/// [`classify`] for the file type `ftype` of the open dataset `dset`, with the memory item
/// size of [`stable_native`] for opaque types (the size of a native compound depends on its
/// member order through alignment: {i1, i1, i2} is 4 bytes, {i1, i2, i1} 6).
pub fn classify_dataset(lock: &H5Lock, dset: hid_t, ftype: hid_t) -> Result<TypeInfo> {
    let mut info = classify(lock, ftype)?;
    if info.dtype == Some(crate::dtype::Dtype::Opaque) {
        let native = stable_native(lock, dset)?;
        // SAFETY: a valid type id under the lock.
        info.mem_itemsize = unsafe { hdf5_sys::h5t::H5Tget_size(native.id()) };
    }
    Ok(info)
}

/// A copy of the native memory type (`H5Tget_native_type`, see
/// [`super::types::native_of`]) of the open dataset `dset`'s file type, derived the first
/// time it is asked for and the same on every later call for this dataset id.
///
/// Why once: libhdf5 (1.10 through 2.x) sorts the members of the compound types a
/// conversion touches by offset, in place (`H5T__conv_struct_init` / `H5T__conv_struct`,
/// `H5T__sort_value`), and 1.10's `H5Dread` / `H5Dwrite` convert with the dataset's own type
/// object: after the first read or write of a compound whose members are not in offset
/// order, `H5Dget_type` hands out the sorted type, whose native type (members packed in
/// member order) has another layout. Deriving it again would make reads, writes and the
/// layout `vh5_dataset_mem_type` describes disagree (records garbled: one field's bits
/// in another). Every path that moves elements without a conversion asks here.
pub fn stable_native(lock: &H5Lock, dset: hid_t) -> Result<Handle> {
    let cached = NATIVES.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|c| c.get(&dset).cloned());
    let native = match cached {
        Some(n) => n,
        None => {
            // SAFETY: valid dataset id (checked by the caller); lock held.
            let ftype = Handle::new(lock, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
            let n = Arc::new(super::types::native_of(lock, ftype.id())?);
            let closed = {
                let mut g = NATIVES.lock().unwrap_or_else(|p| p.into_inner());
                let c = g.get_or_insert_with(HashMap::new);
                let closed = sweep_closed(c);
                c.insert(dset, Arc::clone(&n));
                closed
            };
            drop(closed); // closes the type ids outside the mutex
            n
        }
    };
    // SAFETY: a valid type id under the lock; the copy is owned by the returned Handle.
    Handle::new(lock, unsafe { hdf5_sys::h5t::H5Tcopy(native.id()) }, "H5Tcopy (native memory type)")
}

/// The cached facts of the open dataset `dset` (the caller checked it is one), computed on
/// first use.
pub fn dataset_meta(lock: &H5Lock, dset: hid_t) -> Result<Arc<DatasetMeta>> {
    if let Some(m) = CACHE.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|c| c.get(&dset)) {
        return Ok(Arc::clone(m));
    }
    // SAFETY: valid dataset id (checked by the caller); lock held.
    let ftype = Handle::new(lock, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
    let finfo = classify_dataset(lock, dset, ftype.id())?;
    let layout = chunk_layout(lock, dset)?;
    let fixed_extent = extent_is_fixed(lock, dset);
    let own = super::handle::opened_by_vh5(dset);
    let file = Arc::new(DatasetFile::default());
    if let Some(chunk) = &layout.chunk {
        check_chunk_dims(lock, dset, chunk)?;
        if let Some(why) = super::chunk_tree::first_use_damage(lock, dset, &file) {
            bail!(
                Hdf5,
                "dataset {}: {why}: the file is corrupted (libhdf5 >= 2.0 refuses it, \"bad coordinate offset\"; libhdf5 {} would read chunks on another grid or \
                 as never written)",
                dataset_name(lock, dset),
                super::version::version_text(lock)
            );
        }
    }
    let elsewhere = super::external::storage_elsewhere(lock, dset)?;
    let file = if fixed_extent && own { file } else { Arc::default() };
    let m = Arc::new(DatasetMeta {
        ftype,
        finfo,
        layout,
        elsewhere,
        fixed_extent,
        own,
        spaces: Mutex::new(None),
        chunks: OnceLock::new(),
        index: IndexSlot::new(Arc::clone(&file)),
        guarded: Arc::new(Mutex::new(Checked::new(file))),
    });
    let old = {
        let mut g = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        let c = g.get_or_insert_with(HashMap::new);
        let old = if c.len() >= MAX_ENTRIES { std::mem::take(c) } else { HashMap::new() };
        c.insert(dset, Arc::clone(&m));
        old
    };
    drop(old); // closes the evicted type ids outside the cache mutex
    Ok(m)
}

/// libhdf5's rule for chunk shapes (`H5D__chunk_construct`, checked when a dataset is
/// created, not when a file is read): every chunk dimension is at least 1 and, on axes of
/// fixed size (maximum dimension not `H5S_UNLIMITED`), at most the maximum dimension. A
/// file breaking it is corrupt (libhdf5 1.10's read path then returns garbage or crashes):
/// `Hdf5` naming the dataset, its file and the axis. Chunks larger than the current extent
/// on extendible axes are legal.
fn check_chunk_dims(lock: &H5Lock, dset: hid_t, chunk: &[u64]) -> Result<()> {
    // SAFETY: valid dataset id (checked by the caller); lock held.
    let space = Handle::new(lock, unsafe { hdf5_sys::h5d::H5Dget_space(dset) }, "H5Dget_space")?;
    let (_, maxdims) = space_dims(lock, space.id())?;
    let n = maxdims.len();
    if chunk.len() != n {
        bail!(Hdf5, "dataset {}: its chunks have {} axes, its dataspace {n}: the file is corrupted", dataset_name(lock, dset), chunk.len());
    }
    for j in 0..n {
        if chunk[j] == 0 {
            bail!(Hdf5, "dataset {}: chunk dimension 0 on axis {j}: the file is corrupted", dataset_name(lock, dset));
        }
        if maxdims[j] != hdf5_sys::h5s::H5S_UNLIMITED && chunk[j] > maxdims[j] {
            bail!(
                Hdf5,
                "dataset {}: chunk dimension {} on axis {j} exceeds the axis's fixed maximum size {} (libhdf5 requires chunk <= maximum dimension on fixed-size axes): the file is corrupted",
                dataset_name(lock, dset),
                chunk[j],
                maxdims[j]
            );
        }
    }
    Ok(())
}

/// Drop the decoded chunks and the chunk index cached for dataset `dset` (vh5 wrote to it).
pub fn clear_chunk_cache(dset: hid_t) {
    let m = CACHE.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|c| c.get(&dset).cloned());
    if let Some(c) = m.as_ref().and_then(|m| m.chunks.get()) {
        c.clear();
    }
    if let Some(m) = &m {
        m.index.clear();
    }
}

/// Forget what is cached about `id` (called when vh5 closes it).
pub fn forget(id: hid_t) {
    let old = CACHE.lock().unwrap_or_else(|p| p.into_inner()).as_mut().and_then(|c| c.remove(&id));
    let native = NATIVES.lock().unwrap_or_else(|p| p.into_inner()).as_mut().and_then(|c| c.remove(&id));
    drop((old, native));
}
