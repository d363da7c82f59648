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

use hdf5_sys::h5i::{hid_t, H5I_type_t};

use super::checks::{check_array, memory_type, parse_flags, DatasetType, Direction, Flags};
pub use super::merge::SrcArray;
use super::merge::{failed, ranges, report, MergeCtx, NAMES};
use super::stats::WriteStats;
use crate::engine::copy::{copy_strided_runs, dense_strides};
use crate::error::{Error, Result};
use crate::geometry::{c_contiguous_block, row_named, SliceTable, MAX_RANK};
use crate::hdf5::chunk_guard::ReadGuard;
use crate::hdf5::dataset::{dataset_info, expect_kind, HyperslabReader, Layout};
use crate::hdf5::error::session;
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::H5Lock;
use crate::hdf5::meta::classify_dataset;
use crate::hdf5::scaleoffset::WriteGuard;
use crate::hdf5::write::{file_is_writable, HyperslabWriter};
use crate::plan::{ChunkGrid, Plan};

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
    // Zero-column tables (scalar dataset): every row is the same valid row, O(1).
    let mut todo = if n == 0 { table.nslices } else { 0 };
    for i in 0..if n == 0 { 0 } else { table.nslices } {
        if row_named(table, i, &src.layout.shape, &dshape, clip, NAMES)?.is_some() {
            todo += 1;
        }
    }
    stats.rows_skipped = table.nslices - todo;
    if todo == 0 || src.layout.is_empty() || dshape.contains(&0) {
        return Ok(stats);
    }
    if n == 0 {
        // Scalar dataset: every row writes the one element; the last write is the only one
        // that can be seen, so write once.
        let off = src.layout.offset;
        writer.write(&[], None, &[], &src.buf[off..off + itemsize]).map_err(|e| failed(e, "the scalar dataset", &[], &[]))?;
        stats.rows_written = todo;
        stats.elements = todo as u64;
        stats.hdf5_writes = 1;
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
            write_chunked(l, dset, mem.id(), &mut writer, (&grid, &layout, finfo.file_itemsize), src, table, clip, &mut stats)?;
        }
        _ => {
            if let Some(chunk) = layout.chunk.as_deref().filter(|_| !layout.filters.is_empty()) {
                // Masked chunks the rows reach, re-stored unmasked (or the write refused) first.
                let grid = ChunkGrid::new(&dshape, chunk)?;
                let mut origins = Vec::new();
                for i in 0..table.nslices {
                    if let Some(r) = row_named(table, i, &src.layout.shape, &dshape, clip, NAMES)?.filter(|r| !r.count[..n].contains(&0)) {
                        grid.for_each_piece(&r.dst_start[..n], &r.count[..n], &r.dst_step[..n], |p| {
                            origins.extend(p.chunk_coord.iter().zip(chunk).map(|(c, s)| c * s));
                        });
                    }
                }
                // (Refused when a chunk stays masked: rows through H5Dwrite cannot keep a mask.)
                super::masked::unmask_chunks(l, dset, &layout, &dshape, finfo.file_itemsize, &origins, false)?;
                // Stored chunks an optional filter may now leave with a stale mask 0: vh5 checks
                // them only when it merged the chunks itself (`write_chunked`).
                if let Some(w) = super::stale_mask::StaleWatch::new(l, dset, &layout, &dshape, &origins, n, mem.id(), None)?.filter(|w| w.at_risk() > 0) {
                    bail!(
                        Unsupported,
                        "dataset {}: {} stored chunks this write reaches are in a pipeline with an optional filter vh5 does not run ([{}]); \
                         this write goes through libhdf5 row by row ({}), and where that filter fails on the new values libhdf5 can keep a stale \
                         filter mask (no reader could decode the chunk), which vh5 can only check for chunks it merges itself: convert the array to \
                         the dataset's dtype ({}) with numpy's astype and write that instead; nothing was written",
                        crate::hdf5::handle::dataset_name(l, dset),
                        w.at_risk(),
                        layout.filters.iter().map(|f| crate::hdf5::filter_support::filter_name(f.id)).collect::<Vec<_>>().join(", "),
                        if finfo.dtype.is_some() { "a type conversion" } else { "an element type without a vh5 dtype" },
                        finfo.dtype.map_or("its own", |d| d.name()),
                    );
                }
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

/// This call writes `dset` through `H5Dwrite`, the lock held until it returns: raw writes of
/// the same dataset in flight (other threads, lock released while they encode) merge again the
/// chunks they read before ([`super::write_stamps`]).
fn written_through_libhdf5(l: &H5Lock, dset: hid_t) {
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

/// Chunked datasets: each touched chunk read (only if partially covered), merged, written once.
#[allow(clippy::too_many_arguments)]
fn write_chunked(
    l: &H5Lock,
    dset: hid_t,
    mem_type: hid_t,
    writer: &mut HyperslabWriter,
    (grid, layout, file_itemsize): (&ChunkGrid, &crate::hdf5::chunk::ChunkLayout, usize),
    src: &SrcArray,
    table: &SliceTable,
    clip: bool,
    stats: &mut WriteStats,
) -> Result<()> {
    let n = grid.ndim();
    let dshape = grid.shape().to_vec();
    let itemsize = src.layout.itemsize;
    if table.nslices > u32::MAX as usize {
        bail!(Unsupported, "{} rows: at most {} per call on chunked datasets", table.nslices, u32::MAX);
    }
    // 1. Cut every row by the chunk grid (the planner reads use too), pieces grouped by chunk.
    let mut plan = Plan::new(n);
    let mut pieces_per_row = vec![0u32; table.nslices];
    let mut first: Option<(usize, [u64; MAX_RANK], usize)> = None;
    for (i, per_row) in pieces_per_row.iter_mut().enumerate() {
        let Some(r) = row_named(table, i, &src.layout.shape, &dshape, clip, NAMES)? else { continue };
        if first.is_none() {
            let mut at = [0u64; MAX_RANK];
            at[..n].copy_from_slice(&r.dst_start[..n]);
            first = Some((i, at, src.layout.byte_offset(&r.src_start[..n])));
        }
        stats.rows_written += 1;
        stats.elements += r.elements();
        *per_row = plan.add_write_row(grid, i, &r) as u32;
    }
    if plan.pieces.len() > u32::MAX as usize {
        bail!(Unsupported, "{} row pieces: at most {} per call", plan.pieces.len(), u32::MAX);
    }
    plan.finish();

    // 2. Storage allocated late and not yet: libhdf5's own first write allocates it (and
    //    fills it, see `allocation_pending`); one element of the first row, which the
    //    chunk writes below write again, so that every chunk is then read from the file.
    if let Some((i, at, so)) = first.filter(|_| crate::hdf5::chunk::allocation_pending(l, dset).unwrap_or(false)) {
        let one = &src.buf[so..so + itemsize];
        if let Some(g) = WriteGuard::new(l, dset, layout, mem_type, itemsize)?.as_mut() {
            g.check_row(l, i, one)?;
        }
        writer.write(&at[..n], None, &[1; MAX_RANK][..n], one).map_err(|e| {
            Error::new(e.kind, format!("row {i}: its first element, written through libhdf5 first to allocate the dataset's storage (allocation time late): {}", e.message))
        })?;
        stats.hdf5_writes += 1;
    }

    // 3. One chunk at a time: raw (filters run by vh5 on worker threads) when vh5 implements
    //    the whole pipeline and no type conversion is needed, else through H5Dwrite.
    let ctx = MergeCtx { table, src, plan: &plan, n };
    // Chunks read for a partial update are checked as reads check them (scaleoffset headers
    // libhdf5 1.10 would decode as zeros): see `crate::hdf5::scaleoffset`.
    let guarded_reader = || -> Result<HyperslabReader> {
        let mut reader = HyperslabReader::new(l, dset, mem_type, itemsize)?;
        if let Some(mut guard) = ReadGuard::new(l, dset, layout, None)? {
            reader.set_check(Box::new(move |l, shape, start, stride, count| guard.check(l, shape, start, stride, count)));
        }
        Ok(reader)
    };
    if let Some(raw) = super::rawwrite::raw_plan(l, dset, mem_type, src)? {
        let mut reader = guarded_reader()?;
        return super::rawwrite::write_chunks_raw(l, dset, &raw, grid, &ctx, &pieces_per_row, &mut reader, stats);
    }
    let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
    // Masked chunks this write reaches, re-stored unmasked (or the write refused) first.
    let mut origins = Vec::with_capacity(plan.groups.len() * n);
    for &(chunk, _) in &plan.groups {
        grid.chunk_coord(chunk, &mut coord[..n]);
        grid.chunk_origin(&coord[..n], &mut origin[..n]);
        origins.extend_from_slice(&origin[..n]);
    }
    // Chunks whose mask is kept (a pipeline vh5 does not encode): merged and stored by vh5.
    let swap = super::rawwrite::file_byte_swap(l, dset, mem_type, src)?;
    let kept = super::masked::unmask_chunks(l, dset, layout, &dshape, file_itemsize, &origins, swap.is_some())?;
    let mut kept: std::collections::HashMap<Vec<u64>, super::masked::KeptMask> = kept.into_iter().map(|k| (k.origin.clone(), k)).collect();
    // Chunks stored with mask 0 whose optional filter may fail on the new values: checked after
    // libhdf5 writes each (`stale_mask`).
    let mut watch = super::stale_mask::StaleWatch::new(l, dset, layout, &dshape, &origins, n, mem_type, swap)?;
    written_through_libhdf5(l, dset);
    let mut reader = guarded_reader()?;
    let fill_never = layout.fill_never;
    let mut so_guard = WriteGuard::new(l, dset, layout, mem_type, itemsize)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut covered: Vec<u8> = Vec::new();
    let mut written_per_row = vec![0u32; table.nslices];
    let mut dense = [0isize; MAX_RANK];
    let mut rows_here: Vec<usize> = Vec::new();
    // (A closure: chunks libhdf5 wrote before a failure are checked too, `stale_mask`.)
    let looped = (|| -> Result<()> {
        for gi in 0..plan.groups.len() {
            let (chunk, group) = ctx.group(gi);
            grid.chunk_coord(chunk, &mut coord[..n]);
            grid.chunk_origin(&coord[..n], &mut origin[..n]);
            grid.chunk_extent(&coord[..n], &mut extent[..n]);
            let elems: u64 = extent[..n].iter().product();
            let bytes = elems as usize * itemsize;
            dense_strides(&extent[..n], itemsize, &mut dense);
            if buf.len() < bytes {
                crate::mem::resize_zeroed(&mut buf, bytes, || format!("chunk {:?} (dataset offset {:?})", &coord[..n], &origin[..n]))?;
            }
            let full = ctx.covers(group, &origin[..n], &extent[..n], &mut covered)?;
            rows_here.clear();
            rows_here.extend(group.iter().map(|p| p.row));
            rows_here.dedup();
            let chunk_what = || format!("chunk {:?} (dataset elements {:?} + {:?}, rows {})", &coord[..n], &origin[..n], &extent[..n], ranges(&rows_here));
            if let Some(k) = kept.remove(&origin[..n]) {
                super::masked::store_kept(l, dset, k, &ctx, group, grid.chunk(), swap.flatten(), itemsize)
                    .map_err(|e| report(e, &chunk_what(), &written_per_row, &pieces_per_row))?;
                stats.chunks_read += 1;
                stats.chunks_written += 1;
                stats.hdf5_writes += 1;
                stats.raw_chunks += 1;
                for p in group {
                    written_per_row[p.row] += 1;
                }
                continue;
            }
            if !full {
                if fill_never {
                    // libhdf5 leaves the buffer as it is for an unallocated chunk, and stores zeros
                    // in the rest of a chunk written in part (H5D__chunk_lock): never the previous
                    // chunk's bytes.
                    buf[..bytes].fill(0);
                }
                if let Err(e) = reader.read(&origin[..n], None, &extent[..n], &mut buf[..bytes]) {
                    return Err(report(e, &chunk_what(), &written_per_row, &pieces_per_row));
                }
                stats.chunks_read += 1;
            }
            ctx.merge(group, &origin[..n], &dense[..n], &mut buf[..bytes])?;
            if full && crate::hdf5::chunk::is_partial_edge(&origin[..n], grid.chunk(), &dshape) {
                // libhdf5 reads an edge chunk before writing it, however much of it is written
                reader.check_selection(&origin[..n], None, &extent[..n]).map_err(|e| report(e, &chunk_what(), &written_per_row, &pieces_per_row))?;
            }
            if let Some(g) = so_guard.as_mut() {
                g.check(l, &origin[..n], &buf[..bytes]).map_err(|e| report(e, &chunk_what(), &written_per_row, &pieces_per_row))?;
            }
            if let Err(e) = writer.write(&origin[..n], None, &extent[..n], &buf[..bytes]) {
                return Err(report(e, &chunk_what(), &written_per_row, &pieces_per_row));
            }
            if let Some(w) = watch.as_mut() {
                w.note(l, dset, &origin[..n], grid.chunk(), &extent[..n], &buf[..bytes], file_itemsize).map_err(|e| report(e, &chunk_what(), &written_per_row, &pieces_per_row))?;
            }
            stats.chunks_written += 1;
            stats.hdf5_writes += 1;
            for p in group {
                written_per_row[p.row] += 1;
            }
        }
        Ok(())
    })();
    if let Some(w) = watch.as_mut() {
        let settled = w.settle(l, dset, grid.chunk(), file_itemsize).map_err(|e| Error::new(e.kind, format!("after writing the rows: {}", e.message)));
        looped?;
        settled?;
        return Ok(());
    }
    looped
}
