//! `copy_many_slices`: many-slice copies between two caller-owned arrays in memory (numpy ->
//! numpy), with the same row semantics as the HDF5 transfers (see [`super::geometry`]).
//!
//! Row `i` copies, on every axis `j`,
//! `dst[d : d + (c-1)*ds + 1 : ds] = src[s : s + (c-1)*ss + 1 : ss]` (elements). Rows run in
//! order, so where destinations overlap the later row wins; every row is validated before
//! the first byte is written, so an invalid table writes nothing.
//!
//! **Aliasing rule.** Source and destination may be the same buffer, or overlapping views of
//! one. Each row then behaves as if its source block had first been copied to a temporary
//! (memmove semantics, as numpy's `dst[...] = src[...]`): a row reads the values as they are
//! after the previous rows and before itself. It is implemented cheaply: only when the
//! lowest-to-highest byte range of a row's source block intersects that of its destination
//! block does the row go through a scratch buffer; otherwise it is copied directly.
//!
//! The unsafe core ([`copy_many_slices_raw`]) works on raw pointers so that the same memory
//! is never borrowed as `&[u8]` and `&mut [u8]` at once: for each row it borrows only the
//! row's source byte range and its destination byte range, and only at the same time when
//! those ranges are disjoint.

use super::copy::{copy_runs_unchecked, copy_strided_runs as copy_strided, runs_apply};
use super::geometry::{row_counts, ArrayLayout, SliceTable, MAX_RANK};
use super::read::SLICES_CLIP;
use crate::dtype::Dtype;
use crate::error::Result;

/// What a copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Rows that copied something.
    pub rows_copied: usize,
    /// Rows skipped (a zero count, or clipped to zero with [`SLICES_CLIP`]).
    pub rows_skipped: usize,
    /// Elements copied (overlapping destinations counted each time).
    pub elements: u64,
    /// Rows whose source and destination byte ranges intersected, copied through scratch.
    pub rows_staged: usize,
}

/// Names of the two sides in bounds messages.
const NAMES: [&str; 2] = ["source array", "destination array"];

/// Check everything that does not depend on the memory: flags, dtypes, item sizes, ndim,
/// layouts (the destination must not overlap itself; the source may), and every row.
/// Returns the number of rows that copy something and, with clip, every row's clipped
/// counts (`ndim` per row, zeros for rows that copy nothing).
fn check(src: &ArrayLayout, src_dtype: Dtype, dst: &ArrayLayout, dst_dtype: Dtype, table: &SliceTable, flags: u32) -> Result<(usize, Vec<u64>)> {
    if flags & !SLICES_CLIP != 0 {
        bail!(
            InvalidArgument,
            "argument `flags`: unknown or unsupported bits {:#x} for a memory copy (only VH5_SLICES_CLIP = 1; memory copies never convert dtypes)",
            flags & !SLICES_CLIP
        );
    }
    if src_dtype != dst_dtype {
        bail!(Dtype, "dtype mismatch: source is {}, destination is {} (memory copies move bytes and never convert)", src_dtype.name(), dst_dtype.name());
    }
    if src.itemsize != dst.itemsize {
        bail!(Dtype, "itemsize mismatch: source {} bytes, destination {} bytes", src.itemsize, dst.itemsize);
    }
    if let Some(sz) = src_dtype.itemsize() {
        if sz != src.itemsize {
            bail!(InvalidArgument, "itemsize {} does not match the dtype {} ({sz} bytes)", src.itemsize, src_dtype.name());
        }
    }
    let n = dst.shape.len();
    if src.shape.len() != n {
        bail!(InvalidArgument, "dimensionality mismatch: the source has {} axes, the destination {n}", src.shape.len());
    }
    if table.ndim != n {
        bail!(InvalidArgument, "slice table has {} columns but the arrays have {n} axes", table.ndim);
    }
    src.validate_bounds().map_err(|e| crate::error::Error::new(e.kind, format!("src: {}", e.message)))?;
    dst.validate().map_err(|e| crate::error::Error::new(e.kind, format!("dst: {}", e.message)))?;
    let mut todo = 0;
    let clip = flags & SLICES_CLIP != 0;
    let mut clipped = if clip { vec![0u64; table.nslices * n] } else { Vec::new() };
    let mut cnt = [0u64; MAX_RANK];
    for i in 0..table.nslices {
        if row_counts(table, i, &src.shape, &dst.shape, clip, NAMES, &mut cnt[..n])? {
            todo += 1;
            if clip {
                clipped[i * n..(i + 1) * n].copy_from_slice(&cnt[..n]);
            }
        }
    }
    Ok((todo, clipped))
}

