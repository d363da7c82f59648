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
//!   file libhdf5 has open. Layout version 4 is not walked: no index, libhdf5 reads those.
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
//! B-tree walk (1.10) also checks every node's signature, type and level and every entry's
//! stored size against libhdf5's lookup (~2 us a chunk, once per open dataset); libhdf5's
//! own iteration needs no such per-entry check. Any difference: no index (libhdf5 reads the
//! dataset, as before). A chunk missing from a checked index is unallocated (it reads as
//! the fill value).
//!
//! **Memory**: 32 bytes per allocated chunk, held while the dataset is open (dropped with
//! the dataset's cached facts, `super::meta::forget`) plus one duplicated file descriptor.
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

use std::ffi::{c_int, c_void};
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, OnceLock};

use hdf5_sys::h5i::hid_t;

use super::handle::Handle;
use super::lock::H5Lock;
use crate::error::Result;
use crate::plan::grid::ChunkGrid;

/// How the reason of a failed build begins when the chunk index is damaged (not merely one
/// vh5 cannot use): [`IndexSlot::get`] refuses the read then instead of leaving it to libhdf5.
const DAMAGED: &str = "the chunk index is damaged: ";

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
    file: File,
    file_len: u64,
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
        let end = e.offset.checked_add(e.size);
        if end.is_none_or(|end| end > self.file_len) {
            bail!(Hdf5, "its index entry ({} bytes at file offset {}) reaches past the end of the file ({} bytes): the chunk index is corrupted", e.size, e.offset, self.file_len);
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
        self.file.read_exact_at(buf, offset).map_err(|err| err!(Hdf5, "reading {len} bytes at file offset {offset}: {err}"))
    }
}

/// The index of one open dataset, built on first use ([`IndexSlot::get`]) and kept until the
/// dataset is closed or [`IndexSlot::clear`]ed (vh5 wrote to it).
#[derive(Debug, Default)]
pub struct IndexSlot(Mutex<Option<std::result::Result<Arc<ChunkIndex>, String>>>);

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
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let r = g.get_or_insert_with(|| build(lock, dset, grid, unfiltered_bytes).map(Arc::new));
        match r {
            Ok(ix) => Ok(Some(Arc::clone(ix))),
            Err(why) if why.starts_with(DAMAGED) => bail!(Hdf5, "dataset {}: {why}: vh5 refuses the read", super::handle::dataset_name(lock, dset)),
            Err(why) if mode == IndexMode::Require => bail!(Hdf5, "dataset {}: no chunk index (VH5_CHUNK_INDEX=require): {why}", super::handle::dataset_name(lock, dset)),
            Err(_) => Ok(None),
        }
    }

    /// Forget the index (it is built again on next use).
    pub fn clear(&self) {
        let old = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(old);
    }
}

/// Build and check the index of the chunked dataset `dset` of grid `grid` (see the module
/// docs); `Err(reason)` when it cannot be used (the caller then reads through libhdf5).
/// `unfiltered_bytes`: for a dataset without filters, its chunks' size in the file type
/// (every entry must store exactly that). The caller holds the lock and checked the file is
/// open read-only without SWMR.
pub fn build(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, unfiltered_bytes: Option<u64>) -> std::result::Result<ChunkIndex, String> {
    let view = FileView::open(lock, dset)?;
    #[cfg(hdf5_1_14)]
    let entries = iterate(lock, dset, grid, &view)?;
    #[cfg(not(hdf5_1_14))]
    let entries = walk(lock, dset, grid, &view)?;
    let idx = ChunkIndex { entries, file: view.file, file_len: view.len };
    if let Some(want) = unfiltered_bytes {
        check_unfiltered_sizes(grid, &idx, want)?;
    }
    // The B-tree walk is vh5's own reading of the file format: every entry's stored size is
    // checked against libhdf5's; libhdf5's own iteration needs only the sampled checks.
    #[cfg(not(hdf5_1_14))]
    verify_sizes(lock, dset, grid, &idx)?;
    verify_samples(lock, dset, grid, &idx)?;
    Ok(idx)
}

