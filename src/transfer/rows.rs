//! The row path shared by every read: what a call knows about its destination ([`Ctx`]), how
//! stored chunk bytes relate to the memory type ([`RawKind`]) and one `H5Dread` of a row (or a
//! row's piece inside one chunk) scattered into the destination ([`read_row`]). Used by the
//! read orchestration ([`super::read`]) and the chunk pipeline ([`super::chunked`]), which
//! import it and never each other's internals.

use hdf5_sys::h5i::hid_t;

use crate::codec::swap_bytes;
use crate::dtype::{ByteOrder, Dtype};
use crate::engine::copy::dense_strides;
use crate::engine::scatter::DstPtr;
use crate::error::Result;
use crate::geometry::{c_contiguous_block, ArrayLayout, Row, MAX_RANK};
use crate::hdf5::chunk::{fill_with, types_equal};
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::lock::H5Lock;

/// Above this many bytes of unused elements per row, the inner-axis step is given to libhdf5.
pub const MAX_WASTE_BYTES: u64 = 1 << 20;

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
    /// `Some(word)` when rows are read in native order into a destination in the other byte
    /// order: [`read_row`] reverses every `word` bytes of what it read before placing it.
    pub swap: Option<usize>,
    /// The chunk's extent on the last axis of a chunked dataset (`u64::MAX` otherwise):
    /// [`read_row`] reads an inner-axis span only when its step is at most this, so that it
    /// touches no chunk the row does not (see [`span_inner`]).
    pub inner_chunk: u64,
}

/// Whether a row stepping by `step` on the inner axis may read the covering span instead
/// (libhdf5 then reads and decodes every chunk the span crosses): only when the step is at
/// most the chunk's extent `inner_chunk` on that axis, so that every chunk the span crosses
/// holds one of the row's elements. A larger step would make vh5 read chunks between the
/// row's elements, which libhdf5 (stepping itself) never reads: wasted work, and a read
/// that fails on a chunk it should not touch (seed 36 at 8000 cases: a chunk no libhdf5
/// decodes between the columns of a step-3 row; h5py read the row).
pub(crate) fn span_inner(step: u64, inner_chunk: u64) -> bool {
    step > 1 && step <= inner_chunk
}

