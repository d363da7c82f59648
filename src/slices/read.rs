//! `read_many_slices`: copy many hyperslabs of an HDF5 dataset into a caller-owned array.
//!
//! Baseline strategy, per row, under ONE lock for the whole call:
//! - one `H5Dread` of the row's covering hyperslab: on outer axes the file-side step goes to
//!   libhdf5 as the hyperslab stride; on the inner (last) axis vh5 reads the covering span
//!   `(count-1)*step + 1` and applies the step while copying (libhdf5 is far slower at strided
//!   inner selections). Exception: when that would read more than [`MAX_WASTE_BYTES`] of
//!   unused elements, the inner step goes to libhdf5 too (bounded memory);
//! - when the row has no steps and its destination block is C-contiguous in the caller's array
//!   the read goes straight into the caller's buffer; otherwise into a scratch buffer kept
//!   across rows, then the copy engine scatters it into the destination;
//! - the file and memory dataspaces are created once per call and reselected per row.
//!
//! Every row is validated before the first read, so an invalid table writes nothing. A
//! libhdf5 failure in the middle of the rows (e.g. a corrupt chunk) leaves earlier rows written.

use hdf5_sys::h5i::{hid_t, H5I_type_t};

use super::geometry::{check_rows, row, ArrayLayout, Row, SliceTable, MAX_RANK};
use super::options::{self, PlannerMode};
use super::scatter::DstPtr;
use crate::dtype::{ByteOrder, Dtype};
use crate::error::Result;
use crate::hdf5::chunk::{fill_element, fill_with, types_equal};
use crate::hdf5::meta::dataset_meta;
use crate::hdf5::dataset::{expect_kind, HyperslabReader};
use crate::hdf5::error::session;
use super::chunked::Convert;
use super::transfer::{check_array, memory_type, parse_flags, Direction};

/// Flag: versioned-hdf5 semantics: counts silently clipped to both extents, rows that end up
/// copying nothing are skipped.
pub const SLICES_CLIP: u32 = 1;
/// Flag: let libhdf5 convert the file type into the destination dtype.
pub const SLICES_CONVERT: u32 = 2;

/// Above this many bytes of unused elements per row, the inner-axis step is given to libhdf5.
pub const MAX_WASTE_BYTES: u64 = 1 << 20;

/// A caller-owned destination: its whole buffer, the layout of the array inside it, and the
/// element type.
pub struct DstArray<'a> {
    pub buf: &'a mut [u8],
    pub layout: ArrayLayout,
    pub dtype: Dtype,
}

/// What a call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Rows that copied something.
    pub rows_read: usize,
    /// Rows skipped (a zero count, or clipped to zero with [`SLICES_CLIP`]).
    pub rows_skipped: usize,
    /// Elements copied (counting overlapping destinations each time).
    pub elements: u64,
    /// Rows whose hyperslab was read straight into the caller's buffer.
    pub direct_reads: usize,
    /// Chunks read whole once by the planner (raw or through libhdf5).
    pub chunks_read: usize,
    /// Of those, chunks read raw (`H5Dread_chunk`) and decoded by vh5.
    pub raw_chunks: usize,
    /// Row pieces read with their own `H5Dread` inside planned calls (chunks where a whole
    /// read does not pay) plus rows run in row order because their destinations overlap.
    pub hdf5_reads: usize,
    /// Whole chunks served by the dataset's decoded-chunk cache (no fetch, no decode;
    /// counted in `chunks_read` and `raw_chunks` too).
    pub cache_hits: usize,
    /// Raw chunk fetches that looked in the cache and did not find the chunk.
    pub cache_misses: usize,
}

