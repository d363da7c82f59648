//! Building the chunk index of one dataset (see [`super`]'s docs): the entries from
//! libhdf5's `H5Dchunk_iter` (>= 1.14) or vh5's own walk of the version-1 B-tree (1.10),
//! each checked on its own, then together, then against libhdf5's lookups and reads.

#[cfg(hdf5_1_14)]
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use hdf5_sys::h5i::hid_t;

use super::{origin_of, Built, ChunkIndex, Entry, Fault, SAMPLES};
use crate::hdf5::chunk_tree::{DatasetFile, Opened};
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::H5Lock;
use crate::plan::grid::ChunkGrid;

/// Build and check the index of the chunked dataset `dset` of grid `grid` (see the module
/// docs) from its file `file`; `Err` when it cannot be used ([`super::BuildError`]: damaged, or
/// declined and the caller then reads through libhdf5). `unfiltered_bytes`: for a dataset
/// without filters, its chunks' size in the file type (every entry must store exactly that).
/// The caller holds the lock and checked the file is open read-only without SWMR.
pub fn build(lock: &H5Lock, dset: hid_t, file: &DatasetFile, grid: &ChunkGrid, unfiltered_bytes: Option<u64>) -> Built<ChunkIndex> {
    let file = Arc::clone(file.get(lock, dset)?);
    #[cfg(hdf5_1_14)]
    let entries = iterate(lock, dset, grid, &file)?;
    #[cfg(not(hdf5_1_14))]
    let entries = match &file.v4 {
        Some(ix) => walk_v4(lock, dset, grid, &file, ix, unfiltered_bytes.is_none())?,
        None => walk(lock, dset, grid, &file)?,
    };
    let idx = ChunkIndex { entries, file };
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

/// The entries of `dset`'s chunk index from vh5's own walk of its version-1 B-tree (every
/// key checked, see [`crate::hdf5::chunk_tree`]), sorted by linear index.
#[cfg(not(hdf5_1_14))]
fn walk(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, file: &Opened) -> Built<Vec<(u64, Entry)>> {
    let tree = file.tree.as_ref().map_err(Clone::clone)?;
    let (base, file_len) = (file.view.base, file.view.len);
    let (n, dims) = (grid.ndim(), &tree.dims);
    if tree.dimensionality != n + 1 || dims.len() < n || dims[..n] != *grid.chunk() {
        return Err(Fault::Declined(format!("layout message: {} dimensions, chunk {dims:?}; the dataset has {n} axes, chunk {:?}", tree.dimensionality, grid.chunk())));
    }
    let (limit, _) = expected_chunks(lock, dset)?;
    let mut out = Vec::with_capacity(capacity(grid, limit));
    let whole = file.view.reader().walk(tree, limit.saturating_mul(2).saturating_add(64), &mut |coord: &[u64], size: u32, mask: u32, addr: u64| {
        if out.len() as u64 >= limit {
            return Err(Fault::Declined(format!("B-tree: more than the {limit} chunks libhdf5 counts")));
        }
        if coord[n] != 0 {
            // (a multiple of the element size: the walker refuses any other, as libhdf5 2.x)
            return Err(Fault::Declined(format!("B-tree entry at dataset offset {:?}: element offset {} (0 expected)", &coord[..n], coord[n])));
        }
        out.push(check_entry(grid, &coord[..n], u64::from(size), mask, base.checked_add(addr), file_len, "B-tree")?);
        Ok(())
    })?;
    if !whole {
        return Err(Fault::Declined("B-tree: more nodes than chunks".into()));
    }
    file.keys_checked();
    finish(out, limit, "B-tree")
}

/// The entries of `dset`'s layout version 4 chunk index from vh5's own reading of it
/// ([`crate::hdf5::chunk_v4`]: fixed array, single chunk, implicit; every metadata block's
/// checksum verified), sorted by linear index. `filtered`: whether the dataset has filters.
#[cfg(not(hdf5_1_14))]
fn walk_v4(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, file: &Opened, ix: &crate::hdf5::chunk_v4::V4Index, filtered: bool) -> Built<Vec<(u64, Entry)>> {
    use crate::hdf5::chunk_v4::V4Kind;
    let (base, file_len) = (file.view.base, file.view.len);
    let (n, dims) = (grid.ndim(), &ix.dims);
    if dims.len() != n + 1 || dims[..n] != *grid.chunk() {
        return Err(Fault::Declined(format!("layout message: chunk dimensions {dims:?}; the dataset has {n} axes, chunk {:?}", grid.chunk())));
    }
    // The index is read before libhdf5 counts the chunks (its count reads the index too, and
    // fails on a damaged block before vh5 could say why): memory bounded by the grid of the
    // maximal dimensions (one element per chunk), then the count checked.
    let maxdims = max_dims(lock, dset)?;
    if maxdims.len() != n || maxdims.contains(&hdf5_sys::h5s::H5S_UNLIMITED) {
        return Err(Fault::Declined(format!("layout message version 4 with maximal dimensions {maxdims:?}")));
    }
    // Every index of version 4 numbers chunks in C order on the grid of the maximal dimensions.
    let max_grid = ChunkGrid::new(&maxdims, grid.chunk()).map_err(|e| Fault::Declined(format!("maximal dimensions {maxdims:?}: {}", e.message)))?;
    let max_chunks = max_grid.nchunks().ok_or("maximal grid overflows")?;
    let chunk_bytes = ix.chunk_bytes().ok_or("chunk size overflows")?;
    let what = "layout version 4 index";
    let mut out = Vec::new();
    let mut origin = [0u64; crate::geometry::MAX_RANK];
    let mut push = |idx: u64, addr: u64, size: u64, mask: u32| -> Built<()> {
        max_grid.linear_origin(idx, &mut origin[..n]);
        out.push(check_entry(grid, &origin[..n], size, mask, base.checked_add(addr), file_len, what)?);
        Ok(())
    };
    let Some(addr) = ix.addr else { return finish(out, expected_chunks(lock, dset)?.0, what) };
    match ix.kind {
        V4Kind::Single(stored) => {
            if max_chunks != 1 || stored.is_some() != filtered {
                return Err(Fault::Declined(format!("single chunk index: {max_chunks} chunks, filtered {filtered}")));
            }
            let (size, mask) = stored.unwrap_or((chunk_bytes, 0));
            push(0, addr, size, mask)?;
        }
        V4Kind::Implicit => {
            if filtered {
                return Err(Fault::Declined("implicit chunk index of a filtered dataset".into()));
            }
            // Chunk `i` of the maximal grid at `addr + i * chunk_bytes`: the chunks of the
            // current extent only (at most libhdf5's count, `push` checks).
            let mut q = [0u64; crate::geometry::MAX_RANK];
            for linear in 0..grid.nchunks().unwrap_or(0) {
                grid.chunk_coord(linear, &mut q[..n]);
                let idx = max_grid.linear_index(&q[..n]);
                let at = idx.checked_mul(chunk_bytes).and_then(|o| o.checked_add(addr)).ok_or("implicit chunk address overflows")?;
                push(idx, at, chunk_bytes, 0)?;
            }
        }
        V4Kind::FixedArray { page_bits } => file.view.reader().fixed_array(addr, page_bits, filtered, chunk_bytes, max_chunks, &mut push)?,
    }
    finish(out, expected_chunks(lock, dset)?.0, what)
}

/// Room for the entries of a chunk index: libhdf5's count, never more than the grid's chunks.
fn capacity(grid: &ChunkGrid, limit: u64) -> usize {
    usize::try_from(limit.min(grid.nchunks().unwrap_or(0))).unwrap_or(0)
}

/// One entry of a chunk index, checked: `coord` (the dataset offset of the chunk's first
/// element) a chunk origin inside the extent, `size` bytes at absolute file offset `offset`
/// (`None`: the address overflowed) non-empty and inside the file. `what` names the source.
fn check_entry(grid: &ChunkGrid, coord: &[u64], size: u64, mask: u32, offset: Option<u64>, file_len: u64, what: &str) -> Built<(u64, Entry)> {
    let n = grid.ndim();
    let mut q = [0u64; crate::geometry::MAX_RANK];
    for j in 0..n {
        let c = grid.chunk()[j];
        if c != 0 && coord[j] % c != 0 {
            // What libhdf5 2.x refuses ("bad coordinate offset", H5D__btree_decode_key) and
            // 1.10 reads past: the chunk the key was written for reads as never written.
            return Err(Fault::Damaged(format!(
                "{what} entry at dataset offset {coord:?}, not a multiple of the chunk shape {:?} on axis {j} (libhdf5 2.x refuses such a key: \
                 'bad coordinate offset'; 1.10 would read its chunk as never written, the fill value)",
                grid.chunk()
            )));
        }
        if c == 0 || coord[j] >= grid.shape()[j] {
            return Err(Fault::Declined(format!("{what} entry at dataset offset {coord:?}: not a chunk origin inside the extent {:?}", grid.shape())));
        }
        q[j] = coord[j] / c;
    }
    let offset = offset.filter(|&o| o.checked_add(size).is_some_and(|end| end <= file_len) && size > 0);
    let Some(offset) = offset else {
        return Err(Fault::Declined(format!("{what} entry at dataset offset {coord:?}: {size} bytes at an address outside the file ({file_len} bytes)")));
    };
    Ok((grid.linear_index(&q[..n]), Entry { offset, size, mask }))
}

/// Sort checked entries by linear index; `Err` on two entries for one chunk or a count other
/// than libhdf5's (`limit`, `H5Dget_num_chunks`).
fn finish(mut out: Vec<(u64, Entry)>, limit: u64, what: &str) -> Built<Vec<(u64, Entry)>> {
    out.sort_unstable_by_key(|e| e.0);
    if out.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(Fault::Declined(format!("two {what} entries for one chunk")));
    }
    if out.len() as u64 != limit {
        return Err(Fault::Declined(format!("{} {what} entries, libhdf5 counts {limit} chunks", out.len())));
    }
    Ok(out)
}