/// What vh5 needs to read an open file's bytes itself, gathered once per use from libhdf5:
/// the file descriptor libhdf5 reads through (duplicated: it stays valid after the lock is
/// released), the file's length, the base address (the superblock's offset, i.e. the user
/// block's size) and the sizes of addresses and lengths. Only for the default sec2 driver.
pub(super) struct FileView {
    pub file: File,
    pub len: u64,
    pub base: u64,
    /// Size of file addresses / lengths (`H5Pget_sizes`): 2, 4 or 8 bytes.
    pub sa: usize,
    pub ss: usize,
}

impl FileView {
    /// The view of the file holding `id` (any id in the file). One `H5Iget_file_id`, one
    /// access and one creation property list: `Err(reason)` for other drivers than sec2, a
    /// failing call (its error stack cleared) or no superblock signature at the user block's
    /// end. The caller holds the lock.
    pub fn open(lock: &H5Lock, id: hid_t) -> std::result::Result<FileView, String> {
        use hdf5_sys::h5f::{H5Fget_access_plist, H5Fget_create_plist, H5Fget_vfd_handle};
        use hdf5_sys::h5p::{H5Pget_driver, H5Pget_sizes, H5Pget_userblock};
        let failed = |what: &str| {
            super::error::clear_stack(lock);
            format!("{what} failed")
        };
        // SAFETY: valid id; lock held; out-pointers are locals.
        unsafe {
            let f = Handle::new(lock, hdf5_sys::h5i::H5Iget_file_id(id), "H5Iget_file_id").map_err(|x| x.message)?;
            let fapl = Handle::new(lock, H5Fget_access_plist(f.id()), "H5Fget_access_plist").map_err(|x| x.message)?;
            if H5Pget_driver(fapl.id()) != super::compat::sec2_driver_id() {
                super::error::clear_stack(lock);
                return Err("the file is not open through the default sec2 driver".into());
            }
            let mut handle: *mut c_void = std::ptr::null_mut();
            if H5Fget_vfd_handle(f.id(), fapl.id(), &mut handle) < 0 || handle.is_null() {
                return Err(failed("H5Fget_vfd_handle"));
            }
            let fcpl = Handle::new(lock, H5Fget_create_plist(f.id()), "H5Fget_create_plist").map_err(|x| x.message)?;
            let (mut base, mut sa, mut ss) = (0u64, 0usize, 0usize);
            if H5Pget_userblock(fcpl.id(), &mut base) < 0 {
                return Err(failed("H5Pget_userblock"));
            }
            if H5Pget_sizes(fcpl.id(), &mut sa, &mut ss) < 0 {
                return Err(failed("H5Pget_sizes"));
            }
            if !matches!(sa, 2 | 4 | 8) || !matches!(ss, 2 | 4 | 8) {
                return Err(format!("address size {sa} / length size {ss} bytes"));
            }
            let fd = *(handle as *const c_int);
            let dup = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
            if dup < 0 {
                return Err(format!("duplicating libhdf5's file descriptor: {}", std::io::Error::last_os_error()));
            }
            let file = File::from(OwnedFd::from_raw_fd(dup));
            let len = file.metadata().map_err(|x| format!("fstat: {x}"))?.len();
            let mut sig = [0u8; 8];
            if base.checked_add(8).is_none_or(|x| x > len) || file.read_exact_at(&mut sig, base).is_err() || &sig != b"\x89HDF\r\n\x1a\n" {
                return Err(format!("no superblock signature at the user block's end (offset {base})"));
            }
            Ok(FileView { file, len, base, sa, ss })
        }
    }

    /// Positioned reads of this file (addresses relative to the base address).
    pub fn reader(&self) -> super::chunk_btree::Reader<'_> {
        super::chunk_btree::Reader { file: &self.file, file_len: self.len, base: self.base, sa: self.sa, ss: self.ss }
    }
}

