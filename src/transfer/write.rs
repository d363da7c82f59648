//! `write_many_slices`: copy many slices of a caller-owned array into an HDF5 dataset
//! (numpy -> HDF5), with the row semantics of [`crate::geometry`]: `src_*` index the ARRAY,
//! `dst_*` the DATASET.
//!
//! Strategy, with the libhdf5 lock held (raw chunk writes release it while workers encode,
//! see [`super::rawwrite`]), after every row has been validated:
//! - **Chunked datasets** (with or without filters): the rows' destination selections are cut
//!   by the chunk grid ([`crate::plan::grid::ChunkGrid`]) and the pieces grouped by chunk, keeping
//!   row order inside each chunk. Every touched chunk is written ONCE per call, as one
//!   `H5Dwrite` of the chunk's hyperslab from a chunk-sized buffer: when the union of the
//!   pieces covers the whole chunk the buffer is assembled from the pieces alone (libhdf5
//!   skips reading a chunk that a write overwrites entirely); otherwise the chunk region is
//!   read first (`H5Dread`, so unallocated chunks come back as the fill value), the pieces are
//!   merged into it in row order (the later row wins) and the result written. So a compressed
//!   chunk is decompressed at most once and compressed once however many rows touch it.
//!   (Edge chunks clipped by the dataset extent are never "entire" for libhdf5, which then
//!   reads them itself before the write.) Filtered datasets whose pipeline vh5 implements
//!   (deflate, shuffle, fletcher32) and that need no type conversion skip `H5Dwrite`: vh5
//!   encodes the chunks on worker threads and stores them raw ([`super::rawwrite`]).
//! - **Contiguous, compact (and virtual) datasets**: one `H5Dwrite` per row of the row's
//!   hyperslab; steps on the dataset side, the inner axis included, go to libhdf5 as the
//!   hyperslab stride (its sieve buffer merges the small pieces of a contiguous dataset).
//!   The row's elements come straight from the caller's buffer when the row has no steps
//!   and its block is C-contiguous there, otherwise they are gathered into a scratch buffer.
//!
//! Failure part-way (libhdf5 refusing a write, a corrupt chunk that must be read for a
//! partial update, a filter failing): the error says which rows had been written completely,
//! which in part, and that the others were not written.

use std::collections::HashSet;

use hdf5_sys::h5i::{hid_t, H5I_type_t};

use super::checks::{check_array, memory_type, parse_flags, DatasetType, Direction, Flags};
pub use super::merge::SrcArray;
use super::merge::{failed, NAMES};
use super::stats::WriteStats;
use super::write_chunked::{write_chunked, Target};
use crate::dtype::Dtype;
use crate::engine::copy::{copy_strided_runs, dense_strides};
use crate::error::{Error, Result};
use crate::geometry::{c_contiguous_block, row_named, SliceTable, MAX_RANK};
use crate::hdf5::chunk_guard::ReadGuard;
use crate::hdf5::dataset::{dataset_info, expect_kind, Layout};
use crate::hdf5::error::session;
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::H5Lock;
use crate::hdf5::meta::classify_dataset;
use crate::hdf5::scaleoffset::WriteGuard;
use crate::hdf5::write::{file_is_writable, HyperslabWriter};
use crate::plan::ChunkGrid;

/// Write every row of `table` from `src` into dataset `dset` (see the module docs and
/// `vh5_write_many_slices` in the C header for the exact semantics and errors).
pub fn write_many_slices(dset: hid_t, src: &SrcArray, table: &SliceTable, flags: u32) -> Result<WriteStats> {
    write_all_rows(dset, src, table, flags).map_err(|e| super::checks::transfer_error(dset, e))
}

