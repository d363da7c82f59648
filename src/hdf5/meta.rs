//! Per-dataset facts that never change while a dataset id is open (file datatype and its
//! classification, chunk shape, filter pipeline), cached by id so that a many-slice call of
//! one row costs a few microseconds instead of re-querying libhdf5 (~10 calls).
//!
//! Keyed by the dataset's `hid_t`: libhdf5 1.10 never hands out an id number twice in a
//! process (ids grow monotonically per type), and [`super::dataset::close`] forgets the entry;
//! an id closed behind vh5's back fails the "open dataset" check before the cache is
//! consulted. The extent is NOT cached (datasets can grow). At most [`MAX_ENTRIES`] entries
//! are kept (the cache is emptied beyond that). Every access happens under the libhdf5 lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hdf5_sys::h5i::hid_t;

use super::chunk::{chunk_layout, ChunkLayout};
use super::handle::Handle;
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
}

static CACHE: Mutex<Option<HashMap<hid_t, Arc<DatasetMeta>>>> = Mutex::new(None);

/// The cached facts of the open dataset `dset` (the caller checked it is one), computed on
/// first use.
pub fn dataset_meta(lock: &H5Lock, dset: hid_t) -> Result<Arc<DatasetMeta>> {
    if let Some(m) = CACHE.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|c| c.get(&dset)) {
        return Ok(Arc::clone(m));
    }
    // SAFETY: valid dataset id (checked by the caller); lock held.
    let ftype = Handle::new(lock, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
    let finfo = classify(lock, ftype.id())?;
    let layout = chunk_layout(lock, dset)?;
    let m = Arc::new(DatasetMeta { ftype, finfo, layout });
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

/// Forget what is cached about `id` (called when vh5 closes it).
pub fn forget(id: hid_t) {
    let old = CACHE.lock().unwrap_or_else(|p| p.into_inner()).as_mut().and_then(|c| c.remove(&id));
    drop(old);
}
