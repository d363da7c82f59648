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

/// Canary byte around every buffer.
pub const GUARD: u8 = 0xa5;
/// Largest buffer a case allocates (bytes).
pub const MAX_BUF: usize = 1 << 16;
const MAX_RANK: usize = 32;

/// A source of choices (bytes). Exhausted sources return 0 from `raw`.
pub trait Pick {
    /// The next input byte (0 when the input is exhausted).
    fn raw(&mut self) -> u8;
    /// The next choice byte: `raw() ^ 0x80`, so that an exhausted input (0x80 here) picks the
    /// common branch of every choice below rather than the rare ones.
    fn byte(&mut self) -> u8 {
        self.raw() ^ 0x80
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |v, _| (v << 8) | self.byte() as u64)
    }
    /// Uniform-ish in `0..n` (0 when n <= 1).
    fn below(&mut self, n: u64) -> u64 {
        match n {
            0 | 1 => 0,
            2..=256 => self.byte() as u64 % n,
            _ => self.u64() % n,
        }
    }
    /// True with probability about `k`/256.
    fn chance(&mut self, k: u8) -> bool {
        self.byte() < k
    }
}

/// [`Pick`] over a byte slice (the stable property test and seed replays).
pub struct Bytes<'a>(pub &'a [u8], pub usize);
impl Pick for Bytes<'_> {
    fn raw(&mut self) -> u8 {
        let b = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        b
    }
}

/// A value that is usually small (`0..small`) and sometimes one of the edges of uint64.
fn interesting(p: &mut impl Pick, small: u64) -> u64 {
    match p.byte() {
        0..=229 => p.below(small),
        230..=235 => u64::MAX - p.below(3),
        236..=239 => (1u64 << 63) - p.below(2),
        240..=243 => 1u64 << (32 + p.below(31)),
        244..=247 => small + p.below(8),
        _ => p.u64(),
    }
}

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

/// numpy's conservative self-overlap rule (documented in slices::geometry): sorted by
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
fn apply_rows(
    t: &Tables,
    n: usize,
    eff: &[Option<Vec<u64>>],
    src: Side,
    dst: Side,
    size: usize,
    read: impl FnMut(usize, &mut Vec<u8>),
    write: impl FnMut(usize, &[u8]),
) {
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
// Case generation.

/// Per-axis extents: mostly 0..=6, sometimes huge (for broadcast sources and refusals).
fn gen_shape(p: &mut impl Pick, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            if n > 6 {
                // high ranks stay small in elements
                return if p.chance(16) { p.below(3) } else { 1 };
            }
            match p.byte() {
                0..=9 => 0,
                10..=14 => interesting(p, 1 << 20),
                _ => 1 + p.below(6),
            }
        })
        .collect()
}

/// A layout for `shape`: proper (permuted, padded, some axes reversed), NULL strides, or
/// per-axis wild strides; offset and base_len around the exact minimum.
fn gen_layout(p: &mut impl Pick, shape: &[u64], itemsize: usize) -> (Option<Vec<i64>>, usize, usize) {
    let n = shape.len();
    let kind = p.byte();
    let strides: Option<Vec<i64>> = if kind < 40 {
        None
    } else if kind < 200 {
        // proper layout: axes in a random order, padding, random reversal
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, p.below(i as u64 + 1) as usize);
        }
        let pad_item = if p.chance(40) { p.below(4) as i64 } else { 0 };
        let mut acc: i64 = itemsize as i64 + pad_item;
        let mut s = vec![0i64; n];
        for &k in order.iter().rev() {
            s[k] = acc;
            let pad = if p.chance(50) { p.below(3) as i64 } else { 0 };
            acc = acc.saturating_mul((shape[k].min(1 << 20) as i64).max(1) + pad);
        }
        for v in s.iter_mut() {
            if p.chance(60) {
                *v = -*v;
            }
        }
        Some(s)
    } else {
        Some(
            (0..n)
                .map(|_| match p.byte() {
                    0..=49 => 0,
                    50..=149 => p.below(65) as i64 - 32,
                    150..=199 => (itemsize as i64) * (p.below(9) as i64 - 4),
                    200..=219 => i64::MAX - p.below(2) as i64,
                    220..=239 => i64::MIN + p.below(2) as i64,
                    _ => (p.u64() >> p.below(64)) as i64,
                })
                .collect(),
        )
    };
    // Exact extent of the layout (as vh5 validates it).
    let st = match &strides {
        Some(s) => Some(s.clone()),
        None => c_strides(shape, itemsize),
    };
    let (mut lo, mut hi) = (0i128, itemsize as i128);
    let mut ok = st.is_some();
    if let Some(st) = &st {
        if !is_empty(shape) {
            for (&e, &s) in shape.iter().zip(st) {
                let r = (e as i128 - 1) * s as i128;
                if r < 0 {
                    lo = lo.saturating_add(r);
                } else {
                    hi = hi.saturating_add(r);
                }
            }
        } else {
            hi = 0;
        }
    }
    ok &= lo >= -(MAX_BUF as i128) && hi <= MAX_BUF as i128;
    let extra = if p.chance(80) { p.below(9) as usize } else { 0 };
    let (offset, base_len) = if ok {
        let offset = (-lo) as usize + extra;
        let span = (hi - lo) as usize + extra;
        let base_len = match p.byte() {
            0..=19 => span.saturating_sub(1 + p.below(2) as usize),
            20..=39 => span + p.below(16) as usize,
            40..=49 => p.below(64) as usize,
            _ => span,
        };
        (if p.chance(12) { p.below(64) as usize } else { offset }, base_len.min(MAX_BUF))
    } else {
        (p.below(64) as usize, p.below(256) as usize)
    };
    (strides, offset, base_len)
}