/// Lowest and one-past-highest byte (relative to the buffer start) of the block starting at
/// byte `off` with byte `strides` and `counts` (all >= 1).
fn span(off: usize, strides: &[isize], counts: &[usize], itemsize: usize) -> (usize, usize) {
    let (mut lo, mut hi) = (off as isize, (off + itemsize) as isize);
    for (k, &c) in counts.iter().enumerate() {
        let reach = (c as isize - 1) * strides[k];
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    (lo as usize, hi as usize)
}

/// Copy every row of `table` from the array at `src` to the array at `dst`.
///
/// Errors (nothing is written on any of them): `InvalidArgument` (unknown flag bits,
/// `VH5_SLICES_CONVERT`, ndim mismatch, step 0 naming row/axis/table, itemsize not the
/// dtype's, destination strides under which indices share bytes); `Dtype` (different dtypes
/// or item sizes); `BufferTooSmall` (a layout reaching outside its buffer); `OutOfBounds`
/// (without clip, a row reaching outside an extent, naming row, axis and side).
///
/// # Safety
/// `src` must be valid for reads of `src_layout.base_len` bytes and `dst` for reads and
/// writes of `dst_layout.base_len` bytes for the whole call (NULL only when that length is
/// 0); the two ranges may overlap (even be the same buffer); no other reference to them may
/// be used during the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn copy_many_slices_raw(
    src: *const u8,
    src_layout: &ArrayLayout,
    src_dtype: Dtype,
    dst: *mut u8,
    dst_layout: &ArrayLayout,
    dst_dtype: Dtype,
    table: &SliceTable,
    flags: u32,
) -> Result<CopyStats> {
    let (todo, clipped) = check(src_layout, src_dtype, dst_layout, dst_dtype, table, flags)?;
    let mut stats = CopyStats { rows_skipped: table.nslices - todo, ..Default::default() };
    if todo == 0 || src_layout.is_empty() || dst_layout.is_empty() {
        return Ok(stats);
    }
    let clip = flags & SLICES_CLIP != 0;
    let n = dst_layout.shape.len();
    let size = dst_layout.itemsize;
    let mut scratch: Vec<u8> = Vec::new();
    let mut counts = [1usize; MAX_RANK];
    let mut ss = [0isize; MAX_RANK];
    let mut ds = [0isize; MAX_RANK];
    let mut dense = [0isize; MAX_RANK];
    let mut cnt = [0u64; MAX_RANK];
    for i in 0..table.nslices {
        let base = i * n;
        // Every row was validated by `check`: its counts are the table's (or the clipped ones).
        cnt[..n].copy_from_slice(if clip { &clipped[base..base + n] } else { &table.count[base..base + n] });
        if cnt[..n].contains(&0) {
            continue;
        }
        let mut elems = 1u64;
        let (mut so, mut d_o) = (src_layout.offset as isize, dst_layout.offset as isize);
        for j in 0..n {
            elems *= cnt[j];
            counts[j] = cnt[j] as usize;
            ss[j] = src_layout.strides[j] as isize * table.src_step.map_or(1, |x| x[base + j]) as isize;
            ds[j] = dst_layout.strides[j] as isize * table.dst_step.map_or(1, |x| x[base + j]) as isize;
            so += table.src_start[base + j] as isize * src_layout.strides[j] as isize;
            d_o += table.dst_start[base + j] as isize * dst_layout.strides[j] as isize;
        }
        stats.rows_copied += 1;
        stats.elements += elems;
        let (counts, ss, ds) = (&counts[..n], &ss[..n], &ds[..n]);
        // Inside the validated arrays (validated row), so non-negative and in the buffers.
        let (so, d_o) = (so as usize, d_o as usize);
        // Both blocks lie inside their validated arrays, hence inside their buffers.
        let (slo, shi) = span(so, ss, counts, size);
        let (dlo, dhi) = span(d_o, ds, counts, size);
        let (sa, da) = (src as usize, dst as usize);
        let disjoint = sa + shi <= da + dlo || da + dhi <= sa + slo;
        if disjoint && runs_apply(ss, ds, counts, size) {
            // SAFETY: every element of the source block lies in [slo, shi) inside the source
            // buffer and every element of the destination block in [dlo, dhi) inside the
            // destination buffer (validated layouts and row); the two address ranges do not
            // intersect, so no source byte is a destination byte; no count is 0.
            unsafe { copy_runs_unchecked(src.add(so), dst.add(d_o), ss, ds, counts, size) };
        } else if disjoint {
            // SAFETY: as above; the two ranges are disjoint, so a shared and a mutable borrow
            // of them may coexist; the caller guarantees nothing else uses this memory.
            let (s, d) = unsafe { (std::slice::from_raw_parts(src.add(slo), shi - slo), std::slice::from_raw_parts_mut(dst.add(dlo), dhi - dlo)) };
            copy_strided(s, so - slo, ss, d, d_o - dlo, ds, counts, size)?;
        } else {
            stats.rows_staged += 1;
            let bytes = elems as usize * size;
            if scratch.len() < bytes {
                scratch.resize(bytes, 0);
            }
            let mut acc = size as isize;
            for j in (0..n).rev() {
                dense[j] = acc;
                acc *= counts[j] as isize;
            }
            {
                // SAFETY: as above for the source range; no mutable borrow of it exists while
                // this shared one lives (the destination borrow is created after it ends).
                let s = unsafe { std::slice::from_raw_parts(src.add(slo), shi - slo) };
                copy_strided(s, so - slo, ss, &mut scratch[..bytes], 0, &dense[..n], counts, size)?;
            }
            // SAFETY: the destination range is inside its buffer; the source borrow has ended.
            let d = unsafe { std::slice::from_raw_parts_mut(dst.add(dlo), dhi - dlo) };
            copy_strided(&scratch[..bytes], 0, &dense[..n], d, d_o - dlo, ds, counts, size)?;
        }
    }
    if n == 0 {
        // 0-d arrays: every row copies the single element.
        let (so, d_o) = (src_layout.offset, dst_layout.offset);
        let mut one = vec![0u8; size];
        // SAFETY: both validated layouts hold one element at their offset; the source is
        // copied out before the destination is borrowed.
        unsafe {
            one.copy_from_slice(std::slice::from_raw_parts(src.add(so), size));
            std::slice::from_raw_parts_mut(dst.add(d_o), size).copy_from_slice(&one);
        }
    }
    Ok(stats)
}

