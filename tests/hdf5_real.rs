//! vh5_read_many_slices on real netCDF-4/HDF5 files from climate tools (../shared/data/real),
//! compared with whole-dataset H5Dread + index loops, and values checked against h5py.
//! Skips (printing why) when the shared data directory is absent.

mod common;
use std::ffi::CString;
use std::path::PathBuf;

use common::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::*;

fn real(name: &str) -> Option<PathBuf> {
    match shared_data() {
        Some(d) => Some(d.join("real").join(name)),
        None => {
            eprintln!("SKIP: shared data not found (set VH5_SHARED_DATA or provide ../shared/data)");
            None
        }
    }
}

/// Random rows (seeded) with steps, in-bounds for strict mode when `fit`, else arbitrary (clip).
fn random_rows(src: &[u64], dst: &[u64], n: usize, seed: u64, fit: bool) -> Vec<TRow> {
    let rnd = bytes(n * src.len() * 5 * 2, seed);
    let mut k = 0;
    let mut next = |m: u64| {
        let v = u16::from_ne_bytes([rnd[k], rnd[k + 1]]) as u64 % m.max(1);
        k += 2;
        v
    };
    (0..n)
        .map(|_| {
            let nd = src.len();
            let mut r = TRow { s: vec![0; nd], d: vec![0; nd], c: vec![0; nd], ss: vec![1; nd], ds: vec![1; nd] };
            for j in 0..nd {
                r.ss[j] = 1 + next(3);
                r.ds[j] = 1 + next(2);
                r.s[j] = next(src[j] + if fit { 0 } else { 3 });
                r.d[j] = next(dst[j] + if fit { 0 } else { 3 });
                r.c[j] = 1 + next(6);
                if fit {
                    let fs = (src[j] - 1 - r.s[j]) / r.ss[j] + 1;
                    let fd = (dst[j] - 1 - r.d[j]) / r.ds[j] + 1;
                    r.c[j] = r.c[j].min(fs).min(fd);
                }
            }
            r
        })
        .collect()
}

fn check_dataset(file: &str, name: &str, dtype: Dtype, spot: &[(Vec<u64>, f64)]) {
    let Some(path) = real(file) else { return };
    let size = dtype.itemsize().unwrap();
    let mt = h5type(dtype, false, true);
    let (shape, src) = read_whole(&path, name, mt, size);
    close_type(mt);
    let (f, d) = ffi_open(&path, name);
    let mut info: vh5_dataset_info = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { vh5_dataset_get_info(d, &mut info) }, VH5_OK);
    assert_eq!(&info.shape[..shape.len()], &shape[..]);
    assert_eq!(info.dtype, dtype.code());
    // Values known from h5py.
    for (idx, want) in spot {
        let mut buf = vec![0u8; size];
        let one = vec![1u64; idx.len()];
        let row = TRow { s: idx.clone(), d: vec![0; idx.len()], c: one.clone(), ss: one.clone(), ds: one.clone() };
        let (st, m) = ffi_read(d, &mut buf, 0, dtype, size, &one, None, &[row], 0, false);
        assert_eq!(st, VH5_OK, "{m}");
        let got = if size == 8 { f64::from_ne_bytes(buf.try_into().unwrap()) } else { f32::from_ne_bytes(buf.try_into().unwrap()) as f64 };
        assert_eq!(got, *want, "{file}:{name}{idx:?}");
    }
    // Random tables into C-order and Fortran-order destinations, strict and clipped.
    let dst_shape: Vec<u64> = shape.iter().map(|&e| e.min(9) + 2).collect();
    for (seed, fit, fortran) in [(1u64, true, false), (2, true, true), (3, false, false), (4, false, true)] {
        let rows = random_rows(&shape, &dst_shape, 200, seed, fit);
        let n = shape.len();
        let mut strides = vec![0i64; n];
        let mut acc = size as i64;
        let order: Vec<usize> = if fortran { (0..n).collect() } else { (0..n).rev().collect() };
        for &j in &order {
            strides[j] = acc;
            acc *= dst_shape[j] as i64;
        }
        let mut want = vec![0u8; acc as usize];
        reference(&src, &shape, &mut want, &dst_shape, &strides, 0, size, &rows, !fit).unwrap();
        let mut got = vec![0u8; acc as usize];
        let flags = if fit { 0 } else { VH5_SLICES_CLIP };
        let (st, m) = ffi_read(d, &mut got, 0, dtype, size, &dst_shape, Some(&strides), &rows, flags, true);
        assert_eq!(st, VH5_OK, "{m}");
        assert!(got == want, "{file}:{name} seed {seed}");
    }
    ffi_close(&[d, f]);
}