/// The byte-swap word of a numeric dtype (`itemsize`, half of it for complex), None for
/// types without a byte order.
pub(crate) fn swap_word(d: Dtype, itemsize: usize) -> Option<usize> {
    match d {
        Dtype::Int16 | Dtype::Int32 | Dtype::Int64 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64 | Dtype::Float16 | Dtype::Float32 | Dtype::Float64 => Some(itemsize),
        Dtype::Complex64 | Dtype::Complex128 => Some(itemsize / 2),
        _ => None,
    }
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
/// conversion; `None` = let libhdf5 convert (H5Dread of the chunk region). `swapped`: the
/// destination is in the byte order opposite to the host's (the memory type `mtype` is).
pub(crate) fn raw_kind(l: &H5Lock, ftype: hid_t, mtype: hid_t, finfo: &crate::hdf5::TypeInfo, want: Dtype, itemsize: usize, swapped: bool) -> Option<RawKind> {
    if finfo.file_itemsize != itemsize || finfo.mem_itemsize != itemsize {
        return None;
    }
    if types_equal(l, ftype, mtype) {
        // Identical types (H5Tequal compares every field, normalisation and padding).
        return Some(RawKind::Same);
    }
    let dst_order = match (ByteOrder::NATIVE, swapped) {
        (o, false) => o,
        (ByteOrder::Little, true) => ByteOrder::Big,
        (ByteOrder::Big, true) => ByteOrder::Little,
    };
    let d = finfo.dtype?;
    if d == want && finfo.plain && itemsize == 1 && matches!(d, Dtype::Int8 | Dtype::UInt8 | Dtype::Bool) {
        // A 1-byte type "in big-endian order" has the same bytes.
        return Some(RawKind::Same);
    }
    if d != want || !finfo.plain || finfo.byte_order.is_none() || finfo.byte_order == Some(dst_order) {
        return None;
    }
    swap_word(d, itemsize).map(RawKind::Swap)
}

/// Read one row (or a piece of one) with one `H5Dread` and scatter it (the baseline path):
/// - on outer axes the file-side step goes to libhdf5 as the hyperslab stride; on the inner
///   axis vh5 reads the covering span and steps while copying, unless that would read more
///   than [`MAX_WASTE_BYTES`] of unused elements (then libhdf5 steps: bounded memory) or
///   the step exceeds the chunk's inner extent ([`span_inner`]: libhdf5 steps, reading only
///   the chunks that hold the row's elements);
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
    if span_inner(step_in, ctx.inner_chunk) {
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
    let block_bytes = usize::try_from(block_elems as u128 * itemsize as u128).map_err(|_| err!(NoMemory, "row {i}: hyperslab of {block_elems} elements does not fit in memory"))?;
    let dst_off = ctx.layout.byte_offset(&r.dst_start[..n]);

    // Direct read: no steps at all and the destination block is dense in C order.
    let no_steps = (0..n).all(|j| r.src_step[j] == 1 && r.dst_step[j] == 1);
    if no_steps && c_contiguous_block(&ctx.layout.strides, &r.count[..n], itemsize) {
        // SAFETY: the block's bytes are exactly this row's destination elements (dense), which
        // the caller guarantees no other thread touches.
        let out = unsafe { ctx.dst.range(dst_off, block_bytes)? };
        if let Some(f) = ctx.fill {
            fill_with(out, f);
        }
        match ctx.swap {
            None => reader.read(&fstart[..n], None, &fcount[..n], out).map_err(|e| in_row(i, e))?,
            Some(w) => read_swapped(reader, &fstart[..n], &fcount[..n], out, w).map_err(|e| in_row(i, e))?,
        }
        return Ok(true);
    }
    if scratch.len() < block_bytes {
        crate::mem::resize_zeroed(scratch, block_bytes, || format!("row {i}: scratch buffer for its hyperslab"))?;
    }
    if let Some(f) = ctx.fill {
        fill_with(&mut scratch[..block_bytes], f);
    }
    reader.read(&fstart[..n], stride, &fcount[..n], &mut scratch[..block_bytes]).map_err(|e| in_row(i, e))?;
    if let Some(w) = ctx.swap {
        swap_bytes(&mut scratch[..block_bytes], w);
    }
    // Scratch is dense C order of fcount; the inner step (if read as a span) applies here.
    dense_strides(&fcount[..n], itemsize, &mut sstrides[..n]);
    sstrides[last] *= scratch_step_in as isize;
    for j in 0..n {
        counts[j] = r.count[j] as usize;
        dstrides[j] = ctx.layout.strides[j] as isize * r.dst_step[j] as isize;
    }
    // SAFETY: this row's destination elements, which the caller guarantees no other thread touches.
    unsafe { ctx.dst.copy_in(&scratch[..block_bytes], 0, &sstrides[..n], dst_off, &dstrides[..n], &counts[..n], itemsize)? };
    Ok(false)
}

/// Bytes per piece of a swapped direct read: small enough that the piece is still in cache
/// when its words are reversed (one pass over memory instead of two).
const SWAP_PIECE_BYTES: u64 = 1 << 20;

/// A dense hyperslab read in native order into `out`, then byte-swapped by words of `w`
/// bytes, in pieces of about [`SWAP_PIECE_BYTES`] along the first axis.
fn read_swapped(reader: &mut HyperslabReader, start: &[u64], count: &[u64], out: &mut [u8], w: usize) -> Result<()> {
    let n = count.len();
    let plane = out.len() as u64 / count[0].max(1);
    let per = (SWAP_PIECE_BYTES / plane.max(1)).max(1);
    let mut s = [0u64; MAX_RANK];
    let mut c = [0u64; MAX_RANK];
    s[..n].copy_from_slice(start);
    c[..n].copy_from_slice(count);
    let mut k = 0u64;
    while k < count[0] {
        let m = per.min(count[0] - k);
        s[0] = start[0] + k;
        c[0] = m;
        let piece = &mut out[(k * plane) as usize..((k + m) * plane) as usize];
        reader.read(&s[..n], None, &c[..n], piece)?;
        swap_bytes(piece, w);
        k += m;
    }
    Ok(())
}

/// A libhdf5 read failure of row `i`, naming the row.
fn in_row(i: usize, e: crate::error::Error) -> crate::error::Error {
    crate::error::Error::new(e.kind, format!("row {i}: {}", e.message))
}

#[cfg(test)]
mod tests {
    use super::span_inner;

    #[test]
    fn inner_span_only_within_a_chunk_step() {
        // no step: nothing to span
        assert!(!span_inner(1, 4));
        // every chunk the span crosses holds an element of the row
        assert!(span_inner(2, 4));
        assert!(span_inner(4, 4));
        // chunks between the elements would be read: libhdf5 steps
        assert!(!span_inner(5, 4));
        assert!(!span_inner(3, 1));
        // not chunked
        assert!(span_inner(1000, u64::MAX));
    }
}
