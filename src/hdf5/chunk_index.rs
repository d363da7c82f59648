//! Per-open-dataset chunk index: chunk -> (file offset, stored size, filter mask), built once
//! in one pass over the file's chunk index, so that the read planner can read the stored bytes
//! of a chunk with a positioned read (`pread`) on a worker thread, outside the libhdf5 lock,
//! instead of two libhdf5 index lookups and a read under it (`H5Dget_chunk_storage_size` +
//! `H5Dread_chunk`, which serialised every fetch of a many-chunk read).
//!
//! **Where it is used** (else the planner keeps libhdf5's `H5Dread_chunk`): the file is open
//! read-only in this process (`H5Fget_intent`: neither `H5F_ACC_RDWR` nor SWMR; libhdf5 shares
//! one file object between opens in a process, so a read-write open elsewhere in the process
//! shows here too), through the default sec2 driver (`H5Pget_driver`: file offsets are then
//! plain offsets of one file), and its chunk index is one vh5 reads ([`build`]).
//!
//! **How it is built** (under the libhdf5 lock), by libhdf5 version:
//!
//! - **libhdf5 >= 1.14** (cfg `hdf5_1_14`, also 2.x): from libhdf5's own entries, in one
//!   `H5Dchunk_iter` pass over the dataset's chunk index, whatever its type (layout version 3:
//!   version-1 B-tree; layout version 4: fixed or extensible array, version-2 B-tree, single
//!   chunk, implicit). libhdf5 hands each allocated chunk's offset in dataset elements on
//!   every axis (its first element's coordinates, since 1.14.0), filter mask, stored size and
//!   file address: absolute since 1.14.4 (libhdf5 PR #4236), relative to the base address
//!   before (vh5 adds the user block's size on those, from `H5get_libversion`). The callback
//!   never unwinds into libhdf5 (`catch_unwind`) and stops the iteration (returns -1) on the
//!   first entry that fails a check. **Not used** for a dataset with exactly one unlimited
//!   axis that is not the first: its layout version 4 index is an extensible array that
//!   libhdf5 (1.14 .. 2.2 at least) iterates in another order than it looks chunks up
//!   (`H5D__earray_idx_iterate_cb` steps coordinates unswizzled, the lookup swizzles), so
//!   `H5Dchunk_iter` reports another chunk's coordinates for an entry; on a sparse dataset
//!   the count and grid checks below can pass (the sampled comparisons caught every such
//!   file tried, but they sample 8 chunks). libhdf5 reads such datasets, as before.
//! - **libhdf5 1.10**: no chunk iteration that is not a scan of the index per call
//!   (`H5Dget_chunk_info(i)` walks the index up to `i`: 0.6 ms for the last of 16,384 chunks,
//!   16 ms for the last of 65,536, so quadratic), so vh5 walks the version-1 B-tree that
//!   indexes chunked datasets of layout message version 3 (what libhdf5 writes unless the
//!   file's lower library bound is 1.10 or later) itself: the dataset's object header
//!   (address from `H5Oget_info`, versions 1 and 2, continuation blocks followed) gives the
//!   layout message and the B-tree's root; every node is read with `pread` from the file
//!   descriptor libhdf5 reads through (`H5Fget_vfd_handle`, duplicated), so it is the very
//!   file libhdf5 has open. Layout version 4 (lower library bound 1.10 or later, h5py's
//!   `libver='latest'`): vh5 reads the fixed array (datasets of fixed maximal dimensions),
//!   single chunk and implicit indexes itself (`super::chunk_v4`, libhdf5 1.10 builds: every metadata block's
//!   lookup3 checksum verified, elements numbered on the grid of the maximal dimensions); the
//!   extensible array and the version-2 B-tree (an unlimited axis) are declined: no index,
//!   libhdf5 reads those (a 1-D float64 dataset of 16,384 unfiltered 16-element chunks read
//!   whole: 20 ms through libhdf5, 1.3 ms with the index, as with layout version 3).
//!   Addresses are relative to the superblock (the user block, `H5Pget_userblock`, is
//!   skipped; libhdf5 makes the superblock's address the base address).
//! - **libhdf5 1.12**: no index (object addresses are tokens; no `H5Dchunk_iter` in the
//!   bindings before 1.14).
//!
//! **Checked against libhdf5 before use**: every entry's coordinates on the chunk grid
//! inside the extent, unique, its bytes non-empty and inside the file; the number of entries
//! equal to `H5Dget_num_chunks`; the stored size (libhdf5's lookup,
//! `H5Dget_chunk_storage_size`), bytes and filter mask of up to [`SAMPLES`] chunks spread
//! over the index (first and last included) equal to what `H5Dread_chunk` returns. vh5's own
//! B-tree walk and layout version 4 reader (1.10) also check every node's or block's
//! signature, type and level (or checksum) and every entry's stored size against libhdf5's lookup (~2 us a chunk, once per open dataset); libhdf5's
//! own iteration needs no such per-entry check. Any difference: no index (libhdf5 reads the
//! dataset, as before: [`Fault::Declined`]). A key libhdf5 2.x refuses (every key of every
//! node the walk reads, see [`super::chunk_tree`]; an entry off the chunk grid from
//! `H5Dchunk_iter`): the read is refused ([`Fault::Damaged`]). A chunk missing from a
//! checked index is unallocated (it reads as the fill value).
//!
//! **Memory**: 32 bytes per allocated chunk, held while the dataset is open (dropped with
//! the dataset's cached facts, `super::meta::forget`) plus one duplicated file descriptor
//! (the dataset's [`DatasetFile`], shared with its other users).
//! **Reads**: [`ChunkIndex::read`] bounds every read by the file's length (a damaged index
//! entry gives `Hdf5` naming the chunk, never a read past the end nor an allocation larger
//! than the file). What another process writing the file meanwhile leaves stale is the same
//! as for the decoded-chunk cache (docs/ARCHITECTURE.md): files open read-only are assumed not
//! to change under vh5.
//!
//! `VH5_CHUNK_INDEX` = `0` (never build one, every raw fetch through `H5Dread_chunk`) / `1`
//! (build and use it where it qualifies, for calls reading at least [`MIN_CHUNKS`] chunks
//! whole) / `always` (tests: for every call reading a chunk whole) / `require` (tests: as `1`,
//! and a dataset that qualifies by file intent but gets no index is an `Hdf5` error giving the
//! reason); unset: [`DEFAULT_MODE`], on. **With libhdf5 >= 1.14** (`H5Dchunk_iter`): cold
//! reads of 16k and 64k chunks, whole or one row per chunk, raw and gzip, layout versions 3
//! and 4, took 0.64x to 1.00x the time without it (median 0.83x; docs/BENCHMARKS.md, session
//! 8), and the conformance suite (3,187 cases, seed 12, h5py-bound 2.x build) gave no
//! divergence with it. **With libhdf5 1.10** (vh5's own B-tree walk; opt-in until session 9,
//! for lack of coverage: the conformance suite's small files reached it in 27 reads of 8,000
//! cases): the conformance suite's `chunks`-planner readers now run with `always`, which
//! reaches it wherever a chunk is read whole; the per-entry size check costs ~2 us a chunk
//! once per open dataset, and even the first call is faster than libhdf5's per-chunk lookups
//! (a whole read of 262,144 raw chunks: 416 ms against 614 ms, later calls 171 against
//! 500 ms; docs/BENCHMARKS.md, session 9).

