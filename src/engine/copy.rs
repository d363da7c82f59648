//! The strided copy engine: copy a block of `counts` elements between two byte buffers, each
//! addressed by a byte offset (of element [0,...,0]) and per-axis byte strides that may be
//! negative or not multiples of the item size (unaligned). Used to scatter a hyperslab read
//! from HDF5 into a caller's array of any layout (C, Fortran, sliced, stepped, reversed).
//!
//! Every call checks that both blocks lie inside their buffers, so [`copy_strided`] is safe
//! for any input. When both sides are aligned for a 1/2/4/8/16-byte element type, strides are
//! multiples of the item size and the destination block cannot alias itself, the copy is an
//! `ndarray` typed-view `assign` (negative strides via `invert_axis`); otherwise a byte-level
//! loop runs (contiguous inner runs as one `memcpy`).

use ndarray::{ArrayView, ArrayViewMut, Axis, IxDyn, ShapeBuilder};

use crate::error::Result;
use crate::geometry::{axis_stride, MAX_RANK};

/// Dense C-order byte strides of a block of `count` elements of `itemsize` bytes into `out`
/// (`count.len()` entries): the layout of every chunk and scratch buffer vh5 fills itself.
pub fn dense_strides(count: &[u64], itemsize: usize, out: &mut [isize]) {
    let mut acc = itemsize as isize;
    for j in (0..count.len()).rev() {
        out[j] = acc;
        acc *= count[j] as isize;
    }
}

/// Lowest and one-past-highest byte touched by a block, relative to the buffer start.
fn extent(off: usize, strides: &[isize], counts: &[usize], itemsize: usize) -> (i128, i128) {
    let mut lo = off as i128;
    let mut hi = off as i128 + itemsize as i128;
    for (k, &c) in counts.iter().enumerate() {
        // |reach| < 2^127 per axis; the sums saturate (far outside any buffer either way).
        let reach = (c as i128 - 1) * strides[k] as i128;
        if reach < 0 {
            lo = lo.saturating_add(reach);
        } else {
            hi = hi.saturating_add(reach);
        }
    }
    (lo, hi)
}

/// `OutOfBounds` (prefixed `what`) unless every element of the block at byte `off` with byte
/// `strides` and `counts` (none 0) lies inside a buffer of `buf_len` bytes. The one bounds
/// check of every entry into the engine.
pub(crate) fn check_block(what: &str, name: &str, buf_len: usize, off: usize, strides: &[isize], counts: &[usize], itemsize: usize) -> Result<()> {
    let (lo, hi) = extent(off, strides, counts, itemsize);
    if lo < 0 || hi > buf_len as i128 {
        bail!(OutOfBounds, "{what}: {name} block spans bytes [{lo}, {hi}) outside its buffer of {buf_len} bytes");
    }
    Ok(())
}

/// `strides` with the stride of every axis of count 1 set to 0 (such an axis never steps, and
/// a caller's extent-1 axis may carry any stride, e.g. INT64_MIN: left as is it would reach
/// ndarray as a negative stride or overflow the outer-axis walk). `None` when nothing changes
/// (and for more than `MAX_RANK` axes, which vh5 never passes).
fn unit_axes_zeroed(strides: &[isize], counts: &[usize]) -> Option<[isize; MAX_RANK]> {
    if counts.len() > MAX_RANK || !counts.iter().zip(strides).any(|(&c, &s)| c == 1 && s != 0) {
        return None;
    }
    let mut out = [0isize; MAX_RANK];
    for (k, (&c, &s)) in counts.iter().zip(strides).enumerate() {
        out[k] = axis_stride(c as u64, s, 1);
    }
    Some(out)
}

/// Conservative "no two indices share a byte" test (see `ArrayLayout::validate`).
fn non_overlapping(strides: &[isize], counts: &[usize], itemsize: usize) -> bool {
    let mut axes: Vec<(usize, usize)> = counts.iter().zip(strides).filter(|(c, _)| **c > 1).map(|(&c, &s)| (s.unsigned_abs(), c)).collect();
    axes.sort_unstable();
    let mut span = itemsize as u128;
    for (s, c) in axes {
        if (s as u128) < span {
            return false;
        }
        span += s as u128 * (c as u128 - 1);
    }
    true
}

