//! Slice-table geometry: validation and clipping of the rows of a many-slice transfer, and
//! validation of a caller's strided array (bounds and self-overlap). Pure, safe Rust.
//!
//! Row `i` of a table copies, on every axis `j`,
//! `dst[d : d + (c-1)*ds + 1 : ds] = src[s : s + (c-1)*ss + 1 : ss]` with starts `s`/`d`,
//! count `c` (shared by both sides) and steps `ss`/`ds` (>= 1), all in elements.

use crate::error::Result;

pub use crate::dtype::MAX_RANK;

/// A slice table: `nslices` rows of `ndim` columns per table, row-major, all in elements.
/// Step tables are optional (`None` = every step is 1).
#[derive(Debug, Clone, Copy)]
pub struct SliceTable<'a> {
    pub ndim: usize,
    pub nslices: usize,
    pub src_start: &'a [u64],
    pub dst_start: &'a [u64],
    pub count: &'a [u64],
    pub src_step: Option<&'a [u64]>,
    pub dst_step: Option<&'a [u64]>,
}

impl<'a> SliceTable<'a> {
    /// Check that every table has `nslices * ndim` entries.
    pub fn new(
        ndim: usize,
        nslices: usize,
        src_start: &'a [u64],
        dst_start: &'a [u64],
        count: &'a [u64],
        src_step: Option<&'a [u64]>,
        dst_step: Option<&'a [u64]>,
    ) -> Result<Self> {
        if ndim > MAX_RANK {
            bail!(Unsupported, "{ndim} axes: at most {MAX_RANK} are supported (H5S_MAX_RANK)");
        }
        let n = nslices.checked_mul(ndim).ok_or_else(|| err!(InvalidArgument, "nslices {nslices} x ndim {ndim} overflows size_t"))?;
        for (name, t) in [("src_start", Some(src_start)), ("dst_start", Some(dst_start)), ("count", Some(count)), ("src_step", src_step), ("dst_step", dst_step)] {
            if let Some(t) = t {
                if t.len() != n {
                    bail!(InvalidArgument, "table `{name}` has {} entries, expected nslices {nslices} x ndim {ndim} = {n}", t.len());
                }
            }
        }
        Ok(SliceTable { ndim, nslices, src_start, dst_start, count, src_step, dst_step })
    }
}

/// One row after validation (and clipping): every count is >= 1; axes with a count of 1
/// have steps of 1 (their table step is irrelevant and may be any uint64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub ndim: usize,
    pub src_start: [u64; MAX_RANK],
    pub dst_start: [u64; MAX_RANK],
    pub count: [u64; MAX_RANK],
    pub src_step: [u64; MAX_RANK],
    pub dst_step: [u64; MAX_RANK],
}

impl Row {
    /// Number of elements the row copies.
    pub fn elements(&self) -> u64 {
        self.count[..self.ndim].iter().product()
    }
}

/// How many elements fit from `start` with `step` inside `extent` (0 when start >= extent).
fn fit(start: u64, step: u64, extent: u64) -> u64 {
    if start >= extent {
        0
    } else {
        (extent - 1 - start) / step + 1
    }
}

/// Validate row `i` against the source and destination extents.
///
/// Returns `Ok(None)` when the row copies nothing (a count of 0 on some axis, or with `clip`
/// a count clipped to 0) and `Ok(Some(row))` otherwise.
///
/// Errors (naming row, axis and numbers): a step of 0 (`InvalidArgument`, checked even when
/// the row copies nothing); without `clip`, a selection reaching outside either extent,
/// including `start + (count-1)*step` overflowing uint64 (`OutOfBounds`). With `clip`
/// (versioned-hdf5's semantics) counts are silently reduced so both sides fit.
pub fn row(t: &SliceTable, i: usize, src_shape: &[u64], dst_shape: &[u64], clip: bool) -> Result<Option<Row>> {
    row_named(t, i, src_shape, dst_shape, clip, ["dataset", "destination"])
}

