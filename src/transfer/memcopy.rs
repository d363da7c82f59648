//! `copy_many_slices`: many-slice copies between two caller-owned arrays in memory (numpy ->
//! numpy), with the same row semantics as the HDF5 transfers (see [`crate::geometry`]).
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
//! **Fast path** (`copy_fast`): with no flags, no step tables, rows that are runs on both
//! sides (innermost strides = item size) and buffers that do not intersect, every row is
//! validated by a tight bounds loop and then copied without per-row staging checks; the
//! source rows a few rows ahead are prefetched (sources >= 1 MiB) and large destinations
//! (>= 4 MiB) are written with non-temporal stores. Any row out of bounds sends the call to
//! the general path, which reports it exactly as before (nothing written either way).
//!
//! The unsafe core ([`copy_many_slices_raw`]) works on raw pointers so that the same memory
//! is never borrowed as `&[u8]` and `&mut [u8]` at once: for each row it borrows only the
//! row's source byte range and its destination byte range, and only at the same time when
//! those ranges are disjoint.

use super::checks::SLICES_CLIP;
pub use super::stats::CopyStats;
use crate::dtype::Dtype;
use crate::engine::copy::{copy_runs_unchecked, copy_strided_runs as copy_strided, runs_apply};
use crate::engine::copy::{dense_strides, prefetch};
use crate::error::Result;
use crate::geometry::{axis_stride, row_counts, ArrayLayout, SliceTable, MAX_RANK};

/// Names of the two sides in bounds messages.
const NAMES: [&str; 2] = ["source array", "destination array"];

/// Check everything that does not depend on the memory and the rows: flags, dtypes, item
/// sizes, ndim, layouts (the destination must not overlap itself; the source may).
fn check(src: &ArrayLayout, src_dtype: Dtype, dst: &ArrayLayout, dst_dtype: Dtype, table: &SliceTable, flags: u32) -> Result<()> {
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
    Ok(())
}