/// A dtype code and item size: mostly consistent, sometimes unknown codes or wrong sizes.
fn gen_dtype(p: &mut impl Pick) -> (u32, usize) {
    let code = match p.byte() {
        0..=2 => [0u32, 16, u32::MAX][p.below(3) as usize],
        3..=20 => 15,
        _ => 1 + p.below(14) as u32,
    };
    let size = match dtype_size(code) {
        Some(Some(s)) if !p.chance(6) => s,
        Some(None) => 1 + p.below(24) as usize,
        _ => p.below(17) as usize,
    };
    (code, size)
}

fn gen_rank(p: &mut impl Pick) -> usize {
    match p.byte() {
        0..=3 => 5 + p.below(29) as usize, // up to 33 (one past the maximum)
        4..=24 => 0,
        _ => 1 + p.below(4) as usize,
    }
}

/// Rows against the source extents `ss` and destination extents `ds` (`n` columns).
fn gen_tables(p: &mut impl Pick, n: usize, sshape: &[u64], dshape: &[u64]) -> Tables {
    let nslices = match p.byte() {
        0..=9 => 0,
        10..=239 => 1 + p.below(6) as usize,
        _ => 7 + p.below(26) as usize,
    };
    let with_ss = p.chance(110);
    let with_ds = p.chance(110);
    let mut t = Tables { nslices, src_step: with_ss.then(Vec::new), dst_step: with_ds.then(Vec::new), ..Default::default() };
    let ext = |sh: &[u64], j: usize| sh.get(j).copied().unwrap_or(4).min(1 << 20);
    for _ in 0..nslices {
        for j in 0..n {
            let (es, ed) = (ext(sshape, j), ext(dshape, j));
            t.src_start.push(interesting(p, es + 1));
            t.dst_start.push(interesting(p, ed + 1));
            let c = match p.byte() {
                0..=12 => 0,
                13..=24 => interesting(p, 1 << 10),
                _ => 1 + p.below(es.max(ed).max(1) + 1),
            };
            t.count.push(c);
            for (want, v) in [(with_ss, &mut t.src_step), (with_ds, &mut t.dst_step)] {
                if want {
                    let s = match p.byte() {
                        0..=3 => 0,
                        4..=9 => interesting(p, 1 << 20),
                        10..=159 => 1,
                        _ => 2 + p.below(3),
                    };
                    v.as_mut().unwrap().push(s);
                }
            }
        }
    }
    if p.chance(8) {
        t.null_table = Some(p.below(5) as u8);
    }
    t
}

fn gen_flags(p: &mut impl Pick, convert_ok: bool) -> u32 {
    match p.byte() {
        0..=99 => 0,
        100..=199 => 1,
        200..=219 => 2 | (p.byte() & 1) as u32,
        220..=229 if convert_ok => 2,
        _ => 1u32 << p.below(32),
    }
}

