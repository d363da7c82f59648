//! `write_many_slices`: copy many slices of a caller-owned array into an HDF5 dataset
//! (numpy -> HDF5), with the row semantics of [`super::geometry`]: `src_*` index the ARRAY,
//! `dst_*` the DATASET.
//!
//! Strategy, under ONE libhdf5 lock for the whole call, after every row has been validated:
//! - **Chunked datasets** (with or without filters): the rows' destination selections are cut
//!   by the chunk grid ([`super::chunks::ChunkGrid`]) and the pieces grouped by chunk, keeping
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

use super::chunks::ChunkGrid;
use super::copy::copy_strided_runs;
use super::geometry::{row_named, ArrayLayout, Row, SliceTable, MAX_RANK};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::hdf5::dataset::{dataset_info, expect_kind, HyperslabReader, Layout};
use crate::hdf5::error::session;
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::H5Lock;
use super::transfer::{check_array, memory_type, parse_flags, Direction};
use crate::hdf5::types::classify;
use crate::hdf5::write::{file_is_writable, HyperslabWriter};

/// A caller-owned source: its whole buffer, the layout of the array inside it, the dtype.
pub struct SrcArray<'a> {
    pub buf: &'a [u8],
    pub layout: ArrayLayout,
    pub dtype: Dtype,
}

/// What a write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Rows that wrote something.
    pub rows_written: usize,
    /// Rows skipped (a zero count, or clipped to zero with [`SLICES_CLIP`]).
    pub rows_skipped: usize,
    /// Elements written (overlapping destinations counted each time).
    pub elements: u64,
    /// `H5Dwrite` calls made.
    pub hdf5_writes: usize,
    /// Chunked datasets: chunks written (each touched chunk once).
    pub chunks_written: usize,
    /// Chunked datasets: chunks read first because the rows covered them only in part (raw
    /// writes: also stored edge chunks covered entirely, whose bytes outside the extent are
    /// kept).
    pub chunks_read: usize,
    /// Chunked filtered datasets: chunks whose filters vh5 ran itself and stored raw with
    /// `H5Dwrite_chunk` (counted in `chunks_written` and `hdf5_writes` too).
    pub raw_chunks: usize,
}

const NAMES: [&str; 2] = ["source array", "dataset"];

/// Write every row of `table` from `src` into dataset `dset` (see the module docs and
/// `vh5_write_many_slices` in the C header for the exact semantics and errors).
pub fn write_many_slices(dset: hid_t, src: &SrcArray, table: &SliceTable, flags: u32) -> Result<WriteStats> {
    super::options::check_env()?;
    let (clip, convert) = parse_flags(flags)?;
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
    // SAFETY: dset is an open dataset (checked); lock held.
    let ftype = Handle::new(l, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
    let finfo = classify(l, ftype.id())?;
    let mem = memory_type(l, Direction::Write, ftype.id(), &finfo, src.dtype, src.layout.itemsize, convert)?;
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
            write_chunked(l, dset, mem.id(), &mut writer, &grid, src, table, clip, &mut stats)?;
        }
        _ => write_rows(&mut writer, &dshape, src, table, clip, &mut stats)?,
    }
    Ok(stats)
}

