//! Property tests of the many-slice C ABI with guard bytes (stable Rust, `cargo test`): the
//! oracle of the `slices_copy` / `slices_read` fuzz targets (fuzz/src/slices.rs, included
//! below) driven by proptest bytes instead of libFuzzer. Random ranks, shapes, dtypes, item
//! sizes, layouts (negative / zero / wild byte strides, offsets, buffer lengths around the
//! minimum), slice tables (huge starts / counts / steps, steps of 0, NULL tables) and flags;
//! every buffer sits between 64 canary bytes that must be untouched, the source is never
//! modified, failures write nothing, and successes match the oracle byte for byte. Reads run
//! in every planner mode with 1..3 threads against whole datasets read with plain H5Dread.
//! Successful reads are also checked against tests/common's `reference`.
//!
//! Also: the committed fuzz seeds (fuzz/corpus/slices_copy, fuzz/corpus/slices_read) are
//! replayed through the same oracle (libFuzzer's `arbitrary::Unstructured::arbitrary::<u8>`
//! takes input bytes one by one, exactly like `Bytes` here), and the bugs fuzzing found have
//! regression tests.

mod common;
#[path = "../fuzz/src/slices_fixture.rs"]
mod slices_fixture;
#[path = "../fuzz/src/slices.rs"]
mod slices_oracle;

use common::{reference, TRow};
use proptest::prelude::*;
use slices_oracle::*;
use vh5::ffi::vh5_status;

const G: usize = 64;

