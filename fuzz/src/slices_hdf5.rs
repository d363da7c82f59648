//! Read and write harnesses of the slices oracle (fuzz/src/slices.rs): `vh5_read_many_slices`
//! against whole datasets read with plain H5Dread, `vh5_write_many_slices` against the
//! dataset's previous contents with the rows applied.

use vh5::ffi::vh5_status;

use super::{
    apply_rows, apply_rows_conv, array_strides, c_strides, check_rows, check_status, dtype_size, effective_tables, fail, in_bounds, is_empty, last_error, self_overlaps,
    table_ptrs, tables_null, varr, ArraySpec, Fail, Guarded, Side, St, Tables,
};

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
    /// Per dtype code: whether libhdf5 converts with a compiler cast (`H5Tcompiler_conv`) when
    /// reading into a native array, reading into a byte-swapped array, and writing from a
    /// native array (see [`conversion_refused`]).
    pub hard: Vec<(u32, [bool; 3])>,
    /// Whether the dataset is big-endian (a byte-order change for native arrays).
    pub big: bool,
}

impl FixtureDs {
    /// [`FixtureDs::hard`] of dtype code `d` for the path `k` (0 read, 1 swapped read, 2 write).
    fn hard_path(&self, d: u32, k: usize) -> bool {
        self.hard.iter().find(|(c, _)| *c == d).is_some_and(|(_, h)| h[k])
    }

    /// Whether the path `k` (as in [`FixtureDs::hard_path`]) between the dataset and an array
    /// of dtype code `d` changes the byte order: a big-endian dataset and a native array, or a
    /// little-endian one and a byte-swapped array (1-byte arrays are never swapped: vh5 gives
    /// them their native type).
    fn swap_path(&self, d: u32, k: usize) -> bool {
        let one_byte = matches!(d, 1 | 2 | 6);
        if k == 1 && !one_byte {
            !self.big
        } else {
            self.big
        }
    }
}

/// Planner modes a read runs in (`vh5::transfer::options::with_overrides`).
pub const MODES: [vh5::transfer::options::PlannerMode; 3] =
    [vh5::transfer::options::PlannerMode::Auto, vh5::transfer::options::PlannerMode::Chunks, vh5::transfer::options::PlannerMode::Rows];

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

/// What a valid read must produce: reference bytes of the whole dataset in the destination
/// dtype, and each row's effective counts (`None`: the row was clipped to nothing).
pub type Expected<'f> = (&'f [u8], Vec<Option<Vec<u64>>>);

/// The contract of `vh5_read_many_slices` (C header) for `c`: the failure, or what it must
/// produce ([`Expected`]).
pub fn expect_read<'f>(f: &'f FixtureDs, c: &ReadCase) -> Result<Option<Expected<'f>>, Fail> {
    let dstr = array_strides(&c.dst, false).map_err(|s| fail(s, None))?;
    let n = c.dst.shape.len();
    if tables_null(&c.tables, n) {
        return Err(fail(St::Null, None));
    }
    if c.flags & !7 != 0 {
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
    let path = usize::from(c.flags & 4 != 0); // the read path of hard_path / swap_path
    let whole = if c.dst.dtype == f.dtype {
        f.whole[0].1.as_deref().unwrap()
    } else if convert && conversion_refused(f.dtype, c.dst.dtype, f.hard_path(c.dst.dtype, path), f.swap_path(c.dst.dtype, path)) {
        return Err(fail(St::Dtype, None));
    } else if convert {
        match f.whole.iter().find(|(d, _)| *d == c.dst.dtype) {
            Some((_, Some(w))) => w,
            _ => return Err(fail(St::Dtype, None)),
        }
    } else {
        return Err(fail(St::Dtype, Some("mismatch".into())));
    };
    if c.flags & 4 != 0 && c.dst.dtype == 15 {
        // VH5_SLICES_SWAPPED: opaque records have no byte order.
        return Err(fail(St::Dtype, None));
    }
    if f.shape.len() != n {
        return Err(fail(St::Invalid, Some("dimensionality".into())));
    }
    if c.tables.nslices == 0 || is_empty(&c.dst.shape) {
        return Ok(None);
    }
    let eff = check_rows(&effective_tables(&c.tables), n, &f.shape, &c.dst.shape, clip)?;
    Ok(Some((whole, eff)))
}