/// Check every row (see [`check`]); returns the number of rows that copy something and,
/// with clip, every row's clipped counts (`ndim` per row, zeros for rows that copy nothing).
fn check_rows(src: &ArrayLayout, dst: &ArrayLayout, table: &SliceTable, flags: u32) -> Result<(usize, Vec<u64>)> {
    let n = dst.shape.len();
    let mut todo = 0;
    let clip = flags & SLICES_CLIP != 0;
    let mut clipped = if clip { vec![0u64; table.nslices * n] } else { Vec::new() };
    let mut cnt = [0u64; MAX_RANK];
    if n == 0 {
        // Zero-column tables (0-d arrays): every row is the same valid row. O(1).
        return Ok((table.nslices, clipped));
    }
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
    check(src_layout, src_dtype, dst_layout, dst_dtype, table, flags)?;
    // SAFETY: forwarded from this function's contract; the layouts were validated above.
    if let Some(stats) = unsafe { copy_fast(src, src_layout, dst, dst_layout, table, flags) } {
        return Ok(stats);
    }
    let (todo, clipped) = check_rows(src_layout, dst_layout, table, flags)?;
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
    // Zero-column tables (0-d arrays): every row copies the one element again. Copying an
    // element onto a partly overlapping one reaches a fixed point after at most `size`
    // copies (each shifts the pattern by at least one byte), so `size + 1` copies leave
    // exactly what `nslices` copies leave: no loop over more rows than the tables hold.
    let runs = if n == 0 { table.nslices.min(size + 1) } else { table.nslices };
    for i in 0..runs {
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
            // A step only matters when the axis copies more than one element (`axis_stride`).
            ss[j] = axis_stride(cnt[j], src_layout.strides[j] as isize, table.src_step.map_or(1, |x| x[base + j]));
            ds[j] = axis_stride(cnt[j], dst_layout.strides[j] as isize, table.dst_step.map_or(1, |x| x[base + j]));
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
            dense_strides(&cnt[..n], size, &mut dense[..n]);
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
    // 0-d arrays: every row above copied the single element (empty counts: one element at
    // the offsets), through scratch when the two elements share bytes; the stats count every
    // declared row.
    if n == 0 {
        stats.rows_copied = table.nslices;
        stats.elements = table.nslices as u64;
        if stats.rows_staged > 0 {
            stats.rows_staged = table.nslices;
        }
    }
    Ok(stats)
}

/// Rows ahead of the current one whose source lines are prefetched (random source rows are
/// cache-miss bound: this overlaps the misses of several rows).
const PREFETCH_ROWS: usize = 4;
/// Sources of at least this many bytes (unlikely to be cache-resident) are prefetched.
const PREFETCH_MIN_BYTES: usize = 1 << 20;

/// Destinations of at least this many bytes (beyond the last-level cache of small machines)
/// are written with non-temporal stores by `copy_fast`.
const STREAM_MIN_BYTES: usize = 4 << 20;

/// Copy `rows` runs of `len` bytes (a multiple of 16) from `s` (stride `ss` bytes) to `d`
/// (stride `ds`, a multiple of 16; `d` 16-byte aligned) with non-temporal 16-byte stores.
///
/// # Safety
/// Every run must be valid for reads at `s + k*ss` and writes at `d + k*ds`, not overlapping.
#[inline]
unsafe fn stream_rows(s: *const u8, d: *mut u8, ss: isize, ds: isize, rows: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        for k in 0..rows {
            // SAFETY: the start of run `k < rows` (the caller's contract).
            let (sp, dp) = unsafe { (s.offset(k as isize * ss), d.offset(k as isize * ds)) };
            let mut o = 0;
            while o < len {
                // SAFETY: inside the run (caller); dp + o is 16-byte aligned (caller); SSE2 is
                // baseline on x86_64.
                unsafe {
                    let v = _mm_loadu_si128(sp.add(o) as *const __m128i);
                    _mm_stream_si128(dp.add(o) as *mut __m128i, v);
                }
                o += 16;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for k in 0..rows {
        // SAFETY: run `k < rows` (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(s.offset(k as isize * ss), d.offset(k as isize * ds), len) };
    }
}

/// Order the non-temporal stores before anything that follows (`SFENCE`).
fn sfence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a fence instruction, no memory access of its own (SSE, baseline on x86_64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// The common case without per-row overhead: no flags, no step tables, rank >= 1, innermost
/// strides of both arrays equal to the item size (rows are runs), and source and destination
/// buffers that do not intersect at all. Validates every row first with a tight bounds check;
/// returns `None` (nothing written) when the case does not apply or some row is out of bounds
/// or empty-but-odd, so that the general path runs and reports exactly as before.
///
/// # Safety
/// As [`copy_many_slices_raw`]; the layouts must have passed `check`.
unsafe fn copy_fast(src: *const u8, sl: &ArrayLayout, dst: *mut u8, dl: &ArrayLayout, table: &SliceTable, flags: u32) -> Option<CopyStats> {
    let n = dl.shape.len();
    let size = dl.itemsize;
    if flags != 0 || n == 0 || table.src_step.is_some() || table.dst_step.is_some() || sl.is_empty() || dl.is_empty() {
        return None;
    }
    if sl.strides[n - 1] != size as i64 || dl.strides[n - 1] != size as i64 {
        return None;
    }
    let (sa, da) = (src as usize, dst as usize);
    if !(sa + sl.base_len <= da || da + dl.base_len <= sa) {
        return None;
    }
    // Pass 1: every row inside both arrays (c == 0 rows copy nothing).
    let mut stats = CopyStats::default();
    for i in 0..table.nslices {
        let b = i * n;
        let (s, d, c) = (&table.src_start[b..b + n], &table.dst_start[b..b + n], &table.count[b..b + n]);
        let mut elems = 1u64;
        let mut ok = true;
        for j in 0..n {
            let (cj, es, ed) = (c[j], sl.shape[j], dl.shape[j]);
            ok &= cj <= es && s[j] <= es - cj.min(es) && cj <= ed && d[j] <= ed - cj.min(ed);
            // Saturating: a product of counts that wraps to 0 (e.g. 2 x 2 x 2^63) must not
            // pass for an empty row (it is out of bounds, found by slices_copy).
            elems = elems.saturating_mul(cj);
        }
        if c.contains(&0) {
            stats.rows_skipped += 1;
        } else if !ok {
            return None;
        } else {
            stats.rows_copied += 1;
            stats.elements += elems;
        }
    }
    // Pass 2: copy (every row validated: offsets inside the buffers, blocks disjoint). A
    // large destination is written with non-temporal stores (no read-for-ownership of lines
    // the copy overwrites, no eviction of the source from the cache).
    let stream = cfg!(target_arch = "x86_64")
        && n == 2
        && dl.base_len >= STREAM_MIN_BYTES
        && dl.strides[0] % 16 == 0
        && (0..table.nslices).all(|i| (table.count[i * 2 + 1] as usize * size) % 16 == 0);
    let mut counts = [1usize; MAX_RANK];
    let prefetch_src = sl.base_len >= PREFETCH_MIN_BYTES;
    let ss: Vec<isize> = sl.strides.iter().map(|&x| x as isize).collect();
    let ds: Vec<isize> = dl.strides.iter().map(|&x| x as isize).collect();
    let off = |l: &ArrayLayout, st: &[u64]| -> usize {
        let o = st.iter().zip(&l.strides).fold(l.offset as isize, |o, (&i, &s)| o + i as isize * s as isize);
        o as usize
    };
    for i in 0..table.nslices {
        let b = i * n;
        let c = &table.count[b..b + n];
        if c.contains(&0) {
            continue;
        }
        let ahead = i + PREFETCH_ROWS;
        if prefetch_src && n == 2 && ahead < table.nslices {
            let pb = ahead * n;
            let (pc0, len) = (table.count[pb] as usize, table.count[pb + 1] as usize * size);
            if pc0 <= 32 && len <= 512 && table.count[pb] != 0 && table.count[pb + 1] != 0 {
                // rows ahead are validated: their first and last bytes are in the source buffer
                let ps = src.wrapping_add(off(sl, &table.src_start[pb..pb + n]));
                for k in 0..pc0 {
                    let rp = ps.wrapping_offset(k as isize * ss[0]);
                    prefetch(rp);
                    prefetch(rp.wrapping_add(len - 1));
                }
            }
        }
        for j in 0..n {
            counts[j] = c[j] as usize;
        }
        let (so, d_o) = (off(sl, &table.src_start[b..b + n]), off(dl, &table.dst_start[b..b + n]));
        if stream && n == 2 && (dst as usize + d_o) % 16 == 0 {
            // SAFETY: as below; `stream` guarantees run lengths and destination strides that
            // are multiples of 16 bytes, and the first run's start is 16-byte aligned.
            unsafe { stream_rows(src.add(so), dst.add(d_o), ss[0], ds[0], counts[0], counts[1] * size) };
            continue;
        }
        // SAFETY: the row was validated against both extents, so every element of its source
        // block lies in the source buffer and every element of its destination block in the
        // destination buffer; the two buffers do not intersect; runs apply (innermost strides
        // are the item size); no count is 0.
        unsafe { copy_runs_unchecked(src.add(so), dst.add(d_o), &ss, &ds, &counts[..n], size) };
    }
    if stream {
        sfence();
    }
    Some(stats)
}

/// Copy between two distinct buffers (see [`copy_many_slices_raw`] for semantics and errors).
/// `src_layout.base_len` / `dst_layout.base_len` must equal the buffer lengths.
#[allow(clippy::too_many_arguments)]
pub fn copy_many_slices(
    src: &[u8],
    src_layout: &ArrayLayout,
    src_dtype: Dtype,
    dst: &mut [u8],
    dst_layout: &ArrayLayout,
    dst_dtype: Dtype,
    table: &SliceTable,
    flags: u32,
) -> Result<CopyStats> {
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

    /// The fast path (no steps, no clip, disjoint buffers), with and without non-temporal
    /// stores (destination >= 4 MiB, inner runs multiples of 16 bytes, aligned or not) and
    /// source prefetching (source >= 1 MiB), against an index-loop reference.
    #[test]
    fn fast_path_matches_index_loops() {
        let mut seed = 12345u64;
        let mut rnd = move |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for (side, even, dst_off) in [(400u64, true, 0usize), (400, false, 0), (400, true, 1), (60, true, 0)] {
            let (dr, dc) = (70_000u64, 12u64);
            let srcv: Vec<f64> = (0..side * side).map(|k| k as f64).collect();
            let src = bytes(&srcv);
            let sl = c_layout(&[side, side], 8, src.len());
            // destination inside a buffer, starting `dst_off` elements in (unaligned runs)
            let mut dst = vec![0u8; ((dr * dc) as usize + dst_off) * 8];
            let dl = ArrayLayout { shape: vec![dr, dc], strides: vec![dc as i64 * 8, 8], offset: dst_off * 8, base_len: dst.len(), itemsize: 8 };
            let nrows = 5000u64;
            let (mut ss, mut ds, mut cs) = (vec![], vec![], vec![]);
            for i in 0..nrows {
                let c0 = 1 + rnd(10);
                let c1 = if even { 2 * (1 + rnd(6)) } else { 1 + 2 * rnd(6) };
                ss.extend([rnd(side - c0 + 1), rnd(side - c1 + 1)]);
                ds.extend([(i * 13) % (dr - 10), rnd(dc - c1 + 1)]);
                cs.extend([c0, c1]);
            }
            let t = SliceTable::new(2, nrows as usize, &ss, &ds, &cs, None, None).unwrap();
            let st = copy_many_slices(&src, &sl, Dtype::Float64, &mut dst, &dl, Dtype::Float64, &t, 0).unwrap();
            let mut want = vec![0f64; (dr * dc) as usize];
            let mut elems = 0;
            for i in 0..nrows as usize {
                for a in 0..cs[2 * i] {
                    for b in 0..cs[2 * i + 1] {
                        want[((ds[2 * i] + a) * dc + ds[2 * i + 1] + b) as usize] = srcv[((ss[2 * i] + a) * side + ss[2 * i + 1] + b) as usize];
                        elems += 1;
                    }
                }
            }
            assert_eq!(f64s(&dst[dst_off * 8..]), want, "side {side} even {even} dst_off {dst_off}");
            assert_eq!((st.rows_copied, st.rows_skipped, st.elements, st.rows_staged), (nrows as usize, 0, elems, 0));
        }
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