/// Row ranges as text: "0-3, 7, 9-12" (or "none").
pub(super) fn ranges(rows: &[usize]) -> String {
    if rows.is_empty() {
        return "none".into();
    }
    let mut out = String::new();
    let mut i = 0;
    while i < rows.len() {
        let mut j = i;
        while j + 1 < rows.len() && rows[j + 1] == rows[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        if j == i {
            out.push_str(&rows[i].to_string());
        } else {
            out.push_str(&format!("{}-{}", rows[i], rows[j]));
        }
        i = j + 1;
    }
    out
}

/// Wrap a libhdf5 failure with what had been written (libhdf5 errors keep their kind).
fn failed(e: Error, what: &str, done: &[usize], partial: &[usize]) -> Error {
    Error::new(
        e.kind,
        format!(
            "write failed part-way at {what}; rows written completely before the failure: {}; rows written in part: {}; no other row was written. Cause: {}",
            ranges(done),
            ranges(partial),
            e.message
        ),
    )
}

/// Dense C-order byte strides of `count` elements of `itemsize`.
pub(super) fn dense_strides(count: &[u64], itemsize: usize, out: &mut [isize]) {
    let mut acc = itemsize as isize;
    for j in (0..count.len()).rev() {
        out[j] = acc;
        acc *= count[j] as isize;
    }
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

/// Contiguous / compact / virtual datasets: one H5Dwrite per row.
fn write_rows(writer: &mut HyperslabWriter, dshape: &[u64], src: &SrcArray, table: &SliceTable, clip: bool, stats: &mut WriteStats) -> Result<()> {
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
        let res = if no_src_steps && c_contiguous_block(&src.layout.strides, &r.count[..n], itemsize) {
            writer.write(&r.dst_start[..n], stride, &r.count[..n], &src.buf[so..so + bytes])
        } else {
            if scratch.len() < bytes {
                super::alloc::resize_zeroed(&mut scratch, bytes, || format!("row {i}: staging buffer"))?;
            }
            for j in 0..n {
                counts[j] = r.count[j] as usize;
                ss[j] = src.layout.strides[j] as isize * r.src_step[j] as isize; // Row: count-1 steps are 1
            }
            dense_strides(&r.count[..n], itemsize, &mut dense);
            copy_strided_runs(src.buf, so, &ss[..n], &mut scratch[..bytes], 0, &dense[..n], &counts[..n], itemsize)?;
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

/// One piece of a row inside one chunk: sort key (chunk linear index, then order of
/// creation, which is row order), the row and where the geometry lives in `geo`.
#[derive(Clone, Copy)]
pub(super) struct PieceRef {
    pub chunk: u64,
    pub seq: u32,
    pub row: u32,
}

/// Chunked datasets: each touched chunk read (only if partially covered), merged, written once.
#[allow(clippy::too_many_arguments)]
fn write_chunked(
    l: &H5Lock,
    dset: hid_t,
    mem_type: hid_t,
    writer: &mut HyperslabWriter,
    grid: &ChunkGrid,
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
    // 1. Cut every row by the chunk grid. geo holds, per piece, k0[n] then count[n].
    let mut pieces: Vec<PieceRef> = Vec::new();
    let mut geo: Vec<u64> = Vec::new();
    let mut pieces_per_row = vec![0u32; table.nslices];
    for (i, per_row) in pieces_per_row.iter_mut().enumerate() {
        let Some(r) = row_named(table, i, &src.layout.shape, &dshape, clip, NAMES)? else { continue };
        stats.rows_written += 1;
        stats.elements += r.elements();
        grid.for_each_piece(&r.dst_start[..n], &r.count[..n], &r.dst_step[..n], |p| {
            pieces.push(PieceRef { chunk: grid.linear_index(p.chunk_coord), seq: pieces.len() as u32, row: i as u32 });
            geo.extend_from_slice(p.row_offset);
            geo.extend_from_slice(p.count);
            *per_row += 1;
        });
    }
    if pieces.len() > u32::MAX as usize {
        bail!(Unsupported, "{} row pieces: at most {} per call", pieces.len(), u32::MAX);
    }
    pieces.sort_unstable_by_key(|p| (p.chunk, p.seq));

    // 2. One chunk at a time: raw (filters run by vh5 on worker threads) when vh5 implements
    //    the whole pipeline and no type conversion is needed, else through H5Dwrite.
    let ctx = MergeCtx { table, src, dshape: &dshape, clip, geo: &geo, n };
    if let Some(raw) = super::rawwrite::raw_plan(l, dset, mem_type, src)? {
        let mut reader = HyperslabReader::new(l, dset, mem_type, itemsize)?;
        return super::rawwrite::write_chunks_raw(l, dset, &raw, grid, &ctx, &pieces, &pieces_per_row, &mut reader, stats);
    }
    let mut reader = HyperslabReader::new(l, dset, mem_type, itemsize)?;
    let fill_never = crate::hdf5::chunk::chunk_layout(l, dset)?.fill_never;
    let mut buf: Vec<u8> = Vec::new();
    let mut covered: Vec<u8> = Vec::new();
    let mut written_per_row = vec![0u32; table.nslices];
    let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
    let mut dense = [0isize; MAX_RANK];
    let mut rows_here: Vec<usize> = Vec::new();
    for group in chunk_groups(&pieces) {
        let group = &pieces[group];
        grid.chunk_coord(group[0].chunk, &mut coord[..n]);
        grid.chunk_origin(&coord[..n], &mut origin[..n]);
        grid.chunk_extent(&coord[..n], &mut extent[..n]);
        let elems: u64 = extent[..n].iter().product();
        let bytes = elems as usize * itemsize;
        dense_strides(&extent[..n], itemsize, &mut dense);
        if buf.len() < bytes {
            super::alloc::resize_zeroed(&mut buf, bytes, || format!("chunk {:?} (dataset offset {:?})", &coord[..n], &origin[..n]))?;
        }
        let full = ctx.covers(group, &origin[..n], &extent[..n], &mut covered)?;
        rows_here.clear();
        rows_here.extend(group.iter().map(|p| p.row as usize));
        rows_here.dedup();
        let chunk_what = || format!("chunk {:?} (dataset elements {:?} + {:?}, rows {})", &coord[..n], &origin[..n], &extent[..n], ranges(&rows_here));
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
        if let Err(e) = writer.write(&origin[..n], None, &extent[..n], &buf[..bytes]) {
            return Err(report(e, &chunk_what(), &written_per_row, &pieces_per_row));
        }
        stats.chunks_written += 1;
        stats.hdf5_writes += 1;
        for p in group {
            written_per_row[p.row as usize] += 1;
        }
    }
    Ok(())
}

/// Index ranges of `pieces` (sorted by chunk) that share a chunk.
pub(super) fn chunk_groups(pieces: &[PieceRef]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut a = 0;
    while a < pieces.len() {
        let mut b = a + 1;
        while b < pieces.len() && pieces[b].chunk == pieces[a].chunk {
            b += 1;
        }
        out.push(a..b);
        a = b;
    }
    out
}

/// What merging row pieces into a chunk buffer needs (shared, read-only: usable from worker
/// threads).
pub(super) struct MergeCtx<'a> {
    pub table: &'a SliceTable<'a>,
    pub src: &'a SrcArray<'a>,
    pub dshape: &'a [u64],
    pub clip: bool,
    pub geo: &'a [u64],
    pub n: usize,
}

impl MergeCtx<'_> {
    fn row_of(&self, p: &PieceRef, cached: &mut Option<(usize, Row)>) -> Result<Row> {
        let i = p.row as usize;
        if let Some((ci, r)) = cached {
            if *ci == i {
                return Ok(*r);
            }
        }
        let r = row_named(self.table, i, &self.src.layout.shape, self.dshape, self.clip, NAMES)?.ok_or_else(|| err!(InvalidArgument, "internal: row {i} vanished"))?;
        *cached = Some((i, r));
        Ok(r)
    }

    /// Whether the union of the pieces of `group` covers every element of the chunk region
    /// `origin` + `extent` (clipped to the dataset). `covered` is scratch.
    pub(super) fn covers(&self, group: &[PieceRef], origin: &[u64], extent: &[u64], covered: &mut Vec<u8>) -> Result<bool> {
        let (n, geo) = (self.n, self.geo);
        let elems: u64 = extent.iter().product();
        let total: u64 = group.iter().map(|p| geo_count(geo, p.seq, n).iter().product::<u64>()).sum();
        if total < elems {
            return Ok(false);
        }
        if group.iter().any(|p| geo_count(geo, p.seq, n) == extent) {
            return Ok(true);
        }
        covered.clear();
        covered.resize(elems as usize, 0);
        let mut ncov = 0u64;
        let mut cached = None;
        for p in group {
            let r = self.row_of(p, &mut cached)?;
            let (k0, pc) = (geo_k0(geo, p.seq, n), geo_count(geo, p.seq, n));
            for_each_index(pc, |t| {
                let mut lin = 0u64;
                for j in 0..n {
                    let pos = r.dst_start[j] + (k0[j] + t[j]) * r.dst_step[j] - origin[j];
                    lin = lin * extent[j] + pos;
                }
                let c = &mut covered[lin as usize];
                ncov += (*c == 0) as u64;
                *c = 1;
            });
        }
        Ok(ncov == elems)
    }

    /// Copy the pieces of `group`, in row order, from the source array into `buf`, a chunk
    /// buffer whose element at dataset coordinates `origin` is at byte 0, with byte strides
    /// `dense`.
    pub(super) fn merge(&self, group: &[PieceRef], origin: &[u64], dense: &[isize], buf: &mut [u8]) -> Result<()> {
        let n = self.n;
        let src = self.src;
        let (mut counts, mut ss, mut cs) = ([0usize; MAX_RANK], [0isize; MAX_RANK], [0isize; MAX_RANK]);
        let mut cached = None;
        for p in group {
            let r = self.row_of(p, &mut cached)?;
            let (k0, pc) = (geo_k0(self.geo, p.seq, n), geo_count(self.geo, p.seq, n));
            let mut sidx = [0u64; MAX_RANK];
            let mut coff = 0usize;
            for j in 0..n {
                sidx[j] = r.src_start[j] + k0[j] * r.src_step[j];
                let pos = r.dst_start[j] + k0[j] * r.dst_step[j] - origin[j];
                coff += pos as usize * dense[j] as usize;
                counts[j] = pc[j] as usize;
                // One element on this axis: never stepped along (the steps may be huge).
                let one = pc[j] <= 1;
                ss[j] = if one { 0 } else { src.layout.strides[j] as isize * r.src_step[j] as isize };
                cs[j] = if one { 0 } else { dense[j] * r.dst_step[j] as isize };
            }
            let so = src.layout.byte_offset(&sidx[..n]);
            copy_strided_runs(src.buf, so, &ss[..n], buf, coff, &cs[..n], &counts[..n], src.layout.itemsize)?;
        }
        Ok(())
    }
}

fn geo_k0(geo: &[u64], seq: u32, n: usize) -> &[u64] {
    let b = seq as usize * 2 * n;
    &geo[b..b + n]
}

fn geo_count(geo: &[u64], seq: u32, n: usize) -> &[u64] {
    let b = seq as usize * 2 * n + n;
    &geo[b..b + n]
}

/// The failure message for a chunked write: rows complete / in part from the piece counts.
pub(super) fn report(e: Error, what: &str, written: &[u32], total: &[u32]) -> Error {
    let done: Vec<usize> = (0..total.len()).filter(|&i| total[i] > 0 && written[i] == total[i]).collect();
    let partial: Vec<usize> = (0..total.len()).filter(|&i| written[i] > 0 && written[i] < total[i]).collect();
    failed(e, what, &done, &partial)
}

/// Call `f` with every index `t` (C order) of a block of `count` elements per axis.
fn for_each_index(count: &[u64], mut f: impl FnMut(&[u64])) {
    let n = count.len();
    if count.contains(&0) {
        return;
    }
    let mut t = [0u64; MAX_RANK];
    loop {
        f(&t[..n]);
        let mut j = n;
        loop {
            if j == 0 {
                return;
            }
            j -= 1;
            t[j] += 1;
            if t[j] < count[j] {
                break;
            }
            t[j] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges() {
        assert_eq!(ranges(&[]), "none");
        assert_eq!(ranges(&[0, 1, 2, 3, 7, 9, 10, 11, 12]), "0-3, 7, 9-12");
        assert_eq!(ranges(&[5]), "5");
    }

    #[test]
    fn index_odometer() {
        let mut v = vec![];
        for_each_index(&[2, 3], |t| v.push((t[0], t[1])));
        assert_eq!(v, vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
        let mut k = 0;
        for_each_index(&[], |_| k += 1);
        assert_eq!(k, 1);
        for_each_index(&[2, 0], |_| k += 1);
        assert_eq!(k, 1);
    }
}
