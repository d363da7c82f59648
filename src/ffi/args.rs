//! Argument decoders shared by every export that takes arrays or slice tables: one place that
//! turns a `vh5_array` into a dtype and an [`ArrayLayout`] ([`array_parts`]: checking the
//! pointer, dtype code, rank, item size against the dtype, shape/strides pointers, base vs
//! base_len; [`dst_array`] / [`src_array`] borrow its memory on top) and one that borrows the
//! five `nslices * ndim` tables of a many-slice call ([`table_args`]).

use super::{null_arg, slice_arg};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::transfer::{ArrayLayout, DstArray, SliceTable, SrcArray};

/// Maximum number of axes of a dataset or array (HDF5's `H5S_MAX_RANK`).
pub const VH5_MAX_RANK: u32 = 32;

/// A caller-owned strided array (the destination of `vh5_read_many_slices`).
///
/// Element `[i0, ..., i(n-1)]` starts at byte `offset + sum(ik * strides[k])` of `base`.
/// vh5 validates that every element of the array lies inside `[base, base + base_len)` and
/// never reads or writes outside it. All pointers are borrowed for the duration of the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vh5_array {
    /// Start of the caller's buffer. May be NULL only when `base_len` is 0.
    pub base: *mut std::ffi::c_void,
    /// Length of the buffer in BYTES.
    pub base_len: usize,
    /// Bytes from `base` to element [0, ..., 0] (non-zero for negative strides or views).
    pub offset: usize,
    /// Element type `VH5_DTYPE_*`.
    pub dtype: u32,
    /// Bytes per element; must equal the dtype's size (required for `VH5_DTYPE_OPAQUE`, where
    /// it must equal the dataset's memory `itemsize` from `vh5_dataset_get_info`).
    pub itemsize: usize,
    /// Number of axes (at most `VH5_MAX_RANK`; 0 for a single element).
    pub ndim: u32,
    /// `ndim` extents, elements (may be NULL when `ndim` is 0).
    pub shape: *const u64,
    /// `ndim` strides in BYTES, possibly negative or not multiples of `itemsize`; NULL means
    /// C order (row-major) contiguous. Written arrays (destinations) must have nested strides:
    /// taken by magnitude, each axis's stride at least the byte span of the axes with smaller
    /// strides. That rejects every layout under which two different indices share a byte, and
    /// also a few exotic ones (`as_strided` interleavings) under which none do.
    pub strides: *const i64,
}

/// Describe the `vh5_array` at `a` (argument `name`) without borrowing its memory: base
/// pointer (dangling but non-NULL when `base_len` is 0), dtype and layout. `NullArgument`
/// when `a` is NULL.
///
/// `check_itemsize`: refuse an item size other than the dtype's here (copies and writes);
/// reads check it later, after the tables, so a NULL table is reported first (the order the
/// slice fuzz oracle and the hostile-input table pin).
///
/// # Safety
/// `a` must be NULL or point to a `vh5_array` whose `shape`/`strides` hold `ndim` entries
/// when not NULL.
pub(crate) unsafe fn array_parts(a: *const vh5_array, name: &str, check_itemsize: bool) -> Result<(*mut u8, Dtype, ArrayLayout)> {
    // SAFETY: `a` is NULL or points to a `vh5_array` (this function's contract).
    let a = unsafe { a.as_ref() }.ok_or_else(|| null_arg(name))?;
    let dtype = Dtype::from_code(a.dtype).ok_or_else(|| err!(Dtype, "{name}.dtype: unknown dtype code {}", a.dtype))?;
    if a.ndim > VH5_MAX_RANK {
        bail!(Unsupported, "{name}.ndim {}: at most {VH5_MAX_RANK} axes are supported", a.ndim);
    }
    if a.itemsize == 0 {
        bail!(InvalidArgument, "{name}.itemsize is 0");
    }
    if check_itemsize {
        if let Some(sz) = dtype.itemsize() {
            if sz != a.itemsize {
                bail!(InvalidArgument, "{name}.itemsize {} does not match its dtype {} ({sz} bytes)", a.itemsize, dtype.name());
            }
        }
    }
    let n = a.ndim as usize;
    // The argument names are formatted only for an error (this runs on every call).
    if n > 0 && a.shape.is_null() {
        return Err(null_arg(&format!("{name}.shape")));
    }
    // SAFETY: `shape` holds `ndim` entries, non-NULL when `ndim` > 0 (this function's contract).
    let shape = unsafe { slice_arg(a.shape, n, "shape") }?.to_vec();
    let strides = if a.strides.is_null() {
        ArrayLayout::c_strides(&shape, a.itemsize).ok_or_else(|| err!(InvalidArgument, "{name}.shape {shape:?} x itemsize {} overflows", a.itemsize))?
    } else {
        // SAFETY: as for `shape` (non-NULL here).
        unsafe { slice_arg(a.strides, n, "strides") }?.to_vec()
    };
    if a.base.is_null() && a.base_len != 0 {
        return Err(null_arg(&format!("{name}.base")));
    }
    let base = if a.base_len == 0 { std::ptr::NonNull::<u8>::dangling().as_ptr() } else { a.base as *mut u8 };
    Ok((base, dtype, ArrayLayout { shape, strides, offset: a.offset, base_len: a.base_len, itemsize: a.itemsize }))
}