/// Copy `prod(counts)` elements of `itemsize` bytes: element `idx` goes from byte
/// `src_off + sum(idx[k]*src_strides[k])` of `src` to byte `dst_off + sum(idx[k]*dst_strides[k])`
/// of `dst`. Elements are copied in C order of `idx`, so if destination strides overlap the
/// last write wins. Returns `OutOfBounds` (touching nothing) when either block reaches
/// outside its buffer, `InvalidArgument` on a rank mismatch or zero item size.
#[allow(clippy::too_many_arguments)]
pub fn copy_strided(src: &[u8], src_off: usize, src_strides: &[isize], dst: &mut [u8], dst_off: usize, dst_strides: &[isize], counts: &[usize], itemsize: usize) -> Result<()> {
    let n = counts.len();
    if src_strides.len() != n || dst_strides.len() != n {
        bail!(InvalidArgument, "copy: {n} counts but {} source and {} destination strides", src_strides.len(), dst_strides.len());
    }
    if itemsize == 0 {
        bail!(InvalidArgument, "copy: item size 0");
    }
    if counts.contains(&0) {
        return Ok(());
    }
    check_block("copy", "source", src.len(), src_off, src_strides, counts, itemsize)?;
    check_block("copy", "destination", dst.len(), dst_off, dst_strides, counts, itemsize)?;
    if n == 0 {
        dst[dst_off..dst_off + itemsize].copy_from_slice(&src[src_off..src_off + itemsize]);
        return Ok(());
    }
    let (zs, zd) = (unit_axes_zeroed(src_strides, counts), unit_axes_zeroed(dst_strides, counts));
    let src_strides = zs.as_ref().map_or(src_strides, |z| &z[..n]);
    let dst_strides = zd.as_ref().map_or(dst_strides, |z| &z[..n]);
    let done = match itemsize {
        1 => try_ndarray::<u8>(src, src_off, src_strides, dst, dst_off, dst_strides, counts),
        2 => try_ndarray::<u16>(src, src_off, src_strides, dst, dst_off, dst_strides, counts),
        4 => try_ndarray::<u32>(src, src_off, src_strides, dst, dst_off, dst_strides, counts),
        8 => try_ndarray::<u64>(src, src_off, src_strides, dst, dst_off, dst_strides, counts),
        16 => try_ndarray::<u128>(src, src_off, src_strides, dst, dst_off, dst_strides, counts),
        _ => false,
    };
    if !done {
        // SAFETY: both blocks were checked to lie inside their buffers above; src and dst are
        // distinct borrows, so they do not overlap each other.
        unsafe { copy_raw(src.as_ptr().add(src_off), dst.as_mut_ptr().add(dst_off), src_strides, dst_strides, counts, itemsize) };
    }
    Ok(())
}