/// The entries of `dset`'s chunk index from vh5's own walk of its version-1 B-tree, sorted
/// by linear index.
#[cfg(not(hdf5_1_14))]
fn walk(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, view: &FileView) -> std::result::Result<Vec<(u64, Entry)>, String> {
    let oh = object_header_address(lock, dset)?;
    let r = view.reader();
    let (base, file_len) = (view.base, view.len);
    let (root, dimensionality, chunk_dims) = r.layout(oh)?;
    let n = grid.ndim();
    if dimensionality != n + 1 || chunk_dims.len() < n || chunk_dims[..n] != *grid.chunk() {
        return Err(format!("layout message: {dimensionality} dimensions, chunk {chunk_dims:?}; the dataset has {n} axes, chunk {:?}", grid.chunk()));
    }
    let (limit, _) = expected_chunks(lock, dset)?;
    let mut out = Vec::with_capacity(capacity(grid, limit));
    r.btree(root, dimensionality, limit, &mut |coord: &[u64], size: u32, mask: u32, addr: u64| {
        if coord[n] != 0 {
            // (libhdf5 2.x refuses an element offset that is no multiple of the element size)
            let damaged = chunk_dims.get(n).is_some_and(|&d| d > 0 && coord[n] % d != 0);
            return Err(format!("{}B-tree entry at dataset offset {:?}: element offset {} (0 expected)", if damaged { DAMAGED } else { "" }, &coord[..n], coord[n]));
        }
        out.push(check_entry(grid, &coord[..n], u64::from(size), mask, base.checked_add(addr), file_len, "B-tree")?);
        Ok(())
    })?;
    finish(out, limit, "B-tree")
}

/// Room for the entries of a chunk index: libhdf5's count, never more than the grid's chunks.
fn capacity(grid: &ChunkGrid, limit: u64) -> usize {
    usize::try_from(limit.min(grid.nchunks().unwrap_or(0))).unwrap_or(0)
}

/// One entry of a chunk index, checked: `coord` (the dataset offset of the chunk's first
/// element) a chunk origin inside the extent, `size` bytes at absolute file offset `offset`
/// (`None`: the address overflowed) non-empty and inside the file. `what` names the source.
fn check_entry(grid: &ChunkGrid, coord: &[u64], size: u64, mask: u32, offset: Option<u64>, file_len: u64, what: &str) -> std::result::Result<(u64, Entry), String> {
    let n = grid.ndim();
    let mut q = [0u64; crate::geometry::MAX_RANK];
    for j in 0..n {
        let c = grid.chunk()[j];
        if c != 0 && coord[j] % c != 0 {
            // What libhdf5 2.x refuses ("bad coordinate offset", H5D__btree_decode_key) and
            // 1.10 reads past: the chunk the key was written for reads as never written.
            return Err(format!(
                "{DAMAGED}{what} entry at dataset offset {coord:?}, not a multiple of the chunk shape {:?} on axis {j} (libhdf5 2.x refuses such a key: \
                 'bad coordinate offset'; 1.10 would read its chunk as never written, the fill value)",
                grid.chunk()
            ));
        }
        if c == 0 || coord[j] >= grid.shape()[j] {
            return Err(format!("{what} entry at dataset offset {coord:?}: not a chunk origin inside the extent {:?}", grid.shape()));
        }
        q[j] = coord[j] / c;
    }
    let offset = offset.filter(|&o| o.checked_add(size).is_some_and(|end| end <= file_len) && size > 0);
    let Some(offset) = offset else {
        return Err(format!("{what} entry at dataset offset {coord:?}: {size} bytes at an address outside the file ({file_len} bytes)"));
    };
    Ok((grid.linear_index(&q[..n]), Entry { offset, size, mask }))
}

/// Sort checked entries by linear index; `Err` on two entries for one chunk or a count other
/// than libhdf5's (`limit`, `H5Dget_num_chunks`).
fn finish(mut out: Vec<(u64, Entry)>, limit: u64, what: &str) -> std::result::Result<Vec<(u64, Entry)>, String> {
    out.sort_unstable_by_key(|e| e.0);
    if out.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(format!("two {what} entries for one chunk"));
    }
    if out.len() as u64 != limit {
        return Err(format!("{} {what} entries, libhdf5 counts {limit} chunks", out.len()));
    }
    Ok(out)
}

/// The entries of `dset`'s chunk index from libhdf5's own iteration (`H5Dchunk_iter`, one
/// pass over any chunk index type), sorted by linear index.
#[cfg(hdf5_1_14)]
fn iterate(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, view: &FileView) -> std::result::Result<Vec<(u64, Entry)>, String> {
    let (limit, maxdims) = expected_chunks(lock, dset)?;
    if let Some(why) = iteration_order_differs(&maxdims) {
        return Err(why);
    }
    // Chunk addresses are absolute since libhdf5 1.14.4; before, relative to the base
    // address (the user block's end).
    let info = super::version::library_info(lock).map_err(|x| x.message)?;
    let add = if (info.major, info.minor, info.release) < (1, 14, 4) { view.base } else { 0 };
    let mut out = Vec::with_capacity(capacity(grid, limit));
    chunk_iter(lock, dset, grid.ndim(), &mut |coord, mask, addr, size| {
        if out.len() as u64 >= limit {
            return Err(format!("H5Dchunk_iter reports more than the {limit} chunks libhdf5 counts"));
        }
        out.push(check_entry(grid, coord, size, mask, addr.checked_add(add), view.len, "H5Dchunk_iter")?);
        Ok(())
    })?;
    finish(out, limit, "H5Dchunk_iter")
}