#[test]
fn test1_tas_gzip_shuffle_chunked() {
    check_dataset("test1.nc", "tas", Dtype::Float64, &[(vec![0, 0, 0], 236.51275634765625), (vec![11, 63, 127], 256.9337158203125), (vec![5, 10, 20], 279.783935546875)]);
    check_dataset("test1.nc", "lat", Dtype::Float64, &[(vec![1], -85.09652709960938)]);
}

#[test]
fn cmip6_tas_single_gzip_chunk() {
    check_dataset("CMIP6_IPSL-CM6A-LR_tas.nc", "tas", Dtype::Float32, &[(vec![3, 100, 50], 278.75824f32 as f64)]);
}

#[test]
fn obs4mips_rlut_single_gzip_chunk() {
    check_dataset("obs4MIPS_CERES-EBAF_L3B_Ed2-8_rlut.nc", "rlut", Dtype::Float32, &[(vec![14, 179, 359], 202.3f32 as f64), (vec![0, 90, 180], 293.6f32 as f64)]);
}

#[test]
fn cesm2_trefht_small_chunks() {
    check_dataset("cesm2_native.nc", "TREFHT", Dtype::Float32, &[(vec![7, 2, 5], 294.8863f32 as f64)]);
    check_dataset("daily_data_masked.nc", "ta", Dtype::Float32, &[]);
}

#[test]
fn big_endian_dimension_scales_and_scalar_height() {
    let Some(path) = real("test1.nc") else { return };
    let (f, d) = ffi_open(&path, "bounds");
    let mut info: vh5_dataset_info = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { vh5_dataset_get_info(d, &mut info) }, VH5_OK);
    assert_eq!((info.dtype, info.byte_order, info.ndim, info.shape[0]), (Dtype::Float32.code(), 1, 1, 2));
    let mut buf = vec![0xFFu8; 8];
    let row = TRow { s: vec![0], d: vec![0], c: vec![2], ss: vec![1], ds: vec![1] };
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Float32, 4, &[2], None, &[row], 0, false);
    assert_eq!(st, VH5_OK, "{m}");
    assert_eq!(buf, vec![0u8; 8], "h5py reads [0, 0] (unallocated, fill 0)");
    ffi_close(&[d]);
    let mut h = 0;
    assert_eq!(unsafe { vh5_dataset_open(f, CString::new("height").unwrap().as_ptr(), &mut h) }, VH5_OK);
    assert_eq!(unsafe { vh5_dataset_get_info(h, &mut info) }, VH5_OK);
    assert_eq!(info.ndim, 0);
    let mut buf = vec![0u8; 8];
    let a = vh5_array {
        base: buf.as_mut_ptr() as *mut _,
        base_len: 8,
        offset: 0,
        dtype: Dtype::Float64.code(),
        itemsize: 8,
        ndim: 0,
        shape: std::ptr::null(),
        strides: std::ptr::null(),
    };
    let st = unsafe { vh5_read_many_slices(h, &a, 1, std::ptr::null(), std::ptr::null(), std::ptr::null(), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, VH5_OK, "{}", last_error());
    assert_eq!(f64::from_ne_bytes(buf.try_into().unwrap()), 2.0);
    ffi_close(&[h, f]);
    let Some(path) = real("CMIP6_IPSL-CM6A-LR_tas.nc") else { return };
    let (f, d) = ffi_open(&path, "bnds");
    assert_eq!(unsafe { vh5_dataset_get_info(d, &mut info) }, VH5_OK);
    assert_eq!(info.byte_order, 1, "bnds is >f4");
    ffi_close(&[d, f]);
}

#[test]
fn each_failure_has_its_own_status() {
    let Some(emac) = real("emac.nc") else { return };
    let mut id = 0;
    let st = unsafe { vh5_file_open(CString::new(emac.to_str().unwrap()).unwrap().as_ptr(), 0, &mut id) };
    assert_eq!(st, VH5_ERR_IO);
    assert!(last_error().contains("not an HDF5 file"), "{}", last_error());
    let missing = emac.with_file_name("does_not_exist.nc");
    let st = unsafe { vh5_file_open(CString::new(missing.to_str().unwrap()).unwrap().as_ptr(), 0, &mut id) };
    assert_eq!(st, VH5_ERR_IO);
    assert!(last_error().contains("does_not_exist.nc"));
    let (f, d) = ffi_open(&emac.with_file_name("test1.nc"), "tas");
    let mut x = 0;
    let st = unsafe { vh5_dataset_open(f, CString::new("no_such_var").unwrap().as_ptr(), &mut x) };
    assert_eq!(st, VH5_ERR_NOT_FOUND);
    ffi_close(&[d, f]);
    let mut buf = vec![0u8; 8];
    let row = TRow { s: vec![0; 3], d: vec![0; 3], c: vec![1; 3], ss: vec![1; 3], ds: vec![1; 3] };
    let (st, _) = ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1, 1, 1], None, &[row], 0, false);
    assert_eq!(st, VH5_ERR_INVALID_HANDLE);
}