/// Whether vh5 refuses to have the linked libhdf5 convert dtype code `from` to `to`
/// (`VH5_SLICES_CONVERT`), `hard` telling whether libhdf5 converts them with a compiler cast
/// rather than a software function (`transfer::broken_conversions`, written out again here):
/// float16 (10) to a 64-bit integer (5, 9) before libhdf5 1.14.4; by software: a float (10,
/// 11, 12) to a signed integer (2 ..= 5) from 1.14.4 on (-0.3 becomes the minimum), a 32/64-bit
/// integer (4, 5, 8, 9) to float16 (NaN for 65568 ..= 131039), float32 / float64 to float16
/// (ties away from zero, 65520 -> 65504) and float64 to float32 (also as the parts of
/// complex128 to complex64; ties away from zero, and before 2.0.0 a lost carry after a
/// subnormal value); on any path with a byte-order change (`swap`), an integer to the
/// integer of the same size and the other signedness (2 ..= 5 <-> 6 ..= 9: bits reinterpreted).
pub fn conversion_refused(from: u32, to: u32, hard: bool, swap: bool) -> bool {
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    // SAFETY: valid out-pointers (NULL for the thread-safety flag).
    let st = unsafe { vh5::ffi::version::vh5_hdf5_version(&mut a, &mut b, &mut c, std::ptr::null_mut()) };
    let v = if st == vh5_status::VH5_OK { (a, b, c) } else { (0, 0, 0) };
    if from == 10 && matches!(to, 5 | 9) && v < (1, 14, 4) {
        return true;
    }
    // integers of one size and the other signedness across byte orders: a bare byte swap
    if swap && (2..=9).contains(&from) && (2..=9).contains(&to) && from.abs_diff(to) == 4 {
        return true;
    }
    if hard {
        return false;
    }
    match (from, to) {
        (10..=12, 2..=5) => v >= (1, 14, 4),
        (4 | 5 | 8 | 9 | 11 | 12, 10) => true,
        (12, 11) => true,
        // complex128 -> complex64 as compounds, part by part (the fixture's complex dataset is
        // big-endian: its parts always take the software path, which `hard` cannot tell for
        // the compounds themselves)
        (14, 13) => true,
        _ => false,
    }
}

/// The word whose bytes `VH5_SLICES_SWAPPED` (flag 4) reverses in a destination of dtype code
/// `dtype` (`size` bytes per element): none for 1-byte types and bool, half the item for
/// complex.
fn swap_word(flags: u32, dtype: u32, size: usize) -> Option<usize> {
    if flags & 4 == 0 || size <= 1 || matches!(dtype, 1 | 2 | 6 | 15) {
        return None;
    }
    Some(if matches!(dtype, 13 | 14) { size / 2 } else { size })
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
            |o, v| {
                let at = v.len();
                v.extend_from_slice(&whole[o..o + size]);
                if let Some(w) = swap_word(c.flags, c.dst.dtype, size) {
                    v[at..].chunks_exact_mut(w).for_each(|x| x.reverse());
                }
            },
            |o, b| md[guard + o..guard + o + size].copy_from_slice(b),
        );
    }
    let da = varr(&c.dst, dbuf.ptr());
    let tp = table_ptrs(&c.tables);
    let mode = MODES[c.mode % 3];
    let st = vh5::transfer::options::with_overrides(Some(mode), Some(c.threads), || {
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
    let refused = || conversion_refused(c.src.dtype, f.dtype, f.hard_path(c.src.dtype, 2), f.swap_path(c.src.dtype, 2));
    if c.src.dtype != f.dtype && !(c.flags & 2 != 0 && c.src.dtype != 15 && converts && !refused()) {
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
    let st = vh5::transfer::options::with_overrides(None, Some(c.threads), || {
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
