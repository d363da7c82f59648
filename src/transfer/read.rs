//! `read_many_slices`: copy many hyperslabs of an HDF5 dataset into a caller-owned array.
//!
//! Baseline strategy (the row path), per row, with the libhdf5 lock held from the first row to
//! the last (chunked datasets go to the planner, [`super::chunked`], which releases the lock
//! while chunks are decoded and scattered):
//! - one `H5Dread` of the row's covering hyperslab: on outer axes the file-side step goes to
//!   libhdf5 as the hyperslab stride; on the inner (last) axis vh5 reads the covering span
//!   `(count-1)*step + 1` and applies the step while copying (libhdf5 is far slower at strided
//!   inner selections). Exceptions: when that would read more than [`MAX_WASTE_BYTES`] of
//!   unused elements, or the step exceeds the chunk's extent on that axis (the span would
//!   cross chunks holding none of the row's elements), the inner step goes to libhdf5 too;
//! - when the row has no steps and its destination block is C-contiguous in the caller's array
//!   the read goes straight into the caller's buffer; otherwise into a scratch buffer kept
//!   across rows, then the copy engine scatters it into the destination;
//! - the file and memory dataspaces are created once per call and reselected per row.
//!
//! Every row is validated before the first read, so an invalid table writes nothing. A
//! libhdf5 failure in the middle of the rows (e.g. a corrupt chunk) leaves earlier rows written.

use hdf5_sys::h5i::{hid_t, H5I_type_t};

use super::checks::{check_array, memory_type, parse_flags, DatasetType, Direction, Flags};
pub use super::checks::{SLICES_CLIP, SLICES_CONVERT, SLICES_SWAPPED};
use super::chunked::Convert;
use super::options::{self, PlannerMode};
pub use super::rows::MAX_WASTE_BYTES;
use super::rows::{raw_kind, read_row, swap_word, Ctx, RawKind};
pub use super::stats::ReadStats;
use crate::dtype::Dtype;
use crate::engine::scatter::DstPtr;
use crate::error::Result;
use crate::geometry::{check_rows, row, ArrayLayout, SliceTable};
use crate::hdf5::chunk::fill_element;
use crate::hdf5::dataset::{expect_kind, HyperslabReader};
use crate::hdf5::error::session;
use crate::hdf5::meta::dataset_meta;

/// A caller-owned destination: its whole buffer, the layout of the array inside it, and the
/// element type.
pub struct DstArray<'a> {
    pub buf: &'a mut [u8],
    pub layout: ArrayLayout,
    pub dtype: Dtype,
}

/// Copy every row of `table` from dataset `dset` into `dst` (see the module docs and
/// `vh5_read_many_slices` in the C header for the exact semantics and errors).
pub fn read_many_slices(dset: hid_t, dst: &mut DstArray, table: &SliceTable, flags: u32) -> Result<ReadStats> {
    read_rows(dset, dst, table, flags).map_err(|e| super::checks::transfer_error(dset, e))
}