/// [`row`] with the names the bounds messages give the source and destination extents
/// (`["dataset", "destination"]` for reads, `["source array", "dataset"]` for writes,
/// `["source array", "destination array"]` for memory copies).
pub fn row_named(t: &SliceTable, i: usize, src_shape: &[u64], dst_shape: &[u64], clip: bool, names: [&str; 2]) -> Result<Option<Row>> {
    let n = t.ndim;
    let mut r = Row { ndim: n, src_start: [0; MAX_RANK], dst_start: [0; MAX_RANK], count: [0; MAX_RANK], src_step: [1; MAX_RANK], dst_step: [1; MAX_RANK] };
    if !row_counts(t, i, src_shape, dst_shape, clip, names, &mut r.count[..n])? {
        return Ok(None);
    }
    let base = i * n;
    r.src_start[..n].copy_from_slice(&t.src_start[base..base + n]);
    r.dst_start[..n].copy_from_slice(&t.dst_start[base..base + n]);
    row_steps(t, i, &r.count[..n], &mut r.src_step[..n], &mut r.dst_step[..n]);
    Ok(Some(r))
}

/// The source and destination steps of row `i` whose counts are `count` (from
/// [`row_counts`]), into `src_out` and `dst_out` (`ndim` entries each): the table's steps (1
/// without a step table), except 1 on an axis copying one element, which has no use for its
/// step (see [`axis_step`]).
pub fn row_steps(t: &SliceTable, i: usize, count: &[u64], src_out: &mut [u64], dst_out: &mut [u64]) {
    let base = i * t.ndim;
    for j in 0..t.ndim {
        src_out[j] = axis_step(count[j], t.src_step.map_or(1, |s| s[base + j]));
        dst_out[j] = axis_step(count[j], t.dst_step.map_or(1, |s| s[base + j]));
    }
}

/// [`row_counts`] of a row already validated by it (same table, shapes and `clip`): its
/// counts into `count_out` (`ndim` entries), `Ok(false)` when it copies nothing. Without
/// `clip` the counts are the table's, read with no check (a second pass over a table pays no
/// validation again); with `clip` they are computed (and checked) by [`row_counts`].
pub fn validated_row_counts(t: &SliceTable, i: usize, src_shape: &[u64], dst_shape: &[u64], clip: bool, count_out: &mut [u64]) -> Result<bool> {
    if clip {
        return row_counts(t, i, src_shape, dst_shape, true, ["dataset", "destination"], count_out);
    }
    let n = t.ndim;
    count_out.copy_from_slice(&t.count[i * n..i * n + n]);
    Ok(!count_out.contains(&0))
}

/// The validation of [`row_named`] without building a [`Row`] (cheap enough for per-row use
/// in hot loops): writes the row's counts, clipped with `clip`, into `count_out` (`ndim`
/// entries) and returns `Ok(true)`, or `Ok(false)` when the row copies nothing. Same errors.
pub fn row_counts(t: &SliceTable, i: usize, src_shape: &[u64], dst_shape: &[u64], clip: bool, names: [&str; 2], count_out: &mut [u64]) -> Result<bool> {
    let n = t.ndim;
    debug_assert!(src_shape.len() == n && dst_shape.len() == n && count_out.len() == n);
    let base = i * n;
    let mut empty = false;
    for j in 0..n {
        if t.src_step.is_some_and(|s| s[base + j] == 0) {
            bail!(InvalidArgument, "row {i} axis {j}: src_step is 0 (steps must be >= 1)");
        }
        if t.dst_step.is_some_and(|s| s[base + j] == 0) {
            bail!(InvalidArgument, "row {i} axis {j}: dst_step is 0 (steps must be >= 1)");
        }
        let c = t.count[base + j];
        count_out[j] = c;
        empty |= c == 0;
    }
    if empty {
        return Ok(false);
    }
    for j in 0..n {
        let c = count_out[j];
        let (s, d) = (t.src_start[base + j], t.dst_start[base + j]);
        let ss = t.src_step.map_or(1, |x| x[base + j]);
        let ds = t.dst_step.map_or(1, |x| x[base + j]);
        if clip {
            let c2 = c.min(fit(s, ss, src_shape[j])).min(fit(d, ds, dst_shape[j]));
            if c2 == 0 {
                return Ok(false);
            }
            count_out[j] = c2;
        } else {
            for (side, start, step, extent, what) in [("src", s, ss, src_shape[j], names[0]), ("dst", d, ds, dst_shape[j], names[1])] {
                let last = (c - 1)
                    .checked_mul(step)
                    .and_then(|x| x.checked_add(start))
                    .ok_or_else(|| err!(OutOfBounds, "row {i} axis {j}: {side}_start {start} + (count {c} - 1) * {side}_step {step} overflows uint64"))?;
                if last >= extent {
                    if start >= extent {
                        bail!(OutOfBounds, "row {i} axis {j}: {side}_start {start} is outside the {what} extent {extent}");
                    }
                    bail!(
                        OutOfBounds,
                        "row {i} axis {j}: {side} selection reaches index {last} ({side}_start {start} + (count {c} - 1) * {side}_step {step}), outside the {what} extent {extent}"
                    );
                }
            }
        }
    }
    Ok(true)
}

