//! Chunked datasets in `write_many_slices` (see [`super::write`]'s module docs): the rows cut
//! by the chunk grid ([`plan_write_rows`]), storage allocated late written once first
//! ([`allocate_late_storage`]), then every touched chunk read (only when covered in part),
//! merged and written once: raw when vh5 runs the whole pipeline ([`super::rawwrite`]), else
//! through `H5Dwrite` ([`ChunkWriter`]), masked chunks re-stored first ([`super::masked`]) and
//! stored chunks an optional filter may leave with a stale mask watched
//! ([`super::stale_mask`]).

use std::collections::HashMap;

use hdf5_sys::h5i::hid_t;

use super::masked::KeptMask;
use super::merge::{ranges, report, MergeCtx, SrcArray, NAMES};
use super::stale_mask::StaleWatch;
use super::stats::WriteStats;
use crate::engine::copy::dense_strides;
use crate::error::{Error, Result};
use crate::geometry::{row_named, SliceTable, MAX_RANK};
use crate::hdf5::chunk::ChunkLayout;
use crate::hdf5::chunk_guard::ReadGuard;
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::lock::H5Lock;
use crate::hdf5::scaleoffset::WriteGuard;
use crate::hdf5::write::HyperslabWriter;
use crate::plan::{ChunkGrid, Plan};

/// The chunked dataset a write goes to, and the memory type of the elements written.
pub(super) struct Target<'a> {
    pub l: &'a H5Lock,
    pub dset: hid_t,
    pub mem_type: hid_t,
    pub grid: &'a ChunkGrid,
    pub layout: &'a ChunkLayout,
    /// Bytes per element in the file.
    pub file_itemsize: usize,
}

/// Every row of a write cut by the chunk grid.
struct RowPieces {
    /// The pieces, grouped by chunk (row order inside a chunk).
    plan: Plan,
    /// Pieces of each row (0: the row writes nothing), for the part-way failure report.
    pieces_per_row: Vec<u32>,
    /// The first row that writes something: (row, its dataset start, the byte offset of its
    /// first element in the source buffer).
    first: Option<(usize, [u64; MAX_RANK], usize)>,
    /// Whether some row has a source / destination step other than 1 on an axis writing more
    /// than one element (else its step table can be treated as absent).
    stepped: (bool, bool),
}

/// Chunked datasets: each touched chunk read (only if partially covered), merged, written once.
pub(super) fn write_chunked(t: &Target, writer: &mut HyperslabWriter, src: &SrcArray, table: &SliceTable, clip: bool, stats: &mut WriteStats) -> Result<()> {
    let rows = plan_write_rows(t.grid, src, table, clip, stats)?;
    refuse_unchecked_allocation(t, rows.first.is_some())?;
    allocate_late_storage(t, writer, src, rows.first, stats)?;
    // One chunk at a time: raw (filters run by vh5 on worker threads) when vh5 implements
    // the whole pipeline and no type conversion is needed, else through H5Dwrite.
    // Step tables whose every used step is 1 are dropped for the merge, as reads drop them
    // (`chunked::plan_rows`): it would read them at each piece's row, in chunk order (random
    // rows). Only the pieces read `unit`'s steps: no row is validated from it again (a clipped
    // count depends on the step).
    let unit = SliceTable { src_step: table.src_step.filter(|_| rows.stepped.0), dst_step: table.dst_step.filter(|_| rows.stepped.1), ..*table };
    let ctx = MergeCtx { table: &unit, src, plan: &rows.plan, n: t.grid.ndim() };
    if let Some(raw) = super::rawwrite::raw_plan(t.l, t.dset, t.mem_type, src)? {
        let mut reader = guarded_reader(t, src.layout.itemsize)?;
        return super::rawwrite::write_chunks_raw(t.l, t.dset, &raw, t.grid, &ctx, &rows.pieces_per_row, &mut reader, stats);
    }
    let mut w = ChunkWriter::new(t, ctx, &rows.pieces_per_row)?;
    // (A closure: chunks libhdf5 wrote before a failure are checked too, `stale_mask`.)
    let looped = (|| -> Result<()> {
        for gi in 0..rows.plan.groups.len() {
            w.write_one_chunk(writer, gi, stats)?;
        }
        Ok(())
    })();
    w.settle_watch(looped)
}

