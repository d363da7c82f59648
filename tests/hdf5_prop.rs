//! Property tests of vh5_read_many_slices against an index-loop reference over the whole
//! dataset read with one plain H5Dread: random rank 1-4, shapes, chunked/contiguous, gzip and
//! shuffle, unallocated chunks with fill values, every supported dtype in both byte orders,
//! random steps on both sides, destination layouts C / Fortran / stepped / reversed axes /
//! unaligned offsets, clip on and off, overlapping rows.

mod common;
use common::*;
use proptest::prelude::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status;
use vh5::transfer::options::{with_overrides, PlannerMode};

/// Every dtype vh5 moves: the numeric ones plus opaque (compound) types.
fn dtypes() -> Vec<Dtype> {
    vh5::dtype::ALL_NUMERIC.iter().copied().chain([Dtype::Opaque]).collect()
}

#[derive(Debug, Clone)]
struct Case {
    src_shape: Vec<u64>,
    chunk: Option<Vec<u64>>,
    gzip: bool,
    shuffle: bool,
    dtype: Dtype,
    big: bool,
    partial: bool,
    dst_shape: Vec<u64>,
    fortran: bool,
    alloc_step: Vec<u64>,
    neg: Vec<bool>,
    extra: usize,
    rows: Vec<TRow>,
    clip: bool,
    fit: bool,
    with_steps: bool,
    seed: u64,
}

fn row_strategy(n: usize) -> impl Strategy<Value = TRow> {
    (
        proptest::collection::vec(0u64..7, n),
        proptest::collection::vec(0u64..7, n),
        proptest::collection::vec(prop_oneof![1 => Just(0u64), 10 => 1u64..5], n),
        proptest::collection::vec(prop_oneof![3 => Just(1u64), 2 => 2u64..4], n),
        proptest::collection::vec(prop_oneof![3 => Just(1u64), 2 => 2u64..4], n),
    )
        .prop_map(|(s, d, c, ss, ds)| TRow { s, d, c, ss, ds })
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (1usize..=4).prop_flat_map(|n| {
        let shapes = (proptest::collection::vec(1u64..7, n), proptest::collection::vec(1u64..7, n), proptest::collection::vec(1u64..7, n));
        (
            shapes,
            any::<bool>(),
            (any::<bool>(), any::<bool>(), prop::sample::select(dtypes()), any::<bool>(), any::<bool>()),
            (any::<bool>(), proptest::collection::vec(1u64..3, n), proptest::collection::vec(any::<bool>(), n), 0usize..4),
            proptest::collection::vec(row_strategy(n), 0..6),
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<u64>()),
        )
            .prop_map(
                |((src_shape, dst_shape, chunk), chunked, (gzip, shuffle, dtype, big, partial), (fortran, alloc_step, neg, extra), rows, (clip, fit, with_steps, seed))| {
                    let chunk = chunked.then(|| chunk.iter().zip(&src_shape).map(|(c, s)| *c.min(s)).collect());
                    Case { src_shape, chunk, gzip, shuffle, dtype, big, partial, dst_shape, fortran, alloc_step, neg, extra, rows, clip, fit, with_steps, seed }
                },
            )
    })
}