/// Copy every row of `table` from dataset `dset` into `dst` (see the module docs and
/// `vh5_read_many_slices` in the C header for the exact semantics and errors).
pub fn read_many_slices(dset: hid_t, dst: &mut DstArray, table: &SliceTable, flags: u32) -> Result<ReadStats> {
    options::check_env()?;
    let (clip, convert) = parse_flags(flags)?;
    let n = dst.layout.shape.len();
    check_array(Direction::Read, table, &dst.layout, dst.dtype, dst.buf.len())?;
    dst.layout.validate()?;

    let s = session();
    let l = s.lock();
    expect_kind(l, dset, &[H5I_type_t::H5I_DATASET], "dataset")?;
    let meta = dataset_meta(l, dset)?;
    crate::hdf5::external::check_allowed(l, dset, meta.elsewhere.as_deref())?;
    let (ftype, finfo) = (&meta.ftype, &meta.finfo);
    let mem = memory_type(l, Direction::Read, ftype.id(), finfo, dst.dtype, dst.layout.itemsize, convert)?;
    let itemsize = dst.layout.itemsize;
    let mut reader = match meta.space_cache() {
        Some(slot) => HyperslabReader::with_cache(l, dset, mem.id(), itemsize, slot)?,
        None => HyperslabReader::new(l, dset, mem.id(), itemsize)?,
    };
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

    let ctx = Ctx { itemsize, layout: &dst.layout, dst: DstPtr::new(dst.buf), src_shape: &src_shape, dst_shape: &dst_shape, clip, fill: fill.as_deref() };
    let mode = options::planner_mode();
    if let Some(chunk) = &meta.layout.chunk {
        let filtered = !meta.layout.filters.is_empty();
        // A pipeline vh5 decodes is decoded by vh5 in every mode (a corrupt chunk is refused
        // the same way everywhere): no row path, no one-row fast path.
        // (Partial edge chunks stored unfiltered, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS, skip the
        // pipeline in vh5's decoder as in libhdf5's.)
        let checked = super::chunked::vh5_decodes(&meta.layout.filters);
        if checked || (mode != PlannerMode::Rows && !(mode == PlannerMode::Auto && single_small_row(table, &ctx, chunk, filtered)?)) {
            let raw = raw_kind(l, ftype.id(), mem.id(), finfo, dst.dtype, itemsize);
            let convert = Convert { ftype: ftype.id(), mtype: mem.id(), file_itemsize: finfo.file_itemsize };
            // Validates every row before reading anything (as `check_rows` below).
            if let Some(st) = super::chunked::read_chunked(l, dset, &mut reader, table, &ctx, chunk, &meta.layout.filters, meta.layout.dont_filter_partial, raw, Some(convert), mode, meta.chunk_cache(options::chunk_cache_bytes), &mut stats)? {
                return Ok(st);
            }
        }
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
/// decodes itself, which are always decoded by vh5: see `chunked::read_chunked`): a single row reads its
/// pieces through libhdf5 when the data is unfiltered (one `H5Dread` straight into place
/// beats fetching whole chunks unless the row covers them, where both cost the same) or when
/// it touches at most 4 chunks (the planner's rule for small filtered calls); never when the
/// row has a file-side step (libhdf5 walks stepped selections run by run: the planner's
/// cost rule decides).
fn single_small_row(table: &SliceTable, ctx: &Ctx, chunk: &[u64], filtered: bool) -> Result<bool> {
    if table.nslices != 1 {
        return Ok(false);
    }
    let Some(r) = row(table, 0, ctx.src_shape, ctx.dst_shape, ctx.clip)? else { return Ok(true) };
    if r.src_step[..r.ndim].iter().any(|&s| s > 1) {
        // A file-side step: the planner weighs libhdf5's stepped read against reading the
        // chunks and stepping in the copy engine (`chunked::decide`).
        return Ok(false);
    }
    if !filtered {
        return Ok(true);
    }
    let mut touched = 1u64;
    for j in 0..r.ndim {
        let first = r.src_start[j] / chunk[j];
        let last = (r.src_start[j] + (r.count[j] - 1) * r.src_step[j]) / chunk[j];
        touched = touched.saturating_mul(last - first + 1);
    }
    Ok(touched <= 4)
}

/// What a call knows about its destination and extents, shared by the row and chunk paths.
pub(crate) struct Ctx<'a> {
    pub itemsize: usize,
    pub layout: &'a ArrayLayout,
    pub dst: DstPtr,
    pub src_shape: &'a [u64],
    pub dst_shape: &'a [u64],
    pub clip: bool,
    /// `Some(element)` when the dataset's never-written storage reads as "nothing" in
    /// libhdf5 (fill time never, see [`crate::hdf5::chunk::ChunkLayout::fill_never`]):
    /// every buffer a `H5Dread` fills is first set to this element (the dataset's fill value
    /// in the memory type, zeros when none is defined), so elements of never-written chunks
    /// come out as the fill value on every path, never as another row's or chunk's bytes.
    pub fill: Option<&'a [u8]>,
}

/// How the stored bytes of an element relate to the memory type vh5 reads with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawKind {
    /// Identical bytes (`H5Tequal`).
    Same,
    /// Same type in the other byte order: reverse every word of this many bytes.
    Swap(usize),
}

