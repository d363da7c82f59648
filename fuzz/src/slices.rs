//! Oracle and harness for the many-slice fuzz targets (`slices_copy`, `slices_read`) and the
//! stable property test tests/slices_guard_prop.rs, which includes this file with `#[path]`
//! (so it uses only `std` and `vh5`).
//!
//! A case is built from a stream of bytes ([`Pick`]: the fuzz targets feed it from
//! `arbitrary::Unstructured`, the property test from proptest bytes): random rank (0..=4,
//! sometimes up to 33), shapes (0-size axes, huge extents), dtypes and item sizes (also
//! unknown codes and wrong sizes), array layouts (C / Fortran / permuted / padded / reversed
//! axes, NULL strides, and per-axis wild strides: 0, small, huge, negative), offsets and
//! buffer lengths around the exact minimum, slice tables (huge starts, counts and steps,
//! steps of 0, NULL tables) and flags (unknown bits, CLIP, CONVERT).
//!
//! The expected outcome is computed here, independently of vh5, from the C header's contract:
//! the status vh5 must return (checks in the documented order), the row and axis an
//! out-of-bounds or step-0 error names, and on success every byte of every buffer (rows
//! applied in order, element by element, index arithmetic in i128/u128, each row of a copy
//! gathered before it is scattered: the memmove rule). Buffers are allocated at exactly
//! their declared length plus `guard` canary bytes on each side (guard 0 under
//! AddressSanitizer, where the allocation's own red zones catch any overrun); after the
//! call every byte outside the declared destination region must be unchanged, the source
//! must be unchanged, and on failure nothing may have been written.
#![allow(dead_code)]

use vh5::ffi::hdf5::vh5_array;
use vh5::ffi::vh5_status;

/// Case generation from a byte stream (fuzz/src/slices_gen.rs).
#[path = "slices_gen.rs"]
mod gen;
pub use gen::*;
/// The two directions through HDF5: reads and writes (fuzz/src/slices_hdf5.rs).
#[path = "slices_hdf5.rs"]
mod hdf5;
pub use hdf5::*;

/// Canary byte around every buffer.
pub const GUARD: u8 = 0xa5;
/// Largest buffer a case allocates (bytes).
pub const MAX_BUF: usize = 1 << 16;
const MAX_RANK: usize = 32;

/// Status classes of the contract (`vh5_status` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum St {
    Ok,
    Null,
    Invalid,
    Unsupported,
    TooSmall,
    Oob,
    Dtype,
}

impl St {
    pub fn status(self) -> vh5_status {
        match self {
            St::Ok => vh5_status::VH5_OK,
            St::Null => vh5_status::VH5_ERR_NULL_ARGUMENT,
            St::Invalid => vh5_status::VH5_ERR_INVALID_ARGUMENT,
            St::Unsupported => vh5_status::VH5_ERR_UNSUPPORTED,
            St::TooSmall => vh5_status::VH5_ERR_BUFFER_TOO_SMALL,
            St::Oob => vh5_status::VH5_ERR_OUT_OF_BOUNDS,
            St::Dtype => vh5_status::VH5_ERR_DTYPE,
        }
    }
}

/// The expected failure: status, and what the message must contain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    pub st: St,
    /// Substring the last-error message must contain ("row 3 axis 1", "dst:", ...).
    pub needle: Option<String>,
}

fn fail(st: St, needle: Option<String>) -> Fail {
    Fail { st, needle }
}

/// One `vh5_array` as the caller declares it.
#[derive(Debug, Clone)]
pub struct ArraySpec {
    pub dtype: u32,
    pub itemsize: usize,
    pub shape: Vec<u64>,
    /// `None`: NULL strides (C order).
    pub strides: Option<Vec<i64>>,
    pub offset: usize,
    pub base_len: usize,
    /// Pass NULL as `base` (only generated when `base_len` is 0, where it is allowed).
    pub null_base: bool,
}

/// The five tables, `nslices * ndim` values each (`ndim` = the destination's rank).
#[derive(Debug, Clone, Default)]
pub struct Tables {
    pub nslices: usize,
    pub src_start: Vec<u64>,
    pub dst_start: Vec<u64>,
    pub count: Vec<u64>,
    pub src_step: Option<Vec<u64>>,
    pub dst_step: Option<Vec<u64>>,
    /// Pass NULL for table k (0 src_start, 1 dst_start, 2 count) although it has entries.
    pub null_table: Option<u8>,
}

// ---------------------------------------------------------------------------------------
// Independent model of the contract.

