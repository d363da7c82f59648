//! Stored sizes of an unfiltered dataset's chunks as its chunk index records them, for the
//! chunk guard ([`super::chunk_guard`]): libhdf5 before 2.2 reads an unfiltered chunk whose
//! index entry says fewer bytes than a chunk holds into a chunk-sized buffer and hands on
//! the rest as it was, yet reports the chunk's full size to `H5Dget_chunk_storage_size`
//! (`H5D__get_chunk_storage_size` returns the layout's chunk size when the pipeline is empty,
//! 1.10 .. 2.x), so vh5 reads the entries itself:
//!
//! - **libhdf5 1.10** (cfg not `hdf5_1_14`): a lookup per chunk in the file's version-1
//!   B-tree (layout message version 3), through vh5's own reader of the file
//!   ([`super::chunk_btree`]), one node read per level (~5 us); once a dataset's lookups pass
//!   a sixteenth of its chunks (at least `WALK_AFTER`), one walk of the whole tree instead,
//!   keeping the entries of another size (a 1M-chunk whole read in the `rows` planner looked
//!   up every chunk: +5 s). `H5Dchunk_iter` does not exist there and
//!   `H5Dget_chunk_info_by_coord` scans the index on every call.
//! - **libhdf5 >= 1.14** (cfg `hdf5_1_14`): one `H5Dchunk_iter` pass over the dataset's
//!   chunk index, whatever its type, keeping only the entries whose size differs (libhdf5's
//!   `H5Dget_chunk_info_by_coord` scans the index on every call there too: 2 ms for a chunk
//!   near the end of 65,536, libhdf5 2.0). Where `H5Dchunk_iter` names entries by other
//!   chunks' coordinates (see [`super::chunk_index`]: one unlimited axis that is not the
//!   first), a differing entry cannot be placed: every check of the dataset is refused.
//! - **libhdf5 1.12**: nothing read (object addresses are tokens; no `H5Dchunk_iter` in the
//!   bindings): no check.
//!
//! Only for files open read-only (their chunk index cannot change while vh5 uses it).

use std::collections::HashMap;
#[cfg(not(hdf5_1_14))]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(hdf5_1_14))]
use std::sync::{Arc, OnceLock};

use hdf5_sys::h5i::hid_t;

use super::chunk_btree::Fault;
use super::chunk_tree::DatasetFile;
#[cfg(not(hdf5_1_14))]
use super::chunk_tree::Opened;
use super::lock::H5Lock;

/// The stored sizes of one unfiltered dataset's chunks (see the module docs).
pub struct StoredSizes {
    /// Bytes every stored chunk holds (a chunk's elements in the file type).
    want: u64,
    how: How,
}

enum How {
    /// vh5's lookups in the version-1 B-tree (`lookups` so far), then one walk of it
    /// (`walked`: the entries of another size, or why the walk failed: lookups go on).
    #[cfg(not(hdf5_1_14))]
    Btree { file: Arc<Opened>, nchunks: u64, lookups: AtomicU64, walked: OnceLock<std::result::Result<Odd, Fault>> },
    /// The entries of another size than `want`, by the dataset offset of their chunk's first
    /// element; `unplaced`: why such an entry cannot be placed (every check refused).
    #[cfg(hdf5_1_14)]
    Scanned { odd: Odd, unplaced: Option<String> },
}

/// Stored sizes other than a chunk's, by the dataset offset of the chunk's first element.
type Odd = HashMap<Vec<u64>, u64>;

/// Lookups of one dataset's chunks before its whole B-tree is walked, at least (more for a
/// dataset of more than 16 times as many chunks: the walk's cost grows with the tree).
#[cfg(not(hdf5_1_14))]
pub const WALK_AFTER: u64 = 256;

/// What the index says of one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not stored, or stored as a chunk's bytes.
    Sound,
    /// Stored as this many bytes, not a chunk's.
    Odd(u64),
    /// The index holds an entry of another size that cannot be placed on a chunk (why).
    Unplaced(String),
}

impl StoredSizes {
    /// The stored sizes of the unfiltered dataset `dset` (chunk shape `chunk`, `want` bytes
    /// per stored chunk; its file `file`), or `Err(reason)` when vh5 cannot read them (another
    /// file driver or chunk index on 1.10, libhdf5 1.12, a failing libhdf5 call): nothing is
    /// checked then. `nchunks`: the chunks of the dataset's grid (the most entries its index
    /// may hold). Lock held; the file must be open read-only.
    #[cfg(not(hdf5_1_14))]
    pub fn open(lock: &H5Lock, dset: hid_t, file: &DatasetFile, chunk: &[u64], nchunks: u64, want: u64) -> std::result::Result<StoredSizes, String> {
        let file = Arc::clone(file.get(lock, dset)?);
        let tree = file.tree.as_ref().map_err(Clone::clone)?;
        let (n, dims) = (chunk.len(), &tree.dims);
        if tree.dimensionality != n + 1 || dims.len() < n || dims[..n] != *chunk {
            return Err(format!("layout message: {} dimensions, chunk {dims:?}; the dataset has {n} axes, chunk {chunk:?}", tree.dimensionality));
        }
        Ok(StoredSizes { want, how: How::Btree { file, nchunks, lookups: AtomicU64::new(0), walked: OnceLock::new() } })
    }