/// Whether raw chunk bytes can be used (possibly byte-swapped) instead of libhdf5's type
/// conversion; `None` = let libhdf5 convert (H5Dread of the chunk region).
fn raw_kind(l: &crate::hdf5::lock::H5Lock, ftype: hid_t, mtype: hid_t, finfo: &crate::hdf5::TypeInfo, want: Dtype, itemsize: usize) -> Option<RawKind> {
    if finfo.file_itemsize != itemsize || finfo.mem_itemsize != itemsize {
        return None;
    }
    if types_equal(l, ftype, mtype) {
        // Identical types (H5Tequal compares every field, normalisation and padding).
        return Some(RawKind::Same);
    }
    let native = if cfg!(target_endian = "little") { ByteOrder::Little } else { ByteOrder::Big };
    let d = finfo.dtype?;
    if d == want && finfo.plain && itemsize == 1 && matches!(d, Dtype::Int8 | Dtype::UInt8 | Dtype::Bool) {
        // A 1-byte type "in big-endian order" has the same bytes.
        return Some(RawKind::Same);
    }
    if d != want || !finfo.plain || finfo.byte_order.is_none() || finfo.byte_order == Some(native) {
        return None;
    }
    match d {
        Dtype::Int16 | Dtype::Int32 | Dtype::Int64 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64 | Dtype::Float16 | Dtype::Float32 | Dtype::Float64 => {
            Some(RawKind::Swap(itemsize))
        }
        Dtype::Complex64 | Dtype::Complex128 => Some(RawKind::Swap(itemsize / 2)),
        _ => None,
    }
}