use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, OnceLock};

use hdf5_sys::h5i::hid_t;

pub use super::chunk_btree::Fault;
use super::chunk_tree::{DatasetFile, Opened};
use super::lock::H5Lock;
use crate::error::Result;
use crate::plan::grid::ChunkGrid;

/// Why an index was not built: [`Fault::Damaged`] (the chunk index is damaged:
/// [`IndexSlot::get`] refuses the read instead of leaving it to libhdf5) or
/// [`Fault::Declined`] (one vh5 cannot use: libhdf5 reads the dataset).
pub type BuildError = Fault;
type Built<T> = std::result::Result<T, BuildError>;

mod build;
pub use build::build;
#[cfg(hdf5_1_14)]
pub(super) use build::{chunk_iter, iteration_order_differs};

/// Chunks whose bytes are compared with libhdf5's `H5Dread_chunk` before an index is used.
pub const SAMPLES: usize = 8;

/// Where a stored chunk's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Absolute offset in the file, bytes.
    pub offset: u64,
    /// Stored (filtered) size, bytes.
    pub size: u64,
    /// Filter mask (bit i set: filter i skipped).
    pub mask: u32,
}

/// The checked index of one open dataset (see the module docs).
#[derive(Debug)]
pub struct ChunkIndex {
    /// (C-order linear index of the chunk on the grid, entry), sorted by linear index.
    entries: Vec<(u64, Entry)>,
    /// The dataset's file (shared with its other users, see [`DatasetFile`]).
    file: Arc<Opened>,
}

/// `VH5_CHUNK_INDEX` (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexMode {
    /// Never an index.
    Off,
    /// An index for calls reading at least [`MIN_CHUNKS`] chunks whole.
    On,
    /// As `On`, for every call that reads a chunk whole (tests: the conformance suite's
    /// `chunks`-planner readers use it, so that small files exercise the index too).
    Always,
    /// As `On`, and a dataset of a read-only file that gets no index is an error (tests).
    Require,
}