/// Bytes per element of a dtype code: `None` unknown code, `Some(None)` opaque (any size).
fn dtype_size(code: u32) -> Option<Option<usize>> {
    Some(Some(match code {
        1 | 2 | 6 => 1,
        3 | 7 | 10 => 2,
        4 | 8 | 11 => 4,
        5 | 9 | 12 | 13 => 8,
        14 => 16,
        15 => return Some(None),
        _ => return None,
    }))
}

/// C-order byte strides (`None` when shape x itemsize does not fit int64: vh5 refuses).
fn c_strides(shape: &[u64], itemsize: usize) -> Option<Vec<i64>> {
    let mut s = vec![0i64; shape.len()];
    let mut acc: i128 = itemsize as i128;
    for j in (0..shape.len()).rev() {
        if acc > i64::MAX as i128 {
            return None;
        }
        s[j] = acc as i64;
        acc = acc.checked_mul(shape[j].max(1) as i128)?;
    }
    (acc <= i64::MAX as i128).then_some(s)
}

/// The array's resolved strides, or the status of the first per-array check that fails
/// (the checks `vh5_array` arguments get before anything else).
fn array_strides(a: &ArraySpec, check_itemsize: bool) -> Result<Vec<i64>, St> {
    let size = dtype_size(a.dtype).ok_or(St::Dtype)?;
    if a.shape.len() > MAX_RANK {
        return Err(St::Unsupported);
    }
    if a.itemsize == 0 {
        return Err(St::Invalid);
    }
    if check_itemsize && size.is_some_and(|s| s != a.itemsize) {
        return Err(St::Invalid);
    }
    match &a.strides {
        Some(s) => Ok(s.clone()),
        None => c_strides(&a.shape, a.itemsize).ok_or(St::Invalid),
    }
}

fn is_empty(shape: &[u64]) -> bool {
    shape.contains(&0)
}

/// Every element inside `[0, base_len)` (exact integer arithmetic; zero-size arrays pass).
fn in_bounds(shape: &[u64], strides: &[i64], offset: usize, itemsize: usize, base_len: usize) -> bool {
    if is_empty(shape) {
        return true;
    }
    // |reach| < 2^127 per axis; sums of up to 32 axes can exceed i128: then far outside.
    let (mut lo, mut hi) = (offset as i128, offset as i128 + itemsize as i128);
    for (&e, &s) in shape.iter().zip(strides) {
        let reach = (e as i128 - 1) * s as i128;
        let r = if reach < 0 { lo.checked_add(reach).map(|v| lo = v) } else { hi.checked_add(reach).map(|v| hi = v) };
        if r.is_none() {
            return false;
        }
    }
    lo >= 0 && hi <= base_len as i128
}

/// numpy's conservative self-overlap rule (documented in vh5::geometry): sorted by
/// |stride|, every axis of extent > 1 must step over the span of all smaller ones.
fn self_overlaps(shape: &[u64], strides: &[i64], itemsize: usize) -> bool {
    let mut axes: Vec<(u128, u64)> = shape.iter().zip(strides).filter(|(&e, _)| e > 1).map(|(&e, &s)| (s.unsigned_abs() as u128, e)).collect();
    axes.sort();
    let mut span = itemsize as u128;
    for (st, e) in axes {
        if st < span {
            return true;
        }
        span = span.saturating_add(st.saturating_mul(e as u128 - 1));
    }
    false
}

/// Byte offset (from the buffer start) of element `idx`.
fn addr(a: &ArraySpec, strides: &[i64], idx: &[u128]) -> usize {
    let mut o = a.offset as i128;
    for (k, &i) in idx.iter().enumerate() {
        o += i as i128 * strides[k] as i128;
    }
    usize::try_from(o).expect("model: element before the buffer")
}