/// Validate every row (before anything is read or written). Returns the number of rows that
/// copy something.
pub fn check_rows(t: &SliceTable, src_shape: &[u64], dst_shape: &[u64], clip: bool) -> Result<usize> {
    if t.ndim == 0 {
        // Zero-column tables (0-d arrays): every row is the same empty row, which copies the
        // one element and cannot fail. O(1) however many rows are declared.
        return Ok(t.nslices);
    }
    let mut n = 0;
    for i in 0..t.nslices {
        if row(t, i, src_shape, dst_shape, clip)?.is_some() {
            n += 1;
        }
    }
    Ok(n)
}

/// The step an axis copying `count` elements takes: an axis of count 1 (or 0) never steps, so
/// its table step, which may be any uint64, is ignored (1). THE rule for such axes: every
/// engine asks here (overflow found by fuzzing: `stride * step` of a count-1 axis in the read,
/// write and memory-copy paths).
#[inline]
pub fn axis_step(count: u64, step: u64) -> u64 {
    if count <= 1 {
        1
    } else {
        step
    }
}

/// Byte stride between the elements an axis copies: `stride * step`, or 0 for an axis of
/// count 1 (or 0), which never steps (see [`axis_step`]): no product is formed, so a huge
/// step or an extreme stride on such an axis cannot overflow. For counts of 2 or more the
/// caller has validated the row, so the product lies inside its array.
#[inline]
pub fn axis_stride(count: u64, stride: isize, step: u64) -> isize {
    if count <= 1 {
        0
    } else {
        stride * step as isize
    }
}

/// Whether a block of `count` elements with the array's byte `strides` is one dense C-order run.
pub fn c_contiguous_block(strides: &[i64], count: &[u64], itemsize: usize) -> bool {
    let mut expect = itemsize as i64;
    for j in (0..count.len()).rev() {
        if count[j] > 1 && strides[j] != expect {
            return false;
        }
        expect = expect.saturating_mul(count[j] as i64);
    }
    true
}

/// A caller's strided array: `shape` in elements, `strides` in BYTES (may be negative),
/// `offset` = bytes from the buffer start to element [0,...,0], inside a buffer of
/// `base_len` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayLayout {
    pub shape: Vec<u64>,
    pub strides: Vec<i64>,
    pub offset: usize,
    pub base_len: usize,
    pub itemsize: usize,
}

impl ArrayLayout {
    /// C-order (row-major) contiguous byte strides for `shape`; `None` on overflow.
    pub fn c_strides(shape: &[u64], itemsize: usize) -> Option<Vec<i64>> {
        let mut s = vec![0i64; shape.len()];
        let mut acc: i64 = i64::try_from(itemsize).ok()?;
        for j in (0..shape.len()).rev() {
            s[j] = acc;
            acc = acc.checked_mul(i64::try_from(shape[j].max(1)).ok()?)?;
        }
        Some(s)
    }

