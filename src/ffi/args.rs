//! Argument decoders shared by every export that takes arrays or slice tables: one place that
//! turns a `vh5_array` into a dtype and an [`ArrayLayout`] (checking dtype code, rank, item
//! size against the dtype, shape/strides pointers, base vs base_len) and one that borrows the
//! five `nslices * ndim` tables of a many-slice call.

use super::{null_arg, slice_arg};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::transfer::{ArrayLayout, SliceTable};

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
    /// C order (row-major) contiguous. Strides under which two different indices would share a
    /// byte are rejected.
    pub strides: *const i64,
}

/// Describe a `vh5_array` (argument `name`) without borrowing its memory: base pointer (NULL
/// when `base_len` is 0), dtype and layout.
///
/// `check_itemsize`: refuse an item size other than the dtype's here (copies and writes);
/// reads check it later, after the tables, so a NULL table is reported first (the order the
/// slice fuzz oracle and the hostile-input table pin).
///
/// # Safety
/// `a.shape`/`a.strides` must hold `ndim` entries when not NULL.
pub(crate) unsafe fn array_parts(a: &vh5_array, name: &str, check_itemsize: bool) -> Result<(*mut u8, Dtype, ArrayLayout)> {
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
    let shape = slice_arg(a.shape, n, &format!("{name}.shape"))?.to_vec();
    let strides = if a.strides.is_null() {
        ArrayLayout::c_strides(&shape, a.itemsize).ok_or_else(|| err!(InvalidArgument, "{name}.shape {shape:?} x itemsize {} overflows", a.itemsize))?
    } else {
        slice_arg(a.strides, n, &format!("{name}.strides"))?.to_vec()
    };
    if a.base.is_null() && a.base_len != 0 {
        return Err(null_arg(&format!("{name}.base")));
    }
    let base = if a.base_len == 0 { std::ptr::NonNull::<u8>::dangling().as_ptr() } else { a.base as *mut u8 };
    Ok((base, dtype, ArrayLayout { shape, strides, offset: a.offset, base_len: a.base_len, itemsize: a.itemsize }))
}

/// Borrow the five tables of `nslices * ndim` values (steps optional).
///
/// # Safety
/// Each non-NULL pointer must hold `nslices * ndim` values.
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
    let opt = |p: *const u64, name: &str| -> Result<Option<&'a [u64]>> {
        if p.is_null() {
            Ok(None)
        } else {
            Ok(Some(slice_arg(p, len, name)?))
        }
    };
    SliceTable::new(
        ndim,
        nslices,
        slice_arg(src_start, len, "src_start")?,
        slice_arg(dst_start, len, "dst_start")?,
        slice_arg(count, len, "count")?,
        opt(src_step, "src_step")?,
        opt(dst_step, "dst_step")?,
    )
}