/// Validate the rows against the extents (the contract's order: all steps of a row first,
/// then a zero count skips the row, then per axis source before destination). Returns each
/// row's effective counts (`None`: copies nothing).
fn check_rows(t: &Tables, n: usize, src_shape: &[u64], dst_shape: &[u64], clip: bool) -> Result<Vec<Option<Vec<u64>>>, Fail> {
    let mut out = Vec::with_capacity(t.nslices);
    'rows: for i in 0..t.nslices {
        let b = i * n;
        let ss = |j: usize| t.src_step.as_ref().map_or(1, |s| s[b + j]);
        let ds = |j: usize| t.dst_step.as_ref().map_or(1, |s| s[b + j]);
        for j in 0..n {
            if ss(j) == 0 || ds(j) == 0 {
                return Err(fail(St::Invalid, Some(format!("row {i} axis {j}"))));
            }
        }
        if t.count[b..b + n].contains(&0) {
            out.push(None);
            continue;
        }
        let mut cnt = vec![0u64; n];
        for j in 0..n {
            let c = t.count[b + j];
            let fit = |start: u64, step: u64, extent: u64| -> u128 {
                if start >= extent {
                    0
                } else {
                    (extent - 1 - start) as u128 / step as u128 + 1
                }
            };
            let fs = fit(t.src_start[b + j], ss(j), src_shape[j]);
            let fd = fit(t.dst_start[b + j], ds(j), dst_shape[j]);
            if clip {
                let k = (c as u128).min(fs).min(fd) as u64;
                if k == 0 {
                    out.push(None);
                    continue 'rows;
                }
                cnt[j] = k;
            } else {
                if (c as u128) > fs || (c as u128) > fd {
                    return Err(fail(St::Oob, Some(format!("row {i} axis {j}"))));
                }
                cnt[j] = c;
            }
        }
        out.push(Some(cnt));
    }
    Ok(out)
}

/// C-order odometer over `counts` (at least one axis, no zero count).
fn for_each_index(counts: &[u64], mut f: impl FnMut(&[u64])) {
    let n = counts.len();
    let mut k = vec![0u64; n];
    loop {
        f(&k);
        let mut j = n;
        loop {
            if j == 0 {
                return;
            }
            j -= 1;
            k[j] += 1;
            if k[j] < counts[j] {
                break;
            }
            k[j] = 0;
        }
    }
}

/// Where the pieces of a copy live in the model's buffers.
struct Side<'a> {
    a: &'a ArraySpec,
    strides: &'a [i64],
}

/// Apply validated rows: element e of row i goes from source index `s + k*ss` to
/// destination index `d + k*ds`. `read(off)` fetches a source element (`itemsize` bytes at
/// byte `off` of the source buffer); every row is gathered completely before it is written.
#[allow(clippy::too_many_arguments)]
fn apply_rows(t: &Tables, n: usize, eff: &[Option<Vec<u64>>], src: Side, dst: Side, size: usize, read: impl FnMut(usize, &mut Vec<u8>), write: impl FnMut(usize, &[u8])) {
    apply_rows_conv(t, n, eff, src, dst, size, read, |_| {}, write)
}

/// [`apply_rows`] with a conversion of each gathered row (`conv` turns the row's source
/// elements into destination elements of `dst.a.itemsize` bytes each).
#[allow(clippy::too_many_arguments)]
fn apply_rows_conv(
    t: &Tables,
    n: usize,
    eff: &[Option<Vec<u64>>],
    src: Side,
    dst: Side,
    _src_size: usize,
    mut read: impl FnMut(usize, &mut Vec<u8>),
    mut conv: impl FnMut(&mut Vec<u8>),
    mut write: impl FnMut(usize, &[u8]),
) {
    let size = dst.a.itemsize;
    let mut tmp = Vec::new();
    for (i, cnt) in eff.iter().enumerate() {
        let Some(cnt) = cnt else { continue };
        let b = i * n;
        let ss = |j: usize| t.src_step.as_ref().map_or(1, |s| s[b + j]) as u128;
        let ds = |j: usize| t.dst_step.as_ref().map_or(1, |s| s[b + j]) as u128;
        tmp.clear();
        if n == 0 {
            read(addr(src.a, src.strides, &[]), &mut tmp);
            conv(&mut tmp);
            write(addr(dst.a, dst.strides, &[]), &tmp);
            continue;
        }
        let mut idx = vec![0u128; n];
        for_each_index(cnt, |k| {
            for j in 0..n {
                idx[j] = t.src_start[b + j] as u128 + k[j] as u128 * ss(j);
            }
            read(addr(src.a, src.strides, &idx), &mut tmp);
        });
        conv(&mut tmp);
        let mut e = 0;
        for_each_index(cnt, |k| {
            for j in 0..n {
                idx[j] = t.dst_start[b + j] as u128 + k[j] as u128 * ds(j);
            }
            write(addr(dst.a, dst.strides, &idx), &tmp[e..e + size]);
            e += size;
        });
    }
}

fn tables_null(t: &Tables, n: usize) -> bool {
    t.nslices * n > 0 && t.null_table.is_some_and(|k| k < 3)
}

// ---------------------------------------------------------------------------------------
// Buffers.

/// A buffer with `guard` canary bytes before and after `len` declared bytes, allocated at
/// exactly `2*guard + len` bytes.
pub struct Guarded {
    pub bytes: Box<[u8]>,
    pub guard: usize,
    pub len: usize,
}

