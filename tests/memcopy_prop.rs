//! `vh5_copy_many_slices` (array -> array in memory) against an independent index-loop
//! reference: random shapes, layouts (C, Fortran, permuted, padded, reversed), steps on both
//! sides, clip, overlapping rows, and source and destination in the SAME buffer (memmove
//! rule: each row reads its source as left by the previous rows).

use proptest::prelude::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::vh5_array;
use vh5::ffi::slices_write::vh5_copy_many_slices;
use vh5::ffi::vh5_status::{self, *};

#[derive(Debug, Clone)]
struct Lay {
    shape: Vec<u64>,
    strides: Vec<i64>,
    offset: usize,
    len: usize,
}

/// A layout of `shape` with axes permuted by `perm_seed`, `pad` extra elements per axis and
/// the axes in `neg` reversed, placed at byte `base` of a buffer of at least `len` bytes.
fn layout(shape: &[u64], size: usize, perm_seed: u64, pad: u64, neg: &[bool], base: usize) -> Lay {
    let n = shape.len();
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = perm_seed;
    for i in (1..n).rev() {
        let j = (x % (i as u64 + 1)) as usize;
        x /= i as u64 + 1;
        order.swap(i, j);
    }
    let mut strides = vec![0i64; n];
    let mut acc = size as i64;
    for &k in order.iter().rev() {
        strides[k] = acc;
        acc *= (shape[k] + pad) as i64;
    }
    let mut off = base as i64;
    for k in 0..n {
        if neg[k] {
            off += strides[k] * (shape[k] as i64 - 1).max(0);
            strides[k] = -strides[k];
        }
    }
    Lay { shape: shape.to_vec(), strides, offset: off as usize, len: base + acc as usize }
}

fn addr(l: &Lay, idx: &[u64]) -> usize {
    (l.offset as i64 + idx.iter().zip(&l.strides).map(|(&i, &s)| i as i64 * s).sum::<i64>()) as usize
}

#[derive(Debug, Clone)]
struct R {
    s: Vec<u64>,
    d: Vec<u64>,
    c: Vec<u64>,
    ss: Vec<u64>,
    ds: Vec<u64>,
}

/// Reference: per row, clip (or fail), gather the source elements into a temporary, then
/// scatter them (memmove rule). Works on one buffer holding both arrays.
#[allow(clippy::needless_range_loop)]
fn reference(buf: &mut [u8], src: &Lay, dst: &Lay, size: usize, rows: &[R], clip: bool) -> Result<(), (usize, usize)> {
    let n = src.shape.len();
    let mut eff = vec![];
    for (i, r) in rows.iter().enumerate() {
        if r.c.contains(&0) {
            eff.push(None);
            continue;
        }
        let mut cnt = vec![0u64; n];
        for j in 0..n {
            let mut k = 0;
            while k < r.c[j] && r.s[j] + k * r.ss[j] < src.shape[j] && r.d[j] + k * r.ds[j] < dst.shape[j] {
                k += 1;
            }
            if k < r.c[j] && !clip {
                return Err((i, j));
            }
            cnt[j] = k;
        }
        eff.push(if cnt.contains(&0) { None } else { Some(cnt) });
    }
    for (r, cnt) in rows.iter().zip(eff) {
        let Some(cnt) = cnt else { continue };
        let total: u64 = cnt.iter().product();
        let mut tmp = vec![];
        let idx_of = |flat: u64| {
            let mut k = vec![0u64; n];
            let mut rem = flat;
            for j in (0..n).rev() {
                k[j] = rem % cnt[j];
                rem /= cnt[j];
            }
            k
        };
        for flat in 0..total {
            let k = idx_of(flat);
            let si: Vec<u64> = (0..n).map(|j| r.s[j] + k[j] * r.ss[j]).collect();
            let a = addr(src, &si);
            tmp.extend_from_slice(&buf[a..a + size]);
        }
        for flat in 0..total {
            let k = idx_of(flat);
            let di: Vec<u64> = (0..n).map(|j| r.d[j] + k[j] * r.ds[j]).collect();
            let b = addr(dst, &di);
            let f = flat as usize * size;
            buf[b..b + size].copy_from_slice(&tmp[f..f + size]);
        }
        if n == 0 {
            let (a, b) = (src.offset, dst.offset);
            let v = buf[a..a + size].to_vec();
            buf[b..b + size].copy_from_slice(&v);
        }
    }
    Ok(())
}