/// The entries of `dset`'s chunk index from libhdf5's own iteration (`H5Dchunk_iter`, one
/// pass over any chunk index type), sorted by linear index.
#[cfg(hdf5_1_14)]
fn iterate(lock: &H5Lock, dset: hid_t, grid: &ChunkGrid, file: &Opened) -> Built<Vec<(u64, Entry)>> {
    let view = &file.view;
    let (limit, maxdims) = expected_chunks(lock, dset)?;
    if let Some(why) = iteration_order_differs(&maxdims) {
        return Err(Fault::Declined(why));
    }
    // Chunk addresses are absolute since libhdf5 1.14.4; before, relative to the base
    // address (the user block's end).
    let info = crate::hdf5::version::library_info(lock).map_err(|x| x.message)?;
    let add = if (info.major, info.minor, info.release) < (1, 14, 4) { view.base } else { 0 };
    let mut out = Vec::with_capacity(capacity(grid, limit));
    chunk_iter(lock, dset, grid.ndim(), &mut |coord, mask, addr, size| {
        if out.len() as u64 >= limit {
            return Err(Fault::Declined(format!("H5Dchunk_iter reports more than the {limit} chunks libhdf5 counts")));
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
pub(in crate::hdf5) fn iteration_order_differs(maxdims: &[u64]) -> Option<String> {
    let unlimited: Vec<usize> = (0..maxdims.len()).filter(|&j| maxdims[j] == hdf5_sys::h5s::H5S_UNLIMITED).collect();
    (unlimited.len() == 1 && unlimited[0] != 0)
        .then(|| format!("one unlimited axis ({}) that is not the first: an extensible-array index, which H5Dchunk_iter reports in another chunk order", unlimited[0]))
}

/// A [`chunk_iter`] callback: `(offset, filter_mask, address, stored_size)`.
#[cfg(hdf5_1_14)]
pub(in crate::hdf5) type Visit<'a> = &'a mut dyn FnMut(&[u64], u32, u64, u64) -> Built<()>;

/// One `H5Dchunk_iter` pass over `dset`'s chunk index: `visit(offset, filter_mask, address,
/// stored_size)` for every allocated chunk (`offset`: the dataset offset of the chunk's first
/// element on each of the `ndim` axes, since libhdf5 1.14.0; `address` as libhdf5 reports it,
/// see [`iterate`]). The first `Err` stops the pass and is returned; the callback never
/// unwinds into libhdf5 (`catch_unwind`). Lock held.
#[cfg(hdf5_1_14)]
pub(in crate::hdf5) fn chunk_iter(lock: &H5Lock, dset: hid_t, ndim: usize, visit: Visit<'_>) -> Built<()> {
    use hdf5_sys::h5::{haddr_t, hsize_t};
    struct Iter<'a> {
        ndim: usize,
        visit: Visit<'a>,
        err: Option<Fault>,
    }
    /// `H5D_chunk_iter_op_t`: hand one entry on; negative (stop, failure) on the first
    /// `Err` or a panic (never unwinds into C).
    extern "C" fn cb(offset: *const hsize_t, mask: std::ffi::c_uint, addr: haddr_t, size: hsize_t, data: *mut c_void) -> c_int {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `data` is the `Iter` handed to H5Dchunk_iter below, alive and not
            // otherwise borrowed during the call.
            let it = unsafe { &mut *(data as *mut Iter<'_>) };
            if offset.is_null() {
                it.err = Some(Fault::Declined("H5Dchunk_iter reports an entry without its offset".into()));
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
        let stack = crate::hdf5::error::take_stack(lock);
        return Err(it.err.unwrap_or_else(|| Fault::Declined(format!("H5Dchunk_iter failed (or its callback panicked); libhdf5 error stack:{stack}"))));
    }
    Ok(())
}

/// The dataset's maximal dimensions.
#[cfg(not(hdf5_1_14))]
fn max_dims(lock: &H5Lock, dset: hid_t) -> std::result::Result<Vec<u64>, String> {
    // SAFETY: valid dataset id; lock held.
    let space = Handle::new(lock, unsafe { hdf5_sys::h5d::H5Dget_space(dset) }, "H5Dget_space").map_err(|x| x.message)?;
    Ok(crate::hdf5::hyperslab::space_dims(lock, space.id()).map_err(|x| x.message)?.1)
}

/// `H5Dget_num_chunks` over the whole dataset, and the dataset's maximal dimensions.
pub(in crate::hdf5) fn expected_chunks(lock: &H5Lock, dset: hid_t) -> std::result::Result<(u64, Vec<u64>), String> {
    // SAFETY: valid dataset id; lock held; out-pointer is a local.
    unsafe {
        let space = Handle::new(lock, hdf5_sys::h5d::H5Dget_space(dset), "H5Dget_space").map_err(|x| x.message)?;
        let (_, maxdims) = crate::hdf5::hyperslab::space_dims(lock, space.id()).map_err(|x| x.message)?;
        let mut n: u64 = 0;
        if hdf5_sys::h5d::H5Dget_num_chunks(dset, space.id(), &mut n) < 0 {
            crate::hdf5::error::clear_stack(lock);
            return Err("H5Dget_num_chunks failed".into());
        }
        Ok((n, maxdims))
    }
}

/// Whether libhdf5's own lookup of the chunk at `origin` (`H5Dget_chunk_storage_size`, ~2 us)
/// gives the entry's stored size; `Err` naming the chunk otherwise.
fn check_size(lock: &H5Lock, dset: hid_t, origin: &[u64], e: &Entry) -> std::result::Result<(), String> {
    if crate::hdf5::chunk::chunk_state(lock, dset, origin) != (crate::hdf5::chunk::ChunkState::Stored { size: e.size }) {
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
        let mask = crate::hdf5::chunk::read_raw_chunk(lock, dset, &origin[..nd], e.size, &mut theirs).map_err(|x| x.message)?;
        if mask != Some(e.mask) || mine != theirs {
            return Err(format!("chunk at dataset offset {:?}: the index's entry differs from libhdf5's H5Dread_chunk", &origin[..nd]));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> ChunkGrid {
        ChunkGrid::new(&[25, 30], &[10, 15]).expect("grid") // 3 x 2 chunks
    }

    #[test]
    fn entries_checked_one_by_one() {
        let g = grid();
        let ok = check_entry(&g, &[20, 15], 8, 1, Some(100), 1000, "B-tree").expect("sound");
        assert_eq!(ok, (5, Entry { offset: 100, size: 8, mask: 1 }));
        // Off the grid: damaged (libhdf5 2.x refuses it), naming the axis.
        let Err(Fault::Damaged(why)) = check_entry(&g, &[20, 16], 8, 0, Some(100), 1000, "B-tree") else { panic!("off the grid") };
        assert!(why.contains("[20, 16], not a multiple of the chunk shape [10, 15] on axis 1"), "{why}");
        // Outside the extent, empty, past the end of the file or an overflowed address: declined.
        for (coord, size, offset) in [([30, 0], 8, Some(100)), ([0, 0], 0, Some(100)), ([0, 0], 8, Some(995)), ([0, 0], 8, None)] {
            assert!(matches!(check_entry(&g, &coord, size, 0, offset, 1000, "B-tree"), Err(Fault::Declined(_))), "{coord:?} {size} {offset:?}");
        }
    }

    #[test]
    fn entries_checked_together() {
        let e = |l: u64| (l, Entry { offset: 10 * l, size: 10, mask: 0 });
        assert_eq!(finish(vec![e(3), e(1), e(2)], 3, "B-tree").expect("sound"), [e(1), e(2), e(3)]);
        let Err(Fault::Declined(why)) = finish(vec![e(1), e(1)], 2, "B-tree") else { panic!("duplicate") };
        assert_eq!(why, "two B-tree entries for one chunk");
        let Err(Fault::Declined(why)) = finish(vec![e(1)], 2, "B-tree") else { panic!("count") };
        assert_eq!(why, "1 B-tree entries, libhdf5 counts 2 chunks");
        assert_eq!(capacity(&grid(), 1 << 40), 6, "never more than the grid's chunks");
    }

    #[test]
    fn unfiltered_entries_store_a_chunk() {
        let file = Arc::new(Opened::for_tests(std::fs::File::open("/dev/null").expect("/dev/null")));
        let idx = ChunkIndex { entries: vec![(0, Entry { offset: 0, size: 600, mask: 0 }), (5, Entry { offset: 600, size: 599, mask: 0 })], file };
        let why = check_unfiltered_sizes(&grid(), &idx, 600).expect_err("short");
        assert!(why.starts_with("chunk at dataset offset [20, 15]: an unfiltered chunk stored as 599 bytes (its size is 600)"), "{why}");
        assert!(check_unfiltered_sizes(&grid(), &idx, 599).is_err() && check_unfiltered_sizes(&grid(), &ChunkIndex { entries: vec![], ..idx }, 1).is_ok());
    }
}