/// Same contract and result as [`copy_strided`], tuned for many small blocks: when the
/// innermost axis is a dense run on both sides (both inner strides equal `itemsize`, or one
/// element per run) the block is copied as one `memcpy` per run with no allocation and no
/// `ndarray` setup; other blocks go to [`copy_strided`]. Used by the many-slice memory copies
/// and writes, where per-row overhead dominates for small rows.
#[allow(clippy::too_many_arguments)]
pub fn copy_strided_runs(
    src: &[u8],
    src_off: usize,
    src_strides: &[isize],
    dst: &mut [u8],
    dst_off: usize,
    dst_strides: &[isize],
    counts: &[usize],
    itemsize: usize,
) -> Result<()> {
    let n = counts.len();
    let runs = n > 0
        && src_strides.len() == n
        && dst_strides.len() == n
        && itemsize > 0
        && (counts[n - 1] == 1 || (src_strides[n - 1] == itemsize as isize && dst_strides[n - 1] == itemsize as isize));
    if !runs || counts.contains(&0) {
        return copy_strided(src, src_off, src_strides, dst, dst_off, dst_strides, counts, itemsize);
    }
    check_block("copy", "source", src.len(), src_off, src_strides, counts, itemsize)?;
    check_block("copy", "destination", dst.len(), dst_off, dst_strides, counts, itemsize)?;
    let (zs, zd) = (unit_axes_zeroed(src_strides, counts), unit_axes_zeroed(dst_strides, counts));
    let src_strides = zs.as_ref().map_or(src_strides, |z| &z[..n]);
    let dst_strides = zd.as_ref().map_or(dst_strides, |z| &z[..n]);
    // SAFETY: both blocks were checked to lie inside their buffers; src and dst are distinct
    // borrows, so every single copy inside copy_raw is between non-overlapping bytes (if the
    // destination block overlaps itself, runs are written in C order and the last one wins,
    // as in copy_strided).
    unsafe { copy_raw(src.as_ptr().add(src_off), dst.as_mut_ptr().add(dst_off), src_strides, dst_strides, counts, itemsize) };
    Ok(())
}

/// Whether [`copy_runs_unchecked`] applies: at least one axis, and the innermost axis a dense
/// run on both sides (inner strides equal to `itemsize`) or one element per run.
pub fn runs_apply(src_strides: &[isize], dst_strides: &[isize], counts: &[usize], itemsize: usize) -> bool {
    let n = counts.len();
    n > 0 && (counts[n - 1] == 1 || (src_strides[n - 1] == itemsize as isize && dst_strides[n - 1] == itemsize as isize))
}

/// The core of [`copy_strided_runs`] without its bounds checks, for callers that have already
/// proven them (the many-slice memory copy validates every row against its arrays first).
/// Copies `prod(counts)` elements in C order, one `memcpy`-like move per innermost run.
///
/// # Safety
/// [`runs_apply`] must hold and no count be 0; every element address
/// `s + sum(idx[k]*ss[k])` must be valid for reads and `d + sum(idx[k]*ds[k])` for writes of
/// `itemsize` bytes, and no source byte may be a destination byte.
pub unsafe fn copy_runs_unchecked(s: *const u8, d: *mut u8, ss: &[isize], ds: &[isize], counts: &[usize], itemsize: usize) {
    debug_assert!(runs_apply(ss, ds, counts, itemsize) && !counts.contains(&0));
    if counts.len() == 2 {
        // The common 2-D case without the general odometer.
        let len = counts[1] * itemsize;
        let (mut sp, mut dp) = (s, d);
        for _ in 0..counts[0] {
            // SAFETY: each run lies inside the caller's blocks (this function's contract).
            unsafe { copy_run(sp, dp, len) };
            sp = sp.wrapping_offset(ss[0]);
            dp = dp.wrapping_offset(ds[0]);
        }
        return;
    }
    // SAFETY: the same contract as this function's.
    unsafe { copy_raw(s, d, ss, ds, counts, itemsize) }
}

/// Element strides and a base pointer moved to the lowest address, plus the axes to invert.
fn normalize(off: usize, strides: &[isize], counts: &[usize], size: usize) -> Option<(usize, Vec<usize>, Vec<usize>)> {
    let mut base = off as isize;
    let mut es = Vec::with_capacity(strides.len());
    let mut inv = Vec::new();
    for (k, &s) in strides.iter().enumerate() {
        if s % size as isize != 0 {
            return None;
        }
        if s < 0 {
            base += s * (counts[k] as isize - 1);
            inv.push(k);
        }
        es.push(s.unsigned_abs() / size);
    }
    Some((base as usize, es, inv))
}

