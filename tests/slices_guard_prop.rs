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
    let strides = c.dst.strides.clone().unwrap_or_else(|| vh5::slices::ArrayLayout::c_strides(&c.dst.shape, c.dst.itemsize).unwrap());
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
    let st = unsafe { vh5::ffi::hdf5::vh5_read_many_slices(f.id, &da, t.nslices, t.src_start.as_ptr(), t.dst_start.as_ptr(), t.count.as_ptr(), ptr(&t.src_step, 3), ptr(&t.dst_step, 4), c.flags) };
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
fn committed_slices_read_corpus_satisfies_the_oracle() {
    let fx = slices_fixture::fixture();
    let n = replay("slices_read", |b| {
        run_read(fx, &gen_read(&mut Bytes(b, 0), fx), G);
    });
    assert!(n >= 5, "only {n} seeds");
    println!("{n} slices_read seeds");
}