    /// Number of elements (product of the shape), `None` on overflow.
    pub fn elements(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b))
    }

    /// True when some extent is 0.
    pub fn is_empty(&self) -> bool {
        self.shape.contains(&0)
    }

    /// Byte offset of the element at `index` (must be inside the shape of a validated layout).
    pub fn byte_offset(&self, index: &[u64]) -> usize {
        let mut off = self.offset as i128;
        for (k, &i) in index.iter().enumerate() {
            off += i as i128 * self.strides[k] as i128;
        }
        off as usize
    }

    /// Check that every element lies inside `[0, base_len)` (`BufferTooSmall` naming the byte
    /// offsets otherwise) and that no two different indices share a byte (`InvalidArgument`).
    /// The overlap test is numpy's conservative one: sorted by |stride|, each axis's |stride|
    /// must be at least the span of all smaller axes plus the item size; rare interleaved
    /// layouts that do not overlap but fail this test are rejected too. Zero-size arrays pass.
    pub fn validate(&self) -> Result<()> {
        self.validate_bounds()?;
        if self.is_empty() {
            return Ok(());
        }
        self.validate_no_overlap()
    }

    /// The bounds half of [`ArrayLayout::validate`] only: every element inside the buffer.
    /// Enough for an array that is only READ (a source), where strides under which indices
    /// share bytes (e.g. numpy broadcasting with stride 0) are harmless.
    pub fn validate_bounds(&self) -> Result<()> {
        let n = self.shape.len();
        if self.strides.len() != n {
            bail!(InvalidArgument, "array has {n} axes but {} strides", self.strides.len());
        }
        if self.itemsize == 0 {
            bail!(InvalidArgument, "array itemsize is 0");
        }
        if self.is_empty() {
            return Ok(());
        }
        let mut lo = self.offset as i128;
        let mut hi = self.offset as i128 + self.itemsize as i128;
        for j in 0..n {
            // |reach| <= (2^64 - 2) * 2^63 < 2^127 fits, but the sum over several axes may
            // not: checked, or a wrapped sum could pass as a small span (found by fuzzing:
            // a source with two axes of extent 2^64-1 and stride INT64_MIN).
            let reach = (self.shape[j] as i128 - 1) * self.strides[j] as i128;
            let sum = if reach < 0 { lo.checked_add(reach).map(|v| lo = v) } else { hi.checked_add(reach).map(|v| hi = v) };
            if sum.is_none() {
                bail!(
                    BufferTooSmall,
                    "array spans more than 2^127 bytes (axis {j}: offset {}, shape {:?}, strides {:?} bytes), far outside its buffer of {} bytes",
                    self.offset,
                    self.shape,
                    self.strides,
                    self.base_len
                );
            }
        }
        if lo < 0 {
            bail!(
                BufferTooSmall,
                "array reaches byte offset {lo} before the start of its buffer (offset {}, shape {:?}, strides {:?} bytes)",
                self.offset,
                self.shape,
                self.strides
            );
        }
        if hi > self.base_len as i128 {
            bail!(
                BufferTooSmall,
                "array needs bytes up to offset {hi} but its buffer has {} bytes (offset {}, shape {:?}, strides {:?} bytes, itemsize {})",
                self.base_len,
                self.offset,
                self.shape,
                self.strides,
                self.itemsize
            );
        }
        Ok(())
    }

    fn validate_no_overlap(&self) -> Result<()> {
        let n = self.shape.len();
        let mut axes: Vec<usize> = (0..n).filter(|&j| self.shape[j] > 1).collect();
        axes.sort_by_key(|&j| self.strides[j].unsigned_abs());
        let mut span: u128 = self.itemsize as u128;
        for &j in &axes {
            let st = self.strides[j].unsigned_abs() as u128;
            if st < span {
                bail!(
                    InvalidArgument,
                    "array strides overlap: axis {j} (stride {} bytes, extent {}) steps inside the {span} bytes spanned by the axes of smaller stride, \
                     so different indices may share bytes (shape {:?}, strides {:?}, itemsize {}); vh5 writes only arrays whose strides nest \
                     (each at least the span of the smaller ones): write into a contiguous array and copy it into this view",
                    self.strides[j],
                    self.shape[j],
                    self.shape,
                    self.strides,
                    self.itemsize
                );
            }
            span += st * (self.shape[j] as u128 - 1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table<'a>(n: usize, s: &'a [u64], d: &'a [u64], c: &'a [u64], ss: Option<&'a [u64]>, ds: Option<&'a [u64]>) -> SliceTable<'a> {
        SliceTable::new(n, s.len() / n.max(1), s, d, c, ss, ds).unwrap()
    }

    #[test]
    fn strict_bounds_name_row_and_axis() {
        let t = table(2, &[0, 0, 5, 8], &[0, 0, 0, 0], &[2, 2, 1, 3], None, None);
        assert!(row(&t, 0, &[10, 10], &[4, 4], false).unwrap().is_some());
        let e = row(&t, 1, &[10, 10], &[4, 4], false).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::OutOfBounds);
        assert!(e.message.contains("row 1 axis 1") && e.message.contains("index 10") && e.message.contains("extent 10"), "{}", e.message);
        assert_eq!(check_rows(&t, &[10, 10], &[4, 4], false).unwrap_err().kind, crate::error::ErrorKind::OutOfBounds);
        // clip: 8..10 -> 2 elements
        let r = row(&t, 1, &[10, 10], &[4, 4], true).unwrap().unwrap();
        assert_eq!(&r.count[..2], &[1, 2]);
    }

    #[test]
    fn clip_takes_steps_into_account_and_skips_empty() {
        // src 0,3,6,9 (extent 10 fits 4); dst 1,3,5 (extent 6 fits 3) -> 3
        let t = table(1, &[0, 10], &[1, 0], &[100, 5], Some(&[3, 1]), Some(&[2, 1]));
        assert_eq!(row(&t, 0, &[10], &[6], true).unwrap().unwrap().count[0], 3);
        assert_eq!(row(&t, 1, &[10], &[6], true).unwrap(), None);
        assert_eq!(check_rows(&t, &[10], &[6], true).unwrap(), 1);
    }

    #[test]
    fn step_zero_and_overflow() {
        let t = table(2, &[0, 0], &[0, 0], &[0, 1], Some(&[1, 0]), None);
        let e = row(&t, 0, &[4, 4], &[4, 4], true).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::InvalidArgument);
        assert!(e.message.contains("row 0 axis 1: src_step is 0"));
        let t = table(1, &[u64::MAX - 1], &[0], &[3], None, None);
        let e = row(&t, 0, &[u64::MAX], &[4], false).unwrap_err();
        assert!(e.message.contains("overflows uint64"), "{}", e.message);
        // zero count row: no bounds check
        let t = table(1, &[100], &[100], &[0], None, None);
        assert_eq!(row(&t, 0, &[4], &[4], false).unwrap(), None);
        assert!(SliceTable::new(2, 2, &[0; 3], &[0; 4], &[0; 4], None, None).is_err());
    }

    fn lay(shape: &[u64], strides: &[i64], offset: usize, base_len: usize, itemsize: usize) -> ArrayLayout {
        ArrayLayout { shape: shape.to_vec(), strides: strides.to_vec(), offset, base_len, itemsize }
    }

    #[test]
    fn layouts() {
        assert_eq!(ArrayLayout::c_strides(&[3, 4, 5], 8).unwrap(), vec![160, 40, 8]);
        assert!(lay(&[3, 4], &[32, 8], 0, 96, 8).validate().is_ok());
        assert_eq!(lay(&[3, 4], &[32, 8], 0, 95, 8).validate().unwrap_err().kind, crate::error::ErrorKind::BufferTooSmall);
        // Fortran order
        assert!(lay(&[3, 4], &[8, 24], 0, 96, 8).validate().is_ok());
        // negative strides with offset at the last element
        assert!(lay(&[3, 4], &[-32, -8], 88, 96, 8).validate().is_ok());
        assert_eq!(lay(&[3, 4], &[-32, -8], 80, 96, 8).validate().unwrap_err().kind, crate::error::ErrorKind::BufferTooSmall);
        // Per-axis reaches near -2^127 whose sum leaves i128 (it used to wrap to a positive
        // lower bound and pass): refused, not wrapped.
        let e = lay(&[3, u64::MAX, 3, 3], &[-16, i64::MIN, 0, i64::MIN], 5, 7, 2).validate_bounds().unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::BufferTooSmall);
        assert!(e.message.contains("2^127"), "{}", e.message);
        // overlap: stride 0, or stride smaller than the inner span
        assert_eq!(lay(&[3, 4], &[0, 8], 0, 96, 8).validate().unwrap_err().kind, crate::error::ErrorKind::InvalidArgument);
        assert_eq!(lay(&[3, 4], &[16, 8], 0, 96, 8).validate().unwrap_err().kind, crate::error::ErrorKind::InvalidArgument);
        assert_eq!(lay(&[2], &[4], 0, 96, 8).validate().unwrap_err().kind, crate::error::ErrorKind::InvalidArgument);
        // extent-1 axes may have any stride; empty arrays pass
        assert!(lay(&[1, 4], &[0, 8], 0, 32, 8).validate().is_ok());
        assert!(lay(&[0, 4], &[1000, 8], 0, 0, 8).validate().is_ok());
        assert_eq!(lay(&[2, 2], &[-16, 8], 16, 32, 8).byte_offset(&[1, 1]), 8);
    }

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