    /// (libhdf5 >= 1.14: one `H5Dchunk_iter` pass, see the module docs.)
    #[cfg(hdf5_1_14)]
    pub fn open(lock: &H5Lock, dset: hid_t, _file: &DatasetFile, chunk: &[u64], _nchunks: u64, want: u64) -> std::result::Result<StoredSizes, String> {
        let maxdims = max_dims(lock, dset)?;
        let mut odd = HashMap::new();
        let mut first: Option<(Vec<u64>, u64, u64)> = None;
        super::chunk_index::chunk_iter(lock, dset, chunk.len(), &mut |coord, _mask, addr, size| {
            if size != want {
                odd.insert(coord.to_vec(), size);
                first.get_or_insert_with(|| (coord.to_vec(), size, addr));
            }
            Ok(())
        })
        .map_err(|f| f.message().to_string())?;
        let unplaced = match (super::chunk_index::iteration_order_differs(&maxdims), first) {
            (Some(why), Some((coord, size, addr))) => Some(format!(
                "its chunk index holds {} entries of another size than an unfiltered chunk's {want} bytes (one of {size} bytes at file address {addr}, \
                 reported at dataset offset {coord:?}), and libhdf5 does not say which chunks they are ({why})",
                odd.len()
            )),
            _ => None,
        };
        Ok(StoredSizes { want, how: How::Scanned { odd, unplaced } })
    }

    /// Bytes every stored chunk holds.
    pub fn want(&self) -> u64 {
        self.want
    }

    /// Whether every stored chunk is known to hold [`Self::want`] bytes (libhdf5 >= 1.14:
    /// known once open; 1.10: chunks are looked up one by one).
    pub fn all_sound(&self) -> bool {
        match &self.how {
            #[cfg(not(hdf5_1_14))]
            How::Btree { walked, .. } => walked.get().is_some_and(|w| w.as_ref().is_ok_and(|odd| odd.is_empty())),
            #[cfg(hdf5_1_14)]
            How::Scanned { odd, .. } => odd.is_empty(),
        }
    }

    /// What the index says of the chunk whose first element is at `origin`;
    /// `Err(Fault::Declined)` when a B-tree node cannot be read (the chunk is left unchecked),
    /// `Err(Fault::Damaged)` when a key of a node read is damaged (libhdf5 1.10: every key of
    /// every node read is checked, see [`super::chunk_tree`]).
    pub fn verdict(&self, origin: &[u64]) -> std::result::Result<Verdict, Fault> {
        let size = match &self.how {
            #[cfg(not(hdf5_1_14))]
            How::Btree { file, nchunks, lookups, walked } => {
                let due = lookups.fetch_add(1, Ordering::Relaxed) >= WALK_AFTER.max(nchunks / 16);
                let walk = match due {
                    true => Some(walked.get_or_init(|| walk_odd(file, *nchunks, self.want))),
                    false => walked.get(),
                };
                match walk {
                    Some(Err(Fault::Damaged(why))) => return Err(Fault::Damaged(why.clone())),
                    Some(Ok(odd)) => odd.get(origin).copied(),
                    Some(Err(Fault::Declined(_))) | None => {
                        let mut target = origin.to_vec();
                        target.push(0);
                        let tree = file.tree.as_ref().map_err(|why| Fault::Declined(why.clone()))?;
                        file.view.reader().lookup(tree, &target)?.map(|(size, _, _)| u64::from(size))
                    }
                }
            }
            #[cfg(hdf5_1_14)]
            How::Scanned { odd, unplaced } => {
                if let Some(why) = unplaced {
                    return Ok(Verdict::Unplaced(why.clone()));
                }
                odd.get(origin).copied()
            }
        };
        Ok(match size {
            Some(size) if size != self.want => Verdict::Odd(size),
            _ => Verdict::Sound,
        })
    }
}

/// One walk of the dataset's version-1 B-tree (`file`'s, every key checked): its entries of
/// another size than `want`, or why the walk failed (damaged: a key libhdf5 2.x refuses;
/// declined: a node that cannot be read, an entry off the element offset 0, more entries than
/// the grid's `nchunks`).
#[cfg(not(hdf5_1_14))]
fn walk_odd(file: &Opened, nchunks: u64, want: u64) -> std::result::Result<Odd, Fault> {
    let tree = file.tree.as_ref().map_err(|why| Fault::Declined(why.clone()))?;
    let mut odd = Odd::new();
    let mut leaves = 0u64;
    let whole = file.view.reader().walk(tree, nchunks.saturating_mul(2).saturating_add(64), &mut |coord: &[u64], size: u32, _mask: u32, _addr: u64| {
        leaves += 1;
        if leaves > nchunks {
            return Err(Fault::Declined(format!("B-tree: more than the {nchunks} chunks of the grid")));
        }
        let (origin, element) = coord.split_at(tree.dimensionality - 1);
        if element.first().is_some_and(|&e| e != 0) {
            return Err(Fault::Declined(format!("B-tree entry at dataset offset {origin:?}: element offset {element:?} (0 expected)")));
        }
        if u64::from(size) != want {
            odd.insert(origin.to_vec(), u64::from(size));
        }
        Ok(())
    })?;
    if !whole {
        return Err(Fault::Declined("B-tree: more nodes than chunks".into()));
    }
    file.keys_checked();
    Ok(odd)
}

/// The maximal dimensions of `dset`'s dataspace. Lock held.
#[cfg(hdf5_1_14)]
fn max_dims(lock: &H5Lock, dset: hid_t) -> std::result::Result<Vec<u64>, String> {
    // SAFETY: valid dataset id; lock held.
    let space = super::handle::Handle::new(lock, unsafe { hdf5_sys::h5d::H5Dget_space(dset) }, "H5Dget_space").map_err(|x| x.message)?;
    Ok(super::hyperslab::space_dims(lock, space.id()).map_err(|x| x.message)?.1)
}