impl Guarded {
    pub fn new(len: usize, guard: usize, seed: u8) -> Guarded {
        let mut bytes = vec![GUARD; len + 2 * guard].into_boxed_slice();
        let mut x = (seed as u32).wrapping_mul(2654435761).wrapping_add(12345);
        for b in &mut bytes[guard..guard + len] {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            *b = (x >> 16) as u8;
        }
        Guarded { bytes, guard, len }
    }
    pub fn ptr(&mut self) -> *mut u8 {
        // SAFETY: guard <= bytes.len().
        unsafe { self.bytes.as_mut_ptr().add(self.guard) }
    }
}

fn varr(a: &ArraySpec, base: *mut u8) -> vh5_array {
    vh5_array {
        base: if a.null_base { std::ptr::null_mut() } else { base.cast() },
        base_len: a.base_len,
        offset: a.offset,
        dtype: a.dtype,
        itemsize: a.itemsize,
        ndim: a.shape.len() as u32,
        shape: if a.shape.is_empty() { std::ptr::null() } else { a.shape.as_ptr() },
        strides: a.strides.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
    }
}

/// The table pointers as the call passes them.
fn table_ptrs(t: &Tables) -> [*const u64; 5] {
    let p = |v: &Vec<u64>, k: u8| if t.null_table == Some(k) || v.is_empty() { std::ptr::null() } else { v.as_ptr() };
    let q = |v: &Option<Vec<u64>>, k: u8| match v {
        Some(v) if t.null_table != Some(k) && !v.is_empty() => v.as_ptr(),
        _ => std::ptr::null(),
    };
    [p(&t.src_start, 0), p(&t.dst_start, 1), p(&t.count, 2), q(&t.src_step, 3), q(&t.dst_step, 4)]
}

/// Like [`Tables`] but with the NULL step tables (null_table 3/4) seen as absent.
fn effective_tables(t: &Tables) -> Tables {
    let mut e = t.clone();
    if t.null_table == Some(3) {
        e.src_step = None;
    }
    if t.null_table == Some(4) {
        e.dst_step = None;
    }
    e
}

pub fn last_error() -> String {
    // SAFETY: NULL with cap 0 returns the length.
    let n = unsafe { vh5::ffi::vh5_last_error_message(std::ptr::null_mut(), 0) };
    let mut b = vec![0u8; n + 1];
    // SAFETY: b holds n + 1 bytes.
    unsafe { vh5::ffi::vh5_last_error_message(b.as_mut_ptr().cast(), n + 1) };
    String::from_utf8_lossy(&b[..n]).into_owned()
}