fn gen_array(p: &mut impl Pick, n: usize, dtype: (u32, usize)) -> ArraySpec {
    let shape = gen_shape(p, n);
    let (strides, offset, base_len) = gen_layout(p, &shape, dtype.1.max(1));
    let null_base = base_len == 0 && p.chance(128);
    ArraySpec { dtype: dtype.0, itemsize: dtype.1, shape, strides, offset, base_len, null_base }
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

pub fn gen_copy(p: &mut impl Pick) -> CopyCase {
    let n = gen_rank(p);
    let sdt = gen_dtype(p);
    let ddt = if p.chance(8) { gen_dtype(p) } else { sdt };
    let mut src = gen_array(p, n, sdt);
    let dn = if p.chance(6) { (n + 1 + p.below(2) as usize) % 34 } else { n };
    let mut dst = gen_array(p, dn, ddt);
    if dn == n && p.chance(60) {
        // a destination of the same shape (rows then fit more often)
        dst.shape = src.shape.clone();
        let (st, o, l) = gen_layout(p, &dst.shape, dst.itemsize.max(1));
        (dst.strides, dst.offset, dst.base_len) = (st, o, l);
        dst.null_base = false;
    }
    let same_buffer = p.chance(50) && !src.null_base && !dst.null_base;
    if same_buffer {
        let l = src.base_len.max(dst.base_len);
        src.base_len = l;
        dst.base_len = l;
    }
    let tables = gen_tables(p, dst.shape.len(), &src.shape, &dst.shape);
    let flags = gen_flags(p, false);
    CopyCase { src, dst, same_buffer, tables, flags, seed: p.byte() }
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
        assert!(sbuf.bytes[..] == ms[..], "{} buffer differs from the model at byte {:?} (guard {guard}) in {c:?}", if c.same_buffer { "shared" } else { "source" }, first_diff(&sbuf.bytes, &ms).map(|i| i as isize - guard as isize));
        assert!(dbuf.bytes[..] == md[..], "destination differs from the model at byte {:?} (guard {guard}) in {c:?}", first_diff(&dbuf.bytes, &md).map(|i| i as isize - guard as isize));
    } else {
        assert!(sbuf.bytes == s0 && dbuf.bytes == d0, "bytes written although the call failed ({st:?}: {msg}) in {c:?}");
    }
    st
}

// ---------------------------------------------------------------------------------------
// vh5_read_many_slices.

/// One dataset of the read fixture: its extents, dtype code, open id, and the whole
/// dataset read with one plain H5Dread into each memory dtype libhdf5 converts to
/// (`(dtype code, C-order native bytes)`; `None` where there is no conversion).
#[derive(Debug)]
pub struct FixtureDs {
    pub name: String,
    pub shape: Vec<u64>,
    pub dtype: u32,
    pub id: i64,
    pub whole: Vec<(u32, Option<Vec<u8>>)>,
}

/// Planner modes a read runs in (`vh5::slices::options::with_overrides`).
pub const MODES: [vh5::slices::options::PlannerMode; 3] =
    [vh5::slices::options::PlannerMode::Auto, vh5::slices::options::PlannerMode::Chunks, vh5::slices::options::PlannerMode::Rows];

#[derive(Debug, Clone)]
pub struct ReadCase {
    pub ds: usize,
    pub dst: ArraySpec,
    pub tables: Tables,
    pub flags: u32,
    pub mode: usize,
    pub threads: usize,
    pub seed: u8,
}

pub fn gen_read(p: &mut impl Pick, fixture: &[FixtureDs]) -> ReadCase {
    let ds = p.below(fixture.len() as u64) as usize;
    let f = &fixture[ds];
    let n = match p.byte() {
        0..=5 => gen_rank(p),
        _ => f.shape.len(),
    };
    let dt = match p.byte() {
        0..=149 => (f.dtype, dtype_size(f.dtype).unwrap().unwrap()),
        150..=229 => {
            let code = f.whole[p.below(f.whole.len() as u64) as usize].0;
            (code, dtype_size(code).unwrap().unwrap())
        }
        _ => gen_dtype(p),
    };
    let mut dst = gen_array(p, n, dt);
    if p.chance(100) && n == f.shape.len() {
        // the dataset's own extents (small ones only) in a fresh layout
        dst.shape = f.shape.iter().map(|&e| e.min(8)).collect();
        let (st, o, l) = gen_layout(p, &dst.shape, dst.itemsize.max(1));
        (dst.strides, dst.offset, dst.base_len) = (st, o, l);
        dst.null_base = false;
    }
    let tables = gen_tables(p, n, &f.shape, &dst.shape);
    let mut flags = gen_flags(p, true);
    if dt.0 != f.dtype && p.chance(200) && flags <= 3 {
        flags |= 2;
    }
    ReadCase { ds, dst, tables, flags, mode: p.below(3) as usize, threads: 1 + p.below(3) as usize, seed: p.byte() }
}

