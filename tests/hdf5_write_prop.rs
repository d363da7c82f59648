//! Property test of `vh5_write_many_slices`: random dataset shapes, chunk shapes (or
//! contiguous), gzip+shuffle, dtypes, source layouts (permuted / padded / reversed axes),
//! steps on both sides, clip, overlapping rows. Each case writes a fresh file, writes the rows
//! through the C ABI, reads the dataset back with one plain H5Dread and compares it with an
//! index-loop reference; on an out-of-bounds error the file must be unchanged.

mod common;
#[path = "common/write.rs"]
mod write_common;

use common::*;
use proptest::prelude::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::*;
use write_common::*;

fn src_layout(shape: &[u64], size: usize, perm_seed: u64, pad: u64, neg: &[bool]) -> (SrcLay, usize) {
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
    let mut off = 0i64;
    for k in 0..n {
        if neg[k] {
            off += strides[k] * (shape[k] as i64 - 1);
            strides[k] = -strides[k];
        }
    }
    (SrcLay { shape: shape.to_vec(), strides, offset: off as usize }, acc as usize)
}

static CASES: [std::sync::atomic::AtomicUsize; 2] = [const { std::sync::atomic::AtomicUsize::new(0) }; 2];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]
    #[test]
    fn writes_match_reference(
        dims in prop::collection::vec((1u64..9, 1u64..5, 1u64..7), 1..4),
        chunked in any::<bool>(),
        gzip in any::<bool>(),
        dtype in prop::sample::select(vec![Dtype::Float64, Dtype::Int16, Dtype::UInt8, Dtype::Complex64, Dtype::Int32]),
        big in any::<bool>(),
        perm in any::<u64>(),
        pad in 0u64..2,
        neg in prop::collection::vec(any::<bool>(), 3),
        raw_rows in prop::collection::vec(prop::collection::vec((0u64..9, 0u64..9, 0u64..7, 1u64..4, 1u64..4), 3), 0..7),
        clip in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let n = dims.len();
        let dshape: Vec<u64> = dims.iter().map(|d| d.0).collect();
        let sshape: Vec<u64> = dims.iter().map(|d| d.2).collect();
        let size = size_of(dtype);
        let fit = |st: u64, step: u64, ext: u64| if st >= ext { 0 } else { (ext - 1 - st) / step + 1 };
        let rows: Vec<TRow> = raw_rows.iter().map(|rr| {
            // mostly in bounds; 8 means "start past the extent", count 6 "maybe too many"
            let s: Vec<u64> = (0..n).map(|j| if rr[j].0 == 8 { 8 } else { rr[j].0 % sshape[j] }).collect();
            let d: Vec<u64> = (0..n).map(|j| if rr[j].1 == 8 { 8 } else { rr[j].1 % dshape[j] }).collect();
            let ss: Vec<u64> = (0..n).map(|j| rr[j].3).collect();
            let ds: Vec<u64> = (0..n).map(|j| rr[j].4).collect();
            let c = (0..n).map(|j| if rr[j].2 == 6 { 6 } else { rr[j].2.min(fit(s[j], ss[j], sshape[j]).min(fit(d[j], ds[j], dshape[j]))).max(1) }).collect();
            TRow { s, d, c, ss, ds }
        }).collect();

        let tmp = TempDir::new("wprop");
        let p = tmp.path("p.h5");
        let total: u64 = dshape.iter().product();
        let init = data_for(dtype, total as usize, seed);
        let mut spec = DsSpec::new("d", &dshape, dtype, Some(&init));
        spec.big_endian = big;
        if chunked {
            spec.chunk = Some(dims.iter().map(|d| d.1.min(d.0)).collect());
            if gzip { spec.gzip = Some(1); spec.shuffle = true; }
        }
        create_file(&p, &[spec]);
        let (lay, len) = src_layout(&sshape, size, perm, pad, &neg);
        let src = data_for(dtype, len / size, seed ^ 0xABCD);
        let (f, d) = open_rw(&p, "d", true);
        let (st, m) = ffi_write(d, &src, &lay, dtype, size, &rows, if clip { 1 } else { 0 });
        ffi_close(&[d, f]);
        let mtype = h5type(dtype, false, true);
        let (_, got) = read_whole(&p, "d", mtype, size);
        let mut want = init.clone();
        match ref_write(&mut want, &dshape, &src, &lay, size, &rows, clip) {
            Ok(()) => {
                prop_assert_eq!(st, VH5_OK, "{}", m);
                if want != init { CASES[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed); }
                prop_assert_eq!(got, want);
            }
            Err((i, j)) => {
                CASES[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                prop_assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
                let row_axis = format!("row {i} axis {j}");
                prop_assert!(m.contains(&row_axis), "{}", m);
                prop_assert_eq!(got, init, "nothing written");
            }
        }
        close_type(mtype);
    }
}

#[test]
fn generator_covers_writes_and_errors() {
    writes_match_reference();
    let [w, e] = [0, 1].map(|k| CASES[k].load(std::sync::atomic::Ordering::Relaxed));
    eprintln!("cases that changed the dataset: {w}, out-of-bounds cases: {e}");
    assert!(w > 40 && e > 5, "{w} {e}");
}