/// Run `cases` random inputs through `f` (which returns the status) and print and return
/// how many ended in each status (so the tests can require a useful mix).
fn run_many(cases: u32, f: impl FnMut(&[u8]) -> vh5_status) -> std::collections::BTreeMap<i32, usize> {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let hist = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let f = std::cell::RefCell::new(f);
    let r = runner.run(&proptest::collection::vec(any::<u8>(), 0..600), |bytes| {
        let st = (f.borrow_mut())(&bytes);
        *hist.borrow_mut().entry(st as i32).or_insert(0) += 1;
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
    let h = hist.into_inner();
    println!("statuses (code: cases): {h:?}");
    h
}

#[test]
fn copy_matches_oracle_with_guard_bytes() {
    let h = run_many(2048, |bytes| run_copy(&gen_copy(&mut Bytes(bytes, 0)), G));
    let total: usize = h.values().sum();
    // A useful mix: successes (that moved bytes or not) and every refusal class.
    assert!(h.get(&0).copied().unwrap_or(0) * 5 >= total, "too few successes: {h:?}");
    for st in [vh5_status::VH5_ERR_INVALID_ARGUMENT, vh5_status::VH5_ERR_BUFFER_TOO_SMALL, vh5_status::VH5_ERR_OUT_OF_BOUNDS, vh5_status::VH5_ERR_DTYPE] {
        assert!(h.contains_key(&(st as i32)), "no {st:?} case: {h:?}");
    }
}

#[test]
fn read_matches_oracle_with_guard_bytes() {
    let fx = slices_fixture::fixture();
    let h = run_many(1024, |bytes| {
        let c = gen_read(&mut Bytes(bytes, 0), fx);
        let st = run_read(fx, &c, G);
        if st == vh5_status::VH5_OK {
            cross_check_read(fx, &c);
        }
        st
    });
    let total: usize = h.values().sum();
    assert!(h.get(&0).copied().unwrap_or(0) * 5 >= total, "too few successes: {h:?}");
    for st in [vh5_status::VH5_ERR_INVALID_ARGUMENT, vh5_status::VH5_ERR_BUFFER_TOO_SMALL, vh5_status::VH5_ERR_OUT_OF_BOUNDS, vh5_status::VH5_ERR_DTYPE] {
        assert!(h.contains_key(&(st as i32)), "no {st:?} case: {h:?}");
    }
}

#[test]
fn write_matches_oracle_with_guard_bytes() {
    let fx = slices_fixture::write_fixture();
    let h = run_many(512, |bytes| run_write(fx, &gen_write(&mut Bytes(bytes, 0), fx), G, &slices_fixture::H5Hooks));
    let total: usize = h.values().sum();
    assert!(h.get(&0).copied().unwrap_or(0) * 5 >= total, "too few successes: {h:?}");
    for st in [vh5_status::VH5_ERR_INVALID_ARGUMENT, vh5_status::VH5_ERR_BUFFER_TOO_SMALL, vh5_status::VH5_ERR_OUT_OF_BOUNDS, vh5_status::VH5_ERR_DTYPE] {
        assert!(h.contains_key(&(st as i32)), "no {st:?} case: {h:?}");
    }
}

/// A successful read also agrees with tests/common's index-loop `reference` (another
/// independent implementation of the row semantics).
fn cross_check_read(fx: &[FixtureDs], c: &ReadCase) {
    let f = &fx[c.ds];
    let n = c.dst.shape.len();
    if n == 0 || c.tables.nslices == 0 || c.dst.shape.contains(&0) {
        return;
    }
    let t = &c.tables;
    let whole = f.whole.iter().find(|(d, _)| *d == c.dst.dtype).and_then(|(_, w)| w.as_deref()).unwrap();
    let strides = c.dst.strides.clone().unwrap_or_else(|| vh5::transfer::ArrayLayout::c_strides(&c.dst.shape, c.dst.itemsize).unwrap());
    let step = |v: &Option<Vec<u64>>, k: u8, b: usize| if t.null_table == Some(k) { vec![1; n] } else { v.as_ref().map_or(vec![1; n], |s| s[b..b + n].to_vec()) };
    let rows: Vec<TRow> = (0..t.nslices)
        .map(|i| {
            let b = i * n;
            TRow { s: t.src_start[b..b + n].to_vec(), d: t.dst_start[b..b + n].to_vec(), c: t.count[b..b + n].to_vec(), ss: step(&t.src_step, 3, b), ds: step(&t.dst_step, 4, b) }
        })
        .collect();
    let mut a = vec![7u8; c.dst.base_len];
    let mut b = a.clone();
    reference(whole, &f.shape, &mut a, &c.dst.shape, &strides, c.dst.offset, c.dst.itemsize, &rows, c.flags & 1 != 0).unwrap();
    let da = vh5::ffi::hdf5::vh5_array {
        base: b.as_mut_ptr().cast(),
        base_len: b.len(),
        offset: c.dst.offset,
        dtype: c.dst.dtype,
        itemsize: c.dst.itemsize,
        ndim: n as u32,
        shape: c.dst.shape.as_ptr(),
        strides: strides.as_ptr(),
    };
    let ptr = |v: &Option<Vec<u64>>, k: u8| if t.null_table == Some(k) { std::ptr::null() } else { v.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()) };
    // SAFETY: every pointer holds what it declares.
    let st = unsafe {
        vh5::ffi::hdf5::vh5_read_many_slices(f.id, &da, t.nslices, t.src_start.as_ptr(), t.dst_start.as_ptr(), t.count.as_ptr(), ptr(&t.src_step, 3), ptr(&t.dst_step, 4), c.flags)
    };
    assert_eq!(st, vh5_status::VH5_OK);
    assert!(a == b, "read differs from tests/common::reference");
}

/// Replay the committed corpus of a target through the oracle (each file is one input).
fn replay(target: &str, mut run: impl FnMut(&[u8])) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&bytes)));
        assert!(r.is_ok(), "oracle failed on {}", path.display());
        n += 1;
    }
    n
}

#[test]
fn committed_slices_copy_corpus_satisfies_the_oracle() {
    let n = replay("slices_copy", |b| {
        run_copy(&gen_copy(&mut Bytes(b, 0)), G);
    });
    assert!(n >= 5, "only {n} seeds");
    println!("{n} slices_copy seeds");
}

#[test]
fn committed_slices_write_corpus_satisfies_the_oracle() {
    let fx = slices_fixture::write_fixture();
    let n = replay("slices_write", |b| {
        run_write(fx, &gen_write(&mut Bytes(b, 0), fx), G, &slices_fixture::H5Hooks);
    });
    assert!(n >= 5, "only {n} seeds");
    println!("{n} slices_write seeds");
}

#[test]
fn committed_slices_read_corpus_satisfies_the_oracle() {
    let fx = slices_fixture::fixture();
    let n = replay("slices_read", |b| {
        run_read(fx, &gen_read(&mut Bytes(b, 0), fx), G);
    });
    assert!(n >= 5, "only {n} seeds");
    println!("{n} slices_read seeds");
}

// ---------------------------------------------------------------------------------------
// Regressions: bugs the slices_copy / slices_read fuzz targets found (docs/ROBUSTNESS.md).

use vh5::ffi::hdf5::vh5_array;
use vh5::ffi::slices_write::{vh5_copy_many_slices, vh5_write_many_slices};