#[allow(clippy::too_many_arguments)]
fn try_ndarray<T: Copy>(src: &[u8], so: usize, ss: &[isize], dst: &mut [u8], d_o: usize, ds: &[isize], counts: &[usize]) -> bool {
    let size = std::mem::size_of::<T>();
    let align = std::mem::align_of::<T>();
    if !non_overlapping(ds, counts, size) {
        return false;
    }
    let (Some((sb, ses, sinv)), Some((db, des, dinv))) = (normalize(so, ss, counts, size), normalize(d_o, ds, counts, size)) else {
        return false;
    };
    let sp = src.as_ptr().wrapping_add(sb);
    let dp = dst.as_mut_ptr().wrapping_add(db);
    if sp as usize % align != 0 || dp as usize % align != 0 {
        return false;
    }
    // SAFETY: the blocks were bounds-checked by the caller (normalisation only moves the base to
    // the lowest touched address, which is >= 0 and inside the buffer); pointers are aligned for
    // T; strides are non-negative element strides; the destination block does not alias itself
    // (checked above) and src/dst are distinct borrows; T is a plain integer type for which any
    // bit pattern is valid.
    unsafe {
        let sv = ArrayView::<T, IxDyn>::from_shape_ptr(IxDyn(counts).strides(IxDyn(&ses)), sp as *const T);
        let dv = ArrayViewMut::<T, IxDyn>::from_shape_ptr(IxDyn(counts).strides(IxDyn(&des)), dp as *mut T);
        let mut sv = sv;
        let mut dv = dv;
        for k in sinv {
            sv.invert_axis(Axis(k));
        }
        for k in dinv {
            dv.invert_axis(Axis(k));
        }
        dv.assign(&sv);
    }
    true
}