fn varr(base: *mut u8, len: usize, l: &Lay, dtype: Dtype, size: usize) -> vh5_array {
    vh5_array {
        base: base as *mut _,
        base_len: len,
        offset: l.offset,
        dtype: dtype.code(),
        itemsize: size,
        ndim: l.shape.len() as u32,
        shape: l.shape.as_ptr(),
        strides: l.strides.as_ptr(),
    }
}

fn call(src: &vh5_array, dst: &vh5_array, rows: &[R], flags: u32) -> (vh5_status, String) {
    let mut t: [Vec<u64>; 5] = Default::default();
    for r in rows {
        t[0].extend(&r.s);
        t[1].extend(&r.d);
        t[2].extend(&r.c);
        t[3].extend(&r.ss);
        t[4].extend(&r.ds);
    }
    let st = unsafe { vh5_copy_many_slices(src, dst, rows.len(), t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), t[3].as_ptr(), t[4].as_ptr(), flags) };
    let mut m = vec![0u8; 1024];
    let k = unsafe { vh5::ffi::vh5_last_error_message(m.as_mut_ptr() as *mut _, m.len()) };
    m.truncate(k.min(1023));
    (st, String::from_utf8_lossy(&m).into_owned())
}

fn dtype_of(size: usize) -> Dtype {
    match size {
        1 => Dtype::UInt8,
        2 => Dtype::Int16,
        4 => Dtype::Float32,
        8 => Dtype::Float64,
        _ => Dtype::Complex128,
    }
}

prop_compose! {
    fn case()(
        dims in prop::collection::vec((1u64..7, 1u64..7), 1..4),
        size in prop::sample::select(vec![1usize, 2, 4, 8, 16]),
        seeds in (any::<u64>(), any::<u64>()),
        pads in (0u64..2, 0u64..2),
        negs in (prop::collection::vec(any::<bool>(), 3), prop::collection::vec(any::<bool>(), 3)),
        raw_rows in prop::collection::vec(prop::collection::vec((0u64..8, 0u64..8, 0u64..6, 1u64..4, 1u64..4), 3), 0..6),
        clip in any::<bool>(),
        same_buffer in any::<bool>(),
        shift in 0usize..40,
    ) -> (Vec<(u64, u64)>, usize, (u64, u64), (u64, u64), (Vec<bool>, Vec<bool>), Vec<Vec<(u64, u64, u64, u64, u64)>>, bool, bool, usize) {
        (dims, size, seeds, pads, negs, raw_rows, clip, same_buffer, shift)
    }
}