fn check_status(what: &str, got: vh5_status, msg: &str, want: &Result<(), Fail>, case: &dyn std::fmt::Debug) {
    match want {
        Ok(()) => assert_eq!(got, vh5_status::VH5_OK, "{what}: expected VH5_OK, got {got:?}: {msg} in {case:?}"),
        Err(f) => {
            assert_eq!(got, f.st.status(), "{what}: expected {:?}, got {got:?}: {msg} in {case:?}", f.st);
            assert!(!msg.is_empty(), "{what}: empty error message");
            if let Some(n) = &f.needle {
                assert!(msg.contains(n.as_str()), "{what}: message should contain {n:?}: {msg} in {case:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// vh5_copy_many_slices.

/// One memory-to-memory copy.
#[derive(Debug, Clone)]
pub struct CopyCase {
    pub src: ArraySpec,
    pub dst: ArraySpec,
    /// Source and destination are views of ONE buffer (`base_len` of both = the larger).
    pub same_buffer: bool,
    pub tables: Tables,
    pub flags: u32,
    pub seed: u8,
}

/// The contract of `vh5_copy_many_slices` (C header) for `c`: the failure, or the rows'
/// effective counts.
pub fn expect_copy(c: &CopyCase) -> Result<Vec<Option<Vec<u64>>>, Fail> {
    let sstr = array_strides(&c.src, true).map_err(|s| fail(s, None))?;
    let dstr = array_strides(&c.dst, true).map_err(|s| fail(s, None))?;
    let n = c.dst.shape.len();
    if tables_null(&c.tables, n) {
        return Err(fail(St::Null, None));
    }
    if c.flags & !1 != 0 {
        return Err(fail(St::Invalid, Some("flags".into())));
    }
    if c.src.dtype != c.dst.dtype || c.src.itemsize != c.dst.itemsize {
        return Err(fail(St::Dtype, None));
    }
    if c.src.shape.len() != n {
        return Err(fail(St::Invalid, None));
    }
    let size = c.src.itemsize;
    if !in_bounds(&c.src.shape, &sstr, c.src.offset, size, c.src.base_len) {
        return Err(fail(St::TooSmall, Some("src:".into())));
    }
    if !in_bounds(&c.dst.shape, &dstr, c.dst.offset, size, c.dst.base_len) {
        return Err(fail(St::TooSmall, Some("dst:".into())));
    }
    if !is_empty(&c.dst.shape) && self_overlaps(&c.dst.shape, &dstr, size) {
        return Err(fail(St::Invalid, Some("dst:".into())));
    }
    check_rows(&effective_tables(&c.tables), n, &c.src.shape, &c.dst.shape, c.flags & 1 != 0)
}

/// Run `vh5_copy_many_slices` on `c` with `guard` canary bytes around each buffer and
/// assert the contract. Returns the status.
pub fn run_copy(c: &CopyCase, guard: usize) -> vh5_status {
    let want = expect_copy(c);
    let size = c.src.itemsize;
    let n = c.dst.shape.len();
    // Model buffers.
    let mut sbuf = Guarded::new(c.src.base_len, guard, c.seed);
    let mut dbuf = Guarded::new(if c.same_buffer { 0 } else { c.dst.base_len }, guard, c.seed ^ 0x5c);
    let s0 = sbuf.bytes.clone();
    let d0 = dbuf.bytes.clone();
    let mut ms = s0.to_vec();
    let mut md = d0.to_vec();
    if let Ok(eff) = &want {
        let (sstr, dstr) = (array_strides(&c.src, true).unwrap(), array_strides(&c.dst, true).unwrap());
        let t = effective_tables(&c.tables);
        if c.same_buffer {
            let cell = std::cell::RefCell::new(&mut ms);
            apply_rows(
                &t,
                n,
                eff,
                Side { a: &c.src, strides: &sstr },
                Side { a: &c.dst, strides: &dstr },
                size,
                |o, v| v.extend_from_slice(&cell.borrow()[guard + o..guard + o + size]),
                |o, b| cell.borrow_mut()[guard + o..guard + o + size].copy_from_slice(b),
            );
        } else {
            apply_rows(
                &t,
                n,
                eff,
                Side { a: &c.src, strides: &sstr },
                Side { a: &c.dst, strides: &dstr },
                size,
                |o, v| v.extend_from_slice(&ms[guard + o..guard + o + size]),
                |o, b| md[guard + o..guard + o + size].copy_from_slice(b),
            );
        }
    }
    // The call.
    let sp = sbuf.ptr();
    let dp = if c.same_buffer { sp } else { dbuf.ptr() };
    let (sa, da) = (varr(&c.src, sp), varr(&c.dst, dp));
    let tp = table_ptrs(&c.tables);
    // SAFETY: every pointer is valid for what the arrays and tables declare (base_len bytes
    // of each buffer, ndim shape/stride entries, nslices*ndim table entries), or NULL.
    let st = unsafe { vh5::ffi::slices_write::vh5_copy_many_slices(&sa, &da, c.tables.nslices, tp[0], tp[1], tp[2], tp[3], tp[4], c.flags) };
    let msg = if st == vh5_status::VH5_OK { String::new() } else { last_error() };
    assert_ne!(st, vh5_status::VH5_ERR_PANIC, "vh5 panicked: {msg} in {c:?}");
    check_status("copy", st, &msg, &want.as_ref().map(|_| ()).map_err(|f| f.clone()), c);
    // Bytes: on failure nothing written; on success exactly the model (guards included).
    let first_diff = |a: &[u8], b: &[u8]| a.iter().zip(b).position(|(x, y)| x != y);
    if want.is_ok() {
        assert!(
            sbuf.bytes[..] == ms[..],
            "{} buffer differs from the model at byte {:?} (guard {guard}) in {c:?}",
            if c.same_buffer { "shared" } else { "source" },
            first_diff(&sbuf.bytes, &ms).map(|i| i as isize - guard as isize)
        );
        assert!(
            dbuf.bytes[..] == md[..],
            "destination differs from the model at byte {:?} (guard {guard}) in {c:?}",
            first_diff(&dbuf.bytes, &md).map(|i| i as isize - guard as isize)
        );
    } else {
        assert!(sbuf.bytes == s0 && dbuf.bytes == d0, "bytes written although the call failed ({st:?}: {msg}) in {c:?}");
    }
    st
}