fn arr(base: *mut u8, base_len: usize, offset: usize, dtype: u32, itemsize: usize, shape: &[u64], strides: &[i64]) -> vh5_array {
    vh5_array { base: base.cast(), base_len, offset, dtype, itemsize, ndim: shape.len() as u32, shape: shape.as_ptr(), strides: strides.as_ptr() }
}

/// 0-d arrays in ONE buffer whose elements share bytes (float64 at byte 6 -> byte 0): each
/// row is one memmove of the element. vh5 copied the element once more after the rows, so
/// one row gave the result of two.
#[test]
fn zero_d_copy_within_one_buffer_runs_each_row_once() {
    for (nslices, want) in [(1usize, [6u8, 7, 8, 9, 10, 11, 12, 13, 8, 9, 10, 11, 12, 13]), (2, [12, 13, 8, 9, 10, 11, 12, 13, 8, 9, 10, 11, 12, 13])] {
        let mut buf: Vec<u8> = (0..14).collect();
        let p = buf.as_mut_ptr();
        let (s, d) = (arr(p, 14, 6, 12, 8, &[], &[]), arr(p, 14, 0, 12, 8, &[], &[]));
        let null = std::ptr::null();
        // SAFETY: both arrays describe the 14 bytes of buf; tables are empty (ndim 0).
        let st = unsafe { vh5_copy_many_slices(&s, &d, nslices, null, null, null, null, null, 0) };
        assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
        assert_eq!(buf, want, "{nslices} rows");
    }
}