fn write_all_rows(dset: hid_t, src: &SrcArray, table: &SliceTable, flags: u32) -> Result<WriteStats> {
    super::options::check_env()?;
    let fl = parse_flags(Direction::Write, flags)?;
    let Flags { clip, .. } = fl;
    let n = src.layout.shape.len();
    check_array(Direction::Write, table, &src.layout, src.dtype, src.buf.len())?;
    src.layout.validate_bounds().map_err(|e| Error::new(e.kind, format!("src: {}", e.message)))?;

    let s = session();
    let l = s.lock();
    expect_kind(l, dset, &[H5I_type_t::H5I_DATASET], "dataset")?;
    // Decoded chunks vh5 kept for this dataset are stale once it is written (caches exist
    // only for read-only files, which refuse the write below: defensive).
    crate::hdf5::meta::clear_chunk_cache(dset);
    if !file_is_writable(l, dset)? {
        bail!(
            InvalidArgument,
            "dataset {dset} belongs to a file opened read-only (libhdf5: no write intent); open the file with VH5_FILE_READ_WRITE (Python: vh5.File(path, \"r+\"))"
        );
    }
    crate::hdf5::external::check_dataset(l, dset)?;
    // The dataset's chunking and filters, read once for the checks below.
    let layout = crate::hdf5::chunk::chunk_layout(l, dset)?;
    crate::hdf5::filter_support::check_pipeline(l, dset, &layout, true)?;
    // SAFETY: dset is an open dataset (checked); lock held.
    let ftype = Handle::new(l, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
    let finfo = classify_dataset(l, dset, ftype.id())?;
    let mem = memory_type(l, Direction::Write, DatasetType { dset, ftype: ftype.id(), finfo: &finfo }, src.dtype, src.layout.itemsize, fl)?;
    let itemsize = src.layout.itemsize;
    let mut writer = HyperslabWriter::new(l, dset, mem.id(), itemsize)?;
    let dshape: Vec<u64> = writer.shape().to_vec();
    if dshape.len() != n {
        bail!(InvalidArgument, "dimensionality mismatch: the source array has {n} axes, the dataset {}", dshape.len());
    }
    let mut stats = WriteStats::default();
    let todo = rows_to_write(src, table, &dshape, clip)?;
    stats.rows_skipped = table.nslices - todo;
    if todo == 0 || src.layout.is_empty() || dshape.contains(&0) {
        return Ok(stats);
    }
    if n == 0 {
        write_scalar(&mut writer, src, todo, &mut stats)?;
        return Ok(stats);
    }
    let info = dataset_info(l, dset)?;
    match (info.layout, info.chunk) {
        // With a dtype conversion (VH5_SLICES_CONVERT, array dtype != dataset dtype) the chunk
        // planner would read partly covered chunks into the ARRAY's dtype and write them
        // back, round-tripping the elements no row writes through that dtype (float data
        // written from an int64 array lost its fractions; found by fuzzing). Such writes go
        // one H5Dwrite per row instead: libhdf5 merges partial chunks in the file type.
        (Layout::Chunked, Some(chunk)) if finfo.dtype == Some(src.dtype) => {
            let grid = ChunkGrid::new(&dshape, &chunk)?;
            let target = Target { l, dset, mem_type: mem.id(), grid: &grid, layout: &layout, file_itemsize: finfo.file_itemsize };
            write_chunked(&target, &mut writer, src, table, clip, &mut stats)?;
        }
        _ => {
            if let Some(chunk) = layout.chunk.as_deref().filter(|_| !layout.filters.is_empty()) {
                let grid = ChunkGrid::new(&dshape, chunk)?;
                let target = Target { l, dset, mem_type: mem.id(), grid: &grid, layout: &layout, file_itemsize: finfo.file_itemsize };
                unmask_for_row_writes(&target, finfo.dtype, src, table, clip)?;
            }
            written_through_libhdf5(l, dset);
            let mut guard = WriteGuard::new(l, dset, &layout, mem.id(), itemsize)?;
            // libhdf5 reads the stored chunks a row writes in part: checked as reads check them
            let mut stored = ReadGuard::new(l, dset, &layout, None)?;
            write_rows(l, &mut writer, &dshape, src, table, clip, (guard.as_mut(), stored.as_mut()), &mut stats)?
        }
    }
    Ok(stats)
}

/// The number of rows that write something (validating every row). Zero-column tables
/// (scalar dataset): every row is the same valid row, O(1).
fn rows_to_write(src: &SrcArray, table: &SliceTable, dshape: &[u64], clip: bool) -> Result<usize> {
    if dshape.is_empty() {
        return Ok(table.nslices);
    }
    let mut todo = 0;
    for i in 0..table.nslices {
        if row_named(table, i, &src.layout.shape, dshape, clip, NAMES)?.is_some() {
            todo += 1;
        }
    }
    Ok(todo)
}

/// Scalar dataset: each of the `todo` rows writes the one element; the last write is the
/// only one that can be seen, so write once.
fn write_scalar(writer: &mut HyperslabWriter, src: &SrcArray, todo: usize, stats: &mut WriteStats) -> Result<()> {
    let off = src.layout.offset;
    writer.write(&[], None, &[], &src.buf[off..off + src.layout.itemsize]).map_err(|e| failed(e, "the scalar dataset", &[], &[]))?;
    stats.rows_written = todo;
    stats.elements = todo as u64;
    stats.hdf5_writes = 1;
    Ok(())
}

/// Filtered chunked datasets written row by row through libhdf5 (a type conversion): the
/// masked chunks the rows reach re-stored unmasked first (refused when a chunk stays masked:
/// rows through H5Dwrite cannot keep a mask), and the write refused when a stored chunk an
/// optional filter may leave with a stale mask 0 is reached (vh5 checks those only when it
/// merged the chunks itself, [`write_chunked`]). `dtype`: the dataset's, if vh5 has one.
fn unmask_for_row_writes(t: &Target, dtype: Option<Dtype>, src: &SrcArray, table: &SliceTable, clip: bool) -> Result<()> {
    let (l, dset, layout, grid) = (t.l, t.dset, t.layout, t.grid);
    let (n, dshape, chunk) = (grid.ndim(), grid.shape(), grid.chunk());
    let mut origins = Vec::new();
    // Chunks reached by more than one row: libhdf5 writes them once per row.
    let mut seen: HashSet<Vec<u64>> = HashSet::new();
    let (mut this_row, mut repeated) = (HashSet::new(), HashSet::new());
    for i in 0..table.nslices {
        if let Some(r) = row_named(table, i, &src.layout.shape, dshape, clip, NAMES)?.filter(|r| !r.count[..n].contains(&0)) {
            let first = origins.len();
            grid.for_each_piece(&r.dst_start[..n], &r.count[..n], &r.dst_step[..n], |p| {
                origins.extend(p.chunk_coord.iter().zip(chunk).map(|(c, s)| c * s));
            });
            this_row.clear();
            this_row.extend(origins[first..].chunks_exact(n.max(1)).map(<[u64]>::to_vec));
            for o in this_row.drain() {
                if let Some(o) = seen.replace(o) {
                    repeated.insert(o);
                }
            }
        }
    }
    let repeated = repeated.len();
    super::masked::unmask_chunks(l, dset, layout, dshape, t.file_itemsize, &origins, false)?;
    // Stored chunks an optional filter may now leave with a stale mask 0: vh5 checks them only
    // when it merged the chunks itself (`write_chunked`). So may a chunk this write stores
    // first and a later row writes again (libhdf5 flushes it when its chunk cache evicts it:
    // 768x768 float64 in 8x8 Blosc chunks, two rows over the whole dataset, left chunks h5py
    // cannot read).
    if let Some(w) = super::stale_mask::StaleWatch::new(l, dset, layout, dshape, &origins, n, t.mem_type, None)?.filter(|w| w.at_risk() > 0 || repeated > 0) {
        bail!(
            Unsupported,
            "dataset {}: {} are in a pipeline with an optional filter vh5 does not run ([{}]); \
             this write goes through libhdf5 row by row ({}), and where that filter fails on the new values libhdf5 can keep a stale \
             filter mask (no reader could decode the chunk), which vh5 can only check for chunks it merges itself: convert the array to \
             the dataset's dtype ({}) with numpy's astype and write that instead; nothing was written",
            crate::hdf5::handle::dataset_name(l, dset),
            match (w.at_risk(), repeated) {
                (0, r) => format!("{r} chunks this write reaches with more than one row"),
                (s, 0) => format!("{s} stored chunks this write reaches"),
                (s, r) => format!("{s} stored chunks this write reaches and {r} chunks it reaches with more than one row"),
            },
            layout.filters.iter().map(|f| crate::hdf5::filter_support::filter_name(f.id)).collect::<Vec<_>>().join(", "),
            if dtype.is_some() { "a type conversion" } else { "an element type without a vh5 dtype" },
            dtype.map_or("its own", |d| d.name()),
        );
    }
    Ok(())
}

/// This call writes `dset` through `H5Dwrite`, the lock held until it returns: raw writes of
/// the same dataset in flight (other threads, lock released while they encode) merge again the
/// chunks they read before ([`super::write_stamps`]).
pub(super) fn written_through_libhdf5(l: &H5Lock, dset: hid_t) {
    super::write_stamps::written_through_libhdf5(|| {
        // (Not identified: every dataset with a raw write in flight is stamped.)
        crate::hdf5::write::dataset_identity(l, dset).ok().map(|(fileno, token)| super::write_stamps::DatasetId { fileno, token })
    });
}

/// Contiguous / compact / virtual datasets: one H5Dwrite per row.
/// `guards`: the scaleoffset checks of each row's elements (see [`WriteGuard::check_row`]) and
/// of the stored chunks it reaches ([`ReadGuard::check`]).
#[allow(clippy::too_many_arguments)]
fn write_rows(
    l: &H5Lock,
    writer: &mut HyperslabWriter,
    dshape: &[u64],
    src: &SrcArray,
    table: &SliceTable,
    clip: bool,
    guards: (Option<&mut WriteGuard>, Option<&mut ReadGuard>),
    stats: &mut WriteStats,
) -> Result<()> {
    let (mut guard, mut stored) = guards;
    let n = dshape.len();
    let itemsize = src.layout.itemsize;
    let mut scratch: Vec<u8> = Vec::new();
    let (mut counts, mut ss, mut dense) = ([0usize; MAX_RANK], [0isize; MAX_RANK], [0isize; MAX_RANK]);
    let mut done: Vec<usize> = Vec::new();
    for i in 0..table.nslices {
        let Some(r) = row_named(table, i, &src.layout.shape, dshape, clip, NAMES)? else { continue };
        let elems = r.elements();
        let bytes = usize::try_from(elems as u128 * itemsize as u128).map_err(|_| err!(BufferTooSmall, "row {i}: {elems} elements do not fit in memory"))?;
        let stride = if r.dst_step[..n].iter().any(|&x| x != 1) { Some(&r.dst_step[..n]) } else { None };
        let so = src.layout.byte_offset(&r.src_start[..n]);
        let no_src_steps = r.src_step[..n].iter().all(|&x| x == 1);
        if let Some(g) = stored.as_deref_mut() {
            g.check(l, dshape, &r.dst_start[..n], stride, &r.count[..n]).map_err(|e| failed(e, &format!("row {i}"), &done, &[]))?;
        }
        let res = if no_src_steps && c_contiguous_block(&src.layout.strides, &r.count[..n], itemsize) {
            if let Some(g) = guard.as_deref_mut() {
                g.check_row(l, i, &src.buf[so..so + bytes]).map_err(|e| failed(e, &format!("row {i}"), &done, &[]))?;
            }
            writer.write(&r.dst_start[..n], stride, &r.count[..n], &src.buf[so..so + bytes])
        } else {
            if scratch.len() < bytes {
                crate::mem::resize_zeroed(&mut scratch, bytes, || format!("row {i}: staging buffer"))?;
            }
            for j in 0..n {
                counts[j] = r.count[j] as usize;
                ss[j] = src.layout.strides[j] as isize * r.src_step[j] as isize;
                // Row: count-1 steps are 1
            }
            dense_strides(&r.count[..n], itemsize, &mut dense);
            copy_strided_runs(src.buf, so, &ss[..n], &mut scratch[..bytes], 0, &dense[..n], &counts[..n], itemsize)?;
            if let Some(g) = guard.as_deref_mut() {
                g.check_row(l, i, &scratch[..bytes]).map_err(|e| failed(e, &format!("row {i}"), &done, &[]))?;
            }
            writer.write(&r.dst_start[..n], stride, &r.count[..n], &scratch[..bytes])
        };
        res.map_err(|e| failed(e, &format!("row {i}"), &done, &[]))?;
        done.push(i);
        stats.rows_written += 1;
        stats.elements += elems;
        stats.hdf5_writes += 1;
    }
    Ok(())
}