/// The contract of `vh5_read_many_slices` (C header) for `c`: the failure, or (reference
/// bytes of the whole dataset in the destination dtype, each row's effective counts).
pub fn expect_read<'f>(f: &'f FixtureDs, c: &ReadCase) -> Result<Option<(&'f [u8], Vec<Option<Vec<u64>>>)>, Fail> {
    let dstr = array_strides(&c.dst, false).map_err(|s| fail(s, None))?;
    let n = c.dst.shape.len();
    if tables_null(&c.tables, n) {
        return Err(fail(St::Null, None));
    }
    if c.flags & !3 != 0 {
        return Err(fail(St::Invalid, Some("flags".into())));
    }
    let (clip, convert) = (c.flags & 1 != 0, c.flags & 2 != 0);
    let size = c.dst.itemsize;
    if dtype_size(c.dst.dtype).unwrap().is_some_and(|s| s != size) {
        return Err(fail(St::Invalid, Some("itemsize".into())));
    }
    if !in_bounds(&c.dst.shape, &dstr, c.dst.offset, size, c.dst.base_len) {
        return Err(fail(St::TooSmall, None));
    }
    if !is_empty(&c.dst.shape) && self_overlaps(&c.dst.shape, &dstr, size) {
        return Err(fail(St::Invalid, Some("overlap".into())));
    }
    let whole = if c.dst.dtype == f.dtype {
        f.whole[0].1.as_deref().unwrap()
    } else if convert {
        match f.whole.iter().find(|(d, _)| *d == c.dst.dtype) {
            Some((_, Some(w))) => w,
            _ => return Err(fail(St::Dtype, None)),
        }
    } else {
        return Err(fail(St::Dtype, Some("mismatch".into())));
    };
    if f.shape.len() != n {
        return Err(fail(St::Invalid, Some("dimensionality".into())));
    }
    if c.tables.nslices == 0 || is_empty(&c.dst.shape) {
        return Ok(None);
    }
    let eff = check_rows(&effective_tables(&c.tables), n, &f.shape, &c.dst.shape, clip)?;
    Ok(Some((whole, eff)))
}

/// Run `vh5_read_many_slices` on `c` (planner mode and threads overridden for this thread)
/// with `guard` canary bytes around the destination and assert the contract.
pub fn run_read(fixture: &[FixtureDs], c: &ReadCase, guard: usize) -> vh5_status {
    let f = &fixture[c.ds];
    let want = expect_read(f, c);
    let n = c.dst.shape.len();
    let size = c.dst.itemsize;
    let mut dbuf = Guarded::new(c.dst.base_len, guard, c.seed);
    let d0 = dbuf.bytes.clone();
    let mut md = d0.to_vec();
    if let Ok(Some((whole, eff))) = &want {
        let dstr = array_strides(&c.dst, false).unwrap();
        // The dataset as a C-order array.
        let src = ArraySpec { dtype: c.dst.dtype, itemsize: size, shape: f.shape.clone(), strides: None, offset: 0, base_len: whole.len(), null_base: false };
        let sstr = c_strides(&f.shape, size).unwrap();
        apply_rows(
            &effective_tables(&c.tables),
            n,
            eff,
            Side { a: &src, strides: &sstr },
            Side { a: &c.dst, strides: &dstr },
            size,
            |o, v| v.extend_from_slice(&whole[o..o + size]),
            |o, b| md[guard + o..guard + o + size].copy_from_slice(b),
        );
    }
    let da = varr(&c.dst, dbuf.ptr());
    let tp = table_ptrs(&c.tables);
    let mode = MODES[c.mode % 3];
    let st = vh5::slices::options::with_overrides(Some(mode), Some(c.threads), || {
        // SAFETY: as in run_copy: every pointer is valid for what it declares, or NULL.
        unsafe { vh5::ffi::hdf5::vh5_read_many_slices(f.id, &da, c.tables.nslices, tp[0], tp[1], tp[2], tp[3], tp[4], c.flags) }
    });
    let msg = if st == vh5_status::VH5_OK { String::new() } else { last_error() };
    assert_ne!(st, vh5_status::VH5_ERR_PANIC, "vh5 panicked: {msg} in {c:?}");
    let what = format!("read {} mode {mode:?} threads {}", f.name, c.threads);
    check_status(&what, st, &msg, &want.as_ref().map(|_| ()).map_err(|e| e.clone()), c);
    if want.is_ok() {
        let at = dbuf.bytes.iter().zip(&md).position(|(x, y)| x != y);
        if let Some(at) = at {
            let e = at.saturating_sub(8);
            let end = (at + 8).min(md.len());
            panic!(
                "{what}: destination differs from the reference at byte {} (guard {guard}): bytes from {} before {:?}, after {:?}, reference {:?} in {c:?}",
                at as isize - guard as isize,
                e as isize - guard as isize,
                &d0[e..end],
                &dbuf.bytes[e..end],
                &md[e..end]
            );
        }
    } else {
        assert!(dbuf.bytes == d0, "{what}: bytes written although the call failed ({st:?}: {msg}) in {c:?}");
    }
    st
}