fn run_case(mut c: Case) -> Result<(), TestCaseError> {
    let n = c.src_shape.len();
    if !c.with_steps {
        for r in &mut c.rows {
            r.ss = vec![1; n];
            r.ds = vec![1; n];
        }
    }
    if c.fit && !c.clip {
        // Shrink rows so the strict path succeeds too (the generator alone mostly produces
        // out-of-bounds rows).
        for r in &mut c.rows {
            for j in 0..n {
                r.s[j] %= c.src_shape[j];
                r.d[j] %= c.dst_shape[j];
                let fs = (c.src_shape[j] - 1 - r.s[j]) / r.ss[j] + 1;
                let fd = (c.dst_shape[j] - 1 - r.d[j]) / r.ds[j] + 1;
                r.c[j] = r.c[j].min(fs).min(fd);
            }
        }
    }
    let size = size_of(c.dtype);
    let tmp = TempDir::new("prop");
    let path = tmp.path("p.h5");
    let total: u64 = c.src_shape.iter().product();
    let data = data_for(c.dtype, total as usize, c.seed);
    let fill = data_for(c.dtype, 1, c.seed ^ 0xff);
    let mut spec = DsSpec::new("grp/x", &c.src_shape, c.dtype, if c.partial { None } else { Some(&data) });
    spec.chunk = c.chunk.clone();
    spec.gzip = (c.gzip && c.chunk.is_some()).then_some(4);
    spec.shuffle = c.shuffle;
    spec.big_endian = c.big;
    spec.fill = Some(&fill);
    create_file(&path, &[spec]);
    if c.partial {
        // Write only the first half along axis 0: the rest stays unallocated (fill value).
        let mut cnt = c.src_shape.clone();
        cnt[0] = c.src_shape[0].div_ceil(2);
        let nb: u64 = cnt.iter().product();
        write_block(&path, "grp/x", c.dtype, &vec![0; n], &cnt, &data[..nb as usize * size]);
    }
    let mt = h5type(c.dtype, false, true);
    let (shape, src) = read_whole(&path, "grp/x", mt, size);
    close_type(mt);
    prop_assert_eq!(&shape, &c.src_shape);

    // Destination layout inside a padded buffer.
    let alloc: Vec<u64> = c.dst_shape.iter().zip(&c.alloc_step).map(|(a, b)| a * b).collect();
    let mut strides = vec![0i64; n];
    let mut acc = size as i64;
    let order: Vec<usize> = if c.fortran { (0..n).collect() } else { (0..n).rev().collect() };
    for &j in &order {
        strides[j] = acc * c.alloc_step[j] as i64;
        acc *= alloc[j] as i64;
    }
    let mut offset = c.extra as i64;
    for ((s, &neg), &extent) in strides.iter_mut().zip(&c.neg).zip(&c.dst_shape).take(n) {
        if neg {
            offset += *s * (extent as i64 - 1);
            *s = -*s;
        }
    }
    let buf_len = acc as usize + c.extra + 5;
    let init: Vec<u8> = (0..buf_len).map(|i| (i as u8).wrapping_mul(31) ^ 0x5a).collect();
    let mut want = init.clone();
    let expect = reference(&src, &c.src_shape, &mut want, &c.dst_shape, &strides, offset as usize, size, &c.rows, c.clip);

    if std::env::var_os("VH5_PROP_DEBUG").is_some() {
        eprintln!("CASE ok={} rows={} clip={} dtype={:?}", expect.is_ok(), c.rows.len(), c.clip, c.dtype);
    }
    let (_f, d) = ffi_open(&path, "/grp/x");
    let flags = if c.clip { vh5::transfer::SLICES_CLIP } else { 0 };
    // Every read strategy (auto, chunk planner with 1 and 3 threads, one read per row) must
    // give the reference's bytes.
    for (mode, threads) in MODES {
        let mut got = init.clone();
        let (st, msg) = with_overrides(mode, threads, || ffi_read(d, &mut got, offset as usize, c.dtype, size, &c.dst_shape, Some(&strides), &c.rows, flags, c.with_steps));
        check_result(&expect, st, &msg, &got, &want, &init).map_err(|e| TestCaseError::fail(format!("mode {mode:?} threads {threads:?}: {e}")))?;
    }
    ffi_close(&[d, _f]);
    Ok(())
}

/// (strategy, threads) combinations every case runs in.
const MODES: [(Option<PlannerMode>, Option<usize>); 4] =
    [(None, None), (Some(PlannerMode::Chunks), Some(1)), (Some(PlannerMode::Chunks), Some(3)), (Some(PlannerMode::Rows), Some(1))];

fn check_result(expect: &Result<(), (usize, usize)>, st: vh5_status, msg: &str, got: &[u8], want: &[u8], init: &[u8]) -> Result<(), TestCaseError> {
    match *expect {
        Ok(()) => {
            prop_assert_eq!(st, vh5_status::VH5_OK, "{}", msg);
            prop_assert!(got == want, "destination differs from the reference");
        }
        Err((i, j)) => {
            prop_assert_eq!(st, vh5_status::VH5_ERR_OUT_OF_BOUNDS, "{}", msg);
            let needle = format!("row {i} axis {j}");
            prop_assert!(msg.contains(&needle), "{} should name {}", msg, needle);
            prop_assert!(got == init, "nothing may be written on error");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn read_many_slices_matches_reference(c in case_strategy()) {
        run_case(c)?;
    }
}