/// The mode when `VH5_CHUNK_INDEX` is unset (or another value): `On`, whatever builds the
/// index (libhdf5's `H5Dchunk_iter` on >= 1.14, vh5's B-tree walk on 1.10; 1.12 has neither
/// and reads through libhdf5).
pub const DEFAULT_MODE: IndexMode = IndexMode::On;

/// Calls reading fewer chunks whole than this never build the dataset's chunk index in mode
/// `On` (a small call on a large dataset would pay for walking its whole index).
pub const MIN_CHUNKS: usize = 16;

impl IndexMode {
    /// The spellings `VH5_CHUNK_INDEX` accepts, as named in error messages.
    pub const VALUES: &'static str = "0, off, 1, on, always, require";

    /// The mode a `VH5_CHUNK_INDEX` value names (surrounding blanks ignored), `None` for any
    /// other value ([`crate::transfer::options::check_env`] reports those).
    pub fn parse(v: &str) -> Option<IndexMode> {
        match v.trim() {
            "0" | "off" => Some(IndexMode::Off),
            "1" | "on" => Some(IndexMode::On),
            "always" => Some(IndexMode::Always),
            "require" => Some(IndexMode::Require),
            _ => None,
        }
    }
}

/// The `VH5_CHUNK_INDEX` setting (read once per process, see [`IndexMode::parse`]); unset,
/// empty or invalid values: [`DEFAULT_MODE`] (an invalid one makes every read and write fail
/// first, in `check_env`).
pub fn index_mode() -> IndexMode {
    static M: OnceLock<IndexMode> = OnceLock::new();
    *M.get_or_init(|| std::env::var("VH5_CHUNK_INDEX").ok().as_deref().and_then(IndexMode::parse).unwrap_or(DEFAULT_MODE))
}

/// Whether a call reading `nwhole` chunks whole uses (and on first use builds) the index.
pub fn wanted(nwhole: usize) -> bool {
    match index_mode() {
        IndexMode::Off => false,
        IndexMode::On | IndexMode::Require => nwhole >= MIN_CHUNKS,
        IndexMode::Always => nwhole >= 1,
    }
}

impl ChunkIndex {
    /// The entry of the chunk with C-order linear index `linear`, `None` when it is not
    /// allocated.
    pub fn get(&self, linear: u64) -> Option<Entry> {
        // Every chunk allocated (the common case): entry `linear` is at position `linear`
        // (sorted, unique). Else a binary search (it was 11% of a whole read of 65,536
        // chunks served from the decoded-chunk cache).
        if let Some(&(k, e)) = usize::try_from(linear).ok().and_then(|i| self.entries.get(i)) {
            if k == linear {
                return Some(e);
            }
        }
        self.entries.binary_search_by_key(&linear, |e| e.0).ok().map(|i| self.entries[i].1)
    }

    /// Allocated chunks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no chunk is allocated.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Read the stored bytes of `e` into `buf` (replaced) with one positioned read; no lock
    /// needed. `Hdf5` when the entry reaches past the end of the file or the read fails
    /// (the caller names the chunk); `NoMemory` when the buffer cannot be allocated.
    pub fn read(&self, e: &Entry, buf: &mut Vec<u8>) -> Result<()> {
        self.check(e)?;
        self.read_at(e.offset, e.size, buf)
    }

    /// `Hdf5` when the entry `e` reaches past the end of the file (a damaged index: the
    /// caller names the chunk).
    pub fn check(&self, e: &Entry) -> Result<()> {
        let (end, file_len) = (e.offset.checked_add(e.size), self.file.view.len);
        if end.is_none_or(|end| end > file_len) {
            bail!(Hdf5, "its index entry ({} bytes at file offset {}) reaches past the end of the file ({file_len} bytes): the chunk index is corrupted", e.size, e.offset);
        }
        Ok(())
    }

    /// Read the `len` bytes at file offset `offset` into `buf` (replaced) with one positioned
    /// read; no lock needed. The caller has checked the range inside the file ([`Self::check`]
    /// of every entry it covers); `NoMemory` when the buffer cannot be allocated, `Hdf5`
    /// when the read fails.
    pub fn read_at(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        crate::mem::resize_zeroed(buf, len as usize, || format!("stored bytes of chunks ({len} bytes at file offset {offset})"))?;
        self.file.view.file.read_exact_at(buf, offset).map_err(|err| err!(Hdf5, "reading {len} bytes at file offset {offset}: {err}"))
    }
}