// ---------------------------------------------------------------------------------------
// vh5_write_many_slices.

/// What the write oracle needs from libhdf5 (implemented with plain libhdf5 calls by the
/// fixture): the dataset's current contents and libhdf5's own element conversion.
pub trait WriteHooks {
    /// The whole dataset now, C order, native bytes of its own dtype (one plain H5Dread).
    fn whole(&self, f: &FixtureDs) -> Vec<u8>;
    /// Convert `n` elements of dtype `from` (native) in `buf` to the dataset's dtype as
    /// libhdf5 does when writing and reading back (native -> file type -> native);
    /// false when libhdf5 has no conversion path.
    fn convert(&self, f: &FixtureDs, from: u32, buf: &mut Vec<u8>, n: usize) -> bool;
}

#[derive(Debug, Clone)]
pub struct WriteCase {
    pub ds: usize,
    pub src: ArraySpec,
    pub tables: Tables,
    pub flags: u32,
    pub threads: usize,
    pub seed: u8,
}

pub fn gen_write(p: &mut impl Pick, fixture: &[FixtureDs]) -> WriteCase {
    let ds = p.below(fixture.len() as u64) as usize;
    let f = &fixture[ds];
    let n = match p.byte() {
        0..=5 => gen_rank(p),
        _ => f.shape.len(),
    };
    let dt = match p.byte() {
        0..=169 => (f.dtype, dtype_size(f.dtype).unwrap().unwrap()),
        170..=229 => {
            let code = [12u32, 5, 4, 11][p.below(4) as usize];
            (code, dtype_size(code).unwrap().unwrap())
        }
        _ => gen_dtype(p),
    };
    let mut src = gen_array(p, n, dt);
    if p.chance(100) && n == f.shape.len() {
        src.shape = f.shape.iter().map(|&e| e.min(8)).collect();
        let (st, o, l) = gen_layout(p, &src.shape, src.itemsize.max(1));
        (src.strides, src.offset, src.base_len) = (st, o, l);
        src.null_base = false;
    }
    let tables = gen_tables(p, n, &src.shape, &f.shape);
    let mut flags = gen_flags(p, true);
    if dt.0 != f.dtype && p.chance(200) && flags <= 3 {
        flags |= 2;
    }
    WriteCase { ds, src, tables, flags, threads: 1 + p.below(3) as usize, seed: p.byte() }
}

/// The contract of `vh5_write_many_slices` (C header) for `c`: the failure, or each row's
/// effective counts (`None` overall: nothing to write).
pub fn expect_write(f: &FixtureDs, c: &WriteCase, converts: bool) -> Result<Option<Vec<Option<Vec<u64>>>>, Fail> {
    let sstr = array_strides(&c.src, true).map_err(|s| fail(s, None))?;
    let n = c.src.shape.len();
    if tables_null(&c.tables, n) {
        return Err(fail(St::Null, None));
    }
    if c.flags & !3 != 0 {
        return Err(fail(St::Invalid, Some("flags".into())));
    }
    let size = c.src.itemsize;
    if !in_bounds(&c.src.shape, &sstr, c.src.offset, size, c.src.base_len) {
        return Err(fail(St::TooSmall, Some("src:".into())));
    }
    if c.src.dtype != f.dtype && !(c.flags & 2 != 0 && c.src.dtype != 15 && converts) {
        return Err(fail(St::Dtype, None));
    }
    if f.shape.len() != n {
        return Err(fail(St::Invalid, Some("dimensionality".into())));
    }
    let eff = check_rows(&effective_tables(&c.tables), n, &c.src.shape, &f.shape, c.flags & 1 != 0)?;
    if eff.iter().all(|e| e.is_none()) || is_empty(&c.src.shape) || is_empty(&f.shape) {
        return Ok(None);
    }
    Ok(Some(eff))
}