/// Copy between two distinct buffers (see [`copy_many_slices_raw`] for semantics and errors).
/// `src_layout.base_len` / `dst_layout.base_len` must equal the buffer lengths.
#[allow(clippy::too_many_arguments)]
pub fn copy_many_slices(src: &[u8], src_layout: &ArrayLayout, src_dtype: Dtype, dst: &mut [u8], dst_layout: &ArrayLayout, dst_dtype: Dtype, table: &SliceTable, flags: u32) -> Result<CopyStats> {
    if src.len() != src_layout.base_len || dst.len() != dst_layout.base_len {
        bail!(InvalidArgument, "internal: layout base_len ({}, {}) differs from the buffer lengths ({}, {})", src_layout.base_len, dst_layout.base_len, src.len(), dst.len());
    }
    // SAFETY: the borrows guarantee validity for the given lengths and exclusivity of `dst`.
    unsafe { copy_many_slices_raw(src.as_ptr(), src_layout, src_dtype, dst.as_mut_ptr(), dst_layout, dst_dtype, table, flags) }
}

/// Copy within ONE buffer: source and destination are two (possibly overlapping) arrays
/// inside `buf` (see the aliasing rule in the module docs).
pub fn copy_many_slices_within(buf: &mut [u8], src_layout: &ArrayLayout, dst_layout: &ArrayLayout, dtype: Dtype, table: &SliceTable, flags: u32) -> Result<CopyStats> {
    if src_layout.base_len != buf.len() || dst_layout.base_len != buf.len() {
        bail!(InvalidArgument, "internal: layout base_len ({}, {}) differs from the buffer length {}", src_layout.base_len, dst_layout.base_len, buf.len());
    }
    let p = buf.as_mut_ptr();
    // SAFETY: `buf` is exclusively borrowed for the call and valid for its length; the core
    // only ever derives disjoint or non-coexisting borrows from `p`.
    unsafe { copy_many_slices_raw(p, src_layout, dtype, p, dst_layout, dtype, table, flags) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn c_layout(shape: &[u64], size: usize, len: usize) -> ArrayLayout {
        ArrayLayout { shape: shape.to_vec(), strides: ArrayLayout::c_strides(shape, size).unwrap(), offset: 0, base_len: len, itemsize: size }
    }
    fn f64s(v: &[u8]) -> Vec<f64> {
        v.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
    }
    fn bytes(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn memmove_semantics_within_one_buffer() {
        // numpy: a = arange(10); a[2:7] = a[0:5]  -> [0,1,0,1,2,3,4,7,8,9]
        let mut buf = bytes(&(0..10).map(f64::from).collect::<Vec<_>>());
        let l = c_layout(&[10], 8, 80);
        let t = SliceTable::new(1, 1, &[0], &[2], &[5], None, None).unwrap();
        let st = copy_many_slices_within(&mut buf, &l, &l, Dtype::Float64, &t, 0).unwrap();
        assert_eq!(f64s(&buf), vec![0., 1., 0., 1., 2., 3., 4., 7., 8., 9.]);
        assert_eq!(st.rows_staged, 1);
        // disjoint rows in the same buffer go direct; later row reads the earlier row's result
        let t = SliceTable::new(1, 2, &[0, 5], &[5, 0], &[2, 2], None, None).unwrap();
        let st = copy_many_slices_within(&mut buf, &l, &l, Dtype::Float64, &t, 0).unwrap();
        assert_eq!(f64s(&buf), vec![0., 1., 0., 1., 2., 0., 1., 7., 8., 9.]);
        assert_eq!(st.rows_staged, 0);
        // reversed view of the same buffer: dst = a[::-1] (offset 72, stride -8)
        let mut buf = bytes(&(0..10).map(f64::from).collect::<Vec<_>>());
        let rev = ArrayLayout { shape: vec![10], strides: vec![-8], offset: 72, base_len: 80, itemsize: 8 };
        let t = SliceTable::new(1, 1, &[0], &[0], &[10], None, None).unwrap();
        copy_many_slices_within(&mut buf, &l, &rev, Dtype::Float64, &t, 0).unwrap();
        assert_eq!(f64s(&buf), (0..10).rev().map(f64::from).collect::<Vec<_>>());
    }

    #[test]
    fn bad_input_writes_nothing() {
        let src = bytes(&[1., 2., 3., 4.]);
        let mut dst = vec![0u8; 32];
        let l = c_layout(&[4], 8, 32);
        // row 0 fine, row 1 out of bounds -> nothing written
        let t = SliceTable::new(1, 2, &[0, 3], &[0, 0], &[2, 2], None, None).unwrap();
        let e = copy_many_slices(&src, &l, Dtype::Float64, &mut dst, &l, Dtype::Float64, &t, 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::OutOfBounds);
        assert!(e.message.contains("row 1 axis 0") && e.message.contains("source array extent 4"), "{}", e.message);
        assert!(dst.iter().all(|&b| b == 0));
        // with clip: row 1 copies one element
        copy_many_slices(&src, &l, Dtype::Float64, &mut dst, &l, Dtype::Float64, &t, SLICES_CLIP).unwrap();
        assert_eq!(f64s(&dst), vec![4., 2., 0., 0.]);
        let e = copy_many_slices(&src, &l, Dtype::Float64, &mut dst, &l, Dtype::Float32, &t, 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Dtype);
        let e = copy_many_slices(&src, &l, Dtype::Float64, &mut dst, &l, Dtype::Float64, &t, 2).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        // a broadcast source (stride 0) is fine, an overlapping destination is not
        let b = ArrayLayout { shape: vec![4], strides: vec![0], offset: 8, base_len: 32, itemsize: 8 };
        let t1 = SliceTable::new(1, 1, &[0], &[0], &[4], None, None).unwrap();
        copy_many_slices(&src, &b, Dtype::Float64, &mut dst, &l, Dtype::Float64, &t1, 0).unwrap();
        assert_eq!(f64s(&dst), vec![2., 2., 2., 2.]);
        let e = copy_many_slices(&src, &l, Dtype::Float64, &mut dst, &b, Dtype::Float64, &t1, 0).unwrap_err();
        assert!(e.kind == ErrorKind::InvalidArgument && e.message.starts_with("dst: "), "{}", e.message);
    }
}