/// Read one row (or a piece of one) with one `H5Dread` and scatter it (the baseline path):
/// - on outer axes the file-side step goes to libhdf5 as the hyperslab stride; on the inner
///   axis vh5 reads the covering span and steps while copying, unless that would read more
///   than [`MAX_WASTE_BYTES`] of unused elements (then libhdf5 steps: bounded memory);
/// - with no steps and a C-contiguous destination block the read goes straight into the
///   destination; otherwise into `scratch`, then the copy engine scatters it.
///
/// Returns whether the read went straight into the destination.
///
/// # Safety
/// No other thread may access the destination elements of this row during the call.
pub(crate) unsafe fn read_row(reader: &mut HyperslabReader, r: &Row, i: usize, ctx: &Ctx, scratch: &mut Vec<u8>) -> Result<bool> {
    let n = r.ndim;
    let itemsize = ctx.itemsize;
    let mut fstart = [0u64; MAX_RANK];
    let mut fstride = [1u64; MAX_RANK];
    let mut fcount = [0u64; MAX_RANK];
    let mut counts = [0usize; MAX_RANK];
    let mut sstrides = [0isize; MAX_RANK];
    let mut dstrides = [0isize; MAX_RANK];
    let last = n - 1;
    // File-side selection.
    let mut strided = false;
    for j in 0..n {
        fstart[j] = r.src_start[j];
        fstride[j] = r.src_step[j];
        fcount[j] = r.count[j];
        strided |= r.src_step[j] != 1;
    }
    let c_in = r.count[last];
    let step_in = r.src_step[last];
    let span = (c_in - 1) * step_in + 1; // fits: validated against the extent
    let mut scratch_step_in = 1u64;
    if step_in > 1 {
        let outer: u64 = r.count[..last].iter().product();
        let waste = (span - c_in).saturating_mul(outer).saturating_mul(itemsize as u64);
        if waste <= MAX_WASTE_BYTES {
            fstride[last] = 1;
            fcount[last] = span;
            scratch_step_in = step_in;
            strided = r.src_step[..last].iter().any(|&x| x != 1);
        }
    }
    let stride = if strided { Some(&fstride[..n]) } else { None };
    let block_elems: u64 = fcount[..n].iter().product();
    let block_bytes = usize::try_from(block_elems as u128 * itemsize as u128)
        .map_err(|_| err!(NoMemory, "row {i}: hyperslab of {block_elems} elements does not fit in memory"))?;
    let dst_off = ctx.layout.byte_offset(&r.dst_start[..n]);

    // Direct read: no steps at all and the destination block is dense in C order.
    let no_steps = (0..n).all(|j| r.src_step[j] == 1 && r.dst_step[j] == 1);
    if no_steps && c_contiguous_block(&ctx.layout.strides, &r.count[..n], itemsize) {
        // SAFETY: the block's bytes are exactly this row's destination elements (dense), which
        // the caller guarantees no other thread touches.
        let out = ctx.dst.range(dst_off, block_bytes)?;
        if let Some(f) = ctx.fill {
            fill_with(out, f);
        }
        reader.read(&fstart[..n], None, &fcount[..n], out).map_err(|e| in_row(i, e))?;
        return Ok(true);
    }
    if scratch.len() < block_bytes {
        super::alloc::resize_zeroed(scratch, block_bytes, || format!("row {i}: scratch buffer for its hyperslab"))?;
    }
    if let Some(f) = ctx.fill {
        fill_with(&mut scratch[..block_bytes], f);
    }
    reader.read(&fstart[..n], stride, &fcount[..n], &mut scratch[..block_bytes]).map_err(|e| in_row(i, e))?;
    // Scratch is dense C order of fcount; the inner step (if read as a span) applies here.
    let mut acc = itemsize as isize;
    for j in (0..n).rev() {
        sstrides[j] = acc;
        acc *= fcount[j] as isize;
    }
    sstrides[last] *= scratch_step_in as isize;
    for j in 0..n {
        counts[j] = r.count[j] as usize;
        dstrides[j] = ctx.layout.strides[j] as isize * r.dst_step[j] as isize;
    }
    ctx.dst.copy_in(&scratch[..block_bytes], 0, &sstrides[..n], dst_off, &dstrides[..n], &counts[..n], itemsize)?;
    Ok(false)
}

/// A libhdf5 read failure of row `i`, naming the row.
fn in_row(i: usize, e: crate::error::Error) -> crate::error::Error {
    crate::error::Error::new(e.kind, format!("row {i}: {}", e.message))
}

/// Whether a block of `count` elements with the array's byte `strides` is one dense C-order run.
fn c_contiguous_block(strides: &[i64], count: &[u64], itemsize: usize) -> bool {
    let mut expect = itemsize as i64;
    for j in (0..count.len()).rev() {
        if count[j] > 1 && strides[j] != expect {
            return false;
        }
        expect = expect.saturating_mul(count[j] as i64);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_block_detection() {
        // dst (100, 10) float64: strides (80, 8)
        assert!(c_contiguous_block(&[80, 8], &[10, 10], 8));
        assert!(!c_contiguous_block(&[80, 8], &[10, 5], 8));
        assert!(c_contiguous_block(&[80, 8], &[1, 5], 8));
        assert!(!c_contiguous_block(&[8, 800], &[10, 10], 8)); // Fortran
        assert!(c_contiguous_block(&[8, 800], &[10, 1], 8));
        assert!(!c_contiguous_block(&[-80, 8], &[2, 10], 8));
    }
}