/// Cut every row by the chunk grid (the planner reads use too), pieces grouped by chunk;
/// the rows and elements written counted into `stats`.
fn plan_write_rows(grid: &ChunkGrid, src: &SrcArray, table: &SliceTable, clip: bool, stats: &mut WriteStats) -> Result<RowPieces> {
    let n = grid.ndim();
    if table.nslices > u32::MAX as usize {
        bail!(Unsupported, "{} rows: at most {} per call on chunked datasets", table.nslices, u32::MAX);
    }
    let mut plan = Plan::new(n);
    let mut pieces_per_row = vec![0u32; table.nslices];
    let mut first: Option<(usize, [u64; MAX_RANK], usize)> = None;
    let mut stepped = (false, false);
    for (i, per_row) in pieces_per_row.iter_mut().enumerate() {
        let Some(r) = row_named(table, i, &src.layout.shape, grid.shape(), clip, NAMES)? else { continue };
        if first.is_none() {
            let mut at = [0u64; MAX_RANK];
            at[..n].copy_from_slice(&r.dst_start[..n]);
            first = Some((i, at, src.layout.byte_offset(&r.src_start[..n])));
        }
        stepped.0 |= r.src_step[..n].iter().any(|&s| s != 1);
        stepped.1 |= r.dst_step[..n].iter().any(|&s| s != 1);
        stats.rows_written += 1;
        stats.elements += r.elements();
        *per_row = plan.add_write_row(grid, i, &r) as u32;
    }
    if plan.pieces.len() > u32::MAX as usize {
        bail!(Unsupported, "{} row pieces: at most {} per call", plan.pieces.len(), u32::MAX);
    }
    plan.finish();
    Ok(RowPieces { plan, pieces_per_row, first, stepped })
}

/// Refuse (nothing written) a write that would allocate the storage of a dataset allocated
/// late (`writes`: some row writes something) in a pipeline whose stale masks vh5 cannot
/// check: the allocation stores every chunk, which the write then makes libhdf5 rewrite, and
/// [`StaleWatch::refuse_unchecked`] would refuse only after that first element was written.
fn refuse_unchecked_allocation(t: &Target, writes: bool) -> Result<()> {
    if !writes || !super::stale_mask::unchecked_pipeline(t.layout) || !crate::hdf5::chunk::allocation_pending(t.l, t.dset).unwrap_or(false) {
        return Ok(());
    }
    let names: Vec<String> = t.layout.filters.iter().map(|f| crate::hdf5::filter_support::filter_name(f.id)).collect();
    bail!(
        Unsupported,
        "dataset {}: its storage is allocated late and not yet, and this write would first allocate every chunk and then have libhdf5 rewrite \
         them in a pipeline with optional filters vh5 does not run ([{}]), where a stale filter mask (no reader could decode the chunk) cannot \
         be checked: write it with libhdf5 (h5py) once, or copy the data into a dataset whose pipeline has one such filter; nothing was written",
        crate::hdf5::handle::dataset_name(t.l, t.dset),
        names.join(", ")
    );
}

/// Storage allocated late and not yet: libhdf5's own first write allocates it (and fills it,
/// see `allocation_pending`); one element of the first row (`first`, see [`RowPieces`]),
/// which the chunk writes write again, so that every chunk is then read from the file.
fn allocate_late_storage(t: &Target, writer: &mut HyperslabWriter, src: &SrcArray, first: Option<(usize, [u64; MAX_RANK], usize)>, stats: &mut WriteStats) -> Result<()> {
    let Some((i, at, so)) = first.filter(|_| crate::hdf5::chunk::allocation_pending(t.l, t.dset).unwrap_or(false)) else { return Ok(()) };
    let (n, itemsize) = (t.grid.ndim(), src.layout.itemsize);
    let one = &src.buf[so..so + itemsize];
    if let Some(g) = WriteGuard::new(t.l, t.dset, t.layout, t.mem_type, itemsize)?.as_mut() {
        g.check_row(t.l, i, one)?;
    }
    writer.write(&at[..n], None, &[1; MAX_RANK][..n], one).map_err(|e| {
        Error::new(e.kind, format!("row {i}: its first element, written through libhdf5 first to allocate the dataset's storage (allocation time late): {}", e.message))
    })?;
    stats.hdf5_writes += 1;
    Ok(())
}