fn read_rows(dset: hid_t, dst: &mut DstArray, table: &SliceTable, flags: u32) -> Result<ReadStats> {
    options::check_env()?;
    let fl = parse_flags(Direction::Read, flags)?;
    let Flags { clip, swapped, .. } = fl;
    let n = dst.layout.shape.len();
    check_array(Direction::Read, table, &dst.layout, dst.dtype, dst.buf.len())?;
    dst.layout.validate()?;

    let s = session();
    let l = s.lock();
    expect_kind(l, dset, &[H5I_type_t::H5I_DATASET], "dataset")?;
    let meta = dataset_meta(l, dset)?;
    crate::hdf5::external::check_allowed(l, dset, meta.elsewhere.as_deref())?;
    crate::hdf5::filter_support::check_pipeline(l, dset, &meta.layout, false)?;
    let (ftype, finfo) = (&meta.ftype, &meta.finfo);
    let mem = memory_type(l, Direction::Read, DatasetType { dset, ftype: ftype.id(), finfo }, dst.dtype, dst.layout.itemsize, fl)?;
    let itemsize = dst.layout.itemsize;
    let mut reader = match meta.space_cache() {
        Some(slot) => HyperslabReader::with_cache(l, dset, mem.id(), itemsize, slot)?,
        None => HyperslabReader::new(l, dset, mem.id(), itemsize)?,
    };
    if let Some(mut guard) = crate::hdf5::chunk_guard::ReadGuard::new(l, dset, &meta.layout, meta.guarded_chunks())? {
        reader.set_check(Box::new(move |l, shape, start, stride, count| guard.check(l, shape, start, stride, count)));
    }
    let src_shape: Vec<u64> = reader.shape().to_vec();
    if src_shape.len() != n {
        bail!(InvalidArgument, "dimensionality mismatch: the dataset has {} axes, the destination {n}", src_shape.len());
    }
    let mut stats = ReadStats::default();
    if table.nslices == 0 || dst.layout.is_empty() {
        return Ok(stats);
    }
    let dst_shape = dst.layout.shape.clone();
    // Never-written storage under fill time "never": libhdf5 leaves the destination as it
    // is; vh5 delivers the fill value there (see `Ctx::fill`). Known once per call.
    let fill = if meta.layout.fill_never { Some(fill_element(l, dset, mem.id(), itemsize)?) } else { None };

    if n == 0 {
        let to_run = check_rows(table, &src_shape, &dst_shape, clip)?;
        stats.rows_skipped = table.nslices - to_run;
        // Scalar dataset: every row copies the one element.
        let off = dst.layout.offset;
        if let Some(f) = &fill {
            dst.buf[off..off + itemsize].copy_from_slice(f);
        }
        reader.read(&[], None, &[], &mut dst.buf[off..off + itemsize])?;
        stats.rows_read = table.nslices;
        stats.elements = table.nslices as u64;
        return Ok(stats);
    }

    let inner_chunk = meta.layout.chunk.as_ref().and_then(|c| c.last().copied()).unwrap_or(u64::MAX);
    let ctx = Ctx { itemsize, layout: &dst.layout, dst: DstPtr::new(dst.buf), src_shape: &src_shape, dst_shape: &dst_shape, clip, fill: fill.as_deref(), swap: None, inner_chunk };
    let mode = options::planner_mode();
    if let Some(chunk) = &meta.layout.chunk {
        // A pipeline vh5 decodes is decoded by vh5 in every mode (a corrupt chunk is refused
        // the same way everywhere): no row path, no one-row fast path.
        // (Partial edge chunks stored unfiltered, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS, skip the
        // pipeline in vh5's decoder as in libhdf5's.)
        let checked = crate::hdf5::chunk::vh5_decodes(&meta.layout.filters);
        if checked || (mode != PlannerMode::Rows && !(mode == PlannerMode::Auto && single_small_row(table, &ctx, chunk)?)) {
            let raw = raw_kind(l, ftype.id(), mem.id(), finfo, dst.dtype, itemsize, swapped);
            let convert = Convert { ftype: ftype.id(), mtype: mem.id(), file_itemsize: finfo.file_itemsize };
            // Validates every row before reading anything (as `check_rows` below).
            if let Some(st) = super::chunked::read_chunked(
                l,
                dset,
                &mut reader,
                table,
                &ctx,
                chunk,
                &meta.layout.filters,
                meta.layout.dont_filter_partial,
                raw,
                Some(convert),
                mode,
                meta.chunk_cache(options::chunk_cache_bytes),
                meta.chunk_index(),
                &mut stats,
            )? {
                return Ok(st);
            }
        }
    }
    // A destination in the other byte order and a file type in native order: the rows path
    // reads native bytes (libhdf5 copies them without converting) and swaps each row's
    // elements in place, which costs less than libhdf5 converting into the swapped type.
    let native_mem = if swapped && finfo.dtype == Some(dst.dtype) { Some(crate::hdf5::types::mem_type_of(l, finfo, dset)?) } else { None };
    let mut row_fill = None;
    let mut ctx = ctx;
    if let Some(m) = &native_mem {
        if raw_kind(l, ftype.id(), m.id(), finfo, dst.dtype, itemsize, false) == Some(RawKind::Same) {
            if let Some(w) = swap_word(dst.dtype, itemsize) {
                reader.set_mem_type(m.id());
                if meta.layout.fill_never {
                    row_fill = Some(fill_element(l, dset, m.id(), itemsize)?);
                }
                ctx.swap = Some(w);
            }
        }
    }
    if ctx.swap.is_some() {
        ctx.fill = row_fill.as_deref();
    }
    let to_run = check_rows(table, &src_shape, &dst_shape, clip)?;
    stats.rows_skipped = table.nslices - to_run;
    let mut scratch: Vec<u8> = Vec::new();
    for i in 0..table.nslices {
        let Some(r) = row(table, i, &src_shape, &dst_shape, clip)? else { continue };
        stats.rows_read += 1;
        stats.elements += r.elements();
        // SAFETY: single-threaded here; `ctx.dst` is the exclusive borrow of `dst.buf`.
        if unsafe { read_row(&mut reader, &r, i, &ctx, &mut scratch)? } {
            stats.direct_reads += 1;
        }
    }
    Ok(stats)
}

/// Fast path of the `auto` rule for one-row calls (no planning; never for pipelines vh5
/// decodes itself, which are always decoded by vh5: see `chunked::read_chunked`): a single
/// row touching at most 4 chunks reads through libhdf5 (one `H5Dread` straight into place,
/// libhdf5's chunk cache may hold the chunks of repeated small calls). Rows touching more
/// chunks go to the planner, whose cost rule weighs libhdf5's per-chunk overhead (~8 us per
/// chunk of a whole read through libhdf5 1.10 against ~4 us for a raw fetch: 16,384
/// unfiltered 128-byte chunks read whole were 6.6x faster in `chunks` mode than in `rows`
/// mode, scripts/bench_scaling.py), and so do rows with a file-side step (libhdf5 walks
/// stepped selections run by run).
fn single_small_row(table: &SliceTable, ctx: &Ctx, chunk: &[u64]) -> Result<bool> {
    if table.nslices != 1 {
        return Ok(false);
    }
    let Some(r) = row(table, 0, ctx.src_shape, ctx.dst_shape, ctx.clip)? else { return Ok(true) };
    if r.src_step[..r.ndim].iter().any(|&s| s > 1) {
        // A file-side step: the planner weighs libhdf5's stepped read against reading the
        // chunks and stepping in the copy engine (`chunked::decide`).
        return Ok(false);
    }
    let mut touched = 1u64;
    for (j, &c) in chunk.iter().enumerate().take(r.ndim) {
        let first = r.src_start[j] / c;
        let last = (r.src_start[j] + (r.count[j] - 1) * r.src_step[j]) / c;
        touched = touched.saturating_mul(last - first + 1);
    }
    Ok(touched <= 4)
}
