//! Argument decoders shared by every export that takes arrays or slice tables: one place that
//! turns a `vh5_array` into a dtype and an [`ArrayLayout`] ([`array_parts`]: checking the
//! pointer, dtype code, rank, item size against the dtype, shape/strides pointers, base vs
//! base_len; [`dst_array`] / [`src_array`] borrow its memory on top) and one that borrows the
//! five `nslices * ndim` tables of a many-slice call, always copying them first ([`table_args`]).

use std::sync::Mutex;

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
    /// it must equal the dataset's memory `itemsize` from `vh5_dataset_get_info`; only the
    /// size is checked: the records' layout must be the one `vh5_dataset_mem_type` describes).
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

/// Borrow the memory of a destination described by [`array_parts`] (`base`, `layout`): the
/// last step of decoding a destination, after the slice tables ([`table_args`] copies them
/// before any reference to the destination's bytes exists).
///
/// # Safety
/// `base` valid for reads and writes of `layout.base_len` bytes (dangling but non-NULL when
/// 0), not accessed by anyone else (the tables included), for `'a`.
pub(crate) unsafe fn dst_array<'a>(base: *mut u8, dtype: Dtype, layout: ArrayLayout) -> DstArray<'a> {
    // SAFETY: this function's contract (a dangling non-NULL pointer is valid for an empty slice).
    let buf = unsafe { std::slice::from_raw_parts_mut(base, layout.base_len) };
    DstArray { buf, layout, dtype }
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

/// Table copies kept between calls, all threads together: at most [`TABLE_POOL_BUFFERS`]
/// buffers and [`TABLE_POOL_BYTES`] bytes. A many-slice call copies its tables (see
/// [`table_args`]); a fresh buffer of 262,144 2-D rows (20 MB) is fresh pages, thousands of
/// page faults per call, so the buffers of earlier calls are reused (memory already touched).
static TABLE_POOL: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());

/// The table-copy pool keeps at most this many bytes (32 MiB: the tables of 262,144 2-D rows
/// with steps, and a smaller call's beside them); a larger copy is freed when its call ends.
pub(crate) const TABLE_POOL_BYTES: usize = 32 << 20;

/// The table-copy pool keeps at most this many buffers.
pub(crate) const TABLE_POOL_BUFFERS: usize = 4;

/// A buffer for the copies of a call's slice tables: taken from the process-wide pool (the
/// smallest with room, else the largest) and given back when dropped.
#[derive(Default)]
pub(crate) struct TableCopy(Vec<u64>);

impl TableCopy {
    /// A buffer from the pool (empty when the pool is).
    pub(crate) fn take(values: usize) -> TableCopy {
        let mut pool = TABLE_POOL.lock().unwrap_or_else(|e| e.into_inner());
        let room = |k: &usize| pool[*k].capacity();
        let fit = (0..pool.len()).filter(|k| room(k) >= values).min_by_key(room);
        match fit.or_else(|| (0..pool.len()).max_by_key(room)) {
            Some(k) => TableCopy(pool.swap_remove(k)),
            None => TableCopy(Vec::new()),
        }
    }
}

impl Drop for TableCopy {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.0);
        if v.capacity() == 0 || v.capacity().saturating_mul(8) > TABLE_POOL_BYTES {
            return;
        }
        v.clear();
        let mut pool = TABLE_POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.push(v);
        // Drop the smallest buffers until the pool is within its bounds (freed outside the lock).
        let mut out = Vec::new();
        while pool.len() > TABLE_POOL_BUFFERS || pool.iter().map(|b| b.capacity() * 8).sum::<usize>() > TABLE_POOL_BYTES {
            let k = (0..pool.len()).min_by_key(|&k| pool[k].capacity()).unwrap_or(0);
            out.push(pool.swap_remove(k));
        }
        drop(pool);
        drop(out);
    }
}

/// The five tables of `nslices * ndim` values (steps optional) of a many-slice call, copied
/// into `copies` before anything is written: the call works on a snapshot of the tables as
/// they were when it started. A row writing into a later row's table entries cannot change
/// that row after it was validated (it did, and a copy then wrote outside its destination).
/// Always copied, whatever their addresses: a second mapping of the destination's pages
/// (two `mmap`s of one file, two `np.memmap`s) aliases it at other addresses, which no
/// address comparison sees. The copy costs one pass over `nslices * ndim * 8` bytes per
/// table (buffers reused between calls: [`TableCopy`]).
///
/// # Safety
/// Each non-NULL pointer must hold `nslices * ndim` values, readable at the start of the call.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn table_args<'a>(
    ndim: usize,
    nslices: usize,
    src_start: *const u64,
    dst_start: *const u64,
    count: *const u64,
    src_step: *const u64,
    dst_step: *const u64,
    copies: &'a mut Option<TableCopy>,
) -> Result<SliceTable<'a>> {
    let len = nslices.checked_mul(ndim).ok_or_else(|| err!(InvalidArgument, "nslices {nslices} x ndim {ndim} overflows"))?;
    let ptrs = [(src_start, "src_start", true), (dst_start, "dst_start", true), (count, "count", true), (src_step, "src_step", false), (dst_step, "dst_step", false)];
    // NULL checks first, in argument order (the order of the statuses).
    for &(p, name, required) in &ptrs {
        if required && p.is_null() && len > 0 {
            return Err(null_arg(name));
        }
    }
    if len == 0 {
        let opt = |p: *const u64| (!p.is_null()).then_some(&[] as &[u64]);
        return SliceTable::new(ndim, nslices, &[], &[], &[], opt(src_step), opt(dst_step));
    }
    let present = ptrs.iter().filter(|&&(p, _, _)| !p.is_null()).count();
    let values = len.checked_mul(present).ok_or_else(|| err!(InvalidArgument, "nslices {nslices} x ndim {ndim} x {present} tables overflows"))?;
    let buf = &mut copies.insert(TableCopy::take(values)).0;
    buf.clear();
    buf.try_reserve_exact(values).map_err(|e| err!(NoMemory, "copying the slice tables: cannot allocate {values} values ({e})"))?;
    for &(p, _, _) in &ptrs {
        if !p.is_null() {
            // SAFETY: `p` holds `len` values (this function's contract); they are read before
            // anything is written, and no reference to them is kept.
            unsafe { buf.extend_from_slice(std::slice::from_raw_parts(p, len)) };
        }
    }
    // The required tables are present here (checked above).
    let mut rest: &'a [u64] = buf;
    let mut take = |p: *const u64| {
        if p.is_null() {
            return None;
        }
        let (t, r) = rest.split_at(len);
        rest = r;
        Some(t)
    };
    let (s, d, c) = (take(src_start).unwrap_or(&[]), take(dst_start).unwrap_or(&[]), take(count).unwrap_or(&[]));
    let (ss, ds) = (take(src_step), take(dst_step));
    SliceTable::new(ndim, nslices, s, d, c, ss, ds)
}