/// Borrow the `vh5_array` at `a` (argument `name`) as a destination: checks as
/// [`array_parts`] without the item size (see there).
///
/// # Safety
/// As [`array_parts`], and `a.base` valid for reads and writes of `a.base_len` bytes, not
/// accessed by anyone else, for `'a`.
pub(crate) unsafe fn dst_array<'a>(a: *const vh5_array, name: &str) -> Result<DstArray<'a>> {
    // SAFETY: this function's contract.
    let (base, dtype, layout) = unsafe { array_parts(a, name, false) }?;
    // SAFETY: `base` is valid for reads and writes of `base_len` bytes for `'a` (this function's
    // contract; dangling but non-NULL when 0, valid for an empty slice).
    let buf = unsafe { std::slice::from_raw_parts_mut(base, layout.base_len) };
    Ok(DstArray { buf, layout, dtype })
}

/// Borrow the `vh5_array` at `a` (argument `name`) as a source: checks as [`array_parts`],
/// item size included.
///
/// # Safety
/// As [`array_parts`], and `a.base` valid for reads of `a.base_len` bytes, not written by
/// anyone, for `'a`.
pub(crate) unsafe fn src_array<'a>(a: *const vh5_array, name: &str) -> Result<SrcArray<'a>> {
    // SAFETY: this function's contract.
    let (base, dtype, layout) = unsafe { array_parts(a, name, true) }?;
    // SAFETY: `base` is valid for reads of `base_len` bytes for `'a` (this function's contract;
    // dangling but non-NULL when 0, valid for an empty slice).
    let buf = unsafe { std::slice::from_raw_parts(base as *const u8, layout.base_len) };
    Ok(SrcArray { buf, layout, dtype })
}

/// Borrow the five tables of `nslices * ndim` values (steps optional) of a many-slice call.
///
/// # Safety
/// Each non-NULL pointer must hold `nslices * ndim` values, not written during `'a`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn table_args<'a>(
    ndim: usize,
    nslices: usize,
    src_start: *const u64,
    dst_start: *const u64,
    count: *const u64,
    src_step: *const u64,
    dst_step: *const u64,
) -> Result<SliceTable<'a>> {
    let len = nslices.checked_mul(ndim).ok_or_else(|| err!(InvalidArgument, "nslices {nslices} x ndim {ndim} overflows"))?;
    // SAFETY: every table holds `len` values when not NULL (this function's contract).
    let table = |p: *const u64, name: &str| unsafe { slice_arg(p, len, name) };
    let opt = |p: *const u64, name: &str| if p.is_null() { Ok(None) } else { table(p, name).map(Some) };
    SliceTable::new(ndim, nslices, table(src_start, "src_start")?, table(dst_start, "dst_start")?, table(count, "count")?, opt(src_step, "src_step")?, opt(dst_step, "dst_step")?)
}