/// Why `H5Dchunk_iter` cannot be trusted to name the chunk of each entry of a dataset of
/// maximal dimensions `maxdims`, or `None`. An extensible-array index whose unlimited axis
/// is not the first: libhdf5 (up to 2.2 at least) iterates it in another order than it looks
/// chunks up, so `H5Dchunk_iter` reports another chunk's coordinates for an entry (a sparse
/// dataset can even pass the count and grid checks). The B-tree of a layout version 3 file
/// with such axes is not told apart (no object header address on libhdf5 >= 1.12).
#[cfg(hdf5_1_14)]
pub(super) fn iteration_order_differs(maxdims: &[u64]) -> Option<String> {
    let unlimited: Vec<usize> = (0..maxdims.len()).filter(|&j| maxdims[j] == hdf5_sys::h5s::H5S_UNLIMITED).collect();
    (unlimited.len() == 1 && unlimited[0] != 0)
        .then(|| format!("one unlimited axis ({}) that is not the first: an extensible-array index, which H5Dchunk_iter reports in another chunk order", unlimited[0]))
}

/// A [`chunk_iter`] callback: `(offset, filter_mask, address, stored_size)`.
#[cfg(hdf5_1_14)]
pub(super) type Visit<'a> = &'a mut dyn FnMut(&[u64], u32, u64, u64) -> std::result::Result<(), String>;