/// `copy_nonoverlapping` of `len` bytes, with straight-line fixed-size moves for runs of up to
/// 128 bytes (the common small-slice case, where a `memcpy` call costs more than the copy).
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping(s, d, len)`.
#[inline(always)]
unsafe fn copy_run(s: *const u8, d: *mut u8, len: usize) {
    #[inline(always)]
    unsafe fn mv<const N: usize>(s: *const u8, d: *mut u8, at: usize) {
        // SAFETY: `at + N <= len` at every call below, inside the run of the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(s.add(at), d.add(at), N) };
    }
    // SAFETY: every move below stays inside `[0, len)` of both runs (the case bounds), which
    // the caller's contract makes valid and non-overlapping.
    unsafe {
        match len {
            0 => {}
            1..=7 => std::ptr::copy_nonoverlapping(s, d, len),
            8..=16 => {
                mv::<8>(s, d, 0);
                mv::<8>(s, d, len - 8);
            }
            17..=32 => {
                mv::<16>(s, d, 0);
                mv::<16>(s, d, len - 16);
            }
            33..=64 => {
                mv::<32>(s, d, 0);
                mv::<32>(s, d, len - 32);
            }
            65..=128 => {
                mv::<32>(s, d, 0);
                mv::<32>(s, d, 32);
                mv::<32>(s, d, len - 64);
                mv::<32>(s, d, len - 32);
            }
            _ => std::ptr::copy_nonoverlapping(s, d, len),
        }
    }
}

/// Byte-level strided copy: the raw core every path of the engine ends in (safe slices,
/// the unchecked runs of the memory copy, and the shared destination of [`super::scatter`]).
/// Zero axes copy one element. Dense innermost runs move as one [`copy_run`]; strided ones
/// element by element, with unaligned typed moves for 1/2/4/8/16-byte items.
///
/// # Safety
/// Every element address `p + sum(idx[k]*strides[k])` for `idx < counts` must be valid for
/// `itemsize` bytes (reads for `s`, writes for `d`) and the two regions must not overlap.
pub(crate) unsafe fn copy_raw(s: *const u8, d: *mut u8, ss: &[isize], ds: &[isize], counts: &[usize], itemsize: usize) {
    let n = counts.len();
    if n == 0 {
        // SAFETY: the single element of both blocks (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(s, d, itemsize) };
        return;
    }
    let inner = counts[n - 1];
    let (iss, ids) = (ss[n - 1], ds[n - 1]);
    let contiguous = iss == itemsize as isize && ids == itemsize as isize;
    // SAFETY: every offset is the start of an innermost run inside the blocks the caller
    // vouches for (valid, disjoint).
    for_each_outer(ss, ds, counts, |so, dof| unsafe {
        let (sp, dp) = (s.offset(so), d.offset(dof));
        if contiguous {
            copy_run(sp, dp, inner * itemsize);
        } else {
            strided_run(sp, dp, iss, ids, inner, itemsize);
        }
    });
}

/// `inner` elements of `itemsize` bytes from `s` (byte step `iss`) to `d` (byte step `ids`),
/// specialised on the item size.
///
/// # Safety
/// As [`copy_raw`] for one innermost run.
#[inline(always)]
unsafe fn strided_run(s: *const u8, d: *mut u8, iss: isize, ids: isize, inner: usize, itemsize: usize) {
    macro_rules! typed {
        ($t:ty) => {{
            for k in 0..inner as isize {
                // SAFETY: element `k < inner` of the run the caller vouches for; unaligned
                // reads and writes need no alignment.
                unsafe {
                    let v = std::ptr::read_unaligned(s.offset(k * iss) as *const $t);
                    std::ptr::write_unaligned(d.offset(k * ids) as *mut $t, v);
                }
            }
        }};
    }
    match itemsize {
        1 => typed!(u8),
        2 => typed!(u16),
        4 => typed!(u32),
        8 => typed!(u64),
        16 => typed!(u128),
        _ => {
            for k in 0..inner as isize {
                // SAFETY: element `k < inner` of the run the caller vouches for.
                unsafe { std::ptr::copy_nonoverlapping(s.offset(k * iss), d.offset(k * ids), itemsize) };
            }
        }
    }
}

/// Call `row(src_offset, dst_offset)` (bytes) for every index of the outer axes (all but the
/// last) in C order; offsets are `sum(idx[k] * strides[k])` over those axes. `counts` must
/// have at least one axis and no zero count. The walk of [`copy_raw`].
#[inline]
pub(crate) fn for_each_outer(ss: &[isize], ds: &[isize], counts: &[usize], mut row: impl FnMut(isize, isize)) {
    let n = counts.len();
    let mut idx = [0usize; crate::geometry::MAX_RANK];
    let (mut so, mut dof) = (0isize, 0isize);
    loop {
        row(so, dof);
        let mut k = n - 1;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < counts[k] {
                so += ss[k];
                dof += ds[k];
                break;
            }
            // Back to index 0 on this axis. Only offsets of elements the walk visits are
            // formed (never `counts[k] * stride`, one step past the last element, which can
            // overflow isize for a huge stride even when every element is addressable).
            so -= ss[k] * (counts[k] - 1) as isize;
            dof -= ds[k] * (counts[k] - 1) as isize;
            idx[k] = 0;
        }
    }
}

/// Hint the CPU to fetch the cache line holding `p` (no effect on other targets; never faults).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults, whatever the address (SSE, baseline on
    // x86_64).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An outer axis whose stride times its count overflows isize (the walk used to form the
    /// offset one step past the last element: "attempt to add with overflow" under overflow
    /// checks, found by the slices_read fuzz smoke in CI; seed
    /// fuzz/corpus/slices_read/regression-for-each-outer-overflow).
    #[test]
    fn outer_walk_never_forms_an_offset_past_the_last_element() {
        let big = isize::MAX / 2 + 1; // 2 * big overflows
        let mut seen = Vec::new();
        for_each_outer(&[big, -big, 8], &[0, 0, 8], &[2, 2, 1], |so, dof| seen.push((so, dof)));
        assert_eq!(seen, vec![(0, 0), (-big, 0), (big, 0), (0, 0)]);
    }

    /// Reference: element by element with plain index arithmetic.
    #[allow(clippy::too_many_arguments)]
    fn reference(src: &[u8], so: usize, ss: &[isize], dst: &mut [u8], d_o: usize, ds: &[isize], counts: &[usize], size: usize) {
        let total: usize = counts.iter().product();
        for flat in 0..total {
            let mut rem = flat;
            let (mut a, mut b) = (so as isize, d_o as isize);
            for k in (0..counts.len()).rev() {
                let i = (rem % counts[k]) as isize;
                rem /= counts[k];
                a += i * ss[k];
                b += i * ds[k];
            }
            let (a, b) = (a as usize, b as usize);
            dst[b..b + size].copy_from_slice(&src[a..a + size]);
        }
    }

    #[test]
    fn bounds_are_checked() {
        let src = [0u8; 16];
        let mut dst = [0u8; 16];
        let e = copy_strided(&src, 0, &[8], &mut dst, 8, &[8], &[2], 8).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::OutOfBounds);
        let e = copy_strided(&src, 8, &[-8], &mut dst, 0, &[8], &[3], 8).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::OutOfBounds);
        assert!(dst.iter().all(|&b| b == 0));
    }

    #[test]
    fn zero_d_and_unaligned() {
        let src: Vec<u8> = (0..32).collect();
        let mut dst = vec![0u8; 32];
        copy_strided(&src, 3, &[], &mut dst, 5, &[], &[], 4).unwrap();
        assert_eq!(&dst[5..9], &[3, 4, 5, 6]);
        let mut dst = vec![0u8; 40];
        copy_strided(&src, 1, &[8], &mut dst, 3, &[-9], &[3], 8).unwrap_err();
        copy_strided(&src, 1, &[8], &mut dst, 21, &[-9], &[3], 8).unwrap();
        assert_eq!(&dst[21..29], &src[1..9]);
        assert_eq!(&dst[12..20], &src[9..17]);
        assert_eq!(&dst[3..11], &src[17..25]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn matches_reference(
            counts in proptest::collection::vec(1usize..5, 1..4),
            size in prop::sample::select(vec![1usize, 2, 3, 4, 8, 16]),
            perm_seed in any::<u64>(),
            neg in proptest::collection::vec(any::<bool>(), 4),
            pad in 0usize..3,
            so in 0usize..9,
            overlap_dst in any::<bool>(),
        ) {
            let n = counts.len();
            // source: C-contiguous
            let mut ss = vec![0isize; n];
            let mut acc = size as isize;
            for k in (0..n).rev() { ss[k] = acc; acc *= counts[k] as isize; }
            let src_len = so + acc as usize;
            let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
            // destination: permuted axes, padded strides, some negative
            let mut order: Vec<usize> = (0..n).collect();
            let mut x = perm_seed;
            for i in (1..n).rev() { let j = (x % (i as u64 + 1)) as usize; x /= i as u64 + 1; order.swap(i, j); }
            let mut ds = vec![0isize; n];
            let mut acc = (size + pad) as isize;
            for &k in order.iter().rev() { ds[k] = acc; acc *= counts[k] as isize + pad as isize; }
            if overlap_dst && n > 1 { ds[order[0]] = 0; }
            let mut off = 0isize;
            for k in 0..n { if neg[k] { off += ds[k] * (counts[k] as isize - 1); ds[k] = -ds[k]; } }
            let dst_len = acc as usize + size + 8;
            let mut got = vec![0xAAu8; dst_len];
            let mut want = got.clone();
            copy_strided(&src, so, &ss, &mut got, off as usize, &ds, &counts, size).unwrap();
            reference(&src, so, &ss, &mut want, off as usize, &ds, &counts, size);
            prop_assert_eq!(&got, &want);
            let mut got2 = vec![0xAAu8; dst_len];
            copy_strided_runs(&src, so, &ss, &mut got2, off as usize, &ds, &counts, size).unwrap();
            prop_assert_eq!(&got2, &want);
            if runs_apply(&ss, &ds, &counts, size) {
                let mut got3 = vec![0xAAu8; dst_len];
                // SAFETY: copy_strided_runs just checked both blocks lie in their buffers.
                unsafe { copy_runs_unchecked(src.as_ptr().add(so), got3.as_mut_ptr().add(off as usize), &ss, &ds, &counts, size) };
                prop_assert_eq!(got3, want);
            }
        }
    }
}