/// Run `vh5_write_many_slices` on `c` (threads overridden for this thread) with `guard`
/// canary bytes around the source and assert the contract: the dataset read back equals its
/// previous contents with the rows applied (later rows win), the source is untouched, and a
/// failure changes nothing.
pub fn run_write(fixture: &[FixtureDs], c: &WriteCase, guard: usize, h: &dyn WriteHooks) -> vh5_status {
    // One case at a time: the model reads the dataset before and after the call, so two
    // threads writing to the shared fixture (e.g. two tests of one test binary) would race.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let f = &fixture[c.ds];
    let before = h.whole(f);
    let size = c.src.itemsize;
    let converts = c.src.dtype == f.dtype || {
        let mut probe = vec![0u8; size.max(1)];
        dtype_size(c.src.dtype).is_some_and(|s| s.is_some()) && h.convert(f, c.src.dtype, &mut probe, 1)
    };
    let want = expect_write(f, c, converts);
    let mut sbuf = Guarded::new(c.src.base_len, guard, c.seed);
    if c.src.dtype != f.dtype {
        // Converted values must be ordinary: libhdf5 1.10 leaves some destination bytes
        // unwritten for NaN / infinite / out-of-range floats (e.g. float16 -> int64), so such
        // results depend on the conversion buffer's old contents. Bytes <= 0x3b make every
        // float16 / float32 / float64 read at any offset finite and below 2 in magnitude.
        for b in &mut sbuf.bytes[guard..guard + c.src.base_len] {
            *b %= 0x3c;
        }
    }
    let s0 = sbuf.bytes.clone();
    let mut model = before.clone();
    if let Ok(Some(eff)) = &want {
        let n = c.src.shape.len();
        let dsize = dtype_size(f.dtype).unwrap().unwrap();
        let sstr = array_strides(&c.src, true).unwrap();
        let dst = ArraySpec { dtype: f.dtype, itemsize: dsize, shape: f.shape.clone(), strides: None, offset: 0, base_len: before.len(), null_base: false };
        let dstr = c_strides(&f.shape, dsize).unwrap();
        let same = c.src.dtype == f.dtype;
        apply_rows_conv(
            &effective_tables(&c.tables),
            n,
            eff,
            Side { a: &c.src, strides: &sstr },
            Side { a: &dst, strides: &dstr },
            size,
            |o, v| v.extend_from_slice(&s0[guard + o..guard + o + size]),
            |v| {
                if !same {
                    let k = v.len() / size;
                    assert!(h.convert(f, c.src.dtype, v, k));
                }
            },
            |o, b| model[o..o + dsize].copy_from_slice(b),
        );
    }
    let sa = varr(&c.src, sbuf.ptr());
    let tp = table_ptrs(&c.tables);
    let st = vh5::slices::options::with_overrides(None, Some(c.threads), || {
        // SAFETY: every pointer is valid for what it declares, or NULL.
        unsafe { vh5::ffi::slices_write::vh5_write_many_slices(f.id, &sa, c.tables.nslices, tp[0], tp[1], tp[2], tp[3], tp[4], c.flags) }
    });
    let msg = if st == vh5_status::VH5_OK { String::new() } else { last_error() };
    assert_ne!(st, vh5_status::VH5_ERR_PANIC, "vh5 panicked: {msg} in {c:?}");
    let what = format!("write {} threads {}", f.name, c.threads);
    check_status(&what, st, &msg, &want.as_ref().map(|_| ()).map_err(|e| e.clone()), c);
    assert!(sbuf.bytes == s0, "{what}: the source was modified in {c:?}");
    let after = h.whole(f);
    if want.is_ok() {
        let at = after.iter().zip(&model).position(|(x, y)| x != y);
        if let Some(at) = at {
            let e = at - at % dtype_size(f.dtype).unwrap().unwrap();
            let k = dtype_size(f.dtype).unwrap().unwrap();
            panic!(
                "{what}: dataset differs from the model at byte {at}: element bytes before {:?}, after {:?}, model {:?} in {c:?}",
                &before[e..e + k],
                &after[e..e + k],
                &model[e..e + k]
            );
        }
    } else {
        assert!(after == before, "{what}: dataset changed although the call failed ({st:?}: {msg}) in {c:?}");
    }
    st
}