static STATS: [std::sync::atomic::AtomicUsize; 3] = [const { std::sync::atomic::AtomicUsize::new(0) }; 3];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]
    #[test]
    fn copies_match_reference((dims, size, seeds, pads, negs, raw_rows, clip, same_buffer, shift) in case()) {
        let n = dims.len();
        let sshape: Vec<u64> = dims.iter().map(|d| d.0).collect();
        let dshape: Vec<u64> = dims.iter().map(|d| d.1).collect();
        // Mostly in-bounds rows (starts inside the extents, counts that fit) with a few that
        // reach outside (start 7 / count 5 beyond an extent of at most 6).
        let fit = |st: u64, step: u64, ext: u64| if st >= ext { 0 } else { (ext - 1 - st) / step + 1 };
        let rows: Vec<R> = raw_rows.iter().map(|rr| {
            let s: Vec<u64> = (0..n).map(|j| if rr[j].0 == 7 { 7 } else { rr[j].0 % sshape[j] }).collect();
            let d: Vec<u64> = (0..n).map(|j| if rr[j].1 == 7 { 7 } else { rr[j].1 % dshape[j] }).collect();
            let ss: Vec<u64> = (0..n).map(|j| rr[j].3).collect();
            let ds: Vec<u64> = (0..n).map(|j| rr[j].4).collect();
            let c = (0..n).map(|j| if rr[j].2 == 5 { 5 } else { rr[j].2.min(fit(s[j], ss[j], sshape[j]).min(fit(d[j], ds[j], dshape[j]))).max(1) }).collect();
            R { s, d, c, ss, ds }
        }).collect();
        let real = rows.iter().any(|r| r.c.iter().all(|&c| c > 1));
        if real { STATS[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed); }
        let dtype = dtype_of(size);
        let flags = if clip { 1 } else { 0 };
        let sl = layout(&sshape, size, seeds.0, pads.0, &negs.0, 0);
        if same_buffer {
            // Both arrays inside one buffer, the destination shifted by `shift` bytes (so they
            // overlap in most cases; misaligned when shift is not a multiple of the size).
            let dl = layout(&dshape, size, seeds.1, pads.1, &negs.1, shift);
            let len = sl.len.max(dl.len);
            let init: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
            let mut got = init.clone();
            let mut want = init.clone();
            let p = got.as_mut_ptr();
            let (sa, da) = (varr(p, len, &sl, dtype, size), varr(p, len, &dl, dtype, size));
            let (st, m) = call(&sa, &da, &rows, flags);
            match reference(&mut want, &sl, &dl, size, &rows, clip) {
                Ok(()) => {
                    prop_assert_eq!(st, VH5_OK, "{}", m);
                    if got != init { STATS[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed); }
                    prop_assert_eq!(got, want);
                }
                Err((i, j)) => {
                    prop_assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
                    let row_axis = format!("row {i} axis {j}");
                    prop_assert!(m.contains(&row_axis), "{}", m);
                    prop_assert_eq!(got, init, "nothing written on error");
                }
            }
        } else {
            let dl = layout(&dshape, size, seeds.1, pads.1, &negs.1, shift);
            let src: Vec<u8> = (0..sl.len).map(|i| (i * 13 + 1) as u8).collect();
            let init: Vec<u8> = vec![0xEE; dl.len];
            let mut got = init.clone();
            let mut srcc = src.clone();
            let sa = varr(srcc.as_mut_ptr(), sl.len, &sl, dtype, size);
            let da = varr(got.as_mut_ptr(), dl.len, &dl, dtype, size);
            let (st, m) = call(&sa, &da, &rows, flags);
            // reference on a combined buffer: src then dst
            let mut comb = src.clone();
            comb.extend_from_slice(&init);
            let mut dl2 = dl.clone();
            dl2.offset += sl.len;
            match reference(&mut comb, &sl, &dl2, size, &rows, clip) {
                Ok(()) => {
                    prop_assert_eq!(st, VH5_OK, "{}", m);
                    if got != init { STATS[2].fetch_add(1, std::sync::atomic::Ordering::Relaxed); }
                    prop_assert_eq!(&got[..], &comb[sl.len..]);
                }
                Err((i, j)) => {
                    prop_assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
                    let row_axis = format!("row {i} axis {j}");
                    prop_assert!(m.contains(&row_axis), "{}", m);
                    prop_assert_eq!(got, init);
                }
            }
            prop_assert_eq!(srcc, src, "source untouched");
        }
    }
}

/// The generator must exercise real copies in both modes (runs after the property test in
/// the same process only by chance, so it re-runs a short version of it).
#[test]
fn generator_exercises_copies() {
    copies_match_reference();
    let [a, b, c] = [0, 1, 2].map(|k| STATS[k].load(std::sync::atomic::Ordering::Relaxed));
    eprintln!("cases with multi-element rows: {a}, same-buffer cases that wrote: {b}, two-buffer cases that wrote: {c}");
    assert!(b > 100 && c > 100, "{a} {b} {c}");
}