/// One `H5Dchunk_iter` pass over `dset`'s chunk index: `visit(offset, filter_mask, address,
/// stored_size)` for every allocated chunk (`offset`: the dataset offset of the chunk's first
/// element on each of the `ndim` axes, since libhdf5 1.14.0; `address` as libhdf5 reports it,
/// see [`iterate`]). The first `Err` stops the pass and is returned; the callback never
/// unwinds into libhdf5 (`catch_unwind`). Lock held.
#[cfg(hdf5_1_14)]
pub(super) fn chunk_iter(lock: &H5Lock, dset: hid_t, ndim: usize, visit: Visit<'_>) -> std::result::Result<(), String> {
    use hdf5_sys::h5::{haddr_t, hsize_t};
    struct Iter<'a> {
        ndim: usize,
        visit: Visit<'a>,
        err: Option<String>,
    }
    /// `H5D_chunk_iter_op_t`: hand one entry on; negative (stop, failure) on the first
    /// `Err` or a panic (never unwinds into C).
    extern "C" fn cb(offset: *const hsize_t, mask: std::ffi::c_uint, addr: haddr_t, size: hsize_t, data: *mut c_void) -> c_int {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `data` is the `Iter` handed to H5Dchunk_iter below, alive and not
            // otherwise borrowed during the call.
            let it = unsafe { &mut *(data as *mut Iter<'_>) };
            if offset.is_null() {
                it.err = Some("H5Dchunk_iter reports an entry without its offset".into());
                return -1;
            }
            // SAFETY: libhdf5 passes the chunk's offset on every axis (and one more for the
            // element size), valid during the call.
            let coord = unsafe { std::slice::from_raw_parts(offset, it.ndim) };
            match (it.visit)(coord, mask, addr, size) {
                Ok(()) => 0,
                Err(why) => {
                    it.err = Some(why);
                    -1
                }
            }
        }));
        r.unwrap_or(-1)
    }
    let mut it = Iter { ndim, visit, err: None };
    // SAFETY: valid dataset id; lock held; `cb` reads `it` only during this call.
    let r = unsafe { hdf5_sys::h5d::H5Dchunk_iter(dset, hdf5_sys::h5p::H5P_DEFAULT, Some(cb), &mut it as *mut Iter<'_> as *mut c_void) };
    if r < 0 {
        let stack = super::error::take_stack(lock);
        return Err(it.err.unwrap_or_else(|| format!("H5Dchunk_iter failed (or its callback panicked); libhdf5 error stack:{stack}")));
    }
    Ok(())
}

/// The address of `dset`'s object header (relative to the base address).
#[cfg(not(hdf5_1_12))]
pub(super) fn object_header_address(lock: &H5Lock, dset: hid_t) -> std::result::Result<u64, String> {
    let mut info = std::mem::MaybeUninit::<hdf5_sys::h5o::H5O_info1_t>::zeroed();
    // SAFETY: valid dataset id; lock held; `info` is a local of the struct libhdf5 1.10 fills.
    if unsafe { hdf5_sys::h5o::H5Oget_info2(dset, info.as_mut_ptr(), hdf5_sys::h5o::H5O_INFO_BASIC) } < 0 {
        super::error::clear_stack(lock);
        return Err("H5Oget_info failed".into());
    }
    // SAFETY: filled by libhdf5 above (zeroed before).
    Ok(unsafe { info.assume_init() }.addr)
}

/// Why libhdf5 >= 2.0 refuses the chunk B-tree of `dset` ("bad coordinate offset"): a key of
/// its root node whose offsets are off the chunk grid of the layout message (a damaged chunk
/// dimension or key), or `None` (also when vh5 cannot read the tree: no verdict). libhdf5
/// 1.10 does not check: it reads the chunks on another grid, other or uninitialised bytes
/// (conformance seeds 46 and 53 at 8000 cases: one flipped chunk-dimension byte). At every
/// dataset's first use every key of the first [`SMALL_TREE_NODES`] nodes from the root is
/// read, the element offset (libhdf5 writes 0; 2.x refuses one that is no multiple of the
/// element size) included: a key deeper than the root off the grid, or a damaged element
/// offset, made 1.10 read its chunk as never written, the fill value, with `VH5_OK`
/// (new-user tryouts, session 14); the leaf keys of larger trees are checked when vh5 walks
/// them for its chunk index (see [`IndexSlot::get`]). Lock held.
#[cfg(not(hdf5_1_14))]
pub fn btree_root_damage(lock: &H5Lock, dset: hid_t) -> Option<String> {
    let view = FileView::open(lock, dset).ok()?;
    let oh = object_header_address(lock, dset).ok()?;
    let r = view.reader();
    let (root, dimensionality, dims) = r.layout(oh).ok()?;
    let (node, e, offsets) = r.key_off_grid(root, dimensionality, &dims, SMALL_TREE_NODES).ok()??;
    let at = if node == root { "its chunk B-tree's root node".to_string() } else { format!("the chunk B-tree node at file address {node}") };
    Some(format!("key {e} of {at} holds the offsets {offsets:?}, not multiples of the chunk dimensions and element size {:?}", &dims[..dimensionality]))
}

/// Nodes of a dataset's chunk B-tree whose keys are checked at its first use
/// ([`btree_root_damage`]): every node of a tree of up to ~4,000 chunks (libhdf5 writes up
/// to 64 chunks a leaf), a ~100 us read; the first nodes of a larger one.
#[cfg(not(hdf5_1_14))]
pub const SMALL_TREE_NODES: usize = 64;

/// libhdf5 >= 1.14 checks the keys itself.
#[cfg(hdf5_1_14)]
pub fn btree_root_damage(_lock: &H5Lock, _dset: hid_t) -> Option<String> {
    None
}

/// On libhdf5 1.12 object addresses are tokens: no walk of the file's own index (and no
/// `H5Dchunk_iter` in the bindings before 1.14).
#[cfg(all(hdf5_1_12, not(hdf5_1_14)))]
pub(super) fn object_header_address(_lock: &H5Lock, _dset: hid_t) -> std::result::Result<u64, String> {
    Err("libhdf5 >= 1.12: vh5 reads no object header address".into())
}

/// `H5Dget_num_chunks` over the whole dataset, and the dataset's maximal dimensions.
pub(super) fn expected_chunks(lock: &H5Lock, dset: hid_t) -> std::result::Result<(u64, Vec<u64>), String> {
    // SAFETY: valid dataset id; lock held; out-pointer is a local.
    unsafe {
        let space = Handle::new(lock, hdf5_sys::h5d::H5Dget_space(dset), "H5Dget_space").map_err(|x| x.message)?;
        let (_, maxdims) = super::hyperslab::space_dims(lock, space.id()).map_err(|x| x.message)?;
        let mut n: u64 = 0;
        if hdf5_sys::h5d::H5Dget_num_chunks(dset, space.id(), &mut n) < 0 {
            super::error::clear_stack(lock);
            return Err("H5Dget_num_chunks failed".into());
        }
        Ok((n, maxdims))
    }
}

/// The dataset offset of the first element of the chunk with linear index `linear`.
fn origin_of(grid: &ChunkGrid, linear: u64) -> [u64; crate::geometry::MAX_RANK] {
    let mut origin = [0u64; crate::geometry::MAX_RANK];
    grid.linear_origin(linear, &mut origin[..grid.ndim()]);
    origin
}

/// Whether libhdf5's own lookup of the chunk at `origin` (`H5Dget_chunk_storage_size`, ~2 us)
/// gives the entry's stored size; `Err` naming the chunk otherwise.
fn check_size(lock: &H5Lock, dset: hid_t, origin: &[u64], e: &Entry) -> std::result::Result<(), String> {
    if super::chunk::chunk_state(lock, dset, origin) != (super::chunk::ChunkState::Stored { size: e.size }) {
        return Err(format!("chunk at dataset offset {origin:?}: the index's stored size {} differs from libhdf5's", e.size));
    }
    Ok(())
}

/// Check every entry's stored size against libhdf5's own index lookup (~2 us a chunk, once
/// per open dataset): for vh5's own walk of the B-tree.
#[cfg(not(hdf5_1_14))]
fn verify_sizes(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, idx: &ChunkIndex) -> std::result::Result<(), String> {
    let nd = grid.ndim();
    for &(linear, e) in &idx.entries {
        check_size(lock, dset, &origin_of(grid, linear)[..nd], &e)?;
    }
    Ok(())
}

/// A dataset without filters stores every chunk as its bytes in the file type (`want`, from
/// the caller's dataset facts): an entry of another size is damaged. libhdf5 reads chunk-size bytes at its address whatever the entry
/// says, while `H5Dread_chunk` (1.10 / 1.14: no buffer size argument) reads the entry's size
/// (found by a fuzzed file: a too large size overflowed the buffer, a too small one left part
/// of it unwritten). Such a dataset gets no index (libhdf5 reads it).
fn check_unfiltered_sizes(grid: &ChunkGrid, idx: &ChunkIndex, want: u64) -> std::result::Result<(), String> {
    match idx.entries.iter().find(|(_, e)| e.size != want) {
        Some(&(linear, e)) => Err(format!(
            "chunk at dataset offset {:?}: an unfiltered chunk stored as {} bytes (its size is {want}): the chunk index is damaged",
            &origin_of(grid, linear)[..grid.ndim()],
            e.size
        )),
        None => Ok(()),
    }
}

/// Compare the stored size (libhdf5's lookup), bytes and filter mask of [`SAMPLES`] entries
/// spread over the index (first and last included) with libhdf5's `H5Dread_chunk`, whose
/// buffer is sized from libhdf5's answer, never from the index's.
fn verify_samples(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, idx: &ChunkIndex) -> std::result::Result<(), String> {
    let n = idx.entries.len();
    let nd = grid.ndim();
    let k = SAMPLES.min(n);
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for s in 0..k {
        let i = if k == 1 { 0 } else { s * (n - 1) / (k - 1) };
        let (linear, e) = idx.entries[i];
        let origin = origin_of(grid, linear);
        check_size(lock, dset, &origin[..nd], &e)?;
        idx.read(&e, &mut mine).map_err(|x| x.message)?;
        // (The size was just checked equal to libhdf5's.)
        let mask = super::chunk::read_raw_chunk(lock, dset, &origin[..nd], e.size, &mut theirs).map_err(|x| x.message)?;
        if mask != Some(e.mask) || mine != theirs {
            return Err(format!("chunk at dataset offset {:?}: the index's entry differs from libhdf5's H5Dread_chunk", &origin[..nd]));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(linears: &[u64]) -> ChunkIndex {
        let entries = linears.iter().map(|&l| (l, Entry { offset: l * 10, size: 10, mask: 0 })).collect();
        let file = File::open("/dev/null").expect("/dev/null");
        ChunkIndex { entries, file, file_len: 0 }
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