/// The index of one open dataset, built on first use ([`IndexSlot::get`]) and kept until the
/// dataset is closed or [`IndexSlot::clear`]ed (vh5 wrote to it), and the dataset's file as
/// vh5 reads it (shared with the dataset's other users).
#[derive(Debug, Default)]
pub struct IndexSlot {
    built: Mutex<Option<Built<Arc<ChunkIndex>>>>,
    file: Arc<DatasetFile>,
}

impl IndexSlot {
    /// The dataset's index, built now when this is the first use (see [`build`], which also
    /// explains `unfiltered_bytes`); `None`
    /// when it has none (or `VH5_CHUNK_INDEX=0`). With `VH5_CHUNK_INDEX=require`, no index is
    /// an `Hdf5` error giving the reason. Lock held.
    pub fn get(&self, lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, unfiltered_bytes: Option<u64>) -> Result<Option<Arc<ChunkIndex>>> {
        let mode = index_mode();
        if mode == IndexMode::Off {
            return Ok(None);
        }
        let mut g = self.built.lock().unwrap_or_else(|p| p.into_inner());
        let r = g.get_or_insert_with(|| build(lock, dset, &self.file, grid, unfiltered_bytes).map(Arc::new));
        match r {
            Ok(ix) => Ok(Some(Arc::clone(ix))),
            Err(Fault::Damaged(why)) => bail!(Hdf5, "dataset {}: the chunk index is damaged: {why}: vh5 refuses the read", super::handle::dataset_name(lock, dset)),
            Err(Fault::Declined(why)) if mode == IndexMode::Require => {
                bail!(Hdf5, "dataset {}: no chunk index (VH5_CHUNK_INDEX=require): {why}", super::handle::dataset_name(lock, dset))
            }
            Err(Fault::Declined(_)) => Ok(None),
        }
    }

    /// A slot sharing `file` (the dataset's, see [`DatasetFile`]).
    pub fn new(file: Arc<DatasetFile>) -> IndexSlot {
        IndexSlot { built: Mutex::default(), file }
    }

    /// For a read that uses no index (`Hdf5` on the first damaged one): the keys of the chunk
    /// B-tree on the way to each chunk of linear index in `chunks` on `grid`, when its whole
    /// tree was not checked (libhdf5 1.10, see [`super::chunk_tree`]); nothing on other
    /// versions. Lock held.
    pub fn check_keys(&self, lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, chunks: impl Iterator<Item = u64>) -> Result<()> {
        #[cfg(not(hdf5_1_14))]
        if let Ok(o) = self.file.get(lock, dset) {
            let nchunks = grid.nchunks().unwrap_or(u64::MAX);
            for linear in chunks {
                if let Err(Fault::Damaged(why)) = o.check_chunk_keys(&origin_of(grid, linear)[..grid.ndim()], nchunks) {
                    bail!(Hdf5, "dataset {}: the chunk index is damaged: {why}: vh5 refuses the read", super::handle::dataset_name(lock, dset));
                }
            }
        }
        #[cfg(hdf5_1_14)]
        let _ = (lock, dset, grid, chunks);
        Ok(())
    }

    /// Forget the index (it is built again on next use).
    pub fn clear(&self) {
        let old = self.built.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(old);
    }
}

/// The dataset offset of the first element of the chunk with linear index `linear`.
fn origin_of(grid: &ChunkGrid, linear: u64) -> [u64; crate::geometry::MAX_RANK] {
    let mut origin = [0u64; crate::geometry::MAX_RANK];
    grid.linear_origin(linear, &mut origin[..grid.ndim()]);
    origin
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(linears: &[u64]) -> ChunkIndex {
        let entries = linears.iter().map(|&l| (l, Entry { offset: l * 10, size: 10, mask: 0 })).collect();
        let file = Arc::new(Opened::for_tests(std::fs::File::open("/dev/null").expect("/dev/null")));
        ChunkIndex { entries, file }
    }

    #[test]
    fn get_dense_and_sparse() {
        let dense = index(&[0, 1, 2, 3]);
        assert_eq!(dense.get(2).map(|e| e.offset), Some(20));
        assert_eq!(dense.get(4), None);
        // Sparse: position `linear` holds another chunk; the binary search finds the right one.
        let sparse = index(&[1, 2, 5, 9]);
        for (l, want) in [(0, None), (1, Some(10)), (2, Some(20)), (3, None), (5, Some(50)), (8, None), (9, Some(90)), (u64::MAX, None)] {
            assert_eq!(sparse.get(l).map(|e| e.offset), want, "linear {l}");
        }
    }
}