#[test]
fn errors_name_the_culprit() {
    let src = [1u8; 80];
    let mut dst = [0u8; 80];
    let sl = layout(&[10], 8, 0, 0, &[false], 0);
    let sa = varr(src.as_ptr() as *mut u8, 80, &sl, Dtype::Float64, 8);
    let da = varr(dst.as_mut_ptr(), 80, &sl, Dtype::Float64, 8);
    let r = |s: u64, d: u64, c: u64, ss: u64| R { s: vec![s], d: vec![d], c: vec![c], ss: vec![ss], ds: vec![1] };
    let (st, m) = call(&sa, &da, &[r(0, 0, 2, 1), r(0, 0, 1, 0)], 0);
    assert_eq!(st, VH5_ERR_INVALID_ARGUMENT);
    assert!(m.contains("row 1 axis 0: src_step is 0"), "{m}");
    let (st, m) = call(&sa, &da, &[r(0, 9, 2, 1)], 0);
    assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
    assert!(m.contains("outside the destination array extent 10"), "{m}");
    let (st, _) = call(&sa, &da, &[r(0, 0, 2, 1)], 2);
    assert_eq!(st, VH5_ERR_INVALID_ARGUMENT);
    let mut fa = da;
    fa.dtype = Dtype::Int64.code();
    let (st, m) = call(&sa, &fa, &[r(0, 0, 2, 1)], 0);
    assert_eq!(st, VH5_ERR_DTYPE, "{m}");
    let mut short = da;
    short.base_len = 72;
    let (st, m) = call(&sa, &short, &[r(0, 0, 2, 1)], 0);
    assert_eq!(st, VH5_ERR_BUFFER_TOO_SMALL);
    assert!(m.starts_with("dst: "), "{m}");
    let st = unsafe { vh5_copy_many_slices(std::ptr::null(), &da, 0, std::ptr::null(), std::ptr::null(), std::ptr::null(), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, VH5_ERR_NULL_ARGUMENT);
    assert!(dst.iter().all(|&b| b == 0));
    // success path for comparison
    let (st, m) = call(&sa, &da, &[r(3, 1, 4, 2)], 1);
    assert_eq!(st, VH5_OK, "{m}");
    assert_eq!(&dst[8..16], &[1u8; 8]);
}

/// Counts whose product wraps to 0 in 64 bits (2 x 2 x 2^63) are out of bounds, not an empty
/// row: the fast path (no flags, no step tables, dense rows) used to skip such a row's bounds
/// check and then copy runs of `count * itemsize` bytes (found by the slices_copy fuzz
/// target: an overflow panic under overflow checks; this is its input, 6 rows on 6x6x6).
#[test]
fn counts_whose_product_wraps_to_zero_are_out_of_bounds() {
    let src = [1u8; 4 * 216];
    let mut dst = [0u8; 4 * 216];
    // C order (the fast path needs dense innermost axes).
    let l = Lay { shape: vec![6, 6, 6], strides: vec![144, 24, 4], offset: 0, len: 864 };
    let sa = varr(src.as_ptr() as *mut u8, src.len(), &l, Dtype::Int32, 4);
    let da = varr(dst.as_mut_ptr(), dst.len(), &l, Dtype::Int32, 4);
    let s: [u64; 18] = [1, 1, 1, 1 << 55, 2, 2, 2, 2, 2, 2, 2, 0, 0, 2, 2, 2, 2, 2];
    let d: [u64; 18] = [1, 1, 2, 1 << 32, 2, 2, 2, 2, 2, 2, 2, 0, 2, 2, 2, 2, 2, 2];
    let c: [u64; 18] = [2, 2, 1 << 63, 0, 3, 3, 3, 3, 3, 3, 1, 0, 3, 3, 0, 0, 0, 3];
    let st = unsafe { vh5_copy_many_slices(&sa, &da, 6, s.as_ptr(), d.as_ptr(), c.as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
    assert!(dst.iter().all(|&b| b == 0), "nothing written");
    // 2-D: 8 x 3*2^61 wraps to 0 as well.
    let l = Lay { shape: vec![4, 4], strides: vec![16, 4], offset: 0, len: 64 };
    let sa = varr(src.as_ptr() as *mut u8, 64, &l, Dtype::Int32, 4);
    let da = varr(dst.as_mut_ptr(), 64, &l, Dtype::Int32, 4);
    let c2 = [8u64, 3 << 61];
    let st = unsafe { vh5_copy_many_slices(&sa, &da, 1, [0u64, 0].as_ptr(), [0u64, 0].as_ptr(), c2.as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
    assert!(dst.iter().all(|&b| b == 0), "nothing written");
}
