//! `write_many_slices` on filtered chunked datasets: chunks encoded by vh5 (shuffle, deflate at
//! the dataset's level, fletcher32) and stored raw with `H5Dwrite_chunk` with filter mask 0;
//! pipelines vh5 does not implement (scaleoffset) and conversions go through `H5Dwrite`.
//! Values are read back with plain `H5Dread` (libhdf5 runs the filters) and compared with an
//! index-loop reference; with 1 and 3 threads; edge chunks; big-endian datasets; fill values
//! for unallocated chunks.

mod common;
#[path = "common/write.rs"]
mod write_common;

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use hdf5_sys::h5z::H5Z_SO_scale_type_t;
use vh5::dtype::Dtype;
use vh5::transfer::options::with_overrides;
use write_common::*;

fn c(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap()
}

#[derive(Clone, Copy)]
struct Pipe {
    shuffle: bool,
    gzip: Option<u32>,
    fletcher: bool,
    scaleoffset: bool,
    big: bool,
    /// Write initial data (else every chunk unallocated, fill value 7.5).
    init: bool,
}

const SHAPE: [u64; 2] = [23, 17];
const CHUNK: [u64; 2] = [5, 4];

fn init_data() -> Vec<f64> {
    (0..SHAPE[0] * SHAPE[1]).map(|k| k as f64 * 0.5 - 3.0).collect()
}

/// A 23x17 float64 dataset "d" with 5x4 chunks (edge chunks on both axes) and pipeline `p`.
fn make(path: &std::path::Path, p: Pipe) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fcreate(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        assert!(f >= 0);
        let sp = H5Screate_simple(2, SHAPE.as_ptr(), std::ptr::null());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_chunk(dcpl, 2, CHUNK.as_ptr()) >= 0);
        if p.scaleoffset {
            assert!(H5Pset_scaleoffset(dcpl, H5Z_SO_scale_type_t::H5Z_SO_FLOAT_DSCALE, 3) >= 0);
        }
        if p.shuffle {
            assert!(H5Pset_shuffle(dcpl) >= 0);
        }
        if let Some(l) = p.gzip {
            assert!(H5Pset_deflate(dcpl, l) >= 0);
        }
        if p.fletcher {
            assert!(H5Pset_fletcher32(dcpl) >= 0);
        }
        let fill = 7.5f64;
        assert!(H5Pset_fill_value(dcpl, *H5T_NATIVE_DOUBLE, &fill as *const f64 as *const _) >= 0);
        let ft = if p.big { *H5T_IEEE_F64BE } else { *H5T_IEEE_F64LE };
        let d = H5Dcreate2(f, c("d").as_ptr(), ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        if p.init {
            let v = init_data();
            assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
        }
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        H5Fclose(f);
    }
}