/// A reader of chunk regions for partial updates, checked as reads check them (scaleoffset
/// headers libhdf5 1.10 would decode as zeros): see `crate::hdf5::scaleoffset`.
fn guarded_reader<'a>(t: &Target<'a>, itemsize: usize) -> Result<HyperslabReader<'a>> {
    let mut reader = HyperslabReader::new(t.l, t.dset, t.mem_type, itemsize)?;
    if let Some(mut guard) = ReadGuard::new(t.l, t.dset, t.layout, None)? {
        reader.set_check(Box::new(move |l, shape, start, stride, count| guard.check(l, shape, start, stride, count)));
    }
    Ok(reader)
}

/// The chunks of one write through `H5Dwrite`, one at a time ([`ChunkWriter::write_one_chunk`]),
/// and what they need: masked chunks kept (stored by vh5), the stale-mask watch, the
/// scaleoffset guard, scratch buffers and the count of pieces written per row.
struct ChunkWriter<'a> {
    t: &'a Target<'a>,
    ctx: MergeCtx<'a>,
    pieces_per_row: &'a [u32],
    written_per_row: Vec<u32>,
    /// Chunks whose mask is kept (a pipeline vh5 does not encode), by origin: merged and
    /// stored by vh5 ([`super::masked::store_kept`]).
    kept: HashMap<Vec<u64>, KeptMask>,
    /// How the file stores the memory bytes (`rawwrite::file_byte_swap`).
    swap: Option<Option<usize>>,
    /// Chunks stored with mask 0 whose optional filter may fail on the new values: checked
    /// after libhdf5 writes each ([`super::stale_mask`]).
    watch: Option<StaleWatch>,
    reader: HyperslabReader<'a>,
    so_guard: Option<WriteGuard>,
    buf: Vec<u8>,
    covered: Vec<u8>,
    rows_here: Vec<usize>,
}