/// A source layout whose per-axis reaches sum below -2^127 (two axes of extent 2^64-1 with
/// stride INT64_MIN): the unchecked i128 sum wrapped to a positive lower bound, the layout
/// passed as inside its 7-byte buffer, and (release builds) the copy then read at
/// base - 2^63. Now VH5_ERR_BUFFER_TOO_SMALL ("src:") for copies and writes, nothing written.
#[test]
fn source_layout_spanning_more_than_i128_is_refused() {
    let shape = [3u64, u64::MAX, 3, 3];
    let strides = [-16i64, i64::MIN, 0, i64::MIN];
    let mut src = vec![1u8; 7];
    let mut dst = vec![0u8; 2];
    let s = arr(src.as_mut_ptr(), 7, 5, 7, 2, &shape, &strides);
    let dstrides = [0i64, 0, 0, 0];
    let (one, dsh) = ([1u64; 4], [1u64; 4]);
    let d = arr(dst.as_mut_ptr(), 2, 0, 7, 2, &dsh, &dstrides);
    let (start, zero) = ([0u64, 1, 0, 0], [0u64; 4]);
    // SAFETY: every pointer holds what it declares.
    let st = unsafe { vh5_copy_many_slices(&s, &d, 1, start.as_ptr(), zero.as_ptr(), one.as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
    let m = last_error();
    assert_eq!(st, vh5_status::VH5_ERR_BUFFER_TOO_SMALL, "{m}");
    assert!(m.starts_with("src:") && m.contains("2^127"), "{m}");
    assert_eq!(dst, [0, 0]);
    // The same source handed to vh5_write_many_slices.
    let tmp = common::TempDir::new("span-overflow");
    let path = tmp.path("w.h5");
    common::create_file(&path, &[common::DsSpec::new("x", &[4, 4, 4, 4], vh5::dtype::Dtype::UInt16, None)]);
    let (f, ds) = ffi_open_rw(&path, "x");
    // SAFETY: as above.
    let st = unsafe { vh5_write_many_slices(ds, &s, 1, start.as_ptr(), zero.as_ptr(), one.as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
    let m = last_error();
    assert_eq!(st, vh5_status::VH5_ERR_BUFFER_TOO_SMALL, "{m}");
    assert!(m.contains("2^127"), "{m}");
    common::ffi_close(&[ds, f]);
}

fn ffi_open_rw(path: &std::path::Path, name: &str) -> (i64, i64) {
    use vh5::ffi::hdf5::*;
    let (p, n) = (std::ffi::CString::new(path.to_str().unwrap()).unwrap(), std::ffi::CString::new(name).unwrap());
    let (mut f, mut d) = (-1, -1);
    // SAFETY: NUL-terminated strings and valid out pointers.
    unsafe {
        assert_eq!(vh5_file_open(p.as_ptr(), VH5_FILE_READ_WRITE, &mut f), vh5_status::VH5_OK, "{}", last_error());
        assert_eq!(vh5_dataset_open(f, n.as_ptr(), &mut d), vh5_status::VH5_OK, "{}", last_error());
    }
    (f, d)
}

/// An axis copying one element may carry any step (it is never applied): steps like 2^62
/// on count-1 axes made `stride * step` overflow (VH5_ERR_PANIC in builds with
/// overflow checks, e.g. `cargo test` without --release and the fuzz build). Copy and read
/// (every planner mode, 1 and 3 threads) must move exactly the one element.
#[test]
fn count_one_axes_accept_any_step() {
    // (UINT64_MAX itself is -1 as a signed size and multiplies without overflow.)
    let huge = [1u64 << 62, u64::MAX / 3];
    // copy: 3x4 uint16 C order -> 2x2 C order, element [2, 3] -> [1, 0]
    let mut src: Vec<u8> = (0..24).collect();
    let mut dst = vec![0xeeu8; 8];
    let s = arr(src.as_mut_ptr(), 24, 0, 7, 2, &[3, 4], &[8, 2]);
    let d = arr(dst.as_mut_ptr(), 8, 0, 7, 2, &[2, 2], &[4, 2]);
    let (ss, ds, c) = ([2u64, 3], [1u64, 0], [1u64, 1]);
    for flags in [0, 1] {
        // SAFETY: every pointer holds what it declares.
        let st = unsafe { vh5_copy_many_slices(&s, &d, 1, ss.as_ptr(), ds.as_ptr(), c.as_ptr(), huge.as_ptr(), huge.as_ptr(), flags) };
        assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
        assert_eq!(dst, [0xee, 0xee, 0xee, 0xee, 22, 23, 0xee, 0xee]);
    }
    // read: chunk_2d_u16_edges (13 x 11, chunks 4 x 3) element [9, 10] -> [1, 0]
    let fx = slices_fixture::fixture();
    let f = fx.iter().find(|f| f.name == "chunk_2d_u16_edges").unwrap();
    let whole = f.whole[0].1.as_ref().unwrap();
    let want = &whole[(9 * 11 + 10) * 2..(9 * 11 + 10) * 2 + 2];
    let (ss, ds) = ([9u64, 10], [1u64, 0]);
    for mode in MODES {
        for threads in [1, 3] {
            let mut out = vec![0xeeu8; 8];
            let d = arr(out.as_mut_ptr(), 8, 0, 7, 2, &[2, 2], &[4, 2]);
            let st = vh5::transfer::options::with_overrides(Some(mode), Some(threads), || {
                // SAFETY: as above.
                unsafe { vh5::ffi::hdf5::vh5_read_many_slices(f.id, &d, 1, ss.as_ptr(), ds.as_ptr(), c.as_ptr(), huge.as_ptr(), huge.as_ptr(), 0) }
            });
            assert_eq!(st, vh5_status::VH5_OK, "{mode:?} {threads}: {}", last_error());
            assert_eq!(&out[4..6], want, "{mode:?} {threads}");
            assert!(out[..4].iter().chain(&out[6..]).all(|&b| b == 0xee));
        }
    }
}

/// VH5_SLICES_CONVERT into a chunked dataset with a row covering a chunk in part: the chunk
/// planner read the chunk into the ARRAY's dtype (int64), merged the row and wrote it back,
/// so the float32 elements no row writes lost their fractions (1.5 -> 1.0). Now every
/// element outside the rows keeps its value and the row's elements are converted.
#[test]
fn converting_write_into_part_of_a_chunk_keeps_the_other_elements() {
    use vh5::dtype::Dtype;
    let tmp = common::TempDir::new("convert-partial");
    let path = tmp.path("c.h5");
    let vals: Vec<f32> = (0..90).map(|i| i as f32 + 0.5).collect();
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut spec = common::DsSpec::new("x", &[10, 9], Dtype::Float32, Some(&bytes));
    spec.chunk = Some(vec![3, 4]);
    common::create_file(&path, &[spec]);
    let (f, d) = ffi_open_rw(&path, "x");
    let mut src: Vec<u8> = [-7i64, 1 << 40].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let s = arr(src.as_mut_ptr(), 16, 0, Dtype::Int64.code(), 8, &[1, 2], &[16, 8]);
    let (ss, ds, c) = ([0u64, 0], [4u64, 5], [1u64, 2]);
    for threads in [1, 3] {
        let st = vh5::transfer::options::with_overrides(None, Some(threads), || {
            // SAFETY: every pointer holds what it declares.
            unsafe { vh5_write_many_slices(d, &s, 1, ss.as_ptr(), ds.as_ptr(), c.as_ptr(), std::ptr::null(), std::ptr::null(), vh5::ffi::hdf5::VH5_SLICES_CONVERT) }
        });
        assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    }
    common::ffi_close(&[d, f]);
    let mt = common::h5type(Dtype::Float32, false, true);
    let (_, b) = common::read_whole(&path, "x", mt, 4);
    let got: Vec<f32> = b.chunks(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut want = vals.clone();
    want[4 * 9 + 5] = -7.0;
    want[4 * 9 + 6] = (1u64 << 40) as f32;
    assert_eq!(got, want);
}

/// Reads normalise the steps of axes that copy one element (see
/// `count_one_axes_accept_any_step`); with CLIP the count must be normalised with them: a
/// count of 238 with dst_step 2 clips to 1 at destination column 4 of 6, but with step 1 it
/// would clip to 2 (an early version of the fix wrote column 5 too; found by slices_read).
#[test]
fn clip_with_a_step_on_an_axis_clipped_to_one_element() {
    let fx = slices_fixture::fixture();
    let ds = fx.iter().position(|f| f.name == "chunk_2d_c64be").unwrap();
    let c = ReadCase {
        ds,
        dst: ArraySpec { dtype: 13, itemsize: 8, shape: vec![5, 6], strides: Some(vec![56, 8]), offset: 0, base_len: 272, null_base: false },
        tables: Tables {
            nslices: 2,
            src_start: vec![3, 0, 1, 1],
            dst_start: vec![0, 4, 1, 1],
            count: vec![1, 238, 2, 2],
            src_step: None,
            dst_step: Some(vec![1, 2, 1, 2]),
            null_table: None,
        },
        flags: 1,
        mode: 0,
        threads: 1,
        seed: 221,
    };
    for mode in 0..3 {
        for threads in [1, 2] {
            assert_eq!(run_read(fx, &ReadCase { mode, threads, ..c.clone() }, G), vh5_status::VH5_OK);
        }
    }
}

/// A source axis of extent 1 may have any byte stride (it never steps), e.g. INT64_MIN.
/// The strided copy engine handed it to ndarray as a stride of 2^63 elements, a negative
/// isize, breaking `ArrayView::from_shape_ptr`'s contract (a panic under debug assertions,
/// found by slices_write). Count-1 axes now get stride 0 inside the engine.
#[test]
fn extent_one_axis_with_int64_min_stride() {
    use vh5::dtype::Dtype;
    // write: uint8 source [1, 5] with strides [INT64_MIN, 1], every other element (src_step 2)
    let tmp = common::TempDir::new("min-stride");
    let path = tmp.path("m.h5");
    common::create_file(&path, &[common::DsSpec::new("x", &[2, 4], Dtype::UInt8, Some(&[0u8; 8]))]);
    let (f, d) = ffi_open_rw(&path, "x");
    let mut src = vec![10u8, 11, 12, 13, 14];
    let s = arr(src.as_mut_ptr(), 5, 0, Dtype::UInt8.code(), 1, &[1, 5], &[i64::MIN, 1]);
    let (ss, ds, c, sstep) = ([0u64, 0], [1u64, 1], [1u64, 3], [1u64, 2]);
    // SAFETY: every pointer holds what it declares.
    let st = unsafe { vh5_write_many_slices(d, &s, 1, ss.as_ptr(), ds.as_ptr(), c.as_ptr(), sstep.as_ptr(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    common::ffi_close(&[d, f]);
    let (_, b) = common::read_whole(&path, "x", common::h5type(Dtype::UInt8, false, true), 1);
    assert_eq!(b, [0, 0, 0, 0, 0, 10, 12, 14]);
    // memory copy with the same source into a [2, 4] destination
    let mut dst = vec![0u8; 8];
    let da = arr(dst.as_mut_ptr(), 8, 0, Dtype::UInt8.code(), 1, &[2, 4], &[4, 1]);
    // SAFETY: as above.
    let st = unsafe { vh5_copy_many_slices(&s, &da, 1, ss.as_ptr(), ds.as_ptr(), c.as_ptr(), sstep.as_ptr(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    assert_eq!(dst, [0, 0, 0, 0, 0, 10, 12, 14]);
}