fn f64b(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// Filter masks of every allocated chunk of "d".
fn masks(path: &std::path::Path) -> Vec<u32> {
    let _s = vh5::hdf5::session();
    let (f, d) = open_rw(path, "d", false);
    let mut out = vec![];
    for i in (0..SHAPE[0]).step_by(CHUNK[0] as usize) {
        for j in (0..SHAPE[1]).step_by(CHUNK[1] as usize) {
            let (mut m, mut addr, mut size) = (0u32, 0u64, 0u64);
            let o = [i, j];
            assert!(unsafe { H5Dget_chunk_info_by_coord(d, o.as_ptr(), &mut m, &mut addr, &mut size) } >= 0);
            if size > 0 {
                out.push(m);
            }
        }
    }
    ffi_close(&[d, f]);
    out
}

fn rows() -> Vec<TRow> {
    // chunk (0,0) covered exactly by two rows; chunk (4,4) (the corner edge chunk, 3x1)
    // covered by one row; partial pieces elsewhere, stepped rows, overlaps (later row wins).
    vec![
        TRow { s: vec![0, 0], d: vec![0, 0], c: vec![3, 4], ss: vec![1, 1], ds: vec![1, 1] },
        TRow { s: vec![3, 0], d: vec![3, 0], c: vec![2, 4], ss: vec![1, 1], ds: vec![1, 1] },
        TRow { s: vec![1, 1], d: vec![20, 16], c: vec![3, 1], ss: vec![1, 1], ds: vec![1, 1] },
        TRow { s: vec![0, 2], d: vec![6, 3], c: vec![9, 7], ss: vec![1, 1], ds: vec![2, 1] },
        TRow { s: vec![5, 5], d: vec![7, 5], c: vec![3, 3], ss: vec![2, 1], ds: vec![1, 3] },
        TRow { s: vec![2, 0], d: vec![11, 0], c: vec![12, 17], ss: vec![1, 1], ds: vec![1, 1] },
        TRow { s: vec![0, 0], d: vec![18, 10], c: vec![1, 1], ss: vec![1, 1], ds: vec![1, 1] },
    ]
}

/// Write `rows()` with `threads`; returns (stats, expected values).
fn run(path: &std::path::Path, p: Pipe, threads: usize) -> (vh5::transfer::WriteStats, Vec<f64>) {
    let srcv: Vec<f64> = (0..30 * 20).map(|k| 1000.0 + k as f64).collect();
    let src = f64b(&srcv);
    let lay = SrcLay::c(&[30, 20], 8);
    let rows = rows();
    let mut want = f64b(&if p.init { init_data() } else { vec![7.5; (SHAPE[0] * SHAPE[1]) as usize] });
    ref_write(&mut want, &SHAPE, &src, &lay, 8, &rows, false).unwrap();
    let (f, d) = open_rw(path, "d", true);
    let t = tables(&rows);
    let tb = vh5::transfer::SliceTable::new(2, rows.len(), &t[0], &t[1], &t[2], Some(&t[3]), Some(&t[4])).unwrap();
    let layout = vh5::transfer::ArrayLayout { shape: lay.shape.clone(), strides: lay.strides.clone(), offset: 0, base_len: src.len(), itemsize: 8 };
    let sa = vh5::transfer::SrcArray { buf: &src, layout, dtype: Dtype::Float64 };
    let st = with_overrides(None, Some(threads), || vh5::transfer::write_many_slices(d, &sa, &tb, 0)).unwrap();
    ffi_close(&[d, f]);
    (st, want.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect())
}

fn readback(path: &std::path::Path) -> Vec<f64> {
    let native = {
        let _s = vh5::hdf5::session();
        *H5T_NATIVE_DOUBLE
    };
    read_whole(path, "d", native, 8).1.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
}

fn check(tag: &str, p: Pipe, expect_raw: bool) {
    for threads in [1, 3] {
        let tmp = TempDir::new("rawwrite");
        let path = tmp.path("r.h5");
        make(&path, p);
        let (st, want) = run(&path, p, threads);
        let got = readback(&path);
        // 5 chunk rows x 5 chunk columns; count the touched ones from the reference rows.
        assert!(st.chunks_written > 0, "{tag}: {st:?}");
        if expect_raw {
            assert_eq!(st.raw_chunks, st.chunks_written, "{tag} threads {threads}: {st:?}");
            assert!(masks(&path).iter().all(|&m| m == 0), "{tag}: filter masks {:?}", masks(&path));
        } else {
            assert_eq!(st.raw_chunks, 0, "{tag}: {st:?}");
        }
        if p.scaleoffset {
            // lossy (3 decimal digits): compare within the scale
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!((a - b).abs() < 1e-3, "{tag} threads {threads}: element {k}: got {a}, want {b}");
            }
        } else {
            assert_eq!(got, want, "{tag} threads {threads}");
        }
        // a second call on the same file (chunks now written raw by vh5) reads them back raw
        let (st2, _) = run(&path, p, threads);
        assert_eq!(st2.chunks_written, st.chunks_written, "{tag}");
        if !p.scaleoffset {
            let mut want2 = want.clone();
            // rows() again over the result: same values (rows are idempotent over themselves
            // except overlaps, which the reference reproduces)
            let srcv: Vec<f64> = (0..30 * 20).map(|k| 1000.0 + k as f64).collect();
            let mut w = f64b(&want2);
            ref_write(&mut w, &SHAPE, &f64b(&srcv), &SrcLay::c(&[30, 20], 8), 8, &rows(), false).unwrap();
            want2 = w.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
            assert_eq!(readback(&path), want2, "{tag} second call, threads {threads}");
        }
    }
}

const BASE: Pipe = Pipe { shuffle: false, gzip: None, fletcher: false, scaleoffset: false, big: false, init: true };

#[test]
fn gzip_shuffle() {
    check("gzip+shuffle", Pipe { shuffle: true, gzip: Some(4), ..BASE }, true);
}

#[test]
fn gzip_shuffle_fletcher32() {
    check("gzip+shuffle+fletcher32", Pipe { shuffle: true, gzip: Some(6), fletcher: true, ..BASE }, true);
}

#[test]
fn gzip_only_and_level_9() {
    check("gzip 1", Pipe { gzip: Some(1), ..BASE }, true);
    check("gzip 9", Pipe { gzip: Some(9), ..BASE }, true);
}

#[test]
fn fletcher32_only_and_shuffle_only() {
    check("fletcher32", Pipe { fletcher: true, ..BASE }, true);
    check("shuffle", Pipe { shuffle: true, ..BASE }, true);
}

#[test]
fn big_endian_dataset() {
    check("big-endian gzip+shuffle", Pipe { shuffle: true, gzip: Some(4), big: true, ..BASE }, true);
}

#[test]
fn unallocated_chunks_take_the_fill_value() {
    check("unallocated gzip+shuffle", Pipe { shuffle: true, gzip: Some(4), init: false, ..BASE }, true);
}

#[test]
fn unimplemented_pipeline_goes_through_h5dwrite() {
    check("scaleoffset+gzip", Pipe { scaleoffset: true, gzip: Some(4), ..BASE }, false);
    // unfiltered chunked datasets keep H5Dwrite too
    check("no filters", BASE, false);
}