impl<'a> ChunkWriter<'a> {
    /// Masked chunks this write reaches re-stored unmasked (or the write refused, or their
    /// mask kept), the stale-mask watch set up, then the reader and guard of the chunk loop.
    fn new(t: &'a Target<'a>, ctx: MergeCtx<'a>, pieces_per_row: &'a [u32]) -> Result<ChunkWriter<'a>> {
        let (l, dset, grid, n) = (t.l, t.dset, t.grid, ctx.n);
        let (mut coord, mut origin) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
        let mut origins = Vec::with_capacity(ctx.plan.groups.len() * n);
        for &(chunk, _) in &ctx.plan.groups {
            grid.chunk_coord(chunk, &mut coord[..n]);
            grid.chunk_origin(&coord[..n], &mut origin[..n]);
            origins.extend_from_slice(&origin[..n]);
        }
        let swap = super::rawwrite::file_byte_swap(l, dset, t.mem_type, ctx.src)?;
        let kept = super::masked::unmask_chunks(l, dset, t.layout, grid.shape(), t.file_itemsize, &origins, swap.is_some())?;
        let kept: HashMap<Vec<u64>, KeptMask> = kept.into_iter().map(|k| (k.origin.clone(), k)).collect();
        let watch = StaleWatch::new(l, dset, t.layout, grid.shape(), &origins, n, t.mem_type, swap)?;
        if let Some(w) = watch.as_ref() {
            w.refuse_unchecked(l, dset, &t.layout.filters, |o| kept.contains_key(o))?;
        }
        super::write::written_through_libhdf5(l, dset);
        let itemsize = ctx.src.layout.itemsize;
        let reader = guarded_reader(t, itemsize)?;
        let so_guard = WriteGuard::new(l, dset, t.layout, t.mem_type, itemsize)?;
        let written_per_row = vec![0u32; ctx.table.nslices];
        Ok(ChunkWriter { t, ctx, pieces_per_row, written_per_row, kept, swap, watch, reader, so_guard, buf: Vec::new(), covered: Vec::new(), rows_here: Vec::new() })
    }

    /// Chunk group `gi`: stored by vh5 if its mask is kept; else read first when the rows
    /// cover it in part, merged, checked (edge chunk, scaleoffset) and written through
    /// libhdf5, then noted for the stale-mask watch.
    fn write_one_chunk(&mut self, writer: &mut HyperslabWriter, gi: usize, stats: &mut WriteStats) -> Result<()> {
        let (t, n, itemsize) = (self.t, self.ctx.n, self.ctx.src.layout.itemsize);
        let (l, grid) = (t.l, t.grid);
        let (chunk, group) = self.ctx.group(gi);
        let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
        grid.chunk_coord(chunk, &mut coord[..n]);
        grid.chunk_origin(&coord[..n], &mut origin[..n]);
        grid.chunk_extent(&coord[..n], &mut extent[..n]);
        let (coord, origin, extent) = (&coord[..n], &origin[..n], &extent[..n]);
        let bytes = extent.iter().product::<u64>() as usize * itemsize;
        let mut dense = [0isize; MAX_RANK];
        dense_strides(extent, itemsize, &mut dense);
        if self.buf.len() < bytes {
            crate::mem::resize_zeroed(&mut self.buf, bytes, || format!("chunk {coord:?} (dataset offset {origin:?})"))?;
        }
        let full = self.ctx.covers(group, origin, extent, &mut self.covered)?;
        self.rows_here.clear();
        self.rows_here.extend(group.iter().map(|p| p.row));
        self.rows_here.dedup();
        let rows_here = &self.rows_here;
        let chunk_what = || format!("chunk {coord:?} (dataset elements {origin:?} + {extent:?}, rows {})", ranges(rows_here));
        let fail = |e: Error| report(e, &chunk_what(), &self.written_per_row, self.pieces_per_row);
        if let Some(k) = self.kept.remove(origin) {
            super::masked::store_kept(l, t.dset, k, &self.ctx, group, grid.chunk(), self.swap.flatten(), itemsize).map_err(fail)?;
            stats.chunks_read += 1;
            stats.raw_chunks += 1;
        } else {
            let buf = &mut self.buf[..bytes];
            if !full {
                if t.layout.fill_never {
                    // libhdf5 leaves the buffer as it is for an unallocated chunk, and stores zeros
                    // in the rest of a chunk written in part (H5D__chunk_lock): never the previous
                    // chunk's bytes.
                    buf.fill(0);
                }
                self.reader.read(origin, None, extent, buf).map_err(fail)?;
                stats.chunks_read += 1;
            }
            self.ctx.merge(group, origin, &dense[..n], buf)?;
            if full && crate::hdf5::chunk::is_partial_edge(origin, grid.chunk(), grid.shape()) {
                // libhdf5 reads an edge chunk before writing it, however much of it is written
                self.reader.check_selection(origin, None, extent).map_err(fail)?;
            }
            if let Some(g) = self.so_guard.as_mut() {
                g.check(l, origin, buf).map_err(fail)?;
            }
            writer.write(origin, None, extent, buf).map_err(fail)?;
            if let Some(w) = self.watch.as_mut() {
                w.note(l, t.dset, origin, grid.chunk(), extent, buf, t.file_itemsize).map_err(fail)?;
            }
        }
        stats.chunks_written += 1;
        stats.hdf5_writes += 1;
        for p in group {
            self.written_per_row[p.row] += 1;
        }
        Ok(())
    }

    /// Settle the stale-mask watch (the chunks libhdf5 wrote, even when the chunk loop failed
    /// part-way with `looped`), then return the loop's error first, else the settling's.
    fn settle_watch(&mut self, looped: Result<()>) -> Result<()> {
        let Some(w) = self.watch.as_mut() else { return looped };
        let t = self.t;
        let settled = w.settle(t.l, t.dset, t.grid.chunk(), t.file_itemsize).map_err(|e| Error::new(e.kind, format!("after writing the rows: {}", e.message)));
        looped?;
        settled?;
        Ok(())
    }
}
